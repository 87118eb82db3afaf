//! Which files see a different translation unit after a patch (rule 3 of
//! `scope::affected`).
//!
//! The resolver narrows a lookup by the referring file's translation unit: the file and
//! every repository file it reaches through includes (`resolve::index::Closure`). A patch
//! changes translation units in two ways: a modified file's includes resolve to other
//! targets, or an added or deleted file changes what an `#include` naming its base name
//! finds. Either way only the files that reach a re-targeted file can see a different
//! unit, and of those only the ones whose unit really differs, and then only for the names
//! defined in the files that entered or left it. So a file is re-resolved when its old and
//! new units differ and it mentions (name filter) or has an edge into (base graph) a name
//! defined in one of the files of the difference. Re-resolving every transitive includer
//! instead made a 500-file kernel checkout re-resolve 35,000 files through 70 headers
//! whose includes changed, almost all of them reaching those headers' new includes by
//! another path anyway.
//!
//! Every present file whose own include targets changed is returned too: the context
//! gathering follows the base's INCLUDES edges for files it does not re-emit.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use batho_schema::{Language, NodeKind, RelType};
use batho_storage::Artifact;
use batho_storage::input::NodeIdx;

use super::FileChanges;
use super::scope::{Inputs, base_include_targets, new_include_targets};
use crate::extract::{FileFacts, IdBuild};
use crate::facts_cache::{self, FactsCache, filter_may_hold};

/// Above this many names defined in the files entering or leaving one translation unit,
/// the file is re-resolved without asking its name filter (probing costs more).
const MAX_PROBED_NAMES: usize = 20_000;

/// Adds to `out` the present files whose translation unit changed in a way their lookups
/// can see, and the files whose own include targets changed.
pub(super) fn affected(inputs: Inputs<'_>, out: &mut BTreeSet<String>) {
    let Inputs {
        base,
        changes,
        facts,
        present,
        include_dirs,
        indexed,
        cache,
        ..
    } = inputs;
    // Files whose includes may resolve differently: the modified and added ones, and the
    // files with an include naming the base name of a file added or deleted.
    let basenames: HashSet<&str> = changes
        .added
        .iter()
        .chain(&changes.deleted)
        .map(|p| basename(p))
        .collect();
    let mut retarget: BTreeSet<String> = changes.modified.iter().cloned().collect();
    retarget.extend(changes.added.iter().cloned());
    if !basenames.is_empty() {
        for n in base.nodes_of_kind(NodeKind::File).iter() {
            let node = base.node(NodeIdx(n));
            if !basenames.contains(basename(&node.name())) {
                continue;
            }
            for e in base.in_edges(NodeIdx(n)) {
                if e.rel() == RelType::Includes {
                    retarget.insert(base.node(base.edge_src(e.idx())).file().into_owned());
                }
            }
        }
    }
    retarget.retain(|p| present.contains_key(p));

    // The includes of unchanged re-targeted files come from the facts cache; a file it
    // cannot answer for counts as re-targeted to anything (the old rule: it and every
    // file reaching it).
    let mut known: HashMap<String, FileFacts> = HashMap::new();
    let mut unknown: Vec<&str> = Vec::new();
    for p in &retarget {
        if let Some(f) = facts.get(p) {
            known.insert(p.clone(), f.clone());
        } else if let Some(f) = indexed
            .files
            .get(p)
            .and_then(|(_, _, hash)| cache.get(p, hash))
        {
            known.insert(p.clone(), f);
        } else {
            unknown.push(p);
        }
    }
    let want: BTreeSet<String> = known.keys().cloned().collect();
    let new_targets = new_include_targets(present, &known, &want, include_dirs);

    // Files whose include targets changed, with their new targets.
    let mut retargeted: Vec<(&str, &BTreeSet<String>)> = Vec::new();
    for (p, targets) in &new_targets {
        let old = match indexed.files.get(p) {
            Some(&(n, _, _)) => base_include_targets(base, n),
            None => BTreeSet::new(),
        };
        if *targets != old {
            out.insert(p.clone());
            retargeted.push((p, targets));
        }
    }
    if retargeted.is_empty() && unknown.is_empty() && changes.deleted.is_empty() {
        return;
    }

    // The new include graph: re-targeted files' edges replaced, deleted files gone.
    let g = Graph::new(base, indexed, changes, present);
    let id = |p: &str| g.id.get(p).copied();
    // By file id (a closure asks it of every file it meets).
    let mut new_adj: Vec<Option<Vec<u32>>> = vec![None; g.paths.len()];
    let mut moved: Vec<u32> = unknown.iter().filter_map(|p| id(p)).collect();
    for (p, targets) in retargeted {
        let Some(at) = id(p) else {
            continue;
        };
        moved.push(at);
        let mut adj: Vec<u32> = targets.iter().filter_map(|t| id(t)).collect();
        adj.sort_unstable();
        adj.dedup();
        new_adj[at as usize] = Some(adj);
    }
    moved.extend(changes.deleted.iter().filter_map(|p| id(p)));
    let mut is_unknown = vec![false; g.paths.len()];
    for p in &unknown {
        if let Some(at) = id(p) {
            is_unknown[at as usize] = true;
        }
    }
    let any_unknown = is_unknown.contains(&true);

    // Every file reaching a moved one (in the base graph: only moved files' own edges
    // differ in the new one, and every includer of an added file is re-targeted).
    let mut reach: Vec<u32> = Vec::new();
    let mut seen = vec![false; g.paths.len()];
    let mut stack: Vec<u32> = moved.clone();
    for &m in &moved {
        seen[m as usize] = true;
    }
    while let Some(f) = stack.pop() {
        reach.push(f);
        for &s in &g.rev[f as usize] {
            if !seen[s as usize] {
                seen[s as usize] = true;
                stack.push(s);
            }
        }
    }
    let changed: HashSet<&str> = changes
        .added
        .iter()
        .chain(&changes.modified)
        .map(String::as_str)
        .collect();
    let mut names = UnitNames::new(facts, &g);
    let mut old_mark = Marks::new(g.paths.len());
    let mut new_mark = Marks::new(g.paths.len());
    for x in reach {
        let path = g.paths[x as usize];
        if g.deleted[x as usize] || changed.contains(path) || out.contains(path) {
            continue;
        }
        old_mark.closure(x, |f| g.old[f as usize].as_slice(), &g.deleted, false);
        new_mark.closure(
            x,
            |f| new_adj[f as usize].as_deref().unwrap_or(&g.old[f as usize]),
            &g.deleted,
            true,
        );
        let delta: Vec<u32> = old_mark
            .list
            .iter()
            .filter(|&&f| !new_mark.contains(f))
            .chain(new_mark.list.iter().filter(|&&f| !old_mark.contains(f)))
            .copied()
            .collect();
        let reaches_unknown = any_unknown && old_mark.list.iter().any(|&f| is_unknown[f as usize]);
        if reaches_unknown || names.visible_change(base, cache, indexed, path, &delta) {
            out.insert(path.to_owned());
        }
    }
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// The include graph of the base between repository files, by file id.
struct Graph<'a> {
    /// Id → path: the base's indexed files, then the added ones.
    paths: Vec<&'a str>,
    id: HashMap<&'a str, u32>,
    /// Id → ids it includes (base).
    old: Vec<Vec<u32>>,
    /// Id → ids including it (base).
    rev: Vec<Vec<u32>>,
    /// Id → whether the file is gone after the patch.
    deleted: Vec<bool>,
}

impl<'a> Graph<'a> {
    fn new(
        base: &Artifact,
        indexed: &'a super::Indexed,
        changes: &'a FileChanges,
        present: &BTreeMap<String, Language>,
    ) -> Graph<'a> {
        let mut paths: Vec<&str> = indexed.files.keys().map(String::as_str).collect();
        paths.extend(
            changes
                .added
                .iter()
                .filter(|p| !indexed.files.contains_key(*p))
                .map(String::as_str),
        );
        let id: HashMap<&str, u32> = paths
            .iter()
            .enumerate()
            .map(|(i, &p)| (p, i as u32))
            .collect();
        let by_node: HashMap<u32, u32> = indexed
            .files
            .values()
            .enumerate()
            .map(|(i, &(n, _, _))| (n.0, i as u32))
            .collect();
        let mut old: Vec<Vec<u32>> = vec![Vec::new(); paths.len()];
        let mut rev: Vec<Vec<u32>> = vec![Vec::new(); paths.len()];
        for (i, &(n, _, _)) in indexed.files.values().enumerate() {
            for e in base.out_edges(n) {
                if e.rel() == RelType::Includes
                    && let Some(&t) = by_node.get(&e.dst().0)
                {
                    old[i].push(t);
                    rev[t as usize].push(i as u32);
                }
            }
        }
        let deleted = paths.iter().map(|p| !present.contains_key(*p)).collect();
        Graph {
            paths,
            id,
            old,
            rev,
            deleted,
        }
    }
}

/// Epoch marks for one closure at a time.
struct Marks {
    mark: Vec<u32>,
    epoch: u32,
    list: Vec<u32>,
}

impl Marks {
    fn new(n: usize) -> Marks {
        Marks {
            mark: vec![0; n],
            epoch: 0,
            list: Vec::new(),
        }
    }

    /// Makes `list` (and the marks) the files `x` reaches through `adj`, itself
    /// included, skipping deleted files when `skip_deleted`.
    fn closure<'a>(
        &mut self,
        x: u32,
        adj: impl Fn(u32) -> &'a [u32],
        deleted: &[bool],
        skip_deleted: bool,
    ) {
        self.epoch += 1;
        let epoch = self.epoch;
        self.list.clear();
        self.list.push(x);
        self.mark[x as usize] = epoch;
        let mut i = 0;
        while i < self.list.len() {
            let f = self.list[i];
            i += 1;
            for &t in adj(f) {
                if self.mark[t as usize] != epoch && !(skip_deleted && deleted[t as usize]) {
                    self.mark[t as usize] = epoch;
                    self.list.push(t);
                }
            }
        }
    }

    /// Whether `f` is in the last closure.
    fn contains(&self, f: u32) -> bool {
        self.mark[f as usize] == self.epoch
    }
}

/// The names defined in each file (before and after the patch), hashed for the name
/// filters, computed once per file.
struct UnitNames<'a> {
    facts: &'a HashMap<String, FileFacts>,
    paths: &'a [&'a str],
    of: HashMap<u32, Vec<u64>>,
}

impl<'a> UnitNames<'a> {
    fn new(facts: &'a HashMap<String, FileFacts>, g: &'a Graph<'a>) -> UnitNames<'a> {
        UnitNames {
            facts,
            paths: &g.paths,
            of: HashMap::new(),
        }
    }

    fn of(&mut self, base: &Artifact, f: u32) -> &[u64] {
        let (facts, paths) = (self.facts, self.paths);
        self.of.entry(f).or_insert_with(|| {
            let path = paths[f as usize];
            let mut out: Vec<u64> = Vec::new();
            if let Some(bm) = base.nodes_in_file(path) {
                for n in bm.iter() {
                    let node = base.node(NodeIdx(n));
                    if node.kind() != NodeKind::File {
                        out.push(facts_cache::name_hash(&node.name()));
                    }
                }
            }
            if let Some(ff) = facts.get(path) {
                out.extend(
                    ff.entities
                        .iter()
                        .map(|e| facts_cache::name_hash(ff.str(e.name))),
                );
            }
            out.sort_unstable();
            out.dedup();
            out
        })
    }

    /// Whether file `path`, whose unit gained or lost the files `delta`, may look up a
    /// name defined in one of them: its name filter may hold one, or one of its edges
    /// ends at a node so named (an alias macro's target is looked up by a name the file
    /// does not write).
    fn visible_change(
        &mut self,
        base: &Artifact,
        cache: &FactsCache,
        indexed: &super::Indexed,
        path: &str,
        delta: &[u32],
    ) -> bool {
        if delta.is_empty() {
            return false;
        }
        let mut hashes: Vec<u64> = Vec::new();
        for &f in delta {
            hashes.extend_from_slice(self.of(base, f));
            if hashes.len() > MAX_PROBED_NAMES {
                return true;
            }
        }
        let filter = indexed
            .files
            .get(path)
            .and_then(|(_, _, hash)| cache.filter(path, hash));
        let Some(filter) = filter else {
            return true;
        };
        if hashes.iter().any(|&h| filter_may_hold(filter, h)) {
            return true;
        }
        let set: HashSet<u64, IdBuild> = hashes.into_iter().collect();
        let Some(bm) = base.nodes_in_file(path) else {
            return false;
        };
        bm.iter().any(|n| {
            base.out_edges(NodeIdx(n))
                .any(|e| set.contains(&facts_cache::name_hash(&base.node(e.dst()).name())))
        })
    }
}
