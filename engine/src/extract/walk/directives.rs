//! C files made only of simple directives, read line by line instead of parsed.
//!
//! Generated register headers (a kernel's `asic_reg/` alone is 373 MB of
//! `#define mmREG 0x1234` lines, a third of its source) are nothing but object-like
//! `#define`s, `#ifdef`/`#ifndef` blocks, `#include`s and comments. Tree-sitter spends a
//! third of a kernel build lexing them for facts a line reader gets exactly. This reader
//! accepts a file only when every line has one of those plain shapes (anything else —
//! `#if`, a continuation, a function-like macro, code — and the file goes to the parser),
//! and it emits through the same [`Walker`] methods as the tree walk, so both paths give equal
//! facts; the tests in `extract/tests.rs` and the `directive_check` bench binary hold them
//! to it.

use super::{MacroShape, Span, Walker};
use crate::extract::kinds::KindTable;
use crate::extract::{RefKind, Sym};

/// Deeper `#ifdef` nesting goes to the parser (whose walk has a depth limit).
const MAX_NESTING: u32 = 64;

/// One line-level item of a directive-only file, in source order.
enum Item<'s> {
    /// A `//` line or a whole `/* … */` comment (a named node of the tree).
    Comment,
    Define {
        name: &'s str,
        /// The value text as tree-sitter's `preproc_arg` holds it.
        value: Option<&'s str>,
        span: Span,
    },
    Include {
        path: &'s str,
        system: bool,
        line: u32,
    },
    /// `#ifdef NAME` (`negated: false`) or `#ifndef NAME`.
    If {
        negated: bool,
        name: &'s str,
        line: u32,
    },
    Else,
    Endif,
}

impl Walker<'_, '_> {
    /// Emits the facts of `src` if it is a directive-only file; returns `false` (having
    /// emitted nothing) if it is not.
    pub(super) fn read_directives(mut self) -> bool {
        let src = self.src;
        let Some(items) = scan(self.t, src) else {
            return false;
        };
        // Whether each open block is an include guard (which does not make its
        // definitions conditional and whose name is not a macro use).
        let mut guards: Vec<bool> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match *item {
                Item::Comment | Item::Else => {}
                Item::Define { name, value, span } => {
                    let name = self.intern(name);
                    let shape = MacroShape {
                        function_like: false,
                        params: &[],
                        variadic: false,
                        signature: Sym::EMPTY,
                    };
                    self.define(name, shape, value.map(|v| (v, span.start_line)), span);
                }
                Item::Include { path, system, line } => self.add_include(path, system, line),
                Item::If {
                    negated,
                    name,
                    line,
                } => {
                    let guard = negated && first_definition(&items[i + 1..]) == Some(name);
                    guards.push(guard);
                    if !guard {
                        self.cond_depth += 1;
                        let s = self.intern(name);
                        self.push_ref_at(RefKind::Expand, 0, 0, s, Sym::EMPTY, Sym::EMPTY, line);
                    }
                }
                Item::Endif => {
                    if guards.pop() == Some(false) {
                        self.cond_depth -= 1;
                    }
                }
            }
        }
        self.finish();
        true
    }
}

/// Whether [`Walker::read_directives`] takes `src`.
pub(in crate::extract) fn is_directive_only(t: &KindTable, src: &str) -> bool {
    scan(t, src).is_some()
}

/// The name of the first definition among the first three children of the block that
/// `body` starts (what the tree walk looks at to call an `#ifndef` an include guard).
fn first_definition<'s>(body: &[Item<'s>]) -> Option<&'s str> {
    let mut children = 0;
    let mut nesting = 0u32;
    for item in body {
        if nesting == 0 {
            if children == 3 {
                return None;
            }
            match item {
                Item::Define { name, .. } => return Some(name),
                Item::Else | Item::Endif => return None,
                _ => children += 1,
            }
        }
        match item {
            Item::If { .. } => nesting += 1,
            Item::Endif => nesting -= 1,
            _ => {}
        }
    }
    None
}

/// The items of `src` if every line is a plain directive, a comment or blank.
fn scan<'s>(t: &KindTable, src: &'s str) -> Option<Vec<Item<'s>>> {
    if !(src.is_empty() || src.ends_with('\n')) {
        return None;
    }
    let mut items = Vec::new();
    let mut in_comment = false;
    let mut nesting = 0u32;
    let mut line_start = 0;
    for (row, line) in src.split_inclusive('\n').enumerate() {
        let start = line_start;
        line_start += line.len();
        let line_no = row as u32 + 1;
        let body = &line[..line.len() - 1];
        // Tree-sitter's lexer reads NUL as the end of input and other control characters
        // (`\r` among them) in ways a line reader would have to mimic: leave them to it.
        // Checked line by line, so that a file of code is given up at its first line.
        if body.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return None;
        }
        if in_comment {
            if let Some(e) = body.find("*/") {
                if !is_blank(&body[e + 2..]) {
                    return None;
                }
                in_comment = false;
            }
            continue;
        }
        let rest = trim_blank(body);
        let hash = start + (body.len() - rest.len());
        if rest.is_empty() {
            continue;
        }
        if rest.starts_with("//") || rest.starts_with("/*") {
            in_comment = comment(rest, &mut items)?;
            continue;
        }
        let directive = trim_blank(rest.strip_prefix('#')?);
        let word_len = directive
            .bytes()
            .take_while(u8::is_ascii_alphabetic)
            .count();
        let (word, after) = directive.split_at(word_len);
        let args = trim_blank(after);
        let separated = args.len() < after.len();
        match word {
            "define" if separated => {
                let name = identifier(t, args)?;
                let tail = &args[name.len()..];
                let value = trim_blank(tail);
                if !tail.is_empty() && value.len() == tail.len() {
                    return None; // `NAME(`: function-like, or a name tree-sitter splits
                }
                if value.contains('\\') || value.starts_with('/') {
                    return None;
                }
                // Tree-sitter's `preproc_arg` runs to a `/*` and takes any other `/`
                // with the character after it, a newline included: a value may hold no
                // `/` but that of one comment closed on its line.
                let value = match value.find("/*") {
                    None => value,
                    Some(c) => {
                        // Blanks after the comment change where the parser ends the node.
                        let closed = value[c + 2..].find("*/")?;
                        if c + 2 + closed + 2 != value.len() {
                            return None;
                        }
                        &value[..c]
                    }
                };
                if value.contains('/') {
                    return None;
                }
                items.push(Item::Define {
                    name,
                    value: (!value.is_empty()).then_some(value),
                    span: Span {
                        start_byte: hash,
                        end_byte: line_start,
                        start_line: line_no,
                        end_line: line_no + 1,
                    },
                });
            }
            "ifdef" | "ifndef" if separated => {
                let name = identifier(t, args)?;
                if !is_blank(&args[name.len()..]) {
                    return None;
                }
                nesting += 1;
                if nesting > MAX_NESTING {
                    return None;
                }
                items.push(Item::If {
                    negated: word == "ifndef",
                    name,
                    line: line_no,
                });
            }
            "else" | "endif" => {
                if nesting == 0 || (!separated && !after.is_empty() && !after.starts_with('/')) {
                    return None;
                }
                if word == "else" {
                    items.push(Item::Else);
                } else {
                    items.push(Item::Endif);
                    nesting -= 1;
                }
                // A comment may follow; a block comment must close on the line.
                if !args.is_empty()
                    && (!(args.starts_with("//") || args.starts_with("/*"))
                        || comment(args, &mut items)?)
                {
                    return None;
                }
            }
            "include" => {
                let (close, system) = match args.as_bytes().first() {
                    Some(b'<') => ('>', true),
                    Some(b'"') => ('"', false),
                    _ => return None,
                };
                let end = args[1..].find(close)? + 1;
                let path = &args[1..end];
                if path.contains('\\') || !args[end + 1..].is_empty() {
                    return None;
                }
                items.push(Item::Include {
                    path,
                    system,
                    line: line_no,
                });
            }
            _ => return None,
        }
    }
    (!in_comment && nesting == 0).then_some(items)
}

/// Records the comment `text` (which starts with `//` or `/*` and runs to the end of
/// its line); returns whether a block comment is still open, or `None` if anything
/// follows it on the line.
fn comment<'s>(text: &'s str, items: &mut Vec<Item<'s>>) -> Option<bool> {
    items.push(Item::Comment);
    if text.starts_with("//") {
        // A continued `//` line comments out the next line too.
        return (!text.ends_with('\\')).then_some(false);
    }
    match text[2..].find("*/") {
        None => Some(true),
        Some(e) => is_blank(&text[2 + e + 2..]).then_some(false),
    }
}

/// A C identifier at the start of `s` that no keyword of the grammar spells.
fn identifier<'s>(t: &KindTable, s: &'s str) -> Option<&'s str> {
    let b = s.as_bytes();
    if !b
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
    {
        return None;
    }
    let len = b
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    let name = &s[..len];
    t.keywords
        .binary_search_by(|k| (**k).cmp(name))
        .is_err()
        .then_some(name)
}

fn trim_blank(s: &str) -> &str {
    s.trim_start_matches([' ', '\t'])
}

fn is_blank(s: &str) -> bool {
    s.bytes().all(|b| b == b' ' || b == b'\t')
}

#[cfg(test)]
mod tests {
    use batho_schema::Language;
    use proptest::prelude::*;

    use crate::extract::Extractor;

    /// Asserts that the line reader takes `src` and gives the parser's facts.
    fn assert_same_facts(src: &str) {
        let mut ex = Extractor::new().expect("grammars load");
        assert!(ex.reads_as_directives(src), "not taken:\n{src}");
        let read = ex.extract("f.h", Language::C, src);
        let parsed = ex.extract_parsed("f.h", Language::C, src);
        assert_eq!(read, parsed, "facts differ for:\n{src}");
    }

    #[test]
    fn directive_files_give_the_parsers_facts() {
        for src in [
            "",
            "// only a comment\n\n/* and\n * a block */\n",
            "/* guard */\n#ifndef A_H\n#define A_H\n\n#include <linux/types.h>\n#include \"b.h\"\n\
             #define mmREG\t0x1234\n#define mmREG_BASE_IDX 0 /* index */\n\
             #ifdef CONFIG_X\n#define X_ON 1 /* on */\n#else /* off */\n#define X_OFF 1\n#endif\n\
             #endif /* A_H */\n",
            // The first definition is not the tested name: a condition, not a guard.
            "#ifndef A_H\n#define B 1\n#define A_H\n#endif\n",
            // Three comments before the definition: the walk no longer calls it a guard.
            "#ifndef A_H\n// one\n// two\n// three\n#define A_H\n#endif\n",
            "#ifndef A_H\n// one\n#define A_H\n#endif\n",
            "  #  define SPACED  value_alias  \n#define EMPTY\n#define STATIC static\n",
            "#define CALLS foo(1) + bar (2) + 3\n#define TWICE foo(1) + foo(2)\n",
            "#define NUM 0x1f /* trailing */\n",
            "#ifdef A\n#ifdef B\n#define AB 1\n#endif\n#endif\n#ifdef A\n#endif//done\n",
        ] {
            assert_same_facts(src);
        }
    }

    #[test]
    fn guard_blocks_are_recorded_alike_by_both_paths() {
        let src = "/* top */\n#ifndef A_H\n#define A_H\n#ifndef B_H\n#define B_H\n#define X 1\n\
                   #else\n#define Y 2\n#endif\n#endif\n#ifdef C\n#endif\n";
        assert_same_facts(src);
        let f = Extractor::new()
            .expect("grammars load")
            .extract("f.h", Language::C, src);
        let guards: Vec<(&str, u32, u32)> = f
            .guards
            .iter()
            .map(|g| (f.str(g.name), g.start_line, g.end_line))
            .collect();
        assert_eq!(guards, [("A_H", 2, 10), ("B_H", 4, 7)]);
    }

    #[test]
    fn any_other_file_goes_to_the_parser() {
        let ex = Extractor::new().expect("grammars load");
        for src in [
            "int x;\n",
            "#if defined(A)\n#endif\n",
            "#define F(x) (x)\n",
            "#define LONG 1 \\\n  + 2\n",
            "/* never closed\n",
            "#define NO_NEWLINE 1",
            "#define CRLF 1\r\n",
            // Found by the `extract_source` fuzz target: the parser stops a comment at NUL.
            "/* a\n#define X\0 1\n */\n",
            "#define FORM_FEED\x0c1\n",
            "#define WITH_LINE_COMMENT f(x) // g(y)\n",
            // Also from the fuzz target: a `/` before the newline continues the value.
            "#define V f(0) /)* note */\n#else\n",
            "#define HALF (A / 2)\n",
            "#define NUM 0x1f /* trailing */  \n",
            "#define inline __inline\n",
            "#endif\n",
            "#ifdef A\n",
            "#ifdef A\n#endif A\n",
            "#define S \"a/*b*/\"\n",
            "#define C /* c */ 1\n",
            "#pragma once\n",
            "#include MACRO_PATH\n",
        ] {
            assert!(!ex.reads_as_directives(src), "taken:\n{src}");
        }
    }

    /// A line or a block of a generated directive file.
    #[derive(Clone, Debug)]
    enum Piece {
        Line(String),
        Block {
            negated: bool,
            name: String,
            body: Vec<Piece>,
            alternative: Option<Vec<Piece>>,
            trailer: String,
        },
    }

    fn render(pieces: &[Piece], out: &mut String) {
        for p in pieces {
            match p {
                Piece::Line(l) => {
                    out.push_str(l);
                    out.push('\n');
                }
                Piece::Block {
                    negated,
                    name,
                    body,
                    alternative,
                    trailer,
                } => {
                    let word = if *negated { "ifndef" } else { "ifdef" };
                    out.push_str(&format!("#{word} {name}\n"));
                    render(body, out);
                    if let Some(alt) = alternative {
                        out.push_str("#else\n");
                        render(alt, out);
                    }
                    out.push_str(&format!("#endif{trailer}\n"));
                }
            }
        }
    }

    fn line() -> impl Strategy<Value = String> {
        let name = prop::sample::select(vec!["A", "B_H", "mmREG", "foo", "_X", "A1"]);
        let value = prop::sample::select(vec![
            "",
            " 1",
            "\t0x10",
            " B_H",
            " foo(1)",
            " f (x) + g(y)",
            " static",
            " (1 << 3)",
            " 1 // c(d)",
            " 4 /)* x */",
            " 2 /* note */",
            " 2 /* note */ ",
            " 3  ",
        ]);
        prop_oneof![
            (prop::sample::select(vec!["", " ", "\t"]), name, value)
                .prop_map(|(lead, n, v)| format!("{lead}#define {n}{v}")),
            prop::sample::select(vec![
                String::new(),
                "// comment".to_owned(),
                "/* block */".to_owned(),
                "/*\n * long\n */".to_owned(),
                "#include <a/b.h>".to_owned(),
                "#include \"c.h\"".to_owned(),
            ]),
        ]
    }

    fn pieces() -> impl Strategy<Value = Vec<Piece>> {
        let leaf = line().prop_map(Piece::Line);
        let piece = leaf.prop_recursive(4, 24, 6, |inner| {
            (
                any::<bool>(),
                prop::sample::select(vec!["A", "B_H", "mmREG", "_X"]),
                prop::collection::vec(inner.clone(), 0..5),
                prop::option::of(prop::collection::vec(inner, 0..3)),
                prop::sample::select(vec!["", " /* B_H */", " // end"]),
            )
                .prop_map(|(negated, name, body, alternative, trailer)| Piece::Block {
                    negated,
                    name: name.to_owned(),
                    body,
                    alternative,
                    trailer: trailer.to_owned(),
                })
        });
        prop::collection::vec(piece, 0..8)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn generated_directive_files_give_the_parsers_facts(p in pieces()) {
            let mut src = String::new();
            render(&p, &mut src);
            let mut ex = Extractor::new().expect("grammars load");
            if ex.reads_as_directives(&src) {
                let read = ex.extract("f.h", Language::C, &src);
                prop_assert_eq!(read, ex.extract_parsed("f.h", Language::C, &src));
            }
        }
    }
}
