//! Cold open + one lookup: what an MCP server or CLI pays to answer its first question.
//!
//! Run once per fresh process (the caller times the whole process too, as it does for the
//! peers' `cscope -d -L -3`). Opens the current generation of an artifact, looks a node up by
//! stable id (`--id`) or by simple name (`--name`, every match), and counts its CALLS
//! in-edges, i.e. "who calls X". Prints one `key=value` line with in-process microseconds.
//!
//! Usage: `open_lookup DIR (--id ID | --name NAME)`; DIR is a repository (its `.batho/` is
//! used) or a `.batho` directory itself.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use batho_schema::RelType;
use batho_storage::{Artifact, NodeIdx};

enum Key {
    Id(String),
    Name(String),
}

fn parse_args() -> Result<(PathBuf, Key), String> {
    let mut dir = None;
    let mut key = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--id" => key = Some(Key::Id(it.next().ok_or("--id needs a value")?)),
            "--name" => key = Some(Key::Name(it.next().ok_or("--name needs a value")?)),
            _ if dir.is_none() && !a.starts_with('-') => dir = Some(PathBuf::from(a)),
            _ => return Err(format!("unexpected argument {a:?}")),
        }
    }
    let dir = dir.ok_or("missing DIR")?;
    let dir = if dir.join(".batho").is_dir() {
        dir.join(".batho")
    } else {
        dir
    };
    Ok((dir, key.ok_or("missing --id or --name")?))
}

fn main() -> ExitCode {
    let (dir, key) = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("open_lookup: {msg}\nusage: open_lookup DIR (--id ID | --name NAME)");
            return ExitCode::from(2);
        }
    };
    let t0 = Instant::now();
    let art = match Artifact::open(&dir) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("open_lookup: {e}");
            return ExitCode::FAILURE;
        }
    };
    let open_us = t0.elapsed().as_secs_f64() * 1e6;
    let t1 = Instant::now();
    let found: Vec<NodeIdx> = match &key {
        Key::Id(id) => art.lookup_id(id).into_iter().collect(),
        Key::Name(name) => art.lookup_name(name).collect(),
    };
    let callers: usize = found
        .iter()
        .map(|&n| {
            art.in_edges(n)
                .filter(|e| e.rel() == RelType::Calls)
                .count()
        })
        .sum();
    let lookup_us = t1.elapsed().as_secs_f64() * 1e6;
    let first = found.first().map(|&n| art.node(n).id().to_string());
    println!(
        "open_us={open_us:.0} lookup_us={lookup_us:.0} found={} callers={callers} nodes={} edges={} generation={} first_id={}",
        found.len(),
        art.node_count(),
        art.edge_count(),
        art.generation(),
        first.as_deref().unwrap_or("-"),
    );
    if found.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
