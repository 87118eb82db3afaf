//! `batho export`: a JSON view of the graph (storage or agent) or a transport archive.
//!
//! The output kind follows the file name: `--output FILE.tar` writes the transport archive
//! (the current generation's manifest and segments with a blake3 index, for `batho load`);
//! anything else — or `--view`/`--json-mode` — writes a JSON view, to stdout without
//! `--output`.

use std::io::Write;
use std::path::{Path, PathBuf};

use batho_engine::export::{self, Category, ExportOptions, View};
use batho_engine::maintenance::archive::{self, ArchiveError};
use batho_engine::maintenance::{Artifact, StorageError};
use clap::Args;
use serde_json::json;

use crate::Failure;
use crate::no_artifact;
use crate::output::human_bytes;
use crate::runs_cmd::{batho_dir, storage_failure};

#[derive(Args, Debug)]
pub(crate) struct ExportArgs {
    /// Repository root or its `.batho` folder (default: the current directory).
    path: Option<PathBuf>,
    /// JSON view: `storage` (every node and edge with every property, run history and
    /// source text) or `agent` (compact entities and resolved relationships, no source).
    #[arg(long, value_name = "VIEW")]
    view: Option<String>,
    /// Output file; a name ending in `.tar` writes the transport archive. Default: the
    /// JSON view on stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write a JSON view even when the output name ends in `.tar`.
    #[arg(long)]
    json_mode: bool,
    /// What to include: all, entities, relationships, files.
    #[arg(long, default_value = "all")]
    category: String,
    /// Only nodes whose file matches this glob (e.g. `src/**/*.c`, `*.h`).
    #[arg(long, value_name = "GLOB")]
    filter: Option<String>,
    /// Agent view: keep the output under about N tokens (4 bytes each), most referenced
    /// entities first.
    #[arg(long, value_name = "N")]
    token_budget: Option<u64>,
    /// Include relationships for the `entities` and `files` categories too.
    #[arg(long)]
    include_relationships: bool,
    /// Storage view: leave out the source text.
    #[arg(long)]
    no_source: bool,
    /// Export the generation a run of the history committed (default: the current one).
    #[arg(long, value_name = "UUID")]
    run: Option<String>,
    /// Print the summary as JSON (with --output).
    #[arg(long)]
    json: bool,
}

fn usage(message: impl Into<String>, hint: &str) -> Failure {
    Failure {
        message: message.into(),
        hint: Some(hint.into()),
        code: 2,
    }
}

/// Whether `path` names a transport archive.
pub(crate) fn is_archive_name(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("tar"))
}

pub(crate) fn archive_failure(e: &ArchiveError, dir: &Path) -> Failure {
    match e {
        ArchiveError::Storage(s) => {
            let mut f = storage_failure(s, dir);
            if matches!(s, StorageError::NoArtifact { .. } | StorageError::NoSuchGeneration { .. }) {
                f.code = 2;
            }
            f
        }
        ArchiveError::ForeignDatabase { .. } | ArchiveError::NewerRuns { .. } => Failure {
            message: e.to_string(),
            hint: Some("pass --force to replace it (the current generation stays on disk and in 'batho runs')".into()),
            code: 1,
        },
        e if e.is_bad_archive() => Failure {
            message: e.to_string(),
            hint: Some("nothing was changed; export the archive again with 'batho export --output FILE.tar'".into()),
            code: 2,
        },
        e => Failure::new(e.to_string(), None),
    }
}

pub(crate) fn run(args: ExportArgs) -> Result<(), Failure> {
    let dir = batho_dir(args.path.clone());
    let root = dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let category = Category::parse(&args.category).ok_or_else(|| {
        usage(
            format!("invalid category '{}'", args.category),
            "use one of: all, entities, relationships, files",
        )
    })?;
    let view = match args.view.as_deref() {
        None => None,
        Some(v) => Some(View::parse(v).ok_or_else(|| {
            usage(
                format!("invalid view '{v}'"),
                "use --view storage or --view agent",
            )
        })?),
    };
    if !dir.join("MANIFEST").is_file() {
        return Err(no_artifact(&dir));
    }
    let generation = match &args.run {
        Some(uuid) => Some(export::generation_of_run(&dir, uuid).map_err(|e| {
            let mut f = storage_failure(&e, &dir);
            f.code = 2;
            f.hint = Some("list runs with 'batho runs'".into());
            f
        })?),
        None => None,
    };
    let archive_out = args
        .output
        .as_deref()
        .filter(|o| is_archive_name(o) && !args.json_mode && view.is_none());
    if let Some(out) = archive_out {
        let r = archive::export_archive(&dir, generation, out)
            .map_err(|e| archive_failure(&e, &dir))?;
        if args.json {
            outln!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
        } else {
            outln!(
                "Exported generation {} ({} nodes, {} edges) to {}: {} in {} members, {} ms",
                r.generation,
                r.node_count,
                r.edge_count,
                r.path.display(),
                human_bytes(r.bytes),
                r.members.len() + 1,
                r.elapsed_ms
            );
        }
        return Ok(());
    }
    let art = match generation {
        Some(g) => Artifact::open_generation(&dir, g),
        None => Artifact::open(&dir),
    }
    .map_err(|e| {
        let mut f = storage_failure(&e, &dir);
        f.code = 2;
        f
    })?;
    let opts = ExportOptions {
        view: view.unwrap_or(View::Storage),
        category,
        include_relationships: args.include_relationships,
        filter_pattern: args.filter.clone(),
        token_budget: args.token_budget,
        include_source: !args.no_source,
    };
    let t0 = std::time::Instant::now();
    match &args.output {
        Some(out) => {
            let st = export::export_to_file(&art, &root, &opts, out).map_err(|e| match e {
                export::ExportError::BadPattern { .. } => {
                    usage(e.to_string(), "globs use *, ** and ?")
                }
                e => Failure::new(e.to_string(), None),
            })?;
            let ms = t0.elapsed().as_millis();
            if args.json {
                let v = json!({"path": out, "elapsed_ms": ms, "stats": st});
                outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            } else {
                outln!(
                    "Exported the {} view of generation {} to {}: {} entities, {} relationships, {} files, {}{} in {ms} ms",
                    st.view,
                    st.generation,
                    out.display(),
                    st.entities,
                    st.relationships,
                    st.files,
                    human_bytes(st.bytes),
                    if st.truncated {
                        " (truncated by the token budget)"
                    } else {
                        ""
                    },
                );
            }
        }
        None => {
            let mut lock = std::io::BufWriter::new(crate::stdout::ClosedPipeExits::new());
            let res = export::write_view(&art, &root, &opts, &mut lock).and_then(|_| lock.flush());
            res.map_err(|e| match e.kind() {
                std::io::ErrorKind::InvalidInput => usage(e.to_string(), "globs use *, ** and ?"),
                _ => Failure::new(format!("cannot write the export: {e}"), None),
            })?;
        }
    }
    Ok(())
}
