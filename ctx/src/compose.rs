//! `ctx_tree_compose`: one context block from seed nodes and what lies around them,
//! packed into a token budget, with a manifest of what was kept, dropped and cut.
//!
//! 1. **Candidates**: the seeds and every node within `depth` hops of one (edges of any
//!    kind, either direction, around session roots: `algo.bfs`), each at its smallest
//!    distance. Nodes without text of their own (a file read's parent, whose chunks hold
//!    the text) add their chunks, not themselves. With a code graph, the chunks holding
//!    code that a seed's code calls or references, or that calls or references it, join
//!    at distance 1 (`code_links`: callers and callees the session has read).
//! 2. **Score** (each part in 0..1): `relevance` is the candidate's BM25 for `query`
//!    divided by the best candidate's, `closeness` is `1 / (1 + distance)`, `recency` is
//!    the candidate's creation time scaled between the oldest and newest candidate. With a
//!    query, `score = 0.6·relevance + 0.3·closeness + 0.1·recency`; without one,
//!    `score = 0.75·closeness + 0.25·recency`. Ties keep file order (path, then line).
//! 3. **Pack** greedily by score: every section that fits whole is included; then the
//!    best section left out is cut to what is left when at least [`MIN_CUT_TOKENS`] are
//!    left (listed as truncated); the rest are dropped with the reason. The whole block is
//!    counted again at the end and sections come off the end until it fits: the block
//!    never exceeds the budget.

use std::collections::BTreeMap;

use batho_engine::query::Value;
use serde::Serialize;

use crate::graph::{ContextGraph, CtxError, int_of, parameters, text_of};
use crate::kinds::{ENTITY_LABEL, NodeStatus};
use crate::tokens;

/// A section is cut to fit only when at least this many tokens are left for it.
pub const MIN_CUT_TOKENS: usize = 32;
/// The deepest expansion.
pub const MAX_DEPTH: usize = 5;
/// Candidates considered, at most (nearest first).
const MAX_CANDIDATES: usize = 5_000;
/// What [`candidate`] reads of each candidate `node` at `distance`, in order.
const CANDIDATE_COLUMNS: &str = "node.id, node.kind, node.text, node.title, node.path, \
     node.start_line, node.end_line, node.line, node.url, node.command, node.created_at, \
     distance, node.status";

/// How sections are printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ComposeFormat {
    /// Each node's text under a header line.
    #[default]
    Raw,
    /// One line per node: header and the start of its text.
    Outline,
}

/// What `ctx_tree_compose` asks.
#[derive(Clone, Debug, Default)]
pub struct ComposeRequest {
    /// Seed node ids.
    pub node_ids: Vec<String>,
    /// The most tokens the block may hold.
    pub budget_tokens: usize,
    /// Raw or outline.
    pub format: ComposeFormat,
    /// Words to score relevance by.
    pub query: Option<String>,
    /// Expansion depth (default 1).
    pub depth: Option<usize>,
}

/// A node left out, and why.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Dropped {
    /// The node.
    pub id: String,
    /// Why.
    pub reason: String,
}

/// What was kept, dropped and cut.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Manifest {
    /// Included nodes, in block order.
    pub included: Vec<String>,
    /// Left-out nodes with reasons.
    pub dropped: Vec<Dropped>,
    /// Included nodes whose text was cut.
    pub truncated: Vec<String>,
}

/// What `ctx_tree_compose` answers.
#[derive(Clone, Debug, Serialize)]
pub struct ComposeOutcome {
    /// The block.
    pub content: String,
    /// The manifest.
    pub manifest: Manifest,
    /// The block's o200k tokens.
    pub tokens: usize,
}

/// One candidate.
#[derive(Clone, Debug)]
struct Candidate {
    id: String,
    kind: String,
    text: String,
    header: String,
    distance: i64,
    created_at: i64,
    path: String,
    line: i64,
    score: f64,
}

/// Builds the block. See the module documentation.
pub fn compose(
    graph: &mut ContextGraph,
    request: &ComposeRequest,
) -> Result<ComposeOutcome, CtxError> {
    let depth = request.depth.unwrap_or(1);
    if depth > MAX_DEPTH {
        return Err(CtxError::Invalid(format!(
            "depth is at most {MAX_DEPTH}, got {depth}"
        )));
    }
    if request.node_ids.is_empty() {
        return Err(CtxError::Invalid(
            "node_ids needs at least one node id".into(),
        ));
    }
    crate::stale::mark_stale_reads(graph)?;
    let mut manifest = Manifest::default();
    let mut candidates = gather(graph, &request.node_ids, depth, &mut manifest)?;
    let relevance = match request.query.as_deref().map(str::trim) {
        Some(query) if !query.is_empty() => Some(relevance(graph, query, &candidates)?),
        _ => None,
    };
    score(&mut candidates, relevance.as_ref());
    let content = pack(candidates, request, &mut manifest);
    Ok(ComposeOutcome {
        tokens: tokens::count(&content),
        content,
        manifest,
    })
}

/// The seeds and what lies within `depth` of them, nearest distance kept; unknown seeds
/// go to the manifest.
fn gather(
    graph: &mut ContextGraph,
    seeds: &[String],
    depth: usize,
    manifest: &mut Manifest,
) -> Result<Vec<Candidate>, CtxError> {
    let mut found: BTreeMap<String, Candidate> = BTreeMap::new();
    for seed in seeds {
        let params = parameters([
            ("id", Value::from(seed.as_str())),
            ("depth", Value::Int(depth as i64)),
        ]);
        let reached = graph.query(
            &format!(
                "MATCH (start:Ctx {{id: $id}}) OPTIONAL MATCH (root:CtxSession) \
                 WITH start, collect(root) AS roots \
                 CALL algo.bfs(start, $depth, null, 'both', roots) YIELD node, distance \
                 OPTIONAL MATCH (chunk:Ctx)-[:derived_from]->(node) \
                 WHERE node.text IS NULL AND (distance = 0 OR distance < $depth) \
                 WITH coalesce(chunk, node) AS node, \
                      CASE WHEN chunk IS NULL THEN distance ELSE distance + 1 END AS distance \
                 WHERE node.kind IS NOT NULL \
                 RETURN {CANDIDATE_COLUMNS}"
            ),
            params.clone(),
        )?;
        if reached.rows.is_empty() {
            manifest.dropped.push(Dropped {
                id: seed.clone(),
                reason: "node not found".into(),
            });
            continue;
        }
        let code_neighbours = graph.query(
            &format!(
                "MATCH (start:Ctx {{id: $id}}) \
                 OPTIONAL MATCH (part:Ctx {{role: 'chunk'}})-[:derived_from]->(start) \
                 WITH start, collect(part) AS parts \
                 UNWIND CASE WHEN size(parts) = 0 THEN [start] ELSE parts END AS piece \
                 MATCH (piece)-[:references]->(:{ENTITY_LABEL})-[:references]-(:{ENTITY_LABEL}) \
                       <-[:references]-(node:Ctx) \
                 WHERE node <> piece AND node.status IN ['live', 'stale'] \
                 WITH DISTINCT node, 1 AS distance \
                 RETURN {CANDIDATE_COLUMNS}"
            ),
            params,
        )?;
        for row in reached.rows.iter().chain(&code_neighbours.rows) {
            let candidate = candidate(row);
            match found.get(&candidate.id) {
                Some(known) if known.distance <= candidate.distance => {}
                _ => {
                    found.insert(candidate.id.clone(), candidate);
                }
            }
        }
    }
    if found.is_empty() {
        return Err(CtxError::NodeNotFound(seeds.join(", ")));
    }
    let mut candidates: Vec<Candidate> = found.into_values().collect();
    candidates.sort_by_key(|c| c.distance);
    for extra in candidates.iter().skip(MAX_CANDIDATES) {
        manifest.dropped.push(Dropped {
            id: extra.id.clone(),
            reason: format!("beyond the {MAX_CANDIDATES} nearest candidates"),
        });
    }
    candidates.truncate(MAX_CANDIDATES);
    Ok(candidates)
}

fn candidate(row: &[Value]) -> Candidate {
    let (id, kind, text, title, path) = (
        text_of(&row[0]),
        text_of(&row[1]),
        text_of(&row[2]),
        text_of(&row[3]),
        text_of(&row[4]),
    );
    let location = match (&row[5], &row[6], &row[7]) {
        (Value::Int(start), Value::Int(end), _) => format!("{path}:{}-{}", start + 1, end + 1),
        (_, _, Value::Int(line)) => format!("{path}:{line}"),
        _ if !path.is_empty() => path.clone(),
        _ => [text_of(&row[8]), text_of(&row[9]), title]
            .into_iter()
            .find(|label| !label.is_empty())
            .unwrap_or_default(),
    };
    let line = match (&row[5], &row[7]) {
        (Value::Int(start), _) => *start,
        (_, Value::Int(line)) => *line,
        _ => 0,
    };
    // A stale chunk is still worth showing, but not as if the file still held it.
    let status = match text_of(&row[12]) {
        status if status.is_empty() || status == NodeStatus::Live.name() => String::new(),
        status => format!(" [{status}]"),
    };
    Candidate {
        header: format!("## {id} {kind} {location}").trim_end().to_string() + &status,
        id,
        kind,
        text,
        distance: int_of(&row[11]),
        created_at: int_of(&row[10]),
        path,
        line,
        score: 0.0,
    }
}

/// Each candidate's BM25 for `query`, divided by the best candidate's.
fn relevance(
    graph: &mut ContextGraph,
    query: &str,
    candidates: &[Candidate],
) -> Result<BTreeMap<String, f64>, CtxError> {
    let ids: Vec<Value> = candidates
        .iter()
        .map(|c| Value::from(c.id.as_str()))
        .collect();
    let result = graph.query(
        "UNWIND $ids AS id MATCH (candidate:Ctx {id: id}) WITH collect(candidate) AS candidates \
         CALL text.score($query, candidates) YIELD node, score RETURN node.id, score",
        parameters([("query", Value::from(query)), ("ids", Value::List(ids))]),
    )?;
    let scores: Vec<(String, f64)> = result
        .rows
        .iter()
        .map(|row| {
            let score = match row[1] {
                Value::Float(score) => score,
                _ => 0.0,
            };
            (text_of(&row[0]), score)
        })
        .collect();
    let best = scores.iter().map(|s| s.1).fold(0.0, f64::max);
    Ok(scores
        .into_iter()
        .map(|(id, score)| (id, if best > 0.0 { score / best } else { 0.0 }))
        .collect())
}

fn score(candidates: &mut [Candidate], relevance: Option<&BTreeMap<String, f64>>) {
    let oldest = candidates.iter().map(|c| c.created_at).min().unwrap_or(0);
    let newest = candidates.iter().map(|c| c.created_at).max().unwrap_or(0);
    for candidate in candidates.iter_mut() {
        let closeness = 1.0 / (1.0 + candidate.distance as f64);
        let recency = if newest > oldest {
            (candidate.created_at - oldest) as f64 / (newest - oldest) as f64
        } else {
            1.0
        };
        candidate.score = match relevance {
            Some(relevance) => {
                let relevant = relevance.get(&candidate.id).copied().unwrap_or(0.0);
                0.6 * relevant + 0.3 * closeness + 0.1 * recency
            }
            None => 0.75 * closeness + 0.25 * recency,
        };
    }
    candidates.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.path.cmp(&b.path))
            .then(a.line.cmp(&b.line))
            .then_with(|| a.id.cmp(&b.id))
    });
}

fn section(candidate: &Candidate, format: ComposeFormat, text: &str) -> String {
    match format {
        ComposeFormat::Raw => format!("{}\n{}\n\n", candidate.header, text.trim_end()),
        ComposeFormat::Outline => {
            let first = text
                .lines()
                .find(|line| !line.trim().is_empty())
                .unwrap_or("");
            let first = crate::lookup::excerpt(first, 120);
            format!(
                "- {} — {}\n",
                candidate.header.trim_start_matches("## "),
                first
            )
        }
    }
}

/// Packs sections by score; see the module documentation. Whole sections go first, so a
/// long section that does not fit never crowds out shorter ones that do; then the best
/// section left out is cut to what remains.
fn pack(candidates: Vec<Candidate>, request: &ComposeRequest, manifest: &mut Manifest) -> String {
    let budget = request.budget_tokens;
    // Per candidate, in score order: its section when included.
    let mut placed: Vec<(Candidate, Option<String>)> = Vec::new();
    let mut left_out: Vec<(usize, usize)> = Vec::new();
    let mut used = 0;
    for candidate in candidates {
        if candidate.text.trim().is_empty() {
            manifest.dropped.push(Dropped {
                id: candidate.id,
                reason: format!("a {} without text", candidate.kind),
            });
            continue;
        }
        let whole = section(&candidate, request.format, &candidate.text);
        let cost = tokens::count(&whole);
        if used + cost <= budget {
            used += cost;
            placed.push((candidate, Some(whole)));
        } else {
            left_out.push((placed.len(), cost));
            placed.push((candidate, None));
        }
    }
    let left = budget - used;
    if let Some(&(best, _)) = left_out.first()
        && left >= MIN_CUT_TOKENS
        && request.format == ComposeFormat::Raw
        && let Some(cut) = cut_to_fit(&placed[best].0, left)
    {
        manifest.truncated.push(placed[best].0.id.clone());
        placed[best].1 = Some(cut);
    }
    for (position, cost) in left_out {
        if placed[position].1.is_none() {
            manifest.dropped.push(Dropped {
                id: placed[position].0.id.clone(),
                reason: format!("over budget: needs {cost} tokens, {left} left"),
            });
        }
    }
    let sections = placed
        .into_iter()
        .filter_map(|(candidate, text)| text.map(|text| (candidate.id, text)))
        .collect();
    fit_whole_block(sections, budget, manifest)
}

/// The longest prefix of the candidate's text whose section (with a cut marker) fits
/// `left` tokens; `None` when not even an empty prefix does.
fn cut_to_fit(candidate: &Candidate, left: usize) -> Option<String> {
    let marker = "\n[… cut to fit the budget]";
    let render =
        |prefix: &str| section(candidate, ComposeFormat::Raw, &format!("{prefix}{marker}"));
    let cut = tokens::longest_fitting_prefix(&candidate.text, |prefix| {
        tokens::count(&render(prefix)) <= left
    });
    if cut == 0 {
        return None;
    }
    Some(render(&candidate.text[..cut]))
}

/// Joins the sections, then takes sections off the end while the joined block is over
/// the budget (token counts are not additive where two texts meet).
fn fit_whole_block(
    mut sections: Vec<(String, String)>,
    budget: usize,
    manifest: &mut Manifest,
) -> String {
    loop {
        let block: String = sections.iter().map(|(_, text)| text.as_str()).collect();
        if tokens::count(&block) <= budget || sections.is_empty() {
            manifest.included = sections.into_iter().map(|(id, _)| id).collect();
            manifest
                .truncated
                .retain(|id| manifest.included.contains(id));
            return block;
        }
        if let Some((id, _)) = sections.pop() {
            manifest.dropped.push(Dropped {
                id,
                reason: "over budget once the block was joined".into(),
            });
        }
    }
}
