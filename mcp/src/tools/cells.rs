//! Query results read as typed rows: each row shape of a tool is a struct with named
//! fields, decoded once from the engine's result by [`FromRecord`] (its cells found by
//! column name, so a query's column order can change without a silent misreading), and the
//! cell conversions every decoder shares.

use batho_engine::query::{ArtifactGraph, QueryResult, Value, render};
use serde_json::{Map, Value as Json};

use crate::error::ToolError;

/// A cell as text: strings as they are, numbers and booleans printed, null empty.
pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        Value::Int(number) => number.to_string(),
        Value::Float(number) => number.to_string(),
        Value::Bool(flag) => flag.to_string(),
        // The openCypher string form (`2015-07-21`, `P1DT2H`), as results print them.
        Value::Temporal(temporal) => temporal.to_string(),
        other => format!("{other:?}"),
    }
}

/// A cell as an integer: floats truncated, booleans 0 or 1, anything else 0.
pub(crate) fn int_of(value: &Value) -> i64 {
    match value {
        Value::Int(number) => *number,
        Value::Float(number) => *number as i64,
        Value::Bool(flag) => i64::from(*flag),
        _ => 0,
    }
}

/// A cell as a float: integers widened, anything else 0.
pub(crate) fn float_of(value: &Value) -> f64 {
    match value {
        Value::Int(number) => *number as f64,
        Value::Float(number) => *number,
        _ => 0.0,
    }
}

/// A cell as a list of texts: a list's items, nothing for null, else the one value.
pub(crate) fn texts_of(value: &Value) -> Vec<String> {
    match value {
        Value::List(items) => items.iter().map(text_of).collect(),
        Value::Null => Vec::new(),
        other => vec![text_of(other)],
    }
}

/// A cell as a list of integers: a list's items, nothing for anything else.
pub(crate) fn ints_of(value: &Value) -> Vec<i64> {
    match value {
        Value::List(items) => items.iter().map(int_of).collect(),
        _ => Vec::new(),
    }
}

/// One row of a query result, its cells found by column name.
pub(crate) struct Record<'a> {
    columns: &'a [String],
    cells: &'a [Value],
}

impl<'a> Record<'a> {
    /// The row `cells` of a result with `columns`.
    pub(crate) fn new(columns: &'a [String], cells: &'a [Value]) -> Record<'a> {
        Record { columns, cells }
    }

    /// The cell of `column`; a column the query does not return is a server error (the
    /// query and its decoder disagree).
    pub(crate) fn value(&self, column: &str) -> Result<&'a Value, ToolError> {
        self.columns
            .iter()
            .position(|name| name == column)
            .and_then(|at| self.cells.get(at))
            .ok_or_else(|| {
                ToolError::server(format!("the query result has no column '{column}'"))
                    .hint("this is a bug; please report it with the arguments used")
            })
    }

    /// Every cell as JSON, keyed by its column (graph values expanded through `graph`).
    pub(crate) fn to_json(&self, graph: &ArtifactGraph) -> Map<String, Json> {
        self.columns
            .iter()
            .zip(self.cells)
            .map(|(column, value)| (column.clone(), render::to_json(value, graph)))
            .collect()
    }

    /// Whether the query returns `column`.
    pub(crate) fn has(&self, column: &str) -> bool {
        self.columns.iter().any(|name| name == column)
    }

    /// The cell of `column` as text ([`text_of`]).
    pub(crate) fn text(&self, column: &str) -> Result<String, ToolError> {
        self.value(column).map(text_of)
    }

    /// The cell of `column` as an integer ([`int_of`]).
    pub(crate) fn int(&self, column: &str) -> Result<i64, ToolError> {
        self.value(column).map(int_of)
    }

    /// The cell of `column` as a float ([`float_of`]).
    pub(crate) fn float(&self, column: &str) -> Result<f64, ToolError> {
        self.value(column).map(float_of)
    }

    /// The cell of `column` as a boolean: true only for `true`.
    pub(crate) fn is_true(&self, column: &str) -> Result<bool, ToolError> {
        self.value(column)
            .map(|value| matches!(value, Value::Bool(true)))
    }

    /// The cell of `column` as a list of texts ([`texts_of`]).
    pub(crate) fn texts(&self, column: &str) -> Result<Vec<String>, ToolError> {
        self.value(column).map(texts_of)
    }
}

/// A row shape: how one row of a query decodes into a typed value.
pub(crate) trait FromRecord: Sized {
    /// Decodes one row.
    fn from_record(record: &Record) -> Result<Self, ToolError>;
}

/// Every row of `result`, decoded as `T`.
pub(crate) fn decode_rows<T: FromRecord>(result: &QueryResult) -> Result<Vec<T>, ToolError> {
    result
        .rows
        .iter()
        .map(|cells| T::from_record(&Record::new(&result.columns, cells)))
        .collect()
}

/// The first row of `result` decoded as `T`, if there is one.
pub(crate) fn decode_first<T: FromRecord>(result: &QueryResult) -> Result<Option<T>, ToolError> {
    result
        .rows
        .first()
        .map(|cells| T::from_record(&Record::new(&result.columns, cells)))
        .transpose()
}

/// The integer in `column` of the first row of `result`, 0 without a row (for counts).
pub(crate) fn first_int(result: &QueryResult, column: &str) -> Result<i64, ToolError> {
    match result.rows.first() {
        None => Ok(0),
        Some(cells) => Record::new(&result.columns, cells).int(column),
    }
}

/// The texts in `column` of every row of `result`.
pub(crate) fn column_texts(result: &QueryResult, column: &str) -> Result<Vec<String>, ToolError> {
    result
        .rows
        .iter()
        .map(|cells| Record::new(&result.columns, cells).text(column))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{Record, Value, float_of, int_of, text_of, texts_of};

    #[test]
    fn cells_are_read_by_column_name_and_a_missing_column_is_a_server_error() {
        let columns = ["id".to_string(), "line".to_string(), "roles".to_string()];
        let cells = [
            Value::from("src/a.c:f"),
            Value::Int(12),
            Value::List(vec![Value::from("Definition"), Value::Null]),
        ];
        let record = Record::new(&columns, &cells);
        assert_eq!(record.text("id").as_deref(), Ok("src/a.c:f"));
        assert_eq!(record.int("line"), Ok(12));
        assert_eq!(
            record.texts("roles"),
            Ok(vec!["Definition".to_string(), String::new()])
        );
        assert!(record.has("line") && !record.has("file"));
        let missing = record.text("file").expect_err("no such column");
        assert_eq!(missing.error_type, "SERVER_ERROR");
        assert!(missing.message.contains("'file'"), "{}", missing.message);
    }

    #[test]
    fn cell_conversions_keep_the_meaning_the_tools_print() {
        assert_eq!(text_of(&Value::Null), "");
        assert_eq!(text_of(&Value::Int(3)), "3");
        assert_eq!(text_of(&Value::Bool(true)), "true");
        assert_eq!(int_of(&Value::Float(2.9)), 2);
        assert_eq!(int_of(&Value::Bool(true)), 1);
        assert_eq!(int_of(&Value::from("7")), 0);
        assert_eq!(float_of(&Value::Int(2)), 2.0);
        assert_eq!(texts_of(&Value::Null), Vec::<String>::new());
        assert_eq!(texts_of(&Value::from("x")), vec!["x".to_string()]);
    }
}
