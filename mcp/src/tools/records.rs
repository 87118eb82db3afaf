//! The row shapes several tools share, each decoded once from a query's named columns.

use serde::Serialize;

use super::UseSites;
use super::cells::{FromRecord, Record};
use super::four_decimals;
use crate::error::ToolError;

/// An entity as a listing returns it: `n.id AS id, n.name AS name, n.kind AS kind, n.file
/// AS file, n.start_line AS start_line, n.end_line AS end_line`, and `n.signature AS
/// signature` where the listing shows signatures.
#[derive(Serialize)]
pub(crate) struct EntityRow {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) file: String,
    pub(crate) start_line: i64,
    pub(crate) end_line: i64,
    /// `None` when the query does not return signatures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) signature: Option<String>,
}

impl FromRecord for EntityRow {
    fn from_record(record: &Record) -> Result<EntityRow, ToolError> {
        Ok(EntityRow {
            id: record.text("id")?,
            name: record.text("name")?,
            kind: record.text("kind")?,
            file: record.text("file")?,
            start_line: record.int("start_line")?,
            end_line: record.int("end_line")?,
            signature: record
                .has("signature")
                .then(|| record.text("signature"))
                .transpose()?,
        })
    }
}

/// A relationship of a listed entity: `n.id AS entity, startNode(r).id AS source, type(r)
/// AS type, endNode(r).id AS target, r.confidence AS confidence, roles(r) AS roles,
/// r.strategy AS strategy, r.line AS line, r.count AS count, r.lines AS lines`.
#[derive(Serialize)]
pub(crate) struct EdgeRow {
    /// The listed entity it belongs to.
    #[serde(skip)]
    pub(crate) entity: String,
    #[serde(rename = "source_id")]
    pub(crate) source: String,
    #[serde(rename = "relation_type")]
    pub(crate) relation: String,
    #[serde(rename = "target_id")]
    pub(crate) target: String,
    #[serde(serialize_with = "four_decimals")]
    pub(crate) confidence: f64,
    pub(crate) roles: Vec<String>,
    pub(crate) strategy: String,
    pub(crate) line: i64,
    #[serde(flatten)]
    pub(crate) sites: UseSites,
}

impl FromRecord for EdgeRow {
    fn from_record(record: &Record) -> Result<EdgeRow, ToolError> {
        Ok(EdgeRow {
            entity: record.text("entity")?,
            source: record.text("source")?,
            relation: record.text("type")?,
            target: record.text("target")?,
            confidence: record.float("confidence")?,
            roles: record.texts("roles")?,
            strategy: record.text("strategy")?,
            line: record.int("line")?,
            sites: UseSites::read(record, "count", "lines")?,
        })
    }
}

/// A community as `db.communities` yields it.
pub(crate) struct CommunityRow {
    pub(crate) id: i64,
    pub(crate) label: String,
    pub(crate) entities: i64,
    pub(crate) files: i64,
    pub(crate) cohesion: f64,
}

impl FromRecord for CommunityRow {
    fn from_record(record: &Record) -> Result<CommunityRow, ToolError> {
        Ok(CommunityRow {
            id: record.int("community")?,
            label: record.text("label")?,
            entities: record.int("entities")?,
            files: record.int("files")?,
            cohesion: record.float("cohesion")?,
        })
    }
}
