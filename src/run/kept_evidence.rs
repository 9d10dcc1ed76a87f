//! Reading what a job wrote as evidence, and holding what is kept of it ([`Kept`]) until
//! the receipt writer stores it. Every read goes through `proofgraph_sandbox::beneath`:
//! beneath one of the run's directories, never through a link, a regular file only,
//! bounded while read.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use proofgraph_sandbox::beneath::{self, EvidenceError};

use crate::decide::judge::ReportFile;
use crate::decide::report::Attachment;
use crate::decide::report::MAX_REPORT_BYTES;
pub(super) use crate::proof::receipt::ArtifactKind;

/// One artifact's bytes and how its receipt names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Kept {
    pub(super) kind: ArtifactKind,
    pub(super) path: Option<String>,
    pub(super) name: Option<String>,
    pub(super) content_type: Option<String>,
    pub(super) bytes: Vec<u8>,
    /// When `bytes` are the head and tail of a longer file: the whole's size and digest.
    pub(super) whole: Option<crate::proof::receipt::Whole>,
    /// The base64 of a secret occurs in the file (in parts `bytes` may not hold).
    pub(super) base64: bool,
}

impl Kept {
    pub(super) fn new(kind: ArtifactKind, path: Option<String>, bytes: Vec<u8>) -> Self {
        Kept {
            kind,
            path,
            name: None,
            content_type: None,
            bytes,
            whole: None,
            base64: false,
        }
    }
}

/// Reads a file a job wrote under `dir` as evidence (`proofgraph_sandbox::beneath`): never
/// through a symbolic link, never a FIFO or a device, at most [`MAX_REPORT_BYTES`] counted
/// while reading, and only when it was written after the command started (`started`), with a
/// second's slack for file systems that keep coarse times — Change Loop's Node.js runtime's
/// rule. Anything else is not evidence, whatever it holds.
pub(super) fn read_written(dir: &Path, relative: &str, started: Option<SystemTime>) -> ReportFile {
    let shown = relative.to_owned();
    match beneath::read_beneath(dir, Path::new(relative), MAX_REPORT_BYTES) {
        Ok(written) => match started {
            Some(started) if written.modified + Duration::from_secs(1) < started => {
                let before = started
                    .duration_since(written.modified)
                    .unwrap_or_default()
                    .as_secs();
                ReportFile::Refused(
                    shown,
                    format!(
                        "it was last written {before} s before the command started, so this run did not write it"
                    ),
                )
            }
            _ => ReportFile::Bytes(shown, written.bytes),
        },
        Err(EvidenceError::Missing) => ReportFile::Missing(shown),
        Err(e) => ReportFile::Refused(shown, e.to_string()),
    }
}

/// What is kept of a report's attachment: an inline body as it is, or a file the execution
/// wrote — in one of its repositories (`dirs`: where the job saw each, and where what it
/// wrote there is), or in the run's directory of executions' own outputs, `out` — read as
/// any evidence is, from where it was written. `None`: nothing that can be kept
/// (elsewhere, not written by the execution, a link, too big).
pub(super) fn attachment(
    attachment: Attachment,
    home: Option<&Path>,
    dirs: &[(PathBuf, PathBuf)],
    out: &Path,
) -> Option<Kept> {
    let name = (!attachment.name.is_empty()).then(|| attachment.name.clone());
    let content_type =
        (!attachment.content_type.is_empty()).then(|| attachment.content_type.clone());
    let (bytes, path) = match (attachment.body, attachment.path) {
        // An inline body is evidence as it is.
        (Some(body), _) => (body, None),
        (None, Some(path)) => {
            // Only a file the run wrote inside its own directories, read as any
            // evidence is: never through a link, never a FIFO, bounded.
            // A path inside a sandbox was made relative to its repository (the run's
            // path rewrites): it is the provider's own repository's.
            let file = Path::new(&path);
            let (base, relative) = if file.is_relative() {
                (home?, file)
            } else {
                dirs.iter()
                    .map(|(at, written)| (at.as_path(), written.as_path()))
                    .chain(std::iter::once((out, out)))
                    .find_map(|(at, written)| Some((written, file.strip_prefix(at).ok()?)))?
            };
            let written = beneath::read_beneath(base, relative, MAX_REPORT_BYTES).ok()?;
            let shown = if base == out {
                path.clone()
            } else {
                relative.display().to_string()
            };
            (written.bytes, Some(shown))
        }
        (None, None) => return None,
    };
    Some(Kept {
        name,
        content_type,
        ..Kept::new(ArtifactKind::PlaywrightAttachment, path, bytes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_file_written_since_the_command_started_and_not_through_a_link_is_evidence() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs_err::create_dir_all(dir.path().join("out")).expect("mkdir");
        fs_err::write(dir.path().join("out/r.json"), b"{}").expect("write");
        let now = SystemTime::now();
        assert_eq!(
            read_written(dir.path(), "out/r.json", Some(now)),
            ReportFile::Bytes("out/r.json".into(), b"{}".to_vec())
        );
        assert_eq!(
            read_written(dir.path(), "out/r.json", None),
            ReportFile::Bytes("out/r.json".into(), b"{}".to_vec())
        );
        assert_eq!(
            read_written(dir.path(), "out/gone.json", Some(now)),
            ReportFile::Missing("out/gone.json".into())
        );
        // Written well before the command started: left over, not this run's.
        let later = now + Duration::from_secs(30);
        match read_written(dir.path(), "out/r.json", Some(later)) {
            ReportFile::Refused(path, why) => {
                assert_eq!(path, "out/r.json");
                assert!(why.starts_with("it was last written "), "{why}");
                assert!(
                    why.ends_with(" s before the command started, so this run did not write it"),
                    "{why}"
                );
            }
            other => panic!("refused expected, got {other:?}"),
        }
        std::os::unix::fs::symlink(dir.path().join("out/r.json"), dir.path().join("link.json"))
            .expect("symlink");
        assert!(
            matches!(
                read_written(dir.path(), "link.json", Some(now)),
                ReportFile::Refused(..)
            ),
            "a link is never followed"
        );
    }

    fn attached(path: Option<&str>, body: Option<&[u8]>) -> Attachment {
        Attachment {
            name: "screenshot".into(),
            content_type: String::new(),
            path: path.map(str::to_owned),
            body_len: body.map(|b| b.len() as u64),
            body: body.map(<[u8]>::to_vec),
        }
    }

    #[test]
    fn an_attachment_is_kept_from_its_body_or_from_a_file_the_execution_wrote_only() {
        let run = tempfile::tempdir().expect("tempdir");
        let root = run.path().join("out");
        let root = root.as_path();
        let seen_at = run.path().join("sandboxes/web");
        let sandbox = run.path().join("worlds/1/web/upper");
        fs_err::create_dir_all(sandbox.join("test-results")).expect("mkdir");
        fs_err::create_dir_all(seen_at.join("test-results")).expect("mkdir");
        fs_err::write(sandbox.join("test-results/a.png"), b"png").expect("write");
        // In the snapshot, not written by the execution: never kept.
        fs_err::write(seen_at.join("test-results/old.png"), b"old").expect("write");
        fs_err::create_dir_all(root).expect("mkdir");
        fs_err::write(root.join("logs.png"), b"log").expect("write");
        let outside = tempfile::tempdir().expect("tempdir");
        fs_err::write(outside.path().join("x.png"), b"secret").expect("write");
        let sandboxes = [(seen_at.clone(), sandbox.clone())];
        let keep = |a| attachment(a, Some(&sandbox), &sandboxes, root);
        let inline = keep(attached(Some("/anywhere"), Some(b"inline"))).expect("kept");
        assert_eq!(
            (inline.path, inline.bytes, inline.name, inline.content_type),
            (None, b"inline".to_vec(), Some("screenshot".into()), None)
        );
        assert_eq!(inline.kind, ArtifactKind::PlaywrightAttachment);
        // In a sandbox: named relative to it; in the run's directory: as given.
        let in_sandbox = seen_at.join("test-results/a.png").display().to_string();
        let kept = keep(attached(Some(&in_sandbox), None)).expect("kept");
        assert_eq!(kept.path.as_deref(), Some("test-results/a.png"));
        assert_eq!(kept.bytes, b"png");
        let in_root = root.join("logs.png").display().to_string();
        let kept = keep(attached(Some(&in_root), None)).expect("kept");
        assert_eq!(kept.path.as_deref(), Some(in_root.as_str()));
        // Outside the run, missing, or neither a body nor a path: nothing.
        let elsewhere = outside.path().join("x.png").display().to_string();
        assert_eq!(keep(attached(Some(&elsewhere), None)), None);
        let gone = seen_at.join("nope.png").display().to_string();
        assert_eq!(keep(attached(Some(&gone), None)), None);
        let old = seen_at.join("test-results/old.png").display().to_string();
        assert_eq!(keep(attached(Some(&old), None)), None);
        assert_eq!(keep(attached(None, None)), None);
        // Made relative to the repository by the run's rewrites: the provider's own
        // sandbox, never above it, and nothing without one.
        let kept = keep(attached(Some("test-results/a.png"), None)).expect("kept");
        assert_eq!(
            (kept.path.as_deref(), kept.bytes.as_slice()),
            (Some("test-results/a.png"), &b"png"[..])
        );
        assert_eq!(keep(attached(Some("../../logs.png"), None)), None);
        assert_eq!(
            attachment(
                attached(Some("test-results/a.png"), None),
                None,
                &sandboxes,
                root
            ),
            None
        );
    }
}
