//! The changes a writable graph is made of: what a statement does, what the write-ahead
//! log records and what replay applies. Names (labels, types, keys) are written out in
//! each change, so a log record means the same thing whatever dictionary ids a process
//! assigned.

use super::prop::{DecodeError, Decoded, PropValue, Reader, put_string, put_value, put_varint};

/// One elementary change. Node and relationship ids are chosen by the writer and never
/// reused, so replaying the same changes gives the same ids.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// A new node.
    CreateNode {
        /// Its id.
        id: u32,
        /// Its labels, without duplicates.
        labels: Vec<String>,
        /// Its properties, without nulls or duplicate keys.
        properties: Vec<(String, PropValue)>,
    },
    /// A new relationship between two existing nodes.
    CreateRelationship {
        /// Its id.
        id: u32,
        /// Its type.
        rel_type: String,
        /// Start node.
        start: u32,
        /// End node.
        end: u32,
        /// Its properties, without nulls or duplicate keys.
        properties: Vec<(String, PropValue)>,
    },
    /// Sets (`Some`) or removes (`None`) a node property.
    SetNodeProperty {
        /// The node.
        id: u32,
        /// The key.
        key: String,
        /// The new value.
        value: Option<PropValue>,
    },
    /// Sets (`Some`) or removes (`None`) a relationship property.
    SetRelationshipProperty {
        /// The relationship.
        id: u32,
        /// The key.
        key: String,
        /// The new value.
        value: Option<PropValue>,
    },
    /// Adds a label to a node.
    AddLabel {
        /// The node.
        id: u32,
        /// The label.
        label: String,
    },
    /// Removes a label from a node.
    RemoveLabel {
        /// The node.
        id: u32,
        /// The label.
        label: String,
    },
    /// Deletes a relationship.
    DeleteRelationship {
        /// The relationship.
        id: u32,
    },
    /// Deletes a node that has no relationships left.
    DeleteNode {
        /// The node.
        id: u32,
    },
    /// Creates a property index on the nodes of `label` by `key`.
    CreateIndex {
        /// The label.
        label: String,
        /// The property key.
        key: String,
    },
    /// Drops a property index.
    DropIndex {
        /// The label.
        label: String,
        /// The property key.
        key: String,
    },
    /// Creates a text index on the words of `key` of the nodes of `label`.
    CreateTextIndex {
        /// The label.
        label: String,
        /// The property key.
        key: String,
    },
    /// Drops a text index.
    DropTextIndex {
        /// The label.
        label: String,
        /// The property key.
        key: String,
    },
}

impl Change {
    /// The node whose index entries this change may move.
    pub(crate) fn node_touched(&self) -> Option<u32> {
        match self {
            Change::CreateNode { id, .. }
            | Change::SetNodeProperty { id, .. }
            | Change::AddLabel { id, .. }
            | Change::RemoveLabel { id, .. }
            | Change::DeleteNode { id } => Some(*id),
            _ => None,
        }
    }
}

const CREATE_NODE: u8 = 1;
const CREATE_RELATIONSHIP: u8 = 2;
const SET_NODE_PROPERTY: u8 = 3;
const SET_RELATIONSHIP_PROPERTY: u8 = 4;
const ADD_LABEL: u8 = 5;
const REMOVE_LABEL: u8 = 6;
const DELETE_RELATIONSHIP: u8 = 7;
const DELETE_NODE: u8 = 8;
const CREATE_INDEX: u8 = 9;
const DROP_INDEX: u8 = 10;
const CREATE_TEXT_INDEX: u8 = 11;
const DROP_TEXT_INDEX: u8 = 12;

fn put_properties(out: &mut Vec<u8>, properties: &[(String, PropValue)]) {
    put_varint(out, properties.len() as u64);
    for (key, value) in properties {
        put_string(out, key);
        put_value(out, value);
    }
}

fn put_optional(out: &mut Vec<u8>, value: &Option<PropValue>) {
    match value {
        None => out.push(0),
        Some(value) => {
            out.push(1);
            put_value(out, value);
        }
    }
}

impl Change {
    /// Appends the encoding of this change.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Change::CreateNode {
                id,
                labels,
                properties,
            } => {
                out.push(CREATE_NODE);
                put_varint(out, u64::from(*id));
                put_varint(out, labels.len() as u64);
                for label in labels {
                    put_string(out, label);
                }
                put_properties(out, properties);
            }
            Change::CreateRelationship {
                id,
                rel_type,
                start,
                end,
                properties,
            } => {
                out.push(CREATE_RELATIONSHIP);
                put_varint(out, u64::from(*id));
                put_string(out, rel_type);
                put_varint(out, u64::from(*start));
                put_varint(out, u64::from(*end));
                put_properties(out, properties);
            }
            Change::SetNodeProperty { id, key, value } => {
                out.push(SET_NODE_PROPERTY);
                put_varint(out, u64::from(*id));
                put_string(out, key);
                put_optional(out, value);
            }
            Change::SetRelationshipProperty { id, key, value } => {
                out.push(SET_RELATIONSHIP_PROPERTY);
                put_varint(out, u64::from(*id));
                put_string(out, key);
                put_optional(out, value);
            }
            Change::AddLabel { id, label } | Change::RemoveLabel { id, label } => {
                let tag = if matches!(self, Change::AddLabel { .. }) {
                    ADD_LABEL
                } else {
                    REMOVE_LABEL
                };
                out.push(tag);
                put_varint(out, u64::from(*id));
                put_string(out, label);
            }
            Change::DeleteRelationship { id } => {
                out.push(DELETE_RELATIONSHIP);
                put_varint(out, u64::from(*id));
            }
            Change::DeleteNode { id } => {
                out.push(DELETE_NODE);
                put_varint(out, u64::from(*id));
            }
            Change::CreateIndex { label, key }
            | Change::DropIndex { label, key }
            | Change::CreateTextIndex { label, key }
            | Change::DropTextIndex { label, key } => {
                out.push(match self {
                    Change::CreateIndex { .. } => CREATE_INDEX,
                    Change::DropIndex { .. } => DROP_INDEX,
                    Change::CreateTextIndex { .. } => CREATE_TEXT_INDEX,
                    _ => DROP_TEXT_INDEX,
                });
                put_string(out, label);
                put_string(out, key);
            }
        }
    }

    /// Reads one change.
    pub(crate) fn decode(reader: &mut Reader<'_>) -> Decoded<Change> {
        Ok(match reader.byte()? {
            CREATE_NODE => {
                let id = reader.u32_varint()?;
                let count = reader.count()?;
                let labels = (0..count)
                    .map(|_| reader.string())
                    .collect::<Decoded<_>>()?;
                let properties = read_properties(reader)?;
                Change::CreateNode {
                    id,
                    labels,
                    properties,
                }
            }
            CREATE_RELATIONSHIP => Change::CreateRelationship {
                id: reader.u32_varint()?,
                rel_type: reader.string()?,
                start: reader.u32_varint()?,
                end: reader.u32_varint()?,
                properties: read_properties(reader)?,
            },
            SET_NODE_PROPERTY => Change::SetNodeProperty {
                id: reader.u32_varint()?,
                key: reader.string()?,
                value: read_optional(reader)?,
            },
            SET_RELATIONSHIP_PROPERTY => Change::SetRelationshipProperty {
                id: reader.u32_varint()?,
                key: reader.string()?,
                value: read_optional(reader)?,
            },
            ADD_LABEL => Change::AddLabel {
                id: reader.u32_varint()?,
                label: reader.string()?,
            },
            REMOVE_LABEL => Change::RemoveLabel {
                id: reader.u32_varint()?,
                label: reader.string()?,
            },
            DELETE_RELATIONSHIP => Change::DeleteRelationship {
                id: reader.u32_varint()?,
            },
            CREATE_INDEX => Change::CreateIndex {
                label: reader.string()?,
                key: reader.string()?,
            },
            DROP_INDEX => Change::DropIndex {
                label: reader.string()?,
                key: reader.string()?,
            },
            CREATE_TEXT_INDEX => Change::CreateTextIndex {
                label: reader.string()?,
                key: reader.string()?,
            },
            DROP_TEXT_INDEX => Change::DropTextIndex {
                label: reader.string()?,
                key: reader.string()?,
            },
            DELETE_NODE => Change::DeleteNode {
                id: reader.u32_varint()?,
            },
            tag => return Err(DecodeError(format!("unknown change tag {tag}"))),
        })
    }
}

fn read_properties(reader: &mut Reader<'_>) -> Decoded<Vec<(String, PropValue)>> {
    let count = reader.count()?;
    let mut properties = Vec::with_capacity(count);
    for _ in 0..count {
        let key = reader.string()?;
        properties.push((key, reader.value()?));
    }
    Ok(properties)
}

fn read_optional(reader: &mut Reader<'_>) -> Decoded<Option<PropValue>> {
    match reader.byte()? {
        0 => Ok(None),
        1 => Ok(Some(reader.value()?)),
        flag => Err(DecodeError(format!("bad optional flag {flag}"))),
    }
}

/// Encodes a batch of changes (the tests' way to make one; writers encode as they go).
#[cfg(test)]
pub(crate) fn encode_batch(changes: &[Change]) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, changes.len() as u64);
    for change in changes {
        change.encode(&mut out);
    }
    out
}

/// Decodes a batch, a count and that many changes (a log record's payload, a checkpoint's
/// body); trailing bytes are an error.
pub(crate) fn decode_batch(bytes: &[u8]) -> Decoded<Vec<Change>> {
    let mut reader = Reader::new(bytes);
    let count = reader.count()?;
    let mut changes = Vec::with_capacity(count);
    for _ in 0..count {
        changes.push(Change::decode(&mut reader)?);
    }
    if !reader.is_empty() {
        return Err(DecodeError("bytes after the last change".into()));
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_change_kind_round_trips() {
        let changes = vec![
            Change::CreateNode {
                id: 7,
                labels: vec!["File".into(), "Read".into()],
                properties: vec![("path".into(), PropValue::String("a.c".into()))],
            },
            Change::CreateRelationship {
                id: 3,
                rel_type: "READ".into(),
                start: 7,
                end: 8,
                properties: vec![("at".into(), PropValue::Int(-5))],
            },
            Change::SetNodeProperty {
                id: 7,
                key: "k".into(),
                value: Some(PropValue::Float(1.5)),
            },
            Change::SetNodeProperty {
                id: 7,
                key: "k".into(),
                value: None,
            },
            Change::SetRelationshipProperty {
                id: 3,
                key: "w".into(),
                value: Some(PropValue::Bool(true)),
            },
            Change::AddLabel {
                id: 7,
                label: "Seen".into(),
            },
            Change::RemoveLabel {
                id: 7,
                label: "Seen".into(),
            },
            Change::DeleteRelationship { id: 3 },
            Change::DeleteNode { id: 7 },
            Change::CreateIndex {
                label: "File".into(),
                key: "path".into(),
            },
            Change::DropIndex {
                label: "File".into(),
                key: "path".into(),
            },
            Change::CreateTextIndex {
                label: "Note".into(),
                key: "text".into(),
            },
            Change::DropTextIndex {
                label: "Note".into(),
                key: "text".into(),
            },
        ];
        let bytes = encode_batch(&changes);
        assert_eq!(decode_batch(&bytes).unwrap(), changes);
        for cut in 0..bytes.len() {
            assert!(
                decode_batch(&bytes[..cut]).is_err(),
                "a batch cut at {cut} must not decode"
            );
        }
    }
}
