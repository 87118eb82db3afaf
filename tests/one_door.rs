//! One door to the store: the front ends (`mcp`, `cli`) and the session-context crate
//! (`ctx`) reach a graph's files only through `batho-engine` (its `maintenance` module
//! for fix, gc, archives, runs and the audit log). A dependency on `batho-storage` in
//! their manifests would let a front end write an artifact behind the engine's back, as
//! the MCP server once appended audit entries after the engine had released its lock.
//! Not even as a dev-dependency: the integration tests that plant damage in an artifact's
//! files (`cli_fix`, `cli_gc`) reach the storage crate through the engine's `testing`
//! feature, which only dev-dependencies turn on.

use std::path::Path;

/// The names a manifest depends on, in any dependency table (any target's).
fn dependencies(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_dependencies = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line.trim_matches(['[', ']']).ends_with("dependencies");
            continue;
        }
        if in_dependencies && let Some((name, _)) = line.split_once('=') {
            let name = name.trim().trim_end_matches(".workspace").to_string();
            if !names.contains(&name) {
                names.push(name);
            }
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
fn the_manifest_reader_sees_every_dependency_table() {
    let manifest = "[package]\nname = \"x\"\n[dependencies]\nbatho-engine.workspace = true\n\
                    [target.'cfg(unix)'.dependencies]\nbatho-schema = \"1\"\n\
                    [build-dependencies]\nbatho-storage = { path = \"../storage\" }\n\
                    [dev-dependencies]\ntempfile = \"3\"\nbatho-engine = { workspace = true }\n";
    assert_eq!(
        dependencies(manifest),
        ["batho-engine", "batho-schema", "batho-storage", "tempfile"]
    );
}
