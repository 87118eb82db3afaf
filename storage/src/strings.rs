//! The string dictionary of a strings segment (kind 1, and kind 5 for a delta layer):
//! distinct UTF-8 strings sorted by bytes, front-coded in blocks.
//!
//! A code graph's strings share long prefixes once sorted (paths, `struct foo::` members,
//! signatures), so each block of [`BLOCK_STRINGS`] strings stores its first string whole
//! and every other one as the length of the prefix it shares with the string before it
//! plus the rest. On the kernel this halves the dictionary. The price is that a string is
//! no longer one contiguous slice of the mapping: the first of a block (and any string
//! that shares nothing with its predecessor) is still borrowed, the others are assembled
//! from the block (see [`Entry`]). Lookups by text stay binary searches: over the block
//! heads, which are contiguous, then a scan inside one block. Binary searches that compare
//! many stored strings with one target (ids) first compare the bytes a string surely
//! shares with its block head, and assemble it only when those do not decide.
//!
//! Every read is bounds-checked: a malformed block reads as empty strings (as any damaged
//! column reads as defaults), and [`Dict::check`] reports it for `verify`. The byte layout
//! is in `docs/format.md` §2.4.

use std::borrow::Cow;
use std::cmp::Ordering;

use crate::column::{BytesCol, ColumnTable, SegmentWriter, UIntCol};
use crate::error::{Result, StorageError};
use crate::format::{SegmentKind, strings_col};
use crate::input::StrId;
use crate::reader::Artifact;

/// Strings per block the writer uses. Measured on the Linux 6.1 dictionary (6.63 M
/// strings, 246 MB of text): blocks of 8 take 124.6 MB (+3.3 MB of offsets), 16 take
/// 115.4 MB (+1.7), 32 take 110.9 MB (+0.8), 64 take 108.6 MB. Past 16 the gain is small
/// while a random read walks twice the entry headers.
pub(crate) const BLOCK_STRINGS: u32 = 16;
/// Largest block size a reader accepts (bounds the work of one read and its table).
pub(crate) const MAX_BLOCK_STRINGS: u32 = 32;

/// Appends `v` as LEB128 (7 bits per byte, low first).
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a LEB128 `u32` at `*pos`, advancing it; `None` when truncated or over 32 bits.
#[inline]
pub(crate) fn get_varint(b: &[u8], pos: &mut usize) -> Option<u32> {
    let mut v = 0u32;
    for shift in (0..35).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        let bits = u32::from(byte & 0x7f);
        if shift == 28 && bits > 0x0f {
            return None;
        }
        v |= bits << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Encodes `sorted` (distinct, ascending by bytes) as the blocks column and its block
/// offsets; `per_block` strings per block.
fn encode_blocks(sorted: &[&str], per_block: u32) -> (Vec<u8>, Vec<u64>) {
    let total: usize = sorted.iter().map(|s| s.len()).sum();
    // Front coding roughly halves code-graph text; reserving that avoids regrowth copies.
    let mut bytes = Vec::with_capacity(total / 2 + sorted.len() * 2);
    let mut offsets = Vec::with_capacity(sorted.len().div_ceil(per_block as usize) + 1);
    for block in sorted.chunks(per_block as usize) {
        offsets.push(bytes.len() as u64);
        let mut prev: &[u8] = b"";
        for (j, s) in block.iter().enumerate() {
            let s = s.as_bytes();
            let shared = if j == 0 { 0 } else { common_prefix(prev, s) };
            if j > 0 {
                put_varint(&mut bytes, shared as u32);
            }
            put_varint(&mut bytes, (s.len() - shared) as u32);
            bytes.extend_from_slice(&s[shared..]);
            prev = s;
        }
    }
    offsets.push(bytes.len() as u64);
    (bytes, offsets)
}

/// The strings segment of `kind` ([`SegmentKind::Strings`] or
/// [`SegmentKind::DeltaStrings`]) holding `sorted`, which must be distinct, ascending by
/// bytes, and each shorter than 4 GiB.
pub(crate) fn encode_segment(sorted: &[&str], kind: SegmentKind, db_uuid: [u8; 16]) -> Vec<u8> {
    encode_segment_with(sorted, BLOCK_STRINGS, kind, db_uuid)
}

pub(crate) fn encode_segment_with(
    sorted: &[&str],
    per_block: u32,
    kind: SegmentKind,
    db_uuid: [u8; 16],
) -> Vec<u8> {
    let (bytes, offsets) = encode_blocks(sorted, per_block);
    let mut w = SegmentWriter::default();
    let shape = [sorted.len() as u64, u64::from(per_block)];
    w.add_uint(strings_col::SHAPE, shape.len(), |i| shape[i]);
    w.add_uint(strings_col::BLOCK_OFFSETS, offsets.len(), |i| offsets[i]);
    drop(offsets);
    w.add_bytes(strings_col::BYTES, &bytes);
    drop(bytes);
    w.finish(kind as u8, db_uuid)
}

/// Where entry `i` of a block lives: its first `shared` bytes are the previous entry's,
/// the rest is `block[start..start + len]`.
#[derive(Clone, Copy, Default)]
struct Piece {
    shared: u32,
    start: u32,
    len: u32,
}

/// Reads a varint whose first byte is usually the whole value.
#[inline(always)]
fn varint(b: &[u8], pos: &mut usize) -> Option<u32> {
    match b.get(*pos) {
        Some(&x) if x < 0x80 => {
            *pos += 1;
            Some(u32::from(x))
        }
        _ => get_varint(b, pos),
    }
}

/// Entry `j` of one block, located by one pass over the entry headers `0..=j`; no byte
/// of the strings is copied until [`Entry::copy_to`].
struct Entry<'a> {
    block: &'a [u8],
    pieces: [Piece; MAX_BLOCK_STRINGS as usize],
    j: usize,
    /// How many leading bytes entry `j` surely shares with the head: the smallest shared
    /// prefix along the chain from the head.
    common: usize,
}

impl<'a> Entry<'a> {
    /// Parses the headers of entries `0..=j` of `block` and calls `f` with the entry, or
    /// with `None` if they are malformed (truncated, an entry past the block, a shared
    /// prefix longer than the previous entry, a block over 4 GiB, `j` past the largest
    /// block). The entry stays in this frame: returning its table would copy it.
    #[inline]
    fn with<R>(block: &'a [u8], j: usize, f: impl FnOnce(Option<&Entry<'a>>) -> R) -> R {
        let mut e = Entry {
            block,
            pieces: [Piece::default(); MAX_BLOCK_STRINGS as usize],
            j,
            common: usize::MAX,
        };
        let parsed = e.parse();
        f(parsed.map(|()| &e))
    }

    fn parse(&mut self) -> Option<()> {
        let (block, j) = (self.block, self.j);
        let e = self;
        u32::try_from(block.len()).ok()?;
        let mut pos = 0usize;
        let mut prev = 0u32;
        for (i, slot) in e.pieces.get_mut(..=j)?.iter_mut().enumerate() {
            let shared = if i == 0 { 0 } else { varint(block, &mut pos)? };
            let len = varint(block, &mut pos)?;
            if shared > prev {
                return None;
            }
            let start = pos;
            pos = pos
                .checked_add(len as usize)
                .filter(|&x| x <= block.len())?;
            *slot = Piece {
                shared,
                start: start as u32,
                len,
            };
            if i > 0 {
                e.common = e.common.min(shared as usize);
            }
            prev = shared.checked_add(len)?;
        }
        e.common = e.common.min(e.pieces[0].len as usize);
        Some(())
    }

    fn slice(&self, p: Piece) -> &'a [u8] {
        let s = p.start as usize;
        &self.block[s..s + p.len as usize]
    }

    /// Length of the entry.
    #[inline]
    fn len(&self) -> usize {
        let p = self.pieces[self.j];
        p.shared as usize + p.len as usize
    }

    /// The entry when it is stored whole (the head, or an entry sharing nothing).
    #[inline]
    fn whole(&self) -> Option<&'a [u8]> {
        let p = self.pieces[self.j];
        (p.shared == 0).then(|| self.slice(p))
    }

    /// The block's first entry.
    #[inline]
    fn head(&self) -> &'a [u8] {
        self.slice(self.pieces[0])
    }

    /// Appends the entry to `out`. Walking back from `j`, each earlier entry supplies the
    /// bytes between its own shared prefix and what is still missing, so every output
    /// byte is copied once.
    fn copy_to(&self, out: &mut Vec<u8>) {
        let at = out.len();
        let p = self.pieces[self.j];
        let total = self.len();
        out.resize(at + total, 0);
        out[at + p.shared as usize..].copy_from_slice(self.slice(p));
        let mut need = p.shared as usize;
        for q in self.pieces[..self.j].iter().rev() {
            if need == 0 {
                break;
            }
            let shared = q.shared as usize;
            if need > shared {
                // `parse` checked shared(i+1) ≤ length(i), and `need` only shrinks, so
                // this stays inside entry i's stored bytes.
                let s = q.start as usize;
                out[at + shared..at + need].copy_from_slice(&self.block[s..s + need - shared]);
                need = shared;
            }
        }
    }
}

/// Decodes entries `0..n` of `block` in order into `buf`, calling `f(j, bytes)` for each
/// until it returns `false`. Returns the bytes consumed, or a description of the damage.
fn walk(
    block: &[u8],
    n: usize,
    buf: &mut Vec<u8>,
    mut f: impl FnMut(usize, &[u8]) -> bool,
) -> std::result::Result<usize, String> {
    buf.clear();
    let mut pos = 0usize;
    for j in 0..n {
        let shared = if j == 0 {
            0
        } else {
            get_varint(block, &mut pos).ok_or_else(|| format!("entry {j}: truncated header"))?
        };
        let len =
            get_varint(block, &mut pos).ok_or_else(|| format!("entry {j}: truncated header"))?;
        if shared as usize > buf.len() {
            return Err(format!(
                "entry {j} shares {shared} bytes with a {}-byte string",
                buf.len()
            ));
        }
        let end = pos
            .checked_add(len as usize)
            .filter(|&e| e <= block.len())
            .ok_or_else(|| format!("entry {j} runs past the block"))?;
        buf.truncate(shared as usize);
        buf.extend_from_slice(&block[pos..end]);
        pos = end;
        if !f(j, buf) {
            break;
        }
    }
    Ok(pos)
}

/// A front-coded dictionary in a strings segment payload. Reads take that payload.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Dict {
    count: u32,
    per_block: u32,
    offsets: UIntCol,
    bytes: BytesCol,
}

impl Dict {
    /// Reads the columns of a strings segment and checks, in O(1), what reads rely on:
    /// the shape, one offset per block plus one, offsets spanning the blocks, and (for a
    /// base dictionary, `first_empty`) string 0 being `""`.
    pub(crate) fn open(t: &ColumnTable, p: &[u8], what: &str, first_empty: bool) -> Result<Dict> {
        let bad = |d: &str| StorageError::corrupt(what, d);
        let shape = t.uint(strings_col::SHAPE, Some(2))?;
        let offsets = t.uint(strings_col::BLOCK_OFFSETS, None)?;
        let bytes = t.bytes(strings_col::BYTES)?;
        let blen = bytes.bytes(p).len() as u64;
        let count = u32::try_from(shape.get(p, 0)).map_err(|_| bad("too many strings"))?;
        let per_block = shape.get(p, 1);
        if !(1..=u64::from(MAX_BLOCK_STRINGS)).contains(&per_block) {
            return Err(bad("strings per block outside 1..=32"));
        }
        let per_block = per_block as u32;
        // Every string costs at least one byte (its length), so more strings than bytes is
        // damage; this also keeps every loop over the strings proportional to real bytes.
        if u64::from(count) > blen {
            return Err(bad("implausible string count"));
        }
        let blocks = count.div_ceil(per_block) as usize;
        if offsets.len() != blocks + 1 || offsets.get(p, 0) != 0 || offsets.get(p, blocks) != blen {
            return Err(bad("block offsets do not span the string bytes"));
        }
        let d = Dict {
            count,
            per_block,
            offsets,
            bytes,
        };
        if first_empty && (count == 0 || d.bytes.bytes(p).first() != Some(&0)) {
            return Err(bad("string 0 is not empty"));
        }
        Ok(d)
    }

    /// Number of strings.
    #[inline]
    pub(crate) fn len(&self) -> u32 {
        self.count
    }

    /// The block offsets column (for the side-table checks of `verify`).
    pub(crate) fn offsets(&self) -> &UIntCol {
        &self.offsets
    }

    fn blocks(&self) -> u32 {
        self.count.div_ceil(self.per_block)
    }

    /// The bytes of block `b` (empty when its offsets are damaged).
    #[inline]
    fn block<'a>(&self, p: &'a [u8], b: u32) -> &'a [u8] {
        let (a, e) = (
            self.offsets.get(p, b as usize),
            self.offsets.get(p, b as usize + 1),
        );
        let all = self.bytes.bytes(p);
        usize::try_from(a)
            .ok()
            .zip(usize::try_from(e).ok())
            .and_then(|(a, e)| all.get(a..e))
            .unwrap_or(&[])
    }

    /// Strings in block `b`.
    fn block_len(&self, b: u32) -> usize {
        (self.count - b * self.per_block).min(self.per_block) as usize
    }

    /// The first string of block `b`, borrowed (empty when damaged).
    #[inline]
    fn head<'a>(&self, p: &'a [u8], b: u32) -> &'a [u8] {
        let block = self.block(p, b);
        let mut pos = 0;
        get_varint(block, &mut pos)
            .and_then(|len| block.get(pos..pos.checked_add(len as usize)?))
            .unwrap_or(&[])
    }

    /// Entry of string `k` (`None` when out of range or damaged).
    #[inline]
    fn with_entry<'a, R>(&self, p: &'a [u8], k: u32, f: impl FnOnce(Option<&Entry<'a>>) -> R) -> R {
        if k >= self.count {
            return f(None);
        }
        let (b, j) = (k / self.per_block, (k % self.per_block) as usize);
        Entry::with(self.block(p, b), j, f)
    }

    /// String `k` appended to `out`, or borrowed from the mapping when it is stored whole
    /// (`None` then, and nothing is appended). Out of range or damaged: appends nothing.
    #[inline]
    fn locate<'a>(&self, p: &'a [u8], k: u32, out: &mut Vec<u8>) -> Option<&'a [u8]> {
        // Outer `None`: damaged; inner `None`: copied to `out`.
        self.with_entry(p, k, |e| {
            let e = e?;
            if let Some(w) = e.whole() {
                return Some(Some(w));
            }
            e.copy_to(out);
            Some(None)
        })
        .unwrap_or(Some(&[]))
    }

    /// The bytes of string `k` (empty if out of range or damaged).
    #[inline]
    pub(crate) fn get<'a>(&self, p: &'a [u8], k: u32) -> Cow<'a, [u8]> {
        let mut out = Vec::new();
        match self.locate(p, k, &mut out) {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Owned(out),
        }
    }

    /// Appends the bytes of string `k` to `out`.
    #[inline]
    pub(crate) fn append(&self, p: &[u8], k: u32, out: &mut Vec<u8>) {
        if let Some(s) = self.locate(p, k, out) {
            out.extend_from_slice(s);
        }
    }

    /// Compares string `k` cut to the length of `t` with `t`, and gives the string's
    /// length; `buf` receives the string when it had to be assembled (`true`). Binary
    /// searches compare strings far from the target in most steps: the bytes every entry
    /// of the chain shares with the block head usually decide, and then nothing is copied.
    pub(crate) fn cmp_prefix(
        &self,
        p: &[u8],
        k: u32,
        t: &[u8],
        buf: &mut Vec<u8>,
    ) -> (Ordering, usize, bool) {
        let cut = |s: &[u8]| {
            let n = s.len().min(t.len());
            (s[..n].cmp(&t[..n]), s.len())
        };
        self.with_entry(p, k, |e| {
            let Some(e) = e else {
                let (o, n) = cut(b"");
                return (o, n, false);
            };
            if let Some(w) = e.whole() {
                let (o, n) = cut(w);
                return (o, n, false);
            }
            let n = e.common.min(t.len());
            match e.head()[..n].cmp(&t[..n]) {
                Ordering::Equal if n == t.len() => return (Ordering::Equal, e.len(), false),
                Ordering::Equal => {}
                o => return (o, e.len(), false),
            }
            buf.clear();
            e.copy_to(buf);
            let (o, n) = cut(buf);
            (o, n, true)
        })
    }

    /// The first block whose head fails `before` (which must hold for a prefix of the
    /// sorted strings and fail for the rest): a binary search over block heads.
    fn first_block_failing(&self, p: &[u8], before: &impl Fn(&[u8]) -> bool) -> u32 {
        self.first_block_failing_from(p, before, 0)
    }

    /// [`Dict::first_block_failing`], searching from block `from` (`before` must hold for
    /// the heads of every block before it).
    fn first_block_failing_from(
        &self,
        p: &[u8],
        before: &impl Fn(&[u8]) -> bool,
        from: u32,
    ) -> u32 {
        let n = self.blocks() as usize;
        crate::cursor::run_end((from as usize).min(n), n, |k| {
            before(self.head(p, k as u32))
        }) as u32
    }

    /// The id of `t`, if present: a binary search over block heads, then a scan of one
    /// block.
    pub(crate) fn find(&self, p: &[u8], t: &[u8]) -> Option<u32> {
        match self.rank(p, t) {
            (k, true) => Some(k),
            _ => None,
        }
    }

    /// The first string id whose string is `>= t`, and whether that string is `t`. In a
    /// sorted dictionary, string `k` compares with `t` as `k` compares with the rank (equal
    /// only when found), so a search comparing many strings with one `t` can compare ids.
    pub(crate) fn rank(&self, p: &[u8], t: &[u8]) -> (u32, bool) {
        let (rank, found, _) = self.rank_from(p, t, 0);
        (rank, found)
    }

    /// [`Dict::rank`], searching from block `from` (whose head and every earlier one must
    /// be `<= t`); also returns the block to start from for any string `>= t`.
    pub(crate) fn rank_from(&self, p: &[u8], t: &[u8], from: u32) -> (u32, bool, u32) {
        let Some(b) = self
            .first_block_failing_from(p, &|h| h <= t, from)
            .checked_sub(1)
        else {
            return (0, false, 0);
        };
        let mut buf = Vec::new();
        let mut found = (
            (b + 1).saturating_mul(self.per_block).min(self.count),
            false,
        );
        let _ = walk(self.block(p, b), self.block_len(b), &mut buf, |j, s| {
            if s < t {
                return true;
            }
            found = (b * self.per_block + j as u32, s == t);
            false
        });
        (found.0, found.1, b)
    }

    /// The first string id for which `before` is false (`before` must hold for a prefix
    /// of the sorted strings and fail for the rest).
    pub(crate) fn partition(&self, p: &[u8], before: impl Fn(&[u8]) -> bool) -> u32 {
        let fb = self.first_block_failing(p, &before);
        let Some(b) = fb.checked_sub(1) else {
            return 0;
        };
        // The head of `b` passed; the answer is inside `b` or the head of `fb`.
        let mut answer = (fb * self.per_block).min(self.count);
        let mut buf = Vec::new();
        let _ = walk(self.block(p, b), self.block_len(b), &mut buf, |j, s| {
            if j > 0 && !before(s) {
                answer = b * self.per_block + j as u32;
                return false;
            }
            true
        });
        answer
    }

    /// Decodes every string in order (each block once), calling `f(k, bytes)`; stops at
    /// the first damaged block and describes it.
    pub(crate) fn for_each(
        &self,
        p: &[u8],
        mut f: impl FnMut(u32, &[u8]),
    ) -> std::result::Result<(), String> {
        let mut buf = Vec::new();
        for b in 0..self.blocks() {
            let block = self.block(p, b);
            let (a, e) = (
                self.offsets.get(p, b as usize),
                self.offsets.get(p, b as usize + 1),
            );
            if a > e || e > self.bytes.bytes(p).len() as u64 {
                return Err(format!("offsets of block {b} are not monotone"));
            }
            let used = walk(block, self.block_len(b), &mut buf, |j, s| {
                f(b * self.per_block + j as u32, s);
                true
            })
            .map_err(|d| format!("block {b}: {d}"))?;
            if used != block.len() {
                return Err(format!(
                    "block {b} holds {} bytes after its last string",
                    block.len() - used
                ));
            }
        }
        Ok(())
    }

    /// Checks the whole dictionary (O(bytes)): every block decodes and ends at the next
    /// block's offset, strings are UTF-8 and strictly ascending. Calls `add` per finding.
    pub(crate) fn check(&self, p: &[u8], mut add: impl FnMut(String)) {
        let mut prev: Vec<u8> = Vec::new();
        let mut findings = Vec::new();
        let walked = self.for_each(p, |k, s| {
            if std::str::from_utf8(s).is_err() {
                findings.push(format!("string {k} is not UTF-8"));
            }
            if k > 0 && prev.as_slice() >= s {
                findings.push(format!("string {k} is not in strictly ascending order"));
            }
            prev.clear();
            prev.extend_from_slice(s);
        });
        findings.into_iter().for_each(&mut add);
        if let Err(d) = walked {
            add(d);
        }
    }
}

/// Bytes to text, with `""` for bytes that are not UTF-8 (which only damage causes).
fn utf8(b: Cow<'_, [u8]>) -> Cow<'_, str> {
    match b {
        Cow::Borrowed(s) => Cow::Borrowed(std::str::from_utf8(s).unwrap_or("")),
        Cow::Owned(v) => Cow::Owned(String::from_utf8(v).unwrap_or_default()),
    }
}

impl Artifact {
    /// Number of strings in the dictionary (`StrId`s are `0..string_count()`; 0 is `""`).
    /// With a delta layer its strings follow the base's.
    pub fn string_count(&self) -> u32 {
        self.base_string_count() + self.delta.as_ref().map_or(0, |d| d.strings.len())
    }

    pub(crate) fn base_string_count(&self) -> u32 {
        self.strings.len()
    }

    /// The dictionary holding string `s` with its payload, and `s`'s number in it.
    #[inline]
    fn dict_of(&self, s: StrId) -> (&Dict, &[u8], u32) {
        let bs = self.base_string_count();
        match &self.delta {
            Some(d) if s.0 >= bs => (&d.strings, self.pay(crate::delta::DS), s.0 - bs),
            _ => (&self.strings, self.sp(), s.0),
        }
    }

    /// The bytes of string `s` (empty if out of range). Borrowed from the mapping when the
    /// string is stored whole (the first of its block of 16), else assembled.
    pub fn string_bytes(&self, s: StrId) -> Cow<'_, [u8]> {
        let (d, p, k) = self.dict_of(s);
        d.get(p, k)
    }

    /// The text of string `s` (`""` if out of range or not UTF-8, which only damage
    /// causes); borrowed or assembled as [`Artifact::string_bytes`].
    pub fn string(&self, s: StrId) -> Cow<'_, str> {
        utf8(self.string_bytes(s))
    }

    /// Appends the bytes of string `s` to `out`.
    pub(crate) fn append_string(&self, s: StrId, out: &mut Vec<u8>) {
        let (d, p, k) = self.dict_of(s);
        d.append(p, k, out);
    }

    /// [`Dict::cmp_prefix`] for string `s`: (`s` cut to `t`'s length against `t`, the
    /// length of `s`, whether `buf` now holds `s`).
    #[inline]
    pub(crate) fn cmp_string_prefix(
        &self,
        s: StrId,
        t: &[u8],
        buf: &mut Vec<u8>,
    ) -> (Ordering, usize, bool) {
        let (d, p, k) = self.dict_of(s);
        d.cmp_prefix(p, k, t, buf)
    }

    /// Whether string `s` is `text`, without allocating (`buf` may receive the string).
    pub(crate) fn string_is(&self, s: StrId, text: &str, buf: &mut Vec<u8>) -> bool {
        let (o, len, _) = self.cmp_string_prefix(s, text.as_bytes(), buf);
        o.is_eq() && len == text.len()
    }

    /// The id of `text` in the dictionary, by binary search (O(log strings)). With a delta
    /// layer, strings of removed nodes may still be found until the next compaction.
    pub fn find_string(&self, text: &str) -> Option<StrId> {
        if let Some(s) = self.base_find_string(text) {
            return Some(s);
        }
        let d = self.delta.as_ref()?;
        d.strings
            .find(self.pay(crate::delta::DS), text.as_bytes())
            .map(|k| StrId(self.base_string_count() + k))
    }

    /// [`Artifact::find_string`] in the base dictionary only.
    pub(crate) fn base_find_string(&self, text: &str) -> Option<StrId> {
        self.strings.find(self.sp(), text.as_bytes()).map(StrId)
    }

    /// The first base string id for which `before` is false (`before` must hold for a
    /// prefix of the sorted dictionary and fail for the rest).
    pub(crate) fn partition_strings(&self, before: impl Fn(&[u8]) -> bool) -> u32 {
        self.strings.partition(self.sp(), before)
    }
}

#[cfg(test)]
mod tests;
