//! The workspace catalog (`proofgraph.yaml`) enters a fingerprint only through what can
//! change a result (docs/workspaces.md, "What of the catalog a fingerprint binds"): editing
//! the remote cache's timeouts, adding or rotating a trusted key, the log bound, the default
//! sandbox mode, the order of keys, comments and whitespace leaves every receipt current;
//! editing a bound field (`hostPaths`, a repository's setup or caches) reruns exactly the
//! providers whose world it changes — the ones that run in that repository, read its files or
//! talk to a service that runs there — and `explain`, `plan` and `rerun` name the field.

use serde_json::Value;

use crate::support::{Sandbox, free_port, git};

/// The providers: `app-unit` sees `app` alone; `app-contract` runs in `app` and reads a
/// file of `api`; `app-served` runs in `app` and talks to `server`, a service that runs in
/// `api`; `api-unit` runs in `api`.
const ALL: [&str; 4] = ["api-unit", "app-contract", "app-served", "app-unit"];

struct Workspace {
    sb: Sandbox,
    /// The trusted keys' public keys (PEM), made for the test.
    keys: [String; 2],
}

/// The catalog, with the parts the test edits given as they are now.
#[derive(Clone)]
struct Catalog {
    api_setup: &'static str,
    app_caches: &'static str,
    host_paths: &'static str,
    timeout_ms: u64,
    trusted: Vec<usize>,
    keep_bytes: u64,
    sandbox: &'static str,
}

impl Catalog {
    fn start() -> Self {
        Catalog {
            api_setup: "[[\"true\"]]",
            app_caches: "[]",
            host_paths: "[\"~/tools\"]",
            timeout_ms: 5000,
            trusted: Vec::new(),
            keep_bytes: 65536,
            sandbox: "worktree",
        }
    }

    fn trusted_keys(&self, keys: &[String; 2]) -> String {
        if self.trusted.is_empty() {
            return "trustedKeys: []\n".to_owned();
        }
        let mut out = "trustedKeys:\n".to_owned();
        for k in &self.trusted {
            out.push_str(&format!(
                "  - name: key{k}\n    publicKey: \"{}\"\n",
                keys[*k].replace('\n', "\\n")
            ));
        }
        out
    }

    /// As a person writes it.
    fn text(&self, keys: &[String; 2]) -> String {
        format!(
            "version: 1\nrepositories:\n  app:\n    path: .\n    caches: {}\n  api:\n    path: api\n    setup: {}\nsandbox: {}\n{}cache:\n  timeoutMs: {}\nhostPaths: {}\nlogs:\n  keepBytes: {}\n",
            self.app_caches,
            self.api_setup,
            self.sandbox,
            self.trusted_keys(keys),
            self.timeout_ms,
            self.host_paths,
            self.keep_bytes,
        )
    }

    /// The same catalog written another way: keys in another order, comments, blank lines,
    /// flow style, quoting, `./` and a trailing `/`.
    fn rewritten(&self, keys: &[String; 2]) -> String {
        format!(
            "# The workspace's catalog.\n\nlogs: {{keepBytes: {}}}   # what a receipt keeps\nhostPaths: {}\n\n{}cache: {{ timeoutMs: {} }}\nsandbox: \"{}\"\nrepositories:\n  api:\n    setup: {}   # the API's tools\n    path: ./api/\n\n  app: {{caches: {}, path: \"./\"}}\nversion: 1\n",
            self.keep_bytes,
            self.host_paths,
            self.trusted_keys(keys),
            self.timeout_ms,
            self.sandbox,
            self.api_setup,
            self.app_caches,
        )
    }
}

impl Workspace {
    fn new() -> Self {
        Self::with("")
    }

    /// The workspace with `extra` providers (lines of `providers:`).
    fn with(extra: &str) -> Self {
        let sb = Sandbox::new();
        let port = free_port();
        sb.openspec_root("");
        fs_err::create_dir_all(sb.home().join("tools")).expect("mkdir tools");
        fs_err::create_dir_all(sb.home().join("more-tools")).expect("mkdir more tools");
        sb.write(".gitignore", ".proofgraph/\napi/\n");
        sb.write("src/a.txt", "ok\n");
        sb.write("probe.py", format!("import urllib.request\nassert urllib.request.urlopen('http://127.0.0.1:{port}/x').read() == b'answer-42'\n"));
        sb.write("api/lib.txt", "ok\n");
        sb.write(
            "api/server.py",
            "import http.server, sys\nclass H(http.server.BaseHTTPRequestHandler):\n    def do_GET(self):\n        body = b'answer-42'\n        self.send_response(200)\n        self.send_header('content-length', str(len(body)))\n        self.end_headers()\n        self.wfile.write(body)\n    def log_message(self, *a):\n        pass\nhttp.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n",
        );
        sb.write("openspec/changes/x/proposal.md", "# x\n");
        sb.write(
            "openspec/changes/x/evidence.yaml",
            "version: 2\nclaims:\n  - {id: c, scenario: It holds, capabilities: [static-analysis]}\n",
        );
        sb.write(
            "openspec/changes/x/execution.yaml",
            format!(
                "version: 1\nproviders:\n\
                 \x20 app-unit: {{adapter: command, capability: static-analysis, repository: app, command: [grep, -qx, ok, src/a.txt]}}\n\
                 \x20 app-contract: {{adapter: command, capability: static-analysis, repository: app, inputs: [\"src/**\", \"api:lib.txt\"], command: [grep, -qx, ok, src/a.txt]}}\n\
                 \x20 app-served: {{adapter: command, capability: static-analysis, repository: app, inputs: [probe.py], service: server, command: [python3, probe.py]}}\n\
                 \x20 api-unit: {{adapter: command, capability: static-analysis, repository: api, command: [grep, -qx, ok, lib.txt]}}\n\
                 {extra}\
                 services:\n\
                 \x20 server:\n\
                 \x20   repository: api\n\
                 \x20   command: [python3, server.py, \"{port}\"]\n\
                 \x20   readiness: {{url: \"http://127.0.0.1:{port}/health\", expectBody: answer-42}}\n"
            ),
        );
        let keys = [1u8, 2].map(|seed| {
            let key = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
            proofgraph::attest::keys::public_key_to_pem(&key.verifying_key())
        });
        let ws = Workspace { sb, keys };
        ws.write(&Catalog::start());
        for dir in [ws.sb.work().join("api"), ws.sb.work()] {
            git(&dir, &["init", "-q", "-b", "main"]);
            git(&dir, &["add", "-A"]);
            git(&dir, &["commit", "-q", "-m", "start"]);
        }
        ws
    }

    fn dir(&self) -> std::path::PathBuf {
        self.sb.work()
    }

    fn write(&self, catalog: &Catalog) {
        self.write_text(&catalog.text(&self.keys));
    }

    fn write_text(&self, text: &str) {
        self.sb.write("proofgraph.yaml", text);
    }

    /// `prove`'s document, which must exit 0.
    fn prove(&self) -> Value {
        let run = self.sb.run(&self.dir(), &["prove", "x", "--json"]);
        assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
        run.json()
    }

    /// The providers `prove` ran, sorted.
    fn ran(&self) -> Vec<String> {
        ran(&self.prove())
    }

    /// The providers `plan` would run, sorted.
    fn planned(&self) -> Vec<String> {
        let run = self.sb.run(&self.dir(), &["plan", "x", "--json"]);
        assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
        let doc = run.json();
        let mut out: Vec<String> = doc["nodes"]
            .as_array()
            .unwrap_or_else(|| panic!("nodes: {doc:#}"))
            .iter()
            .filter(|n| n["kind"] == "provider" && n["action"] != "reuse")
            .map(|n| n["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        out.sort();
        out
    }

    /// `status`'s exit code: 0 when every requirement is passed by a current receipt.
    fn status(&self) -> Option<i32> {
        self.sb.run(&self.dir(), &["status", "x", "--json"]).code
    }

    /// The components `explain` names for `provider`.
    fn explained(&self, provider: &str) -> Vec<String> {
        let run = self
            .sb
            .run(&self.dir(), &["explain", "x", provider, "--json"]);
        assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
        let doc = run.json();
        let mut names: Vec<String> = doc["changes"]
            .as_array()
            .unwrap_or_else(|| panic!("changes: {doc:#}"))
            .iter()
            .map(|c| c["component"].as_str().unwrap_or_default().to_owned())
            .collect();
        for file in doc["inputs"]["changed"].as_array().into_iter().flatten() {
            names.push(format!("inputs: {}", file.as_str().unwrap_or_default()));
        }
        names
    }

    /// Everything is current: nothing to run, `status` passes, and `prove` runs nothing.
    fn assert_current(&self, after: &str) {
        assert_eq!(self.planned(), Vec::<String>::new(), "plan after {after}");
        assert_eq!(self.status(), Some(0), "status after {after}");
        for p in ALL {
            assert_eq!(
                self.explained(p),
                Vec::<String>::new(),
                "explain {p} after {after}"
            );
        }
        assert_eq!(self.ran(), Vec::<String>::new(), "prove after {after}");
    }
}

fn ran(doc: &Value) -> Vec<String> {
    let mut out: Vec<String> = doc["providers"]
        .as_array()
        .unwrap_or_else(|| panic!("providers: {doc:#}"))
        .iter()
        .filter(|p| p["action"] == "ran")
        .map(|p| p["provider"].as_str().unwrap_or_default().to_owned())
        .collect();
    out.sort();
    out
}

fn receipt_of(doc: &Value, provider: &str) -> String {
    doc["providers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["provider"] == provider)
        .and_then(|p| p["receipts"][0]["sha256"].as_str())
        .unwrap_or_else(|| panic!("a receipt of {provider}: {doc:#}"))
        .to_owned()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn editing_what_cannot_change_a_result_keeps_every_receipt_current() {
    let ws = Workspace::new();
    assert_eq!(ws.ran(), strings(&ALL));
    let mut catalog = Catalog::start();
    ws.assert_current("the first prove");

    catalog.timeout_ms = 90_000;
    ws.write(&catalog);
    ws.assert_current("editing cache.timeoutMs");

    catalog.trusted = vec![0];
    ws.write(&catalog);
    ws.assert_current("adding a trusted key");

    catalog.trusted = vec![1];
    ws.write(&catalog);
    ws.assert_current("rotating the trusted key");

    catalog.keep_bytes = 4096;
    catalog.sandbox = "copy";
    ws.write(&catalog);
    ws.assert_current("editing logs.keepBytes and the default sandbox mode");

    ws.write_text(&catalog.rewritten(&ws.keys));
    ws.assert_current("reordering keys, adding comments and whitespace");

    // The catalog edited and committed: still no input of any provider.
    git(&ws.dir(), &["add", "proofgraph.yaml"]);
    git(&ws.dir(), &["commit", "-q", "-m", "catalog"]);
    ws.assert_current("committing the catalog");
}

#[test]
fn editing_a_bound_field_reruns_exactly_the_providers_it_concerns() {
    let ws = Workspace::new();
    let first = ws.prove();
    assert_eq!(ran(&first), strings(&ALL));
    let contract = receipt_of(&first, "app-contract");
    let mut catalog = Catalog::start();

    // The setup of `api`: what runs there, what reads its files, what talks to its service.
    catalog.api_setup = "[[sh, -c, \"true\"]]";
    ws.write(&catalog);
    let affected = strings(&["api-unit", "app-contract", "app-served"]);
    assert_eq!(ws.planned(), affected);
    assert_eq!(ws.explained("api-unit"), strings(&["setup"]));
    assert_eq!(
        ws.explained("app-contract"),
        strings(&["catalog.repositories.api.setup"])
    );
    assert_eq!(
        ws.explained("app-served"),
        strings(&["catalog.repositories.api.setup"])
    );
    assert_eq!(ws.explained("app-unit"), Vec::<String>::new());
    // `rerun` of a receipt made before names the field it no longer matches.
    let run = ws
        .sb
        .run(&ws.dir(), &["rerun", "--json", contract.as_str()]);
    assert_eq!(run.code, Some(3), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("(catalog.repositories.api.setup differ)"),
        "{}",
        run.stdout
    );
    assert_eq!(ws.ran(), affected);
    ws.assert_current("proving the setup edit");

    // A cache of `app`: what runs there.
    catalog.app_caches = "[npm]";
    ws.write(&catalog);
    let affected = strings(&["app-contract", "app-served", "app-unit"]);
    assert_eq!(ws.planned(), affected);
    assert_eq!(ws.explained("app-unit"), strings(&["setup"]));
    assert_eq!(ws.ran(), affected);
    ws.assert_current("proving the caches edit");

    // `hostPaths`: every job's world.
    catalog.host_paths = "[\"~/tools\", \"~/more-tools\"]";
    ws.write(&catalog);
    assert_eq!(ws.planned(), strings(&ALL));
    for p in ALL {
        assert_eq!(ws.explained(p), strings(&["catalog.hostPaths"]), "{p}");
    }
    assert_eq!(ws.ran(), strings(&ALL));
    // The same entries in another order are the same world.
    catalog.host_paths = "[\"~/more-tools/\", \"~/tools\"]";
    ws.write(&catalog);
    ws.assert_current("reordering hostPaths");
}

/// A provider that reads the catalog's file has no such file: the catalog is never an input
/// (its bound fields are), so it is never in a job's world either.
#[test]
fn the_catalog_file_is_in_no_jobs_world() {
    let ws = Workspace::with(
        "  sees-catalog: {adapter: command, capability: static-analysis, repository: app, command: [sh, -c, \"[ -e src/a.txt ] && [ ! -e proofgraph.yaml ]\"]}\n",
    );
    let doc = ws.prove();
    assert!(ran(&doc).contains(&"sees-catalog".to_owned()), "{doc:#}");
    ws.assert_current("the first prove");
}

/// `plan --base` says which providers a commit's catalog edit concerns, naming the fields —
/// the catalog file itself is never a changed path — and a commit that edits only what
/// cannot change a result affects nothing.
#[test]
fn plan_base_names_the_catalog_fields_a_commit_changed() {
    let ws = Workspace::new();
    let dir = ws.dir();
    let affected = |label: &str| -> Vec<(String, String)> {
        let run = ws.sb.run(
            &dir,
            &[
                "plan", "x", "--base", "HEAD~1", "--base", "api=HEAD", "--json",
            ],
        );
        assert!(
            matches!(run.code, Some(0 | 2)),
            "{label}: {}\n{}",
            run.stdout,
            run.stderr
        );
        let doc = run.json();
        doc["providers"]
            .as_array()
            .unwrap_or_else(|| panic!("{label}: {doc:#}"))
            .iter()
            .filter(|p| p["affected"] == true)
            .map(|p| {
                (
                    p["id"].as_str().unwrap_or_default().to_owned(),
                    p["reason"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    let commit = |catalog: &Catalog, message: &str| {
        ws.write(catalog);
        git(&dir, &["commit", "-qam", message]);
    };
    let mut catalog = Catalog::start();
    catalog.timeout_ms = 1;
    catalog.trusted = vec![0];
    commit(&catalog, "a timeout and a trusted key");
    assert_eq!(affected("a timeout and a key"), Vec::new());

    catalog.api_setup = "[[sh, -c, \"true\"]]";
    commit(&catalog, "api's setup");
    assert_eq!(
        affected("api's setup"),
        vec![
            ("api-unit".to_owned(), "catalog changed: setup".to_owned()),
            (
                "app-contract".to_owned(),
                "catalog changed: repositories.api.setup".to_owned()
            ),
            (
                "app-served".to_owned(),
                "catalog changed: repositories.api.setup".to_owned()
            ),
        ]
    );

    catalog.host_paths = "[\"~/tools\", \"~/more-tools\"]";
    commit(&catalog, "hostPaths");
    let all: Vec<(String, String)> = ALL
        .iter()
        .map(|p| ((*p).to_owned(), "catalog changed: hostPaths".to_owned()))
        .collect();
    assert_eq!(affected("hostPaths"), all);
}
