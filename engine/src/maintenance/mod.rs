//! Maintenance of a code graph's artifact: verification and repair ([`fix`]), garbage
//! collection ([`gc`]), transport archives ([`archive`]), the run history ([`runs`]) and
//! the audit log. This module is the one door through which the front ends reach the store
//! for them: `mcp` and `cli` do not depend on `batho-storage` (a test reads their
//! `Cargo.toml`), so whatever a front end does to an artifact passes the engine, which
//! appends the audit entries of the writes it makes while it holds the writer lock
//! ([`crate::patch`] does for every committed patch).
//!
//! The operations themselves belong to the storage layer, which knows the files; what
//! they report are plain data types, re-exported here under the engine's name.

use std::collections::BTreeMap;
use std::path::Path;

use crate::query::{QueryError, QueryResult, Value};

pub mod fix;
mod lifecycle;
mod statement;
pub mod transfer;

pub use statement::{
    GcRequest, MaintenanceCall, MaintenanceReport, MaintenanceStatement, PrunedRun, run,
};

pub use batho_storage::audit::AuditEntry;
pub use batho_storage::{Artifact, RunKind, RunRecord, RunStatus, StorageError};
pub use batho_storage::{archive, gc};

use batho_storage::Store;
use batho_storage::audit::AuditLog;

/// Why a maintenance or life-cycle operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MaintenanceError {
    /// The store could not be read or written.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// An archive could not be written or was refused.
    #[error(transparent)]
    Archive(#[from] archive::ArchiveError),
    /// A JSON view could not be written.
    #[error(transparent)]
    Export(#[from] crate::export::ExportError),
    /// A build failed.
    #[error(transparent)]
    Build(#[from] crate::build::BuildError),
    /// A patch failed.
    #[error(transparent)]
    Patch(#[from] crate::patch::PatchError),
    /// A path given to an export or a load leaves the repository.
    #[error(transparent)]
    Path(#[from] transfer::PathRefused),
    /// The archive to load is not a file.
    #[error("no archive at {}", .path.display())]
    NoArchive {
        /// The path, inside the repository.
        path: std::path::PathBuf,
    },
}

impl MaintenanceError {
    /// The way out, for a front end to word.
    pub fn remedy(&self) -> Option<batho_storage::Remedy> {
        match self {
            MaintenanceError::Storage(error) => error.remedy(),
            MaintenanceError::Archive(archive::ArchiveError::Storage(error)) => error.remedy(),
            MaintenanceError::Build(error) => error.remedy(),
            MaintenanceError::Patch(error) => error.remedy(),
            _ => None,
        }
    }

    /// Whether the caller asked for something wrong (a bad path, option or archive), as
    /// opposed to a failure of the artifact or the machine.
    pub fn is_usage(&self) -> bool {
        match self {
            MaintenanceError::Path(_) | MaintenanceError::NoArchive { .. } => true,
            MaintenanceError::Archive(error) => error.is_bad_archive(),
            MaintenanceError::Export(crate::export::ExportError::BadPattern { .. }) => true,
            MaintenanceError::Build(error) => error.is_usage(),
            MaintenanceError::Patch(error) => error.is_usage(),
            MaintenanceError::Storage(StorageError::InvalidInput { .. })
            | MaintenanceError::Storage(StorageError::NoSuchGeneration { .. }) => true,
            _ => false,
        }
    }
}

/// The runs of an artifact and the generation it serves.
#[derive(Clone, Debug)]
pub struct RunHistory {
    /// The current generation (0 before the first commit).
    pub current_generation: u64,
    /// Every recorded run, oldest first.
    pub runs: Vec<RunRecord>,
}

/// The run history of the artifact at `batho_dir`.
pub fn runs(batho_dir: &Path) -> Result<RunHistory, StorageError> {
    let store = Store::open_existing(batho_dir)?;
    let current_generation = store.current_manifest()?.map_or(0, |m| m.generation);
    Ok(RunHistory {
        current_generation,
        runs: store.runs()?,
    })
}

/// Appends `action` with `detail` to the audit log of the artifact at `batho_dir`. The
/// caller holds the writer lock, so entries are chained in the order the writes happened.
pub(crate) fn append_audit(
    batho_dir: &Path,
    action: &str,
    detail: &str,
) -> Result<AuditEntry, StorageError> {
    AuditLog::new(batho_dir).append(action, detail)
}

/// Runs `text` when it is a maintenance or life-cycle statement (`CALL db.fix(...)`,
/// `db.gc`, `db.export`, `db.load`, `db.build`, `db.patch`, `db.status`) on the artifact
/// under `path` (a repository root or its `.batho` folder), without opening the graph;
/// `None` when `text` is any other query.
pub fn run_statement(
    path: &Path,
    text: &str,
    params: &BTreeMap<String, Value>,
) -> Option<Result<QueryResult, QueryError>> {
    let statement = match MaintenanceStatement::parse(text, params)? {
        Ok(statement) => statement,
        Err(error) => return Some(Err(error)),
    };
    Some(statement.run(path).map(|(_, result)| result))
}
