//! The temporal functions (`date`, `datetime.truncate`, `duration.between`, ...) and
//! temporal arithmetic, over [`crate::temporal`].

use std::collections::BTreeMap;

use jiff::Timestamp;

use super::{E, EvalError};
use crate::ast::{BinaryOp, Span};
use crate::temporal::{self, BetweenUnit, Temporal, TemporalError, TemporalKind};
use crate::value::Value;

/// A temporal failure as an evaluation error located at the call or operator.
pub(super) fn temporal_error(span: Span, error: TemporalError) -> EvalError {
    EvalError::Function {
        message: error.0,
        span,
    }
}

/// Calls the temporal function `name` (canonical), or `None` when it is not one.
/// `statement_time` is the statement's clock, for the current-time forms.
pub(super) fn call(
    name: &str,
    args: &[Value],
    span: Span,
    statement_time: impl Fn() -> Timestamp,
) -> Option<E> {
    let result = match name.split_once('.') {
        None => {
            let kind = TemporalKind::from_function(name)?;
            construct(kind, args, statement_time)
        }
        Some((prefix, suffix)) => {
            let kind = TemporalKind::from_function(prefix)?;
            let instant = match suffix {
                "realtime" => Timestamp::now(),
                "transaction" | "statement" => statement_time(),
                _ => Timestamp::UNIX_EPOCH,
            };
            namespaced(kind, suffix, args, instant)?
        }
    };
    Some(result.map_err(|error| temporal_error(span, error)))
}

fn construct(
    kind: TemporalKind,
    args: &[Value],
    statement_time: impl Fn() -> Timestamp,
) -> Result<Value, TemporalError> {
    match args.first() {
        None => temporal::now(kind, statement_time(), None).map(Value::Temporal),
        Some(Value::Null) => Ok(Value::Null),
        Some(argument) => {
            temporal::construct(kind, argument, statement_time()).map(Value::Temporal)
        }
    }
}

/// `date.truncate`, `datetime.fromepoch`, `duration.between`, `time.transaction`, ...;
/// `None` for a name that is none of them.
fn namespaced(
    kind: TemporalKind,
    suffix: &str,
    args: &[Value],
    instant: Timestamp,
) -> Option<Result<Value, TemporalError>> {
    if args.iter().take(2).any(Value::is_null) && suffix != "truncate" {
        return Some(Ok(Value::Null));
    }
    Some(match (kind, suffix) {
        (TemporalKind::Duration, _) => {
            let unit = match suffix {
                "between" => BetweenUnit::All,
                "inMonths" => BetweenUnit::Months,
                "inDays" => BetweenUnit::Days,
                "inSeconds" => BetweenUnit::Seconds,
                _ => return None,
            };
            between(args, unit)
        }
        (_, "transaction" | "statement" | "realtime") => clock(kind, args, instant),
        (_, "truncate") => truncate(kind, args),
        (TemporalKind::DateTime, "fromepoch") => int_arg(args, 0)
            .and_then(|seconds| Ok((seconds, int_arg(args, 1)?)))
            .and_then(|(seconds, nanos)| temporal::from_epoch_seconds(seconds, nanos))
            .map(Value::Temporal),
        (TemporalKind::DateTime, "fromepochmillis") => int_arg(args, 0)
            .and_then(temporal::from_epoch_millis)
            .map(Value::Temporal),
        _ => return None,
    })
}

fn int_arg(args: &[Value], index: usize) -> Result<i64, TemporalError> {
    match args.get(index) {
        Some(Value::Int(value)) => Ok(*value),
        Some(other) => Err(TemporalError(format!(
            "expected an integer, got {}",
            other.type_name()
        ))),
        None => Err(TemporalError("an argument is missing".into())),
    }
}

fn temporal_arg(args: &[Value], index: usize) -> Result<&Temporal, TemporalError> {
    match args.get(index) {
        Some(Value::Temporal(value)) => Ok(value),
        Some(other) => Err(TemporalError(format!(
            "expected a temporal value, got {}",
            other.type_name()
        ))),
        None => Err(TemporalError("an argument is missing".into())),
    }
}

fn between(args: &[Value], unit: BetweenUnit) -> Result<Value, TemporalError> {
    let (from, to) = (temporal_arg(args, 0)?, temporal_arg(args, 1)?);
    temporal::between(from, to, unit).map(|d| Value::Temporal(Temporal::Duration(d)))
}

/// The clock at `instant`, in the zone named by the argument when there is one.
fn clock(kind: TemporalKind, args: &[Value], instant: Timestamp) -> Result<Value, TemporalError> {
    let zone = match args.first() {
        None => None,
        Some(Value::String(zone)) => Some(zone.as_str()),
        Some(map @ Value::Map(_)) => {
            return temporal::construct(kind, map, instant).map(Value::Temporal);
        }
        Some(other) => {
            return Err(TemporalError(format!(
                "expected a time zone name, got {}",
                other.type_name()
            )));
        }
    };
    temporal::now(kind, instant, zone).map(Value::Temporal)
}

/// `date.truncate(unit, value[, map])`; null when the value is null.
fn truncate(kind: TemporalKind, args: &[Value]) -> Result<Value, TemporalError> {
    let unit = match args.first() {
        Some(Value::String(unit)) => unit,
        Some(Value::Null) => return Ok(Value::Null),
        _ => return Err(TemporalError("truncate() expects a unit name first".into())),
    };
    if matches!(args.get(1), Some(Value::Null)) {
        return Ok(Value::Null);
    }
    let value = temporal_arg(args, 1)?;
    let empty = BTreeMap::new();
    let fields = match args.get(2) {
        None | Some(Value::Null) => &empty,
        Some(Value::Map(fields)) => fields,
        Some(other) => {
            return Err(TemporalError(format!(
                "truncate() expects a map of fields, got {}",
                other.type_name()
            )));
        }
    };
    temporal::truncate(kind, unit, value, fields).map(Value::Temporal)
}

/// `+`, `-`, `*`, `/` with a temporal operand; `None` when neither operand is temporal.
pub(super) fn arithmetic(op: BinaryOp, left: &Value, right: &Value, span: Span) -> Option<E> {
    use Temporal::Duration as D;
    use temporal::{add_duration, multiply, negate_duration, scale};
    let result = match (op, left, right) {
        (BinaryOp::Add, Value::Temporal(value), Value::Temporal(D(duration)))
        | (BinaryOp::Add, Value::Temporal(D(duration)), Value::Temporal(value)) => {
            add_duration(value, *duration)
        }
        (BinaryOp::Sub, Value::Temporal(value), Value::Temporal(D(duration))) => {
            negate_duration(*duration).and_then(|negated| add_duration(value, negated))
        }
        (BinaryOp::Mul, Value::Temporal(D(duration)), Value::Int(factor))
        | (BinaryOp::Mul, Value::Int(factor), Value::Temporal(D(duration))) => {
            multiply(*duration, *factor).map(D)
        }
        (BinaryOp::Mul, Value::Temporal(D(duration)), Value::Float(factor))
        | (BinaryOp::Mul, Value::Float(factor), Value::Temporal(D(duration))) => {
            scale(*duration, *factor).map(D)
        }
        (BinaryOp::Div, Value::Temporal(D(_)), Value::Int(0)) => {
            return Some(Err(EvalError::DivisionByZero { span }));
        }
        (BinaryOp::Div, Value::Temporal(D(duration)), Value::Int(divisor)) => {
            scale(*duration, 1.0 / *divisor as f64).map(D)
        }
        (BinaryOp::Div, Value::Temporal(D(duration)), Value::Float(divisor)) => {
            scale(*duration, 1.0 / divisor).map(D)
        }
        _ => return None,
    };
    Some(
        result
            .map(Value::Temporal)
            .map_err(|error| temporal_error(span, error)),
    )
}
