//! Tool gating: destructive admin tools are hidden unless enabled. Sources, applied in
//! order (later wins): the default (every [`GATED`] tool disabled), `batho.yaml` in
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

/// Tools disabled unless enabled explicitly.
pub const GATED: &[&str] = &["batho_build", "batho_export", "batho_load", "batho_gc"];

/// The set of disabled tool names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gating {
    disabled: BTreeSet<String>,
}

impl Default for Gating {
    fn default() -> Self {
        Gating {
            disabled: GATED.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl Gating {
    /// Whether `tool` is served.
    pub fn is_enabled(&self, tool: &str) -> bool {
        !self.disabled.contains(tool)
    }

    /// Enables `tools`.
    pub fn enable<'a>(&mut self, tools: impl IntoIterator<Item = &'a str>) {
        for t in tools {
            self.disabled.remove(t.trim());
        }
    }

    /// Disables `tools`.
    pub fn disable<'a>(&mut self, tools: impl IntoIterator<Item = &'a str>) {
        for t in tools {
            let t = t.trim();
            if !t.is_empty() {
                self.disabled.insert(t.to_string());
            }
        }
    }

    /// Applies the `mcp.tools` block of a `batho.yaml` file, if the file exists.
    pub fn apply_yaml_file(&mut self, path: &Path) {
        if let Ok(text) = std::fs::read_to_string(path) {
            let (enabled, disabled) = parse_yaml_tools(&text);
            self.disable(disabled.iter().map(String::as_str));
            self.enable(enabled.iter().map(String::as_str));
        }
    }

    /// Applies the environment variables.
    pub fn apply_env(&mut self) {
        if let Ok(v) = std::env::var("BATHO_MCP_TOOLS_DISABLED") {
            self.disable(v.split(','));
        }
        if let Ok(v) = std::env::var("BATHO_MCP_TOOLS_ENABLED") {
            self.enable(v.split(','));
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
        g.enable(["batho_build"]);
        assert!(g.is_enabled("batho_build"));
        g.disable([" graph_query ", ""]);
        assert!(!g.is_enabled("graph_query"));
    }
}
