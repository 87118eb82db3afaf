use super::*;
use crate::value::Value;

/// The string form of `text` parsed as `kind`, or the error.
fn parsed(kind: TemporalKind, text: &str) -> String {
    parse::parse(kind, text)
        .map(|t| t.to_string())
        .unwrap_or_else(|e| format!("error: {e}"))
}

fn assert_parses(kind: TemporalKind, cases: &[(&str, &str)]) {
    for (text, want) in cases {
        assert_eq!(parsed(kind, text), *want, "{} of {text:?}", kind.name());
    }
}

#[test]
fn dates_parse_in_calendar_week_and_ordinal_forms() {
    assert_parses(
        TemporalKind::Date,
        &[
            ("2015-07-21", "2015-07-21"),
            ("20150721", "2015-07-21"),
            ("2015-07", "2015-07-01"),
            ("2015-W30-2", "2015-07-21"),
            ("2015W302", "2015-07-21"),
            ("2015-W30", "2015-07-20"),
            ("2015-202", "2015-07-21"),
            ("2015", "2015-01-01"),
            // Week 1 of 2015 starts in 2014; week 53 exists in long years only.
            ("2015-W01-1", "2014-12-29"),
            ("2020-W53-7", "2021-01-03"),
            ("0012-01-01", "0012-01-01"),
            ("-0044-03-15", "-0044-03-15"),
        ],
    );
}

#[test]
fn invalid_dates_are_errors_not_panics() {
    for text in [
        "2015-02-30",
        "2015-13-01",
        "2015-W54",
        "2015-366",
        "15-07-21",
        "",
        "2015-07-2x",
        "2é15-07-21",
        "+99999-01-01",
    ] {
        assert!(
            parsed(TemporalKind::Date, text).starts_with("error:"),
            "{text:?} parsed"
        );
    }
}

#[test]
fn times_print_seconds_and_fractions_only_when_needed() {
    assert_parses(
        TemporalKind::LocalTime,
        &[
            ("21", "21:00"),
            ("2140", "21:40"),
            ("21:40:00", "21:40"),
            ("21:40:32", "21:40:32"),
            ("21:40:32.1", "21:40:32.100"),
            ("21:40:32.0001", "21:40:32.000100"),
            ("21:40:32,000000001", "21:40:32.000000001"),
            ("00:00:00.000000001", "00:00:00.000000001"),
        ],
    );
    assert_parses(
        TemporalKind::Time,
        &[
            ("21:40:32.142+0100", "21:40:32.142+01:00"),
            ("2140-00:00", "21:40Z"),
            ("2140-02", "21:40-02:00"),
            ("12:00+02:05:59", "12:00+02:05:59"),
            ("12:00", "12:00Z"),
        ],
    );
    assert!(parsed(TemporalKind::Time, "24:00").starts_with("error:"));
    assert!(parsed(TemporalKind::Time, "12:00+19:00").starts_with("error:"));
    assert!(parsed(TemporalKind::LocalTime, "12:00+01:00").starts_with("error:"));
}

#[test]
fn datetimes_keep_their_zone_or_offset() {
    assert_parses(
        TemporalKind::DateTime,
        &[
            (
                "2015-07-21T21:40:32.142+0100",
                "2015-07-21T21:40:32.142+01:00",
            ),
            ("2015-W30T2140-02", "2015-07-20T21:40-02:00"),
            (
                "2015-07-21T21:40:32.142[Europe/London]",
                "2015-07-21T21:40:32.142+01:00[Europe/London]",
            ),
            // Before standard time, Stockholm kept local mean time.
            (
                "1818-07-21T21:40:32.142[Europe/Stockholm]",
                "1818-07-21T21:40:32.142+00:53:28[Europe/Stockholm]",
            ),
            ("2015-07-21", "2015-07-21T00:00Z"),
        ],
    );
    assert!(
        parsed(TemporalKind::DateTime, "2015-07-21T12:00[Nowhere/Atlantis]").starts_with("error:")
    );
}

#[test]
fn durations_parse_cascade_and_print_like_java_time() {
    assert_parses(
        TemporalKind::Duration,
        &[
            ("P14DT16H12M", "P14DT16H12M"),
            ("P5M1.5D", "P5M1DT12H"),
            ("P0.75M", "P22DT19H51M49.5S"),
            ("PT0.75M", "PT45S"),
            ("P2.5W", "P17DT12H"),
            ("P12Y5M14DT16H12M70S", "P12Y5M14DT16H13M10S"),
            ("P2012-02-02T14:37:21.545", "P2012Y2M2DT14H37M21.545S"),
            ("P12Y5M-14DT16H", "P12Y5M-14DT16H"),
            ("PT0S", "PT0S"),
            ("PT-0.5S", "PT-0.5S"),
            ("PT-1.5S", "PT-1.5S"),
            ("P1DT-0.001S", "P1DT-0.001S"),
            ("-P1D", "P-1D"),
        ],
    );
    for text in ["P", "PT", "P1X", "1D", "P1.5.5D"] {
        assert!(
            parsed(TemporalKind::Duration, text).starts_with("error:"),
            "{text:?}"
        );
    }
}

#[test]
fn parts_round_trip_every_type() {
    let values = [
        parse::parse(TemporalKind::Date, "-0044-03-15"),
        parse::parse(TemporalKind::LocalTime, "23:59:59.999999999"),
        parse::parse(TemporalKind::Time, "12:00-05:30"),
        parse::parse(TemporalKind::LocalDateTime, "1969-12-31T23:59:59.5"),
        parse::parse(TemporalKind::DateTime, "1969-12-31T23:59:59.5+01:00"),
        parse::parse(
            TemporalKind::DateTime,
            "2017-10-29T02:30+01:00[Europe/Stockholm]",
        ),
        parse::parse(TemporalKind::Duration, "P-1Y2DT-0.5S"),
    ];
    for value in values {
        let value = value.expect("parses");
        let back = Temporal::from_parts(&value.to_parts()).expect("converts back");
        assert_eq!(back.to_string(), value.to_string());
        assert!(back.equals(&value));
    }
}

#[test]
fn damaged_parts_are_errors() {
    let damaged = [
        TemporalParts::LocalTime { nanos_of_day: -1 },
        TemporalParts::Date {
            epoch_day: i64::MAX,
        },
        TemporalParts::LocalDateTime {
            epoch_second: i64::MAX,
            nanos: i32::MAX,
        },
        TemporalParts::DateTime {
            epoch_second: 0,
            nanos: 0,
            offset_seconds: 0,
            zone: "Nowhere/Atlantis".into(),
        },
    ];
    for parts in damaged {
        assert!(Temporal::from_parts(&parts).is_err(), "{parts:?}");
    }
}

#[test]
fn temporals_keep_value_small() {
    // A path (two vectors, 48 bytes, the tag in a vector's niche) was already the
    // largest variant and `Value` 48 bytes; temporals must not grow it.
    assert!(std::mem::size_of::<Temporal>() <= 2 * std::mem::size_of::<Vec<u32>>());
    assert_eq!(std::mem::size_of::<Value>(), 48);
}
