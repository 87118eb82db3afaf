//! Shared server state: the registry, the session repo from `--root`, and one open
//! [`Database`] per repository, reopened when its manifest changes (one `stat` per call).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use batho_engine::query::{Bound, Database, QueryError, QueryResult, Value};

use crate::ctx_state::CtxState;
use crate::error::ToolError;
use crate::registry::{Registry, RepoEntry};
use crate::tools::cells::{FromRecord, Record, decode_rows};
use batho_engine::watch::{WatchOptions, Watchers};

/// What identifies one committed manifest on disk.
type Stamp = (Option<SystemTime>, u64);

fn manifest_stamp(path: &Path) -> Stamp {
    match std::fs::metadata(path) {
        Ok(m) => (m.modified().ok(), m.len()),
        Err(_) => (None, 0),
    }
}

/// The repos being served plus open databases.
pub(crate) struct State {
    pub registry: Mutex<Registry>,
    /// The `--root` repo: served first (the default) for this session, not persisted.
    pub session: Mutex<Option<RepoEntry>>,
    dbs: Mutex<HashMap<PathBuf, (Arc<Database>, Stamp)>>,
    /// File watchers of the watched repos.
    pub watchers: Watchers,
    /// `--no-watch`: never watch, whatever the registry says.
    pub no_watch: bool,
    /// The ctx-tree tools' session graph.
    pub ctx: CtxState,
}

/// One tool call's view of a repository: its entry, database, and the queries it ran.
pub(crate) struct Ctx {
    pub repo: RepoEntry,
    pub db: Arc<Database>,
    /// Changed source files the watcher has not re-indexed yet, and files found changed
    /// on disk by [`Ctx::check_fresh`].
    pub stale: Vec<String>,
    /// Whether a watcher re-indexes this repo by itself (the notice's advice differs).
    pub watched: bool,
    queries: Vec<String>,
    pub params: serde_json::Map<String, serde_json::Value>,
}

impl State {
    pub fn new(
        registry: Registry,
        session: Option<RepoEntry>,
        no_watch: bool,
        ctx: CtxState,
    ) -> State {
        State {
            registry: Mutex::new(registry),
            session: Mutex::new(session),
            dbs: Mutex::new(HashMap::new()),
            watchers: Watchers::default(),
            no_watch,
            ctx,
        }
    }

    /// Starts the watcher of `repo` if it asks for one and watching is allowed; the
    /// outcome as a short phrase for answers (`None` when not watched).
    pub fn watch(&self, repo: &RepoEntry) -> Option<Result<(), String>> {
        if !repo.watch {
            return None;
        }
        if self.no_watch {
            return Some(Err("the server runs with --no-watch".into()));
        }
        Some(self.watchers.start(
            &repo.path,
            &WatchOptions {
                debounce: std::time::Duration::from_millis(repo.debounce_ms),
                max_file_size_kb: repo.max_file_size_kb,
            },
            None,
        ))
    }

    /// Every served repo, the session repo first.
    pub fn repos(&self) -> Vec<RepoEntry> {
        let mut out: Vec<RepoEntry> = self
            .session
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        if let Ok(reg) = self.registry.lock() {
            for r in reg.repos() {
                if !out.iter().any(|o| o.name == r.name) {
                    out.push(r.clone());
                }
            }
        }
        out
    }

    /// The repo named `name`, or the default one.
    pub fn resolve(&self, name: Option<&str>) -> Result<RepoEntry, ToolError> {
        let repos = self.repos();
        if repos.is_empty() {
            return Err(ToolError::client("No repos registered. Use add_repo to register a repo.")
                .hint("add_repo(name=\"myapp\", path=\"/abs/path/to/repo\") after running 'batho build' there"));
        }
        match name.filter(|n| !n.is_empty()) {
            None => Ok(repos[0].clone()),
            Some(n) => repos.iter().find(|r| r.name == n).cloned().ok_or_else(|| {
                let names: Vec<String> = repos.iter().map(|r| format!("'{}'", r.name)).collect();
                ToolError::client(format!(
                    "Repo '{n}' not found in registry. Available repos: [{}]",
                    names.join(", ")
                ))
                .hint("call list_repos, or omit repo to use the default")
            }),
        }
    }

    /// The repo's database at its newest generation.
    pub fn database(&self, repo: &RepoEntry) -> Result<Arc<Database>, ToolError> {
        let dir = repo.path.join(".batho");
        let manifest = dir.join("MANIFEST");
        let stamp = manifest_stamp(&manifest);
        if let Ok(dbs) = self.dbs.lock()
            && let Some((db, s)) = dbs.get(&repo.path)
            && *s == stamp
            && stamp.0.is_some()
        {
            return Ok(db.clone());
        }
        let db = Database::open(&repo.path).map_err(|e| match e {
            QueryError::NoArtifact { .. } => missing_artifact(&repo.path),
            e => ToolError::server(format!("cannot open the artifact of '{}': {e}", repo.name))
                .remedy(e.remedy()),
        })?;
        let db = Arc::new(db);
        // The stamp is taken from the manifest the database actually read, so a commit
        // racing with this open is seen by the next call.
        let stamp = manifest_stamp(db.artifact().manifest_path());
        if let Ok(mut dbs) = self.dbs.lock() {
            dbs.insert(repo.path.clone(), (db.clone(), stamp));
        }
        Ok(db)
    }

    /// A context for one call on `repo` (or the default).
    pub fn ctx(&self, repo: Option<&str>) -> Result<Ctx, ToolError> {
        let repo = self.resolve(repo)?;
        let db = self.database(&repo)?;
        let report = self.watchers.report(&repo.path);
        let watched = report.is_some();
        let stale = report.map(|w| w.pending).unwrap_or_default();
        Ok(Ctx {
            repo,
            db,
            stale,
            watched,
            queries: Vec::new(),
            params: serde_json::Map::new(),
        })
    }
}

/// The staleness notice of an answer served while changed files wait to be re-indexed;
/// `watched` says whether a watcher will re-index them by itself.
pub(crate) fn stale_notice(files: &[String], watched: bool) -> String {
    const NAMED: usize = 5;
    let mut named = files
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if files.len() > NAMED {
        named.push_str(&format!(", and {} more", files.len() - NAMED));
    }
    let advice = if watched {
        "re-indexing runs once changes settle"
    } else {
        "the answer may not match them: re-index with batho_patch (or 'batho patch')"
    };
    format!(
        "Stale: {} changed file(s) not re-indexed yet ({named}); {advice}.",
        files.len()
    )
}

/// The spec's missing-artifact error.
pub(crate) fn missing_artifact(path: &Path) -> ToolError {
    ToolError::client(format!(
        "No Batho artifact found at {}. Run 'batho build' first.",
        path.display()
    ))
    .hint(format!("batho build {}", path.display()))
}

/// A failed query as a tool error. Only a failure to read the artifact (a build may be
/// replacing it) or a cancelled query may succeed when called again unchanged; a bound
/// (work, memory, time) stops the same query again, and an error of the query itself
/// comes from the request's values.
fn query_error(text: &str, error: QueryError) -> ToolError {
    let message = format!("query failed: {error}");
    let shown = format!("the query was: {text}");
    match error {
        QueryError::Storage(_)
        | QueryError::NoArtifact { .. }
        | QueryError::LimitExceeded {
            bound: Bound::Cancelled,
        } => ToolError::server(message).hint(shown),
        QueryError::LimitExceeded { .. } => ToolError {
            retryable: false,
            ..ToolError::server(message).hint(format!(
                "the same call stops at the same bound: narrow it (a smaller depth or limit, a name_pattern, file_path or relation filter); {shown}"
            ))
        },
        _ => ToolError::client(message).hint(shown),
    }
}

impl Ctx {
    /// Records `statement`, run outside this context (a life-cycle operation such as
    /// `CALL db.patch()`), for `meta.query`, before the queries run after it.
    pub fn record_statement(&mut self, statement: String) {
        self.queries.push(statement);
    }

    /// Runs `text` with `params`, recording both for `meta.query` / `meta.params`.
    pub fn run(&mut self, text: &str, params: &[(&str, Value)]) -> Result<QueryResult, ToolError> {
        let mut map = BTreeMap::new();
        for (k, v) in params {
            map.insert((*k).to_string(), v.clone());
            let g = self.db.graph();
            self.params.insert(
                (*k).to_string(),
                batho_engine::query::render::to_json(v, &g),
            );
        }
        self.queries.push(text.to_string());
        self.db.query(text, &map).map_err(|e| query_error(text, e))
    }

    /// Adds to [`Ctx::stale`] every file among `files` whose bytes on disk no longer hash
    /// to the content hash the artifact holds (a deleted or unreadable file counts as
    /// changed). Only files modified after the newest run started are hashed, so a page
    /// of results costs a `stat` per file. Returns the files found changed.
    pub fn check_fresh<'a>(
        &mut self,
        files: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<String>, ToolError> {
        let since_ms = self
            .db
            .artifact()
            .manifest()
            .runs
            .iter()
            .map(|r| r.started_at_ms)
            .max()
            .unwrap_or(0);
        let mut suspects: Vec<String> = files
            .into_iter()
            .filter(|f| !f.is_empty() && !self.stale.iter().any(|s| s == f))
            .filter(|f| modified_after(&self.repo.path.join(f), since_ms))
            .map(str::to_string)
            .collect();
        suspects.sort();
        suspects.dedup();
        if suspects.is_empty() {
            return Ok(Vec::new());
        }
        let hashes = self.run(
            "MATCH (f:File) WHERE f.file IN $files RETURN f.file AS file, f.content_hash AS content_hash",
            &[("files", Value::List(suspects.iter().map(|f| Value::from(f.as_str())).collect()))],
        )?;
        let mut changed = Vec::new();
        for indexed in decode_rows::<IndexedFile>(&hashes)? {
            let now = batho_engine::repo_files::read_repo_file(&self.repo.path, &indexed.file)
                .map(|bytes| batho_engine::repo_files::content_hash_hex(&bytes));
            if now.as_deref().ok() != Some(indexed.content_hash.as_str()) {
                changed.push(indexed.file);
            }
        }
        self.stale.extend(changed.iter().cloned());
        Ok(changed)
    }

    /// `meta` common to every answer.
    pub fn meta(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("repo".into(), self.repo.name.clone().into());
        m.insert("artifact_generation".into(), self.db.generation().into());
        let q = match self.queries.as_slice() {
            [one] => serde_json::Value::from(one.clone()),
            many => serde_json::Value::from(many.to_vec()),
        };
        m.insert("query".into(), q);
        m.insert(
            "params".into(),
            serde_json::Value::Object(self.params.clone()),
        );
        if !self.stale.is_empty() {
            const SHOWN: usize = 20;
            let shown: Vec<&String> = self.stale.iter().take(SHOWN).collect();
            m.insert(
                "stale".into(),
                serde_json::json!({
                    "pending_count": self.stale.len(),
                    "pending_files": shown,
                    "notice": stale_notice(&self.stale, self.watched),
                }),
            );
        }
        m
    }
}

/// A file as the artifact indexed it: `f.file AS file, f.content_hash AS content_hash`.
struct IndexedFile {
    file: String,
    content_hash: String,
}

impl FromRecord for IndexedFile {
    fn from_record(record: &Record) -> Result<IndexedFile, ToolError> {
        Ok(IndexedFile {
            file: record.text("file")?,
            content_hash: record.text("content_hash")?,
        })
    }
}

/// Whether `path`'s mtime is later than `since_ms` minus a margin for coarse file system
/// clocks (or cannot be read: a deleted file has changed too).
fn modified_after(path: &Path, since_ms: i64) -> bool {
    const MARGIN_MS: i64 = 2_000;
    let Ok(modified) = std::fs::metadata(path).and_then(|m| m.modified()) else {
        return true;
    };
    let modified_ms = modified
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    modified_ms >= since_ms - MARGIN_MS
}

#[cfg(test)]
mod query_error_tests {
    use std::time::Duration;

    use batho_engine::query::{Bound, QueryError};

    use super::query_error;

    /// A bound is not worth retrying unchanged; a cancelled query or an unreadable
    /// artifact is; an error of the query itself is the request's (issue 28, item 12).
    #[test]
    fn only_what_can_pass_later_is_retryable() {
        let timeout = query_error(
            "MATCH (n) RETURN n",
            QueryError::LimitExceeded {
                bound: Bound::Timeout {
                    limit: Duration::from_secs(10),
                },
            },
        );
        assert_eq!(
            (timeout.error_type, timeout.retryable),
            ("SERVER_ERROR", false)
        );
        assert!(
            timeout
                .hint
                .as_deref()
                .unwrap_or_default()
                .contains("narrow it")
        );
        let work = query_error(
            "q",
            QueryError::LimitExceeded {
                bound: Bound::Work { limit: 1 },
            },
        );
        assert!(!work.retryable);
        let cancelled = query_error(
            "q",
            QueryError::LimitExceeded {
                bound: Bound::Cancelled,
            },
        );
        assert!(cancelled.retryable);
        let unsupported = query_error(
            "q",
            QueryError::Unsupported {
                message: "algo.x(): argument `limit` must be a non-negative integer".into(),
            },
        );
        assert_eq!(
            (unsupported.error_type, unsupported.retryable),
            ("CLIENT_ERROR", false)
        );
    }
}
