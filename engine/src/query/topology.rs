//! The graph a query reads: a code-graph artifact (mmap'd, read-only) or a writable
//! graph (in memory, changed by the statement as it runs). The graph operators reach
//! nodes and relationships only through [`Topology`], so one executor serves both.
//!
//! A writable graph sits in a `RefCell` because update operators change it while the
//! operators below them still read it; every read borrows it for one call only, and scans
//! copy their candidate ids first, so a write never invalidates a scan in progress.

use std::cell::{Ref, RefCell};

use batho_lang::ast::Direction;
use batho_schema::NodeKind;
use batho_storage::session::WritableGraph;
use batho_storage::text::query::TextQuery;
use batho_storage::{Artifact, EdgeIdx, NodeIdx, RoaringBitmap};

use super::expand::EdgeFilter;
use super::id_order::ScanOrder;
use super::writable_access::WritableState;

/// See the module documentation.
#[derive(Clone, Copy)]
pub(crate) enum Topology<'a> {
    /// A code graph.
    Code(&'a Artifact),
    /// A writable graph and the statement's journal.
    Writable(&'a RefCell<WritableState>),
}

impl<'a> Topology<'a> {
    /// The artifact of a code graph.
    pub(crate) fn artifact(&self) -> Option<&'a Artifact> {
        match self {
            Topology::Code(artifact) => Some(artifact),
            Topology::Writable(_) => None,
        }
    }

    fn writable(state: &RefCell<WritableState>) -> Ref<'_, WritableGraph> {
        Ref::map(state.borrow(), |s| &s.graph)
    }

    /// The nodes carrying any of `labels` (every live node when empty), for one scan, in
    /// `order`.
    pub(crate) fn scan(
        &self,
        labels: &[String],
        order: ScanOrder,
    ) -> Box<dyn Iterator<Item = u32> + 'a> {
        match *self {
            Topology::Code(artifact) if labels.is_empty() => {
                let live = move |n: &u32| artifact.is_live(NodeIdx(*n));
                let ids = 0..artifact.node_count();
                match order {
                    ScanOrder::Descending => Box::new(ids.rev().filter(live)),
                    ScanOrder::Any | ScanOrder::Ascending => Box::new(ids.filter(live)),
                }
            }
            Topology::Code(artifact) => {
                let bitmaps: Vec<&'a RoaringBitmap> = labels
                    .iter()
                    .filter_map(|l| NodeKind::from_name(l))
                    .map(|kind| artifact.nodes_of_kind(kind))
                    .collect();
                match order {
                    // Kinds are disjoint (a node has one), so chaining their bitmaps never
                    // repeats a node; only an ordered scan pays for the union.
                    ScanOrder::Any => Box::new(bitmaps.into_iter().flat_map(|b| b.iter())),
                    _ => ordered(union(bitmaps), order),
                }
            }
            Topology::Writable(state) => {
                let graph = Self::writable(state);
                // A copy, so that a write during the scan never disturbs it.
                let nodes = if labels.is_empty() {
                    graph.nodes().clone()
                } else {
                    // Labels are not exclusive here: a union visits each node once.
                    union(labels.iter().filter_map(|l| graph.nodes_with_label(l)))
                };
                ordered(nodes, order)
            }
        }
    }

    /// Calls `f(relationship, other_end)` for each relationship at `n` in direction `dir`
    /// passing `filter`. An undirected expansion sees a self-loop once.
    #[inline]
    pub(crate) fn for_each_neighbor(
        &self,
        n: u32,
        dir: Direction,
        filter: &EdgeFilter<'_>,
        f: impl FnMut(u32, u32),
    ) {
        match self {
            Topology::Code(artifact) => code_neighbors(artifact, n, dir, filter, f),
            Topology::Writable(state) => {
                writable_neighbors(&Self::writable(state), n, dir, filter, f)
            }
        }
    }

    /// A writable graph's text search, best first, at most `limit` (`None` on a code
    /// graph, or without a text index).
    pub(crate) fn text_search(&self, query: &TextQuery, limit: usize) -> Option<Vec<(u32, f64)>> {
        match self {
            Topology::Code(_) => None,
            Topology::Writable(state) => Self::writable(state).text_search(query, limit),
        }
    }

    /// A writable graph's text scores of the nodes of `among` that match `query` (`None`
    /// on a code graph, or without a text index).
    pub(crate) fn text_scores(
        &self,
        query: &TextQuery,
        among: &RoaringBitmap,
    ) -> Option<Vec<(u32, f64)>> {
        match self {
            Topology::Code(_) => None,
            Topology::Writable(state) => Self::writable(state).text_scores(query, among),
        }
    }

    /// `(start, end)` of a relationship.
    pub(crate) fn endpoints(&self, rel: u32) -> (u32, u32) {
        match self {
            Topology::Code(artifact) => {
                let edge = artifact.edge(EdgeIdx(rel));
                (edge.src().0, edge.dst().0)
            }
            Topology::Writable(state) => Self::writable(state)
                .relationship_ends(rel)
                .map_or((u32::MAX, u32::MAX), |(_, start, end)| (start, end)),
        }
    }
}

fn code_neighbors(
    artifact: &Artifact,
    n: u32,
    dir: Direction,
    filter: &EdgeFilter<'_>,
    mut f: impl FnMut(u32, u32),
) {
    if matches!(dir, Direction::Outgoing | Direction::Both) {
        for e in artifact.out_edges(NodeIdx(n)) {
            if filter.admits_type(e.rel().code()) && filter.admits_roles(e.idx().0) {
                f(e.idx().0, e.dst().0);
            }
        }
    }
    if matches!(dir, Direction::Incoming | Direction::Both) {
        for e in artifact.in_edges(NodeIdx(n)) {
            if !filter.admits_type(e.rel().code()) || !filter.admits_roles(e.idx().0) {
                continue;
            }
            let src = e.src().0;
            if dir == Direction::Both && src == n && e.dst().0 == n {
                continue;
            }
            f(e.idx().0, src);
        }
    }
}

fn union<'b>(bitmaps: impl IntoIterator<Item = &'b RoaringBitmap>) -> RoaringBitmap {
    let mut union = RoaringBitmap::new();
    for bitmap in bitmaps {
        union |= bitmap;
    }
    union
}

fn ordered(nodes: RoaringBitmap, order: ScanOrder) -> Box<dyn Iterator<Item = u32>> {
    match order {
        ScanOrder::Descending => Box::new(nodes.into_iter().rev()),
        ScanOrder::Any | ScanOrder::Ascending => Box::new(nodes.into_iter()),
    }
}

fn writable_neighbors(
    graph: &WritableGraph,
    n: u32,
    dir: Direction,
    filter: &EdgeFilter<'_>,
    mut f: impl FnMut(u32, u32),
) {
    // Type names are resolved per call: a statement may create a type after planning.
    let wanted: Option<Vec<u32>> = (!filter.type_names.is_empty()).then(|| {
        filter
            .type_names
            .iter()
            .filter_map(|t| graph.type_id(t))
            .collect()
    });
    if wanted.as_ref().is_some_and(Vec::is_empty) {
        return;
    }
    let admits = |rel: u32| {
        wanted.as_ref().is_none_or(|ids| {
            graph
                .relationship_type_id(rel)
                .is_some_and(|t| ids.contains(&t))
        })
    };
    if matches!(dir, Direction::Outgoing | Direction::Both) {
        for &rel in graph.outgoing(n) {
            if admits(rel)
                && let Some((_, _, end)) = graph.relationship_ends(rel)
            {
                f(rel, end);
            }
        }
    }
    if matches!(dir, Direction::Incoming | Direction::Both) {
        for &rel in graph.incoming(n) {
            if let Some((_, start, end)) = graph.relationship_ends(rel)
                && admits(rel)
                && !(dir == Direction::Both && start == n && end == n)
            {
                f(rel, start);
            }
        }
    }
}
