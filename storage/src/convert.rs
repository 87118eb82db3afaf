//! Turning an artifact back into a [`GraphBuilder`].
//!
//! Until patches commit delta layers (see `docs/format.md` §9), a patch loads the previous
//! generation into a builder, edits it and commits a new base; `fix` uses the same path to
//! rebuild derived structures (indexes, in-CSR, bitmaps) from the primary columns.

use crate::input::{EdgeInput, GraphBuilder, NodeIdx, NodeInput};
use crate::reader::Artifact;

impl Artifact {
    /// Every node and edge of this generation as a builder, in artifact order (node
    /// indexes are kept; edges come in `EdgeIdx` order). Content hashes keep the 16 stored
    /// bytes and are zero-padded. Committing the result reproduces identical segments.
    pub fn to_graph_builder(&self) -> GraphBuilder {
        let mut g = GraphBuilder::new();
        g.nodes.reserve(self.node_count() as usize);
        for node in self.nodes() {
            let mut content_hash = [0u8; 32];
            content_hash[..16].copy_from_slice(&node.content_hash());
            let input = NodeInput {
                id: g.intern(&node.id()),
                name: g.intern(node.name()),
                qualified_name: g.intern(node.qualified_name()),
                kind: node.kind(),
                file: g.intern(node.file()),
                language: node.language(),
                start_line: node.start_line(),
                end_line: node.end_line(),
                start_byte: node.start_byte(),
                end_byte: node.end_byte(),
                signature: g.intern(node.signature()),
                content_hash,
                flags: node.flags(),
                community: node.community(),
            };
            g.add_node(input);
        }
        g.edges.reserve(self.edge_count() as usize);
        for src in 0..self.node_count() {
            for e in self.out_edges(NodeIdx(src)) {
                let input = EdgeInput {
                    src: NodeIdx(src),
                    dst: e.dst(),
                    rel: e.rel(),
                    roles: e.roles(),
                    confidence: e.confidence(),
                    strategy: e.strategy(),
                    file: g.intern(e.file()),
                    line: e.line(),
                };
                // Damaged data can name a node past the end; keep the builder valid.
                if input.dst.0 < self.node_count() {
                    g.add_edge(input);
                }
            }
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use crate::Store;
    use crate::fuzzing::{sample_graph, sample_run};

    #[test]
    fn a_reloaded_graph_commits_to_the_same_segments() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::create_or_open(tmp.path()).unwrap();
        let g = sample_graph(11, 300, 1500);
        let mut w = store.lock_writer().unwrap();
        w.commit(&g, sample_run(&g)).unwrap();
        let a = store.open_current().unwrap();
        let back = a.to_graph_builder();
        assert_eq!(back.nodes.len(), g.nodes.len());
        assert_eq!(back.edges.len(), g.edges.len());
        let info = w.commit(&back, sample_run(&back)).unwrap();
        assert_eq!((info.segments_written, info.segments_reused), (0, 4));
    }
}
