//! How soon an edit is visible through `batho watch`: starts `batho watch REPO --json`,
//! then N times appends a new function to FILE and times (a) the write → the watcher's
//! `reindexed` event, (b) the write → `batho query` finding the function; and, in the same
//! run as the peer, a full `batho build --full` of the repository.
//!
//! Usage: `watch_latency [--batho PATH] [--edits N] [--debounce-ms MS] REPO FILE`
//! (FILE relative to REPO, a C file; REPO must be built and is edited in place, so give a
//! copy). Prints the medians: `edit_to_event_ms edit_to_query_ms patch_ms full_build_ms
//! debounce_ms`, and the edit→query latency minus the debounce.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn visible(batho: &Path, repo: &Path, name: &str) -> bool {
    let out = Command::new(batho)
        .args(["query", "--repo"])
        .arg(repo)
        .args(["--format", "csv", "--param", &format!("n={name}")])
        .arg("MATCH (f:Function {name: $n}) RETURN count(*) AS c")
        .output()
        .expect("run batho query");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(str::trim)
        == Some("1")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut batho, mut edits, mut debounce) = (PathBuf::from("batho"), 7usize, 300u64);
    let mut pos = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--batho" => batho = args.next().expect("--batho PATH").into(),
            "--edits" => edits = args.next().and_then(|s| s.parse().ok()).expect("--edits N"),
            "--debounce-ms" => {
                debounce = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .expect("--debounce-ms MS")
            }
            _ => pos.push(a),
        }
    }
    let [repo, file] = <[String; 2]>::try_from(pos).expect("usage: watch_latency REPO FILE");
    let repo = PathBuf::from(repo);
    let file = repo.join(file);

    let mut child = Command::new(&batho)
        .arg("watch")
        .arg(&repo)
        .args(["--json", "--debounce-ms", &debounce.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start batho watch");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel::<(Instant, Value)>();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if tx.send((Instant::now(), v)).is_err() {
                break;
            }
        }
    });
    let wait = |event: &str| -> (Instant, Value) {
        loop {
            let (t, v) = rx
                .recv_timeout(Duration::from_secs(600))
                .expect("watcher event");
            if v["event"] == event {
                return (t, v);
            }
            assert_ne!(v["event"], "failed", "watcher failed: {v}");
        }
    };
    wait("ready");
    // The catch-up: a patch that may or may not find changes.
    loop {
        let (_, v) = rx.recv_timeout(Duration::from_secs(600)).expect("catch-up");
        if v["event"] == "up_to_date" || v["event"] == "reindexed" {
            break;
        }
    }

    let (mut to_event, mut to_query, mut patch_ms) = (Vec::new(), Vec::new(), Vec::new());
    let stamp = std::process::id();
    for i in 0..edits {
        let name = format!("watch_probe_{stamp}_{i}");
        let t0 = Instant::now();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .expect("open FILE");
        writeln!(f, "\nint {name}(int x) {{ return x + {i}; }}").expect("append");
        drop(f);
        let (t1, v) = wait("reindexed");
        to_event.push((t1 - t0).as_secs_f64() * 1e3);
        patch_ms.push(v["duration_ms"].as_f64().unwrap_or(0.0));
        while !visible(&batho, &repo, &name) {
            assert!(
                t0.elapsed() < Duration::from_secs(600),
                "{name} never visible"
            );
        }
        to_query.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let _ = child.kill();
    let _ = child.wait();

    let t = Instant::now();
    let st = Command::new(&batho)
        .args(["build", "--full"])
        .arg(&repo)
        .stdout(Stdio::null())
        .status()
        .expect("batho build");
    assert!(st.success(), "full build failed");
    let full = t.elapsed().as_secs_f64() * 1e3;

    let (e, q, p) = (
        median(&mut to_event),
        median(&mut to_query),
        median(&mut patch_ms),
    );
    println!(
        "edit_to_event_ms {e:.0} edit_to_query_ms {q:.0} patch_ms {p:.0} full_build_ms {full:.0} debounce_ms {debounce}"
    );
    println!(
        "visible {:.0} ms after the debounce (target < 1000); full build / patch = {:.1}x",
        q - debounce as f64,
        full / p.max(1.0)
    );
}
