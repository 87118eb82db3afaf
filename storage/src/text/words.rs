//! Words for keyword search over free text (writable graphs' text indexes): SQLite FTS5's
//! default `unicode61` tokenizer, so that users get what they expect from a search box,
//! with one documented deviation for code.
//!
//! As in `unicode61`: token characters are Unicode letters and numbers, everything else
//! separates; tokens are case-folded and stripped of diacritics (`Déjà` → `deja`). The
//! deviation: `_` joins a run into one identifier, which is indexed as its parts (split at
//! `_` and at case changes, `parseHeader` → `parse`, `header`) and, when it has more than
//! one part, also whole (`sqlite_error`, `parseheader`); each `_` piece of several case
//! parts is indexed whole too (`parsercreate` in `XML_ParserCreate`), because that piece
//! is the token `unicode61` makes and a user searches for. The parts are the positional
//! stream phrases are matched against and what a document's length counts; the wholes
//! sit beside the first part.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// What a term of [`for_each_word`] stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WordRole {
    /// A plain word or one part of an identifier: the positional stream.
    Part,
    /// A `_` piece of several case parts, whole (`parsercreate` of `XML_ParserCreate`).
    Piece,
    /// An identifier of several parts, whole (`xml_parsercreate`).
    Identifier,
}

/// Calls `emit(term, role)` for each term of `text` in order: every part of every
/// identifier run, each `_` piece of several parts after its parts, and after a run of
/// several parts the whole run.
pub fn for_each_word(text: &str, mut emit: impl FnMut(&str, WordRole)) {
    let mut folded = String::new();
    let mut run_start: Option<usize> = None;
    for (at, character) in text.char_indices().chain([(text.len(), ' ')]) {
        let in_run = if character.is_ascii() {
            character.is_ascii_alphanumeric() || character == '_'
        } else {
            character.is_alphanumeric()
        };
        match (in_run, run_start) {
            (true, None) => run_start = Some(at),
            (false, Some(start)) => {
                emit_run(&text[start..at], &mut folded, &mut emit);
                run_start = None;
            }
            _ => {}
        }
    }
}

/// The positional terms (parts) of `text`, in order: what phrases are matched against.
pub fn word_parts(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    for_each_word(text, |term, role| {
        if role == WordRole::Part {
            parts.push(term.to_string());
        }
    });
    parts
}

fn emit_run(run: &str, folded: &mut String, emit: &mut impl FnMut(&str, WordRole)) {
    let mut pieces = run.split('_').filter(|piece| !piece.is_empty());
    let several_pieces = pieces.clone().nth(1).is_some();
    let mut part_count = 0;
    for piece in &mut pieces {
        let mut piece_parts = 0;
        for_each_camel_part(piece, |part| {
            fold_into(part, folded);
            if !folded.is_empty() {
                emit(folded, WordRole::Part);
                piece_parts += 1;
            }
        });
        part_count += piece_parts;
        // A run of one piece is the whole identifier, emitted below.
        if piece_parts > 1 && several_pieces {
            fold_into(piece, folded);
            emit(folded, WordRole::Piece);
        }
    }
    if part_count > 1 {
        fold_into(run, folded);
        emit(folded, WordRole::Identifier);
    }
}

/// Lower case without diacritics; ASCII skips the Unicode tables.
pub fn fold_into(text: &str, out: &mut String) {
    out.clear();
    if text.is_ascii() {
        out.extend(text.chars().map(|c| c.to_ascii_lowercase()));
        return;
    }
    for character in text.nfd().filter(|c| !is_combining_mark(*c)) {
        out.extend(character.to_lowercase());
    }
}

/// The parts of one `_` piece of an identifier: split at case changes (`HTTPServer` →
/// `HTTP`, `Server`; `parseHeader` → `parse`, `Header`); digits stay with their part.
fn for_each_camel_part<'p>(piece: &'p str, mut part: impl FnMut(&'p str)) {
    let mut start = 0;
    let mut characters = piece.char_indices().peekable();
    let mut previous: Option<char> = None;
    while let Some((at, current)) = characters.next() {
        if let Some(previous) = previous {
            let next_is_lower = characters
                .peek()
                .is_some_and(|(_, next)| next.is_lowercase());
            let boundary = (previous.is_lowercase() && current.is_uppercase())
                || (previous.is_uppercase() && current.is_uppercase() && next_is_lower);
            if boundary {
                part(&piece[start..at]);
                start = at;
            }
        }
        previous = Some(current);
    }
    part(&piece[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_word(text, |term, _| out.push(term.to_string()));
        out
    }

    #[test]
    fn words_are_folded_like_unicode61() {
        assert_eq!(terms("Déjà vu, ÉCOLE!"), ["deja", "vu", "ecole"]);
        assert_eq!(terms("file.rs:45"), ["file", "rs", "45"]);
        assert_eq!(terms("  "), Vec::<String>::new());
    }

    #[test]
    fn identifiers_give_their_parts_then_the_whole() {
        assert_eq!(
            terms("SQLITE_ERROR parseHeader HTTPServer utf8"),
            [
                "sqlite",
                "error",
                "sqlite_error",
                "parse",
                "header",
                "parseheader",
                "http",
                "server",
                "httpserver",
                "utf8"
            ]
        );
        assert_eq!(word_parts("a_b c"), ["a", "b", "c"]);
        assert_eq!(terms("__init__"), ["init"]);
    }

    #[test]
    fn a_piece_of_several_case_parts_is_also_indexed_whole() {
        assert_eq!(
            terms("XML_ParserCreate luaE_extendCI"),
            [
                "xml",
                "parser",
                "create",
                "parsercreate",
                "xml_parsercreate",
                "lua",
                "e",
                "luae",
                "extend",
                "ci",
                "extendci",
                "luae_extendci"
            ]
        );
        let mut roles = Vec::new();
        for_each_word("XML_ParserCreate", |_, role| roles.push(role));
        use WordRole::*;
        assert_eq!(roles, [Part, Part, Part, Piece, Identifier]);
    }
}
