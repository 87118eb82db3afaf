//! The `stale` status: a file read whose file has changed on disk since (or is gone).
//! Checked when an agent looks at the session (`recent`, `search`, `compose`), so what it
//! is shown says whether it still holds: one `stat` per live file read, and a hash only
//! when the size or modification time moved (a file saved unchanged stays `live`). A
//! stale read and its chunks stay searchable; reading the file again supersedes them, and
//! reading it when it is back to what was read makes them `live` again.

use std::collections::BTreeMap;
use std::path::Path;

use crate::graph::{ContextGraph, CtxError, int_of, text_of};
use crate::kinds::NodeStatus;
use crate::read::{content_hash, modified_ms};

/// Marks `stale` the live file reads whose file changed; their ids.
pub fn mark_stale_reads(graph: &mut ContextGraph) -> Result<Vec<String>, CtxError> {
    let reads = graph.query(
        "MATCH (read:Ctx {role: 'file'}) WHERE read.status = 'live' \
         RETURN read.id, read.path, read.size, read.modified_ms, read.hash",
        BTreeMap::new(),
    )?;
    let root = graph.project_root().to_path_buf();
    let changed: Vec<String> = reads
        .rows
        .iter()
        .filter(|row| {
            let recorded = Recorded {
                size: int_of(&row[2]),
                modified_ms: int_of(&row[3]),
                hash: text_of(&row[4]),
            };
            changed_on_disk(&root.join(text_of(&row[1])), &recorded)
        })
        .map(|row| text_of(&row[0]))
        .collect();
    for id in &changed {
        graph.set_status(id, NodeStatus::Stale)?;
    }
    Ok(changed)
}

/// What a read recorded of its file.
struct Recorded {
    size: i64,
    modified_ms: i64,
    hash: String,
}

fn changed_on_disk(full: &Path, recorded: &Recorded) -> bool {
    let Ok(metadata) = std::fs::metadata(full) else {
        return true;
    };
    if metadata.len() as i64 == recorded.size && modified_ms(&metadata) == recorded.modified_ms {
        return false;
    }
    // Touched or rewritten: the content decides.
    std::fs::read(full).map_or(true, |bytes| content_hash(&bytes) != recorded.hash)
}
