//! trace_path, get_file_graph and file_connectivity.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;

use batho_engine::query::{QueryResult, Value};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::args::{ConnectivityArgs, FileGraphArgs, ResponseFormat, TraceArgs};
use super::cells::{FromRecord, Record, column_texts, decode_rows, first_int};
use super::graph::entity_not_found;
use super::{
    AppliedRelationFilters, Direction, Pagination, RelationFilters, Reply, Rows, ToolOutput,
    UseSites, active_filter, four_decimals, lines, positive, rel_filter, threshold, type_label,
    where_clause,
};
use crate::error::ToolError;
use crate::state::{Ctx, State};

/// One entity of a traced path and the relationship that leads on from it.
pub(crate) struct PathStep {
    pub(crate) id: String,
    pub(crate) name: String,
    /// The type of the relationship to the next entity (empty on the last).
    pub(crate) relation: String,
    /// Whether that relationship is stored pointing from this entity to the next.
    pub(crate) forward: bool,
    /// Its use sites.
    pub(crate) sites: UseSites,
    /// Its confidence.
    pub(crate) confidence: f64,
    /// The file of its first site.
    pub(crate) file: String,
}

impl PathStep {
    /// Step `k` of the path in `record` (a row of [`path_return`]'s columns), if the path
    /// has that many steps.
    fn read(record: &Record, k: usize) -> Result<Option<PathStep>, ToolError> {
        let column = |name: &str| format!("{name}{k}");
        if !record.has(&column("id")) || record.value(&column("id"))?.is_null() {
            return Ok(None);
        }
        Ok(Some(PathStep {
            id: record.text(&column("id"))?,
            name: record.text(&column("name"))?,
            relation: record.text(&column("rel"))?,
            // Null past the end: only a relationship stored pointing back is `false`.
            forward: !matches!(record.value(&column("forward"))?, Value::Bool(false)),
            sites: UseSites::read(record, &column("count"), &column("lines"))?,
            confidence: record.float(&column("confidence"))?,
            file: record.text(&column("file"))?,
        }))
    }

    /// The steps of the path in the first row of `result` (a query ending in
    /// [`path_return`]); empty when no path was found.
    pub(crate) fn read_path(result: &QueryResult) -> Result<Vec<PathStep>, ToolError> {
        let Some(cells) = result.rows.first() else {
            return Ok(Vec::new());
        };
        let record = Record::new(&result.columns, cells);
        let mut steps = Vec::new();
        while let Some(step) = PathStep::read(&record, steps.len())? {
            steps.push(step);
        }
        Ok(steps)
    }
}

/// The found path as one row: for each step k up to `depth`, the node's id and name, the
/// type of the relationship leaving it, whether that relationship is stored pointing
/// forward along the path (null past the end: an incoming hop is printed with its real
/// arrow), its use sites, confidence and file. Explicit indexes because indexing
/// `nodes(p)` with an `UNWIND` variable yields null in the current engine.
pub(crate) fn path_return(depth: i64) -> String {
    let cols: Vec<String> = (0..=depth)
        .map(|k| {
            format!(
                "nodes(p)[{k}].id AS id{k}, nodes(p)[{k}].name AS name{k}, type(relationships(p)[{k}]) AS rel{k}, \
                 startNode(relationships(p)[{k}]).id = nodes(p)[{k}].id AS forward{k}, \
                 relationships(p)[{k}].count AS count{k}, relationships(p)[{k}].lines AS lines{k}, \
                 relationships(p)[{k}].confidence AS confidence{k}, relationships(p)[{k}].file AS file{k}"
            )
        })
        .collect();
    format!("RETURN {}", cols.join(", "))
}

/// An entity on a traced path and the hop that reached it (none on the first).
#[derive(Serialize)]
struct TracedEntity {
    entity_id: String,
    relation_type: String,
    name: String,
    #[serde(flatten)]
    hop: Option<TracedHop>,
}

/// The hop that reached an entity: the stored arrow and the use sites.
#[derive(Serialize)]
struct TracedHop {
    /// `forward` (the previous entity -[rel]-> this one) or `backward`.
    direction: &'static str,
    #[serde(flatten)]
    sites: UseSites,
}

/// trace_path's `applied_filters`.
#[derive(Serialize)]
struct TraceApplied {
    #[serde(flatten)]
    relations: AppliedRelationFilters,
    max_depth: i64,
}

/// trace_path's answer.
#[derive(Serialize)]
struct TraceOutput {
    found: bool,
    path: Vec<TracedEntity>,
    depth: usize,
    applied_filters: TraceApplied,
    #[serde(skip)]
    direction: Direction,
}

impl ToolOutput for TraceOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut md = String::from("## Path Trace\n");
        for entity in &self.path {
            let Some(hop) = &entity.hop else {
                let _ = writeln!(md, "  {}", entity.entity_id);
                continue;
            };
            // `←` says the stored relationship points back: this entity -[rel]-> the previous.
            let arrow = if hop.direction == "forward" {
                "→"
            } else {
                "←"
            };
            let lines = hop.sites.lines_text();
            let place = if lines.is_empty() {
                String::new()
            } else {
                format!(" {lines}")
            };
            let _ = writeln!(
                md,
                "  {arrow} [{}{}{place}] {}",
                entity.relation_type,
                hop.sites.times(),
                entity.entity_id
            );
        }
        if self.found {
            let _ = writeln!(md, "\nDepth: {} hops", self.depth);
        } else {
            let _ = writeln!(
                md,
                "No path within {} hops ({} edges).",
                self.applied_filters.max_depth,
                self.direction.name()
            );
        }
        md
    }
}

/// The entities of a path, each with the hop from the one before it.
fn traced_entities(steps: Vec<PathStep>) -> Vec<TracedEntity> {
    let mut traced = Vec::new();
    let mut previous: Option<PathStep> = None;
    for step in steps {
        traced.push(match previous {
            None => TracedEntity {
                entity_id: step.id.clone(),
                relation_type: String::new(),
                name: step.name.clone(),
                hop: None,
            },
            Some(hop) => TracedEntity {
                entity_id: step.id.clone(),
                relation_type: hop.relation,
                name: step.name.clone(),
                hop: Some(TracedHop {
                    direction: if hop.forward { "forward" } else { "backward" },
                    sites: hop.sites,
                }),
            },
        });
        previous = Some(step);
    }
    traced
}

/// Refuses ids that name no entity, with close names as a hint.
fn check_entities(cx: &mut Ctx, ids: [&str; 2]) -> Result<(), ToolError> {
    for id in ids {
        let found = cx.run(
            "MATCH (n {id: $id}) RETURN count(*) AS found",
            &[("id", Value::from(id))],
        )?;
        if first_int(&found, "found")? == 0 {
            return Err(entity_not_found(cx, id));
        }
    }
    Ok(())
}

pub(crate) fn trace_path(st: &State, a: TraceArgs) -> Result<Reply, ToolError> {
    positive("max_tokens", a.output.max_tokens())?;
    a.output.format()?;
    let depth = positive("max_depth", a.max_depth)?;
    if depth > 20 {
        return Err(ToolError::client(format!(
            "max_depth must be at most 20, got {depth}"
        )));
    }
    let filters = RelationFilters::parse(
        a.relation_types.as_deref(),
        a.symbol_roles.as_deref(),
        a.confidence_threshold,
        &a.relation_direction,
        Direction::Outgoing,
    )?;
    let mut cx = st.ctx(a.repo.name())?;
    check_entities(&mut cx, [&a.source_entity_id, &a.target_entity_id])?;
    let (l, r) = filters.dir.arrows();
    let tl = type_label(&filters.rel_types);
    let mut params: Vec<(&str, Value)> = vec![
        ("source", Value::from(a.source_entity_id.as_str())),
        ("target", Value::from(a.target_entity_id.as_str())),
    ];
    let mut hop_filters = rel_filter(&filters.roles, filters.min_conf);
    hop_filters.extend(active_filter(a.inactive.include_inactive, Some("r"), &[]));
    if let Some(c) = filters.min_conf {
        params.push(("min_confidence", Value::Float(c)));
    }
    // A condition on every hop is tested during the search (docs/planner.md), so the
    // answer is the shortest path whose hops all pass.
    let hop_condition = if hop_filters.is_empty() {
        String::new()
    } else {
        format!("WHERE all(r IN rs WHERE {}) ", hop_filters.join(" AND "))
    };
    let q = format!(
        "MATCH p = shortestPath((a {{id: $source}}){l}[rs{tl}*..{depth}]{r}(b {{id: $target}})) \
         {hop_condition}WITH p LIMIT 1 {}",
        path_return(depth)
    );
    let path = traced_entities(PathStep::read_path(&cx.run(&q, &params)?)?);
    let output = TraceOutput {
        found: !path.is_empty(),
        depth: path.len().saturating_sub(1),
        path,
        applied_filters: TraceApplied {
            relations: AppliedRelationFilters::new(&filters, a.confidence_threshold),
            max_depth: depth,
        },
        direction: filters.dir,
    };
    Reply::new(&output, cx.meta(), a.output.max_tokens())
}

/// Refuses a negative `offset`.
pub(crate) fn non_negative_offset(offset: i64) -> Result<(), ToolError> {
    if offset < 0 {
        return Err(ToolError::client(format!(
            "offset must be >= 0, got {offset}"
        )));
    }
    Ok(())
}

fn normalize(path: &str) -> String {
    path.replace('\\', "/").trim_start_matches("./").to_string()
}

fn check_file(cx: &mut Ctx, file: &str) -> Result<(), ToolError> {
    // The `File` stubs of system headers have an empty path: "" would match them.
    if file.trim().is_empty() {
        return Err(
            ToolError::client("file_path must name a file, got an empty path")
                .hint("paths are relative to the repo root with forward slashes, e.g. src/main.c"),
        );
    }
    let indexed = cx.run(
        "MATCH (f:File {file: $file}) RETURN count(*) AS indexed",
        &[("file", Value::from(file))],
    )?;
    if first_int(&indexed, "indexed")? == 0 {
        let tail = file.rsplit('/').next().unwrap_or(file).to_string();
        let similar = cx
            .run(
                "MATCH (f:File) WHERE f.file ENDS WITH $tail RETURN f.file AS file ORDER BY file LIMIT 5",
                &[("tail", Value::from(tail))],
            )
            .and_then(|result| column_texts(&result, "file"))
            .unwrap_or_default();
        let err = ToolError::client(format!("File not indexed: {file}"));
        return Err(if similar.is_empty() {
            err.hint("paths are relative to the repo root with forward slashes; graph_overview with response_format=concise lists files")
        } else {
            err.hint(format!("did you mean: {}", similar.join(", ")))
        });
    }
    Ok(())
}

/// An entity of a file: `n.id AS id, n.name AS name, n.kind AS kind, n.start_line AS
/// start_line, n.end_line AS end_line`.
#[derive(Serialize)]
struct FileEntity {
    id: String,
    name: String,
    kind: String,
    start_line: i64,
    end_line: i64,
}

impl FromRecord for FileEntity {
    fn from_record(record: &Record) -> Result<FileEntity, ToolError> {
        Ok(FileEntity {
            id: record.text("id")?,
            name: record.text("name")?,
            kind: record.text("kind")?,
            start_line: record.int("start_line")?,
            end_line: record.int("end_line")?,
        })
    }
}

/// An outgoing relationship of a file's entity: `n.id AS source, type(r) AS type, m.id AS
/// target, m.file AS target_file, m.kind AS target_kind, r.confidence AS confidence,
/// r.line AS line`.
struct FileRelationshipRow {
    source: String,
    relation: String,
    target: String,
    target_file: String,
    target_kind: String,
    confidence: f64,
    line: i64,
}

impl FromRecord for FileRelationshipRow {
    fn from_record(record: &Record) -> Result<FileRelationshipRow, ToolError> {
        Ok(FileRelationshipRow {
            source: record.text("source")?,
            relation: record.text("type")?,
            target: record.text("target")?,
            target_file: record.text("target_file")?,
            target_kind: record.text("target_kind")?,
            confidence: record.float("confidence")?,
            line: record.int("line")?,
        })
    }
}

/// A relationship as get_file_graph shows it.
#[derive(Serialize)]
struct FileRelationship {
    source_id: String,
    relation_type: String,
    target_id: String,
    cross_file: bool,
    #[serde(serialize_with = "four_decimals")]
    confidence: f64,
    line: i64,
    /// Whether this is the first relationship naming its cross-file target (whose stub
    /// then belongs to this row).
    #[serde(skip)]
    first_stub: bool,
}

/// An entity of another file that the page's relationships point at.
#[derive(Serialize)]
struct CrossFileStub {
    id: String,
    file: String,
    kind: String,
}

/// One page of a file's entities, one more than `limit` to tell whether another page
/// exists, and the total.
fn file_entities(
    cx: &mut Ctx,
    file: &str,
    offset: i64,
    limit: i64,
    include_inactive: bool,
) -> Result<(Vec<FileEntity>, i64), ToolError> {
    let fp = Value::from(file);
    let active: String = active_filter(include_inactive, None, &["n"])
        .iter()
        .map(|c| format!(" AND {c}"))
        .collect();
    let total = cx.run(
        &format!("MATCH (n {{file: $file}}) WHERE NOT n:File{active} RETURN count(*) AS entities"),
        &[("file", fp.clone())],
    )?;
    let total = first_int(&total, "entities")?;
    let page = cx.run(
        &format!(
            "MATCH (n {{file: $file}}) WHERE NOT n:File{active} \
         RETURN n.id AS id, n.name AS name, n.kind AS kind, n.start_line AS start_line, n.end_line AS end_line \
         ORDER BY start_line, id SKIP $offset LIMIT $limit"
        ),
        &[("file", fp), ("offset", Value::Int(offset)), ("limit", Value::Int(limit.saturating_add(1)))],
    )?;
    Ok((decode_rows(&page)?, total))
}

/// The outgoing relationships of the page's entities, in page order.
fn file_relationships(
    cx: &mut Ctx,
    file: &str,
    ids: Vec<Value>,
    format: ResponseFormat,
    cross_file: bool,
    include_inactive: bool,
) -> Result<Vec<FileRelationshipRow>, ToolError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let cross = if cross_file {
        ""
    } else {
        " AND m.file = $file"
    };
    let contains = if format == ResponseFormat::Detailed {
        ""
    } else {
        " AND type(r) <> 'CONTAINS'"
    };
    let active: String = active_filter(include_inactive, Some("r"), &["m"])
        .iter()
        .map(|c| format!(" AND {c}"))
        .collect();
    let res = cx.run(
        &format!(
            "UNWIND $ids AS eid MATCH (n {{id: eid}})-[r]->(m) WHERE true{contains}{cross}{active} \
             RETURN n.id AS source, type(r) AS type, m.id AS target, m.file AS target_file, m.kind AS target_kind, \
             r.confidence AS confidence, r.line AS line"
        ),
        &[("file", Value::from(file)), ("ids", Value::List(ids))],
    )?;
    decode_rows(&res)
}

/// get_file_graph's answer: the page's entities, and their relationships in the same
/// order (`relationship_counts[k]` of them belong to `entities[k]`).
#[derive(Serialize)]
struct FileGraphOutput {
    file_path: String,
    entities: Vec<FileEntity>,
    relationships: Vec<FileRelationship>,
    cross_file_stubs: Vec<CrossFileStub>,
    pagination: Pagination,
    #[serde(skip)]
    relationship_counts: Vec<usize>,
    /// Entities in the file.
    #[serde(skip)]
    total: i64,
}

impl ToolOutput for FileGraphOutput {
    fn markdown(&self, rows: &mut Rows) -> String {
        let (file, page) = (&self.file_path, &self.pagination);
        let mut md = format!("## File Graph: {file}\n\n### Entities ({})\n", self.total);
        if page.offset > 0 || page.has_more {
            let _ = writeln!(
                md,
                "(entities {}-{} of {})",
                page.offset + 1,
                page.offset + self.entities.len() as i64,
                self.total
            );
        }
        let prefix = format!("{file}:");
        let mut relationships = self.relationships.iter();
        for (entity, count) in self.entities.iter().zip(&self.relationship_counts) {
            let _ = writeln!(
                md,
                "- {} [{}] {}",
                entity.name,
                entity.kind.to_ascii_lowercase(),
                lines(entity.start_line, entity.end_line)
            );
            rows.tag("entities");
            for relationship in relationships.by_ref().take(*count) {
                let target = &relationship.target_id;
                let shown = match relationship.cross_file {
                    false => target.strip_prefix(&prefix).unwrap_or(target),
                    true => target,
                };
                let _ = writeln!(md, "  -[{}]-> {shown}", relationship.relation_type);
                if relationship.first_stub {
                    rows.tag("cross_file_stubs");
                }
                rows.tag("relationships");
            }
            rows.end_row(md.len());
        }
        rows.set_has_more(page.has_more);
        rows.write_more(&mut md, "entities");
        md
    }
}

/// The page's relationships grouped under their entity (each group by line, target,
/// type), their counts, and the cross-file stubs in the order rows first name them, so a
/// cut keeps the right ones.
fn file_graph_relationships(
    file: &str,
    entities: &[FileEntity],
    found: Vec<FileRelationshipRow>,
) -> (Vec<FileRelationship>, Vec<usize>, Vec<CrossFileStub>) {
    let mut by_source: BTreeMap<String, Vec<FileRelationshipRow>> = BTreeMap::new();
    for row in found {
        by_source.entry(row.source.clone()).or_default().push(row);
    }
    let (mut relationships, mut counts, mut stubs) = (Vec::new(), Vec::new(), Vec::new());
    let mut stub_ids = HashSet::new();
    for entity in entities {
        let mut group = by_source.remove(&entity.id).unwrap_or_default();
        group.sort_by(|x, y| {
            (x.line, &x.target, &x.relation).cmp(&(y.line, &y.target, &y.relation))
        });
        counts.push(group.len());
        for row in group {
            let cross_file = row.target_file != file;
            let first_stub = cross_file && stub_ids.insert(row.target.clone());
            if first_stub {
                stubs.push(CrossFileStub {
                    id: row.target.clone(),
                    file: row.target_file,
                    kind: row.target_kind,
                });
            }
            relationships.push(FileRelationship {
                source_id: row.source,
                relation_type: row.relation,
                target_id: row.target,
                cross_file,
                confidence: row.confidence,
                line: row.line,
                first_stub,
            });
        }
    }
    (relationships, counts, stubs)
}

pub(crate) fn get_file_graph(st: &State, a: FileGraphArgs) -> Result<Reply, ToolError> {
    let format = a.output.format()?;
    positive("max_tokens", a.output.max_tokens())?;
    let limit = positive("limit", a.page.limit)?;
    non_negative_offset(a.page.offset)?;
    let file = normalize(&a.file_path);
    let mut cx = st.ctx(a.repo.name())?;
    check_file(&mut cx, &file)?;
    cx.check_fresh([file.as_str()])?;
    let (mut entities, total) = file_entities(
        &mut cx,
        &file,
        a.page.offset,
        limit,
        a.inactive.include_inactive,
    )?;
    let has_more = entities.len() as i64 > limit;
    entities.truncate(limit as usize);
    let ids = entities
        .iter()
        .map(|entity| Value::from(entity.id.as_str()))
        .collect();
    let found = file_relationships(
        &mut cx,
        &file,
        ids,
        format,
        a.include_cross_file_refs,
        a.inactive.include_inactive,
    )?;
    let (relationships, relationship_counts, cross_file_stubs) =
        file_graph_relationships(&file, &entities, found);
    let output = FileGraphOutput {
        pagination: Pagination::new(a.page.offset, limit, entities.len(), has_more),
        file_path: file,
        entities,
        relationships,
        cross_file_stubs,
        relationship_counts,
        total,
    };
    Reply::paged(&output, cx.meta(), a.output.max_tokens(), a.page.offset)
}

/// Short verbs for the markdown cells.
fn verb(rel: &str) -> &'static str {
    match rel {
        "CALLS" => "calls",
        "INCLUDES" => "imports",
        "INHERITS" => "inherits",
        "OVERRIDES" => "overrides",
        "REFERENCES" => "refs",
        "READS" => "reads",
        "WRITES" => "writes",
        "EXPANDS" => "expands",
        _ => "other",
    }
}

/// The relationships of one type between the file and another: `m.file AS file, type(r)
/// AS type, count(*) AS n, max(r.confidence) AS confidence, collect(DISTINCT m.name) AS
/// via`.
struct DependencyRow {
    file: String,
    relation: String,
    count: i64,
    confidence: f64,
    via: Vec<String>,
}

impl FromRecord for DependencyRow {
    fn from_record(record: &Record) -> Result<DependencyRow, ToolError> {
        Ok(DependencyRow {
            file: record.text("file")?,
            relation: record.text("type")?,
            count: record.int("n")?,
            confidence: record.float("confidence")?,
            via: record.texts("via")?,
        })
    }
}

/// One file the file depends on (or that depends on it), with its per-relation counts.
#[derive(Serialize)]
struct FileDependency {
    file: String,
    /// Counts by relationship type (keyed lowercase in the JSON).
    #[serde(serialize_with = "lowercase_keys")]
    relation_counts: BTreeMap<String, i64>,
    #[serde(serialize_with = "four_decimals")]
    max_confidence: f64,
    /// The symbols the relationships go through, sorted.
    via: Vec<String>,
}

/// A map with its keys lowercased, in its order.
fn lowercase_keys<S: Serializer>(
    counts: &BTreeMap<String, i64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(counts.len()))?;
    for (key, count) in counts {
        map.serialize_entry(&key.to_ascii_lowercase(), count)?;
    }
    map.end()
}

impl FileDependency {
    /// The dependency row in the markdown.
    fn line(&self) -> String {
        let cells: Vec<String> = self
            .relation_counts
            .iter()
            .map(|(relation, n)| format!("{}×{n}", verb(relation)))
            .collect();
        let shown: Vec<&str> = self.via.iter().take(4).map(String::as_str).collect();
        let more = if self.via.len() > 4 { ", …" } else { "" };
        let mut line = format!("- `{}` — {}", self.file, cells.join(", "));
        if !shown.is_empty() {
            let _ = write!(line, " (via {}{more})", shown.join(", "));
        }
        line.push('\n');
        line
    }
}

/// The rows of one direction folded per file (files in order).
fn aggregate(rows: Vec<DependencyRow>) -> Vec<FileDependency> {
    let mut by_file: BTreeMap<String, FileDependency> = BTreeMap::new();
    for row in rows {
        let dependency = by_file
            .entry(row.file.clone())
            .or_insert_with(|| FileDependency {
                file: row.file,
                relation_counts: BTreeMap::new(),
                max_confidence: 0.0,
                via: Vec::new(),
            });
        *dependency.relation_counts.entry(row.relation).or_default() += row.count;
        dependency.max_confidence = dependency.max_confidence.max(row.confidence);
        dependency
            .via
            .extend(row.via.into_iter().filter(|via| !via.is_empty()));
    }
    by_file
        .into_values()
        .map(|mut dependency| {
            dependency.via = dependency
                .via
                .into_iter()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            dependency
        })
        .collect()
}

/// One direction of file_connectivity: the files of this page, and how many in all.
struct DependencySection {
    /// `outgoing` or `incoming`.
    key: &'static str,
    title: &'static str,
    total: usize,
    /// The files of this page.
    shown: Vec<FileDependency>,
}

/// `file_dependencies`: each direction asked for, with the files of this page.
fn sections_by_key<S: Serializer>(
    sections: &[DependencySection],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(sections.len()))?;
    for section in sections {
        map.serialize_entry(section.key, &section.shown)?;
    }
    map.end()
}

/// Edges into external stubs: stdlib roots (resolved as stdlib) and unresolved names.
#[derive(Serialize)]
struct ExternalReferences {
    unresolved_stubs: i64,
    other_external_refs: i64,
    /// The stdlib symbols, listed only with include_external.
    #[serde(skip_serializing_if = "Option::is_none")]
    stdlib: Option<Vec<String>>,
}

/// file_connectivity's `applied_filters`.
#[derive(Serialize)]
struct ConnectivityApplied {
    direction: &'static str,
    min_confidence: Option<f64>,
    include_external: bool,
}

/// file_connectivity's answer.
#[derive(Serialize)]
struct ConnectivityOutput {
    file_path: String,
    #[serde(serialize_with = "sections_by_key")]
    file_dependencies: Vec<DependencySection>,
    external: ExternalReferences,
    applied_filters: ConnectivityApplied,
    pagination: Pagination,
    #[serde(skip)]
    generation: u64,
}

impl ConnectivityOutput {
    /// The files of one direction in all (0 when not asked for).
    fn total(&self, key: &str) -> usize {
        self.file_dependencies
            .iter()
            .find(|section| section.key == key)
            .map_or(0, |section| section.total)
    }
}

impl ToolOutput for ConnectivityOutput {
    fn markdown(&self, rows: &mut Rows) -> String {
        let mut md = format!("## File Connectivity: {}\n", self.file_path);
        // Rows are numbered across both directions, so one `offset` walks both lists; each
        // section keeps its title and total.
        let offset = self.pagination.offset;
        for section in &self.file_dependencies {
            if !section.shown.is_empty() || (section.total == 0 && offset == 0) {
                let _ = writeln!(md, "\n### {} ({} files)", section.title, section.total);
            }
            for dependency in &section.shown {
                md.push_str(&dependency.line());
                rows.tag(if section.key == "outgoing" {
                    "file_dependencies/outgoing"
                } else {
                    "file_dependencies/incoming"
                });
                rows.end_row(md.len());
            }
        }
        rows.set_has_more(self.pagination.has_more);
        if let Some(stdlib) = self.external.stdlib.as_ref().filter(|s| !s.is_empty()) {
            let shown: Vec<&str> = stdlib.iter().take(20).map(String::as_str).collect();
            let more = if stdlib.len() > 20 { ", …" } else { "" };
            let _ = writeln!(
                md,
                "\n### External ({} stdlib symbols)\n{}{more}",
                stdlib.len(),
                shown.join(", ")
            );
        }
        rows.write_more(&mut md, "files");
        let _ = writeln!(
            md,
            "\n{} outgoing · {} incoming · {} unresolved · generation {}",
            self.total("outgoing"),
            self.total("incoming"),
            self.external.unresolved_stubs,
            self.generation
        );
        md
    }
}

/// An external stub the file's entities point at: `r.strategy AS strategy, m.name AS
/// name, count(*) AS n`.
struct ExternalRow {
    strategy: String,
    name: String,
    count: i64,
}

impl FromRecord for ExternalRow {
    fn from_record(record: &Record) -> Result<ExternalRow, ToolError> {
        Ok(ExternalRow {
            strategy: record.text("strategy")?,
            name: record.text("name")?,
            count: record.int("n")?,
        })
    }
}

/// The file's references to external stubs.
fn external_references(
    cx: &mut Ctx,
    file: &str,
    min_conf: Option<f64>,
    include_external: bool,
) -> Result<ExternalReferences, ToolError> {
    let mut params = vec![("file", Value::from(file))];
    let mut filter = String::new();
    if let Some(c) = min_conf {
        params.push(("min_confidence", Value::Float(c)));
        filter = " WHERE r.confidence >= $min_confidence".into();
    }
    let found = cx.run(
        &format!(
            "MATCH (n {{file: $file}})-[r]->(m:External){filter} \
             RETURN r.strategy AS strategy, m.name AS name, count(*) AS n ORDER BY strategy, name"
        ),
        &params,
    )?;
    let (mut unresolved, mut other, mut stdlib) = (0, 0, Vec::new());
    for row in decode_rows::<ExternalRow>(&found)? {
        match row.strategy.as_str() {
            "unresolved" => unresolved += row.count,
            "stdlib_method" => stdlib.push(row.name),
            _ => other += row.count,
        }
    }
    Ok(ExternalReferences {
        unresolved_stubs: unresolved,
        other_external_refs: other,
        stdlib: include_external.then_some(stdlib),
    })
}

/// The files that `file` depends on (`outgoing`) or that depend on it, folded per file.
fn dependencies(
    cx: &mut Ctx,
    file: &str,
    outgoing: bool,
    min_conf: Option<f64>,
) -> Result<Vec<FileDependency>, ToolError> {
    let mut params: Vec<(&str, Value)> = vec![("file", Value::from(file))];
    let mut w = vec![
        "m.file <> $file".to_string(),
        "m.file <> ''".to_string(),
        "type(r) <> 'CONTAINS'".to_string(),
    ];
    if let Some(c) = min_conf {
        params.push(("min_confidence", Value::Float(c)));
        w.extend(rel_filter(&[], min_conf));
    }
    let pattern = if outgoing {
        "(n {file: $file})-[r]->(m)"
    } else {
        "(m)-[r]->(n {file: $file})"
    };
    let found = cx.run(
        &format!(
            "MATCH {pattern}{} \
             RETURN m.file AS file, type(r) AS type, count(*) AS n, max(r.confidence) AS confidence, \
             collect(DISTINCT m.name) AS via ORDER BY file, type",
            where_clause(&w)
        ),
        &params,
    )?;
    Ok(aggregate(decode_rows(&found)?))
}

pub(crate) fn file_connectivity(st: &State, a: ConnectivityArgs) -> Result<Reply, ToolError> {
    a.output.format()?;
    positive("max_tokens", a.output.max_tokens())?;
    let limit = positive("limit", a.page.limit)?;
    non_negative_offset(a.page.offset)?;
    let dir = Direction::parse("direction", Some(&a.direction), Direction::Both)?;
    let min_conf = threshold("min_confidence", a.min_confidence)?;
    let file = normalize(&a.file_path);
    let mut cx = st.ctx(a.repo.name())?;
    check_file(&mut cx, &file)?;
    let mut all = Vec::new();
    if dir != Direction::Incoming {
        all.push((
            "outgoing",
            "Depends on",
            dependencies(&mut cx, &file, true, min_conf)?,
        ));
    }
    if dir != Direction::Outgoing {
        all.push((
            "incoming",
            "Depended on by",
            dependencies(&mut cx, &file, false, min_conf)?,
        ));
    }
    let external = external_references(&mut cx, &file, min_conf, a.include_external)?;
    // One page across both directions: the outgoing files first, then the incoming.
    let (offset, limit_rows) = (a.page.offset as usize, limit as usize);
    let mut position = 0;
    let mut sections = Vec::new();
    for (key, title, dependencies) in all {
        let total = dependencies.len();
        let shown = dependencies
            .into_iter()
            .enumerate()
            .filter(|(k, _)| (offset..offset + limit_rows).contains(&(position + k)))
            .map(|(_, dependency)| dependency)
            .collect();
        position += total;
        sections.push(DependencySection {
            key,
            title,
            total,
            shown,
        });
    }
    let returned = position.saturating_sub(offset).min(limit_rows);
    let output = ConnectivityOutput {
        file_dependencies: sections,
        external,
        applied_filters: ConnectivityApplied {
            direction: dir.name(),
            min_confidence: a.min_confidence,
            include_external: a.include_external,
        },
        pagination: Pagination::new(
            a.page.offset,
            limit,
            returned,
            offset + limit_rows < position,
        ),
        generation: cx.db.generation(),
        file_path: file,
    };
    Reply::paged(&output, cx.meta(), a.output.max_tokens(), a.page.offset)
}
