//! The expression evaluator: operators with openCypher semantics (three-valued logic,
//! int/float arithmetic with overflow checks, string predicates, linear-time regular
//! expressions), built-in functions and aggregate accumulators.
//!
//! The evaluator knows nothing of storage: the engine implements [`PropertyAccess`] for
//! its graph and [`Bindings`] for its rows. Aggregate calls are never evaluated here; the
//! planner replaces them by references to the columns an `Aggregate` operator produced.

mod aggregate;
mod functions;
mod temporal;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use aggregate::{Accumulator, AggregateFunc};

use crate::ast::*;
use crate::diag::Diagnostic;
use crate::value::Value;

/// Read access to graph elements, implemented by the engine.
pub trait PropertyAccess {
    /// A node property, `Null` when absent.
    fn node_prop(&self, node: u32, key: &str) -> Value;
    /// A relationship property, `Null` when absent.
    fn rel_prop(&self, rel: u32, key: &str) -> Value;
    /// The labels of a node (its kind on code graphs).
    fn node_labels(&self, node: u32) -> Vec<String>;
    /// The type of a relationship.
    fn rel_type(&self, rel: u32) -> String;
    /// `(start, end)` nodes of a relationship.
    fn rel_endpoints(&self, rel: u32) -> (u32, u32);
    /// Every property of a node.
    fn node_properties(&self, node: u32) -> BTreeMap<String, Value>;
    /// Every property of a relationship.
    fn rel_properties(&self, rel: u32) -> BTreeMap<String, Value>;
    /// The symbol-role bit mask of a relationship (see `batho_schema::Roles`). The default
    /// reads the integer `roles` property.
    fn rel_roles(&self, rel: u32) -> u16 {
        match self.rel_prop(rel, "roles") {
            Value::Int(i) => u16::try_from(i).unwrap_or(0),
            _ => 0,
        }
    }
}

/// Property access for values that hold no graph element: constant expressions (a
/// procedure's literal options), results made of plain values.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoGraph;

impl PropertyAccess for NoGraph {
    fn node_prop(&self, _: u32, _: &str) -> Value {
        Value::Null
    }
    fn rel_prop(&self, _: u32, _: &str) -> Value {
        Value::Null
    }
    fn node_labels(&self, _: u32) -> Vec<String> {
        Vec::new()
    }
    fn rel_type(&self, _: u32) -> String {
        String::new()
    }
    fn rel_endpoints(&self, _: u32) -> (u32, u32) {
        (0, 0)
    }
    fn node_properties(&self, _: u32) -> BTreeMap<String, Value> {
        BTreeMap::new()
    }
    fn rel_properties(&self, _: u32) -> BTreeMap<String, Value> {
        BTreeMap::new()
    }
}

/// Variable lookup in the current row, implemented by the engine's row type.
///
/// Unbound expressions ([`ExprKind::Variable`]) read by name; expressions bound by
/// [`crate::bind`] ([`ExprKind::Slot`]) read by place, so a row type that only ever sees
/// bound ones answers [`Bindings::column`] and nothing else.
pub trait Bindings {
    /// The value bound to `name`, if any.
    fn get(&self, name: &str) -> Option<&Value>;

    /// The value of the row's column `index`, if the row is addressed by place.
    fn column(&self, _index: usize) -> Option<&Value> {
        None
    }

    /// The value of the iteration variable at nesting `depth` (0 the outermost).
    fn local(&self, _depth: usize) -> Option<&Value> {
        None
    }

    /// How many iteration variables enclose this row (0 outside any comprehension).
    fn local_depth(&self) -> usize {
        0
    }
}

impl Bindings for BTreeMap<String, Value> {
    fn get(&self, name: &str) -> Option<&Value> {
        BTreeMap::get(self, name)
    }
}

impl Bindings for HashMap<String, Value> {
    fn get(&self, name: &str) -> Option<&Value> {
        HashMap::get(self, name)
    }
}

impl Bindings for [(String, Value)] {
    fn get(&self, name: &str) -> Option<&Value> {
        self.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

impl Bindings for Vec<(String, Value)> {
    fn get(&self, name: &str) -> Option<&Value> {
        Bindings::get(self.as_slice(), name)
    }
}

/// The row seen inside a comprehension or quantifier: the iteration variable bound to
/// the current element, shadowing any outer variable of the same name.
struct ScopedBindings<'r> {
    outer: &'r dyn Bindings,
    name: &'r str,
    /// This variable's [`Slot::Local`] depth: the number of iteration variables outside it.
    depth: usize,
    value: Value,
}

impl<'r> ScopedBindings<'r> {
    fn new(outer: &'r dyn Bindings, name: &'r str, value: Value) -> Self {
        ScopedBindings {
            outer,
            name,
            depth: outer.local_depth(),
            value,
        }
    }
}

impl Bindings for ScopedBindings<'_> {
    fn get(&self, name: &str) -> Option<&Value> {
        if name == self.name {
            Some(&self.value)
        } else {
            self.outer.get(name)
        }
    }

    fn column(&self, index: usize) -> Option<&Value> {
        self.outer.column(index)
    }

    fn local(&self, depth: usize) -> Option<&Value> {
        if depth == self.depth {
            Some(&self.value)
        } else {
            self.outer.local(depth)
        }
    }

    fn local_depth(&self) -> usize {
        self.depth + 1
    }
}

/// The value at a bound variable's place.
fn at_slot(row: &dyn Bindings, slot: Slot) -> Option<&Value> {
    match slot {
        Slot::Column(index) => row.column(index),
        Slot::Local(depth) => row.local(depth),
    }
}

/// A failure while evaluating an expression.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// An operator or function got a value of the wrong type.
    #[error("type error: {message}")]
    Type {
        /// What was wrong.
        message: String,
        /// The expression.
        span: Span,
    },
    /// A variable not bound in the row (a planner bug or an engine row mismatch).
    #[error("variable `{name}` is not bound")]
    UnboundVariable {
        /// Its name.
        name: String,
        /// Where it is used.
        span: Span,
    },
    /// A `$parameter` without a value.
    #[error("parameter `${name}` was not given")]
    MissingParameter {
        /// Its name.
        name: String,
        /// Where it is used.
        span: Span,
    },
    /// Integer division or modulo by zero.
    #[error("division by zero")]
    DivisionByZero {
        /// The operation.
        span: Span,
    },
    /// Integer overflow.
    #[error("integer overflow")]
    Overflow {
        /// The operation.
        span: Span,
    },
    /// An invalid or too large regular expression.
    #[error("invalid regular expression: {message}")]
    Regex {
        /// The regex crate's message.
        message: String,
        /// The `=~` expression.
        span: Span,
    },
    /// An unknown function, or an aggregate evaluated row by row.
    #[error("{message}")]
    Function {
        /// What was wrong.
        message: String,
        /// The call.
        span: Span,
    },
    /// A write that would break the graph's rules (deleting a node that still has
    /// relationships, merging on a null property).
    #[error("{message}")]
    Constraint {
        /// What would break.
        message: String,
        /// The clause or expression.
        span: Span,
    },
    /// A result larger than the evaluator allows (`range`, string repetition).
    #[error("{message}")]
    TooLarge {
        /// What was too large.
        message: String,
        /// The expression.
        span: Span,
    },
    /// A loop inside the expression ran past the query's bounds ([`EvalBounds`]).
    #[error("{stop}")]
    Stopped {
        /// Which bound.
        stop: Stop,
        /// The looping expression.
        span: Span,
    },
}

impl EvalError {
    /// Where in the query the error happened.
    pub fn span(&self) -> Span {
        match self {
            EvalError::Type { span, .. }
            | EvalError::UnboundVariable { span, .. }
            | EvalError::MissingParameter { span, .. }
            | EvalError::DivisionByZero { span }
            | EvalError::Overflow { span }
            | EvalError::Regex { span, .. }
            | EvalError::Function { span, .. }
            | EvalError::Constraint { span, .. }
            | EvalError::TooLarge { span, .. }
            | EvalError::Stopped { span, .. } => *span,
        }
    }

    /// The error located in the query text.
    pub fn diagnostic(&self, source: &str) -> Diagnostic {
        let hint = match self {
            EvalError::MissingParameter { name, .. } => Some(format!("pass a value for `{name}`")),
            _ => None,
        };
        Diagnostic::new(source, self.span(), self.to_string(), hint)
    }
}

/// Largest compiled regex program, in bytes. `regex` runs in linear time; this bounds memory.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Longest accepted regex pattern, in bytes.
pub const REGEX_PATTERN_LIMIT: usize = 4096;
/// Most elements `range()` may produce.
pub const MAX_RANGE_LEN: i64 = 10_000_000;
/// Most elements any list the evaluator builds may hold (concatenation, `collect`).
pub const MAX_LIST_LEN: usize = MAX_RANGE_LEN as usize;
/// Most bytes any string the evaluator builds may hold (`+`, `replace()`): ten nested
/// `replace` calls once asked for 10 GB and the process was killed for lack of memory
/// before the time budget could stop it.
pub const MAX_STRING_BYTES: usize = 64 << 20;

/// The error for a value that would grow past its bound.
pub(crate) fn too_large(what: &str, size: usize, limit: usize, span: Span) -> EvalError {
    EvalError::TooLarge {
        message: format!("{what} would hold {size}; the limit is {limit}"),
        span,
    }
}

/// The bounds of a query that loops inside one expression (comprehensions, quantifiers)
/// must keep as the operators around them do: a nested comprehension of ten billion
/// steps once ran on for minutes past a 10 s timeout.
#[derive(Clone, Debug, Default)]
pub struct EvalBounds {
    /// Stop when this instant passes.
    pub deadline: Option<Instant>,
    /// The time budget the deadline came from (for the error).
    pub timeout: Duration,
    /// Stop when another thread raises this flag.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Most loop steps in all expressions of the query; 0 for no bound.
    pub max_steps: u64,
}

/// Which bound stopped a loop inside an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// More steps than [`EvalBounds::max_steps`].
    Work(u64),
    /// The deadline passed; the time budget.
    Timeout(Duration),
    /// The cancel flag was raised.
    Cancelled,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Work(limit) => write!(f, "expression loops exceeded {limit} steps"),
            Stop::Timeout(limit) => write!(f, "query timed out after {limit:?}"),
            Stop::Cancelled => f.write_str("query cancelled"),
        }
    }
}

/// How often (in loop steps) the clock and the cancel flag are read.
const CHECK_EVERY_STEPS: u64 = 1024;

/// Evaluates expressions against a graph, parameters and rows.
///
/// Not `Sync` (it caches compiled regular expressions): use one per thread.
pub struct Evaluator<'a> {
    graph: &'a dyn PropertyAccess,
    params: &'a BTreeMap<String, Value>,
    regexes: RefCell<HashMap<String, regex::Regex>>,
    bounds: EvalBounds,
    steps: Cell<u64>,
    /// The statement's clock: read at the first `date()`, `datetime.statement()`, ... so
    /// that every such call of the statement sees the same instant, as openCypher asks.
    clock: Cell<Option<jiff::Timestamp>>,
}

type E = Result<Value, EvalError>;

fn type_err(span: Span, message: String) -> EvalError {
    EvalError::Type { message, span }
}

impl<'a> Evaluator<'a> {
    /// An evaluator over `graph` with query parameters `params`.
    pub fn new(graph: &'a dyn PropertyAccess, params: &'a BTreeMap<String, Value>) -> Self {
        Evaluator {
            graph,
            params,
            regexes: RefCell::new(HashMap::new()),
            bounds: EvalBounds::default(),
            steps: Cell::new(0),
            clock: Cell::new(None),
        }
    }

    /// The statement's clock (see the `clock` field).
    fn statement_time(&self) -> jiff::Timestamp {
        match self.clock.get() {
            Some(instant) => instant,
            None => {
                let instant = jiff::Timestamp::now();
                self.clock.set(Some(instant));
                instant
            }
        }
    }

    /// The same evaluator, its loops kept within `bounds`.
    pub fn with_bounds(mut self, bounds: EvalBounds) -> Self {
        self.bounds = bounds;
        self
    }

    /// One more step of a loop inside an expression: stops at the query's bounds.
    fn step(&self, span: Span) -> Result<(), EvalError> {
        let steps = self.steps.get() + 1;
        self.steps.set(steps);
        let bounds = &self.bounds;
        if bounds.max_steps > 0 && steps > bounds.max_steps {
            return Err(EvalError::Stopped {
                stop: Stop::Work(bounds.max_steps),
                span,
            });
        }
        if steps.is_multiple_of(CHECK_EVERY_STEPS) {
            if bounds
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::Relaxed))
            {
                let stop = Stop::Cancelled;
                return Err(EvalError::Stopped { stop, span });
            }
            if bounds.deadline.is_some_and(|d| Instant::now() >= d) {
                let stop = Stop::Timeout(bounds.timeout);
                return Err(EvalError::Stopped { stop, span });
            }
        }
        Ok(())
    }

    /// The graph being read.
    pub fn graph(&self) -> &'a dyn PropertyAccess {
        self.graph
    }

    /// Evaluates a predicate: only `true` passes; `false` and `null` do not.
    pub fn eval_predicate(&self, e: &Expr, row: &dyn Bindings) -> Result<bool, EvalError> {
        Ok(self.eval(e, row)?.is_true())
    }

    /// Evaluates an expression in a row.
    pub fn eval(&self, e: &Expr, row: &dyn Bindings) -> E {
        let sp = e.span;
        match &e.kind {
            ExprKind::Literal(l) => Ok(match l {
                Literal::Null => Value::Null,
                Literal::Bool(b) => Value::Bool(*b),
                Literal::Int(i) => Value::Int(*i),
                Literal::Float(f) => Value::Float(*f),
                Literal::String(s) => Value::String(s.clone()),
            }),
            ExprKind::Parameter(p) => {
                self.params
                    .get(p)
                    .cloned()
                    .ok_or_else(|| EvalError::MissingParameter {
                        name: p.clone(),
                        span: sp,
                    })
            }
            ExprKind::Variable(v) => {
                row.get(v)
                    .cloned()
                    .ok_or_else(|| EvalError::UnboundVariable {
                        name: v.clone(),
                        span: sp,
                    })
            }
            ExprKind::Slot(slot) => {
                at_slot(row, slot.slot)
                    .cloned()
                    .ok_or_else(|| EvalError::UnboundVariable {
                        name: slot.name.clone(),
                        span: sp,
                    })
            }
            ExprKind::Property(base, key) => match self.borrowed(base, row) {
                // `r.a` of a map variable reads the one entry instead of copying the map.
                Some(b) => self.property(b, &key.name, sp),
                None => {
                    let b = self.eval(base, row)?;
                    self.property(&b, &key.name, sp)
                }
            },
            ExprKind::Index(base, ix) => {
                let b = self.eval(base, row)?;
                let i = self.eval(ix, row)?;
                self.index(b, i, sp)
            }
            ExprKind::Slice(base, from, to) => {
                let b = self.eval(base, row)?;
                let f = from.as_ref().map(|x| self.eval(x, row)).transpose()?;
                let t = to.as_ref().map(|x| self.eval(x, row)).transpose()?;
                slice(b, f, t, sp)
            }
            ExprKind::HasLabels(base, labels, mode) => match self.eval(base, row)? {
                Value::Null => Ok(Value::Null),
                Value::Node(n) => {
                    let have = self.graph.node_labels(n);
                    let has = |l: &Ident| have.iter().any(|h| h.eq_ignore_ascii_case(&l.name));
                    Ok(Value::Bool(match mode {
                        LabelMode::All => labels.iter().all(has),
                        LabelMode::Any => labels.iter().any(has),
                    }))
                }
                v => Err(type_err(sp, format!("label test on {}", v.type_name()))),
            },
            ExprKind::List(items) => Ok(Value::List(
                items
                    .iter()
                    .map(|x| self.eval(x, row))
                    .collect::<Result<_, _>>()?,
            )),
            ExprKind::Map(entries) => {
                let mut m = BTreeMap::new();
                for (k, x) in entries {
                    m.insert(k.name.clone(), self.eval(x, row)?);
                }
                Ok(Value::Map(m))
            }
            ExprKind::Unary(op, x) => {
                let v = self.eval(x, row)?;
                unary(*op, v, sp)
            }
            ExprKind::Binary(op, a, b) => self.binary(*op, a, b, row, sp),
            ExprKind::IsNull { expr, negated } => {
                Ok(Value::Bool(self.eval(expr, row)?.is_null() != *negated))
            }
            ExprKind::Call {
                name,
                distinct: _,
                args,
            } => {
                let Some(f) = crate::functions::lookup(&name.name) else {
                    return Err(EvalError::Function {
                        message: format!("unknown function `{}`", name.name),
                        span: sp,
                    });
                };
                if f.kind == crate::functions::FunctionKind::Aggregate {
                    return Err(EvalError::Function {
                        message: format!("aggregate {}() cannot be evaluated row by row", f.name),
                        span: sp,
                    });
                }
                let vals = args
                    .iter()
                    .map(|a| self.eval(a, row))
                    .collect::<Result<Vec<_>, _>>()?;
                self.call(f.name, vals, sp)
            }
            ExprKind::CountStar => Err(EvalError::Function {
                message: "count(*) cannot be evaluated row by row".into(),
                span: sp,
            }),
            ExprKind::ListComprehension {
                variable,
                list,
                predicate,
                projection,
            } => {
                let mut out = Vec::new();
                let Some(items) = self.iterated_list(list, row)? else {
                    return Ok(Value::Null);
                };
                for item in items {
                    self.step(sp)?;
                    let scoped = ScopedBindings::new(row, &variable.name, item);
                    if let Some(predicate) = predicate
                        && !self.eval(predicate, &scoped)?.is_true()
                    {
                        continue;
                    }
                    out.push(match projection {
                        Some(projection) => self.eval(projection, &scoped)?,
                        None => scoped.value,
                    });
                }
                Ok(Value::List(out))
            }
            ExprKind::Quantifier {
                quantifier,
                variable,
                list,
                predicate,
            } => self.quantifier(*quantifier, &variable.name, list, predicate, row),
            ExprKind::Case {
                operand,
                branches,
                otherwise,
            } => self.case(operand.as_deref(), branches, otherwise.as_deref(), row),
        }
    }

    /// The list a comprehension or quantifier iterates over; `None` when it is null.
    fn iterated_list(
        &self,
        list: &Expr,
        row: &dyn Bindings,
    ) -> Result<Option<Vec<Value>>, EvalError> {
        match self.eval(list, row)? {
            Value::Null => Ok(None),
            Value::List(items) => Ok(Some(items)),
            v => Err(type_err(
                list.span,
                format!("expected a list to iterate over, got {}", v.type_name()),
            )),
        }
    }

    /// `all`, `any`, `none`, `single` with three-valued logic: a null predicate result
    /// makes the answer null unless the true/false results alone already decide it.
    fn quantifier(
        &self,
        quantifier: Quantifier,
        variable: &str,
        list: &Expr,
        predicate: &Expr,
        row: &dyn Bindings,
    ) -> E {
        let Some(items) = self.iterated_list(list, row)? else {
            return Ok(Value::Null);
        };
        let (mut trues, mut falses, mut nulls) = (0usize, 0usize, 0usize);
        for item in items {
            self.step(list.span)?;
            let scoped = ScopedBindings::new(row, variable, item);
            match truth(self.eval(predicate, &scoped)?, predicate.span)? {
                Some(true) => trues += 1,
                Some(false) => falses += 1,
                None => nulls += 1,
            }
        }
        let decided = match quantifier {
            Quantifier::All if falses > 0 => Some(false),
            Quantifier::Any if trues > 0 => Some(true),
            Quantifier::None if trues > 0 => Some(false),
            Quantifier::Single if trues > 1 => Some(false),
            _ if nulls > 0 => None,
            Quantifier::All | Quantifier::None => Some(true),
            Quantifier::Any => Some(false),
            Quantifier::Single => Some(trues == 1),
        };
        Ok(decided.map_or(Value::Null, Value::Bool))
    }

    /// `CASE`: the simple form compares the operand with each `WHEN` value by equality;
    /// the generic form takes the first `WHEN` predicate that is true.
    fn case(
        &self,
        operand: Option<&Expr>,
        branches: &[(Expr, Expr)],
        otherwise: Option<&Expr>,
        row: &dyn Bindings,
    ) -> E {
        let tested = operand.map(|o| self.eval(o, row)).transpose()?;
        for (when, then) in branches {
            let candidate = self.eval(when, row)?;
            let taken = match &tested {
                Some(value) => value.equals(&candidate) == Some(true),
                None => candidate.is_true(),
            };
            if taken {
                return self.eval(then, row);
            }
        }
        match otherwise {
            Some(otherwise) => self.eval(otherwise, row),
            None => Ok(Value::Null),
        }
    }

    /// The value of `e` without a copy, when it is a variable, a parameter or an entry of
    /// a map reached from one (`r`, `$rows`, `r.a.b`); `None` for anything that must be
    /// computed (or that is unbound: [`Evaluator::eval`] reports it).
    fn borrowed<'v>(&'v self, e: &Expr, row: &'v dyn Bindings) -> Option<&'v Value> {
        match &e.kind {
            ExprKind::Variable(v) => row.get(v),
            ExprKind::Slot(slot) => at_slot(row, slot.slot),
            ExprKind::Parameter(p) => self.params.get(p),
            ExprKind::Property(base, key) => match self.borrowed(base, row)? {
                Value::Map(entries) => entries.get(&key.name),
                _ => None,
            },
            _ => None,
        }
    }

    fn property(&self, b: &Value, key: &str, sp: Span) -> E {
        match b {
            Value::Null => Ok(Value::Null),
            Value::Node(n) => Ok(self.graph.node_prop(*n, key)),
            Value::Rel(r) => Ok(self.graph.rel_prop(*r, key)),
            Value::Map(m) => Ok(m.get(key).cloned().unwrap_or(Value::Null)),
            Value::Temporal(t) => t
                .field(key)
                .map_err(|error| temporal::temporal_error(sp, error)),
            v => Err(type_err(
                sp,
                format!("cannot read property `{key}` of {}", v.type_name()),
            )),
        }
    }

    fn index(&self, b: Value, i: Value, sp: Span) -> E {
        match (b, i) {
            (Value::Null, _) | (_, Value::Null) => Ok(Value::Null),
            (Value::List(items), Value::Int(i)) => {
                let len = items.len() as i64;
                let at = if i < 0 { len + i } else { i };
                Ok(usize::try_from(at)
                    .ok()
                    .and_then(|at| items.into_iter().nth(at))
                    .unwrap_or(Value::Null))
            }
            (b @ (Value::Map(_) | Value::Node(_) | Value::Rel(_)), Value::String(k)) => {
                self.property(&b, &k, sp)
            }
            (b, i) => Err(type_err(
                sp,
                format!("cannot index {} with {}", b.type_name(), i.type_name()),
            )),
        }
    }

    fn binary(&self, op: BinaryOp, a: &Expr, b: &Expr, row: &dyn Bindings, sp: Span) -> E {
        match op {
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => {
                let l = truth(self.eval(a, row)?, sp)?;
                // Short-circuit where the answer is decided, as openCypher permits.
                match (op, l) {
                    (BinaryOp::And, Some(false)) => return Ok(Value::Bool(false)),
                    (BinaryOp::Or, Some(true)) => return Ok(Value::Bool(true)),
                    _ => {}
                }
                let r = truth(self.eval(b, row)?, sp)?;
                Ok(match (op, l, r) {
                    (BinaryOp::And, Some(false), _) | (BinaryOp::And, _, Some(false)) => {
                        Value::Bool(false)
                    }
                    (BinaryOp::And, Some(true), Some(true)) => Value::Bool(true),
                    (BinaryOp::Or, Some(true), _) | (BinaryOp::Or, _, Some(true)) => {
                        Value::Bool(true)
                    }
                    (BinaryOp::Or, Some(false), Some(false)) => Value::Bool(false),
                    (BinaryOp::Xor, Some(x), Some(y)) => Value::Bool(x != y),
                    _ => Value::Null,
                })
            }
            _ => {
                let l = self.eval(a, row)?;
                let r = self.eval(b, row)?;
                self.apply(op, l, r, sp)
            }
        }
    }

    /// Applies a non-boolean binary operator to two values.
    pub fn apply(&self, op: BinaryOp, l: Value, r: Value, sp: Span) -> E {
        use std::cmp::Ordering::*;
        let is_nan = |v: &Value| matches!(v, Value::Float(f) if f.is_nan());
        let both_numbers = as_f64(&l).is_some() && as_f64(&r).is_some();
        let cmp = |want: &[std::cmp::Ordering]| -> Value {
            // NaN is a number but unordered: every ordering comparison with a number is
            // false (not null, which is for values of incomparable types).
            if both_numbers && (is_nan(&l) || is_nan(&r)) {
                return Value::Bool(false);
            }
            match (l.is_null() || r.is_null(), l.compare(&r)) {
                (true, _) | (_, None) => Value::Null,
                (false, Some(o)) => Value::Bool(want.contains(&o)),
            }
        };
        match op {
            BinaryOp::Eq => Ok(l.equals(&r).into()),
            BinaryOp::Ne => Ok(l.equals(&r).map(|b| !b).into()),
            BinaryOp::Lt => Ok(cmp(&[Less])),
            BinaryOp::Le => Ok(cmp(&[Less, Equal])),
            BinaryOp::Gt => Ok(cmp(&[Greater])),
            BinaryOp::Ge => Ok(cmp(&[Greater, Equal])),
            BinaryOp::StartsWith | BinaryOp::EndsWith | BinaryOp::Contains => match (&l, &r) {
                (Value::String(s), Value::String(p)) => Ok(Value::Bool(match op {
                    BinaryOp::StartsWith => s.starts_with(p.as_str()),
                    BinaryOp::EndsWith => s.ends_with(p.as_str()),
                    _ => s.contains(p.as_str()),
                })),
                _ => Ok(Value::Null),
            },
            BinaryOp::Regex => match (&l, &r) {
                (Value::String(s), Value::String(p)) => {
                    Ok(Value::Bool(self.regex_match(s, p, sp)?))
                }
                _ => Ok(Value::Null),
            },
            BinaryOp::In => match r {
                Value::Null => Ok(Value::Null),
                Value::List(items) => {
                    let mut unknown = false;
                    for x in &items {
                        match l.equals(x) {
                            Some(true) => return Ok(Value::Bool(true)),
                            None => unknown = true,
                            Some(false) => {}
                        }
                    }
                    Ok(if unknown {
                        Value::Null
                    } else {
                        Value::Bool(false)
                    })
                }
                r => Err(type_err(
                    sp,
                    format!("IN expects a list on the right, got {}", r.type_name()),
                )),
            },
            BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::Mul
            | BinaryOp::Div
            | BinaryOp::Mod
            | BinaryOp::Pow => arith(op, l, r, sp),
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => {
                let (l, r) = (truth(l, sp)?, truth(r, sp)?);
                Ok(match (op, l, r) {
                    (BinaryOp::And, Some(x), Some(y)) => Value::Bool(x && y),
                    (BinaryOp::And, Some(false), None) | (BinaryOp::And, None, Some(false)) => {
                        Value::Bool(false)
                    }
                    (BinaryOp::Or, Some(x), Some(y)) => Value::Bool(x || y),
                    (BinaryOp::Or, Some(true), None) | (BinaryOp::Or, None, Some(true)) => {
                        Value::Bool(true)
                    }
                    (BinaryOp::Xor, Some(x), Some(y)) => Value::Bool(x != y),
                    _ => Value::Null,
                })
            }
        }
    }

    fn regex_match(&self, s: &str, pattern: &str, sp: Span) -> Result<bool, EvalError> {
        if let Some(re) = self.regexes.borrow().get(pattern) {
            return Ok(re.is_match(s));
        }
        if pattern.len() > REGEX_PATTERN_LIMIT {
            return Err(EvalError::Regex {
                message: format!(
                    "pattern is {} bytes; the limit is {REGEX_PATTERN_LIMIT}",
                    pattern.len()
                ),
                span: sp,
            });
        }
        // `=~` matches the whole string, as in openCypher.
        let re = regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| EvalError::Regex {
                message: e.to_string(),
                span: sp,
            })?;
        let m = re.is_match(s);
        self.regexes.borrow_mut().insert(pattern.to_string(), re);
        Ok(m)
    }
}

/// A boolean operand: `Some(b)`, `None` for null, an error for anything else.
fn truth(v: Value, sp: Span) -> Result<Option<bool>, EvalError> {
    match v {
        Value::Bool(b) => Ok(Some(b)),
        Value::Null => Ok(None),
        v => Err(type_err(
            sp,
            format!("expected a boolean, got {}", v.type_name()),
        )),
    }
}

fn unary(op: UnaryOp, v: Value, sp: Span) -> E {
    match (op, v) {
        (_, Value::Null) => Ok(Value::Null),
        (UnaryOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
        (UnaryOp::Neg, Value::Int(i)) => i
            .checked_neg()
            .map(Value::Int)
            .ok_or(EvalError::Overflow { span: sp }),
        (UnaryOp::Neg, Value::Float(f)) => Ok(Value::Float(-f)),
        (UnaryOp::Plus, v @ (Value::Int(_) | Value::Float(_))) => Ok(v),
        (op, v) => Err(type_err(
            sp,
            format!("cannot apply {op:?} to {}", v.type_name()),
        )),
    }
}

fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

fn arith(op: BinaryOp, l: Value, r: Value, sp: Span) -> E {
    if let Some(result) = temporal::arithmetic(op, &l, &r, sp) {
        return result;
    }
    let overflow = || EvalError::Overflow { span: sp };
    match (op, l, r) {
        (_, Value::Null, _) | (_, _, Value::Null) => Ok(Value::Null),
        (BinaryOp::Pow, l, r) => match (as_f64(&l), as_f64(&r)) {
            (Some(a), Some(b)) => Ok(Value::Float(a.powf(b))),
            _ => Err(type_err(
                sp,
                format!("cannot raise {} to {}", l.type_name(), r.type_name()),
            )),
        },
        (op, Value::Int(a), Value::Int(b)) => match op {
            BinaryOp::Add => a.checked_add(b).map(Value::Int).ok_or_else(overflow),
            BinaryOp::Sub => a.checked_sub(b).map(Value::Int).ok_or_else(overflow),
            BinaryOp::Mul => a.checked_mul(b).map(Value::Int).ok_or_else(overflow),
            BinaryOp::Div if b == 0 => Err(EvalError::DivisionByZero { span: sp }),
            BinaryOp::Div => a.checked_div(b).map(Value::Int).ok_or_else(overflow),
            BinaryOp::Mod if b == 0 => Err(EvalError::DivisionByZero { span: sp }),
            _ => a.checked_rem(b).map(Value::Int).ok_or_else(overflow),
        },
        (op, l @ (Value::Int(_) | Value::Float(_)), r @ (Value::Int(_) | Value::Float(_))) => {
            let (a, b) = (
                as_f64(&l).unwrap_or(f64::NAN),
                as_f64(&r).unwrap_or(f64::NAN),
            );
            Ok(Value::Float(match op {
                BinaryOp::Add => a + b,
                BinaryOp::Sub => a - b,
                BinaryOp::Mul => a * b,
                BinaryOp::Div => a / b,
                _ => a % b,
            }))
        }
        (BinaryOp::Add, Value::List(mut a), Value::List(b)) => {
            list_fits(a.len() + b.len(), sp)?;
            a.extend(b);
            Ok(Value::List(a))
        }
        (BinaryOp::Add, Value::List(mut a), x) => {
            list_fits(a.len() + 1, sp)?;
            a.push(x);
            Ok(Value::List(a))
        }
        (BinaryOp::Add, x, Value::List(mut b)) => {
            list_fits(b.len() + 1, sp)?;
            b.insert(0, x);
            Ok(Value::List(b))
        }
        (BinaryOp::Add, Value::String(a), b) if is_scalar(&b) => {
            let b = scalar_text(&b);
            string_fits(a.len() + b.len(), sp)?;
            Ok(Value::String(a + &b))
        }
        (BinaryOp::Add, a, Value::String(b)) if is_scalar(&a) => {
            let a = scalar_text(&a);
            string_fits(a.len() + b.len(), sp)?;
            Ok(Value::String(a + &b))
        }
        (op, l, r) => Err(type_err(
            sp,
            format!(
                "cannot apply `{}` to {} and {}",
                op.symbol(),
                l.type_name(),
                r.type_name()
            ),
        )),
    }
}

/// Refuses a list of `len` elements over [`MAX_LIST_LEN`].
pub(crate) fn list_fits(len: usize, span: Span) -> Result<(), EvalError> {
    if len > MAX_LIST_LEN {
        return Err(too_large("the list", len, MAX_LIST_LEN, span));
    }
    Ok(())
}

/// Refuses a string of `bytes` over [`MAX_STRING_BYTES`].
pub(crate) fn string_fits(bytes: usize, span: Span) -> Result<(), EvalError> {
    if bytes > MAX_STRING_BYTES {
        return Err(too_large(
            "the string (bytes)",
            bytes,
            MAX_STRING_BYTES,
            span,
        ));
    }
    Ok(())
}

fn is_scalar(v: &Value) -> bool {
    matches!(
        v,
        Value::String(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_)
    )
}

/// The text `toString` and string concatenation use.
pub(crate) fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format!("{f:?}"),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

fn slice(b: Value, from: Option<Value>, to: Option<Value>, sp: Span) -> E {
    let items = match b {
        Value::Null => return Ok(Value::Null),
        Value::List(items) => items,
        v => return Err(type_err(sp, format!("cannot slice {}", v.type_name()))),
    };
    let len = items.len() as i64;
    let bound = |v: Option<Value>, default: i64| -> Result<Option<i64>, EvalError> {
        match v {
            None => Ok(Some(default)),
            Some(Value::Null) => Ok(None),
            Some(Value::Int(i)) => Ok(Some(if i < 0 { (len + i).max(0) } else { i.min(len) })),
            Some(v) => Err(type_err(
                sp,
                format!("slice bounds must be integers, got {}", v.type_name()),
            )),
        }
    };
    let (Some(f), Some(t)) = (bound(from, 0)?, bound(to, len)?) else {
        return Ok(Value::Null);
    };
    if f >= t {
        return Ok(Value::List(Vec::new()));
    }
    Ok(Value::List(
        items
            .into_iter()
            .skip(f as usize)
            .take((t - f) as usize)
            .collect(),
    ))
}
