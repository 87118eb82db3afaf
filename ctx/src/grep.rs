//! `ctx_tree_grep`: ripgrep's library crates over the project (`.gitignore` honoured,
//! hidden files and binary files skipped, as `rg` does), each hit stored as a
//! `tool_output` node under one node for the search. The regex engine is the `regex`
//! crate's: linear time in the input, whatever the pattern.

use std::path::Path;
use std::sync::Mutex;

use batho_engine::query::Value;
use globset::{Glob, GlobMatcher};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::{WalkBuilder, WalkState};
use serde::Serialize;

use crate::graph::{ContextGraph, CtxError, Properties};
use crate::kinds::NodeKind;
use crate::read::project_relative;

/// Hits stored and listed, at most; the answer says how many more there were.
pub const MAX_HITS: usize = 200;
/// A hit's line is cut to this many bytes.
const MAX_LINE_BYTES: usize = 400;
/// The largest compiled pattern (bytes of the regex program).
const MAX_REGEX_SIZE: usize = 4 << 20;

/// What `ctx_tree_grep` asks.
#[derive(Clone, Debug, Default)]
pub struct GrepRequest {
    /// The regular expression.
    pub pattern: String,
    /// Where to search, under the project root (the root when absent).
    pub path: Option<String>,
    /// Ignore case.
    pub case_insensitive: bool,
    /// Only files whose path relative to the search folder, or whose name, matches.
    pub file_glob: Option<String>,
}

/// What `ctx_tree_grep` answers (the seed's keys, plus the overflow).
#[derive(Clone, Debug, Serialize)]
pub struct GrepOutcome {
    /// `"nodeId path:line"` per stored hit.
    pub matches: Vec<String>,
    /// The pattern.
    pub pattern: String,
    /// Hits found in all.
    pub count: usize,
    /// Hits found but not stored (past [`MAX_HITS`]).
    pub omitted: usize,
    /// The node of the search itself.
    #[serde(rename = "nodeId")]
    pub node_id: String,
}

struct Hit {
    path: String,
    line: u64,
    text: String,
}

/// Runs the search and stores it. See the module documentation.
pub fn grep(graph: &mut ContextGraph, request: &GrepRequest) -> Result<GrepOutcome, CtxError> {
    let root = graph.project_root().to_path_buf();
    let folder = match &request.path {
        Some(path) if !path.is_empty() => project_relative(&root, path)?,
        _ => String::new(),
    };
    if folder.split('/').any(|part| part == "..") {
        return Err(CtxError::Invalid(format!(
            "'{folder}' leaves the project root; search inside it"
        )));
    }
    let (hits, count) = search(&root, &folder, request)?;
    store(graph, request, hits, count)
}

fn matcher(request: &GrepRequest) -> Result<grep_regex::RegexMatcher, CtxError> {
    RegexMatcherBuilder::new()
        .case_insensitive(request.case_insensitive)
        .size_limit(MAX_REGEX_SIZE)
        .build(&request.pattern)
        .map_err(|error| CtxError::Invalid(format!("invalid pattern: {error}")))
}

fn glob(request: &GrepRequest) -> Result<Option<GlobMatcher>, CtxError> {
    request
        .file_glob
        .as_deref()
        .filter(|glob| !glob.is_empty())
        .map(|glob| {
            Glob::new(glob)
                .map(|glob| glob.compile_matcher())
                .map_err(|error| CtxError::Invalid(format!("invalid file_glob: {error}")))
        })
        .transpose()
}

/// The first [`MAX_HITS`] hits in walk order (sorted by path and line) and the total.
fn search(root: &Path, folder: &str, request: &GrepRequest) -> Result<(Vec<Hit>, usize), CtxError> {
    let matcher = matcher(request)?;
    let glob = glob(request)?;
    let start = root.join(folder);
    if !start.exists() {
        return Err(CtxError::Invalid(format!(
            "'{folder}' does not exist in the project"
        )));
    }
    let found: Mutex<(Vec<Hit>, usize)> = Mutex::new((Vec::new(), 0));
    WalkBuilder::new(&start)
        .require_git(false)
        .follow_links(false)
        .build_parallel()
        .run(|| {
            let matcher = matcher.clone();
            let glob = glob.clone();
            let found = &found;
            let start = start.clone();
            let mut searcher = SearcherBuilder::new()
                .binary_detection(BinaryDetection::quit(b'\0'))
                .line_number(true)
                .build();
            Box::new(move |entry| {
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if !entry.file_type().is_some_and(|kind| kind.is_file()) {
                    return WalkState::Continue;
                }
                let in_folder = entry.path().strip_prefix(&start).unwrap_or(entry.path());
                if let Some(glob) = &glob
                    && !glob.is_match(in_folder)
                    && !entry
                        .path()
                        .file_name()
                        .is_some_and(|name| glob.is_match(name))
                {
                    return WalkState::Continue;
                }
                let relative = entry
                    .path()
                    .strip_prefix(root)
                    .unwrap_or(entry.path())
                    .to_string_lossy()
                    .into_owned();
                let mut local = Vec::new();
                let _ = searcher.search_path(
                    &matcher,
                    entry.path(),
                    Lossy(|line, text| {
                        local.push(Hit {
                            path: relative.clone(),
                            line,
                            text: cut_line(text),
                        });
                        Ok(true)
                    }),
                );
                if !local.is_empty()
                    && let Ok(mut found) = found.lock()
                {
                    found.1 += local.len();
                    found.0.extend(local);
                    // Keep memory bounded on a tree with millions of hits: only the first
                    // hits by path and line are stored.
                    if found.0.len() > 4 * MAX_HITS {
                        sort_and_keep_first(&mut found.0);
                    }
                }
                WalkState::Continue
            })
        });
    let (mut hits, count) = found
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    sort_and_keep_first(&mut hits);
    Ok((hits, count))
}

fn sort_and_keep_first(hits: &mut Vec<Hit>) {
    hits.sort_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
    hits.truncate(MAX_HITS);
}

fn cut_line(text: &str) -> String {
    let text = text.trim_end_matches(['\n', '\r']);
    if text.len() <= MAX_LINE_BYTES {
        return text.to_string();
    }
    let mut cut = MAX_LINE_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

fn store(
    graph: &mut ContextGraph,
    request: &GrepRequest,
    hits: Vec<Hit>,
    count: usize,
) -> Result<GrepOutcome, CtxError> {
    let mut search = Properties::new();
    search.insert("role".into(), Value::from("grep"));
    search.insert("pattern".into(), Value::from(request.pattern.as_str()));
    search.insert(
        "title".into(),
        Value::from(format!("grep {}", request.pattern)),
    );
    search.insert("count".into(), Value::Int(count as i64));
    if let Some(glob) = &request.file_glob {
        search.insert("file_glob".into(), Value::from(glob.as_str()));
    }
    let previous = graph.previous();
    graph.begin()?;
    let stored = (|| {
        let id = graph.add_node(NodeKind::ToolOutput, search)?;
        let children = hits
            .iter()
            .map(|hit| {
                let mut child = Properties::new();
                child.insert("role".into(), Value::from("grep_hit"));
                child.insert("path".into(), Value::from(hit.path.as_str()));
                child.insert("line".into(), Value::Int(hit.line as i64));
                child.insert("text".into(), Value::from(hit.text.as_str()));
                child
            })
            .collect();
        let ids = graph.add_children(&id, NodeKind::ToolOutput, children)?;
        Ok::<_, CtxError>((id, ids))
    })();
    let (id, ids) = match stored {
        Ok(stored) => {
            graph.commit()?;
            stored
        }
        Err(error) => {
            graph.rollback(previous)?;
            return Err(error);
        }
    };
    Ok(GrepOutcome {
        matches: ids
            .iter()
            .zip(&hits)
            .map(|(id, hit)| format!("{id} {}:{}", hit.path, hit.line))
            .collect(),
        pattern: request.pattern.clone(),
        count,
        omitted: count - hits.len(),
        node_id: id,
    })
}
