//! The change tools: get_delta (one run's node-level changes, paginated, with statistics
//! and run metadata) and batho_diff (changes by run, entity or file, or since a run).
//!
//! Both resolve the run first with `batho_engine::diff` (so an unknown run, a pruned
//! generation or a run without predecessor gets the spec's error shape and a hint), then
//! read statistics and changes through BQL (`CALL db.deltaStats(...)`, `CALL
//! db.delta(...)`), which `meta.query` shows; the comparison is computed once and cached.

use std::fmt::Write as _;

use batho_engine::diff::{ChangeKind, DiffError, DiffFilter, RunPair, diff_runs};
use batho_engine::query::Value;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::args::{DeltaArgs, DiffArgs, ResponseFormat};
use super::cells::{FromRecord, Record, decode_first, decode_rows, first_int, int_of, text_of};
use super::files::non_negative_offset;
use super::{Pagination, Reply, Rows, ToolOutput, lines, positive};
use crate::error::ToolError;
use crate::state::{Ctx, State};

const STATS_COLS: &str = "run, type, status, started_at, finished_at, duration_ms, commit, branch, \
generation, base_run, base_generation, nodes_added, nodes_removed, nodes_modified, nodes_renamed, \
nodes_moved, files_added, files_removed, files_modified, edges_added, edges_removed, edges_by_type, files";

const CHANGE_COLS: &str = "change, id, name, kind, file, start_line, end_line, signature, \
before_id, before_name, before_kind, before_file, before_start_line, before_end_line, \
before_signature, changed";

fn diff_error(e: DiffError) -> ToolError {
    let hint = match (&e, e.hint()) {
        (DiffError::UnknownRun { .. }, Some(newest)) => {
            Some(format!("list runs with batho_list_runs; {newest}"))
        }
        (_, hint) => hint,
    };
    ToolError::of_engine(
        e.to_string(),
        e.is_client_error(),
        hint.as_deref(),
        e.remedy(),
    )
}

/// A text parameter: null when absent or blank.
fn optional_text(v: Option<&str>) -> Value {
    v.filter(|s| !s.trim().is_empty())
        .map_or(Value::Null, Value::from)
}

/// Resolves the comparison and computes it once (the BQL calls then hit the cache).
fn resolve(cx: &Ctx, run: Option<&str>, since: Option<&str>) -> Result<RunPair, ToolError> {
    let dir = cx.db.artifact().dir().to_path_buf();
    let since = since.filter(|s| !s.trim().is_empty());
    let pair = match since {
        Some(s) => batho_engine::diff::resolve_since(&dir, s, run),
        None => batho_engine::diff::resolve_delta(&dir, run),
    }
    .map_err(diff_error)?;
    let probe = DiffFilter {
        limit: Some(0),
        ..DiffFilter::default()
    };
    diff_runs(&dir, &pair, &probe).map_err(diff_error)?;
    Ok(pair)
}

/// The run arguments of the procedures: the newer run's full id, and `since` as the older
/// run's id or the generation number.
fn run_params(pair: &RunPair, since_given: bool) -> (Value, Value) {
    let run = pair
        .run
        .as_ref()
        .map_or(Value::Null, |r| Value::from(r.uuid.as_str()));
    let since = if !since_given {
        Value::Null
    } else {
        match &pair.base_run {
            Some(r) => Value::from(r.uuid.as_str()),
            None => Value::Int(i64::try_from(pair.base_generation).unwrap_or(i64::MAX)),
        }
    };
    (run, since)
}

/// The newer side of a comparison: its run (fields empty for a generation without one).
#[derive(Serialize)]
struct ComparedRun {
    run_id: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    status: Option<String>,
    started_at_ms: i64,
    finished_at_ms: i64,
    duration_ms: i64,
    git_commit: Option<String>,
    git_branch: Option<String>,
    generation: i64,
}

/// The older side of a comparison.
#[derive(Serialize)]
struct ComparedBase {
    run_id: Option<String>,
    generation: i64,
}

/// Relationships added and removed of one type.
struct TypeCounts {
    relation: String,
    added: i64,
    removed: i64,
}

/// `relationships_by_type`: `{TYPE: {added, removed}}`.
fn counts_by_type<S: Serializer>(counts: &[TypeCounts], serializer: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct AddedRemoved {
        added: i64,
        removed: i64,
    }
    let mut map = serializer.serialize_map(Some(counts.len()))?;
    for type_counts in counts {
        let entry = AddedRemoved {
            added: type_counts.added,
            removed: type_counts.removed,
        };
        map.serialize_entry(&type_counts.relation, &entry)?;
    }
    map.end()
}

/// What changed between the two sides.
#[derive(Serialize)]
struct ChangeCounts {
    nodes_added: i64,
    nodes_removed: i64,
    nodes_modified: i64,
    nodes_renamed: i64,
    nodes_moved: i64,
    files_changed: i64,
    files_added: i64,
    files_removed: i64,
    files_modified: i64,
    relationships_added: i64,
    relationships_removed: i64,
    #[serde(serialize_with = "counts_by_type")]
    relationships_by_type: Vec<TypeCounts>,
}

/// A changed file and the changes in it.
#[derive(Serialize)]
struct FileChange {
    path: String,
    change: String,
    added: i64,
    removed: i64,
    modified: i64,
    renamed: i64,
}

/// The comparison's statistics: the row of `db.deltaStats` ([`STATS_COLS`]).
#[derive(Serialize)]
struct DeltaStats {
    run: ComparedRun,
    base: ComparedBase,
    stats: ChangeCounts,
    files: Vec<FileChange>,
}

fn type_counts(value: &Value) -> Vec<TypeCounts> {
    let Value::Map(by_type) = value else {
        return Vec::new();
    };
    by_type
        .iter()
        .map(|(relation, counts)| {
            let count = |key: &str| match counts {
                Value::Map(counts) => counts.get(key).map_or(0, int_of),
                _ => 0,
            };
            TypeCounts {
                relation: relation.clone(),
                added: count("added"),
                removed: count("removed"),
            }
        })
        .collect()
}

fn file_changes(value: &Value) -> Vec<FileChange> {
    let Value::List(files) = value else {
        return Vec::new();
    };
    files
        .iter()
        .filter_map(|file| match file {
            Value::Map(file) => {
                let number = |key: &str| file.get(key).map_or(0, int_of);
                Some(FileChange {
                    path: file.get("path").map(text_of).unwrap_or_default(),
                    change: file.get("change").map(text_of).unwrap_or_default(),
                    added: number("added"),
                    removed: number("removed"),
                    modified: number("modified"),
                    renamed: number("renamed"),
                })
            }
            _ => None,
        })
        .collect()
}

impl FromRecord for DeltaStats {
    fn from_record(record: &Record) -> Result<DeltaStats, ToolError> {
        let given = |column: &str| {
            record
                .text(column)
                .map(|text| (!text.is_empty()).then_some(text))
        };
        let (files_added, files_removed, files_modified) = (
            record.int("files_added")?,
            record.int("files_removed")?,
            record.int("files_modified")?,
        );
        Ok(DeltaStats {
            run: ComparedRun {
                run_id: given("run")?,
                kind: given("type")?,
                status: given("status")?,
                started_at_ms: record.int("started_at")?,
                finished_at_ms: record.int("finished_at")?,
                duration_ms: record.int("duration_ms")?,
                git_commit: given("commit")?,
                git_branch: given("branch")?,
                generation: record.int("generation")?,
            },
            base: ComparedBase {
                run_id: given("base_run")?,
                generation: record.int("base_generation")?,
            },
            stats: ChangeCounts {
                nodes_added: record.int("nodes_added")?,
                nodes_removed: record.int("nodes_removed")?,
                nodes_modified: record.int("nodes_modified")?,
                nodes_renamed: record.int("nodes_renamed")?,
                nodes_moved: record.int("nodes_moved")?,
                files_changed: files_added + files_removed + files_modified,
                files_added,
                files_removed,
                files_modified,
                relationships_added: record.int("edges_added")?,
                relationships_removed: record.int("edges_removed")?,
                relationships_by_type: type_counts(record.value("edges_by_type")?),
            },
            files: file_changes(record.value("files")?),
        })
    }
}

impl DeltaStats {
    /// The statistics as markdown lines.
    fn markdown(&self, md: &mut String) {
        let (run, base) = (&self.run, &self.base);
        let who = |id: &Option<String>, generation: i64| match id {
            None => format!("generation {generation}"),
            Some(id) => format!("run {id} (generation {generation})"),
        };
        let _ = writeln!(
            md,
            "- From {} to {}",
            who(&base.run_id, base.generation),
            who(&run.run_id, run.generation)
        );
        if run.run_id.is_some() {
            let mut git = String::new();
            if let Some(commit) = &run.git_commit {
                let _ = write!(git, ", commit {}", &commit[..commit.len().min(12)]);
                if let Some(branch) = &run.git_branch {
                    let _ = write!(git, " ({branch})");
                }
            }
            let _ = writeln!(
                md,
                "- Run: {} {} at {} UTC, {:.2}s{git}",
                run.kind.as_deref().unwrap_or_default(),
                run.status.as_deref().unwrap_or_default(),
                batho_engine::status::utc_timestamp(run.started_at_ms),
                run.duration_ms as f64 / 1000.0
            );
        }
        let stats = &self.stats;
        let _ = writeln!(
            md,
            "- Nodes: {} added, {} removed, {} modified, {} renamed",
            stats.nodes_added, stats.nodes_removed, stats.nodes_modified, stats.nodes_renamed
        );
        let _ = writeln!(
            md,
            "- Files: {} added, {} removed, {} modified",
            stats.files_added, stats.files_removed, stats.files_modified
        );
        let types: Vec<String> = stats
            .relationships_by_type
            .iter()
            .map(|counts| format!("{} +{} -{}", counts.relation, counts.added, counts.removed))
            .collect();
        let _ = writeln!(
            md,
            "- Relationships: {} added, {} removed{}",
            stats.relationships_added,
            stats.relationships_removed,
            if types.is_empty() {
                String::new()
            } else {
                format!(" ({})", types.join(", "))
            }
        );
    }
}

/// One side of a changed entity.
#[derive(Clone, Serialize)]
struct EntitySide {
    id: String,
    name: String,
    kind: String,
    file: String,
    start_line: i64,
    end_line: i64,
    signature: String,
}

impl EntitySide {
    /// The side in the columns named `prefix` + the entity column (`before_id`, …).
    fn read(record: &Record, prefix: &str) -> Result<EntitySide, ToolError> {
        let column = |name: &str| format!("{prefix}{name}");
        Ok(EntitySide {
            id: record.text(&column("id"))?,
            name: record.text(&column("name"))?,
            kind: record.text(&column("kind"))?,
            file: record.text(&column("file"))?,
            start_line: record.int(&column("start_line"))?,
            end_line: record.int(&column("end_line"))?,
            signature: record.text(&column("signature"))?,
        })
    }
}

/// One changed entity: a row of `db.delta` ([`CHANGE_COLS`]).
#[derive(Serialize)]
struct Change {
    change_kind: String,
    entity_id: String,
    name: String,
    kind: String,
    file_path: String,
    start_line: i64,
    end_line: i64,
    /// The properties a modification changed.
    changed: Vec<String>,
    /// The entity before (none when it was added).
    before: Option<EntitySide>,
    /// The entity after (none when it was removed).
    after: Option<EntitySide>,
}

impl FromRecord for Change {
    fn from_record(record: &Record) -> Result<Change, ToolError> {
        let side = EntitySide::read(record, "")?;
        let change_kind = record.text("change")?;
        let before = match record.value("before_id")? {
            Value::Null => None,
            _ => Some(EntitySide::read(record, "before_")?),
        };
        Ok(Change {
            entity_id: side.id.clone(),
            name: side.name.clone(),
            kind: side.kind.clone(),
            file_path: side.file.clone(),
            start_line: side.start_line,
            end_line: side.end_line,
            changed: record.texts("changed")?,
            before,
            after: (change_kind != "removed").then_some(side),
            change_kind,
        })
    }
}

impl Change {
    /// The change's markdown line; `detail` adds the before and after lines.
    fn markdown(&self, detail: bool) -> String {
        let kind = self.change_kind.as_str();
        let place = format!(
            "[{}] {}:{}",
            self.kind.to_ascii_lowercase(),
            self.file_path,
            lines(self.start_line, self.end_line)
        );
        let before_id = self.before.as_ref().map_or("", |before| before.id.as_str());
        let mut md = match kind {
            "renamed" => format!("- renamed {before_id} → {} {place}", self.entity_id),
            _ => format!("- {kind} {} {place}", self.entity_id),
        };
        if !self.changed.is_empty() && kind == "modified" {
            let _ = write!(md, " ({})", self.changed.join(", "));
        }
        md.push('\n');
        if let (true, Some(before), Some(after)) = (detail, &self.before, &self.after) {
            for (label, side) in [("before", before), ("after", after)] {
                let _ = writeln!(
                    md,
                    "  - {label}: {} {} {}",
                    side.id,
                    lines(side.start_line, side.end_line),
                    side.signature
                );
            }
        }
        md
    }
}

/// get_delta's `applied_filters`.
#[derive(Serialize)]
struct DeltaApplied {
    #[serde(skip_serializing_if = "Option::is_none")]
    change_kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    file_path: Option<String>,
}

/// get_delta's answer.
#[derive(Serialize)]
struct DeltaOutput {
    #[serde(flatten)]
    stats: Option<DeltaStats>,
    changes: Vec<Change>,
    pagination: Pagination,
    applied_filters: DeltaApplied,
    /// `## Delta: run …` or `## Delta: generation …`.
    #[serde(skip)]
    title: String,
    #[serde(skip)]
    format: ResponseFormat,
}

impl ToolOutput for DeltaOutput {
    fn markdown(&self, rows: &mut Rows) -> String {
        let mut md = format!("{}\n\n", self.title);
        if let Some(stats) = &self.stats {
            stats.markdown(&mut md);
        }
        let offset = self.pagination.offset;
        if !self.changes.is_empty() {
            let _ = writeln!(
                md,
                "\n### Changes ({}{})",
                self.changes.len(),
                if offset > 0 {
                    format!(", offset {offset}")
                } else {
                    String::new()
                }
            );
            for change in &self.changes {
                md.push_str(&change.markdown(self.format == ResponseFormat::Detailed));
                rows.tag("changes");
                rows.end_row(md.len());
            }
        } else if self.format != ResponseFormat::Summary {
            md.push_str("\nNo matching changes.\n");
        }
        rows.set_has_more(self.pagination.has_more);
        rows.write_more(&mut md, "results");
        md
    }
}

/// The statistics of the comparison, if the procedure returns a row.
fn delta_stats(
    cx: &mut Ctx,
    procedure_arguments: &str,
    params: &[(&str, Value)],
) -> Result<Option<DeltaStats>, ToolError> {
    let result = cx.run(
        &format!(
            "CALL db.deltaStats({procedure_arguments}) YIELD {STATS_COLS} RETURN {STATS_COLS}"
        ),
        params,
    )?;
    decode_first(&result)
}

pub(crate) fn get_delta(st: &State, a: DeltaArgs) -> Result<Reply, ToolError> {
    let limit = positive("limit", a.page.limit)?;
    if a.page.offset < 0 {
        return Err(ToolError::client(format!(
            "offset must be zero or positive, got {}",
            a.page.offset
        )));
    }
    let format = a.output.format()?;
    let kind = match a.change_kind.as_deref().filter(|k| !k.trim().is_empty()) {
        None => None,
        Some(k) => Some(ChangeKind::parse(k).ok_or_else(|| {
            ToolError::client(format!(
                "Invalid change_kind '{k}'. Valid: added, removed, modified, renamed"
            ))
        })?),
    };
    let mut cx = st.ctx(a.repo.name())?;
    let pair = resolve(&cx, a.run_id.as_deref(), None)?;
    let (run, _) = run_params(&pair, false);
    let stats = delta_stats(&mut cx, "$run", &[("run", run.clone())])?;
    let mut changes: Vec<Change> = Vec::new();
    let mut has_more = false;
    if format != ResponseFormat::Summary {
        let found = cx.run(
            &format!(
                "CALL db.delta($run, $change_kind, $file_path) YIELD {CHANGE_COLS} \
                 RETURN {CHANGE_COLS} SKIP $offset LIMIT $limit"
            ),
            &[
                ("run", run),
                ("change_kind", Value::from(kind.map(ChangeKind::name))),
                ("file_path", optional_text(a.file_path.as_deref())),
                ("offset", Value::Int(a.page.offset)),
                // One extra row tells whether another page exists.
                ("limit", Value::Int(limit.saturating_add(1))),
            ],
        )?;
        changes = decode_rows(&found)?;
        has_more = changes.len() as i64 > limit;
        changes.truncate(limit as usize);
    }
    let output = DeltaOutput {
        stats,
        pagination: Pagination::new(a.page.offset, limit, changes.len(), has_more),
        changes,
        applied_filters: DeltaApplied {
            change_kind: kind.map(ChangeKind::name),
            file_path: a.file_path.clone().filter(|file| !file.trim().is_empty()),
        },
        title: match &pair.run {
            Some(r) => format!("## Delta: run {}", r.uuid),
            None => format!("## Delta: generation {}", pair.generation),
        },
        format,
    };
    Reply::paged(&output, cx.meta(), a.output.max_tokens(), a.page.offset)
}

/// batho_diff's `applied_filters`: the filters given.
#[derive(Serialize)]
struct DiffApplied {
    #[serde(skip_serializing_if = "Option::is_none")]
    run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    entity_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    file_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    since: Option<String>,
}

/// The changes of a page grouped by kind, every kind present: `{added: [...], ...}`.
fn changes_by_kind<S: Serializer>(changes: &[Change], serializer: S) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(ChangeKind::ALL.len()))?;
    for kind in ChangeKind::ALL {
        let of_kind: Vec<&Change> = changes
            .iter()
            .filter(|change| change.change_kind == kind.name())
            .collect();
        map.serialize_entry(kind.name(), &of_kind)?;
    }
    map.end()
}

/// batho_diff's answer.
#[derive(Serialize)]
struct DiffOutput {
    #[serde(flatten)]
    stats: Option<DeltaStats>,
    #[serde(flatten, serialize_with = "changes_by_kind")]
    changes: Vec<Change>,
    total: i64,
    pagination: Pagination,
    applied_filters: DiffApplied,
}

impl ToolOutput for DiffOutput {
    fn markdown(&self, rows: &mut Rows) -> String {
        let mut md = String::from("## Diff\n\n");
        if let Some(stats) = &self.stats {
            stats.markdown(&mut md);
        }
        if self.changes.is_empty() {
            md.push_str("\nNo matching changes.\n");
        } else {
            let _ = writeln!(
                md,
                "\n### Changes ({}, showing {} from offset {})",
                self.total,
                self.changes.len(),
                self.pagination.offset
            );
        }
        for change in &self.changes {
            md.push_str(&change.markdown(true));
            if let Some(kind) = ChangeKind::ALL
                .iter()
                .find(|kind| kind.name() == change.change_kind)
            {
                rows.tag(kind.name());
            }
            rows.end_row(md.len());
        }
        rows.set_has_more(self.pagination.has_more);
        rows.write_more(&mut md, "results");
        md
    }
}

/// Refuses an entity id in neither generation of the comparison: a typo, not "no changes".
fn check_diff_entity(cx: &Ctx, pair: &RunPair, entity: Option<&str>) -> Result<(), ToolError> {
    let Some(entity) = entity.filter(|e| !e.trim().is_empty()) else {
        return Ok(());
    };
    let dir = cx.db.artifact().dir().to_path_buf();
    let (old, new) = batho_engine::diff::open_pair(&dir, pair).map_err(diff_error)?;
    if old.lookup_id(entity).is_none() && new.lookup_id(entity).is_none() {
        return Err(ToolError::client(format!("Entity not found: {entity}"))
            .hint("use search_entities to find the exact entity id"));
    }
    Ok(())
}

pub(crate) fn batho_diff(st: &State, a: DiffArgs) -> Result<Reply, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let limit = positive("limit", a.page.limit)?;
    non_negative_offset(a.page.offset)?;
    let mut cx = st.ctx(a.repo.name())?;
    let since_given = a.since.as_deref().is_some_and(|s| !s.trim().is_empty());
    let pair = resolve(&cx, a.run_id.as_deref(), a.since.as_deref())?;
    check_diff_entity(&cx, &pair, a.entity_id.as_deref())?;
    let (run, since) = run_params(&pair, since_given);
    let stats = delta_stats(
        &mut cx,
        "$run, $since",
        &[("run", run.clone()), ("since", since.clone())],
    )?;
    let filter_params = [
        ("run", run),
        ("file_path", optional_text(a.file_path.as_deref())),
        ("entity_id", optional_text(a.entity_id.as_deref())),
        ("since", since),
    ];
    let total = cx.run(
        "CALL db.delta($run, null, $file_path, $entity_id, $since) YIELD change RETURN count(*) AS changes",
        &filter_params,
    )?;
    let total = first_int(&total, "changes")?;
    let mut page_params = filter_params.to_vec();
    page_params.push(("offset", Value::Int(a.page.offset)));
    page_params.push(("limit", Value::Int(limit)));
    let found = cx.run(
        &format!(
            "CALL db.delta($run, null, $file_path, $entity_id, $since) YIELD {CHANGE_COLS} \
             RETURN {CHANGE_COLS} SKIP $offset LIMIT $limit"
        ),
        &page_params,
    )?;
    let changes: Vec<Change> = decode_rows(&found)?;
    let has_more = a.page.offset + (changes.len() as i64) < total;
    let given = |value: &Option<String>| value.clone().filter(|v| !v.trim().is_empty());
    let output = DiffOutput {
        stats,
        pagination: Pagination::new(a.page.offset, limit, changes.len(), has_more),
        changes,
        total,
        applied_filters: DiffApplied {
            run_id: given(&a.run_id),
            entity_id: given(&a.entity_id),
            file_path: given(&a.file_path),
            since: given(&a.since),
        },
    };
    Reply::paged(&output, cx.meta(), a.budget.max_tokens, a.page.offset)
}
