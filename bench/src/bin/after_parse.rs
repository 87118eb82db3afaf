//! The build after parsing: resolution and the write of a whole tree, timed apart from
//! the parse (which a build of the Linux kernel spends 90 of its 140 seconds in).
//!
//! The facts come from the facts cache of the tree's artifact, as `batho build` left it
//! (run one first), so each run costs seconds instead of minutes and is repeatable; the
//! work timed is the build's own code (`build::resolve_whole`, `build::commit_whole`),
//! committed to a fresh store under OUT_DIR each run (deleted first) that takes the
//! artifact's database id: `segments_as_artifact=4/4` says the graph written is byte for
//! byte the one the artifact holds (segments are named by the hash of their bytes).
//!
//! Usage: `after_parse [--threads N] [--runs R] ROOT OUT_DIR`. Prints one `key=value`
//! line per run: `resolve_ms`, `write_ms` (communities detected meanwhile, as in a
//! build), `communities_ms` and `peak_rss_kb` (the process's peak since the facts were
//! loaded: `/proc/self/clear_refs` resets it each run).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use batho_engine::build::{commit_whole, resolve_whole};
use batho_engine::discover::{DiscoverOptions, SourceFile, discover};
use batho_engine::extract::FileFacts;
use batho_engine::facts_cache::FactsCache;
use batho_engine::source::read_source;
use batho_storage::{RunKind, RunRecord, RunStatus, Store};

struct Args {
    threads: usize,
    runs: usize,
    root: PathBuf,
    out: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut runs = 3;
    let mut paths = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut number = |what: &str| -> Result<usize, String> {
            let v = it.next().ok_or(format!("{what} needs a value"))?;
            v.parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("bad {what} value {v:?}"))
        };
        match a.as_str() {
            "--threads" | "-j" => threads = number("--threads")?,
            "--runs" => runs = number("--runs")?,
            "-h" | "--help" => return Err(String::new()),
            _ if !a.starts_with('-') => paths.push(PathBuf::from(a)),
            _ => return Err(format!("unexpected argument {a:?}")),
        }
    }
    let [root, out] = <[PathBuf; 2]>::try_from(paths).map_err(|_| "need ROOT and OUT_DIR")?;
    Ok(Args {
        threads,
        runs,
        root,
        out,
    })
}

/// Every file's facts from the cache, in discovery order, on `threads` threads.
fn load(
    files: &[SourceFile],
    cache: &FactsCache,
    threads: usize,
) -> Result<Vec<FileFacts>, String> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<FileFacts>>> = files.iter().map(|_| Mutex::new(None)).collect();
    let limit = DiscoverOptions::default().max_bytes();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = files.get(k) else {
                        break;
                    };
                    let Ok(text) = read_source(&file.abs_path, limit) else {
                        continue;
                    };
                    if let Some(facts) = cache.get_full(&file.rel_path, &text.hash)
                        && let Ok(mut m) = slots[k].lock()
                    {
                        *m = Some(facts);
                    }
                }
            });
        }
    });
    let mut facts = Vec::with_capacity(files.len());
    for (file, slot) in files.iter().zip(slots) {
        match slot.into_inner().ok().flatten() {
            Some(f) => facts.push(f),
            None => {
                return Err(format!(
                    "{} is not in the facts cache: run `batho build --full` on the tree first",
                    file.rel_path
                ));
            }
        }
    }
    Ok(facts)
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// How many of the segment files under `out` the artifact at `artifact` also holds.
fn segments_shared(out: &Path, artifact: &Path) -> (usize, usize) {
    let names: Vec<_> = std::fs::read_dir(out.join("segments"))
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    let shared = names
        .iter()
        .filter(|n| artifact.join("segments").join(n).exists())
        .count();
    (shared, names.len())
}

fn one_run(
    facts: Vec<FileFacts>,
    threads: usize,
    out: &Path,
    artifact: &Path,
) -> Result<String, String> {
    let _ = std::fs::remove_dir_all(out);
    // The artifact's database id: segments are named by the hash of their bytes, which
    // include it, so a graph equal to the artifact's is written as the same files.
    std::fs::create_dir_all(out).map_err(|e| e.to_string())?;
    std::fs::copy(artifact.join("DBID"), out.join("DBID")).map_err(|e| e.to_string())?;
    let store = Store::create_or_open(out).map_err(|e| e.to_string())?;
    let mut writer = store.lock_writer().map_err(|e| e.to_string())?;
    // Best effort: resets the peak so that it is this run's.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let mark = Instant::now();
    let graph = resolve_whole(facts, threads);
    let resolve_ms = mark.elapsed().as_millis();
    let run = RunRecord {
        uuid: "after-parse".into(),
        kind: RunKind::Build,
        started_at_ms: 0,
        ended_at_ms: 0,
        status: RunStatus::Completed,
        git_commit: None,
        git_branch: None,
        node_count: graph.nodes.len() as u64,
        edge_count: graph.edges.len() as u64,
        file_count: 0,
        skipped_files: 0,
        duration_ms: 0,
        generation: 1,
        message: String::new(),
    };
    let mark = Instant::now();
    let (commit, communities_ms) =
        commit_whole(&mut writer, &graph, run).map_err(|e| e.to_string())?;
    let write_ms = mark.elapsed().as_millis();
    let (shared, segments) = segments_shared(out, artifact);
    Ok(format!(
        "resolve_ms={resolve_ms} write_ms={write_ms} communities_ms={communities_ms} \
         peak_rss_kb={} nodes={} edges={} bytes_written={} segments_as_artifact={shared}/{segments}",
        peak_rss_kb(),
        graph.nodes.len(),
        graph.edges.len(),
        commit.bytes_written
    ))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("after_parse: {e}");
            }
            eprintln!("usage: after_parse [--threads N] [--runs R] ROOT OUT_DIR");
            return ExitCode::from(2);
        }
    };
    let found = match discover(&args.root, &DiscoverOptions::default()) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("after_parse: {e}");
            return ExitCode::FAILURE;
        }
    };
    let artifact = batho_engine::build::artifact_dir(&args.root);
    let cache = FactsCache::open(&artifact);
    for run in 1..=args.runs {
        let mark = Instant::now();
        let facts = match load(&found.files, &cache, args.threads) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("after_parse: {e}");
                return ExitCode::FAILURE;
            }
        };
        let load_ms = mark.elapsed().as_millis();
        match one_run(facts, args.threads, &args.out, &artifact) {
            Ok(line) => println!(
                "run={run} files={} load_ms={load_ms} {line}",
                found.files.len()
            ),
            Err(e) => {
                eprintln!("after_parse: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
