//! Reading a source file into text and deciding which grammar parses it.
//!
//! [`read_source`] loads a file whole (files are small next to the parse cost), refuses binary
//! files and decodes invalid UTF-8 lossily, flagging it so the caller can report the file
//! rather than lose it: Latin-1 comments are common in old C code and must not cost us the
//! definitions around them.
//!
//! [`detect_language`] maps extensions to C or C++; a `.h` header is C++ only when a cheap
//! single pass over its text (comments, strings and most preprocessor lines skipped) finds a
//! construct C cannot contain. The markers are chosen so that C code using C++ keywords as
//! identifiers (`struct class *class;`, `void *private;`, `template->x`, inline asm with
//! `:::`) stays C: parsing such a header with the C++ grammar would break it, while a header
//! written for C++ inclusion is valid C++ and parses well either way.

use std::io::Read;
use std::path::Path;

use batho_schema::Language;

use crate::discover::{BINARY_SNIFF_BYTES, SkipReason};

/// The decoded text of a source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceText {
    /// The text; invalid UTF-8 sequences are replaced by U+FFFD when `lossy`.
    pub text: String,
    /// True when the file was not valid UTF-8 and was decoded lossily.
    pub lossy: bool,
    /// The file's size in bytes as read.
    pub bytes: u64,
    /// blake3 of the raw bytes as read (before any lossy decoding): what a File node's
    /// `content_hash` holds, so that a patch detects changes without the old text.
    pub hash: [u8; 32],
    /// Where lossy decoding changed lengths (empty unless `lossy`): offsets into `text`
    /// become offsets into the file's bytes through [`LossyOffsets::original`].
    pub offsets: LossyOffsets,
}

/// The U+FFFD characters a lossy decoding wrote, each standing for 1 to 3 invalid bytes
/// of the file while it takes 3 bytes of the text. Everything stored about a file (byte
/// offsets of its entities, its size) must count the file's bytes: a reader slices the
/// file itself at those offsets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LossyOffsets {
    /// Per replacement, in text order: its offset in the text, its offset in the file and
    /// the number of file bytes it replaced.
    replacements: Vec<Replacement>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Replacement {
    in_text: u32,
    in_file: u32,
    file_len: u32,
}

impl LossyOffsets {
    /// The offset in the file of the text offset `in_text`. An offset inside a replacement
    /// character (no parser gives one) maps into the bytes it replaced.
    pub fn original(&self, in_text: u32) -> u32 {
        let after = self.replacements.partition_point(|r| r.in_text <= in_text);
        let Some(r) = after.checked_sub(1).map(|i| self.replacements[i]) else {
            return in_text;
        };
        let past = in_text - r.in_text;
        let replacement_len = char::REPLACEMENT_CHARACTER.len_utf8() as u32;
        if past < replacement_len {
            r.in_file + past.min(r.file_len)
        } else {
            r.in_file + r.file_len + (past - replacement_len)
        }
    }
}

/// `bytes` decoded as `String::from_utf8_lossy` does (each maximal invalid sequence
/// becomes one U+FFFD), with the replacements it made.
fn decode_lossy(bytes: &[u8]) -> (String, LossyOffsets) {
    let mut text = String::with_capacity(bytes.len() + bytes.len() / 8);
    let mut replacements = Vec::new();
    let mut in_file = 0usize;
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        in_file += chunk.valid().len();
        if !chunk.invalid().is_empty() {
            // Offsets are u32 (files past 4 GiB are never parsed): saturating is enough.
            let to_u32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
            replacements.push(Replacement {
                in_text: to_u32(text.len()),
                in_file: to_u32(in_file),
                file_len: to_u32(chunk.invalid().len()),
            });
            text.push(char::REPLACEMENT_CHARACTER);
            in_file += chunk.invalid().len();
        }
    }
    (text, LossyOffsets { replacements })
}

/// Reads `path` as text. Fails with [`SkipReason::TooLarge`] over `max_bytes`,
/// [`SkipReason::Binary`] when a NUL byte occurs in the first 8 KiB, and
/// [`SkipReason::Unreadable`] on I/O errors.
pub fn read_source(path: &Path, max_bytes: u64) -> Result<SourceText, SkipReason> {
    let unreadable = |e: std::io::Error| SkipReason::Unreadable(format!("{}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let size = file.metadata().map_err(unreadable)?.len();
    if size > max_bytes {
        return Err(SkipReason::TooLarge {
            size,
            limit: max_bytes,
        });
    }
    let mut buf = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // The file may grow between stat and read; never read past the limit.
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(unreadable)?;
    let bytes = buf.len() as u64;
    if bytes > max_bytes {
        return Err(SkipReason::TooLarge {
            size: bytes,
            limit: max_bytes,
        });
    }
    if buf[..buf.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return Err(SkipReason::Binary);
    }
    let hash = *blake3::hash(&buf).as_bytes();
    Ok(match String::from_utf8(buf) {
        Ok(text) => SourceText {
            text,
            lossy: false,
            bytes,
            hash,
            offsets: LossyOffsets::default(),
        },
        Err(e) => {
            let (text, offsets) = decode_lossy(e.as_bytes());
            SourceText {
                text,
                lossy: true,
                bytes,
                hash,
                offsets,
            }
        }
    })
}

/// The language of a file, from its extension and, for `.h` headers, its text.
/// Returns `None` for extensions that are not C or C++.
pub fn detect_language(rel_path: &str, text: &str) -> Option<Language> {
    let name = rel_path.rsplit('/').next().unwrap_or(rel_path);
    let ext = match name.rfind('.') {
        Some(0) | None => return None,
        Some(i) => &name[i + 1..],
    };
    if ext == "C" || ext == "H" {
        return Some(Language::Cpp);
    }
    if ext.eq_ignore_ascii_case("c") {
        return Some(Language::C);
    }
    if ext.eq_ignore_ascii_case("h") {
        return Some(if looks_like_cpp(text) {
            Language::Cpp
        } else {
            Language::C
        });
    }
    const CPP: &[&str] = &[
        "cc", "cpp", "cxx", "c++", "hh", "hpp", "hxx", "h++", "inl", "ipp", "tcc",
    ];
    CPP.iter()
        .any(|e| e.eq_ignore_ascii_case(ext))
        .then_some(Language::Cpp)
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// True when the text contains a construct that only C++ has. One forward pass; stops at the
/// first marker. Markers (outside comments and literals):
/// - `#include <name>` of an extension-less standard header (`<vector>`, `<cstdint>`);
/// - `namespace` followed by a name or `{` (not after `struct`/`union`/`enum`);
/// - `template` followed by `<`;
/// - `class` at the start of a declaration followed by a name;
/// - `public`/`private`/`protected` at the start of a statement followed by a single `:`;
/// - `name::name`, except C23 attribute namespaces (`gnu::`, `clang::`).
pub fn looks_like_cpp(text: &str) -> bool {
    let s = text.as_bytes();
    let n = s.len();
    let mut i = 0;
    // Last significant byte outside comments (b';' at the start: a statement boundary).
    let mut prev_sig = b';';
    // The identifier before the current one, when nothing but whitespace separates them.
    let mut prev_word: &[u8] = b"";
    let mut line_start = true;
    while i < n {
        let b = s[i];
        match b {
            b'\n' => {
                line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' | b'\x0c' | b'\x0b' => {
                i += 1;
                continue;
            }
            b'/' if s.get(i + 1) == Some(&b'/') => {
                i = skip_line(s, i);
                continue;
            }
            b'/' if s.get(i + 1) == Some(&b'*') => {
                i = comment_end(s, i + 2);
                continue;
            }
            b'#' if line_start => {
                if include_of_std_cpp_header(s, i + 1) {
                    return true;
                }
                i = skip_line(s, i);
                prev_sig = b';';
                prev_word = b"";
                continue;
            }
            b'"' | b'\'' => {
                i = skip_literal(s, i);
                prev_sig = b;
                prev_word = b"";
                line_start = false;
                continue;
            }
            _ => {}
        }
        line_start = false;
        if is_ident_start(b) {
            let start = i;
            while i < n && is_ident(s[i]) {
                i += 1;
            }
            let word = &s[start..i];
            if is_marker(s, i, word, prev_sig, prev_word) {
                return true;
            }
            prev_word = word;
            prev_sig = b'a';
            continue;
        }
        if b.is_ascii_digit() {
            // Numbers (with C++14 digit separators or suffixes) are not identifiers.
            while i < n && (is_ident(s[i]) || s[i] == b'.' || s[i] == b'\'') {
                i += 1;
            }
            prev_sig = b'0';
            prev_word = b"";
            continue;
        }
        prev_sig = b;
        prev_word = b"";
        i += 1;
    }
    false
}

/// The next byte at or after `i` that is not a space or tab, and its index.
fn next_non_space(s: &[u8], mut i: usize) -> Option<(usize, u8)> {
    while i < s.len() {
        match s[i] {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b => return Some((i, b)),
        }
    }
    None
}

fn is_marker(s: &[u8], end: usize, word: &[u8], prev_sig: u8, prev_word: &[u8]) -> bool {
    let after_tag = matches!(prev_word, b"struct" | b"union" | b"enum");
    let next = next_non_space(s, end);
    let next_is = |c: u8| next.is_some_and(|(_, b)| b == c);
    let next_is_ident = next.is_some_and(|(_, b)| is_ident_start(b));
    let at_decl_start = matches!(prev_sig, b';' | b'{' | b'}' | b'<' | b',' | b'>');
    match word {
        b"namespace" => !after_tag && (next_is(b'{') || next_is_ident),
        b"template" => next_is(b'<'),
        // `enum class` is C++11's scoped enum; `struct class` is C's device-class type.
        b"class" => next_is_ident && (prev_word == b"enum" || (at_decl_start && !after_tag)),
        b"public" | b"private" | b"protected" => {
            matches!(prev_sig, b';' | b'{' | b'}' | b':')
                && next.is_some_and(|(j, b)| b == b':' && s.get(j + 1) != Some(&b':'))
        }
        _ => {
            // `name::name` with nothing in between: a qualified name.
            s.get(end) == Some(&b':')
                && s.get(end + 1) == Some(&b':')
                && s.get(end + 2)
                    .is_some_and(|&b| is_ident_start(b) || b == b'~')
                && !matches!(word, b"gnu" | b"clang" | b"msvc")
        }
    }
}

/// `#` at `i - 1` starts a directive; true for `#include <name>` with no `.` in the name.
fn include_of_std_cpp_header(s: &[u8], i: usize) -> bool {
    let Some((j, _)) = next_non_space(s, i) else {
        return false;
    };
    if !s[j..].starts_with(b"include") {
        return false;
    }
    let Some((k, b'<')) = next_non_space(s, j + "include".len()) else {
        return false;
    };
    let name_start = k + 1;
    let mut e = name_start;
    while e < s.len() && s[e] != b'>' && s[e] != b'\n' {
        e += 1;
    }
    let name = &s[name_start..e];
    e < s.len()
        && s[e] == b'>'
        && !name.is_empty()
        && name.iter().all(|&b| b.is_ascii_lowercase() || b == b'_')
}

/// Index just past the end of the line at `i`, honouring backslash continuations.
fn skip_line(s: &[u8], mut i: usize) -> usize {
    while i < s.len() {
        match s[i] {
            b'\\' if s.get(i + 1) == Some(&b'\n') => i += 2,
            b'\\' if s.get(i + 1) == Some(&b'\r') && s.get(i + 2) == Some(&b'\n') => i += 3,
            b'\n' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// Index just past the literal opened by the quote at `i`; stops at an unescaped newline so
/// that a stray apostrophe cannot swallow the file.
fn skip_literal(s: &[u8], i: usize) -> usize {
    let quote = s[i];
    let mut j = i + 1;
    while j < s.len() {
        match s[j] {
            b'\\' => j += 2,
            b'\n' => return j,
            c if c == quote => return j + 1,
            _ => j += 1,
        }
    }
    s.len()
}

/// Index just past the `*/` closing a block comment whose body starts at `i`.
fn comment_end(s: &[u8], mut i: usize) -> usize {
    while let Some(p) = s
        .get(i..)
        .and_then(|rest| rest.iter().position(|&b| b == b'*'))
    {
        i += p + 1;
        if s.get(i) == Some(&b'/') {
            return i + 1;
        }
    }
    s.len()
}

#[cfg(test)]
mod tests;
