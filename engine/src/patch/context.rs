//! The context of a patch (`gather`): the files, and within them the entities, that the
//! resolver must see to resolve the emitted files exactly as a full build would.
//!
//! The name fixed point is driven by events, so its cost follows the entities it loads
//! rather than (entities × rounds): every entity of a loaded file is looked at once, and
//! the ones not yet reachable wait under the one name that would make them reachable.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use batho_schema::{Language, NodeFlags, NodeKind, RelType};
use batho_storage::input::NodeIdx;
use batho_storage::{Artifact, EdgeIdx};
use hashbrown::HashTable;

use super::scope::{base_include_targets, comps, first_token, last_comp, new_include_targets};
use super::{Extract, PatchError};
use crate::extract::{Entity, FileFacts, IdBuild, NO_ENTITY};
use crate::facts_cache::name_hash;
use crate::resolve::{self, ResolveOptions};

/// String sets of the fixed point, which hashes every name of every entity it meets.
type NameSet = HashSet<String, foldhash::fast::RandomState>;

/// Extracts (into `facts`) every file the resolver must see to resolve the files of `emit`
/// exactly as a full build would, and returns the paths of those context files.
///
/// A reference is resolved by looking its name up among every entity of that name, then
/// narrowing by the referring file's translation unit, by `static`, by directory and by
/// arity. So the context is: (a) the include closure of each emitted file (which decides
/// visibility; unchanged headers follow the base's INCLUDES edges, which rule 3 keeps
/// valid), and (b) every file defining an entity named like a name the lookups may ask
/// for: the references' names, qualifiers and receivers, the emitted entities' names and
/// scopes (out-of-line methods, overrides), and, followed to a fixed point, the types,
/// alias-macro targets and base classes of entities so found, the classes deriving from
/// them (virtual dispatch) and the macros opening a signature (which can make it static).
///
/// Emitted files need their references: changed ones are parsed (by the caller),
/// unchanged ones come whole from the facts cache where it has them; context files come
/// from it as skeletons, and are listed in `skeletal`.
pub(super) fn gather(
    base: &Artifact,
    emit: &BTreeSet<String>,
    facts: &mut HashMap<String, FileFacts>,
    skeletal: &mut HashSet<String>,
    present: &BTreeMap<String, Language>,
    extract: &Extract<'_>,
    opts: &ResolveOptions,
) -> Result<Context, PatchError> {
    let mut context: BTreeSet<String> = BTreeSet::new();
    let parse: Vec<String> = emit
        .iter()
        .filter(|p| !facts.contains_key(*p) || skeletal.contains(*p))
        .cloned()
        .collect();
    // Not in `facts` or skeletal: unchanged files (changed ones were parsed first).
    let (got, unchanged_cached) = extract.unchanged(&parse)?;
    for f in got {
        skeletal.remove(&f.path);
        facts.insert(f.path.clone(), f);
    }
    let mut pending: BTreeSet<String> = BTreeSet::new();

    // (a) Include closure.
    let new_targets = new_include_targets(present, facts, emit, &opts.include_dirs);
    let mut queue: Vec<String> = emit.iter().cloned().collect();
    let mut seen: NameSet = emit.iter().cloned().collect();
    while let Some(p) = queue.pop() {
        let targets: Vec<String> = match new_targets.get(&p) {
            Some(t) => t.iter().filter(|t| !t.starts_with('<')).cloned().collect(),
            None => match super::Indexed::of_path(base, &p) {
                Some((n, _, _)) => base_include_targets(base, n)
                    .into_iter()
                    .filter(|t| present.contains_key(t))
                    .collect(),
                None => Vec::new(),
            },
        };
        for t in targets {
            if seen.insert(t.clone()) {
                context.insert(t.clone());
                queue.push(t);
            }
        }
    }
    pending.extend(context.iter().filter(|p| !facts.contains_key(*p)).cloned());
    fetch(extract, facts, skeletal, &mut pending)?;

    // (b) Names, to a fixed point.
    let mut wanted = Wanted::default();
    for p in emit {
        let Some(f) = facts.get(p) else { continue };
        for r in &f.refs {
            wanted.insert_comps(f.str(r.name));
            wanted.insert_comps(f.str(r.qual));
            wanted.insert_comps(f.str(r.recv));
        }
        for e in &f.entities {
            wanted.insert_comps(f.str(e.qual));
        }
        for b in &f.bases {
            wanted.insert_comps(f.str(b.name));
        }
    }
    // Files some emitted translation unit includes: only there can a `static` or a macro
    // of a source file be visible to an emitted file.
    let mut in_units: NameSet = context.iter().cloned().collect();
    in_units.extend(emit.iter().cloned());
    // Files whose entities are still to be looked at: each joins once, when it is
    // emitted or enters the context (looking through every file each round made the
    // fixed point quadratic).
    let mut to_scan: Vec<String> = emit.iter().chain(context.iter()).cloned().collect();
    // Files whose entities were looked at, in the order they were (a waiting entity
    // names its file by position here).
    let mut scanned: Vec<String> = Vec::new();
    // Entities of scanned files not reachable yet, by the hash of the name they wait for.
    let mut waiting: HashMap<u64, Vec<(u32, u32)>, IdBuild> = HashMap::default();
    let mut looked = Looked::default();
    // Instance fields in the base named like a wanted name, waiting for their class.
    let mut deferred: HashMap<String, Vec<NodeIdx>> = HashMap::new();
    // String ids of files already in the context or emitted.
    let mut taken: HashSet<u32, IdBuild> = HashSet::default();
    // Classes something derives from: only their in-edges can hold an INHERITS edge (a C
    // tree has none, and a widely used struct has tens of thousands of in-edges).
    let derived_from: HashSet<u32, IdBuild> = base
        .edges_of_rel(RelType::Inherits)
        .iter()
        .map(|e| base.edge(EdgeIdx(e)).dst().0)
        .collect();
    loop {
        let before = (wanted.len(), context.len());
        // Look at the entities of every newly loaded emitted or context file once.
        // (A file whose extraction failed has no facts: it stays queued, never scanned.)
        let (fresh, unloaded): (Vec<String>, Vec<String>) = std::mem::take(&mut to_scan)
            .into_iter()
            .partition(|p| facts.contains_key(p));
        to_scan = unloaded;
        for p in fresh {
            let f = &facts[&p];
            let at = scanned.len() as u32;
            let emitted = emit.contains(&p);
            for (ei, e) in f.entities.iter().enumerate() {
                // Every definition of an emitted file may be made static by a macro.
                if emitted && matches!(e.kind, NodeKind::Function | NodeKind::Variable) {
                    let t = first_token(f.str(e.signature));
                    if !t.is_empty() {
                        wanted.insert(t);
                    }
                }
                // Most entities (the kernel's millions of macros) lend no name but their
                // own: reaching them changes nothing, so they need not wait.
                if lends_only_its_name(f, ei) {
                    continue;
                }
                match wanted.missing(f, e) {
                    None => expand(f, ei, &mut wanted),
                    Some(h) => waiting.entry(h).or_default().push((at, ei as u32)),
                }
            }
            scanned.push(p);
        }
        // The entities waiting for the new names become reachable (and lend their names
        // in turn) or wait for their class. (Hundreds of thousands wake on a large
        // checkout: their files are found by position, not by path.)
        let scanned_facts: Vec<&FileFacts> = scanned.iter().map(|p| &facts[p]).collect();
        while let Some(h) = wanted.fresh.pop() {
            for (at, ei) in waiting.remove(&h).unwrap_or_default() {
                let f = scanned_facts[at as usize];
                let e = &f.entities[ei as usize];
                match wanted.missing(f, e) {
                    None => expand(f, ei as usize, &mut wanted),
                    Some(h) => waiting.entry(h).or_default().push((at, ei)),
                }
            }
        }
        drop(scanned_facts);
        // Every entity of the base named like a wanted name: its file joins the context.
        let mut found: Vec<NodeIdx> = Vec::new();
        // `a::f` and `b::f` look up the same simple name; in byte order, so that each
        // search starts where the previous one stopped.
        let simple = looked.take_new(&mut wanted);
        found.extend(lookup_all(base, &simple, opts.threads));
        // Fields whose class became wanted since they were looked up.
        if !deferred.is_empty() {
            let ready: Vec<String> = deferred
                .keys()
                .filter(|c| wanted.contains(c))
                .cloned()
                .collect();
            for c in ready {
                found.extend(deferred.remove(&c).unwrap_or_default());
            }
        }
        // What the loop below needs of each node found, read on every thread: most
        // (a million on a large checkout) live in files already taken, or are statics and
        // macros of source files no emitted unit includes, and go here.
        let found = crate::par::map_runs(&found, opts.threads, 16_384, |part| {
            part.iter()
                .filter_map(|&n| {
                    let node = base.node(n);
                    let kind = node.kind();
                    if kind == NodeKind::File {
                        return None;
                    }
                    let lends_bases =
                        matches!(kind, NodeKind::Class | NodeKind::Struct | NodeKind::Union)
                            && derived_from.contains(&n.0);
                    let sid = node.file_sid().0;
                    let flags = node.flags();
                    // A `static` or a macro of a source file outside every emitted unit
                    // is never visible to an emitted file (the resolver's `visible`).
                    let invisible = || {
                        let file = node.file();
                        !resolve::is_header(&file) && !in_units.contains(file.as_ref())
                    };
                    let internal = kind == NodeKind::Macro || flags.contains(NodeFlags::STATIC);
                    let hidden = internal && invisible();
                    // Taken files only grow: what the loop would skip is dropped here.
                    let skip = taken.contains(&sid) || hidden;
                    (!skip || lends_bases).then_some(Found {
                        n,
                        kind,
                        sid,
                        flags,
                        hidden,
                    })
                })
                .collect::<Vec<_>>()
        });
        for Found {
            n,
            kind,
            sid,
            flags,
            hidden,
        } in found
        {
            let node = base.node(n);
            if !taken.contains(&sid) {
                if kind == NodeKind::Field && !flags.contains(NodeFlags::STATIC) {
                    let qn = node.qualified_name();
                    let class = last_comp(resolve::scope_of(&qn));
                    if !wanted.contains(class) {
                        deferred.entry(class.to_owned()).or_default().push(n);
                        continue;
                    }
                }
                if hidden {
                    continue;
                }
                let file = node.file();
                let file = file.as_ref();
                if want(file, emit, &mut context, &mut pending, facts, present) {
                    to_scan.push(file.to_owned());
                }
                if context.contains(file) || emit.contains(file) {
                    taken.insert(sid);
                }
            }
            // Classes deriving from it: virtual calls reach their overrides.
            if matches!(kind, NodeKind::Class | NodeKind::Struct | NodeKind::Union)
                && derived_from.contains(&n.0)
            {
                for e in base.in_edges(n) {
                    if e.rel() == RelType::Inherits {
                        let src = base.node(base.edge_src(e.idx()));
                        let file = src.file();
                        if want(&file, emit, &mut context, &mut pending, facts, present) {
                            to_scan.push(file.into_owned());
                        }
                        wanted.insert(&src.name());
                    }
                }
            }
        }
        if pending.is_empty() && wanted.fresh.is_empty() && (wanted.len(), context.len()) == before
        {
            break;
        }
        fetch(extract, facts, skeletal, &mut pending)?;
    }
    Ok(Context {
        files: context,
        wanted,
        unchanged_cached,
    })
}

/// A node the base lookup found, as the fixed point reads it.
struct Found {
    n: NodeIdx,
    kind: NodeKind,
    /// String id of its file.
    sid: u32,
    flags: NodeFlags,
    /// A `static` or a macro of a source file outside every emitted unit.
    hidden: bool,
}

/// The base's nodes of each of `names` (sorted), in that order: a large checkout asks for
/// half a million names, so they are looked up on `threads` cursors, each over its own
/// run of the sorted names.
fn lookup_all(base: &Artifact, names: &[&str], threads: usize) -> Vec<NodeIdx> {
    crate::par::map_runs(names, threads, 4096, |part| {
        let mut cursor = base.name_cursor();
        part.iter().flat_map(|n| cursor.lookup(n)).collect()
    })
}

/// The names the lookups may ask for. A large checkout wants half a million of them, so
/// each is kept once, in one arena, and found by its [`name_hash`] (which also tests the
/// entities of loaded files): no `String` per name, no name hashed twice.
#[derive(Default)]
pub(super) struct Wanted {
    arena: String,
    /// `(name_hash, start, end)` of each wanted name in `arena`.
    names: HashTable<(u64, usize, usize)>,
    /// Hashes of the names added since the fixed point last woke the entities waiting
    /// for them.
    fresh: Vec<u64>,
    /// `arena` ranges of the last `::` components of the names added since the base was
    /// last searched.
    fresh_simple: Vec<(usize, usize)>,
}

impl Wanted {
    fn len(&self) -> usize {
        self.names.len()
    }

    fn contains(&self, name: &str) -> bool {
        holds(&self.names, &self.arena, name_hash(name), name)
    }

    /// Adds a name; a new one is queued in `fresh` and `fresh_simple`.
    fn insert(&mut self, name: &str) {
        let h = name_hash(name);
        if holds(&self.names, &self.arena, h, name) {
            return;
        }
        let a = self.arena.len();
        self.arena.push_str(name);
        let b = self.arena.len();
        self.names.insert_unique(h, (h, a, b), |&(eh, ..)| eh);
        self.fresh.push(h);
        self.fresh_simple.push((b - last_comp(name).len(), b));
    }

    /// Adds every `::` component of `s`.
    fn insert_comps(&mut self, s: &str) {
        for c in comps(s) {
            self.insert(c);
        }
    }

    /// Whether some wanted name has the hash `h`.
    fn hashes_contain(&self, h: u64) -> bool {
        self.names.find(h, |&(eh, ..)| eh == h).is_some()
    }

    /// `None` when a lookup can reach `e` (it bears a wanted name, and an instance field
    /// only through a wanted class); otherwise the hash of the name it still needs.
    fn missing(&self, f: &FileFacts, e: &Entity) -> Option<u64> {
        let h = name_hash(f.str(e.name));
        if !self.hashes_contain(h) {
            return Some(h);
        }
        if e.kind == NodeKind::Field && !e.flags.contains(NodeFlags::STATIC) {
            let class = name_hash(last_comp(resolve::scope_of(f.str(e.qual))));
            if !self.hashes_contain(class) {
                return Some(class);
            }
        }
        None
    }
}

/// Whether `table` holds `name` (hashed to `h`) as a range of `arena`.
fn holds(table: &HashTable<(u64, usize, usize)>, arena: &str, h: u64, name: &str) -> bool {
    table
        .find(h, |&(eh, a, b)| eh == h && &arena[a..b] == name)
        .is_some()
}

/// The simple names already looked up in the base, as ranges of [`Wanted`]'s arena.
#[derive(Default)]
struct Looked {
    names: HashTable<(u64, usize, usize)>,
}

impl Looked {
    /// The simple names of the names wanted since the last call that were never looked
    /// up, sorted (so that each base search starts where the previous one stopped) and
    /// each once; they count as looked up from here on.
    fn take_new<'w>(&mut self, wanted: &'w mut Wanted) -> Vec<&'w str> {
        let mut fresh = std::mem::take(&mut wanted.fresh_simple);
        let arena = &wanted.arena;
        fresh.retain(|&(a, b)| {
            let name = &arena[a..b];
            let h = name_hash(name);
            let seen = holds(&self.names, arena, h, name);
            if !seen {
                self.names.insert_unique(h, (h, a, b), |&(eh, ..)| eh);
            }
            !seen
        });
        let mut out: Vec<&str> = fresh.iter().map(|&(a, b)| &arena[a..b]).collect();
        out.sort_unstable();
        out
    }
}

/// Whether [`expand`] of entity `ei` can add no name but the entity's own (which is
/// wanted once it is reachable): not a function or variable (no signature macro), no type
/// or alias target, no scope, no bases.
fn lends_only_its_name(f: &FileFacts, ei: usize) -> bool {
    let e = &f.entities[ei];
    let qual = f.str(e.qual);
    !matches!(e.kind, NodeKind::Function | NodeKind::Variable)
        && f.str(e.type_name).is_empty()
        && f.macro_calls_of(ei as u32).is_empty()
        && (qual.is_empty() || qual == f.str(e.name))
        && !f.bases.iter().any(|b| b.entity as usize == ei)
}

/// Adds the names a reachable entity lends to `wanted`: the macro its signature may open
/// with (which can make it static), its type or alias target, its scopes, its bases and,
/// for a macro, the names its body calls (an invocation resolves them).
fn expand(f: &FileFacts, ei: usize, wanted: &mut Wanted) {
    let e = &f.entities[ei];
    for call in f.macro_calls_of(ei as u32) {
        wanted.insert_comps(f.str(call.name));
        wanted.insert_comps(f.str(call.within));
    }
    if matches!(e.kind, NodeKind::Function | NodeKind::Variable) {
        wanted.insert_comps(first_token(f.str(e.signature)));
    }
    wanted.insert_comps(f.str(e.type_name));
    wanted.insert_comps(f.str(e.qual));
    for b in f.bases.iter().filter(|b| b.entity as usize == ei) {
        wanted.insert_comps(f.str(b.name));
    }
}

/// What [`gather`] found: the context files and every name the lookups may ask for.
pub(super) struct Context {
    /// Files extracted or loaded only as context.
    pub(super) files: BTreeSet<String>,
    wanted: Wanted,
    /// Emitted unchanged files loaded whole from the facts cache rather than parsed.
    pub(super) unchanged_cached: usize,
}

impl Context {
    /// The facts a context file lends the resolver: only the entities its lookups can
    /// reach (those named like a wanted name; instance fields only of a wanted class),
    /// without references. Entities sharing a qualified name are kept or dropped
    /// together, so the `#n` ids of the kept ones are those of the full file.
    pub(super) fn lend(&self, f: &FileFacts) -> FileFacts {
        let keep_qual: HashSet<&str> = f
            .entities
            .iter()
            .filter(|e| self.wanted.missing(f, e).is_none())
            .map(|e| f.str(e.qual))
            .collect();
        let mut map = vec![NO_ENTITY; f.entities.len()];
        let mut entities = Vec::with_capacity(keep_qual.len());
        for (i, e) in f.entities.iter().enumerate() {
            if keep_qual.contains(f.str(e.qual)) {
                map[i] = entities.len() as u32;
                entities.push(e.clone());
            }
        }
        for e in &mut entities {
            if e.parent != NO_ENTITY {
                e.parent = map[e.parent as usize];
            }
        }
        let bases = kept_renumbered(&f.bases, &map, |b| &mut b.entity);
        let macro_calls = kept_renumbered(&f.macro_calls, &map, |call| &mut call.macro_entity);
        let macro_arguments = kept_renumbered(&f.macro_arguments, &map, |arguments| {
            &mut arguments.macro_entity
        });
        FileFacts {
            path: f.path.clone(),
            language: f.language,
            text: f.text.clone(),
            ends: f.ends.clone(),
            entities,
            bases,
            includes: f.includes.clone(),
            guards: f.guards.clone(),
            macro_calls,
            macro_arguments,
            refs: Vec::new(),
            sites: Vec::new(),
            parse_errors: f.parse_errors,
            bytes: f.bytes,
            lines: f.lines,
            content_hash: f.content_hash,
        }
    }
}

/// The facts of `items` whose entity `map` keeps, with the entity renumbered as `map`
/// says (entities it drops map to [`NO_ENTITY`]).
fn kept_renumbered<T: Copy>(
    items: &[T],
    map: &[u32],
    entity_of: impl Fn(&mut T) -> &mut u32,
) -> Vec<T> {
    items
        .iter()
        .filter_map(|item| {
            let mut item = *item;
            let entity = entity_of(&mut item);
            let kept = map[*entity as usize];
            *entity = kept;
            (kept != NO_ENTITY).then_some(item)
        })
        .collect()
}

/// Adds `file` to the context when it is a present file not yet emitted or in it, and
/// queues it for extraction when its facts are not loaded; whether it was added.
fn want(
    file: &str,
    emit: &BTreeSet<String>,
    context: &mut BTreeSet<String>,
    pending: &mut BTreeSet<String>,
    facts: &HashMap<String, FileFacts>,
    present: &BTreeMap<String, Language>,
) -> bool {
    // Most calls name a file already taken: answer those first, with one look-up.
    if file.is_empty() || context.contains(file) {
        return false;
    }
    if emit.contains(file) || !present.contains_key(file) {
        return false;
    }
    context.insert(file.to_owned());
    if !facts.contains_key(file) {
        pending.insert(file.to_owned());
    }
    true
}

/// Loads (or, on a cache miss, extracts) the pending context files into `facts`.
fn fetch(
    extract: &Extract<'_>,
    facts: &mut HashMap<String, FileFacts>,
    skeletal: &mut HashSet<String>,
    pending: &mut BTreeSet<String>,
) -> Result<(), PatchError> {
    if pending.is_empty() {
        return Ok(());
    }
    let paths: Vec<String> = std::mem::take(pending).into_iter().collect();
    let (got, hits) = extract.context(&paths)?;
    for (i, f) in got.into_iter().enumerate() {
        if i < hits {
            skeletal.insert(f.path.clone());
        }
        facts.insert(f.path.clone(), f);
    }
    Ok(())
}
