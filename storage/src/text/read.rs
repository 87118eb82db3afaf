//! Reading a text index from the columns of a nodes segment (base or delta).

use super::postings::{PostingsError, for_each_posting};
use crate::column::{BytesCol, ColumnTable, UIntCol};
use crate::error::{Result, StorageError};
use crate::format::nodes_col;

/// The text index columns of one layer. Opening checks only counts (O(1)); every read
/// is bounds-checked and a damaged list is an error, never a panic.
#[derive(Debug)]
pub(crate) struct TextCols {
    term_bytes: BytesCol,
    term_offsets: UIntCol,
    posting_offsets: UIntCol,
    postings: BytesCol,
    path_offsets: UIntCol,
    paths: BytesCol,
    doc_len: UIntCol,
    stats: UIntCol,
}

impl TextCols {
    /// The columns of `table`, whose layer has `docs` documents (nodes or rows).
    pub(crate) fn open(table: &ColumnTable, docs: usize) -> Result<TextCols> {
        let term_offsets = table.uint(nodes_col::TEXT_TERM_OFFSETS, None)?;
        let offsets = Some(term_offsets.len());
        if term_offsets.len() == 0 {
            return Err(table.corrupt("text term offsets are empty"));
        }
        Ok(TextCols {
            term_bytes: table.bytes(nodes_col::TEXT_TERM_BYTES)?,
            posting_offsets: table.uint(nodes_col::TEXT_POSTING_OFFSETS, offsets)?,
            postings: table.bytes(nodes_col::TEXT_POSTINGS)?,
            path_offsets: table.uint(nodes_col::TEXT_PATH_OFFSETS, offsets)?,
            paths: table.bytes(nodes_col::TEXT_PATHS)?,
            doc_len: table.uint(nodes_col::TEXT_DOC_LEN, Some(docs))?,
            stats: table.uint(nodes_col::TEXT_STATS, Some(2))?,
            term_offsets,
        })
    }

    /// Number of distinct terms.
    pub(crate) fn term_count(&self) -> usize {
        self.term_offsets.len() - 1
    }

    /// The bytes of term `k` (empty when its offsets are damaged).
    pub(crate) fn term<'a>(&self, payload: &'a [u8], k: usize) -> &'a [u8] {
        range_of(
            &self.term_offsets,
            self.term_bytes.bytes(payload),
            payload,
            k,
        )
    }

    /// The position of `term` in the sorted dictionary.
    pub(crate) fn find_term(&self, payload: &[u8], term: &str) -> Option<usize> {
        let (mut low, mut high) = (0usize, self.term_count());
        while low < high {
            let middle = low + (high - low) / 2;
            match self.term(payload, middle).cmp(term.as_bytes()) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return Some(middle),
            }
        }
        None
    }

    /// Calls `visit(document, frequency)` for the own postings of term `k`.
    pub(crate) fn own_postings(
        &self,
        payload: &[u8],
        k: usize,
        visit: impl FnMut(u32, u32),
    ) -> Result<(), PostingsError> {
        let bytes = range_of(
            &self.posting_offsets,
            self.postings.bytes(payload),
            payload,
            k,
        );
        for_each_posting(bytes, visit)
    }

    /// Calls `visit(file string id, frequency)` for the path postings of term `k`.
    pub(crate) fn path_postings(
        &self,
        payload: &[u8],
        k: usize,
        visit: impl FnMut(u32, u32),
    ) -> Result<(), PostingsError> {
        let bytes = range_of(&self.path_offsets, self.paths.bytes(payload), payload, k);
        for_each_posting(bytes, visit)
    }

    /// The length (terms) of document `doc`.
    pub(crate) fn doc_len(&self, payload: &[u8], doc: u32) -> u64 {
        self.doc_len.get(payload, doc as usize)
    }

    /// The number of documents and the sum of their lengths the layer records (a delta
    /// records the merged graph's).
    pub(crate) fn stats(&self, payload: &[u8]) -> (u64, u64) {
        (self.stats.get(payload, 0), self.stats.get(payload, 1))
    }

    /// Number of documents in this layer.
    pub(crate) fn doc_count(&self) -> usize {
        self.doc_len.len()
    }
}

/// `bytes[offsets[k]..offsets[k + 1]]`, empty when that range is damaged.
fn range_of<'a>(offsets: &UIntCol, bytes: &'a [u8], payload: &[u8], k: usize) -> &'a [u8] {
    if k + 1 >= offsets.len() {
        return &[];
    }
    let start = offsets.get(payload, k);
    let end = offsets.get(payload, k + 1);
    usize::try_from(start)
        .ok()
        .zip(usize::try_from(end).ok())
        .and_then(|(start, end)| bytes.get(start..end))
        .unwrap_or(&[])
}

/// The error of a damaged posting list of `layer`.
pub(crate) fn damaged(layer: &str, error: PostingsError) -> StorageError {
    StorageError::corrupt(layer, format!("text index: {error}"))
}

impl TextCols {
    /// Structural checks for `verify` (O(size of the index)): terms sorted, unique and
    /// UTF-8; every posting list decodes; own postings name documents of this layer and
    /// path postings strings below `string_count`. Each problem once, as text.
    pub(crate) fn check(&self, payload: &[u8], string_count: u64) -> Vec<String> {
        let mut problems = Vec::new();
        let docs = self.doc_count() as u64;
        for k in 0..self.term_count() {
            let term = self.term(payload, k);
            if term.is_empty() || std::str::from_utf8(term).is_err() {
                problems.push(format!("term {k} is empty, damaged or not UTF-8"));
            } else if k > 0 && self.term(payload, k - 1) >= term {
                problems.push(format!("term {k} is not above the previous one"));
            }
            let mut own_ok = true;
            let own = self.own_postings(payload, k, |doc, _| own_ok &= u64::from(doc) < docs);
            let mut paths_ok = true;
            let paths =
                self.path_postings(payload, k, |s, _| paths_ok &= u64::from(s) < string_count);
            if let Err(e) = own.and(paths) {
                problems.push(format!("term {k}: {e}"));
            } else if !own_ok || !paths_ok {
                problems.push(format!(
                    "term {k}: a posting names a document or file that does not exist"
                ));
            }
            if problems.len() >= 5 {
                break;
            }
        }
        problems
    }
}
