//! How resolution fills the graph: the tables every resolver thread reads ([`Shared`]),
//! the node pass, the per-thread output buffers ([`Out`]) and their ordered merge into
//! the [`GraphBuilder`] ([`Sink`]), and the parallel reference pass ([`refs_all`]).
//!
//! Determinism: a thread never creates a node or interns a string. It records the edges of
//! one file in a buffer whose external stubs are file-local placeholders; the buffers are
//! merged strictly in file order, and the merge creates each stub node (and interns its
//! strings) at its first use in that order, which is exactly the order a single thread
//! would have used. The graph is therefore byte-identical whatever the thread count.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use batho_schema::{Language, NodeFlags, NodeKind};
use batho_storage::input::{
    EdgeInput, GraphBuilder, IdText, NodeIdx, NodeInput, StrId, content_hash_prefix,
};

use super::index::Index;
use super::{ResolveOptions, ResolveStats, Resolver, find_classes_in, scope_of};
use crate::extract::{FileFacts, Ref, RefSite, entity_bits};

/// Takes (and so frees after use) the references of file `f`.
fn take_refs(refs: &[Mutex<Vec<Ref>>], f: usize) -> Vec<Ref> {
    refs.get(f).map_or_else(Vec::new, |m| {
        std::mem::take(&mut *m.lock().unwrap_or_else(|p| p.into_inner()))
    })
}

/// Files whose strings are interned together ([`GraphBuilder::intern_all`]): enough
/// strings to share out between cores, few enough facts held at once.
const INTERN_CHUNK: usize = 2048;

/// The interned texts of the entity nodes, by file: every entity's signature, and the
/// comment above each entity that has one, as (entity index, string) ascending (few
/// entities have one, so a dense list would mostly hold empty strings).
pub(super) struct NodeTexts {
    pub(super) signatures: Vec<Vec<StrId>>,
    pub(super) docs: Vec<Vec<(u32, StrId)>>,
}

/// Interns every entity's signature and comment into `g` ([`NodeTexts`]) and then frees
/// that text of the facts. Signatures and comments are only ever node text, and
/// signatures are most of the facts' text on a kernel-size tree (one per macro): freeing
/// them before resolution makes room for the edges. `refs` are the references taken out
/// of `files`, whose strings stay.
pub(super) fn intern_node_texts(
    files: &mut [FileFacts],
    refs: &[Mutex<Vec<Ref>>],
    g: &mut GraphBuilder,
) -> NodeTexts {
    let mut out = NodeTexts {
        signatures: Vec::with_capacity(files.len()),
        docs: Vec::with_capacity(files.len()),
    };
    // Interning is one thread's work; the freeing of each chunk's text is done beside it
    // on a second thread, one chunk behind.
    std::thread::scope(|s| {
        let mut freeing: Option<std::thread::ScopedJoinHandle<'_, ()>> = None;
        for (chunk, refs) in files
            .chunks_mut(INTERN_CHUNK)
            .zip(refs.chunks(INTERN_CHUNK))
        {
            let texts: Vec<&str> = chunk
                .iter()
                .flat_map(|f| {
                    let signatures = f.entities.iter().map(|e| e.signature);
                    let docs = f.entities.iter().map(|e| e.doc);
                    signatures
                        .chain(docs)
                        .filter(|sym| !sym.is_empty())
                        .map(|sym| f.str(sym))
                })
                .collect();
            let mut ids = g.intern_all(&texts).into_iter();
            drop(texts);
            for f in chunk.iter() {
                let mut next = |sym: crate::extract::Sym| match sym.is_empty() {
                    true => StrId(0),
                    false => ids.next().unwrap_or(StrId(0)),
                };
                let signatures = f.entities.iter().map(|e| next(e.signature)).collect();
                let docs = (0u32..)
                    .zip(&f.entities)
                    .filter(|(_, e)| !e.doc.is_empty())
                    .map(|(at, e)| (at, next(e.doc)))
                    .collect();
                out.signatures.push(signatures);
                out.docs.push(docs);
            }
            if let Some(previous) = freeing.take() {
                previous
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p));
            }
            freeing = Some(s.spawn(move || keep_only_resolution_strings(chunk, refs)));
        }
        if let Some(last) = freeing {
            last.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        }
    });
    out
}

/// Frees every string of `files` but those resolution reads: the names, qualifiers and
/// type names of entities, those of the references taken out into `refs`, base names and
/// include paths.
fn keep_only_resolution_strings(files: &mut [FileFacts], refs: &[Mutex<Vec<Ref>>]) {
    let mut keep: Vec<bool> = Vec::new();
    for (f, refs) in files.iter_mut().zip(refs) {
        keep.clear();
        keep.resize(f.ends.len(), false);
        let mut hold = |s: crate::extract::Sym| {
            if let Some(k) = keep.get_mut(s.0 as usize) {
                *k = true;
            }
        };
        for e in &f.entities {
            [e.name, e.qual, e.type_name]
                .into_iter()
                .for_each(&mut hold);
        }
        for r in refs.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            [r.name, r.qual, r.recv].into_iter().for_each(&mut hold);
        }
        f.bases.iter().for_each(|b| hold(b.name));
        f.includes.iter().for_each(|i| hold(i.path));
        f.guards.iter().for_each(|g| hold(g.name));
        // A context file of a patch has no references: its macro bodies' names are
        // held by these alone.
        for call in &f.macro_calls {
            [call.name, call.within].into_iter().for_each(&mut hold);
        }
        f.retain_strings(&keep);
    }
}

/// Marks a [`NodeIdx`] in an [`Out`] buffer as a placeholder for the buffer's n-th stub.
/// Real node indices stay below it: a graph of 2^31 nodes would not fit in memory anyway.
const LOCAL_STUB: u32 = 1 << 31;

/// The read-only tables of a resolution, built once before any edge is made.
pub(super) struct Shared<'f> {
    pub(super) ix: Index<'f>,
    /// Node of file i; entity j of file i is `file_node[i] + 1 + j` (see [`number_nodes`]).
    pub(super) file_node: Vec<u32>,
    /// Interned path of file i.
    pub(super) file_sid: Vec<StrId>,
    /// Whether file i's edges are made (see [`super::resolve_partial`]).
    pub(super) emit: Vec<bool>,
    /// Effective node kind of each entity (out-of-line "methods" without a class are functions).
    pub(super) kinds: Vec<Vec<NodeKind>>,
    /// Class qualified name → base class qualified names (resolved), sorted.
    pub(super) bases_of: HashMap<&'f str, Vec<&'f str>>,
    /// Class qualified name → directly derived class qualified names, sorted.
    pub(super) derived_of: HashMap<&'f str, Vec<&'f str>>,
}

impl<'f> Shared<'f> {
    /// Computes the tables. Nodes are numbered as [`add_nodes`] will add them (in file
    /// order, each file followed by its entities) but not made yet: they are added once
    /// the references are resolved and freed. Only the paths are interned in `g` now, for
    /// the edges' use-site files.
    pub(super) fn new(
        ix: Index<'f>,
        file_node: Vec<u32>,
        emit: Vec<bool>,
        opts: &ResolveOptions,
        g: &mut GraphBuilder,
    ) -> Shared<'f> {
        let files = ix.files;
        let mut cache: HashMap<&'f str, Vec<&'f str>> = HashMap::new();
        let mut classes = |written: &'f str| -> Vec<&'f str> {
            if written.is_empty() {
                return Vec::new();
            }
            cache
                .entry(written)
                .or_insert_with(|| find_classes_in(&ix, written))
                .clone()
        };
        // Out-of-line definitions whose scope names no class are namespace functions.
        let mut kinds: Vec<Vec<NodeKind>> = files
            .iter()
            .map(|f| f.entities.iter().map(|e| e.kind).collect())
            .collect();
        for (fi, f) in files.iter().enumerate() {
            for (ei, e) in f.entities.iter().enumerate() {
                if e.kind == NodeKind::Method && e.bits & entity_bits::OUT_OF_LINE != 0 {
                    let scope = scope_of(f.str(e.qual));
                    if classes(scope).is_empty() {
                        kinds[fi][ei] = NodeKind::Function;
                    }
                }
            }
        }
        // Inheritance, as the structure pass links it (self-inheritance left out).
        let mut bases_of: HashMap<&'f str, Vec<&'f str>> = HashMap::new();
        let mut derived_of: HashMap<&'f str, Vec<&'f str>> = HashMap::new();
        for f in files {
            for b in &f.bases {
                let my_qual = f.str(f.entities[b.entity as usize].qual);
                for c in classes(f.str(b.name)).into_iter().take(opts.max_ambiguous) {
                    if c != my_qual {
                        bases_of.entry(my_qual).or_default().push(c);
                        derived_of.entry(c).or_default().push(my_qual);
                    }
                }
            }
        }
        for v in bases_of.values_mut().chain(derived_of.values_mut()) {
            v.sort_unstable();
            v.dedup();
        }
        let file_sid = files.iter().map(|f| g.intern(&f.path)).collect();
        Shared {
            ix,
            file_node,
            file_sid,
            emit,
            kinds,
            bases_of,
            derived_of,
        }
    }

    /// Ends the resolution's use of the tables, which borrow the facts, and keeps what
    /// [`add_nodes`] needs: each entity's effective kind.
    pub(super) fn into_kinds(self) -> Vec<Vec<NodeKind>> {
        self.kinds
    }
}

/// Where [`add_nodes`] will put each file's node (each file followed by its entities),
/// and, last, the number of file and entity nodes: the index of the first stub.
pub(super) fn number_nodes(files: &[FileFacts]) -> Vec<u32> {
    let mut at = Vec::with_capacity(files.len() + 1);
    let mut next = 0u32;
    at.push(next);
    for f in files {
        next += 1 + f.entities.len() as u32;
        at.push(next);
    }
    at
}

/// Adds a node per file and per entity to `g`, in file order (each file followed by its
/// entities, as [`Shared::new`] numbered them), consuming the facts: each chunk of files
/// is freed as soon as its nodes exist, so that the nodes replace the facts in memory
/// instead of adding to them. A chunk's strings are interned together
/// ([`GraphBuilder::intern_all`]: the names already known are found on every core), in
/// the order interning them one by one would take.
pub(super) fn add_nodes(
    files: Vec<FileFacts>,
    kinds: &[Vec<NodeKind>],
    node_texts: &NodeTexts,
    g: &mut GraphBuilder,
    stats: &mut ResolveStats,
) {
    let (mut order, mut suffix) = (Vec::new(), Vec::new());
    let mut files = files.into_iter();
    let mut first = 0;
    loop {
        let chunk: Vec<FileFacts> = files.by_ref().take(INTERN_CHUNK).collect();
        if chunk.is_empty() {
            break;
        }
        // Per entity of the chunk: its rank among the file's entities of the same
        // qualified name; beyond the first, the id is a text of its own (`#2`).
        let mut ranks: Vec<u32> = Vec::new();
        let mut own_ids: Vec<String> = Vec::new();
        for f in &chunk {
            overload_suffixes(f, &mut order, &mut suffix);
            for (e, &n) in f.entities.iter().zip(&suffix) {
                if n > 1 {
                    own_ids.push(format!("{}:{}#{}", f.path, f.str(e.qual), n));
                }
            }
            ranks.extend_from_slice(&suffix);
        }
        let mut texts: Vec<&str> = Vec::new();
        let mut own = own_ids.iter();
        let mut rank = ranks.iter();
        for f in &chunk {
            texts.push(&f.path);
            texts.push(f.path.rsplit('/').next().unwrap_or(&f.path));
            for e in &f.entities {
                if rank.next().is_some_and(|&n| n > 1)
                    && let Some(id) = own.next()
                {
                    texts.push(id);
                }
                texts.push(f.str(e.name));
                // Interning hashes the text: skip what is known to repeat.
                if e.qual != e.name {
                    texts.push(f.str(e.qual));
                }
            }
        }
        let ids = g.intern_all(&texts);
        drop(texts);
        let mut ids = ids.into_iter();
        let mut next = || ids.next().unwrap_or(StrId(0));
        let mut rank = ranks.iter();
        for (k, f) in chunk.into_iter().enumerate() {
            let fi = first + k;
            let path = next();
            let name = next();
            g.add_node(NodeInput {
                id: IdText::Text(path),
                name,
                qualified_name: path,
                kind: NodeKind::File,
                file: path,
                language: f.language,
                start_line: 1,
                end_line: f.lines,
                start_byte: 0,
                end_byte: u32::try_from(f.bytes).unwrap_or(u32::MAX),
                signature: StrId(0),
                doc: StrId(0),
                content_hash: content_hash_prefix(&f.content_hash),
                flags: if f.parse_errors > 0 {
                    NodeFlags::SYNTAX_ERRORS
                } else {
                    NodeFlags(0)
                },
                community: 0,
                pagerank: 0,
            });
            stats.files += 1;
            stats.parse_errors += u64::from(f.parse_errors);
            let mut docs = node_texts.docs[fi].iter().peekable();
            for (ei, e) in f.entities.iter().enumerate() {
                let doc = docs
                    .next_if(|&&(at, _)| at as usize == ei)
                    .map_or(StrId(0), |&(_, doc)| doc);
                // The usual id, `path:qualified_name`, is composed on read and never
                // interned; only a disambiguated overload (`#2`) has text of its own.
                let id = if rank.next().is_some_and(|&n| n > 1) {
                    IdText::Text(next())
                } else {
                    IdText::Composed
                };
                let name = next();
                let qual = if e.qual == e.name { name } else { next() };
                g.add_node(NodeInput {
                    id,
                    name,
                    qualified_name: qual,
                    kind: kinds[fi][ei],
                    file: path,
                    language: f.language,
                    start_line: e.start_line,
                    end_line: e.end_line,
                    start_byte: e.start_byte,
                    end_byte: e.end_byte,
                    signature: node_texts.signatures[fi][ei],
                    doc,
                    content_hash: e.hash,
                    flags: e.flags,
                    community: 0,
                    pagerank: 0,
                });
                stats.entities += 1;
            }
        }
        first += INTERN_CHUNK;
        crate::mem::release_freed_memory();
    }
}

/// Numbers the entities of `f` that share a qualified name: `suffix[i]` is entity `i`'s
/// rank among them (definitions first, then by start), 1 for a name used once. Most
/// names are used once, so only the shared ones are sorted: sorting every entity by its
/// name cost a kernel build two seconds on one thread.
fn overload_suffixes(f: &FileFacts, order: &mut Vec<u32>, suffix: &mut Vec<u32>) {
    suffix.clear();
    suffix.resize(f.entities.len(), 1);
    let mut uses: HashMap<&str, u32, foldhash::fast::FixedState> =
        HashMap::with_capacity_and_hasher(f.entities.len(), Default::default());
    for e in &f.entities {
        *uses.entry(f.str(e.qual)).or_insert(0) += 1;
    }
    order.clear();
    order.extend(
        (0..f.entities.len() as u32).filter(|&i| uses[f.str(f.entities[i as usize].qual)] > 1),
    );
    if order.is_empty() {
        return;
    }
    order.sort_by(|&a, &b| {
        let (ea, eb) = (&f.entities[a as usize], &f.entities[b as usize]);
        f.str(ea.qual)
            .cmp(f.str(eb.qual))
            .then(
                ea.flags
                    .contains(NodeFlags::DECLARATION_ONLY)
                    .cmp(&eb.flags.contains(NodeFlags::DECLARATION_ONLY)),
            )
            .then(ea.start_byte.cmp(&eb.start_byte))
            .then(a.cmp(&b))
    });
    let mut n = 0;
    for (k, &i) in order.iter().enumerate() {
        let same = k > 0
            && f.str(f.entities[order[k - 1] as usize].qual) == f.str(f.entities[i as usize].qual);
        n = if same { n + 1 } else { 1 };
        suffix[i as usize] = n;
    }
}

/// An external stub a resolver asked for.
struct StubReq {
    id: String,
    name: String,
    kind: NodeKind,
    flags: NodeFlags,
}

/// One resolver's output since its last [`Out::take`]: edges whose stub ends are
/// placeholders for `stubs`.
#[derive(Default)]
pub(super) struct Out {
    pub(super) edges: Vec<EdgeInput>,
    /// Further use sites of the batch's edges: (index in `edges`, line).
    sites: Vec<(u32, u32)>,
    stubs: Vec<StubReq>,
    stub_ix: HashMap<String, u32>,
}

/// What [`Out::take`] hands to the merge.
pub(super) struct Batch {
    edges: Vec<EdgeInput>,
    sites: Vec<(u32, u32)>,
    stubs: Vec<StubReq>,
}

impl Out {
    /// The placeholder node of the stub with id `id` (one per id within a batch).
    pub(super) fn stub(
        &mut self,
        id: &str,
        name: &str,
        kind: NodeKind,
        flags: NodeFlags,
    ) -> NodeIdx {
        if let Some(&i) = self.stub_ix.get(id) {
            return NodeIdx(LOCAL_STUB | i);
        }
        let i = self.stubs.len() as u32;
        self.stubs.push(StubReq {
            id: id.to_owned(),
            name: name.to_owned(),
            kind,
            flags,
        });
        self.stub_ix.insert(id.to_owned(), i);
        NodeIdx(LOCAL_STUB | i)
    }

    /// Adds use sites to edge `at` of the batch: `first` (a reference's first site, when
    /// the edge was made by another reference) and a reference's further `sites`.
    pub(super) fn add_sites(&mut self, at: u32, first: Option<u32>, sites: &[RefSite]) {
        self.sites.extend(first.map(|line| (at, line)));
        self.sites.extend(sites.iter().map(|s| (at, s.line)));
    }

    /// Ends the current batch.
    pub(super) fn take(&mut self) -> Batch {
        self.stub_ix.clear();
        Batch {
            edges: std::mem::take(&mut self.edges),
            sites: std::mem::take(&mut self.sites),
            stubs: std::mem::take(&mut self.stubs),
        }
    }
}

/// The graph being built and the stubs it already has.
///
/// Edges arrive before the file and entity nodes exist (see [`add_nodes`]); stubs are
/// numbered after those nodes and kept aside until [`Sink::finish`] appends them.
pub(super) struct Sink {
    pub(super) g: GraphBuilder,
    /// Index of the first stub node: the number of file and entity nodes.
    first_stub: u32,
    stub_nodes: Vec<NodeInput>,
    by_id: HashMap<String, NodeIdx>,
}

impl Sink {
    pub(super) fn new(first_stub: u32) -> Sink {
        Sink {
            g: GraphBuilder::new(),
            first_stub,
            stub_nodes: Vec::new(),
            by_id: HashMap::new(),
        }
    }

    /// Stub nodes created.
    pub(super) fn stubs(&self) -> u64 {
        self.stub_nodes.len() as u64
    }

    /// Appends a batch: creates its stubs that do not exist yet (in the batch's order),
    /// then its edges with placeholders replaced.
    pub(super) fn merge(&mut self, batch: Batch) {
        let mut map = Vec::with_capacity(batch.stubs.len());
        for s in batch.stubs {
            let n = match self.by_id.get(&s.id) {
                Some(&n) => n,
                None => {
                    let sid = self.g.intern(&s.id);
                    let name = self.g.intern(&s.name);
                    let n = NodeIdx(self.first_stub + self.stub_nodes.len() as u32);
                    debug_assert!(n.0 < LOCAL_STUB, "node index collides with placeholders");
                    self.stub_nodes.push(NodeInput {
                        id: IdText::Text(sid),
                        name,
                        qualified_name: name,
                        kind: s.kind,
                        file: StrId(0),
                        language: Language::Unknown,
                        start_line: 0,
                        end_line: 0,
                        start_byte: 0,
                        end_byte: 0,
                        signature: StrId(0),
                        doc: StrId(0),
                        content_hash: [0; 8],
                        flags: s.flags,
                        community: 0,
                        pagerank: 0,
                    });
                    self.by_id.insert(s.id, n);
                    n
                }
            };
            map.push(n);
        }
        let real = |n: NodeIdx| {
            if n.0 & LOCAL_STUB != 0 {
                map[(n.0 & !LOCAL_STUB) as usize]
            } else {
                n
            }
        };
        // Not `add_edge`: the ends are not nodes yet.
        self.g.edges.reserve(batch.edges.len());
        let first = self.g.edges.len();
        for mut e in batch.edges {
            e.src = real(e.src);
            e.dst = real(e.dst);
            self.g.edges.push(e);
        }
        fold_sites(&mut self.g, first, batch.sites);
    }

    /// The graph, once [`add_nodes`] has added the file and entity nodes to `g`: the stubs
    /// follow them.
    pub(super) fn finish(mut self) -> GraphBuilder {
        assert_eq!(
            self.g.nodes.len(),
            self.first_stub as usize,
            "the file and entity nodes must be added before the stubs"
        );
        self.g.nodes.append(&mut self.stub_nodes);
        debug_assert!(self.g.edges.iter().all(|e| {
            (e.src.0 as usize) < self.g.nodes.len() && (e.dst.0 as usize) < self.g.nodes.len()
        }));
        self.g
    }
}

/// Records on the edges `g.edges[first..]` (a merged batch) the further use `sites` the
/// batch found, as (index in the batch, line): each such edge gets its site count and
/// distinct lines, and its line becomes the first of them.
fn fold_sites(g: &mut GraphBuilder, first: usize, mut sites: Vec<(u32, u32)>) {
    sites.sort_unstable();
    let mut lines = Vec::new();
    for group in sites.chunk_by(|a, b| a.0 == b.0) {
        let Some(edge) = g.edges.get(first + group[0].0 as usize) else {
            continue;
        };
        lines.clear();
        lines.push(edge.line);
        lines.extend(group.iter().map(|s| s.1));
        lines.sort_unstable();
        lines.dedup();
        let count = u32::try_from(group.len() + 1).unwrap_or(u32::MAX);
        let line = lines[0];
        let id = g.add_sites(count, &lines);
        let edge = &mut g.edges[first + group[0].0 as usize];
        edge.line = line;
        edge.sites = id;
    }
}

/// Resolves the references of every file on `opts.threads` threads, merging the
/// per-file batches in file order.
pub(super) fn refs_all(
    sh: &Shared<'_>,
    opts: &ResolveOptions,
    refs: &[Mutex<Vec<Ref>>],
    sink: &mut Sink,
    stats: &mut ResolveStats,
) {
    let n = sh.ix.files.len();
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |t| t.get()),
        t => t,
    }
    .clamp(1, n.max(1));
    let mut workers: Vec<Resolver<'_, '_>> =
        (0..threads).map(|_| Resolver::new(sh, opts)).collect();
    if threads == 1 {
        let r = &mut workers[0];
        for f in 0..n {
            let refs = take_refs(refs, f);
            if sh.emit[f] {
                r.refs_of(f as u32, &refs);
            }
            sink.merge(r.out.take());
        }
    } else {
        // Files are handed out in chunks so that at most one chunk of edges waits in
        // buffers at a time (a kernel-size tree has millions of edges).
        let chunk = (n / (threads * 8)).clamp(64, 4096);
        let mut start = 0;
        while start < n {
            let end = (start + chunk).min(n);
            let next = AtomicUsize::new(start);
            let mut done: Vec<(usize, Batch)> = std::thread::scope(|s| {
                let handles: Vec<_> = workers
                    .iter_mut()
                    .map(|r| {
                        let next = &next;
                        s.spawn(move || {
                            let mut mine = Vec::new();
                            loop {
                                let f = next.fetch_add(1, Ordering::Relaxed);
                                if f >= end {
                                    break;
                                }
                                let refs = take_refs(refs, f);
                                if sh.emit[f] {
                                    r.refs_of(f as u32, &refs);
                                }
                                mine.push((f, r.out.take()));
                            }
                            mine
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                    .collect()
            });
            done.sort_unstable_by_key(|d| d.0);
            for (_, batch) in done {
                sink.merge(batch);
            }
            // The chunk's references are freed, in the parser threads' arenas: hand them
            // back now, while the edges still grow.
            crate::mem::release_freed_memory();
            start = end;
        }
    }
    for r in &workers {
        stats.absorb(&r.stats);
    }
}
