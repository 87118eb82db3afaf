//! The evidence of a code-health report, read off an artifact: functions nothing uses,
//! files that include each other in a circle, and how much of the graph hangs on a few
//! hubs. Each part keeps the nodes that show it, so a person can check every figure.
//! (The fourth part of the Astria `health` tool, staleness, is `crate::status`'s.)

use std::collections::HashSet;

use batho_schema::{NodeFlags, NodeKind, RelType};
use batho_storage::{Artifact, NodeIdx};

/// The share of entities counted as hubs: the top 1 % by degree (at least one).
const HUB_SHARE_OF_ENTITIES: f64 = 0.01;

/// A function definition that nothing in the tree calls or takes the address of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnusedFunction {
    /// The definition.
    pub node: NodeIdx,
    /// Not `static`, and no header declares it: it can only be used from outside the tree
    /// (or not at all).
    pub exported: bool,
}

/// What the health report is made of.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HealthParts {
    /// Function definitions in the tree.
    pub function_definitions: u64,
    /// Definitions nothing uses: static ones, and exported ones no header declares
    /// (`main` is an entry point, never a candidate).
    pub unused: Vec<UnusedFunction>,
    /// In-tree files.
    pub files: u64,
    /// Groups of files that include each other in a circle (strongly connected components
    /// of the `INCLUDES` graph of two or more files, or one file including itself), each
    /// in ascending node order, the groups by their first file.
    pub include_cycles: Vec<Vec<NodeIdx>>,
    /// Entities (neither files nor external stubs).
    pub entities: u64,
    /// The hubs, most connected first, with their degree (relationships other than
    /// `CONTAINS`, both directions).
    pub hubs: Vec<(NodeIdx, u64)>,
    /// The share of all relationship ends between entities that the hubs hold.
    pub hub_share: f64,
}

/// Reads the health evidence of `art`. Linear in nodes and edges, plus a sort of degrees.
/// The hubs (the costliest part: a pass over every node and the degrees) are read on a
/// second thread beside the unused functions and the include cycles.
pub fn health_parts(art: &Artifact) -> HealthParts {
    let ((function_definitions, unused), (files, include_cycles), (entities, hubs, hub_share)) =
        std::thread::scope(|scope| {
            let hubs = scope.spawn(|| hubs(art));
            let unused = unused_functions(art);
            let cycles = include_cycles(art);
            let hubs = hubs
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (unused, cycles, hubs)
        });
    HealthParts {
        function_definitions,
        unused,
        files,
        include_cycles,
        entities,
        hubs,
        hub_share,
    }
}

fn is_header(path: &str) -> bool {
    let extension = path.rsplit('.').next().unwrap_or("");
    matches!(extension, "h" | "hh" | "hpp" | "hxx" | "inc")
}

/// Whether another node calls `node` or takes its address (recursion does not count).
fn is_used(art: &Artifact, node: NodeIdx) -> bool {
    art.in_edges(node).any(|edge| {
        matches!(edge.rel(), RelType::Calls | RelType::References)
            && edge.src() != node
            && art.is_live(edge.src())
    })
}

/// The number of function definitions, and those nothing uses.
fn unused_functions(art: &Artifact) -> (u64, Vec<UnusedFunction>) {
    let functions = art.nodes_of_kind(NodeKind::Function);
    let declared_in_headers: HashSet<String> = functions
        .iter()
        .map(|n| art.node(NodeIdx(n)))
        .filter(|node| {
            node.flags().contains(NodeFlags::DECLARATION_ONLY) && is_header(&node.file())
        })
        .map(|node| node.name().into_owned())
        .collect();
    let mut definitions = 0;
    let mut unused = Vec::new();
    for n in functions.iter().map(NodeIdx) {
        let node = art.node(n);
        if !art.is_live(n) || node.flags().contains(NodeFlags::DECLARATION_ONLY) {
            continue;
        }
        definitions += 1;
        if is_used(art, n) || node.name() == "main" {
            continue;
        }
        let is_static = node.flags().contains(NodeFlags::STATIC);
        if is_static {
            unused.push(UnusedFunction {
                node: n,
                exported: false,
            });
        } else if !declared_in_headers.contains(node.name().as_ref()) {
            unused.push(UnusedFunction {
                node: n,
                exported: true,
            });
        }
    }
    (definitions, unused)
}

/// The number of in-tree files, and the circles of `#include` among them.
fn include_cycles(art: &Artifact) -> (u64, Vec<Vec<NodeIdx>>) {
    let files: Vec<NodeIdx> = art
        .nodes_of_kind(NodeKind::File)
        .iter()
        .map(NodeIdx)
        .filter(|&n| art.is_live(n) && !art.node(n).file().is_empty())
        .collect();
    let successors = |n: NodeIdx| -> Vec<NodeIdx> {
        art.out_edges(n)
            .filter(|edge| edge.rel() == RelType::Includes)
            .map(|edge| edge.dst())
            .filter(|&dst| art.is_live(dst) && art.node(dst).kind() == NodeKind::File)
            .collect()
    };
    let components = strongly_connected(&files, successors);
    let cycles = components
        .into_iter()
        .filter(|component| component.len() > 1 || successors(component[0]).contains(&component[0]))
        .collect();
    (files.len() as u64, cycles)
}

/// Tarjan's strongly connected components, iteratively (an include chain can be deep),
/// over the nodes `roots` and what `successors` reaches from them. Each component comes
/// back sorted; the components sorted by their first node.
fn strongly_connected(
    roots: &[NodeIdx],
    successors: impl Fn(NodeIdx) -> Vec<NodeIdx>,
) -> Vec<Vec<NodeIdx>> {
    use std::collections::HashMap;
    struct Visit {
        index: usize,
        low: usize,
        on_stack: bool,
    }
    let mut visits: HashMap<NodeIdx, Visit> = HashMap::new();
    let mut stack: Vec<NodeIdx> = Vec::new();
    let mut components = Vec::new();
    for &root in roots {
        if visits.contains_key(&root) {
            continue;
        }
        // Each frame: a node, its successors, and how many of them were taken.
        let mut frames: Vec<(NodeIdx, Vec<NodeIdx>, usize)> = Vec::new();
        let enter = |node: NodeIdx,
                     visits: &mut HashMap<NodeIdx, Visit>,
                     stack: &mut Vec<NodeIdx>,
                     frames: &mut Vec<(NodeIdx, Vec<NodeIdx>, usize)>| {
            let index = visits.len();
            visits.insert(
                node,
                Visit {
                    index,
                    low: index,
                    on_stack: true,
                },
            );
            stack.push(node);
            frames.push((node, successors(node), 0));
        };
        enter(root, &mut visits, &mut stack, &mut frames);
        while let Some((node, next, taken)) = frames.last_mut() {
            let node = *node;
            if let Some(&successor) = next.get(*taken) {
                *taken += 1;
                match visits.get(&successor) {
                    None => enter(successor, &mut visits, &mut stack, &mut frames),
                    Some(visit) if visit.on_stack => {
                        let index = visit.index;
                        let current = visits.get_mut(&node).expect("visited");
                        current.low = current.low.min(index);
                    }
                    Some(_) => {}
                }
                continue;
            }
            frames.pop();
            let (index, low) = {
                let visit = &visits[&node];
                (visit.index, visit.low)
            };
            if let Some((parent, _, _)) = frames.last() {
                let parent = visits.get_mut(parent).expect("visited");
                parent.low = parent.low.min(low);
            }
            if index == low {
                let mut component = Vec::new();
                while let Some(member) = stack.pop() {
                    visits.get_mut(&member).expect("visited").on_stack = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                component.sort();
                components.push(component);
            }
        }
    }
    components.sort();
    components
}

/// A node's degree: its relationships other than `CONTAINS` (containment is structure,
/// not use), incoming and outgoing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Degree {
    /// The node.
    pub node: NodeIdx,
    /// Relationships that end at it.
    pub incoming: u64,
    /// Relationships that leave it.
    pub outgoing: u64,
}

impl Degree {
    /// Both directions.
    pub fn total(&self) -> u64 {
        self.incoming + self.outgoing
    }
}

/// The degree of every live entity (with `files_and_stubs`, of file nodes and external
/// stubs too), most connected first, ties by node order; only the first `limit` when
/// given (selected before sorting: a kernel has 7 million entities), and the number of
/// nodes counted and their total degree.
pub fn degrees(
    art: &Artifact,
    files_and_stubs: bool,
    limit: Option<usize>,
) -> (Vec<Degree>, u64, u64) {
    let (outgoing, incoming) = edge_ends(art);
    let mut degrees: Vec<Degree> = art
        .live_nodes()
        .filter(|node| {
            files_and_stubs || !matches!(node.kind(), NodeKind::File | NodeKind::External)
        })
        .map(|node| Degree {
            node: node.idx(),
            incoming: u64::from(incoming[node.idx().0 as usize]),
            outgoing: u64::from(outgoing[node.idx().0 as usize]),
        })
        .collect();
    let node_count = degrees.len() as u64;
    let ends = degrees.iter().map(Degree::total).sum();
    let order = |a: &Degree, b: &Degree| b.total().cmp(&a.total()).then(a.node.cmp(&b.node));
    if let Some(limit) = limit.filter(|&limit| limit < degrees.len()) {
        if limit == 0 {
            degrees.clear();
        } else {
            degrees.select_nth_unstable_by(limit - 1, order);
            degrees.truncate(limit);
        }
    }
    degrees.sort_by(order);
    (degrees, node_count, ends)
}

/// Each node's relationships other than `CONTAINS`, outgoing and incoming, indexed by
/// node: from the CSR offsets when no delta layer is open
/// ([`Artifact::base_degrees_without`]), else by one pass over every live node's
/// out-edges. (Reading each node's in- and out-edges took 1.7 s on Linux 6.1.)
fn edge_ends(art: &Artifact) -> (Vec<u32>, Vec<u32>) {
    if let Some(degrees) = art.base_degrees_without(RelType::Contains) {
        return degrees;
    }
    let nodes = art.node_count() as usize;
    let (mut incoming, mut outgoing) = (vec![0u32; nodes], vec![0u32; nodes]);
    for node in art.live_nodes() {
        for edge in art.out_edges(node.idx()) {
            if edge.rel() != RelType::Contains {
                outgoing[node.idx().0 as usize] += 1;
                if let Some(count) = incoming.get_mut(edge.dst().0 as usize) {
                    *count += 1;
                }
            }
        }
    }
    (outgoing, incoming)
}

/// The number of entities, the hubs (top 1 % by degree) and their share of the ends.
fn hubs(art: &Artifact) -> (u64, Vec<(NodeIdx, u64)>, f64) {
    let entities = art
        .live_nodes()
        .filter(|node| !matches!(node.kind(), NodeKind::File | NodeKind::External))
        .count();
    let hub_count = ((entities as f64 * HUB_SHARE_OF_ENTITIES).ceil() as usize).max(1);
    let (degrees, entities, ends) = degrees(art, false, Some(hub_count));
    let held: u64 = degrees.iter().map(Degree::total).sum();
    let share = if ends == 0 {
        0.0
    } else {
        held as f64 / ends as f64
    };
    let hubs = degrees.into_iter().map(|d| (d.node, d.total())).collect();
    (entities, hubs, share)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_of_a_small_graph() {
        // 0 → 1 → 2 → 0 (a circle), 2 → 3, 3 → 3 (a self loop), 4 alone.
        let edges: Vec<(u32, u32)> = vec![(0, 1), (1, 2), (2, 0), (2, 3), (3, 3)];
        let successors = |n: NodeIdx| -> Vec<NodeIdx> {
            edges
                .iter()
                .filter(|(from, _)| *from == n.0)
                .map(|(_, to)| NodeIdx(*to))
                .collect()
        };
        let roots: Vec<NodeIdx> = (0..5).map(NodeIdx).collect();
        let components = strongly_connected(&roots, successors);
        assert_eq!(
            components,
            vec![
                vec![NodeIdx(0), NodeIdx(1), NodeIdx(2)],
                vec![NodeIdx(3)],
                vec![NodeIdx(4)]
            ]
        );
    }

    #[test]
    fn a_long_chain_does_not_overflow_the_stack() {
        let roots: Vec<NodeIdx> = (0..200_000).map(NodeIdx).collect();
        let successors = |n: NodeIdx| -> Vec<NodeIdx> {
            if n.0 + 1 < 200_000 {
                vec![NodeIdx(n.0 + 1)]
            } else {
                vec![NodeIdx(0)]
            }
        };
        let components = strongly_connected(&roots, successors);
        assert_eq!(components.len(), 1);
        assert_eq!(components[0].len(), 200_000);
    }
}
