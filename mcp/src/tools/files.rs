//! trace_path, get_file_graph and file_connectivity.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use batho_engine::query::{QueryResult, Value};
use rmcp::model::CallToolResult;
use serde_json::{Map, Value as Json, json};

use super::args::{ConnectivityArgs, FileGraphArgs, ResponseFormat, TraceArgs};
use super::cells::{float_of, int_of, text_of, texts_of};
use super::graph::entity_not_found;
use super::{
    Answer, Direction, RelationFilters, Rows, UseSites, lines, positive, rel_filter,
    relation_filters, threshold, type_label, where_clause,
};
use crate::error::ToolError;
use crate::state::{Ctx, State};

/// The columns `path_return` gives each step of a path.
const PATH_COLUMNS_PER_STEP: usize = 8;

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
    fn from_cells(cells: &[Value]) -> PathStep {
        PathStep {
            id: text_of(&cells[0]),
            name: text_of(&cells[1]),
            relation: text_of(&cells[2]),
            forward: !matches!(cells[3], Value::Bool(false)),
            sites: UseSites::from_cells(&cells[4], &cells[5]),
            confidence: float_of(&cells[6]),
            file: text_of(&cells[7]),
        }
    }

    /// The steps of the path in the first row of `result` (a query ending in
    /// [`path_return`]); empty when no path was found.
    pub(crate) fn read_path(result: &QueryResult) -> Vec<PathStep> {
        result
            .rows
            .first()
            .map(|row| {
                row.chunks(PATH_COLUMNS_PER_STEP)
                    .take_while(|cells| !cells[0].is_null())
                    .map(PathStep::from_cells)
                    .collect()
            })
            .unwrap_or_default()
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

pub(crate) fn trace_path(st: &State, a: TraceArgs) -> Result<CallToolResult, ToolError> {
    positive("max_tokens", a.output.max_tokens())?;
    a.output.format()?;
    let depth = positive("max_depth", a.max_depth)?;
    if depth > 20 {
        return Err(ToolError::client(format!(
            "max_depth must be at most 20, got {depth}"
        )));
    }
    let RelationFilters {
        rel_types: rtypes,
        roles: role_names,
        min_conf,
        dir,
    } = RelationFilters::parse(
        a.relation_types.as_deref(),
        a.symbol_roles.as_deref(),
        a.confidence_threshold,
        &a.relation_direction,
        Direction::Outgoing,
    )?;
    let mut cx = st.ctx(a.repo.name())?;
    for id in [&a.source_entity_id, &a.target_entity_id] {
        let found = cx.run(
            "MATCH (n {id: $id}) RETURN count(*) AS found",
            &[("id", Value::from(id.as_str()))],
        )?;
        if found.rows.first().is_none_or(|r| int_of(&r[0]) == 0) {
            return Err(entity_not_found(&mut cx, id));
        }
    }
    let (l, r) = dir.arrows();
    let tl = type_label(&rtypes);
    let mut params: Vec<(&str, Value)> = vec![
        ("source", Value::from(a.source_entity_id.as_str())),
        ("target", Value::from(a.target_entity_id.as_str())),
    ];
    let filters = rel_filter(&role_names, min_conf);
    let q = if filters.is_empty() {
        format!(
            "MATCH p = shortestPath((a {{id: $source}}){l}[{tl}*..{depth}]{r}(b {{id: $target}})) WITH p LIMIT 1 {}",
            path_return(depth)
        )
    } else {
        // shortestPath cannot filter individual hops, so paths are enumerated up to the
        // depth, hops checked, and the shortest kept.
        if let Some(c) = min_conf {
            params.push(("min_confidence", Value::Float(c)));
        }
        format!(
            "MATCH p = (a {{id: $source}}){l}[rs{tl}*1..{depth}]{r}(b {{id: $target}}) \
             UNWIND rs AS r WITH p, collect({}) AS ok WHERE NOT false IN ok \
             WITH p ORDER BY length(p) LIMIT 1 {}",
            filters.join(" AND "),
            path_return(depth)
        )
    };
    let res = cx.run(&q, &params)?;
    let mut path = Vec::new();
    let mut md = String::from("## Path Trace\n");
    let steps = PathStep::read_path(&res);
    let mut previous: Option<&PathStep> = None;
    for step in &steps {
        match previous {
            None => {
                let _ = writeln!(md, "  {}", step.id);
                path.push(json!({"entity_id": step.id, "relation_type": "", "name": step.name}));
            }
            Some(hop) => {
                // `←` says the stored relationship points back: this entity -[rel]-> the previous.
                let arrow = if hop.forward { "→" } else { "←" };
                let lines = hop.sites.lines_text();
                let place = if lines.is_empty() {
                    String::new()
                } else {
                    format!(" {lines}")
                };
                let _ = writeln!(
                    md,
                    "  {arrow} [{}{}{place}] {}",
                    hop.relation,
                    hop.sites.times(),
                    step.id
                );
                let mut entry = json!({"entity_id": step.id, "relation_type": hop.relation,
                    "name": step.name, "direction": if hop.forward { "forward" } else { "backward" }});
                if let Json::Object(object) = &mut entry {
                    hop.sites.insert_into(object);
                }
                path.push(entry);
            }
        }
        previous = Some(step);
    }
    let hops = path.len().saturating_sub(1);
    let mut structured = Map::new();
    if path.is_empty() {
        let _ = writeln!(md, "No path within {depth} hops ({} edges).", dir.name());
        structured.insert("found".into(), false.into());
    } else {
        let _ = writeln!(md, "\nDepth: {hops} hops");
        structured.insert("found".into(), true.into());
    }
    structured.insert("path".into(), Json::Array(path));
    structured.insert("depth".into(), hops.into());
    let mut applied = Map::new();
    relation_filters(
        &mut applied,
        &rtypes,
        &role_names,
        a.confidence_threshold,
        dir,
    );
    applied.insert("max_depth".into(), depth.into());
    structured.insert("applied_filters".into(), Json::Object(applied));
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(a.output.max_tokens()), None))
}

/// `structuredContent.pagination` of a paged listing.
pub(crate) fn page_json(
    offset: i64,
    limit: i64,
    returned: usize,
    has_more: bool,
    next_offset: i64,
) -> Json {
    json!({"offset": offset, "limit": limit, "returned": returned, "has_more": has_more,
           "next_offset": if has_more { Some(next_offset) } else { None }})
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
    let res = cx.run(
        "MATCH (f:File {file: $file}) RETURN count(*) AS indexed",
        &[("file", Value::from(file))],
    )?;
    if res.rows.first().is_none_or(|r| int_of(&r[0]) == 0) {
        let tail = file.rsplit('/').next().unwrap_or(file).to_string();
        let similar = cx
            .run(
                "MATCH (f:File) WHERE f.file ENDS WITH $tail RETURN f.file AS file ORDER BY file LIMIT 5",
                &[("tail", Value::from(tail))],
            )
            .map(|r| r.rows.iter().map(|r| text_of(&r[0])).collect::<Vec<_>>())
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

/// One page of a file's entities: rows of (id, name, kind, start_line, end_line), one more
/// than `limit` to tell whether another page exists, and the total.
fn file_entities(
    cx: &mut Ctx,
    file: &str,
    offset: i64,
    limit: i64,
) -> Result<(Vec<Vec<Value>>, i64), ToolError> {
    let fp = Value::from(file);
    let total = cx.run(
        "MATCH (n {file: $file}) WHERE NOT n:File RETURN count(*) AS entities",
        &[("file", fp.clone())],
    )?;
    let total = total.rows.first().map_or(0, |r| int_of(&r[0]));
    let page = cx.run(
        "MATCH (n {file: $file}) WHERE NOT n:File \
         RETURN n.id AS id, n.name AS name, n.kind AS kind, n.start_line AS start_line, n.end_line AS end_line \
         ORDER BY start_line, id SKIP $offset LIMIT $limit",
        &[("file", fp), ("offset", Value::Int(offset)), ("limit", Value::Int(limit.saturating_add(1)))],
    )?;
    Ok((page.rows, total))
}

/// The outgoing relationships of the page's entities, in page order.
fn file_relationships(
    cx: &mut Ctx,
    file: &str,
    ids: Vec<Value>,
    format: ResponseFormat,
    cross_file: bool,
) -> Result<Vec<Vec<Value>>, ToolError> {
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
    let res = cx.run(
        &format!(
            "UNWIND $ids AS eid MATCH (n {{id: eid}})-[r]->(m) WHERE true{contains}{cross} \
             RETURN n.id AS source, type(r) AS type, m.id AS target, m.file AS target_file, m.kind AS target_kind, \
             r.confidence AS confidence, r.line AS line"
        ),
        &[("file", Value::from(file)), ("ids", Value::List(ids))],
    )?;
    Ok(res.rows)
}

pub(crate) fn get_file_graph(st: &State, a: FileGraphArgs) -> Result<CallToolResult, ToolError> {
    let fmt = a.output.format()?;
    positive("max_tokens", a.output.max_tokens())?;
    let limit = positive("limit", a.page.limit)?;
    non_negative_offset(a.page.offset)?;
    let file = normalize(&a.file_path);
    let mut cx = st.ctx(a.repo.name())?;
    check_file(&mut cx, &file)?;
    cx.check_fresh([file.as_str()])?;
    let (found, total) = file_entities(&mut cx, &file, a.page.offset, limit)?;
    let has_more = found.len() as i64 > limit;
    let entities = &found[..found.len().min(limit as usize)];
    let ids = entities.iter().map(|r| r[0].clone()).collect();
    let rels = file_relationships(&mut cx, &file, ids, fmt, a.include_cross_file_refs)?;
    let mut by_source: BTreeMap<String, Vec<&Vec<Value>>> = BTreeMap::new();
    for r in &rels {
        by_source.entry(text_of(&r[0])).or_default().push(r);
    }
    let prefix = format!("{file}:");
    let short = |id: &str| id.strip_prefix(&prefix).unwrap_or(id).to_string();
    let mut md = format!("## File Graph: {file}\n\n### Entities ({total})\n");
    if a.page.offset > 0 || has_more {
        let _ = writeln!(
            md,
            "(entities {}-{} of {total})",
            a.page.offset + 1,
            a.page.offset + entities.len() as i64
        );
    }
    let mut rows = Rows::new(a.page.offset);
    let (mut ent_json, mut rel_json) = (Vec::new(), Vec::new());
    // Stubs in the order their rows first name them, so a cut keeps the right ones.
    let (mut stubs, mut stub_ids) = (Vec::new(), std::collections::HashSet::new());
    for r in entities {
        let _ = writeln!(
            md,
            "- {} [{}] {}",
            text_of(&r[1]),
            text_of(&r[2]).to_ascii_lowercase(),
            lines(int_of(&r[3]), int_of(&r[4]))
        );
        rows.tag("entities");
        ent_json.push(
            json!({"id": text_of(&r[0]), "name": text_of(&r[1]), "kind": text_of(&r[2]),
            "start_line": int_of(&r[3]), "end_line": int_of(&r[4])}),
        );
        let mut group = by_source.remove(&text_of(&r[0])).unwrap_or_default();
        group.sort_by_key(|x| (int_of(&x[6]), text_of(&x[2]), text_of(&x[1])));
        for x in group {
            let (typ, tgt, tfile) = (text_of(&x[1]), text_of(&x[2]), text_of(&x[3]));
            let same = tfile == file;
            let _ = writeln!(
                md,
                "  -[{typ}]-> {}",
                if same { short(&tgt) } else { tgt.clone() }
            );
            if !same && stub_ids.insert(tgt.clone()) {
                rows.tag("cross_file_stubs");
                stubs.push(json!({"id": tgt, "file": tfile, "kind": text_of(&x[4])}));
            }
            rows.tag("relationships");
            rel_json.push(json!({"source_id": text_of(&x[0]), "relation_type": typ, "target_id": tgt,
                "cross_file": !same, "confidence": (float_of(&x[5]) * 1e4).round() / 1e4, "line": int_of(&x[6])}));
        }
        rows.end_row(md.len());
    }
    rows.set_has_more(has_more);
    rows.write_more(&mut md, "entities");
    let mut structured = Map::new();
    structured.insert("file_path".into(), file.clone().into());
    structured.insert("entities".into(), Json::Array(ent_json));
    structured.insert("relationships".into(), Json::Array(rel_json));
    structured.insert("cross_file_stubs".into(), Json::Array(stubs));
    structured.insert(
        "pagination".into(),
        page_json(
            a.page.offset,
            limit,
            entities.len(),
            has_more,
            rows.next_offset(),
        ),
    );
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish_paged(Some(a.output.max_tokens()), rows))
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

struct Dep {
    counts: BTreeMap<String, i64>,
    max_conf: f64,
    via: Vec<String>,
}

fn aggregate(rows: &[Vec<Value>]) -> BTreeMap<String, Dep> {
    let mut out: BTreeMap<String, Dep> = BTreeMap::new();
    for r in rows {
        let d = out.entry(text_of(&r[0])).or_insert(Dep {
            counts: BTreeMap::new(),
            max_conf: 0.0,
            via: Vec::new(),
        });
        *d.counts.entry(text_of(&r[1])).or_default() += int_of(&r[2]);
        d.max_conf = d.max_conf.max(float_of(&r[3]));
        for v in texts_of(&r[4]) {
            if !v.is_empty() && !d.via.contains(&v) {
                d.via.push(v);
            }
        }
    }
    out
}

/// Renders one dependency row (a file and its per-relation counts) and its JSON.
fn dep_line(file: &str, dep: &Dep) -> (String, Json) {
    let cells: Vec<String> = dep
        .counts
        .iter()
        .map(|(k, n)| format!("{}×{n}", verb(k)))
        .collect();
    let mut via = dep.via.clone();
    via.sort();
    let shown: Vec<&str> = via.iter().take(4).map(String::as_str).collect();
    let more = if via.len() > 4 { ", …" } else { "" };
    let mut line = format!("- `{file}` — {}", cells.join(", "));
    if !shown.is_empty() {
        let _ = write!(line, " (via {}{more})", shown.join(", "));
    }
    line.push('\n');
    let counts: Map<String, Json> = dep
        .counts
        .iter()
        .map(|(k, n)| (k.to_ascii_lowercase(), Json::from(*n)))
        .collect();
    let json = json!({"file": file, "relation_counts": counts,
        "max_confidence": (dep.max_conf * 1e4).round() / 1e4, "via": via});
    (line, json)
}

/// The dependency rows of one page: outgoing rows first, then incoming, numbered across
/// both, so one `offset` walks both lists; each section keeps its title and total.
fn dep_page(
    md: &mut String,
    rows: &mut Rows,
    sections: &[(&'static str, &str, &BTreeMap<String, Dep>)],
    offset: usize,
    limit: usize,
) -> Map<String, Json> {
    let mut structured = Map::new();
    let mut position = 0;
    for (key, title, deps) in sections {
        let mut items = Vec::new();
        let in_page: Vec<(&String, &Dep)> = deps
            .iter()
            .enumerate()
            .filter(|(k, _)| (offset..offset + limit).contains(&(position + k)))
            .map(|(_, entry)| entry)
            .collect();
        position += deps.len();
        if !in_page.is_empty() || (deps.is_empty() && offset == 0) {
            let _ = writeln!(md, "\n### {title} ({} files)", deps.len());
        }
        for (file, dep) in in_page {
            let (line, json) = dep_line(file, dep);
            md.push_str(&line);
            rows.tag(if *key == "outgoing" {
                "file_dependencies/outgoing"
            } else {
                "file_dependencies/incoming"
            });
            items.push(json);
            rows.end_row(md.len());
        }
        structured.insert((*key).into(), Json::Array(items));
    }
    rows.set_has_more(offset + limit < position);
    structured
}

pub(crate) fn file_connectivity(
    st: &State,
    a: ConnectivityArgs,
) -> Result<CallToolResult, ToolError> {
    a.output.format()?;
    positive("max_tokens", a.output.max_tokens())?;
    let limit = positive("limit", a.page.limit)?;
    non_negative_offset(a.page.offset)?;
    let dir = Direction::parse("direction", Some(&a.direction), Direction::Both)?;
    let min_conf = threshold("min_confidence", a.min_confidence)?;
    let file = normalize(&a.file_path);
    let mut cx = st.ctx(a.repo.name())?;
    check_file(&mut cx, &file)?;
    let mut params: Vec<(&str, Value)> = vec![("file", Value::from(file.as_str()))];
    let mut w = vec![
        "m.file <> $file".to_string(),
        "m.file <> ''".to_string(),
        "type(r) <> 'CONTAINS'".to_string(),
    ];
    if let Some(c) = min_conf {
        params.push(("min_confidence", Value::Float(c)));
        w.extend(rel_filter(&[], min_conf));
    }
    let wc = where_clause(&w);
    let mut md = format!("## File Connectivity: {file}\n");
    let outgoing = if dir != Direction::Incoming {
        let res = cx.run(
            &format!(
                "MATCH (n {{file: $file}})-[r]->(m){wc} \
                 RETURN m.file AS file, type(r) AS type, count(*) AS n, max(r.confidence) AS confidence, \
                 collect(DISTINCT m.name) AS via ORDER BY file, type"
            ),
            &params,
        )?;
        Some(aggregate(&res.rows))
    } else {
        None
    };
    let incoming = if dir != Direction::Outgoing {
        let res = cx.run(
            &format!(
                "MATCH (m)-[r]->(n {{file: $file}}){wc} \
                 RETURN m.file AS file, type(r) AS type, count(*) AS n, max(r.confidence) AS confidence, \
                 collect(DISTINCT m.name) AS via ORDER BY file, type"
            ),
            &params,
        )?;
        Some(aggregate(&res.rows))
    } else {
        None
    };
    let (n_out, n_in) = (
        outgoing.as_ref().map_or(0, BTreeMap::len),
        incoming.as_ref().map_or(0, BTreeMap::len),
    );
    let mut sections = Vec::new();
    if let Some(deps) = &outgoing {
        sections.push(("outgoing", "Depends on", deps));
    }
    if let Some(deps) = &incoming {
        sections.push(("incoming", "Depended on by", deps));
    }
    let mut rows = Rows::new(a.page.offset);
    let structured_deps = dep_page(
        &mut md,
        &mut rows,
        &sections,
        a.page.offset as usize,
        limit as usize,
    );
    // Edges into external stubs: stdlib roots (resolved as stdlib) and unresolved names.
    let mut ext_params = vec![("file", Value::from(file.as_str()))];
    let mut ext_w = String::new();
    if let Some(c) = min_conf {
        ext_params.push(("min_confidence", Value::Float(c)));
        ext_w = " WHERE r.confidence >= $min_confidence".into();
    }
    let ext = cx.run(
        &format!(
            "MATCH (n {{file: $file}})-[r]->(m:External){ext_w} \
             RETURN r.strategy AS strategy, m.name AS name, count(*) AS n ORDER BY strategy, name"
        ),
        &ext_params,
    )?;
    let mut unresolved = 0;
    let mut stdlib: Vec<String> = Vec::new();
    let mut other_ext = 0;
    for r in &ext.rows {
        match text_of(&r[0]).as_str() {
            "unresolved" => unresolved += int_of(&r[2]),
            "stdlib_method" => stdlib.push(text_of(&r[1])),
            _ => other_ext += int_of(&r[2]),
        }
    }
    if a.include_external && !stdlib.is_empty() {
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
        "\n{n_out} outgoing · {n_in} incoming · {unresolved} unresolved · generation {}",
        cx.db.generation()
    );
    let mut structured = Map::new();
    structured.insert("file_path".into(), file.into());
    structured.insert("file_dependencies".into(), Json::Object(structured_deps));
    let mut external = json!({"unresolved_stubs": unresolved, "other_external_refs": other_ext});
    if a.include_external {
        external["stdlib"] = json!(stdlib);
    }
    structured.insert("external".into(), external);
    structured.insert("applied_filters".into(), json!({"direction": dir.name(), "min_confidence": a.min_confidence, "include_external": a.include_external}));
    let returned = (n_out + n_in)
        .saturating_sub(a.page.offset as usize)
        .min(limit as usize);
    structured.insert(
        "pagination".into(),
        page_json(
            a.page.offset,
            limit,
            returned,
            rows.has_more(),
            rows.next_offset(),
        ),
    );
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish_paged(Some(a.output.max_tokens()), rows))
}
