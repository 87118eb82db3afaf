//! Arbitrary bytes loaded as a transport archive must give a typed error or a verified
//! load; never a panic, never a file outside the target repository's `.batho/`, never a
//! temporary directory left behind.
#![no_main]

use batho_storage::Artifact;
use batho_storage::archive::{LOAD_TMP_PREFIX, LoadOptions, load_from_reader};
use libfuzzer_sys::fuzz_target;

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fuzz_target!(|data: &[u8]| {
    let work = tempfile::tempdir().expect("tempdir");
    let repo = work.path().join("repo");
    let dir = repo.join(".batho");
    // Small members keep the fuzzer fast; force so identity checks do not hide the reader.
    let opts = LoadOptions {
        force: true,
        max_member_bytes: 4 << 20,
    };
    if load_from_reader(&dir, data, "fuzz", &opts).is_ok() {
        let a = Artifact::open(&dir).expect("a verified load opens");
        assert!(a.verify(true).is_empty(), "a verified load verifies");
    }
    assert!(names(work.path()).iter().all(|n| n == "repo"), "wrote outside the repo");
    assert!(names(&repo).iter().all(|n| n == ".batho"), "wrote outside .batho");
    assert!(
        names(&dir).iter().all(|n| !n.starts_with(LOAD_TMP_PREFIX)),
        "left a temporary directory"
    );
});
