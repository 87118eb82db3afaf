//! `batho export` and `batho load` through the real binary: the transport archive round
//! trip (export, load into another directory, same query answers), refusals and exit
//! codes, and a snapshot of the agent view of examples/demo.

mod common;

use common::{arg, copy_repo, run, run_json, run_ok};

const QUERIES: [&str; 3] = [
    "MATCH (c)-[r:CALLS]->(f:Function) RETURN c.id, f.id, r.line ORDER BY c.id, f.id, r.line",
    "MATCH (n) RETURN n.kind, count(*) AS k ORDER BY n.kind",
    "MATCH (f:File)-[:INCLUDES]->(g) RETURN f.file, g.id ORDER BY f.file, g.id",
];

fn answers(repo: &str) -> Vec<String> {
    QUERIES
        .iter()
        .map(|q| run_ok(&["query", "--repo", repo, "--format", "csv", q]))
        .collect()
}

#[test]
fn archive_round_trip_gives_the_same_answers() {
    let (tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let archive = tmp.path().join("demo.tar");
    let rep = run_json(&["export", arg(&repo), "--output", arg(&archive)]);
    assert_eq!(rep["members"].as_array().unwrap().len(), 5);
    assert!(archive.is_file());

    // Into a directory that has nothing yet: no source files, only the artifact. (The
    // folder must exist: load creates `.batho`, never the repository.)
    let other = tmp.path().join("elsewhere");
    std::fs::create_dir(&other).unwrap();
    let out = run_ok(&["load", arg(&archive), arg(&other)]);
    assert!(out.contains("Loaded"), "{out}");
    assert_eq!(answers(arg(&repo)), answers(arg(&other)));
    let runs = run_ok(&["runs", arg(&other), "--json"]);
    assert!(runs.contains("loaded from"), "{runs}");
    let fix = run(&["fix", arg(&other), "--deep", "--dry-run"]);
    assert_eq!(
        fix.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&fix.stdout)
    );

    // Loading the same archive again needs no force; a foreign database does.
    run_ok(&["load", arg(&archive), arg(&other)]);
    let (_t2, third) = copy_repo("examples/demo");
    std::fs::write(third.join("src/extra.c"), "int extra(void) { return 1; }\n").unwrap();
    run_ok(&["build", arg(&third)]);
    let refused = run(&["load", arg(&archive), arg(&third)]);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("another database") && err.contains("--force"),
        "{err}"
    );
    let before = answers(arg(&third));
    assert_ne!(before, answers(arg(&repo)));
    let forced = run_json(&["load", arg(&archive), arg(&third), "--force"]);
    assert_eq!(forced["restamped"], true);
    assert_eq!(answers(arg(&third)), answers(arg(&repo)));
}

#[test]
fn bad_archives_and_options_exit_with_2() {
    let (tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let junk = tmp.path().join("junk.tar");
    std::fs::write(&junk, vec![7u8; 4096]).unwrap();
    let out = run(&["load", arg(&junk), arg(&repo)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a batho archive"));
    let out = run(&["export", arg(&repo), "--view", "pack"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["export", arg(&tmp.path().join("nothing"))]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["export", arg(&repo), "--run", "no-such-run"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn json_views_of_demo() {
    let (tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    // The storage view streams to stdout by default.
    let storage: serde_json::Value =
        serde_json::from_str(&run_ok(&["export", arg(&repo)])).unwrap();
    assert_eq!(storage["view"], "storage");
    assert_eq!(storage["summary"]["sources_stale"], 0);
    let out = tmp.path().join("agent.json");
    let st = run_json(&[
        "export",
        arg(&repo),
        "--view",
        "agent",
        "--output",
        arg(&out),
    ]);
    assert_eq!(st["stats"]["truncated"], false);
    let text = std::fs::read_to_string(&out).unwrap();
    expect_test::expect_file!["snapshots/demo_agent_view.json"].assert_eq(&text);
}
