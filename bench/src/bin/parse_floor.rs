//! The parse floor: the time tree-sitter alone needs to parse every C/C++ file of a corpus.
//!
//! Batho's build does strictly more than this (extraction, resolution, storage), so the ratio
//! of a build's wall time to this floor says how much the rest costs. Files come from
//! `engine::discover` (the same ignore rules as a build), the grammar per file from
//! `engine::source::detect_language`, and the work is spread over N threads, largest files
//! first, so one huge file (the sqlite amalgamation) does not end up last on a busy thread.
//! Tree-sitter allocates with mimalloc here as in a build (`batho_engine::mem`).
//!
//! Usage: `parse_floor [--threads N] [--list-headers] [--discover-only|--no-parse|--extract|--walk]
//! ROOT`.
//! Prints one `key=value` line on stdout. `--list-headers` first prints `c|cpp<TAB>path` for
//! every `.h` file, to audit the header-language heuristic; `--discover-only` times discovery
//! alone; `--no-parse` times reading and language detection without parsing; `--extract`
//! runs a build's extractor (parse and walk) instead of the bare parse, so that a pair of
//! runs gives the walk's share (`root_errors` is then 0: the extractor keeps no tree);
//! `--walk` parses and then visits every node of each tree once with a `TreeCursor`
//! (reading its kind and nothing else) and reports `walked_nodes`: what reading a whole
//! tree through tree-sitter's own API costs any extractor, before it does anything with
//! the nodes.
//! `cpu_s` is the process's user and system time.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use batho_engine::discover::{DiscoverOptions, SourceFile, discover};
use batho_engine::source::{detect_language, read_source};
use batho_schema::Language;
use tree_sitter::Parser;

struct Args {
    threads: usize,
    list_headers: bool,
    discover_only: bool,
    no_parse: bool,
    extract: bool,
    walk: bool,
    root: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let mut root = None;
    let mut list_headers = false;
    let mut discover_only = false;
    let mut no_parse = false;
    let mut extract = false;
    let mut walk = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--threads" | "-j" => {
                let v = it.next().ok_or("--threads needs a value")?;
                threads = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("bad thread count {v:?}"))?;
            }
            "--list-headers" => list_headers = true,
            "--discover-only" => discover_only = true,
            "--no-parse" => no_parse = true,
            "--extract" => extract = true,
            "--walk" => walk = true,
            "-h" | "--help" => return Err(String::new()),
            _ if root.is_none() && !a.starts_with('-') => root = Some(PathBuf::from(a)),
            _ => return Err(format!("unexpected argument {a:?}")),
        }
    }
    Ok(Args {
        threads,
        list_headers,
        discover_only,
        no_parse,
        extract,
        walk,
        root: root.ok_or("missing ROOT")?,
    })
}

/// Per-thread totals, summed at the end.
#[derive(Default)]
struct Totals {
    files: u64,
    bytes: u64,
    c_files: u64,
    cpp_files: u64,
    with_errors: u64,
    /// Files whose whole tree is one `ERROR` node (error recovery gave up on the unit).
    root_errors: u64,
    lossy: u64,
    unreadable: u64,
    /// Nodes visited by `--walk`.
    walked_nodes: u64,
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        self.files += o.files;
        self.bytes += o.bytes;
        self.c_files += o.c_files;
        self.cpp_files += o.cpp_files;
        self.with_errors += o.with_errors;
        self.root_errors += o.root_errors;
        self.lossy += o.lossy;
        self.unreadable += o.unreadable;
        self.walked_nodes += o.walked_nodes;
    }
}

fn worker(
    files: &[SourceFile],
    next: &AtomicUsize,
    max_bytes: u64,
    list_headers: bool,
    no_parse: bool,
    extract: bool,
    walk: bool,
) -> Result<Totals, String> {
    // Only `--extract` needs one: the bare floor pays for nothing a parse does not.
    let mut extractor = match extract {
        true => Some(batho_engine::extract::Extractor::new().map_err(|e| e.to_string())?),
        false => None,
    };
    let mut c = Parser::new();
    c.set_language(&tree_sitter_c::LANGUAGE.into())
        .map_err(|e| format!("C grammar: {e}"))?;
    let mut cpp = Parser::new();
    cpp.set_language(&tree_sitter_cpp::LANGUAGE.into())
        .map_err(|e| format!("C++ grammar: {e}"))?;
    let mut t = Totals::default();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(f) = files.get(i) else { break };
        let src = match read_source(&f.abs_path, max_bytes) {
            Ok(s) => s,
            Err(_) => {
                t.unreadable += 1;
                continue;
            }
        };
        let lang = detect_language(&f.rel_path, &src.text);
        if list_headers && f.rel_path.ends_with(".h") {
            let name = if lang == Some(Language::Cpp) {
                "cpp"
            } else {
                "c"
            };
            println!("{name}\t{}", f.rel_path);
        }
        let parser = match lang {
            Some(Language::Cpp) => {
                t.cpp_files += 1;
                &mut cpp
            }
            _ => {
                t.c_files += 1;
                &mut c
            }
        };
        t.files += 1;
        t.bytes += src.bytes;
        t.lossy += u64::from(src.lossy);
        if no_parse {
            continue;
        }
        if let Some(extractor) = extractor.as_mut() {
            let lang = lang.unwrap_or(Language::C);
            let facts = extractor.extract(&f.rel_path, lang, &src.text);
            t.with_errors += u64::from(facts.parse_errors > 0);
            continue;
        }
        match parser.parse(&src.text, None) {
            Some(tree) => {
                let root = tree.root_node();
                t.with_errors += u64::from(root.has_error());
                t.root_errors += u64::from(root.is_error());
                if walk {
                    t.walked_nodes += visit_every_node(&tree);
                }
            }
            None => t.unreadable += 1,
        }
    }
    Ok(t)
}

/// Visits every node of `tree` in preorder with a cursor, reading each one's kind (summed
/// into a value the optimiser cannot drop), and returns how many it visited.
fn visit_every_node(tree: &tree_sitter::Tree) -> u64 {
    let mut cursor = tree.walk();
    let (mut nodes, mut kinds) = (0u64, 0u64);
    loop {
        nodes += 1;
        kinds = kinds.wrapping_add(u64::from(cursor.node().kind_id()));
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                std::hint::black_box(kinds);
                return nodes;
            }
        }
    }
}

/// User plus system time of this process so far, from `/proc/self/stat` (0 where that is
/// not readable).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields 14 and 15 (utime, stime) follow the parenthesised command name.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| f.get(i)?.parse::<f64>().ok())
        .sum();
    ticks / 100.0
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            if !msg.is_empty() {
                eprintln!("parse_floor: {msg}");
            }
            eprintln!(
                "usage: parse_floor [--threads N] [--list-headers] [--discover-only|--no-parse|--extract|--walk] ROOT"
            );
            return ExitCode::from(2);
        }
    };
    // Parse with the allocator a build parses with.
    batho_engine::mem::install_allocators();
    let t0 = Instant::now();
    let opts = DiscoverOptions::default();
    let mut found = match discover(&args.root, &opts) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("parse_floor: {e}");
            return ExitCode::FAILURE;
        }
    };
    let discover_s = t0.elapsed().as_secs_f64();
    if args.discover_only {
        let bytes: u64 = found.files.iter().map(|f| f.size).sum();
        println!(
            "files={} bytes={bytes} skipped={} discover_s={discover_s:.3}",
            found.files.len(),
            found.skipped.len()
        );
        return ExitCode::SUCCESS;
    }
    found.files.sort_by_key(|f| std::cmp::Reverse(f.size));
    let next = AtomicUsize::new(0);
    let t1 = Instant::now();
    let results: Vec<Result<Totals, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..args.threads)
            .map(|_| {
                s.spawn(|| {
                    worker(
                        &found.files,
                        &next,
                        opts.max_bytes(),
                        args.list_headers,
                        args.no_parse,
                        args.extract,
                        args.walk,
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("worker panicked".into())))
            .collect()
    });
    let parse_s = t1.elapsed().as_secs_f64();
    let mut total = Totals::default();
    for r in results {
        match r {
            Ok(t) => total.add(&t),
            Err(e) => {
                eprintln!("parse_floor: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let mb_s = if parse_s > 0.0 {
        total.bytes as f64 / 1e6 / parse_s
    } else {
        0.0
    };
    println!(
        "files={} bytes={} c={} cpp={} files_with_parse_errors={} root_errors={} lossy={} unreadable={} skipped={} threads={} discover_s={:.3} parse_s={:.3} mb_per_s={:.1} cpu_s={:.2}",
        total.files,
        total.bytes,
        total.c_files,
        total.cpp_files,
        total.with_errors,
        total.root_errors,
        total.lossy,
        total.unreadable,
        found.skipped.len(),
        args.threads,
        discover_s,
        parse_s,
        mb_s,
        cpu_seconds()
    );
    if args.walk {
        println!("walked_nodes={}", total.walked_nodes);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_visits_every_node_once() {
        batho_engine::mem::install_allocators();
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_c::LANGUAGE.into())
            .unwrap();
        for src in [
            "int f(int a) { return g(a, 1) + h(); }\n#define X 1\n",
            "",
            "struct s { int a; } v = { .a = 3 };",
            "int broken( { ;",
        ] {
            let tree = parser.parse(src, None).unwrap();
            assert_eq!(
                visit_every_node(&tree),
                tree.root_node().descendant_count() as u64,
                "{src:?}"
            );
        }
    }
}
