//! ISO 8601 text as openCypher reads it: calendar (`2015-07-21`, `20150721`), week
//! (`2015-W30-2`) and ordinal (`2015-202`) dates, times with an optional fraction, offset
//! and `[Zone/Name]`, and durations (`P14DT16H12M`, `P2012-02-02T14:37:21.545`).

use jiff::civil::{Date, ISOWeekDate, Time, Weekday};
use jiff::tz::{Offset, TimeZone};

use super::build::{DurationParts, zone_from_name};
use super::{Result, Temporal, TemporalKind, fail, utc};

/// Parses `text` as a value of `kind`.
pub(crate) fn parse(kind: TemporalKind, text: &str) -> Result<Temporal> {
    let text = text.trim();
    let invalid = || super::TemporalError(format!("'{text}' is not a valid {}", kind.name()));
    // Every form (zone names included) is ASCII; checking once lets the parsers below
    // slice by byte without landing inside a character.
    if !text.is_ascii() {
        return Err(invalid());
    }
    let parsed = match kind {
        TemporalKind::Date => parse_date(text).map(Temporal::Date),
        TemporalKind::LocalTime => parse_time(text).and_then(|parsed| match parsed.zone {
            ZoneText::None => Ok(Temporal::LocalTime(parsed.time)),
            _ => fail("a local time has no offset or time zone"),
        }),
        TemporalKind::Time => parse_time(text).map(|parsed| {
            let offset = match parsed.zone {
                ZoneText::None => Offset::UTC,
                ZoneText::Offset(offset) => offset,
                ZoneText::Named(_, Some(offset)) => offset,
                ZoneText::Named(zone, None) => zone.to_offset(jiff::Timestamp::now()),
            };
            Temporal::Time(parsed.time, offset)
        }),
        TemporalKind::LocalDateTime => {
            let (date, time) = split_datetime(text)?;
            match time.zone {
                ZoneText::None => Ok(Temporal::LocalDateTime(date.to_datetime(time.time))),
                _ => fail("a local date-time has no offset or time zone"),
            }
        }
        TemporalKind::DateTime => parse_zoned(text),
        TemporalKind::Duration => parse_duration(text).map(Temporal::Duration),
    };
    parsed.map_err(|error| super::TemporalError(format!("{}: {error}", invalid().0)))
}

/// A date-time with its offset or zone; UTC when the text names neither.
fn parse_zoned(text: &str) -> Result<Temporal> {
    let (date, time) = split_datetime(text)?;
    let local = date.to_datetime(time.time);
    let zoned = match time.zone {
        ZoneText::None => utc().to_zoned_datetime(local)?,
        ZoneText::Offset(offset) => TimeZone::fixed(offset).to_zoned_datetime(local)?,
        // The offset picks the instant when a clock change makes the local time ambiguous.
        ZoneText::Named(zone, Some(offset)) => offset.to_timestamp(local)?.to_zoned_datetime(zone),
        ZoneText::Named(zone, None) => zone.to_zoned_datetime(local)?,
    };
    Ok(Temporal::zoned(zoned))
}

/// The date and time of `2015-07-21T21:40`; a date alone means midnight.
fn split_datetime(text: &str) -> Result<(Date, ParsedTime)> {
    match text.find(['T', 't']) {
        Some(at) => Ok((parse_date(&text[..at])?, parse_time(&text[at + 1..])?)),
        None => Ok((
            parse_date(text)?,
            ParsedTime {
                time: Time::midnight(),
                zone: ZoneText::None,
            },
        )),
    }
}

/// `2015-07-21`, `20150721`, `2015-07`, `2015-W30-2`, `2015W302`, `2015-202`, `2015`.
pub(crate) fn parse_date(text: &str) -> Result<Date> {
    let (year, rest) = split_year(text)?;
    let rest = rest.strip_prefix('-').unwrap_or(rest);
    if let Some(week_text) = rest.strip_prefix(['W', 'w']) {
        let digits: String = week_text.chars().filter(|c| *c != '-').collect();
        let (week, day) = match digits.len() {
            2 => (number(&digits)?, 1),
            3 => (number(&digits[..2])?, number(&digits[2..])?),
            _ => return fail("a week date needs a two-digit week and an optional day"),
        };
        return week_date(year, week, day);
    }
    let parts: Vec<&str> = rest.split('-').collect();
    match parts.as_slice() {
        [""] => Ok(Date::new(year, 1, 1)?),
        [month] if month.len() == 2 => Ok(Date::new(year, number(month)?, 1)?),
        [ordinal] if ordinal.len() == 3 => ordinal_date(year, number(ordinal)?),
        [month_day] if month_day.len() == 4 => Ok(Date::new(
            year,
            number(&month_day[..2])?,
            number(&month_day[2..])?,
        )?),
        [month, day] if month.len() == 2 && day.len() == 2 => {
            Ok(Date::new(year, number(month)?, number(day)?)?)
        }
        _ => fail("expected a date such as 2015-07-21"),
    }
}

/// The year and the text after it: four digits, or a sign and any number of digits.
fn split_year(text: &str) -> Result<(i16, &str)> {
    let (sign, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text.strip_prefix('+').unwrap_or(text)),
    };
    let length = if unsigned.len() == text.len() {
        4
    } else {
        unsigned
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(unsigned.len())
    };
    if unsigned.len() < length || !unsigned[..length].bytes().all(|b| b.is_ascii_digit()) {
        return fail("expected a four-digit year");
    }
    let year: i64 = unsigned[..length]
        .parse()
        .map_err(|_| super::TemporalError("the year is out of range".into()))?;
    let year = i16::try_from(sign * year)
        .ok()
        .filter(|year| (-9999..=9999).contains(year));
    match year {
        Some(year) => Ok((year, &unsigned[length..])),
        None => fail("years outside -9999 to 9999 are not supported"),
    }
}

/// A small unsigned number of digits only.
fn number<T: TryFrom<i64>>(digits: &str) -> Result<T> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return fail(format!("'{digits}' is not a number"));
    }
    digits
        .parse::<i64>()
        .ok()
        .and_then(|value| T::try_from(value).ok())
        .ok_or_else(|| super::TemporalError(format!("{digits} is out of range")))
}

/// The date of ISO week `week` (1 to 53) and weekday `day` (1 = Monday) of `year`.
pub(crate) fn week_date(year: i16, week: i8, day: i8) -> Result<Date> {
    let weekday = Weekday::from_monday_one_offset(day)?;
    Ok(ISOWeekDate::new(year, week, weekday)?.date())
}

/// The `ordinal`-th day (from 1) of `year`.
pub(crate) fn ordinal_date(year: i16, ordinal: i16) -> Result<Date> {
    Ok(Date::new(year, 1, 1)?.with().day_of_year(ordinal).build()?)
}

/// An offset or a zone written after a time.
pub(crate) enum ZoneText {
    None,
    Offset(Offset),
    /// A `[Zone/Name]`, with the offset written before it, if any.
    Named(TimeZone, Option<Offset>),
}

pub(crate) struct ParsedTime {
    pub(crate) time: Time,
    pub(crate) zone: ZoneText,
}

/// `21:40:32.142`, `214032.142`, `21:40`, `2140`, `21`, each optionally followed by `Z`,
/// `+01:00`, `+0100`, `+01` and then `[Europe/London]`.
pub(crate) fn parse_time(text: &str) -> Result<ParsedTime> {
    let (text, zone_name) = match text.find('[') {
        Some(at) if text.ends_with(']') => (&text[..at], Some(&text[at + 1..text.len() - 1])),
        Some(_) => return fail("an unclosed '['"),
        None => (text, None),
    };
    let (clock, offset) = match text.find(['Z', 'z', '+', '-']) {
        Some(at) => (&text[..at], Some(parse_offset(&text[at..])?)),
        None => (text, None),
    };
    let time = parse_clock(clock)?;
    let zone = match (zone_name, offset) {
        (Some(name), offset) => ZoneText::Named(zone_from_name(name)?, offset),
        (None, Some(offset)) => ZoneText::Offset(offset),
        (None, None) => ZoneText::None,
    };
    Ok(ParsedTime { time, zone })
}

/// The clock part of a time: hours, minutes and seconds with or without colons, and a
/// fraction of up to nine digits after `.` or `,`.
fn parse_clock(text: &str) -> Result<Time> {
    let (whole, fraction) = match text.find(['.', ',']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let digits: String = whole.chars().filter(|c| *c != ':').collect();
    let colons = whole.len() - digits.len();
    let fields = digits.len() / 2;
    if !digits.len().is_multiple_of(2)
        || !(1..=3).contains(&fields)
        || (colons != 0 && colons + 1 != fields)
    {
        return fail("expected a time such as 21:40:32");
    }
    let field = |index: usize| number::<i8>(&digits[index * 2..index * 2 + 2]);
    let hour = field(0)?;
    let minute = if fields > 1 { field(1)? } else { 0 };
    let second = if fields > 2 { field(2)? } else { 0 };
    let nanos = match fraction {
        Some(_) if fields < 3 => return fail("a fraction needs seconds"),
        Some(fraction) => fraction_nanos(fraction)?,
        None => 0,
    };
    Ok(Time::new(hour, minute, second, nanos)?)
}

/// The nanoseconds of a decimal fraction's digits (`142` is 142,000,000).
pub(crate) fn fraction_nanos(digits: &str) -> Result<i32> {
    if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return fail("a fraction of a second has one to nine digits");
    }
    let padded = format!("{digits:0<9}");
    number(&padded)
}

/// `Z`, `+01:00`, `+0100`, `+01`, `-02:05:59`.
pub(crate) fn parse_offset(text: &str) -> Result<Offset> {
    if text.eq_ignore_ascii_case("z") {
        return Ok(Offset::UTC);
    }
    let (sign, rest) = match text.split_at_checked(1) {
        Some(("+", rest)) => (1, rest),
        Some(("-", rest)) => (-1, rest),
        _ => return fail(format!("'{text}' is not an offset")),
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if !matches!(digits.len(), 2 | 4 | 6) {
        return fail(format!("'{text}' is not an offset"));
    }
    let field = |index: usize| -> Result<i32> {
        match digits.get(index * 2..index * 2 + 2) {
            Some(pair) => number(pair),
            None => Ok(0),
        }
    };
    let (hours, minutes, seconds) = (field(0)?, field(1)?, field(2)?);
    if hours > 18 || minutes > 59 || seconds > 59 {
        return fail(format!("the offset '{text}' is out of range"));
    }
    let total = sign * (hours * 3600 + minutes * 60 + seconds);
    if total.abs() > 18 * 3600 {
        return fail(format!("the offset '{text}' is out of range"));
    }
    Ok(Offset::from_seconds(total)?)
}

/// `P1Y2M3W4DT5H6M7.5S` (each part optional, any may be negative or have a fraction) or
/// `P2012-02-02T14:37:21.545`.
pub(crate) fn parse_duration(text: &str) -> Result<super::Duration> {
    let (negated, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let Some(body) = body.strip_prefix(['P', 'p']) else {
        return fail("a duration starts with P");
    };
    let mut parts = DurationParts::default();
    // `P2012-02-02...`: four digits and a dash; `P12Y5M-14D` is the designated form.
    let alternative =
        body.find(|c: char| !c.is_ascii_digit()) == Some(4) && body[4..].starts_with('-');
    if alternative {
        alternative_duration(body, &mut parts)?;
    } else {
        designated_duration(body, &mut parts)?;
    }
    let duration = parts.finish()?;
    if negated {
        super::arith::negate(duration)
    } else {
        Ok(duration)
    }
}

/// `1Y2M3W4DT5H6M7.5S`: numbers each followed by a unit letter, `M` meaning months
/// before the `T` and minutes after it.
fn designated_duration(body: &str, parts: &mut DurationParts) -> Result<()> {
    let (date_part, time_part) = match body.find(['T', 't']) {
        Some(at) => (&body[..at], Some(&body[at + 1..])),
        None => (body, None),
    };
    if body.is_empty() || time_part == Some("") {
        return fail("a duration needs at least one part");
    }
    for (amount, unit) in designated_parts(date_part)? {
        match unit {
            'Y' => parts.add("years", amount)?,
            'M' => parts.add("months", amount)?,
            'W' => parts.add("weeks", amount)?,
            'D' => parts.add("days", amount)?,
            other => return fail(format!("'{other}' is not a date unit of a duration")),
        }
    }
    for (amount, unit) in designated_parts(time_part.unwrap_or(""))? {
        match unit {
            'H' => parts.add("hours", amount)?,
            'M' => parts.add("minutes", amount)?,
            'S' => parts.add("seconds", amount)?,
            other => return fail(format!("'{other}' is not a time unit of a duration")),
        }
    }
    Ok(())
}

/// A number of a duration's text: whole, or with a fraction kept exactly in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Amount {
    Whole(i64),
    /// Whole part and fraction in nanoseconds of one unit, both carrying the sign.
    Fraction(i64, i64),
}

/// The `(amount, unit)` pairs of `5H6M7.5S`.
fn designated_parts(text: &str) -> Result<Vec<(Amount, char)>> {
    let mut pairs = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let Some(at) = rest.find(|c: char| c.is_ascii_alphabetic()) else {
            return fail(format!("'{rest}' has no unit"));
        };
        let unit = rest[at..]
            .chars()
            .next()
            .unwrap_or('?')
            .to_ascii_uppercase();
        pairs.push((parse_amount(&rest[..at])?, unit));
        rest = &rest[at + 1..];
    }
    Ok(pairs)
}

/// `-7.5` as whole and fractional nanoseconds.
pub(crate) fn parse_amount(text: &str) -> Result<Amount> {
    let (sign, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text.strip_prefix('+').unwrap_or(text)),
    };
    let (whole, fraction) = match unsigned.find(['.', ',']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let whole: i64 = number(whole)?;
    Ok(match fraction {
        None => Amount::Whole(sign * whole),
        Some(digits) => Amount::Fraction(
            sign * whole,
            i64::from(sign as i32 * fraction_nanos(digits)?),
        ),
    })
}

/// `2012-02-02T14:37:21.545`: a date-time's fields read as amounts.
fn alternative_duration(body: &str, parts: &mut DurationParts) -> Result<()> {
    let (date_part, time_part) = match body.find(['T', 't']) {
        Some(at) => (&body[..at], Some(&body[at + 1..])),
        None => (body, None),
    };
    let date_fields: Vec<&str> = date_part.split('-').collect();
    let [years, months, days] = date_fields.as_slice() else {
        return fail("expected P<years>-<months>-<days>");
    };
    parts.add("years", Amount::Whole(number(years)?))?;
    parts.add("months", Amount::Whole(number(months)?))?;
    parts.add("days", Amount::Whole(number(days)?))?;
    if let Some(time_part) = time_part {
        let fields: Vec<&str> = time_part.split(':').collect();
        let [hours, minutes, seconds] = fields.as_slice() else {
            return fail("expected T<hours>:<minutes>:<seconds>");
        };
        parts.add("hours", Amount::Whole(number(hours)?))?;
        parts.add("minutes", Amount::Whole(number(minutes)?))?;
        parts.add("seconds", parse_amount(seconds)?)?;
    }
    Ok(())
}
