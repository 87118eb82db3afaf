//! The views on a build of `examples/demo`: well-formed JSON, consistent counts, sources
//! matching their hashes, filters, categories and the token budget.

use std::path::{Path, PathBuf};

use super::*;
use crate::build::{BuildOptions, artifact_dir, build};

fn demo() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("demo");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/demo");
    copy(&src, &root);
    build(&root, &BuildOptions::default(), &|_| {}).unwrap();
    (tmp, root)
}

fn copy(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).unwrap();
    for e in fs::read_dir(src).unwrap().flatten() {
        if e.file_name() == ".batho" {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            copy(&e.path(), &dst.join(e.file_name()));
        } else {
            fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
}

fn view(a: &Artifact, root: &Path, opts: &ExportOptions) -> (Json, ExportStats) {
    let mut buf = Vec::new();
    let st = write_view(a, root, opts, &mut buf).unwrap();
    assert_eq!(st.bytes, buf.len() as u64);
    (serde_json::from_slice(&buf).expect("valid JSON"), st)
}

#[test]
fn storage_view_has_every_node_edge_and_matching_sources() {
    let (_t, root) = demo();
    let a = Artifact::open(&artifact_dir(&root)).unwrap();
    let (j, st) = view(&a, &root, &ExportOptions::new(View::Storage));
    assert_eq!(
        j["nodes"].as_array().unwrap().len(),
        a.node_count() as usize
    );
    assert_eq!(
        j["edges"].as_array().unwrap().len(),
        a.edge_count() as usize
    );
    assert_eq!(j["runs"].as_array().unwrap().len(), a.runs().len());
    assert_eq!(
        st.sources_stale, 0,
        "every entity's source matches its hash"
    );
    assert!(st.sources_ok > 10);
    let main = j["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "main" && n["kind"] == "Function")
        .unwrap();
    assert!(main["source"].as_str().unwrap().contains("main"));
    assert_eq!(main["source_matches_hash"], true);

    // A changed file is flagged, not passed off as the entity's source.
    let file = main["file"].as_str().unwrap();
    let p = root.join(file);
    let text = fs::read_to_string(&p).unwrap();
    fs::write(&p, format!("// edited\n{text}")).unwrap();
    let (_, st2) = view(&a, &root, &ExportOptions::new(View::Storage));
    assert!(st2.sources_stale > 0);
}

#[test]
fn categories_filters_and_relationships() {
    let (_t, root) = demo();
    let a = Artifact::open(&artifact_dir(&root)).unwrap();
    let mut o = ExportOptions::new(View::Storage);
    o.category = Category::Files;
    let (j, _) = view(&a, &root, &o);
    assert!(
        j["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["kind"] == "File")
    );
    assert!(j.get("edges").is_none());
    o.category = Category::Relationships;
    let (j, _) = view(&a, &root, &o);
    assert_eq!(j["nodes"].as_array().unwrap().len(), 0);
    assert_eq!(
        j["edges"].as_array().unwrap().len(),
        a.edge_count() as usize
    );
    o.category = Category::All;
    o.filter_pattern = Some("*.c".into());
    let (j, _) = view(&a, &root, &o);
    let nodes = j["nodes"].as_array().unwrap();
    assert!(!nodes.is_empty());
    assert!(
        nodes
            .iter()
            .all(|n| n["file"].as_str().unwrap().ends_with(".c"))
    );
    o.filter_pattern = Some("src/[".into());
    assert!(export_to_file(&a, &root, &o, &root.join("x.json")).is_err());
}

#[test]
fn agent_view_resolves_relationships_and_respects_the_budget() {
    let (_t, root) = demo();
    let a = Artifact::open(&artifact_dir(&root)).unwrap();
    let (j, st) = view(&a, &root, &ExportOptions::new(View::Agent));
    let ents = j["entities"].as_array().unwrap();
    let files = j["files"].as_array().unwrap();
    assert_eq!(ents.len() as u64, st.entities);
    assert!(!st.truncated);
    for e in ents {
        assert!(e.get("source").is_none());
        assert!((e["file"].as_u64().unwrap() as usize) < files.len());
        for (k, v) in e.as_object().unwrap() {
            if let Some(targets) = v.as_array().filter(|_| k != "lines") {
                assert!(
                    targets
                        .iter()
                        .all(|t| (t.as_u64().unwrap() as usize) < ents.len())
                );
            }
        }
    }
    assert!(ents.iter().any(|e| e.get("calls").is_some()));

    let mut o = ExportOptions::new(View::Agent);
    o.token_budget = Some(300);
    let (j, st) = view(&a, &root, &o);
    assert!(st.truncated && st.entities < st.entities_total);
    assert!(st.bytes <= 300 * 4 + 200, "{} bytes", st.bytes);
    assert_eq!(j["summary"]["truncated"], true);
}
