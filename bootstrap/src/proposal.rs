//! What an ecosystem reader proposes for one capability in one repository,
//! before the workspace-wide rules (one safe candidate, naming, discovery
//! receivers) turn proposals into [`crate::Candidate`]s.

use serde_json::{Map, Value};

use crate::model::Confidence;

/// Why no proposal sets `inputs` (DESIGN: the input digest is the whole
/// repository unless a provider names what it reads). A test suite or a
/// linter reads sources, tests, fixtures and configuration that no manifest
/// lists; inputs narrowed to the manifests would let an edited source file
/// reuse an old receipt.
pub(crate) const WHOLE_REPOSITORY: &str = "no `inputs`: it reads the repository's sources, tests and configuration, which no manifest lists, so its inputs are the whole repository (inputs narrowed to the manifests would let an edited source reuse an old receipt)";

/// The directory every proposed report is written under: proofgraph's copy
/// sandbox leaves it out, and projects commonly ignore it.
pub(crate) const REPORT_DIR: &str = "test-results";

/// One proposal.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Proposal {
    /// The confidence the reader gives it on its own. `High` means "high
    /// grade": it becomes a high-confidence candidate only when it is the
    /// only candidate of its slot that is not an alternative.
    pub(crate) grade: Confidence,
    /// The adapter, `None` for a refused (risky) proposal.
    pub(crate) adapter: Option<&'static str>,
    /// The provider's fields after `adapter`, `capability` and `repository`,
    /// in file order (camelCase keys).
    pub(crate) fields: Vec<(&'static str, Value)>,
    /// Why, one fact per entry.
    pub(crate) evidence: Vec<String>,
    /// A short label for next actions (`vitest via npm`).
    pub(crate) label: String,
    /// The program it needs that is not on PATH: it is shown, never
    /// proposed (set by `detect` once the host is known).
    pub(crate) missing: Option<String>,
    /// The setup its repository needs for it to run.
    pub(crate) setup: Option<crate::model::RepositorySetup>,
}

impl Proposal {
    /// A proposal running `argv` with `adapter`.
    pub(crate) fn new(
        grade: Confidence,
        adapter: &'static str,
        argv: Vec<String>,
        label: impl Into<String>,
    ) -> Self {
        Self {
            grade,
            adapter: Some(adapter),
            fields: vec![("command", strings(&argv))],
            evidence: Vec::new(),
            label: label.into(),
            missing: None,
            setup: None,
        }
    }

    /// A refused proposal: shown with its reason, never written.
    pub(crate) fn refused(label: impl Into<String>, evidence: Vec<String>) -> Self {
        Self {
            grade: Confidence::Review,
            adapter: None,
            fields: Vec::new(),
            evidence,
            label: label.into(),
            missing: None,
            setup: None,
        }
    }

    /// Adds a field.
    pub(crate) fn field(mut self, key: &'static str, value: Value) -> Self {
        self.fields.push((key, value));
        self
    }

    /// Adds the structured-report fields of a `test-discovery` provider.
    pub(crate) fn report(self, path: &str, format: &str) -> Self {
        self.field("report", Value::String(path.to_owned()))
            .field("reportFormat", Value::String(format.to_owned()))
            .field("minimum", Value::from(1u64))
    }

    /// Sets `minimum` (the tests a run must execute) to `tests` when the source declares
    /// more than one, saying where the count comes from.
    pub(crate) fn minimum_from(mut self, tests: usize, what: &str) -> Self {
        if tests <= 1 {
            return self;
        }
        for (key, value) in &mut self.fields {
            if *key == "minimum" {
                *value = Value::from(tests as u64);
            }
        }
        self.evidence.push(format!(
            "`minimum: {tests}`: the source declares {tests} {what}; a run that executes fewer (every one skipped, only fuzz seeds or subtests left) does not count as the suite running"
        ));
        self
    }

    /// Adds one fact to the evidence.
    pub(crate) fn because(mut self, fact: impl Into<String>) -> Self {
        self.evidence.push(fact.into());
        self
    }

    /// Adds several facts.
    pub(crate) fn because_all(mut self, facts: impl IntoIterator<Item = String>) -> Self {
        self.evidence.extend(facts);
        self
    }

    /// Sets the grade.
    pub(crate) fn graded(mut self, grade: Confidence) -> Self {
        self.grade = grade;
        self
    }

    /// The command, if there is one.
    pub(crate) fn command(&self) -> Option<Vec<String>> {
        self.fields
            .iter()
            .find(|(k, _)| *k == "command")
            .and_then(|(_, v)| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
    }

    /// The provider object with `capability` and `repository` set when the
    /// naming rule asks for them.
    pub(crate) fn provider(&self, capability: Option<&str>, repository: Option<&str>) -> Value {
        let Some(adapter) = self.adapter.filter(|_| self.missing.is_none()) else {
            return Value::Null;
        };
        let mut map = Map::new();
        map.insert("adapter".to_owned(), Value::String(adapter.to_owned()));
        if let Some(c) = capability {
            map.insert("capability".to_owned(), Value::String(c.to_owned()));
        }
        if let Some(r) = repository {
            map.insert("repository".to_owned(), Value::String(r.to_owned()));
        }
        for (k, v) in &self.fields {
            map.insert((*k).to_owned(), v.clone());
        }
        Value::Object(map)
    }
}

/// A JSON array of strings.
pub(crate) fn strings(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::String).collect())
}

/// `argv` as words.
pub(crate) fn argv(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// Runs `argv` after creating the report's directory, for runners that do
/// not create it themselves; with `stdout`, the runner's standard output
/// becomes the report (for runners that can only print their structured
/// stream). The shell program is fixed text; the runner's argv stays
/// explicit after it (`sh -c '…' sh cargo test …`).
pub(crate) fn in_report_dir(command: Vec<String>, report: &str, stdout: bool) -> Vec<String> {
    let dir = report.rsplit_once('/').map_or(".", |(d, _)| d);
    let script = if stdout {
        format!("mkdir -p {dir} && exec \"$@\" > {report}")
    } else {
        format!("mkdir -p {dir} && exec \"$@\"")
    };
    let mut out = argv(&["sh", "-c"]);
    out.push(script);
    out.push("sh".to_owned());
    out.extend(command);
    out
}

/// The path of a report named `file` under [`REPORT_DIR`].
pub(crate) fn report_path(file: &str) -> String {
    format!("{REPORT_DIR}/{file}")
}

/// Shows an argv the way a person would type it.
pub(crate) fn show(argv: &[String]) -> String {
    argv.iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_dir_wrapper_keeps_the_argv_explicit() {
        let wrapped = in_report_dir(
            argv(&["go", "test", "-json", "./..."]),
            "test-results/go.json",
            true,
        );
        assert_eq!(
            wrapped,
            argv(&[
                "sh",
                "-c",
                "mkdir -p test-results && exec \"$@\" > test-results/go.json",
                "sh",
                "go",
                "test",
                "-json",
                "./..."
            ])
        );
        assert_eq!(
            show(&wrapped),
            "sh -c 'mkdir -p test-results && exec \"$@\" > test-results/go.json' sh go test -json ./..."
        );
    }
}
