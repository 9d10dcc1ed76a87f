//! Secrets never leave (the truthfulness issue's defects 7 and 8, defence 5): an `envFrom`
//! value that a job puts in a test name, a failure message, a runner error, a critical
//! case's row, a Playwright annotation or attachment, its stdout or stderr — or that a
//! service puts in a readiness answer or in its log before it dies, or a setup command in
//! its output — reaches none of: `prove`'s stdout and stderr (JSON and human), `status`,
//! `explain`, `plan`, `show`, `receipt verify`, any file under `.proofgraph/` (every CAS
//! blob, every DSSE payload decoded, every JSON string and XML text or attribute decoded).
//!
//! Each test also shows the secret really went where it was put: the job wrote it to a
//! file outside the store, and the store holds the marker where it was.
//!
//! The property test at the end runs the real binary for random secrets (printable ASCII,
//! quotes, backslashes, `&<>`, non-ASCII) placed at random in every channel and every
//! report format: 24 cases by default, so that the suite stays fast; a longer run is
//! `PROPTEST_CASES=500 cargo nextest run -E 'test(secrets::)'`.

use std::path::Path;

use base64::Engine as _;
use proptest::prelude::*;
use serde_json::Value;

use crate::support::{
    Run, Sandbox, assert_emits, free_port, git_commit_all, run_bounded, statement,
};

/// Writes the report from a template, putting the secret (`$API_TOKEN`) where the template
/// says, encoded as each format's writers encode it; prints it when asked; records it in
/// the file `--log=` names (outside the store: proof that the job saw it).
const GEN: &str = r#"import base64, html, json, os, sys
t = os.environ["API_TOKEN"]
src, out = sys.argv[1], sys.argv[2]
flags = sys.argv[3:]
forms = {
    "raw": t,
    "json": json.dumps(t)[1:-1],
    "jsonu": json.dumps(t, ensure_ascii=False)[1:-1],
    "gojson": json.dumps(t, ensure_ascii=False)[1:-1].replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"),
    "xml": html.escape(t, quote=True),
    "b64": base64.b64encode(("attached " + t).encode()).decode(),
}
if "@@file@@" in open(src, encoding="utf-8").read():
    # An attachment the run wrote beside its report, named by absolute path.
    open("attached.txt", "w", encoding="utf-8").write("file says " + t)
    forms["file"] = json.dumps(os.path.abspath("attached.txt"))[1:-1]
text = open(src, encoding="utf-8").read()
for k, v in forms.items():
    text = text.replace("@@" + k + "@@", v)
open(out, "w", encoding="utf-8").write(text)
for f in flags:
    if f.startswith("--log="):
        open(f[6:], "a", encoding="utf-8").write(t + "\n")
if "--stdout" in flags:
    print("stdout says " + t, flush=True)
if "--stderr" in flags:
    print("stderr says " + json.dumps({"token": t}), file=sys.stderr, flush=True)
sys.exit(1 if "--fail" in flags else 0)
"#;

/// A service that answers every request by hand, with `$SERVICE_TOKEN` in a header
/// (`header`), in its body (`body`), or that prints it and dies before listening
/// (`crash`); `print-file` prints the file its third argument names, then dies.
const SERVER: &str = r#"import os, socket, sys
port, mode = int(sys.argv[1]), sys.argv[2]
if mode == "print-file":
    print("config: " + open(sys.argv[3], encoding="utf-8").read().strip(), flush=True)
    sys.exit(3)
t = os.environ["SERVICE_TOKEN"].encode()
if mode == "crash":
    print("starting with " + os.environ["SERVICE_TOKEN"], flush=True)
    sys.exit(3)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(16)
while True:
    c, _ = s.accept()
    try:
        c.recv(65536)
        header = t if mode == "header" else b"other"
        body = b"hello " + (t if mode == "body" else b"world")
        c.sendall(b"HTTP/1.1 200 OK\r\nX-App: v=" + header + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    finally:
        c.close()
"#;

/// The report formats, as `reportFormat` names them.
const FORMATS: [&str; 10] = [
    "jest",
    "vitest",
    "playwright",
    "junit",
    "tap",
    "go-test-json",
    "libtest-json",
    "ctrf",
    "mocha",
    "summary",
];

/// Where the job puts the secret.
#[derive(Debug, Clone, Copy, Default)]
struct Spots {
    /// In a failing test's name.
    name: bool,
    /// In its failure message (and, for Playwright, an annotation and an attachment).
    message: bool,
    /// In an error that belongs to no test (a suite that did not load, a hook, a bail out).
    runner: bool,
    /// On its stdout.
    stdout: bool,
    /// On its stderr, JSON-escaped.
    stderr: bool,
}

/// `@@enc@@` (the secret, encoded) where `on`, else a plain word.
fn put(on: bool, enc: &str) -> String {
    if on {
        format!("@@{enc}@@")
    } else {
        "plain".to_owned()
    }
}

/// A report template of `format` with one passing and one failing test, the secret at
/// `spots`; JSON strings are written ASCII-only (`\u00e9`, Python's default) unless
/// `unicode`. Returns the template and the report's file name.
fn template(format: &str, spots: Spots, unicode: bool) -> (String, &'static str) {
    let json = if unicode { "jsonu" } else { "json" };
    let name = put(spots.name, json);
    let msg = put(spots.message, json);
    let err = put(spots.runner, json);
    match format {
        "jest" | "vitest" => (
            format!(
                r#"{{"numTotalTests":2,"numPassedTests":1,"numFailedTests":1,"numPendingTests":0,"numTodoTests":0,"success":false,"testResults":[{{"name":"/w/a.test.js","status":"failed","message":"","assertionResults":[{{"ancestorTitles":["suite"],"title":"passes","fullName":"suite passes","status":"passed","failureMessages":[]}},{{"ancestorTitles":["suite"],"title":"fails {name}","fullName":"suite fails {name}","status":"failed","failureMessages":["Error: {msg}"]}}]}},{{"name":"/w/broken.test.js","status":"failed","message":"{err}","assertionResults":[]}}]}}"#
            ),
            "out.json",
        ),
        "mocha" => (
            format!(
                r#"{{"stats":{{"suites":1,"tests":2,"passes":1,"pending":0,"failures":2}},"tests":[{{"title":"passes","fullTitle":"suite passes","err":{{}}}},{{"title":"fails {name}","fullTitle":"suite fails {name}","err":{{"message":"{msg}"}}}}],"pending":[],"failures":[{{"title":"fails {name}","fullTitle":"suite fails {name}","err":{{"message":"{msg}"}}}},{{"title":"\"before all\" hook","fullTitle":"suite \"before all\" hook","err":{{"message":"{err}"}}}}],"passes":[{{"title":"passes","fullTitle":"suite passes","err":{{}}}}]}}"#
            ),
            "out.json",
        ),
        "ctrf" => (
            format!(
                r#"{{"results":{{"tool":{{"name":"jest"}},"summary":{{"tests":2,"passed":1,"failed":1,"pending":0,"skipped":0,"other":0,"start":1,"stop":2}},"tests":[{{"name":"passes","status":"passed","duration":1}},{{"name":"fails {name}","status":"failed","duration":1,"message":"{msg}","trace":"{err}"}}]}}}}"#
            ),
            "out.json",
        ),
        "playwright" => {
            let body = if spots.message { "@@b64@@" } else { "cGxhaW4=" };
            (
                format!(
                    r#"{{"config":{{}},"suites":[{{"title":"a.spec.ts","file":"a.spec.ts","specs":[{{"title":"passes","tests":[{{"projectName":"chromium","status":"expected","expectedStatus":"passed","annotations":[],"results":[{{"status":"passed","retry":0,"duration":1,"attachments":[]}}]}}]}},{{"title":"fails {name}","tests":[{{"projectName":"chromium","status":"unexpected","expectedStatus":"passed","annotations":[{{"type":"note","description":"{msg}"}}],"results":[{{"status":"failed","retry":0,"duration":1,"error":{{"message":"{msg}"}},"attachments":[{{"name":"shot {msg}","contentType":"text/plain","body":"{body}"}},{{"name":"file","contentType":"text/plain","path":"@@file@@"}}]}}]}}]}}]}}],"errors":[{{"message":"{err}"}}],"stats":{{"expected":1,"unexpected":1,"flaky":0,"skipped":0}}}}"#
                ),
                "out.json",
            )
        }
        "junit" => {
            let (name, msg, err) = (
                put(spots.name, "xml"),
                put(spots.message, "xml"),
                put(spots.runner, "xml"),
            );
            (
                format!(
                    r#"<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="suite" tests="2" failures="1" errors="0" skipped="0"><testcase classname="c" name="passes"/><testcase classname="c" name="fails {name}"><failure message="{msg}">{msg}</failure></testcase><error message="{err}">{err}</error></testsuite></testsuites>"#
                ),
                "out.xml",
            )
        }
        "tap" => {
            let (name, msg, err) = (
                put(spots.name, "raw"),
                put(spots.message, "raw"),
                put(spots.runner, "raw"),
            );
            (
                format!(
                    "TAP version 13\n1..2\nok 1 - passes\nnot ok 2 - fails {name}\n  ---\n  message: {msg}\n  ...\nBail out! {err}\n"
                ),
                "out.tap",
            )
        }
        "go-test-json" => {
            let (name, msg) = (put(spots.name, "gojson"), put(spots.message, "gojson"));
            let err = put(spots.runner, "raw");
            (
                format!(
                    "{{\"Action\":\"run\",\"Package\":\"p\",\"Test\":\"TestPasses\"}}\n{{\"Action\":\"pass\",\"Package\":\"p\",\"Test\":\"TestPasses\",\"Elapsed\":0}}\n{{\"Action\":\"run\",\"Package\":\"p\",\"Test\":\"TestFails {name}\"}}\n{{\"Action\":\"output\",\"Package\":\"p\",\"Test\":\"TestFails {name}\",\"Output\":\"{msg}\\n\"}}\n{{\"Action\":\"fail\",\"Package\":\"p\",\"Test\":\"TestFails {name}\",\"Elapsed\":0}}\nnote: {err}\n{{\"Action\":\"fail\",\"Package\":\"p\",\"Elapsed\":0}}\n"
                ),
                "out.jsonl",
            )
        }
        "libtest-json" => (
            format!(
                "{{ \"type\": \"suite\", \"event\": \"started\", \"test_count\": 2 }}\n{{ \"type\": \"test\", \"event\": \"started\", \"name\": \"passes\" }}\n{{ \"type\": \"test\", \"name\": \"passes\", \"event\": \"ok\" }}\n{{ \"type\": \"test\", \"event\": \"started\", \"name\": \"fails {name}\" }}\n{{ \"type\": \"test\", \"name\": \"fails {name}\", \"event\": \"failed\", \"stdout\": \"{msg}\" }}\n{{ \"type\": \"suite\", \"event\": \"failed\", \"passed\": 1, \"failed\": 1, \"ignored\": 0, \"measured\": 0, \"filtered_out\": 0, \"note\": \"{err}\" }}\n"
            ),
            "out.jsonl",
        ),
        "summary" => (
            format!(
                r#"{{"totalTests":2,"failed":1,"failing":["fails {name}"],"message":"{msg}","note":"{err}"}}"#
            ),
            "out.json",
        ),
        other => panic!("no template for {other}"),
    }
}

/// What a service does with its secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Service {
    /// Answers with it in `X-App`; the probe expects `x-app: profile`.
    Header,
    /// Answers with it in the body; the probe expects `profile-ok`.
    Body,
    /// Prints it and dies before it listens.
    Crash,
    /// Prints the provider's secret (`API_TOKEN`'s value, read from a file outside the
    /// run) and dies: a value is a secret in every job's output, not only its own.
    PrintsProviderSecret,
}

/// One workspace and run.
#[derive(Debug, Clone)]
struct Case {
    format: &'static str,
    spots: Spots,
    unicode: bool,
    sandbox: Option<&'static str>,
    /// A second provider with the identical command: one execution, judged twice.
    shared: bool,
    service: Option<Service>,
    /// `criticalCases` of the test provider.
    critical: Option<&'static str>,
    /// A catalog whose setup command prints the secret (from a file) and fails.
    setup: bool,
    /// The template, when not [`template`]'s.
    report: Option<(String, &'static str)>,
    /// The command exits 1 (a failing suite).
    fail: bool,
}

impl Case {
    fn new(format: &'static str, spots: Spots) -> Self {
        Case {
            format,
            spots,
            unicode: false,
            sandbox: None,
            shared: false,
            service: None,
            critical: None,
            setup: false,
            report: None,
            fail: true,
        }
    }
}

/// A secret to hide and the sandbox it runs in.
struct World {
    sb: Sandbox,
    secret: String,
    /// `SERVICE_TOKEN`'s value (the same secret unless a test says otherwise).
    service_secret: String,
}

impl World {
    fn new(secret: &str) -> Self {
        World {
            sb: Sandbox::new(),
            secret: secret.to_owned(),
            service_secret: secret.to_owned(),
        }
    }

    /// Where the job records the secret it saw (outside the store): a channel to the test.
    fn seen_log(&self) -> std::path::PathBuf {
        std::path::PathBuf::from(self.sb.channel("seen").env())
    }

    /// A file outside the run holding the provider's secret (read by a service or setup).
    fn secret_file(&self) -> std::path::PathBuf {
        self.sb.path().join("secret.txt")
    }

    fn build(&self, case: &Case) {
        let sb = &self.sb;
        sb.openspec_root("");
        fs_err::write(self.secret_file(), &self.secret).expect("write the secret file");
        // The service and the setup read it from the host: their worlds hold it when named.
        sb.name_host_path(&self.secret_file());
        sb.write("gen.py", GEN);
        sb.write("server.py", SERVER);
        let (report, out) = case
            .report
            .clone()
            .unwrap_or_else(|| template(case.format, case.spots, case.unicode));
        sb.write("report.tpl", report);
        sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
        let mut claims = String::from(
            "version: 2\nclaims:\n  - {id: works, scenario: It works, capabilities: [test]}\n",
        );
        if case.service.is_some() {
            claims.push_str("  - {id: serves, scenario: It serves, capabilities: [integration]}\n");
        }
        sb.write("openspec/changes/add-x/evidence.yaml", claims);
        let mut flags = vec![format!("\"--log={}\"", self.seen_log().display())];
        if case.spots.stdout {
            flags.push("--stdout".to_owned());
        }
        if case.spots.stderr {
            flags.push("--stderr".to_owned());
        }
        if case.fail {
            flags.push("--fail".to_owned());
        }
        let command = format!("[python3, gen.py, report.tpl, {out}, {}]", flags.join(", "));
        let provider = |name: &str, extra: &str| {
            format!(
                "  {name}:\n    adapter: test-discovery\n    command: {command}\n    report: {out}\n    reportFormat: {format}\n    envFrom: [API_TOKEN]\n{extra}",
                format = case.format
            )
        };
        let mut execution = String::from("version: 1\nproviders:\n");
        let critical = case
            .critical
            .map(|c| format!("    criticalCases: [{c}]\n"))
            .unwrap_or_default();
        execution.push_str(&provider("test", &critical));
        if case.shared {
            execution.push_str(&provider(
                "test-b",
                "    capability: test\n    discoveryProvider: discovery-b\n",
            ));
            execution.push_str(&provider("discovery-b", "    capability: discovery\n"));
        }
        if let Some(service) = case.service {
            let port = free_port();
            let (mode, readiness) = match service {
                Service::Header => ("header", "expectHeader: {x-app: profile}"),
                Service::Body => ("body", "expectBody: profile-ok"),
                Service::Crash => ("crash", "expectHeader: {x-app: profile}"),
                Service::PrintsProviderSecret => ("print-file", "expectHeader: {x-app: profile}"),
            };
            execution.push_str(&format!(
                "  itest:\n    adapter: command\n    capability: integration\n    command: [python3, -c, \"print(1)\"]\n    service: web\nservices:\n  web:\n    command: [python3, server.py, \"{port}\", {mode}, \"{file}\"]\n    envFrom: [SERVICE_TOKEN]\n    readiness:\n      url: http://127.0.0.1:{port}/health\n      {readiness}\n      timeoutMs: 1500\n",
                file = self.secret_file().display()
            ));
        }
        sb.write("openspec/changes/add-x/execution.yaml", execution);
        if case.setup {
            sb.write(
                "proofgraph.yaml",
                format!(
                    "version: 1\nrepositories:\n  root:\n    path: .\n    setup: [[sh, -c, \"echo installing with $(cat {}); exit 4\"]]\n",
                    self.secret_file().display()
                ),
            );
        }
        git_commit_all(&sb.work());
    }

    fn vars(&self) -> [(&str, &str); 2] {
        [
            ("API_TOKEN", self.secret.as_str()),
            ("SERVICE_TOKEN", self.service_secret.as_str()),
        ]
    }

    /// Runs proofgraph with the secrets in its environment.
    fn run(&self, args: &[&str]) -> Run {
        run_bounded(
            &self.sb,
            &self.sb.work(),
            args,
            &self.vars(),
            std::time::Duration::from_secs(120),
        )
    }

    /// Runs proofgraph without them: what it prints then comes from the store alone.
    fn run_bare(&self, args: &[&str]) -> Run {
        run_bounded(
            &self.sb,
            &self.sb.work(),
            args,
            &[],
            std::time::Duration::from_secs(120),
        )
    }

    /// `prove` for `case`.
    fn prove(&self, case: &Case) -> Run {
        let mut args = vec!["prove", "add-x", "--json", "--keep-going"];
        if let Some(mode) = case.sandbox {
            args.extend(["--sandbox", mode]);
        }
        self.run(&args)
    }

    /// Every leak of every secret in `prove`'s output, in what other commands print and
    /// in every file under `.proofgraph/`. Without the secrets in the environment a
    /// command cannot redact what it prints, so what it prints then shows the store as it
    /// is. `thorough`: every reading command, with and without the secrets, in JSON and
    /// for people, and `prove` again; otherwise `status` and `receipt verify` of each
    /// receipt without them, and `status` for people with them.
    fn leaks(&self, prove: &Run, thorough: bool) -> Vec<String> {
        let secrets = [self.secret.as_str(), self.service_secret.as_str()];
        let mut found = Vec::new();
        let mut outputs = vec![(
            "prove".to_owned(),
            prove.stdout.clone(),
            prove.stderr.clone(),
        )];
        let mut commands: Vec<(Vec<String>, bool)> = Vec::new();
        let owned = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        commands.push((owned(&["status", "add-x", "--json"]), false));
        commands.push((owned(&["status", "add-x"]), true));
        for sha in receipt_shas(prove) {
            commands.push((owned(&["receipt", "verify", &sha, "--json"]), false));
            if thorough {
                commands.push((owned(&["receipt", "verify", &sha]), false));
            }
        }
        if thorough {
            for args in [
                &["status", "add-x", "--json"][..],
                &["status", "add-x"],
                &["explain", "add-x", "test", "--json"],
                &["explain", "add-x", "test"],
                &["plan", "add-x", "--json"],
                &["show", "add-x", "--json"],
                // Again: it runs what failed, and prints for people.
                &["prove", "add-x", "--keep-going"],
            ] {
                commands.push((owned(args), true));
                commands.push((owned(args), false));
            }
        }
        for (args, with) in &commands {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (how, run) = if *with {
                ("with", self.run(&args))
            } else {
                ("without", self.run_bare(&args))
            };
            outputs.push((
                format!("`{}` {how} the secrets", args.join(" ")),
                run.stdout,
                run.stderr,
            ));
        }
        for (what, stdout, stderr) in &outputs {
            for secret in secrets {
                leaks_in(
                    secret,
                    &format!("{what}: stdout"),
                    stdout.as_bytes(),
                    0,
                    &mut found,
                );
                leaks_in(
                    secret,
                    &format!("{what}: stderr"),
                    stderr.as_bytes(),
                    0,
                    &mut found,
                );
            }
        }
        let mut files = Vec::new();
        walk(&self.sb.work().join(".proofgraph"), &mut files);
        assert!(
            files.iter().any(|f| f.contains("/cas/")),
            "the store holds no blob: {files:?}"
        );
        for file in files {
            let bytes = fs_err::read(&file).unwrap_or_default();
            for secret in secrets {
                leaks_in(secret, &file, &bytes, 0, &mut found);
            }
        }
        found
    }

    /// Everything the store holds that shows a redaction: blob names, and for envelopes
    /// the decoded payload.
    fn redacted_in_store(&self) -> String {
        let mut files = Vec::new();
        walk(&self.sb.work().join(".proofgraph/cas"), &mut files);
        let mut text = String::new();
        for file in files {
            let bytes = fs_err::read(&file).unwrap_or_default();
            text.push_str(&String::from_utf8_lossy(&bytes));
            if let Ok(envelope) = serde_json::from_slice::<Value>(&bytes)
                && let Some(payload) = envelope["payload"].as_str()
                && let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(payload)
            {
                text.push_str(&String::from_utf8_lossy(&decoded));
            }
            text.push('\n');
        }
        text
    }

    /// The job really saw the secret: it recorded it outside the store.
    fn assert_job_saw_it(&self) {
        let seen = self.sb.channel("seen").read();
        assert!(
            seen.contains(&self.secret),
            "the job never saw the secret (seen.log: {seen:?})"
        );
    }
}

/// Every receipt `prove --json` lists.
fn receipt_shas(prove: &Run) -> Vec<String> {
    let Ok(doc) = serde_json::from_str::<Value>(&prove.stdout) else {
        return Vec::new();
    };
    doc["providers"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["receipts"].as_array().into_iter().flatten())
        .filter_map(|r| r["sha256"].as_str().map(str::to_owned))
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = fs_err::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            walk(&path, out);
        } else if meta.is_file() {
            out.push(path.display().to_string());
        } else if meta.is_symlink() {
            // Action-cache entries and refs are links whose target is a digest.
            if let Ok(target) = fs_err::read_link(&path) {
                out.push(format!("{} -> {}", path.display(), target.display()));
            }
        }
    }
}

/// The forms a secret takes where this test looks, written here independently of the
/// product: raw; JSON-escaped as serde_json, Python (ASCII only) and Go (HTML-safe) write
/// it; XML-escaped with named or numeric references; as Rust's `{:?}` quotes it.
fn forms(secret: &str) -> Vec<String> {
    let plain = serde_json::to_string(secret).expect("a string");
    let plain = plain[1..plain.len() - 1].to_owned();
    let mut ascii = String::new();
    for c in secret.chars() {
        match c {
            '"' => ascii.push_str("\\\""),
            '\\' => ascii.push_str("\\\\"),
            ' '..='~' => ascii.push(c),
            c => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    ascii.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    let go = plain
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    let xml = |quote: &str, apos: &str| {
        secret
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', quote)
            .replace('\'', apos)
    };
    let debug = format!("{secret:?}");
    let debug = debug[1..debug.len() - 1].to_owned();
    let mut all = vec![
        secret.to_owned(),
        plain,
        ascii,
        go,
        xml("&quot;", "&apos;"),
        xml("&quot;", "&#x27;"),
        xml("&#34;", "&#39;"),
        xml("\"", "'"),
        debug,
    ];
    all.sort();
    all.dedup();
    all
}

/// Records where `secret` occurs in `bytes`: in any of its [`forms`], or, read as JSON,
/// JSON lines or XML, in any decoded string, key, text or attribute (and, in a DSSE
/// envelope, in its decoded payload).
fn leaks_in(secret: &str, what: &str, bytes: &[u8], depth: usize, found: &mut Vec<String>) {
    if depth > 3 {
        return;
    }
    for form in forms(secret) {
        if bytes.windows(form.len()).any(|w| w == form.as_bytes()) {
            found.push(format!("{what}: holds {form:?}"));
        }
    }
    let json_docs: Vec<Value> = match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => vec![v],
        Err(_) => std::str::from_utf8(bytes)
            .map(|text| {
                text.lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .collect()
            })
            .unwrap_or_default(),
    };
    for doc in &json_docs {
        json_leaks(secret, what, doc, depth, found);
    }
    if let Ok(text) = std::str::from_utf8(bytes)
        && text.trim_start().starts_with('<')
        && let Ok(doc) = roxmltree::Document::parse(text)
    {
        for node in doc.descendants() {
            if let Some(t) = node.text()
                && t.contains(secret)
            {
                found.push(format!("{what}: XML text {t:?}"));
            }
            for a in node.attributes() {
                if a.value().contains(secret) {
                    found.push(format!(
                        "{what}: XML attribute {}={:?}",
                        a.name(),
                        a.value()
                    ));
                }
            }
        }
    }
}

fn json_leaks(secret: &str, what: &str, v: &Value, depth: usize, found: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            if s.contains(secret) {
                found.push(format!("{what}: JSON string {s:?}"));
            }
            // A string may hold another document (a message quoting JSON).
            if s.len() > secret.len() {
                leaks_in(secret, what, s.as_bytes(), depth + 1, found);
            }
        }
        Value::Array(items) => {
            for item in items {
                json_leaks(secret, what, item, depth, found);
            }
        }
        Value::Object(map) => {
            if let (Some(Value::String(payload)), Some(_)) =
                (map.get("payload"), map.get("payloadType"))
                && let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(payload)
            {
                leaks_in(
                    secret,
                    &format!("{what} (payload)"),
                    &decoded,
                    depth + 1,
                    found,
                );
            }
            for (k, item) in map {
                if k.contains(secret) {
                    found.push(format!("{what}: JSON key {k:?}"));
                }
                json_leaks(secret, what, item, depth, found);
            }
        }
        _ => {}
    }
}

/// The statement of `provider`'s `capability` receipt.
fn receipt_statement(w: &World, prove: &Run, provider: &str, capability: &str) -> Value {
    let doc = prove.json();
    let sha = crate::support::receipt(&doc, provider, capability)["sha256"]
        .as_str()
        .expect("a receipt")
        .to_owned();
    statement(&w.sb, &sha)
}

/// A secret with every character that is escaped somewhere: quotes, a backslash, `&<>`,
/// an apostrophe, a slash, non-ASCII.
const SECRET: &str = "s3cr\"et\\T0k&n<a>'/é-9f2c";

fn all_spots() -> Spots {
    Spots {
        name: true,
        message: true,
        runner: true,
        stdout: true,
        stderr: true,
    }
}

/// Defect 7: a secret in a test name and a failure message (and a runner error, stdout,
/// stderr) leaves no trace, for each report format, in three sandbox modes and with two
/// providers sharing one execution.
#[test]
fn a_secret_in_test_names_and_failure_messages_never_leaves() {
    let cases = [
        Case::new("jest", all_spots()),
        Case {
            unicode: true,
            sandbox: Some("copy"),
            ..Case::new("vitest", all_spots())
        },
        Case {
            sandbox: Some("none"),
            ..Case::new("junit", all_spots())
        },
        Case::new("tap", all_spots()),
        Case {
            shared: true,
            ..Case::new("go-test-json", all_spots())
        },
        Case::new("mocha", all_spots()),
        Case::new("playwright", all_spots()),
        // Passing: its receipt is reused by the next `prove`, which prints it again.
        Case {
            report: Some((
                r#"{"numTotalTests":1,"numPassedTests":1,"numFailedTests":0,"numPendingTests":0,"numTodoTests":0,"success":true,"testResults":[{"name":"/w/a.test.js","status":"passed","message":"","assertionResults":[{"ancestorTitles":["suite"],"title":"passes @@json@@","fullName":"suite passes @@json@@","status":"passed","failureMessages":[]}]}]}"#.to_owned(),
                "out.json",
            )),
            fail: false,
            ..Case::new("jest", all_spots())
        },
        Case::new("libtest-json", all_spots()),
        Case::new("ctrf", all_spots()),
        Case::new("summary", all_spots()),
    ];
    for (i, case) in cases.into_iter().enumerate() {
        let w = World::new(SECRET);
        w.build(&case);
        let prove = w.prove(&case);
        prove.expect_code(if case.fail { 1 } else { 0 });
        w.assert_job_saw_it();
        let passing = !case.fail;
        let found = w.leaks(&prove, i < 2 || passing);
        assert!(
            found.is_empty(),
            "{}: the secret leaked:\n{found:#?}",
            case.format
        );
        // Where it was, the marker is.
        let stored = w.redacted_in_store();
        assert!(
            stored.contains("stdout says [redacted]"),
            "{}: the stored log shows the redaction",
            case.format
        );
        if case.format != "summary" {
            let st = receipt_statement(&w, &prove, "test", "test");
            let named = if passing {
                "passedTests"
            } else {
                "failedTests"
            };
            let names = st["predicate"][named].to_string();
            assert!(
                names.contains("[redacted]"),
                "{}: the test's name, redacted: {names}",
                case.format
            );
        }
        if case.format == "playwright" {
            // Both attachments were kept, redacted: the inline body and the file.
            for kept in ["attached [redacted]", "file says [redacted]"] {
                assert!(stored.contains(kept), "playwright: {kept} is stored");
            }
        }
        // The reason says what failed, redacted, not that the report was unreadable.
        let doc = prove.json();
        let reason = crate::support::receipt(&doc, "test", "test")["reason"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            !reason.contains("could not be read"),
            "{}: the redacted report still reads: {reason}",
            case.format
        );
    }
}

/// Defect 8: a service whose readiness answer carries its `envFrom` value (a header, the
/// body) makes the probe's mismatch message, which reaches JSON output, stderr and the
/// receipt; so does the end of the log of a service that printed it and died — its own
/// secret, or another job's.
#[test]
fn a_secret_in_a_readiness_answer_or_a_service_log_never_leaves() {
    for service in [
        Service::Header,
        Service::Body,
        Service::Crash,
        Service::PrintsProviderSecret,
    ] {
        let mut w = World::new(SECRET);
        if service == Service::PrintsProviderSecret {
            // The service's own secret is another value; the one it prints is the
            // provider's.
            w.service_secret = "the-service's-own-token".to_owned();
        }
        let case = Case {
            service: Some(service),
            fail: false,
            ..Case::new("jest", Spots::default())
        };
        w.build(&case);
        let prove = w.prove(&case);
        prove.expect_code(1);
        let doc = prove.json();
        let itest = crate::support::receipt(&doc, "itest", "integration");
        assert_eq!(itest["outcome"], "error", "{service:?}: {doc:#}");
        let reason = itest["reason"].as_str().unwrap_or_default().to_owned();
        assert!(
            reason.contains("[redacted]"),
            "{service:?}: the reason shows where the secret was: {reason}"
        );
        let found = w.leaks(&prove, service == Service::Header);
        assert!(
            found.is_empty(),
            "{service:?}: the secret leaked:\n{found:#?}"
        );
    }
}

/// A secret in a critical case's row (a test name the case matched at a word boundary,
/// and a Playwright `critical-case` annotation) is redacted in the reason that names it.
#[test]
fn a_secret_in_a_critical_case_row_never_leaves() {
    let skipped_row = r#"{"numTotalTests":2,"numPassedTests":1,"numFailedTests":0,"numPendingTests":1,"numTodoTests":0,"success":true,"testResults":[{"name":"/w/a.test.js","status":"passed","message":"","assertionResults":[{"ancestorTitles":["suite"],"title":"passes","fullName":"suite passes","status":"passed","failureMessages":[]},{"ancestorTitles":[],"title":"login @@json@@","fullName":"login @@json@@","status":"pending","failureMessages":[]}]}]}"#;
    let annotated = r#"{"config":{},"suites":[{"title":"a.spec.ts","file":"a.spec.ts","specs":[{"title":"passes","tests":[{"projectName":"chromium","status":"expected","expectedStatus":"passed","annotations":[],"results":[{"status":"passed","retry":0,"duration":1,"attachments":[]}]}]},{"title":"later","tests":[{"projectName":"chromium","status":"skipped","expectedStatus":"skipped","annotations":[{"type":"critical-case","description":"login @@json@@"}],"results":[{"status":"skipped","retry":0,"duration":0,"attachments":[]}]}]}]}],"errors":[],"stats":{"expected":1,"unexpected":0,"flaky":0,"skipped":1}}"#;
    let explicit = r#"{"numTotalTests":1,"numPassedTests":1,"numFailedTests":0,"numPendingTests":0,"numTodoTests":0,"success":true,"testResults":[{"name":"/w/a.test.js","status":"passed","message":"","assertionResults":[{"ancestorTitles":[],"title":"passes","fullName":"passes","status":"passed","failureMessages":[]}]}],"criticalCases":[{"id":"login @@json@@","status":"fail"}]}"#;
    for (format, report) in [
        ("jest", skipped_row),
        ("playwright", annotated),
        ("jest", explicit),
    ] {
        let w = World::new(SECRET);
        let case = Case {
            critical: Some("login"),
            report: Some((report.to_owned(), "out.json")),
            fail: false,
            ..Case::new(format, Spots::default())
        };
        w.build(&case);
        let prove = w.prove(&case);
        prove.expect_code(1);
        w.assert_job_saw_it();
        let doc = prove.json();
        let reason = crate::support::receipt(&doc, "test", "test")["reason"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            reason.contains("critical case") && reason.contains("[redacted]"),
            "{format}: the reason names the row, redacted: {reason}"
        );
        let found = w.leaks(&prove, false);
        assert!(found.is_empty(), "{format}: the secret leaked:\n{found:#?}");
    }
}

/// A setup command's output (the catalog's `setup`), quoted in the reason of every
/// provider of its repository when it fails, is redacted too.
#[test]
fn a_secret_in_a_setup_commands_output_never_leaves() {
    let w = World::new(SECRET);
    let case = Case {
        setup: true,
        ..Case::new("jest", Spots::default())
    };
    w.build(&case);
    let prove = w.prove(&case);
    prove.expect_code(1);
    let doc = prove.json();
    let reason = crate::support::receipt(&doc, "test", "test")["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        reason.contains("setup") && reason.contains("installing with [redacted]"),
        "the reason quotes the setup's log, redacted: {reason}"
    );
    let found = w.leaks(&prove, false);
    assert!(found.is_empty(), "the secret leaked:\n{found:#?}");
}

/// A value too short to be redacted is said so, by `validate` and `prove`, at the
/// `envFrom` entry; it is still passed to the job.
#[test]
fn a_value_too_short_to_redact_is_reported_not_silently_leaked() {
    let w = World::new("short");
    w.build(&Case {
        fail: false,
        ..Case::new("jest", Spots::default())
    });
    let validate = w.run(&["validate", "add-x", "--json"]);
    validate.expect_code(0);
    let doc = validate.json();
    let issues = &doc["items"][0]["issues"];
    let issue = issues
        .as_array()
        .into_iter()
        .flatten()
        .find(|i| i["code"] == "secret_too_short")
        .unwrap_or_else(|| panic!("no secret_too_short in {doc:#}"));
    assert_eq!(issue["path"], "openspec/changes/add-x/execution.yaml");
    assert!(issue["line"].as_u64().is_some_and(|l| l > 0), "{issue}");
    let prove = w.prove(&Case::new("jest", Spots::default()));
    prove.expect_code(1);
    assert_emits!(prove.status_codes(), "secret_too_short", "{}", prove.stdout);
    w.assert_job_saw_it();
    // Unset or long enough: nothing to say.
    let quiet = run_bounded(
        &w.sb,
        &w.sb.work(),
        &["validate", "add-x", "--json"],
        &[("API_TOKEN", "long-enough-value")],
        std::time::Duration::from_secs(60),
    );
    assert!(
        !quiet.stdout.contains("secret_too_short"),
        "{}",
        quiet.stdout
    );
}

/// Prints the secret (`$API_TOKEN`) the ways URL encoders, shells and JSON writers write
/// it, each in pieces flushed apart (so that the sandbox's reads split it), with its base64
/// inside an `Authorization: Basic` value, and ends the stream with the first 12 bytes of
/// it (a job cut off mid-secret); records what it printed in the file `--log=` names.
const ENCODINGS: &str = r#"import base64, json, os, re, shlex, subprocess, sys, time, urllib.parse
t = os.environ["API_TOKEN"]
def bash(script, locale):
    env = dict(os.environ, LC_ALL=locale)
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env).stdout.strip()
forms = {
    "quote": urllib.parse.quote(t, safe=""),
    "quote-lower": re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), urllib.parse.quote(t, safe="")),
    "quote-path": urllib.parse.quote(t),
    "quote_plus": urllib.parse.quote_plus(t),
    "shlex": shlex.quote(t),
    "bash-q": bash('printf %q "$API_TOKEN"', "C.UTF-8"),
    "bash-Q": bash('echo "${API_TOKEN@Q}"', "C.UTF-8"),
    "bash-q-c": bash('printf %q "$API_TOKEN"', "C"),
    "json": json.dumps(t),
}
out = sys.stdout.buffer
for name, form in forms.items():
    data = ("%s: %s\n" % (name, form)).encode()
    half = len(data) // 2
    out.write(data[:half]); out.flush(); time.sleep(0.02)
    out.write(data[half:]); out.flush()
basic = base64.b64encode(("user:" + t).encode()).decode()
out.write(("Authorization: Basic %s\n" % basic).encode())
out.write(("last words: " + t)[:12 + len("last words: ")].encode())
out.flush()
with open(sys.argv[1][len("--log="):], "w", encoding="utf-8") as f:
    f.write(t + "\n" + json.dumps(forms) + "\n" + basic + "\n")
"#;

/// A secret in the forms URL encoders (percent-encoding in both hex cases, form-encoding),
/// shells (`printf %q`, `${x@Q}`, `shlex.quote`) and JSON writers give it, printed in
/// pieces that the sandbox reads apart, never reaches the kept log, stdout or the store;
/// nor do the first bytes of it that a stream ends with; its base64 is replaced and warned
/// about (`secret_encoded_base64`).
#[test]
fn a_secret_in_url_shell_and_json_encodings_never_leaves() {
    // A space, quotes, a slash, `&`, `$`, `=` and non-ASCII: each encoder changes it.
    let secret = "tok en/'q\"$x&y=z-é9f2c";
    let w = World::new(secret);
    let sb = &w.sb;
    sb.openspec_root("");
    sb.write("enc.py", ENCODINGS);
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: works, scenario: It works, capabilities: [integration]}\n",
    );
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        format!(
            "version: 1\nproviders:\n  test:\n    adapter: command\n    capability: integration\n    command: [python3, enc.py, \"--log={}\"]\n    envFrom: [API_TOKEN]\n",
            w.seen_log().display()
        ),
    );
    git_commit_all(&sb.work());
    let prove = w.run(&["prove", "add-x", "--json"]);
    prove.expect_code(0);
    w.assert_job_saw_it();
    // The job wrote what it printed to the `seen` channel (a FIFO: read it as a channel).
    let seen = sb.channel("seen").read();
    let printed: serde_json::Map<String, Value> =
        serde_json::from_str(seen.lines().nth(1).expect("the forms")).expect("JSON");
    let basic = seen.lines().nth(2).expect("the base64").to_owned();
    // Each form differs from the raw secret and from the others' overlap with it.
    assert!(
        printed.values().all(|f| f.as_str() != Some(secret)),
        "{printed:?}"
    );
    assert_emits!(
        prove.status_codes(),
        "secret_encoded_base64",
        "{}",
        prove.stdout
    );
    let log = w.run(&["log", "add-x", "test"]);
    log.expect_code(0);
    for (name, form) in &printed {
        let form = form.as_str().expect("a string");
        assert!(
            !log.stdout.contains(form),
            "{name} {form:?} in {}",
            log.stdout
        );
        let line = log
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name}: ")))
            .unwrap_or_default();
        // The quotes around a shell-quoted value stay; what is between them goes.
        assert!(
            [
                "[redacted]",
                "'[redacted]'",
                "$'[redacted]'",
                "\"[redacted]\""
            ]
            .iter()
            .any(|shown| line == format!("{name}: {shown}")),
            "{name}: {}",
            log.stdout
        );
    }
    assert!(!log.stdout.contains(&basic), "{}", log.stdout);
    assert!(
        log.stdout.contains("Authorization: Basic "),
        "{}",
        log.stdout
    );
    // The stream's last 12 bytes were the secret's first 12.
    assert!(
        log.stdout.trim_end().ends_with("last words: [redacted]"),
        "{}",
        log.stdout
    );
    let prefix: String = secret.chars().take(9).collect();
    assert!(!log.stdout.contains(&prefix), "{}", log.stdout);
    // Nowhere else either: every output, every stored file, in every form the test knows.
    let mut found = w.leaks(&prove, false);
    let mut files = Vec::new();
    walk(&sb.work().join(".proofgraph"), &mut files);
    for file in files {
        let bytes = fs_err::read(&file).unwrap_or_default();
        for form in printed
            .values()
            .filter_map(Value::as_str)
            .chain([basic.as_str(), prefix.as_str()])
        {
            if bytes.windows(form.len()).any(|w| w == form.as_bytes()) {
                found.push(format!("{file}: holds {form:?}"));
            }
        }
    }
    assert!(found.is_empty(), "the secret leaked:\n{found:#?}");
}

// The property: random secrets, random placements, every format.

fn secret_strategy() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            6 => proptest::char::range('!', '~'),
            1 => Just(' '),
            1 => Just('"'),
            1 => Just('\\'),
            1 => Just('&'),
            1 => Just('<'),
            1 => Just('>'),
            1 => Just('\''),
            1 => Just('é'),
            1 => Just('→'),
            1 => Just('😀'),
        ],
        8..20,
    )
    .prop_map(|chars| chars.into_iter().collect::<String>())
    // At least 8 bytes (shorter values are not secrets), and not blank at either end
    // (a job's `print` and a header keep them, but nothing here depends on that).
    .prop_filter("a secret of at least 8 bytes", |s| {
        s.len() >= 8 && s.trim() == s
    })
}

proptest! {
    #![proptest_config(crate::support::beside_source(ProptestConfig {
        cases: crate::support::proptest_cases(24),
        // Each case runs the binary several times; shrinking a failure would take long.
        max_shrink_iters: 16,
        ..ProptestConfig::default()
    }))]

    /// For a random secret in random channels of a random format (and, sometimes, a
    /// service's readiness answer), no form of it reaches any output or any stored file.
    #[test]
    fn no_secret_reaches_any_output_or_stored_file(
        secret in secret_strategy(),
        format in proptest::sample::select(FORMATS.to_vec()),
        spots in (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
        unicode in any::<bool>(),
        service in proptest::option::weighted(0.3, prop_oneof![Just(Service::Header), Just(Service::Body), Just(Service::Crash)]),
        sandbox in proptest::sample::select(vec![None, Some("copy"), Some("none")]),
    ) {
        let (name, message, runner, stdout, stderr) = spots;
        let spots = Spots { name, message, runner, stdout, stderr };
        let w = World::new(&secret);
        let case = Case { unicode, service, sandbox, ..Case::new(format, spots) };
        w.build(&case);
        let prove = w.prove(&case);
        prop_assert_eq!(prove.code, Some(1), "{}\n{}", prove.stdout, prove.stderr);
        w.assert_job_saw_it();
        let found = w.leaks(&prove, false);
        prop_assert!(found.is_empty(), "{:?} in {:?}: the secret leaked:\n{:#?}", secret, case, found);
    }
}
