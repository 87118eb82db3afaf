//! The facts cache: each indexed file's extracted structure, kept beside the artifact so
//! that a patch can show the resolver an unchanged file without parsing it again.
//!
//! A patch resolves the changed files against *context*: every file that defines a name
//! they use or that their translation units include. On a kernel-size tree that is
//! thousands of files for a one-line edit, and parsing them again is what made a patch
//! slow. The cache holds, per file, a *skeleton* of its [`FileFacts`]: entities (without
//! their content hashes), base classes, includes and the string arena, but no references.
//! A skeleton is exactly what the resolver needs of a context file; files whose own
//! references are resolved (the emitted ones) are always parsed.
//!
//! Layout: `.batho/facts/*.pack`, each an immutable pack file written by a build (one for
//! the whole tree) or a patch (the files it parsed). An entry is keyed by the blake3 of
//! (cache version, path, the first 16 bytes of the file's content hash), so an entry can
//! never describe other bytes than the ones it is asked for: no invalidation is needed,
//! stale entries are only garbage. The cache is never trusted blindly: every entry carries
//! a checksum, and a pack or entry that is damaged, truncated or of another version is a
//! miss (the file is parsed), never an error or a wrong answer.
//!
//! Pack file, little-endian:
//! ```text
//! header  "BATHOFC1" u32 version u32 reserved                       16 bytes
//! entries encoded skeletons, back to back
//! index   count × { key [16] · offset u64 · len u32 · check [12] }  sorted by key
//! footer  index offset u64 · count u64 · blake3(index)[..16] · "BATHOFCE"   40 bytes
//! ```
//! `check` is the first 12 bytes of the blake3 of the entry's bytes.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use batho_schema::{Language, NodeFlags, NodeKind};

use crate::extract::{Base, Entity, FileFacts, Include, Sym};

/// Bumped whenever extraction or the encoding changes what a skeleton holds: packs of
/// another version are ignored.
pub const CACHE_VERSION: u32 = 1;

const MAGIC: &[u8; 8] = b"BATHOFC1";
const END_MAGIC: &[u8; 8] = b"BATHOFCE";
const HEADER_LEN: u64 = 16;
const FOOTER_LEN: u64 = 40;
const INDEX_ROW: usize = 40;
/// When more packs than this exist, a patch folds the small ones into one.
const MAX_PACKS: usize = 8;

/// Where the packs of the artifact folder `batho_dir` live.
pub fn cache_dir(batho_dir: &Path) -> PathBuf {
    batho_dir.join("facts")
}

/// The cache key of the file at `path` whose content hash starts with `hash16`.
pub fn key(path: &str, hash16: &[u8]) -> [u8; 16] {
    let mut h = blake3::Hasher::new();
    h.update(&CACHE_VERSION.to_le_bytes());
    h.update(path.as_bytes());
    h.update(&[0]);
    h.update(hash16);
    let mut k = [0; 16];
    k.copy_from_slice(&h.finalize().as_bytes()[..16]);
    k
}

/// Why an encoded skeleton was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The bytes end before the skeleton does.
    #[error("skeleton truncated at byte {0}")]
    Truncated(usize),
    /// A field holds a value no encoder writes (an unknown kind, an index out of range,
    /// text that is not UTF-8, string ends that go backwards).
    #[error("invalid skeleton: {0}")]
    Invalid(&'static str),
}

/// Appends the skeleton of `f` (everything but references and entity content hashes).
pub fn encode_skeleton(f: &FileFacts, out: &mut Vec<u8>) {
    let u32s = |out: &mut Vec<u8>, v: u32| out.extend_from_slice(&v.to_le_bytes());
    out.push(f.language.code());
    u32s(out, f.parse_errors);
    out.extend_from_slice(&f.bytes.to_le_bytes());
    u32s(out, f.lines);
    out.extend_from_slice(&f.content_hash);
    u32s(out, f.text.len() as u32);
    out.extend_from_slice(f.text.as_bytes());
    u32s(out, f.ends.len() as u32);
    for &e in &f.ends {
        u32s(out, e);
    }
    u32s(out, f.entities.len() as u32);
    for e in &f.entities {
        out.extend_from_slice(&[e.kind.code(), e.flags.0, e.bits, e.params]);
        for v in [
            e.name.0,
            e.qual.0,
            e.parent,
            e.type_name.0,
            e.signature.0,
            e.start_line,
            e.end_line,
            e.start_byte,
            e.end_byte,
        ] {
            u32s(out, v);
        }
    }
    u32s(out, f.bases.len() as u32);
    for b in &f.bases {
        for v in [b.entity, b.name.0, b.line] {
            u32s(out, v);
        }
    }
    u32s(out, f.includes.len() as u32);
    for i in &f.includes {
        u32s(out, i.path.0);
        out.push(i.system as u8);
        u32s(out, i.line);
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or(DecodeError::Truncated(self.at))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or([0; 4]),
        ))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or([0; 8]),
        ))
    }
    /// A count of items of at least `min_size` bytes each, refused when the rest of the
    /// input cannot hold that many (no huge allocation from a corrupt count).
    fn count(&mut self, min_size: usize) -> Result<usize, DecodeError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_size) > self.b.len() - self.at {
            return Err(DecodeError::Truncated(self.at));
        }
        Ok(n)
    }
}

/// Decodes a skeleton written by [`encode_skeleton`] for the file at `path`. Never panics;
/// every index is checked, so the result is safe to hand to the resolver.
pub fn decode_skeleton(path: &str, bytes: &[u8]) -> Result<FileFacts, DecodeError> {
    let mut c = Cursor { b: bytes, at: 0 };
    let language = Language::from_code(c.u8()?).ok_or(DecodeError::Invalid("language"))?;
    let parse_errors = c.u32()?;
    let size = c.u64()?;
    let lines = c.u32()?;
    let mut content_hash = [0; 32];
    content_hash.copy_from_slice(c.take(32)?);
    let text_len = c.count(1)?;
    let text = std::str::from_utf8(c.take(text_len)?)
        .map_err(|_| DecodeError::Invalid("text is not UTF-8"))?
        .to_owned();
    let n_ends = c.count(4)?;
    let mut ends = Vec::with_capacity(n_ends);
    let mut prev = 0;
    for _ in 0..n_ends {
        let e = c.u32()?;
        if e < prev || e as usize > text.len() || !text.is_char_boundary(e as usize) {
            return Err(DecodeError::Invalid("string ends"));
        }
        prev = e;
        ends.push(e);
    }
    if ends.first() != Some(&0) {
        return Err(DecodeError::Invalid("string ends"));
    }
    let sym = |v: u32| -> Result<Sym, DecodeError> {
        if (v as usize) < ends.len() {
            Ok(Sym(v))
        } else {
            Err(DecodeError::Invalid("string index"))
        }
    };
    let n_ent = c.count(40)?;
    let mut entities = Vec::with_capacity(n_ent);
    for _ in 0..n_ent {
        let head = c.take(4)?;
        let kind = NodeKind::from_code(head[0])
            .filter(|k| !matches!(k, NodeKind::File | NodeKind::External))
            .ok_or(DecodeError::Invalid("entity kind"))?;
        let mut v = [0u32; 9];
        for x in &mut v {
            *x = c.u32()?;
        }
        let parent = v[2];
        if parent != crate::extract::NO_ENTITY && parent as usize >= n_ent {
            return Err(DecodeError::Invalid("entity parent"));
        }
        entities.push(Entity {
            kind,
            flags: NodeFlags(head[1]),
            bits: head[2],
            params: head[3],
            name: sym(v[0])?,
            qual: sym(v[1])?,
            parent,
            type_name: sym(v[3])?,
            signature: sym(v[4])?,
            start_line: v[5],
            end_line: v[6],
            start_byte: v[7],
            end_byte: v[8],
            hash: [0; 32],
        });
    }
    let n_bases = c.count(12)?;
    let mut bases = Vec::with_capacity(n_bases);
    for _ in 0..n_bases {
        let entity = c.u32()?;
        if entity as usize >= n_ent {
            return Err(DecodeError::Invalid("base entity"));
        }
        bases.push(Base {
            entity,
            name: sym(c.u32()?)?,
            line: c.u32()?,
        });
    }
    let n_inc = c.count(9)?;
    let mut includes = Vec::with_capacity(n_inc);
    for _ in 0..n_inc {
        let path = sym(c.u32()?)?;
        let system = match c.u8()? {
            0 => false,
            1 => true,
            _ => return Err(DecodeError::Invalid("include kind")),
        };
        includes.push(Include {
            path,
            system,
            line: c.u32()?,
        });
    }
    if c.at != bytes.len() {
        return Err(DecodeError::Invalid("trailing bytes"));
    }
    Ok(FileFacts {
        path: path.to_owned(),
        language,
        text,
        ends,
        entities,
        bases,
        includes,
        refs: Vec::new(),
        parse_errors,
        bytes: size,
        lines,
        content_hash,
    })
}

fn check_of(bytes: &[u8]) -> [u8; 12] {
    let mut c = [0; 12];
    c.copy_from_slice(&blake3::hash(bytes).as_bytes()[..12]);
    c
}

/// Writes one pack. Entries are appended as they come; [`PackWriter::finish`] writes the
/// index and makes the pack visible under its final name (write, fsync, rename), so an
/// interrupted writer leaves only a temporary file that no reader looks at.
pub struct PackWriter {
    dir: PathBuf,
    tmp: PathBuf,
    /// `None` once finished.
    out: Option<BufWriter<File>>,
    offset: u64,
    index: Vec<([u8; 16], u64, u32, [u8; 12])>,
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
            index: Vec::new(),
        })
    }

    /// Appends the skeleton of `f` (its content hash must be set).
    pub fn add(&mut self, f: &FileFacts) -> std::io::Result<()> {
        let mut buf = Vec::new();
        encode_skeleton(f, &mut buf);
        self.add_encoded(key(&f.path, &f.content_hash[..16]), &buf)
    }

    /// Appends an already encoded skeleton under `key`.
    pub fn add_encoded(&mut self, key: [u8; 16], bytes: &[u8]) -> std::io::Result<()> {
        self.writer()?.write_all(bytes)?;
        self.index
            .push((key, self.offset, bytes.len() as u32, check_of(bytes)));
        self.offset += bytes.len() as u64;
        Ok(())
    }

    fn writer(&mut self) -> std::io::Result<&mut BufWriter<File>> {
        self.out
            .as_mut()
            .ok_or_else(|| std::io::Error::other("pack already finished"))
    }

    /// Entries so far.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Writes the index and footer and renames the pack into place; returns its path.
    pub fn finish(mut self) -> std::io::Result<PathBuf> {
        self.index.sort_by_key(|r| r.0);
        self.index.dedup_by(|a, b| a.0 == b.0);
        let mut idx = Vec::with_capacity(self.index.len() * INDEX_ROW);
        for (k, off, len, check) in &self.index {
            idx.extend_from_slice(k);
            idx.extend_from_slice(&off.to_le_bytes());
            idx.extend_from_slice(&len.to_le_bytes());
            idx.extend_from_slice(check);
        }
        let (offset, count) = (self.offset, self.index.len() as u64);
        let out = self.writer()?;
        out.write_all(&idx)?;
        out.write_all(&offset.to_le_bytes())?;
        out.write_all(&count.to_le_bytes())?;
        out.write_all(&blake3::hash(&idx).as_bytes()[..16])?;
        out.write_all(END_MAGIC)?;
        let out = self
            .out
            .take()
            .ok_or_else(|| std::io::Error::other("pack already finished"))?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        let name = format!("{}.pack", uuid::Uuid::new_v4().simple());
        let path = self.dir.join(name);
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

/// One open pack: its file and its index.
struct Pack {
    path: PathBuf,
    file: File,
    size: u64,
    index: Vec<u8>,
}

impl Pack {
    fn open(path: &Path) -> Option<Pack> {
        let file = File::open(path).ok()?;
        let size = file.metadata().ok()?.len();
        if size < HEADER_LEN + FOOTER_LEN {
            return None;
        }
        let mut head = [0u8; 16];
        file.read_exact_at(&mut head, 0).ok()?;
        if &head[..8] != MAGIC || head[8..12] != CACHE_VERSION.to_le_bytes() {
            return None;
        }
        let mut foot = [0u8; 40];
        file.read_exact_at(&mut foot, size - FOOTER_LEN).ok()?;
        if &foot[32..] != END_MAGIC {
            return None;
        }
        let off = u64::from_le_bytes(foot[..8].try_into().ok()?);
        let count = u64::from_le_bytes(foot[8..16].try_into().ok()?);
        let len = count.checked_mul(INDEX_ROW as u64)?;
        if off < HEADER_LEN || off.checked_add(len)? != size - FOOTER_LEN {
            return None;
        }
        let mut index = vec![0u8; len as usize];
        file.read_exact_at(&mut index, off).ok()?;
        if blake3::hash(&index).as_bytes()[..16] != foot[16..32] {
            return None;
        }
        Some(Pack {
            path: path.to_path_buf(),
            file,
            size: off,
            index,
        })
    }

    fn rows(&self) -> usize {
        self.index.len() / INDEX_ROW
    }

    fn row(&self, i: usize) -> &[u8] {
        &self.index[i * INDEX_ROW..(i + 1) * INDEX_ROW]
    }

    /// The checked bytes of the entry under `key`.
    fn get(&self, key: &[u8; 16]) -> Option<Vec<u8>> {
        let (mut lo, mut hi) = (0, self.rows());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.row(mid)[..16].cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return self.entry(mid),
            }
        }
        None
    }

    fn entry(&self, i: usize) -> Option<Vec<u8>> {
        let r = self.row(i);
        let off = u64::from_le_bytes(r[16..24].try_into().ok()?);
        let len = u32::from_le_bytes(r[24..28].try_into().ok()?) as u64;
        if off < HEADER_LEN || off.checked_add(len)? > self.size {
            return None;
        }
        let mut buf = vec![0u8; len as usize];
        self.file.read_exact_at(&mut buf, off).ok()?;
        (check_of(&buf)[..] == r[28..40]).then_some(buf)
    }
}

/// The packs of one artifact folder, opened for look-ups.
pub struct FactsCache {
    dir: PathBuf,
    /// Newest last; a look-up asks the newest first.
    packs: Vec<Pack>,
}

impl FactsCache {
    /// Opens every readable pack of `batho_dir`'s cache. Never fails: without packs every
    /// look-up is a miss.
    pub fn open(batho_dir: &Path) -> FactsCache {
        let dir = cache_dir(batho_dir);
        let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
        if let Ok(rd) = fs::read_dir(&dir) {
            for ent in rd.flatten() {
                let p = ent.path();
                if p.extension().is_some_and(|e| e == "pack") {
                    let t = ent
                        .metadata()
                        .and_then(|m| m.modified())
                        .unwrap_or(std::time::UNIX_EPOCH);
                    found.push((t, p));
                }
            }
        }
        found.sort();
        FactsCache {
            dir,
            packs: found.iter().filter_map(|(_, p)| Pack::open(p)).collect(),
        }
    }

    /// The skeleton of the file at `path` whose content hash starts with `hash16`, when a
    /// pack holds an intact one.
    pub fn get(&self, path: &str, hash16: &[u8]) -> Option<FileFacts> {
        let k = key(path, hash16);
        self.packs
            .iter()
            .rev()
            .find_map(|p| p.get(&k))
            .and_then(|b| decode_skeleton(path, &b).ok())
    }

    /// Number of usable packs.
    pub fn packs(&self) -> usize {
        self.packs.len()
    }

    /// Folds every pack but the largest into one when there are more than a few, so
    /// look-ups stay cheap after many patches. Entries are copied as they are (keys are
    /// content-addressed, so none can be wrong; superseded ones are dropped by the next
    /// full build, which writes one fresh pack).
    pub fn fold_small_packs(&mut self) -> std::io::Result<()> {
        if self.packs.len() <= MAX_PACKS {
            return Ok(());
        }
        let largest = (0..self.packs.len())
            .max_by_key(|&i| self.packs[i].size)
            .unwrap_or(0);
        let mut w = PackWriter::create(&self.dir)?;
        for (i, p) in self.packs.iter().enumerate() {
            if i == largest {
                continue;
            }
            for r in 0..p.rows() {
                if let Some(b) = p.entry(r) {
                    let mut k = [0; 16];
                    k.copy_from_slice(&p.row(r)[..16]);
                    w.add_encoded(k, &b)?;
                }
            }
        }
        w.finish()?;
        let old: Vec<PathBuf> = self
            .packs
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != largest)
            .map(|(_, p)| p.path.clone())
            .collect();
        for p in old {
            let _ = fs::remove_file(p);
        }
        *self = FactsCache::open(self.dir.parent().unwrap_or(&self.dir));
        Ok(())
    }
}

/// Deletes every pack and leftover temporary file of the cache but `keep` (the fresh pack
/// of a full build).
pub fn clear_except(batho_dir: &Path, keep: &Path) {
    if let Ok(rd) = fs::read_dir(cache_dir(batho_dir)) {
        for ent in rd.flatten() {
            if ent.path() != keep {
                let _ = fs::remove_file(ent.path());
            }
        }
    }
}

#[cfg(test)]
mod tests;
