//! `batho patch` driven as a user would: no artifact, no change, one edit, and parity of
//! the patched artifact with a full build of the same edited tree (as answered by BQL).

mod common;

use std::fs;

use common::{arg, copy_repo, run, run_json, run_ok};

/// Every CALLS edge as `caller -> callee`, sorted: a query whose answer must not depend on
/// whether the artifact was patched or built.
fn calls(repo: &std::path::Path) -> Vec<String> {
    let mut rows = common::query_csv_rows(repo, &[], "MATCH (a)-[:CALLS]->(b) RETURN a.id, b.id");
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

    common::edit_demo(&repo);
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
    common::edit_demo(&fresh);
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
    let added: Vec<&serde_json::Value> = out["entities"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|change| change["change"] == "added")
        .collect();
    assert_eq!(added.len(), 1, "{out}");
    assert_eq!(added[0]["after"]["name"], "table_is_empty");
    assert_eq!(out["run"]["type"], "patch", "{out}");
}

/// A patch from the CLI is audited as batho_patch's is (issue 28: only the MCP tool
/// appended an entry, after the engine had released the writer lock): the engine appends
/// it under the lock, chained after the previous entry; a patch with no change commits
/// nothing and audits nothing.
#[test]
fn a_cli_patch_appends_its_run_to_the_audit_log() {
    let (_tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let unchanged = run_json(&["patch", arg(&repo)]);
    assert!(unchanged["audit"].is_null(), "{unchanged}");
    let file = repo.join("src/table.c");
    let mut seqs = Vec::new();
    for round in 0..2 {
        let mut text = fs::read_to_string(&file).unwrap();
        text.push_str(&format!(
            "\nint table_extra_{round}(void) {{ return {round}; }}\n"
        ));
        fs::write(&file, text).unwrap();
        let out = run_json(&["patch", arg(&repo)]);
        let audit = &out["audit"];
        assert_eq!(audit["action"], "patch", "{out}");
        let detail = audit["detail"].as_str().unwrap();
        assert!(
            detail.contains(out["run"]["run_id"].as_str().unwrap()),
            "{detail} names the run: {out}"
        );
        seqs.push(audit["seq"].as_u64().unwrap());
    }
    assert_eq!(seqs[1], seqs[0] + 1, "entries are chained in order");
    let fix = run_ok(&["fix", arg(&repo), "--dry-run", "--format", "json"]);
    let fix: serde_json::Value = serde_json::from_str(&fix).unwrap();
    assert_eq!(fix["outcome"], "clean", "the audit chain verifies: {fix}");
}

/// `batho patch --json` counts a run's changes as `batho delta` (and get_delta) does: a
/// rename, lines shifted below it and an edited body (it used to say 0 renamed and 1
/// modified where delta said 1 renamed and 3 modified).
#[test]
fn patch_json_counts_as_delta_does() {
    let (_tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let file = repo.join("src/hash.c");
    let text = fs::read_to_string(&file).unwrap();
    let edited = format!("/* moved */\n{}", text.replace("mix(", "mix_bits(")).replace(
        "hash_djb2(const char *key)\n{",
        "hash_djb2(const char *key)\n{\n    (void)0;",
    );
    fs::write(&file, edited).unwrap();
    let patched = run_json(&["patch", arg(&repo)]);
    let delta = run_json(&["delta", arg(&repo), "--limit", "1000"]);
    let stats = &delta["stats"];
    for (ours, theirs) in [
        ("added", "nodes_added"),
        ("removed", "nodes_removed"),
        ("modified", "nodes_modified"),
        ("renamed", "nodes_renamed"),
    ] {
        assert_eq!(
            patched["entities"][ours], stats[theirs],
            "{ours}: {patched}\n{delta}"
        );
    }
    assert_eq!(stats["nodes_renamed"], 1, "{delta}");
    assert_eq!(patched["relationships"]["added"], stats["edges_added"]);
    assert_eq!(patched["relationships"]["removed"], stats["edges_removed"]);
    assert_eq!(patched["entities"]["changes"], delta["changes"]);
}

/// Every node id with its kind and lines, sorted: the whole graph as BQL sees it.
fn nodes(repo: &std::path::Path) -> Vec<String> {
    let out = run_ok(&[
        "query",
        "--repo",
        arg(repo),
        "--format",
        "csv",
        "MATCH (n) RETURN n.id, labels(n), n.start_line, n.end_line",
    ]);
    let mut rows: Vec<String> = out.lines().skip(1).map(str::to_owned).collect();
    rows.sort();
    rows
}

/// A repository large enough that one file is a small part of it, so a patch writes a
/// delta layer rather than a fresh base.
fn many_files(root: &std::path::Path, files: usize) {
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src/common.h"), "int shared(int);\n").unwrap();
    fs::write(
        root.join("src/shared.c"),
        "int shared(int x) { return x; }\n",
    )
    .unwrap();
    for i in 0..files {
        let mut text = String::from("#include \"common.h\"\n");
        for j in 0..10 {
            text.push_str(&format!(
                "static int h{i}_{j}(int x) {{ return x + {j}; }}\n\
                 int f{i}_{j}(int x) {{ return shared(h{i}_{j}(x)); }}\n"
            ));
        }
        fs::write(root.join(format!("src/file{i}.c")), text).unwrap();
    }
}

#[test]
fn patch_writes_a_delta_that_compaction_folds_without_changing_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    many_files(&repo, 30);
    run_ok(&["build", arg(&repo)]);
    fs::write(
        repo.join("src/file7.c"),
        "#include \"common.h\"\nint f7_new(int x) { return shared(x) * 2; }\n",
    )
    .unwrap();
    let out = run_ok(&["patch", arg(&repo)]);
    assert!(out.starts_with("Patched "), "{out}");
    let dry = run_json(&["gc", "compact", arg(&repo), "--dry-run"]);
    assert_eq!(
        dry["had_delta"], true,
        "a one-file patch must write a delta: {dry}"
    );
    let (patched_nodes, patched_calls) = (nodes(&repo), calls(&repo));
    assert!(patched_calls.iter().any(|r| r.contains("f7_new")));
    assert!(!patched_calls.iter().any(|r| r.contains("f7_3")));

    let compacted = run_json(&["gc", "compact", arg(&repo)]);
    assert_eq!(compacted["had_delta"], true);
    assert!(compacted["generation"].is_u64(), "{compacted}");
    assert_eq!(
        run_json(&["gc", "compact", arg(&repo), "--dry-run"])["had_delta"],
        false
    );
    assert_eq!(nodes(&repo), patched_nodes);
    assert_eq!(calls(&repo), patched_calls);
    run_ok(&["fix", "--deep", arg(&repo)]);

    // And both equal a full build of the same tree.
    run_ok(&["build", "--full", arg(&repo)]);
    assert_eq!(nodes(&repo), patched_nodes);
    assert_eq!(calls(&repo), patched_calls);
}

#[test]
fn a_patch_without_facts_cache_says_how_to_get_one() {
    let (_tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let hash = repo.join("src/hash.c");
    let edit = |n: usize| {
        let text = fs::read_to_string(&hash).unwrap();
        fs::write(
            &hash,
            format!("{text}\nint batho_note_{n}(void) {{ return {n}; }}\n"),
        )
        .unwrap();
    };
    // With the cache the build wrote: no note.
    edit(1);
    let out = run(&["patch", arg(&repo)]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("facts cache"));
    // Without it: the patch still works, and says what makes it fast again.
    fs::remove_dir_all(repo.join(".batho/facts")).unwrap();
    edit(2);
    let out = run(&["patch", arg(&repo)]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no facts cache") && err.contains("batho build --full"),
        "{err}"
    );
    // That patch started a cache, so the next one has one.
    edit(3);
    let v = run_json(&["patch", arg(&repo)]);
    assert_eq!(v["facts_cache_missing"], false);
}

/// Generated calls (`CALLS` through macros) as `caller -> callee line`, sorted.
fn generated_calls(repo: &std::path::Path) -> Vec<String> {
    let mut rows = common::query_csv_rows(
        repo,
        &[],
        "MATCH (a)-[r:CALLS]->(b) WHERE has_role(r, 'Generated') RETURN a.id, b.id, r.line",
    );
    rows.sort();
    rows
}

/// A header whose macros call through one another (functions it does not declare), a file
/// defining the callees, and a file that only invokes the outer macro.
fn macro_repo(root: &std::path::Path, inner_calls: &str) {
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(
        root.join("src/api.h"),
        format!("#define checkgc() condgc()\n#define condgc() {{ {inner_calls}; }}\n"),
    )
    .unwrap();
    fs::write(
        root.join("src/api.c"),
        "#include \"api.h\"\nvoid step(void) { }\nvoid fullgc(void) { }\n",
    )
    .unwrap();
    fs::write(
        root.join("src/user.c"),
        "#include \"api.h\"\nvoid user(void) {\n  checkgc();\n}\n",
    )
    .unwrap();
}

#[test]
fn calls_through_macros_follow_a_patch_of_the_inner_macro() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    macro_repo(&repo, "step()");
    run_ok(&["build", arg(&repo)]);
    assert_eq!(
        generated_calls(&repo),
        ["src/user.c:user,src/api.c:step,3"],
        "the invocation's line, the callee two macros down"
    );

    // Only the inner macro changes: user.c, which never names it, is re-resolved.
    macro_repo(&repo, "fullgc()");
    run_ok(&["patch", arg(&repo)]);
    let patched = generated_calls(&repo);
    assert_eq!(patched, ["src/user.c:user,src/api.c:fullgc,3"]);

    let fresh = tmp.path().join("fresh");
    macro_repo(&fresh, "fullgc()");
    run_ok(&["build", arg(&fresh)]);
    assert_eq!(patched, generated_calls(&fresh));
    assert_eq!(calls(&repo), calls(&fresh));

    // Only the invoking file changes: the header is context, read from the facts cache
    // without its references (its macro bodies' names were once dropped with them).
    let user = "#include \"api.h\"\nvoid other(void) { }\nvoid user(void) {\n  checkgc();\n}\n";
    fs::write(repo.join("src/user.c"), user).unwrap();
    fs::write(fresh.join("src/user.c"), user).unwrap();
    run_ok(&["patch", arg(&repo)]);
    run_ok(&["build", "--full", arg(&fresh)]);
    assert_eq!(
        generated_calls(&repo),
        ["src/user.c:user,src/api.c:fullgc,4"]
    );
    assert_eq!(calls(&repo), calls(&fresh));
}

/// A file whose one file-scope invocation defines a function (issue 27 item 2), the
/// functions its expansion calls, and a caller of the generated function.
fn generator_repo(root: &std::path::Path, invocation: &str, user: &str) {
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(
        root.join("src/gen.c"),
        format!("#define GEN(n) int make_##n(void) {{ return base_##n(); }}\n{invocation}\n"),
    )
    .unwrap();
    fs::write(
        root.join("src/base.c"),
        "int base_alpha(void) { return 1; }\nint base_beta(void) { return 2; }\n",
    )
    .unwrap();
    fs::write(root.join("src/user.c"), user).unwrap();
}

#[test]
fn generated_definitions_follow_a_patch_of_their_invocation() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, fresh) = (tmp.path().join("repo"), tmp.path().join("fresh"));
    let user = "int make_beta(void);\nint use(void) { return make_beta(); }\n";
    generator_repo(&repo, "GEN(alpha)", user);
    run_ok(&["build", arg(&repo)]);
    assert!(calls(&repo).contains(&"src/gen.c:make_alpha,src/base.c:base_alpha".to_owned()));

    // The invocation changes: make_alpha goes, make_beta comes, and the caller finds it.
    generator_repo(&repo, "GEN(beta)", user);
    run_ok(&["patch", arg(&repo)]);
    generator_repo(&fresh, "GEN(beta)", user);
    run_ok(&["build", arg(&fresh)]);
    let patched = calls(&repo);
    assert!(patched.contains(&"src/gen.c:make_beta,src/base.c:base_beta".to_owned()));
    assert!(patched.contains(&"src/user.c:use,src/gen.c:make_beta".to_owned()));
    assert_eq!(patched, calls(&fresh));

    // Only the caller changes: gen.c's generated function comes back from the facts cache.
    let user = "int make_beta(void);\nint use(void) {\n  return make_beta() + 1;\n}\n";
    fs::write(repo.join("src/user.c"), user).unwrap();
    fs::write(fresh.join("src/user.c"), user).unwrap();
    run_ok(&["patch", arg(&repo)]);
    run_ok(&["build", "--full", arg(&fresh)]);
    assert_eq!(calls(&repo), calls(&fresh));
    let generated = common::query_csv_rows(
        &repo,
        &[],
        "MATCH (:File)-[r:CONTAINS]->(f:Function) WHERE has_role(r, 'Generated') RETURN f.id, f.start_line",
    );
    assert_eq!(generated, ["src/gen.c:make_beta,2"]);
}
