//! The error type of archive export and load.

use std::io;
use std::path::PathBuf;

use crate::error::StorageError;
use crate::format::FORMAT_VERSION;

use super::ARCHIVE_VERSION;

/// What can go wrong exporting or loading an archive.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// An I/O error on a file we read or write.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The bytes are not a batho archive (not a tar, no index first, index unreadable).
    #[error("not a batho archive: {detail}")]
    NotAnArchive {
        /// What is wrong.
        detail: String,
    },
    /// The archive was written by a batho with another archive or storage format.
    #[error(
        "archive uses archive version {archive_version} and storage format {format_version}; this batho reads archive version {ARCHIVE_VERSION} and storage format {FORMAT_VERSION}"
    )]
    UnsupportedVersion {
        /// Archive layout version found.
        archive_version: u32,
        /// Storage format version found.
        format_version: u32,
    },
    /// A member name would escape the target directory or is not a plain relative name.
    #[error("unsafe member name {name:?} (absolute, `..` or not a plain relative path)")]
    UnsafePath {
        /// The name as found.
        name: String,
    },
    /// A member is a symlink, hard link, directory or device, not a regular file.
    #[error("member {name:?} is a {kind}, only regular files are accepted")]
    NotARegularFile {
        /// The member name.
        name: String,
        /// What it is instead.
        kind: String,
    },
    /// A member larger than the limit.
    #[error("member {name:?} is {size} bytes, over the limit of {limit} bytes")]
    Oversized {
        /// The member name.
        name: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A member appears twice.
    #[error("member {name:?} appears twice")]
    DuplicateMember {
        /// The member name.
        name: String,
    },
    /// A member the index does not list, or a name batho never writes.
    #[error("unexpected member {name:?} (not listed in the archive index)")]
    UnexpectedMember {
        /// The member name.
        name: String,
    },
    /// A member the index lists is absent.
    #[error("member {name:?} listed in the index is missing (truncated archive?)")]
    MissingMember {
        /// The member name.
        name: String,
    },
    /// A member's size differs from the index.
    #[error("member {name:?} is {found} bytes, the index says {expected}")]
    SizeMismatch {
        /// The member name.
        name: String,
        /// Size in the index.
        expected: u64,
        /// Size found.
        found: u64,
    },
    /// A member's blake3 differs from the index (or from its own name).
    #[error("member {name:?} has blake3 {found}, expected {expected}: the archive is damaged")]
    HashMismatch {
        /// The member name.
        name: String,
        /// Expected hex hash.
        expected: String,
        /// Hex hash of the bytes read.
        found: String,
    },
    /// The index, the manifest and the members disagree.
    #[error("inconsistent archive: {detail}")]
    Inconsistent {
        /// What disagrees.
        detail: String,
    },
    /// The unpacked artifact did not pass deep verification.
    #[error("the archived artifact fails verification: {}", issues.join("; "))]
    VerificationFailed {
        /// The issues found (at most a few per check).
        issues: Vec<String>,
    },
    /// The target holds an artifact of another database; `force` replaces it.
    #[error(
        "{} holds an artifact of another database ({existing}, the archive is {archive}); use --force to replace it",
        path.display()
    )]
    ForeignDatabase {
        /// The `.batho/` directory.
        path: PathBuf,
        /// The target's identity.
        existing: String,
        /// The archive's identity.
        archive: String,
    },
    /// The target has runs newer than the archive's newest; `force` replaces it anyway.
    #[error(
        "{} has newer runs than the archive (newest run ended at {existing_ms} ms, the archive's at {archive_ms} ms); use --force to replace it",
        path.display()
    )]
    NewerRuns {
        /// The `.batho/` directory.
        path: PathBuf,
        /// End of the target's newest run (a loaded run counts with its source's time).
        existing_ms: i64,
        /// End of the archive's newest run.
        archive_ms: i64,
    },
    /// A storage operation failed (no artifact to export, lock held, damaged target…).
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl ArchiveError {
    pub(super) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        ArchiveError::Io {
            path: path.into(),
            source,
        }
    }

    pub(super) fn not_archive(detail: impl Into<String>) -> Self {
        ArchiveError::NotAnArchive {
            detail: detail.into(),
        }
    }

    /// Whether the archive itself is at fault (as opposed to the target or the machine).
    pub fn is_bad_archive(&self) -> bool {
        !matches!(
            self,
            ArchiveError::Io { .. }
                | ArchiveError::ForeignDatabase { .. }
                | ArchiveError::NewerRuns { .. }
                | ArchiveError::Storage(_)
        )
    }
}

pub(super) type Result<T, E = ArchiveError> = std::result::Result<T, E>;
