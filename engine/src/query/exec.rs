//! The execution core: the per-query context (evaluator, limits, cancellation), the
//! pull-based operator interface and the relational operators (filter, projection,
//! aggregation, sorting, joins). Graph operators live in `expand`.
//!
//! Operators are pulled one row at a time so that `LIMIT` stops all work below it as
//! soon as it has its rows; only operators that must see every input row (sort,
//! aggregation, the build side of a join) materialise, and they count what they hold
//! against the query's memory bound.

use std::cell::Cell;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtOrd};
use std::time::{Duration, Instant};

use batho_lang::ast::{Expr, Span};
use batho_lang::eval::{Accumulator, AggregateFunc};
use batho_lang::plan::{AggregateSpec, SortKey};
use batho_lang::value::GroupKey;
use batho_lang::{Bindings, EvalBounds, EvalError, Evaluator, PropertyAccess, Stop, Value};
use batho_storage::Artifact;

use super::topology::Topology;
use super::{Bound, Limits};

/// One row: values in the operator's column order.
pub(crate) type Row = Vec<Value>;

/// Why execution stopped early (converted to [`super::QueryError`] by the caller, who
/// knows the query text for diagnostics).
#[derive(Debug)]
pub(crate) enum ExecError {
    Eval(EvalError),
    Bound(Bound),
    Unsupported(String),
}

impl From<EvalError> for ExecError {
    fn from(e: EvalError) -> Self {
        match e {
            // A loop inside an expression hit a bound of the query: the same error as
            // when an operator hits it.
            EvalError::Stopped { stop, .. } => ExecError::Bound(match stop {
                Stop::Work(limit) => Bound::Work { limit },
                Stop::Timeout(limit) => Bound::Timeout { limit },
                Stop::Cancelled => Bound::Cancelled,
            }),
            e => ExecError::Eval(e),
        }
    }
}

/// An operator's expression names a column its input lacks: a planner bug, reported as
/// an internal error when the operator is built.
impl From<batho_lang::bind::UnboundColumn> for ExecError {
    fn from(error: batho_lang::bind::UnboundColumn) -> Self {
        ExecError::Unsupported(format!("internal planner error: {error}"))
    }
}

pub(crate) type ExecResult<T> = Result<T, ExecError>;

/// Everything an operator needs while running one query.
pub(crate) struct Ctx<'a> {
    pub(crate) topology: Topology<'a>,
    pub(crate) eval: Evaluator<'a>,
    limits: Limits,
    cancel: Option<Arc<AtomicBool>>,
    deadline: Option<Instant>,
    work: Cell<u64>,
    held: Cell<usize>,
    held_bytes: Cell<u64>,
}

/// How often (in work units) the clock and the cancel flag are checked.
const CHECK_EVERY: u64 = 1024;

impl<'a> Ctx<'a> {
    pub(crate) fn new(
        topology: Topology<'a>,
        graph: &'a dyn PropertyAccess,
        params: &'a std::collections::BTreeMap<String, Value>,
        limits: Limits,
        cancel: Option<Arc<AtomicBool>>,
    ) -> Self {
        let deadline = limits.timeout.map(|t| Instant::now() + t);
        let bounds = EvalBounds {
            deadline,
            timeout: limits.timeout.unwrap_or(Duration::ZERO),
            cancel: cancel.clone(),
            max_steps: limits.max_work,
        };
        Ctx {
            topology,
            eval: Evaluator::new(graph, params).with_bounds(bounds),
            deadline,
            limits,
            cancel,
            work: Cell::new(0),
            held: Cell::new(0),
            held_bytes: Cell::new(0),
        }
    }

    /// The code graph being read, for the procedures that only code graphs have.
    pub(crate) fn artifact(&self) -> ExecResult<&'a Artifact> {
        self.topology.artifact().ok_or_else(|| {
            ExecError::Unsupported(
                "this procedure reads a code graph; a writable graph does not have it".into(),
            )
        })
    }

    /// Counts `n` units of work (nodes scanned, edges followed, rows produced) and stops
    /// the query when a bound is hit.
    #[inline]
    pub(crate) fn tick(&self, n: u64) -> ExecResult<()> {
        let before = self.work.get();
        let now = before + n;
        self.work.set(now);
        if now > self.limits.max_work {
            return Err(ExecError::Bound(Bound::Work {
                limit: self.limits.max_work,
            }));
        }
        if before / CHECK_EVERY != now / CHECK_EVERY {
            self.check()?;
        }
        Ok(())
    }

    /// Checks the cancel flag and the clock.
    pub(crate) fn check(&self) -> ExecResult<()> {
        if let Some(c) = &self.cancel
            && c.load(AtOrd::Relaxed)
        {
            return Err(ExecError::Bound(Bound::Cancelled));
        }
        if let Some(d) = self.deadline
            && Instant::now() >= d
        {
            return Err(ExecError::Bound(Bound::Timeout {
                limit: self.limits.timeout.unwrap_or(Duration::ZERO),
            }));
        }
        Ok(())
    }

    /// Registers `n` more rows held in memory by a materialising operator.
    pub(crate) fn hold(&self, n: usize) -> ExecResult<()> {
        let h = self.held.get() + n;
        self.held.set(h);
        if h > self.limits.max_intermediate_rows {
            return Err(ExecError::Bound(Bound::Memory {
                limit: self.limits.max_intermediate_rows,
            }));
        }
        self.tick(n as u64)
    }

    /// Registers one more row held in memory, and its bytes: its values and its own
    /// allocation.
    pub(crate) fn hold_row(&self, row: &[Value]) -> ExecResult<()> {
        self.hold(1)?;
        self.hold_bytes(row_bytes(row))
    }

    /// Registers `bytes` more of values held in memory (rows of a materialising operator,
    /// values an aggregation keeps).
    pub(crate) fn hold_bytes(&self, bytes: usize) -> ExecResult<()> {
        let held = self.held_bytes.get() + bytes as u64;
        self.held_bytes.set(held);
        if held > self.limits.max_held_bytes {
            return Err(ExecError::Bound(Bound::HeldBytes {
                limit: self.limits.max_held_bytes,
            }));
        }
        Ok(())
    }

    pub(crate) fn work_done(&self) -> u64 {
        self.work.get()
    }

    /// Evaluates `e`, bound by `batho_lang::bind` against the columns of `row`.
    pub(crate) fn eval(&self, e: &Expr, row: &[Value]) -> ExecResult<Value> {
        Ok(self.eval.eval(e, &SlotRow(row))?)
    }

    /// Evaluates a constant row-count expression (LIMIT, SKIP, TOP-K).
    pub(crate) fn count(&self, e: &Expr) -> ExecResult<usize> {
        match self.eval(e, &[])? {
            Value::Int(i) if i >= 0 => Ok(usize::try_from(i).unwrap_or(usize::MAX)),
            v => Err(ExecError::Eval(EvalError::Type {
                message: format!("expected a non-negative integer row count, got {v}"),
                span: e.span,
            })),
        }
    }
}

/// A row for the evaluator: operators evaluate bound expressions, which read columns by
/// place, never by name.
pub(crate) struct SlotRow<'r>(pub(crate) &'r [Value]);

impl Bindings for SlotRow<'_> {
    fn get(&self, _name: &str) -> Option<&Value> {
        None
    }

    fn column(&self, index: usize) -> Option<&Value> {
        self.0.get(index)
    }
}

/// A pull-based physical operator.
pub(crate) trait Operator<'a> {
    /// Resets the operator for a new run whose `Argument` leaf receives `arg` (a row of the
    /// enclosing operator's input, or empty).
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()>;
    /// The next row, or `None` when exhausted.
    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>>;
}

pub(crate) type BoxOp<'a> = Box<dyn Operator<'a> + 'a>;

/// Stack left below which a [`StackGuard`] moves on to a fresh stack segment.
pub(crate) const STACK_RED_ZONE: usize = 128 << 10;
/// Size of each new stack segment.
pub(crate) const STACK_SEGMENT: usize = 2 << 20;
/// Operators nest one call frame per level, in `open` and `next`; every this many levels
/// the planner puts a [`StackGuard`], so a statement of hundreds of clauses runs on any
/// thread's stack while shallow plans pay nothing.
pub(crate) const STACK_GUARD_EVERY: usize = 16;

/// Runs its operator on a fresh stack segment when the current one runs low.
pub(crate) struct StackGuard<'a> {
    pub(crate) inner: BoxOp<'a>,
}

impl<'a> Operator<'a> for StackGuard<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || self.inner.open(ctx, arg))
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || self.inner.next(ctx))
    }
}

/// Rows produced and inclusive time spent, per operator, for PROFILE.
#[derive(Clone, Debug, Default)]
pub(crate) struct Counter {
    pub(crate) rows: Cell<u64>,
    pub(crate) nanos: Cell<u64>,
}

/// Wraps an operator to count its rows and time (PROFILE only, so plain runs pay nothing).
pub(crate) struct Profiled<'a> {
    pub(crate) inner: BoxOp<'a>,
    pub(crate) counter: std::rc::Rc<Counter>,
}

impl<'a> Operator<'a> for Profiled<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        let t = Instant::now();
        let r = self.inner.open(ctx, arg);
        self.add(t);
        r
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        let t = Instant::now();
        let r = self.inner.next(ctx);
        self.add(t);
        if let Ok(Some(_)) = &r {
            self.counter.rows.set(self.counter.rows.get() + 1);
        }
        r
    }
}

impl Profiled<'_> {
    fn add(&self, t: Instant) {
        let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.counter
            .nanos
            .set(self.counter.nanos.get().saturating_add(ns));
    }
}

/// The leaf: one row of columns picked from the enclosing row.
pub(crate) struct Argument {
    pub(crate) picks: Vec<usize>,
    pub(crate) row: Option<Row>,
}

impl<'a> Operator<'a> for Argument {
    fn open(&mut self, _: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.row = Some(
            self.picks
                .iter()
                .map(|&i| arg.get(i).cloned().unwrap_or(Value::Null))
                .collect(),
        );
        Ok(())
    }

    fn next(&mut self, _: &Ctx<'a>) -> ExecResult<Option<Row>> {
        Ok(self.row.take())
    }
}

/// Keeps rows where the predicate is `true`.
pub(crate) struct Filter<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) predicate: Expr,
}

impl<'a> Operator<'a> for Filter<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        while let Some(row) = self.input.next(ctx)? {
            if ctx.eval.eval_predicate(&self.predicate, &SlotRow(&row))? {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }
}

/// How a projection item is computed: a plain column copy skips the evaluator.
pub(crate) enum ProjItem {
    Column(usize),
    Expr(Expr),
}

/// Replaces each row by the listed expressions.
pub(crate) struct Project<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) items: Vec<ProjItem>,
}

impl<'a> Operator<'a> for Project<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        let Some(mut row) = self.input.next(ctx)? else {
            return Ok(None);
        };
        // Expressions first, while every input column is intact; then columns are moved
        // (not cloned) out of the row, except a column copied twice.
        let mut out = Vec::with_capacity(self.items.len());
        for it in &self.items {
            out.push(match it {
                ProjItem::Column(_) => Value::Null,
                ProjItem::Expr(e) => ctx.eval(e, &row)?,
            });
        }
        for (k, it) in self.items.iter().enumerate() {
            if let ProjItem::Column(i) = it {
                let first = self
                    .items
                    .iter()
                    .position(|x| matches!(x, ProjItem::Column(j) if j == i));
                out[k] = match first {
                    Some(first) if first < k => out[first].clone(),
                    _ => {
                        std::mem::replace(row.get_mut(*i).unwrap_or(&mut Value::Null), Value::Null)
                    }
                };
            }
        }
        Ok(Some(out))
    }
}

/// Hash aggregation; groups come out in first-seen order.
pub(crate) struct Aggregate<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) group_by: Vec<Expr>,
    pub(crate) aggregates: Vec<AggregateSpec>,
    pub(crate) out: std::vec::IntoIter<Row>,
}

impl Aggregate<'_> {
    fn fresh(&self) -> Vec<Accumulator> {
        self.aggregates
            .iter()
            .map(|a| {
                let span = a.arg.as_ref().map_or(Span::default(), |e| e.span);
                Accumulator::new(a.func, a.distinct, span)
            })
            .collect()
    }
}

impl<'a> Operator<'a> for Aggregate<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.input.open(ctx, arg)?;
        let mut index: HashMap<Vec<GroupKey>, usize> = HashMap::new();
        let mut groups: Vec<(Row, Vec<Accumulator>)> = Vec::new();
        while let Some(row) = self.input.next(ctx)? {
            let mut key = Vec::with_capacity(self.group_by.len());
            for e in &self.group_by {
                key.push(GroupKey(ctx.eval(e, &row)?));
            }
            let g = match index.get(&key) {
                Some(&g) => g,
                None => {
                    let vals: Row = key.iter().map(|k| k.0.clone()).collect();
                    ctx.hold_row(&vals)?;
                    groups.push((vals, self.fresh()));
                    index.insert(key, groups.len() - 1);
                    groups.len() - 1
                }
            };
            for (spec, acc) in self.aggregates.iter().zip(groups[g].1.iter_mut()) {
                let v = match (&spec.arg, spec.func) {
                    (_, AggregateFunc::CountStar) | (None, _) => Value::Null,
                    (Some(e), _) => ctx.eval(e, &row)?,
                };
                if spec.distinct || spec.func.keeps_values() {
                    // The value, and the room it takes in the accumulator's list (which
                    // doubles as it grows).
                    ctx.hold_bytes(v.approx_bytes() + 2 * std::mem::size_of::<Value>())?;
                }
                acc.update(v)?;
            }
        }
        if groups.is_empty() && self.group_by.is_empty() {
            groups.push((Vec::new(), self.fresh()));
        }
        let rows: Vec<Row> = groups
            .into_iter()
            .map(|(mut vals, accs)| {
                vals.extend(accs.into_iter().map(Accumulator::finish));
                vals
            })
            .collect();
        self.out = rows.into_iter();
        Ok(())
    }

    fn next(&mut self, _: &Ctx<'a>) -> ExecResult<Option<Row>> {
        Ok(self.out.next())
    }
}

/// Drops rows equivalent to an earlier one.
pub(crate) struct Distinct<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) seen: HashSet<Vec<GroupKey>>,
}

impl<'a> Operator<'a> for Distinct<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.seen.clear();
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        while let Some(row) = self.input.next(ctx)? {
            let key: Vec<GroupKey> = row.iter().cloned().map(GroupKey).collect();
            if self.seen.insert(key) {
                ctx.hold_row(&row)?;
                return Ok(Some(row));
            }
        }
        Ok(None)
    }
}

fn compare_keys(a: &[Value], b: &[Value], keys: &[SortKey]) -> Ordering {
    for ((x, y), k) in a.iter().zip(b).zip(keys) {
        let o = x.order(y);
        let o = if k.descending { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// About how many bytes a row (or a sort key) holds: its values and its own allocation.
fn row_bytes(row: &[Value]) -> usize {
    16 + std::mem::size_of::<Row>() + row.iter().map(Value::approx_bytes).sum::<usize>()
}

fn sort_key(ctx: &Ctx<'_>, keys: &[SortKey], row: &[Value]) -> ExecResult<Vec<Value>> {
    keys.iter().map(|k| ctx.eval(&k.expr, row)).collect()
}

/// Full stable sort.
pub(crate) struct Sort<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) keys: Vec<SortKey>,
    pub(crate) out: std::vec::IntoIter<Row>,
}

impl<'a> Operator<'a> for Sort<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.input.open(ctx, arg)?;
        let mut rows = Vec::new();
        while let Some(row) = self.input.next(ctx)? {
            let key = sort_key(ctx, &self.keys, &row)?;
            ctx.hold_row(&row)?;
            ctx.hold_bytes(row_bytes(&key))?;
            rows.push((key, row));
        }
        rows.sort_by(|a, b| compare_keys(&a.0, &b.0, &self.keys));
        self.out = rows
            .into_iter()
            .map(|(_, r)| r)
            .collect::<Vec<_>>()
            .into_iter();
        Ok(())
    }

    fn next(&mut self, _: &Ctx<'a>) -> ExecResult<Option<Row>> {
        Ok(self.out.next())
    }
}

struct HeapEntry<'k> {
    key: Vec<Value>,
    seq: u64,
    row: Row,
    keys: &'k [SortKey],
}

impl PartialEq for HeapEntry<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for HeapEntry<'_> {}
impl PartialOrd for HeapEntry<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for HeapEntry<'_> {
    /// Sequence numbers break ties so the result equals a stable sort's prefix.
    fn cmp(&self, other: &Self) -> Ordering {
        compare_keys(&self.key, &other.key, self.keys).then(self.seq.cmp(&other.seq))
    }
}

/// The first `limit` rows of the sort order, keeping at most `limit` rows in a heap.
pub(crate) struct TopK<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) keys: Vec<SortKey>,
    pub(crate) limit: Expr,
    pub(crate) out: std::vec::IntoIter<Row>,
}

impl<'a> Operator<'a> for TopK<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        let k = ctx.count(&self.limit)?;
        self.input.open(ctx, arg)?;
        let mut heap: BinaryHeap<HeapEntry<'_>> = BinaryHeap::new();
        let mut seq = 0u64;
        if k > 0 {
            while let Some(row) = self.input.next(ctx)? {
                let key = sort_key(ctx, &self.keys, &row)?;
                seq += 1;
                let e = HeapEntry {
                    key,
                    seq,
                    row,
                    keys: &self.keys,
                };
                if heap.len() < k {
                    ctx.hold_row(&e.row)?;
                    heap.push(e);
                } else if heap.peek().is_some_and(|top| e < *top) {
                    heap.pop();
                    heap.push(e);
                }
            }
        }
        let rows: Vec<Row> = heap.into_sorted_vec().into_iter().map(|e| e.row).collect();
        self.out = rows.into_iter();
        Ok(())
    }

    fn next(&mut self, _: &Ctx<'a>) -> ExecResult<Option<Row>> {
        Ok(self.out.next())
    }
}

/// Drops the first rows.
pub(crate) struct Skip<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) count: Expr,
    pub(crate) left: usize,
}

impl<'a> Operator<'a> for Skip<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.left = ctx.count(&self.count)?;
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        while self.left > 0 {
            if self.input.next(ctx)?.is_none() {
                return Ok(None);
            }
            self.left -= 1;
        }
        self.input.next(ctx)
    }
}

/// Keeps the first rows and then stops pulling its input.
pub(crate) struct Limit<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) count: Expr,
    pub(crate) left: usize,
    /// An update clause is below: once the limit is reached the input is still pulled to
    /// its end, because openCypher applies every write whatever a later LIMIT keeps.
    pub(crate) drain: bool,
    pub(crate) drained: bool,
}

impl<'a> Operator<'a> for Limit<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.left = ctx.count(&self.count)?;
        self.drained = false;
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        if self.left == 0 {
            if self.drain && !self.drained {
                while self.input.next(ctx)?.is_some() {}
                self.drained = true;
            }
            return Ok(None);
        }
        self.left -= 1;
        self.input.next(ctx)
    }
}

/// The input row an operator extends for its next output, with room for the `extra`
/// values it appends: moved out for the last output of that row (`left` more to come is
/// 0), copied otherwise. A seek that finds one node, or the last element of an UNWIND, so
/// copies nothing: a row holding an UNWIND map or list was copied whole for every output.
/// The room is made here because a row copied at its length and then extended was
/// reallocated at once: 2.5 % of a bulk load's instructions.
pub(crate) fn last_or_clone(row: &mut Row, left: usize, extra: usize) -> Row {
    if left == 0 {
        let mut out = std::mem::take(row);
        out.reserve(extra);
        out
    } else {
        let mut out = Vec::with_capacity(row.len() + extra);
        out.extend_from_slice(row);
        out
    }
}

/// One row per list element.
pub(crate) struct Unwind<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) expr: Expr,
    /// The value of `expr` (a parameter), moved in by its owner: taken for the one input
    /// row instead of copying the parameter's list. Copying a bulk load's rows out of
    /// their parameter was a tenth of its instructions.
    pub(crate) moved: Option<Value>,
    pub(crate) cur: Option<(Row, std::vec::IntoIter<Value>)>,
}

impl<'a> Operator<'a> for Unwind<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.cur = None;
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        loop {
            if let Some((row, items)) = &mut self.cur
                && let Some(v) = items.next()
            {
                ctx.tick(1)?;
                let mut out = last_or_clone(row, items.len(), 1);
                out.push(v);
                return Ok(Some(out));
            }
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            let value = match self.moved.take() {
                Some(value) => value,
                None => ctx.eval(&self.expr, &row)?,
            };
            let items = match value {
                Value::List(l) => l,
                Value::Null => Vec::new(),
                v => vec![v],
            };
            self.cur = Some((row, items.into_iter()));
        }
    }
}

/// Where each output column of a binary operator comes from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Side {
    Left(usize),
    Right(usize),
}

fn combine(layout: &[Side], left: &[Value], right: Option<&[Value]>) -> Row {
    layout
        .iter()
        .map(|s| match s {
            Side::Left(i) => left.get(*i).cloned().unwrap_or(Value::Null),
            Side::Right(i) => right
                .and_then(|r| r.get(*i))
                .cloned()
                .unwrap_or(Value::Null),
        })
        .collect()
}

/// Left outer apply.
pub(crate) struct Optional<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) inner: BoxOp<'a>,
    pub(crate) layout: Vec<Side>,
    pub(crate) cur: Option<(Row, bool)>,
}

impl<'a> Operator<'a> for Optional<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.cur = None;
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        loop {
            if let Some((row, matched)) = &mut self.cur {
                if let Some(r) = self.inner.next(ctx)? {
                    *matched = true;
                    return Ok(Some(combine(&self.layout, row, Some(&r))));
                }
                let (row, matched) = self.cur.take().unwrap_or_default();
                if !matched {
                    return Ok(Some(combine(&self.layout, &row, None)));
                }
            }
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            self.inner.open(ctx, &row)?;
            self.cur = Some((row, false));
        }
    }
}

/// Every left row with every right row; the right side is computed once per query.
pub(crate) struct Product<'a> {
    pub(crate) left: BoxOp<'a>,
    pub(crate) right: BoxOp<'a>,
    pub(crate) layout: Vec<Side>,
    pub(crate) right_rows: Option<Vec<Row>>,
    pub(crate) cur: Option<(Row, usize)>,
}

impl<'a> Product<'a> {
    /// Runs the right side, once. Called after the left side gave its first row: by then
    /// the left's writes (eager: all of them before its first row) are done, so the right
    /// side sees them, as a statement sees its own writes in clause order.
    fn materialise_right(&mut self, ctx: &Ctx<'a>) -> ExecResult<()> {
        if self.right_rows.is_none() {
            self.right.open(ctx, &[])?;
            let mut rows = Vec::new();
            while let Some(r) = self.right.next(ctx)? {
                ctx.hold_row(&r)?;
                rows.push(r);
            }
            self.right_rows = Some(rows);
        }
        Ok(())
    }
}

impl<'a> Operator<'a> for Product<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.cur = None;
        // A writable graph may have changed since the last open.
        if ctx.topology.artifact().is_none() {
            self.right_rows = None;
        }
        self.left.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        loop {
            let right = self.right_rows.as_deref().unwrap_or(&[]);
            if let Some((row, k)) = &mut self.cur
                && let Some(r) = right.get(*k)
            {
                *k += 1;
                ctx.tick(1)?;
                return Ok(Some(combine(&self.layout, row, Some(r))));
            }
            let Some(row) = self.left.next(ctx)? else {
                return Ok(None);
            };
            self.materialise_right(ctx)?;
            if self.right_rows.as_ref().is_some_and(Vec::is_empty) {
                return Ok(None);
            }
            self.cur = Some((row, 0));
        }
    }
}

/// Equi-join: builds a hash table on the right rows, probes with left rows.
pub(crate) struct HashJoin<'a> {
    pub(crate) left: BoxOp<'a>,
    pub(crate) right: BoxOp<'a>,
    pub(crate) left_keys: Vec<Expr>,
    pub(crate) right_keys: Vec<Expr>,
    pub(crate) layout: Vec<Side>,
    pub(crate) table: Option<HashMap<Vec<GroupKey>, Vec<Row>>>,
    pub(crate) cur: Option<(Row, Vec<GroupKey>, usize)>,
}

fn join_key(ctx: &Ctx<'_>, keys: &[Expr], row: &[Value]) -> ExecResult<Option<Vec<GroupKey>>> {
    let mut out = Vec::with_capacity(keys.len());
    for e in keys {
        let v = ctx.eval(e, row)?;
        // `=` never holds for null, so such rows never join.
        if v.is_null() {
            return Ok(None);
        }
        out.push(GroupKey(v));
    }
    Ok(Some(out))
}

impl<'a> HashJoin<'a> {
    /// Builds the table from the right side, once, after the left side's first row (see
    /// [`Product::materialise_right`]).
    fn build_table(&mut self, ctx: &Ctx<'a>) -> ExecResult<()> {
        if self.table.is_none() {
            self.right.open(ctx, &[])?;
            let mut table: HashMap<Vec<GroupKey>, Vec<Row>> = HashMap::new();
            while let Some(r) = self.right.next(ctx)? {
                if let Some(k) = join_key(ctx, &self.right_keys, &r)? {
                    ctx.hold_row(&r)?;
                    table.entry(k).or_default().push(r);
                }
            }
            self.table = Some(table);
        }
        Ok(())
    }
}

impl<'a> Operator<'a> for HashJoin<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.cur = None;
        // A writable graph may have changed since the last open.
        if ctx.topology.artifact().is_none() {
            self.table = None;
        }
        self.left.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        loop {
            if let Some((row, key, k)) = &mut self.cur
                && let Some(r) = self
                    .table
                    .as_ref()
                    .and_then(|t| t.get(key.as_slice()))
                    .and_then(|rows| rows.get(*k))
            {
                *k += 1;
                ctx.tick(1)?;
                return Ok(Some(combine(&self.layout, row, Some(r))));
            }
            let Some(row) = self.left.next(ctx)? else {
                return Ok(None);
            };
            self.build_table(ctx)?;
            if let Some(key) = join_key(ctx, &self.left_keys, &row)? {
                self.cur = Some((row, key, 0));
            } else {
                self.cur = None;
            }
        }
    }
}

/// Emits precomputed records per input row (procedures).
pub(crate) struct ProcedureCall<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) procedure: String,
    pub(crate) args: Vec<Expr>,
    /// Positions in the procedure's output record of each yielded column.
    pub(crate) yields: Vec<String>,
    pub(crate) cur: Option<(Row, std::vec::IntoIter<Row>)>,
}

impl<'a> Operator<'a> for ProcedureCall<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.cur = None;
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        loop {
            if let Some((row, recs)) = &mut self.cur
                && let Some(rec) = recs.next()
            {
                let mut out = last_or_clone(row, recs.len(), rec.len());
                out.extend(rec);
                return Ok(Some(out));
            }
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            let mut args = Vec::with_capacity(self.args.len());
            for a in &self.args {
                args.push(ctx.eval(a, &row)?);
            }
            let recs = super::procs::call(ctx, &self.procedure, &args, &self.yields)?;
            ctx.hold(recs.len())?;
            self.cur = Some((row, recs.into_iter()));
        }
    }
}
