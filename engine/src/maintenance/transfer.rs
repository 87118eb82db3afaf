//! `db.export` and `db.load`: a code graph written to a file (a JSON view, or the transport
//! archive) and an archive made the current generation. Both name a file inside the
//! repository, checked by [`confined`]: the rule `batho_export` and `batho_load` follow,
//! so a statement pasted from `meta.query` reaches no more than the tool did.

use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use super::MaintenanceError;
use super::archive::{self, ExportReport, LoadOptions, LoadReport};
use super::statement::{Options, flag, quoted, text_option};
use crate::build::ARTIFACT_DIR;
use crate::export::{self, Category, ExportOptions, ExportStats, View};
use crate::repo_files::{self, RepoReadError};

/// What `db.export` writes.
#[derive(Clone, Debug, PartialEq)]
pub enum ExportFormat {
    /// The transport archive that `db.load` reads.
    Archive,
    /// A JSON view of the graph.
    Json(ExportOptions),
}

/// `db.export`: which generation, in which form, to which file.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportRequest {
    /// The form.
    pub format: ExportFormat,
    /// The file, relative to the repository root (or absolute under it); `None` is
    /// [`default_export_path`] named after the root folder.
    pub output: Option<String>,
    /// The run whose generation is exported; `None` is the current generation.
    pub run: Option<String>,
}

/// `db.load`: the archive to make current.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadRequest {
    /// The archive, relative to the repository root (or absolute under it).
    pub archive: String,
    /// Replace an artifact of another database or with newer runs.
    pub force: bool,
}

/// Why a path given to an export or a load was refused.
#[derive(Debug, thiserror::Error)]
#[error("'{requested}' {reason}")]
pub struct PathRefused {
    /// The path as given.
    pub requested: String,
    /// Why, in words that follow the path.
    pub reason: String,
}

/// Where an export may write or a load may read `requested`: a path inside the repository
/// at `root`, relative or absolute under it, with no `..` and no symbolic link on the way
/// (the rule every read of source follows), and inside `.batho/` only under `exports/` (an
/// export once overwrote the repository's own `.batho/MANIFEST`).
pub fn confined(root: &Path, requested: &str) -> Result<PathBuf, PathRefused> {
    let refuse = |reason: &str| PathRefused {
        requested: requested.to_string(),
        reason: reason.to_string(),
    };
    let given = Path::new(requested);
    let relative = if given.is_absolute() {
        given
            .strip_prefix(root)
            .map_err(|_| refuse("is outside the repository"))?
    } else {
        given
    };
    // `./` says nothing; everything else is checked below.
    let parts: Vec<String> = relative
        .components()
        .filter(|part| !matches!(part, Component::CurDir))
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        return Err(refuse("names no file"));
    }
    if parts[0] == ARTIFACT_DIR && (parts.len() < 3 || parts[1] != "exports") {
        return Err(refuse(
            "is inside the artifact folder (only .batho/exports/ is allowed)",
        ));
    }
    repo_files::confined_new_path(root, &parts.join("/")).map_err(|e| match e {
        RepoReadError::Outside { .. } => refuse("leaves the repository (`..` or a root)"),
        RepoReadError::Symlink { .. } => refuse("reaches a symbolic link; links are not followed"),
        RepoReadError::Io { source, .. } => refuse(&format!("cannot be reached: {source}")),
    })
}

/// Whether `c` may be part of a repository's registered name (letters, digits, `-`, `_`
/// and `.`): the names the MCP registry accepts, and so the characters a file name made
/// from one keeps.
pub fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// The file an export writes when none is named, relative to the repository root:
/// `.batho/exports/<label>-<view or archive>-g<generation>.<json or tar>`. `label` is the
/// repository's name with anything but letters, digits, `-`, `_` and `.` made `_` (a
/// registry written before names were checked may hold `../`).
pub fn default_export_path(label: &str, format: &ExportFormat, generation: u64) -> String {
    let label: String = label
        .chars()
        .map(|c| if is_name_char(c) { c } else { '_' })
        .collect();
    let (kind, extension) = match format {
        ExportFormat::Archive => ("archive", "tar"),
        ExportFormat::Json(options) => (options.view.name(), "json"),
    };
    format!(
        "{ARTIFACT_DIR}/exports/{}-{kind}-g{generation}.{extension}",
        label.trim_start_matches('.')
    )
}

/// What `db.export` wrote.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum ExportDone {
    /// The transport archive.
    Archive(ExportReport),
    /// A JSON view: the file and its counts.
    Json {
        /// The file written.
        path: PathBuf,
        /// What it holds.
        #[serde(flatten)]
        stats: ExportStats,
    },
}

impl ExportDone {
    /// The generation exported.
    pub fn generation(&self) -> u64 {
        match self {
            ExportDone::Archive(report) => report.generation,
            ExportDone::Json { stats, .. } => stats.generation,
        }
    }
}

/// Runs `request` on the artifact of the repository at `root`.
pub fn export(root: &Path, request: &ExportRequest) -> Result<ExportDone, MaintenanceError> {
    let dir = root.join(ARTIFACT_DIR);
    let generation = match &request.run {
        Some(run) => Some(export::generation_of_run(&dir, run)?),
        None => None,
    };
    let artifact = match generation {
        Some(generation) => super::Artifact::open_generation(&dir, generation)?,
        None => super::Artifact::open(&dir)?,
    };
    let relative = match &request.output {
        Some(output) => output.clone(),
        None => {
            let label = root.file_name().unwrap_or_default().to_string_lossy();
            default_export_path(&label, &request.format, artifact.generation())
        }
    };
    let path = confined(root, &relative)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| {
            MaintenanceError::Storage(super::StorageError::Io {
                path: parent.to_path_buf(),
                source,
            })
        })?;
    }
    Ok(match &request.format {
        ExportFormat::Archive => ExportDone::Archive(archive::export_archive(
            &dir,
            Some(artifact.generation()),
            &path,
        )?),
        ExportFormat::Json(options) => ExportDone::Json {
            stats: export::export_to_file(&artifact, root, options, &path)?,
            path,
        },
    })
}

/// Runs `request` on the artifact of the repository at `root`.
pub fn load(root: &Path, request: &LoadRequest) -> Result<LoadReport, MaintenanceError> {
    let path = confined(root, &request.archive)?;
    if !path.is_file() {
        return Err(MaintenanceError::NoArchive { path });
    }
    let options = LoadOptions {
        force: request.force,
        ..LoadOptions::default()
    };
    Ok(archive::load_archive(
        &root.join(ARTIFACT_DIR),
        &path,
        &options,
    )?)
}

/// The options `db.export` takes.
pub(super) const EXPORT_OPTIONS: [&str; 8] = [
    "format",
    "output",
    "run",
    "view",
    "category",
    "include_relationships",
    "filter_pattern",
    "token_budget",
];
/// The options `db.load` takes.
pub(super) const LOAD_OPTIONS: [&str; 2] = ["archive", "force"];

/// The options of a JSON view that an archive does not take.
const VIEW_OPTIONS: [&str; 5] = [
    "view",
    "category",
    "include_relationships",
    "filter_pattern",
    "token_budget",
];

/// `db.export`'s options read into a request.
pub(super) fn export_request(options: &Options) -> Result<ExportRequest, String> {
    let format = match text_option(options, "format")?.unwrap_or("json") {
        "archive" => {
            if let Some(key) = VIEW_OPTIONS.iter().find(|key| options.contains_key(**key)) {
                return Err(format!(
                    "option '{key}' shapes a JSON view; format 'archive' takes output and run"
                ));
            }
            ExportFormat::Archive
        }
        "json" => ExportFormat::Json(json_options(options)?),
        other => return Err(format!("format '{other}' is not one of json, archive")),
    };
    Ok(ExportRequest {
        format,
        output: text_option(options, "output")?.map(str::to_string),
        run: text_option(options, "run")?.map(str::to_string),
    })
}

fn json_options(options: &Options) -> Result<ExportOptions, String> {
    let view = match text_option(options, "view")? {
        None => View::Storage,
        Some(name) => View::parse(name)
            .ok_or_else(|| format!("view '{name}' is not one of storage, agent"))?,
    };
    let category = match text_option(options, "category")? {
        None => Category::All,
        Some(name) => Category::parse(name).ok_or_else(|| {
            format!("category '{name}' is not one of all, entities, relationships, files")
        })?,
    };
    let token_budget = match options.get("token_budget") {
        None => None,
        Some(batho_lang::Value::Int(tokens)) if *tokens > 0 => Some(*tokens as u64),
        Some(other) => {
            return Err(format!(
                "token_budget must be a positive integer, got {other}"
            ));
        }
    };
    Ok(ExportOptions {
        view,
        category,
        include_relationships: flag(options, "include_relationships")?,
        filter_pattern: text_option(options, "filter_pattern")?.map(str::to_string),
        token_budget,
        include_source: true,
    })
}

/// `db.load`'s options read into a request.
pub(super) fn load_request(options: &Options) -> Result<LoadRequest, String> {
    let archive = text_option(options, "archive")?
        .ok_or("needs the option archive: the archive's path in the repository")?;
    Ok(LoadRequest {
        archive: archive.to_string(),
        force: flag(options, "force")?,
    })
}

/// `db.export`'s options written out, defaults left out.
pub(super) fn export_options(request: &ExportRequest) -> Vec<String> {
    let mut written = Vec::new();
    match &request.format {
        ExportFormat::Archive => written.push("format: 'archive'".to_string()),
        ExportFormat::Json(options) => {
            if options.view != View::Storage {
                written.push(format!("view: '{}'", options.view.name()));
            }
            if options.category != Category::All {
                written.push(format!("category: '{}'", options.category.name()));
            }
            if options.include_relationships {
                written.push("include_relationships: true".into());
            }
            if let Some(pattern) = &options.filter_pattern {
                written.push(format!("filter_pattern: {}", quoted(pattern)));
            }
            if let Some(tokens) = options.token_budget {
                written.push(format!("token_budget: {tokens}"));
            }
        }
    }
    if let Some(output) = &request.output {
        written.push(format!("output: {}", quoted(output)));
    }
    if let Some(run) = &request.run {
        written.push(format!("run: {}", quoted(run)));
    }
    written
}

/// `db.load`'s options written out, defaults left out.
pub(super) fn load_options(request: &LoadRequest) -> Vec<String> {
    let mut written = vec![format!("archive: {}", quoted(&request.archive))];
    if request.force {
        written.push("force: true".into());
    }
    written
}
