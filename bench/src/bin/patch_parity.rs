//! Patch parity on a real corpus: edits files one after another (a body change, a new
//! function, a renamed function, a deleted function), patches after each edit, and
//! compares the patched artifact with a full build of a copy of the edited tree: every
//! node (by id, every property but the community) and every edge (as a multiset) must be
//! equal. Also reports each patch's time, context files and cache hits.
//!
//! Usage: `patch_parity [--edits N] [--batch B] [--kinds K] [--seed S] [--in-place]
//! [--no-verify] CORPUS WORKDIR`. Edits rotate through the first K kinds of: body edit,
//! added function, renamed function, deleted function (default 4). CORPUS is copied to WORKDIR/repo (without `.batho`) and built there;
//! each patch follows B edits (default 1). With `--in-place`, CORPUS itself (already
//! built) is edited and patched: for trees too large to copy and rebuild per edit, where
//! `--no-verify` skips the comparison with a full build. Exit code 1 on a mismatch.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use batho_engine::build::{BuildOptions, artifact_dir, build};
use batho_engine::patch::canon::{EdgeCanon, canonical};
use batho_engine::patch::{PatchOptions, patch};
use batho_schema::NodeKind;
use batho_storage::fuzzing::Rng;
use batho_storage::{Artifact, NodeIdx};

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        if e.file_name() == ".batho" {
            continue;
        }
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ty = e.file_type().expect("type");
        if ty.is_dir() {
            copy_tree(&src, &dst);
        } else if ty.is_file() {
            std::fs::copy(&src, &dst).expect("copy");
        }
    }
}

fn full_build(root: &Path) {
    build(
        root,
        &BuildOptions {
            full: true,
            ..BuildOptions::default()
        },
        &|_| {},
    )
    .expect("build");
}

/// The functions of `art` with a body in a file.
fn functions(art: &Artifact) -> Vec<NodeIdx> {
    art.nodes_of_kind(NodeKind::Function)
        .iter()
        .map(NodeIdx)
        .filter(|&n| {
            let node = art.node(n);
            art.is_live(n) && !node.file().is_empty() && node.end_byte() > node.start_byte()
        })
        .collect()
}

/// What the in-place edits changed: each edited file's original bytes, for restoring.
type Backups = BTreeMap<PathBuf, Vec<u8>>;

/// One edit of a function of the artifact, applied to the file's text (at most one per
/// file per patch: `touched`); a description.
#[allow(clippy::too_many_arguments)]
fn edit(
    root: &Path,
    art: &Artifact,
    kinds: usize,
    funcs: &[NodeIdx],
    rng: &mut Rng,
    i: usize,
    touched: &mut std::collections::HashSet<String>,
    backups: &mut Backups,
) -> Option<String> {
    let n = funcs[rng.below(funcs.len() as u64) as usize];
    let node = art.node(n);
    if !touched.insert(node.file().into_owned()) {
        return None;
    }
    let path = root.join(&*node.file());
    let mut text = std::fs::read(&path).ok()?;
    backups.entry(path.clone()).or_insert_with(|| text.clone());
    let (a, b) = (node.start_byte() as usize, node.end_byte() as usize);
    if b > text.len() {
        return None;
    }
    let name = node.name().into_owned();
    let what = match i % kinds {
        0 => {
            // Body edit: a blank line at the end of the body shifts nothing outside.
            text.insert(b - 1, b'\n');
            "body"
        }
        1 => {
            let add = format!("\nint batho_parity_{i}(void) {{ return {name} != 0; }}\n");
            text.extend_from_slice(add.as_bytes());
            "added"
        }
        2 => {
            let def = &text[a..b];
            let at = def.windows(name.len()).position(|w| w == name.as_bytes())?;
            let renamed = format!("{name}_r{i}");
            text.splice(a + at..a + at + name.len(), renamed.bytes());
            "renamed"
        }
        _ => {
            text.drain(a..b);
            "deleted"
        }
    };
    std::fs::write(&path, &text).ok()?;
    Some(format!("{what} {name} in {}", node.file()))
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut edits = 8usize;
    let mut batch = 1usize;
    let mut seed = 1u64;
    let (mut in_place, mut verify) = (false, true);
    // Edit kinds in rotation: body, added, renamed, deleted (`--kinds 2`: the first two).
    let mut kinds = 4usize;
    while let Some(i) = args.iter().position(|a| a.starts_with("--")) {
        let v = args.get(i + 1).cloned().unwrap_or_default();
        let mut used = 2;
        match args[i].as_str() {
            "--edits" => edits = v.parse().expect("--edits N"),
            "--batch" => batch = v.parse::<usize>().expect("--batch B").max(1),
            "--seed" => seed = v.parse().expect("--seed S"),
            "--kinds" => kinds = v.parse::<usize>().expect("--kinds 1..4").clamp(1, 4),
            "--in-place" => (in_place, used) = (true, 1),
            "--no-verify" => (verify, used) = (false, 1),
            other => panic!("unknown option {other}"),
        }
        args.drain(i..i + used);
    }
    let [corpus, work] = &args[..] else {
        eprintln!("usage: patch_parity [--edits N] [--seed S] CORPUS WORKDIR");
        std::process::exit(2);
    };
    let work = PathBuf::from(work);
    let _ = std::fs::remove_dir_all(&work);
    let root = if in_place {
        PathBuf::from(corpus)
    } else {
        let root = work.join("repo");
        copy_tree(Path::new(corpus), &root);
        let t = Instant::now();
        full_build(&root);
        println!("build {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
        root
    };
    let mut rng = Rng::new(seed);
    let mut failures = 0;
    let mut backups = Backups::new();
    for i in 0..edits {
        let art = Artifact::open(&artifact_dir(&root)).expect("open");
        let funcs = functions(&art);
        let mut touched = std::collections::HashSet::new();
        let mut descs = Vec::new();
        let mut tries = 0;
        while descs.len() < batch && tries < batch * 4 {
            tries += 1;
            // The kind rotates with the edits made, not with the attempts.
            let k = i * batch + descs.len();
            if let Some(d) = edit(
                &root,
                &art,
                kinds,
                &funcs,
                &mut rng,
                k,
                &mut touched,
                &mut backups,
            ) {
                descs.push(d);
            }
        }
        drop(art);
        let desc = if batch == 1 {
            descs.pop().unwrap_or_default()
        } else {
            format!("{} edits", descs.len())
        };
        let t = Instant::now();
        let r = patch(&root, &PatchOptions::default()).expect("patch");
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if !verify {
            println!(
                "edit {i}: {desc}: patch {ms:.0} ms, {} files changed, {} affected, {} context ({} cached), {} entity changes, {} bytes written, phases {:?}",
                r.files.total(),
                r.affected.len(),
                r.context_files,
                r.context_cached,
                r.entities.len(),
                r.bytes_written,
                r.phases
            );
            continue;
        }
        let fresh = work.join("fresh");
        let _ = std::fs::remove_dir_all(&fresh);
        copy_tree(&root, &fresh);
        full_build(&fresh);
        let p = Artifact::open(&artifact_dir(&root)).expect("open patched");
        let f = Artifact::open(&artifact_dir(&fresh)).expect("open fresh");
        let (pn, pe) = canonical(&p.to_graph_builder());
        let (fnodes, fe) = canonical(&f.to_graph_builder());
        let node_diff = fnodes.iter().filter(|(k, v)| pn.get(*k) != Some(v)).count()
            + pn.keys().filter(|k| !fnodes.contains_key(*k)).count();
        let edge_diff: Vec<&EdgeCanon> = fe
            .iter()
            .filter(|(k, c)| pe.get(*k) != Some(c))
            .map(|(k, _)| k)
            .chain(
                pe.iter()
                    .filter(|(k, c)| fe.get(*k) != Some(c))
                    .map(|(k, _)| k),
            )
            .collect();
        let ok = node_diff == 0 && edge_diff.is_empty();
        println!(
            "edit {i}: {desc}: patch {ms:.0} ms, {} affected, {} context ({} cached), {} entity changes: {}",
            r.affected.len(),
            r.context_files,
            r.context_cached,
            r.entities.len(),
            if ok {
                "same as a full build"
            } else {
                "DIFFERS"
            }
        );
        if !ok {
            failures += 1;
            println!("  {node_diff} nodes differ; edges differing (first 10):");
            for e in edge_diff.iter().take(10) {
                let side = if fe.contains_key(*e) {
                    "only in full build"
                } else {
                    "only in patch"
                };
                println!("    {side}: {e:?}");
            }
        }
    }
    if in_place && !backups.is_empty() {
        // Put the tree back and patch it back, which is one more large patch to time.
        for (path, bytes) in &backups {
            std::fs::write(path, bytes).expect("restore an edited file");
        }
        let t = Instant::now();
        let r = patch(&root, &PatchOptions::default()).expect("patch");
        println!(
            "restore: patch {:.0} ms, {} files changed, {} affected, {} context ({} cached), {} bytes written, phases {:?}",
            t.elapsed().as_secs_f64() * 1e3,
            r.files.total(),
            r.affected.len(),
            r.context_files,
            r.context_cached,
            r.bytes_written,
            r.phases
        );
    }
    if failures > 0 {
        println!("{failures} of {edits} edits differ");
        std::process::exit(1);
    }
    println!("all {edits} edits: patched artifact equals a full build");
}
