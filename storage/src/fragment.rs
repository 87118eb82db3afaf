//! Patch fragments: the new state of some files, laid over a generation's graph.
//!
//! A patch re-extracts and re-resolves a set of files and hands the store a
//! [`GraphFragment`]; [`WriterLock::commit_fragment`] commits the merged graph as a new
//! generation. The merge rules (the contract between storage and the engine's patch,
//! numbered as in `docs/format.md` §9) are computed once, as a [`Plan`] over the current
//! artifact, and then applied: [`materialize_fragment`] turns base + plan into one full graph,
//! which is what a fresh base layer (and compaction) commits and what the delta layer
//! must be indistinguishable from.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};

use roaring::RoaringBitmap;

use crate::error::{Result, StorageError};
use crate::input::{EdgeInput, GraphBuilder, IdText, NodeIdx, NodeInput, StrId};
use crate::manifest::RunRecord;
use crate::reader::Artifact;
use crate::refs::NodeRef;
use crate::store::{CommitInfo, WriterLock};

/// From this many fragment nodes (or overrides) up, [`Plan::compute`] looks their ids up,
/// and compares the overrides with the artifact's nodes, on every core (in tests from a
/// few, so that every fragment test takes the split path).
pub(crate) const PARALLEL_LOOKUPS: usize = if cfg!(test) { 4 } else { 20_000 };

/// The new state of some files, laid over an artifact's current graph by a patch.
#[derive(Clone, Debug, Default)]
pub struct GraphFragment {
    /// Files whose nodes, and the edges leaving those nodes, the fragment replaces wholesale:
    /// changed, added and deleted files, and files whose references were re-resolved.
    /// Paths exactly as `NodeRef::file()` returns them (repository-relative, '/').
    pub replaced_files: BTreeSet<String>,
    /// The new nodes and edges, with strings interned in the builder.
    pub graph: GraphBuilder,
}

impl WriterLock<'_> {
    /// Commits `base` (the current generation, opened by the caller) with `fragment` laid
    /// over it as a new generation, recording `run` (its generation and its node and edge
    /// counts are filled in).
    ///
    /// Fails with [`StorageError::FragmentEdgeNotAuthoritative`] when a fragment edge leaves
    /// a node whose file is not replaced, and with [`StorageError::InvalidFragment`] when
    /// the fragment is malformed; nothing is written then.
    pub fn commit_fragment(
        &mut self,
        base: &Artifact,
        fragment: &GraphFragment,
        run: RunRecord,
    ) -> Result<CommitInfo> {
        self.commit_fragment_with(base, fragment, run, &mut |_| false)
    }
}

/// Marks a fragment node that does not appear in the merged graph (a new stub left without
/// an incoming edge, rule 5).
pub(crate) const DROPPED: u32 = u32::MAX;

/// What laying a fragment over an artifact changes, in the artifact's node and edge index
/// spaces. Node positions `0..base_n` are the artifact's nodes; `base_n + k` is the `k`-th
/// entry of `new_nodes`.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The artifact's node index space.
    pub(crate) base_n: u32,
    /// Fragment node → merged position ([`DROPPED`] for a dropped new stub).
    pub(crate) frag_map: Vec<u32>,
    /// (artifact node, fragment node): nodes whose properties the fragment replaces (rule 1).
    pub(crate) overrides: Vec<(u32, u32)>,
    /// Fragment nodes added as new nodes, in fragment order.
    pub(crate) new_nodes: Vec<u32>,
    /// Artifact nodes removed (rules 3 and 5).
    pub(crate) removed: RoaringBitmap,
    /// Artifact edges dropped (rules 4 and 5).
    pub(crate) dropped: RoaringBitmap,
    /// Per fragment node: it matched an artifact node that already has its properties and
    /// out-edges, so it is no override and its edges are not laid over the artifact.
    pub(crate) unchanged: Vec<bool>,
    /// (artifact node, fragment node): nodes with a delta row that the fragment gives back
    /// exactly their base layer's properties and out-edges (an edit undone). Their row
    /// goes and their base out-edges (`undropped`) come back, rather than an override
    /// row the same as the base (format.md §9.1, rule 1).
    pub(crate) reverted: Vec<(u32, u32)>,
    /// Base edges of `reverted` nodes, no longer dropped.
    pub(crate) undropped: RoaringBitmap,
}

fn invalid(detail: String) -> StorageError {
    StorageError::InvalidFragment { detail }
}

/// Checks that every string id and node index of the fragment is in range, so the rest of
/// the merge can index without panicking.
fn check_shape(g: &GraphBuilder) -> Result<()> {
    let ns = g.string_count();
    for (i, n) in g.nodes.iter().enumerate() {
        let id = match n.id {
            IdText::Text(s) => s,
            IdText::Composed => StrId(0),
        };
        for s in [id, n.name, n.qualified_name, n.file, n.signature, n.doc] {
            if s.0 as usize >= ns {
                return Err(invalid(format!(
                    "node {i} refers to unknown string id {}",
                    s.0
                )));
            }
        }
    }
    let nn = g.nodes.len();
    for (k, e) in g.edges.iter().enumerate() {
        if e.src.0 as usize >= nn || e.dst.0 as usize >= nn {
            return Err(invalid(format!(
                "edge {k} ({} -> {}) refers to a node that does not exist ({nn} nodes)",
                e.src.0, e.dst.0
            )));
        }
        if e.file.0 as usize >= ns {
            return Err(invalid(format!(
                "edge {k} refers to unknown string id {}",
                e.file.0
            )));
        }
    }
    Ok(())
}

/// The indexes of `ids` in the order of their ids; with two threads or more, each half
/// sorted on its own thread and the two merged (sorting a kernel checkout's ~450,000 ids
/// by their strings took 0.2 s on one).
fn sorted_by_id(ids: &[Cow<'_, str>], threads: usize) -> Vec<u32> {
    let key = |x: u32| ids[x as usize].as_ref();
    let sort = |part: &mut [u32]| part.sort_unstable_by(|&x, &y| key(x).cmp(key(y)));
    let mut order: Vec<u32> = (0..ids.len() as u32).collect();
    if threads < 2 {
        sort(&mut order);
        return order;
    }
    let mid = order.len() / 2;
    let (low, high) = order.split_at_mut(mid);
    std::thread::scope(|s| {
        let other = s.spawn(|| sort(low));
        sort(high);
        other
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    });
    let mut out = Vec::with_capacity(order.len());
    let (mut i, mut j) = (0, mid);
    while i < mid && j < order.len() {
        if key(order[j]) < key(order[i]) {
            out.push(order[j]);
            j += 1;
        } else {
            out.push(order[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&order[i..mid]);
    out.extend_from_slice(&order[j..]);
    out
}

impl Plan {
    /// Applies the contract rules to `base` and `fragment`.
    pub(crate) fn compute(base: &Artifact, fragment: &GraphFragment) -> Result<Plan> {
        Plan::compute_with(base, fragment, true)
    }

    /// [`Plan::compute`]; with `keep_unchanged` false every matched node is replaced even
    /// when nothing about it changed (the reference the tests compare the plan with).
    pub(crate) fn compute_with(
        base: &Artifact,
        fragment: &GraphFragment,
        keep_unchanged: bool,
    ) -> Result<Plan> {
        let fg = &fragment.graph;
        check_shape(fg)?;
        let base_n = base.node_count();
        let replaced: HashSet<&str> = fragment.replaced_files.iter().map(String::as_str).collect();
        // Asked once per file string, not once per node (hundreds of thousands of nodes).
        let mut replaced_sid: foldhash::HashMap<u32, bool> = foldhash::HashMap::default();
        let auth: Vec<bool> = fg
            .nodes
            .iter()
            .map(|n| {
                *replaced_sid
                    .entry(n.file.0)
                    .or_insert_with(|| replaced.contains(fg.str(n.file)))
            })
            .collect();
        for (k, e) in fg.edges.iter().enumerate() {
            if !auth[e.src.0 as usize] {
                let n = &fg.nodes[e.src.0 as usize];
                return Err(StorageError::FragmentEdgeNotAuthoritative {
                    edge: k,
                    src_id: fg.id_of(n).into_owned(),
                    src_file: fg.str(n.file).to_owned(),
                });
            }
        }

        let mut frag_map = vec![DROPPED; fg.nodes.len()];
        let mut overrides = Vec::new();
        let mut new_nodes: Vec<u32> = Vec::new();
        let mut claimed = RoaringBitmap::new();
        let mut by_id: foldhash::HashMap<&str, u32> = foldhash::HashMap::default();
        by_id.reserve(fg.nodes.len());
        let next = |new_nodes: &Vec<u32>| base_n + new_nodes.len() as u32;

        // The live nodes with each fragment node's id. Looked up in ascending id order, each
        // search starts where the previous one stopped: a patch's fragment holds hundreds
        // of thousands of nodes, and a search of the whole id index costs ~23 comparisons.
        let ids: Vec<Cow<'_, str>> = fg.nodes.iter().map(|n| fg.id_of(n)).collect();
        let mut live_with_id: Vec<Vec<NodeIdx>> = vec![Vec::new(); fg.nodes.len()];
        // A large fragment's look-ups are split into runs of the sorted order, one cursor
        // and thread each (a kernel checkout's ~450,000 took a second on one).
        let threads = if ids.len() < PARALLEL_LOOKUPS {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        };
        let order = sorted_by_id(&ids, threads);
        let runs = order.chunks(order.len().div_ceil(threads).max(1));
        let found: Vec<Vec<Vec<NodeIdx>>> = std::thread::scope(|s| {
            let handles: Vec<_> = runs
                .map(|run| {
                    let ids = &ids;
                    s.spawn(move || {
                        let mut cursor = base.id_cursor();
                        run.iter()
                            .map(|&i| cursor.nodes_with_id(&ids[i as usize]))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        for (&i, live) in order.iter().zip(found.into_iter().flatten()) {
            live_with_id[i as usize] = live;
        }

        // Rule 1: authoritative nodes take over the live node with their id, if any.
        for (i, id) in ids.iter().enumerate() {
            if !auth[i] {
                continue;
            }
            // Duplicate ids (which only a build's own ambiguity produces) pair up in
            // index order, so edges into the second duplicate survive too.
            let free = live_with_id[i]
                .iter()
                .copied()
                .find(|b| !claimed.contains(b.0));
            let at = match free {
                Some(b) => {
                    claimed.insert(b.0);
                    overrides.push((b.0, i as u32));
                    b.0
                }
                None => {
                    let at = next(&new_nodes);
                    new_nodes.push(i as u32);
                    at
                }
            };
            frag_map[i] = at;
            by_id.entry(id).or_insert(at);
        }

        // Rule 3: the rest of the replaced files' nodes go.
        let mut removed = RoaringBitmap::new();
        for f in &fragment.replaced_files {
            if let Some(bm) = base.nodes_in_file(f) {
                for b in bm {
                    if !claimed.contains(b) {
                        removed.insert(b);
                    }
                }
            }
        }

        // Rule 2: other fragment nodes stand for the node with their id; unknown ones are
        // new (one node per id).
        for (i, id) in ids.iter().enumerate() {
            if auth[i] {
                continue;
            }
            let at = if let Some(&at) = by_id.get(id.as_ref()) {
                at
            } else {
                // The lowest index, as `lookup_id` answers.
                let at = match live_with_id[i].iter().min() {
                    Some(b) if !removed.contains(b.0) => b.0,
                    _ => {
                        let at = next(&new_nodes);
                        new_nodes.push(i as u32);
                        at
                    }
                };
                by_id.insert(id.as_ref(), at);
                at
            };
            frag_map[i] = at;
        }

        // An override that changes nothing is no override: the artifact node keeps its
        // row and its edges (the merged graph is the same either way; the delta is not).
        let unchanged = if keep_unchanged {
            crate::fragment_same::unchanged_overrides(base, fg, &frag_map, &overrides)
        } else {
            vec![false; fg.nodes.len()]
        };
        overrides.retain(|&(_, i)| !unchanged[i as usize]);
        // An override that gives a node with a delta row back what the base layer holds
        // (an edit undone, a checkout and back) takes the row out of the delta instead, so
        // that a delta does not keep rewriting rows the same as the base.
        let mut reverted = Vec::new();
        let mut undropped = RoaringBitmap::new();
        if keep_unchanged && let Some(d) = &base.delta {
            let rowed: Vec<(u32, u32)> = overrides
                .iter()
                .filter(|&&(b, _)| b < d.base_n && d.row_of(base, b).is_some())
                .copied()
                .collect();
            if !rowed.is_empty() {
                let layer = base.base_only()?;
                let same = crate::fragment_same::unchanged_overrides(&layer, fg, &frag_map, &rowed);
                for &(b, i) in &rowed {
                    if same[i as usize] {
                        reverted.push((b, i));
                        undropped.extend(layer.out_edges(NodeIdx(b)).map(|e| e.idx().0));
                    }
                }
                overrides.retain(|&(_, i)| !same[i as usize]);
            }
        }

        // Rule 4: the out-edges of replaced and overridden nodes, and the in-edges of
        // removed ones, are dropped. Stubs losing an incoming edge are rule-5 candidates.
        let mut dropped = RoaringBitmap::new();
        let mut candidates: Vec<u32> = Vec::new();
        let is_stub = |b: u32| base.node(NodeIdx(b)).file().is_empty() && !claimed.contains(b);
        // (A reverted node's delta-row edges go too: their targets may be orphaned stubs.)
        let mut sources: Vec<u32> = overrides.iter().map(|&(b, _)| b).collect();
        sources.extend(reverted.iter().map(|&(b, _)| b));
        sources.extend(removed.iter());
        for &b in &sources {
            for e in base.out_edges(NodeIdx(b)) {
                if dropped.insert(e.idx().0) && is_stub(e.dst().0) {
                    candidates.push(e.dst().0);
                }
            }
        }
        for b in removed.iter() {
            for e in base.in_edges(NodeIdx(b)) {
                dropped.insert(e.idx().0);
            }
        }

        // Rule 5: stubs left without an incoming edge go (their out-edges with them, which
        // can orphan further stubs).
        // The nodes some fragment edge reaches.
        let frag_in: RoaringBitmap = fg
            .edges
            .iter()
            .map(|e| frag_map[e.dst.0 as usize])
            .collect();
        while let Some(c) = candidates.pop() {
            if removed.contains(c) || frag_in.contains(c) {
                continue;
            }
            if base
                .in_edges(NodeIdx(c))
                .any(|e| !dropped.contains(e.idx().0))
            {
                continue;
            }
            removed.insert(c);
            for e in base.out_edges(NodeIdx(c)) {
                if dropped.insert(e.idx().0) && is_stub(e.dst().0) {
                    candidates.push(e.dst().0);
                }
            }
        }
        // New stubs nothing points at are not created at all; the survivors are renumbered.
        let mut kept = Vec::with_capacity(new_nodes.len());
        let mut renum = vec![DROPPED; new_nodes.len()];
        for (k, &i) in new_nodes.iter().enumerate() {
            let at = base_n + k as u32;
            let stub = fg.str(fg.nodes[i as usize].file).is_empty();
            if !stub || frag_in.contains(at) {
                renum[k] = base_n + kept.len() as u32;
                kept.push(i);
            }
        }
        for m in &mut frag_map {
            if *m != DROPPED && *m >= base_n {
                *m = renum[(*m - base_n) as usize];
            }
        }
        Ok(Plan {
            base_n,
            frag_map,
            overrides,
            new_nodes: kept,
            removed,
            dropped,
            unchanged,
            reverted,
            undropped,
        })
    }
}

/// `n` as a builder node of `g` (strings interned).
pub(crate) fn node_input(g: &mut GraphBuilder, node: NodeRef<'_>) -> NodeInput {
    NodeInput {
        id: match node.id_sid() {
            Some(_) => IdText::Text(g.intern(&node.id())),
            None => IdText::Composed,
        },
        name: g.intern(&node.name()),
        qualified_name: g.intern(&node.qualified_name()),
        kind: node.kind(),
        file: g.intern(&node.file()),
        language: node.language(),
        start_line: node.start_line(),
        end_line: node.end_line(),
        start_byte: node.start_byte(),
        end_byte: node.end_byte(),
        signature: g.intern(&node.signature()),
        doc: g.intern(&node.doc()),
        content_hash: node.content_hash(),
        flags: node.flags(),
        community: node.community(),
        pagerank: node.pagerank(),
    }
}

/// The builder string of each artifact string already interned (`u32::MAX`: not yet).
struct StrMemo(Vec<u32>);

impl StrMemo {
    fn new(base: &Artifact) -> StrMemo {
        StrMemo(vec![u32::MAX; base.string_count() as usize])
    }

    fn get(&mut self, g: &mut GraphBuilder, base: &Artifact, s: StrId) -> StrId {
        match self.0.get(s.0 as usize) {
            Some(&v) if v != u32::MAX => StrId(v),
            Some(_) => {
                let id = g.intern(&base.string(s));
                self.0[s.0 as usize] = id.0;
                id
            }
            None => g.intern(&base.string(s)),
        }
    }

    /// [`node_input`] through the memo.
    fn node_input(
        &mut self,
        g: &mut GraphBuilder,
        base: &Artifact,
        node: NodeRef<'_>,
    ) -> NodeInput {
        NodeInput {
            id: match node.id_sid() {
                Some(s) => IdText::Text(self.get(g, base, s)),
                None => IdText::Composed,
            },
            name: self.get(g, base, node.name_sid()),
            qualified_name: self.get(g, base, node.qualified_name_sid()),
            kind: node.kind(),
            file: self.get(g, base, node.file_sid()),
            language: node.language(),
            start_line: node.start_line(),
            end_line: node.end_line(),
            start_byte: node.start_byte(),
            end_byte: node.end_byte(),
            signature: self.get(g, base, node.signature_sid()),
            doc: self.get(g, base, node.doc_sid()),
            content_hash: node.content_hash(),
            flags: node.flags(),
            community: node.community(),
            pagerank: node.pagerank(),
        }
    }
}

/// `n` of builder `from` re-interned into `to`.
pub(crate) fn copy_node(to: &mut GraphBuilder, from: &GraphBuilder, n: &NodeInput) -> NodeInput {
    let mut s = |id: StrId| to.intern(from.str(id));
    NodeInput {
        id: match n.id {
            IdText::Text(id) => IdText::Text(s(id)),
            IdText::Composed => IdText::Composed,
        },
        name: s(n.name),
        qualified_name: s(n.qualified_name),
        file: s(n.file),
        signature: s(n.signature),
        doc: s(n.doc),
        ..n.clone()
    }
}

/// The merged graph of `base` with `fragment` laid over it, as one full graph. Surviving
/// live nodes of `base` come first in index order (so indexes shift only past a removed
/// node), then the fragment's new nodes; base edges in index order, then the fragment's.
pub fn materialize_fragment(base: &Artifact, fragment: &GraphFragment) -> Result<GraphBuilder> {
    let plan = Plan::compute(base, fragment)?;
    Ok(apply(base, fragment, &plan))
}

pub(crate) fn apply(base: &Artifact, fragment: &GraphFragment, plan: &Plan) -> GraphBuilder {
    let fg = &fragment.graph;
    let base_n = plan.base_n;
    let mut out = GraphBuilder::new();
    // A reverted node is an override here: the merged graph takes the fragment's node
    // and edges, which are its base layer's.
    let over: HashMap<u32, u32> = plan
        .overrides
        .iter()
        .chain(&plan.reverted)
        .copied()
        .collect();
    let mut map = vec![DROPPED; base_n as usize + plan.new_nodes.len()];
    // Each string of the artifact is interned once, not once per use: a kernel-size
    // graph names the same file and signature strings tens of millions of times.
    let mut memo = StrMemo::new(base);
    for b in 0..base_n {
        if plan.removed.contains(b) || !base.is_live(NodeIdx(b)) {
            continue;
        }
        let input = match over.get(&b) {
            Some(&i) => copy_node(&mut out, fg, &fg.nodes[i as usize]),
            None => memo.node_input(&mut out, base, base.node(NodeIdx(b))),
        };
        map[b as usize] = out.add_node(input).0;
    }
    for (k, &i) in plan.new_nodes.iter().enumerate() {
        let input = copy_node(&mut out, fg, &fg.nodes[i as usize]);
        map[base_n as usize + k] = out.add_node(input).0;
    }
    for b in 0..base_n {
        if map[b as usize] == DROPPED {
            continue;
        }
        for e in base.out_edges(NodeIdx(b)) {
            let dst = map.get(e.dst().0 as usize).copied().unwrap_or(DROPPED);
            if plan.dropped.contains(e.idx().0) || dst == DROPPED {
                continue;
            }
            let file = memo.get(&mut out, base, e.file_sid());
            let sites = e.copy_sites_to(&mut out);
            out.add_edge(EdgeInput {
                src: NodeIdx(map[b as usize]),
                dst: NodeIdx(dst),
                rel: e.rel(),
                roles: e.roles(),
                confidence: e.confidence(),
                strategy: e.strategy(),
                file,
                line: e.line(),
                sites,
            });
        }
    }
    for e in &fg.edges {
        if plan.unchanged[e.src.0 as usize] {
            continue;
        }
        let (s, d) = (
            plan.frag_map[e.src.0 as usize],
            plan.frag_map[e.dst.0 as usize],
        );
        let (s, d) = (map[s as usize], map[d as usize]);
        let file = out.intern(fg.str(e.file));
        let sites = crate::delta_write::copy_sites(&mut out, fg, e);
        out.add_edge(EdgeInput {
            src: NodeIdx(s),
            dst: NodeIdx(d),
            file,
            sites,
            ..e.clone()
        });
    }
    out
}

impl WriterLock<'_> {
    /// `commit_fragment` with the crash hook of [`WriterLock::commit_with`].
    pub(crate) fn commit_fragment_with(
        &mut self,
        base: &Artifact,
        fragment: &GraphFragment,
        run: RunRecord,
        crash: &mut dyn FnMut(crate::store::CommitStep) -> bool,
    ) -> Result<CommitInfo> {
        self.check_current(base)?;
        let plan = Plan::compute(base, fragment)?;
        let delta = crate::delta_write::delta_input(base, fragment, &plan);
        if delta.exceeds(base.n, base.e, self.delta_limit_percent) {
            let g = apply(base, fragment, &plan);
            return self.commit_with(&g, run, crash);
        }
        let built = crate::delta_write::build_delta(base, &delta, base.db_uuid())?;
        let below = base.manifest().layers[0].clone();
        self.commit_layer_with(&built, Some(below), run, crash)
    }

    /// A fragment laid over anything but the current graph would silently undo the
    /// generations committed since `base`.
    fn check_current(&self, base: &Artifact) -> Result<()> {
        let cur = self.store().current_manifest()?;
        match cur {
            Some(m) if m.layers == base.manifest().layers && m.db_uuid == base.db_uuid() => Ok(()),
            _ => Err(invalid(format!(
                "the base artifact (generation {}) is not the current graph of {}; reopen it and patch again",
                base.generation(),
                self.store().dir().display()
            ))),
        }
    }
}

#[cfg(test)]
#[path = "fragment_tests.rs"]
pub(crate) mod tests;
