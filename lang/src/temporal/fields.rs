//! Property access on temporal values (`d.year`, `t.offsetMinutes`, `dur.days`).

use jiff::civil::{Date, Time};
use jiff::tz::Offset;

use super::build::{day_of_quarter, quarter_of};
use super::format::offset_text;
use super::{Duration, NANOS_PER_SECOND, Result, Temporal, fail};
use crate::value::Value;

impl Temporal {
    /// The value of the accessor `key`, or an error naming the type when it has none.
    pub fn field(&self, key: &str) -> Result<Value> {
        let found = match self {
            Temporal::Date(date) => date_field(*date, key),
            Temporal::LocalTime(time) => time_field(*time, key),
            Temporal::Time(time, offset) => {
                time_field(*time, key).or_else(|| offset_field(*offset, None, key))
            }
            Temporal::LocalDateTime(datetime) => {
                date_field(datetime.date(), key).or_else(|| time_field(datetime.time(), key))
            }
            Temporal::DateTime(zoned) => date_field(zoned.date(), key)
                .or_else(|| time_field(zoned.time(), key))
                .or_else(|| offset_field(zoned.offset(), super::zone_name(zoned.time_zone()), key))
                .or_else(|| epoch_field(zoned.timestamp(), key)),
            Temporal::Duration(duration) => duration_field(*duration, key),
        };
        match found {
            Some(value) => Ok(value),
            None => fail(format!("a {} has no field `{key}`", self.type_name())),
        }
    }
}

fn date_field(date: Date, key: &str) -> Option<Value> {
    let week = date.iso_week_date();
    Some(Value::Int(match key {
        "year" => i64::from(date.year()),
        "quarter" => i64::from(quarter_of(date)),
        "month" => i64::from(date.month()),
        "week" => i64::from(week.week()),
        "weekYear" => i64::from(week.year()),
        "day" => i64::from(date.day()),
        "ordinalDay" => i64::from(date.day_of_year()),
        "dayOfWeek" | "weekDay" => i64::from(date.weekday().to_monday_one_offset()),
        "dayOfQuarter" => i64::from(day_of_quarter(date)),
        _ => return None,
    }))
}

fn time_field(time: Time, key: &str) -> Option<Value> {
    let nanos = i64::from(time.subsec_nanosecond());
    Some(Value::Int(match key {
        "hour" => i64::from(time.hour()),
        "minute" => i64::from(time.minute()),
        "second" => i64::from(time.second()),
        "millisecond" => nanos / 1_000_000,
        "microsecond" => nanos / 1000,
        "nanosecond" => nanos,
        _ => return None,
    }))
}

/// `timezone` is the zone's name, or the offset for a fixed offset.
fn offset_field(offset: Offset, zone_name: Option<&str>, key: &str) -> Option<Value> {
    Some(match key {
        "timezone" => Value::String(zone_name.map_or_else(|| offset_text(offset), str::to_string)),
        "offset" => Value::String(offset_text(offset)),
        "offsetMinutes" => Value::Int(i64::from(offset.seconds() / 60)),
        "offsetSeconds" => Value::Int(i64::from(offset.seconds())),
        _ => return None,
    })
}

fn epoch_field(timestamp: jiff::Timestamp, key: &str) -> Option<Value> {
    Some(Value::Int(match key {
        "epochSeconds" => timestamp.as_second(),
        "epochMillis" => timestamp.as_millisecond(),
        _ => return None,
    }))
}

/// The totals (`months`, `seconds`) and the remainders within the next larger unit
/// (`monthsOfYear`, `secondsOfMinute`, `nanosecondsOfSecond`).
fn duration_field(duration: Duration, key: &str) -> Option<Value> {
    let Duration {
        months,
        days,
        seconds,
        nanos,
    } = duration;
    let nanos = i64::from(nanos);
    Some(Value::Int(match key {
        "years" => months / 12,
        "quarters" => months / 3,
        "months" => months,
        "weeks" => days / 7,
        "days" => days,
        "hours" => seconds / 3600,
        "minutes" => seconds / 60,
        "seconds" => seconds,
        "milliseconds" => seconds
            .saturating_mul(1000)
            .saturating_add(nanos / 1_000_000),
        "microseconds" => seconds
            .saturating_mul(1_000_000)
            .saturating_add(nanos / 1000),
        "nanoseconds" => seconds
            .saturating_mul(NANOS_PER_SECOND)
            .saturating_add(nanos),
        "quartersOfYear" => months / 3 % 4,
        "monthsOfQuarter" => months % 3,
        "monthsOfYear" => months % 12,
        "daysOfWeek" => days % 7,
        "minutesOfHour" => seconds / 60 % 60,
        "secondsOfMinute" => seconds % 60,
        "millisecondsOfSecond" => nanos / 1_000_000,
        "microsecondsOfSecond" => nanos / 1000,
        "nanosecondsOfSecond" => nanos,
        _ => return None,
    }))
}
