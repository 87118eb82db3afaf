//! Temporal values as plain numbers, shared by the language and the store.

/// A temporal value as plain numbers: days, nanoseconds and seconds since 1970-01-01,
/// offsets in seconds east of UTC and zone names. Writable graphs store these parts
/// (storage needs no calendar code); BQL's temporal values convert to and from them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TemporalParts {
    /// A date: days since 1970-01-01.
    Date {
        /// Days since 1970-01-01 (negative before).
        epoch_day: i64,
    },
    /// A time of day without an offset.
    LocalTime {
        /// Nanoseconds since midnight.
        nanos_of_day: i64,
    },
    /// A time of day at an offset from UTC.
    Time {
        /// Nanoseconds since midnight, local to the offset.
        nanos_of_day: i64,
        /// The offset, in seconds east of UTC.
        offset_seconds: i32,
    },
    /// A date and time without a time zone, counted as if it were UTC.
    LocalDateTime {
        /// Seconds since 1970-01-01T00:00 of the wall clock.
        epoch_second: i64,
        /// Nanoseconds within the second.
        nanos: i32,
    },
    /// An instant in a time zone.
    DateTime {
        /// Seconds since 1970-01-01T00:00Z.
        epoch_second: i64,
        /// Nanoseconds within the second.
        nanos: i32,
        /// The offset at that instant, in seconds east of UTC.
        offset_seconds: i32,
        /// The IANA zone name (`Europe/Stockholm`), or empty for a fixed offset.
        zone: String,
    },
    /// An openCypher duration.
    Duration {
        /// Months.
        months: i64,
        /// Days.
        days: i64,
        /// Seconds.
        seconds: i64,
        /// Nanoseconds within the second, `0..1_000_000_000`.
        nanos: i32,
    },
}
