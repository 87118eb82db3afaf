//! The Astria `query_graph` tool (`../shared/seeds/astria-mcp-tools.txt`): the subgraph
//! around the nodes a natural-language question names, as `CALL algo.traverse` gives it
//! (start nodes by BM25, then a BFS or DFS walk), printed as `NODE` and `EDGE` records
//! under a `Traversal:` header and cut to `budget` o200k_base tokens counted exactly
//! ([`crate::tokens`]), header and continuation footer included. `cursor` is the index of
//! the first record to print, so following the footers from 0 shows every record once.

use std::fmt::Write as _;

use batho_engine::query::Value;
use serde::Serialize;
use serde_json::{Map, Value as Json};

use super::args::{Detail, QueryGraphArgs, TraversalMode};
use super::astria::Evidence;
use super::cells::{FromRecord, Record, decode_rows};
use super::{Reply, Rows, ToolOutput};
use crate::error::ToolError;
use crate::state::{Ctx, State};
use crate::tokens;

/// The deepest walk the tool accepts (the engine's `algo.traverse` bound).
const MAX_DEPTH: i64 = 6;

/// The query behind every answer; the page is a slice of its records.
const TRAVERSE_QUERY: &str = "CALL algo.traverse($question, $mode, $depth, $directed, $detail) \
YIELD record, node, relationship, depth, start \
RETURN record, node.name AS name, node.id AS id, node.file AS file, node.start_line AS line, \
node.community AS community, start, startNode(relationship).name AS source, \
type(relationship) AS relation, relationship.confidence AS confidence, \
endNode(relationship).name AS target, relationship.file AS site_file, relationship.line AS site_line";

/// A node the walk visited.
#[derive(Serialize)]
struct TraversalNode {
    name: String,
    id: String,
    /// Empty for an external stub.
    file: String,
    line: i64,
    community: i64,
    /// Whether the question's words chose it as a start node.
    start: bool,
}

/// A relationship the walk crossed, with its stored ends.
#[derive(Serialize)]
struct TraversalEdge {
    source: String,
    relation: String,
    target: String,
    #[serde(flatten)]
    evidence: Evidence,
    /// The first site (empty, 0 when the relationship has none).
    file: String,
    line: i64,
}

/// One record of the traversal.
enum TraversalRecord {
    Node(TraversalNode),
    Edge(TraversalEdge),
}

impl FromRecord for TraversalRecord {
    fn from_record(record: &Record) -> Result<TraversalRecord, ToolError> {
        if record.text("record")? == "node" {
            return Ok(TraversalRecord::Node(TraversalNode {
                name: record.text("name")?,
                id: record.text("id")?,
                file: record.text("file")?,
                line: record.int("line")?,
                community: record.int("community")?,
                start: record.is_true("start")?,
            }));
        }
        Ok(TraversalRecord::Edge(TraversalEdge {
            source: record.text("source")?,
            relation: record.text("relation")?,
            target: record.text("target")?,
            evidence: Evidence::read(record)?,
            file: record.text("site_file")?,
            line: record.int("site_line")?,
        }))
    }
}

impl TraversalRecord {
    /// `NODE name [id=… src=file:line community=N]` (an external stub has
    /// `src=external`), or `EDGE A --calls [EXTRACTED]--> B @file:line` in the
    /// relationship's stored direction.
    fn line(&self) -> String {
        match self {
            TraversalRecord::Node(node) => {
                let src = if node.file.is_empty() {
                    "external".to_string()
                } else {
                    format!("{}:{}", node.file, node.line)
                };
                format!(
                    "NODE {} [id={} src={src} community={}]",
                    node.name, node.id, node.community
                )
            }
            TraversalRecord::Edge(edge) => {
                let at = match (edge.file.as_str(), edge.line) {
                    ("", _) => String::new(),
                    (file, 0) => format!(" @{file}"),
                    (file, line) => format!(" @{file}:{line}"),
                };
                format!(
                    "EDGE {} --{} [{}]--> {}{at}",
                    edge.source,
                    edge.relation.to_ascii_lowercase(),
                    edge.evidence.class().name(),
                    edge.target
                )
            }
        }
    }
}

/// One page of the traversal: its text (already cut to the budget) and its records.
#[derive(Serialize)]
struct QueryGraphOutput {
    nodes: Vec<TraversalNode>,
    edges: Vec<TraversalEdge>,
    /// The first record shown.
    cursor: usize,
    /// The cursor of the next page (`None` on the last).
    next_cursor: Option<usize>,
    /// Every record of the traversal, on all pages.
    records: usize,
    #[serde(skip)]
    text: String,
}

impl ToolOutput for QueryGraphOutput {
    fn markdown(&self, _rows: &mut Rows) -> String {
        self.text.clone()
    }
}

/// The text of records `from..to` of `records`, under `header` (which starts with the
/// staleness notice when there is one), with the continuation footer when records remain.
fn page_text(header: &str, records: &[TraversalRecord], from: usize, to: usize) -> String {
    let mut text = format!("{header}\n");
    for record in &records[from..to] {
        text.push_str(&record.line());
        text.push('\n');
    }
    if to < records.len() {
        let _ = writeln!(
            text,
            "(continuation: re-run with cursor {to} for the next {} of {} records)",
            records.len() - to,
            records.len()
        );
    }
    text
}

/// The end of the longest page from `from` whose text fits `budget` tokens (found by a
/// binary search over exact counts), or an error when not even one record fits.
fn page_end(
    header: &str,
    records: &[TraversalRecord],
    from: usize,
    budget: usize,
) -> Result<usize, ToolError> {
    let fits = |to: usize| tokens::count(&page_text(header, records, from, to)) <= budget;
    if fits(records.len()) {
        return Ok(records.len());
    }
    let (mut low, mut high) = (from, records.len());
    // Invariant: `low` fits or is `from`; `high` does not fit.
    while low + 1 < high {
        let middle = low + (high - low) / 2;
        if fits(middle) {
            low = middle
        } else {
            high = middle
        }
    }
    if low == from {
        return Err(ToolError::client(format!(
            "budget {budget} is too small for the header and one record"
        ))
        .hint("raise budget (the default is 2000)"));
    }
    Ok(low)
}

fn check_args(a: &QueryGraphArgs) -> Result<(), ToolError> {
    if a.question.trim().is_empty() {
        return Err(ToolError::client("question must not be empty"));
    }
    if !(0..=MAX_DEPTH).contains(&a.depth) {
        return Err(ToolError::client(format!(
            "depth must be between 0 and {MAX_DEPTH}, got {}",
            a.depth
        )));
    }
    if a.budget <= 0 {
        return Err(ToolError::client(format!(
            "budget must be a positive integer, got {}",
            a.budget
        )));
    }
    if a.cursor < 0 {
        return Err(ToolError::client(format!(
            "cursor must be 0 or more, got {}",
            a.cursor
        )));
    }
    Ok(())
}

/// `Traversal: BFS depth=2 | Start: [a, b] | N nodes found`.
fn header(a: &QueryGraphArgs, records: &[TraversalRecord]) -> String {
    let nodes = || {
        records.iter().filter_map(|record| match record {
            TraversalRecord::Node(node) => Some(node),
            TraversalRecord::Edge(_) => None,
        })
    };
    let starts: Vec<&str> = nodes()
        .filter(|node| node.start)
        .map(|node| node.name.as_str())
        .collect();
    let mode = if a.mode == TraversalMode::Dfs {
        "DFS"
    } else {
        "BFS"
    };
    format!(
        "Traversal: {mode} depth={} | Start: [{}] | {} nodes found",
        a.depth,
        starts.join(", "),
        nodes().count()
    )
}

/// Moves the staleness notice out of `meta` (where [`Reply`] would prepend it
/// uncounted) so that the page puts it above the header and counts it in the budget; it
/// stays in `meta.stale.notice_in_text`.
fn take_stale_notice(meta: &mut Map<String, Json>) -> Option<String> {
    let stale = meta.get_mut("stale")?.as_object_mut()?;
    let notice = stale.remove("notice")?;
    stale.insert("notice_in_text".into(), notice.clone());
    notice.as_str().map(str::to_string)
}

/// Runs the traversal and decodes its rows, nodes first.
fn traversal_records(cx: &mut Ctx, a: &QueryGraphArgs) -> Result<Vec<TraversalRecord>, ToolError> {
    let mode = if a.mode == TraversalMode::Dfs {
        "dfs"
    } else {
        "bfs"
    };
    let detail = if a.detail == Detail::High {
        "high"
    } else {
        "all"
    };
    let result = cx.run(
        TRAVERSE_QUERY,
        &[
            ("question", Value::from(a.question.as_str())),
            ("mode", Value::from(mode)),
            ("depth", Value::Int(a.depth)),
            ("directed", Value::Bool(a.directed)),
            ("detail", Value::from(detail)),
        ],
    )?;
    decode_rows(&result)
}

/// The page `from..to` of `records`, under its `text`.
fn page_output(
    records: Vec<TraversalRecord>,
    from: usize,
    to: usize,
    text: String,
) -> QueryGraphOutput {
    let total = records.len();
    let (mut nodes, mut edges) = (Vec::new(), Vec::new());
    for record in records.into_iter().skip(from).take(to - from) {
        match record {
            TraversalRecord::Node(node) => nodes.push(node),
            TraversalRecord::Edge(edge) => edges.push(edge),
        }
    }
    QueryGraphOutput {
        nodes,
        edges,
        cursor: from,
        next_cursor: (to < total).then_some(to),
        records: total,
        text,
    }
}

pub(crate) fn query_graph(st: &State, a: QueryGraphArgs) -> Result<Reply, ToolError> {
    check_args(&a)?;
    let mut cx = st.ctx(a.repo.name())?;
    let records = traversal_records(&mut cx, &a)?;
    let mut meta = cx.meta();
    let header = match take_stale_notice(&mut meta) {
        Some(notice) => format!("> {notice}\n\n{}", header(&a, &records)),
        None => header(&a, &records),
    };
    let from = usize::try_from(a.cursor).unwrap_or(usize::MAX);
    if from > records.len() {
        return Err(ToolError::client(format!(
            "cursor {from} is past the last record ({} records)",
            records.len()
        )));
    }
    let budget = usize::try_from(a.budget).unwrap_or(usize::MAX);
    let to = page_end(&header, &records, from, budget)?;
    let text = page_text(&header, &records, from, to);
    meta.insert("o200k_tokens".into(), tokens::count(&text).into());
    meta.insert("o200k_budget".into(), budget.into());
    meta.insert("records_shown".into(), serde_json::json!([from, to]));
    Reply::precut(&page_output(records, from, to, text), meta)
}
