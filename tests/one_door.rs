//! One door to the store: the front ends (`mcp`, `cli`) and the session-context crate
//! (`ctx`) reach a graph's files only through `batho-engine` (its `maintenance` module
//! for fix, gc, archives, runs and the audit log). A dependency on `batho-storage` in
//! their manifests would let a front end write an artifact behind the engine's back, as
//! the MCP server once appended audit entries after the engine had released its lock.
//! Tests may: the integration tests plant damage in an artifact's files (`cli_fix`,
//! `cli_gc`), so `batho-storage` stays a dev-dependency of `cli`.

use std::path::Path;

/// The names a manifest's program depends on: its `[dependencies]` and
/// `[build-dependencies]` (any target's), not its `[dev-dependencies]`.
fn dependencies(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_dependencies = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            let table = line.trim_matches(['[', ']']);
            in_dependencies =
                table.ends_with("dependencies") && !table.ends_with("dev-dependencies");
            continue;
        }
        if in_dependencies && let Some((name, _)) = line.split_once('=') {
            names.push(name.trim().trim_end_matches(".workspace").to_string());
        }
    }
    names
}

#[test]
fn front_ends_do_not_depend_on_the_storage_crate() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for front_end in ["mcp", "cli", "ctx"] {
        let path = workspace.join(front_end).join("Cargo.toml");
        let manifest = std::fs::read_to_string(&path).expect("read the manifest");
        let names = dependencies(&manifest);
        assert!(
            names.iter().any(|name| name == "batho-engine"),
            "{front_end} should depend on batho-engine: {names:?}"
        );
        assert!(
            !names.iter().any(|name| name == "batho-storage"),
            "{front_end}/Cargo.toml depends on batho-storage: reach the store through \
             batho_engine (batho_engine::maintenance for fix, gc, archives, runs and audit)"
        );
    }
}

#[test]
fn the_manifest_reader_sees_every_table_a_program_depends_on() {
    let manifest = "[package]\nname = \"x\"\n[dependencies]\nbatho-engine.workspace = true\n\
                    [target.'cfg(unix)'.dependencies]\nbatho-schema = \"1\"\n\
                    [build-dependencies]\nbatho-storage = { path = \"../storage\" }\n\
                    [dev-dependencies]\ntempfile = \"3\"\n";
    assert_eq!(
        dependencies(manifest),
        ["batho-engine", "batho-schema", "batho-storage"]
    );
}
