//! `batho-ql`: an interactive BQL shell over a repository's artifact, and a script runner
//! when standard input is not a terminal.
//!
//! Interactive sessions use rustyline: multi-line statements (the editor keeps reading
//! until the input ends with `;` or is a `:` command), tab completion from the code-graph
//! schema, syntax colouring, and history saved under `$BATHO_HOME` (or `~/.batho`).

pub mod complete;
pub mod highlight;
pub mod script;
pub mod session;

use std::borrow::Cow;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Config, Context, Editor, Helper};

use complete::Vocabulary;
use session::{Outcome, Session};

/// Where history is kept: `$BATHO_HOME/ql_history`, else `~/.batho/ql_history`.
pub fn history_path() -> Option<PathBuf> {
    let home = match std::env::var_os("BATHO_HOME") {
        Some(h) if !h.is_empty() => PathBuf::from(h),
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".batho"),
    };
    Some(home.join("ql_history"))
}

/// Whether the editor should stop reading lines: a `:` command, a blank line, or a
/// statement that ends with `;`.
pub fn input_complete(buffer: &str) -> bool {
    let t = buffer.trim();
    t.is_empty() || t.starts_with(':') || script::ends_statement(buffer)
}

/// The rustyline helper: completion, colouring and multi-line validation.
struct QlHelper {
    vocab: Vocabulary,
    params: Vec<String>,
}

impl Completer for QlHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(self.vocab.complete(line, pos, &self.params))
    }
}

impl Hinter for QlHelper {
    type Hint = String;
}

impl Highlighter for QlHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        Cow::Owned(highlight::highlight(line, &self.vocab))
    }

    fn highlight_char(&self, _line: &str, _pos: usize, _kind: CmdKind) -> bool {
        true
    }
}

impl Validator for QlHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if input_complete(ctx.input()) {
            ValidationResult::Valid(None)
        } else {
            ValidationResult::Incomplete
        })
    }
}

impl Helper for QlHelper {}

/// Runs the interactive shell; returns the process exit code.
pub fn interactive(path: &Path, create: bool) -> u8 {
    let (mut session, open_error) = Session::new(path, create);
    outln!(
        "batho-ql {} — BQL shell. Statements end with ';'. :help for commands.",
        env!("CARGO_PKG_VERSION")
    );
    if let Some(e) = open_error {
        eprintln!("{e}");
    }
    let config = Config::builder()
        .auto_add_history(false)
        .history_ignore_space(true)
        .completion_type(rustyline::CompletionType::List)
        .build();
    let mut editor: Editor<QlHelper, rustyline::history::DefaultHistory> =
        match Editor::with_config(config) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("error: cannot start the line editor: {e}");
                return 2;
            }
        };
    editor.set_helper(Some(QlHelper {
        vocab: Vocabulary::new(&batho_lang::Schema::code_graph()),
        params: Vec::new(),
    }));
    let history = history_path();
    if let Some(h) = &history {
        // A missing history file is normal on first use.
        let _ = editor.load_history(h);
    }
    let mut stdout = crate::stdout::ClosedPipeExits::new();
    let stderr = std::io::stderr();
    loop {
        let prompt = if session.is_open() {
            "bql> "
        } else {
            "bql (no artifact)> "
        };
        match editor.readline(prompt) {
            Ok(line) => {
                if line.trim().is_empty() {
                    continue;
                }
                let _ = editor.add_history_entry(line.as_str());
                let outcome = session.handle(&line, &mut stdout, &mut stderr.lock());
                if let Some(h) = editor.helper_mut() {
                    h.params = session.param_names();
                }
                if outcome == Outcome::Quit {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("error: {e}");
                break;
            }
        }
    }
    if let Some(h) = &history {
        if let Some(dir) = h.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Err(e) = editor.save_history(h) {
            eprintln!("warning: cannot save history to {}: {e}", h.display());
        }
    }
    0
}

/// Runs statements and `:` commands read from `input` without prompts or colours;
/// returns 0 when all worked, 1 when any failed, 2 when no artifact could be opened.
pub fn script(
    path: &Path,
    create: bool,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let (mut session, open_error) = Session::new(path, create);
    if let Some(e) = open_error {
        let _ = writeln!(err, "{e}");
        return 2;
    }
    let mut failed = false;
    let mut buffer = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                let _ = writeln!(err, "error: cannot read standard input: {e}");
                return 2;
            }
        }
        // A `:` command is a line of its own, outside any statement.
        if buffer.trim().is_empty() && line.trim_start().starts_with(':') {
            buffer.clear();
            match session.handle(&line, out, err) {
                Outcome::Ok => {}
                Outcome::Failed => failed = true,
                Outcome::Quit => return u8::from(failed),
            }
            continue;
        }
        buffer.push_str(&line);
        if script::ends_statement(&buffer) {
            failed |= session.handle(&buffer, out, err) == Outcome::Failed;
            buffer.clear();
        }
    }
    if !buffer.trim().is_empty() {
        failed |= session.handle(&buffer, out, err) == Outcome::Failed;
    }
    let _ = out.flush();
    u8::from(failed)
}
