//! The error shape every tool returns (`isError`, `Error: …` text, structured payload), and
//! the errors of starting the server.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

/// A tool failure in the spec's shape.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// `CLIENT_ERROR` (bad input, unknown names) or `SERVER_ERROR` (storage, engine).
    pub error_type: &'static str,
    /// What went wrong.
    pub message: String,
    /// Whether the same call may succeed later unchanged.
    pub retryable: bool,
    /// What to do about it.
    pub hint: Option<String>,
}

impl ToolError {
    /// A problem with the request.
    pub fn client(message: impl Into<String>) -> Self {
        ToolError {
            error_type: "CLIENT_ERROR",
            message: message.into(),
            retryable: false,
            hint: None,
        }
    }

    /// A problem on the server side.
    pub fn server(message: impl Into<String>) -> Self {
        ToolError {
            error_type: "SERVER_ERROR",
            message: message.into(),
            retryable: true,
            hint: None,
        }
    }

    /// An engine error: a client error when the request is at fault (`is_usage`), else a
    /// server error; the engine's hint (what to check), then its remedy worded for an
    /// agent.
    pub fn of_engine(
        message: impl Into<String>,
        is_usage: bool,
        hint: Option<&str>,
        remedy: Option<batho_engine::Remedy>,
    ) -> Self {
        let error = if is_usage {
            ToolError::client(message)
        } else {
            ToolError::server(message)
        };
        let error = match hint {
            Some(hint) => error.hint(hint),
            None => error,
        };
        error.remedy(remedy)
    }

    /// Adds a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Adds the way out of an error about an artifact, worded for an agent: the one place
    /// the server names the tools that build, rebuild and fix (the engine names the
    /// remedy, the CLI words it as commands).
    pub fn remedy(mut self, remedy: Option<batho_engine::Remedy>) -> Self {
        let Some(remedy) = remedy else {
            return self;
        };
        let way_out = match remedy {
            batho_engine::Remedy::Build => {
                "index the repository first: batho_build (if enabled) or 'batho build' in a terminal"
            }
            batho_engine::Remedy::Rebuild => {
                "rebuild it: batho_build with full=true (if enabled) or 'batho build --full' in a terminal; the old artifact is moved aside"
            }
            batho_engine::Remedy::Fix => {
                "call batho_fix (dry_run=true first) to verify and repair the artifact"
            }
            batho_engine::Remedy::WaitForWriter => {
                "another batho process is writing this artifact; retry when it has finished"
            }
        };
        // A hint the engine gave (what to check) comes first, the way out after it.
        let hint = match self.hint.take() {
            Some(first) => format!("{first}; {way_out}"),
            None => way_out.to_string(),
        };
        self.hint(hint)
    }

    /// The MCP result: `isError`, text `Error: …\nHint: …`, and the structured payload.
    pub fn into_result(self) -> CallToolResult {
        let mut text = format!("Error: {}", self.message);
        if let Some(h) = &self.hint {
            text.push_str("\nHint: ");
            text.push_str(h);
        }
        let mut r = CallToolResult::error(vec![ContentBlock::text(text)]);
        r.structured_content = Some(json!({
            "error": true,
            "error_type": self.error_type,
            "message": self.message,
            "retryable": self.retryable,
            "hint": self.hint,
        }));
        r
    }
}

/// Why the server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The registry or the configuration could not be read.
    #[error("{0}")]
    Config(String),
    /// A gating list names a tool that does not exist.
    #[error("{0}")]
    Gating(String),
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The MCP transport failed.
    #[error("MCP transport error: {0}")]
    Transport(String),
}
