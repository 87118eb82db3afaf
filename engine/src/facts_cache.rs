//! The facts cache: each indexed file's extracted structure, kept beside the artifact so
//! that a patch can show the resolver an unchanged file without parsing it again, and
//! can tell which unchanged files mention a name.
//!
//! A patch resolves the changed files against *context*: every file that defines a name
//! they use or that their translation units include. On a kernel-size tree that is
//! thousands of files for a one-line edit, and parsing them again is what made a patch
//! slow. The cache holds, per file:
//! - a *skeleton* of its [`FileFacts`]: entities (without their content hashes), base
//!   classes, includes and the string arena, but no references. A skeleton is exactly what
//!   the resolver needs of a context file.
//! - a *references entry*: the entities' content hashes and the references, the rest of
//!   the facts. An unchanged file whose references a patch resolves again (a 500-file
//!   checkout re-resolves ~2,900 of them on the kernel) is loaded whole from the two
//!   entries instead of parsed; only changed files are always parsed. Kept apart so that
//!   the many context look-ups decompress no references.
//! - a *name filter*: a Bloom filter of every name the file's references, qualifiers,
//!   receivers, base clauses and qualified names mention. When a patch defines a name, the
//!   files whose filter may hold it are re-resolved: a reference that found nothing leaves
//!   no edge in the graph to follow back, so without the filter a new definition would
//!   stay unseen by the unchanged files that use it.
//!
//! Layout: `.batho/facts/*.pack`, each an immutable pack file written by a build (one for
//! the whole tree) or a patch (the files it parsed). An entry is keyed by the blake3 of
//! (cache version, entry kind, path, the file's content hash cut to the artifact's
//! [`CONTENT_HASH_LEN`] bytes, which a patch compares), so an entry can
//! never describe other bytes than the ones it is asked for: no invalidation is needed,
//! stale entries are only garbage. The cache is never trusted blindly: every entry, the
//! index and the filters carry checksums, and a pack or entry that is damaged, truncated
//! or of another version is a miss (the file is parsed, or counts as mentioning every
//! name), never an error or a wrong answer.
//!
//! Pack file, little-endian:
//! ```text
//! header  "BATHOFC1" · version u32 · reserved u32                               16 bytes
//! entries skeletons, each LZ4-compressed (block format, size prepended)
//! filters name filters, back to back
//! index   count × { key [16] · offset u64 · len u32 · check [12] ·
//!                   filter offset u64 · filter len u32 }               sorted by key
//! footer  index offset u64 · count u64 · blake3(index)[..16] ·
//!         filters offset u64 · blake3(filters)[..16] · "BATHOFCE"               64 bytes
//! ```
//! `check` is the first 12 bytes of the blake3 of the entry's stored (compressed) bytes,
//! verified before anything is decompressed. A references entry has an empty filter.

mod pack;
mod skeleton;

#[cfg(test)]
mod tests;

use std::fs;
use std::path::{Path, PathBuf};

use batho_storage::CONTENT_HASH_LEN;

use crate::extract::mix64;
use crate::extract::{FileFacts, Sym};
use pack::Pack;
pub use pack::PackWriter;
pub use skeleton::{
    DecodeError, RefsPart, decode_refs, decode_skeleton, encode_refs, encode_skeleton,
};

/// Bumped whenever extraction or the encoding changes what a pack holds: packs of
/// another version are ignored. (6: keys hash the artifact's 8-byte content-hash prefix;
/// 7: references entries, tagged encodings; 8: uses in a construct parsed whole inside an
/// ERROR node no longer flagged as found in an error; 9: include-guard blocks; 10: byte
/// offsets and sizes of files that are not UTF-8 count the file's bytes, and references
/// entries list every further use site; 11: entities carry the comment above them; 12:
/// skeletons list the calls written in macro bodies; 13: functions defined by file-scope
/// macro invocations, and calls through names that a file's macros build.)
pub const CACHE_VERSION: u32 = 13;

/// When more packs than this exist, a patch folds the small ones into one.
const MAX_PACKS: usize = 8;

/// Where the packs of the artifact folder `batho_dir` live.
pub fn cache_dir(batho_dir: &Path) -> PathBuf {
    batho_dir.join("facts")
}

/// The cache key of the file at `path` with content hash `hash`: the full blake3 of its
/// bytes (a build's facts) or the prefix an artifact stores (a patch's look-up). Only the
/// first [`CONTENT_HASH_LEN`] bytes are keyed, so both give the same key.
pub fn key(path: &str, hash: &[u8]) -> [u8; 16] {
    key_of(b'S', path, hash)
}

/// The key of the references entry of the file at `path` with content hash `hash`.
pub fn refs_key(path: &str, hash: &[u8]) -> [u8; 16] {
    key_of(b'R', path, hash)
}

fn key_of(kind: u8, path: &str, hash: &[u8]) -> [u8; 16] {
    let mut h = blake3::Hasher::new();
    h.update(&CACHE_VERSION.to_le_bytes());
    h.update(&[kind]);
    h.update(path.as_bytes());
    h.update(&[0]);
    h.update(&hash[..hash.len().min(CONTENT_HASH_LEN)]);
    let mut k = [0; 16];
    k.copy_from_slice(&h.finalize().as_bytes()[..16]);
    k
}

/// An encoded skeleton as a pack stores it.
fn compress(encoded: &[u8]) -> Vec<u8> {
    lz4_flex::block::compress_prepend_size(encoded)
}

/// The encoded skeleton of a stored entry; `None` when the entry is not valid LZ4 or
/// claims a size no real entry has (LZ4 cannot expand data more than 255-fold).
fn decompress(stored: &[u8]) -> Option<Vec<u8>> {
    let size = u32::from_le_bytes(stored.get(..4)?.try_into().ok()?) as usize;
    if size > stored.len().saturating_mul(255) + 64 {
        return None;
    }
    lz4_flex::block::decompress_size_prepended(stored).ok()
}

/// The hash a name filter is built from and probed with.
pub fn name_hash(name: &str) -> u64 {
    mix64(crate::extract::fx_hash(name.as_bytes()))
}

/// Probes per name. With 32 bits per name, one name a file does not mention passes the
/// filter with probability (1 - e^(-8/32))^8 ≈ 6e-6: about one file in the kernel's
/// 55,000 for every three names probed. (12 bits per name and 4 probes made a one-name
/// patch re-resolve 300 kernel files for nothing.)
const FILTER_PROBES: u64 = 8;
const FILTER_BITS_PER_NAME: u64 = 32;

fn probes(h: u64, bits: u64) -> impl Iterator<Item = u64> {
    // Each probe re-mixes the hash: double hashing (a + i·b) over a filter whose size is
    // a multiple of 64 keeps only the low bits of a and b, and names whose progressions
    // overlapped passed thirty times too often.
    (0..FILTER_PROBES).map(move |i| mix64(h ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15)) % bits)
}

/// The name filter of `f`: every `::` component of its references' names, qualifiers
/// and receivers, of its base clauses, and of its entities' qualified names (a new class
/// `Foo` changes what `Foo::bar` outside any class means) and types or alias targets.
pub fn name_filter(f: &FileFacts) -> Vec<u8> {
    // Each string of the arena is hashed once, however many references name it.
    let mut named = vec![false; f.ends.len()];
    let mut mark = |s: Sym| {
        if let Some(n) = named.get_mut(s.0 as usize) {
            *n = true;
        }
    };
    for r in &f.refs {
        [r.name, r.qual, r.recv].into_iter().for_each(&mut mark);
    }
    f.bases.iter().for_each(|b| mark(b.name));
    for e in &f.entities {
        mark(e.qual);
        mark(e.type_name);
    }
    let mut hashes: Vec<u64> = Vec::new();
    for (i, _) in named.iter().enumerate().filter(|(_, n)| **n) {
        for c in f.str(Sym(i as u32)).split("::") {
            if !c.is_empty() {
                hashes.push(name_hash(c));
            }
        }
    }
    hashes.sort_unstable();
    hashes.dedup();
    if hashes.is_empty() {
        return Vec::new();
    }
    let bits = (hashes.len() as u64 * FILTER_BITS_PER_NAME).div_ceil(64) * 64;
    let mut out = vec![0u8; (bits / 8) as usize];
    for h in hashes {
        for p in probes(h, bits) {
            out[(p / 8) as usize] |= 1 << (p % 8);
        }
    }
    out
}

/// Whether `filter` may hold the name hashed to `h` (`false` is certain).
pub fn filter_may_hold(filter: &[u8], h: u64) -> bool {
    let bits = filter.len() as u64 * 8;
    bits > 0 && probes(h, bits).all(|p| filter[(p / 8) as usize] & (1 << (p % 8)) != 0)
}

/// One row of a pack as stored: key, compressed entry, name filter.
pub type StoredRow = ([u8; 16], Vec<u8>, Vec<u8>);

/// What a pack stores of parsed facts `f` (content hash set): the skeleton with the
/// file's name filter, and the references entry. The build makes these on its parser
/// threads and hands them to [`PackWriter::add_stored`] under a lock.
pub fn stored_entries(f: &FileFacts) -> [StoredRow; 2] {
    let mut buf = Vec::new();
    encode_skeleton(f, &mut buf);
    let skeleton = compress(&buf);
    buf.clear();
    encode_refs(f, &mut buf);
    [
        (key(&f.path, &f.content_hash), skeleton, name_filter(f)),
        (
            refs_key(&f.path, &f.content_hash),
            compress(&buf),
            Vec::new(),
        ),
    ]
}

impl PackWriter {
    /// Appends the entries of `f` (parsed facts, content hash set).
    pub fn add(&mut self, f: &FileFacts) -> std::io::Result<()> {
        for (key, stored, filter) in stored_entries(f) {
            self.add_stored(key, &stored, &filter)?;
        }
        Ok(())
    }
}

/// The packs of one artifact folder, opened for look-ups.
pub struct FactsCache {
    dir: PathBuf,
    /// Newest last; a look-up asks the newest first.
    packs: Vec<Pack>,
}

/// The pack files of `batho_dir`'s cache, sorted (none when it has no cache folder).
pub(crate) fn pack_files(batho_dir: &Path) -> Vec<PathBuf> {
    let Ok(listing) = fs::read_dir(cache_dir(batho_dir)) else {
        return Vec::new();
    };
    let mut packs: Vec<PathBuf> = listing
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|x| x == "pack"))
        .collect();
    packs.sort();
    packs
}

/// The pack files of `batho_dir`'s cache that `fix --deep` reports, with what is wrong:
/// a header, index or footer that does not verify (damaged, truncated, or of another cache
/// version), or an entry or filter that fails its check. Reads every byte of every pack.
pub(crate) fn damaged_packs(batho_dir: &Path) -> Vec<(PathBuf, String)> {
    let mut damaged = Vec::new();
    for path in pack_files(batho_dir) {
        let problem = match Pack::open(&path) {
            None => Some(
                "its header, index or footer does not verify (damaged, truncated, or of \
                 another cache version)"
                    .to_string(),
            ),
            Some(pack) => (0..pack.rows())
                .find(|&row| pack.entry(row).is_none() || pack.filter(row).is_none())
                .map(|row| format!("entry {row} fails its check")),
        };
        if let Some(problem) = problem {
            damaged.push((path, problem));
        }
    }
    damaged
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

    /// The skeleton of the file at `path` with content hash `hash` (full or stored, see
    /// [`key`]), when a pack holds an intact one.
    pub fn get(&self, path: &str, hash: &[u8]) -> Option<FileFacts> {
        self.stored(&key(path, hash))
            .and_then(|b| decode_skeleton(path, &b).ok())
    }

    /// The whole facts (skeleton and references entry) of the file at `path` with
    /// content hash `hash`, as parsing it gives them, when packs hold both intact.
    pub fn get_full(&self, path: &str, hash: &[u8]) -> Option<FileFacts> {
        let refs = decode_refs(&self.stored(&refs_key(path, hash))?).ok()?;
        let mut f = self.get(path, hash)?;
        refs.complete(&mut f).ok()?;
        Some(f)
    }

    /// Whether some pack has both entries of the file at `path` with content hash
    /// `hash` (indexed only: nothing is read or checked), so writing them again is waste.
    pub fn holds(&self, path: &str, hash: &[u8]) -> bool {
        [key(path, hash), refs_key(path, hash)]
            .iter()
            .all(|k| self.packs.iter().any(|p| p.find(k).is_some()))
    }

    /// The decompressed entry of key `k`, newest pack first.
    fn stored(&self, k: &[u8; 16]) -> Option<Vec<u8>> {
        self.packs
            .iter()
            .rev()
            .find_map(|p| p.find(k).and_then(|i| p.entry(i)))
            .and_then(|b| decompress(&b))
    }

    /// Whether the file at `path` with content hash `hash` (full or stored, see [`key`])
    /// may mention any of the names hashed (by [`name_hash`]) to `names`; `None` when no
    /// pack has an intact filter for it.
    pub fn may_mention(&self, path: &str, hash: &[u8], names: &[u64]) -> Option<bool> {
        let filter = self.filter(path, hash)?;
        Some(names.iter().any(|&h| filter_may_hold(filter, h)))
    }

    /// The intact name filter of the file at `path` with content hash `hash`, to probe
    /// with [`filter_may_hold`] (for questions that [`FactsCache::may_mention`] cannot ask
    /// in one call).
    pub fn filter(&self, path: &str, hash: &[u8]) -> Option<&[u8]> {
        let k = key(path, hash);
        self.packs
            .iter()
            .rev()
            .find_map(|p| p.find(&k).and_then(|i| p.filter(i)))
    }

    /// Reads, checks and decodes every entry and filter of every pack: (intact entries,
    /// damaged ones). Used by tests and the fuzz target; never panics.
    pub fn scan(&self) -> (u64, u64) {
        let (mut ok, mut bad) = (0, 0);
        for p in &self.packs {
            for i in 0..p.rows() {
                let decoded = p
                    .entry(i)
                    .and_then(|b| decompress(&b))
                    .filter(|b| decode_skeleton("scan.c", b).is_ok() || decode_refs(b).is_ok());
                match (decoded, p.filter(i)) {
                    (Some(_), Some(f)) => {
                        let _ = filter_may_hold(f, name_hash("main"));
                        ok += 1;
                    }
                    _ => bad += 1,
                }
            }
        }
        (ok, bad)
    }

    /// Number of usable packs.
    pub fn packs(&self) -> usize {
        self.packs.len()
    }

    /// [`FactsCache::fold_small_packs`] for the cache of `batho_dir`, opening it only when
    /// it has more packs than a few (counting names costs no index read).
    pub fn fold_if_many(batho_dir: &Path) -> std::io::Result<()> {
        let packs = fs::read_dir(cache_dir(batho_dir))?
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "pack"))
            .count();
        if packs <= MAX_PACKS {
            return Ok(());
        }
        FactsCache::open(batho_dir).fold_small_packs()
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
            .max_by_key(|&i| self.packs[i].entry_bytes())
            .unwrap_or(0);
        let mut w = PackWriter::create(&self.dir)?;
        for (i, p) in self.packs.iter().enumerate() {
            if i == largest {
                continue;
            }
            for r in 0..p.rows() {
                if let (Some(b), Some(filter)) = (p.entry(r), p.filter(r)) {
                    w.add_stored(p.key(r), &b, filter)?;
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
