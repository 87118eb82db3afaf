//! trace_path, get_file_graph and file_connectivity.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use batho_engine::query::Value;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value as Json, json};

use super::args::{ConnectivityArgs, FileGraphArgs, TraceArgs};
use super::graph::entity_not_found;
use super::{
    Answer, Direction, Format, RelationFilters, format, lines, positive, rel_filter,
    relation_filters, threshold, type_label, where_clause,
};
use crate::error::ToolError;
use crate::state::{Ctx, State, f, i, s, strs};

/// The found path as one row: for each step k up to `depth`, the node's id and name and
/// the type of the relationship leaving it (null past the end). Explicit indexes because
/// indexing `nodes(p)` with an `UNWIND` variable yields null in the current engine.
fn path_return(depth: i64) -> String {
    let cols: Vec<String> = (0..=depth)
        .map(|k| {
            format!(
                "nodes(p)[{k}].id AS id{k}, nodes(p)[{k}].name AS name{k}, type(relationships(p)[{k}]) AS rel{k}"
            )
        })
        .collect();
    format!("RETURN {}", cols.join(", "))
}

pub(crate) fn trace_path(st: &State, a: TraceArgs) -> Result<CallToolResult, ToolError> {
    format(Some(&a.response_format), Format::Concise)?;
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
    let mut cx = st.ctx(a.repo.as_deref())?;
    for id in [&a.source_entity_id, &a.target_entity_id] {
        let found = cx.run(
            "MATCH (n {id: $id}) RETURN count(*) AS found",
            &[("id", Value::from(id.as_str()))],
        )?;
        if found.rows.first().is_none_or(|r| i(&r[0]) == 0) {
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
    let mut prev_rel = String::new();
    let steps: Vec<(String, String, String)> = res
        .rows
        .first()
        .map(|row| {
            row.chunks(3)
                .take_while(|c| !c[0].is_null())
                .map(|c| (s(&c[0]), s(&c[1]), s(&c[2])))
                .collect()
        })
        .unwrap_or_default();
    for (k, (id, name, next)) in steps.into_iter().enumerate() {
        if k == 0 {
            let _ = writeln!(md, "  {id}");
        } else {
            let _ = writeln!(md, "  → [{prev_rel}] {id}");
        }
        path.push(json!({"entity_id": id, "relation_type": if k == 0 { String::new() } else { prev_rel.clone() }, "name": name}));
        prev_rel = next;
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
    .finish(None, None))
}

fn normalize(path: &str) -> String {
    path.replace('\\', "/").trim_start_matches("./").to_string()
}

fn check_file(cx: &mut Ctx, file: &str) -> Result<(), ToolError> {
    let res = cx.run(
        "MATCH (f:File {file: $file}) RETURN count(*) AS indexed",
        &[("file", Value::from(file))],
    )?;
    if res.rows.first().is_none_or(|r| i(&r[0]) == 0) {
        let tail = file.rsplit('/').next().unwrap_or(file).to_string();
        let similar = cx
            .run(
                "MATCH (f:File) WHERE f.file ENDS WITH $tail RETURN f.file AS file ORDER BY file LIMIT 5",
                &[("tail", Value::from(tail))],
            )
            .map(|r| r.rows.iter().map(|r| s(&r[0])).collect::<Vec<_>>())
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

pub(crate) fn get_file_graph(st: &State, a: FileGraphArgs) -> Result<CallToolResult, ToolError> {
    let fmt = format(Some(&a.response_format), Format::Concise)?;
    positive("max_tokens", a.max_tokens)?;
    let file = normalize(&a.file_path);
    let mut cx = st.ctx(a.repo.as_deref())?;
    check_file(&mut cx, &file)?;
    let fp = Value::from(file.as_str());
    let ents = cx.run(
        "MATCH (n {file: $file}) WHERE NOT n:File \
         RETURN n.id AS id, n.name AS name, n.kind AS kind, n.start_line AS start_line, n.end_line AS end_line \
         ORDER BY start_line, id",
        &[("file", fp.clone())],
    )?;
    let cross = if a.include_cross_file_refs {
        ""
    } else {
        " AND m.file = $file"
    };
    let contains = if fmt == Format::Detailed {
        ""
    } else {
        " AND type(r) <> 'CONTAINS'"
    };
    let rels = cx.run(
        &format!(
            "MATCH (n {{file: $file}})-[r]->(m) WHERE true{contains}{cross} \
             RETURN n.id AS source, type(r) AS type, m.id AS target, m.file AS target_file, m.kind AS target_kind, \
             r.confidence AS confidence, r.line AS line ORDER BY line, source, target"
        ),
        &[("file", fp)],
    )?;
    let prefix = format!("{file}:");
    let short = |id: &str| id.strip_prefix(&prefix).unwrap_or(id).to_string();
    let mut md = format!(
        "## File Graph: {file}\n\n### Entities ({})\n",
        ents.rows.len()
    );
    let mut ent_json = Vec::new();
    for r in &ents.rows {
        let _ = writeln!(
            md,
            "- {} [{}] {}",
            s(&r[1]),
            s(&r[2]).to_ascii_lowercase(),
            lines(i(&r[3]), i(&r[4]))
        );
        ent_json.push(json!({"id": s(&r[0]), "name": s(&r[1]), "kind": s(&r[2]),
            "start_line": i(&r[3]), "end_line": i(&r[4])}));
    }
    let mut internal = String::new();
    let mut external = String::new();
    let mut rel_json = Vec::new();
    let mut stubs: BTreeMap<String, Json> = BTreeMap::new();
    for r in &rels.rows {
        let (src, typ, tgt, tfile) = (s(&r[0]), s(&r[1]), s(&r[2]), s(&r[3]));
        let same = tfile == file;
        let line = format!(
            "- {} -[{typ}]-> {}\n",
            short(&src),
            if same { short(&tgt) } else { tgt.clone() }
        );
        if same {
            internal.push_str(&line);
        } else {
            external.push_str(&line);
            stubs
                .entry(tgt.clone())
                .or_insert_with(|| json!({"id": tgt, "file": tfile, "kind": s(&r[4])}));
        }
        rel_json.push(
            json!({"source_id": src, "relation_type": typ, "target_id": tgt,
            "cross_file": !same, "confidence": (f(&r[5]) * 1e4).round() / 1e4, "line": i(&r[6])}),
        );
    }
    if !internal.is_empty() {
        md.push_str("\n### Relationships (in file)\n");
        md.push_str(&internal);
    }
    if !external.is_empty() {
        let _ = write!(
            md,
            "\n### Cross-file references ({})\n{external}",
            stubs.len()
        );
    }
    let mut structured = Map::new();
    structured.insert("file_path".into(), file.clone().into());
    structured.insert("entities".into(), Json::Array(ent_json));
    structured.insert("relationships".into(), Json::Array(rel_json));
    structured.insert(
        "cross_file_stubs".into(),
        Json::Array(stubs.into_values().collect()),
    );
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(a.max_tokens), None))
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
        let d = out.entry(s(&r[0])).or_insert(Dep {
            counts: BTreeMap::new(),
            max_conf: 0.0,
            via: Vec::new(),
        });
        *d.counts.entry(s(&r[1])).or_default() += i(&r[2]);
        d.max_conf = d.max_conf.max(f(&r[3]));
        for v in strs(&r[4]) {
            if !v.is_empty() && !d.via.contains(&v) {
                d.via.push(v);
            }
        }
    }
    out
}

fn dep_lines(md: &mut String, title: &str, deps: &BTreeMap<String, Dep>) -> Vec<Json> {
    let _ = writeln!(md, "\n### {title} ({} files)", deps.len());
    let mut out = Vec::new();
    for (file, d) in deps {
        let cells: Vec<String> = d
            .counts
            .iter()
            .map(|(k, n)| format!("{}×{n}", verb(k)))
            .collect();
        let mut via = d.via.clone();
        via.sort();
        let shown: Vec<&str> = via.iter().take(4).map(String::as_str).collect();
        let more = if via.len() > 4 { ", …" } else { "" };
        let _ = write!(md, "- `{file}` — {}", cells.join(", "));
        if !shown.is_empty() {
            let _ = write!(md, " (via {}{more})", shown.join(", "));
        }
        md.push('\n');
        let counts: Map<String, Json> = d
            .counts
            .iter()
            .map(|(k, n)| (k.to_ascii_lowercase(), Json::from(*n)))
            .collect();
        out.push(json!({"file": file, "relation_counts": counts,
            "max_confidence": (d.max_conf * 1e4).round() / 1e4, "via": via}));
    }
    out
}

pub(crate) fn file_connectivity(
    st: &State,
    a: ConnectivityArgs,
) -> Result<CallToolResult, ToolError> {
    format(Some(&a.response_format), Format::Concise)?;
    positive("max_tokens", a.max_tokens)?;
    let dir = Direction::parse("direction", Some(&a.direction), Direction::Both)?;
    let min_conf = threshold("min_confidence", a.min_confidence)?;
    let file = normalize(&a.file_path);
    let mut cx = st.ctx(a.repo.as_deref())?;
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
    let mut structured_deps = Map::new();
    let mut md = format!("## File Connectivity: {file}\n");
    let (mut n_out, mut n_in) = (0, 0);
    if dir != Direction::Incoming {
        let res = cx.run(
            &format!(
                "MATCH (n {{file: $file}})-[r]->(m){wc} \
                 RETURN m.file AS file, type(r) AS type, count(*) AS n, max(r.confidence) AS confidence, \
                 collect(DISTINCT m.name) AS via ORDER BY file, type"
            ),
            &params,
        )?;
        let deps = aggregate(&res.rows);
        n_out = deps.len();
        structured_deps.insert(
            "outgoing".into(),
            Json::Array(dep_lines(&mut md, "Depends on", &deps)),
        );
    }
    if dir != Direction::Outgoing {
        let res = cx.run(
            &format!(
                "MATCH (m)-[r]->(n {{file: $file}}){wc} \
                 RETURN m.file AS file, type(r) AS type, count(*) AS n, max(r.confidence) AS confidence, \
                 collect(DISTINCT m.name) AS via ORDER BY file, type"
            ),
            &params,
        )?;
        let deps = aggregate(&res.rows);
        n_in = deps.len();
        structured_deps.insert(
            "incoming".into(),
            Json::Array(dep_lines(&mut md, "Depended on by", &deps)),
        );
    }
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
        match s(&r[0]).as_str() {
            "unresolved" => unresolved += i(&r[2]),
            "stdlib_method" => stdlib.push(s(&r[1])),
            _ => other_ext += i(&r[2]),
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
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(a.max_tokens), None))
}
