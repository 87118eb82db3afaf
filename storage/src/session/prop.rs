//! Property values of writable graphs and their byte encoding, shared by the write-ahead
//! log and checkpoints.
//!
//! The storage crate does not know BQL's `Value`; the engine converts at the boundary.
//! Every decode is bounded: lengths are checked against the bytes left before anything is
//! allocated, and nesting stops at [`MAX_NESTING`], so a damaged log or checkpoint yields
//! an error, never a panic or a huge allocation.

use std::collections::BTreeMap;

pub use batho_schema::TemporalParts;

/// A stored property value. `Null` is never stored on an entity (setting a property to
/// null removes it) but may appear inside lists and maps.
#[derive(Clone, Debug, PartialEq)]
pub enum PropValue {
    /// `null` (inside lists and maps only).
    Null,
    /// A boolean.
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A 64-bit float.
    Float(f64),
    /// A string.
    String(String),
    /// A list.
    List(Vec<PropValue>),
    /// A map with string keys.
    Map(BTreeMap<String, PropValue>),
    /// A date, time, date-time or duration, by its numeric parts.
    Temporal(TemporalParts),
}

/// Deepest list/map nesting a stored value may have. Writers refuse deeper values
/// ([`PropValue::depth`]), so everything written can be read back.
pub const MAX_NESTING: usize = 256;

impl PropValue {
    /// Nesting depth: 0 for scalars, 1 + the deepest element for lists and maps.
    pub fn depth(&self) -> usize {
        match self {
            PropValue::List(items) => 1 + items.iter().map(PropValue::depth).max().unwrap_or(0),
            PropValue::Map(entries) => {
                1 + entries.values().map(PropValue::depth).max().unwrap_or(0)
            }
            _ => 0,
        }
    }
}

const TAG_NULL: u8 = 0;
const TAG_FALSE: u8 = 1;
const TAG_TRUE: u8 = 2;
const TAG_INT: u8 = 3;
const TAG_FLOAT: u8 = 4;
const TAG_STRING: u8 = 5;
const TAG_LIST: u8 = 6;
const TAG_MAP: u8 = 7;
// Temporal tags came later; the tags above keep their meaning, so older logs still read.
const TAG_DATE: u8 = 8;
const TAG_LOCAL_TIME: u8 = 9;
const TAG_TIME: u8 = 10;
const TAG_LOCAL_DATE_TIME: u8 = 11;
const TAG_DATE_TIME: u8 = 12;
const TAG_DURATION: u8 = 13;

/// Appends `value` as an unsigned LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a length-prefixed UTF-8 string.
pub(crate) fn put_string(out: &mut Vec<u8>, text: &str) {
    put_varint(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

/// Appends a zigzag varint: small negative numbers stay short.
fn put_signed(out: &mut Vec<u8>, number: i64) {
    put_varint(out, ((number << 1) ^ (number >> 63)) as u64);
}

/// Appends the encoding of a temporal value: its tag and its parts as zigzag varints (the
/// zone name as a string).
fn put_temporal(out: &mut Vec<u8>, value: &TemporalParts) {
    match value {
        TemporalParts::Date { epoch_day } => {
            out.push(TAG_DATE);
            put_signed(out, *epoch_day);
        }
        TemporalParts::LocalTime { nanos_of_day } => {
            out.push(TAG_LOCAL_TIME);
            put_signed(out, *nanos_of_day);
        }
        TemporalParts::Time {
            nanos_of_day,
            offset_seconds,
        } => {
            out.push(TAG_TIME);
            put_signed(out, *nanos_of_day);
            put_signed(out, i64::from(*offset_seconds));
        }
        TemporalParts::LocalDateTime {
            epoch_second,
            nanos,
        } => {
            out.push(TAG_LOCAL_DATE_TIME);
            put_signed(out, *epoch_second);
            put_signed(out, i64::from(*nanos));
        }
        TemporalParts::DateTime {
            epoch_second,
            nanos,
            offset_seconds,
            zone,
        } => {
            out.push(TAG_DATE_TIME);
            put_signed(out, *epoch_second);
            put_signed(out, i64::from(*nanos));
            put_signed(out, i64::from(*offset_seconds));
            put_string(out, zone);
        }
        TemporalParts::Duration {
            months,
            days,
            seconds,
            nanos,
        } => {
            out.push(TAG_DURATION);
            for part in [*months, *days, *seconds, i64::from(*nanos)] {
                put_signed(out, part);
            }
        }
    }
}

/// Appends the encoding of `value`.
pub(crate) fn put_value(out: &mut Vec<u8>, value: &PropValue) {
    match value {
        PropValue::Null => out.push(TAG_NULL),
        PropValue::Bool(false) => out.push(TAG_FALSE),
        PropValue::Bool(true) => out.push(TAG_TRUE),
        PropValue::Int(number) => {
            out.push(TAG_INT);
            put_signed(out, *number);
        }
        PropValue::Float(number) => {
            out.push(TAG_FLOAT);
            out.extend_from_slice(&number.to_le_bytes());
        }
        PropValue::String(text) => {
            out.push(TAG_STRING);
            put_string(out, text);
        }
        PropValue::List(items) => {
            out.push(TAG_LIST);
            put_varint(out, items.len() as u64);
            for item in items {
                put_value(out, item);
            }
        }
        PropValue::Map(entries) => {
            out.push(TAG_MAP);
            put_varint(out, entries.len() as u64);
            for (key, item) in entries {
                put_string(out, key);
                put_value(out, item);
            }
        }
        PropValue::Temporal(temporal) => put_temporal(out, temporal),
    }
}

/// Why bytes could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DecodeError(pub(crate) String);

pub(crate) type Decoded<T> = std::result::Result<T, DecodeError>;

/// A cursor over encoded bytes.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, position: 0 }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.position >= self.bytes.len()
    }

    /// The bytes not read yet, consumed.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let rest = &self.bytes[self.position..];
        self.position = self.bytes.len();
        rest
    }

    pub(crate) fn byte(&mut self) -> Decoded<u8> {
        let byte = *self
            .bytes
            .get(self.position)
            .ok_or_else(|| DecodeError(format!("ends early at byte {}", self.position)))?;
        self.position += 1;
        Ok(byte)
    }

    pub(crate) fn take(&mut self, count: usize) -> Decoded<&'a [u8]> {
        let end = self
            .position
            .checked_add(count)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| {
                DecodeError(format!(
                    "a length of {count} at byte {} runs past the end",
                    self.position
                ))
            })?;
        let slice = &self.bytes[self.position..end];
        self.position = end;
        Ok(slice)
    }

    pub(crate) fn varint(&mut self) -> Decoded<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DecodeError(format!(
            "varint too long at byte {}",
            self.position
        )))
    }

    pub(crate) fn u32_varint(&mut self) -> Decoded<u32> {
        let value = self.varint()?;
        u32::try_from(value).map_err(|_| DecodeError(format!("{value} does not fit 32 bits")))
    }

    /// A count of items that each take at least one byte: never more than the bytes left,
    /// so a damaged count cannot make us reserve gigabytes.
    pub(crate) fn count(&mut self) -> Decoded<usize> {
        let count = self.varint()?;
        let left = (self.bytes.len() - self.position) as u64;
        if count > left {
            return Err(DecodeError(format!(
                "a count of {count} exceeds the {left} bytes left"
            )));
        }
        Ok(count as usize)
    }

    /// A zigzag varint.
    fn signed(&mut self) -> Decoded<i64> {
        let zigzag = self.varint()?;
        Ok(((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64))
    }

    /// A zigzag varint that must fit 32 bits.
    fn signed_i32(&mut self) -> Decoded<i32> {
        let value = self.signed()?;
        i32::try_from(value).map_err(|_| DecodeError(format!("{value} does not fit 32 bits")))
    }

    /// The parts of a temporal value after its tag.
    fn temporal(&mut self, tag: u8) -> Decoded<TemporalParts> {
        Ok(match tag {
            TAG_DATE => TemporalParts::Date {
                epoch_day: self.signed()?,
            },
            TAG_LOCAL_TIME => TemporalParts::LocalTime {
                nanos_of_day: self.signed()?,
            },
            TAG_TIME => TemporalParts::Time {
                nanos_of_day: self.signed()?,
                offset_seconds: self.signed_i32()?,
            },
            TAG_LOCAL_DATE_TIME => TemporalParts::LocalDateTime {
                epoch_second: self.signed()?,
                nanos: self.signed_i32()?,
            },
            TAG_DATE_TIME => TemporalParts::DateTime {
                epoch_second: self.signed()?,
                nanos: self.signed_i32()?,
                offset_seconds: self.signed_i32()?,
                zone: self.string()?,
            },
            _ => TemporalParts::Duration {
                months: self.signed()?,
                days: self.signed()?,
                seconds: self.signed()?,
                nanos: self.signed_i32()?,
            },
        })
    }

    pub(crate) fn string(&mut self) -> Decoded<String> {
        let length = self.varint()?;
        let length = usize::try_from(length).map_err(|_| DecodeError("string too long".into()))?;
        let bytes = self.take(length)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| DecodeError("a string is not UTF-8".into()))
    }

    pub(crate) fn value(&mut self) -> Decoded<PropValue> {
        self.value_at(0)
    }

    fn value_at(&mut self, depth: usize) -> Decoded<PropValue> {
        if depth > MAX_NESTING {
            return Err(DecodeError(format!(
                "values nest deeper than {MAX_NESTING}"
            )));
        }
        Ok(match self.byte()? {
            TAG_NULL => PropValue::Null,
            TAG_FALSE => PropValue::Bool(false),
            TAG_TRUE => PropValue::Bool(true),
            TAG_INT => PropValue::Int(self.signed()?),
            TAG_FLOAT => {
                let bytes: [u8; 8] = self.take(8)?.try_into().expect("took 8 bytes");
                PropValue::Float(f64::from_le_bytes(bytes))
            }
            TAG_STRING => PropValue::String(self.string()?),
            TAG_LIST => {
                let count = self.count()?;
                let mut items = Vec::with_capacity(count);
                for _ in 0..count {
                    items.push(self.value_at(depth + 1)?);
                }
                PropValue::List(items)
            }
            TAG_MAP => {
                let count = self.count()?;
                let mut entries = BTreeMap::new();
                for _ in 0..count {
                    let key = self.string()?;
                    entries.insert(key, self.value_at(depth + 1)?);
                }
                PropValue::Map(entries)
            }
            tag @ TAG_DATE..=TAG_DURATION => PropValue::Temporal(self.temporal(tag)?),
            tag => return Err(DecodeError(format!("unknown value tag {tag}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn temporals() -> impl Strategy<Value = TemporalParts> {
        prop_oneof![
            any::<i64>().prop_map(|epoch_day| TemporalParts::Date { epoch_day }),
            any::<i64>().prop_map(|nanos_of_day| TemporalParts::LocalTime { nanos_of_day }),
            (any::<i64>(), any::<i32>()).prop_map(|(nanos_of_day, offset_seconds)| {
                TemporalParts::Time {
                    nanos_of_day,
                    offset_seconds,
                }
            }),
            (any::<i64>(), any::<i32>()).prop_map(|(epoch_second, nanos)| {
                TemporalParts::LocalDateTime {
                    epoch_second,
                    nanos,
                }
            }),
            (any::<i64>(), any::<i32>(), any::<i32>(), "[A-Za-z/_]{0,16}").prop_map(
                |(epoch_second, nanos, offset_seconds, zone)| TemporalParts::DateTime {
                    epoch_second,
                    nanos,
                    offset_seconds,
                    zone,
                }
            ),
            (any::<i64>(), any::<i64>(), any::<i64>(), any::<i32>()).prop_map(
                |(months, days, seconds, nanos)| TemporalParts::Duration {
                    months,
                    days,
                    seconds,
                    nanos,
                }
            ),
        ]
    }

    fn values() -> impl Strategy<Value = PropValue> {
        let leaf = prop_oneof![
            Just(PropValue::Null),
            any::<bool>().prop_map(PropValue::Bool),
            any::<i64>().prop_map(PropValue::Int),
            any::<f64>()
                .prop_filter("NaN is not equal to itself", |f| !f.is_nan())
                .prop_map(PropValue::Float),
            ".{0,12}".prop_map(PropValue::String),
            temporals().prop_map(PropValue::Temporal),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(PropValue::List),
                prop::collection::btree_map(".{0,6}", inner, 0..6).prop_map(PropValue::Map),
            ]
        })
    }

    proptest! {
        #[test]
        fn values_round_trip(value in values()) {
            let mut bytes = Vec::new();
            put_value(&mut bytes, &value);
            let mut reader = Reader::new(&bytes);
            prop_assert_eq!(reader.value().unwrap(), value);
            prop_assert!(reader.is_empty());
        }

        #[test]
        fn any_bytes_decode_without_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = Reader::new(&bytes).value();
        }
    }

    #[test]
    fn existing_tags_keep_their_encoding() {
        // Logs written before temporal values existed must read the same.
        let mut bytes = Vec::new();
        put_value(&mut bytes, &PropValue::Int(-2));
        assert_eq!(bytes, [TAG_INT, 3]);
        let date = PropValue::Temporal(TemporalParts::Date { epoch_day: -1 });
        let mut bytes = Vec::new();
        put_value(&mut bytes, &date);
        assert_eq!(bytes, [TAG_DATE, 1]);
    }

    #[test]
    fn a_huge_count_is_refused_before_allocating() {
        let mut bytes = vec![TAG_LIST];
        put_varint(&mut bytes, u64::MAX >> 1);
        let error = Reader::new(&bytes).value().unwrap_err();
        assert!(error.0.contains("exceeds"), "{error:?}");
    }

    #[test]
    fn nesting_past_the_limit_is_refused() {
        let mut bytes = [TAG_LIST, 1].repeat(MAX_NESTING + 2);
        bytes.push(TAG_NULL);
        let error = Reader::new(&bytes).value().unwrap_err();
        assert!(error.0.contains("nest"), "{error:?}");
    }
}
