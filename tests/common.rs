//! Helpers shared by the integration tests: run the real `batho` binary on copies of
//! repositories in temporary folders.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `batho` binary under test.
pub fn batho() -> Command {
    Command::new(env!("CARGO_BIN_EXE_batho"))
}

/// Runs `batho ARGS` and returns its output.
pub fn run(args: &[&str]) -> Output {
    batho().args(args).output().expect("failed to start batho")
}

/// Runs `batho ARGS`, asserts success, and returns stdout.
pub fn run_ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "batho {args:?} failed with {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `batho ARGS --json` (ARGS must accept --json), asserts success, parses stdout.
pub fn run_json(args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.push("--json");
    let stdout = run_ok(&a);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
}

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Copies `src` (a folder of the workspace, e.g. `examples/demo`) into a fresh temp dir,
/// leaving out any `.batho` artifact, and returns the temp dir and the copy's path.
pub fn copy_repo(src: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("repo");
    copy_dir(&workspace().join(src), &dst);
    (tmp, dst)
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == ".batho" {
            continue;
        }
        let ty = entry.file_type().unwrap();
        if ty.is_dir() {
            copy_dir(&entry.path(), &dst.join(&name));
        } else if ty.is_file() {
            std::fs::copy(entry.path(), dst.join(&name)).unwrap();
        }
    }
}

/// Replaces the folder `to` with a copy of `from` (an artifact's pristine copy put back
/// before each planted fault).
pub fn replace_tree(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            replace_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `path` as a `&str` argument.
pub fn arg(path: &Path) -> &str {
    path.to_str().expect("temp paths are UTF-8")
}

/// Edits a copy of the demo the way the patch tests do: `mix` renamed `mix64` in
/// `src/hash.c`, a new file `src/extra.c` calling `hash_djb2`, `src/main.cpp` deleted.
pub fn edit_demo(repo: &Path) {
    let hash = repo.join("src/hash.c");
    let text = std::fs::read_to_string(&hash)
        .unwrap()
        .replace("mix(", "mix64(");
    std::fs::write(&hash, text).unwrap();
    std::fs::write(
        repo.join("src/extra.c"),
        "#include \"demo/hash.h\"\nunsigned long twice(const char *k) { return hash_djb2(k) * 2; }\n",
    )
    .unwrap();
    std::fs::remove_file(repo.join("src/main.cpp")).unwrap();
}

/// The data rows (header left out) of `batho query --format csv` on `repo`, each `-p`
/// parameter given as `name=value`.
pub fn query_csv_rows(repo: &Path, params: &[String], query: &str) -> Vec<String> {
    let mut args = vec!["query", "--repo", arg(repo), "--format", "csv"];
    for param in params {
        args.extend(["-p", param.as_str()]);
    }
    args.push(query);
    run_ok(&args).lines().skip(1).map(str::to_owned).collect()
}

/// Runs `batho-ql ARGS` with `input` on its standard input (and `BATHO_HOME` set to
/// `home`, so no history lands in the real one); returns its output.
pub fn batho_ql(args: &[&std::ffi::OsStr], input: &str, home: &Path) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_batho-ql"))
        .args(args)
        .env("BATHO_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("failed to start batho-ql");
    // batho-ql may exit before reading everything (no artifact, :quit): a closed pipe is fine.
    let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
    child.wait_with_output().unwrap()
}

/// A small deterministic generator (xorshift), so failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
