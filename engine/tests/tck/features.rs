//! Reading the TCK's feature files into runnable scenarios.
//!
//! Each `Scenario Outline` is expanded into one scenario per `Examples` row (placeholders
//! `<name>` replaced in the title, step text, doc strings and tables), a `Background` is
//! put in front of every scenario of its feature, and each step is interpreted once into a
//! [`Step`]; a step the runner does not know becomes [`Step::Unsupported`], so the scenario
//! is reported as not attempted with that step as the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::values::{TckValue, parse_tck_value};

/// How the rows of a result must be ordered to match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowOrder {
    /// `in order`: row `i` must match expected row `i`.
    Exact,
    /// `in any order`: rows form a bag.
    Any,
}

/// Whether the elements of lists inside values must be in the expected order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListOrder {
    /// Lists are sequences.
    Significant,
    /// `ignoring element order for lists`: lists are compared as bags.
    Ignored,
}

/// When the TCK expects an error to be raised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpectedPhase {
    /// `at compile time`.
    Compile,
    /// `at runtime`.
    Runtime,
    /// `any time`.
    AnyTime,
}

/// An expected result table: column names and rows of values.
#[derive(Clone, Debug, PartialEq)]
pub struct ExpectedTable {
    /// Column names, from the header row.
    pub columns: Vec<String>,
    /// Rows, one value per column.
    pub rows: Vec<Vec<TckValue>>,
}

/// One step the runner knows how to perform or check.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// `Given an empty graph` / `Given any graph`: every scenario starts on a fresh graph.
    FreshGraph,
    /// `And having executed:`: a setup statement whose result is not checked.
    Setup(String),
    /// `And parameters are:`: parameters for the following queries.
    Parameters(BTreeMap<String, TckValue>),
    /// `When executing query:`.
    Query(String),
    /// `When executing control query:`: a query that inspects the graph afterwards.
    ControlQuery(String),
    /// `Then the result should be, ...:` with a table.
    ExpectRows {
        /// Whether row order matters.
        row_order: RowOrder,
        /// Whether list element order matters.
        list_order: ListOrder,
        /// The expected table.
        table: ExpectedTable,
    },
    /// `Then the result should be empty`.
    ExpectEmpty,
    /// `And no side effects` (all counts zero) or `And the side effects should be:`
    /// (listed counts; the others zero).
    ExpectSideEffects(BTreeMap<String, u64>),
    /// `Then a <class> should be raised at <phase>: <detail>`.
    ExpectError {
        /// The TCK's error class, e.g. `SyntaxError`.
        class: String,
        /// When it must be raised.
        phase: ExpectedPhase,
        /// The TCK's detail code, e.g. `UndefinedVariable`.
        detail: String,
    },
    /// A step the runner does not perform; the text says which.
    Unsupported(String),
    /// A step the runner knows but whose argument it cannot read (a runner defect).
    Malformed(String),
}

/// The names of the side-effect counters of `the side effects should be:`.
pub const SIDE_EFFECT_NAMES: [&str; 8] = [
    "+nodes",
    "-nodes",
    "+relationships",
    "-relationships",
    "+labels",
    "-labels",
    "+properties",
    "-properties",
];

/// One runnable scenario: an ordinary scenario or one row of an outline.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioCase {
    /// The feature file, relative to the features folder, with `/` separators.
    pub feature_path: String,
    /// The scenario's title as written (placeholders not replaced).
    pub outline_name: String,
    /// The title with this row's values in place of placeholders.
    pub name: String,
    /// For an outline, this row's number (from 1, across all its `Examples` tables).
    pub example_number: Option<usize>,
    /// Line of the scenario in the feature file.
    pub line: usize,
    /// The steps, background first.
    pub steps: Vec<Step>,
}

impl ScenarioCase {
    /// The folder the report totals this scenario under: the first two path components
    /// (`clauses/match`, `expressions/list`).
    pub fn folder(&self) -> String {
        folder_of(&self.feature_path)
    }

    /// A label that names exactly this case in messages.
    pub fn label(&self) -> String {
        match self.example_number {
            Some(number) => format!(
                "{}:{} {} (example {number})",
                self.feature_path, self.line, self.name
            ),
            None => format!("{}:{} {}", self.feature_path, self.line, self.name),
        }
    }

    /// The first step the runner cannot perform or read, as a reason to not attempt it.
    pub fn automatic_skip_reason(&self) -> Option<String> {
        self.steps.iter().find_map(|step| match step {
            Step::Unsupported(text) => Some(format!("unsupported step `{text}`")),
            Step::Malformed(problem) => Some(format!("runner cannot read a step: {problem}")),
            _ => None,
        })
    }
}

/// The report folder of a feature path: its first two components.
pub fn folder_of(feature_path: &str) -> String {
    feature_path
        .split('/')
        .take(2)
        .collect::<Vec<_>>()
        .join("/")
}

/// Every `.feature` file under `root`, as paths relative to it, sorted.
pub fn feature_files(root: &Path) -> Result<Vec<String>, String> {
    let mut found = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let directory = root.join(&relative);
        let entries = std::fs::read_dir(&directory)
            .map_err(|error| format!("cannot list {}: {error}", directory.display()))?;
        for entry in entries {
            let entry =
                entry.map_err(|error| format!("cannot list {}: {error}", directory.display()))?;
            let child = relative.join(entry.file_name());
            if entry.path().is_dir() {
                pending.push(child);
            } else if child
                .extension()
                .is_some_and(|extension| extension == "feature")
            {
                let components: Vec<String> = child
                    .components()
                    .map(|component| component.as_os_str().to_string_lossy().into_owned())
                    .collect();
                found.push(components.join("/"));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Reads one feature file (`feature_path` relative to `root`) into its scenario cases.
pub fn load_feature(root: &Path, feature_path: &str) -> Result<Vec<ScenarioCase>, String> {
    let full_path = root.join(feature_path);
    let text = std::fs::read_to_string(&full_path)
        .map_err(|error| format!("cannot read {}: {error}", full_path.display()))?;
    parse_feature_text(feature_path, &text)
}

/// Parses the text of a feature file into scenario cases.
pub fn parse_feature_text(feature_path: &str, text: &str) -> Result<Vec<ScenarioCase>, String> {
    let feature = gherkin::Feature::parse(
        escape_lone_backslashes_in_tables(text),
        gherkin::GherkinEnv::default(),
    )
    .map_err(|error| format!("{feature_path}: gherkin cannot parse it: {error}"))?;
    if !feature.rules.is_empty() {
        return Err(format!(
            "{feature_path}: `Rule` blocks are not read by this runner"
        ));
    }
    let background: Vec<gherkin::Step> = feature
        .background
        .map(|background| background.steps)
        .unwrap_or_default();
    let mut cases = Vec::new();
    for scenario in &feature.scenarios {
        cases.extend(expand_scenario(feature_path, &background, scenario));
    }
    Ok(cases)
}

/// Gherkin's cell escapes are `\|`, `\\` and `\n`; the TCK also writes `\'` inside string
/// cells, meaning the backslash itself (as the reference Cucumber parser reads it), but the
/// `gherkin` crate rejects the whole file. Doubling such a backslash on table lines keeps
/// its meaning and lets the crate parse the file.
fn escape_lone_backslashes_in_tables(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if !line.trim_start().starts_with('|') {
            escaped.push_str(line);
            continue;
        }
        let mut characters = line.chars().peekable();
        while let Some(character) = characters.next() {
            escaped.push(character);
            if character != '\\' {
                continue;
            }
            match characters.peek() {
                Some('\\') | Some('|') | Some('n') => {
                    escaped.push(characters.next().unwrap_or_default());
                }
                _ => escaped.push('\\'),
            }
        }
    }
    escaped
}

/// One case for an ordinary scenario; one per `Examples` row for an outline.
fn expand_scenario(
    feature_path: &str,
    background: &[gherkin::Step],
    scenario: &gherkin::Scenario,
) -> Vec<ScenarioCase> {
    let all_steps: Vec<&gherkin::Step> = background.iter().chain(&scenario.steps).collect();
    let make_case = |substitutions: &BTreeMap<String, String>, example_number| ScenarioCase {
        feature_path: feature_path.to_string(),
        outline_name: scenario.name.clone(),
        name: substitute(&scenario.name, substitutions),
        example_number,
        line: scenario.position.line,
        steps: all_steps
            .iter()
            .map(|step| interpret_step(step, substitutions))
            .collect(),
    };
    if scenario.examples.is_empty() {
        return vec![make_case(&BTreeMap::new(), None)];
    }
    let mut cases = Vec::new();
    for table in scenario
        .examples
        .iter()
        .filter_map(|examples| examples.table.as_ref())
    {
        let Some((header, rows)) = table.rows.split_first() else {
            continue;
        };
        for row in rows {
            let substitutions = header.iter().cloned().zip(row.iter().cloned()).collect();
            cases.push(make_case(&substitutions, Some(cases.len() + 1)));
        }
    }
    cases
}

/// Replaces every `<name>` placeholder that has a value.
fn substitute(text: &str, substitutions: &BTreeMap<String, String>) -> String {
    let mut result = text.to_string();
    for (name, value) in substitutions {
        result = result.replace(&format!("<{name}>"), value);
    }
    result
}

/// Turns one gherkin step into a [`Step`], after placeholder substitution.
fn interpret_step(step: &gherkin::Step, substitutions: &BTreeMap<String, String>) -> Step {
    let text = substitute(step.value.trim(), substitutions);
    let docstring = step
        .docstring
        .as_ref()
        .map(|docstring| substitute(docstring.trim(), substitutions));
    let table: Option<Vec<Vec<String>>> = step.table.as_ref().map(|table| {
        table
            .rows
            .iter()
            .map(|row| {
                row.iter()
                    .map(|cell| substitute(cell.trim(), substitutions))
                    .collect()
            })
            .collect()
    });
    let needs_docstring = |make: fn(String) -> Step| match &docstring {
        Some(query) => make(query.clone()),
        None => Step::Malformed(format!("`{text}` has no doc string")),
    };
    let needs_table = |make: fn(&[Vec<String>]) -> Result<Step, String>| match &table {
        Some(rows) => {
            make(rows).unwrap_or_else(|problem| Step::Malformed(format!("`{text}`: {problem}")))
        }
        None => Step::Malformed(format!("`{text}` has no table")),
    };
    match text.as_str() {
        "an empty graph" | "any graph" => Step::FreshGraph,
        "having executed:" => needs_docstring(Step::Setup),
        "executing query:" => needs_docstring(Step::Query),
        "executing control query:" => needs_docstring(Step::ControlQuery),
        "parameters are:" => needs_table(parameters_from_table),
        "the result should be empty" => Step::ExpectEmpty,
        "no side effects" => Step::ExpectSideEffects(BTreeMap::new()),
        "the side effects should be:" => needs_table(side_effects_from_table),
        _ => match result_orders(&text) {
            Some((row_order, list_order)) => match &table {
                Some(rows) => match expected_table(rows) {
                    Ok(table) => Step::ExpectRows {
                        row_order,
                        list_order,
                        table,
                    },
                    Err(problem) => Step::Malformed(format!("`{text}`: {problem}")),
                },
                None => Step::Malformed(format!("`{text}` has no table")),
            },
            None => expected_error(&text).unwrap_or(Step::Unsupported(text)),
        },
    }
}

/// The orders of a `the result should be ...:` step, `None` for any other text.
fn result_orders(text: &str) -> Option<(RowOrder, ListOrder)> {
    match text {
        "the result should be, in any order:" => Some((RowOrder::Any, ListOrder::Significant)),
        "the result should be, in order:" => Some((RowOrder::Exact, ListOrder::Significant)),
        "the result should be (ignoring element order for lists):"
        | "the result should be, ignoring element order for lists:"
        | "the result should be, in any order (ignoring element order for lists):" => {
            Some((RowOrder::Any, ListOrder::Ignored))
        }
        "the result should be, in order (ignoring element order for lists):" => {
            Some((RowOrder::Exact, ListOrder::Ignored))
        }
        _ => None,
    }
}

/// Reads `a <class> should be raised at <phase>: <detail>`.
fn expected_error(text: &str) -> Option<Step> {
    let rest = text
        .strip_prefix("a ")
        .or_else(|| text.strip_prefix("an "))?;
    let (class, rest) = rest.split_once(" should be raised ")?;
    let (phase_text, detail) = rest.split_once(':')?;
    let phase = match phase_text {
        "at compile time" => ExpectedPhase::Compile,
        "at runtime" => ExpectedPhase::Runtime,
        "at any time" | "any time" => ExpectedPhase::AnyTime,
        _ => return None,
    };
    Some(Step::ExpectError {
        class: class.to_string(),
        phase,
        detail: detail.trim().to_string(),
    })
}

/// Reads `| name | value |` rows into parameters.
fn parameters_from_table(rows: &[Vec<String>]) -> Result<Step, String> {
    let mut parameters = BTreeMap::new();
    for row in rows {
        let [name, value] = row.as_slice() else {
            return Err(format!("a parameter row has {} cells, not 2", row.len()));
        };
        parameters.insert(name.clone(), parse_tck_value(value)?);
    }
    Ok(Step::Parameters(parameters))
}

/// Reads `| +nodes | 1 |` rows, rejecting unknown counter names.
fn side_effects_from_table(rows: &[Vec<String>]) -> Result<Step, String> {
    let mut counts = BTreeMap::new();
    for row in rows {
        let [name, count] = row.as_slice() else {
            return Err(format!("a side-effect row has {} cells, not 2", row.len()));
        };
        if !SIDE_EFFECT_NAMES.contains(&name.as_str()) {
            return Err(format!("unknown side effect `{name}`"));
        }
        let count = count
            .parse::<u64>()
            .map_err(|_| format!("side effect `{name}` has count `{count}`"))?;
        counts.insert(name.clone(), count);
    }
    Ok(Step::ExpectSideEffects(counts))
}

/// Reads a result table: the header row names the columns, every other row is values.
fn expected_table(rows: &[Vec<String>]) -> Result<ExpectedTable, String> {
    let (header, body) = rows.split_first().ok_or("the table has no header row")?;
    let mut expected_rows = Vec::new();
    for row in body {
        if row.len() != header.len() {
            return Err(format!(
                "a row has {} cells for {} columns",
                row.len(),
                header.len()
            ));
        }
        let values = row
            .iter()
            .map(|cell| parse_tck_value(cell))
            .collect::<Result<_, _>>()?;
        expected_rows.push(values);
    }
    Ok(ExpectedTable {
        columns: header.clone(),
        rows: expected_rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTLINE_FEATURE: &str = r#"Feature: Sample

  Background:
    Given an empty graph

  Scenario: [1] Plain
    And having executed:
      """
      CREATE (:A {name: 'x'})
      """
    And parameters are:
      | p | [1, 'two'] |
    When executing query:
      """
      MATCH (n) RETURN n
      """
    Then the result should be, in order:
      | n                  |
      | (:A {name: 'x'})   |
      | '\'' |
    And the side effects should be:
      | +nodes | 1 |

  Scenario Outline: [2] Outline <label>
    When executing query:
      """
      RETURN <expr> AS v
      """
    Then the result should be (ignoring element order for lists):
      | v        |
      | <result> |
    And no side effects

    Examples:
      | label | expr | result |
      | one   | 1    | 1      |
      | two   | [2]  | [2]    |

    Examples:
      | label | expr | result |
      | three | 3.0  | 3.0    |

  Scenario: [3] Errors and unknown steps
    And there exists a procedure test.doNothing() :: ():
      | a |
    When executing query:
      """
      RETURN x
      """
    Then a SyntaxError should be raised at compile time: UndefinedVariable
"#;

    fn sample_cases() -> Vec<ScenarioCase> {
        parse_feature_text("clauses/sample/Sample1.feature", OUTLINE_FEATURE).expect("parses")
    }

    #[test]
    fn outlines_expand_to_one_case_per_example_row_across_tables() {
        let cases = sample_cases();
        let names: Vec<&str> = cases.iter().map(|case| case.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "[1] Plain",
                "[2] Outline one",
                "[2] Outline two",
                "[2] Outline three",
                "[3] Errors and unknown steps"
            ]
        );
        let numbers: Vec<Option<usize>> = cases.iter().map(|case| case.example_number).collect();
        assert_eq!(numbers, [None, Some(1), Some(2), Some(3), None]);
        assert_eq!(cases[3].outline_name, "[2] Outline <label>");
        assert_eq!(cases[3].steps[1], Step::Query("RETURN 3.0 AS v".into()));
        let Step::ExpectRows {
            row_order,
            list_order,
            table,
        } = &cases[2].steps[2]
        else {
            panic!("not a table: {:?}", cases[2].steps[2])
        };
        assert_eq!(
            (*row_order, *list_order),
            (RowOrder::Any, ListOrder::Ignored)
        );
        assert_eq!(table.rows, [[TckValue::List(vec![TckValue::Integer(2)])]]);
    }

    #[test]
    fn background_steps_come_first_and_tables_are_read() {
        let cases = sample_cases();
        let plain = &cases[0];
        assert_eq!(plain.folder(), "clauses/sample");
        assert_eq!(plain.steps[0], Step::FreshGraph);
        assert_eq!(
            plain.steps[1],
            Step::Setup("CREATE (:A {name: 'x'})".into())
        );
        let Step::Parameters(parameters) = &plain.steps[2] else {
            panic!("no parameters")
        };
        assert_eq!(
            parameters["p"],
            TckValue::List(vec![TckValue::Integer(1), TckValue::String("two".into())])
        );
        let Step::ExpectRows {
            row_order, table, ..
        } = &plain.steps[4]
        else {
            panic!("no rows")
        };
        assert_eq!(*row_order, RowOrder::Exact);
        assert_eq!(table.columns, ["n"]);
        // `'\''` in a cell survives the gherkin parse as a quote.
        assert_eq!(table.rows[1], [TckValue::String("'".into())]);
        assert_eq!(
            plain.steps[5],
            Step::ExpectSideEffects(BTreeMap::from([("+nodes".to_string(), 1)]))
        );
        assert_eq!(plain.automatic_skip_reason(), None);
    }

    #[test]
    fn unknown_steps_make_an_automatic_skip_reason_and_errors_are_read() {
        let cases = sample_cases();
        let last = &cases[4];
        assert_eq!(
            last.automatic_skip_reason().as_deref(),
            Some("unsupported step `there exists a procedure test.doNothing() :: ():`")
        );
        assert_eq!(
            last.steps[3],
            Step::ExpectError {
                class: "SyntaxError".into(),
                phase: ExpectedPhase::Compile,
                detail: "UndefinedVariable".into(),
            }
        );
    }

    #[test]
    fn unreadable_values_mark_the_step_malformed() {
        let text = "Feature: F\n\n  Scenario: [1] S\n    Given any graph\n    Then the result should be, in order:\n      | a |\n      | [1, |\n";
        let cases = parse_feature_text("expressions/x/X.feature", text).expect("parses");
        let reason = cases[0].automatic_skip_reason().expect("a reason");
        assert!(reason.starts_with("runner cannot read a step"), "{reason}");
    }

    #[test]
    fn error_steps_accept_every_phase() {
        let phases: Vec<Option<Step>> = [
            "a TypeError should be raised at runtime: InvalidArgumentType",
            "a TypeError should be raised at any time: X",
            "a SyntaxError should be raised at compile time: Y",
            "a TypeError should be raised at lunchtime: Z",
        ]
        .iter()
        .map(|text| expected_error(text))
        .collect();
        let kinds: Vec<Option<ExpectedPhase>> = phases
            .iter()
            .map(|step| match step {
                Some(Step::ExpectError { phase, .. }) => Some(*phase),
                _ => None,
            })
            .collect();
        assert_eq!(
            kinds,
            [
                Some(ExpectedPhase::Runtime),
                Some(ExpectedPhase::AnyTime),
                Some(ExpectedPhase::Compile),
                None
            ]
        );
    }

    #[test]
    fn lone_backslashes_on_table_lines_are_doubled_only_there() {
        let text = "  \"\"\"\n  RETURN '\\''\n  | '\\'' | a\\|b | c\\\\d | e\\nf |\n";
        assert_eq!(
            escape_lone_backslashes_in_tables(text),
            "  \"\"\"\n  RETURN '\\''\n  | '\\\\'' | a\\|b | c\\\\d | e\\nf |\n"
        );
    }

    #[test]
    fn feature_paths_are_relative_and_sorted() {
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(root.path().join("clauses/b")).expect("mkdir");
        std::fs::create_dir_all(root.path().join("clauses/a")).expect("mkdir");
        std::fs::write(root.path().join("clauses/b/B1.feature"), "").expect("write");
        std::fs::write(root.path().join("clauses/a/A1.feature"), "").expect("write");
        std::fs::write(root.path().join("clauses/a/notes.md"), "").expect("write");
        assert_eq!(
            feature_files(root.path()).expect("lists"),
            ["clauses/a/A1.feature", "clauses/b/B1.feature"]
        );
    }
}
