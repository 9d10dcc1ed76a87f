//! `evidence.yaml`: the claims a change must prove and the capabilities each
//! needs. Version 2 is current; version 1 is still read. A version-2 file may
//! embed `providers` (read as wiring, with a warning suggesting the split).

use std::collections::BTreeMap;

use proofgraph_graph::{CapabilityName, ClaimId, ProviderId, RepoId};

use super::decode::{Field, Sink, fields, ident, keys, list, missing, nonempty_string, one_of};
use proofgraph_graph::model::{Claim, Impact, Provider};

use super::execution::{check_version, decode_providers};
use crate::base::diagnostic::Code;
use crate::syntax::node::{Node, Pos};

/// A decoded `evidence.yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// The file's version (1 or 2).
    pub version: Option<u64>,
    /// The claims, in file order.
    pub claims: Vec<Claim>,
    /// Providers embedded in a version-2 file, if any.
    pub providers: Option<BTreeMap<ProviderId, Provider>>,
}

/// The document's fields (docs/reference/evidence.md is generated from them).
pub const TOP_FIELDS: [Field; 3] = [
    Field::new(
        "version",
        "The format's version (required): `2`, the current one, or `1`, still read the same way; anything else is `unsupported_version`.",
    ),
    Field::new(
        "claims",
        "The claims the change must prove, in order (required); an empty list is `no_claims`, nothing to prove.",
    ),
    Field::new(
        "providers",
        "Wiring embedded in `evidence.yaml`, as Change Loop's version 2 allowed: read as if it were in `execution.yaml` (which wins on a name clash, `provider_shadowed`), with an `embedded_providers` warning; its format is `execution.yaml`'s `providers` (docs/reference/execution.md).",
    ),
];
/// The keys of the document.
pub const TOP_KEYS: [&str; 3] = keys(&TOP_FIELDS);
/// A claim's fields.
pub const CLAIM_FIELDS: [Field; 5] = [
    Field::new(
        "id",
        "A stable name, unique in the file (required): a letter or digit, then letters, digits, `.`, `_` and `-` (`profile-update`, `R1.2`). A provider's `claims` and every receipt name the claim by it.",
    ),
    Field::new(
        "scenario",
        "What holds when the claim is true, in a sentence a reviewer can check against the tests (required, not empty).",
    ),
    Field::new(
        "impact",
        "How much breaking the claim would cost; `show` prints it, and every claim is proven the same way whatever its impact.",
    ),
    Field::new(
        "capabilities",
        "The capabilities that must each have a passing, current receipt for the claim to be proven (required, at least one; `test` implies `discovery`). A name outside docs/evidence.md#capabilities is `unknown_capability` and needs a provider whose `capability` is that name.",
    ),
    Field::new(
        "repositories",
        "Repository ids of `proofgraph.yaml`: only providers of those repositories count for the claim, and each needs its own provider of every capability (default: any provider of the capability counts).",
    ),
];
/// The keys of a claim.
pub const CLAIM_KEYS: [&str; 5] = keys(&CLAIM_FIELDS);

/// Decodes a whole `evidence.yaml` document.
pub fn decode(sink: &mut Sink, root: &Node) -> Option<Evidence> {
    let top = fields(sink, root, "evidence.yaml", &TOP_KEYS)?;
    let version = match top.get("version") {
        None => {
            missing(sink, top.pos, "evidence.yaml", "version", "2");
            None
        }
        Some(v) => check_version(sink, v, "evidence.yaml", &[1, 2]),
    };
    let claims = match top.get("claims") {
        None => {
            missing(
                sink,
                top.pos,
                "evidence.yaml",
                "claims",
                "[{id: ..., scenario: ..., capabilities: [test]}]",
            );
            Vec::new()
        }
        Some(node) => decode_claims(sink, node),
    };
    let providers = top.get("providers").map(|node| {
        let (key_pos, count) = embedded_position(root, node);
        if count > 0 {
            sink.warning(
                Code::EmbeddedProviders,
                key_pos,
                "evidence.yaml embeds providers; they are read as wiring, but wiring belongs in execution.yaml"
                    .to_owned(),
                "Move `providers` into execution.yaml (`version: 1`), keeping evidence.yaml for claims.",
            );
        }
        decode_providers(sink, node, "evidence.yaml `providers`")
    });
    Some(Evidence {
        version,
        claims,
        providers,
    })
}

/// Where `providers` is declared and how many it holds.
fn embedded_position(root: &Node, node: &Node) -> (Pos, usize) {
    let key_pos = root
        .as_map()
        .and_then(|entries| entries.iter().find(|(k, _)| k.name == "providers"))
        .map_or(node.pos, |(k, _)| k.pos);
    (key_pos, node.as_map().map_or(0, <[_]>::len))
}

fn decode_claims(sink: &mut Sink, node: &Node) -> Vec<Claim> {
    let Some(claims) = list(sink, node, "evidence.yaml `claims`", decode_claim) else {
        return Vec::new();
    };
    if claims.is_empty() && node.value == crate::syntax::node::Value::Seq(Vec::new()) {
        sink.error(
            Code::NoClaims,
            node.pos,
            "evidence.yaml declares no claims, so the change has nothing to prove".to_owned(),
            "Add at least one claim with an id, a scenario and the capabilities that vouch for it.",
        );
    }
    let mut seen: BTreeMap<&ClaimId, Pos> = BTreeMap::new();
    for claim in &claims {
        if let Some(first) = seen.insert(&claim.id.value, claim.id.pos) {
            sink.error(
                Code::DuplicateId,
                claim.id.pos,
                format!(
                    "claim id `{}` is declared twice (first at line {})",
                    claim.id.value, first.line
                ),
                "Give every claim a unique id.",
            );
        }
    }
    claims
}

fn decode_claim(sink: &mut Sink, node: &Node, index: usize) -> Option<Claim> {
    let what = match node.get("id").and_then(Node::as_str) {
        Some(id) => format!("claim `{id}`"),
        None => format!("claim #{}", index + 1),
    };
    let f = fields(sink, node, &what, &CLAIM_KEYS)?;
    let id = match f.get("id") {
        Some(n) => ident(sink, n, &format!("`id` of {what}"), ClaimId::parse),
        None => {
            missing(sink, f.pos, &what, "id", "profile-update");
            None
        }
    };
    let what = id
        .as_ref()
        .map_or(what, |id| format!("claim `{}`", id.value));
    let scenario = match f.get("scenario") {
        Some(n) => nonempty_string(sink, n, &format!("`scenario` of {what}")),
        None => {
            missing(
                sink,
                f.pos,
                &what,
                "scenario",
                "The owner can update their profile",
            );
            None
        }
    };
    let impact = f.get("impact").and_then(|n| {
        one_of(
            sink,
            n,
            &format!("`impact` of {what}"),
            Code::InvalidValue,
            &Impact::NAMES,
        )
    });
    let capabilities = match f.get("capabilities") {
        Some(n) => {
            let field = format!("`capabilities` of {what}");
            let caps = list(sink, n, &field, |s, item, i| {
                let c = ident(s, item, &format!("`capabilities[{i}]` of {what}"), CapabilityName::parse)?;
                if !c.value.is_known() {
                    s.warning(
                        Code::UnknownCapability,
                        c.pos,
                        format!("{what} requires `{}`, which is not one of the 21 known capabilities", c.value),
                        "If this is a custom capability, wire a provider with that `capability`; otherwise use a known name."
                            .to_owned(),
                    );
                }
                Some(c)
            })
            .unwrap_or_default();
            if caps.is_empty()
                && matches!(&n.value, crate::syntax::node::Value::Seq(items) if items.is_empty())
            {
                sink.error(
                    Code::InvalidValue,
                    n.pos,
                    format!(
                        "{field} is empty; a claim needs at least one capability to vouch for it"
                    ),
                    "List the capabilities that prove the claim, for example [test].",
                );
            }
            caps
        }
        None => {
            missing(sink, f.pos, &what, "capabilities", "[test]");
            Vec::new()
        }
    };
    let repositories = f.get("repositories").and_then(|n| {
        list(
            sink,
            n,
            &format!("`repositories` of {what}"),
            |s, item, i| {
                ident(
                    s,
                    item,
                    &format!("`repositories[{i}]` of {what}"),
                    RepoId::parse,
                )
            },
        )
    });
    Some(Claim {
        id: id?,
        scenario,
        impact,
        capabilities,
        repositories,
    })
}
