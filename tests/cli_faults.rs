//! The random-fault campaign of issue 28: single-byte flips, truncations and deletions
//! across every file of `.batho/`, on a one-generation artifact (a build) and on a
//! two-generation one (a build and a patch, so base plus delta). After each fault, with
//! the source unchanged, the campaign asks the artifact three questions (functions with
//! their lines, call edges, a text search), then runs `status --verify`, then `fix --deep`,
//! and asks again. Every `batho` run is bounded in time.
//!
//! What it asserts: no panic, no hang, no silent wrong answer (a query that succeeds with
//! a different answer: opening hashes a changed segment against its name,
//! `storage/src/verified.rs`), every fault detected by `status --verify` (a deleted cache
//! too: the caches then disagree with the graph or with each other; but for a deleted
//! community summary, a memo whose absence is a valid state), and after
//! `fix --deep` every answer is the pristine one again and `status --verify` passes, but
//! for damage to the audit log, which fix reports and never rewrites (the log is
//! evidence). It prints the counts, and the faults still reported after fix.
//!
//! `BATHO_FAULTS=N` sets the number of faults (default 96; a sixth of them truncations and
//! deletions, the rest flips), `BATHO_FAULT_SEED` the seed. The long run of the issue:
//! `BATHO_FAULTS=1200 cargo test --release -p batho-cli --test cli_faults -- --nocapture`.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::{Rng, arg, batho, copy_repo, edit_demo, replace_tree, run_ok};

/// The questions asked of the artifact, as `batho query` statements.
const QUESTIONS: [&str; 3] = [
    "MATCH (f:Function) RETURN f.name, f.file, f.start_line, f.end_line \
     ORDER BY f.name, f.file, f.start_line",
    "MATCH (a)-[r:CALLS]->(b) RETURN a.name, b.name, r.line ORDER BY a.name, b.name, r.line",
    "CALL text.search('hash table', 10) YIELD node, score RETURN node.name, score \
     ORDER BY score DESC, node.name",
];

/// Longer than any run takes here; a run past it is a hang.
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// What a bounded run ended with.
enum Ran {
    Done(Output),
    Hung,
}

/// Runs `batho ARGS`, killed after [`RUN_LIMIT`].
fn run_bounded(args: &[&str]) -> Ran {
    let mut child = batho()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start batho");
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait for batho").is_some() {
            return Ran::Done(child.wait_with_output().expect("batho's output"));
        }
        if started.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Ran::Hung;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One answer: the rows on success, or that it failed.
#[derive(Clone, Debug, PartialEq)]
enum Answer {
    Rows(String),
    Failed,
}

/// What the campaign saw.
#[derive(Debug, Default)]
struct Tally {
    faults: usize,
    panics: Vec<String>,
    hangs: Vec<String>,
    changed: usize,
    silent_wrong: Vec<String>,
    detected: usize,
    missed_by_verify: Vec<String>,
    missed_entirely: Vec<String>,
    not_healed: Vec<String>,
    /// Faults `status --verify` still reports after `fix --deep`: damage to the audit log,
    /// which fix reports and never rewrites (the log is evidence).
    reported_after_fix: Vec<String>,
}

impl Tally {
    /// Records a finished run's panic, if it panicked.
    fn check_panic(&mut self, fault: &str, output: &Output) {
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() == Some(101) || stderr.contains("panicked") {
            self.panics.push(format!("{fault}: {stderr}"));
        }
    }

    /// The answers of the artifact in `repo`, or `None` after a hang.
    fn answers(&mut self, fault: &str, repo: &Path) -> Option<Vec<Answer>> {
        let mut answers = Vec::new();
        for question in QUESTIONS {
            let args = ["query", "--repo", arg(repo), "--format", "csv", question];
            let Ran::Done(output) = run_bounded(&args) else {
                self.hangs.push(format!("{fault}: {question}"));
                return None;
            };
            self.check_panic(fault, &output);
            answers.push(if output.status.success() {
                Answer::Rows(String::from_utf8_lossy(&output.stdout).into_owned())
            } else {
                Answer::Failed
            });
        }
        Some(answers)
    }

    /// Whether `status --verify` finds something wrong.
    fn verify_finds_damage(&mut self, fault: &str, repo: &Path) -> bool {
        match run_bounded(&["status", arg(repo), "--verify"]) {
            Ran::Done(output) => {
                self.check_panic(fault, &output);
                !output.status.success()
            }
            Ran::Hung => {
                self.hangs.push(format!("{fault}: status --verify"));
                true
            }
        }
    }

    fn fix(&mut self, fault: &str, repo: &Path) {
        match run_bounded(&["fix", arg(repo), "--deep"]) {
            Ran::Done(output) => self.check_panic(fault, &output),
            Ran::Hung => self.hangs.push(format!("{fault}: fix --deep")),
        }
    }
}

/// Every file under `dir` that holds data, sorted (`LOCK` is only locked, never read).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else if path.file_name().is_some_and(|name| name != "LOCK") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// Applies fault number `index` to a file chosen by `random`; says what it did.
fn apply_fault(index: usize, cuts_every: usize, dir: &Path, random: &mut Rng) -> String {
    let files = files_under(dir);
    let file = &files[random.next() as usize % files.len()];
    let name = file.strip_prefix(dir).unwrap().display().to_string();
    let mut bytes = fs::read(file).unwrap();
    if index % cuts_every != cuts_every - 1 || bytes.is_empty() {
        if bytes.is_empty() {
            fs::remove_file(file).unwrap();
            return format!("delete {name} (empty)");
        }
        let at = random.next() as usize % bytes.len();
        let mask = (random.next() % 255 + 1) as u8;
        bytes[at] ^= mask;
        fs::write(file, bytes).unwrap();
        return format!("flip {name} byte {at} ^ {mask:#04x}");
    }
    if random.next().is_multiple_of(2) {
        fs::remove_file(file).unwrap();
        return format!("delete {name}");
    }
    let length = random.next() as usize % bytes.len();
    bytes.truncate(length);
    fs::write(file, bytes).unwrap();
    format!("truncate {name} to {length} bytes")
}

/// Runs `faults` faults on the artifact of `repo`.
fn campaign(repo: &Path, faults: usize, seed: u64, tally: &mut Tally) {
    let dir = repo.join(".batho");
    let pristine = repo.parent().unwrap().join("pristine");
    replace_tree(&dir, &pristine);
    let golden = tally
        .answers("pristine", repo)
        .expect("the pristine artifact answers");
    assert!(
        golden.iter().all(|answer| *answer != Answer::Failed),
        "{golden:?}"
    );
    let mut random = Rng(seed | 1);
    for index in 0..faults {
        replace_tree(&pristine, &dir);
        let fault = apply_fault(index, 6, &dir, &mut random);
        tally.faults += 1;
        let Some(answers) = tally.answers(&fault, repo) else {
            continue;
        };
        let changed = answers != golden;
        let silent = answers
            .iter()
            .zip(&golden)
            .any(|(answer, good)| matches!(answer, Answer::Rows(_)) && answer != good);
        let detected = tally.verify_finds_damage(&fault, repo);
        if changed {
            tally.changed += 1;
            if !detected {
                tally.missed_by_verify.push(fault.clone());
            }
        }
        if silent {
            tally.silent_wrong.push(fault.clone());
        }
        tally.detected += usize::from(detected);
        if !detected {
            tally.missed_entirely.push(fault.clone());
        }
        tally.fix(&fault, repo);
        if tally.answers(&fault, repo).as_ref() != Some(&golden) {
            tally.not_healed.push(fault.clone());
        }
        if tally.verify_finds_damage(&fault, repo) {
            tally.reported_after_fix.push(fault);
        }
    }
}

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

#[test]
fn random_faults_never_panic_hang_or_survive_fix() {
    let faults = setting("BATHO_FAULTS", 96) as usize;
    let seed = setting("BATHO_FAULT_SEED", 28);
    let mut tally = Tally::default();

    let (_one_tmp, one) = copy_repo("examples/demo");
    run_ok(&["build", arg(&one)]);
    campaign(&one, faults / 2, seed, &mut tally);

    let (_two_tmp, two) = copy_repo("examples/demo");
    run_ok(&["build", arg(&two)]);
    edit_demo(&two);
    run_ok(&["patch", arg(&two)]);
    campaign(&two, faults - faults / 2, seed.wrapping_add(1), &mut tally);

    eprintln!(
        "faults={} answers_changed={} silent_wrong_answers={} detected_by_verify={} \
         not_detected={} changed_but_missed_by_verify={} not_healed_by_fix={} \
         still_reported_after_fix={} panics={} hangs={}",
        tally.faults,
        tally.changed,
        tally.silent_wrong.len(),
        tally.detected,
        tally.missed_entirely.len(),
        tally.missed_by_verify.len(),
        tally.not_healed.len(),
        tally.reported_after_fix.len(),
        tally.panics.len(),
        tally.hangs.len()
    );
    for fault in &tally.silent_wrong {
        eprintln!("silent wrong answer: {fault}");
    }
    for fault in &tally.missed_entirely {
        eprintln!("not found by status --verify: {fault}");
    }
    for fault in &tally.reported_after_fix {
        eprintln!("still reported after fix --deep: {fault}");
    }
    assert!(tally.panics.is_empty(), "panics: {:#?}", tally.panics);
    assert!(
        tally.silent_wrong.is_empty(),
        "silent wrong answers: {:#?}",
        tally.silent_wrong
    );
    assert!(tally.hangs.is_empty(), "hangs: {:#?}", tally.hangs);
    assert!(
        tally.missed_by_verify.is_empty(),
        "answers changed but status --verify passed: {:#?}",
        tally.missed_by_verify
    );
    // A community summary is a memo written on first use (a patch leaves none; the first
    // query writes it), so its absence is a valid state, not damage.
    let missed: Vec<&String> = tally
        .missed_entirely
        .iter()
        .filter(|fault| !fault.starts_with("delete derived/communities-"))
        .collect();
    assert!(
        missed.is_empty(),
        "not found by status --verify: {missed:#?}"
    );
    // The audit log is evidence: fix reports its damage and never rewrites it.
    let unhealed: Vec<&String> = tally
        .reported_after_fix
        .iter()
        .filter(|fault| !fault.contains(" audit.log") && !fault.contains(" audit.head"))
        .collect();
    assert!(
        unhealed.is_empty(),
        "still reported after fix --deep: {unhealed:#?}"
    );
    assert!(
        tally.not_healed.is_empty(),
        "not healed by fix --deep: {:#?}",
        tally.not_healed
    );
}
