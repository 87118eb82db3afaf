//! The folder of a writable graph: `GRAPH` (the manifest: format and current checkpoint
//! generation), `checkpoint-<generation>-<blake3>.graph` files, one `wal-<generation>.log`
//! per checkpoint, and `LOCK` for the single writer.
//!
//! Commit protocol: a transaction is one log record, appended and (by default) fsynced
//! before the commit returns; under [`Durability::Group`] the commit hands back a
//! [`SyncTicket`] that fsyncs when waited on, once for all the records appended by then
//! (`sync.rs`). A checkpoint writes the graph to a new checkpoint file and
//! an empty log for the next generation, fsyncs both and the folder, then replaces `GRAPH`
//! (write, fsync, rename, fsync folder): a crash before the rename leaves the previous
//! checkpoint and its log in charge, after it the new ones. Older checkpoints and logs stay
//! readable until `gc`.

use std::fs::{self, File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::checkpoint;
use super::graph::{Journal, WritableGraph};
use super::sync::{LogSync, SyncTicket, clone_handle};
use super::wal::{self, TornTail, WAL_HEADER_LEN};
use crate::error::{Result, StorageError};
use crate::store::{io_err, lock_file, sync_dir};

/// The manifest file of a writable graph.
pub const GRAPH_MANIFEST: &str = "GRAPH";
const MANIFEST_FIRST_LINE: &str = "batho writable graph 1";
const LOCK: &str = "LOCK";

/// Whether commits wait for the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// fsync each commit's record before returning (the default).
    Fsync,
    /// Leave flushing to the OS: a crash may lose the latest commits, never half of one.
    NoFsync,
    /// Group commit: append each commit's record and hand back a [`SyncTicket`]; the commit
    /// is durable once that ticket (or a later one) is waited on. Waiting outside the lock
    /// that serialises the writers lets one fsync cover every commit appended meanwhile.
    Group,
}

/// What opening found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// The checkpoint generation in charge.
    pub generation: u64,
    /// Committed transactions replayed from the log.
    pub replayed: u64,
    /// A torn end of the log (cut by a writer, ignored by a reader).
    pub torn_tail: Option<TornTail>,
}

/// What a checkpoint wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// The new generation.
    pub generation: u64,
    /// The checkpoint file.
    pub file: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
}

/// The manifest's content.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Manifest {
    generation: u64,
    /// The checkpoint file of `generation` (none for generation 0, the empty graph).
    checkpoint: Option<String>,
}

fn corrupt(path: &Path, detail: impl Into<String>) -> StorageError {
    StorageError::Corrupt {
        what: path.display().to_string(),
        detail: detail.into(),
    }
}

fn wal_name(generation: u64) -> String {
    format!("wal-{generation}.log")
}

impl Manifest {
    fn render(&self) -> String {
        format!(
            "{MANIFEST_FIRST_LINE}\ngeneration {}\ncheckpoint {}\n",
            self.generation,
            self.checkpoint.as_deref().unwrap_or("-")
        )
    }

    fn parse(text: &str, path: &Path) -> Result<Manifest> {
        let mut lines = text.lines();
        if lines.next() != Some(MANIFEST_FIRST_LINE) {
            return Err(corrupt(path, "not a writable-graph manifest"));
        }
        let generation = lines
            .next()
            .and_then(|l| l.strip_prefix("generation "))
            .and_then(|g| g.parse().ok())
            .ok_or_else(|| corrupt(path, "no generation line"))?;
        let checkpoint = match lines.next().and_then(|l| l.strip_prefix("checkpoint ")) {
            Some("-") => None,
            Some(name) if is_checkpoint_name(name) => Some(name.to_string()),
            _ => return Err(corrupt(path, "no valid checkpoint line")),
        };
        Ok(Manifest {
            generation,
            checkpoint,
        })
    }
}

/// `checkpoint-<generation>-<64 hex>.graph`: nothing else may be named by a manifest, so a
/// damaged manifest cannot point outside the folder.
fn is_checkpoint_name(name: &str) -> bool {
    name.strip_prefix("checkpoint-")
        .and_then(|rest| rest.strip_suffix(".graph"))
        .and_then(|rest| rest.split_once('-'))
        .is_some_and(|(generation, hash)| {
            generation.bytes().all(|b| b.is_ascii_digit())
                && hash.len() == 64
                && hash.bytes().all(|b| b.is_ascii_hexdigit())
        })
}

/// Writes `bytes` to `dir/name` through a fsynced temporary file and a rename.
fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let temporary = dir.join(format!("{name}.tmp-{}", uuid::Uuid::new_v4().simple()));
    fs::write(&temporary, bytes).map_err(io_err(&temporary))?;
    File::open(&temporary)
        .and_then(|f| f.sync_all())
        .map_err(io_err(&temporary))?;
    let target = dir.join(name);
    fs::rename(&temporary, &target).map_err(io_err(&target))?;
    sync_dir(dir)
}

/// Whether `dir` holds a writable graph.
pub fn is_writable_graph(dir: &Path) -> bool {
    dir.join(GRAPH_MANIFEST).is_file()
}

/// The writer's handle on a writable graph's folder: the lock, the open log, the
/// current generation.
#[derive(Debug)]
pub struct WritableStore {
    dir: PathBuf,
    generation: u64,
    wal: File,
    wal_path: PathBuf,
    /// What of the log is on disk; shared with the tickets.
    log: Arc<LogSync>,
    durability: Durability,
    _lock: File,
}

fn take_lock(dir: &Path) -> Result<File> {
    lock_file(&dir.join(LOCK))
}

fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join(GRAPH_MANIFEST);
    match fs::read_to_string(&path) {
        Ok(text) => Manifest::parse(&text, &path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(StorageError::NoArtifact {
            path: dir.to_path_buf(),
        }),
        Err(e) => Err(StorageError::io(path, e)),
    }
}

/// Loads the checkpoint of `manifest` and replays its log. The graph, the report, and
/// the length of the log's good prefix.
fn load(dir: &Path, manifest: &Manifest) -> Result<(WritableGraph, OpenReport, u64)> {
    let mut graph = match &manifest.checkpoint {
        None => WritableGraph::new(),
        Some(name) => {
            let path = dir.join(name);
            let bytes = fs::read(&path).map_err(io_err(&path))?;
            let hash = blake3::hash(&bytes).to_hex();
            if !name.contains(hash.as_str()) {
                return Err(corrupt(
                    &path,
                    "its content does not match the hash in its name",
                ));
            }
            checkpoint::decode(&bytes).map_err(|e| corrupt(&path, e.0))?
        }
    };
    let wal_path = dir.join(wal_name(manifest.generation));
    let bytes = match fs::read(&wal_path) {
        Ok(bytes) => bytes,
        // A crash after the manifest swap and before anything else cannot lose the log
        // (it is written first), but a missing log of generation 0 is an empty one.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && manifest.generation == 0 => {
            wal::header(0).to_vec()
        }
        Err(e) => return Err(StorageError::io(wal_path, e)),
    };
    let contents = wal::parse(&bytes, manifest.generation, &wal_path)?;
    let replayed = contents.batches.len() as u64;
    for (index, batch) in contents.batches.into_iter().enumerate() {
        for change in batch {
            graph.apply(change).map_err(|e| {
                corrupt(
                    &wal_path,
                    format!("record {} does not apply: {e}", index + 1),
                )
            })?;
        }
    }
    let report = OpenReport {
        generation: manifest.generation,
        replayed,
        torn_tail: contents.torn,
    };
    Ok((graph, report, contents.good_len))
}

/// Reads the graph in `dir` as it was committed, without the lock and without writing.
pub fn read_writable_graph(dir: &Path) -> Result<(WritableGraph, OpenReport)> {
    let manifest = read_manifest(dir)?;
    let (graph, report, _) = load(dir, &manifest)?;
    Ok((graph, report))
}

impl WritableStore {
    /// Creates an empty writable graph in `dir` (made if missing). Refuses a folder that
    /// already holds one, or a code graph's store.
    pub fn create(dir: &Path) -> Result<(WritableStore, WritableGraph)> {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        if is_writable_graph(dir) || dir.join(crate::format::names::MANIFEST).exists() {
            return Err(StorageError::GraphExists {
                path: dir.to_path_buf(),
            });
        }
        let lock = take_lock(dir)?;
        let wal_path = dir.join(wal_name(0));
        write_atomically(dir, &wal_name(0), &wal::header(0))?;
        let manifest = Manifest {
            generation: 0,
            checkpoint: None,
        };
        write_atomically(dir, GRAPH_MANIFEST, manifest.render().as_bytes())?;
        let wal = open_for_append(&wal_path)?;
        let log = LogSync::new(0, &wal, &wal_path, WAL_HEADER_LEN as u64)?;
        let store = WritableStore {
            dir: dir.to_path_buf(),
            generation: 0,
            wal,
            wal_path,
            log: Arc::new(log),
            durability: Durability::Fsync,
            _lock: lock,
        };
        Ok((store, WritableGraph::new()))
    }

    /// Opens the graph in `dir` for writing: takes the lock, loads the checkpoint, replays
    /// the log and cuts a torn tail (reported in [`OpenReport::torn_tail`]).
    pub fn open(dir: &Path) -> Result<(WritableStore, WritableGraph, OpenReport)> {
        let lock = take_lock(dir)?;
        let manifest = read_manifest(dir)?;
        let (graph, report, good_len) = load(dir, &manifest)?;
        let wal_path = dir.join(wal_name(manifest.generation));
        if !wal_path.exists() {
            write_atomically(
                dir,
                &wal_name(manifest.generation),
                &wal::header(manifest.generation),
            )?;
        }
        let wal = open_for_append(&wal_path)?;
        if report.torn_tail.is_some() {
            wal.set_len(good_len).map_err(io_err(&wal_path))?;
            wal.sync_all().map_err(io_err(&wal_path))?;
        }
        let log = LogSync::new(manifest.generation, &wal, &wal_path, good_len)?;
        let mut store = WritableStore {
            dir: dir.to_path_buf(),
            generation: manifest.generation,
            wal,
            wal_path,
            log: Arc::new(log),
            durability: Durability::Fsync,
            _lock: lock,
        };
        store
            .wal
            .seek(SeekFrom::End(0))
            .map_err(io_err(&store.wal_path))?;
        Ok((store, graph, report))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The current checkpoint generation.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Chooses whether commits wait for the disk.
    pub fn set_durability(&mut self, durability: Durability) {
        self.durability = durability;
    }

    /// Bytes in the current log.
    pub fn log_len(&self) -> Result<u64> {
        Ok(self.wal.metadata().map_err(io_err(&self.wal_path))?.len())
    }

    /// fsyncs of the log this store made so far, for commits and [`WritableStore::sync`]
    /// (checkpoints are not counted): under group commit, fewer than the commits.
    pub fn log_syncs(&self) -> u64 {
        self.log.syncs()
    }

    /// Appends the changes of `journal` as one committed transaction. Under
    /// [`Durability::Fsync`] the changes survive a crash when this returns; under
    /// [`Durability::Group`] they do once the returned ticket is waited on. An empty
    /// journal appends nothing. An error means the record was not proven durable; when
    /// the append or the fsync itself failed, the log's state is unknown and the store
    /// refuses every later commit ([`StorageError::LogFailed`]).
    pub fn commit(&mut self, journal: &Journal) -> Result<Option<SyncTicket>> {
        let (count, encoded) = journal.encoded();
        if count == 0 {
            return Ok(None);
        }
        let ticket = self.append(&wal::record(count, encoded))?;
        match self.durability {
            Durability::Fsync => {
                ticket.wait()?;
                Ok(None)
            }
            Durability::Group => Ok(Some(ticket)),
            Durability::NoFsync => Ok(None),
        }
    }

    /// Appends one record and returns its ticket, without waiting for the disk.
    fn append(&mut self, record: &[u8]) -> Result<SyncTicket> {
        if let Some(refusal) = self.log.refusal() {
            return Err(refusal);
        }
        if let Err(error) = self.wal.write_all(record) {
            // Part of the record may be in the file: a record appended after it would be
            // cut with it at the next open.
            return Err(self.log.fail(format!("append failed: {error}")));
        }
        Ok(self.log.appended(record.len() as u64))
    }

    /// Forces every earlier commit to disk (the ones [`Durability::NoFsync`] left to the
    /// OS, and group commits whose tickets nobody waited on yet).
    pub fn sync(&self) -> Result<()> {
        self.log.ticket_for_all().wait()
    }

    /// Test hook: the next fsync of the log fails.
    #[cfg(test)]
    pub(crate) fn fail_next_sync(&self) {
        self.log.fail_next_sync();
    }

    /// Writes `graph` (which must be this store's graph with every commit applied) as the
    /// next generation's checkpoint and starts an empty log for it.
    pub fn checkpoint(&mut self, graph: &WritableGraph) -> Result<CheckpointInfo> {
        if let Some(refusal) = self.log.refusal() {
            return Err(refusal);
        }
        let next = self.generation + 1;
        let bytes = checkpoint::encode(graph);
        let name = format!("checkpoint-{next}-{}.graph", blake3::hash(&bytes).to_hex());
        write_atomically(&self.dir, &name, &bytes)?;
        write_atomically(&self.dir, &wal_name(next), &wal::header(next))?;
        // Opened before the manifest names the new generation: failing after the swap
        // would leave commits going to a log no longer in charge.
        let wal_path = self.dir.join(wal_name(next));
        let wal = open_for_append(&wal_path)?;
        let sync_handle = clone_handle(&wal, &wal_path)?;
        let manifest = Manifest {
            generation: next,
            checkpoint: Some(name.clone()),
        };
        if let Err(error) =
            write_atomically(&self.dir, GRAPH_MANIFEST, manifest.render().as_bytes())
        {
            // The manifest may name either generation now, so either log may be the
            // wrong one to append to.
            return Err(self
                .log
                .fail(format!("the checkpoint's manifest swap failed: {error}")));
        }
        self.log
            .replace_log(next, sync_handle, &wal_path, WAL_HEADER_LEN as u64);
        self.wal = wal;
        self.wal_path = wal_path;
        self.generation = next;
        Ok(CheckpointInfo {
            generation: next,
            file: self.dir.join(name),
            bytes: bytes.len() as u64,
        })
    }
}

fn open_for_append(path: &Path) -> Result<File> {
    OpenOptions::new()
        .append(true)
        .read(true)
        .open(path)
        .map_err(io_err(path))
}

/// What checking a writable graph's folder found.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CheckReport {
    /// The checkpoint generation in charge.
    pub generation: u64,
    /// Whole, checksummed transactions in its log.
    pub transactions: u64,
    /// The torn end of the log, if any.
    pub torn_tail: Option<TornTail>,
    /// Whether the torn tail was cut (not on a dry run).
    pub cut: bool,
    /// Damage that no repair here can undo (a damaged checkpoint, a record that does not
    /// apply, a damaged manifest), one line each.
    pub damage: Vec<String>,
}

/// Checks a writable graph's folder: the manifest, the checkpoint against its hash, every
/// log record against its checksum, and that the log replays. A torn log tail (a crash
/// during an append) is cut unless `dry_run`; it only ever held an unacknowledged commit.
/// Takes the writer lock, so it never races a writer.
pub fn check_writable_graph(dir: &Path, dry_run: bool) -> Result<CheckReport> {
    let _lock = take_lock(dir)?;
    let manifest = match read_manifest(dir) {
        Ok(manifest) => manifest,
        Err(StorageError::Corrupt { what, detail }) => {
            return Ok(CheckReport {
                generation: 0,
                transactions: 0,
                torn_tail: None,
                cut: false,
                damage: vec![format!("{what}: {detail}")],
            });
        }
        Err(e) => return Err(e),
    };
    let (report, good_len) = match load(dir, &manifest) {
        Ok((_, report, good_len)) => (report, good_len),
        Err(StorageError::Corrupt { what, detail }) => {
            return Ok(CheckReport {
                generation: manifest.generation,
                transactions: 0,
                torn_tail: None,
                cut: false,
                damage: vec![format!("{what}: {detail}")],
            });
        }
        Err(e) => return Err(e),
    };
    let mut cut = false;
    if report.torn_tail.is_some() && !dry_run {
        let wal_path = dir.join(wal_name(manifest.generation));
        let wal = OpenOptions::new()
            .write(true)
            .open(&wal_path)
            .map_err(io_err(&wal_path))?;
        wal.set_len(good_len).map_err(io_err(&wal_path))?;
        wal.sync_all().map_err(io_err(&wal_path))?;
        cut = true;
    }
    Ok(CheckReport {
        generation: report.generation,
        transactions: report.replayed,
        torn_tail: report.torn_tail,
        cut,
        damage: Vec::new(),
    })
}

/// What reclaiming a writable graph's older generations freed.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReclaimReport {
    /// Whether nothing was deleted (a dry run).
    pub dry_run: bool,
    /// The files deleted (or that would be).
    pub files: Vec<String>,
    /// Their total size.
    pub bytes: u64,
}

/// The generation a checkpoint or log file name belongs to, if it is one.
fn generation_of(name: &str) -> Option<u64> {
    let number = if let Some(rest) = name.strip_prefix("wal-") {
        rest.strip_suffix(".log")?
    } else {
        name.strip_prefix("checkpoint-")?.split('-').next()?
    };
    number.parse().ok()
}

/// Deletes the checkpoints and logs of generations before the current one, and leftover
/// temporary files (what a crash during a write left): they are only needed to read the
/// graph as it was before its last checkpoint. Takes the writer lock.
pub fn reclaim_writable_graph(dir: &Path, dry_run: bool) -> Result<ReclaimReport> {
    let _lock = take_lock(dir)?;
    let manifest = read_manifest(dir)?;
    let mut report = ReclaimReport {
        dry_run,
        ..ReclaimReport::default()
    };
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map_err(io_err(dir))?
        .filter_map(|e| e.ok())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let old = generation_of(&name).is_some_and(|g| g < manifest.generation);
        if !(old || name.contains(".tmp-")) || !entry.path().is_file() {
            continue;
        }
        report.bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
        if !dry_run {
            fs::remove_file(entry.path()).map_err(io_err(&entry.path()))?;
        }
        report.files.push(name);
    }
    if !dry_run && !report.files.is_empty() {
        sync_dir(dir)?;
    }
    Ok(report)
}
