//! A project's session graph: one Batho writable graph under `$BATHO_HOME/ctx/`, holding a
//! `session` root per server session and everything the sessions gathered. Every read and
//! write is a BQL statement; the statements a call ran are kept so a tool can show them
//! (`meta.query`).
//!
//! Shape: every node carries the label `Ctx` (a session root also `CtxSession`, so walks
//! can avoid it), a string `id` (`n` and its graph id, stable
//! for the graph's life), `kind`, `status`, `created_at` (epoch ms) and `session`. A
//! top-level node has a `derived_from` edge to its session root and a `follows` edge from
//! the node made before it (the root for the first); a chunk has a `derived_from` edge to
//! the node it was cut from. The parent chain is therefore the `derived_from` path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use batho_engine::query::{
    Durability, IndexKind, QueryError, QueryResult, SyncTicket, Value, WritableDatabase,
};

use crate::kinds::{ENTITY_LABEL, EdgeKind, NODE_LABEL, NodeKind, NodeStatus};

/// Why a session graph operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CtxError {
    /// A statement failed (the graph is unchanged by it).
    #[error("{0}")]
    Query(#[from] QueryError),
    /// No node has this id.
    #[error(
        "node not found: no node has id '{0}' (ids look like 'n12'; list some with ctx_tree_recent)"
    )]
    NodeNotFound(String),
    /// The arguments cannot be served.
    #[error("{0}")]
    Invalid(String),
    /// A file or folder could not be used.
    #[error("{0}")]
    Io(String),
}

/// Where a tool's session graph lives, and which session it writes into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionChoice {
    /// A new session root (a server starting).
    New,
    /// The newest session, or a new one when there is none (the CLI).
    Latest,
}

/// Properties of a node to make, besides the ones every node gets.
pub type Properties = BTreeMap<String, Value>;

/// An open session graph. See the module documentation.
pub struct ContextGraph {
    database: WritableDatabase,
    project_root: PathBuf,
    session: String,
    previous: String,
    statements: Vec<String>,
    /// Characters of text the nodes hold, once counted (`crate::cap`), then kept up to
    /// date by every node this graph writes and every prune.
    text_chars: Option<u64>,
    /// The most characters of text the graph may hold (`crate::cap`).
    text_cap: u64,
    /// Characters of text written since the cap was last checked: a call that wrote
    /// nothing needs no check (and never pays the first count).
    unchecked_chars: u64,
}

impl std::fmt::Debug for ContextGraph {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ContextGraph")
            .field("project_root", &self.project_root)
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// The folder of `project_root`'s session graph under `home`: its name and a hash of its
/// path, so two projects with one name never share a graph.
pub fn graph_dir(home: &Path, project_root: &Path) -> PathBuf {
    let name: String = project_root
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let hash = blake3::hash(project_root.as_os_str().as_encoded_bytes()).to_hex();
    home.join("ctx").join(format!("{name}-{}", &hash[..12]))
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
}

/// The parameters of a statement.
pub(crate) fn parameters<const N: usize>(pairs: [(&str, Value); N]) -> BTreeMap<String, Value> {
    pairs
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect()
}

/// A string column of a result row (`""` for null or another type).
pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        _ => String::new(),
    }
}

/// An integer column of a result row (0 for null or another type).
pub(crate) fn int_of(value: &Value) -> i64 {
    match value {
        Value::Int(number) => *number,
        _ => 0,
    }
}

impl ContextGraph {
    /// Whether `project_root` has a session graph under `home` yet.
    pub fn exists(home: &Path, project_root: &Path) -> bool {
        WritableDatabase::exists(&graph_dir(home, project_root))
    }

    /// Opens (creating when needed) the session graph of `project_root` under `home`.
    /// Fails when another process holds it for writing.
    pub fn open(
        home: &Path,
        project_root: &Path,
        choice: SessionChoice,
    ) -> Result<ContextGraph, CtxError> {
        let dir = graph_dir(home, project_root);
        let database = if WritableDatabase::exists(&dir) {
            WritableDatabase::open(&dir)?
        } else {
            std::fs::create_dir_all(dir.parent().unwrap_or(&dir)).map_err(|error| {
                CtxError::Io(format!("cannot create {}: {error}", dir.display()))
            })?;
            WritableDatabase::create(&dir)?
        };
        let mut graph = ContextGraph {
            database,
            project_root: project_root.to_path_buf(),
            session: String::new(),
            previous: String::new(),
            statements: Vec::new(),
            text_chars: None,
            text_cap: crate::cap::DEFAULT_MAX_TEXT_CHARS,
            unchecked_chars: 0,
        };
        graph.ensure_indexes()?;
        graph.choose_session(choice)?;
        Ok(graph)
    }

    /// The project root the graph is for.
    pub fn project_root(&self) -> &Path {
        &self.project_root
    }

    /// The session root's id.
    pub fn session_id(&self) -> &str {
        &self.session
    }

    /// The graph's folder.
    pub fn dir(&self) -> &Path {
        self.database.dir()
    }

    /// Chooses group commit: writes append their log records without waiting for the
    /// disk and leave a ticket ([`ContextGraph::take_sync_ticket`]) to wait on once the
    /// caller let go of the graph, so calls that write at the same time share one fsync.
    /// Off (the default), each write is on disk before it returns.
    pub fn set_group_commit(&mut self, group: bool) {
        self.database.set_durability(if group {
            Durability::Group
        } else {
            Durability::Fsync
        });
    }

    /// Under group commit, the ticket that makes every write so far durable when waited
    /// on (`None` when nothing was written since the last call).
    pub fn take_sync_ticket(&mut self) -> Option<SyncTicket> {
        self.database.take_sync_ticket()
    }

    /// The statements run since the last call, for `meta.query`.
    pub fn take_statements(&mut self) -> Vec<String> {
        std::mem::take(&mut self.statements)
    }

    /// Sets the most characters of text the graph may hold (`crate::cap`).
    pub fn set_text_cap(&mut self, chars: u64) {
        self.text_cap = chars;
    }

    /// The most characters of text the graph may hold.
    pub fn text_cap(&self) -> u64 {
        self.text_cap
    }

    /// Characters of text the nodes hold (counted with one statement the first time).
    pub fn text_chars(&mut self) -> Result<u64, CtxError> {
        if let Some(chars) = self.text_chars {
            return Ok(chars);
        }
        let result = self.run(
            "MATCH (node:Ctx) WHERE node.text IS NOT NULL RETURN sum(size(node.text))",
            BTreeMap::new(),
        )?;
        let chars = result.rows.first().map_or(0, |row| int_of(&row[0])).max(0) as u64;
        self.text_chars = Some(chars);
        Ok(chars)
    }

    /// Takes `chars` characters of dropped text off the running count.
    pub(crate) fn forget_text(&mut self, chars: i64) {
        if let Some(total) = &mut self.text_chars {
            *total = total.saturating_sub(chars.max(0) as u64);
        }
    }

    /// Characters of text written since the last call, and starts counting again.
    pub(crate) fn take_unchecked_text(&mut self) -> u64 {
        std::mem::take(&mut self.unchecked_chars)
    }

    fn count_text_written(&mut self, properties: &Properties) {
        let Some(Value::String(text)) = properties.get("text") else {
            return;
        };
        let chars = text.chars().count() as u64;
        self.unchecked_chars += chars;
        if let Some(total) = &mut self.text_chars {
            *total += chars;
        }
    }

    fn ensure_indexes(&mut self) -> Result<(), CtxError> {
        let property_indexes = self.database.indexes();
        for key in ["id", "path", "url", "command", "role"] {
            if !property_indexes.contains(&(NODE_LABEL.to_string(), key.to_string())) {
                self.database.change_index(true, NODE_LABEL, key)?;
            }
        }
        if !property_indexes.contains(&(ENTITY_LABEL.to_string(), "id".to_string())) {
            self.database.change_index(true, ENTITY_LABEL, "id")?;
        }
        let text_index = (NODE_LABEL.to_string(), "text".to_string());
        if !self.database.text_indexes().contains(&text_index) {
            self.database
                .change_index_of_kind(IndexKind::Text, true, NODE_LABEL, "text")?;
        }
        Ok(())
    }

    fn choose_session(&mut self, choice: SessionChoice) -> Result<(), CtxError> {
        if choice == SessionChoice::Latest {
            let latest = self.run(
                "MATCH (session:CtxSession) RETURN session.id \
                 ORDER BY id(session) DESC LIMIT 1",
                BTreeMap::new(),
            )?;
            if let Some(row) = latest.rows.first() {
                self.session = text_of(&row[0]);
                let last = self.run(
                    "MATCH (:Ctx)-[:follows]->(last:Ctx {session: $session}) RETURN last.id \
                     ORDER BY id(last) DESC LIMIT 1",
                    parameters([("session", Value::from(self.session.as_str()))]),
                )?;
                self.previous = last
                    .rows
                    .first()
                    .map_or_else(|| self.session.clone(), |row| text_of(&row[0]));
                return Ok(());
            }
        }
        let created = self.run(
            "CREATE (session:Ctx:CtxSession) SET session += $properties, \
             session.id = 'n' + toString(id(session)), session.session = session.id \
             RETURN session.id",
            parameters([(
                "properties",
                Value::Map(self.common_properties(NodeKind::Session, "")),
            )]),
        )?;
        self.session = created
            .rows
            .first()
            .map(|row| text_of(&row[0]))
            .unwrap_or_default();
        self.previous = self.session.clone();
        Ok(())
    }

    fn common_properties(&self, kind: NodeKind, session: &str) -> Properties {
        let mut properties = Properties::new();
        properties.insert("kind".into(), Value::from(kind.name()));
        properties.insert("status".into(), Value::from(NodeStatus::Live.name()));
        properties.insert("created_at".into(), Value::Int(now_ms()));
        if !session.is_empty() {
            properties.insert("session".into(), Value::from(session));
        }
        properties
    }

    /// Runs one statement, remembering its text.
    pub(crate) fn run(
        &mut self,
        statement: &str,
        params: BTreeMap<String, Value>,
    ) -> Result<QueryResult, CtxError> {
        self.statements.push(statement.to_string());
        Ok(self.database.execute_owned(statement, params)?)
    }

    /// Makes a top-level node of `kind` under the session and returns its id.
    pub fn add_node(&mut self, kind: NodeKind, extra: Properties) -> Result<String, CtxError> {
        let mut properties = self.common_properties(kind, &self.session);
        properties.extend(extra);
        self.count_text_written(&properties);
        let result = self.run(
            "MATCH (session:Ctx {id: $session}) MATCH (previous:Ctx {id: $previous}) \
             CREATE (previous)-[:follows]->(node:Ctx)-[:derived_from]->(session) \
             SET node += $properties, node.id = 'n' + toString(id(node)) \
             RETURN node.id",
            parameters([
                ("session", Value::from(self.session.as_str())),
                ("previous", Value::from(self.previous.as_str())),
                ("properties", Value::Map(properties)),
            ]),
        )?;
        let id = result
            .rows
            .first()
            .map(|row| text_of(&row[0]))
            .ok_or_else(|| CtxError::NodeNotFound(self.previous.clone()))?;
        self.previous = id.clone();
        Ok(id)
    }

    /// Makes child nodes of `kind` under `parent`, in order, and returns their ids.
    pub fn add_children(
        &mut self,
        parent: &str,
        kind: NodeKind,
        children: Vec<Properties>,
    ) -> Result<Vec<String>, CtxError> {
        if children.is_empty() {
            return Ok(Vec::new());
        }
        let common = self.common_properties(kind, &self.session);
        for child in &children {
            self.count_text_written(child);
        }
        let rows: Vec<Value> = children
            .into_iter()
            .map(|mut child| {
                for (key, value) in &common {
                    child.entry(key.clone()).or_insert_with(|| value.clone());
                }
                Value::Map(child)
            })
            .collect();
        let result = self.run(
            // UNWIND first, so that the children's maps (their text) move into the rows
            // rather than being copied (`WritableDatabase::execute_owned`).
            "UNWIND $children AS child MATCH (parent:Ctx {id: $parent}) \
             CREATE (node:Ctx)-[:derived_from]->(parent) \
             SET node += child, node.id = 'n' + toString(id(node)) \
             RETURN node.id",
            parameters([
                ("parent", Value::from(parent)),
                ("children", Value::List(rows)),
            ]),
        )?;
        Ok(result.rows.iter().map(|row| text_of(&row[0])).collect())
    }

    /// Adds an edge `from -[kind]-> to`.
    pub fn link(&mut self, from: &str, kind: EdgeKind, to: &str) -> Result<(), CtxError> {
        let statement = format!(
            "MATCH (from:Ctx {{id: $from}}) MATCH (to:Ctx {{id: $to}}) CREATE (from)-[:{}]->(to) RETURN count(*)",
            kind.name()
        );
        let result = self.run(
            &statement,
            parameters([("from", Value::from(from)), ("to", Value::from(to))]),
        )?;
        match result.rows.first().map(|row| int_of(&row[0])) {
            Some(1) => Ok(()),
            _ => Err(CtxError::NodeNotFound(format!("{from} or {to}"))),
        }
    }

    /// Sets the status of node `id` and of the chunks cut from it; the number of nodes
    /// changed.
    pub fn set_status(&mut self, id: &str, status: NodeStatus) -> Result<u64, CtxError> {
        let params = || {
            parameters([
                ("id", Value::from(id)),
                ("status", Value::from(status.name())),
            ])
        };
        let node = self.run(
            "MATCH (node:Ctx {id: $id}) SET node.status = $status RETURN count(node)",
            params(),
        )?;
        let chunks = self.run(
            "MATCH (chunk:Ctx)-[:derived_from]->(node:Ctx {id: $id}) \
             SET chunk.status = $status RETURN count(chunk)",
            params(),
        )?;
        let count = |result: &QueryResult| result.rows.first().map_or(0, |row| int_of(&row[0]));
        Ok((count(&node) + count(&chunks)) as u64)
    }

    /// Every property of node `id`.
    pub fn node(&mut self, id: &str) -> Result<BTreeMap<String, Value>, CtxError> {
        let result = self.run(
            "MATCH (node:Ctx {id: $id}) RETURN properties(node)",
            parameters([("id", Value::from(id))]),
        )?;
        match result
            .rows
            .into_iter()
            .next()
            .and_then(|row| row.into_iter().next())
        {
            Some(Value::Map(properties)) => Ok(properties),
            _ => Err(CtxError::NodeNotFound(id.to_string())),
        }
    }

    /// Every property of node `id`, as JSON.
    pub fn node_json(
        &mut self,
        id: &str,
    ) -> Result<serde_json::Map<String, serde_json::Value>, CtxError> {
        let properties = self.node(id)?;
        let graph = self.database.graph();
        Ok(properties
            .iter()
            .map(|(key, value)| {
                (
                    key.clone(),
                    batho_engine::query::render::to_json(value, &graph),
                )
            })
            .collect())
    }

    /// Runs a read statement for a tool (`meta.query` shows it).
    pub fn query(
        &mut self,
        statement: &str,
        params: BTreeMap<String, Value>,
    ) -> Result<QueryResult, CtxError> {
        self.run(statement, params)
    }

    /// Starts a transaction: the writes until [`ContextGraph::commit`] land together.
    pub fn begin(&mut self) -> Result<(), CtxError> {
        Ok(self.database.begin()?)
    }

    /// Commits the open transaction (one log record, fsynced before this returns unless
    /// under group commit).
    pub fn commit(&mut self) -> Result<(), CtxError> {
        Ok(self.database.commit()?)
    }

    /// Rolls the open transaction back, and forgets a `previous` made inside it.
    pub fn rollback(&mut self, previous: String) -> Result<(), CtxError> {
        self.previous = previous;
        Ok(self.database.rollback()?)
    }

    /// The last top-level node (for rolling back a transaction that made some).
    pub fn previous(&self) -> String {
        self.previous.clone()
    }

    /// Nodes and relationships in the graph.
    pub fn counts(&self) -> (u64, u64) {
        self.database.counts()
    }
}
