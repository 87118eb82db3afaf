//! Constants and fixed-size headers of the on-disk format (see `docs/format.md`).
//!
//! Every multi-byte integer is little-endian and is read with `from_le_bytes` on a
//! bounds-checked slice, so no host-endian conversion and no alignment assumption ever
//! reaches the disk format.

use crate::error::{Result, StorageError};

/// The on-disk format version this crate reads and writes. A reader refuses any other.
pub const FORMAT_VERSION: u32 = 6;

/// First bytes of every segment file.
pub const SEGMENT_MAGIC: [u8; 8] = *b"BATHOSEG";
/// First bytes of every manifest file (`MANIFEST` and `manifests/<gen>.manifest`).
pub const MANIFEST_MAGIC: [u8; 8] = *b"BATHOMAN";
/// First bytes of the `DBID` file.
pub const DBID_MAGIC: [u8; 8] = *b"BATHODB\0";

/// Size of the segment header; the payload starts right after it.
pub const SEGMENT_HEADER_LEN: usize = 64;
/// Size of the manifest header; the rkyv body starts right after it.
pub const MANIFEST_HEADER_LEN: usize = 64;
/// Size of the `DBID` file.
pub const DBID_LEN: usize = 40;
/// Alignment of every column inside a segment payload.
pub const COLUMN_ALIGN: usize = 16;

/// Names inside a `.batho/` directory.
pub mod names {
    /// The current manifest.
    pub const MANIFEST: &str = "MANIFEST";
    /// Directory of per-generation manifests.
    pub const MANIFESTS_DIR: &str = "manifests";
    /// Directory of content-addressed segments.
    pub const SEGMENTS_DIR: &str = "segments";
    /// The writer lock file.
    pub const LOCK: &str = "LOCK";
    /// The database identity file.
    pub const DBID: &str = "DBID";
    /// Extension of segment files.
    pub const SEGMENT_EXT: &str = "seg";
    /// Extension of per-generation manifests.
    pub const MANIFEST_EXT: &str = "manifest";
}

/// What a segment holds. The code is stored in the segment header and in the manifest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum SegmentKind {
    /// The sorted string dictionary.
    Strings = 1,
    /// Node columns and the id/name indexes.
    Nodes = 2,
    /// Out-CSR, in-CSR and edge property columns.
    Edges = 3,
    /// Serialized roaring bitmaps with their directories.
    Bitmaps = 4,
    /// A delta layer's strings that the base dictionary lacks (same columns as `Strings`).
    DeltaStrings = 5,
    /// A delta layer's node rows, their node indexes, its id/name indexes and the removed
    /// node set (the `Nodes` columns plus `ROW_NODE` and `REMOVED`).
    DeltaNodes = 6,
    /// A delta layer's edges (out-CSR by row, in-index by destination) and the dropped
    /// base edge set (the `Edges` columns plus `IN_KEYS` and `DROPPED`).
    DeltaEdges = 7,
}

impl SegmentKind {
    /// Every kind a base layer must contain, in manifest order.
    pub const BASE: [SegmentKind; 4] = [
        SegmentKind::Strings,
        SegmentKind::Nodes,
        SegmentKind::Edges,
        SegmentKind::Bitmaps,
    ];

    /// Every kind a delta layer must contain, in manifest order.
    pub const DELTA: [SegmentKind; 3] = [
        SegmentKind::DeltaStrings,
        SegmentKind::DeltaNodes,
        SegmentKind::DeltaEdges,
    ];

    /// The kind with this code.
    pub fn from_code(code: u8) -> Option<Self> {
        Self::BASE
            .into_iter()
            .chain(Self::DELTA)
            .find(|k| *k as u8 == code)
    }

    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            SegmentKind::Strings => "strings",
            SegmentKind::Nodes => "nodes",
            SegmentKind::Edges => "edges",
            SegmentKind::Bitmaps => "bitmaps",
            SegmentKind::DeltaStrings => "delta strings",
            SegmentKind::DeltaNodes => "delta nodes",
            SegmentKind::DeltaEdges => "delta edges",
        }
    }
}

/// Column ids of the strings segment (front-coded, see `strings.rs`).
pub mod strings_col {
    /// Two values: the number of strings, then the number of strings per block.
    pub const SHAPE: u32 = 1;
    /// The front-coded blocks, concatenated.
    pub const BYTES: u32 = 2;
    /// `blocks + 1` byte offsets into [`BYTES`]; block `b` is `BYTES[off[b]..off[b+1]]`.
    pub const BLOCK_OFFSETS: u32 = 3;
}

/// Column ids of the nodes segment.
pub mod nodes_col {
    /// Index into [`TYPE_PALETTE`].
    pub const TYPE: u32 = 1;
    /// Distinct (kind, flags, language) triples, packed as `kind | flags << 8 | language << 16`.
    pub const TYPE_PALETTE: u32 = 2;
    /// First line.
    pub const START_LINE: u32 = 4;
    /// `end_line - start_line` (wrapping u32).
    pub const LINE_SPAN: u32 = 5;
    /// First byte.
    pub const START_BYTE: u32 = 6;
    /// `end_byte - start_byte` (wrapping u32).
    pub const BYTE_SPAN: u32 = 7;
    /// Community id.
    pub const COMMUNITY: u32 = 8;
    /// 8-byte prefix of the content hash, raw bytes.
    pub const CONTENT_HASH: u32 = 9;
    /// 0 when the id is exactly `file + ":" + qualified_name` (composed on read), else
    /// `string id + 1`.
    pub const ID: u32 = 10;
    /// String id of the simple name.
    pub const NAME: u32 = 11;
    /// 0 when the qualified name equals the simple name (most C entities), else
    /// `string id + 1`.
    pub const QUALIFIED_NAME: u32 = 12;
    /// String id of the file path.
    pub const FILE: u32 = 13;
    /// String id of the signature.
    pub const SIGNATURE: u32 = 14;
    /// Node indexes sorted by (id text, node index).
    pub const ID_INDEX: u32 = 15;
    /// Node indexes sorted by (name string id, node index). In a delta: row numbers
    /// sorted by (name text, row).
    pub const NAME_INDEX: u32 = 16;
    /// Delta only: the node index of each row, strictly ascending.
    pub const ROW_NODE: u32 = 17;
    /// Delta only: serialized roaring bitmap of the removed node indexes (bytes).
    pub const REMOVED: u32 = 18;
    /// Rank score (the engine stores PageRank there, in 1/1024ths of the average node's).
    pub const PAGERANK: u32 = 19;
    /// Text index (`text/`): the distinct terms, sorted by bytes, concatenated.
    pub const TEXT_TERM_BYTES: u32 = 20;
    /// `terms + 1` offsets into [`TEXT_TERM_BYTES`].
    pub const TEXT_TERM_OFFSETS: u32 = 21;
    /// `terms + 1` offsets into [`TEXT_POSTINGS`]: each term's own postings.
    pub const TEXT_POSTING_OFFSETS: u32 = 22;
    /// Own postings (document, frequency), varint-coded with key gaps.
    pub const TEXT_POSTINGS: u32 = 23;
    /// `terms + 1` offsets into [`TEXT_PATHS`]: each term's path postings.
    pub const TEXT_PATH_OFFSETS: u32 = 24;
    /// Path postings (file string id, frequency), varint-coded with key gaps.
    pub const TEXT_PATHS: u32 = 25;
    /// Terms of each document (node or delta row): own terms plus its file's path terms.
    pub const TEXT_DOC_LEN: u32 = 26;
    /// Two values: live documents and the sum of their lengths (a delta: the merged graph's).
    pub const TEXT_STATS: u32 = 27;
    /// String id of the comment above the entity (0: none). Optional: a layer written
    /// before it existed reads as having no comments.
    pub const DOC: u32 = 28;
}

/// Column ids of the edges segment.
pub mod edges_col {
    /// `node_count + 1` offsets: out-edges of node `n` are `OUT_OFFSETS[n]..OUT_OFFSETS[n+1]`.
    pub const OUT_OFFSETS: u32 = 1;
    /// Target node of each edge, in (src, rel, dst) order.
    pub const DST: u32 = 2;
    /// Index into [`TYPE_PALETTE`].
    pub const TYPE: u32 = 3;
    /// Distinct (rel, roles, strategy, confidence) tuples, packed as
    /// `rel | (roles & 0xff) << 8 | strategy << 16 | (roles >> 8) << 24 |
    /// confidence_f32_bits << 32`.
    pub const TYPE_PALETTE: u32 = 4;
    /// Source node of every [`SRC_BLOCK`]-th edge: narrows the search for an edge's source
    /// to a few adjacent out-CSR offsets.
    pub const BLOCK_SRC: u32 = 5;
    /// Edges per [`BLOCK_SRC`] entry.
    pub const SRC_BLOCK: usize = 256;
    /// Use-site line.
    pub const LINE: u32 = 8;
    /// 0 when the use-site file equals the source node's file, else `file string id + 1`.
    pub const FILE_OVERRIDE: u32 = 9;
    /// `node_count + 1` offsets into [`IN_PERM`], per target node.
    pub const IN_OFFSETS: u32 = 10;
    /// Edge indexes grouped by target node, ascending within a group.
    pub const IN_PERM: u32 = 11;
    /// Delta only: the distinct destination node indexes of its edges, ascending
    /// (`IN_OFFSETS` then has one entry per key, plus one).
    pub const IN_KEYS: u32 = 12;
    /// Delta only: serialized roaring bitmap of the dropped base edge indexes (bytes).
    pub const DROPPED: u32 = 13;
    /// `edge_count + 1` offsets into [`SITES`]: edge `k`'s list is
    /// `SITES[SITE_OFFSETS[k]..SITE_OFFSETS[k+1]]`, empty for an edge with one use site
    /// (on its `LINE`) or none (line 0).
    pub const SITE_OFFSETS: u32 = 14;
    /// The use sites of edges that fold several: per such edge, the site count, then the
    /// distinct lines ascending (the first equal to its `LINE`).
    pub const SITES: u32 = 15;
}

/// Column ids of the bitmaps segment.
pub mod bitmaps_col {
    /// Serialized roaring bitmaps, concatenated.
    pub const DATA: u32 = 1;
    /// `NodeKind` code → byte range in `DATA` (`codes + 1` offsets).
    pub const KIND_OFFSETS: u32 = 2;
    /// `RelType` code → byte range in `DATA`.
    pub const REL_OFFSETS: u32 = 3;
    /// Role bit `i` → byte range in `DATA` (9 offsets).
    pub const ROLE_OFFSETS: u32 = 4;
    /// String ids of the files having a bitmap, ascending.
    pub const FILE_KEYS: u32 = 5;
    /// `files + 1` offsets into `DATA`.
    pub const FILE_OFFSETS: u32 = 6;
}

/// Reads a little-endian `u32` at `off`, if in bounds.
pub fn le_u32(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes(s.try_into().ok()?))
}

/// Reads a little-endian `u64` at `off`, if in bounds.
pub fn le_u64(b: &[u8], off: usize) -> Option<u64> {
    let s = b.get(off..off.checked_add(8)?)?;
    Some(u64::from_le_bytes(s.try_into().ok()?))
}

/// The 8-byte checksum used for headers and the manifest body: the first 8 bytes of blake3.
pub fn checksum64(bytes: &[u8]) -> u64 {
    let h = blake3::hash(bytes);
    let mut first = [0u8; 8];
    first.copy_from_slice(&h.as_bytes()[..8]);
    u64::from_le_bytes(first)
}

/// Compares two byte strings each given as up to three concatenated parts (a composed
/// node id is `file`, `":"`, `qualified_name`) without building them.
pub(crate) fn cmp_parts(a: [&[u8]; 3], b: [&[u8]; 3]) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (mut ai, mut bi) = (0usize, 0usize);
    let (mut x, mut y) = (a[0], b[0]);
    loop {
        while x.is_empty() && ai < 2 {
            ai += 1;
            x = a[ai];
        }
        while y.is_empty() && bi < 2 {
            bi += 1;
            y = b[bi];
        }
        match (x.is_empty(), y.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            (false, false) => {}
        }
        let n = x.len().min(y.len());
        match x[..n].cmp(&y[..n]) {
            Ordering::Equal => {
                x = &x[n..];
                y = &y[n..];
            }
            o => return o,
        }
    }
}

/// Rounds `n` up to a multiple of `align` (a power of two).
pub fn align_up(n: usize, align: usize) -> usize {
    n.div_ceil(align) * align
}

/// The decoded fixed header of a segment file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentHeader {
    /// Segment kind code.
    pub kind: u8,
    /// Payload length in bytes.
    pub payload_len: u64,
    /// Identity of the database that wrote it.
    pub db_uuid: [u8; 16],
}

impl SegmentHeader {
    /// Encodes the 64-byte header.
    pub fn encode(&self) -> [u8; SEGMENT_HEADER_LEN] {
        let mut h = [0u8; SEGMENT_HEADER_LEN];
        h[0..8].copy_from_slice(&SEGMENT_MAGIC);
        h[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&u32::from(self.kind).to_le_bytes());
        h[16..24].copy_from_slice(&self.payload_len.to_le_bytes());
        h[24..40].copy_from_slice(&self.db_uuid);
        let sum = checksum64(&h[0..56]);
        h[56..64].copy_from_slice(&sum.to_le_bytes());
        h
    }

    /// Decodes and checks the header at the start of `file` (magic, checksum, version).
    /// `what` names the file in errors.
    pub fn decode(file: &[u8], path: &std::path::Path) -> Result<SegmentHeader> {
        let what = || path.display().to_string();
        let h = file.get(..SEGMENT_HEADER_LEN).ok_or_else(|| {
            StorageError::corrupt(
                what(),
                format!("segment is {} bytes, shorter than its header", file.len()),
            )
        })?;
        if h[0..8] != SEGMENT_MAGIC {
            return Err(StorageError::corrupt(what(), "bad segment magic"));
        }
        // The version sits at a fixed place in every format version, so it is checked
        // before the checksum: a newer layout must be reported as such, not as damage.
        let version = le_u32(h, 8).unwrap_or(0);
        if version != FORMAT_VERSION {
            let checksum_matches = le_u64(h, 56) == Some(checksum64(&h[0..56]));
            return Err(version_error(path, version, checksum_matches));
        }
        let stored = le_u64(h, 56).unwrap_or(0);
        if stored != checksum64(&h[0..56]) {
            return Err(StorageError::corrupt(
                what(),
                "segment header checksum mismatch",
            ));
        }
        let kind = le_u32(h, 12).unwrap_or(0);
        let kind = u8::try_from(kind).map_err(|_| {
            StorageError::corrupt(what(), format!("segment kind {kind} out of range"))
        })?;
        let payload_len = le_u64(h, 16).unwrap_or(0);
        let mut db_uuid = [0u8; 16];
        db_uuid.copy_from_slice(&h[24..40]);
        if h[40..56].iter().any(|b| *b != 0) {
            return Err(StorageError::corrupt(
                what(),
                "reserved header bytes are not zero",
            ));
        }
        Ok(SegmentHeader {
            kind,
            payload_len,
            db_uuid,
        })
    }
}

/// Encodes the `DBID` file.
pub fn encode_dbid(uuid: [u8; 16]) -> [u8; DBID_LEN] {
    let mut b = [0u8; DBID_LEN];
    b[0..8].copy_from_slice(&DBID_MAGIC);
    b[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    b[16..32].copy_from_slice(&uuid);
    let sum = checksum64(&b[0..32]);
    b[32..40].copy_from_slice(&sum.to_le_bytes());
    b
}

/// The error for a header (segment, manifest, `DBID`) whose format version is not this
/// one. Its checksum covers the version: a version no release could have written (0, or
/// far past this one) under a checksum that fails is a damaged field, `Corrupt`, which
/// `fix` repairs; any other may be another release's format, `UnsupportedFormat`, which
/// nothing touches (a nearby version under a failing checksum may be another layout).
pub(crate) fn version_error(
    path: &std::path::Path,
    found: u32,
    checksum_matches: bool,
) -> StorageError {
    let plausible = (1..=FORMAT_VERSION + 64).contains(&found);
    if !checksum_matches && !plausible {
        return StorageError::corrupt(
            path.display().to_string(),
            format!(
                "the format version field reads {found}, which no release wrote, and the \
                 header checksum does not match: the header is damaged"
            ),
        );
    }
    StorageError::UnsupportedFormat {
        path: path.to_path_buf(),
        found,
        expected: FORMAT_VERSION,
    }
}

/// Decodes the `DBID` file.
pub fn decode_dbid(b: &[u8], path: &std::path::Path) -> Result<[u8; 16]> {
    let what = || path.display().to_string();
    if b.len() != DBID_LEN || b[0..8] != DBID_MAGIC {
        return Err(StorageError::corrupt(what(), "not a batho DBID file"));
    }
    // The version before the checksum, as in segment headers and manifests: a DBID of
    // another format is reported as such (and `build --full` moves it aside).
    let version = le_u32(b, 8).unwrap_or(0);
    if version != FORMAT_VERSION {
        let checksum_matches = le_u64(b, 32) == Some(checksum64(&b[0..32]));
        return Err(version_error(path, version, checksum_matches));
    }
    if le_u64(b, 32) != Some(checksum64(&b[0..32])) {
        return Err(StorageError::corrupt(what(), "DBID checksum mismatch"));
    }
    let mut u = [0u8; 16];
    u.copy_from_slice(&b[16..32]);
    Ok(u)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn segment_header_round_trips_and_rejects_damage() {
        let h = SegmentHeader {
            kind: 3,
            payload_len: 1234,
            db_uuid: [7; 16],
        };
        let bytes = h.encode();
        assert_eq!(SegmentHeader::decode(&bytes, Path::new("x")).unwrap(), h);
        for i in 0..SEGMENT_HEADER_LEN {
            let mut b = bytes;
            b[i] ^= 0x10;
            assert!(
                SegmentHeader::decode(&b, Path::new("x")).is_err(),
                "flip at {i} accepted"
            );
        }
        assert!(SegmentHeader::decode(&bytes[..10], Path::new("x")).is_err());
    }

    #[test]
    fn other_versions_are_refused_with_a_clear_error() {
        let mut b = SegmentHeader {
            kind: 1,
            payload_len: 0,
            db_uuid: [0; 16],
        }
        .encode();
        // Version 2 (plain string offsets, 16-byte content hashes) is refused like any other.
        b[8..12].copy_from_slice(&2u32.to_le_bytes());
        let sum = checksum64(&b[0..56]);
        b[56..64].copy_from_slice(&sum.to_le_bytes());
        match SegmentHeader::decode(&b, Path::new("x")) {
            Err(StorageError::UnsupportedFormat {
                found: 2,
                expected: FORMAT_VERSION,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn part_comparison_matches_concatenation() {
        let words: [&[u8]; 6] = [b"", b"a", b"ab", b":", b"b", b"a:b"];
        for a in words {
            for b in words {
                for c in words {
                    for d in words {
                        let x = [a, b, c];
                        let y = [d, c, a];
                        assert_eq!(cmp_parts(x, y), x.concat().cmp(&y.concat()), "{x:?} {y:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn dbid_round_trips() {
        let b = encode_dbid([9; 16]);
        assert_eq!(decode_dbid(&b, Path::new("d")).unwrap(), [9; 16]);
        let mut c = b;
        c[20] ^= 1;
        assert!(decode_dbid(&c, Path::new("d")).is_err());
    }
}
