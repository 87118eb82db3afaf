//! The vocabulary a query is checked against: labels, relationship types (with aliases),
//! property names, role names and procedure signatures.
//!
//! A [`Schema`] is a value, not a global: [`Schema::code_graph`] describes the code graphs
//! Batho builds (from `batho-schema`), and session graphs with their own labels build a
//! different one with [`Schema::new`] or accept anything with [`Schema::open`].

use batho_schema::{NodeKind, RelType, Roles};

/// What a variable or column holds, as far as the checker can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// A node.
    Node,
    /// A relationship.
    Rel,
    /// The list of relationships of a variable-length pattern.
    RelList,
    /// A path.
    Path,
    /// A value written as a literal (number, string, boolean, list or map): never a
    /// node, relationship or path.
    Literal,
    /// A value written as a map literal: properties may be read from it.
    Map,
    /// Anything else, or unknown.
    Any,
}

impl ValueKind {
    /// A noun for messages.
    pub fn noun(self) -> &'static str {
        match self {
            ValueKind::Node => "a node",
            ValueKind::Rel => "a relationship",
            ValueKind::RelList => "a list of relationships",
            ValueKind::Path => "a path",
            ValueKind::Literal => "a literal value",
            ValueKind::Map => "a map",
            ValueKind::Any => "a value",
        }
    }
}

/// The declared type of a property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PropType {
    /// Integer.
    Int,
    /// Float.
    Float,
    /// String.
    String,
    /// Boolean.
    Bool,
    /// A list of integers.
    IntList,
    /// Unspecified.
    Any,
}

/// The signature of a procedure the engine provides, for checking `CALL ... YIELD`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcedureSig {
    /// Dotted name, e.g. `db.schema`.
    pub name: String,
    /// Fewest arguments.
    pub min_args: usize,
    /// Most arguments.
    pub max_args: usize,
    /// Output columns in order, with what they hold.
    pub outputs: Vec<(String, ValueKind)>,
}

impl ProcedureSig {
    /// A signature.
    pub fn new(name: &str, args: (usize, usize), outputs: &[(&str, ValueKind)]) -> Self {
        ProcedureSig {
            name: name.to_string(),
            min_args: args.0,
            max_args: args.1,
            outputs: outputs.iter().map(|(n, k)| (n.to_string(), *k)).collect(),
        }
    }
}

/// Labels, types, properties, roles and procedures known to a graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schema {
    labels: Vec<String>,
    rel_types: Vec<String>,
    rel_aliases: Vec<(String, String)>,
    node_properties: Vec<(String, PropType)>,
    rel_properties: Vec<(String, PropType)>,
    roles: Vec<String>,
    procedures: Vec<ProcedureSig>,
    open: bool,
}

/// Node properties of a code graph.
pub const CODE_NODE_PROPERTIES: &[(&str, PropType)] = &[
    ("id", PropType::String),
    ("name", PropType::String),
    ("qualified_name", PropType::String),
    ("kind", PropType::String),
    ("file", PropType::String),
    ("start_line", PropType::Int),
    ("end_line", PropType::Int),
    ("start_byte", PropType::Int),
    ("end_byte", PropType::Int),
    ("signature", PropType::String),
    ("content_hash", PropType::String),
    ("is_exported", PropType::Bool),
    ("is_static", PropType::Bool),
    ("is_active", PropType::Bool),
    ("community", PropType::Int),
    ("language", PropType::String),
    ("pagerank", PropType::Float),
    ("has_syntax_errors", PropType::Bool),
    ("doc", PropType::String),
];

/// Relationship properties of a code graph.
pub const CODE_REL_PROPERTIES: &[(&str, PropType)] = &[
    ("type", PropType::String),
    ("roles", PropType::Int),
    ("confidence", PropType::Float),
    ("strategy", PropType::String),
    ("file", PropType::String),
    ("line", PropType::Int),
    ("lines", PropType::IntList),
    ("count", PropType::Int),
];

impl Schema {
    /// The schema of Batho code graphs: node kinds as labels, relation types (and the
    /// `IMPORTS` alias of `INCLUDES`), the documented properties, the role names and the
    /// procedures every engine provides.
    pub fn code_graph() -> Schema {
        Schema {
            labels: NodeKind::ALL.iter().map(|k| k.name().to_string()).collect(),
            rel_types: RelType::ALL.iter().map(|r| r.name().to_string()).collect(),
            rel_aliases: vec![("IMPORTS".into(), RelType::Includes.name().into())],
            node_properties: CODE_NODE_PROPERTIES
                .iter()
                .map(|(n, t)| (n.to_string(), *t))
                .collect(),
            rel_properties: CODE_REL_PROPERTIES
                .iter()
                .map(|(n, t)| (n.to_string(), *t))
                .collect(),
            roles: Roles::NAMED.iter().map(|(_, n)| n.to_string()).collect(),
            procedures: default_procedures(),
            open: false,
        }
    }

    /// A closed schema with the given vocabulary and the default procedures.
    pub fn new(
        labels: &[&str],
        rel_types: &[&str],
        node_properties: &[(&str, PropType)],
        rel_properties: &[(&str, PropType)],
    ) -> Schema {
        Schema {
            labels: labels.iter().map(|s| s.to_string()).collect(),
            rel_types: rel_types.iter().map(|s| s.to_string()).collect(),
            rel_aliases: Vec::new(),
            node_properties: node_properties
                .iter()
                .map(|(n, t)| (n.to_string(), *t))
                .collect(),
            rel_properties: rel_properties
                .iter()
                .map(|(n, t)| (n.to_string(), *t))
                .collect(),
            roles: Vec::new(),
            procedures: default_procedures(),
            open: false,
        }
    }

    /// A schema that accepts any label, type, property and role (graphs whose vocabulary
    /// grows with writes). Procedures are still checked.
    pub fn open() -> Schema {
        Schema {
            open: true,
            ..Schema::new(&[], &[], &[], &[])
        }
    }

    /// Whether unknown names are accepted.
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Adds (or replaces) a procedure signature.
    pub fn with_procedure(mut self, sig: ProcedureSig) -> Schema {
        self.procedures
            .retain(|p| !p.name.eq_ignore_ascii_case(&sig.name));
        self.procedures.push(sig);
        self
    }

    /// The canonical spelling of a label (case-insensitive); on an open schema, the name itself.
    pub fn resolve_label(&self, name: &str) -> Option<String> {
        match self.labels.iter().find(|l| l.eq_ignore_ascii_case(name)) {
            Some(l) => Some(l.clone()),
            None => self.open.then(|| name.to_string()),
        }
    }

    /// The canonical relationship type for a name or alias (case-insensitive).
    pub fn resolve_rel_type(&self, name: &str) -> Option<String> {
        if let Some((_, t)) = self
            .rel_aliases
            .iter()
            .find(|(a, _)| a.eq_ignore_ascii_case(name))
        {
            return Some(t.clone());
        }
        match self.rel_types.iter().find(|t| t.eq_ignore_ascii_case(name)) {
            Some(t) => Some(t.clone()),
            None => self.open.then(|| name.to_string()),
        }
    }

    /// The type of a node property (case-sensitive), if it exists.
    pub fn node_property(&self, name: &str) -> Option<PropType> {
        match self.node_properties.iter().find(|(n, _)| n == name) {
            Some((_, t)) => Some(*t),
            None => self.open.then_some(PropType::Any),
        }
    }

    /// The type of a relationship property (case-sensitive), if it exists.
    pub fn rel_property(&self, name: &str) -> Option<PropType> {
        match self.rel_properties.iter().find(|(n, _)| n == name) {
            Some((_, t)) => Some(*t),
            None => self.open.then_some(PropType::Any),
        }
    }

    /// The canonical spelling of a role name (case-insensitive).
    pub fn resolve_role(&self, name: &str) -> Option<String> {
        match self.roles.iter().find(|r| r.eq_ignore_ascii_case(name)) {
            Some(r) => Some(r.clone()),
            None => self.open.then(|| name.to_string()),
        }
    }

    /// A procedure by name (case-insensitive).
    pub fn procedure(&self, name: &str) -> Option<&ProcedureSig> {
        self.procedures
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
    }

    /// Every label, for suggestions and docs.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.labels.iter().map(String::as_str)
    }

    /// Every relationship type and alias.
    pub fn rel_types(&self) -> impl Iterator<Item = &str> {
        self.rel_types
            .iter()
            .chain(self.rel_aliases.iter().map(|(a, _)| a))
            .map(String::as_str)
    }

    /// Every node property name.
    pub fn node_properties(&self) -> impl Iterator<Item = &str> {
        self.node_properties.iter().map(|(n, _)| n.as_str())
    }

    /// Every relationship property name.
    pub fn rel_properties(&self) -> impl Iterator<Item = &str> {
        self.rel_properties.iter().map(|(n, _)| n.as_str())
    }

    /// Every role name.
    pub fn roles(&self) -> impl Iterator<Item = &str> {
        self.roles.iter().map(String::as_str)
    }

    /// Every procedure.
    pub fn procedures(&self) -> impl Iterator<Item = &ProcedureSig> {
        self.procedures.iter()
    }
}

/// Signatures of the procedures the engine provides. The engine owns their behaviour;
/// the signatures live here so queries can be checked without an engine.
pub fn default_procedures() -> Vec<ProcedureSig> {
    use ValueKind::{Any, Node, Rel};
    vec![
        ProcedureSig::new(
            "db.schema",
            (0, 0),
            &[("kind", Any), ("name", Any), ("count", Any)],
        ),
        ProcedureSig::new("db.labels", (0, 0), &[("label", Any), ("count", Any)]),
        ProcedureSig::new(
            "db.relationshipTypes",
            (0, 0),
            &[("relationshipType", Any), ("count", Any)],
        ),
        ProcedureSig::new(
            "db.propertyKeys",
            (0, 0),
            &[("entity", Any), ("propertyKey", Any)],
        ),
        ProcedureSig::new(
            "db.runs",
            (0, 1),
            &[
                ("id", Any),
                ("type", Any),
                ("status", Any),
                ("started_at", Any),
                ("finished_at", Any),
                ("commit", Any),
                ("branch", Any),
                ("nodes", Any),
                ("edges", Any),
            ],
        ),
        ProcedureSig::new(
            "db.communities",
            (0, 0),
            &[
                ("community", Any),
                ("entities", Any),
                ("files", Any),
                ("label", Any),
                ("central", Any),
                ("central_id", Any),
                ("cohesion", Any),
                ("modularity", Any),
            ],
        ),
        ProcedureSig::new(
            "db.delta",
            (0, 5),
            &[
                ("change", Any),
                ("id", Any),
                ("name", Any),
                ("kind", Any),
                ("file", Any),
                ("start_line", Any),
                ("end_line", Any),
                ("signature", Any),
                ("before_id", Any),
                ("before_name", Any),
                ("before_kind", Any),
                ("before_file", Any),
                ("before_start_line", Any),
                ("before_end_line", Any),
                ("before_signature", Any),
                ("changed", Any),
                ("run", Any),
                ("base_run", Any),
                ("generation", Any),
                ("base_generation", Any),
            ],
        ),
        ProcedureSig::new(
            "db.deltaStats",
            (0, 2),
            &[
                ("run", Any),
                ("type", Any),
                ("status", Any),
                ("started_at", Any),
                ("finished_at", Any),
                ("duration_ms", Any),
                ("commit", Any),
                ("branch", Any),
                ("generation", Any),
                ("base_run", Any),
                ("base_generation", Any),
                ("nodes_added", Any),
                ("nodes_removed", Any),
                ("nodes_modified", Any),
                ("nodes_renamed", Any),
                ("nodes_moved", Any),
                ("files_added", Any),
                ("files_removed", Any),
                ("files_modified", Any),
                ("files_skipped_by_hash", Any),
                ("edges_added", Any),
                ("edges_removed", Any),
                ("edges_by_type", Any),
                ("files", Any),
                ("elapsed_ms", Any),
            ],
        ),
        ProcedureSig::new(
            "db.stats",
            (0, 0),
            &[
                ("nodes", Any),
                ("edges", Any),
                ("files", Any),
                ("entities", Any),
                ("communities", Any),
                ("modularity", Any),
            ],
        ),
        ProcedureSig::new("algo.pagerank", (0, 1), &[("node", Node), ("score", Any)]),
        ProcedureSig::new("text.search", (1, 2), &[("node", Node), ("score", Any)]),
        ProcedureSig::new("text.score", (2, 2), &[("node", Node), ("score", Any)]),
        ProcedureSig::new(
            "algo.traverse",
            (1, 5),
            &[
                ("record", Any),
                ("node", Node),
                ("relationship", Rel),
                ("depth", Any),
                ("start", Any),
            ],
        ),
        ProcedureSig::new(
            "algo.bfs",
            (1, 5),
            &[("node", Node), ("distance", Any), ("relationship", Rel)],
        ),
        ProcedureSig::new(
            "algo.neighbors",
            (1, 4),
            &[("node", Node), ("relationship", Rel), ("direction", Any)],
        ),
        ProcedureSig::new(
            "algo.affected",
            (1, 3),
            &[
                ("node", Node),
                ("depth", Any),
                ("via", Node),
                ("relationship", Rel),
            ],
        ),
        ProcedureSig::new(
            "algo.degree",
            (0, 2),
            &[
                ("node", Node),
                ("degree", Any),
                ("in_degree", Any),
                ("out_degree", Any),
            ],
        ),
        ProcedureSig::new(
            "algo.file_rank",
            (0, 1),
            &[("file", Any), ("rank", Any), ("entities", Any)],
        ),
        ProcedureSig::new(
            "algo.file_symbols",
            (1, 3),
            &[("node", Node), ("score", Any)],
        ),
        ProcedureSig::new(
            "algo.health",
            (0, 0),
            &[
                ("part", Any),
                ("count", Any),
                ("total", Any),
                ("measure", Any),
                ("penalty", Any),
                ("evidence", Any),
            ],
        ),
    ]
}
