//! What both binaries say when a path holds no artifact. Building is the way out only
//! when the folder exists: for a mistyped path, advising `batho build` sends the user
//! into a second error.

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
