//! The openCypher TCK, run against the engine's writable graphs.
//!
//! The feature files are Apache-2.0 test data kept outside the repository: they are read at
//! test time from `../shared/tck/features` beside the workspace (or `BATHO_TCK_DIR`). When
//! they are absent the test says so loudly and passes, unless `BATHO_TCK_REQUIRED=1`.
//!
//! Each scenario of the selected folders (see `tck/suite.rs`) runs on a fresh graph in a
//! fresh temporary folder. The report gives, per feature file and per folder, "passed of
//! attempted" and "attempted of all", and the reasons for not attempting; it goes straight
//! to standard output (visible without `--nocapture`) and, with `BATHO_TCK_REPORT=path`,
//! with one line per scenario to that file. The test fails when a folder passes fewer
//! scenarios than its floor in `tck/floor.txt`; `BATHO_TCK_UPDATE=1` rewrites the floors.
//! `BATHO_TCK_FILTER=text` runs only the scenarios whose label contains `text` and prints
//! each one's verdict (floors are not checked then).
//!
//! Run it with `cargo test -p batho-engine --test tck`.

#[path = "tck/backend.rs"]
mod backend;
#[path = "tck/compare.rs"]
mod compare;
#[path = "tck/features.rs"]
mod features;
#[path = "tck/floors.rs"]
mod floors;
#[path = "tck/report.rs"]
mod report;
#[path = "tck/runner.rs"]
mod runner;
#[path = "tck/skip_list.rs"]
mod skip_list;
#[path = "tck/suite.rs"]
mod suite;
#[path = "tck/values.rs"]
mod values;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use features::ScenarioCase;
use floors::{Floors, render_floors};
use report::Report;
use skip_list::SkipList;

/// Writes to the real standard output: the test harness captures `print!`, not this, so
/// the report shows with or without `--nocapture`.
fn say(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Whether the environment variable `name` is set to `1`.
fn environment_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|value| value == "1")
}

/// `engine/tests/tck`, where the skip list and the floors live.
fn tck_test_folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tck")
}

/// `BATHO_TCK_DIR`, or `../shared/tck/features` relative to the workspace root.
fn features_folder() -> PathBuf {
    match std::env::var_os("BATHO_TCK_DIR") {
        Some(folder) => PathBuf::from(folder),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/tck/features"),
    }
}

/// A file of `engine/tests/tck`; a missing one is a broken checkout, so it panics.
fn read_repository_file(name: &str) -> String {
    let path = tck_test_folder().join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
}

#[test]
fn opencypher_tck() {
    let root = features_folder();
    if !root.is_dir() {
        let message = format!(
            "\n!!!!!!!! openCypher TCK NOT RUN: no feature files at {} (set BATHO_TCK_DIR) !!!!!!!!\n\n",
            root.display()
        );
        say(&message);
        assert!(!environment_flag("BATHO_TCK_REQUIRED"), "{message}");
        return;
    }
    let skip_list = SkipList::parse(&read_repository_file("skip.txt"))
        .unwrap_or_else(|problem| panic!("{problem}"));
    let floors = Floors::parse(&read_repository_file("floor.txt"))
        .unwrap_or_else(|problem| panic!("{problem}"));
    let (cases, mut problems) =
        suite::load_selected_cases(&root).unwrap_or_else(|problem| panic!("{problem}"));
    problems.extend(skip_list.stale_entries(&cases));
    assert!(
        problems.is_empty(),
        "the TCK runner cannot read everything it should:\n{}",
        problems.join("\n")
    );
    let absent = suite::absent_clause_folders(&suite_paths(&cases));
    if !absent.is_empty() {
        say(&format!(
            "openCypher TCK: folders not in this TCK: {}\n",
            absent.join(", ")
        ));
    }
    let factory = backend::engine_backend_factory();
    let filter = std::env::var("BATHO_TCK_FILTER")
        .ok()
        .filter(|filter| !filter.is_empty());
    let chosen: Vec<&ScenarioCase> = cases
        .iter()
        .filter(|case| {
            filter
                .as_ref()
                .is_none_or(|filter| case.label().contains(filter.as_str()))
        })
        .collect();
    let outcomes = suite::run_cases(&chosen, &skip_list, factory.as_ref());
    let report = Report::new(&chosen, &outcomes);
    say(&format!(
        "openCypher TCK at {}\n{}",
        root.display(),
        report.render_summary()
    ));
    if let Some(path) = std::env::var_os("BATHO_TCK_REPORT") {
        std::fs::write(&path, report.render_full())
            .unwrap_or_else(|error| panic!("cannot write {}: {error}", Path::new(&path).display()));
    }
    if filter.is_some() {
        say(&format!(
            "{}\n(filtered run: floors not checked)\n",
            report.scenario_lines.join("\n")
        ));
        return;
    }
    check_floors(&floors, &report);
}

/// The feature paths of the loaded cases, each once.
fn suite_paths(cases: &[ScenarioCase]) -> Vec<String> {
    let mut paths: Vec<String> = cases.iter().map(|case| case.feature_path.clone()).collect();
    paths.dedup();
    paths
}

/// Fails on a folder below its floor; prints hints for folders above. With
/// `BATHO_TCK_UPDATE=1` rewrites the floor file instead of failing.
fn check_floors(floors: &Floors, report: &Report) {
    let passes = report.passes_by_folder();
    if environment_flag("BATHO_TCK_UPDATE") {
        let path = tck_test_folder().join("floor.txt");
        std::fs::write(&path, render_floors(&passes))
            .unwrap_or_else(|error| panic!("cannot write {}: {error}", path.display()));
        say(&format!(
            "openCypher TCK: floors rewritten in {}\n",
            path.display()
        ));
        return;
    }
    let check = floors.check(&passes);
    for raise in &check.raises {
        say(&format!(
            "openCypher TCK: {raise}; raise it with BATHO_TCK_UPDATE=1 cargo test -p batho-engine --test tck\n"
        ));
    }
    assert!(
        check.regressions.is_empty(),
        "openCypher TCK passes fell below the floors in engine/tests/tck/floor.txt:\n{}",
        check.regressions.join("\n")
    );
}
