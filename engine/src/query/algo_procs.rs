//! The graph-algorithm procedures: `algo.pagerank`, `algo.neighbors`, `algo.affected`
//! and `db.stats` (see `docs/bql.md` for their signatures, order and cost).

use std::collections::VecDeque;

use batho_lang::Value;
use batho_schema::{NodeKind, RelType};
use batho_storage::{EdgeRef, NodeIdx, RoaringBitmap};

use crate::algo;
use crate::status::GraphCounts;

use super::exec::{Ctx, ExecError, ExecResult};
use super::proc_args::{Rec, bad, int_arg};

/// Relation types `algo.affected` follows by default: what a change propagates along.
pub(crate) const AFFECTED_RELS: [RelType; 7] = [
    RelType::Calls,
    RelType::Expands,
    RelType::References,
    RelType::Includes,
    RelType::Inherits,
    RelType::Reads,
    RelType::Writes,
];
/// `algo.affected`'s default and largest depth.
const AFFECTED_DEFAULT_DEPTH: i64 = 3;
const AFFECTED_MAX_DEPTH: i64 = 10;

fn count(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// The node a procedure starts from: a node value, or a node id string.
fn node_arg(ctx: &Ctx<'_>, proc: &str, args: &[Value], i: usize) -> ExecResult<NodeIdx> {
    let art = ctx.artifact()?;
    match args.get(i) {
        Some(Value::Node(n)) if art.is_live(NodeIdx(*n)) => Ok(NodeIdx(*n)),
        Some(Value::Node(n)) => Err(ExecError::Unsupported(format!(
            "{proc}(): node {n} is not in this generation"
        ))),
        Some(Value::String(id)) => art
            .lookup_id(id)
            .filter(|&n| art.is_live(n))
            .ok_or_else(|| {
                ExecError::Unsupported(format!(
                    "{proc}(): node not found: no node has id '{id}' (ids look like \
                     'src/lapi.c:lua_pushnil'; find one with MATCH (n {{name: ...}}) RETURN n.id)"
                ))
            }),
        None | Some(Value::Null) => Err(ExecError::Unsupported(format!(
            "{proc}(): argument `node_id` is required (a node id string or a node)"
        ))),
        Some(v) => Err(bad(proc, "node_id", "a node id string or a node", v)),
    }
}

/// An optional list of relation type names (`null`, absent or empty: `default`).
fn rels_arg(proc: &str, args: &[Value], i: usize, default: &[RelType]) -> ExecResult<Vec<RelType>> {
    let one = |v: &Value| match v {
        Value::String(s) => RelType::from_name_or_alias(s).ok_or_else(|| {
            let valid: Vec<&str> = RelType::ALL.iter().map(|r| r.name()).collect();
            ExecError::Unsupported(format!(
                "{proc}(): unknown relationship type '{s}' in `relations`; valid: {}",
                valid.join(", ")
            ))
        }),
        v => Err(bad(
            proc,
            "relations",
            "a list of relationship type names",
            v,
        )),
    };
    match args.get(i) {
        None | Some(Value::Null) => Ok(default.to_vec()),
        Some(Value::List(l)) if l.is_empty() => Ok(default.to_vec()),
        Some(Value::List(l)) => {
            let mut out = Vec::with_capacity(l.len());
            for v in l {
                let r = one(v)?;
                if !out.contains(&r) {
                    out.push(r);
                }
            }
            Ok(out)
        }
        Some(s @ Value::String(_)) => Ok(vec![one(s)?]),
        Some(v) => Err(bad(
            proc,
            "relations",
            "a list of relationship type names",
            v,
        )),
    }
}

/// An optional non-negative integer (`null` or absent: `default`).
/// `algo.pagerank([limit])`: the nodes with their stored scores, best first (ties: node
/// index); with `limit`, only that many, so that only they are held (the top of a
/// kernel's seven million nodes without holding them all). The scores were computed by
/// the build (see `algo::pagerank`); this reads a column.
pub(crate) fn pagerank(ctx: &Ctx<'_>, args: &[Value]) -> ExecResult<Vec<Rec>> {
    let art = ctx.artifact()?;
    let limit = int_arg("algo.pagerank", args, 0, "limit", i64::MAX)?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    // Best first: score descending, then node index.
    let key = |(s, v): (u32, u32)| (std::cmp::Reverse(s), v);
    let mut ranked: Vec<(u32, u32)> = Vec::new();
    for v in 0..art.node_count() {
        ctx.tick(1)?;
        if art.is_live(NodeIdx(v)) {
            ranked.push((art.node(NodeIdx(v)).pagerank(), v));
            // Keep at most twice the limit between cuts: amortised O(n) selection.
            if ranked.len() >= limit.saturating_mul(2).max(1024) {
                let nth = limit.min(ranked.len() - 1);
                ranked.select_nth_unstable_by_key(nth, |x| key(*x));
                ranked.truncate(limit);
            }
        }
    }
    ranked.sort_unstable_by_key(|x| key(*x));
    ranked.truncate(limit);
    ctx.hold(ranked.len())?;
    Ok(ranked
        .into_iter()
        .map(|(s, v)| {
            vec![
                ("node", Value::Node(v)),
                ("score", Value::Float(algo::from_stored(s))),
            ]
        })
        .collect())
}

/// `db.stats()`: one record of graph-wide counts (`GraphCounts`, as `batho status` shows
/// them), the number of communities and the partition's modularity.
pub(crate) fn stats(ctx: &Ctx<'_>, modularity: f64, communities: u64) -> ExecResult<Vec<Rec>> {
    let c = GraphCounts::of(ctx.artifact()?);
    Ok(vec![vec![
        ("nodes", count(c.nodes)),
        ("edges", count(c.edges)),
        ("files", count(c.files)),
        ("entities", count(c.entities)),
        ("communities", count(communities)),
        ("modularity", Value::Float(modularity)),
    ]])
}

/// A direction argument.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Out,
    In,
    Both,
}

/// `algo.neighbors(node_id, direction, relations, limit)`: the node's neighbours over
/// the given relation types (filtered before the limit), strongest first: confidence
/// descending, then the neighbour's PageRank descending, then the relationship's index.
pub(crate) fn neighbors(ctx: &Ctx<'_>, args: &[Value]) -> ExecResult<Vec<Rec>> {
    const P: &str = "algo.neighbors";
    let art = ctx.artifact()?;
    let node = node_arg(ctx, P, args, 0)?;
    let dir = match args.get(1) {
        None | Some(Value::Null) => Dir::Both,
        Some(Value::String(s)) => match s.to_ascii_lowercase().as_str() {
            "out" | "outgoing" => Dir::Out,
            "in" | "incoming" => Dir::In,
            "both" | "any" => Dir::Both,
            _ => {
                return Err(ExecError::Unsupported(format!(
                    "{P}(): argument `direction` must be 'out', 'in' or 'both', got '{s}'"
                )));
            }
        },
        Some(v) => Err(bad(P, "direction", "'out', 'in' or 'both'", v))?,
    };
    let rels = rels_arg(P, args, 2, RelType::ALL)?;
    let limit = int_arg(P, args, 3, "limit", i64::MAX)?;
    let mut found: Vec<(f32, u32, u32, u32, &'static str)> = Vec::new();
    let mut take = |e: EdgeRef<'_>, other: NodeIdx, way: &'static str| -> ExecResult<()> {
        ctx.tick(1)?;
        if rels.contains(&e.rel()) && art.is_live(other) {
            let rank = art.node(other).pagerank();
            found.push((e.confidence(), rank, e.idx().0, other.0, way));
        }
        Ok(())
    };
    if dir != Dir::In {
        for e in art.out_edges(node) {
            take(e, e.dst(), "out")?;
        }
    }
    if dir != Dir::Out {
        for e in art.in_edges(node) {
            take(e, e.src(), "in")?;
        }
    }
    ctx.hold(found.len())?;
    found.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(b.1.cmp(&a.1))
            .then(a.2.cmp(&b.2))
            .then(a.4.cmp(b.4))
    });
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    Ok(found
        .into_iter()
        .take(limit)
        .map(|(_, _, e, n, way)| {
            vec![
                ("node", Value::Node(n)),
                ("relationship", Value::Rel(e)),
                ("direction", Value::from(way)),
            ]
        })
        .collect())
}

/// `algo.affected(node_id, depth, relations)`: who depends on the node. Breadth-first
/// over incoming relationships of the given types up to `depth` hops; each node once, at
/// its shortest depth, with the node it was first reached from (`via`, the dependency it
/// uses) and that relationship. Nodes come in order of depth, then of discovery (the
/// in-edges of the nodes one hop closer: source, type, then target order).
///
/// A macro is transparent when `EXPANDS` is followed: the code that expands a macro is
/// reached at the macro's own depth, since a function that invokes `luaC_checkGC` calls
/// what the macro calls (the expansion is where the call happens). Without this, `affected`
/// on Lua at depth 3 found 0.77 of the callers clang's call graph reaches (the rest hide
/// behind macros); see `bench/affected.sh`.
pub(crate) fn affected(ctx: &Ctx<'_>, args: &[Value]) -> ExecResult<Vec<Rec>> {
    const PROC: &str = "algo.affected";
    let start = node_arg(ctx, PROC, args, 0)?;
    let depth = int_arg(PROC, args, 1, "depth", AFFECTED_DEFAULT_DEPTH)?.min(AFFECTED_MAX_DEPTH);
    let relations = rels_arg(PROC, args, 2, &AFFECTED_RELS)?;
    let reached = reverse_reach(ctx, start, depth, &relations)?;
    Ok(reached
        .into_iter()
        .map(|hop| {
            vec![
                ("node", Value::Node(hop.node.0)),
                ("depth", Value::Int(hop.depth)),
                ("via", Value::Node(hop.via.0)),
                ("relationship", Value::Rel(hop.edge)),
            ]
        })
        .collect())
}

/// The depth of a hop that a shorter one replaced.
const SUPERSEDED: i64 = -1;

/// How `algo.affected` reached one node.
struct AffectedHop {
    node: NodeIdx,
    depth: i64,
    via: NodeIdx,
    edge: u32,
}

/// Reverse reachability from `start` within `depth` hops over `relations`, an `EXPANDS` edge
/// into a macro costing no hop: a 0-1 breadth-first search (zero-cost hops go to the front
/// of the queue), each node kept at its smallest depth, in order of depth then discovery.
fn reverse_reach(
    ctx: &Ctx<'_>,
    start: NodeIdx,
    depth: i64,
    relations: &[RelType],
) -> ExecResult<Vec<AffectedHop>> {
    let art = ctx.artifact()?;
    let mut best: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    let mut hops: Vec<AffectedHop> = Vec::new();
    let mut done = RoaringBitmap::new();
    let mut queue: VecDeque<(NodeIdx, i64)> = VecDeque::from([(start, 0)]);
    best.insert(start.0, usize::MAX);
    while let Some((node, node_depth)) = queue.pop_front() {
        if !done.insert(node.0) {
            continue;
        }
        let is_macro = art.node(node).kind() == NodeKind::Macro;
        let in_edges = art.in_edges(node);
        ctx.tick(1 + in_edges.len() as u64)?;
        for edge in in_edges {
            let source = edge.src();
            if !relations.contains(&edge.rel()) || !art.is_live(source) || done.contains(source.0) {
                continue;
            }
            let free = is_macro && edge.rel() == RelType::Expands;
            let source_depth = if free { node_depth } else { node_depth + 1 };
            if source_depth > depth {
                continue;
            }
            let hop = AffectedHop {
                node: source,
                depth: source_depth,
                via: node,
                edge: edge.idx().0,
            };
            match best.get(&source.0) {
                Some(&at) if at == usize::MAX || hops[at].depth <= source_depth => continue,
                // Reached closer than before: the old hop is dropped and the new one listed
                // where it was found, after the node it came through.
                Some(&at) => hops[at].depth = SUPERSEDED,
                None => ctx.hold(1)?,
            }
            best.insert(source.0, hops.len());
            hops.push(hop);
            if free {
                queue.push_front((source, source_depth));
            } else {
                queue.push_back((source, source_depth));
            }
        }
    }
    hops.retain(|hop| hop.depth != SUPERSEDED);
    // Stable: discovery order within a depth.
    hops.sort_by_key(|hop| hop.depth);
    Ok(hops)
}
