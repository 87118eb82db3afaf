//! Calls that an invocation inside a function body makes through names the macro builds
//! (issue 27, item 1): a parameter in callee position (`#define APPLY(f, x) f(x)`), or a
//! pasted name. zstd's `ZSTD_searchMax` writes `ZSTD_SWITCH_SEARCH_METHOD(noDict)`, and
//! four macros later the expansion calls `ZSTD_BtFindBestMatch_noDict_4` and 59 more
//! functions whose names no source line spells.
//!
//! The resolver follows calls through macros by the names written in their bodies
//! (`resolve/expand.rs`); names that exist only once the arguments are substituted need the
//! invocation's arguments, which only extraction has. So, for each invocation (a call
//! reference of a function) of a macro of the same file that substitutes (its body, or
//! the body of a macro it names, pastes with `##` or calls a parameter), the invocation is
//! expanded and each call shape `name(` that the expansion made (no text wrote it so)
//! becomes a call reference of the function with [`ref_bits::GENERATED`], at the
//! invocation's line; a pasted name that is not called becomes a read (a function used as
//! a value). A callee the function also calls as written keeps its written reference only.

use std::collections::HashSet;

use batho_schema::NodeKind;

use super::{DefinitionsInForce, function_like_macro_names, read_invocation};
use crate::extract::preprocess::{self, Lexer, MacroDefinition, Token, TokenKind};
use crate::extract::{FileFacts, NO_ENTITY, Ref, RefKind, Sym, ref_bits};

/// References one invocation adds at most (a bound on what one line can add).
const MAX_USES_PER_INVOCATION: usize = 256;
/// How far past an invocation's name its closing parenthesis is looked for.
const MAX_INVOCATION_BYTES: usize = 64 * 1024;

/// An invocation in a function body.
struct Invocation {
    start_byte: u32,
    tokens: Vec<Token>,
    enclosing: u32,
    line: u32,
}

/// Adds the call and read references of the substituting invocations of `facts` (see the
/// module comment).
pub(super) fn add_substituted_calls(
    source: &str,
    facts: &mut FileFacts,
    definitions: &mut DefinitionsInForce,
) {
    let substituting = substituting_macros(definitions, &function_like_macro_names(facts));
    if substituting.is_empty() {
        return;
    }
    let invocations = invocations_of(facts, source, &substituting);
    let mut added = written_uses(facts);
    for invocation in invocations {
        definitions.advance_to(invocation.start_byte);
        let Ok(expansion) = preprocess::expand(&definitions.table, invocation.tokens) else {
            continue;
        };
        let found = uses(&expansion, definitions);
        for (kind, name, arity) in found.into_iter().take(MAX_USES_PER_INVOCATION) {
            if !added.insert((invocation.enclosing, kind, name.clone())) {
                continue;
            }
            let name = facts.push_str(&name);
            facts.refs.push(Ref {
                kind,
                flags: ref_bits::GENERATED,
                arity,
                enclosing: invocation.enclosing,
                name,
                qual: Sym::EMPTY,
                recv: Sym::EMPTY,
                argument: 0,
                line: invocation.line,
            });
        }
    }
}

/// The function-like macros among `names` whose expansion can build a callee's name: a
/// body that pastes (`##`) or calls a parameter, or that names such a macro.
fn substituting_macros(definitions: &DefinitionsInForce, names: &[&str]) -> HashSet<String> {
    let bodies: Vec<(&str, &MacroDefinition)> = definitions
        .events
        .iter()
        .filter_map(|e| Some((e.name.as_str(), e.definition.as_ref()?)))
        .filter(|(name, _)| names.binary_search(name).is_ok())
        .collect();
    let mut substituting: HashSet<String> = bodies
        .iter()
        .filter(|(_, definition)| builds_names(definition))
        .map(|(name, _)| (*name).to_owned())
        .collect();
    // Each round adds the macros that name one found so far; at most one round per macro.
    loop {
        let before = substituting.len();
        for (name, definition) in &bodies {
            if !substituting.contains(*name)
                && definition
                    .body
                    .iter()
                    .any(|t| t.kind == TokenKind::Identifier && substituting.contains(&t.text))
            {
                substituting.insert((*name).to_owned());
            }
        }
        if substituting.len() == before {
            return substituting;
        }
    }
}

/// Whether a body pastes, or calls one of its parameters.
fn builds_names(definition: &MacroDefinition) -> bool {
    let body = &definition.body;
    body.iter().any(|t| t.is_punctuator("##"))
        || body.windows(2).any(|pair| {
            pair[1].is_punctuator("(")
                && pair[0].kind == TokenKind::Identifier
                && definition.params.contains(&pair[0].text)
        })
}

/// The calls and reads each function writes, by name: a generated one adds nothing.
fn written_uses(facts: &FileFacts) -> HashSet<(u32, RefKind, String)> {
    facts
        .refs
        .iter()
        .filter(|r| matches!(r.kind, RefKind::Call | RefKind::Read) && r.enclosing != NO_ENTITY)
        .map(|r| (r.enclosing, r.kind, facts.str(r.name).to_owned()))
        .collect()
}

/// The invocations of `substituting` macros made in functions, in source order: the
/// `NAME(` on the lines where the function uses a name of theirs.
fn invocations_of(
    facts: &FileFacts,
    source: &str,
    substituting: &HashSet<String>,
) -> Vec<Invocation> {
    let mut sites: Vec<(u32, u32, &str)> = Vec::new();
    for (index, r) in facts.refs.iter().enumerate() {
        let name = facts.str(r.name);
        // Without its `;` an invocation may parse as a declaration (`SWITCH(fast)` is a
        // variable `fast` of type `SWITCH`): any use of the name is looked at.
        if r.kind == RefKind::Expand
            || r.enclosing == NO_ENTITY
            || !substituting.contains(name)
            || !matches!(
                facts.entities[r.enclosing as usize].kind,
                NodeKind::Function | NodeKind::Method
            )
        {
            continue;
        }
        sites.push((r.line, r.enclosing, name));
        let further = facts.sites.partition_point(|s| s.reference < index as u32);
        for site in facts.sites[further..]
            .iter()
            .take_while(|s| s.reference == index as u32)
        {
            sites.push((site.line, r.enclosing, name));
        }
    }
    if sites.is_empty() {
        return Vec::new();
    }
    let line_starts = line_starts(source);
    let mut invocations = Vec::new();
    for (line, enclosing, name) in sites {
        let Some(&start) = line_starts.get(line.saturating_sub(1) as usize) else {
            continue;
        };
        let end = line_starts
            .get(line as usize)
            .copied()
            .unwrap_or(source.len());
        for at in name_occurrences(&source[start..end], name) {
            if let Some(tokens) = invocation_tokens(source, start + at) {
                invocations.push(Invocation {
                    start_byte: (start + at) as u32,
                    tokens,
                    enclosing,
                    line,
                });
            }
        }
    }
    invocations.sort_by_key(|i| i.start_byte);
    invocations.dedup_by_key(|i| i.start_byte);
    invocations
}

fn line_starts(source: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(source.match_indices('\n').map(|(at, _)| at + 1))
        .collect()
}

/// Where `name` occurs in `line` as a whole identifier followed by `(`.
fn name_occurrences(line: &str, name: &str) -> Vec<usize> {
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    line.match_indices(name)
        .map(|(at, _)| at)
        .filter(|&at| {
            let before = at.checked_sub(1).map(|b| line.as_bytes()[b]);
            let after = line[at + name.len()..].trim_start();
            !before.is_some_and(is_word) && after.starts_with('(')
        })
        .collect()
}

/// The tokens of the invocation whose name starts at `start`, through its closing
/// parenthesis; none when it does not close within [`MAX_INVOCATION_BYTES`].
fn invocation_tokens(source: &str, start: usize) -> Option<Vec<Token>> {
    let mut tokens = Lexer::new(&source[start..], start as u32)
        .take_while(|token| token.offset as usize - start <= MAX_INVOCATION_BYTES)
        .peekable();
    let name = tokens.next()?;
    read_invocation(name, &mut tokens)
}

/// What an expansion uses that no text wrote, each with the reference kind and, for a
/// call, its argument count:
/// - the `name(` call shapes that substitution or pasting made (a shape written in the
///   function is its own reference already, and one written in a macro body is the
///   resolver's, by name, through every macro of the repository);
/// - the names pasted together and not called: functions used as values, as zstd's
///   `ZSTD_BT_GET_ALL_MATCHES_ARRAY(noDict)` lists `ZSTD_btGetAllMatches_noDict_3` to 6.
///
/// Names of the file's macros are left out (the expansion kept them because they were
/// hidden or given the wrong arguments).
fn uses(expansion: &[Token], definitions: &DefinitionsInForce) -> Vec<(RefKind, String, u8)> {
    let mut found = Vec::new();
    for (index, name) in expansion.iter().enumerate() {
        if name.kind != TokenKind::Identifier || definitions.alternatives.contains_key(&name.text) {
            continue;
        }
        match expansion.get(index + 1) {
            // A call shape written so is already a reference, and its name is never made.
            Some(open) if open.is_punctuator("(") && !open.follows_as_written(name) => {
                let arity = arity(&expansion[index + 1..]);
                found.push((RefKind::Call, name.text.clone(), arity));
            }
            _ if name.source_text == Token::MADE => {
                found.push((RefKind::Read, name.text.clone(), 0));
            }
            _ => {}
        }
    }
    found
}

/// The number of arguments of the call whose `(` begins `tokens` (255 = many).
fn arity(tokens: &[Token]) -> u8 {
    let mut depth = 0usize;
    let mut commas = 0usize;
    for (index, token) in tokens.iter().enumerate() {
        if token.is_punctuator("(") || token.is_punctuator("[") || token.is_punctuator("{") {
            depth += 1;
        } else if token.is_punctuator(")") || token.is_punctuator("]") || token.is_punctuator("}") {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                let empty = index == 1;
                return u8::try_from(if empty { 0 } else { commas + 1 }).unwrap_or(u8::MAX);
            }
        } else if depth == 1 && token.is_punctuator(",") {
            commas += 1;
        }
    }
    u8::MAX
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invocation_is_the_whole_name_before_a_parenthesis() {
        let line = "  x = SWITCH (a) + MY_SWITCH(b) + SWITCH_2(c) + SWITCH; SWITCH(d)";
        let found: Vec<&str> = name_occurrences(line, "SWITCH")
            .into_iter()
            .map(|at| line[at..].split_inclusive(')').next().unwrap_or_default())
            .collect();
        assert_eq!(found, ["SWITCH (a)", "SWITCH(d)"]);
    }

    #[test]
    fn an_invocation_ends_at_its_closing_parenthesis_or_is_not_one() {
        let source = "f(a, (b), \")\")\n + 1";
        let tokens = invocation_tokens(source, 0).expect("closes");
        assert_eq!(preprocess::render(&tokens), "f ( a , ( b ) , \")\" )");
        assert!(invocation_tokens("f(a, (b)", 0).is_none());
    }

    #[test]
    fn arity_counts_the_top_level_arguments() {
        let count = |text: &str| arity(&preprocess::lex(text, 0));
        assert_eq!(count("()"), 0);
        assert_eq!(count("(a)"), 1);
        assert_eq!(count("(a, g(b, c), {d, e}, x[1, 2])"), 4);
        assert_eq!(count("(a, b"), u8::MAX);
    }
}
