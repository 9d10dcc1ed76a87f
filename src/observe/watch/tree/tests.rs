//! The tree's promise, tested whole: after every kind of change a user
//! makes, the watcher's snapshot is the one an `lstat` of every file gives.

use std::path::Path;

use super::Watcher;
use crate::base::testing::{commit_all, git, write};
use crate::observe::inputs;
use crate::observe::watch::testing::Mapping;

/// After every kind of change a user makes, the watcher's snapshot is the
/// one an lstat of every file gives, for the whole tree and for a
/// directory inside it (with an exclusion), and it re-reads only what
/// changed.
#[test]
fn the_watcher_agrees_with_a_full_snapshot_after_every_change() {
    agrees_after_every_change(None);
}

/// The same with no descriptor held: every suspect is opened to be
/// asked, behind a cookie.
#[test]
fn the_watcher_agrees_with_a_full_snapshot_holding_no_descriptor() {
    agrees_after_every_change(Some(0));
}

fn agrees_after_every_change(held_limit: Option<usize>) {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    git(dir, &["init", "-q"]);
    for (path, content) in [
        ("a/one.txt", "one\n"),
        ("a/two.txt", "two\n"),
        ("a/deep/three.txt", "three\n"),
        ("b/four.txt", "four\n"),
        ("openspec/changes/c/proposal.md", "why\n"),
        ("top.txt", "top\n"),
    ] {
        write(dir, path, content);
    }
    commit_all(dir);
    let mut watcher = Watcher::new(
        Box::new(|_| {}),
        crate::observe::watch::GitUserFiles::default(),
    )
    .expect("inotify is usable");
    if let Some(limit) = held_limit {
        watcher.held_limit = limit;
    }
    let exclude = ["changes/".to_owned()];
    let openspec = dir.join("openspec");
    let check = |watcher: &mut Watcher, step: &str| -> usize {
        // One query for the whole tree and a directory inside it, as
        // `prove` asks for all of a workspace's repositories at once.
        let wanted: [(&Path, &[String]); 2] = [(dir, &[]), (&openspec, &exclude)];
        let answered = watcher.snapshots(&wanted).expect("the watcher answers");
        let direct = inputs::snapshots(&wanted);
        assert_eq!(answered.len(), 2);
        for (a, d) in answered.iter().zip(direct) {
            let d = d.expect("a snapshot");
            assert_eq!(a.dir, d.dir, "{step}");
            assert_eq!(a.files, d.files, "{step}: {}", d.dir.display());
        }
        answered[0].rehashed
    };
    check(&mut watcher, "first (a full snapshot)");
    assert_eq!(check(&mut watcher, "nothing changed"), 0);

    write(dir, "a/one.txt", "one, edited\n");
    assert_eq!(check(&mut watcher, "an edit"), 1, "only the edited file");
    fs_err::remove_file(dir.join("a/two.txt")).expect("rm");
    check(&mut watcher, "a deletion");
    write(dir, "a/two.txt", "two again\n");
    check(&mut watcher, "re-created");
    fs_err::set_permissions(dir.join("top.txt"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    check(&mut watcher, "made executable");
    fs_err::remove_file(dir.join("b/four.txt")).expect("rm");
    std::os::unix::fs::symlink("../top.txt", dir.join("b/four.txt")).expect("symlink");
    check(&mut watcher, "a file replaced by a link");
    fs_err::rename(dir.join("a"), dir.join("a-moved")).expect("mv");
    check(&mut watcher, "a directory moved away");
    fs_err::rename(dir.join("a-moved"), dir.join("a")).expect("mv back");
    check(&mut watcher, "and back");
    write(
        dir,
        "a/deep/three.txt",
        "three, edited in a directory moved back\n",
    );
    check(&mut watcher, "an edit below the moved directory");
    fs_err::remove_dir_all(dir.join("a/deep")).expect("rm -r");
    write(dir, "a/deep/three.txt", "three, in a new directory\n");
    check(&mut watcher, "a directory removed and made anew");
    write(
        dir,
        "a/deep/three.txt",
        "three, edited in the new directory\n",
    );
    assert_eq!(
        check(&mut watcher, "an edit in the new directory"),
        1,
        "the new directory is watched"
    );
    write(dir, "untracked.txt", "not tracked\n");
    assert_eq!(check(&mut watcher, "an untracked file"), 0);
    write(dir, "c/new.txt", "new\n");
    git(dir, &["add", "c/new.txt"]);
    check(&mut watcher, "a file added to the index");
    write(dir, "c/new.txt", "new, edited after it was added\n");
    assert_eq!(
        check(&mut watcher, "an edit in a newly tracked directory"),
        1
    );
    git(dir, &["rm", "-q", "--cached", "top.txt"]);
    check(&mut watcher, "a file removed from the index");
    write(dir, "openspec/changes/c/proposal.md", "why, edited\n");
    check(&mut watcher, "an edit in the excluded packet");
    fs_err::remove_file(dir.join("b/four.txt")).expect("rm link");
    fs_err::remove_dir(dir.join("b")).expect("rmdir");
    write(dir, "b", "a file where a directory was\n");
    check(&mut watcher, "a directory replaced by a file");

    // What happens to a tracked file without an event in its directory.
    let outside = tempfile::tempdir().expect("tempdir");
    let out = outside.path();
    // A hard link outside the work tree: the link itself changes only
    // the inode's link count, then the file is written through it.
    fs_err::hard_link(dir.join("a/two.txt"), out.join("x")).expect("ln");
    check(&mut watcher, "a hard link made outside the tree");
    fs_err::write(out.join("x"), "two, written through an outside link\n").expect("write");
    assert_eq!(
        check(&mut watcher, "a write through the outside link"),
        1,
        "the file's own watch saw it"
    );
    fs_err::set_permissions(out.join("x"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    check(&mut watcher, "made executable through the outside link");
    // A shared writable mapping: no event for its writes, and a second
    // write while the page is still dirty does not change the mtime.
    let mut mapping = Mapping::new(&dir.join("a/one.txt"));
    check(&mut watcher, "mapped, not written yet");
    mapping.write(0, b"O");
    check(&mut watcher, "a first write through a shared mapping");
    mapping.write(1, b"N");
    check(&mut watcher, "a second write in the same mapping");
    mapping.write(2, b"E");
    mapping.finish();
    check(&mut watcher, "a write, then the mapping is gone");
    assert_eq!(
        check(&mut watcher, "nothing changed after the mapping"),
        0,
        "a file nothing writes any more is not re-read"
    );
    // The same through a mapping of the outside link.
    let mut mapping = Mapping::new(&out.join("x"));
    mapping.write(0, b"T");
    check(
        &mut watcher,
        "a write through a mapping of the outside link",
    );
    mapping.write(1, b"W");
    check(&mut watcher, "a second write through that mapping");
    mapping.finish();
    fs_err::remove_file(out.join("x")).expect("rm the outside link");
    check(&mut watcher, "the outside link removed");
    // A file replaced by one renamed in from outside the tree.
    fs_err::write(out.join("new.txt"), "one, renamed in from outside\n").expect("write");
    fs_err::rename(out.join("new.txt"), dir.join("a/one.txt")).expect("mv");
    check(&mut watcher, "a file renamed in from outside");
    // A directory replaced by a symbolic link to a directory outside:
    // its files are read through the link, and changed where it points.
    fs_err::create_dir(out.join("deep")).expect("mkdir");
    fs_err::write(out.join("deep/three.txt"), "three, outside\n").expect("write");
    fs_err::remove_dir_all(dir.join("a/deep")).expect("rm -r");
    std::os::unix::fs::symlink(out.join("deep"), dir.join("a/deep")).expect("symlink");
    check(
        &mut watcher,
        "a directory replaced by a link to one outside",
    );
    let held = |watcher: &Watcher| watcher.trees[0].held.contains_key("a/deep/three.txt");
    assert!(
        !held(&watcher),
        "nothing is held where a linked directory points (it may be another mount)"
    );
    fs_err::write(out.join("deep/three.txt"), "three, edited outside\n").expect("write");
    check(&mut watcher, "an edit where the linked directory points");
    fs_err::write(out.join("deep/tmp"), "three, renamed over outside\n").expect("write");
    fs_err::rename(out.join("deep/tmp"), out.join("deep/three.txt")).expect("mv");
    check(&mut watcher, "a rename where the linked directory points");
    fs_err::create_dir(out.join("deep2")).expect("mkdir");
    fs_err::write(out.join("deep2/three.txt"), "three, elsewhere\n").expect("write");
    fs_err::rename(out.join("deep"), out.join("deep-old")).expect("mv");
    fs_err::rename(out.join("deep2"), out.join("deep")).expect("mv");
    check(
        &mut watcher,
        "the linked directory's target replaced outside",
    );
    fs_err::remove_file(dir.join("a/deep")).expect("rm link");
    write(dir, "a/deep/three.txt", "three, a directory again\n");
    check(&mut watcher, "the link replaced by a directory again");
    assert_eq!(held(&watcher), held_limit.is_none());
    write(dir, "a/deep/three.txt", "three, edited once more\n");
    assert_eq!(
        check(&mut watcher, "an edit in the directory that was a link"),
        1,
        "it is watched again, and nothing else is re-read"
    );
    assert!(
        watcher.served().full_snapshots >= 3,
        "{:?}",
        watcher.served()
    );
    let held: usize = watcher.trees.iter().map(|t| t.held.len()).sum();
    assert_eq!(held, watcher.held_count, "every held descriptor is counted");
    assert!(held <= watcher.held_limit);
    nothing_is_asked_twice(&mut watcher, dir);
}

/// The query after one with nothing new asks about no file and reads
/// none: the watcher's own reads and asks made no file a suspect.
pub(super) fn nothing_is_asked_twice(watcher: &mut Watcher, dir: &Path) {
    // This one asks about what the test's own snapshots opened.
    watcher.snapshot(dir, &[]).expect("the watcher answers");
    let again = watcher.snapshot(dir, &[]).expect("the watcher answers");
    assert_eq!((again.rehashed, watcher.asked), (0, 0));
}

/// The untracked files the watcher answers are the ones a walk finds after every kind of
/// change, and it walks again only after a change that could move them: never for an edit of
/// a tracked file or a change inside an ignored directory.
#[test]
fn untracked_files_agree_with_a_walk_and_are_walked_only_after_a_change_that_could_move_them() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    git(dir, &["init", "-q"]);
    write(dir, "a/one.txt", "one\n");
    write(dir, ".gitignore", "build/\n");
    commit_all(dir);
    let mut watcher = Watcher::new(
        Box::new(|_| {}),
        crate::observe::watch::GitUserFiles::default(),
    )
    .expect("inotify is usable");
    let wanted: [(&Path, &[String]); 1] = [(dir, &[])];
    let check = |watcher: &mut Watcher, step: &str, walks: u64| {
        let refreshed = watcher.refreshed(&wanted).expect("the watcher answers");
        let (canonical, t, _) = refreshed[0].clone();
        let answered = watcher
            .untracked(t, &canonical, &[])
            .expect("the watcher answers");
        let walked = inputs::untracked(dir, &[]).expect("a walk");
        assert_eq!(answered, walked, "{step}");
        assert_eq!(watcher.served.untracked_walks, walks, "{step}");
    };
    check(&mut watcher, "first query", 1);
    check(&mut watcher, "nothing changed", 1);
    write(dir, "a/one.txt", "edited\n");
    check(&mut watcher, "a tracked file edited", 1);
    write(dir, "a/new.txt", "new\n");
    check(&mut watcher, "a new file", 2);
    write(dir, "a/new.txt", "changed\n");
    check(&mut watcher, "an untracked file edited", 3);
    write(dir, "n/deep/x.txt", "x\n");
    check(&mut watcher, "a new directory", 4);
    write(dir, "n/deep/y.txt", "y\n");
    check(
        &mut watcher,
        "a file in a directory only the walk watches",
        5,
    );
    fs_err::rename(dir.join("n/deep/y.txt"), dir.join("a/y.txt")).expect("mv");
    check(&mut watcher, "an untracked file moved", 6);
    write(dir, "build/out.txt", "out\n");
    check(&mut watcher, "an ignored directory made", 7);
    write(dir, "build/more.txt", "more\n");
    check(&mut watcher, "a change inside an ignored directory", 7);
    write(dir, ".gitignore", "build/\nn/\n");
    check(&mut watcher, "a tracked .gitignore edited", 8);
    git(dir, &["add", "a/new.txt"]);
    check(&mut watcher, "a file added to the index", 9);
    write(dir, ".git/info/exclude", "a/y.txt\n");
    check(&mut watcher, "info/exclude edited", 10);
    check(&mut watcher, "nothing changed again", 10);
}

/// The user's git files are the ones the CLI's environment names, handed to the watcher:
/// a change of the ignore file or configuration under the home it was given makes the next
/// query walk again, and the same change under a home it was not given does not.
#[test]
fn the_user_s_git_files_are_the_ones_the_watcher_was_given() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("repo");
    git(tmp.path(), &["init", "-q", "repo"]);
    write(&dir, "a/one.txt", "one\n");
    commit_all(&dir);
    let home = tmp.path().join("home");
    let xdg = tmp.path().join("xdg");
    let given = [
        super::GitUserFiles {
            home: Some(home.clone()),
            config_home: None,
        },
        super::GitUserFiles {
            home: Some(home.clone()),
            config_home: Some(xdg.clone()),
        },
    ];
    let others = super::GitUserFiles {
        home: Some(tmp.path().join("another-home")),
        config_home: None,
    };
    let walks = |user: &super::GitUserFiles, change: &dyn Fn()| -> u64 {
        let mut watcher = Watcher::new(Box::new(|_| {}), user.clone()).expect("inotify is usable");
        let wanted: [(&Path, &[String]); 1] = [(&dir, &[])];
        let ask = |watcher: &mut Watcher| {
            let refreshed = watcher.refreshed(&wanted).expect("the watcher answers");
            let (canonical, t, _) = refreshed[0].clone();
            watcher
                .untracked(t, &canonical, &[])
                .expect("the watcher answers");
        };
        ask(&mut watcher);
        change();
        ask(&mut watcher);
        watcher.served.untracked_walks
    };
    let edits: [(&Path, &str); 4] = [
        (&home, ".gitconfig"),
        (&home, ".config/git/ignore"),
        (&xdg, "git/ignore"),
        (&xdg, "git/config"),
    ];
    for (n, (base, file)) in edits.into_iter().enumerate() {
        let user = if base == xdg { &given[1] } else { &given[0] };
        let edit = || write(base, file, &format!("# edit {n}\n"));
        assert_eq!(walks(user, &edit), 2, "{file} edited under the home given");
        let edit = || write(base, file, &format!("# again {n}\n"));
        assert_eq!(walks(&others, &edit), 1, "{file} edited elsewhere");
    }
    // `$XDG_CONFIG_HOME`, when set, replaces `~/.config` as git's.
    let user = &given[1];
    let edit = || write(&home, ".config/git/ignore", "# not git's\n");
    assert_eq!(
        walks(user, &edit),
        1,
        "~/.config is not git's under XDG_CONFIG_HOME"
    );
}
