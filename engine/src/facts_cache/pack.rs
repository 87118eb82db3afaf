//! One pack file: writing it (entries appended as they come, index at the end, renamed
//! into place) and reading it (footer, checked index, checked entries, checked filters).

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::CACHE_VERSION;

const MAGIC: &[u8; 8] = b"BATHOFC1";
const END_MAGIC: &[u8; 8] = b"BATHOFCE";
pub(super) const HEADER_LEN: u64 = 16;
pub(super) const FOOTER_LEN: u64 = 64;
pub(super) const INDEX_ROW: usize = 52;

fn check_of(bytes: &[u8]) -> [u8; 12] {
    let mut c = [0; 12];
    c.copy_from_slice(&blake3::hash(bytes).as_bytes()[..12]);
    c
}

/// One index row as written.
struct Row {
    key: [u8; 16],
    offset: u64,
    len: u32,
    check: [u8; 12],
    filter_offset: u64,
    filter_len: u32,
}

/// Writes one pack. Entries are appended as they come; [`PackWriter::finish`] writes the
/// filters and the index and makes the pack visible under its final name (write, fsync,
/// rename), so an interrupted writer leaves only a temporary file that no reader reads.
pub struct PackWriter {
    dir: PathBuf,
    tmp: PathBuf,
    /// `None` once finished.
    out: Option<BufWriter<File>>,
    offset: u64,
    rows: Vec<Row>,
    /// The name filters, written after the entries.
    filters: Vec<u8>,
}

impl PackWriter {
    /// Starts a pack in `dir` (created if needed).
    pub fn create(dir: &Path) -> std::io::Result<PackWriter> {
        fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(".pack.tmp-{}", uuid::Uuid::new_v4()));
        let mut out = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
        out.write_all(MAGIC)?;
        out.write_all(&CACHE_VERSION.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        Ok(PackWriter {
            dir: dir.to_path_buf(),
            tmp,
            out: Some(out),
            offset: HEADER_LEN,
            rows: Vec::new(),
            filters: Vec::new(),
        })
    }

    fn writer(&mut self) -> std::io::Result<&mut BufWriter<File>> {
        self.out
            .as_mut()
            .ok_or_else(|| std::io::Error::other("pack already finished"))
    }

    /// Appends an entry as stored (a compressed skeleton) and the file's name filter.
    pub fn add_stored(
        &mut self,
        key: [u8; 16],
        stored: &[u8],
        filter: &[u8],
    ) -> std::io::Result<()> {
        self.writer()?.write_all(stored)?;
        self.rows.push(Row {
            key,
            offset: self.offset,
            len: stored.len() as u32,
            check: check_of(stored),
            filter_offset: self.filters.len() as u64,
            filter_len: filter.len() as u32,
        });
        self.filters.extend_from_slice(filter);
        self.offset += stored.len() as u64;
        Ok(())
    }

    /// Entries so far.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Writes the filters, the index and the footer and renames the pack into place;
    /// returns its path.
    pub fn finish(mut self) -> std::io::Result<PathBuf> {
        let filters = std::mem::take(&mut self.filters);
        let filters_at = self.offset;
        let index_at = filters_at + filters.len() as u64;
        let mut rows = std::mem::take(&mut self.rows);
        rows.sort_by_key(|r| r.key);
        rows.dedup_by_key(|r| r.key);
        let mut idx = Vec::with_capacity(rows.len() * INDEX_ROW);
        for r in &rows {
            idx.extend_from_slice(&r.key);
            idx.extend_from_slice(&r.offset.to_le_bytes());
            idx.extend_from_slice(&r.len.to_le_bytes());
            idx.extend_from_slice(&r.check);
            idx.extend_from_slice(&(filters_at + r.filter_offset).to_le_bytes());
            idx.extend_from_slice(&r.filter_len.to_le_bytes());
        }
        let out = self.writer()?;
        out.write_all(&filters)?;
        out.write_all(&idx)?;
        out.write_all(&index_at.to_le_bytes())?;
        out.write_all(&(rows.len() as u64).to_le_bytes())?;
        out.write_all(&blake3::hash(&idx).as_bytes()[..16])?;
        out.write_all(&filters_at.to_le_bytes())?;
        out.write_all(&blake3::hash(&filters).as_bytes()[..16])?;
        out.write_all(END_MAGIC)?;
        let out = self
            .out
            .take()
            .ok_or_else(|| std::io::Error::other("pack already finished"))?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        let path = self
            .dir
            .join(format!("{}.pack", uuid::Uuid::new_v4().simple()));
        fs::rename(&self.tmp, &path)?;
        if let Ok(d) = File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(path)
    }
}

impl Drop for PackWriter {
    fn drop(&mut self) {
        // Unfinished: the temporary file is garbage. After `finish` it no longer exists.
        let _ = fs::remove_file(&self.tmp);
    }
}

/// One open pack: its file, its checked index and, once asked for, its checked filters.
pub(super) struct Pack {
    pub(super) path: PathBuf,
    file: File,
    /// Where the filters start: entries end there.
    filters_at: u64,
    index_at: u64,
    filters_check: [u8; 16],
    index: Vec<u8>,
    /// The filter section, read and checked on first use; `Some(None)` when damaged.
    filters: std::sync::OnceLock<Option<Vec<u8>>>,
}

impl Pack {
    pub(super) fn open(path: &Path) -> Option<Pack> {
        let file = File::open(path).ok()?;
        let size = file.metadata().ok()?.len();
        if size < HEADER_LEN + FOOTER_LEN {
            return None;
        }
        let mut head = [0u8; 16];
        file.read_exact_at(&mut head, 0).ok()?;
        // The last four bytes are reserved and written as zero: anything else is damage.
        if &head[..8] != MAGIC
            || head[8..12] != CACHE_VERSION.to_le_bytes()
            || head[12..16] != [0; 4]
        {
            return None;
        }
        let mut foot = [0u8; FOOTER_LEN as usize];
        file.read_exact_at(&mut foot, size - FOOTER_LEN).ok()?;
        if &foot[56..] != END_MAGIC {
            return None;
        }
        let u64_at = |i: usize| u64::from_le_bytes(foot[i..i + 8].try_into().unwrap_or([0; 8]));
        let (index_at, count, filters_at) = (u64_at(0), u64_at(8), u64_at(32));
        let len = count.checked_mul(INDEX_ROW as u64)?;
        if filters_at < HEADER_LEN
            || filters_at > index_at
            || index_at.checked_add(len)? != size - FOOTER_LEN
        {
            return None;
        }
        let mut index = vec![0u8; len as usize];
        file.read_exact_at(&mut index, index_at).ok()?;
        if blake3::hash(&index).as_bytes()[..16] != foot[16..32] {
            return None;
        }
        let mut filters_check = [0; 16];
        filters_check.copy_from_slice(&foot[40..56]);
        Some(Pack {
            path: path.to_path_buf(),
            file,
            filters_at,
            index_at,
            filters_check,
            index,
            filters: std::sync::OnceLock::new(),
        })
    }

    /// Bytes of entries (what folding copies).
    pub(super) fn entry_bytes(&self) -> u64 {
        self.filters_at
    }

    pub(super) fn rows(&self) -> usize {
        self.index.len() / INDEX_ROW
    }

    pub(super) fn key(&self, i: usize) -> [u8; 16] {
        let mut k = [0; 16];
        k.copy_from_slice(&self.row(i)[..16]);
        k
    }

    fn row(&self, i: usize) -> &[u8] {
        &self.index[i * INDEX_ROW..(i + 1) * INDEX_ROW]
    }

    fn field(&self, i: usize, at: usize, len: usize) -> u64 {
        let r = &self.row(i)[at..at + len];
        let mut b = [0u8; 8];
        b[..len].copy_from_slice(r);
        u64::from_le_bytes(b)
    }

    /// The row of `key`.
    pub(super) fn find(&self, key: &[u8; 16]) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.rows());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.row(mid)[..16].cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// The checked stored bytes of row `i`.
    pub(super) fn entry(&self, i: usize) -> Option<Vec<u8>> {
        let (off, len) = (self.field(i, 16, 8), self.field(i, 24, 4));
        if off < HEADER_LEN || off.checked_add(len)? > self.filters_at {
            return None;
        }
        let mut buf = vec![0u8; len as usize];
        self.file.read_exact_at(&mut buf, off).ok()?;
        (check_of(&buf)[..] == self.row(i)[28..40]).then_some(buf)
    }

    /// The name filter of row `i`; `None` when the filter section is damaged.
    pub(super) fn filter(&self, i: usize) -> Option<&[u8]> {
        let all = self
            .filters
            .get_or_init(|| {
                let mut buf = vec![0u8; (self.index_at - self.filters_at) as usize];
                self.file.read_exact_at(&mut buf, self.filters_at).ok()?;
                (blake3::hash(&buf).as_bytes()[..16] == self.filters_check).then_some(buf)
            })
            .as_ref()?;
        let (off, len) = (self.field(i, 40, 8), self.field(i, 48, 4));
        let start = off.checked_sub(self.filters_at)? as usize;
        all.get(start..start.checked_add(len as usize)?)
    }
}
