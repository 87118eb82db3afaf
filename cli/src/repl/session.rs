//! The state of a `batho-ql` session (open database, output format, parameters, timing)
//! and the handling of one complete input: a `:` command or BQL statements.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use batho_engine::query::render::Format;
use batho_engine::query::{OpenGraph, QueryError, QueryOptions, Value};

use super::script::{self, Statement};

/// The `:help` text.
pub const HELP: &str = "\
Statements end with ';' and may span several lines.
Commands:
  :help                    this text
  :schema                  node kinds and relationship types with their counts
  :explain QUERY           show the plan of QUERY without running it
  :profile QUERY           run QUERY and show rows and time per operator
  :format table|json|jsonl|csv   choose the output format
  :param NAME=VALUE        set $NAME (VALUE is JSON when it parses, else text)
  :params                  list the parameters that are set
  :timing                  toggle printing the elapsed time of each statement
  :open PATH               open another repository's artifact or a writable graph
  :new PATH                create a writable graph in PATH and open it
  :checkpoint              fold a writable graph's log into a checkpoint
Writable graphs take CREATE, MERGE, SET, REMOVE, DELETE; BEGIN; ... COMMIT; (or ROLLBACK;)
group statements into one transaction.
  :quit                    leave (also Ctrl-D)";

/// What the caller should do after an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Everything in the input worked.
    Ok,
    /// Something failed; the session goes on.
    Failed,
    /// `:quit`.
    Quit,
}

/// One REPL session.
pub struct Session {
    db: Option<OpenGraph>,
    path: PathBuf,
    /// Output format of results.
    pub format: Format,
    /// Parameters set with `:param`.
    pub params: BTreeMap<String, Value>,
    /// Print the elapsed time after each statement.
    pub timing: bool,
    opts: QueryOptions,
}

impl Session {
    /// A session on the graph at `path` (created first as an empty writable graph when
    /// `create`); the error says why it could not be opened (the session still works,
    /// with `:open` to try another path).
    pub fn new(path: &Path, create: bool) -> (Session, Option<String>) {
        let mut s = Session {
            db: None,
            path: path.to_path_buf(),
            format: Format::Table,
            params: BTreeMap::new(),
            timing: false,
            opts: QueryOptions::default(),
        };
        let err = if create { s.create(path) } else { s.open(path) }.err();
        (s, err)
    }

    /// Whether an artifact is open.
    pub fn is_open(&self) -> bool {
        self.db.is_some()
    }

    /// The names of the parameters that are set.
    pub fn param_names(&self) -> Vec<String> {
        self.params.keys().cloned().collect()
    }

    fn open(&mut self, path: &Path) -> Result<(), String> {
        self.adopt(path, OpenGraph::open(path))
    }

    /// Creates a writable graph in `path` and opens it.
    pub fn create(&mut self, path: &Path) -> Result<(), String> {
        self.adopt(path, OpenGraph::create(path))
    }

    fn adopt(&mut self, path: &Path, opened: Result<OpenGraph, QueryError>) -> Result<(), String> {
        match opened {
            Ok(db) => {
                self.db = Some(db);
                self.path = path.to_path_buf();
                Ok(())
            }
            Err(e @ QueryError::GraphExists { .. }) => Err(format!(
                "error: {e}\nhint: open it with 'batho-ql {}'",
                path.display()
            )),
            Err(QueryError::NoArtifact { .. }) => {
                let (message, hint) = crate::advice::no_artifact_advice(path);
                Err(format!("error: {message}\nhint: {hint}"))
            }
            Err(e) => Err(match e.remedy() {
                Some(remedy) => format!(
                    "error: {e}\nhint: {}",
                    crate::advice::remedy_hint(remedy, path)
                ),
                None => format!("error: {e}"),
            }),
        }
    }

    /// Handles one complete input: a `:` command, or statements separated by `;`.
    pub fn handle(&mut self, input: &str, out: &mut dyn Write, err: &mut dyn Write) -> Outcome {
        let trimmed = input.trim();
        let result = if let Some(cmd) = trimmed.strip_prefix(':') {
            self.command(cmd, out, err)
        } else {
            let mut ok = true;
            for stmt in script::split_statements(input) {
                ok &= self.run(&stmt, out, err);
            }
            Ok(if ok { Outcome::Ok } else { Outcome::Failed })
        };
        // Output errors (a closed pipe) are failures too, not panics.
        result.unwrap_or(Outcome::Failed)
    }

    fn command(
        &mut self,
        cmd: &str,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> std::io::Result<Outcome> {
        let cmd = cmd.trim().trim_end_matches(';').trim();
        let (name, arg) = cmd.split_once(char::is_whitespace).unwrap_or((cmd, ""));
        let arg = arg.trim();
        let ok = |b: bool| if b { Outcome::Ok } else { Outcome::Failed };
        Ok(match name {
            "help" | "h" | "?" => {
                writeln!(out, "{HELP}")?;
                Outcome::Ok
            }
            "quit" | "q" | "exit" => Outcome::Quit,
            "schema" => {
                let queries = self.db.as_ref().map_or(&[][..], OpenGraph::schema_queries);
                let mut worked = true;
                for query in queries {
                    worked &= self.run_text(query, out, err);
                }
                ok(worked && !queries.is_empty())
            }
            "checkpoint" => match &mut self.db {
                Some(OpenGraph::Writable(db)) => match db.checkpoint() {
                    Ok(info) => {
                        writeln!(
                            out,
                            "checkpoint {} written ({} bytes)",
                            info.generation, info.bytes
                        )?;
                        Outcome::Ok
                    }
                    Err(e) => {
                        writeln!(err, "error: {e}")?;
                        Outcome::Failed
                    }
                },
                _ => {
                    writeln!(err, "error: :checkpoint needs an open writable graph")?;
                    Outcome::Failed
                }
            },
            "new" if arg.is_empty() => {
                writeln!(err, "error: usage: :new PATH")?;
                Outcome::Failed
            }
            "new" => match self.create(Path::new(arg)) {
                Ok(()) => {
                    writeln!(out, "created {}", self.path.display())?;
                    Outcome::Ok
                }
                Err(e) => {
                    writeln!(err, "{e}")?;
                    Outcome::Failed
                }
            },
            "explain" | "profile" if arg.is_empty() => {
                writeln!(err, "error: usage: :{name} QUERY")?;
                Outcome::Failed
            }
            "explain" => ok(self.run_text(&format!("EXPLAIN {arg}"), out, err)),
            "profile" => ok(self.run_text(&format!("PROFILE {arg}"), out, err)),
            "format" if arg.is_empty() => {
                writeln!(out, "format: {}", script::format_name(self.format))?;
                Outcome::Ok
            }
            "format" => match script::parse_format(arg) {
                Some(f) => {
                    self.format = f;
                    Outcome::Ok
                }
                None => {
                    writeln!(
                        err,
                        "error: unknown format '{arg}' (expected table, json, jsonl or csv)"
                    )?;
                    Outcome::Failed
                }
            },
            "param" => match script::parse_param(arg) {
                Ok((k, v)) => {
                    self.params.insert(k, v);
                    Outcome::Ok
                }
                Err(e) => {
                    writeln!(err, "error: {e}")?;
                    Outcome::Failed
                }
            },
            "params" => {
                for (k, v) in &self.params {
                    writeln!(out, "${k} = {v}")?;
                }
                if self.params.is_empty() {
                    writeln!(out, "no parameters set (use :param NAME=VALUE)")?;
                }
                Outcome::Ok
            }
            "timing" => {
                self.timing = !self.timing;
                writeln!(out, "timing {}", if self.timing { "on" } else { "off" })?;
                Outcome::Ok
            }
            "open" if arg.is_empty() => {
                writeln!(err, "error: usage: :open PATH")?;
                Outcome::Failed
            }
            "open" => match self.open(Path::new(arg)) {
                Ok(()) => {
                    let what = self
                        .db
                        .as_ref()
                        .map(OpenGraph::describe)
                        .unwrap_or_default();
                    writeln!(out, "opened {} ({what})", self.path.display())?;
                    Outcome::Ok
                }
                Err(e) => {
                    writeln!(err, "{e}")?;
                    Outcome::Failed
                }
            },
            _ => {
                writeln!(err, "error: unknown command ':{name}' (try :help)")?;
                Outcome::Failed
            }
        })
    }

    fn run_text(&mut self, text: &str, out: &mut dyn Write, err: &mut dyn Write) -> bool {
        self.run(&Statement::whole(text), out, err)
    }

    /// Runs one statement and prints its result or error; `true` when it worked.
    fn run(&mut self, stmt: &Statement, out: &mut dyn Write, err: &mut dyn Write) -> bool {
        let Some(db) = &mut self.db else {
            let _ = writeln!(
                err,
                "error: no artifact is open at {}\nhint: run 'batho build' there, or ':open PATH'",
                self.path.display()
            );
            return false;
        };
        let start = Instant::now();
        let result = script::run_statement(db, stmt, &self.params, &self.opts);
        let elapsed = start.elapsed();
        let ok = match result {
            Ok(res) => db
                .with_access(|graph| script::print_result(graph, &res, self.format, out, err))
                .is_ok(),
            Err(e) => {
                let _ = writeln!(err, "{}", script::error_text(&e));
                false
            }
        };
        if self.timing {
            let _ = writeln!(err, "({:.3} ms)", elapsed.as_secs_f64() * 1000.0);
        }
        ok
    }
}
