//! Property-index seeks on writable graphs: `MATCH (n:Label) WHERE n.key = expr` (and
//! `(n:Label {key: expr})`) look the nodes up in the index on `:Label(key)` when there is
//! one, instead of scanning the label. The predicate stays above the seek, so the seek
//! only has to narrow; it never decides alone.

use batho_lang::Value;
use batho_lang::ast::{BinaryOp, Expr, ExprKind};

use super::exec::{BoxOp, Ctx, ExecResult, Operator, Row};
use super::topology::Topology;
use super::writable_access::to_stored;
use batho_storage::session::IndexHits;

/// The `var.key = expr` conjunct of `predicate` whose key has an index on `label`, with
/// `expr` not reading `var` itself: the key and the value expression.
pub(crate) fn indexed_equality<'p>(
    topology: &Topology<'_>,
    predicate: &'p Expr,
    var: &str,
    label: &str,
) -> Option<(String, &'p Expr)> {
    let Topology::Writable(state) = topology else {
        return None;
    };
    let graph = &state.borrow().graph;
    let mut pending = vec![predicate];
    while let Some(e) = pending.pop() {
        match &e.kind {
            ExprKind::Binary(BinaryOp::And, a, b) => {
                pending.push(a);
                pending.push(b);
            }
            ExprKind::Binary(BinaryOp::Eq, a, b) => {
                for (property, value) in [(a, b), (b, a)] {
                    if let ExprKind::Property(base, key) = &property.kind
                        && matches!(&base.kind, ExprKind::Variable(v) if v == var)
                        && !value.variables().iter().any(|v| v == var)
                        && graph.has_index(label, &key.name)
                    {
                        return Some((key.name.clone(), value.as_ref()));
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// For each input row, the nodes of `label` whose `key` equals `value`, from the index.
pub(crate) struct IndexSeek<'a> {
    pub(crate) input: BoxOp<'a>,
    pub(crate) label: String,
    pub(crate) key: String,
    pub(crate) value: Expr,
    pub(crate) cur: Option<(Row, IndexHits)>,
}

/// The nodes an index gives for `value` (none for a value that can equal nothing).
pub(crate) fn lookup(
    topology: &Topology<'_>,
    label: &str,
    key: &str,
    value: &Value,
) -> Option<IndexHits> {
    let Topology::Writable(state) = topology else {
        return None;
    };
    let stored = match to_stored(value) {
        Ok(stored) => stored,
        // A node or a path equals no property value.
        Err(_) => return Some(IndexHits::Empty),
    };
    state.borrow().graph.index_hits(label, key, &stored)
}

impl<'a> Operator<'a> for IndexSeek<'a> {
    fn open(&mut self, ctx: &Ctx<'a>, arg: &[Value]) -> ExecResult<()> {
        self.cur = None;
        self.input.open(ctx, arg)
    }

    fn next(&mut self, ctx: &Ctx<'a>) -> ExecResult<Option<Row>> {
        loop {
            if let Some((row, nodes)) = &mut self.cur
                && let Some(n) = nodes.next()
            {
                let mut out = super::exec::last_or_clone(row, nodes.len(), 1);
                out.push(Value::Node(n));
                return Ok(Some(out));
            }
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            let value = ctx.eval(&self.value, &row)?;
            let found =
                lookup(&ctx.topology, &self.label, &self.key, &value).unwrap_or(IndexHits::Empty);
            ctx.tick(1 + found.len() as u64)?;
            self.cur = Some((row, found));
        }
    }
}
