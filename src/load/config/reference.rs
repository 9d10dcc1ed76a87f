//! The field reference of the three files proofgraph reads (`docs/reference/*.md`), as
//! Markdown generated from the JSON Schemas of [`super::schema`]: one table per object, a
//! row per key in the decoder's order, its type read from the schema and its meaning from
//! the decoder's [`Field`] list — the one source the decoders, the schemas and this share.
//!
//! `tests/it/docs.rs` holds the committed files equal to [`markdown`]'s output
//! (`PROOFGRAPH_BLESS=1` rewrites them), so the reference cannot drift from the decoders.

use std::fmt::Write as _;

use serde_json::Value;

use super::decode::Field;
use super::schema::{self, Kind};
use super::{catalog as cat, evidence as ev, execution as ex};

/// One table of the reference: the object at `pointer` (a JSON pointer into the schema).
#[derive(Debug, Clone, Copy)]
pub struct Section {
    /// Its heading.
    pub title: &'static str,
    /// What the object is, in a sentence.
    pub about: &'static str,
    /// Where the object's schema lies in the file's schema.
    pub pointer: &'static str,
    /// Its keys, in the decoder's order.
    pub fields: &'static [Field],
}

impl Section {
    /// The table `title` of the object at `pointer`, with keys `fields`, which is `about`.
    const fn new(
        title: &'static str,
        pointer: &'static str,
        fields: &'static [Field],
        about: &'static str,
    ) -> Self {
        Self {
            title,
            about,
            pointer,
            fields,
        }
    }
}

/// An object of a schema documented in another file's reference: its pointer, and the
/// Markdown that names it there.
const ELSEWHERE: [(Kind, &str, &str); 1] = [(
    Kind::Evidence,
    "/properties/providers/additionalProperties",
    "provider ([execution.md](execution.md#a-provider))",
)];

/// The sections of the reference of `execution.yaml`.
const EXECUTION: [Section; 5] = [
    Section::new(
        "The document",
        "",
        &ex::TOP_FIELDS,
        "`openspec/changes/<change>/execution.yaml`: the wiring of a change.",
    ),
    Section::new(
        "A provider",
        "/properties/providers/additionalProperties",
        &ex::PROVIDER_FIELDS,
        "What proves a capability: a command and how its result is read, or a result signed elsewhere. Paths are relative to the provider's repository; \"fingerprinted\" means a change reruns the provider.",
    ),
    Section::new(
        "An external provider's ci",
        "/properties/providers/additionalProperties/properties/ci",
        &ex::CI_FIELDS,
        "The key an `external` provider's signed results must verify against.",
    ),
    Section::new(
        "A service",
        "/properties/services/additionalProperties",
        &ex::SERVICE_FIELDS,
        "A long-running process the providers that name it need, started once per run.",
    ),
    Section::new(
        "A readiness probe",
        "/properties/services/additionalProperties/properties/readiness",
        &ex::READINESS_FIELDS,
        "How a service is known to be this run's and ready.",
    ),
];

/// The sections of the reference of `evidence.yaml`.
const EVIDENCE: [Section; 2] = [
    Section::new(
        "The document",
        "",
        &ev::TOP_FIELDS,
        "`openspec/changes/<change>/evidence.yaml`: the claims a change must prove.",
    ),
    Section::new(
        "A claim",
        "/properties/claims/items",
        &ev::CLAIM_FIELDS,
        "A scenario and the capabilities that must vouch for it.",
    ),
];

/// The sections of the reference of `proofgraph.yaml`.
const CATALOG: [Section; 6] = [
    Section::new(
        "The document",
        "",
        &cat::TOP_FIELDS,
        "`proofgraph.yaml` at the OpenSpec root (optional): the workspace's repositories, sandbox, trusted keys and remote cache.",
    ),
    Section::new(
        "A repository",
        "/properties/repositories/additionalProperties",
        &cat::REPOSITORY_FIELDS,
        "A repository of the workspace, and how a fresh sandbox of it is set up.",
    ),
    Section::new(
        "A trusted key",
        "/properties/trustedKeys/items",
        &cat::TRUSTED_KEY_FIELDS,
        "An entry of `trustedKeys`: a key whose receipts count.",
    ),
    Section::new(
        "The remote cache",
        "/properties/cache",
        &cat::CACHE_FIELDS,
        "`cache`: where receipts travel between machines.",
    ),
    Section::new(
        "Logs",
        "/properties/logs",
        &cat::LOGS_FIELDS,
        "`logs`: how much of each job's log a receipt keeps.",
    ),
    Section::new(
        "The remote executor",
        "/properties/executor",
        &cat::EXECUTOR_FIELDS,
        "`executor`: the Remote Execution API engine `prove --executor remote|auto` runs eligible providers on, reached as the remote cache is (credentials, deadlines, TLS, proxies).",
    ),
];

/// The sections of `kind`'s reference, in order.
pub fn sections(kind: Kind) -> &'static [Section] {
    match kind {
        Kind::Execution => &EXECUTION,
        Kind::Evidence => &EVIDENCE,
        Kind::Catalog => &CATALOG,
    }
}

/// The file `kind` describes, and the file of its reference under `docs/reference/`.
pub fn file_names(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Execution => ("execution.yaml", "execution.md"),
        Kind::Evidence => ("evidence.yaml", "evidence.md"),
        Kind::Catalog => ("proofgraph.yaml", "proofgraph.md"),
    }
}

/// The pointers of every object of `kind`'s schema that has keys (`properties`), but those
/// another file's reference documents: what [`sections`] must cover.
pub fn objects(kind: Kind) -> Vec<String> {
    fn walk(kind: Kind, value: &Value, at: &str, out: &mut Vec<String>) {
        if ELSEWHERE.iter().any(|(k, p, _)| *k == kind && *p == at) {
            return;
        }
        match value {
            Value::Object(map) => {
                if map.get("properties").is_some_and(Value::is_object) {
                    out.push(at.to_owned());
                }
                for (key, inner) in map {
                    walk(kind, inner, &format!("{at}/{key}"), out);
                }
            }
            Value::Array(items) => {
                for (i, inner) in items.iter().enumerate() {
                    walk(kind, inner, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(kind, &schema::of(kind), "", &mut out);
    out.sort();
    out
}

/// GitHub's anchor of a heading.
fn anchor(title: &str) -> String {
    title
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

/// What a string matching `pattern` is, singular and plural.
fn pattern_noun(pattern: &str) -> Option<(&'static str, &'static str)> {
    Some(match pattern {
        schema::LOWER_NAME => ("id", "ids"),
        schema::CLAIM_NAME => ("claim id", "claim ids"),
        schema::KEBAB => ("capability name", "capability names"),
        schema::ENV_NAME => ("variable name", "variable names"),
        schema::RESOURCE => ("`name` or `name:value`", "`name` or `name:value` entries"),
        p if p.starts_with("^(grpc") => ("URL", "URLs"),
        p if p.starts_with("^(local") => ("policy", "policies"),
        _ => return None,
    })
}

/// Writes `values` as Markdown code: `` `a`, `b`, `c` ``.
fn codes(values: &[Value]) -> String {
    values
        .iter()
        .map(|v| {
            format!(
                "`{}`",
                v.as_str().map_or_else(|| v.to_string(), str::to_owned)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The type of the value `value` (the schema at `at`), in words; `plural` for a list's
/// items. An object documented by a section links to it.
fn type_of(kind: Kind, value: &Value, at: &str, plural: bool) -> String {
    let noun = |one: &str, many: &str| if plural { many } else { one }.to_owned();
    if let Some(link) = ELSEWHERE
        .iter()
        .find(|(k, p, _)| *k == kind && *p == at)
        .map(|(_, _, link)| *link)
    {
        return link.to_owned();
    }
    if let Some(section) = sections(kind).iter().find(|s| s.pointer == at) {
        return format!(
            "{} ([below](#{}))",
            noun("object", "objects"),
            anchor(section.title)
        );
    }
    if let Some(constant) = value.get("const") {
        return codes(std::slice::from_ref(constant));
    }
    if let Some(Value::Array(values)) = value.get("enum") {
        return codes(values);
    }
    if let Some(Value::Array(options)) = value.get("oneOf") {
        return options
            .iter()
            .enumerate()
            .map(|(i, o)| type_of(kind, o, &format!("{at}/oneOf/{i}"), plural))
            .collect::<Vec<_>>()
            .join(" or ");
    }
    match value.get("type") {
        Some(Value::Array(types)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            match names.split_last() {
                Some((last, [])) => (*last).to_owned(),
                Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                None => "any".to_owned(),
            }
        }
        Some(Value::String(t)) => match t.as_str() {
            "string" => value
                .get("pattern")
                .and_then(Value::as_str)
                .and_then(pattern_noun)
                .map_or_else(|| noun("string", "strings"), |(one, many)| noun(one, many)),
            "integer" => {
                let min = value.get("minimum").and_then(Value::as_u64);
                let max = value.get("maximum").and_then(Value::as_u64);
                let base = noun("integer", "integers");
                match (min, max) {
                    (Some(min), Some(max)) => format!("{base} from {min} to {max}"),
                    (Some(min), None) => format!("{base} ≥ {min}"),
                    (None, Some(max)) => format!("{base} ≤ {max}"),
                    (None, None) => base,
                }
            }
            "array" => {
                let items = value
                    .get("items")
                    .map(|i| type_of(kind, i, &format!("{at}/items"), true))
                    .unwrap_or_else(|| "values".to_owned());
                let nonempty = value.get("minItems").and_then(Value::as_u64) == Some(1);
                let list = noun("list", "lists");
                if nonempty {
                    format!("non-empty {list} of {items}")
                } else {
                    format!("{list} of {items}")
                }
            }
            "object" => {
                let key = value
                    .get("propertyNames")
                    .and_then(|p| p.get("pattern"))
                    .and_then(Value::as_str)
                    .and_then(pattern_noun)
                    .map_or("string", |(one, _)| one);
                let to = value.get("additionalProperties").map_or_else(
                    || "value".to_owned(),
                    |v| type_of(kind, v, &format!("{at}/additionalProperties"), false),
                );
                format!("{} of {key} → {to}", noun("map", "maps"))
            }
            other => noun(other, &format!("{other}s")),
        },
        _ => "any".to_owned(),
    }
}

/// `text` with each `docs/<file>.md[#anchor]` it names made a link relative to
/// `docs/reference/`.
fn linked(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("docs/") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "docs/".len()..];
        let len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || "-_/.#".contains(c)))
            .unwrap_or(after.len());
        let target = after[..len].trim_end_matches('.');
        let (path, fragment) = target.split_once('#').unwrap_or((target, ""));
        if let Some(name) = path.strip_suffix(".md") {
            let href = match name.strip_prefix("reference/") {
                Some(own) => format!("{own}.md"),
                None => format!("../{name}.md"),
            };
            let fragment = if fragment.is_empty() {
                String::new()
            } else {
                format!("#{fragment}")
            };
            let _ = write!(out, "[{path}]({href}{fragment})");
            rest = &after[target.len()..];
        } else {
            out.push_str("docs/");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// A table cell: no line break, no unescaped `|`.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The field reference of `kind`, as Markdown.
pub fn markdown(kind: Kind) -> String {
    let (file, _) = file_names(kind);
    let name = Kind::ALL
        .iter()
        .find(|(_, k)| *k == kind)
        .map_or("", |(n, _)| *n);
    let schema = schema::of(kind);
    let mut out = String::new();
    let _ = write!(
        out,
        "# `{file}`: every field\n\n\
         <!-- Generated from the decoders' key lists (src/load/config/) by tests/it/docs.rs:\n\
         \x20    PROOFGRAPH_BLESS=1 cargo nextest run -E 'test(field_reference)'\n\
         \x20    Do not edit by hand. -->\n\n\
         Every key `{file}` accepts. Any other key is a warning, `unknown_key`, with a \"did you\n\
         mean\"; a wrong type or a missing required key is an error. `proofgraph schema {name}`\n\
         prints the same as a JSON Schema, with these descriptions, for an editor to show on hover.\n"
    );
    for section in sections(kind) {
        let object = schema.pointer(section.pointer).unwrap_or(&Value::Null);
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let _ = write!(
            out,
            "\n## {}\n\n{}\n\n| key | type | required | meaning |\n|---|---|---|---|\n",
            section.title,
            linked(section.about)
        );
        for field in section.fields {
            let at = format!("{}/properties/{}", section.pointer, field.key);
            let ty = schema
                .pointer(&at)
                .map_or_else(|| "?".to_owned(), |v| type_of(kind, v, &at, false));
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                field.key,
                cell(&ty),
                if required.contains(&field.key) {
                    "yes"
                } else {
                    ""
                },
                cell(&linked(field.about)),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every object of every schema that has keys has its table, and every table lies on an
    /// object of the schema with exactly its keys.
    #[test]
    fn the_sections_cover_every_object_of_the_schemas() {
        for (name, kind) in Kind::ALL {
            let mut covered: Vec<String> = sections(kind)
                .iter()
                .map(|s| s.pointer.to_owned())
                .collect();
            covered.sort();
            assert_eq!(covered, objects(kind), "the sections of `{name}`");
            let schema = schema::of(kind);
            for section in sections(kind) {
                let mut keys: Vec<&str> = schema
                    .pointer(&format!("{}/properties", section.pointer))
                    .and_then(Value::as_object)
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                keys.sort_unstable();
                let mut fields: Vec<&str> = section.fields.iter().map(|f| f.key).collect();
                fields.sort_unstable();
                assert_eq!(keys, fields, "`{name}` {}", section.title);
            }
        }
    }

    #[test]
    fn types_are_read_from_the_schema() {
        let kind = Kind::Execution;
        let schema = schema::of(kind);
        let provider = "/properties/providers/additionalProperties/properties";
        let ty = |key: &str| {
            let at = format!("{provider}/{key}");
            type_of(
                kind,
                schema.pointer(&at).expect("a provider key"),
                &at,
                false,
            )
        };
        assert_eq!(ty("timeoutMs"), "integer ≥ 1");
        assert_eq!(ty("command"), "non-empty list of strings");
        assert_eq!(ty("dependsOn"), "list of ids");
        assert_eq!(ty("network"), "`private`, `host`");
        assert_eq!(ty("claims"), "`declared` or list of claim ids");
        assert_eq!(ty("ci"), "object ([below](#an-external-providers-ci))");
        assert_eq!(ty("contract"), "map of id → string");
        assert_eq!(
            ty("env"),
            "map of variable name → string, number or boolean"
        );
    }

    #[test]
    fn doc_paths_become_links_relative_to_the_reference() {
        assert_eq!(
            linked("see docs/evidence.md#capabilities, docs/reference/execution.md."),
            "see [evidence.md](../evidence.md#capabilities), [reference/execution.md](execution.md)."
        );
        assert_eq!(linked("docs/ alone"), "docs/ alone");
    }
}
