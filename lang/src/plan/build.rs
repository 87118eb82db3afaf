//! From a checked AST to a [`Plan`], with the simple rewrites that matter most on a code
//! graph: property-map and WHERE equalities on `id`/`name` become seeks, each predicate is
//! applied right after the operator that binds its last variable, disconnected pattern
//! parts joined by an equality become a hash join, and `ORDER BY ... LIMIT` becomes TopK.

use super::*;
use crate::ast::*;
use crate::check::BoundStatement;
use crate::check::clauses::contains_aggregate;
use crate::print::expr_to_string;
use crate::schema::Schema;

/// A plan could not be built: the statement uses something the planner does not support,
/// or it was not checked first.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot plan query: {message}")]
pub struct PlanError {
    /// What is not supported.
    pub message: String,
    /// Where.
    pub span: Span,
}

pub(super) type PlanResult<T> = Result<T, PlanError>;

/// Plans a statement that [`crate::check::check`] accepted; `checked` is what the check
/// returned. `source` names unaliased columns.
pub fn plan(
    source: &str,
    st: &Statement,
    checked: &BoundStatement,
    schema: &Schema,
) -> PlanResult<Plan> {
    let mut p = Planner {
        source,
        schema,
        next: 0,
        taken: Vec::new(),
    };
    collect_names(st, &mut p.taken);
    let mut cur = LogicalPlan::Argument {
        columns: Vec::new(),
    };
    // Every column the rows carry so far, internal `#` ones too (the checker's scope has
    // only the named variables).
    let mut row_columns: Vec<String> = Vec::new();
    let mut columns = Vec::new();
    for (index, clause) in st.clauses.iter().enumerate() {
        let (planned, yielded) = p.clause(cur, clause, checked, index, &mut row_columns)?;
        cur = planned;
        match clause {
            Clause::Return(_) => {
                columns = checked.in_scope_after(index).map(str::to_string).collect();
            }
            Clause::Call(_) if index + 1 == st.clauses.len() => columns = yielded,
            _ => {}
        }
    }
    Ok(Plan {
        root: cur,
        columns,
        mode: st.mode,
        writes: st.clauses.iter().any(Clause::is_write),
        moved_parameter: None,
    })
}

impl Planner<'_> {
    /// The operators of clause `index` over `cur`, and the columns a `CALL` yields (empty
    /// for the other clauses).
    fn clause(
        &mut self,
        cur: LogicalPlan,
        clause: &Clause,
        checked: &BoundStatement,
        index: usize,
        row_columns: &mut Vec<String>,
    ) -> PlanResult<(LogicalPlan, Vec<String>)> {
        let input = Box::new(cur);
        let planned = match clause {
            Clause::Match(m) if !m.optional => self.match_clause(*input, m, row_columns)?,
            Clause::Match(m) => self.optional_match(*input, m, row_columns)?,
            Clause::Unwind(u) => {
                add_column(row_columns, &u.variable.name);
                LogicalPlan::Unwind {
                    input,
                    expr: u.expr.clone(),
                    var: u.variable.name.clone(),
                }
            }
            Clause::With(proj) | Clause::Return(proj) => {
                let in_scope: Vec<String> =
                    checked.in_scope_before(index).map(str::to_string).collect();
                self.projection(*input, proj, row_columns, &in_scope)?
            }
            Clause::Call(call) => return self.call(*input, call, row_columns),
            Clause::Create(c) => {
                for part in &c.pattern {
                    add_pattern_columns(part, row_columns);
                }
                LogicalPlan::Create {
                    input,
                    pattern: c.pattern.clone(),
                }
            }
            Clause::Merge(m) => {
                add_pattern_columns(&m.part, row_columns);
                LogicalPlan::Merge {
                    input,
                    part: m.part.clone(),
                    on_create: m.on_create.clone(),
                    on_match: m.on_match.clone(),
                }
            }
            Clause::Set(s) => LogicalPlan::SetProperties {
                input,
                items: s.items.clone(),
            },
            Clause::Delete(d) => LogicalPlan::Delete {
                input,
                detach: d.detach,
                exprs: d.exprs.clone(),
            },
            Clause::Remove(r) => LogicalPlan::Remove {
                input,
                items: r.items.clone(),
            },
        };
        Ok((planned, Vec::new()))
    }

    /// `OPTIONAL MATCH`: the match planned over the row so far, nulls when it finds none.
    fn optional_match(
        &mut self,
        cur: LogicalPlan,
        m: &MatchClause,
        row_columns: &mut Vec<String>,
    ) -> PlanResult<LogicalPlan> {
        let before = row_columns.clone();
        let inner = LogicalPlan::Argument {
            columns: before.clone(),
        };
        let inner = self.match_clause(inner, m, row_columns)?;
        let new_columns = row_columns
            .iter()
            .filter(|column| !before.contains(column))
            .cloned()
            .collect();
        Ok(LogicalPlan::Optional {
            input: Box::new(cur),
            inner: Box::new(inner),
            new_columns,
        })
    }

    /// `CALL proc(args) [YIELD …] [WHERE …]`, and the columns it yields: those listed,
    /// else every output of the procedure.
    fn call(
        &mut self,
        cur: LogicalPlan,
        call: &CallClause,
        row_columns: &mut Vec<String>,
    ) -> PlanResult<(LogicalPlan, Vec<String>)> {
        let sig = self
            .schema
            .procedure(&call.procedure.name)
            .ok_or_else(|| PlanError {
                message: format!("unknown procedure `{}`", call.procedure.name),
                span: call.procedure.span,
            })?;
        let yields: Vec<(String, String)> = match &call.yields {
            Some(items) if !items.is_empty() => items
                .iter()
                .map(|y| (y.field.name.clone(), y.variable().name.clone()))
                .collect(),
            _ => sig
                .outputs
                .iter()
                .map(|(o, _)| (o.clone(), o.clone()))
                .collect(),
        };
        let yielded: Vec<String> = yields.iter().map(|(_, column)| column.clone()).collect();
        for column in &yielded {
            add_column(row_columns, column);
        }
        let out = LogicalPlan::ProcedureCall {
            input: Box::new(cur),
            procedure: sig.name.clone(),
            args: call.args.clone().unwrap_or_default(),
            yields,
        };
        let planned = match &call.where_ {
            Some(predicate) => LogicalPlan::Filter {
                input: Box::new(out),
                predicate: predicate.clone(),
            },
            None => out,
        };
        Ok((planned, yielded))
    }
}

/// Adds `name` to the row's columns (once).
pub(super) fn add_column(row_columns: &mut Vec<String>, name: &str) {
    if !row_columns.iter().any(|column| column == name) {
        row_columns.push(name.to_string());
    }
}

fn add_pattern_columns(part: &PatternPart, row_columns: &mut Vec<String>) {
    let nodes = part.element.nodes().map(|node| &node.variable);
    let relationships = part.element.chain.iter().map(|(rel, _)| &rel.variable);
    let names = std::iter::once(&part.variable)
        .chain(nodes)
        .chain(relationships);
    for variable in names.flatten() {
        add_column(row_columns, &variable.name);
    }
}

/// Every name the user wrote, so generated names can avoid them.
fn collect_names(st: &Statement, out: &mut Vec<String>) {
    let s = crate::print::statement_to_string(st);
    out.extend(
        s.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '#'))
            .map(str::to_string),
    );
}

struct PNode {
    name: String,
    labels: Vec<String>,
    mode: LabelMode,
}

struct PRel {
    name: String,
    types: Vec<String>,
    direction: Direction,
    length: Option<HopRange>,
}

struct PPart {
    path: Option<String>,
    search: PathSearch,
    nodes: Vec<PNode>,
    rels: Vec<PRel>,
    span: Span,
}

pub(super) struct Planner<'a> {
    pub(super) source: &'a str,
    schema: &'a Schema,
    next: usize,
    taken: Vec<String>,
}

pub(super) fn var_expr(name: &str, span: Span) -> Expr {
    Expr::new(ExprKind::Variable(name.to_string()), span)
}

fn and_all(mut preds: Vec<Expr>) -> Option<Expr> {
    let first = if preds.is_empty() {
        return None;
    } else {
        preds.remove(0)
    };
    Some(preds.into_iter().fold(first, |acc, p| {
        let sp = acc.span.to(p.span);
        Expr::new(
            ExprKind::Binary(BinaryOp::And, Box::new(acc), Box::new(p)),
            sp,
        )
    }))
}

/// Splits `a AND b AND c` into its conjuncts.
fn conjuncts(e: &Expr, out: &mut Vec<Expr>) {
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        match &x.kind {
            ExprKind::Binary(BinaryOp::And, a, b) => {
                stack.push(b);
                stack.push(a);
            }
            _ => out.push(x.clone()),
        }
    }
}

fn ready(e: &Expr, bound: &[String]) -> bool {
    e.variables().iter().all(|v| bound.contains(v))
}

/// Selectivity order of seeks, most selective (unique ids) first.
fn seek_rank(key: SeekKey) -> u8 {
    match key {
        SeekKey::Id => 0,
        SeekKey::Name => 1,
        SeekKey::NamePrefix => 2,
        SeekKey::NameRegex => 3,
    }
}

/// A seek found among the pending predicates.
struct Seek {
    /// Index of the predicate in `pending`.
    pending: usize,
    /// The seek returns exactly the rows the predicate keeps, so it can be dropped.
    exact: bool,
    key: SeekKey,
    value: Expr,
}

/// The text every whole-string match of `pattern` starts with, if it is not empty: the
/// longest common prefix of the pattern's prefix literals, cut to a character boundary.
/// `None` for invalid patterns (the filter reports those) and case-insensitive ones.
pub fn regex_literal_prefix(pattern: &str) -> Option<String> {
    use regex_syntax::hir::literal::{ExtractKind, Extractor};
    let hir = regex_syntax::ParserBuilder::new()
        .nest_limit(64)
        .build()
        .parse(pattern)
        .ok()?;
    let seq = Extractor::new().kind(ExtractKind::Prefix).extract(&hir);
    let lcp = seq.longest_common_prefix()?;
    let valid = match std::str::from_utf8(lcp) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&lcp[..e.valid_up_to()]).ok()?,
    };
    (!valid.is_empty()).then(|| valid.to_owned())
}

/// Rebuilds `e`, replacing every sub-expression whose canonical text is a key of `map`
/// by a reference to the mapped column.
pub(super) fn rewrite(e: &Expr, map: &[(String, String)]) -> Expr {
    let text = expr_to_string(e);
    if let Some((_, col)) = map.iter().find(|(t, _)| *t == text) {
        return var_expr(col, e.span);
    }
    let r = |x: &Expr| Box::new(rewrite(x, map));
    let kind = match &e.kind {
        ExprKind::Property(b, k) => ExprKind::Property(r(b), k.clone()),
        ExprKind::Index(a, b) => ExprKind::Index(r(a), r(b)),
        ExprKind::Slice(a, b, c) => ExprKind::Slice(r(a), b.as_deref().map(r), c.as_deref().map(r)),
        ExprKind::HasLabels(b, l, m) => ExprKind::HasLabels(r(b), l.clone(), *m),
        ExprKind::List(items) => ExprKind::List(items.iter().map(|x| rewrite(x, map)).collect()),
        ExprKind::Map(es) => ExprKind::Map(
            es.iter()
                .map(|(k, x)| (k.clone(), rewrite(x, map)))
                .collect(),
        ),
        ExprKind::Unary(op, x) => ExprKind::Unary(*op, r(x)),
        ExprKind::Binary(op, a, b) => ExprKind::Binary(*op, r(a), r(b)),
        ExprKind::IsNull { expr, negated } => ExprKind::IsNull {
            expr: r(expr),
            negated: *negated,
        },
        ExprKind::Call {
            name,
            distinct,
            args,
        } => ExprKind::Call {
            name: name.clone(),
            distinct: *distinct,
            args: args.iter().map(|x| rewrite(x, map)).collect(),
        },
        ExprKind::ListComprehension {
            variable,
            list,
            predicate,
            projection,
        } => ExprKind::ListComprehension {
            variable: variable.clone(),
            list: r(list),
            predicate: predicate.as_deref().map(r),
            projection: projection.as_deref().map(r),
        },
        ExprKind::Quantifier {
            quantifier,
            variable,
            list,
            predicate,
        } => ExprKind::Quantifier {
            quantifier: *quantifier,
            variable: variable.clone(),
            list: r(list),
            predicate: r(predicate),
        },
        ExprKind::Case {
            operand,
            branches,
            otherwise,
        } => ExprKind::Case {
            operand: operand.as_deref().map(r),
            branches: branches
                .iter()
                .map(|(when, then)| (rewrite(when, map), rewrite(then, map)))
                .collect(),
            otherwise: otherwise.as_deref().map(r),
        },
        other => other.clone(),
    };
    Expr::new(kind, e.span)
}

impl Planner<'_> {
    /// `cur` with its list column `column` reversed (every other column passed on).
    fn reverse_column(cur: LogicalPlan, column: &str, span: Span) -> LogicalPlan {
        let items = cur
            .columns()
            .into_iter()
            .map(|c| {
                let value = var_expr(&c, span);
                let value = if c == column {
                    let name = Ident {
                        name: "reverse".into(),
                        span,
                    };
                    Expr::new(
                        ExprKind::Call {
                            name,
                            distinct: false,
                            args: vec![value],
                        },
                        span,
                    )
                } else {
                    value
                };
                (value, c)
            })
            .collect();
        LogicalPlan::Project {
            input: Box::new(cur),
            items,
        }
    }

    pub(super) fn fresh(&mut self, prefix: &str) -> String {
        loop {
            let name = format!("#{prefix}{}", self.next);
            self.next += 1;
            if !self.taken.contains(&name) {
                return name;
            }
        }
    }

    fn normalize(&mut self, part: &PatternPart, pending: &mut Vec<Expr>) -> PlanResult<PPart> {
        let mut nodes = Vec::new();
        let mut rels = Vec::new();
        let props = |name: &str, p: &Option<Expr>, pending: &mut Vec<Expr>| -> PlanResult<()> {
            match p {
                None => Ok(()),
                Some(Expr { kind: ExprKind::Map(entries), .. }) => {
                    for (k, v) in entries {
                        let sp = k.span.to(v.span);
                        let prop = Expr::new(ExprKind::Property(Box::new(var_expr(name, k.span)), k.clone()), k.span);
                        pending.push(Expr::new(ExprKind::Binary(BinaryOp::Eq, Box::new(prop), Box::new(v.clone())), sp));
                    }
                    Ok(())
                }
                Some(other) => Err(PlanError {
                    message: "a parameter as a property map in a pattern is not supported; write `{key: $value}`".into(),
                    span: other.span,
                }),
            }
        };
        for n in part.element.nodes() {
            let name = match &n.variable {
                Some(v) => v.name.clone(),
                None => self.fresh("n"),
            };
            props(&name, &n.properties, pending)?;
            let labels = n.labels.iter().map(|l| {
                self.schema
                    .resolve_label(&l.name)
                    .unwrap_or_else(|| l.name.clone())
            });
            nodes.push(PNode {
                name,
                labels: labels.collect(),
                mode: n.label_mode,
            });
        }
        for (r, _) in &part.element.chain {
            let name = match &r.variable {
                Some(v) => v.name.clone(),
                None => self.fresh("r"),
            };
            props(&name, &r.properties, pending)?;
            let mut types: Vec<String> = Vec::new();
            for t in &r.types {
                let t = self
                    .schema
                    .resolve_rel_type(&t.name)
                    .unwrap_or_else(|| t.name.clone());
                if !types.contains(&t) {
                    types.push(t);
                }
            }
            let length = r.length.map(|l| {
                let (min, max) = l.bounds();
                HopRange { min, max }
            });
            rels.push(PRel {
                name,
                types,
                direction: r.direction,
                length,
            });
        }
        Ok(PPart {
            path: part.variable.as_ref().map(|v| v.name.clone()),
            search: part.search,
            nodes,
            rels,
            span: part.span,
        })
    }

    fn apply_ready(cur: LogicalPlan, bound: &[String], pending: &mut Vec<Expr>) -> LogicalPlan {
        let (now, later): (Vec<Expr>, Vec<Expr>) = pending.drain(..).partition(|e| ready(e, bound));
        *pending = later;
        match and_all(now) {
            Some(predicate) => LogicalPlan::Filter {
                input: Box::new(cur),
                predicate,
            },
            None => cur,
        }
    }

    fn label_test(node: &PNode, span: Span) -> Option<Expr> {
        if node.labels.is_empty() {
            return None;
        }
        let labels = node
            .labels
            .iter()
            .map(|l| Ident {
                name: l.clone(),
                span,
            })
            .collect();
        Some(Expr::new(
            ExprKind::HasLabels(Box::new(var_expr(&node.name, span)), labels, node.mode),
            span,
        ))
    }

    /// The seek usable for `node`, best first: an equality on its `id`, an equality on its
    /// `name`, then a name prefix (`STARTS WITH`, or the literal prefix of a `=~` pattern),
    /// with a value computable from `bound`. Returns the pending index, whether the seek
    /// fully answers that predicate (so it can be dropped), the key and the value.
    fn find_seek(node: &str, bound: &[String], pending: &[Expr]) -> Option<Seek> {
        let mut best: Option<Seek> = None;
        for (i, e) in pending.iter().enumerate() {
            let ExprKind::Binary(op, a, b) = &e.kind else {
                continue;
            };
            let sides: &[(&Expr, &Expr)] = match op {
                BinaryOp::Eq => &[(a, b), (b, a)],
                BinaryOp::StartsWith | BinaryOp::Regex => &[(a, b)],
                _ => continue,
            };
            for &(prop, value) in sides {
                let ExprKind::Property(base, key) = &prop.kind else {
                    continue;
                };
                if !matches!(&base.kind, ExprKind::Variable(v) if v == node) {
                    continue;
                }
                let seek = match (op, key.name.as_str()) {
                    (BinaryOp::Eq, "id") => (SeekKey::Id, value.clone(), true),
                    (BinaryOp::Eq, "name") => (SeekKey::Name, value.clone(), true),
                    (BinaryOp::StartsWith, "name") => (SeekKey::NamePrefix, value.clone(), true),
                    (BinaryOp::Regex, "name") => match &value.kind {
                        ExprKind::Literal(Literal::String(pattern)) => {
                            let Some(prefix) = regex_literal_prefix(pattern) else {
                                continue;
                            };
                            let lit =
                                Expr::new(ExprKind::Literal(Literal::String(prefix)), value.span);
                            (SeekKey::NamePrefix, lit, false)
                        }
                        ExprKind::Parameter(_) => (SeekKey::NameRegex, value.clone(), false),
                        _ => continue,
                    },
                    _ => continue,
                };
                if !ready(&seek.1, bound) || contains_aggregate(&seek.1) {
                    continue;
                }
                if best
                    .as_ref()
                    .is_none_or(|b| seek_rank(seek.0) < seek_rank(b.key))
                {
                    best = Some(Seek {
                        pending: i,
                        exact: seek.2,
                        key: seek.0,
                        value: seek.1,
                    });
                }
            }
        }
        best
    }

    /// Binds an unbound node by seek or scan on top of `cur`.
    fn start_node(
        cur: LogicalPlan,
        node: &PNode,
        span: Span,
        bound: &mut Vec<String>,
        pending: &mut Vec<Expr>,
    ) -> LogicalPlan {
        let labels = match node.mode {
            LabelMode::Any => node.labels.clone(),
            LabelMode::All => node.labels.iter().take(1).cloned().collect(),
        };
        if node.mode == LabelMode::All && node.labels.len() > 1 {
            pending.extend(Self::label_test(node, span));
        }
        let op = match Self::find_seek(&node.name, bound, pending) {
            Some(seek) => {
                if seek.exact {
                    pending.remove(seek.pending);
                }
                LogicalPlan::NodeSeek {
                    input: Box::new(cur),
                    var: node.name.clone(),
                    key: seek.key,
                    value: seek.value,
                    labels,
                }
            }
            None => LogicalPlan::NodeScan {
                input: Box::new(cur),
                var: node.name.clone(),
                labels,
            },
        };
        bound.push(node.name.clone());
        Self::apply_ready(op, bound, pending)
    }

    fn match_clause(
        &mut self,
        input: LogicalPlan,
        m: &MatchClause,
        bound: &mut Vec<String>,
    ) -> PlanResult<LogicalPlan> {
        let mut pending: Vec<Expr> = Vec::new();
        let mut parts = Vec::new();
        for part in &m.pattern {
            parts.push(self.normalize(part, &mut pending)?);
        }
        if let Some(w) = &m.where_ {
            conjuncts(w, &mut pending);
        }
        let mut cur = Self::apply_ready(input, bound, &mut pending);
        let mut match_rels: Vec<String> = Vec::new();
        for part in &parts {
            // A part is planned on top of the current rows when it shares a node with them
            // or can seek a node by a value computed from them (`UNWIND $ids AS id MATCH
            // (n {id: id})` seeks per row instead of joining against a full scan). A
            // relationship bound earlier (`WITH r MATCH ()-[r]->()`) connects it too: planned
            // apart, the part would bind `r` afresh and multiply the rows.
            let connected = part.nodes.iter().any(|n| {
                bound.contains(&n.name) || Self::find_seek(&n.name, bound, &pending).is_some()
            }) || part.rels.iter().any(|r| bound.contains(&r.name));
            if connected || bound.is_empty() {
                cur = self.chain(cur, part, bound, &mut pending, &mut match_rels)?;
            } else {
                // A part sharing nothing with the rows so far: plan it on its own, then
                // combine. Predicates local to it are applied inside.
                let left_bound = bound.clone();
                let mut right_bound = Vec::new();
                let right = LogicalPlan::Argument {
                    columns: Vec::new(),
                };
                // The right side cannot see the left's relationship columns, so their
                // uniqueness is enforced after the two sides meet.
                let mut right_rels = Vec::new();
                let right =
                    self.chain(right, part, &mut right_bound, &mut pending, &mut right_rels)?;
                for l in &match_rels {
                    for r in &right_rels {
                        let ne = ExprKind::Binary(
                            BinaryOp::Ne,
                            Box::new(var_expr(l, part.span)),
                            Box::new(var_expr(r, part.span)),
                        );
                        pending.push(Expr::new(ne, part.span));
                    }
                }
                match_rels.extend(right_rels);
                cur = Self::combine(cur, right, &left_bound, &right_bound, &mut pending);
                bound.extend(right_bound);
            }
            cur = Self::apply_ready(cur, bound, &mut pending);
        }
        for part in &parts {
            for n in &part.nodes {
                add_column(bound, &n.name);
            }
            for r in &part.rels {
                add_column(bound, &r.name);
            }
            if let Some(p) = &part.path {
                add_column(bound, p);
            }
        }
        // Everything is bound now; anything left (should be nothing) is applied last.
        Ok(match and_all(std::mem::take(&mut pending)) {
            Some(predicate) => LogicalPlan::Filter {
                input: Box::new(cur),
                predicate,
            },
            None => cur,
        })
    }

    /// A cartesian product, or a hash join when equalities relate the two sides.
    fn combine(
        left: LogicalPlan,
        right: LogicalPlan,
        lb: &[String],
        rb: &[String],
        pending: &mut Vec<Expr>,
    ) -> LogicalPlan {
        let mut left_keys = Vec::new();
        let mut right_keys = Vec::new();
        pending.retain(|e| {
            if let ExprKind::Binary(BinaryOp::Eq, a, b) = &e.kind {
                let side = |x: &Expr, s: &[String]| {
                    let v = x.variables();
                    !v.is_empty() && v.iter().all(|n| s.contains(n))
                };
                if side(a, lb) && side(b, rb) {
                    left_keys.push((**a).clone());
                    right_keys.push((**b).clone());
                    return false;
                }
                if side(b, lb) && side(a, rb) {
                    left_keys.push((**b).clone());
                    right_keys.push((**a).clone());
                    return false;
                }
            }
            true
        });
        if left_keys.is_empty() {
            LogicalPlan::CartesianProduct {
                left: Box::new(left),
                right: Box::new(right),
            }
        } else {
            LogicalPlan::HashJoin {
                left: Box::new(left),
                right: Box::new(right),
                left_keys,
                right_keys,
            }
        }
    }

    /// Plans one pattern part on top of `cur`.
    fn chain(
        &mut self,
        mut cur: LogicalPlan,
        part: &PPart,
        bound: &mut Vec<String>,
        pending: &mut Vec<Expr>,
        match_rels: &mut Vec<String>,
    ) -> PlanResult<LogicalPlan> {
        let sp = part.span;
        if part.search != PathSearch::All {
            let (Some(a), Some(b), Some(r)) =
                (part.nodes.first(), part.nodes.get(1), part.rels.first())
            else {
                return Err(PlanError {
                    message: "shortestPath needs one relationship".into(),
                    span: sp,
                });
            };
            for n in [a, b] {
                if bound.contains(&n.name) {
                    pending.extend(Self::label_test(n, sp));
                } else {
                    cur = Self::start_node(cur, n, sp, bound, pending);
                }
            }
            cur = Self::apply_ready(cur, bound, pending);
            let path = match &part.path {
                Some(p) => p.clone(),
                None => self.fresh("p"),
            };
            cur = LogicalPlan::ShortestPath {
                input: Box::new(cur),
                from: a.name.clone(),
                to: b.name.clone(),
                path: path.clone(),
                rel: r.name.clone(),
                direction: r.direction,
                types: r.types.clone(),
                length: r.length.unwrap_or(HopRange { min: 1, max: 1 }),
                all: part.search == PathSearch::AllShortest,
            };
            bound.push(path);
            bound.push(r.name.clone());
            return Ok(Self::apply_ready(cur, bound, pending));
        }
        // Start where the fewest rows are likely: a bound node, a seek, a label, the first.
        let start = part
            .nodes
            .iter()
            .position(|n| bound.contains(&n.name))
            .or_else(|| {
                // The most selective seek: an id, then a name, then a name prefix.
                (0..part.nodes.len())
                    .filter_map(|i| {
                        let seek = Self::find_seek(&part.nodes[i].name, bound, pending)?;
                        Some((seek_rank(seek.key), i))
                    })
                    .min()
                    .map(|(_, i)| i)
            })
            .or_else(|| part.nodes.iter().position(|n| !n.labels.is_empty()))
            .unwrap_or(0);
        let Some(first) = part.nodes.get(start) else {
            return Err(PlanError {
                message: "empty pattern".into(),
                span: sp,
            });
        };
        if bound.contains(&first.name) {
            pending.extend(Self::label_test(first, sp));
            cur = Self::apply_ready(cur, bound, pending);
        } else {
            cur = Self::start_node(cur, first, sp, bound, pending);
        }
        let mut steps: Vec<(usize, usize, usize, bool)> = Vec::new();
        for j in start + 1..part.nodes.len() {
            steps.push((j - 1, j - 1, j, false));
        }
        for j in (0..start).rev() {
            steps.push((j + 1, j, j, true));
        }
        for (from, rel, to, reversed) in steps {
            let (Some(f), Some(r), Some(t)) =
                (part.nodes.get(from), part.rels.get(rel), part.nodes.get(to))
            else {
                return Err(PlanError {
                    message: "malformed pattern".into(),
                    span: sp,
                });
            };
            let into = bound.contains(&t.name);
            // A relationship variable bound by an earlier clause constrains this hop: expand
            // into a fresh column and require it to be the same relationship.
            let rel_col = if bound.contains(&r.name) {
                let fresh = self.fresh("r");
                let eq = ExprKind::Binary(
                    BinaryOp::Eq,
                    Box::new(var_expr(&fresh, sp)),
                    Box::new(var_expr(&r.name, sp)),
                );
                pending.push(Expr::new(eq, sp));
                fresh
            } else {
                r.name.clone()
            };
            cur = LogicalPlan::Expand {
                input: Box::new(cur),
                from: f.name.clone(),
                rel: rel_col.clone(),
                to: t.name.clone(),
                direction: if reversed {
                    r.direction.reversed()
                } else {
                    r.direction
                },
                types: r.types.clone(),
                length: r.length,
                into,
                unique_with: match_rels.clone(),
            };
            // Walked from its end, a variable-length hop lists its relationships end first;
            // whoever reads the list (a named variable, the path) expects them in the order
            // the pattern is written.
            if reversed && r.length.is_some() && (part.path.is_some() || !r.name.starts_with('#')) {
                cur = Self::reverse_column(cur, &rel_col, sp);
            }
            match_rels.push(rel_col.clone());
            bound.push(rel_col);
            if !into {
                bound.push(t.name.clone());
            }
            pending.extend(Self::label_test(t, sp));
            cur = Self::apply_ready(cur, bound, pending);
        }
        if let (Some(p), Some(n0)) = (&part.path, part.nodes.first()) {
            cur = LogicalPlan::BindPath {
                input: Box::new(cur),
                var: p.clone(),
                start: n0.name.clone(),
                rels: part.rels.iter().map(|r| r.name.clone()).collect(),
            };
            bound.push(p.clone());
            cur = Self::apply_ready(cur, bound, pending);
        }
        Ok(cur)
    }
}
