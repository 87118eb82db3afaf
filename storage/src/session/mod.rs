//! Writable graphs: open-schema property graphs that BQL updates, one statement at a time.
//!
//! A [`WritableGraph`] lives in memory (nodes and relationships by stable id, adjacency
//! both ways, a roaring bitmap per label); its folder holds the latest checkpoint and the
//! write-ahead log of every transaction committed since ([`WritableStore`]). Opening loads
//! the checkpoint and replays the log; a torn log tail is reported and cut. The formats
//! are in `docs/format.md` §16.
//!
//! Module map: `prop` (property values and the byte codec), `change` (the elementary
//! changes a log record holds), `graph` (the in-memory graph: apply and undo), `index`
//! (property indexes, kept exact through every change and undo), `text_index` (text
//! indexes: words scored by BM25, kept exact the same way), `net` (what
//! a run of changes did in the end, for side-effect counts), `wal` (log
//! records and their checksums), `sync` (group commit: what of the log is on disk, and
//! the tickets that wait for it), `checkpoint` (the whole-graph file), `store` (the
//! folder, the lock, commit and checkpoint protocol).

mod change;
mod checkpoint;
mod graph;
mod index;
mod net;
mod prop;
mod store;
mod sync;
mod text_index;
mod text_worker;
mod wal;

pub use change::Change;
pub use graph::{ChangeError, Journal, WritableGraph};
pub use index::IndexHits;
pub use net::NetChanges;
pub use prop::{MAX_NESTING, PropValue, TemporalParts};
pub use store::{
    CheckReport, CheckpointInfo, Durability, GRAPH_MANIFEST, OpenReport, ReclaimReport,
    WritableStore, check_writable_graph, is_writable_graph, read_writable_graph,
    reclaim_writable_graph,
};
pub use sync::SyncTicket;
pub use wal::TornTail;

#[cfg(test)]
mod store_tests;

/// Reads arbitrary bytes as a log (behind a valid header), as a bare change batch (no
/// checksum in the way) and as a checkpoint, applying whatever decodes; then rolls every
/// applied change back and checks the graph is empty again. Returns `Err` for bytes that
/// do not decode; panics only on a bug (for the `writable_log` fuzz target).
pub(crate) fn exercise_bytes(bytes: &[u8]) -> Result<(), String> {
    let mut log = wal::header(0).to_vec();
    log.extend_from_slice(bytes);
    let mut decoded = Vec::new();
    if let Ok(contents) = wal::parse(&log, 0, std::path::Path::new("fuzz-input")) {
        decoded.extend(contents.batches.into_iter().flatten());
    }
    if let Ok(changes) = change::decode_batch(bytes) {
        decoded.extend(changes);
    }
    let mut graph = WritableGraph::new();
    let mut journal = Journal::new();
    for change in decoded {
        let _ = graph.apply_logged(change, &mut journal);
    }
    // The journal's encoding is what a commit writes: it must decode to what applied.
    let (count, encoded) = journal.encoded();
    let record = wal::record(count, encoded);
    let mut log = wal::header(0).to_vec();
    log.extend_from_slice(&record);
    let parsed = wal::parse(&log, 0, std::path::Path::new("journal"))
        .expect("a journal's record has a valid header");
    assert!(
        parsed.torn.is_none(),
        "a journal's record does not read back"
    );
    graph.roll_back_to(&mut journal, 0);
    assert_eq!(graph.node_count(), 0, "a rollback left nodes");
    assert_eq!(
        graph.relationship_count(),
        0,
        "a rollback left relationships"
    );
    assert_eq!(graph.node_id_bound(), 0, "a rollback left node ids taken");
    let graph = checkpoint::decode(bytes).map_err(|e| e.0)?;
    // What decodes must encode and decode to the same graph (compared as bytes: a NaN
    // property is not equal to itself).
    let bytes = checkpoint::encode(&graph);
    let again = checkpoint::decode(&bytes).map_err(|e| e.0)?;
    assert_eq!(
        checkpoint::encode(&again),
        bytes,
        "a checkpoint does not round-trip"
    );
    Ok(())
}
