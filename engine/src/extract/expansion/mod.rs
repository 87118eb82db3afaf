//! What a file's own macros make once expanded (issue 27): the functions that file-scope
//! invocations define ([`definitions`]), and the calls that invocations inside function
//! bodies make through substituted and pasted names ([`calls`]).
//!
//! Both expand with [`super::preprocess`] and only the macros defined in the same file,
//! in force where the invocation is (`#undef` honoured). Generator macros are local by
//! nature (every one of zstd's is), and a file that defines no function-like macro costs
//! one pass over its entities. Calls through macros of other files are the resolver's
//! (`resolve/expand.rs`), by the names written in their bodies.

mod calls;
mod definitions;

use std::collections::HashMap;
use std::iter::Peekable;

use batho_schema::{Language, NodeKind};
use tree_sitter::Tree;

use super::preprocess::{MacroDefinition, MacroTable, Token};
use super::{Entity, FileFacts, Lang, entity_bits};

/// Adds to `facts` (the walk of `source`, parsed as `tree`) what the file's macros make.
/// A file with generator invocations is walked again with them blanked out (see
/// [`definitions::Generators::walk_without_invocations`]).
pub(super) fn add_expansions(
    lang: &mut Lang,
    language: Language,
    source: &str,
    tree: &Tree,
    facts: &mut FileFacts,
    arguments: bool,
) {
    if !facts.entities.iter().any(is_function_like_macro) {
        return;
    }
    // Read once for both passes: blanking invocations leaves every directive in place.
    let mut in_force = DefinitionsInForce::of(facts, source);
    if let Some(generators) = definitions::find(lang, source, tree, facts, &mut in_force) {
        *facts =
            generators.walk_without_invocations(lang, &facts.path, language, source, arguments);
        generators.add_definitions(lang, language, facts);
    }
    in_force.restart();
    calls::add_substituted_calls(source, facts, &mut in_force);
}

fn is_function_like_macro(e: &Entity) -> bool {
    e.kind == NodeKind::Macro && e.bits & entity_bits::FUNCTION_LIKE != 0
}

/// Reads an invocation of `name` from `tokens`: `(`, then through the matching `)`; none
/// when `(` does not come next or the parentheses never close.
fn read_invocation(
    name: Token,
    tokens: &mut Peekable<impl Iterator<Item = Token>>,
) -> Option<Vec<Token>> {
    let mut invocation = vec![name, tokens.next_if(|open| open.is_punctuator("("))?];
    let mut depth = 1usize;
    for token in tokens.by_ref() {
        if token.is_punctuator("(") {
            depth += 1;
        } else if token.is_punctuator(")") {
            depth -= 1;
        }
        invocation.push(token);
        if depth == 0 {
            return Some(invocation);
        }
    }
    None
}

/// The names of the function-like macros the file defines, sorted.
fn function_like_macro_names(facts: &FileFacts) -> Vec<&str> {
    let mut names: Vec<&str> = facts
        .entities
        .iter()
        .filter(|e| is_function_like_macro(e))
        .map(|e| facts.str(e.name))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// A `#define` or `#undef` of the file.
struct MacroEvent {
    byte: u32,
    name: String,
    /// None for `#undef`.
    definition: Option<MacroDefinition>,
}

/// The file's macro definitions as they stand at a point of the file, moved forward
/// through its `#define`s and `#undef`s in source order.
struct DefinitionsInForce {
    events: Vec<MacroEvent>,
    next_event: usize,
    table: MacroTable,
    /// Every definition of a name since its last `#undef`: `#if` alternatives.
    alternatives: HashMap<String, Vec<MacroDefinition>>,
}

impl DefinitionsInForce {
    /// The file's `#define`s (from its macro entities) and `#undef`s (from its lines).
    fn of(facts: &FileFacts, source: &str) -> DefinitionsInForce {
        let mut events: Vec<MacroEvent> = facts
            .entities
            .iter()
            .filter(|e| e.kind == NodeKind::Macro)
            .filter_map(|e| {
                let text = source.get(e.start_byte as usize..e.end_byte as usize)?;
                let (name, definition) = MacroDefinition::parse(text)?;
                Some(MacroEvent {
                    byte: e.start_byte,
                    name,
                    definition: Some(definition),
                })
            })
            .collect();
        events.extend(undefines(source));
        events.sort_by_key(|e| e.byte);
        DefinitionsInForce {
            events,
            next_event: 0,
            table: MacroTable::default(),
            alternatives: HashMap::new(),
        }
    }

    /// Back to the start of the file, nothing defined.
    fn restart(&mut self) {
        self.next_event = 0;
        self.table = MacroTable::default();
        self.alternatives.clear();
    }

    /// Applies the definitions before `byte` (which never goes backwards, but for a
    /// [`Self::restart`]).
    fn advance_to(&mut self, byte: u32) {
        while let Some(event) = self.events.get(self.next_event).filter(|e| e.byte < byte) {
            match &event.definition {
                Some(definition) => {
                    self.table.define(&event.name, definition.clone());
                    self.alternatives
                        .entry(event.name.clone())
                        .or_default()
                        .push(definition.clone());
                }
                None => {
                    self.table.undefine(&event.name);
                    self.alternatives.remove(&event.name);
                }
            }
            self.next_event += 1;
        }
    }
}

/// The `#undef` lines of `source`.
fn undefines(source: &str) -> Vec<MacroEvent> {
    let mut events = Vec::new();
    let mut byte = 0u32;
    for line in source.split_inclusive('\n') {
        let directive = line.trim_start().strip_prefix('#').map(str::trim_start);
        if let Some(rest) = directive.and_then(|d| d.strip_prefix("undef")) {
            let name = rest
                .trim()
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()
                .filter(|name| !name.is_empty());
            if let Some(name) = name {
                events.push(MacroEvent {
                    byte,
                    name: name.to_owned(),
                    definition: None,
                });
            }
        }
        byte = byte.saturating_add(line.len() as u32);
    }
    events
}
