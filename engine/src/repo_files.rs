//! Reading a repository's files for display (an entity's source, an export's text), and
//! telling whether they still hold the bytes the artifact indexed.
//!
//! Every front end that shows source goes through [`read_repo_file`], so one function
//! decides what may be read: a path relative to the root, without `..`, reaching no
//! symbolic link. A link planted after a build would otherwise hand out a file from
//! anywhere on the machine.

use std::io;
use std::path::{Component, Path, PathBuf};

use batho_storage::content_hash;

use crate::query::graph::hex;

/// Why a repository file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RepoReadError {
    /// The path is absolute, has a `..` or names no file.
    #[error("'{path}' is not a path inside the repository")]
    Outside {
        /// The path as given.
        path: String,
    },
    /// The path reaches a symbolic link.
    #[error("'{path}' reaches a symbolic link ('{link}'); links are not followed")]
    Symlink {
        /// The path as given.
        path: String,
        /// The component that is a link, relative to the root.
        link: String,
    },
    /// The file could not be read.
    #[error("cannot read '{path}': {source}")]
    Io {
        /// The path as given.
        path: String,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
}

/// The bytes of `relative` (a path with forward slashes, relative to `root`), read only
/// when it stays inside the root and reaches no symbolic link.
pub fn read_repo_file(root: &Path, relative: &str) -> Result<Vec<u8>, RepoReadError> {
    let full = confined_path(root, relative)?;
    std::fs::read(&full).map_err(|source| RepoReadError::Io {
        path: relative.to_string(),
        source,
    })
}

/// `root/relative` for a file to write (an export): checked as [`read_repo_file`] checks
/// the files it reads, but the file and the folders on the way may not exist yet.
pub fn confined_new_path(root: &Path, relative: &str) -> Result<PathBuf, RepoReadError> {
    confined(root, relative, MayBeMissing::Yes)
}

/// Whether a path checked by [`confined`] may name something that does not exist yet.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MayBeMissing {
    Yes,
    No,
}

fn confined_path(root: &Path, relative: &str) -> Result<PathBuf, RepoReadError> {
    confined(root, relative, MayBeMissing::No)
}

/// `root/relative`, checked component by component: normal names only, none of them a
/// symbolic link (`symlink_metadata` does not follow the link it looks at); a component
/// that does not exist is an error unless `missing` allows it.
fn confined(root: &Path, relative: &str, missing: MayBeMissing) -> Result<PathBuf, RepoReadError> {
    let outside = || RepoReadError::Outside {
        path: relative.to_string(),
    };
    let path = Path::new(relative);
    if relative.is_empty()
        || path
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(outside());
    }
    let mut full = root.to_path_buf();
    let mut walked = PathBuf::new();
    for component in path.components() {
        full.push(component);
        walked.push(component);
        match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(RepoReadError::Symlink {
                    path: relative.to_string(),
                    link: walked.to_string_lossy().replace('\\', "/"),
                });
            }
            Ok(_) => {}
            Err(source)
                if missing == MayBeMissing::Yes && source.kind() == io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(RepoReadError::Io {
                    path: relative.to_string(),
                    source,
                });
            }
        }
    }
    Ok(full)
}

/// The content hash a `File` node holds for `bytes` (BQL's `f.content_hash`: the first
/// bytes of their blake3, in hex).
pub fn content_hash_hex(bytes: &[u8]) -> String {
    hex(&content_hash(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_files_inside_the_root_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.c"), "int a;\n").unwrap();
        assert_eq!(read_repo_file(root, "src/a.c").unwrap(), b"int a;\n");
        for bad in ["", "/etc/passwd", "../a.c", "src/../src/a.c", "./src/a.c"] {
            assert!(
                matches!(
                    read_repo_file(root, bad),
                    Err(RepoReadError::Outside { .. })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            read_repo_file(root, "src/missing.c"),
            Err(RepoReadError::Io { .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn refuses_symbolic_links_anywhere_on_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.c"), "SECRET").unwrap();
        let root = dir.path();
        std::os::unix::fs::symlink(outside.path().join("secret.c"), root.join("a.c")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("linked")).unwrap();
        for planted in ["a.c", "linked/secret.c"] {
            let error = read_repo_file(root, planted).unwrap_err();
            assert!(matches!(error, RepoReadError::Symlink { .. }), "{planted}");
            assert!(!error.to_string().contains("SECRET"));
        }
    }

    #[test]
    fn content_hash_is_the_stored_prefix_in_hex() {
        let hex = content_hash_hex(b"int a;\n");
        assert_eq!(hex.len(), batho_storage::CONTENT_HASH_LEN * 2);
        assert!(blake3::hash(b"int a;\n").to_hex().starts_with(&hex));
    }
}
