//! JSON read as BQL values: what query parameters given as JSON and maintenance reports
//! become.

use batho_lang::Value;

/// `json` as a BQL value: objects become maps, arrays lists, integral numbers that fit
/// `Int`, other numbers `Float`.
pub fn value_from_json(json: serde_json::Value) -> Value {
    use serde_json::Value as Json;
    match json {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => n.as_f64().map_or(Value::Null, Value::Float),
        },
        Json::String(s) => Value::String(s),
        Json::Array(items) => Value::List(items.into_iter().map(value_from_json).collect()),
        Json::Object(fields) => Value::Map(
            fields
                .into_iter()
                .map(|(key, value)| (key, value_from_json(value)))
                .collect(),
        ),
    }
}
