//! Recording what a job executes: every `execve` and `execveat` of its process tree, with
//! the file's content digest at that moment, as the kernel is about to run it.
//!
//! How: before its `exec`, the job's process installs a seccomp filter
//! ([`ExecFilter`]) that turns every `execve`/`execveat` into a user notification, and
//! hands the listener to the init over a socket (`SCM_RIGHTS`). The init answers each
//! notification ([`Recorder::on_notification`]): it reads the path from the process's
//! memory, opens the file as the process sees it (in its root, through its working
//! directory or descriptor), digests it (BLAKE3; remembered by stat data for the run), reads
//! a `#!` line's interpreter and an ELF file's loader the same way, and lets the call go on.
//! The filter lets through exactly one kind of call unrecorded: the job's own first
//! `execve`, made with the argument and environment arrays the init prepared (their
//! addresses are compared) — the caller knows that program, it is the one it resolved.
//!
//! A job cannot remove the filter (filters only stack), nor answer for the init (the
//! listener is closed in the job by `exec`, being close-on-exec). What is not recorded:
//! programs a process loads without `exec` (a shared library, a script an interpreter
//! reads); a job that calls `execve` with the very addresses of the init's arrays.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, open, openat};
use nix::sys::stat::{Mode, fstat};

use crate::sys;
use crate::types::Executed;

/// The architecture's audit number and its `execve`/`execveat` numbers; for x86-64 also
/// those of the 32-bit ABIs a process may call into.
#[cfg(target_arch = "x86_64")]
mod arch {
    pub(super) const NATIVE: u32 = 0xC000_003E;
    pub(super) const EXECVE: u32 = 59;
    pub(super) const EXECVEAT: u32 = 322;
    /// `i386` system calls (`int 0x80`) and the x32 ABI (numbers with bit 30 set).
    pub(super) const COMPAT: Option<(u32, u32, u32)> = Some((0x4000_0003, 11, 358));
    pub(super) const X32_BIT: u32 = 0x4000_0000;
    pub(super) const X32: Option<(u32, u32)> = Some((X32_BIT + 520, X32_BIT + 545));
}

#[cfg(target_arch = "aarch64")]
mod arch {
    pub(super) const NATIVE: u32 = 0xC000_00B7;
    pub(super) const EXECVE: u32 = 221;
    pub(super) const EXECVEAT: u32 = 281;
    /// 32-bit ARM tasks.
    pub(super) const COMPAT: Option<(u32, u32, u32)> = Some((0x4000_0028, 11, 387));
    pub(super) const X32: Option<(u32, u32)> = None;
}

/// The seccomp program of a job, made by the init before the job's process exists.
#[derive(Debug)]
pub(crate) struct ExecFilter {
    program: Vec<libc::sock_filter>,
}

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
fn arg_low(i: u32) -> u32 {
    16 + 8 * i
}

impl ExecFilter {
    /// The filter for a job whose first `execve` passes `argv` and `envp` (the addresses of
    /// the init's prepared arrays). `None` where recording is not supported (an
    /// architecture other than x86-64 and AArch64).
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub(crate) fn new(argv: u64, envp: u64) -> Option<Self> {
        const FIRST: usize = 7;
        const ALLOW: usize = 15;
        const NOTIFY: usize = 16;
        const COMPAT: usize = 17;
        const COMPAT_NOTIFY: usize = 23;
        // A jump from instruction `at` to `to` (cBPF jumps are relative and forward).
        let rel = |at: usize, to: usize| u8::try_from(to - at - 1).expect("a short jump");
        let low = |v: u64| (v & 0xFFFF_FFFF) as u32;
        let high = |v: u64| (v >> 32) as u32;
        let (x32_execve, x32_execveat) = arch::X32.unwrap_or((u32::MAX, u32::MAX));
        let (compat, compat_execve, compat_execveat) =
            arch::COMPAT.unwrap_or((u32::MAX, u32::MAX, u32::MAX));
        let program = vec![
            /* 0 */ stmt(LD_W_ABS, ARCH),
            /* 1 */ jump(JEQ_K, arch::NATIVE, 0, rel(1, COMPAT)),
            /* 2 */ stmt(LD_W_ABS, NR),
            /* 3 */ jump(JEQ_K, arch::EXECVE, rel(3, FIRST), 0),
            /* 4 */ jump(JEQ_K, arch::EXECVEAT, rel(4, NOTIFY), 0),
            /* 5 */ jump(JEQ_K, x32_execve, rel(5, NOTIFY), 0),
            /* 6 */ jump(JEQ_K, x32_execveat, rel(6, NOTIFY), rel(6, ALLOW)),
            // The job's own first exec: `argv` (args[1]) and `envp` (args[2]) are the
            // init's arrays, both 64-bit words compared in halves.
            /* 7 */
            stmt(LD_W_ABS, arg_low(1)),
            /* 8 */ jump(JEQ_K, low(argv), 0, rel(8, NOTIFY)),
            /* 9 */ stmt(LD_W_ABS, arg_low(1) + 4),
            /* 10 */ jump(JEQ_K, high(argv), 0, rel(10, NOTIFY)),
            /* 11 */ stmt(LD_W_ABS, arg_low(2)),
            /* 12 */ jump(JEQ_K, low(envp), 0, rel(12, NOTIFY)),
            /* 13 */ stmt(LD_W_ABS, arg_low(2) + 4),
            /* 14 */ jump(JEQ_K, high(envp), 0, rel(14, NOTIFY)),
            /* 15 */ stmt(RET_K, libc::SECCOMP_RET_ALLOW),
            /* 16 */ stmt(RET_K, libc::SECCOMP_RET_USER_NOTIF),
            // Another ABI of the same kernel (the accumulator still holds the arch).
            /* 17 */
            jump(JEQ_K, compat, 1, 0),
            /* 18 */ stmt(RET_K, libc::SECCOMP_RET_ALLOW),
            /* 19 */ stmt(LD_W_ABS, NR),
            /* 20 */ jump(JEQ_K, compat_execve, rel(20, COMPAT_NOTIFY), 0),
            /* 21 */ jump(JEQ_K, compat_execveat, rel(21, COMPAT_NOTIFY), 0),
            /* 22 */ stmt(RET_K, libc::SECCOMP_RET_ALLOW),
            /* 23 */ stmt(RET_K, libc::SECCOMP_RET_USER_NOTIF),
        ];
        Some(ExecFilter { program })
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    pub(crate) fn new(_argv: u64, _envp: u64) -> Option<Self> {
        None
    }

    pub(crate) fn program(&self) -> &[libc::sock_filter] {
        &self.program
    }
}

/// A file's identity for the digest cache: device, inode, size, modification and change
/// times to the nanosecond.
type StatKey = (u64, u64, i64, i64, i64, i64, i64);

/// The digests of the run, by stat data: a 100 MB interpreter is read once per run.
#[derive(Default)]
pub(crate) struct Digests {
    known: HashMap<StatKey, String>,
}

/// One job's recording: its listener, and what it executed so far.
pub(crate) struct Recorder {
    listener: OwnedFd,
    executed: Vec<Executed>,
    /// Set when a notification could not be recorded (the file could not be read).
    gaps: Vec<String>,
}

/// How deep `#!` interpreters are followed (Linux's own limit is 4).
const INTERPRETER_DEPTH: usize = 4;
/// The longest path read from a process.
const PATH_MAX: usize = 4096;

impl Recorder {
    pub(crate) fn new(listener: OwnedFd) -> Self {
        Recorder {
            listener,
            executed: Vec::new(),
            gaps: Vec::new(),
        }
    }

    pub(crate) fn listener(&self) -> BorrowedFd<'_> {
        self.listener.as_fd()
    }

    /// What was executed, and what could not be recorded.
    pub(crate) fn into_parts(self) -> (Vec<Executed>, Vec<String>) {
        (self.executed, self.gaps)
    }

    /// Answers one notification: records the file the call executes (when it exists) and
    /// lets the call go on. A notification whose process died meanwhile is dropped.
    pub(crate) fn on_notification(&mut self, digests: &mut Digests) {
        let notif = match sys::notif_recv(self.listener.as_fd()) {
            Ok(n) => n,
            Err(_) => return,
        };
        self.record(&notif, digests);
        let _ = sys::notif_continue(self.listener.as_fd(), notif.id);
    }

    fn record(&mut self, notif: &libc::seccomp_notif, digests: &mut Digests) {
        let nr = notif.data.nr as u32;
        let args = notif.data.args;
        let native = notif.data.arch == arch::NATIVE;
        let is_execveat = if native {
            nr == arch::EXECVEAT || arch::X32.is_some_and(|(_, at)| at == nr)
        } else {
            arch::COMPAT.is_some_and(|(_, _, at)| at == nr)
        };
        let (dirfd, path_addr, flags) = if is_execveat {
            (args[0] as i32, args[1], args[4])
        } else {
            (libc::AT_FDCWD, args[0], 0)
        };
        let pid = notif.pid as i32;
        let Some(path) = read_c_string(pid, path_addr) else {
            self.gaps.push(format!(
                "an exec by process {pid} whose path could not be read"
            ));
            return;
        };
        let opened = open_as_process(pid, dirfd, &path, flags);
        // The process may have died and its pid been reused while its file was opened.
        if !sys::notif_id_valid(self.listener.as_fd(), notif.id) {
            return;
        }
        let Ok(file) = opened else {
            // Not there (a `PATH` search trying entries): the call fails, nothing runs.
            return;
        };
        self.record_file(pid, file, digests, 0);
    }

    /// Records an opened file and, for a script, its interpreter; for an ELF program, its
    /// loader.
    fn record_file(&mut self, pid: i32, file: OwnedFd, digests: &mut Digests, depth: usize) {
        let Ok(st) = fstat(file.as_fd()) else {
            return;
        };
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return;
        }
        let path =
            match nix::fcntl::readlink(format!("/proc/self/fd/{}", file.as_raw_fd()).as_str()) {
                Ok(p) => PathBuf::from(p),
                Err(_) => return,
            };
        let key: StatKey = (
            st.st_dev,
            st.st_ino,
            st.st_size,
            st.st_mtime,
            st.st_mtime_nsec,
            st.st_ctime,
            st.st_ctime_nsec,
        );
        let digest = match digests.known.get(&key) {
            Some(d) => d.clone(),
            None => match hash(file.as_fd()) {
                Some(d) => {
                    digests.known.insert(key, d.clone());
                    d
                }
                None => {
                    self.gaps
                        .push(format!("`{}` could not be read", path.display()));
                    return;
                }
            },
        };
        if !self
            .executed
            .iter()
            .any(|e| e.path == path && e.digest == digest)
        {
            self.executed.push(Executed {
                path: path.clone(),
                digest,
            });
        }
        if depth >= INTERPRETER_DEPTH {
            return;
        }
        let mut head = [0u8; 512];
        let n = nix::sys::uio::pread(file.as_fd(), &mut head, 0).unwrap_or(0);
        let head = &head[..n];
        let next = if let Some(line) = head.strip_prefix(b"#!") {
            let line = line.split(|b| *b == b'\n').next().unwrap_or_default();
            let interpreter = line
                .split(|b| *b == b' ' || *b == b'\t')
                .find(|w| !w.is_empty());
            interpreter.map(<[u8]>::to_vec)
        } else {
            elf_interpreter(file.as_fd())
        };
        if let Some(next) = next
            && next.starts_with(b"/")
            && let Ok(c) = CString::new(next)
            && let Ok(root) = open(
                format!("/proc/{pid}/root").as_str(),
                OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            && let Ok(file) = sys::open_in_root(root.as_fd(), &c)
        {
            self.record_file(pid, file, digests, depth + 1);
        }
    }
}

/// A NUL-terminated string at `addr` in process `pid`, read page by page (a string that ends
/// before an unmapped page is read whole).
fn read_c_string(pid: i32, addr: u64) -> Option<Vec<u8>> {
    const PAGE: u64 = 4096;
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < PATH_MAX {
        let chunk = usize::try_from(PAGE - at % PAGE).ok()?;
        let mut buf = vec![0u8; chunk];
        let n = sys::read_process_memory(pid, at, &mut buf).ok()?;
        if n == 0 {
            return None;
        }
        if let Some(end) = buf[..n].iter().position(|b| *b == 0) {
            out.extend_from_slice(&buf[..end]);
            return Some(out);
        }
        out.extend_from_slice(&buf[..n]);
        at += n as u64;
    }
    None
}

/// Opens what process `pid`'s `execveat(dirfd, path, …, flags)` (or `execve(path)`,
/// `dirfd` being `AT_FDCWD`) names, as that process resolves it: an absolute path in its
/// root, a relative one from its working directory or `dirfd`.
fn open_as_process(pid: i32, dirfd: i32, path: &[u8], flags: u64) -> Result<OwnedFd, Errno> {
    let proc_path = |rest: String| format!("/proc/{pid}/{rest}");
    if path.is_empty() {
        if flags & libc::AT_EMPTY_PATH as u64 == 0 || dirfd < 0 {
            return Err(Errno::ENOENT);
        }
        return open(
            proc_path(format!("fd/{dirfd}")).as_str(),
            OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK,
            Mode::empty(),
        );
    }
    let c = CString::new(path.to_vec()).map_err(|_| Errno::EINVAL)?;
    if path.starts_with(b"/") {
        let root = open(
            proc_path("root".to_owned()).as_str(),
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        return sys::open_in_root(root.as_fd(), &c);
    }
    let base = if dirfd == libc::AT_FDCWD {
        proc_path("cwd".to_owned())
    } else {
        proc_path(format!("fd/{dirfd}"))
    };
    let base = open(
        base.as_str(),
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    openat(
        base.as_fd(),
        Path::new(std::ffi::OsStr::from_bytes(path)),
        OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK,
        Mode::empty(),
    )
}

/// BLAKE3 of a file's content, as hex.
fn hash(fd: BorrowedFd<'_>) -> Option<String> {
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut offset: i64 = 0;
    loop {
        match nix::sys::uio::pread(fd, &mut buf, offset) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                offset += i64::try_from(n).ok()?;
            }
            Err(Errno::EINTR) => {}
            Err(_) => return None,
        }
    }
    Some(hasher.finalize().to_hex().to_string())
}

/// The loader an ELF program names (`PT_INTERP`), for 64-bit little-endian files.
fn elf_interpreter(fd: BorrowedFd<'_>) -> Option<Vec<u8>> {
    let mut header = [0u8; 64];
    if nix::sys::uio::pread(fd, &mut header, 0).ok()? < 64 || &header[..4] != b"\x7fELF" {
        return None;
    }
    // 64-bit, little-endian only.
    if header[4] != 2 || header[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_at =
        |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]));
    let u64_at =
        |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
    let phoff = u64_at(&header, 0x20);
    let phentsize = usize::from(u16_at(&header, 0x36));
    let phnum = usize::from(u16_at(&header, 0x38));
    if phentsize < 56 || phnum > 256 {
        return None;
    }
    let mut table = vec![0u8; phentsize * phnum];
    let read = nix::sys::uio::pread(fd, &mut table, i64::try_from(phoff).ok()?).ok()?;
    for entry in table[..read].chunks_exact(phentsize) {
        const PT_INTERP: u32 = 3;
        if u32_at(entry, 0) != PT_INTERP {
            continue;
        }
        let offset = u64_at(entry, 8);
        let size = usize::try_from(u64_at(entry, 0x20)).ok()?.min(PATH_MAX);
        let mut interp = vec![0u8; size];
        let n = nix::sys::uio::pread(fd, &mut interp, i64::try_from(offset).ok()?).ok()?;
        interp.truncate(n);
        if let Some(end) = interp.iter().position(|b| *b == 0) {
            interp.truncate(end);
        }
        return Some(interp);
    }
    None
}
