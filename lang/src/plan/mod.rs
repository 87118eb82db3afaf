//! Logical plans: what to compute, not how. The engine maps each operator onto its
//! storage (bitmaps, CSR adjacency, column reads); this crate only decides the shape.
//!
//! # Rows and columns
//! Every operator produces rows: maps from column names to [`crate::Value`]s. Columns are
//! named after query variables; anonymous pattern elements get internal names starting
//! with `#` (e.g. `#n0`, `#r1`), which never reach the user because the final projection
//! only keeps named columns. Unless stated otherwise an operator passes its input's
//! columns through unchanged and adds the ones listed.
//!
//! Expressions inside operators are [`crate::ast::Expr`] trees and are evaluated with
//! [`crate::eval::Evaluator`] over the operator's input row. They reference only columns
//! produced below them and `$parameters`; aggregate calls never occur outside
//! [`LogicalPlan::Aggregate`], where they are split into [`AggregateSpec`]s.
//!
//! # Leaves
//! Every tree bottoms out in [`LogicalPlan::Argument`]: one row holding the listed columns
//! of the enclosing row (for the inner side of [`LogicalPlan::Optional`]) or no columns (at
//! the top of a query and on the right side of a [`LogicalPlan::CartesianProduct`]).

mod build;
mod columns;
mod display;
mod project;

pub use build::{PlanError, plan, regex_literal_prefix};

use crate::ast::{Direction, Expr, ExprKind, Mode, PatternPart, RemoveItem, SetItem};
use crate::eval::AggregateFunc;

/// A planned statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The operator tree.
    pub root: LogicalPlan,
    /// The user-visible columns of the result, in order (empty for updates without RETURN).
    pub columns: Vec<String>,
    /// Run, EXPLAIN or PROFILE.
    pub mode: Mode,
    /// Whether the plan modifies the graph (needs a writable graph).
    pub writes: bool,
    /// A list parameter that the plan's first `UNWIND` reads once and nothing else in the
    /// query text reads (set by [`crate::compile`]): a caller that owns the parameters may
    /// move the list into that `UNWIND` rather than copy it.
    pub moved_parameter: Option<String>,
}

/// Which indexed property a seek uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SeekKey {
    /// The stable `id` property (unique).
    Id,
    /// The `name` property (not unique).
    Name,
    /// Names starting with the value: a range of the sorted name index. Planned for
    /// `STARTS WITH` and for `=~` literals with a literal prefix (the regex itself stays
    /// as a filter above the seek).
    NamePrefix,
    /// Names matching the regex given as the value (a parameter, known only when the plan
    /// runs): the executor seeks the range of the pattern's literal prefix
    /// ([`regex_literal_prefix`]), or scans when it has none. The regex stays as a filter.
    NameRegex,
}

impl SeekKey {
    /// The property name.
    pub fn property(self) -> &'static str {
        match self {
            SeekKey::Id => "id",
            SeekKey::Name | SeekKey::NamePrefix | SeekKey::NameRegex => "name",
        }
    }
}

/// One sort key.
#[derive(Clone, Debug, PartialEq)]
pub struct SortKey {
    /// Evaluated over the input row.
    pub expr: Expr,
    /// Descending (nulls first) instead of ascending (nulls last).
    pub descending: bool,
}

/// One aggregate column of [`LogicalPlan::Aggregate`].
#[derive(Clone, Debug, PartialEq)]
pub struct AggregateSpec {
    /// The function.
    pub func: AggregateFunc,
    /// `DISTINCT` inputs only.
    pub distinct: bool,
    /// The argument (`None` for `count(*)`), evaluated over each input row.
    pub arg: Option<Expr>,
    /// The output column.
    pub column: String,
}

/// The bounds of an expansion in hops, inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HopRange {
    /// Fewest hops (0 binds `to` = `from` with an empty relationship list).
    pub min: u32,
    /// Most hops.
    pub max: u32,
}

/// A logical operator.
#[derive(Clone, Debug, PartialEq)]
pub enum LogicalPlan {
    /// One row with `columns` copied from the enclosing row (none at the top level).
    Argument {
        /// Columns taken from the enclosing row.
        columns: Vec<String>,
    },
    /// For each input row, every node carrying any of `labels` (every node when empty).
    /// Adds column `var` (a node).
    NodeScan {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// The bound node column.
        var: String,
        /// Label alternatives (canonical names).
        labels: Vec<String>,
    },
    /// For each input row, the nodes whose `key` property equals `value` (evaluated on the
    /// input row) and that carry any of `labels` (any node when empty). Adds column `var`.
    NodeSeek {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// The bound node column.
        var: String,
        /// The indexed property.
        key: SeekKey,
        /// The value to look up.
        value: Expr,
        /// Label alternatives (canonical names).
        labels: Vec<String>,
    },
    /// For each input row, follows relationships from node column `from`. Adds `rel` (a
    /// relationship, or a list of relationships when `length` is set) and `to` (a node),
    /// unless `into` is set: then `to` is already bound and only rows where the
    /// relationship(s) reach it are kept.
    ///
    /// Relationship uniqueness: no relationship bound here may equal one held in the
    /// columns `unique_with` (earlier relationships of the same MATCH), and a
    /// variable-length expansion never repeats a relationship within its own list.
    Expand {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// Start node column.
        from: String,
        /// Relationship column.
        rel: String,
        /// End node column.
        to: String,
        /// Direction relative to `from`.
        direction: Direction,
        /// Type alternatives (canonical names; empty means any).
        types: Vec<String>,
        /// `Some` for variable length.
        length: Option<HopRange>,
        /// `to` is already bound.
        into: bool,
        /// Relationship columns this expansion must not repeat.
        unique_with: Vec<String>,
    },
    /// For each input row with both `from` and `to` bound, the shortest path(s) between them
    /// following `types` in `direction` within `length`. Adds `path` (a path) and `rel` (its
    /// list of relationships). No row when no path exists.
    ShortestPath {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// Start node column.
        from: String,
        /// End node column.
        to: String,
        /// Path column.
        path: String,
        /// Relationship-list column.
        rel: String,
        /// Direction relative to `from`.
        direction: Direction,
        /// Type alternatives (empty: any).
        types: Vec<String>,
        /// Hop bounds.
        length: HopRange,
        /// Every shortest path instead of one.
        all: bool,
    },
    /// Keeps rows where `predicate` is `true` (not `false`, not `null`).
    Filter {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// The predicate.
        predicate: Expr,
    },
    /// Replaces each row by exactly the listed columns (nothing is passed through).
    Project {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// `(expression, column)` in output order.
        items: Vec<(Expr, String)>,
    },
    /// Groups rows by `group_by` and computes `aggregates` per group. Output columns: the
    /// group columns then the aggregate columns. With no group keys, exactly one row is
    /// produced even for empty input (`count(*)` = 0).
    Aggregate {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// `(expression, column)` grouping keys (grouping uses [`crate::value::GroupKey`] equivalence).
        group_by: Vec<(Expr, String)>,
        /// Aggregates.
        aggregates: Vec<AggregateSpec>,
    },
    /// Removes rows equal (by `GroupKey` equivalence) to an earlier row on every column.
    Distinct {
        /// Input rows.
        input: Box<LogicalPlan>,
    },
    /// Sorts rows by `keys` using [`crate::Value::order`]; stable.
    Sort {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// Keys, most significant first.
        keys: Vec<SortKey>,
    },
    /// The first `limit` rows of the sorted order, without sorting everything.
    TopK {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// Keys, most significant first.
        keys: Vec<SortKey>,
        /// Row count (a non-negative integer expression without columns).
        limit: Expr,
    },
    /// Drops the first `count` rows.
    Skip {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// Row count (constant or parameter).
        count: Expr,
    },
    /// Keeps the first `count` rows.
    Limit {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// Row count (constant or parameter).
        count: Expr,
    },
    /// For each input row and each element of the list `expr`, a row with `var` bound to the
    /// element (a non-list value yields one row; `null` yields none).
    Unwind {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// The list.
        expr: Expr,
        /// The element column.
        var: String,
    },
    /// Calls an engine procedure once per input row; each output record adds the `yields`
    /// columns: `(procedure output field, column)`.
    ProcedureCall {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// Canonical dotted name.
        procedure: String,
        /// Arguments, evaluated on the input row.
        args: Vec<Expr>,
        /// `(field, column)` pairs.
        yields: Vec<(String, String)>,
    },
    /// Left outer apply: for each input row, runs `inner` (whose `Argument` receives the row);
    /// emits its rows, or the input row with `new_columns` set to null when it yields none.
    Optional {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// The optional part.
        inner: Box<LogicalPlan>,
        /// Columns `inner` adds.
        new_columns: Vec<String>,
    },
    /// Every combination of a left row and a right row (the right side does not depend on
    /// the left and can be computed once).
    CartesianProduct {
        /// Left rows.
        left: Box<LogicalPlan>,
        /// Right rows.
        right: Box<LogicalPlan>,
    },
    /// Pairs left and right rows whose keys are equal (`=` semantics: null never joins).
    /// Output: left columns then right columns.
    HashJoin {
        /// Left rows.
        left: Box<LogicalPlan>,
        /// Right rows.
        right: Box<LogicalPlan>,
        /// Keys evaluated on left rows.
        left_keys: Vec<Expr>,
        /// Keys evaluated on right rows, pairwise equal to `left_keys`.
        right_keys: Vec<Expr>,
    },
    /// Adds column `var`: the path starting at node column `start` and following, in order,
    /// the relationship columns `rels` (each a relationship or a list of relationships).
    BindPath {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// Path column.
        var: String,
        /// First node column.
        start: String,
        /// Relationship columns in path order.
        rels: Vec<String>,
    },
    /// Creates the pattern once per input row; binds new variables as columns.
    Create {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// The parts to create (variables bound in the input are reused, not created).
        pattern: Vec<PatternPart>,
    },
    /// Matches the pattern or creates it, per input row, then applies the matching actions.
    Merge {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// The pattern.
        part: PatternPart,
        /// Applied after creating.
        on_create: Vec<SetItem>,
        /// Applied after matching.
        on_match: Vec<SetItem>,
    },
    /// Applies property and label assignments per input row.
    SetProperties {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// Assignments.
        items: Vec<SetItem>,
    },
    /// Deletes the nodes, relationships or paths the expressions evaluate to.
    Delete {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// Also delete attached relationships.
        detach: bool,
        /// What to delete.
        exprs: Vec<Expr>,
    },
    /// Removes properties or labels per input row.
    Remove {
        /// Input rows.
        input: Box<LogicalPlan>,
        /// Removals.
        items: Vec<RemoveItem>,
    },
}

impl LogicalPlan {
    /// The operator's name as EXPLAIN shows it.
    pub fn name(&self) -> &'static str {
        match self {
            LogicalPlan::Argument { .. } => "Argument",
            LogicalPlan::NodeScan { .. } => "NodeScan",
            LogicalPlan::NodeSeek { .. } => "NodeSeek",
            LogicalPlan::Expand { into: true, .. } => "ExpandInto",
            LogicalPlan::Expand { .. } => "Expand",
            LogicalPlan::ShortestPath { all: true, .. } => "AllShortestPaths",
            LogicalPlan::ShortestPath { .. } => "ShortestPath",
            LogicalPlan::Filter { .. } => "Filter",
            LogicalPlan::Project { .. } => "Project",
            LogicalPlan::Aggregate { .. } => "Aggregate",
            LogicalPlan::Distinct { .. } => "Distinct",
            LogicalPlan::Sort { .. } => "Sort",
            LogicalPlan::TopK { .. } => "TopK",
            LogicalPlan::Skip { .. } => "Skip",
            LogicalPlan::Limit { .. } => "Limit",
            LogicalPlan::Unwind { .. } => "Unwind",
            LogicalPlan::ProcedureCall { .. } => "ProcedureCall",
            LogicalPlan::Optional { .. } => "Optional",
            LogicalPlan::CartesianProduct { .. } => "CartesianProduct",
            LogicalPlan::HashJoin { .. } => "HashJoin",
            LogicalPlan::BindPath { .. } => "BindPath",
            LogicalPlan::Create { .. } => "Create",
            LogicalPlan::Merge { .. } => "Merge",
            LogicalPlan::SetProperties { .. } => "SetProperties",
            LogicalPlan::Delete { detach: true, .. } => "DetachDelete",
            LogicalPlan::Delete { .. } => "Delete",
            LogicalPlan::Remove { .. } => "Remove",
        }
    }

    /// The parameter `$p` of an `UNWIND $p` that runs exactly once per execution: one
    /// over the plan's top-level `Argument` (a single row), reached from the root through
    /// operators that open their input once. The inner side of an `Optional` and both
    /// sides of a product or join are not followed, since they may run per outer row.
    pub fn unwound_once_parameter(&self) -> Option<&str> {
        let mut at = self;
        loop {
            if let LogicalPlan::Unwind { input, expr, .. } = at
                && let LogicalPlan::Argument { columns } = input.as_ref()
                && columns.is_empty()
                && let ExprKind::Parameter(name) = &expr.kind
            {
                return Some(name);
            }
            at = match at {
                LogicalPlan::Argument { .. }
                | LogicalPlan::CartesianProduct { .. }
                | LogicalPlan::HashJoin { .. } => return None,
                LogicalPlan::Optional { input, .. } => input,
                _ => match at.children().as_slice() {
                    [only] => only,
                    _ => return None,
                },
            };
        }
    }

    /// The operator's inputs, in display order (input/left first).
    pub fn children(&self) -> Vec<&LogicalPlan> {
        match self {
            LogicalPlan::Argument { .. } => vec![],
            LogicalPlan::Optional { input, inner, .. } => vec![input, inner],
            LogicalPlan::CartesianProduct { left, right }
            | LogicalPlan::HashJoin { left, right, .. } => {
                vec![left, right]
            }
            LogicalPlan::NodeScan { input, .. }
            | LogicalPlan::NodeSeek { input, .. }
            | LogicalPlan::Expand { input, .. }
            | LogicalPlan::ShortestPath { input, .. }
            | LogicalPlan::Filter { input, .. }
            | LogicalPlan::Project { input, .. }
            | LogicalPlan::Aggregate { input, .. }
            | LogicalPlan::Distinct { input }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::TopK { input, .. }
            | LogicalPlan::Skip { input, .. }
            | LogicalPlan::Limit { input, .. }
            | LogicalPlan::Unwind { input, .. }
            | LogicalPlan::ProcedureCall { input, .. }
            | LogicalPlan::BindPath { input, .. }
            | LogicalPlan::Create { input, .. }
            | LogicalPlan::Merge { input, .. }
            | LogicalPlan::SetProperties { input, .. }
            | LogicalPlan::Delete { input, .. }
            | LogicalPlan::Remove { input, .. } => vec![input],
        }
    }
}
