//! Store behaviour: generations, run history, the writer lock, format versions and
//! corruption handling.

use std::fs;
use std::path::Path;

use batho_storage::format::names;
use batho_storage::fuzzing::{
    apply_mutation, exercise, sample_graph, sample_run, target_files, write_sample_store,
};
use batho_storage::manifest::{self, ManifestBody};
use batho_storage::{Artifact, NodeIdx, RunStatus, StorageError, Store};

#[test]
fn open_on_an_empty_or_missing_dir_is_no_artifact_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope/.batho");
    assert!(matches!(
        Artifact::open(&missing),
        Err(StorageError::NoArtifact { .. })
    ));
    assert!(!missing.exists());
    let store = Store::create_or_open(&tmp.path().join(".batho")).unwrap();
    assert!(matches!(
        store.open_current(),
        Err(StorageError::NoArtifact { .. })
    ));
    assert_eq!(store.generations().unwrap(), Vec::<u64>::new());
    assert!(matches!(
        store.open_generation(1),
        Err(StorageError::NoSuchGeneration { generation: 1, .. })
    ));
    let again = Store::create_or_open(&tmp.path().join(".batho")).unwrap();
    assert_eq!(again.db_uuid(), store.db_uuid());
}

#[test]
fn generations_stay_readable_and_open_artifacts_keep_their_view() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create_or_open(tmp.path()).unwrap();
    let g1 = sample_graph(1, 30, 80);
    let g2 = sample_graph(2, 45, 90);
    let mut w = store.lock_writer().unwrap();
    let c1 = w.commit(&g1, sample_run(&g1)).unwrap();
    let a1 = store.open_current().unwrap();
    let c2 = w.commit(&g2, sample_run(&g2)).unwrap();
    assert_eq!((c1.generation, c2.generation), (1, 2));
    assert_eq!(c2.segments_written, 4);
    // The artifact opened before the second commit still reads generation 1.
    assert_eq!(a1.generation(), 1);
    assert_eq!(a1.node_count(), 30);
    assert_eq!(a1.node(NodeIdx(3)).id(), g1.id_of(&g1.nodes[3]));
    assert_eq!(a1.verify(true), vec![]);
    let a2 = store.open_current().unwrap();
    assert_eq!((a2.generation(), a2.node_count()), (2, 45));
    assert_eq!(store.open_generation(1).unwrap().node_count(), 30);
    assert_eq!(store.generations().unwrap(), vec![1, 2]);

    // A failed run: a new generation with the same segments.
    let mut failed = sample_run(&g2);
    failed.status = RunStatus::Failed;
    failed.message = "parse error".into();
    w.record_run(failed).unwrap();
    let a3 = store.open_current().unwrap();
    assert_eq!((a3.generation(), a3.node_count()), (3, 45));
    let runs = store.runs().unwrap();
    assert_eq!(
        runs.iter().map(|r| r.generation).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(runs[2].status, RunStatus::Failed);
    assert_eq!(a3.last_run().unwrap().message, "parse error");
    assert_eq!(a1.runs().len(), 1);

    // Committing identical content reuses every segment.
    let c4 = w.commit(&g2, sample_run(&g2)).unwrap();
    assert_eq!(
        (c4.generation, c4.segments_written, c4.segments_reused),
        (4, 0, 4)
    );
    assert!(store.size_on_disk().unwrap() > a2.size_bytes());
}

/// A segment file damaged behind its name (same length, one byte flipped) is rewritten by
/// the next commit of the same content instead of being reused (issue 28, item 1).
#[test]
fn a_damaged_segment_is_rewritten_not_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create_or_open(tmp.path()).unwrap();
    let g = sample_graph(1, 40, 120);
    let mut w = store.lock_writer().unwrap();
    w.commit(&g, sample_run(&g)).unwrap();
    batho_storage::fuzzing::flip_a_byte_of_the_largest_segment(tmp.path()).unwrap();
    // Opening hashes the changed segment: the damage is an error, not wrong answers.
    assert!(matches!(
        store.open_current(),
        Err(StorageError::Corrupt { .. })
    ));

    let again = w.commit(&g, sample_run(&g)).unwrap();
    assert_eq!((again.segments_written, again.segments_reused), (1, 3));
    assert_eq!(store.open_current().unwrap().verify(true), vec![]);
}

#[test]
fn a_failed_first_run_is_recorded_without_an_artifact() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create_or_open(tmp.path()).unwrap();
    let g = sample_graph(1, 1, 0);
    let mut run = sample_run(&g);
    run.status = RunStatus::Failed;
    store.lock_writer().unwrap().record_run(run).unwrap();
    assert!(matches!(
        store.open_current(),
        Err(StorageError::NoArtifact { .. })
    ));
    assert_eq!(store.runs().unwrap().len(), 1);
}

#[test]
fn a_second_writer_gets_locked() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create_or_open(tmp.path()).unwrap();
    let other = Store::create_or_open(tmp.path()).unwrap();
    let held = store.lock_writer().unwrap();
    let err = other.lock_writer().unwrap_err();
    assert!(matches!(err, StorageError::Locked { .. }), "{err:?}");
    assert!(err.to_string().contains("another batho process"), "{err}");
    // Readers need no lock.
    drop(held);
    other.lock_writer().unwrap();
}

fn patch_version(path: &Path, version: u32) {
    let mut b = fs::read(path).unwrap();
    b[8..12].copy_from_slice(&version.to_le_bytes());
    fs::write(path, b).unwrap();
}

#[test]
fn older_and_newer_formats_are_refused_clearly() {
    // Version 1 (before delta layers), 2 (plain string offsets, 16-byte content
    // hashes), 3 (one use site per edge), 4 (no PageRank column) and 5 (no text index)
    // must be refused with the rebuild advice too, and so must the next releases' (up to
    // 64 ahead). A version no release wrote (0, or further ahead) under a failing checksum
    // is damage instead: `format::version_error`.
    for v in [1u32, 2, 3, 4, 5, 7, 70] {
        let tmp = tempfile::tempdir().unwrap();
        write_sample_store(tmp.path()).unwrap();
        patch_version(&tmp.path().join(names::MANIFEST), v);
        match Artifact::open(tmp.path()) {
            Err(
                e @ StorageError::UnsupportedFormat {
                    found, expected: 6, ..
                },
            ) => {
                assert_eq!(found, v);
                assert!(e.to_string().contains("format version"), "{e}");
                // The way out is named, and worded by each front end.
                assert_eq!(e.remedy(), Some(batho_storage::Remedy::Rebuild), "{e}");
            }
            other => panic!("{other:?}"),
        }
        let tmp = tempfile::tempdir().unwrap();
        write_sample_store(tmp.path()).unwrap();
        let seg = target_files(tmp.path()).unwrap()[1].clone();
        patch_version(&seg, v);
        assert!(matches!(
            Artifact::open(tmp.path()),
            Err(StorageError::UnsupportedFormat { .. })
        ));
    }
}

fn template() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    write_sample_store(tmp.path()).unwrap();
    tmp
}

fn copy_dir(from: &Path, to: &Path) {
    batho_storage::fuzzing::copy_store(from, to).unwrap();
}

/// Positions to damage in a file of `len` bytes: every header/table byte, then a stride.
fn positions(len: usize) -> impl Iterator<Item = usize> {
    (0..len.min(700)).chain((700..len).step_by(13))
}

#[test]
fn flipped_or_truncated_files_give_errors_or_issues_never_panics() {
    let tpl = template();
    let files = target_files(tpl.path()).unwrap();
    // MANIFEST, the base's four segments and the delta's three.
    assert_eq!(files.len(), 8);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("b");
    copy_dir(tpl.path(), &dir);
    for (fi, f) in files.iter().enumerate() {
        let rel = f.strip_prefix(tpl.path()).unwrap();
        let original = fs::read(f).unwrap();
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for p in positions(original.len()) {
            let mut m = vec![fi as u8, 0];
            m.extend_from_slice(&(p as u32).to_le_bytes());
            m.push(0x5a);
            cases.push(m);
        }
        for t in (0..original.len()).step_by(original.len() / 40 + 1) {
            let mut m = vec![fi as u8, 1];
            m.extend_from_slice(&(t as u32).to_le_bytes());
            cases.push(m);
        }
        for m in cases {
            apply_mutation(&dir, &m).unwrap();
            match Artifact::open(&dir) {
                Err(StorageError::Corrupt { .. } | StorageError::UnsupportedFormat { .. }) => {}
                Err(e) => panic!("unexpected error kind for {rel:?} {m:?}: {e:?}"),
                Ok(a) => {
                    exercise(&a);
                    assert!(
                        !a.verify(true).is_empty(),
                        "damage to {rel:?} {m:?} went unnoticed"
                    );
                }
            }
            fs::write(dir.join(rel), &original).unwrap();
        }
    }
}

/// Rewrites segment `file` with one byte changed, under its new content hash, and points
/// the manifest at it, so only structural checks stand between the damage and the reader.
fn damage_behind_the_hash(dir: &Path, seg: &Path, pos: usize, xor: u8) -> bool {
    let mut bytes = fs::read(seg).unwrap();
    bytes[pos] ^= xor;
    let old_hash = *blake3::hash(&fs::read(seg).unwrap()).as_bytes();
    let new_hash = *blake3::hash(&bytes).as_bytes();
    let mpath = dir.join(names::MANIFEST);
    let mut m: ManifestBody = manifest::decode(&fs::read(&mpath).unwrap(), &mpath).unwrap();
    let mut found = false;
    for s in m.layers.iter_mut().flat_map(|l| l.segments.iter_mut()) {
        if s.hash == old_hash {
            s.hash = new_hash;
            found = true;
            fs::write(dir.join(names::SEGMENTS_DIR).join(s.file_name()), &bytes).unwrap();
        }
    }
    fs::write(&mpath, manifest::encode(&m).unwrap()).unwrap();
    found
}

#[test]
fn structural_damage_with_valid_hashes_is_caught_by_open_or_verify() {
    let tpl = template();
    let segs: Vec<_> = target_files(tpl.path())
        .unwrap()
        .into_iter()
        .skip(1)
        .collect();
    let (mut detected, mut total) = (0, 0);
    for seg in &segs {
        let len = fs::metadata(seg).unwrap().len() as usize;
        for pos in positions(len).step_by(3) {
            let work = tempfile::tempdir().unwrap();
            copy_dir(tpl.path(), work.path());
            let seg_copy = work.path().join(seg.strip_prefix(tpl.path()).unwrap());
            assert!(damage_behind_the_hash(work.path(), &seg_copy, pos, 0xff));
            total += 1;
            match Artifact::open(work.path()) {
                Err(StorageError::Corrupt { .. } | StorageError::UnsupportedFormat { .. }) => {
                    detected += 1
                }
                Err(e) => panic!("{e:?}"),
                Ok(a) => {
                    exercise(&a);
                    assert_eq!(
                        a.verify(true),
                        a.verify(false),
                        "hashes match, so deep adds nothing"
                    );
                    if !a.verify(false).is_empty() {
                        detected += 1;
                    }
                }
            }
        }
    }
    eprintln!("structural flips detected: {detected} of {total}");
    // Some bytes are legitimately free (padding, line numbers, content hashes); most are not.
    assert!(
        detected * 10 >= total * 6,
        "only {detected} of {total} structural flips detected"
    );
}

#[test]
fn random_multi_byte_mutations_never_panic() {
    use batho_storage::fuzzing::Rng;
    let tpl = template();
    let mut rng = Rng::new(1234);
    let work = tempfile::tempdir().unwrap();
    for round in 0..300 {
        let dir = work.path().join(format!("r{round}"));
        copy_dir(tpl.path(), &dir);
        let truncate = rng.below(4) == 0;
        let mut data = vec![rng.below(8) as u8, u8::from(truncate)];
        if truncate {
            data.extend_from_slice(&(rng.next_u64() as u32).to_le_bytes());
        }
        for _ in 0..1 + rng.below(12) {
            data.extend_from_slice(&(rng.next_u64() as u32).to_le_bytes());
            data.push(rng.next_u64() as u8 | 1);
        }
        apply_mutation(&dir, &data).unwrap();
        let target = &target_files(&dir).unwrap()[usize::from(data[0]) % 5];
        let original = tpl.path().join(target.strip_prefix(&dir).unwrap());
        let changed = fs::read(target).unwrap() != fs::read(original).unwrap();
        match batho_storage::fuzzing::open_and_exercise(&dir) {
            Ok(issues) => assert!(
                !changed || !issues.is_empty(),
                "mutation {data:?} went unnoticed"
            ),
            Err(StorageError::Corrupt { .. } | StorageError::UnsupportedFormat { .. }) => {}
            Err(e) => panic!("{e:?}"),
        }
        fs::remove_dir_all(&dir).unwrap();
    }
}
