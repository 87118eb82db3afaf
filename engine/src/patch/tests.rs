//! Patch tests. The key property is parity: after an edit, the patched artifact equals a
//! full build of the edited tree, compared canonically (nodes by id with every property
//! but `community`; edges as a multiset of (src id, rel, dst id, roles, strategy,
//! confidence, file, line)).

use std::path::{Path, PathBuf};

use batho_storage::Artifact;

use super::{ChangeKind, DetectMode, PatchOptions, PatchReport, patch};
use crate::build::{BuildOptions, artifact_dir, build};

use super::canon::{Canon, canonical};

fn artifact_canon(root: &Path) -> Canon {
    let a = Artifact::open(&artifact_dir(root)).expect("open artifact");
    canonical(&a.to_graph_builder())
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let name = e.file_name();
        if name == ".batho" {
            continue;
        }
        let (src, dst) = (e.path(), to.join(&name));
        if e.file_type().expect("type").is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).expect("copy");
        }
    }
}

fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/demo")
}

fn quiet_build(root: &Path) {
    build(
        root,
        &BuildOptions {
            full: true,
            max_workers: Some(2),
            ..BuildOptions::default()
        },
        &|_| {},
    )
    .expect("build");
}

fn run_patch(root: &Path, mode: DetectMode) -> PatchReport {
    run_patch_with(root, mode, None)
}

fn run_patch_with(root: &Path, mode: DetectMode, whole_tree_percent: Option<usize>) -> PatchReport {
    patch(
        root,
        &PatchOptions {
            mode,
            max_workers: Some(2),
            whole_tree_percent,
            ..PatchOptions::default()
        },
    )
    .expect("patch")
}

/// An edit of a tree: paths to write (with their new text) or delete (`None`).
type Edit<'a> = &'a [(&'a str, Option<&'a str>)];

fn apply_edit(root: &Path, edit: Edit<'_>) {
    for (path, text) in edit {
        let p = root.join(path);
        match text {
            Some(t) => {
                std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
                std::fs::write(&p, t).expect("write");
            }
            None => std::fs::remove_file(&p).expect("remove"),
        }
    }
}

/// Builds `base` (a directory), applies `edit`, patches, and checks the patched artifact
/// against a full build of the edited tree; returns the patch report. Done twice: with
/// the facts cache the build wrote (context files are cached skeletons) and without it
/// (context files are parsed, and every unchanged file counts as mentioning every
/// changed name), which must give the same graph.
pub(super) fn parity(base: &Path, setup: Edit<'_>, edit: Edit<'_>) -> PatchReport {
    let uncached = parity_with(base, setup, edit, false, None);
    assert_eq!(uncached.context_cached, 0);
    assert_eq!(uncached.affected_cached, 0);
    let cached = parity_with(base, setup, edit, true, None);
    assert_eq!(
        cached.context_cached, cached.context_files,
        "every context file of a freshly built tree is in the cache"
    );
    assert_eq!(
        cached.affected_cached,
        cached.affected.len() as u64,
        "every affected file of a freshly built tree is loaded whole from the cache"
    );
    cached
}

fn parity_with(
    base: &Path,
    setup: Edit<'_>,
    edit: Edit<'_>,
    cache: bool,
    whole_tree_percent: Option<usize>,
) -> PatchReport {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("repo");
    copy_tree(base, &root);
    apply_edit(&root, setup);
    quiet_build(&root);
    if !cache {
        std::fs::remove_dir_all(crate::facts_cache::cache_dir(&artifact_dir(&root)))
            .expect("remove the facts cache");
    }
    apply_edit(&root, edit);
    let report = run_patch_with(&root, DetectMode::Hash, whole_tree_percent);
    if let Some(run) = &report.run {
        // The run record counts what was committed.
        let (pn, pe) = artifact_canon(&root);
        assert_eq!(run.node_count, pn.len() as u64, "run node count");
        let edges: usize = pe.values().sum();
        assert_eq!(run.edge_count, edges as u64, "run edge count");
    }
    assert_same_as_full_build(&root, &tmp.path().join("fresh"));
    report
}

/// Copies the patched tree at `root` to `fresh`, builds it in full there, and asserts that
/// both artifacts hold the same nodes and edges.
fn assert_same_as_full_build(root: &Path, fresh: &Path) {
    copy_tree(root, fresh);
    quiet_build(fresh);
    let (pn, pe) = artifact_canon(root);
    let (fnodes, fe) = artifact_canon(fresh);
    let missing: Vec<_> = fnodes.keys().filter(|k| !pn.contains_key(*k)).collect();
    let extra: Vec<_> = pn.keys().filter(|k| !fnodes.contains_key(*k)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "nodes missing from the patch: {missing:?}; extra: {extra:?}"
    );
    for (id, n) in &fnodes {
        assert_eq!(Some(n), pn.get(id), "node {id} differs");
    }
    let e_missing: Vec<_> = fe
        .iter()
        .filter(|(k, c)| pe.get(*k) != Some(c))
        .map(|(k, _)| k)
        .collect();
    let e_extra: Vec<_> = pe
        .iter()
        .filter(|(k, c)| fe.get(*k) != Some(c))
        .map(|(k, _)| k)
        .collect();
    assert!(
        e_missing.is_empty() && e_extra.is_empty(),
        "edges missing from the patch: {e_missing:#?}\nextra: {e_extra:#?}"
    );
}

const HASH_C: &str = "src/hash.c";

fn demo_text(path: &str) -> String {
    std::fs::read_to_string(demo_dir().join(path)).expect("demo file")
}

#[test]
fn parity_modified_function_body() {
    let text = demo_text(HASH_C).replacen(
        "return mix(h);\n}\n\nunsigned",
        "return h;\n}\n\nunsigned",
        1,
    );
    let r = parity(&demo_dir(), &[], &[(HASH_C, Some(&text))]);
    assert_eq!(r.files.modified, vec![HASH_C.to_owned()]);
    assert!(
        r.entities.iter().any(|c| c.change == ChangeKind::Modified
            && c.after.as_ref().is_some_and(|a| a.name == "hash_fnv1a")),
        "{:?}",
        r.entities
    );
}

#[test]
fn parity_renamed_function() {
    let text = demo_text(HASH_C).replace("mix(", "mix64(");
    let r = parity(&demo_dir(), &[], &[(HASH_C, Some(&text))]);
    assert!(
        r.entities
            .iter()
            .any(|c| c.change == ChangeKind::Removed || c.change == ChangeKind::Renamed)
    );
}

#[test]
fn parity_added_file() {
    let r = parity(
        &demo_dir(),
        &[],
        &[(
            "src/extra.c",
            Some(
                "#include \"demo/table.h\"\nint extra_count(table *t) { return (int)table_count(t) + hash_djb2(\"x\"); }\n",
            ),
        )],
    );
    assert_eq!(r.files.added, vec!["src/extra.c".to_owned()]);
    assert!(r.entities.iter().any(|c| c.change == ChangeKind::Added));
}

#[test]
fn parity_deleted_file() {
    let r = parity(&demo_dir(), &[], &[(HASH_C, None)]);
    assert_eq!(r.files.deleted, vec![HASH_C.to_owned()]);
    assert!(r.entities.iter().any(|c| c.change == ChangeKind::Removed));
}

#[test]
fn parity_definition_resolves_an_unresolved_call() {
    let r = parity(
        &demo_dir(),
        &[(
            "src/use.c",
            Some("int use_it(void) { return later_fn(1) + later_var; }\n"),
        )],
        &[(
            "src/later.c",
            Some("int later_var = 3;\nint later_fn(int x) { return x; }\n"),
        )],
    );
    assert!(
        r.affected.contains(&"src/use.c".to_owned()),
        "{:?}",
        r.affected
    );
}

#[test]
fn parity_edited_header() {
    let h = "include/demo/hash.h";
    let text = demo_text(h).replace(
        "unsigned long hash_djb2(const char *key);",
        "#include \"demo/table.h\"\nunsigned long hash_djb2(const char *key);\nunsigned long hash_sdbm(const char *key);",
    );
    parity(&demo_dir(), &[], &[(h, Some(&text))]);
}

#[test]
fn parity_edited_cpp_class() {
    let h = "src/shell.hpp";
    let text = demo_text(h).replace(
        "    const char *name() const override { return \"put\"; }\n",
        "",
    );
    parity(&demo_dir(), &[], &[(h, Some(&text))]);
}

fn demo_several_edits() -> Vec<(&'static str, Option<String>)> {
    let hash = demo_text(HASH_C).replace("mix(", "mix64(");
    let table = demo_text("src/table.c").replacen("static", "static inline", 1);
    vec![
        (HASH_C, Some(hash)),
        ("src/table.c", Some(table)),
        (
            "src/new.c",
            Some("int hash_djb2_twice(const char *k) { return (int)hash_djb2(k) * 2; }\n".into()),
        ),
        ("src/main.cpp", None),
    ]
}

#[test]
fn parity_several_edits_at_once() {
    let edits = demo_several_edits();
    let edit: Vec<(&str, Option<&str>)> = edits.iter().map(|(p, t)| (*p, t.as_deref())).collect();
    let report = parity(&demo_dir(), &[], &edit);
    assert!(!report.rebuilt, "a small tree is patched file by file");
}

/// When the changes reach most of the tree the patch indexes it whole: the graph is still
/// a full build's, and the run reports the same changes as a patch file by file.
#[test]
fn whole_tree_patch_matches_a_full_build_and_reports_the_same_changes() {
    let edits = demo_several_edits();
    let edit: Vec<(&str, Option<&str>)> = edits.iter().map(|(p, t)| (*p, t.as_deref())).collect();
    let by_file = parity_with(&demo_dir(), &[], &edit, true, None);
    let whole = parity_with(&demo_dir(), &[], &edit, true, Some(0));
    assert!(whole.rebuilt && !by_file.rebuilt);
    assert_eq!(whole.files, by_file.files);
    assert_eq!(whole.affected, by_file.affected);
    assert_eq!(whole.entities, by_file.entities);
    assert!(!whole.entities.is_empty());
    assert_eq!(
        (whole.relationships_added, whole.relationships_removed),
        (by_file.relationships_added, by_file.relationships_removed)
    );
    let run = whole.run.expect("a run");
    assert_eq!(run.kind, batho_storage::RunKind::Patch);
}

#[test]
fn unchanged_tree_reports_no_changes_and_commits_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("repo");
    copy_tree(&demo_dir(), &root);
    quiet_build(&root);
    let before = Artifact::open(&artifact_dir(&root))
        .expect("open")
        .generation();
    for mode in [DetectMode::Hash, DetectMode::Mtime] {
        let r = run_patch(&root, mode);
        assert!(r.files.is_empty() && r.run.is_none(), "{:?}", r.files);
    }
    // Touching a file without changing it is no change either.
    let p = root.join(HASH_C);
    let text = std::fs::read(&p).expect("read");
    std::fs::write(&p, text).expect("write");
    assert!(run_patch(&root, DetectMode::Mtime).files.is_empty());
    let after = Artifact::open(&artifact_dir(&root))
        .expect("open")
        .generation();
    assert_eq!(before, after);
}

#[test]
fn mtime_mode_finds_an_edit_and_patches_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("repo");
    copy_tree(&demo_dir(), &root);
    quiet_build(&root);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let text = demo_text(HASH_C).replace("5381", "5387");
    std::fs::write(root.join(HASH_C), text).expect("write");
    let r = run_patch(&root, DetectMode::Mtime);
    assert_eq!(r.files.modified, vec![HASH_C.to_owned()]);
    let run = r.run.expect("a run");
    assert_eq!(run.kind, batho_storage::RunKind::Patch);
    let a = Artifact::open(&artifact_dir(&root)).expect("open");
    assert_eq!(a.generation(), run.generation);
}

#[test]
fn file_nodes_carry_the_blake3_of_the_raw_bytes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("repo");
    copy_tree(&demo_dir(), &root);
    quiet_build(&root);
    let a = Artifact::open(&artifact_dir(&root)).expect("open");
    let n = a.lookup_id(HASH_C).expect("file node");
    let bytes = std::fs::read(root.join(HASH_C)).expect("read");
    assert_eq!(
        a.node(n).content_hash()[..],
        blake3::hash(&bytes).as_bytes()[..batho_storage::CONTENT_HASH_LEN]
    );
}

#[test]
fn no_artifact_is_a_clear_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let err = patch(tmp.path(), &PatchOptions::default()).expect_err("no artifact");
    assert!(matches!(err, super::PatchError::NoArtifact(_)));
    assert!(err.is_usage());
    assert_eq!(err.remedy(), Some(batho_storage::Remedy::Build));
}

/// A small tree of its own (no demo files), for the coupling and macro rules.
pub(super) fn small_tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    for (p, t) in files {
        let p = tmp.path().join(p);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, t).expect("write");
    }
    tmp
}

/// A class's CONTAINS edge to a method defined out of line in another file is made by the
/// method's file but leaves the header's node: both files are replaced together.
#[test]
fn parity_out_of_line_method_couples_header_and_source() {
    let t = small_tree(&[
        (
            "cpp/a.hpp",
            "namespace n { class A { public: int f(); virtual int g(); }; class B : public A { public: int g() override; }; }\n",
        ),
        (
            "cpp/a.cpp",
            "#include \"a.hpp\"\nint n::A::f() { return g(); }\nint n::A::g() { return 1; }\n",
        ),
        (
            "cpp/b.cpp",
            "#include \"a.hpp\"\nint n::B::g() { return 2; }\nint use(n::A &a) { return a.g(); }\n",
        ),
    ]);
    let a = "#include \"a.hpp\"\nint n::A::f() { return g() + 1; }\nint n::A::g() { return 3; }\n";
    let r = parity(t.path(), &[], &[("cpp/a.cpp", Some(a))]);
    assert!(
        r.affected.contains(&"cpp/a.hpp".to_owned()),
        "{:?}",
        r.affected
    );
    let h = "namespace n { class A { public: int f(); virtual int g(); virtual int h(); }; class B : public A { public: int g() override; int h() override; }; }\n";
    parity(t.path(), &[], &[("cpp/a.hpp", Some(h))]);
}

/// `#define MEM_STATIC static inline` makes every `MEM_STATIC` definition static; changing
/// the macro changes their flags and what other files can see.
#[test]
fn parity_static_macro_change() {
    let t = small_tree(&[
        ("lib/mem.h", "#define MEM_STATIC static inline\n"),
        (
            "lib/get.h",
            "#include \"mem.h\"\nMEM_STATIC int mget(void) { return 1; }\n",
        ),
        (
            "src/u.c",
            "#include \"../lib/get.h\"\nint u(void) { return mget(); }\n",
        ),
        ("src/v.c", "int v(void) { return mget(); }\n"),
    ]);
    parity(
        t.path(),
        &[],
        &[("lib/mem.h", Some("#define MEM_STATIC inline\n"))],
    );
}

/// A header's include list changes the translation unit of every file including it.
#[test]
fn parity_include_change_reaches_transitive_includers() {
    let t = small_tree(&[
        ("inc/top.h", "#include \"mid.h\"\n"),
        ("inc/mid.h", "int mid(void);\n"),
        ("inc/low.h", "static inline int pick(void) { return 1; }\n"),
        (
            "src/a.c",
            "#include \"../inc/top.h\"\nint a(void) { return pick() + mid(); }\n",
        ),
        (
            "src/b.c",
            "static int pick(void) { return 2; }\nint b(void) { return pick(); }\n",
        ),
        (
            "src/c.c",
            "static int pick(void) { return 3; }\nint c(void) { return pick(); }\n",
        ),
    ]);
    parity(
        t.path(),
        &[],
        &[("inc/mid.h", Some("#include \"low.h\"\nint mid(void);\n"))],
    );
}

#[test]
fn parity_struct_gains_a_field_another_file_reads() {
    // Non-function definitions count when their text changes: `struct shape` gains `h`,
    // so the file reading `s->h` through the typedef must be re-resolved.
    let setup = [
        (
            "src/shape.h",
            Some(
                "struct shape { int w; };\ntypedef struct shape shape_t;\n#define AREA_OF(s) ((s)->w)\n",
            ),
        ),
        (
            "src/use_shape.c",
            Some(
                "#include \"shape.h\"\nint area(shape_t *s) { return s->w * s->h + AREA_OF(s); }\nint width(struct shape *s) { return s->w; }\n",
            ),
        ),
    ];
    let edit = [(
        "src/shape.h",
        Some(
            "struct shape { int w; int h; };\ntypedef struct shape shape_t;\n#define AREA_OF(s) ((s)->w * (s)->h)\n",
        ),
    )];
    let report = parity(&demo_dir(), &setup, &edit);
    assert!(
        report.affected.iter().any(|p| p == "src/use_shape.c"),
        "{:?}",
        report.affected
    );
}

#[test]
fn parity_file_turned_binary_is_dropped_like_a_build_skips_it() {
    let r = parity(
        &demo_dir(),
        &[],
        &[(HASH_C, Some("\0\u{1}not text any more"))],
    );
    assert_eq!(r.files.deleted, vec![HASH_C.to_owned()]);
}

#[test]
fn parity_new_macro_reaches_an_ifdef_that_found_nothing_before() {
    // `#ifdef BATHO_FEATURE` resolved to nothing, so no edge leads back to `feature.c`:
    // only its name filter tells the patch that it mentions the new macro.
    let r = parity(
        &demo_dir(),
        &[
            (
                "src/feature.c",
                Some(
                    "#ifdef BATHO_FEATURE\nint feature_on(void) { return 1; }\n#endif\nint feature(void) { return 0; }\n",
                ),
            ),
            ("src/feature.h", Some("#pragma once\n")),
        ],
        &[(
            "src/feature.h",
            Some("#pragma once\n#define BATHO_FEATURE 1\n"),
        )],
    );
    assert!(
        r.affected.contains(&"src/feature.c".to_owned()),
        "{:?}",
        r.affected
    );
}

#[test]
fn parity_new_struct_reaches_a_type_use_that_found_nothing_before() {
    let r = parity(
        &demo_dir(),
        &[(
            "src/user.c",
            Some("int use_later(struct later *p) { return p != 0; }\n"),
        )],
        &[("src/later.h", Some("struct later { int a; };\n"))],
    );
    assert!(
        r.affected.contains(&"src/user.c".to_owned()),
        "{:?}",
        r.affected
    );
}

fn assert_nothing_else_re_resolved(report: &PatchReport) {
    assert!(
        report.affected.is_empty(),
        "re-resolved: {:?}",
        report.affected
    );
}

#[test]
fn parity_reformatted_prototype_re_resolves_no_other_file() {
    // Spacing in a signature is nothing a lookup sees: the caller in `main.c` keeps its
    // edge, and only the header is re-extracted.
    let t = small_tree(&[
        ("inc/geo.h", "int area(int w, int h);\n"),
        (
            "src/main.c",
            "#include \"../inc/geo.h\"\nint twice(void) { return area(2, 3) * 2; }\n",
        ),
    ]);
    let report = parity(
        t.path(),
        &[],
        &[("inc/geo.h", Some("int area(int w,\n         int h) ;\n"))],
    );
    assert_eq!(report.files.modified, ["inc/geo.h"]);
    assert_nothing_else_re_resolved(&report);
}

#[test]
fn parity_field_type_change_of_a_c_struct_re_resolves_no_other_file() {
    // A field counts for other files by its class and name; its type only for receivers
    // inside methods of its class. `pkt` has no methods (a C++ class elsewhere does), so
    // neither `reader.c` (whose `p->len` is this field) nor `other.c` (another struct's
    // `len`) is re-resolved when `len` changes type.
    let t = small_tree(&[
        ("inc/pkt.h", "struct pkt { int len; int flags; };\n"),
        (
            "src/reader.c",
            "#include \"../inc/pkt.h\"\nint size_of(struct pkt *p) { return p->len; }\n",
        ),
        (
            "src/other.c",
            "struct buf { int len; };\nint blen(struct buf *q) { return q->len; }\n",
        ),
        (
            "src/widget.cpp",
            "class Widget { public: int len; void grow(); };\nvoid Widget::grow() { len++; }\n",
        ),
    ]);
    let report = parity(
        t.path(),
        &[],
        &[(
            "inc/pkt.h",
            Some("struct pkt { unsigned long len; int flags; };\n"),
        )],
    );
    assert_nothing_else_re_resolved(&report);
}

#[test]
fn parity_field_type_change_reaches_a_method_using_it_as_receiver() {
    // `Big::use` (a method of a class deriving from `Box`) calls `item.go()`: the
    // receiver's type is the inherited field's, so changing it from `Inner` to `Other`
    // must re-resolve `big.cpp`, which nothing else ties to `box.h`.
    let boxed = |t: &str| {
        format!(
            "struct Inner {{ void go(); }};\nstruct Other {{ void go(); }};\nclass Box {{ public: {t} item; }};\n"
        )
    };
    let t = small_tree(&[
        ("inc/box.h", &boxed("Inner")),
        (
            "inc/big.h",
            "#include \"box.h\"\nclass Big : public Box { public: void use(); };\n",
        ),
        (
            "src/big.cpp",
            "#include \"../inc/big.h\"\nvoid Big::use() { item.go(); }\n",
        ),
    ]);
    let report = parity(t.path(), &[], &[("inc/box.h", Some(&boxed("Other")))]);
    assert!(report.affected.contains(&"src/big.cpp".to_owned()));
}

#[test]
fn hash_mode_trusts_a_stamp_only_while_size_times_inode_and_hash_all_match() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("repo");
    copy_tree(&demo_dir(), &root);
    // Stamps are recorded only for files last changed before the racy margin.
    std::thread::sleep(std::time::Duration::from_millis(
        batho_storage::file_stamp::RACY_MARGIN_NS as u64 / 1_000_000 + 200,
    ));
    quiet_build(&root);
    let dir = artifact_dir(&root);
    let stamps = crate::stamps::Stamps::load(&dir);
    let indexed = super::Indexed::of(&Artifact::open(&dir).expect("open"));
    assert_eq!(
        stamps.len(),
        indexed.files.len(),
        "the build stamps every file"
    );
    assert_eq!(run_patch(&root, DetectMode::Hash).files.total(), 0);

    // Same size, mtime set back: only ctime tells. Hash mode must still see it.
    let path = root.join("src/hash.c");
    let before = std::fs::metadata(&path).expect("stat");
    let text = std::fs::read_to_string(&path).expect("read");
    let edited = text.replacen("return", "RETURN", 1);
    assert_eq!(edited.len(), text.len());
    std::fs::write(&path, edited).expect("write");
    let f = std::fs::File::options()
        .write(true)
        .open(&path)
        .expect("open");
    f.set_modified(before.modified().expect("mtime"))
        .expect("set mtime");
    drop(f);
    let report = run_patch(&root, DetectMode::Hash);
    assert_eq!(report.files.modified, ["src/hash.c"]);
}

#[test]
fn detection_skips_a_stamped_file_without_reading_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = tmp.path().join("a.c");
    std::fs::write(&path, "int a;\n").expect("write");
    let stamp = crate::stamps::Stamp::of(&std::fs::metadata(&path).expect("stat"));
    let disk = [crate::discover::SourceFile {
        abs_path: path,
        rel_path: "a.c".into(),
        size: 7,
        modified_ms: 0,
        stamp,
    }];
    // The artifact's hash is not the file's: only a trusted stamp keeps it unchanged.
    let indexed = super::Indexed {
        files: [(
            "a.c".to_owned(),
            (batho_storage::NodeIdx(0), batho_schema::Language::C, [9; 8]),
        )]
        .into(),
    };
    let mut stamps = crate::stamps::Stamps::default();
    let (changes, hashed) = super::detect(&disk, &indexed, DetectMode::Hash, 0, &stamps, 1);
    assert_eq!(changes.modified, ["a.c"]);
    assert_eq!(hashed.len(), 1);
    stamps.record("a.c", stamp, &[9; 32], i64::MAX);
    let (changes, hashed) = super::detect(&disk, &indexed, DetectMode::Hash, 0, &stamps, 1);
    assert_eq!(changes.total(), 0);
    assert!(hashed.is_empty());
}

#[test]
fn changed_bytes_the_cache_knows_are_loaded_not_parsed_and_match_a_full_build() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("repo");
    copy_tree(&demo_dir(), &root);
    quiet_build(&root);
    let original = demo_text(HASH_C);
    let edited = original.replacen("return mix(h);", "return h;", 1);
    assert_ne!(edited, original);
    let same_as_full_build =
        |label: &str| assert_same_as_full_build(&root, &tmp.path().join(label));
    // New bytes: parsed (and cached by the patch).
    apply_edit(&root, &[(HASH_C, Some(&edited))]);
    let r = run_patch(&root, DetectMode::Hash);
    assert_eq!((r.files.modified.len(), r.changed_cached), (1, 0));
    same_as_full_build("edited");
    // The edit undone: the build cached those bytes.
    apply_edit(&root, &[(HASH_C, Some(&original))]);
    let r = run_patch(&root, DetectMode::Hash);
    assert_eq!((r.files.modified.len(), r.changed_cached), (1, 1));
    same_as_full_build("undone");
    // And redone: the first patch cached them.
    apply_edit(&root, &[(HASH_C, Some(&edited))]);
    let r = run_patch(&root, DetectMode::Hash);
    assert_eq!((r.files.modified.len(), r.changed_cached), (1, 1));
    same_as_full_build("redone");
}

/// Every use site of an edge survives a patch as a full build records it: sites added,
/// moved and removed in a changed file, and the sites of unchanged files' edges into it.
#[test]
fn parity_call_sites_added_moved_and_removed() {
    let setup = "int twice(int a);\nint caller(int a) {\n  twice(a);\n  a++;\n  twice(a);\n  return twice(a);\n}\n";
    let edited = "int twice(int a);\nint caller(int a) {\n  twice(a); twice(a);\n  a++;\n  return a;\n}\nint other(int a) { return twice(a) + twice(a); }\n";
    let user = "int twice(int a);\nint use(int a) {\n  twice(a);\n  return twice(a + 1);\n}\n";
    parity(
        &demo_dir(),
        &[
            ("src/sites.c", Some(setup)),
            ("src/sites_user.c", Some(user)),
        ],
        &[("src/sites.c", Some(edited))],
    );
}

/// A function a patch adds joins the community its relationships reach (it used to get
/// none, community 0, until the next full build).
#[test]
fn an_added_function_joins_the_community_of_what_it_calls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("repo");
    copy_tree(&demo_dir(), &root);
    quiet_build(&root);
    let community = |id: &str| {
        let a = Artifact::open(&artifact_dir(&root)).expect("open artifact");
        let node = a.lookup_id(id).unwrap_or_else(|| panic!("no node {id}"));
        a.node(node).community()
    };
    let callee = community("src/table.c:table_count");
    assert_ne!(callee, 0, "the demo's table_count belongs to a community");
    let mut text = demo_text("src/table.c");
    text.push_str(
        "\nsize_t table_twice(const table *t) { return table_count(t) + table_count(t); }\n",
    );
    apply_edit(&root, &[("src/table.c", Some(&text))]);
    run_patch(&root, DetectMode::Hash);
    assert_eq!(community("src/table.c:table_twice"), callee);
}

/// A size limit that would drop most indexed files still on disk is refused and changes
/// nothing (issue 28: `batho_patch(max_file_size_kb=0)` emptied the graph); deleting most
/// of the tree from disk is an ordinary patch.
#[test]
fn a_patch_that_would_drop_most_files_still_on_disk_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("demo");
    copy_tree(&demo_dir(), &root);
    quiet_build(&root);
    let before = artifact_canon(&root);
    let generation = Artifact::open(&artifact_dir(&root))
        .expect("open")
        .generation();
    let refused = patch(
        &root,
        &PatchOptions {
            max_file_size_kb: Some(0),
            ..PatchOptions::default()
        },
    );
    let error = refused.expect_err("refused");
    assert!(
        matches!(error, super::PatchError::WouldDropMostFiles { .. }),
        "{error}"
    );
    assert!(error.is_usage() && error.hint().is_some());
    let after = Artifact::open(&artifact_dir(&root)).expect("open");
    assert_eq!(after.generation(), generation);
    assert!(artifact_canon(&root) == before, "the artifact changed");

    // Files really deleted are patched away, however many.
    for entry in walk_sources(&root) {
        std::fs::remove_file(entry).expect("remove");
    }
    let report = run_patch(&root, DetectMode::Hash);
    assert!(!report.files.deleted.is_empty());
}

/// Every C/C++ source of the tree (not under `.batho`).
fn walk_sources(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let path = entry.path();
        if entry.file_name() == ".batho" {
            continue;
        }
        if path.is_dir() {
            found.extend(walk_sources(&path));
        } else if path
            .extension()
            .is_some_and(|ext| ["c", "h", "cpp", "hpp"].iter().any(|e| ext == *e))
        {
            found.push(path);
        }
    }
    found
}
