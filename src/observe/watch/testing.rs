//! What the watcher's tests share: another process writing a file through
//! a shared mapping.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;

/// Another process holding a shared writable mapping of a file (Python's
/// `mmap`), writing through it on request.
pub(super) struct Mapping {
    child: std::process::Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Mapping {
    pub(super) fn new(path: &Path) -> Self {
        let mut child = std::process::Command::new("python3")
            .args([
                "-c",
                "import mmap, os, sys\n\
                 fd = os.open(sys.argv[1], os.O_RDWR)\n\
                 m = mmap.mmap(fd, 0)\n\
                 os.close(fd)\n\
                 print('mapped', flush=True)\n\
                 for line in sys.stdin:\n\
                 \x20   at, byte = line.split()\n\
                 \x20   m[int(at)] = ord(byte)\n\
                 \x20   print('written', flush=True)\n\
                 m.close()\n",
            ])
            .arg(path)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs (install python3)");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        assert_eq!(
            lines.next().map(|l| l.expect("a line")).as_deref(),
            Some("mapped")
        );
        Mapping { child, lines }
    }

    pub(super) fn write(&mut self, at: usize, byte: &[u8]) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{at} {}", String::from_utf8_lossy(byte)).expect("ask");
        assert_eq!(
            self.lines.next().map(|l| l.expect("a line")).as_deref(),
            Some("written")
        );
    }

    /// Unmaps and exits.
    pub(super) fn finish(mut self) {
        drop(self.child.stdin.take());
        assert!(self.child.wait().expect("wait").success());
    }
}
