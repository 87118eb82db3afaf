//! Maintenance and life-cycle statements (`CALL db.fix(...)`, `db.gc`, `db.status`,
//! `db.export`, `db.load`, `db.patch`, `db.build`): the documented examples run, every
//! call's statement reads back as the same call, bad options are refused with the options
//! named, paths stay inside the repository, and an artifact too damaged to open is
//! repaired by a statement.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use batho_engine::build::{BuildOptions, artifact_dir, build};
use batho_engine::export::{Category, ExportOptions, View};
use batho_engine::maintenance::fix::{FixOptions, FixTarget};
use batho_engine::maintenance::gc::PruneOptions;
use batho_engine::maintenance::transfer::{ExportFormat, ExportRequest, LoadRequest};
use batho_engine::maintenance::{GcRequest, MaintenanceCall, MaintenanceStatement, run_statement};
use batho_engine::patch::PatchOptions;
use batho_engine::query::{Database, QueryError, Value};

/// A built copy of the demo repository.
fn built_demo() -> (tempfile::TempDir, PathBuf) {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path().join("demo");
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/demo");
    copy_tree(&demo, &root);
    build(&root, &BuildOptions::default(), &|_| {}).unwrap();
    (scratch, root)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() != ".batho" {
                copy_tree(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The statements of the ```maintenance blocks of `docs/bql.md`.
fn documented_statements() -> Vec<String> {
    let doc = include_str!("../../docs/bql.md");
    let mut statements = Vec::new();
    let mut inside = false;
    for line in doc.lines() {
        match line.strip_prefix("```") {
            Some("maintenance") => inside = true,
            Some(_) => inside = false,
            None if inside && !line.trim().is_empty() => statements.push(line.to_string()),
            None => {}
        }
    }
    statements
}

fn no_params() -> BTreeMap<String, Value> {
    BTreeMap::new()
}

#[test]
fn the_documented_statements_run() {
    let (_scratch, root) = built_demo();
    let statements = documented_statements();
    assert!(statements.len() >= 6, "found {statements:?}");
    for text in &statements {
        let result = run_statement(&root, text, &no_params())
            .unwrap_or_else(|| panic!("not a maintenance statement: {text}"))
            .unwrap_or_else(|error| panic!("{text}: {error}"));
        assert_eq!(result.rows.len(), 1, "{text}");
        if let Some((_, yields)) = text.split_once(" YIELD ") {
            let asked: Vec<&str> = yields.split(", ").collect();
            assert_eq!(result.columns, asked, "{text}");
        }
    }
    // The artifact still opens and answers after all of them.
    let db = Database::open(&root).unwrap();
    let count = db
        .query("MATCH (f:Function) RETURN count(f)", &no_params())
        .unwrap();
    assert!(matches!(count.rows[0][0], Value::Int(n) if n > 0));
}

#[test]
fn a_call_reads_back_from_its_statement() {
    let calls = [
        MaintenanceCall::Fix(FixOptions::default()),
        MaintenanceCall::Fix(FixOptions {
            deep: true,
            dry_run: true,
            target: FixTarget::Graph,
            phase: Some(3),
            parallel: true,
        }),
        MaintenanceCall::Gc(GcRequest::Status),
        MaintenanceCall::Gc(GcRequest::Prune(PruneOptions {
            older_than_days: Some(30),
            run: Some("it's\\odd".into()),
            dry_run: true,
        })),
        MaintenanceCall::Gc(GcRequest::Compact { dry_run: false }),
        MaintenanceCall::Gc(GcRequest::Reclaim { dry_run: true }),
        MaintenanceCall::Status { verify: true },
        MaintenanceCall::Status { verify: false },
        MaintenanceCall::Export(ExportRequest {
            format: ExportFormat::Archive,
            output: Some("exports/it's.tar".into()),
            run: Some("3f2a".into()),
        }),
        MaintenanceCall::Export(ExportRequest {
            format: ExportFormat::Json(ExportOptions {
                category: Category::Files,
                include_relationships: true,
                filter_pattern: Some("src/**/*.c".into()),
                token_budget: Some(500),
                ..ExportOptions::new(View::Agent)
            }),
            output: None,
            run: None,
        }),
        MaintenanceCall::Export(ExportRequest {
            format: ExportFormat::Json(ExportOptions::new(View::Storage)),
            output: None,
            run: None,
        }),
        MaintenanceCall::Load(LoadRequest {
            archive: "/abs/path.tar".into(),
            force: true,
        }),
        MaintenanceCall::Build(BuildOptions {
            full: true,
            max_workers: Some(2),
            max_file_size_kb: Some(0),
            compile_commands: None,
        }),
        MaintenanceCall::Build(BuildOptions::default()),
        MaintenanceCall::Patch(PatchOptions {
            max_workers: Some(1),
            max_file_size_kb: Some(512),
            ..PatchOptions::default()
        }),
    ];
    for call in calls {
        let statement = call.statement();
        let read = MaintenanceStatement::parse(&statement, &no_params())
            .unwrap_or_else(|| panic!("{statement} is not read as maintenance"))
            .unwrap_or_else(|error| panic!("{statement}: {error}"));
        assert_eq!(read.call, call, "{statement}");
    }
}

#[test]
fn options_come_from_parameters_too() {
    let params = BTreeMap::from([(
        "options".to_string(),
        Value::Map(BTreeMap::from([
            ("action".to_string(), Value::from("prune")),
            ("older_than_days".to_string(), Value::Int(7)),
        ])),
    )]);
    let read = MaintenanceStatement::parse("call DB.GC($options)", &params)
        .unwrap()
        .unwrap();
    let expected = GcRequest::Prune(PruneOptions {
        older_than_days: Some(7),
        ..PruneOptions::default()
    });
    assert_eq!(read.call, MaintenanceCall::Gc(expected));
}

#[test]
fn bad_options_are_refused_with_what_would_do() {
    let cases = [
        (
            "CALL db.fix({deepp: true})",
            "no option 'deepp'; the options: deep, dry_run",
        ),
        (
            "CALL db.fix({deep: 1})",
            "option 'deep' must be a boolean, got 1",
        ),
        (
            "CALL db.fix({target: 'disk'})",
            "target 'disk' is not one of all, blobs",
        ),
        (
            "CALL db.fix({phase: 5})",
            "phase must be 1, 2, 3 or 4, got 5",
        ),
        ("CALL db.fix({}, {})", "takes one map of options"),
        ("CALL db.fix('deep')", "takes a map of options"),
        (
            "CALL db.gc({action: 'prune'})",
            "action 'prune' needs older_than_days or run",
        ),
        (
            "CALL db.gc({action: 'shrink'})",
            "action 'shrink' is not one of status",
        ),
        (
            "CALL db.gc({older_than_days: 3})",
            "choose what action 'prune' removes",
        ),
        (
            "CALL db.gc({action: 'prune', older_than_days: -1})",
            "days >= 0, got -1",
        ),
        (
            "CALL db.fix() YIELD outcome WHERE outcome = 'clean'",
            "runs alone",
        ),
        ("EXPLAIN CALL db.gc()", "runs alone"),
        ("CALL db.fix($missing)", "missing"),
        (
            "CALL db.export({format: 'archive', view: 'agent'})",
            "option 'view' shapes a JSON view",
        ),
        (
            "CALL db.export({format: 'csv'})",
            "format 'csv' is not one of json, archive",
        ),
        (
            "CALL db.export({token_budget: 0})",
            "token_budget must be a positive integer",
        ),
        ("CALL db.export({view: 'all'})", "view 'all' is not one of"),
        (
            "CALL db.export({output: 3})",
            "option 'output' must be a string",
        ),
        ("CALL db.load()", "needs the option archive"),
        (
            "CALL db.load({archive: 'a.tar', forse: true})",
            "no option 'forse'",
        ),
        (
            "CALL db.build({max_workers: 0})",
            "option 'max_workers' must be an integer >= 1, got 0",
        ),
        ("CALL db.patch({full: true})", "no option 'full'"),
        ("CALL db.status({verify: 'yes'})", "must be a boolean"),
    ];
    for (text, expected) in cases {
        let error = match MaintenanceStatement::parse(text, &no_params()) {
            Some(Err(error)) => error.to_string(),
            other => panic!("{text}: expected an error, got {other:?}"),
        };
        assert!(error.contains(expected), "{text}: {error}");
    }
}

#[test]
fn other_queries_are_not_maintenance() {
    for text in [
        "CALL db.stats()",
        "MATCH (n) RETURN n",
        "CALL db.fix() RETURN 1",
        "CALL db.fix(",
        "",
    ] {
        assert!(
            MaintenanceStatement::parse(text, &no_params()).is_none(),
            "{text}"
        );
    }
}

#[test]
fn a_statement_repairs_an_artifact_too_damaged_to_open() {
    let (_scratch, root) = built_demo();
    let manifest = artifact_dir(&root).join("MANIFEST");
    std::fs::write(&manifest, b"not a manifest").unwrap();
    assert!(Database::open(&root).is_err(), "the damage stops an open");
    let dry = run_statement(
        &root,
        "CALL db.fix({dry_run: true}) YIELD outcome",
        &no_params(),
    )
    .unwrap()
    .unwrap();
    assert_ne!(dry.rows[0][0], Value::from("clean"), "the dry run sees it");
    assert!(Database::open(&root).is_err(), "a dry run changes nothing");
    let fixed = run_statement(&root, "CALL db.fix() YIELD outcome, repairs", &no_params())
        .unwrap()
        .unwrap();
    assert_eq!(
        fixed.rows[0][0],
        Value::from("repaired"),
        "{:?}",
        fixed.rows
    );
    let db = Database::open(&root).unwrap();
    assert!(db.query("MATCH (n) RETURN count(n)", &no_params()).is_ok());
}

/// The paths `db.export` writes and `db.load` reads stay inside the repository and out
/// of the artifact's own files, as batho_export's and batho_load's do.
#[test]
fn export_and_load_paths_stay_inside_the_repository() {
    let (scratch, root) = built_demo();
    let outside = scratch.path().join("outside.tar");
    let manifest = artifact_dir(&root).join("MANIFEST");
    let before = std::fs::read(&manifest).unwrap();
    let cases = [
        (
            "CALL db.export({format: 'archive', output: '../outside.tar'})".to_string(),
            "leaves the repository",
        ),
        (
            format!(
                "CALL db.export({{format: 'archive', output: '{}'}})",
                outside.display()
            ),
            "is outside the repository",
        ),
        (
            "CALL db.export({output: '.batho/MANIFEST'})".to_string(),
            "is inside the artifact folder",
        ),
        (
            "CALL db.load({archive: '/etc/hostname'})".to_string(),
            "is outside the repository",
        ),
        (
            "CALL db.load({archive: 'no/such.tar'})".to_string(),
            "no archive at",
        ),
    ];
    for (text, expected) in &cases {
        let error = run_statement(&root, text, &no_params())
            .unwrap()
            .expect_err(text);
        assert!(
            matches!(error, QueryError::Maintenance(_)),
            "{text}: {error:?}"
        );
        assert!(error.is_query_error(), "{text}: a usage error");
        assert!(error.to_string().contains(expected), "{text}: {error}");
    }
    assert!(!outside.exists());
    assert_eq!(std::fs::read(&manifest).unwrap(), before);
    // Inside the repository, an archive exported by a statement loads back.
    let exported = run_statement(
        &root,
        "CALL db.export({format: 'archive', output: './out/graph.tar'}) YIELD path",
        &no_params(),
    )
    .unwrap()
    .unwrap();
    assert!(root.join("out/graph.tar").is_file(), "{:?}", exported.rows);
    let loaded = run_statement(
        &root,
        "CALL db.load({archive: 'out/graph.tar'}) YIELD generation",
        &no_params(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(loaded.rows, vec![vec![Value::Int(2)]]);
}

#[test]
fn an_error_of_the_store_is_a_storage_error() {
    let scratch = tempfile::tempdir().unwrap();
    let outcome = run_statement(scratch.path(), "CALL db.gc()", &no_params()).unwrap();
    assert!(
        matches!(outcome, Err(QueryError::Storage(_))),
        "{outcome:?}"
    );
}

/// `batho-ql` and multi-statement scripts run maintenance statements on the open graph,
/// which then reads the generation they leave.
#[test]
fn an_open_graph_runs_them_and_reads_the_generation_they_leave() {
    let (_scratch, root) = built_demo();
    let file = root.join("src/table.c");
    let text = std::fs::read_to_string(&file).unwrap() + "\nint table_extra(void) { return 1; }\n";
    std::fs::write(&file, text).unwrap();
    let patched = batho_engine::patch::patch(&root, &Default::default()).unwrap();
    assert_eq!(patched.run.unwrap().generation, 2, "a delta over the base");
    let mut graph = batho_engine::query::OpenGraph::open(&root).unwrap();
    let options = batho_engine::query::QueryOptions::default();
    let status = graph
        .query_with(
            "CALL db.gc() YIELD current_generation",
            &no_params(),
            &options,
        )
        .unwrap();
    assert_eq!(status.rows, vec![vec![Value::Int(2)]]);
    let compacted = graph
        .query_with(
            "CALL db.gc({action: 'compact'}) YIELD generation",
            &no_params(),
            &options,
        )
        .unwrap();
    assert_eq!(compacted.rows, vec![vec![Value::Int(3)]]);
    assert!(
        graph.describe().contains("generation 3"),
        "{}",
        graph.describe()
    );
    let count = graph
        .query_with("MATCH (n) RETURN count(n)", &no_params(), &options)
        .unwrap();
    assert!(matches!(count.rows[0][0], Value::Int(n) if n > 0));
}
