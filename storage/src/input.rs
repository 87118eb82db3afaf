//! The in-memory graph a build hands to the store.
//!
//! The extractor and resolver fill a [`GraphBuilder`]; [`crate`]'s writer turns it into
//! segments. Strings are interned as they arrive, into one text arena, so that a
//! kernel-size graph (millions of nodes and edges) holds no heap allocation per string; and
//! the usual id `file:qualified_name` is not interned at all (see [`IdText`]).

use std::borrow::Cow;
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

/// A node's stable id as the builder holds it.
///
/// Most ids are `file + ":" + qualified_name`; the writer does not store those either
/// (they are composed on read), so interning them would only cost memory: on a kernel,
/// 7 M strings of ~55 bytes each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IdText {
    /// The id is the node's `file + ":" + qualified_name`.
    Composed,
    /// Any other id (files, external stubs, overloads disambiguated with `#2`).
    Text(StrId),
}

/// Whether `id` is exactly `file + ":" + qualified_name`, the usual shape.
pub(crate) fn is_composed(id: &str, file: &str, qualified_name: &str) -> bool {
    id.len() == file.len() + 1 + qualified_name.len()
        && id.starts_with(file)
        && id.as_bytes()[file.len()] == b':'
        && id.ends_with(qualified_name)
}

/// Number of content-hash bytes kept per node (a 64-bit blake3 prefix). Everything that
/// compares a fresh hash with a stored one (patch change detection, facts-cache keys)
/// must truncate to this length.
pub const CONTENT_HASH_LEN: usize = 8;

/// What a build and the artifact keep of a node's blake3 content hash: its first
/// [`CONTENT_HASH_LEN`] bytes (holding all 32 per node cost a kernel build 230 MB).
pub type StoredHash = [u8; CONTENT_HASH_LEN];

/// The [`StoredHash`] of `text`.
pub fn content_hash(text: &[u8]) -> StoredHash {
    content_hash_prefix(blake3::hash(text).as_bytes())
}

/// The [`StoredHash`] part of a full 32-byte blake3 hash.
pub fn content_hash_prefix(full: &[u8; 32]) -> StoredHash {
    let mut h = [0; CONTENT_HASH_LEN];
    h.copy_from_slice(&full[..CONTENT_HASH_LEN]);
    h
}

/// One node as the build produced it.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeInput {
    /// Stable id: repo-relative path + `:` + qualified name (disambiguated for overloads).
    pub id: IdText,
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
    /// Byte offset of the first byte in the file. Offsets are `u32`, as tree-sitter's
    /// are (no parsed file is 4 GiB), which keeps a kernel's 7 M nodes 58 MB smaller.
    pub start_byte: u32,
    /// Byte offset one past the last byte.
    pub end_byte: u32,
    /// Declaration text up to the body (`int add(int a, int b)`), empty when none.
    pub signature: StrId,
    /// The words of the comment written directly above the entity (cut short), empty when
    /// none: stored, shown as the `doc` property and searched by the text index.
    pub doc: StrId,
    /// blake3 of the entity's source text (all zeros for stubs).
    pub content_hash: StoredHash,
    /// Linkage and declaration flags.
    pub flags: NodeFlags,
    /// Community id (0 until communities are computed).
    pub community: u32,
    /// Rank score (0 until computed): the engine stores PageRank in fixed point there.
    pub pagerank: u32,
}

/// Per-node columns a caller computes from a whole graph (communities, PageRank) and
/// hands to the writer late, one value per node (see `WriterLock::commit_with_scores`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeScores {
    /// Community id of each node (`NodeInput::community`).
    pub communities: Vec<u32>,
    /// Rank score of each node (`NodeInput::pagerank`).
    pub pagerank: Vec<u32>,
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
    /// 1-based line of the use site (0 when none); with several sites, the first.
    pub line: u32,
    /// The use sites folded into the edge when there are several (see [`SitesId`]).
    pub sites: SitesId,
}

/// The use sites of an edge that folds several (one CALLS edge per caller and callee,
/// however many calls): an index into its [`GraphBuilder`]'s site lists.
/// `SitesId::ONE` (the usual case) is one site, on the edge's `line`, or none when
/// the line is 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SitesId(pub u32);

impl SitesId {
    /// One site, on the edge's line (none when it is 0).
    pub const ONE: SitesId = SitesId(0);
}

/// The use sites an edge folds: how many, and their distinct lines ascending (several
/// sites may share a line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sites<'a> {
    /// Number of use sites.
    pub count: u32,
    /// Their distinct lines, ascending; the first is the edge's `line`.
    pub lines: &'a [u32],
}

/// Accumulates the nodes, edges and strings of one graph generation.
#[derive(Clone, Default)]
pub struct GraphBuilder {
    // Every interned string, back to back: string `k` is `text[ends[k-1]..ends[k]]`
    // (`ends[-1]` = 0). One arena instead of a `String` each saves the 24-byte header and
    // the allocator's per-block overhead of millions of short names.
    text: String,
    ends: Vec<u64>,
    // Ids of the strings, hashed by their text. The text is stored once (in `text`): a
    // `HashMap<String, _>` would hold a second copy of each and hash it with SipHash.
    string_ids: HashTable<InternSlot>,
    /// Nodes in insertion order; a node's index is its [`NodeIdx`].
    pub nodes: Vec<NodeInput>,
    /// Edges in any order; the writer sorts them into CSR order.
    pub edges: Vec<EdgeInput>,
    // The site lists of edges with several use sites, back to back: list `k` is
    // `sites[k]` (the site count), `sites[k + 1]` (the number of lines), then the lines.
    // Index 0 is never a list (`SitesId::ONE`); most edges have one site and no list.
    sites: Vec<u32>,
}

/// String `id` of an arena (see [`GraphBuilder`]); panics on an id it never issued, like
/// the indexing of a `Vec` would.
fn arena_str<'a>(text: &'a str, ends: &[u64], id: StrId) -> &'a str {
    let k = id.0 as usize;
    let start = if k == 0 { 0 } else { ends[k - 1] as usize };
    &text[start..ends[k] as usize]
}

/// A fixed-seed hash: interning must not depend on a random seed, so that builds stay
/// reproducible (the ids themselves come from insertion order either way).
fn string_hash(s: &str) -> u32 {
    FixedState::with_seed(0x6261_7468_6f00_0001).hash_one(s) as u32
}

/// An interned string in [`GraphBuilder`]'s table: its id, and its hash, kept so that
/// growing the table never reads the string again (on a kernel-size build each growth
/// re-hashed millions of strings scattered over the arena, a cache miss each), and so
/// that a probe compares texts only when the full hashes agree.
#[derive(Clone, Copy)]
struct InternSlot {
    id: StrId,
    hash: u32,
}

impl InternSlot {
    /// The 64-bit hash the table places a slot by, spread from the stored 32 bits (the
    /// table takes its bucket from the low bits and its tag from the top ones).
    fn table_hash(hash: u32) -> u64 {
        u64::from(hash).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    /// The id of `s` (whose hash is `hash`) in `table`, over the arena `text`/`ends`.
    fn find(
        table: &HashTable<InternSlot>,
        text: &str,
        ends: &[u64],
        s: &str,
        hash: u32,
    ) -> Option<StrId> {
        table
            .find(Self::table_hash(hash), |k| {
                k.hash == hash && arena_str(text, ends, k.id) == s
            })
            .map(|k| k.id)
    }

    /// Adds string `id`, not yet in `table`, whose hash is `hash`.
    fn insert(table: &mut HashTable<InternSlot>, id: StrId, hash: u32) {
        table.insert_unique(Self::table_hash(hash), InternSlot { id, hash }, |k| {
            Self::table_hash(k.hash)
        });
    }
}

impl std::fmt::Debug for GraphBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphBuilder")
            .field("strings", &self.ends.len())
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
        if self.string_ids.len() != self.ends.len() {
            self.rebuild_string_index();
        }
        let hash = string_hash(s);
        if let Some(id) = InternSlot::find(&self.string_ids, &self.text, &self.ends, s, hash) {
            return id;
        }
        let id = StrId(u32::try_from(self.ends.len()).expect("more than 2^32 strings"));
        self.text.push_str(s);
        self.ends.push(self.text.len() as u64);
        InternSlot::insert(&mut self.string_ids, id, hash);
        id
    }

    /// Interns each of `texts` in order and returns their ids: the same ids as calling
    /// [`GraphBuilder::intern`] on each in turn. The strings the builder already holds
    /// (most names of a large tree repeat) are found on every core at once, as the
    /// table is only read then; only the new ones are added, in order, on this thread.
    pub fn intern_all(&mut self, texts: &[&str]) -> Vec<StrId> {
        const MISSING: StrId = StrId(u32::MAX);
        /// Below this many strings a second thread costs more than it saves.
        const PARALLEL_FROM: usize = 16_384;
        if self.string_ids.len() != self.ends.len() {
            self.rebuild_string_index();
        }
        let mut ids = vec![MISSING; texts.len()];
        let (text, ends, table) = (&self.text, &self.ends, &self.string_ids);
        let find = |texts: &[&str], ids: &mut [StrId]| {
            for (s, id) in texts.iter().zip(ids) {
                let hash = string_hash(s);
                if let Some(found) = InternSlot::find(table, text, ends, s, hash) {
                    *id = found;
                }
            }
        };
        let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
        if threads < 2 || texts.len() < PARALLEL_FROM {
            find(texts, &mut ids);
        } else {
            let per = texts.len().div_ceil(threads);
            std::thread::scope(|s| {
                for (t, i) in texts.chunks(per).zip(ids.chunks_mut(per)) {
                    s.spawn(move || find(t, i));
                }
            });
        }
        for (s, id) in texts.iter().zip(&mut ids) {
            if *id == MISSING {
                *id = self.intern(s);
            }
        }
        ids
    }

    /// Frees the table that finds a string's id by its text (tens of megabytes on a
    /// kernel-size graph). A finished graph that is about to be written only needs the
    /// texts; [`GraphBuilder::intern`] rebuilds the table if it is called again.
    pub fn release_string_index(&mut self) {
        self.string_ids = HashTable::new();
    }

    fn rebuild_string_index(&mut self) {
        let (text, ends) = (&self.text, &self.ends);
        let mut ids = HashTable::with_capacity(ends.len());
        for k in 0..ends.len() as u32 {
            let id = StrId(k);
            let hash = string_hash(arena_str(text, ends, id));
            InternSlot::insert(&mut ids, id, hash);
        }
        self.string_ids = ids;
    }

    /// The text of an interned string.
    pub fn str(&self, id: StrId) -> &str {
        arena_str(&self.text, &self.ends, id)
    }

    /// Every interned string, in `StrId` order.
    pub fn strings(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.ends.len() as u32).map(|k| self.str(StrId(k)))
    }

    /// How many strings are interned; every `StrId` below it is valid.
    pub fn string_count(&self) -> usize {
        self.ends.len()
    }

    /// The [`IdText`] of a node whose id is `id`: composed when `id` is exactly
    /// `file:qualified_name`, else the interned text.
    pub fn id_text(&mut self, id: &str, file: StrId, qualified_name: StrId) -> IdText {
        if is_composed(id, self.str(file), self.str(qualified_name)) {
            IdText::Composed
        } else {
            IdText::Text(self.intern(id))
        }
    }

    /// The stable id of `node` (a node of this builder).
    pub fn id_of(&self, node: &NodeInput) -> Cow<'_, str> {
        match node.id {
            IdText::Text(s) => Cow::Borrowed(self.str(s)),
            IdText::Composed => Cow::Owned(format!(
                "{}:{}",
                self.str(node.file),
                self.str(node.qualified_name)
            )),
        }
    }

    /// Whether `node`'s id is `file:qualified_name`, whichever way it is held.
    pub fn is_composed(&self, node: &NodeInput) -> bool {
        self.stored_id(node).is_none()
    }

    /// The string a writer must store as `node`'s id: none when the id is composed on read.
    pub fn stored_id(&self, node: &NodeInput) -> Option<StrId> {
        match node.id {
            IdText::Text(s)
                if !is_composed(
                    self.str(s),
                    self.str(node.file),
                    self.str(node.qualified_name),
                ) =>
            {
                Some(s)
            }
            _ => None,
        }
    }

    /// `node`'s id as up to three parts whose concatenation is its text (what the id
    /// index sorts by), without allocating.
    pub(crate) fn id_parts(&self, node: &NodeInput) -> [&[u8]; 3] {
        match self.stored_id(node) {
            Some(s) => [self.str(s).as_bytes(), b"", b""],
            None => [
                self.str(node.file).as_bytes(),
                b":",
                self.str(node.qualified_name).as_bytes(),
            ],
        }
    }

    /// Appends a node and returns its index.
    pub fn add_node(&mut self, node: NodeInput) -> NodeIdx {
        let idx = NodeIdx(u32::try_from(self.nodes.len()).expect("more than 2^32 nodes"));
        self.nodes.push(node);
        idx
    }

    /// Records the use sites of an edge: `count` sites on the distinct `lines`, ascending.
    /// Returns [`SitesId::ONE`] for at most one site on at most one line, which the
    /// edge's own `line` describes.
    pub fn add_sites(&mut self, count: u32, lines: &[u32]) -> SitesId {
        if count <= 1 && lines.len() <= 1 {
            return SitesId::ONE;
        }
        if self.sites.is_empty() {
            self.sites.push(0);
        }
        let id = SitesId(u32::try_from(self.sites.len()).expect("more than 2^32 site lines"));
        self.sites.push(count);
        self.sites
            .push(u32::try_from(lines.len()).unwrap_or(u32::MAX));
        self.sites.extend_from_slice(lines);
        id
    }

    /// The use sites of `edge` (an edge of this builder).
    pub fn sites<'a>(&'a self, edge: &'a EdgeInput) -> Sites<'a> {
        let k = edge.sites.0 as usize;
        if k == 0 || k + 1 >= self.sites.len() {
            let lines = std::slice::from_ref(&edge.line);
            return if edge.line == 0 {
                Sites {
                    count: 0,
                    lines: &[],
                }
            } else {
                Sites { count: 1, lines }
            };
        }
        let n = self.sites[k + 1] as usize;
        let end = (k + 2 + n).min(self.sites.len());
        Sites {
            count: self.sites[k],
            lines: &self.sites[k + 2..end],
        }
    }

    /// Appends an edge. Both ends must already be nodes of this builder.
    pub fn add_edge(&mut self, edge: EdgeInput) {
        debug_assert!((edge.src.0 as usize) < self.nodes.len());
        debug_assert!((edge.dst.0 as usize) < self.nodes.len());
        self.edges.push(edge);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_file_colon_qualified_name_shape_is_composed() {
        assert!(is_composed("a.c:f", "a.c", "f"));
        assert!(is_composed(":f", "", "f"));
        assert!(is_composed("a.c:", "a.c", ""));
        assert!(!is_composed("a.c:f#2", "a.c", "f"));
        assert!(!is_composed("a.c;f", "a.c", "f"));
        assert!(!is_composed("b.c:f", "a.c", "f"));
        assert!(!is_composed("é:x", "é", "y"));
    }

    #[test]
    fn the_arena_interns_each_text_once_and_gives_it_back() {
        let mut g = GraphBuilder::new();
        let texts = ["", "a", "ab", "é", "a", "ab", "x::y"];
        let ids: Vec<StrId> = texts.iter().map(|t| g.intern(t)).collect();
        assert_eq!(ids[0], StrId(0));
        assert_eq!(ids[1], ids[4]);
        assert_eq!(ids[2], ids[5]);
        assert_eq!(g.string_count(), 5);
        for (t, id) in texts.iter().zip(&ids) {
            assert_eq!(g.str(*id), *t);
        }
    }

    proptest::proptest! {
        #[test]
        fn interning_a_batch_gives_the_ids_of_one_by_one(
            before in proptest::collection::vec("[ab]{0,3}", 0..20),
            batch in proptest::collection::vec("[abc]{0,4}", 0..60),
            repeat in 1usize..400,
        ) {
            // Repeated past the parallel threshold on some cases, so both paths run.
            let batch: Vec<&str> =
                batch.iter().map(String::as_str).cycle().take(batch.len() * repeat).collect();
            let (mut one, mut all) = (GraphBuilder::new(), GraphBuilder::new());
            for t in &before {
                one.intern(t);
                all.intern(t);
            }
            let expected: Vec<StrId> = batch.iter().map(|t| one.intern(t)).collect();
            proptest::prop_assert_eq!(all.intern_all(&batch), expected);
            proptest::prop_assert!(one.strings().eq(all.strings()));
        }
    }

    #[test]
    fn interning_after_the_index_is_released_finds_the_same_ids() {
        let mut g = GraphBuilder::new();
        let a = g.intern("alpha");
        let b = g.intern("beta");
        g.release_string_index();
        assert_eq!(g.str(b), "beta");
        assert_eq!(g.intern("alpha"), a);
        assert_eq!(g.intern("beta"), b);
        let c = g.intern("gamma");
        assert_eq!(c, StrId(3));
        assert_eq!(g.intern("gamma"), c);
        assert_eq!(g.string_count(), 4);
    }

    #[test]
    fn an_id_is_composed_only_when_it_is_file_colon_qualified_name() {
        let mut g = GraphBuilder::new();
        let (file, qual) = (g.intern("a.c"), g.intern("f"));
        assert_eq!(g.id_text("a.c:f", file, qual), IdText::Composed);
        let text = g.id_text("a.c:f#2", file, qual);
        assert!(matches!(text, IdText::Text(s) if g.str(s) == "a.c:f#2"));
        let node = |id| NodeInput {
            id,
            name: qual,
            qualified_name: qual,
            kind: NodeKind::Function,
            file,
            language: Language::C,
            start_line: 1,
            end_line: 1,
            start_byte: 0,
            end_byte: 0,
            signature: StrId(0),
            doc: StrId(0),
            content_hash: [0; 8],
            flags: NodeFlags(0),
            community: 0,
            pagerank: 0,
        };
        assert_eq!(g.id_of(&node(IdText::Composed)), "a.c:f");
        assert_eq!(g.id_of(&node(text)), "a.c:f#2");
        assert!(g.is_composed(&node(IdText::Composed)));
        assert!(!g.is_composed(&node(text)));
        // A composed-shaped text (e.g. copied from an artifact) counts as composed too.
        let same = IdText::Text(g.intern("a.c:f"));
        assert!(g.is_composed(&node(same)));
    }
}
