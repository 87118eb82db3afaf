//! Running one compiled statement over a graph: build the physical plan, then explain
//! it, or pull its rows under the limits and report the profile.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use batho_lang::ast::Mode;
use batho_lang::plan::Plan;
use batho_lang::{PropertyAccess, Value};

use super::exec::{BoxOp, Ctx, ExecError};
use super::physical::{Builder, Flags};
use super::topology::Topology;
use super::{Bound, OperatorProfile, QueryError, QueryOptions, QueryResult, QueryStats};

/// One statement to run and how.
pub(crate) struct Statement<'s> {
    pub(crate) text: &'s str,
    pub(crate) plan: &'s Plan,
    pub(crate) params: &'s BTreeMap<String, Value>,
    pub(crate) opts: &'s QueryOptions,
    pub(crate) start: Instant,
    /// The generation an `AT` clause reads, shown at the head of the plan.
    pub(crate) at: Option<&'s str>,
    /// The value of the plan's `moved_parameter`, given by a caller that owned it (and
    /// removed it from `params`).
    pub(crate) moved: Cell<Option<Value>>,
}

/// Runs `statement` over `topology`, whose properties `access` reads.
pub(crate) fn execute(
    topology: Topology<'_>,
    access: &dyn PropertyAccess,
    statement: &Statement<'_>,
) -> Result<QueryResult, QueryError> {
    let plan = statement.plan;
    let profile = statement.opts.profile || plan.mode == Mode::Profile;
    let flags = Flags {
        optimize: statement.opts.optimize,
        profile,
    };
    let moved = plan.moved_parameter.clone().zip(statement.moved.take());
    let mut builder = Builder::new(topology, flags, &plan.root).with_moved_parameter(moved);
    let built = builder
        .build(&plan.root, &[])
        .map_err(|e| QueryError::from_exec(statement.text, e))?;
    if plan.mode == Mode::Explain {
        return Ok(explain(statement, &builder));
    }
    let picks = result_picks(&plan.columns, &built.cols)?;
    let ctx = Ctx::new(
        topology,
        access,
        statement.params,
        statement.opts.limits,
        statement.opts.cancel.clone(),
    );
    let (mut rows, truncated) = pull_rows(&ctx, built.op, &picks, statement.opts.limits.max_rows)
        .map_err(|e| QueryError::from_exec(statement.text, e))?;
    if plan.columns.is_empty() {
        // A statement ending in an update clause returns nothing: its rows were pulled
        // only to make the writes happen.
        rows.clear();
    }
    let (profile_out, plan_out) = if profile {
        let (ops, text) = profile_report(statement, &builder);
        (Some(ops), Some(text))
    } else {
        (None, None)
    };
    Ok(QueryResult {
        columns: plan.columns.clone(),
        rows,
        truncated,
        stats: QueryStats {
            work: ctx.work_done(),
            elapsed: statement.start.elapsed(),
        },
        profile: profile_out,
        plan: plan_out,
        updates: Default::default(),
    })
}

/// Where each result column sits in the operator's rows.
fn result_picks(columns: &[String], produced: &[String]) -> Result<Vec<usize>, QueryError> {
    columns
        .iter()
        .map(|c| produced.iter().position(|x| x == c))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| QueryError::Unsupported {
            message: "internal planner error: a result column is not produced".into(),
        })
}

/// Pulls rows until the operator ends or `max_rows` are held (then the result is marked
/// truncated).
fn pull_rows<'a>(
    ctx: &Ctx<'a>,
    mut op: BoxOp<'a>,
    picks: &[usize],
    max_rows: usize,
) -> Result<(Vec<Vec<Value>>, Option<Bound>), ExecError> {
    let mut rows = Vec::new();
    ctx.check()?;
    op.open(ctx, &[])?;
    let in_place =
        |row: &[Value]| picks.len() == row.len() && picks.iter().enumerate().all(|(i, &p)| i == p);
    while let Some(mut row) = op.next(ctx)? {
        if rows.len() >= max_rows {
            return Ok((rows, Some(Bound::Rows { limit: max_rows })));
        }
        let out: Vec<Value> = if in_place(&row) {
            row
        } else {
            picks
                .iter()
                .map(|&p| std::mem::replace(&mut row[p], Value::Null))
                .collect()
        };
        rows.push(out);
    }
    Ok((rows, None))
}

/// The plan text: logical operators with their physical notes and `extra(i)` per line,
/// headed by the generation an `AT` clause reads.
fn plan_text(
    statement: &Statement<'_>,
    builder: &Builder<'_>,
    extra: &dyn Fn(usize) -> String,
) -> String {
    let logical = statement.plan.root.to_string();
    statement
        .at
        .map(str::to_string)
        .into_iter()
        .chain(logical.lines().enumerate().map(|(i, l)| {
            let note = builder.notes.get(i).map(String::as_str).unwrap_or("");
            let x = extra(i);
            match (note.is_empty(), x.is_empty()) {
                (true, true) => l.to_string(),
                (false, true) => format!("{l}  [{note}]"),
                (true, false) => format!("{l}  {{{x}}}"),
                (false, false) => format!("{l}  [{note}] {{{x}}}"),
            }
        }))
        .collect::<Vec<_>>()
        .join("\n")
}

fn explain(statement: &Statement<'_>, builder: &Builder<'_>) -> QueryResult {
    let text = plan_text(statement, builder, &|_| String::new());
    QueryResult {
        columns: vec!["plan".to_string()],
        rows: text.lines().map(|l| vec![Value::from(l)]).collect(),
        truncated: None,
        stats: QueryStats {
            work: 0,
            elapsed: statement.start.elapsed(),
        },
        profile: None,
        plan: Some(text),
        updates: Default::default(),
    }
}

fn profile_report(
    statement: &Statement<'_>,
    builder: &Builder<'_>,
) -> (Vec<OperatorProfile>, String) {
    let logical = statement.plan.root.to_string();
    let ops: Vec<OperatorProfile> = logical
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let counter = builder.counters.get(i);
            OperatorProfile {
                operator: l.to_string(),
                detail: builder.notes.get(i).cloned().unwrap_or_default(),
                rows: counter.map_or(0, |c| c.rows.get()),
                time: Duration::from_nanos(counter.map_or(0, |c| c.nanos.get())),
            }
        })
        .collect();
    let text = plan_text(statement, builder, &|i| {
        ops.get(i)
            .map(|o| format!("rows={} time={:?}", o.rows, o.time))
            .unwrap_or_default()
    });
    (ops, text)
}
