//! Roaring bitmap indexes, deserialized lazily.
//!
//! `roaring` has no zero-copy view, so each bitmap stays serialized in the bitmaps segment
//! until first use, then is deserialized once and cached in a `OnceLock` for the life of
//! the [`crate::Artifact`]. Opening therefore costs nothing per bitmap; the per-file cache
//! array itself is allocated on the first per-file lookup.

use std::sync::{LazyLock, OnceLock};

use roaring::RoaringBitmap;

use crate::column::{BytesCol, ColumnTable, UIntCol};
use crate::error::{Result, StorageError};
use crate::format::bitmaps_col;

pub(crate) static EMPTY: LazyLock<RoaringBitmap> = LazyLock::new(RoaringBitmap::new);

/// One family of bitmaps: `offsets.len() - 1` serialized bitmaps in `data`.
#[derive(Debug)]
pub(crate) struct Family {
    pub(crate) offsets: UIntCol,
    cache: OnceLock<Box<[OnceLock<RoaringBitmap>]>>,
}

impl Family {
    fn new(offsets: UIntCol) -> Family {
        Family {
            offsets,
            cache: OnceLock::new(),
        }
    }

    /// Number of bitmaps in the family.
    pub(crate) fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The serialized bytes of bitmap `i` (empty if the offsets are damaged).
    pub(crate) fn raw<'a>(&self, p: &'a [u8], data: BytesCol, i: usize) -> &'a [u8] {
        let d = data.bytes(p);
        let (a, b) = (
            self.offsets.get(p, i) as usize,
            self.offsets.get(p, i + 1) as usize,
        );
        d.get(a..b).unwrap_or(&[])
    }

    /// Bitmap `i`, deserialized on first access. Values `>= limit` (which only damaged
    /// data can hold) are dropped so callers never see an out-of-range index; a bitmap
    /// that does not deserialize reads as empty. `verify` reports both.
    pub(crate) fn get(&self, p: &[u8], data: BytesCol, i: usize, limit: u32) -> &RoaringBitmap {
        if i >= self.len() {
            return &EMPTY;
        }
        let cache = self
            .cache
            .get_or_init(|| (0..self.len()).map(|_| OnceLock::new()).collect());
        cache[i].get_or_init(|| {
            let mut bm = decode(self.raw(p, data, i)).unwrap_or_default();
            bm.remove_range(limit..);
            bm
        })
    }
}

/// Deserializes one bitmap with roaring's validating reader.
pub(crate) fn decode(bytes: &[u8]) -> std::io::Result<RoaringBitmap> {
    RoaringBitmap::deserialize_from(bytes)
}

/// The bitmap directories of an artifact.
#[derive(Debug)]
pub(crate) struct Bitmaps {
    pub(crate) data: BytesCol,
    pub(crate) kinds: Family,
    pub(crate) rels: Family,
    pub(crate) roles: Family,
    pub(crate) file_keys: UIntCol,
    pub(crate) files: Family,
}

impl Bitmaps {
    /// Reads the directories and checks, in O(1), that their ends lie inside the data.
    pub(crate) fn open(t: &ColumnTable, p: &[u8], what: &str) -> Result<Bitmaps> {
        let data = t.bytes(bitmaps_col::DATA)?;
        let file_keys = t.uint(bitmaps_col::FILE_KEYS, None)?;
        let fam = |id: u32, expected: Option<usize>| -> Result<Family> {
            let offs = t.uint(id, expected)?;
            let dlen = data.bytes(p).len() as u64;
            if offs.len() == 0 || offs.get(p, offs.len() - 1) > dlen {
                return Err(StorageError::corrupt(
                    what,
                    format!("bitmap directory {id} points past the data"),
                ));
            }
            Ok(Family::new(offs))
        };
        Ok(Bitmaps {
            data,
            kinds: fam(bitmaps_col::KIND_OFFSETS, None)?,
            rels: fam(bitmaps_col::REL_OFFSETS, None)?,
            roles: fam(bitmaps_col::ROLE_OFFSETS, None)?,
            files: fam(bitmaps_col::FILE_OFFSETS, Some(file_keys.len() + 1))?,
            file_keys,
        })
    }

    /// Position of the file with string id `s` in the per-file directory.
    pub(crate) fn file_slot(&self, p: &[u8], s: u32) -> Option<usize> {
        let (mut lo, mut hi) = (0usize, self.file_keys.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.file_keys.get(p, mid).cmp(&u64::from(s)) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }
}
