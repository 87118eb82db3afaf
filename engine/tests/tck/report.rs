//! Counting verdicts per feature file and per folder, and writing them out.
//!
//! "Passed of attempted" and "attempted of all" are kept apart, as vendors report them, and
//! every reason for not attempting a scenario is printed with its count.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::features::ScenarioCase;
use crate::runner::{ScenarioOutcome, Verdict};

/// Counts over a set of scenarios.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Every scenario (outline rows counted one by one).
    pub all: usize,
    /// Those run.
    pub attempted: usize,
    /// Those that passed.
    pub passed: usize,
    /// Attempted scenarios whose expected error the runner got to check.
    pub errors_checked: usize,
    /// Of those, the ones where the engine failed in the expected phase.
    pub errors_in_expected_phase: usize,
    /// Of those checked, the ones where the engine's phase is the usual one of the class.
    pub errors_in_class_phase: usize,
}

impl Tally {
    fn add(&mut self, outcome: &ScenarioOutcome) {
        self.all += 1;
        match outcome.verdict {
            Verdict::Passed => {
                self.attempted += 1;
                self.passed += 1;
            }
            Verdict::Failed(_) => self.attempted += 1,
            Verdict::NotAttempted(_) => {}
        }
        if let Some(check) = outcome.error_check {
            self.errors_checked += 1;
            self.errors_in_expected_phase += usize::from(check.phase_matched);
            self.errors_in_class_phase += usize::from(check.class_matched);
        }
    }

    fn merge(&mut self, other: &Tally) {
        self.all += other.all;
        self.attempted += other.attempted;
        self.passed += other.passed;
        self.errors_checked += other.errors_checked;
        self.errors_in_expected_phase += other.errors_in_expected_phase;
        self.errors_in_class_phase += other.errors_in_class_phase;
    }

    /// `passed P of attempted A, attempted A of all N`.
    pub fn summary(&self) -> String {
        format!(
            "passed {} of attempted {}, attempted {} of all {}",
            self.passed, self.attempted, self.attempted, self.all
        )
    }
}

/// Every verdict of a run, counted.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Tallies per feature file.
    pub by_feature: BTreeMap<String, Tally>,
    /// Tallies per folder (`clauses/match`).
    pub by_folder: BTreeMap<String, Tally>,
    /// Reasons for not attempting, with how many scenarios each.
    pub not_attempted: BTreeMap<String, usize>,
    /// One line per scenario: verdict, label and reason.
    pub scenario_lines: Vec<String>,
}

impl Report {
    /// Counts the outcome of each case (the two slices are parallel).
    pub fn new(cases: &[&ScenarioCase], outcomes: &[ScenarioOutcome]) -> Report {
        let mut report = Report::default();
        for (case, outcome) in cases.iter().zip(outcomes) {
            report
                .by_feature
                .entry(case.feature_path.clone())
                .or_default()
                .add(outcome);
            report
                .by_folder
                .entry(case.folder())
                .or_default()
                .add(outcome);
            let line = match &outcome.verdict {
                Verdict::Passed => format!("PASS {}", case.label()),
                Verdict::Failed(reason) => format!("FAIL {}: {reason}", case.label()),
                Verdict::NotAttempted(reason) => {
                    *report.not_attempted.entry(reason.clone()).or_default() += 1;
                    format!("SKIP {}: {reason}", case.label())
                }
            };
            report.scenario_lines.push(line);
        }
        report
    }

    /// Passing scenarios per folder, for the floors.
    pub fn passes_by_folder(&self) -> BTreeMap<String, usize> {
        self.by_folder
            .iter()
            .map(|(folder, tally)| (folder.clone(), tally.passed))
            .collect()
    }

    /// The summary: each feature file, each folder's total, the grand total, and the
    /// reasons for not attempting.
    pub fn render_summary(&self) -> String {
        let mut text = String::new();
        for (folder, folder_tally) in &self.by_folder {
            let prefix = format!("{folder}/");
            for (feature, tally) in self
                .by_feature
                .iter()
                .filter(|(path, _)| path.starts_with(&prefix))
            {
                let _ = writeln!(text, "  {feature}: {}", tally.summary());
            }
            let _ = writeln!(
                text,
                "{folder} total: {}{}",
                folder_tally.summary(),
                error_note(folder_tally)
            );
        }
        let mut total = Tally::default();
        for tally in self.by_folder.values() {
            total.merge(tally);
        }
        let _ = writeln!(
            text,
            "ALL FOLDERS: {}{}",
            total.summary(),
            error_note(&total)
        );
        if !self.not_attempted.is_empty() {
            let _ = writeln!(text, "not attempted, by reason:");
            for (reason, count) in &self.not_attempted {
                let _ = writeln!(text, "  {count:5}  {reason}");
            }
        }
        text
    }

    /// The summary followed by one line per scenario.
    pub fn render_full(&self) -> String {
        let mut text = self.render_summary();
        text.push_str("\nscenarios:\n");
        for line in &self.scenario_lines {
            text.push_str(line);
            text.push('\n');
        }
        text
    }
}

/// The expected-error counts of a tally, or nothing when it has none.
fn error_note(tally: &Tally) -> String {
    if tally.errors_checked == 0 {
        return String::new();
    }
    format!(
        "; expected errors: {} of {} in the expected phase, {} in their class's usual phase",
        tally.errors_in_expected_phase, tally.errors_checked, tally.errors_in_class_phase
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::ErrorCheck;

    fn case(feature_path: &str, name: &str) -> ScenarioCase {
        ScenarioCase {
            feature_path: feature_path.into(),
            outline_name: name.into(),
            name: name.into(),
            example_number: None,
            line: 7,
            steps: vec![],
        }
    }

    fn outcome(verdict: Verdict, error_check: Option<ErrorCheck>) -> ScenarioOutcome {
        ScenarioOutcome {
            verdict,
            error_check,
        }
    }

    #[test]
    fn counts_per_file_and_folder_keep_attempted_apart() {
        let cases = [
            case("clauses/match/Match1.feature", "[1] a"),
            case("clauses/match/Match1.feature", "[2] b"),
            case("clauses/match/Match2.feature", "[1] c"),
            case("expressions/list/List1.feature", "[1] d"),
        ];
        let outcomes = [
            outcome(Verdict::Passed, None),
            outcome(
                Verdict::Failed("rows differ".into()),
                Some(ErrorCheck {
                    phase_matched: false,
                    class_matched: false,
                }),
            ),
            outcome(Verdict::NotAttempted("unsupported step `x`".into()), None),
            outcome(
                Verdict::Passed,
                Some(ErrorCheck {
                    phase_matched: true,
                    class_matched: false,
                }),
            ),
        ];
        let case_references: Vec<&ScenarioCase> = cases.iter().collect();
        let report = Report::new(&case_references, &outcomes);
        assert_eq!(
            report.render_summary(),
            "  clauses/match/Match1.feature: passed 1 of attempted 2, attempted 2 of all 2\n\
             \x20 clauses/match/Match2.feature: passed 0 of attempted 0, attempted 0 of all 1\n\
             clauses/match total: passed 1 of attempted 2, attempted 2 of all 3; expected errors: 0 of 1 in the expected phase, 0 in their class's usual phase\n\
             \x20 expressions/list/List1.feature: passed 1 of attempted 1, attempted 1 of all 1\n\
             expressions/list total: passed 1 of attempted 1, attempted 1 of all 1; expected errors: 1 of 1 in the expected phase, 0 in their class's usual phase\n\
             ALL FOLDERS: passed 2 of attempted 3, attempted 3 of all 4; expected errors: 1 of 2 in the expected phase, 0 in their class's usual phase\n\
             not attempted, by reason:\n\
             \x20     1  unsupported step `x`\n"
        );
        assert_eq!(
            report.passes_by_folder(),
            BTreeMap::from([
                ("clauses/match".to_string(), 1),
                ("expressions/list".to_string(), 1)
            ])
        );
        let full = report.render_full();
        assert!(
            full.contains("\nFAIL clauses/match/Match1.feature:7 [2] b: rows differ\n"),
            "{full}"
        );
        assert!(
            full.contains("\nSKIP clauses/match/Match2.feature:7 [1] c: unsupported step `x`\n"),
            "{full}"
        );
    }
}
