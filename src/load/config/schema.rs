//! JSON Schemas (draft 2020-12) of the three files proofgraph reads — `execution.yaml`,
//! `evidence.yaml` and `proofgraph.yaml` — for editors (yaml-language-server, VS Code) to
//! complete and check them as they are typed (`proofgraph schema <kind>`).
//!
//! Built from the decoders' own key lists and the graph's enumerations, so a key or a value
//! the decoders accept is never missing here; the types of each key are written beside
//! them, and a test validates every fixture with a real validator against them. The schema
//! is the shape only: what needs the whole change (a `dependsOn` that names no provider, a
//! cycle, a secret-looking `env` value) is `validate`'s. An unknown key fails the schema
//! where the decoders warn (`unknown_key`), so an editor marks it.

use proofgraph_graph::Adapter;
use proofgraph_graph::model::{Impact, InputMode, Network, ReportFormat};
use proofgraph_sandbox::SandboxMode;
use serde_json::{Value, json};

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
const LOWER_NAME: &str = "^[a-z0-9][a-z0-9._-]*$";
/// Claim ids.
const CLAIM_NAME: &str = "^[A-Za-z0-9][A-Za-z0-9._-]*$";
/// Capability names (kebab-case).
const KEBAB: &str = "^[a-z0-9]+(-[a-z0-9]+)*$";
/// Environment variable names.
const ENV_NAME: &str = "^[A-Za-z_][A-Za-z0-9_]*$";
/// Resource names: a lower name, optionally `:parameter`.
const RESOURCE: &str = "^[a-z0-9][a-z0-9._-]*(:[^\\s]+)?$";

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

fn object(description: &str, properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "description": description,
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
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
            json!({"issuer": text(), "publicKey": text()}),
            &["issuer", "publicKey"],
        ),
        "network": one_of_names(Network::NAMES.iter().map(|(n, _)| *n)),
        "criticalCases": texts(),
        "artifacts": texts(),
    });
    object(
        "A provider: what proves a capability (docs/execution.md).",
        properties,
        &["adapter"],
    )
}

fn service() -> Value {
    let readiness = object(
        "The probe that says the service is this run's and ready.",
        json!({
            "url": text(),
            "expectHeader": {"type": "object", "additionalProperties": {"type": "string"}},
            "expectBody": {"type": "string"},
            "timeoutMs": positive(),
        }),
        &["url"],
    );
    object(
        "A service the providers that name it need running (docs/execution.md).",
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
        "properties": {
            "version": {"const": 1},
            "providers": providers(),
            "services": {
                "type": "object",
                "propertyNames": {"pattern": LOWER_NAME},
                "additionalProperties": service(),
            },
        },
        "required": ["version", "providers"],
        "additionalProperties": false,
    })
}

fn evidence() -> Value {
    let claim = object(
        "A claim: a scenario and the capabilities that must vouch for it (docs/evidence.md).",
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
        "properties": {
            "version": {"enum": [1, 2]},
            "claims": {"type": "array", "items": claim},
            "providers": providers(),
        },
        "required": ["version", "claims"],
        "additionalProperties": false,
    })
}

fn catalog() -> Value {
    let repository = object(
        "A repository of the workspace, and its sandbox setup (docs/setup.md).",
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
        json!({"name": text(), "publicKey": text()}),
        &["name", "publicKey"],
    );
    let cache = object(
        "The remote cache (docs/remote-cache.md).",
        json!({
            "remote": {
                "type": "string",
                "pattern": "^(grpcs?|https?)://",
            },
            "policy": {
                "type": "string",
                "pattern": "^(local|remote):(rw|r|w|off)(,(local|remote):(rw|r|w|off))?$",
            },
            "headersFromEnv": {
                "type": "object",
                "additionalProperties": id(ENV_NAME),
            },
            "connectTimeoutMs": positive(),
            "timeoutMs": positive(),
            "minBytesPerSecond": positive(),
        }),
        &[],
    );
    let logs = object(
        "How much of each job's log a receipt keeps (docs/execution.md).",
        json!({
            "keepBytes": {
                "type": "integer",
                "minimum": super::catalog::MIN_LOG_KEEP_BYTES,
                "maximum": super::catalog::MAX_LOG_KEEP_BYTES,
            },
        }),
        &[],
    );
    json!({
        "type": "object",
        "properties": {
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
        },
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
    }
}
