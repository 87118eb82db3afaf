//! `batho`: build, inspect and query Batho artifacts of C and C++ repositories.
//!
//! This binary only parses arguments and prints; every behaviour lives in `batho-engine`.
//! Errors are printed as one line (plus a hint when there is one) with a non-zero exit code.

#[macro_use]
mod stdout;

mod advice;
mod astria_cmd;
mod build_cmd;
mod ctx_cmd;
mod delta_cmd;
mod diff_cmd;
mod export_cmd;
mod fix_cmd;
mod gc_cmd;
mod load_cmd;
mod mcp_cmd;
mod output;
mod patch_cmd;
mod query_cmd;
mod runs_cmd;
mod status_cmd;
mod watch_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Batho: an embedded graph database for C and C++ code.
#[derive(Parser, Debug)]
#[command(name = "batho", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Index a repository into its artifact (<PATH>/.batho).
    Build(build_cmd::BuildArgs),
    /// Re-index only what changed since the artifact's current generation.
    Patch(patch_cmd::PatchArgs),
    /// Show the state of a repository's artifact: ready, stale or missing, with counts.
    Status(status_cmd::StatusArgs),
    /// Run BQL statements against a repository's artifact and print the results.
    Query(query_cmd::QueryArgs),
    /// Serve the MCP tools over stdio (for AI agents).
    Mcp(mcp_cmd::McpArgs),
    /// List the run history (builds, patches, repairs), newest first.
    Runs(runs_cmd::RunsArgs),
    /// Show the node-level changes of a run (default: the latest), with statistics.
    Delta(delta_cmd::DeltaArgs),
    /// Show node-level changes by run, entity or file, or since a run or generation.
    Diff(diff_cmd::DiffArgs),
    /// Verify the artifact in phases and repair what can be repaired.
    Fix(fix_cmd::FixArgs),
    /// Garbage collection: space use, pruning runs, reclaiming files.
    Gc(gc_cmd::GcArgs),
    /// Keep the artifact fresh: re-index after source changes settle, until interrupted.
    Watch(watch_cmd::WatchArgs),
    /// Write a JSON view (storage, agent) or a transport archive (--output FILE.tar).
    Export(export_cmd::ExportArgs),
    /// Verify a transport archive and make it the current generation of a repository.
    Load(load_cmd::LoadArgs),
    /// The files that matter most, with their top symbols (Astria `repo_map`).
    Map(astria_cmd::MapArgs),
    /// The subgraph a natural-language question points at, cut to a token budget (Astria `query_graph`).
    Ask(astria_cmd::AskArgs),
    /// What depends on a node, changed files or a diff: the blast radius (Astria `affected`).
    Affected(astria_cmd::AffectedArgs),
    /// A node (id, qualified name or name) and its 20 strongest neighbours (Astria `explain`).
    Explain(astria_cmd::ExplainArgs),
    /// The shortest path between two nodes, each hop with its relation (Astria `shortest_path`).
    Path(astria_cmd::PathArgs),
    /// The communities of the graph, largest first, with modularity (Astria `list_communities`).
    Communities(astria_cmd::CommunitiesArgs),
    /// A 0-100 health score from named parts, each with its evidence (Astria `health`).
    Health(astria_cmd::HealthArgs),
    /// The session context graph: notes, reads, searches and composed context (ctx-tree).
    Ctx(ctx_cmd::CtxArgs),
}

/// An error for people: a message, an optional hint, and the exit code to leave with.
pub(crate) struct Failure {
    pub message: String,
    pub hint: Option<String>,
    pub code: u8,
}

impl Failure {
    pub(crate) fn new(message: impl Into<String>, hint: Option<&str>) -> Self {
        Failure {
            message: message.into(),
            hint: hint.map(str::to_owned),
            code: 1,
        }
    }
}

/// The failure of a command that needs an artifact where PATH (a repository root or its
/// `.batho` folder) has none: exit code 2, like every usage problem (docs/cli.md).
pub(crate) fn no_artifact(path: &std::path::Path) -> Failure {
    let (message, hint) = advice::no_artifact_advice(path);
    Failure {
        message,
        hint: Some(hint),
        code: 2,
    }
}

/// A `--root` that does not exist is a usage problem (exit 2) like a PATH elsewhere; the
/// server itself needs no artifact there, since it can build one.
fn mcp_root_exists(args: &mcp_cmd::McpArgs) -> Result<(), Failure> {
    match &args.root {
        Some(root) if !root.is_dir() => Err(no_artifact(root)),
        _ => Ok(()),
    }
}

/// The repository a command works on: the given path, or the current directory.
pub(crate) fn repo_path(path: Option<PathBuf>) -> PathBuf {
    path.unwrap_or_else(|| PathBuf::from("."))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Build(args) => build_cmd::run(args),
        Command::Patch(args) => patch_cmd::run(args),
        Command::Status(args) => status_cmd::run(args),
        Command::Query(args) => query_cmd::run(args),
        Command::Mcp(args) => mcp_root_exists(&args).and_then(|()| mcp_cmd::run(args)),
        Command::Runs(args) => runs_cmd::run(args),
        Command::Delta(args) => delta_cmd::run(args),
        Command::Diff(args) => diff_cmd::run(args),
        Command::Fix(args) => fix_cmd::run(args),
        Command::Gc(args) => gc_cmd::run(args),
        Command::Watch(args) => watch_cmd::run(args),
        Command::Export(args) => export_cmd::run(args),
        Command::Load(args) => load_cmd::run(args),
        Command::Map(args) => astria_cmd::map(args),
        Command::Ctx(args) => ctx_cmd::run(args),
        Command::Ask(args) => astria_cmd::ask(args),
        Command::Affected(args) => astria_cmd::affected(args),
        Command::Explain(args) => astria_cmd::explain(args),
        Command::Path(args) => astria_cmd::path(args),
        Command::Communities(args) => astria_cmd::communities(args),
        Command::Health(args) => astria_cmd::health(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message);
            if let Some(hint) = f.hint {
                eprintln!("hint: {hint}");
            }
            ExitCode::from(f.code)
        }
    }
}
