//! The exit codes of docs/cli.md ("Exit codes"), the same for every verb: without an
//! artifact, for a path that does not exist, for a tree with nothing to index; and no
//! verb panics when its standard output is a closed pipe (`batho runs | head -1`).

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{arg, batho, copy_repo, run, run_ok};

/// Every verb that reads an artifact, as arguments around a PATH (`{}`).
const VERBS_NEEDING_AN_ARTIFACT: &[&[&str]] = &[
    &["patch", "{}"],
    &["status", "{}"],
    &["query", "--repo", "{}", "RETURN 1"],
    &["runs", "{}"],
    &["delta", "{}"],
    &["diff", "{}", "--since", "1"],
    &["fix", "{}"],
    &["gc", "status", "{}"],
    &["gc", "prune", "{}", "--older-than-days", "1"],
    &["gc", "compact", "{}"],
    &["gc", "reclaim", "{}"],
    &["watch", "{}"],
    &["export", "{}"],
    &["export", "{}", "--output", "out.tar"],
];

fn with_path<'a>(verb: &[&'a str], path: &'a str) -> Vec<&'a str> {
    verb.iter()
        .map(|a| if *a == "{}" { path } else { a })
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `batho-ql PATH` reading `script` from standard input.
fn batho_ql(path: &Path, script: &str, stdout: Stdio) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_batho-ql"))
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("failed to start batho-ql");
    let mut input = child.stdin.take().unwrap();
    // A batho-ql that refuses its path exits before reading: the script then meets a
    // closed pipe, which is not the test's concern (its exit code and output are).
    if let Err(e) = input.write_all(script.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    drop(input);
    child.wait_with_output().unwrap()
}

#[test]
fn every_verb_without_an_artifact_exits_2_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for verb in VERBS_NEEDING_AN_ARTIFACT {
        let args = with_path(verb, arg(&empty));
        let out = batho()
            .args(&args)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("no artifact at"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("batho build"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(!empty.join(".batho").exists(), "{args:?} wrote an artifact");
    }
    let out = batho_ql(&empty, "RETURN 1;\n", Stdio::piped());
    assert_eq!(out.status.code(), Some(2), "batho-ql: {}", stderr(&out));
    assert!(stderr(&out).contains("no artifact at"), "{}", stderr(&out));
}

#[test]
fn a_path_that_does_not_exist_exits_2_without_advising_a_build() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-repo");
    let mut verbs: Vec<Vec<&str>> = VERBS_NEEDING_AN_ARTIFACT
        .iter()
        .map(|v| with_path(v, arg(&missing)))
        .collect();
    verbs.push(vec!["build", arg(&missing)]);
    verbs.push(vec!["mcp", "--root", arg(&missing)]);
    for args in verbs {
        let out = batho()
            .args(&args)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        // Building a folder that is not there fails too: that advice would mislead.
        assert!(
            !stderr(&out).contains("batho build"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(!missing.exists(), "{args:?} created the folder");
    }
    let out = batho_ql(&missing, "RETURN 1;\n", Stdio::piped());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
}

#[test]
fn building_a_tree_without_c_or_cpp_files_fails_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let docs = tmp.path().join("docs-only");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("README.md"), "# not code\n").unwrap();
    std::fs::write(docs.join("build.py"), "print('hi')\n").unwrap();
    for repo in [&empty, &docs] {
        for args in [vec!["build", arg(repo)], vec!["build", "--full", arg(repo)]] {
            let out = run(&args);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
            let err = stderr(&out);
            assert!(err.contains("no C or C++ source file"), "{err}");
            assert!(out.stdout.is_empty(), "{args:?} printed a result");
            assert!(!repo.join(".batho").exists(), "{args:?} wrote an artifact");
        }
    }
}

#[test]
fn load_into_a_missing_folder_creates_nothing() {
    let (tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let archive = tmp.path().join("demo.tar");
    run_ok(&["export", arg(&repo), "--output", arg(&archive)]);
    let target = tmp.path().join("missing").join("sub");
    let out = run(&["load", arg(&archive), arg(&target)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
    assert!(!tmp.path().join("missing").exists());
    // An existing folder without an artifact is what load is for.
    let fresh = tmp.path().join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    run_ok(&["load", arg(&archive), arg(&fresh)]);
    run_ok(&["status", arg(&fresh)]);
}

/// A standard output whose reading end is already closed: every write fails with EPIPE.
fn closed_stdout() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    Stdio::from(writer)
}

#[test]
fn no_verb_panics_on_a_closed_stdout() {
    let (tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let archive = tmp.path().join("demo.tar");
    run_ok(&["export", arg(&repo), "--output", arg(&archive)]);
    let fresh = tmp.path().join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    let (_other_tmp, other) = copy_repo("examples/demo");
    std::fs::write(repo.join("src/extra.c"), "int extra(void) { return 1; }\n").unwrap();
    let r = arg(&repo);
    let verbs: Vec<Vec<&str>> = vec![
        vec!["build", arg(&other)],
        vec!["patch", r],
        vec!["status", r],
        vec!["status", r, "--json"],
        vec!["query", "--repo", r, "MATCH (f:Function) RETURN f.name"],
        vec![
            "query",
            "--repo",
            r,
            "--format",
            "json",
            "MATCH (f) RETURN f",
        ],
        vec!["runs", r],
        vec!["delta", r],
        vec!["diff", r, "--since", "1"],
        vec!["fix", r],
        vec!["gc", "status", r],
        vec!["gc", "reclaim", r, "--dry-run"],
        vec!["export", r],
        vec!["export", r, "--view", "agent"],
        vec!["load", arg(&archive), arg(&fresh)],
        vec!["--help"],
    ];
    for args in verbs {
        let out = batho()
            .args(&args)
            .stdout(closed_stdout())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    }
    let out = batho_ql(
        &repo,
        ":help\nMATCH (f:Function) RETURN f.name;\n",
        closed_stdout(),
    );
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
