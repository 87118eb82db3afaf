//! Configurations end to end: `batho build` reads `batho.yaml`'s `defines:` (or a
//! compilation database), BQL sees `n.is_active` and the `Inactive` role, and the MCP
//! tools leave inactive code out unless `include_inactive` is set.

mod common;
mod mcp_client;

use std::path::Path;

use common::{arg, run, run_ok};
use mcp_client::Client;
use serde_json::json;

const HEADER: &str = "#ifndef CFG_H\n#define CFG_H\n#define check(x) ((void)0)\n#endif\n";
const MAIN: &str = "\
#include \"cfg.h\"
int helper(int x) { return x; }
#ifdef USE_FAST
int fast(int x) { return helper(x) * 2; }
#endif
int run(int x) {
#ifdef USE_FAST
  return fast(x);
#else
  check(helper(x) > 0);
  return x;
#endif
}
";

fn repo(config: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cfg.h"), HEADER).unwrap();
    std::fs::write(dir.path().join("main.c"), MAIN).unwrap();
    if let Some(yaml) = config {
        std::fs::write(dir.path().join("batho.yaml"), yaml).unwrap();
    }
    run_ok(&["build", arg(dir.path())]);
    dir
}

fn query(repo: &Path, q: &str) -> String {
    run_ok(&["query", "--repo", arg(repo), "--format", "csv", q]).replace("\r\n", "\n")
}

const FUNCTIONS: &str = "MATCH (f:Function) RETURN f.name, f.is_active ORDER BY f.name";
const CALLS: &str = "MATCH (a)-[r:CALLS]->(b:Function) \
                     RETURN a.name, b.name, has_role(r, 'Inactive') AS inactive ORDER BY a.name, b.name";

#[test]
fn defines_mark_inactive_code_and_calls_in_dropped_arguments() {
    let dir = repo(Some("defines: [OTHER=1]\n"));
    assert_eq!(
        query(dir.path(), FUNCTIONS),
        "f.name,f.is_active\nfast,false\nhelper,true\nrun,true\n"
    );
    // fast's body is inactive; run calls fast only under USE_FAST, and helper only inside
    // `check(...)`, whose active definition drops its argument.
    assert_eq!(
        query(dir.path(), CALLS),
        "a.name,b.name,inactive\nfast,helper,true\nrun,fast,true\nrun,helper,true\n"
    );
    let active = "MATCH (a)-[r:CALLS]->(b:Function) WHERE a.is_active AND NOT has_role(r, 'Inactive') \
                  RETURN count(*) AS n";
    assert_eq!(query(dir.path(), active), "n\n0\n");
}

#[test]
fn defined_names_activate_their_branches_and_no_configuration_changes_nothing() {
    let dir = repo(Some("defines:\n  - USE_FAST\n"));
    assert_eq!(
        query(dir.path(), CALLS),
        "a.name,b.name,inactive\nfast,helper,false\nrun,fast,false\nrun,helper,true\n"
    );
    let plain = repo(None);
    assert_eq!(
        query(plain.path(), FUNCTIONS),
        "f.name,f.is_active\nfast,true\nhelper,true\nrun,true\n"
    );
    assert_eq!(
        query(plain.path(), CALLS),
        "a.name,b.name,inactive\nfast,helper,false\nrun,fast,false\nrun,helper,false\n"
    );
}

#[test]
fn a_compilation_database_is_read_and_a_malformed_one_is_a_clear_error() {
    let dir = repo(None);
    let db = dir.path().join("cc.json");
    std::fs::write(
        &db,
        r#"[{"directory": ".", "file": "main.c", "command": "cc -DUSE_FAST -c main.c"}]"#,
    )
    .unwrap();
    run_ok(&[
        "build",
        "--full",
        "--compile-commands",
        arg(&db),
        arg(dir.path()),
    ]);
    assert_eq!(
        query(dir.path(), FUNCTIONS),
        "f.name,f.is_active\nfast,true\nhelper,true\nrun,true\n"
    );
    std::fs::write(&db, "[{\"file\": \"secret-text\"}]").unwrap();
    let out = run(&[
        "build",
        "--full",
        "--compile-commands",
        arg(&db),
        arg(dir.path()),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a valid compilation database"), "{err}");
    assert!(!err.contains("secret-text"), "{err}");
}

#[test]
fn mcp_tools_leave_inactive_code_out_unless_asked() {
    let dir = repo(Some("defines: [OTHER]\n"));
    let home = tempfile::tempdir().unwrap();
    let mut c = Client::start(home.path(), &[], &[]);
    c.ok("add_repo", json!({"name": "cfg", "path": arg(dir.path())}));
    let (_, hidden) = c.ok("search_entities", json!({"repo": "cfg", "query": "fast"}));
    assert_eq!(hidden["total"], 0, "{hidden}");
    let (_, shown) = c.ok(
        "search_entities",
        json!({"repo": "cfg", "query": "fast", "include_inactive": true}),
    );
    assert_eq!(shown["total"], 1, "{shown}");
    let id = "main.c:run";
    let (_, entity) = c.ok("get_entity", json!({"repo": "cfg", "entity_id": id}));
    // Calls from run to functions (its call of the macro `check` is active).
    let calls = |v: &serde_json::Value| {
        v["entity"]["relationships"].as_array().map_or(0, |r| {
            r.iter()
                .filter(|r| {
                    r["relation_type"] == "CALLS"
                        && ["main.c:fast", "main.c:helper"]
                            .contains(&r["entity_id"].as_str().unwrap_or(""))
                })
                .count()
        })
    };
    assert_eq!(calls(&entity), 0, "{entity}");
    let (_, all) = c.ok(
        "get_entity",
        json!({"repo": "cfg", "entity_id": id, "include_inactive": true}),
    );
    assert_eq!(calls(&all), 2, "{all}");
}
