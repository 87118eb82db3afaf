//! What a run of changes did in the end, as openCypher counts side effects: the
//! difference between the graph before and after, not the number of operations. A node
//! created and deleted in one statement counts for nothing; a property created then
//! changed counts once; a property overwritten counts one removed and one set.

use std::collections::HashMap;

use super::graph::{Journal, Undo, WritableGraph};
use super::prop::PropValue;

/// Net differences between two states of a graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetChanges {
    /// Nodes that exist now and did not.
    pub nodes_created: u64,
    /// Nodes that existed and do not.
    pub nodes_deleted: u64,
    /// Relationships that exist now and did not.
    pub relationships_created: u64,
    /// Relationships that existed and do not.
    pub relationships_deleted: u64,
    /// (entity, key, value) triples that exist now and did not.
    pub properties_set: u64,
    /// (entity, key, value) triples that existed and do not.
    pub properties_removed: u64,
}

/// What an entity was before the changes, as far as they touched it.
#[derive(Default)]
struct Before {
    existed: bool,
    /// Every property, when known whole (the entity was created or deleted).
    whole: Option<Vec<(u32, PropValue)>>,
    /// The first previous value of each key changed while it lived.
    keys: HashMap<u32, Option<PropValue>>,
}

impl Before {
    fn created() -> Before {
        Before {
            existed: false,
            whole: Some(Vec::new()),
            keys: HashMap::new(),
        }
    }

    /// The entity was deleted, with `properties` at that moment.
    fn deleted(&mut self, properties: &[(u32, PropValue)]) {
        if self.whole.is_some() {
            return;
        }
        let mut whole = properties.to_vec();
        for (key, previous) in &self.keys {
            whole.retain(|(k, _)| k != key);
            if let Some(value) = previous {
                whole.push((*key, value.clone()));
            }
        }
        self.whole = Some(whole);
    }

    fn property_changed(&mut self, key: u32, previous: &Option<PropValue>) {
        if self.whole.is_none() {
            self.keys.entry(key).or_insert_with(|| previous.clone());
        }
    }

    /// Properties added and removed between this and `now` (`None`: gone now).
    fn property_difference(&self, now: Option<&[(u32, PropValue)]>) -> (u64, u64) {
        let now = now.unwrap_or(&[]);
        let before: Vec<(u32, Option<&PropValue>)> = match &self.whole {
            Some(whole) => whole.iter().map(|(k, v)| (*k, Some(v))).collect(),
            None => self.keys.iter().map(|(k, v)| (*k, v.as_ref())).collect(),
        };
        let now_value = |key: u32| now.iter().find(|(k, _)| *k == key).map(|(_, v)| v);
        let mut set = 0;
        let mut removed = 0;
        for (key, old) in &before {
            let new = now_value(*key);
            if old.is_some() && old.map(encoded) != new.map(encoded) {
                removed += 1;
            }
            if new.is_some() && old.map(encoded) != new.map(encoded) {
                set += 1;
            }
        }
        if self.whole.is_some() {
            // Keys that exist now and were not there at all.
            set += now
                .iter()
                .filter(|(k, _)| !before.iter().any(|(b, _)| b == k))
                .count() as u64;
        }
        (set, removed)
    }
}

/// Compared by encoding: a NaN property is then equal to itself.
fn encoded(value: &PropValue) -> Vec<u8> {
    let mut out = Vec::new();
    super::prop::put_value(&mut out, value);
    out
}

impl WritableGraph {
    /// The net effect of the changes `journal` holds past its first `mark`.
    pub fn net_changes_since(&self, journal: &Journal, mark: usize) -> NetChanges {
        match self.creations_only_since(journal, mark) {
            Some(net) => net,
            None => self.net_changes_by_entity(journal, mark),
        }
    }

    /// [`Self::net_changes_since`] for any run of changes: each touched entity's state
    /// before, compared with its state now.
    fn net_changes_by_entity(&self, journal: &Journal, mark: usize) -> NetChanges {
        let mut nodes: HashMap<u32, Before> = HashMap::new();
        let mut relationships: HashMap<u32, Before> = HashMap::new();
        for undo in journal.undos_since(mark) {
            match undo {
                Undo::RemoveCreatedNode(id) => {
                    nodes.entry(*id).or_insert_with(Before::created);
                }
                Undo::RemoveCreatedRelationship(id) => {
                    relationships.entry(*id).or_insert_with(Before::created);
                }
                Undo::RestoreNode { id, record } => nodes
                    .entry(*id)
                    .or_insert_with(existing)
                    .deleted(&record.properties),
                Undo::RestoreRelationship { id, record } => relationships
                    .entry(*id)
                    .or_insert_with(existing)
                    .deleted(&record.properties),
                Undo::RestoreNodeProperty { id, key, previous } => nodes
                    .entry(*id)
                    .or_insert_with(existing)
                    .property_changed(*key, previous),
                Undo::RestoreRelationshipProperty { id, key, previous } => relationships
                    .entry(*id)
                    .or_insert_with(existing)
                    .property_changed(*key, previous),
                _ => debug_assert!(counts_nothing(undo)),
            }
        }
        let mut net = NetChanges::default();
        for (id, before) in &nodes {
            let now = self.node(*id).map(|n| n.properties.as_slice());
            count_entity(&mut net, before, now, EntityKind::Node);
        }
        for (id, before) in &relationships {
            let now = self.relationship(*id).map(|r| r.properties.as_slice());
            count_entity(&mut net, before, now, EntityKind::Relationship);
        }
        net
    }
}

impl WritableGraph {
    /// The net effect when every change past `mark` created an entity or touched only
    /// labels and indexes (a `CREATE`-only statement, the usual bulk load): each created
    /// entity counts once with all of its properties now, since nothing changed or
    /// deleted it. `None` for any other run of changes. Without it, a batch of 10,000
    /// created nodes filled a hash map of their states just to count them: 6 % of a bulk
    /// load's instructions.
    fn creations_only_since(&self, journal: &Journal, mark: usize) -> Option<NetChanges> {
        let mut net = NetChanges::default();
        for undo in journal.undos_since(mark) {
            match undo {
                Undo::RemoveCreatedNode(id) => {
                    net.nodes_created += 1;
                    net.properties_set += self.node(*id)?.properties.len() as u64;
                }
                Undo::RemoveCreatedRelationship(id) => {
                    net.relationships_created += 1;
                    net.properties_set += self.relationship(*id)?.properties.len() as u64;
                }
                undo if counts_nothing(undo) => {}
                _ => return None,
            }
        }
        Some(net)
    }
}

/// Whether an undo is of a change no entity or property count sees (labels are counted
/// apart, by name). Every variant is named, so a new one must be placed here.
fn counts_nothing(undo: &Undo) -> bool {
    match undo {
        Undo::RemoveAddedLabel { .. }
        | Undo::RestoreRemovedLabel { .. }
        | Undo::DropCreatedTextIndex { .. }
        | Undo::RestoreTextIndex { .. }
        | Undo::DropCreatedIndex { .. }
        | Undo::RestoreIndex { .. }
        | Undo::Nothing => true,
        Undo::RemoveCreatedNode(_)
        | Undo::RemoveCreatedRelationship(_)
        | Undo::RestoreNode { .. }
        | Undo::RestoreRelationship { .. }
        | Undo::RestoreNodeProperty { .. }
        | Undo::RestoreRelationshipProperty { .. } => false,
    }
}

fn existing() -> Before {
    Before {
        existed: true,
        ..Before::default()
    }
}

enum EntityKind {
    Node,
    Relationship,
}

fn count_entity(
    net: &mut NetChanges,
    before: &Before,
    now: Option<&[(u32, PropValue)]>,
    kind: EntityKind,
) {
    let (created, deleted) = match kind {
        EntityKind::Node => (&mut net.nodes_created, &mut net.nodes_deleted),
        EntityKind::Relationship => (
            &mut net.relationships_created,
            &mut net.relationships_deleted,
        ),
    };
    match (before.existed, now.is_some()) {
        (false, true) => *created += 1,
        (true, false) => *deleted += 1,
        _ => {}
    }
    let (set, removed) = before.property_difference(now);
    net.properties_set += set;
    net.properties_removed += removed;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Change;

    fn run(graph: &mut WritableGraph, changes: Vec<Change>) -> NetChanges {
        let mut journal = Journal::new();
        for change in changes {
            graph.apply_logged(change, &mut journal).unwrap();
        }
        graph.net_changes_since(&journal, 0)
    }

    fn set(id: u32, key: &str, value: Option<i64>) -> Change {
        Change::SetNodeProperty {
            id,
            key: key.into(),
            value: value.map(PropValue::Int),
        }
    }

    #[test]
    fn a_run_of_creations_counts_as_the_general_comparison_does() {
        let mut graph = WritableGraph::new();
        let mut journal = Journal::new();
        let changes = vec![
            Change::CreateNode {
                id: 0,
                labels: vec!["A".into()],
                properties: vec![
                    ("a".into(), PropValue::Int(1)),
                    ("b".into(), PropValue::Bool(true)),
                ],
            },
            Change::CreateNode {
                id: 1,
                labels: vec![],
                properties: vec![],
            },
            Change::CreateRelationship {
                id: 0,
                rel_type: "R".into(),
                start: 0,
                end: 1,
                properties: vec![("w".into(), PropValue::Float(f64::NAN))],
            },
            Change::AddLabel {
                id: 1,
                label: "B".into(),
            },
        ];
        for change in changes {
            graph.apply_logged(change, &mut journal).unwrap();
        }
        let fast = graph.creations_only_since(&journal, 0);
        let general = graph.net_changes_by_entity(&journal, 0);
        assert_eq!(fast, Some(general));
        assert_eq!(
            (
                general.nodes_created,
                general.relationships_created,
                general.properties_set
            ),
            (2, 1, 3)
        );
        // A property changed after its node was created takes the general path.
        graph
            .apply_logged(set(1, "c", Some(1)), &mut journal)
            .unwrap();
        assert_eq!(graph.creations_only_since(&journal, 0), None);
        assert_eq!(graph.net_changes_since(&journal, 0).properties_set, 4);
    }

    #[test]
    fn net_changes_count_the_difference_not_the_operations() {
        let mut graph = WritableGraph::new();
        let node = |id| Change::CreateNode {
            id,
            labels: vec![],
            properties: vec![("a".into(), PropValue::Int(1))],
        };
        // Created, then changed: one property set.
        let net = run(&mut graph, vec![node(0), set(0, "a", Some(2))]);
        assert_eq!(
            (
                net.nodes_created,
                net.properties_set,
                net.properties_removed
            ),
            (1, 1, 0)
        );
        // Overwritten: one removed, one set; set to the same value: nothing.
        let net = run(
            &mut graph,
            vec![
                set(0, "a", Some(3)),
                set(0, "b", Some(1)),
                set(0, "b", None),
            ],
        );
        assert_eq!((net.properties_set, net.properties_removed), (1, 1));
        let net = run(&mut graph, vec![set(0, "a", Some(5)), set(0, "a", Some(3))]);
        assert_eq!(net, NetChanges::default());
        // Created and deleted in one go: nothing.
        let net = run(&mut graph, vec![node(1), Change::DeleteNode { id: 1 }]);
        assert_eq!(net, NetChanges::default());
        // Changed then deleted: the property as it was before counts as removed.
        let net = run(
            &mut graph,
            vec![set(0, "a", Some(9)), Change::DeleteNode { id: 0 }],
        );
        assert_eq!(
            (
                net.nodes_deleted,
                net.properties_set,
                net.properties_removed
            ),
            (1, 0, 1)
        );
    }
}
