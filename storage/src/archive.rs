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

/// What can go wrong exporting or loading an archive.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// An I/O error on a file we read or write.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The bytes are not a batho archive (not a tar, no index first, index unreadable).
    #[error("not a batho archive: {detail}")]
    NotAnArchive {
        /// What is wrong.
        detail: String,
    },
    /// The archive was written by a batho with another archive or storage format.
    #[error(
        "archive uses archive version {archive_version} and storage format {format_version}; this batho reads archive version {ARCHIVE_VERSION} and storage format {FORMAT_VERSION}"
    )]
    UnsupportedVersion {
        /// Archive layout version found.
        archive_version: u32,
        /// Storage format version found.
        format_version: u32,
    },
    /// A member name would escape the target directory or is not a plain relative name.
    #[error("unsafe member name {name:?} (absolute, `..` or not a plain relative path)")]
    UnsafePath {
        /// The name as found.
        name: String,
    },
    /// A member is a symlink, hard link, directory or device, not a regular file.
    #[error("member {name:?} is a {kind}, only regular files are accepted")]
    NotARegularFile {
        /// The member name.
        name: String,
        /// What it is instead.
        kind: String,
    },
    /// A member larger than the limit.
    #[error("member {name:?} is {size} bytes, over the limit of {limit} bytes")]
    Oversized {
        /// The member name.
        name: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A member appears twice.
    #[error("member {name:?} appears twice")]
    DuplicateMember {
        /// The member name.
        name: String,
    },
    /// A member the index does not list, or a name batho never writes.
    #[error("unexpected member {name:?} (not listed in the archive index)")]
    UnexpectedMember {
        /// The member name.
        name: String,
    },
    /// A member the index lists is absent.
    #[error("member {name:?} listed in the index is missing (truncated archive?)")]
    MissingMember {
        /// The member name.
        name: String,
    },
    /// A member's size differs from the index.
    #[error("member {name:?} is {found} bytes, the index says {expected}")]
    SizeMismatch {
        /// The member name.
        name: String,
        /// Size in the index.
        expected: u64,
        /// Size found.
        found: u64,
    },
    /// A member's blake3 differs from the index (or from its own name).
    #[error("member {name:?} has blake3 {found}, expected {expected}: the archive is damaged")]
    HashMismatch {
        /// The member name.
        name: String,
        /// Expected hex hash.
        expected: String,
        /// Hex hash of the bytes read.
        found: String,
    },
    /// The index, the manifest and the members disagree.
    #[error("inconsistent archive: {detail}")]
    Inconsistent {
        /// What disagrees.
        detail: String,
    },
    /// The unpacked artifact did not pass deep verification.
    #[error("the archived artifact fails verification: {}", issues.join("; "))]
    VerificationFailed {
        /// The issues found (at most a few per check).
        issues: Vec<String>,
    },
    /// The target holds an artifact of another database; `force` replaces it.
    #[error(
        "{} holds an artifact of another database ({existing}, the archive is {archive}); use --force to replace it",
        path.display()
    )]
    ForeignDatabase {
        /// The `.batho/` directory.
        path: PathBuf,
        /// The target's identity.
        existing: String,
        /// The archive's identity.
        archive: String,
    },
    /// The target has runs newer than the archive's newest; `force` replaces it anyway.
    #[error(
        "{} has newer runs than the archive (newest run ended at {existing_ms} ms, the archive's at {archive_ms} ms); use --force to replace it",
        path.display()
    )]
    NewerRuns {
        /// The `.batho/` directory.
        path: PathBuf,
        /// End of the target's newest run (a loaded run counts with its source's time).
        existing_ms: i64,
        /// End of the archive's newest run.
        archive_ms: i64,
    },
    /// A storage operation failed (no artifact to export, lock held, damaged target…).
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl ArchiveError {
    fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        ArchiveError::Io {
            path: path.into(),
            source,
        }
    }

    fn not_archive(detail: impl Into<String>) -> Self {
        ArchiveError::NotAnArchive {
            detail: detail.into(),
        }
    }

    /// Whether the archive itself is at fault (as opposed to the target or the machine).
    pub fn is_bad_archive(&self) -> bool {
        !matches!(
            self,
            ArchiveError::Io { .. }
                | ArchiveError::ForeignDatabase { .. }
                | ArchiveError::NewerRuns { .. }
                | ArchiveError::Storage(_)
        )
    }
}

type Result<T, E = ArchiveError> = std::result::Result<T, E>;

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
    let (node_count, edge_count) = (top.node_count, top.edge_count);
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

/// Checks the index's own fields and member list; returns the members by name.
fn check_index(index: &ArchiveIndex, opts: &LoadOptions) -> Result<BTreeMap<String, IndexMember>> {
    if index.format != ARCHIVE_FORMAT {
        return Err(ArchiveError::not_archive(format!(
            "index format is {:?}, expected {ARCHIVE_FORMAT:?}",
            index.format
        )));
    }
    if index.archive_version != ARCHIVE_VERSION || index.storage_format_version != FORMAT_VERSION {
        return Err(ArchiveError::UnsupportedVersion {
            archive_version: index.archive_version,
            format_version: index.storage_format_version,
        });
    }
    if parse_hex::<16>(&index.db_uuid).is_none() {
        return Err(ArchiveError::not_archive(
            "index db_uuid is not 32 hex digits",
        ));
    }
    if index.members.len() > MAX_MEMBERS {
        return Err(ArchiveError::not_archive(format!(
            "index lists {} members, more than {MAX_MEMBERS}",
            index.members.len()
        )));
    }
    let mut by_name = BTreeMap::new();
    for m in &index.members {
        let kind = classify(&m.name)?;
        let limit = match kind {
            MemberName::Index => {
                return Err(ArchiveError::Inconsistent {
                    detail: "the index lists itself".into(),
                });
            }
            MemberName::Manifest => MAX_MANIFEST_BYTES.min(opts.max_member_bytes),
            MemberName::Segment(h) => {
                if m.blake3 != blake3::Hash::from_bytes(h).to_hex().as_str() {
                    return Err(ArchiveError::Inconsistent {
                        detail: format!("segment {} is listed with another hash", m.name),
                    });
                }
                opts.max_member_bytes
            }
        };
        if parse_hex::<32>(&m.blake3).is_none() {
            return Err(ArchiveError::not_archive(format!(
                "member {:?} has no valid blake3",
                m.name
            )));
        }
        if m.size > limit {
            return Err(ArchiveError::Oversized {
                name: m.name.clone(),
                size: m.size,
                limit,
            });
        }
        if by_name.insert(m.name.clone(), m.clone()).is_some() {
            return Err(ArchiveError::DuplicateMember {
                name: m.name.clone(),
            });
        }
    }
    if !by_name.contains_key(names::MANIFEST) {
        return Err(ArchiveError::MissingMember {
            name: names::MANIFEST.into(),
        });
    }
    Ok(by_name)
}

fn entry_kind(t: tar::EntryType) -> Option<&'static str> {
    Some(match t {
        tar::EntryType::Regular | tar::EntryType::Continuous => return None,
        tar::EntryType::Symlink => "symlink",
        tar::EntryType::Link => "hard link",
        tar::EntryType::Directory => "directory",
        tar::EntryType::Char | tar::EntryType::Block => "device",
        tar::EntryType::Fifo => "fifo",
        _ => "special entry",
    })
}

/// The name of a tar entry as UTF-8 text (long names from GNU/PAX headers included).
fn entry_name<R: Read>(e: &tar::Entry<'_, R>) -> Result<String> {
    let raw = e.path_bytes();
    String::from_utf8(raw.into_owned())
        .map_err(|_| ArchiveError::not_archive("member name is not UTF-8"))
}

/// Removes the temporary load directory unless disarmed.
struct TempDir(Option<PathBuf>);

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_dir_all(p);
        }
    }
}

/// A simulated crash (tests): the temporary directory stays behind, as after a kill.
fn abandon(guard: &mut TempDir) -> ArchiveError {
    guard.0 = None;
    simulated().into()
}

/// Loads the archive at `archive` into the store in `batho_dir` (created if missing).
pub fn load_archive(batho_dir: &Path, archive: &Path, opts: &LoadOptions) -> Result<LoadReport> {
    let f = File::open(archive).map_err(|e| ArchiveError::io(archive, e))?;
    load_from_reader(
        batho_dir,
        io::BufReader::with_capacity(1 << 20, f),
        &archive.display().to_string(),
        opts,
    )
}

/// [`load_archive`] from any reader; `label` names the source in the run and the audit log.
pub fn load_from_reader(
    batho_dir: &Path,
    reader: impl Read,
    label: &str,
    opts: &LoadOptions,
) -> Result<LoadReport> {
    load_with(batho_dir, reader, label, opts, &mut |_| false)
}

/// The newest end time of the completed runs of a history; a run recorded by a load counts
/// with the end time of the run it loaded (its message carries it), so loading a newer
/// CI archive after an older one needs no `--force`.
fn newest_run_ms(runs: &[RunRecord]) -> Option<i64> {
    runs.iter()
        .filter(|r| r.status == RunStatus::Completed)
        .map(|r| loaded_source_end(r).unwrap_or(r.ended_at_ms))
        .max()
}

/// For a run recorded by a load: the end time of the source run.
pub fn loaded_source_end(r: &RunRecord) -> Option<i64> {
    let rest = r.message.strip_prefix(LOAD_MESSAGE_PREFIX)?;
    let (_, tail) = rest.rsplit_once("; source run ended at ")?;
    tail.strip_suffix(" ms")?.parse().ok()
}

pub(crate) fn load_with(
    batho_dir: &Path,
    reader: impl Read,
    label: &str,
    opts: &LoadOptions,
    crash: &mut dyn FnMut(LoadStep) -> bool,
) -> Result<LoadReport> {
    let t0 = Instant::now();
    let started_at_ms = now_ms();
    let mut tar = tar::Archive::new(reader);
    let mut entries = tar
        .entries()
        .map_err(|e| ArchiveError::not_archive(format!("cannot read the tar stream: {e}")))?;
    let bad_tar = |e: io::Error| ArchiveError::not_archive(format!("damaged tar stream: {e}"));

    // 1. The index, which must come first.
    let mut first = entries
        .next()
        .ok_or_else(|| ArchiveError::not_archive("empty archive"))?
        .map_err(bad_tar)?;
    let name = entry_name(&first)?;
    if let Some(kind) = entry_kind(first.header().entry_type()) {
        return Err(ArchiveError::NotARegularFile {
            name,
            kind: kind.into(),
        });
    }
    if classify(&name)? != MemberName::Index {
        return Err(ArchiveError::not_archive(format!(
            "the first member is {name:?}, not {INDEX_NAME}"
        )));
    }
    if first.size() > MAX_INDEX_BYTES {
        return Err(ArchiveError::Oversized {
            name,
            size: first.size(),
            limit: MAX_INDEX_BYTES,
        });
    }
    let mut index_bytes = Vec::new();
    (&mut first)
        .take(MAX_INDEX_BYTES)
        .read_to_end(&mut index_bytes)
        .map_err(bad_tar)?;
    let index: ArchiveIndex = serde_json::from_slice(&index_bytes)
        .map_err(|e| ArchiveError::not_archive(format!("index does not parse: {e}")))?;
    let listed = check_index(&index, opts)?;
    let archive_uuid = parse_hex::<16>(&index.db_uuid).unwrap_or_default();

    // 2. The target store. A directory with no generation at all adopts the archive's
    //    identity; otherwise the target keeps its own.
    fs::create_dir_all(batho_dir).map_err(|e| ArchiveError::io(batho_dir, e))?;
    let dbid_path = batho_dir.join(names::DBID);
    let fresh = !dbid_path.exists()
        && !batho_dir.join(names::MANIFEST).exists()
        && crate::store::list_generations(batho_dir)?.is_empty();
    if fresh {
        let tmp = write_temp(batho_dir, names::DBID, &encode_dbid(archive_uuid))?;
        // As in `Store::create_or_open`: hard_link lets two racing creators agree on one id.
        if fs::hard_link(&tmp, &dbid_path).is_err() && !dbid_path.exists() {
            fs::rename(&tmp, &dbid_path).map_err(|e| ArchiveError::io(&dbid_path, e))?;
        }
        let _ = fs::remove_file(&tmp);
        sync_dir(batho_dir)?;
    }
    let store = Store::create_or_open(batho_dir)?;
    let mut lock = store.lock_writer()?;
    let target_uuid = store.db_uuid();
    let restamp = target_uuid != archive_uuid;
    let current = match store.current_manifest() {
        Ok(m) => m,
        Err(e) if !opts.force => return Err(e.into()),
        Err(_) => None,
    };
    let has_artifact = current.as_ref().is_some_and(|m| !m.layers.is_empty());
    if has_artifact && restamp && !opts.force {
        return Err(ArchiveError::ForeignDatabase {
            path: batho_dir.to_path_buf(),
            existing: hex_uuid(target_uuid),
            archive: index.db_uuid.clone(),
        });
    }

    // No load is in progress (we hold the lock): earlier abandoned ones are garbage.
    if let Ok(rd) = fs::read_dir(batho_dir) {
        for ent in rd.flatten() {
            if ent
                .file_name()
                .to_string_lossy()
                .starts_with(LOAD_TMP_PREFIX)
            {
                let _ = fs::remove_dir_all(ent.path());
            }
        }
    }
    let tmp_dir = batho_dir.join(format!(
        "{LOAD_TMP_PREFIX}{}",
        uuid::Uuid::new_v4().simple()
    ));
    let mut guard = TempDir(Some(tmp_dir.clone()));
    let tmp_segs = tmp_dir.join(names::SEGMENTS_DIR);
    for d in [&tmp_segs, &tmp_dir.join(names::MANIFESTS_DIR)] {
        fs::create_dir_all(d).map_err(|e| ArchiveError::io(d, e))?;
    }

    // 3. Every member, streamed into the temporary store and hashed on the way.
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut manifest_bytes: Option<Vec<u8>> = None;
    let mut staged: BTreeMap<[u8; 32], PathBuf> = BTreeMap::new();
    let mut total_bytes = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    for entry in entries {
        let mut entry = entry.map_err(bad_tar)?;
        let name = entry_name(&entry)?;
        if let Some(kind) = entry_kind(entry.header().entry_type()) {
            return Err(ArchiveError::NotARegularFile {
                name,
                kind: kind.into(),
            });
        }
        let kind = classify(&name)?;
        if kind == MemberName::Index || seen.contains(&name) {
            return Err(ArchiveError::DuplicateMember { name });
        }
        let Some(want) = listed.get(&name) else {
            return Err(ArchiveError::UnexpectedMember { name });
        };
        if entry.size() != want.size {
            return Err(ArchiveError::SizeMismatch {
                name,
                expected: want.size,
                found: entry.size(),
            });
        }
        let mut hasher = blake3::Hasher::new();
        let mut got = 0u64;
        let part = match kind {
            MemberName::Segment(_) => {
                Some(tmp_segs.join(format!("{}.part", &name["segments/".len()..])))
            }
            _ => None,
        };
        let mut sink = match &part {
            Some(p) => Some(io::BufWriter::with_capacity(
                1 << 20,
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(p)
                    .map_err(|e| ArchiveError::io(p, e))?,
            )),
            None => None,
        };
        let mut mbuf = Vec::new();
        loop {
            let n = entry.read(&mut buf).map_err(bad_tar)?;
            if n == 0 {
                break;
            }
            got += n as u64;
            if got > want.size {
                break;
            }
            hasher.update(&buf[..n]);
            match &mut sink {
                Some(w) => w
                    .write_all(&buf[..n])
                    .map_err(|e| ArchiveError::io(&tmp_segs, e))?,
                None => mbuf.extend_from_slice(&buf[..n]),
            }
        }
        if let Some(w) = sink {
            w.into_inner()
                .map_err(|e| ArchiveError::io(&tmp_segs, e.into_error()))?;
        }
        if got != want.size {
            return Err(ArchiveError::SizeMismatch {
                name,
                expected: want.size,
                found: got,
            });
        }
        let found = hasher.finalize().to_hex().to_string();
        if found != want.blake3 {
            return Err(ArchiveError::HashMismatch {
                name,
                expected: want.blake3.clone(),
                found,
            });
        }
        total_bytes += got;
        match kind {
            MemberName::Manifest => manifest_bytes = Some(mbuf),
            MemberName::Segment(h) => {
                staged.insert(h, part.unwrap_or_default());
            }
            MemberName::Index => {}
        }
        seen.insert(name);
    }
    if let Some(missing) = listed.keys().find(|n| !seen.contains(*n)) {
        return Err(ArchiveError::MissingMember {
            name: missing.clone(),
        });
    }
    let mbytes = manifest_bytes.ok_or_else(|| ArchiveError::MissingMember {
        name: names::MANIFEST.into(),
    })?;
    let body = manifest::decode(&mbytes, Path::new("<archive>/MANIFEST"))?;
    if body.db_uuid != archive_uuid || body.generation != index.generation {
        return Err(ArchiveError::Inconsistent {
            detail: "the manifest's identity or generation differs from the index".into(),
        });
    }
    let named: BTreeSet<[u8; 32]> = body
        .layers
        .iter()
        .flat_map(|l| l.segments.iter().map(|s| s.hash))
        .collect();
    if body.layers.is_empty() {
        return Err(ArchiveError::Inconsistent {
            detail: "the manifest holds no graph".into(),
        });
    }
    if named != staged.keys().copied().collect() {
        return Err(ArchiveError::Inconsistent {
            detail: "the segments in the archive differ from those its manifest names".into(),
        });
    }
    for s in body.layers.iter().flat_map(|l| &l.segments) {
        if listed
            .get(&segment_member_name(s))
            .is_none_or(|m| m.size != s.len)
        {
            return Err(ArchiveError::Inconsistent {
                detail: format!(
                    "segment {} has another length in the manifest",
                    s.file_name()
                ),
            });
        }
    }

    // 4. Refusals that need the archive's history.
    if let Some(cur) = current.as_ref().filter(|_| has_artifact && !opts.force)
        && let (Some(existing_ms), Some(archive_ms)) =
            (newest_run_ms(&cur.runs), newest_run_ms(&body.runs))
        && existing_ms > archive_ms
    {
        return Err(ArchiveError::NewerRuns {
            path: batho_dir.to_path_buf(),
            existing_ms,
            archive_ms,
        });
    }

    // 5. Name the segments in the temporary store; restamp them with the target's identity
    //    when it differs (a new header, hence new content and name).
    let mut renamed: BTreeMap<[u8; 32], SegmentRef> = BTreeMap::new();
    for s in body.layers.iter().flat_map(|l| &l.segments) {
        if renamed.contains_key(&s.hash) {
            continue;
        }
        let part = &staged[&s.hash];
        let mut r = s.clone();
        if restamp {
            let mut f = OpenOptions::new()
                .read(true)
                .write(true)
                .open(part)
                .map_err(|e| ArchiveError::io(part, e))?;
            let mut hdr = [0u8; SEGMENT_HEADER_LEN];
            f.read_exact(&mut hdr)
                .map_err(|e| ArchiveError::io(part, e))?;
            let h = SegmentHeader::decode(&hdr, part)?;
            if h.db_uuid != archive_uuid {
                return Err(ArchiveError::Inconsistent {
                    detail: format!("segment {} belongs to another database", s.file_name()),
                });
            }
            let new = SegmentHeader {
                db_uuid: target_uuid,
                ..h
            };
            f.seek(SeekFrom::Start(0))
                .and_then(|_| f.write_all(&new.encode()))
                .map_err(|e| ArchiveError::io(part, e))?;
            drop(f);
            r.hash = *hash_file(part)?.as_bytes();
        }
        let dst = tmp_segs.join(r.file_name());
        File::open(part)
            .and_then(|f| f.sync_all())
            .map_err(|e| ArchiveError::io(part, e))?;
        fs::rename(part, &dst).map_err(|e| ArchiveError::io(&dst, e))?;
        renamed.insert(s.hash, r);
    }
    let layers_at = |generation: u64| -> Vec<Layer> {
        body.layers
            .iter()
            .map(|l| Layer {
                created_generation: generation,
                segments: l
                    .segments
                    .iter()
                    .map(|s| renamed[&s.hash].clone())
                    .collect(),
                ..l.clone()
            })
            .collect()
    };
    let tmp_body = ManifestBody {
        generation: body.generation,
        db_uuid: target_uuid,
        created_at_ms: body.created_at_ms,
        layers: layers_at(body.generation),
        runs: body.runs.clone(),
    };
    let tmp_bytes = manifest::encode(&tmp_body)?;
    fs::write(tmp_dir.join(names::DBID), encode_dbid(target_uuid))
        .map_err(|e| ArchiveError::io(&tmp_dir, e))?;
    fs::write(
        generation_manifest_path(&tmp_dir, body.generation),
        &tmp_bytes,
    )
    .map_err(|e| ArchiveError::io(&tmp_dir, e))?;
    fs::write(tmp_dir.join(names::MANIFEST), &tmp_bytes)
        .map_err(|e| ArchiveError::io(&tmp_dir, e))?;
    if crash(LoadStep::Unpacked) {
        return Err(abandon(&mut guard));
    }

    // 6. Deep verification of the unpacked artifact, before anything becomes current.
    let art = Artifact::open(&tmp_dir)?;
    let issues = art.verify(true);
    drop(art);
    if !issues.is_empty() {
        return Err(ArchiveError::VerificationFailed {
            issues: issues
                .iter()
                .map(|i| format!("{}: {}", i.what, i.detail))
                .collect(),
        });
    }
    if crash(LoadStep::Verified) {
        return Err(abandon(&mut guard));
    }

    // 7. Commit: segments into place (unreachable until the manifest names them), then the
    //    ordinary manifest swap.
    let seg_dir = batho_dir.join(names::SEGMENTS_DIR);
    let mut segments_written = 0;
    for r in renamed.values() {
        let src = tmp_segs.join(r.file_name());
        let dst = seg_dir.join(r.file_name());
        // Content addressing: an existing file of the right length already holds these bytes
        // (the same rule as a commit; `fix` catches damage behind a name).
        if fs::metadata(&dst).is_ok_and(|m| m.len() == r.len) {
            continue;
        }
        fs::rename(&src, &dst).map_err(|e| ArchiveError::io(&dst, e))?;
        segments_written += 1;
        if crash(LoadStep::SegmentMoved) {
            return Err(abandon(&mut guard));
        }
    }
    sync_dir(&seg_dir)?;
    if crash(LoadStep::SegmentsSynced) {
        return Err(abandon(&mut guard));
    }
    let source = body
        .runs
        .iter()
        .rev()
        .find(|r| r.status == RunStatus::Completed);
    let top = body.layers.last().cloned().unwrap_or_else(|| Layer {
        kind: 0,
        created_generation: 0,
        node_count: 0,
        edge_count: 0,
        segments: Vec::new(),
    });
    let source_end = source.map(|r| loaded_source_end(r).unwrap_or(r.ended_at_ms));
    let run_uuid = uuid::Uuid::new_v4().to_string();
    let run = RunRecord {
        uuid: run_uuid.clone(),
        kind: RunKind::Build,
        started_at_ms,
        ended_at_ms: now_ms(),
        status: RunStatus::Completed,
        git_commit: source.and_then(|r| r.git_commit.clone()),
        git_branch: source.and_then(|r| r.git_branch.clone()),
        node_count: top.node_count,
        edge_count: top.edge_count,
        file_count: source.map_or(0, |r| r.file_count),
        skipped_files: source.map_or(0, |r| r.skipped_files),
        duration_ms: t0.elapsed().as_millis() as u64,
        generation: 0,
        message: format!(
            "{LOAD_MESSAGE_PREFIX}{label} (archive generation {}, source run {}); source run ended at {} ms",
            body.generation,
            source.map_or("none", |r| r.uuid.as_str()),
            source_end.unwrap_or(0)
        ),
    };
    let previous_generation = current.as_ref().map(|m| m.generation);
    let runs = current.map(|m| m.runs).unwrap_or_default();
    let mut crashed = false;
    let published = lock.publish_layers_with(layers_at, runs, Some(run), &mut |s| {
        crashed = crash(LoadStep::Publish(s));
        crashed
    });
    if crashed {
        return Err(abandon(&mut guard));
    }
    let generation = published?;
    let audit = AuditLog::new(batho_dir).append(
        "load",
        &format!(
            "loaded {label} (archive generation {}, database {}{}) as generation {generation}",
            body.generation,
            index.db_uuid,
            if restamp {
                format!(", restamped as {}", hex_uuid(target_uuid))
            } else {
                String::new()
            }
        ),
    )?;
    if crash(LoadStep::Audited) {
        return Err(abandon(&mut guard));
    }
    drop(guard);
    drop(lock);
    Ok(LoadReport {
        dir: batho_dir.to_path_buf(),
        generation,
        previous_generation,
        archive_generation: body.generation,
        db_uuid: hex_uuid(target_uuid),
        restamped: restamp,
        node_count: top.node_count,
        edge_count: top.edge_count,
        bytes: total_bytes,
        members: seen.len(),
        segments_written,
        verified: true,
        run_uuid,
        audit,
        elapsed_ms: t0.elapsed().as_millis() as u64,
    })
}

/// Reads the index of an archive without loading it (for `batho load --dry-run`-like
/// inspection and tests).
pub fn read_index(archive: &Path) -> Result<ArchiveIndex> {
    let f = File::open(archive).map_err(|e| ArchiveError::io(archive, e))?;
    let mut tar = tar::Archive::new(io::BufReader::new(f));
    let mut entries = tar
        .entries()
        .map_err(|e| ArchiveError::not_archive(e.to_string()))?;
    let mut first = entries
        .next()
        .ok_or_else(|| ArchiveError::not_archive("empty archive"))?
        .map_err(|e| ArchiveError::not_archive(e.to_string()))?;
    if entry_name(&first)? != INDEX_NAME {
        return Err(ArchiveError::not_archive(
            "the first member is not the index",
        ));
    }
    let mut b = Vec::new();
    (&mut first)
        .take(MAX_INDEX_BYTES)
        .read_to_end(&mut b)
        .map_err(|e| ArchiveError::io(archive, e))?;
    serde_json::from_slice(&b).map_err(|e| ArchiveError::not_archive(e.to_string()))
}

#[cfg(test)]
#[path = "archive_tests.rs"]
mod tests;
