//! The Astria tools on the code graph (`../shared/seeds/astria-mcp-tools.txt`): explain,
//! shortest_path, list_communities, god_nodes and health. Each compiles to BQL (`meta.query`). A node is named
//! as an agent names it (an id, a qualified name or a plain name) and found by
//! [`find_node`]; every relationship shows its evidence class
//! ([`batho_schema::Provenance`]) and the arrow it is stored with.

use std::fmt::Write as _;

use batho_engine::query::Value;
use batho_schema::Provenance;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value as Json, json};

use super::args::{
    AffectedArgs, CommunitiesArgs, Detail, ExplainArgs, GodNodesArgs, NeighborsArgs, RepoArgs,
    RepoMapArgs, ShortestPathArgs,
};
use super::files::{PathStep, non_negative_offset, path_return};
use super::{Answer, UseSites, positive};
use crate::error::ToolError;
use crate::state::{Ctx, State, f, i, s};

/// Astria answers are short: they are cut at the Batho tools' default budget.
const ANSWER_TOKENS: i64 = 25_000;

/// At most this many candidates are listed for an ambiguous node.
const SHOWN_CANDIDATES: usize = 10;

/// The neighbours `explain` lists.
const EXPLAIN_NEIGHBOURS: i64 = 20;

/// Hops `shortest_path` searches: every relationship, or (detail high) only the strong
/// ones, whose paths must be enumerated because `shortestPath` cannot filter single hops.
const PATH_HOPS: i64 = 10;
const PATH_HOPS_HIGH: i64 = 4;

/// The lowest confidence of the two strongest evidence classes (EXTRACTED, RESOLVED).
const HIGH_CONFIDENCE: f64 = 0.95;

const NODE_COLUMNS: &str = "n.id AS id, n.name AS name, n.qualified_name AS qualified_name, \
n.kind AS kind, n.file AS file, n.start_line AS line, n.community AS community";

/// A node as the Astria tools show it.
pub(crate) struct FoundNode {
    id: String,
    name: String,
    kind: String,
    file: String,
    line: i64,
    community: i64,
}

impl FoundNode {
    fn from_cells(cells: &[Value]) -> FoundNode {
        FoundNode {
            id: s(&cells[0]),
            name: s(&cells[1]),
            kind: s(&cells[3]),
            file: s(&cells[4]),
            line: i(&cells[5]),
            community: i(&cells[6]),
        }
    }

    /// `src/table.c:80`, or `(external)`.
    fn place(&self) -> String {
        if self.file.is_empty() {
            "(external)".to_string()
        } else {
            format!("{}:{}", self.file, self.line)
        }
    }

    /// `NODE name [id=… src=file:line kind=… community=…]`.
    fn line(&self) -> String {
        format!(
            "NODE {} [id={} src={} kind={} community={}]",
            self.name,
            self.id,
            self.place(),
            self.kind.to_ascii_lowercase(),
            self.community
        )
    }

    fn json(&self) -> Json {
        json!({"id": self.id, "name": self.name, "kind": self.kind, "file": self.file,
               "line": self.line, "community": self.community})
    }
}

/// The node an agent named: by id; else by qualified name or name, external stubs only
/// when nothing else matches, and among several the one definition when exactly one of
/// them is defined (a header's prototype and its `.c` definition name one function).
/// Anything else ambiguous lists the candidates instead of picking one.
pub(crate) fn find_node(cx: &mut Ctx, label: &str) -> Result<FoundNode, ToolError> {
    let by_id = cx.run(
        &format!("MATCH (n {{id: $node}}) RETURN {NODE_COLUMNS}"),
        &[("node", Value::from(label))],
    )?;
    if let Some(row) = by_id.rows.first() {
        return Ok(FoundNode::from_cells(row));
    }
    let name = label.rsplit("::").next().unwrap_or(label);
    let by_name = cx.run(
        &format!(
            "MATCH (n {{name: $name}}) OPTIONAL MATCH (container)-[c:CONTAINS]->(n) \
             WITH n, collect(has_role(c, 'Definition')) AS definitions \
             RETURN {NODE_COLUMNS}, true IN definitions AS defined ORDER BY id LIMIT 200"
        ),
        &[("name", Value::from(name))],
    )?;
    let mut candidates: Vec<(FoundNode, bool)> = by_name
        .rows
        .iter()
        .filter(|row| s(&row[1]) == label || s(&row[2]) == label)
        .map(|row| {
            (
                FoundNode::from_cells(row),
                matches!(row[7], Value::Bool(true)),
            )
        })
        .collect();
    if candidates.iter().any(|(node, _)| node.kind != "External") {
        candidates.retain(|(node, _)| node.kind != "External");
    }
    if candidates.len() > 1 && candidates.iter().filter(|(_, defined)| *defined).count() == 1 {
        candidates.retain(|(_, defined)| *defined);
    }
    match candidates.len() {
        0 => Err(ToolError::client(format!("node not found: {label}")).hint(
            "name a node by its id, qualified name or name; search_entities finds names by a part",
        )),
        1 => Ok(candidates.remove(0).0),
        n => {
            let listed: Vec<String> = candidates
                .iter()
                .take(SHOWN_CANDIDATES)
                .map(|(node, _)| format!("{} ({})", node.id, node.place()))
                .collect();
            let more = n.saturating_sub(SHOWN_CANDIDATES);
            let tail = if more > 0 {
                format!(", and {more} more")
            } else {
                String::new()
            };
            Err(ToolError::client(format!(
                "ambiguous node '{label}': {n} candidates: {}{tail}",
                listed.join(", ")
            ))
            .hint("pass one of the ids"))
        }
    }
}

/// `[RESOLVED 0.95]`: a relationship's evidence class and confidence.
fn evidence(confidence: f64) -> String {
    let class = Provenance::of_confidence(confidence).name();
    format!("[{class} {confidence:.2}]")
}

pub(crate) fn explain(st: &State, a: ExplainArgs) -> Result<CallToolResult, ToolError> {
    let mut cx = st.ctx(a.repo.as_deref())?;
    let node = find_node(&mut cx, &a.node)?;
    // A node's own file is in its header line; the other neighbours are listed strongest
    // first: by confidence, then by how many sites the relationship folds.
    let neighbours = cx.run(
        "MATCH (n {id: $id})-[r]-(m) WHERE NOT (type(r) = 'CONTAINS' AND m:File) \
         RETURN startNode(r).id = n.id AS outgoing, type(r) AS relation, m.id AS id, m.name AS name, \
         r.confidence AS confidence, r.count AS count, r.lines AS lines, r.file AS file \
         ORDER BY confidence DESC, count DESC, id LIMIT $limit",
        &[
            ("id", Value::from(node.id.as_str())),
            ("limit", Value::Int(EXPLAIN_NEIGHBOURS)),
        ],
    )?;
    let total = cx.run(
        "MATCH (n {id: $id})-[r]-(m) WHERE NOT (type(r) = 'CONTAINS' AND m:File) RETURN count(*) AS neighbours",
        &[("id", Value::from(node.id.as_str()))],
    )?;
    let total = total.rows.first().map_or(0, |row| i(&row[0]));
    let signature = cx.run(
        "MATCH (n {id: $id}) RETURN n.signature AS signature",
        &[("id", Value::from(node.id.as_str()))],
    )?;
    let signature = signature
        .rows
        .first()
        .map(|row| s(&row[0]))
        .unwrap_or_default();
    let mut md = node.line();
    md.push('\n');
    if !signature.is_empty() {
        let _ = writeln!(md, "signature: {signature}");
    }
    let _ = writeln!(
        md,
        "neighbors: {} of {total} (strongest first)",
        neighbours.rows.len()
    );
    // A name shown twice (two `table` types) gets its id, so each line names one node.
    let repeated = |name: &str| {
        neighbours
            .rows
            .iter()
            .filter(|row| s(&row[3]) == name)
            .count()
            > 1
    };
    let mut listed = Vec::new();
    for row in &neighbours.rows {
        let outgoing = matches!(row[0], Value::Bool(true));
        let sites = UseSites::from_cells(&row[5], &row[6]);
        let confidence = f(&row[4]);
        let arrow = if outgoing { "-->" } else { "<--" };
        let at = match (s(&row[7]).as_str(), sites.lines.first()) {
            ("", _) => String::new(),
            (file, Some(line)) => format!(" @{file}:{line}"),
            (file, None) => format!(" @{file}"),
        };
        let name = s(&row[3]);
        let shown = if repeated(&name) {
            format!("{name} (id={})", s(&row[2]))
        } else {
            name
        };
        let _ = writeln!(
            md,
            "{arrow} {} {shown} {}{}{at}",
            s(&row[1]).to_ascii_lowercase(),
            evidence(confidence),
            sites.times(),
        );
        let mut item = json!({"direction": if outgoing { "out" } else { "in" },
            "relation": s(&row[1]), "id": s(&row[2]), "name": s(&row[3]),
            "confidence": confidence, "evidence": Provenance::of_confidence(confidence).name(),
            "file": s(&row[7])});
        if let Json::Object(object) = &mut item {
            sites.insert_into(object);
        }
        listed.push(item);
    }
    let mut structured = Map::new();
    let mut node_json = node.json();
    node_json["signature"] = signature.into();
    structured.insert("node".into(), node_json);
    structured.insert("neighbors".into(), Json::Array(listed));
    structured.insert("neighbor_count".into(), total.into());
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(ANSWER_TOKENS), None))
}

pub(crate) fn shortest_path(st: &State, a: ShortestPathArgs) -> Result<CallToolResult, ToolError> {
    let mut cx = st.ctx(a.repo.as_deref())?;
    let source = find_node(&mut cx, &a.source)?;
    let target = find_node(&mut cx, &a.target)?;
    let arrow_end = if a.directed { "->" } else { "-" };
    let params = [
        ("source", Value::from(source.id.as_str())),
        ("target", Value::from(target.id.as_str())),
    ];
    let text = match a.detail {
        Detail::All => format!(
            "MATCH p = shortestPath((a {{id: $source}})-[*..{PATH_HOPS}]{arrow_end}(b {{id: $target}})) \
             WITH p LIMIT 1 {}",
            path_return(PATH_HOPS)
        ),
        Detail::High => format!(
            "MATCH p = (a {{id: $source}})-[rs*1..{PATH_HOPS_HIGH}]{arrow_end}(b {{id: $target}}) \
             UNWIND rs AS r WITH p, collect(r.confidence >= {HIGH_CONFIDENCE}) AS strong \
             WHERE NOT false IN strong WITH p ORDER BY length(p) LIMIT 1 {}",
            path_return(PATH_HOPS_HIGH)
        ),
    };
    let steps = PathStep::read_path(&cx.run(&text, &params)?);
    let mut md = String::new();
    let mut edges = Vec::new();
    for (k, step) in steps.iter().enumerate() {
        let Some(next) = steps.get(k + 1) else {
            break;
        };
        // The arrow stays the stored one, whichever way the path crossed it.
        let (from, to) = if step.forward {
            (&step.name, &next.name)
        } else {
            (&next.name, &step.name)
        };
        let at = match step.sites.lines.first() {
            Some(line) if !step.file.is_empty() => format!(" @{}:{line}", step.file),
            _ => String::new(),
        };
        let _ = writeln!(
            md,
            "EDGE {from} --{} {}--> {to}{at}",
            step.relation.to_ascii_lowercase(),
            evidence(step.confidence)
        );
        edges.push(json!({
            "source": if step.forward { &step.id } else { &next.id },
            "target": if step.forward { &next.id } else { &step.id },
            "relation": step.relation, "confidence": step.confidence,
            "evidence": Provenance::of_confidence(step.confidence).name(),
        }));
    }
    let hops = steps.len().saturating_sub(1);
    let limit = if a.detail == Detail::High {
        PATH_HOPS_HIGH
    } else {
        PATH_HOPS
    };
    let mut head = format!("{}\n{}\n", source.line(), target.line());
    if steps.is_empty() {
        let _ = writeln!(head, "No path within {limit} hops.");
    }
    md.insert_str(0, &head);
    if !steps.is_empty() {
        let _ = writeln!(md, "Path: {hops} hops");
    }
    let mut structured = Map::new();
    structured.insert("found".into(), (!steps.is_empty()).into());
    structured.insert("hops".into(), hops.into());
    structured.insert(
        "nodes".into(),
        steps
            .iter()
            .map(|step| json!({"id": step.id, "name": step.name}))
            .collect(),
    );
    structured.insert("edges".into(), Json::Array(edges));
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(ANSWER_TOKENS), None))
}

pub(crate) fn list_communities(
    st: &State,
    a: CommunitiesArgs,
) -> Result<CallToolResult, ToolError> {
    positive("limit", a.limit)?;
    non_negative_offset(a.offset)?;
    let mut cx = st.ctx(a.repo.as_deref())?;
    let result = cx.run(
        "CALL db.communities() YIELD community, label, entities, files, cohesion, modularity \
         RETURN community, label, entities, files, cohesion, modularity",
        &[],
    )?;
    let mut rows = result.rows;
    // Largest first; the modularity of the partition is the sum of the communities' terms.
    rows.sort_by(|x, y| i(&y[2]).cmp(&i(&x[2])).then(i(&x[0]).cmp(&i(&y[0]))));
    let modularity: f64 = rows.iter().map(|row| f(&row[5])).sum();
    let total = rows.len();
    let shown: Vec<&Vec<Value>> = rows
        .iter()
        .skip(a.offset as usize)
        .take(a.limit as usize)
        .collect();
    let mut md = format!(
        "{total} communities, modularity {modularity:.3} (cohesion: the share of its members' relationship ends that stay inside it)\n"
    );
    let mut listed = Vec::new();
    for row in &shown {
        let _ = writeln!(
            md,
            "COMMUNITY {} \"{}\" size={} files={} cohesion={:.2}",
            i(&row[0]),
            s(&row[1]),
            i(&row[2]),
            i(&row[3]),
            f(&row[4])
        );
        listed.push(
            json!({"id": i(&row[0]), "label": s(&row[1]), "size": i(&row[2]),
                           "files": i(&row[3]), "cohesion": f(&row[4])}),
        );
    }
    let next = a.offset as usize + shown.len();
    if next < total {
        let _ = writeln!(md, "({} more: call again with offset={next})", total - next);
    }
    let mut structured = Map::new();
    structured.insert("communities".into(), Json::Array(listed));
    structured.insert("community_count".into(), total.into());
    structured.insert("modularity".into(), modularity.into());
    structured.insert(
        "pagination".into(),
        super::files::page_json(a.offset, a.limit, shown.len(), next < total, next as i64),
    );
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(ANSWER_TOKENS), None))
}

/// At most this many pieces of evidence are printed per part; the JSON keeps them all.
const SHOWN_EVIDENCE: usize = 20;

/// What a part of the health report measured, in words: `(count, total, share)`.
fn health_part_text(part: &str, count: i64, total: i64, share: f64) -> String {
    let percent = share * 100.0;
    match part {
        "unused_functions" => format!(
            "{count} of {total} function definitions ({percent:.1}%) that nothing calls or takes the address of"
        ),
        "include_cycles" => {
            format!("{count} of {total} files ({percent:.1}%) in #include circles")
        }
        "hub_concentration" => format!(
            "the top {count} of {total} entities (1%) hold {percent:.1}% of relationship ends"
        ),
        "staleness" => {
            format!("{count} of {total} files ({percent:.1}%) changed on disk since the last run")
        }
        other => format!("{other}: {count} of {total}"),
    }
}

/// One piece of evidence as text: an id, a circle of files, or a hub with its degree.
fn evidence_text(item: &Value) -> String {
    match item {
        Value::List(files) => files.iter().map(s).collect::<Vec<_>>().join(" → "),
        Value::Map(hub) => format!(
            "{} ({})",
            hub.get("id").map(s).unwrap_or_default(),
            hub.get("degree").map(i).unwrap_or_default()
        ),
        other => s(other),
    }
}

pub(crate) fn health(st: &State, a: RepoArgs) -> Result<CallToolResult, ToolError> {
    let mut cx = st.ctx(a.repo.as_deref())?;
    let result = cx.run(
        "CALL algo.health() YIELD part, count, total, measure, penalty, evidence \
         RETURN part, count, total, measure, penalty, evidence",
        &[],
    )?;
    let penalty: f64 = result.rows.iter().map(|row| f(&row[4])).sum();
    let score = (100.0 - penalty).clamp(0.0, 100.0).round() as i64;
    let mut md = format!("HEALTH {score}/100 (100 minus each part's points, at most 25 each)\n");
    let mut parts = Vec::new();
    for row in &result.rows {
        let part = s(&row[0]);
        let evidence = match &row[5] {
            Value::List(items) => items.as_slice(),
            _ => &[],
        };
        let _ = write!(
            md,
            "{part} -{:.1}: {}",
            f(&row[4]),
            health_part_text(&part, i(&row[1]), i(&row[2]), f(&row[3]))
        );
        if !evidence.is_empty() {
            let shown: Vec<String> = evidence
                .iter()
                .take(SHOWN_EVIDENCE)
                .map(evidence_text)
                .collect();
            let more = evidence.len().saturating_sub(SHOWN_EVIDENCE);
            let tail = if more > 0 {
                format!(", … {more} more")
            } else {
                String::new()
            };
            let _ = write!(md, "\n  {}{tail}", shown.join(", "));
        }
        md.push('\n');
        let g = cx.db.graph();
        parts.push(json!({"part": part, "count": i(&row[1]), "total": i(&row[2]),
            "measure": f(&row[3]), "penalty": f(&row[4]),
            "evidence": evidence.iter().map(|v| batho_engine::query::render::to_json(v, &g)).collect::<Vec<_>>()}));
    }
    let mut structured = Map::new();
    structured.insert("score".into(), score.into());
    structured.insert("parts".into(), Json::Array(parts));
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(ANSWER_TOKENS), None))
}

pub(crate) fn god_nodes(st: &State, a: GodNodesArgs) -> Result<CallToolResult, ToolError> {
    positive("limit", a.limit)?;
    let mut cx = st.ctx(a.repo.as_deref())?;
    let result = cx.run(
        "CALL algo.degree($limit, $include_all) YIELD node, degree, in_degree, out_degree \
         RETURN node.id AS id, node.name AS name, node.qualified_name AS qualified_name, node.kind AS kind, \
         node.file AS file, node.start_line AS line, node.community AS community, \
         degree, in_degree, out_degree",
        &[
            ("limit", Value::Int(a.limit)),
            ("include_all", Value::Bool(a.include_all)),
        ],
    )?;
    let what = if a.include_all {
        "nodes"
    } else {
        "entities (files and external stubs left out)"
    };
    let mut md = format!(
        "The {} most connected {what}; degree counts relationships other than CONTAINS, both directions\n",
        result.rows.len()
    );
    let mut listed = Vec::new();
    for (rank, row) in result.rows.iter().enumerate() {
        let node = FoundNode::from_cells(row);
        let (degree, incoming, outgoing) = (i(&row[7]), i(&row[8]), i(&row[9]));
        let _ = writeln!(
            md,
            "{}. {} degree={degree} (in {incoming}, out {outgoing})",
            rank + 1,
            node.line()
        );
        let mut item = node.json();
        item["degree"] = degree.into();
        item["in_degree"] = incoming.into();
        item["out_degree"] = outgoing.into();
        listed.push(item);
    }
    let mut structured = Map::new();
    structured.insert("nodes".into(), Json::Array(listed));
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(ANSWER_TOKENS), None))
}

/// The seed's relation names as Batho's relationship types: one table for get_neighbors
/// and affected. C has no imports: `#include` is what `imports`, `imports_from`,
/// `depends_on` and `requires` mean here; `uses` is a use of a type or variable.
const SEED_RELATIONS: &[(&str, &[&str])] = &[
    ("calls", &["CALLS"]),
    ("references", &["REFERENCES"]),
    ("imports", &["INCLUDES"]),
    ("imports_from", &["INCLUDES"]),
    ("includes", &["INCLUDES"]),
    ("depends_on", &["INCLUDES"]),
    ("requires", &["INCLUDES"]),
    ("uses", &["REFERENCES", "READS", "WRITES"]),
    ("reads", &["READS"]),
    ("writes", &["WRITES"]),
    ("inherits", &["INHERITS"]),
    ("overrides", &["OVERRIDES"]),
    ("contains", &["CONTAINS"]),
    ("expands", &["EXPANDS"]),
];

/// The relations `affected` follows, as the seed lists them.
const IMPACT_RELATIONS: &[&str] = &[
    "calls",
    "references",
    "imports",
    "imports_from",
    "uses",
    "depends_on",
    "requires",
    "inherits",
];

/// The relationship types of the seed relation `name`, among `allowed`; every type of
/// `allowed` without a name.
fn relation_types(name: Option<&str>, allowed: &[&str]) -> Result<Value, ToolError> {
    let names: Vec<&str> = match name {
        None => allowed.to_vec(),
        Some(name) if allowed.contains(&name) => vec![name],
        Some(name) => {
            return Err(ToolError::client(format!(
                "Invalid relation '{name}'. Valid: {}",
                allowed.join(", ")
            )));
        }
    };
    let mut types: Vec<&str> = Vec::new();
    for name in names {
        let mapped = SEED_RELATIONS
            .iter()
            .find(|(seed, _)| *seed == name)
            .map_or(&[][..], |(_, types)| *types);
        for relation_type in mapped {
            if !types.contains(relation_type) {
                types.push(relation_type);
            }
        }
    }
    Ok(Value::List(types.into_iter().map(Value::from).collect()))
}

/// `affected` always follows `EXPANDS` too: `algo.affected` passes through a macro at no
/// cost, so code that invokes a macro depends on whatever the macro calls or uses (clang
/// sees those calls; on Lua, 0.77 of the callers within depth 3 without this, 1.0 with it).
fn with_macro_expansions(relations: Value) -> Value {
    match relations {
        Value::List(mut types) => {
            types.push(Value::from("EXPANDS"));
            Value::List(types)
        }
        other => other,
    }
}

/// The strongest neighbours `get_neighbors` lists.
const NEIGHBOURS_LISTED: i64 = 20;

pub(crate) fn get_neighbors(st: &State, a: NeighborsArgs) -> Result<CallToolResult, ToolError> {
    let all: Vec<&str> = SEED_RELATIONS.iter().map(|(name, _)| *name).collect();
    let relations = relation_types(a.relation.as_deref(), &all)?;
    let mut cx = st.ctx(a.repo.as_deref())?;
    let node = find_node(&mut cx, &a.node)?;
    let result = cx.run(
        "CALL algo.neighbors($id, 'both', $relations, $limit) YIELD node, relationship, direction \
         RETURN node.id AS id, node.name AS name, type(relationship) AS relation, \
         relationship.confidence AS confidence, relationship.count AS count, relationship.lines AS lines, \
         relationship.file AS file, direction",
        &[
            ("id", Value::from(node.id.as_str())),
            ("relations", relations),
            ("limit", Value::Int(NEIGHBOURS_LISTED)),
        ],
    )?;
    let mut md = format!("{}\n", node.line());
    let mut listed = Vec::new();
    for row in &result.rows {
        let outgoing = s(&row[7]) == "out";
        let confidence = f(&row[3]);
        let sites = UseSites::from_cells(&row[4], &row[5]);
        let at = match (s(&row[6]).as_str(), sites.lines.first()) {
            ("", _) => String::new(),
            (file, Some(line)) => format!(" @{file}:{line}"),
            (file, None) => format!(" @{file}"),
        };
        let _ = writeln!(
            md,
            "{} {} {} [id={}] {}{}{at}",
            if outgoing { "->" } else { "<-" },
            s(&row[2]).to_ascii_lowercase(),
            s(&row[1]),
            s(&row[0]),
            evidence(confidence),
            sites.times()
        );
        let mut item = json!({"direction": if outgoing { "out" } else { "in" },
            "relation": s(&row[2]), "id": s(&row[0]), "name": s(&row[1]),
            "confidence": confidence, "evidence": Provenance::of_confidence(confidence).name()});
        if let Json::Object(object) = &mut item {
            sites.insert_into(object);
        }
        listed.push(item);
    }
    if result.rows.is_empty() {
        md.push_str("No neighbors");
        if let Some(relation) = &a.relation {
            let _ = write!(md, " by {relation}");
        }
        md.push('\n');
    }
    let mut structured = Map::new();
    structured.insert("node".into(), node.json());
    structured.insert("neighbors".into(), Json::Array(listed));
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(ANSWER_TOKENS), None))
}

/// The deepest `affected` walk.
const AFFECTED_MAX_DEPTH: i64 = 10;

/// What the INFERRED class means, printed once when a hop has it.
const INFERRED_LEGEND: &str = "INFERRED: no single definition bound the name (several candidates, or only an external stub): weaker evidence when deciding what a change touches";

/// The entities a change starts from: the node named, every entity of `changed_files`,
/// and the innermost entities holding the changed lines of `diff` (the lines of the old
/// version when the file changed on disk since the index, which then holds the old one;
/// of the new version otherwise).
fn changed_entities(cx: &mut Ctx, a: &AffectedArgs) -> Result<Vec<FoundNode>, ToolError> {
    let mut seeds = Vec::new();
    if let Some(label) = &a.node {
        seeds.push(find_node(cx, label)?);
    }
    for file in a.changed_files.iter().flatten() {
        let result = cx.run(
            &format!(
                "MATCH (n {{file: $file}}) WHERE NOT n:File RETURN {NODE_COLUMNS} ORDER BY line, id"
            ),
            &[("file", Value::from(file.as_str()))],
        )?;
        seeds.extend(result.rows.iter().map(|row| FoundNode::from_cells(row)));
    }
    for file in batho_engine::changed_lines::parse_unified_diff(a.diff.as_deref().unwrap_or("")) {
        let index_is_old = !cx.check_fresh([file.path.as_str()])?.is_empty();
        let lines = if index_is_old {
            &file.old_lines
        } else {
            &file.new_lines
        };
        let ranges: Vec<Value> = lines
            .iter()
            .map(|r| {
                Value::List(vec![
                    Value::Int(i64::from(*r.start())),
                    Value::Int(i64::from(*r.end())),
                ])
            })
            .collect();
        if ranges.is_empty() {
            continue;
        }
        let result = cx.run(
            &format!(
                "UNWIND $ranges AS lines MATCH (n {{file: $file}}) \
                 WHERE NOT n:File AND n.start_line <= lines[1] AND n.end_line >= lines[0] \
                 WITH DISTINCT n RETURN {NODE_COLUMNS}, n.end_line AS end_line ORDER BY line, id"
            ),
            &[
                ("file", Value::from(file.path.as_str())),
                ("ranges", Value::List(ranges)),
            ],
        )?;
        // The innermost entities: a method, not also the class around it.
        let spans: Vec<(i64, i64)> = result
            .rows
            .iter()
            .map(|row| (i(&row[5]), i(&row[7])))
            .collect();
        for (k, row) in result.rows.iter().enumerate() {
            let (start, end) = spans[k];
            let holds_another = spans.iter().enumerate().any(|(other, &(s2, e2))| {
                other != k && start <= s2 && e2 <= end && (start, end) != (s2, e2)
            });
            if !holds_another {
                seeds.push(FoundNode::from_cells(row));
            }
        }
    }
    seeds.dedup_by(|x, y| x.id == y.id);
    Ok(seeds)
}

pub(crate) fn affected(st: &State, a: AffectedArgs) -> Result<CallToolResult, ToolError> {
    if !(0..=AFFECTED_MAX_DEPTH).contains(&a.depth) {
        return Err(ToolError::client(format!(
            "depth must be between 0 and {AFFECTED_MAX_DEPTH}, got {}",
            a.depth
        )));
    }
    if a.node.is_none() && a.changed_files.is_none() && a.diff.is_none() {
        return Err(ToolError::client("affected needs a node, changed_files or a diff")
            .hint("node names one entity; changed_files lists repo-relative paths; diff takes `git diff` output"));
    }
    let relations = with_macro_expansions(relation_types(a.relation.as_deref(), IMPACT_RELATIONS)?);
    let mut cx = st.ctx(a.repo.as_deref())?;
    let seeds = changed_entities(&mut cx, &a)?;
    let seed_ids: Vec<Value> = seeds.iter().map(|n| Value::from(n.id.as_str())).collect();
    let result = cx.run(
        "UNWIND $seeds AS seed CALL algo.affected(seed, $depth, $relations) YIELD node, depth, via, relationship \
         WITH node, depth, via, relationship ORDER BY depth \
         RETURN node.id AS id, node.name AS name, node.file AS file, node.start_line AS line, depth, \
         via.id AS via_id, via.name AS via_name, type(relationship) AS relation, \
         relationship.confidence AS confidence, relationship.file AS at_file, relationship.line AS at_line",
        &[
            ("seeds", Value::List(seed_ids)),
            ("depth", Value::Int(a.depth)),
            ("relations", relations),
        ],
    )?;
    let seed_set: std::collections::HashSet<&str> = seeds.iter().map(|n| n.id.as_str()).collect();
    let mut seen = std::collections::HashSet::new();
    let mut md = String::from("CHANGED\n");
    for seed in &seeds {
        let _ = writeln!(md, "{}", seed.line());
    }
    md.push_str("AFFECTED\n");
    let mut listed = Vec::new();
    let mut inferred = false;
    for row in &result.rows {
        let id = s(&row[0]);
        // Each node once, at its shortest depth from any changed entity.
        if seed_set.contains(id.as_str()) || !seen.insert(id.clone()) {
            continue;
        }
        let confidence = f(&row[8]);
        let class = Provenance::of_confidence(confidence);
        inferred |= class == Provenance::Inferred;
        let at = if s(&row[9]).is_empty() {
            String::new()
        } else {
            format!(" @{}:{}", s(&row[9]), i(&row[10]))
        };
        let _ = writeln!(
            md,
            "depth {}: {} [id={id}] --{} [{}]--> {}{at}",
            i(&row[4]),
            s(&row[1]),
            s(&row[7]).to_ascii_lowercase(),
            class.name(),
            s(&row[6])
        );
        listed.push(
            json!({"id": id, "name": s(&row[1]), "file": s(&row[2]), "line": i(&row[3]),
            "depth": i(&row[4]), "via": s(&row[5]), "relation": s(&row[7]),
            "confidence": confidence, "evidence": class.name()}),
        );
    }
    let _ = writeln!(
        md,
        "{} affected by {} changed (depth {})",
        listed.len(),
        seeds.len(),
        a.depth
    );
    if inferred {
        let _ = writeln!(md, "{INFERRED_LEGEND}");
    }
    let mut structured = Map::new();
    structured.insert(
        "changed".into(),
        seeds.iter().map(FoundNode::json).collect(),
    );
    structured.insert("affected".into(), Json::Array(listed));
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(ANSWER_TOKENS), None))
}

pub(crate) fn graph_stats(st: &State, a: RepoArgs) -> Result<CallToolResult, ToolError> {
    let mut cx = st.ctx(a.repo.as_deref())?;
    let result = cx.run(
        "CALL db.stats() YIELD nodes, edges, files, entities, communities, modularity \
         RETURN nodes, edges, files, entities, communities, modularity",
        &[],
    )?;
    let row = result.rows.first().cloned().unwrap_or_default();
    let cell = |k: usize| row.get(k).map_or(0, i);
    let (nodes, edges, files, entities, communities) =
        (cell(0), cell(1), cell(2), cell(3), cell(4));
    let modularity = row.get(5).map_or(0.0, f);
    let mut md = format!(
        "nodes={nodes} edges={edges} communities={communities} files={files} entities={entities} modularity={modularity:.3}\n"
    );
    if nodes == 0 {
        md.push_str("The graph has not been built yet: run `batho build <path>` first.\n");
    }
    let mut structured = Map::new();
    for (key, value) in [
        ("nodes", nodes),
        ("edges", edges),
        ("communities", communities),
        ("files", files),
        ("entities", entities),
    ] {
        structured.insert(key.into(), value.into());
    }
    structured.insert("modularity".into(), modularity.into());
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(ANSWER_TOKENS), None))
}

/// A node nobody points at scores this PageRank (0.15 in the stored 1/1024 steps): a
/// file's rank counts only what its entities score above it, so a generated header of ten
/// thousand unused register macros does not outrank the scheduler.
const PAGERANK_FLOOR: f64 = 0.150390625;

/// `repo_map` lists at most this many symbols under each file.
const MAP_SYMBOLS_PER_FILE: usize = 6;

/// Characters of map per budget unit (the seed's approximation; no tokenizer pass).
const MAP_CHARS_PER_UNIT: i64 = 3;

/// The longest signature line a map shows.
const MAP_SIGNATURE_CHARS: usize = 120;

/// A signature on one line, a body written into it (`typedef struct T { ... } T;`) folded
/// to `{…}`, and at most [`MAP_SIGNATURE_CHARS`] characters.
fn signature_head(signature: &str) -> String {
    let folded = match signature.find('{') {
        None => signature.to_string(),
        Some(open) => {
            // The brace that closes the first one; a stored signature may be cut before it.
            let mut depth = 0usize;
            let close = signature[open..].char_indices().find_map(|(at, c)| {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(open + at)
            });
            let tail = close.map_or("", |close| &signature[close + 1..]);
            format!("{}{{…}}{tail}", &signature[..open])
        }
    };
    let one_line = folded.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(MAP_SIGNATURE_CHARS) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line,
    }
}

pub(crate) fn repo_map(st: &State, a: RepoMapArgs) -> Result<CallToolResult, ToolError> {
    positive("budget", a.budget)?;
    let chars = a.budget.saturating_mul(MAP_CHARS_PER_UNIT) as usize;
    // Enough files to fill the budget with a few symbols each.
    let file_limit = (a.budget / 100).clamp(10, 500);
    let mut cx = st.ctx(a.repo.as_deref())?;
    let files = cx.run(
        "MATCH (n) WHERE NOT n:File AND NOT n:External AND n.file <> '' AND n.pagerank > $floor \
         WITH n.file AS file, sum(n.pagerank - $floor) AS rank ORDER BY rank DESC, file LIMIT $limit \
         RETURN file, rank",
        &[
            ("floor", Value::Float(PAGERANK_FLOOR)),
            ("limit", Value::Int(file_limit)),
        ],
    )?;
    let paths: Vec<Value> = files.rows.iter().map(|row| row[0].clone()).collect();
    let definitions_only = a.detail == Detail::High;
    let symbols = cx.run(
        "UNWIND $files AS path MATCH (n {file: path}) WHERE NOT n:File \
         OPTIONAL MATCH (container)-[c:CONTAINS]->(n) \
         WITH n, path, collect(has_role(c, 'Definition')) AS roles \
         WHERE NOT $definitions_only OR true IN roles \
         RETURN path, n.name AS name, n.kind AS kind, n.signature AS signature, n.start_line AS line, \
         n.pagerank AS score ORDER BY score DESC, line",
        &[
            ("files", Value::List(paths)),
            ("definitions_only", Value::Bool(definitions_only)),
        ],
    )?;
    let mut by_file: std::collections::HashMap<String, Vec<&Vec<Value>>> =
        std::collections::HashMap::new();
    for row in &symbols.rows {
        let listed = by_file.entry(s(&row[0])).or_default();
        if listed.len() < MAP_SYMBOLS_PER_FILE {
            listed.push(row);
        }
    }
    let mut md = String::new();
    let mut listed_files = Vec::new();
    let mut cut = false;
    for row in &files.rows {
        let path = s(&row[0]);
        let mut entry = format!("{path}:\n");
        let mut listed_symbols = Vec::new();
        for symbol in by_file.get(&path).into_iter().flatten() {
            let signature = signature_head(&s(&symbol[3]));
            let shown = if signature.is_empty() {
                format!("{} {}", s(&symbol[2]).to_ascii_lowercase(), s(&symbol[1]))
            } else {
                signature
            };
            let _ = writeln!(entry, "  {}: {shown}", i(&symbol[4]));
            listed_symbols.push(json!({"name": s(&symbol[1]), "kind": s(&symbol[2]),
                "line": i(&symbol[4]), "signature": s(&symbol[3]), "pagerank": f(&symbol[5])}));
        }
        if md.len() + entry.len() > chars {
            cut = true;
            break;
        }
        md.push_str(&entry);
        listed_files.push(json!({"file": path, "rank": f(&row[1]), "symbols": listed_symbols}));
    }
    let _ = writeln!(
        md,
        "Map: {} files by PageRank{}",
        listed_files.len(),
        if cut { " (cut at the budget)" } else { "" }
    );
    let mut structured = Map::new();
    structured.insert("files".into(), Json::Array(listed_files));
    structured.insert("truncated".into(), cut.into());
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(ANSWER_TOKENS), None))
}
