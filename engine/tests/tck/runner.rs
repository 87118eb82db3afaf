//! Running one scenario: a fresh backend in a fresh folder, its steps in order, the first
//! failed check ending it. A panic inside the engine is caught and becomes a failure, so
//! the suite goes on with the next scenario.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

use crate::backend::{Backend, BackendFactory, EngineFailure, FailurePhase, Outcome, QueryRows};
use crate::compare::{compare_rows, quote_rows};
use crate::features::{ExpectedPhase, ScenarioCase, Step};
use crate::values::TckValue;

/// How a scenario that expected an error ended, for the report's error counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorCheck {
    /// The engine raised an error in the expected phase.
    pub phase_matched: bool,
    /// The phase the error class usually belongs to (see [`usual_phase_of_class`]) is the
    /// phase the engine raised it in; recorded, never required.
    pub class_matched: bool,
}

/// The verdict on one scenario.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Every check held.
    Passed,
    /// A check failed, a setup statement failed, or the engine panicked.
    Failed(String),
    /// Not run; the reason comes from the skip list or from an unsupported step.
    NotAttempted(String),
}

/// A scenario's verdict plus what it tells about expected errors.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioOutcome {
    /// Passed, failed or not attempted.
    pub verdict: Verdict,
    /// Set when the scenario expected an error and the runner got to check it.
    pub error_check: Option<ErrorCheck>,
}

/// The phase an engine would normally raise a TCK error class in: syntax and semantic
/// problems are found before running, type, argument, missing-entity and constraint
/// problems while running. Classes not listed have no usual phase.
pub fn usual_phase_of_class(class: &str) -> Option<FailurePhase> {
    match class {
        "SyntaxError" | "SemanticError" | "ParameterMissing" | "ProcedureError" => {
            Some(FailurePhase::Compile)
        }
        "TypeError" | "ArgumentError" | "EntityNotFound" | "ConstraintVerificationFailed" => {
            Some(FailurePhase::Runtime)
        }
        _ => None,
    }
}

/// Runs one attemptable scenario on a backend made by `factory` in a fresh temporary folder.
pub fn run_scenario(case: &ScenarioCase, factory: &BackendFactory) -> ScenarioOutcome {
    install_quiet_panic_hook();
    let folder = match tempfile::tempdir() {
        Ok(folder) => folder,
        Err(error) => return failed(format!("cannot make a temporary folder: {error}")),
    };
    PANIC_LOCATION.with(|location| location.borrow_mut().take());
    let caught = {
        let _quiet = QuietPanics::enter();
        catch_unwind(AssertUnwindSafe(|| {
            let mut backend = factory(folder.path())?;
            Ok::<_, String>(run_steps(case, backend.as_mut()))
        }))
    };
    match caught {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(message)) => failed(format!("cannot create the graph: {message}")),
        Err(payload) => {
            let location = PANIC_LOCATION
                .with(|location| location.borrow_mut().take())
                .unwrap_or_default();
            failed(format!(
                "engine panicked{location}: {}",
                panic_message(payload.as_ref())
            ))
        }
    }
}

/// A failure verdict with no error check.
fn failed(message: String) -> ScenarioOutcome {
    ScenarioOutcome {
        verdict: Verdict::Failed(message),
        error_check: None,
    }
}

/// What the steps so far have left for the following ones to check.
#[derive(Default)]
struct ScenarioState {
    parameters: BTreeMap<String, TckValue>,
    last_outcome: Option<Outcome>,
    error_check: Option<ErrorCheck>,
}

/// Performs the steps in order; the first failed one decides the verdict.
fn run_steps(case: &ScenarioCase, backend: &mut dyn Backend) -> ScenarioOutcome {
    let mut state = ScenarioState::default();
    for step in &case.steps {
        if let Err(message) = run_step(step, backend, &mut state) {
            return ScenarioOutcome {
                verdict: Verdict::Failed(message),
                error_check: state.error_check,
            };
        }
    }
    if state.last_outcome.is_none() {
        return failed("the scenario executes no query".to_string());
    }
    ScenarioOutcome {
        verdict: Verdict::Passed,
        error_check: state.error_check,
    }
}

/// Performs or checks one step against the state left by the earlier ones.
fn run_step(
    step: &Step,
    backend: &mut dyn Backend,
    state: &mut ScenarioState,
) -> Result<(), String> {
    match step {
        Step::FreshGraph => Ok(()),
        Step::Setup(query) => match backend.execute(query, &state.parameters) {
            Outcome::Rows(_) => Ok(()),
            Outcome::Failure(failure) => Err(format!(
                "setup statement failed ({:?}): {}",
                failure.phase,
                first_line(&failure.message)
            )),
        },
        Step::Parameters(parameters) => {
            state.parameters.extend(parameters.clone());
            Ok(())
        }
        Step::Query(query) | Step::ControlQuery(query) => {
            state.last_outcome = Some(backend.execute(query, &state.parameters));
            Ok(())
        }
        Step::ExpectRows {
            row_order,
            list_order,
            table,
        } => compare_rows(table, last_rows(state)?, *row_order, *list_order),
        Step::ExpectEmpty => {
            let rows = last_rows(state)?;
            if rows.rows.is_empty() {
                Ok(())
            } else {
                Err(format!("expected no rows, got {}", quote_rows(&rows.rows)))
            }
        }
        Step::ExpectSideEffects(expected) => check_side_effects(expected, last_rows(state)?),
        Step::ExpectError { class, phase, .. } => check_error(class, *phase, state),
        Step::Unsupported(text) => Err(format!("unsupported step `{text}` was run")),
        Step::Malformed(problem) => Err(format!("unreadable step was run: {problem}")),
    }
}

/// The rows of the last query, or why there are none.
fn last_rows(state: &ScenarioState) -> Result<&QueryRows, String> {
    match &state.last_outcome {
        Some(Outcome::Rows(rows)) => Ok(rows),
        Some(Outcome::Failure(failure)) => Err(format!(
            "the query failed ({:?}): {}",
            failure.phase,
            first_line(&failure.message)
        )),
        None => Err("an expectation comes before any query".to_string()),
    }
}

/// Compares every counter: those the step lists and zero for the others.
fn check_side_effects(expected: &BTreeMap<String, u64>, rows: &QueryRows) -> Result<(), String> {
    let differences: Vec<String> = rows
        .side_effects
        .named_counts()
        .iter()
        .filter_map(|(name, actual)| {
            let wanted = expected.get(*name).copied().unwrap_or(0);
            (wanted != *actual).then(|| format!("{name} expected {wanted}, got {actual}"))
        })
        .collect();
    if differences.is_empty() {
        Ok(())
    } else {
        Err(format!("side effects differ: {}", differences.join(", ")))
    }
}

/// Checks that the last query failed in the expected phase, recording the class mapping too.
fn check_error(
    class: &str,
    expected: ExpectedPhase,
    state: &mut ScenarioState,
) -> Result<(), String> {
    let failure: &EngineFailure = match &state.last_outcome {
        Some(Outcome::Failure(failure)) => failure,
        Some(Outcome::Rows(rows)) => {
            state.error_check = Some(ErrorCheck {
                phase_matched: false,
                class_matched: false,
            });
            return Err(format!(
                "expected a {class} ({expected:?}), but the query returned {} row(s)",
                rows.rows.len()
            ));
        }
        None => return Err("an expectation comes before any query".to_string()),
    };
    let phase_matched = match (expected, failure.phase) {
        (_, FailurePhase::LimitExceeded | FailurePhase::Harness) => false,
        (ExpectedPhase::AnyTime, _) => true,
        (ExpectedPhase::Compile, phase) => phase == FailurePhase::Compile,
        (ExpectedPhase::Runtime, phase) => phase == FailurePhase::Runtime,
    };
    let class_matched = usual_phase_of_class(class) == Some(failure.phase);
    state.error_check = Some(ErrorCheck {
        phase_matched,
        class_matched,
    });
    if phase_matched {
        Ok(())
    } else {
        Err(format!(
            "expected a {class} ({expected:?}), got a {:?} error: {}",
            failure.phase,
            first_line(&failure.message)
        ))
    }
}

/// The first line of an engine message (diagnostics go on with carets and hints).
fn first_line(message: &str) -> &str {
    message.lines().next().unwrap_or("")
}

/// The text of a panic payload (`panic!` makes a `&str` or a `String`).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text.to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a non-text panic payload".to_string()
    }
}

thread_local! {
    /// Whether this thread is inside an engine call whose panics the runner reports itself.
    static PANICS_ARE_QUIET: RefCell<bool> = const { RefCell::new(false) };
    /// Where the last quiet panic happened (` at file:line`), for the failure message.
    static PANIC_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Marks the current thread's panics as the runner's to report while it lives.
struct QuietPanics;

impl QuietPanics {
    fn enter() -> Self {
        PANICS_ARE_QUIET.with(|quiet| *quiet.borrow_mut() = true);
        QuietPanics
    }
}

impl Drop for QuietPanics {
    fn drop(&mut self) {
        PANICS_ARE_QUIET.with(|quiet| *quiet.borrow_mut() = false);
    }
}

/// Engine panics are caught and reported per scenario; printing each one's message and
/// backtrace too would bury the report. Other threads' panics (failing unit tests) still
/// go to the previous hook.
fn install_quiet_panic_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if PANICS_ARE_QUIET.with(|quiet| *quiet.borrow()) {
                let location = info
                    .location()
                    .map(|location| format!(" at {}:{}", location.file(), location.line()));
                PANIC_LOCATION.with(|slot| *slot.borrow_mut() = location);
            } else {
                previous(info);
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::SideEffects;
    use crate::features::parse_feature_text;
    use crate::values::parse_tck_value;
    use std::path::Path;

    /// Answers each query text with a canned outcome; unknown queries fail at compile time.
    struct CannedBackend {
        answers: BTreeMap<String, Outcome>,
        seen_parameters: Vec<BTreeMap<String, TckValue>>,
    }

    impl Backend for CannedBackend {
        fn execute(&mut self, query: &str, parameters: &BTreeMap<String, TckValue>) -> Outcome {
            self.seen_parameters.push(parameters.clone());
            if query == "PANIC" {
                panic!("canned engine panic");
            }
            if query == "CHECK PARAMETERS" {
                return match parameters.get("p") {
                    Some(TckValue::Integer(42)) => rows(&["x"], &[&["1"]], SideEffects::default()),
                    _ => failure(FailurePhase::Runtime, "parameter p missing"),
                };
            }
            self.answers.get(query).cloned().unwrap_or_else(|| {
                failure(FailurePhase::Compile, &format!("unknown query {query}"))
            })
        }
    }

    fn rows(columns: &[&str], cells: &[&[&str]], side_effects: SideEffects) -> Outcome {
        Outcome::Rows(QueryRows {
            columns: columns.iter().map(ToString::to_string).collect(),
            rows: cells
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|cell| parse_tck_value(cell).expect("value"))
                        .collect()
                })
                .collect(),
            side_effects,
        })
    }

    fn failure(phase: FailurePhase, message: &str) -> Outcome {
        Outcome::Failure(EngineFailure {
            phase,
            message: message.to_string(),
        })
    }

    fn canned_factory() -> Box<BackendFactory> {
        Box::new(|folder: &Path| {
            assert!(folder.is_dir(), "each scenario gets an existing folder");
            let answers = BTreeMap::from([
                (
                    "CREATE (:A)".to_string(),
                    rows(
                        &[],
                        &[],
                        SideEffects {
                            nodes_created: 1,
                            labels_added: 1,
                            ..SideEffects::default()
                        },
                    ),
                ),
                (
                    "MATCH (n) RETURN n".to_string(),
                    rows(&["n"], &[&["(:A)"]], SideEffects::default()),
                ),
                (
                    "RETURN 1 AS x".to_string(),
                    rows(&["x"], &[&["1"]], SideEffects::default()),
                ),
                (
                    "RETURN x".to_string(),
                    failure(FailurePhase::Compile, "undefined x"),
                ),
                (
                    "RETURN 1 + 'a'".to_string(),
                    failure(FailurePhase::Runtime, "type error"),
                ),
                (
                    "SLOW".to_string(),
                    failure(FailurePhase::LimitExceeded, "timed out"),
                ),
                (
                    "NODE PARAMETER".to_string(),
                    failure(
                        FailurePhase::Harness,
                        "a graph element cannot be a parameter",
                    ),
                ),
            ]);
            Ok(Box::new(CannedBackend {
                answers,
                seen_parameters: Vec::new(),
            }) as Box<dyn Backend>)
        })
    }

    /// Runs the single scenario of a feature whose body is `steps`.
    /// Runs the single scenario `Given an empty graph` + `steps` (gherkin lines).
    fn run_steps_text(steps: &str) -> ScenarioOutcome {
        let text = format!("Feature: F\n\n  Scenario: [1] S\n    Given an empty graph\n{steps}");
        let cases = parse_feature_text("clauses/x/X1.feature", &text).expect("parses");
        run_scenario(&cases[0], canned_factory().as_ref())
    }

    /// `When executing query:` with `query` in the doc string.
    fn query(query: &str) -> String {
        format!("    When executing query:\n      \"\"\"\n      {query}\n      \"\"\"\n")
    }

    fn failure_message(outcome: ScenarioOutcome) -> String {
        match outcome.verdict {
            Verdict::Failed(message) => message,
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[test]
    fn matching_rows_and_side_effects_pass() {
        let matched = r#"
    And having executed:
      """
      CREATE (:A)
      """
    When executing query:
      """
      MATCH (n) RETURN n
      """
    Then the result should be, in any order:
      | n    |
      | (:A) |
    And no side effects
"#;
        assert_eq!(run_steps_text(matched).verdict, Verdict::Passed);
        let created = query("CREATE (:A)")
            + r#"
    Then the result should be empty
    And the side effects should be:
      | +nodes  | 1 |
      | +labels | 1 |
"#;
        assert_eq!(run_steps_text(&created).verdict, Verdict::Passed);
    }

    #[test]
    fn wrong_rows_or_side_effects_fail_with_the_difference() {
        let wrong_rows = query("RETURN 1 AS x")
            + "    Then the result should be, in any order:\n      | x |\n      | 2 |\n";
        let message = failure_message(run_steps_text(&wrong_rows));
        assert!(message.starts_with("rows differ"), "{message}");
        let wrong_side_effects = query("CREATE (:A)")
            + r#"
    Then the result should be empty
    And the side effects should be:
      | +nodes | 1 |
"#;
        assert_eq!(
            failure_message(run_steps_text(&wrong_side_effects)),
            "side effects differ: +labels expected 0, got 1"
        );
        let not_empty = query("RETURN 1 AS x") + "    Then the result should be empty\n";
        let message = failure_message(run_steps_text(&not_empty));
        assert_eq!(message, "expected no rows, got | 1 |");
    }

    /// The verdict passed and the error check of `query` + an error expectation.
    fn error_scenario(statement: &str, expectation: &str) -> (bool, Option<ErrorCheck>) {
        let outcome = run_steps_text(&(query(statement) + &format!("    Then {expectation}\n")));
        (outcome.verdict == Verdict::Passed, outcome.error_check)
    }

    fn error_check(phase_matched: bool, class_matched: bool) -> Option<ErrorCheck> {
        Some(ErrorCheck {
            phase_matched,
            class_matched,
        })
    }

    #[test]
    fn errors_pass_on_phase_and_record_the_class_mapping() {
        let syntax_at_compile = "a SyntaxError should be raised at compile time: UndefinedVariable";
        let type_at_compile = "a TypeError should be raised at compile time: InvalidArgumentType";
        let type_any_time = "a TypeError should be raised at any time: InvalidArgumentType";
        let type_at_runtime = "a TypeError should be raised at runtime: InvalidArgumentType";
        assert_eq!(
            error_scenario("RETURN x", syntax_at_compile),
            (true, error_check(true, true))
        );
        assert_eq!(
            error_scenario("RETURN x", type_at_compile),
            (true, error_check(true, false))
        );
        assert_eq!(
            error_scenario("RETURN 1 + 'a'", type_at_compile),
            (false, error_check(false, true))
        );
        assert_eq!(
            error_scenario("RETURN 1 + 'a'", type_any_time),
            (true, error_check(true, true))
        );
        assert_eq!(
            error_scenario("RETURN 1 + 'a'", type_at_runtime),
            (true, error_check(true, true))
        );
    }

    #[test]
    fn timeouts_harness_failures_and_successes_are_not_the_expected_error() {
        let type_any_time = "a TypeError should be raised at any time: X";
        assert_eq!(
            error_scenario("SLOW", type_any_time),
            (false, error_check(false, false))
        );
        assert_eq!(
            error_scenario("NODE PARAMETER", type_any_time),
            (false, error_check(false, false))
        );
        let success = query("RETURN 1 AS x") + &format!("    Then {type_any_time}\n");
        let message = failure_message(run_steps_text(&success));
        assert!(message.contains("returned 1 row(s)"), "{message}");
    }

    #[test]
    fn parameters_reach_the_backend_and_setup_failures_fail() {
        let with_parameters = "    And parameters are:\n      | p | 42 |\n".to_string()
            + &query("CHECK PARAMETERS")
            + "    Then the result should be, in order:\n      | x |\n      | 1 |\n";
        assert_eq!(run_steps_text(&with_parameters).verdict, Verdict::Passed);
        let without_parameters =
            query("CHECK PARAMETERS") + "    Then the result should be empty\n";
        let message = failure_message(run_steps_text(&without_parameters));
        assert_eq!(message, "the query failed (Runtime): parameter p missing");
        let failing_setup = r#"
    And having executed:
      """
      NOT KNOWN
      """
"#
        .to_string()
            + &query("RETURN 1 AS x");
        let message = failure_message(run_steps_text(&failing_setup));
        assert!(
            message.starts_with("setup statement failed (Compile)"),
            "{message}"
        );
    }

    #[test]
    fn engine_panics_become_failures_with_their_message() {
        let message = failure_message(run_steps_text(&query("PANIC")));
        assert!(message.starts_with("engine panicked at "), "{message}");
        assert!(message.ends_with(": canned engine panic"), "{message}");
        // The runner is still usable afterwards.
        let next = query("RETURN 1 AS x")
            + "    Then the result should be, in order:\n      | x |\n      | 1 |\n";
        assert_eq!(run_steps_text(&next).verdict, Verdict::Passed);
    }

    #[test]
    fn a_scenario_without_a_query_fails() {
        assert_eq!(
            run_steps_text("    And no side effects\n").verdict,
            Verdict::Failed("an expectation comes before any query".into())
        );
        let factory = canned_factory();
        let case = &parse_feature_text(
            "clauses/x/X1.feature",
            "Feature: F\n\n  Scenario: [1] S\n    Given an empty graph\n",
        )
        .expect("parses")[0];
        assert_eq!(
            run_scenario(case, factory.as_ref()).verdict,
            Verdict::Failed("the scenario executes no query".into())
        );
    }

    #[test]
    fn class_phases_follow_the_mapping() {
        assert_eq!(
            usual_phase_of_class("SyntaxError"),
            Some(FailurePhase::Compile)
        );
        assert_eq!(
            usual_phase_of_class("SemanticError"),
            Some(FailurePhase::Compile)
        );
        assert_eq!(
            usual_phase_of_class("TypeError"),
            Some(FailurePhase::Runtime)
        );
        assert_eq!(
            usual_phase_of_class("EntityNotFound"),
            Some(FailurePhase::Runtime)
        );
        assert_eq!(usual_phase_of_class("Mystery"), None);
    }
}
