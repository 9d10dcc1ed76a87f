//! The trust anchor: the store's key counts only when it is pinned outside the
//! store (the user's pin, or `trustedKeys` in proofgraph.yaml). A replaced key
//! file, a forged receipt, a store from elsewhere, deleted keys, CI's key, the pin
//! command, symbolic links and two first runs at once.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use proofgraph::attest::keys;
use serde_json::Value;

use crate::support::{Run, Sandbox, assert_codes, codes, git_commit_all};

const CHANGE: &str = "add-x";

fn prove(sb: &Sandbox, dir: &Path) -> Run {
    sb.run(dir, &["prove", CHANGE, "--json"])
}

/// The store key's id, as `key show` prints it.
fn store_keyid(sb: &Sandbox, dir: &Path) -> String {
    let run = sb.run(dir, &["key", "show", "--json"]);
    run.expect_code(0);
    run.json()["keyid"]
        .as_str()
        .expect("the store has a key")
        .to_owned()
}

/// The key id the user's pin for the store under `dir` names, if any.
fn pinned(sb: &Sandbox, dir: &Path) -> Option<String> {
    let doc = sb.run(dir, &["key", "show", "--json"]).json();
    let file = PathBuf::from(doc["trust"]["pin_file"].as_str().expect("pin file"));
    let text = fs_err::read_to_string(file).ok()?;
    let pin: Value = serde_json::from_str(&text).expect("a pin is JSON");
    Some(pin["keyid"].as_str().expect("keyid").to_owned())
}

/// The actions of each provider of a prove document (`ran`, `reused`).
fn actions(doc: &Value) -> Vec<String> {
    doc["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .map(|p| p["action"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A new key pair written where `dir/keys/` would hold one; returns its id.
fn write_key_pair(keys_dir: &Path, which: &[&str]) -> (ed25519_dalek::SigningKey, String) {
    let key = keys::generate_signing_key().expect("generate a key");
    for file in which {
        let text = match *file {
            "workspace.key" => keys::signing_key_to_pem(&key).to_string(),
            _ => keys::public_key_to_pem(&key.verifying_key()),
        };
        crate::support::write(&keys_dir.join(file), text);
    }
    let id = keys::key_id(&key.verifying_key());
    (key, id)
}

fn message(run: &Run) -> String {
    run.json()["status"][0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The issue's case: someone replaces `keys/workspace.pub`. Every command that
/// reads receipts stops with a coded error naming both key ids (never "stale: for
/// an earlier fingerprint" and a rerun that never ends), `doctor` reports it, and
/// the fix it names works.
#[test]
fn a_replaced_public_key_is_a_coded_error_naming_both_key_ids() {
    let sb = Sandbox::new();
    sb.lint_change(r#"[sh, -c, "true"]"#);
    let first = prove(&sb, &sb.work());
    first.expect_code(0);
    let receipt = first.json()["providers"][0]["receipts"][0]["sha256"]
        .as_str()
        .expect("a receipt")
        .to_owned();
    let ours = store_keyid(&sb, &sb.work());
    assert_eq!(pinned(&sb, &sb.work()).as_deref(), Some(ours.as_str()));
    let public = sb.work().join(".proofgraph/keys/workspace.pub");
    let original = fs_err::read(&public).expect("the public key");
    let (_, theirs) = write_key_pair(&sb.work().join(".proofgraph/keys"), &["workspace.pub"]);

    for args in [
        &["status", CHANGE, "--json"][..],
        &["prove", CHANGE, "--json"],
        // Whatever the sandbox mode: the key is judged before anything is looked up.
        &["prove", CHANGE, "--sandbox", "copy", "--json"],
        &["status", CHANGE, "--sandbox", "none", "--json"],
        &["plan", CHANGE, "--json"],
        &["explain", CHANGE, "lint", "--json"],
        // It signs what it imports: refused before the envelope is even read.
        &[
            "evidence",
            "verify-ci",
            CHANGE,
            "lint",
            "absent.json",
            "--json",
        ],
    ] {
        let run = sb.run(&sb.work(), args);
        run.expect_code(3);
        assert_codes!(run.status_codes(), ["workspace_key_mismatch"], "{args:?}");
        let text = message(&run);
        assert!(
            text.contains(&ours) && text.contains(&theirs),
            "{args:?}: {text}"
        );
        let doc = run.json();
        assert_eq!(
            doc["status"][0]["target"], ".proofgraph/keys/workspace.pub",
            "{args:?}"
        );
        // The private key is still the pinned one, so the fix is to drop the `.pub`.
        let fix = doc["status"][0]["fix"].as_str().unwrap_or_default();
        assert!(
            fix.contains("Delete `.proofgraph/keys/workspace.pub`"),
            "{fix}"
        );
    }
    // People read it too.
    let human = sb.run(&sb.work(), &["status", CHANGE]);
    human.expect_code(3);
    assert!(
        human.stderr.contains("workspace_key_mismatch") && human.stderr.contains(&theirs),
        "{}",
        human.stderr
    );

    // doctor reports it (and, as for every finding, still exits 0).
    let doctor = sb.run(&sb.work(), &["doctor", "--json"]);
    doctor.expect_code(0);
    let doc = doctor.json();
    assert!(codes(&doc["status"]).contains(&"workspace_key_mismatch".to_owned()));
    let trust = &doc["proof_store"]["trust"];
    assert_eq!(trust["state"], "mismatch");
    assert_eq!(trust["keyid"], theirs.as_str());
    assert_eq!(trust["pinned_keyid"], ours.as_str());
    let human = sb.run(&sb.work(), &["doctor"]);
    assert!(human.stdout.contains("NOT TRUSTED"), "{}", human.stdout);

    // `receipt verify` no longer trusts the store's key, and says why.
    let verify = sb.run(&sb.work(), &["receipt", "verify", &receipt, "--json"]);
    verify.expect_code(1);
    assert_codes!(
        verify.status_codes(),
        ["receipt_untrusted", "workspace_key_mismatch"]
    );

    // The fix: the public key is written again from the pinned private key.
    fs_err::remove_file(&public).expect("remove the replaced key");
    let status = sb.run(&sb.work(), &["status", CHANGE, "--json"]);
    status.expect_code(0);
    // The refused commands ran nothing: the receipt is still the first run's.
    assert_eq!(
        status.json()["requirements"][0]["evidence"][0]["sha256"],
        receipt.as_str()
    );
    let again = prove(&sb, &sb.work());
    again.expect_code(0);
    assert_eq!(actions(&again.json()), vec!["reused"]);
    assert_eq!(fs_err::read(&public).expect("rewritten"), original);
}

/// Receipts forged by whoever can write the store never count as passes: signed
/// with their own key while ours stays, or with the key pair replaced too.
#[test]
fn forged_receipts_are_never_reused_as_passes() {
    let sb = Sandbox::new();
    sb.lint_change(r#"[sh, -c, "exit 1"]"#);
    let first = prove(&sb, &sb.work());
    first.expect_code(1);
    let failed = first.json()["providers"][0]["receipts"][0]["sha256"]
        .as_str()
        .expect("a receipt")
        .to_owned();

    // The forger turns the failing receipt into a pass and signs it with a key of theirs.
    let store = proofgraph::store::Store::open(&sb.work()).expect("open the store");
    let envelope: Value = serde_json::from_slice(
        &store
            .get(&proofgraph::store::Sha256::parse(&failed).expect("a digest"))
            .expect("the receipt"),
    )
    .expect("json");
    let body = proofgraph::attest::b64::decode(envelope["payload"].as_str().expect("payload"))
        .expect("base64");
    let mut statement: Value = serde_json::from_slice(&body).expect("statement");
    statement["predicate"]["result"] = "PASSED".into();
    statement["predicate"]["proofgraph"]["outcome"] = "pass".into();
    statement["predicate"]["proofgraph"]["reason"] = Value::Null;
    let proof = statement["predicate"]["proofgraph"].clone();
    let forger = sb.path().join("forger");
    let (key, theirs) = write_key_pair(&forger, &["workspace.key", "workspace.pub"]);
    let forged = proofgraph::attest::envelope::sign(
        proofgraph::attest::IN_TOTO_PAYLOAD_TYPE,
        &serde_json::to_vec(&statement).expect("serialize"),
        &key,
        Some(&theirs),
    );
    let forged_sha = store.put(forged.to_json().as_bytes()).expect("put");
    let field = |name: &str| proof[name].as_str().expect("a field").to_owned();
    let receipt = proofgraph_graph::ProviderId::parse(&field("receipt")).expect("an id");
    let capability =
        proofgraph_graph::CapabilityName::parse(&field("capability")).expect("a capability");
    let action = proofgraph::store::Store::action_key(
        &proofgraph_graph::fingerprint::Fingerprint::from_hex(&field("fingerprint"))
            .expect("a fingerprint"),
        &receipt,
        &capability,
    );
    store.set_action(&action, &forged_sha).expect("point at it");
    let change = proofgraph_graph::ChangeName::parse(CHANGE).expect("a change name");
    store
        .set_ref(&change, &receipt, &capability, &forged_sha)
        .expect("ref");

    // Our key kept: the forgery is named for what it is, pending, and runs again.
    let status = sb.run(&sb.work(), &["status", CHANGE, "--json"]);
    status.expect_code(2);
    let evidence = &status.json()["requirements"][0]["evidence"][0];
    assert_eq!(evidence["state"], "pending");
    assert_eq!(evidence["sha256"], forged_sha.to_hex().as_str());
    let reason = evidence["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("not signed by a key this workspace trusts") && reason.contains(&theirs),
        "{reason}"
    );
    let plan = sb.run(&sb.work(), &["plan", CHANGE, "--json"]).json();
    let node = plan["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|n| n["action"].is_string())
        .expect("the provider")
        .clone();
    assert_eq!(node["action"], "run");
    assert!(
        node["reason"].as_str().is_some_and(|r| r.contains(&theirs)),
        "{node:#}"
    );
    let verify = sb.run(
        &sb.work(),
        &["receipt", "verify", &forged_sha.to_hex(), "--json"],
    );
    verify.expect_code(1);
    assert_codes!(verify.status_codes(), ["receipt_untrusted"]);
    assert!(message(&verify).contains(&theirs), "{}", message(&verify));

    // The key pair replaced by theirs as well: nothing is evaluated against it.
    let keys_dir = sb.work().join(".proofgraph/keys");
    for file in ["workspace.key", "workspace.pub"] {
        fs_err::copy(forger.join(file), keys_dir.join(file)).expect("replace a key file");
    }
    for args in [
        &["status", CHANGE, "--json"][..],
        &["prove", CHANGE, "--json"],
    ] {
        let run = sb.run(&sb.work(), args);
        run.expect_code(3);
        assert_codes!(run.status_codes(), ["workspace_key_mismatch"], "{args:?}");
        assert!(message(&run).contains(&theirs), "{}", message(&run));
    }
    let verify = sb.run(
        &sb.work(),
        &["receipt", "verify", &forged_sha.to_hex(), "--json"],
    );
    verify.expect_code(1);
    assert_codes!(
        verify.status_codes(),
        ["receipt_untrusted", "workspace_key_mismatch"]
    );
}

/// A store that proofgraph did not make for this user at this path — copied from
/// another user's workspace (or restored from a cache), moved, or made by an older
/// proofgraph that pinned nothing — is refused until the user pins its key.
#[test]
fn a_store_from_elsewhere_is_refused_until_its_key_is_pinned() {
    let theirs = Sandbox::new();
    theirs.lint_change(r#"[sh, -c, "true"]"#);
    prove(&theirs, &theirs.work()).expect_code(0);
    let their_key = store_keyid(&theirs, &theirs.work());

    // Another user (another HOME), the same change, their store copied in.
    let sb = Sandbox::new();
    sb.lint_change(r#"[sh, -c, "true"]"#);
    copy_tree(
        &theirs.work().join(".proofgraph"),
        &sb.work().join(".proofgraph"),
    );
    for args in [
        &["status", CHANGE, "--json"][..],
        &["prove", CHANGE, "--json"],
    ] {
        let run = sb.run(&sb.work(), args);
        run.expect_code(3);
        assert_codes!(run.status_codes(), ["workspace_key_unpinned"], "{args:?}");
        let fix = run.json()["status"][0]["fix"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            fix.contains(&format!("proofgraph key pin {their_key}")),
            "{fix}"
        );
    }
    let doctor = sb.run(&sb.work(), &["doctor", "--json"]).json();
    assert_eq!(doctor["proof_store"]["trust"]["state"], "unpinned");
    assert!(codes(&doctor["status"]).contains(&"workspace_key_unpinned".to_owned()));

    // `key pin` pins only the key the user checked.
    let (_, other) = write_key_pair(&sb.path().join("elsewhere"), &[]);
    let wrong = sb.run(&sb.work(), &["key", "pin", &other, "--json"]);
    wrong.expect_code(3);
    assert_codes!(wrong.status_codes(), ["workspace_key_mismatch"]);
    assert_eq!(pinned(&sb, &sb.work()), None, "nothing was pinned");
    let malformed = sb.run(&sb.work(), &["key", "pin", "3f1c", "--json"]);
    malformed.expect_code(3);
    assert_codes!(malformed.status_codes(), ["usage_error"]);

    let pin = sb.run(&sb.work(), &["key", "pin", &their_key, "--json"]);
    pin.expect_code(0);
    let doc = pin.json();
    assert_eq!(doc["changed"], true);
    assert_eq!(doc["keyid"], their_key.as_str());
    assert_eq!(doc["trust"]["state"], "pinned");
    let file = PathBuf::from(doc["trust"]["pin_file"].as_str().expect("pin file"));
    let written = fs_err::read(&file).expect("the pin");
    // Idempotent: pinning it again changes nothing.
    let again = sb.run(&sb.work(), &["key", "pin", &their_key, "--json"]);
    again.expect_code(0);
    assert_eq!(again.json()["changed"], false);
    assert_eq!(fs_err::read(&file).expect("the pin"), written);
    sb.run(&sb.work(), &["status", CHANGE, "--json"])
        .expect_code(0);
    let proved = prove(&sb, &sb.work());
    proved.expect_code(0);
    assert_eq!(actions(&proved.json()), vec!["reused"]);

    // The same user moves the workspace: the key is pinned for the old path, and
    // the message says so.
    let moved = sb.path().join("moved");
    copy_tree(&sb.work(), &moved);
    let run = sb.run(&moved, &["status", CHANGE, "--json"]);
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["workspace_key_unpinned"]);
    assert!(
        message(&run).contains(&format!(
            "pinned for `{}`",
            sb.work().join(".proofgraph").display()
        )),
        "{}",
        message(&run)
    );

    // A store made before pins existed: its pin is simply absent.
    fs_err::remove_file(&file).expect("remove the pin");
    let run = sb.run(&sb.work(), &["status", CHANGE, "--json"]);
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["workspace_key_unpinned"]);
}

fn copy_tree(from: &Path, to: &Path) {
    let out = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .output()
        .expect("cp is required");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Deleting the keys (or the whole store) is how a key is rotated: the next run
/// makes a new key, pins it in place of the old one and says so, and what the old
/// key signed runs again.
#[test]
fn deleted_keys_give_a_new_pinned_key_and_old_receipts_run_again() {
    let sb = Sandbox::new();
    sb.lint_change(r#"[sh, -c, "true"]"#);
    prove(&sb, &sb.work()).expect_code(0);
    let old = store_keyid(&sb, &sb.work());
    fs_err::remove_dir_all(sb.work().join(".proofgraph/keys")).expect("remove the keys");

    let status = sb.run(&sb.work(), &["status", CHANGE, "--json"]);
    status.expect_code(2);
    let reason = status.json()["requirements"][0]["evidence"][0]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        reason.contains("not signed by a key this workspace trusts"),
        "{reason}"
    );
    let doctor = sb.run(&sb.work(), &["doctor", "--json"]).json();
    assert_eq!(doctor["proof_store"]["trust"]["state"], "absent");
    assert_eq!(doctor["proof_store"]["trust"]["pinned_keyid"], old.as_str());

    let run = prove(&sb, &sb.work());
    run.expect_code(0);
    assert_eq!(actions(&run.json()), vec!["ran"]);
    assert_codes!(run.status_codes(), ["workspace_key_replaced"]);
    let new = store_keyid(&sb, &sb.work());
    assert_ne!(new, old);
    assert!(message(&run).contains(&old) && message(&run).contains(&new));
    assert_eq!(pinned(&sb, &sb.work()).as_deref(), Some(new.as_str()));
    let next = prove(&sb, &sb.work());
    next.expect_code(0);
    assert_eq!(actions(&next.json()), vec!["reused"]);
    assert!(next.status_codes().is_empty());

    // The whole store deleted: the same.
    fs_err::remove_dir_all(sb.work().join(".proofgraph")).expect("remove the store");
    let run = prove(&sb, &sb.work());
    run.expect_code(0);
    assert_codes!(run.status_codes(), ["workspace_key_replaced"]);
}

/// CI's key, listed in the committed `trustedKeys`, is trusted with no pin: a CI job
/// that installs it as the store's key signs trusted receipts, and a store restored
/// from CI's cache is trusted on another machine — and refused without the entry.
#[test]
fn trusted_keys_in_the_catalog_pin_ci_s_key() {
    let ci = Sandbox::new();
    let (ci_key, ci_id) = write_key_pair(&ci.path().join("secret"), &["workspace.key"]);
    let catalog = format!(
        "version: 1\ntrustedKeys:\n  - name: ci\n    publicKey: |\n{}",
        keys::public_key_to_pem(&ci_key.verifying_key())
            .lines()
            .map(|l| format!("      {l}\n"))
            .collect::<String>()
    );
    ci.write("proofgraph.yaml", &catalog);
    ci.lint_change(r#"[sh, -c, "true"]"#);
    // The CI job installs its key from a secret, as the store's signing key.
    let installed = crate::support::write(
        &ci.work().join(".proofgraph/keys/workspace.key"),
        fs_err::read(ci.path().join("secret/workspace.key")).expect("the secret"),
    );
    use std::os::unix::fs::PermissionsExt as _;
    fs_err::set_permissions(&installed, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let run = prove(&ci, &ci.work());
    run.expect_code(0);
    assert!(run.status_codes().is_empty(), "{}", run.stdout);
    assert_eq!(store_keyid(&ci, &ci.work()), ci_id);
    assert_eq!(
        pinned(&ci, &ci.work()),
        None,
        "the catalog pins it; no pin is written"
    );
    let doctor = ci.run(&ci.work(), &["doctor", "--json"]).json();
    assert_eq!(doctor["proof_store"]["trust"]["state"], "pinned");
    assert_eq!(
        doctor["proof_store"]["trust"]["pinned_by"],
        serde_json::json!({"kind": "trusted_key", "name": "ci"})
    );

    // A developer restores CI's cache (without the private key, as a cache should be).
    let dev = Sandbox::new();
    dev.write("proofgraph.yaml", &catalog);
    dev.lint_change(r#"[sh, -c, "true"]"#);
    copy_tree(
        &ci.work().join(".proofgraph"),
        &dev.work().join(".proofgraph"),
    );
    fs_err::remove_file(dev.work().join(".proofgraph/keys/workspace.key")).expect("no secret");
    dev.run(&dev.work(), &["status", CHANGE, "--json"])
        .expect_code(0);
    // Proving makes the developer's own key (pinned for them) and reuses CI's receipts.
    let run = prove(&dev, &dev.work());
    run.expect_code(0);
    assert_eq!(actions(&run.json()), vec!["reused"]);
    assert!(run.status_codes().is_empty(), "{}", run.stdout);
    let own = store_keyid(&dev, &dev.work());
    assert_ne!(own, ci_id);
    assert_eq!(pinned(&dev, &dev.work()).as_deref(), Some(own.as_str()));

    // Without the entry, the restored store is nobody's.
    let stranger = Sandbox::new();
    stranger.lint_change(r#"[sh, -c, "true"]"#);
    copy_tree(
        &ci.work().join(".proofgraph"),
        &stranger.work().join(".proofgraph"),
    );
    let run = stranger.run(&stranger.work(), &["status", CHANGE, "--json"]);
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["workspace_key_unpinned"]);
}

/// Key files may be symbolic links: to the pinned key they work as the files would;
/// to another key they are a mismatch; to nothing, an unusable store.
#[test]
fn symlinked_key_files_are_judged_by_the_key_they_hold() {
    let sb = Sandbox::new();
    sb.lint_change(r#"[sh, -c, "true"]"#);
    prove(&sb, &sb.work()).expect_code(0);
    let keys_dir = sb.work().join(".proofgraph/keys");
    let vault = sb.path().join("vault");
    fs_err::create_dir_all(&vault).expect("vault");
    for file in ["workspace.key", "workspace.pub"] {
        fs_err::rename(keys_dir.join(file), vault.join(file)).expect("move a key file");
        fs_err::os::unix::fs::symlink(vault.join(file), keys_dir.join(file)).expect("link");
    }
    sb.run(&sb.work(), &["status", CHANGE, "--json"])
        .expect_code(0);
    // Signing through the link works too (a new fingerprint makes it sign).
    sb.write("openspec/changes/add-x/execution.yaml", "version: 1\nproviders:\n  lint:\n    adapter: command\n    capability: static-analysis\n    command: [sh, -c, \"true \"]\n");
    git_commit_all(&sb.work());
    let run = prove(&sb, &sb.work());
    run.expect_code(0);
    assert_eq!(actions(&run.json()), vec!["ran"]);

    // `.pub` pointed at another key.
    let (_, other) = write_key_pair(&sb.path().join("other"), &["workspace.pub"]);
    fs_err::remove_file(keys_dir.join("workspace.pub")).expect("unlink");
    fs_err::os::unix::fs::symlink(
        sb.path().join("other/workspace.pub"),
        keys_dir.join("workspace.pub"),
    )
    .expect("link");
    let run = sb.run(&sb.work(), &["status", CHANGE, "--json"]);
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["workspace_key_mismatch"]);
    assert!(message(&run).contains(&other));

    // `.pub` pointing at nothing.
    fs_err::remove_file(keys_dir.join("workspace.pub")).expect("unlink");
    fs_err::os::unix::fs::symlink(sb.path().join("nothing"), keys_dir.join("workspace.pub"))
        .expect("link");
    for args in [
        &["status", CHANGE, "--json"][..],
        &["prove", CHANGE, "--json"],
    ] {
        let run = sb.run(&sb.work(), args);
        run.expect_code(3);
        assert_codes!(run.status_codes(), ["store_unusable"], "{args:?}");
    }
}

/// Two first runs at once: both succeed and one key is made and pinned.
#[test]
fn concurrent_first_runs_end_with_one_pinned_key() {
    let sb = Sandbox::new();
    sb.lint_change(r#"[sh, -c, "true"]"#);
    for round in 0..3 {
        let children: Vec<_> = (0..3)
            .map(|_| {
                sb.proofgraph(&sb.work())
                    .args(["prove", CHANGE, "--json"])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn prove")
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().expect("prove");
            let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
            assert_eq!(out.status.code(), Some(0), "round {round}: {doc:#}");
            assert!(codes(&doc["status"]).is_empty(), "round {round}: {doc:#}");
        }
        let key = store_keyid(&sb, &sb.work());
        assert_eq!(pinned(&sb, &sb.work()), Some(key), "round {round}");
        sb.run(&sb.work(), &["status", CHANGE, "--json"])
            .expect_code(0);
        // A first use again: no store and no pin.
        fs_err::remove_dir_all(sb.work().join(".proofgraph")).expect("remove the store");
        fs_err::remove_dir_all(sb.config_home().join("proofgraph")).expect("remove the pins");
    }
}

/// A new key whose pin cannot be written is not used, and `key pin` of a store
/// with no key says there is nothing to pin.
#[test]
fn an_unpinnable_key_signs_nothing_and_a_keyless_store_has_nothing_to_pin() {
    let sb = Sandbox::new();
    sb.lint_change(r#"[sh, -c, "true"]"#);
    let not_a_dir = sb.path().join("config-file");
    crate::support::write(&not_a_dir, "a file, not a directory\n");
    let config = not_a_dir.to_str().expect("utf-8");
    let run = sb.run_with_env(
        &sb.work(),
        &["prove", CHANGE, "--json"],
        &[("XDG_CONFIG_HOME", config)],
    );
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["workspace_pin_unwritable"]);
    assert!(
        !sb.work().join(".proofgraph/keys/workspace.key").exists(),
        "no key is made that nothing pins"
    );
    let pin = sb.run(
        &sb.work(),
        &[
            "key",
            "pin",
            &format!("sha256:{}", "ab".repeat(32)),
            "--json",
        ],
    );
    pin.expect_code(3);
    assert_codes!(pin.status_codes(), ["workspace_key_missing"]);
    let show = sb.run(&sb.work(), &["key", "show", "--json"]);
    show.expect_code(0);
    assert_eq!(show.json()["trust"]["state"], "absent");
    assert!(show.json()["keyid"].is_null());
    // The human form never names a pin file that does not exist as if it did.
    let human = sb.run(&sb.work(), &["key", "show"]);
    human.expect_code(0);
    assert!(
        human.stdout.contains("Pin file: none yet (") && human.stdout.contains("writes "),
        "{}",
        human.stdout
    );

    // Key files that disagree are never pinned, whichever id is given.
    prove(&sb, &sb.work()).expect_code(0);
    let human = sb.run(&sb.work(), &["key", "show"]);
    assert!(
        human.stdout.contains("Pin file: /") && !human.stdout.contains("none yet"),
        "pinned by the first prove: {}",
        human.stdout
    );
    let ours = store_keyid(&sb, &sb.work());
    let keys_dir = sb.work().join(".proofgraph/keys");
    let (_, theirs) = write_key_pair(&keys_dir, &["workspace.key"]);
    for id in [&ours, &theirs] {
        let run = sb.run(&sb.work(), &["key", "pin", id, "--json"]);
        run.expect_code(3);
        assert_codes!(run.status_codes(), ["workspace_key_mismatch"]);
        assert!(message(&run).contains(&ours) && message(&run).contains(&theirs));
    }
    // And a replaced private key under the pinned public key is its own mismatch.
    let run = prove(&sb, &sb.work());
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["workspace_key_mismatch"]);
    assert_eq!(
        run.json()["status"][0]["target"],
        ".proofgraph/keys/workspace.key"
    );
}

/// A pull looks a receipt up in the remote cache under the store's own key and the first
/// `LOOKED_UP_TRUSTED_KEYS` entries of `trustedKeys` (one lookup each): a longer list is
/// trusted whole, and `validate` warns at the first entry no pull looks under.
#[test]
fn trusted_keys_past_the_lookup_limit_are_named_by_validate() {
    use proofgraph::store::remote::LOOKED_UP_TRUSTED_KEYS;
    let catalog = |count: usize| {
        let mut text = String::from("version: 1\ntrustedKeys:\n");
        for i in 0..count {
            let key = ed25519_dalek::SigningKey::from_bytes(&[u8::try_from(i).expect("few"); 32]);
            text.push_str(&format!("  - name: k{i}\n    publicKey: |\n"));
            for line in keys::public_key_to_pem(&key.verifying_key()).lines() {
                text.push_str(&format!("      {line}\n"));
            }
        }
        text
    };
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write("proofgraph.yaml", catalog(LOOKED_UP_TRUSTED_KEYS));
    let run = sb.run(&sb.work(), &["validate", "--all", "--json"]);
    assert_codes!(crate::support::issue_codes(&run.json()), []);
    sb.write("proofgraph.yaml", catalog(LOOKED_UP_TRUSTED_KEYS + 2));
    let run = sb.run(&sb.work(), &["validate", "--all", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_codes!(crate::support::issue_codes(&doc), ["trusted_keys_too_many"]);
    let issue = &doc["items"][0]["issues"][0];
    // Each entry is five lines (name, publicKey, three of PEM), after two of header.
    let line = 3 + 5 * LOOKED_UP_TRUSTED_KEYS as u64;
    assert_eq!(issue["path"], "proofgraph.yaml", "{issue}");
    assert_eq!(
        (issue["line"].as_u64(), issue["column"].as_u64()),
        (Some(line), Some(11)),
        "at the name of the first key left out: {issue}"
    );
    let message = issue["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("lists {} keys", LOOKED_UP_TRUSTED_KEYS + 2))
            && message.contains(&format!("`k{LOOKED_UP_TRUSTED_KEYS}`")),
        "{message}"
    );
    assert!(
        issue["fix"].as_str().is_some_and(|f| !f.is_empty()),
        "{issue}"
    );
}
