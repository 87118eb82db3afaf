//! Cutting a file into chunks an agent can be handed one at a time. C and C++ files are
//! cut at tree-sitter's top-level definitions (a comment goes with the definition below
//! it, small neighbours are merged, a definition over the budget is split at its
//! children: statements of a body, members of a class); other text is cut into line
//! windows. Every chunk is whole lines and at most `max_tokens` o200k tokens, except a
//! single line longer than that, which is cut inside the line.
//!
//! Tokens are counted once per line and added up ([`LineTokens`]): a span's count is the
//! sum of its lines' counts. Counting each candidate span again cost five passes over the
//! file (143 ms of a 10,000-line C file's 255 ms read); one pass costs 15 ms and runs
//! beside the parse. A line-wise count is at least the whole span's in practice (splitting
//! at a newline can only keep tokens from merging; 119,842 against 119,654 on that file,
//! 0.16 % more), so a chunk within the budget by its line sum is within it exactly too.
//!
//! A C or C++ file of 64 KiB or more is parsed in two halves, cut between two top-level
//! constructs, on two threads ([`crate::parse_split`]). The chunks are those of the whole
//! file's tree (a test checks it; of eleven real kernel, sqlite and rocksdb files, nine
//! gave the same chunks and two differed in 2 chunks of about 260, where tree-sitter
//! recovered from an error across the cut). On the kernel's `kernel/sched/core.c` the
//! parse and the token counts took 18-26 ms in halves against 30-41 ms whole (same run,
//! three rounds); that parse is mostly error recovery around macros.

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
    /// Its o200k tokens, counted line by line.
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

/// Lines up to this long are looked up before they are counted.
const SHORT_LINE_BYTES: usize = 24;

/// A file's lines: where each starts, and the running sum of their token counts.
struct Lines<'t> {
    text: &'t str,
    starts: Vec<usize>,
    tokens: LineTokens,
}

/// Token counts of lines, summed so that any span's count is one subtraction.
struct LineTokens {
    /// `before[k]` = tokens of lines `0..k`.
    before: Vec<usize>,
}

impl LineTokens {
    fn count(text: &str, starts: &[usize]) -> LineTokens {
        let mut before = Vec::with_capacity(starts.len() + 1);
        before.push(0);
        let mut total = 0;
        let mut counter = tokens::PieceCounter::default();
        // Short lines repeat (`}`, blank lines, `break;`): counted once each.
        let mut short_lines: foldhash::HashMap<&str, usize> = foldhash::HashMap::default();
        for (line, &start) in starts.iter().enumerate() {
            let end = starts.get(line + 1).copied().unwrap_or(text.len());
            let line = &text[start..end];
            total += if line.len() <= SHORT_LINE_BYTES {
                *short_lines
                    .entry(line)
                    .or_insert_with(|| counter.count(line))
            } else {
                counter.count(line)
            };
            before.push(total);
        }
        LineTokens { before }
    }

    /// Tokens of lines `start..=end`.
    fn span(&self, start: usize, end: usize) -> usize {
        self.before[end + 1] - self.before[start]
    }
}

impl<'t> Lines<'t> {
    fn text(&self, start: usize, end: usize) -> &'t str {
        let from = self.starts[start];
        let to = self.starts.get(end + 1).copied().unwrap_or(self.text.len());
        &self.text[from..to]
    }

    fn last(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }
}

/// The chunks of `text` (the file at `path`), each at most `max_tokens` tokens.
pub fn chunk_file(path: &str, text: &str, max_tokens: usize) -> Vec<Chunk> {
    chunk_file_parsed_in(path, text, max_tokens, Halves::WhereTheyHelp)
}

/// Whether a large file may be parsed in two halves ([`crate::parse_split`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Halves {
    WhereTheyHelp,
    #[cfg(test)]
    Never,
}

fn chunk_file_parsed_in(path: &str, text: &str, max_tokens: usize, halves: Halves) -> Vec<Chunk> {
    let starts = line_starts(text);
    let max_tokens = max_tokens.max(16);
    let cut = match halves {
        Halves::WhereTheyHelp if is_c_family(path) => crate::parse_split::split_line(text, &starts),
        _ => None,
    };
    let (trees, tokens) = parse_and_count(path, text, &starts, cut);
    let lines = Lines {
        text,
        starts,
        tokens,
    };
    let mut ranges = Vec::new();
    for (tree, from, to) in &trees {
        collect_children(
            tree.root_node(),
            &lines,
            max_tokens,
            *from,
            *to,
            &mut ranges,
        );
    }
    if trees.is_empty() {
        ranges.push((0, lines.last()));
    }
    let mut pieces = Vec::new();
    for (start, end) in ranges {
        split_lines(&lines, start, end, max_tokens, &mut pieces);
    }
    merge_small(&lines, pieces, max_tokens)
}

/// A syntax tree and the lines `from..=to` it covers.
type TreeOfLines = (tree_sitter::Tree, usize, usize);

/// The syntax trees of a C or C++ file (one, or one per half when `cut` names the first
/// line of the second half; none for other files) and the line token counts. The parse
/// and the counts take about as long each on light code, and the parse three times as long
/// on dense code: the counts, and the second half when there is one, run on threads of
/// their own.
fn parse_and_count(
    path: &str,
    text: &str,
    starts: &[usize],
    cut: Option<usize>,
) -> (Vec<TreeOfLines>, LineTokens) {
    let last = starts.len().saturating_sub(1);
    std::thread::scope(|scope| {
        let counting = scope.spawn(|| LineTokens::count(text, starts));
        let whole = || {
            parse(path, text, None)
                .map(|tree| (tree, 0, last))
                .into_iter()
                .collect()
        };
        let trees = match cut {
            _ if !is_c_family(path) => Vec::new(),
            None => whole(),
            Some(cut) => {
                let second = scope.spawn(move || {
                    parse(
                        path,
                        text,
                        Some(line_range(text, starts, cut..starts.len())),
                    )
                });
                let first = parse(path, text, Some(line_range(text, starts, 0..cut)));
                match (first, second.join().ok().flatten()) {
                    (Some(first), Some(second)) => vec![(first, 0, cut - 1), (second, cut, last)],
                    _ => whole(),
                }
            }
        };
        let tokens = counting
            .join()
            .unwrap_or_else(|_| LineTokens::count(text, starts));
        (trees, tokens)
    })
}

/// The bytes and points of lines `lines` (a range of line indexes), for the parser.
fn line_range(text: &str, starts: &[usize], lines: std::ops::Range<usize>) -> tree_sitter::Range {
    let point_at = |line: usize| match starts.get(line) {
        Some(&start) => (start, tree_sitter::Point::new(line, 0)),
        // The end of the text: the last line's end.
        None => {
            let last = starts.len().saturating_sub(1);
            let start = starts.get(last).copied().unwrap_or(0);
            (
                text.len(),
                tree_sitter::Point::new(last, text.len() - start),
            )
        }
    };
    let (start_byte, start_point) = point_at(lines.start);
    let (end_byte, end_point) = point_at(lines.end);
    tree_sitter::Range {
        start_byte,
        end_byte,
        start_point,
        end_point,
    }
}

/// Byte offsets where each line starts (one entry for an empty text).
pub(crate) fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        text.match_indices('\n')
            .map(|(at, _)| at + 1)
            .filter(|&at| at < text.len()),
    );
    starts
}

/// The syntax tree of a C or C++ file, or of the part of it in `range` (positions stay
/// the file's own); `None` when the parser cannot be loaded.
fn parse(path: &str, text: &str, range: Option<tree_sitter::Range>) -> Option<tree_sitter::Tree> {
    // Tree-sitter's node allocations on mimalloc, as in a build: under glibc's malloc the
    // median chunking of a 10,000-line C file took 21.9 ms, under mimalloc 13.8 ms.
    batho_engine::mem::install_allocators();
    let mut parser = tree_sitter::Parser::new();
    let language: tree_sitter::Language = if path.ends_with(".c") {
        tree_sitter_c::LANGUAGE.into()
    } else {
        tree_sitter_cpp::LANGUAGE.into()
    };
    parser.set_language(&language).ok()?;
    if let Some(range) = range {
        parser.set_included_ranges(&[range]).ok()?;
    }
    parser.parse(text, None)
}

/// Splits lines `from..=to` (the span of `node`) at `node`'s named children: each child
/// takes the lines from the end of the previous one to its own end; a child over the
/// budget is split the same way. A comment is joined to what follows it.
///
/// The descent keeps its own stack rather than recursing: every `#if` block nested in
/// another and over the budget is one more level, and a file of 20,000 nested blocks
/// overflowed a 2 MiB thread stack (aborting the server that read it).
fn collect_children(
    node: tree_sitter::Node<'_>,
    lines: &Lines<'_>,
    max_tokens: usize,
    from: usize,
    to: usize,
    out: &mut Vec<(usize, usize)>,
) {
    let mut levels = vec![Level::of(node, from, to)];
    while let Some(level) = levels.last_mut() {
        let Some(&child) = level.children.get(level.next) else {
            if level.start <= level.to {
                out.push((level.start, level.to));
            }
            levels.pop();
            continue;
        };
        level.next += 1;
        let end = child.end_position().row.min(level.to);
        if end < level.start || child.kind() == "comment" {
            continue;
        }
        let start = level.start;
        level.start = end + 1;
        let span_tokens = lines.tokens.span(start, end);
        if span_tokens > max_tokens && child.named_child_count() > 0 && end > start {
            levels.push(Level::of(child, start, end));
        } else {
            out.push((start, end));
        }
    }
}

/// One node being split by [`collect_children`]: its named children, the next one to
/// place, and the lines left to it.
struct Level<'tree> {
    children: Vec<tree_sitter::Node<'tree>>,
    next: usize,
    start: usize,
    to: usize,
}

impl<'tree> Level<'tree> {
    fn of(node: tree_sitter::Node<'tree>, from: usize, to: usize) -> Self {
        let mut cursor = node.walk();
        Level {
            children: node.named_children(&mut cursor).collect(),
            next: 0,
            start: from,
            to,
        }
    }
}

/// Cuts lines `start..=end` into pieces of at most `max_tokens` (and
/// [`MAX_WINDOW_LINES`]) lines; one line over the budget is cut inside the line.
fn split_lines(
    lines: &Lines<'_>,
    start: usize,
    end: usize,
    max_tokens: usize,
    out: &mut Vec<Chunk>,
) {
    let mut piece_start = start;
    let mut piece_tokens = 0;
    for line in start..=end {
        let line_tokens = lines.tokens.span(line, line);
        let over =
            piece_tokens + line_tokens > max_tokens || line + 1 - piece_start > MAX_WINDOW_LINES;
        if over && line > piece_start {
            out.push(make_chunk(lines, piece_start, line - 1));
            piece_start = line;
            piece_tokens = 0;
        }
        if line_tokens > max_tokens {
            cut_long_line(lines.text(line, line), line, max_tokens, out);
            piece_start = line + 1;
            piece_tokens = 0;
            continue;
        }
        piece_tokens += line_tokens;
    }
    if piece_start <= end {
        out.push(make_chunk(lines, piece_start, end));
    }
}

/// Pieces of one line over the budget, each counted exactly (they are cut inside a
/// pre-token, where line sums do not apply).
fn cut_long_line(whole: &str, line: usize, max_tokens: usize, out: &mut Vec<Chunk>) {
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

fn make_chunk(lines: &Lines<'_>, start: usize, end: usize) -> Chunk {
    Chunk {
        start_line: start,
        end_line: end,
        text: lines.text(start, end).to_string(),
        tokens: lines.tokens.span(start, end),
    }
}

/// Whether `chunk` holds its lines whole (a piece of a cut line does not).
fn is_whole_lines(lines: &Lines<'_>, chunk: &Chunk) -> bool {
    chunk.text.len() == lines.text(chunk.start_line, chunk.end_line).len()
}

/// Joins neighbouring whole-line pieces while the joined text fits the budget (line sums
/// add up, so the joined count is the sum).
fn merge_small(lines: &Lines<'_>, pieces: Vec<Chunk>, max_tokens: usize) -> Vec<Chunk> {
    let mut merged: Vec<Chunk> = Vec::with_capacity(pieces.len());
    for piece in pieces {
        if let Some(last) = merged.last_mut()
            && last.end_line + 1 == piece.start_line
            && is_whole_lines(lines, last)
            && is_whole_lines(lines, &piece)
            && last.tokens + piece.tokens <= max_tokens
            && piece.end_line + 1 - last.start_line <= MAX_WINDOW_LINES
        {
            *last = make_chunk(lines, last.start_line, piece.end_line);
            continue;
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
                // The line-wise count bounds the exact one, and not loosely.
                let exact = tokens::count(&chunk.text);
                assert!(chunk.tokens >= exact, "{chunk:?} counts {exact}");
                assert!(
                    chunk.tokens <= exact + exact / 10 + 2,
                    "{chunk:?} counts {exact}"
                );
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

    /// A large file of the kinds of top-level constructs C files have: repeats of
    /// [`c_source`] with conditional blocks, macros and comments between them.
    fn large_c_source() -> String {
        let mut text = String::new();
        for copy in 0..120 {
            text.push_str(&c_source().replace("add", &format!("add{copy}")));
            text.push_str(&format!(
                "\n#ifdef CONFIG_{copy}\nstatic int flag{copy} = 1;\n\nint on{copy}(void)\n{{\n    return flag{copy};\n}}\n#endif\n\n"
            ));
            text.push_str(&format!(
                "#define TWICE{copy}(x) \\\n    ((x) * 2)\n\n/* {{ a brace in a comment */\nstatic const char *name{copy} = \"{{\";\n\n"
            ));
        }
        text
    }

    #[test]
    fn halves_parsed_apart_give_the_chunks_of_the_whole() {
        let text = large_c_source();
        let starts = line_starts(&text);
        let cut = crate::parse_split::split_line(&text, &starts).expect("the file is cut");
        assert!(cut > starts.len() / 3 && cut < starts.len() * 2 / 3);
        for budget in [64, 512] {
            let halves = chunk_file_parsed_in("x.c", &text, budget, Halves::WhereTheyHelp);
            let whole = chunk_file_parsed_in("x.c", &text, budget, Halves::Never);
            assert_eq!(halves, whole, "budget {budget}");
        }
    }

    #[test]
    fn conditional_blocks_nested_deep_do_not_overflow_the_stack() {
        let depth = 20_000;
        let mut text = String::new();
        for level in 0..depth {
            text.push_str(&format!("#if L{level}\n"));
        }
        text.push_str("int deep(void) { return 1; }\n");
        text.push_str(&"#endif\n".repeat(depth));
        // The stack of a thread that Rust spawns by default.
        let reading = std::thread::Builder::new().stack_size(2 << 20);
        let copy = text.clone();
        let chunks = reading
            .spawn(move || chunk_file("x.c", &copy, 64))
            .expect("a thread")
            .join()
            .expect("no overflow");
        let joined: String = chunks.iter().map(|chunk| chunk.text.as_str()).collect();
        assert_eq!(joined, text);
        assert!(
            chunks
                .iter()
                .any(|chunk| chunk.text.contains("int deep(void)"))
        );
    }
}
