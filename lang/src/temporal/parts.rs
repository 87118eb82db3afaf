//! Temporal values as plain numbers, for storage: days, nanoseconds and seconds since
//! 1970-01-01, offsets in seconds and zone names ([`TemporalParts`], defined in
//! `batho-schema`, which the store also reads and writes).

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::{Offset, TimeZone};
use jiff::{SignedDuration, Timestamp};

use super::build::zone_from_name;
use super::{Duration, NANOS_PER_SECOND, Result, SECONDS_PER_DAY, Temporal, fail, nanos_of_day};

pub use batho_schema::TemporalParts;

const EPOCH: Date = Date::constant(1970, 1, 1);

impl Temporal {
    /// The value as plain numbers.
    pub fn to_parts(&self) -> TemporalParts {
        match self {
            Temporal::Date(date) => TemporalParts::Date {
                epoch_day: EPOCH.duration_until(*date).as_secs() / SECONDS_PER_DAY,
            },
            Temporal::LocalTime(time) => TemporalParts::LocalTime {
                nanos_of_day: nanos_of_day(*time),
            },
            Temporal::Time(time, offset) => TemporalParts::Time {
                nanos_of_day: nanos_of_day(*time),
                offset_seconds: offset.seconds(),
            },
            Temporal::LocalDateTime(datetime) => {
                let since = EPOCH
                    .to_datetime(Time::midnight())
                    .duration_until(*datetime);
                TemporalParts::LocalDateTime {
                    epoch_second: since.as_secs() - i64::from(since.subsec_nanos() < 0),
                    nanos: since.subsec_nanos().rem_euclid(NANOS_PER_SECOND as i32),
                }
            }
            Temporal::DateTime(zoned) => {
                let nanos = zoned.timestamp().as_nanosecond();
                let billion = i128::from(NANOS_PER_SECOND);
                TemporalParts::DateTime {
                    epoch_second: nanos.div_euclid(billion) as i64,
                    nanos: nanos.rem_euclid(billion) as i32,
                    offset_seconds: zoned.offset().seconds(),
                    zone: super::zone_name(zoned.time_zone())
                        .unwrap_or("")
                        .to_string(),
                }
            }
            Temporal::Duration(duration) => TemporalParts::Duration {
                months: duration.months,
                days: duration.days,
                seconds: duration.seconds,
                nanos: duration.nanos,
            },
        }
    }

    /// The value of stored parts, or an error for parts out of range.
    pub fn from_parts(parts: &TemporalParts) -> Result<Temporal> {
        Ok(match parts {
            TemporalParts::Date { epoch_day } => Temporal::Date(day_after_epoch(*epoch_day)?),
            TemporalParts::LocalTime { nanos_of_day } => {
                Temporal::LocalTime(time_of(*nanos_of_day)?)
            }
            TemporalParts::Time {
                nanos_of_day,
                offset_seconds,
            } => Temporal::Time(
                time_of(*nanos_of_day)?,
                Offset::from_seconds(*offset_seconds)?,
            ),
            TemporalParts::LocalDateTime {
                epoch_second,
                nanos,
            } => {
                if !(0..NANOS_PER_SECOND as i32).contains(nanos) {
                    return fail("a stored date-time has nanoseconds outside a second");
                }
                let since = SignedDuration::new(*epoch_second, *nanos);
                let epoch: DateTime = EPOCH.to_datetime(Time::midnight());
                Temporal::LocalDateTime(epoch.checked_add(since)?)
            }
            TemporalParts::DateTime {
                epoch_second,
                nanos,
                offset_seconds,
                zone,
            } => {
                let instant = Timestamp::from_nanosecond(
                    i128::from(*epoch_second) * i128::from(NANOS_PER_SECOND) + i128::from(*nanos),
                )?;
                let zone = if zone.is_empty() {
                    TimeZone::fixed(Offset::from_seconds(*offset_seconds)?)
                } else {
                    zone_from_name(zone)?
                };
                Temporal::zoned(instant.to_zoned_datetime(zone))
            }
            TemporalParts::Duration {
                months,
                days,
                seconds,
                nanos,
            } => {
                if !(0..NANOS_PER_SECOND as i32).contains(nanos) {
                    return fail("a stored duration has nanoseconds outside a second");
                }
                Temporal::Duration(Duration {
                    months: *months,
                    days: *days,
                    seconds: *seconds,
                    nanos: *nanos,
                })
            }
        })
    }
}

fn day_after_epoch(days: i64) -> Result<Date> {
    Ok(EPOCH.checked_add(jiff::Span::new().try_days(days)?)?)
}

fn time_of(nanos: i64) -> Result<Time> {
    if !(0..SECONDS_PER_DAY * NANOS_PER_SECOND).contains(&nanos) {
        return fail("a stored time is outside one day");
    }
    Ok(super::time_from_nanos(nanos))
}
