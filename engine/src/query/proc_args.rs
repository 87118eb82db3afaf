//! Reading a procedure's arguments, shared by every procedure module so that each
//! argument error reads the same: `algo.x(): argument `limit` must be …, got … (type)`.

use batho_lang::Value;
use batho_storage::RoaringBitmap;

use super::exec::{ExecError, ExecResult};

/// One output record of a procedure: (column, value) pairs.
pub(crate) type Rec = Vec<(&'static str, Value)>;

/// The error for argument `arg` of `proc` holding `got` where `expects` was wanted.
pub(crate) fn bad(proc: &str, arg: &str, expects: &str, got: &Value) -> ExecError {
    ExecError::Unsupported(format!(
        "{proc}(): argument `{arg}` must be {expects}, got {got} ({})",
        got.type_name()
    ))
}

/// A required string argument.
pub(crate) fn string_arg(proc: &str, args: &[Value], i: usize, name: &str) -> ExecResult<String> {
    match args.get(i) {
        Some(Value::String(text)) => Ok(text.clone()),
        None | Some(Value::Null) => Err(ExecError::Unsupported(format!(
            "{proc}(): argument `{name}` is required (a string)"
        ))),
        Some(v) => Err(bad(proc, name, "a string", v)),
    }
}

/// An optional non-negative integer argument (`default` when absent or null).
pub(crate) fn int_arg(
    proc: &str,
    args: &[Value],
    i: usize,
    name: &str,
    default: i64,
) -> ExecResult<i64> {
    match args.get(i) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Int(n)) if *n >= 0 => Ok(*n),
        Some(v) => Err(bad(proc, name, "a non-negative integer", v)),
    }
}

/// An optional boolean argument (false when absent or null).
pub(crate) fn bool_arg(proc: &str, args: &[Value], i: usize, name: &str) -> ExecResult<bool> {
    match args.get(i) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(bad(proc, name, "a boolean", v)),
    }
}

/// An optional string argument that must be one of `choices` (compared without case;
/// the first when absent or null).
pub(crate) fn choice_arg(
    proc: &str,
    args: &[Value],
    i: usize,
    name: &str,
    choices: [&'static str; 2],
) -> ExecResult<&'static str> {
    match args.get(i) {
        None | Some(Value::Null) => Ok(choices[0]),
        Some(Value::String(s)) => choices
            .into_iter()
            .find(|c| c.eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                ExecError::Unsupported(format!(
                    "{proc}(): argument `{name}` must be '{}' or '{}', got '{s}'",
                    choices[0], choices[1]
                ))
            }),
        Some(v) => Err(bad(
            proc,
            name,
            &format!("'{}' or '{}'", choices[0], choices[1]),
            v,
        )),
    }
}

/// An optional list of nodes, as a set (`null` and absent: empty; `null` items skipped).
pub(crate) fn node_set_arg(
    proc: &str,
    args: &[Value],
    i: usize,
    name: &str,
) -> ExecResult<RoaringBitmap> {
    let mut nodes = RoaringBitmap::new();
    match args.get(i) {
        None | Some(Value::Null) => {}
        Some(Value::List(items)) => {
            for item in items {
                match item {
                    Value::Node(node) => {
                        nodes.insert(*node);
                    }
                    Value::Null => {}
                    other => return Err(bad(proc, name, "a list of nodes", other)),
                }
            }
        }
        Some(other) => return Err(bad(proc, name, "a list of nodes", other)),
    }
    Ok(nodes)
}
