//! The floor file `engine/tests/tck/floor.txt`: per report folder, the number of passing
//! scenarios recorded in the repository. The TCK test fails when a folder passes fewer, and
//! says so when one passes more, so a gain is recorded on purpose (`BATHO_TCK_UPDATE=1`
//! rewrites the file with the current counts).

use std::collections::BTreeMap;

/// Parsed floors: folder to pass count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Floors {
    /// Floors by folder (`clauses/match`).
    pub by_folder: BTreeMap<String, usize>,
}

/// What comparing the current pass counts with the floors found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FloorCheck {
    /// Folders below their floor, or floors for folders that no longer run: the test fails.
    pub regressions: Vec<String>,
    /// Folders above their floor, or without one: a hint to raise it.
    pub raises: Vec<String>,
}

impl Floors {
    /// Parses `folder count` lines; `#` starts a comment.
    pub fn parse(text: &str) -> Result<Floors, String> {
        let mut by_folder = BTreeMap::new();
        for (index, raw_line) in text.lines().enumerate() {
            let line = raw_line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let problem = || {
                format!(
                    "floor.txt line {}: expected `<folder> <passes>`: `{raw_line}`",
                    index + 1
                )
            };
            let (folder, count) = line.split_once(char::is_whitespace).ok_or_else(problem)?;
            let count = count.trim().parse::<usize>().map_err(|_| problem())?;
            if by_folder.insert(folder.to_string(), count).is_some() {
                return Err(format!(
                    "floor.txt line {}: `{folder}` appears twice",
                    index + 1
                ));
            }
        }
        Ok(Floors { by_folder })
    }

    /// Compares the current pass counts per folder with the floors.
    pub fn check(&self, passes: &BTreeMap<String, usize>) -> FloorCheck {
        let mut check = FloorCheck::default();
        for (folder, current) in passes {
            match self.by_folder.get(folder) {
                Some(floor) if current < floor => check.regressions.push(format!(
                    "{folder}: {current} passed, below its floor of {floor}"
                )),
                Some(floor) if current > floor => check.raises.push(format!(
                    "{folder}: {current} passed, above its floor of {floor}"
                )),
                Some(_) => {}
                None => check.raises.push(format!(
                    "{folder}: {current} passed and it has no floor yet"
                )),
            }
        }
        for folder in self
            .by_folder
            .keys()
            .filter(|folder| !passes.contains_key(*folder))
        {
            check.regressions.push(format!(
                "{folder}: has a floor but did not run (remove its line)"
            ));
        }
        check
    }
}

/// The text of a floor file recording `passes`.
pub fn render_floors(passes: &BTreeMap<String, usize>) -> String {
    let mut text = String::from(
        "# Passing openCypher TCK scenarios per folder: engine/tests/tck.rs fails when a folder\n\
         # passes fewer. Rewrite with BATHO_TCK_UPDATE=1 cargo test -p batho-engine --test tck\n",
    );
    let width = passes.keys().map(String::len).max().unwrap_or(0);
    for (folder, count) in passes {
        text.push_str(&format!("{folder:width$} {count}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(entries: &[(&str, usize)]) -> BTreeMap<String, usize> {
        entries
            .iter()
            .map(|(folder, count)| (folder.to_string(), *count))
            .collect()
    }

    #[test]
    fn falling_below_a_floor_is_a_regression_and_rising_is_a_hint() {
        let floors = Floors::parse(
            "# header\nclauses/match 10\nclauses/set   5  # trailing\nclauses/gone 1\n",
        )
        .expect("parses");
        let check = floors.check(&counts(&[
            ("clauses/match", 9),
            ("clauses/set", 7),
            ("expressions/list", 3),
        ]));
        assert_eq!(
            check.regressions,
            [
                "clauses/match: 9 passed, below its floor of 10",
                "clauses/gone: has a floor but did not run (remove its line)"
            ]
        );
        assert_eq!(
            check.raises,
            [
                "clauses/set: 7 passed, above its floor of 5",
                "expressions/list: 3 passed and it has no floor yet"
            ]
        );
        assert_eq!(
            floors.check(&counts(&[
                ("clauses/match", 10),
                ("clauses/set", 5),
                ("clauses/gone", 1)
            ])),
            FloorCheck::default()
        );
    }

    #[test]
    fn rendered_floors_read_back() {
        let passes = counts(&[("clauses/match", 12), ("expressions/aggregation", 0)]);
        let text = render_floors(&passes);
        assert_eq!(Floors::parse(&text).expect("parses").by_folder, passes);
        assert!(text.contains("clauses/match           12\n"), "{text}");
    }

    #[test]
    fn malformed_lines_are_rejected() {
        for bad in ["clauses/match", "clauses/match many", "a 1\na 2"] {
            assert!(Floors::parse(bad).is_err(), "`{bad}` was accepted");
        }
    }
}
