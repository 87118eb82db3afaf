//! Times `ctx_tree_read`'s library call in-process, for profiling without the MCP round
//! trip: `cargo run --release -p batho-ctx --example read_time FILE` reads FILE into a
//! fresh session graph `ROUNDS` times (default 3; the file gets one more blank line each
//! round, so no read is cached), after `NOTES` filler notes (default 0). Prints one
//! `read_ms=` line per round. Run it under `perf record --call-graph dwarf` to see where
//! a read's time goes.

fn main() {
    let file = std::env::args().nth(1).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let project = scratch.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::copy(&file, project.join("big.c")).unwrap();
    let home = scratch.path().join("home");
    let mut graph =
        batho_ctx::graph::ContextGraph::open(&home, &project, batho_ctx::graph::SessionChoice::New)
            .unwrap();
    batho_ctx::lookup::note(&mut graph, "warm", None).unwrap();
    let filler: usize = std::env::var("NOTES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    for batch in 0..filler.div_ceil(1000) {
        graph.begin().unwrap();
        for index in batch * 1000..((batch + 1) * 1000).min(filler) {
            let text = format!(
                "note {index} w{} w{} lock order w{}",
                index % 97,
                index % 13,
                index % 1009
            );
            batho_ctx::lookup::note(&mut graph, &text, None).unwrap();
        }
        graph.commit().unwrap();
    }
    let _ = batho_ctx::tokens::count("warm up");
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    for round in 0..rounds {
        std::fs::write(
            project.join("big.c"),
            std::fs::read_to_string(&file).unwrap() + &"\n".repeat(round),
        )
        .unwrap();
        let t = std::time::Instant::now();
        let request = batho_ctx::read::ReadRequest {
            path: "big.c".into(),
            ..Default::default()
        };
        let outcome = batho_ctx::read::read_file(&mut graph, &request).unwrap();
        println!(
            "read_ms={:.1} chunks={}",
            t.elapsed().as_secs_f64() * 1e3,
            outcome.chunks
        );
    }
}
