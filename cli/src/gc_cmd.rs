//! `batho gc`: space use, pruning the run history, reclaiming unneeded files.

use std::path::{Path, PathBuf};

use batho_engine::query::{QueryError, WritableDatabase};

use batho_engine::maintenance::gc::{self, PruneOptions};
use clap::{Args, Subcommand};
use serde_json::json;

use crate::Failure;
use crate::output::{human_bytes, run_json};
use crate::runs_cmd::{batho_dir, storage_failure};

#[derive(Args, Debug)]
pub(crate) struct GcArgs {
    #[command(subcommand)]
    action: GcAction,
}

#[derive(Subcommand, Debug)]
enum GcAction {
    /// Sizes, generations, runs and reclaimable bytes.
    Status {
        /// Repository root or its `.batho` folder (default: the current directory).
        path: Option<PathBuf>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove runs from the history (the run of the current generation is always kept).
    Prune {
        /// Repository root or its `.batho` folder (default: the current directory).
        path: Option<PathBuf>,
        /// Remove runs that ended more than N days ago.
        #[arg(long, value_name = "N", required_unless_present = "run")]
        older_than_days: Option<u64>,
        /// Remove this run.
        #[arg(long, value_name = "UUID", conflicts_with = "older_than_days")]
        run: Option<String>,
        /// Show what would be removed; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Fold the current generation's delta layer (written by patches) into a new base.
    Compact {
        /// Repository root, its `.batho` folder or a writable graph's folder (default: the
        /// current directory).
        path: Option<PathBuf>,
        /// Show what would be folded; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete manifests and segments no retained run or the current generation needs.
    Reclaim {
        /// Repository root, its `.batho` folder or a writable graph's folder (default: the
        /// current directory).
        path: Option<PathBuf>,
        /// Show what would be deleted; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}

fn writable_failure(e: QueryError) -> Failure {
    Failure {
        message: e.to_string(),
        hint: None,
        code: 2,
    }
}

/// `batho gc compact` on a writable graph: folds its log into a new checkpoint.
fn compact_writable_graph(path: &Path, dry_run: bool, json: bool) -> Result<(), Failure> {
    let mut db = WritableDatabase::open(path).map_err(writable_failure)?;
    let (nodes, relationships) = db.counts();
    let info = if dry_run {
        None
    } else {
        Some(db.checkpoint().map_err(writable_failure)?)
    };
    if json {
        print_json(&json!({
            "dry_run": dry_run,
            "nodes": nodes,
            "relationships": relationships,
            "generation": info.as_ref().map(|i| i.generation),
            "bytes_written": info.as_ref().map(|i| i.bytes),
        }));
        return Ok(());
    }
    match info {
        None => outln!(
            "would fold the log into a checkpoint of {nodes} nodes and {relationships} relationships"
        ),
        Some(info) => outln!(
            "folded the log into checkpoint {} ({} written, {nodes} nodes, {relationships} relationships); 'batho gc reclaim' frees the older ones",
            info.generation,
            human_bytes(info.bytes)
        ),
    }
    Ok(())
}

/// `batho gc reclaim` on a writable graph: deletes older checkpoints and logs.
fn reclaim_writable_graph(path: &Path, dry_run: bool, json: bool) -> Result<(), Failure> {
    let report = WritableDatabase::reclaim(path, dry_run).map_err(writable_failure)?;
    if json {
        print_json(&serde_json::to_value(&report).unwrap_or_default());
        return Ok(());
    }
    let verb = if dry_run { "would free" } else { "freed" };
    outln!(
        "{verb} {}: {} files",
        human_bytes(report.bytes),
        report.files.len()
    );
    for file in &report.files {
        outln!("  {file}");
    }
    Ok(())
}

fn print_json(v: &serde_json::Value) {
    outln!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

pub(crate) fn run(args: GcArgs) -> Result<(), Failure> {
    match args.action {
        GcAction::Status { path, json } => {
            let dir = batho_dir(path);
            let s = gc::status(&dir).map_err(|e| storage_failure(&e, &dir))?;
            if json {
                print_json(&serde_json::to_value(&s).unwrap_or_default());
                return Ok(());
            }
            outln!(
                "{}: generation {}, {} generations on disk, {} runs",
                dir.display(),
                s.current_generation,
                s.generations.len(),
                s.runs
            );
            outln!(
                "  segments:  {} files, {} (current generation: {})",
                s.segment_files,
                human_bytes(s.segment_bytes),
                human_bytes(s.live_bytes)
            );
            outln!(
                "  manifests: {} files, {}",
                s.manifest_files,
                human_bytes(s.manifest_bytes)
            );
            outln!("  total:     {}", human_bytes(s.total_bytes));
            outln!(
                "  reclaimable: {} ({:.1}%): {} generations, {} segments, {} leftover files",
                human_bytes(s.reclaimable_bytes),
                s.fragmentation * 100.0,
                s.reclaimable_generations.len(),
                s.reclaimable_segments,
                s.leftover_files
            );
            Ok(())
        }
        GcAction::Prune {
            path,
            older_than_days,
            run,
            dry_run,
            json,
        } => {
            let dir = batho_dir(path);
            let opts = PruneOptions {
                older_than_days,
                run,
                dry_run,
            };
            let r = gc::prune(&dir, &opts).map_err(|e| storage_failure(&e, &dir))?;
            if json {
                print_json(&json!({
                    "dry_run": r.dry_run,
                    "runs_pruned": r.pruned.len(),
                    "pruned": r.pruned.iter().map(run_json).collect::<Vec<_>>(),
                    "remaining_runs": r.remaining,
                    "generation": r.generation,
                    "audit": r.audit,
                }));
                return Ok(());
            }
            let verb = if r.dry_run { "would prune" } else { "pruned" };
            outln!(
                "{verb} {} runs; {} runs remain",
                r.pruned.len(),
                r.remaining
            );
            for run in &r.pruned {
                outln!("  {} (generation {})", run.uuid, run.generation);
            }
            if let Some(g) = r.generation {
                outln!("history published as generation {g}; 'batho gc reclaim' frees the space");
            }
            Ok(())
        }
        GcAction::Compact {
            path: Some(path),
            dry_run,
            json,
        } if WritableDatabase::exists(&path) => compact_writable_graph(&path, dry_run, json),
        GcAction::Reclaim {
            path: Some(path),
            dry_run,
            json,
        } if WritableDatabase::exists(&path) => reclaim_writable_graph(&path, dry_run, json),
        GcAction::Compact {
            path,
            dry_run,
            json,
        } => {
            let dir = batho_dir(path);
            let r = gc::compact(&dir, dry_run).map_err(|e| storage_failure(&e, &dir))?;
            if json {
                print_json(&serde_json::to_value(&r).unwrap_or_default());
                return Ok(());
            }
            if !r.had_delta {
                outln!("nothing to compact: the current generation is a single base layer");
                return Ok(());
            }
            let verb = if r.dry_run { "would fold" } else { "folded" };
            outln!(
                "{verb} a delta of {} appended nodes and {} edges into a new base ({} nodes, {} edges)",
                r.appended_nodes,
                r.delta_edges,
                r.node_count,
                r.edge_count
            );
            if let Some(g) = r.generation {
                outln!(
                    "committed as generation {g} ({} written); 'batho gc reclaim' frees the old layers once no run needs them",
                    human_bytes(r.bytes_written)
                );
            }
            Ok(())
        }
        GcAction::Reclaim {
            path,
            dry_run,
            json,
        } => {
            let dir = batho_dir(path);
            let r = gc::reclaim(&dir, dry_run).map_err(|e| storage_failure(&e, &dir))?;
            if json {
                print_json(&serde_json::to_value(&r).unwrap_or_default());
                return Ok(());
            }
            let verb = if r.dry_run { "would free" } else { "freed" };
            outln!(
                "{verb} {}: {} manifests, {} segments, {} leftover files",
                human_bytes(r.bytes),
                r.manifests.len(),
                r.segments.len(),
                r.leftovers.len()
            );
            if !r.manifests.is_empty() {
                let g: Vec<String> = r.manifests.iter().map(u64::to_string).collect();
                outln!("  generations: {}", g.join(", "));
            }
            let g: Vec<String> = r.remaining_generations.iter().map(u64::to_string).collect();
            outln!("  generations kept: {}", g.join(", "));
            Ok(())
        }
    }
}
