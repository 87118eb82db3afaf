//! Maintenance and life-cycle operations as BQL statements: `CALL db.fix({deep: true,
//! dry_run: true})`, `CALL db.gc({action: 'prune', older_than_days: 30})`, `db.export`,
//! `db.load`, `db.build`, `db.patch` and `db.status`. They act on an artifact's files (or
//! the repository's) rather than on its graph, so they run without opening it (an artifact
//! too damaged to open can still be fixed), and such a statement holds the call alone, with
//! an optional `YIELD` of some of its columns. The lifecycle MCP tools run the same
//! [`MaintenanceCall`] and carry [`MaintenanceCall::statement`] in `meta.query`, so pasting
//! it into `batho query` or `batho-ql` does what the tool did.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use batho_lang::ast::{CallClause, Clause, Expr, Mode};
use batho_lang::{Diagnostic, Evaluator, NoGraph, Value};
use serde::Serialize;

use super::MaintenanceError;
use super::archive::LoadReport;
use super::fix::{FixOptions, FixReport, FixTarget};
use super::gc::{self, CompactReport, GcStatus, PruneOptions, PruneReport, ReclaimReport};
use super::lifecycle::{self, BuildView, PatchView, StatusView};
use super::transfer::{self, ExportDone, ExportRequest, LoadRequest};
use crate::build::{ARTIFACT_DIR, BuildOptions, BuildReport};
use crate::patch::{PatchOptions, PatchReport};
use crate::query::{QueryError, QueryResult, QueryStats, value_from_json};
use crate::status::StatusReport;

/// A statement's options, by name.
pub(super) type Options = BTreeMap<String, Value>;

/// A maintenance operation with its options.
#[derive(Clone, Debug, PartialEq)]
pub enum MaintenanceCall {
    /// `db.fix`: verify the artifact in phases and repair what can be derived.
    Fix(FixOptions),
    /// `db.gc`: the run history and the disk space of old generations.
    Gc(GcRequest),
    /// `db.export`: a generation written to a file in the repository.
    Export(ExportRequest),
    /// `db.load`: an archive in the repository made the current generation.
    Load(LoadRequest),
    /// `db.build`: the graph built from the repository's sources.
    Build(BuildOptions),
    /// `db.patch`: the changed sources indexed into a new generation.
    Patch(PatchOptions),
    /// `db.status`: ready, stale or missing, with the counts; verified on request.
    Status {
        /// Re-hash every segment and check every structure.
        verify: bool,
    },
}

/// What `db.gc` is asked to do (its `action` option).
#[derive(Clone, Debug, PartialEq)]
pub enum GcRequest {
    /// Report generations, runs, live and reclaimable bytes.
    Status,
    /// Remove runs from the history (older than some days, or one run).
    Prune(PruneOptions),
    /// Fold the current generation's delta layer into a new base.
    Compact {
        /// Only report what would be done.
        dry_run: bool,
    },
    /// Delete the files no retained generation needs.
    Reclaim {
        /// Only report what would be done.
        dry_run: bool,
    },
}

/// What a [`MaintenanceCall`] reported.
#[derive(Clone, Debug)]
pub enum MaintenanceReport {
    /// `db.fix`.
    Fix(FixReport),
    /// `db.gc` with `action: 'status'`.
    GcStatus(GcStatus),
    /// `db.gc` with `action: 'prune'`.
    Prune(PruneReport),
    /// `db.gc` with `action: 'compact'`.
    Compact(CompactReport),
    /// `db.gc` with `action: 'reclaim'`.
    Reclaim(ReclaimReport),
    /// `db.export`.
    Export(ExportDone),
    /// `db.load`.
    Load(LoadReport),
    /// `db.build`.
    Build(Box<BuildReport>),
    /// `db.patch`.
    Patch(Box<PatchReport>),
    /// `db.status`.
    Status(Box<StatusReport>),
}

/// The options `db.fix` takes.
const FIX_OPTIONS: [&str; 5] = ["deep", "dry_run", "target", "phase", "parallel"];
/// The options `db.gc` takes.
const GC_OPTIONS: [&str; 4] = ["action", "older_than_days", "run", "dry_run"];

/// The maintenance and life-cycle procedures and their options, as `docs/bql.md` lists
/// them.
const PROCEDURES: [(&str, &[&str]); 7] = [
    ("db.fix", &FIX_OPTIONS),
    ("db.gc", &GC_OPTIONS),
    ("db.export", &transfer::EXPORT_OPTIONS),
    ("db.load", &transfer::LOAD_OPTIONS),
    ("db.build", &lifecycle::BUILD_OPTIONS),
    ("db.patch", &lifecycle::PATCH_OPTIONS),
    ("db.status", &lifecycle::STATUS_OPTIONS),
];

impl MaintenanceCall {
    /// The statement that runs this call, its options written out (defaults left out):
    /// what `meta.query` carries.
    pub fn statement(&self) -> String {
        let (name, options) = match self {
            MaintenanceCall::Fix(fix) => ("db.fix", fix_options(fix)),
            MaintenanceCall::Gc(request) => ("db.gc", gc_options(request)),
            MaintenanceCall::Export(request) => ("db.export", transfer::export_options(request)),
            MaintenanceCall::Load(request) => ("db.load", transfer::load_options(request)),
            MaintenanceCall::Build(options) => ("db.build", lifecycle::build_options(options)),
            MaintenanceCall::Patch(options) => ("db.patch", lifecycle::patch_options(options)),
            MaintenanceCall::Status { verify } => ("db.status", lifecycle::status_options(*verify)),
        };
        if options.is_empty() {
            format!("CALL {name}()")
        } else {
            format!("CALL {name}({{{}}})", options.join(", "))
        }
    }
}

fn fix_options(fix: &FixOptions) -> Vec<String> {
    let mut options = Vec::new();
    for (name, on) in [
        ("deep", fix.deep),
        ("dry_run", fix.dry_run),
        ("parallel", fix.parallel),
    ] {
        if on {
            options.push(format!("{name}: true"));
        }
    }
    if fix.target != FixTarget::All {
        options.push(format!("target: '{}'", fix.target.name()));
    }
    if let Some(phase) = fix.phase {
        options.push(format!("phase: {phase}"));
    }
    options
}

fn gc_options(request: &GcRequest) -> Vec<String> {
    let (action, dry_run) = match request {
        GcRequest::Status => ("status", false),
        GcRequest::Prune(prune) => ("prune", prune.dry_run),
        GcRequest::Compact { dry_run } => ("compact", *dry_run),
        GcRequest::Reclaim { dry_run } => ("reclaim", *dry_run),
    };
    let mut options = vec![format!("action: '{action}'")];
    if let GcRequest::Prune(prune) = request {
        if let Some(days) = prune.older_than_days {
            options.push(format!("older_than_days: {days}"));
        }
        if let Some(run) = &prune.run {
            options.push(format!("run: {}", quoted(run)));
        }
    }
    if dry_run {
        options.push("dry_run: true".into());
    }
    options
}

/// `text` as a BQL string literal.
pub(super) fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// Runs `call` on the repository or artifact at `path` (a repository root or its `.batho`
/// folder; each operation takes the writer lock it needs and appends its audit entries).
pub fn run(path: &Path, call: &MaintenanceCall) -> Result<MaintenanceReport, MaintenanceError> {
    let batho_dir = crate::query::store_dir(path);
    let batho_dir = batho_dir.as_path();
    let root = if path.file_name().is_some_and(|name| name == ARTIFACT_DIR) {
        path.parent().unwrap_or(path)
    } else {
        path
    };
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    Ok(match call {
        MaintenanceCall::Fix(options) => {
            MaintenanceReport::Fix(super::fix::fix(batho_dir, options)?)
        }
        MaintenanceCall::Gc(GcRequest::Status) => {
            MaintenanceReport::GcStatus(gc::status(batho_dir)?)
        }
        MaintenanceCall::Gc(GcRequest::Prune(options)) => {
            MaintenanceReport::Prune(gc::prune(batho_dir, options)?)
        }
        MaintenanceCall::Gc(GcRequest::Compact { dry_run }) => {
            MaintenanceReport::Compact(gc::compact(batho_dir, *dry_run)?)
        }
        MaintenanceCall::Gc(GcRequest::Reclaim { dry_run }) => {
            MaintenanceReport::Reclaim(gc::reclaim(batho_dir, *dry_run)?)
        }
        MaintenanceCall::Export(request) => {
            MaintenanceReport::Export(transfer::export(&root, request)?)
        }
        MaintenanceCall::Load(request) => MaintenanceReport::Load(transfer::load(&root, request)?),
        MaintenanceCall::Build(options) => {
            MaintenanceReport::Build(Box::new(crate::build::build(&root, options, &|_| {})?))
        }
        MaintenanceCall::Patch(options) => {
            MaintenanceReport::Patch(Box::new(crate::patch::patch(&root, options)?))
        }
        MaintenanceCall::Status { verify } => {
            MaintenanceReport::Status(Box::new(crate::status::status(&root, *verify)?))
        }
    })
}

impl MaintenanceReport {
    /// The report as one row, a column per top-level field (the fields `structuredContent`
    /// shows for the MCP tool), each value as BQL reads JSON.
    fn row(&self) -> BTreeMap<String, Value> {
        let json = match self {
            MaintenanceReport::Fix(report) => to_json(report),
            MaintenanceReport::GcStatus(status) => to_json(status),
            MaintenanceReport::Prune(prune) => to_json(&PruneView::from(prune)),
            MaintenanceReport::Compact(compact) => to_json(compact),
            MaintenanceReport::Reclaim(reclaim) => to_json(reclaim),
            MaintenanceReport::Export(export) => to_json(export),
            MaintenanceReport::Load(load) => to_json(load),
            MaintenanceReport::Build(build) => to_json(&BuildView::from(build.as_ref())),
            MaintenanceReport::Patch(patch) => to_json(&PatchView::from(patch.as_ref())),
            MaintenanceReport::Status(status) => to_json(&StatusView::from(status.as_ref())),
        };
        match value_from_json(json) {
            Value::Map(fields) => fields,
            other => BTreeMap::from([("report".to_string(), other)]),
        }
    }
}

fn to_json(report: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(report).unwrap_or_default()
}

/// A run `prune` removed, as reports show it.
#[derive(Clone, Debug, Serialize)]
pub struct PrunedRun {
    /// The run's id.
    pub run_id: String,
    /// The generation it committed.
    pub generation: u64,
}

impl From<&super::RunRecord> for PrunedRun {
    fn from(run: &super::RunRecord) -> PrunedRun {
        PrunedRun {
            run_id: run.uuid.clone(),
            generation: run.generation,
        }
    }
}

/// A prune report as a row shows it: the runs by id and generation.
#[derive(Serialize)]
struct PruneView {
    pruned: Vec<PrunedRun>,
    remaining: usize,
    generation: Option<u64>,
    dry_run: bool,
    audit: Option<super::AuditEntry>,
}

impl From<&PruneReport> for PruneView {
    fn from(report: &PruneReport) -> PruneView {
        PruneView {
            pruned: report.pruned.iter().map(PrunedRun::from).collect(),
            remaining: report.remaining,
            generation: report.generation,
            dry_run: report.dry_run,
            audit: report.audit.clone(),
        }
    }
}

/// A maintenance statement: the call and the columns its `YIELD` keeps (all without one).
#[derive(Clone, Debug, PartialEq)]
pub struct MaintenanceStatement {
    /// The operation.
    pub call: MaintenanceCall,
    /// `(field, column name)` per `YIELD` item.
    yields: Option<Vec<(String, String)>>,
}

impl MaintenanceStatement {
    /// The maintenance statement `text` holds, its options read with `params`; `None`
    /// when `text` is something else (any other query, or text that does not parse:
    /// the query engine reports that).
    pub fn parse(
        text: &str,
        params: &BTreeMap<String, Value>,
    ) -> Option<Result<MaintenanceStatement, QueryError>> {
        let statement = batho_lang::parse_statement(text).ok()?;
        let [Clause::Call(call)] = statement.clauses.as_slice() else {
            return None;
        };
        let name = call.procedure.name.to_ascii_lowercase();
        let (name, known) = PROCEDURES.into_iter().find(|(known, _)| *known == name)?;
        let refuse = |message: String| QueryError::Eval {
            diagnostic: Diagnostic::new(text, call.span, format!("{name}(): {message}"), None),
        };
        if statement.mode != Mode::Run || statement.at.is_some() || call.where_.is_some() {
            let message = "runs alone: no EXPLAIN, PROFILE, AT or WHERE".to_string();
            return Some(Err(refuse(message)));
        }
        let read = || -> Result<MaintenanceStatement, String> {
            let options = options_of(known, call, params)?;
            let call_of = match name {
                "db.fix" => MaintenanceCall::Fix(fix_request(&options)?),
                "db.gc" => MaintenanceCall::Gc(gc_request(&options)?),
                "db.export" => MaintenanceCall::Export(transfer::export_request(&options)?),
                "db.load" => MaintenanceCall::Load(transfer::load_request(&options)?),
                "db.build" => MaintenanceCall::Build(lifecycle::build_request(&options)?),
                "db.patch" => MaintenanceCall::Patch(lifecycle::patch_request(&options)?),
                _ => MaintenanceCall::Status {
                    verify: lifecycle::status_request(&options)?,
                },
            };
            Ok(MaintenanceStatement {
                call: call_of,
                yields: call.yields.as_ref().map(|items| {
                    items
                        .iter()
                        .map(|item| {
                            let column = item.alias.as_ref().unwrap_or(&item.field);
                            (item.field.name.clone(), column.name.clone())
                        })
                        .collect()
                }),
            })
        };
        Some(read().map_err(refuse))
    }

    /// Runs the statement on the repository or artifact at `path` (see [`run`]): the
    /// report and the one row BQL shows of it.
    pub fn run(&self, path: &Path) -> Result<(MaintenanceReport, QueryResult), QueryError> {
        let started = Instant::now();
        let report = run(path, &self.call).map_err(|error| match error {
            MaintenanceError::Storage(error) => QueryError::Storage(error),
            error => QueryError::Maintenance(error),
        })?;
        let fields = report.row();
        let chosen: Vec<(String, String)> = match &self.yields {
            Some(items) if !items.is_empty() => items.clone(),
            _ => fields
                .keys()
                .map(|key| (key.clone(), key.clone()))
                .collect(),
        };
        let mut row = Vec::with_capacity(chosen.len());
        for (field, _) in &chosen {
            let value = fields.get(field).ok_or_else(|| QueryError::Unsupported {
                message: format!(
                    "this call yields no field '{field}'; its fields: {}",
                    fields.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            })?;
            row.push(value.clone());
        }
        let mut result = QueryResult::empty(started.elapsed());
        result.columns = chosen.into_iter().map(|(_, column)| column).collect();
        result.rows = vec![row];
        result.stats = QueryStats {
            work: 1,
            elapsed: started.elapsed(),
        };
        Ok((report, result))
    }
}

/// The options map of a call (none, or one map argument), its keys checked.
fn options_of(
    known: &[&str],
    call: &CallClause,
    params: &BTreeMap<String, Value>,
) -> Result<BTreeMap<String, Value>, String> {
    let options = match call.args.as_deref().unwrap_or_default() {
        [] => BTreeMap::new(),
        [argument] => match constant(argument, params)? {
            Value::Map(options) => options,
            Value::Null => BTreeMap::new(),
            other => return Err(format!("takes a map of options, got {other}")),
        },
        _ => return Err("takes one map of options".into()),
    };
    if let Some(unknown) = options.keys().find(|key| !known.contains(&key.as_str())) {
        return Err(format!(
            "no option '{unknown}'; the options: {}",
            known.join(", ")
        ));
    }
    Ok(options
        .into_iter()
        .filter(|(_, value)| *value != Value::Null)
        .collect())
}

/// The value of an argument that reads no graph: literals, maps, lists, parameters.
fn constant(argument: &Expr, params: &BTreeMap<String, Value>) -> Result<Value, String> {
    let evaluator = Evaluator::new(&NoGraph, params);
    evaluator
        .eval(argument, &BTreeMap::<String, Value>::new())
        .map_err(|error| error.to_string())
}

/// A string option, if given.
pub(super) fn text_option<'a>(options: &'a Options, key: &str) -> Result<Option<&'a str>, String> {
    match options.get(key) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(format!("option '{key}' must be a string, got {other}")),
    }
}

/// A boolean option, false when not given.
pub(super) fn flag(options: &Options, key: &str) -> Result<bool, String> {
    match options.get(key) {
        None => Ok(false),
        Some(Value::Bool(on)) => Ok(*on),
        Some(other) => Err(format!("option '{key}' must be a boolean, got {other}")),
    }
}

fn fix_request(options: &BTreeMap<String, Value>) -> Result<FixOptions, String> {
    let target = match options.get("target") {
        None => FixTarget::All,
        Some(Value::String(name)) => FixTarget::parse(name).ok_or_else(|| {
            let names: Vec<&str> = FixTarget::ALL.iter().map(|t| t.name()).collect();
            format!("target '{name}' is not one of {}", names.join(", "))
        })?,
        Some(other) => return Err(format!("target must be a string, got {other}")),
    };
    let phase = match options.get("phase") {
        None => None,
        Some(Value::Int(phase @ 1..=4)) => Some(*phase as u8),
        Some(other) => return Err(format!("phase must be 1, 2, 3 or 4, got {other}")),
    };
    Ok(FixOptions {
        deep: flag(options, "deep")?,
        dry_run: flag(options, "dry_run")?,
        target,
        phase,
        parallel: flag(options, "parallel")?,
    })
}

fn gc_request(options: &BTreeMap<String, Value>) -> Result<GcRequest, String> {
    let dry_run = flag(options, "dry_run")?;
    let action = match options.get("action") {
        None => "status",
        Some(Value::String(action)) => action.as_str(),
        Some(other) => return Err(format!("action must be a string, got {other}")),
    };
    let older_than_days = match options.get("older_than_days") {
        None => None,
        Some(Value::Int(days)) if *days >= 0 => Some(*days as u64),
        Some(other) => {
            return Err(format!(
                "older_than_days must be a number of days >= 0, got {other}"
            ));
        }
    };
    let run = match options.get("run") {
        None => None,
        Some(Value::String(run)) => Some(run.clone()),
        Some(other) => return Err(format!("run must be a run id, got {other}")),
    };
    if action != "prune" && (older_than_days.is_some() || run.is_some()) {
        return Err("older_than_days and run choose what action 'prune' removes".into());
    }
    Ok(match action {
        "status" => GcRequest::Status,
        "prune" if older_than_days.is_none() && run.is_none() => {
            return Err("action 'prune' needs older_than_days or run".into());
        }
        "prune" => GcRequest::Prune(PruneOptions {
            older_than_days,
            run,
            dry_run,
        }),
        "compact" => GcRequest::Compact { dry_run },
        "reclaim" => GcRequest::Reclaim { dry_run },
        other => {
            return Err(format!(
                "action '{other}' is not one of status, prune, compact, reclaim"
            ));
        }
    })
}
