//! File stamps: what `stat` said about each indexed file when its content was hashed.
//!
//! Hash-mode change detection compares every file's blake3 with its `File` node, which
//! reads the whole tree (a kernel: 1.2 GB, most of a one-file patch's second). Like git's
//! index, a patch skips a file whose stamp (size, mtime, ctime, inode, device) is the one
//! recorded when the file last hashed to the content hash the artifact holds for it. Any
//! write to a file changes its ctime, which no program can set back, so an edited file is
//! never skipped; a file merely touched is hashed again and found unchanged.
//!
//! Racy stamps: a file written within the timestamp granularity of the moment it was
//! hashed could change again without its stamp changing. A stamp is therefore recorded
//! only when it is not racy for the hashing ([`Stamp::is_racy`]); others are hashed again
//! next time.
//!
//! The stamps live in `.batho/stamps`, rewritten (temporary file, rename) under the writer
//! lock after each build and patch. They are an accelerator: a missing, damaged or foreign
//! file only means every file is hashed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use batho_storage::{CONTENT_HASH_LEN, StoredHash};

/// What `stat` says about a file, as far as change detection cares (the store's stamp
/// type: its verified segments use the same).
pub use batho_storage::file_stamp::FileStamp as Stamp;
pub(crate) use batho_storage::file_stamp::now_ns;

const MAGIC: &[u8; 8] = b"BATHOSTM";
const VERSION: u32 = 2;
const FILE_NAME: &str = "stamps";

/// The recorded stamps, by repository path, with the (stored) content hash the file had
/// when stamped.
#[derive(Debug, Default, PartialEq)]
pub struct Stamps {
    entries: HashMap<String, (Stamp, StoredHash)>,
}

/// The stamps file of the artifact at `dir`.
pub(crate) fn file_path(dir: &Path) -> PathBuf {
    dir.join(FILE_NAME)
}

/// Whether the artifact at `dir` has a stamps file that does not decode (damaged,
/// truncated, or of another version): `fix --deep` reports it.
pub(crate) fn file_is_damaged(dir: &Path) -> bool {
    std::fs::read(file_path(dir)).is_ok_and(|bytes| Stamps::decode(&bytes).is_none())
}

impl Stamps {
    /// The stamps of the artifact at `dir`; none if the file is missing or not valid.
    pub fn load(dir: &Path) -> Stamps {
        std::fs::read(dir.join(FILE_NAME))
            .ok()
            .and_then(|b| Stamps::decode(&b))
            .unwrap_or_default()
    }

    /// Whether the file at `path`, whose stamp is now `stamp`, certainly still has the
    /// content the artifact holds (`indexed` is its `File` node's hash).
    pub(crate) fn unchanged(
        &self,
        path: &str,
        stamp: Option<&Stamp>,
        indexed: &StoredHash,
    ) -> bool {
        match (stamp, self.entries.get(path)) {
            (Some(now), Some((then, hash))) => now == then && hash == indexed,
            _ => false,
        }
    }

    /// Records that the file at `path` with `stamp` hashed to `hash` in a pass that began
    /// at `hashed_from_ns`; a racy stamp is dropped instead.
    pub(crate) fn record(
        &mut self,
        path: &str,
        stamp: Option<Stamp>,
        hash: &[u8],
        hashed_from_ns: i64,
    ) {
        match stamp {
            Some(s) if !s.is_racy(hashed_from_ns) => {
                let mut h = [0; CONTENT_HASH_LEN];
                h.copy_from_slice(&hash[..CONTENT_HASH_LEN]);
                self.entries.insert(path.to_owned(), (s, h));
            }
            _ => {
                self.entries.remove(path);
            }
        }
    }

    /// Number of stamped files.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Drops the stamps of `paths` (files no longer indexed).
    pub(crate) fn forget(&mut self, paths: &[String]) {
        for p in paths {
            self.entries.remove(p);
        }
    }

    /// Writes the stamps for the artifact at `dir` (temporary file, then rename). Callers
    /// hold the writer lock.
    pub(crate) fn save(&self, dir: &Path) -> std::io::Result<()> {
        let tmp: PathBuf = dir.join(format!("{FILE_NAME}.tmp-{}", uuid::Uuid::new_v4()));
        std::fs::write(&tmp, self.encode())?;
        std::fs::rename(&tmp, dir.join(FILE_NAME)).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }

    /// `MAGIC`, version (u32), count (u32), then per entry sorted by path: path length
    /// (u32), path, size, mtime, ctime, inode, device (8 bytes each), hash (`CONTENT_HASH_LEN` bytes); then
    /// the blake3 of everything before (32 bytes). Little-endian.
    fn encode(&self) -> Vec<u8> {
        let mut paths: Vec<&String> = self.entries.keys().collect();
        paths.sort();
        let mut out = Vec::with_capacity(16 + paths.len() * 100);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(paths.len() as u32).to_le_bytes());
        for p in paths {
            let (s, h) = &self.entries[p];
            out.extend_from_slice(&(p.len() as u32).to_le_bytes());
            out.extend_from_slice(p.as_bytes());
            for v in s.fields() {
                out.extend_from_slice(&v.to_le_bytes());
            }
            out.extend_from_slice(h);
        }
        let sum = blake3::hash(&out);
        out.extend_from_slice(sum.as_bytes());
        out
    }

    fn decode(b: &[u8]) -> Option<Stamps> {
        let (body, sum) = b.split_at_checked(b.len().checked_sub(32)?)?;
        if blake3::hash(body).as_bytes() != sum {
            return None;
        }
        let mut r = Reader(body);
        if r.take(8)? != MAGIC || r.u32()? != VERSION {
            return None;
        }
        let count = r.u32()?;
        let mut entries = HashMap::new();
        for _ in 0..count {
            let len = r.u32()? as usize;
            let path = std::str::from_utf8(r.take(len)?).ok()?.to_owned();
            let stamp = Stamp::from_fields([r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?]);
            let hash: StoredHash = r.take(CONTENT_HASH_LEN)?.try_into().ok()?;
            entries.insert(path, (stamp, hash));
        }
        r.0.is_empty().then_some(Stamps { entries })
    }
}

/// Writes the stamps of a whole build of `files` at `dir`: each indexed file (a `File` node
/// of `graph`) with the content hash it was indexed with. `hashed_from_ns`: when the build
/// began, before discovery took the stamps.
pub(crate) fn save_for_build(
    dir: &Path,
    files: &[crate::discover::SourceFile],
    graph: &batho_storage::GraphBuilder,
    hashed_from_ns: i64,
) -> std::io::Result<()> {
    let by_path: HashMap<&str, &crate::discover::SourceFile> =
        files.iter().map(|f| (f.rel_path.as_str(), f)).collect();
    let mut stamps = Stamps::default();
    for n in &graph.nodes {
        if n.kind != batho_schema::NodeKind::File {
            continue;
        }
        let path = graph.str(n.file);
        if let Some(f) = by_path.get(path) {
            stamps.record(path, f.stamp, &n.content_hash, hashed_from_ns);
        }
    }
    stamps.save(dir)
}

/// A bounds-checked cursor over the stamps file.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (a, b) = self.0.split_at_checked(n)?;
        self.0 = b;
        Some(a)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(mtime_s: i64, ctime_s: i64) -> Stamp {
        let nanoseconds = |seconds: i64| (seconds * 1_000_000_000) as u64;
        Stamp::from_fields([10, nanoseconds(mtime_s), nanoseconds(ctime_s), 7, 1])
    }

    #[test]
    fn a_stamp_is_trusted_only_with_the_same_stat_and_the_indexed_hash() {
        let now = 100 * 1_000_000_000;
        let mut s = Stamps::default();
        s.record("a.c", Some(stamp(50, 60)), &[1; 32], now);
        assert!(s.unchanged("a.c", Some(&stamp(50, 60)), &[1; 8]));
        // Any write moves ctime; the artifact may hold other content than was stamped.
        assert!(!s.unchanged("a.c", Some(&stamp(50, 61)), &[1; 8]));
        assert!(!s.unchanged("a.c", Some(&stamp(50, 60)), &[2; 8]));
        assert!(!s.unchanged("b.c", Some(&stamp(50, 60)), &[1; 8]));
        assert!(!s.unchanged("a.c", None, &[1; 8]));
    }

    #[test]
    fn a_racy_stamp_is_not_recorded_and_drops_the_old_one() {
        let now = 100 * 1_000_000_000;
        let mut s = Stamps::default();
        s.record("a.c", Some(stamp(50, 60)), &[1; 32], now);
        // Changed within the margin before hashing began: hashed again next time.
        s.record("a.c", Some(stamp(50, 99)), &[2; 32], now);
        assert!(!s.unchanged("a.c", Some(&stamp(50, 99)), &[2; 8]));
        assert!(!s.unchanged("a.c", Some(&stamp(50, 60)), &[1; 8]));
    }

    #[test]
    fn stamps_round_trip_and_damage_reads_as_none() {
        let tmp = tempfile::tempdir().unwrap();
        let now = 100 * 1_000_000_000;
        let mut s = Stamps::default();
        s.record("dir/a.c", Some(stamp(5, 6)), &[3; 32], now);
        s.record("é.h", Some(stamp(7, 8)), &[4; 32], now);
        s.save(tmp.path()).unwrap();
        assert_eq!(Stamps::load(tmp.path()), s);
        let bytes = s.encode();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert_eq!(Stamps::decode(&bad), None, "flip at {i}");
            assert_eq!(Stamps::decode(&bytes[..i]), None, "cut at {i}");
        }
        assert_eq!(Stamps::load(&tmp.path().join("missing")), Stamps::default());
    }
}
