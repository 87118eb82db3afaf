//! `batho watch` drives the real binary: it catches up on start, re-indexes after an edit
//! settles (the new function is queryable), ignores the artifact's own writes, and refuses
//! a repository that was never built.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{arg, batho, copy_repo, run, run_ok};

/// Kills the watcher when the test ends, pass or fail.
struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Lines of the watcher's stdout, read on a thread so the test can wait with a timeout.
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The next line containing `needle`, failing after `secs` seconds.
fn wait_for(rx: &mpsc::Receiver<String>, needle: &str, secs: u64) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return line,
            Ok(line) => seen.push(line),
            Err(_) => break,
        }
    }
    panic!("no line with {needle:?} within {secs}s; saw {seen:?}");
}

/// How many functions are called `name`, through `batho query`.
fn function_count(repo: &std::path::Path, name: &str) -> String {
    let csv = run_ok(&[
        "query",
        "--repo",
        arg(repo),
        "--format",
        "csv",
        "--param",
        &format!("n={name}"),
        "MATCH (f:Function {name: $n}) RETURN count(*) AS c",
    ]);
    csv.lines().last().unwrap_or_default().trim().to_owned()
}

#[test]
fn watch_reindexes_after_an_edit_settles() {
    let (_tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let child = batho()
        .args(["watch", arg(&repo), "--debounce-ms", "200"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start batho watch");
    let mut child = Killed(child);
    let rx = lines_of(&mut child.0);
    wait_for(&rx, "Watching", 60);
    // The catch-up finds nothing to do: the artifact was just built.
    wait_for(&rx, "Up to date.", 60);
    assert_eq!(function_count(&repo, "watched_addition"), "0");

    std::fs::write(
        repo.join("watched.c"),
        "int watched_addition(int a, int b) { return a + b; }\n",
    )
    .unwrap();
    let line = wait_for(&rx, " in ", 120);
    assert!(!line.starts_with("error"), "re-index failed: {line}");
    assert_eq!(function_count(&repo, "watched_addition"), "1");

    // Its own commit must not wake it again: no further re-index without an edit.
    std::thread::sleep(Duration::from_millis(1500));
    while let Ok(line) = rx.try_recv() {
        assert!(!line.contains(" in "), "re-indexed without an edit: {line}");
    }
}

#[test]
fn watch_refuses_a_repository_without_artifact() {
    let (_tmp, repo) = copy_repo("examples/demo");
    let out = run(&["watch", arg(&repo)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no artifact at"), "{err}");
    assert!(err.contains("batho build"), "{err}");
}
