//! Tool arguments, as the spec names them; defaults appear in the JSON schemas.
//!
//! The arguments most tools share are declared once, as parts flattened into the tools'
//! structs (`#[serde(flatten)]`; schemars inlines their properties): [`RepoArg`],
//! [`Page`], [`Budget`], [`Output`] and [`InactiveCode`]. A part whose default differs per tool takes it as a
//! parameter: `Page<50>` (the default `limit`) and `Output<Concise>` (the default
//! `response_format`, one of the [`DefaultFormat`] markers).

use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::ToolError;

fn default_false() -> bool {
    false
}
fn default_true() -> bool {
    true
}
fn default_debounce_ms() -> u64 {
    2000
}
fn default_max_tokens() -> i64 {
    25000
}
fn default_offset() -> i64 {
    0
}
fn default_trace_depth() -> i64 {
    5
}
fn default_both_directions() -> String {
    "both".into()
}
fn default_outgoing() -> String {
    "outgoing".into()
}
fn default_limit<const LIMIT: i64>() -> i64 {
    LIMIT
}

/// The repository a tool reads (`repo`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RepoArg {
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
}

impl RepoArg {
    /// The name given, if any (`None`: the default repo).
    pub fn name(&self) -> Option<&str> {
        self.repo.as_deref()
    }
}

/// One page of a listing: `limit` (its default is `LIMIT`, which differs per tool) and
/// `offset`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Page<const LIMIT: i64> {
    /// Max items to return
    #[serde(default = "default_limit::<LIMIT>")]
    pub limit: i64,
    /// Pagination offset
    #[serde(default = "default_offset")]
    pub offset: i64,
}

/// Whether code the build's configuration compiles out counts (`include_inactive`; off by
/// default everywhere).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct InactiveCode {
    /// Include code the build's configuration compiles out (inactive `#if` branches)
    #[serde(default = "default_false")]
    pub include_inactive: bool,
}

/// The token budget of the markdown output (`max_tokens`; the same default everywhere).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Budget {
    /// Token budget of the markdown output
    #[serde(default = "default_max_tokens")]
    pub max_tokens: i64,
}

/// How much an answer shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponseFormat {
    /// The fewest lines: counts and names.
    Summary,
    /// The usual answer.
    Concise,
    /// Everything the tool knows (signatures, lines, roles, strategies).
    Detailed,
}

impl ResponseFormat {
    /// Every format, in the order the error message names them.
    const ALL: [ResponseFormat; 3] = [
        ResponseFormat::Summary,
        ResponseFormat::Concise,
        ResponseFormat::Detailed,
    ];

    /// The argument's word for this format.
    pub fn name(self) -> &'static str {
        match self {
            ResponseFormat::Summary => "summary",
            ResponseFormat::Concise => "concise",
            ResponseFormat::Detailed => "detailed",
        }
    }
}

/// A tool's default `response_format`: one of the markers [`Summary`], [`Concise`],
/// [`Detailed`], given as the parameter of [`Output`].
pub trait DefaultFormat {
    /// The format used when the argument is absent or empty.
    const FORMAT: ResponseFormat;
}

/// `response_format` defaults to `summary`.
#[derive(Debug)]
pub enum Summary {}
/// `response_format` defaults to `concise`.
#[derive(Debug)]
pub enum Concise {}
/// `response_format` defaults to `detailed`.
#[derive(Debug)]
pub enum Detailed {}

impl DefaultFormat for Summary {
    const FORMAT: ResponseFormat = ResponseFormat::Summary;
}
impl DefaultFormat for Concise {
    const FORMAT: ResponseFormat = ResponseFormat::Concise;
}
impl DefaultFormat for Detailed {
    const FORMAT: ResponseFormat = ResponseFormat::Detailed;
}

/// `response_format` as the caller wrote it. Decoding never fails on it: an unknown word is
/// refused by [`Output::format`], where each tool has always checked it (after some checks,
/// before others) and with the message it has always had, not as a decoding error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestedFormat {
    /// A format (any case).
    Format(ResponseFormat),
    /// The empty string: the tool's default.
    Empty,
    /// A word naming no format, lowercased.
    Unknown(String),
}

impl<'de> Deserialize<'de> for RequestedFormat {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let word = String::deserialize(deserializer)?.to_ascii_lowercase();
        if word.is_empty() {
            return Ok(RequestedFormat::Empty);
        }
        Ok(ResponseFormat::ALL
            .into_iter()
            .find(|format| format.name() == word)
            .map_or(RequestedFormat::Unknown(word), RequestedFormat::Format))
    }
}

impl Serialize for RequestedFormat {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(match self {
            RequestedFormat::Format(format) => format.name(),
            RequestedFormat::Empty => "",
            RequestedFormat::Unknown(word) => word,
        })
    }
}

impl JsonSchema for RequestedFormat {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RequestedFormat".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string"})
    }
}

fn default_format<D: DefaultFormat>() -> RequestedFormat {
    RequestedFormat::Format(D::FORMAT)
}

/// What an answer shows and how long it may be: `response_format` (its default is `D`'s,
/// which differs per tool) and `max_tokens`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(bound = "")]
#[schemars(bound = "D: DefaultFormat")]
pub struct Output<D: DefaultFormat> {
    /// Output detail level: summary, concise, detailed
    #[serde(default = "default_format::<D>")]
    response_format: RequestedFormat,
    /// The token budget.
    #[serde(flatten)]
    pub budget: Budget,
    #[serde(skip)]
    #[schemars(skip)]
    default: PhantomData<D>,
}

impl<D: DefaultFormat> Output<D> {
    /// The format asked for (the tool's default when absent or empty); an unknown word is a
    /// client error.
    pub fn format(&self) -> Result<ResponseFormat, ToolError> {
        match &self.response_format {
            RequestedFormat::Format(format) => Ok(*format),
            RequestedFormat::Empty => Ok(D::FORMAT),
            RequestedFormat::Unknown(word) => Err(ToolError::client(format!(
                "Invalid response_format '{word}'. Valid: summary, concise, detailed"
            ))),
        }
    }

    /// `max_tokens`.
    pub fn max_tokens(&self) -> i64 {
        self.budget.max_tokens
    }
}

/// list_repos
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListReposArgs {
    /// The token budget.
    #[serde(flatten)]
    pub budget: Budget,
}

/// add_repo
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddRepoArgs {
    /// Repo name (unique identifier in registry)
    pub name: String,
    /// Absolute path to the repository root
    pub path: String,
    /// Enable file watching for automatic re-indexing
    #[serde(default = "default_false")]
    pub watch: bool,
    /// Debounce interval in milliseconds for file watch events
    #[serde(default = "default_debounce_ms")]
    pub debounce_ms: u64,
    /// Maximum file size in KB to index (null for default)
    #[serde(default)]
    pub max_file_size_kb: Option<u64>,
    /// The token budget.
    #[serde(flatten)]
    pub budget: Budget,
}

/// remove_repo
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RemoveRepoArgs {
    /// Repo name to remove
    pub name: String,
    /// The token budget.
    #[serde(flatten)]
    pub budget: Budget,
}

/// graph_overview
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OverviewArgs {
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// The format (default summary) and the budget.
    #[serde(flatten)]
    pub output: Output<Summary>,
}

/// graph_query
#[derive(Debug, Deserialize, JsonSchema)]
pub struct QueryArgs {
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// Filter entities by file path (a file, or a folder prefix such as "src/")
    #[serde(default)]
    pub file_path: Option<String>,
    /// Filter by entity type (e.g. ["function", "struct"]); case-insensitive
    #[serde(default)]
    pub entity_types: Option<Vec<String>>,
    /// Filter relationships by type (CALLS, INCLUDES/IMPORTS, CONTAINS, INHERITS, OVERRIDES, REFERENCES, READS, WRITES, EXPANDS)
    #[serde(default)]
    pub relation_types: Option<Vec<String>>,
    /// Filter relationships by symbol role (OR semantics): Definition, Import, WriteAccess, ReadAccess, Generated, Declaration, Dynamic, Heuristic, Inactive (case-insensitive)
    #[serde(default)]
    pub symbol_roles: Option<Vec<String>>,
    /// Only relationships with confidence >= threshold (0.0-1.0)
    #[serde(default)]
    pub confidence_threshold: Option<f64>,
    /// outgoing (entity is source), incoming (entity is target), both
    #[serde(default = "default_both_directions")]
    pub relation_direction: String,
    /// Whether code the configuration compiles out counts.
    #[serde(flatten)]
    pub inactive: InactiveCode,
    /// Regex matched against entity names (unanchored)
    #[serde(default)]
    pub name_pattern: Option<String>,
    /// The page (default limit 50).
    #[serde(flatten)]
    pub page: Page<50>,
    /// The format (default concise) and the budget.
    #[serde(flatten)]
    pub output: Output<Concise>,
}

/// get_entity
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EntityArgs {
    /// Entity ID from previous query results (path:qualified_name)
    pub entity_id: String,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// Whether code the configuration compiles out counts.
    #[serde(flatten)]
    pub inactive: InactiveCode,
    /// Include source code snippet
    #[serde(default = "default_false")]
    pub include_source: bool,
    /// The format (default detailed) and the budget.
    #[serde(flatten)]
    pub output: Output<Detailed>,
}

/// trace_path
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TraceArgs {
    /// Starting entity ID
    pub source_entity_id: String,
    /// Target entity ID
    pub target_entity_id: String,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// Maximum BFS depth (hops)
    #[serde(default = "default_trace_depth")]
    pub max_depth: i64,
    /// Only traverse these relationship types
    #[serde(default)]
    pub relation_types: Option<Vec<String>>,
    /// Only traverse edges with one of these roles (OR semantics)
    #[serde(default)]
    pub symbol_roles: Option<Vec<String>>,
    /// Only traverse edges with confidence >= threshold (0.0-1.0)
    #[serde(default)]
    pub confidence_threshold: Option<f64>,
    /// Whether code the configuration compiles out counts.
    #[serde(flatten)]
    pub inactive: InactiveCode,
    /// outgoing (source->target), incoming (reverse BFS), both
    #[serde(default = "default_outgoing")]
    pub relation_direction: String,
    /// The format (default concise) and the budget.
    #[serde(flatten)]
    pub output: Output<Concise>,
}

/// get_file_graph
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FileGraphArgs {
    /// File path relative to repo root
    pub file_path: String,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// Whether code the configuration compiles out counts.
    #[serde(flatten)]
    pub inactive: InactiveCode,
    /// Include entities referenced from other files
    #[serde(default = "default_true")]
    pub include_cross_file_refs: bool,
    /// The page (default limit 200 entities, each with its relationships).
    #[serde(flatten)]
    pub page: Page<200>,
    /// The format (default concise) and the budget.
    #[serde(flatten)]
    pub output: Output<Concise>,
}

/// file_connectivity
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ConnectivityArgs {
    /// File path relative to repo root (forward slashes)
    pub file_path: String,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// outgoing (files this file depends on), incoming (files that depend on it), both
    #[serde(default = "default_both_directions")]
    pub direction: String,
    /// Include stdlib/external references in the output
    #[serde(default = "default_false")]
    pub include_external: bool,
    /// The page (default limit 100 dependency files, outgoing first, then incoming).
    #[serde(flatten)]
    pub page: Page<100>,
    /// Only include edges with confidence >= threshold (0.0-1.0)
    #[serde(default)]
    pub min_confidence: Option<f64>,
    /// The format (default concise) and the budget.
    #[serde(flatten)]
    pub output: Output<Concise>,
}

/// search_entities
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// Search query (substring, or a regex when it is one), case-insensitive
    pub query: String,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// Filter by entity type
    #[serde(default)]
    pub entity_types: Option<Vec<String>>,
    /// Whether code the configuration compiles out counts.
    #[serde(flatten)]
    pub inactive: InactiveCode,
    /// Only entities that take part in relationships with one of these roles
    #[serde(default)]
    pub symbol_roles: Option<Vec<String>>,
    /// The page (default limit 25).
    #[serde(flatten)]
    pub page: Page<25>,
    /// The format (default concise) and the budget.
    #[serde(flatten)]
    pub output: Output<Concise>,
}

/// batho_status
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StatusArgs {
    // Not a `RepoArg`: omitting it means every repo, not the default one.
    /// Repo name to check (omit for all registered repos)
    #[serde(default)]
    pub repo: Option<String>,
    /// The token budget.
    #[serde(flatten)]
    pub budget: Budget,
}

/// batho_build
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BuildArgs {
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// Force full rebuild (replaces the existing artifact)
    #[serde(default = "default_false")]
    pub full: bool,
    /// Max parallel workers for parsing (default: CPU count)
    #[serde(default)]
    pub max_workers: Option<u64>,
    /// Skip files exceeding this size in KB (default: config default)
    #[serde(default)]
    pub max_file_size_kb: Option<u64>,
    /// auto, in-memory, or arrow (accepted for compatibility; Batho has one backend)
    #[serde(default)]
    pub graph_backend: Option<String>,
    /// The token budget.
    #[serde(flatten)]
    pub budget: Budget,
}

fn default_all() -> String {
    "all".into()
}

/// batho_list_runs
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListRunsArgs {
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    // Not a `Page`: runs take no offset.
    /// Max runs to return, newest first
    #[serde(default = "default_limit::<20>")]
    pub limit: i64,
    /// The token budget.
    #[serde(flatten)]
    pub budget: Budget,
}

/// batho_fix
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FixArgs {
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// Deep verification: re-hash every segment and re-derive every index (slower)
    #[serde(default = "default_false")]
    pub deep: bool,
    /// Report issues without repairing
    #[serde(default = "default_false")]
    pub dry_run: bool,
    /// Repair target: all, blobs, graph, state
    #[serde(default = "default_all")]
    pub target: String,
    /// Run only this phase (1 bundle/manifest, 2 state, 3 blobs, 4 graph)
    #[serde(default)]
    pub phase: Option<i64>,
    /// Spread hashing and verification over every core
    #[serde(default = "default_false")]
    pub parallel: bool,
    /// The token budget.
    #[serde(flatten)]
    pub budget: Budget,
}

/// get_delta
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DeltaArgs {
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// Specific run UUID (or unique prefix); default: the latest run with a predecessor
    #[serde(default)]
    pub run_id: Option<String>,
    /// Filter: added, removed, modified, renamed (default: all)
    #[serde(default)]
    pub change_kind: Option<String>,
    /// Filter changes by file path (exact path or path prefix)
    #[serde(default)]
    pub file_path: Option<String>,
    /// The page (default limit 100 changes).
    #[serde(flatten)]
    pub page: Page<100>,
    /// The format (default concise) and the budget.
    #[serde(flatten)]
    pub output: Output<Concise>,
}

/// batho_diff
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DiffArgs {
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// Specific run UUID (or unique prefix) to diff; default: the latest run with a predecessor
    #[serde(default)]
    pub run_id: Option<String>,
    /// Filter changes to a specific entity
    #[serde(default)]
    pub entity_id: Option<String>,
    /// Filter changes by file path (exact path or path prefix)
    #[serde(default)]
    pub file_path: Option<String>,
    /// Run UUID (or a generation number) to diff from (defaults to the previous run)
    #[serde(default)]
    pub since: Option<String>,
    /// The page (default limit 100 changes).
    #[serde(flatten)]
    pub page: Page<100>,
    /// The token budget.
    #[serde(flatten)]
    pub budget: Budget,
}

/// batho_patch
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PatchArgs {
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// Skip files exceeding this size in KB (default: config default)
    #[serde(default)]
    pub max_file_size_kb: Option<u64>,
    /// auto, in-memory, or arrow (accepted for compatibility; Batho has one backend)
    #[serde(default)]
    pub graph_backend: Option<String>,
    /// The token budget.
    #[serde(flatten)]
    pub budget: Budget,
}

fn default_export_view() -> String {
    "storage".into()
}
fn default_gc_subcommand() -> String {
    "status".into()
}

/// batho_export
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExportArgs {
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// Export view: storage (full fidelity, with source) or agent (compact, for LLMs)
    #[serde(default = "default_export_view")]
    pub view: String,
    /// Output file path (relative paths are under the repo root; default: .batho/exports/<repo>-<view>-g<generation>.json, or .tar when json_mode=false)
    #[serde(default)]
    pub output: Option<String>,
    /// Specific index/run ID to export (default: the latest generation)
    #[serde(default)]
    pub index_id: Option<String>,
    /// Glob pattern to filter files (e.g. "src/**/*.c")
    #[serde(default)]
    pub filter_pattern: Option<String>,
    /// Export category: all, entities, relationships, files
    #[serde(default = "default_all")]
    pub category: String,
    /// Token budget for the LLM-optimized (agent) export
    #[serde(default)]
    pub token_budget: Option<i64>,
    /// Export as JSON (false = Pack binary: the transport archive for batho_load)
    #[serde(default = "default_true")]
    pub json_mode: bool,
    /// Include relationship data in export (always included for category all and relationships)
    #[serde(default = "default_false")]
    pub include_relationships: bool,
    /// The token budget.
    #[serde(flatten)]
    pub budget: Budget,
}

/// batho_load
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LoadArgs {
    /// Path to the transport artifact (the .tar written by batho_export with json_mode=false)
    pub artifact_path: String,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// Overwrite an existing artifact of another database or with newer runs
    #[serde(default = "default_false")]
    pub force: bool,
    /// The token budget.
    #[serde(flatten)]
    pub budget: Budget,
}

/// batho_gc
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GcArgs {
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// GC action: status, prune, compact, reclaim
    #[serde(default = "default_gc_subcommand")]
    pub subcommand: String,
    /// Target a specific run UUID for pruning
    #[serde(default)]
    pub run_uuid: Option<String>,
    /// Prune runs older than N days
    #[serde(default)]
    pub older_than: Option<i64>,
    /// The token budget.
    #[serde(flatten)]
    pub budget: Budget,
}

/// How much an Astria answer keeps: every fact, or only the two strongest evidence classes
/// (EXTRACTED and RESOLVED; `batho_schema::Provenance`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Detail {
    /// Every relationship.
    #[default]
    All,
    /// Only relationships read off the syntax tree or bound to the one definition of a name.
    High,
}

/// explain (Astria)
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExplainArgs {
    /// Node: an entity id, a qualified name or a name
    pub node: String,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
}

/// shortest_path (Astria)
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShortestPathArgs {
    /// Start node: an entity id, a qualified name or a name
    pub source: String,
    /// End node: an entity id, a qualified name or a name
    pub target: String,
    /// Follow relationships only in their stored direction
    #[serde(default)]
    pub directed: bool,
    /// all, or high (only EXTRACTED and RESOLVED relationships)
    #[serde(default)]
    pub detail: Detail,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
}

/// list_communities (Astria)
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CommunitiesArgs {
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    /// The page (default limit 100 communities, largest first).
    #[serde(flatten)]
    pub page: Page<100>,
}

/// health and the other Astria tools the seed gives no arguments (Astria)
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RepoArgs {
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
}

/// god_nodes (Astria)
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GodNodesArgs {
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
    // Not a `Page`: the ranking takes no offset.
    /// How many nodes
    #[serde(default = "default_limit::<20>")]
    pub limit: i64,
    /// Count file nodes and external stubs too
    #[serde(default)]
    pub include_all: bool,
}

/// get_neighbors (Astria)
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NeighborsArgs {
    /// Node: an entity id, a qualified name or a name
    pub node: String,
    /// Only this relation (calls, imports, includes, references, uses, reads, writes, inherits, overrides, contains, expands, depends_on, requires, imports_from)
    #[serde(default)]
    pub relation: Option<String>,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
}

fn default_affected_depth() -> i64 {
    2
}

/// affected (Astria)
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AffectedArgs {
    /// Node: an entity id, a qualified name or a name (or give changed_files or diff)
    #[serde(default)]
    pub node: Option<String>,
    /// Hops of reverse reachability
    #[serde(default = "default_affected_depth")]
    pub depth: i64,
    /// Only this impact relation (calls, references, imports, imports_from, uses, depends_on, requires, inherits)
    #[serde(default)]
    pub relation: Option<String>,
    /// Files whose entities all count as changed
    #[serde(default)]
    pub changed_files: Option<Vec<String>>,
    /// A unified diff (git diff): the entities holding its changed lines count as changed
    #[serde(default)]
    pub diff: Option<String>,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
}

/// The default `budget` of repo_map and query_graph.
fn default_astria_budget() -> i64 {
    2000
}

/// repo_map (Astria)
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RepoMapArgs {
    /// Approximate size: the map is cut at about 3 characters per unit
    #[serde(default = "default_astria_budget")]
    pub budget: i64,
    /// all, or high (only definitions, no prototypes or forward declarations)
    #[serde(default)]
    pub detail: Detail,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
}

fn default_query_depth() -> i64 {
    2
}

/// How query_graph walks: breadth-first or depth-first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TraversalMode {
    /// Breadth-first: every node at depth 1, then depth 2, …
    #[default]
    Bfs,
    /// Depth-first: down the first relationship first.
    Dfs,
}

/// query_graph (Astria)
#[derive(Debug, Deserialize, JsonSchema)]
pub struct QueryGraphArgs {
    /// A natural-language question; its words find the start nodes (BM25 over names, signatures and paths)
    pub question: String,
    /// bfs or dfs
    #[serde(default)]
    pub mode: TraversalMode,
    /// Maximum traversal depth (0 to 6)
    #[serde(default = "default_query_depth")]
    pub depth: i64,
    /// Maximum o200k_base tokens of the text, header and continuation line included
    #[serde(default = "default_astria_budget")]
    pub budget: i64,
    /// Follow relationships only in their stored direction
    #[serde(default)]
    pub directed: bool,
    /// all, or high (only EXTRACTED and RESOLVED relationships)
    #[serde(default)]
    pub detail: Detail,
    /// Continuation token from a previous truncated answer (the record to start at)
    #[serde(default)]
    pub cursor: i64,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArg,
}
