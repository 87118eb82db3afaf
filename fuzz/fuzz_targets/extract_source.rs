//! Arbitrary bytes as C and as C++ source: extraction and resolution must never panic,
//! whatever the syntax (or lack of it); a C file the line reader of directive-only
//! files takes must give the parser's facts (seed: `seeds/extract_source/register_header.h`);
//! and the same text under a configuration (its `#if` conditions evaluated, inactive code
//! marked) must extract and resolve too.
#![no_main]

use batho_engine::config::Configuration;
use batho_engine::extract::{Extractor, mark_configured};
use batho_engine::resolve::{ResolveOptions, resolve};
use batho_schema::Language;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(mut extractor) = Extractor::new() else {
        return;
    };
    let c = extractor.extract("src/fuzz.c", Language::C, &text);
    if extractor.reads_as_directives(&text) {
        let parsed = extractor.extract_parsed("src/fuzz.c", Language::C, &text);
        assert_eq!(c, parsed, "the line reader and the parser disagree");
    }
    let cpp = extractor.extract("src/fuzz.hpp", Language::Cpp, &text);
    let config = Configuration {
        defines: vec!["NDEBUG".into(), "LEVEL=2".into(), "TWICE(x)=((x)*2)".into()],
        undefines: vec!["_WIN32".into()],
        include_dirs: Vec::new(),
    };
    extractor.set_configured(true);
    let mut configured = extractor.extract("src/configured.c", Language::C, &text);
    extractor.set_configured(false);
    mark_configured(&mut configured, &text, &config);
    let resolved = resolve(vec![c, cpp, configured], &ResolveOptions::default());
    let n = resolved.graph.nodes.len();
    for e in &resolved.graph.edges {
        assert!(
            (e.src.0 as usize) < n && (e.dst.0 as usize) < n,
            "edge out of range"
        );
    }
});
