//! A writable graph as BQL sees it: the state a statement changes (graph and journal), its [`PropertyAccess`], and the conversions between BQL values and stored
//! property values.

use std::cell::RefCell;
use std::collections::BTreeMap;

use batho_lang::{PropertyAccess, Temporal, Value};
use batho_storage::session::{Journal, MAX_NESTING, PropValue, WritableGraph};

/// What a statement changed, as openCypher's side effects count them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateCounts {
    /// Nodes created.
    pub nodes_created: u64,
    /// Nodes deleted.
    pub nodes_deleted: u64,
    /// Relationships created.
    pub relationships_created: u64,
    /// Relationships deleted.
    pub relationships_deleted: u64,
    /// Labels added to nodes.
    pub labels_added: u64,
    /// Labels removed from nodes.
    pub labels_removed: u64,
    /// Properties set (created or changed).
    pub properties_set: u64,
    /// Properties removed.
    pub properties_removed: u64,
}

impl UpdateCounts {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        *self == UpdateCounts::default()
    }
}

impl std::fmt::Display for UpdateCounts {
    /// `2 nodes created, 1 label added`, or `no changes`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = [
            (self.nodes_created, "node", "created"),
            (self.nodes_deleted, "node", "deleted"),
            (self.relationships_created, "relationship", "created"),
            (self.relationships_deleted, "relationship", "deleted"),
            (self.labels_added, "label", "added"),
            (self.labels_removed, "label", "removed"),
            (self.properties_set, "property", "set"),
            (self.properties_removed, "property", "removed"),
        ]
        .into_iter()
        .filter(|(count, _, _)| *count > 0)
        .map(|(count, noun, verb)| {
            let noun = match (count, noun) {
                (1, _) => noun.to_string(),
                (_, "property") => "properties".to_string(),
                _ => format!("{noun}s"),
            };
            format!("{count} {noun} {verb}")
        })
        .collect();
        if parts.is_empty() {
            f.write_str("no changes")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

/// A writable graph with the changes of the running transaction.
#[derive(Debug, Default)]
pub(crate) struct WritableState {
    pub(crate) graph: WritableGraph,
    pub(crate) journal: Journal,
}

/// [`PropertyAccess`] over a writable graph being changed.
#[derive(Clone, Copy)]
pub(crate) struct WritableAccess<'a>(pub(crate) &'a RefCell<WritableState>);

/// A stored value as a BQL value.
pub(crate) fn to_value(stored: &PropValue) -> Value {
    match stored {
        PropValue::Null => Value::Null,
        PropValue::Bool(b) => Value::Bool(*b),
        PropValue::Int(i) => Value::Int(*i),
        PropValue::Float(f) => Value::Float(*f),
        PropValue::String(s) => Value::String(s.clone()),
        PropValue::List(items) => Value::List(items.iter().map(to_value).collect()),
        PropValue::Map(entries) => Value::Map(
            entries
                .iter()
                .map(|(k, v)| (k.clone(), to_value(v)))
                .collect(),
        ),
        // Every value written converts back; parts that do not (a zone the bundled
        // database no longer knows) read as null rather than failing the whole read.
        PropValue::Temporal(stored) => {
            Temporal::from_parts(stored).map_or(Value::Null, Value::Temporal)
        }
    }
}

/// A BQL value as a storable property value, or why it cannot be one (nodes,
/// relationships and paths are not property values; nesting is bounded).
pub(crate) fn to_stored(value: &Value) -> Result<PropValue, String> {
    into_stored(value.clone())
}

/// [`to_stored`] for a value that is not needed afterwards: its strings move.
pub(crate) fn into_stored(value: Value) -> Result<PropValue, String> {
    let stored = convert(value)?;
    if stored.depth() > MAX_NESTING {
        return Err(format!(
            "a property value may nest lists and maps at most {MAX_NESTING} deep"
        ));
    }
    Ok(stored)
}

fn convert(value: Value) -> Result<PropValue, String> {
    Ok(match value {
        Value::Null => PropValue::Null,
        Value::Bool(b) => PropValue::Bool(b),
        Value::Int(i) => PropValue::Int(i),
        Value::Float(f) => PropValue::Float(f),
        Value::String(s) => PropValue::String(s),
        Value::List(items) => {
            PropValue::List(items.into_iter().map(convert).collect::<Result<_, _>>()?)
        }
        Value::Map(entries) => PropValue::Map(
            entries
                .into_iter()
                .map(|(k, v)| Ok((k, convert(v)?)))
                .collect::<Result<_, String>>()?,
        ),
        Value::Temporal(temporal) => PropValue::Temporal(temporal.to_parts()),
        other @ (Value::Node(_) | Value::Rel(_) | Value::Path { .. }) => {
            return Err(format!(
                "{} cannot be stored as a property value",
                other.type_name()
            ));
        }
    })
}

fn to_map<'v>(entries: impl Iterator<Item = (&'v str, &'v PropValue)>) -> BTreeMap<String, Value> {
    entries.map(|(k, v)| (k.to_string(), to_value(v))).collect()
}

impl PropertyAccess for WritableAccess<'_> {
    fn node_prop(&self, node: u32, key: &str) -> Value {
        self.0
            .borrow()
            .graph
            .node_property(node, key)
            .map_or(Value::Null, to_value)
    }

    fn rel_prop(&self, rel: u32, key: &str) -> Value {
        self.0
            .borrow()
            .graph
            .relationship_property(rel, key)
            .map_or(Value::Null, to_value)
    }

    fn node_labels(&self, node: u32) -> Vec<String> {
        self.0
            .borrow()
            .graph
            .node_labels(node)
            .map(str::to_string)
            .collect()
    }

    fn rel_type(&self, rel: u32) -> String {
        self.0
            .borrow()
            .graph
            .relationship_ends(rel)
            .map(|(t, _, _)| t.to_string())
            .unwrap_or_default()
    }

    fn rel_endpoints(&self, rel: u32) -> (u32, u32) {
        self.0
            .borrow()
            .graph
            .relationship_ends(rel)
            .map_or((u32::MAX, u32::MAX), |(_, s, e)| (s, e))
    }

    fn node_properties(&self, node: u32) -> BTreeMap<String, Value> {
        to_map(self.0.borrow().graph.node_properties(node))
    }

    fn rel_properties(&self, rel: u32) -> BTreeMap<String, Value> {
        to_map(self.0.borrow().graph.relationship_properties(rel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_are_not_property_values_and_scalars_round_trip() {
        assert!(to_stored(&Value::Node(1)).is_err());
        let value = Value::List(vec![Value::Int(1), Value::Map(BTreeMap::new())]);
        assert_eq!(to_value(&to_stored(&value).unwrap()), value);
    }
}
