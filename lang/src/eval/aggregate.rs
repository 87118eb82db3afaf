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
    /// `percentileDisc(x, p)`: the smallest value with at least a fraction `p` of the
    /// values at or below it.
    PercentileDisc,
    /// `percentileCont(x, p)`: the value at fraction `p`, interpolated linearly between
    /// neighbours; a float.
    PercentileCont,
}

impl AggregateFunc {
    /// Whether the aggregation keeps every value it is given (`collect`, the
    /// percentiles), so that its memory grows with its input.
    pub fn keeps_values(self) -> bool {
        matches!(
            self,
            AggregateFunc::Collect | AggregateFunc::PercentileDisc | AggregateFunc::PercentileCont
        )
    }

    /// Percentiles take the fraction as a second argument. The planner passes both as one
    /// `[value, fraction]` list per row, so the engine's one-argument plumbing serves them.
    pub fn takes_fraction(self) -> bool {
        matches!(
            self,
            AggregateFunc::PercentileDisc | AggregateFunc::PercentileCont
        )
    }
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
            "percentileDisc" => AggregateFunc::PercentileDisc,
            "percentileCont" => AggregateFunc::PercentileCont,
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
            AggregateFunc::PercentileDisc => "percentileDisc",
            AggregateFunc::PercentileCont => "percentileCont",
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
    Percentile { values: Vec<Value>, fraction: f64 },
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
            AggregateFunc::PercentileDisc | AggregateFunc::PercentileCont => State::Percentile {
                values: Vec::new(),
                fraction: 0.0,
            },
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
        let v = if self.func.takes_fraction() {
            match self.fraction_pair(v)? {
                Some(value) => value,
                None => return Ok(()),
            }
        } else {
            v
        };
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
            State::Collect(items) => {
                super::list_fits(items.len() + 1, sp)?;
                items.push(v);
            }
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
            State::Percentile { values, .. } => match v {
                Value::Int(_) | Value::Float(_) => values.push(v),
                v => return Err(not_number(&v)),
            },
        }
        Ok(())
    }

    /// Splits a percentile's `[value, fraction]` row, checking the fraction is a number in
    /// [0, 1] and remembering it; `None` when the value is null (skipped like any null).
    fn fraction_pair(&mut self, pair: Value) -> Result<Option<Value>, EvalError> {
        let sp = self.span;
        let name = self.func.name();
        let Value::List(mut items) = pair else {
            return Err(EvalError::Function {
                message: format!("{name}() takes a value and a fraction"),
                span: sp,
            });
        };
        let (Some(fraction), Some(value)) = (items.pop(), items.pop()) else {
            return Err(EvalError::Function {
                message: format!("{name}() takes a value and a fraction"),
                span: sp,
            });
        };
        let fraction = match fraction {
            Value::Int(i) => i as f64,
            Value::Float(f) => f,
            other => {
                return Err(EvalError::Type {
                    message: format!(
                        "{name}() expects a number as fraction, got {}",
                        other.type_name()
                    ),
                    span: sp,
                });
            }
        };
        if !(0.0..=1.0).contains(&fraction) {
            return Err(EvalError::Function {
                message: format!("{name}() fraction must be between 0.0 and 1.0, got {fraction}"),
                span: sp,
            });
        }
        if let State::Percentile { fraction: kept, .. } = &mut self.state {
            *kept = fraction;
        }
        Ok((!value.is_null()).then_some(value))
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
            State::Percentile { values, fraction } => percentile(self.func, values, fraction),
        }
    }
}

/// The percentile of numbers (already checked to be numbers) at `fraction` in [0, 1].
fn percentile(func: AggregateFunc, mut values: Vec<Value>, fraction: f64) -> Value {
    if values.is_empty() {
        return Value::Null;
    }
    values.sort_by(|a, b| a.order(b));
    let last = values.len() - 1;
    let number = |v: &Value| match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        _ => f64::NAN,
    };
    if func == AggregateFunc::PercentileDisc {
        // The first value whose rank reaches the fraction of the count.
        let rank = (fraction * values.len() as f64).ceil() as usize;
        return values.swap_remove(rank.saturating_sub(1).min(last));
    }
    let position = fraction * last as f64;
    let (below, above) = (position.floor() as usize, position.ceil() as usize);
    let (low, high) = (
        number(&values[below.min(last)]),
        number(&values[above.min(last)]),
    );
    Value::Float(low + (high - low) * (position - below as f64))
}
