//! The Astria tools on the code graph (`../shared/seeds/astria-mcp-tools.txt`): explain,
//! shortest_path, list_communities, god_nodes and health. Each compiles to BQL (`meta.query`). A node is named
//! as an agent names it (an id, a qualified name or a plain name) and found by
//! [`find_node`]; every relationship shows its evidence class
//! ([`batho_schema::Provenance`]) and the arrow it is stored with.

use std::collections::HashSet;
use std::fmt::Write as _;

use batho_engine::query::{ArtifactGraph, Value, render};
use batho_schema::Provenance;
use serde::{Serialize, Serializer};
use serde_json::Value as Json;

use super::args::{
    AffectedArgs, CommunitiesArgs, Detail, ExplainArgs, GodNodesArgs, NeighborsArgs, RepoArgs,
    RepoMapArgs, ShortestPathArgs,
};
use super::cells::{
    FromRecord, Record, column_texts, decode_first, decode_rows, first_int, int_of, text_of,
};
use super::files::{PathStep, non_negative_offset, path_return};
use super::records::CommunityRow;
use super::{Pagination, Reply, Rows, ToolOutput, UseSites, positive};
use crate::error::ToolError;
use crate::state::{Ctx, State};

/// Astria answers are short: they are cut at the Batho tools' default budget.
const ANSWER_TOKENS: i64 = 25_000;

/// At most this many candidates are listed for an ambiguous node.
const SHOWN_CANDIDATES: usize = 10;

/// The neighbours `explain` lists.
const EXPLAIN_NEIGHBOURS: i64 = 20;

/// Hops `shortest_path` searches, over every relationship or (detail high) only the
/// strong ones: a condition on every hop is tested during the search
/// (`docs/planner.md`), so both cost one bidirectional BFS.
const PATH_HOPS: i64 = 10;

const NODE_COLUMNS: &str = "n.id AS id, n.name AS name, n.qualified_name AS qualified_name, \
n.kind AS kind, n.file AS file, n.start_line AS line, n.community AS community";

/// A node as the Astria tools show it: [`NODE_COLUMNS`] (or the same names).
#[derive(Serialize)]
pub(crate) struct FoundNode {
    id: String,
    name: String,
    kind: String,
    file: String,
    line: i64,
    community: i64,
}

impl FromRecord for FoundNode {
    fn from_record(record: &Record) -> Result<FoundNode, ToolError> {
        Ok(FoundNode {
            id: record.text("id")?,
            name: record.text("name")?,
            kind: record.text("kind")?,
            file: record.text("file")?,
            line: record.int("line")?,
            community: record.int("community")?,
        })
    }
}

impl FoundNode {
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
}

/// A node found by name: [`NODE_COLUMNS`], and whether a container defines it.
struct NamedNode {
    node: FoundNode,
    qualified_name: String,
    defined: bool,
}

impl FromRecord for NamedNode {
    fn from_record(record: &Record) -> Result<NamedNode, ToolError> {
        Ok(NamedNode {
            node: FoundNode::from_record(record)?,
            qualified_name: record.text("qualified_name")?,
            defined: record.is_true("defined")?,
        })
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
    if let Some(node) = decode_first(&by_id)? {
        return Ok(node);
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
    let mut candidates: Vec<NamedNode> = decode_rows::<NamedNode>(&by_name)?
        .into_iter()
        .filter(|named| named.node.name == label || named.qualified_name == label)
        .collect();
    if candidates.iter().any(|named| named.node.kind != "External") {
        candidates.retain(|named| named.node.kind != "External");
    }
    if candidates.len() > 1 && candidates.iter().filter(|named| named.defined).count() == 1 {
        candidates.retain(|named| named.defined);
    }
    match candidates.len() {
        0 => Err(ToolError::client(format!("node not found: {label}")).hint(
            "name a node by its id, qualified name or name; search_entities finds names by a part",
        )),
        1 => Ok(candidates.remove(0).node),
        n => Err(ambiguous_node(label, &candidates, n)),
    }
}

/// The error for a name that several nodes carry, listing the candidates.
fn ambiguous_node(label: &str, candidates: &[NamedNode], n: usize) -> ToolError {
    let listed: Vec<String> = candidates
        .iter()
        .take(SHOWN_CANDIDATES)
        .map(|named| format!("{} ({})", named.node.id, named.node.place()))
        .collect();
    let more = n.saturating_sub(SHOWN_CANDIDATES);
    let tail = if more > 0 {
        format!(", and {more} more")
    } else {
        String::new()
    };
    ToolError::client(format!(
        "ambiguous node '{label}': {n} candidates: {}{tail}",
        listed.join(", ")
    ))
    .hint("pass one of the ids")
}

/// A relationship's confidence and its evidence class ([`Provenance`]), serialized as the
/// fields `confidence` and `evidence`.
#[derive(Clone, Copy, Serialize)]
pub(crate) struct Evidence {
    confidence: f64,
    #[serde(serialize_with = "class_name")]
    evidence: Provenance,
}

fn class_name<S: Serializer>(class: &Provenance, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(class.name())
}

impl Evidence {
    fn of(confidence: f64) -> Evidence {
        Evidence {
            confidence,
            evidence: Provenance::of_confidence(confidence),
        }
    }

    /// The confidence in the column `confidence` of a row.
    pub(crate) fn read(record: &Record) -> Result<Evidence, ToolError> {
        record.float("confidence").map(Evidence::of)
    }

    /// The evidence class.
    pub(crate) fn class(&self) -> Provenance {
        self.evidence
    }

    /// `[RESOLVED 0.95]`: the class and the confidence.
    fn tag(&self) -> String {
        format!("[{} {:.2}]", self.evidence.name(), self.confidence)
    }
}

/// `out` or `in`.
fn out_or_in<S: Serializer>(outgoing: &bool, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(if *outgoing { "out" } else { "in" })
}

/// A neighbour of a node: explain's `startNode(r).id = n.id AS outgoing, type(r) AS
/// relation, m.id AS id, m.name AS name, r.confidence AS confidence, r.count AS count,
/// r.lines AS lines, r.file AS file`, or the same yielded by algo.neighbors with its
/// `direction` (`out`, `in`) instead of `outgoing`.
#[derive(Serialize)]
struct NeighbourRow {
    #[serde(rename = "direction", serialize_with = "out_or_in")]
    outgoing: bool,
    relation: String,
    id: String,
    name: String,
    #[serde(flatten)]
    evidence: Evidence,
    /// The file of the first site, as the JSON shows it: explain's does, get_neighbors'
    /// does not (`None`).
    #[serde(rename = "file", skip_serializing_if = "Option::is_none")]
    listed_file: Option<String>,
    #[serde(flatten)]
    sites: UseSites,
    /// The file of the first site.
    #[serde(skip)]
    file: String,
}

impl FromRecord for NeighbourRow {
    fn from_record(record: &Record) -> Result<NeighbourRow, ToolError> {
        Ok(NeighbourRow {
            outgoing: if record.has("outgoing") {
                record.is_true("outgoing")?
            } else {
                record.text("direction")? == "out"
            },
            relation: record.text("relation")?,
            id: record.text("id")?,
            name: record.text("name")?,
            evidence: Evidence::read(record)?,
            listed_file: Some(record.text("file")?),
            sites: UseSites::read(record, "count", "lines")?,
            file: record.text("file")?,
        })
    }
}

impl NeighbourRow {
    /// ` @file:line` (or ` @file`) where the first site is, or nothing.
    fn site_text(&self) -> String {
        match (self.file.as_str(), self.sites.lines.first()) {
            ("", _) => String::new(),
            (file, Some(line)) => format!(" @{file}:{line}"),
            (file, None) => format!(" @{file}"),
        }
    }
}

/// The node explain describes, with its signature and the comment above it.
#[derive(Serialize)]
struct ExplainedNode {
    #[serde(flatten)]
    node: FoundNode,
    signature: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    doc: String,
}

/// explain's answer.
#[derive(Serialize)]
struct ExplainOutput {
    node: ExplainedNode,
    neighbors: Vec<NeighbourRow>,
    neighbor_count: i64,
}

impl ToolOutput for ExplainOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut md = self.node.node.line();
        md.push('\n');
        if !self.node.signature.is_empty() {
            let _ = writeln!(md, "signature: {}", self.node.signature);
        }
        if !self.node.doc.is_empty() {
            let _ = writeln!(md, "doc: {}", self.node.doc);
        }
        let _ = writeln!(
            md,
            "neighbors: {} of {} (strongest first)",
            self.neighbors.len(),
            self.neighbor_count
        );
        // A name shown twice (two `table` types) gets its id, so each line names one node.
        let repeated = |name: &str| {
            self.neighbors
                .iter()
                .filter(|neighbour| neighbour.name == name)
                .count()
                > 1
        };
        for neighbour in &self.neighbors {
            let arrow = if neighbour.outgoing { "-->" } else { "<--" };
            let shown = if repeated(&neighbour.name) {
                format!("{} (id={})", neighbour.name, neighbour.id)
            } else {
                neighbour.name.clone()
            };
            let _ = writeln!(
                md,
                "{arrow} {} {shown} {}{}{}",
                neighbour.relation.to_ascii_lowercase(),
                neighbour.evidence.tag(),
                neighbour.sites.times(),
                neighbour.site_text(),
            );
        }
        md
    }
}

pub(crate) fn explain(st: &State, a: ExplainArgs) -> Result<Reply, ToolError> {
    let mut cx = st.ctx(a.repo.name())?;
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
    let texts = cx.run(
        "MATCH (n {id: $id}) RETURN n.signature AS signature, coalesce(n.doc, '') AS doc",
        &[("id", Value::from(node.id.as_str()))],
    )?;
    let first_text = |column: &str| -> Result<String, ToolError> {
        Ok(column_texts(&texts, column)?
            .into_iter()
            .next()
            .unwrap_or_default())
    };
    let output = ExplainOutput {
        neighbors: decode_rows(&neighbours)?,
        neighbor_count: first_int(&total, "neighbours")?,
        node: ExplainedNode {
            signature: first_text("signature")?,
            doc: first_text("doc")?,
            node,
        },
    };
    Reply::new(&output, cx.meta(), ANSWER_TOKENS)
}

/// A node on a shortest path.
#[derive(Serialize)]
struct PathNode {
    id: String,
    name: String,
}

/// A hop of a shortest path, with the arrow it is stored with.
#[derive(Serialize)]
struct PathEdge {
    source: String,
    target: String,
    relation: String,
    #[serde(flatten)]
    evidence: Evidence,
    /// The names at the stored ends, and where the first site is (` @file:line`).
    #[serde(skip)]
    source_name: String,
    #[serde(skip)]
    target_name: String,
    #[serde(skip)]
    at: String,
}

/// shortest_path's answer.
#[derive(Serialize)]
struct ShortestPathOutput {
    found: bool,
    hops: usize,
    nodes: Vec<PathNode>,
    edges: Vec<PathEdge>,
    #[serde(skip)]
    ends: [FoundNode; 2],
    /// The most hops searched.
    #[serde(skip)]
    hop_limit: i64,
}

impl ToolOutput for ShortestPathOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut md = format!("{}\n{}\n", self.ends[0].line(), self.ends[1].line());
        if !self.found {
            let _ = writeln!(md, "No path within {} hops.", self.hop_limit);
        }
        for edge in &self.edges {
            let _ = writeln!(
                md,
                "EDGE {} --{} {}--> {}{}",
                edge.source_name,
                edge.relation.to_ascii_lowercase(),
                edge.evidence.tag(),
                edge.target_name,
                edge.at
            );
        }
        if self.found {
            let _ = writeln!(md, "Path: {} hops", self.hops);
        }
        md
    }
}

/// The hops between consecutive steps, each with the arrow it is stored with (whichever
/// way the path crossed it).
fn path_edges(steps: &[PathStep]) -> Vec<PathEdge> {
    steps
        .windows(2)
        .map(|pair| {
            let (step, next) = (&pair[0], &pair[1]);
            let (from, to) = if step.forward {
                (step, next)
            } else {
                (next, step)
            };
            PathEdge {
                source: from.id.clone(),
                target: to.id.clone(),
                relation: step.relation.clone(),
                evidence: Evidence::of(step.confidence),
                source_name: from.name.clone(),
                target_name: to.name.clone(),
                at: match step.sites.lines.first() {
                    Some(line) if !step.file.is_empty() => format!(" @{}:{line}", step.file),
                    _ => String::new(),
                },
            }
        })
        .collect()
}

pub(crate) fn shortest_path(st: &State, a: ShortestPathArgs) -> Result<Reply, ToolError> {
    let mut cx = st.ctx(a.repo.name())?;
    let source = find_node(&mut cx, &a.source)?;
    let target = find_node(&mut cx, &a.target)?;
    let arrow_end = if a.directed { "->" } else { "-" };
    let params = [
        ("source", Value::from(source.id.as_str())),
        ("target", Value::from(target.id.as_str())),
    ];
    let hop_condition = match a.detail {
        Detail::All => String::new(),
        // The two strongest evidence classes: EXTRACTED and RESOLVED.
        Detail::High => format!(
            "WHERE all(r IN rs WHERE r.confidence >= {}) ",
            Provenance::Resolved.lowest_confidence()
        ),
    };
    let text = format!(
        "MATCH p = shortestPath((a {{id: $source}})-[rs*..{PATH_HOPS}]{arrow_end}(b {{id: $target}})) \
         {hop_condition}WITH p LIMIT 1 {}",
        path_return(PATH_HOPS)
    );
    let steps = PathStep::read_path(&cx.run(&text, &params)?)?;
    let output = ShortestPathOutput {
        found: !steps.is_empty(),
        hops: steps.len().saturating_sub(1),
        edges: path_edges(&steps),
        nodes: steps
            .into_iter()
            .map(|step| PathNode {
                id: step.id,
                name: step.name,
            })
            .collect(),
        ends: [source, target],
        hop_limit: PATH_HOPS,
    };
    Reply::new(&output, cx.meta(), ANSWER_TOKENS)
}

/// A community with its term of the partition's modularity: the columns of
/// `db.communities` that list_communities reads.
struct RankedCommunity {
    community: CommunityRow,
    modularity: f64,
}

impl FromRecord for RankedCommunity {
    fn from_record(record: &Record) -> Result<RankedCommunity, ToolError> {
        Ok(RankedCommunity {
            community: CommunityRow::from_record(record)?,
            modularity: record.float("modularity")?,
        })
    }
}

/// A community as list_communities shows it.
#[derive(Serialize)]
struct ListedCommunity {
    id: i64,
    label: String,
    size: i64,
    files: i64,
    cohesion: f64,
}

impl From<CommunityRow> for ListedCommunity {
    fn from(row: CommunityRow) -> ListedCommunity {
        ListedCommunity {
            id: row.id,
            label: row.label,
            size: row.entities,
            files: row.files,
            cohesion: row.cohesion,
        }
    }
}

/// list_communities' answer.
#[derive(Serialize)]
struct CommunitiesOutput {
    communities: Vec<ListedCommunity>,
    community_count: usize,
    modularity: f64,
    pagination: Pagination,
}

impl ToolOutput for CommunitiesOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut md = format!(
            "{} communities, modularity {:.3} (cohesion: the share of its members' relationship ends that stay inside it)\n",
            self.community_count, self.modularity
        );
        for community in &self.communities {
            let _ = writeln!(
                md,
                "COMMUNITY {} \"{}\" size={} files={} cohesion={:.2}",
                community.id, community.label, community.size, community.files, community.cohesion
            );
        }
        if let Some(next) = self.pagination.next_offset {
            let _ = writeln!(
                md,
                "({} more: call again with offset={next})",
                self.community_count as i64 - next
            );
        }
        md
    }
}

pub(crate) fn list_communities(st: &State, a: CommunitiesArgs) -> Result<Reply, ToolError> {
    positive("limit", a.page.limit)?;
    non_negative_offset(a.page.offset)?;
    let mut cx = st.ctx(a.repo.name())?;
    let result = cx.run(
        "CALL db.communities() YIELD community, label, entities, files, cohesion, modularity \
         RETURN community, label, entities, files, cohesion, modularity",
        &[],
    )?;
    let mut ranked: Vec<RankedCommunity> = decode_rows(&result)?;
    // Largest first; the modularity of the partition is the sum of the communities' terms.
    ranked.sort_by(|x, y| {
        (y.community.entities.cmp(&x.community.entities)).then(x.community.id.cmp(&y.community.id))
    });
    let modularity: f64 = ranked.iter().map(|row| row.modularity).sum();
    let total = ranked.len();
    let communities: Vec<ListedCommunity> = ranked
        .into_iter()
        .skip(a.page.offset as usize)
        .take(a.page.limit as usize)
        .map(|row| ListedCommunity::from(row.community))
        .collect();
    let next = a.page.offset as usize + communities.len();
    let output = CommunitiesOutput {
        pagination: Pagination::new(a.page.offset, a.page.limit, communities.len(), next < total),
        communities,
        community_count: total,
        modularity,
    };
    Reply::new(&output, cx.meta(), ANSWER_TOKENS)
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
        Value::List(files) => files.iter().map(text_of).collect::<Vec<_>>().join(" → "),
        Value::Map(hub) => format!(
            "{} ({})",
            hub.get("id").map(text_of).unwrap_or_default(),
            hub.get("degree").map(int_of).unwrap_or_default()
        ),
        other => text_of(other),
    }
}

/// One part of the health score: `part, count, total, measure, penalty, evidence`.
#[derive(Serialize)]
struct HealthPart {
    part: String,
    count: i64,
    total: i64,
    measure: f64,
    penalty: f64,
    evidence: Vec<Json>,
    /// The evidence as the markdown prints it.
    #[serde(skip)]
    evidence_texts: Vec<String>,
}

impl HealthPart {
    fn read(record: &Record, graph: &ArtifactGraph) -> Result<HealthPart, ToolError> {
        let evidence = match record.value("evidence")? {
            Value::List(items) => items.as_slice(),
            _ => &[],
        };
        Ok(HealthPart {
            part: record.text("part")?,
            count: record.int("count")?,
            total: record.int("total")?,
            measure: record.float("measure")?,
            penalty: record.float("penalty")?,
            evidence: evidence
                .iter()
                .map(|item| render::to_json(item, graph))
                .collect(),
            evidence_texts: evidence.iter().map(evidence_text).collect(),
        })
    }

    fn markdown(&self, md: &mut String) {
        let _ = write!(
            md,
            "{} -{:.1}: {}",
            self.part,
            self.penalty,
            health_part_text(&self.part, self.count, self.total, self.measure)
        );
        if !self.evidence_texts.is_empty() {
            let shown = &self.evidence_texts[..self.evidence_texts.len().min(SHOWN_EVIDENCE)];
            let more = self.evidence_texts.len().saturating_sub(SHOWN_EVIDENCE);
            let tail = if more > 0 {
                format!(", … {more} more")
            } else {
                String::new()
            };
            let _ = write!(md, "\n  {}{tail}", shown.join(", "));
        }
        md.push('\n');
    }
}

/// health's answer.
#[derive(Serialize)]
struct HealthOutput {
    score: i64,
    parts: Vec<HealthPart>,
}

impl ToolOutput for HealthOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut md = format!(
            "HEALTH {}/100 (100 minus each part's points, at most 25 each)\n",
            self.score
        );
        for part in &self.parts {
            part.markdown(&mut md);
        }
        md
    }
}

pub(crate) fn health(st: &State, a: RepoArgs) -> Result<Reply, ToolError> {
    let mut cx = st.ctx(a.repo.name())?;
    let result = cx.run(
        "CALL algo.health() YIELD part, count, total, measure, penalty, evidence \
         RETURN part, count, total, measure, penalty, evidence",
        &[],
    )?;
    let graph = cx.db.graph();
    let parts = result
        .rows
        .iter()
        .map(|cells| HealthPart::read(&Record::new(&result.columns, cells), &graph))
        .collect::<Result<Vec<_>, _>>()?;
    let penalty: f64 = parts.iter().map(|part| part.penalty).sum();
    let output = HealthOutput {
        score: (100.0 - penalty).clamp(0.0, 100.0).round() as i64,
        parts,
    };
    Reply::new(&output, cx.meta(), ANSWER_TOKENS)
}

/// A node algo.degree ranks, with its degrees.
#[derive(Serialize)]
struct RankedNode {
    #[serde(flatten)]
    node: FoundNode,
    degree: i64,
    in_degree: i64,
    out_degree: i64,
}

impl FromRecord for RankedNode {
    fn from_record(record: &Record) -> Result<RankedNode, ToolError> {
        Ok(RankedNode {
            node: FoundNode::from_record(record)?,
            degree: record.int("degree")?,
            in_degree: record.int("in_degree")?,
            out_degree: record.int("out_degree")?,
        })
    }
}

/// god_nodes' answer.
#[derive(Serialize)]
struct GodNodesOutput {
    nodes: Vec<RankedNode>,
    #[serde(skip)]
    include_all: bool,
}

impl ToolOutput for GodNodesOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let what = if self.include_all {
            "nodes"
        } else {
            "entities (files and external stubs left out)"
        };
        let mut md = format!(
            "The {} most connected {what}; degree counts relationships other than CONTAINS, both directions\n",
            self.nodes.len()
        );
        for (rank, ranked) in self.nodes.iter().enumerate() {
            let _ = writeln!(
                md,
                "{}. {} degree={} (in {}, out {})",
                rank + 1,
                ranked.node.line(),
                ranked.degree,
                ranked.in_degree,
                ranked.out_degree
            );
        }
        md
    }
}

pub(crate) fn god_nodes(st: &State, a: GodNodesArgs) -> Result<Reply, ToolError> {
    positive("limit", a.limit)?;
    let mut cx = st.ctx(a.repo.name())?;
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
    let output = GodNodesOutput {
        nodes: decode_rows(&result)?,
        include_all: a.include_all,
    };
    Reply::new(&output, cx.meta(), ANSWER_TOKENS)
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
fn relation_types(name: Option<&str>, allowed: &[&str]) -> Result<Vec<&'static str>, ToolError> {
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
    Ok(types)
}

/// Relationship type names as a BQL list parameter.
fn type_list(types: Vec<&str>) -> Value {
    Value::List(types.into_iter().map(Value::from).collect())
}

/// The strongest neighbours `get_neighbors` lists.
const NEIGHBOURS_LISTED: i64 = 20;

/// get_neighbors' answer.
#[derive(Serialize)]
struct NeighboursOutput {
    node: FoundNode,
    neighbors: Vec<NeighbourRow>,
    /// The relation asked for.
    #[serde(skip)]
    relation: Option<String>,
}

impl ToolOutput for NeighboursOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut md = format!("{}\n", self.node.line());
        for neighbour in &self.neighbors {
            let _ = writeln!(
                md,
                "{} {} {} [id={}] {}{}{}",
                if neighbour.outgoing { "->" } else { "<-" },
                neighbour.relation.to_ascii_lowercase(),
                neighbour.name,
                neighbour.id,
                neighbour.evidence.tag(),
                neighbour.sites.times(),
                neighbour.site_text()
            );
        }
        if self.neighbors.is_empty() {
            md.push_str("No neighbors");
            if let Some(relation) = &self.relation {
                let _ = write!(md, " by {relation}");
            }
            md.push('\n');
        }
        md
    }
}

pub(crate) fn get_neighbors(st: &State, a: NeighborsArgs) -> Result<Reply, ToolError> {
    let all: Vec<&str> = SEED_RELATIONS.iter().map(|(name, _)| *name).collect();
    let relations = type_list(relation_types(a.relation.as_deref(), &all)?);
    let mut cx = st.ctx(a.repo.name())?;
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
    let mut neighbors: Vec<NeighbourRow> = decode_rows(&result)?;
    for neighbour in &mut neighbors {
        neighbour.listed_file = None;
    }
    let output = NeighboursOutput {
        node,
        neighbors,
        relation: a.relation,
    };
    Reply::new(&output, cx.meta(), ANSWER_TOKENS)
}

/// The deepest `affected` walk.
const AFFECTED_MAX_DEPTH: i64 = 10;

/// What the INFERRED class means, printed once when a hop has it.
const INFERRED_LEGEND: &str = "INFERRED: no single definition bound the name (several candidates, or only an external stub): weaker evidence when deciding what a change touches";

/// A node holding changed lines, with the line its span ends at.
struct SpannedNode {
    node: FoundNode,
    end_line: i64,
}

impl FromRecord for SpannedNode {
    fn from_record(record: &Record) -> Result<SpannedNode, ToolError> {
        Ok(SpannedNode {
            node: FoundNode::from_record(record)?,
            end_line: record.int("end_line")?,
        })
    }
}

/// The innermost entities of `file` holding changed `lines` (a method, not also the class
/// around it).
fn entities_at_lines(
    cx: &mut Ctx,
    file: &str,
    lines: &[std::ops::RangeInclusive<u32>],
) -> Result<Vec<FoundNode>, ToolError> {
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
        return Ok(Vec::new());
    }
    let result = cx.run(
        &format!(
            "UNWIND $ranges AS lines MATCH (n {{file: $file}}) \
             WHERE NOT n:File AND n.start_line <= lines[1] AND n.end_line >= lines[0] \
             WITH DISTINCT n RETURN {NODE_COLUMNS}, n.end_line AS end_line ORDER BY line, id"
        ),
        &[("file", Value::from(file)), ("ranges", Value::List(ranges))],
    )?;
    let found: Vec<SpannedNode> = decode_rows(&result)?;
    let spans: Vec<(i64, i64)> = found
        .iter()
        .map(|spanned| (spanned.node.line, spanned.end_line))
        .collect();
    Ok(found
        .into_iter()
        .enumerate()
        .filter(|(k, _)| {
            let (start, end) = spans[*k];
            !spans.iter().enumerate().any(|(other, &(s2, e2))| {
                other != *k && start <= s2 && e2 <= end && (start, end) != (s2, e2)
            })
        })
        .map(|(_, spanned)| spanned.node)
        .collect())
}

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
        seeds.extend(decode_rows::<FoundNode>(&result)?);
    }
    for file in batho_engine::changed_lines::parse_unified_diff(a.diff.as_deref().unwrap_or("")) {
        let index_is_old = !cx.check_fresh([file.path.as_str()])?.is_empty();
        let lines = if index_is_old {
            &file.old_lines
        } else {
            &file.new_lines
        };
        seeds.extend(entities_at_lines(cx, &file.path, lines)?);
    }
    seeds.dedup_by(|x, y| x.id == y.id);
    Ok(seeds)
}

/// A node reached from a changed one: `node.id AS id, node.name AS name, node.file AS
/// file, node.start_line AS line, depth, via.id AS via_id, via.name AS via_name,
/// type(relationship) AS relation, relationship.confidence AS confidence,
/// relationship.file AS at_file, relationship.line AS at_line`.
#[derive(Serialize)]
struct AffectedNode {
    id: String,
    name: String,
    file: String,
    line: i64,
    depth: i64,
    via: String,
    relation: String,
    #[serde(flatten)]
    evidence: Evidence,
    #[serde(skip)]
    via_name: String,
    /// ` @file:line` of the relationship, or nothing.
    #[serde(skip)]
    at: String,
}

impl FromRecord for AffectedNode {
    fn from_record(record: &Record) -> Result<AffectedNode, ToolError> {
        let at_file = record.text("at_file")?;
        Ok(AffectedNode {
            id: record.text("id")?,
            name: record.text("name")?,
            file: record.text("file")?,
            line: record.int("line")?,
            depth: record.int("depth")?,
            via: record.text("via_id")?,
            relation: record.text("relation")?,
            evidence: Evidence::read(record)?,
            via_name: record.text("via_name")?,
            at: if at_file.is_empty() {
                String::new()
            } else {
                format!(" @{at_file}:{}", record.int("at_line")?)
            },
        })
    }
}

/// affected's answer.
#[derive(Serialize)]
struct AffectedOutput {
    changed: Vec<FoundNode>,
    affected: Vec<AffectedNode>,
    #[serde(skip)]
    depth: i64,
}

impl ToolOutput for AffectedOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut md = String::from("CHANGED\n");
        for seed in &self.changed {
            let _ = writeln!(md, "{}", seed.line());
        }
        md.push_str("AFFECTED\n");
        for node in &self.affected {
            let _ = writeln!(
                md,
                "depth {}: {} [id={}] --{} [{}]--> {}{}",
                node.depth,
                node.name,
                node.id,
                node.relation.to_ascii_lowercase(),
                node.evidence.evidence.name(),
                node.via_name,
                node.at
            );
        }
        let _ = writeln!(
            md,
            "{} affected by {} changed (depth {})",
            self.affected.len(),
            self.changed.len(),
            self.depth
        );
        if self
            .affected
            .iter()
            .any(|node| node.evidence.evidence == Provenance::Inferred)
        {
            let _ = writeln!(md, "{INFERRED_LEGEND}");
        }
        md
    }
}

pub(crate) fn affected(st: &State, a: AffectedArgs) -> Result<Reply, ToolError> {
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
    let mut relations = relation_types(a.relation.as_deref(), IMPACT_RELATIONS)?;
    // Expansions are always followed: `algo.affected` passes through a macro at no cost, so
    // code that invokes a macro depends on whatever the macro calls or uses, as clang sees
    // it (on Lua, depth 3: 0.77 of clang's callers without this, 1.0 with it).
    relations.push("EXPANDS");
    let relations = type_list(relations);
    let mut cx = st.ctx(a.repo.name())?;
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
    // Each node once, at its shortest depth from any changed entity.
    let seed_set: HashSet<&str> = seeds.iter().map(|n| n.id.as_str()).collect();
    let mut seen = HashSet::new();
    let affected: Vec<AffectedNode> = decode_rows::<AffectedNode>(&result)?
        .into_iter()
        .filter(|node| !seed_set.contains(node.id.as_str()) && seen.insert(node.id.clone()))
        .collect();
    let output = AffectedOutput {
        changed: seeds,
        affected,
        depth: a.depth,
    };
    Reply::new(&output, cx.meta(), ANSWER_TOKENS)
}

/// graph_stats' answer: the row of `db.stats` (zeros without one).
#[derive(Default, Serialize)]
struct GraphStats {
    nodes: i64,
    edges: i64,
    communities: i64,
    files: i64,
    entities: i64,
    modularity: f64,
}

impl FromRecord for GraphStats {
    fn from_record(record: &Record) -> Result<GraphStats, ToolError> {
        Ok(GraphStats {
            nodes: record.int("nodes")?,
            edges: record.int("edges")?,
            communities: record.int("communities")?,
            files: record.int("files")?,
            entities: record.int("entities")?,
            modularity: record.float("modularity")?,
        })
    }
}

impl ToolOutput for GraphStats {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut md = format!(
            "nodes={} edges={} communities={} files={} entities={} modularity={:.3}\n",
            self.nodes, self.edges, self.communities, self.files, self.entities, self.modularity
        );
        if self.nodes == 0 {
            md.push_str("The graph has not been built yet: run `batho build <path>` first.\n");
        }
        md
    }
}

pub(crate) fn graph_stats(st: &State, a: RepoArgs) -> Result<Reply, ToolError> {
    let mut cx = st.ctx(a.repo.name())?;
    let result = cx.run(
        "CALL db.stats() YIELD nodes, edges, files, entities, communities, modularity \
         RETURN nodes, edges, files, entities, communities, modularity",
        &[],
    )?;
    let stats: GraphStats = decode_first(&result)?.unwrap_or_default();
    Reply::new(&stats, cx.meta(), ANSWER_TOKENS)
}

/// `repo_map` lists at most this many symbols under each file.
const MAP_SYMBOLS_PER_FILE: i64 = 6;

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

/// A symbol of a ranked file, as the repo_map query returns it: `file, rank, name, kind,
/// signature, line, score`.
#[derive(Serialize)]
struct MapSymbol {
    #[serde(skip)]
    file: String,
    #[serde(skip)]
    rank: f64,
    name: String,
    kind: String,
    line: i64,
    signature: String,
    pagerank: f64,
}

impl FromRecord for MapSymbol {
    fn from_record(record: &Record) -> Result<MapSymbol, ToolError> {
        Ok(MapSymbol {
            file: record.text("file")?,
            rank: record.float("rank")?,
            name: record.text("name")?,
            kind: record.text("kind")?,
            line: record.int("line")?,
            signature: record.text("signature")?,
            pagerank: record.float("score")?,
        })
    }
}

/// A file of the map with its top symbols.
#[derive(Serialize)]
struct MapFile {
    file: String,
    rank: f64,
    symbols: Vec<MapSymbol>,
}

impl MapFile {
    /// The file's entry in the map: its path, then each symbol's line and signature.
    fn markdown(&self) -> String {
        let mut entry = format!("{}:\n", self.file);
        for symbol in &self.symbols {
            let signature = signature_head(&symbol.signature);
            let shown = if signature.is_empty() {
                format!("{} {}", symbol.kind.to_ascii_lowercase(), symbol.name)
            } else {
                signature
            };
            let _ = writeln!(entry, "  {}: {shown}", symbol.line);
        }
        entry
    }
}

/// repo_map's answer.
#[derive(Serialize)]
struct RepoMapOutput {
    files: Vec<MapFile>,
    /// Whether the budget cut the map.
    truncated: bool,
}

impl ToolOutput for RepoMapOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut md: String = self.files.iter().map(MapFile::markdown).collect();
        let _ = writeln!(
            md,
            "Map: {} files by PageRank{}",
            self.files.len(),
            if self.truncated {
                " (cut at the budget)"
            } else {
                ""
            }
        );
        md
    }
}

/// The ranked files with their top symbols (the query's rows: files best first, each
/// file's symbols together), as many as fit in `chars` characters of map; whether the
/// budget cut it.
fn fill_map(symbols: Vec<MapSymbol>, chars: usize) -> (Vec<MapFile>, bool) {
    let mut files: Vec<MapFile> = Vec::new();
    for symbol in symbols {
        match files.last_mut() {
            Some(file) if file.file == symbol.file => file.symbols.push(symbol),
            _ => files.push(MapFile {
                file: symbol.file.clone(),
                rank: symbol.rank,
                symbols: vec![symbol],
            }),
        }
    }
    let mut size = 0;
    for (shown, file) in files.iter().enumerate() {
        size += file.markdown().len();
        if size > chars {
            files.truncate(shown);
            return (files, true);
        }
    }
    (files, false)
}

/// The repo_map query: the best files by `algo.file_rank`, each with its best symbols.
const REPO_MAP_QUERY: &str = "CALL algo.file_rank($files) YIELD file, rank \
CALL algo.file_symbols(file, $symbols, $definitions_only) YIELD node, score \
RETURN file, rank, node.name AS name, node.kind AS kind, node.signature AS signature, \
node.start_line AS line, score";

pub(crate) fn repo_map(st: &State, a: RepoMapArgs) -> Result<Reply, ToolError> {
    positive("budget", a.budget)?;
    let chars = a.budget.saturating_mul(MAP_CHARS_PER_UNIT) as usize;
    // Enough files to fill the budget with a few symbols each.
    let file_limit = (a.budget / 100).clamp(10, 500);
    let mut cx = st.ctx(a.repo.name())?;
    let symbols = cx.run(
        REPO_MAP_QUERY,
        &[
            ("files", Value::Int(file_limit)),
            ("symbols", Value::Int(MAP_SYMBOLS_PER_FILE)),
            ("definitions_only", Value::Bool(a.detail == Detail::High)),
        ],
    )?;
    let (files, truncated) = fill_map(decode_rows(&symbols)?, chars);
    let output = RepoMapOutput { files, truncated };
    Reply::new(&output, cx.meta(), ANSWER_TOKENS)
}
