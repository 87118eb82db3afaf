//! `ctx_tree_read`: a file of the project cut into chunks and stored as a `file_chunk`
//! parent (no text: path, size, modification time, hash, line range) with one
//! `file_chunk` child per chunk. Reading an unchanged file again returns the stored node
//! (`cached: true`); a changed one makes a new node, and the older reads of that file
//! become `superseded` with a `supersedes` edge from the new one.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use batho_engine::query::Value;
use batho_engine::repo_files::{RepoReadError, read_repo_file};
use serde::Serialize;

use crate::chunk::{Chunk, chunk_file};
use crate::graph::{ContextGraph, CtxError, Properties, int_of, parameters, text_of};
use crate::kinds::{EdgeKind, NodeKind, NodeStatus};

/// The default largest chunk, in o200k tokens.
pub const DEFAULT_CHUNK_TOKENS: usize = 512;
/// The largest file read, in bytes.
pub const MAX_FILE_BYTES: usize = 16 << 20;

/// What `ctx_tree_read` asks.
#[derive(Clone, Debug, Default)]
pub struct ReadRequest {
    /// Absolute, or relative to the project root.
    pub path: String,
    /// `[start, end]`, 0-based, both included.
    pub lines: Option<(usize, usize)>,
    /// The largest chunk, in tokens.
    pub budget_tokens: Option<usize>,
}

/// What `ctx_tree_read` answers (the seed's keys).
#[derive(Clone, Debug, Serialize)]
pub struct ReadOutcome {
    /// The parent node.
    #[serde(rename = "nodeId")]
    pub node_id: String,
    /// The path, relative to the project root.
    pub path: String,
    /// Whether an unchanged earlier read was returned.
    pub cached: bool,
    /// Its chunks.
    pub chunks: usize,
    /// How to get the text.
    pub hint: String,
}

/// What identifies one version of a file.
pub(crate) struct FileVersion {
    pub(crate) size: i64,
    pub(crate) modified_ms: i64,
    pub(crate) hash: String,
}

/// Reads `request.path` into the session graph. See the module documentation.
pub fn read_file(graph: &mut ContextGraph, request: &ReadRequest) -> Result<ReadOutcome, CtxError> {
    let relative = project_relative(graph.project_root(), &request.path)?;
    let bytes = read_repo_file(graph.project_root(), &relative).map_err(read_error)?;
    let text = text_of_file(&relative, &bytes)?;
    let version = file_version(&graph.project_root().join(&relative), &bytes);
    let budget = request
        .budget_tokens
        .unwrap_or(DEFAULT_CHUNK_TOKENS)
        .max(16);
    let selection = selection_key(request.lines, budget);
    let earlier = earlier_reads(graph, &relative)?;
    if let Some(same) = earlier
        .iter()
        .find(|read| read.selection == selection && read.hash == version.hash)
    {
        if same.status == NodeStatus::Stale.name() {
            // The file is back to what was read: the read is current again.
            graph.set_status(&same.id, NodeStatus::Live)?;
        }
        return Ok(outcome(same.id.clone(), relative, true, same.chunks));
    }
    let chunks = select_lines(chunk_file(&relative, text, budget), request.lines, text);
    let previous = graph.previous();
    graph.begin()?;
    let stored = store_read(graph, &relative, &version, &selection, &chunks, &earlier);
    match stored {
        Ok(id) => {
            graph.commit()?;
            Ok(outcome(id, relative, false, chunks.len()))
        }
        Err(error) => {
            graph.rollback(previous)?;
            Err(error)
        }
    }
}

fn outcome(node_id: String, path: String, cached: bool, chunks: usize) -> ReadOutcome {
    let hint = format!(
        "call ctx_tree_compose with node_ids [\"{node_id}\"] and a budget_tokens to get the text \
         ({chunks} chunk{})",
        if chunks == 1 { "" } else { "s" }
    );
    ReadOutcome {
        node_id,
        path,
        cached,
        chunks,
        hint,
    }
}

/// `path` relative to the project root; an absolute path must lie under it.
pub(crate) fn project_relative(root: &Path, path: &str) -> Result<String, CtxError> {
    let given = PathBuf::from(path);
    if !given.is_absolute() {
        return Ok(path.trim_start_matches("./").to_string());
    }
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    given
        .strip_prefix(root)
        .or_else(|_| given.strip_prefix(&canonical_root))
        .map(|relative| relative.to_string_lossy().into_owned())
        .map_err(|_| {
            CtxError::Invalid(format!(
                "'{path}' is outside the project root {}; only files of the project can be read",
                root.display()
            ))
        })
}

fn read_error(error: RepoReadError) -> CtxError {
    CtxError::Invalid(error.to_string())
}

/// The file's text; binary and non-UTF-8 files are refused (never quoted).
fn text_of_file<'b>(relative: &str, bytes: &'b [u8]) -> Result<&'b str, CtxError> {
    if bytes.len() > MAX_FILE_BYTES {
        return Err(CtxError::Invalid(format!(
            "'{relative}' is {} bytes; files over {} MiB are not read (ask for `lines` of it with a smaller file, or grep it)",
            bytes.len(),
            MAX_FILE_BYTES >> 20
        )));
    }
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Err(CtxError::Invalid(format!(
            "'{relative}' is a binary file; only text files can be read"
        )));
    }
    std::str::from_utf8(bytes).map_err(|error| {
        CtxError::Invalid(format!(
            "'{relative}' is not UTF-8 text (invalid byte at offset {}); only UTF-8 text files can be read",
            error.valid_up_to()
        ))
    })
}

pub(crate) fn file_version(full: &Path, bytes: &[u8]) -> FileVersion {
    FileVersion {
        size: bytes.len() as i64,
        modified_ms: std::fs::metadata(full).map_or(0, |metadata| modified_ms(&metadata)),
        hash: content_hash(bytes),
    }
}

/// A file's modification time in epoch milliseconds (0 when the system has none).
pub(crate) fn modified_ms(metadata: &std::fs::Metadata) -> i64 {
    metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
}

/// What tells two versions of a file apart: 128 bits of BLAKE3, in hex.
pub(crate) fn content_hash(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex()[..32].to_string()
}

/// What a read covered: a cached read must have been cut the same way.
fn selection_key(lines: Option<(usize, usize)>, budget: usize) -> String {
    match lines {
        Some((start, end)) => format!("lines {start}-{end}, budget {budget}"),
        None => format!("whole, budget {budget}"),
    }
}

struct EarlierRead {
    id: String,
    selection: String,
    hash: String,
    chunks: usize,
    status: String,
}

/// The live reads of `relative`, newest first.
fn earlier_reads(graph: &mut ContextGraph, relative: &str) -> Result<Vec<EarlierRead>, CtxError> {
    let result = graph.query(
        "MATCH (read:Ctx {path: $path}) \
         WHERE read.kind = 'file_chunk' AND read.role = 'file' AND read.status IN ['live', 'stale'] \
         RETURN read.id, read.selection, read.hash, read.chunks, read.status \
         ORDER BY id(read) DESC",
        parameters([("path", Value::from(relative))]),
    )?;
    Ok(result
        .rows
        .iter()
        .map(|row| EarlierRead {
            id: text_of(&row[0]),
            selection: text_of(&row[1]),
            hash: text_of(&row[2]),
            chunks: int_of(&row[3]) as usize,
            status: text_of(&row[4]),
        })
        .collect())
}

/// The chunks inside `[start, end]`; chunks crossing an edge are clipped to whole lines.
fn select_lines(chunks: Vec<Chunk>, lines: Option<(usize, usize)>, text: &str) -> Vec<Chunk> {
    let Some((start, end)) = lines else {
        return chunks;
    };
    let file_lines: Vec<&str> = text.split_inclusive('\n').collect();
    chunks
        .into_iter()
        .filter(|chunk| chunk.end_line >= start && chunk.start_line <= end)
        .map(|chunk| {
            if chunk.start_line >= start && chunk.end_line <= end {
                return chunk;
            }
            let (from, to) = (chunk.start_line.max(start), chunk.end_line.min(end));
            let body: String = file_lines
                .get(from..=to.min(file_lines.len().saturating_sub(1)))
                .unwrap_or_default()
                .concat();
            Chunk {
                start_line: from,
                end_line: to,
                tokens: crate::tokens::count(&body),
                text: body,
            }
        })
        .collect()
}

fn store_read(
    graph: &mut ContextGraph,
    relative: &str,
    version: &FileVersion,
    selection: &str,
    chunks: &[Chunk],
    earlier: &[EarlierRead],
) -> Result<String, CtxError> {
    let mut parent = Properties::new();
    parent.insert("role".into(), Value::from("file"));
    parent.insert("path".into(), Value::from(relative));
    parent.insert("title".into(), Value::from(relative));
    parent.insert("size".into(), Value::Int(version.size));
    parent.insert("modified_ms".into(), Value::Int(version.modified_ms));
    parent.insert("hash".into(), Value::from(version.hash.as_str()));
    parent.insert("selection".into(), Value::from(selection));
    parent.insert("chunks".into(), Value::Int(chunks.len() as i64));
    parent.insert(
        "tokens".into(),
        Value::Int(chunks.iter().map(|c| c.tokens as i64).sum()),
    );
    let id = graph.add_node(NodeKind::FileChunk, parent)?;
    let children = chunks
        .iter()
        .enumerate()
        .map(|(index, chunk)| {
            let mut child = Properties::new();
            child.insert("role".into(), Value::from("chunk"));
            child.insert("path".into(), Value::from(relative));
            child.insert("ordinal".into(), Value::Int(index as i64));
            child.insert("start_line".into(), Value::Int(chunk.start_line as i64));
            child.insert("end_line".into(), Value::Int(chunk.end_line as i64));
            child.insert("tokens".into(), Value::Int(chunk.tokens as i64));
            child.insert("text".into(), Value::from(chunk.text.as_str()));
            child
        })
        .collect();
    let chunk_ids = graph.add_children(&id, NodeKind::FileChunk, children)?;
    if let Some(links) = crate::code_links::code_links(graph.project_root(), relative, chunks) {
        crate::code_links::store_code_links(graph, &chunk_ids, &links)?;
    }
    for older in earlier {
        graph.set_status(&older.id, NodeStatus::Superseded)?;
        graph.link(&id, EdgeKind::Supersedes, &older.id)?;
    }
    Ok(id)
}
