//! The runner's only contact with the engine: a [`Backend`] runs one statement and answers
//! with rows in TCK shape, side-effect counts, or an error classified by phase.
//!
//! Everything else in the runner works on [`Outcome`]s, so it can be tested with a fake
//! backend that returns canned outcomes. The adapter for `batho_engine::WritableDatabase`
//! sits at the bottom of this file.

use std::collections::BTreeMap;
use std::path::Path;

use batho_engine::query::QueryError;
use batho_lang::{PropertyAccess, Value};

use crate::values::{Direction, PathStep, TckNode, TckPath, TckRelationship, TckValue};

/// What one statement did to the graph, in the TCK's terms: nodes and relationships
/// created and deleted, label names that appeared in or vanished from the graph, and
/// property values (entity, key, value) that appeared or vanished (so overwriting a
/// property counts one `+properties` and one `-properties`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SideEffects {
    /// `+nodes`.
    pub nodes_created: u64,
    /// `-nodes`.
    pub nodes_deleted: u64,
    /// `+relationships`.
    pub relationships_created: u64,
    /// `-relationships`.
    pub relationships_deleted: u64,
    /// `+labels`.
    pub labels_added: u64,
    /// `-labels`.
    pub labels_removed: u64,
    /// `+properties`.
    pub properties_set: u64,
    /// `-properties`.
    pub properties_removed: u64,
}

impl SideEffects {
    /// The counts under the names the TCK's side-effect tables use.
    pub fn named_counts(&self) -> [(&'static str, u64); 8] {
        [
            ("+nodes", self.nodes_created),
            ("-nodes", self.nodes_deleted),
            ("+relationships", self.relationships_created),
            ("-relationships", self.relationships_deleted),
            ("+labels", self.labels_added),
            ("-labels", self.labels_removed),
            ("+properties", self.properties_set),
            ("-properties", self.properties_removed),
        ]
    }
}

/// The rows of a successful statement.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryRows {
    /// Column names, in order.
    pub columns: Vec<String>,
    /// Rows, converted to TCK shape.
    pub rows: Vec<Vec<TckValue>>,
    /// What the statement changed.
    pub side_effects: SideEffects,
}

/// Where in a statement's life an error came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailurePhase {
    /// Parsing, checking or planning (`QueryError::Compile`).
    Compile,
    /// Any other engine error while executing.
    Runtime,
    /// A resource bound (the timeout included) stopped the statement; never the error a
    /// scenario expects.
    LimitExceeded,
    /// The runner could not hand the statement over (e.g. a parameter it cannot convert).
    Harness,
}

/// An error of one statement.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineFailure {
    /// When it happened.
    pub phase: FailurePhase,
    /// The engine's message.
    pub message: String,
}

/// The answer to one statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// It ran.
    Rows(QueryRows),
    /// It failed.
    Failure(EngineFailure),
}

/// A graph database the runner can send statements to; one per scenario.
pub trait Backend {
    /// Runs one auto-committed statement with parameters.
    fn execute(&mut self, query: &str, parameters: &BTreeMap<String, TckValue>) -> Outcome;
}

/// Makes a backend over an empty graph stored in the given (empty) folder.
pub type BackendFactory = dyn Fn(&Path) -> Result<Box<dyn Backend>, String> + Sync;

/// Converts an engine value into TCK shape, reading graph elements through `graph`.
pub fn tck_value_from_engine(value: &Value, graph: &dyn PropertyAccess) -> TckValue {
    match value {
        Value::Null => TckValue::Null,
        Value::Bool(value) => TckValue::Boolean(*value),
        Value::Int(value) => TckValue::Integer(*value),
        Value::Float(value) => TckValue::Float(*value),
        Value::String(text) => TckValue::String(text.clone()),
        // The TCK writes expected temporal values as quoted strings and compares a
        // result's temporal values by their string form.
        Value::Temporal(temporal) => TckValue::String(temporal.to_string()),
        Value::List(elements) => TckValue::List(
            elements
                .iter()
                .map(|element| tck_value_from_engine(element, graph))
                .collect(),
        ),
        Value::Map(entries) => TckValue::Map(tck_map_from_engine(entries, graph)),
        Value::Node(node) => TckValue::Node(tck_node_from_engine(*node, graph)),
        Value::Rel(relationship) => {
            TckValue::Relationship(tck_relationship_from_engine(*relationship, graph))
        }
        Value::Path { nodes, rels } => TckValue::Path(tck_path_from_engine(nodes, rels, graph)),
    }
}

/// Converts a map or property map, entry by entry.
fn tck_map_from_engine(
    entries: &BTreeMap<String, Value>,
    graph: &dyn PropertyAccess,
) -> BTreeMap<String, TckValue> {
    entries
        .iter()
        .map(|(key, value)| (key.clone(), tck_value_from_engine(value, graph)))
        .collect()
}

/// A node as the TCK shows it: labels and properties.
fn tck_node_from_engine(node: u32, graph: &dyn PropertyAccess) -> TckNode {
    TckNode {
        labels: graph.node_labels(node).into_iter().collect(),
        properties: tck_map_from_engine(&graph.node_properties(node), graph),
    }
}

/// A relationship as the TCK shows it: type and properties.
fn tck_relationship_from_engine(relationship: u32, graph: &dyn PropertyAccess) -> TckRelationship {
    TckRelationship {
        relationship_type: graph.rel_type(relationship),
        properties: tck_map_from_engine(&graph.rel_properties(relationship), graph),
    }
}

/// A path's direction per step comes from the relationship's stored endpoints: it points
/// forward when it starts at the node before it on the path.
fn tck_path_from_engine(
    nodes: &[u32],
    relationships: &[u32],
    graph: &dyn PropertyAccess,
) -> TckPath {
    let start = nodes
        .first()
        .copied()
        .map_or_else(TckNode::default, |node| tck_node_from_engine(node, graph));
    let steps = relationships
        .iter()
        .zip(nodes.windows(2))
        .map(|(relationship, pair)| {
            let (relationship_start, _) = graph.rel_endpoints(*relationship);
            PathStep {
                relationship: tck_relationship_from_engine(*relationship, graph),
                direction: if relationship_start == pair[0] {
                    Direction::Forward
                } else {
                    Direction::Backward
                },
                node: tck_node_from_engine(pair[1], graph),
            }
        })
        .collect();
    TckPath { start, steps }
}

/// Converts a TCK parameter into an engine value; graph elements cannot be parameters.
pub fn engine_value_from_tck(value: &TckValue) -> Result<Value, String> {
    Ok(match value {
        TckValue::Null => Value::Null,
        TckValue::Boolean(value) => Value::Bool(*value),
        TckValue::Integer(value) => Value::Int(*value),
        TckValue::Float(value) => Value::Float(*value),
        TckValue::String(text) => Value::String(text.clone()),
        TckValue::List(elements) => Value::List(
            elements
                .iter()
                .map(engine_value_from_tck)
                .collect::<Result<_, _>>()?,
        ),
        TckValue::Map(entries) => Value::Map(engine_parameters_from_tck(entries)?),
        TckValue::Node(_) | TckValue::Relationship(_) | TckValue::Path(_) => {
            return Err(format!("a graph element cannot be a parameter: {value}"));
        }
    })
}

/// Converts a whole parameter map.
pub fn engine_parameters_from_tck(
    parameters: &BTreeMap<String, TckValue>,
) -> Result<BTreeMap<String, Value>, String> {
    parameters
        .iter()
        .map(|(name, value)| Ok((name.clone(), engine_value_from_tck(value)?)))
        .collect()
}

/// Sorts an engine error into the phase the TCK asks about: compile errors are
/// `QueryError::Compile` (parse, check, plan); a bound stopping the query is kept apart so
/// a timeout never passes for an expected runtime error; everything else is runtime.
pub fn engine_failure_from_error(error: &QueryError) -> EngineFailure {
    let phase = match error {
        QueryError::Compile { .. } => FailurePhase::Compile,
        QueryError::LimitExceeded { .. } => FailurePhase::LimitExceeded,
        _ => FailurePhase::Runtime,
    };
    EngineFailure {
        phase,
        message: error.to_string(),
    }
}

pub use writable_database_adapter::engine_backend_factory;

mod writable_database_adapter {
    use super::*;
    use batho_engine::query::{Limits, QueryOptions, WritableDatabase};
    use std::time::Duration;

    /// Longest a single statement may run, so one scenario cannot hang the suite.
    const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

    /// The backend over the real engine: a `WritableDatabase` per scenario.
    pub fn engine_backend_factory() -> Box<BackendFactory> {
        Box::new(|folder: &Path| {
            WritableDatabaseBackend::create(folder)
                .map(|backend| Box::new(backend) as Box<dyn Backend>)
        })
    }

    /// A fresh writable graph per scenario.
    pub struct WritableDatabaseBackend {
        database: WritableDatabase,
        options: QueryOptions,
    }

    impl WritableDatabaseBackend {
        /// Creates the empty graph in `folder`.
        pub fn create(folder: &Path) -> Result<Self, String> {
            let database = WritableDatabase::create(folder)
                .map_err(|error| format!("cannot create a writable graph: {error}"))?;
            let options = QueryOptions {
                limits: Limits {
                    timeout: Some(STATEMENT_TIMEOUT),
                    ..Limits::default()
                },
                ..QueryOptions::default()
            };
            Ok(WritableDatabaseBackend { database, options })
        }
    }

    impl Backend for WritableDatabaseBackend {
        fn execute(&mut self, query: &str, parameters: &BTreeMap<String, TckValue>) -> Outcome {
            let parameters = match engine_parameters_from_tck(parameters) {
                Ok(parameters) => parameters,
                Err(message) => {
                    return Outcome::Failure(EngineFailure {
                        phase: FailurePhase::Harness,
                        message,
                    });
                }
            };
            let result = match self
                .database
                .execute_with(query, &parameters, &self.options)
            {
                Ok(result) => result,
                Err(error) => return Outcome::Failure(engine_failure_from_error(&error)),
            };
            if let Some(bound) = result.truncated {
                return Outcome::Failure(EngineFailure {
                    phase: FailurePhase::LimitExceeded,
                    message: bound.to_string(),
                });
            }
            let graph = self.database.graph();
            let rows = result
                .rows
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|value| tck_value_from_engine(value, &graph))
                        .collect()
                })
                .collect();
            let updates = result.updates;
            Outcome::Rows(QueryRows {
                columns: result.columns.clone(),
                rows,
                side_effects: SideEffects {
                    nodes_created: updates.nodes_created,
                    nodes_deleted: updates.nodes_deleted,
                    relationships_created: updates.relationships_created,
                    relationships_deleted: updates.relationships_deleted,
                    labels_added: updates.labels_added,
                    labels_removed: updates.labels_removed,
                    properties_set: updates.properties_set,
                    properties_removed: updates.properties_removed,
                },
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::parse_tck_value;

    /// A graph of two nodes and one relationship `(0:A {name: 'a'})-[0:T {w: 1.5}]->(1)`.
    struct TinyGraph;

    impl PropertyAccess for TinyGraph {
        fn node_prop(&self, node: u32, key: &str) -> Value {
            self.node_properties(node)
                .remove(key)
                .unwrap_or(Value::Null)
        }
        fn rel_prop(&self, relationship: u32, key: &str) -> Value {
            self.rel_properties(relationship)
                .remove(key)
                .unwrap_or(Value::Null)
        }
        fn node_labels(&self, node: u32) -> Vec<String> {
            if node == 0 {
                vec!["B".into(), "A".into()]
            } else {
                vec![]
            }
        }
        fn rel_type(&self, _relationship: u32) -> String {
            "T".into()
        }
        fn rel_endpoints(&self, _relationship: u32) -> (u32, u32) {
            (0, 1)
        }
        fn node_properties(&self, node: u32) -> BTreeMap<String, Value> {
            if node == 0 {
                BTreeMap::from([("name".to_string(), Value::String("a".into()))])
            } else {
                BTreeMap::new()
            }
        }
        fn rel_properties(&self, _relationship: u32) -> BTreeMap<String, Value> {
            BTreeMap::from([("w".to_string(), Value::Float(1.5))])
        }
    }

    fn converted(value: Value) -> TckValue {
        tck_value_from_engine(&value, &TinyGraph)
    }

    fn notation(text: &str) -> TckValue {
        parse_tck_value(text).expect("valid notation")
    }

    #[test]
    fn graph_elements_convert_to_what_the_tck_shows() {
        assert_eq!(converted(Value::Node(0)), notation("(:A:B {name: 'a'})"));
        assert_eq!(converted(Value::Node(1)), notation("()"));
        assert_eq!(converted(Value::Rel(0)), notation("[:T {w: 1.5}]"));
        assert_eq!(
            converted(Value::List(vec![
                Value::Int(1),
                Value::Null,
                Value::Node(1)
            ])),
            notation("[1, null, ()]")
        );
    }

    #[test]
    fn path_steps_point_along_or_against_the_relationship() {
        let forward = Value::Path {
            nodes: vec![0, 1],
            rels: vec![0],
        };
        assert_eq!(
            converted(forward),
            notation("<(:A:B {name: 'a'})-[:T {w: 1.5}]->()>")
        );
        let backward = Value::Path {
            nodes: vec![1, 0],
            rels: vec![0],
        };
        assert_eq!(
            converted(backward),
            notation("<()<-[:T {w: 1.5}]-(:A:B {name: 'a'})>")
        );
        let single = Value::Path {
            nodes: vec![1],
            rels: vec![],
        };
        assert_eq!(converted(single), notation("<()>"));
    }

    #[test]
    fn parameters_convert_except_graph_elements() {
        let parameters = BTreeMap::from([
            ("list".to_string(), notation("[1, 2.5, 'x', {k: null}]")),
            ("flag".to_string(), notation("true")),
        ]);
        let converted = engine_parameters_from_tck(&parameters).expect("converts");
        assert_eq!(converted["flag"], Value::Bool(true));
        assert_eq!(
            converted["list"],
            Value::List(vec![
                Value::Int(1),
                Value::Float(2.5),
                Value::String("x".into()),
                Value::Map(BTreeMap::from([("k".to_string(), Value::Null)])),
            ])
        );
        assert!(engine_value_from_tck(&notation("[(:A)]")).is_err());
    }

    #[test]
    fn limits_are_not_runtime_errors() {
        let limit = QueryError::LimitExceeded {
            bound: batho_engine::query::Bound::Timeout {
                limit: std::time::Duration::from_secs(1),
            },
        };
        assert_eq!(
            engine_failure_from_error(&limit).phase,
            FailurePhase::LimitExceeded
        );
        let unsupported = QueryError::Unsupported {
            message: "no".into(),
        };
        assert_eq!(
            engine_failure_from_error(&unsupported).phase,
            FailurePhase::Runtime
        );
        let compile = QueryError::Compile {
            diagnostics: vec![],
        };
        assert_eq!(
            engine_failure_from_error(&compile).phase,
            FailurePhase::Compile
        );
    }
}
