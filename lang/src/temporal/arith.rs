//! Temporal arithmetic: a duration added to or subtracted from an instant or another
//! duration, durations scaled by numbers, and `duration.between`.

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Span, Timestamp, ZonedDateTime};

use super::build::DurationParts;
use super::parse::Amount;
use super::{
    Duration, NANOS_PER_SECOND, Result, SECONDS_PER_DAY, Temporal, TemporalError, fail,
    nanos_of_day, time_from_nanos,
};

fn overflow() -> TemporalError {
    TemporalError("the duration is too large".into())
}

/// `-d`.
pub fn negate(duration: Duration) -> Result<Duration> {
    let total =
        -(i128::from(duration.seconds) * i128::from(NANOS_PER_SECOND) + i128::from(duration.nanos));
    Ok(Duration {
        months: duration.months.checked_neg().ok_or_else(overflow)?,
        days: duration.days.checked_neg().ok_or_else(overflow)?,
        seconds: i64::try_from(total.div_euclid(i128::from(NANOS_PER_SECOND)))
            .map_err(|_| overflow())?,
        nanos: total.rem_euclid(i128::from(NANOS_PER_SECOND)) as i32,
    })
}

/// `a + b` of two durations, field by field.
pub fn add_durations(a: Duration, b: Duration) -> Result<Duration> {
    let nanos = a.nanos + b.nanos;
    let carry = i64::from(nanos >= NANOS_PER_SECOND as i32);
    Ok(Duration {
        months: a.months.checked_add(b.months).ok_or_else(overflow)?,
        days: a.days.checked_add(b.days).ok_or_else(overflow)?,
        seconds: a
            .seconds
            .checked_add(b.seconds)
            .and_then(|s| s.checked_add(carry))
            .ok_or_else(overflow)?,
        nanos: nanos % NANOS_PER_SECOND as i32,
    })
}

/// `a - b` of two durations.
pub fn subtract_durations(a: Duration, b: Duration) -> Result<Duration> {
    add_durations(a, negate(b)?)
}

/// `d * factor`: each field scaled; fractions cascade downwards as in `duration()`.
pub fn scale(duration: Duration, factor: f64) -> Result<Duration> {
    if !factor.is_finite() {
        return fail("a duration cannot be scaled by an infinite or NaN number");
    }
    let mut parts = DurationParts::default();
    let scaled = |amount: f64| -> Result<Amount> {
        if amount.abs() >= 9.0e18 {
            return Err(overflow());
        }
        let whole = amount.trunc();
        Ok(Amount::Fraction(
            whole as i64,
            ((amount - whole) * 1e9).round() as i64,
        ))
    };
    parts.add("months", scaled(duration.months as f64 * factor)?)?;
    parts.add("days", scaled(duration.days as f64 * factor)?)?;
    parts.add("seconds", scaled(duration.seconds as f64 * factor)?)?;
    parts.add("nanoseconds", scaled(f64::from(duration.nanos) * factor)?)?;
    parts.finish()
}

/// `d * n` for an integer `n`: exact.
pub fn multiply(duration: Duration, factor: i64) -> Result<Duration> {
    let nanos = i128::from(duration.nanos) * i128::from(factor);
    let seconds = i128::from(duration.seconds) * i128::from(factor)
        + nanos.div_euclid(i128::from(NANOS_PER_SECOND));
    Ok(Duration {
        months: duration.months.checked_mul(factor).ok_or_else(overflow)?,
        days: duration.days.checked_mul(factor).ok_or_else(overflow)?,
        seconds: i64::try_from(seconds).map_err(|_| overflow())?,
        nanos: nanos.rem_euclid(i128::from(NANOS_PER_SECOND)) as i32,
    })
}

/// `t + d`: months and days move the calendar (the day of the month clamped to the
/// month's last), seconds move the clock; a date moves by the whole days of the seconds
/// only, a time wraps around midnight.
pub fn add_duration(value: &Temporal, duration: Duration) -> Result<Temporal> {
    // Months and days go separately: a jiff span has one sign for all its units, and
    // openCypher applies the months first (`P1M-14D` from 10-11 is 10-28).
    let months = Span::new().try_months(duration.months)?;
    let days = Span::new().try_days(duration.days)?;
    let clock = SignedDuration::new(duration.seconds, duration.nanos);
    Ok(match value {
        Temporal::Date(date) => {
            let whole_days = Span::new().try_days(duration.seconds / SECONDS_PER_DAY)?;
            let moved = date.checked_add(months)?.checked_add(days)?;
            Temporal::Date(moved.checked_add(whole_days)?)
        }
        Temporal::LocalTime(time) => Temporal::LocalTime(shift_time(*time, duration)),
        Temporal::Time(time, offset) => Temporal::Time(shift_time(*time, duration), *offset),
        Temporal::LocalDateTime(datetime) => {
            let moved = datetime.checked_add(months)?.checked_add(days)?;
            Temporal::LocalDateTime(moved.checked_add(clock)?)
        }
        Temporal::DateTime(zoned) => {
            let moved = zoned.checked_add(months)?.checked_add(days)?;
            Temporal::zoned(moved.checked_add(clock)?)
        }
        Temporal::Duration(other) => Temporal::Duration(add_durations(*other, duration)?),
    })
}

/// A time moved by a duration's seconds, wrapped into one day.
fn shift_time(time: Time, duration: Duration) -> Time {
    let day = SECONDS_PER_DAY * NANOS_PER_SECOND;
    let shift = (duration.seconds.rem_euclid(SECONDS_PER_DAY) * NANOS_PER_SECOND
        + i64::from(duration.nanos))
        % day;
    time_from_nanos(nanos_of_day(time) + shift)
}

/// Which amount `duration.between` and its variants compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BetweenUnit {
    /// Months, then days, then seconds (`duration.between`).
    All,
    /// Whole months only (`duration.inMonths`).
    Months,
    /// Whole days only (`duration.inDays`).
    Days,
    /// Seconds and nanoseconds only (`duration.inSeconds`).
    Seconds,
}

/// One side of `duration.between`, its parts.
struct Point {
    date: Option<Date>,
    time: Option<Time>,
    zone: Option<TimeZone>,
}

impl Point {
    fn of(value: &Temporal) -> Result<Point> {
        let (date, time, zone) = match value {
            Temporal::Date(date) => (Some(*date), None, None),
            Temporal::LocalTime(time) => (None, Some(*time), None),
            Temporal::Time(time, offset) => (None, Some(*time), Some(TimeZone::fixed(*offset))),
            Temporal::LocalDateTime(dt) => (Some(dt.date()), Some(dt.time()), None),
            Temporal::DateTime(zoned) => (
                Some(zoned.date()),
                Some(zoned.time()),
                Some(zoned.time_zone().clone()),
            ),
            Temporal::Duration(_) => return fail("duration.between() expects two instants"),
        };
        Ok(Point { date, time, zone })
    }
}

/// The duration from `from` to `to`. When one side has no date only the times of day
/// count; when one side has a zone the other is read in it; a date is at midnight.
pub fn between(from: &Temporal, to: &Temporal, unit: BetweenUnit) -> Result<Duration> {
    let (mut from, mut to) = (Point::of(from)?, Point::of(to)?);
    // A time of day alone is read on the other side's date, so that a clock change that
    // day counts (00:00 to 04:00 in Stockholm on 2017-10-29 is five hours).
    from.date = from.date.or(to.date);
    to.date = to.date.or(from.date);
    let zone = from.zone.clone().or_else(|| to.zone.clone());
    let (Some(from_date), Some(to_date)) = (from.date, to.date) else {
        return Ok(times_between(&from, &to, unit));
    };
    let from_local = from_date.to_datetime(from.time.unwrap_or(Time::midnight()));
    let to_local = to_date.to_datetime(to.time.unwrap_or(Time::midnight()));
    let zone = match zone {
        Some(zone) if from.time.is_some() || to.time.is_some() => zone,
        _ => return local_between(from_local, to_local, unit),
    };
    let from_zone = from.zone.unwrap_or_else(|| zone.clone());
    let to_zone = to.zone.unwrap_or_else(|| zone.clone());
    let start = from_zone.to_zoned_datetime(from_local)?;
    let end = to_zone.to_zoned_datetime(to_local)?;
    zoned_between(&start, &end, unit)
}

/// Between two times of day: seconds only (both read at UTC when both have offsets).
fn times_between(from: &Point, to: &Point, unit: BetweenUnit) -> Duration {
    if matches!(unit, BetweenUnit::Months | BetweenUnit::Days) {
        return Duration::default();
    }
    let at = |point: &Point| -> i64 {
        let nanos = point.time.map_or(0, nanos_of_day);
        match (&from.zone, &to.zone, &point.zone) {
            (Some(_), Some(_), Some(zone)) => {
                let offset = zone.to_offset(Timestamp::UNIX_EPOCH).seconds();
                nanos - i64::from(offset) * NANOS_PER_SECOND
            }
            _ => nanos,
        }
    };
    from_nanos(i128::from(at(to) - at(from)))
}

fn from_nanos(nanos: i128) -> Duration {
    Duration {
        seconds: nanos.div_euclid(i128::from(NANOS_PER_SECOND)) as i64,
        nanos: nanos.rem_euclid(i128::from(NANOS_PER_SECOND)) as i32,
        ..Duration::default()
    }
}

/// Between two local date-times: whole months, then whole days, then the rest, each
/// counted towards `to` as `java.time` does (a month is complete only once the day of
/// the month and the time of day are reached).
fn local_between(from: DateTime, to: DateTime, unit: BetweenUnit) -> Result<Duration> {
    let months = if matches!(unit, BetweenUnit::All | BetweenUnit::Months) {
        whole_months(from, to)
    } else {
        0
    };
    let from = from.checked_add(Span::new().try_months(months)?)?;
    let days = if matches!(unit, BetweenUnit::All | BetweenUnit::Days) {
        whole_days(from, to)
    } else {
        0
    };
    let from = from.checked_add(Span::new().try_days(days)?)?;
    let rest = if matches!(unit, BetweenUnit::All | BetweenUnit::Seconds) {
        from.duration_until(to).as_nanos()
    } else {
        0
    };
    Ok(Duration {
        months,
        days,
        ..from_nanos(rest)
    })
}

/// Between two zoned date-times: months and days on the wall clock of `from`'s zone,
/// the rest between instants (so a day with a clock change can last 23 or 25 hours).
fn zoned_between(from: &ZonedDateTime, to: &ZonedDateTime, unit: BetweenUnit) -> Result<Duration> {
    let to_local = to.with_time_zone(from.time_zone().clone()).datetime();
    let from_local = from.datetime();
    let months = if matches!(unit, BetweenUnit::All | BetweenUnit::Months) {
        whole_months(from_local, to_local)
    } else {
        0
    };
    let moved = from.checked_add(Span::new().try_months(months)?)?;
    let days = if matches!(unit, BetweenUnit::All | BetweenUnit::Days) {
        whole_days(moved.datetime(), to_local)
    } else {
        0
    };
    let moved = moved.checked_add(Span::new().try_days(days)?)?;
    let rest = if matches!(unit, BetweenUnit::All | BetweenUnit::Seconds) {
        moved.duration_until(to).as_nanos()
    } else {
        0
    };
    Ok(Duration {
        months,
        days,
        ..from_nanos(rest)
    })
}

/// Complete months from `from` to `to` (negative backwards).
fn whole_months(from: DateTime, to: DateTime) -> i64 {
    let end = adjusted_end_date(from, to);
    let start = from.date();
    let packed = |date: Date| {
        (i64::from(date.year()) * 12 + i64::from(date.month()) - 1) * 32 + i64::from(date.day())
    };
    (packed(end) - packed(start)) / 32
}

/// Complete days from `from` to `to`.
fn whole_days(from: DateTime, to: DateTime) -> i64 {
    let end = adjusted_end_date(from, to);
    from.date().duration_until(end).as_secs() / SECONDS_PER_DAY
}

/// The end date, a day nearer the start when its time of day is not yet reached.
fn adjusted_end_date(from: DateTime, to: DateTime) -> Date {
    let end = to.date();
    if end > from.date() && to.time() < from.time() {
        end.yesterday().unwrap_or(end)
    } else if end < from.date() && to.time() > from.time() {
        end.tomorrow().unwrap_or(end)
    } else {
        end
    }
}
