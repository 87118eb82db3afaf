//! `#if` evaluation under a [`Configuration`]: which lines of each file the
//! configuration leaves out.
//!
//! Each file's directive lines are read once ([`scan`]). Then every translation unit (a
//! file that is not a header) is preprocessed as a compiler would, directives only: its
//! macro table starts from the configuration's defines, takes the `#define`s and
//! `#undef`s of active code in order, and an active `#include "…"` (or `<…>`) of a file of
//! the repository (found beside the includer, then in the configuration's include
//! folders) is entered in place, `#pragma once` honoured. A branch is active in a file
//! when some translation unit that reaches it compiles it (the union: a header is
//! evaluated with the configurations of the units that include it); a file no unit
//! reaches is evaluated on its own. `#if` and `#elif` expressions go through the macro
//! expander of [`super::preprocess`] after `defined` is replaced, and are evaluated with
//! C's integer rules, unknown identifiers being 0. A condition the evaluator cannot
//! decide (`__has_include`, an unknown function-like macro's call, a floating constant, a
//! division by zero, a syntax it does not read) keeps its branch active and is counted:
//! code is never left out on a guess. Files outside the repository (system headers) are
//! not read: what only they define counts as undefined.

use super::preprocess::{MacroDefinition, MacroTable, Token, TokenKind, expand, lex};
use std::collections::HashSet;

use crate::config::Configuration;

/// What the evaluation of one file found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Evaluation {
    /// Inactive line ranges, 1-based and inclusive, ascending and disjoint.
    pub(crate) inactive: Vec<(u32, u32)>,
    /// Conditions that could not be decided (their branches were kept active).
    pub(crate) undecided: u32,
    /// Every unit reaching the file had included the standard `<assert.h>` with `NDEBUG`
    /// defined (and no file of the repository defines `assert`): `assert(e)` is
    /// `((void)0)` (C11 7.2), so the calls written in its argument are not made.
    pub(crate) assert_dropped: bool,
}

impl Evaluation {
    /// Whether `line` is in an inactive range.
    pub(crate) fn is_inactive(&self, line: u32) -> bool {
        let i = self.inactive.partition_point(|r| r.1 < line);
        self.inactive.get(i).is_some_and(|r| r.0 <= line)
    }
}

/// The macro table a configuration starts every translation unit with.
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

/// What a directive line does.
#[derive(Clone, Debug)]
enum Kind {
    If(Vec<Token>),
    /// `#ifdef` (true) or `#ifndef` (false) of a name.
    IfDefined(String, bool),
    Elif(Vec<Token>),
    /// `#elifdef` (true) or `#elifndef` (false) of a name.
    ElifDefined(String, bool),
    Else,
    Endif,
    Define(String, MacroDefinition),
    Undef(String),
    /// The path as written, and whether in angle brackets.
    Include(String, bool),
    PragmaOnce,
}

impl Kind {
    fn opens_branch(&self) -> bool {
        matches!(
            self,
            Kind::If(_) | Kind::IfDefined(..) | Kind::Elif(_) | Kind::ElifDefined(..) | Kind::Else
        )
    }
}

/// One directive: its kind and its first and last line (continuations included).
#[derive(Clone, Debug)]
struct Directive {
    kind: Kind,
    first: u32,
    last: u32,
}

/// The directives of one file, and its line count.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scanned {
    directives: Vec<Directive>,
    lines: u32,
}

/// Reads the directive lines of `src` (the ones conditionals, definitions and includes
/// need).
pub(crate) fn scan(src: &str) -> Scanned {
    let mut out = Scanned::default();
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
        let mut tokens = lex(&text, 0);
        let Some(word) = tokens.get(1).filter(|t| t.kind == TokenKind::Identifier) else {
            continue;
        };
        let name = || tokens.get(2).map(|t| t.text.clone()).unwrap_or_default();
        let kind = match word.text.as_str() {
            "if" => Kind::If(tokens.split_off(2)),
            "ifdef" => Kind::IfDefined(name(), true),
            "ifndef" => Kind::IfDefined(name(), false),
            "elif" => Kind::Elif(tokens.split_off(2)),
            "elifdef" => Kind::ElifDefined(name(), true),
            "elifndef" => Kind::ElifDefined(name(), false),
            "else" => Kind::Else,
            "endif" => Kind::Endif,
            "define" => match MacroDefinition::parse(&text) {
                Some((name, definition)) => Kind::Define(name, definition),
                None => continue,
            },
            "undef" => Kind::Undef(name()),
            "include" | "include_next" | "import" => match include_path(&text) {
                Some((path, system)) => Kind::Include(path, system),
                None => continue,
            },
            "pragma" if tokens.get(2).is_some_and(|t| t.text == "once") => Kind::PragmaOnce,
            _ => continue,
        };
        out.directives.push(Directive {
            kind,
            first: start,
            last: line_no,
        });
    }
    out.lines = line_no;
    out
}

/// The path of `#include "p"` or `#include <p>`, and whether in angle brackets.
fn include_path(text: &str) -> Option<(String, bool)> {
    let rest = text.trim_start().strip_prefix('#')?.trim_start();
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == '_');
    let rest = rest.trim_start();
    let (close, system) = match rest.chars().next()? {
        '"' => ('"', false),
        '<' => ('>', true),
        _ => return None,
    };
    let end = rest[1..].find(close)?;
    Some((rest[1..1 + end].to_owned(), system))
}

/// Steps (directives run) one evaluation may take over all translation units; past it,
/// the remaining units are not run and the files only they reach are evaluated alone.
const MAX_STEPS: u64 = 50_000_000;
/// Nesting of includes followed at most.
const MAX_INCLUDE_DEPTH: u32 = 200;

/// The evaluation state of one file over all the units that reach it.
#[derive(Clone, Default)]
struct FileState {
    /// Per directive that opens a branch: active in some unit.
    active: Vec<bool>,
    /// Per `#if`/`#elif`: undecided in some unit.
    undecided: Vec<bool>,
    /// Reached by some unit.
    visited: bool,
    /// Left by some unit with the standard `assert` disabled, or enabled (or not included).
    assert_off: bool,
    assert_on: bool,
}

/// The files of a repository, their directives and how includes find them.
pub(crate) struct Tree<'a> {
    /// Repository-relative paths.
    pub(crate) paths: &'a [&'a str],
    /// Their directives ([`scan`]).
    pub(crate) scanned: &'a [Scanned],
}

struct Run<'a> {
    tree: &'a Tree<'a>,
    include_dirs: Vec<String>,
    by_path: std::collections::HashMap<&'a str, usize>,
    state: Vec<FileState>,
    steps: u64,
}

/// Evaluates every file of `tree` under `config` (see the module's documentation).
pub(crate) fn evaluate_tree(tree: &Tree<'_>, config: &Configuration) -> Vec<Evaluation> {
    let mut run = Run {
        tree,
        include_dirs: config
            .include_dirs
            .iter()
            .map(|d| normalize(d.trim_end_matches('/')))
            .collect(),
        by_path: tree
            .paths
            .iter()
            .enumerate()
            .map(|(i, p)| (*p, i))
            .collect(),
        state: tree
            .scanned
            .iter()
            .map(|s| FileState {
                active: vec![false; s.directives.len()],
                undecided: vec![false; s.directives.len()],
                ..FileState::default()
            })
            .collect(),
        steps: 0,
    };
    for (i, path) in tree.paths.iter().enumerate() {
        if !is_header(path) && run.steps < MAX_STEPS {
            let mut macros = Macros::new(config);
            let mut once = Vec::new();
            run.file(i, &mut macros, 0, &mut once);
        }
    }
    for i in 0..tree.paths.len() {
        if !run.state[i].visited {
            let mut macros = Macros::new(config);
            let mut once = Vec::new();
            run.file(i, &mut macros, MAX_INCLUDE_DEPTH, &mut once);
        }
    }
    (0..tree.paths.len())
        .map(|i| ranges(&tree.scanned[i], &run.state[i]))
        .collect()
}

/// Evaluates one file alone under `config` (its includes not followed).
pub(crate) fn evaluate(src: &str, config: &Configuration) -> Evaluation {
    let scanned = [scan(src)];
    let tree = Tree {
        paths: &["f.c"],
        scanned: &scanned,
    };
    evaluate_tree(&tree, config).remove(0)
}

fn is_header(path: &str) -> bool {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    !matches!(ext, "c" | "cc" | "cpp" | "cxx" | "c++" | "C" | "m" | "mm")
}

/// `a/./b/../c` → `a/c`.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// One open conditional block while a file runs.
struct Frame {
    /// Whether the code around the block is active.
    parent: bool,
    /// Whether the current branch is active.
    active: bool,
    /// Whether a branch was decided true already (later ones are inactive).
    taken: bool,
    /// Whether the code around the block is active only because a condition was not
    /// decided.
    parent_uncertain: bool,
    /// Whether a branch of the block so far was undecided (later ones may or may not run).
    undecided_before: bool,
    /// Whether the current branch runs only because of an undecided condition.
    uncertain: bool,
}

/// The macros in force in a translation unit, and the names whose definition depends on
/// an undecided condition.
pub(crate) struct Macros {
    table: MacroTable,
    unknown: HashSet<String>,
    /// The standard `<assert.h>` was included with `NDEBUG` defined (and not again since
    /// without it).
    assert_off: bool,
}

impl Macros {
    fn new(config: &Configuration) -> Macros {
        Macros {
            table: initial_table(config),
            unknown: HashSet::new(),
            assert_off: false,
        }
    }

    /// Whether `name` is defined; none when that depends on an undecided condition, or
    /// for the compilers' own `__has_attribute`, `__has_include`, … (GCC and clang define
    /// them, others do not).
    fn defined(&self, name: &str) -> Option<bool> {
        (!self.unknown.contains(name) && !name.starts_with("__has_"))
            .then(|| self.table.is_defined(name))
    }
}

impl Run<'_> {
    /// Runs file `f`'s directives with `macros`, entering its includes.
    fn file(&mut self, f: usize, macros: &mut Macros, depth: u32, once: &mut Vec<usize>) {
        let tree = self.tree;
        self.state[f].visited = true;
        let mut stack: Vec<Frame> = Vec::new();
        for (d, dir) in tree.scanned[f].directives.iter().enumerate() {
            self.steps += 1;
            let active = stack.last().is_none_or(|fr| fr.parent && fr.active);
            let uncertain = stack
                .last()
                .is_some_and(|fr| fr.parent_uncertain || fr.uncertain);
            let decide = |macros: &Macros, kind: &Kind| match kind {
                Kind::IfDefined(name, want) | Kind::ElifDefined(name, want) => {
                    macros.defined(name).map(|defined| defined == *want)
                }
                Kind::If(tokens) | Kind::Elif(tokens) => {
                    condition(&macros.table, &macros.unknown, tokens)
                }
                _ => Some(true),
            };
            match &dir.kind {
                Kind::If(_) | Kind::IfDefined(..) => {
                    let v = if active {
                        decide(macros, &dir.kind)
                    } else {
                        Some(false)
                    };
                    self.note(f, d, active, v);
                    stack.push(Frame {
                        parent: active,
                        active: v != Some(false),
                        taken: v == Some(true),
                        parent_uncertain: uncertain,
                        undecided_before: v.is_none(),
                        uncertain: v.is_none(),
                    });
                }
                Kind::Elif(_) | Kind::ElifDefined(..) | Kind::Else => {
                    let Some(frame) = stack.last() else {
                        continue;
                    };
                    let live = frame.parent && !frame.taken;
                    let v = if live {
                        decide(macros, &dir.kind)
                    } else {
                        Some(false)
                    };
                    self.note(f, d, live, v);
                    if let Some(frame) = stack.last_mut() {
                        frame.active = v != Some(false);
                        frame.taken |= v == Some(true);
                        frame.uncertain = frame.active && (v.is_none() || frame.undecided_before);
                        frame.undecided_before |= v.is_none();
                    }
                }
                Kind::Endif => {
                    stack.pop();
                }
                Kind::Define(name, definition) if active => {
                    macros.table.define(name, definition.clone());
                    if uncertain {
                        macros.unknown.insert(name.clone());
                    } else {
                        macros.unknown.remove(name);
                    }
                }
                Kind::Undef(name) if active => {
                    macros.table.undefine(name);
                    if uncertain {
                        macros.unknown.insert(name.clone());
                    } else {
                        macros.unknown.remove(name);
                    }
                }
                Kind::PragmaOnce if active && !once.contains(&f) => once.push(f),
                Kind::Include(path, system) if active && depth < MAX_INCLUDE_DEPTH => {
                    match self.find_include(f, path, *system) {
                        Some(target) if !once.contains(&target) && self.steps < MAX_STEPS => {
                            self.file(target, macros, depth + 1, once);
                        }
                        Some(_) => {}
                        None if path == "assert.h" => {
                            macros.assert_off = macros.defined("NDEBUG") == Some(true);
                        }
                        None => {}
                    }
                }
                _ => {}
            }
        }
        let off = macros.assert_off && !macros.table.is_defined("assert");
        let state = &mut self.state[f];
        state.assert_off |= off;
        state.assert_on |= !off;
    }

    /// Records how branch-opening directive `d` of file `f` was decided where `live` (its
    /// block's code active and no earlier branch taken).
    fn note(&mut self, f: usize, d: usize, live: bool, value: Option<bool>) {
        let state = &mut self.state[f];
        if live && value != Some(false) {
            state.active[d] = true;
        }
        if live && value.is_none() {
            state.undecided[d] = true;
        }
    }

    /// The repository file `#include` names from file `f`: beside `f` (quoted form),
    /// then in each include folder.
    fn find_include(&self, f: usize, path: &str, system: bool) -> Option<usize> {
        let from = self.tree.paths[f];
        let dir = from.rsplit_once('/').map_or("", |(d, _)| d);
        let beside = (!system).then(|| normalize(&format!("{dir}/{path}")));
        beside
            .into_iter()
            .chain(
                self.include_dirs
                    .iter()
                    .map(|d| normalize(&format!("{d}/{path}"))),
            )
            .find_map(|p| self.by_path.get(p.as_str()).copied())
    }
}

/// The inactive ranges of a file: each branch no unit compiled, inside code some unit
/// did (a branch inside an inactive one adds no range of its own).
fn ranges(scanned: &Scanned, state: &FileState) -> Evaluation {
    let mut out = Evaluation {
        undecided: state.undecided.iter().filter(|&&u| u).count() as u32,
        assert_dropped: state.assert_off && !state.assert_on,
        ..Evaluation::default()
    };
    // Per open block: whether the code around it is active, and where the current
    // branch's inactive range starts (when it is inactive).
    let mut stack: Vec<(bool, Option<u32>)> = Vec::new();
    for (d, dir) in scanned.directives.iter().enumerate() {
        let around = stack
            .last()
            .is_none_or(|&(parent, from)| parent && from.is_none());
        match dir.kind {
            Kind::If(_) | Kind::IfDefined(..) => {
                stack.push((around, (around && !state.active[d]).then_some(dir.last + 1)));
            }
            _ if dir.kind.opens_branch() => {
                if let Some((parent, from)) = stack.last_mut() {
                    if let Some(start) = from.take() {
                        push_range(&mut out.inactive, start, dir.first - 1);
                    }
                    if *parent && !state.active[d] {
                        *from = Some(dir.last + 1);
                    }
                }
            }
            Kind::Endif => {
                if let Some((_, Some(start))) = stack.pop() {
                    push_range(&mut out.inactive, start, dir.first - 1);
                }
            }
            _ => {}
        }
    }
    // A block never closed is inactive to the end of the file.
    while let Some((_, from)) = stack.pop() {
        if let Some(start) = from {
            push_range(&mut out.inactive, start, scanned.lines);
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

/// The value of an `#if` expression: none when it cannot be decided. `unknown` names
/// macros whose definition depends on a condition that was not decided: a condition that
/// reads one (directly or through the macros it expands) is not decided either.
pub(crate) fn condition(
    table: &MacroTable,
    unknown: &HashSet<String>,
    tokens: &[Token],
) -> Option<bool> {
    if !unknown.is_empty() && mentions(table, unknown, tokens, 0) {
        return None;
    }
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
            let value = if table.is_defined(&name.text) {
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
    let value = parser.ternary().ok()?;
    if parser.at != expanded.len() {
        return None;
    }
    value.map(|v| v != 0)
}

/// Whether `tokens` name a macro of `unknown`, or a defined macro whose replacement list
/// does (a few levels deep).
fn mentions(table: &MacroTable, unknown: &HashSet<String>, tokens: &[Token], depth: u32) -> bool {
    tokens.iter().any(|t| {
        t.kind == TokenKind::Identifier
            && (unknown.contains(&t.text)
                || (depth < 8
                    && table
                        .body_of(&t.text)
                        .is_some_and(|body| mentions(table, unknown, body, depth + 1))))
    })
}

/// A syntax the reader does not understand: the whole condition is undecided.
struct Unreadable;

/// A value, or none when it depends on something undecided (`||` and `&&` still decide
/// when their other side does, as C's short circuits would).
type Value = Option<i64>;

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

    fn ternary(&mut self) -> Result<Value, Unreadable> {
        let c = self.binary(0)?;
        if self.eat("?") {
            let a = self.ternary()?;
            if !self.eat(":") {
                return Err(Unreadable);
            }
            let b = self.ternary()?;
            return Ok(match c {
                Some(c) => {
                    if c != 0 {
                        a
                    } else {
                        b
                    }
                }
                None if a == b => a,
                None => None,
            });
        }
        Ok(c)
    }

    fn binary(&mut self, min: u8) -> Result<Value, Unreadable> {
        let mut left = self.unary()?;
        loop {
            let Some(op) = self.peek().filter(|t| t.kind == TokenKind::Punctuator) else {
                return Ok(left);
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
                _ => return Ok(left),
            };
            if prec < min.max(1) {
                return Ok(left);
            }
            let op = op.text.clone();
            self.at += 1;
            let right = self.binary(prec + 1)?;
            left = match op.as_str() {
                "||" => match (left, right) {
                    (Some(l), _) if l != 0 => Some(1),
                    (_, Some(r)) if r != 0 => Some(1),
                    (Some(_), Some(_)) => Some(0),
                    _ => None,
                },
                "&&" => match (left, right) {
                    (Some(0), _) | (_, Some(0)) => Some(0),
                    (Some(_), Some(_)) => Some(1),
                    _ => None,
                },
                _ => match (left, right) {
                    (Some(l), Some(r)) => arithmetic(&op, l, r),
                    _ => None,
                },
            };
        }
    }

    fn unary(&mut self) -> Result<Value, Unreadable> {
        let t = self.peek().ok_or(Unreadable)?.clone();
        self.at += 1;
        match t.kind {
            TokenKind::Punctuator => match t.text.as_str() {
                "(" => {
                    let v = self.ternary()?;
                    if self.eat(")") {
                        Ok(v)
                    } else {
                        Err(Unreadable)
                    }
                }
                "!" => Ok(self.unary()?.map(|v| i64::from(v == 0))),
                "-" => Ok(self.unary()?.map(i64::wrapping_neg)),
                "+" => self.unary(),
                "~" => Ok(self.unary()?.map(|v| !v)),
                _ => Err(Unreadable),
            },
            TokenKind::Number => Ok(integer(&t.text)),
            TokenKind::Literal => Ok(character(&t.text)),
            TokenKind::Identifier => {
                // A name left after expansion: an unknown function-like macro's call
                // (`__has_attribute(x)`) cannot be decided; any other name is 0 (`true`
                // is 1 in C++).
                if self.eat("(") {
                    let mut depth = 1;
                    while depth > 0 {
                        let t = self.peek().ok_or(Unreadable)?;
                        if t.is_punctuator("(") {
                            depth += 1;
                        } else if t.is_punctuator(")") {
                            depth -= 1;
                        }
                        self.at += 1;
                    }
                    return Ok(None);
                }
                Ok(Some(i64::from(t.text == "true")))
            }
            _ => Err(Unreadable),
        }
    }
}

/// `l op r` for the operators other than `||` and `&&`; none for a division by zero or
/// a shift out of range.
fn arithmetic(op: &str, l: i64, r: i64) -> Value {
    Some(match op {
        "|" => l | r,
        "^" => l ^ r,
        "&" => l & r,
        "==" => i64::from(l == r),
        "!=" => i64::from(l != r),
        "<" => i64::from(l < r),
        ">" => i64::from(l > r),
        "<=" => i64::from(l <= r),
        ">=" => i64::from(l >= r),
        "<<" => l.checked_shl(u32::try_from(r).ok()?)?,
        ">>" => l.checked_shr(u32::try_from(r).ok()?)?,
        "+" => l.wrapping_add(r),
        "-" => l.wrapping_sub(r),
        "*" => l.wrapping_mul(r),
        "/" => l.checked_div(r)?,
        _ => l.checked_rem(r)?,
    })
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
        condition(&table, &HashSet::new(), &lex(expr, 0))
    }

    #[test]
    fn expressions() {
        assert_eq!(eval(&["A"], "defined A"), Some(true));
        assert_eq!(eval(&["A"], "defined(A) && !defined ( B )"), Some(true));
        assert_eq!(eval(&[], "UNKNOWN"), Some(false));
        assert_eq!(eval(&["V=3"], "V >= 2 && V < 4"), Some(true));
        assert_eq!(eval(&["V=3"], "(V << 2) == 12 ? 1 : 0"), Some(true));
        // Textual: `W * 2` is `V+1 * 2`, i.e. 4.
        assert_eq!(eval(&["W=V+1", "V=2"], "W * 2 == 4"), Some(true));
        assert_eq!(eval(&[], "0x10 - 020 + 1UL"), Some(true));
        assert_eq!(
            eval(&[], "-1 < 0 && ~0 == -1 && 7 % 4 == 3 && 'a' == 97"),
            Some(true)
        );
        assert_eq!(eval(&["F(x)=x+1"], "F(1) == 2"), Some(true));
        assert_eq!(
            eval(&[], "1 || (1/0)"),
            Some(true),
            "|| decides when one side does"
        );
        assert_eq!(
            eval(&[], "0 || (1/0)"),
            None,
            "a division by zero is not decided"
        );
        assert_eq!(
            eval(&["__clang__"], "defined(__clang__) || __has_attribute(x)"),
            Some(true)
        );
        assert_eq!(
            eval(&[], "defined(__clang__) && __has_attribute(x)"),
            Some(false)
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
    fn macros_defined_under_undecided_conditions_are_unknown() {
        let src = "#if __has_builtin(x)\n#define FAST 1\n#else\n#define FAST 0\n#endif\n\
                   #if FAST\na\n#endif\n#if !FAST\nb\n#endif\n#ifdef FAST\nc\n#endif\n";
        let e = evaluate(src, &config(&[]));
        assert_eq!(e.inactive, []);
        assert_eq!(e.undecided, 4);
        // zstd's fallback for compilers without `__has_attribute` makes it unknown too.
        let src = "#ifndef __has_attribute\n#define __has_attribute(x) 0\n#endif\n\
                   #if __has_attribute(x)\na\n#endif\n";
        let e = evaluate(src, &config(&[]));
        assert_eq!(e.inactive, []);
        assert_eq!(e.undecided, 2);
    }

    #[test]
    fn headers_take_the_union_of_the_units_including_them() {
        let header = scan("#ifdef FEATURE\nint f;\n#else\nint g;\n#endif\n");
        let with = scan("#define FEATURE\n#include \"inc/a.h\"\n");
        let without = scan("#include <a.h>\n");
        let scanned = [header.clone(), with, without, header];
        let tree = Tree {
            paths: &["inc/a.h", "m.c", "n.c", "alone.h"],
            scanned: &scanned,
        };
        let c = Configuration {
            include_dirs: vec!["./inc/".into()],
            ..Configuration::default()
        };
        let e = evaluate_tree(&tree, &c);
        assert_eq!(e[0].inactive, [], "m.c compiles line 2, n.c line 4");
        assert_eq!(
            e[3].inactive,
            [(2, 2)],
            "a header no unit includes is evaluated alone"
        );
        let without_dirs = evaluate_tree(&tree, &Configuration::default());
        assert_eq!(
            without_dirs[0].inactive,
            [(4, 4)],
            "<a.h> is not found without -I inc"
        );
    }

    #[test]
    fn the_standard_assert_is_off_under_ndebug() {
        let on = evaluate("#include <assert.h>\n", &config(&[]));
        assert!(!on.assert_dropped);
        let off = evaluate("#define NDEBUG 1\n#include <assert.h>\n", &config(&[]));
        assert!(off.assert_dropped);
        let own = evaluate(
            "#define NDEBUG 1\n#include <assert.h>\n#define assert(x) check(x)\n",
            &config(&[]),
        );
        assert!(
            !own.assert_dropped,
            "a repository's own assert is the resolver's business"
        );
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
