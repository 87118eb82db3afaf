//! The folder protocol: commits survive a reopen, a torn tail is reported and cut, a
//! checkpoint starts a new generation that reads the same, one writer at a time; group
//! commit's tickets share fsyncs, a checkpoint covers them, a failed fsync is not forgotten.

use std::fs::OpenOptions;
use std::io::Write;

use super::*;
use crate::StorageError;

fn note(id: u32) -> Change {
    Change::CreateNode {
        id,
        labels: vec!["Note".into()],
        properties: vec![("n".into(), PropValue::Int(i64::from(id)))],
    }
}

fn commit(store: &mut WritableStore, graph: &mut WritableGraph, changes: Vec<Change>) {
    let mut journal = Journal::new();
    for change in changes {
        graph.apply_logged(change, &mut journal).unwrap();
    }
    store.commit(&journal).unwrap();
}

/// Commits `changes` under [`Durability::Group`]: the ticket to wait on.
fn commit_grouped(
    store: &mut WritableStore,
    graph: &mut WritableGraph,
    changes: Vec<Change>,
) -> SyncTicket {
    let mut journal = Journal::new();
    for change in changes {
        graph.apply_logged(change, &mut journal).unwrap();
    }
    store
        .commit(&journal)
        .unwrap()
        .expect("a group commit hands back a ticket")
}

fn grouped_store(dir: &std::path::Path) -> (WritableStore, WritableGraph) {
    let (mut store, graph) = WritableStore::create(dir).unwrap();
    store.set_durability(Durability::Group);
    (store, graph)
}

fn reopened_node_count(dir: &std::path::Path) -> u64 {
    WritableStore::open(dir).unwrap().1.node_count()
}

#[test]
fn commits_survive_reopen_and_a_torn_tail_is_cut_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, mut graph) = WritableStore::create(dir.path()).unwrap();
    commit(&mut store, &mut graph, vec![note(0), note(1)]);
    commit(&mut store, &mut graph, vec![note(2)]);
    let good_len = store.log_len().unwrap();
    drop(store);
    // A crash mid-append: half a record.
    let wal = dir.path().join("wal-0.log");
    let mut file = OpenOptions::new().append(true).open(&wal).unwrap();
    file.write_all(&[9, 0, 0, 0, 1, 2]).unwrap();
    drop(file);

    let (read, report) = read_writable_graph(dir.path()).unwrap();
    assert_eq!(read.node_count(), 3);
    assert_eq!(report.torn_tail.as_ref().map(|t| t.bytes), Some(6));
    assert_eq!(
        std::fs::metadata(&wal).unwrap().len(),
        good_len + 6,
        "a reader never writes"
    );

    let (store, graph, report) = WritableStore::open(dir.path()).unwrap();
    assert_eq!(graph.node_count(), 3);
    assert_eq!(report.replayed, 2);
    assert_eq!(report.torn_tail.map(|t| t.offset), Some(good_len));
    assert_eq!(
        store.log_len().unwrap(),
        good_len,
        "the writer cut the tail"
    );
}

#[test]
fn a_checkpoint_reads_the_same_and_keeps_the_old_generation() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, mut graph) = WritableStore::create(dir.path()).unwrap();
    commit(&mut store, &mut graph, vec![note(0), note(1)]);
    let info = store.checkpoint(&graph).unwrap();
    assert_eq!(info.generation, 1);
    commit(
        &mut store,
        &mut graph,
        vec![Change::DeleteNode { id: 0 }, note(2)],
    );
    drop(store);
    let (_store, reopened, report) = WritableStore::open(dir.path()).unwrap();
    assert_eq!(report.generation, 1);
    assert_eq!(report.replayed, 1);
    assert_eq!(reopened.nodes(), graph.nodes());
    assert_eq!(reopened.node_id_bound(), 3);
    assert!(
        dir.path().join("wal-0.log").exists(),
        "the old generation stays until gc"
    );
}

#[test]
fn one_writer_at_a_time_and_no_second_create() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, _graph) = WritableStore::create(dir.path()).unwrap();
    assert!(matches!(
        WritableStore::open(dir.path()),
        Err(crate::StorageError::Locked { .. })
    ));
    assert!(matches!(
        WritableStore::create(dir.path()),
        Err(crate::StorageError::GraphExists { .. })
    ));
}

#[test]
fn a_damaged_checkpoint_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, mut graph) = WritableStore::create(dir.path()).unwrap();
    commit(&mut store, &mut graph, vec![note(0)]);
    let info = store.checkpoint(&graph).unwrap();
    drop(store);
    let mut bytes = std::fs::read(&info.file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&info.file, bytes).unwrap();
    let error = read_writable_graph(dir.path()).unwrap_err().to_string();
    assert!(error.contains("checkpoint-1-"), "{error}");
}

#[test]
fn a_rolled_back_journal_leaves_the_graph_as_it_was() {
    let mut graph = WritableGraph::new();
    let mut journal = Journal::new();
    graph.apply_logged(note(0), &mut journal).unwrap();
    graph.apply_logged(note(1), &mut journal).unwrap();
    journal.clear();
    let before = graph.clone();
    let changes = vec![
        Change::CreateRelationship {
            id: 0,
            rel_type: "T".into(),
            start: 0,
            end: 1,
            properties: vec![],
        },
        Change::SetNodeProperty {
            id: 0,
            key: "n".into(),
            value: None,
        },
        Change::AddLabel {
            id: 1,
            label: "Extra".into(),
        },
        Change::RemoveLabel {
            id: 0,
            label: "Note".into(),
        },
        Change::DeleteRelationship { id: 0 },
        Change::DeleteNode { id: 1 },
        note(2),
    ];
    for change in changes {
        graph.apply_logged(change, &mut journal).unwrap();
    }
    graph.roll_back_to(&mut journal, 0);
    assert_eq!(graph.nodes, before.nodes);
    assert_eq!(graph.live_nodes, before.live_nodes);
    assert_eq!(
        graph.nodes_with_label("Note"),
        before.nodes_with_label("Note")
    );
    assert!(graph.nodes_with_label("Extra").is_none_or(|b| b.is_empty()));
    assert!(journal.is_empty());
}

#[test]
fn tickets_covered_by_an_earlier_fsync_need_none_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, mut graph) = grouped_store(dir.path());
    let tickets: Vec<SyncTicket> = (0..3)
        .map(|id| commit_grouped(&mut store, &mut graph, vec![note(id)]))
        .collect();
    assert_eq!(store.log_syncs(), 0, "a group commit does not wait");
    assert!(tickets.windows(2).all(|pair| pair[0].end() < pair[1].end()));
    tickets[2].wait().unwrap();
    assert_eq!(store.log_syncs(), 1);
    tickets[0].wait().unwrap();
    tickets[1].wait().unwrap();
    assert_eq!(store.log_syncs(), 1, "earlier records were covered");
    let later = commit_grouped(&mut store, &mut graph, vec![note(3)]);
    later.wait().unwrap();
    later.wait().unwrap();
    assert_eq!(store.log_syncs(), 2, "a later record needs an fsync, once");
    drop(store);
    assert_eq!(reopened_node_count(dir.path()), 4);
}

#[test]
fn concurrent_waiters_share_one_leaders_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, mut graph) = grouped_store(dir.path());
    let tickets: Vec<SyncTicket> = (0..8)
        .map(|id| commit_grouped(&mut store, &mut graph, vec![note(id)]))
        .collect();
    let start = std::sync::Barrier::new(tickets.len());
    std::thread::scope(|scope| {
        for ticket in &tickets {
            let start = &start;
            scope.spawn(move || {
                start.wait();
                ticket.wait().unwrap();
            });
        }
    });
    // Every record was appended before anyone waited, so the first leader's fsync
    // covered them all, whichever thread it was.
    assert_eq!(store.log_syncs(), 1);
}

#[test]
fn a_checkpoint_covers_the_tickets_of_the_log_it_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, mut graph) = grouped_store(dir.path());
    let before = commit_grouped(&mut store, &mut graph, vec![note(0)]);
    store.checkpoint(&graph).unwrap();
    before.wait().unwrap();
    assert_eq!(before.generation(), 0);
    assert_eq!(store.log_syncs(), 0, "the checkpoint made it durable");
    drop(store);

    let (mut store, mut graph, _) = WritableStore::open(dir.path()).unwrap();
    store.set_durability(Durability::Group);
    let after = commit_grouped(&mut store, &mut graph, vec![note(1)]);
    assert_eq!(after.generation(), 1);
    after.wait().unwrap();
    assert_eq!(store.log_syncs(), 1);
    drop(store);
    assert_eq!(reopened_node_count(dir.path()), 2);
}

#[test]
fn a_failed_fsync_fails_the_waiters_not_yet_durable_and_refuses_later_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, mut graph) = grouped_store(dir.path());
    let durable = commit_grouped(&mut store, &mut graph, vec![note(0)]);
    durable.wait().unwrap();
    let first = commit_grouped(&mut store, &mut graph, vec![note(1)]);
    let second = commit_grouped(&mut store, &mut graph, vec![note(2)]);
    store.fail_next_sync();
    let error = first.wait().unwrap_err();
    assert!(matches!(error, StorageError::LogFailed { .. }), "{error}");
    assert!(error.to_string().contains("reopen"), "{error}");
    assert_eq!(store.log_syncs(), 2);
    assert!(matches!(second.wait(), Err(StorageError::LogFailed { .. })));
    assert_eq!(store.log_syncs(), 2, "a failed log is not fsynced again");
    durable.wait().unwrap();

    let mut journal = Journal::new();
    graph.apply_logged(note(3), &mut journal).unwrap();
    assert!(matches!(
        store.commit(&journal),
        Err(StorageError::LogFailed { .. })
    ));
    assert!(matches!(
        store.checkpoint(&graph),
        Err(StorageError::LogFailed { .. })
    ));
    drop(store);
    // The records were appended whole; only their fsync was in doubt.
    assert_eq!(reopened_node_count(dir.path()), 3);
}

#[test]
fn under_fsync_every_commit_syncs_before_returning_and_a_failure_refuses_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, mut graph) = WritableStore::create(dir.path()).unwrap();
    let mut journal = Journal::new();
    graph.apply_logged(note(0), &mut journal).unwrap();
    assert!(store.commit(&journal).unwrap().is_none());
    assert_eq!(store.log_syncs(), 1);
    journal.clear();
    graph.apply_logged(note(1), &mut journal).unwrap();
    store.fail_next_sync();
    assert!(matches!(
        store.commit(&journal),
        Err(StorageError::LogFailed { .. })
    ));
    journal.clear();
    graph.apply_logged(note(2), &mut journal).unwrap();
    assert!(matches!(
        store.commit(&journal),
        Err(StorageError::LogFailed { .. })
    ));
    assert_eq!(store.log_syncs(), 2);
}
