//! Runtime values and their openCypher semantics.
//!
//! Three relations, deliberately different:
//! - [`Value::equals`]: the `=` operator, three-valued (`null` when either side is or
//!   contains a null that decides the answer; numbers compare across int/float).
//! - [`Value::compare`]: `<`/`>`, defined only within one type family (numbers, strings,
//!   booleans, lists), `None` (i.e. `null`) otherwise.
//! - [`Value::order`]: the total order used by ORDER BY, min/max and DISTINCT grouping:
//!   map < node < relationship < list < path < temporal < string < boolean < number < null,
//!   so nulls sort last ascending and first descending, and NaN sorts above every other
//!   number. Temporal values order by type (date-time, local date-time, date, time, local
//!   time, duration), then chronologically.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};

use crate::temporal::Temporal;

/// A value produced or consumed by BQL.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`: missing or unknown.
    Null,
    /// A boolean.
    Bool(bool),
    /// A 64-bit signed integer.
    Int(i64),
    /// A 64-bit float.
    Float(f64),
    /// A string.
    String(String),
    /// A list.
    List(Vec<Value>),
    /// A map with string keys (sorted, so printing is deterministic).
    Map(BTreeMap<String, Value>),
    /// A node, by its dense index in the graph.
    Node(u32),
    /// A relationship, by its dense index in the graph.
    Rel(u32),
    /// A path: `nodes.len() == rels.len() + 1`; `rels[i]` joins `nodes[i]` and `nodes[i + 1]`.
    Path {
        /// Nodes in order.
        nodes: Vec<u32>,
        /// Relationships in order.
        rels: Vec<u32>,
    },
    /// A date, time, date-time or duration (openCypher's temporal types).
    Temporal(Temporal),
}

impl Value {
    /// About how many bytes the value takes in memory: its own size plus what it owns
    /// (string bytes and list items by capacity, keys), with a word of allocator
    /// overhead per allocation. What the executor counts against its budget of held
    /// values: an estimate that grows with the real size, not an allocator's figure.
    pub fn approx_bytes(&self) -> usize {
        const ALLOCATION: usize = 16;
        let own = std::mem::size_of::<Value>();
        own + match self {
            Value::String(text) => ALLOCATION + text.capacity(),
            Value::List(items) => {
                let slack = items.capacity() - items.len();
                ALLOCATION + slack * own + items.iter().map(Value::approx_bytes).sum::<usize>()
            }
            Value::Map(fields) => fields
                .iter()
                .map(|(key, value)| {
                    // A B-tree node holds up to eleven entries: about one allocation each.
                    2 * ALLOCATION
                        + std::mem::size_of::<String>()
                        + key.capacity()
                        + value.approx_bytes()
                })
                .sum(),
            Value::Path { nodes, rels } => {
                2 * ALLOCATION + 4 * (nodes.capacity() + rels.capacity())
            }
            // The zoned date-time is boxed; its zone's rules are shared, not counted.
            Value::Temporal(Temporal::DateTime(zoned)) => {
                ALLOCATION + std::mem::size_of_val(zoned.as_ref())
            }
            _ => 0,
        }
    }

    /// The type name used in error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "float",
            Value::String(_) => "string",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Node(_) => "node",
            Value::Rel(_) => "relationship",
            Value::Path { .. } => "path",
            Value::Temporal(temporal) => temporal.type_name(),
        }
    }

    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value as a boolean for WHERE: only `true` passes (`null` and `false` filter out).
    pub fn is_true(&self) -> bool {
        matches!(self, Value::Bool(true))
    }

    fn family_rank(&self) -> u8 {
        match self {
            Value::Map(_) => 0,
            Value::Node(_) => 1,
            Value::Rel(_) => 2,
            Value::List(_) => 3,
            Value::Path { .. } => 4,
            Value::Temporal(_) => 5,
            Value::String(_) => 6,
            Value::Bool(_) => 7,
            Value::Int(_) | Value::Float(_) => 8,
            Value::Null => 9,
        }
    }

    /// `=` with three-valued logic: `Some(bool)` or `None` for null.
    pub fn equals(&self, other: &Value) -> Option<bool> {
        match (self, other) {
            (Value::Null, _) | (_, Value::Null) => None,
            (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
                Some(num_cmp(self, other) == Some(Ordering::Equal))
            }
            (Value::List(a), Value::List(b)) => {
                if a.len() != b.len() {
                    return Some(false);
                }
                let mut unknown = false;
                for (x, y) in a.iter().zip(b) {
                    match x.equals(y) {
                        Some(false) => return Some(false),
                        None => unknown = true,
                        Some(true) => {}
                    }
                }
                if unknown { None } else { Some(true) }
            }
            (Value::Map(a), Value::Map(b)) => {
                if a.len() != b.len() || a.keys().ne(b.keys()) {
                    return Some(false);
                }
                let mut unknown = false;
                for (x, y) in a.values().zip(b.values()) {
                    match x.equals(y) {
                        Some(false) => return Some(false),
                        None => unknown = true,
                        Some(true) => {}
                    }
                }
                if unknown { None } else { Some(true) }
            }
            (Value::Temporal(a), Value::Temporal(b)) => Some(a.equals(b)),
            (a, b) if a.family_rank() != b.family_rank() => Some(false),
            (a, b) => Some(a == b),
        }
    }

    /// `<`, `<=`, `>`, `>=`: an ordering within one comparable family, `None` otherwise
    /// (and for NaN, and for nulls).
    pub fn compare(&self, other: &Value) -> Option<Ordering> {
        match (self, other) {
            (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
                num_cmp(self, other)
            }
            (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
            (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
            (Value::Temporal(a), Value::Temporal(b)) => a.compare(b),
            (Value::List(a), Value::List(b)) => {
                for (x, y) in a.iter().zip(b) {
                    match x.compare(y)? {
                        Ordering::Equal => {}
                        o => return Some(o),
                    }
                }
                Some(a.len().cmp(&b.len()))
            }
            _ => None,
        }
    }

    /// The total order of ORDER BY (ascending). Equivalent values (`1` and `1.0`, two nulls)
    /// compare `Equal`.
    pub fn order(&self, other: &Value) -> Ordering {
        let (ra, rb) = (self.family_rank(), other.family_rank());
        if ra != rb {
            return ra.cmp(&rb);
        }
        match (self, other) {
            (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
                num_cmp(self, other).unwrap_or_else(|| {
                    // NaN is the largest number and equal to itself.
                    let a_nan = matches!(self, Value::Float(f) if f.is_nan());
                    let b_nan = matches!(other, Value::Float(f) if f.is_nan());
                    a_nan.cmp(&b_nan)
                })
            }
            (Value::String(a), Value::String(b)) => a.cmp(b),
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Temporal(a), Value::Temporal(b)) => a.order(b),
            (Value::List(a), Value::List(b)) => {
                for (x, y) in a.iter().zip(b) {
                    match x.order(y) {
                        Ordering::Equal => {}
                        o => return o,
                    }
                }
                a.len().cmp(&b.len())
            }
            (Value::Map(a), Value::Map(b)) => {
                for ((ka, va), (kb, vb)) in a.iter().zip(b) {
                    match ka.cmp(kb).then_with(|| va.order(vb)) {
                        Ordering::Equal => {}
                        o => return o,
                    }
                }
                a.len().cmp(&b.len())
            }
            (Value::Node(a), Value::Node(b)) | (Value::Rel(a), Value::Rel(b)) => a.cmp(b),
            (
                Value::Path {
                    nodes: na,
                    rels: ra,
                },
                Value::Path {
                    nodes: nb,
                    rels: rb,
                },
            ) => na.cmp(nb).then_with(|| ra.cmp(rb)),
            _ => Ordering::Equal,
        }
    }
}

/// Exact numeric comparison across int and float (no precision loss for large ints).
fn num_cmp(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y),
        (Value::Int(i), Value::Float(f)) => int_float_cmp(*i, *f),
        (Value::Float(f), Value::Int(i)) => int_float_cmp(*i, *f).map(Ordering::reverse),
        _ => None,
    }
}

fn int_float_cmp(i: i64, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    // i64 -> i128 and f64 -> i128 are exact within range; compare the integral parts
    // first and break ties on the fraction.
    if f >= 9.3e18 {
        return Some(Ordering::Less);
    }
    if f <= -9.3e18 {
        return Some(Ordering::Greater);
    }
    let t = f.trunc();
    match (i as i128).cmp(&(t as i128)) {
        Ordering::Equal => 0.0f64.partial_cmp(&(f - t)),
        o => Some(o),
    }
}

/// A value wrapped for grouping and DISTINCT: equal when equivalent under ORDER BY
/// (`null` equals `null`, `1` equals `1.0`, NaN equals NaN), hashable consistently.
#[derive(Clone, Debug)]
pub struct GroupKey(pub Value);

impl PartialEq for GroupKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.order(&other.0) == Ordering::Equal
    }
}

impl Eq for GroupKey {}

impl Hash for GroupKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_value(&self.0, state);
    }
}

fn hash_value<H: Hasher>(v: &Value, state: &mut H) {
    v.family_rank().hash(state);
    match v {
        Value::Null => {}
        Value::Bool(b) => b.hash(state),
        // Equal numbers must hash equally across int and float.
        Value::Int(i) => (*i as f64).to_bits().hash(state),
        Value::Float(f) => {
            if f.is_nan() {
                u64::MAX.hash(state);
            } else if *f == 0.0 {
                0.0f64.to_bits().hash(state);
            } else {
                f.to_bits().hash(state);
            }
        }
        Value::String(s) => s.hash(state),
        Value::List(items) => {
            items.len().hash(state);
            for x in items {
                hash_value(x, state);
            }
        }
        Value::Map(m) => {
            m.len().hash(state);
            for (k, x) in m {
                k.hash(state);
                hash_value(x, state);
            }
        }
        Value::Node(n) | Value::Rel(n) => n.hash(state),
        Value::Path { nodes, rels } => {
            nodes.hash(state);
            rels.hash(state);
        }
        // Equal temporals print alike (same fields, same zone), so their text hashes them.
        Value::Temporal(temporal) => temporal.to_string().hash(state),
    }
}

impl fmt::Display for Value {
    /// BQL literal syntax for scalars, lists and maps; `(#n)`, `[#r]` for graph elements;
    /// the openCypher string form, unquoted, for temporal values (`2015-07-21`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x:?}"),
            Value::String(s) => write!(f, "'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str("]")
            }
            Value::Map(m) => {
                f.write_str("{")?;
                for (i, (k, x)) in m.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {x}")?;
                }
                f.write_str("}")
            }
            Value::Node(n) => write!(f, "(#{n})"),
            Value::Rel(r) => write!(f, "[#{r}]"),
            Value::Path { nodes, rels } => {
                for (i, n) in nodes.iter().enumerate() {
                    if i > 0 {
                        match rels.get(i - 1) {
                            Some(r) => write!(f, "-[#{r}]-")?,
                            None => f.write_str("-?-")?,
                        }
                    }
                    write!(f, "(#{n})")?;
                }
                Ok(())
            }
            Value::Temporal(temporal) => write!(f, "{temporal}"),
        }
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}
impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Float(f)
    }
}
impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}
/// Text read from a store, borrowed or assembled: owned text is moved, not copied.
impl From<std::borrow::Cow<'_, str>> for Value {
    fn from(s: std::borrow::Cow<'_, str>) -> Self {
        Value::String(s.into_owned())
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(o: Option<T>) -> Self {
        o.map_or(Value::Null, Into::into)
    }
}
impl From<Temporal> for Value {
    fn from(temporal: Temporal) -> Self {
        Value::Temporal(temporal)
    }
}
impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Self {
        Value::List(v)
    }
}
