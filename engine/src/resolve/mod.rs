//! Resolution: links the names in every file's [`FileFacts`] to entities and builds the
//! code graph (nodes, CONTAINS, INCLUDES, CALLS, REFERENCES, INHERITS, OVERRIDES, READS,
//! WRITES, EXPANDS) in a [`GraphBuilder`].
//!
//! Lookups go through sorted name tables (see `index`), so resolution is
//! O(references × candidates per name) with no per-name allocation. A call is looked up
//! in tiers, first hit wins (see [`Strategy`] for the confidence of each):
//!
//! 1. C++: the caller's class (`scope_qualified`) and its bases (`parent_chain`), then its
//!    enclosing namespaces (`scope_qualified`); `obj.m()`/`p->m()` through the declared
//!    type of the object (`receiver_type`), plus every override of a virtual target
//!    (role Dynamic).
//! 2. A macro `#define`d unconditionally earlier in the caller's own file (EXPANDS; an
//!    alias macro such as `#define ZSTD_isError ERR_isError` also yields the CALLS edge
//!    of the name it stands for).
//! 3. Definitions in the caller's translation unit: its own file (`exact_match`), then
//!    repo headers reachable through `#include` (`import_map`). A `static` (also through
//!    a macro such as `#define MEM_STATIC static inline`) is only visible there. A
//!    definition of the caller's file pasted under the include guard of a header the file
//!    includes before it is skipped, as the preprocessor skips it.
//! 4. Macros of the translation unit (EXPANDS): they shadow functions defined elsewhere.
//! 5. Non-static definitions anywhere: a unique one (`exact_match`); several are narrowed
//!    by arity (Heuristic), then to those whose translation unit includes a header
//!    declaring the name that the caller's includes too (`import_map`, Heuristic: the
//!    kernel's `mutex_unlock`, not `tools/perf`'s), then by directory proximity
//!    (`parent_chain`, Heuristic), or all kept (`ambiguous`, at most
//!    [`ResolveOptions::max_ambiguous`]). When the caller's translation unit has an
//!    include the index could not choose (`<asm/io.h>` from `drivers/`: one per
//!    architecture, see `Index::nearest_under_include`), headers' `static inline`
//!    definitions are candidates here too. A C library name (`printf`, `dup`) skips this
//!    tier unless the caller's translation unit declares it: a repository's own copy
//!    (`tools/include/nolibc/`, rocksdb's `port/win/`) is not what its other programs link.
//! 6. Function-pointer globals (role Dynamic), other macros, prototypes (role
//!    Declaration), libc names, and finally an `unresolved` stub.
//!
//! A call that resolves to a macro (tiers 2, 4 and 6) also yields, once the file's written
//! calls are made, the calls the macro's expansion makes, with the Generated role (see
//! `expand`).
//!
//! Member calls in C (`p->cb(x)`) go to the struct field with the Dynamic role. Types,
//! reads and writes use tiers 3 and 5 on their own kinds.
//! Definitions are preferred to declarations; an edge to a declaration-only entity carries
//! the Declaration role. Calls of libc names the repository does not define go to an
//! `External` stub `<std>:name` (SYSTEM flag, `stdlib_method`); other unresolved calls to
//! `<external>:name` (`unresolved`). Unfound or system includes become `File`-kind stubs
//! `<path>` with the SYSTEM flag.
//!
//! Determinism: files are sorted by path, everything else is visited in file order and
//! candidate lists are sorted, so equal input gives an identical graph.
//!
//! Parallelism: once the name tables and the structural edges exist (one thread), the
//! references of the files are resolved on [`ResolveOptions::threads`] threads that share
//! those tables read-only; their per-file output is merged in file order (see `emit`), so
//! the graph is the same for every thread count.
//!
//! Memory: edges are made before the nodes they join. Node indices are known in advance
//! (each file followed by its entities, then the stubs), and the file and entity nodes
//! are added last, from facts freed file by file, so that on a kernel-size tree the nodes
//! never sit beside the whole facts.

mod emit;
mod expand;
mod guards;
mod index;
mod refs;
mod stdlib;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use batho_schema::{NodeFlags, NodeKind, RelType, Roles, Strategy};
use batho_storage::input::{EdgeInput, GraphBuilder, NodeIdx, StrId};

use crate::extract::{FileFacts, IdBuild, NO_ENTITY, Ref, RefSite, entity_bits};
use index::{Closure, Ent, Index, shared_leading_dirs};

/// Knobs of [`resolve`].
#[derive(Clone, Debug)]
pub struct ResolveOptions {
    /// Extra include directories (repo-relative), searched after the including file's
    /// directory and the repository root, before directories named `include`.
    pub include_dirs: Vec<String>,
    /// An ambiguous name with more candidates than this gets no edges (an `External`
    /// stub instead): a call of `init` should not fan out to 300 definitions.
    pub max_ambiguous: usize,
    /// Threads that resolve references (0: one per core). The graph does not depend on it.
    pub threads: usize,
}

impl Default for ResolveOptions {
    fn default() -> Self {
        ResolveOptions {
            include_dirs: Vec::new(),
            max_ambiguous: 16,
            threads: 0,
        }
    }
}

/// Counters of one resolution.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResolveStats {
    /// Files resolved.
    pub files: u64,
    /// Entities (nodes other than files and stubs).
    pub entities: u64,
    /// References examined.
    pub refs: u64,
    /// Parse errors summed over files.
    pub parse_errors: u64,
    /// Call references examined.
    pub calls: u64,
    /// Call references by the strategy that resolved them (index = strategy code).
    pub calls_by_strategy: [u64; 9],
    /// `#include` lines.
    pub includes: u64,
    /// Includes that found no repository file.
    pub includes_external: u64,
    /// External stub nodes created.
    pub stubs: u64,
    /// Edges created.
    pub edges: u64,
}

/// The result of [`resolve`].
pub struct Resolved {
    /// The graph.
    pub graph: GraphBuilder,
    /// Counters.
    pub stats: ResolveStats,
}

/// Resolves the facts of a whole repository into a graph. Files with the same path are
/// kept once (the first).
pub fn resolve(files: Vec<FileFacts>, opts: &ResolveOptions) -> Resolved {
    resolve_inner(files, opts, None)
}

/// Resolves like [`resolve`] over `files` (the files to emit plus the context their
/// references need), but makes edges only for the files whose path is in `emit`: their
/// CONTAINS, INCLUDES, INHERITS and OVERRIDES edges and those of their references. The graph
/// still holds a node for every file and entity of `files` (edges of emitted files point at
/// context entities); a patch keeps the nodes of `emit` and those the edges reach. With the
/// context a patch gathers, the edges equal those a full build makes for the same files.
pub fn resolve_partial(
    files: Vec<FileFacts>,
    emit: &HashSet<String>,
    opts: &ResolveOptions,
) -> Resolved {
    resolve_inner(files, opts, Some(emit))
}

fn resolve_inner(
    mut files: Vec<FileFacts>,
    opts: &ResolveOptions,
    emit: Option<&HashSet<String>>,
) -> Resolved {
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.dedup_by(|a, b| a.path == b.path);
    mark_macro_statics(&mut files);
    let emit: Vec<bool> = files
        .iter()
        .map(|f| emit.is_none_or(|e| e.contains(&f.path)))
        .collect();
    // References are taken out of the facts so that each file's can be freed as soon as
    // they are resolved: on a kernel-size tree they are a third of the facts' memory.
    let refs: Vec<Mutex<Vec<Ref>>> = files
        .iter_mut()
        .map(|f| Mutex::new(std::mem::take(&mut f.refs)))
        .collect();
    let file_node = emit::number_nodes(&files);
    let mut sink = emit::Sink::new(file_node[files.len()]);
    let node_texts = emit::intern_node_texts(&mut files, &refs, &mut sink.g);
    crate::mem::release_freed_memory();
    let ix = Index::new(&files, &opts.include_dirs);
    let mut stats = ResolveStats::default();
    let sh = emit::Shared::new(ix, file_node, emit, opts, &mut sink.g);
    let mut r = Resolver::new(&sh, opts);
    r.structure();
    sink.merge(r.out.take());
    stats.absorb(&r.stats);
    drop(r);
    emit::refs_all(&sh, opts, &refs, &mut sink, &mut stats);
    drop(refs);
    // The nodes are made last, from facts that are freed file by file as they go: on a
    // kernel-size tree the facts and the nodes are each several hundred megabytes, and
    // the tables that borrow the facts are gone by then.
    let kinds = sh.into_kinds();
    crate::mem::release_freed_memory();
    emit::add_nodes(files, &kinds, &node_texts, &mut sink.g, &mut stats);
    drop((kinds, node_texts));
    stats.stubs = sink.stubs();
    let graph = sink.finish();
    stats.edges = graph.edges.len() as u64;
    Resolved { graph, stats }
}

/// The repository file each `#include` of `files[i]` resolves to (an index into `files`),
/// or `None` for an external include, exactly as [`resolve`] links them. Include
/// resolution looks at every path, so `files` must list every file of the repository
/// (files whose includes are not needed may be [`FileFacts::path_only`]).
pub fn include_targets(files: &[FileFacts], include_dirs: &[String]) -> Vec<Vec<Option<u32>>> {
    Index::new(files, include_dirs).include_targets
}

impl ResolveStats {
    /// Adds the counters of one part of the work (a thread's share of the files).
    fn absorb(&mut self, o: &ResolveStats) {
        self.files += o.files;
        self.entities += o.entities;
        self.refs += o.refs;
        self.parse_errors += o.parse_errors;
        self.calls += o.calls;
        for (a, b) in self.calls_by_strategy.iter_mut().zip(o.calls_by_strategy) {
            *a += b;
        }
        self.includes += o.includes;
        self.includes_external += o.includes_external;
    }
}

/// `MEM_STATIC U32 MEM_read32(…)` with `#define MEM_STATIC static inline`: the function
/// is static although no `static` keyword is in sight.
fn mark_macro_statics(files: &mut [FileFacts]) {
    let mut names: HashSet<String> = HashSet::new();
    for f in files.iter() {
        for e in &f.entities {
            if e.kind == NodeKind::Macro && e.bits & entity_bits::STATIC_MACRO != 0 {
                names.insert(f.str(e.name).to_owned());
            }
        }
    }
    if names.is_empty() {
        return;
    }
    for f in files.iter_mut() {
        let mut hits = Vec::new();
        for (i, e) in f.entities.iter().enumerate() {
            if matches!(e.kind, NodeKind::Function | NodeKind::Variable)
                && !e.flags.contains(NodeFlags::STATIC)
            {
                let sig = f.str(e.signature);
                let first = sig
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("");
                if names.contains(first) {
                    hits.push(i);
                }
            }
        }
        for i in hits {
            let e = &mut f.entities[i];
            e.flags = NodeFlags((e.flags.0 | NodeFlags::STATIC.0) & !NodeFlags::EXPORTED.0);
        }
    }
}

/// One resolver: read-only views of the shared tables plus its own scratch state and
/// output buffer. Threads each own one, so they never write to anything shared.
struct Resolver<'s, 'f> {
    ix: &'s Index<'f>,
    opts: &'s ResolveOptions,
    /// Node of file i; entity j of file i is `file_node[i] + 1 + j`.
    file_node: &'s [u32],
    file_sid: &'s [StrId],
    /// Whether file i's edges are made (all files in a full resolution).
    emit: &'s [bool],
    /// Effective node kind of each entity (out-of-line "methods" without a class are functions).
    kinds: &'s [Vec<NodeKind>],
    /// Class qualified name → base class qualified names (resolved).
    bases_of: &'s HashMap<&'f str, Vec<&'f str>>,
    derived_of: &'s HashMap<&'f str, Vec<&'f str>>,
    closure: Closure,
    /// A second closure, of a candidate definition's file (see
    /// [`Resolver::narrow_to_shared_declaration`]), and its answers by (file, header).
    candidate_closure: Closure,
    candidate_includes: HashMap<(u32, u32), bool, IdBuild>,
    out: emit::Out,
    /// Each (src, dst, rel) edge of the current file made so far (CONTAINS aside).
    seen: HashMap<(u32, u32, u8), SeenEdge, IdBuild>,
    /// The reference being resolved ([`NO_REFERENCE`] outside the references pass) and
    /// its further use sites: an edge it makes, or meets again, gets their lines.
    reference: u32,
    reference_sites: &'f [RefSite],
    /// The reference being resolved is written in inactive code: its edges get the
    /// Inactive role.
    inactive: bool,
    stats: ResolveStats,
    cands: Vec<Ent>,
    /// `find_classes` answers by written type name: receivers repeat the same few types.
    class_cache: HashMap<String, Vec<&'f str>>,
    /// Calls made through macros (see `expand`).
    expansions: expand::Expansions,
}

/// "No reference": an edge made by the structure pass (containment, includes, bases).
const NO_REFERENCE: u32 = u32::MAX;

/// An edge of the current file's batch: its index in the batch and the last reference
/// whose sites it holds (a reference that meets its own edge again adds nothing).
#[derive(Clone, Copy)]
struct SeenEdge {
    at: u32,
    reference: u32,
}

pub(crate) fn is_header(path: &str) -> bool {
    let ext = path.rsplit('.').next().unwrap_or("");
    matches!(
        ext,
        "h" | "hh" | "hpp" | "hxx" | "inc" | "inl" | "tcc" | "ipp"
    ) || !path.contains('.')
}

fn is_class_kind(k: NodeKind) -> bool {
    matches!(k, NodeKind::Class | NodeKind::Struct | NodeKind::Union)
}

fn qual_matches(qual: &str, written: &str) -> bool {
    qual == written
        || (qual.len() > written.len() + 2
            && qual.ends_with(written)
            && qual[..qual.len() - written.len()].ends_with("::"))
}

pub(crate) fn scope_of(qual: &str) -> &str {
    qual.rfind("::").map_or("", |i| &qual[..i])
}

/// Qualified names of the classes/structs/unions a written type name may denote (through
/// one typedef), sorted and deduplicated.
pub(super) fn find_classes_in<'f>(ix: &Index<'f>, written: &str) -> Vec<&'f str> {
    let mut out = Vec::new();
    let last = written.rsplit("::").next().unwrap_or(written);
    for e in ix.named(last) {
        let k = ix.entity(e).kind;
        if is_class_kind(k) && qual_matches(ix.qual(e), written) {
            out.push(ix.qual(e));
        }
    }
    if out.is_empty() {
        for e in ix.named(last) {
            let en = ix.entity(e);
            if en.kind == NodeKind::Typedef && !en.type_name.is_empty() {
                let target = ix.sym(e.0, en.type_name);
                if target != last {
                    for e2 in ix.named(target.rsplit("::").next().unwrap_or(target)) {
                        if is_class_kind(ix.entity(e2).kind) {
                            out.push(ix.qual(e2));
                        }
                    }
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

impl<'s, 'f> Resolver<'s, 'f> {
    fn new(sh: &'s emit::Shared<'f>, opts: &'s ResolveOptions) -> Resolver<'s, 'f> {
        Resolver {
            ix: &sh.ix,
            opts,
            file_node: &sh.file_node,
            file_sid: &sh.file_sid,
            emit: &sh.emit,
            kinds: &sh.kinds,
            bases_of: &sh.bases_of,
            derived_of: &sh.derived_of,
            closure: Closure::new(sh.ix.files.len()),
            candidate_closure: Closure::new(sh.ix.files.len()),
            candidate_includes: HashMap::default(),
            out: emit::Out::default(),
            seen: HashMap::default(),
            reference: NO_REFERENCE,
            reference_sites: &[],
            inactive: false,
            stats: ResolveStats::default(),
            cands: Vec::new(),
            class_cache: HashMap::new(),
            expansions: expand::Expansions::default(),
        }
    }

    fn files(&self) -> &'f [FileFacts] {
        self.ix.files
    }

    fn node_of(&self, e: Ent) -> NodeIdx {
        NodeIdx(self.file_node[e.0 as usize] + 1 + e.1)
    }

    fn kind(&self, e: Ent) -> NodeKind {
        self.kinds[e.0 as usize][e.1 as usize]
    }

    fn stub(&mut self, id: &str, name: &str, kind: NodeKind, flags: NodeFlags) -> NodeIdx {
        self.out.stub(id, name, kind, flags)
    }

    #[allow(clippy::too_many_arguments)]
    fn edge(
        &mut self,
        src: NodeIdx,
        dst: NodeIdx,
        rel: RelType,
        roles: Roles,
        strategy: Strategy,
        file: u32,
        line: u32,
    ) {
        if self.expansions.capturing() {
            // A macro body resolved for an expansion makes no edge of its own.
            return;
        }
        let roles = if self.inactive {
            roles | Roles::INACTIVE
        } else {
            roles
        };
        let at = self.out.edges.len() as u32;
        // CONTAINS edges are unique by construction; the set would only grow.
        if rel != RelType::Contains {
            match self.seen.entry((src.0, dst.0, rel.code())) {
                std::collections::hash_map::Entry::Occupied(mut seen) => {
                    // One edge per (src, dst, rel): a later reference adds its sites.
                    let seen = seen.get_mut();
                    // An edge is inactive only while every use it stands for is.
                    if !roles.contains(Roles::INACTIVE)
                        && let Some(e) = self.out.edges.get_mut(seen.at as usize)
                    {
                        e.roles.0 &= !Roles::INACTIVE.0;
                    }
                    if self.reference != NO_REFERENCE && seen.reference != self.reference {
                        seen.reference = self.reference;
                        self.out
                            .add_sites(seen.at, Some(line), self.reference_sites);
                    }
                    return;
                }
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert(SeenEdge {
                        at,
                        reference: self.reference,
                    });
                }
            }
        }
        self.out.edges.push(EdgeInput {
            src,
            dst,
            rel,
            roles,
            confidence: strategy.confidence(),
            strategy,
            file: self.file_sid[file as usize],
            line,
            sites: batho_storage::SitesId::ONE,
        });
        if self.reference != NO_REFERENCE {
            self.out.add_sites(at, None, self.reference_sites);
        }
    }

    // ----- classes -----------------------------------------------------------------------

    /// Qualified names of the classes/structs/unions a written type name may denote
    /// (through one typedef), sorted and deduplicated.
    fn find_classes(&mut self, written: &str) -> Vec<&'f str> {
        if written.is_empty() {
            return Vec::new();
        }
        if let Some(v) = self.class_cache.get(written) {
            return v.clone();
        }
        let out = self.find_classes_uncached(written);
        self.class_cache.insert(written.to_owned(), out.clone());
        out
    }

    fn find_classes_uncached(&self, written: &str) -> Vec<&'f str> {
        find_classes_in(self.ix, written)
    }

    /// The class and its transitive bases, nearest first.
    fn class_chain(&self, class: &'f str) -> Vec<&'f str> {
        let mut out = vec![class];
        let mut i = 0;
        while i < out.len() && out.len() < 32 {
            if let Some(bs) = self.bases_of.get(out[i]) {
                for b in bs {
                    if !out.contains(b) {
                        out.push(b);
                    }
                }
            }
            i += 1;
        }
        out
    }

    fn derived_chain(&self, class: &'f str) -> Vec<&'f str> {
        let mut out = vec![class];
        let mut i = 0;
        while i < out.len() && out.len() < 256 {
            if let Some(ds) = self.derived_of.get(out[i]) {
                for d in ds {
                    if !out.contains(d) {
                        out.push(d);
                    }
                }
            }
            i += 1;
        }
        out
    }

    /// CONTAINS, INCLUDES, INHERITS, OVERRIDES.
    fn structure(&mut self) {
        let files = self.files();
        for (fi, f) in files.iter().enumerate() {
            if !self.emit[fi] {
                continue;
            }
            let fi = fi as u32;
            let file_node = NodeIdx(self.file_node[fi as usize]);
            for (ei, e) in f.entities.iter().enumerate() {
                let me = self.node_of((fi, ei as u32));
                let mut roles = if e.flags.contains(NodeFlags::DECLARATION_ONLY) {
                    Roles::DECLARATION
                } else {
                    Roles::DEFINITION
                };
                if e.bits & entity_bits::GENERATED != 0 {
                    roles |= Roles::GENERATED;
                }
                let parent = if e.parent == NO_ENTITY {
                    file_node
                } else {
                    self.node_of((fi, e.parent))
                };
                self.edge(
                    parent,
                    me,
                    RelType::Contains,
                    roles,
                    Strategy::Direct,
                    fi,
                    e.start_line,
                );
                if self.kinds[fi as usize][ei] == NodeKind::Method
                    && e.bits & entity_bits::OUT_OF_LINE != 0
                {
                    let scope = scope_of(f.str(e.qual));
                    let classes = self.find_classes(scope);
                    for c in classes.iter().take(self.opts.max_ambiguous) {
                        let strategy = if classes.len() == 1 {
                            Strategy::ScopeQualified
                        } else {
                            Strategy::Ambiguous
                        };
                        if let Some(ce) = self.class_entity(c) {
                            let cn = self.node_of(ce);
                            self.edge(cn, me, RelType::Contains, roles, strategy, fi, e.start_line);
                        }
                    }
                }
            }
            for (ii, inc) in f.includes.iter().enumerate() {
                self.stats.includes += 1;
                match self.ix.include_targets[fi as usize][ii] {
                    Some(t) => {
                        let tn = NodeIdx(self.file_node[t as usize]);
                        self.edge(
                            file_node,
                            tn,
                            RelType::Includes,
                            Roles::IMPORT,
                            Strategy::Direct,
                            fi,
                            inc.line,
                        );
                    }
                    None => {
                        self.stats.includes_external += 1;
                        let p = f.str(inc.path);
                        let id = format!("<{p}>");
                        let s = self.stub(&id, p, NodeKind::File, NodeFlags::SYSTEM);
                        let strategy = if inc.system {
                            Strategy::StdlibMethod
                        } else {
                            Strategy::Unresolved
                        };
                        self.edge(
                            file_node,
                            s,
                            RelType::Includes,
                            Roles::IMPORT,
                            strategy,
                            fi,
                            inc.line,
                        );
                    }
                }
            }
        }
        // Inheritance.
        for (fi, f) in files.iter().enumerate() {
            if !self.emit[fi] {
                continue;
            }
            let fi = fi as u32;
            for b in &f.bases {
                let me = self.node_of((fi, b.entity));
                let my_qual = f.str(f.entities[b.entity as usize].qual);
                let written = f.str(b.name);
                let classes = self.find_classes(written);
                if classes.is_empty() {
                    let id = format!("<external>:{written}");
                    let s = self.stub(&id, written, NodeKind::External, NodeFlags(0));
                    self.edge(
                        me,
                        s,
                        RelType::Inherits,
                        Roles::NONE,
                        Strategy::Unresolved,
                        fi,
                        b.line,
                    );
                    continue;
                }
                let strategy = if classes.len() == 1 {
                    Strategy::ExactMatch
                } else {
                    Strategy::Ambiguous
                };
                for c in classes.iter().take(self.opts.max_ambiguous) {
                    if *c == my_qual {
                        continue;
                    }
                    if let Some(ce) = self.class_entity(c) {
                        let cn = self.node_of(ce);
                        self.edge(me, cn, RelType::Inherits, Roles::NONE, strategy, fi, b.line);
                    }
                }
            }
        }
        // Overrides: a method of a derived class named like a virtual method of a base.
        let mut classes: Vec<&'f str> = self.bases_of.keys().copied().collect();
        classes.sort_unstable();
        for class in classes {
            let chain = self.class_chain(class);
            let mine: Vec<Ent> = self
                .ix
                .members_of(class)
                .filter(|&e| self.emit[e.0 as usize] && self.kind(e) == NodeKind::Method)
                .collect();
            for &m in &mine {
                let name = self.ix.name(m);
                for base in chain.iter().skip(1) {
                    let targets: Vec<Ent> = self
                        .ix
                        .members_named(base, name)
                        .filter(|&e| {
                            self.kind(e) == NodeKind::Method
                                && self.ix.entity(e).flags.contains(NodeFlags::VIRTUAL)
                        })
                        .collect();
                    for t in targets {
                        let (mn, tn) = (self.node_of(m), self.node_of(t));
                        let line = self.ix.entity(m).start_line;
                        self.edge(
                            mn,
                            tn,
                            RelType::Overrides,
                            Roles::NONE,
                            Strategy::ExactMatch,
                            m.0,
                            line,
                        );
                    }
                }
            }
        }
        self.seen.clear();
    }

    /// The defining entity of a class qualified name (first definition in file order).
    fn class_entity(&self, qual: &str) -> Option<Ent> {
        let last = qual.rsplit("::").next().unwrap_or(qual);
        self.ix
            .named(last)
            .find(|&e| is_class_kind(self.ix.entity(e).kind) && self.ix.qual(e) == qual)
    }

    // ----- lookup ------------------------------------------------------------------------

    /// Narrows `self.cands` to what `file` can see; returns the strategy and whether a
    /// heuristic tie-break was used. Empty `cands` on return means nothing visible.
    fn visible(&mut self, file: u32, arity: Option<u8>) -> Option<(Strategy, bool)> {
        self.visible_in(file, arity, false)
    }

    /// [`Self::visible`], stopping after the translation unit when `tu_only`.
    fn visible_in(
        &mut self,
        file: u32,
        arity: Option<u8>,
        tu_only: bool,
    ) -> Option<(Strategy, bool)> {
        if self.cands.is_empty() {
            return None;
        }
        let files = self.files();
        // Narrows in place; leaves the candidates untouched when none would remain.
        let pick = |r: &mut Self, keep: &dyn Fn(&Resolver, Ent) -> bool| -> bool {
            if !r.cands.iter().any(|&e| keep(r, e)) {
                return false;
            }
            let mut v = std::mem::take(&mut r.cands);
            v.retain(|&e| keep(r, e));
            r.cands = v;
            true
        };
        let narrow_arity = |r: &mut Self| {
            if r.cands.len() > 1
                && let Some(a) = arity
            {
                let v: Vec<Ent> = r
                    .cands
                    .iter()
                    .copied()
                    .filter(|&e| r.ix.arity_ok(e, a))
                    .collect();
                if !v.is_empty() {
                    r.cands = v;
                }
            }
        };
        if self.cands.iter().any(|&e| e.0 == file) {
            self.drop_guarded_copies(file);
        }
        if pick(self, &|_, e| e.0 == file) {
            narrow_arity(self);
            return Some((
                if self.cands.len() == 1 {
                    Strategy::ExactMatch
                } else {
                    Strategy::Ambiguous
                },
                false,
            ));
        }
        self.closure.set(self.ix, file);
        if pick(self, &|r, e| r.closure.contains(e.0)) {
            narrow_arity(self);
            return Some((
                if self.cands.len() == 1 {
                    Strategy::ImportMap
                } else {
                    Strategy::Ambiguous
                },
                false,
            ));
        }
        if tu_only {
            self.cands.clear();
            return None;
        }
        let internal = |r: &Resolver, e: Ent| {
            r.ix.is_static(e)
                || (r.ix.entity(e).kind == NodeKind::Macro && !is_header(&files[e.0 as usize].path))
        };
        // A translation unit with an include the resolver could not choose (`<asm/io.h>`
        // from `drivers/`: one per architecture) may see any header's `static inline`
        // through it, so those are alternatives beside the non-static definitions: the
        // kernel's `readl` is a static inline in most `arch/*/include/asm/io.h` and a
        // function only in `arch/alpha/kernel/io.c`, which would otherwise win every call.
        let unchosen = self.closure.has_unchosen_include();
        let header_static = |r: &Resolver, e: Ent| {
            r.ix.is_static(e)
                && is_header(&files[e.0 as usize].path)
                && r.ix.entity(e).kind != NodeKind::Macro
        };
        if pick(self, &|r, e| {
            !internal(r, e) || (unchosen && header_static(r, e))
        }) {
            if self.cands.len() == 1 {
                return Some((Strategy::ExactMatch, false));
            }
            narrow_arity(self);
            if self.cands.len() == 1 {
                return Some((Strategy::ExactMatch, true));
            }
            if self.narrow_to_shared_declaration() && self.cands.len() == 1 {
                return Some((Strategy::ImportMap, true));
            }
            // Nearest directory wins.
            let here = files[file as usize].path.as_str();
            let common = |p: &str| shared_leading_dirs(here, p);
            let best = self
                .cands
                .iter()
                .map(|e| common(&files[e.0 as usize].path))
                .max()
                .unwrap_or(0);
            let near: Vec<Ent> = self
                .cands
                .iter()
                .copied()
                .filter(|e| common(&files[e.0 as usize].path) == best)
                .collect();
            if near.len() == 1 && best > 0 {
                self.cands = near;
                return Some((Strategy::ParentChain, true));
            }
            if self.cands.len() > self.opts.max_ambiguous {
                self.cands.clear();
                return None;
            }
            return Some((Strategy::Ambiguous, false));
        }
        // Only statics of other files remain: a header's `static inline` reached through an
        // include we could not resolve is still the likely target.

        if pick(self, &|r, e| {
            is_header(&files[e.0 as usize].path) && r.ix.entity(e).kind != NodeKind::Macro
        }) && self.cands.len() == 1
        {
            return Some((Strategy::ImportMap, true));
        }
        self.cands.clear();
        None
    }

    /// Of several definitions outside the caller's translation unit, keeps those whose
    /// file includes a header that declares the name and that the caller includes too:
    /// the caller was compiled against that prototype, and so was the definition it links
    /// to. The kernel defines `mutex_unlock` in `kernel/locking/mutex.c` and again in
    /// `tools/perf/util/mutex.c`; a driver includes `include/linux/mutex.h`, which only the
    /// first includes (`tools/perf` has its own `mutex.h`). Without this every kernel
    /// caller of `mutex_unlock` also called the `tools/perf` copy, and such copies led the
    /// PageRank of files. Needs the caller's closure in
    /// `self.closure`; returns whether it narrowed (it never empties the candidates).
    fn narrow_to_shared_declaration(&mut self) -> bool {
        let Some(&first) = self.cands.first() else {
            return false;
        };
        let (name, kind) = (self.ix.name(first), self.kind(first));
        let mut headers: Vec<u32> = self
            .ix
            .named(name)
            .filter(|&e| !self.ix.is_def(e) && self.kind(e) == kind && self.closure.contains(e.0))
            .map(|e| e.0)
            .collect();
        headers.sort_unstable();
        headers.dedup();
        if headers.is_empty() {
            return false;
        }
        let candidates = std::mem::take(&mut self.cands);
        let mut kept = Vec::with_capacity(candidates.len());
        for &candidate in &candidates {
            if headers
                .iter()
                .any(|&header| self.file_includes(candidate.0, header))
            {
                kept.push(candidate);
            }
        }
        let narrowed = !kept.is_empty() && kept.len() < candidates.len();
        self.cands = if narrowed { kept } else { candidates };
        narrowed
    }

    /// Whether `header` is in `file`'s translation unit, memoized: the same few
    /// candidate files and headers come back for every call of a name.
    fn file_includes(&mut self, file: u32, header: u32) -> bool {
        if let Some(&answer) = self.candidate_includes.get(&(file, header)) {
            return answer;
        }
        self.candidate_closure.set(self.ix, file);
        let answer = self.candidate_closure.contains(header);
        self.candidate_includes.insert((file, header), answer);
        answer
    }

    fn collect(&mut self, name: &str, qual: &str, pred: impl Fn(&Resolver, Ent) -> bool) {
        let mut v = std::mem::take(&mut self.cands);
        v.clear();
        v.extend(self.ix.named(name).filter(|&e| {
            pred(self, e) && (qual.is_empty() || qual_matches(scope_of(self.ix.qual(e)), qual))
        }));
        self.cands = v;
    }

    fn emit_cands(
        &mut self,
        src: NodeIdx,
        rel: RelType,
        mut roles: Roles,
        strat: (Strategy, bool),
        f: u32,
        line: u32,
    ) {
        if strat.1 {
            roles |= Roles::HEURISTIC;
        }
        let cands = std::mem::take(&mut self.cands);
        for &e in &cands {
            let mut r = roles;
            if !self.ix.is_def(e) {
                r |= Roles::DECLARATION;
            }
            if !self.expansions.capture(e, rel, r, strat.0) {
                let dst = self.node_of(e);
                self.edge(src, dst, rel, r, strat.0, f, line);
            }
        }
        self.cands = cands;
    }

    // ----- references --------------------------------------------------------------------
}
