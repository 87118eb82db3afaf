//! Text indexes of writable graphs: for a label and a key, an inverted index of the words
//! of that property ([`crate::text::words`]) over the nodes carrying the label, scored by
//! BM25 as SQLite FTS5 scores (`crate::text::search`). Like property indexes they are kept
//! exact through every change and undo, so a search always sees the statement's own
//! writes; a checkpoint stores only their definitions and opening rebuilds them.
//!
//! A term's postings are `(node, frequency)` sorted by node: nodes are created with
//! increasing ids, so indexing a new node appends.

use std::collections::BTreeSet;

use roaring::RoaringBitmap;

use std::sync::MutexGuard;

use super::graph::WritableGraph;
use super::prop::PropValue;
use super::text_worker::Held;
use crate::text::query::{QueryClause, TextQuery};
use crate::text::search::{bm25_idf, bm25_term};
use crate::text::words::{WordRole, for_each_word, word_parts};

/// One text index.
#[derive(Clone, Debug, Default)]
pub(crate) struct TextIndex {
    pub(crate) label: u32,
    pub(crate) key: u32,
    /// Per term, `(node, frequency)` by node. Hashed, not ordered: a file read indexes
    /// hundreds of thousands of words, and a hash look-up costs one comparison where an
    /// ordered map costs about sixteen.
    postings: foldhash::HashMap<String, Vec<(u32, u32)>>,
    /// The same terms in order, for prefix queries.
    terms: BTreeSet<String>,
    /// Word count per node id; [`NOT_INDEXED`] for nodes the index does not hold. Ids
    /// are dense, so a vector indexed by id is both smaller and about ten times faster to
    /// read while scoring than a hash map.
    lengths: Vec<u32>,
    documents: u32,
    total_length: u64,
}

/// The length recorded for a node the index does not hold.
const NOT_INDEXED: u32 = u32::MAX;

/// Matches `(node, score)`, sorted by node: every step of a search merges such lists,
/// which costs one pass and no hashing (posting lists are kept in node order).
type Scored = Vec<(u32, f64)>;

/// The collection figures BM25 needs.
#[derive(Clone, Copy)]
struct Collection {
    documents: f64,
    average_length: f64,
}

/// The text a property value contributes: a string, or the strings of a list.
pub(crate) fn indexed_text(value: &PropValue) -> Option<String> {
    match value {
        PropValue::String(text) => Some(text.clone()),
        PropValue::List(items) => Some(
            items
                .iter()
                .filter_map(|item| match item {
                    PropValue::String(text) => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

/// Each term's frequency in `text`, and the text's length in parts (as FTS5 counts
/// tokens: the whole-identifier terms beside the parts do not lengthen a document).
fn term_counts(text: &str) -> (foldhash::HashMap<String, u32>, u32) {
    let mut counts: foldhash::HashMap<String, u32> = foldhash::HashMap::default();
    let mut length = 0u32;
    for_each_word(text, |term, role| {
        if role == WordRole::Part {
            length = length.saturating_add(1);
        }
        match counts.get_mut(term) {
            Some(count) => *count += 1,
            None => {
                counts.insert(term.to_string(), 1);
            }
        }
    });
    (counts, length.min(NOT_INDEXED - 1))
}

/// The matches in both lists, their scores added.
fn intersect(left: &[(u32, f64)], right: &[(u32, f64)]) -> Scored {
    let mut out = Vec::with_capacity(left.len().min(right.len()));
    let (mut at_left, mut at_right) = (0, 0);
    while at_left < left.len() && at_right < right.len() {
        let ((node, score), (other, more)) = (left[at_left], right[at_right]);
        match node.cmp(&other) {
            std::cmp::Ordering::Less => at_left += 1,
            std::cmp::Ordering::Greater => at_right += 1,
            std::cmp::Ordering::Equal => {
                out.push((node, score + more));
                at_left += 1;
                at_right += 1;
            }
        }
    }
    out
}

/// The matches in any of the lists, the scores of one node added.
fn unite(lists: Vec<Scored>) -> Scored {
    let mut all: Scored = lists.into_iter().flatten().collect();
    all.sort_by_key(|&(node, _)| node);
    let mut out: Scored = Vec::with_capacity(all.len());
    for (node, score) in all {
        match out.last_mut() {
            Some((last, total)) if *last == node => *total += score,
            _ => out.push((node, score)),
        }
    }
    out
}

/// Best first (higher score; the newer node among equal scores), at most `limit`: a
/// selection then a sort of the kept ones, so a short answer from many matches costs
/// one pass.
fn best_first(mut hits: Scored, limit: usize) -> Scored {
    let order = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0));
    if limit == 0 {
        return Vec::new();
    }
    if limit < hits.len() {
        hits.select_nth_unstable_by(limit - 1, order);
        hits.truncate(limit);
    }
    hits.sort_by(order);
    hits
}

impl TextIndex {
    pub(crate) fn new(label: u32, key: u32) -> Self {
        TextIndex {
            label,
            key,
            ..TextIndex::default()
        }
    }

    fn length_of(&self, node: u32) -> u32 {
        self.lengths
            .get(node as usize)
            .copied()
            .unwrap_or(NOT_INDEXED)
    }

    /// Indexes `value` as node `node`'s text; the bytes of text it indexed.
    pub(crate) fn insert(&mut self, node: u32, value: &PropValue) -> usize {
        let Some(text) = indexed_text(value) else {
            return 0;
        };
        self.insert_text(node, &text);
        text.len()
    }

    /// Indexes `text` as node `node`'s text.
    pub(crate) fn insert_text(&mut self, node: u32, text: &str) {
        // Words are counted straight into the postings: no map per document, and a
        // string is made only for a term the index has never held.
        let mut length = 0u32;
        for_each_word(text, |term, role| {
            if role == WordRole::Part {
                length = length.saturating_add(1);
            }
            self.count_occurrence(term, node);
        });
        let length = length.min(NOT_INDEXED - 1);
        if self.lengths.len() <= node as usize {
            self.lengths.resize(node as usize + 1, NOT_INDEXED);
        }
        if self.lengths[node as usize] == NOT_INDEXED {
            self.documents += 1;
        } else {
            self.total_length -= u64::from(self.lengths[node as usize]);
        }
        self.lengths[node as usize] = length;
        self.total_length += u64::from(length);
    }

    /// One more occurrence of `term` in `node`; a list keeps one entry per node, by node.
    fn count_occurrence(&mut self, term: &str, node: u32) {
        let Some(list) = self.postings.get_mut(term) else {
            self.terms.insert(term.to_string());
            self.postings.insert(term.to_string(), vec![(node, 1)]);
            return;
        };
        match list.last_mut() {
            Some((last, frequency)) if *last == node => *frequency += 1,
            // An undo puts an older node back.
            Some((last, _)) if *last > node => {
                match list.binary_search_by_key(&node, |&(other, _)| other) {
                    Ok(at) => list[at].1 += 1,
                    Err(at) => list.insert(at, (node, 1)),
                }
            }
            _ => list.push((node, 1)),
        }
    }

    fn remove(&mut self, node: u32, value: &PropValue) {
        let Some(text) = indexed_text(value) else {
            return;
        };
        let (counts, _) = term_counts(&text);
        for term in counts.keys() {
            if let Some(list) = self.postings.get_mut(term) {
                if let Ok(at) = list.binary_search_by_key(&node, |&(other, _)| other) {
                    list.remove(at);
                }
                if list.is_empty() {
                    self.postings.remove(term);
                    self.terms.remove(term);
                }
            }
        }
        let length = self.length_of(node);
        if length != NOT_INDEXED {
            self.lengths[node as usize] = NOT_INDEXED;
            self.documents -= 1;
            self.total_length -= u64::from(length);
        }
    }

    /// The documents meeting every clause (phrases checked against `text_of`), scored,
    /// sorted by node.
    fn search(&self, query: &TextQuery, text_of: &dyn Fn(u32) -> Option<String>) -> Scored {
        if self.documents == 0 {
            return Vec::new();
        }
        let collection = Collection {
            documents: f64::from(self.documents),
            average_length: self.total_length as f64 / f64::from(self.documents),
        };
        let mut scores: Option<Scored> = None;
        for clause in &query.clauses {
            let clause_scores = self.clause_scores(clause, collection);
            scores = Some(match scores {
                None => clause_scores,
                Some(previous) => intersect(&previous, &clause_scores),
            });
        }
        let phrases: Vec<&Vec<String>> = query
            .clauses
            .iter()
            .filter_map(|clause| match clause {
                QueryClause::Phrase(parts) => Some(parts),
                _ => None,
            })
            .collect();
        let mut scores = scores.unwrap_or_default();
        if !phrases.is_empty() {
            scores.retain(|(node, _)| {
                text_of(*node).is_some_and(|text| holds_phrases(&text, &phrases))
            });
        }
        scores
    }

    /// One term's BM25 for each document holding it.
    fn term_scores(&self, list: &[(u32, u32)], collection: Collection) -> Scored {
        let idf = bm25_idf(collection.documents, list.len() as f64);
        list.iter()
            .map(|&(node, frequency)| {
                let length = f64::from(self.length_of(node));
                let score = bm25_term(idf, f64::from(frequency), length, collection.average_length);
                (node, score)
            })
            .collect()
    }

    /// BM25 of one clause for each document holding it. A prefix scores as the sum over
    /// the terms it expands to; a phrase as the sum over its words (its adjacency is
    /// checked afterwards).
    fn clause_scores(&self, clause: &QueryClause, collection: Collection) -> Scored {
        let term = |word: &String| {
            self.postings
                .get(word)
                .map(|list| self.term_scores(list, collection))
                .unwrap_or_default()
        };
        match clause {
            QueryClause::Term(word) => term(word),
            QueryClause::Prefix(stem) => unite(
                self.terms
                    .range(stem.clone()..)
                    .take_while(|word| word.starts_with(stem.as_str()))
                    .filter_map(|word| self.postings.get(word))
                    .map(|list| self.term_scores(list, collection))
                    .collect(),
            ),
            QueryClause::Phrase(parts) => {
                let mut per_word: Option<Scored> = None;
                for part in parts {
                    let word_scores = term(part);
                    per_word = Some(match per_word {
                        None => word_scores,
                        Some(previous) => intersect(&previous, &word_scores),
                    });
                }
                per_word.unwrap_or_default()
            }
        }
    }
}

/// Whether `text` holds each phrase as consecutive parts.
fn holds_phrases(text: &str, phrases: &[&Vec<String>]) -> bool {
    let parts = word_parts(text);
    phrases.iter().all(|phrase| {
        parts
            .windows(phrase.len())
            .any(|window| window == phrase.as_slice())
    })
}

impl WritableGraph {
    /// Every text index, as `(label, key)` names.
    pub fn text_indexes(&self) -> Vec<(String, String)> {
        let names = self.text_indexes.settled().names.clone();
        self.label_key_names(names.into_iter())
    }

    /// Whether a text index exists for `label` and `key`.
    pub fn has_text_index(&self, label: &str, key: &str) -> bool {
        let (Some(label), Some(key)) = (self.labels.id(label), self.keys.id(key)) else {
            return false;
        };
        self.text_indexes.settled().names.contains(&(label, key))
    }

    /// The text indexes, back from any worker and complete (rebuilt from the nodes if a
    /// worker lost them).
    fn settled_text_indexes(&self) -> MutexGuard<'_, Held> {
        let mut held = self.text_indexes.settled();
        if held.lost {
            held.indexes = held
                .names
                .iter()
                .map(|&(label, key)| self.built_text_index(label, key))
                .collect();
            held.lost = false;
        }
        held
    }

    /// The nodes matching `query` in any text index, best first (BM25, higher is better;
    /// among equal scores the newest node first), at most `limit`. A node in several
    /// indexes keeps its best score. `None` when the graph has no text index.
    pub fn text_search(&self, query: &TextQuery, limit: usize) -> Option<Vec<(u32, f64)>> {
        Some(best_first(self.text_matches(query)?, limit))
    }

    /// The scores of the nodes of `among` that match `query`, by node id. `None` when
    /// the graph has no text index.
    pub fn text_scores(&self, query: &TextQuery, among: &RoaringBitmap) -> Option<Vec<(u32, f64)>> {
        let mut matches = self.text_matches(query)?;
        matches.retain(|(node, _)| among.contains(*node));
        Some(matches)
    }

    /// Every match in any text index, by node, each with its best score.
    fn text_matches(&self, query: &TextQuery) -> Option<Scored> {
        let held = self.settled_text_indexes();
        let mut per_index = held.indexes.iter().map(|index| {
            let text_of = |node: u32| {
                self.node_property_by_id(node, index.key)
                    .and_then(indexed_text)
            };
            index.search(query, &text_of)
        });
        let first = per_index.next()?;
        Some(per_index.fold(first, |best, more| {
            let mut all = best;
            all.extend(more);
            all.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
            all.dedup_by_key(|hit| hit.0);
            all
        }))
    }

    /// A text index over the nodes there are now.
    fn built_text_index(&self, label: u32, key: u32) -> TextIndex {
        let mut index = TextIndex::new(label, key);
        if let Some(nodes) = self.label_index.get(label as usize) {
            for node in nodes {
                if let Some(value) = self.node_property_by_id(node, key) {
                    index.insert(node, value);
                }
            }
        }
        index
    }

    /// Builds a text index over the nodes there are now.
    pub(crate) fn add_text_index(&mut self, label: u32, key: u32) {
        let index = self.built_text_index(label, key);
        self.settled_text_indexes().push(index);
    }

    pub(crate) fn drop_text_index(&mut self, label: u32, key: u32) -> bool {
        self.settled_text_indexes().remove_index(label, key)
    }

    /// Takes node `id` out of (`insert == false`) or puts it into every text index that
    /// covers it; `key`, when given, is the only property the change touches, so indexes
    /// of other keys are left alone (setting a status must not re-read a page of text).
    /// Insertions may go to the worker ([`super::text_worker`]); a removal waits for it.
    pub(crate) fn retext_node(&mut self, id: u32, key: Option<u32>, insert: bool) {
        if self.text_indexes.is_empty() {
            return;
        }
        let Some(node) = self.nodes.get(id as usize).and_then(Option::as_ref) else {
            return;
        };
        let covering: Vec<(usize, usize)> = self
            .text_indexes
            .unsettled()
            .names
            .iter()
            .enumerate()
            .filter(|&(_, &(label, index_key))| {
                key.is_none_or(|key| key == index_key) && node.labels.binary_search(&label).is_ok()
            })
            .filter_map(|(position, &(_, index_key))| {
                let at = node
                    .properties
                    .binary_search_by_key(&index_key, |(k, _)| *k)
                    .ok()?;
                Some((position, at))
            })
            .collect();
        if covering.is_empty() {
            return;
        }
        if insert {
            let held = self.text_indexes.unsettled();
            for (position, at) in covering {
                held.insert(position, id, &node.properties[at].1);
            }
        } else {
            let mut held = self.settled_text_indexes();
            for (position, at) in covering {
                held.indexes[position].remove(id, &node.properties[at].1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Change, Journal};
    use crate::text::query::parse_text_query;

    fn note(id: u32, label: &str, text: &str) -> Change {
        Change::CreateNode {
            id,
            labels: vec![label.into()],
            properties: vec![("text".into(), PropValue::String(text.into()))],
        }
    }

    /// Creates a text index over the `key` of `Note` nodes.
    fn index_notes_by(graph: &mut WritableGraph, journal: &mut Journal, key: &str) {
        let change = Change::CreateTextIndex {
            label: "Note".into(),
            key: key.into(),
        };
        graph.apply_logged(change, journal).unwrap();
    }

    /// `Note` nodes holding `texts` (ids in order) and a text index over them.
    fn indexed_notes(texts: &[&str]) -> WritableGraph {
        let mut graph = WritableGraph::new();
        let mut journal = Journal::new();
        for (id, text) in texts.iter().enumerate() {
            graph
                .apply_logged(note(id as u32, "Note", text), &mut journal)
                .unwrap();
        }
        index_notes_by(&mut graph, &mut journal, "text");
        graph
    }

    fn found(graph: &WritableGraph, query: &str) -> Vec<u32> {
        let query = parse_text_query(query).unwrap();
        let mut nodes: Vec<u32> = graph
            .text_search(&query, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|(node, _)| node)
            .collect();
        nodes.sort_unstable();
        nodes
    }

    /// A brute-force model: the nodes with the label whose text meets every clause.
    fn model(graph: &WritableGraph, query: &str) -> Vec<u32> {
        let query = parse_text_query(query).unwrap();
        let mut nodes: Vec<u32> = graph
            .nodes_with_label("Note")
            .map(|bitmap| bitmap.iter().collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .filter(|&node| {
                let Some(PropValue::String(text)) = graph.node_property(node, "text") else {
                    return false;
                };
                let mut terms = Vec::new();
                for_each_word(text, |term, _| terms.push(term.to_string()));
                query.clauses.iter().all(|clause| match clause {
                    QueryClause::Term(term) => terms.contains(term),
                    QueryClause::Prefix(stem) => terms.iter().any(|t| t.starts_with(stem)),
                    QueryClause::Phrase(parts) => holds_phrases(text, &[parts]),
                })
            })
            .collect();
        nodes.sort_unstable();
        nodes
    }

    #[test]
    fn the_text_index_follows_every_change_and_every_undo() {
        let mut graph = WritableGraph::new();
        let mut journal = Journal::new();
        graph
            .apply_logged(note(0, "Note", "the parser reads headers"), &mut journal)
            .unwrap();
        index_notes_by(&mut graph, &mut journal, "text");
        let mark = journal.len();
        let changes = vec![
            note(1, "Note", "parseHeader fails on Déjà vu input"),
            note(2, "Other", "the parser again"),
            Change::SetNodeProperty {
                id: 0,
                key: "text".into(),
                value: Some(PropValue::String("headers are read by the parser".into())),
            },
            Change::SetNodeProperty {
                id: 0,
                key: "status".into(),
                value: Some(PropValue::String("stale".into())),
            },
            Change::AddLabel {
                id: 2,
                label: "Note".into(),
            },
        ];
        for change in changes {
            graph.apply_logged(change, &mut journal).unwrap();
        }
        for query in [
            "parser",
            "pars*",
            "\"the parser\"",
            "deja",
            "parseheader",
            "header*",
            "read* parser",
        ] {
            assert_eq!(found(&graph, query), model(&graph, query), "{query}");
        }
        assert_eq!(found(&graph, "\"the parser\""), vec![0, 2]);
        graph
            .apply_logged(Change::DeleteNode { id: 2 }, &mut journal)
            .unwrap();
        assert_eq!(found(&graph, "parser"), vec![0]);
        graph.roll_back_to(&mut journal, mark);
        assert_eq!(found(&graph, "parser"), vec![0]);
        assert_eq!(found(&graph, "\"parser reads\""), vec![0]);
        assert!(found(&graph, "deja").is_empty());
        graph.roll_back_to(&mut journal, 1);
        assert!(
            graph
                .text_search(&parse_text_query("parser").unwrap(), usize::MAX)
                .is_none()
        );
    }

    #[test]
    fn scores_rank_the_denser_document_first() {
        let graph = indexed_notes(&[
            "lock lock lock",
            "a lock among many other words here",
            "nothing",
        ]);
        let hits = graph
            .text_search(&parse_text_query("lock").unwrap(), usize::MAX)
            .unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![0, 1]);
        assert!(hits[0].1 > hits[1].1 && hits[1].1 > 0.0);
    }

    #[test]
    fn a_limit_keeps_the_best_in_order_across_two_indexes() {
        let mut graph = WritableGraph::new();
        let mut journal = Journal::new();
        let words = ["lock", "page", "parse", "order", "lock lock"];
        for id in 0..300u32 {
            let text = (0..1 + id % 7)
                .map(|k| words[((id * 7 + k * 3) % 5) as usize])
                .collect::<Vec<_>>()
                .join(" ");
            let mut change = note(id, "Note", &text);
            if let Change::CreateNode { properties, .. } = &mut change {
                properties.push((
                    "title".into(),
                    PropValue::String(words[(id % 5) as usize].into()),
                ));
            }
            graph.apply_logged(change, &mut journal).unwrap();
        }
        for key in ["text", "title"] {
            index_notes_by(&mut graph, &mut journal, key);
        }
        for query in ["lock", "lock page", "pa*", "\"lock parse\"", "order"] {
            let query = parse_text_query(query).unwrap();
            let all = graph.text_search(&query, usize::MAX).unwrap();
            assert!(!all.is_empty());
            assert!(all.windows(2).all(|pair| {
                pair[0].1 > pair[1].1 || (pair[0].1 == pair[1].1 && pair[0].0 > pair[1].0)
            }));
            let mut nodes: Vec<u32> = all.iter().map(|hit| hit.0).collect();
            nodes.sort_unstable();
            nodes.dedup();
            assert_eq!(nodes.len(), all.len(), "a node listed twice");
            for limit in [0, 1, 5, 17, all.len(), all.len() + 3] {
                let some = graph.text_search(&query, limit).unwrap();
                assert_eq!(some, all[..limit.min(all.len())], "limit {limit}");
            }
        }
    }

    #[test]
    fn identifier_wholes_do_not_lengthen_a_document_and_pieces_are_found() {
        let graph = indexed_notes(&[
            "zeta x_y",
            "zeta x y",
            "omega",
            "omega two",
            "p = XML_ParserCreate(NULL); luaE_extendCI(L, 1);",
        ]);
        // FTS5 gives both the same score: both are two tokens long there.
        let hits = graph
            .text_search(&parse_text_query("zeta").unwrap(), usize::MAX)
            .unwrap();
        assert_eq!(hits.len(), 2);
        assert!((hits[0].1 - hits[1].1).abs() < 1e-12, "{hits:?}");
        for query in [
            "ParserCreate",
            "ParserCre*",
            "extendCI",
            "XML_ParserCreate",
            "parser create",
        ] {
            assert_eq!(found(&graph, query), vec![4], "{query}");
        }
    }
}
