//! Fuzz target `config`: configuration text, as `evidence.yaml`, `execution.yaml` and
//! `proofgraph.yaml` are read, through the loader, the typed decoders and on to a sealed
//! graph.
//!
//! The input is up to three files joined by [`SEPARATOR`]: an `evidence.yaml`, an
//! `execution.yaml` and a `proofgraph.yaml`. Each is read with
//! [`proofgraph::load::config::load::parse_bytes`] and decoded as its kind; when the first two decode,
//! the change is wired and sealed as `validate` and `prove` do. Invariants:
//!
//! - every position (in the tree, in a diagnostic, in a finding) is 1-based and inside the
//!   text; every diagnostic names its file and has a fix;
//! - a tree has unique keys and nests at most [`MAX_DEPTH`] deep;
//! - every span lies inside the text, between characters, a key's before its value's and a
//!   flow collection's children inside it; in a JSON file each scalar's span reads back as
//!   that scalar and each key's as that key;
//! - the tree written back out as JSON, and as YAML flow text, reads back as the same tree
//!   (JSON and YAML mean the same thing, whichever syntax a file picks);
//! - a decoder that returns nothing has said why (an error);
//! - a sealed graph orders every node once, each after everything it depends on, and a run
//!   in which everything succeeds starts every provider and finishes (no deadlock).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::num::NonZeroUsize;
use std::path::PathBuf;

use proofgraph_graph::schedule::{Action, Scheduler, State, Step};
use proofgraph_graph::{ChangeName, RepoId, SealedGraph};

use proofgraph::base::diagnostic::Diagnostic;
use proofgraph::load::config::catalog::{self, Catalog};
use proofgraph::load::config::decode::Sink;
use proofgraph::load::config::evidence::{self, Evidence};
use proofgraph::load::config::execution::{self, Execution};
use proofgraph::load::config::load::parse_bytes;
use proofgraph::load::workspace::{Change, Repository, Wired, Workspace};
use proofgraph::syntax::node::{Node, Pos, Span, Value};
use proofgraph::syntax::parse::{MAX_DEPTH, Syntax};
use proofgraph::syntax::{json, yaml};

/// The line that separates the files of one input.
pub const SEPARATOR: &[u8] = b"\n#~~~ next file ~~~\n";

/// The names the files are shown under, in input order.
const FILES: [&str; 3] = ["evidence.yaml", "execution.yaml", "proofgraph.yaml"];

/// Runs one input; panics when an invariant does not hold.
pub fn run(data: &[u8]) {
    let parts = split(data);
    let mut evidence: Option<Evidence> = None;
    let mut execution: Option<Execution> = None;
    let mut catalog: Option<Catalog> = None;
    let mut bounds = Bounds::default();
    for (i, part) in parts.iter().enumerate().take(FILES.len()) {
        let file = FILES[i];
        let (root, syntax) = match parse_bytes(part, file) {
            Ok(doc) => (doc.root, doc.syntax),
            Err(diagnostic) => {
                let part_bounds = Bounds::of(&String::from_utf8_lossy(part));
                check_diagnostic(&diagnostic, file, &part_bounds);
                continue;
            }
        };
        let text = std::str::from_utf8(part).expect("a document that parsed is UTF-8");
        let part_bounds = Bounds::of(text);
        bounds = bounds.max(part_bounds);
        check_tree(&root, 0, &part_bounds);
        check_spans(&root, text, syntax);
        check_reparse(&root);
        // Every decoder on every file: each must cope with any tree.
        let mut sinks = [
            Sink::new(FILES[0]),
            Sink::new(FILES[1]),
            Sink::new(FILES[2]),
        ];
        let decoded_evidence = evidence::decode(&mut sinks[0], &root);
        let decoded_execution = execution::decode(&mut sinks[1], &root);
        let decoded_catalog = catalog::decode(&mut sinks[2], &root);
        let returned = [
            decoded_evidence.is_some(),
            decoded_execution.is_some(),
            decoded_catalog.is_some(),
        ];
        for ((sink, returned), name) in sinks.into_iter().zip(returned).zip(FILES) {
            let diagnostics = sink.into_diagnostics();
            assert!(
                returned || diagnostics.iter().any(Diagnostic::is_error),
                "decoding as {name} gave nothing and no error"
            );
            for d in &diagnostics {
                check_diagnostic(d, name, &part_bounds);
            }
        }
        match i {
            0 => evidence = decoded_evidence,
            1 => execution = decoded_execution,
            _ => catalog = decoded_catalog,
        }
    }
    if let (Some(evidence), Some(execution)) = (evidence, execution) {
        seal(evidence, execution, catalog, &bounds);
    }
}

/// The files of an input (at most [`FILES`]`.len()`; the last keeps any further separator).
fn split(data: &[u8]) -> Vec<&[u8]> {
    let mut parts = Vec::new();
    let mut rest = data;
    while parts.len() + 1 < FILES.len() {
        match rest.windows(SEPARATOR.len()).position(|w| w == SEPARATOR) {
            Some(at) => {
                parts.push(&rest[..at]);
                rest = &rest[at + SEPARATOR.len()..];
            }
            None => break,
        }
    }
    parts.push(rest);
    parts
}

/// The largest line and column a position in a text can have.
#[derive(Debug, Clone, Copy, Default)]
struct Bounds {
    lines: u32,
    columns: u32,
}

impl Bounds {
    fn of(text: &str) -> Self {
        // Any of `\n`, `\r` and the Unicode line separators may end a line for one parser
        // or another; a position just past the end (an error at end of input) is allowed.
        let breaks = text
            .chars()
            .filter(|c| matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}'))
            .count();
        let saturate = proofgraph::syntax::parse::saturate;
        Self {
            lines: saturate(breaks + 2),
            columns: saturate(text.chars().count() + 2),
        }
    }

    fn max(self, other: Self) -> Self {
        Self {
            lines: self.lines.max(other.lines),
            columns: self.columns.max(other.columns),
        }
    }

    fn check(&self, pos: Pos, what: &dyn std::fmt::Display) {
        assert!(
            (1..=self.lines).contains(&pos.line) && (1..=self.columns).contains(&pos.column),
            "{what} is at {pos}, outside the text ({} lines, {} columns at most)",
            self.lines,
            self.columns
        );
    }
}

fn check_diagnostic(d: &Diagnostic, file: &str, bounds: &Bounds) {
    let location = d
        .location()
        .unwrap_or_else(|| panic!("a diagnostic about {file} names no position: {d:?}"));
    assert_eq!(location.file, file, "{d:?}");
    bounds.check(location.pos, &format_args!("diagnostic {}", d.code));
    assert!(
        d.fix.as_deref().is_some_and(|f| !f.is_empty()),
        "a diagnostic without a fix: {d:?}"
    );
}

fn check_tree(node: &Node, depth: usize, bounds: &Bounds) {
    bounds.check(node.pos, &"a value");
    match &node.value {
        Value::Seq(items) => {
            assert!(depth < MAX_DEPTH, "a list nested {} deep", depth + 1);
            for item in items {
                check_tree(item, depth + 1, bounds);
            }
        }
        Value::Map(entries) => {
            assert!(depth < MAX_DEPTH, "a mapping nested {} deep", depth + 1);
            let mut names = BTreeSet::new();
            for (key, value) in entries {
                bounds.check(key.pos, &"a key");
                assert!(names.insert(&key.name), "key `{}` twice", key.name);
                check_tree(value, depth + 1, bounds);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

/// Every span of the tree lies inside `text`, between characters, in order; in JSON each
/// scalar's and key's span is exactly its text.
fn check_spans(node: &Node, text: &str, syntax: Syntax) {
    let inside = |span: Span, what: &str| {
        assert!(
            span.start <= span.end
                && span.end <= text.len()
                && text.is_char_boundary(span.start)
                && text.is_char_boundary(span.end),
            "{what} spans {span:?}, outside a text of {} bytes or inside a character",
            text.len()
        );
        &text[span.range()]
    };
    let covered = inside(node.span, "a value");
    let within = |child: Span, what: &str| {
        if node.flow {
            assert!(
                node.span.start <= child.start && child.end <= node.span.end,
                "{what} at {child:?} lies outside its flow collection at {:?}",
                node.span
            );
        }
    };
    match &node.value {
        Value::Seq(items) => {
            for item in items {
                within(item.span, "an item");
                check_spans(item, text, syntax);
            }
        }
        Value::Map(entries) => {
            for (key, value) in entries {
                let written = inside(key.span, "a key");
                within(key.span, "a key");
                within(value.span, "a value");
                assert!(
                    key.span.start <= value.span.start,
                    "key `{}` at {:?} after its value at {:?}",
                    key.name,
                    key.span,
                    value.span
                );
                if syntax == Syntax::Json {
                    let read = json::parse(&format!("[{written}]"));
                    let read = read.as_ref().ok().and_then(|n| match &n.value {
                        Value::Seq(items) => items.first().and_then(Node::as_str),
                        _ => None,
                    });
                    assert_eq!(read, Some(key.name.as_str()), "key span {written:?}");
                }
                check_spans(value, text, syntax);
            }
        }
        scalar => {
            if syntax == Syntax::Json {
                let read = json::parse(&format!("[{covered}]"))
                    .unwrap_or_else(|e| panic!("span {covered:?} does not read: {e:?}"));
                let Value::Seq(items) = read.value else {
                    panic!("a list")
                };
                assert_eq!(items.len(), 1, "span {covered:?}");
                assert_eq!(&items[0].value, scalar, "span {covered:?}");
            }
        }
    }
}

/// The tree written as JSON (when its numbers are JSON numbers) and as YAML flow text
/// reads back as the same tree.
fn check_reparse(root: &Node) {
    let mut text = String::new();
    if write_json(root, &mut text) {
        let again = json::parse(&text)
            .unwrap_or_else(|e| panic!("the tree written as JSON does not read: {e:?}\n{text}"));
        assert!(same(root, &again), "JSON re-read differs:\n{text}");
    }
    let mut text = String::new();
    write_yaml(root, &mut text);
    let again = yaml::parse(&text)
        .unwrap_or_else(|e| panic!("the tree written as YAML does not read: {e:?}\n{text}"));
    assert!(same(root, &again), "YAML re-read differs:\n{text}");
}

/// Whether two trees hold the same values (positions aside).
fn same(a: &Node, b: &Node) -> bool {
    match (&a.value, &b.value) {
        (Value::Seq(x), Value::Seq(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka.name == kb.name && same(va, vb))
        }
        (x, y) => x == y,
    }
}

/// Writes `node` as JSON; `false` when a number has no JSON spelling (`0x1F`, `.inf`).
fn write_json(node: &Node, out: &mut String) -> bool {
    match &node.value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if !is_json_number(n) {
                return false;
            }
            out.push_str(n);
        }
        Value::String(s) => out.push_str(&serde_json::Value::from(s.as_str()).to_string()),
        Value::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !write_json(item, out) {
                    return false;
                }
            }
            out.push(']');
        }
        Value::Map(entries) => {
            out.push('{');
            for (i, (key, value)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::Value::from(key.name.as_str()).to_string());
                out.push(':');
                if !write_json(value, out) {
                    return false;
                }
            }
            out.push('}');
        }
    }
    true
}

/// RFC 8259's number grammar.
fn is_json_number(text: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let text = text.strip_prefix('-').unwrap_or(text);
    let (text, exponent) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let (int, frac) = match text.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (text, None),
    };
    digits(int)
        && (int == "0" || !int.starts_with('0'))
        && frac.is_none_or(digits)
        && exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)))
}

/// Writes `node` as YAML flow text: every string double-quoted with only printable ASCII
/// left unescaped, numbers, booleans and null as plain scalars.
fn write_yaml(node: &Node, out: &mut String) {
    match &node.value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(n),
        Value::String(s) => yaml_string(s, out),
        Value::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_yaml(item, out);
            }
            out.push(']');
        }
        Value::Map(entries) => {
            out.push('{');
            for (i, (key, value)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                // An implicit key is at most 1024 characters; an explicit one has no limit.
                out.push_str("? ");
                yaml_string(&key.name, out);
                out.push_str(" : ");
                write_yaml(value, out);
            }
            out.push('}');
        }
    }
}

fn yaml_string(text: &str, out: &mut String) {
    use std::fmt::Write as _;
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            c if u32::from(c) <= 0xff => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if u32::from(c) <= 0xffff => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\U{:08x}", u32::from(c));
            }
        }
    }
    out.push('"');
}

/// Wires the change as `Workspace::load_change` does (`execution.yaml`'s providers win
/// over embedded ones), seals it, and checks the sealed graph.
fn seal(evidence: Evidence, execution: Execution, catalog: Option<Catalog>, bounds: &Bounds) {
    let mut repositories = BTreeMap::new();
    let ids: Vec<RepoId> = match &catalog {
        Some(c) if !c.repositories.is_empty() => c.repositories.keys().cloned().collect(),
        _ => vec![RepoId::root()],
    };
    for id in ids {
        repositories.insert(
            id.clone(),
            Repository {
                path: id.as_str().to_owned(),
                dir: PathBuf::from("/nonexistent").join(id.as_str()),
                id,
            },
        );
    }
    let workspace = Workspace {
        root: PathBuf::from("/nonexistent"),
        has_catalog: catalog.is_some(),
        catalog,
        repositories,
        diagnostics: Vec::new(),
    };
    let mut providers = BTreeMap::new();
    for (id, provider) in evidence.providers.clone().into_iter().flatten() {
        let file = FILES[0].to_owned();
        providers.insert(id, Wired { provider, file });
    }
    for (id, provider) in execution.providers {
        let file = FILES[1].to_owned();
        providers.insert(id, Wired { provider, file });
    }
    let change = Change {
        name: ChangeName::parse("fuzz").expect("`fuzz` is a change name"),
        dir: PathBuf::from("/nonexistent/change"),
        has_evidence: true,
        has_execution: true,
        evidence: Some(evidence),
        providers,
        services: execution.services,
        execution_file: FILES[1].to_owned(),
        diagnostics: Vec::new(),
    };
    for d in change.coverage_diagnostics(&workspace) {
        assert!(
            d.fix.is_some(),
            "a coverage diagnostic without a fix: {d:?}"
        );
    }
    match proofgraph::load::preflight::builder(&workspace, &change).seal() {
        Ok(graph) => check_sealed(&graph),
        Err(findings) => {
            assert!(!findings.is_empty(), "sealing failed without a finding");
            for f in &findings {
                bounds.check(f.pos, &format_args!("finding {:?}", f.check));
                assert!(!f.fix.is_empty(), "a finding without a fix: {f:?}");
                assert!(
                    FILES.contains(&&*f.file),
                    "a finding about an unknown file: {f:?}"
                );
            }
        }
    }
}

fn check_sealed(graph: &SealedGraph) {
    let order = graph.order();
    assert_eq!(order.len(), graph.len(), "the order skips or repeats nodes");
    let mut at = vec![usize::MAX; graph.len()];
    for (i, id) in order.iter().enumerate() {
        assert_eq!(at[id.get()], usize::MAX, "node {} ordered twice", id.get());
        at[id.get()] = i;
    }
    for (from, to, kind) in graph.edges() {
        assert!(
            at[from.get()] < at[to.get()],
            "a {kind:?} edge runs backwards in the order"
        );
    }
    // Everything succeeds: every wanted provider must start and succeed, and the run end.
    let wanted: BTreeSet<_> = graph.providers().map(|(_, id, _)| id).collect();
    let jobs = NonZeroUsize::new(2).expect("2 is not zero");
    let mut scheduler = Scheduler::new(graph, jobs, &wanted);
    let mut running = VecDeque::new();
    for _ in 0..=4 * graph.len() + 4 {
        for action in scheduler.poll() {
            if let Action::Start(id) = action {
                running.push_back(id);
            }
        }
        match running.pop_front() {
            Some(id) => scheduler.complete(id, Step::Succeeded),
            None => break,
        }
    }
    assert!(running.is_empty(), "the run did not end");
    assert!(scheduler.is_finished(), "the scheduler is stuck");
    for id in wanted {
        assert_eq!(
            scheduler.state(id),
            State::Succeeded,
            "provider node {} never ran although everything succeeded",
            id.get()
        );
    }
}
