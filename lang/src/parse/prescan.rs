//! A lexical pass run before pest: finds unclosed strings, comments and brackets, and
//! bounds bracket nesting, so that those mistakes get precise messages (pest would report
//! them far from their cause) and so that pathological nesting is refused before any
//! recursive code sees it.

use super::{MAX_NESTING, ParseErrorKind};
use crate::ast::Span;
use crate::diag::line_col;

/// A problem found by the pre-scan.
pub(super) struct ScanError {
    pub kind: ParseErrorKind,
    pub span: Span,
    pub message: String,
    pub suggestion: Option<String>,
}

fn closer(open: u8) -> u8 {
    match open {
        b'(' => b')',
        b'[' => b']',
        _ => b'}',
    }
}

/// Scans `text`; `Ok` means strings, comments and brackets are balanced and not too deep.
pub(super) fn prescan(text: &str) -> Result<(), ScanError> {
    let b = text.as_bytes();
    let mut stack: Vec<(u8, usize)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = text[i..].find('\n').map_or(b.len(), |n| i + n);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => match text[i + 2..].find("*/") {
                Some(n) => i = i + 2 + n + 2,
                None => {
                    return Err(ScanError {
                        kind: ParseErrorKind::UnclosedComment,
                        span: Span::new(i, i + 2),
                        message: "unclosed block comment".into(),
                        suggestion: Some("close the comment with `*/`".into()),
                    });
                }
            },
            q @ (b'\'' | b'"') => {
                let start = i;
                i += 1;
                loop {
                    match b.get(i) {
                        None => {
                            let q = q as char;
                            return Err(ScanError {
                                kind: ParseErrorKind::UnclosedString,
                                span: Span::new(start, start + 1),
                                message: "unclosed string literal".into(),
                                suggestion: Some(format!(
                                    "close the string with {q}, or escape a quote inside it as \\{q}"
                                )),
                            });
                        }
                        Some(b'\\') => i += 2,
                        Some(c) if *c == q => {
                            i += 1;
                            break;
                        }
                        Some(_) => i += 1,
                    }
                }
            }
            b'`' => {
                let start = i;
                i += 1;
                loop {
                    match b.get(i) {
                        None => {
                            return Err(ScanError {
                                kind: ParseErrorKind::UnclosedString,
                                span: Span::new(start, start + 1),
                                message: "unclosed backticked name".into(),
                                suggestion: Some("close the name with `".into()),
                            });
                        }
                        Some(b'`') if b.get(i + 1) == Some(&b'`') => i += 2,
                        Some(b'`') => {
                            i += 1;
                            break;
                        }
                        Some(_) => i += 1,
                    }
                }
            }
            open @ (b'(' | b'[' | b'{') => {
                stack.push((open, i));
                if stack.len() > MAX_NESTING {
                    return Err(ScanError {
                        kind: ParseErrorKind::TooDeep,
                        span: Span::new(i, i + 1),
                        message: format!("brackets nested deeper than {MAX_NESTING} levels"),
                        suggestion: Some("simplify the expression".into()),
                    });
                }
                i += 1;
            }
            close @ (b')' | b']' | b'}') => {
                match stack.pop() {
                    Some((open, _)) if closer(open) == close => {}
                    Some((open, at)) => {
                        return Err(ScanError {
                            kind: ParseErrorKind::UnbalancedBracket,
                            span: Span::new(i, i + 1),
                            message: {
                                let (l, c) = line_col(text, at);
                                format!(
                                    "`{}` does not close the `{}` opened at line {l}, column {c}",
                                    close as char, open as char
                                )
                            },
                            suggestion: Some(format!("expected `{}` here", closer(open) as char)),
                        });
                    }
                    None => {
                        return Err(ScanError {
                            kind: ParseErrorKind::UnbalancedBracket,
                            span: Span::new(i, i + 1),
                            message: format!("unmatched `{}`", close as char),
                            suggestion: Some("remove it, or add the opening bracket".into()),
                        });
                    }
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    if let Some((open, at)) = stack.pop() {
        return Err(ScanError {
            kind: ParseErrorKind::UnbalancedBracket,
            span: Span::new(at, at + 1),
            message: format!("unclosed `{}`", open as char),
            suggestion: Some(format!("add `{}`", closer(open) as char)),
        });
    }
    Ok(())
}
