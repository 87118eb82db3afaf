//! Building a text index from a [`GraphBuilder`]: every node is a document made of its
//! name, its qualified name when it differs, its signature (its *own* terms) and the path
//! of its file. Path terms are stored once per file (a term's *path postings*) rather
//! than once per node: a kernel's 7 M nodes share 57 k paths. A document's length counts
//! both, so scores are those of one document holding all four fields.
//!
//! Two passes over the documents keep memory near the size of the result (a kernel has
//! millions of distinct terms, most with one posting): the first interns the terms into
//! one arena and measures each term's encoded postings, the second cuts the documents
//! again and writes every posting straight into its place in the final column, the two
//! halves of the documents on two threads (the first pass also measures where the second
//! half's postings start in each term's).

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
/// document lengths, the path postings `(term, stored file, frequency)`, and where the
/// second half of the documents starts in each term's postings.
struct FirstPass {
    arena: TermArena,
    own_bytes: Vec<u64>,
    doc_len: Vec<u32>,
    paths: Vec<(u32, u32, u32)>,
    second_half: SecondHalf,
}

/// Where the documents from `first_doc` on start in each term's postings, so that the
/// second pass writes the two halves of the documents on two threads: `bytes_before[t]`
/// bytes of term `t`'s postings come from earlier documents, the last of them
/// `last_doc_before[t]` (what the first posting's gap counts from). Terms first seen in
/// the second half have no entry.
struct SecondHalf {
    first_doc: u32,
    bytes_before: Vec<u64>,
    last_doc_before: Vec<u32>,
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
    let first_doc_of_second_half = (g.nodes.len() / 2) as u32;
    let mut pass = FirstPass {
        arena: TermArena::default(),
        own_bytes: Vec::new(),
        doc_len: Vec::with_capacity(g.nodes.len()),
        paths: Vec::new(),
        second_half: SecondHalf {
            first_doc: first_doc_of_second_half,
            bytes_before: Vec::new(),
            last_doc_before: Vec::new(),
        },
    };
    let mut last_doc: Vec<u32> = Vec::new();
    let mut path_lengths: HashMap<StrId, u32, FixedState> = HashMap::default();
    let mut scratch = Vec::new();
    for (doc, node) in g.nodes.iter().enumerate() {
        let doc = doc as u32;
        if doc == first_doc_of_second_half {
            pass.second_half.bytes_before = pass.own_bytes.clone();
            pass.second_half.last_doc_before = last_doc.clone();
        }
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
        second_half,
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
    let mut rank = vec![0u32; arena.len()];
    for (position, &t) in order.iter().enumerate() {
        out.term_bytes.extend_from_slice(arena.text(t));
        out.term_offsets.push(out.term_bytes.len() as u64);
        let start = *out.posting_offsets.last().unwrap_or(&0);
        out.posting_offsets.push(start + own_bytes[t as usize]);
        rank[t as usize] = position as u32;
    }
    drop(own_bytes);
    out.postings = vec![0; *out.posting_offsets.last().unwrap_or(&0) as usize];
    second_pass(
        g,
        &arena,
        &rank,
        &out.posting_offsets,
        second_half,
        &mut out.postings,
    );
    paths.sort_unstable_by_key(|&(t, file, _)| (rank[t as usize], file));
    paths.dedup_by_key(|&mut (t, file, _)| (t, file));
    encode_paths(&order, &rank, &paths, &mut out);
    out
}

/// Writes every document's own postings, the two halves of the documents on two threads.
/// On the kernel the text index is the write's critical path (its thread took 31.4 s; the
/// writer's own segments were done after 12.3 s and one core was idle for the rest), and
/// this pass cuts and hashes every term again. Term `t`'s postings are
/// `posting_offsets[rank[t]]..posting_offsets[rank[t] + 1]`; the first half of the
/// documents writes their first `bytes_before[t]` bytes (measured by the first pass), the
/// second half the rest. Each thread keeps a 4-byte count per term of what it wrote.
fn second_pass(
    g: &GraphBuilder,
    arena: &TermArena,
    rank: &[u32],
    posting_offsets: &[u64],
    second_half: SecondHalf,
    postings: &mut [u8],
) {
    let terms = arena.len();
    let SecondHalf {
        first_doc,
        mut bytes_before,
        mut last_doc_before,
    } = second_half;
    // Terms first seen in the second half: no bytes and no document before it.
    bytes_before.resize(terms, 0);
    last_doc_before.resize(terms, NO_DOC);
    let spans = TermSpans {
        rank,
        posting_offsets,
        bytes_before,
    };
    let first_half = Half {
        docs: 0..first_doc as usize,
        part: Part::First,
        written: vec![0; terms],
        last_doc: vec![NO_DOC; terms],
    };
    let second = Half {
        docs: first_doc as usize..g.nodes.len(),
        part: Part::Second,
        written: vec![0; terms],
        last_doc: last_doc_before,
    };
    let out = PostingsOut::new(postings);
    std::thread::scope(|scope| {
        let later = scope.spawn(|| second.write(g, arena, &spans, &out));
        first_half.write(g, arena, &spans, &out);
        if let Err(panic) = later.join() {
            std::panic::resume_unwind(panic);
        }
    });
}

/// Where each term's postings lie, and how many of their bytes the first half writes.
struct TermSpans<'a> {
    rank: &'a [u32],
    posting_offsets: &'a [u64],
    bytes_before: Vec<u64>,
}

impl TermSpans<'_> {
    /// The bytes of term `t`'s postings that `part` writes.
    fn part(&self, t: usize, part: Part) -> std::ops::Range<u64> {
        let position = self.rank[t] as usize;
        let (start, end) = (
            self.posting_offsets[position],
            self.posting_offsets[position + 1],
        );
        let split = start + self.bytes_before[t];
        match part {
            Part::First => start..split,
            Part::Second => split..end,
        }
    }
}

/// Which half of the documents a thread of [`second_pass`] writes.
#[derive(Clone, Copy)]
enum Part {
    First,
    Second,
}

/// The documents one thread of [`second_pass`] writes, how many bytes of each term's
/// postings it wrote, and the last document it wrote of each term (what a gap counts
/// from).
struct Half {
    docs: std::ops::Range<usize>,
    part: Part,
    written: Vec<u32>,
    last_doc: Vec<u32>,
}

impl Half {
    /// Writes the own postings of the half's documents inside the half's part of each
    /// term's postings.
    fn write(
        mut self,
        g: &GraphBuilder,
        arena: &TermArena,
        spans: &TermSpans<'_>,
        out: &PostingsOut<'_>,
    ) {
        let mut scratch = Vec::new();
        let mut encoded = Vec::with_capacity(10);
        let nodes = g.nodes.get(self.docs.clone()).unwrap_or_default();
        for (doc, node) in (self.docs.start as u32..).zip(nodes) {
            own_terms(
                g,
                node,
                &mut scratch,
                |term| arena.find(term),
                |t, frequency| {
                    let t = t as usize;
                    let gap = match self.last_doc[t] {
                        NO_DOC => doc,
                        previous => doc - previous,
                    };
                    self.last_doc[t] = doc;
                    encoded.clear();
                    put_varint(&mut encoded, gap);
                    put_varint(&mut encoded, frequency);
                    let part = spans.part(t, self.part);
                    out.write(part.start + u64::from(self.written[t]), part.end, &encoded);
                    self.written[t] = self.written[t].saturating_add(encoded.len() as u32);
                },
            );
        }
    }
}

/// The postings column, written by the two threads of [`second_pass`] at once. Every
/// write is checked to end at or before its term's limit for its half, and the halves'
/// limits split each term's postings, so the threads never write the same byte.
struct PostingsOut<'a> {
    start: *mut u8,
    len: usize,
    column: std::marker::PhantomData<&'a mut [u8]>,
}

// SAFETY: `PostingsOut` is only written through `write`, whose ranges stay inside the
// column and, per thread, inside that thread's part of each term (see `second_pass`).
unsafe impl Sync for PostingsOut<'_> {}

impl<'a> PostingsOut<'a> {
    fn new(column: &'a mut [u8]) -> PostingsOut<'a> {
        PostingsOut {
            start: column.as_mut_ptr(),
            len: column.len(),
            column: std::marker::PhantomData,
        }
    }

    /// Copies `bytes` to `at`, unless they would reach past `limit` or the column's end
    /// (the first pass measured every posting, so that never happens).
    fn write(&self, at: u64, limit: u64, bytes: &[u8]) {
        let end = at.saturating_add(bytes.len() as u64);
        if end > limit || end > self.len as u64 {
            return;
        }
        // SAFETY: `at..end` is inside the column (checked above), which `'a` keeps
        // borrowed mutably, and inside the calling thread's part of the term.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.start.add(at as usize), bytes.len());
        }
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
