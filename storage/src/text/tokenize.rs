//! The search terms of a text: identifier runs (letters, digits, `_`) split into their
//! parts at `_`, at case changes (`camelCase`, `HTTPServer`) and between letters and
//! digits, each part lower-cased, followed by the whole run lower-cased when it differs
//! from its only part. Everything else (`::`, `/`, `.`, spaces, punctuation) separates.
//! The same function cuts documents and questions, so `tcp_v4_connect` and
//! `tcpV4Connect` both find `tcp`, `v`, `connect` and their whole identifier. Numbers
//! are not terms: a run starting with a digit (`42`, `0x1F`) yields nothing and a part
//! made of digits only is dropped (`e1000` gives `e` and `e1000`): a kernel's millions
//! of register macros would otherwise add a term per constant and a posting per `0`.

/// What a character is to the part splitter.
#[derive(Clone, Copy, PartialEq, Eq)]
enum CharClass {
    Upper,
    Lower,
    Digit,
    Underscore,
}

fn char_class(c: char) -> CharClass {
    if c == '_' {
        CharClass::Underscore
    } else if c.is_numeric() {
        CharClass::Digit
    } else if c.is_uppercase() {
        CharClass::Upper
    } else {
        CharClass::Lower
    }
}

fn is_identifier_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Calls `emit` with every search term of `text`, in order (a term may repeat).
pub fn for_each_term(text: &str, mut emit: impl FnMut(&str)) {
    let mut scratch = String::new();
    let mut run_start: Option<usize> = None;
    for (at, c) in text.char_indices() {
        match (is_identifier_char(c), run_start) {
            (true, None) => run_start = Some(at),
            (false, Some(start)) => {
                emit_identifier(&text[start..at], &mut scratch, &mut emit);
                run_start = None;
            }
            _ => {}
        }
    }
    if let Some(start) = run_start {
        emit_identifier(&text[start..], &mut scratch, &mut emit);
    }
}

/// The terms of `text` as owned strings, in order (a term may repeat).
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, |term| out.push(term.to_string()));
    out
}

/// Lower-cases `part` into `scratch`.
fn lower_into(part: &str, scratch: &mut String) {
    scratch.clear();
    if part.is_ascii() {
        scratch.push_str(part);
        scratch.make_ascii_lowercase();
    } else {
        scratch.extend(part.chars().flat_map(char::to_lowercase));
    }
}

/// Emits the parts of one identifier run that are not numbers, then the whole run when
/// it is not its only part; a number (a run starting with a digit) emits nothing.
fn emit_identifier(run: &str, scratch: &mut String, emit: &mut impl FnMut(&str)) {
    if run.chars().next().is_none_or(char::is_numeric) {
        return;
    }
    let mut parts = 0usize;
    let mut only_part_is_whole = false;
    for_each_part(run, |part| {
        parts += 1;
        only_part_is_whole = part.len() == run.len();
        if part.chars().all(char::is_numeric) {
            return;
        }
        lower_into(part, scratch);
        emit(scratch);
    });
    if parts > 1 || (parts == 1 && !only_part_is_whole) {
        lower_into(run, scratch);
        emit(scratch);
    }
}

/// Whether a part boundary falls before the character `current` (at the run's position
/// after `previous`); `next` is the character after `current`, if any.
fn boundary_before(previous: CharClass, current: CharClass, next: Option<CharClass>) -> bool {
    use CharClass::{Digit, Lower, Upper};
    match (previous, current) {
        (Lower, Upper) => true,
        (Upper | Lower, Digit) | (Digit, Upper | Lower) => true,
        (Upper, Upper) => next == Some(Lower),
        _ => false,
    }
}

/// Calls `emit` with each part of an identifier run (never empty, never holding `_`).
/// One pass with one character of look-ahead and no allocation: this runs for every
/// identifier of every node of a kernel, twice.
fn for_each_part(run: &str, mut emit: impl FnMut(&str)) {
    let mut chars = run
        .char_indices()
        .map(|(at, c)| (at, char_class(c)))
        .peekable();
    let mut start: Option<usize> = None;
    let mut previous: Option<CharClass> = None;
    while let Some((at, class)) = chars.next() {
        if class == CharClass::Underscore {
            if let Some(s) = start.take() {
                emit(&run[s..at]);
            }
        } else if let (Some(s), Some(before)) = (start, previous) {
            let next = chars.peek().map(|&(_, c)| c);
            if boundary_before(before, class, next) {
                emit(&run[s..at]);
                start = Some(at);
            }
        } else {
            start = Some(at);
        }
        previous = Some(class);
    }
    if let Some(s) = start {
        emit(&run[s..]);
    }
}

#[cfg(test)]
mod tests {
    use super::terms;

    #[test]
    fn identifiers_split_into_parts_and_whole() {
        assert_eq!(
            terms("tcp_v4_connect"),
            ["tcp", "v", "connect", "tcp_v4_connect"]
        );
        assert_eq!(
            terms("getHTTPServer"),
            ["get", "http", "server", "gethttpserver"]
        );
        assert_eq!(terms("main"), ["main"]);
        assert_eq!(terms("Main"), ["main"]);
        assert_eq!(terms("_start"), ["start", "_start"]);
        assert_eq!(terms("e1000"), ["e", "e1000"]);
        assert_eq!(
            terms("#define REG_A5XX 0x00000400 + 12"),
            ["define", "reg", "a", "xx", "reg_a5xx"]
        );
        assert_eq!(terms("___"), Vec::<String>::new());
    }

    #[test]
    fn separators_are_scopes_paths_and_punctuation() {
        assert_eq!(terms("ns::Widget::draw"), ["ns", "widget", "draw"]);
        assert_eq!(terms("net/ipv4/tcp.c"), ["net", "ipv", "ipv4", "tcp", "c"]);
        assert_eq!(
            terms("int add(int a, int b)"),
            ["int", "add", "int", "a", "int", "b"]
        );
        assert_eq!(
            terms("Where does AUTH live?"),
            ["where", "does", "auth", "live"]
        );
    }

    #[test]
    fn non_ascii_letters_are_lower_cased() {
        assert_eq!(terms("Übergröße"), ["übergröße"]);
        assert_eq!(terms("ÀbcDef"), ["àbc", "def", "àbcdef"]);
    }
}
