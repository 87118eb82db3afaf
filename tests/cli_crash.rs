//! Kill `batho build` with SIGKILL at many moments and check that the repository's
//! artifact is never lost: afterwards it opens at the previous generation or at the new
//! one, and verifies clean.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Rng, arg, batho, run_json, run_ok};

/// A synthetic C repository large enough that a build takes a noticeable time.
fn synthetic_repo(root: &Path, files: usize) {
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("src/common.h"),
        "#define SQUARE(x) ((x) * (x))\nint shared(int);\n",
    )
    .unwrap();
    for i in 0..files {
        let mut text = String::from("#include \"common.h\"\n#include <stdio.h>\n");
        for j in 0..40 {
            text.push_str(&format!(
                "static int helper_{j}(int x) {{ return SQUARE(x) + {j}; }}\n\
                 int f{i}_{j}(int x) {{ int y = helper_{j}(x); printf(\"%d\", y); return shared(y); }}\n"
            ));
        }
        std::fs::write(root.join(format!("src/file{i}.c")), text).unwrap();
    }
    std::fs::write(
        root.join("src/shared.c"),
        "int shared(int x) { return x; }\n",
    )
    .unwrap();
}

#[test]
fn killed_builds_never_lose_the_previous_artifact() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    synthetic_repo(&repo, 300);

    let started = Instant::now();
    run_ok(&["build", arg(&repo)]);
    let build_time = started.elapsed().max(Duration::from_millis(50));
    let baseline = run_json(&["status", arg(&repo)]);
    assert_eq!(baseline["state"], "ready");

    let kills = std::env::var("BATHO_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(25u32);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut generation = 1;
    let mut completed = 0;
    for _ in 0..kills {
        // A kill between writing the generation's manifest file and swapping MANIFEST
        // leaves that file behind, and generation numbers are never reused: the next
        // commit takes the number past the highest manifest file, not `generation + 1`.
        let next = highest_manifest_file(&repo) + 1;
        let delay =
            Duration::from_micros(rng.next() % (build_time.as_micros() as u64 * 12 / 10 + 1));
        let mut child = batho()
            .args(["build", "--full", arg(&repo)])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let exit = child.wait().unwrap();
        if exit.success() {
            completed += 1;
        }

        let status = run_json(&["status", "--verify", arg(&repo)]);
        assert_eq!(status["integrity"], serde_json::json!([]), "{status}");
        assert_ne!(
            status["state"], "missing",
            "artifact lost after a kill at {delay:?}"
        );
        let now = status["generation"].as_u64().unwrap();
        assert!(
            now == generation || now == next,
            "generation went from {generation} to {now}; a commit would make it {next}"
        );
        assert_eq!(
            status["entities"], baseline["entities"],
            "a half-written generation is visible"
        );
        assert_eq!(status["relationships"], baseline["relationships"]);
        generation = now;
    }
    // The last state must still accept a new build: no stale lock, no debris in the way.
    let next = highest_manifest_file(&repo) + 1;
    let report = run_json(&["build", "--full", arg(&repo)]);
    assert_eq!(report["run"]["generation"], next);
    eprintln!("{kills} kills, {completed} builds completed before their kill");
}

/// The highest generation with a manifest file in the artifact (`NNN….manifest` in
/// `.batho/manifests/`), whether or not MANIFEST made it current.
fn highest_manifest_file(repo: &Path) -> u64 {
    std::fs::read_dir(repo.join(".batho/manifests"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().ok()?;
            name.strip_suffix(".manifest")?.parse::<u64>().ok()
        })
        .max()
        .unwrap_or(0)
}

/// Runs `batho ARGS` and kills it after `delay`; whether it finished first.
fn run_killed(args: &[&str], delay: Duration) -> bool {
    let mut child = batho()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let _ = child.kill();
    child.wait().unwrap().success()
}

/// Wall time of `batho ARGS` run to completion (at least 20 ms, so kills spread).
fn timed(args: &[&str]) -> Duration {
    let t = Instant::now();
    run_ok(args);
    t.elapsed().max(Duration::from_millis(20))
}

/// The artifact after a kill: verifies clean, is not lost, and shows one of the entity
/// counts that a completed or a not-started operation would leave.
fn check_after_kill(repo: &Path, allowed: &[u64], what: &str) -> u64 {
    let status = run_json(&["status", "--verify", arg(repo)]);
    assert_eq!(
        status["integrity"],
        serde_json::json!([]),
        "{what}: {status}"
    );
    assert_ne!(status["state"], "missing", "{what}: artifact lost");
    let entities = status["entities"].as_u64().unwrap();
    assert!(
        allowed.contains(&entities),
        "{what}: {entities} entities, expected one of {allowed:?} (a half-applied change is visible)"
    );
    entities
}

#[test]
fn killed_patches_compactions_and_loads_never_lose_the_artifact() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    synthetic_repo(&repo, 300);
    run_ok(&["build", arg(&repo)]);
    let base = run_json(&["status", arg(&repo)])["entities"]
        .as_u64()
        .unwrap();
    let archive = tmp.path().join("base.tar");
    run_ok(&["export", arg(&repo), "--output", arg(&archive)]);

    // Two states of one file: the second adds one function.
    let edited = repo.join("src/file0.c");
    let original = std::fs::read_to_string(&edited).unwrap();
    let with_extra = format!("{original}int crash_extra(int x) {{ return x; }}\n");
    let counts = [base, base + 1];

    std::fs::write(&edited, &with_extra).unwrap();
    let patch_time = timed(&["patch", arg(&repo)]);
    let compact_time = timed(&["gc", "compact", arg(&repo)]);
    let load_time = timed(&["load", arg(&archive), arg(&repo), "--force"]);
    // The load brought back the archive's graph; the tree still has the extra function.
    run_ok(&["patch", arg(&repo)]);

    let kills = std::env::var("BATHO_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24u32);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut extra = true;
    let (mut finished, mut per_op) = (0, [0u32; 3]);
    let spread =
        |d: Duration, r: u64| Duration::from_micros(r % (d.as_micros() as u64 * 12 / 10 + 1));
    for i in 0..kills {
        let op = (i % 3) as usize;
        per_op[op] += 1;
        match op {
            0 => {
                // Patch the other state of the file, killed part way.
                extra = !extra;
                std::fs::write(&edited, if extra { &with_extra } else { &original }).unwrap();
                let delay = spread(patch_time, rng.next());
                finished += u32::from(run_killed(&["patch", arg(&repo)], delay));
                check_after_kill(&repo, &counts, &format!("patch killed at {delay:?}"));
                // Finish the patch so the next round starts from a known graph.
                run_ok(&["patch", arg(&repo)]);
            }
            1 => {
                let before = run_json(&["status", arg(&repo)])["entities"]
                    .as_u64()
                    .unwrap();
                let delay = spread(compact_time, rng.next());
                finished += u32::from(run_killed(&["gc", "compact", arg(&repo)], delay));
                check_after_kill(&repo, &[before], &format!("compact killed at {delay:?}"));
            }
            _ => {
                let before = run_json(&["status", arg(&repo)])["entities"]
                    .as_u64()
                    .unwrap();
                let delay = spread(load_time, rng.next());
                let args = ["load", arg(&archive), arg(&repo), "--force"];
                finished += u32::from(run_killed(&args, delay));
                check_after_kill(&repo, &[before, base], &format!("load killed at {delay:?}"));
                // Bring the graph back to the tree.
                run_ok(&["patch", arg(&repo)]);
            }
        }
    }
    // Whatever happened, the artifact answers like a full build of the tree.
    let patched = run_json(&["status", arg(&repo)])["entities"]
        .as_u64()
        .unwrap();
    assert_eq!(patched, if extra { base + 1 } else { base });
    run_ok(&["fix", "--deep", arg(&repo)]);
    eprintln!(
        "{kills} kills (patch {}, compact {}, load {}), {finished} finished before their kill",
        per_op[0], per_op[1], per_op[2]
    );
}
