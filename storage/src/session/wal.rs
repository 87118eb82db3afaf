//! The write-ahead log of a writable graph: a header, then one record per committed
//! transaction. A record is `length: u32 LE`, `crc32(payload): u32 LE`, `payload` (a batch
//! of [`Change`]s). A record counts only when it is whole and its checksum matches; the
//! first one that is not ends the log (a torn tail, left by a crash mid-append), and
//! everything after it is ignored, reported, and cut by the next writer.

use std::path::Path;

use super::change::{Change, decode_batch};
use super::prop::put_varint;
use crate::error::{Result, StorageError};

/// First bytes of every log file.
pub(crate) const WAL_MAGIC: &[u8; 8] = b"BATHOWAL";
/// Version of the log format.
pub(crate) const WAL_VERSION: u32 = 1;
/// Header: magic, version, reserved, generation of the checkpoint the log continues.
pub(crate) const WAL_HEADER_LEN: usize = 24;
/// Largest record accepted. A length above it can only be damage, and refusing it keeps a
/// flipped length byte from asking for gigabytes.
pub(crate) const MAX_RECORD_LEN: usize = 1 << 30;

/// The log header for checkpoint generation `generation`.
pub(crate) fn header(generation: u64) -> [u8; WAL_HEADER_LEN] {
    let mut bytes = [0u8; WAL_HEADER_LEN];
    bytes[..8].copy_from_slice(WAL_MAGIC);
    bytes[8..12].copy_from_slice(&WAL_VERSION.to_le_bytes());
    bytes[16..24].copy_from_slice(&generation.to_le_bytes());
    bytes
}

/// The bytes of one record holding `count` changes, already encoded one after another.
pub(crate) fn record(count: usize, encoded_changes: &[u8]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(encoded_changes.len() + 5);
    put_varint(&mut payload, count as u64);
    payload.extend_from_slice(encoded_changes);
    let mut out = Vec::with_capacity(payload.len() + 8);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// The end of a log that does not form a whole, checksummed record.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TornTail {
    /// Byte offset where the last good record ends.
    pub offset: u64,
    /// Bytes after it.
    pub bytes: u64,
    /// What is wrong with them.
    pub reason: String,
}

/// A log read back.
#[derive(Debug, Default)]
pub(crate) struct LogContents {
    /// The committed batches, in order.
    pub(crate) batches: Vec<Vec<Change>>,
    /// Length of the good prefix (header and whole records).
    pub(crate) good_len: u64,
    /// What follows the good prefix, if anything.
    pub(crate) torn: Option<TornTail>,
}

/// Parses log bytes written for checkpoint `generation`.
pub(crate) fn parse(bytes: &[u8], generation: u64, path: &Path) -> Result<LogContents> {
    let corrupt = |detail: String| StorageError::Corrupt {
        what: path.display().to_string(),
        detail,
    };
    if bytes.len() < WAL_HEADER_LEN || &bytes[..8] != WAL_MAGIC {
        return Err(corrupt("not a Batho write-ahead log (bad header)".into()));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != WAL_VERSION {
        return Err(StorageError::UnsupportedFormat {
            path: path.to_path_buf(),
            found: version,
            expected: WAL_VERSION,
        });
    }
    let header_generation = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"));
    if header_generation != generation {
        return Err(corrupt(format!(
            "the log continues generation {header_generation}, the manifest names {generation}"
        )));
    }
    let mut contents = LogContents {
        good_len: WAL_HEADER_LEN as u64,
        ..LogContents::default()
    };
    let mut position = WAL_HEADER_LEN;
    while position < bytes.len() {
        match read_record(&bytes[position..]) {
            Ok((changes, length)) => {
                contents.batches.push(changes);
                position += length;
                contents.good_len = position as u64;
            }
            Err(reason) => {
                contents.torn = Some(TornTail {
                    offset: position as u64,
                    bytes: (bytes.len() - position) as u64,
                    reason,
                });
                break;
            }
        }
    }
    Ok(contents)
}

/// One record at the start of `bytes`: its changes and its length in bytes.
fn read_record(bytes: &[u8]) -> std::result::Result<(Vec<Change>, usize), String> {
    if bytes.len() < 8 {
        return Err(format!(
            "{} bytes, too short for a record header",
            bytes.len()
        ));
    }
    let length = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
    let checksum = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    if length > MAX_RECORD_LEN {
        return Err(format!(
            "a record length of {length} bytes is not plausible"
        ));
    }
    let Some(payload) = bytes.get(8..8 + length) else {
        return Err(format!(
            "the record needs {length} bytes, {} are there",
            bytes.len() - 8
        ));
    };
    if crc32fast::hash(payload) != checksum {
        return Err("the record's checksum does not match".into());
    }
    let changes =
        decode_batch(payload).map_err(|e| format!("the record does not decode: {}", e.0))?;
    Ok((changes, 8 + length))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::prop::PropValue;

    fn node(id: u32) -> Change {
        Change::CreateNode {
            id,
            labels: vec!["Note".into()],
            properties: vec![("text".into(), PropValue::String(format!("note {id}")))],
        }
    }

    fn record_of(batch: &[Change]) -> Vec<u8> {
        let mut encoded = Vec::new();
        for change in batch {
            change.encode(&mut encoded);
        }
        record(batch.len(), &encoded)
    }

    fn log_of(batches: &[Vec<Change>]) -> Vec<u8> {
        let mut bytes = header(3).to_vec();
        for batch in batches {
            bytes.extend_from_slice(&record_of(batch));
        }
        bytes
    }

    #[test]
    fn whole_records_read_back() {
        let batches = vec![vec![node(0), node(1)], vec![node(2)]];
        let bytes = log_of(&batches);
        let contents = parse(&bytes, 3, Path::new("wal")).unwrap();
        assert_eq!(contents.batches, batches);
        assert_eq!(contents.good_len, bytes.len() as u64);
        assert!(contents.torn.is_none());
    }

    #[test]
    fn every_cut_keeps_the_whole_records_before_it() {
        let batches = vec![vec![node(0)], vec![node(1), node(2)], vec![node(3)]];
        let bytes = log_of(&batches);
        let ends: Vec<usize> = {
            let mut end = WAL_HEADER_LEN;
            batches
                .iter()
                .map(|b| {
                    end += record_of(b).len();
                    end
                })
                .collect()
        };
        for cut in WAL_HEADER_LEN..bytes.len() {
            let contents = parse(&bytes[..cut], 3, Path::new("wal")).unwrap();
            let whole = ends.iter().filter(|&&end| end <= cut).count();
            assert_eq!(contents.batches.len(), whole, "cut at {cut}");
            let torn = contents.torn.is_some();
            assert_eq!(
                torn,
                !ends.contains(&cut) && cut != WAL_HEADER_LEN,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_flipped_byte_ends_the_log_at_the_record_before_it() {
        let batches = vec![vec![node(0)], vec![node(1)], vec![node(2)]];
        let bytes = log_of(&batches);
        let first_end = WAL_HEADER_LEN + record_of(&batches[0]).len();
        for position in first_end..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[position] ^= 0x20;
            let contents = parse(&damaged, 3, Path::new("wal")).unwrap();
            assert!(
                contents.batches.len() < 3,
                "flip at {position} went unnoticed"
            );
            assert_eq!(contents.batches[0], batches[0]);
            assert!(contents.torn.is_some());
        }
    }

    #[test]
    fn a_log_of_another_generation_is_refused() {
        let bytes = log_of(&[]);
        assert!(parse(&bytes, 4, Path::new("wal")).is_err());
        assert!(parse(b"not a log at all, no", 3, Path::new("wal")).is_err());
    }
}
