//! Building a text index from a [`GraphBuilder`]: every node is a document made of its
//! name, its qualified name when it differs, its signature (its *own* terms) and the path
//! of its file. Path terms are stored once per file (a term's *path postings*) rather
//! than once per node: a kernel's 7 M nodes share 57 k paths. A document's length counts
//! both, so scores are those of one document holding all four fields.

use foldhash::fast::FixedState;
use hashbrown::HashMap;

use super::postings::PostingsWriter;
use super::tokenize::for_each_term;
use crate::column::SegmentWriter;
use crate::format::nodes_col;
use crate::input::{GraphBuilder, NodeInput, StrId};

/// The postings of one term while documents are added.
#[derive(Default)]
struct TermLists {
    own: Vec<u8>,
    own_writer: PostingsWriter,
    /// `(file string id as stored, frequency)`, sorted when encoded.
    paths: Vec<(u32, u32)>,
}

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
        w.add_uint(nodes_col::TEXT_TERM_OFFSETS, self.term_offsets.len(), |i| {
            self.term_offsets[i]
        });
        w.add_uint(
            nodes_col::TEXT_POSTING_OFFSETS,
            self.posting_offsets.len(),
            |i| self.posting_offsets[i],
        );
        w.add_bytes(nodes_col::TEXT_POSTINGS, &self.postings);
        w.add_uint(nodes_col::TEXT_PATH_OFFSETS, self.path_offsets.len(), |i| {
            self.path_offsets[i]
        });
        w.add_bytes(nodes_col::TEXT_PATHS, &self.paths);
        w.add_values(nodes_col::TEXT_DOC_LEN, &self.doc_len);
        let stats = [docs, total_len];
        w.add_uint(nodes_col::TEXT_STATS, 2, |i| stats[i]);
    }
}

/// Terms interned in first-seen order, each with its lists.
#[derive(Default)]
struct TermTable {
    ids: HashMap<Box<str>, u32, FixedState>,
    texts: Vec<Box<str>>,
    lists: Vec<TermLists>,
}

impl TermTable {
    fn intern(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        let id = self.texts.len() as u32;
        self.ids.insert(term.into(), id);
        self.texts.push(term.into());
        self.lists.push(TermLists::default());
        id
    }
}

/// The own texts of a node: name, qualified name when it differs, signature.
fn own_texts<'a>(g: &'a GraphBuilder, node: &NodeInput) -> [&'a str; 3] {
    let qualified = if node.qualified_name == node.name {
        ""
    } else {
        g.str(node.qualified_name)
    };
    [g.str(node.name), qualified, g.str(node.signature)]
}

/// Indexes every node of `g` as a document (document `i` is node `i`); `stored_file`
/// maps a file string of `g` to the string id the layer stores for it.
pub(crate) fn encode_text_index(
    g: &GraphBuilder,
    stored_file: &dyn Fn(StrId) -> u32,
) -> EncodedText {
    let mut table = TermTable::default();
    let mut path_lengths: HashMap<StrId, u32, FixedState> = HashMap::default();
    let mut doc_len = Vec::with_capacity(g.nodes.len());
    let mut doc_terms: Vec<u32> = Vec::new();
    for (doc, node) in g.nodes.iter().enumerate() {
        doc_terms.clear();
        for text in own_texts(g, node) {
            for_each_term(text, |term| doc_terms.push(table.intern(term)));
        }
        let path_len = match path_lengths.get(&node.file) {
            Some(&len) => len,
            None => {
                let len = add_path(&mut table, g.str(node.file), stored_file(node.file));
                path_lengths.insert(node.file, len);
                len
            }
        };
        doc_len.push(doc_terms.len() as u32 + path_len);
        add_own_postings(&mut table, &mut doc_terms, doc as u32);
    }
    finish(table, doc_len)
}

/// Adds the path postings of one file; returns its number of terms.
fn add_path(table: &mut TermTable, path: &str, stored: u32) -> u32 {
    let mut path_terms = Vec::new();
    for_each_term(path, |term| path_terms.push(table.intern(term)));
    path_terms.sort_unstable();
    for run in path_terms.chunk_by(|a, b| a == b) {
        table.lists[run[0] as usize]
            .paths
            .push((stored, run.len() as u32));
    }
    path_terms.len() as u32
}

/// Appends one document's `(term, frequency)` pairs to the terms' own postings.
fn add_own_postings(table: &mut TermTable, doc_terms: &mut [u32], doc: u32) {
    doc_terms.sort_unstable();
    for run in doc_terms.chunk_by(|a, b| a == b) {
        let lists = &mut table.lists[run[0] as usize];
        lists.own_writer.push(&mut lists.own, doc, run.len() as u32);
    }
}

/// Lays the terms out in byte order with their encoded lists.
fn finish(table: TermTable, doc_len: Vec<u32>) -> EncodedText {
    let TermTable {
        texts, mut lists, ..
    } = table;
    let mut order: Vec<u32> = (0..texts.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| {
        texts[a as usize]
            .as_bytes()
            .cmp(texts[b as usize].as_bytes())
    });
    let mut out = EncodedText {
        term_bytes: Vec::new(),
        term_offsets: vec![0],
        posting_offsets: vec![0],
        postings: Vec::new(),
        path_offsets: vec![0],
        paths: Vec::new(),
        doc_len,
    };
    for id in order {
        let lists = std::mem::take(&mut lists[id as usize]);
        out.term_bytes
            .extend_from_slice(texts[id as usize].as_bytes());
        out.term_offsets.push(out.term_bytes.len() as u64);
        out.postings.extend_from_slice(&lists.own);
        out.posting_offsets.push(out.postings.len() as u64);
        let mut paths = lists.paths;
        paths.sort_unstable();
        paths.dedup_by_key(|&mut (file, _)| file);
        let mut writer = PostingsWriter::default();
        for (file, frequency) in paths {
            writer.push(&mut out.paths, file, frequency);
        }
        out.path_offsets.push(out.paths.len() as u64);
    }
    out
}
