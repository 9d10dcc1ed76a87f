//! The `playwright` adapter end to end, in Debian's Chromium: a real
//! Playwright project (`fixtures/playwright/`) against a page a service of
//! the run serves, judged by its claim annotations. One run writes the
//! browser receipt and the accessibility receipt; a skipped test never proves
//! a claim; the console-error fixture fails a page that logs errors; the
//! test's attachments are kept in the receipt. After every run nothing the
//! run started is still alive and the service's port is free.
//!
//! Needs `npm ci --prefix tools` (the pinned `@playwright/test`) and
//! `apt-get install chromium`; a missing one fails the test with that line.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{
    Run, Sandbox, assert_no_process_marked, assert_port_free, cas, chromium_bin, free_port,
    git_commit_all, kill_marked, playwright_bin, provider, receipt, repo_root, requirement,
    run_bounded, statement, states, tools_node_modules, unique_marker,
};

/// The change every browser test proves.
pub(crate) const CHANGE: &str = "edit-profile";

/// How long one `prove` may take before the test gives up on it. A passing
/// run takes a few seconds with warm caches; the first Chromium of a fresh
/// machine, read from a cold disk beside a loaded suite, once needed more
/// than 40 s just to start (Playwright's browser launch has no deadline of
/// its own below three minutes), so the limits leave room for that and only
/// catch a hang.
pub(crate) const PROVE_LIMIT: Duration = Duration::from_secs(150);

/// Kills whatever still carries the test's marker when the test ends, even
/// by a panic, so that a failing test leaves nothing running.
pub(crate) struct KillOnDrop(pub(crate) String);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        kill_marked(&self.0);
    }
}

/// One browser test's world: a sandbox with the fixture project in `e2e/`,
/// a port for the service and a marker that every process of the run
/// carries (in its argv or its inherited environment).
pub(crate) struct BrowserWorld {
    pub(crate) sb: Sandbox,
    pub(crate) port: u16,
    pub(crate) marker: String,
    _guard: KillOnDrop,
}

impl BrowserWorld {
    pub(crate) fn new(name: &str) -> Self {
        let marker = unique_marker(name);
        let sb = Sandbox::new();
        sb.openspec_root("");
        copy_dir(
            &repo_root().join("fixtures/playwright"),
            &sb.work().join("e2e"),
        );
        sb.write(".gitignore", "test-results/\nplaywright-report/\n");
        sb.write(
            &format!("openspec/changes/{CHANGE}/proposal.md"),
            "# Edit profile\n",
        );
        sb.write(
            &format!("openspec/changes/{CHANGE}/evidence.yaml"),
            r#"version: 2
claims:
  - id: profile-update
    scenario: The owner updates their profile in the browser, with an accessible form
    impact: medium
    capabilities: [browser, accessibility]
  - id: profile-delete
    scenario: The owner deletes their profile
    impact: high
    capabilities: [browser]
"#,
        );
        Self {
            sb,
            port: free_port(),
            _guard: KillOnDrop(marker.clone()),
            marker,
        }
    }

    /// The wiring: one `browser` provider (adapter playwright, outputs
    /// accessibility, project chromium) running the pinned Playwright CLI on
    /// the fixture, needing the `web` service (the fixture's Node server),
    /// whose probe must see this run's id in a header and in the body.
    pub(crate) fn execution(&self) -> Value {
        let port = self.port.to_string();
        json!({
            "version": 1,
            "providers": {
                "browser": {
                    "adapter": "playwright",
                    "outputs": ["accessibility"],
                    "project": "chromium",
                    "service": "web",
                    "command": [
                        playwright_bin().display().to_string(),
                        "test",
                        "--config", "e2e/playwright.config.js",
                        "--output", format!("test-results/{}", self.marker),
                    ],
                    "env": {
                        "BASE_URL": format!("http://127.0.0.1:{port}"),
                        "NODE_PATH": tools_node_modules().display().to_string(),
                        "CHROMIUM_PATH": chromium_bin().display().to_string(),
                        "PG_TEST_MARKER": self.marker,
                    },
                    "timeoutMs": 120_000,
                },
            },
            "services": {
                "web": {
                    "command": ["node", "e2e/server.js", "--port", port, "--marker", self.marker],
                    "env": {"PAGE_MODE": "ok", "PG_TEST_MARKER": self.marker},
                    "readiness": {
                        "url": format!("http://127.0.0.1:{port}/health"),
                        "expectHeader": {"x-proofgraph-run": "${PROOFGRAPH_RUN_ID}"},
                        "expectBody": "run=${PROOFGRAPH_RUN_ID}",
                        "timeoutMs": 60_000,
                    },
                },
            },
        })
    }

    /// Narrows the change to the claim the fixture proves (`profile-update`),
    /// so that a run can pass as a whole; use with [`Self::scoped`].
    pub(crate) fn only_profile_update(&self) {
        self.sb.write(
            &format!("openspec/changes/{CHANGE}/evidence.yaml"),
            "version: 2\nclaims:\n  - {id: profile-update, scenario: The owner updates their profile, capabilities: [browser, accessibility]}\n",
        );
    }

    /// `execution` with the browser provider vouching for `profile-update` only.
    pub(crate) fn scoped(&self, mut execution: Value) -> Value {
        execution["providers"]["browser"]["claims"] = json!(["profile-update"]);
        execution
    }

    /// Writes `execution` as the change's `execution.yaml` (JSON text, which
    /// proofgraph reads as such) and commits everything.
    pub(crate) fn wire(&self, execution: &Value) {
        self.sb.write(
            &format!("openspec/changes/{CHANGE}/execution.yaml"),
            serde_json::to_string_pretty(execution).expect("json"),
        );
        git_commit_all(&self.sb.work());
    }

    /// `prove edit-profile --json` plus `extra`, bounded in time.
    pub(crate) fn prove(&self, extra: &[&str]) -> Run {
        let mut args = vec!["prove", CHANGE, "--json"];
        args.extend(extra);
        run_bounded(&self.sb, &self.sb.work(), &args, &[], PROVE_LIMIT)
    }

    /// Nothing the run started is alive, and the service's port is free.
    #[track_caller]
    pub(crate) fn assert_nothing_left(&self) {
        assert_no_process_marked(&self.marker);
        assert_port_free(self.port);
    }
}

/// Copies a directory tree (the fixture project), skipping what Playwright
/// or npm leave behind.
fn copy_dir(from: &Path, to: &Path) {
    fs_err::create_dir_all(to).expect("create directory");
    for entry in fs_err::read_dir(from).expect("read fixture").flatten() {
        let name = entry.file_name();
        if ["node_modules", "test-results", "playwright-report"]
            .iter()
            .any(|n| name == *n)
        {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(&name));
        } else {
            fs_err::copy(&path, to.join(&name)).expect("copy fixture file");
        }
    }
}

#[test]
fn playwright_in_chromium_proves_annotated_claims_and_never_skipped_ones() {
    let w = BrowserWorld::new("pw-claims");
    w.wire(&w.execution());
    let run = w.prove(&[]);
    // Nothing failed, but profile-delete is not proven: exit 2.
    run.expect_code(2);
    let doc = run.json();
    assert_eq!(doc["isolation"], "namespaces");
    let s = states(&doc);
    assert_eq!(
        s,
        BTreeMap::from([
            ("profile-update/browser".to_owned(), "passed".to_owned()),
            (
                "profile-update/accessibility".to_owned(),
                "passed".to_owned()
            ),
            (
                "profile-delete/browser".to_owned(),
                "inconclusive".to_owned()
            ),
        ]),
        "{doc:#}"
    );
    let delete = requirement(&doc, "profile-delete", "browser");
    let reason = delete["evidence"][0]["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("profile-delete") && reason.contains("skipped"),
        "the reason names the claim and why: {reason}"
    );
    // One execution wrote both receipts.
    let browser = provider(&doc, "browser");
    assert_eq!(browser["action"], "ran");
    let receipts = browser["receipts"].as_array().expect("receipts");
    let mut capabilities: Vec<&str> = receipts
        .iter()
        .filter_map(|r| r["capability"].as_str())
        .collect();
    capabilities.sort_unstable();
    assert_eq!(capabilities, vec!["accessibility", "browser"]);
    let proofs: Vec<Value> = receipts
        .iter()
        .map(|r| statement(&w.sb, r["sha256"].as_str().expect("sha256"))["predicate"].clone())
        .collect();
    for p in &proofs {
        assert_eq!(p["proofgraph"]["run_id"], doc["run_id"]);
        assert_eq!(p["proofgraph"]["adapter"], "playwright");
        assert_eq!(p["proofgraph"]["isolation"], "namespaces");
        assert_eq!(
            p["proofgraph"]["started_at"],
            proofs[0]["proofgraph"]["started_at"]
        );
        // The report really ran in Chromium: one passed, one skipped.
        assert_eq!(p["proofgraph"]["counts"]["passed"], 1, "{p:#}");
        assert_eq!(p["proofgraph"]["counts"]["skipped"], 1, "{p:#}");
        assert_eq!(p["proofgraph"]["counts"]["failed"], 0, "{p:#}");
    }
    w.assert_nothing_left();
}

#[test]
fn the_console_error_fixture_fails_a_page_that_logs_errors() {
    let w = BrowserWorld::new("pw-console");
    for mode in ["console-error", "page-error"] {
        let mut execution = w.execution();
        execution["services"]["web"]["env"]["PAGE_MODE"] = json!(mode);
        w.wire(&execution);
        let run = w.prove(&[]);
        run.expect_code(1);
        let doc = run.json();
        let s = states(&doc);
        assert_eq!(s["profile-update/browser"], "failed", "{mode}: {doc:#}");
        assert_eq!(s["profile-update/accessibility"], "failed", "{mode}");
        let r = receipt(&doc, "browser", "browser");
        assert_eq!(r["outcome"], "fail", "{mode}: {r}");
        let reason = r["reason"].as_str().unwrap_or("");
        assert!(
            reason.contains("the owner updates their profile"),
            "{mode}: the reason names the failing test: {reason}"
        );
        w.assert_nothing_left();
    }
}

#[test]
fn playwright_attachments_are_digested_into_the_receipt() {
    let w = BrowserWorld::new("pw-attach");
    w.wire(&w.execution());
    let run = w.prove(&[]);
    let doc = run.json();
    let sha = receipt(&doc, "browser", "browser")["sha256"]
        .as_str()
        .expect("a receipt")
        .to_owned();
    let artifacts = statement(&w.sb, &sha)["predicate"]["proofgraph"]["artifacts"].clone();
    let attachments: Vec<&Value> = artifacts
        .as_array()
        .expect("artifacts")
        .iter()
        .filter(|a| a["kind"] == "playwright-attachment")
        .collect();
    // The screenshot the test attached as a file: a PNG, stored by digest.
    let screenshot = attachments
        .iter()
        .find(|a| {
            a["path"]
                .as_str()
                .is_some_and(|p| p.ends_with(".png") && !p.starts_with('/'))
        })
        .unwrap_or_else(|| panic!("no screenshot attachment in {artifacts:#}"));
    let bytes = cas(&w.sb, screenshot["sha256"].as_str().expect("sha256"));
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert_eq!(screenshot["size"], bytes.len());
    assert_eq!(
        proofgraph::store::sha256_hex(&bytes),
        screenshot["sha256"].as_str().expect("sha256")
    );
    // The attachment the test gave inline (`body`) is evidence too.
    let inline: Vec<Vec<u8>> = attachments
        .iter()
        .filter_map(|a| a["sha256"].as_str())
        .map(|sha| cas(&w.sb, sha))
        .filter(|b| b.as_slice() == b"heading=Ada King\n")
        .collect();
    assert_eq!(
        inline.len(),
        1,
        "the inline attachment `profile-summary` is not in the receipt: {artifacts:#}"
    );
    w.assert_nothing_left();
}

#[test]
fn a_second_prove_reuses_the_browser_receipts_and_starts_nothing() {
    let w = BrowserWorld::new("pw-reuse");
    // Only the proven claim, so that the run passes and is reusable.
    w.only_profile_update();
    let started_log = w.sb.channel("service-started");
    let mut execution = w.scoped(w.execution());
    execution["services"]["web"]["env"]["READY_LOG"] = json!(started_log.env());
    w.wire(&execution);
    w.prove(&[]).expect_code(0);
    assert!(
        !started_log.take().is_empty(),
        "the service ran the first time"
    );
    let again = w.prove(&[]);
    again.expect_code(0);
    let doc = again.json();
    assert_eq!(provider(&doc, "browser")["action"], "reused", "{doc:#}");
    assert_eq!(
        started_log.read(),
        "",
        "a reused provider's service was started: {}",
        again.stderr
    );
    w.assert_nothing_left();
}
