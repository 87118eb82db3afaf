//! A linear, tree-free reduction of markup to text, for the tail of a document that nests
//! too deeply to parse (see `html.rs`). It only knows what a reader needs: tags go,
//! script and style contents go, block tags still break lines, and the common character
//! references are decoded. Exactness is traded for a guaranteed linear running time.

use std::borrow::Cow;

use super::readable::ReadableText;

/// Elements whose content is not markup and not meant to be read.
const SKIPPED_CONTENT: &[&str] = &[
    "script", "style", "noscript", "template", "textarea", "title",
];

/// Reduces `markup` to readable text in one left-to-right pass.
pub(super) fn flat_text_of_markup(markup: &str) -> String {
    let mut writer = ReadableText::default();
    let mut rest = markup;
    while let Some(tag_start) = rest.find('<') {
        let (text, from_tag) = rest.split_at(tag_start);
        writer.push_text(&decode_character_references(text));
        rest = consume_markup(from_tag, &mut writer);
    }
    writer.push_text(&decode_character_references(rest));
    writer.finish()
}

/// Handles the construct starting at a `<` and returns the input after it.
fn consume_markup<'input>(from_tag: &'input str, writer: &mut ReadableText) -> &'input str {
    let after_bracket = from_tag.get(1..).unwrap_or_default();
    if let Some(after_comment_start) = after_bracket.strip_prefix("!--") {
        return after_comment_start
            .find("-->")
            .and_then(|end| after_comment_start.get(end + 3..))
            .unwrap_or_default();
    }
    let is_closing = after_bracket.starts_with('/');
    let name_start = after_bracket.trim_start_matches('/');
    let starts_like_tag = name_start.starts_with(|character: char| character.is_ascii_alphabetic())
        || after_bracket.starts_with(['!', '?']);
    if !starts_like_tag {
        // A lone `<` in text, as in `a < b`.
        writer.push_text("<");
        return after_bracket;
    }
    let tag_end = from_tag.find('>').map_or(from_tag.len(), |end| end + 1);
    let after_tag = from_tag.get(tag_end..).unwrap_or_default();
    let name_length = name_start
        .find(|character: char| !character.is_ascii_alphanumeric())
        .unwrap_or(name_start.len());
    let name = name_start
        .get(..name_length)
        .unwrap_or_default()
        .to_ascii_lowercase();
    if is_closing {
        writer.close_element(&name);
        return after_tag;
    }
    if SKIPPED_CONTENT.contains(&name.as_str()) {
        return skip_past_closing_tag(after_tag, &name);
    }
    writer.open_element(&name);
    after_tag
}

/// The input after `</name ...>`, or nothing when the element is never closed.
fn skip_past_closing_tag<'input>(content: &'input str, name: &str) -> &'input str {
    let closing = format!("</{name}");
    let Some(closing_start) = find_ignoring_ascii_case(content, &closing) else {
        return "";
    };
    let from_closing = content.get(closing_start..).unwrap_or_default();
    from_closing
        .find('>')
        .and_then(|end| from_closing.get(end + 1..))
        .unwrap_or_default()
}

fn find_ignoring_ascii_case(haystack: &str, needle: &str) -> Option<usize> {
    let needle = needle.as_bytes();
    if needle.is_empty() {
        return Some(0);
    }
    haystack
        .as_bytes()
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle))
}

/// Decodes the character references a flat pass is likely to meet; others stay as written.
fn decode_character_references(text: &str) -> Cow<'_, str> {
    if !text.contains('&') {
        return Cow::Borrowed(text);
    }
    let mut decoded = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(ampersand) = rest.find('&') {
        let (before, from_ampersand) = rest.split_at(ampersand);
        decoded.push_str(before);
        let reference_end = from_ampersand.find(';').filter(|&end| end <= 10);
        let decoded_reference = reference_end
            .and_then(|end| from_ampersand.get(1..end))
            .and_then(character_for_reference);
        match (decoded_reference, reference_end) {
            (Some(character), Some(end)) => {
                decoded.push(character);
                rest = from_ampersand.get(end + 1..).unwrap_or_default();
            }
            _ => {
                decoded.push('&');
                rest = from_ampersand.get(1..).unwrap_or_default();
            }
        }
    }
    decoded.push_str(rest);
    Cow::Owned(decoded)
}

fn character_for_reference(reference: &str) -> Option<char> {
    let named = match reference {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some('\u{a0}'),
        _ => None,
    };
    if named.is_some() {
        return named;
    }
    let number = reference.strip_prefix('#')?;
    let code_point = match number.strip_prefix(['x', 'X']) {
        Some(hex_digits) => u32::from_str_radix(hex_digits, 16).ok()?,
        None => number.parse::<u32>().ok()?,
    };
    char::from_u32(code_point).filter(|&character| character != '\0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_scripts_and_comments_are_removed() {
        let markup =
            "<div>Hello <b>world</b><script>var secret = 1;</SCRIPT><!-- note --></div><p>Next</p>";
        assert_eq!(flat_text_of_markup(markup), "Hello world\n\nNext");
    }

    #[test]
    fn character_references_are_decoded() {
        assert_eq!(
            flat_text_of_markup("a &amp; b &lt;c&gt; &#65;&#x42; &unknown; &"),
            "a & b <c> AB &unknown; &"
        );
    }

    #[test]
    fn lone_angle_brackets_and_unterminated_constructs_survive() {
        assert_eq!(flat_text_of_markup("1 < 2 and 3 > 2"), "1 < 2 and 3 > 2");
        assert_eq!(flat_text_of_markup("text <div"), "text");
        assert_eq!(flat_text_of_markup("a<script>never closed"), "a");
        assert_eq!(flat_text_of_markup("a<!-- never closed"), "a");
    }
}
