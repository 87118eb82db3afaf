//! The summary of a graph's communities (the `community` each node holds, from the
//! build's Louvain): each community's label, size, files, most central member, cohesion and
//! term of the modularity, and the partition's modularity. `CALL db.communities()`,
//! `CALL db.stats()` and the Astria `list_communities` and `graph_stats` tools read it.
//!
//! Computing it reads every entity's out-edges (1.5 s on Linux 6.1), so the build computes
//! it once and stores it beside the artifact, in `derived/communities-<key>.json`, keyed by
//! the hashes of the segments it describes ([`graph_key`]): a reader that finds the file of
//! its own graph reads the summary instead (a few milliseconds). After a patch there is no
//! file for the new graph; the first query computes and stores it. A missing or damaged
//! file is never an error: the summary is computed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use batho_schema::NodeKind;
use batho_storage::{Artifact, NodeIdx};
use serde::{Deserialize, Serialize};

use super::COMMUNITY_RELS;

/// Counts work done, in the units of a query's work limit; an error stops the summary.
pub type Tick<'a, E> = dyn FnMut(u64) -> Result<(), E> + 'a;

/// A community's most connected member.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CentralMember {
    /// Its name.
    pub name: String,
    /// Its entity id.
    pub id: String,
}

/// One community.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommunityRow {
    /// The id stored on its members.
    pub community: u32,
    /// Its two most connected names and the directory most of it is in, unique.
    pub label: String,
    /// Its members.
    pub entities: u64,
    /// The distinct files of its members.
    pub files: u64,
    /// The member with the highest degree.
    pub central: Option<CentralMember>,
    /// The share of its members' edge ends that stay inside it.
    pub cohesion: f64,
    /// Its term of the modularity.
    pub modularity: f64,
}

/// Every community, by id, and the partition's modularity (the sum of the rows' terms).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommunitySummary {
    /// The [`graph_key`] of the graph summarized.
    pub key: String,
    /// The communities, by ascending id.
    pub rows: Vec<CommunityRow>,
    /// The modularity of the partition.
    pub modularity: f64,
}

/// Identifies a generation's graph: the blake3 of its layers' segment hashes, in order.
/// Two generations with the same layers (a run recorded without a commit) share it.
pub fn graph_key(art: &Artifact) -> String {
    let mut hasher = blake3::Hasher::new();
    for layer in &art.manifest().layers {
        hasher.update(&[layer.kind]);
        for segment in &layer.segments {
            hasher.update(&segment.hash);
        }
    }
    hasher.finalize().to_hex().to_string()
}

/// Summaries kept in `derived/`, the newest first: the current graph's, and those of a few
/// graphs before it (a server still reading the generation before a patch, a query `AT
/// GENERATION`), so that readers of different graphs do not overwrite each other's.
const SUMMARIES_KEPT: usize = 4;

fn derived_dir(art: &Artifact) -> PathBuf {
    art.dir().join("derived")
}

/// `derived/communities-<first 16 hex digits of the key>.json`.
fn summary_path(art: &Artifact, key: &str) -> PathBuf {
    derived_dir(art).join(format!("communities-{}.json", &key[..16.min(key.len())]))
}

/// A summary as stored: the hex blake3 of its JSON on the first line, then the JSON, so
/// that a flipped digit or letter, which still parses, is found instead of served (the
/// fault campaign, `tests/cli_faults.rs`, flips bytes in these files too). The hash is of
/// the bytes written, not of a second serialization: serde_json's float parsing is not
/// exact to the last bit, so a re-serialized summary need not match.
struct CheckedSummary;

impl CheckedSummary {
    fn of(summary: &CommunitySummary) -> serde_json::Result<Vec<u8>> {
        let json = serde_json::to_vec(summary)?;
        let mut bytes = blake3::hash(&json).to_hex().as_bytes().to_vec();
        bytes.push(b'\n');
        bytes.extend_from_slice(&json);
        Ok(bytes)
    }

    /// The summary in `bytes`, if they are a checked summary whose hash holds.
    fn read(bytes: &[u8]) -> Result<CommunitySummary, &'static str> {
        let not_checked = "it is not a checked community summary";
        let (hash, json) = bytes
            .split_at_checked(64)
            .and_then(|(hash, rest)| Some((hash, rest.strip_prefix(b"\n")?)))
            .ok_or(not_checked)?;
        if blake3::hash(json).to_hex().as_bytes() != hash {
            return Err("its content does not match its blake3");
        }
        serde_json::from_slice(json).map_err(|_| not_checked)
    }
}

/// The summary stored for this artifact's graph, if there is one and it reads back whole.
pub fn stored(art: &Artifact) -> Option<CommunitySummary> {
    let key = graph_key(art);
    let bytes = std::fs::read(summary_path(art, &key)).ok()?;
    let summary = CheckedSummary::read(&bytes).ok()?;
    (summary.key == key).then_some(summary)
}

/// The stored summaries under the artifact folder `batho_dir` that do not read back whole,
/// with what is wrong: `fix --deep` and `status --verify` report them. A summary written
/// before summaries carried their hash is not damage (it is recomputed when next read).
pub(crate) fn damaged_summaries(batho_dir: &std::path::Path) -> Vec<(PathBuf, String)> {
    let mut damaged = Vec::new();
    for path in summary_files(&batho_dir.join("derived")) {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let older = serde_json::from_slice::<CommunitySummary>(&bytes).is_ok();
        if let Err(problem) = CheckedSummary::read(&bytes)
            && !older
        {
            damaged.push((path, problem.to_string()));
        }
    }
    damaged.sort();
    damaged
}

/// Stores `summary` for the next readers (written aside, then renamed into place), and
/// deletes all but the [`SUMMARIES_KEPT`] newest summaries.
pub fn store(art: &Artifact, summary: &CommunitySummary) -> std::io::Result<()> {
    let path = summary_path(art, &summary.key);
    std::fs::create_dir_all(derived_dir(art))?;
    // `.tmp-` marks an interrupted write, as everywhere under `.batho/`.
    let aside = path.with_extension(format!("json.tmp-{}", std::process::id()));
    std::fs::write(&aside, CheckedSummary::of(summary)?)?;
    std::fs::rename(&aside, &path).inspect_err(|_| {
        let _ = std::fs::remove_file(&aside);
    })?;
    prune(art);
    Ok(())
}

/// The summary files (`communities-*.json`) in the folder `derived`.
fn summary_files(derived: &std::path::Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(derived) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("communities-") && name.ends_with(".json")
        })
        .collect()
}

/// Deletes the summaries after the [`SUMMARIES_KEPT`] most recently written.
fn prune(art: &Artifact) {
    let mut summaries: Vec<(std::time::SystemTime, PathBuf)> = summary_files(&derived_dir(art))
        .into_iter()
        .filter_map(|path| Some((std::fs::metadata(&path).ok()?.modified().ok()?, path)))
        .collect();
    summaries.sort_by(|a, b| b.cmp(a));
    for (_, path) in summaries.into_iter().skip(SUMMARIES_KEPT) {
        let _ = std::fs::remove_file(path);
    }
}

/// Computes the summary of `art`'s graph, calling `tick` as it reads nodes and edges.
/// Degrees, cohesion and modularity are over the graph [`community_graph_degrees`]
/// describes.
pub fn summarize<E>(art: &Artifact, tick: &mut Tick<'_, E>) -> Result<CommunitySummary, E> {
    let (degree, edges) = community_graph_degrees(art, tick)?;
    let stats = community_stats(art, &degree, tick)?;
    let mut taken: HashSet<String> = HashSet::new();
    let mut rows = Vec::with_capacity(stats.len());
    let ratio = |part: f64, whole: f64| if whole > 0.0 { part / whole } else { 0.0 };
    for (community, s) in stats {
        let label = community_label(art, community, &s, &taken);
        taken.insert(label.clone());
        let central = s.central.first().map(|&v| {
            let node = art.node(NodeIdx(v));
            CentralMember {
                name: node.name().into_owned(),
                id: node.id().into_owned(),
            }
        });
        let (inside, ends) = (s.internal_edges as f64, s.degree_sum as f64);
        rows.push(CommunityRow {
            community,
            label,
            entities: s.entities,
            files: s.members_per_file.len() as u64,
            central,
            cohesion: ratio(2.0 * inside, ends),
            modularity: ratio(inside, edges as f64) - ratio(ends, 2.0 * edges as f64).powi(2),
        });
    }
    // From +0.0 (an empty `sum` of floats is -0.0), in community order.
    let modularity = rows.iter().fold(0.0, |sum, row| sum + row.modularity);
    Ok(CommunitySummary {
        key: graph_key(art),
        rows,
        modularity,
    })
}

/// Whether a node takes part in communities: file nodes and external stubs never do.
fn in_communities(kind: NodeKind) -> bool {
    !matches!(kind, NodeKind::File | NodeKind::External)
}

/// The graph communities are measured over: entities, CALLS/INCLUDES/REFERENCES/INHERITS
/// edges between two distinct ones, undirected, one unit of weight per edge. Returns each
/// node's degree in it and the number of its edges.
fn community_graph_degrees<E>(
    art: &Artifact,
    tick: &mut Tick<'_, E>,
) -> Result<(Vec<u32>, u64), E> {
    let n = art.node_count();
    let entity: Vec<bool> = (0..n)
        .map(|v| art.is_live(NodeIdx(v)) && in_communities(art.node(NodeIdx(v)).kind()))
        .collect();
    let mut degree = vec![0u32; n as usize];
    let mut edges = 0u64;
    for v in (0..n).filter(|&v| entity[v as usize]) {
        let out = art.out_edges(NodeIdx(v));
        tick(1 + out.len() as u64)?;
        for e in out {
            let d = e.dst().0;
            if d != v && entity.get(d as usize) == Some(&true) && COMMUNITY_RELS.contains(&e.rel())
            {
                degree[v as usize] = degree[v as usize].saturating_add(1);
                degree[d as usize] = degree[d as usize].saturating_add(1);
                edges += 1;
            }
        }
    }
    Ok((degree, edges))
}

/// What [`summarize`] gathers about one community.
#[derive(Default)]
struct CommunityStats {
    entities: u64,
    /// Members per file (by the file's string id), with one member to read the path from.
    members_per_file: HashMap<u32, (u64, u32)>,
    /// Its most connected members, best first (degree descending, then node index).
    central: Vec<u32>,
    /// Sum of the members' degrees, and the edges with both ends inside.
    degree_sum: u64,
    internal_edges: u64,
}

/// How many of a community's most connected members are kept to name it.
const CENTRAL_KEPT: usize = 4;

impl CommunityStats {
    fn add_member(&mut self, v: u32, file: u32, degree: &[u32]) {
        self.entities += 1;
        self.members_per_file.entry(file).or_insert((0, v)).0 += 1;
        self.degree_sum += u64::from(degree[v as usize]);
        let rank = |x: u32| (std::cmp::Reverse(degree[x as usize]), x);
        let at = self.central.partition_point(|&x| rank(x) < rank(v));
        if at < CENTRAL_KEPT {
            self.central.insert(at, v);
            self.central.truncate(CENTRAL_KEPT);
        }
    }
}

/// Every community's stats, by community id.
fn community_stats<E>(
    art: &Artifact,
    degree: &[u32],
    tick: &mut Tick<'_, E>,
) -> Result<BTreeMap<u32, CommunityStats>, E> {
    let mut stats: BTreeMap<u32, CommunityStats> = BTreeMap::new();
    let community_of = |v: u32| {
        let node = art.node(NodeIdx(v));
        (art.is_live(NodeIdx(v)) && in_communities(node.kind())).then(|| node.community())
    };
    for v in 0..art.node_count() {
        let Some(c) = community_of(v).filter(|&c| c != 0) else {
            continue;
        };
        let node = art.node(NodeIdx(v));
        stats
            .entry(c)
            .or_default()
            .add_member(v, node.file_sid().0, degree);
        let out = art.out_edges(NodeIdx(v));
        tick(1 + out.len() as u64)?;
        for e in out {
            let d = e.dst().0;
            if d != v && COMMUNITY_RELS.contains(&e.rel()) && community_of(d) == Some(c) {
                stats.entry(c).or_default().internal_edges += 1;
            }
        }
    }
    Ok(stats)
}

/// The directory holding most of a community's members (ties: the smallest path), with a
/// trailing `/`; empty when that is the root of the tree.
fn main_directory(art: &Artifact, s: &CommunityStats) -> String {
    let mut per_dir: BTreeMap<String, u64> = BTreeMap::new();
    for &(members, node) in s.members_per_file.values() {
        let file = art.node(NodeIdx(node)).file().into_owned();
        let dir = file.rfind('/').map_or("", |at| &file[..=at]).to_owned();
        *per_dir.entry(dir).or_default() += members;
    }
    let mut best: Option<(&String, u64)> = None;
    for (dir, &members) in &per_dir {
        if best.is_none_or(|(_, most)| members > most) {
            best = Some((dir, members));
        }
    }
    best.map(|(dir, _)| dir.clone()).unwrap_or_default()
}

/// A label saying what a community is about: the names of its two most connected members
/// (distinct names) and the directory most of it is in, e.g. `lua_State, luaD_call (src/)`.
/// `taken` holds the labels given so far; a label already given gets the next most
/// connected name, then the community id, so that no two communities share one.
fn community_label(art: &Artifact, c: u32, s: &CommunityStats, taken: &HashSet<String>) -> String {
    let mut names: Vec<String> = Vec::new();
    for &v in &s.central {
        let name = art.node(NodeIdx(v)).name().into_owned();
        if !name.is_empty() && !names.contains(&name) {
            names.push(name);
        }
    }
    let dir = main_directory(art, s);
    let with = |count: usize| {
        let shown = names[..count.min(names.len())].join(", ");
        if dir.is_empty() {
            shown
        } else {
            format!("{shown} ({dir})")
        }
    };
    (2..=names.len().max(2))
        .map(with)
        .find(|label| !taken.contains(label))
        .unwrap_or_else(|| format!("{} [community {c}]", with(2)))
}
