//! The artifact seen through BQL's [`PropertyAccess`]: the documented node and
//! relationship properties of a code graph, read in place from the mmap'd columns.

use std::collections::BTreeMap;
use std::fmt::Write;

use batho_lang::{PropertyAccess, Value};
use batho_schema::{NodeFlags, NodeKind};
use batho_storage::{Artifact, EdgeIdx, NodeIdx};

/// Node property names, in the order `properties()` reports them.
pub const NODE_PROPERTIES: &[&str] = &[
    "id",
    "name",
    "qualified_name",
    "kind",
    "file",
    "start_line",
    "end_line",
    "start_byte",
    "end_byte",
    "signature",
    "content_hash",
    "is_exported",
    "is_static",
    "community",
    "language",
    "pagerank",
];

/// The node property only `File` nodes have (null on other kinds).
pub const FILE_ONLY_PROPERTY: &str = "has_syntax_errors";

/// The words of the comment above an entity (null when it has none).
pub const DOC_PROPERTY: &str = "doc";

/// False for an entity defined in a branch the build's configuration leaves out
/// (`NodeFlags::INACTIVE`), true otherwise (always, without a configuration). Left out of
/// a node's expansion unless false, so graphs built without a configuration read as before.
pub const ACTIVE_PROPERTY: &str = "is_active";

/// Node properties that most nodes lack: null there, and left out of a node's expansion
/// (`RETURN n`, `properties(n)`) unless present, so most objects stay as they were.
pub const SPARSE_NODE_PROPERTIES: &[&str] = &[FILE_ONLY_PROPERTY, DOC_PROPERTY];

/// Relationship property names.
pub const REL_PROPERTIES: &[&str] = &[
    "type",
    "roles",
    "confidence",
    "strategy",
    "file",
    "line",
    "lines",
    "count",
];

/// An [`Artifact`] as a BQL graph (a newtype because both the trait and the store type
/// live in other crates).
#[derive(Clone, Copy, Debug)]
pub struct ArtifactGraph<'a>(pub &'a Artifact);

/// Confidences are stored as `f32`; widening `0.85f32` gives `0.8500000238…`, which would
/// make `r.confidence = 0.85` false. Rounding to 6 decimals restores the written value.
fn widen(c: f32) -> f64 {
    (f64::from(c) * 1e6).round() / 1e6
}

/// Lower-case hex of `bytes`: how hashes appear in BQL values and exports.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn int(v: impl Into<i64>) -> Value {
    Value::Int(v.into())
}

impl ArtifactGraph<'_> {
    fn in_nodes(&self, node: u32) -> bool {
        self.0.is_live(NodeIdx(node))
    }

    fn in_edges(&self, rel: u32) -> bool {
        self.0.is_live_edge(EdgeIdx(rel))
    }
}

impl PropertyAccess for ArtifactGraph<'_> {
    fn node_prop(&self, node: u32, key: &str) -> Value {
        if !self.in_nodes(node) {
            return Value::Null;
        }
        let n = self.0.node(NodeIdx(node));
        match key {
            "id" => Value::String(n.id().into_owned()),
            "name" => n.name().into(),
            "qualified_name" => n.qualified_name().into(),
            "kind" => n.kind().name().into(),
            "file" => n.file().into(),
            "start_line" => int(n.start_line()),
            "end_line" => int(n.end_line()),
            "start_byte" => Value::Int(i64::from(n.start_byte())),
            "end_byte" => Value::Int(i64::from(n.end_byte())),
            "signature" => n.signature().into(),
            "content_hash" => Value::String(hex(&n.content_hash())),
            "is_exported" => Value::Bool(n.flags().contains(NodeFlags::EXPORTED)),
            "is_static" => Value::Bool(n.flags().contains(NodeFlags::STATIC)),
            ACTIVE_PROPERTY => Value::Bool(!n.flags().contains(NodeFlags::INACTIVE)),
            "community" => int(n.community()),
            "language" => n.language().name().into(),
            "pagerank" => Value::Float(crate::algo::from_stored(n.pagerank())),
            // A property of files only: other kinds have no syntax tree of their own.
            FILE_ONLY_PROPERTY if n.kind() == NodeKind::File => {
                Value::Bool(n.flags().contains(NodeFlags::SYNTAX_ERRORS))
            }
            DOC_PROPERTY => match n.doc() {
                doc if doc.is_empty() => Value::Null,
                doc => doc.into(),
            },
            _ => Value::Null,
        }
    }

    fn rel_prop(&self, rel: u32, key: &str) -> Value {
        if !self.in_edges(rel) {
            return Value::Null;
        }
        let e = self.0.edge(EdgeIdx(rel));
        match key {
            "type" => e.rel().name().into(),
            "roles" => int(e.roles().0),
            "confidence" => Value::Float(widen(e.confidence())),
            "strategy" => e.strategy().name().into(),
            "file" => e.file().into(),
            "line" => int(e.line()),
            "lines" => Value::List(e.site_lines().into_iter().map(int).collect()),
            "count" => int(e.site_count()),
            _ => Value::Null,
        }
    }

    fn node_labels(&self, node: u32) -> Vec<String> {
        if !self.in_nodes(node) {
            return Vec::new();
        }
        vec![self.0.node(NodeIdx(node)).kind().name().to_string()]
    }

    fn rel_type(&self, rel: u32) -> String {
        self.0.edge(EdgeIdx(rel)).rel().name().to_string()
    }

    fn rel_endpoints(&self, rel: u32) -> (u32, u32) {
        let e = self.0.edge(EdgeIdx(rel));
        (e.src().0, e.dst().0)
    }

    fn node_properties(&self, node: u32) -> BTreeMap<String, Value> {
        let mut properties: BTreeMap<String, Value> = NODE_PROPERTIES
            .iter()
            .map(|k| (k.to_string(), self.node_prop(node, k)))
            .collect();
        for key in SPARSE_NODE_PROPERTIES {
            let value = self.node_prop(node, key);
            if value != Value::Null {
                properties.insert(key.to_string(), value);
            }
        }
        if self.node_prop(node, ACTIVE_PROPERTY) == Value::Bool(false) {
            properties.insert(ACTIVE_PROPERTY.to_string(), Value::Bool(false));
        }
        properties
    }

    fn rel_properties(&self, rel: u32) -> BTreeMap<String, Value> {
        REL_PROPERTIES
            .iter()
            .map(|k| (k.to_string(), self.rel_prop(rel, k)))
            .collect()
    }

    fn rel_roles(&self, rel: u32) -> u16 {
        if !self.in_edges(rel) {
            return 0;
        }
        self.0.edge(EdgeIdx(rel)).roles().0
    }
}
