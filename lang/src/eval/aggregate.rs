//! Aggregate accumulators: one per group and aggregate column, fed one value per row.
//! Nulls are skipped (except by `count(*)`, which counts rows); `DISTINCT` deduplicates
//! by the grouping equivalence of [`GroupKey`].

use std::collections::HashSet;

use super::EvalError;
use crate::ast::Span;
use crate::value::{GroupKey, Value};

/// The aggregate functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggregateFunc {
    /// `count(*)`: rows.
    CountStar,
    /// `count(x)`: non-null values.
    Count,
    /// `collect(x)`: list of non-null values.
    Collect,
    /// `min(x)`.
    Min,
    /// `max(x)`.
    Max,
    /// `sum(x)`: integer while every input is, float otherwise; 0 for no rows.
    Sum,
    /// `avg(x)`: float; null for no rows.
    Avg,
}

impl AggregateFunc {
    /// The aggregate for a function name (case-insensitive); `count(*)` is separate.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match crate::functions::lookup(name)?.name {
            "count" => AggregateFunc::Count,
            "collect" => AggregateFunc::Collect,
            "min" => AggregateFunc::Min,
            "max" => AggregateFunc::Max,
            "sum" => AggregateFunc::Sum,
            "avg" => AggregateFunc::Avg,
            _ => return None,
        })
    }

    /// Canonical name.
    pub fn name(self) -> &'static str {
        match self {
            AggregateFunc::CountStar | AggregateFunc::Count => "count",
            AggregateFunc::Collect => "collect",
            AggregateFunc::Min => "min",
            AggregateFunc::Max => "max",
            AggregateFunc::Sum => "sum",
            AggregateFunc::Avg => "avg",
        }
    }
}

#[derive(Clone, Debug)]
enum State {
    Count(i64),
    Collect(Vec<Value>),
    Extreme(Option<Value>),
    SumInt(i64),
    SumFloat(f64),
    Avg { sum: f64, n: u64 },
}

/// The running state of one aggregate over one group.
#[derive(Clone, Debug)]
pub struct Accumulator {
    func: AggregateFunc,
    distinct: Option<HashSet<GroupKey>>,
    state: State,
    span: Span,
}

impl Accumulator {
    /// A fresh accumulator; `span` locates errors (e.g. `sum` of a string).
    pub fn new(func: AggregateFunc, distinct: bool, span: Span) -> Self {
        let state = match func {
            AggregateFunc::CountStar | AggregateFunc::Count => State::Count(0),
            AggregateFunc::Collect => State::Collect(Vec::new()),
            AggregateFunc::Min | AggregateFunc::Max => State::Extreme(None),
            AggregateFunc::Sum => State::SumInt(0),
            AggregateFunc::Avg => State::Avg { sum: 0.0, n: 0 },
        };
        Accumulator {
            func,
            distinct: distinct.then(HashSet::new),
            state,
            span,
        }
    }

    /// Adds one row's value (ignored for `count(*)`, which counts the call).
    pub fn update(&mut self, v: Value) -> Result<(), EvalError> {
        if self.func == AggregateFunc::CountStar {
            if let State::Count(n) = &mut self.state {
                *n += 1;
            }
            return Ok(());
        }
        if v.is_null() {
            return Ok(());
        }
        if let Some(seen) = &mut self.distinct
            && !seen.insert(GroupKey(v.clone()))
        {
            return Ok(());
        }
        let sp = self.span;
        let not_number = |v: &Value| EvalError::Type {
            message: format!(
                "{}() expects numbers, got {}",
                self.func.name(),
                v.type_name()
            ),
            span: sp,
        };
        match &mut self.state {
            State::Count(n) => *n += 1,
            State::Collect(items) => items.push(v),
            State::Extreme(cur) => {
                let replace = match cur {
                    None => true,
                    Some(c) => {
                        let o = v.order(c);
                        if self.func == AggregateFunc::Min {
                            o.is_lt()
                        } else {
                            o.is_gt()
                        }
                    }
                };
                if replace {
                    *cur = Some(v);
                }
            }
            State::SumInt(acc) => match v {
                Value::Int(i) => {
                    *acc = acc.checked_add(i).ok_or(EvalError::Overflow { span: sp })?
                }
                Value::Float(f) => self.state = State::SumFloat(*acc as f64 + f),
                v => return Err(not_number(&v)),
            },
            State::SumFloat(acc) => match v {
                Value::Int(i) => *acc += i as f64,
                Value::Float(f) => *acc += f,
                v => return Err(not_number(&v)),
            },
            State::Avg { sum, n } => match v {
                Value::Int(i) => {
                    *sum += i as f64;
                    *n += 1;
                }
                Value::Float(f) => {
                    *sum += f;
                    *n += 1;
                }
                v => return Err(not_number(&v)),
            },
        }
        Ok(())
    }

    /// The aggregate's value for the group.
    pub fn finish(self) -> Value {
        match self.state {
            State::Count(n) => Value::Int(n),
            State::Collect(items) => Value::List(items),
            State::Extreme(v) => v.unwrap_or(Value::Null),
            State::SumInt(s) => Value::Int(s),
            State::SumFloat(s) => Value::Float(s),
            State::Avg { n: 0, .. } => Value::Null,
            State::Avg { sum, n } => Value::Float(sum / n as f64),
        }
    }
}
