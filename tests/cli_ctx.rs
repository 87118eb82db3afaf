//! `batho ctx` end to end: every verb on a project's session graph, the same graph across
//! commands (one session, not one per command), JSON output and clear failures.

mod common;

use std::path::Path;
use std::process::Output;

fn ctx(home: &Path, repo: &Path, args: &[&str]) -> Output {
    common::batho()
        .env("BATHO_HOME", home)
        .arg("ctx")
        .arg("--repo")
        .arg(repo)
        .args(args)
        .output()
        .expect("start batho")
}

fn ok(home: &Path, repo: &Path, args: &[&str]) -> String {
    let out = ctx(home, repo, args);
    assert!(
        out.status.success(),
        "batho ctx {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_verb_works_on_one_session() {
    let (_tmp, repo) = common::copy_repo("examples/demo");
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let noted = ok(home, &repo, &["note", "Tables grow by doubling", "--json"]);
    let noted: serde_json::Value = serde_json::from_str(&noted).unwrap();
    let note_id = noted["nodeId"].as_str().unwrap().to_string();
    let read = ok(home, &repo, &["read", "src/table.c"]);
    let read_id = read.split_whitespace().next().unwrap().to_string();
    assert!(read.contains("src/table.c"), "{read}");
    let grep = ok(home, &repo, &["grep", "TABLE_", "--glob", "*.h"]);
    assert!(grep.contains(".h:"), "{grep}");
    let recent = ok(home, &repo, &["recent", "--kind", "note", "--json"]);
    let recent: serde_json::Value = serde_json::from_str(&recent).unwrap();
    assert_eq!(recent["results"][0]["id"], note_id.as_str());
    // One session across commands: every node hangs from the same root.
    assert_eq!(recent["meta"]["session"], noted["meta"]["session"]);
    let found = ok(home, &repo, &["search", "doubling"]);
    assert!(found.starts_with(&note_id), "{found}");
    let shown = ok(home, &repo, &["show", &note_id]);
    assert!(shown.contains("kind: \"note\""), "{shown}");
    assert!(shown.ends_with("Tables grow by doubling\n"), "{shown}");
    let composed = ok(
        home,
        &repo,
        &["compose", &read_id, "--budget", "300", "--query", "grow"],
    );
    assert!(composed.contains("manifest: {"), "{composed}");
    let pruned = ok(home, &repo, &["prune", "--older-than", "0s"]);
    assert!(pruned.starts_with("pruned "), "{pruned}");
    let after = ok(home, &repo, &["search", "doubling"]);
    assert!(after.starts_with("No stored node matches"), "{after}");
}

#[test]
fn failures_are_clear() {
    let (_tmp, repo) = common::copy_repo("examples/demo");
    let home = tempfile::tempdir().unwrap();
    // Looking at a project without a session graph says so and creates nothing.
    for verb in [
        &["show", "n1"][..],
        &["search", "lock"],
        &["recent"],
        &["prune", "--older-than", "1d"],
    ] {
        let none = ctx(home.path(), &repo, verb);
        assert_eq!(none.status.code(), Some(1), "{verb:?}");
        let stderr = String::from_utf8_lossy(&none.stderr);
        assert!(
            stderr.contains("has no session graph yet"),
            "{verb:?}: {stderr}"
        );
    }
    assert!(
        !home.path().join("ctx").exists(),
        "a look created the graph"
    );
    ok(home.path(), &repo, &["note", "a first note"]);
    let missing = ctx(home.path(), &repo, &["show", "n404"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("node not found"));
    let bad = ctx(home.path(), &repo, &["prune", "--older-than", "soon"]);
    assert_eq!(bad.status.code(), Some(2));
    let outside = ctx(home.path(), &repo, &["read", "../../etc/passwd"]);
    assert_eq!(outside.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&outside.stderr);
    assert!(stderr.contains("not a path inside"), "{stderr}");
    assert!(
        !stderr.contains("root:"),
        "errors never quote file contents"
    );
}
