//! Finding the C and C++ source files of a repository.
//!
//! [`discover`] walks a tree with the `ignore` crate (in parallel) and returns every file with
//! a C/C++ extension that survives the ignore rules, sorted by its forward-slash relative path
//! so that builds are deterministic. Files that were eligible but could not be used (too large,
//! binary, unreadable, symlinked, non-UTF-8 name) are returned as [`SkippedFile`]s so the caller
//! can report them; files excluded by ignore rules are not listed.
//!
//! Ignore rules, in decreasing precedence:
//! - `.bathoignore` files (gitignore syntax) anywhere in the tree;
//! - `.gitignore` files and `.git/info/exclude`. When the root is inside a git checkout
//!   (a `.git` entry in the root or an ancestor), git's own semantics apply, including
//!   `.gitignore` files of ancestors up to the checkout root. Otherwise (a tree unpacked from a
//!   tarball, like a kernel release) the `.gitignore` files *inside* the root are still honoured,
//!   because they describe generated files just as well, but nothing above the root is read.
//!   The user's global git excludes are never read, so results do not depend on the machine;
//! - the built-in defaults plus [`DiscoverOptions::extra_ignores`] (one gitignore-syntax
//!   matcher rooted at the root; a later `!pattern` in `extra_ignores` re-includes a default).
//!   Names that are unambiguous build or tool output (`.git`, `.batho`, `node_modules`,
//!   `cmake-build-*`, `CMakeFiles`, `.cache`, `bazel-*`) are skipped at any depth. Generic names
//!   (`build`, `target`, `out`, `dist`) are skipped only at the root, because real source lives
//!   under such names deeper down (the kernel's `drivers/target`, `tools/build`). A directory
//!   of any name that holds a `CMakeCache.txt` or a `CACHEDIR.TAG` (the cache-directory
//!   standard, written by Cargo among others) is a build tree and is skipped too;
//! - hidden files and directories (name starting with `.`) are skipped.
//!
//! The git index is not read, so a file git tracks although an ignore rule matches it is
//! dropped (on linux-6.1 one file of 55,415: the root `.gitignore` line `tags` also matches
//! the directory `tools/testing/selftests/arm64/tags/`).
//!
//! Symbolic links are never followed: a symlinked directory is not entered (so there are no
//! loops and nothing outside the root is read), and a symlinked source file is reported as
//! [`SkipReason::Symlink`] (its target, when inside the root, is indexed under its real path).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{DirEntry, WalkBuilder, WalkState};

/// Default size limit: large enough for the 9 MB sqlite amalgamation with room to spare.
pub const DEFAULT_MAX_FILE_SIZE_KB: u64 = 32 * 1024;

/// How many leading bytes are checked for a NUL byte to tell binary files from text.
pub const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// Built-in ignore patterns (gitignore syntax, rooted at the walk root).
const DEFAULT_IGNORES: &[&str] = &[
    ".git/",
    ".batho/",
    "node_modules/",
    "cmake-build-*/",
    "CMakeFiles/",
    ".cache/",
    "bazel-*/",
    "/build/",
    "/target/",
    "/out/",
    "/dist/",
];

/// Files whose presence marks a directory as a build tree, whatever its name.
const BUILD_TREE_MARKERS: &[&str] = &["CMakeCache.txt", "CACHEDIR.TAG"];

/// Options of [`discover`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiscoverOptions {
    /// Files larger than this many KiB are skipped; `None` means
    /// [`DEFAULT_MAX_FILE_SIZE_KB`] (32 MiB).
    pub max_file_size_kb: Option<u64>,
    /// Extra gitignore-syntax patterns, applied after the built-in defaults (so `!build/`
    /// re-includes a root `build` directory).
    pub extra_ignores: Vec<String>,
    /// Paths (relative, `/`) already indexed as text: they are not sniffed for binary
    /// content again, which saves opening every file of a large tree when a patch only
    /// needs to know what is there. A file that became binary has changed and is read,
    /// and refused, by whoever indexes it.
    pub known_text: Option<std::sync::Arc<std::collections::HashSet<String>>>,
}

impl DiscoverOptions {
    /// The effective size limit in bytes.
    pub fn max_bytes(&self) -> u64 {
        self.max_file_size_kb
            .unwrap_or(DEFAULT_MAX_FILE_SIZE_KB)
            .saturating_mul(1024)
    }
}

/// A source file found by [`discover`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// The path to open (under the canonicalized root).
    pub abs_path: PathBuf,
    /// The path relative to the root, with `/` separators on every platform.
    pub rel_path: String,
    /// Size in bytes when it was discovered.
    pub size: u64,
    /// Modification time when it was discovered, in milliseconds since the Unix epoch
    /// (`i64::MAX` when the file system does not tell).
    pub modified_ms: i64,
    /// What `stat` said when it was discovered (see [`crate::stamps`]).
    pub stamp: Option<crate::stamps::Stamp>,
}

/// An eligible source file that was left out, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedFile {
    /// The path relative to the root, with `/` separators (lossily decoded if needed).
    pub rel_path: String,
    /// Why it was left out.
    pub reason: SkipReason,
}

/// Why a file was not indexed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkipReason {
    /// The file exceeds the size limit.
    #[error("file is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// The file's size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// A NUL byte was found among the first bytes: not a text file.
    #[error("binary file (NUL byte in the first {BINARY_SNIFF_BYTES} bytes)")]
    Binary,
    /// The file (or a directory on the way) could not be read.
    #[error("unreadable: {0}")]
    Unreadable(String),
    /// The file is a symbolic link; links are never followed.
    #[error("symbolic link (links are not followed)")]
    Symlink,
    /// The path is not valid UTF-8, so it has no stable relative-path key.
    #[error("path is not valid UTF-8")]
    NonUtf8Path,
    /// A FIFO, socket or device with a source file's name: reading one would block the
    /// walk or never end.
    #[error("not a regular file (a FIFO, socket or device)")]
    NotARegularFile,
}

/// The outcome of [`discover`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Discovery {
    /// Source files to index, sorted by `rel_path`.
    pub files: Vec<SourceFile>,
    /// Eligible files left out, sorted by `rel_path`.
    pub skipped: Vec<SkippedFile>,
}

/// Errors that stop discovery altogether.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoverError {
    /// The root does not exist or cannot be resolved.
    #[error("cannot resolve root {path}: {source}")]
    Root {
        /// The root as given.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The root is not a directory.
    #[error("root {0} is not a directory")]
    NotADirectory(PathBuf),
    /// An ignore pattern (built-in or from `extra_ignores`) is invalid.
    #[error("invalid ignore pattern {pattern:?}: {message}")]
    BadPattern {
        /// The pattern.
        pattern: String,
        /// The parser's message.
        message: String,
    },
}

/// File extensions (without the dot) that mark C or C++ source. `C` (upper case) is the
/// traditional C++ extension; the others are compared case-insensitively.
pub fn is_source_extension(ext: &str) -> bool {
    if ext == "C" || ext == "H" {
        return true;
    }
    const EXTS: &[&str] = &[
        "c", "h", "cc", "cpp", "cxx", "c++", "hh", "hpp", "hxx", "h++", "inl", "ipp", "tcc",
    ];
    EXTS.iter().any(|e| e.eq_ignore_ascii_case(ext))
}

fn has_source_extension(name: &std::ffi::OsStr) -> bool {
    let bytes = name.as_encoded_bytes();
    match bytes.iter().rposition(|&b| b == b'.') {
        // A leading dot is a hidden-file marker, not an extension.
        Some(0) | None => false,
        Some(i) => std::str::from_utf8(&bytes[i + 1..]).is_ok_and(is_source_extension),
    }
}

/// Walks `root` and returns its C/C++ source files (see the module docs for the rules).
pub fn discover(root: &Path, opts: &DiscoverOptions) -> Result<Discovery, DiscoverError> {
    let root = root.canonicalize().map_err(|source| DiscoverError::Root {
        path: root.to_path_buf(),
        source,
    })?;
    if !root.is_dir() {
        return Err(DiscoverError::NotADirectory(root));
    }
    let defaults = default_matcher(&root, &opts.extra_ignores)?;
    let in_git = root.ancestors().any(|a| a.join(".git").exists());
    let limit = opts.max_bytes();
    let known = opts.known_text.clone().unwrap_or_default();

    let mut builder = WalkBuilder::new(&root);
    builder
        .follow_links(false)
        .hidden(true)
        .ignore(false)
        .git_global(false)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(in_git)
        .parents(in_git)
        .add_custom_ignore_filename(".bathoignore")
        .threads(
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
        );
    let filter_root = root.clone();
    builder.filter_entry(move |entry| keep_entry(entry, &filter_root, &defaults));

    let out = Mutex::new(Discovery::default());
    builder.build_parallel().run(|| {
        let out = &out;
        let root = &root;
        let known = &known;
        Box::new(move |entry| {
            let item = match entry {
                Ok(entry) => classify(&entry, root, limit, known),
                Err(err) => Some(Err(walk_error(&err, root))),
            };
            if let Some(item) = item {
                // A poisoned lock means another visitor panicked; keep collecting anyway.
                let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
                match item {
                    Ok(file) => out.files.push(file),
                    Err(skip) => out.skipped.push(skip),
                }
            }
            WalkState::Continue
        })
    });
    let mut out = out.into_inner().unwrap_or_else(|e| e.into_inner());
    out.files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    out.skipped.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    Ok(out)
}

fn default_matcher(root: &Path, extra: &[String]) -> Result<Gitignore, DiscoverError> {
    let mut b = GitignoreBuilder::new(root);
    for pattern in DEFAULT_IGNORES
        .iter()
        .copied()
        .chain(extra.iter().map(String::as_str))
    {
        b.add_line(None, pattern)
            .map_err(|e| DiscoverError::BadPattern {
                pattern: pattern.to_string(),
                message: e.to_string(),
            })?;
    }
    b.build().map_err(|e| DiscoverError::BadPattern {
        pattern: extra.join(", "),
        message: e.to_string(),
    })
}

fn keep_entry(entry: &DirEntry, root: &Path, defaults: &Gitignore) -> bool {
    if entry.depth() == 0 {
        return true;
    }
    let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
    let path = entry.path();
    let rel = path.strip_prefix(root).unwrap_or(path);
    if defaults.matched(rel, is_dir).is_ignore() {
        return false;
    }
    if is_dir {
        return !BUILD_TREE_MARKERS
            .iter()
            .any(|m| path.join(m).symlink_metadata().is_ok());
    }
    true
}

fn rel_path_of(path: &Path, root: &Path) -> Result<String, String> {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let mut s = String::with_capacity(rel.as_os_str().len());
    let mut lossy = false;
    for (i, comp) in rel.components().enumerate() {
        if i > 0 {
            s.push('/');
        }
        let os = comp.as_os_str();
        match os.to_str() {
            Some(part) => s.push_str(part),
            None => {
                lossy = true;
                s.push_str(&os.to_string_lossy());
            }
        }
    }
    if lossy { Err(s) } else { Ok(s) }
}

/// `None` for entries that are not candidate source files (directories, other extensions).
fn classify(
    entry: &DirEntry,
    root: &Path,
    limit: u64,
    known_text: &std::collections::HashSet<String>,
) -> Option<Result<SourceFile, SkippedFile>> {
    let ft = entry.file_type()?;
    let path = entry.path();
    // A link to a directory is not walked; it is reported, as a link to a file is, so
    // that a tree left out is never left out silently.
    let linked_directory = ft.is_symlink() && path.is_dir();
    if ft.is_dir() || (!linked_directory && !has_source_extension(entry.file_name())) {
        return None;
    }
    let rel_path = match rel_path_of(path, root) {
        Ok(rel) => rel,
        Err(lossy) => {
            return Some(Err(SkippedFile {
                rel_path: lossy,
                reason: SkipReason::NonUtf8Path,
            }));
        }
    };
    let skip = |reason| {
        Some(Err(SkippedFile {
            rel_path: rel_path.clone(),
            reason,
        }))
    };
    if ft.is_symlink() {
        return skip(SkipReason::Symlink);
    }
    if !ft.is_file() {
        // Sockets, FIFOs and devices: reading a FIFO would block the walk.
        return skip(SkipReason::NotARegularFile);
    }
    let (size, modified_ms, stamp) = match entry.metadata() {
        Ok(m) => (m.len(), modified_ms(&m), crate::stamps::Stamp::of(&m)),
        Err(e) => return skip(SkipReason::Unreadable(e.to_string())),
    };
    if size > limit {
        return skip(SkipReason::TooLarge { size, limit });
    }
    let binary = if known_text.contains(&rel_path) {
        Ok(false)
    } else {
        sniff_binary(path)
    };
    match binary {
        Ok(true) => skip(SkipReason::Binary),
        Ok(false) => Some(Ok(SourceFile {
            abs_path: path.to_path_buf(),
            rel_path,
            size,
            modified_ms,
            stamp,
        })),
        Err(e) => skip(SkipReason::Unreadable(e.to_string())),
    }
}

/// Milliseconds since the Unix epoch of a file's modification, `i64::MAX` when unknown
/// (so that a caller comparing times treats the file as new).
pub fn modified_ms(m: &std::fs::Metadata) -> i64 {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(i64::MAX, |d| {
            i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
        })
}

/// True when a NUL byte occurs in the first [`BINARY_SNIFF_BYTES`] bytes of the file.
fn sniff_binary(path: &Path) -> std::io::Result<bool> {
    let mut f = File::open(path)?;
    let mut buf = [0u8; BINARY_SNIFF_BYTES];
    let mut filled = 0;
    while filled < buf.len() {
        match f.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(looks_binary(&buf[..filled]))
}

/// True when a NUL byte occurs in the first [`BINARY_SNIFF_BYTES`] bytes of `bytes`.
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}

fn walk_error(err: &ignore::Error, root: &Path) -> SkippedFile {
    let path = error_path(err);
    let rel_path = match path {
        Some(p) => rel_path_of(p, root).unwrap_or_else(|lossy| lossy),
        None => String::new(),
    };
    SkippedFile {
        rel_path,
        reason: SkipReason::Unreadable(err.to_string()),
    }
}

fn error_path(err: &ignore::Error) -> Option<&Path> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        ignore::Error::Loop { child, .. } => Some(child),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
