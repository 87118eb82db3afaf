//! Turning a stream of HTML elements and text into readable plain text.
//!
//! The HTML walker in `html.rs` reports each element's opening and closing and each text
//! node; this writer decides the layout: whitespace collapses to one space as a browser
//! does, block elements start new lines (paragraph-like ones leave a blank line), runs of
//! blank lines fold into one, list items get `- ` or `1. ` markers, table cells are joined
//! by ` | `, and `<pre>` text is kept verbatim because it is usually code.

/// Deepest list nesting that still adds indentation; deeper lists keep this indent so that
/// hostile nesting cannot make the output grow with the square of the input.
const MAX_LIST_INDENT_LEVELS: usize = 8;

/// Elements after and before which a blank line is left.
const PARAGRAPH_ELEMENTS: &[&str] = &[
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "dl",
    "table",
    "figure",
    "hr",
    "section",
    "article",
    "main",
    "header",
    "details",
    "form",
    "fieldset",
    "address",
    "hgroup",
    "search",
    "center",
];

/// Elements that start and end on their own line.
const LINE_ELEMENTS: &[&str] = &[
    "html",
    "body",
    "div",
    "tr",
    "thead",
    "tbody",
    "tfoot",
    "caption",
    "dt",
    "dd",
    "figcaption",
    "summary",
    "legend",
    "option",
    "menu",
    "dir",
    "dialog",
    "label",
];

/// A pending line break; the larger one wins when several are requested in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum LineBreak {
    /// Start a new line.
    Line,
    /// Leave one blank line.
    Paragraph,
}

/// Accumulates readable text; see the module documentation for the layout rules.
#[derive(Debug, Default)]
pub(super) struct ReadableText {
    output: String,
    /// Break to write before the next visible character.
    pending_break: Option<LineBreak>,
    /// Separator (a space, or ` | ` between table cells) to write before the next visible
    /// character when it continues the current line.
    pending_separator: Option<&'static str>,
    /// List-item marker to write at the start of the item's first line.
    pending_marker: Option<String>,
    /// How many `<pre>` elements are open; their text is copied verbatim.
    preformatted_depth: usize,
    /// Open lists, innermost last: `None` for `<ul>`, `Some(next number)` for `<ol>`.
    open_lists: Vec<Option<u32>>,
}

impl ReadableText {
    /// Reports the opening tag of an element named `name` (lowercase local name).
    pub(super) fn open_element(&mut self, name: &str) {
        match name {
            "br" => self.request_break(LineBreak::Line),
            "pre" => {
                self.request_break(LineBreak::Paragraph);
                self.preformatted_depth += 1;
            }
            "ul" | "ol" => {
                self.request_break(self.list_break());
                self.open_lists.push((name == "ol").then_some(1));
            }
            "li" => {
                self.request_break(LineBreak::Line);
                self.pending_marker = Some(self.next_list_marker());
            }
            "td" | "th" => self.separate_table_cell(),
            _ => self.request_block_break(name),
        }
    }

    /// Reports the closing tag of an element named `name`.
    pub(super) fn close_element(&mut self, name: &str) {
        match name {
            "pre" => {
                self.preformatted_depth = self.preformatted_depth.saturating_sub(1);
                self.request_break(LineBreak::Paragraph);
            }
            "ul" | "ol" => {
                self.open_lists.pop();
                self.request_break(self.list_break());
            }
            "li" => {
                self.pending_marker = None;
                self.request_break(LineBreak::Line);
            }
            "td" | "th" => {}
            _ => self.request_block_break(name),
        }
    }

    /// Reports a text node.
    pub(super) fn push_text(&mut self, text: &str) {
        if self.preformatted_depth > 0 {
            self.push_preformatted(text);
            return;
        }
        for character in text.chars() {
            if character.is_whitespace() {
                if self.pending_separator.is_none() {
                    self.pending_separator = Some(" ");
                }
            } else {
                self.write_pending();
                self.output.push(character);
            }
        }
    }

    /// Forces a blank line before whatever comes next, e.g. between two articles.
    pub(super) fn separate_sections(&mut self) {
        self.request_break(LineBreak::Paragraph);
    }

    /// The text written so far, without trailing whitespace.
    pub(super) fn finish(mut self) -> String {
        let trimmed_length = self.output.trim_end().len();
        self.output.truncate(trimmed_length);
        self.output
    }

    fn push_preformatted(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.write_pending();
        self.output.push_str(&text.replace("\r\n", "\n"));
    }

    fn request_block_break(&mut self, name: &str) {
        if PARAGRAPH_ELEMENTS.contains(&name) {
            self.request_break(LineBreak::Paragraph);
        } else if LINE_ELEMENTS.contains(&name) {
            self.request_break(LineBreak::Line);
        }
    }

    fn request_break(&mut self, requested: LineBreak) {
        self.pending_break = Some(
            self.pending_break
                .map_or(requested, |pending| pending.max(requested)),
        );
        self.pending_separator = None;
    }

    /// A top-level list is a paragraph of its own; a nested one just starts a new line.
    fn list_break(&self) -> LineBreak {
        if self.open_lists.is_empty() {
            LineBreak::Paragraph
        } else {
            LineBreak::Line
        }
    }

    fn next_list_marker(&mut self) -> String {
        let indent_levels = self
            .open_lists
            .len()
            .saturating_sub(1)
            .min(MAX_LIST_INDENT_LEVELS);
        let indent = "  ".repeat(indent_levels);
        match self.open_lists.last_mut() {
            Some(Some(next_number)) => {
                let marker = format!("{indent}{next_number}. ");
                *next_number = next_number.saturating_add(1);
                marker
            }
            Some(None) | None => format!("{indent}- "),
        }
    }

    /// Table cells on one row are joined by ` | `; the first cell of a row starts the line.
    fn separate_table_cell(&mut self) {
        let continues_line = self.pending_break.is_none() && !self.at_line_start();
        if continues_line {
            self.pending_separator = Some(" | ");
        }
    }

    fn at_line_start(&self) -> bool {
        self.output.is_empty() || self.output.ends_with('\n')
    }

    /// Writes what was deferred until a visible character arrives: the line break (topped
    /// up to the wanted number of newlines, which folds blank lines), else the separator,
    /// then a list marker.
    fn write_pending(&mut self) {
        if let Some(line_break) = self.pending_break.take() {
            self.write_line_break(line_break);
        } else if let Some(separator) = self.pending_separator
            && !self.at_line_start()
        {
            self.output.push_str(separator);
        }
        self.pending_separator = None;
        if let Some(marker) = self.pending_marker.take() {
            self.output.push_str(&marker);
        }
    }

    /// Tops the trailing newlines up to what `line_break` wants, so that several breaks in
    /// a row never leave more than one blank line. Nothing is written at the very start.
    fn write_line_break(&mut self, line_break: LineBreak) {
        if self.output.is_empty() {
            return;
        }
        let wanted_newlines = match line_break {
            LineBreak::Line => 1,
            LineBreak::Paragraph => 2,
        };
        let existing_newlines = self
            .output
            .chars()
            .rev()
            .take(2)
            .take_while(|&character| character == '\n')
            .count();
        for _ in existing_newlines..wanted_newlines {
            self.output.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds a tiny event script: `<name`, `>name` (close) or text.
    fn render(events: &[&str]) -> String {
        let mut writer = ReadableText::default();
        for event in events {
            if let Some(name) = event.strip_prefix('<') {
                writer.open_element(name);
            } else if let Some(name) = event.strip_prefix('>') {
                writer.close_element(name);
            } else {
                writer.push_text(event);
            }
        }
        writer.finish()
    }

    #[test]
    fn whitespace_collapses_and_blocks_break_lines() {
        let text = render(&[
            "<p",
            "  Hello \n\t world ",
            ">p",
            "<p",
            "Second",
            ">p",
            "<div",
            "line",
            ">div",
        ]);
        assert_eq!(text, "Hello world\n\nSecond\n\nline");
    }

    #[test]
    fn inline_elements_do_not_add_spaces() {
        assert_eq!(
            render(&["<p", "foo", "<b", "bar", ">b", " baz", ">p"]),
            "foobar baz"
        );
    }

    #[test]
    fn blank_lines_fold_into_one() {
        let text = render(&[
            "<p", "a", ">p", "<p", ">p", "<p", " ", ">p", "<hr", ">hr", "<p", "b", ">p",
        ]);
        assert_eq!(text, "a\n\nb");
    }

    #[test]
    fn lists_get_markers_and_nested_indentation() {
        let text = render(&[
            "<ul", "<li", "one", ">li", "<li", "two", "<ol", "<li", "first", ">li", "<li",
            "second", ">li", ">ol", ">li", ">ul",
        ]);
        assert_eq!(text, "- one\n- two\n  1. first\n  2. second");
    }

    #[test]
    fn table_cells_are_joined_by_bars() {
        let text = render(&[
            "<table", "<tr", "<td", "a", ">td", "<td", "b", ">td", ">tr", "<tr", "<td", "c", ">td",
            "<td", "d", ">td", ">tr", ">table",
        ]);
        assert_eq!(text, "a | b\nc | d");
    }

    #[test]
    fn preformatted_text_is_kept_verbatim() {
        let text = render(&[
            "<p",
            "Code:",
            ">p",
            "<pre",
            "fn main() {\r\n    run();\n}",
            ">pre",
            "after",
        ]);
        assert_eq!(text, "Code:\n\nfn main() {\n    run();\n}\n\nafter");
    }

    #[test]
    fn line_breaks_from_br() {
        assert_eq!(render(&["<p", "a", "<br", ">br", "b", ">p"]), "a\nb");
    }
}
