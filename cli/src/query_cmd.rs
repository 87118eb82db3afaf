//! `batho query`: run BQL against a repository's artifact and print the results.
//!
//! Exit codes: 0 when every statement ran, 1 when a statement failed (its diagnostic is
//! printed and the statements after it still run), 2 for a usage or artifact problem.

// Shared with batho-ql, which also uses the helpers only a REPL needs.
#[allow(dead_code)]
#[path = "repl/script.rs"]
mod script;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use batho_engine::maintenance::{self, StorageError};
use batho_engine::query::render::Format;
use batho_engine::query::{OpenGraph, QueryError, QueryOptions, QueryResult};
use batho_lang::NoGraph;
use clap::Args;

use crate::{Failure, no_artifact, repo_path};

#[derive(Args, Debug)]
pub(crate) struct QueryArgs {
    /// The query; several statements may be separated by `;`.
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    query: Option<String>,
    /// Read the statements from FILE (`-` for standard input).
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    file: Option<PathBuf>,
    /// Repository root, `.batho` directory or writable-graph folder (default: the current
    /// directory).
    #[arg(long)]
    repo: Option<PathBuf>,
    /// Output format: table, json, jsonl or csv.
    #[arg(long, default_value = "table", value_parser = parse_format_arg)]
    format: FormatArg,
    /// A query parameter `name=value`; the value is JSON when it parses, else a string.
    #[arg(long = "param", short = 'p', value_name = "NAME=VALUE", value_parser = parse_param_arg)]
    params: Vec<(String, batho_engine::query::Value)>,
    /// Most result rows per statement before the result is marked truncated.
    #[arg(long, value_name = "N")]
    limit_rows: Option<usize>,
    /// Wall-clock budget per statement in milliseconds (0: none).
    #[arg(long, value_name = "MS")]
    timeout_ms: Option<u64>,
    /// Most units of work per statement.
    #[arg(long, value_name = "N")]
    max_work: Option<u64>,
    /// Most MiB of values a statement holds while sorting, aggregating, removing
    /// duplicates or joining (default 512).
    #[arg(long, value_name = "MIB")]
    max_held_mib: Option<u64>,
}

/// `Format` wrapped so clap can hold it.
#[derive(Clone, Copy, Debug)]
struct FormatArg(Format);

fn parse_format_arg(s: &str) -> Result<FormatArg, String> {
    script::parse_format(s)
        .map(FormatArg)
        .ok_or_else(|| format!("unknown format '{s}' (expected table, json, jsonl or csv)"))
}

fn parse_param_arg(s: &str) -> Result<(String, batho_engine::query::Value), String> {
    script::parse_param(s)
}

pub(crate) fn run(args: QueryArgs) -> Result<(), Failure> {
    let text = match (&args.query, &args.file) {
        (Some(q), _) => q.clone(),
        (None, Some(f)) if f.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                .map_err(|e| usage(format!("cannot read standard input: {e}")))?;
            s
        }
        (None, Some(f)) => std::fs::read_to_string(f)
            .map_err(|e| usage(format!("cannot read {}: {e}", f.display())))?,
        (None, None) => return Err(usage("no query given".into())),
    };
    let statements = script::split_statements(&text);
    if statements.is_empty() {
        return Err(usage("the query is empty".into()));
    }
    let root = repo_path(args.repo);
    let params: BTreeMap<_, _> = args.params.into_iter().collect();
    if let [statement] = statements.as_slice()
        && let Some(result) = maintenance::run_statement(&root, &statement.text, &params)
    {
        // CALL db.fix(...) and db.gc(...) work on the artifact's files, so they run
        // without opening it: a damaged artifact can still be fixed.
        return print_maintenance(&root, result, args.format.0);
    }
    let mut db = OpenGraph::open(&root).map_err(|e| match e {
        QueryError::NoArtifact { .. } => no_artifact(&root),
        e => Failure {
            message: e.to_string(),
            hint: e
                .remedy()
                .map(|remedy| crate::advice::remedy_hint(remedy, &root)),
            code: 2,
        },
    })?;
    let mut opts = QueryOptions::default();
    if let Some(n) = args.limit_rows {
        opts.limits.max_rows = n;
    }
    if let Some(n) = args.max_work {
        opts.limits.max_work = n;
    }
    if let Some(mib) = args.max_held_mib {
        opts.limits.max_held_bytes = mib.saturating_mul(1 << 20);
    }
    if let Some(ms) = args.timeout_ms {
        opts.limits.timeout = (ms > 0).then(|| Duration::from_millis(ms));
    }

    let mut stdout = crate::stdout::ClosedPipeExits::new();
    let stderr = std::io::stderr();
    let mut failed = 0usize;
    let mut worst = 1u8;
    let mut printed = 0usize;
    for stmt in &statements {
        match script::run_statement(&mut db, stmt, &params, &opts) {
            Ok(res) => {
                // Tables and CSV of successive statements would run together: a blank
                // line ends each one (every CSV result brings its own header).
                match args.format.0 {
                    Format::Table if printed > 0 => outln!(),
                    // CSV lines end in CRLF (RFC 4180), the blank line too.
                    Format::Csv if printed > 0 => out!("\r\n"),
                    _ => {}
                }
                printed += 1;
                db.with_access(|graph| {
                    script::print_result(
                        graph,
                        &res,
                        args.format.0,
                        &mut stdout,
                        &mut stderr.lock(),
                    )
                })
                .map_err(|e| usage(format!("cannot write the result: {e}")))?;
            }
            Err(e) => {
                failed += 1;
                if !e.is_query_error() {
                    worst = 2;
                }
                eprintln!("{}", script::error_text(&e));
            }
        }
    }
    if failed == 0 {
        return Ok(());
    }
    let message = if statements.len() == 1 {
        "the query failed".to_string()
    } else {
        format!("{failed} of {} statements failed", statements.len())
    };
    Err(Failure {
        message,
        hint: None,
        code: worst,
    })
}

/// Prints the result of a lone maintenance statement (`CALL db.fix(...)`), or reports its
/// failure as a failed query is reported.
fn print_maintenance(
    root: &Path,
    result: Result<QueryResult, QueryError>,
    format: Format,
) -> Result<(), Failure> {
    let result = match result {
        Ok(result) => result,
        Err(QueryError::Storage(StorageError::NoArtifact { .. })) => return Err(no_artifact(root)),
        Err(error) => {
            eprintln!("{}", script::error_text(&error));
            return Err(Failure {
                message: "the query failed".into(),
                hint: None,
                code: if error.is_query_error() { 1 } else { 2 },
            });
        }
    };
    let mut stdout = crate::stdout::ClosedPipeExits::new();
    script::print_result(
        &NoGraph,
        &result,
        format,
        &mut stdout,
        &mut std::io::stderr().lock(),
    )
    .map_err(|e| usage(format!("cannot write the result: {e}")))
}

fn usage(message: String) -> Failure {
    Failure {
        message,
        hint: None,
        code: 2,
    }
}
