//! Structural verification of a delta layer (`docs/format.md` §9, invariants D1–D6):
//! its strings extend the base dictionary without repeating it, its rows and tombstones
//! partition the appended index space, its indexes and CSRs are sorted permutations, its
//! edges reach live nodes, and the tombstones hide every base edge the merge rules drop.

use std::cmp::Ordering;

use batho_schema::{Language, NodeKind, RelType, Strategy};
use roaring::RoaringBitmap;

use crate::bitmaps::decode;
use crate::delta::{DE, DN, DS, Delta};
use crate::format::edges_col;
use crate::input::NodeIdx;
use crate::reader::Artifact;
use crate::verify::{Issue, check_sorted_permutation};

/// Collects at most five issues per check.
struct Out<'a>(&'a mut Vec<Issue>);

impl Out<'_> {
    fn add(&mut self, what: &str, detail: String) {
        if self.0.iter().filter(|i| i.what == what).count() < 5 {
            self.0.push(Issue {
                what: what.to_owned(),
                detail,
            });
        }
    }
}

impl Artifact {
    /// Every delta check; empty without a delta layer.
    pub(crate) fn verify_delta(&self, issues: &mut Vec<Issue>) {
        let Some(d) = &self.delta else { return };
        let mut r = Out(issues);
        self.delta_columns(d, &mut r);
        self.delta_strings(d, &mut r);
        self.delta_rows(d, &mut r);
        self.delta_edges(d, &mut r);
        self.delta_tombstones(d, &mut r);
        let strings = u64::from(self.string_count());
        for problem in d.text.check(self.pay(crate::delta::DN), strings) {
            r.add("delta.text", problem);
        }
    }

    fn delta_columns(&self, d: &Delta, r: &mut Out<'_>) {
        let (n, e) = (&d.nodes, &d.edges);
        let (sp, np, ep) = (self.pay(DS), self.pay(DN), self.pay(DE));
        let cols = [
            (d.strings.offsets(), sp),
            (&n.node_type, np),
            (&n.type_palette, np),
            (&n.start_line, np),
            (&n.line_span, np),
            (&n.start_byte, np),
            (&n.byte_span, np),
            (&n.community, np),
            (&n.pagerank, np),
            (&n.id, np),
            (&n.name, np),
            (&n.qualified_name, np),
            (&n.file, np),
            (&n.signature, np),
            (&n.doc, np),
            (&n.id_index, np),
            (&n.name_index, np),
            (&d.row_node, np),
            (&e.out_offsets, ep),
            (&e.dst, ep),
            (&e.block_src, ep),
            (&e.edge_type, ep),
            (&e.type_palette, ep),
            (&e.line, ep),
            (&e.file_override, ep),
            (&e.in_offsets, ep),
            (&e.in_perm, ep),
            (&e.site_offsets, ep),
            (&e.sites, ep),
            (&d.in_keys, ep),
        ];
        for (c, p) in cols {
            if let Some(x) = c.check_exceptions(p) {
                r.add("delta.columns", x);
            }
        }
    }

    fn delta_strings(&self, d: &Delta, r: &mut Out<'_>) {
        let p = self.pay(DS);
        // Block structure, UTF-8 and order; then that no string repeats a base string.
        d.strings.check(p, |x| r.add("delta.strings", x));
        let _ = d.strings.for_each(p, |k, s| {
            if let Ok(t) = std::str::from_utf8(s)
                && self.base_find_string(t).is_some()
            {
                r.add("delta.strings", format!("string {k} repeats a base string"));
            }
        });
    }

    fn delta_rows(&self, d: &Delta, r: &mut Out<'_>) {
        let p = self.pay(DN);
        let nc = &d.nodes;
        let sc = u64::from(self.string_count());
        let removed = match decode(d.raw_tombstones(self).0) {
            Ok(bm) => bm,
            Err(e) => {
                r.add("delta.removed", format!("does not deserialize: {e}"));
                RoaringBitmap::new()
            }
        };
        if removed.max().is_some_and(|m| m >= d.n) {
            r.add("delta.removed", format!("holds a node index past {}", d.n));
        }
        let mut rows = RoaringBitmap::new();
        let mut prev: Option<u32> = None;
        for k in 0..d.rows as usize {
            let v = d.row_node.get(p, k);
            if v >= u64::from(d.n) || prev.is_some_and(|q| u64::from(q) >= v) {
                r.add(
                    "delta.row_node",
                    format!("row {k} ({v}) is out of range or order"),
                );
                continue;
            }
            let v = v as u32;
            prev = Some(v);
            rows.insert(v);
            if removed.contains(v) {
                r.add(
                    "delta.row_node",
                    format!("row {k} is node {v}, which is removed"),
                );
            }
        }
        let mut appended = RoaringBitmap::new();
        appended.insert_range(d.base_n..d.n);
        let covered = (&rows | &removed) & &appended;
        if covered.len() != appended.len() {
            r.add(
                "delta.row_node",
                "an appended node index is neither a row nor removed".into(),
            );
        }
        for k in 0..nc.type_palette.len() {
            let t = nc.type_palette.get(p, k);
            if NodeKind::from_code(t as u8).is_none()
                || Language::from_code((t >> 16) as u8).is_none()
                || t >> 24 != 0
            {
                r.add(
                    "delta.nodes",
                    format!("palette entry {k} ({t:#x}) is not valid"),
                );
            }
        }
        let types = nc.type_palette.len() as u64;
        for i in 0..d.rows as usize {
            if nc.node_type.get(p, i) >= types {
                r.add(
                    "delta.nodes",
                    format!("row {i} has a type outside the palette"),
                );
            }
            for c in [&nc.start_line, &nc.line_span, &nc.community, &nc.pagerank] {
                if c.get(p, i) > u64::from(u32::MAX) {
                    r.add("delta.nodes", format!("row {i} value out of range"));
                }
            }
            if nc.qualified_name.get(p, i) > sc || nc.id.get(p, i) > sc {
                r.add(
                    "delta.nodes",
                    format!("row {i} refers to an unknown string"),
                );
            }
            for c in [&nc.name, &nc.file, &nc.signature, &nc.doc] {
                if c.get(p, i) >= sc {
                    r.add(
                        "delta.nodes",
                        format!("row {i} refers to an unknown string"),
                    );
                }
            }
        }
        let node = |row: u32| self.delta_node(d, row, d.row_node.get32(p, row as usize));
        self.delta_index(d, r, "delta.id_index", &nc.id_index, |a, b| {
            let id = |row: u32| {
                let mut v = Vec::new();
                node(row).append_id(&mut v);
                v
            };
            id(a).cmp(&id(b))
        });
        self.delta_index(d, r, "delta.name_index", &nc.name_index, |a, b| {
            node(a).name().cmp(&node(b).name())
        });
    }

    /// `index` must be a permutation of the rows sorted by (`cmp`, row).
    fn delta_index(
        &self,
        d: &Delta,
        r: &mut Out<'_>,
        what: &str,
        index: &crate::column::UIntCol,
        cmp: impl Fn(u32, u32) -> Ordering,
    ) {
        check_sorted_permutation(index, self.pay(DN), d.rows, cmp, |m| r.add(what, m));
    }

    fn delta_edges(&self, d: &Delta, r: &mut Out<'_>) {
        let p = self.pay(DE);
        let ec = &d.edges;
        let (rows, de) = (d.rows as usize, u64::from(d.de));
        let sc = u64::from(self.string_count());
        for k in 0..ec.type_palette.len() {
            let t = ec.type_palette.get(p, k);
            if RelType::from_code(t as u8).is_none()
                || Strategy::from_code((t >> 16) as u8).is_none()
                || (t >> 24) & 0xff != 0
            {
                r.add(
                    "delta.edges",
                    format!("palette entry {k} ({t:#x}) is not valid"),
                );
            }
        }
        let types = ec.type_palette.len() as u64;
        for row in 0..rows {
            let (a, b) = (ec.out_offsets.get(p, row), ec.out_offsets.get(p, row + 1));
            if a > b || b > de {
                r.add(
                    "delta.out_csr",
                    format!("offsets of row {row} are not monotone"),
                );
                continue;
            }
            for k in a as usize..b as usize {
                let dst = ec.dst.get(p, k);
                if dst >= u64::from(d.n) || !self.is_live(NodeIdx(dst as u32)) {
                    r.add(
                        "delta.edges",
                        format!("edge {k} targets {dst}, not a live node"),
                    );
                }
                if k % edges_col::SRC_BLOCK == 0
                    && ec.block_src.get(p, k / edges_col::SRC_BLOCK) != row as u64
                {
                    r.add(
                        "delta.block_src",
                        format!("source hint of edge {k} is not row {row}"),
                    );
                }
                if ec.edge_type.get(p, k) >= types
                    || ec.line.get(p, k) > u64::from(u32::MAX)
                    || ec.file_override.get(p, k) > sc
                    || !crate::verify::sites_in_order(ec, p, k)
                {
                    r.add("delta.edges", format!("edge {k} has a value out of range"));
                }
                let key = |j: usize| {
                    (
                        self.edge(crate::EdgeIdx(d.base_e + j as u32)).rel(),
                        ec.dst.get(p, j),
                    )
                };
                if k > a as usize && key(k - 1) > key(k) {
                    r.add(
                        "delta.out_csr",
                        format!("edge {k} is out of (row, rel, dst) order"),
                    );
                }
            }
        }
        let mut seen = RoaringBitmap::new();
        let mut prev_key: Option<u64> = None;
        for j in 0..d.in_keys.len() {
            let v = d.in_keys.get(p, j);
            if prev_key.is_some_and(|q| q >= v) {
                r.add("delta.in_csr", format!("key {j} is not ascending"));
            }
            prev_key = Some(v);
            let (a, b) = (ec.in_offsets.get(p, j), ec.in_offsets.get(p, j + 1));
            if a >= b || b > de {
                r.add(
                    "delta.in_csr",
                    format!("offsets of key {j} are empty or not monotone"),
                );
                continue;
            }
            let mut prev: Option<u64> = None;
            for k in a..b {
                let edge = ec.in_perm.get(p, k as usize);
                if edge >= de || !seen.insert(edge as u32) {
                    r.add(
                        "delta.in_csr",
                        format!("entry {k} is out of range or repeated"),
                    );
                    continue;
                }
                if ec.dst.get(p, edge as usize) != v || prev.is_some_and(|q| q >= edge) {
                    r.add(
                        "delta.in_csr",
                        format!("entry {k} is under the wrong key or order"),
                    );
                }
                prev = Some(edge);
            }
        }
        if seen.len() != de {
            r.add(
                "delta.in_csr",
                format!("lists {} of {de} edges", seen.len()),
            );
        }
    }

    fn delta_tombstones(&self, d: &Delta, r: &mut Out<'_>) {
        let dropped = match decode(d.raw_tombstones(self).1) {
            Ok(bm) => bm,
            Err(e) => {
                r.add("delta.dropped", format!("does not deserialize: {e}"));
                return;
            }
        };
        if dropped.max().is_some_and(|m| m >= self.e) {
            r.add(
                "delta.dropped",
                format!("holds an edge index past {}", self.e),
            );
        }
        let mask = d.mask(self);
        let removed = d.removed(self);
        for src in 0..self.n {
            let masked = mask.contains(src);
            for e in self.csr_range(&self.edges.out_offsets, NodeIdx(src)) {
                let dst = self.edges.dst.get(self.ep(), e as usize) as u32;
                if (masked || removed.contains(dst)) && !dropped.contains(e) {
                    r.add(
                        "delta.dropped",
                        format!("base edge {e} ({src} -> {dst}) touches a hidden node but is not dropped"),
                    );
                }
            }
        }
    }
}
