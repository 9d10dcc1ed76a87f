use std::collections::BTreeMap;
use std::time::Duration;

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use proptest::prelude::*;

use super::*;
use crate::base::redact::Secrets;
use crate::run::remote::input::{Environment, Files};

fn execution(files: Files) -> Execution {
    Execution {
        files,
        argv: vec!["sh".into(), "-c".into(), "true".into()],
        working_directory: RelPath::root(),
        env: Environment::checked(Vec::new(), &Secrets::none()).expect("empty"),
        outputs: Vec::new(),
        platform: Vec::new(),
        timeout: Duration::from_secs(60),
    }
}

fn decode<M: prost::Message + Default>(encoded: &Encoded, digest: BlobDigest) -> M {
    let bytes = encoded.blob(digest).expect("named").expect("readable");
    M::decode(bytes.as_slice()).expect("a message")
}

fn subdir(encoded: &Encoded, dir: &reapi::Directory, name: &str) -> reapi::Directory {
    let node = dir
        .directories
        .iter()
        .find(|d| d.name == name)
        .expect("the directory");
    let digest = BlobDigest::from_reapi(node.digest.as_ref().expect("a digest")).expect("valid");
    decode(encoded, digest)
}

#[test]
fn entries_are_sorted_by_name_and_directories_nest() {
    let mut files = Files::new();
    for (path, body) in [
        ("z.txt", "z"),
        ("a/y.txt", "y"),
        ("B.txt", "b"),
        ("a/b/x", "x"),
        ("a.txt", "a"),
    ] {
        files.bytes(path, body.as_bytes(), false).expect("add");
    }
    let encoded = encode(&execution(files)).expect("encoded");
    let root: reapi::Directory = decode(&encoded, encoded.input_root);
    let names: Vec<&str> = root.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["B.txt", "a.txt", "z.txt"],
        "byte order: upper case first"
    );
    assert_eq!(root.directories.len(), 1);
    let a = subdir(&encoded, &root, "a");
    assert_eq!(a.files[0].name, "y.txt");
    assert_eq!(subdir(&encoded, &a, "b").files[0].name, "x");
    // The action names the command and the root, and its timeout.
    let action: reapi::Action = decode(&encoded, encoded.action);
    assert_eq!(
        action.input_root_digest,
        Some(encoded.input_root.to_reapi())
    );
    assert_eq!(action.command_digest, Some(encoded.command.to_reapi()));
    assert!(
        action.do_not_cache,
        "the engine never caches what proofgraph sends"
    );
    assert_eq!(action.timeout.map(|t| t.seconds), Some(60));
}

#[test]
fn identical_files_are_one_blob_and_the_executable_bit_and_symlinks_are_kept() {
    let mut files = Files::new();
    files
        .bytes("one/same.txt", b"same bytes", false)
        .expect("add");
    files
        .bytes("two/same.txt", b"same bytes", false)
        .expect("add");
    files.bytes("run.sh", b"#!/bin/sh\n", true).expect("add");
    files
        .add(
            RelPath::new("one/link").expect("a path"),
            Entry::Symlink {
                target: "../run.sh".into(),
            },
        )
        .expect("inside");
    let encoded = encode(&execution(files)).expect("encoded");
    let same = BlobDigest::of(b"same bytes");
    assert!(encoded.digests().contains(&same));
    // one and two hold the same file: one directory blob for both as well.
    let root: reapi::Directory = decode(&encoded, encoded.input_root);
    let one = subdir(&encoded, &root, "one");
    let two = subdir(&encoded, &root, "two");
    assert_eq!(one.files, two.files);
    assert_eq!(one.symlinks.len(), 1);
    assert_eq!(one.symlinks[0].target, "../run.sh");
    // root, one, two; the action, the command; same.txt, run.sh.
    assert_eq!(encoded.digests().len(), 7);
    let run = root
        .files
        .iter()
        .find(|f| f.name == "run.sh")
        .expect("run.sh");
    assert!(run.is_executable);
    assert!(!one.files[0].is_executable);
}

#[test]
fn a_path_under_a_file_or_symlink_is_a_conflict() {
    let mut files = Files::new();
    files.bytes("a", b"file", false).expect("add");
    files.bytes("a/b", b"under it", false).expect("add");
    assert!(matches!(
        encode(&execution(files)),
        Err(InputError::Conflict { .. })
    ));
    let mut files = Files::new();
    files
        .add(
            RelPath::new("l").expect("a path"),
            Entry::Symlink { target: "x".into() },
        )
        .expect("add");
    files.bytes("l/b", b"under a link", false).expect("add");
    assert!(matches!(
        encode(&execution(files)),
        Err(InputError::Conflict { .. })
    ));
}

#[test]
#[expect(
    deprecated,
    reason = "`output_files` and `Command.platform` are set for older engines"
)]
fn the_command_sorts_variables_properties_and_outputs_and_makes_the_working_directory() {
    let mut e = execution(Files::new());
    e.env = Environment::checked(
        [
            ("PATH".into(), "/usr/bin".into()),
            ("LANG".into(), "C".into()),
            ("A".into(), "1".into()),
        ],
        &Secrets::none(),
    )
    .expect("no secret");
    e.platform = vec![
        ("OSFamily".into(), "linux".into()),
        ("ISA".into(), "x86-64".into()),
        ("ISA".into(), "aarch64".into()),
    ];
    e.outputs = vec![
        RelPath::new("reports/junit.xml").expect("a path"),
        RelPath::new("a.json").expect("a path"),
    ];
    e.working_directory = RelPath::new("repo/sub").expect("a path");
    let encoded = encode(&e).expect("encoded");
    let command: reapi::Command = decode(&encoded, encoded.command);
    let names: Vec<&str> = command
        .environment_variables
        .iter()
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(names, ["A", "LANG", "PATH"]);
    let props: Vec<(&str, &str)> = command
        .platform
        .as_ref()
        .expect("a platform")
        .properties
        .iter()
        .map(|p| (p.name.as_str(), p.value.as_str()))
        .collect();
    assert_eq!(
        props,
        [("ISA", "aarch64"), ("ISA", "x86-64"), ("OSFamily", "linux")]
    );
    assert_eq!(command.output_paths, ["a.json", "reports/junit.xml"]);
    assert_eq!(command.output_files, command.output_paths);
    assert_eq!(command.working_directory, "repo/sub");
    let action: reapi::Action = decode(&encoded, encoded.action);
    assert_eq!(action.platform, command.platform);
    let root: reapi::Directory = decode(&encoded, encoded.input_root);
    let repo = subdir(&encoded, &root, "repo");
    assert_eq!(
        repo.directories[0].name, "sub",
        "the working directory is made"
    );
}

#[test]
fn a_host_file_that_changes_after_encoding_is_not_uploaded() {
    let dir = tempfile::tempdir().expect("a directory");
    fs_err::write(dir.path().join("f"), "before").expect("write");
    let mut files = Files::new();
    files.add_tree(&RelPath::root(), dir.path()).expect("read");
    let encoded = encode(&execution(files)).expect("encoded");
    let digest = BlobDigest::of(b"before");
    assert_eq!(
        encoded.blob(digest).expect("named").expect("same"),
        b"before"
    );
    fs_err::write(dir.path().join("f"), "after!").expect("write");
    let err = encoded.blob(digest).expect("named").expect_err("changed");
    assert!(
        err.to_string().contains("changed after it was encoded"),
        "{err}"
    );
}

/// A set of files: paths from a small alphabet so that directories are shared.
fn file_set() -> impl Strategy<Value = BTreeMap<String, (Vec<u8>, bool)>> {
    let part = prop::sample::select(vec!["a", "b", "c", "dd", "E"]);
    let path = prop::collection::vec(part, 1..4).prop_map(|p| p.join("/"));
    prop::collection::btree_map(
        path,
        (prop::collection::vec(any::<u8>(), 0..16), any::<bool>()),
        0..12,
    )
    .prop_filter("no path is a prefix directory of another", |m| {
        m.keys()
            .all(|k| !m.keys().any(|o| o.starts_with(&format!("{k}/"))))
    })
}

proptest! {
    #[test]
    fn the_same_execution_in_any_order_is_the_same_action(
        files in file_set(),
        seed in any::<u64>(),
    ) {
        let build = |order: &[(&String, &(Vec<u8>, bool))]| {
            let mut f = Files::new();
            for (path, (bytes, exec)) in order {
                f.bytes(path, bytes, *exec).expect("add");
            }
            encode(&execution(f)).expect("encoded")
        };
        let mut order: Vec<_> = files.iter().collect();
        let first = build(&order);
        // Another order of insertion.
        let n = order.len().max(1);
        order.rotate_left(usize::try_from(seed).unwrap_or(0) % n);
        order.reverse();
        let second = build(&order);
        prop_assert_eq!(first.action, second.action);
        prop_assert_eq!(first.input_root, second.input_root);
        // A change to any one file changes the action.
        if let Some((path, (bytes, exec))) = files.iter().next() {
            let mut changed = files.clone();
            let mut other = bytes.clone();
            other.push(1);
            changed.insert(path.clone(), (other, *exec));
            let order: Vec<_> = changed.iter().collect();
            prop_assert_ne!(build(&order).action, first.action);
            let mut flipped = files.clone();
            flipped.insert(path.clone(), (bytes.clone(), !exec));
            let order: Vec<_> = flipped.iter().collect();
            prop_assert_ne!(build(&order).action, first.action);
        }
    }
}

/// The input root's digest of a directory on disk, as BuildGrid's own client computes it
/// (`buildgrid.server.client.cas.merkle_tree_maker`), from the venv the tests install.
fn buildgrid_root_digest(dir: &std::path::Path) -> (String, i64) {
    let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/buildgrid/.venv");
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "this cross-check needs BuildGrid's venv at {}; install it with `./scripts/test.sh`",
        venv.display()
    );
    let script = [
        "import sys",
        "from buildgrid.server.client.cas import merkle_tree_maker",
        "last = None",
        "for node, _blob, _path in merkle_tree_maker(sys.argv[1]):",
        "    last = node",
        "print(last.digest.hash, last.digest.size_bytes)",
    ]
    .join("\n");
    let out = std::process::Command::new(&python)
        .arg("-c")
        .arg(script)
        .arg(dir)
        .output()
        .expect("run BuildGrid's python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let (hash, size) = text.trim().split_once(' ').expect("hash size");
    (hash.to_owned(), size.parse().expect("a size"))
}

#[test]
fn the_input_root_digest_is_the_one_buildgrid_computes() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("a directory");
    let root = dir.path();
    for (path, body) in [
        ("README.md", "hello\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("src/lib.rs", "\n"),
        ("src/nested/deep/x.txt", "x"),
        ("tests/a.txt", "same"),
        ("tests/b.txt", "same"),
        ("Zeta", ""),
    ] {
        let file = root.join(path);
        fs_err::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
        fs_err::write(&file, body).expect("write");
    }
    fs_err::create_dir_all(root.join("empty")).expect("mkdir");
    let script = root.join("run.sh");
    fs_err::write(&script, "#!/bin/sh\necho hi\n").expect("write");
    fs_err::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::os::unix::fs::symlink("../README.md", root.join("src/readme")).expect("symlink");
    std::os::unix::fs::symlink("src", root.join("code")).expect("symlink");

    let mut files = Files::new();
    files
        .add_tree(&RelPath::root(), root)
        .expect("read the tree");
    let encoded = encode(&execution(files)).expect("encoded");
    let (hash, size) = buildgrid_root_digest(root);
    assert_eq!(encoded.input_root.to_reapi().hash, hash);
    assert_eq!(encoded.input_root.to_reapi().size_bytes, size);
}
