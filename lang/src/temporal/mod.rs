//! openCypher temporal values: dates, times with and without an offset, date-times with
//! and without a time zone, and durations.
//!
//! Calendar and time-zone math is jiff's (its time-zone database is bundled, so named
//! zones such as `Europe/Stockholm` work everywhere); this module adds what openCypher
//! defines on top: the string forms (those of Java's `java.time`, which the openCypher TCK
//! prints), the duration model (months, days, seconds and nanoseconds kept apart), the
//! construction rules for maps and strings, truncation and `duration.between`.

mod arith;
mod build;
mod fields;
mod format;
mod parse;
mod parts;

use std::cmp::Ordering;

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::{Offset, TimeZone};
use jiff::{Timestamp, ZonedDateTime};

pub use arith::{
    BetweenUnit, add_duration, add_durations, between, multiply, negate as negate_duration, scale,
    subtract_durations,
};
pub use build::{construct, from_epoch_millis, from_epoch_seconds, now, truncate};
pub use parts::TemporalParts;

/// A temporal value. The zoned date-time is boxed so that `Value` stays as small as its
/// largest other variant.
#[derive(Clone, Debug)]
pub enum Temporal {
    /// A calendar date (`date`).
    Date(Date),
    /// A time of day without an offset (`localtime`).
    LocalTime(Time),
    /// A time of day at an offset from UTC (`time`).
    Time(Time, Offset),
    /// A date and time without a time zone (`localdatetime`).
    LocalDateTime(DateTime),
    /// An instant in a time zone, named (`Europe/London`) or a fixed offset (`datetime`).
    DateTime(Box<ZonedDateTime>),
    /// An amount of time (`duration`).
    Duration(Duration),
}

/// The openCypher duration: months, days and seconds are kept apart because their
/// lengths vary (a month is 28 to 31 days, a day 23 to 25 hours across a clock change).
/// `nanos` is always in `0..1_000_000_000`; the sign lives in `seconds`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Duration {
    /// Whole months (years count twelve each).
    pub months: i64,
    /// Whole days (weeks count seven each).
    pub days: i64,
    /// Whole seconds (hours and minutes included).
    pub seconds: i64,
    /// Nanoseconds on top of `seconds`, `0..1_000_000_000`.
    pub nanos: i32,
}

const NANOS_PER_SECOND: i64 = 1_000_000_000;
const SECONDS_PER_DAY: i64 = 86_400;

/// A temporal operation that cannot be done: invalid input, a field out of range, a
/// result outside the supported years (-9999 to 9999). Evaluation turns it into a
/// runtime error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemporalError(pub String);

impl std::fmt::Display for TemporalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<jiff::Error> for TemporalError {
    fn from(error: jiff::Error) -> Self {
        TemporalError(error.to_string())
    }
}

pub(crate) type Result<T> = std::result::Result<T, TemporalError>;

pub(crate) fn fail<T>(message: impl Into<String>) -> Result<T> {
    Err(TemporalError(message.into()))
}

/// Which of the six temporal types, for constructors and error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TemporalKind {
    /// `date`
    Date,
    /// `localtime`
    LocalTime,
    /// `time`
    Time,
    /// `localdatetime`
    LocalDateTime,
    /// `datetime`
    DateTime,
    /// `duration`
    Duration,
}

impl TemporalKind {
    /// The kind a constructor function name makes (`date`, `datetime`, ...).
    pub fn from_function(name: &str) -> Option<TemporalKind> {
        Some(match name {
            "date" => TemporalKind::Date,
            "localtime" => TemporalKind::LocalTime,
            "time" => TemporalKind::Time,
            "localdatetime" => TemporalKind::LocalDateTime,
            "datetime" => TemporalKind::DateTime,
            "duration" => TemporalKind::Duration,
            _ => return None,
        })
    }

    /// The BQL type name.
    pub fn name(self) -> &'static str {
        match self {
            TemporalKind::Date => "date",
            TemporalKind::LocalTime => "localtime",
            TemporalKind::Time => "time",
            TemporalKind::LocalDateTime => "localdatetime",
            TemporalKind::DateTime => "datetime",
            TemporalKind::Duration => "duration",
        }
    }
}

impl Temporal {
    /// Which type this is.
    pub fn kind(&self) -> TemporalKind {
        match self {
            Temporal::Date(_) => TemporalKind::Date,
            Temporal::LocalTime(_) => TemporalKind::LocalTime,
            Temporal::Time(..) => TemporalKind::Time,
            Temporal::LocalDateTime(_) => TemporalKind::LocalDateTime,
            Temporal::DateTime(_) => TemporalKind::DateTime,
            Temporal::Duration(_) => TemporalKind::Duration,
        }
    }

    /// The BQL type name.
    pub fn type_name(&self) -> &'static str {
        self.kind().name()
    }

    /// A date-time in a zone (named or a fixed offset).
    pub fn zoned(zoned: ZonedDateTime) -> Temporal {
        Temporal::DateTime(Box::new(zoned))
    }

    /// Rank in ORDER BY among temporal types: openCypher orders date-times, local
    /// date-times, dates, times, local times, then durations.
    pub(crate) fn order_rank(&self) -> u8 {
        match self {
            Temporal::DateTime(_) => 0,
            Temporal::LocalDateTime(_) => 1,
            Temporal::Date(_) => 2,
            Temporal::Time(..) => 3,
            Temporal::LocalTime(_) => 4,
            Temporal::Duration(_) => 5,
        }
    }

    /// `=`: values of the same type with the same fields (date-times: the same instant in
    /// the same zone; times: the same time at the same offset). Different types are unequal.
    pub fn equals(&self, other: &Temporal) -> bool {
        match (self, other) {
            (Temporal::DateTime(a), Temporal::DateTime(b)) => {
                a.timestamp() == b.timestamp()
                    && a.offset() == b.offset()
                    && zone_name(a.time_zone()) == zone_name(b.time_zone())
            }
            _ => self.kind() == other.kind() && self.order(other) == Ordering::Equal,
        }
    }

    /// `<` and friends: only between values of the same type, and never between durations
    /// (a month is not comparable to thirty days).
    pub fn compare(&self, other: &Temporal) -> Option<Ordering> {
        match (self, other) {
            (Temporal::Duration(_), _) => None,
            _ if self.kind() != other.kind() => None,
            _ => Some(self.order(other)),
        }
    }

    /// The total order of ORDER BY: by type rank, then chronologically (times and
    /// date-times by their instant, ties broken by offset); durations by their fields.
    pub fn order(&self, other: &Temporal) -> Ordering {
        match (self, other) {
            (Temporal::Date(a), Temporal::Date(b)) => a.cmp(b),
            (Temporal::LocalTime(a), Temporal::LocalTime(b)) => a.cmp(b),
            (Temporal::Time(a, oa), Temporal::Time(b, ob)) => utc_nanos_of_day(*a, *oa)
                .cmp(&utc_nanos_of_day(*b, *ob))
                .then_with(|| oa.seconds().cmp(&ob.seconds())),
            (Temporal::LocalDateTime(a), Temporal::LocalDateTime(b)) => a.cmp(b),
            (Temporal::DateTime(a), Temporal::DateTime(b)) => a
                .timestamp()
                .cmp(&b.timestamp())
                .then_with(|| a.offset().seconds().cmp(&b.offset().seconds()))
                .then_with(|| zone_name(a.time_zone()).cmp(&zone_name(b.time_zone()))),
            (Temporal::Duration(a), Temporal::Duration(b)) => a.cmp(b),
            _ => self.order_rank().cmp(&other.order_rank()),
        }
    }
}

impl PartialEq for Temporal {
    /// Structural sameness (what `Value`'s derived equality needs): `equals`.
    fn eq(&self, other: &Temporal) -> bool {
        self.equals(other)
    }
}

/// Nanoseconds since midnight UTC of a time at an offset (may leave `0..24h`; only
/// compared).
fn utc_nanos_of_day(time: Time, offset: Offset) -> i64 {
    nanos_of_day(time) - i64::from(offset.seconds()) * NANOS_PER_SECOND
}

/// Nanoseconds since midnight.
pub(crate) fn nanos_of_day(time: Time) -> i64 {
    (i64::from(time.hour()) * 3600 + i64::from(time.minute()) * 60 + i64::from(time.second()))
        * NANOS_PER_SECOND
        + i64::from(time.subsec_nanosecond())
}

/// The time `nanos` after midnight, wrapped into one day.
pub(crate) fn time_from_nanos(nanos: i64) -> Time {
    let nanos = nanos.rem_euclid(SECONDS_PER_DAY * NANOS_PER_SECOND);
    let seconds = nanos / NANOS_PER_SECOND;
    Time::constant(
        (seconds / 3600) as i8,
        (seconds / 60 % 60) as i8,
        (seconds % 60) as i8,
        (nanos % NANOS_PER_SECOND) as i32,
    )
}

/// UTC as a fixed offset (not the zone named `UTC`, which would print as `Z[UTC]`): the
/// zone of date-times and times given without one.
pub(crate) fn utc() -> TimeZone {
    TimeZone::fixed(Offset::UTC)
}

/// The name a date-time shows in brackets (`[Europe/London]`): `None` for a fixed offset.
/// jiff names its built-in fixed UTC zone `UTC`; only zones from the database count.
pub(crate) fn zone_name(zone: &TimeZone) -> Option<&str> {
    if zone.to_fixed_offset().is_ok() {
        None
    } else {
        zone.iana_name()
    }
}

/// A zoned date-time at an instant.
pub(crate) fn at_instant(timestamp: Timestamp, zone: TimeZone) -> Temporal {
    Temporal::zoned(timestamp.to_zoned_datetime(zone))
}

#[cfg(test)]
mod tests;
