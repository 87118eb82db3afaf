//! Which segment files were hashed against their names, and what `stat` said of each then,
//! so that opening an artifact checks every segment's content without re-reading it.
//!
//! A segment's name is the blake3 of its bytes. Re-hashing every segment at every open
//! would cost about a second on the kernel's artifact (600 MB), so an open hashes only the
//! segments whose stamp (size, mtime, ctime, inode, device) is not the one recorded when
//! they last hashed to their names, and records the stamps of those that do, in
//! `.batho/verified` (a cache: written aside and renamed, by readers too; a missing or
//! damaged file only means hashing again). Any write to a file changes its ctime, which no
//! program can set back, so a segment changed by a write, a truncation or a copy over it
//! is hashed at the next open and a damaged one is an error instead of wrong answers (the
//! fault campaign, `tests/cli_faults.rs`). What this does not see is damage without a
//! write: media decay under an unchanged ctime; `status --verify` and `fix --deep` re-hash
//! everything and find that.
//!
//! Racy stamps: a file changed within the timestamp granularity of the moment it was
//! hashed could change again without its stamp changing, so a stamp is recorded only when
//! the file's ctime is [`RACY_MARGIN_NS`] older than the hashing (the first open right
//! after a commit hashes the new segments, a later one records them).

use std::collections::HashMap;
use std::path::Path;

/// How much older than the hashing a file's ctime must be for its stamp to be recorded.
const RACY_MARGIN_NS: i64 = 2_000_000_000;

const FILE_NAME: &str = "verified";
const HEADER: &str = "batho verified segments 1";

/// What `stat` says of a segment file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileStamp {
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    ino: u64,
    dev: u64,
}

impl FileStamp {
    /// The stamp of `metadata`; `None` where the platform has no ctime or inodes.
    pub(crate) fn of(metadata: &std::fs::Metadata) -> Option<FileStamp> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(FileStamp {
                size: metadata.size(),
                mtime_ns: metadata
                    .mtime()
                    .saturating_mul(1_000_000_000)
                    .saturating_add(metadata.mtime_nsec()),
                ctime_ns: metadata
                    .ctime()
                    .saturating_mul(1_000_000_000)
                    .saturating_add(metadata.ctime_nsec()),
                ino: metadata.ino(),
                dev: metadata.dev(),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = metadata;
            None
        }
    }
}

/// The recorded stamps of the segments of one artifact, by file name.
#[derive(Debug, Default)]
pub(crate) struct VerifiedSegments {
    stamps: HashMap<String, FileStamp>,
    /// Stamps recorded since loading: the file is written again.
    changed: bool,
}

impl VerifiedSegments {
    /// The stamps recorded in `batho_dir`; none when the file is missing or damaged.
    pub(crate) fn load(batho_dir: &Path) -> VerifiedSegments {
        let stamps = std::fs::read_to_string(batho_dir.join(FILE_NAME))
            .ok()
            .and_then(|text| decode(&text))
            .unwrap_or_default();
        VerifiedSegments {
            stamps,
            changed: false,
        }
    }

    /// Whether the segment file `name`, whose stamp is now `stamp`, hashed to its name
    /// when it last had that stamp.
    pub(crate) fn holds(&self, name: &str, stamp: Option<FileStamp>) -> bool {
        stamp.is_some_and(|stamp| self.stamps.get(name) == Some(&stamp))
    }

    /// Records that `name` with `stamp` hashed to its name, unless the stamp is racy.
    pub(crate) fn record(&mut self, name: &str, stamp: Option<FileStamp>) {
        let Some(stamp) = stamp else {
            return;
        };
        if stamp.ctime_ns >= now_ns().saturating_sub(RACY_MARGIN_NS) {
            return;
        }
        self.stamps.insert(name.to_string(), stamp);
        self.changed = true;
    }

    /// Writes the stamps back if any was recorded, keeping only the segments that still
    /// exist (best effort: the file is a cache, and a reader may lack write access).
    pub(crate) fn save_if_changed(&mut self, batho_dir: &Path) {
        if !self.changed {
            return;
        }
        let segments = batho_dir.join(crate::format::names::SEGMENTS_DIR);
        self.stamps.retain(|name, _| segments.join(name).is_file());
        let aside = batho_dir.join(format!("{FILE_NAME}.tmp-{}", uuid::Uuid::new_v4()));
        if std::fs::write(&aside, encode(&self.stamps)).is_ok()
            && std::fs::rename(&aside, batho_dir.join(FILE_NAME)).is_ok()
        {
            self.changed = false;
        } else {
            let _ = std::fs::remove_file(&aside);
        }
    }
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_nanos()).unwrap_or(i64::MAX)
        })
}

/// A header line, a line per segment (`name size mtime ctime inode device`, sorted), and
/// the blake3 of everything before as the last line.
fn encode(stamps: &HashMap<String, FileStamp>) -> String {
    let mut names: Vec<&String> = stamps.keys().collect();
    names.sort();
    let mut text = format!("{HEADER}\n");
    for name in names {
        let stamp = &stamps[name];
        text.push_str(&format!(
            "{name} {} {} {} {} {}\n",
            stamp.size, stamp.mtime_ns, stamp.ctime_ns, stamp.ino, stamp.dev
        ));
    }
    let sum = blake3::hash(text.as_bytes()).to_hex();
    text.push_str(&sum);
    text.push('\n');
    text
}

fn decode(text: &str) -> Option<HashMap<String, FileStamp>> {
    let body_end = text.trim_end_matches('\n').rfind('\n')? + 1;
    let (body, sum) = text.split_at(body_end);
    if blake3::hash(body.as_bytes()).to_hex().as_str() != sum.trim_end() {
        return None;
    }
    let mut lines = body.lines();
    if lines.next()? != HEADER {
        return None;
    }
    let mut stamps = HashMap::new();
    for line in lines {
        let mut fields = line.split(' ');
        let name = fields.next()?.to_string();
        let mut number = || fields.next()?.parse::<i64>().ok();
        let stamp = FileStamp {
            size: number()? as u64,
            mtime_ns: number()?,
            ctime_ns: number()?,
            ino: number()? as u64,
            dev: number()? as u64,
        };
        stamps.insert(name, stamp);
    }
    Some(stamps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(ctime_ns: i64) -> FileStamp {
        FileStamp {
            size: 10,
            mtime_ns: 1,
            ctime_ns,
            ino: 7,
            dev: 3,
        }
    }

    #[test]
    fn stamps_round_trip_and_damage_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("segments")).unwrap();
        std::fs::write(dir.path().join("segments/a.seg"), b"x").unwrap();
        let mut verified = VerifiedSegments::load(dir.path());
        verified.record("a.seg", Some(stamp(5)));
        verified.record("gone.seg", Some(stamp(5)));
        verified.save_if_changed(dir.path());
        let again = VerifiedSegments::load(dir.path());
        assert!(again.holds("a.seg", Some(stamp(5))));
        assert!(!again.holds("a.seg", Some(stamp(6))), "another stamp");
        assert!(
            !again.holds("gone.seg", Some(stamp(5))),
            "dropped: no such file"
        );
        let path = dir.path().join(FILE_NAME);
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        assert!(!VerifiedSegments::load(dir.path()).holds("a.seg", Some(stamp(5))));
    }

    #[test]
    fn a_racy_stamp_is_not_recorded() {
        let mut verified = VerifiedSegments::default();
        verified.record("new.seg", Some(stamp(now_ns())));
        assert!(!verified.holds("new.seg", Some(stamp(now_ns()))));
        assert!(!verified.changed);
    }
}
