//! JSON Schemas (draft 2020-12) of the three files proofgraph reads — `execution.yaml`,
//! `evidence.yaml` and `proofgraph.yaml` — for editors (yaml-language-server, VS Code) to
//! complete and check them as they are typed (`proofgraph schema <kind>`).
//!
//! Built from the decoders' own key lists and the graph's enumerations, so a key or a value
//! the decoders accept is never missing here; the types of each key are written beside
//! them, and a test validates every fixture with a real validator against them. Every key
//! carries the `description` its decoder's [`Field`] gives it (an editor shows it on hover),
//! and the field reference (`docs/reference/`, [`super::reference`]) is generated from the
//! same schemas and descriptions. The schema
//! is the shape only: what needs the whole change (a `dependsOn` that names no provider, a
//! cycle, a secret-looking `env` value) is `validate`'s. An unknown key fails the schema
//! where the decoders warn (`unknown_key`), so an editor marks it.

use proofgraph_graph::Adapter;
use proofgraph_graph::model::{Impact, InputMode, Network, ReportFormat};
use proofgraph_sandbox::SandboxMode;
use serde_json::{Value, json};

use super::decode::Field;
use super::{catalog as cat, evidence as ev, execution as ex};

/// Which file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `openspec/changes/<change>/execution.yaml`.
    Execution,
    /// `openspec/changes/<change>/evidence.yaml`.
    Evidence,
    /// `proofgraph.yaml` at the OpenSpec root.
    Catalog,
}

impl Kind {
    /// Every kind, by its command-line name.
    pub const ALL: [(&'static str, Kind); 3] = [
        ("execution", Kind::Execution),
        ("evidence", Kind::Evidence),
        ("catalog", Kind::Catalog),
    ];
}

/// `[a-z0-9][a-z0-9._-]*`: provider, service and repository ids.
pub(crate) const LOWER_NAME: &str = "^[a-z0-9][a-z0-9._-]*$";
/// Claim ids.
pub(crate) const CLAIM_NAME: &str = "^[A-Za-z0-9][A-Za-z0-9._-]*$";
/// Capability names (kebab-case).
pub(crate) const KEBAB: &str = "^[a-z0-9]+(-[a-z0-9]+)*$";
/// Environment variable names.
pub(crate) const ENV_NAME: &str = "^[A-Za-z_][A-Za-z0-9_]*$";
/// Resource names: a lower name, optionally `:parameter`.
pub(crate) const RESOURCE: &str = "^[a-z0-9][a-z0-9._-]*(:[^\\s]+)?$";

fn id(pattern: &str) -> Value {
    json!({"type": "string", "pattern": pattern})
}

fn ids(pattern: &str) -> Value {
    json!({"type": "array", "items": id(pattern)})
}

fn text() -> Value {
    json!({"type": "string", "minLength": 1})
}

fn texts() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn argv() -> Value {
    json!({"type": "array", "minItems": 1, "items": {"type": "string"}})
}

fn positive() -> Value {
    json!({"type": "integer", "minimum": 1})
}

fn one_of_names(names: impl IntoIterator<Item = &'static str>) -> Value {
    json!({"type": "string", "enum": names.into_iter().collect::<Vec<_>>()})
}

fn env_map() -> Value {
    json!({
        "type": "object",
        "propertyNames": {"pattern": ENV_NAME},
        "additionalProperties": {"type": ["string", "number", "boolean"]},
    })
}

/// `properties` with each key's `description` taken from `fields` (the decoder's), so an
/// editor shows what a key means on hover. A key of one and not the other is left as it is:
/// `the_schemas_hold_exactly_the_decoders_keys` fails on it.
fn described(fields: &[Field], mut properties: Value) -> Value {
    if let Value::Object(map) = &mut properties {
        for field in fields {
            if let Some(Value::Object(property)) = map.get_mut(field.key) {
                property.insert("description".to_owned(), Value::from(field.about));
            }
        }
    }
    properties
}

fn object(description: &str, fields: &[Field], properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "description": description,
        "properties": described(fields, properties),
        "required": required,
        "additionalProperties": false,
    })
}

/// `properties` and the keys that say how a remote is reached besides its URL, which
/// `cache` and `executor` share (the catalog decoder's `connection`).
fn with_connection(mut properties: Value) -> Value {
    if let Value::Object(map) = &mut properties {
        map.insert(
            "headersFromEnv".to_owned(),
            json!({"type": "object", "additionalProperties": id(ENV_NAME)}),
        );
        for key in ["connectTimeoutMs", "timeoutMs", "minBytesPerSecond"] {
            map.insert(key.to_owned(), positive());
        }
    }
    properties
}

/// A provider, keyed exactly as `execution::PROVIDER_KEYS`.
fn provider() -> Value {
    let properties = json!({
        "adapter": one_of_names(Adapter::ALL.iter().map(|a| a.as_str())),
        "capability": id(KEBAB),
        "command": argv(),
        "report": text(),
        "reportFormat": one_of_names(ReportFormat::NAMES.iter().map(|(n, _)| *n)),
        "minimum": {"type": "integer", "minimum": 0},
        "discoveryProvider": id(LOWER_NAME),
        "timeoutMs": positive(),
        "repository": id(LOWER_NAME),
        "repositories": ids(LOWER_NAME),
        "inputs": texts(),
        "resources": ids(RESOURCE),
        "dependsOn": ids(LOWER_NAME),
        "env": env_map(),
        "envFrom": ids(ENV_NAME),
        "service": {"oneOf": [id(LOWER_NAME), ids(LOWER_NAME)]},
        "project": text(),
        "outputs": ids(KEBAB),
        "inputMode": one_of_names(InputMode::NAMES.iter().map(|(n, _)| *n)),
        "claims": {"oneOf": [{"const": "declared"}, ids(CLAIM_NAME)]},
        "contract": {
            "type": "object",
            "propertyNames": {"pattern": LOWER_NAME},
            "additionalProperties": text(),
        },
        "ci": object(
            "The key an `external` provider's signed results must verify against.",
            &ex::CI_FIELDS,
            json!({"issuer": text(), "publicKey": text()}),
            &["issuer", "publicKey"],
        ),
        "network": one_of_names(Network::NAMES.iter().map(|(n, _)| *n)),
        "criticalCases": texts(),
        "artifacts": texts(),
    });
    object(
        "A provider: what proves a capability (docs/reference/execution.md).",
        &ex::PROVIDER_FIELDS,
        properties,
        &["adapter"],
    )
}

fn service() -> Value {
    let readiness = object(
        "The probe that says the service is this run's and ready.",
        &ex::READINESS_FIELDS,
        json!({
            "url": text(),
            "expectHeader": {"type": "object", "additionalProperties": {"type": "string"}},
            "expectBody": {"type": "string"},
            "timeoutMs": positive(),
        }),
        &["url"],
    );
    object(
        "A service the providers that name it need running (docs/reference/execution.md).",
        &ex::SERVICE_FIELDS,
        json!({
            "command": argv(),
            "repository": id(LOWER_NAME),
            "readiness": readiness,
            "env": env_map(),
            "envFrom": ids(ENV_NAME),
            "network": one_of_names(Network::NAMES.iter().map(|(n, _)| *n)),
        }),
        &["command", "readiness"],
    )
}

fn providers() -> Value {
    json!({
        "type": "object",
        "propertyNames": {"pattern": LOWER_NAME},
        "additionalProperties": provider(),
    })
}

fn execution() -> Value {
    json!({
        "type": "object",
        "properties": described(&ex::TOP_FIELDS, json!({
            "version": {"const": 1},
            "providers": providers(),
            "services": {
                "type": "object",
                "propertyNames": {"pattern": LOWER_NAME},
                "additionalProperties": service(),
            },
        })),
        "required": ["version", "providers"],
        "additionalProperties": false,
    })
}

fn evidence() -> Value {
    let claim = object(
        "A claim: a scenario and the capabilities that must vouch for it (docs/reference/evidence.md).",
        &ev::CLAIM_FIELDS,
        json!({
            "id": id(CLAIM_NAME),
            "scenario": text(),
            "impact": one_of_names(Impact::NAMES.iter().map(|(n, _)| *n)),
            "capabilities": {"type": "array", "minItems": 1, "items": id(KEBAB)},
            "repositories": ids(LOWER_NAME),
        }),
        &["id", "scenario", "capabilities"],
    );
    json!({
        "type": "object",
        "properties": described(&ev::TOP_FIELDS, json!({
            "version": {"enum": [1, 2]},
            "claims": {"type": "array", "items": claim},
            "providers": providers(),
        })),
        "required": ["version", "claims"],
        "additionalProperties": false,
    })
}

fn catalog() -> Value {
    let repository = object(
        "A repository of the workspace, and its sandbox setup (docs/setup.md).",
        &cat::REPOSITORY_FIELDS,
        json!({
            "path": text(),
            "setup": {"type": "array", "items": argv()},
            "setupCache": texts(),
            "setupInputs": texts(),
            "caches": {
                "type": "array",
                "uniqueItems": true,
                "items": {"enum": crate::load::config::caches::CacheKind::ALL.map(|k| k.as_str())},
            },
        }),
        &["path"],
    );
    let trusted = object(
        "A key whose receipts count (a CI's).",
        &cat::TRUSTED_KEY_FIELDS,
        json!({"name": text(), "publicKey": text()}),
        &["name", "publicKey"],
    );
    let cache = object(
        "The remote cache (docs/remote-cache.md).",
        &cat::CACHE_FIELDS,
        with_connection(json!({
            "remote": {
                "type": "string",
                "pattern": "^(grpcs?|https?)://",
            },
            "policy": {
                "type": "string",
                "pattern": "^(local|remote):(rw|r|w|off)(,(local|remote):(rw|r|w|off))?$",
            },
        })),
        &[],
    );
    let logs = object(
        "How much of each job's log a receipt keeps (docs/execution.md).",
        &cat::LOGS_FIELDS,
        json!({
            "keepBytes": {
                "type": "integer",
                "minimum": cat::MIN_LOG_KEEP_BYTES,
                "maximum": cat::MAX_LOG_KEEP_BYTES,
            },
        }),
        &[],
    );
    let executor = object(
        "The remote executor (docs/remote-execution.md).",
        &cat::EXECUTOR_FIELDS,
        with_connection(json!({
            "remote": {
                "type": "string",
                "pattern": "^grpcs?://",
            },
            "platform": {
                "type": "object",
                "propertyNames": {"minLength": 1},
                "additionalProperties": text(),
            },
            "remoteJobs": positive(),
        })),
        &["remote"],
    );
    json!({
        "type": "object",
        "properties": described(&cat::TOP_FIELDS, json!({
            "version": {"const": 1},
            "repositories": {
                "type": "object",
                "propertyNames": {"pattern": LOWER_NAME},
                "additionalProperties": repository,
            },
            "sandbox": one_of_names(SandboxMode::ALL.iter().map(|m| m.as_str())),
            "trustedKeys": {"type": "array", "items": trusted},
            "cache": cache,
            "hostPaths": texts(),
            "logs": logs,
            "executor": executor,
        })),
        "required": ["version"],
        "additionalProperties": false,
    })
}

/// The JSON Schema of `kind`.
pub fn of(kind: Kind) -> Value {
    let (name, title, body) = match kind {
        Kind::Execution => (
            "execution",
            "proofgraph execution.yaml: the providers and services that prove a change's claims",
            execution(),
        ),
        Kind::Evidence => (
            "evidence",
            "proofgraph evidence.yaml: a change's claims",
            evidence(),
        ),
        Kind::Catalog => (
            "catalog",
            "proofgraph.yaml: the workspace's repositories, sandbox, trusted keys and remote cache",
            catalog(),
        ),
    };
    let mut schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": format!("https://proofgraph.dev/schema/{name}.json"),
        "title": title,
    });
    if let (Value::Object(out), Value::Object(body)) = (&mut schema, body) {
        out.extend(body);
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(schema: &Value) -> Vec<String> {
        let mut keys: Vec<String> = schema["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        keys.sort();
        keys
    }

    /// Every key a decoder accepts has its schema, and no other key does.
    #[test]
    fn the_schemas_hold_exactly_the_decoders_keys() {
        let sorted = |v: &[&str]| {
            let mut v: Vec<String> = v.iter().map(|s| (*s).to_owned()).collect();
            v.sort();
            v
        };
        assert_eq!(
            keys(&provider()),
            sorted(&super::super::execution::PROVIDER_KEYS)
        );
        assert_eq!(
            keys(&service()),
            sorted(&super::super::execution::SERVICE_KEYS)
        );
        assert_eq!(
            keys(&service()["properties"]["readiness"]),
            sorted(&super::super::execution::READINESS_KEYS)
        );
        assert_eq!(keys(&evidence()), sorted(&super::super::evidence::TOP_KEYS));
        assert_eq!(
            keys(&evidence()["properties"]["claims"]["items"]),
            sorted(&super::super::evidence::CLAIM_KEYS)
        );
        assert_eq!(keys(&catalog()), sorted(&super::super::catalog::TOP_KEYS));
        assert_eq!(
            keys(&catalog()["properties"]["repositories"]["additionalProperties"]),
            sorted(&super::super::catalog::REPOSITORY_KEYS)
        );
        assert_eq!(
            keys(&catalog()["properties"]["cache"]),
            sorted(&super::super::catalog::CACHE_KEYS)
        );
        assert_eq!(
            keys(&catalog()["properties"]["logs"]),
            sorted(&super::super::catalog::LOGS_KEYS)
        );
        assert_eq!(
            keys(&catalog()["properties"]["trustedKeys"]["items"]),
            sorted(&super::super::catalog::TRUSTED_KEY_KEYS)
        );
        assert_eq!(
            keys(&provider()["properties"]["ci"]),
            sorted(&super::super::execution::CI_KEYS)
        );
    }

    /// The keys of every object of `schema` (at `at`) without a non-empty `description`.
    fn undescribed(schema: &Value, at: &str, out: &mut Vec<String>) {
        match schema {
            Value::Object(map) => {
                if let Some(Value::Object(properties)) = map.get("properties") {
                    for (key, property) in properties {
                        let about = property.get("description").and_then(Value::as_str);
                        if about.is_none_or(|a| a.trim().is_empty()) {
                            out.push(format!("{at}/properties/{key}"));
                        }
                    }
                }
                for (key, value) in map {
                    undescribed(value, &format!("{at}/{key}"), out);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    undescribed(item, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    /// Every key of every schema `proofgraph schema` prints says what it means, so an
    /// editor shows it on hover and the field reference lists it.
    #[test]
    fn every_key_has_a_description() {
        for (name, kind) in Kind::ALL {
            let mut missing = Vec::new();
            undescribed(&of(kind), "", &mut missing);
            assert!(
                missing.is_empty(),
                "keys of `schema {name}` without a description: {missing:?}"
            );
        }
        // The walk finds what it looks for: a property without one.
        let mut missing = Vec::new();
        undescribed(
            &json!({"properties": {"a": {"type": "string"}}}),
            "",
            &mut missing,
        );
        assert_eq!(missing, ["/properties/a"]);
    }
}
