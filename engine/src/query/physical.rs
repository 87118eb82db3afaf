//! Physical planning: maps each [`LogicalPlan`] operator onto an executable operator and
//! records, per operator, which access path it uses (for EXPLAIN).
//!
//! Choices made here: kind bitmaps for labelled scans; the sorted id/name indexes for
//! seeks; CSR adjacency filtered by relation type for expansions, with `has_role(r, …)`
//! conjuncts of a filter directly above pushed into the expansion as role bitmaps;
//! breadth-first search with a visited set for variable-length expansions whose paths are
//! never observed and whose endpoints are deduplicated above; top-k heaps for
//! `ORDER BY … LIMIT`. [`Flags::optimize`] off turns every choice into its naive
//! equivalent, which the differential tests compare against.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::exec::*;
use super::expand::*;
use super::id_order::{ScanOrder, id_ordered_scan};
use super::index_seek::{IndexSeek, indexed_equality};
use super::merge::MergeClause;
use super::topology::Topology;
use super::update::{CreateClause, DeleteClause, Eager, RemoveClause, SetClause, pattern_columns};
use batho_lang::Value;
use batho_lang::ast::{BinaryOp, Direction, Expr, ExprKind, Literal, Quantifier, Slot, SlotRef};
use batho_lang::bind::{bind, bind_all, bind_pattern_part, bind_set_items};
use batho_lang::eval::AggregateFunc;
use batho_lang::plan::{AggregateSpec, LogicalPlan, SeekKey, SortKey};
use batho_schema::{NodeKind, RelType, Roles};

/// Planner switches.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Flags {
    pub(crate) optimize: bool,
    pub(crate) profile: bool,
}

pub(crate) struct Builder<'a> {
    topology: Topology<'a>,
    flags: Flags,
    /// Physical notes per operator, in EXPLAIN (pre-order) order.
    pub(crate) notes: Vec<String>,
    /// PROFILE counters, same order.
    pub(crate) counters: Vec<Rc<Counter>>,
    endpoint_only: HashSet<usize>,
    /// How deep the operator being built is nested.
    depth: usize,
    /// Node scans (by plan address) a top-k above asked to yield in id order.
    id_order_wanted: HashMap<usize, ScanOrder>,
    /// Those of them that were built as asked (not replaced by an index seek).
    id_order_built: HashSet<usize>,
    /// The list of the plan's [`Plan::moved_parameter`](batho_lang::Plan), handed over
    /// by a caller that owns its parameters, for the `UNWIND` that reads it.
    moved_parameter: Option<(String, Value)>,
}

/// What [`Builder::make`] builds for one plan node: the operator, its columns and its
/// EXPLAIN note.
type Made<'a> = (BoxOp<'a>, Vec<String>, String);

pub(crate) struct Built<'a> {
    pub(crate) op: BoxOp<'a>,
    pub(crate) cols: Vec<String>,
}

fn internal(msg: String) -> ExecError {
    ExecError::Unsupported(format!("internal planner error: {msg}"))
}

fn pos(cols: &[String], name: &str) -> ExecResult<usize> {
    cols.iter()
        .position(|c| c == name)
        .ok_or_else(|| internal(format!("column `{name}` is not produced below its use")))
}

/// Sort keys bound against `cols`.
fn bound_keys(keys: &[SortKey], cols: &[String]) -> ExecResult<Vec<SortKey>> {
    keys.iter()
        .map(|key| {
            Ok(SortKey {
                expr: bind(&key.expr, cols)?,
                descending: key.descending,
            })
        })
        .collect()
}

fn addr(p: &LogicalPlan) -> usize {
    p as *const LogicalPlan as usize
}

fn kinds_of(labels: &[String]) -> Vec<NodeKind> {
    labels
        .iter()
        .filter_map(|l| NodeKind::from_name(l))
        .collect()
}

fn type_mask(types: &[String]) -> Option<u32> {
    if types.is_empty() {
        return None;
    }
    Some(
        types
            .iter()
            .filter_map(|t| RelType::from_name_or_alias(t))
            .fold(0u32, |m, t| m | (1u32 << u32::from(t.code().min(31)))),
    )
}

fn conjuncts(e: &Expr) -> Vec<&Expr> {
    match &e.kind {
        ExprKind::Binary(BinaryOp::And, a, b) => {
            let mut v = conjuncts(a);
            v.extend(conjuncts(b));
            v
        }
        _ => vec![e],
    }
}

/// The roles a predicate requires of relationship column `rel` through top-level
/// `has_role(rel, 'Name')` (or `… = true`) conjuncts.
fn required_roles(pred: &Expr, rel: &str) -> Vec<Roles> {
    let mut out = Vec::new();
    for c in conjuncts(pred) {
        let call = match &c.kind {
            ExprKind::Binary(BinaryOp::Eq, a, b)
                if matches!(b.kind, ExprKind::Literal(Literal::Bool(true))) =>
            {
                a.as_ref()
            }
            _ => c,
        };
        if let ExprKind::Call { name, args, .. } = &call.kind
            && name.name.eq_ignore_ascii_case("has_role")
            && let [a, b] = args.as_slice()
            && matches!(&a.kind, ExprKind::Variable(v) if v == rel)
            && let ExprKind::Literal(Literal::String(role)) = &b.kind
            && let Some(r) = Roles::from_name(role)
        {
            out.push(r);
        }
    }
    out
}

/// The hop condition of a filter over a shortest path binding `rel`: a conjunct
/// `all(x IN rel WHERE p)` whose `p` reads nothing but `x` (and parameters); several such
/// conjuncts are tested together.
fn hop_condition(predicate: &Expr, rel: &str) -> Option<HopCondition> {
    let mut tests = Vec::new();
    let mut variable: Option<String> = None;
    for conjunct in conjuncts(predicate) {
        let ExprKind::Quantifier {
            quantifier: Quantifier::All,
            variable: x,
            list,
            predicate: test,
        } = &conjunct.kind
        else {
            continue;
        };
        let over_rel = matches!(&list.kind, ExprKind::Variable(v) if v == rel);
        let reads_only_x = test.variables().iter().all(|v| v == &x.name);
        if !over_rel || !reads_only_x {
            continue;
        }
        // Conjuncts over another variable name stay in the filter only.
        match &variable {
            None => variable = Some(x.name.clone()),
            Some(first) if first != &x.name => continue,
            Some(_) => {}
        }
        tests.push((**test).clone());
    }
    let variable = variable?;
    let predicate = tests.into_iter().reduce(|a, b| {
        let span = a.span;
        Expr::new(
            ExprKind::Binary(BinaryOp::And, Box::new(a), Box::new(b)),
            span,
        )
    })?;
    // Evaluated on a one-column row: the relationship the search may cross.
    let predicate = bind(&predicate, std::slice::from_ref(&variable)).ok()?;
    Some(HopCondition { predicate })
}

/// Marks variable-length expansions that may run as a visited-set BFS: below a
/// `Distinct` (or an aggregation whose aggregates ignore duplicates) through only
/// `Project`/`Filter` operators that never read the relationship list (at least one
/// operator must drop it), directed, `min <= 1`, not `into`.
fn mark_endpoint_only(p: &LogicalPlan, out: &mut HashSet<usize>) {
    let start = match p {
        LogicalPlan::Distinct { input } => Some((input.as_ref(), HashSet::new(), false)),
        // Aggregates insensitive to duplicate rows (DISTINCT ones, min, max) behave
        // like a DISTINCT below them; the aggregation drops the relationship column.
        LogicalPlan::Aggregate {
            input,
            group_by,
            aggregates,
        } if aggregates.iter().all(|a| {
            (a.distinct && a.func != AggregateFunc::CountStar)
                || matches!(a.func, AggregateFunc::Min | AggregateFunc::Max)
        }) =>
        {
            let mut used: HashSet<String> = HashSet::new();
            for (e, _) in group_by {
                used.extend(e.variables());
            }
            for a in aggregates {
                if let Some(e) = &a.arg {
                    used.extend(e.variables());
                }
            }
            Some((input.as_ref(), used, true))
        }
        _ => None,
    };
    if let Some((input, mut used, mut projected)) = start {
        let mut cur = input;
        loop {
            match cur {
                LogicalPlan::Project { input, items } => {
                    projected = true;
                    for (e, _) in items {
                        used.extend(e.variables());
                    }
                    cur = input;
                }
                LogicalPlan::Filter { input, predicate } => {
                    used.extend(predicate.variables());
                    cur = input;
                }
                LogicalPlan::Expand {
                    rel,
                    length: Some(h),
                    into: false,
                    direction,
                    ..
                } if projected
                    && h.min <= 1
                    && *direction != Direction::Both
                    && !used.contains(rel) =>
                {
                    out.insert(addr(cur));
                    break;
                }
                _ => break,
            }
        }
    }
    for c in p.children() {
        mark_endpoint_only(c, out);
    }
}

impl<'a> Builder<'a> {
    pub(crate) fn new(topology: Topology<'a>, flags: Flags, root: &LogicalPlan) -> Self {
        let mut endpoint_only = HashSet::new();
        if flags.optimize {
            mark_endpoint_only(root, &mut endpoint_only);
        }
        Builder {
            topology,
            flags,
            notes: Vec::new(),
            counters: Vec::new(),
            endpoint_only,
            depth: 0,
            id_order_wanted: HashMap::new(),
            id_order_built: HashSet::new(),
            moved_parameter: None,
        }
    }

    /// Hands the builder the value of the plan's moved parameter (see
    /// [`Plan::moved_parameter`](batho_lang::Plan)): the `UNWIND` reading it takes it
    /// rather than copying it out of the parameters.
    pub(crate) fn with_moved_parameter(mut self, moved: Option<(String, Value)>) -> Self {
        self.moved_parameter = moved;
        self
    }

    /// Builds `lp`; `arg_cols` are the columns of the enclosing row its `Argument` sees.
    pub(crate) fn build(&mut self, lp: &LogicalPlan, arg_cols: &[String]) -> ExecResult<Built<'a>> {
        self.build_with(lp, arg_cols, Vec::new())
    }

    fn build_with(
        &mut self,
        lp: &LogicalPlan,
        arg_cols: &[String],
        roles: Vec<Roles>,
    ) -> ExecResult<Built<'a>> {
        // Building recurses once per operator, as running it will (see `StackGuard`).
        self.depth += 1;
        let built = stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            self.build_at_depth(lp, arg_cols, roles)
        });
        self.depth -= 1;
        let mut built = built?;
        if self.depth.is_multiple_of(STACK_GUARD_EVERY) {
            built.op = Box::new(StackGuard { inner: built.op });
        }
        Ok(built)
    }

    fn build_at_depth(
        &mut self,
        lp: &LogicalPlan,
        arg_cols: &[String],
        roles: Vec<Roles>,
    ) -> ExecResult<Built<'a>> {
        let me = self.notes.len();
        self.notes.push(String::new());
        let counter = Rc::new(Counter::default());
        self.counters.push(counter.clone());
        let (op, cols, note) = self.make(lp, arg_cols, roles)?;
        self.notes[me] = note;
        let op: BoxOp<'a> = if self.flags.profile {
            Box::new(Profiled { inner: op, counter })
        } else {
            op
        };
        Ok(Built { op, cols })
    }

    fn filter(&self, types: &[String], roles: &[Roles]) -> EdgeFilter<'a> {
        match self.topology.artifact() {
            Some(art) => EdgeFilter {
                types: type_mask(types),
                type_names: Vec::new(),
                roles: roles.iter().map(|r| art.edges_with_role(*r)).collect(),
            },
            // Writable graphs have no role bitmaps; the role filter itself stays above.
            None => EdgeFilter {
                types: None,
                type_names: types.to_vec(),
                roles: Vec::new(),
            },
        }
    }

    fn filter_note(types: &[String], roles: &[Roles]) -> String {
        let mut s = if types.is_empty() {
            "all types".to_string()
        } else {
            format!("type {}", types.join("|"))
        };
        for r in roles {
            s.push_str(&format!(
                ", role bitmap {}",
                r.names().collect::<Vec<_>>().join("")
            ));
        }
        s
    }

    /// The operator of one plan node, with its columns and its EXPLAIN note: a dispatch to
    /// the maker of each kind of operator (the impl block below).
    fn make(
        &mut self,
        lp: &LogicalPlan,
        arg_cols: &[String],
        roles: Vec<Roles>,
    ) -> ExecResult<Made<'a>> {
        match lp {
            LogicalPlan::Argument { columns } => self.make_argument(columns, arg_cols),
            LogicalPlan::NodeScan { .. } => self.make_node_scan(lp, arg_cols),
            LogicalPlan::NodeSeek { .. } => self.make_node_seek(lp, arg_cols),
            LogicalPlan::Expand { .. } => self.make_expand(lp, arg_cols, &roles),
            LogicalPlan::ShortestPath { .. } => self.shortest_path(lp, arg_cols, None),
            LogicalPlan::Filter { input, predicate } => {
                self.make_filter(input, predicate, arg_cols)
            }
            LogicalPlan::Project { input, items } => self.make_project(input, items, arg_cols),
            LogicalPlan::Aggregate { .. } => self.make_aggregate(lp, arg_cols),
            LogicalPlan::Distinct { input } => {
                let b = self.build(input, arg_cols)?;
                let op = Distinct {
                    input: b.op,
                    seen: HashSet::new(),
                };
                Ok((Box::new(op), b.cols, "hash set, streaming".to_string()))
            }
            LogicalPlan::Sort { input, keys } => {
                let b = self.build(input, arg_cols)?;
                let op = Sort {
                    input: b.op,
                    keys: bound_keys(keys, &b.cols)?,
                    out: Vec::new().into_iter(),
                };
                Ok((Box::new(op), b.cols, "full stable sort".to_string()))
            }
            LogicalPlan::TopK { input, keys, limit } => {
                self.make_top_k(input, keys, limit, arg_cols)
            }
            LogicalPlan::Skip { .. } | LogicalPlan::Limit { .. } => {
                self.make_skip_or_limit(lp, arg_cols)
            }
            LogicalPlan::Unwind { .. }
            | LogicalPlan::ProcedureCall { .. }
            | LogicalPlan::BindPath { .. } => self.make_row_extension(lp, arg_cols),
            LogicalPlan::Optional { .. } => self.make_optional(lp, arg_cols),
            LogicalPlan::CartesianProduct { .. } | LogicalPlan::HashJoin { .. } => {
                self.make_join(lp, arg_cols)
            }
            LogicalPlan::Create { .. }
            | LogicalPlan::Merge { .. }
            | LogicalPlan::SetProperties { .. }
            | LogicalPlan::Delete { .. }
            | LogicalPlan::Remove { .. } => self.make_update(lp, arg_cols),
        }
    }
}

/// The error of a maker handed a plan node of another kind: [`Builder::make`] never does,
/// and a query fails rather than the process.
fn misrouted(what: &str) -> ExecError {
    ExecError::Unsupported(format!(
        "internal: a plan node other than {what} reached its maker"
    ))
}

/// The makers [`Builder::make`] dispatches to, one per kind of operator.
impl<'a> Builder<'a> {
    fn make_argument(&mut self, columns: &[String], arg_cols: &[String]) -> ExecResult<Made<'a>> {
        let picks = columns
            .iter()
            .map(|c| pos(arg_cols, c))
            .collect::<ExecResult<Vec<_>>>()?;
        Ok((
            Box::new(Argument { picks, row: None }),
            columns.to_vec(),
            String::new(),
        ))
    }

    fn make_node_scan(&mut self, lp: &LogicalPlan, arg_cols: &[String]) -> ExecResult<Made<'a>> {
        let LogicalPlan::NodeScan {
            input, var, labels, ..
        } = lp
        else {
            return Err(misrouted("node scans"));
        };
        let b = self.build(input, arg_cols)?;
        let note = match (labels.is_empty(), self.topology) {
            (true, _) => "all nodes".to_string(),
            (false, Topology::Code(_)) => format!("kind bitmap {}", labels.join("|")),
            (false, Topology::Writable(_)) => format!("label bitmap {}", labels.join("|")),
        };
        let mut cols = b.cols;
        cols.push(var.clone());
        let order = match self.id_order_wanted.get(&addr(lp)) {
            Some(&order) => {
                self.id_order_built.insert(addr(lp));
                order
            }
            None => ScanOrder::Any,
        };
        let op = NodeScan {
            input: b.op,
            labels: labels.clone(),
            order,
            cur: None,
        };
        let note = match order {
            ScanOrder::Any => note,
            ScanOrder::Ascending => format!("{note}, ascending ids"),
            ScanOrder::Descending => format!("{note}, descending ids"),
        };
        Ok((Box::new(op), cols, note))
    }

    fn make_node_seek(&mut self, lp: &LogicalPlan, arg_cols: &[String]) -> ExecResult<Made<'a>> {
        let LogicalPlan::NodeSeek {
            input,
            var,
            key,
            value,
            labels,
        } = lp
        else {
            return Err(misrouted("node seeks"));
        };
        let opt = self.flags.optimize;
        let b = self.build(input, arg_cols)?;
        let kinds =
            (!labels.is_empty()).then(|| kinds_of(labels).into_iter().map(|k| k.code()).collect());
        let note = match (opt, key) {
            _ if self.topology.artifact().is_none() => {
                format!("label scan comparing {}", key.property())
            }
            (false, SeekKey::NameRegex) => "all nodes (unoptimised)".to_string(),
            (false, SeekKey::NamePrefix) => {
                "full scan comparing name prefixes (unoptimised)".to_string()
            }
            (false, _) => format!("full scan comparing {} (unoptimised)", key.property()),
            (true, SeekKey::Id) => "id index (binary search)".to_string(),
            (true, SeekKey::Name) => "name index (binary search)".to_string(),
            (true, SeekKey::NamePrefix) => "name index (prefix range)".to_string(),
            (true, SeekKey::NameRegex) => {
                "name index (range of the regex's literal prefix; scan without one)".to_string()
            }
        };
        let mut cols = b.cols.clone();
        cols.push(var.clone());
        let op = NodeSeek {
            input: b.op,
            key: *key,
            value: bind(value, &b.cols)?,
            kinds,
            labels: labels.clone(),
            use_index: opt,
            cur: None,
        };
        Ok((Box::new(op), cols, note))
    }

    fn make_expand(
        &mut self,
        lp: &LogicalPlan,
        arg_cols: &[String],
        roles: &[Roles],
    ) -> ExecResult<Made<'a>> {
        let LogicalPlan::Expand {
            input,
            from,
            rel,
            to,
            direction,
            types,
            length,
            into,
            unique_with,
        } = lp
        else {
            return Err(misrouted("expansions"));
        };
        let b = self.build(input, arg_cols)?;
        let from_i = pos(&b.cols, from)?;
        let into_i = if *into { Some(pos(&b.cols, to)?) } else { None };
        let uw = unique_with
            .iter()
            .map(|c| pos(&b.cols, c))
            .collect::<ExecResult<Vec<_>>>()?;
        let mut cols = b.cols;
        cols.push(rel.clone());
        if !into {
            cols.push(to.clone());
        }
        let csr = match direction {
            Direction::Outgoing => "out-CSR",
            Direction::Incoming => "in-CSR",
            Direction::Both => "out- and in-CSR",
        };
        let Some(h) = length else {
            let note = format!("{csr}, {}", Self::filter_note(types, roles));
            let op = Expand {
                input: b.op,
                from: from_i,
                into: into_i,
                dir: *direction,
                filter: self.filter(types, roles),
                unique_with: uw,
                buf: Vec::new(),
                pos: 0,
                row: None,
            };
            return Ok((Box::new(op), cols, note));
        };
        let endpoints = self.endpoint_only.contains(&addr(lp));
        let note = format!(
            "{csr}, {}, {}",
            Self::filter_note(types, &[]),
            if endpoints {
                "BFS with a visited set (only distinct endpoints are used)"
            } else {
                "DFS over trails (relationship-unique per path)"
            }
        );
        let op = VarExpand {
            input: b.op,
            from: from_i,
            into: into_i,
            dir: *direction,
            filter: self.filter(types, &[]),
            unique_with: uw,
            min: h.min,
            max: h.max,
            endpoints_only: endpoints,
            state: None,
        };
        Ok((Box::new(op), cols, note))
    }

    /// A filter: on a shortest path whose hops it conditions, tested during the search; on
    /// an indexed equality, an index seek below it; on an expansion, with its role
    /// predicates pushed into the expansion's bitmaps; else over its input.
    fn make_filter(
        &mut self,
        input: &LogicalPlan,
        predicate: &Expr,
        arg_cols: &[String],
    ) -> ExecResult<Made<'a>> {
        let opt = self.flags.optimize;
        if opt
            && let LogicalPlan::ShortestPath { rel, .. } = input
            && let Some(hop) = hop_condition(predicate, rel)
        {
            return self.make_hop_tested_search(input, predicate, hop, arg_cols);
        }
        if let Some((seek, cols, note)) = self.index_seek(input, predicate, arg_cols)? {
            let op = Filter {
                input: seek,
                predicate: bind(predicate, &cols)?,
            };
            return Ok((Box::new(op), cols, note));
        }
        let (push, note) = match input {
            LogicalPlan::Expand {
                rel, length: None, ..
            } if opt => {
                let r = required_roles(predicate, rel);
                let note = if r.is_empty() {
                    String::new()
                } else {
                    "role predicate pushed into the expansion below".to_string()
                };
                (r, note)
            }
            _ => (Vec::new(), String::new()),
        };
        let b = self.build_with(input, arg_cols, push)?;
        let op = Filter {
            input: b.op,
            predicate: bind(predicate, &b.cols)?,
        };
        Ok((Box::new(op), b.cols, note))
    }

    /// A shortest-path search that tests each hop; the filter stays above it (a no-op
    /// then). The search gets its own EXPLAIN line and PROFILE counter, as `build` gives.
    fn make_hop_tested_search(
        &mut self,
        search_plan: &LogicalPlan,
        predicate: &Expr,
        hop: HopCondition,
        arg_cols: &[String],
    ) -> ExecResult<Made<'a>> {
        let me = self.notes.len();
        self.notes.push(String::new());
        let counter = Rc::new(Counter::default());
        self.counters.push(counter.clone());
        let (search, cols, note) = self.shortest_path(search_plan, arg_cols, Some(hop))?;
        self.notes[me] = format!("{note}, every hop tested during the search");
        let search: BoxOp<'a> = if self.flags.profile {
            Box::new(Profiled {
                inner: search,
                counter,
            })
        } else {
            search
        };
        let op = Filter {
            input: search,
            predicate: bind(predicate, &cols)?,
        };
        Ok((Box::new(op), cols, String::new()))
    }

    fn make_project(
        &mut self,
        input: &LogicalPlan,
        items: &[(Expr, String)],
        arg_cols: &[String],
    ) -> ExecResult<Made<'a>> {
        let b = self.build(input, arg_cols)?;
        let its = items
            .iter()
            .map(|(e, _)| match bind(e, &b.cols)? {
                Expr {
                    kind:
                        ExprKind::Slot(SlotRef {
                            slot: Slot::Column(i),
                            ..
                        }),
                    ..
                } => Ok(ProjItem::Column(i)),
                other => Ok(ProjItem::Expr(other)),
            })
            .collect::<ExecResult<_>>()?;
        let cols = items.iter().map(|(_, c)| c.clone()).collect();
        let op = Project {
            input: b.op,
            items: its,
        };
        Ok((Box::new(op), cols, String::new()))
    }

    fn make_aggregate(&mut self, lp: &LogicalPlan, arg_cols: &[String]) -> ExecResult<Made<'a>> {
        let LogicalPlan::Aggregate {
            input,
            group_by,
            aggregates,
        } = lp
        else {
            return Err(misrouted("aggregations"));
        };
        let b = self.build(input, arg_cols)?;
        let cols = group_by
            .iter()
            .map(|(_, c)| c.clone())
            .chain(aggregates.iter().map(|a| a.column.clone()))
            .collect();
        let aggregates = aggregates
            .iter()
            .map(|spec| {
                Ok(AggregateSpec {
                    func: spec.func,
                    distinct: spec.distinct,
                    arg: spec
                        .arg
                        .as_ref()
                        .map(|arg| bind(arg, &b.cols))
                        .transpose()?,
                    column: spec.column.clone(),
                })
            })
            .collect::<ExecResult<_>>()?;
        let op = Aggregate {
            input: b.op,
            group_by: group_by
                .iter()
                .map(|(e, _)| bind(e, &b.cols))
                .collect::<Result<_, _>>()?,
            aggregates,
            out: Vec::new().into_iter(),
        };
        Ok((Box::new(op), cols, "hash aggregation".to_string()))
    }

    /// ORDER BY with LIMIT: answered by an id-ordered scan when it can be, else a bounded
    /// heap (unoptimised: a full sort, then the limit).
    fn make_top_k(
        &mut self,
        input: &LogicalPlan,
        keys: &[SortKey],
        limit: &Expr,
        arg_cols: &[String],
    ) -> ExecResult<Made<'a>> {
        let opt = self.flags.optimize;
        if opt && let Some(built) = self.id_ordered_top_k(input, keys, limit, arg_cols)? {
            return Ok(built);
        }
        let b = self.build(input, arg_cols)?;
        if opt {
            let op = TopK {
                input: b.op,
                keys: bound_keys(keys, &b.cols)?,
                limit: limit.clone(),
                out: Vec::new().into_iter(),
            };
            return Ok((Box::new(op), b.cols, "bounded heap".to_string()));
        }
        let sort = Sort {
            input: b.op,
            keys: bound_keys(keys, &b.cols)?,
            out: Vec::new().into_iter(),
        };
        let op = Limit {
            input: Box::new(sort),
            count: limit.clone(),
            left: 0,
            drain: false,
            drained: false,
        };
        Ok((
            Box::new(op),
            b.cols,
            "full sort then limit (unoptimised)".into(),
        ))
    }

    fn make_skip_or_limit(
        &mut self,
        lp: &LogicalPlan,
        arg_cols: &[String],
    ) -> ExecResult<Made<'a>> {
        match lp {
            LogicalPlan::Skip { input, count } => {
                let b = self.build(input, arg_cols)?;
                let op = Skip {
                    input: b.op,
                    count: count.clone(),
                    left: 0,
                };
                Ok((Box::new(op), b.cols, String::new()))
            }
            LogicalPlan::Limit { input, count } => {
                let b = self.build(input, arg_cols)?;
                let op = Limit {
                    input: b.op,
                    count: count.clone(),
                    left: 0,
                    drain: super::write_clause(input).is_some(),
                    drained: false,
                };
                Ok((Box::new(op), b.cols, "stops its input early".to_string()))
            }
            _ => Err(misrouted("SKIP and LIMIT")),
        }
    }

    /// The operators that add columns to each input row: UNWIND, a procedure call, a
    /// path bound from its parts.
    fn make_row_extension(
        &mut self,
        lp: &LogicalPlan,
        arg_cols: &[String],
    ) -> ExecResult<Made<'a>> {
        match lp {
            LogicalPlan::Unwind { input, expr, var } => {
                let b = self.build(input, arg_cols)?;
                let mut cols = b.cols.clone();
                cols.push(var.clone());
                let moved = match (&expr.kind, &self.moved_parameter) {
                    (ExprKind::Parameter(name), Some((moved, _))) if name == moved => {
                        self.moved_parameter.take().map(|(_, value)| value)
                    }
                    _ => None,
                };
                let op = Unwind {
                    expr: bind(expr, &b.cols)?,
                    input: b.op,
                    moved,
                    cur: None,
                };
                Ok((Box::new(op), cols, String::new()))
            }
            LogicalPlan::ProcedureCall {
                input,
                procedure,
                args,
                yields,
            } => {
                let b = self.build(input, arg_cols)?;
                let mut cols = b.cols.clone();
                cols.extend(yields.iter().map(|(_, c)| c.clone()));
                let op = ProcedureCall {
                    args: bind_all(args, &b.cols)?,
                    input: b.op,
                    procedure: procedure.clone(),
                    yields: yields.iter().map(|(f, _)| f.clone()).collect(),
                    cur: None,
                };
                Ok((Box::new(op), cols, String::new()))
            }
            LogicalPlan::BindPath {
                input,
                var,
                start,
                rels,
            } => {
                let b = self.build(input, arg_cols)?;
                let s = pos(&b.cols, start)?;
                let rs = rels
                    .iter()
                    .map(|r| pos(&b.cols, r))
                    .collect::<ExecResult<Vec<_>>>()?;
                let mut cols = b.cols;
                cols.push(var.clone());
                let op = BindPath {
                    input: b.op,
                    start: s,
                    rels: rs,
                };
                Ok((Box::new(op), cols, String::new()))
            }
            _ => Err(misrouted("row extensions")),
        }
    }

    fn make_optional(&mut self, lp: &LogicalPlan, arg_cols: &[String]) -> ExecResult<Made<'a>> {
        let LogicalPlan::Optional {
            input,
            inner,
            new_columns,
        } = lp
        else {
            return Err(misrouted("OPTIONAL MATCH"));
        };
        let b = self.build(input, arg_cols)?;
        let i = self.build(inner, &b.cols)?;
        let mut cols = b.cols.clone();
        let mut layout: Vec<Side> = (0..b.cols.len()).map(Side::Left).collect();
        for c in new_columns {
            if !cols.contains(c) {
                cols.push(c.clone());
                layout.push(Side::Right(pos(&i.cols, c)?));
            }
        }
        let op = Optional {
            input: b.op,
            inner: i.op,
            layout,
            cur: None,
        };
        Ok((Box::new(op), cols, "nested apply, nulls when empty".into()))
    }

    /// A cartesian product (the right side materialised once) or a hash join (built on
    /// the right, probed with the left).
    fn make_join(&mut self, lp: &LogicalPlan, arg_cols: &[String]) -> ExecResult<Made<'a>> {
        match lp {
            LogicalPlan::CartesianProduct { left, right } => {
                let l = self.build(left, arg_cols)?;
                let r = self.build(right, &[])?;
                let (cols, layout) = concat(&l.cols, &r.cols);
                let op = Product {
                    left: l.op,
                    right: r.op,
                    layout,
                    right_rows: None,
                    cur: None,
                };
                Ok((Box::new(op), cols, "right side materialised once".into()))
            }
            LogicalPlan::HashJoin {
                left,
                right,
                left_keys,
                right_keys,
            } => {
                let l = self.build(left, arg_cols)?;
                let r = self.build(right, &[])?;
                let (cols, layout) = concat(&l.cols, &r.cols);
                let op = HashJoin {
                    left_keys: bind_all(left_keys, &l.cols)?,
                    right_keys: bind_all(right_keys, &r.cols)?,
                    left: l.op,
                    right: r.op,
                    layout,
                    table: None,
                    cur: None,
                };
                Ok((
                    Box::new(op),
                    cols,
                    "build on the right, probe with the left".into(),
                ))
            }
            _ => Err(misrouted("joins")),
        }
    }
}

impl<'a> Builder<'a> {
    /// A shortest-path search, with the condition its hops must meet when a filter above
    /// gives one.
    fn shortest_path(
        &mut self,
        lp: &LogicalPlan,
        arg_cols: &[String],
        hop: Option<HopCondition>,
    ) -> ExecResult<(BoxOp<'a>, Vec<String>, String)> {
        let LogicalPlan::ShortestPath {
            input,
            from,
            to,
            path,
            rel,
            direction,
            types,
            length,
            all,
        } = lp
        else {
            return Err(internal("a shortest-path search was expected".into()));
        };
        let b = self.build(input, arg_cols)?;
        let (fi, ti) = (pos(&b.cols, from)?, pos(&b.cols, to)?);
        let mut cols = b.cols;
        cols.push(path.clone());
        cols.push(rel.clone());
        let note = if *all {
            "bidirectional BFS keeping every parent, then enumeration"
        } else {
            "bidirectional BFS"
        };
        let op = ShortestPath {
            input: b.op,
            from: fi,
            to: ti,
            dir: *direction,
            filter: self.filter(types, &[]),
            hop,
            min: length.min,
            max: length.max,
            all: *all,
            out: Vec::new().into_iter(),
        };
        Ok((Box::new(op), cols, note.to_string()))
    }

    /// `ORDER BY id(n) … LIMIT k` as a limit over a scan in id order (see
    /// [`super::id_order`]), or `None` when the plan's shape or the access path chosen
    /// below does not allow it.
    fn id_ordered_top_k(
        &mut self,
        input: &LogicalPlan,
        keys: &[SortKey],
        limit: &Expr,
        arg_cols: &[String],
    ) -> ExecResult<Option<(BoxOp<'a>, Vec<String>, String)>> {
        let Some((scan, order)) = id_ordered_scan(keys, input) else {
            return Ok(None);
        };
        let (notes, counters) = (self.notes.len(), self.counters.len());
        self.id_order_wanted.insert(addr(scan), order);
        let b = self.build(input, arg_cols)?;
        self.id_order_wanted.remove(&addr(scan));
        if !self.id_order_built.remove(&addr(scan)) {
            // An index seek replaced the scan: plan the heap instead, from scratch.
            self.notes.truncate(notes);
            self.counters.truncate(counters);
            return Ok(None);
        }
        let op = Limit {
            input: b.op,
            count: limit.clone(),
            left: 0,
            drain: false,
            drained: false,
        };
        Ok(Some((
            Box::new(op),
            b.cols,
            "limit over an id-ordered scan".into(),
        )))
    }

    /// A writable graph's `Filter` over a one-label `NodeScan` whose predicate compares an
    /// indexed key: the scan becomes an index seek (the filter stays above it).
    #[allow(clippy::type_complexity)]
    fn index_seek(
        &mut self,
        input: &LogicalPlan,
        predicate: &Expr,
        arg_cols: &[String],
    ) -> ExecResult<Option<(BoxOp<'a>, Vec<String>, String)>> {
        let LogicalPlan::NodeScan {
            input: below,
            var,
            labels,
        } = input
        else {
            return Ok(None);
        };
        let [label] = labels.as_slice() else {
            return Ok(None);
        };
        let Some((key, value)) = indexed_equality(&self.topology, predicate, var, label) else {
            return Ok(None);
        };
        // The scan's own line in EXPLAIN describes the seek that replaces it.
        self.notes.push(format!("index :{label}({key})"));
        self.counters.push(Rc::new(Counter::default()));
        let b = self.build(below, arg_cols)?;
        let mut cols = b.cols.clone();
        cols.push(var.clone());
        let seek = IndexSeek {
            value: bind(value, &b.cols)?,
            input: b.op,
            label: label.clone(),
            key,
            cur: None,
        };
        Ok(Some((Box::new(seek), cols, String::new())))
    }

    /// The eager operator of an update clause.
    #[allow(clippy::type_complexity)]
    fn make_update(
        &mut self,
        lp: &LogicalPlan,
        arg_cols: &[String],
    ) -> ExecResult<(BoxOp<'a>, Vec<String>, String)> {
        if self.topology.artifact().is_some() {
            return Err(ExecError::Unsupported(format!(
                "{} needs a writable graph",
                lp.name()
            )));
        }
        let note = "eager: every input row first, then the writes".to_string();
        Ok(match lp {
            LogicalPlan::Create { input, pattern } => {
                let b = self.build(input, arg_cols)?;
                let cols = pattern_columns(&b.cols, pattern);
                let update = CreateClause {
                    input_cols: b.cols.len(),
                    cols: cols.clone(),
                    pattern: pattern
                        .iter()
                        .map(|part| bind_pattern_part(part, &cols))
                        .collect::<Result<_, _>>()?,
                };
                (Box::new(Eager::new(b.op, update)), cols, note)
            }
            LogicalPlan::Merge {
                input,
                part,
                on_create,
                on_match,
            } => {
                let b = self.build(input, arg_cols)?;
                let cols = pattern_columns(&b.cols, std::slice::from_ref(part));
                let update = MergeClause {
                    input_cols: b.cols.len(),
                    part: bind_pattern_part(part, &cols)?,
                    on_create: bind_set_items(on_create, &cols)?,
                    on_match: bind_set_items(on_match, &cols)?,
                    cols: cols.clone(),
                };
                (Box::new(Eager::new(b.op, update)), cols, note)
            }
            LogicalPlan::SetProperties { input, items } => {
                let b = self.build(input, arg_cols)?;
                let update = SetClause {
                    items: bind_set_items(items, &b.cols)?,
                    cols: b.cols.clone(),
                };
                (Box::new(Eager::new(b.op, update)), b.cols, note)
            }
            LogicalPlan::Delete {
                input,
                detach,
                exprs,
            } => {
                let b = self.build(input, arg_cols)?;
                let update = DeleteClause {
                    exprs: bind_all(exprs, &b.cols)?,
                    detach: *detach,
                    nodes: Vec::new(),
                    relationships: Vec::new(),
                };
                (Box::new(Eager::new(b.op, update)), b.cols, note)
            }
            LogicalPlan::Remove { input, items } => {
                let b = self.build(input, arg_cols)?;
                let update = RemoveClause {
                    cols: b.cols.clone(),
                    items: items.clone(),
                };
                (Box::new(Eager::new(b.op, update)), b.cols, note)
            }
            other => return Err(internal(format!("{} is not an update", other.name()))),
        })
    }
}

fn concat(l: &[String], r: &[String]) -> (Vec<String>, Vec<Side>) {
    let mut cols = l.to_vec();
    let mut layout: Vec<Side> = (0..l.len()).map(Side::Left).collect();
    for (i, c) in r.iter().enumerate() {
        if !cols.contains(c) {
            cols.push(c.clone());
            layout.push(Side::Right(i));
        }
    }
    (cols, layout)
}
