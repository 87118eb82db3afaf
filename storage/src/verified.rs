//! Which segment files were hashed against their names, and what `stat` said of each then,
//! so that opening an artifact checks every segment's content without re-reading it.
//!
//! A segment's name is the blake3 of its bytes. Re-hashing every segment at every open
//! cost 222 ms on the kernel's artifact (928 MB of segments; a whole `batho query` takes
//! 2.3 ms when nothing is re-hashed, docs/format.md §6), so an open hashes only the
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
//! Racy stamps ([`FileStamp::is_racy`]) are not recorded: the first open right after a
//! commit hashes the new segments, a later one records them.
//!
//! An artifact folder that cannot take the file (a read-only mount, a shared cache of CI
//! artifacts) would have every open hash every segment again, 222 ms a query on the
//! kernel: the stamps then go to the user's cache folder instead ([`fallback_file`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::file_stamp::{FileStamp, now_ns};

const FILE_NAME: &str = "verified";
const HEADER: &str = "batho verified segments 1";

/// The recorded stamps of the segments of one artifact, by file name.
#[derive(Debug, Default)]
pub(crate) struct VerifiedSegments {
    stamps: HashMap<String, FileStamp>,
    /// Stamps recorded since loading: the file is written again.
    changed: bool,
}

impl VerifiedSegments {
    /// The stamps recorded for the artifact in `batho_dir`: in its folder, else in the
    /// user's cache folder; none when neither holds a file that decodes.
    pub(crate) fn load(batho_dir: &Path) -> VerifiedSegments {
        Self::load_with_fallback(batho_dir, || fallback_file(batho_dir))
    }

    /// As [`VerifiedSegments::load`], `fallback` naming the cache file (looked up only
    /// when the folder holds none).
    fn load_with_fallback(
        batho_dir: &Path,
        fallback: impl FnOnce() -> Option<PathBuf>,
    ) -> VerifiedSegments {
        let read = |path: &Path| {
            std::fs::read_to_string(path)
                .ok()
                .and_then(|text| decode(&text))
        };
        let stamps = read(&batho_dir.join(FILE_NAME))
            .or_else(|| fallback().and_then(|file| read(&file)))
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

    /// Records that `name` with `stamp` hashed to its name just now, unless the stamp is
    /// racy.
    pub(crate) fn record(&mut self, name: &str, stamp: Option<FileStamp>) {
        let Some(stamp) = stamp.filter(|stamp| !stamp.is_racy(now_ns())) else {
            return;
        };
        self.stamps.insert(name.to_string(), stamp);
        self.changed = true;
    }

    /// Writes the stamps back if any was recorded, keeping only the segments that still
    /// exist: into the artifact's folder, or the user's cache folder when that cannot take
    /// them (best effort: the file is a cache).
    pub(crate) fn save_if_changed(&mut self, batho_dir: &Path) {
        self.save_with_fallback(batho_dir, || fallback_file(batho_dir));
    }

    /// As [`VerifiedSegments::save_if_changed`], `fallback` naming the cache file (looked
    /// up only when the folder cannot take the stamps).
    fn save_with_fallback(&mut self, batho_dir: &Path, fallback: impl FnOnce() -> Option<PathBuf>) {
        if !self.changed {
            return;
        }
        let segments = batho_dir.join(crate::format::names::SEGMENTS_DIR);
        self.stamps.retain(|name, _| segments.join(name).is_file());
        let text = encode(&self.stamps);
        let saved = replace_file(&batho_dir.join(FILE_NAME), &text)
            || fallback().is_some_and(|file| {
                file.parent()
                    .is_some_and(|folder| std::fs::create_dir_all(folder).is_ok())
                    && replace_file(&file, &text)
            });
        if saved {
            self.changed = false;
        }
    }
}

/// Writes `text` beside `path` and renames it into place; whether that worked.
fn replace_file(path: &Path, text: &str) -> bool {
    let aside = path.with_file_name(format!(
        "{FILE_NAME}{}{}",
        crate::gc::TEMP_MARKER,
        uuid::Uuid::new_v4()
    ));
    if std::fs::write(&aside, text).is_ok() && std::fs::rename(&aside, path).is_ok() {
        return true;
    }
    let _ = std::fs::remove_file(&aside);
    false
}

/// Where the stamps of the artifact in `batho_dir` go when its folder cannot take them:
/// `batho/verified/` in the user's cache folder (`$XDG_CACHE_HOME`, else `~/.cache`), one
/// file per artifact, named by the blake3 of the folder's canonical path. `None` without
/// a cache folder. A stamp holds the inode and the ctime, so a file left from another
/// artifact at that path never matches a segment.
fn fallback_file(batho_dir: &Path) -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    let base = set("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    let canonical = batho_dir.canonicalize().ok()?;
    let key = blake3::hash(canonical.as_os_str().as_encoded_bytes()).to_hex();
    Some(base.join("batho").join("verified").join(&key[..32]))
}

/// A header line, a line per segment (`name size mtime ctime inode device`, sorted), and
/// the blake3 of everything before as the last line.
fn encode(stamps: &HashMap<String, FileStamp>) -> String {
    let mut names: Vec<&String> = stamps.keys().collect();
    names.sort();
    let mut text = format!("{HEADER}\n");
    for name in names {
        let [size, mtime, ctime, ino, dev] = stamps[name].fields();
        text.push_str(&format!("{name} {size} {mtime} {ctime} {ino} {dev}\n"));
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
        let mut number = || fields.next()?.parse::<u64>().ok();
        let stamp = FileStamp::from_fields([number()?, number()?, number()?, number()?, number()?]);
        stamps.insert(name, stamp);
    }
    Some(stamps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(ctime_ns: i64) -> FileStamp {
        FileStamp::from_fields([10, 1, ctime_ns as u64, 7, 3])
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

    /// A folder that cannot take the file (here `verified` is a folder itself: a test
    /// running as root cannot make a folder read-only) sends the stamps to the fallback,
    /// and the next load reads them from there.
    #[test]
    fn stamps_go_to_the_fallback_when_the_folder_cannot_take_them() {
        let dir = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let fallback = cache.path().join("batho/verified/key");
        std::fs::create_dir_all(dir.path().join("segments")).unwrap();
        std::fs::write(dir.path().join("segments/a.seg"), b"x").unwrap();
        std::fs::create_dir(dir.path().join(FILE_NAME)).unwrap();
        let mut verified =
            VerifiedSegments::load_with_fallback(dir.path(), || Some(fallback.clone()));
        verified.record("a.seg", Some(stamp(5)));
        verified.save_with_fallback(dir.path(), || Some(fallback.clone()));
        assert!(!verified.changed, "saved");
        assert!(fallback.is_file());
        let again = VerifiedSegments::load_with_fallback(dir.path(), || Some(fallback.clone()));
        assert!(again.holds("a.seg", Some(stamp(5))));
        // A folder that takes the file is preferred, and no leftover stays beside it.
        std::fs::remove_dir(dir.path().join(FILE_NAME)).unwrap();
        let mut verified =
            VerifiedSegments::load_with_fallback(dir.path(), || Some(fallback.clone()));
        verified.record("a.seg", Some(stamp(6)));
        verified.save_with_fallback(dir.path(), || Some(fallback.clone()));
        assert!(dir.path().join(FILE_NAME).is_file());
        let again = VerifiedSegments::load_with_fallback(dir.path(), || Some(fallback.clone()));
        assert!(again.holds("a.seg", Some(stamp(6))));
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names
                .iter()
                .all(|name| !name.contains(crate::gc::TEMP_MARKER)),
            "{names:?}"
        );
    }

    #[test]
    fn a_racy_stamp_is_not_recorded() {
        let mut verified = VerifiedSegments::default();
        verified.record("new.seg", Some(stamp(now_ns())));
        assert!(!verified.holds("new.seg", Some(stamp(now_ns()))));
        assert!(!verified.changed);
    }
}
