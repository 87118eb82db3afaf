//! Tool arguments, as the spec names them; defaults appear in the JSON schemas.

use schemars::JsonSchema;
use serde::Deserialize;

fn d_false() -> bool {
    false
}
fn d_true() -> bool {
    true
}
fn d_debounce() -> u64 {
    2000
}
fn d_tokens() -> i64 {
    25000
}
fn d_limit50() -> i64 {
    50
}
fn d_limit25() -> i64 {
    25
}
fn d_limit200() -> i64 {
    200
}
fn d_zero() -> i64 {
    0
}
fn d_depth() -> i64 {
    5
}
fn d_both() -> String {
    "both".into()
}
fn d_outgoing() -> String {
    "outgoing".into()
}
fn d_summary() -> String {
    "summary".into()
}
fn d_concise() -> String {
    "concise".into()
}
fn d_detailed() -> String {
    "detailed".into()
}

/// list_repos
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListReposArgs {
    /// Token budget
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// add_repo
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddRepoArgs {
    /// Repo name (unique identifier in registry)
    pub name: String,
    /// Absolute path to the repository root
    pub path: String,
    /// Enable file watching for automatic re-indexing
    #[serde(default = "d_false")]
    pub watch: bool,
    /// Debounce interval in milliseconds for file watch events
    #[serde(default = "d_debounce")]
    pub debounce_ms: u64,
    /// Maximum file size in KB to index (null for default)
    #[serde(default)]
    pub max_file_size_kb: Option<u64>,
    /// Token budget of the markdown output
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// remove_repo
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RemoveRepoArgs {
    /// Repo name to remove
    pub name: String,
    /// Token budget of the markdown output
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// graph_overview
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OverviewArgs {
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// Output detail level: summary, concise, detailed
    #[serde(default = "d_summary")]
    pub response_format: String,
    /// Token budget for markdown output
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// graph_query
#[derive(Debug, Deserialize, JsonSchema)]
pub struct QueryArgs {
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// Filter entities by file path (a file, or a folder prefix such as "src/")
    #[serde(default)]
    pub file_path: Option<String>,
    /// Filter by entity type (e.g. ["function", "struct"]); case-insensitive
    #[serde(default)]
    pub entity_types: Option<Vec<String>>,
    /// Filter relationships by type (CALLS, INCLUDES/IMPORTS, CONTAINS, INHERITS, OVERRIDES, REFERENCES, READS, WRITES, EXPANDS)
    #[serde(default)]
    pub relation_types: Option<Vec<String>>,
    /// Filter relationships by symbol role (OR semantics): Definition, Import, WriteAccess, ReadAccess, Generated, Declaration, Dynamic, Heuristic (case-insensitive)
    #[serde(default)]
    pub symbol_roles: Option<Vec<String>>,
    /// Only relationships with confidence >= threshold (0.0-1.0)
    #[serde(default)]
    pub confidence_threshold: Option<f64>,
    /// outgoing (entity is source), incoming (entity is target), both
    #[serde(default = "d_both")]
    pub relation_direction: String,
    /// Regex matched against entity names (unanchored)
    #[serde(default)]
    pub name_pattern: Option<String>,
    /// Output format: concise, detailed
    #[serde(default = "d_concise")]
    pub response_format: String,
    /// Max entities to return
    #[serde(default = "d_limit50")]
    pub limit: i64,
    /// Pagination offset
    #[serde(default = "d_zero")]
    pub offset: i64,
    /// Token budget
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// get_entity
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EntityArgs {
    /// Entity ID from previous query results (path:qualified_name)
    pub entity_id: String,
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// Include source code snippet
    #[serde(default = "d_false")]
    pub include_source: bool,
    /// Output format: summary, concise, detailed
    #[serde(default = "d_detailed")]
    pub response_format: String,
    /// Token budget
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// trace_path
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TraceArgs {
    /// Starting entity ID
    pub source_entity_id: String,
    /// Target entity ID
    pub target_entity_id: String,
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// Maximum BFS depth (hops)
    #[serde(default = "d_depth")]
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
    /// outgoing (source->target), incoming (reverse BFS), both
    #[serde(default = "d_outgoing")]
    pub relation_direction: String,
    /// Output format: concise, detailed
    #[serde(default = "d_concise")]
    pub response_format: String,
    /// Token budget of the markdown output
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// get_file_graph
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FileGraphArgs {
    /// File path relative to repo root
    pub file_path: String,
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// Include entities referenced from other files
    #[serde(default = "d_true")]
    pub include_cross_file_refs: bool,
    /// Max entities to return (each with its relationships)
    #[serde(default = "d_limit200")]
    pub limit: i64,
    /// Pagination offset
    #[serde(default = "d_zero")]
    pub offset: i64,
    /// Output format: concise, detailed
    #[serde(default = "d_concise")]
    pub response_format: String,
    /// Token budget
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// file_connectivity
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ConnectivityArgs {
    /// File path relative to repo root (forward slashes)
    pub file_path: String,
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// outgoing (files this file depends on), incoming (files that depend on it), both
    #[serde(default = "d_both")]
    pub direction: String,
    /// Include stdlib/external references in the output
    #[serde(default = "d_false")]
    pub include_external: bool,
    /// Max dependency files to return (outgoing first, then incoming)
    #[serde(default = "d_limit100")]
    pub limit: i64,
    /// Pagination offset
    #[serde(default = "d_zero")]
    pub offset: i64,
    /// Only include edges with confidence >= threshold (0.0-1.0)
    #[serde(default)]
    pub min_confidence: Option<f64>,
    /// Output format: concise, detailed
    #[serde(default = "d_concise")]
    pub response_format: String,
    /// Token budget
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// search_entities
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// Search query (substring, or a regex when it is one), case-insensitive
    pub query: String,
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// Filter by entity type
    #[serde(default)]
    pub entity_types: Option<Vec<String>>,
    /// Only entities that take part in relationships with one of these roles
    #[serde(default)]
    pub symbol_roles: Option<Vec<String>>,
    /// Max results to return
    #[serde(default = "d_limit25")]
    pub limit: i64,
    /// Pagination offset
    #[serde(default = "d_zero")]
    pub offset: i64,
    /// Output format: concise, detailed
    #[serde(default = "d_concise")]
    pub response_format: String,
    /// Token budget
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// batho_status
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StatusArgs {
    /// Repo name to check (omit for all registered repos)
    #[serde(default)]
    pub repo: Option<String>,
    /// Token budget of the markdown output
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// batho_build
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BuildArgs {
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// Force full rebuild (replaces the existing artifact)
    #[serde(default = "d_false")]
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
    /// Token budget of the markdown output
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

fn d_limit20() -> i64 {
    20
}

fn d_all() -> String {
    "all".into()
}

/// batho_list_runs
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListRunsArgs {
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// Max runs to return, newest first
    #[serde(default = "d_limit20")]
    pub limit: i64,
    /// Token budget of the markdown output
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// batho_fix
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FixArgs {
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// Deep verification: re-hash every segment and re-derive every index (slower)
    #[serde(default = "d_false")]
    pub deep: bool,
    /// Report issues without repairing
    #[serde(default = "d_false")]
    pub dry_run: bool,
    /// Repair target: all, blobs, graph, state
    #[serde(default = "d_all")]
    pub target: String,
    /// Run only this phase (1 bundle/manifest, 2 state, 3 blobs, 4 graph)
    #[serde(default)]
    pub phase: Option<i64>,
    /// Spread hashing and verification over every core
    #[serde(default = "d_false")]
    pub parallel: bool,
    /// Token budget of the markdown output
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

fn d_limit100() -> i64 {
    100
}

/// get_delta
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DeltaArgs {
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// Specific run UUID (or unique prefix); default: the latest run with a predecessor
    #[serde(default)]
    pub run_id: Option<String>,
    /// Filter: added, removed, modified, renamed (default: all)
    #[serde(default)]
    pub change_kind: Option<String>,
    /// Filter changes by file path (exact path or path prefix)
    #[serde(default)]
    pub file_path: Option<String>,
    /// Max changes to return
    #[serde(default = "d_limit100")]
    pub limit: i64,
    /// Pagination offset
    #[serde(default = "d_zero")]
    pub offset: i64,
    /// Output format: summary, concise or detailed
    #[serde(default = "d_concise")]
    pub response_format: String,
    /// Token budget of the markdown output
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// batho_diff
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DiffArgs {
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
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
    /// Max changes to return
    #[serde(default = "d_limit100")]
    pub limit: i64,
    /// Pagination offset
    #[serde(default = "d_zero")]
    pub offset: i64,
    /// Token budget of the markdown output
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// batho_patch
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PatchArgs {
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// Skip files exceeding this size in KB (default: config default)
    #[serde(default)]
    pub max_file_size_kb: Option<u64>,
    /// auto, in-memory, or arrow (accepted for compatibility; Batho has one backend)
    #[serde(default)]
    pub graph_backend: Option<String>,
    /// Token budget of the markdown output
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

fn d_storage() -> String {
    "storage".into()
}
fn d_status() -> String {
    "status".into()
}

/// batho_export
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExportArgs {
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// Export view: storage (full fidelity, with source) or agent (compact, for LLMs)
    #[serde(default = "d_storage")]
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
    #[serde(default = "d_all")]
    pub category: String,
    /// Token budget for the LLM-optimized (agent) export
    #[serde(default)]
    pub token_budget: Option<i64>,
    /// Export as JSON (false = Pack binary: the transport archive for batho_load)
    #[serde(default = "d_true")]
    pub json_mode: bool,
    /// Include relationship data in export (always included for category all and relationships)
    #[serde(default = "d_false")]
    pub include_relationships: bool,
    /// Token budget of the markdown output
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// batho_load
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LoadArgs {
    /// Path to the transport artifact (the .tar written by batho_export with json_mode=false)
    pub artifact_path: String,
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// Overwrite an existing artifact of another database or with newer runs
    #[serde(default = "d_false")]
    pub force: bool,
    /// Token budget of the markdown output
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
}

/// batho_gc
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GcArgs {
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// GC action: status, prune, compact, reclaim
    #[serde(default = "d_status")]
    pub subcommand: String,
    /// Target a specific run UUID for pruning
    #[serde(default)]
    pub run_uuid: Option<String>,
    /// Prune runs older than N days
    #[serde(default)]
    pub older_than: Option<i64>,
    /// Token budget of the markdown output
    #[serde(default = "d_tokens")]
    pub max_tokens: i64,
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
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
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
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
}

/// list_communities (Astria)
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CommunitiesArgs {
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// Most communities to list, largest first
    #[serde(default = "d_limit100")]
    pub limit: i64,
    /// Communities to skip
    #[serde(default = "d_zero")]
    pub offset: i64,
}

/// health and the other Astria tools the seed gives no arguments (Astria)
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RepoArgs {
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
}

/// god_nodes (Astria)
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GodNodesArgs {
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
    /// How many nodes
    #[serde(default = "d_limit20")]
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
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
}

fn d_depth2() -> i64 {
    2
}

/// affected (Astria)
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AffectedArgs {
    /// Node: an entity id, a qualified name or a name (or give changed_files or diff)
    #[serde(default)]
    pub node: Option<String>,
    /// Hops of reverse reachability
    #[serde(default = "d_depth2")]
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
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
}

fn d_budget() -> i64 {
    2000
}

/// repo_map (Astria)
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RepoMapArgs {
    /// Approximate size: the map is cut at about 3 characters per unit
    #[serde(default = "d_budget")]
    pub budget: i64,
    /// all, or high (only definitions, no prototypes or forward declarations)
    #[serde(default)]
    pub detail: Detail,
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
}

fn d_query_depth() -> i64 {
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
    #[serde(default = "d_query_depth")]
    pub depth: i64,
    /// Maximum o200k_base tokens of the text, header and continuation line included
    #[serde(default = "d_budget")]
    pub budget: i64,
    /// Follow relationships only in their stored direction
    #[serde(default)]
    pub directed: bool,
    /// all, or high (only EXTRACTED and DECLARED relationships)
    #[serde(default)]
    pub detail: Detail,
    /// Continuation token from a previous truncated answer (the record to start at)
    #[serde(default = "d_zero")]
    pub cursor: i64,
    /// Repo name from registry (default: the first registered)
    #[serde(default)]
    pub repo: Option<String>,
}
