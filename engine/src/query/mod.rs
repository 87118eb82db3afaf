//! BQL query execution over a code-graph [`Artifact`], and the embedding API used by the
//! CLI, the REPL and the MCP server.
//!
//! [`Database::open`] maps the current generation of a `.batho` store; [`Database::query`]
//! compiles BQL with `batho-lang` (cached per query text), plans it physically
//! (`physical`) and runs pull-based operators (`exec`, `expand`) under [`Limits`]. A
//! bound that is hit is always reported: a result-row cap marks the result
//! [`QueryResult::truncated`]; work, memory, time and cancellation stop the query with
//! [`QueryError::LimitExceeded`]. [`render`] formats results as a table, JSON, JSON
//! Lines or CSV.
//!
//! ```no_run
//! use std::collections::BTreeMap;
//! use batho_engine::query::{Database, Value};
//! let db = Database::open(std::path::Path::new("."))?;
//! let mut params = BTreeMap::new();
//! params.insert("name".to_string(), Value::from("main"));
//! let res = db.query("MATCH (c)-[:CALLS]->(f {name: $name}) RETURN c.id", &params)?;
//! for row in &res.rows {
//!     println!("{}", row[0]);
//! }
//! # Ok::<(), batho_engine::query::QueryError>(())
//! ```

#![warn(missing_docs)]

mod algo_procs;
mod bfs_proc;
mod degree;
mod exec;
mod expand;
pub mod graph;
mod health;
mod id_order;
mod index_seek;
mod json_value;
mod merge;
mod open_graph;
mod physical;
mod proc_args;
mod procs;
pub mod render;
mod repo_map;
mod run;
mod text_procs;
mod topology;
mod update;
mod writable;
mod writable_access;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use batho_lang::ast::{AtClause, AtTarget, Mode};
use batho_lang::{CompileError, Compiled, Diagnostic, Schema};
use batho_storage::{Artifact, StorageError};

pub use batho_lang::Value;
pub use graph::ArtifactGraph;

pub use batho_storage::session::{
    CheckReport, CheckpointInfo, Durability, OpenReport, ReclaimReport, SyncTicket, TornTail,
};
use exec::ExecError;
pub use json_value::value_from_json;
pub use open_graph::OpenGraph;
use topology::Topology;
pub use writable::{IndexKind, WritableDatabase};
pub use writable_access::UpdateCounts;

/// The resource bounds of one query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most result rows returned; more mark the result truncated.
    pub max_rows: usize,
    /// Most units of work (nodes scanned, edges followed, rows materialised).
    pub max_work: u64,
    /// Most rows held at once by sorting, aggregation, DISTINCT and join build sides.
    pub max_intermediate_rows: usize,
    /// Most bytes of values those rows and the values aggregations collect may hold
    /// ([`Value::approx_bytes`]): a few rows of huge lists pass the row bound.
    pub max_held_bytes: u64,
    /// Wall-clock budget; `None` for none.
    pub timeout: Option<Duration>,
}

impl Default for Limits {
    /// Server defaults: 100k rows, 50M work units, 2M held rows, 512 MiB of held values,
    /// 10 s.
    fn default() -> Self {
        Limits {
            max_rows: 100_000,
            max_work: 50_000_000,
            max_intermediate_rows: 2_000_000,
            max_held_bytes: 512 << 20,
            timeout: Some(Duration::from_secs(10)),
        }
    }
}

/// Which bound stopped a query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// [`Limits::max_rows`] result rows were returned and more existed.
    Rows {
        /// The limit.
        limit: usize,
    },
    /// [`Limits::max_work`] was exhausted.
    Work {
        /// The limit.
        limit: u64,
    },
    /// [`Limits::max_intermediate_rows`] was exceeded.
    Memory {
        /// The limit.
        limit: usize,
    },
    /// [`Limits::max_held_bytes`] was exceeded.
    HeldBytes {
        /// The limit.
        limit: u64,
    },
    /// [`Limits::timeout`] passed.
    Timeout {
        /// The limit.
        limit: Duration,
    },
    /// The cancel flag was raised.
    Cancelled,
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::Rows { limit } => write!(f, "result truncated at {limit} rows"),
            Bound::Work { limit } => write!(
                f,
                "query exceeded its work budget of {limit} steps (add a label, a type, a LIMIT or a shorter hop range)"
            ),
            Bound::Memory { limit } => {
                write!(f, "query held more than {limit} intermediate rows")
            }
            Bound::HeldBytes { limit } => write!(
                f,
                "query held more than {} MiB of values (collect fewer or smaller values, or add a LIMIT)",
                limit >> 20
            ),
            Bound::Timeout { limit } => write!(f, "query timed out after {limit:?}"),
            Bound::Cancelled => f.write_str("query cancelled"),
        }
    }
}

/// How to run one query.
#[derive(Clone, Debug)]
pub struct QueryOptions {
    /// Resource bounds.
    pub limits: Limits,
    /// Raised by another thread to stop the query.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Profile even without the `PROFILE` keyword.
    pub profile: bool,
    /// Use indexes, pushdown, top-k and visited-set BFS (on by default; off runs the naive
    /// equivalent of every operator, for testing).
    pub optimize: bool,
}

impl Default for QueryOptions {
    fn default() -> Self {
        QueryOptions {
            limits: Limits::default(),
            cancel: None,
            profile: false,
            optimize: true,
        }
    }
}

/// Per-operator statistics of a PROFILE run, in plan (pre-order) order.
#[derive(Clone, Debug, PartialEq)]
pub struct OperatorProfile {
    /// Operator name and arguments, indented by depth (EXPLAIN text).
    pub operator: String,
    /// Physical choice.
    pub detail: String,
    /// Rows it produced.
    pub rows: u64,
    /// Time spent in it and below.
    pub time: Duration,
}

/// Counters of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryStats {
    /// Work units spent.
    pub work: u64,
    /// Wall time from query text to rows.
    pub elapsed: Duration,
}

/// Rows of a query.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryResult {
    /// Column names, in order.
    pub columns: Vec<String>,
    /// Rows, each with one value per column.
    pub rows: Vec<Vec<Value>>,
    /// Set when [`Limits::max_rows`] cut the result short.
    pub truncated: Option<Bound>,
    /// Counters.
    pub stats: QueryStats,
    /// PROFILE output.
    pub profile: Option<Vec<OperatorProfile>>,
    /// EXPLAIN (and PROFILE) plan text: logical operators with their physical choices.
    pub plan: Option<String>,
    /// What the statement changed (always empty on code graphs).
    pub updates: UpdateCounts,
}

impl QueryResult {
    /// A result without columns or rows (transaction control).
    pub(crate) fn empty(elapsed: Duration) -> QueryResult {
        QueryResult {
            columns: Vec::new(),
            rows: Vec::new(),
            truncated: None,
            stats: QueryStats { work: 0, elapsed },
            profile: None,
            plan: None,
            updates: UpdateCounts::default(),
        }
    }
}

/// Why a query (or opening a database) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The query does not parse, check or plan; one diagnostic per problem.
    #[error("{}", render_diags(.diagnostics))]
    Compile {
        /// Located problems with carets and suggestions.
        diagnostics: Vec<Diagnostic>,
    },
    /// Evaluation failed (type error, missing parameter, overflow...).
    #[error("{diagnostic}")]
    Eval {
        /// The located problem.
        diagnostic: Diagnostic,
    },
    /// A write clause on a read-only code graph.
    #[error(
        "code-graph artifacts are read-only: {clause} is not allowed (rebuild with `batho build` to change the graph)"
    )]
    ReadOnly {
        /// The offending clause.
        clause: String,
    },
    /// Something this engine does not provide (an unknown procedure...).
    #[error("{message}")]
    Unsupported {
        /// What.
        message: String,
    },
    /// A bound stopped the query.
    #[error("{bound}")]
    LimitExceeded {
        /// Which one.
        bound: Bound,
    },
    /// No artifact at the path.
    #[error("no Batho artifact at {}", .path.display())]
    NoArtifact {
        /// The path given.
        path: PathBuf,
    },
    /// The store could not be read.
    #[error("cannot read the artifact: {0}")]
    Storage(#[from] StorageError),
    /// A maintenance or life-cycle statement (`CALL db.export(...)`, `db.build`, ...)
    /// failed.
    #[error("{0}")]
    Maintenance(#[from] crate::maintenance::MaintenanceError),
    /// A new writable graph was asked for where a graph already is.
    #[error("{} already holds a graph; open it instead of creating one", .path.display())]
    GraphExists {
        /// The folder.
        path: PathBuf,
    },
    /// BEGIN, COMMIT or ROLLBACK out of order.
    #[error("{message}")]
    Transaction {
        /// What is wrong.
        message: String,
    },
    /// `AT GENERATION` / `AT RUN` names a generation or run that cannot be read.
    #[error("{message}{}", .hint.as_ref().map(|h| format!("; {h}")).unwrap_or_default())]
    TimeTravel {
        /// What is wrong (unknown run, pruned or unknown generation).
        message: String,
        /// The way out, e.g. the retained generations.
        hint: Option<String>,
    },
}

fn render_diags(d: &[Diagnostic]) -> String {
    d.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n\n")
}

impl QueryError {
    /// The way out of an error about the artifact, for a front end to word.
    pub fn remedy(&self) -> Option<batho_storage::Remedy> {
        match self {
            QueryError::NoArtifact { .. } => Some(batho_storage::Remedy::Build),
            QueryError::Storage(error) => error.remedy(),
            QueryError::Maintenance(error) => error.remedy(),
            _ => None,
        }
    }

    /// Whether the query itself is at fault (CLI exit code 1) rather than the artifact or
    /// the environment (exit code 2).
    pub fn is_query_error(&self) -> bool {
        match self {
            QueryError::Maintenance(error) => error.is_usage(),
            _ => !matches!(
                self,
                QueryError::NoArtifact { .. }
                    | QueryError::Storage(_)
                    | QueryError::GraphExists { .. }
            ),
        }
    }

    /// The diagnostics of a compile or evaluation error.
    pub fn diagnostics(&self) -> Vec<&Diagnostic> {
        match self {
            QueryError::Compile { diagnostics } => diagnostics.iter().collect(),
            QueryError::Eval { diagnostic } => vec![diagnostic],
            _ => Vec::new(),
        }
    }

    /// This error for a statement cut out of a script at byte `offset`: diagnostics point
    /// into `script` (see [`Diagnostic::relocated`]).
    pub fn relocated(self, script: &str, offset: usize) -> Self {
        match self {
            QueryError::Compile { diagnostics } => QueryError::Compile {
                diagnostics: diagnostics
                    .iter()
                    .map(|d| d.relocated(script, offset))
                    .collect(),
            },
            QueryError::Eval { diagnostic } => QueryError::Eval {
                diagnostic: diagnostic.relocated(script, offset),
            },
            other => other,
        }
    }

    fn from_compile(text: &str, e: CompileError) -> Self {
        let diagnostics = match e {
            CompileError::Parse(p) => vec![p.diagnostic],
            CompileError::Check(c) => c.0.into_iter().map(|e| e.diagnostic).collect(),
            CompileError::Plan(p) => vec![Diagnostic::new(text, p.span, p.message, None)],
            other => vec![Diagnostic::new(
                text,
                batho_lang::Span::default(),
                other.to_string(),
                None,
            )],
        };
        QueryError::Compile { diagnostics }
    }

    fn from_exec(text: &str, e: ExecError) -> Self {
        match e {
            ExecError::Eval(e) => QueryError::Eval {
                diagnostic: e.diagnostic(text),
            },
            ExecError::Bound(bound) => QueryError::LimitExceeded { bound },
            ExecError::Unsupported(message) => QueryError::Unsupported { message },
        }
    }
}

/// Most distinct query texts kept compiled.
const PLAN_CACHE_CAPACITY: usize = 512;

/// Compiled statements by query text, for both kinds of database; emptied when full
/// (cheaper than tracking use, and a workload rarely has 512 distinct texts).
#[derive(Debug, Default)]
pub(crate) struct PlanCache(Mutex<HashMap<String, Arc<Vec<Compiled>>>>);

impl PlanCache {
    /// `text` compiled against `schema`, from the cache when it was compiled before.
    pub(crate) fn compile(
        &self,
        text: &str,
        schema: &Schema,
    ) -> Result<Arc<Vec<Compiled>>, QueryError> {
        if let Ok(cache) = self.0.lock()
            && let Some(c) = cache.get(text)
        {
            return Ok(c.clone());
        }
        let compiled = Arc::new(
            batho_lang::compile(text, schema).map_err(|e| QueryError::from_compile(text, e))?,
        );
        if let Ok(mut cache) = self.0.lock() {
            if cache.len() >= PLAN_CACHE_CAPACITY {
                cache.clear();
            }
            cache.insert(text.to_string(), compiled.clone());
        }
        Ok(compiled)
    }
}
/// Most older generations kept open for `AT` statements.
const PAST_CAPACITY: usize = 4;

/// An open code-graph artifact plus a cache of compiled queries. `Send + Sync`: share it
/// between threads behind an `Arc` (use a lock around it only to call [`Database::refresh`]).
#[derive(Debug)]
pub struct Database {
    dir: PathBuf,
    artifact: Artifact,
    schema: Schema,
    cache: PlanCache,
    /// Older generations opened by `AT` statements, each mapped once (generations are
    /// immutable, so they stay valid across [`Database::refresh`]).
    past: Mutex<Vec<Arc<Artifact>>>,
}

/// Resolves a repository root (with `.batho/` inside) or a `.batho` directory itself.
pub(crate) fn store_dir(path: &Path) -> PathBuf {
    let inner = path.join(".batho");
    if inner.is_dir() {
        inner
    } else {
        path.to_path_buf()
    }
}

fn open_artifact(dir: &Path) -> Result<Artifact, QueryError> {
    Artifact::open(dir).map_err(|e| match e {
        StorageError::NoArtifact { .. } => QueryError::NoArtifact {
            path: dir.to_path_buf(),
        },
        e => QueryError::Storage(e),
    })
}

impl Database {
    /// Opens the current generation under `path` (a repository root or a `.batho` dir).
    pub fn open(path: &Path) -> Result<Database, QueryError> {
        let dir = store_dir(path);
        if !dir.is_dir() {
            return Err(QueryError::NoArtifact {
                path: path.to_path_buf(),
            });
        }
        let artifact = open_artifact(&dir)?;
        Ok(Database {
            dir,
            artifact,
            schema: Schema::code_graph(),
            cache: PlanCache::default(),
            past: Mutex::new(Vec::new()),
        })
    }

    /// The generation an `AT` clause names, opened (or taken from the cache); `None` for
    /// the current generation.
    fn at_artifact(&self, at: &AtClause) -> Result<Option<Arc<Artifact>>, QueryError> {
        let generation = match &at.target {
            AtTarget::Generation(g) => *g,
            AtTarget::Run(key) => {
                crate::diff::find_run(self.artifact.runs(), key)
                    .map_err(time_travel)?
                    .generation
            }
        };
        if generation == self.artifact.generation() {
            return Ok(None);
        }
        if let Ok(past) = self.past.lock()
            && let Some(a) = past.iter().find(|a| a.generation() == generation)
        {
            return Ok(Some(a.clone()));
        }
        let a = Arc::new(crate::diff::open_generation(&self.dir, generation).map_err(time_travel)?);
        if let Ok(mut past) = self.past.lock() {
            if past.len() >= PAST_CAPACITY {
                past.remove(0);
            }
            past.push(a.clone());
        }
        Ok(Some(a))
    }

    /// The mapped artifact.
    pub fn artifact(&self) -> &Artifact {
        &self.artifact
    }

    /// The generation being read.
    pub fn generation(&self) -> u64 {
        self.artifact.generation()
    }

    /// The schema queries are checked against.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The artifact as a BQL property graph (for rendering values).
    pub fn graph(&self) -> ArtifactGraph<'_> {
        ArtifactGraph(&self.artifact)
    }

    /// The `.batho` folder this database reads.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Switches to the newest committed generation; `true` when it changed.
    pub fn refresh(&mut self) -> Result<bool, QueryError> {
        let newer = open_artifact(&self.dir)?;
        if newer.generation() == self.artifact.generation() {
            return Ok(false);
        }
        self.artifact = newer;
        Ok(true)
    }

    fn compile(&self, text: &str) -> Result<Arc<Vec<Compiled>>, QueryError> {
        self.cache.compile(text, &self.schema)
    }

    /// Runs `text` with default options.
    pub fn query(
        &self,
        text: &str,
        params: &BTreeMap<String, Value>,
    ) -> Result<QueryResult, QueryError> {
        self.query_with(text, params, &QueryOptions::default())
    }

    /// Runs `text` with explicit limits, cancel flag and profiling. With several
    /// statements, each runs in turn and the last one's result is returned.
    pub fn query_with(
        &self,
        text: &str,
        params: &BTreeMap<String, Value>,
        opts: &QueryOptions,
    ) -> Result<QueryResult, QueryError> {
        let start = Instant::now();
        let compiled = self.compile(text)?;
        run_all(self, text, &compiled, params, opts, start)
    }

    /// Compiles `text` once for repeated execution.
    pub fn prepare(&self, text: &str) -> Result<Prepared<'_>, QueryError> {
        Ok(Prepared {
            db: self,
            text: text.to_string(),
            compiled: self.compile(text)?,
        })
    }
}

/// A compiled query bound to its database.
#[derive(Debug, Clone)]
pub struct Prepared<'d> {
    db: &'d Database,
    text: String,
    compiled: Arc<Vec<Compiled>>,
}

impl Prepared<'_> {
    /// The result columns of the (last) statement.
    pub fn columns(&self) -> Vec<String> {
        self.compiled
            .last()
            .map(|c| c.plan.columns.clone())
            .unwrap_or_default()
    }

    /// The parameter names the query uses.
    pub fn parameters(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .compiled
            .iter()
            .flat_map(|c| c.plan.parameters())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Runs it with default options.
    pub fn execute(&self, params: &BTreeMap<String, Value>) -> Result<QueryResult, QueryError> {
        self.execute_with(params, &QueryOptions::default())
    }

    /// Runs it with explicit options.
    pub fn execute_with(
        &self,
        params: &BTreeMap<String, Value>,
        opts: &QueryOptions,
    ) -> Result<QueryResult, QueryError> {
        run_all(
            self.db,
            &self.text,
            &self.compiled,
            params,
            opts,
            Instant::now(),
        )
    }
}

fn time_travel(e: crate::diff::DiffError) -> QueryError {
    match e {
        crate::diff::DiffError::Storage(e) => QueryError::Storage(e),
        e => QueryError::TimeTravel {
            hint: e.hint(),
            message: e.to_string(),
        },
    }
}

/// A value read from an older generation, made independent of it: node and relationship
/// indexes mean nothing in the current generation (which renders results), so they
/// become maps of their properties, plus `_labels` / `_type` and `_generation`.
fn detach(v: Value, g: &ArtifactGraph<'_>) -> Value {
    use batho_lang::PropertyAccess;
    let generation = Value::Int(i64::try_from(g.0.generation()).unwrap_or(i64::MAX));
    let node = |n: u32| {
        let mut m = g.node_properties(n);
        m.insert(
            "_labels".into(),
            Value::List(g.node_labels(n).into_iter().map(Value::String).collect()),
        );
        m.insert("_generation".into(), generation.clone());
        Value::Map(m)
    };
    let rel = |r: u32| {
        let mut m = g.rel_properties(r);
        let (s, e) = g.rel_endpoints(r);
        m.insert("_type".into(), Value::String(g.rel_type(r)));
        m.insert("_start".into(), g.node_prop(s, "id"));
        m.insert("_end".into(), g.node_prop(e, "id"));
        m.insert("_generation".into(), generation.clone());
        Value::Map(m)
    };
    match v {
        Value::Node(n) => node(n),
        Value::Rel(r) => rel(r),
        Value::Path { nodes, rels } => {
            let mut out = Vec::with_capacity(nodes.len() + rels.len());
            for (i, n) in nodes.iter().enumerate() {
                out.push(node(*n));
                if let Some(r) = rels.get(i) {
                    out.push(rel(*r));
                }
            }
            Value::List(out)
        }
        Value::List(l) => Value::List(l.into_iter().map(|x| detach(x, g)).collect()),
        Value::Map(m) => Value::Map(m.into_iter().map(|(k, x)| (k, detach(x, g))).collect()),
        other => other,
    }
}

fn run_all(
    db: &Database,
    text: &str,
    compiled: &[Compiled],
    params: &BTreeMap<String, Value>,
    opts: &QueryOptions,
    start: Instant,
) -> Result<QueryResult, QueryError> {
    let mut last = None;
    for c in compiled {
        let past = match &c.statement.at {
            Some(at) => db.at_artifact(at)?,
            None => None,
        };
        let res = match &past {
            None => run_one(&db.artifact, text, c, params, opts, start, None)?,
            Some(art) => {
                let at = match &c.statement.at {
                    Some(AtClause {
                        target: AtTarget::Run(r),
                        ..
                    }) => format!("AtGeneration({}, run '{r}')", art.generation()),
                    _ => format!("AtGeneration({})", art.generation()),
                };
                let mut res = run_one(art, text, c, params, opts, start, Some(&at))?;
                if c.plan.mode != Mode::Explain {
                    let g = ArtifactGraph(art);
                    for row in &mut res.rows {
                        for v in row.iter_mut() {
                            *v = detach(std::mem::replace(v, Value::Null), &g);
                        }
                    }
                }
                res
            }
        };
        last = Some(res);
    }
    last.ok_or_else(|| QueryError::Compile {
        diagnostics: vec![Diagnostic::new(
            text,
            batho_lang::Span::default(),
            "the query is empty",
            None,
        )],
    })
}

fn write_clause(p: &batho_lang::plan::LogicalPlan) -> Option<&'static str> {
    use batho_lang::plan::LogicalPlan as L;
    match p {
        L::Create { .. } => Some("CREATE"),
        L::Merge { .. } => Some("MERGE"),
        L::SetProperties { .. } => Some("SET"),
        L::Delete { .. } => Some("DELETE"),
        L::Remove { .. } => Some("REMOVE"),
        _ => p.children().into_iter().find_map(write_clause),
    }
}

fn run_one(
    art: &Artifact,
    text: &str,
    c: &Compiled,
    params: &BTreeMap<String, Value>,
    opts: &QueryOptions,
    start: Instant,
    at: Option<&str>,
) -> Result<QueryResult, QueryError> {
    if c.plan.writes {
        return Err(QueryError::ReadOnly {
            clause: write_clause(&c.plan.root).unwrap_or("a write").to_string(),
        });
    }
    let graph = ArtifactGraph(art);
    let statement = run::Statement {
        text,
        plan: &c.plan,
        params,
        opts,
        start,
        at,
        moved: Default::default(),
    };
    run::execute(Topology::Code(art), &graph, &statement)
}
