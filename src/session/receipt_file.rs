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
