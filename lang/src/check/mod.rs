//! Semantic checks of a parsed statement against a [`Schema`]: unknown labels,
//! relationship types, properties, functions, procedures and roles (with "did you mean"
//! suggestions), undefined and redefined variables, variables used as the wrong kind of
//! value, and aggregate misuse. Every problem found is reported, not just the first.

mod expr;

use std::fmt;

use crate::ast::*;
use crate::diag::{Diagnostic, did_you_mean};
use crate::schema::{Schema, ValueKind};

/// What kind of problem a check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CheckErrorKind {
    /// A label that is not a node kind of the schema.
    UnknownLabel,
    /// A relationship type that is not in the schema.
    UnknownRelType,
    /// A property that nodes (or relationships) do not have.
    UnknownProperty,
    /// A function that does not exist.
    UnknownFunction,
    /// A procedure the engine does not provide.
    UnknownProcedure,
    /// A `YIELD` field the procedure does not produce.
    UnknownYield,
    /// A symbol-role name (`has_role`) that does not exist.
    UnknownRole,
    /// A variable used before it is bound.
    UndefinedVariable,
    /// A variable bound twice.
    VariableRedefined,
    /// A variable used as the wrong kind of value (a node as a relationship, ...).
    WrongKind,
    /// An aggregate where none may be, nested aggregates, or mixed grouping.
    AggregateMisuse,
    /// A function or procedure called with the wrong number of arguments.
    WrongArgumentCount,
    /// Anything else the language forbids (negative LIMIT, unaliased WITH expression, ...).
    Invalid,
}

/// One semantic error with its location.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{diagnostic}")]
pub struct CheckError {
    /// The category.
    pub kind: CheckErrorKind,
    /// Location, message and suggestion.
    pub diagnostic: Diagnostic,
}

/// Every error found in one statement, in source order.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct CheckErrors(pub Vec<CheckError>);

impl fmt::Display for CheckErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// What the checker learned that the planner consumes instead of working it out again:
/// the variables in scope after each clause, in binding order (the order `RETURN *`
/// uses).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BoundStatement {
    scopes: Vec<Vec<String>>,
}

impl BoundStatement {
    /// The variables in scope when clause `clause` starts (none before the first).
    pub fn in_scope_before(&self, clause: usize) -> impl Iterator<Item = &str> {
        clause
            .checked_sub(1)
            .and_then(|previous| self.scopes.get(previous))
            .into_iter()
            .flatten()
            .map(String::as_str)
    }

    /// The variables in scope after clause `clause` (a `RETURN`'s columns, in order).
    pub fn in_scope_after(&self, clause: usize) -> impl Iterator<Item = &str> {
        self.scopes
            .get(clause)
            .into_iter()
            .flatten()
            .map(String::as_str)
    }
}

/// Checks `st` (parsed from `source`) against `schema`.
pub fn check(source: &str, st: &Statement, schema: &Schema) -> Result<BoundStatement, CheckErrors> {
    let mut c = Checker {
        source,
        schema,
        errors: Vec::new(),
        scope: Scope::default(),
        projected: Vec::new(),
        dropped: Vec::new(),
    };
    let mut checked = BoundStatement::default();
    for clause in &st.clauses {
        c.clause(clause);
        checked
            .scopes
            .push(c.scope.names().map(str::to_string).collect());
    }
    let mut errors = c.errors;
    errors.sort_by_key(|e| e.diagnostic.span.start);
    if errors.is_empty() {
        Ok(checked)
    } else {
        Err(CheckErrors(errors))
    }
}

/// Variables in scope, in binding order (the order `RETURN *` uses).
#[derive(Clone, Debug, Default)]
pub(crate) struct Scope {
    vars: Vec<(String, ValueKind)>,
}

impl Scope {
    pub(crate) fn get(&self, name: &str) -> Option<ValueKind> {
        self.vars.iter().find(|(n, _)| n == name).map(|(_, k)| *k)
    }

    pub(crate) fn bind(&mut self, name: &str, kind: ValueKind) {
        match self.vars.iter_mut().find(|(n, _)| n == name) {
            Some(v) => v.1 = kind,
            None => self.vars.push((name.to_string(), kind)),
        }
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.vars.iter().map(|(n, _)| n.as_str())
    }
}

/// Where an expression appears, which decides whether aggregates are allowed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ctx {
    /// WHERE, property maps, UNWIND, SET values...: no aggregates.
    Plain,
    /// A projection item: aggregates allowed at any depth except inside another aggregate.
    Projection,
}

pub(crate) struct Checker<'a> {
    pub(crate) source: &'a str,
    pub(crate) schema: &'a Schema,
    pub(crate) errors: Vec<CheckError>,
    pub(crate) scope: Scope,
    /// Printed projection items that ORDER BY may use after aggregation or DISTINCT.
    pub(crate) projected: Vec<String>,
    /// Variables the last WITH did not carry over, for a precise hint.
    pub(crate) dropped: Vec<String>,
}

impl<'a> Checker<'a> {
    pub(crate) fn error(
        &mut self,
        kind: CheckErrorKind,
        span: Span,
        msg: impl Into<String>,
        hint: Option<String>,
    ) {
        self.errors.push(CheckError {
            kind,
            diagnostic: Diagnostic::new(self.source, span, msg, hint),
        });
    }

    fn clause(&mut self, c: &Clause) {
        match c {
            Clause::Match(m) => {
                self.patterns(&m.pattern, PatternUse::Match);
                if let Some(w) = &m.where_ {
                    self.expr(w, Ctx::Plain);
                }
            }
            Clause::Unwind(u) => {
                self.expr(&u.expr, Ctx::Plain);
                self.bind_new(&u.variable, ValueKind::Any);
            }
            Clause::With(p) => self.projection(p, true),
            Clause::Return(p) => self.projection(p, false),
            Clause::Call(call) => self.call(call),
            Clause::Create(cr) => self.patterns(&cr.pattern, PatternUse::Create),
            Clause::Merge(m) => {
                self.patterns(std::slice::from_ref(&m.part), PatternUse::Merge);
                for it in m.on_create.iter().chain(&m.on_match) {
                    self.set_item(it);
                }
            }
            Clause::Set(s) => {
                for it in &s.items {
                    self.set_item(it);
                }
            }
            Clause::Delete(d) => {
                for e in &d.exprs {
                    self.expr(e, Ctx::Plain);
                }
            }
            Clause::Remove(r) => {
                for it in &r.items {
                    match it {
                        RemoveItem::Property { variable, key } => {
                            let k = self.variable_use(variable);
                            self.property_key(k, key);
                        }
                        RemoveItem::Labels { variable, labels } => {
                            self.variable_use(variable);
                            for l in labels {
                                self.label(l);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Binds a variable that must not exist yet (UNWIND, YIELD, aliases, path names).
    fn bind_new(&mut self, id: &Ident, kind: ValueKind) {
        if self.scope.get(&id.name).is_some() {
            self.error(
                CheckErrorKind::VariableRedefined,
                id.span,
                format!("variable `{}` is already defined", id.name),
                Some("choose another name".into()),
            );
        }
        self.scope.bind(&id.name, kind);
    }

    /// A variable that must already be bound; returns its kind.
    fn variable_use(&mut self, id: &Ident) -> ValueKind {
        match self.scope.get(&id.name) {
            Some(k) => k,
            None => {
                let hint = self.undefined_hint(&id.name);
                self.error(
                    CheckErrorKind::UndefinedVariable,
                    id.span,
                    format!("variable `{}` is not defined", id.name),
                    hint,
                );
                ValueKind::Any
            }
        }
    }

    /// Why a name is undefined: dropped by a WITH, or a typo of a name in scope.
    pub(crate) fn undefined_hint(&self, name: &str) -> Option<String> {
        if self.dropped.iter().any(|d| d == name) {
            return Some(format!(
                "`{name}` is not carried over by the preceding WITH; add it there, e.g. `WITH {name}, ...`"
            ));
        }
        did_you_mean(name, self.scope.names().collect::<Vec<_>>())
    }

    fn label(&mut self, l: &Ident) {
        if self.schema.resolve_label(&l.name).is_none() {
            let hint =
                did_you_mean(&l.name, self.schema.labels().collect::<Vec<_>>()).or_else(|| {
                    Some(format!(
                        "known labels: {}",
                        self.schema.labels().collect::<Vec<_>>().join(", ")
                    ))
                });
            self.error(
                CheckErrorKind::UnknownLabel,
                l.span,
                format!("unknown label `{}`", l.name),
                hint,
            );
        }
    }

    fn rel_type(&mut self, t: &Ident) {
        if self.schema.resolve_rel_type(&t.name).is_none() {
            let hint =
                did_you_mean(&t.name, self.schema.rel_types().collect::<Vec<_>>()).or_else(|| {
                    Some(format!(
                        "known relationship types: {}",
                        self.schema.rel_types().collect::<Vec<_>>().join(", ")
                    ))
                });
            self.error(
                CheckErrorKind::UnknownRelType,
                t.span,
                format!("unknown relationship type `{}`", t.name),
                hint,
            );
        }
    }

    /// Checks `key` as a property of a value of `kind`.
    pub(crate) fn property_key(&mut self, kind: ValueKind, key: &Ident) {
        let (known, names, what): (bool, Vec<&str>, &str) = match kind {
            ValueKind::Node => (
                self.schema.node_property(&key.name).is_some(),
                self.schema.node_properties().collect(),
                "nodes",
            ),
            ValueKind::Rel => (
                self.schema.rel_property(&key.name).is_some(),
                self.schema.rel_properties().collect(),
                "relationships",
            ),
            ValueKind::RelList | ValueKind::Path => {
                self.error(
                    CheckErrorKind::WrongKind,
                    key.span,
                    format!("cannot read property `{}` of {}", key.name, kind.noun()),
                    Some(if kind == ValueKind::Path {
                        "use nodes(p) or relationships(p) to reach the elements".into()
                    } else {
                        "a variable-length relationship is a list; index it, e.g. `r[0].line`"
                            .into()
                    }),
                );
                return;
            }
            ValueKind::Literal => {
                self.error(
                    CheckErrorKind::WrongKind,
                    key.span,
                    format!("cannot read property `{}` of {}", key.name, kind.noun()),
                    Some("only nodes, relationships and maps have properties".into()),
                );
                return;
            }
            ValueKind::Any | ValueKind::Map => return,
        };
        if !known {
            let hint = did_you_mean(&key.name, names.iter().copied())
                .or_else(|| Some(format!("properties of {what}: {}", names.join(", "))));
            self.error(
                CheckErrorKind::UnknownProperty,
                key.span,
                format!("{what} have no property `{}`", key.name),
                hint,
            );
        }
    }

    fn set_item(&mut self, it: &SetItem) {
        match it {
            SetItem::Property {
                variable,
                key,
                value,
            } => {
                let k = self.variable_use(variable);
                self.property_key(k, key);
                self.expr(value, Ctx::Plain);
            }
            SetItem::Merge { variable, value } | SetItem::Replace { variable, value } => {
                self.variable_use(variable);
                self.expr(value, Ctx::Plain);
            }
            SetItem::Labels { variable, labels } => {
                let k = self.variable_use(variable);
                if !matches!(k, ValueKind::Node | ValueKind::Any) {
                    self.error(
                        CheckErrorKind::WrongKind,
                        variable.span,
                        format!(
                            "labels can only be set on nodes; `{}` is {}",
                            variable.name,
                            k.noun()
                        ),
                        None,
                    );
                }
                for l in labels {
                    self.label(l);
                }
            }
        }
    }

    fn call(&mut self, call: &CallClause) {
        if let Some(args) = &call.args {
            for a in args {
                self.expr(a, Ctx::Plain);
            }
        }
        let Some(sig) = self.schema.procedure(&call.procedure.name).cloned() else {
            let names: Vec<String> = self.schema.procedures().map(|p| p.name.clone()).collect();
            let hint = did_you_mean(&call.procedure.name, names.iter().map(String::as_str))
                .or_else(|| Some(format!("available procedures: {}", names.join(", "))));
            self.error(
                CheckErrorKind::UnknownProcedure,
                call.procedure.span,
                format!("unknown procedure `{}`", call.procedure.name),
                hint,
            );
            // Bind what is yielded anyway so later clauses do not cascade into errors.
            for y in call.yields.iter().flatten() {
                self.scope.bind(&y.variable().name, ValueKind::Any);
            }
            return;
        };
        let n = call.args.as_ref().map_or(0, Vec::len);
        if n < sig.min_args || n > sig.max_args {
            self.error(
                CheckErrorKind::WrongArgumentCount,
                call.procedure.span,
                format!(
                    "procedure `{}` takes {} argument(s), {n} given",
                    sig.name,
                    arity(sig.min_args, sig.max_args)
                ),
                None,
            );
        }
        match &call.yields {
            Some(items) if !items.is_empty() => {
                for y in items {
                    match sig.outputs.iter().find(|(o, _)| *o == y.field.name) {
                        Some((_, kind)) => self.bind_new(y.variable(), *kind),
                        None => {
                            let hint = did_you_mean(
                                &y.field.name,
                                sig.outputs.iter().map(|(o, _)| o.as_str()),
                            )
                            .or_else(|| {
                                let outs: Vec<&str> =
                                    sig.outputs.iter().map(|(o, _)| o.as_str()).collect();
                                Some(format!("`{}` yields: {}", sig.name, outs.join(", ")))
                            });
                            self.error(
                                CheckErrorKind::UnknownYield,
                                y.field.span,
                                format!(
                                    "procedure `{}` has no output `{}`",
                                    sig.name, y.field.name
                                ),
                                hint,
                            );
                            self.scope.bind(&y.variable().name, ValueKind::Any);
                        }
                    }
                }
            }
            // `YIELD *` or a standalone CALL: every output column.
            _ => {
                for (o, kind) in &sig.outputs {
                    let id = Ident {
                        name: o.clone(),
                        span: call.procedure.span,
                    };
                    self.bind_new(&id, *kind);
                }
            }
        }
        if let Some(w) = &call.where_ {
            self.expr(w, Ctx::Plain);
        }
    }
}

fn arity(min: usize, max: usize) -> String {
    if min == max {
        min.to_string()
    } else if max == usize::MAX {
        format!("at least {min}")
    } else {
        format!("{min} to {max}")
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum PatternUse {
    Match,
    Create,
    /// MERGE creates like CREATE, but may leave a relationship undirected (it matches
    /// either way and is created left to right).
    Merge,
}

impl PatternUse {
    fn creates(self) -> bool {
        matches!(self, PatternUse::Create | PatternUse::Merge)
    }
}

pub(crate) mod clauses;
