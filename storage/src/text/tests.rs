//! The stored index against a model: BM25 computed directly from every live node's text,
//! on base layers and on base + delta generations.

use std::collections::HashMap;

use proptest::prelude::*;

use super::search::{bm25_idf, bm25_term, question_terms};
use super::tokenize::terms;
use crate::fuzzing::{sample_fragment, sample_graph, sample_run};
use crate::{Artifact, NodeIdx, Store};

/// The terms of node `v`'s document, as the index defines it.
fn document(a: &Artifact, v: NodeIdx) -> Vec<String> {
    let node = a.node(v);
    let mut out = terms(&node.name());
    if node.qualified_name() != node.name() {
        out.extend(terms(&node.qualified_name()));
    }
    out.extend(terms(&node.signature()));
    out.extend(terms(&node.doc()));
    out.extend(terms(&node.file()));
    out
}

/// BM25 of every live node for `question`, computed from the documents themselves.
fn model_search(a: &Artifact, question: &str) -> Vec<(NodeIdx, f64)> {
    let docs: Vec<(NodeIdx, Vec<String>)> = a
        .live_nodes()
        .map(|n| (n.idx(), document(a, n.idx())))
        .collect();
    let total: usize = docs.iter().map(|(_, d)| d.len()).sum();
    let avg = total as f64 / docs.len() as f64;
    let mut scores: HashMap<NodeIdx, f64> = HashMap::new();
    for term in question_terms(question) {
        let holding = docs.iter().filter(|(_, d)| d.contains(&term)).count();
        let idf = bm25_idf(docs.len() as f64, holding as f64);
        for (v, d) in &docs {
            let frequency = d.iter().filter(|t| **t == term).count();
            if frequency > 0 {
                *scores.entry(*v).or_default() +=
                    bm25_term(idf, frequency as f64, d.len() as f64, avg);
            }
        }
    }
    let mut ranked: Vec<(NodeIdx, f64)> = scores.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked
}

fn assert_same_ranking(a: &Artifact, question: &str) {
    let stored = a.text_search(question, usize::MAX).expect("search");
    let model = model_search(a, question);
    assert_eq!(stored.len(), model.len(), "{question}: result counts");
    for ((v, s), (w, t)) in stored.iter().zip(&model) {
        assert_eq!(v, w, "{question}: order");
        assert!(
            (s - t).abs() < 1e-9 * t.abs().max(1.0),
            "{question}: {s} vs {t}"
        );
    }
}

/// Questions made of words of the graph: names, path parts, a missing word.
fn questions(a: &Artifact, seed: u64) -> Vec<String> {
    let nodes: Vec<NodeIdx> = a.live_nodes().map(|n| n.idx()).collect();
    let pick =
        |k: u64| nodes[(seed.wrapping_mul(31).wrapping_add(k) % nodes.len() as u64) as usize];
    vec![
        a.node(pick(1)).name().into_owned(),
        format!("{} {}", a.node(pick(2)).name(), a.node(pick(3)).file()),
        "fuzz_new_entity void".to_string(),
        "widget fuzzer".to_string(),
        "file src dir1 ns3".to_string(),
        "no_such_word_anywhere".to_string(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn base_and_delta_match_the_model(seed in 0u64..1000, nodes in 1usize..120) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::create_or_open(dir.path()).expect("store");
        let g = sample_graph(seed, nodes, nodes * 2);
        let mut w = store.lock_writer().expect("lock");
        w.commit(&g, sample_run(&g)).expect("commit");
        let base = store.open_current().expect("open");
        for q in questions(&base, seed) {
            assert_same_ranking(&base, &q);
        }
        let fragment = sample_fragment(&base);
        w.set_delta_limit(u32::MAX);
        w.commit_fragment(&base, &fragment, sample_run(&fragment.graph)).expect("delta");
        let merged = store.open_current().expect("open merged");
        prop_assert!(merged.has_delta());
        for q in questions(&merged, seed) {
            assert_same_ranking(&merged, &q);
        }
        let again = sample_fragment(&merged);
        w.commit_fragment(&merged, &again, sample_run(&again.graph)).expect("second delta");
        let twice = store.open_current().expect("open twice");
        for q in questions(&twice, seed + 1) {
            assert_same_ranking(&twice, &q);
        }
    }
}

#[test]
fn limit_keeps_the_best() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::create_or_open(dir.path()).expect("store");
    let g = sample_graph(3, 200, 300);
    store
        .lock_writer()
        .expect("lock")
        .commit(&g, sample_run(&g))
        .expect("commit");
    let a = store.open_current().expect("open");
    let all = a.text_search("file dir3 fn", usize::MAX).expect("search");
    let top = a.text_search("file dir3 fn", 5).expect("search");
    assert!(all.len() > 5);
    assert_eq!(top, all[..5]);
    assert!(a.text_search("", 5).expect("search").is_empty());
    assert!(a.text_search("fn", 0).expect("search").is_empty());
}
