//! Pattern and projection checks: what each clause binds, and what `ORDER BY`, `SKIP`
//! and `LIMIT` may see after a projection.

use super::{CheckErrorKind, Checker, Ctx, PatternUse, Scope};
use crate::ast::*;
use crate::print::expr_to_string;
use crate::schema::ValueKind;

/// Whether `e` contains an aggregate call anywhere.
pub(crate) fn contains_aggregate(e: &Expr) -> bool {
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        match &x.kind {
            ExprKind::CountStar => return true,
            ExprKind::Call { name, .. } if crate::functions::is_aggregate(&name.name) => {
                return true;
            }
            _ => stack.extend(x.children()),
        }
    }
    false
}

/// Whether every variable of `e` outside aggregate calls is inside a grouping key.
fn grouping_ok(e: &Expr, keys: &[String]) -> bool {
    grouping_ok_within(e, keys, &[])
}

/// [`grouping_ok`] where `locals` are iteration variables in scope, which are not row
/// variables and so need no grouping key.
fn grouping_ok_within(e: &Expr, keys: &[String], locals: &[&str]) -> bool {
    if keys.contains(&expr_to_string(e)) {
        return true;
    }
    match &e.kind {
        ExprKind::CountStar => true,
        ExprKind::Call { name, .. } if crate::functions::is_aggregate(&name.name) => true,
        ExprKind::Variable(v) => locals.contains(&v.as_str()),
        _ => {
            let iteration = e.iteration_variable();
            e.children()
                .into_iter()
                .enumerate()
                .all(|(position, child)| {
                    match iteration {
                        // Every child but the list sees the iteration variable.
                        Some(name) if position > 0 => {
                            let mut inner = locals.to_vec();
                            inner.push(name);
                            grouping_ok_within(child, keys, &inner)
                        }
                        _ => grouping_ok_within(child, keys, locals),
                    }
                })
        }
    }
}

impl Checker<'_> {
    pub(super) fn patterns(&mut self, parts: &[PatternPart], use_: PatternUse) {
        let before = self.scope.clone();
        let mut rels_here: Vec<String> = Vec::new();
        for part in parts {
            for node in part.element.nodes() {
                self.node_pattern(node, use_, &before);
            }
            for (r, _) in &part.element.chain {
                self.rel_pattern(r, use_, &before, &mut rels_here);
            }
            if part.search != PathSearch::All {
                if use_.creates() {
                    self.error(
                        CheckErrorKind::Invalid,
                        part.span,
                        "shortestPath cannot be created",
                        None,
                    );
                }
                if let Some((r, _)) = part.element.chain.first()
                    && r.length.and_then(|l| l.min).is_some_and(|m| m > 1)
                {
                    self.error(
                        CheckErrorKind::Invalid,
                        r.span,
                        "shortestPath needs a minimum length of 0 or 1",
                        Some("write `*..n` or `*1..n`".into()),
                    );
                }
            }
            if let Some(v) = &part.variable {
                self.bind_new(v, ValueKind::Path);
            }
        }
    }

    fn node_pattern(&mut self, n: &NodePattern, use_: PatternUse, before: &Scope) {
        if let Some(v) = &n.variable {
            match self.scope.get(&v.name) {
                Some(ValueKind::Node | ValueKind::Any) => {
                    if use_.creates()
                        && before.get(&v.name).is_some()
                        && (!n.labels.is_empty() || n.properties.is_some())
                    {
                        self.error(
                            CheckErrorKind::VariableRedefined,
                            n.span,
                            format!("node `{}` is already bound; CREATE cannot add labels or properties to it", v.name),
                            Some(format!("write `({})` here and use SET to change it", v.name)),
                        );
                    }
                }
                Some(k) => self.error(
                    CheckErrorKind::WrongKind,
                    v.span,
                    format!("`{}` is {}, not a node", v.name, k.noun()),
                    Some("use a different variable name for the node".into()),
                ),
                None => self.scope.bind(&v.name, ValueKind::Node),
            }
        }
        for l in &n.labels {
            self.label(l);
        }
        if let Some(p) = &n.properties {
            self.property_map(p, ValueKind::Node);
        }
    }

    fn property_map(&mut self, p: &Expr, kind: ValueKind) {
        match &p.kind {
            ExprKind::Map(entries) => {
                for (k, v) in entries {
                    self.property_key(kind, k);
                    self.expr(v, Ctx::Plain);
                }
            }
            _ => self.expr(p, Ctx::Plain),
        }
    }

    fn rel_pattern(
        &mut self,
        r: &RelPattern,
        use_: PatternUse,
        before: &Scope,
        rels_here: &mut Vec<String>,
    ) {
        let kind = if r.length.is_some() {
            ValueKind::RelList
        } else {
            ValueKind::Rel
        };
        if let Some(v) = &r.variable {
            if rels_here.contains(&v.name) {
                self.error(
                    CheckErrorKind::VariableRedefined,
                    v.span,
                    format!(
                        "relationship variable `{}` is used twice in one pattern",
                        v.name
                    ),
                    Some(
                        "a relationship matches at most once per pattern; use another name".into(),
                    ),
                );
            } else if let Some(k) = self.scope.get(&v.name) {
                let ok = before.get(&v.name).is_some()
                    && use_ == PatternUse::Match
                    && k == ValueKind::Rel
                    && kind == ValueKind::Rel;
                if !ok {
                    self.error(
                        CheckErrorKind::VariableRedefined,
                        v.span,
                        format!("`{}` is already bound to {}", v.name, k.noun()),
                        Some("choose another name".into()),
                    );
                }
            } else {
                self.scope.bind(&v.name, kind);
            }
            rels_here.push(v.name.clone());
        }
        for t in &r.types {
            self.rel_type(t);
        }
        if use_.creates() {
            if r.types.len() != 1 {
                self.error(
                    CheckErrorKind::Invalid,
                    r.span,
                    "a created relationship needs exactly one type",
                    Some("write `-[:TYPE]->`".into()),
                );
            }
            if r.direction == Direction::Both && use_ == PatternUse::Create {
                self.error(
                    CheckErrorKind::Invalid,
                    r.span,
                    "a created relationship needs a direction",
                    Some("write `-[..]->` or `<-[..]-`".into()),
                );
            }
            if r.length.is_some() {
                self.error(
                    CheckErrorKind::Invalid,
                    r.span,
                    "variable-length relationships cannot be created",
                    None,
                );
            }
        }
        if let Some(p) = &r.properties {
            if r.length.is_some() {
                self.error(
                    CheckErrorKind::Invalid,
                    p.span,
                    "property maps on variable-length relationships are not supported",
                    Some("match the hops one by one, or filter on a fixed-length pattern".into()),
                );
            } else {
                self.property_map(p, ValueKind::Rel);
            }
        }
    }

    pub(super) fn projection(&mut self, p: &Projection, is_with: bool) {
        let old = self.scope.clone();
        let what = if is_with { "WITH" } else { "RETURN" };
        if p.star && old.names().next().is_none() {
            self.error(
                CheckErrorKind::Invalid,
                p.span,
                format!("{what} * has no variables to return"),
                Some("name the values to return".into()),
            );
        }
        let aggregating = p.items.iter().any(|it| contains_aggregate(&it.expr));
        let keys: Vec<String> = p
            .items
            .iter()
            .filter(|it| !contains_aggregate(&it.expr))
            .map(|it| expr_to_string(&it.expr))
            .collect();
        for it in &p.items {
            self.expr(&it.expr, Ctx::Projection);
            if contains_aggregate(&it.expr) && !grouping_ok(&it.expr, &keys) {
                self.error(
                    CheckErrorKind::AggregateMisuse,
                    it.expr.span,
                    "this expression mixes an aggregate with values that are not grouping keys",
                    Some("return the non-aggregated part as its own column, e.g. `RETURN n.file, count(*)`".into()),
                );
            }
            if is_with && it.alias.is_none() && !matches!(it.expr.kind, ExprKind::Variable(_)) {
                self.error(
                    CheckErrorKind::Invalid,
                    it.expr.span,
                    "expressions in WITH must be aliased",
                    Some(format!("write `{} AS name`", expr_to_string(&it.expr))),
                );
            }
        }
        if p.star && aggregating {
            self.error(
                CheckErrorKind::AggregateMisuse,
                p.span,
                format!("{what} * cannot be combined with aggregates"),
                Some("list the grouping keys explicitly".into()),
            );
        }
        // The columns the projection produces.
        let mut new = if p.star {
            old.clone()
        } else {
            Scope::default()
        };
        let mut seen: Vec<String> = Vec::new();
        for it in &p.items {
            let name = it.column_name(self.source);
            let kind = match &it.expr.kind {
                ExprKind::Variable(v) => old.get(v).unwrap_or(ValueKind::Any),
                // `WITH 123 AS n MATCH (n)` can never match: the pattern check needs to know.
                ExprKind::Literal(Literal::Null) => ValueKind::Any,
                ExprKind::Literal(_) | ExprKind::List(_) => ValueKind::Literal,
                ExprKind::Map(_) => ValueKind::Map,
                _ => ValueKind::Any,
            };
            if seen.contains(&name) {
                self.error(
                    CheckErrorKind::VariableRedefined,
                    it.span,
                    format!("column `{name}` is defined twice"),
                    Some("give one of them another alias with AS".into()),
                );
            }
            seen.push(name.clone());
            new.bind(&name, kind);
        }
        // ORDER BY sees the projected columns; without aggregation or DISTINCT it also sees
        // the variables before the projection.
        let restricted = aggregating || p.distinct;
        let mut order_scope = if restricted {
            Scope::default()
        } else {
            old.clone()
        };
        for (n, k) in new.vars.iter() {
            order_scope.bind(n, *k);
        }
        self.scope = order_scope;
        if restricted {
            self.projected = p.items.iter().map(|it| expr_to_string(&it.expr)).collect();
        }
        for s in &p.order_by {
            let before = self.errors.len();
            self.expr(&s.expr, Ctx::Plain);
            if restricted {
                for e in &mut self.errors[before..] {
                    if e.kind == CheckErrorKind::UndefinedVariable {
                        e.diagnostic.suggestion = Some(format!(
                            "after {} only the projected columns can be used in ORDER BY",
                            if aggregating {
                                "aggregation"
                            } else {
                                "DISTINCT"
                            }
                        ));
                    }
                }
            }
        }
        self.projected.clear();
        self.dropped = old
            .names()
            .filter(|n| new.get(n).is_none())
            .map(str::to_string)
            .collect();
        for (e, name) in [(&p.skip, "SKIP"), (&p.limit, "LIMIT")] {
            if let Some(e) = e {
                self.count_expr(e, name);
            }
        }
        if let Some(w) = &p.where_ {
            // Like ORDER BY, the WHERE of a WITH without aggregation or DISTINCT also sees
            // the variables before it (`WITH a.x AS x WHERE a.y > 0`).
            let mut where_scope = if restricted {
                Scope::default()
            } else {
                old.clone()
            };
            for (n, k) in new.vars.iter() {
                where_scope.bind(n, *k);
            }
            self.scope = where_scope;
            // After aggregation or DISTINCT it may still repeat a projected expression.
            if restricted {
                self.projected = p.items.iter().map(|it| expr_to_string(&it.expr)).collect();
            }
            self.expr(w, Ctx::Plain);
            self.projected.clear();
        }
        self.scope = new;
    }

    fn count_expr(&mut self, e: &Expr, what: &str) {
        match &e.kind {
            ExprKind::Literal(Literal::Int(n)) if *n >= 0 => {}
            ExprKind::Parameter(_) => {}
            ExprKind::Literal(Literal::Int(n)) => self.error(
                CheckErrorKind::Invalid,
                e.span,
                format!("{what} must not be negative, got {n}"),
                None,
            ),
            // A row count is whole: `LIMIT 1.5` is refused before the query runs.
            ExprKind::Literal(Literal::Float(_) | Literal::String(_) | Literal::Bool(_))
            | ExprKind::List(_)
            | ExprKind::Map(_) => self.error(
                CheckErrorKind::Invalid,
                e.span,
                format!(
                    "{what} must be a non-negative integer, got `{}`",
                    expr_to_string(e)
                ),
                Some(format!("write e.g. `{what} 10` or `{what} $n`")),
            ),
            _ if e.variables().is_empty() && !contains_aggregate(e) => {
                let saved = std::mem::take(&mut self.scope);
                self.expr(e, Ctx::Plain);
                self.scope = saved;
            }
            _ => self.error(
                CheckErrorKind::Invalid,
                e.span,
                format!("{what} must be a non-negative integer or a parameter"),
                Some(format!("write e.g. `{what} 10` or `{what} $n`")),
            ),
        }
    }
}
