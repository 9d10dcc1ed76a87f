//! Real `evidence.yaml`/`execution.yaml` files from projects that already use
//! these formats (`../shared/compat/changeloop/`): `validate` accepts every one
//! of them with no error.

use std::path::{Path, PathBuf};

use crate::support::{Sandbox, repo_root};

/// The corpus lives in the shared folder beside the checkout (it is not
/// copied into the project); `PROOFGRAPH_SHARED` points elsewhere.
pub(crate) fn compat_dir() -> PathBuf {
    let candidates: Vec<PathBuf> = std::env::var_os("PROOFGRAPH_SHARED")
        .map(PathBuf::from)
        .into_iter()
        .chain([repo_root().join("../shared"), PathBuf::from("/work/shared")])
        .map(|shared| shared.join("compat/changeloop"))
        .collect();
    candidates.iter().find(|d| d.is_dir()).cloned().unwrap_or_else(|| {
        panic!("the compatibility corpus is expected at one of {candidates:?}; set PROOFGRAPH_SHARED to the shared folder")
    })
}

/// Every directory of the corpus that holds an evidence or execution file.
fn leaf_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs_err::read_dir(dir)
        .expect("read corpus")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    if entries
        .iter()
        .any(|p| p.ends_with("evidence.yaml") || p.ends_with("execution.yaml"))
    {
        out.push(dir.to_path_buf());
    }
    for p in entries.into_iter().filter(|p| p.is_dir()) {
        leaf_dirs(&p, out);
    }
}

#[test]
fn validate_accepts_every_real_file_without_error() {
    let mut leaves = Vec::new();
    leaf_dirs(&compat_dir(), &mut leaves);
    assert!(
        leaves.len() >= 20,
        "found only {} corpus changes",
        leaves.len()
    );
    let sb = Sandbox::new();
    sb.openspec_root("");
    for (i, leaf) in leaves.iter().enumerate() {
        for file in ["evidence.yaml", "execution.yaml"] {
            let src = leaf.join(file);
            if src.exists() {
                let bytes = fs_err::read(&src).expect("read corpus file");
                sb.write(&format!("openspec/changes/c{i:02}/{file}"), bytes);
            }
        }
    }
    let run = sb.run(&sb.work(), &["validate", "--all", "--json"]);
    let doc = run.json();
    for item in doc["items"].as_array().expect("items") {
        let errors: Vec<_> = item["issues"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["level"] == "ERROR")
            .collect();
        let index: usize = item["id"]
            .as_str()
            .and_then(|s| s[1..].parse().ok())
            .expect("item id");
        assert!(
            errors.is_empty(),
            "{}: {errors:#?}",
            leaves[index].display()
        );
    }
    run.expect_code(0);
    assert_eq!(
        doc["summary"]["totals"]["items"].as_u64(),
        Some(leaves.len() as u64)
    );
}
