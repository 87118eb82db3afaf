//! The string lists of a `batho.yaml`. Batho reads only lists from it (`mcp.toolsets`,
//! `mcp.tools.enabled` and `.disabled`, `defines`, `include_dirs`), so a full YAML parser
//! is not needed, and this one reader serves every caller.

/// Every list of `text`, with the path of keys that leads to it (`["mcp", "tools",
/// "enabled"]`), in file order: flow items (`key: [a, "b"]`) or block items (`- a` lines
/// after a `key:` with no value), quotes removed. Comments (` #`) and blank lines are
/// skipped; a key with another value is not a list.
pub fn yaml_lists(text: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let mut lists: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let mut path: Vec<(usize, String)> = Vec::new();
    // The list that block items go to: the last key with no value.
    let mut open: Option<usize> = None;
    for raw in text.lines() {
        let line = raw.split(" #").next().unwrap_or("").trim_end();
        let body = line.trim_start();
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        if let Some(item) = body.strip_prefix("- ") {
            if let Some(at) = open {
                lists[at].1.push(unquote(item).to_string());
            }
            continue;
        }
        open = None;
        let Some((key, value)) = body.split_once(':') else {
            continue;
        };
        let indent = line.len() - body.len();
        while path.last().is_some_and(|(at, _)| *at >= indent) {
            path.pop();
        }
        path.push((indent, key.trim().to_string()));
        let keys: Vec<String> = path.iter().map(|(_, key)| key.clone()).collect();
        let value = value.trim();
        if let Some(flow) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
            let items = flow.split(',').map(unquote).filter(|i| !i.is_empty());
            lists.push((keys, items.map(str::to_string).collect()));
        } else if value.is_empty() {
            lists.push((keys, Vec::new()));
            open = Some(lists.len() - 1);
        }
    }
    lists
}

/// The items of the lists at `path` (all of them, when the key is repeated); `None` when
/// `text` has no list there.
pub fn yaml_list(text: &str, path: &[&str]) -> Option<Vec<String>> {
    let mut found: Option<Vec<String>> = None;
    for (keys, items) in yaml_lists(text) {
        if keys.iter().map(String::as_str).eq(path.iter().copied()) {
            found.get_or_insert_with(Vec::new).extend(items);
        }
    }
    found
}

fn unquote(item: &str) -> &str {
    item.trim().trim_matches(|c| c == '"' || c == '\'')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_and_block_lists_by_their_key_path() {
        let text = "\
# settings
defines: [A, \"B=1\"]   # flow
include_dirs:
  - lib
  - 'lib/common'
mcp:
  toolsets:
    - batho
  tools:
    enabled: [graph_query]
    disabled:
      - ctx_tree_browse
other: 1
  - stray
";
        assert_eq!(
            yaml_list(text, &["defines"]),
            Some(vec!["A".into(), "B=1".into()])
        );
        assert_eq!(
            yaml_list(text, &["include_dirs"]),
            Some(vec!["lib".into(), "lib/common".into()])
        );
        assert_eq!(
            yaml_list(text, &["mcp", "toolsets"]),
            Some(vec!["batho".into()])
        );
        assert_eq!(
            yaml_list(text, &["mcp", "tools", "enabled"]),
            Some(vec!["graph_query".into()])
        );
        assert_eq!(
            yaml_list(text, &["mcp", "tools", "disabled"]),
            Some(vec!["ctx_tree_browse".into()])
        );
        // Only the path named: a nested key of the same name is another list.
        assert_eq!(yaml_list(text, &["toolsets"]), None);
        // A key with a value is not a list, and an item after it belongs to none.
        assert_eq!(yaml_list(text, &["other"]), None);
        // An empty block list is a list.
        assert_eq!(yaml_list("defines:\nnext: 1\n", &["defines"]), Some(vec![]));
    }
}
