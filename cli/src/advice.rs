//! What both binaries say when a path holds no artifact, and how they word the way out of
//! an error about an artifact ([`remedy_hint`]: the one place the CLI names `batho fix`
//! and `batho build` for an error). Building is the way out only when the folder exists:
//! for a mistyped path, advising `batho build` sends the user into a second error.

use std::path::{Path, PathBuf};

/// The name of the artifact folder inside a repository.
const ARTIFACT_FOLDER: &str = ".batho";

/// The repository root of PATH, which names the root or its `.batho` folder.
pub(crate) fn repository_root(path: &Path) -> PathBuf {
    if path.file_name().is_some_and(|name| name == ARTIFACT_FOLDER) {
        match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        }
    } else {
        path.to_path_buf()
    }
}

/// The way out of an error about the artifact of the repository at `root`, as a command
/// to run.
pub(crate) fn remedy_hint(remedy: batho_engine::Remedy, root: &Path) -> String {
    let root = repository_root(root);
    let root = root.display();
    match remedy {
        batho_engine::Remedy::Build => {
            format!("run 'batho build {root}' to index the repository first")
        }
        batho_engine::Remedy::Rebuild => format!(
            "run 'batho build --full {root}' to rebuild it (the old artifact is moved aside), or use a batho that reads its format"
        ),
        batho_engine::Remedy::Fix => {
            format!("run 'batho fix {root}' to verify and repair the artifact")
        }
        batho_engine::Remedy::WaitForWriter => {
            "another build or patch is writing this artifact; wait for it, then retry".to_owned()
        }
    }
}

/// The hint of a failure: what the engine says to check (`hint`, worded for no front end
/// in particular), then the way out as a command.
pub(crate) fn failure_hint(
    hint: Option<&str>,
    remedy: Option<batho_engine::Remedy>,
    root: &Path,
) -> Option<String> {
    let way_out = remedy.map(|remedy| remedy_hint(remedy, root));
    match (hint, way_out) {
        (Some(hint), Some(way_out)) => Some(format!("{hint}; {way_out}")),
        (Some(hint), None) => Some(hint.to_owned()),
        (None, way_out) => way_out,
    }
}

/// The message and the hint for PATH (a repository root or its `.batho` folder) without
/// an artifact.
pub(crate) fn no_artifact_advice(path: &Path) -> (String, String) {
    let root = repository_root(path);
    if !root.is_dir() {
        let what = if root.exists() {
            "is not a folder"
        } else {
            "does not exist"
        };
        return (
            format!("{} {what}", root.display()),
            "give the path of a repository (its root folder or its .batho folder)".to_owned(),
        );
    }
    (
        format!("no artifact at {}", root.join(ARTIFACT_FOLDER).display()),
        format!(
            "run 'batho build {}' to index the repository first",
            root.display()
        ),
    )
}
