//! Full structural verification of an opened artifact (`batho fix`'s check phase).
//!
//! Opening only checks what is O(1); [`Artifact::verify`] checks everything else in
//! O(nodes + edges + strings): string table order and UTF-8, code ranges, string ids,
//! CSR monotonicity and targets, the in-CSR permutation, index order and agreement with
//! the columns, every bitmap against the columns it is derived from, and with `deep` the
//! blake3 of every segment against its name.

use std::cell::RefCell;
use std::cmp::Ordering;

use batho_schema::{Language, NodeKind, RelType, Roles, Strategy};
use roaring::RoaringBitmap;

use crate::bitmaps::{Family, decode};
use crate::column::UIntCol;
use crate::reader::Artifact;

/// One problem found by [`Artifact::verify`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// The structure checked (`"strings"`, `"nodes.id_index"`, `"edges.in_csr"`, a segment path…).
    pub what: String,
    /// What is wrong.
    pub detail: String,
}

impl std::fmt::Display for Issue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.detail)
    }
}

/// Reports at most this many issues per check, so a wrecked artifact gives a readable list.
const MAX_PER_CHECK: usize = 5;

struct Report {
    issues: Vec<Issue>,
}

impl Report {
    fn add(&mut self, what: &str, detail: String) {
        if self.issues.iter().filter(|i| i.what == what).count() < MAX_PER_CHECK {
            self.issues.push(Issue {
                what: what.to_owned(),
                detail,
            });
        }
    }
}

/// An independent part of [`Artifact::verify`]; parts can run on separate threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VerifyPart {
    /// blake3 of every segment against its name.
    Hashes,
    /// Side tables (exceptions, sparse ranks) of every integer column.
    Columns,
    /// String table order and UTF-8.
    Strings,
    /// Node columns, codes, string ids and the id/name indexes.
    Nodes,
    /// Out-CSR order, targets, source hints, the in-CSR permutation.
    Edges,
    /// Every bitmap against the columns it is derived from.
    Bitmaps,
    /// The delta layer, if any: strings, rows, indexes, CSRs and tombstones (D1–D6).
    Delta,
}

impl VerifyPart {
    /// The structural parts (everything but [`VerifyPart::Hashes`]).
    pub const STRUCTURE: [VerifyPart; 6] = [
        VerifyPart::Columns,
        VerifyPart::Strings,
        VerifyPart::Nodes,
        VerifyPart::Edges,
        VerifyPart::Bitmaps,
        VerifyPart::Delta,
    ];
}

impl Artifact {
    /// Checks the whole artifact structurally; with `deep`, also re-hashes every segment.
    /// An empty result means the artifact is sound.
    pub fn verify(&self, deep: bool) -> Vec<Issue> {
        let mut out = Vec::new();
        if deep {
            out.extend(self.verify_part(VerifyPart::Hashes));
        }
        for part in VerifyPart::STRUCTURE {
            out.extend(self.verify_part(part));
        }
        out
    }

    /// Runs one part of [`Artifact::verify`].
    pub fn verify_part(&self, part: VerifyPart) -> Vec<Issue> {
        let mut r = Report { issues: Vec::new() };
        match part {
            VerifyPart::Hashes => self.verify_hashes(&mut r),
            VerifyPart::Columns => {
                for (name, col, p) in self.all_uint_columns() {
                    if let Some(d) = col.check_exceptions(p) {
                        r.add(name, d);
                    }
                }
            }
            VerifyPart::Strings => self.verify_strings(&mut r),
            VerifyPart::Nodes => self.verify_nodes(&mut r),
            VerifyPart::Edges => self.verify_edges(&mut r),
            VerifyPart::Bitmaps => self.verify_bitmaps(&mut r),
            VerifyPart::Delta => self.verify_delta(&mut r.issues),
        }
        r.issues
    }

    fn verify_hashes(&self, r: &mut Report) {
        for s in &self.segs {
            if blake3::hash(&s.map).as_bytes() != &s.hash {
                r.add(
                    &s.path.display().to_string(),
                    format!(
                        "{} segment content does not match its blake3 name",
                        s.kind.name()
                    ),
                );
            }
        }
    }

    fn all_uint_columns(&self) -> Vec<(&'static str, &UIntCol, &[u8])> {
        let (n, e, b) = (&self.nodes, &self.edges, &self.bitmaps);
        let (np, ep, bp) = (self.np(), self.ep(), self.bp());
        vec![
            ("strings.block_offsets", self.strings.offsets(), self.sp()),
            ("nodes.type", &n.node_type, np),
            ("nodes.type_palette", &n.type_palette, np),
            ("nodes.start_line", &n.start_line, np),
            ("nodes.line_span", &n.line_span, np),
            ("nodes.start_byte", &n.start_byte, np),
            ("nodes.byte_span", &n.byte_span, np),
            ("nodes.community", &n.community, np),
            ("nodes.pagerank", &n.pagerank, np),
            ("nodes.id", &n.id, np),
            ("nodes.name", &n.name, np),
            ("nodes.qualified_name", &n.qualified_name, np),
            ("nodes.file", &n.file, np),
            ("nodes.signature", &n.signature, np),
            ("nodes.doc", &n.doc, np),
            ("nodes.id_index", &n.id_index, np),
            ("nodes.name_index", &n.name_index, np),
            ("edges.out_offsets", &e.out_offsets, ep),
            ("edges.dst", &e.dst, ep),
            ("edges.block_src", &e.block_src, ep),
            ("edges.type", &e.edge_type, ep),
            ("edges.type_palette", &e.type_palette, ep),
            ("edges.line", &e.line, ep),
            ("edges.file_override", &e.file_override, ep),
            ("edges.in_offsets", &e.in_offsets, ep),
            ("edges.in_perm", &e.in_perm, ep),
            ("edges.site_offsets", &e.site_offsets, ep),
            ("edges.sites", &e.sites, ep),
            ("bitmaps.kind_offsets", &b.kinds.offsets, bp),
            ("bitmaps.rel_offsets", &b.rels.offsets, bp),
            ("bitmaps.role_offsets", &b.roles.offsets, bp),
            ("bitmaps.file_keys", &b.file_keys, bp),
            ("bitmaps.file_offsets", &b.files.offsets, bp),
        ]
    }

    fn verify_strings(&self, r: &mut Report) {
        self.strings.check(self.sp(), |d| r.add("strings", d));
    }

    fn verify_nodes(&self, r: &mut Report) {
        let p = self.np();
        let nc = &self.nodes;
        let sc = u64::from(self.base_string_count());
        for problem in self.text.check(p, sc) {
            r.add("nodes.text", problem);
        }
        for k in 0..nc.type_palette.len() {
            let t = nc.type_palette.get(p, k);
            if NodeKind::from_code(t as u8).is_none()
                || Language::from_code((t >> 16) as u8).is_none()
                || t >> 24 != 0
            {
                r.add(
                    "nodes.type_palette",
                    format!("entry {k} ({t:#x}) is not a valid (kind, flags, language)"),
                );
            }
        }
        let types = nc.type_palette.len() as u64;
        for i in 0..self.n as usize {
            if nc.node_type.get(p, i) >= types {
                r.add(
                    "nodes.type",
                    format!("node {i} has a type code outside the palette"),
                );
            }
            for (name, c) in [
                ("nodes.start_line", &nc.start_line),
                ("nodes.line_span", &nc.line_span),
                ("nodes.community", &nc.community),
                ("nodes.pagerank", &nc.pagerank),
            ] {
                if c.get(p, i) > u64::from(u32::MAX) {
                    r.add(name, format!("node {i} value out of range"));
                }
            }
            if nc.qualified_name.get(p, i) > sc {
                r.add(
                    "nodes.qualified_name",
                    format!("node {i} refers to an unknown string"),
                );
            }
            if nc.id.get(p, i) > sc {
                r.add(
                    "nodes.id",
                    format!("node {i} refers to string {} of {sc}", nc.id.get(p, i) - 1),
                );
            }
            for (name, c) in [
                ("nodes.name", &nc.name),
                ("nodes.file", &nc.file),
                ("nodes.signature", &nc.signature),
                ("nodes.doc", &nc.doc),
            ] {
                if c.get(p, i) >= sc {
                    r.add(
                        name,
                        format!("node {i} refers to string {} of {sc}", c.get(p, i)),
                    );
                }
            }
        }
        // The index is checked pairwise in order, so each id is compared twice: keep the
        // last one assembled instead of assembling it again.
        let last = RefCell::new((u32::MAX, Vec::new(), Vec::new()));
        self.verify_index(r, "nodes.id_index", &nc.id_index, |a, b| {
            let (prev, x, y) = &mut *last.borrow_mut();
            if *prev != a {
                x.clear();
                self.base_node(a).append_id(x);
            }
            y.clear();
            self.base_node(b).append_id(y);
            let o = x.as_slice().cmp(y.as_slice());
            std::mem::swap(x, y);
            *prev = b;
            o
        });
        self.verify_index(r, "nodes.name_index", &nc.name_index, |a, b| {
            nc.name.get(p, a as usize).cmp(&nc.name.get(p, b as usize))
        });
    }

    /// `index` must be a permutation of the nodes sorted by (`cmp`, node index).
    fn verify_index(
        &self,
        r: &mut Report,
        what: &str,
        index: &UIntCol,
        cmp: impl Fn(u32, u32) -> Ordering,
    ) {
        let seen = check_sorted_permutation(index, self.np(), self.n, cmp, |d| r.add(what, d));
        if seen != u64::from(self.n) {
            r.add(what, format!("indexes {} of {} nodes", seen, self.n));
        }
    }

    fn verify_edges(&self, r: &mut Report) {
        let p = self.ep();
        let ec = &self.edges;
        let (n, e) = (self.n as usize, u64::from(self.e));
        let sc = u64::from(self.base_string_count());
        for (what, off) in [
            ("edges.out_csr", &ec.out_offsets),
            ("edges.in_csr", &ec.in_offsets),
        ] {
            for i in 0..n {
                let (a, b) = (off.get(p, i), off.get(p, i + 1));
                if a > b || b > e {
                    r.add(
                        what,
                        format!("offsets of node {i} are not monotone or exceed {e}"),
                    );
                }
            }
        }
        for k in 0..ec.type_palette.len() {
            let t = ec.type_palette.get(p, k);
            if RelType::from_code(t as u8).is_none()
                || Strategy::from_code((t >> 16) as u8).is_none()
                || (t >> 24) & 0xff != 0
            {
                r.add(
                    "edges.type_palette",
                    format!("entry {k} ({t:#x}) is not a valid (rel, roles, strategy, confidence)"),
                );
            }
        }
        let types = ec.type_palette.len() as u64;
        // Offsets were checked above and at open (first 0, last = edge count), so walking
        // node by node visits each edge once with its source known.
        for src in 0..n {
            let a = ec.out_offsets.get(p, src).min(e);
            let b = ec.out_offsets.get(p, src + 1).clamp(a, e);
            for k in a as usize..b as usize {
                let dst = ec.dst.get(p, k);
                if dst >= n as u64 {
                    r.add("edges.dst", format!("edge {k} targets node {dst} of {n}"));
                }
                if k % crate::format::edges_col::SRC_BLOCK == 0
                    && ec.block_src.get(p, k / crate::format::edges_col::SRC_BLOCK) != src as u64
                {
                    r.add(
                        "edges.block_src",
                        format!("source hint of edge {k} is not {src}"),
                    );
                }
                if ec.edge_type.get(p, k) >= types {
                    r.add(
                        "edges.type",
                        format!("edge {k} has a type code outside the palette"),
                    );
                }
                if ec.line.get(p, k) > u64::from(u32::MAX) {
                    r.add("edges.line", format!("edge {k} has a line out of range"));
                }
                if !sites_in_order(ec, p, k) {
                    r.add("edges.sites", format!("edge {k} has a damaged site list"));
                }
                if ec.file_override.get(p, k) > sc {
                    r.add(
                        "edges.file_override",
                        format!("edge {k} refers to an unknown file string"),
                    );
                }
                let key = |j: usize| (self.edge(crate::EdgeIdx(j as u32)).rel(), ec.dst.get(p, j));
                if k > a as usize && key(k - 1) > key(k) {
                    r.add(
                        "edges.out_csr",
                        format!("edge {k} is out of (src, rel, dst) order"),
                    );
                }
            }
        }
        // The in-CSR must list every edge exactly once, under its target, ascending.
        let mut seen = RoaringBitmap::new();
        for d in 0..n {
            let (a, b) = (ec.in_offsets.get(p, d), ec.in_offsets.get(p, d + 1));
            let mut prev: Option<u64> = None;
            for k in a..b.min(e) {
                let edge = ec.in_perm.get(p, k as usize);
                if edge >= e || !seen.insert(edge as u32) {
                    r.add(
                        "edges.in_csr",
                        format!("entry {k} ({edge}) is out of range or repeated"),
                    );
                    continue;
                }
                if ec.dst.get(p, edge as usize) != d as u64 {
                    r.add(
                        "edges.in_csr",
                        format!("edge {edge} listed under node {d} targets another node"),
                    );
                }
                if prev.is_some_and(|q| q >= edge) {
                    r.add(
                        "edges.in_csr",
                        format!("in-edges of node {d} are not ascending"),
                    );
                }
                prev = Some(edge);
            }
        }
        if seen.len() != e {
            r.add("edges.in_csr", format!("lists {} of {e} edges", seen.len()));
        }
    }

    fn family_issue(
        &self,
        r: &mut Report,
        what: &str,
        fam: &Family,
        i: usize,
        expected: &RoaringBitmap,
    ) {
        let bp = self.bp();
        match decode(fam.raw(bp, self.bitmaps.data, i)) {
            Ok(bm) if &bm == expected => {}
            Ok(_) => r.add(what, format!("bitmap {i} disagrees with the columns")),
            Err(e) => r.add(what, format!("bitmap {i} does not deserialize: {e}")),
        }
        let (a, b) = (fam.offsets.get(bp, i), fam.offsets.get(bp, i + 1));
        if a > b {
            r.add(what, format!("directory entry {i} is not monotone"));
        }
    }

    fn verify_bitmaps(&self, r: &mut Report) {
        let b = &self.bitmaps;
        let mut kinds = vec![RoaringBitmap::new(); b.kinds.len()];
        let mut files: std::collections::BTreeMap<u32, RoaringBitmap> = Default::default();
        for node in (0..self.n).map(|i| self.base_node(i)) {
            if let Some(bm) = kinds.get_mut(usize::from(node.kind().code())) {
                bm.try_push(node.idx().0).ok();
            }
            if !node.file().is_empty() {
                files
                    .entry(node.file_sid().0)
                    .or_default()
                    .try_push(node.idx().0)
                    .ok();
            }
        }
        // The role family of an artifact written before the `Inactive` role (bit 8) stops
        // at bit 7; such an artifact has no inactive edge.
        if b.kinds.len() < NodeKind::ALL.len()
            || b.rels.len() < RelType::ALL.len()
            || b.roles.len() < Roles::NAMED.len() - 1
        {
            r.add(
                "bitmaps",
                "a bitmap family has fewer entries than there are codes".into(),
            );
        }
        for (i, exp) in kinds.iter().enumerate() {
            self.family_issue(r, "bitmaps.kind", &b.kinds, i, exp);
        }
        let mut rels = vec![RoaringBitmap::new(); b.rels.len()];
        let mut roles = vec![RoaringBitmap::new(); b.roles.len()];
        for k in 0..self.e {
            let edge = self.edge(crate::EdgeIdx(k));
            if let Some(bm) = rels.get_mut(usize::from(edge.rel().code())) {
                let _ = bm.try_push(k);
            }
            let bits = edge.roles().0;
            for (bit, bm) in roles.iter_mut().enumerate() {
                if bits & (1 << bit) != 0 {
                    let _ = bm.try_push(k);
                }
            }
        }
        for (i, exp) in rels.iter().enumerate() {
            self.family_issue(r, "bitmaps.rel", &b.rels, i, exp);
        }
        for (i, exp) in roles.iter().enumerate() {
            self.family_issue(r, "bitmaps.role", &b.roles, i, exp);
        }
        let bp = self.bp();
        let keys: Vec<u32> = (0..b.file_keys.len())
            .map(|k| b.file_keys.get32(bp, k))
            .collect();
        if keys != files.keys().copied().collect::<Vec<_>>() {
            r.add(
                "bitmaps.file_keys",
                "the per-file directory does not list exactly the node files, ascending".into(),
            );
        } else {
            for (i, exp) in files.values().enumerate() {
                self.family_issue(r, "bitmaps.file", &b.files, i, exp);
            }
        }
    }
}

/// Checks that `index` (read from payload `p`) holds rows of `0..n`, each once, sorted by
/// (`cmp`, row); tells `add` each finding and returns how many distinct rows it holds.
/// Base and delta name and id indexes share this check.
pub(crate) fn check_sorted_permutation(
    index: &UIntCol,
    p: &[u8],
    n: u32,
    cmp: impl Fn(u32, u32) -> Ordering,
    mut add: impl FnMut(String),
) -> u64 {
    let mut seen = RoaringBitmap::new();
    let mut prev: Option<u32> = None;
    for k in 0..index.len() {
        let row = index.get(p, k);
        if row >= u64::from(n) || !seen.insert(row as u32) {
            add(format!("entry {k} ({row}) is out of range or repeated"));
            continue;
        }
        let row = row as u32;
        if let Some(q) = prev
            && cmp(q, row).then(q.cmp(&row)) != Ordering::Less
        {
            add(format!("entry {k} is out of order"));
        }
        prev = Some(row);
    }
    seen.len()
}

/// Whether edge `k`'s use-site list (SITE_OFFSETS, SITES) is in bounds and well formed:
/// a site count, then at least one line.
pub(crate) fn sites_in_order(ec: &crate::reader::EdgeCols, p: &[u8], k: usize) -> bool {
    let (a, b) = (ec.site_offsets.get(p, k), ec.site_offsets.get(p, k + 1));
    a <= b && b <= ec.sites.len() as u64 && (a == b || b - a >= 2)
}
