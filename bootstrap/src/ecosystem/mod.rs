//! Readers for each ecosystem's manifests. Each reads files only, never runs
//! anything, and turns what it reads into [`crate::proposal::Proposal`]s.

pub(crate) mod cargo;
pub(crate) mod go;
pub(crate) mod node;
pub(crate) mod node_imports;
pub(crate) mod playwright;
pub(crate) mod python;

/// Every file below `dir` whose name ends with `suffix`, skipping what is not the project's
/// own source: hidden directories, dependency and build directories, `testdata`, and a
/// nested module or crate (a directory below `dir` holding `stop`, its own manifest, when
/// given).
pub(crate) fn source_files(
    dir: &std::path::Path,
    suffix: &str,
    stop: Option<&str>,
) -> Vec<std::path::PathBuf> {
    const SKIP: [&str; 5] = [
        "vendor",
        "testdata",
        "target",
        "node_modules",
        "third_party",
    ];
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = fs_err::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if !name.starts_with('.')
                    && !SKIP.contains(&name.as_ref())
                    && !stop.is_some_and(|m| path.join(m).exists())
                {
                    stack.push(path);
                }
            } else if kind.is_file() && name.ends_with(suffix) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}
