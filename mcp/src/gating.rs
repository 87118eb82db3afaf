//! Tool gating: destructive admin tools are hidden unless enabled. Sources, applied in
//! order (later wins): the default (every gated tool of the catalogue disabled), `batho.yaml` in
//! `$BATHO_HOME`, then `batho.yaml` in the `--root` repository, then the
//! `BATHO_MCP_TOOLS_DISABLED` / `BATHO_MCP_TOOLS_ENABLED` environment variables
//! (comma-separated), then `--enable-tool` flags.
//!
//! `batho.yaml` is read for one small block only (a full YAML parser is not needed):
//!
//! ```yaml
//! mcp:
//!   tools:
//!     enabled: [batho_build]
//!     disabled: [graph_query]
//! ```
//!
//! Block lists (`- name` lines) are accepted as well as flow lists.

use std::collections::BTreeSet;
use std::path::Path;

use crate::catalog;

/// The set of disabled tool names, and the names given that no tool has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gating {
    disabled: BTreeSet<String>,
    /// `(where it was given, name)` for every name that is not a tool: a typo in a gating
    /// list would otherwise leave a tool off (or on) without a word.
    unknown: Vec<(String, String)>,
}

impl Default for Gating {
    fn default() -> Self {
        Gating {
            disabled: catalog::gated_names().map(str::to_string).collect(),
            unknown: Vec::new(),
        }
    }
}

impl Gating {
    /// Whether `tool` is served.
    pub fn is_enabled(&self, tool: &str) -> bool {
        !self.disabled.contains(tool)
    }

    /// Enables `tools`, named in `source` (for the report of unknown names).
    pub fn enable<'a>(&mut self, source: &str, tools: impl IntoIterator<Item = &'a str>) {
        for tool in tools.into_iter().map(str::trim).filter(|t| !t.is_empty()) {
            self.note_unknown(source, tool);
            self.disabled.remove(tool);
        }
    }

    /// Disables `tools`, named in `source`.
    pub fn disable<'a>(&mut self, source: &str, tools: impl IntoIterator<Item = &'a str>) {
        for tool in tools.into_iter().map(str::trim).filter(|t| !t.is_empty()) {
            self.note_unknown(source, tool);
            self.disabled.insert(tool.to_string());
        }
    }

    fn note_unknown(&mut self, source: &str, tool: &str) {
        if catalog::find(tool).is_none() {
            self.unknown.push((source.to_string(), tool.to_string()));
        }
    }

    /// One message naming every unknown tool name and where it was given, with the closest
    /// real name; `None` when every name is a tool.
    pub fn unknown_names(&self) -> Option<String> {
        if self.unknown.is_empty() {
            return None;
        }
        let named: Vec<String> = self
            .unknown
            .iter()
            .map(|(source, name)| {
                let close = catalog::closest_name(name, catalog::TOOLS.iter().map(|t| t.name));
                match close {
                    Some(close) => format!("'{name}' in {source} (did you mean '{close}'?)"),
                    None => format!("'{name}' in {source}"),
                }
            })
            .collect();
        Some(format!("unknown tool name {}", named.join(", ")))
    }

    /// Applies the `mcp.tools` block of a `batho.yaml` file, if the file exists.
    pub fn apply_yaml_file(&mut self, path: &Path) {
        if let Ok(text) = std::fs::read_to_string(path) {
            let (enabled, disabled) = parse_yaml_tools(&text);
            let source = path.display().to_string();
            self.disable(&source, disabled.iter().map(String::as_str));
            self.enable(&source, enabled.iter().map(String::as_str));
        }
    }

    /// Applies the environment variables.
    pub fn apply_env(&mut self) {
        if let Ok(v) = std::env::var("BATHO_MCP_TOOLS_DISABLED") {
            self.disable("BATHO_MCP_TOOLS_DISABLED", v.split(','));
        }
        if let Ok(v) = std::env::var("BATHO_MCP_TOOLS_ENABLED") {
            self.enable("BATHO_MCP_TOOLS_ENABLED", v.split(','));
        }
    }
}

/// `(enabled, disabled)` from the `mcp: tools:` block.
fn parse_yaml_tools(text: &str) -> (Vec<String>, Vec<String>) {
    let mut enabled = Vec::new();
    let mut disabled = Vec::new();
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut current: Option<bool> = None;
    for raw in text.lines() {
        let line = raw.split(" #").next().unwrap_or("").trim_end();
        let body = line.trim_start();
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let indent = line.len() - body.len();
        if let Some(item) = body.strip_prefix("- ") {
            if let Some(en) = current {
                let item = item
                    .trim()
                    .trim_matches(|c| c == '"' || c == '\'')
                    .to_string();
                if en {
                    enabled.push(item)
                } else {
                    disabled.push(item)
                }
            }
            continue;
        }
        let Some((key, value)) = body.split_once(':') else {
            continue;
        };
        while path.last().is_some_and(|(i, _)| *i >= indent) {
            path.pop();
        }
        path.push((indent, key.trim().to_string()));
        let keys: Vec<&str> = path.iter().map(|(_, k)| k.as_str()).collect();
        current = match keys.as_slice() {
            ["mcp", "tools", "enabled"] => Some(true),
            ["mcp", "tools", "disabled"] => Some(false),
            _ => None,
        };
        let value = value.trim();
        if let (Some(en), Some(list)) = (
            current,
            value.strip_prefix('[').and_then(|v| v.strip_suffix(']')),
        ) {
            for item in list.split(',') {
                let item = item.trim().trim_matches(|c| c == '"' || c == '\'');
                if !item.is_empty() {
                    if en {
                        enabled.push(item.into())
                    } else {
                        disabled.push(item.into())
                    }
                }
            }
        }
    }
    (enabled, disabled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_flow_and_block_lists() {
        let (e, d) = parse_yaml_tools(
            "other: 1\nmcp:\n  tools:\n    enabled: [batho_build, 'x']\n    disabled:\n      - graph_query # no\n      - \"y\"\nlater:\n  - z\n",
        );
        assert_eq!(e, ["batho_build", "x"]);
        assert_eq!(d, ["graph_query", "y"]);
    }

    #[test]
    fn defaults_hide_gated_tools() {
        let mut g = Gating::default();
        assert!(!g.is_enabled("batho_build"));
        assert!(g.is_enabled("graph_query"));
        g.enable("test", ["batho_build"]);
        assert!(g.is_enabled("batho_build"));
        g.disable("test", [" graph_query ", ""]);
        assert!(!g.is_enabled("graph_query"));
        assert_eq!(g.unknown_names(), None);
    }

    #[test]
    fn unknown_names_are_reported_with_the_closest_tool() {
        let mut g = Gating::default();
        g.enable("--enable-tool", ["bogus_tool", "batho_buld"]);
        let message = g.unknown_names().unwrap();
        assert!(
            message.contains("'bogus_tool' in --enable-tool"),
            "{message}"
        );
        assert!(
            message.contains("'batho_buld' in --enable-tool (did you mean 'batho_build'?)"),
            "{message}"
        );
    }
}
