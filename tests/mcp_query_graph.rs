//! The Astria `query_graph` tool on the demo repository, through the real `batho mcp`:
//! the seed's output grammar, exact o200k budgets, cursors that visit every record once,
//! detail high, direction, and refused arguments.

mod common;
mod mcp_client;

use mcp_client::{Client, demo};
use serde_json::{Value, json};

const QUESTION: &str = "where is the hash of a table key computed";

/// The NODE and EDGE lines of an answer.
fn records(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("NODE ") || l.starts_with("EDGE "))
        .map(str::to_string)
        .collect()
}

/// Follows the continuation cursors from 0 at `budget`; returns every page's records,
/// checking each page's size and footer on the way.
fn follow_cursors(c: &mut Client, budget: u64) -> Vec<String> {
    let footer = regex::Regex::new(
        r"^\(continuation: re-run with cursor (\d+) for the next \d+ of \d+ records\)$",
    )
    .unwrap();
    let (mut cursor, mut seen, mut pages) = (0u64, Vec::new(), 0);
    loop {
        let (text, structured) = c.ok(
            "query_graph",
            json!({"question": QUESTION, "budget": budget, "cursor": cursor}),
        );
        let used = batho_mcp::tokens::count(&text);
        assert!(
            used as u64 <= budget,
            "{used} tokens over {budget}:\n{text}"
        );
        assert_eq!(structured["meta"]["o200k_tokens"], used);
        assert_eq!(structured["meta"]["o200k_budget"], budget);
        // The page is cut by exact count only; the estimate of max_tokens cuts nothing.
        assert_eq!(structured["meta"]["truncated"], false, "{structured}");
        assert!(
            structured["meta"].get("token_budget").is_none(),
            "{structured}"
        );
        assert!(
            text.starts_with("Traversal: BFS depth=2 | Start: ["),
            "{text}"
        );
        let page = records(&text);
        assert!(!page.is_empty(), "a page must make progress:\n{text}");
        seen.extend(page);
        pages += 1;
        let last = text.lines().last().unwrap();
        match footer.captures(last) {
            Some(next) => {
                cursor = next[1].parse().unwrap();
                assert_eq!(structured["next_cursor"], cursor);
                assert_eq!(cursor as usize, seen.len());
            }
            None => {
                assert_eq!(structured["next_cursor"], Value::Null);
                break;
            }
        }
    }
    assert!(pages > 1, "budget {budget} should need several pages");
    seen
}

#[test]
fn answers_follow_the_seed_grammar() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (text, structured) = c.ok("query_graph", json!({"question": QUESTION}));
    let header =
        regex::Regex::new(r"^Traversal: BFS depth=2 \| Start: \[[^\]]+\] \| (\d+) nodes found$")
            .unwrap();
    let node =
        regex::Regex::new(r"^NODE \S+ \[id=\S+ src=(\S+:\d+|external) community=\d+\]$").unwrap();
    let edge = regex::Regex::new(
        r"^EDGE \S+ --[a-z_]+ \[(EXTRACTED|RESOLVED|DECLARED|INFERRED)\]--> \S+( @\S+)?$",
    )
    .unwrap();
    let mut lines = text.lines();
    let first = lines.next().unwrap();
    let found: usize = header.captures(first).expect(first)[1].parse().unwrap();
    let (mut nodes, mut edges) = (0, 0);
    for line in lines {
        if node.is_match(line) {
            assert_eq!(edges, 0, "NODE lines come first: {line}");
            nodes += 1;
        } else {
            assert!(edge.is_match(line), "{line}");
            edges += 1;
        }
    }
    assert_eq!(nodes, found);
    assert!(edges > 0, "{text}");
    assert!(
        text.contains("NODE hash_djb2 [id=src/hash.c:hash_djb2 src=src/hash.c:"),
        "{text}"
    );
    assert_eq!(structured["nodes"].as_array().unwrap().len(), nodes);
    assert_eq!(structured["records"], nodes + edges);
    let query = structured["meta"]["query"].as_str().unwrap();
    assert!(
        query.starts_with("CALL algo.traverse($question, $mode, $depth"),
        "{query}"
    );
    assert_eq!(structured["meta"]["params"]["question"], QUESTION);
    let (dfs, _) = c.ok(
        "query_graph",
        json!({"question": QUESTION, "mode": "dfs", "depth": 1}),
    );
    assert!(
        dfs.starts_with("Traversal: DFS depth=1 | Start: ["),
        "{dfs}"
    );
}

#[test]
fn cursors_visit_every_record_exactly_once() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (whole, structured) = c.ok(
        "query_graph",
        json!({"question": QUESTION, "budget": 1_000_000}),
    );
    let all = records(&whole);
    assert_eq!(structured["records"], all.len());
    assert!(!whole.contains("continuation"), "{whole}");
    for budget in [120, 200, 333] {
        assert_eq!(follow_cursors(&mut c, budget), all, "budget {budget}");
    }
}

#[test]
fn detail_high_keeps_extracted_and_resolved_facts() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (all, _) = c.ok(
        "query_graph",
        json!({"question": QUESTION, "budget": 100_000}),
    );
    let (high, _) = c.ok(
        "query_graph",
        json!({"question": QUESTION, "budget": 100_000, "detail": "high"}),
    );
    let class_of = |line: &&str| {
        ["EXTRACTED", "RESOLVED", "DECLARED", "INFERRED"]
            .into_iter()
            .find(|class| line.contains(&format!("[{class}]")))
            .unwrap_or("none")
    };
    let classes = |text: &str| -> Vec<&'static str> {
        records(text)
            .iter()
            .filter(|l| l.starts_with("EDGE "))
            .map(|l| class_of(&l.as_str()))
            .collect()
    };
    // The filter has something to drop, and drops exactly the two weaker classes.
    assert!(
        classes(&all)
            .iter()
            .any(|c| *c == "DECLARED" || *c == "INFERRED"),
        "{all}"
    );
    let high_classes = classes(&high);
    assert!(high_classes.contains(&"RESOLVED"), "{high}");
    assert!(
        high_classes
            .iter()
            .all(|c| *c == "EXTRACTED" || *c == "RESOLVED"),
        "{high}"
    );
}

#[test]
fn directed_walks_follow_stored_arrows_only() {
    let (_tmp, _home, _repo, mut c) = demo();
    // At depth 1 only the start nodes expand: a directed walk leaves them by their
    // out-edges only, an undirected one also reaches their callers, whose edges keep the
    // stored arrow (caller --calls--> start).
    let ask = |c: &mut Client, directed: bool| {
        let (_, structured) = c.ok(
            "query_graph",
            json!({"question": "hash_djb2", "depth": 1, "directed": directed, "budget": 100_000}),
        );
        let starts: Vec<String> = structured["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["start"] == json!(true))
            .map(|n| n["name"].as_str().unwrap().to_string())
            .collect();
        let edges: Vec<(String, String)> = structured["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["source"].as_str().unwrap().to_string(),
                    e["target"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        (starts, edges)
    };
    let (starts, directed) = ask(&mut c, true);
    assert!(starts.iter().any(|s| s == "hash_djb2"), "{starts:?}");
    assert!(!directed.is_empty());
    assert!(
        directed.iter().all(|(source, _)| starts.contains(source)),
        "{directed:?}"
    );
    let (_, undirected) = ask(&mut c, false);
    assert!(
        undirected
            .iter()
            .any(|(source, target)| !starts.contains(source) && starts.contains(target)),
        "{undirected:?}"
    );
}

#[test]
fn bad_arguments_are_refused() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (text, structured) = c.err("query_graph", json!({"question": "hash", "depht": 2}));
    assert!(
        text.contains("Unknown argument 'depht' for query_graph"),
        "{text}"
    );
    assert_eq!(structured["hint"], "did you mean 'depth'?");
    for (args, says) in [
        (json!({}), "question"),
        (json!({"question": "  "}), "question must not be empty"),
        (
            json!({"question": "hash", "mode": "sideways"}),
            "unknown variant `sideways`",
        ),
        (
            json!({"question": "hash", "depth": 7}),
            "depth must be between 0 and 6",
        ),
        (
            json!({"question": "hash", "budget": 0}),
            "budget must be a positive integer",
        ),
        (
            json!({"question": "hash", "budget": 12}),
            "too small for the header and one record",
        ),
        (
            json!({"question": "hash", "cursor": 100000}),
            "past the last record",
        ),
        (
            json!({"question": "hash", "detail": "medium"}),
            "unknown variant `medium`",
        ),
    ] {
        let (text, _) = c.err("query_graph", args.clone());
        assert!(text.contains(says), "{args}: {text}");
    }
}

#[test]
fn unmatched_questions_answer_an_empty_traversal() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (text, structured) = c.ok("query_graph", json!({"question": "zzqx_nothing"}));
    assert_eq!(text, "Traversal: BFS depth=2 | Start: [] | 0 nodes found\n");
    assert_eq!(structured["records"], 0);
}
