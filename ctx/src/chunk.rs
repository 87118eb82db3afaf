//! Cutting a file into chunks an agent can be handed one at a time. C and C++ files are
//! cut at tree-sitter's top-level definitions (a comment goes with the definition below
//! it, small neighbours are merged, a definition over the budget is split at its
//! children: statements of a body, members of a class); other text is cut into line
//! windows. Every chunk is whole lines and at most `max_tokens` o200k tokens, except a
//! single line longer than that, which is cut inside the line.

use crate::tokens;

/// One chunk of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// First line, 0-based.
    pub start_line: usize,
    /// Last line, 0-based, inclusive.
    pub end_line: usize,
    /// The text.
    pub text: String,
    /// Its o200k tokens.
    pub tokens: usize,
}

/// The most lines a window of plain text holds, whatever the budget.
const MAX_WINDOW_LINES: usize = 200;

/// Whether `path` is C or C++ by its extension.
pub fn is_c_family(path: &str) -> bool {
    let extension = path.rsplit_once('.').map_or("", |(_, extension)| extension);
    matches!(
        extension.to_ascii_lowercase().as_str(),
        "c" | "h" | "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" | "inl" | "ipp"
    )
}

/// The chunks of `text` (the file at `path`), each at most `max_tokens` tokens.
pub fn chunk_file(path: &str, text: &str, max_tokens: usize) -> Vec<Chunk> {
    let lines = line_starts(text);
    let max_tokens = max_tokens.max(16);
    let ranges = if is_c_family(path) {
        syntax_ranges(path, text, &lines, max_tokens)
    } else {
        None
    }
    .unwrap_or_else(|| vec![(0, lines.len().saturating_sub(1))]);
    let mut pieces = Vec::new();
    for (start, end) in ranges {
        split_lines(text, &lines, start, end, max_tokens, &mut pieces);
    }
    merge_small(text, &lines, pieces, max_tokens)
}

/// Byte offsets where each line starts (one entry for an empty text).
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        text.match_indices('\n')
            .map(|(at, _)| at + 1)
            .filter(|&at| at < text.len()),
    );
    starts
}

fn lines_text<'t>(text: &'t str, lines: &[usize], start: usize, end: usize) -> &'t str {
    let from = lines[start];
    let to = lines.get(end + 1).copied().unwrap_or(text.len());
    &text[from..to]
}

/// Line ranges of the top-level definitions, each covering the gap and comments before
/// it, recursively split where a definition is over the budget. `None` when the parser
/// cannot be loaded.
fn syntax_ranges(
    path: &str,
    text: &str,
    lines: &[usize],
    max_tokens: usize,
) -> Option<Vec<(usize, usize)>> {
    let mut parser = tree_sitter::Parser::new();
    let language: tree_sitter::Language = if path.ends_with(".c") {
        tree_sitter_c::LANGUAGE.into()
    } else {
        tree_sitter_cpp::LANGUAGE.into()
    };
    parser.set_language(&language).ok()?;
    let tree = parser.parse(text, None)?;
    let mut ranges = Vec::new();
    let last_line = lines.len().saturating_sub(1);
    collect_children(
        tree.root_node(),
        text,
        lines,
        max_tokens,
        0,
        last_line,
        &mut ranges,
    );
    Some(ranges)
}

/// Splits lines `from..=to` (the span of `node`) at `node`'s named children: each child
/// takes the lines from the end of the previous one to its own end; a child over the
/// budget is split the same way. A comment is joined to what follows it.
fn collect_children(
    node: tree_sitter::Node<'_>,
    text: &str,
    lines: &[usize],
    max_tokens: usize,
    from: usize,
    to: usize,
    out: &mut Vec<(usize, usize)>,
) {
    let mut start = from;
    let mut cursor = node.walk();
    let children: Vec<tree_sitter::Node<'_>> = node.named_children(&mut cursor).collect();
    for child in children {
        let end = child.end_position().row.min(to);
        if end < start || child.kind() == "comment" {
            continue;
        }
        let span_tokens = tokens::count(lines_text(text, lines, start, end));
        if span_tokens > max_tokens && child.named_child_count() > 0 && end > start {
            collect_children(child, text, lines, max_tokens, start, end, out);
        } else {
            out.push((start, end));
        }
        start = end + 1;
    }
    if start <= to {
        out.push((start, to));
    }
}

/// Cuts lines `start..=end` into pieces of at most `max_tokens` (and
/// [`MAX_WINDOW_LINES`]) lines; one line over the budget is cut inside the line.
fn split_lines(
    text: &str,
    lines: &[usize],
    start: usize,
    end: usize,
    max_tokens: usize,
    out: &mut Vec<Chunk>,
) {
    let mut piece_start = start;
    let mut piece_tokens = 0;
    for line in start..=end {
        let line_tokens = tokens::count(lines_text(text, lines, line, line));
        let over =
            piece_tokens + line_tokens > max_tokens || line + 1 - piece_start > MAX_WINDOW_LINES;
        if over && line > piece_start {
            out.push(make_chunk(text, lines, piece_start, line - 1));
            piece_start = line;
            piece_tokens = 0;
        }
        if line_tokens > max_tokens {
            cut_long_line(text, lines, line, max_tokens, out);
            piece_start = line + 1;
            piece_tokens = 0;
            continue;
        }
        piece_tokens += line_tokens;
    }
    if piece_start <= end {
        out.push(make_chunk(text, lines, piece_start, end));
    }
}

fn cut_long_line(
    text: &str,
    lines: &[usize],
    line: usize,
    max_tokens: usize,
    out: &mut Vec<Chunk>,
) {
    let whole = lines_text(text, lines, line, line);
    let mut rest = whole;
    while !rest.is_empty() {
        // Halve the piece until it fits: a token is at least one byte, so this ends.
        let mut cut = rest.len().min(max_tokens * 4);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        while cut > 1 && tokens::count(&rest[..cut]) > max_tokens {
            cut /= 2;
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
        }
        let cut = cut.max(rest.chars().next().map_or(1, char::len_utf8));
        let piece = &rest[..cut];
        out.push(Chunk {
            start_line: line,
            end_line: line,
            text: piece.to_string(),
            tokens: tokens::count(piece),
        });
        rest = &rest[cut..];
    }
}

fn make_chunk(text: &str, lines: &[usize], start: usize, end: usize) -> Chunk {
    let body = lines_text(text, lines, start, end);
    Chunk {
        start_line: start,
        end_line: end,
        text: body.to_string(),
        tokens: tokens::count(body),
    }
}

/// Whether `chunk` holds its lines whole (a piece of a cut line does not).
fn is_whole_lines(text: &str, lines: &[usize], chunk: &Chunk) -> bool {
    chunk.text.len() == lines_text(text, lines, chunk.start_line, chunk.end_line).len()
}

/// Joins neighbouring whole-line pieces while the joined text fits the budget.
fn merge_small(text: &str, lines: &[usize], pieces: Vec<Chunk>, max_tokens: usize) -> Vec<Chunk> {
    let mut merged: Vec<Chunk> = Vec::with_capacity(pieces.len());
    for piece in pieces {
        if let Some(last) = merged.last_mut()
            && last.end_line + 1 == piece.start_line
            && is_whole_lines(text, lines, last)
            && is_whole_lines(text, lines, &piece)
            && last.tokens + piece.tokens <= max_tokens
            && piece.end_line + 1 - last.start_line <= MAX_WINDOW_LINES
        {
            *last = make_chunk(text, lines, last.start_line, piece.end_line);
            if last.tokens <= max_tokens {
                continue;
            }
            // Token counts are not additive at the seam: undo the join.
            let start = last.start_line;
            *last = make_chunk(text, lines, start, piece.start_line - 1);
        }
        merged.push(piece);
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c_source() -> String {
        let mut text = String::from("#include <stdio.h>\n#include <stdlib.h>\n\n");
        text.push_str("/* Adds two numbers. */\nint add(int a, int b) {\n    return a + b;\n}\n\n");
        text.push_str("struct point {\n    int x;\n    int y;\n};\n\n");
        text.push_str("int big(int n) {\n");
        for i in 0..60 {
            text.push_str(&format!("    n = n * {i} + add(n, {i}); /* step {i} */\n"));
        }
        text.push_str("    return n;\n}\n");
        text
    }

    #[test]
    fn chunks_cover_every_line_once_within_the_budget() {
        let text = c_source();
        for budget in [16, 64, 200, 5000] {
            let chunks = chunk_file("x.c", &text, budget);
            let joined: String = chunks.iter().map(|c| c.text.as_str()).collect();
            assert_eq!(joined, text, "budget {budget}");
            for chunk in &chunks {
                assert!(chunk.tokens <= budget.max(16), "{chunk:?}");
                assert_eq!(chunk.tokens, tokens::count(&chunk.text));
            }
        }
    }

    #[test]
    fn definitions_stay_whole_with_their_comment_when_they_fit() {
        let text = c_source();
        let chunks = chunk_file("x.c", &text, 60);
        let add = chunks
            .iter()
            .find(|c| c.text.contains("int add("))
            .expect("a chunk holds add");
        assert!(add.text.contains("/* Adds two numbers. */"), "{add:?}");
        assert!(add.text.contains("return a + b;\n}"), "{add:?}");
        let big: Vec<&Chunk> = chunks.iter().filter(|c| c.text.contains("step")).collect();
        assert!(big.len() > 1, "the big function is split");
        for piece in big {
            assert!(piece.text.ends_with('\n'), "split at whole statements");
        }
    }

    #[test]
    fn a_long_line_is_cut_inside_and_plain_text_gets_windows() {
        let long = "word ".repeat(2000);
        let chunks = chunk_file("notes.txt", &long, 100);
        assert!(chunks.len() > 1);
        assert_eq!(
            chunks.iter().map(|c| c.text.as_str()).collect::<String>(),
            long
        );
        assert!(chunks.iter().all(|c| c.tokens <= 100));
        let lines: String = (0..500).map(|i| format!("line {i}\n")).collect();
        let windows = chunk_file("a.md", &lines, 100_000);
        assert!(
            windows
                .iter()
                .all(|c| c.end_line - c.start_line < MAX_WINDOW_LINES)
        );
        assert!(chunk_file("empty.txt", "", 100).len() <= 1);
    }
}
