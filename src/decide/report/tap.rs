//! Test Anything Protocol, versions 13 and 14 (`node --test --test-reporter=tap`, node-tap,
//! tape, prove-style producers).
//!
//! Read: the version line, plans (`1..N`, at the start or the end of their block), test
//! points (`ok`/`not ok`, optional number, description, `# SKIP` / `# TODO` directives, `\#`
//! escapes), YAML diagnostic blocks (`---` ... `...`, skipped except `duration_ms`), subtests
//! (TAP 14: a block indented 4 more spaces, optionally headed by `# Subtest: name` at the
//! parent's indentation, closed by the parent's test point), and `Bail out!`. Other lines are
//! ignored, as TAP requires.
//!
//! Tests are the *leaf* test points; a point that closes a subtest block is a suite, and its
//! description becomes part of its children's ids (node's runner and node-tap count leaves the
//! same way in their `# tests` / `total` summaries).
//!
//! The plans are the format's counts. A plan must be digits no larger than 2^53-1; a line
//! that starts like a plan but is not one (`1..3.0`, `1..-3`, `1..three`) is a malformed
//! count, not a line to ignore. A plan that disagrees with the number of test points at its
//! level is [`ReportError::Unbacked`] (neither number can be trusted), and two plans in one
//! block are [`ReportError::DuplicateKey`] — unless the producer bailed out first.
//!
//! A failed test's [`TestCase::failure`](super::TestCase::failure) is its diagnostics: the
//! YAML block after its test point (as written, but its `duration_ms`), and the `#` comment
//! lines that follow it (Perl's `Test::More` writes `#   Failed test …` and `#   got: …`
//! there), until the next test point, plan or subtest.
//!
//! Runner errors: `Bail out!`; no top-level plan (the stream may be cut off, or nothing
//! ran); a subtest block with no closing point; a failed suite point whose leaves all passed.
//! After `Bail out!` reading stops and the consequential plan/closing errors are not added.

use super::count;
use super::error::ReportError;
use super::failure;
use super::model::{Format, TestCase, TestCounts, TestOutcome, TestReport};
use super::util::{duration_ms, join_id, push_unique};

/// Subtest nesting deeper than this is not read (and is reported as a runner error).
const MAX_DEPTH: usize = 64;

/// How many leading non-empty lines [`looks_like`] inspects for a `TAP version` line.
const SNIFF_LINES: usize = 50;

/// Whether the text looks like TAP: a `TAP version N` line among the first lines, or a first
/// non-comment line that is a plan or a test point.
pub(crate) fn looks_like(text: &str) -> bool {
    let mut first_significant = None;
    for line in text
        .lines()
        .map(|l| l.trim_end_matches('\r').trim())
        .filter(|l| !l.is_empty())
        .take(SNIFF_LINES)
    {
        if is_version(line) {
            return true;
        }
        if first_significant.is_none() && !line.starts_with('#') {
            first_significant = Some(line);
        }
    }
    first_significant.is_some_and(|l| parse_plan(l).is_some() || parse_point(l).is_some())
}

fn is_version(line: &str) -> bool {
    line.strip_prefix("TAP version ")
        .is_some_and(|v| !v.is_empty() && v.trim().bytes().all(|b| b.is_ascii_digit()))
}

/// `1..N`, optionally followed by `# reason`: the digits of `N` (read as a count later, so
/// a plan too large for a count is an error rather than a line that is not a plan).
fn parse_plan(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("1..")?;
    let digits_end = rest
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(rest.len());
    if digits_end == 0 {
        return None;
    }
    let tail = rest[digits_end..].trim();
    if !tail.is_empty() && !tail.starts_with('#') {
        return None;
    }
    Some(&rest[..digits_end])
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Directive {
    None,
    Skip,
    Todo,
}

#[derive(Debug)]
struct Point {
    ok: bool,
    number: Option<u64>,
    description: String,
    directive: Directive,
    duration_ms: Option<u64>,
    children: Option<Box<Block>>,
    /// Synthesised for a subtest block that never got its closing test point.
    dangling: bool,
    /// Its diagnostic lines (YAML block, `#` comments), kept for a failed point.
    diagnostics: Vec<String>,
}

impl Point {
    /// Keeps a diagnostic line of a failed point, in bounded memory (the message keeps at
    /// most [`failure::MAX_MESSAGE_BYTES`] anyway; beyond twice that, lines are dropped).
    fn diagnose(&mut self, line: &str) {
        let held: usize = self.diagnostics.iter().map(|l| l.len() + 1).sum();
        if !self.ok && held < 2 * failure::MAX_MESSAGE_BYTES {
            self.diagnostics.push(line.to_owned());
        }
    }
}

#[derive(Debug, Default)]
struct Block {
    indent: usize,
    plan: Option<u64>,
    points: Vec<Point>,
    /// A finished, indented block waiting for the test point that closes it.
    pending_child: Option<Box<Block>>,
    /// Name from a `# Subtest: name` header at this block's indentation, for the next child.
    pending_name: Option<String>,
    /// This block's own name (from the header that preceded it).
    name: Option<String>,
}

/// `ok` / `not ok` test point.
fn parse_point(line: &str) -> Option<Point> {
    let (ok, rest) = if let Some(rest) = line.strip_prefix("not ok") {
        (false, rest)
    } else if let Some(rest) = line.strip_prefix("ok") {
        (true, rest)
    } else {
        return None;
    };
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    let rest = rest.trim_start();
    let digits_end = rest
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(rest.len());
    let number = rest[..digits_end].parse().ok();
    let rest = rest[digits_end..].trim_start();
    let rest = rest
        .strip_prefix("- ")
        .or_else(|| rest.strip_prefix('-').filter(|r| r.is_empty()))
        .unwrap_or(rest);

    // Split at the first unescaped '#': description before, directive after.
    let mut description = String::new();
    let mut directive_text = None;
    let mut chars = rest.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if chars.peek().is_some_and(|(_, n)| *n == '#' || *n == '\\') => {
                if let Some((_, escaped)) = chars.next() {
                    description.push(escaped);
                }
            }
            '#' => {
                directive_text = Some(rest[i + 1..].trim());
                break;
            }
            _ => description.push(c),
        }
    }
    let directive = match directive_text.map(str::to_ascii_lowercase) {
        Some(d) if d.starts_with("skip") => Directive::Skip,
        Some(d) if d.starts_with("todo") => Directive::Todo,
        _ => Directive::None,
    };
    Some(Point {
        ok,
        number,
        description: description.trim().to_string(),
        directive,
        duration_ms: None,
        children: None,
        dangling: false,
        diagnostics: Vec::new(),
    })
}

enum Line<'a> {
    Plan(&'a str),
    Point(Point),
    Subtest(String),
}

fn classify(content: &str) -> Option<Line<'_>> {
    if let Some(plan) = parse_plan(content) {
        return Some(Line::Plan(plan));
    }
    // A line that starts like a plan but whose count is not digits (`1..3.0`, `1..-3`,
    // `1..three`) is a malformed plan, not a line to ignore: read as a count, it is refused.
    if let Some(rest) = content.strip_prefix("1..")
        && rest
            .chars()
            .next()
            .is_some_and(|c| !c.is_whitespace() && c != '.')
    {
        let token = rest.split('#').next().unwrap_or(rest).trim();
        return Some(Line::Plan(token));
    }
    if let Some(point) = parse_point(content) {
        return Some(Line::Point(point));
    }
    let name = content.strip_prefix("# Subtest")?;
    if !(name.is_empty() || name.starts_with(':') || name.starts_with(' ')) {
        return None;
    }
    let name = name.strip_prefix(':').unwrap_or(name).trim();
    Some(Line::Subtest(name.to_string()))
}

/// Accumulates the tree while reading lines.
struct Reader {
    stack: Vec<Block>,
    errors: Vec<String>,
    bailed: bool,
    /// What makes the stream not a report (a plan that is no count, two plans in a block);
    /// reading stops at the first.
    fatal: Option<ReportError>,
}

impl Reader {
    fn top(&self) -> &Block {
        // The stack is created with one block and `pop_to` never removes the last one.
        &self.stack[self.stack.len() - 1]
    }

    /// Turns an unclosed child block into a point of its own (no result line was seen).
    fn flush_pending(block: &mut Block, errors: &mut Vec<String>, bailed: bool) {
        if let Some(child) = block.pending_child.take() {
            let name = child.name.clone().unwrap_or_default();
            if !bailed {
                let label = if name.is_empty() {
                    "(unnamed)".to_string()
                } else {
                    name.clone()
                };
                push_unique(errors, format!("subtest {label} has no closing test point"));
            }
            block.points.push(Point {
                ok: false,
                number: None,
                description: name,
                directive: Directive::None,
                duration_ms: None,
                children: Some(child),
                dangling: true,
                diagnostics: Vec::new(),
            });
        }
    }

    /// Closes blocks indented deeper than `indent`; each becomes the pending child of the
    /// block below it.
    fn pop_to(&mut self, indent: usize) {
        while self.stack.len() > 1 && self.stack.last().is_some_and(|b| b.indent > indent) {
            let Some(mut closed) = self.stack.pop() else {
                break;
            };
            Self::flush_pending(&mut closed, &mut self.errors, self.bailed);
            let last = self.stack.len() - 1;
            let parent = &mut self.stack[last];
            Self::flush_pending(parent, &mut self.errors, self.bailed);
            parent.pending_child = Some(Box::new(closed));
        }
    }

    /// Reads one line; `line_no` is 1-based.
    fn line(&mut self, indent: usize, line: Line<'_>, line_no: usize) {
        self.pop_to(indent);
        if indent > self.top().indent {
            if self.stack.len() >= MAX_DEPTH {
                push_unique(
                    &mut self.errors,
                    format!("TAP subtests nested deeper than {MAX_DEPTH} levels were not read"),
                );
                return;
            }
            let last = self.stack.len() - 1;
            let parent = &mut self.stack[last];
            Self::flush_pending(parent, &mut self.errors, self.bailed);
            let name = parent.pending_name.take();
            self.stack.push(Block {
                indent,
                name,
                ..Block::default()
            });
        }
        let last = self.stack.len() - 1;
        let top = &mut self.stack[last];
        match line {
            Line::Plan(digits) => {
                let plan = count::text(digits, Format::Tap, || {
                    format!("the plan at line {line_no}")
                });
                match plan {
                    // Two plans in one block: which one holds is anyone's guess.
                    Ok(_) if top.plan.is_some() => {
                        self.fatal = Some(ReportError::DuplicateKey {
                            format: Format::Tap.as_str(),
                            line: line_no,
                            column: indent + 1,
                            key: "a plan (`1..N`) of one block".to_string(),
                        });
                    }
                    Ok(n) => top.plan = Some(n),
                    Err(e) => self.fatal = Some(e),
                }
            }
            Line::Subtest(name) => {
                Self::flush_pending(top, &mut self.errors, self.bailed);
                top.pending_name = Some(name);
            }
            Line::Point(mut point) => {
                if let Some(child) = top.pending_child.take() {
                    if point.description.is_empty() {
                        point.description = child.name.clone().unwrap_or_default();
                    }
                    point.children = Some(child);
                }
                if point.description.is_empty() {
                    point.description = top.pending_name.take().unwrap_or_default();
                }
                top.pending_name = None;
                top.points.push(point);
            }
        }
    }

    fn finish(mut self) -> (Block, Vec<String>) {
        self.pop_to(0);
        let bailed = self.bailed;
        let mut root = self.stack.swap_remove(0);
        Self::flush_pending(&mut root, &mut self.errors, bailed);
        (root, self.errors)
    }
}

/// Parses a TAP stream.
pub(crate) fn parse(bytes: &[u8]) -> Result<TestReport, ReportError> {
    let format = Format::Tap;
    let text = std::str::from_utf8(bytes).map_err(|e| ReportError::Utf8 {
        format: format.as_str(),
        offset: e.valid_up_to(),
    })?;
    let mut reader = Reader {
        stack: vec![Block::default()],
        errors: Vec::new(),
        bailed: false,
        fatal: None,
    };
    let mut saw_version = false;
    let mut saw_structure = false;
    // YAML block state: the indentation of its `---`.
    let mut yaml_indent: Option<usize> = None;
    // Indentation of the test point just read, if the previous significant line was one.
    let mut last_point_indent: Option<usize> = None;
    // Indentation of the last test point, until a plan, point or subtest follows: the
    // point `#` comment lines are diagnostics of.
    let mut comment_owner: Option<usize> = None;

    for (line_index, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let content = line.trim_start_matches(' ');
        let indent = line.len() - content.len();
        let content = content.trim_end();
        if content.is_empty() {
            if let Some(point) = yaml_indent.and_then(|yi| reader.top_point_at(yi)) {
                point.diagnose("");
            }
            continue;
        }
        if let Some(yi) = yaml_indent {
            if indent > yi || (indent == yi && content != "...") {
                let value = content.strip_prefix("duration_ms:");
                if let Some(point) = reader.top_point_at(yi) {
                    match value {
                        Some(value) => {
                            let ms = value
                                .trim()
                                .parse::<f64>()
                                .ok()
                                .and_then(|v| duration_ms(v, 1.0));
                            point.duration_ms = ms.or(point.duration_ms);
                        }
                        None => point.diagnose(line[yi..].trim_end()),
                    }
                }
                continue;
            }
            yaml_indent = None;
            if content == "..." {
                continue;
            }
        }
        if content == "---" && last_point_indent.is_some_and(|p| indent > p) {
            yaml_indent = Some(indent);
            last_point_indent = None;
            continue;
        }
        last_point_indent = None;

        if let Some(reason) = content
            .get(..9)
            .filter(|prefix| prefix.eq_ignore_ascii_case("bail out!"))
            .and_then(|_| content.get(9..))
        {
            let reason = reason.trim();
            reader.errors.push(if reason.is_empty() {
                "the TAP producer bailed out".to_string()
            } else {
                format!("the TAP producer bailed out: {reason}")
            });
            reader.bailed = true;
            saw_structure = true;
            break;
        }
        if is_version(content) {
            if !saw_version && !saw_structure {
                // A stream indented as a whole (e.g. embedded in other output) is read
                // relative to its first line.
                reader.stack[0].indent = indent;
            }
            saw_version = true;
            continue;
        }
        let kind = classify(content);
        if kind.is_none()
            && let Some(comment) = content.strip_prefix('#')
            && let Some(point) = comment_owner.and_then(|p| reader.top_point_at(p + 1))
        {
            point.diagnose(comment.strip_prefix(' ').unwrap_or(comment));
        }
        if let Some(kind) = kind {
            if !saw_version && !saw_structure && !reader.has_content() {
                reader.stack[0].indent = indent;
            }
            comment_owner = None;
            if let Line::Point(_) = kind {
                last_point_indent = Some(indent);
                comment_owner = Some(indent);
            }
            if !matches!(kind, Line::Subtest(_)) {
                saw_structure = true;
            }
            reader.line(indent, kind, line_index + 1);
            if let Some(fatal) = reader.fatal.take() {
                return Err(fatal);
            }
        }
    }

    if !saw_version && !saw_structure {
        return Err(ReportError::shape(
            format,
            "the text has no TAP version line, plan or test point",
        ));
    }
    let bailed = reader.bailed;
    let (root, mut errors) = reader.finish();

    let mut report = TestReport::empty(format);
    let mut path = Vec::new();
    collect(&root, &mut path, &mut report.tests, &mut errors, bailed)?;
    if root.plan.is_none() && !bailed {
        errors.push("the TAP stream has no plan, so it may be incomplete".to_string());
    }
    report.counts = TestCounts::tally(&report.tests);
    for error in errors {
        push_unique(&mut report.runner_errors, error);
    }
    Ok(report)
}

impl Reader {
    /// Whether anything structural has been read yet.
    fn has_content(&self) -> bool {
        self.stack.len() > 1 || {
            let root = &self.stack[0];
            root.plan.is_some()
                || !root.points.is_empty()
                || root.pending_name.is_some()
                || root.pending_child.is_some()
        }
    }

    /// The last test point of the block whose points sit at `yaml_indent - 2` or so: the
    /// point that owns the YAML block being read.
    fn top_point_at(&mut self, yaml_indent: usize) -> Option<&mut Point> {
        let block = self
            .stack
            .iter_mut()
            .rev()
            .find(|b| b.indent < yaml_indent)?;
        block.points.last_mut()
    }
}

/// Adds the leaves under `block` to `tests`. A plan that disagrees with the number of test
/// points at its level (unless the producer bailed out) is [`ReportError::Unbacked`].
fn collect(
    block: &Block,
    path: &mut Vec<String>,
    tests: &mut Vec<TestCase>,
    errors: &mut Vec<String>,
    bailed: bool,
) -> Result<(), ReportError> {
    for (i, point) in block.points.iter().enumerate() {
        let name = if point.description.is_empty() {
            format!("test {}", point.number.unwrap_or(i as u64 + 1))
        } else {
            point.description.clone()
        };
        let child = point
            .children
            .as_ref()
            .filter(|c| c.plan.is_some() || !c.points.is_empty());
        match child {
            Some(child) => {
                path.push(name.clone());
                let before = tests.len();
                collect(child, path, tests, errors, bailed)?;
                path.pop();
                let child_failed = tests[before..]
                    .iter()
                    .any(|t| t.outcome == TestOutcome::Failed);
                if !point.ok
                    && !point.dangling
                    && point.directive == Directive::None
                    && !child_failed
                {
                    errors.push(format!(
                        "{} failed but none of its tests failed",
                        join_id(path.iter().map(String::as_str).chain([name.as_str()]))
                    ));
                }
            }
            None => {
                let outcome = if point.dangling {
                    TestOutcome::Interrupted
                } else {
                    match (point.directive, point.ok) {
                        (Directive::Skip, _) => TestOutcome::Skipped,
                        (Directive::Todo, _) => TestOutcome::Todo,
                        (Directive::None, true) => TestOutcome::Passed,
                        (Directive::None, false) => TestOutcome::Failed,
                    }
                };
                let id = join_id(path.iter().map(String::as_str).chain([name.as_str()]));
                let mut test = TestCase::new(id, name, outcome);
                test.duration_ms = point.duration_ms;
                if outcome == TestOutcome::Failed {
                    test.failure = failure::message(&point.diagnostics.join("\n"));
                }
                tests.push(test);
            }
        }
    }
    let points = block.points.len() as u64;
    match block.plan {
        Some(plan) if plan != points && !bailed => {
            let label = match (&block.name, path.is_empty()) {
                (_, true) => "the top level".to_string(),
                (Some(n), false) if !n.is_empty() => format!("subtest {n}"),
                _ => format!("subtest {}", path.join(" > ")),
            };
            Err(ReportError::Unbacked {
                format: Format::Tap.as_str(),
                declared_by: format!("the TAP plan at {label}"),
                declared: plan,
                backed_by: "the test points at its level number",
                backed: points,
            })
        }
        _ => Ok(()),
    }
}
