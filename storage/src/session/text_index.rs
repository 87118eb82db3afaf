//! Text indexes of writable graphs: for a label and a key, an inverted index of the words
//! of that property ([`crate::text::words`]) over the nodes carrying the label, scored by
//! BM25 as SQLite FTS5 scores (`crate::text::search`). Like property indexes they are kept
//! exact through every change and undo, so a search always sees the statement's own
//! writes; a checkpoint stores only their definitions and opening rebuilds them.
//!
//! A term's postings are `(node, frequency)` sorted by node: nodes are created with
//! increasing ids, so indexing a new node appends.

use std::collections::BTreeMap;

use super::graph::WritableGraph;
use super::prop::PropValue;
use crate::text::query::{QueryClause, TextQuery};
use crate::text::search::{bm25_idf, bm25_term};
use crate::text::words::{for_each_word, word_parts};

/// One text index.
#[derive(Clone, Debug, Default)]
pub(crate) struct TextIndex {
    pub(crate) label: u32,
    pub(crate) key: u32,
    postings: BTreeMap<String, Vec<(u32, u32)>>,
    lengths: foldhash::HashMap<u32, u32>,
    total_length: u64,
}

/// The text a property value contributes: a string, or the strings of a list.
fn indexed_text(value: &PropValue) -> Option<String> {
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

fn term_counts(text: &str) -> (BTreeMap<String, u32>, u32) {
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    let mut length = 0u32;
    for_each_word(text, |term, _| {
        length = length.saturating_add(1);
        match counts.get_mut(term) {
            Some(count) => *count += 1,
            None => {
                counts.insert(term.to_string(), 1);
            }
        }
    });
    (counts, length)
}

impl TextIndex {
    pub(crate) fn new(label: u32, key: u32) -> Self {
        TextIndex {
            label,
            key,
            ..TextIndex::default()
        }
    }

    fn insert(&mut self, node: u32, value: &PropValue) {
        let Some(text) = indexed_text(value) else {
            return;
        };
        let (counts, length) = term_counts(&text);
        for (term, frequency) in counts {
            let list = self.postings.entry(term).or_default();
            match list.last() {
                Some(&(last, _)) if last >= node => {
                    let at = list.partition_point(|&(other, _)| other < node);
                    list.insert(at, (node, frequency));
                }
                _ => list.push((node, frequency)),
            }
        }
        self.lengths.insert(node, length);
        self.total_length += u64::from(length);
    }

    fn remove(&mut self, node: u32, value: &PropValue) {
        let Some(text) = indexed_text(value) else {
            return;
        };
        let (counts, length) = term_counts(&text);
        for term in counts.keys() {
            if let Some(list) = self.postings.get_mut(term) {
                if let Ok(at) = list.binary_search_by_key(&node, |&(other, _)| other) {
                    list.remove(at);
                }
                if list.is_empty() {
                    self.postings.remove(term);
                }
            }
        }
        if self.lengths.remove(&node).is_some() {
            self.total_length -= u64::from(length);
        }
    }

    /// The documents meeting every clause (phrases checked against `text_of`), scored.
    fn search(
        &self,
        query: &TextQuery,
        text_of: &dyn Fn(u32) -> Option<String>,
    ) -> Vec<(u32, f64)> {
        let documents = self.lengths.len() as f64;
        if documents == 0.0 {
            return Vec::new();
        }
        let average_length = self.total_length as f64 / documents;
        let mut scores: Option<foldhash::HashMap<u32, f64>> = None;
        for clause in &query.clauses {
            let clause_scores = self.clause_scores(clause, documents, average_length);
            scores = Some(match scores {
                None => clause_scores,
                Some(previous) => previous
                    .into_iter()
                    .filter_map(|(node, score)| {
                        clause_scores.get(&node).map(|more| (node, score + more))
                    })
                    .collect(),
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
        scores
            .unwrap_or_default()
            .into_iter()
            .filter(|(node, _)| {
                phrases.is_empty()
                    || text_of(*node).is_some_and(|text| holds_phrases(&text, &phrases))
            })
            .collect()
    }

    /// BM25 of one clause for each document holding it. A prefix scores as the sum over
    /// the terms it expands to; a phrase as the sum over its words (its adjacency is
    /// checked afterwards).
    fn clause_scores(
        &self,
        clause: &QueryClause,
        documents: f64,
        average_length: f64,
    ) -> foldhash::HashMap<u32, f64> {
        let mut scores: foldhash::HashMap<u32, f64> = foldhash::HashMap::default();
        let add_term = |list: &Vec<(u32, u32)>, scores: &mut foldhash::HashMap<u32, f64>| {
            let idf = bm25_idf(documents, list.len() as f64);
            for &(node, frequency) in list {
                let length = f64::from(self.lengths.get(&node).copied().unwrap_or(0));
                *scores.entry(node).or_default() +=
                    bm25_term(idf, f64::from(frequency), length, average_length);
            }
        };
        match clause {
            QueryClause::Term(term) => {
                if let Some(list) = self.postings.get(term) {
                    add_term(list, &mut scores);
                }
            }
            QueryClause::Prefix(stem) => {
                for (_, list) in self
                    .postings
                    .range(stem.clone()..)
                    .take_while(|(term, _)| term.starts_with(stem.as_str()))
                {
                    add_term(list, &mut scores);
                }
            }
            QueryClause::Phrase(parts) => {
                let mut per_word: Option<foldhash::HashMap<u32, f64>> = None;
                for part in parts {
                    let mut word_scores = foldhash::HashMap::default();
                    if let Some(list) = self.postings.get(part) {
                        add_term(list, &mut word_scores);
                    }
                    per_word = Some(match per_word {
                        None => word_scores,
                        Some(previous) => previous
                            .into_iter()
                            .filter_map(|(node, score)| {
                                word_scores.get(&node).map(|more| (node, score + more))
                            })
                            .collect(),
                    });
                }
                scores = per_word.unwrap_or_default();
            }
        }
        scores
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
        self.label_key_names(
            self.text_indexes
                .iter()
                .map(|index| (index.label, index.key)),
        )
    }

    /// Whether a text index exists for `label` and `key`.
    pub fn has_text_index(&self, label: &str, key: &str) -> bool {
        self.text_index_position(label, key).is_some()
    }

    fn text_index_position(&self, label: &str, key: &str) -> Option<usize> {
        let (label, key) = (self.labels.id(label)?, self.keys.id(key)?);
        self.text_indexes
            .iter()
            .position(|index| index.label == label && index.key == key)
    }

    /// The nodes matching `query` in any text index, best first (BM25, higher is better;
    /// among equal scores the newest node first). A node in several indexes keeps its best
    /// score. `None` when the graph has no text index.
    pub fn text_search(&self, query: &TextQuery) -> Option<Vec<(u32, f64)>> {
        if self.text_indexes.is_empty() {
            return None;
        }
        let mut best: foldhash::HashMap<u32, f64> = foldhash::HashMap::default();
        for index in &self.text_indexes {
            let text_of = |node: u32| {
                self.node_property_by_id(node, index.key)
                    .and_then(indexed_text)
            };
            for (node, score) in index.search(query, &text_of) {
                let entry = best.entry(node).or_insert(score);
                *entry = entry.max(score);
            }
        }
        let mut hits: Vec<(u32, f64)> = best.into_iter().collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
        Some(hits)
    }

    /// Builds a text index over the nodes there are now.
    pub(crate) fn add_text_index(&mut self, label: u32, key: u32) {
        let mut index = TextIndex::new(label, key);
        if let Some(nodes) = self.label_index.get(label as usize) {
            for node in nodes {
                if let Some(value) = self.node_property_by_id(node, key) {
                    index.insert(node, value);
                }
            }
        }
        self.text_indexes.push(index);
    }

    pub(crate) fn drop_text_index(&mut self, label: u32, key: u32) -> bool {
        let before = self.text_indexes.len();
        self.text_indexes
            .retain(|index| !(index.label == label && index.key == key));
        self.text_indexes.len() < before
    }

    /// Takes node `id` out of (`insert == false`) or puts it into every text index that
    /// covers it; `key`, when given, is the only property the change touches, so indexes
    /// of other keys are left alone (setting a status must not re-read a page of text).
    pub(crate) fn retext_node(&mut self, id: u32, key: Option<u32>, insert: bool) {
        if self.text_indexes.is_empty() {
            return;
        }
        let Some(node) = self.nodes.get(id as usize).and_then(Option::as_ref) else {
            return;
        };
        for index in &mut self.text_indexes {
            if key.is_some_and(|key| key != index.key)
                || node.labels.binary_search(&index.label).is_err()
            {
                continue;
            }
            let Ok(at) = node
                .properties
                .binary_search_by_key(&index.key, |(k, _)| *k)
            else {
                continue;
            };
            if insert {
                index.insert(id, &node.properties[at].1);
            } else {
                index.remove(id, &node.properties[at].1);
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

    fn found(graph: &WritableGraph, query: &str) -> Vec<u32> {
        let query = parse_text_query(query).unwrap();
        let mut nodes: Vec<u32> = graph
            .text_search(&query)
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
        graph
            .apply_logged(
                Change::CreateTextIndex {
                    label: "Note".into(),
                    key: "text".into(),
                },
                &mut journal,
            )
            .unwrap();
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
                .text_search(&parse_text_query("parser").unwrap())
                .is_none()
        );
    }

    #[test]
    fn scores_rank_the_denser_document_first() {
        let mut graph = WritableGraph::new();
        let mut journal = Journal::new();
        let texts = [
            "lock lock lock",
            "a lock among many other words here",
            "nothing",
        ];
        for (id, text) in texts.iter().enumerate() {
            graph
                .apply_logged(note(id as u32, "Note", text), &mut journal)
                .unwrap();
        }
        graph
            .apply_logged(
                Change::CreateTextIndex {
                    label: "Note".into(),
                    key: "text".into(),
                },
                &mut journal,
            )
            .unwrap();
        let hits = graph
            .text_search(&parse_text_query("lock").unwrap())
            .unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![0, 1]);
        assert!(hits[0].1 > hits[1].1 && hits[1].1 > 0.0);
    }
}
