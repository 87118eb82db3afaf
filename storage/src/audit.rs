//! The tamper-evident audit log: `.batho/audit.log`, one JSON object per line.
//!
//! Every destructive maintenance step (`fix` repairs, `gc` prunes and reclaims) appends an
//! entry `{seq, time_ms, action, detail, prev_hash, hash}` where `hash` is the blake3 of the
//! previous entry's hash followed by this entry's canonical JSON (every field but `hash`, in
//! that order). Editing, reordering or deleting an entry breaks the chain at the next one.
//! Deleting the newest entries leaves a valid prefix, so the newest `(seq, hash)` is also
//! kept in `.batho/audit.head` (replaced atomically after each append); a log shorter than
//! its head was cut. The log is only as trustworthy as the filesystem: someone who rewrites
//! both files consistently is not detected — the point is to catch edits and accidents.
//!
//! Appends are `O_APPEND` writes followed by `fsync`; callers hold the writer lock, so
//! entries are not interleaved.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Result, StorageError};
use crate::store::{io_err, now_ms, sync_dir, write_temp};

/// File name of the log inside `.batho/`.
pub const AUDIT_LOG: &str = "audit.log";
/// File name of the chain head inside `.batho/`.
pub const AUDIT_HEAD: &str = "audit.head";
/// `prev_hash` of the first entry.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One entry of the audit log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// 1 for the first entry, then +1 per entry.
    pub seq: u64,
    /// When the entry was written, milliseconds since the Unix epoch.
    pub time_ms: i64,
    /// What was done (`fix.delete_temp`, `gc.prune`, …).
    pub action: String,
    /// Human-readable details (files, runs, generations involved).
    pub detail: String,
    /// `hash` of the previous entry ([`GENESIS_HASH`] for the first).
    pub prev_hash: String,
    /// blake3 (hex) of `prev_hash` followed by the canonical JSON of the other fields.
    pub hash: String,
}

#[derive(Serialize)]
struct Canonical<'a> {
    seq: u64,
    time_ms: i64,
    action: &'a str,
    detail: &'a str,
    prev_hash: &'a str,
}

#[derive(Serialize, Deserialize)]
struct Head {
    seq: u64,
    hash: String,
}

impl AuditEntry {
    /// The hash this entry must carry, recomputed from its other fields.
    pub fn expected_hash(&self) -> String {
        let canonical = serde_json::to_string(&Canonical {
            seq: self.seq,
            time_ms: self.time_ms,
            action: &self.action,
            detail: &self.detail,
            prev_hash: &self.prev_hash,
        })
        .unwrap_or_default();
        let mut h = blake3::Hasher::new();
        h.update(self.prev_hash.as_bytes());
        h.update(canonical.as_bytes());
        h.finalize().to_hex().to_string()
    }
}

/// A problem found in the audit log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuditProblem {
    /// 1-based line of `audit.log` (0 for the head file or the log as a whole).
    pub line: u64,
    /// What is wrong.
    pub detail: String,
}

/// The result of checking the chain.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AuditCheck {
    /// Entries read.
    pub entries: u64,
    /// Breaks in the chain; empty when it is intact.
    pub problems: Vec<AuditProblem>,
}

/// The audit log of one `.batho/` directory.
#[derive(Clone, Debug)]
pub struct AuditLog {
    dir: PathBuf,
}

/// Reports at most this many chain breaks: one tampered entry breaks every later check.
const MAX_PROBLEMS: usize = 20;

impl AuditLog {
    /// The log of the store in `batho_dir` (nothing is read or created yet).
    pub fn new(batho_dir: &Path) -> AuditLog {
        AuditLog {
            dir: batho_dir.to_path_buf(),
        }
    }

    /// Path of `audit.log`.
    pub fn path(&self) -> PathBuf {
        self.dir.join(AUDIT_LOG)
    }

    fn head_path(&self) -> PathBuf {
        self.dir.join(AUDIT_HEAD)
    }

    fn read_text(path: &Path) -> Result<Option<String>> {
        match fs::read(path) {
            Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StorageError::io(path, e)),
        }
    }

    /// Every entry that parses, in file order (lines that do not parse are skipped; use
    /// [`AuditLog::verify`] to find them).
    pub fn entries(&self) -> Result<Vec<AuditEntry>> {
        let text = Self::read_text(&self.path())?.unwrap_or_default();
        Ok(text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect())
    }

    /// Appends an entry (the caller holds the writer lock) and returns it.
    pub fn append(&self, action: &str, detail: &str) -> Result<AuditEntry> {
        let path = self.path();
        let text = Self::read_text(&path)?.unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        // Chain onto whatever the last line is, even a damaged one: the damage stays
        // visible to `verify`, and new entries are still protected.
        let (seq, prev_hash) = match lines.last() {
            None => (1, GENESIS_HASH.to_owned()),
            Some(last) => match serde_json::from_str::<AuditEntry>(last) {
                Ok(e) => (e.seq + 1, e.hash),
                Err(_) => (
                    lines.len() as u64 + 1,
                    blake3::hash(last.as_bytes()).to_hex().to_string(),
                ),
            },
        };
        let mut entry = AuditEntry {
            seq,
            time_ms: now_ms(),
            action: action.to_owned(),
            detail: detail.to_owned(),
            prev_hash,
            hash: String::new(),
        };
        entry.hash = entry.expected_hash();
        let mut line = serde_json::to_string(&entry).map_err(|e| StorageError::InvalidInput {
            detail: format!("cannot encode an audit entry: {e}"),
        })?;
        line.push('\n');
        if !text.is_empty() && !text.ends_with('\n') {
            // A torn last line (crash mid-append) stays a line of its own.
            line.insert(0, '\n');
        }
        if text.is_empty() && !self.head_path().exists() {
            // The head exists before the first entry (naming none), so a log of one entry
            // without a head was cut, not interrupted: a crash between the first entry and
            // its head leaves this head, naming entry 0.
            self.write_head(0, GENESIS_HASH)?;
        }
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io_err(&path))?;
        f.write_all(line.as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(io_err(&path))?;
        if text.is_empty() {
            sync_dir(&self.dir)?;
        }
        self.write_head(entry.seq, &entry.hash)?;
        Ok(entry)
    }

    /// Replaces the head with one naming entry `seq` of hash `hash` (written aside, then
    /// renamed into place).
    fn write_head(&self, seq: u64, hash: &str) -> Result<()> {
        let head = serde_json::to_string(&Head {
            seq,
            hash: hash.to_owned(),
        })
        .unwrap_or_default();
        let tmp = write_temp(&self.dir, AUDIT_HEAD, head.as_bytes())?;
        let head_path = self.head_path();
        fs::rename(&tmp, &head_path).map_err(io_err(&head_path))?;
        sync_dir(&self.dir)
    }

    /// Checks the whole chain and the head.
    pub fn verify(&self) -> Result<AuditCheck> {
        let mut check = AuditCheck::default();
        let log = Self::read_text(&self.path())?;
        let head_text = Self::read_text(&self.head_path())?;
        let problem = |check: &mut AuditCheck, line: u64, detail: String| {
            if check.problems.len() < MAX_PROBLEMS {
                check.problems.push(AuditProblem { line, detail });
            }
        };
        let text = log.clone().unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            problem(
                &mut check,
                text.lines().count() as u64,
                "the last entry is incomplete (an interrupted write or a cut file)".into(),
            );
        }
        let mut prev: Option<AuditEntry> = None;
        let mut prev_hash = GENESIS_HASH.to_owned();
        let mut expected_seq = 1u64;
        for (i, raw) in text.lines().enumerate() {
            let line = i as u64 + 1;
            let entry: AuditEntry = match serde_json::from_str(raw) {
                Ok(e) => e,
                Err(e) => {
                    problem(&mut check, line, format!("not a valid entry: {e}"));
                    prev_hash = blake3::hash(raw.as_bytes()).to_hex().to_string();
                    expected_seq += 1;
                    prev = None;
                    continue;
                }
            };
            check.entries += 1;
            if entry.hash != entry.expected_hash() {
                problem(
                    &mut check,
                    line,
                    format!(
                        "entry {} was edited: its hash does not match its content",
                        entry.seq
                    ),
                );
            }
            if entry.seq != expected_seq {
                let what = if entry.seq > expected_seq {
                    format!(
                        "entries {expected_seq}..{} are missing (deleted)",
                        entry.seq - 1
                    )
                } else {
                    format!(
                        "entry {} is out of order (reordered or duplicated)",
                        entry.seq
                    )
                };
                problem(&mut check, line, format!("sequence break: {what}"));
            }
            if entry.prev_hash != prev_hash {
                problem(
                    &mut check,
                    line,
                    format!(
                        "entry {} does not chain onto the entry before it (an earlier entry was edited, deleted or reordered)",
                        entry.seq
                    ),
                );
            }
            prev_hash = entry.hash.clone();
            expected_seq = entry.seq.saturating_add(1);
            prev = Some(entry);
        }
        match head_text {
            Some(h) => match serde_json::from_str::<Head>(h.trim()) {
                Ok(head) => {
                    let last = prev.as_ref().map_or(0, |p| p.seq);
                    let entries: Vec<AuditEntry> = text
                        .lines()
                        .filter_map(|l| serde_json::from_str(l).ok())
                        .collect();
                    let at = entries.iter().find(|e| e.seq == head.seq);
                    if head.seq > last {
                        problem(
                            &mut check,
                            0,
                            format!(
                                "the log ends at entry {last} but entry {} was written: newest entries were deleted",
                                head.seq
                            ),
                        );
                    } else if at.is_some_and(|e| e.hash != head.hash) {
                        problem(
                            &mut check,
                            0,
                            format!(
                                "entry {} differs from the one recorded in {AUDIT_HEAD}",
                                head.seq
                            ),
                        );
                    } else if head.seq + 1 < last {
                        problem(
                            &mut check,
                            0,
                            format!(
                                "{AUDIT_HEAD} names entry {} but the log goes on to {last}",
                                head.seq
                            ),
                        );
                    }
                }
                Err(e) => problem(&mut check, 0, format!("{AUDIT_HEAD} is damaged: {e}")),
            },
            // The head is written before the first entry (see `append`): a log without a
            // head lost it.
            None if !text.is_empty() => {
                problem(&mut check, 0, format!("{AUDIT_HEAD} is missing"));
            }
            None => {}
        }
        Ok(check)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_with(n: usize) -> (tempfile::TempDir, AuditLog) {
        let tmp = tempfile::tempdir().unwrap();
        let log = AuditLog::new(tmp.path());
        for i in 0..n {
            log.append("test.action", &format!("entry number {i}"))
                .unwrap();
        }
        (tmp, log)
    }

    fn rewrite_lines(log: &AuditLog, f: impl FnOnce(&mut Vec<String>)) {
        let text = fs::read_to_string(log.path()).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        f(&mut lines);
        fs::write(log.path(), lines.join("\n") + "\n").unwrap();
    }

    #[test]
    fn an_untouched_chain_verifies() {
        let (_t, log) = log_with(5);
        let check = log.verify().unwrap();
        assert_eq!(check.entries, 5);
        assert!(check.problems.is_empty(), "{:?}", check.problems);
        let e = log.entries().unwrap();
        assert_eq!(e[0].prev_hash, GENESIS_HASH);
        assert_eq!(e[4].prev_hash, e[3].hash);
        assert_eq!(e.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_one_entry_log_without_its_head_is_reported() {
        let (_t, log) = log_with(1);
        fs::remove_file(log.head_path()).unwrap();
        let check = log.verify().unwrap();
        assert!(
            check
                .problems
                .iter()
                .any(|p| p.detail.contains("is missing")),
            "{:?}",
            check.problems
        );
    }

    /// A crash after the first entry, before its head: the head written before the entry
    /// names entry 0, and the log verifies.
    #[test]
    fn a_crash_between_the_first_entry_and_its_head_verifies() {
        let (_t, log) = log_with(1);
        log.write_head(0, GENESIS_HASH).unwrap();
        let check = log.verify().unwrap();
        assert!(check.problems.is_empty(), "{:?}", check.problems);
    }

    #[test]
    fn an_empty_log_verifies() {
        let tmp = tempfile::tempdir().unwrap();
        let check = AuditLog::new(tmp.path()).verify().unwrap();
        assert_eq!(check, AuditCheck::default());
    }

    #[test]
    fn an_edited_entry_is_reported() {
        let (_t, log) = log_with(4);
        rewrite_lines(&log, |l| {
            l[1] = l[1].replace("entry number 1", "entry number 9")
        });
        let p = log.verify().unwrap().problems;
        assert!(
            p.iter().any(|p| p.line == 2 && p.detail.contains("edited")),
            "{p:?}"
        );
    }

    #[test]
    fn an_edited_entry_with_a_recomputed_hash_breaks_the_next_link() {
        let (_t, log) = log_with(4);
        rewrite_lines(&log, |l| {
            let mut e: AuditEntry = serde_json::from_str(&l[1]).unwrap();
            e.detail = "forged".into();
            e.hash = e.expected_hash();
            l[1] = serde_json::to_string(&e).unwrap();
        });
        let p = log.verify().unwrap().problems;
        assert!(
            p.iter().any(|p| p.line == 3 && p.detail.contains("chain")),
            "{p:?}"
        );
    }

    #[test]
    fn deleted_and_reordered_entries_are_reported() {
        let (_t, log) = log_with(5);
        rewrite_lines(&log, |l| {
            l.remove(2);
        });
        let p = log.verify().unwrap().problems;
        assert!(p.iter().any(|p| p.detail.contains("missing")), "{p:?}");

        let (_t, log) = log_with(5);
        rewrite_lines(&log, |l| l.swap(1, 2));
        let p = log.verify().unwrap().problems;
        assert!(p.iter().any(|p| p.detail.contains("out of order")), "{p:?}");
    }

    #[test]
    fn cutting_the_newest_entries_is_reported_through_the_head() {
        let (_t, log) = log_with(5);
        rewrite_lines(&log, |l| l.truncate(3));
        let p = log.verify().unwrap().problems;
        assert!(
            p.iter()
                .any(|p| p.detail.contains("newest entries were deleted")),
            "{p:?}"
        );
    }

    #[test]
    fn flipped_bytes_anywhere_are_reported() {
        let (_t, log) = log_with(3);
        let orig = fs::read(log.path()).unwrap();
        for i in 0..orig.len() {
            let mut b = orig.clone();
            b[i] ^= 0x01;
            fs::write(log.path(), &b).unwrap();
            let check = log.verify().unwrap();
            assert!(!check.problems.is_empty(), "flip at {i} not detected");
        }
    }

    #[test]
    fn appending_after_damage_keeps_the_damage_visible() {
        let (_t, log) = log_with(2);
        rewrite_lines(&log, |l| l[0] = "garbage".into());
        log.append("after", "x").unwrap();
        let check = log.verify().unwrap();
        assert!(
            check.problems.iter().any(|p| p.line == 1),
            "{:?}",
            check.problems
        );
        assert_eq!(log.entries().unwrap().last().unwrap().seq, 3);
    }
}
