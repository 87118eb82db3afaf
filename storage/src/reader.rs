//! Reading an artifact in place: [`Artifact`], [`NodeRef`] and [`EdgeRef`].
//!
//! Opening reads the manifest, maps the four segments and checks their headers, column
//! tables and a handful of O(1) invariants (column lengths, first/last CSR offsets, string
//! table end). Nothing proportional to the graph is read or allocated. Every accessor is
//! nevertheless panic-free on any bytes: reads go through bounds-checked slices and
//! return defaults (0, `""`, the empty bitmap) where damaged data would point outside its
//! column. [`Artifact::verify`] finds such damage.

use std::fs::File;
use std::path::{Path, PathBuf};

use batho_schema::{NodeKind, RelType, Roles};
use memmap2::Mmap;
use roaring::RoaringBitmap;

use crate::bitmaps::{Bitmaps, EMPTY};
use crate::column::{BytesCol, ColumnTable, UIntCol};
use crate::error::{Result, StorageError};
use crate::format::{
    SEGMENT_HEADER_LEN, SegmentHeader, SegmentKind, cmp_parts, edges_col, names, nodes_col,
    strings_col,
};
use crate::input::{NodeIdx, StrId};
use crate::manifest::{LAYER_BASE, ManifestBody, RunRecord};
use crate::refs::{EdgeRef, NodeRef, UNKNOWN};
use crate::store::{generation_manifest_path, read_manifest};
use crate::writer::CONTENT_HASH_LEN;

/// The position of an edge in the artifact: its rank in (src, rel, dst) order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EdgeIdx(pub u32);

const S: usize = 0;
const N: usize = 1;
const E: usize = 2;
const B: usize = 3;

#[derive(Debug)]
pub(crate) struct Segment {
    pub(crate) path: PathBuf,
    pub(crate) map: Mmap,
    pub(crate) hash: [u8; 32],
    pub(crate) kind: SegmentKind,
}

#[derive(Debug)]
pub(crate) struct StringCols {
    pub(crate) offsets: UIntCol,
    pub(crate) bytes: BytesCol,
}

#[derive(Debug)]
pub(crate) struct NodeCols {
    pub(crate) node_type: UIntCol,
    pub(crate) type_palette: UIntCol,
    pub(crate) start_line: UIntCol,
    pub(crate) line_span: UIntCol,
    pub(crate) start_byte: UIntCol,
    pub(crate) byte_span: UIntCol,
    pub(crate) community: UIntCol,
    pub(crate) content_hash: BytesCol,
    pub(crate) id: UIntCol,
    pub(crate) name: UIntCol,
    pub(crate) qualified_name: UIntCol,
    pub(crate) file: UIntCol,
    pub(crate) signature: UIntCol,
    pub(crate) id_index: UIntCol,
    pub(crate) name_index: UIntCol,
}

#[derive(Debug)]
pub(crate) struct EdgeCols {
    pub(crate) out_offsets: UIntCol,
    pub(crate) dst: UIntCol,
    pub(crate) block_src: UIntCol,
    pub(crate) edge_type: UIntCol,
    pub(crate) type_palette: UIntCol,
    pub(crate) line: UIntCol,
    pub(crate) file_override: UIntCol,
    pub(crate) in_offsets: UIntCol,
    pub(crate) in_perm: UIntCol,
}

/// One generation of a graph, read in place from its mmap'd segments.
///
/// `Send + Sync` and cheap to keep open. Segments are immutable, so an open artifact keeps
/// reading its generation while later generations are committed.
///
/// Index arguments (`NodeIdx`, `EdgeIdx`, `StrId`) out of range do not panic: they read
/// as default values (0, `""`, empty). Callers should stay below [`Artifact::node_count`],
/// [`Artifact::edge_count`] and [`Artifact::string_count`].
#[derive(Debug)]
pub struct Artifact {
    dir: PathBuf,
    manifest_path: PathBuf,
    manifest: ManifestBody,
    pub(crate) segs: Vec<Segment>,
    pub(crate) n: u32,
    pub(crate) e: u32,
    pub(crate) strings: StringCols,
    pub(crate) nodes: NodeCols,
    pub(crate) edges: EdgeCols,
    pub(crate) bitmaps: Bitmaps,
}

fn corrupt(what: &Path, detail: impl Into<String>) -> StorageError {
    StorageError::corrupt(what.display().to_string(), detail)
}

impl Artifact {
    /// Opens the current generation of the store in `batho_dir` (read-only; creates nothing).
    pub fn open(batho_dir: &Path) -> Result<Artifact> {
        let path = batho_dir.join(names::MANIFEST);
        match read_manifest(&path)? {
            Some(m) => Self::from_manifest(batho_dir, path, m),
            None => Err(StorageError::NoArtifact {
                path: batho_dir.to_path_buf(),
            }),
        }
    }

    /// Opens generation `generation` from its kept manifest.
    pub fn open_generation(batho_dir: &Path, generation: u64) -> Result<Artifact> {
        let path = generation_manifest_path(batho_dir, generation);
        match read_manifest(&path)? {
            Some(m) if m.generation == generation => Self::from_manifest(batho_dir, path, m),
            Some(_) => Err(corrupt(&path, "manifest carries another generation number")),
            None => Err(StorageError::NoSuchGeneration {
                path: batho_dir.to_path_buf(),
                generation,
            }),
        }
    }

    fn from_manifest(
        dir: &Path,
        manifest_path: PathBuf,
        manifest: ManifestBody,
    ) -> Result<Artifact> {
        let layer = match manifest.layers.as_slice() {
            [] => {
                return Err(StorageError::NoArtifact {
                    path: dir.to_path_buf(),
                });
            }
            [l] if l.kind == LAYER_BASE => l,
            _ => {
                return Err(StorageError::UnsupportedFeature {
                    path: manifest_path,
                    what: "delta layers (written by a newer batho)".into(),
                });
            }
        };
        if !SegmentKind::base_complete(&layer.segments) {
            return Err(corrupt(
                &manifest_path,
                "base layer does not list one segment of each kind",
            ));
        }
        let n = u32::try_from(layer.node_count)
            .map_err(|_| corrupt(&manifest_path, "node count exceeds u32"))?;
        let e = u32::try_from(layer.edge_count)
            .map_err(|_| corrupt(&manifest_path, "edge count exceeds u32"))?;
        let mut segs = Vec::with_capacity(4);
        for kind in SegmentKind::BASE {
            let Some(r) = layer.segments.iter().find(|s| s.kind == kind as u8) else {
                return Err(corrupt(
                    &manifest_path,
                    format!("no {} segment", kind.name()),
                ));
            };
            let path = dir.join(names::SEGMENTS_DIR).join(r.file_name());
            let file = File::open(&path).map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    corrupt(&path, "segment named by the manifest is missing")
                } else {
                    StorageError::io(&path, e)
                }
            })?;
            let len = file
                .metadata()
                .map_err(|e| StorageError::io(&path, e))?
                .len();
            if len != r.len || len < SEGMENT_HEADER_LEN as u64 {
                return Err(corrupt(
                    &path,
                    format!("segment is {len} bytes, manifest says {}", r.len),
                ));
            }
            // SAFETY: segments are immutable once renamed into place: batho never writes to,
            // truncates or reuses a reachable segment file (it only creates new files and
            // deletes unreachable ones in `gc`). A mapping is therefore never observed
            // changing underneath; external tampering is outside the media assumptions of
            // docs/format.md.
            let map = unsafe { Mmap::map(&file) }.map_err(|e| StorageError::io(&path, e))?;
            let h = SegmentHeader::decode(&map, &path)?;
            if h.kind != kind as u8 {
                return Err(corrupt(
                    &path,
                    format!("segment kind {} where {} was expected", h.kind, kind.name()),
                ));
            }
            if h.db_uuid != manifest.db_uuid {
                return Err(corrupt(&path, "segment belongs to another database"));
            }
            if h.payload_len.checked_add(SEGMENT_HEADER_LEN as u64) != Some(len) {
                return Err(corrupt(
                    &path,
                    "payload length does not match the file length",
                ));
            }
            segs.push(Segment {
                path,
                map,
                hash: r.hash,
                kind,
            });
        }
        let pay = |k: usize| &segs[k].map[SEGMENT_HEADER_LEN..];
        let what = |k: usize| segs[k].path.display().to_string();
        let (nu, eu) = (n as usize, e as usize);

        let st = ColumnTable::parse(pay(S), &what(S))?;
        let strings = StringCols {
            offsets: st.uint(strings_col::OFFSETS, None)?,
            bytes: st.bytes(strings_col::BYTES)?,
        };
        let so = &strings.offsets;
        let blen = strings.bytes.bytes(pay(S)).len() as u64;
        if so.len() < 2
            || so.get(pay(S), 0) != 0
            || so.get(pay(S), 1) != 0
            || so.get(pay(S), so.len() - 1) != blen
        {
            return Err(StorageError::corrupt(
                what(S),
                "string offsets do not span the string bytes",
            ));
        }
        // Strings are distinct, so only one can be empty: more offsets than bytes + 2 is damage
        // (and would make a width-0 column claim billions of strings).
        if u32::try_from(so.len() - 1).is_err() || so.len() as u64 > blen + 2 {
            return Err(StorageError::corrupt(what(S), "implausible string count"));
        }

        let nt = ColumnTable::parse(pay(N), &what(N))?;
        let c = |id| nt.uint(id, Some(nu));
        let nodes = NodeCols {
            node_type: c(nodes_col::TYPE)?,
            type_palette: nt.uint(nodes_col::TYPE_PALETTE, None)?,
            start_line: c(nodes_col::START_LINE)?,
            line_span: c(nodes_col::LINE_SPAN)?,
            start_byte: c(nodes_col::START_BYTE)?,
            byte_span: c(nodes_col::BYTE_SPAN)?,
            community: c(nodes_col::COMMUNITY)?,
            content_hash: nt.bytes(nodes_col::CONTENT_HASH)?,
            id: c(nodes_col::ID)?,
            name: c(nodes_col::NAME)?,
            qualified_name: c(nodes_col::QUALIFIED_NAME)?,
            file: c(nodes_col::FILE)?,
            signature: c(nodes_col::SIGNATURE)?,
            id_index: c(nodes_col::ID_INDEX)?,
            name_index: c(nodes_col::NAME_INDEX)?,
        };
        if nodes.type_palette.len() > nu {
            return Err(StorageError::corrupt(
                what(N),
                "node type palette longer than the node count",
            ));
        }
        if nodes.content_hash.bytes(pay(N)).len() != nu * CONTENT_HASH_LEN {
            return Err(StorageError::corrupt(
                what(N),
                "content hash column has the wrong length",
            ));
        }

        let et = ColumnTable::parse(pay(E), &what(E))?;
        let c = |id| et.uint(id, Some(eu));
        let edges = EdgeCols {
            out_offsets: et.uint(edges_col::OUT_OFFSETS, Some(nu + 1))?,
            dst: c(edges_col::DST)?,
            block_src: et.uint(
                edges_col::BLOCK_SRC,
                Some(eu.div_ceil(edges_col::SRC_BLOCK)),
            )?,
            edge_type: c(edges_col::TYPE)?,
            type_palette: et.uint(edges_col::TYPE_PALETTE, None)?,
            line: c(edges_col::LINE)?,
            file_override: c(edges_col::FILE_OVERRIDE)?,
            in_offsets: et.uint(edges_col::IN_OFFSETS, Some(nu + 1))?,
            in_perm: c(edges_col::IN_PERM)?,
        };
        for (col, name) in [(&edges.out_offsets, "out"), (&edges.in_offsets, "in")] {
            if col.get(pay(E), 0) != 0 || col.get(pay(E), nu) != u64::from(e) {
                return Err(StorageError::corrupt(
                    what(E),
                    format!("{name}-CSR offsets do not span 0..{e}"),
                ));
            }
        }

        if edges.type_palette.len() > eu {
            return Err(StorageError::corrupt(
                what(E),
                "edge type palette longer than the edge count",
            ));
        }

        let bt = ColumnTable::parse(pay(B), &what(B))?;
        let bitmaps = Bitmaps::open(&bt, pay(B), &what(B))?;
        // Codes are bytes, and every file in the directory has at least one node.
        if [&bitmaps.kinds, &bitmaps.rels, &bitmaps.roles]
            .iter()
            .any(|f| f.len() > 256)
            || bitmaps.file_keys.len() > nu
        {
            return Err(StorageError::corrupt(
                what(B),
                "bitmap directory longer than its key space",
            ));
        }

        Ok(Artifact {
            dir: dir.to_path_buf(),
            manifest_path,
            manifest,
            segs,
            n,
            e,
            strings,
            nodes,
            edges,
            bitmaps,
        })
    }

    #[inline]
    pub(crate) fn pay(&self, k: usize) -> &[u8] {
        self.segs[k].map.get(SEGMENT_HEADER_LEN..).unwrap_or(&[])
    }
    #[inline]
    pub(crate) fn sp(&self) -> &[u8] {
        self.pay(S)
    }
    #[inline]
    pub(crate) fn np(&self) -> &[u8] {
        self.pay(N)
    }
    #[inline]
    pub(crate) fn ep(&self) -> &[u8] {
        self.pay(E)
    }
    #[inline]
    pub(crate) fn bp(&self) -> &[u8] {
        self.pay(B)
    }

    /// The `.batho/` directory this artifact was opened from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest file this artifact was opened from.
    pub fn manifest_path(&self) -> &Path {
        &self.manifest_path
    }

    /// The decoded manifest.
    pub fn manifest(&self) -> &ManifestBody {
        &self.manifest
    }

    /// The generation this artifact shows.
    pub fn generation(&self) -> u64 {
        self.manifest.generation
    }

    /// The database identity.
    pub fn db_uuid(&self) -> [u8; 16] {
        self.manifest.db_uuid
    }

    /// Number of nodes.
    pub fn node_count(&self) -> u32 {
        self.n
    }

    /// Number of edges.
    pub fn edge_count(&self) -> u32 {
        self.e
    }

    /// Number of strings in the dictionary (`StrId`s are `0..string_count()`; 0 is `""`).
    pub fn string_count(&self) -> u32 {
        (self.strings.offsets.len().saturating_sub(1)) as u32
    }

    /// Total bytes of this generation's segment files.
    pub fn size_bytes(&self) -> u64 {
        self.segs.iter().map(|s| s.map.len() as u64).sum()
    }

    /// The run history recorded in this generation's manifest, oldest first.
    pub fn runs(&self) -> &[RunRecord] {
        &self.manifest.runs
    }

    /// The most recent run.
    pub fn last_run(&self) -> Option<RunRecord> {
        self.manifest.runs.last().cloned()
    }

    /// Whether `n` is a node of this generation's graph (inside the index space and not
    /// removed by a later layer). Scans over `0..node_count()` must skip the others.
    pub fn is_live(&self, n: NodeIdx) -> bool {
        n.0 < self.n
    }

    /// The node at `n`.
    pub fn node(&self, n: NodeIdx) -> NodeRef<'_> {
        NodeRef { a: self, i: n.0 }
    }

    /// Every node in index order.
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = NodeRef<'_>> + '_ {
        (0..self.n).map(move |i| NodeRef { a: self, i })
    }

    /// The edge at `e`.
    pub fn edge(&self, e: EdgeIdx) -> EdgeRef<'_> {
        EdgeRef {
            a: self,
            i: e.0,
            src: UNKNOWN,
        }
    }

    /// The bytes of string `s` (empty if out of range).
    pub fn string_bytes(&self, s: StrId) -> &[u8] {
        let p = self.sp();
        let o = &self.strings.offsets;
        let (a, b) = (o.get(p, s.0 as usize), o.get(p, s.0 as usize + 1));
        self.strings
            .bytes
            .bytes(p)
            .get(a as usize..b as usize)
            .unwrap_or(&[])
    }

    /// The text of string `s` (`""` if out of range or not UTF-8, which only damage causes).
    pub fn string(&self, s: StrId) -> &str {
        std::str::from_utf8(self.string_bytes(s)).unwrap_or("")
    }

    /// The id of `text` in the dictionary, by binary search (O(log strings)).
    pub fn find_string(&self, text: &str) -> Option<StrId> {
        let t = text.as_bytes();
        let (mut lo, mut hi) = (0u32, self.string_count());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.string_bytes(StrId(mid)).cmp(t) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(StrId(mid)),
            }
        }
        None
    }

    /// First position in `index` (node indexes sorted by `key`) whose key is `>= s`.
    fn lower_bound(&self, index: &UIntCol, key: &UIntCol, s: u64) -> usize {
        let p = self.np();
        let (mut lo, mut hi) = (0usize, index.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if key.get(p, index.get(p, mid) as usize) < s {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The id of node `n` as up to three parts whose concatenation is the id text.
    pub(crate) fn id_parts(&self, n: u32) -> [&[u8]; 3] {
        match self.nodes.id.get(self.np(), n as usize) {
            0 => {
                let node = self.node(NodeIdx(n));
                [
                    self.string_bytes(node.file_sid()),
                    b":",
                    self.string_bytes(node.qualified_name_sid()),
                ]
            }
            v => [
                self.string_bytes(StrId(u32::try_from(v - 1).unwrap_or(u32::MAX))),
                b"",
                b"",
            ],
        }
    }

    /// Compares the id of node `n` with `target`, reading the qualified name of a composed
    /// id only when the file part matches (most binary-search steps stop at the file).
    pub(crate) fn cmp_id(&self, n: u32, target: &[u8]) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let v = self.nodes.id.get(self.np(), n as usize);
        if v != 0 {
            return self
                .string_bytes(StrId(u32::try_from(v - 1).unwrap_or(u32::MAX)))
                .cmp(target);
        }
        let node = self.node(NodeIdx(n));
        let file = self.string_bytes(node.file_sid());
        let k = file.len().min(target.len());
        match file[..k].cmp(&target[..k]) {
            Ordering::Equal if file.len() > target.len() => Ordering::Greater,
            Ordering::Equal => {
                let rest = &target[file.len()..];
                cmp_parts(
                    [b":", self.string_bytes(node.qualified_name_sid()), b""],
                    [rest, b"", b""],
                )
            }
            o => o,
        }
    }

    /// The node with stable id `id` (the lowest index if a build produced duplicates);
    /// a binary search over the id index (O(log nodes) id comparisons).
    pub fn lookup_id(&self, id: &str) -> Option<NodeIdx> {
        let target = id.as_bytes();
        let ix = &self.nodes.id_index;
        let p = self.np();
        let (mut lo, mut hi) = (0usize, ix.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.cmp_id(ix.get32(p, mid), target).is_lt() {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let node = ix.get32(p, lo);
        (lo < ix.len() && self.cmp_id(node, target).is_eq()).then_some(NodeIdx(node))
    }

    /// Every node with stable id `id`, ascending (several only when a build produced
    /// duplicates).
    pub(crate) fn nodes_with_id(&self, id: &str) -> Vec<NodeIdx> {
        let target = id.as_bytes();
        let ix = &self.nodes.id_index;
        let p = self.np();
        let (mut lo, mut hi) = (0usize, ix.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.cmp_id(ix.get32(p, mid), target).is_lt() {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let mut out = Vec::new();
        while lo < ix.len() && self.cmp_id(ix.get32(p, lo), target).is_eq() {
            out.push(NodeIdx(ix.get32(p, lo)));
            lo += 1;
        }
        out
    }

    /// Every node whose simple name is exactly `name`, ascending.
    pub fn lookup_name<'a>(&'a self, name: &str) -> impl Iterator<Item = NodeIdx> + use<'a> {
        let (ix, key) = (&self.nodes.name_index, &self.nodes.name);
        let range = match self.find_string(name) {
            Some(s) => {
                self.lower_bound(ix, key, u64::from(s.0))
                    ..self.lower_bound(ix, key, u64::from(s.0) + 1)
            }
            None => 0..0,
        };
        range.map(move |k| NodeIdx(ix.get32(self.np(), k)))
    }

    /// Every node whose simple name starts with `prefix`, ordered by name. The dictionary
    /// is sorted by bytes, so the names with a prefix are one run of string ids, and the
    /// name index (sorted by string id) holds their nodes as one range: two binary searches.
    pub fn lookup_name_prefix<'a>(
        &'a self,
        prefix: &str,
    ) -> impl Iterator<Item = NodeIdx> + use<'a> {
        let p = prefix.as_bytes();
        let first = self.partition_strings(|s| s < p);
        let end = self.partition_strings(|s| s < p || s.starts_with(p));
        let (ix, key) = (&self.nodes.name_index, &self.nodes.name);
        let range =
            self.lower_bound(ix, key, u64::from(first))..self.lower_bound(ix, key, u64::from(end));
        range.map(move |k| NodeIdx(ix.get32(self.np(), k)))
    }

    /// The first string id for which `before` is false (`before` must hold for a prefix of
    /// the sorted dictionary and fail for the rest).
    fn partition_strings(&self, before: impl Fn(&[u8]) -> bool) -> u32 {
        let (mut lo, mut hi) = (0u32, self.string_count());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(self.string_bytes(StrId(mid))) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    fn csr_range(&self, col: &UIntCol, n: NodeIdx) -> std::ops::Range<u32> {
        if n.0 >= self.n {
            return 0..0;
        }
        let p = self.ep();
        let e = u64::from(self.e);
        let a = col.get(p, n.0 as usize).min(e);
        let b = col.get(p, n.0 as usize + 1).clamp(a, e);
        a as u32..b as u32
    }

    /// Out-edges of `n`, in (rel, dst) order.
    pub fn out_edges(&self, n: NodeIdx) -> impl ExactSizeIterator<Item = EdgeRef<'_>> + '_ {
        self.csr_range(&self.edges.out_offsets, n)
            .map(move |i| EdgeRef {
                a: self,
                i,
                src: n.0,
            })
    }

    /// In-edges of `n`, in edge index order.
    pub fn in_edges(&self, n: NodeIdx) -> impl ExactSizeIterator<Item = EdgeRef<'_>> + '_ {
        self.csr_range(&self.edges.in_offsets, n)
            .map(move |k| EdgeRef {
                a: self,
                i: self.edges.in_perm.get32(self.ep(), k as usize),
                src: UNKNOWN,
            })
    }

    /// The source node of edge `e`: a binary search in the out-CSR offsets between the
    /// sources of the enclosing 256-edge block (usually a few adjacent offsets).
    pub fn edge_src(&self, e: EdgeIdx) -> NodeIdx {
        let p = self.ep();
        let off = &self.edges.out_offsets;
        let b = e.0 as usize / edges_col::SRC_BLOCK;
        let bs = &self.edges.block_src;
        let n = self.n as usize;
        // The source is the last node whose first out-edge is <= e; it lies between the
        // block's first source and the next block's (inclusive). Damaged hints only make
        // the answer wrong, never out of range.
        let mut lo = (bs.get(p, b) as usize).min(n);
        let mut hi = if b + 1 < bs.len() {
            (bs.get(p, b + 1) as usize).saturating_add(1).min(n + 1)
        } else {
            n + 1
        };
        if lo >= hi || off.get(p, lo) > u64::from(e.0) {
            (lo, hi) = (0, n + 1);
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if off.get(p, mid) <= u64::from(e.0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        NodeIdx((lo.saturating_sub(1) as u32).min(self.n.saturating_sub(1)))
    }

    /// Nodes of kind `k`.
    pub fn nodes_of_kind(&self, k: NodeKind) -> &RoaringBitmap {
        self.bitmaps
            .kinds
            .get(self.bp(), self.bitmaps.data, usize::from(k.code()), self.n)
    }

    /// Edges of relation type `r`.
    pub fn edges_of_rel(&self, r: RelType) -> &RoaringBitmap {
        self.bitmaps
            .rels
            .get(self.bp(), self.bitmaps.data, usize::from(r.code()), self.e)
    }

    /// Edges having role bit `role`; `role` must have exactly one bit set (otherwise the
    /// result is the empty bitmap).
    pub fn edges_with_role(&self, role: Roles) -> &RoaringBitmap {
        if role.0.count_ones() != 1 {
            return &EMPTY;
        }
        self.bitmaps.roles.get(
            self.bp(),
            self.bitmaps.data,
            role.0.trailing_zeros() as usize,
            self.e,
        )
    }

    /// Nodes whose `file` is `path`, or `None` when no node has that file.
    pub fn nodes_in_file(&self, path: &str) -> Option<&RoaringBitmap> {
        let s = self.find_string(path)?;
        let slot = self.bitmaps.file_slot(self.bp(), s.0)?;
        Some(
            self.bitmaps
                .files
                .get(self.bp(), self.bitmaps.data, slot, self.n),
        )
    }

    /// Paths having a per-file bitmap (every non-empty node `file`), ascending.
    pub fn files(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.bitmaps.file_keys.len())
            .map(move |k| self.string(StrId(self.bitmaps.file_keys.get32(self.bp(), k))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use batho_schema::{Language, NodeFlags, Strategy};

    #[test]
    fn artifacts_can_be_shared_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Artifact>();
    }

    #[test]
    fn edge_sources_are_found_across_blocks_and_empty_nodes() {
        use crate::fuzzing::sample_run;
        use crate::input::{EdgeInput, GraphBuilder, NodeInput};
        let mut g = GraphBuilder::new();
        let s = g.intern("n");
        for i in 0..1000u32 {
            let id = g.intern(&format!("f.c:n{i}"));
            g.add_node(NodeInput {
                id,
                name: s,
                qualified_name: s,
                kind: NodeKind::Function,
                file: s,
                language: Language::C,
                start_line: 0,
                end_line: 0,
                start_byte: 0,
                end_byte: 0,
                signature: s,
                content_hash: [0; 32],
                flags: NodeFlags::default(),
                community: 0,
            });
        }
        // Only every 7th node has out-edges, some many (crossing 256-edge blocks).
        let mut want = Vec::new();
        for src in (0..1000u32).step_by(7) {
            for k in 0..(src % 300) {
                g.add_edge(EdgeInput {
                    src: NodeIdx(src),
                    dst: NodeIdx(k),
                    rel: RelType::Calls,
                    roles: Roles::NONE,
                    confidence: 1.0,
                    strategy: Strategy::Direct,
                    file: s,
                    line: 0,
                });
                want.push(src);
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let store = crate::Store::create_or_open(tmp.path()).unwrap();
        store
            .lock_writer()
            .unwrap()
            .commit(&g, sample_run(&g))
            .unwrap();
        let a = store.open_current().unwrap();
        let got: Vec<u32> = (0..a.edge_count())
            .map(|e| a.edge(EdgeIdx(e)).src().0)
            .collect();
        assert_eq!(got, want);
        assert!(a.verify(false).is_empty());
    }
}
