//! The Astria `query_graph` tool (`../shared/seeds/astria-mcp-tools.txt`): the subgraph
//! around the nodes a natural-language question names, as `CALL algo.traverse` gives it
//! (start nodes by BM25, then a BFS or DFS walk), printed as `NODE` and `EDGE` records
//! under a `Traversal:` header and cut to `budget` o200k_base tokens counted exactly
//! ([`crate::tokens`]), header and continuation footer included. `cursor` is the index of
//! the first record to print, so following the footers from 0 shows every record once.

use std::fmt::Write as _;

use batho_engine::query::Value;
use batho_schema::Provenance;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value as Json, json};

use super::Answer;
use super::args::{Detail, QueryGraphArgs, TraversalMode};
use crate::error::ToolError;
use crate::state::{Ctx, State, f, i, s};
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

/// One record of the traversal, as printed and as structured.
struct Record {
    line: String,
    item: Json,
    is_node: bool,
}

/// `NODE name [id=… src=file:line community=N]`; an external stub has `src=external`.
fn node_record(row: &[Value]) -> Record {
    let (name, id, file) = (s(&row[1]), s(&row[2]), s(&row[3]));
    let (line, community) = (i(&row[4]), i(&row[5]));
    let src = if file.is_empty() {
        "external".to_string()
    } else {
        format!("{file}:{line}")
    };
    Record {
        line: format!("NODE {name} [id={id} src={src} community={community}]"),
        item: json!({"name": name, "id": id, "file": file, "line": line,
            "community": community, "start": row[6] == Value::Bool(true)}),
        is_node: true,
    }
}

/// `EDGE A --calls [EXTRACTED]--> B @file:line`, in the relationship's stored direction.
fn edge_record(row: &[Value]) -> Record {
    let (source, relation, target) = (s(&row[7]), s(&row[8]).to_ascii_lowercase(), s(&row[10]));
    let evidence = Provenance::of_confidence(f(&row[9])).name();
    let (file, site_line) = (s(&row[11]), i(&row[12]));
    let at = match (file.as_str(), site_line) {
        ("", _) => String::new(),
        (file, 0) => format!(" @{file}"),
        (file, line) => format!(" @{file}:{line}"),
    };
    Record {
        line: format!("EDGE {source} --{relation} [{evidence}]--> {target}{at}"),
        item: json!({"source": source, "relation": s(&row[8]), "target": target,
            "evidence": evidence, "confidence": f(&row[9]), "file": file, "line": site_line}),
        is_node: false,
    }
}

/// The text of records `from..to` of `records`, under `header` (which starts with the
/// staleness notice when there is one), with the continuation footer when records remain.
fn page_text(header: &str, records: &[Record], from: usize, to: usize) -> String {
    let mut text = format!("{header}\n");
    for record in &records[from..to] {
        text.push_str(&record.line);
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
    records: &[Record],
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
fn header(a: &QueryGraphArgs, records: &[Record]) -> String {
    let starts: Vec<&str> = records
        .iter()
        .filter(|r| r.is_node && r.item["start"] == Json::Bool(true))
        .filter_map(|r| r.item["name"].as_str())
        .collect();
    let nodes = records.iter().filter(|r| r.is_node).count();
    let mode = if a.mode == TraversalMode::Dfs {
        "DFS"
    } else {
        "BFS"
    };
    format!(
        "Traversal: {mode} depth={} | Start: [{}] | {nodes} nodes found",
        a.depth,
        starts.join(", ")
    )
}

/// Moves the staleness notice out of `meta` (where [`Answer::finish`] would prepend it
/// uncounted) so that the page puts it above the header and counts it in the budget; it
/// stays in `meta.stale.notice_in_text`.
fn take_stale_notice(meta: &mut Map<String, Json>) -> Option<String> {
    let stale = meta.get_mut("stale")?.as_object_mut()?;
    let notice = stale.remove("notice")?;
    stale.insert("notice_in_text".into(), notice.clone());
    notice.as_str().map(str::to_string)
}

/// Runs the traversal and turns its rows into records, nodes first.
fn traversal_records(cx: &mut Ctx, a: &QueryGraphArgs) -> Result<Vec<Record>, ToolError> {
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
    Ok(result
        .rows
        .iter()
        .map(|row| {
            if s(&row[0]) == "node" {
                node_record(row)
            } else {
                edge_record(row)
            }
        })
        .collect())
}

/// `structuredContent` of the page `from..to`.
fn structured_page(records: &[Record], from: usize, to: usize) -> Map<String, Json> {
    let shown = &records[from..to];
    let items = |nodes: bool| {
        shown
            .iter()
            .filter(|r| r.is_node == nodes)
            .map(|r| r.item.clone())
            .collect()
    };
    let mut structured = Map::new();
    structured.insert("nodes".into(), Json::Array(items(true)));
    structured.insert("edges".into(), Json::Array(items(false)));
    structured.insert("cursor".into(), from.into());
    let next = if to < records.len() {
        to.into()
    } else {
        Json::Null
    };
    structured.insert("next_cursor".into(), next);
    structured.insert("records".into(), records.len().into());
    structured
}

pub(crate) fn query_graph(st: &State, a: QueryGraphArgs) -> Result<CallToolResult, ToolError> {
    check_args(&a)?;
    let mut cx = st.ctx(a.repo.as_deref())?;
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
    meta.insert("records_shown".into(), json!([from, to]));
    Ok(Answer {
        markdown: text,
        structured: structured_page(&records, from, to),
        meta,
    }
    .finish(None, None))
}
