//! Arbitrary bytes as BQL text: parsing, checking and planning return a result or an error
//! with a position; never a panic or a stack overflow.
#![no_main]

use batho_lang::{Schema, compile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = batho_lang::parse(text);
    let _ = compile(text, &Schema::code_graph());
});
