//! Writable graphs: open-schema property graphs that BQL updates, one statement at a time.
//!
//! A [`WritableGraph`] lives in memory (nodes and relationships by stable id, adjacency
//! both ways, a roaring bitmap per label); its folder holds the latest checkpoint and the
//! write-ahead log of every transaction committed since ([`WritableStore`]). Opening loads
//! the checkpoint and replays the log; a torn log tail is reported and cut. The formats
//! are in `docs/format.md` §16.
//!
//! Module map: `prop` (property values and the byte codec), `change` (the elementary
//! changes a log record holds), `graph` (the in-memory graph: apply and undo), `wal` (log
//! records and their checksums), `checkpoint` (the whole-graph file), `store` (the folder,
//! the lock, commit and checkpoint protocol).

mod change;
mod checkpoint;
mod graph;
mod prop;
mod store;
mod wal;

pub use change::Change;
pub use graph::{ChangeError, Journal, WritableGraph};
pub use prop::{MAX_NESTING, PropValue};
pub use store::{
    CheckpointInfo, Durability, GRAPH_MANIFEST, OpenReport, WritableStore, is_writable_graph,
    read_writable_graph,
};
pub use wal::TornTail;

#[cfg(test)]
mod store_tests;
