//! EXPLAIN text: one operator per line, root first, inputs indented below it (for binary
//! operators the input/left side comes first, then the inner/right side).

use std::fmt::{self, Write};

use super::*;
use crate::print::{expr_to_string, pattern_part, push_name, push_var};

fn var(s: &mut String, v: &str) {
    push_var(s, v);
}

fn labels(s: &mut String, ls: &[String]) {
    for (i, l) in ls.iter().enumerate() {
        s.push(if i == 0 { ':' } else { '|' });
        push_name(s, l);
    }
}

fn sort_keys(s: &mut String, keys: &[SortKey]) {
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(&expr_to_string(&k.expr));
        s.push_str(if k.descending { " DESC" } else { " ASC" });
    }
}

fn items(s: &mut String, items: &[(Expr, String)]) {
    for (i, (e, c)) in items.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let text = expr_to_string(e);
        s.push_str(&text);
        let mut plain = String::new();
        push_var(&mut plain, c);
        if text != plain {
            s.push_str(" AS ");
            s.push_str(&plain);
        }
    }
}

fn rel_arrow(
    s: &mut String,
    rel: &str,
    dir: Direction,
    types: &[String],
    length: Option<HopRange>,
) {
    s.push_str(if dir == Direction::Incoming {
        "<-["
    } else {
        "-["
    });
    var(s, rel);
    for (i, t) in types.iter().enumerate() {
        s.push(if i == 0 { ':' } else { '|' });
        push_name(s, t);
    }
    if let Some(h) = length {
        let _ = write!(s, "*{}..{}", h.min, h.max);
    }
    s.push_str(if dir == Direction::Outgoing {
        "]->"
    } else {
        "]-"
    });
}

/// The one-line description of an operator (without its inputs).
pub(crate) fn describe(p: &LogicalPlan) -> String {
    let mut s = String::from(p.name());
    s.push(' ');
    match p {
        LogicalPlan::Argument { columns } => {
            if columns.is_empty() {
                s.pop();
            } else {
                s.push_str(&columns.join(", "));
            }
        }
        LogicalPlan::NodeScan {
            var: v, labels: l, ..
        } => {
            s.push('(');
            var(&mut s, v);
            labels(&mut s, l);
            s.push(')');
        }
        LogicalPlan::NodeSeek {
            var: v,
            key,
            value,
            labels: l,
            ..
        } => {
            s.push('(');
            var(&mut s, v);
            labels(&mut s, l);
            let op = match key {
                SeekKey::Id | SeekKey::Name => "=",
                SeekKey::NamePrefix => "STARTS WITH",
                SeekKey::NameRegex => "=~",
            };
            let _ = write!(s, ") {} {op} {}", key.property(), expr_to_string(value));
        }
        LogicalPlan::Expand {
            from,
            rel,
            to,
            direction,
            types,
            length,
            unique_with,
            ..
        } => {
            s.push('(');
            var(&mut s, from);
            s.push(')');
            rel_arrow(&mut s, rel, *direction, types, *length);
            s.push('(');
            var(&mut s, to);
            s.push(')');
            if !unique_with.is_empty() {
                let _ = write!(s, " unique from {}", unique_with.join(", "));
            }
        }
        LogicalPlan::ShortestPath {
            from,
            to,
            path,
            rel,
            direction,
            types,
            length,
            ..
        } => {
            var(&mut s, path);
            s.push_str(" = (");
            var(&mut s, from);
            s.push(')');
            rel_arrow(&mut s, rel, *direction, types, Some(*length));
            s.push('(');
            var(&mut s, to);
            s.push(')');
        }
        LogicalPlan::Filter { predicate, .. } => s.push_str(&expr_to_string(predicate)),
        LogicalPlan::Project { items: it, .. } => items(&mut s, it),
        LogicalPlan::Aggregate {
            group_by,
            aggregates,
            ..
        } => {
            s.push_str("keys [");
            items(&mut s, group_by);
            s.push_str("] aggregates [");
            for (i, a) in aggregates.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                let arg = match &a.arg {
                    None => "*".to_string(),
                    // A percentile's `[value, fraction]` pair is shown as its two arguments.
                    Some(crate::ast::Expr {
                        kind: crate::ast::ExprKind::List(args),
                        ..
                    }) if a.func.takes_fraction() => args
                        .iter()
                        .map(expr_to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    Some(e) => expr_to_string(e),
                };
                let d = if a.distinct { "DISTINCT " } else { "" };
                let _ = write!(s, "{}({d}{arg}) AS ", a.func.name());
                var(&mut s, &a.column);
            }
            s.push(']');
        }
        LogicalPlan::Distinct { .. } => {
            s.pop();
        }
        LogicalPlan::Sort { keys, .. } => sort_keys(&mut s, keys),
        LogicalPlan::TopK { keys, limit, .. } => {
            let _ = write!(s, "{} by ", expr_to_string(limit));
            sort_keys(&mut s, keys);
        }
        LogicalPlan::Skip { count, .. } | LogicalPlan::Limit { count, .. } => {
            s.push_str(&expr_to_string(count))
        }
        LogicalPlan::Unwind { expr, var: v, .. } => {
            s.push_str(&expr_to_string(expr));
            s.push_str(" AS ");
            var(&mut s, v);
        }
        LogicalPlan::ProcedureCall {
            procedure,
            args,
            yields,
            ..
        } => {
            let args: Vec<String> = args.iter().map(expr_to_string).collect();
            let _ = write!(s, "{procedure}({})", args.join(", "));
            if !yields.is_empty() {
                s.push_str(" YIELD ");
                for (i, (f, c)) in yields.iter().enumerate() {
                    if i > 0 {
                        s.push_str(", ");
                    }
                    push_name(&mut s, f);
                    if f != c {
                        s.push_str(" AS ");
                        var(&mut s, c);
                    }
                }
            }
        }
        LogicalPlan::Optional { new_columns, .. } => {
            let _ = write!(s, "adds [{}]", new_columns.join(", "));
        }
        LogicalPlan::CartesianProduct { .. } => {
            s.pop();
        }
        LogicalPlan::HashJoin {
            left_keys,
            right_keys,
            ..
        } => {
            for (i, (l, r)) in left_keys.iter().zip(right_keys).enumerate() {
                if i > 0 {
                    s.push_str(" AND ");
                }
                let _ = write!(s, "{} = {}", expr_to_string(l), expr_to_string(r));
            }
        }
        LogicalPlan::BindPath {
            var: v,
            start,
            rels,
            ..
        } => {
            var(&mut s, v);
            let _ = write!(s, " = ({start}) via [{}]", rels.join(", "));
        }
        LogicalPlan::Create { pattern, .. } => {
            for (i, p) in pattern.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                pattern_part(&mut s, p);
            }
        }
        LogicalPlan::Merge { part, .. } => pattern_part(&mut s, part),
        LogicalPlan::SetProperties { items, .. } => {
            let st = crate::ast::Statement {
                mode: crate::ast::Mode::Run,
                at: None,
                clauses: vec![crate::ast::Clause::Set(crate::ast::SetClause {
                    items: items.clone(),
                    span: crate::ast::Span::default(),
                })],
                span: crate::ast::Span::default(),
                parameters: Vec::new(),
            };
            let text = crate::print::statement_to_string(&st);
            s.push_str(text.trim_start_matches("SET "));
        }
        LogicalPlan::Delete { exprs, .. } => {
            let e: Vec<String> = exprs.iter().map(expr_to_string).collect();
            s.push_str(&e.join(", "));
        }
        LogicalPlan::Remove { items, .. } => {
            let st = crate::ast::Statement {
                mode: crate::ast::Mode::Run,
                at: None,
                clauses: vec![crate::ast::Clause::Remove(crate::ast::RemoveClause {
                    items: items.clone(),
                    span: crate::ast::Span::default(),
                })],
                span: crate::ast::Span::default(),
                parameters: Vec::new(),
            };
            let text = crate::print::statement_to_string(&st);
            s.push_str(text.trim_start_matches("REMOVE "));
        }
    }
    s
}

impl fmt::Display for LogicalPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Iterative so that EXPLAIN of a very long clause chain cannot overflow the stack.
        let mut stack: Vec<(&LogicalPlan, usize)> = vec![(self, 0)];
        let mut first = true;
        while let Some((p, depth)) = stack.pop() {
            if !first {
                f.write_char('\n')?;
            }
            first = false;
            write!(f, "{}{}", "  ".repeat(depth), describe(p))?;
            for c in p.children().into_iter().rev() {
                stack.push((c, depth + 1));
            }
        }
        Ok(())
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.root)
    }
}
