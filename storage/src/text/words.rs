//! Words for keyword search over free text (writable graphs' text indexes): SQLite FTS5's
//! default `unicode61` tokenizer, so that users get what they expect from a search box,
//! with one documented deviation for code.
//!
//! As in `unicode61`: token characters are Unicode letters and numbers, everything else
//! separates; tokens are case-folded and stripped of diacritics (`Déjà` → `deja`). The
//! deviation: `_` joins a run into one identifier, which is indexed as its parts (split at
//! `_` and at case changes, `parseHeader` → `parse`, `header`) and, when it has more than
//! one part, also whole (`sqlite_error`, `parseheader`). The parts are the positional
//! stream phrases are matched against; the whole identifier sits beside its first part.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Calls `emit(term, is_part)` for each term of `text` in order: every part of every
/// identifier run (`is_part`), and after a run of several parts the whole run
/// (`!is_part`).
pub fn for_each_word(text: &str, mut emit: impl FnMut(&str, bool)) {
    let mut folded = String::new();
    let mut run_start: Option<usize> = None;
    for (at, character) in text.char_indices().chain([(text.len(), ' ')]) {
        let in_run = character.is_alphanumeric() || character == '_';
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
    for_each_word(text, |term, is_part| {
        if is_part {
            parts.push(term.to_string());
        }
    });
    parts
}

fn emit_run(run: &str, folded: &mut String, emit: &mut impl FnMut(&str, bool)) {
    let mut part_count = 0;
    for part in identifier_parts(run) {
        fold_into(part, folded);
        if !folded.is_empty() {
            emit(folded, true);
            part_count += 1;
        }
    }
    if part_count > 1 {
        fold_into(run, folded);
        emit(folded, false);
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

/// The parts of an identifier run: split at `_` and at case changes (`HTTPServer` →
/// `HTTP`, `Server`; `parseHeader` → `parse`, `Header`); digits stay with their part.
fn identifier_parts(run: &str) -> impl Iterator<Item = &str> {
    run.split('_')
        .filter(|piece| !piece.is_empty())
        .flat_map(camel_parts)
}

fn camel_parts(piece: &str) -> Vec<&str> {
    let characters: Vec<(usize, char)> = piece.char_indices().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for window in 1..characters.len() {
        let (at, current) = characters[window];
        let previous = characters[window - 1].1;
        let next_is_lower = characters
            .get(window + 1)
            .is_some_and(|(_, next)| next.is_lowercase());
        let boundary = (previous.is_lowercase() && current.is_uppercase())
            || (previous.is_uppercase() && current.is_uppercase() && next_is_lower);
        if boundary {
            parts.push(&piece[start..at]);
            start = at;
        }
    }
    parts.push(&piece[start..]);
    parts
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
}
