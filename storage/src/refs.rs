//! [`NodeRef`] and [`EdgeRef`]: typed views of one node or edge of an [`Artifact`].
//!
//! Both hold the artifact, the index, and where the row lives (the base layer's columns
//! or the delta layer's, resolved once when the view is made), and decode each field from
//! the mapped columns on demand. String fields are `Cow`s: the dictionary is front-coded
//! (`strings.rs`), so most strings are assembled from their block rather than borrowed.

use std::borrow::Cow;

use batho_schema::{Language, NodeFlags, NodeKind, RelType, Roles, Strategy};

use crate::column::UIntCol;
use crate::input::{CONTENT_HASH_LEN, StoredHash};
use crate::input::{NodeIdx, StrId};
use crate::reader::{Artifact, EdgeCols, EdgeIdx, NodeCols};

/// Marks an [`EdgeRef`] whose source has not been looked up yet.
pub(crate) const UNKNOWN: u32 = u32::MAX;

/// What [`NodeRef::cmp_id_in`] keeps between the comparisons of one binary search (a
/// dozen comparisons or more): buffers to assemble strings in (allocated once, not per
/// comparison), and the file of the last composed id it assembled (the last steps of a
/// search stay in one file).
pub(crate) struct IdScratch {
    file_sid: StrId,
    file: Vec<u8>,
    rest: Vec<u8>,
}

impl Default for IdScratch {
    fn default() -> Self {
        IdScratch {
            file_sid: StrId(u32::MAX),
            file: Vec::new(),
            rest: Vec::new(),
        }
    }
}

/// A node of an [`Artifact`].
#[derive(Clone, Copy)]
pub struct NodeRef<'a> {
    pub(crate) a: &'a Artifact,
    pub(crate) i: u32,
    /// Payload and columns of the layer holding the row, and the row in it.
    pub(crate) p: &'a [u8],
    pub(crate) cols: &'a NodeCols,
    pub(crate) r: u32,
}

impl std::fmt::Debug for NodeRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeRef")
            .field("idx", &self.i)
            .field("id", &self.id())
            .field("kind", &self.kind())
            .finish()
    }
}

impl<'a> NodeRef<'a> {
    #[inline]
    fn col(&self, c: &UIntCol) -> u64 {
        c.get(self.p, self.r as usize)
    }
    #[inline]
    fn sid(&self, c: &UIntCol) -> StrId {
        StrId(u32::try_from(self.col(c)).unwrap_or(u32::MAX))
    }

    /// Index of the node.
    pub fn idx(&self) -> NodeIdx {
        NodeIdx(self.i)
    }
    /// Stable id. From the dictionary when stored; built (one allocation) when it is the
    /// usual `file:qualified_name`, which the format does not store.
    pub fn id(&self) -> Cow<'a, str> {
        if let Some(s) = self.id_sid() {
            return self.a.string(s);
        }
        // Each part is checked on its own, as `file()` and `qualified_name()` would read
        // a damaged one as "".
        let mut v = Vec::new();
        self.a.append_string(self.file_sid(), &mut v);
        if std::str::from_utf8(&v).is_err() {
            v.clear();
        }
        let colon = v.len();
        v.push(b':');
        self.a.append_string(self.qualified_name_sid(), &mut v);
        if std::str::from_utf8(&v[colon + 1..]).is_err() {
            v.truncate(colon + 1);
        }
        Cow::Owned(String::from_utf8(v).unwrap_or_default())
    }
    /// Whether the id of this node is `id`.
    pub fn id_is(&self, id: &str) -> bool {
        self.cmp_id(id.as_bytes()).is_eq()
    }
    /// Appends the bytes of the id to `out` (no UTF-8 check: for comparisons).
    pub(crate) fn append_id(&self, out: &mut Vec<u8>) {
        match self.id_sid() {
            Some(s) => self.a.append_string(s, out),
            None => {
                self.a.append_string(self.file_sid(), out);
                out.push(b':');
                self.a.append_string(self.qualified_name_sid(), out);
            }
        }
    }
    /// Compares the id with `target`.
    pub(crate) fn cmp_id(&self, target: &[u8]) -> std::cmp::Ordering {
        self.cmp_id_in(target, &mut IdScratch::default())
    }
    /// Compares the id with `target`, reading the qualified name of a composed id only
    /// when the file part matches (most binary-search steps stop at the file), and
    /// assembling a string in `sc` only when its block head does not decide.
    pub(crate) fn cmp_id_in(&self, target: &[u8], sc: &mut IdScratch) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        // `s` against `t`: equal prefixes order by length.
        let whole = |s: StrId, t: &[u8], buf: &mut Vec<u8>| {
            let (o, len, _) = self.a.cmp_string_prefix(s, t, buf);
            o.then(len.cmp(&t.len()))
        };
        if let Some(s) = self.id_sid() {
            return whole(s, target, &mut sc.rest);
        }
        let fs = self.file_sid();
        let (o, file_len) = if sc.file_sid == fs {
            let k = sc.file.len().min(target.len());
            (sc.file[..k].cmp(&target[..k]), sc.file.len())
        } else {
            let (o, len, held) = self.a.cmp_string_prefix(fs, target, &mut sc.file);
            sc.file_sid = if held { fs } else { StrId(u32::MAX) };
            (o, len)
        };
        match o {
            Ordering::Equal if file_len > target.len() => Ordering::Greater,
            Ordering::Equal => match target[file_len..].split_first() {
                None => Ordering::Greater,
                Some((&b':', rest)) => whole(self.qualified_name_sid(), rest, &mut sc.rest),
                Some((c, _)) => b':'.cmp(c),
            },
            o => o,
        }
    }
    /// String id of [`Self::id`], or `None` when the id is composed from file and qualified name.
    pub fn id_sid(&self) -> Option<StrId> {
        match self.col(&self.cols.id) {
            0 => None,
            v => Some(StrId(u32::try_from(v - 1).unwrap_or(u32::MAX))),
        }
    }
    /// Simple name.
    pub fn name(&self) -> Cow<'a, str> {
        self.a.string(self.name_sid())
    }
    /// String id of [`Self::name`].
    pub fn name_sid(&self) -> StrId {
        self.sid(&self.cols.name)
    }
    /// Qualified name.
    pub fn qualified_name(&self) -> Cow<'a, str> {
        self.a.string(self.qualified_name_sid())
    }
    /// String id of [`Self::qualified_name`].
    pub fn qualified_name_sid(&self) -> StrId {
        match self.col(&self.cols.qualified_name) {
            0 => self.name_sid(),
            v => StrId(u32::try_from(v - 1).unwrap_or(u32::MAX)),
        }
    }
    /// Repo-relative path of the defining file (`""` for stubs).
    pub fn file(&self) -> Cow<'a, str> {
        self.a.string(self.file_sid())
    }
    /// String id of [`Self::file`].
    pub fn file_sid(&self) -> StrId {
        self.sid(&self.cols.file)
    }
    /// Declaration text (`""` when none).
    pub fn signature(&self) -> Cow<'a, str> {
        self.a.string(self.signature_sid())
    }
    /// String id of [`Self::signature`].
    pub fn signature_sid(&self) -> StrId {
        self.sid(&self.cols.signature)
    }
    /// The words of the comment above the entity (`NodeInput::doc`), empty when none.
    pub fn doc(&self) -> Cow<'a, str> {
        self.a.string(self.doc_sid())
    }
    /// String id of [`Self::doc`].
    pub fn doc_sid(&self) -> StrId {
        self.sid(&self.cols.doc)
    }
    #[inline]
    fn packed_type(&self) -> u64 {
        let code = self.col(&self.cols.node_type) as usize;
        self.cols.type_palette.get(self.p, code)
    }
    /// Node kind (`External` if the stored code is unknown, which only damage causes).
    pub fn kind(&self) -> NodeKind {
        NodeKind::from_code(self.packed_type() as u8).unwrap_or(NodeKind::External)
    }
    /// Source language (`Unknown` for an unknown code).
    pub fn language(&self) -> Language {
        Language::from_code((self.packed_type() >> 16) as u8).unwrap_or(Language::Unknown)
    }
    /// Flags.
    pub fn flags(&self) -> NodeFlags {
        NodeFlags((self.packed_type() >> 8) as u8)
    }
    /// First line (1-based, 0 when unknown).
    pub fn start_line(&self) -> u32 {
        self.col(&self.cols.start_line) as u32
    }
    /// Last line (inclusive).
    pub fn end_line(&self) -> u32 {
        self.start_line()
            .wrapping_add(self.col(&self.cols.line_span) as u32)
    }
    /// First byte.
    pub fn start_byte(&self) -> u32 {
        self.col(&self.cols.start_byte) as u32
    }
    /// One past the last byte.
    pub fn end_byte(&self) -> u32 {
        self.start_byte()
            .wrapping_add(self.col(&self.cols.byte_span) as u32)
    }
    /// Community id.
    pub fn community(&self) -> u32 {
        self.col(&self.cols.community) as u32
    }
    /// Rank score, as given to the writer (`NodeInput::pagerank`).
    pub fn pagerank(&self) -> u32 {
        self.col(&self.cols.pagerank) as u32
    }
    /// The first [`CONTENT_HASH_LEN`] bytes of the blake3 content hash given to the writer.
    pub fn content_hash(&self) -> StoredHash {
        let mut h = [0u8; CONTENT_HASH_LEN];
        let b = self.cols.content_hash.bytes(self.p);
        let at = self.r as usize * CONTENT_HASH_LEN;
        if let Some(s) = b.get(at..at + CONTENT_HASH_LEN) {
            h.copy_from_slice(s);
        }
        h
    }
}

/// An edge of an [`Artifact`].
#[derive(Clone, Copy)]
pub struct EdgeRef<'a> {
    pub(crate) a: &'a Artifact,
    pub(crate) i: u32,
    pub(crate) src: u32,
    /// Payload and columns of the layer holding the row, and the row in it.
    pub(crate) p: &'a [u8],
    pub(crate) cols: &'a EdgeCols,
    pub(crate) r: u32,
}

impl std::fmt::Debug for EdgeRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeRef")
            .field("idx", &self.i)
            .field("src", &self.src().0)
            .field("dst", &self.dst().0)
            .field("rel", &self.rel())
            .finish()
    }
}

impl<'a> EdgeRef<'a> {
    #[inline]
    fn col(&self, c: &UIntCol) -> u64 {
        c.get(self.p, self.r as usize)
    }
    /// Index of the edge.
    pub fn idx(&self) -> EdgeIdx {
        EdgeIdx(self.i)
    }
    /// Source node (known for out-edges; one binary search otherwise).
    pub fn src(&self) -> NodeIdx {
        if self.src != UNKNOWN {
            NodeIdx(self.src)
        } else {
            self.a.edge_src(EdgeIdx(self.i))
        }
    }
    /// Target node.
    pub fn dst(&self) -> NodeIdx {
        NodeIdx(self.col(&self.cols.dst) as u32)
    }
    #[inline]
    fn packed_type(&self) -> u64 {
        let code = self.col(&self.cols.edge_type) as usize;
        self.cols.type_palette.get(self.p, code)
    }
    /// Relation type (`Contains` for an unknown code, which only damage causes).
    pub fn rel(&self) -> RelType {
        RelType::from_code(self.packed_type() as u8).unwrap_or(RelType::Contains)
    }
    /// SymbolRole mask: the SymbolRole bits at 8..16 of the packed type, Batho's own
    /// (`Inactive`) at 24..32.
    pub fn roles(&self) -> Roles {
        let p = self.packed_type();
        Roles(u16::from((p >> 8) as u8) | u16::from((p >> 24) as u8) << 8)
    }
    /// Resolution strategy (`Unresolved` for an unknown code).
    pub fn strategy(&self) -> Strategy {
        Strategy::from_code((self.packed_type() >> 16) as u8).unwrap_or(Strategy::Unresolved)
    }
    /// Confidence, exactly as given to the writer (bit for bit).
    pub fn confidence(&self) -> f32 {
        f32::from_bits((self.packed_type() >> 32) as u32)
    }
    /// String id of the use-site file.
    pub fn file_sid(&self) -> StrId {
        match self.col(&self.cols.file_override) {
            0 => self.a.node(self.src()).file_sid(),
            f => StrId(u32::try_from(f - 1).unwrap_or(u32::MAX)),
        }
    }
    /// Repo-relative path of the use-site file (`""` when none).
    pub fn file(&self) -> Cow<'a, str> {
        self.a.string(self.file_sid())
    }
    /// The use-site file's string id when it is not the source node's file (stored as a
    /// sparse override; `None`: [`Self::file_sid`] is the source's file). Costs one column
    /// read, where [`Self::file_sid`] may have to find the source node.
    pub fn file_sid_override(&self) -> Option<StrId> {
        match self.col(&self.cols.file_override) {
            0 => None,
            f => Some(StrId(u32::try_from(f - 1).unwrap_or(u32::MAX))),
        }
    }
    /// Use-site line (0 when none); with several use sites, the first.
    pub fn line(&self) -> u32 {
        self.col(&self.cols.line) as u32
    }

    /// The range of this edge's list in the SITES column (empty: one site or none).
    fn site_range(&self) -> std::ops::Range<usize> {
        let r = self.r as usize;
        let end = (self.cols.site_offsets.get(self.p, r + 1) as usize).min(self.cols.sites.len());
        // Damage can disorder the offsets; an empty range reads as one site.
        let start = (self.cols.site_offsets.get(self.p, r) as usize).min(end);
        start..end
    }

    /// Number of use sites folded into the edge (0 when it has no use site).
    pub fn site_count(&self) -> u32 {
        let range = self.site_range();
        if range.is_empty() {
            u32::from(self.line() != 0)
        } else {
            self.cols.sites.get(self.p, range.start) as u32
        }
    }

    /// The distinct lines of the edge's use sites, ascending (empty when it has none).
    pub fn site_lines(&self) -> Vec<u32> {
        let range = self.site_range();
        if range.is_empty() {
            let line = self.line();
            return if line == 0 { Vec::new() } else { vec![line] };
        }
        (range.start + 1..range.end)
            .map(|k| self.cols.sites.get(self.p, k) as u32)
            .collect()
    }

    /// Records this edge's use sites in `g`, for an edge of `g` copied from this one.
    pub fn copy_sites_to(&self, g: &mut crate::input::GraphBuilder) -> crate::input::SitesId {
        if self.site_range().is_empty() {
            return crate::input::SitesId::ONE;
        }
        g.add_sites(self.site_count(), &self.site_lines())
    }
}
