//! Preprocessing tokens (C11 6.4.7 and 6.4): what the macro expander reads and writes.
//!
//! The lexer splices lines (`\` newline), turns comments into whitespace and records, per
//! token, whether whitespace came before it (`#` needs that to spell an argument) and
//! whether it starts a line. It never fails: a byte that starts no token is a token of its
//! own, so any text, however broken, lexes.

/// What kind of preprocessing token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// An identifier (keywords included: the preprocessor does not tell them apart).
    Identifier,
    /// A preprocessing number (`0x1F`, `1e+5`, `4`).
    Number,
    /// A string or character literal, prefix included (`L"x"`, `'a'`).
    Literal,
    /// A punctuator (`##`, `->`, `(`).
    Punctuator,
    /// A byte no other kind takes (a stray `@` or `` ` ``), or the result of a paste that is
    /// not one token.
    Other,
    /// The empty token the standard's `##` rules use for an empty argument (6.10.3.3);
    /// never in the expander's output.
    Placemarker,
}

/// One preprocessing token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    pub(crate) kind: TokenKind,
    pub(crate) text: String,
    /// Whitespace (or a comment) came before it.
    pub(crate) space_before: bool,
    /// Byte offset in the lexed text (0 for tokens the expander made).
    pub(crate) offset: u32,
    /// The text the token was lexed from: 0 for the input, a number of the
    /// [`super::MacroTable`]'s for a replacement list, [`Token::MADE`] for a token `#` or
    /// `##` made.
    pub(crate) source_text: u32,
    /// The token's index in that text.
    pub(crate) position: u32,
    /// The macros this token came out of, which it may not invoke again (the hide set of
    /// Prosser's algorithm), as sorted macro ids.
    pub(crate) hidden: Vec<u32>,
}

impl Token {
    /// A token made by the expander (a pasted or stringized one).
    pub(crate) fn made(kind: TokenKind, text: String, space_before: bool) -> Token {
        Token {
            kind,
            text,
            space_before,
            offset: 0,
            source_text: Token::MADE,
            position: 0,
            hidden: Vec::new(),
        }
    }

    /// The [`Token::source_text`] of the tokens the expander made.
    pub(crate) const MADE: u32 = u32::MAX;

    /// Whether this token comes right after `previous` in a text someone wrote (so that
    /// `previous` then `self` was already there to read before any expansion).
    pub(crate) fn follows_as_written(&self, previous: &Token) -> bool {
        self.source_text != Token::MADE
            && self.source_text == previous.source_text
            && self.position == previous.position + 1
    }

    /// Whether this is the punctuator `p`.
    pub(crate) fn is_punctuator(&self, p: &str) -> bool {
        self.kind == TokenKind::Punctuator && self.text == p
    }
}

/// Punctuators of three and two characters, longest first (C11 6.4.6 and C++'s `::`,
/// `->*`, `.*`); any other punctuation byte is a one-character punctuator.
const LONG_PUNCTUATORS: &[&str] = &[
    "<<=", ">>=", "...", "->*", "##", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",
    "||", "*=", "/=", "%=", "+=", "-=", "&=", "^=", "|=", "::", ".*",
];

fn is_identifier_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_' || byte == b'$' || byte >= 0x80
}

fn is_identifier_continue(byte: u8) -> bool {
    is_identifier_start(byte) || byte.is_ascii_digit()
}

/// The prefixes a string or character literal may have.
fn is_literal_prefix(word: &str) -> bool {
    matches!(word, "L" | "u" | "U" | "u8")
}

/// Lexes `text`; token offsets are `base` plus their place in `text`.
pub(crate) fn lex(text: &str, base: u32) -> Vec<Token> {
    Lexer::new(text, base).collect()
}

/// The tokens of a text one at a time, for a caller that stops early (an invocation's
/// closing parenthesis) without lexing the rest of a file.
pub(crate) struct Lexer<'text> {
    text: &'text str,
    base: u32,
    at: usize,
    produced: u32,
}

impl<'text> Lexer<'text> {
    pub(crate) fn new(text: &'text str, base: u32) -> Self {
        Lexer {
            text,
            base,
            at: 0,
            produced: 0,
        }
    }
}

impl Iterator for Lexer<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        let text = self.text;
        let bytes = text.as_bytes();
        let mut space_before = false;
        while self.at < bytes.len() {
            let start = self.at;
            let byte = bytes[start];
            let (kind, end) = match byte {
                b'\\' if splice_length(bytes, start) > 0 => {
                    self.at += splice_length(bytes, start);
                    continue;
                }
                b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c => {
                    self.at += 1;
                    space_before = true;
                    continue;
                }
                b'/' if bytes.get(start + 1) == Some(&b'*') => {
                    self.at = find(bytes, start + 2, b"*/").map_or(bytes.len(), |end| end + 2);
                    space_before = true;
                    continue;
                }
                b'/' if bytes.get(start + 1) == Some(&b'/') => {
                    self.at = find(bytes, start, b"\n").unwrap_or(bytes.len());
                    space_before = true;
                    continue;
                }
                _ => token_at(text, start),
            };
            self.at = end;
            self.produced += 1;
            return Some(Token {
                kind,
                text: text[start..end].to_owned(),
                space_before,
                offset: self.base.saturating_add(start as u32),
                source_text: 0,
                position: self.produced - 1,
                hidden: Vec::new(),
            });
        }
        None
    }
}

/// The kind and end of the token that starts at `start` (not whitespace or a comment).
fn token_at(text: &str, start: usize) -> (TokenKind, usize) {
    let bytes = text.as_bytes();
    let byte = bytes[start];
    match byte {
        b'"' | b'\'' => (TokenKind::Literal, literal_end(bytes, start)),
        _ if byte.is_ascii_digit()
            || (byte == b'.' && bytes.get(start + 1).is_some_and(u8::is_ascii_digit)) =>
        {
            (TokenKind::Number, number_end(bytes, start))
        }
        _ if is_identifier_start(byte) => {
            let mut end = start;
            while end < bytes.len() && is_identifier_continue(bytes[end]) {
                end += 1;
            }
            if matches!(bytes.get(end), Some(b'"' | b'\'')) && is_literal_prefix(&text[start..end])
            {
                (TokenKind::Literal, literal_end(bytes, end))
            } else {
                (TokenKind::Identifier, end)
            }
        }
        _ if byte.is_ascii_punctuation() => {
            let rest = &text[start..];
            let length = LONG_PUNCTUATORS
                .iter()
                .find(|p| rest.starts_with(**p))
                .map_or(1, |p| p.len());
            (TokenKind::Punctuator, start + length)
        }
        // A byte no token takes: a whole character, so that slices stay on boundaries.
        _ => {
            let length = text[start..].chars().next().map_or(1, char::len_utf8);
            (TokenKind::Other, start + length)
        }
    }
}

/// The length of a line splice (`\` then a newline, CRLF too) at `at`, or 0.
fn splice_length(bytes: &[u8], at: usize) -> usize {
    match bytes.get(at + 1..at + 3) {
        Some([b'\r', b'\n']) => 3,
        _ if bytes.get(at + 1) == Some(&b'\n') => 2,
        _ => 0,
    }
}

fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes
        .get(from..)?
        .windows(needle.len())
        .position(|window| window == needle)
        .map(|position| from + position)
}

/// The end of the literal whose quote is at `at`: past the closing quote, or at the end of
/// the line for an unterminated one (a lone `'` in `#error don't` is not a literal).
fn literal_end(bytes: &[u8], at: usize) -> usize {
    let quote = bytes[at];
    let mut end = at + 1;
    while end < bytes.len() {
        match bytes[end] {
            b'\\' => end += 2,
            b'\n' => return end,
            byte if byte == quote => return end + 1,
            _ => end += 1,
        }
    }
    bytes.len()
}

/// The end of the preprocessing number starting at `at` (6.4.8: digits, letters, `_`,
/// `.`, and a sign after an exponent letter).
fn number_end(bytes: &[u8], at: usize) -> usize {
    let mut end = at + 1;
    while end < bytes.len() {
        let byte = bytes[end];
        let signed_exponent =
            matches!(byte, b'+' | b'-') && matches!(bytes[end - 1], b'e' | b'E' | b'p' | b'P');
        if !(signed_exponent || is_identifier_continue(byte) || byte == b'.') {
            break;
        }
        end += 1;
    }
    end
}

/// The kind `text` lexes to when it is exactly one token (a paste's result), else `Other`.
pub(crate) fn single_kind(text: &str) -> TokenKind {
    match lex(text, 0).as_slice() {
        [only] if only.text.len() == text.len() => only.kind,
        _ => TokenKind::Other,
    }
}
