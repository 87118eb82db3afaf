//! The deep part of a `fix` scan: re-hashing segments and running the verification
//! parts, spread over every core with `--parallel` (a shared job list, longest first).

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::scan::{Scan, is_derived, record_damage};
use super::{FixOptions, Severity};
use crate::format::names;
use crate::manifest::SegmentRef;
use crate::reader::Artifact;
use crate::verify::{Issue, VerifyPart};

/// Segments to re-hash.
#[derive(Default)]
pub(super) struct Jobs {
    /// (phase, file name, segment, generations naming it).
    pub(super) hashes: Vec<(u8, String, SegmentRef, BTreeSet<u64>)>,
}

enum Job<'a> {
    Hash(&'a Path, u64),
    Verify(VerifyPart),
}

enum Outcome {
    Hashed(Result<bool, String>),
    Verified(Vec<Issue>),
}

fn hash_file(path: &Path, expected: &[u8; 32]) -> Result<bool, String> {
    let f = File::open(path).map_err(|e| e.to_string())?;
    let mut h = blake3::Hasher::new();
    h.update_reader(f).map_err(|e| e.to_string())?;
    Ok(h.finalize().as_bytes() == expected)
}

pub(super) fn run_jobs(
    dir: &Path,
    opts: &FixOptions,
    s: &mut Scan,
    jobs: Jobs,
    artifact: Option<&Artifact>,
) {
    let paths: Vec<PathBuf> = jobs
        .hashes
        .iter()
        .map(|(_, n, _, _)| dir.join(names::SEGMENTS_DIR).join(n))
        .collect();
    let mut list: Vec<(u64, Job<'_>)> = Vec::new();
    for (i, (_, _, seg, _)) in jobs.hashes.iter().enumerate() {
        list.push((seg.len, Job::Hash(&paths[i], i as u64)));
    }
    if opts.deep && artifact.is_some() {
        // Rough costs, so the longest parts start first.
        let size = artifact.map_or(0, |a| a.size_bytes());
        for (part, weight) in [
            (VerifyPart::Nodes, 4),
            (VerifyPart::Edges, 4),
            (VerifyPart::Bitmaps, 3),
            (VerifyPart::Strings, 1),
            (VerifyPart::Columns, 1),
            (VerifyPart::Delta, 1),
        ] {
            list.push((size.saturating_mul(weight), Job::Verify(part)));
        }
    }
    list.sort_by_key(|(cost, _)| std::cmp::Reverse(*cost));
    let threads = if opts.parallel {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        1
    };
    let exec = |job: &Job<'_>| match job {
        Job::Hash(path, i) => Outcome::Hashed(hash_file(path, &jobs.hashes[*i as usize].2.hash)),
        Job::Verify(part) => {
            Outcome::Verified(artifact.map(|a| a.verify_part(*part)).unwrap_or_default())
        }
    };
    let results: Vec<Option<Outcome>> = if threads <= 1 || list.len() <= 1 {
        list.iter().map(|(_, j)| Some(exec(j))).collect()
    } else {
        let next = AtomicUsize::new(0);
        let slots: Mutex<Vec<Option<Outcome>>> =
            Mutex::new((0..list.len()).map(|_| None).collect());
        std::thread::scope(|scope| {
            for _ in 0..threads.min(list.len()) {
                scope.spawn(|| {
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some((_, job)) = list.get(k) else { break };
                        let out = exec(job);
                        if let Ok(mut slots) = slots.lock() {
                            slots[k] = Some(out);
                        }
                    }
                });
            }
        });
        slots.into_inner().unwrap_or_default()
    };
    for ((_, job), out) in list.iter().zip(results) {
        match (job, out) {
            (_, None) => s.add(
                4,
                Severity::Error,
                "fix",
                "a verification thread failed",
                None,
            ),
            (Job::Hash(_, i), Some(Outcome::Hashed(r))) => {
                let (phase, name, seg, gens) = &jobs.hashes[*i as usize];
                s.bytes_hashed += seg.len;
                match r {
                    Ok(true) => {}
                    Ok(false) => record_damage(
                        s,
                        *phase,
                        name,
                        seg,
                        gens,
                        "content does not match its blake3 name".into(),
                    ),
                    Err(e) => record_damage(s, *phase, name, seg, gens, format!("unreadable: {e}")),
                }
            }
            (Job::Verify(_), Some(Outcome::Verified(issues))) => s.structural.extend(issues),
            _ => {}
        }
    }
    let derived_only = s.structural.iter().all(|i| is_derived(&i.what));
    let issues = std::mem::take(&mut s.structural);
    for i in &issues {
        let repair = if derived_only {
            "rebuild the derived structures from the primary columns (a new generation)"
        } else {
            "primary data is damaged: make the newest intact generation current"
        };
        s.add(
            4,
            Severity::Error,
            i.what.clone(),
            i.detail.clone(),
            Some(repair.into()),
        );
    }
    s.structural = issues;
}
