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
//!
//! Tool families narrow the listing the same way (`mcp: toolsets: [batho, astria]`, then
//! `BATHO_MCP_TOOLSETS`, then `--toolsets`; the last one given wins): a tool is served
//! when its family is chosen (default: every family) and it is not disabled.

use std::collections::BTreeSet;
use std::path::Path;

use crate::catalog::{self, Family};
use batho_engine::yaml_lists::yaml_list;

/// The set of disabled tool names, and the names given that no tool has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gating {
    disabled: BTreeSet<String>,
    /// The families served (`--toolsets`); every family unless narrowed.
    families: Vec<Family>,
    /// `(where it was given, name)` for every name that is not a tool: a typo in a gating
    /// list would otherwise leave a tool off (or on) without a word.
    unknown: Vec<(String, String)>,
    /// The same for toolset names.
    unknown_toolsets: Vec<(String, String)>,
}

impl Default for Gating {
    fn default() -> Self {
        Gating {
            disabled: catalog::gated_names().map(str::to_string).collect(),
            families: Family::ALL.to_vec(),
            unknown: Vec::new(),
            unknown_toolsets: Vec::new(),
        }
    }
}

impl Gating {
    /// Whether `tool` is served.
    pub fn is_enabled(&self, tool: &str) -> bool {
        let family_served =
            catalog::find(tool).is_none_or(|def| self.families.contains(&def.family));
        family_served && !self.disabled.contains(tool)
    }

    /// Serves only the families named in `names` (comma-separated lists allowed), named
    /// in `source`; an unknown family is reported like an unknown tool.
    pub fn set_toolsets<'a>(&mut self, source: &str, names: impl IntoIterator<Item = &'a str>) {
        let mut families = Vec::new();
        for name in names.into_iter().flat_map(|n| n.split(',')).map(str::trim) {
            match Family::from_name(&name.to_ascii_lowercase()) {
                Some(family) if !families.contains(&family) => families.push(family),
                Some(_) => {}
                None if name.is_empty() => {}
                None => self
                    .unknown_toolsets
                    .push((source.to_string(), name.to_string())),
            }
        }
        self.families = families;
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
        let describe = |names: &[(String, String)], candidates: &[&'static str]| {
            names
                .iter()
                .map(|(source, name)| {
                    match catalog::closest_name(name, candidates.iter().copied()) {
                        Some(close) => format!("'{name}' in {source} (did you mean '{close}'?)"),
                        None => format!("'{name}' in {source}"),
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let tool_names: Vec<&'static str> = catalog::TOOLS.iter().map(|t| t.name).collect();
        let family_names: Vec<&'static str> = Family::ALL.iter().map(|f| f.name()).collect();
        let mut parts = Vec::new();
        if !self.unknown.is_empty() {
            parts.push(format!(
                "unknown tool name {}",
                describe(&self.unknown, &tool_names)
            ));
        }
        if !self.unknown_toolsets.is_empty() {
            parts.push(format!(
                "unknown toolset {} (toolsets: {})",
                describe(&self.unknown_toolsets, &family_names),
                family_names.join(", ")
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// Applies the `mcp.tools` block of a `batho.yaml` file, if the file exists.
    pub fn apply_yaml_file(&mut self, path: &Path) {
        if let Ok(text) = std::fs::read_to_string(path) {
            let (enabled, disabled) = parse_yaml_tools(&text);
            let source = path.display().to_string();
            self.disable(&source, disabled.iter().map(String::as_str));
            self.enable(&source, enabled.iter().map(String::as_str));
            if let Some(toolsets) = parse_yaml_toolsets(&text) {
                self.set_toolsets(&source, toolsets.iter().map(String::as_str));
            }
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
        if let Ok(v) = std::env::var("BATHO_MCP_TOOLSETS") {
            self.set_toolsets("BATHO_MCP_TOOLSETS", [v.as_str()]);
        }
    }
}

/// The `mcp: toolsets:` list (flow `[a, b]` or block `- a` lines), when there is one.
fn parse_yaml_toolsets(text: &str) -> Option<Vec<String>> {
    yaml_list(text, &["mcp", "toolsets"])
}

/// `(enabled, disabled)` from the `mcp: tools:` block.
fn parse_yaml_tools(text: &str) -> (Vec<String>, Vec<String>) {
    let list = |key: &str| yaml_list(text, &["mcp", "tools", key]).unwrap_or_default();
    (list("enabled"), list("disabled"))
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
    fn toolsets_narrow_the_families_and_refuse_unknown_names() {
        assert_eq!(
            parse_yaml_toolsets("mcp:\n  toolsets: [astria]\n"),
            Some(vec!["astria".to_string()])
        );
        assert_eq!(
            parse_yaml_toolsets("mcp:\n  toolsets:\n    - batho\n    - 'astria'\nnext: 1\n"),
            Some(vec!["batho".to_string(), "astria".to_string()])
        );
        assert_eq!(parse_yaml_toolsets("other:\n  toolsets: [astria]\n"), None);
        let mut g = Gating::default();
        assert!(g.is_enabled("explain") && g.is_enabled("graph_query"));
        g.set_toolsets("--toolsets", ["astria"]);
        assert!(g.is_enabled("explain") && !g.is_enabled("graph_query"));
        g.set_toolsets("--toolsets", ["Batho,astria"]);
        assert!(g.is_enabled("explain") && g.is_enabled("graph_query"));
        assert_eq!(g.unknown_names(), None);
        g.set_toolsets("--toolsets", ["batho", "astira"]);
        let message = g.unknown_names().unwrap();
        assert!(
            message.contains("unknown toolset 'astira' in --toolsets (did you mean 'astria'?)"),
            "{message}"
        );
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
