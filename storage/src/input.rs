//! The in-memory graph a build hands to the store.
//!
//! The extractor and resolver fill a [`GraphBuilder`]; [`crate`]'s writer turns it into
//! segments. Strings are interned as they arrive so that a kernel-size graph (millions of
//! nodes and edges) does not hold one heap allocation per field.

use std::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::HashTable;

use batho_schema::{Language, NodeFlags, NodeKind, RelType, Roles, Strategy};

/// An interned string: an index into [`GraphBuilder::strings`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StrId(pub u32);

/// The position of a node in [`GraphBuilder::nodes`], and later in the artifact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeIdx(pub u32);

/// One node as the build produced it.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeInput {
    /// Stable id: repo-relative path + `:` + qualified name (disambiguated for overloads).
    pub id: StrId,
    /// Simple name (`validate_token`).
    pub name: StrId,
    /// Qualified name (`auth::Manager::validate_token`).
    pub qualified_name: StrId,
    /// Node kind.
    pub kind: NodeKind,
    /// Repo-relative path of the defining file, forward slashes; empty for external stubs.
    pub file: StrId,
    /// Source language.
    pub language: Language,
    /// First line, 1-based (0 when unknown).
    pub start_line: u32,
    /// Last line, 1-based, inclusive.
    pub end_line: u32,
    /// Byte offset of the first byte in the file.
    pub start_byte: u64,
    /// Byte offset one past the last byte.
    pub end_byte: u64,
    /// Declaration text up to the body (`int add(int a, int b)`), empty when none.
    pub signature: StrId,
    /// blake3 of the entity's source text (all zeros for stubs).
    pub content_hash: [u8; 32],
    /// Linkage and declaration flags.
    pub flags: NodeFlags,
    /// Community id (0 until communities are computed).
    pub community: u32,
}

/// One edge as the build produced it.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeInput {
    /// Source node.
    pub src: NodeIdx,
    /// Target node.
    pub dst: NodeIdx,
    /// Relation type.
    pub rel: RelType,
    /// SymbolRole mask.
    pub roles: Roles,
    /// Resolution confidence (normally `strategy.confidence()`).
    pub confidence: f32,
    /// Resolution strategy that produced the edge.
    pub strategy: Strategy,
    /// Repo-relative path of the use site's file; empty when none.
    pub file: StrId,
    /// 1-based line of the use site (0 when none).
    pub line: u32,
}

/// Accumulates the nodes, edges and strings of one graph generation.
#[derive(Clone, Default)]
pub struct GraphBuilder {
    strings: Vec<String>,
    // Ids of `strings`, hashed by their text. The text is stored once (in `strings`): a
    // kernel build interns tens of millions of strings, and a `HashMap<String, _>` would
    // hold a second copy of each and hash it with SipHash.
    string_ids: HashTable<StrId>,
    /// Nodes in insertion order; a node's index is its [`NodeIdx`].
    pub nodes: Vec<NodeInput>,
    /// Edges in any order; the writer sorts them into CSR order.
    pub edges: Vec<EdgeInput>,
}

/// A fixed-seed hash: interning must not depend on a random seed, so that builds stay
/// reproducible (the ids themselves come from insertion order either way).
fn string_hash(s: &str) -> u64 {
    FixedState::with_seed(0x6261_7468_6f00_0001).hash_one(s)
}

impl std::fmt::Debug for GraphBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphBuilder")
            .field("strings", &self.strings.len())
            .field("nodes", &self.nodes.len())
            .field("edges", &self.edges.len())
            .finish()
    }
}

impl GraphBuilder {
    /// An empty graph whose string table already holds `""` as `StrId(0)`.
    pub fn new() -> Self {
        let mut b = GraphBuilder::default();
        b.intern("");
        b
    }

    /// Interns `s`, returning the id of an equal string if one exists.
    pub fn intern(&mut self, s: &str) -> StrId {
        let hash = string_hash(s);
        let strings = &self.strings;
        if let Some(id) = self.string_ids.find(hash, |id| strings[id.0 as usize] == s) {
            return *id;
        }
        let id = StrId(u32::try_from(self.strings.len()).expect("more than 2^32 strings"));
        self.strings.push(s.to_owned());
        let strings = &self.strings;
        self.string_ids
            .insert_unique(hash, id, |id| string_hash(&strings[id.0 as usize]));
        id
    }

    /// The text of an interned string.
    pub fn str(&self, id: StrId) -> &str {
        &self.strings[id.0 as usize]
    }

    /// Every interned string, indexed by `StrId`.
    pub fn strings(&self) -> &[String] {
        &self.strings
    }

    /// Appends a node and returns its index.
    pub fn add_node(&mut self, node: NodeInput) -> NodeIdx {
        let idx = NodeIdx(u32::try_from(self.nodes.len()).expect("more than 2^32 nodes"));
        self.nodes.push(node);
        idx
    }

    /// Appends an edge. Both ends must already be nodes of this builder.
    pub fn add_edge(&mut self, edge: EdgeInput) {
        debug_assert!((edge.src.0 as usize) < self.nodes.len());
        debug_assert!((edge.dst.0 as usize) < self.nodes.len());
        self.edges.push(edge);
    }
}
