//! The two steps of the Astria `repo_map` tool as procedures:
//!
//! - `algo.file_rank([limit])`: files ranked by the stored PageRank of the code they define;
//! - `algo.file_symbols(file, [limit], [definitions_only])`: one file's entities, best
//!   ranked first.
//!
//! A file's rank sums, over its functions, methods, structs, classes, unions and enums, the
//! PageRank each holds above the baseline every node gets (what a node nobody points at
//! holds, [`baseline`]). Typedefs, macros, variables and fields are left out of the
//! sum: on Linux 6.1, summing every entity put `include/uapi/asm-generic/int-ll64.h`
//! (the `u32` typedefs) first and generated register headers (thousands of macros each)
//! in the top 30, and the whole-graph aggregate in BQL took 5.1 s. Reading the kinds'
//! bitmaps here takes a fraction of that (see `docs/bql.md`).

use std::cmp::Ordering;
use std::collections::HashMap;

use batho_lang::Value;
use batho_schema::{NodeFlags, NodeKind, RelType};
use batho_storage::{Artifact, NodeIdx, StrId};

use super::exec::{Ctx, ExecResult};
use super::proc_args::{Rec, bool_arg, int_arg, string_arg};
use crate::algo::{from_stored, stored_floor};

/// The kinds whose PageRank a file's rank sums.
pub(crate) const RANKED_KINDS: [NodeKind; 6] = [
    NodeKind::Function,
    NodeKind::Method,
    NodeKind::Struct,
    NodeKind::Class,
    NodeKind::Union,
    NodeKind::Enum,
];

/// Kinds `algo.file_symbols` never lists: files themselves, external stubs, and members
/// (fields and enumerators), which their struct's or enum's signature already shows.
const UNLISTED_KINDS: [NodeKind; 4] = [
    NodeKind::File,
    NodeKind::External,
    NodeKind::Field,
    NodeKind::Enumerator,
];

/// `algo.file_rank`'s default number of files.
const FILE_RANK_DEFAULT_LIMIT: i64 = 50;
/// `algo.file_symbols`'s default number of symbols.
const FILE_SYMBOLS_DEFAULT_LIMIT: i64 = 10;

/// A ranked file: its path's string id, its rank, and how many entities add to it.
struct FileRank {
    file: StrId,
    rank: f64,
    entities: u64,
}

/// `algo.file_rank([limit])`: the files holding the most PageRank above the baseline in
/// their [`RANKED_KINDS`] entities, best first (ties by path); at most `limit` (default
/// 50). Records: `file` (the path), `rank` (the sum), `entities` (how many add to it).
pub(crate) fn file_rank(ctx: &Ctx<'_>, args: &[Value]) -> ExecResult<Vec<Rec>> {
    const P: &str = "algo.file_rank";
    let limit = int_arg(P, args, 0, "limit", FILE_RANK_DEFAULT_LIMIT)?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut ranked = rank_files(ctx)?;
    ctx.hold(ranked.len())?;
    let art = ctx.artifact()?;
    let path = |rank: &FileRank| art.string(rank.file);
    ranked.sort_by(|a, b| {
        b.rank
            .partial_cmp(&a.rank)
            .unwrap_or(Ordering::Equal)
            .then_with(|| path(a).cmp(&path(b)))
    });
    ranked.truncate(limit);
    Ok(ranked
        .into_iter()
        .map(|rank| {
            vec![
                ("file", Value::from(path(&rank).as_ref())),
                ("rank", Value::Float(rank.rank)),
                (
                    "entities",
                    Value::Int(i64::try_from(rank.entities).unwrap_or(i64::MAX)),
                ),
            ]
        })
        .collect())
}

/// Every file with a ranked entity above the baseline ([`baseline`]), unordered.
fn rank_files(ctx: &Ctx<'_>) -> ExecResult<Vec<FileRank>> {
    let art = ctx.artifact()?;
    let mut scored: Vec<(StrId, u32)> = Vec::new();
    for kind in RANKED_KINDS {
        let nodes = art.nodes_of_kind(kind);
        ctx.tick(nodes.len())?;
        for v in nodes {
            let node = art.node(NodeIdx(v));
            if art.is_live(NodeIdx(v)) {
                scored.push((node.file_sid(), node.pagerank()));
            }
        }
    }
    ctx.hold(scored.len())?;
    let baseline = baseline(scored.iter().map(|&(_, score)| score));
    let mut by_file: HashMap<StrId, FileRank> = HashMap::new();
    for (file, score) in scored.into_iter().filter(|&(_, score)| score > baseline) {
        let entry = by_file.entry(file).or_insert(FileRank {
            file,
            rank: 0.0,
            entities: 0,
        });
        entry.rank += from_stored(score) - from_stored(baseline);
        entry.entities += 1;
    }
    Ok(by_file.into_values().collect())
}

/// The score of an entity nobody points at: the teleport term plus the share of the
/// rank leaves spread over every node. The latter depends on the graph (about a third of
/// the average on Linux 6.1, where most nodes are leaves), so it is read off the scores:
/// the lowest one above [`stored_floor`], the estimate a patch gives an entity new to the
/// graph (which thus adds nothing until the next full build).
fn baseline(scores: impl Iterator<Item = u32>) -> u32 {
    let floor = stored_floor();
    scores.filter(|&score| score > floor).min().unwrap_or(floor)
}

/// `algo.file_symbols(file, [limit], [definitions_only])`: the entities whose `file` is
/// `file`, by stored PageRank descending, then line, then node index; at most `limit`
/// (default 10). Files, external stubs, fields, enumerators and macros nothing expands
/// (include guards) are not listed; with
/// `definitions_only`, neither is anything whose `CONTAINS` relationship lacks the
/// `Definition` role (prototypes, `extern` declarations, forward declarations). A path no
/// node has gives no records. Records: `node`, `score` (its PageRank).
pub(crate) fn file_symbols(ctx: &Ctx<'_>, args: &[Value]) -> ExecResult<Vec<Rec>> {
    const P: &str = "algo.file_symbols";
    let file = string_arg(P, args, 0, "file")?;
    let limit = int_arg(P, args, 1, "limit", FILE_SYMBOLS_DEFAULT_LIMIT)?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let definitions_only = bool_arg(P, args, 2, "definitions_only")?;
    let art = ctx.artifact()?;
    let Some(nodes) = art.nodes_in_file(&file) else {
        return Ok(Vec::new());
    };
    ctx.tick(nodes.len())?;
    let mut listed: Vec<(u32, u32, u32)> = Vec::new();
    for v in nodes {
        let node = art.node(NodeIdx(v));
        if UNLISTED_KINDS.contains(&node.kind())
            || !art.is_live(NodeIdx(v))
            || (node.kind() == NodeKind::Macro && !is_expanded(art, NodeIdx(v)))
            // The resolver gives the `CONTAINS` relationship into an entity the
            // `Definition` role exactly when the entity is not declaration-only.
            || (definitions_only && node.flags().contains(NodeFlags::DECLARATION_ONLY))
        {
            continue;
        }
        listed.push((node.pagerank(), node.start_line(), v));
    }
    ctx.hold(listed.len())?;
    listed.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    listed.truncate(limit);
    Ok(listed
        .into_iter()
        .map(|(score, _, v)| {
            vec![
                ("node", Value::Node(v)),
                ("score", Value::Float(from_stored(score))),
            ]
        })
        .collect())
}

/// Whether anything expands the macro `v`: an include guard (`#define DEMO_TABLE_H`) and
/// other macros nothing uses say nothing about what a file offers.
fn is_expanded(art: &Artifact, v: NodeIdx) -> bool {
    art.in_edges(v).any(|e| e.rel() == RelType::Expands)
}
