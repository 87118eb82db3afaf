//! Result rendering shared by the CLI and the MCP server: an aligned table with a row
//! count footer, JSON (an array of objects), JSON Lines and CSV.
//!
//! Graph values are expanded through [`PropertyAccess`]: nodes become objects with their
//! properties plus `_id` and `_labels`; relationships add `_id`, `_type`, `_start` and
//! `_end`; paths become lists alternating nodes and relationships.

use batho_lang::{PropertyAccess, Value};
use serde_json::{Map, Value as Json, json};

use super::QueryResult;

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Aligned text table.
    Table,
    /// One JSON array of row objects.
    Json,
    /// One JSON object per line.
    JsonLines,
    /// RFC 4180 CSV with a header row.
    Csv,
}

/// Renders `res` in `format`.
pub fn render(res: &QueryResult, graph: &dyn PropertyAccess, format: Format) -> String {
    match format {
        Format::Table => table(res, graph),
        Format::Json => json_array(res, graph),
        Format::JsonLines => json_lines(res, graph),
        Format::Csv => csv(res, graph),
    }
}

/// A value as JSON.
pub fn to_json(v: &Value, graph: &dyn PropertyAccess) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => json!(i),
        Value::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::String(s) => Json::String(s.clone()),
        // JSON has no temporal type: the openCypher string form, which reads back exactly.
        Value::Temporal(t) => Json::String(t.to_string()),
        Value::List(l) => Json::Array(l.iter().map(|x| to_json(x, graph)).collect()),
        Value::Map(m) => Json::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), to_json(x, graph)))
                .collect(),
        ),
        Value::Node(n) => node_json(*n, graph),
        Value::Rel(r) => rel_json(*r, graph),
        Value::Path { nodes, rels } => {
            let mut out = Vec::with_capacity(nodes.len() + rels.len());
            for (i, n) in nodes.iter().enumerate() {
                out.push(node_json(*n, graph));
                if let Some(r) = rels.get(i) {
                    out.push(rel_json(*r, graph));
                }
            }
            Json::Array(out)
        }
    }
}

fn node_json(n: u32, graph: &dyn PropertyAccess) -> Json {
    let mut m = Map::new();
    m.insert("_id".into(), json!(n));
    m.insert("_labels".into(), json!(graph.node_labels(n)));
    for (k, v) in graph.node_properties(n) {
        m.insert(k, to_json(&v, graph));
    }
    Json::Object(m)
}

fn rel_json(r: u32, graph: &dyn PropertyAccess) -> Json {
    let (s, e) = graph.rel_endpoints(r);
    let mut m = Map::new();
    m.insert("_id".into(), json!(r));
    m.insert("_type".into(), json!(graph.rel_type(r)));
    m.insert("_start".into(), json!(s));
    m.insert("_end".into(), json!(e));
    for (k, v) in graph.rel_properties(r) {
        m.insert(k, to_json(&v, graph));
    }
    Json::Object(m)
}

/// One result row as a JSON object whose keys keep the `RETURN` order: serde_json's
/// `Map` sorts keys, which would reorder the columns a query asked for.
struct OrderedRow<'a> {
    columns: &'a [String],
    values: Vec<Json>,
}

impl serde::Serialize for OrderedRow<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.columns.len()))?;
        for (column, value) in self.columns.iter().zip(&self.values) {
            map.serialize_entry(column, value)?;
        }
        map.end()
    }
}

fn row_object<'a>(
    res: &'a QueryResult,
    row: &[Value],
    graph: &dyn PropertyAccess,
) -> OrderedRow<'a> {
    OrderedRow {
        columns: &res.columns,
        values: row.iter().map(|v| to_json(v, graph)).collect(),
    }
}

fn json_array(res: &QueryResult, graph: &dyn PropertyAccess) -> String {
    let rows: Vec<OrderedRow> = res.rows.iter().map(|r| row_object(res, r, graph)).collect();
    serde_json::to_string_pretty(&rows).unwrap_or_default()
}

fn json_lines(res: &QueryResult, graph: &dyn PropertyAccess) -> String {
    let mut s = String::new();
    for r in &res.rows {
        s.push_str(&serde_json::to_string(&row_object(res, r, graph)).unwrap_or_default());
        s.push('\n');
    }
    s
}

/// A node without a string `id` (on writable graphs): its index, labels and properties,
/// as openCypher writes a node.
fn node_cell(n: u32, graph: &dyn PropertyAccess) -> String {
    let labels: String = graph
        .node_labels(n)
        .iter()
        .map(|l| format!(":{l}"))
        .collect();
    let properties = graph.node_properties(n);
    if properties.is_empty() {
        return format!("(#{n}{labels})");
    }
    let properties = properties
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!("(#{n}{labels} {{{properties}}})")
}

/// A value as one table or CSV cell: strings bare, nodes by id, the rest as BQL literals.
pub fn cell(v: &Value, graph: &dyn PropertyAccess) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Node(n) => match graph.node_prop(*n, "id") {
            Value::String(id) => format!("({id})"),
            _ => node_cell(*n, graph),
        },
        Value::Rel(r) => {
            let (s, e) = graph.rel_endpoints(*r);
            format!("[:{} #{s}->#{e}]", graph.rel_type(*r))
        }
        Value::Path { nodes, .. } => nodes
            .iter()
            .map(|n| cell(&Value::Node(*n), graph))
            .collect::<Vec<_>>()
            .join("->"),
        Value::List(l) => format!(
            "[{}]",
            l.iter()
                .map(|x| match x {
                    Value::String(_) => x.to_string(),
                    _ => cell(x, graph),
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

fn table(res: &QueryResult, graph: &dyn PropertyAccess) -> String {
    let cells: Vec<Vec<String>> = res
        .rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|v| cell(v, graph).replace('\n', " "))
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = res.columns.iter().map(|c| c.chars().count()).collect();
    for r in &cells {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    // Padded by hand: `format!`'s width is a u16, so a cell of 65,536 characters or more
    // made `{v:<w$}` panic.
    let line = |vals: &[String]| -> String {
        vals.iter()
            .zip(&widths)
            .map(|(v, w)| format!("{v}{}", " ".repeat(w.saturating_sub(v.chars().count()))))
            .collect::<Vec<_>>()
            .join(" | ")
            .trim_end()
            .to_string()
    };
    let mut s = String::new();
    s.push_str(&line(&res.columns));
    s.push('\n');
    s.push_str(
        &widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("-+-"),
    );
    s.push('\n');
    for r in &cells {
        s.push_str(&line(r));
        s.push('\n');
    }
    let n = res.rows.len();
    s.push_str(&format!("({n} row{})", if n == 1 { "" } else { "s" }));
    if let Some(b) = res.truncated {
        s.push_str(&format!(" — {b}"));
    }
    s.push('\n');
    // A PROFILE's annotated plan is not rows: the front end places it (before the rows,
    // on stderr for machine formats), as it does for every format.
    s
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv(res: &QueryResult, graph: &dyn PropertyAccess) -> String {
    let mut s = String::new();
    let header: Vec<String> = res.columns.iter().map(|c| csv_field(c)).collect();
    s.push_str(&header.join(","));
    s.push_str("\r\n");
    for r in &res.rows {
        let fields: Vec<String> = r.iter().map(|v| csv_field(&cell(v, graph))).collect();
        s.push_str(&fields.join(","));
        s.push_str("\r\n");
    }
    s
}
