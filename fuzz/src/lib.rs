//! What the fuzzer binaries share: writing a target's seeds and dictionary for libFuzzer.
//!
//! Each binary runs [`init`] once before fuzzing. With `PROOFGRAPH_FUZZ_SEEDS` set to a
//! directory (and `PROOFGRAPH_FUZZ_REPO` to the checkout; `PROOFGRAPH_FUZZ_COMPAT`, if set,
//! to the shared corpus), it writes `<dir>/<target>/seed-<n>` and `<dir>/<target>.dict`
//! and exits instead: the seeds come from `proofgraph_fuzz_targets::seeds`, the code the smoke run
//! uses, and no separate, uninstrumented build is needed to produce them.

use std::path::PathBuf;

use proofgraph_fuzz_targets::{Target, seeds};

/// Writes the seeds and exits when asked to (see the crate documentation).
pub fn init(target: Target) {
    let Some(out) = std::env::var_os("PROOFGRAPH_FUZZ_SEEDS").map(PathBuf::from) else {
        return;
    };
    let var = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("{name} must be set with PROOFGRAPH_FUZZ_SEEDS"))
    };
    let repo = var("PROOFGRAPH_FUZZ_REPO");
    let shared_compat = std::env::var_os("PROOFGRAPH_FUZZ_COMPAT").map(PathBuf::from);
    let dir = out.join(target.name());
    fs_err::create_dir_all(&dir).expect("create the seed directory");
    let all = seeds::seeds(target, &repo, shared_compat.as_deref()).expect("read the seeds");
    for (i, seed) in all.iter().enumerate() {
        fs_err::write(dir.join(format!("seed-{i:04}")), seed).expect("write a seed");
    }
    let dict = out.join(format!("{}.dict", target.name()));
    fs_err::write(dict, target.dictionary_file()).expect("write the dictionary");
    std::process::exit(0);
}
