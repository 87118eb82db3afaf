use super::*;

const A: &str = "0123456789abcdef0123456789abcdef01234567";
const B: &str = "89abcdef0123456789abcdef0123456789abcdef";

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("mkdir");
    }
    fs::write(path, text).expect("write");
}

fn info(commit: Option<&str>, branch: Option<&str>) -> GitInfo {
    GitInfo {
        commit: commit.map(str::to_string),
        branch: branch.map(str::to_string),
    }
}

#[test]
fn loose_branch_ref() {
    let d = tempfile::tempdir().expect("tempdir");
    let g = d.path().join(".git");
    write(&g.join("HEAD"), "ref: refs/heads/feature/x\n");
    write(&g.join("refs/heads/feature/x"), &format!("{A}\n"));
    assert_eq!(read_head(d.path()), info(Some(A), Some("feature/x")));
}

#[test]
fn packed_ref_and_loose_precedence() {
    let d = tempfile::tempdir().expect("tempdir");
    let g = d.path().join(".git");
    write(&g.join("HEAD"), "ref: refs/heads/main\n");
    write(
        &g.join("packed-refs"),
        &format!(
            "# pack-refs with: peeled fully-peeled sorted \n{B} refs/heads/mainline\n{A} refs/heads/main\n^{B}\n"
        ),
    );
    assert_eq!(read_head(d.path()), info(Some(A), Some("main")));
    // A loose ref overrides the packed one.
    write(&g.join("refs/heads/main"), B);
    assert_eq!(read_head(d.path()), info(Some(B), Some("main")));
}

#[test]
fn detached_head_and_unborn_branch() {
    let d = tempfile::tempdir().expect("tempdir");
    let g = d.path().join(".git");
    write(&g.join("HEAD"), &format!("{A}\n"));
    assert_eq!(read_head(d.path()), info(Some(A), None));
    write(&g.join("HEAD"), "ref: refs/heads/main\n");
    assert_eq!(read_head(d.path()), info(None, Some("main")));
}

#[test]
fn found_from_a_subdirectory() {
    let d = tempfile::tempdir().expect("tempdir");
    write(&d.path().join(".git/HEAD"), &format!("{A}\n"));
    let sub = d.path().join("src/deep");
    fs::create_dir_all(&sub).expect("mkdir");
    assert_eq!(read_head(&sub), info(Some(A), None));
}

#[test]
fn worktree_gitdir_file_with_commondir() {
    let d = tempfile::tempdir().expect("tempdir");
    let main_git = d.path().join("main/.git");
    write(&main_git.join("HEAD"), "ref: refs/heads/main\n");
    write(&main_git.join("refs/heads/main"), A);
    write(&main_git.join("refs/heads/wt"), B);
    let wt_git = main_git.join("worktrees/wt");
    write(&wt_git.join("HEAD"), "ref: refs/heads/wt\n");
    write(&wt_git.join("commondir"), "../..\n");
    // Relative gitdir, resolved against the directory holding the `.git` file.
    write(
        &d.path().join("wt/.git"),
        "gitdir: ../main/.git/worktrees/wt\n",
    );
    assert_eq!(read_head(&d.path().join("wt")), info(Some(B), Some("wt")));
    assert_eq!(
        read_head(&d.path().join("main")),
        info(Some(A), Some("main"))
    );
}

#[test]
fn submodule_absolute_gitdir() {
    let d = tempfile::tempdir().expect("tempdir");
    let modules = d.path().join("super/.git/modules/lib");
    write(&modules.join("HEAD"), &format!("{B}\n"));
    write(
        &d.path().join("super/lib/.git"),
        &format!("gitdir: {}\n", modules.display()),
    );
    assert_eq!(read_head(&d.path().join("super/lib")), info(Some(B), None));
}

#[test]
fn symbolic_ref_chains_and_cycles() {
    let d = tempfile::tempdir().expect("tempdir");
    let g = d.path().join(".git");
    write(&g.join("HEAD"), "ref: refs/heads/alias\n");
    write(&g.join("refs/heads/alias"), "ref: refs/heads/real\n");
    write(&g.join("refs/heads/real"), A);
    assert_eq!(read_head(d.path()), info(Some(A), Some("alias")));
    write(&g.join("refs/heads/real"), "ref: refs/heads/alias\n");
    assert_eq!(read_head(d.path()), info(None, Some("alias")));
}

#[test]
fn garbage_yields_nothing() {
    let d = tempfile::tempdir().expect("tempdir");
    assert_eq!(read_head(d.path()), GitInfo::default());
    let g = d.path().join(".git");
    write(&g.join("HEAD"), "not a hash\n");
    assert_eq!(read_head(d.path()), GitInfo::default());
    // A ref escaping the git dir is refused.
    write(&g.join("HEAD"), "ref: refs/../../secret\n");
    write(&d.path().join("secret"), A);
    assert_eq!(read_head(d.path()), info(None, None));
    // A ref file holding a short or non-hex name is not a commit.
    write(&g.join("HEAD"), "ref: refs/heads/main\n");
    write(&g.join("refs/heads/main"), "abc123\n");
    assert_eq!(read_head(d.path()), info(None, Some("main")));
    // A `.git` file without a usable gitdir.
    let e = tempfile::tempdir().expect("tempdir");
    write(&e.path().join(".git"), "gitdir: nowhere\n");
    assert_eq!(read_head(e.path()), GitInfo::default());
}
