//! The graph-algorithm procedures (`algo.pagerank`, `algo.neighbors`, `algo.affected`,
//! `db.stats`) through `Database` queries on the golden graph, with their errors.

#[path = "query_support.rs"]
mod support;

use std::collections::BTreeMap;

use batho_engine::query::Database;
use expect_test::{Expect, expect};
use support::rows_of;

/// Each query's rows on the golden graph, or its error, one block per query.
fn check(cases: &[&str], want: Expect) {
    want.assert_eq(&support::golden_rows(cases));
}

fn db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = support::golden(dir.path());
    (dir, db)
}

#[test]
fn pagerank_reads_the_stored_scores_best_first() {
    check(
        &[
            "CALL algo.pagerank() YIELD node, score RETURN node.name, score",
            "MATCH (n:Function {name: 'luaD_call'}) RETURN n.pagerank",
            "CALL algo.pagerank() YIELD node, score \
             RETURN node.file AS file, sum(score) AS rank ORDER BY rank DESC, file",
            "CALL algo.pagerank() YIELD score RETURN round(sum(score))",
            "CALL algo.pagerank(3) YIELD node, score RETURN node.name, score",
            "CALL algo.pagerank(0) YIELD node RETURN node.name",
            "CALL algo.pagerank('all') YIELD node RETURN node.name",
        ],
        expect![[r#"
            > CALL algo.pagerank() YIELD node, score RETURN node.name, score
            'luaD_call' | 2.046875
            'util' | 1.9189453125
            'counter' | 1.5966796875
            'b.c' | 0.8740234375
            'helper' | 0.673828125
            'a.c' | 0.47265625
            'main' | 0.47265625
            'lonely' | 0.47265625
            'MAX' | 0.47265625
            > MATCH (n:Function {name: 'luaD_call'}) RETURN n.pagerank
            2.046875
            > CALL algo.pagerank() YIELD node, score RETURN node.file AS file, sum(score) AS rank ORDER BY rank DESC, file
            'src/b.c' | 7.3818359375
            'src/a.c' | 1.619140625
            > CALL algo.pagerank() YIELD score RETURN round(sum(score))
            9.0
            > CALL algo.pagerank(3) YIELD node, score RETURN node.name, score
            'luaD_call' | 2.046875
            'util' | 1.9189453125
            'counter' | 1.5966796875
            > CALL algo.pagerank(0) YIELD node RETURN node.name
            > CALL algo.pagerank('all') YIELD node RETURN node.name
            error: algo.pagerank(): argument `limit` must be a non-negative integer, got 'all' (string)
        "#]],
    );
}

#[test]
fn stats_counts_once() {
    check(
        &["CALL db.stats()"],
        expect![[r#"
            > CALL db.stats()
            9 | 17 | 2 | 7 | 0 | 0.0
        "#]],
    );
}

#[test]
fn neighbors_filter_then_limit_strongest_first() {
    check(
        &[
            "CALL algo.neighbors('src/b.c:luaD_call') YIELD node, relationship, direction \
             RETURN node.name, type(relationship), relationship.confidence, direction",
            "CALL algo.neighbors('src/b.c:luaD_call', 'in', ['CALLS'], 2) \
             YIELD node, relationship, direction RETURN node.name, type(relationship), direction",
            "CALL algo.neighbors('src/b.c:luaD_call', 'out', ['WRITES', 'calls']) \
             YIELD node, relationship RETURN node.name, type(relationship)",
            "MATCH (m {name: 'main'}) CALL algo.neighbors(m, 'both', [], 1) \
             YIELD node RETURN node.name",
            "CALL algo.neighbors('src/b.c:lonely', 'both') YIELD node RETURN node.name",
        ],
        expect![[r#"
            > CALL algo.neighbors('src/b.c:luaD_call') YIELD node, relationship, direction RETURN node.name, type(relationship), relationship.confidence, direction
            'util' | 'CALLS' | 1.0 | 'in'
            'counter' | 'WRITES' | 1.0 | 'out'
            'b.c' | 'CONTAINS' | 1.0 | 'in'
            'main' | 'CALLS' | 0.95 | 'in'
            'helper' | 'CALLS' | 0.85 | 'in'
            'util' | 'CALLS' | 0.5 | 'out'
            > CALL algo.neighbors('src/b.c:luaD_call', 'in', ['CALLS'], 2) YIELD node, relationship, direction RETURN node.name, type(relationship), direction
            'util' | 'CALLS' | 'in'
            'main' | 'CALLS' | 'in'
            > CALL algo.neighbors('src/b.c:luaD_call', 'out', ['WRITES', 'calls']) YIELD node, relationship RETURN node.name, type(relationship)
            'counter' | 'WRITES'
            'util' | 'CALLS'
            > MATCH (m {name: 'main'}) CALL algo.neighbors(m, 'both', [], 1) YIELD node RETURN node.name
            'helper'
            > CALL algo.neighbors('src/b.c:lonely', 'both') YIELD node RETURN node.name
            'b.c'
        "#]],
    );
}

#[test]
fn affected_is_reverse_reachability_by_depth() {
    check(
        &[
            "CALL algo.affected('src/b.c:counter') YIELD node, depth, via, relationship \
             RETURN node.name, depth, via.name, type(relationship)",
            "CALL algo.affected('src/b.c:counter', 1) YIELD node, depth RETURN node.name, depth",
            "CALL algo.affected('src/b.c:util', 5, ['CALLS']) YIELD node, depth, via \
             RETURN node.name, depth, via.name",
            "CALL algo.affected('src/b.c:counter', 0) YIELD node RETURN node.name",
            "CALL algo.affected('src/b.c', 2, ['INCLUDES']) YIELD node, depth \
             RETURN node.name, depth",
        ],
        expect![[r#"
            > CALL algo.affected('src/b.c:counter') YIELD node, depth, via, relationship RETURN node.name, depth, via.name, type(relationship)
            'luaD_call' | 1 | 'counter' | 'WRITES'
            'util' | 1 | 'counter' | 'READS'
            'main' | 2 | 'luaD_call' | 'CALLS'
            'helper' | 2 | 'luaD_call' | 'CALLS'
            > CALL algo.affected('src/b.c:counter', 1) YIELD node, depth RETURN node.name, depth
            'luaD_call' | 1
            'util' | 1
            > CALL algo.affected('src/b.c:util', 5, ['CALLS']) YIELD node, depth, via RETURN node.name, depth, via.name
            'helper' | 1 | 'util'
            'luaD_call' | 1 | 'util'
            'main' | 2 | 'helper'
            > CALL algo.affected('src/b.c:counter', 0) YIELD node RETURN node.name
            > CALL algo.affected('src/b.c', 2, ['INCLUDES']) YIELD node, depth RETURN node.name, depth
            'a.c' | 1
        "#]],
    );
}

#[test]
fn bad_arguments_are_named() {
    check(
        &[
            "CALL algo.neighbors('src/nowhere.c:ghost') YIELD node RETURN node",
            "CALL algo.neighbors(42) YIELD node RETURN node",
            "CALL algo.neighbors('src/b.c:util', 'sideways') YIELD node RETURN node",
            "CALL algo.neighbors('src/b.c:util', 'out', ['CALLZ']) YIELD node RETURN node",
            "CALL algo.neighbors('src/b.c:util', 'out', 'CALLS', -1) YIELD node RETURN node",
            "CALL algo.affected('src/nowhere.c:ghost') YIELD node RETURN node",
            "CALL algo.affected('src/b.c:util', 'deep') YIELD node RETURN node",
            "CALL algo.affected('src/b.c:util', 2, 7) YIELD node RETURN node",
            "CALL algo.affected(null) YIELD node RETURN node",
        ],
        expect![[r#"
            > CALL algo.neighbors('src/nowhere.c:ghost') YIELD node RETURN node
            error: algo.neighbors(): node not found: no node has id 'src/nowhere.c:ghost' (ids look like 'src/lapi.c:lua_pushnil'; find one with MATCH (n {name: ...}) RETURN n.id)
            > CALL algo.neighbors(42) YIELD node RETURN node
            error: algo.neighbors(): argument `node_id` must be a node id string or a node, got 42 (integer)
            > CALL algo.neighbors('src/b.c:util', 'sideways') YIELD node RETURN node
            error: algo.neighbors(): argument `direction` must be 'out', 'in' or 'both', got 'sideways'
            > CALL algo.neighbors('src/b.c:util', 'out', ['CALLZ']) YIELD node RETURN node
            error: algo.neighbors(): unknown relationship type 'CALLZ' in `relations`; valid: CONTAINS, CALLS, INCLUDES, INHERITS, OVERRIDES, REFERENCES, READS, WRITES, EXPANDS
            > CALL algo.neighbors('src/b.c:util', 'out', 'CALLS', -1) YIELD node RETURN node
            error: algo.neighbors(): argument `limit` must be a non-negative integer, got -1 (integer)
            > CALL algo.affected('src/nowhere.c:ghost') YIELD node RETURN node
            error: algo.affected(): node not found: no node has id 'src/nowhere.c:ghost' (ids look like 'src/lapi.c:lua_pushnil'; find one with MATCH (n {name: ...}) RETURN n.id)
            > CALL algo.affected('src/b.c:util', 'deep') YIELD node RETURN node
            error: algo.affected(): argument `depth` must be a non-negative integer, got 'deep' (string)
            > CALL algo.affected('src/b.c:util', 2, 7) YIELD node RETURN node
            error: algo.affected(): argument `relations` must be a list of relationship type names, got 7 (integer)
            > CALL algo.affected(null) YIELD node RETURN node
            error: algo.affected(): argument `node_id` is required (a node id string or a node)
        "#]],
    );
}

#[test]
fn affected_is_bounded_by_the_work_limit() {
    let (_d, db) = db();
    let opts = batho_engine::query::QueryOptions {
        limits: batho_engine::query::Limits {
            max_work: 3,
            ..batho_engine::query::Limits::default()
        },
        ..Default::default()
    };
    let err = db
        .query_with(
            "CALL algo.affected('src/b.c:counter', 10) YIELD node RETURN node",
            &BTreeMap::new(),
            &opts,
        )
        .unwrap_err();
    assert!(err.to_string().contains("work"), "{err}");
}

/// With a limit, the best nodes come out as the first rows of the whole ranking, also
/// past the selection's cuts (a graph of several thousand nodes).
#[test]
fn pagerank_limit_keeps_the_head_of_the_ranking() {
    use batho_schema::{NodeFlags, NodeKind, RelType, Roles, Strategy};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut g = batho_storage::GraphBuilder::new();
    let f: Vec<_> = (0..3000)
        .map(|i| {
            support::node(
                &mut g,
                "src/big.c",
                &format!("f{i}"),
                NodeKind::Function,
                NodeFlags(0),
            )
        })
        .collect();
    // Every node calls a few others spread over the graph: ranks of many values.
    for i in 0..3000usize {
        for k in [7usize, 31, 113] {
            let j = (i * k + i / 3) % 3000;
            if j != i {
                support::edge(
                    &mut g,
                    f[i],
                    f[j],
                    RelType::Calls,
                    Roles::NONE,
                    Strategy::Direct,
                );
            }
        }
    }
    let db = support::commit(dir.path(), &g);
    let rows = |q: &str| -> Vec<String> {
        db.query(q, &BTreeMap::new())
            .expect("query")
            .rows
            .iter()
            .map(|r| format!("{} {}", r[0], r[1]))
            .collect()
    };
    let all = rows("CALL algo.pagerank() YIELD node, score RETURN node.name, score");
    assert_eq!(all.len(), 3000);
    for limit in [1usize, 5, 600, 2999, 5000] {
        let head = rows(&format!(
            "CALL algo.pagerank({limit}) YIELD node, score RETURN node.name, score"
        ));
        assert_eq!(head, all[..limit.min(3000)], "limit {limit}");
    }
}

/// Each query's rows on `db`, as [`check`] prints them.

#[test]
fn affected_passes_through_macros_at_no_cost() {
    use batho_schema::{NodeFlags, NodeKind, RelType, Roles, Strategy};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut graph = batho_storage::GraphBuilder::new();
    let plain = NodeFlags(0);
    let function = |graph: &mut batho_storage::GraphBuilder, name: &str| {
        support::node(graph, "src/x.c", name, NodeKind::Function, plain)
    };
    let target = function(&mut graph, "target");
    // Created before the macros, so it is dequeued first at depth 1 and finds `via_macros`
    // at depth 2 before the macro chain improves that to depth 1.
    let direct = function(&mut graph, "direct");
    let inner = support::node(&mut graph, "src/x.h", "INNER", NodeKind::Macro, plain);
    let outer = support::node(&mut graph, "src/x.h", "OUTER", NodeKind::Macro, plain);
    let via_macros = function(&mut graph, "via_macros");
    let caller = function(&mut graph, "caller");
    let (none, direct_strategy) = (Roles::NONE, Strategy::Direct);
    for (source, destination, relation) in [
        (direct, target, RelType::Calls),
        (inner, target, RelType::Calls),
        (outer, inner, RelType::Expands),
        (via_macros, direct, RelType::Calls),
        (via_macros, outer, RelType::Expands),
        (caller, via_macros, RelType::Calls),
    ] {
        support::edge(
            &mut graph,
            source,
            destination,
            relation,
            none,
            direct_strategy,
        );
    }
    let db = support::commit(dir.path(), &graph);
    expect![[r#"
        > CALL algo.affected('src/x.c:target', 2) YIELD node, depth, via RETURN node.name, depth, via.name
        'direct' | 1 | 'target'
        'INNER' | 1 | 'target'
        'OUTER' | 1 | 'INNER'
        'via_macros' | 1 | 'OUTER'
        'caller' | 2 | 'via_macros'
        > CALL algo.affected('src/x.c:target', 1, ['CALLS']) YIELD node, depth RETURN node.name, depth
        'direct' | 1
        'INNER' | 1
    "#]]
    .assert_eq(&rows_of(
        &db,
        &[
            "CALL algo.affected('src/x.c:target', 2) YIELD node, depth, via RETURN node.name, depth, via.name",
            "CALL algo.affected('src/x.c:target', 1, ['CALLS']) YIELD node, depth RETURN node.name, depth",
        ],
    ));
}

#[test]
fn file_rank_sums_code_above_the_floor_and_file_symbols_lists_a_file() {
    check(
        &[
            "CALL algo.file_rank() YIELD file, rank, entities RETURN file, rank, entities",
            "CALL algo.file_rank(1) YIELD file RETURN file",
            "CALL algo.file_symbols('src/b.c') YIELD node, score RETURN node.name, node.kind, score",
            "CALL algo.file_symbols('src/a.c', 2) YIELD node, score RETURN node.name, score",
            "CALL algo.file_symbols('src/a.c', 10, true) YIELD node RETURN node.name",
            "CALL algo.file_symbols('src/none.c') YIELD node RETURN node.name",
            "CALL algo.file_rank() YIELD file, rank \
             CALL algo.file_symbols(file, 1) YIELD node RETURN file, node.name",
            "CALL algo.file_symbols() YIELD node RETURN node",
            "CALL algo.file_symbols('src/a.c', -1) YIELD node RETURN node",
            "CALL algo.file_rank('all') YIELD file RETURN file",
        ],
        expect![[r#"
            > CALL algo.file_rank() YIELD file, rank, entities RETURN file, rank, entities
            'src/b.c' | 3.0205078125 | 2
            'src/a.c' | 0.201171875 | 1
            > CALL algo.file_rank(1) YIELD file RETURN file
            'src/b.c'
            > CALL algo.file_symbols('src/b.c') YIELD node, score RETURN node.name, node.kind, score
            'luaD_call' | 'Function' | 2.046875
            'util' | 'Function' | 1.9189453125
            'counter' | 'Variable' | 1.5966796875
            'lonely' | 'Function' | 0.47265625
            'MAX' | 'Macro' | 0.47265625
            > CALL algo.file_symbols('src/a.c', 2) YIELD node, score RETURN node.name, score
            'helper' | 0.673828125
            'main' | 0.47265625
            > CALL algo.file_symbols('src/a.c', 10, true) YIELD node RETURN node.name
            'helper'
            'main'
            > CALL algo.file_symbols('src/none.c') YIELD node RETURN node.name
            > CALL algo.file_rank() YIELD file, rank CALL algo.file_symbols(file, 1) YIELD node RETURN file, node.name
            'src/b.c' | 'luaD_call'
            'src/a.c' | 'helper'
            > CALL algo.file_symbols() YIELD node RETURN node
            error: error: procedure `algo.file_symbols` takes 1 to 3 argument(s), 0 given
             --> line 1, column 6
              |
            1 | CALL algo.file_symbols() YIELD node RETURN node
              |      ^^^^^^^^^^^^^^^^^
            > CALL algo.file_symbols('src/a.c', -1) YIELD node RETURN node
            error: algo.file_symbols(): argument `limit` must be a non-negative integer, got -1 (integer)
            > CALL algo.file_rank('all') YIELD file RETURN file
            error: algo.file_rank(): argument `limit` must be a non-negative integer, got 'all' (string)
        "#]],
    );
}
