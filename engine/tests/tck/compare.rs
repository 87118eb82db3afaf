//! Matching an engine's rows against a TCK result table with openCypher's notion of
//! sameness.
//!
//! Every value is turned into a canonical key: text that is equal exactly when the TCK
//! considers two values the same. Nodes are keyed by their label set and properties,
//! relationships by type and properties, paths by their sequence; integers and floats
//! never match each other (`1` is not `1.0`); floats match exactly, NaN matches NaN and
//! `-0.0` matches `0.0`; lists keep their order unless list order is ignored, in which case
//! their element keys are sorted. Row bags are then compared as sorted lists of keys, which
//! is exact for a bag (no greedy matching to get wrong).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::backend::QueryRows;
use crate::features::{ExpectedTable, ListOrder, RowOrder};
use crate::values::{Direction, TckNode, TckRelationship, TckValue};

/// Most rows quoted in a mismatch message, per side.
const ROWS_QUOTED: usize = 8;

/// The canonical key of a value (see the module documentation).
pub fn canonical_key(value: &TckValue, list_order: ListOrder) -> String {
    let mut key = String::new();
    write_key(&mut key, value, list_order);
    key
}

/// Appends the canonical key of `value` to `key`.
fn write_key(key: &mut String, value: &TckValue, list_order: ListOrder) {
    match value {
        TckValue::Null => key.push_str("null"),
        TckValue::Boolean(value) => {
            let _ = write!(key, "bool:{value}");
        }
        TckValue::Integer(value) => {
            let _ = write!(key, "int:{value}");
        }
        TckValue::Float(value) => write_float_key(key, *value),
        TckValue::String(text) => {
            let _ = write!(key, "str:{text:?}");
        }
        TckValue::List(elements) => {
            let mut element_keys: Vec<String> = elements
                .iter()
                .map(|element| canonical_key(element, list_order))
                .collect();
            if list_order == ListOrder::Ignored {
                element_keys.sort();
            }
            let _ = write!(key, "list[{}]", element_keys.join(","));
        }
        TckValue::Map(entries) => write_map_key(key, entries, list_order),
        TckValue::Node(node) => write_node_key(key, node, list_order),
        TckValue::Relationship(relationship) => {
            write_relationship_key(key, relationship, list_order)
        }
        TckValue::Path(path) => {
            key.push_str("path<");
            write_node_key(key, &path.start, list_order);
            for step in &path.steps {
                key.push_str(match step.direction {
                    Direction::Forward => "->",
                    Direction::Backward => "<-",
                });
                write_relationship_key(key, &step.relationship, list_order);
                write_node_key(key, &step.node, list_order);
            }
            key.push('>');
        }
    }
}

/// Appends a float's key: exact, with NaN equal to NaN and both zeros equal.
fn write_float_key(key: &mut String, value: f64) {
    if value.is_nan() {
        key.push_str("float:NaN");
    } else if value == 0.0 {
        // `-0.0 = 0.0` in openCypher.
        key.push_str("float:0");
    } else {
        // `{:?}` is the shortest text that reads back as the same float: exact equality.
        let _ = write!(key, "float:{value:?}");
    }
}

/// Appends a map's key: entries in key order.
fn write_map_key(key: &mut String, entries: &BTreeMap<String, TckValue>, list_order: ListOrder) {
    key.push('{');
    for (key_name, value) in entries {
        let _ = write!(key, "{key_name:?}:");
        write_key(key, value, list_order);
        key.push(',');
    }
    key.push('}');
}

/// Appends a node's key: sorted labels and properties.
fn write_node_key(key: &mut String, node: &TckNode, list_order: ListOrder) {
    let _ = write!(key, "node{:?}", node.labels);
    write_map_key(key, &node.properties, list_order);
}

/// Appends a relationship's key: type and properties.
fn write_relationship_key(key: &mut String, relationship: &TckRelationship, list_order: ListOrder) {
    let _ = write!(key, "rel{:?}", relationship.relationship_type);
    write_map_key(key, &relationship.properties, list_order);
}

/// Checks the rows of a result against an expected table; `Err` explains the difference.
pub fn compare_rows(
    expected: &ExpectedTable,
    actual: &QueryRows,
    row_order: RowOrder,
    list_order: ListOrder,
) -> Result<(), String> {
    let reordered = rows_in_expected_column_order(expected, actual)?;
    let row_keys = |rows: &[Vec<TckValue>]| -> Vec<Vec<String>> {
        rows.iter()
            .map(|row| {
                row.iter()
                    .map(|value| canonical_key(value, list_order))
                    .collect()
            })
            .collect()
    };
    let mut expected_keys = row_keys(&expected.rows);
    let mut actual_keys = row_keys(&reordered);
    if row_order == RowOrder::Any {
        expected_keys.sort();
        actual_keys.sort();
    }
    if expected_keys == actual_keys {
        return Ok(());
    }
    Err(describe_mismatch(expected, &reordered, row_order))
}

/// The actual rows with their columns arranged as the expected header; the TCK compares
/// columns by name, so their order in the result does not matter.
fn rows_in_expected_column_order(
    expected: &ExpectedTable,
    actual: &QueryRows,
) -> Result<Vec<Vec<TckValue>>, String> {
    let mut expected_names = expected.columns.clone();
    let mut actual_names = actual.columns.clone();
    expected_names.sort();
    actual_names.sort();
    if expected_names != actual_names {
        return Err(format!(
            "columns differ: expected {:?}, got {:?}",
            expected.columns, actual.columns
        ));
    }
    let positions: Vec<usize> = expected
        .columns
        .iter()
        .map(|name| {
            actual
                .columns
                .iter()
                .position(|column| column == name)
                .unwrap_or(0)
        })
        .collect();
    Ok(actual
        .rows
        .iter()
        .map(|row| {
            positions
                .iter()
                .map(|position| row.get(*position).cloned().unwrap_or(TckValue::Null))
                .collect()
        })
        .collect())
}

/// Both sides of a row mismatch, quoted in TCK notation.
fn describe_mismatch(
    expected: &ExpectedTable,
    actual: &[Vec<TckValue>],
    row_order: RowOrder,
) -> String {
    let order = match row_order {
        RowOrder::Exact => "in order",
        RowOrder::Any => "in any order",
    };
    format!(
        "rows differ ({order}): expected {} row(s) {}; got {} row(s) {}",
        expected.rows.len(),
        quote_rows(&expected.rows),
        actual.len(),
        quote_rows(actual)
    )
}

/// Rows in TCK notation, `| a | b |` each, the first [`ROWS_QUOTED`] of them.
pub fn quote_rows(rows: &[Vec<TckValue>]) -> String {
    let mut quoted: Vec<String> = rows
        .iter()
        .take(ROWS_QUOTED)
        .map(|row| {
            let cells: Vec<String> = row.iter().map(ToString::to_string).collect();
            format!("| {} |", cells.join(" | "))
        })
        .collect();
    if rows.len() > ROWS_QUOTED {
        quoted.push(format!("... {} more", rows.len() - ROWS_QUOTED));
    }
    quoted.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::parse_tck_value;

    fn table(columns: &[&str], rows: &[&[&str]]) -> ExpectedTable {
        ExpectedTable {
            columns: columns.iter().map(ToString::to_string).collect(),
            rows: rows
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|cell| parse_tck_value(cell).expect("value"))
                        .collect()
                })
                .collect(),
        }
    }

    fn result(columns: &[&str], rows: &[&[&str]]) -> QueryRows {
        let table = table(columns, rows);
        QueryRows {
            columns: table.columns,
            rows: table.rows,
            side_effects: Default::default(),
        }
    }

    fn matches(
        expected: &ExpectedTable,
        actual: &QueryRows,
        row_order: RowOrder,
        list_order: ListOrder,
    ) -> bool {
        compare_rows(expected, actual, row_order, list_order).is_ok()
    }

    #[test]
    fn rows_are_a_bag_unless_in_order() {
        // Neither side is in sorted order, so both must be arranged for the bag to match.
        let expected = table(&["a"], &[&["2"], &["1"], &["2"]]);
        let shuffled = result(&["a"], &[&["2"], &["2"], &["1"]]);
        let missing_duplicate = result(&["a"], &[&["2"], &["1"], &["1"]]);
        assert!(matches(
            &expected,
            &shuffled,
            RowOrder::Any,
            ListOrder::Significant
        ));
        assert!(!matches(
            &expected,
            &shuffled,
            RowOrder::Exact,
            ListOrder::Significant
        ));
        assert!(!matches(
            &expected,
            &missing_duplicate,
            RowOrder::Any,
            ListOrder::Significant
        ));
        let same_order = result(&["a"], &[&["2"], &["1"], &["2"]]);
        assert!(matches(
            &expected,
            &same_order,
            RowOrder::Exact,
            ListOrder::Significant
        ));
    }

    #[test]
    fn columns_match_by_name_not_position() {
        let expected = table(&["a", "b"], &[&["1", "'x'"]]);
        let swapped = result(&["b", "a"], &[&["'x'", "1"]]);
        assert!(matches(
            &expected,
            &swapped,
            RowOrder::Exact,
            ListOrder::Significant
        ));
        let renamed = result(&["a", "c"], &[&["1", "'x'"]]);
        let error =
            compare_rows(&expected, &renamed, RowOrder::Any, ListOrder::Significant).unwrap_err();
        assert!(error.contains("columns differ"), "{error}");
    }

    #[test]
    fn integers_and_floats_differ_but_nan_matches_nan() {
        let one = |text: &str| {
            canonical_key(
                &parse_tck_value(text).expect("value"),
                ListOrder::Significant,
            )
        };
        assert_ne!(one("1"), one("1.0"));
        assert_eq!(one("NaN"), one("NaN"));
        assert_eq!(one("-0.0"), one("0.0"));
        assert_ne!(one("0.1"), one("0.10000000000000002"));
        assert_ne!(one("'1'"), one("1"));
        assert_ne!(one("null"), one("'null'"));
    }

    #[test]
    fn list_order_counts_unless_ignored_at_every_depth() {
        let expected = table(&["l"], &[&["[1, [2, 3], 2]"]]);
        let permuted = result(&["l"], &[&["[2, [3, 2], 1]"]]);
        assert!(!matches(
            &expected,
            &permuted,
            RowOrder::Any,
            ListOrder::Significant
        ));
        assert!(matches(
            &expected,
            &permuted,
            RowOrder::Any,
            ListOrder::Ignored
        ));
        let different_bag = result(&["l"], &[&["[2, [3, 2], 2]"]]);
        assert!(!matches(
            &expected,
            &different_bag,
            RowOrder::Any,
            ListOrder::Ignored
        ));
    }

    #[test]
    fn graph_elements_compare_by_what_is_visible() {
        let expected = table(&["n", "r"], &[&["(:A:B {k: 1})", "[:T {w: 'x'}]"]]);
        let same = result(&["n", "r"], &[&["(:B:A {k: 1})", "[:T {w: 'x'}]"]]);
        assert!(matches(
            &expected,
            &same,
            RowOrder::Exact,
            ListOrder::Significant
        ));
        let other_label = result(&["n", "r"], &[&["(:A {k: 1})", "[:T {w: 'x'}]"]]);
        assert!(!matches(
            &expected,
            &other_label,
            RowOrder::Exact,
            ListOrder::Significant
        ));
        let other_type = result(&["n", "r"], &[&["(:A:B {k: 1})", "[:U {w: 'x'}]"]]);
        assert!(!matches(
            &expected,
            &other_type,
            RowOrder::Exact,
            ListOrder::Significant
        ));
        let other_property = result(&["n", "r"], &[&["(:A:B {k: 2})", "[:T {w: 'x'}]"]]);
        assert!(!matches(
            &expected,
            &other_property,
            RowOrder::Exact,
            ListOrder::Significant
        ));
    }

    #[test]
    fn paths_compare_as_sequences_with_directions() {
        let expected = table(&["p"], &[&["<(:A)-[:T]->(:B)>"]]);
        let reversed = result(&["p"], &[&["<(:B)<-[:T]-(:A)>"]]);
        assert!(!matches(
            &expected,
            &reversed,
            RowOrder::Any,
            ListOrder::Ignored
        ));
        let same = result(&["p"], &[&["<(:A)-[:T]->(:B)>"]]);
        assert!(matches(&expected, &same, RowOrder::Any, ListOrder::Ignored));
    }

    #[test]
    fn maps_compare_by_entries() {
        let expected = table(&["m"], &[&["{a: 1, b: [1, 2]}"]]);
        let same = result(&["m"], &[&["{b: [1, 2], a: 1}"]]);
        let extra = result(&["m"], &[&["{a: 1, b: [1, 2], c: null}"]]);
        assert!(matches(
            &expected,
            &same,
            RowOrder::Any,
            ListOrder::Significant
        ));
        assert!(!matches(
            &expected,
            &extra,
            RowOrder::Any,
            ListOrder::Significant
        ));
    }

    #[test]
    fn mismatches_quote_both_sides() {
        let expected = table(&["a"], &[&["'x'"]]);
        let actual = result(&["a"], &[&["'y'"], &["null"]]);
        let message =
            compare_rows(&expected, &actual, RowOrder::Any, ListOrder::Significant).unwrap_err();
        assert_eq!(
            message,
            "rows differ (in any order): expected 1 row(s) | 'x' |; got 2 row(s) | 'y' | | null |"
        );
    }
}
