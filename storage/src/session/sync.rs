//! Group commit: what of a writable graph's log is on disk, and the tickets that wait for
//! it.
//!
//! A commit appends its record while its caller holds the graph and takes a [`SyncTicket`]
//! (the log's generation and where the record ends). Waiting on the ticket, after the
//! caller let go of the graph, makes the record durable: the first waiter whose record is
//! not yet on disk becomes the leader and fsyncs the log (through its own handle, so the
//! writer is never blocked) up to everything appended so far; the commits that arrived
//! meanwhile find their records covered and return without an fsync of their own. A
//! checkpoint makes everything before it durable, so tickets of an older generation are
//! covered too.
//!
//! A failed fsync (or append) is not forgotten: the log's state on disk is then unknown (a
//! later fsync may succeed without the lost pages, see PostgreSQL's "fsyncgate"), so the
//! store refuses every later commit and every waiter whose record was not proven durable
//! gets the error. Reopening the graph replays what the log holds.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use crate::error::{Result, StorageError};

/// A committed record's claim on durability: wait on it to know the record is on disk.
/// Waiting on a ticket also covers every record appended before it.
#[derive(Clone, Debug)]
#[must_use = "a group commit is durable only once its ticket is waited on"]
pub struct SyncTicket {
    generation: u64,
    end: u64,
    log: Arc<LogSync>,
}

impl SyncTicket {
    /// Blocks until the record is on disk (fsyncing the log when no other waiter is).
    /// An error means the record was not proven durable: the store takes no more commits.
    pub fn wait(&self) -> Result<()> {
        self.log.wait_for(self.generation, self.end)
    }

    /// The checkpoint generation of the log the record is in.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The byte offset in that log where the record ends.
    pub fn end(&self) -> u64 {
        self.end
    }
}

/// The log's durability state, shared by the writer and every ticket.
#[derive(Debug)]
pub(crate) struct LogSync {
    state: Mutex<LogState>,
    /// Signalled when a leader's fsync finishes.
    sync_finished: Condvar,
    /// fsyncs of the log made by leaders (for tests and benchmarks).
    syncs: AtomicU64,
    /// Test hook: the next fsync fails as if the disk had.
    #[cfg(test)]
    fail_next_sync: std::sync::atomic::AtomicBool,
}

#[derive(Debug)]
struct LogState {
    /// The generation of the current log.
    generation: u64,
    /// A handle of the current log of its own, so a leader fsyncs while the writer appends.
    file: Arc<File>,
    path: PathBuf,
    /// Where the last whole record appended to the current log ends.
    appended: u64,
    /// Up to where the current log is known to be on disk.
    durable: u64,
    /// Whether a leader is fsyncing.
    syncing: bool,
    /// The first failed append or fsync; once set, the store takes no more commits.
    failure: Option<LogFailure>,
}

#[derive(Clone, Debug)]
struct LogFailure {
    path: PathBuf,
    detail: String,
}

impl LogFailure {
    fn error(&self) -> StorageError {
        StorageError::LogFailed {
            path: self.path.clone(),
            detail: self.detail.clone(),
        }
    }
}

impl LogSync {
    /// The state of log `path` of `generation`, open as `file`, whose `length` bytes are
    /// already there. No ticket ends at or before `length`, so calling it durable is safe.
    pub(crate) fn new(generation: u64, file: &File, path: &Path, length: u64) -> Result<Self> {
        Ok(LogSync {
            state: Mutex::new(LogState {
                generation,
                file: Arc::new(clone_handle(file, path)?),
                path: path.to_path_buf(),
                appended: length,
                durable: length,
                syncing: false,
                failure: None,
            }),
            sync_finished: Condvar::new(),
            syncs: AtomicU64::new(0),
            #[cfg(test)]
            fail_next_sync: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The state is consistent between any two statements that change it, so a panic
    /// elsewhere while it was held leaves nothing half done.
    fn lock(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The error that refuses a commit, once an append or fsync failed.
    pub(crate) fn refusal(&self) -> Option<StorageError> {
        self.lock().failure.as_ref().map(LogFailure::error)
    }

    /// Records a failure that leaves the log's state unknown (an append that may have
    /// left part of a record, after which a later record would be cut at the next open;
    /// a manifest swap that may or may not have happened) and returns its error.
    pub(crate) fn fail(&self, detail: String) -> StorageError {
        let mut state = self.lock();
        let failure = LogFailure {
            path: state.path.clone(),
            detail,
        };
        let error = failure.error();
        state.failure.get_or_insert(failure);
        error
    }

    /// Records `bytes` more appended to the current log; the ticket of the record that
    /// ends there.
    pub(crate) fn appended(self: &Arc<Self>, bytes: u64) -> SyncTicket {
        let mut state = self.lock();
        state.appended += bytes;
        SyncTicket {
            generation: state.generation,
            end: state.appended,
            log: Arc::clone(self),
        }
    }

    /// A ticket for everything appended so far.
    pub(crate) fn ticket_for_all(self: &Arc<Self>) -> SyncTicket {
        self.appended(0)
    }

    /// A checkpoint replaced the log by the one at `path` of `generation` (`handle` a
    /// handle of it of the state's own), `length` bytes already on disk: everything in
    /// older logs is durable (the checkpoint holds it).
    pub(crate) fn replace_log(&self, generation: u64, handle: File, path: &Path, length: u64) {
        let mut state = self.lock();
        state.generation = generation;
        state.file = Arc::new(handle);
        state.path = path.to_path_buf();
        state.appended = length;
        state.durable = length;
        // Waiters of the old generation are covered now.
        self.sync_finished.notify_all();
    }

    /// fsyncs of the log so far.
    pub(crate) fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    pub(crate) fn fail_next_sync(&self) {
        self.fail_next_sync.store(true, Ordering::SeqCst);
    }

    fn wait_for(&self, generation: u64, end: u64) -> Result<()> {
        let mut state = self.lock();
        loop {
            // Covered first: a record proven durable stays so whatever failed later.
            if generation < state.generation || end <= state.durable {
                return Ok(());
            }
            if let Some(failure) = &state.failure {
                return Err(failure.error());
            }
            state = if state.syncing {
                self.sync_finished
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner)
            } else {
                self.lead_sync(state)
            };
        }
    }

    /// fsyncs the current log up to everything appended by now, without holding the state
    /// while the disk works (other commits append and queue up meanwhile), then records
    /// what is durable and wakes the waiters.
    fn lead_sync<'a>(&'a self, mut state: MutexGuard<'a, LogState>) -> MutexGuard<'a, LogState> {
        state.syncing = true;
        let generation = state.generation;
        let target = state.appended;
        let file = Arc::clone(&state.file);
        let path = state.path.clone();
        drop(state);
        let outcome = self.sync_file(&file);
        self.syncs.fetch_add(1, Ordering::Relaxed);
        let mut state = self.lock();
        state.syncing = false;
        // A checkpoint that replaced the log meanwhile made all of it durable, whatever
        // this fsync of the old log found.
        if state.generation == generation {
            match outcome {
                Ok(()) => state.durable = state.durable.max(target),
                Err(error) => {
                    state.failure.get_or_insert(LogFailure {
                        path,
                        detail: format!("fsync failed: {error}"),
                    });
                }
            }
        }
        self.sync_finished.notify_all();
        state
    }

    fn sync_file(&self, file: &File) -> std::io::Result<()> {
        #[cfg(test)]
        if self.fail_next_sync.swap(false, Ordering::SeqCst) {
            return Err(std::io::Error::other("injected by a test"));
        }
        file.sync_data()
    }
}

pub(crate) fn clone_handle(file: &File, path: &Path) -> Result<File> {
    file.try_clone()
        .map_err(|error| StorageError::io(path.to_path_buf(), error))
}
