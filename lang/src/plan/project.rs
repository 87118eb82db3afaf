//! Planning of WITH and RETURN: grouping and aggregation, hidden sort columns,
//! DISTINCT, and ORDER BY/SKIP/LIMIT (ORDER BY + LIMIT becomes TopK).

use super::build::{PlanResult, Planner, add_column, rewrite, var_expr};
use super::*;
use crate::ast::*;
use crate::check::clauses::contains_aggregate;
use crate::print::expr_to_string;

impl Planner<'_> {
    pub(super) fn projection(
        &mut self,
        mut cur: LogicalPlan,
        p: &Projection,
        bound: &mut Vec<String>,
        in_scope: &[String],
    ) -> PlanResult<LogicalPlan> {
        let mut items: Vec<(Expr, String)> = Vec::new();
        if p.star {
            for v in in_scope {
                items.push((var_expr(v, p.span), v.clone()));
            }
        }
        for it in &p.items {
            items.push((it.expr.clone(), it.column_name(self.source)));
        }
        // ORDER BY sees projected columns by their expression text too.
        let mut item_map: Vec<(String, String)> = items
            .iter()
            .map(|(e, c)| (expr_to_string(e), c.clone()))
            .collect();
        // WHERE reads the new columns by name: an old variable's text that is also the name
        // of a new column (`WITH m AS n, n AS m WHERE n.x = 1`) means the new column.
        let where_map: Vec<(String, String)> = item_map
            .iter()
            .filter(|(text, _)| !items.iter().any(|(_, column)| column == text))
            .cloned()
            .collect();
        let aggregating = items.iter().any(|(e, _)| contains_aggregate(e));
        let mut hidden: Vec<(Expr, String)> = Vec::new();
        if aggregating {
            let mut group_by = Vec::new();
            let mut aggs: Vec<AggregateSpec> = Vec::new();
            let mut agg_map: Vec<(String, String)> = Vec::new();
            for (e, col) in &items {
                if !contains_aggregate(e) {
                    group_by.push((e.clone(), col.clone()));
                    continue;
                }
                let mut found = Vec::new();
                collect_aggregates(e, &mut found);
                for a in found {
                    let text = expr_to_string(&a);
                    if agg_map.iter().any(|(t, _)| *t == text) {
                        continue;
                    }
                    let column = if expr_to_string(e) == text {
                        col.clone()
                    } else {
                        self.fresh("agg")
                    };
                    let (func, distinct, arg) = match &a.kind {
                        ExprKind::CountStar => (AggregateFunc::CountStar, false, None),
                        ExprKind::Call {
                            name,
                            distinct,
                            args,
                        } => {
                            let f =
                                AggregateFunc::from_name(&name.name).ok_or_else(|| PlanError {
                                    message: format!("`{}` is not an aggregate", name.name),
                                    span: a.span,
                                })?;
                            let arg = if f.takes_fraction() {
                                Some(Expr::new(ExprKind::List(args.clone()), a.span))
                            } else {
                                args.first().cloned()
                            };
                            (f, *distinct, arg)
                        }
                        _ => continue,
                    };
                    aggs.push(AggregateSpec {
                        func,
                        distinct,
                        arg,
                        column: column.clone(),
                    });
                    agg_map.push((text, column));
                }
            }
            let group_map: Vec<(String, String)> = group_by
                .iter()
                .map(|(e, c)| (expr_to_string(e), c.clone()))
                .collect();
            let produced: Vec<String> = group_by
                .iter()
                .map(|(_, c)| c.clone())
                .chain(aggs.iter().map(|a| a.column.clone()))
                .collect();
            cur = LogicalPlan::Aggregate {
                input: Box::new(cur),
                group_by,
                aggregates: aggs,
            };
            let mut map = group_map;
            map.extend(agg_map);
            items = items
                .into_iter()
                .map(|(e, c)| (rewrite(&e, &map), c))
                .collect();
            let identity = items.len() == produced.len()
                && items.iter().zip(&produced).all(|((e, c), pc)| {
                    c == pc && matches!(&e.kind, ExprKind::Variable(v) if v == c)
                });
            if !identity {
                cur = LogicalPlan::Project {
                    input: Box::new(cur),
                    items: items.clone(),
                };
            }
            item_map.extend(map);
        } else {
            // Variables ORDER BY and WHERE need from before the projection ride along as
            // hidden columns.
            let names: Vec<&String> = items.iter().map(|(_, c)| c).collect();
            let sort_and_filter = p
                .order_by
                .iter()
                .map(|s| (rewrite(&s.expr, &item_map), s.span))
                .chain(p.where_.iter().map(|w| (rewrite(w, &where_map), w.span)));
            for (expr, span) in sort_and_filter {
                for v in expr.variables() {
                    if !names.contains(&&v)
                        && bound.contains(&v)
                        && !hidden.iter().any(|(_, h)| *h == v)
                    {
                        hidden.push((var_expr(&v, span), v));
                    }
                }
            }
            let mut all = items.clone();
            all.extend(hidden.iter().cloned());
            cur = LogicalPlan::Project {
                input: Box::new(cur),
                items: all,
            };
        }
        if p.distinct {
            cur = LogicalPlan::Distinct {
                input: Box::new(cur),
            };
        }
        let keys: Vec<SortKey> = p
            .order_by
            .iter()
            .map(|s| SortKey {
                expr: rewrite(&s.expr, &item_map),
                descending: s.descending,
            })
            .collect();
        match (keys.is_empty(), &p.skip, &p.limit) {
            (false, skip, Some(limit)) => {
                let limit = match skip {
                    Some(s) => {
                        let sp = s.span.to(limit.span);
                        Expr::new(
                            ExprKind::Binary(
                                BinaryOp::Add,
                                Box::new(s.clone()),
                                Box::new(limit.clone()),
                            ),
                            sp,
                        )
                    }
                    None => limit.clone(),
                };
                cur = LogicalPlan::TopK {
                    input: Box::new(cur),
                    keys,
                    limit,
                };
                if let Some(s) = skip {
                    cur = LogicalPlan::Skip {
                        input: Box::new(cur),
                        count: s.clone(),
                    };
                }
            }
            (sorted, skip, limit) => {
                if !sorted {
                    cur = LogicalPlan::Sort {
                        input: Box::new(cur),
                        keys,
                    };
                }
                if let Some(s) = skip {
                    cur = LogicalPlan::Skip {
                        input: Box::new(cur),
                        count: s.clone(),
                    };
                }
                if let Some(l) = limit {
                    cur = LogicalPlan::Limit {
                        input: Box::new(cur),
                        count: l.clone(),
                    };
                }
            }
        }
        // WHERE filters after SKIP and LIMIT, but before the hidden columns it may read
        // are dropped.
        // A projected expression repeated in WHERE reads its column (`WITH DISTINCT a.x AS x
        // WHERE a.x > 1`).
        if let Some(w) = &p.where_ {
            cur = LogicalPlan::Filter {
                input: Box::new(cur),
                predicate: rewrite(w, &where_map),
            };
        }
        if !hidden.is_empty() {
            let keep = items
                .iter()
                .map(|(_, c)| (var_expr(c, p.span), c.clone()))
                .collect();
            cur = LogicalPlan::Project {
                input: Box::new(cur),
                items: keep,
            };
        }
        bound.clear();
        for (_, c) in &items {
            add_column(bound, c);
        }
        Ok(cur)
    }
}

/// The outermost aggregate calls inside `e`, left to right.
fn collect_aggregates(e: &Expr, out: &mut Vec<Expr>) {
    match &e.kind {
        ExprKind::CountStar => out.push(e.clone()),
        ExprKind::Call { name, .. } if crate::functions::is_aggregate(&name.name) => {
            out.push(e.clone())
        }
        _ => {
            for c in e.children() {
                collect_aggregates(c, out);
            }
        }
    }
}
