//! The transport archive: one generation of an artifact packed into a `.tar` file that
//! CI builds once and developers load (`batho export --output FILE.tar`, `batho load`).
//!
//! An archive is a plain POSIX (ustar) tar whose members are, in this order:
//! `BATHO-ARCHIVE.json` (the index: archive and storage format versions, database identity,
//! generation, and the name, size and blake3 of every other member), `MANIFEST` (the
//! exported generation's manifest, byte for byte) and `segments/<blake3>.seg` for every
//! segment that manifest names. Nothing else is accepted.
//!
//! Loading never trusts the archive: the index must come first and parse; every member
//! must be a regular file with one of the three name shapes (no traversal, no links),
//! listed once in the index, of the listed size (and under [`LoadOptions::max_member_bytes`]),
//! with the listed blake3 — a segment's hash is also its name. The members are streamed into
//! a temporary store `.batho/load.tmp-<uuid>/`, opened and verified deep
//! ([`Artifact::verify`]) there, and only then moved into `segments/` and published as a
//! new generation of the target by the ordinary manifest swap. A crash at any point before
//! that swap leaves the previous generation current; the temporary directory is removed
//! by the next load.
//!
//! Identity: a store that has no generation yet adopts the archive's database identity.
//! A store of another identity is replaced only with `force`, and then the segments are
//! *restamped* (their header carries the database UUID, so they get the target's UUID and,
//! being content-addressed, new names) — the target's `DBID` never changes, so its older
//! generations stay valid. The load is recorded as a `Build` run whose message starts with
//! `loaded from` (a new run kind would change the manifest's rkyv layout), and appended to
//! the audit log as `load`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::audit::{AuditEntry, AuditLog};
use crate::error::StorageError;
use crate::format::{FORMAT_VERSION, SEGMENT_HEADER_LEN, SegmentHeader, encode_dbid, names};
use crate::manifest::{self, Layer, ManifestBody, RunKind, RunRecord, RunStatus, SegmentRef};
use crate::reader::Artifact;
use crate::store::{
    CommitStep, Store, generation_manifest_path, now_ms, simulated, sync_dir, write_temp,
};

/// Name of the index member (always the first member).
pub const INDEX_NAME: &str = "BATHO-ARCHIVE.json";
/// The `format` field of the index.
pub const ARCHIVE_FORMAT: &str = "batho-archive";
/// Version of the archive layout (index fields and member names) this code reads and writes.
pub const ARCHIVE_VERSION: u32 = 1;
/// Largest index member accepted.
pub const MAX_INDEX_BYTES: u64 = 1 << 20;
/// Largest manifest member accepted.
pub const MAX_MANIFEST_BYTES: u64 = 256 << 20;
/// Most members an index may list.
pub const MAX_MEMBERS: usize = 4096;
/// Prefix of the temporary directories loads unpack into (inside `.batho/`).
pub const LOAD_TMP_PREFIX: &str = "load.tmp-";
/// Prefix of the message of the run a load records.
pub const LOAD_MESSAGE_PREFIX: &str = "loaded from ";

/// One member of an archive as its index lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexMember {
    /// Path inside the archive (`MANIFEST` or `segments/<hex>.seg`).
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Lowercase hex blake3 of the bytes.
    pub blake3: String,
}

/// The index member (`BATHO-ARCHIVE.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveIndex {
    /// Always [`ARCHIVE_FORMAT`].
    pub format: String,
    /// [`ARCHIVE_VERSION`] of the writer.
    pub archive_version: u32,
    /// The storage [`FORMAT_VERSION`] of the manifest and segments.
    pub storage_format_version: u32,
    /// Database identity (32 hex digits).
    pub db_uuid: String,
    /// The exported generation.
    pub generation: u64,
    /// When the archive was written (ms since the epoch).
    pub created_at_ms: i64,
    /// Nodes of the exported generation (informational).
    pub node_count: u64,
    /// Edges of the exported generation (informational).
    pub edge_count: u64,
    /// Every other member, in archive order.
    pub members: Vec<IndexMember>,
}

/// What an export wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ExportReport {
    /// The archive written.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// The exported generation.
    pub generation: u64,
    /// Database identity (hex).
    pub db_uuid: String,
    /// Nodes of the exported generation.
    pub node_count: u64,
    /// Edges of the exported generation.
    pub edge_count: u64,
    /// The members after the index.
    pub members: Vec<IndexMember>,
    /// Wall time.
    pub elapsed_ms: u64,
}

/// Options of a load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadOptions {
    /// Replace an artifact of another database or with newer runs.
    pub force: bool,
    /// Largest member accepted (a segment of the Linux kernel's artifact is a few hundred MB).
    pub max_member_bytes: u64,
}

impl Default for LoadOptions {
    /// No force; members up to 64 GiB.
    fn default() -> Self {
        LoadOptions {
            force: false,
            max_member_bytes: 64 << 30,
        }
    }
}

/// What a load did.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LoadReport {
    /// The `.batho/` directory loaded into.
    pub dir: PathBuf,
    /// The new current generation.
    pub generation: u64,
    /// The generation that was current before (it stays on disk and in the history).
    pub previous_generation: Option<u64>,
    /// The generation the archive was exported from.
    pub archive_generation: u64,
    /// The database identity of the target after the load (hex).
    pub db_uuid: String,
    /// Whether the segments were restamped with the target's identity.
    pub restamped: bool,
    /// Nodes loaded.
    pub node_count: u64,
    /// Edges loaded.
    pub edge_count: u64,
    /// Bytes of members verified.
    pub bytes: u64,
    /// Members verified (manifest and segments).
    pub members: usize,
    /// Segment files moved into place (others were already present).
    pub segments_written: usize,
    /// Deep verification passed (always true in a returned report).
    pub verified: bool,
    /// The run recorded for the load.
    pub run_uuid: String,
    /// The audit log entry.
    pub audit: AuditEntry,
    /// Wall time.
    pub elapsed_ms: u64,
}

/// Steps of a load after which the crash tests abandon it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LoadStep {
    /// The members are in the temporary store.
    Unpacked,
    /// The temporary store verified deep.
    Verified,
    /// A segment was moved into `segments/`.
    SegmentMoved,
    /// `segments/` was fsynced.
    SegmentsSynced,
    /// A step of publishing the new manifest.
    Publish(CommitStep),
    /// The audit entry was appended.
    Audited,
}

fn hex_uuid(u: [u8; 16]) -> String {
    u.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != 2 * N || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; N];
    for (k, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * k..2 * k + 2], 16).ok()?;
    }
    Some(out)
}

/// The kinds of member names an archive may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MemberName {
    Index,
    Manifest,
    Segment([u8; 32]),
}

/// Classifies a member name, rejecting anything that is not one of the three shapes.
fn classify(name: &str) -> Result<MemberName> {
    let unsafe_path = name.is_empty()
        || name.starts_with('/')
        || name.contains('\\')
        || name.contains('\0')
        || name
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..");
    if unsafe_path {
        return Err(ArchiveError::UnsafePath { name: name.into() });
    }
    if name == INDEX_NAME {
        return Ok(MemberName::Index);
    }
    if name == names::MANIFEST {
        return Ok(MemberName::Manifest);
    }
    if let Some(rest) = name.strip_prefix("segments/")
        && let Some(hex) = rest.strip_suffix(".seg")
        && let Some(h) = parse_hex::<32>(hex)
    {
        return Ok(MemberName::Segment(h));
    }
    Err(ArchiveError::UnexpectedMember { name: name.into() })
}

fn segment_member_name(r: &SegmentRef) -> String {
    format!("{}/{}", names::SEGMENTS_DIR, r.file_name())
}

/// Hashes `path` (streaming, constant memory).
fn hash_file(path: &Path) -> Result<blake3::Hash> {
    let mut f = File::open(path).map_err(|e| ArchiveError::io(path, e))?;
    let mut h = blake3::Hasher::new();
    io::copy(&mut f, &mut h).map_err(|e| ArchiveError::io(path, e))?;
    Ok(h.finalize())
}

/// Writes generation `generation` (the current one when `None`) of the store in
/// `batho_dir` to `out` as a transport archive. The file appears complete or not at all
/// (written to a temporary name, fsynced, renamed). Every segment is re-hashed while it is
/// copied, so a damaged artifact is refused rather than exported.
pub fn export_archive(
    batho_dir: &Path,
    generation: Option<u64>,
    out: &Path,
) -> Result<ExportReport> {
    let t0 = Instant::now();
    let mpath = match generation {
        Some(g) => generation_manifest_path(batho_dir, g),
        None => batho_dir.join(names::MANIFEST),
    };
    // The manifest is read once: the segments it names are immutable, so the archive is a
    // consistent snapshot even while a writer commits.
    let mbytes = match fs::read(&mpath) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(match generation {
                Some(generation) => StorageError::NoSuchGeneration {
                    path: batho_dir.to_path_buf(),
                    generation,
                },
                None => StorageError::NoArtifact {
                    path: batho_dir.to_path_buf(),
                },
            }
            .into());
        }
        Err(e) => return Err(ArchiveError::io(&mpath, e)),
    };
    let body = manifest::decode(&mbytes, &mpath)?;
    let top = body.layers.last().ok_or_else(|| StorageError::NoArtifact {
        path: batho_dir.to_path_buf(),
    })?;
    // A delta layer's counts are index spaces that include removed nodes and edges; the
    // run that committed this generation recorded the live counts every other report shows.
    let (node_count, edge_count) = body
        .runs
        .iter()
        .rev()
        .find(|run| run.generation == body.generation && run.status == RunStatus::Completed)
        .map_or((top.node_count, top.edge_count), |run| {
            (run.node_count, run.edge_count)
        });
    let mut members = vec![IndexMember {
        name: names::MANIFEST.into(),
        size: mbytes.len() as u64,
        blake3: blake3::hash(&mbytes).to_hex().to_string(),
    }];
    let mut seen = BTreeSet::new();
    for seg in body.layers.iter().flat_map(|l| &l.segments) {
        if seen.insert(seg.hash) {
            members.push(IndexMember {
                name: segment_member_name(seg),
                size: seg.len,
                blake3: blake3::Hash::from_bytes(seg.hash).to_hex().to_string(),
            });
        }
    }
    let index = ArchiveIndex {
        format: ARCHIVE_FORMAT.into(),
        archive_version: ARCHIVE_VERSION,
        storage_format_version: FORMAT_VERSION,
        db_uuid: hex_uuid(body.db_uuid),
        generation: body.generation,
        created_at_ms: now_ms(),
        node_count,
        edge_count,
        members: members.clone(),
    };
    let index_json = serde_json::to_vec_pretty(&index).map_err(|e| StorageError::InvalidInput {
        detail: format!("cannot encode the archive index: {e}"),
    })?;

    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "archive".into());
    let tmp = parent.join(format!(
        ".{file_name}.tmp-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let result = (|| -> Result<()> {
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| ArchiveError::io(&tmp, e))?;
        let mut tar = tar::Builder::new(io::BufWriter::with_capacity(1 << 20, f));
        let mtime = u64::try_from(index.created_at_ms / 1000).unwrap_or(0);
        let append = |tar: &mut tar::Builder<_>, name: &str, size: u64, data: &mut dyn Read| {
            let mut h = tar::Header::new_ustar();
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(size);
            h.set_mode(0o644);
            h.set_mtime(mtime);
            tar.append_data(&mut h, name, data)
                .map_err(|e| ArchiveError::io(&tmp, e))
        };
        append(
            &mut tar,
            INDEX_NAME,
            index_json.len() as u64,
            &mut index_json.as_slice(),
        )?;
        append(
            &mut tar,
            names::MANIFEST,
            mbytes.len() as u64,
            &mut mbytes.as_slice(),
        )?;
        let seg_dir = batho_dir.join(names::SEGMENTS_DIR);
        for m in &members[1..] {
            let path = seg_dir.join(m.name.trim_start_matches("segments/"));
            let f = File::open(&path).map_err(|e| ArchiveError::io(&path, e))?;
            let len = f.metadata().map_err(|e| ArchiveError::io(&path, e))?.len();
            if len != m.size {
                return Err(StorageError::corrupt(
                    path.display().to_string(),
                    format!("segment is {len} bytes, the manifest says {}", m.size),
                )
                .into());
            }
            let mut reader = HashingReader {
                inner: f.take(m.size),
                hasher: blake3::Hasher::new(),
            };
            append(&mut tar, &m.name, m.size, &mut reader)?;
            let found = reader.hasher.finalize().to_hex().to_string();
            if found != m.blake3 {
                return Err(StorageError::corrupt(
                    path.display().to_string(),
                    "segment content does not match its name (blake3); run `batho fix`",
                )
                .into());
            }
        }
        let w = tar.into_inner().map_err(|e| ArchiveError::io(&tmp, e))?;
        let f = w
            .into_inner()
            .map_err(|e| ArchiveError::io(&tmp, e.into_error()))?;
        f.sync_all().map_err(|e| ArchiveError::io(&tmp, e))?;
        Ok(())
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    fs::rename(&tmp, out).map_err(|e| ArchiveError::io(out, e))?;
    sync_dir(&parent)?;
    let bytes = fs::metadata(out)
        .map_err(|e| ArchiveError::io(out, e))?
        .len();
    Ok(ExportReport {
        path: out.to_path_buf(),
        bytes,
        generation: body.generation,
        db_uuid: index.db_uuid,
        node_count,
        edge_count,
        members: members[..].to_vec(),
        elapsed_ms: t0.elapsed().as_millis() as u64,
    })
}

/// A reader that hashes what passes through it.
struct HashingReader<R> {
    inner: R,
    hasher: blake3::Hasher,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

mod error;
mod load;

pub use error::ArchiveError;
use error::Result;
#[cfg(test)]
pub(crate) use load::load_with;
pub use load::{load_archive, load_from_reader, loaded_source_end, read_index};

#[cfg(test)]
mod tests;
