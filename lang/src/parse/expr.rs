//! Expression building: folds pest's flat operator chains into binary trees while
//! tracking tree depth, so a 100 000-term `1+1+...` is refused instead of producing a tree
//! whose recursive drop would overflow the stack.

use batho_grammar::{Pair, Rule};

use super::{Builder, Built, MAX_EXPR_DEPTH, ParseErrorKind, ParseResult, span};
use crate::ast::*;

impl<'t> Builder<'t> {
    pub(super) fn expr(&self, p: Pair<'t, Rule>) -> ParseResult<Expr> {
        Ok(self.expr_at(p, 0)?.0)
    }

    fn deeper(&self, depth: usize, sp: Span) -> ParseResult<usize> {
        if depth > MAX_EXPR_DEPTH {
            return Err(self.error(
                ParseErrorKind::TooDeep,
                sp,
                format!("expression nested deeper than {MAX_EXPR_DEPTH} levels"),
                Some("split it, or pass a list as a parameter".into()),
            ));
        }
        Ok(depth)
    }

    /// Builds any expression-level pair. `_unused` keeps call sites uniform.
    pub(super) fn expr_at(&self, p: Pair<'t, Rule>, _unused: usize) -> ParseResult<Built> {
        let mut p = p;
        loop {
            let sp = span(&p);
            let rule = p.as_rule();
            match rule {
                Rule::expr => {
                    p = p.into_inner().next().ok_or_else(|| self.internal(sp))?;
                }
                Rule::paren_expr => {
                    let inner = p.into_inner().next().ok_or_else(|| self.internal(sp))?;
                    let (mut e, d) = self.expr_at(inner, 0)?;
                    // The parentheses are part of the expression's text: a result column
                    // is named by its source text exactly as written, `(a).x` included.
                    e.span = sp;
                    return Ok((e, d));
                }
                Rule::or_expr
                | Rule::xor_expr
                | Rule::and_expr
                | Rule::add_expr
                | Rule::mul_expr
                | Rule::pow_expr
                | Rule::not_expr
                | Rule::comparison
                | Rule::predicate_expr
                | Rule::unary_expr
                | Rule::postfix_expr => {
                    let mut children: Vec<Pair<'t, Rule>> = p.into_inner().collect();
                    if children.len() == 1 {
                        p = children.pop().ok_or_else(|| self.internal(sp))?;
                        continue;
                    }
                    return match rule {
                        Rule::not_expr => self.not_expr(children, sp),
                        Rule::comparison => self.comparison(children, sp),
                        Rule::predicate_expr => self.predicates(children),
                        Rule::unary_expr => self.unary(children, sp),
                        Rule::postfix_expr => self.postfix(children),
                        _ => self.fold(rule, children),
                    };
                }
                _ => return self.atom(p),
            }
        }
    }

    fn binary(&self, op: BinaryOp, l: Built, r: Built) -> ParseResult<Built> {
        let sp = l.0.span.to(r.0.span);
        let d = self.deeper(l.1.max(r.1) + 1, sp)?;
        Ok((
            Expr::new(ExprKind::Binary(op, Box::new(l.0), Box::new(r.0)), sp),
            d,
        ))
    }

    /// Left-associative chains: `a OR b OR c`, `a + b - c`, `a ^ b ^ c`.
    fn fold(&self, rule: Rule, children: Vec<Pair<'t, Rule>>) -> ParseResult<Built> {
        let mut acc: Option<Built> = None;
        let mut pending: Option<BinaryOp> = None;
        for c in children {
            let op = match c.as_rule() {
                Rule::OR => Some(BinaryOp::Or),
                Rule::XOR => Some(BinaryOp::Xor),
                Rule::AND => Some(BinaryOp::And),
                Rule::add_op => Some(if c.as_str() == "-" {
                    BinaryOp::Sub
                } else {
                    BinaryOp::Add
                }),
                Rule::mul_op => Some(match c.as_str() {
                    "*" => BinaryOp::Mul,
                    "/" => BinaryOp::Div,
                    _ => BinaryOp::Mod,
                }),
                _ => None,
            };
            if op.is_some() {
                pending = op;
                continue;
            }
            let operand = self.expr_at(c, 0)?;
            acc = Some(match acc {
                None => operand,
                Some(lhs) => {
                    // `^` has no operator pair (the literal is silent in the grammar).
                    let op = pending.take().unwrap_or(if rule == Rule::pow_expr {
                        BinaryOp::Pow
                    } else {
                        BinaryOp::And
                    });
                    self.binary(op, lhs, operand)?
                }
            });
        }
        acc.ok_or_else(|| self.internal(Span::default()))
    }

    fn not_expr(&self, children: Vec<Pair<'t, Rule>>, sp: Span) -> ParseResult<Built> {
        let mut nots = 0;
        let mut inner = None;
        for c in children {
            if c.as_rule() == Rule::NOT {
                nots += 1;
            } else {
                inner = Some(self.expr_at(c, 0)?);
            }
        }
        let (mut e, mut d) = inner.ok_or_else(|| self.internal(sp))?;
        for _ in 0..nots {
            d = self.deeper(d + 1, sp)?;
            e = Expr::new(ExprKind::Unary(UnaryOp::Not, Box::new(e)), sp);
        }
        Ok((e, d))
    }

    /// `a < b` or a chain `a < b <= c`, which means `a < b AND b <= c` (the middle operand
    /// is evaluated once per comparison it takes part in).
    fn comparison(&self, children: Vec<Pair<'t, Rule>>, sp: Span) -> ParseResult<Built> {
        let mut it = children.into_iter();
        let first = it.next().ok_or_else(|| self.internal(sp))?;
        let mut left = self.expr_at(first, 0)?;
        let mut chain: Option<Built> = None;
        while let (Some(op), Some(right)) = (it.next(), it.next()) {
            let op = match op.as_str() {
                "=" => BinaryOp::Eq,
                "<>" | "!=" => BinaryOp::Ne,
                "<" => BinaryOp::Lt,
                "<=" => BinaryOp::Le,
                ">" => BinaryOp::Gt,
                ">=" => BinaryOp::Ge,
                _ => BinaryOp::Regex,
            };
            let right = self.expr_at(right, 0)?;
            let link = self.binary(op, left, right.clone())?;
            chain = Some(match chain {
                None => link,
                Some(earlier) => self.binary(BinaryOp::And, earlier, link)?,
            });
            left = right;
        }
        chain.ok_or_else(|| self.internal(sp))
    }

    fn predicates(&self, children: Vec<Pair<'t, Rule>>) -> ParseResult<Built> {
        let mut it = children.into_iter();
        let first = it.next().ok_or_else(|| self.internal(Span::default()))?;
        let mut acc = self.expr_at(first, 0)?;
        for suffix in it {
            let ssp = span(&suffix);
            let mut parts = suffix.into_inner();
            let head = parts.next().ok_or_else(|| self.internal(ssp))?;
            let op = match head.as_rule() {
                Rule::is_null | Rule::is_not_null => {
                    let sp = acc.0.span.to(ssp);
                    let d = self.deeper(acc.1 + 1, sp)?;
                    let negated = head.as_rule() == Rule::is_not_null;
                    acc = (
                        Expr::new(
                            ExprKind::IsNull {
                                expr: Box::new(acc.0),
                                negated,
                            },
                            sp,
                        ),
                        d,
                    );
                    continue;
                }
                Rule::starts_with => BinaryOp::StartsWith,
                Rule::ends_with => BinaryOp::EndsWith,
                Rule::contains_op => BinaryOp::Contains,
                _ => BinaryOp::In,
            };
            let rhs = parts.next().ok_or_else(|| self.internal(ssp))?;
            let rhs = self.expr_at(rhs, 0)?;
            acc = self.binary(op, acc, rhs)?;
        }
        Ok(acc)
    }

    fn unary(&self, children: Vec<Pair<'t, Rule>>, sp: Span) -> ParseResult<Built> {
        let mut ops: Vec<(UnaryOp, Span)> = Vec::new();
        let mut operand = None;
        for c in children {
            if c.as_rule() == Rule::unary_op {
                ops.push((
                    if c.as_str() == "-" {
                        UnaryOp::Neg
                    } else {
                        UnaryOp::Plus
                    },
                    span(&c),
                ));
            } else {
                operand = Some(c);
            }
        }
        let operand = operand.ok_or_else(|| self.internal(sp))?;
        // `-9223372036854775808` is only representable with its sign, so a minus directly
        // before an integer literal is folded into the literal.
        let (mut e, mut d) = match (ops.last(), self.bare_integer(&operand)) {
            (Some((UnaryOp::Neg, op_span)), Some(digits)) => {
                let lsp = Span::new(op_span.start, span(&operand).end);
                ops.pop();
                (
                    Expr::new(
                        ExprKind::Literal(self.integer(&format!("-{digits}"), lsp)?),
                        lsp,
                    ),
                    0,
                )
            }
            _ => self.expr_at(operand, 0)?,
        };
        for (op, op_span) in ops.into_iter().rev() {
            d = self.deeper(d + 1, sp)?;
            e = Expr::new(
                ExprKind::Unary(op, Box::new(e)),
                Span::new(op_span.start, sp.end),
            );
        }
        Ok((e, d))
    }

    /// The digits of a postfix expression that is just a decimal integer literal.
    fn bare_integer(&self, p: &Pair<'t, Rule>) -> Option<&'t str> {
        let mut cur = p.clone();
        loop {
            let mut inner = cur.clone().into_inner();
            let first = inner.next()?;
            if inner.next().is_some() {
                return None;
            }
            match first.as_rule() {
                Rule::dec_int | Rule::hex_int | Rule::octal_int => return Some(first.as_str()),
                Rule::integer_lit | Rule::postfix_expr => cur = first,
                _ => return None,
            }
        }
    }

    fn postfix(&self, children: Vec<Pair<'t, Rule>>) -> ParseResult<Built> {
        let mut it = children.into_iter();
        let first = it.next().ok_or_else(|| self.internal(Span::default()))?;
        let (mut e, mut d) = self.expr_at(first, 0)?;
        for post in it {
            let psp = span(&post);
            let x = post.into_inner().next().ok_or_else(|| self.internal(psp))?;
            let sp = e.span.to(psp);
            let kind = match x.as_rule() {
                Rule::property_lookup => {
                    let name = x.into_inner().next().ok_or_else(|| self.internal(psp))?;
                    ExprKind::Property(Box::new(e), self.ident(name)?)
                }
                Rule::label_test => {
                    let labels = x.into_inner().next().ok_or_else(|| self.internal(psp))?;
                    let (labels, mode) = self.labels(labels)?;
                    ExprKind::HasLabels(Box::new(e), labels, mode)
                }
                _ => {
                    let inner = x.into_inner().next().ok_or_else(|| self.internal(psp))?;
                    if inner.as_rule() == Rule::slice {
                        let mut from = None;
                        let mut to = None;
                        for b in inner.into_inner() {
                            let is_from = b.as_rule() == Rule::slice_from;
                            let ex = b.into_inner().next().ok_or_else(|| self.internal(psp))?;
                            let (ex, ed) = self.expr_at(ex, 0)?;
                            d = d.max(ed);
                            if is_from {
                                from = Some(Box::new(ex))
                            } else {
                                to = Some(Box::new(ex))
                            }
                        }
                        ExprKind::Slice(Box::new(e), from, to)
                    } else {
                        let (ix, id) = self.expr_at(inner, 0)?;
                        d = d.max(id);
                        ExprKind::Index(Box::new(e), Box::new(ix))
                    }
                }
            };
            d = self.deeper(d + 1, sp)?;
            e = Expr::new(kind, sp);
        }
        Ok((e, d))
    }

    pub(super) fn integer(&self, text: &str, sp: Span) -> ParseResult<Literal> {
        let (neg, body) = match text.strip_prefix('-') {
            Some(b) => (true, b),
            None => (false, text),
        };
        let parsed = match (body.strip_prefix("0x"), body.strip_prefix("0o")) {
            (Some(hex), _) => i128::from_str_radix(hex, 16),
            (_, Some(octal)) => i128::from_str_radix(octal, 8),
            _ => body.parse::<i128>(),
        };
        let v = parsed
            .ok()
            .map(|v| if neg { -v } else { v })
            .and_then(|v| i64::try_from(v).ok());
        v.map(Literal::Int).ok_or_else(|| {
            self.error(
                ParseErrorKind::InvalidLiteral,
                sp,
                format!("integer literal {text} does not fit in 64 bits"),
                Some("use a float literal (e.g. `1.0e20`) for very large numbers".into()),
            )
        })
    }

    fn atom(&self, p: Pair<'t, Rule>) -> ParseResult<Built> {
        let sp = span(&p);
        let lit = |l: Literal| Ok((Expr::new(ExprKind::Literal(l), sp), 0));
        match p.as_rule() {
            Rule::float_lit => match p.as_str().parse::<f64>() {
                Ok(f) if f.is_finite() => lit(Literal::Float(f)),
                _ => Err(self.error(
                    ParseErrorKind::InvalidLiteral,
                    sp,
                    format!("float literal {} is out of range", p.as_str()),
                    None,
                )),
            },
            Rule::integer_lit => {
                let text = p.as_str();
                lit(self.integer(text, sp)?)
            }
            Rule::string_lit => {
                let inner = p.into_inner().next().ok_or_else(|| self.internal(sp))?;
                let isp = span(&inner);
                lit(Literal::String(self.unescape(inner.as_str(), isp.start)?))
            }
            Rule::bool_lit => lit(Literal::Bool(
                p.into_inner()
                    .next()
                    .is_some_and(|b| b.as_rule() == Rule::TRUE),
            )),
            Rule::null_lit => lit(Literal::Null),
            Rule::parameter => Ok((
                Expr::new(ExprKind::Parameter(self.parameter_name(p)?), sp),
                0,
            )),
            Rule::count_star => Ok((Expr::new(ExprKind::CountStar, sp), 0)),
            Rule::function_call => {
                let mut name = None;
                let mut distinct = false;
                let mut args = Vec::new();
                let mut d = 0;
                for c in p.into_inner() {
                    match c.as_rule() {
                        Rule::function_name => name = Some(self.dotted_name(c)?),
                        Rule::DISTINCT => distinct = true,
                        _ => {
                            let (e, ed) = self.expr_at(c, 0)?;
                            d = d.max(ed);
                            args.push(e);
                        }
                    }
                }
                let name = name.ok_or_else(|| self.internal(sp))?;
                let d = self.deeper(d + 1, sp)?;
                Ok((
                    Expr::new(
                        ExprKind::Call {
                            name,
                            distinct,
                            args,
                        },
                        sp,
                    ),
                    d,
                ))
            }
            Rule::list_lit => {
                let mut d = 0;
                let mut items = Vec::new();
                for c in p.into_inner() {
                    let (e, ed) = self.expr_at(c, 0)?;
                    d = d.max(ed);
                    items.push(e);
                }
                let d = self.deeper(d + 1, sp)?;
                Ok((Expr::new(ExprKind::List(items), sp), d))
            }
            Rule::map_lit => {
                let mut d = 0;
                let mut entries: Vec<(Ident, Expr)> = Vec::new();
                for entry in p.into_inner() {
                    let esp = span(&entry);
                    let mut parts = entry.into_inner();
                    let (Some(k), Some(v)) = (parts.next(), parts.next()) else {
                        return Err(self.internal(esp));
                    };
                    let k = self.ident(k)?;
                    if entries.iter().any(|(e, _)| e.name == k.name) {
                        return Err(self.error(
                            ParseErrorKind::Syntax,
                            k.span,
                            format!("duplicate key `{}` in map literal", k.name),
                            Some("remove one of the entries".into()),
                        ));
                    }
                    let (v, vd) = self.expr_at(v, 0)?;
                    d = d.max(vd);
                    entries.push((k, v));
                }
                let d = self.deeper(d + 1, sp)?;
                Ok((Expr::new(ExprKind::Map(entries), sp), d))
            }
            Rule::variable => {
                let id = self.ident(p)?;
                Ok((Expr::new(ExprKind::Variable(id.name), sp), 0))
            }
            Rule::list_comprehension => self.list_comprehension(p),
            Rule::quantifier => self.quantifier(p),
            Rule::case_expr => self.case_expr(p),
            _ => Err(self.internal(sp)),
        }
    }

    /// `[x IN list WHERE predicate | projection]`.
    fn list_comprehension(&self, p: Pair<'t, Rule>) -> ParseResult<Built> {
        let sp = span(&p);
        let mut variable = None;
        let mut list = None;
        let mut predicate = None;
        let mut projection = None;
        let mut depth = 0;
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::variable => variable = Some(self.ident(c)?),
                Rule::IN => {}
                Rule::comprehension_where | Rule::comprehension_map => {
                    let is_where = c.as_rule() == Rule::comprehension_where;
                    let csp = span(&c);
                    let inner = c
                        .into_inner()
                        .find(|x| x.as_rule() == Rule::expr)
                        .ok_or_else(|| self.internal(csp))?;
                    let (e, d) = self.expr_at(inner, 0)?;
                    depth = depth.max(d);
                    if is_where {
                        predicate = Some(Box::new(e));
                    } else {
                        projection = Some(Box::new(e));
                    }
                }
                _ => {
                    let (e, d) = self.expr_at(c, 0)?;
                    depth = depth.max(d);
                    list = Some(Box::new(e));
                }
            }
        }
        let (Some(variable), Some(list)) = (variable, list) else {
            return Err(self.internal(sp));
        };
        let depth = self.deeper(depth + 1, sp)?;
        let kind = ExprKind::ListComprehension {
            variable,
            list,
            predicate,
            projection,
        };
        Ok((Expr::new(kind, sp), depth))
    }

    /// `all(x IN list WHERE predicate)`, `any(...)`, `none(...)`, `single(...)`.
    fn quantifier(&self, p: Pair<'t, Rule>) -> ParseResult<Built> {
        let sp = span(&p);
        let mut quantifier = None;
        let mut variable = None;
        let mut operands = Vec::new();
        let mut depth = 0;
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::quantifier_name => {
                    quantifier = Some(match c.as_str().to_ascii_lowercase().as_str() {
                        "all" => Quantifier::All,
                        "any" => Quantifier::Any,
                        "none" => Quantifier::None,
                        _ => Quantifier::Single,
                    })
                }
                Rule::variable => variable = Some(self.ident(c)?),
                Rule::IN | Rule::WHERE => {}
                _ => {
                    let (e, d) = self.expr_at(c, 0)?;
                    depth = depth.max(d);
                    operands.push(e);
                }
            }
        }
        let mut operands = operands.into_iter();
        let (Some(quantifier), Some(variable), Some(list), Some(predicate)) =
            (quantifier, variable, operands.next(), operands.next())
        else {
            return Err(self.internal(sp));
        };
        let depth = self.deeper(depth + 1, sp)?;
        let kind = ExprKind::Quantifier {
            quantifier,
            variable,
            list: Box::new(list),
            predicate: Box::new(predicate),
        };
        Ok((Expr::new(kind, sp), depth))
    }

    /// `CASE [operand] WHEN a THEN b ... [ELSE c] END`.
    fn case_expr(&self, p: Pair<'t, Rule>) -> ParseResult<Built> {
        let sp = span(&p);
        let mut operand = None;
        let mut branches = Vec::new();
        let mut otherwise = None;
        let mut depth = 0;
        for c in p.into_inner() {
            let csp = span(&c);
            let rule = c.as_rule();
            if matches!(rule, Rule::CASE | Rule::END) {
                continue;
            }
            let mut parts = Vec::new();
            for x in c.into_inner().filter(|x| x.as_rule() == Rule::expr) {
                let (e, d) = self.expr_at(x, 0)?;
                depth = depth.max(d);
                parts.push(e);
            }
            let mut parts = parts.into_iter();
            match (rule, parts.next(), parts.next()) {
                (Rule::case_operand, Some(e), None) => operand = Some(Box::new(e)),
                (Rule::case_default, Some(e), None) => otherwise = Some(Box::new(e)),
                (Rule::case_branch, Some(when), Some(then)) => branches.push((when, then)),
                _ => return Err(self.internal(csp)),
            }
        }
        let depth = self.deeper(depth + 1, sp)?;
        let kind = ExprKind::Case {
            operand,
            branches,
            otherwise,
        };
        Ok((Expr::new(kind, sp), depth))
    }

    /// Resolves escapes of a string body that starts at byte `offset` of the source.
    pub(super) fn unescape(&self, body: &str, offset: usize) -> ParseResult<String> {
        let mut out = String::with_capacity(body.len());
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            let bad = |len: usize, msg: String| {
                self.error(
                    ParseErrorKind::InvalidLiteral,
                    Span::new(offset + i, offset + i + len),
                    msg,
                    Some("write `\\\\` for a literal backslash".into()),
                )
            };
            let Some((_, e)) = chars.next() else {
                return Err(bad(1, "dangling backslash".into()));
            };
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                '0' => out.push('\0'),
                '\\' | '\'' | '"' | '`' => out.push(e),
                'u' | 'U' => {
                    let n = if e == 'u' { 4 } else { 8 };
                    let hex: String = chars.by_ref().take(n).map(|(_, h)| h).collect();
                    let ch = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                    match ch {
                        Some(ch) if hex.len() == n => out.push(ch),
                        _ => {
                            return Err(bad(
                                2 + hex.len(),
                                format!("invalid unicode escape \\{e}{hex}"),
                            ));
                        }
                    }
                }
                other => {
                    return Err(bad(
                        1 + other.len_utf8(),
                        format!("unknown escape sequence \\{other}"),
                    ));
                }
            }
        }
        Ok(out)
    }
}
