//! `batho fix`: verify the artifact in phases and repair what can be derived.

use std::path::{Path, PathBuf};

use batho_engine::query::WritableDatabase;

use batho_engine::maintenance::fix::{
    self, FixOptions, FixOutcome, FixReport, FixTarget, phase_name,
};
use clap::{Args, ValueEnum};

use crate::output::human_bytes;
use crate::runs_cmd::{batho_dir, storage_failure};
use crate::{Failure, no_artifact};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Target {
    All,
    Blobs,
    Graph,
    State,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Text,
    Json,
    Csv,
}

#[derive(Args, Debug)]
pub(crate) struct FixArgs {
    /// Repository root, its `.batho` folder or a writable graph's folder (default: the
    /// current directory).
    path: Option<PathBuf>,
    /// Also re-hash every segment and re-derive every index and bitmap (reads everything).
    #[arg(long)]
    deep: bool,
    /// Report what is wrong and what would be repaired; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// What to check: all phases, blobs (3), graph (4) or state (1 and 2).
    #[arg(long, value_enum, default_value_t = Target::All)]
    target: Target,
    /// Run only this phase: 1 bundle, 2 state, 3 blobs, 4 graph.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=4))]
    phase: Option<u8>,
    /// Spread hashing and verification over every core.
    #[arg(long)]
    parallel: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

pub(crate) fn run(args: FixArgs) -> Result<(), Failure> {
    if let Some(path) = &args.path
        && WritableDatabase::exists(path)
    {
        return fix_writable_graph(path, &args);
    }
    let dir = batho_dir(args.path);
    // Without the folder there is nothing to repair; a folder whose MANIFEST is damaged
    // or gone is what fix is for.
    if !dir.is_dir() {
        return Err(no_artifact(&dir));
    }
    let opts = FixOptions {
        deep: args.deep,
        dry_run: args.dry_run,
        target: match args.target {
            Target::All => FixTarget::All,
            Target::Blobs => FixTarget::Blobs,
            Target::Graph => FixTarget::Graph,
            Target::State => FixTarget::State,
        },
        phase: args.phase,
        parallel: args.parallel,
    };
    let report = fix::fix(&dir, &opts).map_err(|e| storage_failure(&e, &dir))?;
    match args.format {
        Format::Text => print_text(&report),
        Format::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        ),
        Format::Csv => print_csv(&report),
    }
    verdict(&report)
}

/// `batho fix` on a writable graph's folder: checks it and cuts a torn log tail.
fn fix_writable_graph(path: &Path, args: &FixArgs) -> Result<(), Failure> {
    let report = WritableDatabase::check(path, args.dry_run).map_err(|e| Failure {
        message: e.to_string(),
        hint: None,
        code: 2,
    })?;
    match args.format {
        Format::Json | Format::Csv => outln!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        ),
        Format::Text => {
            outln!(
                "writable graph {}: generation {}, {} transactions in the log",
                path.display(),
                report.generation,
                report.transactions
            );
            if let Some(torn) = &report.torn_tail {
                let action = if report.cut {
                    "cut"
                } else {
                    "would be cut (dry run)"
                };
                outln!(
                    "log: {} bytes after offset {} are not a whole record ({}): {action}",
                    torn.bytes,
                    torn.offset,
                    torn.reason
                );
            }
            for line in &report.damage {
                outln!("damaged: {line}");
            }
            if report.damage.is_empty() && report.torn_tail.is_none() {
                outln!("clean");
            }
        }
    }
    if report.damage.is_empty() {
        return Ok(());
    }
    Err(Failure {
        message: format!("{} problems cannot be repaired here", report.damage.len()),
        hint: Some(
            "restore the folder from a copy; a writable graph cannot be rebuilt from source".into(),
        ),
        code: 1,
    })
}

fn verdict(report: &FixReport) -> Result<(), Failure> {
    let code = report.outcome.exit_code();
    if code == 0 {
        return Ok(());
    }
    let problems = report
        .remaining
        .iter()
        .filter(|f| f.severity >= fix::Severity::Error)
        .count();
    let (message, hint) = match (report.outcome, report.options.dry_run) {
        (FixOutcome::Critical, _) => (
            "the artifact is unusable".to_owned(),
            "run 'batho build --full' to rebuild it",
        ),
        (_, true) => (
            format!("{problems} problems found (dry run: nothing was changed)"),
            "run 'batho fix' without --dry-run to repair what can be repaired",
        ),
        _ => (
            format!("{problems} problems remain after repair"),
            "see the report above; 'batho build --full' rebuilds the artifact from source",
        ),
    };
    Err(Failure {
        message,
        hint: Some(hint.into()),
        code,
    })
}

fn print_text(r: &FixReport) {
    let mode = match (r.options.deep, r.options.dry_run) {
        (false, false) => "quick",
        (true, false) => "deep",
        (false, true) => "quick, dry run",
        (true, true) => "deep, dry run",
    };
    let phases: Vec<String> = r
        .phases
        .iter()
        .map(|p| format!("{p} {}", phase_name(*p)))
        .collect();
    outln!(
        "fix {} ({mode}): phases {}",
        r.dir.display(),
        phases.join(", ")
    );
    for f in &r.findings {
        outln!(
            "  [{}] phase {} {}: {}",
            f.severity.name(),
            f.phase,
            f.what,
            f.detail
        );
        if let Some(rep) = &f.repair
            && r.options.dry_run
        {
            outln!("      would: {rep}");
        }
    }
    for rep in &r.repairs {
        outln!(
            "  repaired (phase {}, {}): {}",
            rep.phase,
            rep.action,
            rep.detail
        );
    }
    if !r.repairs.is_empty() {
        for f in &r.remaining {
            outln!(
                "  still [{}] phase {} {}: {}",
                f.severity.name(),
                f.phase,
                f.what,
                f.detail
            );
        }
    }
    let generation = match (r.generation_before, r.generation_after) {
        (Some(a), Some(b)) if a != b => format!("generation {a} -> {b}"),
        (_, Some(b)) => format!("generation {b}"),
        _ => "no generation".into(),
    };
    let hashed = if r.options.deep {
        format!(", {} re-hashed", human_bytes(r.bytes_hashed))
    } else {
        String::new()
    };
    outln!(
        "result: {} ({generation}; {} segments checked{hashed}; {} audit entries; {} ms)",
        r.outcome.name(),
        r.segments_checked,
        r.audit.len(),
        r.elapsed_ms
    );
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn print_csv(r: &FixReport) {
    outln!("record,phase,severity,what,detail,action");
    let row = |record: &str, phase: u8, sev: &str, what: &str, detail: &str, action: &str| {
        outln!(
            "{record},{phase},{sev},{},{},{}",
            csv_field(what),
            csv_field(detail),
            csv_field(action)
        );
    };
    for f in &r.findings {
        row(
            "finding",
            f.phase,
            f.severity.name(),
            &f.what,
            &f.detail,
            f.repair.as_deref().unwrap_or(""),
        );
    }
    for rep in &r.repairs {
        row("repair", rep.phase, "", "", &rep.detail, &rep.action);
    }
    if !r.repairs.is_empty() {
        for f in &r.remaining {
            row(
                "remaining",
                f.phase,
                f.severity.name(),
                &f.what,
                &f.detail,
                "",
            );
        }
    }
    row("result", 0, r.outcome.name(), "", "", "");
}
