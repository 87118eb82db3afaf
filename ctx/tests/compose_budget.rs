//! Property: whatever the notes, seeds, budget and format, the composed block never holds
//! more o200k tokens than the budget, and the manifest lists every included node once.

use batho_ctx::compose::{ComposeFormat, ComposeRequest, compose};
use batho_ctx::graph::{ContextGraph, SessionChoice};
use batho_ctx::lookup::note;
use batho_ctx::tokens;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn the_block_fits_the_budget(
        texts in proptest::collection::vec("[a-z \\n.,(){};é中]{1,400}", 1..12),
        budget in 0usize..600,
        outline in any::<bool>(),
        query in proptest::option::of("[a-z]{1,6}"),
        depth in 0usize..3,
    ) {
        let home = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let mut graph = ContextGraph::open(home.path(), root.path(), SessionChoice::New).unwrap();
        let mut ids = Vec::new();
        for text in &texts {
            if let Ok(stored) = note(&mut graph, text, None) {
                ids.push(stored.node_id);
            }
        }
        prop_assume!(!ids.is_empty());
        let outcome = compose(&mut graph, &ComposeRequest {
            node_ids: ids.iter().step_by(2).cloned().collect(),
            budget_tokens: budget,
            format: if outline { ComposeFormat::Outline } else { ComposeFormat::Raw },
            query,
            depth: Some(depth),
        }).unwrap();
        prop_assert!(tokens::count(&outcome.content) <= budget);
        let mut included = outcome.manifest.included.clone();
        included.sort();
        included.dedup();
        prop_assert_eq!(included.len(), outcome.manifest.included.len());
        for dropped in &outcome.manifest.dropped {
            prop_assert!(!outcome.manifest.included.contains(&dropped.id));
        }
    }
}
