//! graph_overview, graph_query, get_entity and search_entities.

use std::fmt::Write as _;

use batho_engine::query::Value;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value as Json, json};

use super::args::{EntityArgs, OverviewArgs, QueryArgs, SearchArgs};
use super::{
    Answer, Direction, Format, RelationFilters, format, kinds, lines, positive, rel_filter,
    relation_filters, roles, type_label, where_clause,
};
use crate::error::ToolError;
use crate::state::{State, f, i, s, strs};

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
    let fmt = format(Some(&a.response_format), Format::Summary)?;
    positive("max_tokens", a.max_tokens)?;
    let mut cx = st.ctx(a.repo.as_deref())?;
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
    let comm_limit: i64 = if fmt == Format::Detailed { 50 } else { 10 };
    // Each community with its label (unique, from its most connected members and main
    // directory), computed in one pass by the engine.
    let comms = cx.run(
        "CALL db.communities() YIELD community, label, entities, files, cohesion \
         RETURN community, label, entities, files, cohesion \
         ORDER BY entities DESC, community LIMIT $limit",
        &[("limit", Value::Int(comm_limit))],
    )?;
    let file_limit: i64 = match fmt {
        Format::Summary => 0,
        Format::Concise => 30,
        Format::Detailed => 500,
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
    if fmt != Format::Summary {
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
    .finish(Some(a.max_tokens), None))
}

pub(crate) fn graph_query(st: &State, a: QueryArgs) -> Result<CallToolResult, ToolError> {
    let fmt = format(Some(&a.response_format), Format::Concise)?;
    let limit = positive("limit", a.limit)?;
    positive("max_tokens", a.max_tokens)?;
    if a.offset < 0 {
        return Err(ToolError::client(format!(
            "offset must be >= 0, got {}",
            a.offset
        )));
    }
    let types = kinds(a.entity_types.as_deref().unwrap_or_default())?;
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
        Direction::Both,
    )?;
    if let Some(p) = &a.name_pattern {
        regex::Regex::new(p).map_err(|e| {
            ToolError::client(format!("Invalid regex in name_pattern '{p}': {e}"))
                .hint("escape special characters, e.g. 'foo\\(' or use a plain substring")
        })?;
    }
    let mut cx = st.ctx(a.repo.as_deref())?;

    let mut node_where = vec![kind_filter("n", &types)];
    let mut params: Vec<(&str, Value)> = Vec::new();
    if !types.is_empty() {
        params.push(("entity_types", list(&types)));
    }
    if let Some(fp) = a.file_path.as_deref().filter(|f| !f.is_empty()) {
        node_where.push("n.file STARTS WITH $file_path".into());
        params.push(("file_path", Value::from(fp.trim_start_matches("./"))));
    }
    if let Some(p) = &a.name_pattern {
        node_where.push("n.name =~ $name_pattern".into());
        params.push(("name_pattern", Value::from(whole_name_pattern(p))));
    }
    if let Some(c) = min_conf {
        params.push(("min_confidence", Value::Float(c)));
    }
    let rel_filtered = !rtypes.is_empty() || !role_names.is_empty() || min_conf.is_some();
    let (l, r) = dir.arrows();
    let tl = type_label(&rtypes);
    let rw = rel_filter(&role_names, min_conf);
    let node_cols = "n.id AS id, n.name AS name, n.kind AS kind, n.file AS file, n.start_line AS start_line, n.end_line AS end_line";
    let nodes_q = if rel_filtered {
        let mut w = node_where.clone();
        w.extend(rw.iter().cloned());
        format!(
            "MATCH (n){l}[r{tl}]{r}(){} WITH DISTINCT n RETURN {node_cols} ORDER BY file, start_line, id SKIP $offset LIMIT $limit",
            where_clause(&w)
        )
    } else {
        format!(
            "MATCH (n){} RETURN {node_cols} ORDER BY file, start_line, id SKIP $offset LIMIT $limit",
            where_clause(&node_where)
        )
    };
    let mut p1 = params.clone();
    p1.push(("offset", Value::Int(a.offset)));
    // One extra row tells whether another page exists.
    p1.push(("limit", Value::Int(limit.saturating_add(1))));
    let res = cx.run(&nodes_q, &p1)?;
    let has_more = res.rows.len() as i64 > limit;
    let rows = &res.rows[..res.rows.len().min(limit as usize)];
    let ids: Vec<Value> = rows.iter().map(|r| r[0].clone()).collect();

    let edge_cap: i64 = if fmt == Format::Detailed { 2000 } else { 500 };
    let edges_q = format!(
        "UNWIND $ids AS eid MATCH (n {{id: eid}}){l}[r{tl}]{r}(m){} \
         RETURN startNode(r).id AS source, type(r) AS type, endNode(r).id AS target, m.name AS other, \
         r.confidence AS confidence, roles(r) AS roles, r.strategy AS strategy, r.line AS line \
         ORDER BY source, line, target LIMIT $edge_limit",
        where_clause(&rw)
    );
    let mut p2: Vec<(&str, Value)> = params
        .iter()
        .filter(|(k, _)| *k == "min_confidence")
        .cloned()
        .collect();
    p2.push(("ids", Value::List(ids.clone())));
    p2.push(("edge_limit", Value::Int(edge_cap + 1)));
    let edges = if ids.is_empty() {
        None
    } else {
        Some(cx.run(&edges_q, &p2)?)
    };

    let mut md = format!(
        "## Query Results ({} entities{})\n",
        rows.len(),
        if a.offset > 0 {
            format!(", offset {}", a.offset)
        } else {
            String::new()
        }
    );
    let mut nodes_json = Vec::new();
    for r in rows {
        let _ = writeln!(
            md,
            "- {} [{}] {}:{}",
            s(&r[0]),
            s(&r[2]).to_ascii_lowercase(),
            s(&r[3]),
            lines(i(&r[4]), i(&r[5]))
        );
        nodes_json.push(json!({
            "id": s(&r[0]), "name": s(&r[1]), "kind": s(&r[2]), "file": s(&r[3]),
            "start_line": i(&r[4]), "end_line": i(&r[5]),
        }));
    }
    let mut edges_json = Vec::new();
    let mut edges_truncated = false;
    if let Some(e) = &edges {
        edges_truncated = e.rows.len() as i64 > edge_cap;
        let shown = &e.rows[..e.rows.len().min(edge_cap as usize)];
        if !shown.is_empty() {
            let _ = writeln!(md, "\n### Relationships ({})", shown.len());
        }
        for r in shown {
            let conf = f(&r[4]);
            let mut line = format!("- {} -[{}]-> {}", s(&r[0]), s(&r[1]), s(&r[2]));
            if conf < 0.999 {
                let _ = write!(line, " ({conf:.2})");
            }
            if fmt == Format::Detailed {
                let _ = write!(line, " {} L{}", s(&r[6]), i(&r[7]));
                let rl = strs(&r[5]);
                if !rl.is_empty() {
                    let _ = write!(line, " roles={}", rl.join("|"));
                }
            }
            md.push_str(&line);
            md.push('\n');
            edges_json.push(json!({
                "source_id": s(&r[0]), "relation_type": s(&r[1]), "target_id": s(&r[2]),
                "confidence": (conf * 1e4).round() / 1e4, "roles": strs(&r[5]),
                "strategy": s(&r[6]), "line": i(&r[7]),
            }));
        }
    }
    let next_offset = a.offset + rows.len() as i64;
    let hint = if has_more {
        let _ = writeln!(md, "\nMore results: call again with offset={next_offset}");
        Some(format!(
            "more results: call again with offset={next_offset}"
        ))
    } else {
        Some("narrow the filters or lower limit".to_string())
    };
    let mut applied = Map::new();
    if let Some(fp) = &a.file_path {
        applied.insert("file_path".into(), fp.clone().into());
    }
    if !types.is_empty() {
        applied.insert("entity_types".into(), json!(types));
    }
    relation_filters(
        &mut applied,
        &rtypes,
        &role_names,
        a.confidence_threshold,
        dir,
    );
    if let Some(p) = &a.name_pattern {
        applied.insert("name_pattern".into(), p.clone().into());
    }
    let mut structured = Map::new();
    structured.insert("nodes".into(), Json::Array(nodes_json));
    structured.insert("edges".into(), Json::Array(edges_json));
    structured.insert(
        "pagination".into(),
        json!({"offset": a.offset, "limit": limit, "returned": rows.len(), "has_more": has_more,
               "next_offset": if has_more { Some(next_offset) } else { None },
               "edges_truncated": edges_truncated}),
    );
    structured.insert("applied_filters".into(), Json::Object(applied));
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(a.max_tokens), hint))
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
    let fmt = format(Some(&a.response_format), Format::Detailed)?;
    positive("max_tokens", a.max_tokens)?;
    let mut cx = st.ctx(a.repo.as_deref())?;
    let id = Value::from(a.entity_id.as_str());
    let ent = cx.run(
        &format!("MATCH (n {{id: $id}}) RETURN {ENTITY_COLS}"),
        &[("id", id.clone())],
    )?;
    let Some(e) = ent.rows.first().cloned() else {
        return Err(entity_not_found(&mut cx, &a.entity_id));
    };
    let rel_cap: i64 = match fmt {
        Format::Summary => 20,
        Format::Concise => 100,
        Format::Detailed => 500,
    };
    let rels = cx.run(
        "MATCH (n {id: $id})-[r]-(m) \
         RETURN startNode(r).id = n.id AS outgoing, type(r) AS type, m.id AS other, m.kind AS kind, \
         r.confidence AS confidence, r.strategy AS strategy, roles(r) AS roles, r.file AS file, r.line AS line \
         ORDER BY outgoing DESC, type, line, other LIMIT $limit",
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
    if !sig.is_empty() && fmt != Format::Summary {
        let _ = writeln!(md, "`{sig}`");
    }
    let rel_rows = &rels.rows[..rels.rows.len().min(rel_cap as usize)];
    let mut out_md = String::new();
    let mut in_md = String::new();
    let mut rel_json = Vec::new();
    for r in rel_rows {
        let outgoing = matches!(r[0], Value::Bool(true));
        let conf = f(&r[4]);
        let mut line = format!("- {} {}", s(&r[1]), s(&r[2]));
        if conf < 0.999 {
            let _ = write!(line, " ({conf:.2} {})", s(&r[5]));
        }
        if fmt == Format::Detailed && i(&r[8]) > 0 {
            let _ = write!(line, " @L{}", i(&r[8]));
        }
        line.push('\n');
        if outgoing {
            out_md.push_str(&line);
        } else {
            in_md.push_str(&line);
        }
        rel_json.push(json!({
            "direction": if outgoing { "outgoing" } else { "incoming" },
            "relation_type": s(&r[1]), "entity_id": s(&r[2]), "kind": s(&r[3]),
            "confidence": (conf * 1e4).round() / 1e4, "strategy": s(&r[5]), "roles": strs(&r[6]),
            "file": s(&r[7]), "line": i(&r[8]),
        }));
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
    if a.include_source {
        let src = read_source(&cx.repo.path, &file, i(&e[7]), i(&e[8]), sl, el);
        match &src {
            Ok(text) => {
                let lang = if s(&e[13]) == "cpp" { "cpp" } else { "c" };
                let _ = write!(md, "\n### Source\n```{lang}\n{text}");
                if !text.ends_with('\n') {
                    md.push('\n');
                }
                md.push_str("```\n");
                entity.insert("source".into(), text.clone().into());
            }
            Err(why) => {
                let _ = writeln!(md, "\n(source unavailable: {why})");
                entity.insert("source_error".into(), why.clone().into());
            }
        }
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
    .finish(Some(a.max_tokens), None))
}

/// The entity's text: the byte range when it is valid, else the line range.
fn read_source(
    root: &std::path::Path,
    file: &str,
    sb: i64,
    eb: i64,
    sl: i64,
    el: i64,
) -> Result<String, String> {
    if file.is_empty() {
        return Err("external entity: no source in this repository".into());
    }
    let bytes = std::fs::read(root.join(file)).map_err(|e| format!("cannot read {file}: {e}"))?;
    let (sb, eb) = (
        usize::try_from(sb).unwrap_or(0),
        usize::try_from(eb).unwrap_or(0),
    );
    if eb > sb && eb <= bytes.len() {
        // Start at the beginning of the first line so indentation is kept.
        let start = bytes[..sb]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |p| p + 1);
        return Ok(String::from_utf8_lossy(&bytes[start..eb]).into_owned());
    }
    let text = String::from_utf8_lossy(&bytes);
    let (sl, el) = (sl.max(1) as usize, el.max(sl).max(1) as usize);
    let out: Vec<&str> = text.lines().skip(sl - 1).take(el - sl + 1).collect();
    if out.is_empty() {
        return Err(format!(
            "lines {sl}-{el} are outside {file}; the file changed since the build"
        ));
    }
    Ok(out.join("\n"))
}

pub(crate) fn search_entities(st: &State, a: SearchArgs) -> Result<CallToolResult, ToolError> {
    let fmt = format(Some(&a.response_format), Format::Concise)?;
    let limit = positive("limit", a.limit)?;
    if a.query.is_empty() {
        return Err(ToolError::client("query must not be empty"));
    }
    let types = kinds(a.entity_types.as_deref().unwrap_or_default())?;
    let role_names = roles(a.symbol_roles.as_deref().unwrap_or_default())?;
    let mut cx = st.ctx(a.repo.as_deref())?;
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
    p.push(("limit", Value::Int(limit)));
    let res = cx.run(
        &format!(
            "{base} RETURN n.id AS id, n.name AS name, n.kind AS kind, n.file AS file, n.start_line AS start_line, \
             n.end_line AS end_line, n.signature AS signature \
             ORDER BY toLower(n.name) = toLower($q) DESC, size(n.name), name, id LIMIT $limit"
        ),
        &p,
    )?;
    let mut md = format!(
        "## Search Results ({total} matches, showing {})\n",
        res.rows.len()
    );
    let mut results = Vec::new();
    for r in &res.rows {
        let file = s(&r[3]);
        let loc = if file.is_empty() {
            "(external)".to_string()
        } else {
            format!("{file}:{}", lines(i(&r[4]), i(&r[5])))
        };
        let _ = write!(
            md,
            "- {} [{}] {loc}",
            s(&r[1]),
            s(&r[2]).to_ascii_lowercase()
        );
        if fmt == Format::Detailed {
            let _ = write!(md, " id={}", s(&r[0]));
            let sig = s(&r[6]);
            if !sig.is_empty() {
                let _ = write!(md, " `{sig}`");
            }
        }
        md.push('\n');
        results.push(json!({
            "id": s(&r[0]), "name": s(&r[1]), "kind": s(&r[2]), "file": file,
            "start_line": i(&r[4]), "end_line": i(&r[5]), "signature": s(&r[6]),
        }));
    }
    let mut structured = Map::new();
    structured.insert("results".into(), Json::Array(results));
    structured.insert("total".into(), total.into());
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
    .finish(Some(25_000), None))
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
