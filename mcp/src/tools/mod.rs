//! The tools: argument types, validation shared by several tools, the token budget, and the
//! dual output: each tool builds one typed value ([`ToolOutput`]) that [`Reply`] renders
//! to markdown and to structuredContent.

pub(crate) mod admin;
pub(crate) mod args;
#[cfg(test)]
mod args_tests;
pub(crate) mod astria;
pub(crate) mod cells;
pub(crate) mod ctx_tree;
pub(crate) mod delta;
pub(crate) mod files;
pub(crate) mod graph;
pub(crate) mod maintain;
pub(crate) mod patch;
pub(crate) mod query_graph;
pub(crate) mod records;
pub(crate) mod transfer;

use std::fmt::Write as _;

use batho_engine::query::Value;
use batho_schema::{NodeKind, RelType};
use rmcp::model::{CallToolResult, ContentBlock};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value as Json};

use crate::error::ToolError;
use crate::tools::cells::{Record, int_of, ints_of};

/// A finished answer before the token budget is applied.
struct Answer {
    markdown: String,
    structured: Map<String, Json>,
    meta: Map<String, Json>,
}

/// A tool's answer as one typed value, printed twice: as markdown (`content`) and, through
/// its serde serialization, as `structuredContent`. The two are never filled side by side,
/// so they cannot tell different stories.
pub(crate) trait ToolOutput: Serialize {
    /// The markdown. A paged listing records in `rows` where each listed row ends and which
    /// structured items belong to it (see [`Rows`]); other answers leave `rows` alone.
    fn markdown(&self, rows: &mut Rows) -> String;
}

/// A tool's answer on its way out: its [`ToolOutput`] rendered both ways, the `meta`, and
/// the budget [`Answer`] cuts it to. The catalogue's handlers turn it into the MCP result.
pub(crate) struct Reply {
    answer: Answer,
    /// `None`: the tool cut its text to its own exact budget (query_graph's `budget`).
    max_tokens: Option<i64>,
    /// The rows of a paged listing (`None` for any other answer).
    rows: Option<Rows>,
}

impl Reply {
    /// An answer that is not a paged listing.
    pub fn new(
        output: &impl ToolOutput,
        meta: Map<String, Json>,
        max_tokens: i64,
    ) -> Result<Reply, ToolError> {
        let mut unused = Rows::new(0);
        Ok(Reply {
            answer: Answer::render(output, &mut unused, meta)?,
            max_tokens: Some(max_tokens),
            rows: None,
        })
    }

    /// An answer whose text the tool already cut to a budget of its own, counted exactly
    /// (query_graph counts o200k_base tokens): the estimate of `max_tokens` cuts nothing
    /// more, and `meta` says which budget applied.
    pub fn precut(output: &impl ToolOutput, meta: Map<String, Json>) -> Result<Reply, ToolError> {
        let mut unused = Rows::new(0);
        Ok(Reply {
            answer: Answer::render(output, &mut unused, meta)?,
            max_tokens: None,
            rows: None,
        })
    }

    /// A paged listing whose first row is row `offset`: a cut for the budget ends on a row
    /// boundary and the hints resume at the first row not shown.
    pub fn paged(
        output: &impl ToolOutput,
        meta: Map<String, Json>,
        max_tokens: i64,
        offset: i64,
    ) -> Result<Reply, ToolError> {
        let mut rows = Rows::new(offset);
        Ok(Reply {
            answer: Answer::render(output, &mut rows, meta)?,
            max_tokens: Some(max_tokens),
            rows: Some(rows),
        })
    }
}

impl From<Reply> for CallToolResult {
    fn from(reply: Reply) -> CallToolResult {
        match reply.rows {
            Some(rows) => reply.answer.finish_paged(reply.max_tokens, rows),
            None => reply.answer.finish(reply.max_tokens),
        }
    }
}

/// Tokens as the spec estimates them: characters / 4, rounded up.
pub(crate) fn tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// The rows of a paged listing inside an answer, so that a cut made for the token budget
/// ends on a row boundary and the follow-up hint resumes at the first row not shown: an
/// agent that follows the hints from offset 0 sees every row once.
///
/// A row is one listed item with everything printed under it (graph_query prints an
/// entity's edges under it), so a kept row is always complete. Structured arrays are cut
/// to the same rows: each of their items is tagged with the row it belongs to.
pub(crate) struct Rows {
    /// The `offset` argument this answer started from.
    offset: i64,
    /// Where each finished row's text ends in the markdown.
    ends: Vec<usize>,
    /// Whether rows exist after the last one built (the page was full).
    has_more: bool,
    /// For each structured array, the row of each of its items.
    tagged: Vec<(&'static str, Vec<usize>)>,
}

impl Rows {
    /// An empty listing starting at `offset`.
    pub fn new(offset: i64) -> Rows {
        Rows {
            offset,
            ends: Vec::new(),
            has_more: false,
            tagged: Vec::new(),
        }
    }

    /// Marks the end of the current row: `markdown_len` is the markdown's length after it.
    pub fn end_row(&mut self, markdown_len: usize) {
        self.ends.push(markdown_len);
    }

    /// Records that the next item of the structured array `key` (a top-level key, or a
    /// path such as `file_dependencies/outgoing`) belongs to the current row (the one not
    /// ended yet).
    pub fn tag(&mut self, key: &'static str) {
        let row = self.ends.len();
        match self.tagged.iter_mut().find(|(k, _)| *k == key) {
            Some((_, rows)) => rows.push(row),
            None => self.tagged.push((key, vec![row])),
        }
    }

    /// Says that more rows exist after this page.
    pub fn set_has_more(&mut self, has_more: bool) {
        self.has_more = has_more;
    }

    /// The offset of the first row after the last one built.
    pub fn next_offset(&self) -> i64 {
        self.offset + self.ends.len() as i64
    }

    /// Appends the page's follow-up line (`More results: call again with offset=N`) when
    /// more rows exist; `what` names the rows.
    pub fn write_more(&self, markdown: &mut String, what: &str) {
        if self.has_more {
            markdown.push_str(&format!(
                "\nMore {what}: call again with offset={}\n",
                self.next_offset()
            ));
        }
    }

    /// The resume hint for a page that ends after `shown` rows.
    fn resume_hint(&self, shown: usize) -> String {
        format!(
            "more results: call again with offset={}",
            self.offset + shown as i64
        )
    }
}

impl Answer {
    /// The markdown and `structuredContent` of `output`.
    fn render(
        output: &impl ToolOutput,
        rows: &mut Rows,
        meta: Map<String, Json>,
    ) -> Result<Answer, ToolError> {
        let markdown = output.markdown(rows);
        let structured = match serde_json::to_value(output) {
            Ok(Json::Object(structured)) => structured,
            Ok(_) => return Err(ToolError::server("a tool's answer is not a JSON object")),
            Err(e) => return Err(ToolError::server(format!("cannot encode the answer: {e}"))),
        };
        Ok(Answer {
            markdown,
            structured,
            meta,
        })
    }

    /// Applies `max_tokens` (cutting at a line boundary and appending `[truncated]`),
    /// fills `meta.tokens_used` / `token_budget` / `truncated`, and builds the result.
    fn finish(self, max_tokens: Option<i64>) -> CallToolResult {
        self.finish_rows(max_tokens, None, None)
    }

    /// [`Answer::finish`] for a paged listing: a cut ends on a row boundary, the structured
    /// arrays keep the same rows, and the hint (and `structuredContent.pagination`) resumes
    /// at the first row not shown. Without a cut, a full page gets the same hint.
    fn finish_paged(self, max_tokens: Option<i64>, rows: Rows) -> CallToolResult {
        let hint = rows.has_more.then(|| rows.resume_hint(rows.ends.len()));
        self.finish_rows(max_tokens, hint, Some(rows))
    }

    fn finish_rows(
        mut self,
        max_tokens: Option<i64>,
        mut hint: Option<String>,
        mut rows: Option<Rows>,
    ) -> CallToolResult {
        self.prepend_stale_notice(rows.as_mut());
        let mut truncated = false;
        let budget = max_tokens.map(|max| usize::try_from(max.max(1)).unwrap_or(usize::MAX));
        if let Some(budget) = budget.filter(|budget| tokens(&self.markdown) > *budget) {
            let shown_rows = self.cut_to_budget(budget, rows.as_ref());
            if let (Some(rows), Some(shown)) = (&rows, shown_rows) {
                let more = shown < rows.ends.len() || rows.has_more;
                hint = more.then(|| rows.resume_hint(shown));
                // A kept row ends the text less its newline.
                if self.markdown.len() + 1 < rows.ends.first().copied().unwrap_or(0) {
                    // Not even the first row fitted: say so rather than skip it quietly.
                    hint = Some(format!(
                        "max_tokens is too small for one row (it is in structuredContent); raise it{}",
                        hint.map(|h| format!(", or {h}")).unwrap_or_default()
                    ));
                }
                self.keep_structured_rows(rows, shown, more);
            }
            self.markdown.push_str("\n[truncated]");
            if let Some(h) = &hint {
                self.markdown.push_str(" — ");
                self.markdown.push_str(h);
            }
            truncated = true;
        }
        if let Some(budget) = budget {
            self.meta.insert("token_budget".into(), budget.into());
        }
        self.meta
            .insert("tokens_used".into(), tokens(&self.markdown).into());
        self.meta.insert("truncated".into(), truncated.into());
        // A listing's hint says where the next page starts, cut or not; any other hint only
        // explains a cut.
        if let Some(h) = hint.filter(|_| truncated || rows.is_some()) {
            self.meta.insert("hint".into(), h.into());
        }
        self.structured
            .insert("meta".into(), Json::Object(self.meta));
        let mut r = CallToolResult::success(vec![ContentBlock::text(self.markdown)]);
        r.structured_content = Some(Json::Object(self.structured));
        r
    }

    /// Puts the staleness notice first; row ends move with the text.
    fn prepend_stale_notice(&mut self, rows: Option<&mut Rows>) {
        let Some(notice) = self
            .meta
            .get("stale")
            .and_then(|s| s.get("notice"))
            .and_then(Json::as_str)
        else {
            return;
        };
        let prefix = format!("> {notice}\n\n");
        if let Some(rows) = rows {
            rows.ends.iter_mut().for_each(|end| *end += prefix.len());
        }
        self.markdown.insert_str(0, &prefix);
    }

    /// Cuts the markdown to fit `budget` tokens with room for the marker and the hint: at
    /// the last row boundary that fits when the answer has rows (at least one row is kept,
    /// cut at a line inside it when even that one does not fit), else at a line boundary.
    /// Returns how many rows the next call must skip.
    fn cut_to_budget(&mut self, budget: usize, rows: Option<&Rows>) -> Option<usize> {
        // The marker and a resume hint take under 90 bytes.
        let room = (budget * 4).saturating_sub(90);
        let mut cut = room.min(self.markdown.len());
        while !self.markdown.is_char_boundary(cut) {
            cut -= 1;
        }
        let line_cut = self.markdown[..cut].rfind('\n').unwrap_or(0);
        let Some(rows) = rows else {
            self.markdown.truncate(line_cut);
            return None;
        };
        let fitting = rows.ends.iter().take_while(|end| **end <= cut).count();
        if fitting > 0 {
            self.markdown.truncate(rows.ends[fitting - 1]);
            // The row ends include their newline; the marker starts its own line.
            if self.markdown.ends_with('\n') {
                self.markdown.pop();
            }
            return Some(fitting);
        }
        self.markdown.truncate(line_cut);
        Some(rows.ends.len().min(1))
    }

    /// Cuts every tagged structured array to the items of the first `shown` rows and
    /// updates `pagination` to match.
    fn keep_structured_rows(&mut self, rows: &Rows, shown: usize, more: bool) {
        for (key, row_of_item) in &rows.tagged {
            // A key may name a nested array: "file_dependencies/outgoing".
            let mut path = key.split('/');
            let first = path.next().unwrap_or_default();
            let mut target = self.structured.get_mut(first);
            for part in path {
                target = target.and_then(|value| value.get_mut(part));
            }
            if let Some(Json::Array(items)) = target {
                let mut position = 0;
                items.retain(|_| {
                    let keep = row_of_item.get(position).is_some_and(|row| *row < shown);
                    position += 1;
                    keep
                });
            }
        }
        if let Some(Json::Object(pagination)) = self.structured.get_mut("pagination") {
            let next = rows.offset + shown as i64;
            pagination.insert("returned".into(), shown.into());
            pagination.insert("has_more".into(), more.into());
            pagination.insert("next_offset".into(), more.then_some(next).into());
        }
    }
}

/// `structuredContent.pagination` of a paged listing.
#[derive(Serialize)]
pub(crate) struct Pagination {
    offset: i64,
    limit: i64,
    returned: usize,
    has_more: bool,
    /// The offset of the next page (`None` on the last).
    next_offset: Option<i64>,
}

impl Pagination {
    /// A page of `returned` rows from `offset`, at most `limit`.
    pub(crate) fn new(offset: i64, limit: i64, returned: usize, has_more: bool) -> Pagination {
        Pagination {
            offset,
            limit,
            returned,
            has_more,
            next_offset: has_more.then_some(offset + returned as i64),
        }
    }
}

/// A confidence as the JSON shows it: rounded to four decimals.
pub(crate) fn four_decimals<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64((value * 1e4).round() / 1e4)
}

/// The spec's role names, in bit order.
pub(crate) const ROLES: [&str; 9] = [
    "Definition",
    "Import",
    "WriteAccess",
    "ReadAccess",
    "Generated",
    "Declaration",
    "Dynamic",
    "Heuristic",
    "Inactive",
];

/// Canonical role names (case-insensitive input).
pub(crate) fn roles(input: &[String]) -> Result<Vec<&'static str>, ToolError> {
    input
        .iter()
        .map(|r| {
            ROLES
                .iter()
                .find(|c| c.eq_ignore_ascii_case(r.trim()))
                .copied()
                .ok_or_else(|| {
                    ToolError::client(format!(
                        "Invalid symbol role '{r}'. Valid roles: {}",
                        ROLES.join(", ")
                    ))
                    .hint("role names are case-insensitive")
                })
        })
        .collect()
}

/// Canonical relation type names; `IMPORTS` (the tools' name) means `INCLUDES`.
pub(crate) fn rel_types(input: &[String]) -> Result<Vec<&'static str>, ToolError> {
    input
        .iter()
        .map(|t| {
            let t = t.trim();
            if t.eq_ignore_ascii_case("imports") {
                return Ok(RelType::Includes.name());
            }
            RelType::ALL
                .iter()
                .find(|r| r.name().eq_ignore_ascii_case(t))
                .map(|r| r.name())
                .ok_or_else(|| {
                    let valid: Vec<&str> = RelType::ALL.iter().map(|r| r.name()).collect();
                    ToolError::client(format!(
                        "Invalid relation type '{t}'. Valid: {}",
                        valid.join(", ")
                    ))
                })
        })
        .collect()
}

/// Canonical node kind names (case-insensitive input).
pub(crate) fn kinds(input: &[String]) -> Result<Vec<&'static str>, ToolError> {
    input
        .iter()
        .map(|t| {
            let t = t.trim();
            NodeKind::ALL
                .iter()
                .find(|k| k.name().eq_ignore_ascii_case(t))
                .map(|k| k.name())
                .ok_or_else(|| {
                    let valid: Vec<&str> = NodeKind::ALL.iter().map(|k| k.name()).collect();
                    ToolError::client(format!(
                        "Invalid entity type '{t}'. Valid: {}",
                        valid.join(", ")
                    ))
                })
        })
        .collect()
}

/// Validates a 0..=1 threshold; returns the value compared against (a hair lower, so a
/// threshold of 0.85 keeps edges stored as the f32 0.84999996).
pub(crate) fn threshold(name: &str, v: Option<f64>) -> Result<Option<f64>, ToolError> {
    match v {
        None => Ok(None),
        Some(t) if (0.0..=1.0).contains(&t) => Ok(Some(t - 1e-6)),
        Some(t) => Err(ToolError::client(format!(
            "{name} must be between 0.0 and 1.0 inclusive, got {t}"
        ))
        .hint("use 0.85 for high-confidence edges only, or 0.0 to include everything")),
    }
}

pub(crate) fn positive(name: &str, v: i64) -> Result<i64, ToolError> {
    if v <= 0 {
        return Err(ToolError::client(format!(
            "{name} must be a positive integer, got {v}"
        )));
    }
    Ok(v)
}

/// Direction of edges relative to an entity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    Outgoing,
    Incoming,
    Both,
}

impl Direction {
    pub fn parse(param: &str, v: Option<&str>, default: Direction) -> Result<Direction, ToolError> {
        match v.map(|s| s.to_ascii_lowercase()).as_deref() {
            None | Some("") => Ok(default),
            Some("outgoing") => Ok(Direction::Outgoing),
            Some("incoming") => Ok(Direction::Incoming),
            Some("both") => Ok(Direction::Both),
            Some(o) => Err(ToolError::client(format!(
                "Invalid {param} '{o}'. Valid: outgoing, incoming, both"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Direction::Outgoing => "outgoing",
            Direction::Incoming => "incoming",
            Direction::Both => "both",
        }
    }

    /// The pattern arrows around a relationship: `(left, right)`.
    pub fn arrows(self) -> (&'static str, &'static str) {
        match self {
            Direction::Outgoing => ("-", "->"),
            Direction::Incoming => ("<-", "-"),
            Direction::Both => ("-", "-"),
        }
    }
}

/// `:A|B` or empty.
pub(crate) fn type_label(types: &[&str]) -> String {
    if types.is_empty() {
        String::new()
    } else {
        format!(":{}", types.join("|"))
    }
}

/// A WHERE fragment for the relationship filters on `r` (empty when there are none).
pub(crate) fn rel_filter(roles: &[&str], min_conf: Option<f64>) -> Vec<String> {
    let mut w = Vec::new();
    if !roles.is_empty() {
        let any: Vec<String> = roles
            .iter()
            .map(|r| format!("has_role(r, '{r}')"))
            .collect();
        w.push(format!("({})", any.join(" OR ")));
    }
    if min_conf.is_some() {
        w.push("r.confidence >= $min_confidence".into());
    }
    w
}

/// What leaves inactive code out (entities defined, and uses written, in branches the
/// build's configuration compiles out): a condition per relationship variable and per
/// node variable, none when `include` (or on graphs built without a configuration, where
/// every entity is active and no relationship has the Inactive role, they pass anyway).
pub(crate) fn active_filter(include: bool, rel: Option<&str>, nodes: &[&str]) -> Vec<String> {
    if include {
        return Vec::new();
    }
    rel.map(|r| format!("NOT has_role({r}, 'Inactive')"))
        .into_iter()
        .chain(nodes.iter().map(|n| format!("{n}.is_active")))
        .collect()
}

/// The relationship filters graph_query and trace_path share, validated.
pub(crate) struct RelationFilters {
    /// Canonical relation type names (empty: any).
    pub rel_types: Vec<&'static str>,
    /// Canonical role names (empty: any).
    pub roles: Vec<&'static str>,
    /// Minimum confidence, already checked to lie in 0..=1.
    pub min_conf: Option<f64>,
    /// Edge direction.
    pub dir: Direction,
}

impl RelationFilters {
    /// Validates the four shared parameters; `default_dir` differs per tool (spec).
    pub(crate) fn parse(
        relation_types: Option<&[String]>,
        symbol_roles: Option<&[String]>,
        confidence_threshold: Option<f64>,
        relation_direction: &str,
        default_dir: Direction,
    ) -> Result<RelationFilters, ToolError> {
        Ok(RelationFilters {
            rel_types: rel_types(relation_types.unwrap_or_default())?,
            roles: roles(symbol_roles.unwrap_or_default())?,
            // Every confidence is 0 or more: a threshold of 0 filters nothing, and as a
            // hop filter it would turn trace_path's shortest path into an enumeration.
            min_conf: threshold("confidence_threshold", confidence_threshold)?
                .filter(|&minimum| minimum > 0.0),
            dir: Direction::parse("relation_direction", Some(relation_direction), default_dir)?,
        })
    }
}

/// The relationship filters graph_query and trace_path share, as their `applied_filters`
/// echo them: only the filters that were given, the direction always.
#[derive(Serialize)]
pub(crate) struct AppliedRelationFilters {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    relation_types: Vec<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    symbol_roles: Vec<&'static str>,
    /// The threshold as given (not the value compared against).
    #[serde(skip_serializing_if = "Option::is_none")]
    confidence_threshold: Option<f64>,
    relation_direction: &'static str,
}

impl AppliedRelationFilters {
    /// The filters of `filters`, with the threshold as the caller gave it.
    pub(crate) fn new(filters: &RelationFilters, threshold: Option<f64>) -> Self {
        AppliedRelationFilters {
            relation_types: filters.rel_types.clone(),
            symbol_roles: filters.roles.clone(),
            confidence_threshold: threshold,
            relation_direction: filters.dir.name(),
        }
    }
}

pub(crate) fn where_clause(parts: &[String]) -> String {
    if parts.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", parts.join(" AND "))
    }
}

/// `L12-30` (or `L12`).
pub(crate) fn lines(start: i64, end: i64) -> String {
    if end > start {
        format!("L{start}-{end}")
    } else {
        format!("L{start}")
    }
}

/// The use sites a relationship folds (`r.count`, `r.lines`): a function that calls another
/// 25 times has one `CALLS` relationship holding the 25 sites. Serialized as the fields
/// `count` and `lines` of the relationship's JSON.
#[derive(Serialize)]
pub(crate) struct UseSites {
    /// How many sites (calls, reads, …) the relationship folds.
    pub(crate) count: i64,
    /// Their distinct lines, ascending.
    pub(crate) lines: Vec<i64>,
}

/// At most this many lines are printed per relationship; the JSON keeps them all.
const SHOWN_SITE_LINES: usize = 8;

impl UseSites {
    /// The sites in the cells `count` and `lines` of a result row.
    pub(crate) fn from_cells(count: &Value, lines: &Value) -> UseSites {
        UseSites {
            count: int_of(count),
            lines: ints_of(lines),
        }
    }

    /// The sites in the columns `count_column` and `lines_column` of a row.
    pub(crate) fn read(
        record: &Record,
        count_column: &str,
        lines_column: &str,
    ) -> Result<UseSites, ToolError> {
        Ok(UseSites::from_cells(
            record.value(count_column)?,
            record.value(lines_column)?,
        ))
    }

    /// ` ×3` when a relationship folds more than one site, else nothing.
    pub(crate) fn times(&self) -> String {
        if self.count > 1 {
            format!(" ×{}", self.count)
        } else {
            String::new()
        }
    }

    /// `L12,40,77` (the first lines, then `,…+N`), or nothing without a line.
    pub(crate) fn lines_text(&self) -> String {
        if self.lines.is_empty() {
            return String::new();
        }
        let shown: Vec<String> = self
            .lines
            .iter()
            .take(SHOWN_SITE_LINES)
            .map(i64::to_string)
            .collect();
        let mut text = format!("L{}", shown.join(","));
        if self.lines.len() > SHOWN_SITE_LINES {
            let _ = write!(text, ",…+{}", self.lines.len() - SHOWN_SITE_LINES);
        }
        text
    }
}
