//! A C preprocessor's macro expansion (C11 6.10.3), for the invocations whose expansion
//! the extractor must read as code: a file-scope `ZSTD_GEN_DFAST_FN(noDict, 4)` that
//! defines `ZSTD_compressBlock_doubleFast_noDict_4`, or a `SWITCH(noDict)` in a body that
//! calls functions named by pasting (see [`super::expansion`]).
//!
//! The algorithm is Dave Prosser's, the one the standard's rules were written from: each
//! token carries a hide set, the macros it came out of, and a name in its own hide set is
//! not expanded again, which ends recursion without the depth guesses of simpler
//! expanders. Arguments are fully expanded before substitution unless an operand of `#`
//! or `##`; `##` works on placemarkers for empty arguments (6.10.3.3); `__VA_ARGS__`, GNU's
//! named variadic parameter (`args...`) and its `, ## __VA_ARGS__` comma elision are
//! supported. The result is rescanned with the rest of the input, so a macro whose
//! expansion ends in a function-like macro's name takes its arguments from what follows.
//!
//! Conditionals, `#include` and `defined` are not this module's business: the caller
//! says which definitions are in force. Expansion is bounded ([`MAX_REPLACEMENTS`],
//! [`MAX_TOKENS`]) because a few lines of macros can describe an exponential text.

mod lexer;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

pub(crate) use lexer::{Lexer, Token, TokenKind, lex};

/// Macro replacements one expansion may make at most.
pub(crate) const MAX_REPLACEMENTS: usize = 20_000;
/// Tokens one expansion may produce at most.
pub(crate) const MAX_TOKENS: usize = 400_000;

/// A macro definition.
#[derive(Clone, Debug)]
pub(crate) struct MacroDefinition {
    /// `#define NAME(…)` rather than `#define NAME …`.
    pub(crate) function_like: bool,
    /// Parameter names; the variadic one last (`__VA_ARGS__`, or GNU's `args` of `args...`).
    pub(crate) params: Vec<String>,
    pub(crate) variadic: bool,
    /// The replacement list.
    pub(crate) body: Vec<Token>,
}

impl MacroDefinition {
    /// Reads the text of a `#define` directive (the `#` to the end of its last line); none
    /// for text that is not one.
    pub(crate) fn parse(directive: &str) -> Option<(String, MacroDefinition)> {
        let tokens = lex(directive, 0);
        let [hash, define, name, rest @ ..] = tokens.as_slice() else {
            return None;
        };
        if !hash.is_punctuator("#") || define.text != "define" || name.kind != TokenKind::Identifier
        {
            return None;
        }
        let function_like = rest
            .first()
            .is_some_and(|open| open.is_punctuator("(") && !open.space_before);
        let (params, variadic, body) = if function_like {
            parse_parameters(&rest[1..])?
        } else {
            (Vec::new(), false, rest)
        };
        let mut body = body.to_vec();
        if let Some(first) = body.first_mut() {
            first.space_before = false;
        }
        let definition = MacroDefinition {
            function_like,
            params,
            variadic,
            body,
        };
        Some((name.text.clone(), definition))
    }

    fn parameter_index(&self, token: &Token) -> Option<usize> {
        if !self.function_like || token.kind != TokenKind::Identifier {
            return None;
        }
        self.params.iter().position(|param| *param == token.text)
    }

    fn is_variadic_parameter(&self, index: usize) -> bool {
        self.variadic && index + 1 == self.params.len()
    }
}

/// Parses `a, b, ...)` (the tokens after the `(`): the parameters, whether variadic, and
/// the replacement list after the `)`.
fn parse_parameters(tokens: &[Token]) -> Option<(Vec<String>, bool, &[Token])> {
    let mut params = Vec::new();
    let mut variadic = false;
    let mut at = 0;
    loop {
        let token = tokens.get(at)?;
        at += 1;
        match token.kind {
            TokenKind::Punctuator if token.text == ")" => {
                return Some((params, variadic, &tokens[at..]));
            }
            TokenKind::Punctuator if token.text == "," => {}
            TokenKind::Punctuator if token.text == "..." => {
                params.push("__VA_ARGS__".to_owned());
                variadic = true;
            }
            TokenKind::Identifier if tokens.get(at).is_some_and(|t| t.is_punctuator("...")) => {
                params.push(token.text.clone());
                variadic = true;
                at += 1;
            }
            TokenKind::Identifier => params.push(token.text.clone()),
            _ => return None,
        }
    }
}

/// The definitions in force, by name; each name has an id that hide sets hold.
#[derive(Default, Debug)]
pub(crate) struct MacroTable {
    ids: HashMap<String, u32>,
    definitions: Vec<Option<MacroDefinition>>,
    /// How many definitions were made: each numbers its replacement list's tokens
    /// ([`Token::source_text`]).
    defined: u32,
}

impl MacroTable {
    /// Defines (or redefines) `name`.
    pub(crate) fn define(&mut self, name: &str, mut definition: MacroDefinition) {
        self.defined += 1;
        for token in &mut definition.body {
            token.source_text = self.defined;
        }
        let id = self.id(name);
        self.definitions[id as usize] = Some(definition);
    }

    /// `#undef name`.
    pub(crate) fn undefine(&mut self, name: &str) {
        if let Some(&id) = self.ids.get(name) {
            self.definitions[id as usize] = None;
        }
    }

    /// The replacement list of macro `name`, when it is defined.
    pub(crate) fn body_of(&self, name: &str) -> Option<&[Token]> {
        let id = *self.ids.get(name)?;
        self.definitions[id as usize].as_ref().map(|d| &d.body[..])
    }

    /// Whether `name` is defined.
    pub(crate) fn is_defined(&self, name: &str) -> bool {
        self.ids
            .get(name)
            .is_some_and(|&id| self.definitions[id as usize].is_some())
    }

    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.definitions.len() as u32;
        self.ids.insert(name.to_owned(), id);
        self.definitions.push(None);
        id
    }

    fn lookup(&self, token: &Token) -> Option<(u32, &MacroDefinition)> {
        if token.kind != TokenKind::Identifier {
            return None;
        }
        let id = *self.ids.get(&token.text)?;
        Some((id, self.definitions[id as usize].as_ref()?))
    }
}

/// Why an expansion was given up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExpansionError {
    /// More than [`MAX_REPLACEMENTS`] replacements or [`MAX_TOKENS`] tokens.
    TooLarge,
}

/// Expands every macro invocation in `tokens` with the definitions of `table`.
pub(crate) fn expand(table: &MacroTable, tokens: Vec<Token>) -> Result<Vec<Token>, ExpansionError> {
    Expander {
        table,
        replacements: 0,
    }
    .expand(tokens)
}

/// Spells tokens as source text that parses as they do: one space between tokens.
pub(crate) fn render(tokens: &[Token]) -> String {
    let mut text = String::with_capacity(tokens.iter().map(|t| t.text.len() + 1).sum());
    for (index, token) in tokens.iter().enumerate() {
        if index > 0 {
            text.push(' ');
        }
        text.push_str(&token.text);
    }
    text
}

struct Expander<'table> {
    table: &'table MacroTable,
    replacements: usize,
}

/// An invocation's arguments as written, and the hide set of its closing parenthesis.
struct Invocation {
    arguments: Vec<Vec<Token>>,
    closing_hidden: Vec<u32>,
}

impl Expander<'_> {
    fn expand(&mut self, tokens: Vec<Token>) -> Result<Vec<Token>, ExpansionError> {
        // The input as a stack, next token last: a replacement is pushed back to be
        // rescanned with what follows it.
        let mut pending: Vec<Token> = tokens.into_iter().rev().collect();
        let mut output = Vec::new();
        while let Some(token) = pending.pop() {
            if output.len() + pending.len() > MAX_TOKENS {
                return Err(ExpansionError::TooLarge);
            }
            let Some((id, definition)) = self.table.lookup(&token) else {
                output.push(token);
                continue;
            };
            if token.hidden.binary_search(&id).is_ok() {
                output.push(token);
                continue;
            }
            let replacement = if definition.function_like {
                match take_invocation(&mut pending, definition) {
                    Some(invocation) => {
                        let hidden =
                            with(&intersection(&token.hidden, &invocation.closing_hidden), id);
                        self.substitute(definition, &invocation.arguments, &hidden)?
                    }
                    None => {
                        output.push(token);
                        continue;
                    }
                }
            } else {
                self.substitute(definition, &[], &with(&token.hidden, id))?
            };
            self.replacements += 1;
            if self.replacements > MAX_REPLACEMENTS {
                return Err(ExpansionError::TooLarge);
            }
            let mut replacement = replacement;
            if let Some(first) = replacement.first_mut() {
                first.space_before = token.space_before;
            }
            pending.extend(replacement.into_iter().rev());
        }
        Ok(output)
    }

    /// The replacement list with the arguments substituted, `#` and `##` applied, and
    /// `hidden` added to every token's hide set.
    fn substitute(
        &mut self,
        definition: &MacroDefinition,
        arguments: &[Vec<Token>],
        hidden: &[u32],
    ) -> Result<Vec<Token>, ExpansionError> {
        let body = &definition.body;
        let mut substitution = Substitution {
            definition,
            arguments,
            expanded: vec![None; arguments.len()],
            output: Vec::with_capacity(body.len()),
        };
        let mut at = 0;
        while at < body.len() {
            let token = &body[at];
            let next_parameter = body
                .get(at + 1)
                .and_then(|next| definition.parameter_index(next));
            at += match (token.text.as_str(), next_parameter) {
                ("#", Some(index)) if definition.function_like => {
                    let stringized = stringize(&arguments[index], token.space_before);
                    substitution.output.push(stringized);
                    2
                }
                ("##", _)
                    if token.kind == TokenKind::Punctuator && at > 0 && at + 1 < body.len() =>
                {
                    substitution.paste_operand(&body[at + 1], next_parameter);
                    2
                }
                _ => {
                    let pasted_next = body.get(at + 1).is_some_and(|t| t.is_punctuator("##"));
                    substitution.token(self, token, pasted_next)?;
                    1
                }
            };
            // A parameter used many times copies its argument as often: bound the copies
            // here, before the rescan would see them.
            if substitution.output.len() > MAX_TOKENS {
                return Err(ExpansionError::TooLarge);
            }
        }
        let mut output = substitution.output;
        output.retain(|t| t.kind != TokenKind::Placemarker);
        for token in &mut output {
            token.hidden = union(&token.hidden, hidden);
        }
        Ok(output)
    }
}

/// One replacement list being substituted.
struct Substitution<'d> {
    definition: &'d MacroDefinition,
    arguments: &'d [Vec<Token>],
    /// Each argument fully expanded, once it is needed.
    expanded: Vec<Option<Vec<Token>>>,
    output: Vec<Token>,
}

impl Substitution<'_> {
    /// `## operand`: pastes the operand (a parameter's argument as written, or a
    /// placemarker for an empty one) onto the output's last token.
    fn paste_operand(&mut self, operand: &Token, parameter: Option<usize>) {
        let right = match parameter {
            Some(index) => {
                let argument = &self.arguments[index];
                let after_comma = self.output.last().is_some_and(|t| t.is_punctuator(","));
                if self.definition.is_variadic_parameter(index) && after_comma {
                    // GNU: `, ## __VA_ARGS__` drops the comma when there is nothing to
                    // separate, and pastes nothing otherwise.
                    if argument.is_empty() {
                        self.output.pop();
                    }
                    self.output.extend(argument.iter().cloned());
                    return;
                }
                or_placemarker(argument)
            }
            None => vec![operand.clone()],
        };
        paste(&mut self.output, right);
    }

    /// A token of the list: a parameter becomes its argument (as written before `##`,
    /// fully expanded elsewhere), any other token is copied.
    fn token(
        &mut self,
        expander: &mut Expander<'_>,
        token: &Token,
        pasted_next: bool,
    ) -> Result<(), ExpansionError> {
        let Some(index) = self.definition.parameter_index(token) else {
            self.output.push(token.clone());
            return Ok(());
        };
        let mut substituted = if pasted_next {
            or_placemarker(&self.arguments[index])
        } else {
            if self.expanded[index].is_none() {
                self.expanded[index] = Some(expander.expand(self.arguments[index].clone())?);
            }
            self.expanded[index].clone().unwrap_or_default()
        };
        if let Some(first) = substituted.first_mut() {
            first.space_before = token.space_before;
        }
        self.output.extend(substituted);
        Ok(())
    }
}

/// Takes `( arguments )` off the input when it comes next; leaves the input as it was
/// when it does not, or when the invocation is unterminated or has the wrong number of
/// arguments (a compiler would reject it; an index goes on).
fn take_invocation(pending: &mut Vec<Token>, definition: &MacroDefinition) -> Option<Invocation> {
    if !pending.last()?.is_punctuator("(") {
        return None;
    }
    let mut taken = vec![pending.pop()?];
    let mut arguments = vec![Vec::new()];
    let mut depth = 0usize;
    let closing_hidden = loop {
        let Some(token) = pending.pop() else {
            pending.extend(taken.into_iter().rev());
            return None;
        };
        taken.push(token.clone());
        if token.is_punctuator("(") {
            depth += 1;
        } else if token.is_punctuator(")") {
            if depth == 0 {
                break token.hidden;
            }
            depth -= 1;
        } else if token.is_punctuator(",") && depth == 0 {
            let gathers_rest = definition.variadic && arguments.len() == definition.params.len();
            if !gathers_rest {
                arguments.push(Vec::new());
                continue;
            }
        }
        arguments.last_mut()?.push(token);
    };
    match fit_arguments(arguments, definition) {
        Some(arguments) => Some(Invocation {
            arguments,
            closing_hidden,
        }),
        None => {
            pending.extend(taken.into_iter().rev());
            None
        }
    }
}

/// Checks the argument count: `f()` passes one empty argument, or none to a macro of no
/// parameters; a variadic macro may be given nothing for its `...`.
fn fit_arguments(
    mut arguments: Vec<Vec<Token>>,
    definition: &MacroDefinition,
) -> Option<Vec<Vec<Token>>> {
    let wanted = definition.params.len();
    if wanted == 0 && arguments.len() == 1 && arguments[0].is_empty() {
        return Some(Vec::new());
    }
    if definition.variadic && arguments.len() + 1 == wanted {
        arguments.push(Vec::new());
    }
    (arguments.len() == wanted).then_some(arguments)
}

fn or_placemarker(argument: &[Token]) -> Vec<Token> {
    if argument.is_empty() {
        vec![Token::made(TokenKind::Placemarker, String::new(), false)]
    } else {
        argument.to_vec()
    }
}

/// `##`: the last token of `output` and the first of `right` become one token.
fn paste(output: &mut Vec<Token>, right: Vec<Token>) {
    let mut right = right.into_iter();
    let Some(first) = right.next() else {
        return;
    };
    let pasted = match output.pop() {
        None => first,
        Some(left) if left.kind == TokenKind::Placemarker => Token {
            space_before: left.space_before,
            ..first
        },
        Some(left) if first.kind == TokenKind::Placemarker => left,
        Some(left) => {
            let text = format!("{}{}", left.text, first.text);
            let kind = lexer::single_kind(&text);
            Token {
                kind,
                text,
                source_text: Token::MADE,
                ..left
            }
        }
    };
    output.push(pasted);
    output.extend(right);
}

/// `#`: the argument spelled as a string literal (6.10.3.2): whitespace between tokens
/// becomes one space, and `"` and `\` inside literals are escaped.
fn stringize(argument: &[Token], space_before: bool) -> Token {
    let mut text = String::from("\"");
    for (index, token) in argument.iter().enumerate() {
        if index > 0 && token.space_before {
            text.push(' ');
        }
        if token.kind == TokenKind::Literal {
            for ch in token.text.chars() {
                if ch == '"' || ch == '\\' {
                    text.push('\\');
                }
                text.push(ch);
            }
        } else {
            text.push_str(&token.text);
        }
    }
    text.push('"');
    Token::made(TokenKind::Literal, text, space_before)
}

fn with(set: &[u32], id: u32) -> Vec<u32> {
    union(set, &[id])
}

fn union(left: &[u32], right: &[u32]) -> Vec<u32> {
    let mut set: Vec<u32> = left.iter().chain(right).copied().collect();
    set.sort_unstable();
    set.dedup();
    set
}

fn intersection(left: &[u32], right: &[u32]) -> Vec<u32> {
    left.iter()
        .copied()
        .filter(|id| right.binary_search(id).is_ok())
        .collect()
}
