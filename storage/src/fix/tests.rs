//! Unit tests of `fix` on small stores: every kind of damage is found by the right
//! phase, and every derivable one is repaired.

use std::fs;
use std::path::{Path, PathBuf};

use super::*;
use crate::audit::AuditLog;
use crate::format::{SegmentKind, bitmaps_col, edges_col, names, nodes_col};
use crate::fuzzing::{sample_graph, sample_run};
use crate::manifest::{self, ManifestBody};
use crate::{Artifact, Store};

/// A store with `builds` generations of different graphs.
fn store_with(builds: u64) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(".batho");
    let store = Store::create_or_open(&dir).unwrap();
    let mut w = store.lock_writer().unwrap();
    for b in 0..builds {
        let g = sample_graph(b + 3, 300 + 10 * b as usize, 1200);
        w.commit(&g, sample_run(&g)).unwrap();
    }
    (tmp, dir)
}

fn run(dir: &Path, deep: bool, dry_run: bool) -> FixReport {
    fix(
        dir,
        &FixOptions {
            deep,
            dry_run,
            ..Default::default()
        },
    )
    .unwrap()
}

fn current_body(dir: &Path) -> ManifestBody {
    let p = dir.join(names::MANIFEST);
    manifest::decode(&fs::read(&p).unwrap(), &p).unwrap()
}

/// The current generation's segment of `kind`.
fn segment(dir: &Path, kind: SegmentKind) -> PathBuf {
    let m = current_body(dir);
    let s = m.layers[0]
        .segments
        .iter()
        .find(|s| s.kind == kind as u8)
        .unwrap();
    dir.join(names::SEGMENTS_DIR).join(s.file_name())
}

/// File offset and length of column `id`'s data in a segment file.
fn column(bytes: &[u8], id: u32) -> (usize, usize) {
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap()) as usize;
    let count = u32_at(64) as usize;
    for c in 0..count {
        let e = 64 + 8 + 64 * c;
        if u32_at(e) == id {
            return (64 + u64_at(e + 24), u64_at(e + 32));
        }
    }
    panic!("no column {id}");
}

fn flip(path: &Path, pos: usize) {
    let mut b = fs::read(path).unwrap();
    b[pos] ^= 0x5a;
    fs::write(path, b).unwrap();
}

fn flip_column(dir: &Path, kind: SegmentKind, id: u32) {
    let p = segment(dir, kind);
    let (off, len) = column(&fs::read(&p).unwrap(), id);
    assert!(len > 4, "column {id} too short to damage");
    flip(&p, off + len / 2);
}

fn assert_clean_after(dir: &Path) {
    let again = run(dir, true, false);
    assert_eq!(again.outcome, FixOutcome::Clean, "{:#?}", again.remaining);
    assert!(again.repairs.is_empty());
    let a = Artifact::open(dir).unwrap();
    assert!(a.verify(true).is_empty());
}

fn actions(r: &FixReport) -> Vec<&str> {
    r.repairs.iter().map(|r| r.action.as_str()).collect()
}

#[test]
fn a_sound_store_is_clean_in_every_mode() {
    let (_t, dir) = store_with(2);
    for deep in [false, true] {
        for parallel in [false, true] {
            let r = fix(
                &dir,
                &FixOptions {
                    deep,
                    parallel,
                    ..Default::default()
                },
            )
            .unwrap();
            assert_eq!(r.outcome, FixOutcome::Clean, "{:#?}", r.findings);
            assert!(r.remaining.is_empty());
            assert_eq!(r.segments_checked, 8);
            assert_eq!(r.bytes_hashed > 0, deep);
        }
    }
    assert!(
        !dir.join(crate::audit::AUDIT_LOG).exists(),
        "nothing to log"
    );
}

#[test]
fn no_artifact_is_critical() {
    let tmp = tempfile::tempdir().unwrap();
    let r = run(&tmp.path().join(".batho"), false, false);
    assert_eq!(r.outcome, FixOutcome::Critical);
    assert_eq!(r.outcome.exit_code(), 2);
}

#[test]
fn leftover_temp_files_are_deleted_and_logged() {
    let (_t, dir) = store_with(1);
    let junk = dir.join(names::SEGMENTS_DIR).join("x.seg.tmp-0123");
    fs::write(&junk, b"half").unwrap();
    let dry = run(&dir, false, true);
    assert_eq!(
        dry.outcome,
        FixOutcome::Clean,
        "a leftover is only a warning"
    );
    assert_eq!(dry.findings.len(), 1);
    assert!(dry.findings[0].repair.is_some());
    assert!(junk.exists());
    let r = run(&dir, false, false);
    assert_eq!(actions(&r), ["delete_temp"]);
    assert_eq!(r.outcome, FixOutcome::Repaired);
    assert!(!junk.exists());
    assert_eq!(r.audit.len(), 1);
    assert_eq!(AuditLog::new(&dir).entries().unwrap(), r.audit);
    assert_clean_after(&dir);
}

#[test]
fn a_damaged_manifest_is_restored_from_its_copy() {
    let (_t, dir) = store_with(2);
    let before = current_body(&dir);
    flip(&dir.join(names::MANIFEST), 100);
    let dry = run(&dir, false, true);
    assert_eq!(dry.outcome, FixOutcome::ErrorsLeft);
    assert_eq!(dry.findings[0].what, "MANIFEST");
    let r = run(&dir, false, false);
    assert_eq!(actions(&r), ["restore_manifest"]);
    assert_eq!(current_body(&dir), before);
    assert_clean_after(&dir);
}

#[test]
fn a_damaged_current_copy_is_rewritten_and_an_old_one_set_aside() {
    let (_t, dir) = store_with(2);
    flip(&crate::store::generation_manifest_path(&dir, 2), 70);
    flip(&crate::store::generation_manifest_path(&dir, 1), 70);
    let dry = run(&dir, false, true);
    assert_eq!(
        dry.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count(),
        2
    );
    let r = run(&dir, false, false);
    assert_eq!(actions(&r), ["restore_manifest_copy", "set_aside"]);
    assert_eq!(r.outcome, FixOutcome::Repaired);
    // Generation 1 is lost: its run stays in the history, with a warning.
    assert!(
        r.remaining
            .iter()
            .all(|f| f.severity == Severity::Warning && f.detail.contains("is gone"))
    );
    assert!(
        Store::create_or_open(&dir)
            .unwrap()
            .open_generation(2)
            .is_ok()
    );
    assert_clean_after(&dir);
}

#[test]
fn a_damaged_dbid_is_recreated() {
    let (_t, dir) = store_with(1);
    flip(&dir.join(names::DBID), 20);
    assert_eq!(run(&dir, false, true).outcome, FixOutcome::ErrorsLeft);
    let r = run(&dir, false, false);
    assert_eq!(actions(&r), ["recreate_dbid"]);
    assert_eq!(
        Store::create_or_open(&dir).unwrap().db_uuid(),
        current_body(&dir).db_uuid
    );
    assert_clean_after(&dir);
}

#[test]
fn a_damaged_segment_header_is_recomputed_even_in_quick_mode() {
    let (_t, dir) = store_with(1);
    let seg = segment(&dir, SegmentKind::Edges);
    let orig = fs::read(&seg).unwrap();
    flip(&seg, 20);
    let dry = run(&dir, false, true);
    assert_eq!(dry.outcome, FixOutcome::ErrorsLeft);
    assert!(dry.findings.iter().any(|f| f.phase == 3));
    let r = run(&dir, false, false);
    assert_eq!(actions(&r), ["restore_segment"]);
    assert_eq!(fs::read(&seg).unwrap(), orig);
    assert_clean_after(&dir);
}

#[test]
fn derived_columns_are_restored_to_their_exact_bytes() {
    for (kind, id) in [
        (SegmentKind::Nodes, nodes_col::NAME_INDEX),
        (SegmentKind::Nodes, nodes_col::ID_INDEX),
        (SegmentKind::Edges, edges_col::IN_PERM),
        (SegmentKind::Bitmaps, bitmaps_col::DATA),
    ] {
        let (_t, dir) = store_with(1);
        let seg = segment(&dir, kind);
        let orig = fs::read(&seg).unwrap();
        flip_column(&dir, kind, id);
        // Payload damage is invisible to a quick run by design (it reads no column)...
        assert_eq!(run(&dir, false, true).outcome, FixOutcome::Clean);
        // ...and found by a deep one.
        let dry = run(&dir, true, true);
        assert_eq!(dry.outcome, FixOutcome::ErrorsLeft, "{kind:?} {id}");
        let r = run(&dir, true, false);
        assert_eq!(
            actions(&r),
            ["restore_segment"],
            "{kind:?} {id}: {:#?}",
            r.remaining
        );
        assert_eq!(fs::read(&seg).unwrap(), orig, "{kind:?} {id}");
        assert_eq!(r.generation_after, Some(1), "restored in place");
        assert_clean_after(&dir);
    }
}

#[test]
fn damaged_primary_data_falls_back_to_the_newest_intact_generation() {
    for (kind, id) in [
        (SegmentKind::Nodes, nodes_col::START_LINE),
        (SegmentKind::Edges, edges_col::LINE),
        (SegmentKind::Strings, crate::format::strings_col::BYTES),
    ] {
        let (_t, dir) = store_with(2);
        let old = Artifact::open_generation(&dir, 1).unwrap();
        let old_ids: Vec<String> = old.nodes().map(|n| n.id().into_owned()).collect();
        flip_column(&dir, kind, id);
        let r = run(&dir, true, false);
        assert!(
            actions(&r).contains(&"fallback"),
            "{kind:?}: {:?}",
            r.repairs
        );
        assert_eq!(r.outcome, FixOutcome::Repaired, "{:#?}", r.remaining);
        assert_eq!(r.generation_after, Some(3));
        let a = Artifact::open(&dir).unwrap();
        assert_eq!(
            a.nodes().map(|n| n.id().into_owned()).collect::<Vec<_>>(),
            old_ids
        );
        assert!(a.last_run().unwrap().message.contains("current again"));
        assert_clean_after(&dir);
    }
}

#[test]
fn primary_damage_without_an_older_generation_is_an_error_left() {
    let (_t, dir) = store_with(1);
    flip_column(&dir, SegmentKind::Nodes, nodes_col::START_LINE);
    let r = run(&dir, true, false);
    assert_eq!(r.outcome, FixOutcome::ErrorsLeft);
    assert!(
        r.remaining
            .iter()
            .any(|f| f.detail.contains("batho build --full"))
    );
}

/// Rewrites a segment with one derived byte changed under its new hash (as a buggy writer
/// would), so only the structural checks see it.
fn damage_behind_the_hash(dir: &Path, kind: SegmentKind, id: u32) {
    let seg = segment(dir, kind);
    let mut bytes = fs::read(&seg).unwrap();
    let (off, len) = column(&bytes, id);
    bytes[off + len / 2] ^= 0x5a;
    let mut m = current_body(dir);
    for s in &mut m.layers[0].segments {
        if s.kind == kind as u8 {
            s.hash = *blake3::hash(&bytes).as_bytes();
            fs::write(dir.join(names::SEGMENTS_DIR).join(s.file_name()), &bytes).unwrap();
        }
    }
    let enc = manifest::encode(&m).unwrap();
    fs::write(dir.join(names::MANIFEST), &enc).unwrap();
    fs::write(
        crate::store::generation_manifest_path(dir, m.generation),
        &enc,
    )
    .unwrap();
}

#[test]
fn wrong_derived_data_under_a_valid_hash_is_rebuilt_as_a_new_generation() {
    let (_t, dir) = store_with(1);
    damage_behind_the_hash(&dir, SegmentKind::Bitmaps, bitmaps_col::DATA);
    assert_eq!(
        run(&dir, false, false).outcome,
        FixOutcome::Clean,
        "quick reads no column"
    );
    let r = run(&dir, true, false);
    assert_eq!(actions(&r), ["rebuild_derived"], "{:#?}", r.findings);
    assert_eq!(r.generation_after, Some(2));
    assert_clean_after(&dir);
}

#[test]
fn parallel_and_sequential_deep_runs_agree() {
    let (_t, dir) = store_with(2);
    flip_column(&dir, SegmentKind::Bitmaps, bitmaps_col::DATA);
    let seq = run(&dir, true, true);
    let par = fix(
        &dir,
        &FixOptions {
            deep: true,
            dry_run: true,
            parallel: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(seq.findings, par.findings);
    assert!(!seq.findings.is_empty());
}

#[test]
fn phases_and_targets_limit_the_checks() {
    let (_t, dir) = store_with(1);
    fs::write(dir.join("MANIFEST.tmp-77"), b"x").unwrap();
    flip_column(&dir, SegmentKind::Bitmaps, bitmaps_col::DATA);
    let only = |target, phase| {
        fix(
            &dir,
            &FixOptions {
                deep: true,
                dry_run: true,
                target,
                phase,
                ..Default::default()
            },
        )
        .unwrap()
    };
    let state = only(FixTarget::State, None);
    assert_eq!(state.phases, [1, 2]);
    assert!(state.findings.iter().all(|f| f.phase == 2));
    assert_eq!(state.findings.len(), 1);
    let blobs = only(FixTarget::Blobs, None);
    assert!(!blobs.findings.is_empty() && blobs.findings.iter().all(|f| f.phase == 3));
    let graph = only(FixTarget::All, Some(4));
    assert!(!graph.findings.is_empty() && graph.findings.iter().all(|f| f.phase == 4));
}

#[test]
fn a_tampered_audit_log_is_reported_and_left_alone() {
    let (_t, dir) = store_with(1);
    let log = AuditLog::new(&dir);
    log.append("gc.prune", "one").unwrap();
    log.append("gc.reclaim", "two").unwrap();
    let text = fs::read_to_string(log.path())
        .unwrap()
        .replace("one", "uno");
    fs::write(log.path(), &text).unwrap();
    let r = run(&dir, false, false);
    assert_eq!(r.outcome, FixOutcome::ErrorsLeft);
    assert!(r.remaining.iter().any(|f| f.what.starts_with("audit.log")));
    assert_eq!(
        fs::read_to_string(log.path()).unwrap(),
        text,
        "never rewritten"
    );
}

#[test]
fn repairs_wait_for_the_writer_lock() {
    let (_t, dir) = store_with(1);
    flip(&dir.join(names::MANIFEST), 100);
    let store = Store::create_or_open(&dir).unwrap();
    let held = store.lock_writer().unwrap();
    let r = run(&dir, false, false);
    assert_eq!(r.outcome, FixOutcome::ErrorsLeft);
    assert!(r.repairs.is_empty());
    assert!(r.remaining.iter().any(|f| f.what == names::LOCK));
    drop(held);
    assert_eq!(run(&dir, false, false).outcome, FixOutcome::Repaired);
}

#[test]
fn any_flipped_segment_byte_is_found_and_repaired_when_an_older_generation_exists() {
    let (_t, tpl) = store_with(2);
    let m = current_body(&tpl);
    let (mut restored, mut fell_back, mut total) = (0, 0, 0);
    for seg in &m.layers[0].segments {
        let rel = PathBuf::from(names::SEGMENTS_DIR).join(seg.file_name());
        let len = seg.len as usize;
        // Every header byte, then a stride over the payload.
        let positions: Vec<usize> = (0..64)
            .step_by(7)
            .chain((64..len).step_by(len / 25 + 1))
            .collect();
        for pos in positions {
            let work = tempfile::tempdir().unwrap();
            let dir = work.path().join(".batho");
            crate::fuzzing::copy_store(&tpl, &dir).unwrap();
            flip(&dir.join(&rel), pos);
            total += 1;
            let dry = run(&dir, true, true);
            assert_eq!(dry.outcome, FixOutcome::ErrorsLeft, "{rel:?} byte {pos}");
            let r = run(&dir, true, false);
            assert_eq!(
                r.outcome,
                FixOutcome::Repaired,
                "{rel:?} byte {pos}: {:#?}",
                r.remaining
            );
            if actions(&r).contains(&"fallback") {
                fell_back += 1;
            } else {
                restored += 1;
                assert_eq!(
                    fs::read(dir.join(&rel)).unwrap(),
                    fs::read(tpl.join(&rel)).unwrap(),
                    "{rel:?} byte {pos}"
                );
            }
            let again = run(&dir, true, false);
            assert_eq!(
                again.outcome,
                FixOutcome::Clean,
                "{rel:?} byte {pos}: {:#?}",
                again.remaining
            );
        }
    }
    eprintln!("{total} flips: {restored} restored exactly, {fell_back} fell back");
    assert!(restored > 0 && fell_back > 0);
}

#[test]
fn a_damaged_audit_head_is_reported() {
    let (_t, dir) = store_with(1);
    let log = AuditLog::new(&dir);
    log.append("gc.reclaim", "one").unwrap();
    log.append("gc.reclaim", "two").unwrap();
    flip(&dir.join(crate::audit::AUDIT_HEAD), 10);
    let r = run(&dir, false, true);
    assert_eq!(r.outcome, FixOutcome::ErrorsLeft);
    assert!(
        r.findings.iter().any(|f| f.what == "audit.log"),
        "{:#?}",
        r.findings
    );
}

#[test]
fn a_damaged_dbid_blocks_repairs_outside_phase_1_without_failing() {
    let (_t, dir) = store_with(1);
    flip(&dir.join(names::DBID), 20);
    fs::write(dir.join("MANIFEST.tmp-1"), b"x").unwrap();
    let r = fix(
        &dir,
        &FixOptions {
            target: FixTarget::Blobs,
            phase: Some(2),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(r.outcome, FixOutcome::ErrorsLeft);
    assert!(r.remaining.iter().any(|f| f.what == names::DBID));
    assert_eq!(run(&dir, false, false).outcome, FixOutcome::Repaired);
}

#[test]
fn a_damaged_bitmaps_segment_the_writer_cannot_reproduce_is_rebuilt() {
    // A bitmaps segment whose bytes differ from what this writer produces (as if an older
    // writer wrote it), then damaged: restoring its exact bytes is impossible, but it holds
    // derived data only, so the generation is rebuilt from the intact primary segments.
    let (_t, dir) = store_with(1);
    damage_behind_the_hash(&dir, SegmentKind::Bitmaps, bitmaps_col::DATA);
    flip_column(&dir, SegmentKind::Bitmaps, bitmaps_col::DATA);
    let r = run(&dir, true, false);
    assert_eq!(
        actions(&r),
        ["rebuild_derived", "set_aside", "set_aside"],
        "{:#?}",
        r.findings
    );
    assert_eq!(r.outcome, FixOutcome::Repaired, "{:#?}", r.remaining);
    assert_eq!(r.generation_after, Some(2));
    assert_clean_after(&dir);
}

/// A store whose current generation (2) is a delta over generation 1's base.
fn store_with_delta() -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = store_with(1);
    let store = Store::create_or_open(&dir).unwrap();
    let mut w = store.lock_writer().unwrap();
    w.set_delta_limit(u32::MAX);
    let a = store.open_current().unwrap();
    let frag = crate::fuzzing::sample_fragment(&a);
    w.commit_fragment(&a, &frag, sample_run(&frag.graph))
        .unwrap();
    assert!(store.open_current().unwrap().has_delta());
    (tmp, dir)
}

fn flip_delta_column(dir: &Path, kind: SegmentKind, id: u32) {
    let m = current_body(dir);
    let s = m.layers[1]
        .segments
        .iter()
        .find(|s| s.kind == kind as u8)
        .unwrap();
    let p = dir.join(names::SEGMENTS_DIR).join(s.file_name());
    let (off, len) = column(&fs::read(&p).unwrap(), id);
    assert!(len > 0, "column {id} is empty");
    flip(&p, off + len / 2);
}

#[test]
fn a_sound_delta_store_is_clean_and_its_segments_are_checked() {
    let (_t, dir) = store_with_delta();
    let r = run(&dir, true, false);
    assert_eq!(r.outcome, FixOutcome::Clean, "{:#?}", r.findings);
    assert_eq!(r.segments_checked, 7);
}

#[test]
fn damage_to_a_delta_index_is_restored_in_place() {
    let (_t, dir) = store_with_delta();
    flip_delta_column(&dir, SegmentKind::DeltaNodes, nodes_col::NAME_INDEX);
    let r = run(&dir, true, false);
    assert!(actions(&r).contains(&"restore_segment"), "{:?}", r.repairs);
    assert_eq!(r.generation_after, Some(2), "restored in place");
    assert_clean_after(&dir);
    assert!(Artifact::open(&dir).unwrap().has_delta());
}

#[test]
fn damaged_delta_rows_fall_back_to_the_base_generation() {
    let (_t, dir) = store_with_delta();
    let old = Artifact::open_generation(&dir, 1).unwrap();
    let old_ids: Vec<String> = old.nodes().map(|n| n.id().into_owned()).collect();
    flip_delta_column(&dir, SegmentKind::DeltaNodes, nodes_col::START_LINE);
    let r = run(&dir, true, false);
    assert!(actions(&r).contains(&"fallback"), "{:?}", r.repairs);
    let a = Artifact::open(&dir).unwrap();
    assert!(!a.has_delta());
    assert_eq!(
        a.nodes().map(|n| n.id().into_owned()).collect::<Vec<_>>(),
        old_ids
    );
    assert_clean_after(&dir);
}

/// The copy of a generation whose layers live on in the current one is rebuilt from it:
/// the base under a delta (the fault campaign found it set aside, its run left dangling).
#[test]
fn a_damaged_copy_of_the_base_under_a_delta_is_rebuilt_from_the_current_generation() {
    let (_t, dir) = store_with_delta();
    let before: Vec<String> = Artifact::open_generation(&dir, 1)
        .unwrap()
        .nodes()
        .map(|n| n.id().into_owned())
        .collect();
    flip(&crate::store::generation_manifest_path(&dir, 1), 70);
    assert!(Artifact::open_generation(&dir, 1).is_err());
    let r = run(&dir, false, false);
    assert_eq!(actions(&r), ["restore_manifest_copy"], "{:?}", r.repairs);
    assert!(r.remaining.is_empty(), "{:#?}", r.remaining);
    let after: Vec<String> = Artifact::open_generation(&dir, 1)
        .unwrap()
        .nodes()
        .map(|n| n.id().into_owned())
        .collect();
    assert_eq!(after, before);
    assert_clean_after(&dir);
}

/// A deleted copy of such a generation is rebuilt the same way (its run was left
/// pointing at nothing).
#[test]
fn a_deleted_copy_of_the_base_under_a_delta_is_rebuilt_from_the_current_generation() {
    let (_t, dir) = store_with_delta();
    fs::remove_file(crate::store::generation_manifest_path(&dir, 1)).unwrap();
    let dry = run(&dir, false, true);
    assert!(
        dry.findings.iter().any(|f| f.repair.is_some()),
        "{:#?}",
        dry.findings
    );
    let r = run(&dir, false, false);
    assert_eq!(actions(&r), ["restore_manifest_copy"], "{:?}", r.repairs);
    assert!(r.remaining.is_empty(), "{:#?}", r.remaining);
    assert!(Artifact::open_generation(&dir, 1).is_ok());
    assert_clean_after(&dir);
}
