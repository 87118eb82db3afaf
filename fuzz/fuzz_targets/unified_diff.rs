//! Arbitrary bytes as a unified diff (`batho affected --diff`, the `affected` tool's
//! `diff`): the changed lines come back, or nothing; never a panic or an overflow.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for file in batho_engine::changed_lines::parse_unified_diff(&text) {
        for range in file.old_lines.iter().chain(&file.new_lines) {
            assert!(range.start() <= range.end());
        }
    }
});
