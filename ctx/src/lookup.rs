//! The small tools: `ctx_tree_note`, `ctx_tree_recent`, `ctx_tree_search`,
//! `ctx_tree_neighbors` and `ctx_tree_path_to_root`, each one or two BQL statements over
//! the session graph, and the filters they share.

use std::collections::BTreeMap;

use batho_engine::query::Value;
use serde::Serialize;

use crate::graph::{ContextGraph, CtxError, Properties, int_of, parameters, text_of};
use crate::kinds::{EdgeKind, NodeKind, NodeStatus};

/// Excerpts are cut to about this many characters.
pub const EXCERPT_CHARS: usize = 200;
/// `ctx_tree_recent` and `ctx_tree_search` list this many by default…
pub const DEFAULT_LIMIT: usize = 20;
/// …and at most this many.
pub const MAX_LIMIT: usize = 1000;
/// `ctx_tree_neighbors` walks at most this deep (the seed's maximum).
pub const MAX_NEIGHBOR_DEPTH: usize = 5;
/// A note's title, when derived from its first line, is cut to this many characters.
const TITLE_CHARS: usize = 80;

/// The seed's `filters`: a node passes when it meets every given condition. Without a
/// `status` filter, superseded and pruned nodes are left out (a newer read of the same
/// file or page replaced them, or they were pruned); without a `kind` filter, session
/// roots are.
#[derive(Clone, Debug, Default)]
pub struct Filters {
    /// Statuses to keep.
    pub status: Option<Vec<NodeStatus>>,
    /// Kinds to keep.
    pub kind: Option<Vec<NodeKind>>,
    /// Created at or after (epoch ms).
    pub since: Option<i64>,
    /// Created at or before (epoch ms).
    pub until: Option<i64>,
}

impl Filters {
    /// The `WHERE` condition on `variable` and its parameters.
    fn condition(&self, variable: &str) -> (String, BTreeMap<String, Value>) {
        let names =
            |values: Vec<&'static str>| Value::List(values.into_iter().map(Value::from).collect());
        let statuses = match &self.status {
            Some(statuses) => statuses.iter().map(|s| s.name()).collect(),
            None => NodeStatus::ALL
                .iter()
                .filter(|s| !matches!(s, NodeStatus::Pruned | NodeStatus::Superseded))
                .map(|s| s.name())
                .collect(),
        };
        let kinds = match &self.kind {
            Some(kinds) => kinds.iter().map(|k| k.name()).collect(),
            None => NodeKind::ALL
                .iter()
                .filter(|k| **k != NodeKind::Session)
                .map(|k| k.name())
                .collect(),
        };
        let params = parameters([
            ("statuses", names(statuses)),
            ("kinds", names(kinds)),
            ("since", Value::Int(self.since.unwrap_or(i64::MIN))),
            ("until", Value::Int(self.until.unwrap_or(i64::MAX))),
        ]);
        let condition = format!(
            "{variable}.status IN $statuses AND {variable}.kind IN $kinds \
             AND {variable}.created_at >= $since AND {variable}.created_at <= $until"
        );
        (condition, params)
    }
}

/// One listed node.
#[derive(Clone, Debug, Serialize)]
pub struct ListedNode {
    /// Its id.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// When it was made (epoch ms), for `recent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    /// Its BM25 score, for `search`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// The start of its text (or its title).
    pub excerpt: String,
    /// Its status when it is not `live` (`stale`: the file changed since it was read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// The start of `text`, whitespace folded, cut at a character boundary.
pub fn excerpt(text: &str, limit: usize) -> String {
    let folded: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match folded.char_indices().nth(limit) {
        Some((cut, _)) => format!("{}…", &folded[..cut]),
        None => folded,
    }
}

/// What `ctx_tree_note` answers.
#[derive(Clone, Debug, Serialize)]
pub struct NoteOutcome {
    /// The note's node.
    #[serde(rename = "nodeId")]
    pub node_id: String,
    /// Its title.
    pub title: String,
}

/// Stores a note; the title defaults to the first non-empty line.
pub fn note(
    graph: &mut ContextGraph,
    content: &str,
    title: Option<&str>,
) -> Result<NoteOutcome, CtxError> {
    if content.trim().is_empty() {
        return Err(CtxError::Invalid("a note needs some content".into()));
    }
    let title = match title.map(str::trim).filter(|title| !title.is_empty()) {
        Some(title) => title.to_string(),
        None => excerpt(
            content
                .lines()
                .find(|line| !line.trim().is_empty())
                .unwrap_or(""),
            TITLE_CHARS,
        ),
    };
    let mut properties = Properties::new();
    properties.insert("title".into(), Value::from(title.as_str()));
    properties.insert("text".into(), Value::from(content));
    let node_id = graph.add_node(NodeKind::Note, properties)?;
    Ok(NoteOutcome { node_id, title })
}

/// How many ranked candidates a search looks at per result it returns, before its
/// filters: superseded and pruned nodes are rarely more than a few in four.
const SEARCH_CANDIDATES_PER_RESULT: i64 = 4;

fn clamp_limit(limit: Option<usize>) -> i64 {
    limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as i64
}

fn listed(row: &[Value], created_at: bool, score: bool) -> ListedNode {
    let text = text_of(&row[2]);
    let body = if text.is_empty() {
        text_of(&row[3])
    } else {
        text
    };
    ListedNode {
        id: text_of(&row[0]),
        kind: text_of(&row[1]),
        created_at: created_at.then(|| int_of(&row[4])),
        score: match (score, &row[4]) {
            (true, Value::Float(score)) => Some(*score),
            _ => None,
        },
        excerpt: excerpt(&body, EXCERPT_CHARS),
        status: Some(text_of(&row[5])).filter(|status| status != NodeStatus::Live.name()),
    }
}

/// The newest nodes first (by creation, then id), at most `limit`.
pub fn recent(
    graph: &mut ContextGraph,
    filters: &Filters,
    limit: Option<usize>,
) -> Result<Vec<ListedNode>, CtxError> {
    crate::stale::mark_stale_reads(graph)?;
    let (condition, mut params) = filters.condition("node");
    params.insert("limit".into(), Value::Int(clamp_limit(limit)));
    // Node ids grow with every node created, so id order is creation order, and the
    // planner answers it by scanning ids downwards until `limit` nodes pass the filters.
    let statement = format!(
        "MATCH (node:Ctx) WHERE {condition} \
         WITH node ORDER BY id(node) DESC LIMIT $limit \
         RETURN node.id, node.kind, node.text, node.title, node.created_at, node.status"
    );
    let result = graph.query(&statement, params)?;
    Ok(result
        .rows
        .iter()
        .map(|row| listed(row, true, false))
        .collect())
}

/// Keyword search (BM25 over every node's text; FTS5's query syntax), best first.
///
/// The search ranks only the best few candidates (`$candidates`, a multiple of the
/// limit) before the filters run: ranking every match of a common word costs tens of
/// milliseconds on 100,000 nodes. When the filters leave fewer than `limit` of them, a
/// second statement ranks every match, so the answer is always the best `limit` nodes
/// that pass the filters.
pub fn search(
    graph: &mut ContextGraph,
    query: &str,
    filters: &Filters,
    limit: Option<usize>,
) -> Result<Vec<ListedNode>, CtxError> {
    crate::stale::mark_stale_reads(graph)?;
    let (condition, mut params) = filters.condition("node");
    let limit = clamp_limit(limit);
    params.insert("query".into(), Value::from(query));
    params.insert("limit".into(), Value::Int(limit));
    let statement = format!(
        "CALL text.search($query, $candidates) YIELD node, score \
         WITH node, score WHERE {condition} \
         WITH node, score LIMIT $limit \
         RETURN node.id, node.kind, node.text, node.title, score, node.status"
    );
    params.insert(
        "candidates".into(),
        Value::Int(limit.saturating_mul(SEARCH_CANDIDATES_PER_RESULT)),
    );
    let mut result = graph.query(&statement, params.clone())?;
    if (result.rows.len() as i64) < limit {
        params.insert("candidates".into(), Value::Null);
        result = graph.query(&statement, params)?;
    }
    Ok(result
        .rows
        .iter()
        .map(|row| listed(row, false, true))
        .collect())
}

/// One node reached by a walk.
#[derive(Clone, Debug, Serialize)]
pub struct ReachedNode {
    /// Its id.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// The kind of the edge it was first reached by.
    pub edge_kind: String,
    /// Hops from the start.
    pub distance: i64,
}

/// The nodes within `depth` hops (either direction) of `node_id`, nearest first. Walks
/// pass around session roots: every top-level node hangs from its root, so a walk through
/// one would return the whole session (`path_to_root` names a node's session).
pub fn neighbors(
    graph: &mut ContextGraph,
    node_id: &str,
    depth: Option<usize>,
    edge_kinds: Option<&[EdgeKind]>,
    filters: &Filters,
) -> Result<Vec<ReachedNode>, CtxError> {
    let depth = depth.unwrap_or(1);
    if !(1..=MAX_NEIGHBOR_DEPTH).contains(&depth) {
        return Err(CtxError::Invalid(format!(
            "depth must be between 1 and {MAX_NEIGHBOR_DEPTH}, got {depth}"
        )));
    }
    let (condition, mut params) = filters.condition("node");
    params.insert("id".into(), Value::from(node_id));
    params.insert("depth".into(), Value::Int(depth as i64));
    let kinds = edge_kinds.map_or(Value::Null, |kinds| {
        Value::List(kinds.iter().map(|kind| Value::from(kind.name())).collect())
    });
    params.insert("edge_kinds".into(), kinds);
    require_node(graph, node_id)?;
    let statement = format!(
        "MATCH (start:Ctx {{id: $id}}) OPTIONAL MATCH (root:CtxSession) \
         WITH start, collect(root) AS roots \
         CALL algo.bfs(start, $depth, $edge_kinds, 'both', roots) YIELD node, distance, relationship \
         WITH node, distance, relationship WHERE distance > 0 AND {condition} \
         RETURN node.id, node.kind, type(relationship), distance"
    );
    let result = graph.query(&statement, params)?;
    Ok(result
        .rows
        .iter()
        .map(|row| ReachedNode {
            id: text_of(&row[0]),
            kind: text_of(&row[1]),
            edge_kind: text_of(&row[2]),
            distance: int_of(&row[3]),
        })
        .collect())
}

/// One node on the way to the root.
#[derive(Clone, Debug, Serialize)]
pub struct ChainNode {
    /// Its id.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// Hops from the start (the start is 0).
    pub depth: i64,
}

/// The start node, then its parents up the `derived_from` chain to the session root.
pub fn path_to_root(graph: &mut ContextGraph, node_id: &str) -> Result<Vec<ChainNode>, CtxError> {
    require_node(graph, node_id)?;
    let result = graph.query(
        "MATCH (start:Ctx {id: $id}) \
         CALL algo.bfs(start, 10, ['derived_from'], 'out') YIELD node, distance \
         RETURN node.id, node.kind, distance ORDER BY distance",
        parameters([("id", Value::from(node_id))]),
    )?;
    Ok(result
        .rows
        .iter()
        .map(|row| ChainNode {
            id: text_of(&row[0]),
            kind: text_of(&row[1]),
            depth: int_of(&row[2]),
        })
        .collect())
}

/// The kind of node `node_id`, or `node not found`.
fn require_node(graph: &mut ContextGraph, node_id: &str) -> Result<String, CtxError> {
    let result = graph.query(
        "MATCH (node:Ctx {id: $id}) RETURN node.kind",
        parameters([("id", Value::from(node_id))]),
    )?;
    result
        .rows
        .first()
        .map(|row| text_of(&row[0]))
        .ok_or_else(|| CtxError::NodeNotFound(node_id.to_string()))
}

/// What a prune did.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct PruneOutcome {
    /// Nodes marked `pruned`.
    pub pruned: i64,
    /// Characters of text dropped from them.
    pub text_chars: i64,
}

/// Marks every node made before `cutoff_ms` (session roots aside) `pruned` and drops its
/// text; id, kind, title, path, URL and command stay, so the record of what the session
/// did survives and answers can say a node was pruned rather than lose it silently.
pub fn prune_older_than(
    graph: &mut ContextGraph,
    cutoff_ms: i64,
) -> Result<PruneOutcome, CtxError> {
    prune_selected(
        graph,
        "MATCH (node:Ctx) WHERE node.created_at < $cutoff AND node.kind <> 'session' \
         AND node.status <> 'pruned'",
        parameters([("cutoff", Value::Int(cutoff_ms))]),
    )
}

/// Prunes the nodes `selection` binds to `node` (a statement's opening clauses, with
/// `params`): marks them `pruned`, drops their text and takes it off the graph's count.
/// What pruning is lives here, for `batho ctx prune` and the size cap alike.
pub(crate) fn prune_selected(
    graph: &mut ContextGraph,
    selection: &str,
    mut params: BTreeMap<String, Value>,
) -> Result<PruneOutcome, CtxError> {
    params.insert("now".into(), Value::Int(crate::graph::now_ms()));
    let result = graph.query(
        &format!(
            "{selection} WITH node, size(coalesce(node.text, '')) AS chars \
             SET node.status = 'pruned', node.pruned_at = $now REMOVE node.text \
             RETURN count(node), sum(chars)"
        ),
        params,
    )?;
    let outcome = result
        .rows
        .first()
        .map(|row| PruneOutcome {
            pruned: int_of(&row[0]),
            text_chars: int_of(&row[1]),
        })
        .unwrap_or_default();
    graph.forget_text(outcome.text_chars);
    Ok(outcome)
}
