//! The manifest: which segments form a generation, plus the run history.
//!
//! A manifest file is a 64-byte checksummed header followed by an rkyv archive of
//! [`ManifestBody`], read through validated access (`rkyv::access`). The same bytes are
//! written twice per commit: to `manifests/<generation>.manifest` (kept for older
//! readers, `gc` and `fix`) and to `MANIFEST` (the current pointer).
//!
//! The body already describes layered generations (a base plus deltas) so that patches
//! can later commit deltas without a format change; this version writes and reads only a
//! single base layer and refuses deltas with [`StorageError::UnsupportedFeature`].

use std::path::Path;

use rkyv::{Archive, Deserialize, Serialize};

use crate::error::{Result, StorageError};
use crate::format::{
    FORMAT_VERSION, MANIFEST_HEADER_LEN, MANIFEST_MAGIC, checksum64, le_u32, le_u64,
};

/// What kind of work a run was.
#[derive(Archive, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RunKind {
    /// A full build from source.
    Build,
    /// An incremental patch on top of an earlier generation.
    Patch,
}

/// How a run ended.
#[derive(Archive, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RunStatus {
    /// The run committed its graph.
    Completed,
    /// The run failed; the previous graph stays current.
    Failed,
}

/// One entry of the run history.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RunRecord {
    /// UUID of the run (text form).
    pub uuid: String,
    /// Build or patch.
    pub kind: RunKind,
    /// Start time, milliseconds since the Unix epoch.
    pub started_at_ms: i64,
    /// End time, milliseconds since the Unix epoch.
    pub ended_at_ms: i64,
    /// How it ended.
    pub status: RunStatus,
    /// `git rev-parse HEAD` of the repository, when it is a git checkout.
    pub git_commit: Option<String>,
    /// Current git branch, when known.
    pub git_branch: Option<String>,
    /// Nodes in the committed graph.
    pub node_count: u64,
    /// Edges in the committed graph.
    pub edge_count: u64,
    /// Source files processed.
    pub file_count: u64,
    /// Files skipped (unreadable, too large, parse failures).
    pub skipped_files: u64,
    /// Wall time of the run.
    pub duration_ms: u64,
    /// The generation whose manifest recorded this run. Set by the store on commit or
    /// `record_run`; whatever the caller put there is overwritten.
    pub generation: u64,
    /// Free-form message (error text for failed runs).
    pub message: String,
}

/// Layer kind code of a full base layer.
pub const LAYER_BASE: u8 = 0;
/// Layer kind code of a delta layer (reserved: not written or read by this version).
pub const LAYER_DELTA: u8 = 1;

/// A segment named by a manifest.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct SegmentRef {
    /// [`crate::format::SegmentKind`] code.
    pub kind: u8,
    /// blake3 of the whole segment file; its file name is the hex form.
    pub hash: [u8; 32],
    /// Length of the whole segment file in bytes.
    pub len: u64,
}

impl SegmentRef {
    /// The file name of the segment inside `segments/`.
    pub fn file_name(&self) -> String {
        format!(
            "{}.{}",
            blake3::Hash::from_bytes(self.hash).to_hex(),
            crate::format::names::SEGMENT_EXT
        )
    }
}

/// One layer of a generation: a base holds every column; a delta (future) holds new and
/// changed rows plus tombstones over the layers below it.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    /// [`LAYER_BASE`] or [`LAYER_DELTA`].
    pub kind: u8,
    /// The generation that first committed this layer (a base is shared by later deltas).
    pub created_generation: u64,
    /// Node count after applying this layer.
    pub node_count: u64,
    /// Edge count after applying this layer.
    pub edge_count: u64,
    /// The layer's segments.
    pub segments: Vec<SegmentRef>,
}

/// The body of a manifest.
#[derive(Archive, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ManifestBody {
    /// This manifest's generation; every commit and every recorded run adds one.
    pub generation: u64,
    /// Identity of the database.
    pub db_uuid: [u8; 16],
    /// When the manifest was written, milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// Layers, bottom (base) first. Empty when no graph has been committed yet.
    pub layers: Vec<Layer>,
    /// Run history, oldest first.
    pub runs: Vec<RunRecord>,
}

/// Encodes a manifest file.
pub fn encode(body: &ManifestBody) -> Result<Vec<u8>> {
    let bytes =
        rkyv::to_bytes::<rkyv::rancor::Error>(body).map_err(|e| StorageError::InvalidInput {
            detail: format!("cannot encode manifest: {e}"),
        })?;
    let mut out = Vec::with_capacity(MANIFEST_HEADER_LEN + bytes.len());
    out.extend_from_slice(&MANIFEST_MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&body.db_uuid);
    out.extend_from_slice(&body.generation.to_le_bytes());
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(&checksum64(&bytes).to_le_bytes());
    let sum = checksum64(&out[0..56]);
    out.extend_from_slice(&sum.to_le_bytes());
    out.extend_from_slice(&bytes);
    Ok(out)
}

/// Decodes and fully checks a manifest file read from `path`.
pub fn decode(file: &[u8], path: &Path) -> Result<ManifestBody> {
    let bad = |d: &str| StorageError::corrupt(path.display().to_string(), d.to_owned());
    let h = file
        .get(..MANIFEST_HEADER_LEN)
        .ok_or_else(|| bad("manifest shorter than its header"))?;
    if h[0..8] != MANIFEST_MAGIC {
        return Err(bad("bad manifest magic (not a batho manifest)"));
    }
    let version = le_u32(h, 8).unwrap_or(0);
    if version != FORMAT_VERSION {
        let checksum_matches = le_u64(h, 56) == Some(checksum64(&h[0..56]));
        return Err(crate::format::version_error(
            path,
            version,
            checksum_matches,
        ));
    }
    if le_u64(h, 56) != Some(checksum64(&h[0..56])) {
        return Err(bad("manifest header checksum mismatch"));
    }
    if le_u32(h, 12) != Some(0) {
        return Err(bad("reserved manifest header bytes are not zero"));
    }
    let body = &file[MANIFEST_HEADER_LEN..];
    if le_u64(h, 40) != Some(body.len() as u64) {
        return Err(bad(
            "manifest body length does not match the file length (truncated?)",
        ));
    }
    if le_u64(h, 48) != Some(checksum64(body)) {
        return Err(bad("manifest body checksum mismatch"));
    }
    // rkyv needs an aligned buffer; the body follows a 64-byte header inside a Vec, whose
    // alignment is only 1, so copy it into an aligned one (the manifest is small).
    let mut aligned = rkyv::util::AlignedVec::<16>::with_capacity(body.len());
    aligned.extend_from_slice(body);
    let archived = rkyv::access::<ArchivedManifestBody, rkyv::rancor::Error>(&aligned)
        .map_err(|e| bad(&format!("manifest body does not validate: {e}")))?;
    let m: ManifestBody = rkyv::deserialize::<ManifestBody, rkyv::rancor::Error>(archived)
        .map_err(|e| bad(&format!("manifest body does not deserialize: {e}")))?;
    if m.generation != le_u64(h, 32).unwrap_or(0) || h[16..32] != m.db_uuid {
        return Err(bad("manifest header and body disagree"));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> ManifestBody {
        ManifestBody {
            generation: 3,
            db_uuid: [5; 16],
            created_at_ms: 1_700_000_000_000,
            layers: vec![Layer {
                kind: LAYER_BASE,
                created_generation: 3,
                node_count: 10,
                edge_count: 20,
                segments: vec![SegmentRef {
                    kind: 1,
                    hash: [1; 32],
                    len: 128,
                }],
            }],
            runs: vec![RunRecord {
                uuid: "u".into(),
                kind: RunKind::Build,
                started_at_ms: 1,
                ended_at_ms: 2,
                status: RunStatus::Completed,
                git_commit: Some("abc".into()),
                git_branch: None,
                node_count: 10,
                edge_count: 20,
                file_count: 1,
                skipped_files: 0,
                duration_ms: 1,
                generation: 3,
                message: "ünïcode".into(),
            }],
        }
    }

    #[test]
    fn manifest_round_trips() {
        let m = sample();
        let b = encode(&m).unwrap();
        assert_eq!(decode(&b, Path::new("M")).unwrap(), m);
    }

    #[test]
    fn a_version_no_release_wrote_under_a_bad_checksum_is_damage() {
        let b = encode(&sample()).unwrap();
        let mut damaged = b.clone();
        damaged[11] ^= 0x81;
        assert!(matches!(
            decode(&damaged, Path::new("M")),
            Err(StorageError::Corrupt { .. })
        ));
        // The next release's version, under a checksum that matches: another format.
        let mut next = b.clone();
        next[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
        let sum = checksum64(&next[0..56]);
        next[56..64].copy_from_slice(&sum.to_le_bytes());
        assert!(matches!(
            decode(&next, Path::new("M")),
            Err(StorageError::UnsupportedFormat { .. })
        ));
        // A nearby version under a bad checksum may be a release's other layout: foreign.
        let mut older = b.clone();
        older[8..12].copy_from_slice(&(FORMAT_VERSION - 1).to_le_bytes());
        assert!(matches!(
            decode(&older, Path::new("M")),
            Err(StorageError::UnsupportedFormat { .. })
        ));
    }

    #[test]
    fn every_flipped_byte_or_truncation_is_an_error() {
        let b = encode(&sample()).unwrap();
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x41;
            assert!(decode(&c, Path::new("M")).is_err(), "flip at {i} accepted");
        }
        for n in 0..b.len() {
            assert!(
                decode(&b[..n], Path::new("M")).is_err(),
                "truncation to {n} accepted"
            );
        }
    }
}
