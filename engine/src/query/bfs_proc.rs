//! `algo.bfs(start, depth, types, direction, avoid)`: the start node (distance 0, no
//! relationship) and the nodes within `depth` hops of it, each once, at its shortest
//! distance, with the relationship it was first reached by; the nodes of `avoid` are
//! never entered (not reported, not walked through). The start always comes back, so a
//! query that goes on from the walk keeps its row even when nothing is reached. It reads the graph only through [`Topology`], so it answers on code graphs and on
//! writable graphs alike; the ctx-tree tools walk session graphs with it.
//!
//! A variable-length pattern (`-[*1..5]-`) enumerates every path, and a session graph has a
//! root that every top-level node hangs from, so two hops through it already reach every
//! node by as many paths as the root has children; a breadth-first walk visits each node
//! once.

use std::collections::VecDeque;

use batho_lang::Value;
use batho_lang::ast::Direction;

use super::exec::{Ctx, ExecError, ExecResult};
use super::expand::EdgeFilter;
use super::proc_args::{Rec, bad, int_arg, node_set_arg};

const PROCEDURE: &str = "algo.bfs";
/// The default depth, and the deepest walk allowed (a session graph's neighbourhood
/// beyond a few hops is the whole graph).
const DEFAULT_DEPTH: i64 = 1;
const MAX_DEPTH: i64 = 10;

/// See the module documentation. Records come in discovery order: by distance, then in the
/// order the graph stores each node's relationships (outgoing first).
pub(crate) fn bfs(ctx: &Ctx<'_>, args: &[Value]) -> ExecResult<Vec<Rec>> {
    let start = start_node(args)?;
    let depth = int_arg(PROCEDURE, args, 1, "depth", DEFAULT_DEPTH)?;
    if depth > MAX_DEPTH {
        return Err(ExecError::Unsupported(format!(
            "{PROCEDURE}(): argument `depth` is at most {MAX_DEPTH}, got {depth}"
        )));
    }
    let filter = type_filter(args)?;
    let direction = direction_arg(args)?;
    // Argument 4: nodes never to enter (`null`: none).
    let mut seen = node_set_arg(PROCEDURE, args, 4, "avoid")?;
    seen.insert(start);
    let mut frontier = VecDeque::from([(start, 0i64)]);
    let mut records = vec![vec![
        ("node", Value::Node(start)),
        ("distance", Value::Int(0)),
        ("relationship", Value::Null),
    ]];
    while let Some((node, distance)) = frontier.pop_front() {
        if distance == depth {
            continue;
        }
        let mut reached = Vec::new();
        ctx.topology
            .for_each_neighbor(node, direction, &filter, |relationship, other| {
                if seen.insert(other) {
                    reached.push((relationship, other));
                }
            });
        ctx.tick(reached.len() as u64 + 1)?;
        ctx.hold(reached.len())?;
        for (relationship, other) in reached {
            frontier.push_back((other, distance + 1));
            records.push(vec![
                ("node", Value::Node(other)),
                ("distance", Value::Int(distance + 1)),
                ("relationship", Value::Rel(relationship)),
            ]);
        }
    }
    Ok(records)
}

fn start_node(args: &[Value]) -> ExecResult<u32> {
    match args.first() {
        Some(Value::Node(node)) => Ok(*node),
        None | Some(Value::Null) => Err(ExecError::Unsupported(format!(
            "{PROCEDURE}(): argument `start` is required (a node)"
        ))),
        Some(other) => Err(bad(PROCEDURE, "start", "a node", other)),
    }
}

/// Argument 2: relationship type names to follow (`null` or empty: every type).
fn type_filter(args: &[Value]) -> ExecResult<EdgeFilter<'static>> {
    let names: Vec<String> = match args.get(2) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::List(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(name) => Ok(name.clone()),
                other => Err(bad(PROCEDURE, "types", "a list of type names", other)),
            })
            .collect::<ExecResult<_>>()?,
        Some(other) => return Err(bad(PROCEDURE, "types", "a list of type names", other)),
    };
    // Code graphs filter by type code: names map onto the schema's relation types.
    let codes = names
        .iter()
        .map(|name| {
            batho_schema::RelType::from_name(name)
                .map(|rel| 1u32 << u32::from(rel.code().min(31)))
                .unwrap_or(0)
        })
        .fold(0u32, |mask, bit| mask | bit);
    Ok(EdgeFilter {
        types: (!names.is_empty()).then_some(codes),
        type_names: names,
        roles: Vec::new(),
    })
}

/// Argument 3: `'out'`, `'in'` or `'both'` (the default).
fn direction_arg(args: &[Value]) -> ExecResult<Direction> {
    match args.get(3) {
        None | Some(Value::Null) => Ok(Direction::Both),
        Some(Value::String(text)) => match text.to_ascii_lowercase().as_str() {
            "out" | "outgoing" => Ok(Direction::Outgoing),
            "in" | "incoming" => Ok(Direction::Incoming),
            "both" | "any" => Ok(Direction::Both),
            _ => Err(ExecError::Unsupported(format!(
                "{PROCEDURE}(): argument `direction` must be 'out', 'in' or 'both', got '{text}'"
            ))),
        },
        Some(other) => Err(bad(PROCEDURE, "direction", "'out', 'in' or 'both'", other)),
    }
}
