//! `batho delta`: the node-level changes one run made (its generation against the one
//! current before it), with the statistics of the tool contract; and the printing that
//! `batho diff` shares.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use batho_engine::diff::{
    ChangeKind, DiffError, DiffFilter, NodeChange, NodeSnapshot, RunDiff, diff_runs, resolve_delta,
};
use clap::Args;
use serde_json::{Value, json};

use crate::output::{run_json, run_kind_name};
use crate::runs_cmd::batho_dir;
use crate::{Failure, no_artifact};

#[derive(Args, Debug)]
pub(crate) struct DeltaArgs {
    /// Repository root or its `.batho` folder (default: the current directory).
    path: Option<PathBuf>,
    /// Run id or unique prefix (default: the latest run with a predecessor).
    #[arg(long, value_name = "ID")]
    run: Option<String>,
    /// Only changes of this kind.
    #[arg(long, value_name = "KIND", value_parser = ["added", "removed", "modified", "renamed"])]
    kind: Option<String>,
    /// Only changes in this file (or under this path prefix).
    #[arg(long, value_name = "PATH")]
    file: Option<String>,
    /// Most changes to print.
    #[arg(long, value_name = "N", default_value_t = 100)]
    limit: usize,
    /// Matching changes to skip.
    #[arg(long, value_name = "N", default_value_t = 0)]
    offset: usize,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

/// A diff error as a CLI failure: 2 for a missing or unreadable artifact, 1 otherwise.
pub(crate) fn diff_failure(e: &DiffError, dir: &Path) -> Failure {
    if let DiffError::NoArtifact { path } = e {
        return no_artifact(path);
    }
    Failure {
        message: e.to_string(),
        hint: match e {
            DiffError::UnknownRun { .. } => e
                .hint()
                .map(|newest| format!("list runs with 'batho runs'; {newest}")),
            e => crate::advice::failure_hint(e.hint().as_deref(), e.remedy(), dir),
        },
        code: if e.is_client_error() { 1 } else { 2 },
    }
}

pub(crate) fn run(args: DeltaArgs) -> Result<(), Failure> {
    let dir = batho_dir(args.path);
    let pair = resolve_delta(&dir, args.run.as_deref()).map_err(|e| diff_failure(&e, &dir))?;
    let filter = DiffFilter {
        kinds: args
            .kind
            .as_deref()
            .and_then(ChangeKind::parse)
            .into_iter()
            .collect(),
        file: args.file,
        entity: None,
        offset: args.offset,
        limit: Some(args.limit),
    };
    let d = diff_runs(&dir, &pair, &filter).map_err(|e| diff_failure(&e, &dir))?;
    if args.json {
        print_json(&d, &filter);
    } else {
        out!("{}", text(&d, &filter, false));
    }
    Ok(())
}

fn snapshot_json(s: &NodeSnapshot) -> Value {
    json!({
        "id": s.id, "name": s.name, "kind": s.kind, "file": s.file,
        "start_line": s.start_line, "end_line": s.end_line, "signature": s.signature,
    })
}

pub(crate) fn change_json(c: &NodeChange) -> Value {
    let cur = c.current();
    json!({
        "change": c.change.name(),
        "id": cur.id, "name": cur.name, "kind": cur.kind, "file": cur.file,
        "start_line": cur.start_line, "end_line": cur.end_line,
        "changed": c.changed,
        "before": c.before.as_ref().map(snapshot_json),
        "after": c.after.as_ref().map(snapshot_json),
    })
}

pub(crate) fn print_json(d: &RunDiff, filter: &DiffFilter) {
    let g = &d.diff;
    let v = json!({
        "run": d.run.as_ref().map(run_json),
        "base_run": d.base_run.as_ref().map(run_json),
        "generation": g.new_generation,
        "base_generation": g.old_generation,
        "stats": g.stats,
        "files": g.files,
        "total": g.total,
        "matching": g.matching,
        "offset": filter.offset,
        "limit": filter.limit,
        "has_more": filter.offset + g.changes.len() < g.total,
        "changes": g.changes.iter().map(change_json).collect::<Vec<_>>(),
        "elapsed_ms": g.elapsed_ms,
    });
    outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
}

fn lines(s: &NodeSnapshot) -> String {
    if s.end_line > s.start_line {
        format!("L{}-{}", s.start_line, s.end_line)
    } else {
        format!("L{}", s.start_line)
    }
}

fn side(s: &NodeSnapshot) -> String {
    let file = if s.file.is_empty() {
        "<external>"
    } else {
        &s.file
    };
    format!("{} [{}] {file}:{}", s.id, s.kind, lines(s))
}

/// The report: header, statistics, changes (with before/after lines when `detail`).
pub(crate) fn text(d: &RunDiff, filter: &DiffFilter, detail: bool) -> String {
    let g = &d.diff;
    let st = &g.stats;
    let mut out = String::new();
    let who = |r: Option<&batho_engine::maintenance::RunRecord>, g: u64| match r {
        Some(r) => format!(
            "run {} ({}, {} UTC{}, generation {g})",
            r.uuid,
            run_kind_name(r.kind),
            batho_engine::status::utc_timestamp(r.started_at_ms),
            r.git_commit
                .as_deref()
                .map(|c| format!(", commit {}", &c[..c.len().min(12)]))
                .unwrap_or_default(),
        ),
        None => format!("generation {g}"),
    };
    let _ = writeln!(
        out,
        "Changes of {}\n       since {}",
        who(d.run.as_ref(), g.new_generation),
        who(d.base_run.as_ref(), g.old_generation)
    );
    let _ = writeln!(
        out,
        "Nodes: {} added, {} removed, {} modified, {} renamed ({} only moved lines)",
        st.nodes_added, st.nodes_removed, st.nodes_modified, st.nodes_renamed, st.nodes_moved
    );
    let _ = writeln!(
        out,
        "Files: {} changed ({} added, {} removed, {} modified; {} skipped as unchanged by hash)",
        st.files_changed(),
        st.files_added,
        st.files_removed,
        st.files_modified,
        st.files_skipped_by_hash
    );
    let by_type: Vec<String> = st
        .edges_by_type
        .iter()
        .map(|(t, c)| format!("{t} +{} -{}", c.added, c.removed))
        .collect();
    let _ = writeln!(
        out,
        "Relationships: {} added, {} removed{}",
        st.edges_added,
        st.edges_removed,
        if by_type.is_empty() {
            String::new()
        } else {
            format!(" ({})", by_type.join(", "))
        }
    );
    let _ = writeln!(out, "Compared in {} ms", g.elapsed_ms);
    if g.changes.is_empty() {
        let _ = writeln!(
            out,
            "\n{}",
            if g.total == 0 {
                "No matching changes."
            } else {
                "No changes on this page."
            }
        );
        return out;
    }
    out.push('\n');
    for c in &g.changes {
        let cur = c.current();
        match (c.change, &c.before) {
            (ChangeKind::Renamed, Some(b)) => {
                let _ = writeln!(out, "{:<9} {} -> {}", c.change.name(), b.id, side(cur));
            }
            _ => {
                let why = if c.changed.is_empty() {
                    String::new()
                } else {
                    format!("  ({})", c.changed.join(", "))
                };
                let _ = writeln!(out, "{:<9} {}{why}", c.change.name(), side(cur));
            }
        }
        if detail && let (Some(b), Some(a)) = (&c.before, &c.after) {
            let _ = writeln!(out, "          before: {} {}", lines(b), b.signature);
            let _ = writeln!(out, "          after:  {} {}", lines(a), a.signature);
        }
    }
    let (from, to) = (filter.offset + 1, filter.offset + g.changes.len());
    if g.total > g.changes.len() {
        let _ = writeln!(
            out,
            "\n(changes {from}-{to} of {}; --offset {to} for more)",
            g.total
        );
    }
    out
}
