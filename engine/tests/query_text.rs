//! `text.search` and `algo.traverse` through `Database` queries on the golden graph,
//! with their argument errors.

#[path = "query_support.rs"]
mod support;

use expect_test::{Expect, expect};

/// Each query's rows on the golden graph, or its error, one block per query.
fn check(cases: &[&str], want: Expect) {
    want.assert_eq(&support::golden_rows(cases));
}

#[test]
fn search_ranks_by_bm25_over_names_and_paths() {
    check(
        &[
            "CALL text.search('luaD call') YIELD node, score RETURN node.name, round(score * 1000) / 1000",
            "CALL text.search('util') YIELD node RETURN node.name",
            "CALL text.search('src b', 3) YIELD node RETURN node.name",
            "CALL text.search('nothing_like_this') YIELD node RETURN node.name",
            "CALL text.search('helper', 0) YIELD node RETURN node.name",
        ],
        expect![[r#"
            > CALL text.search('luaD call') YIELD node, score RETURN node.name, round(score * 1000) / 1000
            'luaD_call' | 4.267
            > CALL text.search('util') YIELD node RETURN node.name
            'util'
            > CALL text.search('src b', 3) YIELD node RETURN node.name
            'b.c'
            'util'
            'lonely'
            > CALL text.search('nothing_like_this') YIELD node RETURN node.name
            > CALL text.search('helper', 0) YIELD node RETURN node.name
        "#]],
    );
}

#[test]
fn search_arguments_are_checked() {
    check(
        &[
            "CALL text.search() YIELD node RETURN node",
            "CALL text.search(3) YIELD node RETURN node",
            "CALL text.search('x', -1) YIELD node RETURN node",
        ],
        expect![[r#"
            > CALL text.search() YIELD node RETURN node
            error: error: procedure `text.search` takes 1 to 2 argument(s), 0 given
             --> line 1, column 6
              |
            1 | CALL text.search() YIELD node RETURN node
              |      ^^^^^^^^^^^
            > CALL text.search(3) YIELD node RETURN node
            error: text.search(): argument `question` must be a string, got 3 (integer)
            > CALL text.search('x', -1) YIELD node RETURN node
            error: text.search(): argument `limit` must be a non-negative integer, got -1 (integer)
        "#]],
    );
}

#[test]
fn traverse_walks_from_the_best_matches() {
    check(
        &[
            "CALL algo.traverse('helper') YIELD record, node, relationship, depth, start \
             RETURN record, node.name, startNode(relationship).name, type(relationship), endNode(relationship).name, depth, start",
            "CALL algo.traverse('helper', 'dfs', 1) YIELD record, node, relationship \
             RETURN record, node.name, type(relationship)",
            "CALL algo.traverse('helper', 'bfs', 1, true) YIELD record, node, relationship \
             RETURN record, node.name, startNode(relationship).name, endNode(relationship).name",
            "CALL algo.traverse('helper', 'bfs', 1, false, 'high') YIELD record, node, relationship \
             RETURN record, node.name, startNode(relationship).name, endNode(relationship).name",
            "CALL algo.traverse('helper', 'bfs', 0) YIELD record, node RETURN record, node.name",
            "CALL algo.traverse('no_such_thing') YIELD record RETURN record",
        ],
        expect![[r#"
            > CALL algo.traverse('helper') YIELD record, node, relationship, depth, start RETURN record, node.name, startNode(relationship).name, type(relationship), endNode(relationship).name, depth, start
            'node' | 'helper' | null | null | null | 0 | true
            'node' | 'luaD_call' | null | null | null | 1 | false
            'node' | 'util' | null | null | null | 1 | false
            'node' | 'a.c' | null | null | null | 1 | false
            'node' | 'main' | null | null | null | 1 | false
            'node' | 'counter' | null | null | null | 2 | false
            'node' | 'b.c' | null | null | null | 2 | false
            'node' | 'MAX' | null | null | null | 2 | false
            'edge' | null | 'helper' | 'CALLS' | 'luaD_call' | null | false
            'edge' | null | 'helper' | 'CALLS' | 'util' | null | false
            'edge' | null | 'a.c' | 'CONTAINS' | 'helper' | null | false
            'edge' | null | 'main' | 'CALLS' | 'helper' | null | false
            'edge' | null | 'luaD_call' | 'CALLS' | 'util' | null | false
            'edge' | null | 'luaD_call' | 'WRITES' | 'counter' | null | false
            'edge' | null | 'b.c' | 'CONTAINS' | 'luaD_call' | null | false
            'edge' | null | 'main' | 'CALLS' | 'luaD_call' | null | false
            'edge' | null | 'util' | 'CALLS' | 'luaD_call' | null | false
            'edge' | null | 'util' | 'READS' | 'counter' | null | false
            'edge' | null | 'b.c' | 'CONTAINS' | 'util' | null | false
            'edge' | null | 'a.c' | 'CONTAINS' | 'main' | null | false
            'edge' | null | 'a.c' | 'INCLUDES' | 'b.c' | null | false
            'edge' | null | 'main' | 'EXPANDS' | 'MAX' | null | false
            > CALL algo.traverse('helper', 'dfs', 1) YIELD record, node, relationship RETURN record, node.name, type(relationship)
            'node' | 'helper' | null
            'node' | 'luaD_call' | null
            'node' | 'util' | null
            'node' | 'a.c' | null
            'node' | 'main' | null
            'edge' | null | 'CALLS'
            'edge' | null | 'CALLS'
            'edge' | null | 'CONTAINS'
            'edge' | null | 'CALLS'
            > CALL algo.traverse('helper', 'bfs', 1, true) YIELD record, node, relationship RETURN record, node.name, startNode(relationship).name, endNode(relationship).name
            'node' | 'helper' | null | null
            'node' | 'luaD_call' | null | null
            'node' | 'util' | null | null
            'edge' | null | 'helper' | 'luaD_call'
            'edge' | null | 'helper' | 'util'
            > CALL algo.traverse('helper', 'bfs', 1, false, 'high') YIELD record, node, relationship RETURN record, node.name, startNode(relationship).name, endNode(relationship).name
            'node' | 'helper' | null | null
            'node' | 'util' | null | null
            'node' | 'a.c' | null | null
            'node' | 'main' | null | null
            'edge' | null | 'helper' | 'util'
            'edge' | null | 'a.c' | 'helper'
            'edge' | null | 'main' | 'helper'
            > CALL algo.traverse('helper', 'bfs', 0) YIELD record, node RETURN record, node.name
            'node' | 'helper'
            > CALL algo.traverse('no_such_thing') YIELD record RETURN record
        "#]],
    );
}

#[test]
fn traverse_arguments_are_checked() {
    check(
        &[
            "CALL algo.traverse('x', 'sideways') YIELD record RETURN record",
            "CALL algo.traverse('x', 'bfs', 'deep') YIELD record RETURN record",
            "CALL algo.traverse('x', 'bfs', 2, 'yes') YIELD record RETURN record",
            "CALL algo.traverse('x', 'bfs', 2, false, 'medium') YIELD record RETURN record",
            "CALL algo.traverse(null) YIELD record RETURN record",
        ],
        expect![[r#"
            > CALL algo.traverse('x', 'sideways') YIELD record RETURN record
            error: algo.traverse(): argument `mode` must be 'bfs' or 'dfs', got 'sideways'
            > CALL algo.traverse('x', 'bfs', 'deep') YIELD record RETURN record
            error: algo.traverse(): argument `depth` must be a non-negative integer, got 'deep' (string)
            > CALL algo.traverse('x', 'bfs', 2, 'yes') YIELD record RETURN record
            error: algo.traverse(): argument `directed` must be a boolean, got 'yes' (string)
            > CALL algo.traverse('x', 'bfs', 2, false, 'medium') YIELD record RETURN record
            error: algo.traverse(): argument `detail` must be 'all' or 'high', got 'medium'
            > CALL algo.traverse(null) YIELD record RETURN record
            error: algo.traverse(): argument `question` is required (a string)
        "#]],
    );
}
