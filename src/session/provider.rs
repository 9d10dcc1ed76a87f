//! A provider a user names on the command line, found in a change's sealed graph — or
//! refused with the providers the change has.

use proofgraph_graph::{NodeId, ProviderId, SealedGraph};

use crate::base::diagnostic::{Code, Diagnostic};

/// Provider `provider` of change `change` (as the user spelled both) in `graph`: its id
/// and node, or `unknown_provider` naming every provider the change has.
pub fn find(
    graph: &SealedGraph,
    change: &str,
    provider: &str,
) -> Result<(ProviderId, NodeId), Diagnostic> {
    ProviderId::parse(provider)
        .ok()
        .and_then(|id| graph.provider(&id).map(|n| (id, n)))
        .ok_or_else(|| {
            let known: Vec<String> = graph.providers().map(|(id, _, _)| id.to_string()).collect();
            Diagnostic::error(
                Code::UnknownProvider,
                format!("change `{change}` has no provider `{provider}`"),
            )
            .surface("provider")
            .fix(format!("Use one of: {}.", known.join(", ")))
        })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proofgraph_graph::model::Provider;
    use proofgraph_graph::span::{Pos, Spanned};
    use proofgraph_graph::{Adapter, CapabilityName, GraphBuilder, RepoId, Repositories};

    use super::*;

    fn graph() -> SealedGraph {
        let mut b = GraphBuilder::new(Repositories {
            ids: [RepoId::root()].into(),
        });
        for id in ["unit", "lint"] {
            let mut p = Provider::new(ProviderId::parse(id).expect("an id"), Adapter::Command);
            p.capability = Some(Spanned::new(
                CapabilityName::parse("integration").expect("a capability"),
                Pos::default(),
            ));
            p.command = Some(Spanned::new(vec![id.to_owned()], Pos::default()));
            b.provider(p, Arc::from("execution.yaml"));
        }
        b.seal().expect("seal")
    }

    #[test]
    fn a_provider_is_found_or_refused_with_those_the_change_has() {
        let graph = graph();
        let (id, node) = find(&graph, "c", "unit").expect("found");
        assert_eq!(id.as_str(), "unit");
        assert_eq!(graph.provider(&id), Some(node));
        for wrong in ["nope", "Not An Id"] {
            let d = find(&graph, "c", wrong).expect_err("refused");
            assert_eq!(d.code, Code::UnknownProvider);
            assert_eq!(d.message, format!("change `c` has no provider `{wrong}`"));
            assert_eq!(d.fix.as_deref(), Some("Use one of: lint, unit."));
        }
    }
}
