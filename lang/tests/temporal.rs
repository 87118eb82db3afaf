//! Temporal expressions evaluated end to end: constructors, string forms, accessors,
//! arithmetic and comparisons, over no graph.

use std::collections::BTreeMap;

use batho_lang::{Evaluator, NoGraph, Value, parse_statement};

fn v(text: &str) -> String {
    let statement = parse_statement(&format!("RETURN {text}")).unwrap_or_else(|e| panic!("{e}"));
    let batho_lang::ast::Clause::Return(projection) = &statement.clauses[0] else {
        panic!("no return")
    };
    let params = BTreeMap::new();
    let row: BTreeMap<String, Value> = BTreeMap::new();
    match Evaluator::new(&NoGraph, &params).eval(&projection.items[0].expr, &row) {
        Ok(value) => value.to_string(),
        Err(error) => format!("error: {error}"),
    }
}

fn check(cases: &[(&str, &str)]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(query, want)| {
            let got = v(query);
            (got != *want).then(|| format!("{query}\n  want {want}\n  got  {got}"))
        })
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn constructors_take_maps_strings_and_other_temporals() {
    check(&[
        ("date({year: 1984, week: 10, dayOfWeek: 3})", "1984-03-07"),
        ("date({year: 1984, ordinalDay: 202})", "1984-07-20"),
        (
            "date({year: 1984, quarter: 3, dayOfQuarter: 45})",
            "1984-08-14",
        ),
        ("date({date: date('1984-11-11'), week: 1})", "1984-01-08"),
        (
            "localtime({hour: 12, millisecond: 1, microsecond: 2, nanosecond: 3})",
            "12:00:00.001002003",
        ),
        ("time({hour: 12, timezone: '+01:00'})", "12:00+01:00"),
        (
            "time({time: time('12:31+01:00'), timezone: '+05:00'})",
            "16:31+05:00",
        ),
        (
            "localdatetime({date: date('1984-10-11'), time: localtime('12:31')})",
            "1984-10-11T12:31",
        ),
        (
            "datetime({year: 1984, month: 10, day: 11, hour: 12, timezone: 'Europe/Stockholm'})",
            "1984-10-11T12:00+01:00[Europe/Stockholm]",
        ),
        (
            "datetime({datetime: datetime('1984-10-11T12:00+01:00'), timezone: 'Pacific/Honolulu'})",
            "1984-10-11T01:00-10:00[Pacific/Honolulu]",
        ),
        ("date(datetime('2015-07-21T21:40:32+01:00'))", "2015-07-21"),
        ("duration({weeks: 1, hours: 1.5})", "P7DT1H30M"),
        (
            "datetime.fromepoch(416779, 999999999)",
            "1970-01-05T19:46:19.999999999Z",
        ),
        (
            "datetime.fromepochmillis(237821673987)",
            "1977-07-15T13:34:33.987Z",
        ),
        ("date(null)", "null"),
        ("duration.between(null, date())", "null"),
    ]);
}

#[test]
fn accessors_read_fields() {
    check(&[
        ("date('2015-07-21').weekYear", "2015"),
        ("date('2015-07-21').week", "30"),
        ("date('2015-07-21').dayOfWeek", "2"),
        ("date('2015-07-21').quarter", "3"),
        ("date('2015-07-21').dayOfQuarter", "21"),
        ("date('2015-07-21').ordinalDay", "202"),
        (
            "datetime('2015-07-21T21:40:32.142+01:00').offsetMinutes",
            "60",
        ),
        (
            "datetime('2015-07-21T21:40:32.142[Europe/London]').timezone",
            "'Europe/London'",
        ),
        (
            "datetime('2015-07-21T21:40:32.142[Europe/London]').offset",
            "'+01:00'",
        ),
        ("datetime('1970-01-01T00:00:01.5Z').epochMillis", "1500"),
        ("time('12:00-05:30').offsetSeconds", "-19800"),
        ("duration('P1Y2M3DT4H5M6.7S').monthsOfYear", "2"),
        ("duration('P1Y2M3DT4H5M6.7S').minutes", "245"),
        (
            "duration('P1Y2M3DT4H5M6.7S').nanosecondsOfSecond",
            "700000000",
        ),
        (
            "date('2015-07-21').hour",
            "error: a date has no field `hour`",
        ),
    ]);
}

#[test]
fn arithmetic_follows_the_calendar() {
    check(&[
        ("date('2015-01-31') + duration('P1M')", "2015-02-28"),
        (
            "date('1984-10-11') + duration({months: 1, days: -14})",
            "1984-10-28",
        ),
        ("date('2015-01-01') + duration('PT36H')", "2015-01-02"),
        ("localtime('23:00') + duration('PT2H')", "01:00"),
        (
            "datetime('2017-10-28T12:00[Europe/Stockholm]') + duration('P1D')",
            "2017-10-29T12:00+01:00[Europe/Stockholm]",
        ),
        (
            "datetime('2017-10-28T12:00[Europe/Stockholm]') + duration('PT24H')",
            "2017-10-29T11:00+01:00[Europe/Stockholm]",
        ),
        ("duration('P1D') + duration('PT1H')", "P1DT1H"),
        ("duration('P1D') - duration('PT1H')", "P1DT-1H"),
        ("duration('P1M') * 1.5", "P1M15DT5H14M33S"),
        ("duration('PT1H') / 4", "PT15M"),
        ("duration('PT1H') / 0", "error: division by zero"),
        (
            "duration.between(date('2015-01-31'), date('2015-03-01'))",
            "P1M1D",
        ),
        (
            "duration.inDays(date('2015-01-01'), date('2015-03-01'))",
            "P59D",
        ),
        (
            "duration.inSeconds(datetime('2017-10-29T00:00[Europe/Stockholm]'), datetime('2017-10-29T04:00[Europe/Stockholm]'))",
            "PT5H",
        ),
        (
            "date('2015-01-01') + 1",
            "error: type error: cannot apply `+` to date and integer",
        ),
    ]);
}

#[test]
fn comparisons_and_equality() {
    check(&[
        ("date('2015-01-01') < date('2015-01-02')", "true"),
        ("time('12:00+01:00') < time('11:30Z')", "true"),
        (
            "datetime('2015-01-01T12:00+01:00') < datetime('2015-01-01T11:30Z')",
            "true",
        ),
        ("date('2015-01-01') < localdatetime('2015-01-02')", "null"),
        ("duration('P1D') < duration('P2D')", "null"),
        ("duration('P1D') = duration('PT24H')", "false"),
        ("duration('PT86400S') = duration('PT24H')", "true"),
        ("date('2015-01-01') = '2015-01-01'", "false"),
        ("toString(duration('P14DT16H12M'))", "'P14DT16H12M'"),
        ("date() = date()", "true"),
        ("duration.between(localtime(), localtime())", "PT0S"),
    ]);
}

#[test]
fn truncation_keeps_the_coarser_fields() {
    check(&[
        (
            "date.truncate('weekYear', date('1984-01-01'))",
            "1983-01-03",
        ),
        (
            "date.truncate('quarter', date('1984-11-11'), {day: 2})",
            "1984-10-02",
        ),
        (
            "localtime.truncate('millisecond', localtime('12:31:14.645876123'), {nanosecond: 2})",
            "12:31:14.645000002",
        ),
        (
            "datetime.truncate('day', datetime('2017-10-11T12:31-01:00'), {timezone: 'Europe/Stockholm'})",
            "2017-10-11T00:00+02:00[Europe/Stockholm]",
        ),
        (
            "date.truncate('fortnight', date('1984-11-11'))",
            "error: 'fortnight' is not a unit to truncate to",
        ),
        (
            "localtime.truncate('hour', date('1984-11-11'))",
            "error: localtime.truncate() needs a value with a time",
        ),
    ]);
}

#[test]
fn invalid_input_is_a_runtime_error() {
    check(&[
        (
            "date({year: 2015, month: 2, day: 30})",
            "error: parameter 'day' for `2015-02` is invalid, must be in range `1..=28`",
        ),
        ("date({month: 2})", "error: a date needs a year"),
        (
            "date({year: 2015, fortnight: 2})",
            "error: date() has no field `fortnight`",
        ),
        (
            "date('not a date')",
            "error: 'not a date' is not a valid date: expected a four-digit year",
        ),
        (
            "duration({days: 'one'})",
            "error: duration field `days` must be a number, got string",
        ),
        (
            "datetime({year: 2015, timezone: 'Nowhere/Atlantis'})",
            "error: unknown time zone 'Nowhere/Atlantis'",
        ),
        (
            "duration({years: 9223372036854775807})",
            "error: the duration is too large",
        ),
    ]);
}
