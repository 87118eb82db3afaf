//! A writable graph in memory: nodes and relationships by id, adjacency lists both ways,
//! a bitmap per label and interned names. Every change goes through [`WritableGraph::apply`],
//! which checks it, applies it and returns what undoes it, so that replaying the log,
//! running a statement and rolling one back share one code path.

use roaring::RoaringBitmap;

use super::change::Change;
use super::index::PropertyIndex;
use super::prop::PropValue;
use super::text_worker::TextIndexes;

/// Interned names of one kind (labels, types or keys).
#[derive(Clone, Debug, Default)]
pub(crate) struct Names {
    names: Vec<String>,
    /// foldhash: names are looked up per property of every change, and SipHash's
    /// resistance to chosen keys buys nothing for an embedded graph's own names.
    ids: foldhash::HashMap<String, u32>,
}

impl Names {
    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }

    pub(crate) fn id(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    pub(crate) fn all(&self) -> &[String] {
        &self.names
    }
}

/// A live node.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct NodeRecord {
    /// Label ids, ascending.
    pub(crate) labels: Vec<u32>,
    /// Properties by key id, ascending.
    pub(crate) properties: Vec<(u32, PropValue)>,
    /// Outgoing relationship ids, ascending (ids grow, so creation order).
    pub(crate) outgoing: Vec<u32>,
    /// Incoming relationship ids, ascending.
    pub(crate) incoming: Vec<u32>,
}

/// A live relationship.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RelRecord {
    pub(crate) rel_type: u32,
    pub(crate) start: u32,
    pub(crate) end: u32,
    pub(crate) properties: Vec<(u32, PropValue)>,
}

/// What undoes one applied change.
#[derive(Clone, Debug)]
pub(crate) enum Undo {
    RemoveCreatedNode(u32),
    RemoveCreatedRelationship(u32),
    RestoreNodeProperty {
        id: u32,
        key: u32,
        previous: Option<PropValue>,
    },
    RestoreRelationshipProperty {
        id: u32,
        key: u32,
        previous: Option<PropValue>,
    },
    RemoveAddedLabel {
        id: u32,
        label: u32,
    },
    RestoreRemovedLabel {
        id: u32,
        label: u32,
    },
    RestoreRelationship {
        id: u32,
        record: RelRecord,
    },
    RestoreNode {
        id: u32,
        record: NodeRecord,
    },
    /// Drops an index the change created.
    DropCreatedIndex {
        label: u32,
        key: u32,
    },
    /// Rebuilds an index the change dropped.
    RestoreIndex {
        label: u32,
        key: u32,
    },
    /// Drops a text index the change created.
    DropCreatedTextIndex {
        label: u32,
        key: u32,
    },
    /// Rebuilds a text index the change dropped.
    RestoreTextIndex {
        label: u32,
        key: u32,
    },
    /// The change did nothing (a label already there, a property already absent).
    Nothing,
}

impl Undo {
    /// The node whose index entries (property and text) undoing this may move, and the
    /// one key it touches (`None`: any).
    fn index_touched(&self) -> Option<(u32, Option<u32>)> {
        match self {
            Undo::RestoreNodeProperty { id, key, .. } => Some((*id, Some(*key))),
            Undo::RemoveCreatedNode(id)
            | Undo::RemoveAddedLabel { id, .. }
            | Undo::RestoreRemovedLabel { id, .. }
            | Undo::RestoreNode { id, .. } => Some((*id, None)),
            _ => None,
        }
    }
}

/// The changes a transaction made so far, with what undoes them: committed as one log
/// record, or rolled back newest first.
#[derive(Debug, Default)]
pub struct Journal {
    /// The changes, encoded as a log record holds them: the values move into the graph,
    /// so nothing is kept twice.
    encoded: Vec<u8>,
    /// Where each change's encoding ends in `encoded`.
    ends: Vec<usize>,
    undos: Vec<Undo>,
}

impl Journal {
    /// An empty journal.
    pub fn new() -> Self {
        Journal::default()
    }

    /// The changes, in the order they applied: their count and their encodings.
    pub(crate) fn encoded(&self) -> (usize, &[u8]) {
        (self.ends.len(), &self.encoded)
    }

    /// How many changes it holds: a mark to roll back to.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether it holds no change.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The undos of the changes past the first `mark`, oldest first.
    pub(crate) fn undos_since(&self, mark: usize) -> &[Undo] {
        &self.undos[mark.min(self.undos.len())..]
    }

    /// Forgets every change (after they were committed).
    pub fn clear(&mut self) {
        self.encoded.clear();
        self.ends.clear();
        self.undos.clear();
    }
}

/// Why a change cannot apply. Statements check before they change, so in a running
/// statement these mean a bug or a damaged log.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeError {
    /// The node does not exist (never created or deleted).
    #[error("node {0} does not exist")]
    NoSuchNode(u32),
    /// The relationship does not exist.
    #[error("relationship {0} does not exist")]
    NoSuchRelationship(u32),
    /// A created entity's id is not the next one: ids are given in order, so a log that
    /// says otherwise is damaged.
    #[error("id {id} was created out of order (the next id is {next})")]
    IdOutOfOrder {
        /// The id in the change.
        id: u32,
        /// The id the graph gives next.
        next: u32,
    },
    /// A node still has relationships.
    #[error(
        "node {id} still has {relationships} relationship(s); delete them first (DETACH DELETE)"
    )]
    StillConnected {
        /// The node.
        id: u32,
        /// How many relationships it has.
        relationships: usize,
    },
}

/// The graph. Ids index `nodes` and `relationships`; a deleted entity leaves `None`.
#[derive(Clone, Debug, Default)]
pub struct WritableGraph {
    pub(crate) labels: Names,
    pub(crate) types: Names,
    pub(crate) keys: Names,
    pub(crate) nodes: Vec<Option<NodeRecord>>,
    pub(crate) relationships: Vec<Option<RelRecord>>,
    pub(crate) live_nodes: RoaringBitmap,
    pub(crate) live_relationships: RoaringBitmap,
    /// Per label id, the nodes carrying it.
    pub(crate) label_index: Vec<RoaringBitmap>,
    /// Property indexes.
    pub(crate) indexes: Vec<PropertyIndex>,
    /// Text indexes.
    pub(crate) text_indexes: TextIndexes,
}

fn property(properties: &[(u32, PropValue)], key: u32) -> Option<&PropValue> {
    properties
        .binary_search_by_key(&key, |(k, _)| *k)
        .ok()
        .map(|i| &properties[i].1)
}

/// Sets or removes `key`, keeping the list sorted; returns the previous value.
fn put_property(
    properties: &mut Vec<(u32, PropValue)>,
    key: u32,
    value: Option<PropValue>,
) -> Option<PropValue> {
    match (properties.binary_search_by_key(&key, |(k, _)| *k), value) {
        (Ok(i), Some(value)) => Some(std::mem::replace(&mut properties[i].1, value)),
        (Ok(i), None) => Some(properties.remove(i).1),
        (Err(i), Some(value)) => {
            properties.insert(i, (key, value));
            None
        }
        (Err(_), None) => None,
    }
}

fn insert_sorted(list: &mut Vec<u32>, id: u32) {
    if let Err(i) = list.binary_search(&id) {
        list.insert(i, id);
    }
}

fn remove_sorted(list: &mut Vec<u32>, id: u32) {
    if let Ok(i) = list.binary_search(&id) {
        list.remove(i);
    }
}

impl WritableGraph {
    /// An empty graph.
    pub fn new() -> Self {
        WritableGraph::default()
    }

    /// One past the highest node id ever used: the next id to give.
    pub fn node_id_bound(&self) -> u32 {
        self.nodes.len() as u32
    }

    /// One past the highest relationship id ever used.
    pub fn relationship_id_bound(&self) -> u32 {
        self.relationships.len() as u32
    }

    /// Live nodes.
    pub fn node_count(&self) -> u64 {
        self.live_nodes.len()
    }

    /// Live relationships.
    pub fn relationship_count(&self) -> u64 {
        self.live_relationships.len()
    }

    /// Every live node id.
    pub fn nodes(&self) -> &RoaringBitmap {
        &self.live_nodes
    }

    /// Every live relationship id.
    pub fn relationships(&self) -> &RoaringBitmap {
        &self.live_relationships
    }

    /// The nodes carrying `label` (`None` when no node ever had it).
    pub fn nodes_with_label(&self, label: &str) -> Option<&RoaringBitmap> {
        // A label named by an index alone has no bitmap yet.
        self.labels
            .id(label)
            .and_then(|id| self.label_index.get(id as usize))
    }

    /// Every label, relationship type and property key ever used.
    pub fn vocabulary(&self) -> (&[String], &[String], &[String]) {
        (self.labels.all(), self.types.all(), self.keys.all())
    }

    pub(crate) fn node(&self, id: u32) -> Option<&NodeRecord> {
        self.nodes.get(id as usize).and_then(Option::as_ref)
    }

    pub(crate) fn relationship(&self, id: u32) -> Option<&RelRecord> {
        self.relationships.get(id as usize).and_then(Option::as_ref)
    }

    /// Whether node `id` is live.
    pub fn has_node(&self, id: u32) -> bool {
        self.node(id).is_some()
    }

    /// Whether relationship `id` is live.
    pub fn has_relationship(&self, id: u32) -> bool {
        self.relationship(id).is_some()
    }

    /// The labels of a node, in the order they were first used in the graph.
    pub fn node_labels(&self, id: u32) -> impl Iterator<Item = &str> {
        self.node(id)
            .into_iter()
            .flat_map(|n| n.labels.iter().map(|&l| self.labels.name(l)))
    }

    /// Whether the node carries `label`.
    pub fn node_has_label(&self, id: u32, label: &str) -> bool {
        match (self.node(id), self.labels.id(label)) {
            (Some(node), Some(label)) => node.labels.binary_search(&label).is_ok(),
            _ => false,
        }
    }

    /// One node property.
    pub fn node_property(&self, id: u32, key: &str) -> Option<&PropValue> {
        let key = self.keys.id(key)?;
        property(&self.node(id)?.properties, key)
    }

    /// Every property of a node.
    pub fn node_properties(&self, id: u32) -> impl Iterator<Item = (&str, &PropValue)> {
        self.node(id)
            .into_iter()
            .flat_map(|n| n.properties.iter().map(|(k, v)| (self.keys.name(*k), v)))
    }

    /// `(type, start, end)` of a relationship.
    pub fn relationship_ends(&self, id: u32) -> Option<(&str, u32, u32)> {
        self.relationship(id)
            .map(|r| (self.types.name(r.rel_type), r.start, r.end))
    }

    /// The type id of a relationship type name, if any relationship ever had it.
    pub fn type_id(&self, rel_type: &str) -> Option<u32> {
        self.types.id(rel_type)
    }

    /// The type id of a live relationship.
    pub fn relationship_type_id(&self, id: u32) -> Option<u32> {
        self.relationship(id).map(|r| r.rel_type)
    }

    /// One relationship property.
    pub fn relationship_property(&self, id: u32, key: &str) -> Option<&PropValue> {
        let key = self.keys.id(key)?;
        property(&self.relationship(id)?.properties, key)
    }

    /// Every property of a relationship.
    pub fn relationship_properties(&self, id: u32) -> impl Iterator<Item = (&str, &PropValue)> {
        self.relationship(id)
            .into_iter()
            .flat_map(|r| r.properties.iter().map(|(k, v)| (self.keys.name(*k), v)))
    }

    /// Outgoing relationship ids of a node, ascending.
    pub fn outgoing(&self, id: u32) -> &[u32] {
        self.node(id).map_or(&[], |n| &n.outgoing)
    }

    /// Incoming relationship ids of a node, ascending.
    pub fn incoming(&self, id: u32) -> &[u32] {
        self.node(id).map_or(&[], |n| &n.incoming)
    }

    fn intern_properties(&mut self, properties: Vec<(String, PropValue)>) -> Vec<(u32, PropValue)> {
        let mut out: Vec<(u32, PropValue)> = Vec::with_capacity(properties.len());
        for (key, value) in properties {
            let key = self.keys.intern(&key);
            put_property(&mut out, key, Some(value));
        }
        out
    }

    fn label_bitmap(&mut self, label: u32) -> &mut RoaringBitmap {
        let index = label as usize;
        if self.label_index.len() <= index {
            self.label_index.resize_with(index + 1, RoaringBitmap::new);
        }
        &mut self.label_index[index]
    }

    fn node_mut(&mut self, id: u32) -> Result<&mut NodeRecord, ChangeError> {
        self.nodes
            .get_mut(id as usize)
            .and_then(Option::as_mut)
            .ok_or(ChangeError::NoSuchNode(id))
    }

    fn relationship_mut(&mut self, id: u32) -> Result<&mut RelRecord, ChangeError> {
        self.relationships
            .get_mut(id as usize)
            .and_then(Option::as_mut)
            .ok_or(ChangeError::NoSuchRelationship(id))
    }

    /// Leaves the ids below `nodes` and `relationships` unused (deleted before a
    /// checkpoint), so the next created entities get those ids.
    pub(crate) fn skip_ids(&mut self, nodes: u32, relationships: u32) {
        if self.nodes.len() < nodes as usize {
            self.nodes.resize(nodes as usize, None);
        }
        if self.relationships.len() < relationships as usize {
            self.relationships.resize(relationships as usize, None);
        }
    }

    /// Applies `change` and returns what undoes it. A failed change leaves the graph as it was.
    pub(crate) fn apply(&mut self, change: Change) -> Result<Undo, ChangeError> {
        let touched = self.index_touched(&change);
        if let Some((id, key)) = touched {
            self.unindex_node(id, key);
            self.retext_node(id, key, false);
        }
        let result = self.apply_unindexed(change);
        if let Some((id, key)) = touched {
            self.index_node(id, key);
            self.retext_node(id, key, true);
        }
        result
    }

    /// The node whose index entries (property and text) `change` may move, and the one
    /// key it touches (`None`: any); a property key no index can name yet touches none.
    /// Setting one property moves only the entries of indexes on that key: a file read
    /// sets ten properties on each of hundreds of chunks.
    fn index_touched(&self, change: &Change) -> Option<(u32, Option<u32>)> {
        // Many graphs have no index: skip the key look-up on every write.
        if self.indexes.is_empty() && self.text_indexes.is_empty() {
            return None;
        }
        match change {
            Change::SetNodeProperty { id, key, .. } => Some((*id, Some(self.keys.id(key)?))),
            other => other.node_touched().map(|id| (id, None)),
        }
    }

    fn apply_unindexed(&mut self, change: Change) -> Result<Undo, ChangeError> {
        match change {
            Change::CreateNode {
                id,
                labels,
                properties,
            } => self.create_node(id, &labels, properties),
            Change::CreateRelationship {
                id,
                rel_type,
                start,
                end,
                properties,
            } => self.create_relationship(id, &rel_type, (start, end), properties),
            Change::SetNodeProperty { id, key, value } => {
                self.node_mut(id)?;
                let key = self.keys.intern(&key);
                let previous = put_property(&mut self.node_mut(id)?.properties, key, value);
                Ok(Undo::RestoreNodeProperty { id, key, previous })
            }
            Change::SetRelationshipProperty { id, key, value } => {
                self.relationship_mut(id)?;
                let key = self.keys.intern(&key);
                let record = self.relationship_mut(id)?;
                let previous = put_property(&mut record.properties, key, value);
                Ok(Undo::RestoreRelationshipProperty { id, key, previous })
            }
            Change::AddLabel { id, label } => self.add_label(id, &label),
            Change::RemoveLabel { id, label } => self.remove_label(id, &label),
            Change::DeleteRelationship { id } => self.delete_relationship(id),
            Change::DeleteNode { id } => self.delete_node(id),
            Change::CreateIndex { label, key } => {
                if self.has_index(&label, &key) {
                    return Ok(Undo::Nothing);
                }
                let (label, key) = (self.labels.intern(&label), self.keys.intern(&key));
                self.add_index(label, key);
                Ok(Undo::DropCreatedIndex { label, key })
            }
            Change::CreateTextIndex { label, key } => {
                if self.has_text_index(&label, &key) {
                    return Ok(Undo::Nothing);
                }
                let (label, key) = (self.labels.intern(&label), self.keys.intern(&key));
                self.add_text_index(label, key);
                Ok(Undo::DropCreatedTextIndex { label, key })
            }
            Change::DropTextIndex { label, key } => {
                let (Some(label), Some(key)) = (self.labels.id(&label), self.keys.id(&key)) else {
                    return Ok(Undo::Nothing);
                };
                Ok(if self.drop_text_index(label, key) {
                    Undo::RestoreTextIndex { label, key }
                } else {
                    Undo::Nothing
                })
            }
            Change::DropIndex { label, key } => {
                let (Some(label), Some(key)) = (self.labels.id(&label), self.keys.id(&key)) else {
                    return Ok(Undo::Nothing);
                };
                let before = self.indexes.len();
                self.indexes.retain(|i| !(i.label == label && i.key == key));
                Ok(if self.indexes.len() < before {
                    Undo::RestoreIndex { label, key }
                } else {
                    Undo::Nothing
                })
            }
        }
    }

    fn create_node(
        &mut self,
        id: u32,
        labels: &[String],
        properties: Vec<(String, PropValue)>,
    ) -> Result<Undo, ChangeError> {
        if id != self.node_id_bound() {
            return Err(ChangeError::IdOutOfOrder {
                id,
                next: self.node_id_bound(),
            });
        }
        let mut label_ids: Vec<u32> = labels.iter().map(|l| self.labels.intern(l)).collect();
        label_ids.sort_unstable();
        label_ids.dedup();
        for &label in &label_ids {
            self.label_bitmap(label).insert(id);
        }
        let properties = self.intern_properties(properties);
        self.nodes.push(Some(NodeRecord {
            labels: label_ids,
            properties,
            outgoing: Vec::new(),
            incoming: Vec::new(),
        }));
        self.live_nodes.insert(id);
        Ok(Undo::RemoveCreatedNode(id))
    }

    fn create_relationship(
        &mut self,
        id: u32,
        rel_type: &str,
        (start, end): (u32, u32),
        properties: Vec<(String, PropValue)>,
    ) -> Result<Undo, ChangeError> {
        if id != self.relationship_id_bound() {
            return Err(ChangeError::IdOutOfOrder {
                id,
                next: self.relationship_id_bound(),
            });
        }
        self.node_mut(start)?;
        self.node_mut(end)?;
        let rel_type = self.types.intern(rel_type);
        let properties = self.intern_properties(properties);
        insert_sorted(&mut self.node_mut(start)?.outgoing, id);
        insert_sorted(&mut self.node_mut(end)?.incoming, id);
        self.relationships.push(Some(RelRecord {
            rel_type,
            start,
            end,
            properties,
        }));
        self.live_relationships.insert(id);
        Ok(Undo::RemoveCreatedRelationship(id))
    }

    fn add_label(&mut self, id: u32, label: &str) -> Result<Undo, ChangeError> {
        self.node_mut(id)?;
        let label = self.labels.intern(label);
        let node = self.node_mut(id)?;
        if node.labels.binary_search(&label).is_ok() {
            return Ok(Undo::Nothing);
        }
        insert_sorted(&mut node.labels, label);
        self.label_bitmap(label).insert(id);
        Ok(Undo::RemoveAddedLabel { id, label })
    }

    fn remove_label(&mut self, id: u32, label: &str) -> Result<Undo, ChangeError> {
        self.node_mut(id)?;
        let Some(label) = self.labels.id(label) else {
            return Ok(Undo::Nothing);
        };
        let node = self.node_mut(id)?;
        if node.labels.binary_search(&label).is_err() {
            return Ok(Undo::Nothing);
        }
        remove_sorted(&mut node.labels, label);
        self.label_bitmap(label).remove(id);
        Ok(Undo::RestoreRemovedLabel { id, label })
    }

    fn delete_relationship(&mut self, id: u32) -> Result<Undo, ChangeError> {
        let record = self.relationship_mut(id)?.clone();
        remove_sorted(&mut self.node_mut(record.start)?.outgoing, id);
        remove_sorted(&mut self.node_mut(record.end)?.incoming, id);
        self.relationships[id as usize] = None;
        self.live_relationships.remove(id);
        Ok(Undo::RestoreRelationship { id, record })
    }

    fn delete_node(&mut self, id: u32) -> Result<Undo, ChangeError> {
        let node = self.node_mut(id)?;
        let relationships = node.outgoing.len() + node.incoming.len();
        if relationships > 0 {
            return Err(ChangeError::StillConnected { id, relationships });
        }
        let record = self.nodes[id as usize].take().expect("checked above");
        for &label in &record.labels {
            self.label_bitmap(label).remove(id);
        }
        self.live_nodes.remove(id);
        Ok(Undo::RestoreNode { id, record })
    }

    /// Applies `change` and records it, with its undo, in `journal`.
    pub fn apply_logged(
        &mut self,
        change: Change,
        journal: &mut Journal,
    ) -> Result<(), ChangeError> {
        let start = journal.encoded.len();
        change.encode(&mut journal.encoded);
        match self.apply(change) {
            Ok(undo) => {
                journal.ends.push(journal.encoded.len());
                journal.undos.push(undo);
                Ok(())
            }
            Err(error) => {
                journal.encoded.truncate(start);
                Err(error)
            }
        }
    }

    /// Undoes the changes of `journal` past its first `mark`, newest first, and drops them.
    pub fn roll_back_to(&mut self, journal: &mut Journal, mark: usize) {
        while journal.undos.len() > mark {
            let undo = journal.undos.pop().expect("longer than mark");
            self.undo(undo);
        }
        journal.ends.truncate(mark);
        journal
            .encoded
            .truncate(journal.ends.last().copied().unwrap_or(0));
    }

    /// Reverts one applied change (undos are applied newest first).
    pub(crate) fn undo(&mut self, undo: Undo) {
        let touched = undo.index_touched();
        if let Some((id, key)) = touched {
            self.unindex_node(id, key);
            self.retext_node(id, key, false);
        }
        self.undo_unindexed(undo);
        if let Some((id, key)) = touched {
            self.index_node(id, key);
            self.retext_node(id, key, true);
        }
    }

    fn undo_unindexed(&mut self, undo: Undo) {
        match undo {
            Undo::RemoveCreatedNode(id) => {
                if let Some(record) = self.nodes.get_mut(id as usize).and_then(Option::take) {
                    for label in record.labels {
                        self.label_bitmap(label).remove(id);
                    }
                }
                self.live_nodes.remove(id);
                // Give the id back when it was the last one, as replay never sees it.
                while self.nodes.last().is_some_and(Option::is_none)
                    && self.nodes.len() > id as usize
                {
                    self.nodes.pop();
                }
            }
            Undo::RemoveCreatedRelationship(id) => {
                let _ = self.delete_relationship(id);
                while self.relationships.last().is_some_and(Option::is_none)
                    && self.relationships.len() > id as usize
                {
                    self.relationships.pop();
                }
            }
            Undo::RestoreNodeProperty { id, key, previous } => {
                if let Ok(node) = self.node_mut(id) {
                    put_property(&mut node.properties, key, previous);
                }
            }
            Undo::RestoreRelationshipProperty { id, key, previous } => {
                if let Ok(record) = self.relationship_mut(id) {
                    put_property(&mut record.properties, key, previous);
                }
            }
            Undo::RemoveAddedLabel { id, label } => {
                if let Ok(node) = self.node_mut(id) {
                    remove_sorted(&mut node.labels, label);
                }
                self.label_bitmap(label).remove(id);
            }
            Undo::RestoreRemovedLabel { id, label } => {
                if let Ok(node) = self.node_mut(id) {
                    insert_sorted(&mut node.labels, label);
                }
                self.label_bitmap(label).insert(id);
            }
            Undo::RestoreRelationship { id, record } => {
                if let Ok(node) = self.node_mut(record.start) {
                    insert_sorted(&mut node.outgoing, id);
                }
                if let Ok(node) = self.node_mut(record.end) {
                    insert_sorted(&mut node.incoming, id);
                }
                self.relationships[id as usize] = Some(record);
                self.live_relationships.insert(id);
            }
            Undo::RestoreNode { id, record } => {
                for &label in &record.labels {
                    self.label_bitmap(label).insert(id);
                }
                self.nodes[id as usize] = Some(record);
                self.live_nodes.insert(id);
            }
            Undo::DropCreatedIndex { label, key } => {
                self.indexes.retain(|i| !(i.label == label && i.key == key));
            }
            Undo::RestoreIndex { label, key } => self.add_index(label, key),
            Undo::DropCreatedTextIndex { label, key } => {
                self.drop_text_index(label, key);
            }
            Undo::RestoreTextIndex { label, key } => self.add_text_index(label, key),
            Undo::Nothing => {}
        }
    }

    /// A node property by key id.
    pub(crate) fn node_property_by_id(&self, id: u32, key: u32) -> Option<&PropValue> {
        property(&self.node(id)?.properties, key)
    }
}
