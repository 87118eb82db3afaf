//! `ctx_tree_monitor`: a shell command run with a timeout ([`crate::monitor`]), its output
//! redacted ([`crate::redact`]) before anything is stored or returned, and stored as a
//! `tool_output` node. The command line itself is redacted too (a `--password x` in it
//! would otherwise be kept). Running the same command in the same folder again with the
//! same exit status and output returns the stored node (`cached: true`) instead of a
//! duplicate.

use std::path::{Path, PathBuf};
use std::time::Duration;

use batho_engine::query::Value;
use serde::Serialize;

use crate::graph::{ContextGraph, CtxError, Properties, int_of, parameters, text_of};
use crate::kinds::NodeKind;
use crate::monitor::{MonitorOptions, run_command};
use crate::redact::redact;

/// The default timeout (the seed's).
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// The longest timeout accepted.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// The preview is about this many characters of the end of the output.
const PREVIEW_CHARS: usize = 500;

/// What `ctx_tree_monitor` asks.
#[derive(Clone, Debug, Default)]
pub struct MonitorRequest {
    /// The command, run with `sh -c`.
    pub command: String,
    /// The timeout (default 30 s).
    pub timeout_ms: Option<u64>,
    /// The working folder, inside the project root (default: the root).
    pub cwd: Option<String>,
}

/// What `ctx_tree_monitor` answers (the seed's keys, plus how it ended).
#[derive(Clone, Debug, Serialize)]
pub struct MonitorOutcome {
    /// The stored output.
    #[serde(rename = "nodeId")]
    pub node_id: String,
    /// The command, redacted.
    pub command: String,
    /// Its exit status (-1 when a signal or the timeout ended it).
    pub exit_code: i64,
    /// Whether the timeout killed it.
    pub timed_out: bool,
    /// Lines of output kept.
    pub lines_captured: usize,
    /// Secrets redacted from the command and its output.
    pub redactions: usize,
    /// Whether an identical earlier run was returned.
    pub cached: bool,
    /// The last ~500 characters of the output.
    pub preview: String,
    /// How to get the whole output.
    pub hint: String,
}

/// Runs the command and stores its output. See the module documentation.
pub fn monitor(
    graph: &mut ContextGraph,
    request: &MonitorRequest,
) -> Result<MonitorOutcome, CtxError> {
    let timeout = request.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if timeout == 0 || timeout > MAX_TIMEOUT_MS {
        return Err(CtxError::Invalid(format!(
            "timeout_ms must be between 1 and {MAX_TIMEOUT_MS}, got {timeout}"
        )));
    }
    let cwd = working_folder(graph.project_root(), request.cwd.as_deref())?;
    let options = MonitorOptions {
        timeout: Duration::from_millis(timeout),
        cwd: cwd.clone(),
        ..MonitorOptions::default()
    };
    let ran = run_command(&request.command, &options)
        .map_err(|error| CtxError::Invalid(error.to_string()))?;
    let command = redact(&request.command);
    let output = redact(&combined_output(
        &ran.stdout,
        &ran.stderr,
        ran.dropped_bytes,
    ));
    let exit_code = ran.exit_code.map_or(-1, i64::from);
    let folder = cwd
        .strip_prefix(graph.project_root())
        .unwrap_or(&cwd)
        .to_string_lossy()
        .into_owned();
    let mut outcome = MonitorOutcome {
        node_id: String::new(),
        command: command.text.clone(),
        exit_code,
        timed_out: ran.timed_out,
        lines_captured: output.text.lines().count(),
        redactions: command.count + output.count,
        cached: false,
        preview: tail(&output.text, PREVIEW_CHARS),
        hint: String::new(),
    };
    match same_earlier_run(graph, &command.text, &folder, exit_code, &output.text)? {
        Some(id) => {
            outcome.node_id = id;
            outcome.cached = true;
        }
        None => {
            let mut properties = Properties::new();
            properties.insert("role".into(), Value::from("command"));
            properties.insert("command".into(), Value::from(command.text.as_str()));
            properties.insert("title".into(), Value::from(format!("$ {}", command.text)));
            properties.insert("cwd".into(), Value::from(folder.as_str()));
            properties.insert("exit_code".into(), Value::Int(exit_code));
            properties.insert("timed_out".into(), Value::Bool(ran.timed_out));
            if let Some(signal) = ran.signal {
                properties.insert("signal".into(), Value::Int(i64::from(signal)));
            }
            properties.insert(
                "duration_ms".into(),
                Value::Int(ran.duration.as_millis() as i64),
            );
            properties.insert("text".into(), Value::from(output.text.as_str()));
            outcome.node_id = graph.add_node(NodeKind::ToolOutput, properties)?;
        }
    }
    outcome.hint = format!(
        "call ctx_tree_compose with node_ids [\"{}\"] and a budget_tokens for the whole output",
        outcome.node_id
    );
    Ok(outcome)
}

/// The folder to run in: the project root, or a folder inside it.
fn working_folder(root: &Path, cwd: Option<&str>) -> Result<PathBuf, CtxError> {
    let root = root
        .canonicalize()
        .map_err(|error| CtxError::Io(format!("cannot use the project root: {error}")))?;
    let Some(cwd) = cwd.filter(|cwd| !cwd.is_empty()) else {
        return Ok(root);
    };
    let wanted = root.join(cwd);
    let folder = wanted
        .canonicalize()
        .map_err(|_| CtxError::Invalid(format!("cwd '{cwd}' is not a folder of the project")))?;
    if !folder.starts_with(&root) {
        return Err(CtxError::Invalid(format!(
            "cwd '{cwd}' is outside the project root {}; commands run inside the project",
            root.display()
        )));
    }
    Ok(folder)
}

fn combined_output(stdout: &str, stderr: &str, dropped_bytes: u64) -> String {
    let mut text = String::new();
    if dropped_bytes > 0 {
        text.push_str(&format!(
            "[{dropped_bytes} earlier bytes of output not kept]\n"
        ));
    }
    text.push_str(stdout);
    if !stderr.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("[stderr]\n");
        text.push_str(stderr);
    }
    text
}

fn tail(text: &str, characters: usize) -> String {
    let count = text.chars().count();
    if count <= characters {
        return text.to_string();
    }
    let start = text
        .char_indices()
        .nth(count - characters)
        .map_or(0, |(at, _)| at);
    format!("…{}", &text[start..])
}

/// The newest stored run of this command in this folder, when it ended the same way with
/// the same output.
fn same_earlier_run(
    graph: &mut ContextGraph,
    command: &str,
    folder: &str,
    exit_code: i64,
    text: &str,
) -> Result<Option<String>, CtxError> {
    let result = graph.query(
        "MATCH (run:Ctx {command: $command}) WHERE run.kind = 'tool_output' AND run.status = 'live' \
         AND run.cwd = $cwd RETURN run.id, run.exit_code, run.text ORDER BY id(run) DESC LIMIT 1",
        parameters([
            ("command", Value::from(command)),
            ("cwd", Value::from(folder)),
        ]),
    )?;
    Ok(result.rows.first().and_then(|row| {
        (int_of(&row[1]) == exit_code && text_of(&row[2]) == text).then(|| text_of(&row[0]))
    }))
}
