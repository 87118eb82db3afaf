//! Deciding whether a response is text, and turning its bytes into a `String`.
//!
//! The fetch tool stores readable text, so only textual media types are read; everything
//! else is refused before its body is downloaded. Bodies are decoded with the charset from
//! the `Content-Type` header, else a byte-order mark, else an HTML `<meta>` declaration in
//! the first 1024 bytes (where browsers look too), else UTF-8, always lossily.

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252};

/// How many leading bytes are sniffed for a binary body or a `<meta charset>`.
pub(super) const SNIFF_BYTES: usize = 1024;

/// What kind of text a response holds, which decides how it is decoded and extracted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TextKind {
    /// HTML or XHTML: extracted with the HTML extractor.
    Html,
    /// Any other text (plain, markdown, JSON, XML, source code): kept as it is.
    Plain,
}

/// The media type without parameters, lowercase, e.g. `text/html` for
/// `Text/HTML; charset=UTF-8`. Empty when the header is empty.
pub(super) fn media_type_essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// The `charset` parameter of a `Content-Type` value, if any.
pub(super) fn charset_parameter(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|parameter| {
        let (name, value) = parameter.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches(['"', '\'']))
    })
}

/// Classifies a media type essence: `Some` for the textual types we read, `None` for
/// binary ones. `application/octet-stream` and an empty type are not decided here: the
/// caller sniffs the body for those (see [`is_undeclared_type`]).
pub(super) fn text_kind_of(essence: &str) -> Option<TextKind> {
    if essence == "text/html" || essence == "application/xhtml+xml" {
        return Some(TextKind::Html);
    }
    if essence.starts_with("text/") {
        return Some(TextKind::Plain);
    }
    let (top_level, subtype) = essence.split_once('/')?;
    if top_level != "application" {
        return None;
    }
    let textual_application = matches!(
        subtype,
        "json"
            | "xml"
            | "javascript"
            | "ecmascript"
            | "x-javascript"
            | "yaml"
            | "x-yaml"
            | "toml"
            | "x-toml"
            | "x-sh"
            | "x-shellscript"
            | "sql"
            | "graphql"
            | "x-ndjson"
            | "jsonl"
            | "markdown"
            | "x-markdown"
            | "x-httpd-php"
            | "x-tex"
            | "x-latex"
            | "x-python"
            | "x-rust"
            | "x-c"
    ) || subtype.ends_with("+json")
        || subtype.ends_with("+xml");
    textual_application.then_some(TextKind::Plain)
}

/// True for the types that say nothing about the content, which the caller sniffs.
pub(super) fn is_undeclared_type(essence: &str) -> bool {
    essence.is_empty() || essence == "application/octet-stream" || essence == "binary/octet-stream"
}

/// Guesses from the first bytes whether an undeclared body is text: binary formats almost
/// always contain NUL bytes early, text essentially never does.
pub(super) fn sniff_text_kind(prefix: &[u8]) -> Option<TextKind> {
    let sniffed = &prefix[..prefix.len().min(SNIFF_BYTES)];
    let has_utf16_bom = sniffed.starts_with(&[0xFF, 0xFE]) || sniffed.starts_with(&[0xFE, 0xFF]);
    if sniffed.contains(&0) && !has_utf16_bom {
        return None;
    }
    let head = String::from_utf8_lossy(sniffed);
    let trimmed_head = head.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    let looks_like_html = ["<!doctype html", "<html", "<head", "<body"]
        .iter()
        .any(|marker| starts_with_ignoring_ascii_case(trimmed_head, marker));
    Some(if looks_like_html {
        TextKind::Html
    } else {
        TextKind::Plain
    })
}

/// Decodes a body to UTF-8, replacing undecodable bytes. `header_charset` is the
/// `Content-Type` charset parameter; `truncated` says the body was cut at the byte cap,
/// in which case a character split by the cut is dropped instead of shown as `�`.
pub(super) fn decode_body(
    body: &[u8],
    header_charset: Option<&str>,
    kind: TextKind,
    truncated: bool,
) -> String {
    let declared = header_charset.and_then(|label| Encoding::for_label(label.as_bytes()));
    let from_meta = || match kind {
        TextKind::Html => meta_charset(body),
        TextKind::Plain => None,
    };
    let encoding = declared.or_else(from_meta).unwrap_or(UTF_8);
    // `decode` lets a byte-order mark override the declared encoding, as browsers do.
    let (decoded, _, _) = encoding.decode(body);
    let mut text = decoded.into_owned();
    if truncated && text.ends_with('\u{FFFD}') {
        text.pop();
    }
    text
}

/// The encoding declared by a `<meta charset=...>` or `<meta http-equiv=... content="...;
/// charset=...">` in the first [`SNIFF_BYTES`] bytes, following the HTML rule that a
/// UTF-16 declaration in an ASCII-compatible prescan means UTF-8.
fn meta_charset(body: &[u8]) -> Option<&'static Encoding> {
    let head = &body[..body.len().min(SNIFF_BYTES)];
    let lowercase_head: Vec<u8> = head.iter().map(u8::to_ascii_lowercase).collect();
    let mut search_from = 0;
    while let Some(offset) = find_bytes(&lowercase_head[search_from..], b"<meta") {
        let tag_start = search_from + offset;
        let tag_end = find_bytes(&lowercase_head[tag_start..], b">")
            .map_or(lowercase_head.len(), |length| tag_start + length);
        let tag = &lowercase_head[tag_start..tag_end];
        if let Some(label) = charset_label_in_tag(tag) {
            let encoding = Encoding::for_label(label)?;
            return Some(if encoding == UTF_16LE || encoding == UTF_16BE {
                UTF_8
            } else if encoding.name() == "x-user-defined" {
                WINDOWS_1252
            } else {
                encoding
            });
        }
        search_from = tag_end;
    }
    None
}

/// The label after `charset` (then optional spaces, `=`, spaces and a quote) in a
/// lowercased `<meta ...>` tag.
fn charset_label_in_tag(tag: &[u8]) -> Option<&[u8]> {
    let after_name = find_bytes(tag, b"charset")? + "charset".len();
    let rest = &tag[after_name..];
    let rest = trim_ascii_spaces(rest).strip_prefix(b"=")?;
    let rest = trim_ascii_spaces(rest);
    let rest = rest
        .strip_prefix(b"\"")
        .or_else(|| rest.strip_prefix(b"'"))
        .unwrap_or(rest);
    let label_length = rest
        .iter()
        .position(|byte| {
            !(byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b':' | b'.'))
        })
        .unwrap_or(rest.len());
    (label_length > 0).then(|| &rest[..label_length])
}

fn trim_ascii_spaces(bytes: &[u8]) -> &[u8] {
    let first_non_space = bytes
        .iter()
        .position(|byte| !byte.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    &bytes[first_non_space..]
}

fn find_bytes(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn starts_with_ignoring_ascii_case(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn essence_and_charset_are_parsed_from_the_header() {
        assert_eq!(media_type_essence("Text/HTML; charset=UTF-8"), "text/html");
        assert_eq!(media_type_essence(""), "");
        assert_eq!(
            charset_parameter("text/html; Charset=\"ISO-8859-1\""),
            Some("ISO-8859-1")
        );
        assert_eq!(charset_parameter("text/html"), None);
    }

    #[test]
    fn textual_and_binary_types_are_told_apart() {
        assert_eq!(text_kind_of("text/html"), Some(TextKind::Html));
        assert_eq!(text_kind_of("application/xhtml+xml"), Some(TextKind::Html));
        for textual in [
            "text/plain",
            "text/markdown",
            "application/json",
            "application/ld+json",
            "application/rss+xml",
        ] {
            assert_eq!(text_kind_of(textual), Some(TextKind::Plain), "{textual}");
        }
        for binary in [
            "image/png",
            "application/pdf",
            "application/zip",
            "video/mp4",
            "garbage",
        ] {
            assert_eq!(text_kind_of(binary), None, "{binary}");
        }
        assert!(is_undeclared_type(""));
        assert!(is_undeclared_type("application/octet-stream"));
    }

    #[test]
    fn sniffing_refuses_nul_bytes_and_spots_html() {
        assert_eq!(sniff_text_kind(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), None);
        assert_eq!(
            sniff_text_kind(b"  <!DOCTYPE html><p>x"),
            Some(TextKind::Html)
        );
        assert_eq!(sniff_text_kind(b"# Title\n\ntext"), Some(TextKind::Plain));
        assert_eq!(sniff_text_kind(b""), Some(TextKind::Plain));
    }

    #[test]
    fn header_charset_wins_over_default() {
        let latin1 = b"caf\xe9";
        assert_eq!(
            decode_body(latin1, Some("iso-8859-1"), TextKind::Plain, false),
            "café"
        );
        assert_eq!(
            decode_body(latin1, None, TextKind::Plain, false),
            "caf\u{FFFD}"
        );
    }

    #[test]
    fn meta_charset_is_found_in_both_spellings() {
        let with_charset = b"<html><head><meta charset='windows-1252'></head>caf\xe9";
        assert!(decode_body(with_charset, None, TextKind::Html, false).ends_with("café"));
        let with_http_equiv =
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset = ISO-8859-1\">caf\xe9";
        assert!(decode_body(with_http_equiv, None, TextKind::Html, false).ends_with("café"));
        let claims_utf16 = "<meta charset=utf-16>café".as_bytes();
        assert!(decode_body(claims_utf16, None, TextKind::Html, false).ends_with("café"));
    }

    #[test]
    fn byte_order_mark_overrides_and_is_removed() {
        let utf8_with_bom = b"\xEF\xBB\xBFhello";
        assert_eq!(
            decode_body(utf8_with_bom, Some("iso-8859-1"), TextKind::Plain, false),
            "hello"
        );
    }

    #[test]
    fn character_cut_by_truncation_is_dropped() {
        let cut_euro = &"ab€".as_bytes()[..4];
        assert_eq!(decode_body(cut_euro, None, TextKind::Plain, true), "ab");
        assert_eq!(
            decode_body(cut_euro, None, TextKind::Plain, false),
            "ab\u{FFFD}"
        );
    }
}
