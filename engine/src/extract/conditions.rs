//! `#if` evaluation under a [`Configuration`]: which lines of a file its configuration
//! leaves out.
//!
//! The directive lines are read in order (as [`super::guards`] reads them); the macros in
//! force are the configuration's defines and the `#define`s and `#undef`s met so far in
//! active code of the file itself (a file's headers are not read: a macro only they define
//! counts as undefined, as any unknown name does). `#if` and `#elif` expressions go
//! through the macro expander of [`super::preprocess`] after `defined` is replaced, and are
//! evaluated with C's integer rules, unknown identifiers being 0. A condition the
//! evaluator cannot decide (`__has_include`, an unknown function-like macro's call, a
//! floating constant, a division by zero, a syntax it does not read) keeps its branch
//! active and is counted: code is never left out on a guess.

use super::preprocess::{MacroDefinition, MacroTable, Token, TokenKind, expand, lex};
use crate::config::Configuration;

/// What the evaluation of one file found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Evaluation {
    /// Inactive line ranges, 1-based and inclusive, ascending and disjoint.
    pub(crate) inactive: Vec<(u32, u32)>,
    /// Conditions that could not be decided (their branches were kept active).
    pub(crate) undecided: u32,
}

impl Evaluation {
    /// Whether `line` is in an inactive range.
    pub(crate) fn is_inactive(&self, line: u32) -> bool {
        let i = self.inactive.partition_point(|r| r.1 < line);
        self.inactive.get(i).is_some_and(|r| r.0 <= line)
    }
}

/// The macro table a configuration starts every file with.
pub(crate) fn initial_table(config: &Configuration) -> MacroTable {
    let mut table = MacroTable::default();
    for define in &config.defines {
        let (head, value) = match define.split_once('=') {
            Some((head, value)) => (head, value),
            None => (define.as_str(), "1"),
        };
        if let Some((name, definition)) = MacroDefinition::parse(&format!("#define {head} {value}"))
        {
            table.define(&name, definition);
        }
    }
    for name in &config.undefines {
        table.undefine(name);
    }
    table
}

/// One open conditional block.
struct Frame {
    /// Whether the code around the block is active.
    parent: bool,
    /// Whether the current branch is active.
    active: bool,
    /// Whether a branch was decided true already (later ones are inactive).
    taken: bool,
    /// The first line of the current branch's inactive range, when it is inactive inside
    /// active code (a block inside an inactive one adds no range of its own).
    inactive_from: Option<u32>,
}

/// Evaluates the conditionals of `src` under `config`.
pub(crate) fn evaluate(src: &str, config: &Configuration) -> Evaluation {
    let mut table = initial_table(config);
    let mut out = Evaluation::default();
    let mut stack: Vec<Frame> = Vec::new();
    let mut line_no = 0u32;
    let mut lines = src.split('\n');
    while let Some(first) = lines.next() {
        line_no += 1;
        let start = line_no;
        let mut text = first.trim_end_matches('\r').to_owned();
        while text.ends_with('\\') {
            text.pop();
            match lines.next() {
                Some(next) => {
                    line_no += 1;
                    text.push_str(next.trim_end_matches('\r'));
                }
                None => break,
            }
        }
        if !text.trim_start().starts_with('#') {
            continue;
        }
        let tokens = lex(&text, 0);
        let Some(word) = tokens.get(1).filter(|t| t.kind == TokenKind::Identifier) else {
            continue;
        };
        let active = stack.last().is_none_or(|f| f.parent && f.active);
        let args = &tokens[2..];
        match word.text.as_str() {
            "if" | "ifdef" | "ifndef" => {
                let value = if !active {
                    Some(false)
                } else if word.text == "if" {
                    condition(&table, args)
                } else {
                    let defined = args.first().is_some_and(|t| is_defined(&table, &t.text));
                    Some(defined == (word.text == "ifdef"))
                };
                if active && value.is_none() {
                    out.undecided += 1;
                }
                let branch = value != Some(false);
                stack.push(Frame {
                    parent: active,
                    active: branch,
                    taken: value == Some(true),
                    inactive_from: (active && !branch).then_some(line_no + 1),
                });
            }
            "elif" | "elifdef" | "elifndef" | "else" => {
                let Some(frame) = stack.last_mut() else {
                    continue;
                };
                if let Some(from) = frame.inactive_from.take() {
                    push_range(&mut out.inactive, from, start - 1);
                }
                let value = if !frame.parent || frame.taken {
                    Some(false)
                } else {
                    match word.text.as_str() {
                        "else" => Some(true),
                        "elif" => condition(&table, args),
                        w => {
                            let defined = args.first().is_some_and(|t| is_defined(&table, &t.text));
                            Some(defined == (w == "elifdef"))
                        }
                    }
                };
                if frame.parent && !frame.taken && value.is_none() {
                    out.undecided += 1;
                }
                frame.active = value != Some(false);
                frame.taken |= value == Some(true);
                if frame.parent && !frame.active {
                    frame.inactive_from = Some(line_no + 1);
                }
            }
            "endif" => {
                if let Some(frame) = stack.pop()
                    && let Some(from) = frame.inactive_from
                {
                    push_range(&mut out.inactive, from, start - 1);
                }
            }
            "define" if active => {
                if let Some((name, definition)) = MacroDefinition::parse(&text) {
                    table.define(&name, definition);
                }
            }
            "undef" if active => {
                if let Some(name) = args.first() {
                    table.undefine(&name.text);
                }
            }
            _ => {}
        }
    }
    // A block never closed is inactive to the end of the file.
    while let Some(frame) = stack.pop() {
        if let Some(from) = frame.inactive_from {
            push_range(&mut out.inactive, from, line_no);
        }
    }
    out.inactive.sort_unstable();
    out
}

fn push_range(ranges: &mut Vec<(u32, u32)>, from: u32, to: u32) {
    if from <= to {
        ranges.push((from, to));
    }
}

fn is_defined(table: &MacroTable, name: &str) -> bool {
    table.is_defined(name)
}

/// The value of an `#if` expression: none when it cannot be decided.
pub(crate) fn condition(table: &MacroTable, tokens: &[Token]) -> Option<bool> {
    // `defined X` and `defined ( X )` are replaced before expansion (C11 6.10.1p4).
    let mut replaced = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if t.kind == TokenKind::Identifier && t.text == "defined" {
            let (name, next) = match tokens.get(i + 1) {
                Some(open) if open.is_punctuator("(") => {
                    let name = tokens.get(i + 2)?;
                    if !tokens.get(i + 3)?.is_punctuator(")") {
                        return None;
                    }
                    (name, i + 4)
                }
                Some(name) => (name, i + 2),
                None => return None,
            };
            if name.kind != TokenKind::Identifier || name.text.starts_with("__has_") {
                return None;
            }
            let value = if is_defined(table, &name.text) {
                "1"
            } else {
                "0"
            };
            replaced.push(Token::made(TokenKind::Number, value.to_owned(), true));
            i = next;
            continue;
        }
        replaced.push(t.clone());
        i += 1;
    }
    let expanded = expand(table, replaced).ok()?;
    let mut parser = Parser {
        tokens: &expanded,
        at: 0,
    };
    let value = parser.ternary()?;
    (parser.at == expanded.len()).then_some(value != 0)
}

/// A precedence-climbing reader of a controlling expression over `i64`.
struct Parser<'t> {
    tokens: &'t [Token],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn eat(&mut self, p: &str) -> bool {
        if self.peek().is_some_and(|t| t.is_punctuator(p)) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn ternary(&mut self) -> Option<i64> {
        let c = self.binary(0)?;
        if self.eat("?") {
            let a = self.ternary()?;
            if !self.eat(":") {
                return None;
            }
            let b = self.ternary()?;
            return Some(if c != 0 { a } else { b });
        }
        Some(c)
    }

    fn binary(&mut self, min: u8) -> Option<i64> {
        let mut left = self.unary()?;
        loop {
            let Some(op) = self.peek().filter(|t| t.kind == TokenKind::Punctuator) else {
                return Some(left);
            };
            let prec = match op.text.as_str() {
                "||" => 1,
                "&&" => 2,
                "|" => 3,
                "^" => 4,
                "&" => 5,
                "==" | "!=" => 6,
                "<" | ">" | "<=" | ">=" => 7,
                "<<" | ">>" => 8,
                "+" | "-" => 9,
                "*" | "/" | "%" => 10,
                _ => return Some(left),
            };
            if prec < min.max(1) {
                return Some(left);
            }
            let op = op.text.clone();
            self.at += 1;
            let right = self.binary(prec + 1)?;
            left = match op.as_str() {
                "||" => i64::from(left != 0 || right != 0),
                "&&" => i64::from(left != 0 && right != 0),
                "|" => left | right,
                "^" => left ^ right,
                "&" => left & right,
                "==" => i64::from(left == right),
                "!=" => i64::from(left != right),
                "<" => i64::from(left < right),
                ">" => i64::from(left > right),
                "<=" => i64::from(left <= right),
                ">=" => i64::from(left >= right),
                "<<" => left.wrapping_shl(u32::try_from(right).ok()?),
                ">>" => left.wrapping_shr(u32::try_from(right).ok()?),
                "+" => left.wrapping_add(right),
                "-" => left.wrapping_sub(right),
                "*" => left.wrapping_mul(right),
                "/" => left.checked_div(right)?,
                _ => left.checked_rem(right)?,
            };
        }
    }

    fn unary(&mut self) -> Option<i64> {
        let t = self.peek()?.clone();
        self.at += 1;
        match t.kind {
            TokenKind::Punctuator => match t.text.as_str() {
                "(" => {
                    let v = self.ternary()?;
                    self.eat(")").then_some(v)
                }
                "!" => Some(i64::from(self.unary()? == 0)),
                "-" => Some(self.unary()?.wrapping_neg()),
                "+" => self.unary(),
                "~" => Some(!self.unary()?),
                _ => None,
            },
            TokenKind::Number => integer(&t.text),
            TokenKind::Literal => character(&t.text),
            TokenKind::Identifier => {
                // A name left after expansion: an unknown function-like macro's call
                // cannot be decided; any other name is 0 (`true` is 1 in C++).
                if self.peek().is_some_and(|n| n.is_punctuator("(")) {
                    return None;
                }
                Some(i64::from(t.text == "true"))
            }
            _ => None,
        }
    }
}

/// An integer constant (decimal, octal, hex or binary, with any `u`/`l` suffix).
fn integer(text: &str) -> Option<i64> {
    let body = text
        .trim_end_matches(['u', 'U', 'l', 'L'])
        .replace('\'', "");
    let lower = body.to_ascii_lowercase();
    let (digits, radix) = if let Some(h) = lower.strip_prefix("0x") {
        (h.to_owned(), 16)
    } else if let Some(b) = lower.strip_prefix("0b") {
        (b.to_owned(), 2)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (lower[1..].to_owned(), 8)
    } else {
        (lower, 10)
    };
    u64::from_str_radix(&digits, radix).ok().map(|v| v as i64)
}

/// A plain character constant (`'a'`, `'\n'`, `'\0'`); none for others.
fn character(text: &str) -> Option<i64> {
    let inner = text.strip_prefix('\'')?.strip_suffix('\'')?;
    let mut chars = inner.chars();
    let v = match (chars.next()?, chars.next()) {
        (c, None) => c as i64,
        ('\\', Some(e)) if chars.next().is_none() => match e {
            'n' => 10,
            't' => 9,
            'r' => 13,
            '0' => 0,
            '\\' => 92,
            '\'' => 39,
            _ => return None,
        },
        _ => return None,
    };
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(defines: &[&str]) -> Configuration {
        Configuration {
            defines: defines.iter().map(|d| d.to_string()).collect(),
            ..Configuration::default()
        }
    }

    fn eval(defines: &[&str], expr: &str) -> Option<bool> {
        let table = initial_table(&config(defines));
        condition(&table, &lex(expr, 0))
    }

    #[test]
    fn expressions() {
        assert_eq!(eval(&["A"], "defined A"), Some(true));
        assert_eq!(eval(&["A"], "defined(A) && !defined ( B )"), Some(true));
        assert_eq!(eval(&[], "UNKNOWN"), Some(false));
        assert_eq!(eval(&["V=3"], "V >= 2 && V < 4"), Some(true));
        assert_eq!(eval(&["V=3"], "(V << 2) == 12 ? 1 : 0"), Some(true));
        assert_eq!(eval(&["W=V+1", "V=2"], "W * 2 == 6"), Some(true));
        assert_eq!(eval(&[], "0x10 - 020 + 1UL"), Some(true));
        assert_eq!(
            eval(&[], "-1 < 0 && ~0 == -1 && 7 % 4 == 3 && 'a' == 97"),
            Some(true)
        );
        assert_eq!(eval(&["F(x)=x+1"], "F(1) == 2"), Some(true));
        assert_eq!(
            eval(&[], "1 || (1/0)"),
            None,
            "a division by zero is not decided"
        );
    }

    #[test]
    fn undecidable_conditions() {
        assert_eq!(eval(&[], "__has_include(<stdio.h>)"), None);
        assert_eq!(eval(&[], "defined(__has_include)"), None);
        assert_eq!(eval(&[], "GCC_VERSION(4, 2) > 0"), None);
        assert_eq!(eval(&[], "1.5 > 1"), None);
        assert_eq!(eval(&[], "1 +"), None);
    }

    const SRC: &str = "\
#ifndef GUARD_H
#define GUARD_H
#define LEVEL 2
#if LEVEL >= 3
int three;
#elif LEVEL == 2
int two;
#else
int other;
#endif
#ifdef FEATURE
int feature;
#  if INNER
int inner;
#  endif
#endif
#undef LEVEL
#if defined(LEVEL)
int still_defined;
#endif
#if __has_include(<x.h>)
int maybe;
#else
int maybe_not;
#endif
#endif
";

    #[test]
    fn branches_of_a_file() {
        let e = evaluate(SRC, &config(&[]));
        assert_eq!(e.inactive, [(5, 5), (9, 9), (12, 15), (19, 19)]);
        assert_eq!(e.undecided, 1);
        assert!(!e.is_inactive(7) && e.is_inactive(13) && e.is_inactive(19));
        // `#undef` is honoured, `#ifdef` nests, and an undecided `#if` keeps its `#else`.
        assert!(!e.is_inactive(22) && !e.is_inactive(24));

        let e = evaluate(SRC, &config(&["FEATURE", "INNER=1"]));
        assert_eq!(e.inactive, [(5, 5), (9, 9), (19, 19)]);
        let e = evaluate(SRC, &config(&["FEATURE"]));
        assert_eq!(e.inactive, [(5, 5), (9, 9), (14, 14), (19, 19)]);
        // The file's own definition beats nothing: a configured GUARD_H removes it all.
        let e = evaluate(SRC, &config(&["GUARD_H"]));
        assert_eq!(e.inactive, [(2, 25)]);
    }

    #[test]
    fn elif_chains_take_the_first_true_branch() {
        let src = "#if A\na\n#elif B\nb\n#elif C\nc\n#else\nd\n#endif\n";
        let e = evaluate(src, &config(&["B", "C"]));
        assert_eq!(e.inactive, [(2, 2), (6, 6), (8, 8)]);
        let e = evaluate(src, &config(&[]));
        assert_eq!(e.inactive, [(2, 2), (4, 4), (6, 6)]);
    }
}
