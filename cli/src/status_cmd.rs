//! `batho status`.

use std::path::PathBuf;

use batho_engine::status::{self, ArtifactState};
use clap::Args;
use serde_json::json;

use crate::output::{human_bytes, run_json, run_kind_name, run_status_name};
use crate::{Failure, no_artifact, repo_path};

#[derive(Args, Debug)]
pub(crate) struct StatusArgs {
    /// Repository root (default: the current directory).
    path: Option<PathBuf>,
    /// Also verify the artifact: every structure checked, every segment re-hashed.
    #[arg(long)]
    verify: bool,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: StatusArgs) -> Result<(), Failure> {
    let root = repo_path(args.path);
    if !root.is_dir() {
        return Err(no_artifact(&root));
    }
    let report = status::status(&root, args.verify)
        .map_err(|e| crate::runs_cmd::storage_failure(&e, &root))?;
    if args.json {
        let value = json!({
            "path": report.root,
            "state": report.state.name(),
            "generation": report.generation,
            "entities": report.entities,
            "relationships": report.relationships,
            "files": report.files,
            "node_kinds": report.node_kinds,
            "relation_types": report.relation_types,
            "size_on_disk": report.size_on_disk,
            "changed_files": report.changed_files,
            "changed_count": report.changed_count,
            "syntax_error_files": report.syntax_error_files,
            "last_run": report.last_run.as_ref().map(run_json),
            "integrity": report.integrity,
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
        return verdict(&report);
    }
    outln!("{}: {}", report.root.display(), report.state.name());
    if report.state == ArtifactState::Missing {
        return verdict(&report);
    }
    outln!(
        "  generation {} · {} entities · {} relationships · {} files · {} on disk",
        report.generation,
        report.entities,
        report.relationships,
        report.files,
        human_bytes(report.size_on_disk)
    );
    let kinds: Vec<String> = report
        .node_kinds
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    outln!("  nodes: {}", kinds.join(", "));
    let rels: Vec<String> = report
        .relation_types
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    outln!("  relationships: {}", rels.join(", "));
    if let Some(run) = &report.last_run {
        outln!(
            "  last run: {} {} {}, {}ms{}{}",
            run.uuid,
            run_kind_name(run.kind),
            run_status_name(run.status),
            run.duration_ms,
            run.git_commit
                .as_deref()
                .map(|c| format!(", commit {}", &c[..c.len().min(12)]))
                .unwrap_or_default(),
            run.git_branch
                .as_deref()
                .map(|b| format!(", branch {b}"))
                .unwrap_or_default(),
        );
    }
    crate::output::print_syntax_error_files(&report.syntax_error_files);
    if let Some(issues) = &report.integrity {
        if issues.is_empty() {
            outln!("  integrity: verified, no problems found");
        } else {
            outln!("  integrity: {} problems found:", issues.len());
            for issue in issues {
                outln!("    {issue}");
            }
        }
    }
    if report.state == ArtifactState::Stale {
        outln!(
            "  {} source files changed since the last run:",
            report.changed_count
        );
        for f in &report.changed_files {
            outln!("    {f}");
        }
        outln!("  run 'batho build --full' to bring it up to date");
    }
    verdict(&report)
}

/// A missing artifact or a failed verification is an error exit, whatever the output
/// format: the report is printed first, so scripts read the state and check the code.
fn verdict(report: &status::StatusReport) -> Result<(), Failure> {
    if report.state == ArtifactState::Missing {
        return Err(no_artifact(&report.root));
    }
    if report.integrity.as_ref().is_some_and(|i| !i.is_empty()) {
        return Err(Failure::new(
            "the artifact failed verification",
            Some(
                "run 'batho fix' to repair what can be derived, or 'batho build --full' to rebuild it",
            ),
        ));
    }
    Ok(())
}
