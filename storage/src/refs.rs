//! [`NodeRef`] and [`EdgeRef`]: typed views of one node or edge of an [`Artifact`].
//!
//! Both are two or three words (artifact reference, index, known source) and decode each
//! field from the mapped columns on demand.

use std::borrow::Cow;

use batho_schema::{Language, NodeFlags, NodeKind, RelType, Roles, Strategy};

use crate::column::UIntCol;
use crate::input::{NodeIdx, StrId};
use crate::reader::{Artifact, EdgeIdx};
use crate::writer::CONTENT_HASH_LEN;

/// Marks an [`EdgeRef`] whose source has not been looked up yet.
pub(crate) const UNKNOWN: u32 = u32::MAX;

/// A node of an [`Artifact`].
#[derive(Clone, Copy)]
pub struct NodeRef<'a> {
    pub(crate) a: &'a Artifact,
    pub(crate) i: u32,
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
        c.get(self.a.np(), self.i as usize)
    }
    #[inline]
    fn sid(&self, c: &UIntCol) -> StrId {
        StrId(u32::try_from(self.col(c)).unwrap_or(u32::MAX))
    }

    /// Index of the node.
    pub fn idx(&self) -> NodeIdx {
        NodeIdx(self.i)
    }
    /// Stable id. Borrowed from the dictionary when stored; built (one allocation) when it
    /// is the usual `file:qualified_name`, which the format does not store.
    pub fn id(&self) -> Cow<'a, str> {
        match self.id_sid() {
            Some(s) => Cow::Borrowed(self.a.string(s)),
            None => Cow::Owned(format!("{}:{}", self.file(), self.qualified_name())),
        }
    }
    /// Whether the id of this node is `id`, without allocating.
    pub fn id_is(&self, id: &str) -> bool {
        self.a.cmp_id(self.i, id.as_bytes()).is_eq()
    }
    /// String id of [`Self::id`], or `None` when the id is composed from file and qualified name.
    pub fn id_sid(&self) -> Option<StrId> {
        match self.col(&self.a.nodes.id) {
            0 => None,
            v => Some(StrId(u32::try_from(v - 1).unwrap_or(u32::MAX))),
        }
    }
    /// Simple name.
    pub fn name(&self) -> &'a str {
        self.a.string(self.name_sid())
    }
    /// String id of [`Self::name`].
    pub fn name_sid(&self) -> StrId {
        self.sid(&self.a.nodes.name)
    }
    /// Qualified name.
    pub fn qualified_name(&self) -> &'a str {
        self.a.string(self.qualified_name_sid())
    }
    /// String id of [`Self::qualified_name`].
    pub fn qualified_name_sid(&self) -> StrId {
        match self.col(&self.a.nodes.qualified_name) {
            0 => self.name_sid(),
            v => StrId(u32::try_from(v - 1).unwrap_or(u32::MAX)),
        }
    }
    /// Repo-relative path of the defining file (`""` for stubs).
    pub fn file(&self) -> &'a str {
        self.a.string(self.file_sid())
    }
    /// String id of [`Self::file`].
    pub fn file_sid(&self) -> StrId {
        self.sid(&self.a.nodes.file)
    }
    /// Declaration text (`""` when none).
    pub fn signature(&self) -> &'a str {
        self.a.string(self.signature_sid())
    }
    /// String id of [`Self::signature`].
    pub fn signature_sid(&self) -> StrId {
        self.sid(&self.a.nodes.signature)
    }
    #[inline]
    fn packed_type(&self) -> u64 {
        let code = self.col(&self.a.nodes.node_type) as usize;
        self.a.nodes.type_palette.get(self.a.np(), code)
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
        self.col(&self.a.nodes.start_line) as u32
    }
    /// Last line (inclusive).
    pub fn end_line(&self) -> u32 {
        self.start_line()
            .wrapping_add(self.col(&self.a.nodes.line_span) as u32)
    }
    /// First byte.
    pub fn start_byte(&self) -> u64 {
        self.col(&self.a.nodes.start_byte)
    }
    /// One past the last byte.
    pub fn end_byte(&self) -> u64 {
        self.start_byte()
            .wrapping_add(self.col(&self.a.nodes.byte_span))
    }
    /// Community id.
    pub fn community(&self) -> u32 {
        self.col(&self.a.nodes.community) as u32
    }
    /// The first 16 bytes (128 bits) of the blake3 content hash given to the writer.
    pub fn content_hash(&self) -> [u8; 16] {
        let mut h = [0u8; 16];
        let b = self.a.nodes.content_hash.bytes(self.a.np());
        let at = self.i as usize * CONTENT_HASH_LEN;
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
        c.get(self.a.ep(), self.i as usize)
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
        NodeIdx(self.col(&self.a.edges.dst) as u32)
    }
    #[inline]
    fn packed_type(&self) -> u64 {
        let code = self.col(&self.a.edges.edge_type) as usize;
        self.a.edges.type_palette.get(self.a.ep(), code)
    }
    /// Relation type (`Contains` for an unknown code, which only damage causes).
    pub fn rel(&self) -> RelType {
        RelType::from_code(self.packed_type() as u8).unwrap_or(RelType::Contains)
    }
    /// SymbolRole mask.
    pub fn roles(&self) -> Roles {
        Roles((self.packed_type() >> 8) as u8)
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
        match self.col(&self.a.edges.file_override) {
            0 => self.a.node(self.src()).file_sid(),
            f => StrId(u32::try_from(f - 1).unwrap_or(u32::MAX)),
        }
    }
    /// Repo-relative path of the use-site file (`""` when none).
    pub fn file(&self) -> &'a str {
        self.a.string(self.file_sid())
    }
    /// Use-site line (0 when none).
    pub fn line(&self) -> u32 {
        self.col(&self.a.edges.line) as u32
    }
}
