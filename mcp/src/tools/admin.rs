//! The registry tools (list_repos, add_repo, remove_repo), batho_status and the gated
//! batho_build.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use batho_engine::build::{BuildError, BuildOptions};
use batho_engine::maintenance::{self, MaintenanceCall, MaintenanceError, MaintenanceReport};
use batho_engine::watch::WatchReport;
use serde::Serialize;
use serde_json::{Map, Value as Json};

use super::args::{AddRepoArgs, BuildArgs, ListReposArgs, RemoveRepoArgs, StatusArgs};
use super::cells::first_int;
use super::{Reply, Rows, ToolOutput, positive};
use crate::error::ToolError;
use crate::registry::RepoEntry;
use crate::state::{State, missing_artifact};

const ENTITY_COUNT: &str = "CALL db.labels() YIELD label, count WHERE label <> 'File' AND label <> 'External' RETURN sum(count) AS entities";

/// `(has_artifact, entities, generation)`.
fn probe(st: &State, repo: &RepoEntry) -> (bool, i64, u64) {
    match st.database(repo) {
        Ok(db) => {
            let entities = db
                .query(ENTITY_COUNT, &Default::default())
                .ok()
                .and_then(|result| first_int(&result, "entities").ok())
                .unwrap_or(0);
            (true, entities, db.generation())
        }
        Err(_) => (false, 0, 0),
    }
}

fn meta_only(query: &str) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("query".into(), query.into());
    m
}

/// One registered repo as list_repos shows it.
#[derive(Serialize)]
struct RepoListing {
    name: String,
    path: PathBuf,
    has_artifact: bool,
    entity_count: i64,
    artifact_generation: u64,
    default: bool,
    session: bool,
    watch: bool,
}

/// list_repos' answer.
#[derive(Serialize)]
struct ReposOutput {
    total: usize,
    repos: Vec<RepoListing>,
}

impl ToolOutput for ReposOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut md = String::from("## Registered Repos\n\n");
        if self.repos.is_empty() {
            md.push_str("(none — use add_repo)\n");
        }
        for repo in &self.repos {
            let status = if repo.has_artifact {
                format!("✓ ready, {} entities", repo.entity_count)
            } else {
                "✗ no artifact — run 'batho build'".to_string()
            };
            let default = if repo.default { ", default" } else { "" };
            let _ = writeln!(
                md,
                "- **{}** — {} ({status}{default})",
                repo.name,
                repo.path.display()
            );
        }
        md
    }
}

pub(crate) fn list_repos(st: &State, a: ListReposArgs) -> Result<Reply, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let session = st
        .session
        .lock()
        .ok()
        .and_then(|s| s.as_ref().map(|r| r.name.clone()));
    let repos: Vec<RepoListing> = st
        .repos()
        .into_iter()
        .enumerate()
        .map(|(k, repo)| {
            let (has_artifact, entity_count, artifact_generation) = probe(st, &repo);
            RepoListing {
                session: session.as_deref() == Some(repo.name.as_str()),
                name: repo.name,
                path: repo.path,
                has_artifact,
                entity_count,
                artifact_generation,
                default: k == 0,
                watch: repo.watch,
            }
        })
        .collect();
    let output = ReposOutput {
        total: repos.len(),
        repos,
    };
    Reply::new(&output, meta_only(ENTITY_COUNT), a.budget.max_tokens)
}

/// add_repo's answer.
#[derive(Serialize)]
struct AddedRepo {
    name: String,
    path: PathBuf,
    entity_count: i64,
    has_artifact: bool,
    watching: bool,
    /// Whether a watcher was started (`None`: the repo is not watched), and why not.
    #[serde(skip)]
    watch_outcome: Option<Result<(), String>>,
    #[serde(skip)]
    debounce_ms: u64,
}

impl ToolOutput for AddedRepo {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut md = format!(
            "## Repo Registered\n\n- **{}** — {}\n- Entities: {}\n- Artifact: ✓ ready\n",
            self.name,
            self.path.display(),
            self.entity_count
        );
        match &self.watch_outcome {
            Some(Ok(())) => {
                let _ = writeln!(
                    md,
                    "- Watching: re-indexed {} ms after changes settle",
                    self.debounce_ms
                );
            }
            Some(Err(e)) => {
                let _ = writeln!(md, "- Watching: not started ({e})");
            }
            None => {}
        }
        md
    }
}

/// The longest repo name accepted, in bytes.
const MAX_REPO_NAME: usize = 64;

/// A repo name is a short word: letters, digits, `-`, `_` and `.`, not starting with `.`
/// (so never `..` or a path), at most [`MAX_REPO_NAME`] bytes. Names key the registry and
/// a tool's default export path; a 1 MB or `../`-laden name was accepted and saved.
fn check_repo_name(name: &str) -> Result<(), ToolError> {
    let hint =
        "use letters, digits, '-', '_' and '.' (not first), at most 64 characters, e.g. 'my-lib'";
    if name.is_empty() {
        return Err(ToolError::client("name must not be empty").hint(hint));
    }
    if name.len() > MAX_REPO_NAME {
        return Err(ToolError::client(format!(
            "name is {} bytes long; the limit is {MAX_REPO_NAME}",
            name.len()
        ))
        .hint(hint));
    }
    if name.starts_with('.')
        || !name
            .chars()
            .all(batho_engine::maintenance::transfer::is_name_char)
    {
        return Err(
            ToolError::client(format!("name '{name}' is not a valid repo name")).hint(hint),
        );
    }
    Ok(())
}

/// Refuses a name the session's `--root` repo already has for another path: the registry
/// entry would never be served (the session wins) and removing it would remove both.
fn refuse_shadowing_the_session(st: &State, name: &str, path: &Path) -> Result<(), ToolError> {
    let session = st
        .session
        .lock()
        .map_err(|_| ToolError::server("session lock poisoned"))?;
    match session.as_ref() {
        Some(root) if root.name == name && root.path != path => Err(ToolError::client(format!(
            "name '{name}' is this session's --root repo ({}); choose another name",
            root.path.display()
        ))),
        _ => Ok(()),
    }
}

pub(crate) fn add_repo(st: &State, a: AddRepoArgs) -> Result<Reply, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let name = a.name.trim();
    check_repo_name(name)?;
    let path = PathBuf::from(&a.path);
    if !path.is_absolute() {
        return Err(
            ToolError::client(format!("path must be absolute, got '{}'", a.path))
                .hint("pass the repository root as an absolute path"),
        );
    }
    if !path.is_dir() {
        return Err(ToolError::client(format!("Not a directory: {}", a.path)));
    }
    let path = path.canonicalize().unwrap_or(path);
    refuse_shadowing_the_session(st, name, &path)?;
    let entry = RepoEntry {
        name: name.to_string(),
        path: path.clone(),
        watch: a.watch,
        debounce_ms: a.debounce_ms,
        max_file_size_kb: a.max_file_size_kb,
    };
    let (has, entity_count, _) = probe(st, &entry);
    if !has {
        return Err(missing_artifact(&path));
    }
    st.registry
        .lock()
        .map_err(|_| ToolError::server("registry lock poisoned"))?
        .upsert(entry.clone())
        .map_err(|e| ToolError::server(e.to_string()))?;
    // Re-registering without watch stops a watcher started earlier.
    if !entry.watch {
        st.watchers.stop(&path);
    }
    let watch_outcome = st.watch(&entry);
    let output = AddedRepo {
        name: name.to_string(),
        path,
        entity_count,
        has_artifact: true,
        watching: matches!(watch_outcome, Some(Ok(()))),
        watch_outcome,
        debounce_ms: entry.debounce_ms,
    };
    Reply::new(&output, meta_only(ENTITY_COUNT), a.budget.max_tokens)
}

/// remove_repo's answer.
#[derive(Serialize)]
struct RemovedRepo {
    name: String,
    removed: bool,
}

impl ToolOutput for RemovedRepo {
    fn markdown(&self, _: &mut Rows) -> String {
        format!(
            "## Repo Removed\n\n- **{}** — removed from registry\n",
            self.name
        )
    }
}

pub(crate) fn remove_repo(st: &State, a: RemoveRepoArgs) -> Result<Reply, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    if let Some(repo) = st.repos().into_iter().find(|r| r.name == a.name) {
        st.watchers.stop(&repo.path);
    }
    let mut removed = st
        .registry
        .lock()
        .map_err(|_| ToolError::server("registry lock poisoned"))?
        .remove(&a.name)
        .map_err(|e| ToolError::server(e.to_string()))?;
    if let Ok(mut s) = st.session.lock()
        && s.as_ref().is_some_and(|r| r.name == a.name)
    {
        *s = None;
        removed = true;
    }
    if !removed {
        let names: Vec<String> = st.repos().iter().map(|r| format!("'{}'", r.name)).collect();
        return Err(ToolError::client(format!(
            "Repo '{}' not found in registry. Available repos: [{}]",
            a.name,
            names.join(", ")
        )));
    }
    let output = RemovedRepo {
        name: a.name,
        removed: true,
    };
    Reply::new(&output, Map::new(), a.budget.max_tokens)
}

/// A repo's watcher as batho_status shows it.
#[derive(Serialize)]
struct WatcherStatus {
    state: &'static str,
    pending_changes: usize,
    /// What a running watcher adds (nothing for an inactive one).
    #[serde(flatten)]
    running: Option<RunningWatcher>,
}

/// The details of a running watcher.
#[derive(Serialize)]
struct RunningWatcher {
    pending_files: Vec<String>,
    reindexed: u64,
    last_error: Option<String>,
}

impl WatcherStatus {
    /// At most this many pending files are named.
    const NAMED_PENDING: usize = 20;

    fn of(report: Option<WatchReport>) -> WatcherStatus {
        match report {
            None => WatcherStatus {
                state: "inactive",
                pending_changes: 0,
                running: None,
            },
            Some(report) => WatcherStatus {
                state: report.state,
                pending_changes: report.pending.len(),
                running: Some(RunningWatcher {
                    pending_files: report
                        .pending
                        .into_iter()
                        .take(Self::NAMED_PENDING)
                        .collect(),
                    reindexed: report.reindexed,
                    last_error: report.last_error,
                }),
            },
        }
    }

    fn markdown(&self, md: &mut String) {
        let Some(running) = &self.running else {
            let _ = writeln!(md, "- watcher: inactive");
            return;
        };
        let _ = writeln!(
            md,
            "- watcher: {} ({} pending changes, {} re-index runs)",
            self.state, self.pending_changes, running.reindexed
        );
        if let Some(e) = &running.last_error {
            let _ = writeln!(md, "- watcher error: {e}");
        }
    }
}

/// One repo's artifact as batho_status shows it.
#[derive(Serialize)]
struct ArtifactStatus {
    name: String,
    path: PathBuf,
    status: &'static str,
    artifact_generation: u64,
    entity_count: u64,
    relationship_count: u64,
    file_count: u64,
    last_run_id: Option<String>,
    changed_files: u64,
    watcher: WatcherStatus,
    /// Some of the changed files, named in the markdown.
    #[serde(skip)]
    changed_examples: Vec<String>,
}

/// One repo in batho_status: its artifact, or why it cannot be read.
#[derive(Serialize)]
#[serde(untagged)]
enum RepoStatus {
    Read(ArtifactStatus),
    Unreadable {
        name: String,
        path: PathBuf,
        status: &'static str,
        message: String,
    },
}

impl RepoStatus {
    fn markdown(&self, md: &mut String) {
        match self {
            RepoStatus::Read(repo) => {
                let _ = write!(md, "\n**{}** — {}\n", repo.name, repo.path.display());
                let _ = writeln!(
                    md,
                    "- artifact: {} (generation {}), {} entities, {} relationships, {} files",
                    repo.status,
                    repo.artifact_generation,
                    repo.entity_count,
                    repo.relationship_count,
                    repo.file_count
                );
                if let Some(run) = &repo.last_run_id {
                    let _ = writeln!(md, "- last run: {run}");
                }
                if repo.changed_files > 0 {
                    let _ = writeln!(
                        md,
                        "- {} source files changed since the build (e.g. {})",
                        repo.changed_files,
                        repo.changed_examples.join(", ")
                    );
                }
                repo.watcher.markdown(md);
            }
            RepoStatus::Unreadable {
                name,
                path,
                message,
                ..
            } => {
                let _ = write!(md, "\n**{name}** — {}\n", path.display());
                let _ = writeln!(md, "- artifact: unreadable ({message})");
            }
        }
    }
}

/// batho_status' answer.
#[derive(Serialize)]
struct StatusOutput {
    repos: Vec<RepoStatus>,
}

impl ToolOutput for StatusOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut md = String::from("## Batho Status\n");
        for repo in &self.repos {
            repo.markdown(&mut md);
        }
        md
    }
}

/// The statement each repo's status is read with.
const STATUS: MaintenanceCall = MaintenanceCall::Status { verify: false };

fn repo_status(st: &State, repo: RepoEntry) -> RepoStatus {
    let report = match maintenance::run(&repo.path, &STATUS) {
        Ok(MaintenanceReport::Status(report)) => Ok(*report),
        Ok(_) => Err("db.status answered with another report".to_string()),
        Err(e) => Err(e.to_string()),
    };
    match report {
        Ok(report) => RepoStatus::Read(ArtifactStatus {
            status: report.state.name(),
            artifact_generation: report.generation,
            entity_count: report.entities,
            relationship_count: report.relationships,
            file_count: report.files,
            last_run_id: report.last_run.map(|run| run.uuid),
            changed_files: report.changed_count,
            changed_examples: report.changed_files,
            watcher: WatcherStatus::of(st.watchers.report(&repo.path)),
            name: repo.name,
            path: repo.path,
        }),
        Err(e) => RepoStatus::Unreadable {
            name: repo.name,
            path: repo.path,
            status: "error",
            message: e,
        },
    }
}

pub(crate) fn batho_status(st: &State, a: StatusArgs) -> Result<Reply, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let repos = match a.repo.as_deref() {
        Some(n) => vec![st.resolve(Some(n))?],
        None => {
            let r = st.repos();
            if r.is_empty() {
                st.resolve(None)?;
            }
            r
        }
    };
    let output = StatusOutput {
        repos: repos
            .into_iter()
            .map(|repo| repo_status(st, repo))
            .collect(),
    };
    Reply::new(&output, meta_only(&STATUS.statement()), a.budget.max_tokens)
}

pub(crate) fn batho_build(st: &State, a: BuildArgs) -> Result<Reply, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let repo = st.resolve(a.repo.name())?;
    if let Some(b) = a.graph_backend.as_deref()
        && !matches!(b, "auto" | "in-memory" | "arrow")
    {
        return Err(ToolError::client(format!(
            "Invalid graph_backend '{b}'. Valid: auto, in-memory, arrow"
        )));
    }
    let call = MaintenanceCall::Build(BuildOptions {
        full: a.full,
        max_workers: a.max_workers.map(|w| w.max(1) as usize),
        max_file_size_kb: a.max_file_size_kb.or(repo.max_file_size_kb),
        compile_commands: None,
    });
    let rep = match maintenance::run(&repo.path, &call) {
        Ok(MaintenanceReport::Build(report)) => report,
        Ok(_) => return Err(ToolError::server("db.build answered with another report")),
        Err(MaintenanceError::Build(e)) => return Err(build_error(&repo.name, &e)),
        Err(e) => return Err(ToolError::server(e.to_string()).remedy(e.remedy())),
    };
    let output = BuildOutput {
        build: BuildSummary {
            repo: repo.name,
            entity_count: rep.entities,
            relationship_count: rep.relationships,
            file_count: rep.files,
            duration_ms: rep.run.duration_ms,
            run_id: rep.run.uuid,
            artifact_generation: rep.run.generation,
            skipped_files: rep.skipped.len(),
        },
    };
    Reply::new(&output, meta_only(&call.statement()), a.budget.max_tokens)
}

/// A failed build as a tool error.
fn build_error(repo: &str, e: &BuildError) -> ToolError {
    ToolError::of_engine(
        format!("build of '{repo}' failed: {e}"),
        e.is_usage(),
        e.hint(),
        e.remedy(),
    )
}

#[derive(Serialize)]
struct BuildSummary {
    repo: String,
    entity_count: u64,
    relationship_count: u64,
    file_count: u64,
    duration_ms: u64,
    run_id: String,
    artifact_generation: u64,
    skipped_files: usize,
}

/// batho_build's answer.
#[derive(Serialize)]
struct BuildOutput {
    build: BuildSummary,
}

impl ToolOutput for BuildOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let build = &self.build;
        let secs = build.duration_ms as f64 / 1000.0;
        format!(
            "## Build Complete: {}\n\n- Entities: {}\n- Relationships: {}\n- Files: {}\n- Duration: {secs:.2}s\n- Run: {} (generation {})\n",
            build.repo,
            build.entity_count,
            build.relationship_count,
            build.file_count,
            build.run_id,
            build.artifact_generation
        )
    }
}
