//! What `batho query` and `batho-ql` share: a small BQL lexer that knows strings and
//! comments (so a `;` inside them never ends a statement), statement splitting,
//! `name=value` parameters, and printing results and errors.
//!
//! Statements are run one at a time rather than handed to the engine as one text so each
//! result is printed and a failing statement does not hide the results of the others.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use batho_engine::query::render::Format;
use batho_engine::query::{Bound, OpenGraph, QueryError, QueryResult, Value};
use batho_lang::PropertyAccess;

/// A lexical class, enough for splitting and highlighting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tok {
    /// Spaces, tabs, newlines.
    Space,
    /// `// ...` or `/* ... */` (possibly unterminated).
    Comment,
    /// `'...'` or `"..."` (possibly unterminated).
    Str,
    /// `` `...` `` quoted identifier.
    Quoted,
    /// A number literal.
    Number,
    /// A bare word: keyword, identifier, function name.
    Word,
    /// `$name`.
    Param,
    /// `;`.
    Semi,
    /// Any other character.
    Punct,
}

/// Splits `text` into `(class, byte range)` tokens covering all of it.
pub fn lex(text: &str) -> Vec<(Tok, std::ops::Range<usize>)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let c = b[i];
        let tok = if c.is_ascii_whitespace() {
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            Tok::Space
        } else if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(b.len(), |n| i + n);
            Tok::Comment
        } else if text[i..].starts_with("/*") {
            i = text[i + 2..].find("*/").map_or(b.len(), |n| i + 2 + n + 2);
            Tok::Comment
        } else if c == b'\'' || c == b'"' {
            i += 1;
            while i < b.len() && b[i] != c {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            Tok::Str
        } else if c == b'`' {
            // A doubled backtick is an escaped one, so keep going past it.
            i += 1;
            loop {
                match b.get(i) {
                    None => break,
                    Some(b'`') if b.get(i + 1) == Some(&b'`') => i += 2,
                    Some(b'`') => {
                        i += 1;
                        break;
                    }
                    Some(_) => i += 1,
                }
            }
            Tok::Quoted
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            // A fraction, but not the `..` of a hop range.
            if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
            }
            Tok::Number
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                i += 1;
            }
            Tok::Word
        } else if c == b'$' {
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            Tok::Param
        } else if c == b';' {
            i += 1;
            Tok::Semi
        } else {
            i += 1;
            while !text.is_char_boundary(i) {
                i += 1;
            }
            Tok::Punct
        };
        // Escapes at the very end can step past the text; clamp to a char boundary.
        let mut end = i.min(b.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        i = end;
        out.push((tok, start..end));
    }
    out
}

/// One statement cut out of a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    /// The statement as written (between its `;`s), run as is: the same text gives the
    /// same plan-cache entry wherever it appears in a script.
    pub text: String,
    /// The statement alone, trimmed.
    pub body: String,
    /// The whole script, shared by its statements, so diagnostics can report lines and
    /// columns of the script rather than of the statement.
    pub script: Arc<str>,
    /// Byte offset of `text` in `script`.
    pub offset: usize,
}

impl Statement {
    /// A statement that is a whole script by itself.
    pub fn whole(text: &str) -> Statement {
        Statement {
            text: text.to_string(),
            body: text.trim().to_string(),
            script: Arc::from(text),
            offset: 0,
        }
    }
}

/// Splits a script at the `;` that are not inside strings, quoted names or comments.
/// Parts holding only spaces and comments are dropped.
pub fn split_statements(script: &str) -> Vec<Statement> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut meaningful = false;
    let shared: Arc<str> = Arc::from(script);
    let mut push = |start: usize, end: usize, meaningful: bool| {
        if meaningful {
            out.push(Statement {
                text: script[start..end].to_string(),
                body: script[start..end].trim().to_string(),
                script: Arc::clone(&shared),
                offset: start,
            });
        }
    };
    for (tok, range) in lex(script) {
        match tok {
            Tok::Semi => {
                push(start, range.start, meaningful);
                start = range.end;
                meaningful = false;
            }
            Tok::Space | Tok::Comment => {}
            _ => meaningful = true,
        }
    }
    push(start, script.len(), meaningful);
    out
}

/// Whether `buffer` ends a statement: its last token other than space and comments is a
/// `;` (a `;` in a string or comment does not count).
pub fn ends_statement(buffer: &str) -> bool {
    lex(buffer)
        .iter()
        .rev()
        .find(|(t, _)| !matches!(t, Tok::Space | Tok::Comment))
        // An unterminated string or block comment swallows any `;`, so it is never last.
        .is_some_and(|(t, _)| *t == Tok::Semi)
}

/// A value given on the command line: JSON when it parses (numbers, booleans, lists,
/// quoted strings, objects), otherwise the plain string.
pub fn parse_value(text: &str) -> Value {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(j) => batho_engine::query::value_from_json(j),
        Err(_) => Value::String(text.to_string()),
    }
}

/// Parses `name=value` (a leading `$` on the name is allowed).
pub fn parse_param(text: &str) -> Result<(String, Value), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("parameter '{text}' is not of the form name=value"))?;
    let name = name.trim().trim_start_matches('$');
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!("'{name}' is not a valid parameter name"));
    }
    Ok((name.to_string(), parse_value(value.trim())))
}

/// Parses a format name.
pub fn parse_format(name: &str) -> Option<Format> {
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "table" => Format::Table,
        "json" => Format::Json,
        "jsonl" | "json-lines" | "jsonlines" => Format::JsonLines,
        "csv" => Format::Csv,
        _ => return None,
    })
}

/// The name `parse_format` reads back.
pub fn format_name(format: Format) -> &'static str {
    match format {
        Format::Table => "table",
        Format::Json => "json",
        Format::JsonLines => "jsonl",
        Format::Csv => "csv",
    }
}

/// A query error as people read it: every diagnostic with line, column, caret and
/// suggestion, or the one-line message.
pub fn error_text(e: &QueryError) -> String {
    let diags = e.diagnostics();
    if diags.is_empty() {
        format!("error: {e}")
    } else {
        diags
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// The notice for a truncated result.
pub fn truncation_notice(bound: &Bound) -> String {
    format!("note: {bound}; raise it with --limit-rows or add a LIMIT")
}

/// Prints one result, its nodes and relationships read through `graph`: the rendered
/// rows on `out`, after the plan for EXPLAIN and PROFILE.
/// With a machine format (JSON, JSON Lines, CSV) the profiled plan and a truncation
/// notice go to `err` so that `out` stays parseable.
pub fn print_result(
    graph: &dyn PropertyAccess,
    res: &QueryResult,
    format: Format,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    let machine = format != Format::Table;
    if res.columns.is_empty() && res.plan.is_none() {
        // An update statement without RETURN (or BEGIN / COMMIT): what it changed, on
        // the error stream for machine formats so their output stays parseable.
        if !res.updates.is_empty() {
            let target: &mut dyn Write = if machine { err } else { out };
            writeln!(target, "{}", res.updates)?;
        }
        return Ok(());
    }
    match (&res.plan, &res.profile) {
        // PROFILE: the plan annotated with rows and time per operator, then the rows.
        (Some(plan), Some(_)) => {
            let target: &mut dyn Write = if machine { err } else { out };
            writeln!(target, "{}", plan.trim_end())?;
        }
        // EXPLAIN: the rows are the plan's lines; a table of them reads worse than the plan.
        (Some(plan), None) if !machine => {
            writeln!(out, "{}", plan.trim_end())?;
            return Ok(());
        }
        _ => {}
    }
    let text = batho_engine::query::render::render(res, graph, format);
    out.write_all(text.as_bytes())?;
    if !text.is_empty() && !text.ends_with('\n') {
        writeln!(out)?;
    }
    if let Some(bound) = &res.truncated {
        let target: &mut dyn Write = if machine { err } else { out };
        writeln!(target, "{}", truncation_notice(bound))?;
    }
    Ok(())
}

/// Runs `stmt` on `db`.
pub fn run_statement(
    db: &mut OpenGraph,
    stmt: &Statement,
    params: &BTreeMap<String, Value>,
    opts: &batho_engine::query::QueryOptions,
) -> Result<QueryResult, QueryError> {
    db.query_with(&stmt.text, params, opts)
        .map_err(|e| e.relocated(&stmt.script, stmt.offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bodies(s: &str) -> Vec<String> {
        split_statements(s).into_iter().map(|s| s.body).collect()
    }

    #[test]
    fn splits_on_semicolons_outside_strings_and_comments() {
        assert_eq!(
            bodies("RETURN 'a;b'; RETURN \"c;\\\";d\" // x;y\n; /* ; */ RETURN `we;ird`;"),
            vec![
                "RETURN 'a;b'",
                "RETURN \"c;\\\";d\" // x;y",
                "/* ; */ RETURN `we;ird`"
            ]
        );
        assert_eq!(bodies("  ;; // only a comment;\n ;"), Vec::<String>::new());
        assert_eq!(bodies("RETURN 1"), vec!["RETURN 1"]);
    }

    #[test]
    fn statement_text_keeps_script_positions() {
        let parts = split_statements("RETURN 1;\nRETURN  x;");
        assert_eq!(parts[1].text, "\nRETURN  x");
        assert_eq!(parts[1].offset, "RETURN 1;".len());
        assert_eq!(&parts[1].script[parts[1].offset..][..10], "\nRETURN  x");
    }

    #[test]
    fn statement_end_ignores_semicolons_in_strings_and_comments() {
        assert!(ends_statement("MATCH (n)\nRETURN n;"));
        assert!(ends_statement("RETURN 1; // done"));
        assert!(!ends_statement("RETURN 'a;"));
        assert!(!ends_statement("RETURN 1 /* ; */"));
        assert!(!ends_statement("RETURN 1 /* ;"));
        assert!(!ends_statement("MATCH (n)"));
        assert!(!ends_statement(""));
    }

    #[test]
    fn lexer_covers_the_whole_text() {
        for text in [
            "RETURN 'unterminated\\",
            "é;`x``y` 1.5..2 $p",
            "/* open",
            "\"\\",
        ] {
            let toks = lex(text);
            let mut at = 0;
            for (_, r) in &toks {
                assert_eq!(r.start, at, "{text:?}: {toks:?}");
                at = r.end;
            }
            assert_eq!(at, text.len(), "{text:?}");
        }
        let kinds: Vec<Tok> = lex("1..3").into_iter().map(|t| t.0).collect();
        assert_eq!(
            kinds,
            vec![Tok::Number, Tok::Punct, Tok::Punct, Tok::Number]
        );
    }

    #[test]
    fn params_parse_as_json_then_as_text() {
        assert_eq!(parse_param("n=3").unwrap(), ("n".into(), Value::Int(3)));
        assert_eq!(parse_param("$f=1.5").unwrap().1, Value::Float(1.5));
        assert_eq!(parse_param("b=true").unwrap().1, Value::Bool(true));
        assert_eq!(
            parse_param("s=\"42\"").unwrap().1,
            Value::String("42".into())
        );
        assert_eq!(
            parse_param("s=table_put").unwrap().1,
            Value::String("table_put".into())
        );
        assert_eq!(parse_param("e=").unwrap().1, Value::String(String::new()));
        assert_eq!(
            parse_param("l=[1,\"a\"]").unwrap().1,
            Value::List(vec![Value::Int(1), Value::String("a".into())])
        );
        assert!(parse_param("novalue").is_err());
        assert!(parse_param("1x=2").is_err());
    }

    #[test]
    fn formats_round_trip() {
        for f in [Format::Table, Format::Json, Format::JsonLines, Format::Csv] {
            assert_eq!(parse_format(format_name(f)), Some(f));
        }
        assert_eq!(parse_format("xml"), None);
    }
}
