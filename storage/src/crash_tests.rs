//! Crash atomicity: a commit abandoned after any of its steps leaves the previous
//! generation current and intact, and the next commit succeeds.

use crate::fuzzing::{sample_graph, sample_run};
use crate::store::{CommitStep, Store};
use crate::{Artifact, StorageError};

const STEPS: [CommitStep; 7] = [
    CommitStep::SegmentTempWritten,
    CommitStep::SegmentRenamed,
    CommitStep::SegmentsDirSynced,
    CommitStep::GenerationManifestTemp,
    CommitStep::GenerationManifestRenamed,
    CommitStep::ManifestTemp,
    CommitStep::ManifestRenamed,
];

#[test]
fn a_crash_at_any_step_keeps_the_previous_generation() {
    for step in STEPS {
        // Crash at the first, and at a later, occurrence of steps that repeat per segment.
        for occurrence in 0..2 {
            let tmp = tempfile::tempdir().unwrap();
            let store = Store::create_or_open(tmp.path()).unwrap();
            let g1 = sample_graph(1, 40, 100);
            let first = store
                .lock_writer()
                .unwrap()
                .commit(&g1, sample_run(&g1))
                .unwrap();
            let g2 = sample_graph(2, 50, 150);
            let mut seen = 0;
            let res = store
                .lock_writer()
                .unwrap()
                .commit_with(&g2, sample_run(&g2), &mut |s| {
                    if s == step {
                        seen += 1;
                        seen > occurrence
                    } else {
                        false
                    }
                });
            if seen <= occurrence {
                // The step does not occur that often; the commit went through.
                assert!(res.is_ok());
                continue;
            }
            assert!(matches!(res, Err(StorageError::Io { .. })));
            let cur = Artifact::open(tmp.path()).unwrap();
            if step == CommitStep::ManifestRenamed {
                // The rename is the commit point: the new generation is current.
                assert_eq!(cur.generation(), first.generation + 1);
                assert_eq!(cur.node_count(), 50);
            } else {
                assert_eq!(cur.generation(), first.generation, "step {step:?}");
                assert_eq!(cur.node_count(), 40);
            }
            assert_eq!(cur.verify(true), vec![], "step {step:?}");
            let old = store.open_generation(first.generation).unwrap();
            assert_eq!(old.node_count(), 40);
            // The next commit works and gets a fresh generation number.
            let info = store
                .lock_writer()
                .unwrap()
                .commit(&g2, sample_run(&g2))
                .unwrap();
            assert!(info.generation > cur.generation());
            let now = store.open_current().unwrap();
            assert_eq!(now.generation(), info.generation);
            assert_eq!(now.verify(true), vec![]);
        }
    }
}

#[test]
fn a_crash_before_the_first_commit_leaves_no_artifact() {
    for step in STEPS
        .into_iter()
        .filter(|s| *s != CommitStep::ManifestRenamed)
    {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::create_or_open(tmp.path()).unwrap();
        let g = sample_graph(3, 10, 10);
        let res = store
            .lock_writer()
            .unwrap()
            .commit_with(&g, sample_run(&g), &mut |s| s == step);
        assert!(res.is_err());
        assert!(
            matches!(
                Artifact::open(tmp.path()),
                Err(StorageError::NoArtifact { .. })
            ),
            "{step:?}"
        );
        assert_eq!(store.runs().unwrap(), vec![]);
    }
}

#[test]
fn a_crash_during_a_fragment_commit_keeps_the_previous_generation() {
    use crate::fuzzing::sample_fragment;
    for step in STEPS {
        for occurrence in 0..2 {
            let tmp = tempfile::tempdir().unwrap();
            let store = Store::create_or_open(tmp.path()).unwrap();
            let g1 = sample_graph(1, 40, 100);
            let mut w = store.lock_writer().unwrap();
            w.set_delta_limit(u32::MAX);
            let first = w.commit(&g1, sample_run(&g1)).unwrap();
            let base = store.open_current().unwrap();
            let frag = sample_fragment(&base);
            let mut seen = 0;
            let res = w.commit_fragment_with(&base, &frag, sample_run(&frag.graph), &mut |s| {
                if s == step {
                    seen += 1;
                    seen > occurrence
                } else {
                    false
                }
            });
            if seen <= occurrence {
                assert!(res.is_ok());
                continue;
            }
            assert!(matches!(res, Err(StorageError::Io { .. })), "{step:?}");
            let cur = Artifact::open(tmp.path()).unwrap();
            if step == CommitStep::ManifestRenamed {
                assert_eq!(cur.generation(), first.generation + 1);
                assert!(cur.has_delta());
            } else {
                assert_eq!(cur.generation(), first.generation, "step {step:?}");
                assert!(!cur.has_delta());
            }
            assert_eq!(cur.verify(true), vec![], "step {step:?}");
            // The patch can be committed again over whatever is current.
            let frag = sample_fragment(&cur);
            let info = w
                .commit_fragment(&cur, &frag, sample_run(&frag.graph))
                .unwrap();
            let now = store.open_current().unwrap();
            assert_eq!(now.generation(), info.generation);
            assert!(now.has_delta());
            assert_eq!(now.verify(true), vec![], "step {step:?}");
        }
    }
}
