use super::*;
use std::fs;

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    if let Some(parent) = p.parent() {
        fs::create_dir_all(parent).expect("mkdir");
    }
    fs::write(p, bytes).expect("write");
}

fn rels(d: &Discovery) -> Vec<&str> {
    d.files.iter().map(|f| f.rel_path.as_str()).collect()
}

fn skip_of<'a>(d: &'a Discovery, rel: &str) -> Option<&'a SkipReason> {
    d.skipped
        .iter()
        .find(|s| s.rel_path == rel)
        .map(|s| &s.reason)
}

/// A tree exercising every rule; no `.git`, like a tree unpacked from a tarball.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = dir.path();
    write(r, "main.c", b"int main(void) { return 0; }\n");
    write(r, "include/api.h", b"int f(void);\n");
    write(r, "src/Widget.cpp", b"class W {};\n");
    write(r, "src/impl.tcc", b"template <class T> void g(T) {}\n");
    write(r, "src/old.C", b"class Old {};\n");
    write(r, "README.md", b"# not source\n");
    write(r, "Makefile", b"all:\n");
    // .gitignore is honoured even though there is no .git directory.
    write(r, ".gitignore", b"generated/\n*.gen.c\n");
    write(r, "generated/tables.c", b"int t;\n");
    write(r, "src/parser.gen.c", b"int p;\n");
    write(r, "src/.gitignore", b"local_only.c\n");
    write(r, "src/local_only.c", b"int l;\n");
    write(r, ".bathoignore", b"third_party/\n");
    write(r, "third_party/zlib/inflate.c", b"int z;\n");
    write(r, "blob.c", b"\x7fELF\x00\x01\x02 binary");
    write(r, "latin1.c", b"/* caf\xe9 */ int x;\n");
    write(r, "huge.c", &vec![b'x'; 3000]);
    // Build trees: a root `build`, a nested CMake tree, a Cargo-style cache dir.
    write(r, "build/out.c", b"int o;\n");
    write(r, "sub/cmake/CMakeCache.txt", b"# cache\n");
    write(r, "sub/cmake/gen.c", b"int g;\n");
    write(r, "sub/cmake-build-debug/x.c", b"int x;\n");
    write(
        r,
        "sub/cache/CACHEDIR.TAG",
        b"Signature: 8a477f597d28d172789f06886806bc55\n",
    );
    write(r, "sub/cache/c.c", b"int c;\n");
    write(r, "web/node_modules/pkg/a.c", b"int a;\n");
    // Generic build names deeper down are real source (the kernel's drivers/target).
    write(r, "drivers/target/core.c", b"int core;\n");
    write(r, "tools/build/fixdep.c", b"int fixdep;\n");
    write(r, ".hidden/h.c", b"int h;\n");
    write(r, "src/.secret.c", b"int s;\n");
    dir
}

#[test]
fn applies_every_rule_and_sorts() {
    let dir = fixture();
    let opts = DiscoverOptions {
        max_file_size_kb: Some(2),
        extra_ignores: vec![],
        ..DiscoverOptions::default()
    };
    let d = discover(dir.path(), &opts).expect("discover");
    assert_eq!(
        rels(&d),
        vec![
            "drivers/target/core.c",
            "include/api.h",
            "latin1.c",
            "main.c",
            "src/Widget.cpp",
            "src/impl.tcc",
            "src/old.C",
            "tools/build/fixdep.c",
        ]
    );
    assert_eq!(skip_of(&d, "blob.c"), Some(&SkipReason::Binary));
    assert_eq!(
        skip_of(&d, "huge.c"),
        Some(&SkipReason::TooLarge {
            size: 3000,
            limit: 2048
        })
    );
    assert_eq!(d.skipped.len(), 2, "{:?}", d.skipped);
    let main = &d.files[3];
    assert_eq!(main.size, 29);
    assert!(main.abs_path.is_absolute());
    assert_eq!(
        fs::read(&main.abs_path).expect("read"),
        b"int main(void) { return 0; }\n"
    );
}

#[test]
fn default_limit_admits_large_files() {
    let dir = fixture();
    let d = discover(dir.path(), &DiscoverOptions::default()).expect("discover");
    assert!(rels(&d).contains(&"huge.c"));
    assert_eq!(DiscoverOptions::default().max_bytes(), 32 * 1024 * 1024);
}

#[test]
fn extra_ignores_add_and_reinclude() {
    let dir = fixture();
    let opts = DiscoverOptions {
        max_file_size_kb: None,
        extra_ignores: vec!["!/build/".into(), "drivers/".into(), "*.tcc".into()],
        ..DiscoverOptions::default()
    };
    let d = discover(dir.path(), &opts).expect("discover");
    let r = rels(&d);
    assert!(r.contains(&"build/out.c"), "{r:?}");
    assert!(!r.contains(&"drivers/target/core.c"), "{r:?}");
    assert!(!r.contains(&"src/impl.tcc"), "{r:?}");
}

#[test]
fn deterministic_across_runs() {
    let dir = fixture();
    let a = discover(dir.path(), &DiscoverOptions::default()).expect("a");
    let b = discover(dir.path(), &DiscoverOptions::default()).expect("b");
    assert_eq!(a, b);
}

#[cfg(unix)]
#[test]
fn symlinks_are_not_followed() {
    let dir = fixture();
    let r = dir.path();
    let outside = tempfile::tempdir().expect("outside");
    write(outside.path(), "escape.c", b"int e;\n");
    std::os::unix::fs::symlink(r.join("main.c"), r.join("alias.c")).expect("link");
    std::os::unix::fs::symlink(outside.path(), r.join("ext")).expect("link");
    // A loop back to the root must not hang the walk.
    std::os::unix::fs::symlink(r, r.join("src/loop")).expect("link");
    let d = discover(r, &DiscoverOptions::default()).expect("discover");
    assert_eq!(skip_of(&d, "alias.c"), Some(&SkipReason::Symlink));
    assert!(d.files.iter().all(|f| !f.rel_path.starts_with("ext/")));
    assert!(d.files.iter().all(|f| !f.rel_path.starts_with("src/loop")));
    // Links to directories are reported too, not left out silently (issue 28, item 13).
    assert_eq!(skip_of(&d, "ext"), Some(&SkipReason::Symlink));
    assert_eq!(skip_of(&d, "src/loop"), Some(&SkipReason::Symlink));
}

/// A FIFO with a source file's name is reported, not read (reading would block) and not
/// left out silently (issue 28, item 13).
#[cfg(unix)]
#[test]
fn fifos_are_reported_not_read() {
    let dir = fixture();
    let r = dir.path();
    let fifo = r.join("pipe.c");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let d = discover(r, &DiscoverOptions::default()).expect("discover");
    assert_eq!(skip_of(&d, "pipe.c"), Some(&SkipReason::NotARegularFile));
    assert!(d.files.iter().all(|f| f.rel_path != "pipe.c"));
}

#[test]
fn root_inside_git_checkout_uses_git_semantics() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = dir.path();
    fs::create_dir_all(r.join(".git")).expect("git dir");
    write(r, ".gitignore", b"*.o.c\n");
    write(r, "lib/a.c", b"int a;\n");
    write(r, "lib/a.o.c", b"int a;\n");
    // Discovering a subdirectory still applies the checkout's root .gitignore.
    let d = discover(&r.join("lib"), &DiscoverOptions::default()).expect("discover");
    assert_eq!(rels(&d), vec!["a.c"]);
}

#[test]
fn bad_roots_and_patterns_are_errors() {
    let dir = fixture();
    let missing = dir.path().join("nope");
    assert!(matches!(
        discover(&missing, &DiscoverOptions::default()),
        Err(DiscoverError::Root { .. })
    ));
    assert!(matches!(
        discover(&dir.path().join("main.c"), &DiscoverOptions::default()),
        Err(DiscoverError::NotADirectory(_))
    ));
    let opts = DiscoverOptions {
        max_file_size_kb: None,
        extra_ignores: vec!["src/{a,b".into()],
        ..DiscoverOptions::default()
    };
    assert!(matches!(
        discover(dir.path(), &opts),
        Err(DiscoverError::BadPattern { .. })
    ));
}

#[test]
fn source_extensions() {
    for ext in [
        "c", "h", "cc", "cpp", "CPP", "cxx", "c++", "hh", "hpp", "hxx", "h++", "inl", "ipp", "tcc",
        "C", "H",
    ] {
        assert!(is_source_extension(ext), "{ext}");
    }
    for ext in ["rs", "o", "s", "S", "txt", "", "cs", "hs"] {
        assert!(!is_source_extension(ext), "{ext}");
    }
    assert!(!has_source_extension(std::ffi::OsStr::new(".c")));
    assert!(has_source_extension(std::ffi::OsStr::new("a.b.c")));
}

#[cfg(unix)]
#[test]
fn non_utf8_names_are_reported_not_indexed() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let name = std::ffi::OsStr::from_bytes(b"caf\xff.c");
    fs::write(dir.path().join(name), b"int x;\n").expect("write");
    write(dir.path(), "ok.c", b"int y;\n");
    let d = discover(dir.path(), &DiscoverOptions::default()).expect("discover");
    assert_eq!(rels(&d), vec!["ok.c"]);
    assert_eq!(d.skipped.len(), 1);
    assert_eq!(d.skipped[0].reason, SkipReason::NonUtf8Path);
    assert_eq!(d.skipped[0].rel_path, "caf\u{fffd}.c");
}

#[test]
fn empty_and_sourceless_trees() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(
        discover(dir.path(), &DiscoverOptions::default()).expect("empty"),
        Discovery::default()
    );
    write(dir.path(), "docs/readme.txt", b"text\n");
    write(dir.path(), "lib/x.rs", b"fn main() {}\n");
    let d = discover(dir.path(), &DiscoverOptions::default()).expect("sourceless");
    assert!(d.files.is_empty() && d.skipped.is_empty());
}

#[test]
fn known_text_files_are_not_sniffed_and_every_file_has_its_mtime() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "a.c", b"int a;\n");
    write(dir.path(), "bin.c", b"\0\x01binary");
    let plain = discover(dir.path(), &DiscoverOptions::default()).expect("discover");
    assert_eq!(rels(&plain), vec!["a.c"]);
    assert!(
        plain.files[0].modified_ms > 1_600_000_000_000 && plain.files[0].modified_ms < i64::MAX
    );
    // A patch trusts what the artifact indexed as text: no file is opened to sniff it.
    let known = std::sync::Arc::new(["bin.c".to_owned()].into_iter().collect());
    let trusted = discover(
        dir.path(),
        &DiscoverOptions {
            known_text: Some(known),
            ..DiscoverOptions::default()
        },
    )
    .expect("discover");
    assert_eq!(rels(&trusted), vec!["a.c", "bin.c"]);
}
