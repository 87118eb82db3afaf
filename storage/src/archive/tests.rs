//! Export → load round trips, every rejection, and loads abandoned after each step.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::*;
use crate::fuzzing::{sample_graph, sample_run};
use crate::store::CommitStep;
use crate::{Artifact, EdgeIdx};

/// Everything a query can see of a graph, as text (node ids, properties, edges).
fn digest(a: &Artifact) -> Vec<String> {
    let mut out: Vec<String> = a
        .nodes()
        .map(|n| {
            format!(
                "{} {:?} {} {}-{} {} {:?}",
                n.id(),
                n.kind(),
                n.file(),
                n.start_line(),
                n.end_line(),
                n.signature(),
                n.content_hash()
            )
        })
        .collect();
    for e in 0..a.edge_count() {
        let e = a.edge(EdgeIdx(e));
        out.push(format!(
            "{} -{:?}/{:?}/{:?}/{}-> {} @{}:{}",
            a.node(e.src()).id(),
            e.rel(),
            e.roles(),
            e.strategy(),
            e.confidence(),
            a.node(e.dst()).id(),
            e.file(),
            e.line()
        ));
    }
    out
}

/// A store with one committed sample graph; returns its directory inside `root`.
fn store_with(root: &Path, name: &str, seed: u64, nodes: usize) -> PathBuf {
    let dir = root.join(name).join(".batho");
    let store = Store::create_or_open(&dir).unwrap();
    let g = sample_graph(seed, nodes, nodes * 3);
    let mut run = sample_run(&g);
    run.ended_at_ms = 1_000 + seed as i64;
    store.lock_writer().unwrap().commit(&g, run).unwrap();
    dir
}

fn current_generation(dir: &Path) -> Option<u64> {
    Store::create_or_open(dir)
        .unwrap()
        .current_manifest()
        .unwrap()
        .map(|m| m.generation)
}

fn no_temp_dirs(dir: &Path) -> bool {
    // A load rejected before it created the folder left nothing behind either.
    let Ok(entries) = fs::read_dir(dir) else {
        return !dir.exists();
    };
    entries
        .flatten()
        .all(|e| !e.file_name().to_string_lossy().starts_with(LOAD_TMP_PREFIX))
}

#[test]
fn export_then_load_into_a_fresh_repo_gives_the_same_graph() {
    let tmp = tempfile::tempdir().unwrap();
    let src = store_with(tmp.path(), "a", 7, 60);
    let out = tmp.path().join("a.tar");
    let rep = export_archive(&src, None, &out).unwrap();
    assert_eq!(rep.members.len(), 5, "manifest + 4 segments");
    assert_eq!(read_index(&out).unwrap().members, rep.members);

    let dst = tmp.path().join("b").join(".batho");
    let load = load_archive(&dst, &out, &LoadOptions::default()).unwrap();
    assert!(load.verified && !load.restamped);
    assert_eq!(load.previous_generation, None);
    let (a, b) = (Artifact::open(&src).unwrap(), Artifact::open(&dst).unwrap());
    assert_eq!(digest(&a), digest(&b));
    assert_eq!(a.db_uuid(), b.db_uuid(), "a fresh repo adopts the identity");
    assert_eq!(b.verify(true), vec![]);
    let last = b.last_run().unwrap();
    assert_eq!(last.kind, RunKind::Build);
    assert!(last.message.starts_with("loaded from "), "{}", last.message);
    assert_eq!(loaded_source_end(&last), Some(1_007));
    assert_eq!(last.generation, b.generation());
    let audit = AuditLog::new(&dst).entries().unwrap();
    assert_eq!(audit.last().unwrap().action, "load");
    assert!(no_temp_dirs(&dst));

    // Loading the same archive again: nothing newer in the target, same identity.
    let again = load_archive(&dst, &out, &LoadOptions::default()).unwrap();
    assert_eq!(
        again.segments_written, 0,
        "content-addressed segments are reused"
    );
    assert_eq!(again.previous_generation, Some(load.generation));
}

#[test]
fn an_older_generation_can_be_exported() {
    let tmp = tempfile::tempdir().unwrap();
    let src = store_with(tmp.path(), "a", 3, 30);
    let first = current_generation(&src).unwrap();
    let store = Store::create_or_open(&src).unwrap();
    let g = sample_graph(4, 45, 100);
    store
        .lock_writer()
        .unwrap()
        .commit(&g, sample_run(&g))
        .unwrap();
    let out = tmp.path().join("old.tar");
    let rep = export_archive(&src, Some(first), &out).unwrap();
    assert_eq!((rep.generation, rep.node_count), (first, 30));
    let err = export_archive(&src, Some(999), &out).unwrap_err();
    assert!(matches!(
        err,
        ArchiveError::Storage(StorageError::NoSuchGeneration { .. })
    ));
    let none = tmp.path().join("empty");
    assert!(matches!(
        export_archive(&none, None, &out).unwrap_err(),
        ArchiveError::Storage(StorageError::NoArtifact { .. })
    ));
}

#[test]
fn a_damaged_segment_is_not_exported() {
    let tmp = tempfile::tempdir().unwrap();
    let src = store_with(tmp.path(), "a", 5, 40);
    let seg = crate::fuzzing::target_files(&src).unwrap()[1].clone();
    let mut b = fs::read(&seg).unwrap();
    let k = b.len() - 1;
    b[k] ^= 1;
    fs::write(&seg, b).unwrap();
    let out = tmp.path().join("x.tar");
    let err = export_archive(&src, None, &out).unwrap_err();
    assert!(
        matches!(err, ArchiveError::Storage(StorageError::Corrupt { .. })),
        "{err}"
    );
    assert!(!out.exists(), "no partial archive is left");
}

/// A load into a repository whose segment file of the same name is damaged (same length)
/// replaces it with the archive's verified copy instead of publishing the damage.
#[test]
fn a_load_replaces_a_damaged_segment_of_the_same_name() {
    let tmp = tempfile::tempdir().unwrap();
    let src = store_with(tmp.path(), "a", 7, 60);
    let out = tmp.path().join("a.tar");
    export_archive(&src, None, &out).unwrap();
    let dst = tmp.path().join("b").join(".batho");
    load_archive(&dst, &out, &LoadOptions::default()).unwrap();
    crate::fuzzing::flip_a_byte_of_the_largest_segment(&dst).unwrap();
    // Opening hashes the changed segment: the damage is an error, not wrong answers.
    assert!(matches!(
        Artifact::open(&dst),
        Err(crate::StorageError::Corrupt { .. })
    ));

    let again = load_archive(&dst, &out, &LoadOptions::default()).unwrap();
    assert_eq!(again.segments_written, 1);
    assert_eq!(Artifact::open(&dst).unwrap().verify(true), vec![]);
}

/// A file that is not an archive (a secrets file given by mistake) is refused without
/// quoting any of it (issue 28, item 5).
#[test]
fn a_load_error_never_quotes_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("secret.env");
    fs::write(&secret, "API_KEY=sk-SECRET-1234567890\n".repeat(40)).unwrap();
    let json = tmp.path().join("index.json");
    fs::write(
        &json,
        format!("{{\"format\": \"SECRET-VALUE\"{}}}", " ".repeat(600)),
    )
    .unwrap();
    for input in [&secret, &json] {
        let dst = tmp.path().join("b").join(".batho");
        let err = load_archive(&dst, input, &LoadOptions::default()).unwrap_err();
        let message = format!("{err} {err:?}");
        assert!(err.is_bad_archive(), "{message}");
        assert!(
            !message.contains("SECRET") && !message.contains("API_KEY"),
            "{message}"
        );
    }
}

#[test]
fn replacing_needs_force_for_another_database_or_newer_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let src = store_with(tmp.path(), "a", 7, 60);
    let out = tmp.path().join("a.tar");
    export_archive(&src, None, &out).unwrap();

    // Another database: refused, then restamped with --force.
    let other = store_with(tmp.path(), "b", 9, 20);
    let before = current_generation(&other);
    let err = load_archive(&other, &out, &LoadOptions::default()).unwrap_err();
    assert!(matches!(err, ArchiveError::ForeignDatabase { .. }), "{err}");
    assert!(!err.is_bad_archive());
    assert_eq!(current_generation(&other), before);
    let force = LoadOptions {
        force: true,
        ..LoadOptions::default()
    };
    let rep = load_archive(&other, &out, &force).unwrap();
    assert!(rep.restamped);
    let b = Artifact::open(&other).unwrap();
    let a = Artifact::open(&src).unwrap();
    assert_ne!(a.db_uuid(), b.db_uuid(), "the target keeps its identity");
    assert_eq!(digest(&a), digest(&b));
    assert_eq!(b.verify(true), vec![]);
    // The replaced generation stays readable.
    assert_eq!(
        Store::create_or_open(&other)
            .unwrap()
            .open_generation(before.unwrap())
            .unwrap()
            .node_count(),
        20
    );

    // Same database, but the target moved on (a newer build): refused without --force.
    let store = Store::create_or_open(&src).unwrap();
    let g = sample_graph(11, 10, 20);
    let mut run = sample_run(&g);
    run.ended_at_ms = 5_000;
    store.lock_writer().unwrap().commit(&g, run).unwrap();
    let err = load_archive(&src, &out, &LoadOptions::default()).unwrap_err();
    assert!(matches!(err, ArchiveError::NewerRuns { .. }), "{err}");
    load_archive(&src, &out, &force).unwrap();
    assert_eq!(Artifact::open(&src).unwrap().node_count(), 60);
}

/// A member to write: raw name, entry type, data.
type Raw = (Vec<u8>, tar::EntryType, Vec<u8>);
/// A member read back: name, data.
type Member = (String, Vec<u8>);

/// Writes a tar by hand: `(name bytes, entry type, data)`; names are set raw so that
/// unsafe ones (which the tar crate's builder refuses) can be written.
fn raw_tar(path: &Path, members: &[(&[u8], tar::EntryType, &[u8])]) {
    let mut b = tar::Builder::new(fs::File::create(path).unwrap());
    for (name, kind, data) in members {
        let mut h = tar::Header::new_old();
        h.as_old_mut().name[..name.len()].copy_from_slice(name);
        h.set_entry_type(*kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    b.finish().unwrap();
}

/// The members of a real archive, in order.
fn members_of(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut t = tar::Archive::new(fs::File::open(path).unwrap());
    t.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = String::from_utf8(e.path_bytes().into_owned()).unwrap();
            let mut d = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut d).unwrap();
            (name, d)
        })
        .collect()
}

#[test]
fn every_kind_of_bad_archive_is_rejected_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let src = store_with(tmp.path(), "a", 7, 60);
    let good = tmp.path().join("good.tar");
    export_archive(&src, None, &good).unwrap();
    let m = members_of(&good);
    let reg = tar::EntryType::Regular;
    let index: ArchiveIndex = serde_json::from_slice(&m[0].1).unwrap();
    let with_index = |f: &dyn Fn(&mut ArchiveIndex)| {
        let mut i = index.clone();
        f(&mut i);
        serde_json::to_vec(&i).unwrap()
    };
    let mut flipped = m[2].1.clone();
    flipped[100] ^= 0x40;
    let v2 = with_index(&|i| i.archive_version = 2);
    let f2 = with_index(&|i| i.storage_format_version = FORMAT_VERSION + 1);
    let evil = with_index(&|i| i.members[0].name = "../../etc/passwd".into());
    let dup_listed = with_index(&|i| {
        let first = i.members[0].clone();
        i.members.push(first)
    });

    type Case<'a> = (
        &'a str,
        Vec<(Vec<u8>, tar::EntryType, Vec<u8>)>,
        fn(&ArchiveError) -> bool,
    );
    let all = |f: &dyn Fn(usize, &Member) -> Option<Raw>| {
        m.iter()
            .enumerate()
            .filter_map(|(k, x)| f(k, x))
            .collect::<Vec<_>>()
    };
    let same = |_: usize, x: &Member| Some((x.0.as_bytes().to_vec(), reg, x.1.clone()));
    let cases: Vec<Case> = vec![
        (
            "no index first",
            all(&|k, x| (k > 0).then(|| (x.0.as_bytes().to_vec(), reg, x.1.clone()))),
            |e| matches!(e, ArchiveError::NotAnArchive { .. }),
        ),
        (
            "archive version 2",
            all(&|k, x| {
                Some((
                    x.0.as_bytes().to_vec(),
                    reg,
                    if k == 0 { v2.clone() } else { x.1.clone() },
                ))
            }),
            |e| {
                matches!(
                    e,
                    ArchiveError::UnsupportedVersion {
                        archive_version: 2,
                        ..
                    }
                )
            },
        ),
        (
            "storage format 2",
            all(&|k, x| {
                Some((
                    x.0.as_bytes().to_vec(),
                    reg,
                    if k == 0 { f2.clone() } else { x.1.clone() },
                ))
            }),
            |e| {
                matches!(
                    e,
                    ArchiveError::UnsupportedVersion {
                        format_version,
                        ..
                    } if *format_version == FORMAT_VERSION + 1
                )
            },
        ),
        (
            "traversal in the index",
            all(&|k, x| {
                Some((
                    x.0.as_bytes().to_vec(),
                    reg,
                    if k == 0 { evil.clone() } else { x.1.clone() },
                ))
            }),
            |e| matches!(e, ArchiveError::UnsafePath { .. }),
        ),
        (
            "traversal member",
            {
                let mut v = all(&same);
                v.insert(1, (b"../evil".to_vec(), reg, b"x".to_vec()));
                v
            },
            |e| matches!(e, ArchiveError::UnsafePath { .. }),
        ),
        (
            "absolute member",
            {
                let mut v = all(&same);
                v.insert(1, (b"/tmp/evil".to_vec(), reg, b"x".to_vec()));
                v
            },
            |e| matches!(e, ArchiveError::UnsafePath { .. }),
        ),
        (
            "symlink member",
            all(&|k, x| {
                Some((
                    x.0.as_bytes().to_vec(),
                    if k == 2 { tar::EntryType::Symlink } else { reg },
                    if k == 2 { Vec::new() } else { x.1.clone() },
                ))
            }),
            |e| matches!(e, ArchiveError::NotARegularFile { .. }),
        ),
        (
            "directory member",
            {
                let mut v = all(&same);
                v.insert(
                    1,
                    (b"segments".to_vec(), tar::EntryType::Directory, Vec::new()),
                );
                v
            },
            |e| {
                matches!(
                    e,
                    ArchiveError::NotARegularFile { .. } | ArchiveError::UnexpectedMember { .. }
                )
            },
        ),
        (
            "duplicate member",
            {
                let mut v = all(&same);
                let d = v[1].clone();
                v.push(d);
                v
            },
            |e| matches!(e, ArchiveError::DuplicateMember { .. }),
        ),
        (
            "duplicate in the index",
            all(&|k, x| {
                Some((
                    x.0.as_bytes().to_vec(),
                    reg,
                    if k == 0 {
                        dup_listed.clone()
                    } else {
                        x.1.clone()
                    },
                ))
            }),
            |e| matches!(e, ArchiveError::DuplicateMember { .. }),
        ),
        (
            "unlisted member",
            {
                let mut v = all(&same);
                v.push((b"segments/notes.txt".to_vec(), reg, b"x".to_vec()));
                v
            },
            |e| matches!(e, ArchiveError::UnexpectedMember { .. }),
        ),
        (
            "missing segment",
            all(&|k, x| (k != 3).then(|| (x.0.as_bytes().to_vec(), reg, x.1.clone()))),
            |e| matches!(e, ArchiveError::MissingMember { .. }),
        ),
        (
            "flipped segment byte",
            all(&|k, x| {
                Some((
                    x.0.as_bytes().to_vec(),
                    reg,
                    if k == 2 { flipped.clone() } else { x.1.clone() },
                ))
            }),
            |e| matches!(e, ArchiveError::HashMismatch { .. }),
        ),
        (
            "short segment",
            all(&|k, x| {
                Some((
                    x.0.as_bytes().to_vec(),
                    reg,
                    if k == 2 {
                        x.1[..x.1.len() - 1].to_vec()
                    } else {
                        x.1.clone()
                    },
                ))
            }),
            |e| matches!(e, ArchiveError::SizeMismatch { .. }),
        ),
    ];
    let dst = store_with(tmp.path(), "b", 7, 60);
    let before = current_generation(&dst);
    for (what, members, ok) in cases {
        let path = tmp.path().join("bad.tar");
        let refs: Vec<(&[u8], tar::EntryType, &[u8])> = members
            .iter()
            .map(|(n, t, d)| (n.as_slice(), *t, d.as_slice()))
            .collect();
        raw_tar(&path, &refs);
        let force = LoadOptions {
            force: true,
            ..LoadOptions::default()
        };
        let err = load_archive(&dst, &path, &force).unwrap_err();
        assert!(ok(&err), "{what}: {err}");
        assert!(err.is_bad_archive(), "{what}");
        assert_eq!(current_generation(&dst), before, "{what}");
        assert!(no_temp_dirs(&dst), "{what}");
        assert!(!tmp.path().join("evil").exists() && !tmp.path().join("b").join("evil").exists());
    }

    // Oversized members, by the limit.
    let small = LoadOptions {
        force: true,
        max_member_bytes: 100,
    };
    let err = load_archive(&dst, &good, &small).unwrap_err();
    assert!(matches!(err, ArchiveError::Oversized { .. }), "{err}");

    // Not a tar at all, and a truncated archive.
    let junk = tmp.path().join("junk.tar");
    fs::write(&junk, b"this is not a tar file at all, just some words").unwrap();
    assert!(
        load_archive(&dst, &junk, &LoadOptions::default())
            .unwrap_err()
            .is_bad_archive()
    );
    let bytes = fs::read(&good).unwrap();
    let cut = tmp.path().join("cut.tar");
    fs::File::create(&cut)
        .unwrap()
        .write_all(&bytes[..bytes.len() / 2])
        .unwrap();
    let force = LoadOptions {
        force: true,
        ..LoadOptions::default()
    };
    let err = load_archive(&dst, &cut, &force).unwrap_err();
    assert!(err.is_bad_archive(), "{err}");
    assert_eq!(current_generation(&dst), before);
}

#[test]
fn a_load_abandoned_after_any_step_keeps_the_previous_generation() {
    let steps = [
        LoadStep::Unpacked,
        LoadStep::Verified,
        LoadStep::SegmentMoved,
        LoadStep::SegmentsSynced,
        LoadStep::Publish(CommitStep::GenerationManifestTemp),
        LoadStep::Publish(CommitStep::GenerationManifestRenamed),
        LoadStep::Publish(CommitStep::ManifestTemp),
        LoadStep::Publish(CommitStep::ManifestRenamed),
        LoadStep::Audited,
    ];
    let tmp = tempfile::tempdir().unwrap();
    let src = store_with(tmp.path(), "a", 7, 60);
    let out = tmp.path().join("a.tar");
    export_archive(&src, None, &out).unwrap();
    for step in steps {
        let root = tempfile::tempdir().unwrap();
        let dst = store_with(root.path(), "b", 2, 25);
        let before = current_generation(&dst).unwrap();
        let force = LoadOptions {
            force: true,
            ..LoadOptions::default()
        };
        let f = fs::File::open(&out).unwrap();
        let res = load_with(&dst, f, "a.tar", &force, &mut |s| s == step);
        assert!(res.is_err(), "{step:?}");
        let cur = Artifact::open(&dst).unwrap();
        let committed = matches!(
            step,
            LoadStep::Publish(CommitStep::ManifestRenamed) | LoadStep::Audited
        );
        if committed {
            assert_eq!(cur.node_count(), 60, "{step:?}");
            assert!(cur.generation() > before);
        } else {
            assert_eq!(cur.generation(), before, "{step:?}");
            assert_eq!(cur.node_count(), 25, "{step:?}");
        }
        assert_eq!(cur.verify(true), vec![], "{step:?}");
        // The fix report is clean apart from leftovers of the interrupted write.
        let dry = crate::fix::FixOptions {
            dry_run: true,
            ..Default::default()
        };
        let report = crate::fix::fix(&dst, &dry).unwrap();
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.severity < crate::fix::Severity::Error),
            "{step:?}: {:?}",
            report.findings
        );
        // The next load succeeds and removes the abandoned temporary directory.
        let rep = load_archive(&dst, &out, &force).unwrap();
        assert_eq!(Artifact::open(&dst).unwrap().generation(), rep.generation);
        assert!(no_temp_dirs(&dst), "{step:?}");
    }
}

#[test]
fn the_fuzz_seeds_load_or_fail_cleanly() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/archive_load");
    let mut loaded = 0;
    for e in fs::read_dir(&seeds).unwrap().flatten() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("repo").join(".batho");
        let res = load_archive(&dir, &e.path(), &LoadOptions::default());
        let valid = e.file_name() == "valid.tar";
        assert_eq!(res.is_ok(), valid, "{:?}: {res:?}", e.file_name());
        if valid {
            assert_eq!(Artifact::open(&dir).unwrap().verify(true), vec![]);
            loaded += 1;
        }
        assert!(no_temp_dirs(&dir));
    }
    assert_eq!(loaded, 1);
}

/// Rewrites `fuzz/seeds/archive_load/valid.tar` from a small sample store (after a
/// format change): `cargo test -p batho-storage -- --ignored regenerate_valid_fuzz_seed`.
/// The other seeds are cut from it (see `fuzz/README.md`).
#[test]
#[ignore]
fn regenerate_valid_fuzz_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let src = store_with(tmp.path(), "seed", 1, 12);
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/archive_load");
    export_archive(&src, None, &seeds.join("valid.tar")).unwrap();
}
