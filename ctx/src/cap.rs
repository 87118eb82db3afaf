//! The size cap of a session graph: when its nodes hold more than the cap of text
//! (characters, as BQL's `size()` counts them), the oldest text is pruned until they hold
//! 90 % of it: superseded nodes first, then any node but session roots, oldest first.
//! Pruning keeps each node's id, kind, title, path, URL and command and marks it
//! `pruned` (as `batho ctx prune` does), and the tool's answer says how much went
//! (`meta.pruned_to_cap`), so nothing is lost silently. Checked after every tool call that
//! wrote text; the running count costs one scan at the first such call, then nothing.

use batho_engine::query::Value;
use serde::Serialize;

use crate::graph::{ContextGraph, CtxError, parameters};
use crate::kinds::NodeStatus;
use crate::lookup::prune_selected;

/// The default cap: 200 million characters (about 200 MB of source or pages).
pub const DEFAULT_MAX_TEXT_CHARS: u64 = 200_000_000;
/// Nodes pruned per statement while over the cap.
const PRUNE_BATCH: i64 = 500;

/// What keeping under the cap pruned.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct CapOutcome {
    /// Nodes marked `pruned`.
    pub pruned: i64,
    /// Characters of text dropped from them.
    pub text_chars: i64,
    /// The cap, in characters.
    pub cap_chars: u64,
}

/// Prunes the oldest text while the graph holds more than its cap; `None` when it was
/// within it, or when nothing was written since the last check.
pub fn keep_under_cap(graph: &mut ContextGraph) -> Result<Option<CapOutcome>, CtxError> {
    if graph.take_unchecked_text() == 0 {
        return Ok(None);
    }
    let cap = graph.text_cap();
    if graph.text_chars()? <= cap {
        return Ok(None);
    }
    let target = cap / 10 * 9;
    let mut outcome = CapOutcome {
        cap_chars: cap,
        ..CapOutcome::default()
    };
    for only_superseded in [true, false] {
        while graph.text_chars()? > target {
            let (pruned, chars) = prune_oldest(graph, only_superseded)?;
            if pruned == 0 {
                break;
            }
            outcome.pruned += pruned;
            outcome.text_chars += chars;
        }
    }
    Ok(Some(outcome))
}

/// Prunes up to [`PRUNE_BATCH`] of the oldest nodes holding text; how many and how many
/// characters.
fn prune_oldest(graph: &mut ContextGraph, only_superseded: bool) -> Result<(i64, i64), CtxError> {
    let statuses: Vec<Value> = NodeStatus::ALL
        .iter()
        .filter(|status| match only_superseded {
            true => **status == NodeStatus::Superseded,
            false => **status != NodeStatus::Pruned,
        })
        .map(|status| Value::from(status.name()))
        .collect();
    let outcome = prune_selected(
        graph,
        "MATCH (node:Ctx) WHERE node.text IS NOT NULL AND node.kind <> 'session' \
         AND node.status IN $statuses WITH node ORDER BY id(node) LIMIT $batch",
        parameters([
            ("statuses", Value::List(statuses)),
            ("batch", Value::Int(PRUNE_BATCH)),
        ]),
    )?;
    Ok((outcome.pruned, outcome.text_chars))
}
