//! Finding a receipt a user names: the SHA-256 of a receipt in the store (as `status --json`
//! lists them), or a file.

use std::io::Read as _;
use std::path::Path;

use super::context::Context;
use crate::base::diagnostic::{Code, Diagnostic};
use crate::store::{self, Store};

/// The largest receipt read.
pub const MAX_RECEIPT_BYTES: u64 = 16 * 1024 * 1024;

/// The bytes of the receipt `what` names: a blob of `store` by its SHA-256, else a file
/// (relative to the working directory).
pub fn read(ctx: &Context, store: &Store, what: &str) -> Result<Vec<u8>, Diagnostic> {
    if let Some(bytes) = store::Sha256::parse(what).and_then(|sha| store.get(&sha)) {
        return Ok(bytes);
    }
    read_file(&ctx.env().cwd.join(what)).map_err(|e| {
        Diagnostic::error(
            Code::EnvelopeUnreadable,
            format!("the receipt `{what}` cannot be read: {e}"),
        )
        .surface("receipt")
        .fix("Pass a receipt file, or the SHA-256 of a receipt in .proofgraph/ (as `status --json` lists them).")
    })
}

fn read_file(path: &Path) -> Result<Vec<u8>, String> {
    let file = fs_err::File::open(path).map_err(|e| e.kind().to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_RECEIPT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.kind().to_string())?;
    if bytes.len() as u64 > MAX_RECEIPT_BYTES {
        return Err(format!("it is larger than {} MiB", MAX_RECEIPT_BYTES >> 20));
    }
    Ok(bytes)
}

/// Why a receipt read with [`read`] is not believed, as one diagnostic: no trusted key
/// signed it (naming the keys it claims), or it is not a proofgraph receipt.
pub fn rejected(bytes: &[u8], rejected: crate::proof::receipt::Rejected) -> Diagnostic {
    use crate::proof::receipt::{self, Rejected};
    match rejected {
        Rejected::Signature(why) => {
            let named = receipt::named_keys(bytes);
            let names = if named.is_empty() {
                "it names no key".to_owned()
            } else {
                format!("it names `{}`", named.join("`, `"))
            };
            Diagnostic::error(
                Code::ReceiptUntrusted,
                format!("no key this workspace trusts signed the receipt ({names}): failed to {why}"),
            )
            .fix("Add the signer's public key to `trustedKeys` in proofgraph.yaml if you trust it; otherwise rerun the provider.")
        }
        Rejected::NotAReceipt(why) => Diagnostic::error(
            Code::StatementInvalid,
            format!("the signed statement is not a proofgraph receipt: {why}"),
        )
        .fix("Pass a receipt proofgraph wrote (an envelope from .proofgraph/cas)."),
    }
    .surface("receipt")
}
