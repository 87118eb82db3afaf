//! The comparison itself: files merge-joined by path, nodes matched per file (by position
//! when the file is unchanged, by id otherwise), renames paired, stubs matched by id, and
//! edges compared as multisets over the resulting node matching.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use batho_schema::{NodeKind, RelType};
use batho_storage::format::SegmentKind;
use batho_storage::{Artifact, CONTENT_HASH_LEN, NodeIdx, NodeRef, StoredHash, StrId};

use super::{ChangeKind, DiffStats, EdgeCounts, FileChange, FullDiff, NodeChange, NodeSnapshot};

/// No match in the other generation.
const NONE: u32 = u32::MAX;

/// Whether node `n` belongs to the generation. Every node of a single base layer does;
/// delta layers will tombstone some, and every loop of this module asks here.
#[inline]
fn is_live(_a: &Artifact, _n: u32) -> bool {
    true
}

/// The live nodes of `a`, by index.
fn live_nodes(a: &Artifact) -> impl Iterator<Item = u32> + '_ {
    (0..a.node_count()).filter(move |&n| is_live(a, n))
}

/// The live nodes of a file, ascending.
fn live_in_file(a: &Artifact, path: &str) -> Vec<u32> {
    a.nodes_in_file(path)
        .map(|b| b.iter().filter(|&n| is_live(a, n)).collect())
        .unwrap_or_default()
}

/// The live nodes without a file (external stubs): one pass of integer reads.
fn fileless_nodes(a: &Artifact) -> Vec<u32> {
    match a.find_string("") {
        Some(empty) => live_nodes(a)
            .filter(|&n| a.node(NodeIdx(n)).file_sid() == empty)
            .collect(),
        None => Vec::new(),
    }
}

/// String comparisons between two artifacts: by id when both read the same dictionary
/// segment (string ids then mean the same text), by bytes otherwise (no UTF-8 check).
#[derive(Clone, Copy)]
struct Strings<'a> {
    old: &'a Artifact,
    new: &'a Artifact,
    shared: bool,
}

impl Strings<'_> {
    #[inline]
    fn eq(&self, a: StrId, b: StrId) -> bool {
        if self.shared {
            a == b
        } else {
            self.old.string_bytes(a) == self.new.string_bytes(b)
        }
    }

    /// Whether old node `a` and new node `b` have the same id, without allocating: ids are
    /// stored in the dictionary, or composed from file and qualified name.
    fn same_id(&self, a: NodeRef<'_>, b: NodeRef<'_>) -> bool {
        match (a.id_sid(), b.id_sid()) {
            (Some(x), Some(y)) => self.eq(x, y),
            (None, None) => {
                self.eq(a.qualified_name_sid(), b.qualified_name_sid())
                    && self.eq(a.file_sid(), b.file_sid())
            }
            _ => a.id() == b.id(),
        }
    }

    /// Why a matched pair counts as modified (empty: it does not).
    fn modified_reasons(&self, a: NodeRef<'_>, b: NodeRef<'_>) -> Vec<&'static str> {
        let mut why = Vec::new();
        if a.kind() != b.kind() {
            why.push("kind");
        }
        // The comment above an entity lies outside its hashed text.
        if !self.eq(a.doc_sid(), b.doc_sid()) {
            why.push("doc");
        }
        let (ha, hb) = (a.content_hash(), b.content_hash());
        if ha != ZERO && hb != ZERO {
            if ha == hb {
                // The signature is part of the hashed text: no string to compare.
                return why;
            }
            why.push("content");
        } else if a.end_line().wrapping_sub(a.start_line())
            != b.end_line().wrapping_sub(b.start_line())
            || a.end_byte().wrapping_sub(a.start_byte())
                != b.end_byte().wrapping_sub(b.start_byte())
        {
            why.push("lines");
        }
        if !self.eq(a.signature_sid(), b.signature_sid()) {
            why.push("signature");
        }
        why
    }
}

/// The dictionary segment of a single-layer generation.
fn strings_segment(a: &Artifact) -> Option<[u8; 32]> {
    match a.manifest().layers.as_slice() {
        [l] => l
            .segments
            .iter()
            .find(|s| s.kind == SegmentKind::Strings as u8)
            .map(|s| s.hash),
        _ => None,
    }
}

/// Whether two generations are made of exactly the same segments (then nothing differs).
fn same_segments(a: &Artifact, b: &Artifact) -> bool {
    let segs = |x: &Artifact| -> Vec<(u8, [u8; 32])> {
        x.manifest()
            .layers
            .iter()
            .flat_map(|l| l.segments.iter().map(|s| (s.kind, s.hash)))
            .collect()
    };
    !a.manifest().layers.is_empty() && segs(a) == segs(b)
}

const ZERO: StoredHash = [0; CONTENT_HASH_LEN];

/// How well removed `a` and added `b` pair as a rename: lower is better, `None` when not.
fn rename_score(a: NodeRef<'_>, b: NodeRef<'_>) -> Option<(u8, u32)> {
    if a.kind() != b.kind() || a.kind() == NodeKind::File {
        return None;
    }
    let distance = a.start_line().abs_diff(b.start_line());
    let (ha, hb) = (a.content_hash(), b.content_hash());
    if ha != ZERO && ha == hb {
        return Some((0, distance));
    }
    let (na, nb) = (a.name(), b.name());
    if na.is_empty() || na == nb {
        return None;
    }
    let lines = |n: NodeRef<'_>| n.end_line().wrapping_sub(n.start_line());
    if lines(a) != lines(b) {
        return None;
    }
    let (sa, sb) = (a.signature(), b.signature());
    if sa.is_empty() != sb.is_empty() || (!sa.is_empty() && sa.replace(&*na, &nb) != sb) {
        return None;
    }
    // The text may differ only by the name, written k times (k >= 1).
    let span = |n: NodeRef<'_>| i128::from(n.end_byte()) - i128::from(n.start_byte());
    let (ds, dn) = (span(b) - span(a), nb.len() as i128 - na.len() as i128);
    let fits = if dn == 0 {
        ds == 0
    } else {
        ds % dn == 0 && (1..=64).contains(&(ds / dn))
    };
    fits.then_some((1, distance))
}

struct Work<'a> {
    old: &'a Artifact,
    new: &'a Artifact,
    strings: Strings<'a>,
    /// Old node → its new match (or [`NONE`]).
    map: Vec<u32>,
    /// Whether a new node has an old match.
    matched: Vec<bool>,
    changes: Vec<NodeChange>,
    files: Vec<FileChange>,
    stats: DiffStats,
}

impl Work<'_> {
    fn pair(&mut self, o: u32, n: u32) {
        self.map[o as usize] = n;
        self.matched[n as usize] = true;
    }

    fn push(&mut self, change: ChangeKind, o: Option<u32>, n: Option<u32>, why: Vec<&'static str>) {
        self.changes.push(NodeChange {
            change,
            before: o.map(|o| NodeSnapshot::of(self.old, o)),
            after: n.map(|n| NodeSnapshot::of(self.new, n)),
            changed: why,
        });
    }

    /// A file only in one generation: every node added (or removed).
    fn one_sided(&mut self, path: &str, added: bool) {
        let (a, kind) = if added {
            (self.new, ChangeKind::Added)
        } else {
            (self.old, ChangeKind::Removed)
        };
        let nodes = live_in_file(a, path);
        for &x in &nodes {
            if added {
                self.push(kind, None, Some(x), Vec::new());
            } else {
                self.push(kind, Some(x), None, Vec::new());
            }
        }
        let count = nodes.len() as u64;
        let fc = FileChange {
            path: path.to_string(),
            change: kind,
            added: if added { count } else { 0 },
            removed: if added { 0 } else { count },
            modified: 0,
            renamed: 0,
        };
        if added {
            self.stats.files_added += 1;
            self.stats.nodes_added += count;
        } else {
            self.stats.files_removed += 1;
            self.stats.nodes_removed += count;
        }
        self.files.push(fc);
    }

    /// A file in both generations.
    fn both(&mut self, path: &str) {
        let (old, new) = (self.old, self.new);
        let on = live_in_file(old, path);
        let nn = live_in_file(new, path);
        let file_node = |a: &Artifact, nodes: &[u32]| {
            nodes
                .iter()
                .copied()
                .find(|&x| a.node(NodeIdx(x)).kind() == NodeKind::File)
        };
        let (of, nf) = (file_node(old, &on), file_node(new, &nn));
        // The fast path: the file's bytes are unchanged, so is everything extracted from it.
        if let (Some(of), Some(nf)) = (of, nf) {
            let (ho, hn) = (
                old.node(NodeIdx(of)).content_hash(),
                new.node(NodeIdx(nf)).content_hash(),
            );
            if ho != ZERO && ho == hn && on.len() == nn.len() {
                for (&o, &n) in on.iter().zip(&nn) {
                    self.pair(o, n);
                }
                self.stats.files_skipped_by_hash += 1;
                return;
            }
        }
        // Match by id: by position while the ids agree (the usual case), by a map after.
        let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(on.len().min(nn.len()));
        let positional = on.len() == nn.len()
            && on.iter().zip(&nn).all(|(&o, &n)| {
                self.strings
                    .same_id(old.node(NodeIdx(o)), new.node(NodeIdx(n)))
            });
        let (mut removed, mut added) = (Vec::new(), Vec::new());
        if positional {
            pairs.extend(on.iter().copied().zip(nn.iter().copied()));
        } else {
            let mut by_id: HashMap<Cow<'_, str>, u32> = HashMap::with_capacity(on.len());
            for &o in &on {
                by_id.entry(old.node(NodeIdx(o)).id()).or_insert(o);
            }
            for &n in &nn {
                match by_id.remove(new.node(NodeIdx(n)).id().as_ref()) {
                    Some(o) => pairs.push((o, n)),
                    None => added.push(n),
                }
            }
            removed.extend(by_id.into_values());
            removed.sort_unstable();
        }
        let mut fc = FileChange {
            path: path.to_string(),
            change: ChangeKind::Modified,
            added: 0,
            removed: 0,
            modified: 0,
            renamed: 0,
        };
        let mut file_pair = None;
        for &(o, n) in &pairs {
            self.pair(o, n);
            let (a, b) = (old.node(NodeIdx(o)), new.node(NodeIdx(n)));
            if a.kind() == NodeKind::File {
                file_pair = Some((o, n));
                continue;
            }
            let why = self.strings.modified_reasons(a, b);
            if why.is_empty() {
                if a.start_line() != b.start_line() {
                    self.stats.nodes_moved += 1;
                }
            } else {
                fc.modified += 1;
                self.push(ChangeKind::Modified, Some(o), Some(n), why);
            }
        }
        // Renames: each removed node takes its best added candidate, closest first.
        let mut taken = vec![false; added.len()];
        let mut still_removed = Vec::new();
        for &o in &removed {
            let a = old.node(NodeIdx(o));
            let best = added
                .iter()
                .enumerate()
                .filter(|(k, _)| !taken[*k])
                .filter_map(|(k, &n)| rename_score(a, new.node(NodeIdx(n))).map(|s| (s, k)))
                .min();
            match best {
                Some((_, k)) => {
                    taken[k] = true;
                    let n = added[k];
                    self.pair(o, n);
                    let b = new.node(NodeIdx(n));
                    let mut why = vec!["name"];
                    if a.content_hash() != b.content_hash() {
                        why.push("content");
                    }
                    fc.renamed += 1;
                    self.push(ChangeKind::Renamed, Some(o), Some(n), why);
                }
                None => still_removed.push(o),
            }
        }
        for &o in &still_removed {
            fc.removed += 1;
            self.push(ChangeKind::Removed, Some(o), None, Vec::new());
        }
        for (k, &n) in added.iter().enumerate() {
            if !taken[k] {
                fc.added += 1;
                self.push(ChangeKind::Added, None, Some(n), Vec::new());
            }
        }
        let entities_changed = fc.added + fc.removed + fc.modified + fc.renamed > 0;
        let mut file_changed = entities_changed;
        if let Some((o, n)) = file_pair {
            let mut why = self
                .strings
                .modified_reasons(old.node(NodeIdx(o)), new.node(NodeIdx(n)));
            if entities_changed {
                why.push("entities");
            }
            if !why.is_empty() {
                file_changed = true;
                fc.modified += 1;
                self.push(ChangeKind::Modified, Some(o), Some(n), why);
            }
        }
        self.stats.nodes_added += fc.added;
        self.stats.nodes_removed += fc.removed;
        self.stats.nodes_modified += fc.modified;
        self.stats.nodes_renamed += fc.renamed;
        if file_changed {
            self.stats.files_modified += 1;
            self.files.push(fc);
        }
    }

    /// Nodes with no file (external stubs), matched by id.
    fn fileless(&mut self) {
        let (old, new) = (self.old, self.new);
        let (os, ns) = (fileless_nodes(old), fileless_nodes(new));
        let mut by_id: HashMap<Cow<'_, str>, u32> = HashMap::with_capacity(os.len());
        for &o in &os {
            by_id.entry(old.node(NodeIdx(o)).id()).or_insert(o);
        }
        for &n in &ns {
            match by_id.remove(new.node(NodeIdx(n)).id().as_ref()) {
                Some(o) => {
                    self.pair(o, n);
                    let why = self
                        .strings
                        .modified_reasons(old.node(NodeIdx(o)), new.node(NodeIdx(n)));
                    if !why.is_empty() {
                        self.stats.nodes_modified += 1;
                        self.push(ChangeKind::Modified, Some(o), Some(n), why);
                    }
                }
                None => {
                    self.stats.nodes_added += 1;
                    self.push(ChangeKind::Added, None, Some(n), Vec::new());
                }
            }
        }
        let mut gone: Vec<u32> = by_id.into_values().collect();
        gone.sort_unstable();
        for o in gone {
            self.stats.nodes_removed += 1;
            self.push(ChangeKind::Removed, Some(o), None, Vec::new());
        }
    }

    /// Edge multisets per matched source; unmatched sources lose or gain all their edges.
    fn edges(&mut self) {
        let (old, new) = (self.old, self.new);
        let mut added = [0u64; 256];
        let mut removed = [0u64; 256];
        // (relation code, target) of one source's out-edges, old side mapped to new indexes.
        let mut bo: Vec<(u8, u32)> = Vec::new();
        let mut bn: Vec<(u8, u32)> = Vec::new();
        for o in live_nodes(old) {
            let m = self.map[o as usize];
            if m == NONE {
                for e in old.out_edges(NodeIdx(o)) {
                    removed[e.rel().code() as usize] += 1;
                }
                continue;
            }
            bo.clear();
            // An unmatched target maps to NONE, which no new edge has: a removed edge.
            bo.extend(old.out_edges(NodeIdx(o)).map(|e| {
                let d = self.map.get(e.dst().0 as usize).copied().unwrap_or(NONE);
                (e.rel().code(), d)
            }));
            bn.clear();
            bn.extend(
                new.out_edges(NodeIdx(m))
                    .map(|e| (e.rel().code(), e.dst().0)),
            );
            if bo == bn {
                continue;
            }
            bo.sort_unstable();
            bn.sort_unstable();
            let (mut i, mut j) = (0, 0);
            while i < bo.len() || j < bn.len() {
                match (bo.get(i), bn.get(j)) {
                    (Some(a), Some(b)) if a == b => {
                        i += 1;
                        j += 1;
                    }
                    (Some(a), Some(b)) if a < b => {
                        removed[a.0 as usize] += 1;
                        i += 1;
                    }
                    (Some(a), None) => {
                        removed[a.0 as usize] += 1;
                        i += 1;
                    }
                    (_, Some(b)) => {
                        added[b.0 as usize] += 1;
                        j += 1;
                    }
                    (None, None) => break,
                }
            }
        }
        for n in live_nodes(new) {
            if !self.matched[n as usize] {
                for e in new.out_edges(NodeIdx(n)) {
                    added[e.rel().code() as usize] += 1;
                }
            }
        }
        let mut by_type = BTreeMap::new();
        for r in RelType::ALL {
            let c = EdgeCounts {
                added: added[r.code() as usize],
                removed: removed[r.code() as usize],
            };
            if c.added + c.removed > 0 {
                by_type.insert(r.name(), c);
            }
        }
        self.stats.edges_added = added.iter().sum();
        self.stats.edges_removed = removed.iter().sum();
        self.stats.edges_by_type = by_type;
    }
}

/// Compares every node, file and edge of `old` and `new`.
pub(super) fn compare(old: &Artifact, new: &Artifact) -> FullDiff {
    if same_segments(old, new) {
        return FullDiff {
            stats: DiffStats::default(),
            files: Vec::new(),
            changes: Vec::new(),
        };
    }
    let shared = strings_segment(old).is_some_and(|h| strings_segment(new) == Some(h));
    let mut w = Work {
        old,
        new,
        strings: Strings { old, new, shared },
        map: vec![NONE; old.node_count() as usize],
        matched: vec![false; new.node_count() as usize],
        changes: Vec::new(),
        files: Vec::new(),
        stats: DiffStats::default(),
    };
    let mut of: Vec<Cow<'_, str>> = old.files().collect();
    let mut nf: Vec<Cow<'_, str>> = new.files().collect();
    // Listed in dictionary (byte) order already; sorting again costs little and keeps
    // the merge correct whatever a future layout lists first.
    of.sort_unstable();
    nf.sort_unstable();
    let (mut i, mut j) = (0, 0);
    while i < of.len() || j < nf.len() {
        match (of.get(i), nf.get(j)) {
            (Some(a), Some(b)) if a == b => {
                w.both(a);
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a < b => {
                w.one_sided(a, false);
                i += 1;
            }
            (Some(a), None) => {
                w.one_sided(a, false);
                i += 1;
            }
            (_, Some(b)) => {
                w.one_sided(b, true);
                j += 1;
            }
            (None, None) => break,
        }
    }
    w.fileless();
    w.edges();
    let key = |c: &NodeChange| {
        let s = c.current();
        // Stubs (no file) last.
        (
            s.file.is_empty(),
            s.file.clone(),
            s.start_line,
            s.id.clone(),
            c.change,
        )
    };
    w.changes.sort_by_cached_key(key);
    FullDiff {
        stats: w.stats,
        files: w.files,
        changes: w.changes,
    }
}
