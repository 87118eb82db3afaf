//! Making temporal values: from maps of fields (`{year: 1984, week: 10, dayOfWeek: 3}`),
//! from other temporal values with fields replaced (`{date: d, hour: 12}`), from epoch
//! seconds, from the clock, and by truncation (`date.truncate('month', d, {day: 2})`).

use std::collections::BTreeMap;

use jiff::Timestamp;
use jiff::civil::{Date, Time};
use jiff::tz::{Offset, TimeZone};

use super::parse::{self, Amount, ordinal_date, week_date};
use super::{Duration, NANOS_PER_SECOND, Result, Temporal, TemporalError, TemporalKind, fail, utc};
use crate::value::Value;

/// Makes a value of `kind` from a map, a string or another temporal value (`date(x)`).
/// `clock` is the instant a map holding only a `timezone` means (`date({timezone: 'X'})`
/// is today there).
pub fn construct(kind: TemporalKind, argument: &Value, clock: Timestamp) -> Result<Temporal> {
    match argument {
        Value::String(text) => parse::parse(kind, text),
        Value::Map(fields) if kind == TemporalKind::Duration => {
            duration_from_map(fields).map(Temporal::Duration)
        }
        Value::Map(fields) => from_map(kind, fields, clock),
        Value::Temporal(Temporal::Duration(duration)) if kind == TemporalKind::Duration => {
            Ok(Temporal::Duration(*duration))
        }
        Value::Temporal(other) if kind != TemporalKind::Duration => {
            assemble(kind, &BTreeMap::new(), Bases::of(other, kind)?)
        }
        other => fail(format!(
            "{}() expects a map, a string or a temporal value, got {}",
            kind.name(),
            other.type_name()
        )),
    }
}

/// The date or time at `instant` (`date()`, `datetime.transaction('Europe/Paris')`), in
/// UTC or in `zone`.
pub fn now(kind: TemporalKind, instant: Timestamp, zone: Option<&str>) -> Result<Temporal> {
    let zone = match zone {
        Some(name) => zone_from_text(name)?,
        None => utc(),
    };
    let zoned = instant.to_zoned_datetime(zone);
    Ok(match kind {
        TemporalKind::Date => Temporal::Date(zoned.date()),
        TemporalKind::LocalTime => Temporal::LocalTime(zoned.time()),
        TemporalKind::Time => Temporal::Time(zoned.time(), zoned.offset()),
        TemporalKind::LocalDateTime => Temporal::LocalDateTime(zoned.datetime()),
        TemporalKind::DateTime => Temporal::zoned(zoned),
        TemporalKind::Duration => return fail("duration() needs an argument"),
    })
}

/// `datetime.fromepoch(seconds, nanoseconds)`: the UTC date-time that many seconds after
/// 1970-01-01T00:00Z.
pub fn from_epoch_seconds(seconds: i64, nanos: i64) -> Result<Temporal> {
    let total = i128::from(seconds) * i128::from(NANOS_PER_SECOND) + i128::from(nanos);
    Ok(super::at_instant(Timestamp::from_nanosecond(total)?, utc()))
}

/// `datetime.fromepochmillis(milliseconds)`.
pub fn from_epoch_millis(millis: i64) -> Result<Temporal> {
    Ok(super::at_instant(
        Timestamp::from_millisecond(millis)?,
        utc(),
    ))
}

/// What a map's `date`, `time` and `datetime` entries (or a temporal argument) supply.
#[derive(Default)]
struct Bases {
    date: Option<Date>,
    time: Option<Time>,
    /// The offset of the time supplied, if it has one.
    offset: Option<Offset>,
    /// The zone of the time supplied (a fixed offset for a `time`).
    zone: Option<TimeZone>,
}

impl Bases {
    /// Everything `value` supplies that a value of `kind` can use.
    fn of(value: &Temporal, kind: TemporalKind) -> Result<Bases> {
        let mut bases = Bases::default();
        match kind {
            TemporalKind::Date => bases.take_date(value)?,
            TemporalKind::LocalTime | TemporalKind::Time => bases.take_time(value)?,
            _ => bases.take_datetime(value)?,
        }
        Ok(bases)
    }

    fn take_date(&mut self, value: &Temporal) -> Result<()> {
        self.date = Some(match value {
            Temporal::Date(date) => *date,
            Temporal::LocalDateTime(datetime) => datetime.date(),
            Temporal::DateTime(zoned) => zoned.date(),
            other => return fail(format!("a {} has no date", other.type_name())),
        });
        Ok(())
    }

    fn take_time(&mut self, value: &Temporal) -> Result<()> {
        match value {
            Temporal::LocalTime(time) => self.time = Some(*time),
            Temporal::LocalDateTime(datetime) => self.time = Some(datetime.time()),
            Temporal::Time(time, offset) => {
                self.time = Some(*time);
                self.offset = Some(*offset);
                self.zone = Some(TimeZone::fixed(*offset));
            }
            Temporal::DateTime(zoned) => {
                self.time = Some(zoned.time());
                self.offset = Some(zoned.offset());
                self.zone = Some(zoned.time_zone().clone());
            }
            other => return fail(format!("a {} has no time", other.type_name())),
        }
        Ok(())
    }

    /// A date-time's date and time; a date alone supplies midnight.
    fn take_datetime(&mut self, value: &Temporal) -> Result<()> {
        if let Temporal::Date(date) = value {
            self.date = Some(*date);
            self.time = Some(Time::midnight());
            return Ok(());
        }
        self.take_date(value)?;
        self.take_time(value)
    }
}

/// Field names a map may use to make a date, a time or a date-time.
const TEMPORAL_KEYS: &[&str] = &[
    "date",
    "time",
    "datetime",
    "timezone",
    "year",
    "quarter",
    "month",
    "week",
    "day",
    "ordinalDay",
    "dayOfQuarter",
    "dayOfWeek",
    "hour",
    "minute",
    "second",
    "millisecond",
    "microsecond",
    "nanosecond",
    "epochSeconds",
    "epochMillis",
];

/// `date({year: 1984, month: 10, day: 11})`, `time({time: t, timezone: '+05:00'})`, ...
fn from_map(
    kind: TemporalKind,
    fields: &BTreeMap<String, Value>,
    clock: Timestamp,
) -> Result<Temporal> {
    if let Some(key) = fields
        .keys()
        .find(|key| !TEMPORAL_KEYS.contains(&key.as_str()))
    {
        return fail(format!("{}() has no field `{key}`", kind.name()));
    }
    if !fields.is_empty() && fields.keys().all(|key| key == "timezone") {
        let zone = text_field(fields, "timezone")?;
        return now(kind, clock, zone);
    }
    if fields.contains_key("epochSeconds") || fields.contains_key("epochMillis") {
        return from_epoch_fields(kind, fields);
    }
    let mut bases = Bases::default();
    if let Some(value) = temporal_field(fields, "datetime")? {
        bases.take_datetime(value)?;
    }
    if let Some(value) = temporal_field(fields, "date")? {
        bases.take_date(value)?;
    }
    if let Some(value) = temporal_field(fields, "time")? {
        bases.take_time(value)?;
    }
    assemble(kind, fields, bases)
}

/// `datetime({epochSeconds: 416779, nanosecond: 999999999, timezone: 'Europe/Paris'})`.
fn from_epoch_fields(kind: TemporalKind, fields: &BTreeMap<String, Value>) -> Result<Temporal> {
    if kind != TemporalKind::DateTime {
        return fail("epochSeconds and epochMillis make a datetime only");
    }
    let millis = int_field(fields, "epochMillis")?.unwrap_or(0);
    let seconds = int_field(fields, "epochSeconds")?.unwrap_or(0);
    let nanos = subsecond_nanos(fields)?.unwrap_or(0);
    let total = i128::from(seconds) * i128::from(NANOS_PER_SECOND)
        + i128::from(millis) * 1_000_000
        + i128::from(nanos);
    let zone = match text_field(fields, "timezone")? {
        Some(name) => zone_from_text(name)?,
        None => utc(),
    };
    Ok(super::at_instant(Timestamp::from_nanosecond(total)?, zone))
}

/// Builds the value of `kind` from the supplied bases with the map's fields replacing
/// theirs. A `timezone` converts a time that has a zone (same instant, new zone) and
/// attaches to one that has none.
fn assemble(
    kind: TemporalKind,
    fields: &BTreeMap<String, Value>,
    bases: Bases,
) -> Result<Temporal> {
    let target = match text_field(fields, "timezone")? {
        Some(name) => Some(zone_from_text(name)?),
        None => None,
    };
    Ok(match kind {
        TemporalKind::Date => Temporal::Date(build_date(fields, bases.date)?),
        TemporalKind::LocalTime => Temporal::LocalTime(build_time(fields, bases.time, false)?),
        TemporalKind::Time => {
            let time = build_time(fields, bases.time, false)?;
            time_at(time, bases.offset, target.as_ref())
        }
        TemporalKind::LocalDateTime => Temporal::LocalDateTime(
            build_date(fields, bases.date)?.to_datetime(build_time(fields, bases.time, false)?),
        ),
        TemporalKind::DateTime => {
            let local =
                build_date(fields, bases.date)?.to_datetime(build_time(fields, bases.time, false)?);
            let zoned = match (target, bases.zone) {
                (Some(target), Some(base)) => base.to_zoned_datetime(local)?.with_time_zone(target),
                (Some(zone), None) | (None, Some(zone)) => zone.to_zoned_datetime(local)?,
                (None, None) => utc().to_zoned_datetime(local)?,
            };
            Temporal::zoned(zoned)
        }
        TemporalKind::Duration => return fail("a duration is made from duration fields"),
    })
}

/// A `time` at the target zone's offset: converted when it had an offset, else attached.
fn time_at(time: Time, base: Option<Offset>, target: Option<&TimeZone>) -> Temporal {
    let target_offset = target.map(offset_of_zone);
    match (base, target_offset) {
        (Some(base), Some(target)) => {
            let shift = i64::from(target.seconds() - base.seconds()) * NANOS_PER_SECOND;
            Temporal::Time(
                super::time_from_nanos(super::nanos_of_day(time) + shift),
                target,
            )
        }
        (Some(offset), None) | (None, Some(offset)) => Temporal::Time(time, offset),
        (None, None) => Temporal::Time(time, Offset::UTC),
    }
}

/// The offset a time (which has no date) takes in `zone`: fixed zones have one; a named
/// zone's offset is today's.
fn offset_of_zone(zone: &TimeZone) -> Offset {
    zone.to_fixed_offset()
        .unwrap_or_else(|_| zone.to_offset(Timestamp::now()))
}

/// Which way a map gives a date.
enum DateForm {
    Calendar,
    Week,
    Ordinal,
    Quarter,
}

fn date_form(fields: &BTreeMap<String, Value>) -> DateForm {
    let has = |key: &str| fields.get(key).is_some_and(|v| !v.is_null());
    if has("week") || (has("dayOfWeek") && !has("month") && !has("day")) {
        DateForm::Week
    } else if has("ordinalDay") {
        DateForm::Ordinal
    } else if has("quarter") || has("dayOfQuarter") {
        DateForm::Quarter
    } else {
        DateForm::Calendar
    }
}

/// The date of the map's fields, each missing one taken from `base` (in the same form:
/// a week date keeps the base's weekday) or its smallest value; the year is required
/// without a base.
fn build_date(fields: &BTreeMap<String, Value>, base: Option<Date>) -> Result<Date> {
    let year = small_field::<i16>(fields, "year")?;
    let field = |key: &str| small_field::<i16>(fields, key);
    let need_year = |base_year: Option<i16>| {
        year.or(base_year)
            .ok_or_else(|| TemporalError("a date needs a year".into()))
    };
    match date_form(fields) {
        DateForm::Week => {
            let base_week = base.map(|date| date.iso_week_date());
            let year = need_year(base_week.map(|week| week.year()))?;
            let week = field("week")?
                .or(base_week.map(|w| i16::from(w.week())))
                .unwrap_or(1);
            let weekday = field("dayOfWeek")?
                .or(base_week.map(|w| i16::from(w.weekday().to_monday_one_offset())))
                .unwrap_or(1);
            week_date(year, narrow(week, "week")?, narrow(weekday, "dayOfWeek")?)
        }
        DateForm::Ordinal => {
            let year = need_year(base.map(|date| date.year()))?;
            ordinal_date(year, field("ordinalDay")?.unwrap_or(1))
        }
        DateForm::Quarter => {
            let year = need_year(base.map(|date| date.year()))?;
            let quarter = field("quarter")?.or(base.map(quarter_of)).unwrap_or(1);
            let day = field("dayOfQuarter")?
                .or(base.map(day_of_quarter))
                .unwrap_or(1);
            quarter_date(year, quarter, day)
        }
        DateForm::Calendar => {
            let year = need_year(base.map(|date| date.year()))?;
            let month = field("month")?
                .or(base.map(|d| i16::from(d.month())))
                .unwrap_or(1);
            let day = field("day")?
                .or(base.map(|d| i16::from(d.day())))
                .unwrap_or(1);
            Ok(Date::new(
                year,
                narrow(month, "month")?,
                narrow(day, "day")?,
            )?)
        }
    }
}

/// The quarter (1 to 4) of a date.
pub(crate) fn quarter_of(date: Date) -> i16 {
    (i16::from(date.month()) - 1) / 3 + 1
}

/// The day (from 1) of a date within its quarter.
pub(crate) fn day_of_quarter(date: Date) -> i16 {
    let first_month = (quarter_of(date) - 1) * 3 + 1;
    let first = Date::constant(date.year(), first_month as i8, 1);
    (date.day_of_year() - first.day_of_year()) + 1
}

/// The `day`-th day (from 1) of quarter `quarter` of `year`.
fn quarter_date(year: i16, quarter: i16, day: i16) -> Result<Date> {
    if !(1..=4).contains(&quarter) {
        return fail(format!("quarter {quarter} is not 1 to 4"));
    }
    let first = Date::new(year, ((quarter - 1) * 3 + 1) as i8, 1)?;
    let next = if quarter == 4 {
        None
    } else {
        Some(Date::new(year, (quarter * 3 + 1) as i8, 1)?)
    };
    let length = match next {
        Some(next) => next.day_of_year() - first.day_of_year(),
        None => first.days_in_year() - first.day_of_year() + 1,
    };
    if !(1..=length).contains(&day) {
        return fail(format!("day {day} is not in quarter {quarter} of {year}"));
    }
    ordinal_date(year, first.day_of_year() + day - 1)
}

/// The time of the map's fields over `base` (or midnight). The sub-second fields sum
/// (`{millisecond: 123, microsecond: 456}` is .123456) and replace the base's fraction,
/// or with `add_subsecond` add to it (truncation keeps the digits above its unit).
fn build_time(
    fields: &BTreeMap<String, Value>,
    base: Option<Time>,
    add_subsecond: bool,
) -> Result<Time> {
    let base = base.unwrap_or(Time::midnight());
    let hour = small_field::<i8>(fields, "hour")?.unwrap_or(base.hour());
    let minute = small_field::<i8>(fields, "minute")?.unwrap_or(base.minute());
    let second = small_field::<i8>(fields, "second")?.unwrap_or(base.second());
    let nanos = match subsecond_nanos(fields)? {
        Some(nanos) if add_subsecond => i64::from(base.subsec_nanosecond()) + nanos,
        Some(nanos) => nanos,
        None => i64::from(base.subsec_nanosecond()),
    };
    let nanos = i32::try_from(nanos)
        .ok()
        .filter(|n| (0..1_000_000_000).contains(n))
        .ok_or_else(|| TemporalError(format!("{nanos} nanoseconds is not within a second")))?;
    Ok(Time::new(hour, minute, second, nanos)?)
}

/// The sum of `millisecond`, `microsecond` and `nanosecond`, when any is given.
fn subsecond_nanos(fields: &BTreeMap<String, Value>) -> Result<Option<i64>> {
    let millis = int_field(fields, "millisecond")?;
    let micros = int_field(fields, "microsecond")?;
    let nanos = int_field(fields, "nanosecond")?;
    if millis.is_none() && micros.is_none() && nanos.is_none() {
        return Ok(None);
    }
    let (millis, micros, nanos) = (millis.unwrap_or(0), micros.unwrap_or(0), nanos.unwrap_or(0));
    if !(0..1000).contains(&millis) || !(0..1_000_000).contains(&micros) || nanos < 0 {
        return fail("millisecond, microsecond and nanosecond must fit in a second");
    }
    Ok(Some(millis * 1_000_000 + micros * 1000 + nanos))
}

/// An integer field, `None` when absent or null.
fn int_field(fields: &BTreeMap<String, Value>, key: &str) -> Result<Option<i64>> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Int(value)) => Ok(Some(*value)),
        Some(other) => fail(format!(
            "`{key}` must be an integer, got {}",
            other.type_name()
        )),
    }
}

/// An integer field that must fit a small type (a year, a month, an hour).
fn small_field<T: TryFrom<i64>>(fields: &BTreeMap<String, Value>, key: &str) -> Result<Option<T>> {
    match int_field(fields, key)? {
        None => Ok(None),
        Some(value) => T::try_from(value)
            .map(Some)
            .map_err(|_| TemporalError(format!("`{key}` {value} is out of range"))),
    }
}

fn narrow(value: i16, key: &str) -> Result<i8> {
    i8::try_from(value).map_err(|_| TemporalError(format!("`{key}` {value} is out of range")))
}

fn text_field<'m>(fields: &'m BTreeMap<String, Value>, key: &str) -> Result<Option<&'m str>> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => fail(format!(
            "`{key}` must be a string, got {}",
            other.type_name()
        )),
    }
}

fn temporal_field<'m>(
    fields: &'m BTreeMap<String, Value>,
    key: &str,
) -> Result<Option<&'m Temporal>> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Temporal(value)) => Ok(Some(value)),
        Some(other) => fail(format!(
            "`{key}` must be a temporal value, got {}",
            other.type_name()
        )),
    }
}

/// A named zone (`Europe/Stockholm`).
pub(crate) fn zone_from_name(name: &str) -> Result<TimeZone> {
    TimeZone::get(name).map_err(|_| TemporalError(format!("unknown time zone '{name}'")))
}

/// A zone written as an offset (`+01:00`, `Z`) or a name.
pub(crate) fn zone_from_text(text: &str) -> Result<TimeZone> {
    if text.starts_with(['+', '-']) || text.eq_ignore_ascii_case("z") {
        Ok(TimeZone::fixed(parse::parse_offset(text)?))
    } else {
        zone_from_name(text)
    }
}

/// Accumulates the parts of a duration exactly, in billionths of each unit, cascading
/// fractions downwards as openCypher does: a fraction of a month becomes days by the
/// average month (30.436875 days), a fraction of a day becomes seconds.
#[derive(Default)]
pub(crate) struct DurationParts {
    months: i128,
    days: i128,
    nanos: i128,
}

const BILLION: i128 = 1_000_000_000;
/// Average days of a month, in millionths (365.2425 / 12 = 30.436875).
const AVERAGE_MONTH_MICRODAYS: i128 = 30_436_875;

impl DurationParts {
    /// Adds `amount` of `unit` (`years`, `weeks`, `seconds`, ...).
    pub(crate) fn add(&mut self, unit: &str, amount: Amount) -> Result<()> {
        let billionths = match amount {
            Amount::Whole(whole) => i128::from(whole) * BILLION,
            Amount::Fraction(whole, nanos) => i128::from(whole) * BILLION + i128::from(nanos),
        };
        match unit {
            "years" => self.add_months(billionths * 12),
            "quarters" => self.add_months(billionths * 3),
            "months" => self.add_months(billionths),
            "weeks" => self.add_days(billionths * 7),
            "days" => self.add_days(billionths),
            "hours" => self.nanos += billionths * 3600,
            "minutes" => self.nanos += billionths * 60,
            "seconds" => self.nanos += billionths,
            "milliseconds" => self.nanos += billionths / 1000,
            "microseconds" => self.nanos += billionths / 1_000_000,
            "nanoseconds" => self.nanos += billionths / BILLION,
            other => return fail(format!("duration() has no field `{other}`")),
        }
        Ok(())
    }

    fn add_months(&mut self, billionths: i128) {
        self.months += billionths / BILLION;
        self.add_days(billionths % BILLION * AVERAGE_MONTH_MICRODAYS / 1_000_000);
    }

    fn add_days(&mut self, billionths: i128) {
        self.days += billionths / BILLION;
        self.nanos += billionths % BILLION * 86_400;
    }

    /// The duration, or an error when a part does not fit 64 bits.
    pub(crate) fn finish(self) -> Result<Duration> {
        let too_large = || TemporalError("the duration is too large".into());
        Ok(Duration {
            months: i64::try_from(self.months).map_err(|_| too_large())?,
            days: i64::try_from(self.days).map_err(|_| too_large())?,
            seconds: i64::try_from(self.nanos.div_euclid(BILLION)).map_err(|_| too_large())?,
            nanos: self.nanos.rem_euclid(BILLION) as i32,
        })
    }
}

/// `duration({days: 14, hours: 16.5})`: integer or float fields.
fn duration_from_map(fields: &BTreeMap<String, Value>) -> Result<Duration> {
    let mut parts = DurationParts::default();
    for (key, value) in fields {
        let amount = match value {
            Value::Null => continue,
            Value::Int(whole) => Amount::Whole(*whole),
            Value::Float(number) if number.is_finite() && number.abs() < 9.0e18 => {
                let whole = number.trunc();
                Amount::Fraction(whole as i64, ((number - whole) * 1e9).round() as i64)
            }
            other => {
                return fail(format!(
                    "duration field `{key}` must be a number, got {}",
                    other.type_name()
                ));
            }
        };
        parts.add(key, amount)?;
    }
    parts.finish()
}

/// The unit names `truncate` accepts, coarsest first.
const TRUNCATION_UNITS: &[&str] = &[
    "millennium",
    "century",
    "decade",
    "year",
    "weekYear",
    "quarter",
    "month",
    "week",
    "day",
    "hour",
    "minute",
    "second",
    "millisecond",
    "microsecond",
];

/// The rank of `day` in [`TRUNCATION_UNITS`]: units up to it cut the date.
const DAY_RANK: usize = 8;

/// `date.truncate('month', d, {day: 2})`: `value` cut down to the start of `unit`, then
/// made a value of `kind` with the map's fields replacing (sub-second fields: adding to)
/// what is left. A `timezone` field replaces the zone; it does not convert.
pub fn truncate(
    kind: TemporalKind,
    unit: &str,
    value: &Temporal,
    fields: &BTreeMap<String, Value>,
) -> Result<Temporal> {
    let Some(rank) = TRUNCATION_UNITS
        .iter()
        .position(|u| u.eq_ignore_ascii_case(unit))
    else {
        return fail(format!("'{unit}' is not a unit to truncate to"));
    };
    let has_date = !matches!(value, Temporal::LocalTime(_) | Temporal::Time(..));
    let makes_time_only = matches!(kind, TemporalKind::LocalTime | TemporalKind::Time);
    let mut bases = Bases::default();
    match value {
        Temporal::Duration(_) => return fail("a duration cannot be truncated"),
        Temporal::Date(_) if makes_time_only => {
            return fail(format!(
                "{}.truncate() needs a value with a time",
                kind.name()
            ));
        }
        // A time of day has no date to cut to a day or more, nor to give a date-time.
        _ if !has_date && (rank <= DAY_RANK || !makes_time_only) => {
            return fail(format!("cannot truncate a {} to {unit}", value.type_name()));
        }
        _ if has_date => bases.take_datetime(value)?,
        _ => bases.take_time(value)?,
    }
    if let Some(date) = bases.date {
        bases.date = Some(truncate_date(date, rank)?);
    }
    bases.time = bases.time.map(|time| truncate_time(time, rank));
    if let Some(name) = text_field(fields, "timezone")? {
        let zone = zone_from_text(name)?;
        bases.offset = Some(offset_of_zone(&zone));
        bases.zone = Some(zone);
    }
    assemble_truncated(kind, fields, bases)
}

/// Like [`assemble`], but the zone is the base's (already replaced by a given
/// `timezone`) and sub-second fields add.
fn assemble_truncated(
    kind: TemporalKind,
    fields: &BTreeMap<String, Value>,
    bases: Bases,
) -> Result<Temporal> {
    let time = || build_time(fields, bases.time, true);
    Ok(match kind {
        TemporalKind::Date => Temporal::Date(build_date(fields, bases.date)?),
        TemporalKind::LocalTime => Temporal::LocalTime(time()?),
        TemporalKind::Time => Temporal::Time(time()?, bases.offset.unwrap_or(Offset::UTC)),
        TemporalKind::LocalDateTime => {
            Temporal::LocalDateTime(build_date(fields, bases.date)?.to_datetime(time()?))
        }
        TemporalKind::DateTime => {
            let local = build_date(fields, bases.date)?.to_datetime(time()?);
            let zone = bases.zone.clone().unwrap_or_else(utc);
            Temporal::zoned(zone.to_zoned_datetime(local)?)
        }
        TemporalKind::Duration => return fail("a duration cannot be truncated"),
    })
}

/// The first day of the period of rank `rank` in [`TRUNCATION_UNITS`] holding `date`.
fn truncate_date(date: Date, rank: usize) -> Result<Date> {
    let year = date.year();
    let start_of_year = |year: i16| Date::new(year, 1, 1);
    Ok(match TRUNCATION_UNITS[rank] {
        "millennium" => start_of_year(year - year.rem_euclid(1000))?,
        "century" => start_of_year(year - year.rem_euclid(100))?,
        "decade" => start_of_year(year - year.rem_euclid(10))?,
        "year" => start_of_year(year)?,
        "weekYear" => week_date(date.iso_week_date().year(), 1, 1)?,
        "quarter" => Date::new(year, ((quarter_of(date) - 1) * 3 + 1) as i8, 1)?,
        "month" => date.first_of_month(),
        "week" => {
            let back = i64::from(date.weekday().to_monday_zero_offset());
            date.checked_sub(jiff::Span::new().days(back))?
        }
        _ => date,
    })
}

/// The start of the period of rank `rank` holding `time` (midnight for a day or more).
fn truncate_time(time: Time, rank: usize) -> Time {
    let nanos = super::nanos_of_day(time);
    let unit_nanos: i64 = match TRUNCATION_UNITS[rank] {
        "hour" => 3600 * NANOS_PER_SECOND,
        "minute" => 60 * NANOS_PER_SECOND,
        "second" => NANOS_PER_SECOND,
        "millisecond" => 1_000_000,
        "microsecond" => 1000,
        _ => return Time::midnight(),
    };
    super::time_from_nanos(nanos - nanos % unit_nanos)
}
