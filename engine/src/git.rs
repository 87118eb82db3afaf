//! The commit and branch a checkout is on, read from `.git` without a git binary.
//!
//! Runs record which commit they indexed. Spawning `git` would make builds depend on a tool
//! being installed and cost a process per build, and the information sits in a few small
//! files: `HEAD` (a symbolic `ref:` or a detached hash), loose refs under `refs/` and
//! `packed-refs`. Linked worktrees and submodules have a `.git` *file* (`gitdir: <path>`);
//! a worktree's git dir has a `commondir` file naming the shared directory where branch refs
//! live. Anything unexpected yields `None` fields rather than an error: the git information
//! is descriptive metadata and must never fail a build.

use std::fs;
use std::path::{Path, PathBuf};

/// What [`read_head`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GitInfo {
    /// The full hex object name of the checked-out commit (40 hex digits, 64 for SHA-256
    /// repositories); `None` outside a checkout, on an unborn branch, or if unreadable.
    pub commit: Option<String>,
    /// The branch name without `refs/heads/` (e.g. `main`, `feature/x`); `None` when HEAD
    /// is detached or outside a checkout.
    pub branch: Option<String>,
}

/// Symbolic refs pointing at symbolic refs are followed this deep, so cycles terminate.
const MAX_SYMREF_DEPTH: usize = 8;

/// Reads HEAD of the checkout containing `repo_root` (the directory itself or its nearest
/// ancestor with a `.git` entry, as git does).
pub fn read_head(repo_root: &Path) -> GitInfo {
    let Some(dirs) = repo_root.ancestors().find_map(git_dirs) else {
        return GitInfo::default();
    };
    let Some(head) = read_trimmed(&dirs.git_dir.join("HEAD")) else {
        return GitInfo::default();
    };
    match head.strip_prefix("ref:") {
        Some(target) => {
            let target = target.trim();
            let branch = target
                .strip_prefix("refs/heads/")
                .filter(|b| !b.is_empty())
                .map(str::to_string);
            GitInfo {
                commit: dirs.resolve(target, 0),
                branch,
            }
        }
        None => GitInfo {
            commit: is_object_name(&head).then_some(head),
            branch: None,
        },
    }
}

/// The per-checkout git dir (HEAD, per-worktree refs) and the common dir (shared refs).
#[derive(Debug)]
struct GitDirs {
    git_dir: PathBuf,
    common_dir: PathBuf,
}

fn git_dirs(dir: &Path) -> Option<GitDirs> {
    let dot_git = dir.join(".git");
    let meta = fs::metadata(&dot_git).ok()?;
    let git_dir = if meta.is_dir() {
        dot_git
    } else {
        let content = read_trimmed(&dot_git)?;
        let target = content.strip_prefix("gitdir:")?.trim();
        // A relative gitdir is relative to the directory holding the `.git` file.
        dir.join(target)
    };
    if !git_dir.join("HEAD").is_file() {
        return None;
    }
    let common_dir = match read_trimmed(&git_dir.join("commondir")) {
        Some(c) => git_dir.join(c),
        None => git_dir.clone(),
    };
    Some(GitDirs {
        git_dir,
        common_dir,
    })
}

impl GitDirs {
    /// The object name `refname` points at, following symbolic refs.
    fn resolve(&self, refname: &str, depth: usize) -> Option<String> {
        if depth > MAX_SYMREF_DEPTH || !is_safe_refname(refname) {
            return None;
        }
        let loose = [&self.git_dir, &self.common_dir]
            .into_iter()
            .find_map(|d| read_trimmed(&d.join(refname)));
        match loose {
            Some(content) => match content.strip_prefix("ref:") {
                Some(next) => self.resolve(next.trim(), depth + 1),
                None => is_object_name(&content).then_some(content),
            },
            None => packed_ref(&self.common_dir, refname),
        }
    }
}

/// Looks `refname` up in `packed-refs` (`<hash> <refname>` lines; `#` headers and `^<hash>`
/// peeled-tag lines are skipped).
fn packed_ref(common_dir: &Path, refname: &str) -> Option<String> {
    let text = fs::read_to_string(common_dir.join("packed-refs")).ok()?;
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('^'))
        .find_map(|line| {
            let (hash, name) = line.split_once(' ')?;
            (name.trim_end() == refname && is_object_name(hash)).then(|| hash.to_string())
        })
}

/// Refs are read as paths under the git dir, so a ref may not climb out of it.
fn is_safe_refname(refname: &str) -> bool {
    refname.starts_with("refs/")
        && !refname
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
        && !refname.contains('\\')
}

fn is_object_name(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn read_trimmed(path: &Path) -> Option<String> {
    // HEAD and ref files are tiny; anything large is not a ref file.
    let meta = fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 4096 {
        return None;
    }
    let s = fs::read_to_string(path).ok()?;
    Some(s.trim().to_string())
}

#[cfg(test)]
mod tests;
