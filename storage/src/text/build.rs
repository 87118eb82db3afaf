//! Building a text index from a [`GraphBuilder`]: every node is a document made of its
//! name, its qualified name when it differs, its signature (its *own* terms) and the path
//! of its file. Path terms are stored once per file (a term's *path postings*) rather
//! than once per node: a kernel's 7 M nodes share 57 k paths. A document's length counts
//! both, so scores are those of one document holding all four fields.
//!
//! Two passes over the documents keep memory near the size of the result (a kernel has
//! millions of distinct terms, most with one posting): the first interns the terms into
//! one arena and measures each term's encoded postings, the second cuts the documents
//! again and writes every posting straight into its place in the final column.

use std::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::{HashMap, HashTable};

use super::postings::PostingsWriter;
use super::tokenize::for_each_term;
use crate::column::SegmentWriter;
use crate::format::nodes_col;
use crate::input::{GraphBuilder, NodeInput, StrId};
use crate::strings::put_varint;

/// The encoded columns of one text index (a base layer's or a delta's rows').
pub(crate) struct EncodedText {
    term_bytes: Vec<u8>,
    term_offsets: Vec<u64>,
    posting_offsets: Vec<u64>,
    postings: Vec<u8>,
    path_offsets: Vec<u64>,
    paths: Vec<u8>,
    /// Terms of each document (own plus path terms).
    pub(crate) doc_len: Vec<u32>,
}

impl EncodedText {
    /// The sum of the document lengths.
    pub(crate) fn total_len(&self) -> u64 {
        self.doc_len.iter().map(|&l| u64::from(l)).sum()
    }

    /// Adds the index's columns; `docs` and `total_len` are the statistics BM25 reads
    /// (for a delta, those of the merged graph).
    pub(crate) fn add_columns(&self, w: &mut SegmentWriter, docs: u64, total_len: u64) {
        w.add_bytes(nodes_col::TEXT_TERM_BYTES, &self.term_bytes);
        let offsets = |w: &mut SegmentWriter, id: u32, values: &[u64]| {
            w.add_uint(id, values.len(), |i| values[i]);
        };
        offsets(w, nodes_col::TEXT_TERM_OFFSETS, &self.term_offsets);
        offsets(w, nodes_col::TEXT_POSTING_OFFSETS, &self.posting_offsets);
        w.add_bytes(nodes_col::TEXT_POSTINGS, &self.postings);
        offsets(w, nodes_col::TEXT_PATH_OFFSETS, &self.path_offsets);
        w.add_bytes(nodes_col::TEXT_PATHS, &self.paths);
        w.add_values(nodes_col::TEXT_DOC_LEN, &self.doc_len);
        let stats = [docs, total_len];
        w.add_uint(nodes_col::TEXT_STATS, 2, |i| stats[i]);
    }
}

/// Distinct terms in one byte arena, numbered in first-seen order.
#[derive(Default)]
struct TermArena {
    bytes: Vec<u8>,
    /// End of term `t` in `bytes` (its start is the previous end).
    ends: Vec<usize>,
    ids: HashTable<u32>,
}

impl TermArena {
    fn text(&self, t: u32) -> &[u8] {
        let end = self.ends[t as usize];
        let start = if t == 0 { 0 } else { self.ends[t as usize - 1] };
        &self.bytes[start..end]
    }

    fn hash(term: &[u8]) -> u64 {
        FixedState::with_seed(0x7465_7874).hash_one(term)
    }

    fn find(&self, term: &str) -> Option<u32> {
        let hash = Self::hash(term.as_bytes());
        self.ids
            .find(hash, |&t| self.text(t) == term.as_bytes())
            .copied()
    }

    fn intern(&mut self, term: &str) -> u32 {
        if let Some(t) = self.find(term) {
            return t;
        }
        let t = self.ends.len() as u32;
        self.bytes.extend_from_slice(term.as_bytes());
        self.ends.push(self.bytes.len());
        let hash = Self::hash(term.as_bytes());
        let Self { bytes, ends, ids } = self;
        let text_of = |t: u32| {
            let end = ends[t as usize];
            let start = if t == 0 { 0 } else { ends[t as usize - 1] };
            &bytes[start..end]
        };
        ids.insert_unique(hash, t, |&u| Self::hash(text_of(u)));
        t
    }

    fn len(&self) -> usize {
        self.ends.len()
    }
}

/// The own texts of a node: name, qualified name when it differs, signature, and the
/// comment above it.
fn own_texts<'a>(g: &'a GraphBuilder, node: &NodeInput) -> [&'a str; 4] {
    let qualified = if node.qualified_name == node.name {
        ""
    } else {
        g.str(node.qualified_name)
    };
    [
        g.str(node.name),
        qualified,
        g.str(node.signature),
        g.str(node.doc),
    ]
}

/// Bytes of `v` as a LEB128 varint.
fn varint_len(v: u32) -> u64 {
    u64::from((32 - (v | 1).leading_zeros()).div_ceil(7))
}

/// Marks a term with no posting yet in a document-order pass.
const NO_DOC: u32 = u32::MAX;

/// What the first pass learns: the terms, each one's encoded own-postings size, the
/// document lengths and the path postings `(term, stored file, frequency)`.
struct FirstPass {
    arena: TermArena,
    own_bytes: Vec<u64>,
    doc_len: Vec<u32>,
    paths: Vec<(u32, u32, u32)>,
}

/// Calls `visit(term, frequency)` for each distinct own term of `node`, ascending by id;
/// `lookup` maps a term text to its id (`None`: skip it).
fn own_terms(
    g: &GraphBuilder,
    node: &NodeInput,
    scratch: &mut Vec<u32>,
    mut lookup: impl FnMut(&str) -> Option<u32>,
    mut visit: impl FnMut(u32, u32),
) -> u32 {
    scratch.clear();
    for text in own_texts(g, node) {
        for_each_term(text, |term| scratch.extend(lookup(term)));
    }
    scratch.sort_unstable();
    for run in scratch.chunk_by(|a, b| a == b) {
        visit(run[0], run.len() as u32);
    }
    scratch.len() as u32
}

fn first_pass(g: &GraphBuilder, stored_file: &dyn Fn(StrId) -> u32) -> FirstPass {
    let mut pass = FirstPass {
        arena: TermArena::default(),
        own_bytes: Vec::new(),
        doc_len: Vec::with_capacity(g.nodes.len()),
        paths: Vec::new(),
    };
    let mut last_doc: Vec<u32> = Vec::new();
    let mut path_lengths: HashMap<StrId, u32, FixedState> = HashMap::default();
    let mut scratch = Vec::new();
    for (doc, node) in g.nodes.iter().enumerate() {
        let doc = doc as u32;
        let FirstPass {
            arena,
            own_bytes,
            paths,
            ..
        } = &mut pass;
        let own_len = own_terms(
            g,
            node,
            &mut scratch,
            |term| Some(arena.intern(term)),
            |t, frequency| {
                if own_bytes.len() <= t as usize {
                    own_bytes.resize(t as usize + 1, 0);
                    last_doc.resize(t as usize + 1, NO_DOC);
                }
                let gap = match last_doc[t as usize] {
                    NO_DOC => doc,
                    previous => doc - previous,
                };
                own_bytes[t as usize] += varint_len(gap) + varint_len(frequency);
                last_doc[t as usize] = doc;
            },
        );
        let path_len = *path_lengths.entry(node.file).or_insert_with(|| {
            let mut path_terms = Vec::new();
            for_each_term(g.str(node.file), |term| path_terms.push(arena.intern(term)));
            path_terms.sort_unstable();
            for run in path_terms.chunk_by(|a, b| a == b) {
                paths.push((run[0], stored_file(node.file), run.len() as u32));
            }
            path_terms.len() as u32
        });
        pass.doc_len.push(own_len + path_len);
    }
    pass.own_bytes.resize(pass.arena.len(), 0);
    pass
}

/// Indexes every node of `g` as a document (document `i` is node `i`); `stored_file`
/// maps a file string of `g` to the string id the layer stores for it.
pub(crate) fn encode_text_index(
    g: &GraphBuilder,
    stored_file: &dyn Fn(StrId) -> u32,
) -> EncodedText {
    let FirstPass {
        arena,
        own_bytes,
        doc_len,
        mut paths,
    } = first_pass(g, stored_file);
    let mut order: Vec<u32> = (0..arena.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| arena.text(a).cmp(arena.text(b)));
    let mut out = EncodedText {
        term_bytes: Vec::with_capacity(arena.bytes.len()),
        term_offsets: vec![0],
        posting_offsets: vec![0],
        postings: Vec::new(),
        path_offsets: vec![0],
        paths: Vec::new(),
        doc_len,
    };
    // Where each term's postings start, by term id; advanced as they are written.
    let mut cursor = vec![0u64; arena.len()];
    let mut rank = vec![0u32; arena.len()];
    for (position, &t) in order.iter().enumerate() {
        out.term_bytes.extend_from_slice(arena.text(t));
        out.term_offsets.push(out.term_bytes.len() as u64);
        cursor[t as usize] = *out.posting_offsets.last().unwrap_or(&0);
        out.posting_offsets
            .push(cursor[t as usize] + own_bytes[t as usize]);
        rank[t as usize] = position as u32;
    }
    drop(own_bytes);
    out.postings = vec![0; *out.posting_offsets.last().unwrap_or(&0) as usize];
    second_pass(g, &arena, &mut cursor, &mut out.postings);
    paths.sort_unstable_by_key(|&(t, file, _)| (rank[t as usize], file));
    paths.dedup_by_key(|&mut (t, file, _)| (t, file));
    encode_paths(&order, &rank, &paths, &mut out);
    out
}

/// Writes every document's own postings at the cursors of its terms.
fn second_pass(g: &GraphBuilder, arena: &TermArena, cursor: &mut [u64], postings: &mut [u8]) {
    let mut last_doc = vec![NO_DOC; arena.len()];
    let mut scratch = Vec::new();
    let mut encoded = Vec::with_capacity(10);
    for (doc, node) in g.nodes.iter().enumerate() {
        let doc = doc as u32;
        own_terms(
            g,
            node,
            &mut scratch,
            |term| arena.find(term),
            |t, frequency| {
                let gap = match last_doc[t as usize] {
                    NO_DOC => doc,
                    previous => doc - previous,
                };
                last_doc[t as usize] = doc;
                encoded.clear();
                put_varint(&mut encoded, gap);
                put_varint(&mut encoded, frequency);
                let at = cursor[t as usize] as usize;
                if let Some(slot) = postings.get_mut(at..at + encoded.len()) {
                    slot.copy_from_slice(&encoded);
                }
                cursor[t as usize] += encoded.len() as u64;
            },
        );
    }
}

/// Encodes the path postings, sorted by (term rank, file), term by term in rank order.
fn encode_paths(order: &[u32], rank: &[u32], paths: &[(u32, u32, u32)], out: &mut EncodedText) {
    let mut next = 0usize;
    for position in 0..order.len() as u32 {
        let mut writer = PostingsWriter::default();
        while let Some(&(t, file, frequency)) = paths.get(next) {
            if rank[t as usize] != position {
                break;
            }
            writer.push(&mut out.paths, file, frequency);
            next += 1;
        }
        out.path_offsets.push(out.paths.len() as u64);
    }
}
