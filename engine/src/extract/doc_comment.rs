//! The comment written directly above a definition (`/** kfree - free memory … */`, a run
//! of `//` lines), found by reading the source text backwards from the definition's first
//! byte, and cleaned to plain words for the text index.
//!
//! A comment counts when it starts its own line and ends on the definition's line or the
//! line just above it: a blank line in between, or code before the comment on its line
//! (`int x; /* x's comment */`), means it belongs to something else. Only the first
//! [`MAX_DOC_BYTES`] of the cleaned text are kept: the summary line of a kerneldoc or
//! Doxygen block comes first, and the rest (parameter lists, long explanations) would
//! make every documented entity's text-index document long enough to sink it under BM25's
//! length normalisation.

use batho_schema::NodeKind;

/// Bytes of cleaned comment text kept per entity, cut at a word boundary.
pub(crate) const MAX_DOC_BYTES: usize = 240;

/// Whether entities of `kind` get their comment read: what a person documents and
/// searches for. Fields and enumerators are left out (their struct's or enum's comment
/// usually describes them), and so are namespaces (their comment is a file header).
pub(crate) fn takes_doc_comment(kind: NodeKind) -> bool {
    matches!(
        kind,
        NodeKind::Function
            | NodeKind::Method
            | NodeKind::Class
            | NodeKind::Struct
            | NodeKind::Union
            | NodeKind::Enum
            | NodeKind::Typedef
            | NodeKind::Macro
            | NodeKind::Variable
    )
}

/// The cleaned comment directly above the definition starting at `start` in `source`, or
/// an empty string when there is none.
pub(crate) fn doc_comment_above(source: &str, start: usize) -> String {
    let Some(before) = source.get(..start) else {
        return String::new();
    };
    let raw = block_comment_above(before).or_else(|| line_comments_above(before));
    raw.map(clean_comment).unwrap_or_default()
}

/// `before` up to its last non-blank character, if the whitespace after it holds at most
/// one line break (the comment ends on the definition's line or the line above).
fn trim_adjacent(before: &str) -> Option<&str> {
    let trimmed = before.trim_end();
    let gap = &before[trimmed.len()..];
    (gap.bytes().filter(|&b| b == b'\n').count() <= 1).then_some(trimmed)
}

/// Whether only spaces and tabs stand between the start of the line and `at`.
fn starts_its_line(text: &str, at: usize) -> bool {
    text[..at]
        .bytes()
        .rev()
        .take_while(|&b| b != b'\n')
        .all(|b| b == b' ' || b == b'\t')
}

/// A `/* … */` comment ending right above: its text from `/*` to `*/`.
fn block_comment_above(before: &str) -> Option<&str> {
    let trimmed = trim_adjacent(before)?;
    if !trimmed.ends_with("*/") {
        return None;
    }
    let open = trimmed[..trimmed.len() - 2].rfind("/*")?;
    starts_its_line(trimmed, open).then(|| &trimmed[open..])
}

/// A run of `//` lines ending right above: from the first one's `//` to the end.
fn line_comments_above(before: &str) -> Option<&str> {
    let trimmed = trim_adjacent(before)?;
    let mut first = None;
    let mut rest = trimmed;
    loop {
        let line_start = rest.rfind('\n').map_or(0, |at| at + 1);
        let line = rest[line_start..].trim_start();
        if !line.starts_with("//") {
            break;
        }
        first = Some(rest.len() - line.len());
        if line_start == 0 {
            break;
        }
        rest = &rest[..line_start - 1];
    }
    first.map(|at| &trimmed[at..])
}

/// The words of a raw comment: comment markers, leading `*` of each line and decoration
/// runs (`*****`, `-----`) dropped, whitespace collapsed, cut to [`MAX_DOC_BYTES`].
fn clean_comment(raw: &str) -> String {
    let mut out = String::new();
    for line in raw.lines() {
        let line = line.trim();
        let line = line.strip_prefix("/*").unwrap_or(line);
        let line = line.strip_suffix("*/").unwrap_or(line);
        let line = line.trim_start_matches(['/', '*', '!', '<']);
        for word in line.split_whitespace() {
            if is_decoration(word) {
                continue;
            }
            if out.len() + word.len() + 1 > MAX_DOC_BYTES {
                return out;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
    }
    out
}

/// A run of comment decoration (`*****`, `-----`, `//`, a lone `*`); a lone `-` is
/// kept, since kerneldoc writes `name - summary`.
fn is_decoration(word: &str) -> bool {
    let decoration = word
        .chars()
        .all(|c| matches!(c, '*' | '-' | '=' | '/' | '#'));
    decoration && (word.len() > 1 || word == "*")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc_of(source: &str, definition: &str) -> String {
        let start = source
            .find(definition)
            .expect("the definition is in the source");
        doc_comment_above(source, start)
    }

    #[test]
    fn a_kerneldoc_block_is_read_without_its_markers() {
        let source = "/**\n * kfree - free previously allocated memory\n * @ptr: pointer\n */\nvoid kfree(const void *ptr) {}\n";
        assert_eq!(
            doc_of(source, "void kfree"),
            "kfree - free previously allocated memory @ptr: pointer"
        );
    }

    #[test]
    fn a_run_of_line_comments_is_read_whole() {
        let source = "int x;\n// Opens the file.\n/// Returns its handle.\nint open_file(void);\n";
        assert_eq!(
            doc_of(source, "int open_file"),
            "Opens the file. Returns its handle."
        );
    }

    #[test]
    fn a_blank_line_or_code_before_the_comment_detaches_it() {
        assert_eq!(doc_of("/* far */\n\nint f(void);\n", "int f"), "");
        assert_eq!(doc_of("int x; /* x */\nint f(void);\n", "int f"), "");
        assert_eq!(doc_of("int f(void);\n", "int f"), "");
        assert_eq!(doc_of("x = 1; // trailing\nint f(void);\n", "int f"), "");
    }

    #[test]
    fn a_comment_on_the_definitions_line_counts() {
        assert_eq!(
            doc_of("/* inline note */ static int g;\n", "static int g"),
            "inline note"
        );
    }

    #[test]
    fn decoration_is_dropped_and_the_text_is_capped_at_a_word() {
        let source = "/*****************\n * Hash tables\n *****************/\nstruct table;\n";
        assert_eq!(doc_of(source, "struct table"), "Hash tables");
        let long = format!("/* {} */\nint f(void);\n", "word ".repeat(200));
        let doc = doc_of(&long, "int f");
        assert!(doc.len() <= MAX_DOC_BYTES && doc.ends_with("word"), "{doc}");
    }

    #[test]
    fn a_start_outside_the_text_or_inside_a_character_gives_nothing() {
        assert_eq!(doc_comment_above("/* é */ int f;", 4), "");
        assert_eq!(doc_comment_above("int f;", 99), "");
    }
}
