//! A job's world: the root built for it in its own mount namespace (see [`crate::World`]).
//!
//! The init plans it ([`WorldPlan::new`]: which mounts, in which order, every path already a
//! C string) before it starts the job; the job's process, between `clone` and `exec`, only
//! carries the plan out ([`WorldPlan::build`]), with system calls that allocate nothing
//! (the process shares the init's memory, see `sys.rs`).
//!
//! The plan, in order:
//!
//! 1. a fresh `tmpfs` on the init's staging directory: the job's root to be;
//! 2. every entry — the system's directories, `/tmp`, `/run`, `/dev`, `/proc`, `/sys`, the
//!    world's read-only, writable, overlaid and private paths, and a cover over each hidden
//!    path that one of them would show — in the order of its depth, each on a mount point
//!    made for it (the directories above it created in the new root, or found in what is
//!    mounted there already);
//! 3. the covers made read-only, then `pivot_root` into the new root and the old root
//!    detached, the new root made read-only;
//! 4. every capability dropped and `no_new_privs` set, so the job can undo nothing of it.
//!
//! Invariant: nothing of the host is reachable from the job but what an entry mounted; the
//! old root is detached before the job's command starts.

use std::collections::BTreeSet;
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, open};
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sys::stat::Mode;
use nix::unistd::{chdir, mkdir};

use crate::sys;
use crate::types::{OverlaySpec, World};

/// Device files of the host shown in every world's `/dev`.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];
/// Parts of `/proc` a job may read but not write (as container runtimes keep them).
const PROC_READ_ONLY: &[&str] = &["sys", "sysrq-trigger", "irq", "bus", "fs"];

/// One system call of the plan, with what it is for (shown when it fails).
#[derive(Debug)]
struct Step {
    op: Op,
    what: String,
    /// A missing path (`ENOENT`) skips the step instead of failing the job.
    optional: bool,
}

#[derive(Debug)]
enum Op {
    /// `mkdir`; an existing directory is fine.
    Mkdir { path: CString, mode: u32 },
    /// Creates an empty file (a mount point for a file); an existing one is fine.
    Touch { path: CString },
    /// `symlink`; an existing entry is fine.
    Symlink { target: CString, path: CString },
    Mount {
        source: Option<CString>,
        target: CString,
        fstype: Option<CString>,
        flags: MsFlags,
        data: Option<CString>,
    },
    /// The mount at `target` and every one below it made read-only; where the kernel has no
    /// `mount_setattr`, the mount at `target` alone, keeping `keep`.
    ReadOnly { target: CString, keep: MsFlags },
    /// `mount(NULL, target, NULL, flags)`: a remount.
    Remount { target: CString, flags: MsFlags },
}

/// A job's world, planned: what its process does before `exec`.
#[derive(Debug)]
pub(crate) struct WorldPlan {
    steps: Vec<Step>,
    staging: CString,
    put_old: CString,
    last_cap: u32,
}

/// What an entry of the world is.
#[derive(Debug, Clone)]
enum Kind {
    /// An empty `tmpfs` (writable unless `read_only` at the end).
    Tmpfs {
        mode: u32,
        cover: bool,
    },
    /// A host directory or file, at this path.
    Bind {
        source: PathBuf,
        writable: bool,
        file: bool,
        keep: MsFlags,
    },
    /// A link, recreated.
    Symlink {
        text: PathBuf,
    },
    Overlay {
        options: String,
    },
    Dev,
    Proc,
}

#[derive(Debug, Clone)]
struct Entry {
    target: PathBuf,
    kind: Kind,
}

/// Builds C strings; a path with a NUL byte cannot be named to the kernel.
fn c(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("`{}` contains a NUL byte", path.display()))
}

fn c_str(text: &str) -> CString {
    CString::new(text).expect("a constant holds no NUL byte")
}

/// The depth of an absolute path (`/` is 0).
fn depth(path: &Path) -> usize {
    path.components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count()
}

/// `path` under `root` (`path` absolute).
fn under(root: &Path, path: &Path) -> PathBuf {
    let relative = path.strip_prefix("/").unwrap_or(path);
    root.join(relative)
}

/// The flags of the mount `path` lies on that a read-only remount must keep (a remount
/// that would drop `nosuid` or `nodev` is refused in a user namespace).
fn kept_flags(path: &Path) -> MsFlags {
    use nix::sys::statvfs::{FsFlags, statvfs};
    let Ok(st) = statvfs(path) else {
        return MsFlags::empty();
    };
    let mut flags = MsFlags::empty();
    for (has, flag) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if st.flags().contains(has) {
            flags |= flag;
        }
    }
    flags
}

/// A host path as a world shows it: left out when it does not exist; else where it really
/// is, and the link to recreate when the given path is not that.
fn resolve(path: &Path) -> Option<(PathBuf, Option<(PathBuf, PathBuf)>)> {
    let meta = fs_err::symlink_metadata(path).ok()?;
    let real = fs_err::canonicalize(path).ok()?;
    let link = (meta.file_type().is_symlink() || real != path).then(|| {
        let text = if meta.file_type().is_symlink() {
            fs_err::read_link(path).unwrap_or_else(|_| real.clone())
        } else {
            real.clone()
        };
        (path.to_path_buf(), text)
    });
    Some((real, link))
}

/// Whether `inner` is `outer` or lies below it.
fn within(inner: &Path, outer: &Path) -> bool {
    inner.starts_with(outer)
}

/// Overlayfs splits its options at `,` and its layers at `:`; such a path cannot be named
/// there without escapes the kernel does not apply everywhere.
fn overlay_path(path: &Path) -> Result<String, String> {
    match path.to_str() {
        Some(text) if !text.contains([',', ':', '\\', '\n']) => Ok(text.to_owned()),
        _ => Err(format!(
            "`{}` cannot be an overlay layer: its path is not UTF-8 or holds `,`, `:` or `\\`",
            path.display()
        )),
    }
}

fn overlay_options(overlay: &OverlaySpec, user_namespace: bool) -> Result<String, String> {
    if overlay.layers.is_empty() {
        return Err(format!(
            "the overlay on `{}` has no layer",
            overlay.target.display()
        ));
    }
    let mut layers = Vec::new();
    for layer in &overlay.layers {
        let real =
            fs_err::canonicalize(layer).map_err(|e| format!("an overlay layer is missing: {e}"))?;
        layers.push(overlay_path(&real)?);
    }
    let upper = overlay.scratch.join("upper");
    let work = OverlaySpec::work_dir(&overlay.scratch);
    for dir in [&upper, &work] {
        fs_err::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let mut options = format!(
        "lowerdir={},upperdir={},workdir={}",
        layers.join(":"),
        overlay_path(&fs_err::canonicalize(&upper).map_err(|e| e.to_string())?)?,
        overlay_path(&fs_err::canonicalize(&work).map_err(|e| e.to_string())?)?
    );
    if user_namespace {
        options.push_str(",userxattr");
    }
    Ok(options)
}

/// The entries of a world, unordered.
fn entries(world: &World, hidden: &[PathBuf], user_namespace: bool) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    let mut read_only: Vec<PathBuf> = World::SYSTEM.iter().map(PathBuf::from).collect();
    // A resolver outside /etc (systemd-resolved's) is where the name lookups go.
    if let Ok(real) = fs_err::canonicalize("/etc/resolv.conf")
        && !real.starts_with("/etc")
    {
        read_only.push(real);
    }
    read_only.extend(world.read_only.iter().cloned());
    // Shown already by a read-only directory above it: nothing to mount.
    let mut shown: Vec<PathBuf> = Vec::new();
    let mut bound: Vec<(PathBuf, Kind)> = Vec::new();
    for path in &read_only {
        let Some((real, link)) = resolve(path) else {
            continue;
        };
        if let Some((at, text)) = link {
            out.push(Entry {
                target: at,
                kind: Kind::Symlink { text },
            });
        }
        if shown.iter().any(|dir| within(&real, dir)) {
            continue;
        }
        let file = !real.is_dir();
        if !file {
            shown.retain(|dir| !within(dir, &real));
            shown.push(real.clone());
        }
        bound.push((
            real.clone(),
            Kind::Bind {
                keep: kept_flags(&real),
                source: real,
                writable: false,
                file,
            },
        ));
    }
    // Keep only the outermost read-only directories (and files outside every one).
    bound.retain(|(real, _)| !shown.iter().any(|dir| real != dir && within(real, dir)));
    for (target, kind) in bound {
        out.push(Entry { target, kind });
    }
    for path in &world.writable {
        let Some((real, link)) = resolve(path) else {
            continue;
        };
        if !real.is_dir() {
            return Err(format!(
                "`{}` cannot be writable in a job's world: it is not a directory",
                path.display()
            ));
        }
        if let Some((at, text)) = link {
            out.push(Entry {
                target: at,
                kind: Kind::Symlink { text },
            });
        }
        out.push(Entry {
            target: real.clone(),
            kind: Kind::Bind {
                keep: kept_flags(&real),
                source: real,
                writable: true,
                file: false,
            },
        });
    }
    for overlay in &world.overlays {
        out.push(Entry {
            target: overlay.target.clone(),
            kind: Kind::Overlay {
                options: overlay_options(overlay, user_namespace)?,
            },
        });
    }
    for path in &world.private {
        out.push(Entry {
            target: path.clone(),
            kind: Kind::Tmpfs {
                mode: 0o700,
                cover: false,
            },
        });
    }
    for (target, mode) in [("/tmp", 0o1777), ("/var/tmp", 0o1777), ("/run", 0o755)] {
        out.push(Entry {
            target: PathBuf::from(target),
            kind: Kind::Tmpfs { mode, cover: false },
        });
    }
    out.push(Entry {
        target: PathBuf::from("/dev"),
        kind: Kind::Dev,
    });
    out.push(Entry {
        target: PathBuf::from("/proc"),
        kind: Kind::Proc,
    });
    if Path::new("/sys").is_dir() {
        out.push(Entry {
            target: PathBuf::from("/sys"),
            kind: Kind::Bind {
                source: PathBuf::from("/sys"),
                writable: false,
                file: false,
                keep: kept_flags(Path::new("/sys")),
            },
        });
    }
    // What must stay hidden is covered where a bound host directory would show it.
    for path in hidden {
        let Ok(real) = fs_err::canonicalize(path) else {
            continue;
        };
        let shows = out.iter().any(|e| match &e.kind {
            Kind::Bind { file: false, .. } => within(&real, &e.target) && real != e.target,
            _ => false,
        });
        let is_bound = out.iter().any(|e| {
            matches!(e.kind, Kind::Bind { .. } | Kind::Overlay { .. }) && e.target == real
        });
        if is_bound {
            return Err(format!(
                "`{}` is hidden from every job, so a job's world cannot show it",
                real.display()
            ));
        }
        if shows && real.is_dir() {
            out.push(Entry {
                target: real,
                kind: Kind::Tmpfs {
                    mode: 0o755,
                    cover: true,
                },
            });
        }
    }
    Ok(out)
}

impl WorldPlan {
    /// Plans `world` for a job, with `hidden` covered where it would show: the root is
    /// built on `staging` (an empty directory of the init's); `user_namespace` says
    /// whether the run has one (overlays then keep their metadata in `user.*` attributes).
    /// Reads the host (which paths exist, where links lead, mount flags); changes nothing
    /// but the overlays' scratch directories, which it creates.
    pub(crate) fn new(
        world: &World,
        hidden: &[PathBuf],
        staging: &Path,
        user_namespace: bool,
    ) -> Result<Self, String> {
        let mut entries = entries(world, hidden, user_namespace)?;
        // A directory before what lies in it; the same depth in the order given.
        entries.sort_by_key(|e| depth(&e.target));
        // A link made in the new root leads wherever its text says once the job runs, but
        // elsewhere (the host's root) while the root is built: nothing is mounted below one.
        for link in entries
            .iter()
            .filter(|e| matches!(e.kind, Kind::Symlink { .. }))
        {
            if let Some(inner) = entries
                .iter()
                .find(|e| e.target != link.target && within(&e.target, &link.target))
            {
                return Err(format!(
                    "`{}` lies below `{}`, a link in the job's world: name it by its real path",
                    inner.target.display(),
                    link.target.display()
                ));
            }
        }
        let mut plan = WorldPlan {
            steps: Vec::new(),
            staging: c(staging)?,
            put_old: c(&staging.join(".old"))?,
            last_cap: last_capability(),
        };
        let nosuid_nodev = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        plan.push(
            Op::Mount {
                source: Some(c_str("tmpfs")),
                target: c(staging)?,
                fstype: Some(c_str("tmpfs")),
                flags: nosuid_nodev,
                data: Some(c_str("mode=0755")),
            },
            "mount the root's tmpfs".to_owned(),
            false,
        );
        let mut made: BTreeSet<PathBuf> = BTreeSet::new();
        let mut covers = Vec::new();
        for entry in &entries {
            let at = under(staging, &entry.target);
            if let Some(parent) = entry.target.parent() {
                plan.mkdirs(staging, parent, &mut made)?;
            }
            let shown = entry.target.display().to_string();
            match &entry.kind {
                Kind::Symlink { text } => plan.push(
                    Op::Symlink {
                        target: c(text)?,
                        path: c(&at)?,
                    },
                    format!("link `{shown}` to `{}`", text.display()),
                    false,
                ),
                Kind::Tmpfs { mode, cover } => {
                    plan.mkdir(&at, &shown)?;
                    let mut flags = nosuid_nodev;
                    if *cover {
                        flags |= MsFlags::MS_NOEXEC;
                        covers.push(at.clone());
                    }
                    plan.push(
                        Op::Mount {
                            source: Some(c_str("tmpfs")),
                            target: c(&at)?,
                            fstype: Some(c_str("tmpfs")),
                            flags,
                            data: Some(c_str(&format!("mode={mode:o}"))),
                        },
                        if *cover {
                            format!("hide `{shown}`")
                        } else {
                            format!("mount a private tmpfs on `{shown}`")
                        },
                        false,
                    );
                }
                Kind::Bind {
                    source,
                    writable,
                    file,
                    keep,
                } => {
                    if *file {
                        plan.push(
                            Op::Touch { path: c(&at)? },
                            format!("make the mount point `{shown}`"),
                            false,
                        );
                    } else {
                        plan.mkdir(&at, &shown)?;
                    }
                    plan.push(
                        Op::Mount {
                            source: Some(c(source)?),
                            target: c(&at)?,
                            fstype: None,
                            flags: MsFlags::MS_BIND | MsFlags::MS_REC,
                            data: None,
                        },
                        format!("show `{}`", source.display()),
                        false,
                    );
                    if !writable {
                        plan.push(
                            Op::ReadOnly {
                                target: c(&at)?,
                                keep: *keep,
                            },
                            format!("make `{shown}` read-only"),
                            false,
                        );
                    }
                }
                Kind::Overlay { options } => {
                    plan.mkdir(&at, &shown)?;
                    plan.push(
                        Op::Mount {
                            source: Some(c_str("overlay")),
                            target: c(&at)?,
                            fstype: Some(c_str("overlay")),
                            flags: MsFlags::empty(),
                            data: Some(CString::new(options.as_str()).map_err(|_| {
                                format!("the overlay on `{shown}` has a NUL byte in its options")
                            })?),
                        },
                        format!("mount an overlay on `{shown}`"),
                        false,
                    );
                }
                Kind::Dev => plan.dev(&at)?,
                Kind::Proc => plan.proc(&at)?,
            }
            made.insert(entry.target.clone());
        }
        for cover in covers {
            plan.push(
                Op::Remount {
                    target: c(&cover)?,
                    flags: MsFlags::MS_REMOUNT
                        | MsFlags::MS_RDONLY
                        | MsFlags::MS_NOSUID
                        | MsFlags::MS_NODEV
                        | MsFlags::MS_NOEXEC,
                },
                format!("make the cover of `{}` read-only", cover.display()),
                false,
            );
        }
        plan.push(
            Op::Mkdir {
                path: plan.put_old.clone(),
                mode: 0o700,
            },
            "make the old root's mount point".to_owned(),
            false,
        );
        Ok(plan)
    }

    fn push(&mut self, op: Op, what: String, optional: bool) {
        self.steps.push(Step { op, what, optional });
    }

    fn mkdir(&mut self, at: &Path, shown: &str) -> Result<(), String> {
        self.push(
            Op::Mkdir {
                path: c(at)?,
                mode: 0o755,
            },
            format!("make the mount point `{shown}`"),
            false,
        );
        Ok(())
    }

    /// The directories from the root down to `dir` (a path of the world), each made once.
    fn mkdirs(
        &mut self,
        staging: &Path,
        dir: &Path,
        made: &mut BTreeSet<PathBuf>,
    ) -> Result<(), String> {
        let mut at = PathBuf::from("/");
        for component in dir.components() {
            let Component::Normal(name) = component else {
                continue;
            };
            at.push(name);
            if made.insert(at.clone()) {
                let shown = at.display().to_string();
                self.mkdir(&under(staging, &at), &shown)?;
            }
        }
        Ok(())
    }

    /// A minimal `/dev`: a `tmpfs` with the host's harmless devices, a `pts` and a `shm` of
    /// the job's own, and the usual links.
    fn dev(&mut self, at: &Path) -> Result<(), String> {
        self.mkdir(at, "/dev")?;
        self.push(
            Op::Mount {
                source: Some(c_str("tmpfs")),
                target: c(at)?,
                fstype: Some(c_str("tmpfs")),
                flags: MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
                data: Some(c_str("mode=0755")),
            },
            "mount /dev".to_owned(),
            false,
        );
        for device in DEVICES {
            let host = Path::new("/dev").join(device);
            if fs_err::metadata(&host).is_err() {
                continue;
            }
            let path = at.join(device);
            self.push(
                Op::Touch { path: c(&path)? },
                format!("make `{}`", host.display()),
                false,
            );
            self.push(
                Op::Mount {
                    source: Some(c(&host)?),
                    target: c(&path)?,
                    fstype: None,
                    flags: MsFlags::MS_BIND,
                    data: None,
                },
                format!("show `{}`", host.display()),
                false,
            );
        }
        for (dir, fstype, data, mode) in [
            (
                "pts",
                "devpts",
                "newinstance,ptmxmode=0666,mode=0620",
                0o755,
            ),
            ("shm", "tmpfs", "mode=1777", 0o1777),
        ] {
            let path = at.join(dir);
            self.push(
                Op::Mkdir {
                    path: c(&path)?,
                    mode,
                },
                format!("make /dev/{dir}"),
                false,
            );
            self.push(
                Op::Mount {
                    source: Some(c_str(fstype)),
                    target: c(&path)?,
                    fstype: Some(c_str(fstype)),
                    flags: MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
                    data: Some(c_str(data)),
                },
                format!("mount /dev/{dir}"),
                false,
            );
        }
        for (name, target) in [
            ("ptmx", "pts/ptmx"),
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ] {
            self.push(
                Op::Symlink {
                    target: c_str(target),
                    path: c(&at.join(name))?,
                },
                format!("link /dev/{name}"),
                false,
            );
        }
        Ok(())
    }

    /// `/proc` of the job's own PID namespace, its system-wide knobs read-only.
    fn proc(&mut self, at: &Path) -> Result<(), String> {
        self.mkdir(at, "/proc")?;
        self.push(
            Op::Mount {
                source: Some(c_str("proc")),
                target: c(at)?,
                fstype: Some(c_str("proc")),
                flags: MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
                data: None,
            },
            "mount /proc for the job's PID namespace".to_owned(),
            false,
        );
        for name in PROC_READ_ONLY {
            let path = c(&at.join(name))?;
            self.push(
                Op::Mount {
                    source: Some(path.clone()),
                    target: path.clone(),
                    fstype: None,
                    flags: MsFlags::MS_BIND | MsFlags::MS_REC,
                    data: None,
                },
                format!("bind /proc/{name}"),
                true,
            );
            self.push(
                Op::ReadOnly {
                    target: path,
                    keep: MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
                },
                format!("make /proc/{name} read-only"),
                true,
            );
        }
        Ok(())
    }

    /// Builds the world and enters it, then gives up every privilege. Runs in the job's
    /// process between `clone` and `exec` (in its own mount namespace): allocates nothing.
    /// On failure, says which step failed and why.
    pub(crate) fn build(&self) -> Result<(), (&str, Errno)> {
        for step in &self.steps {
            match run(&step.op) {
                Ok(()) => {}
                Err(Errno::ENOENT) if step.optional => {}
                Err(e) => return Err((step.what.as_str(), e)),
            }
        }
        nix::unistd::pivot_root(self.staging.as_c_str(), self.put_old.as_c_str())
            .map_err(|e| ("enter the job's root (pivot_root)", e))?;
        chdir(c"/").map_err(|e| ("change to the new root", e))?;
        umount2(c"/.old", MntFlags::MNT_DETACH).map_err(|e| ("detach the host's root", e))?;
        mount(
            None::<&CStr>,
            c"/",
            None::<&CStr>,
            MsFlags::MS_REMOUNT
                | MsFlags::MS_BIND
                | MsFlags::MS_RDONLY
                | MsFlags::MS_NOSUID
                | MsFlags::MS_NODEV,
            None::<&CStr>,
        )
        .map_err(|e| ("make the root read-only", e))?;
        sys::drop_all_capabilities(self.last_cap).map_err(|e| ("drop every capability", e))?;
        nix::sys::prctl::set_no_new_privs().map_err(|e| ("set no_new_privs", e))?;
        Ok(())
    }
}

/// One step. Allocates nothing.
fn run(op: &Op) -> Result<(), Errno> {
    match op {
        Op::Mkdir { path, mode } => match mkdir(path.as_c_str(), Mode::from_bits_truncate(*mode)) {
            Ok(()) | Err(Errno::EEXIST) => Ok(()),
            Err(e) => Err(e),
        },
        Op::Touch { path } => {
            match open(
                path.as_c_str(),
                OFlag::O_CREAT | OFlag::O_WRONLY | OFlag::O_CLOEXEC | OFlag::O_NOCTTY,
                Mode::from_bits_truncate(0o644),
            ) {
                Ok(_fd) => Ok(()),
                // A file there already (inside what is mounted), read-only or not.
                Err(Errno::EEXIST | Errno::EROFS | Errno::EACCES | Errno::EISDIR) => Ok(()),
                Err(e) => Err(e),
            }
        }
        Op::Symlink { target, path } => {
            match nix::unistd::symlinkat(target.as_c_str(), nix::fcntl::AT_FDCWD, path.as_c_str()) {
                Ok(()) | Err(Errno::EEXIST) => Ok(()),
                Err(e) => Err(e),
            }
        }
        Op::Mount {
            source,
            target,
            fstype,
            flags,
            data,
        } => mount(
            source.as_deref(),
            target.as_c_str(),
            fstype.as_deref(),
            *flags,
            data.as_deref(),
        ),
        Op::ReadOnly { target, keep } => match sys::make_read_only_recursive(target) {
            Err(Errno::ENOSYS) => mount(
                None::<&CStr>,
                target.as_c_str(),
                None::<&CStr>,
                MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | *keep,
                None::<&CStr>,
            ),
            other => other,
        },
        Op::Remount { target, flags } => mount(
            None::<&CStr>,
            target.as_c_str(),
            None::<&CStr>,
            *flags,
            None::<&CStr>,
        ),
    }
}

/// The highest capability number this kernel knows (`/proc/sys/kernel/cap_last_cap`), or
/// a generous guess (dropping one the kernel does not know fails harmlessly).
fn last_capability() -> u32 {
    fs_err::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(63)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(plan: &WorldPlan) -> Vec<String> {
        plan.steps
            .iter()
            .filter_map(|s| match &s.op {
                Op::Mount { target, .. } => Some(target.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_plan_mounts_the_outer_before_the_inner_and_covers_what_is_hidden() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = fs_err::canonicalize(dir.path()).expect("real path");
        let home = root.join("home");
        let store = home.join("ws/.proofgraph");
        let tools = home.join("tools");
        let snapshot = store.join("runs/r/sandboxes/root");
        for d in [&store, &tools, &snapshot] {
            fs_err::create_dir_all(d).expect("mkdir");
        }
        let staging = root.join("staging");
        fs_err::create_dir_all(&staging).expect("mkdir");
        let world = World {
            read_only: vec![home.join("ws"), tools.clone(), root.join("missing")],
            writable: Vec::new(),
            overlays: vec![OverlaySpec {
                target: snapshot.clone(),
                layers: vec![snapshot.clone()],
                scratch: root.join("scratch"),
            }],
            private: vec![home.clone()],
        };
        let plan =
            WorldPlan::new(&world, std::slice::from_ref(&store), &staging, false).expect("planned");
        let mounted = targets(&plan);
        let at = |p: &Path| under(&staging, p).to_string_lossy().into_owned();
        let position = |p: &Path| {
            mounted
                .iter()
                .position(|m| *m == at(p))
                .unwrap_or_else(|| panic!("{} is not mounted: {mounted:#?}", p.display()))
        };
        // The root first; HOME (private) before what is shown in it; the store covered
        // after the directory that shows it and before the sandbox inside it.
        assert_eq!(mounted[0], staging.to_string_lossy());
        assert!(position(&home) < position(&home.join("ws")));
        assert!(position(&home.join("ws")) < position(&store));
        assert!(position(&store) < position(&snapshot));
        assert!(position(&home) < position(&tools));
        // A path that does not exist is left out; /tmp, /dev and /proc are the job's own.
        assert!(!mounted.iter().any(|m| m.ends_with("missing")));
        for system in ["/tmp", "/dev", "/proc", "/run", "/usr"] {
            position(Path::new(system));
        }
        assert!(root.join("scratch/upper").is_dir() && root.join("scratch/work").is_dir());
        // The cover becomes read-only once everything inside it is mounted.
        let remount = plan
            .steps
            .iter()
            .position(|s| matches!(&s.op, Op::Remount { target, .. } if target.to_string_lossy() == at(&store)))
            .expect("the cover is made read-only");
        let overlay = plan
            .steps
            .iter()
            .position(|s| s.what.starts_with("mount an overlay"))
            .expect("an overlay");
        assert!(remount > overlay);
    }

    #[test]
    fn a_hidden_path_cannot_be_what_a_world_shows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = fs_err::canonicalize(dir.path()).expect("real path");
        let world = World {
            writable: vec![root.clone()],
            ..World::default()
        };
        let err =
            WorldPlan::new(&world, std::slice::from_ref(&root), &root, false).expect_err("refused");
        assert!(err.contains("hidden"), "{err}");
    }

    #[test]
    fn a_link_is_shown_where_it_leads_and_recreated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = fs_err::canonicalize(dir.path()).expect("real path");
        fs_err::create_dir_all(root.join("real/bin")).expect("mkdir");
        std::os::unix::fs::symlink(root.join("real"), root.join("alias")).expect("link");
        let world = World {
            read_only: vec![root.join("alias")],
            ..World::default()
        };
        let plan = WorldPlan::new(&world, &[], &root.join("staging"), false).expect("planned");
        assert!(
            targets(&plan).contains(
                &under(&root.join("staging"), &root.join("real"))
                    .to_string_lossy()
                    .into_owned()
            )
        );
        assert!(plan.steps.iter().any(|s| matches!(&s.op, Op::Symlink { path, .. }
            if path.to_string_lossy() == under(&root.join("staging"), &root.join("alias")).to_string_lossy())));
    }
}
