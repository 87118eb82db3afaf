//! Expression checks: variables, property keys, labels, functions, roles, aggregates.

use super::{CheckErrorKind, Checker, Ctx};
use crate::ast::*;
use crate::diag::did_you_mean;
use crate::functions::{FUNCTIONS, FunctionKind, lookup};
use crate::print::expr_to_string;
use crate::schema::ValueKind;

impl Checker<'_> {
    /// Checks an expression in the current scope.
    pub(crate) fn expr(&mut self, e: &Expr, ctx: Ctx) {
        self.expr_in(e, ctx, false);
    }

    /// What an expression evaluates to, when the checker can tell.
    fn kind_of(&self, e: &Expr) -> ValueKind {
        match &e.kind {
            ExprKind::Variable(v) => self.scope.get(v).unwrap_or(ValueKind::Any),
            ExprKind::Index(b, _) if self.kind_of(b) == ValueKind::RelList => ValueKind::Rel,
            ExprKind::Call { name, .. } => match lookup(&name.name).map(|f| f.name) {
                Some("startNode" | "endNode") => ValueKind::Node,
                _ => ValueKind::Any,
            },
            ExprKind::Literal(Literal::Null) => ValueKind::Any,
            ExprKind::Literal(_) | ExprKind::List(_) => ValueKind::Literal,
            ExprKind::Map(_) => ValueKind::Map,
            _ => ValueKind::Any,
        }
    }

    fn expect_kind(&mut self, e: &Expr, func: &str, allowed: &[ValueKind]) {
        let k = self.kind_of(e);
        // Literal values are left to the functions themselves (`length([1])` is fine).
        if !matches!(k, ValueKind::Any | ValueKind::Literal | ValueKind::Map)
            && !allowed.contains(&k)
        {
            let want: Vec<&str> = allowed.iter().map(|k| k.noun()).collect();
            self.error(
                CheckErrorKind::WrongKind,
                e.span,
                format!(
                    "{func}() expects {}, but `{}` is {}",
                    want.join(" or "),
                    expr_to_string(e),
                    k.noun()
                ),
                None,
            );
        }
    }

    fn expr_in(&mut self, e: &Expr, ctx: Ctx, in_agg: bool) {
        if !self.projected.is_empty() && self.projected.contains(&expr_to_string(e)) {
            return;
        }
        match &e.kind {
            ExprKind::Variable(v) => {
                if self.scope.get(v).is_none() {
                    let hint = self.undefined_hint(v);
                    self.error(
                        CheckErrorKind::UndefinedVariable,
                        e.span,
                        format!("variable `{v}` is not defined"),
                        hint,
                    );
                }
            }
            ExprKind::Property(base, key) => {
                self.expr_in(base, ctx, in_agg);
                let k = self.kind_of(base);
                self.property_key(k, key);
            }
            ExprKind::HasLabels(base, labels, _) => {
                self.expr_in(base, ctx, in_agg);
                let k = self.kind_of(base);
                if !matches!(k, ValueKind::Node | ValueKind::Any) {
                    self.error(
                        CheckErrorKind::WrongKind,
                        base.span,
                        format!(
                            "label tests need a node; `{}` is {}",
                            expr_to_string(base),
                            k.noun()
                        ),
                        Some("use type(r) = 'CALLS' for relationships".into()),
                    );
                }
                for l in labels {
                    if self.schema.resolve_label(&l.name).is_none() {
                        let hint = did_you_mean(&l.name, self.schema.labels().collect::<Vec<_>>());
                        self.error(
                            CheckErrorKind::UnknownLabel,
                            l.span,
                            format!("unknown label `{}`", l.name),
                            hint,
                        );
                    }
                }
            }
            ExprKind::CountStar => self.aggregate_here(e, ctx, in_agg),
            ExprKind::Call {
                name,
                distinct,
                args,
            } => {
                let Some(f) = lookup(&name.name) else {
                    let hint = if self.schema.procedure(&name.name).is_some() {
                        Some(format!(
                            "`{}` is a procedure: use `CALL {}() YIELD ...`",
                            name.name, name.name
                        ))
                    } else {
                        did_you_mean(&name.name, FUNCTIONS.iter().map(|f| f.name))
                    };
                    self.error(
                        CheckErrorKind::UnknownFunction,
                        name.span,
                        format!("unknown function `{}`", name.name),
                        hint,
                    );
                    for a in args {
                        self.expr_in(a, ctx, in_agg);
                    }
                    return;
                };
                if args.len() < f.min_args || args.len() > f.max_args {
                    self.error(
                        CheckErrorKind::WrongArgumentCount,
                        e.span,
                        format!(
                            "{}() takes {} argument(s), {} given",
                            f.name,
                            super::arity(f.min_args, f.max_args),
                            args.len()
                        ),
                        None,
                    );
                }
                let is_agg = f.kind == FunctionKind::Aggregate;
                if is_agg {
                    self.aggregate_here(e, ctx, in_agg);
                    self.deterministic_aggregate_args(e, args);
                } else if *distinct {
                    self.error(
                        CheckErrorKind::Invalid,
                        e.span,
                        format!(
                            "DISTINCT is only allowed in aggregate functions, not in {}()",
                            f.name
                        ),
                        None,
                    );
                }
                for a in args {
                    self.expr_in(a, ctx, in_agg || is_agg);
                }
                self.function_args(f.name, args);
            }
            ExprKind::Binary(op @ (BinaryOp::And | BinaryOp::Or | BinaryOp::Xor), a, b) => {
                self.boolean_operand(op.symbol(), a);
                self.boolean_operand(op.symbol(), b);
                self.expr_in(a, ctx, in_agg);
                self.expr_in(b, ctx, in_agg);
            }
            ExprKind::Binary(BinaryOp::In, a, b) => {
                // Judged on the written expression only: a variable bound to a literal may
                // well be a list.
                let not_a_list = matches!(
                    b.kind,
                    ExprKind::Literal(
                        Literal::Bool(_) | Literal::Int(_) | Literal::Float(_) | Literal::String(_)
                    ) | ExprKind::Map(_)
                );
                if not_a_list {
                    self.error(
                        CheckErrorKind::WrongKind,
                        b.span,
                        format!(
                            "IN expects a list on the right, but `{}` is not one",
                            expr_to_string(b)
                        ),
                        None,
                    );
                }
                self.expr_in(a, ctx, in_agg);
                self.expr_in(b, ctx, in_agg);
            }
            ExprKind::Unary(UnaryOp::Not, x) => {
                self.boolean_operand("NOT", x);
                self.expr_in(x, ctx, in_agg);
            }
            ExprKind::ListComprehension { variable, .. }
            | ExprKind::Quantifier { variable, .. } => {
                let children = e.children();
                let Some((list, scoped)) = children.split_first() else {
                    return;
                };
                self.expr_in(list, ctx, in_agg);
                // The iteration variable exists only inside; an outer one of the same name
                // is shadowed there and visible again afterwards.
                let outer = self.scope.clone();
                self.scope.bind(&variable.name, ValueKind::Any);
                // An aggregate per element means nothing: the predicate and projection are
                // checked as plain expressions.
                for c in scoped {
                    self.expr_in(c, Ctx::Plain, in_agg);
                }
                self.scope = outer;
            }
            _ => {
                for c in e.children() {
                    self.expr_in(c, ctx, in_agg);
                }
            }
        }
    }

    /// A literal operand of a boolean operator that can never be a boolean (`123 AND
    /// true`) is refused before the query runs; other operands are checked at run time.
    fn boolean_operand(&mut self, operator: &str, operand: &Expr) {
        let noun = match &operand.kind {
            ExprKind::Literal(Literal::Int(_)) => "an integer",
            ExprKind::Literal(Literal::Float(_)) => "a float",
            ExprKind::Literal(Literal::String(_)) => "a string",
            ExprKind::List(_) | ExprKind::ListComprehension { .. } => "a list",
            ExprKind::Map(_) => "a map",
            _ => return,
        };
        self.error(
            CheckErrorKind::WrongKind,
            operand.span,
            format!(
                "{operator} expects boolean operands, but `{}` is {noun}",
                expr_to_string(operand)
            ),
            None,
        );
    }

    /// An aggregate over `rand()` would aggregate values no one can see or reproduce, so
    /// openCypher refuses it (`count(rand())`).
    fn deterministic_aggregate_args(&mut self, call: &Expr, args: &[Expr]) {
        let mut stack: Vec<&Expr> = args.iter().collect();
        while let Some(x) = stack.pop() {
            if let ExprKind::Call { name, .. } = &x.kind
                && name.name.eq_ignore_ascii_case("rand")
            {
                self.error(
                    CheckErrorKind::Invalid,
                    x.span,
                    format!(
                        "`{}` aggregates rand(), which is not deterministic",
                        expr_to_string(call)
                    ),
                    Some("compute the random values in a WITH first".into()),
                );
                return;
            }
            stack.extend(x.children());
        }
    }

    fn aggregate_here(&mut self, e: &Expr, ctx: Ctx, in_agg: bool) {
        if in_agg {
            self.error(
                CheckErrorKind::AggregateMisuse,
                e.span,
                "aggregate functions cannot be nested",
                Some("aggregate in a WITH first, then aggregate the result".into()),
            );
        } else if ctx == Ctx::Plain {
            self.error(
                CheckErrorKind::AggregateMisuse,
                e.span,
                format!("aggregate `{}` is not allowed here", expr_to_string(e)),
                Some("aggregate in a WITH or RETURN item, then filter with WITH ... WHERE".into()),
            );
        }
    }

    /// Argument checks specific to one function.
    fn function_args(&mut self, name: &str, args: &[Expr]) {
        use ValueKind::{Node, Path, Rel, RelList};
        let Some(first) = args.first() else { return };
        match name {
            "has_role" => {
                self.expect_kind(first, name, &[Rel]);
                if let Some(Expr {
                    kind: ExprKind::Literal(Literal::String(role)),
                    span,
                }) = args.get(1)
                    && self.schema.resolve_role(role).is_none()
                {
                    let roles: Vec<&str> = self.schema.roles().collect();
                    let hint = did_you_mean(role, roles.iter().copied())
                        .or_else(|| Some(format!("roles: {}", roles.join(", "))));
                    self.error(
                        CheckErrorKind::UnknownRole,
                        *span,
                        format!("unknown symbol role '{role}'"),
                        hint,
                    );
                }
            }
            "type" | "startNode" | "endNode" | "roles" => self.expect_kind(first, name, &[Rel]),
            "labels" => self.expect_kind(first, name, &[Node]),
            "nodes" => self.expect_kind(first, name, &[Path]),
            "relationships" => self.expect_kind(first, name, &[Path, RelList]),
            "length" => self.expect_kind(first, name, &[Path, RelList]),
            "properties" if self.kind_of(first) == ValueKind::Literal => self.error(
                CheckErrorKind::WrongKind,
                first.span,
                format!(
                    "properties() expects a node, relationship or map, but `{}` is a literal value",
                    expr_to_string(first)
                ),
                None,
            ),
            _ => {}
        }
    }
}
