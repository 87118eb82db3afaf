//! Batho's on-disk graph store.
//!
//! A `.batho/` directory holds immutable, content-addressed segment files (blake3 names)
//! with the columns of each graph generation, a manifest per generation naming its
//! segments, `MANIFEST` pointing at the current one, a `DBID` identity file and a `LOCK`
//! file for the single writer. [`Store`] creates the directory, takes the writer lock and
//! commits a [`GraphBuilder`] as a new generation with an atomic manifest swap;
//! [`Artifact`] maps one generation read-only and answers node, edge, adjacency, index and
//! bitmap lookups in place, without parsing anything proportional to the graph at open.
//! The byte-level format, the commit protocol and the invariants are in `docs/format.md`.
//!
//! Module map: [`format`](mod@format) (constants, headers), `column` (the compact integer codec),
//! [`manifest`] (rkyv manifest, run records), `writer` (graph → segments), `store`
//! (directory, lock, commit), `reader` (artifact open and lookups), `strings` (the
//! front-coded string dictionary), `refs` (node and edge views), `bitmaps` (lazy
//! roaring), `verify` (structural checks), `convert` (artifact → builder), [`fuzzing`]
//! (entry points for fuzz targets), [`fix`] (phased verification and repair), [`gc`]
//! (space use, run pruning, compaction, reclaiming files), [`audit`] (the hash-chained log
//! of destructive maintenance), `fragment` (a patch's [`GraphFragment`] and the merge
//! rules), `delta` / `delta_write` / `verify_delta` (delta layers: merged reads, writing,
//! checks), `merge_iter` (merged edge and name iterators), [`archive`]
//! (the transport archive: export and load).

#![warn(missing_docs, unreachable_pub)]
#![deny(clippy::host_endian_bytes)]

pub mod archive;
pub mod audit;
mod bitmaps;
mod column;
mod convert;
mod cursor;
mod delta;
mod delta_write;
mod error;
pub mod file_stamp;
pub mod fix;
pub mod format;
mod fragment;
mod fragment_same;
pub mod fuzzing;
pub mod gc;
pub mod input;
pub mod manifest;
mod merge_iter;
mod order;
mod reader;
mod refs;
pub mod session;
mod store;
mod strings;
pub mod text;
mod verified;
mod verify;
mod verify_delta;
mod writer;

#[cfg(test)]
mod crash_tests;

pub use cursor::NameCursor;
pub use error::{Remedy, Result, StorageError};
pub use fragment::{GraphFragment, materialize_fragment};
pub use input::{
    CONTENT_HASH_LEN, EdgeInput, GraphBuilder, IdText, NodeIdx, NodeInput, NodeScores, Sites,
    SitesId, StoredHash, StrId, content_hash, content_hash_prefix,
};
pub use manifest::{RunKind, RunRecord, RunStatus};
pub use reader::{Artifact, EdgeIdx, EdgeIter, NameIter};
pub use refs::{EdgeRef, NodeRef};
pub use roaring::RoaringBitmap;
pub use store::{CommitInfo, DEFAULT_DELTA_LIMIT_PERCENT, Store, WriterLock};
pub use verify::{Issue, VerifyPart};
