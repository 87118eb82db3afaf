//! Cutting a partial resolution into the [`GraphFragment`] storage lays over the base, and
//! describing what it changes: entity-level change records and the edge delta.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use batho_schema::NodeKind;
use batho_storage::input::{GraphBuilder, NodeIdx, NodeInput};
use batho_storage::{Artifact, GraphFragment, StoredHash};

use crate::algo::stored_floor;
use crate::extract::{IdBuild, mix64};

/// The kind of an entity-level change: the same vocabulary as a diff between generations.
pub use crate::diff::ChangeKind;

/// One side of an entity change.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EntitySnapshot {
    /// Stable id.
    pub id: String,
    /// Simple name.
    pub name: String,
    /// Node kind name.
    pub kind: &'static str,
    /// Repository-relative file.
    pub file: String,
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
}

impl EntitySnapshot {
    /// Node `n` of the artifact.
    fn of_node(base: &Artifact, n: NodeIdx) -> EntitySnapshot {
        let node = base.node(n);
        EntitySnapshot {
            id: node.id().into_owned(),
            name: node.name().into_owned(),
            kind: node.kind().name(),
            file: node.file().into_owned(),
            start_line: node.start_line(),
            end_line: node.end_line(),
        }
    }

    /// Node `n` of a graph being built.
    fn of_input(g: &GraphBuilder, n: &NodeInput) -> EntitySnapshot {
        EntitySnapshot {
            id: g.id_of(n).into_owned(),
            name: g.str(n.name).to_owned(),
            kind: n.kind.name(),
            file: g.str(n.file).to_owned(),
            start_line: n.start_line,
            end_line: n.end_line,
        }
    }
}

/// An entity added, removed, modified or renamed by a patch.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EntityChange {
    /// What happened.
    pub change: ChangeKind,
    /// The entity before (`None` when added).
    pub before: Option<EntitySnapshot>,
    /// The entity after (`None` when removed).
    pub after: Option<EntitySnapshot>,
}

/// The base's nodes of some files (the replaced ones) with the hashes of their ids, in
/// file then node order. Composing a kernel checkout's 450,000 ids took a second;
/// [`cut`], [`changes`] and [`edge_delta`] all need them, and a patch works them out
/// on a thread of its own while the resolution runs.
pub(super) struct BaseIds {
    nodes: Vec<(u64, NodeIdx)>,
}

impl BaseIds {
    /// The nodes of `files` in `base`.
    pub(super) fn of(base: &Artifact, files: &BTreeSet<String>) -> BaseIds {
        let mut nodes = Vec::new();
        for p in files {
            for n in base.nodes_in_file(p).into_iter().flat_map(|bm| bm.iter()) {
                nodes.push((h(base.node(NodeIdx(n)).id().as_bytes()), NodeIdx(n)));
            }
        }
        BaseIds { nodes }
    }
}

/// Keeps, of a partial resolution's graph, the nodes of the replaced files (authoritative)
/// and the nodes their edges reach (context entities and stubs, which stand for the base
/// nodes with their ids), and takes each surviving entity's community and PageRank from the base.
/// Fails with the files of edge sources that are not replaced: such an edge is made by a
/// replaced file but leaves a node of another, which must then be replaced too.
pub(super) fn cut(
    base: &Artifact,
    g: GraphBuilder,
    replaced: &BTreeSet<String>,
    base_ids: &BaseIds,
) -> Result<GraphFragment, BTreeSet<String>> {
    // Whether each string names a replaced file, asked once per file string rather than
    // once per node (a kernel checkout's resolution has millions of nodes).
    let mut replaced_sid: HashMap<u32, bool, IdBuild> = HashMap::default();
    let auth: Vec<bool> = g
        .nodes
        .iter()
        .map(|n| {
            *replaced_sid
                .entry(n.file.0)
                .or_insert_with(|| replaced.contains(g.str(n.file)))
        })
        .collect();
    let mut keep = auth.clone();
    let mut outside = BTreeSet::new();
    for e in &g.edges {
        if !auth[e.src.0 as usize] {
            outside.insert(g.str(g.nodes[e.src.0 as usize].file).to_owned());
        }
        keep[e.dst.0 as usize] = true;
    }
    if !outside.is_empty() {
        return Err(outside);
    }
    // The communities of the replaced files' nodes, by the hash of their id: one pass
    // over those files instead of a search of the whole id index for each of their
    // nodes. (A community is a hint for the reader, not a fact of the graph: two ids of
    // one 64-bit hash would at worst lend one's to the other.)
    // With each one's PageRank: global scores are not recomputed by a patch (every node's
    // would move a little, and the delta would hold the whole graph); a surviving entity
    // keeps its base score and a new one gets the score of a node nobody points at,
    // until the next full build.
    let mut scores: HashMap<u64, (u32, u32), IdBuild> = HashMap::default();
    scores.reserve(base_ids.nodes.len());
    for &(id, n) in &base_ids.nodes {
        scores.entry(id).or_insert_with(|| {
            let b = base.node(n);
            (b.community(), b.pagerank())
        });
    }
    // Nodes are dropped in place: the fragment keeps the resolution's strings, some of
    // them now unused, rather than interning every kept string again (a kernel
    // checkout's fragment has ~450,000 nodes).
    let mut g = g;
    let mut community_of = fragment_communities(base, &g, &auth, &scores);
    let mut map = vec![NodeIdx(u32::MAX); g.nodes.len()];
    let mut nodes = Vec::with_capacity(keep.iter().filter(|&&k| k).count());
    for (i, n) in std::mem::take(&mut g.nodes).into_iter().enumerate() {
        if !keep[i] {
            continue;
        }
        let (community, pagerank) = if auth[i] {
            let id = g.id_of(&n);
            let pagerank = match scores.get(&h(id.as_bytes())) {
                Some(&(_, score)) => score,
                None => base
                    .lookup_id(&id)
                    .map_or(stored_floor(), |b| base.node(b).pagerank()),
            };
            (std::mem::take(&mut community_of[i]), pagerank)
        } else {
            (0, 0)
        };
        map[i] = NodeIdx(nodes.len() as u32);
        nodes.push(NodeInput {
            community,
            pagerank,
            ..n
        });
    }
    g.nodes = nodes;
    // Every edge leaves a replaced node and reaches a kept one (checked above).
    for e in &mut g.edges {
        e.src = map[e.src.0 as usize];
        e.dst = map[e.dst.0 as usize];
    }
    Ok(GraphFragment {
        replaced_files: replaced.clone(),
        graph: g,
    })
}

fn is_entity(k: NodeKind) -> bool {
    !matches!(k, NodeKind::File | NodeKind::External)
}

/// The entity-level changes of the files `replaced` between `base` and graph `g` (a
/// fragment's, or a whole tree's), sorted by change then id.
///
/// Entities are paired by the hash of their id, so that the many that come back
/// unchanged (same id, same content hash) cost no strings; snapshots are made only of
/// the ones that changed. (Snapshotting every entity of a 500-file kernel checkout's
/// 3,400 replaced files into string maps took seconds.)
pub(super) fn changes(
    base: &Artifact,
    replaced: &BTreeSet<String>,
    base_ids: &BaseIds,
    g: &GraphBuilder,
) -> Vec<EntityChange> {
    // (id hash, node, content hash), in the order the entities are met.
    let mut before: Vec<(u64, NodeIdx, StoredHash)> = Vec::new();
    for &(id, n) in &base_ids.nodes {
        let node = base.node(n);
        if is_entity(node.kind()) {
            before.push((id, n, node.content_hash()));
        }
    }
    let mut after: Vec<(u64, usize, StoredHash)> = Vec::new();
    for (i, n) in g.nodes.iter().enumerate() {
        if is_entity(n.kind) && replaced.contains(g.str(n.file)) {
            after.push((h(g.id_of(n).as_bytes()), i, n.content_hash));
        }
    }
    // One entity per id, the last met (duplicate ids are a build's own ambiguity).
    last_per_id(&mut before);
    last_per_id(&mut after);
    let snap_before = |n: NodeIdx| EntitySnapshot::of_node(base, n);
    let snap_after = |i: usize| EntitySnapshot::of_input(g, &g.nodes[i]);
    let mut out = Vec::new();
    let mut removed: Vec<(EntitySnapshot, StoredHash)> = Vec::new();
    let mut added: Vec<(EntitySnapshot, StoredHash)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < before.len() || j < after.len() {
        let b = before.get(i).copied();
        let a = after.get(j).copied();
        match (b, a) {
            (Some(b), Some(a)) if b.0 == a.0 => {
                i += 1;
                j += 1;
                if b.2 == a.2 {
                    continue;
                }
                let (sb, sa) = (snap_before(b.1), snap_after(a.1));
                if sb.id == sa.id {
                    out.push(EntityChange {
                        change: ChangeKind::Modified,
                        before: Some(sb),
                        after: Some(sa),
                    });
                } else {
                    // Two ids with one hash: not the same entity.
                    removed.push((sb, b.2));
                    added.push((sa, a.2));
                }
            }
            (Some(b), a) if a.is_none_or(|a| b.0 < a.0) => {
                i += 1;
                removed.push((snap_before(b.1), b.2));
            }
            (_, Some(a)) => {
                j += 1;
                added.push((snap_after(a.1), a.2));
            }
            (_, None) => break,
        }
    }
    // Renames: a removed entity whose exact text (hash) and kind reappear under a new id;
    // removed ones are taken in id order, each pairing with the added one of smallest id.
    removed.sort_by(|x, y| x.0.id.cmp(&y.0.id));
    added.sort_by(|x, y| y.0.id.cmp(&x.0.id));
    let mut added_by_hash: HashMap<(StoredHash, &'static str), Vec<EntitySnapshot>> =
        HashMap::new();
    for (snap, h) in added {
        added_by_hash.entry((h, snap.kind)).or_default().push(snap);
    }
    for (snap, h) in removed {
        match added_by_hash.get_mut(&(h, snap.kind)).and_then(Vec::pop) {
            Some(a) => out.push(EntityChange {
                change: ChangeKind::Renamed,
                before: Some(snap),
                after: Some(a),
            }),
            None => out.push(EntityChange {
                change: ChangeKind::Removed,
                before: Some(snap),
                after: None,
            }),
        }
    }
    for (_, left) in added_by_hash {
        for a in left {
            out.push(EntityChange {
                change: ChangeKind::Added,
                before: None,
                after: Some(a),
            });
        }
    }
    sort_changes(&mut out);
    out
}

/// Sorts by id hash and keeps, of the entries sharing one, the last (a stable sort keeps
/// them in the order they were met).
fn last_per_id<T: Copy>(v: &mut Vec<(u64, T, StoredHash)>) {
    v.sort_by_key(|x| x.0);
    let mut out = Vec::with_capacity(v.len());
    for (k, x) in v.iter().enumerate() {
        if v.get(k + 1).is_none_or(|next| next.0 != x.0) {
            out.push(*x);
        }
    }
    *v = out;
}

fn sort_changes(out: &mut [EntityChange]) {
    out.sort_by(|a, b| {
        let id = |c: &EntityChange| {
            c.after
                .as_ref()
                .or(c.before.as_ref())
                .map(|s| s.id.clone())
                .unwrap_or_default()
        };
        a.change.cmp(&b.change).then_with(|| id(a).cmp(&id(b)))
    });
}

/// The community of each kept node of a partial resolution: a replaced file's entity keeps
/// the one it had in the base; an entity the base did not have joins the community most
/// of its relationships reach (ties to the lowest id), as one step of label propagation
/// would put it, instead of none: a new function called from one module belongs to it.
/// Communities are recomputed whole by the next full build.
fn fragment_communities(
    base: &Artifact,
    g: &GraphBuilder,
    auth: &[bool],
    base_communities: &HashMap<u64, (u32, u32), IdBuild>,
) -> Vec<u32> {
    const UNKNOWN: u32 = u32::MAX;
    let base_community = |n: &NodeInput| {
        let id = g.id_of(n);
        base_communities
            .get(&h(id.as_bytes()))
            .map(|&(community, _)| community)
            .or_else(|| base.lookup_id(&id).map(|b| base.node(b).community()))
    };
    let mut community_of: Vec<u32> = g
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            if auth[i] {
                base_community(n).unwrap_or(UNKNOWN)
            } else {
                0
            }
        })
        .collect();
    let mut votes: HashMap<usize, BTreeMap<u32, u32>> = HashMap::new();
    // Context entities are looked up only when a new entity reaches them (a kernel
    // fragment keeps ~450,000 nodes; a search of the id index for each would cost seconds).
    let mut context: HashMap<usize, u32> = HashMap::new();
    for e in &g.edges {
        let (src, dst) = (e.src.0 as usize, e.dst.0 as usize);
        for (new, other) in [(src, dst), (dst, src)] {
            if community_of[new] != UNKNOWN {
                continue;
            }
            let neighbour = if auth[other] {
                community_of[other]
            } else {
                *context
                    .entry(other)
                    .or_insert_with(|| base_community(&g.nodes[other]).unwrap_or(0))
            };
            if neighbour != UNKNOWN && neighbour != 0 {
                *votes.entry(new).or_default().entry(neighbour).or_default() += 1;
            }
        }
    }
    for (i, community) in community_of.iter_mut().enumerate() {
        if *community == UNKNOWN {
            // The most votes; among equals the lowest community id.
            *community = votes.get(&i).map_or(0, |tally| {
                tally
                    .iter()
                    .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                    .map_or(0, |(c, _)| *c)
            });
        }
    }
    community_of
}

fn h(s: &[u8]) -> u64 {
    crate::extract::fx_hash(s)
}

/// An edge as a 128-bit key: the hashes of its ends' ids and file, and its rel, roles,
/// strategy and line. Counting added and removed edges needs no strings (a collision
/// could only miscount).
fn edge_key(src: u64, rel: u8, dst: u64, roles: u16, strategy: u8, file: u64, line: u32) -> u128 {
    let small = u64::from(rel) << 56 | u64::from(roles) << 40 | u64::from(strategy) << 32;
    let a = mix64(src ^ mix64(small | u64::from(line)));
    let b = mix64(dst.rotate_left(23) ^ mix64(file ^ a));
    u128::from(a) << 64 | u128::from(b)
}

/// Edges added and removed among those leaving the files `replaced`, between `base` and
/// graph `g` (a fragment's, or a whole tree's): a multiset difference of canonical edges,
/// taken by sorting each side's keys (a hash map of millions of counts cost seconds).
pub(super) fn edge_delta(
    base: &Artifact,
    replaced: &BTreeSet<String>,
    base_ids: &BaseIds,
    g: &GraphBuilder,
) -> (u64, u64) {
    // Edges of many files reach the same few nodes, whose ids may be composed (allocated)
    // on every read: hash each node's id once.
    let mut id_hash: HashMap<u32, u64, IdBuild> = HashMap::default();
    id_hash.extend(base_ids.nodes.iter().map(|&(id, n)| (n.0, id)));
    let mut node_hash = |n: NodeIdx| {
        *id_hash
            .entry(n.0)
            .or_insert_with(|| h(base.node(n).id().as_bytes()))
    };
    // The edges of a file nearly all name that file: hash each file string once.
    let mut base_files: HashMap<u32, u64, IdBuild> = HashMap::default();
    let mut old: Vec<u128> = Vec::new();
    for p in replaced {
        let Some(bm) = base.nodes_in_file(p) else {
            continue;
        };
        for n in bm.iter() {
            let src = node_hash(NodeIdx(n));
            for e in base.out_edges(NodeIdx(n)) {
                let file = *base_files
                    .entry(e.file_sid().0)
                    .or_insert_with(|| h(e.file().as_bytes()));
                old.push(edge_key(
                    src,
                    e.rel().code(),
                    node_hash(e.dst()),
                    e.roles().0,
                    e.strategy().code(),
                    file,
                    e.line(),
                ));
            }
        }
    }
    let ids: Vec<u64> = g.nodes.iter().map(|n| h(g.id_of(n).as_bytes())).collect();
    let leaves: Vec<bool> = g
        .nodes
        .iter()
        .map(|n| replaced.contains(g.str(n.file)))
        .collect();
    let mut files: HashMap<u32, u64, IdBuild> = HashMap::default();
    let mut new: Vec<u128> = Vec::new();
    for e in g.edges.iter().filter(|e| leaves[e.src.0 as usize]) {
        let file = *files
            .entry(e.file.0)
            .or_insert_with(|| h(g.str(e.file).as_bytes()));
        new.push(edge_key(
            ids[e.src.0 as usize],
            e.rel.code(),
            ids[e.dst.0 as usize],
            e.roles.0,
            e.strategy.code(),
            file,
            e.line,
        ));
    }
    old.sort_unstable();
    new.sort_unstable();
    // Merge: keys only in `new` were added, only in `old` removed (with multiplicity).
    let (mut added, mut removed) = (0u64, 0u64);
    let (mut i, mut j) = (0, 0);
    while i < old.len() && j < new.len() {
        match old[i].cmp(&new[j]) {
            std::cmp::Ordering::Less => {
                removed += 1;
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                added += 1;
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
    }
    removed += (old.len() - i) as u64;
    added += (new.len() - j) as u64;
    (added, removed)
}

/// The first, plain versions of [`changes`] and [`edge_delta`], kept as oracles: every
/// patch a test runs checks the fast versions against them (`patch`).
#[cfg(test)]
pub(super) mod reference {
    use super::*;
    use std::collections::BTreeMap;

    /// [`super::changes`] as first written, with strings for every entity: the oracle the tests
    /// check the fast version against.
    ///
    /// The entity-level changes of the files `replaced` between `base` and graph `g` (a
    /// fragment's, or a whole tree's), sorted by change then id.
    pub(in crate::patch) fn changes(
        base: &Artifact,
        replaced: &BTreeSet<String>,
        g: &GraphBuilder,
    ) -> Vec<EntityChange> {
        let mut before: BTreeMap<String, (EntitySnapshot, StoredHash)> = BTreeMap::new();
        for p in replaced {
            let Some(bm) = base.nodes_in_file(p) else {
                continue;
            };
            for n in bm.iter() {
                let node = base.node(NodeIdx(n));
                if !is_entity(node.kind()) {
                    continue;
                }
                let snap = EntitySnapshot::of_node(base, NodeIdx(n));
                before.insert(snap.id.clone(), (snap, node.content_hash()));
            }
        }
        let mut after: BTreeMap<String, (EntitySnapshot, StoredHash)> = BTreeMap::new();
        for n in &g.nodes {
            if !is_entity(n.kind) || !replaced.contains(g.str(n.file)) {
                continue;
            }
            let snap = EntitySnapshot::of_input(g, n);
            after.insert(snap.id.clone(), (snap, n.content_hash));
        }
        let mut out = Vec::new();
        let mut removed: Vec<(EntitySnapshot, StoredHash)> = Vec::new();
        for (id, (snap, h)) in &before {
            match after.get(id) {
                Some((a, ah)) => {
                    if ah != h {
                        out.push(EntityChange {
                            change: ChangeKind::Modified,
                            before: Some(snap.clone()),
                            after: Some(a.clone()),
                        });
                    }
                }
                None => removed.push((snap.clone(), *h)),
            }
        }
        // Renames: a removed entity whose exact text (hash) and kind reappear under a new id.
        let mut added_by_hash: HashMap<(StoredHash, &'static str), Vec<EntitySnapshot>> =
            HashMap::new();
        for (id, (snap, h)) in after.iter().rev() {
            if !before.contains_key(id) {
                added_by_hash
                    .entry((*h, snap.kind))
                    .or_default()
                    .push(snap.clone());
            }
        }
        for (snap, h) in removed {
            match added_by_hash.get_mut(&(h, snap.kind)).and_then(Vec::pop) {
                Some(a) => out.push(EntityChange {
                    change: ChangeKind::Renamed,
                    before: Some(snap),
                    after: Some(a),
                }),
                None => out.push(EntityChange {
                    change: ChangeKind::Removed,
                    before: Some(snap),
                    after: None,
                }),
            }
        }
        for (_, left) in added_by_hash {
            for a in left {
                out.push(EntityChange {
                    change: ChangeKind::Added,
                    before: None,
                    after: Some(a),
                });
            }
        }
        sort_changes(&mut out);
        out
    }

    /// An edge in canonical form: (src id, rel, dst id, roles, strategy, file, line).
    /// An edge by the hashes of its ends' ids and file, plus its other properties: counting
    /// added and removed edges needs no strings (a 64-bit collision could only miscount).
    type EdgeKey = (u64, u8, u64, u16, u8, u64, u32);

    /// [`super::edge_delta`] as first written, with a hash map of counts: the tests' oracle.
    ///
    /// Edges added and removed among those leaving the files `replaced`, between `base` and
    /// graph `g` (a fragment's, or a whole tree's): a multiset difference of canonical edges.
    pub(in crate::patch) fn edge_delta(
        base: &Artifact,
        replaced: &BTreeSet<String>,
        g: &GraphBuilder,
    ) -> (u64, u64) {
        let mut count: HashMap<EdgeKey, i64, IdBuild> = HashMap::default();
        // Edges of many files reach the same few nodes, whose ids may be composed (allocated)
        // on every read: hash each node's id once. 0 stands for "not hashed yet" (a real hash
        // of 0 is only re-hashed).
        let mut id_hash = vec![0u64; base.node_count() as usize];
        let mut node_hash = |n: NodeIdx| {
            let slot = &mut id_hash[n.0 as usize];
            if *slot == 0 {
                *slot = h(base.node(n).id().as_bytes());
            }
            *slot
        };
        // The edges of a file nearly all name that file: hash each file string once.
        let mut base_files: HashMap<u32, u64, IdBuild> = HashMap::default();
        for p in replaced {
            let Some(bm) = base.nodes_in_file(p) else {
                continue;
            };
            for n in bm.iter() {
                let src = node_hash(NodeIdx(n));
                for e in base.out_edges(NodeIdx(n)) {
                    let file = *base_files
                        .entry(e.file_sid().0)
                        .or_insert_with(|| h(e.file().as_bytes()));
                    let key = (
                        src,
                        e.rel().code(),
                        node_hash(e.dst()),
                        e.roles().0,
                        e.strategy().code(),
                        file,
                        e.line(),
                    );
                    *count.entry(key).or_default() -= 1;
                }
            }
        }
        let ids: Vec<u64> = g.nodes.iter().map(|n| h(g.id_of(n).as_bytes())).collect();
        let leaves: Vec<bool> = g
            .nodes
            .iter()
            .map(|n| replaced.contains(g.str(n.file)))
            .collect();
        let mut files: HashMap<u32, u64, IdBuild> = HashMap::default();
        for e in g.edges.iter().filter(|e| leaves[e.src.0 as usize]) {
            let file = *files
                .entry(e.file.0)
                .or_insert_with(|| h(g.str(e.file).as_bytes()));
            let key = (
                ids[e.src.0 as usize],
                e.rel.code(),
                ids[e.dst.0 as usize],
                e.roles.0,
                e.strategy.code(),
                file,
                e.line,
            );
            *count.entry(key).or_default() += 1;
        }
        let added = count.values().filter(|&&c| c > 0).map(|&c| c as u64).sum();
        let removed = count
            .values()
            .filter(|&&c| c < 0)
            .map(|&c| (-c) as u64)
            .sum();
        (added, removed)
    }
}
