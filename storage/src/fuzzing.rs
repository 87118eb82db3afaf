//! Entry points for fuzz targets and corruption tests.
//!
//! A file-format fuzz target does: once, [`write_sample_store`] into a template
//! directory; per input, copy the template to a fresh directory, [`apply_mutation`] with
//! the fuzz bytes, then [`open_and_exercise`], which must return (`Ok` or `Err`) and never
//! panic. Everything here is ordinary public API; nothing is compiled only for fuzzing.

use std::borrow::Cow;
use std::fs;
use std::path::{Path, PathBuf};

use batho_schema::{Language, NodeFlags, NodeKind, RelType, Roles, Strategy};

use crate::error::{Result, StorageError};
use crate::format::names;
use crate::fragment::GraphFragment;
use crate::input::{EdgeInput, GraphBuilder, IdText, NodeIdx, NodeInput, StrId};
use crate::manifest::{RunKind, RunRecord, RunStatus};
use crate::reader::{Artifact, EdgeIdx};
use crate::store::Store;
use crate::verify::Issue;

/// A small deterministic pseudo-random generator (xorshift64*), so samples need no crate.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// A deterministic graph with `nodes` nodes spread over `nodes / 20 + 1` files and `edges`
/// random edges, with realistic-looking ids, names and signatures.
pub fn sample_graph(seed: u64, nodes: usize, edges: usize) -> GraphBuilder {
    let mut rng = Rng::new(seed);
    let mut g = GraphBuilder::new();
    let files = nodes / 20 + 1;
    let names: Vec<String> = (0..(nodes / 3 + 1))
        .map(|i| format!("fn_{i:x}_{}", rng.below(1000)))
        .collect();
    for i in 0..nodes {
        let f = i * files / nodes.max(1);
        let file = format!("src/dir{}/file_{f}.c", f % 97);
        let name = &names[rng.below(names.len() as u64) as usize];
        // C entities (most of a kernel) have a qualified name equal to their name.
        let qn = if rng.below(4) == 0 {
            format!("ns{}::{name}", f % 13)
        } else {
            name.clone()
        };
        // Most ids have the usual composed shape; a few are disambiguated overloads.
        let id = if rng.below(10) == 0 {
            format!("{file}:{qn}#{i}")
        } else {
            format!("{file}:{qn}")
        };
        let sig = if rng.below(2) == 0 {
            format!("int {name}(int a, char *b)")
        } else {
            String::new()
        };
        let h = rng.next_u64().to_le_bytes();
        let start_line = rng.below(5000) as u32;
        // Drawn from the line rather than the generator, so the graphs stay as they were.
        let doc = if start_line.is_multiple_of(3) {
            format!("Returns the {name} of a widget")
        } else {
            String::new()
        };
        let start_byte = rng.below(200_000) as u32;
        let node = NodeInput {
            id: IdText::Text(g.intern(&id)),
            name: g.intern(name),
            qualified_name: g.intern(&qn),
            kind: NodeKind::ALL[rng.below(NodeKind::ALL.len() as u64) as usize],
            file: g.intern(&file),
            language: if rng.below(4) == 0 {
                Language::Cpp
            } else {
                Language::C
            },
            start_line,
            end_line: start_line + rng.below(80) as u32,
            start_byte,
            end_byte: start_byte + rng.below(4000) as u32,
            signature: g.intern(&sig),
            doc: g.intern(&doc),
            content_hash: h,
            flags: NodeFlags(rng.below(32) as u8),
            community: 0,
            pagerank: start_line.wrapping_mul(31) % 4096,
        };
        g.add_node(node);
    }
    for _ in 0..edges {
        if nodes == 0 {
            break;
        }
        let src = rng.below(nodes as u64) as u32;
        let dst = rng.below(nodes as u64) as u32;
        let strategy = Strategy::ALL[rng.below(Strategy::ALL.len() as u64) as usize];
        let file = g.nodes[src as usize].file;
        let rel = RelType::ALL[rng.below(RelType::ALL.len() as u64) as usize];
        // Roles follow the relation, as an extractor sets them, plus an occasional extra bit.
        let mut roles = match rel {
            RelType::Contains => Roles::DEFINITION,
            RelType::Includes => Roles::IMPORT,
            RelType::Reads => Roles::READ_ACCESS,
            RelType::Writes => Roles::WRITE_ACCESS,
            _ => Roles::NONE,
        };
        if rng.below(10) == 0 {
            roles |= Roles(1 << rng.below(8));
        }
        let line = g.nodes[src as usize].start_line + rng.below(50) as u32;
        // Some edges fold several use sites, as a caller calling one function twice (chosen
        // from the line, so that the random stream, and the graph, is the same as without).
        let sites = if line % 4 == 1 {
            let more = 1 + line % 3;
            let lines: Vec<u32> = (0..more).map(|k| line + 3 * k).collect();
            g.add_sites(more + line % 2, &lines)
        } else {
            crate::input::SitesId::ONE
        };
        let e = EdgeInput {
            src: NodeIdx(src),
            dst: NodeIdx(dst),
            rel,
            roles,
            confidence: strategy.confidence(),
            strategy,
            file,
            line,
            sites,
        };
        g.add_edge(e);
    }
    g
}

/// A completed build record for tests and samples.
pub fn sample_run(g: &GraphBuilder) -> RunRecord {
    RunRecord {
        uuid: uuid::Uuid::new_v4().to_string(),
        kind: RunKind::Build,
        started_at_ms: 0,
        ended_at_ms: 1,
        status: RunStatus::Completed,
        git_commit: None,
        git_branch: None,
        node_count: g.nodes.len() as u64,
        edge_count: g.edges.len() as u64,
        file_count: 0,
        skipped_files: 0,
        duration_ms: 1,
        generation: 0,
        message: String::new(),
    }
}

/// Creates a store in `dir`, commits a small sample graph to it as the base layer, then
/// a patch fragment over it as a delta layer, so that the current generation exercises
/// every segment kind and the merged reads.
pub fn write_sample_store(dir: &Path) -> Result<()> {
    let store = Store::create_or_open(dir)?;
    let g = sample_graph(7, 60, 200);
    let mut w = store.lock_writer()?;
    w.commit(&g, sample_run(&g))?;
    let base = store.open_current()?;
    let frag = sample_fragment(&base);
    w.set_delta_limit(u32::MAX);
    w.commit_fragment(&base, &frag, sample_run(&frag.graph))?;
    Ok(())
}

/// A fragment replacing the first two files of `a`: the first file's nodes are kept with
/// shifted lines, minus every third one, plus a new node with a new name; the second file
/// is deleted; the new node calls a kept node, a node of another file and a new stub.
pub fn sample_fragment(a: &Artifact) -> GraphFragment {
    let files: Vec<String> = a.files().take(2).map(Cow::into_owned).collect();
    let mut g = GraphBuilder::new();
    let mut kept = Vec::new();
    if let Some(bm) = files.first().and_then(|f| a.nodes_in_file(f)) {
        for (k, b) in bm.iter().enumerate() {
            if k % 3 == 2 {
                continue;
            }
            let mut input = crate::fragment::node_input(&mut g, a.node(NodeIdx(b)));
            input.start_line += 1;
            input.end_line += 1;
            kept.push(g.add_node(input));
        }
    }
    let file = files.first().map_or("new.c", String::as_str).to_owned();
    let fresh = NodeInput {
        id: IdText::Text(g.intern(&format!("{file}:fuzz_new_entity"))),
        name: g.intern("fuzz_new_entity"),
        qualified_name: g.intern("fuzz_new_entity"),
        kind: NodeKind::Function,
        file: g.intern(&file),
        language: Language::C,
        start_line: 9000,
        end_line: 9010,
        start_byte: 1,
        end_byte: 2,
        signature: g.intern("void fuzz_new_entity(void)"),
        doc: g.intern("Made by the fuzzer"),
        content_hash: [3; 8],
        flags: NodeFlags(0),
        community: 0,
        pagerank: 0,
    };
    let src = g.add_node(fresh.clone());
    let stub = NodeInput {
        id: IdText::Text(g.intern("<external>:fuzz_stub")),
        name: g.intern("fuzz_stub"),
        qualified_name: g.intern("fuzz_stub"),
        kind: NodeKind::External,
        file: StrId(0),
        ..fresh
    };
    let stub = g.add_node(stub);
    let other = a
        .live_nodes()
        .find(|n| !n.file().is_empty() && !files.iter().any(|f| *f == n.file()))
        .map(|n| crate::fragment::node_input(&mut g, n));
    let mut dsts = vec![stub];
    dsts.extend(kept.first().copied());
    if let Some(o) = other {
        dsts.push(g.add_node(o));
    }
    for (k, dst) in dsts.into_iter().enumerate() {
        let file = g.nodes[src.0 as usize].file;
        g.add_edge(EdgeInput {
            src,
            dst,
            rel: RelType::ALL[k % RelType::ALL.len()],
            roles: Roles::NONE,
            confidence: 1.0,
            strategy: Strategy::Direct,
            file,
            line: 9001 + k as u32,
            sites: crate::input::SitesId::ONE,
        });
    }
    GraphFragment {
        replaced_files: files.into_iter().collect(),
        graph: g,
    }
}

/// Copies a store directory tree (a fuzz template) to `to`.
pub fn copy_store(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).map_err(|e| StorageError::io(to, e))?;
    for ent in fs::read_dir(from).map_err(|e| StorageError::io(from, e))? {
        let ent = ent.map_err(|e| StorageError::io(from, e))?;
        let (src, dst) = (ent.path(), to.join(ent.file_name()));
        if ent
            .file_type()
            .map_err(|e| StorageError::io(&src, e))?
            .is_dir()
        {
            copy_store(&src, &dst)?;
        } else {
            fs::copy(&src, &dst).map_err(|e| StorageError::io(&src, e))?;
        }
    }
    Ok(())
}

/// The files of a store a mutation can target: `MANIFEST`, then segments by name.
pub fn target_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let seg_dir = dir.join(names::SEGMENTS_DIR);
    let mut segs: Vec<PathBuf> = fs::read_dir(&seg_dir)
        .map_err(|e| StorageError::io(&seg_dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    segs.sort();
    let mut out = vec![dir.join(names::MANIFEST)];
    out.extend(segs);
    Ok(out)
}

/// Flips one byte in the middle of the largest segment of the store in `dir`, keeping its
/// length: damage behind a valid name, which only the content hash reveals. Returns the
/// segment's path.
pub fn flip_a_byte_of_the_largest_segment(dir: &Path) -> Result<PathBuf> {
    let segments = target_files(dir)?.split_off(1);
    let largest = segments
        .into_iter()
        .max_by_key(|path| fs::metadata(path).map_or(0, |m| m.len()))
        .ok_or_else(|| StorageError::io(dir, std::io::Error::other("no segment")))?;
    let mut bytes = fs::read(&largest).map_err(|e| StorageError::io(&largest, e))?;
    let middle = bytes.len() / 2;
    if let Some(byte) = bytes.get_mut(middle) {
        *byte ^= 0x5a;
    }
    fs::write(&largest, &bytes).map_err(|e| StorageError::io(&largest, e))?;
    Ok(largest)
}

/// Damages one file of the store in `dir` as `data` says: byte 0 picks the file (see
/// [`target_files`]), byte 1 bit 0 asks for a truncation to the length in bytes 2..6,
/// and every following 5-byte group is a little-endian position and a byte to XOR there.
pub fn apply_mutation(dir: &Path, data: &[u8]) -> Result<()> {
    let files = target_files(dir)?;
    let Some(&pick) = data.first() else {
        return Ok(());
    };
    let path = &files[usize::from(pick) % files.len()];
    let mut bytes = fs::read(path).map_err(|e| StorageError::io(path, e))?;
    let rest = data.get(1..).unwrap_or(&[]);
    let mut groups = rest;
    if let Some((&flags, tail)) = rest.split_first() {
        groups = tail;
        if flags & 1 == 1 && tail.len() >= 4 {
            let len = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as usize;
            bytes.truncate(len % (bytes.len() + 1));
            groups = &tail[4..];
        }
    }
    for g in groups.chunks_exact(5) {
        if bytes.is_empty() {
            break;
        }
        let pos = u32::from_le_bytes([g[0], g[1], g[2], g[3]]) as usize % bytes.len();
        bytes[pos] ^= g[4];
    }
    fs::write(path, &bytes).map_err(|e| StorageError::io(path, e))
}

/// Calls every accessor on (up to 10 000) nodes and edges and every bitmap; returns a
/// value derived from all results so that nothing is optimised away.
pub fn exercise(a: &Artifact) -> u64 {
    let mut acc = 0u64;
    let mut mix = |v: u64| acc = acc.rotate_left(5) ^ v;
    let n = a.node_count().min(10_000);
    mix(u64::from(a.live_node_count()) ^ u64::from(a.live_edge_count()));
    mix(a.live_nodes().take(10_000).count() as u64);
    for question in ["fn file", "fuzz_new_entity", "src dir1 ns3 void"] {
        mix(a
            .text_search(question, 10)
            .map_or(u64::MAX, |hits| hits.len() as u64));
    }
    for i in 0..n {
        mix(u64::from(a.is_live(NodeIdx(i))));
        let node = a.node(NodeIdx(i));
        mix(node.id().len() as u64 ^ u64::from(node.id_is("x")));
        for s in [
            node.name(),
            node.qualified_name(),
            node.file(),
            node.signature(),
        ] {
            mix(s.len() as u64);
        }
        mix(u64::from(node.kind().code())
            + u64::from(node.language().code())
            + u64::from(node.flags().0));
        mix(u64::from(node.start_line())
            ^ u64::from(node.end_line())
            ^ u64::from(node.start_byte())
            ^ u64::from(node.end_byte()));
        mix(u64::from(node.community()) ^ u64::from(node.content_hash()[0]));
        mix(u64::from(node.pagerank()));
        mix(a.lookup_id(&node.id()).map_or(1, |x| u64::from(x.0)));
        mix(a.lookup_name(&node.name()).take(100).count() as u64);
        let prefix: String = node.name().chars().take(2).collect();
        mix(a.lookup_name_prefix(&prefix).take(100).count() as u64);
        mix(a.find_string(&node.file()).map_or(7, |s| u64::from(s.0)));
        for e in a
            .out_edges(NodeIdx(i))
            .take(100)
            .chain(a.in_edges(NodeIdx(i)).take(100))
        {
            mix(u64::from(e.src().0) ^ u64::from(e.dst().0) ^ u64::from(e.line()));
            mix(u64::from(e.rel().code())
                ^ u64::from(e.roles().0)
                ^ u64::from(e.strategy().code()));
            mix(u64::from(e.confidence().to_bits()) ^ e.file().len() as u64);
        }
    }
    for k in 0..a.edge_count().min(10_000) {
        let e = a.edge(EdgeIdx(k));
        mix(u64::from(a.is_live_edge(EdgeIdx(k))));
        mix(u64::from(e.src().0) ^ u64::from(e.dst().0) ^ e.file().len() as u64);
    }
    for k in NodeKind::ALL {
        mix(a.nodes_of_kind(*k).len());
    }
    for r in RelType::ALL {
        mix(a.edges_of_rel(*r).len());
    }
    for (r, _) in Roles::NAMED {
        mix(a.edges_with_role(r).len());
    }
    // Every dictionary string, base and delta: damaged blocks must read as "" and
    // lookups by text must still terminate.
    for k in 0..a.string_count().min(20_000) {
        let text = a.string(StrId(k));
        mix(text.len() as u64 ^ a.string_bytes(StrId(k)).len() as u64);
        mix(a.find_string(&text).map_or(3, |s| u64::from(s.0)));
    }
    let files: Vec<String> = a.files().take(1000).map(Cow::into_owned).collect();
    for f in &files {
        mix(a.nodes_in_file(f).map_or(0, |b| b.len()));
    }
    mix(a.runs().len() as u64 ^ a.generation());
    acc
}

/// Opens the current artifact in `dir`, verifies it deeply and exercises every accessor.
pub fn open_and_exercise(dir: &Path) -> Result<Vec<Issue>> {
    let a = Artifact::open(dir)?;
    let issues = a.verify(true);
    exercise(&a);
    Ok(issues)
}

/// Reads `bytes` as a writable graph's log records, change batches and checkpoint, and
/// checks that rollback and checkpoint round trips hold for whatever decodes (the
/// `writable_log` fuzz target). `Err` for bytes that are not a valid checkpoint.
pub fn exercise_writable_graph_bytes(bytes: &[u8]) -> std::result::Result<(), String> {
    crate::session::exercise_bytes(bytes)
}
