//! What every command shares, below the commands: the invocation's context, loading a
//! change, and evaluating it (observations, fingerprints, verified receipts).

pub mod context;
pub mod evaluate;
pub mod load;
pub mod receipt_file;
pub mod remote;
pub mod revision;
