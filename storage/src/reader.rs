//! Reading an artifact in place: [`Artifact`], [`NodeRef`] and [`EdgeRef`].
//!
//! Opening reads the manifest, maps the four segments and checks their headers, column
//! tables and a handful of O(1) invariants (column lengths, first/last CSR offsets, string
//! table end). The string dictionary and its lookups by text live in `strings.rs`. Nothing proportional to the graph is read or allocated. Every accessor is
//! nevertheless panic-free on any bytes: reads go through bounds-checked slices and
//! return defaults (0, `""`, the empty bitmap) where damaged data would point outside its
//! column. [`Artifact::verify`] finds such damage.

use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};

use batho_schema::{NodeKind, RelType, Roles};
use memmap2::Mmap;

use crate::file_stamp::FileStamp;
use crate::verified::VerifiedSegments;
use roaring::RoaringBitmap;

use crate::bitmaps::{Bitmaps, EMPTY};
use crate::column::{BytesCol, ColumnTable, UIntCol};
use crate::delta::Delta;
use crate::error::{Result, StorageError};
use crate::format::{SEGMENT_HEADER_LEN, SegmentHeader, SegmentKind, edges_col, names, nodes_col};
use crate::input::CONTENT_HASH_LEN;
use crate::input::{NodeIdx, StrId};
use crate::manifest::{LAYER_BASE, LAYER_DELTA, ManifestBody, RunRecord};
pub(crate) use crate::merge_iter::block_search;
pub use crate::merge_iter::{EdgeIter, NameIter};
use crate::refs::{EdgeRef, IdScratch, NodeRef, UNKNOWN};
use crate::store::{generation_manifest_path, read_manifest};
use crate::strings::Dict;
use crate::text::read::TextCols;

/// The position of an edge in the artifact: its rank in (src, rel, dst) order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EdgeIdx(pub u32);

const S: usize = 0;
pub(crate) const N: usize = 1;
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
pub(crate) struct NodeCols {
    pub(crate) node_type: UIntCol,
    pub(crate) type_palette: UIntCol,
    pub(crate) start_line: UIntCol,
    pub(crate) line_span: UIntCol,
    pub(crate) start_byte: UIntCol,
    pub(crate) byte_span: UIntCol,
    pub(crate) community: UIntCol,
    pub(crate) pagerank: UIntCol,
    pub(crate) content_hash: BytesCol,
    pub(crate) id: UIntCol,
    pub(crate) name: UIntCol,
    pub(crate) qualified_name: UIntCol,
    pub(crate) file: UIntCol,
    pub(crate) signature: UIntCol,
    pub(crate) doc: UIntCol,
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
    pub(crate) site_offsets: UIntCol,
    pub(crate) sites: UIntCol,
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
    pub(crate) strings: Dict,
    pub(crate) nodes: NodeCols,
    pub(crate) edges: EdgeCols,
    pub(crate) bitmaps: Bitmaps,
    pub(crate) text: TextCols,
    pub(crate) delta: Option<Box<Delta>>,
}

/// Maps the segment of `kind` listed in `refs` and checks its header against the manifest.
fn map_segment(
    dir: &Path,
    manifest_path: &Path,
    manifest: &ManifestBody,
    refs: &[crate::manifest::SegmentRef],
    kind: SegmentKind,
    verified: Option<&mut VerifiedSegments>,
) -> Result<Segment> {
    let Some(r) = refs.iter().find(|s| s.kind == kind as u8) else {
        return Err(corrupt(
            manifest_path,
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
    let metadata = file.metadata().map_err(|e| StorageError::io(&path, e))?;
    let len = metadata.len();
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
    if let Some(verified) = verified {
        check_content(&map, &path, r, &metadata, verified)?;
    }
    Ok(Segment {
        path,
        map,
        hash: r.hash,
        kind,
    })
}

/// Hashes a segment against its name unless it has the stamp it had when it last did
/// (`crate::verified`): a segment changed since it was written is an error, never read.
fn check_content(
    map: &[u8],
    path: &Path,
    reference: &crate::manifest::SegmentRef,
    metadata: &std::fs::Metadata,
    verified: &mut VerifiedSegments,
) -> Result<()> {
    let name = reference.file_name();
    let stamp = FileStamp::of(metadata);
    if verified.holds(&name, stamp) {
        return Ok(());
    }
    if blake3::hash(map).as_bytes() != &reference.hash {
        return Err(corrupt(
            path,
            "content does not match its blake3 name: the file changed since it was written",
        ));
    }
    verified.record(&name, stamp);
    Ok(())
}

fn corrupt(what: &Path, detail: impl Into<String>) -> StorageError {
    StorageError::corrupt(what.display().to_string(), detail)
}

/// Whether opening checks the segments' content against their names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ContentCheck {
    /// Hash the segments whose stamps changed since they last hashed to their names
    /// (`crate::verified`): what every reader does.
    Stamped,
    /// Map them as they are: `fix`, which hashes (deep) or deliberately does not (quick)
    /// and must open damaged generations to repair them, and `load`, which verifies all.
    Skip,
}

impl Artifact {
    /// Opens the current generation of the store in `batho_dir` (read-only; creates
    /// nothing but the cache of verified segment stamps). A segment changed since it was
    /// written is a `Corrupt` error (`crate::verified`).
    pub fn open(batho_dir: &Path) -> Result<Artifact> {
        Self::open_current(batho_dir, ContentCheck::Stamped)
    }

    /// [`Artifact::open`] with the content check `check`.
    pub(crate) fn open_current(batho_dir: &Path, check: ContentCheck) -> Result<Artifact> {
        let path = batho_dir.join(names::MANIFEST);
        match read_manifest(&path)? {
            Some(m) => Self::from_manifest(batho_dir, path, m, check),
            None => Err(StorageError::NoArtifact {
                path: batho_dir.to_path_buf(),
            }),
        }
    }

    /// Opens generation `generation` from its kept manifest.
    pub fn open_generation(batho_dir: &Path, generation: u64) -> Result<Artifact> {
        Self::open_kept_generation(batho_dir, generation, ContentCheck::Stamped)
    }

    /// [`Artifact::open_generation`] with the content check `check`.
    pub(crate) fn open_kept_generation(
        batho_dir: &Path,
        generation: u64,
        check: ContentCheck,
    ) -> Result<Artifact> {
        let path = generation_manifest_path(batho_dir, generation);
        match read_manifest(&path)? {
            Some(m) if m.generation == generation => Self::from_manifest(batho_dir, path, m, check),
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
        check: ContentCheck,
    ) -> Result<Artifact> {
        let (layer, delta_layer) = match manifest.layers.as_slice() {
            [] => {
                return Err(StorageError::NoArtifact {
                    path: dir.to_path_buf(),
                });
            }
            [l] if l.kind == LAYER_BASE => (l, None),
            [l, d] if l.kind == LAYER_BASE && d.kind == LAYER_DELTA => (l, Some(d)),
            _ => {
                return Err(StorageError::UnsupportedFeature {
                    path: manifest_path,
                    what: "layers other than one base and at most one delta".into(),
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
        let mut verified = (check == ContentCheck::Stamped).then(|| VerifiedSegments::load(dir));
        let mut segs = Vec::with_capacity(7);
        for kind in SegmentKind::BASE {
            segs.push(map_segment(
                dir,
                &manifest_path,
                &manifest,
                &layer.segments,
                kind,
                verified.as_mut(),
            )?);
        }
        if let Some(d) = delta_layer {
            if !SegmentKind::delta_complete(&d.segments) {
                return Err(corrupt(
                    &manifest_path,
                    "delta layer does not list one segment of each delta kind",
                ));
            }
            for kind in SegmentKind::DELTA {
                segs.push(map_segment(
                    dir,
                    &manifest_path,
                    &manifest,
                    &d.segments,
                    kind,
                    verified.as_mut(),
                )?);
            }
        }
        if let Some(verified) = verified.as_mut() {
            verified.save_if_changed(dir);
        }
        let pay = |k: usize| &segs[k].map[SEGMENT_HEADER_LEN..];
        let what = |k: usize| segs[k].path.display().to_string();
        let (nu, eu) = (n as usize, e as usize);

        let st = ColumnTable::parse(pay(S), &what(S))?;
        let strings = Dict::open(&st, pay(S), &what(S), true)?;

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
            pagerank: c(nodes_col::PAGERANK)?,
            content_hash: nt.bytes(nodes_col::CONTENT_HASH)?,
            id: c(nodes_col::ID)?,
            name: c(nodes_col::NAME)?,
            qualified_name: c(nodes_col::QUALIFIED_NAME)?,
            file: c(nodes_col::FILE)?,
            signature: c(nodes_col::SIGNATURE)?,
            doc: nt.uint_optional(nodes_col::DOC, Some(nu))?,
            id_index: c(nodes_col::ID_INDEX)?,
            name_index: c(nodes_col::NAME_INDEX)?,
        };
        let text = TextCols::open(&nt, nu)?;
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
            site_offsets: et.uint(edges_col::SITE_OFFSETS, Some(eu + 1))?,
            sites: et.uint(edges_col::SITES, None)?,
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

        let base_s = strings.len();
        let delta = match delta_layer {
            Some(d) => Some(Box::new(Delta::open(&segs, d, n, e, base_s)?)),
            None => None,
        };
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
            text,
            delta,
        })
    }

    /// The generation's base layer alone, as if no delta had been committed over it
    /// (`fix` re-derives base segments from it).
    pub(crate) fn base_only(&self) -> Result<Artifact> {
        let mut m = self.manifest.clone();
        m.layers.truncate(1);
        Self::from_manifest(&self.dir, self.manifest_path.clone(), m, ContentCheck::Skip)
    }

    /// Whether this generation has a delta layer over its base.
    pub fn has_delta(&self) -> bool {
        self.delta.is_some()
    }

    /// The path of segment `k`, for messages.
    pub(crate) fn segment_name(&self, k: usize) -> String {
        self.segs
            .get(k)
            .map(|s| s.path.display().to_string())
            .unwrap_or_default()
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

    /// Size of the node index space: `NodeIdx`es are `0..node_count()`. With a delta
    /// layer some of them are removed nodes: scans must skip those ([`Artifact::is_live`],
    /// [`Artifact::live_nodes`]); [`Artifact::live_node_count`] counts the others.
    pub fn node_count(&self) -> u32 {
        self.delta.as_ref().map_or(self.n, |d| d.n)
    }

    /// Size of the edge index space (`EdgeIdx`es are `0..edge_count()`); with a delta
    /// layer, dropped base edges are inside it but not live ([`Artifact::is_live_edge`]).
    pub fn edge_count(&self) -> u32 {
        self.e + self.delta.as_ref().map_or(0, |d| d.de)
    }

    /// Number of nodes of the graph (removed ones excluded).
    pub fn live_node_count(&self) -> u32 {
        match &self.delta {
            Some(d) => d.n - d.removed(self).len() as u32,
            None => self.n,
        }
    }

    /// Number of edges of the graph (dropped ones excluded).
    pub fn live_edge_count(&self) -> u32 {
        match &self.delta {
            Some(d) => self.e - d.dropped(self).len() as u32 + d.de,
            None => self.e,
        }
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
    /// removed by the delta layer). Scans over `0..node_count()` must skip the others.
    #[inline]
    pub fn is_live(&self, n: NodeIdx) -> bool {
        match &self.delta {
            None => n.0 < self.n,
            Some(d) => n.0 < d.n && !d.removed(self).contains(n.0),
        }
    }

    /// Whether `e` is an edge of this generation's graph (not dropped by the delta layer).
    #[inline]
    pub fn is_live_edge(&self, e: EdgeIdx) -> bool {
        match &self.delta {
            None => e.0 < self.e,
            Some(d) => e.0 < self.e + d.de && (e.0 >= self.e || !d.dropped(self).contains(e.0)),
        }
    }

    /// The node at `n`.
    #[inline]
    pub fn node(&self, n: NodeIdx) -> NodeRef<'_> {
        if let Some(d) = &self.delta
            && let Some(r) = d.row_of(self, n.0)
        {
            return self.delta_node(d, r, n.0);
        }
        self.base_node(n.0)
    }

    /// Row `r` of the base layer.
    #[inline]
    pub(crate) fn base_node(&self, r: u32) -> NodeRef<'_> {
        NodeRef {
            a: self,
            i: r,
            p: self.np(),
            cols: &self.nodes,
            r,
        }
    }

    /// Row `r` of the delta layer, which is node `i`.
    #[inline]
    pub(crate) fn delta_node<'a>(&'a self, d: &'a Delta, r: u32, i: u32) -> NodeRef<'a> {
        NodeRef {
            a: self,
            i,
            p: self.pay(crate::delta::DN),
            cols: &d.nodes,
            r,
        }
    }

    /// Every live node, in index order.
    pub fn live_nodes(&self) -> impl Iterator<Item = NodeRef<'_>> + '_ {
        (0..self.node_count())
            .filter(move |&i| self.is_live(NodeIdx(i)))
            .map(move |i| self.node(NodeIdx(i)))
    }

    /// Every live node in index order (the same as [`Artifact::live_nodes`]).
    pub fn nodes(&self) -> impl Iterator<Item = NodeRef<'_>> + '_ {
        self.live_nodes()
    }

    /// The edge at `e`.
    #[inline]
    pub fn edge(&self, e: EdgeIdx) -> EdgeRef<'_> {
        self.edge_with_src(e.0, UNKNOWN)
    }

    #[inline]
    pub(crate) fn edge_with_src(&self, e: u32, src: u32) -> EdgeRef<'_> {
        match &self.delta {
            Some(d) if e >= self.e => EdgeRef {
                a: self,
                i: e,
                src,
                p: self.pay(crate::delta::DE),
                cols: &d.edges,
                r: e - self.e,
            },
            _ => EdgeRef {
                a: self,
                i: e,
                src,
                p: self.ep(),
                cols: &self.edges,
                r: e,
            },
        }
    }

    /// The first position of `index` (a permutation sorted by `key`) whose key is not
    /// below `s`, searching `from..` (every position before `from` must be below `s`).
    pub(crate) fn lower_bound_from(
        &self,
        index: &UIntCol,
        key: &UIntCol,
        s: u64,
        from: usize,
    ) -> usize {
        let p = self.np();
        crate::cursor::run_end(from.min(index.len()), index.len(), |k| {
            key.get(p, index.get(p, k) as usize) < s
        })
    }

    /// First position in `index` (node indexes sorted by `key`) whose key is `>= s`.
    fn lower_bound(&self, index: &UIntCol, key: &UIntCol, s: u64) -> usize {
        self.lower_bound_from(index, key, s, 0)
    }

    /// Whether base row `b` is hidden by the delta layer (removed, or superseded by a row).
    #[inline]
    pub(crate) fn masked(&self, b: u32) -> bool {
        self.delta
            .as_ref()
            .is_some_and(|d| d.mask(self).contains(b))
    }

    /// Positions in the base id index holding `id`.
    fn base_id_range(&self, target: &[u8]) -> std::ops::Range<usize> {
        self.base_id_range_from(target, 0, &mut IdScratch::default())
    }

    /// [`Artifact::base_id_range`], searching from position `from` of the id index (every
    /// id before it must be below `target`).
    pub(crate) fn base_id_range_from(
        &self,
        target: &[u8],
        from: usize,
        sc: &mut IdScratch,
    ) -> std::ops::Range<usize> {
        let ix = &self.nodes.id_index;
        let p = self.np();
        let mut cmp = |k: usize| self.base_node(ix.get32(p, k)).cmp_id_in(target, sc);
        let lo = crate::cursor::run_end(from.min(ix.len()), ix.len(), |k| cmp(k).is_lt());
        let mut end = lo;
        while end < ix.len() && cmp(end).is_eq() {
            end += 1;
        }
        lo..end
    }

    /// The node with stable id `id` (the lowest index if a build produced duplicates);
    /// a binary search over the id index (O(log nodes) id comparisons), in each layer.
    pub fn lookup_id(&self, id: &str) -> Option<NodeIdx> {
        let target = id.as_bytes();
        let (ix, p) = (&self.nodes.id_index, self.np());
        let base = self
            .base_id_range(target)
            .map(|k| ix.get32(p, k))
            .find(|&b| !self.masked(b));
        let delta = self
            .delta
            .as_ref()
            .and_then(|d| d.rows_with_id(self, target).next());
        match (base, delta) {
            (Some(b), Some(d)) => Some(NodeIdx(b.min(d))),
            (b, d) => b.or(d).map(NodeIdx),
        }
    }

    /// Every node whose simple name is exactly `name`, ascending.
    pub fn lookup_name<'a>(&'a self, name: &str) -> NameIter<'a> {
        let (ix, key) = (&self.nodes.name_index, &self.nodes.name);
        let base = match self.base_find_string(name) {
            Some(s) => {
                let first = self.lower_bound(ix, key, u64::from(s.0));
                first..self.lower_bound_from(ix, key, u64::from(s.0) + 1, first)
            }
            None => 0..0,
        };
        let delta = self.delta.as_ref().map_or(0..0, |d| {
            d.name_range(self, |n| n < name.as_bytes(), |n| n <= name.as_bytes())
        });
        NameIter {
            a: self,
            base,
            delta,
        }
    }

    /// Every node whose simple name starts with `prefix`, ordered by name. The dictionary
    /// is sorted by bytes, so the names with a prefix are one run of string ids, and the
    /// name index (sorted by string id) holds their nodes as one range: two binary searches
    /// (per layer; the two ranges are merged by name).
    pub fn lookup_name_prefix<'a>(&'a self, prefix: &str) -> NameIter<'a> {
        let p = prefix.as_bytes();
        let first = self.partition_strings(|s| s < p);
        let end = self.partition_strings(|s| s < p || s.starts_with(p));
        let (ix, key) = (&self.nodes.name_index, &self.nodes.name);
        let start = self.lower_bound(ix, key, u64::from(first));
        let base = start..self.lower_bound_from(ix, key, u64::from(end), start);
        let delta = self.delta.as_ref().map_or(0..0, |d| {
            d.name_range(self, |n| n < p, |n| n < p || n.starts_with(p))
        });
        NameIter {
            a: self,
            base,
            delta,
        }
    }

    pub(crate) fn csr_range(&self, col: &UIntCol, n: NodeIdx) -> std::ops::Range<u32> {
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
    pub fn out_edges(&self, n: NodeIdx) -> EdgeIter<'_> {
        match &self.delta {
            None => EdgeIter::new(
                self,
                self.csr_range(&self.edges.out_offsets, n),
                0..0,
                false,
                n.0,
            ),
            Some(d) => match d.row_of(self, n.0) {
                Some(r) => EdgeIter::new(self, 0..0, d.out_range(self, r), false, n.0),
                None => EdgeIter::new(
                    self,
                    self.csr_range(&self.edges.out_offsets, n),
                    0..0,
                    false,
                    n.0,
                ),
            },
        }
    }

    /// Every node's out- and in-degree (indexed by node) leaving out the relationships of
    /// type `skipped`, read off the CSR offsets and `skipped`'s bitmap: O(nodes + edges of
    /// that type), where walking every edge reads its type and target columns (Linux 6.1:
    /// 18 M edges, 7 M of them CONTAINS). `None` when a delta layer is open (its edges are
    /// not in the base CSR; walk the edges instead).
    pub fn base_degrees_without(&self, skipped: RelType) -> Option<(Vec<u32>, Vec<u32>)> {
        if self.delta.is_some() {
            return None;
        }
        let nodes = self.n as usize;
        let (mut outgoing, mut incoming) = (Vec::with_capacity(nodes), Vec::with_capacity(nodes));
        for v in 0..self.n {
            outgoing.push(self.csr_range(&self.edges.out_offsets, NodeIdx(v)).len() as u32);
            incoming.push(self.csr_range(&self.edges.in_offsets, NodeIdx(v)).len() as u32);
        }
        // The out-ranges are consecutive in node order, as the bitmap's edges are: one walk
        // finds each skipped edge's source.
        let mut source = 0u32;
        let mut source_end = self.csr_range(&self.edges.out_offsets, NodeIdx(0)).end;
        for e in self.edges_of_rel(skipped) {
            while e >= source_end && source + 1 < self.n {
                source += 1;
                source_end = self.csr_range(&self.edges.out_offsets, NodeIdx(source)).end;
            }
            if let Some(count) = outgoing.get_mut(source as usize) {
                *count = count.saturating_sub(1);
            }
            let target = self.edge(EdgeIdx(e)).dst().0 as usize;
            if let Some(count) = incoming.get_mut(target) {
                *count = count.saturating_sub(1);
            }
        }
        Some((outgoing, incoming))
    }

    /// In-edges of `n`: the base layer's in edge index order, then the delta's.
    pub fn in_edges(&self, n: NodeIdx) -> EdgeIter<'_> {
        let base = self.csr_range(&self.edges.in_offsets, n);
        let delta = self.delta.as_ref().map_or(0..0, |d| d.in_range(self, n.0));
        EdgeIter::new(self, base, delta, true, UNKNOWN)
    }

    /// The source node of edge `e`: a binary search in the out-CSR offsets between the
    /// sources of the enclosing 256-edge block (usually a few adjacent offsets).
    pub fn edge_src(&self, e: EdgeIdx) -> NodeIdx {
        if let Some(d) = &self.delta
            && e.0 >= self.e
        {
            return NodeIdx(d.edge_src(self, e.0 - self.e));
        }
        let p = self.ep();
        NodeIdx(block_search(
            &self.edges.out_offsets,
            &self.edges.block_src,
            p,
            self.n,
            e.0,
        ))
    }

    /// Nodes of kind `k`.
    pub fn nodes_of_kind(&self, k: NodeKind) -> &RoaringBitmap {
        let base =
            self.bitmaps
                .kinds
                .get(self.bp(), self.bitmaps.data, usize::from(k.code()), self.n);
        match &self.delta {
            None => base,
            Some(d) => d.merged_kind(self, k, base),
        }
    }

    /// Edges of relation type `r`.
    pub fn edges_of_rel(&self, r: RelType) -> &RoaringBitmap {
        let base =
            self.bitmaps
                .rels
                .get(self.bp(), self.bitmaps.data, usize::from(r.code()), self.e);
        match &self.delta {
            None => base,
            Some(d) => d.merged_rel(self, r, base),
        }
    }

    /// Edges having role bit `role`; `role` must have exactly one bit set (otherwise the
    /// result is the empty bitmap).
    pub fn edges_with_role(&self, role: Roles) -> &RoaringBitmap {
        if role.0.count_ones() != 1 {
            return &EMPTY;
        }
        let bit = role.0.trailing_zeros() as usize;
        let base = self
            .bitmaps
            .roles
            .get(self.bp(), self.bitmaps.data, bit, self.e);
        match &self.delta {
            None => base,
            Some(d) => d.merged_role(self, bit, base),
        }
    }

    /// Nodes whose `file` is `path`, or `None` when no node has that file.
    pub fn nodes_in_file(&self, path: &str) -> Option<&RoaringBitmap> {
        let s = self.find_string(path)?;
        self.nodes_in_file_id(s.0)
    }

    /// Nodes whose `file` is the string with id `s`, or `None` when no node has it.
    pub(crate) fn nodes_in_file_id(&self, s: u32) -> Option<&RoaringBitmap> {
        if let Some(d) = &self.delta
            && let Some(bm) = d.touched_files(self).get(&s)
        {
            return (!bm.is_empty()).then_some(bm);
        }
        self.base_file_bitmap(s)
    }

    /// The base layer's bitmap of the file with string id `s`.
    pub(crate) fn base_file_bitmap(&self, s: u32) -> Option<&RoaringBitmap> {
        let slot = self.bitmaps.file_slot(self.bp(), s)?;
        Some(
            self.bitmaps
                .files
                .get(self.bp(), self.bitmaps.data, slot, self.n),
        )
    }

    /// Paths having a per-file bitmap (every non-empty node `file`), ascending.
    pub fn files(&self) -> Box<dyn Iterator<Item = Cow<'_, str>> + '_> {
        match &self.delta {
            None => Box::new(
                (0..self.bitmaps.file_keys.len())
                    .map(move |k| self.string(StrId(self.bitmaps.file_keys.get32(self.bp(), k)))),
            ),
            Some(d) => Box::new(d.files(self).iter().map(move |&s| self.string(StrId(s)))),
        }
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
        use crate::input::{EdgeInput, GraphBuilder, IdText, NodeInput};
        let mut g = GraphBuilder::new();
        let s = g.intern("n");
        for i in 0..1000u32 {
            let id = IdText::Text(g.intern(&format!("f.c:n{i}")));
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
                doc: StrId(0),
                content_hash: [0; 8],
                flags: NodeFlags::default(),
                community: 0,
                pagerank: 0,
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
                    sites: crate::input::SitesId::ONE,
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

        // The id cursor answers like `lookup_id` in ascending order, out of it, and for
        // ids that are not there.
        let mut ids: Vec<String> = (0..1000).step_by(3).map(|i| format!("f.c:n{i}")).collect();
        ids.extend(["f.c:n", "f.c:n5x", "zzz", ""].map(String::from));
        ids.sort();
        let shuffled: Vec<String> = ids.iter().rev().step_by(2).chain(&ids).cloned().collect();
        for batch in [&ids, &shuffled] {
            let mut cursor = a.id_cursor();
            for id in batch {
                let want: Vec<NodeIdx> = a.lookup_id(id).into_iter().collect();
                assert_eq!(cursor.nodes_with_id(id), want, "{id}");
            }
        }
    }
}
