//! What `stat` says of a file, as far as knowing it unchanged cares: the stamp shared by
//! the store's verified segments (`verified.rs`) and the engine's source-file stamps
//! (`batho_engine::stamps`). Like git's index: any write to a file changes its ctime,
//! which no program can set back, so a file whose stamp is the one recorded when it was
//! last hashed still has the bytes it had then, unless the stamp is racy.

/// How much older than the start of hashing a file's mtime and ctime must be for its
/// stamp to be trusted later: a change within the file system's timestamp granularity of
/// the hashing could leave the stamp as it was.
pub const RACY_MARGIN_NS: i64 = 2_000_000_000;

/// What `stat` says about a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStamp {
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    ino: u64,
    dev: u64,
}

impl FileStamp {
    /// The stamp of a file's metadata; `None` where the platform lacks ctime and inodes.
    pub fn of(metadata: &std::fs::Metadata) -> Option<FileStamp> {
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

    /// Whether the stamp is too recent to be trusted for a hash taken from
    /// `hashed_from_ns` on ([`RACY_MARGIN_NS`]).
    pub fn is_racy(&self, hashed_from_ns: i64) -> bool {
        self.mtime_ns.max(self.ctime_ns) >= hashed_from_ns.saturating_sub(RACY_MARGIN_NS)
    }

    /// Size, mtime, ctime, inode and device, in that order, for a file that stores stamps.
    pub fn fields(&self) -> [u64; 5] {
        [
            self.size,
            self.mtime_ns as u64,
            self.ctime_ns as u64,
            self.ino,
            self.dev,
        ]
    }

    /// The stamp of [`FileStamp::fields`].
    pub fn from_fields([size, mtime_ns, ctime_ns, ino, dev]: [u64; 5]) -> FileStamp {
        FileStamp {
            size,
            mtime_ns: mtime_ns as i64,
            ctime_ns: ctime_ns as i64,
            ino,
            dev,
        }
    }
}

/// Nanoseconds since the Unix epoch, now.
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_nanos()).unwrap_or(i64::MAX)
        })
}
