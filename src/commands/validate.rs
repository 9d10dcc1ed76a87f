//! `proofgraph validate [<change>|--all] [--strict]`: the OpenSpec-style
//! validation report for changes (and the workspace catalog).
//!
//! The shape follows `openspec validate --json`, in snake_case:
//! `{items: [{id, type, valid, issues: [{level, code, path, message, line?,
//! column?, fix?}], duration_ms}], summary: {totals, by_type}, version, root}`.
//! An item is invalid when it has an error (or, under `--strict`, a warning);
//! any invalid item makes the command exit 1.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

use serde::Serialize;

use crate::base::diagnostic::{self, Diagnostic, Severity, Target};
use crate::load::workspace::Workspace;
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::session::context::{Context, RootOutput};

/// Options of `validate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidateOptions {
    /// One change, or every change when `None`.
    pub change: Option<String>,
    /// Treat warnings as failures.
    pub strict: bool,
}

/// A finding's level, as OpenSpec writes levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    /// `ERROR`.
    Error,
    /// `WARNING`.
    Warning,
    /// `INFO`.
    Info,
}

impl Level {
    /// The lowercase name, for the human rendering.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Info => "info",
        }
    }
}

impl From<Severity> for Level {
    fn from(severity: Severity) -> Self {
        match severity {
            Severity::Error => Level::Error,
            Severity::Warning => Level::Warning,
            Severity::Info => Level::Info,
        }
    }
}

/// What a validated item is. Ordered as its name is, so `by_type` keeps its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemKind {
    /// `proofgraph.yaml`.
    Catalog,
    /// A change.
    Change,
}

impl ItemKind {
    /// `catalog` or `change`.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Catalog => "catalog",
            ItemKind::Change => "change",
        }
    }
}

/// One finding in an item.
#[derive(Debug, Clone, Serialize)]
pub struct Issue {
    /// `ERROR`, `WARNING` or `INFO`.
    pub level: Level,
    /// The stable diagnostic code.
    pub code: &'static str,
    /// The file concerned, relative to the root (or a dotted surface).
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// 1-based line, when the finding has a position.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based column, when the finding has a position.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// One actionable sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl From<&Diagnostic> for Issue {
    fn from(d: &Diagnostic) -> Self {
        let (path, line, column) = match &d.target {
            Some(Target::Location(l)) => (l.file.clone(), Some(l.pos.line), Some(l.pos.column)),
            Some(Target::Surface(s)) => (s.clone(), None, None),
            None => (String::new(), None, None),
        };
        Self {
            level: d.severity.into(),
            code: d.code.as_str(),
            path,
            message: d.message.clone(),
            line,
            column,
            fix: d.fix.clone(),
        }
    }
}

/// One validated item: a change or the catalog.
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    /// The change name, or `proofgraph.yaml`.
    pub id: String,
    /// `change` or `catalog`.
    #[serde(rename = "type")]
    pub kind: ItemKind,
    /// Whether it passed.
    pub valid: bool,
    /// What was found.
    pub issues: Vec<Issue>,
    /// How long validating it took.
    pub duration_ms: u64,
}

/// Counts of items.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Totals {
    /// Items validated.
    pub items: usize,
    /// Items that passed.
    pub passed: usize,
    /// Items that failed.
    pub failed: usize,
}

/// The summary of a validation.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Over every item.
    pub totals: Totals,
    /// Per item type.
    pub by_type: BTreeMap<ItemKind, Totals>,
}

/// The payload of `validate`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ValidatePayload {
    /// The items, catalog first, then changes by name.
    pub items: Vec<Item>,
    /// Counts.
    pub summary: Option<Summary>,
    /// The report format's version, as OpenSpec's.
    pub version: Option<&'static str>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

impl Payload for ValidatePayload {
    fn human(&self, out: &mut String) {
        for item in &self.items {
            let mark = if item.valid { "ok  " } else { "FAIL" };
            let _ = writeln!(out, "{mark} {} {}", item.kind.as_str(), item.id);
            for issue in &item.issues {
                let at = match (issue.line, issue.column) {
                    (Some(l), Some(c)) => format!("{}:{l}:{c}", issue.path),
                    _ => issue.path.clone(),
                };
                let _ = writeln!(
                    out,
                    "     {} [{}] {at}: {}",
                    issue.level.as_str(),
                    issue.code,
                    issue.message
                );
                if let Some(fix) = &issue.fix {
                    let _ = writeln!(out, "       fix: {fix}");
                }
            }
        }
        if let Some(summary) = &self.summary {
            let t = summary.totals;
            let _ = writeln!(
                out,
                "{} items: {} passed, {} failed",
                t.items, t.passed, t.failed
            );
        }
    }
}

fn item(
    id: String,
    kind: ItemKind,
    mut findings: Vec<Diagnostic>,
    strict: bool,
    started: Instant,
) -> Item {
    diagnostic::sort(&mut findings);
    let valid = !findings
        .iter()
        .any(|d| d.is_error() || (strict && d.severity == Severity::Warning));
    Item {
        id,
        kind,
        valid,
        issues: findings.iter().map(Issue::from).collect(),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}

/// Runs `validate`.
pub fn run(ctx: &Context, options: &ValidateOptions) -> Report<ValidatePayload> {
    let resolution = match ctx.resolve_root() {
        Ok(r) => r,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let started = Instant::now();
    let workspace = Workspace::load(&resolution.root.path);
    let names = match &options.change {
        Some(name) => match workspace.find_change(name) {
            Ok(c) => vec![c],
            Err(d) => return Report::failed(vec![d], Verdict::Invalid),
        },
        None => match workspace.change_names() {
            Ok(names) => names,
            Err(d) => return Report::failed(vec![d], Verdict::Invalid),
        },
    };
    let mut items = Vec::new();
    if workspace.has_catalog {
        items.push(item(
            crate::load::config::catalog::FILE_NAME.to_owned(),
            ItemKind::Catalog,
            workspace.diagnostics.clone(),
            options.strict,
            started,
        ));
    }
    for name in names {
        let started = Instant::now();
        let change = workspace.load_change(&name);
        let mut findings = crate::load::preflight::validate(&workspace, &change);
        // A value `prove` could not redact is worth knowing before it runs.
        let (secrets, warnings) = crate::load::secrets::of_change(&change, ctx.env());
        ctx.remember_secrets(&secrets);
        findings.extend(warnings);
        items.push(item(
            name.to_string(),
            ItemKind::Change,
            findings,
            options.strict,
            started,
        ));
    }
    let mut summary = Summary::default();
    summary.by_type.insert(ItemKind::Change, Totals::default());
    for it in &items {
        for totals in [
            &mut summary.totals,
            summary.by_type.entry(it.kind).or_default(),
        ] {
            totals.items += 1;
            if it.valid {
                totals.passed += 1;
            } else {
                totals.failed += 1;
            }
        }
    }
    let verdict = if summary.totals.failed > 0 {
        Verdict::Failed
    } else {
        Verdict::Success
    };
    Report {
        payload: Some(ValidatePayload {
            items,
            summary: Some(summary),
            version: Some("1.0"),
            root: Some(RootOutput::from(&resolution.root)),
        }),
        status: resolution.notes,
        verdict,
    }
}
