//! Tab completion for the REPL: keywords, labels (node kinds), relationship types,
//! property names, procedures, functions, parameters and `:` commands, chosen by what
//! precedes the word under the cursor.

use batho_lang::Schema;
use batho_lang::functions::FUNCTIONS;

/// BQL keywords offered for completion and highlighted: the parser's own list.
pub use batho_lang::parse::{KEYWORDS, STATEMENT_PREFIX_WORDS};

/// The REPL's `:` commands.
pub const COMMANDS: &[&str] = &[
    ":help", ":schema", ":explain", ":profile", ":format", ":param", ":params", ":timing", ":open",
    ":quit",
];

/// Whether `word` is a keyword (any case).
pub fn is_keyword(word: &str) -> bool {
    KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word))
}

/// Everything completion can offer, taken from the schema and the function table.
#[derive(Clone, Debug)]
pub struct Vocabulary {
    labels: Vec<String>,
    rel_types: Vec<String>,
    properties: Vec<String>,
    procedures: Vec<String>,
    functions: Vec<String>,
}

impl Vocabulary {
    /// The vocabulary of `schema`.
    pub fn new(schema: &Schema) -> Self {
        let mut properties: Vec<String> = schema
            .node_properties()
            .chain(schema.rel_properties())
            .map(str::to_string)
            .collect();
        properties.sort();
        properties.dedup();
        Vocabulary {
            labels: schema.labels().map(str::to_string).collect(),
            rel_types: schema.rel_types().map(str::to_string).collect(),
            properties,
            procedures: schema.procedures().map(|p| p.name.clone()).collect(),
            functions: FUNCTIONS.iter().map(|f| f.name.to_string()).collect(),
        }
    }

    /// Whether `word` is a label or relationship type (for highlighting).
    pub fn is_label(&self, word: &str) -> bool {
        self.labels.iter().chain(&self.rel_types).any(|l| l == word)
    }

    /// The start of the word being completed at `pos` and the candidates for it;
    /// `params` are the parameter names currently set.
    pub fn complete(&self, line: &str, pos: usize, params: &[String]) -> (usize, Vec<String>) {
        let pos = floor_boundary(line, pos.min(line.len()));
        let before = &line[..pos];
        let start = before
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_alphanumeric() || *c == '_' || *c == '.')
            .last()
            .map_or(pos, |(i, _)| i);
        let word = &before[start..];
        let prev = before[..start].chars().next_back();
        let trimmed = before.trim_start();
        // A `:` command at the start of the input.
        if prev == Some(':') && trimmed.len() == word.len() + 1 {
            return (
                start - 1,
                filter(COMMANDS.iter().copied(), &format!(":{word}"), true),
            );
        }
        let pool: Vec<&str> = match prev {
            Some('$') => params.iter().map(String::as_str).collect(),
            Some(':') if in_brackets(&before[..start - 1]) => {
                self.rel_types.iter().map(String::as_str).collect()
            }
            Some(':') => self.labels.iter().map(String::as_str).collect(),
            _ if word.contains('.') => {
                let (head, _) = word.rsplit_once('.').unwrap_or((word, ""));
                if self
                    .procedures
                    .iter()
                    .any(|p| p.starts_with(&format!("{head}.")))
                {
                    self.procedures.iter().map(String::as_str).collect()
                } else {
                    // `n.na<TAB>`: complete the property after the dot.
                    let dot = start + head.len() + 1;
                    let prop = &before[dot..];
                    return (
                        dot,
                        filter(self.properties.iter().map(String::as_str), prop, false),
                    );
                }
            }
            _ if last_word(&before[..start]).eq_ignore_ascii_case("CALL") => {
                self.procedures.iter().map(String::as_str).collect()
            }
            _ => KEYWORDS
                .iter()
                .chain(STATEMENT_PREFIX_WORDS)
                .copied()
                .chain(self.functions.iter().map(String::as_str))
                .chain(self.procedures.iter().map(String::as_str))
                .collect(),
        };
        (start, filter(pool.into_iter(), word, word.is_empty()))
    }
}

/// Candidates starting with `prefix` (case-insensitively), in order, without duplicates;
/// an empty prefix offers all only when `allow_all`.
fn filter<'a>(pool: impl Iterator<Item = &'a str>, prefix: &str, allow_all: bool) -> Vec<String> {
    if prefix.is_empty() && !allow_all {
        return Vec::new();
    }
    let lower = prefix.to_lowercase();
    let mut out: Vec<String> = pool
        .filter(|c| c.to_lowercase().starts_with(&lower))
        .map(str::to_string)
        .collect();
    out.dedup();
    out
}

/// Whether the text ends inside an open `[` (a relationship pattern) rather than a `(`.
fn in_brackets(text: &str) -> bool {
    for c in text.chars().rev() {
        match c {
            '[' => return true,
            '(' | ')' | ']' => return false,
            _ => {}
        }
    }
    false
}

fn last_word(text: &str) -> &str {
    text.split_whitespace().last().unwrap_or("")
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(line: &str) -> (usize, Vec<String>) {
        Vocabulary::new(&Schema::code_graph()).complete(line, line.len(), &["name".into()])
    }

    #[test]
    fn keywords_functions_and_procedures_by_prefix() {
        let (start, c) = complete("MATCH (n) RET");
        assert_eq!(start, 10);
        assert_eq!(c, vec!["RETURN"]);
        let (_, c) = complete("match (n) return cou");
        assert_eq!(c, vec!["count"]);
        let (start, c) = complete("CALL db.sch");
        assert_eq!((start, c), (5, vec!["db.schema".to_string()]));
        let (_, c) = complete("CALL ");
        assert!(
            c.contains(&"db.labels".to_string()) && !c.contains(&"MATCH".to_string()),
            "{c:?}"
        );
    }

    #[test]
    fn labels_in_nodes_and_types_in_relationships() {
        let (start, c) = complete("MATCH (f:Fun");
        assert_eq!((start, c), (9, vec!["Function".to_string()]));
        let (_, c) = complete("MATCH (a)-[:CA");
        assert_eq!(c, vec!["CALLS"]);
        let (_, c) = complete("MATCH (a)-[:");
        assert!(c.contains(&"INCLUDES".to_string()) && !c.contains(&"Function".to_string()));
        let (_, c) = complete("MATCH (a:");
        assert!(c.contains(&"Method".to_string()) && !c.contains(&"CALLS".to_string()));
    }

    #[test]
    fn properties_params_and_commands() {
        let (start, c) = complete("MATCH (n) RETURN n.na");
        assert_eq!(start, 19);
        assert!(c.contains(&"name".to_string()), "{c:?}");
        assert!(c.iter().all(|p| p.starts_with("na")));
        let (start, c) = complete("RETURN $na");
        assert_eq!((start, c), (8, vec!["name".to_string()]));
        let (start, c) = complete(":fo");
        assert_eq!((start, c), (0, vec![":format".to_string()]));
        let (_, c) = complete(":p");
        assert_eq!(c, vec![":profile", ":param", ":params"]);
    }

    #[test]
    fn time_travel_words_are_completed_but_stay_usable_as_names() {
        let (_, c) = complete("AT GENERATION 2 MATCH (n) RETURN n; a");
        assert!(c.iter().any(|w| w == "AT"), "{c:?}");
        let (_, c) = complete("AT GEN");
        assert_eq!(c, vec!["GENERATION"]);
        assert!(batho_lang::parse("MATCH (run) RETURN run.name AS generation").is_ok());
    }

    #[test]
    fn keywords_are_known_to_the_parser() {
        // A keyword used as a bare variable fails to parse; a made-up word does not.
        assert!(batho_lang::parse("RETURN 1 AS notakeyword").is_ok());
        for k in [
            "MATCH", "RETURN", "WHERE", "LIMIT", "OPTIONAL", "UNWIND", "YIELD",
        ] {
            assert!(KEYWORDS.contains(&k));
            assert!(
                batho_lang::parse(&format!("RETURN 1 AS {k}")).is_err(),
                "{k}"
            );
        }
    }
}
