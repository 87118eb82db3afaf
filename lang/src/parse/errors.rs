//! Turns pest's "expected one of these rules" into a sentence a user can act on: what was
//! found, what would have been accepted (in words, not rule names), and a fix when one is
//! likely (a misspelled keyword, an operator from another language).

use batho_grammar::Rule;
use pest::error::{ErrorVariant, InputLocation};

use super::{ParseError, ParseErrorKind};
use crate::ast::Span;
use crate::diag::{Diagnostic, closest};

/// Every BQL keyword: typos are compared against them, and front ends complete and
/// highlight them.
pub const KEYWORDS: &[&str] = &[
    "MATCH",
    "OPTIONAL",
    "WHERE",
    "RETURN",
    "WITH",
    "UNWIND",
    "AS",
    "ORDER",
    "BY",
    "SKIP",
    "LIMIT",
    "ASC",
    "DESC",
    "DISTINCT",
    "AND",
    "OR",
    "XOR",
    "NOT",
    "IN",
    "STARTS",
    "ENDS",
    "CONTAINS",
    "IS",
    "NULL",
    "TRUE",
    "FALSE",
    "CALL",
    "YIELD",
    "CREATE",
    "MERGE",
    "ON",
    "SET",
    "DELETE",
    "DETACH",
    "REMOVE",
    "EXPLAIN",
    "PROFILE",
    "shortestPath",
    "allShortestPaths",
];

/// Words with a meaning only at the start of a statement (`AT GENERATION 3`, `AT RUN 'id'`):
/// completed and described like keywords, but not reserved, so they stay usable as names.
pub const STATEMENT_PREFIX_WORDS: &[&str] = &["AT", "GENERATION", "RUN"];

fn describe(rule: Rule) -> Option<&'static str> {
    use Rule as R;
    Some(match rule {
        R::MATCH | R::match_clause => "MATCH",
        R::OPTIONAL => "OPTIONAL MATCH",
        R::WHERE | R::where_clause => "WHERE",
        R::RETURN | R::return_clause => "RETURN",
        R::WITH | R::with_clause => "WITH",
        R::UNWIND | R::unwind_clause => "UNWIND",
        R::AS => "AS",
        R::ORDER | R::order_by => "ORDER BY",
        R::BY => "BY",
        R::SKIP | R::skip => "SKIP",
        R::LIMIT | R::limit => "LIMIT",
        R::ASC => "ASC",
        R::DESC => "DESC",
        R::DISTINCT => "DISTINCT",
        R::AND => "AND",
        R::OR => "OR",
        R::XOR => "XOR",
        R::IN | R::in_op => "IN",
        R::STARTS | R::starts_with => "STARTS WITH",
        R::ENDS | R::ends_with => "ENDS WITH",
        R::CONTAINS | R::contains_op => "CONTAINS",
        R::IS | R::is_null | R::is_not_null => "IS [NOT] NULL",
        R::CALL | R::call_clause => "CALL",
        R::YIELD | R::yield_clause => "YIELD",
        R::CREATE | R::create_clause => "CREATE",
        R::MERGE | R::merge_clause => "MERGE",
        R::ON | R::merge_action => "ON",
        R::SET | R::set_clause => "SET",
        R::DELETE | R::delete_clause => "DELETE",
        R::DETACH => "DETACH DELETE",
        R::REMOVE | R::remove_clause => "REMOVE",
        R::AT | R::at_clause => "AT",
        R::GENERATION => "GENERATION",
        R::RUN => "RUN",
        R::EXPLAIN => "EXPLAIN",
        R::PROFILE => "PROFILE",
        R::SHORTEST_PATH | R::shortest_path => "shortestPath",
        R::ALL_SHORTEST_PATHS => "allShortestPaths",
        R::EOI => "end of input",
        R::variable => "a variable",
        R::schema_name | R::yield_item => "a name",
        R::procedure_name => "a procedure name",
        R::call_args => "`(`",
        R::node_pattern => "a node pattern like `(n)`",
        R::rel_pattern | R::left_arrow => "a relationship like `-[r]->`",
        R::right_arrow => "`>`",
        R::rel_detail => "`[`",
        R::pattern | R::pattern_part | R::pattern_element => "a pattern",
        R::node_labels | R::label_any | R::label_all | R::label_test | R::rel_types => {
            "a label `:Name`"
        }
        R::properties => "a property map `{key: value}`",
        R::range => "a length `*min..max`",
        R::range_min | R::range_max | R::range_exact => "a number",
        R::range_dots => "`..`",
        R::comp_op => "a comparison operator",
        R::add_op | R::mul_op => "an arithmetic operator",
        R::predicate_suffix => "an operator",
        R::property_lookup => "`.property`",
        R::index_or_slice => "`[index]`",
        R::map_entry => "a map entry `key: value`",
        R::set_item | R::set_property | R::set_merge | R::set_replace | R::set_labels => {
            "an assignment like `n.key = value`"
        }
        R::remove_item | R::postfix_property => "`n.key` or `n:Label`",
        R::star => "`*`",
        R::statement => "a clause (MATCH, RETURN, ...)",
        R::expr
        | R::or_expr
        | R::xor_expr
        | R::and_expr
        | R::not_expr
        | R::NOT
        | R::comparison
        | R::predicate_expr
        | R::add_expr
        | R::mul_expr
        | R::pow_expr
        | R::unary_expr
        | R::unary_op
        | R::postfix_expr
        | R::float_lit
        | R::integer_lit
        | R::string_lit
        | R::bool_lit
        | R::null_lit
        | R::TRUE
        | R::FALSE
        | R::NULL
        | R::parameter
        | R::count_star
        | R::function_call
        | R::function_name
        | R::list_lit
        | R::map_lit
        | R::paren_expr
        | R::projection_items
        | R::projection_item
        | R::sort_item
        | R::slice
        | R::slice_from
        | R::slice_to => "an expression",
        _ => return None,
    })
}

/// What the text at `pos` looks like, for "unexpected X".
fn token_at(text: &str, pos: usize) -> (String, Span, Option<&str>) {
    let rest = &text[pos..];
    let Some(c) = rest.chars().next() else {
        return ("end of input".into(), Span::new(pos, pos), None);
    };
    if c.is_alphanumeric() || c == '_' {
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let word = &rest[..len];
        return (format!("`{word}`"), Span::new(pos, pos + len), Some(word));
    }
    for op in ["==", "&&", "||", "!=", "=>", "->", "<-"] {
        if rest.starts_with(op) {
            return (format!("`{op}`"), Span::new(pos, pos + op.len()), Some(op));
        }
    }
    for op in ["<=", ">=", "<>", "<", ">", "="] {
        if rest.starts_with(op) {
            return (format!("`{op}`"), Span::new(pos, pos + op.len()), Some(op));
        }
    }
    (format!("`{c}`"), Span::new(pos, pos + c.len_utf8()), None)
}

/// Translates a pest error into a [`ParseError`] against `text`.
pub(super) fn from_pest(text: &str, err: &pest::error::Error<Rule>) -> ParseError {
    let pos = match err.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    }
    .min(text.len());
    // In `a == b` the first `=` parses as a comparison and pest stops at the second one;
    // pointing at the whole `==` gives the advice for it.
    let pos = if pos > 0 && text.as_bytes()[pos - 1..].starts_with(b"==") {
        pos - 1
    } else {
        pos
    };
    let (found, span, word) = token_at(text, pos);
    let mut expected: Vec<&'static str> = Vec::new();
    let mut keyword_candidates: Vec<&'static str> = Vec::new();
    if let ErrorVariant::ParsingError { positives, .. } = &err.variant {
        for r in positives {
            if let Some(d) = describe(*r) {
                if !expected.contains(&d) {
                    expected.push(d);
                }
                if KEYWORDS.iter().any(|k| d.starts_with(k)) {
                    keyword_candidates.push(d);
                }
            }
        }
    }
    // Put concrete tokens before the vague "an expression".
    expected.sort_by_key(|d| {
        (
            d.starts_with("an ") || d.starts_with("a "),
            *d == "end of input",
        )
    });
    let expected_text = match expected.len() {
        0 => String::new(),
        1 => format!(", expected {}", expected[0]),
        n if n <= 8 => format!(
            ", expected {} or {}",
            expected[..n - 1].join(", "),
            expected[n - 1]
        ),
        _ => format!(", expected {}, ...", expected[..8].join(", ")),
    };
    let message = format!("unexpected {found}{expected_text}");
    let suggestion = word.and_then(|w| match w {
        "==" => Some("use `=` to compare for equality".to_string()),
        "&&" => Some("use AND".to_string()),
        "||" => Some("use OR".to_string()),
        "=>" => Some("use `>=` for greater-or-equal".to_string()),
        w if KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(w)) => {
            if !expected.contains(&"a variable") {
                return None;
            }
            let w = w.to_ascii_uppercase();
            Some(format!(
                "`{w}` is a reserved word; write it in backticks (`{w}`) to use it as a name"
            ))
        }
        w => {
            let kws = keyword_candidates.iter().flat_map(|d| d.split(' ').next());
            closest(w, kws)
                .or_else(|| closest(w, KEYWORDS.iter().copied()))
                .map(|k| format!("did you mean {k}?"))
        }
    });
    ParseError {
        kind: ParseErrorKind::Syntax,
        diagnostic: Diagnostic::new(text, span, message, suggestion),
    }
}
