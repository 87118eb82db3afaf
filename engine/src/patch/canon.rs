//! The canonical form patch parity is checked on: nodes by id with every property but
//! the community, edges as a multiset of (source id, relation, target id, roles,
//! strategy, confidence, file, line, use-site count and lines). Two graphs with equal canonical forms answer every
//! query alike; used by the parity tests and the `patch_parity` bench.

use std::collections::BTreeMap;

use batho_storage::input::{EdgeInput, GraphBuilder, NodeInput};

/// A node's properties, community aside.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeCanon {
    name: String,
    qualified_name: String,
    kind: u8,
    file: String,
    language: u8,
    start_line: u32,
    end_line: u32,
    start_byte: u32,
    end_byte: u32,
    signature: String,
    doc: String,
    content_hash: Vec<u8>,
    flags: u8,
}

/// An edge: (source id, relation, target id, roles, strategy, confidence bits, file, line,
/// use-site count, use-site lines).
pub type EdgeCanon = (String, u8, String, u16, u8, u32, String, u32, u32, Vec<u32>);

/// Nodes by id, and edges with their multiplicity.
pub type Canon = (BTreeMap<String, NodeCanon>, BTreeMap<EdgeCanon, usize>);

/// The canonical form of a graph.
pub fn canonical(g: &GraphBuilder) -> Canon {
    let mut nodes = BTreeMap::new();
    for n in &g.nodes {
        nodes.insert(g.id_of(n).into_owned(), node_canon(g, n));
    }
    let mut edges = BTreeMap::new();
    for e in &g.edges {
        *edges.entry(edge_canon(g, e)).or_insert(0) += 1;
    }
    (nodes, edges)
}

/// A node's properties, community aside (its id is the key of [`Canon`]'s node map).
pub fn node_canon(g: &GraphBuilder, n: &NodeInput) -> NodeCanon {
    NodeCanon {
        name: g.str(n.name).to_owned(),
        qualified_name: g.str(n.qualified_name).to_owned(),
        kind: n.kind.code(),
        file: g.str(n.file).to_owned(),
        language: n.language as u8,
        start_line: n.start_line,
        end_line: n.end_line,
        start_byte: n.start_byte,
        end_byte: n.end_byte,
        signature: g.str(n.signature).to_owned(),
        doc: g.str(n.doc).to_owned(),
        content_hash: n.content_hash.to_vec(),
        flags: n.flags.0,
    }
}

/// An edge, with its ends named by id.
pub fn edge_canon(g: &GraphBuilder, e: &EdgeInput) -> EdgeCanon {
    (
        g.id_of(&g.nodes[e.src.0 as usize]).into_owned(),
        e.rel.code(),
        g.id_of(&g.nodes[e.dst.0 as usize]).into_owned(),
        e.roles.0,
        e.strategy.code(),
        e.confidence.to_bits(),
        g.str(e.file).to_owned(),
        e.line,
        g.sites(e).count,
        g.sites(e).lines.to_vec(),
    )
}
