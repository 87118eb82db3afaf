//! `batho load ARCHIVE [PATH]`: verify a transport archive and make it the current
//! generation of PATH's artifact (see `batho_engine::maintenance::archive`).

use std::path::PathBuf;

use batho_engine::maintenance::archive::{self, LoadOptions};
use clap::Args;

use crate::Failure;
use crate::export_cmd::archive_failure;
use crate::output::human_bytes;
use crate::runs_cmd::batho_dir;

#[derive(Args, Debug)]
pub(crate) struct LoadArgs {
    /// The archive written by `batho export --output FILE.tar`.
    archive: PathBuf,
    /// Repository root or its `.batho` folder (default: the current directory).
    path: Option<PathBuf>,
    /// Replace an artifact of another database, or one with newer runs than the archive.
    #[arg(long)]
    force: bool,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: LoadArgs) -> Result<(), Failure> {
    let dir = batho_dir(args.path);
    // `.batho` is created when missing, never the repository: a mistyped path would
    // otherwise become a new folder holding an artifact of nothing.
    let root = crate::advice::repository_root(&dir);
    if !root.is_dir() {
        let mut failure = crate::no_artifact(&root);
        failure.hint = Some("give the root folder of an existing repository".into());
        return Err(failure);
    }
    let opts = LoadOptions {
        force: args.force,
        ..LoadOptions::default()
    };
    let r =
        archive::load_archive(&dir, &args.archive, &opts).map_err(|e| archive_failure(&e, &dir))?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
        return Ok(());
    }
    outln!(
        "Loaded {} into {}: generation {} ({} nodes, {} edges), {} verified in {} ms{}",
        args.archive.display(),
        dir.display(),
        r.generation,
        r.node_count,
        r.edge_count,
        human_bytes(r.bytes),
        r.elapsed_ms,
        if r.restamped {
            "; restamped with this database's identity"
        } else {
            ""
        }
    );
    if let Some(prev) = r.previous_generation {
        outln!("Previous generation {prev} stays on disk and in 'batho runs'.");
    }
    Ok(())
}
