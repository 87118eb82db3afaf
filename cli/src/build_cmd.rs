//! `batho build`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use batho_engine::build::{self, BuildEvent, BuildOptions};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::output::run_json;
use crate::{Failure, repo_path};

#[derive(Args, Debug)]
pub(crate) struct BuildArgs {
    /// Repository root (default: the current directory).
    path: Option<PathBuf>,
    /// Rebuild from scratch, replacing an existing artifact.
    #[arg(long)]
    full: bool,
    /// Parser threads (default: one per core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_workers: Option<u32>,
    /// Skip (and report) files larger than this many KiB (default: 32768).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_file_size_kb: Option<u64>,
    /// Evaluate `#if` conditions with this compilation database's `-D`/`-U`/`-I` flags
    /// (default: `compile_commands.json` at the root, else `batho.yaml`'s `defines:`).
    #[arg(long, value_name = "FILE")]
    compile_commands: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: BuildArgs) -> Result<(), Failure> {
    let root = repo_path(args.path);
    let opts = BuildOptions {
        full: args.full,
        max_workers: args.max_workers.map(|n| n as usize),
        max_file_size_kb: args.max_file_size_kb,
        compile_commands: args.compile_commands,
    };
    let bar = (std::io::stderr().is_terminal() && !args.json).then(|| {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} {msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.enable_steady_tick(Duration::from_millis(120));
        bar.set_message("discovering");
        bar
    });
    let progress = |event: BuildEvent| {
        let Some(bar) = &bar else { return };
        match event {
            BuildEvent::Discovered { files, bytes } => {
                bar.set_length(bytes);
                bar.set_message(format!("parsing {files} files"));
            }
            BuildEvent::Parsed { bytes, .. } => bar.set_position(bytes),
            BuildEvent::Resolving => bar.set_message("resolving references"),
            BuildEvent::Writing => bar.set_message("detecting communities, writing the artifact"),
        }
    };
    let result = build::build(&root, &opts, &progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = result.map_err(|e| Failure {
        message: e.to_string(),
        hint: crate::advice::failure_hint(e.hint(), e.remedy(), &root),
        code: if e.is_usage() { 2 } else { 1 },
    })?;

    if args.json {
        let value = json!({
            "path": report.root,
            "entities": report.entities,
            "relationships": report.relationships,
            "files": report.files,
            "kinds": report.kinds,
            "skipped": report.skipped.iter().map(|s| json!({"path": s.rel_path, "reason": s.reason.to_string()})).collect::<Vec<_>>(),
            "lossy_files": report.lossy_files,
            "files_with_syntax_errors": report.files_with_syntax_errors,
            "syntax_error_files": report.syntax_error_files,
            "source_bytes": report.source_bytes,
            "bytes_written": report.bytes_written,
            "phases_ms": report.phases,
            "run": run_json(&report.run),
            "moved_aside": report.moved_aside,
            "moved_aside_because": report.moved_aside_because,
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
        return Ok(());
    }
    if let Some(old) = &report.moved_aside {
        eprintln!(
            "note: the artifact {} was moved to {}; delete it when you no longer need it",
            report
                .moved_aside_because
                .unwrap_or("that could not be built over"),
            old.display()
        );
    }
    for s in &report.skipped {
        eprintln!("skipped {}: {}", s.rel_path, s.reason);
    }
    for f in &report.lossy_files {
        eprintln!("decoded lossily (not valid UTF-8): {f}");
    }
    // Entities are every node but File nodes and External stubs, as everywhere else; the
    // kinds line names those two apart so that it adds up to the count below.
    let is_entity = |kind: &str| kind != "File" && kind != "External";
    let kinds: Vec<String> = report
        .kinds
        .iter()
        .filter(|(kind, _)| is_entity(kind))
        .map(|(k, n)| format!("{n} {}", k.to_lowercase()))
        .collect();
    let others: Vec<String> = report
        .kinds
        .iter()
        .filter(|(kind, _)| !is_entity(kind))
        .map(|(kind, n)| match *kind {
            "File" => format!("{n} file nodes"),
            _ => format!("{n} external stubs"),
        })
        .collect();
    outln!("  entities: {}", kinds.join(", "));
    if !others.is_empty() {
        outln!("  besides: {}", others.join(", "));
    }
    crate::output::print_syntax_error_files(&report.syntax_error_files);
    outln!(
        "Built {}: {} entities, {} relationships, {} files in {}ms",
        report.root.display(),
        report.entities,
        report.relationships,
        report.files,
        report.run.duration_ms
    );
    if !report.skipped.is_empty() {
        outln!("  {} files skipped (listed above)", report.skipped.len());
    }
    Ok(())
}
