//! Graph operators: node scans over kind bitmaps, index seeks, CSR expansion (fixed and
//! variable length), shortest paths by bidirectional BFS, and path binding.

use std::collections::{HashMap, HashSet};

use batho_lang::Value;
use batho_lang::ast::{Direction, Expr};
use batho_lang::plan::{SeekKey, regex_literal_prefix};
use batho_schema::NodeKind;
use batho_storage::session::IndexHits;
use batho_storage::{Artifact, NodeIdx, RoaringBitmap};

use super::exec::{BoxOp, Ctx, ExecError, ExecResult, Operator, Row};
use super::id_order::ScanOrder;
use super::topology::Topology;

/// Which edges an expansion may follow.
#[derive(Clone)]
pub(crate) struct EdgeFilter<'a> {
    /// Code graphs: bit `code` set for each allowed relation type; `None` = any type.
    pub(crate) types: Option<u32>,
    /// Writable graphs: the allowed type names; empty = any type.
    pub(crate) type_names: Vec<String>,
    /// Pushed-down role predicates: the edge must be in every bitmap.
    pub(crate) roles: Vec<&'a RoaringBitmap>,
}

impl EdgeFilter<'_> {
    #[inline]
    pub(crate) fn admits_type(&self, code: u8) -> bool {
        self.types
            .is_none_or(|m| m & (1u32 << u32::from(code.min(31))) != 0)
    }

    #[inline]
    pub(crate) fn admits_roles(&self, e: u32) -> bool {
        self.roles.iter().all(|b| b.contains(e))
    }
}

fn node_of(v: Option<&Value>) -> Option<u32> {
    match v {
        Some(Value::Node(n)) => Some(*n),
        _ => None,
    }
}

/// Whether relationship `e` is held by one of the `unique_with` columns of `row`.
fn used_in(row: &[Value], cols: &[usize], e: u32) -> bool {
    cols.iter().any(|&c| match row.get(c) {
        Some(Value::Rel(r)) => *r == e,
        Some(Value::List(l)) => l.iter().any(|v| matches!(v, Value::Rel(r) if *r == e)),
        _ => false,
    })
}

/// Binds every node of the source, for each input row.
pub(crate) struct NodeScan<'a> {
    pub(crate) input: BoxOp<'a>,
    /// Label alternatives; empty = every node.
    pub(crate) labels: Vec<String>,
    /// The order the ids must come in.
    pub(crate) order: ScanOrder,
    pub(crate) cur: Option<(Row, Box<dyn Iterator<Item = u32> + 'a>)>,
}

impl<'a> Operator<'a> for NodeScan<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.cur = None;
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        loop {
            if let Some((row, it)) = &mut self.cur
                && let Some(n) = it.next()
            {
                ctx.tick(1)?;
                let mut out = Vec::with_capacity(row.len() + 1);
                out.extend_from_slice(row);
                out.push(Value::Node(n));
                return Ok(Some(out));
            }
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            self.cur = Some((row, ctx.topology.scan(&self.labels, self.order)));
        }
    }
}

/// Looks nodes up by `id`, `name` or name prefix through the sorted indexes (or, unoptimised, by a
/// full scan comparing the property).
pub(crate) struct NodeSeek<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) key: SeekKey,
    pub(crate) value: Expr,
    /// Allowed kind codes on code graphs; `None` = any.
    pub(crate) kinds: Option<Vec<u8>>,
    /// Allowed labels on writable graphs; empty = any.
    pub(crate) labels: Vec<String>,
    pub(crate) use_index: bool,
    pub(crate) cur: Option<(Row, IndexHits)>,
}

impl NodeSeek<'_> {
    fn lookup(&self, ctx: &Ctx<'_>, v: &Value) -> ExecResult<IndexHits> {
        let Some(art) = ctx.topology.artifact() else {
            return self.compare_all(ctx, v);
        };
        self.lookup_in_artifact(ctx, art, v).map(IndexHits::from)
    }

    fn lookup_in_artifact(&self, ctx: &Ctx<'_>, art: &Artifact, v: &Value) -> ExecResult<Vec<u32>> {
        let Value::String(s) = v else {
            // id and name are strings: nothing else is equal to them.
            return Ok(Vec::new());
        };
        if self.use_index && self.key == SeekKey::NameRegex {
            let found = self.regex_candidates(art, s);
            ctx.tick(found.len() as u64)?;
            return Ok(found);
        }
        let found: Vec<u32> = if self.use_index {
            match self.key {
                SeekKey::Id => art.lookup_id(s).map(|n| n.0).into_iter().collect(),
                SeekKey::Name => art.lookup_name(s).map(|n| n.0).collect(),
                SeekKey::NamePrefix => art.lookup_name_prefix(s).map(|n| n.0).collect(),
                // Answered above, kinds included; kept correct should that ever change.
                SeekKey::NameRegex => self.regex_candidates(art, s),
            }
        } else {
            let mut out = Vec::new();
            for n in 0..art.node_count() {
                ctx.tick(1)?;
                if !art.is_live(NodeIdx(n)) {
                    continue;
                }
                let node = art.node(NodeIdx(n));
                let hit = match self.key {
                    SeekKey::Id => node.id_is(s),
                    SeekKey::Name => node.name() == s.as_str(),
                    SeekKey::NamePrefix => node.name().starts_with(s.as_str()),
                    // The regex itself is the filter above; the naive seek keeps all.
                    SeekKey::NameRegex => true,
                };
                if hit {
                    out.push(n);
                }
            }
            out
        };
        let found = self.of_kinds(art, found);
        ctx.tick(found.len() as u64)?;
        Ok(found)
    }

    /// On a writable graph, where `id` and `name` are properties like any other: the
    /// index on the label and key when there is one, else every node of the labels whose
    /// property compares as the seek asks.
    fn compare_all(&self, ctx: &Ctx<'_>, wanted: &Value) -> ExecResult<IndexHits> {
        if let (SeekKey::Id | SeekKey::Name, [label]) = (self.key, self.labels.as_slice())
            && let Some(found) =
                super::index_seek::lookup(&ctx.topology, label, self.key.property(), wanted)
        {
            ctx.tick(1 + found.len() as u64)?;
            return Ok(found);
        }
        let graph = ctx.eval.graph();
        let mut found = Vec::new();
        for n in ctx.topology.scan(&self.labels, ScanOrder::Any) {
            ctx.tick(1)?;
            let value = graph.node_prop(n, self.key.property());
            let hit = match (self.key, &value, wanted) {
                (SeekKey::Id | SeekKey::Name, _, _) => value.equals(wanted) == Some(true),
                (SeekKey::NamePrefix, Value::String(have), Value::String(prefix)) => {
                    have.starts_with(prefix.as_str())
                }
                (SeekKey::NamePrefix, _, _) => false,
                // The regex filter above decides.
                (SeekKey::NameRegex, _, _) => true,
            };
            if hit {
                found.push(n);
            }
        }
        Ok(IndexHits::from(found))
    }

    /// Keeps the nodes of the allowed kinds.
    fn of_kinds(&self, art: &Artifact, mut nodes: Vec<u32>) -> Vec<u32> {
        if let Some(kinds) = &self.kinds {
            nodes.retain(|&n| kinds.contains(&art.node(NodeIdx(n)).kind().code()));
        }
        nodes
    }

    /// The nodes of the allowed kinds whose name can match the regex `pattern`: the
    /// name-index range of its literal prefix, or, without one, every node of those kinds
    /// straight from their bitmaps (the regex filter above decides).
    fn regex_candidates(&self, art: &Artifact, pattern: &str) -> Vec<u32> {
        match (regex_literal_prefix(pattern), &self.kinds) {
            (Some(prefix), _) => {
                let range = art.lookup_name_prefix(&prefix).map(|n| n.0).collect();
                self.of_kinds(art, range)
            }
            (None, Some(kinds)) => {
                let mut all = RoaringBitmap::new();
                for k in kinds.iter().filter_map(|&c| NodeKind::from_code(c)) {
                    all |= art.nodes_of_kind(k);
                }
                all.iter().collect()
            }
            (None, None) => (0..art.node_count())
                .filter(|&n| art.is_live(NodeIdx(n)))
                .collect(),
        }
    }
}

impl<'a> Operator<'a> for NodeSeek<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.cur = None;
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        loop {
            if let Some((row, it)) = &mut self.cur
                && let Some(n) = it.next()
            {
                let mut out = super::exec::last_or_clone(row, it.len(), 1);
                out.push(Value::Node(n));
                return Ok(Some(out));
            }
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            let v = ctx.eval(&self.value, &row)?;
            let found = self.lookup(ctx, &v)?;
            self.cur = Some((row, found));
        }
    }
}

/// Single-hop expansion over the CSR.
pub(crate) struct Expand<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) from: usize,
    /// Column of the already bound end (ExpandInto).
    pub(crate) into: Option<usize>,
    pub(crate) dir: Direction,
    pub(crate) filter: EdgeFilter<'a>,
    pub(crate) unique_with: Vec<usize>,
    pub(crate) buf: Vec<(u32, u32)>,
    pub(crate) pos: usize,
    pub(crate) row: Option<Row>,
}

impl<'a> Operator<'a> for Expand<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.row = None;
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        loop {
            if let Some(row) = &self.row
                && let Some(&(e, other)) = self.buf.get(self.pos)
            {
                self.pos += 1;
                let mut out = Vec::with_capacity(row.len() + 2);
                out.extend_from_slice(row);
                out.push(Value::Rel(e));
                if self.into.is_none() {
                    out.push(Value::Node(other));
                }
                return Ok(Some(out));
            }
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            self.buf.clear();
            self.pos = 0;
            if let Some(n) = node_of(row.get(self.from)) {
                let target = match self.into {
                    Some(c) => match node_of(row.get(c)) {
                        Some(t) => Some(t),
                        None => continue,
                    },
                    None => None,
                };
                let buf = &mut self.buf;
                let (uw, r) = (&self.unique_with, &row);
                ctx.topology
                    .for_each_neighbor(n, self.dir, &self.filter, |e, o| {
                        if target.is_none_or(|t| t == o) && !used_in(r, uw, e) {
                            buf.push((e, o));
                        }
                    });
                ctx.tick(1 + self.buf.len() as u64)?;
            }
            self.row = Some(row);
        }
    }
}

pub(crate) struct Frame {
    edges: Vec<(u32, u32)>,
    pos: usize,
}

pub(crate) struct VarState {
    row: Row,
    target: Option<u32>,
    stack: Vec<Frame>,
    path: Vec<u32>,
    /// Endpoint mode: the nodes to emit.
    ends: std::vec::IntoIter<u32>,
}

/// Variable-length expansion.
///
/// By default a depth-first search over trails (no relationship twice in one path, as
/// openCypher requires), streaming one path per row. When the relationship list is never
/// read and only distinct endpoints matter (`endpoints_only`, decided by the planner), a
/// breadth-first search with one visited set per start node finds each reachable node
/// once instead of enumerating every path to it.
pub(crate) struct VarExpand<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) from: usize,
    pub(crate) into: Option<usize>,
    pub(crate) dir: Direction,
    pub(crate) filter: EdgeFilter<'a>,
    pub(crate) unique_with: Vec<usize>,
    pub(crate) min: u32,
    pub(crate) max: u32,
    pub(crate) endpoints_only: bool,
    pub(crate) state: Option<VarState>,
}

impl VarExpand<'_> {
    fn frame(&self, ctx: &Ctx<'_>, n: u32, row: &[Value], path: &[u32]) -> ExecResult<Frame> {
        let mut edges = Vec::new();
        ctx.topology
            .for_each_neighbor(n, self.dir, &self.filter, |e, o| {
                if !path.contains(&e) && !used_in(row, &self.unique_with, e) {
                    edges.push((e, o));
                }
            });
        ctx.tick(1 + edges.len() as u64)?;
        Ok(Frame { edges, pos: 0 })
    }

    fn reachable(&self, ctx: &Ctx<'_>, start: u32, row: &[Value]) -> ExecResult<Vec<u32>> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        if self.min == 0 {
            out.push(start);
        }
        let mut frontier = vec![start];
        let mut depth = 0;
        while depth < self.max && !frontier.is_empty() {
            depth += 1;
            let mut next = Vec::new();
            for &n in &frontier {
                let mut steps = 0u64;
                ctx.topology
                    .for_each_neighbor(n, self.dir, &self.filter, |e, o| {
                        steps += 1;
                        if !used_in(row, &self.unique_with, e) && seen.insert(o) {
                            next.push(o);
                        }
                    });
                ctx.tick(1 + steps)?;
            }
            // Nodes first reached at depth >= min are endpoints; with min <= 1 that is all
            // of them (the planner only picks this mode for min <= 1).
            out.extend(next.iter().copied().filter(|&o| self.min > 0 || o != start));
            frontier = next;
        }
        Ok(out)
    }
}

impl<'a> Operator<'a> for VarExpand<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.state = None;
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        loop {
            if let Some(st) = &mut self.state {
                if self.endpoints_only {
                    if let Some(n) = st.ends.next() {
                        let mut out = st.row.clone();
                        out.push(Value::List(Vec::new()));
                        out.push(Value::Node(n));
                        return Ok(Some(out));
                    }
                    self.state = None;
                    continue;
                }
                let Some(top) = st.stack.last_mut() else {
                    self.state = None;
                    continue;
                };
                let Some(&(e, other)) = top.edges.get(top.pos) else {
                    st.stack.pop();
                    if !st.stack.is_empty() {
                        st.path.pop();
                    }
                    continue;
                };
                top.pos += 1;
                if st.path.contains(&e) {
                    continue;
                }
                st.path.push(e);
                let depth = st.path.len() as u32;
                let emit = depth >= self.min && st.target.is_none_or(|t| t == other);
                let result = emit.then(|| {
                    let mut out = st.row.clone();
                    out.push(Value::List(
                        st.path.iter().map(|&r| Value::Rel(r)).collect(),
                    ));
                    if self.into.is_none() {
                        out.push(Value::Node(other));
                    }
                    out
                });
                if depth < self.max {
                    let (row, path) = (&st.row, &st.path);
                    let f = {
                        let mut edges = Vec::new();
                        ctx.topology
                            .for_each_neighbor(other, self.dir, &self.filter, |e, o| {
                                if !path.contains(&e) && !used_in(row, &self.unique_with, e) {
                                    edges.push((e, o));
                                }
                            });
                        ctx.tick(1 + edges.len() as u64)?;
                        Frame { edges, pos: 0 }
                    };
                    st.stack.push(f);
                } else {
                    st.path.pop();
                }
                if let Some(r) = result {
                    return Ok(Some(r));
                }
                continue;
            }
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            let Some(start) = node_of(row.get(self.from)) else {
                continue;
            };
            let target = match self.into {
                Some(c) => match node_of(row.get(c)) {
                    Some(t) => Some(t),
                    None => continue,
                },
                None => None,
            };
            if self.endpoints_only {
                let ends = self.reachable(ctx, start, &row)?;
                self.state = Some(VarState {
                    row,
                    target,
                    stack: Vec::new(),
                    path: Vec::new(),
                    ends: ends.into_iter(),
                });
                continue;
            }
            let stack = if self.max > 0 {
                vec![self.frame(ctx, start, &row, &[])?]
            } else {
                Vec::new()
            };
            let zero = (self.min == 0 && target.is_none_or(|t| t == start)).then(|| {
                let mut out = row.clone();
                out.push(Value::List(Vec::new()));
                if self.into.is_none() {
                    out.push(Value::Node(start));
                }
                out
            });
            self.state = Some(VarState {
                row,
                target,
                stack,
                path: Vec::new(),
                ends: Vec::new().into_iter(),
            });
            if let Some(z) = zero {
                return Ok(Some(z));
            }
        }
    }
}

/// `shortestPath` / `allShortestPaths` between two bound nodes.
/// A condition every hop of a shortest path must meet: `all(r IN rels WHERE …)` in a
/// `WHERE` right above the search, tested on each relationship as the search crosses it,
/// so the search finds the shortest path among those whose hops all pass (not the
/// shortest path, then a filter that may leave nothing).
pub(crate) struct HopCondition {
    /// What each relationship must make true, bound against one column: the
    /// quantifier's variable, the relationship.
    pub(crate) predicate: Expr,
}

pub(crate) struct ShortestPath<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) from: usize,
    pub(crate) to: usize,
    pub(crate) dir: Direction,
    pub(crate) filter: EdgeFilter<'a>,
    pub(crate) hop: Option<HopCondition>,
    pub(crate) min: u32,
    pub(crate) max: u32,
    pub(crate) all: bool,
    pub(crate) out: std::vec::IntoIter<Row>,
}

type Parents = HashMap<u32, (u32, u32, u32)>; // node -> (depth, parent, edge)

impl ShortestPath<'_> {
    /// Whether the search may cross relationship `e` (the first evaluation error is kept
    /// in `failure`, and the relationship refused).
    fn admits(&self, ctx: &Ctx<'_>, e: u32, failure: &mut Option<ExecError>) -> bool {
        let Some(hop) = &self.hop else {
            return true;
        };
        match ctx.eval(&hop.predicate, &[Value::Rel(e)]) {
            Ok(Value::Bool(true)) => true,
            Ok(_) => false,
            Err(error) => {
                failure.get_or_insert(error);
                false
            }
        }
    }

    /// Bidirectional BFS: grows the smaller frontier one full level at a time and, when
    /// the frontiers meet, keeps the meeting node with the smallest total length.
    fn one(&self, ctx: &Ctx<'_>, s: u32, t: u32) -> ExecResult<Option<(Vec<u32>, Vec<u32>)>> {
        let mut fw: Parents = HashMap::from([(s, (0, s, u32::MAX))]);
        let mut bw: Parents = HashMap::from([(t, (0, t, u32::MAX))]);
        let (mut ff, mut bf) = (vec![s], vec![t]);
        let (mut df, mut db) = (0u32, 0u32);
        while !ff.is_empty() && !bf.is_empty() && df + db < self.max {
            let forward = ff.len() <= bf.len();
            let (front, mine, other, dir, depth) = if forward {
                (&mut ff, &mut fw, &bw, self.dir, &mut df)
            } else {
                (&mut bf, &mut bw, &fw, self.dir.reversed(), &mut db)
            };
            *depth += 1;
            let mut next = Vec::new();
            let mut best: Option<(u32, u32)> = None; // (total, meeting node)
            let mut failure = None;
            for &n in front.iter() {
                let mut steps = 0u64;
                ctx.topology
                    .for_each_neighbor(n, dir, &self.filter, |e, o| {
                        steps += 1;
                        if mine.contains_key(&o) || !self.admits(ctx, e, &mut failure) {
                            return;
                        }
                        mine.insert(o, (*depth, n, e));
                        next.push(o);
                        if let Some(&(od, _, _)) = other.get(&o) {
                            let total = *depth + od;
                            if best.is_none_or(|(b, _)| total < b) {
                                best = Some((total, o));
                            }
                        }
                    });
                ctx.tick(1 + steps)?;
            }
            if let Some(error) = failure {
                return Err(error);
            }
            if let Some((total, m)) = best {
                if total > self.max {
                    return Ok(None);
                }
                return Ok(Some(join(&fw, &bw, m)));
            }
            *front = next;
        }
        Ok(None)
    }

    /// Every shortest path, by bidirectional BFS keeping every parent on the previous
    /// level. When the level just grown meets the other side, each shortest path passes
    /// through exactly one meeting node of that level (its node at that depth), so the
    /// paths are the products of the prefixes and suffixes through each meeting node.
    fn all(&self, ctx: &Ctx<'_>, s: u32, t: u32) -> ExecResult<Vec<(Vec<u32>, Vec<u32>)>> {
        let mut fw: Multi = HashMap::from([(s, (0, Vec::new()))]);
        let mut bw: Multi = HashMap::from([(t, (0, Vec::new()))]);
        let (mut ff, mut bf) = (vec![s], vec![t]);
        let (mut df, mut db) = (0u32, 0u32);
        while !ff.is_empty() && !bf.is_empty() && df + db < self.max {
            let forward = ff.len() <= bf.len();
            let (front, mine, other, dir, depth) = if forward {
                (&mut ff, &mut fw, &bw, self.dir, &mut df)
            } else {
                (&mut bf, &mut bw, &fw, self.dir.reversed(), &mut db)
            };
            *depth += 1;
            let d = *depth;
            let mut next = Vec::new();
            let mut failure = None;
            for &n in front.iter() {
                let mut steps = 0u64;
                ctx.topology
                    .for_each_neighbor(n, dir, &self.filter, |e, o| {
                        steps += 1;
                        if !self.admits(ctx, e, &mut failure) {
                            return;
                        }
                        match mine.get_mut(&o) {
                            Some((od, ps)) if *od == d => ps.push((n, e)),
                            Some(_) => {}
                            None => {
                                mine.insert(o, (d, vec![(n, e)]));
                                next.push(o);
                            }
                        }
                    });
                ctx.tick(1 + steps)?;
            }
            if let Some(error) = failure {
                return Err(error);
            }
            let total = next
                .iter()
                .filter_map(|o| other.get(o).map(|(od, _)| d + od))
                .min();
            if let Some(total) = total {
                let meet: Vec<u32> = next
                    .iter()
                    .copied()
                    .filter(|o| other.get(o).is_some_and(|(od, _)| d + od == total))
                    .collect();
                let mut out = Vec::new();
                for m in meet {
                    let heads = chains(ctx, &fw, m)?;
                    let tails = chains(ctx, &bw, m)?;
                    for (hn, hr) in &heads {
                        for (tn, tr) in &tails {
                            ctx.tick(1)?;
                            let mut nodes = hn.clone();
                            nodes.extend(tn.iter().rev().skip(1));
                            let mut rels = hr.clone();
                            rels.extend(tr.iter().rev());
                            out.push((nodes, rels));
                        }
                    }
                }
                return Ok(out);
            }
            *front = next;
        }
        Ok(Vec::new())
    }
}

/// Node -> (BFS depth, every (parent, edge) on the previous level).
type Multi = HashMap<u32, (u32, Vec<(u32, u32)>)>;

/// Every (nodes, rels) chain from the BFS root to `m`, root first.
fn chains(ctx: &Ctx<'_>, map: &Multi, m: u32) -> ExecResult<Vec<(Vec<u32>, Vec<u32>)>> {
    let mut out = Vec::new();
    let mut stack: Vec<(u32, Vec<u32>, Vec<u32>)> = vec![(m, vec![m], Vec::new())];
    while let Some((n, nodes, rels)) = stack.pop() {
        ctx.tick(1)?;
        match map.get(&n) {
            Some((_, ps)) if !ps.is_empty() => {
                for &(p, e) in ps.iter().rev() {
                    let mut nn = nodes.clone();
                    nn.push(p);
                    let mut rr = rels.clone();
                    rr.push(e);
                    stack.push((p, nn, rr));
                }
            }
            _ => {
                let (mut nodes, mut rels) = (nodes, rels);
                nodes.reverse();
                rels.reverse();
                out.push((nodes, rels));
            }
        }
    }
    Ok(out)
}

fn join(fw: &Parents, bw: &Parents, m: u32) -> (Vec<u32>, Vec<u32>) {
    let (mut nodes, mut rels) = (vec![m], Vec::new());
    let mut n = m;
    while let Some(&(d, p, e)) = fw.get(&n) {
        if d == 0 {
            break;
        }
        nodes.push(p);
        rels.push(e);
        n = p;
    }
    nodes.reverse();
    rels.reverse();
    let mut n = m;
    while let Some(&(d, p, e)) = bw.get(&n) {
        if d == 0 {
            break;
        }
        nodes.push(p);
        rels.push(e);
        n = p;
    }
    (nodes, rels)
}

impl<'a> Operator<'a> for ShortestPath<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        if self.min > 1 {
            return Err(ExecError::Unsupported(
                "shortestPath with a minimum length above 1 is not supported".into(),
            ));
        }
        self.out = Vec::new().into_iter();
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        loop {
            if let Some(r) = self.out.next() {
                return Ok(Some(r));
            }
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            let (Some(s), Some(t)) = (node_of(row.get(self.from)), node_of(row.get(self.to)))
            else {
                continue;
            };
            let paths = if s == t {
                if self.min == 0 {
                    vec![(vec![s], Vec::new())]
                } else {
                    Vec::new()
                }
            } else if self.all {
                self.all(ctx, s, t)?
            } else {
                self.one(ctx, s, t)?.into_iter().collect()
            };
            let rows: Vec<Row> = paths
                .into_iter()
                .map(|(nodes, rels)| {
                    let mut out = row.clone();
                    let list = rels.iter().map(|&r| Value::Rel(r)).collect();
                    out.push(Value::Path { nodes, rels });
                    out.push(Value::List(list));
                    out
                })
                .collect();
            self.out = rows.into_iter();
        }
    }
}

/// Builds a path value from a start node and relationship columns.
pub(crate) struct BindPath<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) start: usize,
    pub(crate) rels: Vec<usize>,
}

impl BindPath<'_> {
    fn path(topology: &Topology<'_>, row: &[Value], start: usize, rels: &[usize]) -> Value {
        let Some(mut cur) = node_of(row.get(start)) else {
            return Value::Null;
        };
        let (mut nodes, mut ids) = (vec![cur], Vec::new());
        for &c in rels {
            let list: Vec<u32> = match row.get(c) {
                Some(Value::Rel(r)) => vec![*r],
                Some(Value::List(l)) => {
                    let mut v = Vec::with_capacity(l.len());
                    for x in l {
                        match x {
                            Value::Rel(r) => v.push(*r),
                            _ => return Value::Null,
                        }
                    }
                    v
                }
                _ => return Value::Null,
            };
            for r in list {
                let (s, d) = topology.endpoints(r);
                cur = if s == cur { d } else { s };
                nodes.push(cur);
                ids.push(r);
            }
        }
        Value::Path { nodes, rels: ids }
    }
}

impl<'a> Operator<'a> for BindPath<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        let Some(mut row) = self.input.next(ctx)? else {
            return Ok(None);
        };
        let p = Self::path(&ctx.topology, &row, self.start, &self.rels);
        row.push(p);
        Ok(Some(row))
    }
}
