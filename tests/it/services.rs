//! Services and readiness identity, end to end with the Playwright fixture:
//! a foreign server on the service's port is never what a run talks to
//! (isolated: unreachable; not isolated: refused), probes that could not tell
//! servers apart are refused before anything runs, and a service that crashes
//! or never shows its identity makes its users `error` — quickly, saying why.
//! After every run nothing it started is alive and the port is free.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::playwright::BrowserWorld;
use crate::support::{assert_emits, provider, receipt, states};

/// The fixture's server started by the test itself, outside any run: it
/// answers exactly like the run's service would, but with another run id.
struct Foreign {
    child: Child,
    requests: PathBuf,
}

impl Foreign {
    fn start(w: &BrowserWorld) -> Self {
        let requests = w.sb.path().join("foreign-requests.log");
        let child =
            w.sb.cmd("node", &w.sb.work())
                .arg(w.sb.work().join("e2e/server.js"))
                .args(["--port", &w.port.to_string()])
                .args(["--marker", &format!("pg-foreign-{}", std::process::id())])
                .env("PROOFGRAPH_RUN_ID", "foreign-run-0000")
                .env("REQUEST_LOG", &requests)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("node is required by this test ({e}); install Node.js"));
        let foreign = Self { child, requests };
        // Listening (checked without an HTTP request, which it would log).
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", w.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the foreign server did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        foreign
    }

    /// Every request it received: `<method> <path> <user-agent>`.
    fn requests(&self) -> Vec<String> {
        read_lines(&self.requests)
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_lines(path: &Path) -> Vec<String> {
    fs_err::read_to_string(path)
        .map(|s| s.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// The wiring with the run's own service logging its requests to the channel `log`.
fn logged_execution(w: &BrowserWorld, log: &crate::support::Channel) -> Value {
    let mut execution = w.execution();
    execution["services"]["web"]["env"]["REQUEST_LOG"] = json!(log.env());
    execution
}

/// What the run's service logged to its channel, a line each.
fn logged(log: &crate::support::Channel) -> Vec<String> {
    log.read().lines().map(str::to_owned).collect()
}

#[test]
fn an_isolated_run_never_reaches_a_foreign_server_on_its_port() {
    let w = BrowserWorld::new("svc-foreign-iso");
    let foreign = Foreign::start(&w);
    let own = w.sb.channel("own-requests");
    w.only_profile_update();
    w.wire(&w.scoped(logged_execution(&w, &own)));
    let run = w.prove(&[]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["isolation"], "namespaces");
    // The run's own server started beside the foreign one, passed the
    // identity probe, and served the browser: the provider passed.
    for capability in ["browser", "accessibility"] {
        assert_eq!(
            receipt(&doc, "browser", capability)["outcome"],
            "pass",
            "{doc:#}"
        );
    }
    assert!(states(&doc).values().all(|s| s == "passed"), "{doc:#}");
    let own_requests = logged(&own);
    assert!(
        own_requests
            .iter()
            .any(|r| r.starts_with("GET /health proofgraph-probe")),
        "the probe asked the run's server: {own_requests:?}"
    );
    assert!(
        own_requests
            .iter()
            .any(|r| r.starts_with("GET /profile/1 ") && r.contains("Chrome")),
        "the browser asked the run's server: {own_requests:?}"
    );
    assert_eq!(
        foreign.requests(),
        Vec::<String>::new(),
        "the foreign server was reached from inside the run"
    );
    drop(foreign);
    w.assert_nothing_left();
}

#[test]
fn without_isolation_a_foreign_server_on_the_port_is_refused() {
    let w = BrowserWorld::new("svc-foreign-none");
    let foreign = Foreign::start(&w);
    let own = w.sb.channel("own-requests");
    w.wire(&logged_execution(&w, &own));
    let run = w.prove(&["--isolation", "none"]);
    let doc = run.json();
    assert_emits!(
        run.status_codes(),
        "readiness_port_in_use",
        "{}",
        run.stderr
    );
    run.expect_code(1);
    for capability in ["browser", "accessibility"] {
        let r = receipt(&doc, "browser", capability);
        assert_eq!(r["outcome"], "error", "{r}");
    }
    assert!(
        states(&doc).values().all(|s| s != "passed"),
        "nothing may pass against a foreign server: {:?}",
        states(&doc)
    );
    // Whatever proofgraph itself sent to find the port taken, no provider
    // (no browser) talked to the foreign server.
    let from_providers: Vec<String> = foreign
        .requests()
        .into_iter()
        .filter(|r| !r.ends_with(" proofgraph-probe"))
        .collect();
    assert_eq!(from_providers, Vec::<String>::new());
    assert_eq!(
        logged(&own),
        Vec::<String>::new(),
        "the run's service never served"
    );
    drop(foreign);
    w.assert_nothing_left();
}

#[test]
fn probes_that_cannot_tell_servers_apart_are_refused_before_anything_runs() {
    let w = BrowserWorld::new("svc-preflight");
    let port = w.port;
    let cases = [
        (
            "readiness_status_only",
            json!({"url": format!("http://127.0.0.1:{port}/health"), "timeoutMs": 5000}),
        ),
        (
            "readiness_port_missing",
            json!({"url": "http://127.0.0.1/health", "expectBody": "run=${PROOFGRAPH_RUN_ID}"}),
        ),
        // URLs the probe cannot use are refused here, where they are written — never by
        // the probe halfway through a run (an https URL once passed `validate`).
        (
            "readiness_url_invalid",
            json!({"url": format!("https://127.0.0.1:{port}/health"), "expectBody": "run=${PROOFGRAPH_RUN_ID}"}),
        ),
        (
            "readiness_url_invalid",
            json!({"url": format!("http://user@127.0.0.1:{port}/health"), "expectBody": "run=${PROOFGRAPH_RUN_ID}"}),
        ),
        (
            "readiness_url_invalid",
            json!({"url": format!("http://127.0.0.1:{port}/health#ready"), "expectBody": "run=${PROOFGRAPH_RUN_ID}"}),
        ),
        (
            "readiness_url_invalid",
            json!({"url": "http://127.0.0.1:0/health", "expectBody": "run=${PROOFGRAPH_RUN_ID}"}),
        ),
    ];
    let started = w.sb.channel("started");
    for (code, readiness) in cases {
        let mut execution = w.execution();
        execution["services"]["web"]["env"]["READY_LOG"] = json!(started.env());
        execution["services"]["web"]["readiness"] = readiness;
        w.wire(&execution);
        let run = w.prove(&[]);
        run.expect_code(3);
        let codes = run.status_codes();
        assert!(codes.contains(&code.to_owned()), "{code}: {codes:?}");
        let target = run.json()["status"]
            .as_array()
            .expect("status")
            .iter()
            .find(|d| d["code"] == code)
            .and_then(|d| d["target"].as_str())
            .unwrap_or("")
            .to_owned();
        assert!(
            target.contains("execution.yaml:"),
            "{code} names the file and position: {target}"
        );
        assert_eq!(started.read(), "", "{code}: the service was started");
        w.assert_nothing_left();
    }
}

#[test]
fn a_service_that_crashes_on_start_fails_the_browser_fast_saying_why() {
    let w = BrowserWorld::new("svc-crash");
    let mut execution = w.execution();
    execution["services"]["web"]["command"] = json!([
        "sh",
        "-c",
        format!(
            "echo booting; echo fatal: no config >&2; exit 3 # {}",
            w.marker
        )
    ]);
    // A readiness deadline far beyond what an exit takes to notice, so that
    // waiting for it cannot pass for failing fast on a slow machine.
    execution["services"]["web"]["readiness"]["timeoutMs"] = json!(120_000);
    w.wire(&execution);
    let started = Instant::now();
    let run = w.prove(&[]);
    let took = started.elapsed();
    run.expect_code(1);
    assert!(
        took < Duration::from_secs(60),
        "the users waited for the 120 s readiness timeout ({took:?})"
    );
    let doc = run.json();
    for capability in ["browser", "accessibility"] {
        let r = receipt(&doc, "browser", capability);
        assert_eq!(r["outcome"], "error", "{r}");
        let reason = r["reason"].as_str().unwrap_or("");
        assert!(reason.contains("exited with code 3"), "{reason}");
        assert!(reason.contains("fatal: no config"), "{reason}");
    }
    assert!(
        states(&doc).values().all(|s| s == "failed"),
        "{:?}",
        states(&doc)
    );
    w.assert_nothing_left();
}

#[test]
fn a_service_that_never_shows_its_identity_is_never_ready() {
    let w = BrowserWorld::new("svc-identity");
    let own = w.sb.channel("own-requests");
    let mut execution = logged_execution(&w, &own);
    // The server answers 200 with `x-app: profile-web`; the probe wants another app.
    execution["services"]["web"]["readiness"] = json!({
        "url": format!("http://127.0.0.1:{}/health", w.port),
        "expectHeader": {"x-app": "profile-api"},
        "expectBody": "run=${PROOFGRAPH_RUN_ID}",
        "timeoutMs": 2000,
    });
    w.wire(&execution);
    let run = w.prove(&[]);
    run.expect_code(1);
    let doc = run.json();
    let r = receipt(&doc, "browser", "browser");
    assert_eq!(r["outcome"], "error", "{r}");
    let reason = r["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("never observed ready") && reason.contains("profile-api"),
        "{reason}"
    );
    assert_eq!(provider(&doc, "browser")["action"], "ran");
    let requests = logged(&own);
    assert!(!requests.is_empty(), "the probe asked the service");
    assert!(
        requests.iter().all(|r| r.ends_with(" proofgraph-probe")),
        "only the probe may talk to a service never observed ready: {requests:?}"
    );
    w.assert_nothing_left();
}

/// The application reads a readiness URL once (`proofgraph_graph::readiness`) and the
/// sandbox's probe checks the URL it is handed; both must say yes to the same URLs, or a URL
/// `validate` accepts could be refused in the middle of a run.
#[test]
fn validate_and_the_probe_accept_the_same_readiness_urls() {
    use proofgraph_graph::readiness::ReadinessUrl;
    for url in [
        "http://127.0.0.1:4173/health",
        "http://localhost:80/",
        "http://localhost",
        "http://[::1]:8080/x?y=1",
        "http://EXAMPLE.test:1/",
        "http://x:4173?ready",
        "https://127.0.0.1:8443/health",
        "HTTPS://127.0.0.1:8443/",
        "ftp://x:21/",
        "http://u@x:1/",
        "http://u:p@x:1/",
        "http://x:1/#a",
        "http://x:0/",
        "http://x:65536/",
        "http:///",
        "http://:80/",
        "127.0.0.1:4173/health",
        "http://x:1/a b",
        "http://x:1/\u{7f}",
        "",
    ] {
        let validate = ReadinessUrl::parse(url).target().is_ok();
        let probe = proofgraph_sandbox::usable_url(url).is_ok();
        assert_eq!(
            validate, probe,
            "`{url}`: validate {validate}, probe {probe}"
        );
    }
}
