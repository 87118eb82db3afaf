//! BM25 over the merged text index of an artifact, computed as SQLite FTS5's `bm25()`:
//! `Σ idf(t) · f·(k1 + 1) / (f + k1·(1 − b + b·|D|/avgdl))` with k1 = 1.2, b = 0.75,
//! `idf(t) = ln((N − n + 0.5)/(n + 0.5))` floored at 1e-6, `N` the live documents, `n`
//! those holding `t`, `avgdl` their mean length. FTS5 reports the negated sum (lower is
//! better); [`Artifact::text_search`] returns it positive (higher is better). A query is
//! cut into terms like the documents and each distinct term counts once (OR semantics).

use super::read::damaged;
use super::tokenize::for_each_term;
use crate::delta::{DN, Delta};
use crate::error::Result;
use crate::input::NodeIdx;
use crate::reader::Artifact;

/// FTS5's term-frequency saturation.
pub const BM25_K1: f64 = 1.2;
/// FTS5's length normalisation.
pub const BM25_B: f64 = 0.75;
/// FTS5's floor for a term's idf.
pub const BM25_MIN_IDF: f64 = 1e-6;

/// FTS5's idf of a term held by `holding` of `docs` documents.
pub fn bm25_idf(docs: f64, holding: f64) -> f64 {
    let idf = ((docs - holding + 0.5) / (holding + 0.5)).ln();
    if idf <= 0.0 { BM25_MIN_IDF } else { idf }
}

/// One term's contribution to a document's score.
pub fn bm25_term(idf: f64, frequency: f64, doc_len: f64, avg_len: f64) -> f64 {
    idf * frequency * (BM25_K1 + 1.0)
        / (frequency + BM25_K1 * (1.0 - BM25_B + BM25_B * doc_len / avg_len))
}

/// The distinct terms of a question, in first-seen order.
pub fn question_terms(question: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for_each_term(question, |term| {
        if !out.iter().any(|t| t == term) {
            out.push(term.to_string());
        }
    });
    out
}

/// Per-node accumulators, reset sparsely between terms.
struct Accumulators {
    frequency: Vec<u32>,
    touched: Vec<u32>,
    score: Vec<f64>,
    scored: Vec<u32>,
}

impl Accumulators {
    fn new(nodes: usize) -> Accumulators {
        Accumulators {
            frequency: vec![0; nodes],
            touched: Vec::new(),
            score: vec![0.0; nodes],
            scored: Vec::new(),
        }
    }

    fn add_frequency(&mut self, node: u32, frequency: u32) {
        let Some(slot) = self.frequency.get_mut(node as usize) else {
            return;
        };
        if *slot == 0 {
            self.touched.push(node);
        }
        *slot = slot.saturating_add(frequency);
    }
}

impl Artifact {
    /// The `limit` live nodes best matching `question` by BM25, best first (ties: node
    /// index), each with its score (> 0). Errors only on a damaged index.
    pub fn text_search(&self, question: &str, limit: usize) -> Result<Vec<(NodeIdx, f64)>> {
        let (docs, total_len) = match &self.delta {
            Some(d) => d.text.stats(self.pay(DN)),
            None => self.text.stats(self.np()),
        };
        if docs == 0 || limit == 0 {
            return Ok(Vec::new());
        }
        let avg_len = total_len as f64 / docs as f64;
        let mut acc = Accumulators::new(self.node_count() as usize);
        for term in question_terms(question) {
            self.term_frequencies(&term, &mut acc)?;
            let idf = bm25_idf(docs as f64, acc.touched.len() as f64);
            for node in std::mem::take(&mut acc.touched) {
                let frequency = std::mem::take(&mut acc.frequency[node as usize]);
                let doc_len = self.text_doc_len(node) as f64;
                let slot = &mut acc.score[node as usize];
                if *slot == 0.0 {
                    acc.scored.push(node);
                }
                *slot += bm25_term(idf, f64::from(frequency), doc_len, avg_len);
            }
        }
        let mut ranked: Vec<(NodeIdx, f64)> = acc
            .scored
            .iter()
            .map(|&v| (NodeIdx(v), acc.score[v as usize]))
            .collect();
        let order =
            |a: &(NodeIdx, f64), b: &(NodeIdx, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if ranked.len() > limit {
            ranked.select_nth_unstable_by(limit - 1, order);
            ranked.truncate(limit);
        }
        ranked.sort_unstable_by(order);
        Ok(ranked)
    }

    /// The length of node `v`'s document.
    fn text_doc_len(&self, v: u32) -> u64 {
        if let Some(d) = &self.delta
            && let Some(row) = d.row_of(self, v)
        {
            return d.text.doc_len(self.pay(DN), row);
        }
        self.text.doc_len(self.np(), v)
    }

    /// Adds to `acc` the frequency of `term` in every live node holding it.
    fn term_frequencies(&self, term: &str, acc: &mut Accumulators) -> Result<()> {
        let base = &self.text;
        let base_term = base.find_term(self.np(), term);
        let mask = self.delta.as_ref().map(|d| d.mask(self));
        if let Some(k) = base_term {
            base.own_postings(self.np(), k, |v, f| {
                if mask.is_none_or(|m| !m.contains(v)) {
                    acc.add_frequency(v, f);
                }
            })
            .map_err(|e| damaged(&self.segment_name(crate::reader::N), e))?;
        }
        let mut files: Vec<(u32, u32)> = Vec::new();
        if let Some(k) = base_term {
            base.path_postings(self.np(), k, |s, f| files.push((s, f)))
                .map_err(|e| damaged(&self.segment_name(crate::reader::N), e))?;
        }
        if let Some(d) = &self.delta {
            self.delta_term_frequencies(d, term, acc, &mut files)?;
        }
        files.sort_unstable();
        files.dedup_by_key(|&mut (s, _)| s);
        for (s, f) in files {
            if let Some(nodes) = self.nodes_in_file_id(s) {
                for v in nodes {
                    acc.add_frequency(v, f);
                }
            }
        }
        Ok(())
    }

    /// The delta's share of [`Artifact::term_frequencies`]: its rows' own postings and
    /// its path postings (added to `files`).
    fn delta_term_frequencies(
        &self,
        d: &Delta,
        term: &str,
        acc: &mut Accumulators,
        files: &mut Vec<(u32, u32)>,
    ) -> Result<()> {
        let payload = self.pay(DN);
        let Some(k) = d.text.find_term(payload, term) else {
            return Ok(());
        };
        let name = self.segment_name(DN);
        d.text
            .own_postings(payload, k, |row, f| {
                if row < d.rows {
                    acc.add_frequency(d.row_node.get32(payload, row as usize), f);
                }
            })
            .map_err(|e| damaged(&name, e))?;
        d.text
            .path_postings(payload, k, |s, f| files.push((s, f)))
            .map_err(|e| damaged(&name, e))
    }
}
