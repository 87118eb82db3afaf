//! Extracts and resolves a C/C++ directory in memory, writes its call graph as
//! `calls.tsv`/`defs.tsv` in the ground-truth format of `ground_truth_calls.py`, and scores
//! it against a clang ground truth.
//!
//! ```text
//! cargo run --release -p batho-engine --example dump_calls -- DIR [--gt GTDIR] [--out OUTDIR]
//!     [--threads N] [--parse-only] [--callers NAME] [--show N] [--edges]
//! ```
//! Only Function/Method → Function/Method CALLS edges between repository entities are
//! written (names are simple names); `--parse-only` times a bare tree-sitter parse of the
//! same files for the throughput ratio.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use batho_engine::extract::{Extractor, FileFacts};
use batho_engine::resolve::{ResolveOptions, resolve};
use batho_schema::{Language, NodeFlags, NodeKind, RelType};

fn language_of(path: &Path) -> Option<Language> {
    match path.extension()?.to_str()? {
        "c" => Some(Language::C),
        "h" => Some(Language::C),
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => Some(Language::Cpp),
        _ => None,
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if language_of(&p).is_some() {
            out.push(p);
        }
    }
}

type Row = (String, String, String, String);

fn read_tsv(path: &Path) -> BTreeSet<Row> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let v: Vec<&str> = l.split('\t').collect();
            (v.len() == 4).then(|| {
                (
                    v[0].to_owned(),
                    v[1].to_owned(),
                    v[2].to_owned(),
                    v[3].to_owned(),
                )
            })
        })
        .collect()
}

fn main() {
    // Its raw parsers below must allocate like the extractor's.
    batho_engine::mem::install_allocators();
    let args: Vec<String> = std::env::args().collect();
    let mut dir = None;
    let mut gt = None;
    let mut out = None;
    let mut threads = 2usize;
    let mut parse_only = false;
    let mut callers: Option<String> = None;
    let mut show = 15usize;
    let mut print_edges = false;
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--gt" => {
                gt = args.get(i + 1).cloned();
                i += 1;
            }
            "--out" => {
                out = args.get(i + 1).cloned();
                i += 1;
            }
            "--threads" => {
                threads = args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(2);
                i += 1;
            }
            "--callers" => {
                callers = args.get(i + 1).cloned();
                i += 1;
            }
            "--show" => {
                show = args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(15);
                i += 1;
            }
            "--parse-only" => parse_only = true,
            "--edges" => print_edges = true,
            a => dir = Some(PathBuf::from(a)),
        }
        i += 1;
    }
    let Some(dir) = dir else {
        eprintln!(
            "usage: dump_calls DIR [--gt GTDIR] [--out OUTDIR] [--threads N] [--parse-only] [--callers NAME]"
        );
        std::process::exit(2);
    };
    let mut paths = Vec::new();
    walk(&dir, &mut paths);
    // `.h` is C++ in a directory (or its parent) that holds C++ sources.
    let cpp_dirs: std::collections::HashSet<&Path> = paths
        .iter()
        .filter(|p| language_of(p) == Some(Language::Cpp))
        .filter_map(|p| p.parent())
        .flat_map(|d| [Some(d), d.parent()])
        .flatten()
        .collect();
    let language_of = |p: &Path| match language_of(p) {
        Some(Language::C)
            if p.extension().is_some_and(|e| e == "h")
                && p.parent().is_some_and(|d| cpp_dirs.contains(d)) =>
        {
            Some(Language::Cpp)
        }
        l => l,
    };
    let t0 = Instant::now();
    let sources: Vec<(String, Language, String)> = paths
        .iter()
        .filter_map(|p| {
            let bytes = std::fs::read(p).ok()?;
            let rel = p
                .strip_prefix(&dir)
                .ok()?
                .to_string_lossy()
                .replace('\\', "/");
            Some((
                rel,
                language_of(p)?,
                String::from_utf8_lossy(&bytes).into_owned(),
            ))
        })
        .collect();
    let total: usize = sources.iter().map(|s| s.2.len()).sum();
    eprintln!(
        "read {} files, {:.1} MB in {:?}",
        sources.len(),
        total as f64 / 1e6,
        t0.elapsed()
    );

    let t1 = Instant::now();
    let threads = threads.max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut facts: Vec<FileFacts> = Vec::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    let mut ex = Extractor::new().expect("grammars load");
                    let mut c = tree_sitter::Parser::new();
                    let mut cpp = tree_sitter::Parser::new();
                    c.set_language(&tree_sitter_c::LANGUAGE.into())
                        .expect("c grammar");
                    cpp.set_language(&tree_sitter_cpp::LANGUAGE.into())
                        .expect("cpp grammar");
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((rel, lang, src)) = sources.get(k) else {
                            break;
                        };
                        if parse_only {
                            let p = if *lang == Language::Cpp {
                                &mut cpp
                            } else {
                                &mut c
                            };
                            let tree = p.parse(src, None);
                            std::hint::black_box(tree);
                        } else {
                            mine.push(ex.extract(rel, *lang, src));
                        }
                    }
                    mine
                })
            })
            .collect();
        for h in handles {
            facts.extend(h.join().expect("worker"));
        }
    });
    let t_extract = t1.elapsed();
    if parse_only {
        println!(
            "parse-only: {:.3}s  {:.1} MB/s ({} threads)",
            t_extract.as_secs_f64(),
            total as f64 / 1e6 / t_extract.as_secs_f64(),
            threads
        );
        return;
    }
    let n_ent: usize = facts.iter().map(|f| f.entities.len()).sum();
    let n_refs: usize = facts.iter().map(|f| f.refs.len()).sum();
    let heap: usize = facts.iter().map(|f| f.heap_bytes()).sum();
    let errors: u32 = facts.iter().map(|f| f.parse_errors).sum();
    let kinds = facts
        .iter()
        .flat_map(|f| f.entities.iter())
        .fold([0usize; 14], |mut a, e| {
            a[e.kind.code() as usize] += 1;
            a
        });
    let text: usize = facts
        .iter()
        .map(|f| f.text.capacity() + f.ends.capacity() * 4)
        .sum();
    eprintln!(
        "extracted in {:.3}s: {n_ent} entities (macros {}), {n_refs} refs, facts {:.1} MB (strings {:.1} MB)",
        t_extract.as_secs_f64(),
        kinds[NodeKind::Macro.code() as usize],
        heap as f64 / 1e6,
        text as f64 / 1e6
    );
    let t2 = Instant::now();
    let res = resolve(facts, &ResolveOptions::default());
    let t_resolve = t2.elapsed();
    let g = &res.graph;
    println!(
        "extract {:.3}s ({:.1} MB/s, {threads} threads)  resolve {:.3}s  total {:.3}s  entities {n_ent} refs {n_refs} facts {:.1} MB parse_errors {errors}",
        t_extract.as_secs_f64(),
        total as f64 / 1e6 / t_extract.as_secs_f64(),
        t_resolve.as_secs_f64(),
        (t_extract + t_resolve).as_secs_f64(),
        heap as f64 / 1e6
    );
    println!(
        "graph: {} nodes, {} edges; {:?}",
        g.nodes.len(),
        g.edges.len(),
        res.stats
    );

    if print_edges {
        let mut lines: Vec<String> = g
            .edges
            .iter()
            .map(|e| {
                let roles: Vec<&str> = e.roles.names().collect();
                format!(
                    "{} -{}-> {} {} {:.2} [{}] {}:{}",
                    g.id_of(&g.nodes[e.src.0 as usize]),
                    e.rel,
                    g.id_of(&g.nodes[e.dst.0 as usize]),
                    e.strategy,
                    e.confidence,
                    roles.join("|"),
                    g.str(e.file),
                    e.line
                )
            })
            .collect();
        lines.sort();
        for l in lines {
            println!("{l}");
        }
    }
    let is_fn = |k: NodeKind| matches!(k, NodeKind::Function | NodeKind::Method);
    let mut calls: BTreeSet<Row> = BTreeSet::new();
    for e in &g.edges {
        if e.rel != RelType::Calls {
            continue;
        }
        let (s, d) = (&g.nodes[e.src.0 as usize], &g.nodes[e.dst.0 as usize]);
        if is_fn(s.kind) && is_fn(d.kind) {
            calls.insert((
                g.str(s.file).to_owned(),
                g.str(s.name).to_owned(),
                g.str(d.file).to_owned(),
                g.str(d.name).to_owned(),
            ));
        }
    }
    let mut defs: BTreeSet<(String, u32, String, &str)> = BTreeSet::new();
    for n in &g.nodes {
        if is_fn(n.kind) && !n.flags.contains(NodeFlags::DECLARATION_ONLY) {
            let linkage = if n.flags.contains(NodeFlags::STATIC) {
                "static"
            } else {
                "extern"
            };
            defs.insert((
                g.str(n.file).to_owned(),
                n.start_line,
                g.str(n.name).to_owned(),
                linkage,
            ));
        }
    }
    if let Some(out) = &out {
        let _ = std::fs::create_dir_all(out);
        let mut s = String::from("caller_file\tcaller\tcallee_file\tcallee\n");
        for r in &calls {
            s.push_str(&format!("{}\t{}\t{}\t{}\n", r.0, r.1, r.2, r.3));
        }
        std::fs::write(Path::new(out).join("calls.tsv"), s).expect("write calls.tsv");
        let mut s = String::from("file\tline\tname\tlinkage\n");
        for d in &defs {
            s.push_str(&format!("{}\t{}\t{}\t{}\n", d.0, d.1, d.2, d.3));
        }
        std::fs::write(Path::new(out).join("defs.tsv"), s).expect("write defs.tsv");
    }
    if let Some(name) = &callers {
        let mut who: BTreeSet<(&str, &str)> = BTreeSet::new();
        for r in calls.iter().filter(|r| &r.3 == name) {
            who.insert((&r.0, &r.1));
        }
        println!("callers of {name}: {}", who.len());
        if let Some(gt) = &gt {
            let truth = read_tsv(&Path::new(gt).join("calls.tsv"));
            let t: BTreeSet<(&str, &str)> = truth
                .iter()
                .filter(|r| &r.3 == name)
                .map(|r| (r.0.as_str(), r.1.as_str()))
                .collect();
            let hit = who.intersection(&t).count();
            println!(
                "clang callers of {name}: {}  found {hit}  missing {:?}",
                t.len(),
                t.difference(&who).take(show).collect::<Vec<_>>()
            );
        }
    }
    let Some(gt) = gt else { return };
    let gt = Path::new(&gt);
    // Definitions.
    let gdefs: BTreeSet<(String, String)> = std::fs::read_to_string(gt.join("defs.tsv"))
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let v: Vec<&str> = l.split('\t').collect();
            (v.len() >= 3).then(|| (v[0].to_owned(), v[2].to_owned()))
        })
        .collect();
    let odefs: BTreeSet<(String, String)> =
        defs.iter().map(|d| (d.0.clone(), d.2.clone())).collect();
    let missing_defs: Vec<_> = gdefs.difference(&odefs).collect();
    println!(
        "defs: clang {} ours {} found {} missing {}",
        gdefs.len(),
        odefs.len(),
        gdefs.len() - missing_defs.len(),
        missing_defs.len()
    );
    for m in missing_defs.iter().take(show) {
        println!("  missing def {m:?}");
    }
    for (label, file) in [("syntactic", "calls_syntactic.tsv"), ("all", "calls.tsv")] {
        let truth = read_tsv(&gt.join(file));
        // Only score callers clang saw as definitions: both sides restricted to clang's defs.
        let ours: BTreeSet<&Row> = calls
            .iter()
            .filter(|r| {
                gdefs.contains(&(r.0.clone(), r.1.clone()))
                    && gdefs.contains(&(r.2.clone(), r.3.clone()))
            })
            .collect();
        let hit = truth.iter().filter(|r| ours.contains(r)).count();
        let all_calls = read_tsv(&gt.join("calls.tsv"));
        let confirmed = ours.iter().filter(|r| all_calls.contains(**r)).count();
        let confirmed_all = calls.iter().filter(|r| all_calls.contains(*r)).count();
        let p = confirmed as f64 / ours.len().max(1) as f64;
        let p_all = confirmed_all as f64 / calls.len().max(1) as f64;
        let rc = hit as f64 / truth.len().max(1) as f64;
        println!(
            "calls vs {label}: truth {} ours {} (between clang defs; {} in all) hit {hit} recall {rc:.4} precision {p:.4} (unrestricted {p_all:.4})",
            truth.len(),
            ours.len(),
            calls.len()
        );
        if label == "syntactic" {
            let fps: Vec<_> = ours.iter().filter(|r| !all_calls.contains(**r)).collect();
            println!("  false positives (not in calls.tsv either): {}", fps.len());
            let mut by_callee: HashMap<&str, usize> = HashMap::new();
            for r in &fps {
                *by_callee.entry(r.3.as_str()).or_default() += 1;
            }
            for r in fps.iter().take(show) {
                println!("  FP {r:?}");
            }
            for r in truth.iter().filter(|r| !ours.contains(r)).take(show) {
                println!("  FN {r:?}");
            }
        }
    }
}
