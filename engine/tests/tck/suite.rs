//! Choosing which feature files run, deciding which scenarios are attempted, and running
//! the attempted ones on a few threads.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::backend::BackendFactory;
use crate::features::{ScenarioCase, Step, feature_files, folder_of, load_feature};
use crate::runner::{ScenarioOutcome, Verdict, run_scenario};
use crate::skip_list::SkipList;

/// The clause folders the runner attempts (every folder under `expressions/` runs too).
/// Folders named here that the TCK does not have are reported, not treated as errors,
/// because the TCK reorganises its folders between releases.
pub const CLAUSE_FOLDERS: [&str; 16] = [
    "clauses/match",
    "clauses/match-where",
    "clauses/optional-match",
    "clauses/return",
    "clauses/return-orderby",
    "clauses/return-skip-limit",
    "clauses/with",
    "clauses/with-where",
    "clauses/with-orderBy",
    "clauses/with-skip-limit",
    "clauses/unwind",
    "clauses/create",
    "clauses/set",
    "clauses/delete",
    "clauses/remove",
    "clauses/merge",
];

/// Most threads running scenarios at once.
const MOST_THREADS: usize = 4;

/// Stack of each worker thread: 8 MiB, a Linux main thread's. A stack overflow aborts the
/// whole test process (it cannot be caught like a panic), and a spawned thread's default
/// 2 MiB was too small for the engine on the TCK's query of about 760 CREATE clauses
/// (Create4 [2]); running on the stack a command-line program gets keeps the suite going
/// without hiding what the engine needs.
const WORKER_STACK_BYTES: usize = 8 << 20;

/// Whether a feature file belongs to a folder that runs.
pub fn is_selected(feature_path: &str) -> bool {
    let folder = folder_of(feature_path);
    folder.starts_with("expressions/") || CLAUSE_FOLDERS.contains(&folder.as_str())
}

/// Clause folders named in [`CLAUSE_FOLDERS`] with no feature file in `feature_paths`.
pub fn absent_clause_folders(feature_paths: &[String]) -> Vec<&'static str> {
    CLAUSE_FOLDERS
        .iter()
        .copied()
        .filter(|folder| !feature_paths.iter().any(|path| folder_of(path) == *folder))
        .collect()
}

/// The scenario cases of every selected feature file under `root`, plus the problems met
/// reading them (a file that does not parse, a step whose argument cannot be read).
pub fn load_selected_cases(root: &Path) -> Result<(Vec<ScenarioCase>, Vec<String>), String> {
    let all_paths = feature_files(root)?;
    let mut cases = Vec::new();
    let mut problems = Vec::new();
    for path in all_paths.iter().filter(|path| is_selected(path)) {
        match load_feature(root, path) {
            Ok(feature_cases) => cases.extend(feature_cases),
            Err(problem) => problems.push(problem),
        }
    }
    for case in &cases {
        for step in &case.steps {
            if let Step::Malformed(problem) = step {
                problems.push(format!("{}: {problem}", case.label()));
            }
        }
    }
    Ok((cases, problems))
}

/// Why a case is not attempted: its skip-list entry first, then an unsupported step.
pub fn not_attempted_reason(case: &ScenarioCase, skip_list: &SkipList) -> Option<String> {
    if let Some(entry) = skip_list.entry_for(case) {
        return Some(format!("skip list: {}", entry.reason));
    }
    case.automatic_skip_reason()
}

/// Runs every case (skipping those with a reason) on up to [`MOST_THREADS`] threads and
/// returns the outcomes in the order of `cases`.
pub fn run_cases(
    cases: &[&ScenarioCase],
    skip_list: &SkipList,
    factory: &BackendFactory,
) -> Vec<ScenarioOutcome> {
    let slots: Vec<Mutex<Option<ScenarioOutcome>>> =
        cases.iter().map(|_| Mutex::new(None)).collect();
    let next_case = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, MOST_THREADS);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            std::thread::Builder::new()
                .name("tck-scenarios".into())
                .stack_size(WORKER_STACK_BYTES)
                .spawn_scoped(scope, || {
                    run_worker(cases, skip_list, factory, &next_case, &slots)
                })
                .expect("cannot start a TCK worker thread");
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .unwrap_or_else(|poison| poison.into_inner())
                .unwrap_or_else(|| ScenarioOutcome {
                    verdict: Verdict::Failed("the runner lost this scenario's outcome".into()),
                    error_check: None,
                })
        })
        .collect()
}

/// One worker: takes the next case until none is left and stores its outcome in its slot.
fn run_worker(
    cases: &[&ScenarioCase],
    skip_list: &SkipList,
    factory: &BackendFactory,
    next_case: &AtomicUsize,
    slots: &[Mutex<Option<ScenarioOutcome>>],
) {
    loop {
        let index = next_case.fetch_add(1, Ordering::Relaxed);
        let Some(case) = cases.get(index) else { break };
        let outcome = match not_attempted_reason(case, skip_list) {
            Some(reason) => ScenarioOutcome {
                verdict: Verdict::NotAttempted(reason),
                error_check: None,
            },
            None => run_scenario(case, factory),
        };
        *slots[index]
            .lock()
            .unwrap_or_else(|poison| poison.into_inner()) = Some(outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Backend, EngineFailure, FailurePhase, Outcome, QueryRows};
    use crate::features::parse_feature_text;
    use crate::values::TckValue;
    use std::collections::BTreeMap;

    /// Answers `RETURN 1 AS x` with one row and everything else with a compile error.
    struct ReturnsOne;

    impl Backend for ReturnsOne {
        fn execute(&mut self, query: &str, _parameters: &BTreeMap<String, TckValue>) -> Outcome {
            if query == "RETURN 1 AS x" {
                Outcome::Rows(QueryRows {
                    columns: vec!["x".into()],
                    rows: vec![vec![TckValue::Integer(1)]],
                    side_effects: Default::default(),
                })
            } else {
                Outcome::Failure(EngineFailure {
                    phase: FailurePhase::Compile,
                    message: "unknown".into(),
                })
            }
        }
    }

    const FEATURE: &str = r#"Feature: F

  Scenario: [1] Passes
    Given any graph
    When executing query:
      """
      RETURN 1 AS x
      """
    Then the result should be, in any order:
      | x |
      | 1 |

  Scenario: [2] Fails
    Given any graph
    When executing query:
      """
      RETURN 2 AS x
      """
    Then the result should be empty

  Scenario: [3] Skipped by list
    Given any graph
    When executing query:
      """
      RETURN 1 AS x
      """
    Then the result should be empty

  Scenario: [4] Skipped by step
    Given the binary-tree-1 graph
    When executing query:
      """
      RETURN 1 AS x
      """
    Then the result should be empty
"#;

    #[test]
    fn selection_covers_listed_clauses_and_all_expressions() {
        assert!(is_selected("clauses/match/Match1.feature"));
        assert!(is_selected("clauses/with-orderBy/WithOrderBy1.feature"));
        assert!(is_selected("expressions/temporal/Temporal1.feature"));
        assert!(!is_selected("clauses/union/Union1.feature"));
        assert!(!is_selected("clauses/call/Call1.feature"));
        assert!(!is_selected(
            "useCases/triadicSelection/TriadicSelection1.feature"
        ));
        let present: Vec<String> = CLAUSE_FOLDERS
            .iter()
            .filter(|folder| **folder != "clauses/optional-match")
            .map(|folder| format!("{folder}/X1.feature"))
            .collect();
        assert_eq!(absent_clause_folders(&present), ["clauses/optional-match"]);
    }

    #[test]
    fn cases_run_in_parallel_keep_their_order_and_skip_reasons() {
        let cases = parse_feature_text("clauses/match/Match1.feature", FEATURE).expect("parses");
        let skip_list =
            SkipList::parse("clauses/match/Match1.feature :: [3] Skipped by list  # slow\n")
                .expect("parses");
        let factory: Box<BackendFactory> =
            Box::new(|_folder: &Path| Ok(Box::new(ReturnsOne) as Box<dyn Backend>));
        // Many copies, so several threads take part and order must be restored.
        let repeated: Vec<&ScenarioCase> = cases.iter().cycle().take(cases.len() * 25).collect();
        let outcomes = run_cases(&repeated, &skip_list, factory.as_ref());
        for (index, outcome) in outcomes.iter().enumerate() {
            let expected = match index % 4 {
                0 => Verdict::Passed,
                1 => Verdict::Failed("the query failed (Compile): unknown".into()),
                2 => Verdict::NotAttempted("skip list: slow".into()),
                _ => Verdict::NotAttempted("unsupported step `the binary-tree-1 graph`".into()),
            };
            assert_eq!(outcome.verdict, expected, "case {index}");
        }
    }

    #[test]
    fn loading_reports_unparsable_files_and_unreadable_steps() {
        let root = tempfile::tempdir().expect("tempdir");
        let folder = root.path().join("expressions/list");
        std::fs::create_dir_all(&folder).expect("mkdir");
        std::fs::create_dir_all(root.path().join("clauses/call")).expect("mkdir");
        std::fs::write(folder.join("Good1.feature"), FEATURE).expect("write");
        std::fs::write(folder.join("Broken1.feature"), "this is not gherkin\n").expect("write");
        let unreadable = "Feature: F\n\n  Scenario: [1] S\n    Given any graph\n    And parameters are:\n      | p | [1, |\n";
        std::fs::write(folder.join("Odd1.feature"), unreadable).expect("write");
        // Not a selected folder: never read, so its defects do not count.
        std::fs::write(root.path().join("clauses/call/Call1.feature"), "garbage").expect("write");
        let (cases, problems) = load_selected_cases(root.path()).expect("loads");
        assert_eq!(cases.len(), 5);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].starts_with("expressions/list/Broken1.feature: gherkin cannot parse it"),
            "{problems:?}"
        );
        assert!(
            problems[1].starts_with("expressions/list/Odd1.feature:3 [1] S: `parameters are:`"),
            "{problems:?}"
        );
    }
}
