//! Arbitrary mutations of a real artifact's files (manifest and segments) must make opening
//! and reading fail cleanly or succeed; never panic, never read out of bounds.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use batho_storage::fuzzing::{apply_mutation, copy_store, open_and_exercise, write_sample_store};
use libfuzzer_sys::fuzz_target;

fn template() -> &'static PathBuf {
    static TEMPLATE: OnceLock<PathBuf> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("batho-fuzz-template-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write_sample_store(&dir).expect("writing the sample artifact");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let work = tempfile::tempdir().expect("tempdir");
    let dir = work.path().join(".batho");
    copy_store(template(), &dir).expect("copying the template");
    if apply_mutation(&dir, data).is_ok() {
        let _ = open_and_exercise(&dir);
    }
});
