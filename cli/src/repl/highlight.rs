//! Syntax colouring of the line being edited: keywords, strings, numbers, labels and
//! relationship types, parameters and comments, with ANSI escapes.

use super::complete::{Vocabulary, is_keyword};
use super::script::{Tok, lex};

const KEYWORD: &str = "\x1b[1;34m";
const STRING: &str = "\x1b[32m";
const NUMBER: &str = "\x1b[33m";
const LABEL: &str = "\x1b[36m";
const PARAM: &str = "\x1b[35m";
const COMMENT: &str = "\x1b[90m";
const COMMAND: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// `line` with ANSI colours; the visible text is unchanged.
pub fn highlight(line: &str, vocab: &Vocabulary) -> String {
    if line.trim_start().starts_with(':') {
        // A `:` command: embolden the command word, colour the query after it.
        let lead = line.len() - line.trim_start().len();
        let end = line[lead..]
            .find(char::is_whitespace)
            .map_or(line.len(), |i| lead + i);
        let rest = highlight_query(&line[end..], vocab);
        return format!(
            "{}{COMMAND}{}{RESET}{rest}",
            &line[..lead],
            &line[lead..end]
        );
    }
    highlight_query(line, vocab)
}

fn highlight_query(line: &str, vocab: &Vocabulary) -> String {
    let mut out = String::with_capacity(line.len() * 2);
    let mut after_colon = false;
    for (tok, range) in lex(line) {
        let text = &line[range];
        let colour = match tok {
            Tok::Word if after_colon && vocab.is_label(text) => Some(LABEL),
            Tok::Word if is_keyword(text) => Some(KEYWORD),
            Tok::Str => Some(STRING),
            Tok::Number => Some(NUMBER),
            Tok::Param => Some(PARAM),
            Tok::Comment => Some(COMMENT),
            _ => None,
        };
        match colour {
            Some(c) => {
                out.push_str(c);
                out.push_str(text);
                out.push_str(RESET);
            }
            None => out.push_str(text),
        }
        if tok != Tok::Space {
            // `(n:Label)`, `[:TYPE|OTHER]` and `:A:B` all put a label right after `:`/`|`.
            after_colon = tok == Tok::Punct && (text == ":" || text == "|");
        }
    }
    out
}

/// Drops ANSI escapes (for tests and for checking the visible text).
#[cfg(test)]
fn strip(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use batho_lang::Schema;

    fn hl(s: &str) -> String {
        highlight(s, &Vocabulary::new(&Schema::code_graph()))
    }

    #[test]
    fn colours_each_class_and_keeps_the_text() {
        let line =
            "MATCH (f:Function)-[:CALLS]->(g {name: 'x;y'}) WHERE f.line > 10 AND g.id = $id // c";
        let out = hl(line);
        assert_eq!(strip(&out), line);
        assert!(
            out.starts_with(&format!("{KEYWORD}MATCH{RESET}")),
            "{out:?}"
        );
        assert!(out.contains(&format!("{LABEL}Function{RESET}")), "{out:?}");
        assert!(out.contains(&format!("{LABEL}CALLS{RESET}")), "{out:?}");
        assert!(out.contains(&format!("{STRING}'x;y'{RESET}")), "{out:?}");
        assert!(out.contains(&format!("{NUMBER}10{RESET}")), "{out:?}");
        assert!(out.contains(&format!("{KEYWORD}AND{RESET}")), "{out:?}");
        assert!(out.contains(&format!("{PARAM}$id{RESET}")), "{out:?}");
        assert!(out.ends_with(&format!("{COMMENT}// c{RESET}")), "{out:?}");
        // A property called like a keyword-free word stays plain.
        assert!(out.contains("f.line"), "{out:?}");
    }

    #[test]
    fn commands_and_unknown_words() {
        let out = hl(":explain match (n) return n");
        assert_eq!(strip(&out), ":explain match (n) return n");
        assert!(out.starts_with(&format!("{COMMAND}:explain{RESET}")));
        assert!(out.contains(&format!("{KEYWORD}match{RESET}")));
        // `n:Nope` is not a known label: no label colour.
        assert!(!hl("(n:Nope)").contains(LABEL));
        assert_eq!(hl("plain"), "plain");
    }
}
