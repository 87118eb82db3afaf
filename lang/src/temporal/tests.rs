use super::*;
use crate::value::Value;

fn parsed(kind: TemporalKind, text: &str) -> String {
    parse::parse(kind, text)
        .map(|t| t.to_string())
        .unwrap_or_else(|e| format!("error: {e}"))
}

#[test]
fn placeholder_parses_a_date() {
    assert_eq!(parsed(TemporalKind::Date, "2015-07-21"), "2015-07-21");
    let _ = Value::Null;
}
