//! Keyword search and the traversal built on it: `text.search(question, limit)` ranks
//! nodes by BM25 over the stored text index (`batho_storage::text`), and
//! `algo.traverse(question, mode, depth, directed, detail)` walks the graph from the best
//! matches — the records of the Astria `query_graph` tool and `batho ask` (see
//! `docs/bql.md` for signatures, order and cost).

use std::collections::VecDeque;

use batho_lang::Value;
use batho_schema::NodeKind;
use batho_storage::text::query::parse_text_query;
use batho_storage::{EdgeRef, NodeIdx, RoaringBitmap};

use super::exec::{Ctx, ExecError, ExecResult};
use super::proc_args::{Rec, bool_arg, choice_arg, int_arg, node_set_arg, string_arg};

/// `text.search`'s default number of results.
const SEARCH_DEFAULT_LIMIT: i64 = 10;
/// Start nodes of a traversal: at most this many matches…
pub const TRAVERSE_MAX_STARTS: usize = 3;
/// …each scoring at least this share of the best (graphify's seed rule).
pub const TRAVERSE_START_SHARE: f64 = 0.2;
/// Relationships one node adds to the frontier, at most (stored order: out, then in):
/// a kernel header included by 10 000 files must not flood the answer.
pub const TRAVERSE_EDGES_PER_NODE: usize = 30;
/// Nodes one traversal visits, at most.
pub const TRAVERSE_MAX_NODES: usize = 500;
/// `algo.traverse`'s default and largest depth.
const TRAVERSE_DEFAULT_DEPTH: i64 = 2;
const TRAVERSE_MAX_DEPTH: i64 = 6;

/// The best `limit` nodes for `question`, with scores.
fn ranked(
    ctx: &Ctx<'_>,
    proc: &str,
    question: &str,
    limit: usize,
) -> ExecResult<Vec<(NodeIdx, f64)>> {
    let hits = ctx.artifact()?.text_search(question, limit).map_err(|e| {
        ExecError::Unsupported(format!(
            "{proc}(): the text index cannot be read ({e}); run `batho fix`"
        ))
    })?;
    ctx.tick(hits.len() as u64)?;
    ctx.hold(hits.len())?;
    Ok(hits)
}

/// `text.search(question, [limit])`: the live nodes best matching the question by BM25
/// (FTS5's formula), best first, ties by node index; at most `limit` (default 10).
pub(crate) fn search(ctx: &Ctx<'_>, args: &[Value]) -> ExecResult<Vec<Rec>> {
    const P: &str = "text.search";
    let question = string_arg(P, args, 0, "question")?;
    let limit = int_arg(P, args, 1, "limit", SEARCH_DEFAULT_LIMIT)?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    Ok(ranked(ctx, P, &question, limit)?
        .into_iter()
        .map(|(v, score)| vec![("node", Value::Node(v.0)), ("score", Value::Float(score))])
        .collect())
}

/// `text.search(query, [limit])` on a writable graph: the nodes matching the keyword
/// query in any of its text indexes (`CREATE TEXT INDEX ON :Label(key)`), best first by
/// BM25; every match when `limit` is absent or null. The query is FTS5's basic syntax:
/// words ANDed, `"a phrase"`, `prefix*` (`batho_storage::text::query`).
pub(crate) fn search_writable(ctx: &Ctx<'_>, args: &[Value]) -> ExecResult<Vec<Rec>> {
    const P: &str = "text.search";
    let question = string_arg(P, args, 0, "query")?;
    let limit = int_arg(P, args, 1, "limit", i64::MAX)?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let query = parse_text_query(&question)
        .map_err(|error| ExecError::Unsupported(format!("{P}(): {error}")))?;
    let Some(hits) = ctx.topology.text_search(&query, limit) else {
        return Err(ExecError::Unsupported(format!(
            "{P}(): this graph has no text index; create one with CREATE TEXT INDEX ON :Label(key)"
        )));
    };
    ctx.tick(hits.len() as u64 + 1)?;
    ctx.hold(hits.len())?;
    Ok(hits
        .into_iter()
        .map(|(node, score)| vec![("node", Value::Node(node)), ("score", Value::Float(score))])
        .collect())
}

/// `text.score(query, nodes)`: the nodes of the list that match the keyword query, each
/// with its BM25 score as `text.search` gives it, by node id. Scoring a known set (a
/// compose's candidates) this way costs one search, where filtering `text.search` by
/// `node IN $list` costs a list scan per match.
pub(crate) fn score(ctx: &Ctx<'_>, args: &[Value]) -> ExecResult<Vec<Rec>> {
    const P: &str = "text.score";
    let question = string_arg(P, args, 0, "query")?;
    let among = node_set_arg(P, args, 1, "nodes")?;
    let hits: Vec<(u32, f64)> = match ctx.topology.artifact() {
        Some(_) => {
            let mut hits: Vec<(u32, f64)> = ranked(ctx, P, &question, usize::MAX)?
                .into_iter()
                .filter(|(node, _)| among.contains(node.0))
                .map(|(node, score)| (node.0, score))
                .collect();
            hits.sort_by_key(|hit| hit.0);
            hits
        }
        None => {
            let query = parse_text_query(&question)
                .map_err(|error| ExecError::Unsupported(format!("{P}(): {error}")))?;
            ctx.topology.text_scores(&query, &among).ok_or_else(|| {
                ExecError::Unsupported(format!(
                    "{P}(): this graph has no text index; create one with CREATE TEXT INDEX ON :Label(key)"
                ))
            })?
        }
    };
    ctx.tick(hits.len() as u64 + 1)?;
    ctx.hold(hits.len())?;
    Ok(hits
        .into_iter()
        .map(|(node, score)| vec![("node", Value::Node(node)), ("score", Value::Float(score))])
        .collect())
}

/// How `algo.traverse` walks.
struct TraversalPlan {
    depth_first: bool,
    depth: i64,
    directed: bool,
    high_detail: bool,
}

/// The start nodes: up to [`TRAVERSE_MAX_STARTS`] best matches scoring at least
/// [`TRAVERSE_START_SHARE`] of the best; with `high_detail`, files first among equal scores.
fn start_nodes(ctx: &Ctx<'_>, question: &str, high_detail: bool) -> ExecResult<Vec<NodeIdx>> {
    let mut hits = ranked(ctx, "algo.traverse", question, TRAVERSE_MAX_STARTS * 4)?;
    if high_detail {
        let art = ctx.artifact()?;
        let not_file = |v: NodeIdx| art.node(v).kind() != NodeKind::File;
        hits.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then(not_file(a.0).cmp(&not_file(b.0)))
                .then(a.0.cmp(&b.0))
        });
    }
    let best = hits.first().map_or(0.0, |h| h.1);
    Ok(hits
        .into_iter()
        .filter(|h| h.1 >= best * TRAVERSE_START_SHARE)
        .take(TRAVERSE_MAX_STARTS)
        .map(|h| h.0)
        .collect())
}

/// The relationships node `v` may be left by, in stored order (out-edges, then in-edges
/// when undirected), each with the node at its other end; at most
/// [`TRAVERSE_EDGES_PER_NODE`].
fn hops<'a>(
    ctx: &Ctx<'a>,
    plan: &TraversalPlan,
    v: NodeIdx,
) -> ExecResult<Vec<(EdgeRef<'a>, NodeIdx)>> {
    let art = ctx.artifact()?;
    let keep = |e: &EdgeRef<'_>| !plan.high_detail || e.strategy().provenance().is_high_detail();
    let outs = art.out_edges(v).map(|e| (e, e.dst()));
    let ins = art
        .in_edges(v)
        .filter(|_| !plan.directed)
        .map(|e| (e, e.src()));
    let mut out = Vec::new();
    for (e, other) in outs.chain(ins) {
        ctx.tick(1)?;
        if keep(&e) && art.is_live(other) && other != v {
            out.push((e, other));
            if out.len() == TRAVERSE_EDGES_PER_NODE {
                break;
            }
        }
    }
    Ok(out)
}

/// One frontier entry: a node, its depth and the relationship it was reached by.
type Entry = (NodeIdx, i64, Option<u32>);

/// What a walk met: the visited nodes with their depth, and the relationships crossed,
/// each in the order met.
struct Walked {
    nodes: Vec<(NodeIdx, i64)>,
    edges: Vec<u32>,
}

/// Walks from the start nodes.
fn walk(ctx: &Ctx<'_>, plan: &TraversalPlan, starts: &[NodeIdx]) -> ExecResult<Walked> {
    let mut visited = RoaringBitmap::new();
    let mut recorded = RoaringBitmap::new();
    let (mut nodes, mut edges) = (Vec::new(), Vec::new());
    let mut frontier: VecDeque<Entry> = starts.iter().map(|&v| (v, 0, None)).collect();
    if plan.depth_first {
        frontier.make_contiguous().reverse();
    }
    while let Some((v, depth, via)) = if plan.depth_first {
        frontier.pop_back()
    } else {
        frontier.pop_front()
    } {
        let fresh = !visited.contains(v.0);
        if fresh && nodes.len() == TRAVERSE_MAX_NODES {
            break;
        }
        if let Some(e) = via
            && recorded.insert(e)
        {
            edges.push(e);
        }
        if !fresh {
            continue;
        }
        visited.insert(v.0);
        ctx.hold(1)?;
        nodes.push((v, depth));
        if depth >= plan.depth {
            continue;
        }
        let mut next: Vec<Entry> = hops(ctx, plan, v)?
            .into_iter()
            .map(|(e, w)| (w, depth + 1, Some(e.idx().0)))
            .collect();
        if plan.depth_first {
            next.reverse();
        }
        frontier.extend(next);
    }
    Ok(Walked { nodes, edges })
}

/// `algo.traverse(question, [mode], [depth], [directed], [detail])`: the subgraph around
/// the best text matches. Records: one per visited node (`record` = 'node', `node`,
/// `depth`, `start`), in visit order, then one per relationship crossed (`record` =
/// 'edge', `relationship`), in the order crossed; an undirected walk crosses arrows
/// backwards but the relationship keeps its stored ends.
pub(crate) fn traverse(ctx: &Ctx<'_>, args: &[Value]) -> ExecResult<Vec<Rec>> {
    const P: &str = "algo.traverse";
    let question = string_arg(P, args, 0, "question")?;
    let plan = TraversalPlan {
        depth_first: choice_arg(P, args, 1, "mode", ["bfs", "dfs"])? == "dfs",
        depth: int_arg(P, args, 2, "depth", TRAVERSE_DEFAULT_DEPTH)?.min(TRAVERSE_MAX_DEPTH),
        directed: bool_arg(P, args, 3, "directed")?,
        high_detail: choice_arg(P, args, 4, "detail", ["all", "high"])? == "high",
    };
    let starts = start_nodes(ctx, &question, plan.high_detail)?;
    let Walked { nodes, edges } = walk(ctx, &plan, &starts)?;
    let node_records = nodes.into_iter().map(|(v, depth)| {
        vec![
            ("record", Value::from("node")),
            ("node", Value::Node(v.0)),
            ("relationship", Value::Null),
            ("depth", Value::Int(depth)),
            ("start", Value::Bool(starts.contains(&v))),
        ]
    });
    let edge_records = edges.into_iter().map(|e| {
        vec![
            ("record", Value::from("edge")),
            ("node", Value::Null),
            ("relationship", Value::Rel(e)),
            ("depth", Value::Null),
            ("start", Value::Bool(false)),
        ]
    });
    Ok(node_records.chain(edge_records).collect())
}
