//! Binding: an expression's variables become places in the row it is evaluated on.
//!
//! The checker proved every variable defined and the planner decided each operator's
//! columns, so when the engine turns a logical operator into a physical one it binds the
//! operator's expressions against that operator's input columns once. Evaluation then
//! reads `row[i]` instead of searching the column names for every variable of every row
//! (that search was 5.8 % of a million-node `UNWIND … CREATE`, issue 25).
//!
//! Iteration variables of comprehensions and quantifiers become [`Slot::Local`] places,
//! numbered by nesting depth, so the evaluator finds them without names either; an inner
//! one shadows a column or an outer one of the same name.

use std::fmt;

use crate::ast::{Expr, ExprKind, PatternPart, SetItem, Slot, SlotRef};

/// A variable the columns do not hold: the plan and its operators disagree (a bug, not a
/// user's mistake; the checker reports undefined variables before this runs).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct UnboundColumn {
    /// The variable.
    pub name: String,
    /// The columns it was bound against.
    pub columns: Vec<String>,
}

impl fmt::Display for UnboundColumn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "variable `{}` is not among the operator's columns ({})",
            self.name,
            self.columns.join(", ")
        )
    }
}

/// `expr` bound for rows whose values are in the order of `columns`: every variable is an
/// [`ExprKind::Slot`].
pub fn bind(expr: &Expr, columns: &[String]) -> Result<Expr, UnboundColumn> {
    let mut bound = expr.clone();
    bind_where_it_stands(&mut bound, columns)?;
    Ok(bound)
}

fn bind_where_it_stands(expr: &mut Expr, columns: &[String]) -> Result<(), UnboundColumn> {
    Binder {
        columns,
        locals: Vec::new(),
    }
    .bind_in_place(expr)
}

/// Each expression of `exprs` bound against the same columns.
pub fn bind_all(exprs: &[Expr], columns: &[String]) -> Result<Vec<Expr>, UnboundColumn> {
    exprs.iter().map(|expr| bind(expr, columns)).collect()
}

/// `part` with the property maps of its nodes and relationships bound.
pub fn bind_pattern_part(
    part: &PatternPart,
    columns: &[String],
) -> Result<PatternPart, UnboundColumn> {
    let mut bound = part.clone();
    let element = &mut bound.element;
    let maps = std::iter::once(&mut element.start.properties).chain(
        element
            .chain
            .iter_mut()
            .flat_map(|(rel, node)| [&mut rel.properties, &mut node.properties]),
    );
    for properties in maps.flatten() {
        bind_where_it_stands(properties, columns)?;
    }
    Ok(bound)
}

/// `items` with their values bound against the same columns.
pub fn bind_set_items(
    items: &[SetItem],
    columns: &[String],
) -> Result<Vec<SetItem>, UnboundColumn> {
    items
        .iter()
        .map(|item| bind_set_item(item, columns))
        .collect()
}

/// `item` with its value bound.
fn bind_set_item(item: &SetItem, columns: &[String]) -> Result<SetItem, UnboundColumn> {
    let mut bound = item.clone();
    match &mut bound {
        SetItem::Property { value, .. }
        | SetItem::Merge { value, .. }
        | SetItem::Replace { value, .. } => bind_where_it_stands(value, columns)?,
        SetItem::Labels { .. } => {}
    }
    Ok(bound)
}

struct Binder<'c> {
    columns: &'c [String],
    /// The iteration variables in scope, outermost first.
    locals: Vec<String>,
}

impl Binder<'_> {
    /// Binds `expr` where it stands: its variables become places, the iteration variable
    /// of a comprehension or quantifier is in scope in every child but the list.
    fn bind_in_place(&mut self, expr: &mut Expr) -> Result<(), UnboundColumn> {
        if let ExprKind::Variable(name) = &mut expr.kind {
            let slot = self.place(name)?;
            let name = std::mem::take(name);
            expr.kind = ExprKind::Slot(SlotRef { slot, name });
            return Ok(());
        }
        let local = expr.iteration_variable().map(str::to_string);
        for (position, child) in expr.children_mut().into_iter().enumerate() {
            let scoped = local.as_ref().filter(|_| position > 0);
            if let Some(name) = scoped {
                self.locals.push(name.clone());
            }
            let bound = self.bind_in_place(child);
            if scoped.is_some() {
                self.locals.pop();
            }
            bound?;
        }
        Ok(())
    }

    /// The innermost iteration variable of that name, else the column.
    fn place(&self, name: &str) -> Result<Slot, UnboundColumn> {
        if let Some(depth) = self.locals.iter().rposition(|local| local == name) {
            return Ok(Slot::Local(depth));
        }
        self.columns
            .iter()
            .position(|column| column == name)
            .map(Slot::Column)
            .ok_or_else(|| UnboundColumn {
                name: name.to_string(),
                columns: self.columns.to_vec(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Clause;
    use crate::parse::parse_statement;

    fn parse_expression(text: &str) -> Result<Expr, String> {
        let statement =
            parse_statement(&format!("RETURN {text} AS value")).map_err(|e| e.to_string())?;
        match statement.clauses.into_iter().next() {
            Some(Clause::Return(projection)) => Ok(projection.items[0].expr.clone()),
            other => Err(format!("not a RETURN: {other:?}")),
        }
    }

    fn columns(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    fn slots(expr: &Expr) -> Vec<(String, Slot)> {
        let mut out = Vec::new();
        let mut stack = vec![expr];
        while let Some(expr) = stack.pop() {
            if let ExprKind::Slot(slot) = &expr.kind {
                out.push((slot.name.clone(), slot.slot));
            }
            assert!(
                !matches!(expr.kind, ExprKind::Variable(_)),
                "an unbound variable is left"
            );
            stack.extend(expr.children().into_iter().rev());
        }
        out
    }

    #[test]
    fn variables_become_their_column() {
        let expr = parse_expression("a.x + b * 2").unwrap();
        let bound = bind(&expr, &columns(&["b", "a"])).unwrap();
        assert_eq!(
            slots(&bound),
            vec![("a".into(), Slot::Column(1)), ("b".into(), Slot::Column(0))]
        );
    }

    #[test]
    fn iteration_variables_shadow_columns_and_nest_by_depth() {
        let expr =
            parse_expression("[x IN xs WHERE any(x IN x WHERE x > y) | [y IN x | y + x]]").unwrap();
        let bound = bind(&expr, &columns(&["x", "xs", "y"])).unwrap();
        assert_eq!(
            slots(&bound),
            vec![
                ("xs".into(), Slot::Column(1)),
                // The quantifier's list is the comprehension's `x`; its predicate sees its own.
                ("x".into(), Slot::Local(0)),
                ("x".into(), Slot::Local(1)),
                ("y".into(), Slot::Column(2)),
                ("x".into(), Slot::Local(0)),
                ("y".into(), Slot::Local(1)),
                ("x".into(), Slot::Local(0)),
            ]
        );
    }

    #[test]
    fn a_variable_missing_from_the_columns_is_an_error() {
        let expr = parse_expression("n.name").unwrap();
        let error = bind(&expr, &columns(&["m"])).unwrap_err();
        assert_eq!(error.name, "n");
        assert!(error.to_string().contains("(m)"), "{error}");
    }
}
