//! Include-guard blocks, found by reading the preprocessor lines of a file rather than its
//! tree.
//!
//! A guard is what resolution needs to see through a header pasted into another file under
//! the header's own guard (zstd's legacy decoders paste `mem.h` so). Tree-sitter does not
//! always give such a block a node of its own: one `extern "C" {` opened under
//! `#if defined(__cplusplus)` turns the whole copy into ERROR nodes. Directives are lines,
//! so a line scan finds them whatever the parse made of the code around them, and it gives
//! the same answer for the files the extractor parses and those it reads line by line.

/// A block `#ifndef NAME` … whose first `#define`, before any other conditional directive,
/// defines `NAME`, and which no other condition encloses (only the guarded parts of other
/// guards): a guard a header always defines when it is included, not a default value
/// chosen under some configuration (`#ifdef CONFIG_X` / `#ifndef inb` / `#define inb …`).
/// Lines are 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Guard<'s> {
    pub(super) name: &'s str,
    /// The `#ifndef` line.
    pub(super) start_line: u32,
    /// The `#else`, `#elif…` or `#endif` line that ends the guarded part (the line after
    /// the last one when the block never closes).
    pub(super) end_line: u32,
}

/// An open conditional block.
struct Open<'s> {
    /// The name an `#ifndef` tests (empty for other conditionals).
    name: &'s str,
    start_line: u32,
    state: State,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// An `#ifndef` whose first definition has not been seen yet.
    Pending,
    /// A guard whose guarded part is still open.
    Guard,
    /// Not a guard, or a guard whose guarded part has ended.
    Other,
}

/// The guard blocks of `src`, in the order of their `#ifndef` lines.
pub(super) fn scan(src: &str) -> Vec<Guard<'_>> {
    let mut open: Vec<Open<'_>> = Vec::new();
    let mut found = Vec::new();
    let mut continued = false;
    let mut line_no = 0u32;
    for line in src.lines() {
        line_no += 1;
        let was_continued = continued;
        continued = line.ends_with('\\');
        if was_continued {
            continue;
        }
        let Some(directive) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let directive = directive.trim_start();
        let word_len = directive
            .bytes()
            .take_while(u8::is_ascii_alphabetic)
            .count();
        let (word, args) = directive.split_at(word_len);
        match word {
            "if" | "ifdef" | "ifndef" => {
                settle(&mut open);
                let args = args.trim_start();
                let name = if word == "ifndef" {
                    &args[..first_word(args)]
                } else {
                    ""
                };
                let unconditional = open.iter().all(|o| o.state == State::Guard);
                open.push(Open {
                    name,
                    start_line: line_no,
                    state: if name.is_empty() || !unconditional {
                        State::Other
                    } else {
                        State::Pending
                    },
                });
            }
            "define" => {
                if let Some(top) = open.last_mut()
                    && top.state == State::Pending
                {
                    let args = args.trim_start();
                    top.state = if args[..first_word(args)] == *top.name {
                        State::Guard
                    } else {
                        State::Other
                    };
                }
            }
            "else" | "elif" | "elifdef" | "elifndef" => {
                if let Some(top) = open.last_mut() {
                    if top.state == State::Guard {
                        found.push(guard(top, line_no));
                    }
                    top.state = State::Other;
                }
            }
            "endif" => {
                if let Some(top) = open.pop()
                    && top.state == State::Guard
                {
                    found.push(guard(&top, line_no));
                }
            }
            _ => {}
        }
    }
    for top in &open {
        if top.state == State::Guard {
            found.push(guard(top, line_no + 1));
        }
    }
    found.sort_by_key(|g| g.start_line);
    found
}

/// The length of the identifier `s` starts with.
fn first_word(s: &str) -> usize {
    s.bytes()
        .take_while(|&b| b == b'_' || b.is_ascii_alphanumeric())
        .count()
}

/// A conditional opened inside a pending `#ifndef` means its first directive is not the
/// definition of its name: not a guard.
fn settle(open: &mut [Open<'_>]) {
    if let Some(top) = open.last_mut()
        && top.state == State::Pending
    {
        top.state = State::Other;
    }
}

fn guard<'s>(open: &Open<'s>, end_line: u32) -> Guard<'s> {
    Guard {
        name: open.name,
        start_line: open.start_line,
        end_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guards(src: &str) -> Vec<(&str, u32, u32)> {
        scan(src)
            .into_iter()
            .map(|g| (g.name, g.start_line, g.end_line))
            .collect()
    }

    #[test]
    fn guards_are_found_with_their_guarded_lines() {
        let src = "/* top */\n#ifndef A_H\n#define A_H\n#include <x.h>\n\
                   #ifndef B_H\n# define B_H 1\nint b;\n#else\nint c;\n#endif\n\
                   #ifdef C\n#endif\n#endif /* A_H */\n";
        assert_eq!(guards(src), [("A_H", 2, 13), ("B_H", 5, 8)]);
    }

    #[test]
    fn other_conditionals_are_not_guards() {
        for src in [
            // The first definition is another name.
            "#ifndef A\n#define B\n#define A\n#endif\n",
            // A conditional comes before the definition.
            "#ifndef A\n#if X\n#endif\n#define A\n#endif\n",
            "#ifdef A\n#define A\n#endif\n",
            // A default under a condition; inside another guard's `#else`.
            "#ifdef CONFIG_X\n#ifndef A\n#define A 1\n#endif\n#endif\n",
            "#ifndef G\n#define G\n#else\n#ifndef A\n#define A\n#endif\n#endif\n",
            "#if !defined(A)\n#define A\n#endif\n",
            // A continued line is not a directive of its own.
            "#define M x \\\n#ifndef A\n#define A\n#endif\n",
        ] {
            let all = guards(src);
            assert!(all.iter().all(|g| g.0 != "A"), "{src:?}: {all:?}");
        }
    }

    #[test]
    fn code_around_the_directives_does_not_matter() {
        // What tree-sitter turns into ERROR nodes in C.
        let src = "#ifndef MEM_H\n#define MEM_H\n#if defined (__cplusplus)\nextern \"C\" {\n\
                   #endif\nstatic int rd(void) { return 1; }\n#if defined (__cplusplus)\n}\n\
                   #endif\n#endif\n";
        assert_eq!(guards(src), [("MEM_H", 1, 10)]);
    }

    #[test]
    fn a_guard_left_open_runs_to_the_end() {
        assert_eq!(guards("#ifndef A\n#define A\nint a;\n"), [("A", 1, 4)]);
        assert_eq!(guards("#endif\n#else\n"), []);
    }
}
