//! Where a large C or C++ file can be cut in two so that each half is parsed on its own
//! thread. Tree-sitter parses one file on one thread, and on dense code that is most of a
//! read: 36 ms of the 39 ms an in-process read of the kernel's `kernel/sched/core.c`
//! (11,343 lines) took. Chunking only needs the top-level constructs and their children, so
//! a cut between two top-level constructs gives the same chunks: each half is parsed as
//! an included range of the whole text (positions stay the file's own), on two cores.
//!
//! The cut is a blank line near the middle at nesting depth zero: outside every brace,
//! parenthesis, comment, string, character literal and `#if` block, and not inside a macro
//! continued by `\`. An include guard does not count as a block, nor does a brace opened
//! only for C++ (`extern "C" {`) or under `#if 0`. The scan is a simple lexer, not a
//! parser; where it is fooled (a raw string literal, say) the halves still parse, only less
//! cleanly, and every chunk is still whole lines within the budget.

/// Files smaller than this are parsed whole: a second thread costs more than it saves.
pub(crate) const SPLIT_FROM_BYTES: usize = 64 << 10;

/// Lexer state between bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Code,
    LineComment,
    BlockComment,
    String,
    Character,
}

/// The line (an index into `starts`) at which the second half starts, or `None` when the
/// text is small or has no blank line at depth zero in its middle third.
pub(crate) fn split_line(text: &str, starts: &[usize]) -> Option<usize> {
    if text.len() < SPLIT_FROM_BYTES || starts.len() < 3 {
        return None;
    }
    let depths = depth_at_line_starts(text.as_bytes(), starts);
    let (first, last) = (starts.len() / 3, starts.len() * 2 / 3);
    let middle = starts.len() / 2;
    // The candidate nearest the middle, looking both ways.
    (0..=middle - first)
        .flat_map(|distance| [middle + distance, middle - distance])
        .filter(|&line| line >= first.max(1) && line <= last)
        .find(|&line| depths[line] && is_blank_line(text, starts, line))
}

/// Whether `line` holds only white space.
fn is_blank_line(text: &str, starts: &[usize], line: usize) -> bool {
    let end = starts.get(line + 1).copied().unwrap_or(text.len());
    text[starts[line]..end].trim().is_empty()
}

/// Per line, whether it starts at depth zero (see the module documentation).
fn depth_at_line_starts(bytes: &[u8], starts: &[usize]) -> Vec<bool> {
    let mut at_zero = Vec::with_capacity(starts.len());
    let mut state = State::Code;
    let (mut braces, mut parentheses) = (0i64, 0i64);
    let mut conditionals: Vec<Conditional> = Vec::new();
    let mut continued = false;
    for (line, &start) in starts.iter().enumerate() {
        let end = starts.get(line + 1).copied().unwrap_or(bytes.len());
        let text = &bytes[start..end];
        at_zero.push(
            state == State::Code
                && !continued
                && braces == 0
                && parentheses == 0
                && conditionals.iter().all(|open| open.guard),
        );
        let body = trim_line_end(text);
        let was_continued = continued;
        continued = body.last() == Some(&b'\\');
        if state == State::Code && !was_continued {
            conditional_step(body, &mut conditionals);
        }
        if state == State::LineComment {
            state = State::Code;
        }
        // `extern "C" {` under `#ifdef __cplusplus` opens a block only in C++, and its
        // `}` comes much later under another such test: counted, it would leave a whole
        // header (sqlite3.h in the amalgamation, where the test reads `#if 0`) at depth one.
        let (mut ignored_braces, mut ignored_parentheses) = (0, 0);
        let not_c = conditionals.iter().any(|open| open.not_c);
        state = if not_c {
            scan_line(body, state, &mut ignored_braces, &mut ignored_parentheses)
        } else {
            scan_line(body, state, &mut braces, &mut parentheses)
        };
        if matches!(state, State::String | State::Character) && !continued {
            // An unterminated literal ends with its line, as in C.
            state = State::Code;
        }
    }
    at_zero
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && line[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    &line[..end]
}

/// One open conditional block: whether its condition is one the scan understands
/// (`__cplusplus`, or `0`), and whether its current branch is left out of a C compile.
#[derive(Clone)]
struct Conditional {
    understood: bool,
    not_c: bool,
    /// The name an `#ifndef` tests.
    guard_candidate: Option<Vec<u8>>,
    /// An include guard (`#ifndef X` whose block defines `X`, as sqlite's
    /// `#ifndef SQLITE_AMALGAMATION` does two lines down): it wraps a whole header, so the
    /// constructs inside it are top-level ones, and a cut may fall among them.
    guard: bool,
}

/// Follows the conditional blocks: `#if`, `#ifdef` and `#ifndef` open one, `#endif`
/// closes it. A branch is left out of a C compile under `#ifdef __cplusplus`,
/// `#if defined(__cplusplus)` and `#if 0` (sqlite's amalgamation turns the first into the
/// last), and in the `#else` of `#ifndef __cplusplus` or `#if !defined(__cplusplus)`; an
/// `#elif` is taken as compiled.
fn conditional_step(line: &[u8], conditionals: &mut Vec<Conditional>) {
    let line = line.trim_ascii_start();
    let Some(directive) = line.strip_prefix(b"#") else {
        return;
    };
    let directive = directive.trim_ascii_start();
    let tests_cplusplus = directive.windows(11).any(|word| word == b"__cplusplus");
    let if_zero = directive
        .strip_prefix(b"if")
        .is_some_and(|condition| condition.trim_ascii() == b"0");
    if directive.starts_with(b"endif") {
        conditionals.pop();
    } else if directive.starts_with(b"if") {
        let ifndef = directive.strip_prefix(b"ifndef");
        let negated = ifndef.is_some() || directive.contains(&b'!');
        conditionals.push(Conditional {
            understood: tests_cplusplus || if_zero,
            not_c: (tests_cplusplus && !negated) || if_zero,
            guard_candidate: ifndef.map(|name| name.trim_ascii().to_vec()),
            guard: false,
        });
    } else if let Some(name) = directive.strip_prefix(b"define") {
        let defined = name
            .trim_ascii_start()
            .split(|byte| byte.is_ascii_whitespace())
            .next();
        if let Some(open) = conditionals.last_mut()
            && open.guard_candidate.is_some()
            && open.guard_candidate.as_deref() == defined
        {
            open.guard = true;
        }
    } else if let Some(open) = conditionals.last_mut() {
        if directive.starts_with(b"elif") {
            open.not_c = false;
        } else if directive.starts_with(b"else") && open.understood {
            open.not_c = !open.not_c;
        }
    }
}

/// Scans one line's bytes from `state`, counting braces and parentheses in code; the
/// state at the line's end.
fn scan_line(line: &[u8], mut state: State, braces: &mut i64, parentheses: &mut i64) -> State {
    let mut at = 0;
    while at < line.len() {
        let byte = line[at];
        let next = line.get(at + 1).copied();
        match state {
            State::Code => match byte {
                b'/' if next == Some(b'/') => return State::LineComment,
                b'/' if next == Some(b'*') => {
                    state = State::BlockComment;
                    at += 1;
                }
                b'"' => state = State::String,
                b'\'' => state = State::Character,
                b'{' => *braces += 1,
                b'}' => *braces -= 1,
                b'(' => *parentheses += 1,
                b')' => *parentheses -= 1,
                _ => {}
            },
            State::BlockComment => {
                if byte == b'*' && next == Some(b'/') {
                    state = State::Code;
                    at += 1;
                }
            }
            State::String | State::Character => {
                let closing = if state == State::String { b'"' } else { b'\'' };
                if byte == b'\\' {
                    at += 1;
                } else if byte == closing {
                    state = State::Code;
                }
            }
            State::LineComment => return State::LineComment,
        }
        at += 1;
    }
    state
}

#[cfg(test)]
mod tests {
    use super::{SPLIT_FROM_BYTES, split_line};
    use crate::chunk::line_starts as starts;

    fn function(index: usize) -> String {
        format!("static int f{index}(int a)\n{{\n    return a + {index};\n}}\n")
    }

    /// A file of functions, each followed by a blank line, long enough to be split.
    fn functions(count: usize) -> Vec<String> {
        (0..count).map(function).collect()
    }

    fn line_text(text: &str, line: usize) -> &str {
        text.lines().nth(line).unwrap_or("")
    }

    #[test]
    fn a_file_of_functions_is_cut_at_a_blank_line_between_two() {
        let text = functions(2000).join("\n");
        assert!(text.len() > SPLIT_FROM_BYTES);
        let starts = starts(&text);
        let line = split_line(&text, &starts).expect("a cut");
        assert_eq!(line_text(&text, line), "");
        assert_eq!(line_text(&text, line - 1), "}");
        assert!(line_text(&text, line + 1).starts_with("static int f"));
        let middle = starts.len() / 2;
        assert!(line.abs_diff(middle) < 6, "{line} vs {middle}");
    }

    #[test]
    fn small_files_are_not_cut() {
        let text = functions(10).join("\n");
        assert_eq!(split_line(&text, &starts(&text)), None);
    }

    /// Wraps the middle third of the file in `open` … `close`: no blank line there is at
    /// depth zero, and the cut moves outside it or is refused.
    fn cut_with_middle_wrapped(open: &str, close: &str) -> Option<usize> {
        let mut parts = functions(3000);
        parts[800].insert_str(0, &format!("{open}\n"));
        parts[2200].push_str(&format!("{close}\n"));
        let text = parts.join("\n");
        split_line(&text, &starts(&text))
    }

    #[test]
    fn no_cut_inside_a_block_a_comment_a_conditional_or_a_call() {
        for (open, close) in [
            ("struct wrapper {", "};"),
            ("/* commented out", "*/"),
            ("#if CONFIG_A", "#endif"),
            ("#ifdef CONFIG_B", "#endif /* CONFIG_B */"),
            ("int table[] = TABLE(", ");"),
        ] {
            assert_eq!(cut_with_middle_wrapped(open, close), None, "{open}");
        }
    }

    #[test]
    fn braces_in_strings_characters_and_comments_do_not_count() {
        let mut parts = functions(2000);
        parts[10].push_str("static const char *s = \"{ \\\" {\";\nstatic char c = '{';\n");
        parts[20].push_str("// {\n/* { */\n");
        let text = parts.join("\n");
        let line = split_line(&text, &starts(&text)).expect("a cut");
        assert_eq!(line_text(&text, line), "");
    }

    #[test]
    fn a_block_opened_only_for_cplusplus_does_not_count() {
        let mut parts = functions(2000);
        parts[0].insert_str(0, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
        parts[1999].push_str("#ifdef __cplusplus\n}  /* extern \"C\" */\n#endif\n");
        // Its #else is C: a brace opened there counts.
        parts[1000].push_str("#ifndef __cplusplus\nint c_only;\n#else\nint cxx_only;\n#endif\n");
        let text = parts.join("\n");
        let line = split_line(&text, &starts(&text)).expect("a cut");
        assert_eq!(line_text(&text, line), "");
        let mut parts = functions(3000);
        parts[800].push_str(
            "#if !defined(__cplusplus)\n#else\n#endif\n#ifndef __cplusplus\nstruct c {\n#endif\n",
        );
        parts[2200].push_str("#ifndef __cplusplus\n};\n#endif\n");
        let text = parts.join("\n");
        assert_eq!(split_line(&text, &starts(&text)), None, "a C block counts");
    }

    #[test]
    fn a_cut_may_fall_inside_an_include_guard() {
        let mut parts = functions(2000);
        parts[0].insert_str(0, "#ifndef DEMO_H\n#define DEMO_H\n");
        parts[1999].push_str("#endif /* DEMO_H */\n");
        let text = parts.join("\n");
        let line = split_line(&text, &starts(&text)).expect("a cut");
        assert_eq!(line_text(&text, line), "");
        // An #ifndef that defines something else is a conditional block like any other.
        let mut parts = functions(3000);
        parts[800].push_str("#ifndef HAVE_X\n#define OTHER 1\n");
        parts[2200].push_str("#endif\n");
        let text = parts.join("\n");
        assert_eq!(split_line(&text, &starts(&text)), None);
    }
}
