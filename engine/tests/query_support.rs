//! Shared helpers for the query tests: builds small code graphs into a temporary store.
//! Included by the `query_*` tests with `#[path]`; compiled alone it has no tests.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use batho_engine::query::Database;
use batho_schema::{Language, NodeFlags, NodeKind, RelType, Roles, Strategy};
use batho_storage::{EdgeInput, GraphBuilder, IdText, NodeIdx, NodeInput, Store};

/// A node description: (file, name, kind, flags).
pub type NodeSpec<'s> = (&'s str, &'s str, NodeKind, NodeFlags);

pub fn node(
    g: &mut GraphBuilder,
    file: &str,
    name: &str,
    kind: NodeKind,
    flags: NodeFlags,
) -> NodeIdx {
    let id = if kind == NodeKind::File {
        file.to_string()
    } else {
        format!("{file}:{name}")
    };
    let n = NodeInput {
        id: IdText::Text(g.intern(&id)),
        name: g.intern(name),
        qualified_name: g.intern(name),
        kind,
        file: g.intern(file),
        language: Language::C,
        start_line: 1 + g.nodes.len() as u32,
        end_line: 3 + g.nodes.len() as u32,
        start_byte: 0,
        end_byte: 10,
        signature: g.intern(""),
        doc: batho_storage::StrId(0),
        content_hash: [7; 8],
        flags,
        community: 0,
        pagerank: 0,
    };
    g.add_node(n)
}

pub fn edge(
    g: &mut GraphBuilder,
    src: NodeIdx,
    dst: NodeIdx,
    rel: RelType,
    roles: Roles,
    strategy: Strategy,
) {
    let file = g.intern("src/a.c");
    g.add_edge(EdgeInput {
        src,
        dst,
        rel,
        roles,
        confidence: strategy.confidence(),
        strategy,
        file,
        line: 10 + g.edges.len() as u32,
        sites: batho_storage::SitesId::ONE,
    });
}

/// Commits `g` into `dir/.batho` with its PageRank (as a build stores it) and opens it.
pub fn commit(dir: &Path, g: &GraphBuilder) -> Database {
    let mut g = g.clone();
    let ranks = batho_engine::algo::pagerank(&g);
    for (n, p) in g.nodes.iter_mut().zip(ranks) {
        n.pagerank = p;
    }
    let g = &g;
    let batho = dir.join(".batho");
    let store = Store::create_or_open(&batho).expect("store");
    {
        let mut w = store.lock_writer().expect("lock");
        w.commit(g, batho_storage::fuzzing::sample_run(g))
            .expect("commit");
    }
    Database::open(dir).expect("open")
}

/// The golden graph: two files, six functions, a macro, calls with a cycle, reads with
/// roles and an include.
pub fn golden(dir: &Path) -> Database {
    let mut g = GraphBuilder::new();
    let none = NodeFlags(0);
    let exp = NodeFlags::EXPORTED;
    let fa = node(&mut g, "src/a.c", "a.c", NodeKind::File, none);
    let fb = node(&mut g, "src/b.c", "b.c", NodeKind::File, none);
    let main = node(&mut g, "src/a.c", "main", NodeKind::Function, exp);
    let helper = node(
        &mut g,
        "src/a.c",
        "helper",
        NodeKind::Function,
        NodeFlags::STATIC,
    );
    let call = node(&mut g, "src/b.c", "luaD_call", NodeKind::Function, exp);
    let util = node(&mut g, "src/b.c", "util", NodeKind::Function, exp);
    let lonely = node(&mut g, "src/b.c", "lonely", NodeKind::Function, exp);
    let var = node(&mut g, "src/b.c", "counter", NodeKind::Variable, none);
    let mac = node(&mut g, "src/b.c", "MAX", NodeKind::Macro, none);
    for (f, x) in [
        (fa, main),
        (fa, helper),
        (fb, call),
        (fb, util),
        (fb, lonely),
        (fb, var),
        (fb, mac),
    ] {
        edge(
            &mut g,
            f,
            x,
            RelType::Contains,
            Roles::DEFINITION,
            Strategy::Direct,
        );
    }
    edge(
        &mut g,
        main,
        helper,
        RelType::Calls,
        Roles::NONE,
        Strategy::Direct,
    );
    edge(
        &mut g,
        main,
        call,
        RelType::Calls,
        Roles::NONE,
        Strategy::ExactMatch,
    );
    edge(
        &mut g,
        helper,
        call,
        RelType::Calls,
        Roles::NONE,
        Strategy::ImportMap,
    );
    edge(
        &mut g,
        call,
        util,
        RelType::Calls,
        Roles::NONE,
        Strategy::Ambiguous,
    );
    edge(
        &mut g,
        util,
        call,
        RelType::Calls,
        Roles::NONE,
        Strategy::Direct,
    );
    edge(
        &mut g,
        helper,
        util,
        RelType::Calls,
        Roles::NONE,
        Strategy::Direct,
    );
    edge(
        &mut g,
        util,
        var,
        RelType::Reads,
        Roles::READ_ACCESS,
        Strategy::Direct,
    );
    edge(
        &mut g,
        call,
        var,
        RelType::Writes,
        Roles::WRITE_ACCESS,
        Strategy::Direct,
    );
    edge(
        &mut g,
        main,
        mac,
        RelType::Expands,
        Roles::NONE,
        Strategy::Direct,
    );
    edge(
        &mut g,
        fa,
        fb,
        RelType::Includes,
        Roles::IMPORT,
        Strategy::Direct,
    );
    commit(dir, &g)
}

/// Each query's rows (`a | b`, in the query's order) or its error, one block per query
/// (`> query` first): what the data-driven query tests compare with `expect!`.
pub fn rows_of(db: &Database, queries: &[&str]) -> String {
    let mut out = String::new();
    for query in queries {
        out.push_str(&format!("> {query}\n"));
        match db.query(query, &BTreeMap::new()) {
            Ok(result) => {
                for row in &result.rows {
                    let cells: Vec<String> = row.iter().map(ToString::to_string).collect();
                    out.push_str(&cells.join(" | "));
                    out.push('\n');
                }
            }
            Err(error) => out.push_str(&format!("error: {error}\n")),
        }
    }
    out
}

/// [`rows_of`] the queries on a fresh golden graph. (The `expect!` comparison stays in
/// each test file: the fuzz crate includes this file without `expect_test`.)
pub fn golden_rows(queries: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = golden(dir.path());
    rows_of(&db, queries)
}
