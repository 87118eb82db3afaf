//! The string forms of temporal values: those `java.time` prints, which openCypher adopted
//! and the TCK compares against (`2015-07-21T21:40:32.142+01:00[Europe/London]`, `21:40`,
//! `P14DT16H12M`).

use std::fmt::{self, Write as _};

use jiff::civil::{Date, Time};
use jiff::tz::Offset;

use super::{Duration, Temporal};

impl fmt::Display for Temporal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Temporal::Date(date) => write_date(f, *date),
            Temporal::LocalTime(time) => write_time(f, *time),
            Temporal::Time(time, offset) => {
                write_time(f, *time)?;
                write_offset(f, *offset)
            }
            Temporal::LocalDateTime(datetime) => {
                write_date(f, datetime.date())?;
                f.write_char('T')?;
                write_time(f, datetime.time())
            }
            Temporal::DateTime(zoned) => {
                write_date(f, zoned.date())?;
                f.write_char('T')?;
                write_time(f, zoned.time())?;
                write_offset(f, zoned.offset())?;
                match super::zone_name(zoned.time_zone()) {
                    Some(name) => write!(f, "[{name}]"),
                    None => Ok(()),
                }
            }
            Temporal::Duration(duration) => write!(f, "{duration}"),
        }
    }
}

/// `2015-07-21`; years below 1000 keep four digits, negative years a sign.
fn write_date(f: &mut impl fmt::Write, date: Date) -> fmt::Result {
    let year = date.year();
    if year < 0 {
        write!(f, "-{:04}", -i32::from(year))?;
    } else {
        write!(f, "{year:04}")?;
    }
    write!(f, "-{:02}-{:02}", date.month(), date.day())
}

/// `21:40`, `21:40:32`, `21:40:32.142`: seconds only when not zero, the fraction in
/// groups of three digits.
fn write_time(f: &mut impl fmt::Write, time: Time) -> fmt::Result {
    write!(f, "{:02}:{:02}", time.hour(), time.minute())?;
    let nanos = time.subsec_nanosecond();
    if time.second() == 0 && nanos == 0 {
        return Ok(());
    }
    write!(f, ":{:02}", time.second())?;
    write_fraction_in_groups(f, nanos)
}

/// `.142`, `.142000001`: the fraction of a second in 3, 6 or 9 digits; nothing for 0.
fn write_fraction_in_groups(f: &mut impl fmt::Write, nanos: i32) -> fmt::Result {
    if nanos == 0 {
        Ok(())
    } else if nanos % 1_000_000 == 0 {
        write!(f, ".{:03}", nanos / 1_000_000)
    } else if nanos % 1000 == 0 {
        write!(f, ".{:06}", nanos / 1000)
    } else {
        write!(f, ".{nanos:09}")
    }
}

/// `Z`, `+01:00`, `+00:53:28`.
pub(crate) fn write_offset(f: &mut impl fmt::Write, offset: Offset) -> fmt::Result {
    let seconds = offset.seconds();
    if seconds == 0 {
        return f.write_char('Z');
    }
    let sign = if seconds < 0 { '-' } else { '+' };
    let total = seconds.abs();
    write!(f, "{sign}{:02}:{:02}", total / 3600, total / 60 % 60)?;
    if total % 60 != 0 {
        write!(f, ":{:02}", total % 60)?;
    }
    Ok(())
}

/// The offset text alone (`+01:00`, `Z`), as `dt.offset` returns it.
pub(crate) fn offset_text(offset: Offset) -> String {
    let mut text = String::new();
    let _ = write_offset(&mut text, offset);
    text
}

impl fmt::Display for Duration {
    /// `P1Y2M3DT4H5M6.5S`: zero components left out, `PT0S` for nothing at all. A
    /// negative number of seconds with a fraction prints as one signed decimal
    /// (`PT-0.5S`, not `PT-1S` plus half a second).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::from("P");
        let mut part = |amount: i64, unit: char| {
            if amount != 0 {
                let _ = write!(text, "{amount}{unit}");
            }
        };
        part(self.months / 12, 'Y');
        part(self.months % 12, 'M');
        part(self.days, 'D');
        if self.seconds != 0 || self.nanos != 0 {
            let (mut seconds, mut nanos) = (self.seconds, i64::from(self.nanos));
            if seconds < 0 && nanos != 0 {
                seconds += 1;
                nanos -= super::NANOS_PER_SECOND;
            }
            text.push('T');
            let hours = seconds / 3600;
            let minutes = seconds / 60 % 60;
            let rest = seconds % 60;
            if hours != 0 {
                let _ = write!(text, "{hours}H");
            }
            if minutes != 0 {
                let _ = write!(text, "{minutes}M");
            }
            if rest != 0 || nanos != 0 {
                if rest == 0 && nanos < 0 {
                    text.push('-');
                }
                let _ = write!(text, "{}", rest);
                if nanos != 0 {
                    let digits = format!("{:09}", nanos.abs());
                    let _ = write!(text, ".{}", digits.trim_end_matches('0'));
                }
                text.push('S');
            }
        }
        if text.len() == 1 {
            text.push_str("T0S");
        }
        f.write_str(&text)
    }
}
