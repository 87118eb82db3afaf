//! `batho watch`: keep a repository's artifact fresh in the foreground, printing each
//! re-index, until interrupted (Ctrl-C is safe at any moment: a re-index cut short never
//! replaces the previous generation).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use batho_engine::watch::{WatchEvent, WatchObserver, WatchOptions, Watchers};
use clap::Args;
use serde_json::json;

use crate::{Failure, no_artifact, repo_path};

#[derive(Args, Debug)]
pub(crate) struct WatchArgs {
    /// Repository root (default: the current directory). It must have been built once.
    path: Option<PathBuf>,
    /// Quiet time after the last change before re-indexing, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    debounce_ms: u64,
    /// Skip files larger than this many KiB, as `batho build` does.
    #[arg(long, value_name = "KB")]
    max_file_size_kb: Option<u64>,
    /// Print one JSON object per event instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: WatchArgs) -> Result<(), Failure> {
    let root = repo_path(args.path);
    let root = root.canonicalize().map_err(|_| no_artifact(&root))?;
    if !batho_engine::build::artifact_dir(&root)
        .join("MANIFEST")
        .is_file()
    {
        let mut failure = no_artifact(&root);
        failure.hint = Some(format!(
            "run 'batho build {}' once; the watcher keeps it fresh",
            root.display()
        ));
        return Err(failure);
    }
    let (fatal_tx, fatal_rx) = mpsc::channel::<String>();
    let json = args.json;
    let debounce_ms = args.debounce_ms;
    let observer: WatchObserver = Arc::new(move |root, event| {
        print_event(root, event, json, debounce_ms);
        // A watch that could not be set up never retries: end the command.
        if let WatchEvent::Stopped(e) = event {
            let _ = fatal_tx.send(e.clone());
        }
    });
    let watchers = Watchers::default();
    watchers
        .start(
            &root,
            &WatchOptions {
                debounce: Duration::from_millis(args.debounce_ms),
                max_file_size_kb: args.max_file_size_kb,
            },
            Some(observer),
        )
        .map_err(|e| Failure::new(e, None))?;
    // The watcher thread does the work; this thread waits for a fatal error or a signal.
    match fatal_rx.recv() {
        Ok(e) => Err(Failure::new(
            e,
            Some("check that the folder exists and is readable"),
        )),
        Err(_) => Ok(()),
    }
}

fn print_event(root: &std::path::Path, event: &WatchEvent, json: bool, debounce_ms: u64) {
    use std::io::Write;
    let line = if json {
        let v = match event {
            WatchEvent::Ready => {
                json!({"event": "ready", "path": root, "debounce_ms": debounce_ms})
            }
            WatchEvent::UpToDate => json!({"event": "up_to_date", "path": root}),
            WatchEvent::Reindexed { summary, millis } => {
                json!({"event": "reindexed", "path": root, "summary": summary, "duration_ms": millis})
            }
            WatchEvent::Failed(e) => json!({"event": "failed", "path": root, "error": e}),
            WatchEvent::Stopped(e) => json!({"event": "stopped", "path": root, "error": e}),
        };
        v.to_string()
    } else {
        match event {
            WatchEvent::Ready => format!(
                "Watching {} (debounce {debounce_ms} ms); Ctrl-C to stop.",
                root.display()
            ),
            WatchEvent::UpToDate => "Up to date.".to_owned(),
            WatchEvent::Reindexed { summary, millis } => format!("{summary} in {millis}ms"),
            WatchEvent::Failed(e) => format!("error: {e} (retrying)"),
            WatchEvent::Stopped(e) => format!("error: {e}"),
        }
    };
    // Flushed per line so a pipe (a test, `tee`) sees each event as it happens.
    let mut out = crate::stdout::ClosedPipeExits::new();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}
