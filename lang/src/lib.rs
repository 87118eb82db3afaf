//! BQL, Batho's Cypher-like query language: parser, AST, semantic checks, logical plans,
//! values and the expression evaluator.
//!
//! This crate knows the graph schema (`batho-schema`) but never the store: the engine
//! implements [`eval::PropertyAccess`] to let expressions read node and relationship
//! properties, and runs [`plan::LogicalPlan`] trees against its storage.
//!
//! Pipeline: [`parse()`] → [`check::check`] → [`plan::plan`]; [`compile`] does all three.
//! The engine then binds each operator's expressions to its row's places ([`bind`]).

#![warn(missing_docs)]

pub mod ast;
pub mod bind;
pub mod check;
pub mod diag;
pub mod eval;
pub mod functions;
pub mod parse;
pub mod plan;
pub mod print;
pub mod schema;
pub mod temporal;
pub mod value;

pub use ast::Span;
pub use check::{BoundStatement, CheckError, CheckErrorKind, CheckErrors, check};
pub use diag::Diagnostic;
pub use eval::{Bindings, EvalBounds, EvalError, Evaluator, NoGraph, PropertyAccess, Stop};
pub use parse::{ParseError, ParseErrorKind, parse, parse_statement};
pub use plan::{LogicalPlan, Plan, PlanError, plan};
pub use schema::{Schema, ValueKind};
pub use temporal::{Duration, Temporal, TemporalKind};
pub use value::Value;

/// A statement parsed, checked and planned.
#[derive(Clone, Debug, PartialEq)]
pub struct Compiled {
    /// The syntax tree.
    pub statement: ast::Statement,
    /// Its logical plan.
    pub plan: Plan,
}

/// Why [`compile`] failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CompileError {
    /// The text is not valid BQL.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// A statement does not fit the schema.
    #[error(transparent)]
    Check(#[from] CheckErrors),
    /// A statement uses something the planner does not support.
    #[error(transparent)]
    Plan(#[from] PlanError),
}

/// Parses, checks and plans every statement of `text` against `schema`.
pub fn compile(text: &str, schema: &Schema) -> Result<Vec<Compiled>, CompileError> {
    let mut out = Vec::new();
    for statement in parse(text)? {
        let checked = check(text, &statement, schema)?;
        let plan = plan(text, &statement, &checked, schema)?;
        // A planner bug becomes an error here rather than a wrong answer in the engine.
        plan.validate()?;
        out.push(Compiled { statement, plan });
    }
    mark_moved_parameters(&mut out);
    Ok(out)
}

/// Sets [`Plan::moved_parameter`] where a plan's once-run `UNWIND` reads a parameter
/// that nothing else reads: used once in the whole text, and read once by the plans (a
/// planner that copied the expression would read it twice).
fn mark_moved_parameters(compiled: &mut [Compiled]) {
    let plan_uses: Vec<String> = compiled
        .iter()
        .flat_map(|c| c.plan.root.parameter_uses())
        .collect();
    let uses = |name: &str| {
        let in_text = compiled
            .iter()
            .flat_map(|c| &c.statement.parameters)
            .filter(|used| used.as_str() == name)
            .count();
        let in_plans = plan_uses
            .iter()
            .filter(|used| used.as_str() == name)
            .count();
        in_text.max(in_plans)
    };
    let moved: Vec<Option<String>> = compiled
        .iter()
        .map(|c| {
            c.plan
                .root
                .unwound_once_parameter()
                .filter(|name| uses(name) == 1)
                .map(str::to_string)
        })
        .collect();
    for (c, moved) in compiled.iter_mut().zip(moved) {
        c.plan.moved_parameter = moved;
    }
}
