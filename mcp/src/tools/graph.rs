//! graph_overview, graph_query, get_entity and search_entities.

use std::collections::HashMap;
use std::fmt::Write as _;

use batho_engine::query::{QueryResult, Value};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value as Json};

use super::args::{EntityArgs, OverviewArgs, QueryArgs, ResponseFormat, SearchArgs};
use super::cells::{FromRecord, Record, column_texts, decode_first, decode_rows, first_int};
use super::records::{CommunityRow, EdgeRow, EntityRow};
use super::{
    AppliedRelationFilters, Direction, Pagination, RelationFilters, Reply, Rows, ToolOutput,
    UseSites, active_filter, four_decimals, kinds, lines, positive, rel_filter, roles, type_label,
    where_clause,
};
use crate::error::ToolError;
use crate::state::{Ctx, State};

/// Entities exclude file nodes and external stubs unless a type filter names them.
fn kind_filter(var: &str, types: &[&str]) -> String {
    if types.is_empty() {
        format!("NOT {var}:File AND NOT {var}:External")
    } else {
        format!("{var}.kind IN $entity_types")
    }
}

/// Names as a BQL list parameter.
fn text_list(v: &[&str]) -> Value {
    Value::List(v.iter().map(|s| Value::from(*s)).collect())
}

/// A name and how many: a node label or a relationship type with its count.
struct NamedCount {
    name: String,
    count: i64,
}

impl NamedCount {
    /// Every row of `result`, its name in `name_column` and its number in `count`.
    fn read_all(result: &QueryResult, name_column: &str) -> Result<Vec<NamedCount>, ToolError> {
        result
            .rows
            .iter()
            .map(|cells| {
                let record = Record::new(&result.columns, cells);
                Ok(NamedCount {
                    name: record.text(name_column)?,
                    count: record.int("count")?,
                })
            })
            .collect()
    }
}

/// Counts as a JSON object keyed by the lowercased names, in their order.
fn lowercase_counts<S: Serializer>(
    counts: &[NamedCount],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(counts.len()))?;
    for named in counts {
        map.serialize_entry(&named.name.to_ascii_lowercase(), &named.count)?;
    }
    map.end()
}

/// A community as graph_overview shows it.
#[derive(Serialize)]
struct OverviewCommunity {
    id: i64,
    name: String,
    entity_count: i64,
    file_count: i64,
    cohesion: f64,
}

impl From<CommunityRow> for OverviewCommunity {
    fn from(row: CommunityRow) -> OverviewCommunity {
        OverviewCommunity {
            id: row.id,
            name: row.label,
            entity_count: row.entities,
            file_count: row.files,
            cohesion: row.cohesion,
        }
    }
}

/// The newest run: its id, commit and branch (empty when unknown).
#[derive(Default)]
struct RunHead {
    id: String,
    commit: String,
    branch: String,
}

impl FromRecord for RunHead {
    fn from_record(record: &Record) -> Result<RunHead, ToolError> {
        Ok(RunHead {
            id: record.text("id")?,
            commit: record.text("commit")?,
            branch: record.text("branch")?,
        })
    }
}

/// graph_overview's statistics.
#[derive(Serialize)]
struct OverviewStats {
    total_entities: i64,
    total_relationships: i64,
    total_files: i64,
    headers_outside_tree: i64,
    #[serde(serialize_with = "lowercase_counts")]
    entity_breakdown: Vec<NamedCount>,
    #[serde(serialize_with = "lowercase_counts")]
    relationship_breakdown: Vec<NamedCount>,
    ambiguous_edge_count: i64,
    run_id: String,
    git_commit: String,
    git_branch: String,
}

impl OverviewStats {
    /// The statistics from the label and relationship-type counts; `files` counts the files
    /// of the tree (File nodes without a path stand for headers from outside it).
    fn new(
        kinds: Vec<NamedCount>,
        relations: Vec<NamedCount>,
        files: i64,
        ambiguous: i64,
        run: RunHead,
    ) -> OverviewStats {
        let (mut entities, mut file_nodes) = (0, 0);
        for kind in &kinds {
            match kind.name.as_str() {
                "File" => file_nodes = kind.count,
                "External" => {}
                _ => entities += kind.count,
            }
        }
        OverviewStats {
            total_entities: entities,
            total_relationships: relations.iter().map(|relation| relation.count).sum(),
            total_files: files,
            headers_outside_tree: file_nodes - files,
            entity_breakdown: kinds,
            relationship_breakdown: relations,
            ambiguous_edge_count: ambiguous,
            run_id: run.id,
            git_commit: run.commit,
            git_branch: run.branch,
        }
    }

    /// The head of the overview: totals, the run, the breakdowns.
    fn markdown(&self, md: &mut String, format: ResponseFormat) {
        let _ = writeln!(
            md,
            "**Stats:** {} entities, {} relationships, {} files",
            self.total_entities, self.total_relationships, self.total_files
        );
        if self.headers_outside_tree > 0 {
            let _ = writeln!(
                md,
                "**Headers included from outside the tree:** {} (not counted as files)",
                self.headers_outside_tree
            );
        }
        if !self.run_id.is_empty() {
            let short = &self.git_commit[..self.git_commit.len().min(7)];
            let _ = write!(md, "**Run:** {}", self.run_id);
            if !short.is_empty() {
                let _ = write!(md, " | commit: {short}");
            }
            if !self.git_branch.is_empty() {
                let _ = write!(md, " | branch: {}", self.git_branch);
            }
            md.push('\n');
        }
        if self.ambiguous_edge_count > 0 {
            let _ = writeln!(md, "**Ambiguous edges:** {}", self.ambiguous_edge_count);
        }
        md.push_str("\n## Entity Breakdown\n");
        for kind in &self.entity_breakdown {
            let _ = writeln!(md, "- {}: {}", kind.name.to_ascii_lowercase(), kind.count);
        }
        if format != ResponseFormat::Summary {
            md.push_str("\n## Relationship Breakdown\n");
            for relation in &self.relationship_breakdown {
                let _ = writeln!(md, "- {}: {}", relation.name, relation.count);
            }
        }
    }
}

/// graph_overview's answer.
#[derive(Serialize)]
struct Overview {
    stats: OverviewStats,
    communities: Vec<OverviewCommunity>,
    /// The files listed (none in the summary format).
    files: Option<Vec<String>>,
}

/// graph_overview's answer, with the format it is printed in.
#[derive(Serialize)]
struct OverviewOutput {
    overview: Overview,
    #[serde(skip)]
    format: ResponseFormat,
}

impl ToolOutput for OverviewOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let overview = &self.overview;
        let mut md = String::from("# Codebase Overview\n\n");
        overview.stats.markdown(&mut md, self.format);
        if !overview.communities.is_empty() {
            md.push_str("\n## Communities\n");
        }
        for (k, community) in overview.communities.iter().enumerate() {
            let _ = writeln!(
                md,
                "{}. **{}** — {} entities across {} files, {:.0}% of their links inside",
                k + 1,
                community.name,
                community.entity_count,
                community.file_count,
                community.cohesion * 100.0
            );
        }
        if let Some(files) = &overview.files {
            let total = overview.stats.total_files;
            let _ = writeln!(md, "\n## Files ({total})");
            for file in files {
                let _ = writeln!(md, "- {file}");
            }
            if total > files.len() as i64 {
                let _ = writeln!(md, "- … {} more", total - files.len() as i64);
            }
        }
        md
    }
}

pub(crate) fn graph_overview(st: &State, a: OverviewArgs) -> Result<Reply, ToolError> {
    let format = a.output.format()?;
    positive("max_tokens", a.output.max_tokens())?;
    let mut cx = st.ctx(a.repo.name())?;
    let kinds = cx.run(
        "CALL db.labels() YIELD label, count WHERE count > 0 RETURN label, count ORDER BY count DESC, label",
        &[],
    )?;
    let relations = cx.run(
        "CALL db.relationshipTypes() YIELD relationshipType, count WHERE count > 0 RETURN relationshipType, count ORDER BY count DESC, relationshipType",
        &[],
    )?;
    let ambiguous = cx.run(
        "MATCH ()-[r]->() WHERE r.strategy = 'ambiguous' RETURN count(*) AS ambiguous",
        &[],
    )?;
    let community_limit: i64 = if format == ResponseFormat::Detailed {
        50
    } else {
        10
    };
    // Each community with its label (unique, from its most connected members and main
    // directory), computed in one pass by the engine.
    let communities = cx.run(
        "CALL db.communities() YIELD community, label, entities, files, cohesion \
         RETURN community, label, entities, files, cohesion \
         ORDER BY entities DESC, community LIMIT $limit",
        &[("limit", Value::Int(community_limit))],
    )?;
    let file_limit: i64 = match format {
        ResponseFormat::Summary => 0,
        ResponseFormat::Concise => 30,
        ResponseFormat::Detailed => 500,
    };
    // File nodes without a path stand for headers included from outside the tree
    // (`<stdio.h>`): they are counted apart and never listed as files.
    let file_count = cx.run(
        "MATCH (f:File) WHERE f.file <> '' RETURN count(*) AS files",
        &[],
    )?;
    let files = if file_limit > 0 {
        let listed = cx.run(
            "MATCH (f:File) WHERE f.file <> '' RETURN f.file AS file ORDER BY file LIMIT $limit",
            &[("limit", Value::Int(file_limit))],
        )?;
        Some(column_texts(&listed, "file")?)
    } else {
        None
    };
    let run = cx.run(
        "CALL db.runs(1) YIELD id, commit, branch RETURN id, commit, branch",
        &[],
    )?;
    let stats = OverviewStats::new(
        NamedCount::read_all(&kinds, "label")?,
        NamedCount::read_all(&relations, "relationshipType")?,
        first_int(&file_count, "files")?,
        first_int(&ambiguous, "ambiguous")?,
        decode_first(&run)?.unwrap_or_default(),
    );
    let communities: Vec<CommunityRow> = decode_rows(&communities)?;
    let output = OverviewOutput {
        overview: Overview {
            stats,
            communities: communities
                .into_iter()
                .map(OverviewCommunity::from)
                .collect(),
            files,
        },
        format,
    };
    Reply::new(&output, cx.meta(), a.output.max_tokens())
}

/// graph_query's validated filters.
struct QueryFilters {
    format: ResponseFormat,
    limit: i64,
    types: Vec<&'static str>,
    relations: RelationFilters,
}

fn query_filters(a: &QueryArgs) -> Result<QueryFilters, ToolError> {
    let format = a.output.format()?;
    let limit = positive("limit", a.page.limit)?;
    positive("max_tokens", a.output.max_tokens())?;
    if a.page.offset < 0 {
        return Err(ToolError::client(format!(
            "offset must be >= 0, got {}",
            a.page.offset
        )));
    }
    let types = kinds(a.entity_types.as_deref().unwrap_or_default())?;
    let relations = RelationFilters::parse(
        a.relation_types.as_deref(),
        a.symbol_roles.as_deref(),
        a.confidence_threshold,
        &a.relation_direction,
        Direction::Both,
    )?;
    if let Some(p) = &a.name_pattern {
        regex::Regex::new(p).map_err(|e| {
            ToolError::client(format!("Invalid regex in name_pattern '{p}': {e}"))
                .hint("escape special characters, e.g. 'foo\\(' or use a plain substring")
        })?;
    }
    Ok(QueryFilters {
        format,
        limit,
        types,
        relations,
    })
}

/// The page of entities: one row more than `limit`, which tells whether another page exists.
fn query_entities(
    cx: &mut Ctx,
    a: &QueryArgs,
    filters: &QueryFilters,
) -> Result<Vec<EntityRow>, ToolError> {
    let mut node_where = vec![kind_filter("n", &filters.types)];
    node_where.extend(active_filter(a.inactive.include_inactive, None, &["n"]));
    let mut params: Vec<(&str, Value)> = Vec::new();
    if !filters.types.is_empty() {
        params.push(("entity_types", text_list(&filters.types)));
    }
    if let Some(fp) = a.file_path.as_deref().filter(|f| !f.is_empty()) {
        node_where.push("n.file STARTS WITH $file_path".into());
        params.push(("file_path", Value::from(fp.trim_start_matches("./"))));
    }
    if let Some(p) = &a.name_pattern {
        node_where.push("n.name =~ $name_pattern".into());
        params.push(("name_pattern", Value::from(whole_name_pattern(p))));
    }
    let rel = &filters.relations;
    if let Some(c) = rel.min_conf {
        params.push(("min_confidence", Value::Float(c)));
    }
    let rel_filtered = !rel.rel_types.is_empty() || !rel.roles.is_empty() || rel.min_conf.is_some();
    let node_cols = "n.id AS id, n.name AS name, n.kind AS kind, n.file AS file, n.start_line AS start_line, n.end_line AS end_line";
    let text = if rel_filtered {
        let (l, r) = rel.dir.arrows();
        let mut w = node_where;
        w.extend(rel_filter(&rel.roles, rel.min_conf));
        w.extend(active_filter(a.inactive.include_inactive, Some("r"), &[]));
        format!(
            "MATCH (n){l}[r{}]{r}(){} WITH DISTINCT n RETURN {node_cols} ORDER BY file, start_line, id SKIP $offset LIMIT $limit",
            type_label(&rel.rel_types),
            where_clause(&w)
        )
    } else {
        format!(
            "MATCH (n){} RETURN {node_cols} ORDER BY file, start_line, id SKIP $offset LIMIT $limit",
            where_clause(&node_where)
        )
    };
    params.push(("offset", Value::Int(a.page.offset)));
    params.push(("limit", Value::Int(filters.limit.saturating_add(1))));
    decode_rows(&cx.run(&text, &params)?)
}

/// The relationships of the page's entities that pass the filters, in page order (the
/// `UNWIND` keeps the order of `$ids`), at most `cap + 1` of them.
fn query_relationships(
    cx: &mut Ctx,
    ids: Vec<Value>,
    filters: &QueryFilters,
    cap: i64,
    include_inactive: bool,
) -> Result<Vec<EdgeRow>, ToolError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rel = &filters.relations;
    let (l, r) = rel.dir.arrows();
    let text = format!(
        "UNWIND $ids AS eid MATCH (n {{id: eid}}){l}[r{}]{r}(m){} \
         RETURN n.id AS entity, startNode(r).id AS source, type(r) AS type, endNode(r).id AS target, \
         r.confidence AS confidence, roles(r) AS roles, r.strategy AS strategy, r.line AS line, \
         r.count AS count, r.lines AS lines LIMIT $edge_limit",
        type_label(&rel.rel_types),
        where_clause(
            &rel_filter(&rel.roles, rel.min_conf)
                .into_iter()
                .chain(active_filter(include_inactive, Some("r"), &["m"]))
                .collect::<Vec<_>>()
        )
    );
    let mut params = vec![
        ("ids", Value::List(ids)),
        ("edge_limit", Value::Int(cap + 1)),
    ];
    if let Some(c) = rel.min_conf {
        params.push(("min_confidence", Value::Float(c)));
    }
    decode_rows(&cx.run(&text, &params)?)
}

impl EdgeRow {
    /// The relationship's line under its entity in graph_query.
    fn query_line(&self, format: ResponseFormat) -> String {
        let mut line = format!(
            "  - {} -[{}]-> {}{}",
            self.source,
            self.relation,
            self.target,
            self.sites.times()
        );
        if self.confidence < 0.999 {
            let _ = write!(line, " ({:.2})", self.confidence);
        }
        if format == ResponseFormat::Detailed {
            let _ = write!(line, " {} {}", self.strategy, self.sites.lines_text());
            if !self.roles.is_empty() {
                let _ = write!(line, " roles={}", self.roles.join("|"));
            }
        }
        line.push('\n');
        line
    }
}

/// graph_query's `pagination`: a page, and whether the relationship cap cut it.
#[derive(Serialize)]
struct QueryPagination {
    #[serde(flatten)]
    page: Pagination,
    edges_truncated: bool,
}

/// graph_query's `applied_filters`: only the filters that were given, and the direction.
#[derive(Serialize)]
struct QueryApplied {
    #[serde(skip_serializing_if = "Option::is_none")]
    file_path: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    entity_types: Vec<&'static str>,
    #[serde(flatten)]
    relations: AppliedRelationFilters,
    #[serde(skip_serializing_if = "Option::is_none")]
    name_pattern: Option<String>,
}

/// graph_query's answer: the page's entities, and their relationships in the same order
/// (`edge_counts[k]` of them belong to `nodes[k]`).
#[derive(Serialize)]
struct QueryOutput {
    nodes: Vec<EntityRow>,
    edges: Vec<EdgeRow>,
    #[serde(skip)]
    edge_counts: Vec<usize>,
    pagination: QueryPagination,
    applied_filters: QueryApplied,
    #[serde(skip)]
    format: ResponseFormat,
}

impl ToolOutput for QueryOutput {
    fn markdown(&self, rows: &mut Rows) -> String {
        let page = &self.pagination.page;
        let mut md = format!(
            "## Query Results ({} entities{})\n",
            self.nodes.len(),
            if page.offset > 0 {
                format!(", offset {}", page.offset)
            } else {
                String::new()
            }
        );
        let mut edges = self.edges.iter();
        for (node, count) in self.nodes.iter().zip(&self.edge_counts) {
            let _ = writeln!(
                md,
                "- {} [{}] {}:{}",
                node.id,
                node.kind.to_ascii_lowercase(),
                node.file,
                lines(node.start_line, node.end_line)
            );
            rows.tag("nodes");
            for edge in edges.by_ref().take(*count) {
                md.push_str(&edge.query_line(self.format));
                rows.tag("edges");
            }
            rows.end_row(md.len());
        }
        rows.set_has_more(page.has_more);
        rows.write_more(&mut md, "results");
        md
    }
}

/// The shown entities and their relationships, each group sorted by line, target, source.
/// With the relationship cap reached, the entity whose relationships were cut and the
/// ones after it move to the next page, so every listed entity shows all of them; returns
/// whether that happened.
fn group_relationships(
    entities: &mut Vec<EntityRow>,
    edges: Vec<EdgeRow>,
    cap: usize,
) -> (Vec<EdgeRow>, Vec<usize>, bool) {
    let capped = edges.len() > cap;
    if capped {
        let cut_entity = &edges[cap].entity;
        if let Some(position) = entities.iter().position(|row| &row.id == cut_entity) {
            entities.truncate(position.max(1));
        }
    }
    let mut by_entity: HashMap<String, Vec<EdgeRow>> = HashMap::new();
    for edge in edges.into_iter().take(cap) {
        by_entity.entry(edge.entity.clone()).or_default().push(edge);
    }
    let (mut grouped, mut counts) = (Vec::new(), Vec::new());
    for entity in entities.iter() {
        let mut group = by_entity.remove(&entity.id).unwrap_or_default();
        group.sort_by(|x, y| (x.line, &x.target, &x.source).cmp(&(y.line, &y.target, &y.source)));
        counts.push(group.len());
        grouped.extend(group);
    }
    (grouped, counts, capped)
}

pub(crate) fn graph_query(st: &State, a: QueryArgs) -> Result<Reply, ToolError> {
    let filters = query_filters(&a)?;
    let mut cx = st.ctx(a.repo.name())?;
    let mut entities = query_entities(&mut cx, &a, &filters)?;
    let mut has_more = entities.len() as i64 > filters.limit;
    entities.truncate(filters.limit as usize);
    let ids: Vec<Value> = entities
        .iter()
        .map(|row| Value::from(row.id.as_str()))
        .collect();
    let edge_cap: i64 = if filters.format == ResponseFormat::Detailed {
        2000
    } else {
        500
    };
    let edges = query_relationships(
        &mut cx,
        ids,
        &filters,
        edge_cap,
        a.inactive.include_inactive,
    )?;
    let page_size = entities.len();
    let (edges, edge_counts, edges_capped) =
        group_relationships(&mut entities, edges, edge_cap as usize);
    has_more |= entities.len() < page_size;
    cx.check_fresh(entities.iter().map(|row| row.file.as_str()))?;
    let rel = &filters.relations;
    let output = QueryOutput {
        pagination: QueryPagination {
            page: Pagination::new(a.page.offset, filters.limit, entities.len(), has_more),
            edges_truncated: edges_capped,
        },
        applied_filters: QueryApplied {
            file_path: a.file_path.clone(),
            entity_types: filters.types.clone(),
            relations: AppliedRelationFilters::new(rel, a.confidence_threshold),
            name_pattern: a.name_pattern.clone(),
        },
        nodes: entities,
        edges,
        edge_counts,
        format: filters.format,
    };
    Reply::paged(&output, cx.meta(), a.output.max_tokens(), a.page.offset)
}

const ENTITY_COLS: &str = "n.id AS id, n.name AS name, n.qualified_name AS qualified_name, n.kind AS kind, \
n.file AS file, n.start_line AS start_line, n.end_line AS end_line, n.start_byte AS start_byte, \
n.end_byte AS end_byte, n.signature AS signature, n.is_exported AS is_exported, n.is_static AS is_static, \
n.community AS community, n.language AS language";

/// The "Entity not found" error, with close names as a hint.
pub(crate) fn entity_not_found(cx: &mut Ctx, id: &str) -> ToolError {
    let tail = id.rsplit([':', '.']).next().unwrap_or(id).to_string();
    let similar = cx
        .run(
            "MATCH (n {name: $name}) RETURN n.id AS id ORDER BY id LIMIT 5",
            &[("name", Value::from(tail))],
        )
        .and_then(|result| column_texts(&result, "id"))
        .unwrap_or_default();
    let err = ToolError::client(format!("Entity not found: {id}"));
    if similar.is_empty() {
        err.hint(
            "entity ids look like 'path/file.c:qualified::name'; use search_entities to find one",
        )
    } else {
        err.hint(format!("did you mean: {}", similar.join(", ")))
    }
}

/// The properties of the entity get_entity describes that the tool reads
/// (`structuredContent.entity` shows all of them as they are).
struct EntityDetail {
    name: String,
    qualified_name: String,
    kind: String,
    file: String,
    start_line: i64,
    end_line: i64,
    start_byte: usize,
    end_byte: usize,
    signature: String,
    language: String,
}

impl FromRecord for EntityDetail {
    fn from_record(record: &Record) -> Result<EntityDetail, ToolError> {
        let byte = |column: &str| record.int(column).map(|n| usize::try_from(n).unwrap_or(0));
        Ok(EntityDetail {
            name: record.text("name")?,
            qualified_name: record.text("qualified_name")?,
            kind: record.text("kind")?,
            file: record.text("file")?,
            start_line: record.int("start_line")?,
            end_line: record.int("end_line")?,
            start_byte: byte("start_byte")?,
            end_byte: byte("end_byte")?,
            signature: record.text("signature")?,
            language: record.text("language")?,
        })
    }
}

/// A relationship of the entity: `startNode(r).id = n.id AS outgoing, type(r) AS type,
/// m.id AS other, m.kind AS kind, r.confidence AS confidence, r.strategy AS strategy,
/// roles(r) AS roles, r.file AS file, r.line AS line, r.count AS count, r.lines AS lines`.
#[derive(Serialize)]
struct EntityRelationship {
    #[serde(serialize_with = "direction_word")]
    direction: bool,
    relation_type: String,
    entity_id: String,
    kind: String,
    #[serde(serialize_with = "four_decimals")]
    confidence: f64,
    strategy: String,
    roles: Vec<String>,
    file: String,
    line: i64,
    #[serde(flatten)]
    sites: UseSites,
}

/// `outgoing` or `incoming`.
fn direction_word<S: Serializer>(outgoing: &bool, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(if *outgoing { "outgoing" } else { "incoming" })
}

impl FromRecord for EntityRelationship {
    fn from_record(record: &Record) -> Result<EntityRelationship, ToolError> {
        Ok(EntityRelationship {
            direction: record.is_true("outgoing")?,
            relation_type: record.text("type")?,
            entity_id: record.text("other")?,
            kind: record.text("kind")?,
            confidence: record.float("confidence")?,
            strategy: record.text("strategy")?,
            roles: record.texts("roles")?,
            file: record.text("file")?,
            line: record.int("line")?,
            sites: UseSites::read(record, "count", "lines")?,
        })
    }
}

impl EntityRelationship {
    fn line(&self, format: ResponseFormat) -> String {
        let mut line = format!(
            "- {} {}{}",
            self.relation_type,
            self.entity_id,
            self.sites.times()
        );
        if self.confidence < 0.999 {
            let _ = write!(line, " ({:.2} {})", self.confidence, self.strategy);
        }
        if format == ResponseFormat::Detailed && !self.sites.lines.is_empty() {
            let _ = write!(line, " @{}", self.sites.lines_text());
        }
        line.push('\n');
        line
    }
}

/// `structuredContent.entity`: the properties, the source when asked for, the
/// relationships.
#[derive(Serialize)]
struct EntityJson {
    #[serde(flatten)]
    properties: Map<String, Json>,
    #[serde(flatten)]
    source: Option<ShownSource>,
    relationships: Vec<EntityRelationship>,
    relationships_truncated: bool,
}

/// get_entity's answer.
#[derive(Serialize)]
struct EntityOutput {
    entity: EntityJson,
    #[serde(skip)]
    detail: EntityDetail,
    #[serde(skip)]
    relationship_cap: i64,
    #[serde(skip)]
    format: ResponseFormat,
}

impl ToolOutput for EntityOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let detail = &self.detail;
        let mut md = format!(
            "## {} [{}]\n{}:{}\n",
            detail.qualified_name,
            detail.kind.to_ascii_lowercase(),
            if detail.file.is_empty() {
                "(external)"
            } else {
                &detail.file
            },
            lines(detail.start_line, detail.end_line)
        );
        if !detail.signature.is_empty() && self.format != ResponseFormat::Summary {
            let _ = writeln!(md, "`{}`", detail.signature);
        }
        let relationships = &self.entity.relationships;
        for (outgoing, title) in [(true, "\n### Outgoing\n"), (false, "\n### Incoming\n")] {
            let mut listed = relationships
                .iter()
                .filter(|relationship| relationship.direction == outgoing)
                .peekable();
            if listed.peek().is_some() {
                md.push_str(title);
            }
            for relationship in listed {
                md.push_str(&relationship.line(self.format));
            }
        }
        if self.entity.relationships_truncated {
            let _ = writeln!(
                md,
                "\n(relationships capped at {}; use graph_query with relation filters for more)",
                self.relationship_cap
            );
        }
        if let Some(source) = &self.entity.source {
            let lang = if detail.language == "cpp" { "cpp" } else { "c" };
            source.markdown(&mut md, lang);
        }
        md
    }
}

pub(crate) fn get_entity(st: &State, a: EntityArgs) -> Result<Reply, ToolError> {
    let format = a.output.format()?;
    positive("max_tokens", a.output.max_tokens())?;
    let mut cx = st.ctx(a.repo.name())?;
    let id = Value::from(a.entity_id.as_str());
    let found = cx.run(
        &format!("MATCH (n {{id: $id}}) RETURN {ENTITY_COLS}"),
        &[("id", id.clone())],
    )?;
    let Some(cells) = found.rows.first() else {
        return Err(entity_not_found(&mut cx, &a.entity_id));
    };
    let record = Record::new(&found.columns, cells);
    let properties = record.to_json(&cx.db.graph());
    let detail = EntityDetail::from_record(&record)?;
    let relationship_cap: i64 = match format {
        ResponseFormat::Summary => 20,
        ResponseFormat::Concise => 100,
        ResponseFormat::Detailed => 500,
    };
    let active = where_clause(&active_filter(
        a.inactive.include_inactive,
        Some("r"),
        &["m"],
    ));
    let related = cx.run(
        &format!(
            "MATCH (n {{id: $id}})-[r]-(m){active} \
         RETURN startNode(r).id = n.id AS outgoing, type(r) AS type, m.id AS other, m.kind AS kind, \
         r.confidence AS confidence, r.strategy AS strategy, roles(r) AS roles, r.file AS file, r.line AS line, \
         r.count AS count, r.lines AS lines ORDER BY outgoing DESC, type, line, other LIMIT $limit"
        ),
        &[("id", id), ("limit", Value::Int(relationship_cap + 1))],
    )?;
    let mut relationships: Vec<EntityRelationship> = decode_rows(&related)?;
    let relationships_truncated = relationships.len() as i64 > relationship_cap;
    relationships.truncate(relationship_cap as usize);
    let changed = cx.check_fresh([detail.file.as_str()])?;
    let source = a
        .include_source
        .then(|| entity_source(&cx.repo.path, &detail, !changed.is_empty()));
    let output = EntityOutput {
        entity: EntityJson {
            properties,
            source,
            relationships,
            relationships_truncated,
        },
        detail,
        relationship_cap,
        format,
    };
    Reply::new(&output, cx.meta(), a.output.max_tokens())
}

/// The source shown for an entity, and where it came from.
enum ShownSource {
    /// The indexed byte range of a file that still hashes to what the artifact holds.
    Indexed(String),
    /// The file changed since the index: the entity found again in the current text.
    Relocated {
        text: String,
        line: i64,
        indexed_line: i64,
    },
    /// No source can be shown, and why.
    Unavailable(String),
}

/// The entity's JSON fields: `source` and `source_origin` (indexed; relocated after
/// `source_line`), or `source_error`.
impl Serialize for ShownSource {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self {
            ShownSource::Indexed(text) => {
                map.serialize_entry("source", text)?;
                map.serialize_entry("source_origin", "indexed")?;
            }
            ShownSource::Relocated { text, line, .. } => {
                map.serialize_entry("source_line", line)?;
                map.serialize_entry("source", text)?;
                map.serialize_entry("source_origin", "relocated")?;
            }
            ShownSource::Unavailable(why) => map.serialize_entry("source_error", why)?,
        }
        map.end()
    }
}

impl ShownSource {
    /// Appends the source block (or the reason there is none) to the markdown.
    fn markdown(&self, md: &mut String, lang: &str) {
        let text = match self {
            ShownSource::Indexed(text) => text,
            ShownSource::Relocated {
                text,
                line,
                indexed_line,
            } => {
                let _ = writeln!(
                    md,
                    "\n(the file changed since it was indexed: this is the current text, found again at L{line}; it was indexed at L{indexed_line})"
                );
                text
            }
            ShownSource::Unavailable(why) => {
                let _ = writeln!(md, "\n(source unavailable: {why})");
                return;
            }
        };
        let _ = write!(md, "\n### Source\n```{lang}\n{text}");
        if !text.ends_with('\n') {
            md.push('\n');
        }
        md.push_str("```\n");
    }
}

/// The entity's source. Byte offsets are only trusted while the file still holds the
/// indexed bytes: once it changed they point into other text, so the entity is found
/// again by its signature (or name) near its old line instead.
fn entity_source(root: &std::path::Path, entity: &EntityDetail, changed: bool) -> ShownSource {
    let file = entity.file.as_str();
    if file.is_empty() {
        return ShownSource::Unavailable("external entity: no source in this repository".into());
    }
    let bytes = match batho_engine::repo_files::read_repo_file(root, file) {
        Ok(bytes) => bytes,
        Err(e) => return ShownSource::Unavailable(e.to_string()),
    };
    let (start_byte, end_byte) = (entity.start_byte, entity.end_byte);
    let (start_line, end_line) = (entity.start_line, entity.end_line);
    if !changed && end_byte > start_byte && end_byte <= bytes.len() {
        // Start at the beginning of the first line so indentation is kept.
        let start = bytes[..start_byte]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |p| p + 1);
        return ShownSource::Indexed(String::from_utf8_lossy(&bytes[start..end_byte]).into_owned());
    }
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    let span = usize::try_from((end_line - start_line).max(0)).unwrap_or(0) + 1;
    match relocate(&all, &entity.name, &entity.signature, start_line) {
        Some(found) => ShownSource::Relocated {
            text: all[found..(found + span).min(all.len())].join("\n"),
            line: found as i64 + 1,
            indexed_line: start_line,
        },
        None => ShownSource::Unavailable(format!(
            "{file} changed since it was indexed and the entity was not found in its current text; re-index with batho_patch"
        )),
    }
}

/// The 0-based line where the entity now starts: among the lines that hold its signature's
/// head (the text before its parameter list, spaces folded), or else its name as a whole
/// word, the one nearest its indexed line.
fn relocate(lines: &[&str], name: &str, signature: &str, indexed_line: i64) -> Option<usize> {
    let fold = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let head = fold(signature.split('(').next().unwrap_or_default());
    let word = regex::Regex::new(&format!(r"\b{}\b", regex::escape(name))).ok()?;
    let holds = |line: &str| {
        if head.len() > name.len() {
            fold(line).contains(&head)
        } else {
            !name.is_empty() && word.is_match(line)
        }
    };
    let indexed = usize::try_from(indexed_line - 1).unwrap_or(0);
    (0..lines.len())
        .filter(|k| holds(lines[*k]))
        .min_by_key(|k| k.abs_diff(indexed))
}

/// search_entities' `applied_filters`: only the filters that were given.
#[derive(Serialize)]
struct SearchApplied {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    entity_types: Vec<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    symbol_roles: Vec<&'static str>,
}

/// search_entities' answer.
#[derive(Serialize)]
struct SearchOutput {
    results: Vec<EntityRow>,
    total: i64,
    pagination: Pagination,
    match_mode: &'static str,
    applied_filters: SearchApplied,
    #[serde(skip)]
    format: ResponseFormat,
}

impl ToolOutput for SearchOutput {
    fn markdown(&self, rows: &mut Rows) -> String {
        let offset = self.pagination.offset;
        let mut md = format!(
            "## Search Results ({} matches, showing {}{})\n",
            self.total,
            self.results.len(),
            if offset > 0 {
                format!(" from offset {offset}")
            } else {
                String::new()
            }
        );
        for entity in &self.results {
            let place = if entity.file.is_empty() {
                "(external)".to_string()
            } else {
                format!(
                    "{}:{}",
                    entity.file,
                    lines(entity.start_line, entity.end_line)
                )
            };
            // The id is what get_entity, trace_path and the other tools take.
            let _ = write!(
                md,
                "- {} [{}] {place} id={}",
                entity.name,
                entity.kind.to_ascii_lowercase(),
                entity.id
            );
            if self.format == ResponseFormat::Detailed
                && let Some(signature) = entity.signature.as_deref().filter(|s| !s.is_empty())
            {
                let _ = write!(md, " `{signature}`");
            }
            md.push('\n');
            rows.tag("results");
            rows.end_row(md.len());
        }
        rows.set_has_more(self.pagination.has_more);
        rows.write_more(&mut md, "results");
        md
    }
}

pub(crate) fn search_entities(st: &State, a: SearchArgs) -> Result<Reply, ToolError> {
    let format = a.output.format()?;
    let limit = positive("limit", a.page.limit)?;
    positive("max_tokens", a.output.max_tokens())?;
    if a.query.is_empty() {
        return Err(ToolError::client("query must not be empty"));
    }
    let types = kinds(a.entity_types.as_deref().unwrap_or_default())?;
    let role_names = roles(a.symbol_roles.as_deref().unwrap_or_default())?;
    let mut cx = st.ctx(a.repo.name())?;
    // A query that is a valid regex is used as one (case-insensitive, unanchored); any
    // other text is a plain substring.
    let is_regex = regex::Regex::new(&a.query).is_ok();
    let mut w = vec![kind_filter("n", &types)];
    w.extend(active_filter(a.inactive.include_inactive, None, &["n"]));
    let mut params: Vec<(&str, Value)> = Vec::new();
    if !types.is_empty() {
        params.push(("entity_types", text_list(&types)));
    }
    if is_regex {
        w.push("n.name =~ $pattern".into());
        params.push(("pattern", Value::from(format!("(?i).*(?:{}).*", a.query))));
    } else {
        w.push("toLower(n.name) CONTAINS $needle".into());
        params.push(("needle", Value::from(a.query.to_lowercase())));
    }
    params.push(("q", Value::from(a.query.as_str())));
    let (head, rel_w) = if role_names.is_empty() {
        ("MATCH (n)".to_string(), String::new())
    } else {
        (
            "MATCH (n)-[r]-()".to_string(),
            format!(" AND {}", rel_filter(&role_names, None).join(" AND ")),
        )
    };
    let base = format!("{head} WHERE {}{rel_w} WITH DISTINCT n", w.join(" AND "));
    let count = cx.run(&format!("{base} RETURN count(*) AS total"), &params)?;
    let total = first_int(&count, "total")?;
    if a.page.offset < 0 {
        return Err(ToolError::client(format!(
            "offset must be >= 0, got {}",
            a.page.offset
        )));
    }
    params.push(("offset", Value::Int(a.page.offset)));
    params.push(("limit", Value::Int(limit)));
    let found = cx.run(
        &format!(
            "{base} RETURN n.id AS id, n.name AS name, n.kind AS kind, n.file AS file, n.start_line AS start_line, \
             n.end_line AS end_line, n.signature AS signature \
             ORDER BY toLower(n.name) = toLower($q) DESC, size(n.name), name, id SKIP $offset LIMIT $limit"
        ),
        &params,
    )?;
    let results: Vec<EntityRow> = decode_rows(&found)?;
    cx.check_fresh(results.iter().map(|row| row.file.as_str()))?;
    let has_more = a.page.offset + (results.len() as i64) < total;
    let output = SearchOutput {
        total,
        pagination: Pagination::new(a.page.offset, limit, results.len(), has_more),
        results,
        match_mode: if is_regex { "regex" } else { "substring" },
        applied_filters: SearchApplied {
            entity_types: types,
            symbol_roles: role_names,
        },
        format,
    };
    Reply::paged(&output, cx.meta(), a.output.max_tokens(), a.page.offset)
}

/// `name_pattern` matches anywhere in a name, BQL's `=~` the whole name, so the pattern is
/// wrapped. A pattern anchored at the start (`^mutex_lock$`) keeps its literal prefix in
/// front, which lets the planner seek that range of the name index instead of scanning.
fn whole_name_pattern(p: &str) -> String {
    let anchored = regex_syntax::parse(p).is_ok_and(|h| {
        h.properties()
            .look_set_prefix()
            .contains(regex_syntax::hir::Look::Start)
    });
    if anchored {
        format!("(?:{p}).*")
    } else {
        format!(".*(?:{p}).*")
    }
}

#[cfg(test)]
mod tests {
    use super::whole_name_pattern;

    #[test]
    fn anchored_name_patterns_keep_their_prefix_in_front() {
        assert_eq!(whole_name_pattern("^mutex_lock$"), "(?:^mutex_lock$).*");
        assert_eq!(whole_name_pattern("mutex"), ".*(?:mutex).*");
        // `^a|b` is anchored only on one side; `(?m)^` also matches after a newline.
        assert_eq!(whole_name_pattern("^a|b"), ".*(?:^a|b).*");
        assert_eq!(whole_name_pattern("(?m)^a"), ".*(?:(?m)^a).*");
        // The wrapped pattern matches exactly the names the search pattern finds.
        for p in ["^mutex_lock$", "^lua_", "mutex", "^a|b", "(?m)^a"] {
            let search = regex::Regex::new(p).unwrap();
            let whole = regex::Regex::new(&format!("^(?:{})$", whole_name_pattern(p))).unwrap();
            for name in [
                "mutex_lock",
                "mutex_lock_nested",
                "lua_call",
                "xa",
                "ab",
                "b",
                "a",
            ] {
                assert_eq!(search.is_match(name), whole.is_match(name), "{p} on {name}");
            }
        }
    }
}
