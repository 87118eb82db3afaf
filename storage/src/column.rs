//! Columns inside a segment payload: the column table, the compact integer codec and raw
//! byte columns.
//!
//! An integer column stores `count` values as `base + raw`, where `raw` is an unsigned
//! integer of `width` bits (0 to 64), packed back to back little-endian. Values that do not
//! fit the chosen width are *exceptions*: their slot holds the all-ones escape (or nothing
//! when the width is 0) and the real value sits in a sorted side table searched by binary
//! search. The writer picks the width that minimises bytes, so an all-zero column costs
//! nothing, line numbers cost 17 or 18 bits with a few exceptions, a node index of a
//! kernel 23 bits and an edge index 25 (byte widths cost the kernel 41 MB more), and a
//! column that is almost always zero (the per-edge file override) becomes a sparse list.
//!
//! A *sparse* integer column serves columns that are mostly zero but not rare enough for
//! exceptions (signatures, explicit ids, qualified names differing from the name): a
//! presence bitmap (u64 words) with a running rank per word (u32), and the non-zero values
//! packed densely as `base + raw`. A read is one bit test, one popcount and one value load.

use crate::error::{Result, StorageError};
use crate::format::{COLUMN_ALIGN, SEGMENT_HEADER_LEN, SegmentHeader, align_up, le_u32, le_u64};

const ENC_UINT: u8 = 0;
const ENC_BYTES: u8 = 1;
const ENC_SPARSE: u8 = 2;
const TABLE_HEADER_LEN: usize = 8;
const ENTRY_LEN: usize = 64;
/// Bytes an exception costs: a u32 index and a u64 value.
const EXC_COST: u64 = 12;
/// Upper bound on the number of columns in one segment; anything larger is corruption.
const MAX_COLUMNS: usize = 1024;

/// The escape of a packed column `bits` wide: all ones (0 for width 0, where every slot
/// is empty and every value not equal to the base is an exception).
fn escape(bits: u8) -> u64 {
    match bits {
        0 => 0,
        64.. => u64::MAX,
        b => (1u64 << b) - 1,
    }
}

/// Bytes of `count` values packed `bits` wide.
fn packed_len(count: u64, bits: u8) -> Option<u64> {
    count.checked_mul(u64::from(bits)).map(|b| b.div_ceil(8))
}

/// Builds one segment file in memory.
#[derive(Default)]
pub(crate) struct SegmentWriter {
    entries: Vec<Entry>,
    data: Vec<u8>,
}

struct Entry {
    id: u32,
    encoding: u8,
    width: u8,
    count: u64,
    base: u64,
    data_off: u64,
    data_len: u64,
    exc_count: u64,
    exc_off: u64,
    exc_len: u64,
}

impl SegmentWriter {
    fn pad(&mut self) {
        let n = align_up(self.data.len(), COLUMN_ALIGN);
        self.data.resize(n, 0);
    }

    /// Adds an integer column of `count` values produced by `value(i)` (called once per index).
    pub(crate) fn add_uint(&mut self, id: u32, count: usize, value: impl Fn(usize) -> u64) {
        // The encoding choice reads every value several times; computing them once keeps
        // costly producers (palette searches, string remaps) to a single call per row.
        // Nearly every column's values fit 32 bits: held as `u32`, the copy of a
        // kernel's edge column costs 72 MB instead of 144 at the write's peak.
        let mut narrow: Vec<u32> = Vec::with_capacity(count);
        for i in 0..count {
            let v = value(i);
            match u32::try_from(v) {
                Ok(v) => narrow.push(v),
                Err(_) => {
                    let mut wide: Vec<u64> = Vec::with_capacity(count);
                    wide.extend(narrow.iter().map(|&v| u64::from(v)));
                    drop(narrow);
                    wide.push(v);
                    wide.extend((i + 1..count).map(&value));
                    return self.add_values(id, &wide);
                }
            }
        }
        self.add_values(id, &narrow)
    }

    /// Adds an integer column whose values are already in memory, without the copy
    /// [`SegmentWriter::add_uint`] makes.
    pub(crate) fn add_values<T: Copy + Into<u64>>(&mut self, id: u32, values: &[T]) {
        let count = values.len();
        let value = |i: usize| -> u64 { values[i].into() };
        // One pass for the bounds of all values and of the non-zero ones.
        let (mut min, mut nonzero, mut lo, mut hi) = (u64::MAX, 0u64, u64::MAX, 0u64);
        for i in 0..count {
            let v = value(i);
            min = min.min(v);
            if v != 0 {
                nonzero += 1;
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        let base = if count == 0 { 0 } else { min };
        // Exceptions need a u32 index, so only columns addressable by u32 may use them.
        let exc_allowed = u32::try_from(count).is_ok();
        // by_len[l]: values whose delta needs exactly `l` bits; ones[l]: those equal to
        // 2^l - 1, the escape of width `l`. A width `w` then has as exceptions every
        // delta longer than `w` bits plus the deltas equal to its escape.
        let (mut by_len, mut ones) = ([0u64; 65], [0u64; 65]);
        for i in 0..count {
            let d = value(i) - base;
            let l = (64 - d.leading_zeros()) as usize;
            by_len[l] += 1;
            if d != 0 && d.count_ones() as usize == l {
                ones[l] += 1;
            }
        }
        let n = count as u64;
        let mut best = (64u8, n.saturating_mul(8), 0u64);
        let mut longer = 0u64; // deltas longer than `w` bits
        for w in (0..64u8).rev() {
            longer += by_len[usize::from(w) + 1];
            let over = if w == 0 {
                longer
            } else {
                longer + ones[usize::from(w)]
            };
            if over > 0 && !exc_allowed {
                continue;
            }
            // With width 0 every read of the column searches the exception table, so it is
            // only worth it for truly sparse columns (the table then stays in cache).
            if w == 0 && over > n / 32 {
                continue;
            }
            let cost = packed_len(n, w)
                .unwrap_or(u64::MAX)
                .saturating_add(over.saturating_mul(EXC_COST));
            if cost < best.1 {
                best = (w, cost, over);
            }
        }
        if exc_allowed && nonzero < n {
            let base = if nonzero == 0 { 0 } else { lo };
            let span = hi.saturating_sub(base);
            let w: u8 = match span {
                0..0x100 => 1,
                0x100..0x1_0000 => 2,
                0x1_0000..0x100_0000 => 3,
                0x100_0000..0x1_0000_0000 => 4,
                _ => 8,
            };
            let words = count.div_ceil(64) as u64;
            let cost = words * 12 + nonzero * u64::from(w);
            if cost < best.1 {
                self.add_sparse(id, count, base, w, &value);
                return;
            }
        }
        let (width, _, exc_count) = best;
        self.pad();
        let data_off = self.data.len();
        let esc = escape(width);
        let mut exc_idx: Vec<u32> = Vec::new();
        let mut exc_val: Vec<u64> = Vec::new();
        self.data
            .reserve(packed_len(n, width).unwrap_or(0) as usize);
        // Bits not yet written, lowest first.
        let (mut acc, mut pending) = (0u128, 0u32);
        for i in 0..count {
            let v = value(i);
            let d = v - base;
            let is_exc = if width == 0 {
                d != 0
            } else {
                width < 64 && d >= esc
            };
            let raw = if is_exc {
                exc_idx.push(i as u32);
                exc_val.push(v);
                esc
            } else {
                d
            };
            if width % 8 == 0 {
                self.data
                    .extend_from_slice(&raw.to_le_bytes()[..usize::from(width / 8)]);
                continue;
            }
            // Whole words out at once: a push per byte was most of the write's encoding.
            acc |= u128::from(raw) << pending;
            pending += u32::from(width);
            if pending >= 64 {
                self.data.extend_from_slice(&(acc as u64).to_le_bytes());
                acc >>= 64;
                pending -= 64;
            }
        }
        let tail = pending.div_ceil(8) as usize;
        self.data.extend_from_slice(&acc.to_le_bytes()[..tail]);
        debug_assert_eq!(exc_idx.len() as u64, exc_count);
        let data_len = self.data.len() - data_off;
        self.pad();
        let exc_off = self.data.len();
        for i in &exc_idx {
            self.data.extend_from_slice(&i.to_le_bytes());
        }
        self.data
            .resize(exc_off + align_up(exc_idx.len() * 4, 8), 0);
        for v in &exc_val {
            self.data.extend_from_slice(&v.to_le_bytes());
        }
        let exc_len = self.data.len() - exc_off;
        self.entries.push(Entry {
            id,
            encoding: ENC_UINT,
            width,
            count: n,
            base,
            data_off: data_off as u64,
            data_len: data_len as u64,
            exc_count: exc_idx.len() as u64,
            exc_off: exc_off as u64,
            exc_len: exc_len as u64,
        });
    }

    /// Writes a sparse column: presence words, ranks, then the dense non-zero values.
    fn add_sparse(
        &mut self,
        id: u32,
        count: usize,
        base: u64,
        width: u8,
        value: &impl Fn(usize) -> u64,
    ) {
        self.pad();
        let data_off = self.data.len();
        let mut k = 0u64;
        for i in 0..count {
            let v = value(i);
            if v != 0 {
                self.data
                    .extend_from_slice(&(v - base).to_le_bytes()[..usize::from(width)]);
                k += 1;
            }
        }
        let data_len = self.data.len() - data_off;
        self.pad();
        let aux_off = self.data.len();
        let words = count.div_ceil(64);
        let mut ranks = Vec::with_capacity(words);
        let mut rank = 0u32;
        for w in 0..words {
            let mut word = 0u64;
            for b in 0..64 {
                let i = w * 64 + b;
                if i < count && value(i) != 0 {
                    word |= 1 << b;
                }
            }
            ranks.push(rank);
            rank += word.count_ones();
            self.data.extend_from_slice(&word.to_le_bytes());
        }
        for r in ranks {
            self.data.extend_from_slice(&r.to_le_bytes());
        }
        let aux_len = self.data.len() - aux_off;
        self.entries.push(Entry {
            id,
            encoding: ENC_SPARSE,
            width,
            count: count as u64,
            base,
            data_off: data_off as u64,
            data_len: data_len as u64,
            exc_count: k,
            exc_off: aux_off as u64,
            exc_len: aux_len as u64,
        });
    }

    /// Adds a raw byte column.
    pub(crate) fn add_bytes(&mut self, id: u32, bytes: &[u8]) {
        self.pad();
        let data_off = self.data.len();
        self.data.extend_from_slice(bytes);
        self.entries.push(Entry {
            id,
            encoding: ENC_BYTES,
            width: 1,
            count: bytes.len() as u64,
            base: 0,
            data_off: data_off as u64,
            data_len: bytes.len() as u64,
            exc_count: 0,
            exc_off: 0,
            exc_len: 0,
        });
    }

    /// The complete segment file: header, column table, column data.
    pub(crate) fn finish(mut self, kind: u8, db_uuid: [u8; 16]) -> Vec<u8> {
        self.pad();
        let table_len = align_up(
            TABLE_HEADER_LEN + self.entries.len() * ENTRY_LEN,
            COLUMN_ALIGN,
        );
        let payload_len = table_len + self.data.len();
        let mut out = Vec::with_capacity(SEGMENT_HEADER_LEN + payload_len);
        out.extend_from_slice(
            &SegmentHeader {
                kind,
                payload_len: payload_len as u64,
                db_uuid,
            }
            .encode(),
        );
        out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        let shift = table_len as u64;
        for e in &self.entries {
            out.extend_from_slice(&e.id.to_le_bytes());
            out.push(e.encoding);
            out.push(e.width);
            out.extend_from_slice(&[0, 0]);
            for v in [
                e.count,
                e.base,
                e.data_off + shift,
                e.data_len,
                e.exc_count,
                if e.exc_count == 0 {
                    0
                } else {
                    e.exc_off + shift
                },
                e.exc_len,
            ] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out.resize(SEGMENT_HEADER_LEN + table_len, 0);
        // The head goes in front of the data in place: copying a kernel's 200 MB nodes
        // segment into a new buffer would add its size to the build's peak memory.
        let (head, len) = (out.len(), self.data.len());
        let mut file = self.data;
        file.resize(head + len, 0);
        file.copy_within(0..len, head);
        file[..head].copy_from_slice(&out);
        file
    }
}

/// A decoded integer column; reads take the payload bytes it was decoded from.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct UIntCol {
    sparse: bool,
    width: u8,
    count: usize,
    base: u64,
    off: usize,
    exc_count: usize,
    exc_idx_off: usize,
    exc_val_off: usize,
}

impl UIntCol {
    /// Number of values.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Value `i`; 0 when `i` is out of range or the bytes are unreadable (which the checks
    /// at open rule out for a column of an opened artifact).
    #[inline]
    pub(crate) fn get(&self, p: &[u8], i: usize) -> u64 {
        if i >= self.count {
            return 0;
        }
        if self.sparse {
            return self.get_sparse(p, i);
        }
        let raw = self.raw(p, i);
        if self.exc_count > 0
            && raw == escape(self.width)
            && let Some(v) = self.exception(p, i)
        {
            return v;
        }
        self.base.wrapping_add(raw)
    }

    /// Raw slot `i` of a packed column (`width` in bits).
    #[inline]
    fn raw(&self, p: &[u8], i: usize) -> u64 {
        let o = self.off;
        match self.width {
            0 => 0,
            8 => p.get(o + i).copied().map_or(0, u64::from),
            16 => p
                .get(o + 2 * i..o + 2 * i + 2)
                .map_or(0, |s| u64::from(u16::from_le_bytes([s[0], s[1]]))),
            24 => p
                .get(o + 3 * i..o + 3 * i + 3)
                .map_or(0, |s| u64::from(u32::from_le_bytes([s[0], s[1], s[2], 0]))),
            32 => le_u32(p, o + 4 * i).map_or(0, u64::from),
            64 => le_u64(p, o + 8 * i).unwrap_or(0),
            w => {
                let w = u32::from(w);
                let bit = i as u64 * u64::from(w);
                let (at, shift) = (o + (bit / 8) as usize, (bit % 8) as u32);
                let mask = escape(w as u8);
                // One 8-byte load holds the value when it spans at most 8 bytes (always
                // below 58 bits); bytes past the value are masked off.
                if shift + w <= 64
                    && let Some(x) = le_u64(p, at)
                {
                    return (x >> shift) & mask;
                }
                // Near the end of the payload, or 58..63 bits: the bytes there are.
                let mut b = [0u8; 16];
                let avail = p.get(at..).unwrap_or(&[]);
                let n = avail.len().min(16);
                b[..n].copy_from_slice(&avail[..n]);
                ((u128::from_le_bytes(b) >> shift) as u64) & mask
            }
        }
    }

    /// Raw value `i` of a sparse column's dense values (`width` in bytes).
    #[inline]
    fn raw_bytes(&self, p: &[u8], i: usize) -> u64 {
        let (o, w) = (self.off, usize::from(self.width));
        match p.get(o + w * i..o + w * i + w) {
            Some(s) if w <= 8 => {
                let mut b = [0u8; 8];
                b[..w].copy_from_slice(s);
                u64::from_le_bytes(b)
            }
            _ => 0,
        }
    }

    #[inline]
    fn get_sparse(&self, p: &[u8], i: usize) -> u64 {
        let (w, b) = (i / 64, i % 64);
        let word = le_u64(p, self.exc_idx_off + 8 * w).unwrap_or(0);
        if word >> b & 1 == 0 {
            return 0;
        }
        let rank = le_u32(p, self.exc_val_off + 4 * w).unwrap_or(0) as usize
            + (word & ((1u64 << b) - 1)).count_ones() as usize;
        // A damaged rank can point past the values; the read is then 0 instead of a panic.
        self.base
            .wrapping_add(self.raw_bytes(p, rank.min(self.exc_count)))
    }

    /// Value `i` narrowed to u32 (saturating, for columns whose writer only stores u32).
    #[inline]
    pub(crate) fn get32(&self, p: &[u8], i: usize) -> u32 {
        u32::try_from(self.get(p, i)).unwrap_or(u32::MAX)
    }

    fn exception(&self, p: &[u8], i: usize) -> Option<u64> {
        let (mut lo, mut hi) = (0usize, self.exc_count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let k = le_u32(p, self.exc_idx_off + 4 * mid)? as usize;
            match k.cmp(&i) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return le_u64(p, self.exc_val_off + 8 * mid),
            }
        }
        None
    }

    /// Checks the side tables: exception indexes strictly ascending and below `count`, or
    /// sparse ranks agreeing with the presence words (O(exceptions) / O(count / 64)).
    pub(crate) fn check_exceptions(&self, p: &[u8]) -> Option<String> {
        if self.sparse {
            let mut rank = 0u64;
            for w in 0..self.count.div_ceil(64) {
                let word = le_u64(p, self.exc_idx_off + 8 * w)?;
                if u64::from(le_u32(p, self.exc_val_off + 4 * w)?) != rank {
                    return Some(format!("rank of word {w} is wrong"));
                }
                let tail = self.count - w * 64;
                if tail < 64 && word >> tail != 0 {
                    return Some("presence bits past the end".into());
                }
                rank += u64::from(word.count_ones());
            }
            return (rank != self.exc_count as u64)
                .then(|| format!("{rank} present values, table says {}", self.exc_count));
        }
        let mut prev: Option<u32> = None;
        for k in 0..self.exc_count {
            let i = le_u32(p, self.exc_idx_off + 4 * k)?;
            if (i as usize) >= self.count || prev.is_some_and(|q| q >= i) {
                return Some(format!(
                    "exception index {i} at position {k} is out of order or out of range"
                ));
            }
            prev = Some(i);
        }
        None
    }
}

/// A decoded raw byte column (offset and length inside the payload).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BytesCol {
    off: usize,
    len: usize,
}

impl BytesCol {
    /// The bytes of the column.
    pub(crate) fn bytes<'a>(&self, p: &'a [u8]) -> &'a [u8] {
        p.get(self.off..self.off + self.len).unwrap_or(&[])
    }
}

#[derive(Clone, Copy, Debug)]
struct RawEntry {
    id: u32,
    encoding: u8,
    width: u8,
    count: u64,
    base: u64,
    data_off: u64,
    data_len: u64,
    exc_count: u64,
    exc_off: u64,
    exc_len: u64,
}

/// The parsed column table of one segment payload. Parsing checks every entry's ranges
/// against the payload length, so later reads of an existing column stay in bounds.
#[derive(Debug)]
pub(crate) struct ColumnTable {
    what: String,
    entries: Vec<RawEntry>,
}

impl ColumnTable {
    /// Parses the table at the start of `payload`. `what` names the segment in errors.
    pub(crate) fn parse(payload: &[u8], what: &str) -> Result<ColumnTable> {
        let bad = |d: String| StorageError::corrupt(what, d);
        let n = le_u32(payload, 0)
            .ok_or_else(|| bad("payload too short for a column table".into()))?
            as usize;
        if n > MAX_COLUMNS {
            return Err(bad(format!("{n} columns")));
        }
        let table_end = TABLE_HEADER_LEN + n * ENTRY_LEN;
        if table_end > payload.len() {
            return Err(bad("column table runs past the end of the segment".into()));
        }
        let mut entries = Vec::with_capacity(n);
        for k in 0..n {
            let b = TABLE_HEADER_LEN + k * ENTRY_LEN;
            let g = |o: usize| le_u64(payload, b + o).unwrap_or(u64::MAX);
            let e = RawEntry {
                id: le_u32(payload, b).unwrap_or(0),
                encoding: payload[b + 4],
                width: payload[b + 5],
                count: g(8),
                base: g(16),
                data_off: g(24),
                data_len: g(32),
                exc_count: g(40),
                exc_off: g(48),
                exc_len: g(56),
            };
            check_entry(&e, payload.len(), table_end)
                .map_err(|d| bad(format!("column {}: {d}", e.id)))?;
            if entries.iter().any(|x: &RawEntry| x.id == e.id) {
                return Err(bad(format!("column {} appears twice", e.id)));
            }
            entries.push(e);
        }
        Ok(ColumnTable {
            what: what.to_owned(),
            entries,
        })
    }

    /// A `Corrupt` error about this segment.
    pub(crate) fn corrupt(&self, detail: impl Into<String>) -> StorageError {
        StorageError::corrupt(&self.what, detail)
    }

    fn entry(&self, id: u32) -> Result<&RawEntry> {
        self.entries
            .iter()
            .find(|e| e.id == id)
            .ok_or_else(|| StorageError::corrupt(&self.what, format!("column {id} is missing")))
    }

    /// The integer column `id`, whose length must be `expected` when given.
    pub(crate) fn uint(&self, id: u32, expected: Option<usize>) -> Result<UIntCol> {
        let e = self.entry(id)?;
        if e.encoding != ENC_UINT && e.encoding != ENC_SPARSE {
            return Err(StorageError::corrupt(
                &self.what,
                format!("column {id} is not an integer column"),
            ));
        }
        let count = usize::try_from(e.count)
            .map_err(|_| StorageError::corrupt(&self.what, "column too long"))?;
        if let Some(x) = expected
            && x != count
        {
            return Err(StorageError::corrupt(
                &self.what,
                format!("column {id} has {count} values, expected {x}"),
            ));
        }
        let exc_count = e.exc_count as usize;
        if e.encoding == ENC_SPARSE {
            return Ok(UIntCol {
                sparse: true,
                width: e.width,
                count,
                base: e.base,
                off: e.data_off as usize,
                exc_count,
                exc_idx_off: e.exc_off as usize,
                exc_val_off: e.exc_off as usize + count.div_ceil(64) * 8,
            });
        }
        Ok(UIntCol {
            sparse: false,
            width: e.width,
            count,
            base: e.base,
            off: e.data_off as usize,
            exc_count,
            exc_idx_off: e.exc_off as usize,
            exc_val_off: e.exc_off as usize + align_up(exc_count * 4, 8),
        })
    }

    /// The integer column `id` as [`Self::uint`] does, or an empty column (every value
    /// reads 0) when the table has none: for columns added after a format version.
    pub(crate) fn uint_optional(&self, id: u32, expected: Option<usize>) -> Result<UIntCol> {
        if self.entries.iter().any(|e| e.id == id) {
            self.uint(id, expected)
        } else {
            Ok(UIntCol::default())
        }
    }

    /// The byte column `id`.
    pub(crate) fn bytes(&self, id: u32) -> Result<BytesCol> {
        let e = self.entry(id)?;
        if e.encoding != ENC_BYTES {
            return Err(StorageError::corrupt(
                &self.what,
                format!("column {id} is not a byte column"),
            ));
        }
        Ok(BytesCol {
            off: e.data_off as usize,
            len: e.data_len as usize,
        })
    }
}

fn check_entry(e: &RawEntry, payload_len: usize, table_end: usize) -> Result<(), String> {
    let plen = payload_len as u64;
    let in_payload = |off: u64, len: u64| {
        off >= table_end as u64 && off.checked_add(len).is_some_and(|end| end <= plen)
    };
    match e.encoding {
        ENC_BYTES => {
            if e.width != 1 || e.count != e.data_len {
                return Err("inconsistent byte column".into());
            }
        }
        ENC_UINT => {
            if e.width > 64 {
                return Err(format!("width of {} bits", e.width));
            }
            if packed_len(e.count, e.width) != Some(e.data_len) {
                return Err("data length does not match ⌈count × width / 8⌉".into());
            }
            if e.exc_count > e.count || (e.exc_count > 0 && e.count > u64::from(u32::MAX)) {
                return Err("too many exceptions".into());
            }
            if e.exc_count > 0 {
                let need = align_up(e.exc_count as usize * 4, 8) as u64 + e.exc_count * 8;
                if e.exc_len != need || !in_payload(e.exc_off, e.exc_len) {
                    return Err("exception table out of bounds".into());
                }
            }
        }
        ENC_SPARSE => {
            if ![1u8, 2, 3, 4, 8].contains(&e.width)
                || e.exc_count > e.count
                || e.count > u64::from(u32::MAX)
            {
                return Err("inconsistent sparse column".into());
            }
            if e.exc_count.checked_mul(u64::from(e.width)) != Some(e.data_len) {
                return Err("sparse data length does not match present values × width".into());
            }
            if e.exc_len != e.count.div_ceil(64) * 12 || !in_payload(e.exc_off, e.exc_len) {
                return Err("sparse presence table out of bounds".into());
            }
        }
        other => return Err(format!("unknown encoding {other}")),
    }
    if e.data_len > 0 && !in_payload(e.data_off, e.data_len) {
        return Err("data out of bounds".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
