//! Which two generations a question about runs compares, and why it cannot when it cannot.
//!
//! A run's delta compares the generation the run committed with the generation that was
//! current before it: the generation of the latest earlier *completed* run (a failed run
//! commits no graph). `gc prune` removes runs from the history and `gc reclaim` deletes
//! the manifests nothing retains, so the older side may be gone: that is reported as
//! pruned, with the generations still on disk, never as an empty delta.

use std::path::{Path, PathBuf};

use batho_storage::{Artifact, RunRecord, RunStatus, StorageError, Store};

/// Why a run or generation comparison cannot be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiffError {
    /// No artifact in the folder.
    #[error("No Batho artifact found at {}. Run 'batho build' first.", .path.display())]
    NoArtifact {
        /// The `.batho` folder.
        path: PathBuf,
    },
    /// No run has this id or id prefix.
    #[error("Run not found: {key}")]
    UnknownRun {
        /// What was asked for.
        key: String,
        /// The newest run ids, for the hint.
        known: Vec<String>,
    },
    /// The prefix names several runs.
    #[error("Run prefix '{key}' is ambiguous: it matches {}", .matches.join(", "))]
    AmbiguousRun {
        /// What was asked for.
        key: String,
        /// The runs it matches.
        matches: Vec<String>,
    },
    /// The run is the first build: nothing came before it.
    #[error(
        "Run {run} is the first build of this artifact: there is no earlier generation to compare with"
    )]
    NoPredecessor {
        /// The run.
        run: String,
    },
    /// The runs before this one were pruned from the history.
    #[error(
        "The runs before run {run} were pruned (batho gc prune): its delta can no longer be computed"
    )]
    PredecessorPruned {
        /// The run.
        run: String,
        /// Generations still on disk.
        retained: Vec<u64>,
    },
    /// No run in the history has an earlier completed run.
    #[error(
        "No run to compare: the history holds {runs} run(s) and none has an earlier completed run"
    )]
    NothingToCompare {
        /// Runs in the history.
        runs: usize,
    },
    /// The generation existed but its manifest was deleted by `gc reclaim`.
    #[error("Generation {generation} was pruned (batho gc reclaim deleted it)")]
    Pruned {
        /// The generation.
        generation: u64,
        /// Generations still on disk.
        retained: Vec<u64>,
    },
    /// The generation was never committed.
    #[error("Generation {generation} does not exist (the current generation is {current})")]
    NoSuchGeneration {
        /// The generation.
        generation: u64,
        /// The current generation.
        current: u64,
        /// Generations on disk.
        retained: Vec<u64>,
    },
    /// The generation records a run but holds no graph (a failed first build).
    #[error("Generation {generation} holds no graph")]
    EmptyGeneration {
        /// The generation.
        generation: u64,
    },
    /// The store could not be read.
    #[error("cannot read the artifact: {0}")]
    Storage(#[from] StorageError),
}

impl DiffError {
    /// The way out of an error of the store, for a front end to word.
    pub fn remedy(&self) -> Option<batho_storage::Remedy> {
        match self {
            DiffError::NoArtifact { .. } => Some(batho_storage::Remedy::Build),
            DiffError::Storage(error) => error.remedy(),
            _ => None,
        }
    }

    /// What to do about it, in words that name no command of a front end (each words
    /// [`DiffError::remedy`] its own way).
    pub fn hint(&self) -> Option<String> {
        let list = |r: &[u64]| {
            let shown: Vec<String> = r.iter().map(u64::to_string).collect();
            if shown.is_empty() {
                "none".to_string()
            } else {
                shown.join(", ")
            }
        };
        match self {
            DiffError::UnknownRun { known, .. } => Some(if known.is_empty() {
                "the run history is empty".into()
            } else {
                format!("the newest runs: {}", known.join(", "))
            }),
            DiffError::AmbiguousRun { .. } => Some("give more characters of the run id".into()),
            DiffError::NoPredecessor { .. } | DiffError::NothingToCompare { .. } => {
                Some("patch or rebuild the repository to record a second run".into())
            }
            DiffError::PredecessorPruned { retained, .. } | DiffError::Pruned { retained, .. } => {
                Some(format!("retained generations: {}", list(retained)))
            }
            DiffError::NoSuchGeneration { retained, .. } => {
                Some(format!("retained generations: {}", list(retained)))
            }
            DiffError::EmptyGeneration { .. } => {
                Some("compare with the generation of a completed run".into())
            }
            // Worded by each front end from `remedy`.
            DiffError::NoArtifact { .. } | DiffError::Storage(_) => None,
        }
    }

    /// Whether the request is at fault (an unknown or pruned run) rather than the store.
    pub fn is_client_error(&self) -> bool {
        !matches!(self, DiffError::Storage(_))
    }
}

/// The two sides of a comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct RunPair {
    /// The newer run, when the newer side is a run.
    pub run: Option<RunRecord>,
    /// The older run, when the older side is a run.
    pub base_run: Option<RunRecord>,
    /// The older generation.
    pub base_generation: u64,
    /// The newer generation.
    pub generation: u64,
}

fn open_store(dir: &Path) -> Result<Store, DiffError> {
    if !dir.join("MANIFEST").is_file() {
        return Err(DiffError::NoArtifact {
            path: dir.to_path_buf(),
        });
    }
    Ok(Store::open_existing(dir)?)
}

/// Generations with a manifest on disk, ascending.
pub fn retained_generations(dir: &Path) -> Result<Vec<u64>, DiffError> {
    Ok(open_store(dir)?.generations()?)
}

/// The run whose id is `key` or, failing that, the only run whose id starts with `key`
/// (case-insensitive).
pub fn find_run<'a>(runs: &'a [RunRecord], key: &str) -> Result<&'a RunRecord, DiffError> {
    let key = key.trim();
    if let Some(r) = runs.iter().find(|r| r.uuid.eq_ignore_ascii_case(key)) {
        return Ok(r);
    }
    let lower = key.to_ascii_lowercase();
    let hits: Vec<&RunRecord> = if key.is_empty() {
        Vec::new()
    } else {
        runs.iter()
            .filter(|r| r.uuid.to_ascii_lowercase().starts_with(&lower))
            .collect()
    };
    match hits.as_slice() {
        [one] => Ok(one),
        [] => Err(DiffError::UnknownRun {
            key: key.to_string(),
            known: runs.iter().rev().take(5).map(|r| r.uuid.clone()).collect(),
        }),
        many => Err(DiffError::AmbiguousRun {
            key: key.to_string(),
            matches: many.iter().map(|r| r.uuid.clone()).collect(),
        }),
    }
}

/// The run whose generation was current before `run` committed: the latest earlier
/// completed run with a lower generation.
pub fn predecessor<'a>(runs: &'a [RunRecord], run: &RunRecord) -> Option<&'a RunRecord> {
    let at = runs.iter().position(|r| r.uuid == run.uuid)?;
    runs[..at]
        .iter()
        .rev()
        .find(|r| r.status == RunStatus::Completed && r.generation < run.generation)
}

fn pair_of(runs: &[RunRecord], run: &RunRecord, dir: &Path) -> Result<RunPair, DiffError> {
    match predecessor(runs, run) {
        Some(base) => Ok(RunPair {
            run: Some(run.clone()),
            base_run: Some(base.clone()),
            base_generation: base.generation,
            generation: run.generation,
        }),
        // A history that starts with this run at a generation past 1 had runs before it.
        None if runs.first().is_some_and(|f| f.uuid == run.uuid) && run.generation > 1 => {
            Err(DiffError::PredecessorPruned {
                run: run.uuid.clone(),
                retained: retained_generations(dir)?,
            })
        }
        None => Err(DiffError::NoPredecessor {
            run: run.uuid.clone(),
        }),
    }
}

/// The comparison of a run's delta: `run` (an id or unique prefix) or, by default, the
/// latest completed run that has a completed predecessor, against that predecessor.
pub fn resolve_delta(dir: &Path, run: Option<&str>) -> Result<RunPair, DiffError> {
    let store = open_store(dir)?;
    let runs = store.runs()?;
    if let Some(key) = run.filter(|k| !k.trim().is_empty()) {
        let r = find_run(&runs, key)?;
        return pair_of(&runs, r, dir);
    }
    let mut completed = runs
        .iter()
        .rev()
        .filter(|r| r.status == RunStatus::Completed);
    let latest = completed.next();
    if let Some(r) = latest {
        match pair_of(&runs, r, dir) {
            Ok(p) => return Ok(p),
            // Say so when the latest run lost its predecessor to `gc`.
            Err(e @ DiffError::PredecessorPruned { .. }) => return Err(e),
            Err(_) => {}
        }
    }
    completed
        .find_map(|r| pair_of(&runs, r, dir).ok())
        .ok_or(DiffError::NothingToCompare { runs: runs.len() })
}

/// The comparison "since `since`": `since` is a generation number (all digits) or a run
/// id (prefix); the newer side is `run` when given, else the current generation.
pub fn resolve_since(dir: &Path, since: &str, run: Option<&str>) -> Result<RunPair, DiffError> {
    let store = open_store(dir)?;
    let runs = store.runs()?;
    let current = store.current_manifest()?.map_or(0, |m| m.generation);
    let (run, generation) = match run.filter(|k| !k.trim().is_empty()) {
        Some(key) => {
            let r = find_run(&runs, key)?;
            (Some(r.clone()), r.generation)
        }
        None => (None, current),
    };
    let since = since.trim();
    let (base_run, base_generation) =
        if !since.is_empty() && since.bytes().all(|b| b.is_ascii_digit()) {
            let g = since
                .parse::<u64>()
                .map_err(|_| DiffError::NoSuchGeneration {
                    generation: u64::MAX,
                    current,
                    retained: Vec::new(),
                })?;
            (None, g)
        } else {
            let r = find_run(&runs, since)?;
            (Some(r.clone()), r.generation)
        };
    Ok(RunPair {
        run,
        base_run,
        base_generation,
        generation,
    })
}

/// Opens generation `generation` of the store at `dir`, telling a pruned generation from
/// one that never existed.
pub fn open_generation(dir: &Path, generation: u64) -> Result<Artifact, DiffError> {
    match Artifact::open_generation(dir, generation) {
        Ok(a) => Ok(a),
        Err(StorageError::NoSuchGeneration { .. }) => {
            let store = open_store(dir)?;
            let retained = store.generations()?;
            let current = store.current_manifest()?.map_or(0, |m| m.generation);
            if (1..=current).contains(&generation) {
                Err(DiffError::Pruned {
                    generation,
                    retained,
                })
            } else {
                Err(DiffError::NoSuchGeneration {
                    generation,
                    current,
                    retained,
                })
            }
        }
        Err(StorageError::NoArtifact { .. }) => Err(DiffError::EmptyGeneration { generation }),
        Err(e) => Err(e.into()),
    }
}

/// Opens the older and the newer side of `pair`.
pub fn open_pair(dir: &Path, pair: &RunPair) -> Result<(Artifact, Artifact), DiffError> {
    Ok((
        open_generation(dir, pair.base_generation)?,
        open_generation(dir, pair.generation)?,
    ))
}
