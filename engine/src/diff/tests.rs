//! Builds examples/demo, edits it, rebuilds it and checks the exact change lists.

use std::path::{Path, PathBuf};

use batho_storage::Store;

use super::*;
use crate::build::{BuildOptions, artifact_dir, build};

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        if e.file_name() == ".batho" {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
}

fn demo() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("demo");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/demo"),
        &root,
    );
    (tmp, root)
}

fn rebuild(root: &Path) {
    let opts = BuildOptions {
        full: true,
        max_workers: Some(1),
        ..BuildOptions::default()
    };
    build(root, &opts, &|_| {}).unwrap();
}

fn edit(root: &Path, file: &str, from: &str, to: &str) {
    let p = root.join(file);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{file} lacks {from:?}");
    std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
}

/// `change id` lines, with `old -> new` for renames and the reasons for modifications.
fn lines(d: &GenerationDiff) -> Vec<String> {
    d.changes
        .iter()
        .map(|c| match c.change {
            ChangeKind::Renamed => format!(
                "renamed {} -> {} {:?}",
                c.before.as_ref().unwrap().id,
                c.after.as_ref().unwrap().id,
                c.changed
            ),
            ChangeKind::Modified => format!("modified {} {:?}", c.current().id, c.changed),
            k => format!("{k} {}", c.current().id),
        })
        .collect()
}

const HASH_C: &str = "src/hash.c";

/// Three generations: the demo; `mix` renamed, `hash_djb2` changed, `hash_zero` added and a
/// blank line inserted at the top; `hash_zero` removed again.
fn three_generations() -> (tempfile::TempDir, PathBuf, [u64; 3]) {
    let (tmp, root) = demo();
    rebuild(&root);
    edit(&root, HASH_C, "#include", "\n#include");
    for _ in 0..3 {
        edit(&root, HASH_C, "mix(", "mix64(");
    }
    edit(&root, HASH_C, "h * 33 + c", "h * 31 + c");
    let p = root.join(HASH_C);
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str(
        "\nunsigned long hash_zero(const char *key)\n{\n    (void)key;\n    return 0;\n}\n",
    );
    std::fs::write(&p, &text).unwrap();
    rebuild(&root);
    edit(
        &root,
        HASH_C,
        "\nunsigned long hash_zero(const char *key)\n{\n    (void)key;\n    return 0;\n}\n",
        "",
    );
    rebuild(&root);
    let store = Store::create_or_open(&artifact_dir(&root)).unwrap();
    let gens: Vec<u64> = store.runs().unwrap().iter().map(|r| r.generation).collect();
    (tmp, root, [gens[0], gens[1], gens[2]])
}

#[test]
fn exact_changes_between_generations_including_a_rename() {
    let (_tmp, root, [g1, g2, g3]) = three_generations();
    let dir = artifact_dir(&root);
    let a1 = Artifact::open_generation(&dir, g1).unwrap();
    let a2 = Artifact::open_generation(&dir, g2).unwrap();
    let a3 = Artifact::open_generation(&dir, g3).unwrap();

    let d = diff_generations(&a1, &a2, &DiffFilter::default());
    assert_eq!(
        lines(&d),
        [
            "modified src/hash.c [\"content\", \"entities\"]",
            "renamed src/hash.c:mix -> src/hash.c:mix64 [\"name\", \"content\"]",
            "modified src/hash.c:hash_fnv1a [\"content\"]",
            "modified src/hash.c:hash_djb2 [\"content\"]",
            "added src/hash.c:hash_zero",
        ]
    );
    let s = &d.stats;
    assert_eq!(
        (
            s.nodes_added,
            s.nodes_removed,
            s.nodes_modified,
            s.nodes_renamed
        ),
        (1, 0, 3, 1)
    );
    assert_eq!(
        (s.files_added, s.files_removed, s.files_modified),
        (0, 0, 1)
    );
    // Calls to the renamed function follow it: no relationship changed, only the
    // new function's CONTAINS edge from its file was added.
    assert_eq!((s.edges_added, s.edges_removed), (1, 0));
    assert_eq!(
        s.edges_by_type.keys().copied().collect::<Vec<_>>(),
        ["CONTAINS"]
    );
    assert_eq!(d.files.len(), 1);
    assert_eq!(
        (d.files[0].added, d.files[0].modified, d.files[0].renamed),
        (1, 3, 1)
    );
    let renamed = d
        .changes
        .iter()
        .find(|c| c.change == ChangeKind::Renamed)
        .unwrap();
    let (b, a) = (
        renamed.before.as_ref().unwrap(),
        renamed.after.as_ref().unwrap(),
    );
    assert_eq!((b.name.as_str(), a.name.as_str()), ("mix", "mix64"));
    assert_eq!((b.kind, b.start_line + 1), (a.kind, a.start_line));
    // Other files did not change.
    assert!(d.changes.iter().all(|c| c.current().file == HASH_C));

    let d = diff_generations(&a2, &a3, &DiffFilter::default());
    assert_eq!(
        lines(&d),
        [
            "modified src/hash.c [\"content\", \"entities\"]",
            "removed src/hash.c:hash_zero"
        ]
    );
    assert_eq!((d.stats.edges_added, d.stats.edges_removed), (0, 1));

    let same = diff_generations(&a3, &a3, &DiffFilter::default());
    assert!(same.changes.is_empty() && same.files.is_empty());
    assert_eq!(same.stats, DiffStats::default());
}

#[test]
fn filters_and_pagination() {
    let (_tmp, root, [g1, g2, _]) = three_generations();
    let dir = artifact_dir(&root);
    let a1 = Artifact::open_generation(&dir, g1).unwrap();
    let a2 = Artifact::open_generation(&dir, g2).unwrap();
    let f = |kinds: Vec<ChangeKind>, file: Option<&str>, entity: Option<&str>| DiffFilter {
        kinds,
        file: file.map(str::to_string),
        entity: entity.map(str::to_string),
        ..DiffFilter::default()
    };
    let d = diff_generations(&a1, &a2, &f(vec![ChangeKind::Modified], None, None));
    assert_eq!(d.total, 3);
    assert_eq!(d.matching.get("modified"), Some(&3));
    let d = diff_generations(&a1, &a2, &f(vec![], Some("src/table"), None));
    assert_eq!((d.total, d.files.len()), (0, 0));
    let d = diff_generations(&a1, &a2, &f(vec![], Some("src/"), None));
    assert_eq!(d.total, 5);
    let d = diff_generations(&a1, &a2, &f(vec![], None, Some("src/hash.c:mix")));
    assert_eq!(lines(&d).len(), 1);
    assert_eq!(d.changes[0].change, ChangeKind::Renamed);
    let page = DiffFilter {
        offset: 1,
        limit: Some(2),
        ..DiffFilter::default()
    };
    let d = diff_generations(&a1, &a2, &page);
    assert_eq!((d.total, d.changes.len()), (5, 2));
    assert_eq!(d.changes[0].current().id, "src/hash.c:mix64");
}

#[test]
fn runs_resolve_to_their_predecessor_and_pruned_generations_are_named() {
    let (_tmp, root, [g1, g2, g3]) = three_generations();
    let dir = artifact_dir(&root);
    let store = Store::create_or_open(&dir).unwrap();
    let runs = store.runs().unwrap();
    // Default: the latest run, against the run before it.
    let p = resolve_delta(&dir, None).unwrap();
    assert_eq!((p.base_generation, p.generation), (g2, g3));
    // By unique prefix.
    let p = resolve_delta(&dir, Some(&runs[1].uuid[..8])).unwrap();
    assert_eq!((p.base_generation, p.generation), (g1, g2));
    assert!(matches!(
        resolve_delta(&dir, Some(&runs[0].uuid)),
        Err(DiffError::NoPredecessor { .. })
    ));
    let e = resolve_delta(&dir, Some("zzzz")).unwrap_err();
    assert!(matches!(e, DiffError::UnknownRun { .. }), "{e}");
    assert!(e.hint().unwrap().contains(&runs[2].uuid));
    // Since a generation, up to the current one.
    let p = resolve_since(&dir, &g1.to_string(), None).unwrap();
    let d = diff_runs(&dir, &p, &DiffFilter::default()).unwrap();
    assert_eq!(
        lines(&d.diff),
        [
            "modified src/hash.c [\"content\", \"entities\"]",
            "renamed src/hash.c:mix -> src/hash.c:mix64 [\"name\", \"content\"]",
            "modified src/hash.c:hash_fnv1a [\"content\"]",
            "modified src/hash.c:hash_djb2 [\"content\"]",
        ]
    );
    // A generation that never existed, and one deleted from disk.
    let e = open_generation(&dir, 99).unwrap_err();
    assert!(matches!(e, DiffError::NoSuchGeneration { .. }), "{e}");
    std::fs::remove_file(dir.join("manifests").join(format!("{g1:020}.manifest"))).unwrap();
    let e = diff_runs(
        &dir,
        &resolve_delta(&dir, Some(&runs[1].uuid)).unwrap(),
        &DiffFilter::default(),
    )
    .unwrap_err();
    assert!(
        matches!(e, DiffError::Pruned { generation, .. } if generation == g1),
        "{e}"
    );
    assert!(e.to_string().contains("pruned"), "{e}");
    assert_eq!(
        e.hint().unwrap(),
        format!("retained generations: {g2}, {g3}")
    );
}

#[test]
fn time_travel_reads_an_older_generation_and_procedures_report_the_delta() {
    use crate::query::{Database, QueryError, Value};
    use std::collections::BTreeMap;
    let (_tmp, root, [g1, g2, g3]) = three_generations();
    let db = Database::open(&root).unwrap();
    assert_eq!(db.generation(), g3);
    let p = BTreeMap::new();
    let callees = |q: &str| -> Vec<Value> {
        db.query(q, &p)
            .unwrap_or_else(|e| panic!("{q}\n{e}"))
            .rows
            .into_iter()
            .map(|mut r| r.remove(0))
            .collect()
    };
    let q = "MATCH (:Function {name: 'hash_fnv1a'})-[:CALLS]->(g) RETURN g.name";
    assert_eq!(callees(q), [Value::from("mix64")]);
    assert_eq!(
        callees(&format!("AT GENERATION {g1} {q}")),
        [Value::from("mix")]
    );
    let runs = Store::create_or_open(&artifact_dir(&root))
        .unwrap()
        .runs()
        .unwrap();
    let prefix = &runs[0].uuid[..8];
    assert_eq!(
        callees(&format!("AT RUN '{prefix}' {q}")),
        [Value::from("mix")]
    );
    // The current generation by number is the current artifact; a script mixes both.
    assert_eq!(
        callees(&format!("AT GENERATION {g3} {q}")),
        [Value::from("mix64")]
    );
    let two = format!(
        "AT GENERATION {g2} MATCH (f {{name: 'hash_zero'}}) RETURN count(f); MATCH (f {{name: 'hash_zero'}}) RETURN count(f)"
    );
    assert_eq!(callees(&two), [Value::Int(0)]);
    assert_eq!(
        callees(&format!(
            "AT GENERATION {g2} MATCH (f {{name: 'hash_zero'}}) RETURN count(f)"
        )),
        [Value::Int(1)]
    );
    // Nodes of an older generation come back as property maps.
    let nodes = callees(&format!(
        "AT GENERATION {g1} MATCH (f:Function {{name: 'mix'}}) RETURN f"
    ));
    match &nodes[0] {
        Value::Map(m) => {
            assert_eq!(m["id"], Value::from("src/hash.c:mix"));
            assert_eq!(m["_generation"], Value::Int(g1 as i64));
        }
        other => panic!("{other:?}"),
    }
    let plan = db
        .query(&format!("EXPLAIN AT RUN '{prefix}' {q}"), &p)
        .unwrap()
        .plan
        .unwrap();
    assert!(
        plan.starts_with(&format!("AtGeneration({g1}, run '{prefix}')\n")),
        "{plan}"
    );
    // Errors name the retained generations.
    let e = db.query(&format!("AT GENERATION 99 {q}"), &p).unwrap_err();
    assert!(matches!(e, QueryError::TimeTravel { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "Generation 99 does not exist (the current generation is {g3}); retained generations: {g1}, {g2}, {g3}"
        )
    );
    let e = db.query(&format!("AT RUN 'nope' {q}"), &p).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("Run not found: nope; the newest runs: "),
        "{e}"
    );

    // db.delta / db.deltaStats: the latest run's delta by default.
    let rows = db
        .query(
            "CALL db.delta() YIELD change, id, before_id RETURN change, id, before_id",
            &p,
        )
        .unwrap()
        .rows;
    assert_eq!(
        rows,
        [
            vec![
                Value::from("modified"),
                Value::from("src/hash.c"),
                Value::from("src/hash.c")
            ],
            vec![
                Value::from("removed"),
                Value::from("src/hash.c:hash_zero"),
                Value::from("src/hash.c:hash_zero")
            ],
        ]
    );
    let rows = db
        .query(
            &format!("CALL db.delta(null, 'renamed', 'src/', null, '{g1}') YIELD before_name, name RETURN before_name, name"),
            &p,
        )
        .unwrap()
        .rows;
    assert_eq!(rows, [vec![Value::from("mix"), Value::from("mix64")]]);
    let stats = db
        .query(
            &format!("CALL db.deltaStats('{}') YIELD nodes_added, nodes_renamed, edges_by_type, base_generation RETURN nodes_added, nodes_renamed, edges_by_type, base_generation", runs[1].uuid),
            &p,
        )
        .unwrap();
    assert_eq!(
        stats.columns,
        [
            "nodes_added",
            "nodes_renamed",
            "edges_by_type",
            "base_generation"
        ]
    );
    assert_eq!(stats.rows[0][0], Value::Int(1));
    assert_eq!(stats.rows[0][1], Value::Int(1));
    assert_eq!(stats.rows[0][3], Value::Int(g1 as i64));
    let e = db
        .query("CALL db.delta(null, 'moved') YIELD id RETURN id", &p)
        .unwrap_err();
    assert!(e.to_string().contains("Invalid change_kind 'moved'"), "{e}");
}

/// A graph of one file `a.c` (file node hashed `file_hash`) with functions `f` (hash
/// `f_hash`) and `g`, `f` calling `g`.
fn tiny(file_hash: u8, f_hash: u8) -> batho_storage::GraphBuilder {
    use batho_schema::{Language, NodeFlags, NodeKind, RelType, Roles, Strategy};
    use batho_storage::{EdgeInput, GraphBuilder, NodeInput};
    let mut g = GraphBuilder::new();
    let empty = g.intern("");
    let file = g.intern("a.c");
    let node = |g: &mut GraphBuilder, id: &str, name: &str, kind, hash: u8, line| {
        let (id, name) = (batho_storage::IdText::Text(g.intern(id)), g.intern(name));
        g.add_node(NodeInput {
            id,
            name,
            qualified_name: name,
            kind,
            file,
            language: Language::C,
            start_line: line,
            end_line: line + 1,
            start_byte: 0,
            end_byte: 10,
            signature: empty,
            doc: batho_storage::StrId(0),
            content_hash: [hash; 8],
            flags: NodeFlags::default(),
            community: 0,
            pagerank: 0,
        })
    };
    node(&mut g, "a.c", "a.c", NodeKind::File, file_hash, 1);
    let f = node(&mut g, "a.c:f", "f", NodeKind::Function, f_hash, 3);
    let gg = node(&mut g, "a.c:g", "g", NodeKind::Function, 9, 6);
    g.add_edge(EdgeInput {
        src: f,
        dst: gg,
        rel: RelType::Calls,
        roles: Roles::NONE,
        confidence: 1.0,
        strategy: Strategy::Direct,
        file,
        line: 4,
        sites: batho_storage::SitesId::ONE,
    });
    g
}

#[test]
fn files_with_an_unchanged_content_hash_are_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create_or_open(tmp.path()).unwrap();
    let commit = |g: &batho_storage::GraphBuilder| {
        let run = batho_storage::fuzzing::sample_run(g);
        store
            .lock_writer()
            .unwrap()
            .commit(g, run)
            .unwrap()
            .generation
    };
    let g1 = commit(&tiny(1, 2));
    // Same file bytes (hash 1): the file is matched without comparing its entities, even
    // though the stored entity hash differs (which real builds never produce).
    let g2 = commit(&tiny(1, 3));
    // New file bytes: compared entity by entity.
    let g3 = commit(&tiny(4, 3));
    let open = |g| Artifact::open_generation(tmp.path(), g).unwrap();
    let d = diff_generations(&open(g1), &open(g2), &DiffFilter::default());
    assert_eq!(d.stats.files_skipped_by_hash, 1);
    assert!(d.changes.is_empty());
    let d = diff_generations(&open(g1), &open(g3), &DiffFilter::default());
    assert_eq!(d.stats.files_skipped_by_hash, 0);
    assert_eq!(
        lines(&d),
        [
            "modified a.c [\"content\", \"entities\"]",
            "modified a.c:f [\"content\"]"
        ]
    );
    // The call edge is unchanged: its source and target are matched.
    assert_eq!((d.stats.edges_added, d.stats.edges_removed), (0, 0));
}
