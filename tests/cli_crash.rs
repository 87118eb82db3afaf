//! Kill `batho build` with SIGKILL at many moments and check that the repository's
//! artifact is never lost: afterwards it opens at the previous generation or at the new
//! one, and verifies clean.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{arg, batho, run_json, run_ok};

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

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
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
            now == generation || now == generation + 1,
            "generation jumped from {generation} to {now}"
        );
        assert_eq!(
            status["entities"], baseline["entities"],
            "a half-written generation is visible"
        );
        assert_eq!(status["relationships"], baseline["relationships"]);
        generation = now;
    }
    // The last state must still accept a new build: no stale lock, no debris in the way.
    let report = run_json(&["build", "--full", arg(&repo)]);
    assert_eq!(report["run"]["generation"], generation + 1);
    eprintln!("{kills} kills, {completed} builds completed before their kill");
}
