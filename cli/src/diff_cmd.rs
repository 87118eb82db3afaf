//! `batho diff`: node-level changes by run, entity or file, or everything since a run or
//! generation, with before and after for each change.

use std::path::PathBuf;

use batho_engine::diff::{DiffFilter, diff_runs, resolve_delta, resolve_since};
use clap::Args;

use crate::Failure;
use crate::delta_cmd::{diff_failure, print_json, text};
use crate::runs_cmd::batho_dir;

#[derive(Args, Debug)]
#[command(group(
    clap::ArgGroup::new("what")
        .required(true)
        .multiple(true)
        .args(["run", "entity", "file", "since"])
))]
pub(crate) struct DiffArgs {
    /// Repository root or its `.batho` folder (default: the current directory).
    path: Option<PathBuf>,
    /// The run whose changes to show (id or unique prefix; default: the latest run with
    /// a predecessor, or the current generation with --since).
    #[arg(long, value_name = "ID")]
    run: Option<String>,
    /// Only changes of this entity id.
    #[arg(long, value_name = "ID")]
    entity: Option<String>,
    /// Only changes in this file (or under this path prefix).
    #[arg(long, value_name = "PATH")]
    file: Option<String>,
    /// Compare from this run (id or prefix) or generation number instead of the run's
    /// predecessor.
    #[arg(long, value_name = "RUN|GENERATION")]
    since: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: DiffArgs) -> Result<(), Failure> {
    let dir = batho_dir(args.path);
    let pair = match &args.since {
        Some(s) => resolve_since(&dir, s, args.run.as_deref()),
        None => resolve_delta(&dir, args.run.as_deref()),
    }
    .map_err(|e| diff_failure(&e, &dir))?;
    let filter = DiffFilter {
        file: args.file,
        entity: args.entity,
        ..DiffFilter::default()
    };
    let d = diff_runs(&dir, &pair, &filter).map_err(|e| diff_failure(&e, &dir))?;
    if args.json {
        print_json(&d, &filter);
    } else {
        out!("{}", text(&d, &filter, true));
    }
    Ok(())
}
