//! Where a writable graph's text indexes live: on the writer's thread, or for a while on a
//! worker thread that indexes a large write while the writer goes on.
//!
//! Indexing the words of a big write is the costliest part of storing it: about 7 ms of
//! the 28 ms that `ctx_tree_read` spends on a 10,000-line C file (278 chunks, 488 KB of
//! text), while the statement's other work and the log's fsync leave the second core idle.
//! So once the writes since the indexes were last read have brought more than
//! [`HAND_OVER_BYTES`] of text, the indexes move to a worker thread, and every later
//! insertion is sent to it. Anything else that touches them (a search, a removal, an index
//! created or dropped, a checkpoint, a clone) first waits for the worker to finish and takes
//! them back ([`TextIndexes::settled`]): every search still sees every write before it,
//! and a search right after a large write waits for what is left of its indexing.
//!
//! A worker that panics loses the indexes it held; the next settle reports them lost and
//! the graph rebuilds them from its nodes, which hold every indexed value.

use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use super::prop::PropValue;
use super::text_index::{TextIndex, indexed_text};

/// Text indexed on the writer's thread before the indexes move to a worker: a file read
/// (hundreds of kilobytes) hands over, while a stream of short notes, each far smaller
/// than a thread is worth, starts one only after many of them (not measured finely: the
/// bound only needs to sit between the two).
pub(crate) const HAND_OVER_BYTES: usize = 32 << 10;

/// The text indexes of one graph, wherever they are.
#[derive(Debug, Default)]
pub(crate) struct TextIndexes {
    held: Mutex<Held>,
}

/// The state behind the lock.
#[derive(Debug)]
pub(crate) struct Held {
    /// `(label, key)` of each index, in order: known while a worker holds the indexes.
    pub(crate) names: Vec<(u32, u32)>,
    /// The indexes (empty while a worker holds them).
    pub(crate) indexes: Vec<TextIndex>,
    /// The worker that holds them, if one does.
    worker: Option<Worker>,
    /// Bytes of text indexed here since the indexes were last settled.
    indexed_here: usize,
    /// When to hand the indexes to a worker.
    hand_over_bytes: usize,
    /// The indexes were lost with a worker that panicked: they are empty and must be
    /// rebuilt from the graph's nodes.
    pub(crate) lost: bool,
}

impl Default for Held {
    fn default() -> Self {
        Held {
            names: Vec::new(),
            indexes: Vec::new(),
            worker: None,
            indexed_here: 0,
            hand_over_bytes: HAND_OVER_BYTES,
            lost: false,
        }
    }
}

#[derive(Debug)]
struct Worker {
    insertions: Sender<Insertion>,
    thread: JoinHandle<Vec<TextIndex>>,
}

/// One node's text for the index at `position`.
struct Insertion {
    position: usize,
    node: u32,
    text: String,
}

impl Clone for TextIndexes {
    fn clone(&self) -> Self {
        let held = self.settled();
        TextIndexes {
            held: Mutex::new(Held {
                names: held.names.clone(),
                indexes: held.indexes.clone(),
                worker: None,
                indexed_here: 0,
                hand_over_bytes: held.hand_over_bytes,
                lost: held.lost,
            }),
        }
    }
}

impl TextIndexes {
    /// The state, with the indexes back from any worker (`lost` set if that worker failed).
    pub(crate) fn settled(&self) -> MutexGuard<'_, Held> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.settle();
        held
    }

    /// The state, without waiting for a worker: for insertions and for the index names.
    pub(crate) fn unsettled(&mut self) -> &mut Held {
        self.held.get_mut().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the graph has no text index (without waiting for a worker).
    pub(crate) fn is_empty(&self) -> bool {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .names
            .is_empty()
    }

    /// Hands the indexes to a worker once `bytes` of text were indexed here (tests use 0
    /// so that every insertion goes through a worker).
    #[cfg(test)]
    pub(crate) fn hand_over_after(&mut self, bytes: usize) {
        self.unsettled().hand_over_bytes = bytes;
    }
}

impl Held {
    /// Adds an index (settle first: the worker holds no slot for it).
    pub(crate) fn push(&mut self, index: TextIndex) {
        self.settle();
        self.names.push((index.label, index.key));
        self.indexes.push(index);
    }

    /// Drops the index on `label` and `key`; whether there was one.
    pub(crate) fn remove_index(&mut self, label: u32, key: u32) -> bool {
        self.settle();
        let Some(position) = self.names.iter().position(|&name| name == (label, key)) else {
            return false;
        };
        self.names.remove(position);
        self.indexes.remove(position);
        true
    }

    /// Indexes `value` as node `node`'s text in the index at `position`: here, or by the
    /// worker once enough text came since the last settle.
    pub(crate) fn insert(&mut self, position: usize, node: u32, value: &PropValue) {
        if let Some(worker) = &self.worker {
            if let Some(text) = indexed_text(value) {
                // A send fails only when the worker died; settling will then rebuild the
                // indexes from the nodes, this one included.
                let _ = worker.insertions.send(Insertion {
                    position,
                    node,
                    text,
                });
            }
            return;
        }
        let Some(index) = self.indexes.get_mut(position) else {
            return;
        };
        self.indexed_here += index.insert(node, value);
        if self.indexed_here > self.hand_over_bytes {
            self.hand_over();
        }
    }

    /// Moves the indexes to a new worker thread; they stay here if none can be started.
    fn hand_over(&mut self) {
        let (insertions, received) = channel::<Insertion>();
        let mut indexes = std::mem::take(&mut self.indexes);
        let names = self.names.clone();
        let spawned = std::thread::Builder::new()
            .name("batho-text-index".into())
            .spawn(move || {
                for insertion in received {
                    if let Some(index) = indexes.get_mut(insertion.position) {
                        index.insert_text(insertion.node, &insertion.text);
                    }
                }
                indexes
            });
        match spawned {
            Ok(thread) => self.worker = Some(Worker { insertions, thread }),
            // The closure, and the indexes in it, are gone with the failed spawn.
            Err(_) => self.mark_lost(names),
        }
    }

    /// Takes the indexes back from the worker, waiting for it to index what it was sent.
    fn settle(&mut self) {
        self.indexed_here = 0;
        let Some(worker) = self.worker.take() else {
            return;
        };
        drop(worker.insertions);
        match worker.thread.join() {
            Ok(indexes) => self.indexes = indexes,
            Err(_) => self.mark_lost(self.names.clone()),
        }
    }

    /// Leaves empty indexes for `names`, to be rebuilt from the graph's nodes.
    fn mark_lost(&mut self, names: Vec<(u32, u32)>) {
        self.indexes = names
            .iter()
            .map(|&(label, key)| TextIndex::new(label, key))
            .collect();
        self.lost = true;
    }
}

#[cfg(test)]
mod tests {
    use crate::session::prop::PropValue;
    use crate::session::{Change, Journal, WritableGraph};
    use crate::text::query::parse_text_query;

    fn note(id: u32, text: String) -> Change {
        Change::CreateNode {
            id,
            labels: vec!["Note".into()],
            properties: vec![("text".into(), PropValue::String(text))],
        }
    }

    /// A graph with a text index on `Note.text` that hands over after `bytes`.
    fn graph_handing_over_after(bytes: usize) -> (WritableGraph, Journal) {
        let mut graph = WritableGraph::new();
        let mut journal = Journal::new();
        graph.text_indexes.hand_over_after(bytes);
        let index = Change::CreateTextIndex {
            label: "Note".into(),
            key: "text".into(),
        };
        graph.apply_logged(index, &mut journal).unwrap();
        (graph, journal)
    }

    fn found(graph: &WritableGraph, query: &str) -> Vec<(u32, f64)> {
        let query = parse_text_query(query).unwrap();
        graph.text_search(&query, usize::MAX).unwrap()
    }

    /// 300 notes: every third says "lock", note k also says "wordk".
    fn add_notes(graph: &mut WritableGraph, journal: &mut Journal) {
        for id in 0..300u32 {
            let lock = if id % 3 == 0 { "lock order" } else { "plain" };
            let text = format!("note {lock} word{id} {}", "filler text ".repeat(20));
            graph.apply_logged(note(id, text), journal).unwrap();
        }
    }

    #[test]
    fn a_worker_indexes_what_the_writer_thread_would() {
        let (mut here, mut here_journal) = graph_handing_over_after(usize::MAX);
        let (mut away, mut away_journal) = graph_handing_over_after(1000);
        add_notes(&mut here, &mut here_journal);
        add_notes(&mut away, &mut away_journal);
        assert!(away.text_indexes.unsettled().worker.is_some());
        assert!(here.text_indexes.unsettled().worker.is_none());
        for query in ["lock", "word7", "filler", "lock AND word9", "wor*"] {
            assert_eq!(found(&here, query), found(&away, query), "{query}");
        }
        assert_eq!(found(&away, "lock").len(), 100);
        // The search took the indexes back.
        assert!(away.text_indexes.unsettled().worker.is_none());
    }

    #[test]
    fn a_removal_and_an_undo_wait_for_the_worker() {
        let (mut graph, mut journal) = graph_handing_over_after(0);
        let mark = journal.len();
        add_notes(&mut graph, &mut journal);
        let change = Change::SetNodeProperty {
            id: 3,
            key: "text".into(),
            value: Some(PropValue::String("rewritten".into())),
        };
        graph.apply_logged(change, &mut journal).unwrap();
        assert_eq!(found(&graph, "word3"), vec![]);
        assert_eq!(found(&graph, "rewritten").len(), 1);
        add_notes_after(&mut graph, &mut journal);
        graph.roll_back_to(&mut journal, mark);
        assert_eq!(found(&graph, "lock"), vec![]);
        assert_eq!(found(&graph, "rewritten"), vec![]);
    }

    fn add_notes_after(graph: &mut WritableGraph, journal: &mut Journal) {
        let next = graph.node_id_bound();
        for id in next..next + 50 {
            graph
                .apply_logged(note(id, format!("late lock {id}")), journal)
                .unwrap();
        }
    }

    #[test]
    fn indexes_lost_with_a_worker_are_rebuilt_from_the_nodes() {
        let (mut graph, mut journal) = graph_handing_over_after(usize::MAX);
        add_notes(&mut graph, &mut journal);
        let before = found(&graph, "lock");
        let held = graph.text_indexes.unsettled();
        let names = held.names.clone();
        held.mark_lost(names);
        assert_eq!(found(&graph, "lock"), before);
        assert!(!graph.text_indexes.unsettled().lost);
    }

    #[test]
    fn a_clone_waits_for_the_worker() {
        let (mut graph, mut journal) = graph_handing_over_after(0);
        add_notes(&mut graph, &mut journal);
        let copy = graph.clone();
        assert_eq!(found(&copy, "lock").len(), 100);
        assert_eq!(found(&graph, "lock").len(), 100);
    }
}
