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
    for_each_run(text, |run| emit_run(run, &mut folded, &mut emit));
}

/// Each maximal run of letters, digits and `_` in `text`, in order.
fn for_each_run<'t>(text: &'t str, mut run: impl FnMut(&'t str)) {
    // Bytes, not `char_indices`: source code is nearly all ASCII, and a read indexes
    // hundreds of kilobytes while the agent waits.
    let mut at = 0;
    while at < text.len() {
        let (in_run, width) = class_at(text, at);
        if !in_run {
            at += width;
            continue;
        }
        let start = at;
        at += width;
        while at < text.len() {
            let (in_run, width) = class_at(text, at);
            if !in_run {
                break;
            }
            at += width;
        }
        run(&text[start..at]);
    }
}

/// Whether the character at byte `at` of `text` belongs in a run, and its width.
#[inline]
fn class_at(text: &str, at: usize) -> (bool, usize) {
    let byte = text.as_bytes()[at];
    if byte.is_ascii() {
        return (byte.is_ascii_alphanumeric() || byte == b'_', 1);
    }
    match text[at..].chars().next() {
        Some(character) => (character.is_alphanumeric(), character.len_utf8()),
        None => (false, 1),
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
    // Inside the run's outer `_`s, any `_` separates two non-empty pieces.
    let inner = run.trim_matches('_');
    let several_pieces = inner.as_bytes().contains(&b'_');
    let mut part_count = 0;
    for_each_piece(inner, |piece| {
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
    });
    if part_count > 1 {
        fold_into(run, folded);
        emit(folded, WordRole::Identifier);
    }
}

/// The non-empty `_`-separated pieces of `run`, found byte by byte: `str::split` runs a
/// character searcher that cost more than all the rest of the tokenizing. `_` is ASCII,
/// so every piece is whole characters.
fn for_each_piece<'r>(run: &'r str, mut piece: impl FnMut(&'r str)) {
    let mut start = 0;
    for (at, &byte) in run.as_bytes().iter().enumerate() {
        if byte == b'_' {
            if at > start {
                piece(&run[start..at]);
            }
            start = at + 1;
        }
    }
    if run.len() > start {
        piece(&run[start..]);
    }
}

/// Lower case without diacritics; ASCII skips the Unicode tables.
pub fn fold_into(text: &str, out: &mut String) {
    out.clear();
    if text.is_ascii() {
        out.push_str(text);
        out.make_ascii_lowercase();
        return;
    }
    fold_unicode_into(text, out);
}

/// [`fold_into`] through the Unicode tables, for any text.
fn fold_unicode_into(text: &str, out: &mut String) {
    for character in text.nfd().filter(|c| !is_combining_mark(*c)) {
        out.extend(character.to_lowercase());
    }
}

/// The parts of one `_` piece of an identifier: split at case changes (`HTTPServer` →
/// `HTTP`, `Server`; `parseHeader` → `parse`, `Header`); digits stay with their part.
fn for_each_camel_part<'p>(piece: &'p str, part: impl FnMut(&'p str)) {
    if piece.is_ascii() {
        for_each_ascii_camel_part(piece, part);
    } else {
        for_each_unicode_camel_part(piece, part);
    }
}

/// [`for_each_camel_part`] through Unicode's case properties, for any piece.
fn for_each_unicode_camel_part<'p>(piece: &'p str, mut part: impl FnMut(&'p str)) {
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

/// [`for_each_camel_part`] of an ASCII piece, on bytes: the same boundaries, without
/// decoding characters or asking the Unicode tables.
fn for_each_ascii_camel_part<'p>(piece: &'p str, mut part: impl FnMut(&'p str)) {
    let bytes = piece.as_bytes();
    let mut start = 0;
    for at in 1..bytes.len() {
        let (previous, current) = (bytes[at - 1], bytes[at]);
        let next_is_lower = bytes.get(at + 1).is_some_and(u8::is_ascii_lowercase);
        let boundary = (previous.is_ascii_lowercase() && current.is_ascii_uppercase())
            || (previous.is_ascii_uppercase() && current.is_ascii_uppercase() && next_is_lower);
        if boundary {
            part(&piece[start..at]);
            start = at;
        }
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
        assert_eq!(terms("_a__bC_ x_"), ["a", "b", "c", "bc", "_a__bc_", "x"]);
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

    /// Runs as `char_indices` finds them: the model the byte loop must match.
    fn runs_by_characters(text: &str) -> Vec<&str> {
        let mut runs = Vec::new();
        let mut run_start = None;
        for (at, character) in text.char_indices().chain([(text.len(), ' ')]) {
            let in_run = character.is_alphanumeric() || character == '_';
            match (in_run, run_start) {
                (true, None) => run_start = Some(at),
                (false, Some(start)) => {
                    runs.push(&text[start..at]);
                    run_start = None;
                }
                _ => {}
            }
        }
        runs
    }

    /// A camel splitter, called with each part.
    type Splitter = fn(&str, &mut dyn FnMut(&str));

    fn camel_parts(piece: &str, split: Splitter) -> Vec<String> {
        let mut parts = Vec::new();
        split(piece, &mut |part| parts.push(part.to_string()));
        parts
    }

    proptest::proptest! {
        #[test]
        fn the_byte_paths_match_the_character_paths(
            text in "[a-zA-Z0-9_ .é\u{301}Ωß\u{1F600}-]{0,40}",
            ascii in "[a-zA-Z0-9]{0,24}",
        ) {
            let mut runs = Vec::new();
            for_each_run(&text, |run| runs.push(run));
            proptest::prop_assert_eq!(runs, runs_by_characters(&text));
            proptest::prop_assert_eq!(
                camel_parts(&ascii, |piece, part| for_each_ascii_camel_part(piece, part)),
                camel_parts(&ascii, |piece, part| for_each_unicode_camel_part(piece, part)),
            );
            let (mut fast, mut general) = (String::new(), String::new());
            fold_into(&ascii, &mut fast);
            fold_unicode_into(&ascii, &mut general);
            proptest::prop_assert_eq!(fast, general);
        }
    }
}
