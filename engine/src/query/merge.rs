//! MERGE on writable graphs: per input row, every match of the pattern (with the row's
//! bound variables fixed) gets the ON MATCH actions; when there is none, the pattern is
//! created and gets the ON CREATE actions. Rows are handled in order, each seeing what
//! the ones before created, so `UNWIND [1, 1] AS x MERGE ({v: x})` creates one node.

use batho_lang::ast::{Direction, Expr, NodePattern, PatternPart, RelPattern, SetItem, Span};
use batho_lang::{EvalError, Value};

use super::exec::{Ctx, ExecError, ExecResult, Row};
use super::expand::EdgeFilter;
use super::id_order::ScanOrder;
use super::update::{ClauseUpdate, apply_set_item, column, create_part};

/// MERGE.
pub(crate) struct MergeClause {
    pub(crate) input_cols: usize,
    pub(crate) cols: Vec<String>,
    pub(crate) part: PatternPart,
    pub(crate) on_create: Vec<SetItem>,
    pub(crate) on_match: Vec<SetItem>,
}

/// What a node of the pattern must be.
struct NodeWant {
    bound: Option<u32>,
    labels: Vec<String>,
    properties: Vec<(String, Value)>,
}

/// What a relationship of the pattern must be.
struct RelWant {
    bound: Option<u32>,
    type_names: Vec<String>,
    direction: Direction,
    properties: Vec<(String, Value)>,
}

/// One match: its nodes and relationships in pattern order.
type Match = (Vec<u32>, Vec<u32>);

fn merge_error(message: String, span: Span) -> ExecError {
    ExecError::Eval(EvalError::Constraint { message, span })
}

/// The properties a pattern's map requires; a null value can never be matched or
/// created, so it is an error, as openCypher specifies.
fn wanted_properties(
    ctx: &Ctx<'_>,
    properties: Option<&Expr>,
    row: &[Value],
) -> ExecResult<Vec<(String, Value)>> {
    let Some(expr) = properties else {
        return Ok(Vec::new());
    };
    match ctx.eval(expr, row)? {
        Value::Map(entries) => {
            if let Some((key, _)) = entries.iter().find(|(_, v)| v.is_null()) {
                return Err(merge_error(
                    format!("cannot merge using a null value for property `{key}`"),
                    expr.span,
                ));
            }
            Ok(entries.into_iter().collect())
        }
        other => Err(merge_error(
            format!("properties must be a map, got {}", other.type_name()),
            expr.span,
        )),
    }
}

fn bound_entity(
    cols: &[String],
    row: &[Value],
    name: Option<&batho_lang::ast::Ident>,
) -> ExecResult<Option<Value>> {
    let Some(ident) = name else {
        return Ok(None);
    };
    let value = &row[column(cols, &ident.name)?];
    match value {
        Value::Null => Ok(None),
        other => Ok(Some(other.clone())),
    }
}

impl MergeClause {
    fn node_want(
        &self,
        ctx: &Ctx<'_>,
        node: &NodePattern,
        row: &[Value],
        input: &[String],
    ) -> ExecResult<NodeWant> {
        let bound = match bound_entity(&self.cols, row, node.variable.as_ref())? {
            Some(Value::Node(n)) => Some(n),
            Some(other) => {
                return Err(merge_error(
                    format!("MERGE expects a node, got {}", other.type_name()),
                    node.span,
                ));
            }
            None if node
                .variable
                .as_ref()
                .is_some_and(|v| input.contains(&v.name)) =>
            {
                return Err(merge_error(
                    "cannot merge using a null node".into(),
                    node.span,
                ));
            }
            None => None,
        };
        Ok(NodeWant {
            bound,
            labels: node.labels.iter().map(|l| l.name.clone()).collect(),
            properties: wanted_properties(ctx, node.properties.as_ref(), row)?,
        })
    }

    fn rel_want(&self, ctx: &Ctx<'_>, rel: &RelPattern, row: &[Value]) -> ExecResult<RelWant> {
        let bound = match bound_entity(&self.cols, row, rel.variable.as_ref())? {
            Some(Value::Rel(r)) => Some(r),
            Some(other) => {
                return Err(merge_error(
                    format!("MERGE expects a relationship, got {}", other.type_name()),
                    rel.span,
                ));
            }
            None => None,
        };
        Ok(RelWant {
            bound,
            type_names: rel.types.iter().map(|t| t.name.clone()).collect(),
            direction: rel.direction,
            properties: wanted_properties(ctx, rel.properties.as_ref(), row)?,
        })
    }
}

fn properties_match(have: impl Fn(&str) -> Value, want: &[(String, Value)]) -> bool {
    want.iter().all(|(k, v)| have(k).equals(v) == Some(true))
}

fn node_matches(ctx: &Ctx<'_>, n: u32, want: &NodeWant) -> bool {
    let graph = ctx.eval.graph();
    if want.bound.is_some_and(|b| b != n) {
        return false;
    }
    let labels = graph.node_labels(n);
    want.labels.iter().all(|l| labels.contains(l))
        && properties_match(|k| graph.node_prop(n, k), &want.properties)
}

/// The nodes the first node of the pattern may be: from a property index on one of its
/// labels and keys when there is one, else its first label's nodes (or all).
fn start_candidates(ctx: &Ctx<'_>, want: &NodeWant) -> Vec<u32> {
    for label in &want.labels {
        for (key, value) in &want.properties {
            if let Some(found) = super::index_seek::lookup(&ctx.topology, label, key, value) {
                return found.collect();
            }
        }
    }
    ctx.topology
        .scan(&want.labels[..want.labels.len().min(1)], ScanOrder::Any)
        .collect()
}

/// Every match of the pattern, by depth-first search from the first node.
fn find_matches(ctx: &Ctx<'_>, nodes: &[NodeWant], rels: &[RelWant]) -> ExecResult<Vec<Match>> {
    let starts: Vec<u32> = match nodes[0].bound {
        Some(n) => vec![n],
        None => start_candidates(ctx, &nodes[0]),
    };
    let mut out = Vec::new();
    for start in starts {
        ctx.tick(1)?;
        if node_matches(ctx, start, &nodes[0]) {
            extend(ctx, nodes, rels, &mut (vec![start], Vec::new()), &mut out)?;
        }
    }
    Ok(out)
}

fn extend(
    ctx: &Ctx<'_>,
    nodes: &[NodeWant],
    rels: &[RelWant],
    path: &mut Match,
    out: &mut Vec<Match>,
) -> ExecResult<()> {
    let step = path.1.len();
    if step == rels.len() {
        out.push(path.clone());
        return Ok(());
    }
    let want = &rels[step];
    let filter = EdgeFilter {
        types: None,
        type_names: want.type_names.clone(),
        roles: Vec::new(),
    };
    let mut candidates = Vec::new();
    let current = *path.0.last().expect("a path starts with a node");
    ctx.topology
        .for_each_neighbor(current, want.direction, &filter, |rel, other| {
            candidates.push((rel, other));
        });
    ctx.tick(1 + candidates.len() as u64)?;
    let graph = ctx.eval.graph();
    for (rel, other) in candidates {
        let fits = !path.1.contains(&rel)
            && want.bound.is_none_or(|b| b == rel)
            && properties_match(|k| graph.rel_prop(rel, k), &want.properties)
            && node_matches(ctx, other, &nodes[step + 1]);
        if fits {
            path.0.push(other);
            path.1.push(rel);
            extend(ctx, nodes, rels, path, out)?;
            path.0.pop();
            path.1.pop();
        }
    }
    Ok(())
}

impl MergeClause {
    fn bind(&self, row: &mut Row, (nodes, rels): &Match) -> ExecResult<()> {
        for (pattern, &n) in self.part.element.nodes().zip(nodes) {
            if let Some(v) = &pattern.variable {
                row[column(&self.cols, &v.name)?] = Value::Node(n);
            }
        }
        for ((pattern, _), &r) in self.part.element.chain.iter().zip(rels) {
            if let Some(v) = &pattern.variable {
                row[column(&self.cols, &v.name)?] = Value::Rel(r);
            }
        }
        if let Some(v) = &self.part.variable {
            row[column(&self.cols, &v.name)?] = Value::Path {
                nodes: nodes.clone(),
                rels: rels.clone(),
            };
        }
        Ok(())
    }
}

impl ClauseUpdate for MergeClause {
    fn apply_row(&mut self, ctx: &Ctx<'_>, mut row: Row, out: &mut Vec<Row>) -> ExecResult<()> {
        row.resize(self.cols.len().max(self.input_cols), Value::Null);
        let input = &self.cols[..self.input_cols];
        let nodes = self
            .part
            .element
            .nodes()
            .map(|n| self.node_want(ctx, n, &row, input))
            .collect::<ExecResult<Vec<_>>>()?;
        let rels = self
            .part
            .element
            .chain
            .iter()
            .map(|(r, _)| self.rel_want(ctx, r, &row))
            .collect::<ExecResult<Vec<_>>>()?;
        let matches = find_matches(ctx, &nodes, &rels)?;
        if matches.is_empty() {
            create_part(ctx, &self.part, &self.cols, &mut row)?;
            for item in &self.on_create {
                apply_set_item(ctx, item, &self.cols, &row)?;
            }
            out.push(row);
            return Ok(());
        }
        let first = out.len();
        for found in &matches {
            let mut matched = row.clone();
            self.bind(&mut matched, found)?;
            out.push(matched);
        }
        // Actions run after every match is found, so they cannot change what matches.
        for matched in &out[first..] {
            for item in &self.on_match {
                apply_set_item(ctx, item, &self.cols, matched)?;
            }
        }
        Ok(())
    }
}
