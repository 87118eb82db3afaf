//! Checkpoints: the whole graph written as one file named by its blake3 hash, so the log
//! can start afresh. The file holds the name dictionaries in id order (so labels keep
//! their order across a reopen), the id bounds (so ids of deleted entities are never
//! given again), and the changes that recreate every live node and relationship.

use super::change::Change;
use super::graph::WritableGraph;
use super::prop::{DecodeError, Decoded, Reader, put_string, put_varint};

/// First bytes of a checkpoint file.
pub(crate) const CHECKPOINT_MAGIC: &[u8; 8] = b"BATHOCKP";
/// Version of the checkpoint layout.
pub(crate) const CHECKPOINT_VERSION: u64 = 1;
/// Ids a checkpoint may declare per byte of its changes: deleted ids take no bytes, so
/// this allows a graph where most of what was created was deleted again.
const MAX_IDS_PER_BYTE: u64 = 64;

/// The bytes of a checkpoint of `graph`.
pub(crate) fn encode(graph: &WritableGraph) -> Vec<u8> {
    let mut out = CHECKPOINT_MAGIC.to_vec();
    put_varint(&mut out, CHECKPOINT_VERSION);
    for names in [graph.labels.all(), graph.types.all(), graph.keys.all()] {
        put_varint(&mut out, names.len() as u64);
        for name in names {
            put_string(&mut out, name);
        }
    }
    put_varint(&mut out, u64::from(graph.node_id_bound()));
    put_varint(&mut out, u64::from(graph.relationship_id_bound()));
    // Written change by change, so a checkpoint never holds a second copy of the graph.
    let indexes = graph.indexes();
    let text_indexes = graph.text_indexes();
    put_varint(
        &mut out,
        graph.node_count()
            + graph.relationship_count()
            + indexes.len() as u64
            + text_indexes.len() as u64,
    );
    for id in graph.nodes() {
        Change::CreateNode {
            id,
            labels: graph.node_labels(id).map(str::to_string).collect(),
            properties: graph
                .node_properties(id)
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        }
        .encode(&mut out);
    }
    for id in graph.relationships() {
        let (rel_type, start, end) = graph.relationship_ends(id).expect("live relationship");
        Change::CreateRelationship {
            id,
            rel_type: rel_type.to_string(),
            start,
            end,
            properties: graph
                .relationship_properties(id)
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        }
        .encode(&mut out);
    }
    // Indexes last: each is built once, over every node.
    for (label, key) in indexes {
        Change::CreateIndex { label, key }.encode(&mut out);
    }
    for (label, key) in text_indexes {
        Change::CreateTextIndex { label, key }.encode(&mut out);
    }
    out
}

/// The graph a checkpoint holds.
pub(crate) fn decode(bytes: &[u8]) -> Decoded<WritableGraph> {
    let Some(rest) = bytes.strip_prefix(CHECKPOINT_MAGIC.as_slice()) else {
        return Err(DecodeError("not a Batho checkpoint (bad magic)".into()));
    };
    let mut reader = Reader::new(rest);
    let version = reader.varint()?;
    if version != CHECKPOINT_VERSION {
        return Err(DecodeError(format!(
            "checkpoint version {version}, expected {CHECKPOINT_VERSION}"
        )));
    }
    let mut graph = WritableGraph::new();
    for names in [&mut graph.labels, &mut graph.types, &mut graph.keys] {
        let count = reader.count()?;
        for _ in 0..count {
            names.intern(&reader.string()?);
        }
    }
    let node_bound = reader.u32_varint()?;
    let relationship_bound = reader.u32_varint()?;
    let rest = reader.rest();
    // Each id below a bound costs a slot in memory, live or not; a bound far beyond what
    // the file could describe is damage, refused before it allocates.
    let plausible = (rest.len() as u64).saturating_mul(MAX_IDS_PER_BYTE) + 1024;
    if u64::from(node_bound) > plausible || u64::from(relationship_bound) > plausible {
        return Err(DecodeError(
            "the checkpoint's id bounds are not plausible for its size".into(),
        ));
    }
    // Decoded and applied one at a time: a checkpoint never sits in memory twice.
    let mut changes = Reader::new(rest);
    let count = changes.count()?;
    for _ in 0..count {
        let change = Change::decode(&mut changes)?;
        // Ids of entities deleted before the checkpoint are gaps: skip to the next live one.
        match &change {
            Change::CreateNode { id, .. } if *id < node_bound => graph.skip_ids(*id, 0),
            Change::CreateRelationship { id, .. } if *id < relationship_bound => {
                graph.skip_ids(0, *id)
            }
            Change::CreateIndex { .. } | Change::CreateTextIndex { .. } => {}
            _ => {
                return Err(DecodeError(
                    "a checkpoint entry lies past its id bounds".into(),
                ));
            }
        }
        graph
            .apply(change)
            .map_err(|e| DecodeError(format!("the checkpoint does not apply: {e}")))?;
    }
    if !changes.is_empty() {
        return Err(DecodeError("bytes after the last entry".into()));
    }
    graph.skip_ids(node_bound, relationship_bound);
    Ok(graph)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::prop::PropValue;

    #[test]
    fn a_checkpoint_keeps_ids_labels_order_and_bounds() {
        let mut graph = WritableGraph::new();
        let changes = [
            Change::CreateNode {
                id: 0,
                labels: vec!["B".into(), "A".into()],
                properties: vec![],
            },
            Change::CreateNode {
                id: 1,
                labels: vec!["A".into()],
                properties: vec![("k".into(), PropValue::List(vec![PropValue::Int(1)]))],
            },
            Change::CreateNode {
                id: 2,
                labels: vec![],
                properties: vec![],
            },
            Change::CreateRelationship {
                id: 0,
                rel_type: "T".into(),
                start: 0,
                end: 1,
                properties: vec![],
            },
            Change::CreateRelationship {
                id: 1,
                rel_type: "T".into(),
                start: 1,
                end: 2,
                properties: vec![],
            },
            Change::DeleteRelationship { id: 1 },
            Change::DeleteNode { id: 2 },
        ];
        for change in changes {
            graph.apply(change).unwrap();
        }
        let back = decode(&encode(&graph)).unwrap();
        assert_eq!(back.node_id_bound(), 3);
        assert_eq!(back.relationship_id_bound(), 2);
        assert_eq!(back.node_labels(0).collect::<Vec<_>>(), vec!["B", "A"]);
        assert_eq!(back.nodes, graph.nodes);
        assert_eq!(back.relationships, graph.relationships);
        assert_eq!(back.nodes_with_label("A"), graph.nodes_with_label("A"));
    }
}
