//! graph_overview, graph_query, get_entity and search_entities.

use std::fmt::Write as _;

use batho_engine::query::Value;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value as Json, json};

use super::args::{EntityArgs, OverviewArgs, QueryArgs, ResponseFormat, SearchArgs};
use super::{
    Answer, Direction, RelationFilters, Rows, UseSites, kinds, lines, positive, rel_filter,
    relation_filters, roles, type_label, where_clause,
};
use crate::error::ToolError;
use crate::state::{Ctx, State, f, i, s, strs};

/// Entities exclude file nodes and external stubs unless a type filter names them.
fn kind_filter(var: &str, types: &[&str]) -> String {
    if types.is_empty() {
        format!("NOT {var}:File AND NOT {var}:External")
    } else {
        format!("{var}.kind IN $entity_types")
    }
}

fn list(v: &[&str]) -> Value {
    Value::List(v.iter().map(|s| Value::from(*s)).collect())
}

pub(crate) fn graph_overview(st: &State, a: OverviewArgs) -> Result<CallToolResult, ToolError> {
    let fmt = a.output.format()?;
    positive("max_tokens", a.output.max_tokens())?;
    let mut cx = st.ctx(a.repo.name())?;
    let kinds = cx.run(
        "CALL db.labels() YIELD label, count WHERE count > 0 RETURN label, count ORDER BY count DESC, label",
        &[],
    )?;
    let rels = cx.run(
        "CALL db.relationshipTypes() YIELD relationshipType, count WHERE count > 0 RETURN relationshipType, count ORDER BY count DESC, relationshipType",
        &[],
    )?;
    let ambiguous = cx.run(
        "MATCH ()-[r]->() WHERE r.strategy = 'ambiguous' RETURN count(*) AS ambiguous",
        &[],
    )?;
    let comm_limit: i64 = if fmt == ResponseFormat::Detailed {
        50
    } else {
        10
    };
    // Each community with its label (unique, from its most connected members and main
    // directory), computed in one pass by the engine.
    let comms = cx.run(
        "CALL db.communities() YIELD community, label, entities, files, cohesion \
         RETURN community, label, entities, files, cohesion \
         ORDER BY entities DESC, community LIMIT $limit",
        &[("limit", Value::Int(comm_limit))],
    )?;
    let file_limit: i64 = match fmt {
        ResponseFormat::Summary => 0,
        ResponseFormat::Concise => 30,
        ResponseFormat::Detailed => 500,
    };
    // File nodes without a path stand for headers included from outside the tree
    // (`<stdio.h>`): they are counted apart and never listed as files.
    let file_counts = cx.run(
        "MATCH (f:File) WHERE f.file <> '' RETURN count(*) AS files",
        &[],
    )?;
    let files = if file_limit > 0 {
        Some(cx.run(
            "MATCH (f:File) WHERE f.file <> '' RETURN f.file AS file ORDER BY file LIMIT $limit",
            &[("limit", Value::Int(file_limit))],
        )?)
    } else {
        None
    };
    let run = cx.run(
        "CALL db.runs(1) YIELD id, commit, branch RETURN id, commit, branch",
        &[],
    )?;

    let mut kind_map = Map::new();
    let (mut entities, mut file_nodes) = (0i64, 0i64);
    let nfiles = file_counts.rows.first().map_or(0, |r| i(&r[0]));
    for r in &kinds.rows {
        let (k, n) = (s(&r[0]), i(&r[1]));
        match k.as_str() {
            "File" => file_nodes = n,
            "External" => {}
            _ => entities += n,
        }
        kind_map.insert(k.to_ascii_lowercase(), n.into());
    }
    let mut rel_map = Map::new();
    let mut total_rels = 0;
    for r in &rels.rows {
        total_rels += i(&r[1]);
        rel_map.insert(s(&r[0]).to_ascii_lowercase(), i(&r[1]).into());
    }
    let outside_headers = file_nodes - nfiles;
    let amb = ambiguous.rows.first().map_or(0, |r| i(&r[0]));
    let (run_id, commit, branch) = run
        .rows
        .first()
        .map(|r| (s(&r[0]), s(&r[1]), s(&r[2])))
        .unwrap_or_default();

    let mut md = String::from("# Codebase Overview\n\n");
    let _ = writeln!(
        md,
        "**Stats:** {entities} entities, {total_rels} relationships, {nfiles} files"
    );
    if outside_headers > 0 {
        let _ = writeln!(
            md,
            "**Headers included from outside the tree:** {outside_headers} (not counted as files)"
        );
    }
    if !run_id.is_empty() {
        let short = &commit[..commit.len().min(7)];
        let _ = write!(md, "**Run:** {run_id}");
        if !short.is_empty() {
            let _ = write!(md, " | commit: {short}");
        }
        if !branch.is_empty() {
            let _ = write!(md, " | branch: {branch}");
        }
        md.push('\n');
    }
    if amb > 0 {
        let _ = writeln!(md, "**Ambiguous edges:** {amb}");
    }
    md.push_str("\n## Entity Breakdown\n");
    for r in &kinds.rows {
        let _ = writeln!(md, "- {}: {}", s(&r[0]).to_ascii_lowercase(), i(&r[1]));
    }
    if fmt != ResponseFormat::Summary {
        md.push_str("\n## Relationship Breakdown\n");
        for r in &rels.rows {
            let _ = writeln!(md, "- {}: {}", s(&r[0]), i(&r[1]));
        }
    }
    let mut communities = Vec::new();
    if !comms.rows.is_empty() {
        md.push_str("\n## Communities\n");
    }
    for (k, r) in comms.rows.iter().enumerate() {
        let (id, label, n, nf, cohesion) = (i(&r[0]), s(&r[1]), i(&r[2]), i(&r[3]), f(&r[4]));
        let _ = writeln!(
            md,
            "{}. **{label}** — {n} entities across {nf} files, {:.0}% of their links inside",
            k + 1,
            cohesion * 100.0
        );
        communities.push(json!({"id": id, "name": label, "entity_count": n, "file_count": nf, "cohesion": cohesion}));
    }
    if let Some(files) = &files {
        let _ = writeln!(md, "\n## Files ({nfiles})");
        for r in &files.rows {
            let _ = writeln!(md, "- {}", s(&r[0]));
        }
        if nfiles > files.rows.len() as i64 {
            let _ = writeln!(md, "- … {} more", nfiles - files.rows.len() as i64);
        }
    }
    let mut structured = Map::new();
    structured.insert(
        "overview".into(),
        json!({
            "stats": {
                "total_entities": entities,
                "total_relationships": total_rels,
                "total_files": nfiles,
                "headers_outside_tree": outside_headers,
                "entity_breakdown": kind_map,
                "relationship_breakdown": rel_map,
                "ambiguous_edge_count": amb,
                "run_id": run_id,
                "git_commit": commit,
                "git_branch": branch,
            },
            "communities": communities,
            "files": files.as_ref().map(|f| f.rows.iter().map(|r| s(&r[0])).collect::<Vec<_>>()),
        }),
    );
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(a.output.max_tokens()), None))
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
) -> Result<Vec<Vec<Value>>, ToolError> {
    let mut node_where = vec![kind_filter("n", &filters.types)];
    let mut params: Vec<(&str, Value)> = Vec::new();
    if !filters.types.is_empty() {
        params.push(("entity_types", list(&filters.types)));
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
    Ok(cx.run(&text, &params)?.rows)
}

/// The relationships of the page's entities that pass the filters, in page order (the
/// `UNWIND` keeps the order of `$ids`), at most `cap + 1` of them.
fn query_relationships(
    cx: &mut Ctx,
    ids: Vec<Value>,
    filters: &QueryFilters,
    cap: i64,
) -> Result<Vec<Vec<Value>>, ToolError> {
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
        where_clause(&rel_filter(&rel.roles, rel.min_conf))
    );
    let mut params = vec![
        ("ids", Value::List(ids)),
        ("edge_limit", Value::Int(cap + 1)),
    ];
    if let Some(c) = rel.min_conf {
        params.push(("min_confidence", Value::Float(c)));
    }
    Ok(cx.run(&text, &params)?.rows)
}

/// One relationship line under its entity, and its JSON.
fn relationship_line(edge: &[Value], format: ResponseFormat) -> (String, Json) {
    let conf = f(&edge[4]);
    let sites = UseSites::from_cells(&edge[8], &edge[9]);
    let mut line = format!(
        "  - {} -[{}]-> {}{}",
        s(&edge[1]),
        s(&edge[2]),
        s(&edge[3]),
        sites.times()
    );
    if conf < 0.999 {
        let _ = write!(line, " ({conf:.2})");
    }
    if format == ResponseFormat::Detailed {
        let _ = write!(line, " {} {}", s(&edge[6]), sites.lines_text());
        let role_names = strs(&edge[5]);
        if !role_names.is_empty() {
            let _ = write!(line, " roles={}", role_names.join("|"));
        }
    }
    line.push('\n');
    let mut json = json!({
        "source_id": s(&edge[1]), "relation_type": s(&edge[2]), "target_id": s(&edge[3]),
        "confidence": (conf * 1e4).round() / 1e4, "roles": strs(&edge[5]),
        "strategy": s(&edge[6]), "line": i(&edge[7]),
    });
    if let Json::Object(object) = &mut json {
        sites.insert_into(object);
    }
    (line, json)
}

pub(crate) fn graph_query(st: &State, a: QueryArgs) -> Result<CallToolResult, ToolError> {
    let filters = query_filters(&a)?;
    let mut cx = st.ctx(a.repo.name())?;
    let found = query_entities(&mut cx, &a, &filters)?;
    let mut has_more = found.len() as i64 > filters.limit;
    let entities = &found[..found.len().min(filters.limit as usize)];
    let ids: Vec<Value> = entities.iter().map(|r| r[0].clone()).collect();
    let edge_cap: i64 = if filters.format == ResponseFormat::Detailed {
        2000
    } else {
        500
    };
    let edges = query_relationships(&mut cx, ids, &filters, edge_cap)?;
    let edges_capped = edges.len() as i64 > edge_cap;
    // Relationships grouped under their entity, each group sorted by line then target.
    let mut by_entity: std::collections::HashMap<String, Vec<&Vec<Value>>> =
        std::collections::HashMap::new();
    for edge in edges.iter().take(edge_cap as usize) {
        by_entity.entry(s(&edge[0])).or_default().push(edge);
    }
    // With the cap reached, the entity whose relationships were cut and the ones after it
    // move to the next page, so every listed entity shows all of its relationships.
    let last_complete = if edges_capped {
        let cut_entity = s(&edges[edge_cap as usize][0]);
        let position = entities.iter().position(|r| s(&r[0]) == cut_entity);
        position.map(|p| p.max(1))
    } else {
        None
    };
    let shown = &entities[..last_complete.unwrap_or(entities.len())];
    has_more |= shown.len() < entities.len();
    let files: Vec<String> = shown.iter().map(|r| s(&r[3])).collect();
    cx.check_fresh(files.iter().map(String::as_str))?;

    let mut md = format!(
        "## Query Results ({} entities{})\n",
        shown.len(),
        if a.page.offset > 0 {
            format!(", offset {}", a.page.offset)
        } else {
            String::new()
        }
    );
    let mut rows = Rows::new(a.page.offset);
    let (mut nodes_json, mut edges_json) = (Vec::new(), Vec::new());
    for r in shown {
        let _ = writeln!(
            md,
            "- {} [{}] {}:{}",
            s(&r[0]),
            s(&r[2]).to_ascii_lowercase(),
            s(&r[3]),
            lines(i(&r[4]), i(&r[5]))
        );
        rows.tag("nodes");
        nodes_json.push(json!({
            "id": s(&r[0]), "name": s(&r[1]), "kind": s(&r[2]), "file": s(&r[3]),
            "start_line": i(&r[4]), "end_line": i(&r[5]),
        }));
        let mut group = by_entity.remove(&s(&r[0])).unwrap_or_default();
        group.sort_by(|x, y| (i(&x[7]), s(&x[3]), s(&x[1])).cmp(&(i(&y[7]), s(&y[3]), s(&y[1]))));
        for edge in group {
            let (line, json) = relationship_line(edge, filters.format);
            md.push_str(&line);
            rows.tag("edges");
            edges_json.push(json);
        }
        rows.end_row(md.len());
    }
    rows.set_has_more(has_more);
    let next_offset = rows.next_offset();
    rows.write_more(&mut md, "results");
    let mut structured = Map::new();
    structured.insert("nodes".into(), Json::Array(nodes_json));
    structured.insert("edges".into(), Json::Array(edges_json));
    structured.insert(
        "pagination".into(),
        json!({"offset": a.page.offset, "limit": filters.limit, "returned": shown.len(), "has_more": has_more,
               "next_offset": if has_more { Some(next_offset) } else { None },
               "edges_truncated": edges_capped}),
    );
    structured.insert(
        "applied_filters".into(),
        Json::Object(query_applied(&a, &filters)),
    );
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish_paged(Some(a.output.max_tokens()), rows))
}

/// graph_query's `applied_filters`: only the filters that were given, and the direction.
fn query_applied(a: &QueryArgs, filters: &QueryFilters) -> Map<String, Json> {
    let mut applied = Map::new();
    if let Some(fp) = &a.file_path {
        applied.insert("file_path".into(), fp.clone().into());
    }
    if !filters.types.is_empty() {
        applied.insert("entity_types".into(), json!(filters.types));
    }
    let rel = &filters.relations;
    relation_filters(
        &mut applied,
        &rel.rel_types,
        &rel.roles,
        a.confidence_threshold,
        rel.dir,
    );
    if let Some(p) = &a.name_pattern {
        applied.insert("name_pattern".into(), p.clone().into());
    }
    applied
}

const ENTITY_COLS: &str = "n.id AS id, n.name AS name, n.qualified_name AS qualified_name, n.kind AS kind, \
n.file AS file, n.start_line AS start_line, n.end_line AS end_line, n.start_byte AS start_byte, \
n.end_byte AS end_byte, n.signature AS signature, n.is_exported AS is_exported, n.is_static AS is_static, \
n.community AS community, n.language AS language";

/// The "Entity not found" error, with close names as a hint.
pub(crate) fn entity_not_found(cx: &mut crate::state::Ctx, id: &str) -> ToolError {
    let tail = id.rsplit([':', '.']).next().unwrap_or(id).to_string();
    let similar = cx
        .run(
            "MATCH (n {name: $name}) RETURN n.id AS id ORDER BY id LIMIT 5",
            &[("name", Value::from(tail))],
        )
        .map(|r| r.rows.iter().map(|r| s(&r[0])).collect::<Vec<_>>())
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

pub(crate) fn get_entity(st: &State, a: EntityArgs) -> Result<CallToolResult, ToolError> {
    let fmt = a.output.format()?;
    positive("max_tokens", a.output.max_tokens())?;
    let mut cx = st.ctx(a.repo.name())?;
    let id = Value::from(a.entity_id.as_str());
    let ent = cx.run(
        &format!("MATCH (n {{id: $id}}) RETURN {ENTITY_COLS}"),
        &[("id", id.clone())],
    )?;
    let Some(e) = ent.rows.first().cloned() else {
        return Err(entity_not_found(&mut cx, &a.entity_id));
    };
    let rel_cap: i64 = match fmt {
        ResponseFormat::Summary => 20,
        ResponseFormat::Concise => 100,
        ResponseFormat::Detailed => 500,
    };
    let rels = cx.run(
        "MATCH (n {id: $id})-[r]-(m) \
         RETURN startNode(r).id = n.id AS outgoing, type(r) AS type, m.id AS other, m.kind AS kind, \
         r.confidence AS confidence, r.strategy AS strategy, roles(r) AS roles, r.file AS file, r.line AS line, \
         r.count AS count, r.lines AS lines ORDER BY outgoing DESC, type, line, other LIMIT $limit",
        &[("id", id), ("limit", Value::Int(rel_cap + 1))],
    )?;
    let cols = &ent.columns;
    let mut entity = Map::new();
    for (k, v) in cols.iter().zip(e.iter()) {
        let g = cx.db.graph();
        entity.insert(k.clone(), batho_engine::query::render::to_json(v, &g));
    }
    let (file, sl, el) = (s(&e[4]), i(&e[5]), i(&e[6]));
    let mut md = format!(
        "## {} [{}]\n{}:{}\n",
        s(&e[2]),
        s(&e[3]).to_ascii_lowercase(),
        if file.is_empty() { "(external)" } else { &file },
        lines(sl, el)
    );
    let sig = s(&e[9]);
    if !sig.is_empty() && fmt != ResponseFormat::Summary {
        let _ = writeln!(md, "`{sig}`");
    }
    let rel_rows = &rels.rows[..rels.rows.len().min(rel_cap as usize)];
    let mut out_md = String::new();
    let mut in_md = String::new();
    let mut rel_json = Vec::new();
    for r in rel_rows {
        let outgoing = matches!(r[0], Value::Bool(true));
        let conf = f(&r[4]);
        let sites = UseSites::from_cells(&r[9], &r[10]);
        let mut line = format!("- {} {}{}", s(&r[1]), s(&r[2]), sites.times());
        if conf < 0.999 {
            let _ = write!(line, " ({conf:.2} {})", s(&r[5]));
        }
        if fmt == ResponseFormat::Detailed && !sites.lines.is_empty() {
            let _ = write!(line, " @{}", sites.lines_text());
        }
        line.push('\n');
        if outgoing {
            out_md.push_str(&line);
        } else {
            in_md.push_str(&line);
        }
        let mut relationship = json!({
            "direction": if outgoing { "outgoing" } else { "incoming" },
            "relation_type": s(&r[1]), "entity_id": s(&r[2]), "kind": s(&r[3]),
            "confidence": (conf * 1e4).round() / 1e4, "strategy": s(&r[5]), "roles": strs(&r[6]),
            "file": s(&r[7]), "line": i(&r[8]),
        });
        if let Json::Object(object) = &mut relationship {
            sites.insert_into(object);
        }
        rel_json.push(relationship);
    }
    if !out_md.is_empty() {
        md.push_str("\n### Outgoing\n");
        md.push_str(&out_md);
    }
    if !in_md.is_empty() {
        md.push_str("\n### Incoming\n");
        md.push_str(&in_md);
    }
    let rels_truncated = rels.rows.len() as i64 > rel_cap;
    if rels_truncated {
        let _ = writeln!(
            md,
            "\n(relationships capped at {rel_cap}; use graph_query with relation filters for more)"
        );
    }
    let mut structured = Map::new();
    let changed = cx.check_fresh([file.as_str()])?;
    if a.include_source {
        let shown = entity_source(&cx.repo.path, &file, &e, !changed.is_empty());
        let lang = if s(&e[13]) == "cpp" { "cpp" } else { "c" };
        shown.render(&mut md, &mut entity, lang);
    }
    entity.insert("relationships".into(), Json::Array(rel_json));
    entity.insert("relationships_truncated".into(), rels_truncated.into());
    structured.insert("entity".into(), Json::Object(entity));
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(a.output.max_tokens()), None))
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

impl ShownSource {
    /// Appends the source block (or the reason there is none) to the markdown and the
    /// entity's JSON: `source`, `source_origin` (indexed, relocated) or `source_error`.
    fn render(self, md: &mut String, entity: &mut Map<String, Json>, lang: &str) {
        let (text, origin) = match self {
            ShownSource::Indexed(text) => (text, "indexed"),
            ShownSource::Relocated {
                text,
                line,
                indexed_line,
            } => {
                let _ = writeln!(
                    md,
                    "\n(the file changed since it was indexed: this is the current text, found again at L{line}; it was indexed at L{indexed_line})"
                );
                entity.insert("source_line".into(), line.into());
                (text, "relocated")
            }
            ShownSource::Unavailable(why) => {
                let _ = writeln!(md, "\n(source unavailable: {why})");
                entity.insert("source_error".into(), why.into());
                return;
            }
        };
        let _ = write!(md, "\n### Source\n```{lang}\n{text}");
        if !text.ends_with('\n') {
            md.push('\n');
        }
        md.push_str("```\n");
        entity.insert("source".into(), text.into());
        entity.insert("source_origin".into(), origin.into());
    }
}

/// The entity's source. Byte offsets are only trusted while the file still holds the
/// indexed bytes: once it changed they point into other text, so the entity is found
/// again by its signature (or name) near its old line instead.
fn entity_source(
    root: &std::path::Path,
    file: &str,
    entity: &[Value],
    changed: bool,
) -> ShownSource {
    if file.is_empty() {
        return ShownSource::Unavailable("external entity: no source in this repository".into());
    }
    let bytes = match batho_engine::repo_files::read_repo_file(root, file) {
        Ok(bytes) => bytes,
        Err(e) => return ShownSource::Unavailable(e.to_string()),
    };
    let (start_byte, end_byte) = (to_usize(&entity[7]), to_usize(&entity[8]));
    let (start_line, end_line) = (i(&entity[5]), i(&entity[6]));
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
    match relocate(&all, &s(&entity[1]), &s(&entity[9]), start_line) {
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

fn to_usize(v: &Value) -> usize {
    usize::try_from(i(v)).unwrap_or(0)
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

pub(crate) fn search_entities(st: &State, a: SearchArgs) -> Result<CallToolResult, ToolError> {
    let fmt = a.output.format()?;
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
    let mut params: Vec<(&str, Value)> = Vec::new();
    if !types.is_empty() {
        params.push(("entity_types", list(&types)));
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
    let total = count.rows.first().map_or(0, |r| i(&r[0]));
    let mut p = params.clone();
    if a.page.offset < 0 {
        return Err(ToolError::client(format!(
            "offset must be >= 0, got {}",
            a.page.offset
        )));
    }
    p.push(("offset", Value::Int(a.page.offset)));
    p.push(("limit", Value::Int(limit)));
    let res = cx.run(
        &format!(
            "{base} RETURN n.id AS id, n.name AS name, n.kind AS kind, n.file AS file, n.start_line AS start_line, \
             n.end_line AS end_line, n.signature AS signature \
             ORDER BY toLower(n.name) = toLower($q) DESC, size(n.name), name, id SKIP $offset LIMIT $limit"
        ),
        &p,
    )?;
    let mut md = format!(
        "## Search Results ({total} matches, showing {}{})\n",
        res.rows.len(),
        if a.page.offset > 0 {
            format!(" from offset {}", a.page.offset)
        } else {
            String::new()
        }
    );
    let files: Vec<String> = res.rows.iter().map(|r| s(&r[3])).collect();
    cx.check_fresh(files.iter().map(String::as_str))?;
    let mut rows = Rows::new(a.page.offset);
    let mut results = Vec::new();
    for r in &res.rows {
        let file = s(&r[3]);
        let loc = if file.is_empty() {
            "(external)".to_string()
        } else {
            format!("{file}:{}", lines(i(&r[4]), i(&r[5])))
        };
        // The id is what get_entity, trace_path and the other tools take.
        let _ = write!(
            md,
            "- {} [{}] {loc} id={}",
            s(&r[1]),
            s(&r[2]).to_ascii_lowercase(),
            s(&r[0])
        );
        if fmt == ResponseFormat::Detailed {
            let sig = s(&r[6]);
            if !sig.is_empty() {
                let _ = write!(md, " `{sig}`");
            }
        }
        md.push('\n');
        rows.tag("results");
        rows.end_row(md.len());
        results.push(json!({
            "id": s(&r[0]), "name": s(&r[1]), "kind": s(&r[2]), "file": file,
            "start_line": i(&r[4]), "end_line": i(&r[5]), "signature": s(&r[6]),
        }));
    }
    let has_more = a.page.offset + (res.rows.len() as i64) < total;
    rows.set_has_more(has_more);
    let next_offset = rows.next_offset();
    rows.write_more(&mut md, "results");
    let mut structured = Map::new();
    structured.insert("results".into(), Json::Array(results));
    structured.insert("total".into(), total.into());
    structured.insert(
        "pagination".into(),
        json!({"offset": a.page.offset, "limit": limit, "returned": res.rows.len(), "has_more": has_more,
               "next_offset": if has_more { Some(next_offset) } else { None }}),
    );
    structured.insert(
        "match_mode".into(),
        (if is_regex { "regex" } else { "substring" }).into(),
    );
    let mut applied = Map::new();
    if !types.is_empty() {
        applied.insert("entity_types".into(), json!(types));
    }
    if !role_names.is_empty() {
        applied.insert("symbol_roles".into(), json!(role_names));
    }
    structured.insert("applied_filters".into(), Json::Object(applied));
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish_paged(Some(a.output.max_tokens()), rows))
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
