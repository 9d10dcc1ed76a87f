//! The system layer under the init and the processes it starts: the crate's only unsafe
//! code — `fork`, the `vfork`-like start of a job's command (a process that shares the
//! init's memory), `execve`, `_exit`, resetting signal dispositions, marking inherited
//! descriptors close-on-exec and bringing up the loopback interface — and the safe
//! descriptor and errno helpers that both the namespace setup (`isolation.rs`) and the
//! job processes (`child.rs`) use.
//!
//! Each unsafe function is a thin wrapper; its soundness argument is written on its block.
//!
//! Invariant: no `unsafe` block exists outside this file, and every one here carries a
//! `SAFETY` argument. API boundary: this module imports nothing from the rest of the crate,
//! so everything above it (`init`, `child`, `isolation`) depends on it and never the other
//! way round.
#![expect(
    unsafe_code,
    reason = "fork, clone, execve, _exit, sigaction, close_range, mmap, mount_setattr, capset, prctl, seccomp, SCM_RIGHTS, process_vm_readv, openat2 and the ioctls have no safe wrapper"
)]

use std::marker::PhantomData;
use std::os::fd::{AsRawFd, BorrowedFd};

use nix::errno::Errno;
use nix::fcntl::{OFlag, open};
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
use nix::sys::socket::{AddressFamily, SockFlag, SockType, socket};
use nix::sys::stat::Mode;
use nix::unistd::{ForkResult, dup2_stderr, dup2_stdin, dup2_stdout};

/// Proof that the calling process had exactly one thread when it was made.
///
/// Only [`SingleThreaded::check`] makes one, from `/proc/self/status`. The init never starts
/// a thread, and the value is neither `Send` nor `Sync`, so it cannot reach another thread.
/// Processes forked from a single-threaded process are single-threaded too, so forked
/// children may keep using the parent's proof.
pub(crate) struct SingleThreaded {
    _not_send: PhantomData<*const ()>,
}

impl SingleThreaded {
    /// Checks that this process has one thread.
    pub(crate) fn check() -> Result<Self, String> {
        let status = fs_err::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
        let threads = status
            .lines()
            .find_map(|line| line.strip_prefix("Threads:"))
            .map(str::trim);
        match threads {
            Some("1") => Ok(SingleThreaded {
                _not_send: PhantomData,
            }),
            Some(n) => Err(format!(
                "the init has {n} threads; `init_main` must run before any thread is started"
            )),
            None => Err("`/proc/self/status` has no `Threads:` line".to_owned()),
        }
    }
}

/// `fork(2)`.
pub(crate) fn fork(_proof: &SingleThreaded) -> nix::Result<ForkResult> {
    // SAFETY: `fork` is unsafe because in a multi-threaded process the child may only call
    // async-signal-safe functions: another thread may hold a lock (the allocator's, stdio's)
    // that would never be released in the child. `SingleThreaded` proves this process has a
    // single thread, so no other thread exists to hold a lock, and the child may run ordinary
    // Rust code.
    unsafe { nix::unistd::fork() }
}

/// `_exit(2)`: ends the process at once, without running exit handlers or flushing stdio.
///
/// Forked children use it so that buffers copied from the init (its stdout, which carries
/// the control protocol) are never written twice.
pub(crate) fn exit_now(code: i32) -> ! {
    // SAFETY: `_exit` takes no pointer and does not return; it touches no Rust-owned state.
    unsafe { libc::_exit(code) }
}

/// Restores the default disposition of every signal but `SIGPIPE`, so that nothing the
/// init inherited ignored (`nohup`, a shell's `trap '' INT`) reaches the commands. The init
/// runs it once; `SIGPIPE` stays ignored in the init (Rust's runtime ignores it, and the
/// init handles `EPIPE`) and each command restores it with [`restore_sigpipe`].
pub(crate) fn reset_signal_dispositions() {
    let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    for signal in Signal::iterator() {
        if matches!(signal, Signal::SIGKILL | Signal::SIGSTOP | Signal::SIGPIPE) {
            continue;
        }
        // SAFETY: `sigaction` is unsafe because a Rust handler could run at any point and
        // observe inconsistent state. `SIG_DFL` installs no handler at all, and the struct
        // passed is only read during the call.
        let _ignored = unsafe { sigaction(signal, &default) };
    }
    // The real-time signals, which `Signal` does not list. The C library refuses the two
    // it reserves for itself (32 and 33), which its own start-up in the command sets up.
    for number in libc::SIGRTMIN()..=libc::SIGRTMAX() {
        // SAFETY: a zeroed `sigaction` is `SIG_DFL` with no flags and an empty mask; no
        // handler is installed, and both structs live across the call.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(number, &raw const action, std::ptr::null_mut());
        }
    }
}

/// Restores the default disposition of `SIGPIPE` (see [`reset_signal_dispositions`]).
pub(crate) fn restore_sigpipe() {
    let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    // SAFETY: as in `reset_signal_dispositions`: no handler is installed.
    let _ignored = unsafe { sigaction(Signal::SIGPIPE, &default) };
}

/// Marks every descriptor from 3 up close-on-exec, so that nothing the init inherited from
/// its parent leaks into the commands it runs.
pub(crate) fn mark_inherited_fds_cloexec() -> Result<(), Errno> {
    // SAFETY: with `CLOSE_RANGE_CLOEXEC`, `close_range` closes nothing; it only sets the
    // close-on-exec flag, so every `OwnedFd`/`File` stays valid. It takes no pointer.
    let rc = unsafe { libc::close_range(3, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC as i32) };
    Errno::result(rc).map(drop)
}

/// Brings the loopback interface `lo` of the current network namespace up.
pub(crate) fn bring_loopback_up() -> Result<(), Errno> {
    let sock = socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    // SAFETY: `ifreq` is a plain C struct (a name array and a union of integers, addresses
    // and pointers), for which all-zero bytes are a valid value (null pointers, zero ints).
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS reads `ifr_name` and writes `ifr_flags` inside `request`, which we
    // own and which outlives the call; the socket is a valid open descriptor.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut request) };
    Errno::result(rc)?;
    // SAFETY: the union field `ifru_flags` was just written by SIOCGIFFLAGS, and every bit
    // pattern is a valid `c_short`.
    let flags = unsafe { request.ifr_ifru.ifru_flags };
    request.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
    // SAFETY: SIOCSIFFLAGS only reads `ifr_name` and `ifr_flags` from `request`, which we own
    // and which outlives the call.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &request) };
    Errno::result(rc).map(drop)
}

/// A stack for a process that shares the init's memory: an anonymous mapping with an
/// inaccessible guard page at its low end, so that an overflow faults instead of writing
/// into the init's heap.
pub(crate) struct Stack {
    base: std::ptr::NonNull<libc::c_void>,
    len: usize,
}

impl Stack {
    /// Maps `usable` bytes (rounded up to pages) plus one guard page.
    pub(crate) fn new(usable: usize) -> Result<Self, Errno> {
        // SAFETY: `sysconf` takes no pointer.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|p| *p > 0)
            .unwrap_or(4096);
        let len = usable.div_ceil(page) * page + page;
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing aliases
        // no existing memory; the result is checked before use.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(Errno::last());
        }
        let stack = Stack {
            // SAFETY: `mmap` succeeded, so `base` is not null.
            base: unsafe { std::ptr::NonNull::new_unchecked(base) },
            len,
        };
        // SAFETY: the first page lies inside the mapping just made, which only this value owns.
        Errno::result(unsafe { libc::mprotect(base, page, libc::PROT_NONE) })?;
        Ok(stack)
    }

    /// The initial stack pointer: the high end (stacks grow down on every Linux target
    /// this crate builds for), 16-byte aligned since the mapping is page-aligned.
    fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of the mapping, which is `len` bytes long.
        unsafe { self.base.as_ptr().cast::<u8>().add(self.len).cast() }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping is owned by this value; callers drop a stack only once the
        // process that ran on it has been reaped (or, for a `vfork` child, has exec'd or
        // exited), so nothing uses it any more.
        unsafe { libc::munmap(self.base.as_ptr(), self.len) };
    }
}

/// Runs `child` in a new process that shares this process's memory and is suspended until
/// it calls `execve` or exits (`CLONE_VM | CLONE_VFORK`, what `posix_spawn` does): no page
/// tables are copied. Returns the new process's PID once it has exec'd or exited.
///
/// With `namespaces` the process is PID 1 of a new PID namespace (`CLONE_NEWPID`): when it
/// exits, the kernel kills every process left in the namespace, and reaps them, before its
/// parent can reap it; and it has a mount namespace of its own (`CLONE_NEWNS`, a copy of
/// this process's), where its world is built.
///
/// `child` runs on `stack` while this process waits; it must not allocate (the heap is
/// shared, and memory it allocated would belong to nobody), should end in `execve` or
/// [`exit_now`] (returning exits with 127), and may write only to memory the caller reads
/// after this returns.
pub(crate) fn spawn_vfork(
    _proof: &SingleThreaded,
    stack: &Stack,
    namespaces: bool,
    child: &mut dyn FnMut(),
) -> Result<nix::unistd::Pid, Errno> {
    extern "C" fn trampoline(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `&mut &mut dyn FnMut` below, alive while the parent is
        // suspended in `clone`, which is for as long as this child runs Rust code.
        let child = unsafe { &mut *arg.cast::<&mut dyn FnMut()>() };
        child();
        // `child` execs or exits; were it to return, the process ends here.
        127
    }
    let mut child = child;
    let namespace = if namespaces {
        libc::CLONE_NEWPID | libc::CLONE_NEWNS
    } else {
        0
    };
    // SAFETY: with `CLONE_VFORK` this process is suspended until the child has exec'd or
    // exited, so the child is the only one running on the shared memory meanwhile: it may
    // use `errno` and the allocator-free code of `child` as a `vfork` child may. The
    // stack is kept alive by the caller; `trampoline` never returns into `clone` (it
    // execs or exits), and an unwinding panic would abort at the `extern "C"` boundary.
    // Signal dispositions and descriptors are the child's own copies.
    let pid = unsafe {
        libc::clone(
            trampoline,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | namespace | libc::SIGCHLD,
            (&raw mut child).cast(),
        )
    };
    if pid < 0 {
        return Err(Errno::last());
    }
    Ok(nix::unistd::Pid::from_raw(pid))
}

/// `execve(2)` with argument and environment arrays prepared (null-terminated) in advance,
/// so that nothing is allocated in a `vfork` child. Returns only on failure.
pub(crate) fn execve_prepared(
    path: &std::ffi::CStr,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
) -> Errno {
    debug_assert!(argv.last().is_some_and(|p| p.is_null()));
    debug_assert!(envp.last().is_some_and(|p| p.is_null()));
    // SAFETY: `path` is a C string; `argv` and `envp` are null-terminated arrays of pointers
    // to C strings (built by `CommandPlan` from `CString`s it owns and keeps alive).
    unsafe { libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
    Errno::last()
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Makes the mount at `path` and every mount below it read-only (`mount_setattr(2)` with
/// `AT_RECURSIVE`, Linux 5.12). Allocates nothing.
pub(crate) fn make_read_only_recursive(path: &std::ffi::CStr) -> Result<(), Errno> {
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `path` is a C string and `attr` a `struct mount_attr` of the size passed,
    // both alive across the call, which only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            (libc::AT_RECURSIVE | libc::AT_SYMLINK_NOFOLLOW) as libc::c_uint,
            &raw const attr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    Errno::result(rc).map(drop)
}

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Drops every capability for good: each one from the bounding set (up to `last_cap`, from
/// `/proc/sys/kernel/cap_last_cap`), the ambient set cleared, and the effective, permitted
/// and inheritable sets emptied. A later `execve` — even of a set-user-ID program, even by
/// uid 0 — then grants none. Allocates nothing.
pub(crate) fn drop_all_capabilities(last_cap: u32) -> Result<(), Errno> {
    for cap in 0..=last_cap {
        // SAFETY: `prctl(PR_CAPBSET_DROP, cap)` takes integers only.
        let rc = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, libc::c_ulong::from(cap), 0, 0, 0) };
        // EINVAL: a capability this kernel does not know.
        if rc != 0 && Errno::last() != Errno::EINVAL {
            return Err(Errno::last());
        }
    }
    // SAFETY: integers only.
    let rc = unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    if rc != 0 && Errno::last() != Errno::EINVAL {
        return Err(Errno::last());
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    let header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: `capset` reads a version-3 header and the two data structs it implies, all
    // alive across the call.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &raw const header, data.as_ptr()) };
    Errno::result(rc).map(drop)
}

/// Points stdin, stdout and stderr at `/dev/null`, so a forked helper holds none of the
/// init's control pipes.
pub(crate) fn detach_stdio() {
    if let Ok(null) = open("/dev/null", OFlag::O_RDWR | OFlag::O_CLOEXEC, Mode::empty()) {
        let _ = dup2_stdin(&null);
        let _ = dup2_stdout(&null);
        let _ = dup2_stderr(&null);
    }
}

/// Writes all of `data`, retrying on `EINTR`.
pub(crate) fn write_all_fd(fd: BorrowedFd<'_>, mut data: &[u8]) -> Result<(), Errno> {
    while !data.is_empty() {
        match nix::unistd::write(fd, data) {
            Ok(0) => return Err(Errno::EPIPE),
            Ok(n) => data = &data[n..],
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads until end of file (or `limit` bytes), blocking.
pub(crate) fn read_to_end_blocking(fd: BorrowedFd<'_>, limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while out.len() < limit {
        match nix::unistd::read(fd, &mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(Errno::EINTR) => {}
            Err(_) => break,
        }
    }
    out
}

/// An errno as messages show it: its name and its description.
pub(crate) fn describe(errno: Errno) -> String {
    format!("{errno:?}: {}", errno.desc())
}

/// Installs `filter` as a seccomp filter of the calling thread with a user-notification
/// listener (`SECCOMP_FILTER_FLAG_NEW_LISTENER`, Linux 5.0), and returns the listener
/// descriptor (close-on-exec). The caller has set `no_new_privs`. Allocates nothing.
pub(crate) fn seccomp_listener(filter: &[libc::sock_filter]) -> Result<i32, Errno> {
    let prog = libc::sock_fprog {
        len: u16::try_from(filter.len()).map_err(|_| Errno::E2BIG)?,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: `prog` points at `filter`, which outlives the call; the kernel copies the
    // program and never writes through the pointer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &raw const prog,
        )
    };
    let fd = Errno::result(rc)?;
    i32::try_from(fd).map_err(|_| Errno::EBADF)
}

/// The control buffer of a message carrying one descriptor (aligned for `cmsghdr`).
#[repr(C, align(8))]
struct Control([u8; 64]);

/// The one data byte of such a message.
fn one_byte(byte: &mut [u8; 1]) -> libc::iovec {
    libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    }
}

/// A `msghdr` of the data `iov` and the first `control_len` bytes of `control`; both must
/// outlive its use.
fn message(iov: &mut libc::iovec, control: &mut Control, control_len: usize) -> libc::msghdr {
    // SAFETY: `msghdr` is plain data; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = control_len.min(control.0.len());
    msg
}

/// Sends the descriptor `fd` over the Unix socket `sock` (`SCM_RIGHTS`, one byte of data).
/// Allocates nothing.
pub(crate) fn send_fd(sock: BorrowedFd<'_>, fd: i32) -> Result<(), Errno> {
    let mut control = Control([0; 64]);
    let mut byte = [0u8; 1];
    let mut iov = one_byte(&mut byte);
    // SAFETY: CMSG_SPACE is arithmetic on its argument.
    let space = unsafe { libc::CMSG_SPACE(4) } as usize;
    let msg = message(&mut iov, &mut control, space);
    // SAFETY: `msg_control` points at 64 aligned bytes, more than CMSG_SPACE(4); the first
    // header is inside them and its data has room for one `int`.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(4) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<i32>(), fd);
    }
    // SAFETY: `msg` and everything it points at live across the call.
    let rc = unsafe { libc::sendmsg(sock.as_raw_fd(), &raw const msg, libc::MSG_NOSIGNAL) };
    Errno::result(rc).map(drop)
}

/// Receives one descriptor sent with [`send_fd`], if one is waiting.
pub(crate) fn recv_fd(sock: BorrowedFd<'_>) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd as _;
    let mut control = Control([0; 64]);
    let mut byte = [0u8; 1];
    let mut iov = one_byte(&mut byte);
    let mut msg = message(&mut iov, &mut control, 64);
    // SAFETY: `msg` and its buffers live across the call.
    let rc = unsafe {
        libc::recvmsg(
            sock.as_raw_fd(),
            &raw mut msg,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        )
    };
    if rc <= 0 {
        return None;
    }
    // SAFETY: the kernel filled `msg_control` with `msg_controllen` bytes of headers; the
    // CMSG macros stay inside them.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return None;
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<i32>());
        (fd >= 0).then(|| std::os::fd::OwnedFd::from_raw_fd(fd))
    }
}

/// The next seccomp user notification of `listener` (`SECCOMP_IOCTL_NOTIF_RECV`).
pub(crate) fn notif_recv(listener: BorrowedFd<'_>) -> Result<libc::seccomp_notif, Errno> {
    // SAFETY: plain data; the kernel requires it zeroed.
    let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: the ioctl writes one `seccomp_notif` into `notif`.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV,
            &raw mut notif,
        )
    };
    Errno::result(rc).map(|_| notif)
}

/// Lets the system call of notification `id` go on as if no filter had stopped it
/// (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`).
pub(crate) fn notif_continue(listener: BorrowedFd<'_>, id: u64) -> Result<(), Errno> {
    let resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: 0,
        flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
    };
    // SAFETY: the ioctl reads one `seccomp_notif_resp`.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            &raw const resp,
        )
    };
    Errno::result(rc).map(drop)
}

/// Whether notification `id` is still pending: its process has not died (and so its pid
/// was not reused) since the notification was received.
pub(crate) fn notif_id_valid(listener: BorrowedFd<'_>, id: u64) -> bool {
    // SAFETY: the ioctl reads one `u64`.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &raw const id,
        )
    };
    rc == 0
}

/// Reads up to `buf.len()` bytes at `addr` of process `pid` (`process_vm_readv`).
pub(crate) fn read_process_memory(pid: i32, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: usize::try_from(addr).map_err(|_| Errno::EFAULT)? as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: `local` describes `buf`, writable for its length; `remote` is only read by the
    // kernel in the other process, checked there.
    let rc = unsafe { libc::process_vm_readv(pid, &raw const local, 1, &raw const remote, 1, 0) };
    Errno::result(rc).map(|n| usize::try_from(n).unwrap_or(0))
}

/// Opens `path` for reading as if `root` were `/` (`openat2` with `RESOLVE_IN_ROOT`,
/// Linux 5.6): absolute links and `..` stay inside it. Never blocks on a FIFO.
pub(crate) fn open_in_root(
    root: BorrowedFd<'_>,
    path: &std::ffi::CStr,
) -> Result<std::os::fd::OwnedFd, Errno> {
    use std::os::fd::FromRawFd as _;
    /// `struct open_how` of `openat2(2)` (libc's is non-exhaustive).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: (libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY) as u64,
        mode: 0,
        resolve: libc::RESOLVE_IN_ROOT,
    };
    // SAFETY: `path` is a C string and `how` a valid `open_how`, both alive across the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.as_raw_fd(),
            path.as_ptr(),
            &raw const how,
            std::mem::size_of::<OpenHow>(),
        )
    };
    let fd = i32::try_from(Errno::result(rc)?).map_err(|_| Errno::EBADF)?;
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}
