//! How a receipt is kept in a remote cache: the same encoding for every protocol
//! (docs/remote-cache.md gives it with a worked example).
//!
//! The key is the digest of a deterministic REAPI `Action`: no input files (the empty
//! `Directory`), and a `Command` whose arguments name what the receipt answers and who
//! signed it — `["proofgraph-receipt", "v2", <fingerprint>, <receipt name>, <capability>,
//! <signer's key id>]`: the triple the local action cache is keyed by, and the key id
//! (`sha256:<hex>`) of the key that signed the envelope. Each signer has entries of its
//! own, so a writer's push never lands where a reader that does not trust it looks, and a
//! reader asks for the entries of the keys it trusts, one key at a time. The `Action` and
//! `Command` blobs are stored too, so servers that check an entry's completeness accept
//! it. The entry, an `ActionResult` with exit code 0, lists as output files the receipt's
//! DSSE envelope (`receipt.dsse.json`), its input listing (`inputs.txt`) and each artifact
//! it keeps (the log, the report, attachments) as `artifacts/<sha256>`.
//!
//! `v1` keys (without the signer) are never asked for: entries written before the signer
//! was part of the key are cold, as if the cache were empty.

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use proofgraph_graph::fingerprint::Fingerprint;
use proofgraph_graph::{CapabilityName, ProviderId};
use prost::Message as _;

use super::backend::{BlobDigest, escaped};
use crate::attest::keys::KeyId;

/// The envelope's output path.
pub const ENVELOPE: &str = "receipt.dsse.json";
/// The input listing's output path.
pub const INPUTS: &str = "inputs.txt";
/// The directory of artifacts' output paths.
pub const ARTIFACTS: &str = "artifacts";
/// The first argument of every receipt's `Command`, and the layout version after it (`v2`:
/// the signer's key id is the last argument; `v1` had none).
pub const PROGRAM: [&str; 2] = ["proofgraph-receipt", "v2"];

/// The `Action` of a receipt, with its `Command`, serialized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The `Action` message.
    pub action: Vec<u8>,
    /// The `Command` message.
    pub command: Vec<u8>,
    /// The `Action`'s digest: the action-cache key.
    pub key: BlobDigest,
}

impl Encoded {
    /// The blobs an entry needs beside its outputs: the `Action`, the `Command` and the
    /// empty input root.
    pub fn blobs(&self) -> Vec<Vec<u8>> {
        vec![self.action.clone(), self.command.clone(), Vec::new()]
    }
}

/// The `Action` that answers for the receipt `receipt` of `capability` at `fingerprint`
/// signed by the key `signer`.
pub fn action(
    fingerprint: &Fingerprint,
    receipt: &ProviderId,
    capability: &CapabilityName,
    signer: &KeyId,
) -> Encoded {
    let command = reapi::Command {
        arguments: [
            PROGRAM[0].to_owned(),
            PROGRAM[1].to_owned(),
            fingerprint.to_string(),
            receipt.to_string(),
            capability.to_string(),
            signer.to_string(),
        ]
        .into(),
        output_paths: [ARTIFACTS, INPUTS, ENVELOPE].map(str::to_owned).into(),
        ..Default::default()
    }
    .encode_to_vec();
    let action = reapi::Action {
        command_digest: Some(BlobDigest::of(&command).to_reapi()),
        input_root_digest: Some(BlobDigest::of(&[]).to_reapi()),
        ..Default::default()
    }
    .encode_to_vec();
    let key = BlobDigest::of(&action);
    Encoded {
        action,
        command,
        key,
    }
}

/// What an entry points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outputs {
    /// The receipt's DSSE envelope.
    pub envelope: BlobDigest,
    /// Its input listing, when it was kept.
    pub inputs: Option<BlobDigest>,
    /// Its artifacts.
    pub artifacts: Vec<BlobDigest>,
}

impl Outputs {
    /// Every blob, the envelope first.
    pub fn all(&self) -> Vec<BlobDigest> {
        let mut all = vec![self.envelope];
        all.extend(self.inputs);
        all.extend(&self.artifacts);
        all
    }
}

/// The entry that lists `outputs`.
pub fn result(outputs: &Outputs) -> reapi::ActionResult {
    let file = |path: String, digest: BlobDigest| reapi::OutputFile {
        path,
        digest: Some(digest.to_reapi()),
        ..Default::default()
    };
    let mut files = vec![file(ENVELOPE.to_owned(), outputs.envelope)];
    if let Some(inputs) = outputs.inputs {
        files.push(file(INPUTS.to_owned(), inputs));
    }
    for artifact in &outputs.artifacts {
        files.push(file(format!("{ARTIFACTS}/{}", artifact.sha256), *artifact));
    }
    reapi::ActionResult {
        output_files: files,
        exit_code: 0,
        ..Default::default()
    }
}

/// What an entry points at, or why it is not one of ours.
pub fn outputs(result: &reapi::ActionResult) -> Result<Outputs, String> {
    let mut envelope = None;
    let mut inputs = None;
    let mut artifacts = Vec::new();
    for file in &result.output_files {
        let digest = file
            .digest
            .as_ref()
            .ok_or_else(|| format!("output `{}` has no digest", escaped(&file.path)))
            .and_then(BlobDigest::from_reapi)?;
        match file.path.as_str() {
            ENVELOPE => envelope = Some(digest),
            INPUTS => inputs = Some(digest),
            path => match path
                .strip_prefix(ARTIFACTS)
                .and_then(|p| p.strip_prefix('/'))
            {
                Some(name) if name == digest.sha256.to_hex() => artifacts.push(digest),
                _ => {
                    return Err(format!(
                        "output `{}` is not one a receipt keeps",
                        escaped(path)
                    ));
                }
            },
        }
    }
    let envelope = envelope.ok_or_else(|| format!("no `{ENVELOPE}` among its outputs"))?;
    Ok(Outputs {
        envelope,
        inputs,
        artifacts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> (Fingerprint, ProviderId, CapabilityName, KeyId) {
        (
            Fingerprint::from_hex(&"ab".repeat(32)).expect("hex"),
            ProviderId::parse("unit").expect("id"),
            CapabilityName::parse("test").expect("capability"),
            KeyId::parse(&format!("sha256:{}", "cd".repeat(32))).expect("a key id"),
        )
    }

    #[test]
    fn the_action_is_deterministic_and_names_what_the_receipt_answers_and_who_signed_it() {
        let (f, r, c, k) = key();
        let one = action(&f, &r, &c, &k);
        assert_eq!(one, action(&f, &r, &c, &k), "the same four, the same key");
        let command = reapi::Command::decode(one.command.as_slice()).expect("a Command");
        assert_eq!(
            command.arguments,
            [
                "proofgraph-receipt",
                "v2",
                &"ab".repeat(32),
                "unit",
                "test",
                &format!("sha256:{}", "cd".repeat(32))
            ]
        );
        let decoded = reapi::Action::decode(one.action.as_slice()).expect("an Action");
        assert_eq!(
            decoded.command_digest,
            Some(BlobDigest::of(&one.command).to_reapi())
        );
        assert_eq!(
            decoded.input_root_digest.map(|d| d.hash),
            Some("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855".to_owned()),
            "no inputs: the empty Directory"
        );
        // Each part changes the key: the triple, and the signer.
        let other = ProviderId::parse("e2e").expect("id");
        assert_ne!(action(&f, &other, &c, &k).key, one.key);
        let cap = CapabilityName::parse("integration").expect("capability");
        assert_ne!(action(&f, &r, &cap, &k).key, one.key);
        let fp = Fingerprint::from_hex(&"cd".repeat(32)).expect("hex");
        assert_ne!(action(&fp, &r, &c, &k).key, one.key);
        let stranger = KeyId::parse(&format!("sha256:{}", "ef".repeat(32))).expect("a key id");
        assert_ne!(
            action(&f, &r, &c, &stranger).key,
            one.key,
            "another signer's entry is another entry"
        );
    }

    /// The key of a fixed input, as the worked example of docs/remote-cache.md computes it
    /// with Python's standard library: a change to the encoding is a visible diff here, and
    /// there.
    #[test]
    fn the_key_of_a_fixed_input_is_the_one_the_docs_compute() {
        let (f, r, c, k) = key();
        let encoded = action(&f, &r, &c, &k);
        assert_eq!(
            encoded.key.sha256.to_hex(),
            "664b66053db1891fb858e450535d3b027ac337ebd169a6cbc90d830b6a7fecda"
        );
        assert_eq!(encoded.key.size, 139);
    }

    #[test]
    fn an_entry_lists_the_envelope_its_inputs_and_artifacts_and_reads_back() {
        let outs = Outputs {
            envelope: BlobDigest::of(b"envelope"),
            inputs: Some(BlobDigest::of(b"inputs")),
            artifacts: vec![BlobDigest::of(b"log"), BlobDigest::of(b"report")],
        };
        let entry = result(&outs);
        assert_eq!(entry.exit_code, 0);
        assert_eq!(outputs(&entry), Ok(outs.clone()));
        let bytes = entry.encode_to_vec();
        let back = reapi::ActionResult::decode(bytes.as_slice()).expect("decodes");
        assert_eq!(outputs(&back), Ok(outs));
    }

    #[test]
    fn an_entry_that_is_not_a_receipt_s_is_refused() {
        let mut entry = result(&Outputs {
            envelope: BlobDigest::of(b"envelope"),
            inputs: None,
            artifacts: vec![BlobDigest::of(b"log")],
        });
        entry.output_files[1].path = format!("{ARTIFACTS}/{}", "0".repeat(64));
        assert!(
            outputs(&entry).is_err(),
            "an artifact named for another digest"
        );
        entry.output_files.remove(1);
        entry.output_files[0].path = "other.txt".into();
        assert!(outputs(&entry).is_err(), "no envelope, an unknown output");
        let mut entry = result(&Outputs {
            envelope: BlobDigest::of(b"envelope"),
            inputs: None,
            artifacts: Vec::new(),
        });
        entry.output_files[0].digest = Some(reapi::Digest {
            hash: "XYZ".into(),
            size_bytes: 3,
        });
        assert!(outputs(&entry).is_err(), "a digest that is not SHA-256");
        entry.output_files[0].digest = Some(reapi::Digest {
            hash: "ab".repeat(32),
            size_bytes: -1,
        });
        assert!(outputs(&entry).is_err(), "a negative size");
    }
}
