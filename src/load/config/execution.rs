//! `execution.yaml` (version 1): providers and services, the wiring of a change.
//!
//! Providers may also be embedded in a version-2 `evidence.yaml`; both are
//! decoded by [`decode_providers`]. Every field of the format (docs/execution.md) is read
//! into a typed value. Absent and empty stay distinct (`Option<Vec<_>>`), because they
//! are distinct inputs to a provider's fingerprint.

use std::collections::BTreeMap;

use proofgraph_graph::model::{
    CiVerification, ClaimScope, InputMode, Network, Provider, Readiness, ReportFormat, Service,
};
use proofgraph_graph::readiness::ReadinessUrl;
use proofgraph_graph::{
    Adapter, CapabilityName, ClaimId, EnvName, ProviderId, RepoId, ResourceName, ServiceId,
};

use super::decode::{
    self, Field, Fields, Sink, Spanned, fields, ident, ident_str, keys, list, missing,
    nonempty_string, one_of, scalar_text,
};
use crate::base::diagnostic::Code;
use crate::syntax::node::{Node, Value};

/// A decoded `execution.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Execution {
    /// The declared providers.
    pub providers: BTreeMap<ProviderId, Provider>,
    /// The declared services.
    pub services: BTreeMap<ServiceId, Service>,
}

/// A provider's fields: the keys it accepts, each with what it means.
pub const PROVIDER_FIELDS: [Field; 25] = [
    Field::new(
        "adapter",
        "How the provider produces a result (required): `command` by its exit code, `test-discovery` by a test report, `playwright` by a Playwright JSON report, `contract-digest` by comparing contract files, `external` by a result signed elsewhere (docs/external.md).",
    ),
    Field::new(
        "capability",
        "The capability it proves (default: the provider's id); docs/evidence.md#capabilities lists the known names.",
    ),
    Field::new(
        "command",
        "The argv it runs, a program on its `PATH` or a file of its repository; required by `command`, `test-discovery` and `playwright`. Fingerprinted with the program's digest.",
    ),
    Field::new(
        "report",
        "The path of the structured report the command writes, read after it exits (`test-discovery`, `playwright`).",
    ),
    Field::new(
        "reportFormat",
        "The report's format (default: recognised from its content; docs/reports.md).",
    ),
    Field::new(
        "minimum",
        "The fewest tests a run must execute for `discovery` (absent or 0: 1); `evidence init` proposes the count the source declares.",
    ),
    Field::new(
        "discoveryProvider",
        "The `test-discovery` provider of `discovery` that receives this test run's discovery receipt (the provider named `test` needs none).",
    ),
    Field::new(
        "timeoutMs",
        "How long the command may run, in milliseconds (default 120000); a run past it fails.",
    ),
    Field::new(
        "repository",
        "The repository of `proofgraph.yaml` the command runs in (default: the workspace's only one).",
    ),
    Field::new(
        "repositories",
        "The repositories a provider spanning several reads: the base of its `inputs`.",
    ),
    Field::new(
        "inputs",
        "The files it binds, as globs, `repo:glob` and `!glob`, narrowing the default (every file of its repositories); the last matching entry decides (docs/inputs.md).",
    ),
    Field::new(
        "resources",
        "The locks it holds while it runs (`name` or `name:value`), in place of its adapter's defaults; two providers holding one lock never run at once.",
    ),
    Field::new(
        "dependsOn",
        "Providers that must finish first; their fingerprints are part of its own.",
    ),
    Field::new(
        "env",
        "Literal, non-secret environment variables of the command (fingerprinted).",
    ),
    Field::new(
        "envFrom",
        "Variables taken from the caller's environment, as secrets: never fingerprinted, logged or stored (docs/execution.md#secrets).",
    ),
    Field::new(
        "service",
        "The services it needs, started and probed ready before it runs.",
    ),
    Field::new("project", "The Playwright project it runs (`playwright`)."),
    Field::new(
        "outputs",
        "Further capabilities one Playwright run vouches for (docs/playwright.md).",
    ),
    Field::new(
        "inputMode",
        "How a browser provider drives input, recorded in its receipts.",
    ),
    Field::new(
        "claims",
        "Which claims it vouches for: `declared` (the default) for every claim that requires its capability, or a list of exactly the claims it covers.",
    ),
    Field::new(
        "contract",
        "The contract file of each repository whose bytes must agree (`contract-digest`).",
    ),
    Field::new(
        "ci",
        "Who signs an `external` provider's results, and with which key (docs/external.md).",
    ),
    Field::new(
        "network",
        "The job's network: `private`, its own loopback (the default), or `host`, the machine's. Fingerprinted and shown in receipts.",
    ),
    Field::new(
        "criticalCases",
        "Test cases the report must show passing for a pass; a report without one of them is not a pass.",
    ),
    Field::new(
        "artifacts",
        "Globs of files it writes that the providers depending on it see, read-only (docs/execution.md#where-and-with-what).",
    ),
];

/// The keys a provider accepts.
pub const PROVIDER_KEYS: [&str; 25] = keys(&PROVIDER_FIELDS);

/// The document's fields.
pub const TOP_FIELDS: [Field; 3] = [
    Field::new("version", "The format's version: `1` (required)."),
    Field::new(
        "providers",
        "What proves the change's capabilities, by provider id (required; `{}` for none).",
    ),
    Field::new(
        "services",
        "Long-running processes providers need, by service id: started once per run and probed ready.",
    ),
];

/// The keys of the document.
pub const TOP_KEYS: [&str; 3] = keys(&TOP_FIELDS);

/// A service's fields.
pub const SERVICE_FIELDS: [Field; 6] = [
    Field::new("command", "The argv that starts it (required)."),
    Field::new(
        "repository",
        "The repository it runs in (default: the workspace's only one).",
    ),
    Field::new(
        "readiness",
        "How it is known to be this run's and ready (required).",
    ),
    Field::new("env", "Literal, non-secret environment variables."),
    Field::new(
        "envFrom",
        "Variables taken from the caller's environment, as secrets.",
    ),
    Field::new(
        "network",
        "Its network, as a provider's: `private` (the default) or `host`.",
    ),
];

/// The keys a service accepts.
pub const SERVICE_KEYS: [&str; 6] = keys(&SERVICE_FIELDS);

/// A readiness probe's fields.
pub const READINESS_FIELDS: [Field; 4] = [
    Field::new(
        "url",
        "What is polled until it answers (required): `http://HOST:PORT/path`, plain HTTP inside the run's network; its port is the lock `port:<n>` the service holds.",
    ),
    Field::new(
        "expectHeader",
        "Headers the answer must carry, so that a foreign server on the port is not taken for the service.",
    ),
    Field::new("expectBody", "Text the answer's body must contain."),
    Field::new(
        "timeoutMs",
        "How long to poll, in milliseconds (default 30000).",
    ),
];

/// The keys of a service's readiness probe.
pub const READINESS_KEYS: [&str; 4] = keys(&READINESS_FIELDS);

/// The fields of an `external` provider's `ci`.
pub const CI_FIELDS: [Field; 2] = [
    Field::new(
        "issuer",
        "Who signs the results (required): the `predicate.issuer` a signed result must name.",
    ),
    Field::new(
        "publicKey",
        "The Ed25519 public key (PEM) the results' signatures must verify against (required).",
    ),
];

/// The keys of an `external` provider's `ci`.
pub const CI_KEYS: [&str; 2] = keys(&CI_FIELDS);

/// Decodes a whole `execution.yaml` document.
pub fn decode(sink: &mut Sink, root: &Node) -> Option<Execution> {
    let top = fields(sink, root, "execution.yaml", &TOP_KEYS)?;
    match top.get("version") {
        None => missing(sink, top.pos, "execution.yaml", "version", "1"),
        Some(v) => {
            check_version(sink, v, "execution.yaml", &[1]);
        }
    }
    let providers = match top.get("providers") {
        Some(node) => decode_providers(sink, node, "execution.yaml `providers`"),
        None => {
            missing(sink, top.pos, "execution.yaml", "providers", "{}");
            BTreeMap::new()
        }
    };
    let services = top
        .get("services")
        .map(|node| decode_services(sink, node))
        .unwrap_or_default();
    Some(Execution {
        providers,
        services,
    })
}

/// Checks a `version` field against the versions proofgraph reads.
pub fn check_version(sink: &mut Sink, node: &Node, file: &str, supported: &[u64]) -> Option<u64> {
    let listed = supported
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" or ");
    let found = match &node.value {
        Value::Number(n) => crate::syntax::node::number_as_u64(n),
        _ => None,
    };
    match found {
        Some(v) if supported.contains(&v) => Some(v),
        _ => {
            let shown = match &node.value {
                Value::Number(n) | Value::String(n) => format!("`{n}`"),
                other => other.type_name().to_owned(),
            };
            sink.error(
                Code::UnsupportedVersion,
                node.pos,
                format!("{file} has version {shown}; proofgraph reads version {listed}"),
                format!(
                    "Set `version: {}` (a number).",
                    supported.last().copied().unwrap_or(1)
                ),
            );
            None
        }
    }
}

/// Decodes a `providers` mapping (from `execution.yaml` or `evidence.yaml`).
pub fn decode_providers(
    sink: &mut Sink,
    node: &Node,
    what: &str,
) -> BTreeMap<ProviderId, Provider> {
    let Some(entries) = node.as_map() else {
        sink.wrong_type(node, what, "a mapping of provider names to providers");
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for (key, value) in entries {
        let Some(id) = ident_str(sink, &key.name, key.pos, ProviderId::parse) else {
            continue;
        };
        if let Some(provider) = decode_provider(sink, id, value) {
            out.insert(provider.id.value.clone(), provider);
        }
    }
    out
}

fn decode_provider(sink: &mut Sink, id: Spanned<ProviderId>, node: &Node) -> Option<Provider> {
    let what = format!("provider `{}`", id.value);
    let f = fields(sink, node, &what, &PROVIDER_KEYS)?;
    let field = |name: &str| format!("`{name}` of {what}");

    let adapter_choices: Vec<(&str, Adapter)> =
        Adapter::ALL.iter().map(|a| (a.as_str(), *a)).collect();
    let adapter = match f.get("adapter") {
        Some(n) => one_of(
            sink,
            n,
            &field("adapter"),
            Code::UnknownAdapter,
            &adapter_choices,
        ),
        None => {
            missing(sink, f.pos, &what, "adapter", "command");
            None
        }
    };

    let declared_capability = f
        .get("capability")
        .and_then(|n| capability(sink, n, &field("capability")));
    if f.get("capability").is_none() && CapabilityName::parse(id.value.as_str()).is_err() {
        sink.error(
            Code::MissingField,
            id.pos,
            format!("{what} needs `capability`: its name is not a capability name"),
            format!("Add `capability: <name>` to {what}, for example `capability: test`."),
        );
    } else if f.get("capability").is_none()
        && let Ok(name) = CapabilityName::parse(id.value.as_str())
        && !name.is_known()
    {
        sink.warning(
            Code::UnknownCapability,
            id.pos,
            format!("{what} proves its own name `{name}`, which is not one of the 21 known capabilities"),
            "If this is a custom capability, keep it; otherwise rename the provider or set `capability`.".to_owned(),
        );
    }

    let command = f
        .get("command")
        .and_then(|n| argv(sink, n, &field("command")));
    let report = f
        .get("report")
        .and_then(|n| nonempty_string(sink, n, &field("report")));
    let report_format = f.get("reportFormat").and_then(|n| {
        one_of(
            sink,
            n,
            &field("reportFormat"),
            Code::UnknownReportFormat,
            &ReportFormat::NAMES,
        )
    });
    let minimum = f
        .get("minimum")
        .and_then(|n| decode::uint(sink, n, &field("minimum"), true));
    let discovery_provider = f
        .get("discoveryProvider")
        .and_then(|n| ident(sink, n, &field("discoveryProvider"), ProviderId::parse));
    let timeout_ms = f
        .get("timeoutMs")
        .and_then(|n| positive(sink, n, &field("timeoutMs")));
    let repository = f
        .get("repository")
        .and_then(|n| ident(sink, n, &field("repository"), RepoId::parse));
    let repositories = f.get("repositories").and_then(|n| {
        list(sink, n, &field("repositories"), |s, item, i| {
            ident(
                s,
                item,
                &format!("`repositories[{i}]` of {what}"),
                RepoId::parse,
            )
        })
    });
    let inputs = f
        .get("inputs")
        .and_then(|n| decode::string_list(sink, n, &field("inputs")));
    for input in inputs.iter().flatten() {
        input_sign(sink, input, &what);
    }
    let resources = f.get("resources").and_then(|n| {
        list(sink, n, &field("resources"), |s, item, i| {
            ident(
                s,
                item,
                &format!("`resources[{i}]` of {what}"),
                ResourceName::parse,
            )
        })
    });
    let depends_on = f.get("dependsOn").and_then(|n| {
        list(sink, n, &field("dependsOn"), |s, item, i| {
            ident(
                s,
                item,
                &format!("`dependsOn[{i}]` of {what}"),
                ProviderId::parse,
            )
        })
    });
    let env = f.get("env").and_then(|n| env_map(sink, n, &field("env")));
    let env_from = f
        .get("envFrom")
        .and_then(|n| env_names(sink, n, &field("envFrom")));
    let services = f
        .get("service")
        .and_then(|n| one_or_many(sink, n, &field("service"), ServiceId::parse));
    let project = f
        .get("project")
        .and_then(|n| nonempty_string(sink, n, &field("project")));
    let outputs = f.get("outputs").and_then(|n| {
        list(sink, n, &field("outputs"), |s, item, i| {
            capability(s, item, &format!("`outputs[{i}]` of {what}"))
        })
    });
    let input_mode = f.get("inputMode").and_then(|n| {
        one_of(
            sink,
            n,
            &field("inputMode"),
            Code::InvalidValue,
            &InputMode::NAMES,
        )
    });
    let claims = f.get("claims").map_or(ClaimScope::Declared, |n| {
        claim_scope(sink, n, &field("claims"))
    });
    let contract = f
        .get("contract")
        .and_then(|n| contract(sink, n, &field("contract")));
    let ci = f.get("ci").and_then(|n| ci(sink, n, &field("ci")));
    let network = f.get("network").and_then(|n| {
        one_of(
            sink,
            n,
            &field("network"),
            Code::InvalidValue,
            &Network::NAMES,
        )
    });
    let critical_cases = f
        .get("criticalCases")
        .and_then(|n| decode::string_list(sink, n, &field("criticalCases")));
    let artifacts = f
        .get("artifacts")
        .and_then(|n| decode::string_list(sink, n, &field("artifacts")));

    let adapter = adapter?;
    check_adapter_fields(sink, &what, adapter.value, &f);
    if adapter.value.runs_command() && command.is_none() && f.get("command").is_none() {
        missing(sink, f.pos, &what, "command", "[npm, test]");
    }
    if adapter.value == Adapter::ContractDigest && f.get("contract").is_none() {
        missing(
            sink,
            f.pos,
            &what,
            "contract",
            "{api: contracts/api.json, web: src/contracts/api.json}",
        );
    }
    if adapter.value == Adapter::External && f.get("ci").is_none() {
        sink.warning(
            Code::ExternalWithoutKey,
            f.pos,
            format!("{what} is external but has no `ci.publicKey`, so no signed result can ever satisfy it"),
            format!("Add `ci: {{issuer: <who signs>, publicKey: <Ed25519 PEM>}}` to {what}."),
        );
    }

    Some(Provider {
        id,
        adapter,
        capability: declared_capability,
        command,
        report,
        report_format,
        minimum,
        discovery_provider,
        timeout_ms,
        repository,
        repositories,
        inputs,
        resources,
        depends_on,
        env,
        env_from,
        services,
        project,
        outputs,
        input_mode,
        claims,
        contract,
        ci,
        network,
        critical_cases,
        artifacts,
    })
}

/// An `inputs` entry's `!` where it means something: `!` alone excludes nothing, and a
/// scoped exclude puts the `!` first (`!api:docs/**`), so `api:!docs` is refused rather
/// than read as the file `!docs`.
fn input_sign(sink: &mut Sink, input: &Spanned<String>, what: &str) {
    let (sign, entry) = proofgraph_graph::pattern::split_sign(&input.value);
    let text = &input.value;
    let bare = entry.trim_start_matches("./").trim_end_matches('/');
    if sign == proofgraph_graph::pattern::Sign::Exclude && bare.is_empty() {
        sink.error(
            Code::InvalidValue,
            input.pos,
            format!("input `{text}` of {what} is a `!` with no pattern: it excludes nothing"),
            "Write the pattern to exclude after the `!` (`!docs/**`), or remove the entry.",
        );
        return;
    }
    if let (Some(repo), path) = proofgraph_graph::preflight::split_scoped(entry)
        && let Some(rest) = path.strip_prefix('!')
    {
        sink.error(
            Code::InvalidValue,
            input.pos,
            format!("input `{text}` of {what} puts the `!` after the repository"),
            format!(
                "Write `!{repo}:{rest}` to exclude `{rest}` of `{repo}` (or `{repo}:\\!{rest}` for a file named `!{rest}`)."
            ),
        );
    }
}

/// Warns about fields that the provider's adapter does not read, and
/// refuses critical cases nothing can observe.
fn check_adapter_fields(sink: &mut Sink, what: &str, adapter: Adapter, f: &Fields<'_>) {
    if let Some((k, _)) = f.entries().iter().find(|(k, _)| k.name == "criticalCases") {
        let has_report = f.entries().iter().any(|(k, _)| k.name == "report");
        let observable = match adapter {
            Adapter::TestDiscovery | Adapter::Playwright => true,
            Adapter::Command => has_report,
            Adapter::ContractDigest | Adapter::External => false,
        };
        if !observable {
            sink.error(
                Code::CriticalCasesUnobservable,
                k.pos,
                format!("{what} declares `criticalCases`, but its `{adapter}` adapter produces no structured report to observe them in"),
                "Use a `test-discovery` or `playwright` provider (or a `command` with a `report`) for critical cases, or remove them.",
            );
        }
    }
    let readers: [(&str, &[Adapter]); 10] = [
        (
            "command",
            &[
                Adapter::Command,
                Adapter::TestDiscovery,
                Adapter::Playwright,
            ],
        ),
        (
            "report",
            &[
                Adapter::Command,
                Adapter::TestDiscovery,
                Adapter::Playwright,
            ],
        ),
        (
            "reportFormat",
            &[
                Adapter::Command,
                Adapter::TestDiscovery,
                Adapter::Playwright,
            ],
        ),
        ("minimum", &[Adapter::TestDiscovery]),
        ("discoveryProvider", &[Adapter::TestDiscovery]),
        ("project", &[Adapter::Playwright]),
        ("outputs", &[Adapter::Playwright]),
        ("inputMode", &[Adapter::Playwright]),
        ("contract", &[Adapter::ContractDigest]),
        ("ci", &[Adapter::External]),
    ];
    for (key, adapters) in readers {
        let Some((k, _)) = f.entries().iter().find(|(k, _)| k.name == key) else {
            continue;
        };
        if adapters.contains(&adapter) {
            continue;
        }
        let names = adapters
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", ");
        sink.warning(
            Code::AdapterFieldIgnored,
            k.pos,
            format!("`{key}` of {what} is ignored: only {names} read it, and this provider uses `{adapter}`"),
            format!("Remove `{key}`, or change the adapter."),
        );
    }
}

fn capability(sink: &mut Sink, node: &Node, what: &str) -> Option<Spanned<CapabilityName>> {
    let c = ident(sink, node, what, CapabilityName::parse)?;
    if !c.value.is_known() {
        sink.warning(
            Code::UnknownCapability,
            c.pos,
            format!(
                "{what} is `{}`, which is not one of the 21 known capabilities",
                c.value
            ),
            "If this is a custom capability, keep it; otherwise use a known name such as `test`."
                .to_owned(),
        );
    }
    Some(c)
}

fn positive(sink: &mut Sink, node: &Node, what: &str) -> Option<Spanned<u64>> {
    let n = decode::uint(sink, node, what, true)?;
    if n.value == 0 {
        sink.error(
            Code::InvalidValue,
            n.pos,
            format!("{what} must be positive"),
            format!("Set {what} to a number of milliseconds greater than 0."),
        );
        return None;
    }
    Some(n)
}

/// Reads an argv: a non-empty list of non-empty strings. A shell string gets
/// its own code, because it is the commonest mistake.
pub fn argv(sink: &mut Sink, node: &Node, what: &str) -> Option<Spanned<Vec<String>>> {
    if let Value::String(s) = &node.value {
        let suggestion = s
            .split_whitespace()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(", ");
        sink.error(
            Code::CommandNotArgv,
            node.pos,
            format!("{what} is a shell string; proofgraph runs an argv list, never a shell"),
            format!("Write it as a list: [{suggestion}]."),
        );
        return None;
    }
    let Value::Seq(nodes) = &node.value else {
        sink.wrong_type(node, what, "a list");
        return None;
    };
    if nodes.is_empty() {
        sink.error(
            Code::InvalidValue,
            node.pos,
            format!("{what} is an empty list"),
            format!("Give {what} at least the program to run, for example [npm, test]."),
        );
        return None;
    }
    // One finding per element that is not a string; an element YAML read
    // as a boolean or a number (`[true]`, `[sleep, 1]`) says so.
    let mut items = Vec::with_capacity(nodes.len());
    for (i, item) in nodes.iter().enumerate() {
        let at = format!("{what}[{i}]");
        let scalar = match &item.value {
            Value::Bool(b) => Some(("boolean", b.to_string())),
            Value::Number(n) => Some(("number", n.clone())),
            _ => None,
        };
        match scalar {
            Some((kind, text)) => sink.error(
                Code::WrongType,
                item.pos,
                format!("{at} is the {kind} `{text}`, not a string: an argv holds strings, and YAML reads an unquoted `{text}` as a {kind}"),
                format!("Quote it: \"{text}\"."),
            ),
            None => items.extend(decode::nonempty_string(sink, item, &at)),
        }
    }
    (items.len() == nodes.len())
        .then(|| Spanned::new(items.into_iter().map(|s| s.value).collect(), node.pos))
}

fn env_map(sink: &mut Sink, node: &Node, what: &str) -> Option<BTreeMap<EnvName, Spanned<String>>> {
    let Some(entries) = node.as_map() else {
        sink.wrong_type(node, what, "a mapping of names to values");
        return None;
    };
    let mut out = BTreeMap::new();
    for (key, value) in entries {
        let Some(name) = ident_str(sink, &key.name, key.pos, EnvName::parse) else {
            continue;
        };
        if let Some(v) = scalar_text(sink, value, &format!("`{}` in {what}", key.name)) {
            out.insert(name.value, v);
        }
    }
    Some(out)
}

fn env_names(sink: &mut Sink, node: &Node, what: &str) -> Option<Vec<Spanned<EnvName>>> {
    list(sink, node, what, |s, item, i| {
        ident(s, item, &format!("{what}[{i}]"), EnvName::parse)
    })
}

/// Reads a string or a list of strings as a list of identities.
fn one_or_many<T>(
    sink: &mut Sink,
    node: &Node,
    what: &str,
    parse: impl Fn(&str) -> Result<T, proofgraph_graph::IdError> + Copy,
) -> Option<Vec<Spanned<T>>> {
    match &node.value {
        Value::String(_) => ident(sink, node, what, parse).map(|one| vec![one]),
        Value::Seq(_) => list(sink, node, what, |s, item, i| {
            ident(s, item, &format!("{what}[{i}]"), parse)
        }),
        _ => {
            sink.wrong_type(node, what, "a name or a list of names");
            None
        }
    }
}

fn claim_scope(sink: &mut Sink, node: &Node, what: &str) -> ClaimScope {
    match &node.value {
        Value::String(s) if s == "declared" => ClaimScope::Declared,
        Value::String(s) => {
            sink.error(
                Code::InvalidValue,
                node.pos,
                format!(
                    "{what} is the string `{s}`; only `declared` or a list of claim ids is accepted"
                ),
                format!("Write {what} as `declared` or as a list such as [{s}]."),
            );
            ClaimScope::Declared
        }
        Value::Seq(_) => ClaimScope::Listed(
            list(sink, node, what, |s, item, i| {
                ident(s, item, &format!("{what}[{i}]"), ClaimId::parse)
            })
            .unwrap_or_default(),
        ),
        _ => {
            sink.wrong_type(node, what, "`declared` or a list of claim ids");
            ClaimScope::Declared
        }
    }
}

fn contract(sink: &mut Sink, node: &Node, what: &str) -> Option<BTreeMap<RepoId, Spanned<String>>> {
    let Some(entries) = node.as_map() else {
        sink.wrong_type(node, what, "a mapping of repository ids to file paths");
        return None;
    };
    let mut out = BTreeMap::new();
    for (key, value) in entries {
        let Some(repo) = ident_str(sink, &key.name, key.pos, RepoId::parse) else {
            continue;
        };
        if let Some(path) =
            nonempty_string(sink, value, &format!("the `{}` path of {what}", key.name))
        {
            out.insert(repo.value, path);
        }
    }
    Some(out)
}

fn ci(sink: &mut Sink, node: &Node, what: &str) -> Option<CiVerification> {
    let f = fields(sink, node, what, &CI_KEYS)?;
    let issuer = match f.get("issuer") {
        Some(n) => nonempty_string(sink, n, &format!("`issuer` of {what}")),
        None => {
            missing(sink, f.pos, what, "issuer", "github-actions");
            None
        }
    };
    let public_key = match f.get("publicKey") {
        Some(n) => nonempty_string(sink, n, &format!("`publicKey` of {what}")),
        None => {
            missing(
                sink,
                f.pos,
                what,
                "publicKey",
                "\"-----BEGIN PUBLIC KEY-----\\n...\"",
            );
            None
        }
    };
    let public_key = public_key?;
    if let Err(e) = crate::attest::keys::public_key_from_pem(&public_key.value) {
        sink.error(
            Code::CiKeyInvalid,
            public_key.pos,
            format!("`publicKey` of {what} is not a usable Ed25519 public key: failed to {e}"),
            "Paste the CI's Ed25519 public key as SPKI PEM (`openssl pkey -in key.pem -pubout`), in a YAML block scalar (`publicKey: |`).",
        );
    }
    Some(CiVerification {
        issuer: issuer?,
        public_key,
    })
}

fn decode_services(sink: &mut Sink, node: &Node) -> BTreeMap<ServiceId, Service> {
    let Some(entries) = node.as_map() else {
        sink.wrong_type(
            node,
            "execution.yaml `services`",
            "a mapping of service names to services",
        );
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for (key, value) in entries {
        let Some(id) = ident_str(sink, &key.name, key.pos, ServiceId::parse) else {
            continue;
        };
        let what = format!("service `{}`", id.value);
        let Some(f) = fields(sink, value, &what, &SERVICE_KEYS) else {
            continue;
        };
        let field = |name: &str| format!("`{name}` of {what}");
        let command = match f.get("command") {
            Some(n) => argv(sink, n, &field("command")),
            None => {
                missing(sink, f.pos, &what, "command", "[npm, run, start]");
                None
            }
        };
        let repository = f
            .get("repository")
            .and_then(|n| ident(sink, n, &field("repository"), RepoId::parse));
        let readiness = match f.get("readiness") {
            Some(n) => readiness(sink, n, &field("readiness")),
            None => {
                missing(
                    sink,
                    f.pos,
                    &what,
                    "readiness",
                    "{url: http://127.0.0.1:4173/health, expectBody: ok}",
                );
                None
            }
        };
        let env = f.get("env").and_then(|n| env_map(sink, n, &field("env")));
        let env_from = f
            .get("envFrom")
            .and_then(|n| env_names(sink, n, &field("envFrom")));
        let network = f.get("network").and_then(|n| {
            one_of(
                sink,
                n,
                &field("network"),
                Code::InvalidValue,
                &Network::NAMES,
            )
        });
        out.insert(
            id.value.clone(),
            Service {
                id,
                command,
                repository,
                readiness,
                env,
                env_from,
                network,
            },
        );
    }
    out
}

fn readiness(sink: &mut Sink, node: &Node, what: &str) -> Option<Readiness> {
    let f = fields(sink, node, what, &READINESS_KEYS)?;
    let url = match f.get("url") {
        Some(n) => nonempty_string(sink, n, &format!("`url` of {what}")),
        None => {
            missing(sink, f.pos, what, "url", "http://127.0.0.1:4173/health");
            None
        }
    };
    let expect_header = f.get("expectHeader").and_then(|n| {
        let entries = match n.as_map() {
            Some(entries) => entries,
            None => {
                sink.wrong_type(
                    n,
                    &format!("`expectHeader` of {what}"),
                    "a mapping of header names to values",
                );
                return None;
            }
        };
        let mut out = BTreeMap::new();
        for (key, value) in entries {
            if let Some(v) = scalar_text(sink, value, &format!("header `{}` of {what}", key.name)) {
                out.insert(key.name.to_ascii_lowercase(), v);
            }
        }
        Some(out)
    });
    let expect_body = f
        .get("expectBody")
        .and_then(|n| nonempty_string(sink, n, &format!("`expectBody` of {what}")));
    let timeout_ms = f
        .get("timeoutMs")
        .and_then(|n| positive(sink, n, &format!("`timeoutMs` of {what}")));
    Some(Readiness {
        pos: f.pos,
        // Parsed once, here; preflight reports a URL the probe cannot use where it was
        // written.
        url: url.map(|u| Spanned::new(ReadinessUrl::parse(u.value), u.pos)),
        expect_header,
        expect_body,
        timeout_ms,
    })
}
