//! `batho ctx`: the session context graph for people and scripts. `note`, `recent`,
//! `search`, `compose`, `read` and `grep` run the ctx-tree MCP tool itself
//! (`batho_mcp::BathoServer::call`) in the project's newest session, so the text is the
//! tool's text and `--json` its `structuredContent`; `show` and `prune` have no tool and
//! call `batho-ctx` directly.

use std::path::PathBuf;

use batho_ctx::graph::{ContextGraph, SessionChoice};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::astria_cmd::print_tool_answer;
use crate::{Failure, repo_path};

/// The project and how to print, for every `batho ctx` verb.
#[derive(Args, Debug)]
pub(crate) struct CtxOutput {
    /// Project root whose session graph to use (default: the current directory).
    #[arg(long, value_name = "PATH", global = true)]
    repo: Option<PathBuf>,
    /// Print the structured answer as JSON.
    #[arg(long, global = true)]
    json: bool,
}

/// `batho ctx` and its verb.
#[derive(Args, Debug)]
pub(crate) struct CtxArgs {
    #[command(subcommand)]
    verb: CtxVerb,
    #[command(flatten)]
    output: CtxOutput,
}

#[derive(Subcommand, Debug)]
enum CtxVerb {
    /// Store a note (ctx_tree_note).
    Note {
        /// The note.
        content: String,
        /// Its title (default: the first line).
        #[arg(long)]
        title: Option<String>,
    },
    /// The newest nodes first (ctx_tree_recent).
    Recent {
        /// Most nodes to list.
        #[arg(long, default_value_t = 20)]
        limit: u64,
        /// Only these kinds (repeatable).
        #[arg(long = "kind", value_name = "KIND")]
        kinds: Vec<String>,
    },
    /// Keyword search: words ANDed, "a phrase", prefix* (ctx_tree_search).
    Search {
        /// The query.
        query: String,
        /// Most nodes to list.
        #[arg(long, default_value_t = 20)]
        limit: u64,
        /// Only these kinds (repeatable).
        #[arg(long = "kind", value_name = "KIND")]
        kinds: Vec<String>,
    },
    /// Every property of one node.
    Show {
        /// The node id (`n12`).
        id: String,
    },
    /// Pack nodes and their neighbourhood into a token budget (ctx_tree_compose).
    Compose {
        /// Seed node ids.
        #[arg(required = true)]
        ids: Vec<String>,
        /// Most o200k tokens.
        #[arg(long, default_value_t = 4000)]
        budget: u64,
        /// Rank by these words.
        #[arg(long)]
        query: Option<String>,
        /// Expansion depth.
        #[arg(long, default_value_t = 1)]
        depth: u64,
        /// One line per node instead of the text.
        #[arg(long)]
        outline: bool,
    },
    /// Read a file into the graph (ctx_tree_read).
    Read {
        /// The file, relative to the project root.
        path: String,
    },
    /// Search the project's files and store the hits (ctx_tree_grep).
    Grep {
        /// The regular expression.
        pattern: String,
        /// Only files matching this glob.
        #[arg(long)]
        glob: Option<String>,
        /// Ignore case.
        #[arg(short = 'i', long)]
        ignore_case: bool,
    },
    /// Mark nodes older than a duration pruned and drop their text (`7d`, `12h`, `30m`).
    Prune {
        /// The age past which nodes are pruned.
        #[arg(long, value_name = "DURATION")]
        older_than: String,
    },
}

/// The project root as the server would key it (canonical).
fn project_root(output: &CtxOutput) -> Result<PathBuf, Failure> {
    let root = repo_path(output.repo.clone());
    root.canonicalize().map_err(|error| Failure {
        message: format!("cannot use {} as the project: {error}", root.display()),
        hint: Some("give an existing folder with --repo".into()),
        code: 2,
    })
}

fn kinds_filter(kinds: &[String]) -> Value {
    if kinds.is_empty() {
        Value::Null
    } else {
        json!({ "kind": kinds })
    }
}

/// Verbs that only look: on a project without a session graph they say so instead of
/// creating one.
fn only_looks(verb: &CtxVerb) -> bool {
    matches!(
        verb,
        CtxVerb::Recent { .. }
            | CtxVerb::Search { .. }
            | CtxVerb::Show { .. }
            | CtxVerb::Compose { .. }
    )
}

/// Fails when `root` has no session graph yet.
fn require_graph(root: &std::path::Path) -> Result<(), Failure> {
    if ContextGraph::exists(&batho_mcp::registry::batho_home(), root) {
        return Ok(());
    }
    Err(Failure {
        message: format!(
            "{} has no session graph yet: nothing was noted, read or grepped there",
            root.display()
        ),
        hint: Some(
            "`batho ctx note`, `batho ctx read` and `batho ctx grep` start one, as does `batho mcp` serving this folder".into(),
        ),
        code: 1,
    })
}

/// Runs `batho ctx VERB`.
pub(crate) fn run(args: CtxArgs) -> Result<(), Failure> {
    let root = project_root(&args.output)?;
    if only_looks(&args.verb) {
        require_graph(&root)?;
    }
    let (tool, arguments) = match args.verb {
        CtxVerb::Note { content, title } => {
            ("ctx_tree_note", json!({"content": content, "title": title}))
        }
        CtxVerb::Recent { limit, kinds } => (
            "ctx_tree_recent",
            json!({"limit": limit, "filters": kinds_filter(&kinds)}),
        ),
        CtxVerb::Search {
            query,
            limit,
            kinds,
        } => (
            "ctx_tree_search",
            json!({"query": query, "limit": limit, "filters": kinds_filter(&kinds)}),
        ),
        CtxVerb::Compose {
            ids,
            budget,
            query,
            depth,
            outline,
        } => (
            "ctx_tree_compose",
            json!({"node_ids": ids, "budget_tokens": budget, "query": query, "depth": depth,
                   "format": if outline { "outline" } else { "raw" }}),
        ),
        CtxVerb::Read { path } => ("ctx_tree_read", json!({ "path": path })),
        CtxVerb::Grep {
            pattern,
            glob,
            ignore_case,
        } => (
            "ctx_tree_grep",
            json!({"pattern": pattern, "file_glob": glob, "case_insensitive": ignore_case}),
        ),
        CtxVerb::Show { id } => return show(&root, &id, args.output.json),
        CtxVerb::Prune { older_than } => return prune(&root, &older_than, args.output.json),
    };
    let server = batho_mcp::BathoServer::new(&batho_mcp::ServerOptions {
        root: Some(root),
        no_watch: true,
        ctx_continue_session: true,
        ..batho_mcp::ServerOptions::default()
    })
    .map_err(|error| Failure {
        message: error.to_string(),
        hint: Some("check $BATHO_HOME/registry.json and batho.yaml".into()),
        code: 2,
    })?;
    print_tool_answer(&server, tool, drop_nulls(arguments), args.output.json)
}

/// Arguments without the options left unset (a tool reads absent, not null, as default).
fn drop_nulls(arguments: Value) -> Value {
    match arguments {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect())
        }
        other => other,
    }
}

fn open_graph(root: &std::path::Path) -> Result<ContextGraph, Failure> {
    ContextGraph::open(
        &batho_mcp::registry::batho_home(),
        root,
        SessionChoice::Latest,
    )
    .map_err(|error| Failure {
        message: format!(
            "cannot open the session graph of {}: {error}",
            root.display()
        ),
        hint: Some("another batho process may be writing it; try again when it exits".into()),
        code: 1,
    })
}

fn show(root: &std::path::Path, id: &str, json: bool) -> Result<(), Failure> {
    let mut graph = open_graph(root)?;
    let mut properties = graph.node_json(id).map_err(|error| Failure {
        message: error.to_string(),
        hint: Some("`batho ctx recent` lists node ids".into()),
        code: 1,
    })?;
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&properties).unwrap_or_default()
        );
        return Ok(());
    }
    let text = properties.remove("text");
    for (key, value) in &properties {
        outln!("{key}: {value}");
    }
    if let Some(Value::String(text)) = text {
        outln!("\n{text}");
    }
    Ok(())
}

/// `7d`, `12h`, `30m`, `45s` in milliseconds.
fn parse_duration(text: &str) -> Option<i64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let number: i64 = number.parse().ok()?;
    let unit_ms = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 604_800_000,
        _ => return None,
    };
    number.checked_mul(unit_ms)
}

fn prune(root: &std::path::Path, older_than: &str, json: bool) -> Result<(), Failure> {
    let age = parse_duration(older_than).ok_or_else(|| Failure {
        message: format!("cannot read the duration '{older_than}'"),
        hint: Some("write a number and a unit: 30m, 12h, 7d, 2w".into()),
        code: 2,
    })?;
    require_graph(root)?;
    let mut graph = open_graph(root)?;
    let cutoff = batho_ctx::graph::now_ms().saturating_sub(age);
    let outcome =
        batho_ctx::lookup::prune_older_than(&mut graph, cutoff).map_err(|error| Failure {
            message: error.to_string(),
            hint: None,
            code: 1,
        })?;
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&outcome).unwrap_or_default()
        );
    } else {
        outln!(
            "pruned {} node(s) older than {older_than}; dropped {} characters of text (ids, kinds, titles and paths kept)",
            outcome.pruned,
            outcome.text_chars
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations_read_with_their_unit() {
        assert_eq!(parse_duration("7d"), Some(7 * 86_400_000));
        assert_eq!(parse_duration("30m"), Some(1_800_000));
        assert_eq!(parse_duration("10"), None);
        assert_eq!(parse_duration("d"), None);
        assert_eq!(parse_duration("5y"), None);
        assert_eq!(parse_duration("99999999999999999w"), None);
    }
}
