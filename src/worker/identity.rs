//! A bot's stable id: the engine closes a session when a new one opens with the same
//! `bot_id` and requeues its leases, so the id must survive restarts and differ between
//! workers. By default it is the host's name and a random suffix kept in the worker's state
//! directory (`<host>-<8 hex digits>`), made on first start and read on every later one.

use std::path::Path;

/// The file in the state directory that keeps the suffix.
const SUFFIX_FILE: &str = "bot-id-suffix";

/// The default bot id of a worker whose state lives in `state_dir` on host `host`.
pub fn default_bot_id(state_dir: &Path, host: &str) -> Result<String, std::io::Error> {
    let file = state_dir.join(SUFFIX_FILE);
    let kept = fs_err::read_to_string(&file)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| s.len() == 8 && s.bytes().all(|b| b.is_ascii_hexdigit()));
    let suffix = match kept {
        Some(suffix) => suffix,
        None => {
            let mut bytes = [0u8; 4];
            getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
            let suffix: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            fs_err::create_dir_all(state_dir)?;
            fs_err::write(&file, format!("{suffix}\n"))?;
            suffix
        }
    };
    let host = if host.trim().is_empty() {
        "worker"
    } else {
        host.trim()
    };
    Ok(format!("{host}-{suffix}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_id_is_kept_across_starts_and_differs_between_state_dirs() {
        let a = tempfile::tempdir().expect("a directory");
        let b = tempfile::tempdir().expect("a directory");
        let first = default_bot_id(a.path(), "host").expect("an id");
        assert!(
            first.starts_with("host-") && first.len() == "host-".len() + 8,
            "{first}"
        );
        assert_eq!(default_bot_id(a.path(), "host").expect("an id"), first);
        assert_ne!(default_bot_id(b.path(), "host").expect("an id"), first);
        assert!(
            default_bot_id(a.path(), "")
                .expect("an id")
                .starts_with("worker-")
        );
    }
}
