//! The skip list `engine/tests/tck/skip.txt`: scenarios (or whole feature files) the runner
//! does not attempt, each with a reason.
//!
//! One entry a line: `<feature path relative to features/> :: <scenario name or *>  # reason`.
//! Blank lines and lines starting with `#` are comments. The scenario name is the title as
//! written in the feature file; for an outline it may be the title with placeholders (all
//! rows) or one expanded row's title. An entry that matches no scenario is an error, so the
//! list cannot silently go stale when the TCK or the runner changes.

use crate::features::ScenarioCase;

/// One line of the skip list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkipEntry {
    /// The feature file, relative to the features folder.
    pub feature_path: String,
    /// A scenario title, or `None` for every scenario of the file (`*`).
    pub scenario_name: Option<String>,
    /// Why it is skipped.
    pub reason: String,
    /// Line in the skip list, for messages.
    pub line: usize,
}

/// The parsed skip list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkipList {
    /// Entries in file order.
    pub entries: Vec<SkipEntry>,
}

impl SkipList {
    /// Parses the text of a skip list.
    pub fn parse(text: &str) -> Result<SkipList, String> {
        let mut entries = Vec::new();
        for (index, raw_line) in text.lines().enumerate() {
            let line = raw_line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            entries.push(parse_entry(line, index + 1)?);
        }
        Ok(SkipList { entries })
    }

    /// The entry that covers `case`, if any.
    pub fn entry_for(&self, case: &ScenarioCase) -> Option<&SkipEntry> {
        self.entries.iter().find(|entry| entry_covers(entry, case))
    }

    /// Problems with entries: those that match no scenario in `cases`.
    pub fn stale_entries(&self, cases: &[ScenarioCase]) -> Vec<String> {
        self.entries
            .iter()
            .filter(|entry| !cases.iter().any(|case| entry_covers(entry, case)))
            .map(|entry| {
                format!(
                    "skip.txt line {}: `{} :: {}` matches no scenario that runs",
                    entry.line,
                    entry.feature_path,
                    entry.scenario_name.as_deref().unwrap_or("*")
                )
            })
            .collect()
    }
}

/// Splits `path :: scenario # reason`. The reason starts at the first ` # ` after the
/// `::`, because scenario titles contain `#` (`... #Example: <name>`) but never ` # `.
fn parse_entry(line: &str, line_number: usize) -> Result<SkipEntry, String> {
    let problem = |what: &str| format!("skip.txt line {line_number}: {what}: `{line}`");
    let (feature_path, rest) = line
        .split_once(" :: ")
        .ok_or_else(|| problem("expected `<feature path> :: <scenario or *>  # reason`"))?;
    let (scenario, reason) = rest
        .split_once(" # ")
        .ok_or_else(|| problem("every entry needs a `# reason`"))?;
    let (scenario, reason) = (scenario.trim(), reason.trim());
    if reason.is_empty() {
        return Err(problem("the reason is empty"));
    }
    if !feature_path.trim().ends_with(".feature") {
        return Err(problem("the path must name a .feature file"));
    }
    Ok(SkipEntry {
        feature_path: feature_path.trim().to_string(),
        scenario_name: (scenario != "*").then(|| scenario.to_string()),
        reason: reason.to_string(),
        line: line_number,
    })
}

/// Whether an entry names the case's file and either `*`, its outline title or its row title.
fn entry_covers(entry: &SkipEntry, case: &ScenarioCase) -> bool {
    entry.feature_path == case.feature_path
        && entry
            .scenario_name
            .as_ref()
            .is_none_or(|name| *name == case.outline_name || *name == case.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(feature_path: &str, outline_name: &str, name: &str) -> ScenarioCase {
        ScenarioCase {
            feature_path: feature_path.into(),
            outline_name: outline_name.into(),
            name: name.into(),
            example_number: None,
            line: 1,
            steps: vec![],
        }
    }

    const LIST: &str = "# comment

clauses/a/A1.feature :: *  # whole file
clauses/a/A2.feature :: [2] Fail #Example: <name>  # every row
clauses/a/A2.feature :: [3] Title #Example: int  # one row
";

    #[test]
    fn entries_cover_files_outlines_and_single_rows() {
        let list = SkipList::parse(LIST).expect("parses");
        assert_eq!(list.entries.len(), 3);
        assert_eq!(
            list.entries[1].scenario_name.as_deref(),
            Some("[2] Fail #Example: <name>")
        );
        assert_eq!(list.entries[1].reason, "every row");
        assert_eq!(list.entries[0].line, 3);
        let whole = case("clauses/a/A1.feature", "[9] Any", "[9] Any");
        assert_eq!(
            list.entry_for(&whole).map(|entry| entry.reason.as_str()),
            Some("whole file")
        );
        let row = case(
            "clauses/a/A2.feature",
            "[2] Fail #Example: <name>",
            "[2] Fail #Example: x",
        );
        assert_eq!(
            list.entry_for(&row).map(|entry| entry.reason.as_str()),
            Some("every row")
        );
        let chosen = case(
            "clauses/a/A2.feature",
            "[3] Title #Example: <t>",
            "[3] Title #Example: int",
        );
        assert!(list.entry_for(&chosen).is_some());
        let other_row = case(
            "clauses/a/A2.feature",
            "[3] Title #Example: <t>",
            "[3] Title #Example: float",
        );
        assert!(list.entry_for(&other_row).is_none());
    }

    #[test]
    fn entries_matching_nothing_are_reported() {
        let list = SkipList::parse(LIST).expect("parses");
        let cases = [
            case("clauses/a/A1.feature", "[1] X", "[1] X"),
            case(
                "clauses/a/A2.feature",
                "[2] Fail #Example: <name>",
                "[2] Fail #Example: a",
            ),
        ];
        assert_eq!(
            list.stale_entries(&cases),
            [
                "skip.txt line 5: `clauses/a/A2.feature :: [3] Title #Example: int` matches no scenario that runs"
            ]
        );
    }

    #[test]
    fn entries_without_reason_or_separator_are_rejected() {
        for bad in [
            "clauses/a/A1.feature :: *",
            "clauses/a/A1.feature :: *  # ",
            "clauses/a/A1.feature *  # reason",
            "clauses/a :: *  # reason",
        ] {
            assert!(SkipList::parse(bad).is_err(), "`{bad}` was accepted");
        }
    }
}
