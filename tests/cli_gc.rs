//! `batho gc` driven as a user would: status, prune, reclaim, and an open reader that
//! keeps working while its generation's files are reclaimed.

mod common;

use std::fs;
use std::path::PathBuf;

use batho_engine::testing::storage::Artifact;
use common::{arg, copy_repo, run, run_json, run_ok};

/// The demo built `n` times, each time with one more function.
fn built(n: usize) -> (tempfile::TempDir, PathBuf) {
    let (tmp, repo) = copy_repo("examples/demo");
    for i in 0..n {
        if i > 0 {
            let f = repo.join("src/table.c");
            let mut text = fs::read_to_string(&f).unwrap();
            text.push_str(&format!(
                "\nint gc_test_extra_{i}(int x) {{ return x + {i}; }}\n"
            ));
            fs::write(&f, text).unwrap();
        }
        run_ok(&["build", "--full", arg(&repo)]);
    }
    (tmp, repo)
}

#[test]
fn status_prune_reclaim() {
    let (_tmp, repo) = built(3);
    let s = run_json(&["gc", "status", arg(&repo)]);
    assert_eq!(s["current_generation"], 3);
    assert_eq!(s["generations"], serde_json::json!([1, 2, 3]));
    assert_eq!(s["runs"], 3);
    assert_eq!(s["segment_files"], 12);
    assert_eq!(s["reclaimable_bytes"], 0);
    let text = run_ok(&["gc", "status", arg(&repo)]);
    assert!(
        text.contains("generation 3, 3 generations on disk, 3 runs"),
        "{text}"
    );

    let dry = run_json(&[
        "gc",
        "prune",
        arg(&repo),
        "--older-than-days",
        "0",
        "--dry-run",
    ]);
    assert_eq!(dry["runs_pruned"], 2);
    assert_eq!(
        run_json(&["runs", arg(&repo)])["total"],
        3,
        "a dry run changes nothing"
    );

    let done = run_json(&["gc", "prune", arg(&repo), "--older-than-days", "0"]);
    assert_eq!(done["runs_pruned"], 2);
    assert_eq!(done["remaining_runs"], 1);
    assert_eq!(done["generation"], 4);
    assert_eq!(done["audit"]["action"], "gc.prune");
    let runs = run_json(&["runs", arg(&repo)]);
    assert_eq!(runs["total"], 1);
    assert_eq!(
        runs["runs"][0]["generation"], 3,
        "the current generation's run is kept"
    );

    let s = run_json(&["gc", "status", arg(&repo)]);
    assert_eq!(s["reclaimable_generations"], serde_json::json!([1, 2]));
    assert_eq!(s["reclaimable_segments"], 8);
    let plan = run_json(&["gc", "reclaim", arg(&repo), "--dry-run"]);
    assert_eq!(plan["manifests"], serde_json::json!([1, 2]));
    assert!(
        repo.join(".batho/manifests/00000000000000000001.manifest")
            .exists()
    );
    let r = run_json(&["gc", "reclaim", arg(&repo)]);
    assert_eq!(r["segments"].as_array().unwrap().len(), 8);
    assert_eq!(r["remaining_generations"], serde_json::json!([3, 4]));
    assert!(r["bytes"].as_u64().unwrap() > 0);
    assert!(
        !repo
            .join(".batho/manifests/00000000000000000001.manifest")
            .exists()
    );
    let s = run_json(&["gc", "status", arg(&repo)]);
    assert_eq!(s["reclaimable_bytes"], 0);
    assert_eq!(s["segment_files"], 4);

    // The artifact still answers, and the audit chain holds both entries.
    let out = run_ok(&[
        "query",
        "--repo",
        arg(&repo),
        "MATCH (f:Function {name: 'gc_test_extra_2'}) RETURN f.name",
    ]);
    assert!(out.contains("gc_test_extra_2"), "{out}");
    let log = fs::read_to_string(repo.join(".batho/audit.log")).unwrap();
    assert_eq!(log.lines().count(), 2);
    let fix = run_ok(&["fix", arg(&repo), "--deep"]);
    assert!(fix.contains("result: clean"), "{fix}");

    // Nothing left to do.
    let again = run_ok(&["gc", "reclaim", arg(&repo)]);
    assert!(again.starts_with("freed 0 B"), "{again}");
}

#[test]
fn the_current_run_cannot_be_pruned() {
    let (_tmp, repo) = built(2);
    let runs = run_json(&["runs", arg(&repo)]);
    let current = runs["runs"][0]["run_id"].as_str().unwrap().to_owned();
    let older = runs["runs"][1]["run_id"].as_str().unwrap().to_owned();
    let out = run(&["gc", "prune", arg(&repo), "--run", &current]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("always kept"));
    let out = run_ok(&["gc", "prune", arg(&repo), "--run", &older]);
    assert!(out.starts_with("pruned 1 runs; 1 runs remain"), "{out}");
    let out = run(&["gc", "prune", arg(&repo)]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "prune needs --older-than-days or --run"
    );
}

#[test]
fn an_open_reader_keeps_working_while_its_files_are_reclaimed() {
    let (_tmp, repo) = built(1);
    let reader = Artifact::open(&repo.join(".batho")).unwrap();
    let ids: Vec<String> = reader.nodes().map(|n| n.id().into_owned()).collect();
    let f = repo.join("src/hash.c");
    fs::write(
        &f,
        fs::read_to_string(&f).unwrap() + "\nint another(void) { return 2; }\n",
    )
    .unwrap();
    run_ok(&["build", "--full", arg(&repo)]);
    run_ok(&["gc", "prune", arg(&repo), "--older-than-days", "0"]);
    let r = run_json(&["gc", "reclaim", arg(&repo)]);
    assert_eq!(
        r["segments"].as_array().unwrap().len(),
        4,
        "generation 1's segments are gone: {r}"
    );
    let again: Vec<String> = reader.nodes().map(|n| n.id().into_owned()).collect();
    assert_eq!(again, ids);
    assert!(
        reader.verify(true).is_empty(),
        "the mapped segments are intact"
    );
    let fresh = Artifact::open(&repo.join(".batho")).unwrap();
    assert_eq!(fresh.node_count() as usize, ids.len() + 1);
}

#[test]
fn compact_folds_a_patch_delta_into_a_new_base() {
    let (_tmp, repo) = built(1);
    let dir = repo.join(".batho");
    let r = run_json(&["gc", "compact", arg(&repo)]);
    assert_eq!(r["had_delta"], false);
    assert!(run_ok(&["gc", "compact", arg(&repo)]).contains("nothing to compact"));
    // A patch commits a delta layer over the build's base (here through the storage API).
    {
        let store = batho_engine::testing::storage::Store::create_or_open(&dir).unwrap();
        let mut w = store.lock_writer().unwrap();
        w.set_delta_limit(u32::MAX);
        let a = store.open_current().unwrap();
        let frag = batho_engine::testing::storage::fuzzing::sample_fragment(&a);
        w.commit_fragment(&a, &frag, a.last_run().unwrap()).unwrap();
    }
    let before = Artifact::open(&dir).unwrap();
    assert!(before.has_delta());
    let ids = |a: &Artifact| {
        let mut v: Vec<String> = a.live_nodes().map(|n| n.id().into_owned()).collect();
        v.sort();
        v
    };
    let dry = run_json(&["gc", "compact", "--dry-run", arg(&repo)]);
    assert_eq!(dry["had_delta"], true);
    assert_eq!(dry["generation"], serde_json::Value::Null);
    assert!(Artifact::open(&dir).unwrap().has_delta());
    let r = run_json(&["gc", "compact", arg(&repo)]);
    assert_eq!(r["had_delta"], true);
    assert_eq!(r["generation"], before.generation() + 1);
    let after = Artifact::open(&dir).unwrap();
    assert!(!after.has_delta());
    assert_eq!(ids(&after), ids(&before));
    assert_eq!(after.verify(true), vec![]);
    assert!(after.last_run().unwrap().message.starts_with("gc compact:"));
}

#[test]
fn gc_compacts_and_reclaims_a_writable_graph() {
    let tmp = tempfile::tempdir().unwrap();
    let graph = tmp.path().join("notes");
    let out = common::batho_ql(
        &["--new".as_ref(), graph.as_os_str()],
        "CREATE (:Note {n: 1});\n:checkpoint\nCREATE (:Note {n: 2});\n",
        tmp.path(),
    );
    assert!(out.status.success());
    let out = run_ok(&["gc", "compact", arg(&graph)]);
    assert!(
        out.contains("folded the log into checkpoint 2") && out.contains("2 nodes"),
        "{out}"
    );
    let files = |dir: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "LOCK")
            .collect();
        names.sort();
        names
    };
    assert_eq!(files(&graph).len(), 6, "{:?}", files(&graph));
    let out = run_ok(&["gc", "reclaim", "--dry-run", arg(&graph)]);
    assert!(
        out.contains("would free") && out.contains(": 3 files"),
        "{out}"
    );
    assert_eq!(files(&graph).len(), 6, "a dry run deleted");
    let out = run_ok(&["gc", "reclaim", arg(&graph)]);
    assert!(
        out.contains("freed") && out.contains("wal-0.log") && out.contains("wal-1.log"),
        "{out}"
    );
    let left = files(&graph);
    assert_eq!(left.len(), 3, "{left:?}");
    assert!(
        left.iter().any(|n| n.starts_with("checkpoint-2-"))
            && left.contains(&"wal-2.log".to_string())
    );
    let out = run_ok(&[
        "query",
        "--repo",
        arg(&graph),
        "--format",
        "csv",
        "MATCH (n:Note) RETURN sum(n.n) AS s",
    ]);
    assert_eq!(out.replace("\r\n", "\n"), "s\n3\n");
}
