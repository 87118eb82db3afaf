//! Prints how fast `redact` gets through about 1 MB of text of three kinds: ordinary
//! build and test output (the common case, where the keyword prefilter matters), the
//! same output with a few secrets in it, and text dense with secret-like assignments.
//! Run with `cargo run --release --example redact_speed`. Timing lives here, not in
//! tests, because timed tests fail on a busy machine.

use std::hint::black_box;
use std::time::{Duration, Instant};

use batho_ctx::redact::redact;

const TARGET_BYTES: usize = 1 << 20;
const ROUNDS: usize = 15;

/// Lines as `cargo build` and `cargo test` print them, numbered so that no two repeat.
fn ordinary_build_output() -> String {
    let mut output = String::with_capacity(TARGET_BYTES + 4096);
    let mut line_number = 0usize;
    while output.len() < TARGET_BYTES {
        line_number += 1;
        output.push_str(&format!(
            "   Compiling tokenizers v0.{line_number}.0\n\
             warning: unused variable: `token`\n  --> src/lexer.rs:{line_number}:9\n   |\n\
             {line_number} |     let token = lexer.next_token();\n\
             \x20  |         ^^^^^ help: if this is intentional, prefix it with an underscore: `_token`\n\
             \x20  = note: `#[warn(unused_variables)]` on by default\n\
             test lexer::tests::keyword_after_identifier_{line_number} ... ok\n\
             test cache::tests::key_order_is_stable ... ok\n\
             test result: ok. {line_number} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n\
             \x20    Running unittests src/lib.rs (target/debug/deps/batho_engine-3f2a9c0d1e4b5a69)\n\
             \x20   Finished `dev` profile [unoptimized + debuginfo] target(s) in 12.34s\n"
        ));
    }
    output
}

fn with_a_few_secrets(mut text: String) -> String {
    let token = ["gh", "p_", "aB3dE5fG7hJ9kLmN2pQr4StU6vWx8yZaB3dE5"].concat();
    for index in 0..10 {
        text.push_str(&format!(
            "export DB_PASSWORD=hunter{index}\npush with {token}\n"
        ));
    }
    text
}

fn dense_assignments() -> String {
    let mut output = String::with_capacity(TARGET_BYTES + 256);
    let mut index = 0usize;
    while output.len() < TARGET_BYTES {
        index += 1;
        output.push_str(&format!(
            "API_TOKEN=value{index} user=bob password: p{index}w \"secret\": \"s{index}\" key 9fQ2xLm7Rt4WvB8n{index}\n"
        ));
    }
    output
}

/// The fastest of several rounds: the least disturbed by other work on the machine.
fn fastest_round(text: &str) -> (Duration, usize) {
    let mut fastest = Duration::MAX;
    let mut count = 0;
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let redaction = redact(black_box(text));
        fastest = fastest.min(started.elapsed());
        count = redaction.count;
    }
    (fastest, count)
}

fn main() {
    // The first call compiles the rules; keep that out of the figures.
    black_box(redact("warm up"));
    let ordinary = ordinary_build_output();
    let corpora = [
        ("ordinary build output", ordinary.clone()),
        ("build output with 20 secrets", with_a_few_secrets(ordinary)),
        ("dense secret-like assignments", dense_assignments()),
    ];
    for (label, text) in &corpora {
        let (fastest, count) = fastest_round(text);
        let megabytes = text.len() as f64 / 1_000_000.0;
        println!(
            "{label:32} {:>7.2} MB  {:>8.2} ms  {:>8.1} MB/s  {count} redacted",
            megabytes,
            fastest.as_secs_f64() * 1000.0,
            megabytes / fastest.as_secs_f64(),
        );
    }
}
