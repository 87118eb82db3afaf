//! Name indexes over all files' facts: compact sorted `(hash, file, entity)` tables (no
//! per-name allocation), the include graph and translation-unit closures.

use std::collections::HashMap;

use batho_schema::{NodeFlags, NodeKind};

use crate::extract::{FileFacts, Sym, entity_bits};

pub(crate) fn hash_str(s: &str) -> u64 {
    crate::extract::fx_hash(s.as_bytes())
}

/// An entity of the whole input: (file index, entity index).
pub(crate) type Ent = (u32, u32);

/// A multimap from a string to entities, stored as one sorted vector.
#[derive(Default)]
pub(crate) struct NameTable {
    rows: Vec<(u64, u32, u32)>,
    /// The hashes whose rows do not all carry one key (a hash collision), sorted; set by
    /// [`name_table_of`].
    mixed: Vec<u64>,
    /// `dir[b]` is the first row whose hash's top `bits` bits are at least `b`: a look-up
    /// searches one small bucket instead of the whole table (23 probes, each a cache miss,
    /// on a kernel's seven million rows).
    dir: Vec<u32>,
    bits: u32,
}

/// The key of a (class, member name) pair in [`Index::member_names`].
fn member_key(class_qual: &str, name: &str) -> u64 {
    crate::extract::fx_hash_from(hash_str(class_qual), name.as_bytes())
}

impl NameTable {
    pub(crate) fn push(&mut self, key: &str, e: Ent) {
        self.push_hash(hash_str(key), e);
    }

    fn push_hash(&mut self, h: u64, e: Ent) {
        self.rows.push((h, e.0, e.1));
    }

    pub(crate) fn finish(&mut self) {
        self.rows.sort_unstable();
        self.finish_sorted();
    }

    /// [`NameTable::finish`] for rows already sorted.
    fn finish_sorted(&mut self) {
        self.rows.dedup();
        // About four rows per bucket.
        self.bits = self.rows.len().max(1).ilog2().saturating_sub(2).min(24);
        let buckets = 1usize << self.bits;
        self.dir = Vec::with_capacity(buckets + 1);
        let mut row = 0;
        for b in 0..buckets {
            while row < self.rows.len() && self.bucket(self.rows[row].0) < b {
                row += 1;
            }
            self.dir.push(row as u32);
        }
        self.dir.push(self.rows.len() as u32);
    }

    fn bucket(&self, h: u64) -> usize {
        h.checked_shr(64 - self.bits).unwrap_or(0) as usize
    }

    /// Entities whose key hashes like `key`; callers check the key itself.
    pub(crate) fn get(&self, key: &str) -> impl Iterator<Item = Ent> + '_ {
        self.get_hash(hash_str(key))
    }

    fn rows_of(&self, h: u64) -> &[(u64, u32, u32)] {
        let b = self.bucket(h);
        let (Some(&lo), Some(&hi)) = (self.dir.get(b), self.dir.get(b + 1)) else {
            return &[];
        };
        let bucket = &self.rows[lo as usize..hi as usize];
        let start = bucket.partition_point(|r| r.0 < h);
        let len = bucket[start..].iter().take_while(|r| r.0 == h).count();
        &bucket[start..start + len]
    }

    fn get_hash(&self, h: u64) -> impl Iterator<Item = Ent> + '_ {
        self.rows_of(h).iter().map(|r| (r.1, r.2))
    }

    /// Entities whose key is `key`, in a table made by [`name_table_of`] (`key_of` gives a
    /// row's key).
    fn get_exact<'a, 'k>(
        &'a self,
        key: &'a str,
        key_of: impl Fn(Ent) -> &'k str + 'a,
    ) -> impl Iterator<Item = Ent> + 'a {
        let h = hash_str(key);
        let rows = self.rows_of(h);
        let mixed = self.mixed.binary_search(&h).is_ok();
        // One key under this hash: the first row's decides for all.
        let all = !mixed && rows.first().is_some_and(|r| key_of((r.1, r.2)) == key);
        rows.iter()
            .map(|r| (r.1, r.2))
            .filter(move |&e| all || (mixed && key_of(e) == key))
    }
}

/// A row of the simple-name table while it is built: [`NameTable`]'s (hash, file,
/// entity), then a second, independent 32-bit hash of the name.
type NameRow = (u64, u32, u32, u32);

/// The second hash of a name in a [`NameRow`]: two names under one table hash are told
/// apart by it without reading either name again (they are scattered over every file's
/// facts). Names equal under both hashes (96 bits) are taken for one name.
fn check_hash(name: &str) -> u32 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x6e61_6d65_7461_626c).hash_one(name) as u32
}

/// The rows of the simple-name table for the files `range` of `files`, sorted. Instance
/// fields are only ever found through their class (`members`), and namespaces never by
/// simple name; leaving them out keeps the candidate lists of common names (`dev`,
/// `name`, `device`) short.
fn name_rows(files: &[FileFacts], range: std::ops::Range<usize>) -> Vec<NameRow> {
    let mut rows = Vec::new();
    for fi in range {
        let f = &files[fi];
        for (ei, e) in f.entities.iter().enumerate() {
            let via_name = match e.kind {
                NodeKind::Field => e.flags.contains(NodeFlags::STATIC),
                NodeKind::Namespace => false,
                _ => true,
            };
            if via_name {
                let name = f.str(e.name);
                rows.push((hash_str(name), fi as u32, ei as u32, check_hash(name)));
            }
        }
    }
    rows.sort_unstable();
    rows
}

/// The simple-name table of the sorted `rows`, with its hash collisions (the hashes whose
/// rows carry different names, told by their check hashes) recorded.
fn name_table_of(rows: Vec<NameRow>) -> NameTable {
    let mut mixed = Vec::new();
    for group in rows.chunk_by(|a, b| a.0 == b.0) {
        if group.iter().any(|r| r.3 != group[0].3) {
            mixed.push(group[0].0);
        }
    }
    let mut table = NameTable {
        rows: rows.iter().map(|r| (r.0, r.1, r.2)).collect(),
        mixed,
        ..NameTable::default()
    };
    drop(rows);
    table.finish_sorted();
    table
}

/// The two sorted row lists as one sorted list.
fn merge_sorted(a: Vec<NameRow>, b: Vec<NameRow>) -> Vec<NameRow> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// The member tables of [`Index`]: class → members, (class, name) → members.
fn member_tables(files: &[FileFacts]) -> (NameTable, NameTable) {
    let mut members = NameTable::default();
    let mut member_names = NameTable::default();
    for (fi, f) in files.iter().enumerate() {
        for (ei, e) in f.entities.iter().enumerate() {
            if matches!(e.kind, NodeKind::Method | NodeKind::Field) {
                let ent = (fi as u32, ei as u32);
                let q = f.str(e.qual);
                if let Some(cut) = q.rfind("::") {
                    members.push(&q[..cut], ent);
                    member_names.push_hash(member_key(&q[..cut], f.str(e.name)), ent);
                }
            }
        }
    }
    members.finish();
    member_names.finish();
    (members, member_names)
}

/// Everything the resolver looks names up in.
pub(crate) struct Index<'f> {
    pub(crate) files: &'f [FileFacts],
    /// Simple name → entities.
    pub(crate) by_name: NameTable,
    /// Qualified name of a class/struct/union → its members (methods and fields).
    pub(crate) members: NameTable,
    /// (Class qualified name, member simple name) → those members: virtual dispatch and
    /// member calls look one name up in classes with hundreds of members.
    member_names: NameTable,
    /// Path → file index.
    pub(crate) by_path: HashMap<&'f str, u32>,
    /// Resolved includes: file → included repo files.
    pub(crate) includes: Vec<Vec<u32>>,
    /// Per include: the resolved file, or `None` (external).
    pub(crate) include_targets: Vec<Vec<Option<u32>>>,
    /// Per file: whether it includes a header that several nested `include` directories
    /// offer, none of them on its path (`<asm/io.h>` from `drivers/`): which one it gets
    /// is the build configuration's choice (see [`Index::nearest_under_include`]).
    pub(crate) includes_unchosen: Vec<bool>,
}

impl<'f> Index<'f> {
    pub(crate) fn new(files: &'f [FileFacts], include_dirs: &[String]) -> Index<'f> {
        // The simple-name table (the largest: every entity) is built on both threads,
        // the member tables beside its first half: nothing else runs while the index is
        // made. The halves' sorted rows merge into what one sort of all would give.
        let mid = files.len() / 2;
        let ((members, member_names), by_name_rows) = std::thread::scope(|s| {
            let low = s.spawn(|| name_rows(files, 0..mid));
            let members = member_tables(files);
            let high = name_rows(files, mid..files.len());
            match low.join() {
                Ok(low) => (members, merge_sorted(low, high)),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        });
        let by_name = name_table_of(by_name_rows);
        let by_path: HashMap<&str, u32> = files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.path.as_str(), i as u32))
            .collect();
        let mut idx = Index {
            files,
            by_name,
            members,
            member_names,
            by_path,
            includes: vec![Vec::new(); files.len()],
            include_targets: vec![Vec::new(); files.len()],
            includes_unchosen: vec![false; files.len()],
        };
        idx.resolve_includes(include_dirs);
        idx
    }

    pub(crate) fn name(&self, e: Ent) -> &'f str {
        let f = &self.files[e.0 as usize];
        f.str(f.entities[e.1 as usize].name)
    }

    pub(crate) fn qual(&self, e: Ent) -> &'f str {
        let f = &self.files[e.0 as usize];
        f.str(f.entities[e.1 as usize].qual)
    }

    pub(crate) fn entity(&self, e: Ent) -> &'f crate::extract::Entity {
        &self.files[e.0 as usize].entities[e.1 as usize]
    }

    pub(crate) fn sym(&self, file: u32, s: Sym) -> &'f str {
        self.files[file as usize].str(s)
    }

    /// Entities named `name`. The table is keyed by a 64-bit FxHash, which real names do
    /// collide on (`sample_pop` and `sample_hbp` in the kernel): the name itself decides,
    /// compared once per look-up unless the hash is one of the collisions.
    pub(crate) fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = Ent> + 'a {
        self.by_name.get_exact(name, move |e| self.name(e))
    }

    /// Members of the class with qualified name `class_qual`.
    pub(crate) fn members_of<'a>(&'a self, class_qual: &'a str) -> impl Iterator<Item = Ent> + 'a {
        self.members.get(class_qual).filter(move |&e| {
            let q = self.qual(e);
            q.len() > class_qual.len() + 2
                && q.starts_with(class_qual)
                && q[class_qual.len()..].starts_with("::")
        })
    }

    /// Members of the class with qualified name `class_qual` named `name`, in the order of
    /// [`Self::members_of`].
    pub(crate) fn members_named<'a>(
        &'a self,
        class_qual: &'a str,
        name: &'a str,
    ) -> impl Iterator<Item = Ent> + 'a {
        self.member_names
            .get_hash(member_key(class_qual, name))
            .filter(move |&e| {
                let q = self.qual(e);
                self.name(e) == name
                    && q.len() > class_qual.len() + 2
                    && q.starts_with(class_qual)
                    && q[class_qual.len()..].starts_with("::")
            })
    }

    fn resolve_includes(&mut self, include_dirs: &[String]) {
        let dirs: Vec<String> = include_dirs
            .iter()
            .map(|d| d.trim_end_matches('/').to_owned())
            .collect();
        // Every file under a directory named `include`, keyed by its path below it: one
        // lookup per `#include` however many such directories the tree has.
        let mut under_include: HashMap<&str, Vec<u32>> = HashMap::new();
        let mut by_base: HashMap<&str, Vec<u32>> = HashMap::new();
        for (i, f) in self.files.iter().enumerate() {
            let p = f.path.as_str();
            let mut acc = 0;
            for comp in p.split('/') {
                acc += comp.len() + 1;
                if comp == "include" && acc < p.len() {
                    under_include.entry(&p[acc..]).or_default().push(i as u32);
                }
            }
            let base = p.rsplit('/').next().unwrap_or(p);
            by_base.entry(base).or_default().push(i as u32);
        }
        let mut buf = String::new();
        for fi in 0..self.files.len() {
            let f = &self.files[fi];
            let dir = f.path.rfind('/').map_or("", |i| &f.path[..i]);
            let mut targets = Vec::with_capacity(f.includes.len());
            let mut edges = Vec::new();
            for inc in &f.includes {
                let path = f.str(inc.path);
                let mut found = None;
                let try_path = |base: &str, buf: &mut String| -> Option<u32> {
                    normalize_join(base, path, buf);
                    self.by_path.get(buf.as_str()).copied()
                };
                if !inc.system {
                    found = try_path(dir, &mut buf).or_else(|| try_path("", &mut buf));
                }
                if found.is_none() {
                    found = dirs.iter().find_map(|d| try_path(d, &mut buf));
                }
                if found.is_none() {
                    normalize_join("", path, &mut buf);
                    if let Some(candidates) = under_include.get(buf.as_str()) {
                        found = self.nearest_under_include(&f.path, &buf, candidates);
                        self.includes_unchosen[fi] |= found.is_none();
                    }
                }
                if found.is_none() && !inc.system {
                    let base = path.rsplit('/').next().unwrap_or(path);
                    if let Some(c) = by_base.get(base) {
                        let suffix_ok = |&&i: &&u32| {
                            let p = self.files[i as usize].path.as_str();
                            p == path
                                || (p.ends_with(path)
                                    && p.as_bytes()[p.len() - path.len() - 1] == b'/')
                        };
                        let m: Vec<&u32> = c.iter().filter(suffix_ok).collect();
                        if m.len() == 1 {
                            found = Some(*m[0]);
                        }
                    }
                }
                if found == Some(fi as u32) {
                    found = None;
                }
                if let Some(t) = found {
                    edges.push(t);
                }
                targets.push(found);
            }
            edges.sort_unstable();
            edges.dedup();
            self.includes[fi] = edges;
            self.include_targets[fi] = targets;
        }
    }

    /// Which of the files `candidates`, each `key` below some directory named `include`,
    /// an `#include` of `key` in `includer` finds. The include directory nearest to the
    /// includer wins (`arch/x86/kernel/x.c` → `arch/x86/include/asm/…`), then the
    /// shallowest. When none shares a leading directory with the includer and there are
    /// several, only the repository's top-level `include/` counts: a nested one is on the
    /// include path of its own subtree, not of every file. Before this rule, a kernel
    /// header's `#include <asm/barrier.h>` chose `tools/include/asm/barrier.h` (the
    /// shallowest of 23), which pulled `tools/`'s copies of `list_head`, `kfree` or
    /// `mutex_unlock` into every translation unit and made each of their uses ambiguous.
    /// Without a match the include stays unresolved; `include_dirs` names such
    /// directories explicitly.
    fn nearest_under_include(&self, includer: &str, key: &str, candidates: &[u32]) -> Option<u32> {
        let path = |file: u32| self.files[file as usize].path.as_str();
        let best = candidates
            .iter()
            .map(|&file| shared_leading_dirs(includer, path(file)))
            .max()?;
        if best == 0 && candidates.len() > 1 {
            return candidates
                .iter()
                .copied()
                .find(|&file| path(file).strip_prefix("include/") == Some(key));
        }
        candidates.iter().copied().max_by(|&x, &y| {
            let (px, py) = (path(x), path(y));
            shared_leading_dirs(includer, px)
                .cmp(&shared_leading_dirs(includer, py))
                .then(py.len().cmp(&px.len()))
                .then(py.cmp(px))
        })
    }

    pub(crate) fn is_def(&self, e: Ent) -> bool {
        !self.entity(e).flags.contains(NodeFlags::DECLARATION_ONLY)
    }

    pub(crate) fn is_static(&self, e: Ent) -> bool {
        self.entity(e).flags.contains(NodeFlags::STATIC)
    }

    pub(crate) fn arity_ok(&self, e: Ent, arity: u8) -> bool {
        let en = self.entity(e);
        en.params == arity || (en.bits & entity_bits::VARIADIC != 0 && arity >= en.params)
    }
}

/// The translation unit of one file (the file and every repo header it reaches through
/// includes), as a mark per file. Each resolver thread owns one: the index it reads is
/// shared and immutable.
#[derive(Default)]
pub(crate) struct Closure {
    mark: Vec<u32>,
    epoch: u32,
    of: u32,
    stack: Vec<u32>,
    /// Whether a file of the closure includes a header the resolver could not choose
    /// ([`Index::includes_unchosen`]).
    unchosen: bool,
}

impl Closure {
    pub(crate) fn new(files: usize) -> Closure {
        Closure {
            mark: vec![0; files],
            epoch: 0,
            of: u32::MAX,
            stack: Vec::new(),
            unchosen: false,
        }
    }

    /// Makes `file`'s translation unit the current closure; `contains` then answers in O(1).
    pub(crate) fn set(&mut self, ix: &Index<'_>, file: u32) {
        if self.of == file {
            return;
        }
        self.of = file;
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
        let epoch = self.epoch;
        self.stack.clear();
        self.stack.push(file);
        self.mark[file as usize] = epoch;
        self.unchosen = false;
        while let Some(f) = self.stack.pop() {
            self.unchosen |= ix.includes_unchosen[f as usize];
            for &t in &ix.includes[f as usize] {
                if self.mark[t as usize] != epoch {
                    self.mark[t as usize] = epoch;
                    self.stack.push(t);
                }
            }
        }
    }

    /// Whether the current closure includes a header the resolver could not choose, so
    /// that it may see definitions of headers outside it.
    pub(crate) fn has_unchosen_include(&self) -> bool {
        self.unchosen
    }

    /// Whether `file` is in the current closure.
    pub(crate) fn contains(&self, file: u32) -> bool {
        self.mark[file as usize] == self.epoch
    }
}

/// How many leading path components `a` and `b` share.
pub(crate) fn shared_leading_dirs(a: &str, b: &str) -> usize {
    a.split('/')
        .zip(b.split('/'))
        .take_while(|(x, y)| x == y)
        .count()
}

/// `base/rel` with `.` and `..` removed, into `out`.
pub(crate) fn normalize_join(base: &str, rel: &str, out: &mut String) {
    out.clear();
    let mut parts: Vec<&str> = Vec::new();
    for comp in base.split('/').chain(rel.split('/')) {
        match comp {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(p);
    }
}

#[cfg(test)]
mod tests {
    use super::{NameRow, NameTable, merge_sorted, name_table_of};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn halves_merged_make_the_table_of_all_rows_and_find_its_collisions(
            // Rows of a few names (name k hashes to `hashes[k]`, several names sharing
            // a hash: collisions), split between two halves as `Index::new` does.
            picks in prop::collection::vec((0usize..12, 0u32..6, 0u32..4, any::<bool>()), 0..200),
            hashes in prop::collection::vec(0u64..5, 12),
        ) {
            let row = |&(k, f, e, _): &(usize, u32, u32, bool)| -> NameRow {
                (hashes[k] << 60, f, e, k as u32)
            };
            let mut low: Vec<NameRow> = picks.iter().filter(|p| p.3).map(row).collect();
            let mut high: Vec<NameRow> = picks.iter().filter(|p| !p.3).map(row).collect();
            low.sort_unstable();
            high.sort_unstable();
            let mut all: Vec<NameRow> = picks.iter().map(row).collect();
            all.sort_unstable();
            let merged = merge_sorted(low, high);
            prop_assert_eq!(&merged, &all);

            let table = name_table_of(merged);
            let mut rows: Vec<(u64, u32, u32)> = all.iter().map(|r| (r.0, r.1, r.2)).collect();
            rows.dedup();
            prop_assert_eq!(&table.rows, &rows);
            let mut mixed: Vec<u64> = all
                .iter()
                .filter(|r| all.iter().any(|o| o.0 == r.0 && o.3 != r.3))
                .map(|r| r.0)
                .collect();
            mixed.dedup();
            prop_assert_eq!(&table.mixed, &mixed);
        }

        #[test]
        fn a_lookup_finds_exactly_the_rows_of_its_hash(
            // Few distinct hashes (groups of several rows), spread over the whole range
            // so that every bucket of the directory is reached.
            picks in prop::collection::vec((0usize..40, 0u32..5), 0..400),
            hashes in prop::collection::vec(any::<u64>(), 40),
            extra in prop::collection::vec(any::<u64>(), 0..20),
        ) {
            let mut t = NameTable::default();
            for &(k, e) in &picks {
                t.push_hash(hashes[k], (k as u32, e));
            }
            t.finish();
            for h in hashes.iter().chain(&extra).copied().chain([0, u64::MAX]) {
                let mut expected: Vec<(u32, u32)> = picks
                    .iter()
                    .filter(|&&(k, _)| hashes[k] == h)
                    .map(|&(k, e)| (k as u32, e))
                    .collect();
                expected.sort_unstable();
                expected.dedup();
                let mut found: Vec<(u32, u32)> = t.get_hash(h).collect();
                found.sort_unstable();
                prop_assert_eq!(found, expected);
            }
        }
    }
}
