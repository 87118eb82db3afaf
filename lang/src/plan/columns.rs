//! What each operator produces, and a validator for the invariant every engine relies on:
//! an operator's expressions reference only columns produced below it (or `$parameters`).
//! The engine can use [`LogicalPlan::columns`] to lay rows out as slots.

use super::*;
use crate::ast::{Expr, ExprKind, PatternPart, SetItem, Span};

fn push(cols: &mut Vec<String>, name: &str) {
    if !cols.iter().any(|c| c == name) {
        cols.push(name.to_string());
    }
}

fn pattern_vars(parts: &[PatternPart], cols: &mut Vec<String>) {
    for part in parts {
        if let Some(v) = &part.variable {
            push(cols, &v.name);
        }
        for n in part.element.nodes() {
            if let Some(v) = &n.variable {
                push(cols, &v.name);
            }
        }
        for (r, _) in &part.element.chain {
            if let Some(v) = &r.variable {
                push(cols, &v.name);
            }
        }
    }
}

fn pattern_exprs(parts: &[PatternPart]) -> Vec<&Expr> {
    let mut out = Vec::new();
    for part in parts {
        for n in part.element.nodes() {
            out.extend(n.properties.as_ref());
        }
        for (r, _) in &part.element.chain {
            out.extend(r.properties.as_ref());
        }
    }
    out
}

fn set_exprs(items: &[SetItem]) -> Vec<&Expr> {
    items
        .iter()
        .filter_map(|it| match it {
            SetItem::Property { value, .. }
            | SetItem::Merge { value, .. }
            | SetItem::Replace { value, .. } => Some(value),
            SetItem::Labels { .. } => None,
        })
        .collect()
}

impl LogicalPlan {
    /// The columns of the rows this operator produces, in order.
    pub fn columns(&self) -> Vec<String> {
        let mut cols = match self.children().first() {
            Some(input)
                if !matches!(
                    self,
                    LogicalPlan::Project { .. } | LogicalPlan::Aggregate { .. }
                ) =>
            {
                input.columns()
            }
            _ => Vec::new(),
        };
        match self {
            LogicalPlan::Argument { columns } => cols.clone_from(columns),
            LogicalPlan::NodeScan { var, .. } | LogicalPlan::NodeSeek { var, .. } => {
                push(&mut cols, var)
            }
            LogicalPlan::Expand { rel, to, .. } => {
                push(&mut cols, rel);
                push(&mut cols, to);
            }
            LogicalPlan::ShortestPath { path, rel, .. } => {
                push(&mut cols, path);
                push(&mut cols, rel);
            }
            LogicalPlan::Project { items, .. } => {
                cols = items.iter().map(|(_, c)| c.clone()).collect()
            }
            LogicalPlan::Aggregate {
                group_by,
                aggregates,
                ..
            } => {
                cols = group_by
                    .iter()
                    .map(|(_, c)| c.clone())
                    .chain(aggregates.iter().map(|a| a.column.clone()))
                    .collect();
            }
            LogicalPlan::Unwind { var, .. } | LogicalPlan::BindPath { var, .. } => {
                push(&mut cols, var)
            }
            LogicalPlan::ProcedureCall { yields, .. } => {
                for (_, c) in yields {
                    push(&mut cols, c);
                }
            }
            LogicalPlan::Optional { new_columns, .. } => {
                for c in new_columns {
                    push(&mut cols, c);
                }
            }
            LogicalPlan::CartesianProduct { right, .. } | LogicalPlan::HashJoin { right, .. } => {
                for c in right.columns() {
                    push(&mut cols, &c);
                }
            }
            LogicalPlan::Create { pattern, .. } => pattern_vars(pattern, &mut cols),
            LogicalPlan::Merge { part, .. } => pattern_vars(std::slice::from_ref(part), &mut cols),
            LogicalPlan::Filter { .. }
            | LogicalPlan::Distinct { .. }
            | LogicalPlan::Sort { .. }
            | LogicalPlan::TopK { .. }
            | LogicalPlan::Skip { .. }
            | LogicalPlan::Limit { .. }
            | LogicalPlan::SetProperties { .. }
            | LogicalPlan::Delete { .. }
            | LogicalPlan::Remove { .. } => {}
        }
        cols
    }

    /// The expressions of this operator (not of its inputs), each with the columns it may
    /// reference: `true` means the input's columns, `false` means none (counts).
    fn own_exprs(&self) -> Vec<(&Expr, bool)> {
        match self {
            LogicalPlan::NodeSeek { value, .. } => vec![(value, true)],
            LogicalPlan::Filter { predicate, .. } => vec![(predicate, true)],
            LogicalPlan::Project { items, .. } => items.iter().map(|(e, _)| (e, true)).collect(),
            LogicalPlan::Aggregate {
                group_by,
                aggregates,
                ..
            } => group_by
                .iter()
                .map(|(e, _)| (e, true))
                .chain(
                    aggregates
                        .iter()
                        .filter_map(|a| a.arg.as_ref())
                        .map(|e| (e, true)),
                )
                .collect(),
            LogicalPlan::Sort { keys, .. } => keys.iter().map(|k| (&k.expr, true)).collect(),
            LogicalPlan::TopK { keys, limit, .. } => keys
                .iter()
                .map(|k| (&k.expr, true))
                .chain([(limit, false)])
                .collect(),
            LogicalPlan::Skip { count, .. } | LogicalPlan::Limit { count, .. } => {
                vec![(count, false)]
            }
            LogicalPlan::Unwind { expr, .. } => vec![(expr, true)],
            LogicalPlan::ProcedureCall { args, .. } => args.iter().map(|e| (e, true)).collect(),
            LogicalPlan::SetProperties { items, .. } => {
                set_exprs(items).into_iter().map(|e| (e, true)).collect()
            }
            LogicalPlan::Delete { exprs, .. } => exprs.iter().map(|e| (e, true)).collect(),
            _ => Vec::new(),
        }
    }

    /// Checks that every expression and column reference is satisfied by the columns
    /// below it; returns the first violation.
    pub fn validate(&self) -> Result<(), PlanError> {
        let missing = |what: String| PlanError {
            message: what,
            span: Span::default(),
        };
        for c in self.children() {
            c.validate()?;
        }
        let input: Vec<String> = self
            .children()
            .first()
            .map(|c| c.columns())
            .unwrap_or_default();
        let need = |name: &str| -> Result<(), PlanError> {
            if input.iter().any(|c| c == name) {
                Ok(())
            } else {
                Err(missing(format!(
                    "{} uses column `{name}`, which its input does not produce",
                    self.name()
                )))
            }
        };
        for (e, sees_input) in self.own_exprs() {
            for v in e.variables() {
                if !sees_input || !input.contains(&v) {
                    return Err(missing(format!(
                        "{} expression `{e}` references `{v}`, not available there",
                        self.name()
                    )));
                }
            }
        }
        match self {
            LogicalPlan::Expand { from, to, into, .. } => {
                need(from)?;
                if *into {
                    need(to)?;
                }
            }
            LogicalPlan::ShortestPath { from, to, .. } => {
                need(from)?;
                need(to)?;
            }
            LogicalPlan::BindPath { start, rels, .. } => {
                need(start)?;
                for r in rels {
                    need(r)?;
                }
            }
            LogicalPlan::Optional { inner, .. } => {
                let mut leaf = inner.as_ref();
                while let Some(c) = leaf.children().first().copied() {
                    leaf = c;
                }
                if let LogicalPlan::Argument { columns } = leaf {
                    for c in columns {
                        need(c)?;
                    }
                }
            }
            LogicalPlan::HashJoin {
                left,
                right,
                left_keys,
                right_keys,
            } => {
                let (lc, rc) = (left.columns(), right.columns());
                for (keys, cols) in [(left_keys, &lc), (right_keys, &rc)] {
                    for k in keys {
                        if let Some(v) = k.variables().into_iter().find(|v| !cols.contains(v)) {
                            return Err(missing(format!(
                                "HashJoin key `{k}` references `{v}` from the other side"
                            )));
                        }
                    }
                }
            }
            LogicalPlan::Create { .. } | LogicalPlan::Merge { .. } => {
                // Pattern properties and MERGE's actions also see the pattern's own variables.
                let (pattern, actions) = match self {
                    LogicalPlan::Create { pattern, .. } => (pattern.as_slice(), Vec::new()),
                    LogicalPlan::Merge {
                        part,
                        on_create,
                        on_match,
                        ..
                    } => (
                        std::slice::from_ref(part),
                        set_exprs(on_create)
                            .into_iter()
                            .chain(set_exprs(on_match))
                            .collect(),
                    ),
                    _ => (&[][..], Vec::new()),
                };
                let mut visible = input.clone();
                pattern_vars(pattern, &mut visible);
                for e in pattern_exprs(pattern).into_iter().chain(actions) {
                    if let Some(v) = e.variables().into_iter().find(|v| !visible.contains(v)) {
                        return Err(missing(format!(
                            "Create property `{e}` references unknown `{v}`"
                        )));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Every `$parameter` name the plan reads, sorted and deduplicated.
    pub fn parameters(&self) -> Vec<String> {
        let mut out = self.parameter_uses();
        out.sort();
        out.dedup();
        out
    }

    /// The name of every `$parameter` use in the plan's expressions (a name read twice is
    /// here twice).
    pub fn parameter_uses(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(p) = stack.pop() {
            let mut exprs: Vec<&Expr> = p.own_exprs().into_iter().map(|(e, _)| e).collect();
            match p {
                LogicalPlan::HashJoin {
                    left_keys,
                    right_keys,
                    ..
                } => exprs.extend(left_keys.iter().chain(right_keys)),
                LogicalPlan::Create { pattern, .. } => exprs.extend(pattern_exprs(pattern)),
                LogicalPlan::Merge {
                    part,
                    on_create,
                    on_match,
                    ..
                } => {
                    exprs.extend(pattern_exprs(std::slice::from_ref(part)));
                    exprs.extend(set_exprs(on_create));
                    exprs.extend(set_exprs(on_match));
                }
                _ => {}
            }
            for e in exprs {
                let mut es = vec![e];
                while let Some(x) = es.pop() {
                    if let ExprKind::Parameter(name) = &x.kind {
                        out.push(name.clone());
                    }
                    es.extend(x.children());
                }
            }
            stack.extend(p.children());
        }
        out
    }
}

impl Plan {
    /// [`LogicalPlan::validate`] on the root, plus: a query's result columns are the root's.
    pub fn validate(&self) -> Result<(), PlanError> {
        self.root.validate()?;
        let root = self.root.columns();
        if !self.columns.is_empty() && root != self.columns {
            return Err(PlanError {
                message: format!(
                    "result columns {:?} differ from the root's {:?}",
                    self.columns, root
                ),
                span: Span::default(),
            });
        }
        Ok(())
    }

    /// Every `$parameter` the statement needs.
    pub fn parameters(&self) -> Vec<String> {
        self.root.parameters()
    }
}
