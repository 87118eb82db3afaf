//! The error type of every storage operation.
//!
//! Messages name the file involved and what is wrong with it. The way out is not in the
//! message: [`StorageError::remedy`] names it, and each front end words it once for its
//! reader (`run 'batho fix PATH'` in a terminal, `call batho_fix` for an agent), so that no
//! message carries a hint for another front end or a hint twice.

use std::path::PathBuf;

/// What can go wrong when reading or writing a `.batho/` store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// An operating-system I/O error on `path`.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The bytes on disk do not form a valid artifact.
    #[error("corrupt artifact ({what}): {detail}")]
    Corrupt {
        /// Which file or structure is damaged.
        what: String,
        /// What exactly is wrong.
        detail: String,
    },
    /// The file was written by a different (older or newer) on-disk format version.
    #[error(
        "{} uses on-disk format version {found}, this batho reads version {expected}",
        path.display()
    )]
    UnsupportedFormat {
        /// The file carrying the foreign version.
        path: PathBuf,
        /// The version found in the file.
        found: u32,
        /// The version this build reads and writes.
        expected: u32,
    },
    /// The artifact uses a feature of the format this version cannot read yet.
    #[error("{} uses an unsupported feature of the format: {what}", path.display())]
    UnsupportedFeature {
        /// The manifest involved.
        path: PathBuf,
        /// The feature.
        what: String,
    },
    /// No graph has been committed in this `.batho/` directory yet.
    #[error("no artifact in {}", path.display())]
    NoArtifact {
        /// The `.batho/` directory.
        path: PathBuf,
    },
    /// The requested generation has no manifest (never existed or was garbage-collected).
    #[error("generation {generation} does not exist in {}", path.display())]
    NoSuchGeneration {
        /// The `.batho/` directory.
        path: PathBuf,
        /// The generation asked for.
        generation: u64,
    },
    /// A graph already exists where a new one was to be created.
    #[error("{} already holds a graph; open it instead of creating one", path.display())]
    GraphExists {
        /// The folder.
        path: PathBuf,
    },
    /// Another writer holds the lock.
    #[error("another batho process is writing to {} (lock held on {})", path.parent().map(|p| p.display().to_string()).unwrap_or_default(), path.display())]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
    /// A patch fragment leaves an edge from a node that is not authoritative in it (its
    /// file is not among the fragment's replaced files): the fragment would edit a file it
    /// does not replace (contract rule 4, `docs/format.md` §9).
    #[error(
        "invalid graph fragment: edge {edge} leaves node {src_id:?} of file {src_file:?}, which the fragment does not replace"
    )]
    FragmentEdgeNotAuthoritative {
        /// Index of the offending edge in the fragment's builder.
        edge: usize,
        /// Id of its source node.
        src_id: String,
        /// File of its source node.
        src_file: String,
    },
    /// A patch fragment is malformed in another way (an edge naming a node that does not
    /// exist, a string id out of range).
    #[error("invalid graph fragment: {detail}")]
    InvalidFragment {
        /// What is wrong with it.
        detail: String,
    },
    /// An append to or an fsync of a writable graph's write-ahead log failed: what of the
    /// log reached the disk is unknown, so the graph takes no more commits until reopened
    /// (opening replays what the log holds and cuts a torn end).
    #[error(
        "the write-ahead log {} failed ({detail}): whether the latest commits reached the disk is unknown, so this graph takes no more commits; reopen it",
        path.display()
    )]
    LogFailed {
        /// The log file.
        path: PathBuf,
        /// What failed.
        detail: String,
    },
    /// The graph handed to the writer cannot be stored.
    #[error("invalid graph: {detail}")]
    InvalidInput {
        /// What is wrong with it.
        detail: String,
    },
}

/// The way out of an error, which each front end words for its reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remedy {
    /// Index the repository: nothing is built there yet.
    Build,
    /// Build the artifact again from the source, or use a batho that reads its format.
    Rebuild,
    /// Verify the artifact and repair what can be repaired.
    Fix,
    /// Wait for the process that writes the artifact, then try again.
    WaitForWriter,
}

impl StorageError {
    /// The way out of this error, if there is one.
    pub fn remedy(&self) -> Option<Remedy> {
        match self {
            StorageError::Corrupt { .. } => Some(Remedy::Fix),
            StorageError::UnsupportedFormat { .. } => Some(Remedy::Rebuild),
            StorageError::NoArtifact { .. } => Some(Remedy::Build),
            StorageError::Locked { .. } => Some(Remedy::WaitForWriter),
            _ => None,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StorageError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corrupt(what: impl Into<String>, detail: impl Into<String>) -> Self {
        StorageError::Corrupt {
            what: what.into(),
            detail: detail.into(),
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;
