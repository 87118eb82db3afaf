//! [`WritableDatabase`]: the embedding API of writable graphs. Statements are checked
//! against an open schema, planned like code-graph queries and executed by the same
//! operators; update clauses change the in-memory graph through a journal, and a
//! statement that fails is undone whole. Outside an explicit transaction each query text
//! commits as one log record; `BEGIN` … `COMMIT` groups several into one.
//!
//! Group commit ([`Durability::Group`]): a commit appends its record and leaves a
//! [`SyncTicket`] instead of fsyncing. A caller that shares the database between threads
//! behind a lock takes the ticket ([`WritableDatabase::take_sync_ticket`]) before it lets
//! go of the lock and waits on it after: commits that arrive while one fsync runs share
//! the next. A commit is acknowledged durable only once its ticket was waited on. A wait
//! that fails leaves the commit in memory but not proven on disk, and the database takes
//! no more commits (reopen it to see what the log holds).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use batho_lang::{Compiled, PropertyAccess, Schema, Value};
use batho_storage::StorageError;
use batho_storage::session::{
    Change, CheckReport, CheckpointInfo, Durability, OpenReport, ReclaimReport, SyncTicket,
    WritableGraph, WritableStore, check_writable_graph, is_writable_graph, read_writable_graph,
    reclaim_writable_graph,
};

use super::run;
use super::topology::Topology;
use super::writable_access::{UpdateCounts, WritableAccess, WritableState};
use super::{PlanCache, QueryError, QueryOptions, QueryResult, write_clause};

/// A commit that leaves the log longer than this folds it into a checkpoint, so that
/// opening never replays more than about this much.
const CHECKPOINT_LOG_BYTES: u64 = 64 << 20;

/// A writable graph opened for queries and updates. See the module documentation.
pub struct WritableDatabase {
    dir: PathBuf,
    /// `None` when opened read-only.
    store: Option<WritableStore>,
    state: RefCell<WritableState>,
    schema: Schema,
    cache: PlanCache,
    in_transaction: bool,
    report: OpenReport,
    /// Under [`Durability::Group`], the ticket of the latest commit nobody took yet (it
    /// covers every earlier one).
    pending_sync: Option<SyncTicket>,
}

impl Drop for WritableDatabase {
    /// A group commit whose ticket nobody took is made durable when the database closes,
    /// as it would have been under [`Durability::Fsync`]; there is nobody left to tell of
    /// a failure.
    fn drop(&mut self) {
        if let Some(ticket) = self.pending_sync.take() {
            let _ = ticket.wait();
        }
    }
}

impl std::fmt::Debug for WritableDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WritableDatabase")
            .field("dir", &self.dir)
            .field("writable", &self.store.is_some())
            .field("in_transaction", &self.in_transaction)
            .finish_non_exhaustive()
    }
}

/// An index statement: `CREATE [TEXT] INDEX ON :Label(key)` or `DROP [TEXT] INDEX ON
/// :Label(key)`, recognised before parsing (BQL's grammar has no DDL).
#[derive(Clone, Debug, PartialEq, Eq)]
struct IndexCommand {
    create: bool,
    kind: IndexKind,
    label: String,
    key: String,
}

/// What an index holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexKind {
    /// Nodes by property value: equality seeks and `MERGE`.
    Property,
    /// The words of a text property: `CALL text.search(...)`.
    Text,
}

/// `Some(Ok(command))`, `Some(Err(why))` when the text starts like an index statement but
/// is malformed, `None` for anything else.
fn index_command(text: &str) -> Option<Result<IndexCommand, String>> {
    let text = text.trim().trim_end_matches(';').trim();
    let mut words = text.split_whitespace();
    let verb = words.next()?;
    let create = if verb.eq_ignore_ascii_case("CREATE") {
        true
    } else if verb.eq_ignore_ascii_case("DROP") {
        false
    } else {
        return None;
    };
    let mut next = words.next()?;
    let kind = if next.eq_ignore_ascii_case("TEXT") {
        next = words.next()?;
        IndexKind::Text
    } else {
        IndexKind::Property
    };
    if !next.eq_ignore_ascii_case("INDEX") || !words.next()?.eq_ignore_ascii_case("ON") {
        return None;
    }
    let target: String = words.collect();
    let usage = || {
        format!(
            "expected `{} {}INDEX ON :Label(key)`",
            if create { "CREATE" } else { "DROP" },
            if kind == IndexKind::Text { "TEXT " } else { "" }
        )
    };
    let parsed = target
        .strip_prefix(':')
        .and_then(|rest| rest.strip_suffix(')'))
        .and_then(|rest| rest.split_once('('))
        .map(|(label, key)| (label.trim(), key.trim()))
        .filter(|(label, key)| is_plain_name(label) && is_plain_name(key));
    Some(match parsed {
        Some((label, key)) => Ok(IndexCommand {
            create,
            kind,
            label: label.to_string(),
            key: key.to_string(),
        }),
        None => Err(usage()),
    })
}

fn is_plain_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// The transaction statements, recognised before parsing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TransactionControl {
    Begin,
    Commit,
    Rollback,
}

fn transaction_control(text: &str) -> Option<TransactionControl> {
    let word = text.trim().trim_end_matches(';').trim();
    [
        ("BEGIN", TransactionControl::Begin),
        ("COMMIT", TransactionControl::Commit),
        ("ROLLBACK", TransactionControl::Rollback),
    ]
    .into_iter()
    .find(|(name, _)| word.eq_ignore_ascii_case(name))
    .map(|(_, control)| control)
}

fn transaction_error(message: &str) -> QueryError {
    QueryError::Transaction {
        message: message.to_string(),
    }
}

/// Which label names have at least one node.
fn labels_in_use(graph: &WritableGraph) -> Vec<String> {
    graph
        .vocabulary()
        .0
        .iter()
        .filter(|l| graph.nodes_with_label(l).is_some_and(|b| !b.is_empty()))
        .cloned()
        .collect()
}

impl WritableDatabase {
    fn with_state(
        dir: &Path,
        store: Option<WritableStore>,
        graph: WritableGraph,
        report: OpenReport,
    ) -> Self {
        WritableDatabase {
            dir: dir.to_path_buf(),
            store,
            state: RefCell::new(WritableState {
                graph,
                ..WritableState::default()
            }),
            schema: Schema::open(),
            cache: PlanCache::default(),
            in_transaction: false,
            report,
            pending_sync: None,
        }
    }

    /// Creates an empty writable graph in the folder `path` (made if missing).
    pub fn create(path: &Path) -> Result<WritableDatabase, QueryError> {
        let (store, graph) = WritableStore::create(path).map_err(|e| match e {
            StorageError::GraphExists { path } => QueryError::GraphExists { path },
            e => QueryError::Storage(e),
        })?;
        Ok(Self::with_state(
            path,
            Some(store),
            graph,
            OpenReport::default(),
        ))
    }

    /// Opens the writable graph in `path` as its one writer: loads the checkpoint,
    /// replays the log and cuts a torn tail ([`WritableDatabase::open_report`] says so).
    pub fn open(path: &Path) -> Result<WritableDatabase, QueryError> {
        if !is_writable_graph(path) {
            return Err(QueryError::NoArtifact {
                path: path.to_path_buf(),
            });
        }
        let (store, graph, report) = WritableStore::open(path)?;
        Ok(Self::with_state(path, Some(store), graph, report))
    }

    /// Opens the graph as committed, without the writer lock (another process may be
    /// writing); update clauses are refused.
    pub fn open_read_only(path: &Path) -> Result<WritableDatabase, QueryError> {
        if !is_writable_graph(path) {
            return Err(QueryError::NoArtifact {
                path: path.to_path_buf(),
            });
        }
        let (graph, report) = read_writable_graph(path)?;
        Ok(Self::with_state(path, None, graph, report))
    }

    /// Checks the writable graph in `path` without opening it for queries: manifest,
    /// checkpoint hash, log checksums, replay. A torn log tail is cut unless `dry_run`.
    pub fn check(path: &Path, dry_run: bool) -> Result<CheckReport, QueryError> {
        Ok(check_writable_graph(path, dry_run)?)
    }

    /// Deletes the checkpoints and logs of generations before the current one (and
    /// leftover temporary files) from the writable graph in `path`.
    pub fn reclaim(path: &Path, dry_run: bool) -> Result<ReclaimReport, QueryError> {
        Ok(reclaim_writable_graph(path, dry_run)?)
    }

    /// Whether `path` holds a writable graph.
    pub fn exists(path: &Path) -> bool {
        is_writable_graph(path)
    }

    /// What opening found (replayed records, a torn log tail that was cut).
    pub fn open_report(&self) -> &OpenReport {
        &self.report
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether updates are accepted.
    pub fn is_writable(&self) -> bool {
        self.store.is_some()
    }

    /// Whether a `BEGIN` is waiting for its `COMMIT` or `ROLLBACK`.
    pub fn in_transaction(&self) -> bool {
        self.in_transaction
    }

    /// `(nodes, relationships)` live now.
    pub fn counts(&self) -> (u64, u64) {
        let graph = &self.state.borrow().graph;
        (graph.node_count(), graph.relationship_count())
    }

    /// Reads the labels, properties, types and endpoints of result values.
    pub fn graph(&self) -> impl PropertyAccess + '_ {
        WritableAccess(&self.state)
    }

    /// Chooses whether commits wait for the disk (the default does) or, under
    /// [`Durability::Group`], leave a ticket to wait on (see the module documentation).
    pub fn set_durability(&mut self, durability: Durability) {
        if let Some(store) = &mut self.store {
            store.set_durability(durability);
        }
    }

    /// Under [`Durability::Group`], the ticket that makes every commit so far durable when
    /// waited on, if a commit since the last call left one. Take it while still holding
    /// whatever serialises the callers, wait on it after letting go.
    pub fn take_sync_ticket(&mut self) -> Option<SyncTicket> {
        self.pending_sync.take()
    }

    /// fsyncs of the log since the graph was opened (0 when read-only): one per commit
    /// under [`Durability::Fsync`], fewer under [`Durability::Group`].
    pub fn log_syncs(&self) -> u64 {
        self.store.as_ref().map_or(0, WritableStore::log_syncs)
    }

    /// Folds the log into a new checkpoint now.
    pub fn checkpoint(&mut self) -> Result<CheckpointInfo, QueryError> {
        if self.in_transaction {
            return Err(transaction_error(
                "cannot checkpoint inside a transaction; COMMIT or ROLLBACK first",
            ));
        }
        let store = self
            .store
            .as_mut()
            .ok_or_else(|| self_read_only("CHECKPOINT"))?;
        Ok(store.checkpoint(&self.state.borrow().graph)?)
    }

    /// Creates (`create`) or drops the property index on `:label(key)`, committed like a
    /// statement (inside an open transaction, with it).
    pub fn change_index(&mut self, create: bool, label: &str, key: &str) -> Result<(), QueryError> {
        self.change_index_of_kind(IndexKind::Property, create, label, key)
    }

    /// Creates (`create`) or drops the index of `kind` on `:label(key)`, committed like a
    /// statement (inside an open transaction, with it).
    pub fn change_index_of_kind(
        &mut self,
        kind: IndexKind,
        create: bool,
        label: &str,
        key: &str,
    ) -> Result<(), QueryError> {
        if self.store.is_none() {
            return Err(self_read_only(if create {
                "CREATE INDEX"
            } else {
                "DROP INDEX"
            }));
        }
        let (label, key) = (label.to_string(), key.to_string());
        let change = match (kind, create) {
            (IndexKind::Property, true) => Change::CreateIndex { label, key },
            (IndexKind::Property, false) => Change::DropIndex { label, key },
            (IndexKind::Text, true) => Change::CreateTextIndex { label, key },
            (IndexKind::Text, false) => Change::DropTextIndex { label, key },
        };
        {
            let state = &mut *self.state.borrow_mut();
            state
                .graph
                .apply_logged(change, &mut state.journal)
                .map_err(|e| QueryError::Unsupported {
                    message: e.to_string(),
                })?;
        }
        if !self.in_transaction {
            self.commit_journal()?;
        }
        Ok(())
    }

    /// The text indexes, as `(label, key)`.
    pub fn text_indexes(&self) -> Vec<(String, String)> {
        self.state.borrow().graph.text_indexes()
    }

    /// The property indexes, as `(label, key)`.
    pub fn indexes(&self) -> Vec<(String, String)> {
        self.state.borrow().graph.indexes()
    }

    /// Starts an explicit transaction: later statements commit together at
    /// [`WritableDatabase::commit`].
    pub fn begin(&mut self) -> Result<(), QueryError> {
        if self.in_transaction {
            return Err(transaction_error("a transaction is already open"));
        }
        if self.store.is_none() {
            return Err(self_read_only("BEGIN"));
        }
        self.in_transaction = true;
        Ok(())
    }

    /// Commits the open transaction as one log record.
    pub fn commit(&mut self) -> Result<(), QueryError> {
        if !self.in_transaction {
            return Err(transaction_error("COMMIT without BEGIN"));
        }
        self.in_transaction = false;
        self.commit_journal()
    }

    /// Undoes every change of the open transaction.
    pub fn rollback(&mut self) -> Result<(), QueryError> {
        if !self.in_transaction {
            return Err(transaction_error("ROLLBACK without BEGIN"));
        }
        self.in_transaction = false;
        let state = &mut *self.state.borrow_mut();
        state.graph.roll_back_to(&mut state.journal, 0);
        Ok(())
    }

    /// Runs a query text with default options.
    pub fn execute(
        &mut self,
        text: &str,
        params: &BTreeMap<String, Value>,
    ) -> Result<QueryResult, QueryError> {
        self.execute_with(text, params, &QueryOptions::default())
    }

    /// [`Self::execute`] with parameters given rather than lent: a list parameter that a
    /// statement only unwinds (`UNWIND $rows AS r CREATE ...`, a bulk load) is moved into
    /// its rows instead of copied.
    pub fn execute_owned(
        &mut self,
        text: &str,
        params: BTreeMap<String, Value>,
    ) -> Result<QueryResult, QueryError> {
        self.execute_parameters(text, Parameters::Given(params), &QueryOptions::default())
    }

    /// Runs a query text (one or more statements, or `BEGIN` / `COMMIT` / `ROLLBACK`).
    /// Outside a transaction the text applies whole or not at all; inside one, a failing
    /// text is undone and the transaction stays open.
    pub fn execute_with(
        &mut self,
        text: &str,
        params: &BTreeMap<String, Value>,
        opts: &QueryOptions,
    ) -> Result<QueryResult, QueryError> {
        self.execute_parameters(text, Parameters::Lent(params), opts)
    }

    fn execute_parameters(
        &mut self,
        text: &str,
        params: Parameters<'_>,
        opts: &QueryOptions,
    ) -> Result<QueryResult, QueryError> {
        let start = Instant::now();
        if let Some(command) = index_command(text) {
            let command = command.map_err(|message| QueryError::Unsupported { message })?;
            self.change_index_of_kind(command.kind, command.create, &command.label, &command.key)?;
            return Ok(QueryResult::empty(start.elapsed()));
        }
        if let Some(control) = transaction_control(text) {
            match control {
                TransactionControl::Begin => self.begin()?,
                TransactionControl::Commit => self.commit()?,
                TransactionControl::Rollback => self.rollback()?,
            }
            return Ok(QueryResult::empty(start.elapsed()));
        }
        let compiled = self.compile(text)?;
        if self.store.is_none()
            && let Some(c) = compiled.iter().find(|c| c.plan.writes)
        {
            return Err(self_read_only(
                write_clause(&c.plan.root).unwrap_or("a write"),
            ));
        }
        let mark = self.state.borrow().journal.len();
        let labels_before = labels_in_use(&self.state.borrow().graph);
        // Counted before the commit, which empties the journal.
        let outcome = self
            .run_statements(text, &compiled, params, opts, start)
            .map(|mut result| {
                result.updates = self.updates_since(mark, &labels_before);
                result
            })
            .and_then(|result| {
                if !self.in_transaction {
                    self.commit_journal()?;
                }
                Ok(result)
            });
        match outcome {
            Ok(result) => Ok(result),
            Err(error) => {
                let state = &mut *self.state.borrow_mut();
                state.graph.roll_back_to(&mut state.journal, mark);
                Err(error)
            }
        }
    }

    /// What the changes past `mark` did, counted as openCypher counts side effects: net
    /// differences, labels as names that came into or went out of use.
    fn updates_since(&self, mark: usize, labels_before: &[String]) -> UpdateCounts {
        let state = self.state.borrow();
        let net = state.graph.net_changes_since(&state.journal, mark);
        let labels_after = labels_in_use(&state.graph);
        UpdateCounts {
            nodes_created: net.nodes_created,
            nodes_deleted: net.nodes_deleted,
            relationships_created: net.relationships_created,
            relationships_deleted: net.relationships_deleted,
            labels_added: labels_after
                .iter()
                .filter(|l| !labels_before.contains(l))
                .count() as u64,
            labels_removed: labels_before
                .iter()
                .filter(|l| !labels_after.contains(l))
                .count() as u64,
            properties_set: net.properties_set,
            properties_removed: net.properties_removed,
        }
    }

    fn run_statements(
        &self,
        text: &str,
        compiled: &[Compiled],
        mut params: Parameters<'_>,
        opts: &QueryOptions,
        start: Instant,
    ) -> Result<QueryResult, QueryError> {
        let access = WritableAccess(&self.state);
        let mut last = None;
        for c in compiled {
            if c.statement.at.is_some() {
                return Err(QueryError::Unsupported {
                    message:
                        "AT GENERATION reads code graphs; a writable graph has one current state"
                            .into(),
                });
            }
            let moved = params.take_moved(&c.plan);
            let statement = run::Statement {
                text,
                plan: &c.plan,
                params: params.map(),
                opts,
                start,
                at: None,
                moved: moved.into(),
            };
            last = Some(run::execute(
                Topology::Writable(&self.state),
                &access,
                &statement,
            )?);
        }
        last.ok_or_else(|| transaction_error("the query is empty"))
    }

    /// Appends the journal as one log record and forgets it; checkpoints a long log.
    fn commit_journal(&mut self) -> Result<(), QueryError> {
        let Some(store) = self.store.as_mut() else {
            return Ok(());
        };
        let state = &mut *self.state.borrow_mut();
        if state.journal.is_empty() {
            return Ok(());
        }
        match store.commit(&state.journal) {
            Ok(Some(ticket)) => self.pending_sync = Some(ticket),
            Ok(None) => {}
            Err(error) => {
                state.graph.roll_back_to(&mut state.journal, 0);
                return Err(error.into());
            }
        }
        state.journal.clear();
        if store.log_len()? > CHECKPOINT_LOG_BYTES {
            store.checkpoint(&state.graph)?;
        }
        Ok(())
    }

    fn compile(&mut self, text: &str) -> Result<Arc<Vec<Compiled>>, QueryError> {
        self.cache.compile(text, &self.schema)
    }
}

/// A query's parameters, lent by the caller or given to the database.
enum Parameters<'p> {
    Lent(&'p BTreeMap<String, Value>),
    Given(BTreeMap<String, Value>),
}

impl Parameters<'_> {
    fn map(&self) -> &BTreeMap<String, Value> {
        match self {
            Parameters::Lent(map) => map,
            Parameters::Given(map) => map,
        }
    }

    /// The value of `plan`'s moved parameter, taken out of given parameters (nothing else
    /// in the text reads it); `None` for lent ones, which the `UNWIND` copies.
    fn take_moved(&mut self, plan: &batho_lang::plan::Plan) -> Option<Value> {
        match (self, &plan.moved_parameter) {
            (Parameters::Given(map), Some(name)) => map.remove(name),
            _ => None,
        }
    }
}

fn self_read_only(clause: &str) -> QueryError {
    QueryError::Unsupported {
        message: format!(
            "this writable graph is open read-only (another process may hold the writer lock): {clause} is not allowed"
        ),
    }
}
