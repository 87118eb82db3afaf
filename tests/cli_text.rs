//! Keyword search and `batho ask` as a user drives them: `CALL text.search` before and
//! after `batho patch` (new, changed and removed entities found or gone, scores equal to a
//! full build of the same tree), and `batho ask` giving the `query_graph` text, its JSON,
//! its cursors and a `meta.query` that `batho query` reproduces.

mod common;

use std::path::Path;

use common::{arg, copy_repo, run, run_json, run_ok};

/// `name,score` rows of `text.search(question, 50)`.
fn search(repo: &Path, question: &str) -> Vec<String> {
    common::query_csv_rows(
        repo,
        &[format!("question={question}")],
        "CALL text.search($question, 50) YIELD node, score RETURN node.id, score",
    )
}

fn finds(rows: &[String], id: &str) -> bool {
    rows.iter()
        .any(|row| row.trim_matches('"').starts_with(id) && row.contains(&format!("{id},")))
}

#[test]
fn search_follows_patches_and_equals_a_full_build() {
    let (_tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    assert!(finds(&search(&repo, "mix"), "src/hash.c:mix"));
    assert!(finds(&search(&repo, "main"), "src/main.cpp:main"));
    assert!(search(&repo, "twice").is_empty());

    common::edit_demo(&repo);
    run_ok(&["patch", arg(&repo)]);
    let mixed = search(&repo, "mix64");
    assert!(finds(&mixed, "src/hash.c:mix64"), "{mixed:?}");
    assert!(!finds(&search(&repo, "mix"), "src/hash.c:mix"));
    assert!(finds(&search(&repo, "twice"), "src/extra.c:twice"));
    assert!(!search(&repo, "main").iter().any(|r| r.contains("main.cpp")));

    let (_tmp2, fresh) = copy_repo("examples/demo");
    common::edit_demo(&fresh);
    run_ok(&["build", arg(&fresh)]);
    for question in [
        "mix64 hash",
        "twice djb2",
        "table put key",
        "shell execute line",
    ] {
        assert_eq!(
            search(&repo, question),
            search(&fresh, question),
            "{question}"
        );
    }
}

#[test]
fn ask_prints_the_query_graph_answer() {
    let (_tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let question = "where is the hash of a table key computed";
    let text = run_ok(&["ask", question, "--repo", arg(&repo)]);
    assert!(
        text.starts_with("Traversal: BFS depth=2 | Start: ["),
        "{text}"
    );
    assert!(
        text.contains("\nNODE hash_djb2 [id=src/hash.c:hash_djb2"),
        "{text}"
    );
    assert!(text.contains("\nEDGE "), "{text}");

    let whole = run_json(&["ask", question, "--repo", arg(&repo), "--budget", "100000"]);
    let records = whole["records"].as_u64().unwrap();
    let page = run_ok(&["ask", question, "--repo", arg(&repo), "--budget", "150"]);
    let footer = page.lines().last().unwrap();
    assert!(
        footer.starts_with("(continuation: re-run with cursor "),
        "{page}"
    );
    let next: u64 = footer.split_whitespace().nth(4).unwrap().parse().unwrap();
    let rest = run_json(&[
        "ask",
        question,
        "--repo",
        arg(&repo),
        "--budget",
        "100000",
        "--cursor",
        &next.to_string(),
    ]);
    let shown = |answer: &serde_json::Value| {
        answer["nodes"].as_array().unwrap().len() + answer["edges"].as_array().unwrap().len()
    };
    assert_eq!(next as usize + shown(&rest), records as usize);

    // meta.query with meta.params, pasted into `batho query`, gives the same records.
    let query = whole["meta"]["query"].as_str().unwrap();
    let params = whole["meta"]["params"].as_object().unwrap();
    let mut args: Vec<String> = vec![
        "query".into(),
        "--repo".into(),
        arg(&repo).into(),
        "--format".into(),
        "csv".into(),
    ];
    for (name, value) in params {
        let value = value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_string);
        args.extend(["-p".into(), format!("{name}={value}")]);
    }
    args.push(query.into());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let rows = run_ok(&argv).lines().count() - 1;
    assert_eq!(rows as u64, records);
}

#[test]
fn ask_refuses_bad_flags_and_missing_artifacts() {
    let (_tmp, repo) = copy_repo("examples/demo");
    let out = run(&["ask", "hash", "--repo", arg(&repo)]);
    assert_eq!(out.status.code(), Some(2));
    run_ok(&["build", arg(&repo)]);
    let out = run(&["ask", "hash", "--repo", arg(&repo), "--depth", "9"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("depth must be between 0 and 6"));
    let out = run(&["ask", "hash", "--repo", arg(&repo), "--mode", "sideways"]);
    assert_eq!(out.status.code(), Some(2));
}

/// A repository of one C file whose definitions carry comments of each shape.
fn documented_repo() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("temporary folder");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).expect("repository folder");
    std::fs::write(
        repo.join("widget.c"),
        "/**\n * widget_free - release a gizmo and its spokes\n * @w: the widget\n */\n\
         void widget_free(void *w) {}\n\n\
         // Counts the sprockets of a widget.\n\
         int widget_count(void *w) { return 0; }\n\n\
         /* detached by a blank line */\n\n\
         int widget_plain(void) { return 1; }\n",
    )
    .expect("source file");
    (tmp, repo)
}

#[test]
fn comments_above_definitions_are_stored_and_searched() {
    let (_tmp, repo) = documented_repo();
    run_ok(&["build", arg(&repo)]);
    let docs = common::query_csv_rows(
        &repo,
        &[],
        "MATCH (f:Function) RETURN f.name, f.doc ORDER BY f.name",
    );
    assert_eq!(
        docs,
        [
            "widget_count,Counts the sprockets of a widget.",
            "widget_free,widget_free - release a gizmo and its spokes @w: the widget",
            "widget_plain,",
        ],
    );
    // Words found only in a comment find its entity.
    assert!(finds(&search(&repo, "gizmo"), "widget.c:widget_free"));
    assert!(finds(&search(&repo, "sprockets"), "widget.c:widget_count"));
    assert!(search(&repo, "detached").is_empty());

    // A patch that rewrites a comment moves the search with it.
    let source = std::fs::read_to_string(repo.join("widget.c")).expect("source");
    std::fs::write(repo.join("widget.c"), source.replace("gizmo", "doohickey"))
        .expect("edited source");
    run_ok(&["patch", arg(&repo)]);
    assert!(search(&repo, "gizmo").is_empty());
    assert!(finds(&search(&repo, "doohickey"), "widget.c:widget_free"));
}
