//! Every `Example: `tool(args)` → `output`` line of docs/mcp.md runs against a built copy
//! of examples/demo through the real MCP server: the call must succeed and, where the doc
//! shows output, the answer must contain it (`…` stands for anything, `\n` for a newline).
//! So the page cannot drift from the program.

mod common;
mod mcp_client;

use mcp_client::Client;
use serde_json::{Map, Value};

const DOC: &str = include_str!("../docs/mcp.md");

/// `(tool, arguments as written, expected output or "")` for each example, in page order.
fn examples() -> Vec<(String, String, String)> {
    let text = DOC.split_whitespace().collect::<Vec<_>>().join(" ");
    let pattern = regex::Regex::new(r"Example[^:`]*: `(\w+)\(([^`]*)\)`(?: → `([^`]*)`)?").unwrap();
    pattern
        .captures_iter(&text)
        .map(|c| {
            let get = |k: usize| c.get(k).map_or("", |m| m.as_str()).to_string();
            (get(1), get(2), get(3))
        })
        .collect()
}

/// `name="x", limit=5, types=["A"]` as a JSON object (values are JSON literals).
fn arguments(written: &str, repo: &str) -> Value {
    let mut out = Map::new();
    let (mut depth, mut start, mut quoted) = (0, 0, false);
    let mut parts = Vec::new();
    for (k, ch) in written.char_indices() {
        match ch {
            '"' => quoted = !quoted,
            '[' | '{' if !quoted => depth += 1,
            ']' | '}' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                parts.push(&written[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&written[start..]);
    for part in parts.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .unwrap_or_else(|| panic!("no '=' in {part}"));
        let value = value.trim().replace("/abs/examples/demo", repo);
        let value: Value = serde_json::from_str(&value)
            .unwrap_or_else(|e| panic!("{part}: not a JSON literal ({e})"));
        out.insert(key.trim().to_string(), value);
    }
    Value::Object(out)
}

/// Whether `text` holds the pieces of `expected` (split at `…`) in order; runs of white
/// space compare equal, as the page's markdown folds them.
fn shows(text: &str, expected: &str, repo: &str) -> bool {
    let fold = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let expected = fold(
        &expected
            .replace("\\n", "\n")
            .replace("/abs/examples/demo", repo),
    );
    let text = fold(text);
    let mut rest = text.as_str();
    for piece in expected.split('…').filter(|p| !p.is_empty()) {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

#[test]
fn every_documented_example_runs_and_shows_what_the_doc_says() {
    let (_tmp, repo) = common::copy_repo("examples/demo");
    let path = common::arg(&repo).to_string();
    common::run_ok(&["build", &path]);
    // A patch, so that the delta examples have a run to show.
    let file = repo.join("src/hash.c");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        format!("{text}\nint hash_zero(void) {{ return 0; }}\n"),
    )
    .unwrap();
    common::run_ok(&["patch", &path]);
    let home = tempfile::tempdir().unwrap();
    let mut client = Client::start(home.path(), &[], &[]);
    let found = examples();
    assert!(found.len() >= 10, "only {} examples found", found.len());
    for (tool, written, expected) in found {
        let args = arguments(&written, &path);
        let (markdown, _) = client.ok(&tool, args);
        assert!(
            expected.is_empty() || shows(&markdown, &expected, &path),
            "docs/mcp.md: {tool}({written}) should show `{expected}`, but said:\n{markdown}"
        );
    }
}
