//! The session graph end to end through the library: every statement the tools run is
//! executed against a real writable graph in a temporary home.

use batho_ctx::graph::{ContextGraph, SessionChoice};
use batho_ctx::grep::{GrepRequest, grep};
use batho_ctx::kinds::{EdgeKind, NodeKind, NodeStatus};
use batho_ctx::lookup::{Filters, neighbors, note, path_to_root, recent, search};
use batho_ctx::read::{ReadRequest, read_file};

fn project() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("src")).unwrap();
    std::fs::write(
        root.path().join("src/lock.c"),
        "/* Takes the lock. */\nvoid take_lock(int *l) {\n    *l = 1;\n}\n\nvoid drop_lock(int *l) {\n    *l = 0;\n}\n",
    )
    .unwrap();
    std::fs::write(
        root.path().join("README.md"),
        "# Demo\nThe lock is simple.\n",
    )
    .unwrap();
    std::fs::write(root.path().join("blob.bin"), b"\x00\x01lock\x02").unwrap();
    root
}

#[test]
fn notes_are_listed_newest_first_and_found_by_words() {
    let home = tempfile::tempdir().unwrap();
    let root = project();
    let mut graph = ContextGraph::open(home.path(), root.path(), SessionChoice::New).unwrap();
    let first = note(&mut graph, "The parser drops headers\nsecond line", None).unwrap();
    assert_eq!(first.title, "The parser drops headers");
    let second = note(
        &mut graph,
        "Lock order: take_lock before drop_lock",
        Some("locks"),
    )
    .unwrap();
    let listed = recent(&mut graph, &Filters::default(), None).unwrap();
    let ids: Vec<&str> = listed.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ids, [second.node_id.as_str(), first.node_id.as_str()]);
    let hits = search(&mut graph, "parser", &Filters::default(), None).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, first.node_id);
    assert!(hits[0].score.unwrap() > 0.0);
    let phrase = search(&mut graph, "\"take lock\"", &Filters::default(), None).unwrap();
    assert_eq!(phrase.len(), 1, "{phrase:?}");
    let prefix = search(&mut graph, "pars*", &Filters::default(), None).unwrap();
    assert_eq!(prefix.len(), 1);
    let only_notes = Filters {
        kind: Some(vec![NodeKind::FileChunk]),
        ..Filters::default()
    };
    assert!(
        search(&mut graph, "parser", &only_notes, None)
            .unwrap()
            .is_empty()
    );
    assert!(search(&mut graph, "  ", &Filters::default(), None).is_err());
}

#[test]
fn reads_are_cached_superseded_and_chained_to_the_root() {
    let home = tempfile::tempdir().unwrap();
    let root = project();
    let mut graph = ContextGraph::open(home.path(), root.path(), SessionChoice::New).unwrap();
    let request = ReadRequest {
        path: "src/lock.c".into(),
        ..ReadRequest::default()
    };
    let read = read_file(&mut graph, &request).unwrap();
    assert!(!read.cached);
    assert!(read.chunks >= 1);
    let again = read_file(&mut graph, &request).unwrap();
    assert!(again.cached);
    assert_eq!(again.node_id, read.node_id);
    let absolute = ReadRequest {
        path: root
            .path()
            .join("src/lock.c")
            .to_string_lossy()
            .into_owned(),
        ..ReadRequest::default()
    };
    assert!(read_file(&mut graph, &absolute).unwrap().cached);
    std::fs::write(root.path().join("src/lock.c"), "int changed;\n").unwrap();
    let changed = read_file(&mut graph, &request).unwrap();
    assert!(!changed.cached);
    assert_ne!(changed.node_id, read.node_id);
    let old = graph.node(&read.node_id).unwrap();
    assert_eq!(
        old.get("status"),
        Some(&batho_engine::query::Value::from(
            NodeStatus::Superseded.name()
        ))
    );
    let around = neighbors(
        &mut graph,
        &changed.node_id,
        Some(1),
        Some(&[EdgeKind::Supersedes]),
        &Filters {
            status: Some(NodeStatus::ALL.to_vec()),
            ..Filters::default()
        },
    )
    .unwrap();
    assert_eq!(around.len(), 1);
    assert_eq!(around[0].id, read.node_id);
    assert_eq!(around[0].edge_kind, "supersedes");
    let chunk = neighbors(
        &mut graph,
        &changed.node_id,
        Some(1),
        Some(&[EdgeKind::DerivedFrom]),
        &Filters::default(),
    )
    .unwrap();
    let chunk = chunk
        .iter()
        .find(|n| n.kind == "file_chunk")
        .expect("the chunk of the new read");
    let chain = path_to_root(&mut graph, &chunk.id).unwrap();
    let kinds: Vec<&str> = chain.iter().map(|n| n.kind.as_str()).collect();
    assert_eq!(kinds, ["file_chunk", "file_chunk", "session"]);
    assert_eq!(chain[2].id, graph.session_id());
    assert!(path_to_root(&mut graph, "n999999").is_err());
}

#[test]
fn bad_reads_get_clear_errors() {
    let home = tempfile::tempdir().unwrap();
    let root = project();
    let mut graph = ContextGraph::open(home.path(), root.path(), SessionChoice::New).unwrap();
    for (path, expected) in [
        ("blob.bin", "binary"),
        ("/etc/passwd", "outside the project root"),
        ("../x", "not a path inside"),
        ("missing.c", "missing.c"),
    ] {
        let error = read_file(
            &mut graph,
            &ReadRequest {
                path: path.into(),
                ..ReadRequest::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains(expected), "{path}: {error}");
    }
}

#[test]
fn grep_stores_hits_with_globs_and_case() {
    let home = tempfile::tempdir().unwrap();
    let root = project();
    let mut graph = ContextGraph::open(home.path(), root.path(), SessionChoice::New).unwrap();
    let all = grep(
        &mut graph,
        &GrepRequest {
            pattern: "lock".into(),
            ..GrepRequest::default()
        },
    )
    .unwrap();
    // The binary file is skipped, as rg skips it.
    assert!(
        all.matches.iter().all(|m| !m.contains("blob.bin")),
        "{all:?}"
    );
    assert!(
        all.matches.iter().any(|m| m.ends_with("README.md:2")),
        "{all:?}"
    );
    let c_only = grep(
        &mut graph,
        &GrepRequest {
            pattern: "LOCK".into(),
            case_insensitive: true,
            file_glob: Some("*.c".into()),
            ..GrepRequest::default()
        },
    )
    .unwrap();
    assert_eq!(c_only.count, 3, "{c_only:?}");
    assert!(
        c_only.matches.iter().all(|m| m.contains("src/lock.c:")),
        "{c_only:?}"
    );
    let none = grep(
        &mut graph,
        &GrepRequest {
            pattern: "LOCK".into(),
            ..GrepRequest::default()
        },
    )
    .unwrap();
    assert_eq!(none.count, 0);
    assert!(
        grep(
            &mut graph,
            &GrepRequest {
                pattern: "(".into(),
                ..GrepRequest::default()
            }
        )
        .is_err()
    );
}

#[test]
fn a_second_session_follows_on_and_the_latest_is_reopened() {
    let home = tempfile::tempdir().unwrap();
    let root = project();
    let first_session;
    {
        let mut graph = ContextGraph::open(home.path(), root.path(), SessionChoice::New).unwrap();
        first_session = graph.session_id().to_string();
        note(&mut graph, "one", None).unwrap();
    }
    let mut graph = ContextGraph::open(home.path(), root.path(), SessionChoice::Latest).unwrap();
    assert_eq!(graph.session_id(), first_session);
    let two = note(&mut graph, "two", None).unwrap();
    let chain = path_to_root(&mut graph, &two.node_id).unwrap();
    assert_eq!(chain.last().unwrap().id, first_session);
    drop(graph);
    let graph = ContextGraph::open(home.path(), root.path(), SessionChoice::New).unwrap();
    assert_ne!(graph.session_id(), first_session);
}

mod compose {
    use super::*;
    use batho_ctx::compose::{ComposeFormat, ComposeRequest, compose};
    use batho_ctx::tokens;

    fn session_with_reads() -> (
        tempfile::TempDir,
        tempfile::TempDir,
        ContextGraph,
        String,
        String,
    ) {
        let home = tempfile::tempdir().unwrap();
        let root = project();
        let mut body = String::new();
        for i in 0..40 {
            body.push_str(&format!(
                "int step_{i}(int x) {{\n    return x * {i} + {i};\n}}\n\n"
            ));
        }
        std::fs::write(root.path().join("src/steps.c"), body).unwrap();
        let mut graph = ContextGraph::open(home.path(), root.path(), SessionChoice::New).unwrap();
        let read = read_file(
            &mut graph,
            &ReadRequest {
                path: "src/steps.c".into(),
                budget_tokens: Some(40),
                ..ReadRequest::default()
            },
        )
        .unwrap();
        let remark = note(&mut graph, "step_7 multiplies by seven", None).unwrap();
        (home, root, graph, read.node_id, remark.node_id)
    }

    #[test]
    fn the_block_never_exceeds_the_budget_and_the_manifest_accounts_for_every_candidate() {
        let (_home, _root, mut graph, read, remark) = session_with_reads();
        for budget in [0, 10, 33, 60, 200, 1000, 100_000] {
            for format in [ComposeFormat::Raw, ComposeFormat::Outline] {
                let outcome = compose(
                    &mut graph,
                    &ComposeRequest {
                        node_ids: vec![read.clone(), remark.clone()],
                        budget_tokens: budget,
                        format,
                        query: Some("step_7".into()),
                        depth: Some(1),
                    },
                )
                .unwrap();
                assert!(
                    outcome.tokens <= budget,
                    "{budget} {format:?}: {}",
                    outcome.tokens
                );
                assert_eq!(outcome.tokens, tokens::count(&outcome.content));
                let manifest = &outcome.manifest;
                for id in &manifest.truncated {
                    assert!(manifest.included.contains(id));
                }
                for dropped in &manifest.dropped {
                    assert!(!manifest.included.contains(&dropped.id), "{dropped:?}");
                    assert!(!dropped.reason.is_empty());
                }
                if budget >= 100_000 && format == ComposeFormat::Raw {
                    assert!(
                        outcome.content.contains("return x * 39 + 39;"),
                        "{}\n{manifest:?}",
                        outcome.content
                    );
                    assert!(manifest.truncated.is_empty());
                }
            }
        }
    }

    #[test]
    fn the_query_ranks_the_relevant_chunk_first() {
        let (_home, _root, mut graph, read, _remark) = session_with_reads();
        let outcome = compose(
            &mut graph,
            &ComposeRequest {
                node_ids: vec![read],
                budget_tokens: 60,
                format: ComposeFormat::Raw,
                query: Some("step_23".into()),
                depth: None,
            },
        )
        .unwrap();
        assert!(
            outcome.content.contains("int step_23("),
            "{}",
            outcome.content
        );
        assert!(!outcome.manifest.dropped.is_empty());
    }

    #[test]
    fn unknown_seeds_are_reported() {
        let (_home, _root, mut graph, _read, remark) = session_with_reads();
        let outcome = compose(
            &mut graph,
            &ComposeRequest {
                node_ids: vec!["n424242".into(), remark.clone()],
                budget_tokens: 500,
                ..ComposeRequest::default()
            },
        )
        .unwrap();
        assert_eq!(outcome.manifest.included, [remark]);
        assert_eq!(outcome.manifest.dropped[0].reason, "node not found");
        assert!(
            compose(
                &mut graph,
                &ComposeRequest {
                    node_ids: vec!["n424242".into()],
                    budget_tokens: 500,
                    ..ComposeRequest::default()
                },
            )
            .is_err()
        );
    }
}

#[test]
fn pruning_keeps_the_record_and_drops_the_text() {
    let home = tempfile::tempdir().unwrap();
    let root = project();
    let mut graph = ContextGraph::open(home.path(), root.path(), SessionChoice::New).unwrap();
    let old = note(&mut graph, "an old finding about locks", Some("old")).unwrap();
    let outcome =
        batho_ctx::lookup::prune_older_than(&mut graph, batho_ctx::graph::now_ms() + 1).unwrap();
    assert_eq!(outcome.pruned, 1);
    assert_eq!(
        outcome.text_chars,
        "an old finding about locks".chars().count() as i64
    );
    let record = graph.node(&old.node_id).unwrap();
    assert_eq!(
        record.get("status"),
        Some(&batho_engine::query::Value::from("pruned"))
    );
    assert_eq!(
        record.get("title"),
        Some(&batho_engine::query::Value::from("old"))
    );
    assert!(!record.contains_key("text"));
    assert!(
        recent(&mut graph, &Filters::default(), None)
            .unwrap()
            .is_empty()
    );
    assert!(
        search(&mut graph, "locks", &Filters::default(), None)
            .unwrap()
            .is_empty()
    );
    let pruned = Filters {
        status: Some(vec![NodeStatus::Pruned]),
        ..Filters::default()
    };
    assert_eq!(recent(&mut graph, &pruned, None).unwrap().len(), 1);
    let again =
        batho_ctx::lookup::prune_older_than(&mut graph, batho_ctx::graph::now_ms() + 1).unwrap();
    assert_eq!(again.pruned, 0);
}

#[test]
fn a_read_goes_stale_when_its_file_changes_and_live_again_when_it_comes_back() {
    let home = tempfile::tempdir().unwrap();
    let root = project();
    let file = root.path().join("src/lock.c");
    let original = std::fs::read_to_string(&file).unwrap();
    let mut graph = ContextGraph::open(home.path(), root.path(), SessionChoice::New).unwrap();
    let request = ReadRequest {
        path: "src/lock.c".into(),
        ..ReadRequest::default()
    };
    let first = read_file(&mut graph, &request).unwrap();
    let status_of = |graph: &mut ContextGraph, id: &str| match &graph.node(id).unwrap()["status"] {
        batho_engine::query::Value::String(status) => status.clone(),
        other => panic!("status {other:?}"),
    };
    // Saved again unchanged (a new modification time): still live.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&file, &original).unwrap();
    assert!(
        batho_ctx::stale::mark_stale_reads(&mut graph)
            .unwrap()
            .is_empty()
    );
    assert_eq!(status_of(&mut graph, &first.node_id), "live");

    std::fs::write(&file, original.replace("*l = 1", "*l = 2")).unwrap();
    let listed = search(&mut graph, "take_lock", &Filters::default(), None).unwrap();
    assert!(!listed.is_empty());
    assert!(
        listed.iter().all(|n| n.status.as_deref() == Some("stale")),
        "{listed:?}"
    );
    assert_eq!(status_of(&mut graph, &first.node_id), "stale");
    let composed = batho_ctx::compose::compose(
        &mut graph,
        &batho_ctx::compose::ComposeRequest {
            node_ids: vec![first.node_id.clone()],
            budget_tokens: 500,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(composed.content.contains("[stale]"), "{}", composed.content);

    // Back to what was read: the cached read is current again.
    std::fs::write(&file, &original).unwrap();
    let again = read_file(&mut graph, &request).unwrap();
    assert!(again.cached);
    assert_eq!(again.node_id, first.node_id);
    assert_eq!(status_of(&mut graph, &first.node_id), "live");
    assert!(
        recent(&mut graph, &Filters::default(), None)
            .unwrap()
            .iter()
            .all(|n| n.status.is_none())
    );

    // Gone: stale; read again after a change: superseded by the new read.
    std::fs::remove_file(&file).unwrap();
    assert_eq!(
        batho_ctx::stale::mark_stale_reads(&mut graph).unwrap(),
        vec![first.node_id.clone()]
    );
    std::fs::write(&file, original.replace("drop_lock", "release_lock")).unwrap();
    let changed = read_file(&mut graph, &request).unwrap();
    assert!(!changed.cached);
    assert_eq!(status_of(&mut graph, &first.node_id), "superseded");
    assert_eq!(status_of(&mut graph, &changed.node_id), "live");
}
