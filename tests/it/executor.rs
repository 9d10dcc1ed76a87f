//! Choosing where providers run: `executor:` of `proofgraph.yaml` (every bad value refused
//! at its position), `--executor local|remote|auto` and `--remote-jobs` on `prove` and
//! `plan`, and `plan` saying per provider where it would run and why not remotely.

use serde_json::Value;

use crate::support::{Sandbox, assert_codes};

/// Every finding of a `validate --json` document as (code, `line:column`), sorted.
fn located(doc: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .flat_map(|item| item["issues"].as_array().into_iter().flatten())
        .map(|issue| {
            (
                issue["code"].as_str().unwrap_or_default().to_owned(),
                format!("{}:{}", issue["line"], issue["column"]),
            )
        })
        .collect();
    out.sort();
    out
}

/// The messages of every finding of a `validate --json` document.
fn messages(doc: &Value) -> String {
    doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .flat_map(|item| item["issues"].as_array().into_iter().flatten())
        .map(|issue| format!("{} | {}\n", issue["message"], issue["fix"]))
        .collect()
}

fn validate(sb: &Sandbox, catalog: &str) -> Value {
    sb.write("proofgraph.yaml", catalog);
    let run = sb.run(&sb.work(), &["validate", "--all", "--json"]);
    run.json()
}

#[test]
fn a_well_formed_executor_validates() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    let doc = validate(
        &sb,
        "version: 1\nexecutor:\n  remote: grpcs://engine.example.com:443/main\n  platform: {OSFamily: linux, ISA: x86-64, cores: \"4\"}\n  remoteJobs: 16\n  headersFromEnv: {Authorization: ENGINE_TOKEN}\n  connectTimeoutMs: 1000\n  timeoutMs: 9000\n  minBytesPerSecond: 1024\n",
    );
    assert_eq!(located(&doc), Vec::<(String, String)>::new(), "{doc}");
}

/// Each bad value of `executor` is refused where it is written, with the code the same
/// mistake has under `cache` where there is one.
#[test]
fn every_bad_executor_value_is_refused_at_its_position() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    for (yaml, code, at, said) in [
        (
            "executor:\n  platform: {OSFamily: linux}\n",
            "missing_field",
            "2:3",
            "missing the required field `remote`",
        ),
        (
            "executor:\n  remote: https://engine.example.com/main\n",
            "invalid_value",
            "2:11",
            "gRPC only",
        ),
        (
            "executor:\n  remote: s3://bucket/x\n",
            "invalid_value",
            "2:11",
            "`s3` is not a remote cache protocol",
        ),
        (
            "executor:\n  remote: grpc://user:secret@engine:50051\n",
            "invalid_value",
            "2:11",
            "holds credentials",
        ),
        (
            "executor:\n  remote: grpc://engine:50051/a/../main\n",
            "remote_instance_dot_segment",
            "2:11",
            "`remote` of `executor`",
        ),
        (
            "executor:\n  remote: \"grpc://engine:50051/a b\"\n",
            "invalid_value",
            "2:11",
            "the character ` ` (U+0020)",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  platform: {cores: 4}\n",
            "wrong_type",
            "3:21",
            "`cores` of `platform` of `executor` must be a string",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  platform: {OSFamily: \"\"}\n",
            "invalid_value",
            "3:24",
            "must not be empty",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  platform: [linux]\n",
            "wrong_type",
            "3:13",
            "a mapping of property names to strings",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  remoteJobs: 0\n",
            "invalid_value",
            "3:15",
            "`remoteJobs` of `executor` must be positive",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  remoteJobs: many\n",
            "wrong_type",
            "3:15",
            "`remoteJobs` of `executor` must be a non-negative integer",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  headersFromEnv: {\"bad header\": TOKEN}\n",
            "invalid_value",
            "3:20",
            "`bad header` in `headersFromEnv` of `executor` is not a header name",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  headersFromEnv: {Authorization: not-a-var}\n",
            "invalid_id",
            "3:35",
            "`not-a-var` is not a valid environment variable name",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  timeoutMs: 0\n",
            "invalid_value",
            "3:14",
            "`timeoutMs` of `executor` must be positive",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  connectTimeoutMs: 0\n",
            "invalid_value",
            "3:21",
            "`connectTimeoutMs` of `executor` must be positive",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  minBytesPerSecond: 0\n",
            "invalid_value",
            "3:22",
            "`minBytesPerSecond` of `executor` must be positive",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  remoteJob: 4\n",
            "unknown_key",
            "3:3",
            "did you mean `remoteJobs`",
        ),
        (
            "executor: grpc://engine:50051\n",
            "wrong_type",
            "1:11",
            "`executor` must be a mapping",
        ),
    ] {
        let doc = validate(&sb, &format!("version: 1\n{yaml}"));
        // The document's own line 1 is `version: 1`.
        let (line, column) = at.split_once(':').expect("line:column");
        let at = format!("{}:{column}", line.parse::<u64>().expect("a line") + 1);
        let found = located(&doc);
        assert_eq!(
            found,
            vec![(code.to_owned(), at.clone())],
            "{yaml}\n{}",
            messages(&doc)
        );
        let codes: Vec<&str> = found.iter().map(|(c, _)| c.as_str()).collect();
        assert_codes!(codes, [code], "{yaml}");
        assert!(messages(&doc).contains(said), "{yaml}\n{}", messages(&doc));
        assert!(!messages(&doc).contains("secret"), "{}", messages(&doc));
    }
}
