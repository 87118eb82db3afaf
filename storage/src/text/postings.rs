//! Posting lists: `(key, frequency)` pairs with strictly ascending keys, stored as LEB128
//! varint pairs `key − previous key` (the first relative to 0) and `frequency` (≥ 1).
//! Keys are node indexes or delta rows (a term's own postings) or string ids of file
//! paths (its path postings).

use crate::strings::{get_varint, put_varint};

/// Appends postings with ascending keys to a byte list.
#[derive(Debug, Default)]
pub(crate) struct PostingsWriter {
    previous: Option<u32>,
}

impl PostingsWriter {
    /// Appends `(key, frequency)`; `key` must exceed the previous one.
    pub(crate) fn push(&mut self, out: &mut Vec<u8>, key: u32, frequency: u32) {
        let gap = match self.previous {
            Some(previous) => key - previous,
            None => key,
        };
        put_varint(out, gap);
        put_varint(out, frequency);
        self.previous = Some(key);
    }
}

/// Why stored postings do not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PostingsError {
    /// A varint runs past the end of the list or over 32 bits.
    Truncated,
    /// A key does not exceed the previous one, overflows, or a frequency is 0.
    Invalid,
}

impl std::fmt::Display for PostingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PostingsError::Truncated => "a posting list ends inside a number",
            PostingsError::Invalid => {
                "a posting list is not strictly ascending or holds a zero frequency"
            }
        })
    }
}

/// Calls `visit` with each `(key, frequency)` of `bytes`, in order.
pub(crate) fn for_each_posting(
    bytes: &[u8],
    mut visit: impl FnMut(u32, u32),
) -> Result<(), PostingsError> {
    let mut pos = 0usize;
    let mut previous: Option<u32> = None;
    while pos < bytes.len() {
        let gap = get_varint(bytes, &mut pos).ok_or(PostingsError::Truncated)?;
        let frequency = get_varint(bytes, &mut pos).ok_or(PostingsError::Truncated)?;
        let key = match previous {
            Some(_) if gap == 0 => return Err(PostingsError::Invalid),
            Some(p) => p.checked_add(gap).ok_or(PostingsError::Invalid)?,
            None => gap,
        };
        if frequency == 0 {
            return Err(PostingsError::Invalid);
        }
        visit(key, frequency);
        previous = Some(key);
    }
    Ok(())
}

/// The postings of `bytes` as a list.
#[cfg(test)]
pub(crate) fn decode_postings(bytes: &[u8]) -> Result<Vec<(u32, u32)>, PostingsError> {
    let mut out = Vec::new();
    for_each_posting(bytes, |key, frequency| out.push((key, frequency)))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{PostingsError, PostingsWriter, decode_postings};

    fn encode(postings: &[(u32, u32)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut writer = PostingsWriter::default();
        for &(key, frequency) in postings {
            writer.push(&mut out, key, frequency);
        }
        out
    }

    #[test]
    fn small_gaps_take_two_bytes() {
        let bytes = encode(&[(0, 1), (5, 2), (300, 1)]);
        assert_eq!(bytes, [0, 1, 5, 2, 0xa7, 0x02, 1]);
        assert_eq!(decode_postings(&bytes), Ok(vec![(0, 1), (5, 2), (300, 1)]));
    }

    #[test]
    fn damaged_lists_are_errors() {
        assert_eq!(decode_postings(&[0x80]), Err(PostingsError::Truncated));
        assert_eq!(decode_postings(&[3]), Err(PostingsError::Truncated));
        assert_eq!(decode_postings(&[3, 1, 0, 1]), Err(PostingsError::Invalid));
        assert_eq!(decode_postings(&[3, 0]), Err(PostingsError::Invalid));
        assert_eq!(
            decode_postings(&[0xff, 0xff, 0xff, 0xff, 0x0f, 1, 1, 1]),
            Err(PostingsError::Invalid)
        );
    }

    proptest! {
        #[test]
        fn round_trip(mut keys in proptest::collection::btree_map(any::<u32>(), 1u32..100_000, 0..200)) {
            let postings: Vec<(u32, u32)> = std::mem::take(&mut keys).into_iter().collect();
            prop_assert_eq!(decode_postings(&encode(&postings)), Ok(postings));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_postings(&bytes);
        }
    }
}
