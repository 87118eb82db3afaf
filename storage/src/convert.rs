//! Turning an artifact back into a [`GraphBuilder`].
//!
//! Compaction folds a base and its delta into one builder and commits it as a new base;
//! `fix` uses the same path (on a base layer alone) to rebuild derived structures
//! (indexes, in-CSR, bitmaps) from the primary columns.

use crate::fragment::node_input;
use crate::input::{EdgeInput, GraphBuilder, NodeIdx};
use crate::reader::Artifact;

impl Artifact {
    /// Every live node and edge of this generation as a builder, in artifact order (node
    /// indexes are kept when no delta removed a node, else renumbered densely; edges come
    /// in out-edge order). Content hashes keep the
    /// [`crate::CONTENT_HASH_LEN`] stored bytes and are zero-padded. Committing the result reproduces identical segments.
    pub fn to_graph_builder(&self) -> GraphBuilder {
        let mut g = GraphBuilder::new();
        g.nodes.reserve(self.live_node_count() as usize);
        // Live nodes are renumbered densely (only a delta layer leaves gaps).
        let mut map = vec![u32::MAX; self.node_count() as usize];
        for node in self.live_nodes() {
            let input = node_input(&mut g, node);
            map[node.idx().0 as usize] = g.add_node(input).0;
        }
        g.edges.reserve(self.live_edge_count() as usize);
        for src in 0..self.node_count() {
            if map[src as usize] == u32::MAX {
                continue;
            }
            for e in self.out_edges(NodeIdx(src)) {
                // Damaged data can name a node past the end; keep the builder valid.
                let Some(&dst) = map.get(e.dst().0 as usize).filter(|d| **d != u32::MAX) else {
                    continue;
                };
                let input = EdgeInput {
                    src: NodeIdx(map[src as usize]),
                    dst: NodeIdx(dst),
                    rel: e.rel(),
                    roles: e.roles(),
                    confidence: e.confidence(),
                    strategy: e.strategy(),
                    file: g.intern(&e.file()),
                    line: e.line(),
                    sites: e.copy_sites_to(&mut g),
                };
                g.add_edge(input);
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
