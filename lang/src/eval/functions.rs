//! Scalar built-in functions. Every function returns `null` for a `null` first argument
//! (except `coalesce` and `exists`), and a type error for arguments of the wrong type.

use batho_schema::Roles;

use super::{E, EvalError, Evaluator, MAX_RANGE_LEN, scalar_text, string_fits, type_err};
use crate::ast::Span;
use crate::value::Value;

fn int_arg(v: &Value, f: &str, sp: Span) -> Result<i64, EvalError> {
    match v {
        Value::Int(i) => Ok(*i),
        v => Err(type_err(
            sp,
            format!("{f}() expects an integer, got {}", v.type_name()),
        )),
    }
}

fn str_arg<'v>(v: &'v Value, f: &str, sp: Span) -> Result<&'v str, EvalError> {
    match v {
        Value::String(s) => Ok(s),
        v => Err(type_err(
            sp,
            format!("{f}() expects a string, got {}", v.type_name()),
        )),
    }
}

fn num_fn(v: &Value, f: &str, sp: Span, op: impl Fn(f64) -> f64) -> E {
    match v {
        Value::Int(i) => Ok(Value::Float(op(*i as f64))),
        Value::Float(x) => Ok(Value::Float(op(*x))),
        v => Err(type_err(
            sp,
            format!("{f}() expects a number, got {}", v.type_name()),
        )),
    }
}

impl Evaluator<'_> {
    /// Calls the scalar function with canonical name `name`.
    pub(super) fn call(&self, name: &str, args: Vec<Value>, sp: Span) -> E {
        let g = self.graph;
        match name {
            "coalesce" => {
                return Ok(args
                    .into_iter()
                    .find(|v| !v.is_null())
                    .unwrap_or(Value::Null));
            }
            "exists" => return Ok(Value::Bool(args.first().is_some_and(|v| !v.is_null()))),
            "rand" => return Ok(Value::Float(random_unit_float())),
            _ => {}
        }
        if let Some(result) = super::temporal::call(name, &args, sp, || self.statement_time()) {
            return result;
        }
        let Some(a) = args.first() else {
            return Err(EvalError::Function {
                message: format!("{name}() needs an argument"),
                span: sp,
            });
        };
        if a.is_null() {
            return Ok(Value::Null);
        }
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::Null);
        let wrong = |what: &str| {
            type_err(
                sp,
                format!("{name}() expects {what}, got {}", a.type_name()),
            )
        };
        Ok(match name {
            "id" => match a {
                Value::Node(n) | Value::Rel(n) => Value::Int(i64::from(*n)),
                _ => return Err(wrong("a node or relationship")),
            },
            "type" => match a {
                Value::Rel(r) => Value::String(g.rel_type(*r)),
                _ => return Err(wrong("a relationship")),
            },
            "labels" => match a {
                Value::Node(n) => {
                    Value::List(g.node_labels(*n).into_iter().map(Value::String).collect())
                }
                _ => return Err(wrong("a node")),
            },
            "properties" => match a {
                Value::Node(n) => Value::Map(g.node_properties(*n)),
                Value::Rel(r) => Value::Map(g.rel_properties(*r)),
                Value::Map(_) => a.clone(),
                _ => return Err(wrong("a node, relationship or map")),
            },
            "keys" => match a {
                Value::Node(n) => Value::List(
                    g.node_properties(*n)
                        .into_keys()
                        .map(Value::String)
                        .collect(),
                ),
                Value::Rel(r) => Value::List(
                    g.rel_properties(*r)
                        .into_keys()
                        .map(Value::String)
                        .collect(),
                ),
                Value::Map(m) => Value::List(m.keys().cloned().map(Value::String).collect()),
                _ => return Err(wrong("a node, relationship or map")),
            },
            "length" => match a {
                Value::Path { rels, .. } => Value::Int(rels.len() as i64),
                Value::List(l) => Value::Int(l.len() as i64),
                Value::String(s) => Value::Int(s.chars().count() as i64),
                _ => return Err(wrong("a path")),
            },
            "size" => match a {
                Value::List(l) => Value::Int(l.len() as i64),
                Value::String(s) => Value::Int(s.chars().count() as i64),
                _ => return Err(wrong("a list or string")),
            },
            "nodes" => match a {
                Value::Path { nodes, .. } => {
                    Value::List(nodes.iter().map(|n| Value::Node(*n)).collect())
                }
                _ => return Err(wrong("a path")),
            },
            "relationships" => match a {
                Value::Path { rels, .. } => {
                    Value::List(rels.iter().map(|r| Value::Rel(*r)).collect())
                }
                Value::List(l) => Value::List(l.clone()),
                _ => return Err(wrong("a path")),
            },
            "has_role" => {
                let Value::Rel(r) = a else {
                    return Err(wrong("a relationship"));
                };
                let role = match arg(1) {
                    Value::Null => return Ok(Value::Null),
                    Value::String(s) => s,
                    v => {
                        return Err(type_err(
                            sp,
                            format!("has_role() expects a role name, got {}", v.type_name()),
                        ));
                    }
                };
                let Some(bit) = Roles::from_name(&role) else {
                    return Err(EvalError::Function {
                        message: format!(
                            "unknown symbol role '{role}'; roles: {}",
                            Roles::valid_names()
                        ),
                        span: sp,
                    });
                };
                Value::Bool(Roles(g.rel_roles(*r)).contains(bit))
            }
            "roles" => match a {
                Value::Rel(r) => {
                    Value::List(Roles(g.rel_roles(*r)).names().map(Value::from).collect())
                }
                _ => return Err(wrong("a relationship")),
            },
            "startNode" | "endNode" => match a {
                Value::Rel(r) => {
                    let (s, e) = g.rel_endpoints(*r);
                    Value::Node(if name == "startNode" { s } else { e })
                }
                _ => return Err(wrong("a relationship")),
            },
            "toLower" => Value::String(str_arg(a, name, sp)?.to_lowercase()),
            "toUpper" => Value::String(str_arg(a, name, sp)?.to_uppercase()),
            "trim" => Value::String(str_arg(a, name, sp)?.trim().to_string()),
            "ltrim" => Value::String(str_arg(a, name, sp)?.trim_start().to_string()),
            "rtrim" => Value::String(str_arg(a, name, sp)?.trim_end().to_string()),
            "substring" => {
                let s = str_arg(a, name, sp)?;
                let start = int_arg(&arg(1), name, sp)?;
                let len = match arg(2) {
                    Value::Null if args.len() < 3 => i64::MAX,
                    v => int_arg(&v, name, sp)?,
                };
                if start < 0 || len < 0 {
                    return Err(type_err(
                        sp,
                        "substring() start and length must not be negative".into(),
                    ));
                }
                Value::String(s.chars().skip(start as usize).take(len as usize).collect())
            }
            "left" | "right" => {
                let s = str_arg(a, name, sp)?;
                let n = int_arg(&arg(1), name, sp)?;
                if n < 0 {
                    return Err(type_err(
                        sp,
                        format!("{name}() length must not be negative"),
                    ));
                }
                let count = s.chars().count();
                let n = (n as usize).min(count);
                Value::String(if name == "left" {
                    s.chars().take(n).collect()
                } else {
                    s.chars().skip(count - n).collect()
                })
            }
            "split" => {
                let s = str_arg(a, name, sp)?;
                match arg(1) {
                    Value::Null => Value::Null,
                    Value::String(d) if d.is_empty() => {
                        Value::List(s.chars().map(|c| Value::String(c.to_string())).collect())
                    }
                    Value::String(d) => Value::List(s.split(d.as_str()).map(Value::from).collect()),
                    v => {
                        return Err(type_err(
                            sp,
                            format!("split() expects a string delimiter, got {}", v.type_name()),
                        ));
                    }
                }
            }
            "replace" => {
                let s = str_arg(a, name, sp)?;
                match (arg(1), arg(2)) {
                    (Value::String(f), Value::String(t)) => {
                        if f.is_empty() {
                            Value::String(s.to_string())
                        } else {
                            if t.len() > f.len() {
                                let grows = s.matches(f.as_str()).count() * (t.len() - f.len());
                                string_fits(s.len() + grows, sp)?;
                            }
                            Value::String(s.replace(f.as_str(), &t))
                        }
                    }
                    (Value::Null, _) | (_, Value::Null) => Value::Null,
                    _ => return Err(type_err(sp, "replace() expects strings".into())),
                }
            }
            "reverse" => match a {
                Value::String(s) => Value::String(s.chars().rev().collect()),
                Value::List(l) => Value::List(l.iter().rev().cloned().collect()),
                _ => return Err(wrong("a string or list")),
            },
            "head" | "last" | "tail" => match a {
                Value::List(l) => match name {
                    "head" => l.first().cloned().unwrap_or(Value::Null),
                    "last" => l.last().cloned().unwrap_or(Value::Null),
                    _ => Value::List(l.iter().skip(1).cloned().collect()),
                },
                _ => return Err(wrong("a list")),
            },
            "range" => {
                let start = int_arg(a, name, sp)?;
                let end = int_arg(&arg(1), name, sp)?;
                let step = if args.len() > 2 {
                    int_arg(&arg(2), name, sp)?
                } else {
                    1
                };
                if step == 0 {
                    return Err(type_err(sp, "range() step must not be zero".into()));
                }
                let distance = i128::from(end) - i128::from(start);
                // A step pointing away from the end reaches nothing; division alone would
                // truncate `1 / -2` to 0 and yield the start.
                let n = if distance != 0 && (distance < 0) != (step < 0) {
                    0
                } else {
                    distance / i128::from(step) + 1
                };
                if n > i128::from(MAX_RANGE_LEN) {
                    return Err(EvalError::TooLarge {
                        message: format!(
                            "range() would produce {n} elements; the limit is {MAX_RANGE_LEN}"
                        ),
                        span: sp,
                    });
                }
                let mut out = Vec::with_capacity(n.max(0) as usize);
                let mut x = i128::from(start);
                for _ in 0..n.max(0) {
                    out.push(Value::Int(x as i64));
                    x += i128::from(step);
                }
                Value::List(out)
            }
            "toString" => match a {
                Value::String(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
                    Value::String(scalar_text(a))
                }
                Value::Temporal(t) => Value::String(t.to_string()),
                _ => return Err(wrong("a string, number, boolean or temporal value")),
            },
            "toInteger" => match a {
                Value::Int(i) => Value::Int(*i),
                Value::Float(f) => float_to_int(*f),
                Value::Bool(b) => Value::Int(i64::from(*b)),
                Value::String(s) => {
                    let t = s.trim();
                    t.parse::<i64>()
                        .map(Value::Int)
                        .unwrap_or_else(|_| t.parse::<f64>().map_or(Value::Null, float_to_int))
                }
                _ => return Err(wrong("a number, boolean or string")),
            },
            "toFloat" => match a {
                Value::Int(i) => Value::Float(*i as f64),
                Value::Float(f) => Value::Float(*f),
                Value::String(s) => s.trim().parse::<f64>().map_or(Value::Null, Value::Float),
                _ => return Err(wrong("a number or string")),
            },
            "toBoolean" => match a {
                Value::Bool(b) => Value::Bool(*b),
                Value::String(s) if s.trim().eq_ignore_ascii_case("true") => Value::Bool(true),
                Value::String(s) if s.trim().eq_ignore_ascii_case("false") => Value::Bool(false),
                Value::String(_) => Value::Null,
                Value::Int(i) => Value::Bool(*i != 0),
                _ => return Err(wrong("a boolean, string or integer")),
            },
            "abs" => match a {
                Value::Int(i) => i
                    .checked_abs()
                    .map(Value::Int)
                    .ok_or(EvalError::Overflow { span: sp })?,
                Value::Float(f) => Value::Float(f.abs()),
                _ => return Err(wrong("a number")),
            },
            "sign" => match a {
                Value::Int(i) => Value::Int(i.signum()),
                Value::Float(f) if f.is_nan() => Value::Float(f64::NAN),
                Value::Float(f) => Value::Int(if *f > 0.0 {
                    1
                } else if *f < 0.0 {
                    -1
                } else {
                    0
                }),
                _ => return Err(wrong("a number")),
            },
            "round" => num_fn(a, name, sp, f64::round)?,
            "floor" => num_fn(a, name, sp, f64::floor)?,
            "ceil" => num_fn(a, name, sp, f64::ceil)?,
            "sqrt" => num_fn(a, name, sp, f64::sqrt)?,
            other => {
                return Err(EvalError::Function {
                    message: format!("function {other}() is not implemented"),
                    span: sp,
                });
            }
        })
    }
}

fn float_to_int(f: f64) -> Value {
    let t = f.trunc();
    // i64::MIN as f64 is exact; i64::MAX as f64 rounds up to 2^63, which is out of range.
    if (i64::MIN as f64..i64::MAX as f64).contains(&t) {
        Value::Int(t as i64)
    } else {
        Value::Null
    }
}

/// A random float in [0, 1). Each `RandomState` gets fresh SipHash keys (randomly seeded
/// per thread, then stepped), so hashing nothing yields a new pseudo-random word per call
/// without a random-number crate; `rand()` needs no more than that.
fn random_unit_float() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    // The top 53 bits fill a double's mantissa exactly, so the result is below 1.
    (bits >> 11) as f64 / (1u64 << 53) as f64
}
