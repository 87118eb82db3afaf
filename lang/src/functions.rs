//! The function table shared by the checker (names, arity, aggregate or not) and the
//! evaluator. Names are case-insensitive, as in openCypher.

/// Scalar or aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FunctionKind {
    /// One value per row.
    Scalar,
    /// One value per group of rows.
    Aggregate,
}

/// A built-in function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionDef {
    /// Canonical name.
    pub name: &'static str,
    /// Fewest arguments.
    pub min_args: usize,
    /// Most arguments (`usize::MAX`: variadic).
    pub max_args: usize,
    /// Scalar or aggregate.
    pub kind: FunctionKind,
    /// One-line description (the reference in `docs/bql.md` is generated from the same words).
    pub doc: &'static str,
}

const fn scalar(
    name: &'static str,
    min_args: usize,
    max_args: usize,
    doc: &'static str,
) -> FunctionDef {
    FunctionDef {
        name,
        min_args,
        max_args,
        kind: FunctionKind::Scalar,
        doc,
    }
}

const fn agg(name: &'static str, doc: &'static str) -> FunctionDef {
    FunctionDef {
        name,
        min_args: 1,
        max_args: 1,
        kind: FunctionKind::Aggregate,
        doc,
    }
}

/// Every built-in function.
pub const FUNCTIONS: &[FunctionDef] = &[
    agg("count", "number of non-null values (count(*) counts rows)"),
    agg("collect", "list of the non-null values"),
    agg("min", "smallest value (by ORDER BY order)"),
    agg("max", "largest value (by ORDER BY order)"),
    agg("sum", "sum of numbers"),
    agg("avg", "average of numbers, as a float"),
    FunctionDef {
        name: "percentileDisc",
        min_args: 2,
        max_args: 2,
        kind: FunctionKind::Aggregate,
        doc: "percentileDisc(x, p): the smallest value with a fraction p (0 to 1) at or below it",
    },
    FunctionDef {
        name: "percentileCont",
        min_args: 2,
        max_args: 2,
        kind: FunctionKind::Aggregate,
        doc: "percentileCont(x, p): the value at fraction p (0 to 1), interpolated, as a float",
    },
    scalar(
        "id",
        1,
        1,
        "internal integer id of a node or relationship (not the `id` property)",
    ),
    scalar("type", 1, 1, "type of a relationship"),
    scalar("labels", 1, 1, "labels of a node, as a list"),
    scalar(
        "properties",
        1,
        1,
        "every property of a node or relationship, as a map",
    ),
    scalar(
        "keys",
        1,
        1,
        "property names of a node, relationship or map",
    ),
    scalar(
        "length",
        1,
        1,
        "number of relationships of a path (or size of a list/string)",
    ),
    scalar("nodes", 1, 1, "nodes of a path"),
    scalar("relationships", 1, 1, "relationships of a path"),
    scalar(
        "has_role",
        2,
        2,
        "whether a relationship carries a symbol role (`has_role(r, 'WriteAccess')`)",
    ),
    scalar("roles", 1, 1, "names of the symbol roles of a relationship"),
    scalar("startNode", 1, 1, "start node of a relationship"),
    scalar("endNode", 1, 1, "end node of a relationship"),
    scalar("toLower", 1, 1, "lower-case string"),
    scalar("toUpper", 1, 1, "upper-case string"),
    scalar(
        "trim",
        1,
        1,
        "string without leading and trailing whitespace",
    ),
    scalar("ltrim", 1, 1, "string without leading whitespace"),
    scalar("rtrim", 1, 1, "string without trailing whitespace"),
    scalar(
        "substring",
        2,
        3,
        "substring(s, start[, length]), in characters from 0",
    ),
    scalar("left", 2, 2, "first n characters"),
    scalar("right", 2, 2, "last n characters"),
    scalar("split", 2, 2, "split(s, delimiter) into a list of strings"),
    scalar(
        "replace",
        3,
        3,
        "replace(s, search, replacement), every occurrence",
    ),
    scalar("reverse", 1, 1, "reversed string or list"),
    scalar(
        "size",
        1,
        1,
        "number of elements of a list or characters of a string",
    ),
    scalar("head", 1, 1, "first element of a list"),
    scalar("last", 1, 1, "last element of a list"),
    scalar("tail", 1, 1, "the list without its first element"),
    scalar(
        "range",
        2,
        3,
        "range(start, end[, step]): integers, end inclusive",
    ),
    scalar("coalesce", 1, usize::MAX, "first non-null argument"),
    scalar("toString", 1, 1, "string form of a value"),
    scalar(
        "toInteger",
        1,
        1,
        "integer from a number or string (null when not convertible)",
    ),
    scalar(
        "toFloat",
        1,
        1,
        "float from a number or string (null when not convertible)",
    ),
    scalar(
        "toBoolean",
        1,
        1,
        "boolean from a boolean or string (null when not convertible)",
    ),
    scalar("abs", 1, 1, "absolute value"),
    scalar("sign", 1, 1, "-1, 0 or 1"),
    scalar(
        "round",
        1,
        1,
        "nearest integer-valued float (half away from zero)",
    ),
    scalar("floor", 1, 1, "largest integer-valued float not above"),
    scalar("ceil", 1, 1, "smallest integer-valued float not below"),
    scalar("sqrt", 1, 1, "square root"),
    scalar(
        "rand",
        0,
        0,
        "random float in [0, 1), a new one at each call (not for cryptography)",
    ),
    scalar(
        "date",
        0,
        1,
        "a date from a map, a string or a temporal value; today (UTC) without an argument",
    ),
    scalar(
        "localtime",
        0,
        1,
        "a local time from a map, a string or a temporal value; now without an argument",
    ),
    scalar(
        "time",
        0,
        1,
        "a time with an offset from a map, a string or a temporal value; now without one",
    ),
    scalar(
        "localdatetime",
        0,
        1,
        "a local date-time from a map, a string or a temporal value; now without one",
    ),
    scalar(
        "datetime",
        0,
        1,
        "a date-time in a time zone from a map, a string or a temporal value; now without one",
    ),
    scalar(
        "duration",
        1,
        1,
        "a duration from a map of units or an ISO 8601 string (`P1DT2H`)",
    ),
    // The current clock, optionally in a time zone. BQL reads the clock at each call, so
    // the transaction, statement and realtime forms agree to within a statement's time.
    scalar("date.transaction", 0, 1, "today, optionally in a time zone"),
    scalar("date.statement", 0, 1, "today, optionally in a time zone"),
    scalar("date.realtime", 0, 1, "today, optionally in a time zone"),
    scalar(
        "localtime.transaction",
        0,
        1,
        "the local time now, optionally in a zone",
    ),
    scalar(
        "localtime.statement",
        0,
        1,
        "the local time now, optionally in a zone",
    ),
    scalar(
        "localtime.realtime",
        0,
        1,
        "the local time now, optionally in a zone",
    ),
    scalar(
        "time.transaction",
        0,
        1,
        "the time now, optionally in a zone",
    ),
    scalar("time.statement", 0, 1, "the time now, optionally in a zone"),
    scalar("time.realtime", 0, 1, "the time now, optionally in a zone"),
    scalar(
        "localdatetime.transaction",
        0,
        1,
        "the local date-time now, optionally in a zone",
    ),
    scalar(
        "localdatetime.statement",
        0,
        1,
        "the local date-time now, optionally in a zone",
    ),
    scalar(
        "localdatetime.realtime",
        0,
        1,
        "the local date-time now, optionally in a zone",
    ),
    scalar(
        "datetime.transaction",
        0,
        1,
        "the date-time now, optionally in a zone",
    ),
    scalar(
        "datetime.statement",
        0,
        1,
        "the date-time now, optionally in a zone",
    ),
    scalar(
        "datetime.realtime",
        0,
        1,
        "the date-time now, optionally in a zone",
    ),
    scalar(
        "date.truncate",
        2,
        3,
        "date.truncate(unit, value[, map]): the date at the start of `unit`, fields replaced",
    ),
    scalar(
        "localtime.truncate",
        2,
        3,
        "localtime.truncate(unit, value[, map]): the local time at the start of `unit`",
    ),
    scalar(
        "time.truncate",
        2,
        3,
        "time.truncate(unit, value[, map]): the time at the start of `unit`",
    ),
    scalar(
        "localdatetime.truncate",
        2,
        3,
        "localdatetime.truncate(unit, value[, map]): the local date-time at the start of `unit`",
    ),
    scalar(
        "datetime.truncate",
        2,
        3,
        "datetime.truncate(unit, value[, map]): the date-time at the start of `unit`",
    ),
    scalar(
        "datetime.fromepoch",
        2,
        2,
        "datetime.fromepoch(seconds, nanoseconds): the UTC date-time after 1970-01-01",
    ),
    scalar(
        "datetime.fromepochmillis",
        1,
        1,
        "datetime.fromepochmillis(milliseconds): the UTC date-time after 1970-01-01",
    ),
    scalar(
        "duration.between",
        2,
        2,
        "duration.between(a, b): months, days and seconds from a to b",
    ),
    scalar(
        "duration.inMonths",
        2,
        2,
        "duration.inMonths(a, b): the whole months from a to b",
    ),
    scalar(
        "duration.inDays",
        2,
        2,
        "duration.inDays(a, b): the whole days from a to b",
    ),
    scalar(
        "duration.inSeconds",
        2,
        2,
        "duration.inSeconds(a, b): the seconds (and nanoseconds) from a to b",
    ),
    scalar(
        "exists",
        1,
        1,
        "whether the argument (usually a property) is not null",
    ),
];

/// Looks a function up by name, case-insensitively.
pub fn lookup(name: &str) -> Option<&'static FunctionDef> {
    FUNCTIONS.iter().find(|f| f.name.eq_ignore_ascii_case(name))
}

/// Whether `name` is an aggregate function.
pub fn is_aggregate(name: &str) -> bool {
    lookup(name).is_some_and(|f| f.kind == FunctionKind::Aggregate)
}
