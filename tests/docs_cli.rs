//! Every example in `docs/cli.md` runs, in order, from a folder holding a copy of
//! `examples/demo`, so the page cannot drift from the binaries.
//!
//! The code blocks tagged `sh` (or untagged) are read as a tiny shell: `batho ...` and
//! `batho-ql ...` (with a `<<'EOF'` here-document), `mkdir DIR`, `echo 'TEXT' > FILE`,
//! `echo $?` (the previous exit code, checked against the line shown after it), `A && B`,
//! `> FILE` redirection, `\` line continuations and `# comments`. A line starting with `$ `
//! is a command whose output follows it; every output line shown must appear, in order,
//! in the command's standard output then standard error (`...` inside a line stands for
//! any text, a line of its own for any lines). A command must exit 0 unless its shown
//! output holds an `error:` line or an `echo $?` follows it. `text` blocks hold synopses
//! and illustrations and are not run. Anything else fails the test: a new kind of example
//! needs a rule here, not a silent skip.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const DOC: &str = include_str!("../docs/cli.md");

/// One command of an example, with what the page shows of its outcome.
#[derive(Debug)]
struct Example {
    /// The command line, continuations joined and the comment removed.
    line: String,
    /// The here-document fed to standard input, if any.
    stdin: Option<String>,
    /// Output lines shown after a `$ ` command.
    shown: Vec<String>,
}

/// The runnable code blocks of the page, as commands in order.
fn examples() -> Vec<Example> {
    let mut out = Vec::new();
    let mut lines = DOC.lines();
    while let Some(line) = lines.next() {
        let Some(tag) = line.strip_prefix("```") else {
            continue;
        };
        let block: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        if tag == "sh" || tag.is_empty() {
            out.extend(parse_block(&block));
        }
    }
    out
}

fn parse_block(block: &[&str]) -> Vec<Example> {
    let mut examples: Vec<Example> = Vec::new();
    let mut after_prompt = false;
    let mut index = 0;
    while index < block.len() {
        let raw = block[index];
        index += 1;
        let prompt = raw.strip_prefix("$ ");
        if let (None, true, Some(last)) = (prompt, after_prompt, examples.last_mut()) {
            last.shown.push(raw.to_string());
            continue;
        }
        after_prompt = prompt.is_some();
        let mut line = prompt.unwrap_or(raw).to_string();
        while line.ends_with('\\') && index < block.len() {
            line.pop();
            line.push_str(block[index].trim_start());
            index += 1;
        }
        let line = strip_comment(&line);
        if line.is_empty() {
            continue;
        }
        let stdin = line.contains("<<'EOF'").then(|| {
            let body: Vec<&str> = block[index..]
                .iter()
                .take_while(|l| **l != "EOF")
                .copied()
                .collect();
            index += body.len() + 1;
            body.join("\n") + "\n"
        });
        examples.push(Example {
            line: line.replace("<<'EOF'", "").trim().to_string(),
            stdin,
            shown: Vec::new(),
        });
    }
    examples
}

/// The command without a trailing `# comment` (two spaces or more before the `#`).
fn strip_comment(line: &str) -> String {
    match line.find("  #") {
        Some(at) => line[..at].trim_end().to_string(),
        None => line.trim_end().to_string(),
    }
}

/// Shell-like words: single and double quotes, backslash escapes in double quotes.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                current.extend(chars.by_ref().take_while(|&q| q != '\''));
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => current.extend(chars.next()),
                        q => current.push(q),
                    }
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                current.push(c);
            }
        }
    }
    if in_word {
        out.push(current);
    }
    out
}

/// Whether `actual` matches the shown `pattern`, where `...` stands for any text.
fn line_matches(pattern: &str, actual: &str) -> bool {
    let parts: Vec<&str> = pattern.split("...").collect();
    let mut rest = actual;
    for (i, part) in parts.iter().enumerate() {
        let found = if i == 0 {
            rest.starts_with(part).then_some(0)
        } else {
            rest.find(part)
        };
        match found {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    parts.len() > 1 || rest.is_empty()
}

/// Whether every shown line appears in `actual` in order (`...` alone skips lines).
fn shown_lines_appear(shown: &[String], actual: &str) -> bool {
    let mut actual_lines = actual.lines();
    shown
        .iter()
        .filter(|s| s.trim() != "...")
        .all(|s| actual_lines.any(|a| line_matches(s.trim_end(), a.trim_end())))
}

fn binary(name: &str) -> Command {
    match name {
        "batho" => Command::new(env!("CARGO_BIN_EXE_batho")),
        "batho-ql" => Command::new(env!("CARGO_BIN_EXE_batho-ql")),
        other => panic!("docs/cli.md runs '{other}', which the documentation test cannot"),
    }
}

/// Runs one simple command (no `&&`) in `dir`: a binary, or one of the built-ins above.
fn run_simple(dir: &Path, command: &str, stdin: Option<&str>, last_code: i32) -> Output {
    let (command, redirect) = match command.split_once(" > ") {
        Some((c, file)) => (c.trim(), Some(file.trim())),
        None => (command, None),
    };
    let argv = words(command);
    let output = match argv[0].as_str() {
        "mkdir" => {
            std::fs::create_dir_all(dir.join(&argv[1])).unwrap();
            fake_output(0, "")
        }
        "echo" if argv[1..] == ["$?"] => fake_output(0, &format!("{last_code}\n")),
        "echo" => fake_output(0, &format!("{}\n", argv[1..].join(" "))),
        name => {
            let mut child = binary(name)
                .args(&argv[1..])
                .current_dir(dir)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut input = child.stdin.take().unwrap();
            input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
            drop(input);
            child.wait_with_output().unwrap()
        }
    };
    match redirect {
        Some(file) => {
            std::fs::write(dir.join(file), &output.stdout).unwrap();
            Output {
                stdout: Vec::new(),
                ..output
            }
        }
        None => output,
    }
}

fn fake_output(code: i32, stdout: &str) -> Output {
    use std::os::unix::process::ExitStatusExt;
    Output {
        status: std::process::ExitStatus::from_raw(code << 8),
        stdout: stdout.as_bytes().to_vec(),
        stderr: Vec::new(),
    }
}

/// `batho watch` never ends: read its output until the shown lines appeared, then stop it.
fn run_until_shown(dir: &Path, example: &Example) {
    let argv = words(&example.line);
    let mut child: Child = binary(&argv[0])
        .args(&argv[1..])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !shown_lines_appear(&example.shown, &seen) && Instant::now() < deadline {
        if let Ok(line) = receiver.recv_timeout(Duration::from_millis(200)) {
            seen.push_str(&line);
            seen.push('\n');
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        shown_lines_appear(&example.shown, &seen),
        "docs/cli.md shows for `{}`:\n{}\nbut it printed:\n{seen}",
        example.line,
        example.shown.join("\n")
    );
}

#[test]
fn every_example_in_docs_cli_runs_as_shown() {
    let examples = examples();
    assert!(
        examples.len() >= 24,
        "found only {} examples",
        examples.len()
    );
    let tmp = tempfile::tempdir().unwrap();
    let (_demo_tmp, demo) = common::copy_repo("examples/demo");
    std::fs::create_dir(tmp.path().join("examples")).unwrap();
    std::fs::rename(&demo, tmp.path().join("examples/demo"))
        .unwrap_or_else(|_| panic!("cannot move the demo copy into {}", tmp.path().display()));
    let dir = tmp.path();
    let mut last_code = 0;
    for (position, example) in examples.iter().enumerate() {
        if example.line.starts_with("batho watch") {
            run_until_shown(dir, example);
            continue;
        }
        let checks_code = examples
            .get(position + 1)
            .is_some_and(|next| next.line == "echo $?");
        let mut combined = String::new();
        for command in example.line.split(" && ") {
            let out = run_simple(dir, command, example.stdin.as_deref(), last_code);
            last_code = out.status.code().unwrap_or(-1);
            combined.push_str(&String::from_utf8_lossy(&out.stdout));
            combined.push_str(&String::from_utf8_lossy(&out.stderr));
            let expects_failure =
                checks_code || example.shown.iter().any(|l| l.starts_with("error:"));
            assert!(
                expects_failure || last_code == 0,
                "docs/cli.md: `{command}` exited with {last_code}:\n{combined}"
            );
            if last_code != 0 {
                break;
            }
        }
        assert!(
            shown_lines_appear(&example.shown, &combined),
            "docs/cli.md shows for `{}`:\n{}\nbut it printed:\n{combined}",
            example.line,
            example.shown.join("\n")
        );
    }
}
