//! Property indexes of writable graphs: for a label and a key, the nodes carrying that
//! label by the value of that key, so equality look-ups (`MATCH (n:File {path: $p})`,
//! `MERGE`) need not scan.
//!
//! Values are keyed by their encoding after normalising numbers (an integral float keys as
//! the integer, since `1 = 1.0` in BQL), recursively inside lists and maps; a value holding
//! NaN or null equals nothing and is not indexed. The index is kept exact by taking a node
//! out of every index before a change touches it and putting it back after
//! ([`WritableGraph::apply`] and its undo do this).

use std::collections::BTreeMap;

use roaring::RoaringBitmap;

use super::graph::WritableGraph;
use super::prop::{PropValue, put_value};

/// One index.
#[derive(Clone, Debug, Default)]
pub(crate) struct PropertyIndex {
    pub(crate) label: u32,
    pub(crate) key: u32,
    entries: foldhash::HashMap<IndexKey, Postings>,
}

/// The key a value is indexed under. An integer (the usual id) is held inline: a key on
/// the heap cost a cache miss per probe, which was most of a bulk load's index seeks.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum IndexKey {
    /// An integer, or an integral float.
    Int(i64),
    /// Any other value, by its encoding.
    Encoded(Box<[u8]>),
}

/// The nodes under one key: most keys (ids) have one, held inline.
#[derive(Clone, Debug)]
enum Postings {
    One(u32),
    Many(RoaringBitmap),
}

impl Postings {
    /// Adds `node`.
    fn insert(&mut self, node: u32) {
        match self {
            Postings::One(first) if *first == node => {}
            Postings::One(first) => {
                *self = Postings::Many(RoaringBitmap::from_iter([*first, node]))
            }
            Postings::Many(nodes) => {
                nodes.insert(node);
            }
        }
    }

    /// Removes `node`; whether none is left.
    fn remove(&mut self, node: u32) -> bool {
        match self {
            Postings::One(first) => *first == node,
            Postings::Many(nodes) => {
                nodes.remove(node);
                nodes.is_empty()
            }
        }
    }

    fn hits(&self) -> IndexHits {
        match self {
            Postings::One(node) => IndexHits::One(*node),
            Postings::Many(nodes) => IndexHits::from(nodes.iter().collect::<Vec<_>>()),
        }
    }
}

/// The nodes an index gives for one value, in a seek's hands. Most values (ids) name one
/// node, held without a heap block: a vector per look-up was an allocation and a free
/// for every row of a bulk load's relationship seeks.
#[derive(Clone, Debug)]
pub enum IndexHits {
    /// No node (left).
    Empty,
    /// One node.
    One(u32),
    /// Several.
    Many(std::vec::IntoIter<u32>),
}

impl From<Vec<u32>> for IndexHits {
    fn from(nodes: Vec<u32>) -> Self {
        match nodes.as_slice() {
            [] => IndexHits::Empty,
            [node] => IndexHits::One(*node),
            _ => IndexHits::Many(nodes.into_iter()),
        }
    }
}

impl Iterator for IndexHits {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        match self {
            IndexHits::Empty => None,
            IndexHits::One(node) => {
                let node = *node;
                *self = IndexHits::Empty;
                Some(node)
            }
            IndexHits::Many(nodes) => nodes.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = match self {
            IndexHits::Empty => 0,
            IndexHits::One(_) => 1,
            IndexHits::Many(nodes) => nodes.len(),
        };
        (left, Some(left))
    }
}

impl ExactSizeIterator for IndexHits {}

/// The key a value is indexed under, or `None` when it can equal nothing.
pub(crate) fn index_key(value: &PropValue) -> Option<IndexKey> {
    match normalized(value)? {
        PropValue::Int(i) => Some(IndexKey::Int(i)),
        normal => {
            let mut out = Vec::new();
            put_value(&mut out, &normal);
            Some(IndexKey::Encoded(out.into_boxed_slice()))
        }
    }
}

fn normalized(value: &PropValue) -> Option<PropValue> {
    Some(match value {
        PropValue::Null => return None,
        PropValue::Float(f) if f.is_nan() => return None,
        // Every i64 is exactly a float below 2^53; above, floats are integers already.
        PropValue::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => PropValue::Int(*f as i64),
        PropValue::List(items) => {
            PropValue::List(items.iter().map(normalized).collect::<Option<_>>()?)
        }
        PropValue::Map(entries) => PropValue::Map(
            entries
                .iter()
                .map(|(k, v)| Some((k.clone(), normalized(v)?)))
                .collect::<Option<BTreeMap<_, _>>>()?,
        ),
        other => other.clone(),
    })
}

impl PropertyIndex {
    pub(crate) fn new(label: u32, key: u32) -> Self {
        PropertyIndex {
            label,
            key,
            entries: foldhash::HashMap::default(),
        }
    }

    fn insert(&mut self, value: &PropValue, node: u32) {
        if let Some(key) = index_key(value) {
            match self.entries.entry(key) {
                std::collections::hash_map::Entry::Occupied(mut nodes) => {
                    nodes.get_mut().insert(node);
                }
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert(Postings::One(node));
                }
            }
        }
    }

    fn remove(&mut self, value: &PropValue, node: u32) {
        if let Some(key) = index_key(value)
            && let Some(nodes) = self.entries.get_mut(&key)
            && nodes.remove(node)
        {
            self.entries.remove(&key);
        }
    }
}

impl WritableGraph {
    /// Whether a property index exists for `label` and `key`.
    pub fn has_index(&self, label: &str, key: &str) -> bool {
        self.index_position(label, key).is_some()
    }

    /// Every index, as `(label, key)` names.
    pub fn indexes(&self) -> Vec<(String, String)> {
        self.label_key_names(self.indexes.iter().map(|index| (index.label, index.key)))
    }

    /// `(label, key)` id pairs as names (both index kinds list themselves this way).
    pub(crate) fn label_key_names(
        &self,
        pairs: impl Iterator<Item = (u32, u32)>,
    ) -> Vec<(String, String)> {
        pairs
            .map(|(label, key)| {
                (
                    self.labels.name(label).to_string(),
                    self.keys.name(key).to_string(),
                )
            })
            .collect()
    }

    fn index_position(&self, label: &str, key: &str) -> Option<usize> {
        let (label, key) = (self.labels.id(label)?, self.keys.id(key)?);
        self.indexes
            .iter()
            .position(|i| i.label == label && i.key == key)
    }

    /// The nodes with `label` whose `key` equals `value`, through the index; `None` when
    /// there is no such index.
    pub fn index_lookup(&self, label: &str, key: &str, value: &PropValue) -> Option<Vec<u32>> {
        self.index_hits(label, key, value).map(Iterator::collect)
    }

    /// [`Self::index_lookup`] as a seek consumes it.
    pub fn index_hits(&self, label: &str, key: &str, value: &PropValue) -> Option<IndexHits> {
        let index = &self.indexes[self.index_position(label, key)?];
        Some(
            index_key(value)
                .and_then(|k| index.entries.get(&k))
                .map_or(IndexHits::Empty, Postings::hits),
        )
    }

    /// Builds an index over the nodes there are now.
    pub(crate) fn add_index(&mut self, label: u32, key: u32) {
        let mut index = PropertyIndex::new(label, key);
        if let Some(nodes) = self.label_index.get(label as usize) {
            for node in nodes {
                if let Some(value) = self.node_property_by_id(node, key) {
                    index.insert(value, node);
                }
            }
        }
        self.indexes.push(index);
    }

    /// Takes node `id` out of every index on `key` (`None`: on any key), before a change
    /// to it.
    pub(crate) fn unindex_node(&mut self, id: u32, key: Option<u32>) {
        self.reindex_node(id, key, false);
    }

    /// Puts node `id` back into every index on `key` (`None`: on any key) that covers
    /// it, after a change to it.
    pub(crate) fn index_node(&mut self, id: u32, key: Option<u32>) {
        self.reindex_node(id, key, true);
    }

    fn reindex_node(&mut self, id: u32, key: Option<u32>, insert: bool) {
        if self.indexes.is_empty() {
            return;
        }
        let Some(node) = self.nodes.get(id as usize).and_then(Option::as_ref) else {
            return;
        };
        for index in &mut self.indexes {
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
            let value = &node.properties[at].1;
            if insert {
                index.insert(value, id);
            } else {
                index.remove(value, id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Change, Journal};

    fn node(id: u32, label: &str, value: PropValue) -> Change {
        Change::CreateNode {
            id,
            labels: vec![label.into()],
            properties: vec![("k".into(), value)],
        }
    }

    #[test]
    fn the_index_follows_every_change_and_every_undo() {
        let mut graph = WritableGraph::new();
        let mut journal = Journal::new();
        graph
            .apply_logged(node(0, "A", PropValue::Int(1)), &mut journal)
            .unwrap();
        graph
            .apply_logged(
                Change::CreateIndex {
                    label: "A".into(),
                    key: "k".into(),
                },
                &mut journal,
            )
            .unwrap();
        let look = |g: &WritableGraph, v: PropValue| g.index_lookup("A", "k", &v).unwrap();
        assert_eq!(
            look(&graph, PropValue::Float(1.0)),
            vec![0],
            "1.0 keys as 1"
        );
        let mark = journal.len();
        let changes = vec![
            node(1, "A", PropValue::Int(1)),
            node(2, "B", PropValue::Int(1)),
            Change::SetNodeProperty {
                id: 0,
                key: "k".into(),
                value: Some(PropValue::Int(2)),
            },
            Change::AddLabel {
                id: 2,
                label: "A".into(),
            },
            Change::RemoveLabel {
                id: 1,
                label: "A".into(),
            },
        ];
        for change in changes {
            graph.apply_logged(change, &mut journal).unwrap();
        }
        assert_eq!(look(&graph, PropValue::Int(1)), vec![2]);
        assert_eq!(look(&graph, PropValue::Int(2)), vec![0]);
        graph
            .apply_logged(Change::DeleteNode { id: 2 }, &mut journal)
            .unwrap();
        assert!(look(&graph, PropValue::Int(1)).is_empty());
        graph.roll_back_to(&mut journal, mark);
        assert_eq!(look(&graph, PropValue::Int(1)), vec![0]);
        assert!(look(&graph, PropValue::Int(2)).is_empty());
        assert!(look(&graph, PropValue::Float(f64::NAN)).is_empty());
        graph.roll_back_to(&mut journal, 1);
        assert!(!graph.has_index("A", "k"));
    }

    /// `1 = 1.0` in BQL, so both key as the integer, held inline; anything else keys by
    /// its encoding, apart from the integer; NaN and null key as nothing.
    #[test]
    fn integral_numbers_share_an_inline_key() {
        assert_eq!(index_key(&PropValue::Int(1)), Some(IndexKey::Int(1)));
        assert_eq!(index_key(&PropValue::Float(1.0)), Some(IndexKey::Int(1)));
        assert!(matches!(
            index_key(&PropValue::String("1".into())),
            Some(IndexKey::Encoded(_))
        ));
        assert!(matches!(
            index_key(&PropValue::Float(1.5)),
            Some(IndexKey::Encoded(_))
        ));
        assert_eq!(
            index_key(&PropValue::List(vec![PropValue::Float(2.0)])),
            index_key(&PropValue::List(vec![PropValue::Int(2)]))
        );
        assert_eq!(index_key(&PropValue::Float(f64::NAN)), None);
        assert_eq!(index_key(&PropValue::Null), None);
    }

    /// One random write of [`indexes_match_a_scan_through_changes_and_undos`].
    #[derive(Clone, Debug)]
    enum Step {
        Create(bool, Option<i64>, Option<usize>),
        Set(u32, &'static str, Option<i64>),
        SetText(u32, Option<usize>),
        Label(u32, bool, bool),
        Delete(u32),
        Mark,
        RollBack,
    }

    const WORDS: [&str; 3] = ["alpha", "beta", "gamma"];

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        let value = proptest::option::of(0i64..3);
        let word = proptest::option::of(0usize..3);
        prop_oneof![
            (any::<bool>(), value.clone(), word.clone())
                .prop_map(|(a, k, t)| Step::Create(a, k, t)),
            (0u32..6, prop_oneof![Just("k"), Just("j")], value)
                .prop_map(|(id, key, v)| Step::Set(id, key, v)),
            (0u32..6, word).prop_map(|(id, t)| Step::SetText(id, t)),
            (0u32..6, any::<bool>(), any::<bool>())
                .prop_map(|(id, a, add)| Step::Label(id, a, add)),
            (0u32..6).prop_map(Step::Delete),
            Just(Step::Mark),
            Just(Step::RollBack),
        ]
    }

    fn change_of(step: &Step, next_id: u32) -> Option<Change> {
        let label = |a: bool| if a { "A" } else { "B" }.to_string();
        Some(match step {
            Step::Create(a, k, t) => Change::CreateNode {
                id: next_id,
                labels: vec![label(*a)],
                properties: k
                    .map(|k| ("k".to_string(), PropValue::Int(k)))
                    .into_iter()
                    .chain(t.map(|t| ("t".to_string(), PropValue::String(WORDS[t].into()))))
                    .collect(),
            },
            Step::Set(id, key, value) => Change::SetNodeProperty {
                id: *id,
                key: key.to_string(),
                value: value.map(PropValue::Int),
            },
            Step::SetText(id, word) => Change::SetNodeProperty {
                id: *id,
                key: "t".into(),
                value: word.map(|t| PropValue::String(WORDS[t].into())),
            },
            Step::Label(id, a, true) => Change::AddLabel {
                id: *id,
                label: label(*a),
            },
            Step::Label(id, a, false) => Change::RemoveLabel {
                id: *id,
                label: label(*a),
            },
            Step::Delete(id) => Change::DeleteNode { id: *id },
            Step::Mark | Step::RollBack => return None,
        })
    }

    /// Every property index and the text index give what a scan of the nodes gives.
    fn assert_indexes_match_a_scan(graph: &WritableGraph) {
        let holding = |label: &str, key: &str, value: &PropValue| -> Vec<u32> {
            graph
                .nodes()
                .iter()
                .filter(|&id| graph.node_has_label(id, label))
                .filter(|&id| graph.node_property(id, key) == Some(value))
                .collect()
        };
        for (label, key) in [("A", "k"), ("A", "j"), ("B", "k")] {
            for value in 0..3 {
                let value = PropValue::Int(value);
                let mut found = graph.index_lookup(label, key, &value).unwrap();
                found.sort_unstable();
                assert_eq!(
                    found,
                    holding(label, key, &value),
                    "{label}.{key} = {value:?}"
                );
            }
        }
        for word in WORDS {
            let query = crate::text::query::parse_text_query(word).unwrap();
            let mut found: Vec<u32> = graph
                .text_search(&query, 100)
                .unwrap()
                .into_iter()
                .map(|(id, _)| id)
                .collect();
            found.sort_unstable();
            let text = PropValue::String(word.into());
            assert_eq!(found, holding("A", "t", &text), "A.t has {word}");
        }
    }

    proptest::proptest! {
        #[test]
        fn indexes_match_a_scan_through_changes_and_undos(
            steps in proptest::collection::vec(step(), 1..60),
            through_a_worker in proptest::bool::ANY,
        ) {
            let mut graph = WritableGraph::new();
            if through_a_worker {
                // Every text insertion goes to a worker thread (`text_worker`).
                graph.text_indexes.hand_over_after(0);
            }
            let mut journal = Journal::new();
            for (label, key) in [("A", "k"), ("A", "j"), ("B", "k")] {
                let index = Change::CreateIndex { label: label.into(), key: key.into() };
                graph.apply_logged(index, &mut journal).unwrap();
            }
            let text = Change::CreateTextIndex { label: "A".into(), key: "t".into() };
            graph.apply_logged(text, &mut journal).unwrap();
            let mut marks = vec![journal.len()];
            for step in &steps {
                match step {
                    Step::Mark => marks.push(journal.len()),
                    Step::RollBack => {
                        // The four index definitions stay.
                        let mark = marks.pop().unwrap_or(4).max(4).min(journal.len());
                        graph.roll_back_to(&mut journal, mark);
                    }
                    _ => {
                        if let Some(change) = change_of(step, graph.node_id_bound()) {
                            // A change the graph refuses leaves it as it was.
                            let _ = graph.apply_logged(change, &mut journal);
                        }
                    }
                }
                assert_indexes_match_a_scan(&graph);
            }
        }
    }
}
