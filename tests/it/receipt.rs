//! `receipt verify`: a receipt checked on its own — by digest or as a file,
//! rejected after any changed byte or by a workspace that does not trust
//! its key, and said to be stale once the code it proved changes.

use crate::support::{Sandbox, assert_codes};

fn workspace(sb: &Sandbox) {
    sb.write("src/app.sh", "echo app\n");
    sb.lint_change("[sh, src/app.sh]");
}

#[test]
fn a_receipt_verifies_by_digest_and_as_a_file_until_a_byte_or_the_code_changes() {
    let sb = Sandbox::new();
    workspace(&sb);
    let doc = sb.run(&sb.work(), &["prove", "add-x", "--json"]).json();
    let sha = doc["providers"][0]["receipts"][0]["sha256"]
        .as_str()
        .expect("a receipt")
        .to_owned();
    let by_digest = sb.run(&sb.work(), &["receipt", "verify", &sha, "--json"]);
    by_digest.expect_code(0);
    let v = by_digest.json();
    assert_eq!(v["valid"], true);
    assert_eq!(v["current"], true);
    assert_eq!(v["provider"], "lint");
    assert_eq!(v["outcome"], "pass");
    assert_eq!(v["sha256"], sha.as_str());

    let bytes = fs_err::read(
        sb.work()
            .join(".proofgraph/cas")
            .join(&sha[..2])
            .join(&sha[2..]),
    )
    .expect("receipt");
    let file = sb.path().join("receipt.json");
    crate::support::write(&file, &bytes);
    let as_file = sb.run(
        &sb.work(),
        &["receipt", "verify", file.to_str().expect("utf-8"), "--json"],
    );
    as_file.expect_code(0);
    assert_eq!(as_file.json()["valid"], true);

    // A changed byte inside the payload or signature is rejected.
    let text = String::from_utf8(bytes.clone()).expect("utf-8");
    let at = text.find("\"sig\"").expect("a signature") + 10;
    let mut tampered = bytes.clone();
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    crate::support::write(&file, &tampered);
    let bad = sb.run(
        &sb.work(),
        &["receipt", "verify", file.to_str().expect("utf-8"), "--json"],
    );
    bad.expect_code(1);
    assert_codes!(bad.status_codes(), ["receipt_untrusted"]);
    assert_eq!(bad.json()["valid"], false);

    // Editing the code makes the receipt stale, though still valid.
    sb.write("src/app.sh", "echo edited\n");
    let stale = sb.run(&sb.work(), &["receipt", "verify", &sha, "--json"]);
    stale.expect_code(0);
    assert_eq!(stale.json()["current"], false);

    // Another workspace does not trust this one's key.
    let other = Sandbox::new();
    workspace(&other);
    crate::support::write(&other.path().join("receipt.json"), &bytes);
    let foreign = other.run(
        &other.work(),
        &["receipt", "verify", "../receipt.json", "--json"],
    );
    foreign.expect_code(1);
    assert_codes!(foreign.status_codes(), ["receipt_untrusted"]);

    let missing = sb.run(&sb.work(), &["receipt", "verify", "nope.json", "--json"]);
    missing.expect_code(3);
    assert_codes!(missing.status_codes(), ["envelope_unreadable"]);
}
