//! The keyword query language of writable graphs' text search, FTS5's basic syntax:
//! words are ANDed, `"an exact phrase"` matches consecutive words, `pars*` matches every
//! term starting with `pars`. Words are cut and folded as documents are
//! ([`super::words`]); a bare identifier with several parts (`sqlite_error`) asks for the
//! whole identifier, which documents index beside its parts.

use super::words::{WordRole, fold_into, for_each_word, word_parts};

/// The longest query accepted, in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;

/// One condition of a query; a document must meet them all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueryClause {
    /// The document holds this term.
    Term(String),
    /// The document holds a term starting with this.
    Prefix(String),
    /// The document holds these parts one after another.
    Phrase(Vec<String>),
}

/// A parsed query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextQuery {
    /// The conditions, in the order written, without duplicates.
    pub clauses: Vec<QueryClause>,
}

/// Why a query cannot run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TextQueryError {
    /// Nothing searchable was given.
    #[error("the query has no words to search for (letters or digits)")]
    Empty,
    /// The query is too long.
    #[error("the query is {0} bytes; at most {MAX_QUERY_BYTES} are accepted")]
    TooLong(usize),
}

/// Parses `text`. An unterminated quote runs to the end of the query.
pub fn parse_text_query(text: &str) -> Result<TextQuery, TextQueryError> {
    if text.len() > MAX_QUERY_BYTES {
        return Err(TextQueryError::TooLong(text.len()));
    }
    let mut clauses = Vec::new();
    for (index, segment) in text.split('"').enumerate() {
        if index % 2 == 1 {
            add_phrase(segment, &mut clauses);
        } else {
            for word in segment.split_whitespace() {
                add_bare_word(word, &mut clauses);
            }
        }
    }
    let mut unique: Vec<QueryClause> = Vec::with_capacity(clauses.len());
    for clause in clauses {
        if !unique.contains(&clause) {
            unique.push(clause);
        }
    }
    if unique.is_empty() {
        return Err(TextQueryError::Empty);
    }
    Ok(TextQuery { clauses: unique })
}

fn add_phrase(segment: &str, clauses: &mut Vec<QueryClause>) {
    let parts = word_parts(segment);
    match parts.len() {
        0 => {}
        1 => clauses.extend(parts.into_iter().map(QueryClause::Term)),
        _ => clauses.push(QueryClause::Phrase(parts)),
    }
}

/// A whitespace-separated word outside quotes: `pre*` is a prefix; otherwise each
/// identifier run in it is one term (the whole identifier), and runs separated by
/// punctuation (`file.rs`) form a phrase, as FTS5 reads them.
fn add_bare_word(word: &str, clauses: &mut Vec<QueryClause>) {
    if let Some(stem) = word.strip_suffix('*') {
        let mut folded = String::new();
        fold_into(
            stem.trim_matches(|c: char| !c.is_alphanumeric()),
            &mut folded,
        );
        if !folded.is_empty() && folded.chars().all(|c| c.is_alphanumeric() || c == '_') {
            clauses.push(QueryClause::Prefix(folded));
            return;
        }
    }
    let mut runs: Vec<String> = Vec::new();
    let mut parts_of_run: Vec<String> = Vec::new();
    for_each_word(word, |term, role| match role {
        WordRole::Part => parts_of_run.push(term.to_string()),
        // A piece is searched through its identifier, which documents hold too.
        WordRole::Piece => {}
        WordRole::Identifier => {
            // The whole identifier closes its run: it replaces the parts.
            parts_of_run.clear();
            runs.push(term.to_string());
        }
    });
    runs.append(&mut parts_of_run);
    match runs.len() {
        0 => {}
        1 => clauses.extend(runs.into_iter().map(QueryClause::Term)),
        _ if word.contains(|c: char| !c.is_alphanumeric() && c != '_') => {
            clauses.push(QueryClause::Phrase(word_parts(word)))
        }
        _ => clauses.extend(runs.into_iter().map(QueryClause::Term)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clauses(text: &str) -> Vec<QueryClause> {
        parse_text_query(text).unwrap().clauses
    }

    #[test]
    fn words_phrases_and_prefixes() {
        use QueryClause::*;
        assert_eq!(
            clauses("Parser \"exact  Phrase\" pars* parser"),
            [
                Term("parser".into()),
                Phrase(vec!["exact".into(), "phrase".into()]),
                Prefix("pars".into())
            ]
        );
        assert_eq!(clauses("sqlite_error"), [Term("sqlite_error".into())]);
        assert_eq!(
            clauses("file.rs"),
            [Phrase(vec!["file".into(), "rs".into()])]
        );
        assert_eq!(
            clauses("\"unterminated quote"),
            clauses("\"unterminated quote\"")
        );
        assert_eq!(clauses("\"one\""), [Term("one".into())]);
    }

    #[test]
    fn empty_and_oversized_queries_are_refused() {
        assert_eq!(parse_text_query("  \"\" * ,"), Err(TextQueryError::Empty));
        let long = "a ".repeat(MAX_QUERY_BYTES);
        assert!(matches!(
            parse_text_query(&long),
            Err(TextQueryError::TooLong(_))
        ));
    }
}
