//! `batho patch` driven as a user would: no artifact, no change, one edit, and parity of
//! the patched artifact with a full build of the same edited tree (as answered by BQL).

mod common;

use std::fs;

use common::{arg, copy_repo, run, run_json, run_ok};

/// Every CALLS edge as `caller -> callee`, sorted: a query whose answer must not depend on
/// whether the artifact was patched or built.
fn calls(repo: &std::path::Path) -> Vec<String> {
    let out = run_ok(&[
        "query",
        "--repo",
        arg(repo),
        "--format",
        "csv",
        "MATCH (a)-[:CALLS]->(b) RETURN a.id, b.id",
    ]);
    let mut rows: Vec<String> = out.lines().skip(1).map(str::to_owned).collect();
    rows.sort();
    rows
}

#[test]
fn patch_without_artifact_is_a_usage_error() {
    let (_tmp, repo) = copy_repo("examples/demo");
    let out = run(&["patch", arg(&repo)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no artifact") && err.contains("batho build"),
        "{err}"
    );
}

#[test]
fn patch_reports_changes_and_matches_a_full_build() {
    let (_tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    assert_eq!(
        run_ok(&["patch", arg(&repo)]).trim(),
        "No changes detected."
    );

    let hash = repo.join("src/hash.c");
    let text = fs::read_to_string(&hash).unwrap().replace("mix(", "mix64(");
    fs::write(&hash, text).unwrap();
    fs::write(
        repo.join("src/extra.c"),
        "#include \"demo/hash.h\"\nunsigned long twice(const char *k) { return hash_djb2(k) * 2; }\n",
    )
    .unwrap();
    fs::remove_file(repo.join("src/main.cpp")).unwrap();
    let line = run_ok(&["patch", arg(&repo)]);
    let expected = format!(
        "Patched {}: 3 changes (1 added, 1 modified, 1 deleted) in ",
        repo.canonicalize().unwrap().display()
    );
    assert!(
        line.starts_with(&expected) && line.trim_end().ends_with("ms"),
        "{line}"
    );
    assert_eq!(
        run_ok(&["patch", arg(&repo)]).trim(),
        "No changes detected."
    );

    let patched = calls(&repo);
    let (_tmp2, fresh) = copy_repo("examples/demo");
    fs::copy(&hash, fresh.join("src/hash.c")).unwrap();
    fs::copy(repo.join("src/extra.c"), fresh.join("src/extra.c")).unwrap();
    fs::remove_file(fresh.join("src/main.cpp")).unwrap();
    run_ok(&["build", arg(&fresh)]);
    assert_eq!(patched, calls(&fresh));
    assert!(patched.iter().any(|c| c.contains("mix64")), "{patched:?}");

    let runs = run_json(&["runs", arg(&repo)]);
    assert_eq!(runs["runs"][0]["type"], "patch", "{runs}");
    assert!(
        runs["runs"][0]["node_count"].as_u64().unwrap() > 0,
        "{runs}"
    );
}

#[test]
fn patch_json_lists_entity_changes() {
    let (_tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let f = repo.join("src/table.c");
    let mut text = fs::read_to_string(&f).unwrap();
    text.push_str("\nint table_is_empty(const table *t) { return table_count(t) == 0; }\n");
    fs::write(&f, text).unwrap();
    let out = run_json(&["patch", arg(&repo), "--mode", "mtime"]);
    assert_eq!(out["files"]["modified"], serde_json::json!(["src/table.c"]));
    assert_eq!(out["entities"]["added"], 1, "{out}");
    let change = &out["entities"]["changes"][0];
    assert_eq!(change["change"], "added");
    assert_eq!(change["after"]["name"], "table_is_empty");
    assert_eq!(out["run"]["type"], "patch", "{out}");
}
