//! The application crate's layers hold: a module uses only the layers below its own.
//!
//! `src/lib.rs` lists the layers; ARCHITECTURE.md draws them. This test reads every
//! `crate::` path in `src/` (grouped `use crate::{a, b::c}` included; comments left out)
//! and fails on one that points at the module's own layer from another folder, or at a
//! layer above it. It also keeps `mod.rs` files to declarations and re-exports, and makes
//! a new folder in `src/` take a place in the order before it can be used.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::support::repo_root;

/// Bottom up. Folders on one rank may not use each other.
const LAYERS: &[&[&str]] = &[
    &["syntax", "attest"],
    &["base"],
    &["present"],
    &["store"],
    &["load"],
    &["observe"],
    &["proof"],
    &["decide"],
    &["run", "worker"],
    &["session"],
    &["commands"],
    &["cli"],
];

/// Files at the root of `src/` that are not a layer.
const ROOT_FILES: &[&str] = &["lib.rs", "main.rs"];

fn rank(layer: &str) -> Option<usize> {
    LAYERS.iter().position(|rank| rank.contains(&layer))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs_err::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text with `//` comments (doc comments too) blanked out, string literals kept.
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first segment of every `crate::` path in `text`, with the line it is on.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(found) = text[from..].find("crate::") {
        let at = from + found;
        from = at + "crate::".len();
        let preceded = at > 0
            && matches!(bytes[at - 1], b'_' | b'-' | b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9');
        if preceded {
            continue;
        }
        let line = text[..at].matches('\n').count() + 1;
        if bytes.get(from) == Some(&b'{') {
            // `crate::{a::b, c, d::{e, f}}`: the first segment of each top-level item.
            let mut depth = 0usize;
            let mut item = String::new();
            for &b in &bytes[from..] {
                match b {
                    b'{' => {
                        depth += 1;
                        if depth > 1 {
                            item.push('{');
                        }
                    }
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                        item.push('}');
                    }
                    b',' if depth == 1 => {
                        out.push((line, first_segment(&item)));
                        item.clear();
                    }
                    _ => item.push(b as char),
                }
            }
            out.push((line, first_segment(&item)));
        } else {
            out.push((line, first_segment(&text[from..])));
        }
    }
    out.retain(|(_, segment)| !segment.is_empty() && segment != "self");
    out
}

fn first_segment(path: &str) -> String {
    path.trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The layer a file of `src/` belongs to: its folder, or its stem at the root.
fn layer_of(relative: &Path) -> Option<String> {
    let mut components = relative.components();
    let first = components.next()?.as_os_str().to_str()?.to_owned();
    if components.next().is_some() {
        Some(first)
    } else if ROOT_FILES.contains(&first.as_str()) {
        None
    } else {
        Some(first.trim_end_matches(".rs").to_owned())
    }
}

/// Every use of a layer that the rule forbids, as `file:line: a -> b`.
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let relative = file.strip_prefix(src).expect("under src");
        let Some(layer) = layer_of(relative) else {
            continue;
        };
        let Some(own) = rank(&layer) else {
            found.push(format!(
                "{}: the layer `{layer}` is not in tests/it/layers.rs's LAYERS (give it a place)",
                relative.display()
            ));
            continue;
        };
        let text = without_comments(&fs_err::read_to_string(&file).expect("read"));
        for (line, target) in crate_paths(&text) {
            if target == layer {
                continue;
            }
            let ok = rank(&target).is_some_and(|theirs| theirs < own);
            if !ok {
                found.push(format!(
                    "src/{}:{line}: `{layer}` uses `crate::{target}`, which is not below it",
                    relative.display()
                ));
            }
        }
    }
    found
}

#[test]
fn every_module_uses_only_the_layers_below_its_own() {
    let found = violations(&repo_root().join("src"));
    assert!(
        found.is_empty(),
        "imports against the layer rule (see src/lib.rs and ARCHITECTURE.md):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_rule_catches_an_upward_import_a_grouped_one_and_a_same_rank_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    let write = |path: &str, text: &str| {
        let path = src.join(path);
        fs_err::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs_err::write(path, text).expect("write");
    };
    write("lib.rs", "pub mod store;\npub mod load;\n");
    // Allowed: down, within the folder, and a comment that names a higher layer.
    write(
        "load/config.rs",
        "use crate::store::Store;\nuse crate::load::x;\n/// see [`crate::commands`]\nfn f() {}\n",
    );
    // Forbidden: up (plain and inside a group), sideways on one rank, and unknown.
    write("store.rs", "use crate::run::execute;\n");
    write(
        "base/env.rs",
        "use crate::{syntax::node::Pos, session::context::Context};\n",
    );
    write(
        "syntax/json.rs",
        "fn f() { crate::attest::b64::decode(x); }\n",
    );
    write("stray/x.rs", "fn f() {}\n");
    let found = violations(src);
    let expected = [
        "src/base/env.rs:1: `base` uses `crate::session`, which is not below it",
        "src/store.rs:1: `store` uses `crate::run`, which is not below it",
        "src/syntax/json.rs:1: `syntax` uses `crate::attest`, which is not below it",
        "stray/x.rs: the layer `stray` is not in tests/it/layers.rs's LAYERS (give it a place)",
    ];
    let found: BTreeSet<&str> = found.iter().map(String::as_str).collect();
    let expected: BTreeSet<&str> = expected.into_iter().collect();
    assert_eq!(found, expected);
}

/// `mod.rs` (and `lib.rs`) only declare modules and re-export: code lives in a file named
/// for what it does.
#[test]
fn mod_rs_files_only_declare_and_re_export() {
    let src = repo_root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name != "mod.rs" && !(name == "lib.rs" && file.parent() == Some(src.as_path())) {
            continue;
        }
        let text = without_comments(&fs_err::read_to_string(&file).expect("read"));
        let mut in_use = false;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            let declares = line.is_empty()
                || line.starts_with("#[")
                || line.starts_with("#![")
                || line.starts_with("pub mod ")
                || line.starts_with("mod ")
                || line.starts_with("pub(crate) mod ");
            let starts_use = line.starts_with("pub use ") || line.starts_with("pub(crate) use ");
            if starts_use || in_use {
                in_use = !line.ends_with(';');
            } else if !declares {
                found.push(format!(
                    "{}:{}: {line}",
                    file.strip_prefix(&src).expect("under src").display(),
                    n + 1
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "code in a mod.rs (move it to a file named for what it does):\n{}",
        found.join("\n")
    );
}
