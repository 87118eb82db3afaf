//! `batho fix` driven as a user would: a clean artifact, options and formats, exit codes,
//! and the corruption test (flip bytes in every kind of file of the artifact; a dry run
//! must detect each one, `fix` must repair each derivable one, after which the artifact
//! opens and `fix --deep` reports it clean).

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use batho_engine::testing::storage::format::{
    SegmentKind, bitmaps_col, edges_col, names, nodes_col, strings_col,
};
use batho_engine::testing::storage::manifest::{self, ManifestBody};
use common::{arg, batho_ql, copy_repo, replace_tree, run, run_ok};
use serde_json::Value;

/// The demo built twice, the second time with one more function, so the two generations
/// share no segment.
fn two_generations() -> (tempfile::TempDir, PathBuf) {
    let (tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let f = repo.join("src/hash.c");
    let mut text = fs::read_to_string(&f).unwrap();
    text.push_str("\nint fix_test_extra(int x) { return x + 1; }\n");
    fs::write(&f, text).unwrap();
    run_ok(&["build", "--full", arg(&repo)]);
    (tmp, repo)
}

/// Runs `batho fix ARGS --format json` and returns (exit code, report).
fn fix_json(repo: &Path, extra: &[&str]) -> (i32, Value) {
    let mut a = vec!["fix", arg(repo), "--format", "json"];
    a.extend_from_slice(extra);
    let out = run(&a);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"));
    (out.status.code().unwrap_or(-1), v)
}

fn current(dir: &Path) -> ManifestBody {
    let p = dir.join(names::MANIFEST);
    manifest::decode(&fs::read(&p).unwrap(), &p).unwrap()
}

fn segment(dir: &Path, kind: SegmentKind) -> PathBuf {
    let m = current(dir);
    let s = m.layers[0]
        .segments
        .iter()
        .find(|s| s.kind == kind as u8)
        .unwrap();
    dir.join(names::SEGMENTS_DIR).join(s.file_name())
}

/// File offset and length of the data of column `id` in a segment file (docs/format.md §2.2).
fn column(bytes: &[u8], id: u32) -> (usize, usize) {
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap()) as usize;
    for c in 0..u32_at(64) as usize {
        let e = 64 + 8 + 64 * c;
        if u32_at(e) == id {
            return (64 + u64_at(e + 24), u64_at(e + 32));
        }
    }
    panic!("no column {id}");
}

fn flip(path: &Path, pos: usize) {
    let mut b = fs::read(path).unwrap();
    let pos = pos.min(b.len() - 1);
    b[pos] ^= 0x5a;
    fs::write(path, b).unwrap();
}

/// How a damaged file is expected to come out of `fix`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// Restored to exactly the original bytes, same generation.
    Identical,
    /// Repaired (the artifact verifies clean), possibly as another generation.
    Repaired,
    /// Not derivable: reported, left as it is, exit 1.
    Reported,
}

#[test]
fn every_kind_of_damage_is_detected_and_every_derivable_one_repaired() {
    let (_tmp, repo) = two_generations();
    let dir = repo.join(".batho");
    // An audit log to damage: one entry from a repair.
    fs::write(dir.join("MANIFEST.tmp-0000"), b"leftover").unwrap();
    let (code, _) = fix_json(&repo, &[]);
    assert_eq!(code, 0);
    assert!(dir.join("audit.log").is_file());
    let pristine = repo.parent().unwrap().join("pristine");
    replace_tree(&dir, &pristine);

    type Damage = Box<dyn Fn(&Path) -> PathBuf>;
    let col = |kind: SegmentKind, id: u32| -> Damage {
        Box::new(move |d: &Path| {
            let p = segment(d, kind);
            let (off, len) = column(&fs::read(&p).unwrap(), id);
            flip(&p, off + len / 2);
            p
        })
    };
    let at = |rel: &'static str, pos: usize| -> Damage {
        Box::new(move |d: &Path| {
            let p = d.join(rel);
            flip(&p, pos);
            p
        })
    };
    let header = |kind: SegmentKind| -> Damage {
        Box::new(move |d: &Path| {
            let p = segment(d, kind);
            flip(&p, 20);
            p
        })
    };
    let cases: Vec<(&str, Damage, Expect)> = vec![
        ("MANIFEST body", at("MANIFEST", 90), Expect::Identical),
        ("MANIFEST header", at("MANIFEST", 3), Expect::Identical),
        (
            "current manifest copy",
            at("manifests/00000000000000000002.manifest", 80),
            Expect::Identical,
        ),
        (
            "older manifest copy",
            at("manifests/00000000000000000001.manifest", 80),
            Expect::Repaired,
        ),
        ("DBID", at("DBID", 20), Expect::Identical),
        (
            "strings header",
            header(SegmentKind::Strings),
            Expect::Identical,
        ),
        (
            "nodes header",
            header(SegmentKind::Nodes),
            Expect::Identical,
        ),
        (
            "edges header",
            header(SegmentKind::Edges),
            Expect::Identical,
        ),
        (
            "bitmaps header",
            header(SegmentKind::Bitmaps),
            Expect::Identical,
        ),
        (
            "nodes name index",
            col(SegmentKind::Nodes, nodes_col::NAME_INDEX),
            Expect::Identical,
        ),
        (
            "nodes id index",
            col(SegmentKind::Nodes, nodes_col::ID_INDEX),
            Expect::Identical,
        ),
        (
            "edges in-CSR",
            col(SegmentKind::Edges, edges_col::IN_PERM),
            Expect::Identical,
        ),
        (
            "bitmaps data",
            col(SegmentKind::Bitmaps, bitmaps_col::DATA),
            Expect::Identical,
        ),
        (
            "strings bytes",
            col(SegmentKind::Strings, strings_col::BYTES),
            Expect::Repaired,
        ),
        (
            "nodes start lines",
            col(SegmentKind::Nodes, nodes_col::START_LINE),
            Expect::Repaired,
        ),
        (
            "edges lines",
            col(SegmentKind::Edges, edges_col::LINE),
            Expect::Repaired,
        ),
        (
            "edges targets",
            col(SegmentKind::Edges, edges_col::DST),
            Expect::Repaired,
        ),
        ("audit log", at("audit.log", 40), Expect::Reported),
    ];
    for (name, damage, expect) in &cases {
        replace_tree(&pristine, &dir);
        let file = damage(&dir);
        let damaged = fs::read(&file).unwrap();

        let (code, dry) = fix_json(&repo, &["--deep", "--dry-run"]);
        assert_eq!(code, 1, "{name}: a dry run must report the damage: {dry:#}");
        assert!(
            dry["remaining"].as_array().is_some_and(|r| !r.is_empty()),
            "{name}: {dry:#}"
        );
        assert_eq!(
            fs::read(&file).unwrap(),
            damaged,
            "{name}: a dry run changes nothing"
        );

        let (code, done) = fix_json(&repo, &["--deep"]);
        if *expect == Expect::Reported {
            assert_eq!(code, 1, "{name}: {done:#}");
            assert_eq!(
                fs::read(&file).unwrap(),
                damaged,
                "{name}: left as evidence"
            );
            continue;
        }
        assert_eq!(code, 0, "{name}: {done:#}");
        assert_eq!(done["outcome"], "repaired", "{name}: {done:#}");
        assert!(
            !done["audit"].as_array().unwrap().is_empty(),
            "{name}: repairs are logged"
        );
        if *expect == Expect::Identical {
            let orig = fs::read(pristine.join(file.strip_prefix(&dir).unwrap())).unwrap();
            assert_eq!(fs::read(&file).unwrap(), orig, "{name}: restored exactly");
        }
        let (code, again) = fix_json(&repo, &["--deep"]);
        assert_eq!(code, 0, "{name}: {again:#}");
        assert_eq!(again["outcome"], "clean", "{name}: {again:#}");
        let out = run_ok(&[
            "query",
            "--repo",
            arg(&repo),
            "--format",
            "json",
            "MATCH (f:Function) RETURN count(f) AS n",
        ]);
        assert!(
            out.contains("\"n\""),
            "{name}: the artifact answers queries: {out}"
        );
    }
}

#[test]
fn the_text_report_of_a_dry_run() {
    let (_tmp, repo) = two_generations();
    flip(&repo.join(".batho/MANIFEST"), 90);
    fs::write(repo.join(".batho/segments/abc.seg.tmp-1"), b"x").unwrap();
    let out = run(&["fix", arg(&repo), "--dry-run"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout)
        .replace(repo.to_str().unwrap(), "<REPO>")
        .lines()
        .map(|l| match l.find("; 0 audit entries;") {
            Some(i) => format!("{}; <ms>)", &l[..i + "; 0 audit entries".len()]),
            None => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    expect_test::expect![[r#"
        fix <REPO>/.batho (quick, dry run): phases 1 bundle, 2 state, 3 blobs, 4 graph
          [error] phase 1 MANIFEST: manifest body checksum mismatch (MANIFEST)
              would: restore MANIFEST from the newest intact generation manifest (generation 2 or older)
          [warning] phase 2 segments/abc.seg.tmp-1: leftover of an interrupted write (1 bytes)
              would: delete it
        result: errors (generation 2; 8 segments checked; 0 audit entries; <ms>)"#]]
    .assert_eq(&text);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("1 problems found (dry run: nothing was changed)"),
        "{err}"
    );
}

#[test]
fn formats_phases_and_exit_codes() {
    let (_tmp, repo) = two_generations();
    let csv = run_ok(&["fix", arg(&repo), "--deep", "--parallel", "--format", "csv"]);
    assert_eq!(
        csv,
        "record,phase,severity,what,detail,action\nresult,0,clean,,,\n"
    );
    let (code, v) = fix_json(&repo, &["--target", "state"]);
    assert_eq!((code, v["phases"].clone()), (0, serde_json::json!([1, 2])));
    let (_, v) = fix_json(&repo, &["--phase", "3", "--deep"]);
    assert_eq!(v["phases"], serde_json::json!([3]));
    assert_eq!(v["segments_checked"], 8);
    assert!(v["bytes_hashed"].as_u64().unwrap() > 0);
    assert_eq!(
        run(&["fix", arg(&repo), "--phase", "5"]).status.code(),
        Some(2),
        "usage error"
    );

    // No artifact at all: critical.
    let empty = tempfile::tempdir().unwrap();
    let out = run(&["fix", arg(empty.path())]);
    assert_eq!(out.status.code(), Some(2));
    // Every manifest damaged: critical too.
    let dir = repo.join(".batho");
    flip(&dir.join("MANIFEST"), 90);
    for g in ["00000000000000000001", "00000000000000000002"] {
        flip(&dir.join(format!("manifests/{g}.manifest")), 90);
    }
    let (code, v) = fix_json(&repo, &[]);
    assert_eq!(code, 2, "{v:#}");
    assert_eq!(v["outcome"], "critical");
}

#[test]
fn runs_lists_the_history_newest_first() {
    let (_tmp, repo) = two_generations();
    let v = common::run_json(&["runs", arg(&repo)]);
    assert_eq!(v["total"], 2);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["generation"], 2);
    assert_eq!(runs[1]["generation"], 1);
    assert_eq!(runs[0]["type"], "build");
    assert_eq!(runs[0]["status"], "completed");
    assert!(runs[0]["node_count"].as_u64().unwrap() > runs[1]["node_count"].as_u64().unwrap());
    let text = run_ok(&["runs", arg(&repo), "--limit", "1"]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("RUN "), "{text}");
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[1].contains(runs[0]["run_id"].as_str().unwrap()));
    assert_eq!(lines[2], "(1 of 2 runs shown; --limit N for more)");
    // The .batho folder itself is accepted as PATH.
    let v = common::run_json(&["runs", arg(&repo.join(".batho"))]);
    assert_eq!(v["total"], 2);
    let empty = tempfile::tempdir().unwrap();
    let out = run(&["runs", arg(empty.path())]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "no artifact: 2, as for every verb"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("batho build"));
}

#[test]
fn fix_cuts_a_torn_log_tail_of_a_writable_graph_and_reports_a_damaged_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let graph = tmp.path().join("notes");
    let input = "CREATE (:Note {text: 'a'});\nCREATE (:Note {text: 'b'});\n";
    let out = batho_ql(&["--new".as_ref(), graph.as_os_str()], input, tmp.path());
    assert!(out.status.success());
    // A crash during an append leaves half a record.
    let log = graph.join("wal-0.log");
    let mut bytes = std::fs::read(&log).unwrap();
    let good = bytes.len();
    bytes.extend_from_slice(&[200, 0, 0, 0, 7, 7]);
    std::fs::write(&log, &bytes).unwrap();

    let out = run_ok(&["fix", "--dry-run", arg(&graph)]);
    assert!(out.contains("2 transactions in the log"), "{out}");
    assert!(
        out.contains("6 bytes after offset") && out.contains("would be cut (dry run)"),
        "{out}"
    );
    assert_eq!(
        std::fs::metadata(&log).unwrap().len() as usize,
        good + 6,
        "a dry run changed the log"
    );
    let out = run_ok(&["fix", arg(&graph)]);
    assert!(out.contains(": cut"), "{out}");
    assert_eq!(std::fs::metadata(&log).unwrap().len() as usize, good);
    assert!(run_ok(&["fix", arg(&graph)]).contains("clean"));

    // A damaged checkpoint cannot be repaired here: said, with exit code 1.
    run_ok(&[
        "query",
        "--repo",
        arg(&graph),
        "CREATE INDEX ON :Note(text)",
    ]);
    let out = batho_ql(&[graph.as_os_str()], ":checkpoint\n", tmp.path());
    assert!(out.status.success());
    let checkpoint = std::fs::read_dir(&graph)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("checkpoint-")
        })
        .unwrap();
    let mut bytes = std::fs::read(&checkpoint).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&checkpoint, bytes).unwrap();
    let out = run(&["fix", arg(&graph)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("damaged:") && stdout.contains("does not match the hash in its name"),
        "{stdout}"
    );
}

/// `batho query "CALL db.fix()"` runs without opening the graph, so it repairs an artifact
/// that no other query can open; a bad option is a query error (exit 1).
#[test]
fn a_fix_statement_repairs_what_no_query_can_open() {
    let (_tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    fs::write(repo.join(".batho/MANIFEST"), b"garbage").unwrap();
    let count = [
        "query",
        "--repo",
        arg(&repo),
        "MATCH (n) RETURN count(n) AS n",
    ];
    assert_eq!(
        run(&count).status.code(),
        Some(2),
        "the damage stops queries"
    );
    let fixed = run_ok(&["query", "--repo", arg(&repo), "CALL db.fix() YIELD outcome"]);
    assert!(fixed.contains("repaired"), "{fixed}");
    assert!(run_ok(&count).contains("(1 row)"));
    let bad = run(&["query", "--repo", arg(&repo), "CALL db.fix({deepp: true})"]);
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("no option 'deepp'"), "{stderr}");
}

/// A reader never writes: `batho status` and `batho runs` once recreated a deleted DBID
/// (issue 28, item 2); they read the identity from the manifest instead.
#[test]
fn status_and_runs_never_write() {
    let (_tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let dbid = repo.join(".batho/DBID");
    fs::remove_file(&dbid).unwrap();
    let status = run_ok(&["status", arg(&repo)]);
    assert!(status.contains("generation"), "{status}");
    run_ok(&["runs", arg(&repo)]);
    assert!(!dbid.exists(), "a reader recreated DBID");
}

/// `batho build --full` over a MANIFEST that does not decode sets the old artifact aside
/// and builds (issue 28, item 2: it stopped at "run batho fix").
#[test]
fn a_full_build_sets_a_corrupt_artifact_aside() {
    let (tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    fs::write(repo.join(".batho/MANIFEST"), b"garbage").unwrap();
    let built = run(&["build", "--full", arg(&repo)]);
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(built.status.success(), "{stderr}");
    assert!(
        stderr.contains("with a corrupt manifest was moved to"),
        "{stderr}"
    );
    let count = run_ok(&[
        "query",
        "--repo",
        arg(&repo),
        "MATCH (f:Function) RETURN count(f)",
    ]);
    assert!(count.contains("(1 row)"), "{count}");
    let aside = fs::read_dir(tmp.path().join("repo"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(".batho-"))
        .count();
    assert_eq!(aside, 1, "the old artifact is kept beside the new one");
}

/// `status --verify` checks each generation's manifest copy as `fix` does (issue 28,
/// item 2: it said "verified" while `fix` found the copy damaged).
#[test]
fn status_verify_checks_the_manifest_copies() {
    let (_tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let copies = repo.join(".batho/manifests");
    let copy = fs::read_dir(&copies)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    fs::write(&copy, b"garbage").unwrap();
    let verified = run(&["status", "--verify", arg(&repo)]);
    let stdout = String::from_utf8_lossy(&verified.stdout);
    assert_ne!(verified.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains(".manifest"), "names the copy: {stdout}");
    run_ok(&["fix", arg(&repo)]);
    run_ok(&["status", "--verify", arg(&repo)]);
}

/// `fix --deep` reports damaged facts-cache packs and stamps and sets them aside: they are
/// derived, so a patch afterwards parses and hashes what they held (issue 28, item 2).
#[test]
fn fix_deep_sets_damaged_derived_files_aside() {
    let (_tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let facts = repo.join(".batho/facts");
    let pack = fs::read_dir(&facts)
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|x| x == "pack"))
        .expect("a build writes a facts pack");
    let mut bytes = fs::read(&pack).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    fs::write(&pack, bytes).unwrap();
    fs::write(repo.join(".batho/stamps"), b"not stamps").unwrap();

    // Warnings, as leftovers are: they cost work, never a wrong answer.
    let (code, report) = fix_json(&repo, &["--deep", "--dry-run"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["remaining"].as_array().unwrap().len(), 2, "{report}");
    let found: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|finding| finding["what"].as_str().unwrap().to_string())
        .collect();
    assert!(
        found.iter().any(|what| what.starts_with("facts/")),
        "{found:?}"
    );
    assert!(found.iter().any(|what| what == "stamps"), "{found:?}");
    assert!(pack.exists(), "a dry run changes nothing");

    let (code, report) = fix_json(&repo, &["--deep"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["outcome"], "repaired", "{report}");
    assert!(!pack.exists() && !repo.join(".batho/stamps").exists());
    assert!(report["audit"].as_array().unwrap().len() >= 2, "{report}");
    let (code, report) = fix_json(&repo, &["--deep"]);
    assert_eq!(
        (code, report["outcome"].as_str()),
        (0, Some("clean")),
        "{report}"
    );
    fs::write(repo.join("src/extra.c"), "int extra(void) { return 1; }\n").unwrap();
    run_ok(&["patch", arg(&repo)]);
}

/// A deleted facts pack or stamps file is found by `status --verify` (the caches then
/// disagree with the graph or with each other) and set aside whole by `fix --deep`, and
/// the next patch writes complete caches again (issue 28: the fault campaign's deleted
/// caches went unreported).
#[test]
fn deleted_caches_are_reported_and_set_aside_whole() {
    for deleted in ["pack", "stamps"] {
        let (_tmp, repo) = copy_repo("examples/demo");
        run_ok(&["build", arg(&repo)]);
        run_ok(&["status", "--verify", arg(&repo)]);
        let target = if deleted == "stamps" {
            repo.join(".batho/stamps")
        } else {
            fs::read_dir(repo.join(".batho/facts"))
                .unwrap()
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .find(|path| path.extension().is_some_and(|x| x == "pack"))
                .expect("a build writes a facts pack")
        };
        fs::remove_file(&target).unwrap();
        let verified = run(&["status", "--verify", arg(&repo)]);
        let stdout = String::from_utf8_lossy(&verified.stdout);
        assert_ne!(verified.status.code(), Some(0), "{deleted}: {stdout}");
        assert!(stdout.contains("facts cache and stamps"), "{stdout}");
        let (code, report) = fix_json(&repo, &["--deep"]);
        assert_eq!(
            (code, report["outcome"].as_str()),
            (0, Some("repaired")),
            "{report}"
        );
        run_ok(&["status", "--verify", arg(&repo)]);
        fs::write(repo.join("src/extra.c"), "int extra(void) { return 1; }\n").unwrap();
        run_ok(&["patch", arg(&repo)]);
        run_ok(&["status", "--verify", arg(&repo)]);
    }
}

/// Flips a byte in the middle of the start-line column of the current nodes segment:
/// primary data, which no exact restoration recomputes.
fn damage_start_lines(dir: &Path) {
    let path = segment(dir, SegmentKind::Nodes);
    let (offset, length) = column(&fs::read(&path).unwrap(), nodes_col::START_LINE);
    flip(&path, offset + length / 2);
}

/// `name file:line` of every function, sorted: what a damaged line column changes.
fn functions(repo: &Path) -> String {
    run_ok(&[
        "query",
        "--repo",
        arg(repo),
        "--format",
        "json",
        "MATCH (f:Function) RETURN f.name AS name, f.file AS file, f.start_line AS line ORDER BY name, file, line",
    ])
}

fn repairs_of(report: &Value, action: &str) -> Vec<String> {
    report["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|repair| repair["action"] == action)
        .map(|repair| repair["detail"].as_str().unwrap().to_string())
        .collect()
}

/// Primary damage to the current generation rolls back to the older one, and then the
/// source brings back what the rollback lost (issue 28, item 2).
#[test]
fn a_rollback_is_healed_from_the_source() {
    let (_tmp, repo) = two_generations();
    let dir = repo.join(".batho");
    let before = functions(&repo);
    assert!(before.contains("fix_test_extra"), "{before}");
    damage_start_lines(&dir);

    let (code, report) = fix_json(&repo, &["--deep"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["outcome"], "repaired", "{report:#}");
    assert_eq!(report["rolled_back"]["damaged"], 2, "{report:#}");
    assert_eq!(report["rolled_back"]["restored"], 1, "{report:#}");
    let healed = repairs_of(&report, "heal_from_source");
    assert_eq!(healed.len(), 1, "{report:#}");
    assert!(
        healed[0].contains("lost the build that made generation 2"),
        "{healed:?}"
    );
    assert!(healed[0].contains("src/hash.c"), "{healed:?}");
    assert!(
        report["audit"]
            .as_array()
            .unwrap()
            .iter()
            .any(|entry| entry["action"] == "fix.heal_from_source"),
        "{report:#}"
    );
    assert_eq!(
        functions(&repo),
        before,
        "the graph is the damaged generation's again"
    );
    // The lost generation's run is pruned from the history, and said so: nothing dangles
    // for a later verification to report.
    let pruned = repairs_of(&report, "prune_lost_run");
    assert!(
        pruned.len() == 1 && pruned[0].contains("the build that made generation 2"),
        "{report:#}"
    );
    run_ok(&["status", "--verify", arg(&repo)]);
    let (code, again) = fix_json(&repo, &["--deep"]);
    assert_eq!(
        (code, again["outcome"].as_str()),
        (0, Some("clean")),
        "{again:#}"
    );
}

/// Without an intact older generation, the graph is built again from the source.
#[test]
fn a_lone_damaged_generation_is_built_again_from_the_source() {
    let (_tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let before = functions(&repo);
    damage_start_lines(&repo.join(".batho"));

    let (code, report) = fix_json(&repo, &["--deep"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["outcome"], "repaired", "{report:#}");
    assert!(report["rolled_back"]["restored"].is_null(), "{report:#}");
    let healed = repairs_of(&report, "heal_from_source");
    assert!(
        healed.len() == 1 && healed[0].contains("built the graph again from the source"),
        "{report:#}"
    );
    assert_eq!(functions(&repo), before);
}

/// Without the source, the rollback stands and the report says what it lost.
#[test]
fn without_the_source_the_report_says_what_the_rollback_lost() {
    let (_tmp, repo) = two_generations();
    damage_start_lines(&repo.join(".batho"));
    // The artifact without its source, as a copy or a load elsewhere has it.
    fs::rename(repo.join("src"), repo.parent().unwrap().join("src.moved")).unwrap();

    let (code, report) = fix_json(&repo, &["--deep"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["rolled_back"]["restored"], 1, "{report:#}");
    assert!(
        repairs_of(&report, "heal_from_source").is_empty(),
        "{report:#}"
    );
    let remaining = report["remaining"].to_string();
    assert!(
        remaining.contains("the rollback lost the build that made generation 2")
            && remaining.contains("the source could not bring it back"),
        "{report:#}"
    );
    assert!(
        functions(&repo).contains("hash"),
        "the rolled-back graph stays"
    );
}

/// A query on a damaged artifact fails (the open hashes the changed segment) and names
/// the way out once, as a command for this repository (issue 28, item 14).
#[test]
fn a_damaged_artifact_fails_a_query_with_one_fix_hint() {
    let (_tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    damage_start_lines(&repo.join(".batho"));
    let out = run(&[
        "query",
        "--repo",
        arg(&repo),
        "MATCH (f:Function) RETURN f.name",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("batho fix").count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("run 'batho fix {}'", repo.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains("does not match its blake3 name"),
        "{stderr}"
    );
}
