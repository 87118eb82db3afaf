//! Build tests on a temporary repository: reproducibility of the artifact.

use std::collections::BTreeMap;
use std::path::Path;

use super::{BuildOptions, artifact_dir, build};

/// Every segment file of the artifact with its bytes.
fn segments(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let dir = artifact_dir(root).join("segments");
    std::fs::read_dir(&dir)
        .expect("segments folder")
        .map(|e| {
            let e = e.expect("dir entry");
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).expect("segment"),
            )
        })
        .collect()
}

fn write_repo(root: &Path) {
    let files = [
        (
            "include/api.h",
            "#define API_MAX 4\nint api_call(int x);\nstruct Obj { int (*cb)(int); int v; };\n",
        ),
        (
            "src/api.c",
            "#include \"api.h\"\n#include <stdio.h>\nstatic int helper(int x) { return x * API_MAX; }\nint api_call(int x) { printf(\"%d\", x); return helper(x) + unknown_fn(x); }\n",
        ),
        (
            "src/user.c",
            "#include \"../include/api.h\"\nstatic int helper(int y) { return y; }\nint use(struct Obj *o) { o->v = helper(1); return o->cb(api_call(2)); }\n",
        ),
        (
            "cpp/shape.hpp",
            "namespace geo { class Shape { public: virtual double area() const = 0; virtual ~Shape(); }; }\n",
        ),
        (
            "cpp/circle.cpp",
            "#include \"shape.hpp\"\nnamespace geo { class Circle : public Shape { public: double area() const override { return 3.0 * r * r; } double r; }; }\ndouble total(geo::Shape &s) { return s.area(); }\n",
        ),
    ];
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
}

/// Two full builds of one tree, on one and on two threads, write byte-identical segments
/// (the run record lives in the manifest, not in segments).
#[test]
fn rebuilding_the_same_tree_gives_byte_identical_segments() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    write_repo(root);
    let one = build(
        root,
        &BuildOptions {
            full: true,
            max_workers: Some(1),
            ..BuildOptions::default()
        },
        &|_| {},
    )
    .expect("first build");
    let first = segments(root);
    assert_eq!(first.len(), 4, "one segment per base kind");
    let two = build(
        root,
        &BuildOptions {
            full: true,
            max_workers: Some(2),
            ..BuildOptions::default()
        },
        &|_| {},
    )
    .expect("second build");
    assert!(two.run.generation > one.run.generation);
    assert_eq!(
        segments(root),
        first,
        "the second build wrote different segments"
    );
    assert!(one.relationships > 10 && one.relationships == two.relationships);
}

/// The build stores each node's PageRank (scores averaging 1, in 1/1024ths), the most
/// depended-on entities first; a patch keeps the scores of the entities that survive and
/// gives a new one the floor score of a node nobody points at.
#[test]
fn pagerank_is_stored_by_the_build_and_kept_by_a_patch() {
    use batho_storage::{Artifact, NodeIdx};
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    write_repo(root);
    build(root, &BuildOptions::default(), &|_| {}).expect("build");
    let ranks = |root: &Path| -> BTreeMap<String, u32> {
        let art = Artifact::open(&artifact_dir(root)).expect("open");
        (0..art.node_count())
            .map(NodeIdx)
            .filter(|&n| art.is_live(n))
            .map(|n| (art.node(n).id().into_owned(), art.node(n).pagerank()))
            .collect()
    };
    let before = ranks(root);
    let total: f64 = before.values().map(|&p| crate::algo::from_stored(p)).sum();
    assert!(
        (total / before.len() as f64 - 1.0).abs() < 0.01,
        "{total} over {}",
        before.len()
    );
    // api_call is called from user.c and calls two functions: it outranks its callers.
    let of = |m: &BTreeMap<String, u32>, id: &str| *m.get(id).unwrap_or_else(|| panic!("{id}"));
    assert!(of(&before, "src/api.c:api_call") > of(&before, "src/user.c:use"));
    std::fs::write(
        root.join("src/extra.c"),
        "#include \"../include/api.h\"\nint extra(void) { return api_call(3); }\n",
    )
    .expect("write");
    crate::patch::patch(root, &crate::patch::PatchOptions::default()).expect("patch");
    let after = ranks(root);
    assert_eq!(of(&after, "src/extra.c:extra"), crate::algo::stored_floor());
    assert_eq!(
        of(&after, "src/api.c:api_call"),
        of(&before, "src/api.c:api_call")
    );
}

/// The build stores the community summary its readers would compute; a damaged or stale
/// one is computed again by the first query, which stores the new one; the answers never
/// change.
#[test]
fn the_community_summary_is_stored_by_the_build_and_recomputed_when_stale() {
    use crate::algo::community_summary::{graph_key, stored, summarize};
    use crate::query::Database;
    use batho_storage::Artifact;

    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    write_repo(root);
    build(root, &BuildOptions::default(), &|_| {}).expect("build");
    let dir = artifact_dir(root);
    let open = || Artifact::open(&dir).expect("open");
    let key = graph_key(&open());
    let file = dir
        .join("derived")
        .join(format!("communities-{}.json", &key[..16]));
    let computed = |art: &Artifact| {
        summarize(art, &mut |_| Ok::<(), std::convert::Infallible>(())).expect("infallible")
    };
    let built = stored(&open()).expect("the build stored a summary");
    let built_generation = open().generation();
    assert_eq!(built, computed(&open()));
    assert!(!built.rows.is_empty());
    let answer = |root: &Path| {
        let db = Database::open(root).expect("database");
        let rows = |q: &str| {
            db.query(q, &BTreeMap::new())
                .expect("query")
                .rows
                .iter()
                .map(|row| format!("{row:?}"))
                .collect::<Vec<_>>()
        };
        (rows("CALL db.communities()"), rows("CALL db.stats()"))
    };
    let from_store = answer(root);

    // A flipped digit still parses: its hash finds it, so it is computed again, and
    // `fix --deep` reports the file.
    let bytes = std::fs::read(&file).expect("read");
    let field = b"\"entities\":";
    let digit = bytes
        .windows(field.len())
        .position(|window| window == field)
        .map(|at| at + field.len())
        .filter(|&at| bytes[at].is_ascii_digit() && bytes[at] != b'9')
        .expect("a community's member count");
    let mut flipped = bytes.clone();
    flipped[digit] += 1;
    std::fs::write(&file, &flipped).expect("damage");
    assert_eq!(stored(&open()), None);
    assert_eq!(
        crate::algo::community_summary::damaged_summaries(&dir).len(),
        1
    );
    assert_eq!(answer(root), from_store);
    assert_eq!(stored(&open()), Some(built.clone()));

    // Damaged: computed again, the same answer, and stored again.
    std::fs::write(&file, b"{\"key\": 1").expect("damage");
    assert_eq!(stored(&open()), None);
    assert_eq!(answer(root), from_store);
    assert_eq!(stored(&open()), Some(built.clone()));

    // Stale after a patch: the first query stores the new graph's summary.
    std::fs::write(
        root.join("src/extra.c"),
        "#include \"../include/api.h\"\nint extra(void) { return api_call(3); }\n",
    )
    .expect("write");
    crate::patch::patch(root, &crate::patch::PatchOptions::default()).expect("patch");
    let patched = open();
    assert_ne!(graph_key(&patched), built.key);
    assert_eq!(stored(&patched), None);
    let _ = answer(root);
    assert_eq!(stored(&open()), Some(computed(&open())));
    // The summary of the graph before the patch is kept beside the new one.
    let before = Artifact::open_generation(&dir, built_generation).expect("old generation");
    assert_eq!(stored(&before), Some(built));
}
