//! `proofgraph graph <change> --format dot|mermaid|json`: the DAG as a
//! picture. Providers, services and probes, edges labelled with why one comes
//! before the other, and each node's resource locks.

use std::fmt::Write as _;

use proofgraph_graph::{EdgeKind, NodeKind, NodeRole, SealedGraph};
use serde::Serialize;

use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::session::context::{Context, RootOutput};

/// The picture formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Graphviz DOT.
    Dot,
    /// Mermaid flowchart.
    Mermaid,
    /// Nodes and edges as JSON.
    Json,
}

impl Format {
    /// The format's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Dot => "dot",
            Format::Mermaid => "mermaid",
            Format::Json => "json",
        }
    }
}

/// A node of the picture.
#[derive(Debug, Clone, Serialize)]
pub struct GraphNode {
    /// Its name.
    pub id: String,
    /// `provider`, `service` or `probe`.
    pub kind: NodeRole,
    /// A one-line description (adapter and capability; command; URL).
    pub detail: String,
    /// The resources it holds while it runs.
    pub resources: Vec<String>,
}

/// An edge of the picture.
#[derive(Debug, Clone, Serialize)]
pub struct GraphEdge {
    /// The node that comes first.
    pub from: String,
    /// The node that comes after.
    pub to: String,
    /// Why: `dependsOn`, `discovery`, `starts` or `ready`.
    pub kind: EdgeKind,
}

/// The payload of `graph`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GraphPayload {
    /// The change.
    pub change: Option<String>,
    /// The format of `text`.
    pub format: Option<&'static str>,
    /// The nodes.
    pub nodes: Vec<GraphNode>,
    /// The edges.
    pub edges: Vec<GraphEdge>,
    /// The rendered picture (DOT or Mermaid text; null for JSON).
    pub text: Option<String>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

impl Payload for GraphPayload {
    fn human(&self, out: &mut String) {
        match &self.text {
            Some(text) => out.push_str(text),
            None => {
                if let Ok(json) = serde_json::to_string_pretty(
                    &serde_json::json!({"nodes": self.nodes, "edges": self.edges}),
                ) {
                    out.push_str(&json);
                    out.push('\n');
                }
            }
        }
    }
}

/// Runs `graph`.
pub fn run(ctx: &Context, change: &str, format: Format) -> Report<GraphPayload> {
    let loaded = match crate::session::load::load(ctx, change) {
        Ok(l) => l,
        Err(all) => return Report::failed(all, Verdict::Invalid),
    };
    let graph = &loaded.prepared.graph;
    let (nodes, edges) = picture(graph);
    let name = loaded.change.name.to_string();
    let text = match format {
        Format::Dot => Some(dot(&name, &nodes, &edges)),
        Format::Mermaid => Some(mermaid(&nodes, &edges)),
        Format::Json => None,
    };
    let mut status = loaded.notes;
    status.extend(loaded.prepared.warnings);
    Report {
        payload: Some(GraphPayload {
            change: Some(name),
            format: Some(format.as_str()),
            nodes,
            edges,
            text,
            root: Some(loaded.root),
        }),
        status,
        verdict: Verdict::Success,
    }
}

fn picture(graph: &SealedGraph) -> (Vec<GraphNode>, Vec<GraphEdge>) {
    let nodes = graph
        .order()
        .iter()
        .map(|id| {
            let node = graph.node(*id);
            let detail = match &node.kind {
                NodeKind::Provider(p) => match &p.spec.command {
                    Some(c) => format!(
                        "{} · {} · {}",
                        p.spec.adapter.value,
                        p.capability,
                        c.value.join(" ")
                    ),
                    None => format!("{} · {}", p.spec.adapter.value, p.capability),
                },
                NodeKind::Service(s) => s
                    .spec
                    .command
                    .as_ref()
                    .map(|c| c.value.join(" "))
                    .unwrap_or_default(),
                NodeKind::Probe(probe) => graph
                    .service(&probe.service)
                    .and_then(|s| graph.node(s).service())
                    .and_then(|s| s.spec.readiness.as_ref())
                    .and_then(|r| r.url.as_ref())
                    .map(|u| u.value.as_str().to_owned())
                    .unwrap_or_default(),
            };
            GraphNode {
                id: node.name.clone(),
                kind: node.kind.role(),
                detail,
                resources: node.resources().iter().map(ToString::to_string).collect(),
            }
        })
        .collect();
    let edges = graph
        .edges()
        .into_iter()
        .map(|(from, to, kind)| GraphEdge {
            from: graph.node(from).name.clone(),
            to: graph.node(to).name.clone(),
            kind,
        })
        .collect();
    (nodes, edges)
}

fn dot_escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Graphviz DOT: providers are boxes, services ellipses, probes diamonds;
/// each label ends with the node's locks.
pub fn dot(change: &str, nodes: &[GraphNode], edges: &[GraphEdge]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"{}\" {{", dot_escape(change));
    let _ = writeln!(out, "  rankdir=LR;");
    let _ = writeln!(out, "  node [fontname=\"Helvetica\", fontsize=10];");
    let _ = writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=9];");
    for n in nodes {
        let shape = match n.kind {
            NodeRole::Service => "ellipse",
            NodeRole::Probe => "diamond",
            NodeRole::Provider => "box",
        };
        let mut label = format!("{}\\n{}", dot_escape(&n.id), dot_escape(&n.detail));
        if !n.resources.is_empty() {
            let _ = write!(label, "\\nlocks: {}", dot_escape(&n.resources.join(", ")));
        }
        let _ = writeln!(
            out,
            "  \"{}\" [shape={shape}, label=\"{label}\"];",
            dot_escape(&n.id)
        );
    }
    for e in edges {
        let style = if e.kind == EdgeKind::DependsOn {
            "solid"
        } else {
            "dashed"
        };
        let _ = writeln!(
            out,
            "  \"{}\" -> \"{}\" [label=\"{}\", style={style}];",
            dot_escape(&e.from),
            dot_escape(&e.to),
            e.kind.as_str()
        );
    }
    out.push_str("}\n");
    out
}

fn mermaid_escape(text: &str) -> String {
    text.replace('"', "#quot;")
        .replace('<', "#lt;")
        .replace('>', "#gt;")
}

/// A Mermaid flowchart with the same shapes and labels as [`dot`].
pub fn mermaid(nodes: &[GraphNode], edges: &[GraphEdge]) -> String {
    let mut out = String::from("flowchart LR\n");
    let ids: std::collections::BTreeMap<&str, String> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), format!("n{i}")))
        .collect();
    for n in nodes {
        let mut label = format!(
            "{}<br/>{}",
            mermaid_escape(&n.id),
            mermaid_escape(&n.detail)
        );
        if !n.resources.is_empty() {
            let _ = write!(
                label,
                "<br/>locks: {}",
                mermaid_escape(&n.resources.join(", "))
            );
        }
        let (open, close) = match n.kind {
            NodeRole::Service => ("([", "])"),
            NodeRole::Probe => ("{{", "}}"),
            NodeRole::Provider => ("[", "]"),
        };
        let _ = writeln!(out, "  {}{open}\"{label}\"{close}", ids[n.id.as_str()]);
    }
    for e in edges {
        let arrow = if e.kind == EdgeKind::DependsOn {
            "-->"
        } else {
            "-.->"
        };
        let _ = writeln!(
            out,
            "  {} {arrow}|{}| {}",
            ids[e.from.as_str()],
            e.kind.as_str(),
            ids[e.to.as_str()]
        );
    }
    out
}
