//! The ctx-tree tools timed from an MCP client, against the targets of issue 26: warm
//! round trips of `ctx_tree_note` (durable), `ctx_tree_recent` and `ctx_tree_search` on a
//! session graph of `--nodes` notes, `ctx_tree_compose` (budget 4,000) on one of
//! `--session-nodes`, `ctx_tree_read` of a C file (first reads of 7 distinct files, median,
//! and cached re-reads), and
//! `ctx_tree_grep` over `--grep-root` beside the `rg` binary on the same pattern.
//!
//! Usage: `ctx_bench [--batho PATH] [--nodes N] [--session-nodes N] [--calls N]
//! [--grep-root DIR --grep-pattern RE --grep-glob GLOB] [--first-reads-from FILE] C_FILE`
//! The graphs are filled through `batho-ctx` before the server starts (a note per
//! statement would take minutes); the texts are drawn from a Zipf-like vocabulary with a
//! fixed seed. Prints one `name=value` line.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use batho_bench::mcp_client::{McpClient, percentile};
use batho_ctx::graph::{ContextGraph, SessionChoice};
use serde_json::json;

struct Options {
    batho: PathBuf,
    nodes: usize,
    session_nodes: usize,
    calls: usize,
    grep_root: Option<PathBuf>,
    grep_pattern: String,
    grep_glob: String,
    first_reads_from: Option<PathBuf>,
    c_file: PathBuf,
}

fn options() -> Options {
    let mut options = Options {
        batho: PathBuf::from("target/release/batho"),
        nodes: 100_000,
        session_nodes: 20_000,
        calls: 200,
        grep_root: None,
        grep_pattern: String::from("mutex_lock\\("),
        grep_glob: String::from("*.c"),
        first_reads_from: None,
        c_file: PathBuf::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--batho" => options.batho = value().into(),
            "--nodes" => options.nodes = value().parse().unwrap_or_else(|_| usage()),
            "--session-nodes" => {
                options.session_nodes = value().parse().unwrap_or_else(|_| usage())
            }
            "--calls" => options.calls = value().parse().unwrap_or_else(|_| usage()),
            "--grep-root" => options.grep_root = Some(value().into()),
            "--grep-pattern" => options.grep_pattern = value(),
            "--grep-glob" => options.grep_glob = value(),
            "--first-reads-from" => options.first_reads_from = Some(value().into()),
            _ if options.c_file.as_os_str().is_empty() => options.c_file = arg.into(),
            _ => usage(),
        }
    }
    if options.c_file.as_os_str().is_empty() {
        usage();
    }
    options
}

fn usage() -> ! {
    eprintln!(
        "usage: ctx_bench [--batho PATH] [--nodes N] [--session-nodes N] [--calls N] \
         [--grep-root DIR --grep-pattern RE --grep-glob GLOB] [--first-reads-from FILE] C_FILE"
    );
    std::process::exit(2);
}

/// A deterministic generator (SplitMix64).
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut mixed = self.0;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        mixed ^ (mixed >> 31)
    }

    /// A word of a 20,000-word vocabulary, frequent words far more often (rank ≈ 1/u²).
    fn word(&mut self) -> String {
        let uniform = (self.next() % 1_000_000) as f64 / 1_000_000.0 + 1e-6;
        let rank = ((1.0 / uniform).sqrt() as u64).min(20_000);
        format!("w{rank}")
    }

    fn text(&mut self) -> String {
        let length = 30 + self.next() % 50;
        (0..length)
            .map(|_| self.word())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Fills a session graph of `project` under `home` with `count` notes.
fn fill(home: &Path, project: &Path, count: usize, seed: u64) {
    let mut graph = ContextGraph::open(home, project, SessionChoice::New).expect("open the graph");
    let mut random = Random(seed);
    for batch in 0..count.div_ceil(1000) {
        graph.begin().expect("begin");
        for _ in batch * 1000..((batch + 1) * 1000).min(count) {
            batho_ctx::lookup::note(&mut graph, &random.text(), None).expect("note");
        }
        graph.commit().expect("commit");
    }
}

/// First reads timed (of distinct copies of the C file).
const FIRST_READS: usize = 7;

fn timed(calls: usize, mut call: impl FnMut(usize)) -> Vec<Duration> {
    (0..calls)
        .map(|index| {
            let started = Instant::now();
            call(index);
            started.elapsed()
        })
        .collect()
}

/// The files read first: consecutive pieces of `--first-reads-from` of about as many lines
/// as the C file, each cut after a line that closes a top-level definition (`}` alone), so
/// that each parses as a file would (distinct files of one project, as an agent reads them);
/// or else copies of the C file one comment line apart. None is a cached read.
fn first_read_texts(options: &Options) -> Vec<String> {
    let c_text = std::fs::read_to_string(&options.c_file).expect("read the C file");
    let Some(source) = &options.first_reads_from else {
        return (0..FIRST_READS)
            .map(|copy| format!("/* copy {copy} */\n{c_text}"))
            .collect();
    };
    let lines_per_file = c_text.lines().count().max(1);
    let source = std::fs::read_to_string(source).expect("read --first-reads-from");
    let lines: Vec<&str> = source.split_inclusive('\n').collect();
    let mut pieces = Vec::new();
    let mut start = cut_after_definition(&lines, lines_per_file);
    while pieces.len() < FIRST_READS && start < lines.len() {
        let end = cut_after_definition(&lines, start + lines_per_file);
        pieces.push(lines[start..end].concat());
        start = end;
    }
    if pieces.len() < FIRST_READS {
        eprintln!(
            "--first-reads-from needs about {} lines",
            lines_per_file * (FIRST_READS + 1)
        );
        std::process::exit(2);
    }
    pieces
}

/// The index of the line after the first `}` line at or after `from` (or the end).
fn cut_after_definition(lines: &[&str], from: usize) -> usize {
    (from..lines.len())
        .find(|&at| lines[at].trim_end() == "}")
        .map_or(lines.len(), |at| at + 1)
}

fn main() {
    let options = options();
    let scratch = std::env::temp_dir().join(format!("ctx-bench-{}", std::process::id()));
    let project = scratch.join("project");
    std::fs::create_dir_all(project.join("src")).expect("scratch folder");
    std::fs::copy(&options.c_file, project.join("src/big.c")).expect("copy the C file");
    for (copy, text) in first_read_texts(&options).into_iter().enumerate() {
        std::fs::write(project.join(format!("src/copy{copy}.c")), text).expect("write a copy");
    }
    let large_home = scratch.join("home-large");
    let session_home = scratch.join("home-session");
    let filling = Instant::now();
    fill(&large_home, &project, options.nodes, 7);
    fill(&session_home, &project, options.session_nodes, 11);
    let fill_s = filling.elapsed().as_secs_f64();
    // The filler's log pages may still be dirty: flush them now, or the server's first
    // durable commits would pay for writing them (the kernel writes them back within
    // 30 s on its own).
    let _ = Command::new("sync").status();
    let root = project.to_string_lossy().into_owned();
    let mut large = McpClient::start(
        &options.batho,
        &["--no-watch", "--root", &root],
        &large_home,
    );
    let calls = options.calls;
    // The first call opens the graph: replays its log and rebuilds its indexes.
    let opening = Instant::now();
    large.call("ctx_tree_note", json!({"content": "warm up"}));
    let open_ms = opening.elapsed().as_secs_f64() * 1e3;
    let mut note = timed(calls, |index| {
        large.call(
            "ctx_tree_note",
            json!({"content": format!("finding {index}: w3 w17 lock order")}),
        );
    });
    let mut recent = timed(calls, |_| {
        large.call("ctx_tree_recent", json!({"limit": 20}));
    });
    let mut random = Random(3);
    let queries: Vec<String> = (0..calls)
        .map(|_| format!("{} {}", random.word(), random.word()))
        .collect();
    let mut search = timed(calls, |index| {
        large.call(
            "ctx_tree_search",
            json!({"query": queries[index], "limit": 20}),
        );
    });
    let read = large.call("ctx_tree_read", json!({"path": "src/big.c"}));
    let mut first_read = timed(FIRST_READS, |copy| {
        large.call(
            "ctx_tree_read",
            json!({"path": format!("src/copy{copy}.c")}),
        );
    });
    let first_read_ms = percentile(&mut first_read, 50);
    let chunks = read["structuredContent"]["chunks"].clone();
    let mut reread = timed(calls.min(50), |_| {
        large.call("ctx_tree_read", json!({"path": "src/big.c"}));
    });
    drop(large);
    let mut session = McpClient::start(
        &options.batho,
        &["--no-watch", "--root", &root],
        &session_home,
    );
    let seeds: Vec<String> = (0..10)
        .map(|k| format!("n{}", options.session_nodes / 2 + k * 37))
        .collect();
    let mut compose_tokens = 0;
    let mut compose = timed(calls.min(100), |index| {
        let answer = session.call(
            "ctx_tree_compose",
            json!({"node_ids": seeds, "budget_tokens": 4000, "depth": 2, "query": queries[index]}),
        );
        compose_tokens = answer["structuredContent"]["meta"]["o200k_tokens"]
            .as_u64()
            .unwrap_or(0);
    });
    drop(session);
    let grep = options
        .grep_root
        .as_ref()
        .map(|grep_root| grep_side_by_side(&options, grep_root, &scratch))
        .unwrap_or_default();
    println!(
        "fill_s={fill_s:.1} nodes={} open_ms={open_ms:.0} note_p50_ms={:.3} note_p90_ms={:.3} recent_p50_ms={:.3} search_p50_ms={:.3} search_p90_ms={:.3} read_first_p50_ms={first_read_ms:.1} read_chunks={chunks} reread_p50_ms={:.3} session_nodes={} compose_p50_ms={:.2} compose_p90_ms={:.2} compose_tokens={compose_tokens}{grep}",
        options.nodes,
        percentile(&mut note, 50),
        percentile(&mut note, 90),
        percentile(&mut recent, 50),
        percentile(&mut search, 50),
        percentile(&mut search, 90),
        percentile(&mut reread, 50),
        options.session_nodes,
        percentile(&mut compose, 50),
        percentile(&mut compose, 90),
    );
    // CTX_BENCH_KEEP=1 keeps the graphs for profiling (`batho ctx --repo` on the project
    // with BATHO_HOME set to one of the homes).
    if std::env::var_os("CTX_BENCH_KEEP").is_some() {
        eprintln!("kept {}", scratch.display());
    } else {
        let _ = std::fs::remove_dir_all(&scratch);
    }
}

/// `ctx_tree_grep` and `rg` on the same tree, pattern and glob, alternating, medians of 5.
fn grep_side_by_side(options: &Options, grep_root: &Path, scratch: &Path) -> String {
    let home = scratch.join("home-grep");
    let root = grep_root.to_string_lossy().into_owned();
    let mut client = McpClient::start(&options.batho, &["--no-watch", "--root", &root], &home);
    let arguments = json!({"pattern": options.grep_pattern, "file_glob": options.grep_glob});
    client.call("ctx_tree_grep", arguments.clone());
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    let mut count = 0;
    for _ in 0..5 {
        let started = Instant::now();
        let answer = client.call("ctx_tree_grep", arguments.clone());
        ours.push(started.elapsed());
        count = answer["structuredContent"]["count"].as_u64().unwrap_or(0);
        let started = Instant::now();
        let status = Command::new("rg")
            .args([
                "-n",
                "--glob",
                &options.grep_glob,
                &options.grep_pattern,
                &root,
            ])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("run rg");
        theirs.push(started.elapsed());
        assert!(status.code().is_some_and(|code| code <= 1), "rg failed");
    }
    let (ours_ms, theirs_ms) = (percentile(&mut ours, 50), percentile(&mut theirs, 50));
    format!(
        " grep_hits={count} grep_p50_ms={ours_ms:.0} rg_p50_ms={theirs_ms:.0} grep_ratio={:.2}",
        ours_ms / theirs_ms
    )
}
