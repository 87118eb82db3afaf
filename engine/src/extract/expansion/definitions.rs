//! Functions defined by file-scope macro invocations (issue 27, item 2).
//!
//! zstd writes `ZSTD_GEN_DFAST_FN(noDict, 4)` at file scope, and the macro's body, pasted
//! with `##`, defines `ZSTD_compressBlock_doubleFast_noDict_4`; cpu.h defines 85
//! `ZSTD_cpuid_*` predicates through `C(sse3, 0)`. A parse of the file sees the
//! invocation, not the function, so the function had no node and its callers no edge.
//!
//! This pass finds such invocations, expands them, parses the expansion and adds the
//! function *definitions* found in it to the file's facts: located at the invocation
//! (lines and bytes), with [`entity_bits::GENERATED`] (their `CONTAINS` edge has the
//! `Generated` role), with the references of their bodies, so that what they call is
//! called by them, and with a reference to the macro invoked.
//!
//! - Only invocations that begin a top-level node of the parse tree (or follow another
//!   such invocation in it) count: file scope, `#if` blocks and `extern "C"` blocks. A
//!   node is checked by its first identifier, so the tree is not lexed again.
//! - Every `#define` of the invoked macro that no `#undef` ended counts: zstd's
//!   `HUF_DGEN` has one definition for builds with BMI2 dispatch and one without, and a
//!   function either one defines exists in some configuration (nested macros use their
//!   latest definition).
//! - A generated function that the file also defines as written is left to the written
//!   one; generated prototypes are left out.

use std::collections::HashSet;
use std::iter::Peekable;

use batho_schema::{Language, NodeFlags, NodeKind};
use tree_sitter::{Node, Tree};

use super::{DefinitionsInForce, function_like_macro_names, read_invocation};
use crate::extract::preprocess::{self, Lexer, Token, TokenKind};
use crate::extract::{Entity, FileFacts, Lang, NO_ENTITY, Ref, RefKind, Sym, entity_bits, walk};

/// An invocation found at file scope: its tokens and where it is.
struct Invocation {
    tokens: Vec<Token>,
    start_byte: u32,
    end_byte: u32,
    start_line: u32,
    end_line: u32,
}

/// The file-scope invocations of a file whose expansions define functions, with those
/// expansions as text.
pub(super) struct Generators {
    found: Vec<(Invocation, Vec<String>)>,
}

/// Finds the invocations of `source` (parsed as `tree`, walked into `facts`) whose
/// expansion defines a function; none for the files that have none, nearly all.
pub(super) fn find(
    lang: &Lang,
    source: &str,
    tree: &Tree,
    facts: &FileFacts,
    definitions: &mut DefinitionsInForce,
) -> Option<Generators> {
    let names = function_like_macro_names(facts);
    if names.is_empty() {
        return None;
    }
    let mut candidates = Vec::new();
    collect_candidates(
        &lang.table,
        tree.root_node(),
        source,
        &names,
        &mut candidates,
    );
    if candidates.is_empty() {
        return None;
    }
    let mut found = Vec::new();
    for invocation in invocations_in(&candidates, source, &names) {
        definitions.advance_to(invocation.start_byte);
        let texts = expansions(definitions, &invocation);
        if !texts.is_empty() {
            found.push((invocation, texts));
        }
    }
    (!found.is_empty()).then_some(Generators { found })
}

impl Generators {
    /// Walks `source` again with the invocations blanked out. To the parser an invocation
    /// without its `;` glues itself to the code after it: zstd's
    /// `GEN_ZSTD_BT_GET_ALL_MATCHES(dictMatchState)` swallowed the next definition,
    /// `ZSTD_selectBtGetAllMatches`. Blanks keep every offset and line.
    pub(super) fn walk_without_invocations(
        &self,
        lang: &mut Lang,
        path: &str,
        language: Language,
        source: &str,
        arguments: bool,
    ) -> FileFacts {
        let mut blanked = source.as_bytes().to_vec();
        for (invocation, _) in &self.found {
            let range = invocation.start_byte as usize..invocation.end_byte as usize;
            for byte in &mut blanked[range] {
                if !matches!(*byte, b'\n' | b'\r') {
                    *byte = b' ';
                }
            }
        }
        // Only ASCII bytes of whole tokens were replaced by ASCII, so the text stays UTF-8.
        let blanked = String::from_utf8(blanked).unwrap_or_else(|_| source.to_owned());
        let mut facts = FileFacts::unwalked(path, language, source);
        if let Some(tree) = lang.parser.parse(&blanked, None) {
            walk::walk(
                &lang.table,
                language,
                &blanked,
                &tree,
                &mut facts,
                arguments,
            );
        }
        facts
    }

    /// Adds the function definitions of the expansions to `facts`, each with a reference
    /// to the macro invoked: an `EXPANDS` edge, not a call, since what the function calls
    /// is already read from its expansion.
    pub(super) fn add_definitions(
        &self,
        lang: &mut Lang,
        language: Language,
        facts: &mut FileFacts,
    ) {
        let mut defined = defined_functions(facts);
        for (invocation, texts) in &self.found {
            for text in texts {
                let Some(tree) = lang.parser.parse(text, None) else {
                    continue;
                };
                let mut fragment = FileFacts::path_only(&facts.path, language);
                walk::walk(&lang.table, language, text, &tree, &mut fragment, false);
                merge(fragment, invocation, &mut defined, facts);
            }
        }
    }
}

/// The top-level nodes that begin with the name of one of `names` (sorted): file scope,
/// and inside `#if` and `extern "C"` blocks.
fn collect_candidates<'tree>(
    kinds: &crate::extract::kinds::KindTable,
    node: Node<'tree>,
    source: &str,
    names: &[&str],
    out: &mut Vec<Node<'tree>>,
) {
    use crate::extract::kinds::SyntaxKind;
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        match kinds.of(&child) {
            SyntaxKind::PreprocIf
            | SyntaxKind::PreprocElse
            | SyntaxKind::LinkageSpecification
            | SyntaxKind::DeclarationList => {
                collect_candidates(kinds, child, source, names, out);
            }
            SyntaxKind::PreprocDef
            | SyntaxKind::PreprocFunctionDef
            | SyntaxKind::PreprocInclude
            | SyntaxKind::PreprocCall => {}
            _ => {
                let text = &source[child.start_byte()..child.end_byte()];
                let word_end = text
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(text.len());
                if names.binary_search(&&text[..word_end]).is_ok() {
                    out.push(child);
                }
            }
        }
    }
}

/// The invocations each candidate node begins with: `NAME ( … )` of a name in `names`,
/// one after another, until a token that begins none. The node is lexed only that far.
fn invocations_in(candidates: &[Node<'_>], source: &str, names: &[&str]) -> Vec<Invocation> {
    let mut invocations = Vec::new();
    for node in candidates {
        let text = &source[node.start_byte()..node.end_byte()];
        let mut tokens = Lexer::new(text, node.start_byte() as u32).peekable();
        while let Some(tokens) = next_invocation(&mut tokens, names) {
            let (Some(first), Some(last)) = (tokens.first(), tokens.last()) else {
                break;
            };
            let (start_byte, end_byte) = (first.offset, last.offset + last.text.len() as u32);
            invocations.push(Invocation {
                tokens,
                start_byte,
                end_byte,
                start_line: line_of(source, node, start_byte),
                end_line: line_of(source, node, end_byte),
            });
        }
    }
    invocations
}

/// The invocation the lexer is at, through its closing parenthesis, if it is at one.
fn next_invocation(tokens: &mut Peekable<Lexer<'_>>, names: &[&str]) -> Option<Vec<Token>> {
    let name = tokens.next_if(|name| {
        name.kind == TokenKind::Identifier && names.binary_search(&name.text.as_str()).is_ok()
    })?;
    read_invocation(name, tokens)
}

/// The 1-based line of `byte`, which lies in `node`.
fn line_of(source: &str, node: &Node<'_>, byte: u32) -> u32 {
    let from = node.start_byte();
    let to = (byte as usize).clamp(from, source.len());
    let newlines = source.as_bytes()[from..to]
        .iter()
        .filter(|&&b| b == b'\n')
        .count();
    node.start_position().row as u32 + 1 + newlines as u32
}

/// The expansion of `invocation` under each definition of its macro in force, as text;
/// nothing for those that define no function body.
fn expansions(definitions: &mut DefinitionsInForce, invocation: &Invocation) -> Vec<String> {
    let name = invocation.tokens[0].text.as_str();
    let Some(alternatives) = definitions.alternatives.get(name) else {
        return Vec::new();
    };
    let table = &mut definitions.table;
    let mut texts = Vec::new();
    for definition in alternatives {
        table.define(name, definition.clone());
        if let Ok(tokens) = preprocess::expand(table, invocation.tokens.clone())
            && tokens.iter().any(|t| t.is_punctuator("{"))
        {
            texts.push(preprocess::render(&tokens));
        }
    }
    if let Some(latest) = alternatives.last() {
        table.define(name, latest.clone());
    }
    texts.dedup();
    texts
}

/// The functions and methods `facts` defines (prototypes aside), by kind and qualified
/// name.
fn defined_functions(facts: &FileFacts) -> HashSet<(NodeKind, String)> {
    facts
        .entities
        .iter()
        .filter(|e| {
            matches!(e.kind, NodeKind::Function | NodeKind::Method)
                && !e.flags.contains(NodeFlags::DECLARATION_ONLY)
        })
        .map(|e| (e.kind, facts.str(e.qual).to_owned()))
        .collect()
}

/// Moves the function definitions of `fragment` that `defined` does not hold yet, and the
/// references made in them, into `facts`, located at `invocation`.
fn merge(
    fragment: FileFacts,
    invocation: &Invocation,
    defined: &mut HashSet<(NodeKind, String)>,
    facts: &mut FileFacts,
) {
    let mut new_index = vec![NO_ENTITY; fragment.entities.len()];
    for (index, entity) in fragment.entities.iter().enumerate() {
        let is_function = matches!(entity.kind, NodeKind::Function | NodeKind::Method);
        let name = fragment.str(entity.qual);
        if !is_function
            || entity.flags.contains(NodeFlags::DECLARATION_ONLY)
            || !defined.insert((entity.kind, name.to_owned()))
        {
            continue;
        }
        new_index[index] = facts.entities.len() as u32;
        let moved = Entity {
            name: facts.push_str(fragment.str(entity.name)),
            qual: facts.push_str(name),
            type_name: facts.push_str(fragment.str(entity.type_name)),
            signature: facts.push_str(fragment.str(entity.signature)),
            doc: Sym::EMPTY,
            parent: NO_ENTITY,
            bits: entity.bits | entity_bits::GENERATED,
            start_line: invocation.start_line,
            end_line: invocation.end_line,
            start_byte: invocation.start_byte,
            end_byte: invocation.end_byte,
            ..entity.clone()
        };
        facts.entities.push(moved);
        let macro_name = facts.push_str(&invocation.tokens[0].text);
        facts.refs.push(Ref {
            kind: RefKind::Expand,
            flags: 0,
            arity: 0,
            enclosing: new_index[index],
            name: macro_name,
            qual: Sym::EMPTY,
            recv: Sym::EMPTY,
            argument: 0,
            line: invocation.start_line,
        });
    }
    for reference in &fragment.refs {
        let Some(enclosing) = kept_ancestor(&fragment, &new_index, reference.enclosing) else {
            continue;
        };
        let moved = Ref {
            enclosing,
            name: facts.push_str(fragment.str(reference.name)),
            qual: facts.push_str(fragment.str(reference.qual)),
            recv: facts.push_str(fragment.str(reference.recv)),
            line: invocation.start_line,
            ..*reference
        };
        facts.refs.push(moved);
    }
}

/// The merged index of `entity` or of its nearest merged ancestor in `fragment`.
fn kept_ancestor(fragment: &FileFacts, new_index: &[u32], mut entity: u32) -> Option<u32> {
    while entity != NO_ENTITY {
        let index = entity as usize;
        if new_index[index] != NO_ENTITY {
            return Some(new_index[index]);
        }
        entity = fragment.entities[index].parent;
    }
    None
}
