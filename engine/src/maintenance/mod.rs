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
mod statement;

pub use statement::{
    GcRequest, MaintenanceCall, MaintenanceReport, MaintenanceStatement, PrunedRun, run,
};

pub use batho_storage::audit::AuditEntry;
pub use batho_storage::{Artifact, RunKind, RunRecord, RunStatus, StorageError};
pub use batho_storage::{archive, gc};

use batho_storage::Store;
use batho_storage::audit::AuditLog;

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

/// Runs `text` when it is a maintenance statement (`CALL db.fix(...)`, `CALL db.gc(...)`)
/// on the artifact under `path` (a repository root or its `.batho` folder), without
/// opening the graph; `None` when `text` is any other query.
pub fn run_statement(
    path: &Path,
    text: &str,
    params: &BTreeMap<String, Value>,
) -> Option<Result<QueryResult, QueryError>> {
    let statement = match MaintenanceStatement::parse(text, params)? {
        Ok(statement) => statement,
        Err(error) => return Some(Err(error)),
    };
    let dir = crate::query::store_dir(path);
    Some(statement.run(&dir).map(|(_, result)| result))
}
