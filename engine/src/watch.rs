//! File watching: a watched repository is re-indexed after its sources change and
//! settle, so agents and people are not served a stale graph. Used by the MCP server
//! (`add_repo(watch=true)`) and by `batho watch`.
//!
//! One `notify` watcher and one worker thread per watched repository. The watcher's
//! callback only records which source files changed (so answers can name them at once)
//! and wakes the worker; the worker waits until no event arrived for the debounce, then
//! runs a [`crate::patch`], which compares the sources with the artifact by content hash
//! (applying the build's own ignore rules, so ignored files and the artifact's own writes
//! never cause a re-index) and re-extracts only what changed. On start the worker does the
//! same once, catching up with edits made while nobody watched. Every outcome is also
//! reported to an optional [`WatchObserver`] (the CLI prints them).

use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::discover::is_source_extension;
use crate::patch::{DetectMode, PatchOptions, patch};
use notify::event::{MetadataKind, ModifyKind};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

/// What one repository's watcher is doing, for `batho_status`.
#[derive(Clone, Debug, Default)]
pub struct WatchReport {
    /// `starting` (setting up the watch), `watching` (idle), `pending` (changes waiting
    /// to settle) or `indexing`.
    pub state: &'static str,
    /// Changed source files (relative paths) not yet in the artifact.
    pub pending: Vec<String>,
    /// Re-index runs finished since the watcher started.
    pub reindexed: u64,
    /// The last re-index failure, if the last attempt failed.
    pub last_error: Option<String>,
}

/// What a watcher did, as told to its [`WatchObserver`].
#[derive(Clone, Debug)]
pub enum WatchEvent {
    /// The recursive watch is in place; changes from now on are seen.
    Ready,
    /// The catch-up or a settled change found the artifact up to date.
    UpToDate,
    /// The artifact was brought up to date: a one-line summary and the time it took.
    Reindexed {
        /// What the re-index did, for people.
        summary: String,
        /// Wall time of the re-index in milliseconds.
        millis: u64,
    },
    /// A re-index failed; the worker retries (2 s, doubling up to 60 s).
    Failed(String),
    /// The watch itself could not be set up: the worker has ended and will not retry.
    Stopped(String),
}

/// Told of every [`WatchEvent`] of a repository, on the watcher's own thread.
pub type WatchObserver = Arc<dyn Fn(&Path, &WatchEvent) + Send + Sync>;

/// How a repository is watched.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// Quiet time after the last change before re-indexing.
    pub debounce: Duration,
    /// The build's file size limit (`--max-file-size-kb`); `None` for its default.
    pub max_file_size_kb: Option<u64>,
}

#[derive(Default)]
struct Shared {
    /// Changed since the last re-index started.
    pending: BTreeSet<String>,
    /// Being re-indexed now (still stale until that commits).
    in_flight: BTreeSet<String>,
    /// The recursive watch is being set up (one inotify watch per folder: hundreds of
    /// milliseconds on a kernel tree, so it never runs on the caller's thread).
    starting: bool,
    indexing: bool,
    reindexed: u64,
    last_error: Option<String>,
}

/// What wakes a worker.
enum Wake {
    /// A source file changed (or events were lost).
    Changed,
    /// The repo is no longer watched.
    Stop,
}

struct Watch {
    wake: mpsc::Sender<Wake>,
    shared: Arc<Mutex<Shared>>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        // The worker drops its notify watcher and ends.
        let _ = self.wake.send(Wake::Stop);
    }
}

/// The watchers of every watched repository, keyed by repository root.
#[derive(Default)]
pub struct Watchers {
    map: Mutex<HashMap<PathBuf, Watch>>,
}

impl Watchers {
    /// Starts watching `root` (no-op if it is watched already). Returns at once: the
    /// watch is set up on the worker thread, and a failure there shows in [`Self::report`].
    pub fn start(
        &self,
        root: &Path,
        opts: &WatchOptions,
        observer: Option<WatchObserver>,
    ) -> Result<(), String> {
        let mut map = self.map.lock().map_err(|_| "watcher registry poisoned")?;
        if map.contains_key(root) {
            return Ok(());
        }
        let shared = Arc::new(Mutex::new(Shared {
            starting: true,
            ..Shared::default()
        }));
        let (wake, rx) = mpsc::channel::<Wake>();
        let (w_root, w_shared, w_wake) = (root.to_path_buf(), Arc::clone(&shared), wake.clone());
        let opts = WatchOptions {
            debounce: opts.debounce.max(Duration::from_millis(1)),
            ..opts.clone()
        };
        std::thread::Builder::new()
            .name("batho-watch".into())
            .spawn(move || {
                let tell = |e: &WatchEvent| {
                    if let Some(o) = &observer {
                        o(&w_root, e);
                    }
                };
                let watcher = match watch_tree(&w_root, &w_shared, w_wake) {
                    Ok(w) => w,
                    Err(e) => {
                        if let Ok(mut s) = w_shared.lock() {
                            s.starting = false;
                            s.last_error = Some(e.clone());
                        }
                        tell(&WatchEvent::Stopped(e));
                        return;
                    }
                };
                if let Ok(mut s) = w_shared.lock() {
                    s.starting = false;
                }
                tell(&WatchEvent::Ready);
                worker(&w_root, &opts, &w_shared, &rx, &tell);
                drop(watcher);
            })
            .map_err(|e| format!("cannot start the watcher thread: {e}"))?;
        map.insert(root.to_path_buf(), Watch { wake, shared });
        Ok(())
    }

    /// Stops watching `root`.
    pub fn stop(&self, root: &Path) {
        if let Ok(mut map) = self.map.lock() {
            map.remove(root);
        }
    }

    /// The watcher's state for `root`, `None` when it is not watched.
    pub fn report(&self, root: &Path) -> Option<WatchReport> {
        let map = self.map.lock().ok()?;
        let s = map.get(root)?.shared.lock().ok()?;
        Some(WatchReport {
            state: if s.starting {
                "starting"
            } else if s.indexing {
                "indexing"
            } else if s.pending.is_empty() {
                "watching"
            } else {
                "pending"
            },
            pending: s.pending.union(&s.in_flight).cloned().collect(),
            reindexed: s.reindexed,
            last_error: s.last_error.clone(),
        })
    }
}

/// A recursive notify watch on `root` whose events record changed sources in `shared`
/// and wake the worker.
fn watch_tree(
    root: &Path,
    shared: &Arc<Mutex<Shared>>,
    wake: mpsc::Sender<Wake>,
) -> Result<RecommendedWatcher, String> {
    let (cb_root, cb_shared) = (root.to_path_buf(), Arc::clone(shared));
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        let Ok(event) = res else {
            // Lost events (queue overflow): let the worker re-check everything.
            let _ = wake.send(Wake::Changed);
            return;
        };
        if !changes_content(&event.kind) {
            return;
        }
        let changed: Vec<String> = event
            .paths
            .iter()
            .filter_map(|p| relevant(&cb_root, p))
            .collect();
        if changed.is_empty() {
            return;
        }
        if let Ok(mut s) = cb_shared.lock() {
            s.pending.extend(changed);
        }
        let _ = wake.send(Wake::Changed);
    })
    .map_err(|e| format!("cannot watch {}: {e}", root.display()))?;
    watcher
        .watch(root, RecursiveMode::Recursive)
        .map_err(|e| format!("cannot watch {}: {e}", root.display()))?;
    Ok(watcher)
}

/// Whether an event can change what the build reads. Reads are not changes: the watcher's
/// own status check and re-index open every source, and must not wake it again.
fn changes_content(kind: &EventKind) -> bool {
    match kind {
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Any => true,
        EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)) => false,
        EventKind::Modify(_) => true,
        EventKind::Access(_) | EventKind::Other => false,
    }
}

/// The repository-relative path of a changed file the build would index, if `path` is
/// one: C/C++ sources outside `.batho/`, `.git/` and hidden folders.
fn relevant(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let hidden = rel.components().any(|c| match c {
        Component::Normal(name) => name.as_encoded_bytes().first() == Some(&b'.'),
        _ => true,
    });
    let ext = rel.extension()?.to_str()?;
    if hidden || !is_source_extension(ext) {
        return None;
    }
    Some(rel.to_string_lossy().replace('\\', "/"))
}

/// First wait before retrying a failed re-index (the writer lock held by another build,
/// a missing artifact); doubled on each failure up to [`RETRY_MAX`].
const RETRY_MIN: Duration = Duration::from_secs(2);
const RETRY_MAX: Duration = Duration::from_secs(60);

fn worker(
    root: &Path,
    opts: &WatchOptions,
    shared: &Mutex<Shared>,
    rx: &mpsc::Receiver<Wake>,
    tell: &dyn Fn(&WatchEvent),
) {
    // Catch up with edits made while nobody watched (the watch is already in place, so
    // nothing changed after this check goes unseen).
    let mut retry = (!reindex(root, opts, shared, tell)).then_some(RETRY_MIN);
    loop {
        let woke = match retry {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(wait) => rx.recv_timeout(wait),
        };
        match woke {
            // Settle: wait until the files have been quiet for the whole debounce.
            Ok(Wake::Changed) => loop {
                match rx.recv_timeout(opts.debounce) {
                    Ok(Wake::Changed) => continue,
                    Err(RecvTimeoutError::Timeout) => break,
                    Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                }
            },
            Err(RecvTimeoutError::Timeout) => {}
            Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => return,
        }
        retry = if reindex(root, opts, shared, tell) {
            None
        } else {
            Some(retry.map_or(RETRY_MIN, |d| (d * 2).min(RETRY_MAX)))
        };
    }
}

/// Brings the artifact up to date if the sources changed; `false` when that failed.
fn reindex(
    root: &Path,
    opts: &WatchOptions,
    shared: &Mutex<Shared>,
    tell: &dyn Fn(&WatchEvent),
) -> bool {
    match shared.lock() {
        Ok(mut s) => {
            s.indexing = true;
            s.in_flight = std::mem::take(&mut s.pending);
        }
        Err(_) => return false,
    }
    let started = std::time::Instant::now();
    let outcome = refresh(root, opts);
    let ok = outcome.is_ok();
    tell(&match &outcome {
        Ok(Some(summary)) => WatchEvent::Reindexed {
            summary: summary.clone(),
            millis: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        },
        Ok(None) => WatchEvent::UpToDate,
        Err(e) => WatchEvent::Failed(e.clone()),
    });
    if let Ok(mut s) = shared.lock() {
        s.indexing = false;
        match outcome {
            Ok(rebuilt) => {
                // Files changed again during the build are in `pending` again: their
                // events woke the worker, and the next round picks them up.
                s.in_flight.clear();
                s.reindexed += u64::from(rebuilt.is_some());
                s.last_error = None;
            }
            Err(e) => {
                let failed = std::mem::take(&mut s.in_flight);
                s.pending.extend(failed);
                s.last_error = Some(e);
            }
        }
    }
    ok
}

/// Patches a repository: re-extracts only the files that changed and the references they
/// affect. `None` when nothing changed; otherwise a summary for people.
fn refresh(root: &Path, opts: &WatchOptions) -> Result<Option<String>, String> {
    let patch_opts = PatchOptions {
        mode: DetectMode::Hash,
        max_workers: None,
        max_file_size_kb: opts.max_file_size_kb,
        ..PatchOptions::default()
    };
    let report = patch(root, &patch_opts).map_err(|e| match e.hint() {
        Some(h) => format!("{e} ({h})"),
        None => e.to_string(),
    })?;
    Ok(report
        .run
        .is_some()
        .then(|| format!("Patched {}: {}", root.display(), report.changes_line())))
}

#[cfg(test)]
mod tests {
    use super::{changes_content, relevant};
    use notify::EventKind;
    use notify::event::{AccessKind, CreateKind, DataChange, MetadataKind, ModifyKind};
    use std::path::Path;

    #[test]
    fn reads_are_not_changes() {
        assert!(!changes_content(&EventKind::Access(AccessKind::Any)));
        assert!(!changes_content(&EventKind::Modify(ModifyKind::Metadata(
            MetadataKind::AccessTime
        ))));
        assert!(changes_content(&EventKind::Modify(ModifyKind::Data(
            DataChange::Content
        ))));
        assert!(changes_content(&EventKind::Create(CreateKind::File)));
    }

    #[test]
    fn only_sources_the_build_would_see_are_relevant() {
        let root = Path::new("/r");
        assert_eq!(
            relevant(root, Path::new("/r/src/a.c")),
            Some("src/a.c".into())
        );
        assert_eq!(
            relevant(root, Path::new("/r/inc/x.HPP")),
            Some("inc/x.HPP".into())
        );
        assert_eq!(relevant(root, Path::new("/r/.batho/MANIFEST")), None);
        assert_eq!(relevant(root, Path::new("/r/.batho/segments/a.c")), None);
        assert_eq!(relevant(root, Path::new("/r/.git/index")), None);
        assert_eq!(relevant(root, Path::new("/r/README.md")), None);
        assert_eq!(relevant(root, Path::new("/elsewhere/a.c")), None);
    }
}
