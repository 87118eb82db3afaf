//! Diagnostics shared by the parser and the checker: a message located by line and
//! column, the offending line with a caret underline, and an optional suggestion.

use std::fmt;

use crate::ast::Span;

/// A located, human-readable problem with a query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// One-line description.
    pub message: String,
    /// Byte range the problem is about.
    pub span: Span,
    /// 1-based line of `span.start`.
    pub line: usize,
    /// 1-based column (in characters) of `span.start`.
    pub column: usize,
    /// The text of that line, without its newline.
    pub line_text: String,
    /// "did you mean ...?" or a hint on how to fix it.
    pub suggestion: Option<String>,
}

impl Diagnostic {
    /// Locates `span` in `source` and builds the diagnostic.
    pub fn new(
        source: &str,
        span: Span,
        message: impl Into<String>,
        suggestion: Option<String>,
    ) -> Self {
        let start = floor_char_boundary(source, span.start.min(source.len()));
        let end = floor_char_boundary(source, span.end.clamp(start, source.len()));
        let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = source[start..]
            .find('\n')
            .map_or(source.len(), |i| start + i);
        let line = source[..start].matches('\n').count() + 1;
        let column = source[line_start..start].chars().count() + 1;
        let line_text = source[line_start..line_end]
            .trim_end_matches('\r')
            .to_string();
        Diagnostic {
            message: message.into(),
            span: Span::new(start, end),
            line,
            column,
            line_text,
            suggestion,
        }
    }

    /// Width of the caret underline in characters (at least 1, at most to the end of the line).
    fn caret_width(&self) -> usize {
        let on_line = self
            .line_text
            .chars()
            .count()
            .saturating_sub(self.column - 1);
        // The span counts bytes; the caret counts characters, one per column.
        let span_bytes = self.span.end.saturating_sub(self.span.start);
        let wanted = self
            .line_text
            .chars()
            .skip(self.column - 1)
            .scan(0, |bytes_so_far, c| {
                (*bytes_so_far < span_bytes).then(|| *bytes_so_far += c.len_utf8())
            })
            .count();
        wanted.min(on_line).max(1)
    }
}

impl Diagnostic {
    /// This diagnostic, for a statement that was cut out of `source` at byte `offset`:
    /// the span moves by `offset`, and line, column and line text are those of `source`.
    pub fn relocated(&self, source: &str, offset: usize) -> Diagnostic {
        let span = Span {
            start: self.span.start.saturating_add(offset),
            end: self.span.end.saturating_add(offset),
        };
        Diagnostic::new(source, span, self.message.clone(), self.suggestion.clone())
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let gutter = self.line.to_string();
        let pad = " ".repeat(gutter.len());
        // Tabs are kept in the echoed line, so keep them in the padding too: the caret then
        // lands under the right character in any terminal.
        let lead: String = self
            .line_text
            .chars()
            .take(self.column - 1)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        writeln!(f, "error: {}", self.message)?;
        writeln!(f, "{pad}--> line {}, column {}", self.line, self.column)?;
        writeln!(f, "{pad} |")?;
        writeln!(f, "{gutter} | {}", self.line_text)?;
        write!(f, "{pad} | {lead}{}", "^".repeat(self.caret_width()))?;
        if let Some(s) = &self.suggestion {
            write!(f, "\n{pad} = help: {s}")?;
        }
        Ok(())
    }
}

/// 1-based line and column (in characters) of byte `offset`.
pub(crate) fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let at = floor_char_boundary(source, offset.min(source.len()));
    let line_start = source[..at].rfind('\n').map_or(0, |i| i + 1);
    (
        source[..at].matches('\n').count() + 1,
        source[line_start..at].chars().count() + 1,
    )
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Case-insensitive Levenshtein distance, capped: returns `None` past `max`.
pub(crate) fn edit_distance(a: &str, b: &str, max: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    let d = prev[b.len()];
    (d <= max).then_some(d)
}

/// The candidate closest to `word` (case-insensitively), if close enough to be a plausible typo.
pub(crate) fn closest<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    // Short words tolerate one edit, longer ones two (or three for long names).
    let max = match word.chars().count() {
        0..=2 => 1,
        3..=5 => 2,
        _ => 3,
    };
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if let Some(d) = edit_distance(word, c, max) {
            if d == 0 && c != word {
                // Same name in a different case: the best possible suggestion.
                return Some(c);
            }
            if best.is_none_or(|(bd, _)| d < bd) {
                best = Some((d, c));
            }
        }
    }
    best.map(|(_, c)| c)
}

/// `did you mean X?` for the closest candidate, if any.
pub(crate) fn did_you_mean<'a, I>(word: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    closest(word, candidates).map(|c| format!("did you mean {c}?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("MACTH", "match", 2), Some(2));
        assert_eq!(edit_distance("retrun", "RETURN", 2), Some(2));
        assert_eq!(edit_distance("abc", "abcdef", 2), None);
        assert_eq!(
            closest("Fucntion", ["File", "Function", "Method"]),
            Some("Function")
        );
        assert_eq!(closest("zzz", ["File", "Function"]), None);
    }

    #[test]
    fn locates_multibyte_lines() {
        let src = "RETURN 'é'\nMATCH (n) RETURN m";
        let d = Diagnostic::new(
            src,
            Span::new(src.len() - 1, src.len()),
            "undefined variable `m`",
            None,
        );
        assert_eq!((d.line, d.column), (2, 18));
        assert_eq!(d.line_text, "MATCH (n) RETURN m");
    }
}
