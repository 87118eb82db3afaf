//! The lines a unified diff (`git diff`, `diff -u`) changes, per file: what `affected`
//! needs to turn a change into the entities it touches. Only the file headers (`--- a/x`,
//! `+++ b/x`) and hunk headers (`@@ -12,3 +12,4 @@`) are read; hunk bodies are counted
//! line by line to find the changed lines inside each hunk. Anything else (commit
//! messages, `diff --git`, `index`, binary notices) is skipped, and text that is not a
//! diff at all gives no files rather than an error.

use std::ops::RangeInclusive;

/// The changed lines of one file: in the old version (removed lines) and in the new one
/// (added lines), 1-based, each as ascending ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileChanges {
    /// The path in the new version (the old one for a deleted file), without the `a/`
    /// or `b/` prefix git adds.
    pub path: String,
    /// Lines of the old version that were removed or replaced.
    pub old_lines: Vec<RangeInclusive<u32>>,
    /// Lines of the new version that were added or replaced.
    pub new_lines: Vec<RangeInclusive<u32>>,
}

/// The most files one diff may name (a diff of a whole tree has fewer).
const MAX_FILES: usize = 100_000;

fn strip_prefix(path: &str) -> Option<String> {
    let path = path.split('\t').next().unwrap_or(path).trim();
    if path == "/dev/null" || path.is_empty() {
        return None;
    }
    let path = path
        .strip_prefix("a/")
        .or_else(|| path.strip_prefix("b/"))
        .unwrap_or(path);
    Some(path.to_string())
}

/// `-12,3` or `+12` → (start, count).
fn hunk_range(text: &str) -> Option<(u32, u32)> {
    let (start, count) = match text.split_once(',') {
        Some((start, count)) => (start, count.parse().ok()?),
        None => (text, 1),
    };
    Some((start.parse().ok()?, count))
}

/// `@@ -12,3 +12,4 @@ ...` → the old and new starts and counts.
fn hunk_header(line: &str) -> Option<((u32, u32), (u32, u32))> {
    let rest = line.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(" +")?;
    let (new, _) = rest.split_once(" @@")?;
    Some((hunk_range(old)?, hunk_range(new)?))
}

/// Adds `line` to `ranges`, extending the last range when it is the next line.
fn push_line(ranges: &mut Vec<RangeInclusive<u32>>, line: u32) {
    if let Some(last) = ranges.last_mut()
        && last.end().checked_add(1) == Some(line)
    {
        *last = *last.start()..=line;
        return;
    }
    ranges.push(line..=line);
}

/// The files a unified diff changes, in the order it names them.
pub fn parse_unified_diff(text: &str) -> Vec<FileChanges> {
    let mut files: Vec<FileChanges> = Vec::new();
    let mut old_path: Option<String> = None;
    // Inside a hunk: the next old and new line numbers and how many of each remain.
    let mut hunk: Option<(u32, u32, u32, u32)> = None;
    for line in text.lines() {
        if let Some((old_line, new_line, old_left, new_left)) = hunk.as_mut()
            && (*old_left > 0 || *new_left > 0)
            && let Some(current) = files.last_mut()
        {
            match line.as_bytes().first() {
                Some(b'-') if *old_left > 0 => {
                    push_line(&mut current.old_lines, *old_line);
                    *old_line = old_line.saturating_add(1);
                    *old_left -= 1;
                    continue;
                }
                Some(b'+') if *new_left > 0 => {
                    push_line(&mut current.new_lines, *new_line);
                    *new_line = new_line.saturating_add(1);
                    *new_left -= 1;
                    continue;
                }
                Some(b' ') | None => {
                    *old_line = old_line.saturating_add(1);
                    *new_line = new_line.saturating_add(1);
                    *old_left = old_left.saturating_sub(1);
                    *new_left = new_left.saturating_sub(1);
                    continue;
                }
                Some(b'\\') => continue, // "\ No newline at end of file"
                _ => hunk = None,
            }
        }
        if let Some(path) = line.strip_prefix("--- ") {
            old_path = strip_prefix(path);
            hunk = None;
        } else if let Some(path) = line.strip_prefix("+++ ") {
            let path = strip_prefix(path).or_else(|| old_path.take());
            if let Some(path) = path
                && files.len() < MAX_FILES
            {
                files.push(FileChanges {
                    path,
                    ..FileChanges::default()
                });
            }
            hunk = None;
        } else if let Some(((old_start, old_count), (new_start, new_count))) = hunk_header(line)
            && !files.is_empty()
        {
            hunk = Some((old_start, new_start, old_count, new_count));
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_diff_gives_the_changed_lines_of_each_version() {
        let diff = "diff --git a/src/x.c b/src/x.c\nindex 1..2 100644\n--- a/src/x.c\n+++ b/src/x.c\n\
                    @@ -10,4 +10,5 @@ int f(void)\n ctx\n-old one\n+new one\n+new two\n ctx\n ctx\n\
                    @@ -40 +41,0 @@\n-gone\n\
                    --- /dev/null\n+++ b/new.h\n@@ -0,0 +1,2 @@\n+a\n+b\n\
                    --- a/old.c\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n";
        let files = parse_unified_diff(diff);
        assert_eq!(
            files,
            vec![
                FileChanges {
                    path: "src/x.c".into(),
                    old_lines: vec![11..=11, 40..=40],
                    new_lines: vec![11..=12],
                },
                FileChanges {
                    path: "new.h".into(),
                    old_lines: vec![],
                    new_lines: vec![1..=2],
                },
                FileChanges {
                    path: "old.c".into(),
                    old_lines: vec![1..=2],
                    new_lines: vec![],
                },
            ]
        );
    }

    #[test]
    fn text_that_is_not_a_diff_names_no_file() {
        assert!(parse_unified_diff("hello\n@@ -1 +1 @@\n-x\n+y\n").is_empty());
        assert!(parse_unified_diff("").is_empty());
        // A header with absurd numbers is read, not trusted: no overflow, no panic.
        let files = parse_unified_diff(
            "--- a/x\n+++ b/x\n@@ -4294967295,2 +4294967295,2 @@\n-a\n-b\n+c\n+d\n",
        );
        assert_eq!(files.len(), 1);
    }
}
