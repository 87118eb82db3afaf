//! `batho-ql [PATH]`: the interactive BQL shell. With a terminal on standard input it
//! prompts, completes and colours; otherwise it runs the statements it reads (separated by
//! `;`) and exits non-zero when any of them failed, so `batho-ql repo < queries.bql` works
//! in scripts.

#[macro_use]
#[path = "../stdout.rs"]
mod stdout;

// Shared with batho, which also words build, patch and diff failures.
#[allow(dead_code)]
#[path = "../advice.rs"]
mod advice;

#[path = "../repl/mod.rs"]
mod repl;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: batho-ql [PATH]\n       batho-ql --new PATH\n\nPATH is a repository root with a .batho artifact or a writable graph's folder (default:\nthe current directory). --new creates an empty writable graph in PATH and opens it.";

fn main() -> ExitCode {
    let mut path = None;
    let mut create = false;
    for arg in std::env::args_os().skip(1) {
        match arg.to_str() {
            Some("--new") if !create => create = true,
            Some("-h" | "--help") => {
                outln!("{USAGE}\n\n{}", repl::session::HELP);
                return ExitCode::SUCCESS;
            }
            Some("-V" | "--version") => {
                outln!("batho-ql {}", env!("CARGO_PKG_VERSION"));
                return ExitCode::SUCCESS;
            }
            Some(a) if a.starts_with('-') && a.len() > 1 => {
                eprintln!("error: unknown option '{a}'\n{USAGE}");
                return ExitCode::from(2);
            }
            _ if path.is_some() => {
                eprintln!("error: more than one PATH given\n{USAGE}");
                return ExitCode::from(2);
            }
            _ => path = Some(PathBuf::from(arg)),
        }
    }
    if create && path.is_none() {
        eprintln!("error: --new needs the PATH of the graph to create\n{USAGE}");
        return ExitCode::from(2);
    }
    let path = path.unwrap_or_else(|| PathBuf::from("."));
    let code = if std::io::stdin().is_terminal() {
        repl::interactive(&path, create)
    } else {
        let stdin = std::io::stdin();
        let stderr = std::io::stderr();
        repl::script(
            &path,
            create,
            &mut stdin.lock(),
            &mut stdout::ClosedPipeExits::new(),
            &mut stderr.lock(),
        )
    };
    ExitCode::from(code)
}
