//! The ctx-tree tools (`../shared/seeds/ctx-tree-mcp-tools.txt`): thin wrappers over
//! `batho-ctx`, each with the seed's arguments and return keys. Every answer carries the
//! BQL statements it ran in `meta.query` and the session root in `meta.session`.

use std::fmt::Write as _;

use batho_ctx::command::{MonitorOutcome, MonitorRequest};
use batho_ctx::compose::{ComposeFormat, ComposeOutcome, ComposeRequest};
use batho_ctx::graph::ContextGraph;
use batho_ctx::grep::{GrepOutcome, GrepRequest};
use batho_ctx::kinds::{EdgeKind, NodeKind, NodeStatus};
use batho_ctx::lookup::{ChainNode, Filters, ListedNode, NoteOutcome, ReachedNode};
use batho_ctx::read::{ReadOutcome, ReadRequest};
use batho_ctx::web::{BrowseOutcome, BrowseRequest};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use crate::ctx_state::tool_error;
use crate::error::ToolError;
use crate::state::State;
use crate::tools::{Reply, Rows, ToolOutput};

/// Answers are cut (by the server's estimate) past this many tokens; the tools cut their
/// own lists first (limits, budgets), so this only guards against surprises.
const ANSWER_TOKENS: i64 = 25_000;

/// The seed's `filters`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FiltersArg {
    /// Keep nodes with these statuses: pending, live, stale, superseded, pruned (default: all but superseded and pruned)
    #[serde(default)]
    pub status: Option<Vec<String>>,
    /// Keep nodes of these kinds: session, file_chunk, tool_output, summary, note, observation, web_chunk, prompt, thinking, response (default: all but session)
    #[serde(default)]
    pub kind: Option<Vec<String>>,
    /// Created at or after (epoch ms)
    #[serde(default)]
    pub since: Option<i64>,
    /// Created at or before (epoch ms)
    #[serde(default)]
    pub until: Option<i64>,
}

fn parse_names<T: Copy>(
    what: &str,
    names: Option<&[String]>,
    from_name: fn(&str) -> Option<T>,
    spellings: fn() -> String,
) -> Result<Option<Vec<T>>, ToolError> {
    names
        .map(|names| {
            names
                .iter()
                .map(|name| {
                    from_name(name).ok_or_else(|| {
                        ToolError::client(format!("unknown {what} '{name}'"))
                            .hint(format!("{what} is one of: {}", spellings()))
                    })
                })
                .collect()
        })
        .transpose()
}

impl FiltersArg {
    fn to_filters(&self) -> Result<Filters, ToolError> {
        Ok(Filters {
            status: parse_names(
                "status",
                self.status.as_deref(),
                NodeStatus::from_name,
                NodeStatus::spellings,
            )?,
            kind: parse_names(
                "kind",
                self.kind.as_deref(),
                NodeKind::from_name,
                NodeKind::spellings,
            )?,
            since: self.since,
            until: self.until,
        })
    }
}

fn filters_of(filters: &Option<FiltersArg>) -> Result<Filters, ToolError> {
    filters
        .as_ref()
        .map_or_else(|| Ok(Filters::default()), FiltersArg::to_filters)
}

/// Runs `work` on the session graph and builds the answer's meta. The call's writes are
/// on disk before it answers: their sync ticket is taken under the graph's lock and waited
/// on after it is released, so calls queued on the lock meanwhile share the fsync (group
/// commit).
fn with_graph<T>(
    state: &State,
    work: impl FnOnce(&mut ContextGraph) -> Result<T, batho_ctx::CtxError>,
) -> Result<(T, Map<String, Json>), ToolError> {
    let mut guard = state.ctx.graph()?;
    let graph = guard
        .as_mut()
        .ok_or_else(|| ToolError::server("the session graph is not open"))?;
    let answer = answer_with(graph, work);
    let ticket = graph.take_sync_ticket();
    drop(guard);
    if let Some(ticket) = ticket {
        ticket.wait().map_err(|error| {
            ToolError::server(format!(
                "the call's writes are not known to be on disk: {error}"
            ))
            .hint("restart the server: the session graph takes no more writes")
        })?;
    }
    answer
}

/// Runs `work` on the open session graph, keeps the graph under its size cap, and builds
/// the answer's meta.
fn answer_with<T>(
    graph: &mut ContextGraph,
    work: impl FnOnce(&mut ContextGraph) -> Result<T, batho_ctx::CtxError>,
) -> Result<(T, Map<String, Json>), ToolError> {
    graph.take_statements();
    let outcome = work(graph);
    let capped = match &outcome {
        Ok(_) => batho_ctx::cap::keep_under_cap(graph).map_err(tool_error)?,
        Err(_) => None,
    };
    let statements = graph.take_statements();
    let value = outcome.map_err(tool_error)?;
    let mut meta = Map::new();
    if let Some(capped) = capped {
        meta.insert(
            "pruned_to_cap".into(),
            serde_json::to_value(capped).unwrap_or_default(),
        );
    }
    meta.insert("session".into(), graph.session_id().into());
    meta.insert(
        "query".into(),
        match statements.as_slice() {
            [one] => Json::from(one.clone()),
            many => Json::from(many.to_vec()),
        },
    );
    meta.insert(
        "graph".into(),
        graph.dir().to_string_lossy().into_owned().into(),
    );
    Ok((value, meta))
}

/// A list answer: `{"results": [...]}` in structuredContent, one line per item in text.
#[derive(Serialize)]
struct Listing<T: Serialize> {
    results: Vec<T>,
    #[serde(skip)]
    empty: &'static str,
    #[serde(skip)]
    line: fn(&T) -> String,
}

impl<T: Serialize> ToolOutput for Listing<T> {
    fn markdown(&self, _: &mut Rows) -> String {
        if self.results.is_empty() {
            return format!("{}\n", self.empty);
        }
        let mut text = String::new();
        for item in &self.results {
            let _ = writeln!(text, "{}", (self.line)(item));
        }
        text
    }
}

/// `ctx_tree_read` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// File path, absolute (inside the project) or relative to the project root
    pub path: String,
    /// [start, end] line range, 0-based, both included
    #[serde(default)]
    pub lines: Option<[u64; 2]>,
    /// Largest chunk in o200k tokens (default 512)
    #[serde(default)]
    pub budget_tokens: Option<u64>,
}

impl ToolOutput for ReadOutcome {
    fn markdown(&self, _: &mut Rows) -> String {
        format!(
            "{} {} ({} chunk{}{})\n{}\n",
            self.node_id,
            self.path,
            self.chunks,
            if self.chunks == 1 { "" } else { "s" },
            if self.cached { ", cached" } else { "" },
            self.hint
        )
    }
}

pub(crate) fn read(state: &State, args: ReadArgs) -> Result<Reply, ToolError> {
    let lines = match args.lines {
        Some([start, end]) if start > end => {
            return Err(ToolError::client(format!(
                "lines [{start}, {end}]: the start is after the end"
            )));
        }
        Some([start, end]) => Some((start as usize, end as usize)),
        None => None,
    };
    let request = ReadRequest {
        path: args.path,
        lines,
        budget_tokens: args.budget_tokens.map(|b| b.min(1 << 20) as usize),
    };
    let (outcome, meta) = with_graph(state, |graph| batho_ctx::read::read_file(graph, &request))?;
    Reply::new(&outcome, meta, ANSWER_TOKENS)
}

/// `ctx_tree_grep` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// Regular expression (Rust regex syntax: linear time, no backreferences)
    pub pattern: String,
    /// Folder or file to search, inside the project (default: the project root)
    #[serde(default)]
    pub path: Option<String>,
    /// Case-insensitive search
    #[serde(default)]
    pub case_insensitive: bool,
    /// Only files matching this glob, e.g. "*.c"
    #[serde(default)]
    pub file_glob: Option<String>,
}

impl ToolOutput for GrepOutcome {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut text = format!("{} match(es) for /{}/\n", self.count, self.pattern);
        for line in &self.matches {
            let _ = writeln!(text, "{line}");
        }
        if self.omitted > 0 {
            let _ = writeln!(
                text,
                "… {} more not stored; narrow the pattern, path or file_glob",
                self.omitted
            );
        }
        text
    }
}

pub(crate) fn grep(state: &State, args: GrepArgs) -> Result<Reply, ToolError> {
    let request = GrepRequest {
        pattern: args.pattern,
        path: args.path,
        case_insensitive: args.case_insensitive,
        file_glob: args.file_glob,
    };
    let (outcome, meta) = with_graph(state, |graph| batho_ctx::grep::grep(graph, &request))?;
    Reply::new(&outcome, meta, ANSWER_TOKENS)
}

/// `ctx_tree_browse` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrowseArgs {
    /// http or https URL
    pub url: String,
    /// Token budget of the returned content (default 2000)
    #[serde(default)]
    pub budget_tokens: Option<u64>,
    /// Fetch again even when the URL is stored
    #[serde(default)]
    pub force: bool,
}

impl ToolOutput for BrowseOutcome {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut text = format!(
            "{} {}{}\n# {}\n",
            self.node_id,
            self.url,
            if self.cached { " (cached)" } else { "" },
            self.title
        );
        if !self.description.is_empty() {
            let _ = writeln!(text, "{}", self.description);
        }
        if !self.headings.is_empty() {
            let _ = writeln!(text, "headings: {}", self.headings.join(" | "));
        }
        let _ = writeln!(text, "\n{}", self.content);
        if self.truncated {
            let _ = writeln!(
                text,
                "[truncated: ctx_tree_compose with node_ids [\"{}\"] and a larger budget_tokens gives more]",
                self.node_id
            );
        }
        text
    }
}

pub(crate) fn browse(state: &State, args: BrowseArgs) -> Result<Reply, ToolError> {
    let request = BrowseRequest {
        url: args.url,
        budget_tokens: args.budget_tokens.map(|b| b.min(1 << 24) as usize),
        force: args.force,
        allow_private_addresses: state.ctx.allow_private_urls,
    };
    let (outcome, meta) = with_graph(state, |graph| batho_ctx::web::browse(graph, &request))?;
    Reply::precut(&outcome, meta)
}

/// `ctx_tree_compose` output formats.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FormatArg {
    /// Each node's text under a header
    #[default]
    Raw,
    /// One line per node
    Outline,
}

/// `ctx_tree_compose` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ComposeArgs {
    /// Seed node ids
    pub node_ids: Vec<String>,
    /// Most o200k tokens the block may hold
    pub budget_tokens: u64,
    /// raw or outline (default raw)
    #[serde(default)]
    pub format: FormatArg,
    /// Words to rank candidates by (BM25)
    #[serde(default)]
    pub query: Option<String>,
    /// BFS expansion depth, 0-5 (default 1)
    #[serde(default)]
    pub depth: Option<u64>,
}

impl ToolOutput for ComposeOutcome {
    fn markdown(&self, _: &mut Rows) -> String {
        let manifest = serde_json::to_string(&self.manifest).unwrap_or_default();
        format!("{}\nmanifest: {manifest}\n", self.content)
    }
}

pub(crate) fn compose(state: &State, args: ComposeArgs) -> Result<Reply, ToolError> {
    let request = ComposeRequest {
        node_ids: args.node_ids,
        budget_tokens: args.budget_tokens.min(1 << 24) as usize,
        format: match args.format {
            FormatArg::Raw => ComposeFormat::Raw,
            FormatArg::Outline => ComposeFormat::Outline,
        },
        query: args.query,
        depth: args.depth.map(|d| d.min(1 << 16) as usize),
    };
    let (outcome, mut meta) =
        with_graph(state, |graph| batho_ctx::compose::compose(graph, &request))?;
    meta.insert("o200k_tokens".into(), outcome.tokens.into());
    Reply::precut(&outcome, meta)
}

/// `ctx_tree_search` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Words (all must match), "an exact phrase", prefix* terms
    pub query: String,
    /// Search mode: only 'keyword'
    #[serde(default)]
    pub mode: Option<String>,
    /// Max results (default 20, at most 1000)
    #[serde(default)]
    pub limit: Option<u64>,
    /// Filters on status, kind and creation time
    #[serde(default)]
    pub filters: Option<FiltersArg>,
}

fn listed_line(node: &ListedNode) -> String {
    match (node.score, node.created_at) {
        (Some(score), _) => format!("{} {} {score:.3} {}", node.id, node.kind, node.excerpt),
        (None, Some(created)) => format!("{} {} {created} {}", node.id, node.kind, node.excerpt),
        _ => format!("{} {} {}", node.id, node.kind, node.excerpt),
    }
}

pub(crate) fn search(state: &State, args: SearchArgs) -> Result<Reply, ToolError> {
    if let Some(mode) = args.mode.as_deref().filter(|mode| *mode != "keyword") {
        return Err(ToolError::client(format!(
            "mode '{mode}' is not supported; only 'keyword' is"
        )));
    }
    let filters = filters_of(&args.filters)?;
    let limit = args.limit.map(|l| l.min(1 << 20) as usize);
    let (results, meta) = with_graph(state, |graph| {
        batho_ctx::lookup::search(graph, &args.query, &filters, limit)
    })?;
    let listing = Listing {
        results,
        empty: "No stored node matches; ctx_tree_recent lists the newest",
        line: listed_line,
    };
    Reply::new(&listing, meta, ANSWER_TOKENS)
}

/// `ctx_tree_neighbors` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NeighborsArgs {
    /// Starting node id
    pub node_id: String,
    /// Walk depth, 1-5 (default 1)
    #[serde(default)]
    pub depth: Option<u64>,
    /// Edge kinds to follow: derived_from, references, summarizes, supersedes, follows (default: all)
    #[serde(default)]
    pub edge_kinds: Option<Vec<String>>,
    /// Filters on the neighbours
    #[serde(default)]
    pub filters: Option<FiltersArg>,
}

pub(crate) fn neighbors(state: &State, args: NeighborsArgs) -> Result<Reply, ToolError> {
    let edge_kinds = parse_names(
        "edge kind",
        args.edge_kinds.as_deref(),
        EdgeKind::from_name,
        EdgeKind::spellings,
    )?;
    let filters = filters_of(&args.filters)?;
    let depth = args.depth.map(|d| d.min(1 << 16) as usize);
    let (results, meta) = with_graph(state, |graph| {
        batho_ctx::lookup::neighbors(graph, &args.node_id, depth, edge_kinds.as_deref(), &filters)
    })?;
    let listing = Listing {
        results,
        empty: "No neighbours within that depth and filter",
        line: |node: &ReachedNode| {
            format!(
                "{} {} via {} at {}",
                node.id, node.kind, node.edge_kind, node.distance
            )
        },
    };
    Reply::new(&listing, meta, ANSWER_TOKENS)
}

/// `ctx_tree_path_to_root` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathToRootArgs {
    /// Node id to trace
    pub node_id: String,
}

pub(crate) fn path_to_root(state: &State, args: PathToRootArgs) -> Result<Reply, ToolError> {
    let (results, meta) = with_graph(state, |graph| {
        batho_ctx::lookup::path_to_root(graph, &args.node_id)
    })?;
    let listing = Listing {
        results,
        empty: "",
        line: |node: &ChainNode| format!("{} {} {}", node.depth, node.id, node.kind),
    };
    Reply::new(&listing, meta, ANSWER_TOKENS)
}

/// `ctx_tree_recent` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecentArgs {
    /// Created at or after (epoch ms)
    #[serde(default)]
    pub since: Option<i64>,
    /// Max results (default 20, at most 1000)
    #[serde(default)]
    pub limit: Option<u64>,
    /// Filters on status, kind and creation time
    #[serde(default)]
    pub filters: Option<FiltersArg>,
}

pub(crate) fn recent(state: &State, args: RecentArgs) -> Result<Reply, ToolError> {
    let mut filters = filters_of(&args.filters)?;
    if let Some(since) = args.since {
        filters.since = Some(filters.since.map_or(since, |other| other.max(since)));
    }
    let limit = args.limit.map(|l| l.min(1 << 20) as usize);
    let (results, meta) = with_graph(state, |graph| {
        batho_ctx::lookup::recent(graph, &filters, limit)
    })?;
    let listing = Listing {
        results,
        empty: "Nothing stored yet: ctx_tree_read, ctx_tree_grep or ctx_tree_note add nodes",
        line: listed_line,
    };
    Reply::new(&listing, meta, ANSWER_TOKENS)
}

/// `ctx_tree_note` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteArgs {
    /// Note content
    pub content: String,
    /// Short title (default: the first line)
    #[serde(default)]
    pub title: Option<String>,
}

impl ToolOutput for NoteOutcome {
    fn markdown(&self, _: &mut Rows) -> String {
        format!("{} {}\n", self.node_id, self.title)
    }
}

pub(crate) fn note(state: &State, args: NoteArgs) -> Result<Reply, ToolError> {
    let (outcome, meta) = with_graph(state, |graph| {
        batho_ctx::lookup::note(graph, &args.content, args.title.as_deref())
    })?;
    Reply::new(&outcome, meta, ANSWER_TOKENS)
}

/// `ctx_tree_monitor` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MonitorArgs {
    /// Shell command, run with sh -c
    pub command: String,
    /// Timeout in ms (default 30000, at most 600000); the whole process group is killed
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Working folder inside the project (default: the project root)
    #[serde(default)]
    pub cwd: Option<String>,
}

impl ToolOutput for MonitorOutcome {
    fn markdown(&self, _: &mut Rows) -> String {
        let ending = if self.timed_out {
            "timed out".to_string()
        } else {
            format!("exit {}", self.exit_code)
        };
        format!(
            "{} $ {} ({ending}, {} lines{}{})\n{}\n{}\n",
            self.node_id,
            self.command,
            self.lines_captured,
            if self.redactions > 0 {
                format!(", {} secret(s) redacted", self.redactions)
            } else {
                String::new()
            },
            if self.cached { ", cached" } else { "" },
            self.preview,
            self.hint
        )
    }
}

pub(crate) fn monitor(state: &State, args: MonitorArgs) -> Result<Reply, ToolError> {
    let request = MonitorRequest {
        command: args.command,
        timeout_ms: args.timeout_ms,
        cwd: args.cwd,
    };
    let (outcome, meta) = with_graph(state, |graph| batho_ctx::command::monitor(graph, &request))?;
    Reply::new(&outcome, meta, ANSWER_TOKENS)
}
