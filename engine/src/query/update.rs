//! The update clauses on writable graphs: CREATE, SET, REMOVE, DELETE (MERGE is in
//! `merge.rs`).
//!
//! Each update operator is eager: it pulls every input row before it changes anything,
//! then applies its clause row by row, in order. So a clause's reads never see its own
//! writes, and the next clause sees all of them: the order openCypher defines. Every
//! change goes through [`apply`], which logs it in the statement's journal (so a failing
//! statement is undone whole).

use std::cell::RefCell;

use batho_lang::ast::{
    Direction, Expr, ExprKind, NodePattern, PatternPart, RelPattern, RemoveItem, SetItem, Span,
};
use batho_lang::{EvalError, Value};
use batho_storage::session::{Change, PropValue};

use super::exec::{BoxOp, Ctx, ExecError, ExecResult, Operator, Row};
use super::topology::Topology;
use super::writable_access::{WritableState, into_stored, to_stored};

/// The writable graph a statement changes.
pub(crate) fn state<'a>(ctx: &Ctx<'a>) -> ExecResult<&'a RefCell<WritableState>> {
    match ctx.topology {
        Topology::Writable(state) => Ok(state),
        Topology::Code(_) => Err(ExecError::Unsupported(
            "code-graph artifacts are read-only".into(),
        )),
    }
}

/// Applies one change, logged for commit or rollback (what a statement changed in all is
/// counted from the journal when it ends).
pub(crate) fn apply(ctx: &Ctx<'_>, change: Change) -> ExecResult<()> {
    let state = state(ctx)?;
    let mut guard = state.borrow_mut();
    let WritableState { graph, journal } = &mut *guard;
    graph
        .apply_logged(change, journal)
        .map_err(|e| ExecError::Unsupported(format!("internal update error: {e}")))
}

fn update_error(message: String, span: Span) -> ExecError {
    ExecError::Eval(EvalError::Type { message, span })
}

/// A clause applied to rows, eagerly.
pub(crate) trait ClauseUpdate {
    /// Applies the clause to one input row (with the operator's columns) and appends the
    /// rows it passes on to `out`.
    fn apply_row(&mut self, ctx: &Ctx<'_>, row: Row, out: &mut Vec<Row>) -> ExecResult<()>;

    /// Runs after the last row.
    fn finish(&mut self, _ctx: &Ctx<'_>) -> ExecResult<()> {
        Ok(())
    }
}

/// Pulls every input row, applies the clause to each in order, then streams the results.
///
/// The written rows are held until they are read even when nothing reads them (an update
/// that ends a statement): dropping each as soon as it was written took fewer
/// instructions (a bulk load's 480 M -> 454 M) but more time, 1 M nodes in 5.0-5.9 s
/// against 3.3-3.7 s in three alternating runs, as the streaming CREATE before it did.
/// Why is not measured; glibc's allocator handing the freed rows' blocks to the graph's
/// own records is a guess.
pub(crate) struct Eager<'a, U> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) update: U,
    pub(crate) out: Option<std::vec::IntoIter<Row>>,
}

impl<'a, U> Eager<'a, U> {
    pub(crate) fn new(input: BoxOp<'a>, update: U) -> Self {
        Eager {
            input,
            update,
            out: None,
        }
    }
}

impl<'a, U: ClauseUpdate> Operator<'a> for Eager<'a, U> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.out = None;
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        if self.out.is_none() {
            let mut rows = Vec::new();
            while let Some(row) = self.input.next(ctx)? {
                ctx.hold_row(&row)?;
                rows.push(row);
            }
            let mut out = Vec::with_capacity(rows.len());
            for row in rows {
                ctx.tick(1)?;
                self.update.apply_row(ctx, row, &mut out)?;
            }
            self.update.finish(ctx)?;
            self.out = Some(out.into_iter());
        }
        Ok(self.out.as_mut().and_then(Iterator::next))
    }
}

/// The columns a pattern adds to `input` (path variable, nodes, relationships, in the
/// order the logical plan lists them).
pub(crate) fn pattern_columns(input: &[String], parts: &[PatternPart]) -> Vec<String> {
    let mut cols = input.to_vec();
    let mut push = |name: &str| {
        if !cols.iter().any(|c| c == name) {
            cols.push(name.to_string());
        }
    };
    for part in parts {
        if let Some(v) = &part.variable {
            push(&v.name);
        }
        for node in part.element.nodes() {
            if let Some(v) = &node.variable {
                push(&v.name);
            }
        }
        for (rel, _) in &part.element.chain {
            if let Some(v) = &rel.variable {
                push(&v.name);
            }
        }
    }
    cols
}

/// The stored properties of a pattern's `{...}` map, nulls left out.
pub(crate) fn pattern_properties(
    ctx: &Ctx<'_>,
    properties: Option<&Expr>,
    row: &[Value],
) -> ExecResult<Vec<(String, PropValue)>> {
    let Some(expr) = properties else {
        return Ok(Vec::new());
    };
    if let ExprKind::Map(entries) = &expr.kind {
        // A literal map (`{id: r.id, name: r.name}`, its keys distinct: the checker refuses
        // a repeated one): each entry evaluated and stored straight away, in key order as
        // the map would give them, without building the map first (a bulk CREATE built
        // and dropped one per row).
        let mut stored = Vec::with_capacity(entries.len());
        for (key, value) in entries {
            let value = ctx.eval(value, row)?;
            if !value.is_null() {
                let value = into_stored(value).map_err(|m| update_error(m, expr.span))?;
                stored.push((key.name.clone(), value));
            }
        }
        stored.sort_by(|a, b| a.0.cmp(&b.0));
        return Ok(stored);
    }
    match ctx.eval(expr, row)? {
        Value::Map(entries) => entries
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| Ok((k, into_stored(v).map_err(|m| update_error(m, expr.span))?)))
            .collect(),
        Value::Null => Ok(Vec::new()),
        other => Err(update_error(
            format!("properties must be a map, got {}", other.type_name()),
            expr.span,
        )),
    }
}

/// Where a column sits.
pub(crate) fn column(cols: &[String], name: &str) -> ExecResult<usize> {
    cols.iter().position(|c| c == name).ok_or_else(|| {
        ExecError::Unsupported(format!("internal planner error: no column `{name}`"))
    })
}

/// The node a pattern's node stands for in `row`: the bound one, or a new one created
/// with its labels and properties (and bound).
pub(crate) fn node_for(
    ctx: &Ctx<'_>,
    node: &NodePattern,
    cols: &[String],
    row: &mut Row,
) -> ExecResult<u32> {
    if let Some(v) = &node.variable {
        let at = column(cols, &v.name)?;
        match &row[at] {
            Value::Node(n) => return Ok(*n),
            Value::Null => {}
            other => {
                return Err(update_error(
                    format!("`{}` is {}, not a node", v.name, other.type_name()),
                    v.span,
                ));
            }
        }
    }
    let properties = pattern_properties(ctx, node.properties.as_ref(), row)?;
    let id = state(ctx)?.borrow().graph.node_id_bound();
    let labels = node.labels.iter().map(|l| l.name.clone()).collect();
    apply(
        ctx,
        Change::CreateNode {
            id,
            labels,
            properties,
        },
    )?;
    if let Some(v) = &node.variable {
        row[column(cols, &v.name)?] = Value::Node(id);
    }
    Ok(id)
}

/// Creates the relationship of `rel` between `left` and `right` (in pattern order) and
/// binds it.
pub(crate) fn create_relationship(
    ctx: &Ctx<'_>,
    rel: &RelPattern,
    (left, right): (u32, u32),
    cols: &[String],
    row: &mut Row,
) -> ExecResult<u32> {
    let [rel_type] = rel.types.as_slice() else {
        return Err(update_error(
            "a created relationship needs exactly one type".into(),
            rel.span,
        ));
    };
    let (start, end) = match rel.direction {
        Direction::Incoming => (right, left),
        // An undirected pattern in MERGE creates its relationship left to right.
        Direction::Outgoing | Direction::Both => (left, right),
    };
    let properties = pattern_properties(ctx, rel.properties.as_ref(), row)?;
    let id = state(ctx)?.borrow().graph.relationship_id_bound();
    apply(
        ctx,
        Change::CreateRelationship {
            id,
            rel_type: rel_type.name.clone(),
            start,
            end,
            properties,
        },
    )?;
    if let Some(v) = &rel.variable {
        row[column(cols, &v.name)?] = Value::Rel(id);
    }
    Ok(id)
}

/// Creates what `part` describes, reusing bound nodes, and binds its variables.
pub(crate) fn create_part(
    ctx: &Ctx<'_>,
    part: &PatternPart,
    cols: &[String],
    row: &mut Row,
) -> ExecResult<()> {
    let mut current = node_for(ctx, &part.element.start, cols, row)?;
    // The path is collected only when a variable names it: two vectors grown per row
    // were 2 % of a bulk load.
    let mut path = part.variable.as_ref().map(|_| (vec![current], Vec::new()));
    for (rel, node) in &part.element.chain {
        let next = node_for(ctx, node, cols, row)?;
        let rel = create_relationship(ctx, rel, (current, next), cols, row)?;
        if let Some((nodes, rels)) = &mut path {
            rels.push(rel);
            nodes.push(next);
        }
        current = next;
    }
    if let (Some(v), Some((nodes, rels))) = (&part.variable, path) {
        row[column(cols, &v.name)?] = Value::Path { nodes, rels };
    }
    Ok(())
}

/// CREATE.
pub(crate) struct CreateClause {
    pub(crate) input_cols: usize,
    pub(crate) cols: Vec<String>,
    pub(crate) pattern: Vec<PatternPart>,
}

impl ClauseUpdate for CreateClause {
    fn apply_row(&mut self, ctx: &Ctx<'_>, mut row: Row, out: &mut Vec<Row>) -> ExecResult<()> {
        row.resize(self.cols.len().max(self.input_cols), Value::Null);
        for part in &self.pattern {
            create_part(ctx, part, &self.cols, &mut row)?;
        }
        out.push(row);
        Ok(())
    }
}

/// What a SET or REMOVE item targets.
enum Target {
    Node(u32),
    Relationship(u32),
}

fn target(
    ctx: &Ctx<'_>,
    variable: &batho_lang::ast::Ident,
    cols: &[String],
    row: &[Value],
) -> ExecResult<Option<Target>> {
    match &row[column(cols, &variable.name)?] {
        Value::Node(n) => Ok(Some(Target::Node(*n))),
        Value::Rel(r) => Ok(Some(Target::Relationship(*r))),
        // SET on null (an OPTIONAL MATCH that found nothing) does nothing.
        Value::Null => Ok(None),
        other => {
            let _ = ctx;
            Err(update_error(
                format!(
                    "`{}` is {}, not a node or relationship",
                    variable.name,
                    other.type_name()
                ),
                variable.span,
            ))
        }
    }
}

fn set_property(
    ctx: &Ctx<'_>,
    target: &Target,
    key: &str,
    value: Option<PropValue>,
) -> ExecResult<()> {
    let live = {
        let graph = &state(ctx)?.borrow().graph;
        match target {
            Target::Node(n) => graph.has_node(*n),
            Target::Relationship(r) => graph.has_relationship(*r),
        }
    };
    if !live {
        // Deleted earlier in this statement: nothing to set.
        return Ok(());
    }
    let key = key.to_string();
    apply(
        ctx,
        match *target {
            Target::Node(id) => Change::SetNodeProperty { id, key, value },
            Target::Relationship(id) => Change::SetRelationshipProperty { id, key, value },
        },
    )
}

fn current_keys(ctx: &Ctx<'_>, target: &Target) -> ExecResult<Vec<String>> {
    let graph = &state(ctx)?.borrow().graph;
    Ok(match target {
        Target::Node(n) => graph
            .node_properties(*n)
            .map(|(k, _)| k.to_string())
            .collect(),
        Target::Relationship(r) => graph
            .relationship_properties(*r)
            .map(|(k, _)| k.to_string())
            .collect(),
    })
}

/// The properties a `=` or `+=` right-hand side stands for: a map, or an entity's.
fn map_of(ctx: &Ctx<'_>, value: Value, span: Span) -> ExecResult<Vec<(String, Value)>> {
    let graph = ctx.eval.graph();
    match value {
        Value::Map(entries) => Ok(entries.into_iter().collect()),
        Value::Node(n) => Ok(graph.node_properties(n).into_iter().collect()),
        Value::Rel(r) => Ok(graph.rel_properties(r).into_iter().collect()),
        Value::Null => Ok(Vec::new()),
        other => Err(update_error(
            format!("expected a map of properties, got {}", other.type_name()),
            span,
        )),
    }
}

fn stored_or_remove(value: &Value, span: Span) -> ExecResult<Option<PropValue>> {
    if value.is_null() {
        return Ok(None);
    }
    to_stored(value)
        .map(Some)
        .map_err(|m| update_error(m, span))
}

/// Applies one SET item to `row`.
pub(crate) fn apply_set_item(
    ctx: &Ctx<'_>,
    item: &SetItem,
    cols: &[String],
    row: &[Value],
) -> ExecResult<()> {
    match item {
        SetItem::Property {
            variable,
            key,
            value,
        } => {
            let value = ctx.eval(value, row)?;
            let stored = stored_or_remove(&value, key.span)?;
            if let Some(target) = target(ctx, variable, cols, row)? {
                set_property(ctx, &target, &key.name, stored)?;
            }
        }
        SetItem::Merge { variable, value } | SetItem::Replace { variable, value } => {
            let span = value.span;
            let entries = map_of(ctx, ctx.eval(value, row)?, span)?;
            let Some(target) = target(ctx, variable, cols, row)? else {
                return Ok(());
            };
            if matches!(item, SetItem::Replace { .. }) {
                for key in current_keys(ctx, &target)? {
                    if !entries.iter().any(|(k, v)| *k == key && !v.is_null()) {
                        set_property(ctx, &target, &key, None)?;
                    }
                }
            }
            for (key, value) in &entries {
                set_property(ctx, &target, key, stored_or_remove(value, span)?)?;
            }
        }
        SetItem::Labels { variable, labels } => match target(ctx, variable, cols, row)? {
            Some(Target::Node(id)) => {
                for label in labels {
                    apply(
                        ctx,
                        Change::AddLabel {
                            id,
                            label: label.name.clone(),
                        },
                    )?;
                }
            }
            Some(Target::Relationship(_)) => {
                return Err(update_error("labels belong to nodes".into(), variable.span));
            }
            None => {}
        },
    }
    Ok(())
}

/// SET.
pub(crate) struct SetClause {
    pub(crate) cols: Vec<String>,
    pub(crate) items: Vec<SetItem>,
}

impl ClauseUpdate for SetClause {
    fn apply_row(&mut self, ctx: &Ctx<'_>, row: Row, out: &mut Vec<Row>) -> ExecResult<()> {
        for item in &self.items {
            apply_set_item(ctx, item, &self.cols, &row)?;
        }
        out.push(row);
        Ok(())
    }
}

/// REMOVE.
pub(crate) struct RemoveClause {
    pub(crate) cols: Vec<String>,
    pub(crate) items: Vec<RemoveItem>,
}

impl ClauseUpdate for RemoveClause {
    fn apply_row(&mut self, ctx: &Ctx<'_>, row: Row, out: &mut Vec<Row>) -> ExecResult<()> {
        for item in &self.items {
            match item {
                RemoveItem::Property { variable, key } => {
                    if let Some(target) = target(ctx, variable, &self.cols, &row)? {
                        set_property(ctx, &target, &key.name, None)?;
                    }
                }
                RemoveItem::Labels { variable, labels } => {
                    if let Some(Target::Node(id)) = target(ctx, variable, &self.cols, &row)?
                        && state(ctx)?.borrow().graph.has_node(id)
                    {
                        for label in labels {
                            apply(
                                ctx,
                                Change::RemoveLabel {
                                    id,
                                    label: label.name.clone(),
                                },
                            )?;
                        }
                    }
                }
            }
        }
        out.push(row);
        Ok(())
    }
}

/// DELETE and DETACH DELETE: gathers what every row names, then deletes relationships
/// before nodes, so `DELETE n, r` works in any order; a node left with relationships is
/// an error unless DETACH.
pub(crate) struct DeleteClause {
    pub(crate) exprs: Vec<Expr>,
    pub(crate) detach: bool,
    pub(crate) nodes: Vec<(u32, Span)>,
    pub(crate) relationships: Vec<u32>,
}

impl DeleteClause {
    fn gather(&mut self, value: Value, span: Span) -> ExecResult<()> {
        match value {
            Value::Null => {}
            Value::Node(n) => self.nodes.push((n, span)),
            Value::Rel(r) => self.relationships.push(r),
            Value::Path { nodes, rels } => {
                self.nodes.extend(nodes.into_iter().map(|n| (n, span)));
                self.relationships.extend(rels);
            }
            Value::List(items) => {
                for item in items {
                    self.gather(item, span)?;
                }
            }
            other => {
                return Err(update_error(
                    format!(
                        "DELETE expects a node, relationship or path, got {}",
                        other.type_name()
                    ),
                    span,
                ));
            }
        }
        Ok(())
    }
}

impl ClauseUpdate for DeleteClause {
    fn apply_row(&mut self, ctx: &Ctx<'_>, row: Row, out: &mut Vec<Row>) -> ExecResult<()> {
        for index in 0..self.exprs.len() {
            let expr = &self.exprs[index];
            let (value, span) = (ctx.eval(expr, &row)?, expr.span);
            self.gather(value, span)?;
        }
        out.push(row);
        Ok(())
    }

    fn finish(&mut self, ctx: &Ctx<'_>) -> ExecResult<()> {
        let state = state(ctx)?;
        let mut relationships = std::mem::take(&mut self.relationships);
        if self.detach {
            let graph = &state.borrow().graph;
            for &(n, _) in &self.nodes {
                relationships.extend_from_slice(graph.outgoing(n));
                relationships.extend_from_slice(graph.incoming(n));
            }
        }
        relationships.sort_unstable();
        relationships.dedup();
        for id in relationships {
            if state.borrow().graph.has_relationship(id) {
                apply(ctx, Change::DeleteRelationship { id })?;
            }
        }
        for (id, span) in std::mem::take(&mut self.nodes) {
            let attached = {
                let graph = &state.borrow().graph;
                if !graph.has_node(id) {
                    continue;
                }
                graph.outgoing(id).len() + graph.incoming(id).len()
            };
            if attached > 0 {
                return Err(ExecError::Eval(EvalError::Constraint {
                    message: format!(
                        "cannot delete node {id}: it still has {attached} relationship(s); \
                         delete them first or use DETACH DELETE"
                    ),
                    span,
                }));
            }
            apply(ctx, Change::DeleteNode { id })?;
        }
        Ok(())
    }
}
