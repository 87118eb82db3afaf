//! Checks the line reader of directive-only files against the parser on a real corpus.
//!
//! `batho build` reads a C file made only of plain `#define`s, `#ifdef` blocks,
//! `#include`s and comments line by line instead of parsing it (see
//! `engine/src/extract/walk/directives.rs`). For every C file of ROOT that the reader takes,
//! this extracts the facts both ways and compares them; it prints each file whose facts
//! differ (first difference) and a summary line, and exits 1 if any differ.
//!
//! Usage: `directive_check ROOT`.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use batho_engine::discover::{DiscoverOptions, discover};
use batho_engine::extract::{Extractor, FileFacts};
use batho_engine::source::{detect_language, read_source};
use batho_schema::Language;

fn first_difference(a: &FileFacts, b: &FileFacts) -> String {
    if a.entities.len() != b.entities.len() {
        return format!("entities {} vs {}", a.entities.len(), b.entities.len());
    }
    if let Some((x, y)) = a.entities.iter().zip(&b.entities).find(|(x, y)| x != y) {
        return format!("entity {x:?} vs {y:?}");
    }
    if a.refs != b.refs {
        return format!("refs {:?} vs {:?}", a.refs, b.refs);
    }
    if a.includes != b.includes {
        return format!("includes {:?} vs {:?}", a.includes, b.includes);
    }
    if a.parse_errors != b.parse_errors {
        return format!("parse errors {} vs {}", a.parse_errors, b.parse_errors);
    }
    "strings differ".to_owned()
}

fn main() -> ExitCode {
    let Some(root) = std::env::args().nth(1) else {
        eprintln!("usage: directive_check ROOT");
        return ExitCode::from(2);
    };
    let opts = DiscoverOptions::default();
    let found = match discover(root.as_ref(), &opts) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("directive_check: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut ex = match Extractor::new() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("directive_check: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (mut c_files, mut c_bytes, mut taken, mut taken_bytes, mut differ) = (0, 0, 0, 0, 0);
    let (mut read_time, mut parse_time) = (Duration::ZERO, Duration::ZERO);
    for f in &found.files {
        let Ok(src) = read_source(&f.abs_path, opts.max_bytes()) else {
            continue;
        };
        if detect_language(&f.rel_path, &src.text) != Some(Language::C) {
            continue;
        }
        c_files += 1;
        c_bytes += src.bytes;
        if !ex.reads_as_directives(&src.text) {
            continue;
        }
        taken += 1;
        taken_bytes += src.bytes;
        let t = Instant::now();
        let read = ex.extract(&f.rel_path, Language::C, &src.text);
        read_time += t.elapsed();
        let t = Instant::now();
        let parsed = ex.extract_parsed(&f.rel_path, Language::C, &src.text);
        parse_time += t.elapsed();
        if read != parsed {
            differ += 1;
            println!("{}: {}", f.rel_path, first_difference(&read, &parsed));
        }
    }
    println!(
        "c_files={c_files} c_bytes={c_bytes} directive_files={taken} directive_bytes={taken_bytes} differ={differ} read_s={:.3} parse_s={:.3}",
        read_time.as_secs_f64(),
        parse_time.as_secs_f64()
    );
    if differ > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
