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
    entries: foldhash::HashMap<Vec<u8>, RoaringBitmap>,
}

/// The key a value is indexed under, or `None` when it can equal nothing.
pub(crate) fn index_key(value: &PropValue) -> Option<Vec<u8>> {
    let normal = normalized(value)?;
    let mut out = Vec::new();
    put_value(&mut out, &normal);
    Some(out)
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
            self.entries.entry(key).or_default().insert(node);
        }
    }

    fn remove(&mut self, value: &PropValue, node: u32) {
        if let Some(key) = index_key(value)
            && let Some(nodes) = self.entries.get_mut(&key)
        {
            nodes.remove(node);
            if nodes.is_empty() {
                self.entries.remove(&key);
            }
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
        let index = &self.indexes[self.index_position(label, key)?];
        Some(
            index_key(value)
                .and_then(|k| index.entries.get(&k))
                .map(|nodes| nodes.iter().collect())
                .unwrap_or_default(),
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

    /// Takes node `id` out of every index (before a change to it).
    pub(crate) fn unindex_node(&mut self, id: u32) {
        self.reindex_node(id, false);
    }

    /// Puts node `id` back into every index that covers it (after a change to it).
    pub(crate) fn index_node(&mut self, id: u32) {
        self.reindex_node(id, true);
    }

    fn reindex_node(&mut self, id: u32, insert: bool) {
        if self.indexes.is_empty() {
            return;
        }
        let Some(node) = self.nodes.get(id as usize).and_then(Option::as_ref) else {
            return;
        };
        for index in &mut self.indexes {
            if node.labels.binary_search(&index.label).is_err() {
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
}
