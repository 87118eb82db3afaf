//! `batho delta`, `batho diff` and `AT GENERATION` queries driven as a user would, on a
//! copy of examples/demo built, edited (a rename, a change, an addition) and rebuilt.

mod common;

use std::path::{Path, PathBuf};

use common::{arg, copy_repo, run, run_json, run_ok};

fn edit(root: &Path, file: &str, from: &str, to: &str) {
    let p = root.join(file);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{file} lacks {from:?}");
    std::fs::write(&p, text.replace(from, to)).unwrap();
}

/// The demo built twice: `mix` renamed to `mix64`, `hash_djb2` changed, `hash_zero` added.
fn edited() -> (tempfile::TempDir, PathBuf) {
    let (tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    edit(&repo, "src/hash.c", "mix(", "mix64(");
    edit(&repo, "src/hash.c", "h * 33 + c", "h * 31 + c");
    let p = repo.join("src/hash.c");
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str(
        "\nunsigned long hash_zero(const char *key)\n{\n    (void)key;\n    return 0;\n}\n",
    );
    std::fs::write(&p, text).unwrap();
    run_ok(&["build", "--full", arg(&repo)]);
    (tmp, repo)
}

#[test]
fn delta_and_diff_report_the_last_runs_changes() {
    let (_tmp, repo) = edited();
    let d = run_json(&["delta", arg(&repo)]);
    let st = &d["stats"];
    assert_eq!(
        (
            &st["nodes_added"],
            &st["nodes_removed"],
            &st["nodes_modified"],
            &st["nodes_renamed"]
        ),
        (&1.into(), &0.into(), &3.into(), &1.into())
    );
    assert_eq!(st["files_modified"], 1);
    assert_eq!(st["edges_by_type"]["CONTAINS"]["added"], 1);
    assert_eq!(d["base_generation"], 1);
    assert_eq!(d["generation"], 2);
    assert_eq!(d["run"]["generation"], 2);
    assert_eq!(d["total"], 5);
    let renamed: Vec<&serde_json::Value> = d["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["change"] == "renamed")
        .collect();
    assert_eq!(renamed.len(), 1);
    assert_eq!(renamed[0]["before"]["id"], "src/hash.c:mix");
    assert_eq!(renamed[0]["after"]["id"], "src/hash.c:mix64");

    let text = run_ok(&["delta", arg(&repo)]);
    assert!(
        text.contains("renamed   src/hash.c:mix -> src/hash.c:mix64 [Function] src/hash.c:L"),
        "{text}"
    );
    assert!(
        text.contains("Nodes: 1 added, 0 removed, 3 modified, 1 renamed"),
        "{text}"
    );
    assert!(
        text.contains("Relationships: 1 added, 0 removed (CONTAINS +1 -0)"),
        "{text}"
    );

    let added = run_json(&["delta", arg(&repo), "--kind", "added"]);
    assert_eq!(added["total"], 1);
    assert_eq!(added["changes"][0]["id"], "src/hash.c:hash_zero");
    let page = run_json(&["delta", arg(&repo), "--limit", "2", "--offset", "1"]);
    assert_eq!(page["changes"].as_array().unwrap().len(), 2);
    assert_eq!(page["has_more"], true);
    let none = run_json(&["delta", arg(&repo), "--file", "src/table.c"]);
    assert_eq!(none["total"], 0);

    let text = run_ok(&["diff", arg(&repo), "--entity", "src/hash.c:hash_djb2"]);
    assert!(text.contains("modified  src/hash.c:hash_djb2"), "{text}");
    assert!(text.contains("before: L"), "{text}");
    assert!(text.contains("after:  L"), "{text}");
    let since = run_json(&["diff", arg(&repo), "--since", "1", "--file", "src/hash.c"]);
    assert_eq!(since["total"], 5);
    assert!(since["run"].is_null());

    // Usage and operation errors.
    let out = run(&["diff", arg(&repo)]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["delta", arg(&repo), "--run", "zzzz"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error: Run not found: zzzz"), "{err}");
    assert!(err.contains("hint: list runs"), "{err}");
    let first = run_json(&["runs", arg(&repo)])["runs"][1]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = run(&["delta", arg(&repo), "--run", &first]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("first build"));
}

#[test]
fn time_travel_queries_and_pruned_generations() {
    let (_tmp, repo) = edited();
    let q = "MATCH (:Function {name: 'hash_fnv1a'})-[:CALLS]->(g) RETURN g.name";
    let now = run_ok(&["query", "--repo", arg(&repo), q]);
    assert!(now.contains("mix64"), "{now}");
    let then = run_ok(&[
        "query",
        "--repo",
        arg(&repo),
        &format!("AT GENERATION 1 {q}"),
    ]);
    assert!(then.contains("mix") && !then.contains("mix64"), "{then}");
    let plan = run_ok(&[
        "query",
        "--repo",
        arg(&repo),
        &format!("EXPLAIN AT GENERATION 1 {q}"),
    ]);
    assert!(plan.contains("AtGeneration(1)"), "{plan}");

    // Forget the first run and reclaim its files: its generation is gone.
    let runs = run_json(&["runs", arg(&repo)]);
    let first = runs["runs"][1]["run_id"].as_str().unwrap().to_string();
    let second = runs["runs"][0]["run_id"].as_str().unwrap().to_string();
    run_ok(&["gc", "prune", arg(&repo), "--run", &first]);
    run_ok(&["gc", "reclaim", arg(&repo)]);
    let out = run(&[
        "query",
        "--repo",
        arg(&repo),
        &format!("AT GENERATION 1 {q}"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Generation 1 was pruned") && err.contains("retained generations: 2, 3"),
        "{err}"
    );
    let out = run(&["delta", arg(&repo), "--run", &second]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("were pruned"), "{err}");
    assert!(err.contains("hint: retained generations: 2, 3"), "{err}");
}
