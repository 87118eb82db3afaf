//! Canonical BQL text for an AST: `parse(print(ast))` gives the same tree (spans aside).
//!
//! Binary operations are fully parenthesised, so the printed text never depends on
//! precedence rules; EXPLAIN output and error messages use the same printer.

use std::fmt::{self, Write};

use crate::ast::*;

/// Prints a statement as canonical one-line BQL.
pub fn statement_to_string(st: &Statement) -> String {
    let mut s = String::new();
    match st.mode {
        Mode::Run => {}
        Mode::Explain => s.push_str("EXPLAIN "),
        Mode::Profile => s.push_str("PROFILE "),
    }
    match &st.at {
        None => {}
        Some(AtClause {
            target: AtTarget::Generation(g),
            ..
        }) => {
            let _ = write!(s, "AT GENERATION {g} ");
        }
        Some(AtClause {
            target: AtTarget::Run(r),
            ..
        }) => {
            s.push_str("AT RUN ");
            string_lit(&mut s, r);
            s.push(' ');
        }
    }
    for (i, c) in st.clauses.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        clause(&mut s, c);
    }
    s
}

/// Prints an expression as canonical BQL.
pub fn expr_to_string(e: &Expr) -> String {
    let mut s = String::new();
    expr(&mut s, e);
    s
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&expr_to_string(self))
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&statement_to_string(self))
    }
}

fn is_plain(name: &str) -> bool {
    let mut cs = name.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_reserved(name: &str) -> bool {
    crate::parse::KEYWORDS
        .iter()
        .any(|k| k.eq_ignore_ascii_case(name))
        || [
            "union",
            "case",
            "when",
            "then",
            "else",
            "end",
            "ascending",
            "descending",
        ]
        .iter()
        .any(|k| k.eq_ignore_ascii_case(name))
}

fn backticked(s: &mut String, name: &str) {
    s.push('`');
    s.push_str(&name.replace('`', "``"));
    s.push('`');
}

/// A variable or alias: backticked when not a plain identifier or when reserved.
pub(crate) fn push_var(s: &mut String, name: &str) {
    // `shortestPath` is only a keyword before `(`, so it is a valid variable.
    let reserved = is_reserved(name)
        && !name.eq_ignore_ascii_case("shortestpath")
        && !name.eq_ignore_ascii_case("allshortestpaths");
    if is_plain(name) && !reserved {
        s.push_str(name)
    } else {
        backticked(s, name)
    }
}

/// A label, type, property or map key: keywords are fine here.
pub(crate) fn push_name(s: &mut String, name: &str) {
    if is_plain(name) {
        s.push_str(name)
    } else {
        backticked(s, name)
    }
}

fn list<T>(s: &mut String, items: &[T], mut f: impl FnMut(&mut String, &T)) {
    for (i, it) in items.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        f(s, it);
    }
}

fn clause(s: &mut String, c: &Clause) {
    match c {
        Clause::Match(m) => {
            if m.optional {
                s.push_str("OPTIONAL ");
            }
            s.push_str("MATCH ");
            list(s, &m.pattern, pattern_part);
            where_(s, &m.where_);
        }
        Clause::Unwind(u) => {
            s.push_str("UNWIND ");
            expr(s, &u.expr);
            s.push_str(" AS ");
            push_var(s, &u.variable.name);
        }
        Clause::With(p) => {
            s.push_str("WITH ");
            projection(s, p);
            where_(s, &p.where_);
        }
        Clause::Return(p) => {
            s.push_str("RETURN ");
            projection(s, p);
        }
        Clause::Call(c) => {
            s.push_str("CALL ");
            let mut first = true;
            for part in c.procedure.name.split('.') {
                if !first {
                    s.push('.');
                }
                first = false;
                push_name(s, part);
            }
            if let Some(args) = &c.args {
                s.push('(');
                list(s, args, expr);
                s.push(')');
            }
            if let Some(ys) = &c.yields {
                s.push_str(" YIELD ");
                if ys.is_empty() {
                    s.push('*');
                }
                list(s, ys, |s, y| {
                    push_name(s, &y.field.name);
                    if let Some(a) = &y.alias {
                        s.push_str(" AS ");
                        push_var(s, &a.name);
                    }
                });
                where_(s, &c.where_);
            }
        }
        Clause::Create(c) => {
            s.push_str("CREATE ");
            list(s, &c.pattern, pattern_part);
        }
        Clause::Merge(m) => {
            s.push_str("MERGE ");
            pattern_part(s, &m.part);
            if !m.on_create.is_empty() {
                s.push_str(" ON CREATE SET ");
                list(s, &m.on_create, set_item);
            }
            if !m.on_match.is_empty() {
                s.push_str(" ON MATCH SET ");
                list(s, &m.on_match, set_item);
            }
        }
        Clause::Set(c) => {
            s.push_str("SET ");
            list(s, &c.items, set_item);
        }
        Clause::Delete(d) => {
            if d.detach {
                s.push_str("DETACH ");
            }
            s.push_str("DELETE ");
            list(s, &d.exprs, expr);
        }
        Clause::Remove(r) => {
            s.push_str("REMOVE ");
            list(s, &r.items, |s, it| match it {
                RemoveItem::Property { variable, key } => {
                    push_var(s, &variable.name);
                    s.push('.');
                    push_name(s, &key.name);
                }
                RemoveItem::Labels { variable, labels } => {
                    push_var(s, &variable.name);
                    label_list(s, labels, LabelMode::All);
                }
            });
        }
    }
}

fn where_(s: &mut String, w: &Option<Expr>) {
    if let Some(w) = w {
        s.push_str(" WHERE ");
        expr(s, w);
    }
}

fn set_item(s: &mut String, it: &SetItem) {
    match it {
        SetItem::Property {
            variable,
            key,
            value,
        } => {
            push_var(s, &variable.name);
            s.push('.');
            push_name(s, &key.name);
            s.push_str(" = ");
            expr(s, value);
        }
        SetItem::Merge { variable, value } => {
            push_var(s, &variable.name);
            s.push_str(" += ");
            expr(s, value);
        }
        SetItem::Replace { variable, value } => {
            push_var(s, &variable.name);
            s.push_str(" = ");
            expr(s, value);
        }
        SetItem::Labels { variable, labels } => {
            push_var(s, &variable.name);
            label_list(s, labels, LabelMode::All);
        }
    }
}

fn projection(s: &mut String, p: &Projection) {
    if p.distinct {
        s.push_str("DISTINCT ");
    }
    if p.star {
        s.push('*');
        if !p.items.is_empty() {
            s.push_str(", ");
        }
    }
    list(s, &p.items, |s, it| {
        expr(s, &it.expr);
        if let Some(a) = &it.alias {
            s.push_str(" AS ");
            push_var(s, &a.name);
        }
    });
    if !p.order_by.is_empty() {
        s.push_str(" ORDER BY ");
        list(s, &p.order_by, |s, o| {
            expr(s, &o.expr);
            if o.descending {
                s.push_str(" DESC");
            }
        });
    }
    if let Some(e) = &p.skip {
        s.push_str(" SKIP ");
        expr(s, e);
    }
    if let Some(e) = &p.limit {
        s.push_str(" LIMIT ");
        expr(s, e);
    }
}

fn label_list(s: &mut String, labels: &[Ident], mode: LabelMode) {
    for (i, l) in labels.iter().enumerate() {
        s.push_str(if i == 0 || mode == LabelMode::All {
            ":"
        } else {
            "|"
        });
        push_name(s, &l.name);
    }
}

/// Prints one pattern part (`p = shortestPath((a)-->(b))`).
pub(crate) fn pattern_part(s: &mut String, p: &PatternPart) {
    if let Some(v) = &p.variable {
        push_var(s, &v.name);
        s.push_str(" = ");
    }
    match p.search {
        PathSearch::All => pattern_element(s, &p.element),
        PathSearch::Shortest | PathSearch::AllShortest => {
            s.push_str(if p.search == PathSearch::Shortest {
                "shortestPath("
            } else {
                "allShortestPaths("
            });
            pattern_element(s, &p.element);
            s.push(')');
        }
    }
}

fn pattern_element(s: &mut String, e: &PatternElement) {
    node(s, &e.start);
    for (r, n) in &e.chain {
        rel(s, r);
        node(s, n);
    }
}

/// Prints a node pattern.
pub(crate) fn node(s: &mut String, n: &NodePattern) {
    s.push('(');
    if let Some(v) = &n.variable {
        push_var(s, &v.name);
    }
    label_list(s, &n.labels, n.label_mode);
    if let Some(p) = &n.properties {
        if n.variable.is_some() || !n.labels.is_empty() {
            s.push(' ');
        }
        expr(s, p);
    }
    s.push(')');
}

/// Prints a relationship pattern with its arrows.
pub(crate) fn rel(s: &mut String, r: &RelPattern) {
    s.push_str(if r.direction == Direction::Incoming {
        "<-["
    } else {
        "-["
    });
    if let Some(v) = &r.variable {
        push_var(s, &v.name);
    }
    for (i, t) in r.types.iter().enumerate() {
        s.push_str(if i == 0 { ":" } else { "|" });
        push_name(s, &t.name);
    }
    if let Some(l) = r.length {
        s.push('*');
        match (l.min, l.max) {
            (Some(a), Some(b)) if a == b => {
                let _ = write!(s, "{a}");
            }
            (a, b) => {
                if a.is_some() || b.is_some() {
                    if let Some(a) = a {
                        let _ = write!(s, "{a}");
                    }
                    s.push_str("..");
                    if let Some(b) = b {
                        let _ = write!(s, "{b}");
                    }
                }
            }
        }
    }
    if let Some(p) = &r.properties {
        s.push(' ');
        expr(s, p);
    }
    s.push_str(if r.direction == Direction::Outgoing {
        "]->"
    } else {
        "]-"
    });
}

fn string_lit(s: &mut String, v: &str) {
    s.push('\'');
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '\'' => s.push_str("\\'"),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            '\r' => s.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('\'');
}

/// Whether `e` can be followed by `.key`, `[i]` or `:Label` without parentheses.
fn is_postfix_safe(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Variable(_)
            | ExprKind::Slot(_)
            | ExprKind::Parameter(_)
            | ExprKind::Property(..)
            | ExprKind::Index(..)
            | ExprKind::Slice(..)
            | ExprKind::Call { .. }
            | ExprKind::CountStar
            | ExprKind::List(_)
            | ExprKind::Map(_)
            | ExprKind::ListComprehension { .. }
            | ExprKind::Quantifier { .. }
            | ExprKind::Case { .. }
    ) || matches!(
        &e.kind,
        ExprKind::Literal(Literal::String(_) | Literal::Bool(_) | Literal::Null)
    )
}

fn postfix_base(s: &mut String, e: &Expr) {
    if is_postfix_safe(e) {
        expr(s, e);
    } else {
        s.push('(');
        expr(s, e);
        s.push(')');
    }
}

fn expr(s: &mut String, e: &Expr) {
    match &e.kind {
        ExprKind::Literal(l) => match l {
            Literal::Null => s.push_str("null"),
            Literal::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
            Literal::Int(i) => {
                let _ = write!(s, "{i}");
            }
            Literal::Float(f) => {
                let t = format!("{f:?}");
                if *f < 0.0 {
                    let _ = write!(s, "-({})", &t[1..]);
                } else {
                    s.push_str(&t);
                }
            }
            Literal::String(v) => string_lit(s, v),
        },
        ExprKind::Parameter(p) => {
            s.push('$');
            if p.bytes().all(|b| b.is_ascii_digit()) {
                s.push_str(p)
            } else {
                push_name(s, p)
            }
        }
        ExprKind::Variable(v) => push_var(s, v),
        ExprKind::Slot(slot) => push_var(s, &slot.name),
        ExprKind::Property(b, k) => {
            postfix_base(s, b);
            s.push('.');
            push_name(s, &k.name);
        }
        ExprKind::Index(b, i) => {
            postfix_base(s, b);
            s.push('[');
            expr(s, i);
            s.push(']');
        }
        ExprKind::Slice(b, from, to) => {
            postfix_base(s, b);
            s.push('[');
            if let Some(f) = from {
                expr(s, f);
            }
            s.push_str("..");
            if let Some(t) = to {
                expr(s, t);
            }
            s.push(']');
        }
        ExprKind::HasLabels(b, labels, mode) => {
            postfix_base(s, b);
            label_list(s, labels, *mode);
        }
        ExprKind::List(items) => {
            s.push('[');
            list(s, items, expr);
            s.push(']');
        }
        ExprKind::Map(entries) => {
            s.push('{');
            list(s, entries, |s, (k, v)| {
                push_name(s, &k.name);
                s.push_str(": ");
                expr(s, v);
            });
            s.push('}');
        }
        ExprKind::Unary(op, x) => {
            // NOT binds looser than comparisons, so it is wrapped as a whole.
            s.push_str(match op {
                UnaryOp::Not => "(NOT (",
                UnaryOp::Neg => "-(",
                UnaryOp::Plus => "+(",
            });
            expr(s, x);
            s.push_str(if *op == UnaryOp::Not { "))" } else { ")" });
        }
        ExprKind::Binary(op, a, b) => {
            s.push('(');
            expr(s, a);
            s.push(' ');
            s.push_str(op.symbol());
            s.push(' ');
            expr(s, b);
            s.push(')');
        }
        ExprKind::IsNull { expr: x, negated } => {
            s.push('(');
            expr(s, x);
            s.push_str(if *negated {
                " IS NOT NULL)"
            } else {
                " IS NULL)"
            });
        }
        ExprKind::Call {
            name,
            distinct,
            args,
        } => {
            let mut first = true;
            for part in name.name.split('.') {
                if !first {
                    s.push('.');
                }
                first = false;
                push_name(s, part);
            }
            s.push('(');
            if *distinct {
                s.push_str("DISTINCT ");
            }
            list(s, args, expr);
            s.push(')');
        }
        ExprKind::CountStar => s.push_str("count(*)"),
        ExprKind::ListComprehension {
            variable,
            list,
            predicate,
            projection,
        } => {
            s.push('[');
            iteration(s, &variable.name, list, predicate.as_deref());
            if let Some(projection) = projection {
                s.push_str(" | ");
                expr(s, projection);
            }
            s.push(']');
        }
        ExprKind::Quantifier {
            quantifier,
            variable,
            list,
            predicate,
        } => {
            s.push_str(quantifier.name());
            s.push('(');
            iteration(s, &variable.name, list, Some(predicate));
            s.push(')');
        }
        ExprKind::Case {
            operand,
            branches,
            otherwise,
        } => case(s, operand.as_deref(), branches, otherwise.as_deref()),
    }
}

/// `x IN list [WHERE predicate]`, shared by comprehensions and quantifiers.
fn iteration(s: &mut String, variable: &str, list: &Expr, predicate: Option<&Expr>) {
    push_var(s, variable);
    s.push_str(" IN ");
    expr(s, list);
    if let Some(predicate) = predicate {
        s.push_str(" WHERE ");
        expr(s, predicate);
    }
}

fn case(
    s: &mut String,
    operand: Option<&Expr>,
    branches: &[(Expr, Expr)],
    otherwise: Option<&Expr>,
) {
    s.push_str("CASE");
    if let Some(operand) = operand {
        s.push(' ');
        expr(s, operand);
    }
    for (when, then) in branches {
        s.push_str(" WHEN ");
        expr(s, when);
        s.push_str(" THEN ");
        expr(s, then);
    }
    if let Some(otherwise) = otherwise {
        s.push_str(" ELSE ");
        expr(s, otherwise);
    }
    s.push_str(" END");
}
