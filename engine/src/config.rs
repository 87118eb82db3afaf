//! The build's configuration: which macros are defined when `#if` conditions are
//! evaluated (see `extract::conditions`).
//!
//! Sources, first found wins:
//! 1. the file given to `batho build --compile-commands FILE`;
//! 2. `compile_commands.json` at the repository root;
//! 3. the `defines:` and `include_dirs:` lists of `batho.yaml` at the repository root.
//!
//! A compilation database lists one command per translation unit; Batho keeps one
//! configuration for the whole repository, the union of the units' `-D`, `-U` and `-I`
//! flags in the database's order (the first value given to a name wins, a name some unit
//! undefines and none defines stays undefined), and every file, header or not, is
//! evaluated with it. With none of the three, there is no configuration: nothing is
//! evaluated and every branch is active, as before configurations existed.
//!
//! A build records the configuration it used in `.batho/configuration` (one `D NAME=VALUE`,
//! `U NAME` or `I DIR` per line), and a patch reuses that record, so that it produces what
//! the build it extends would have.

use std::path::{Path, PathBuf};

/// Where the record of the build's configuration lives, in the artifact folder.
const RECORD: &str = "configuration";

/// The macros in force when `#if` conditions are evaluated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Configuration {
    /// `NAME` (value `1`) or `NAME=VALUE`, as `-D` takes them; `NAME(args)=BODY` defines a
    /// function-like macro.
    pub defines: Vec<String>,
    /// Names undefined (`-U`).
    pub undefines: Vec<String>,
    /// Include folders (`-I`), as written: where a translation unit's `#include`s of
    /// repository files are looked for after the includer's own folder, so that their
    /// macros count (see `extract::conditions`).
    pub include_dirs: Vec<String>,
}

/// Why a configuration could not be read. Never quotes the file's contents.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {reason}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        reason: String,
    },
    /// The file is not a compilation database.
    #[error("{path} is not a valid compilation database: {reason}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, without the file's text.
        reason: String,
    },
}

impl Configuration {
    /// The configuration of the repository at `root`: `explicit` (a compilation database)
    /// when given, else `compile_commands.json` at the root, else `batho.yaml`'s lists;
    /// none when there is none of them (or `batho.yaml` has neither list).
    pub fn discover(
        root: &Path,
        explicit: Option<&Path>,
    ) -> Result<Option<Configuration>, ConfigError> {
        let database = match explicit {
            Some(path) => Some(path.to_path_buf()),
            None => Some(root.join("compile_commands.json")).filter(|p| p.is_file()),
        };
        if let Some(path) = database {
            let text = std::fs::read_to_string(&path).map_err(|e| ConfigError::Read {
                path: path.clone(),
                reason: e.kind().to_string(),
            })?;
            return Configuration::from_compile_commands(&text)
                .map(Some)
                .map_err(|reason| ConfigError::Malformed { path, reason });
        }
        match std::fs::read_to_string(root.join("batho.yaml")) {
            Ok(text) => Ok(Configuration::from_batho_yaml(&text)),
            Err(_) => Ok(None),
        }
    }

    /// Reads a compilation database (`[{"directory", "file", "arguments" | "command"}]`).
    pub fn from_compile_commands(text: &str) -> Result<Configuration, String> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("not JSON (line {}, column {})", e.line(), e.column()))?;
        let entries = value
            .as_array()
            .ok_or_else(|| "the top level is not an array".to_string())?;
        let mut config = Configuration::default();
        for (i, entry) in entries.iter().enumerate() {
            let entry = entry
                .as_object()
                .ok_or_else(|| format!("entry {i} is not an object"))?;
            let args: Vec<String> = if let Some(args) = entry.get("arguments") {
                args.as_array()
                    .ok_or_else(|| format!("entry {i}: \"arguments\" is not an array"))?
                    .iter()
                    .map(|a| {
                        a.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| format!("entry {i}: an argument is not a string"))
                    })
                    .collect::<Result<_, _>>()?
            } else if let Some(command) = entry.get("command") {
                split_command(
                    command
                        .as_str()
                        .ok_or_else(|| format!("entry {i}: \"command\" is not a string"))?,
                )
            } else {
                return Err(format!(
                    "entry {i} has neither \"arguments\" nor \"command\""
                ));
            };
            config.add_flags(&args);
        }
        Ok(config)
    }

    /// Adds one command's `-D`, `-U` and `-I` flags (joined or separate).
    fn add_flags(&mut self, args: &[String]) {
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            for (flag, list) in [("-D", 0), ("-U", 1), ("-I", 2)] {
                let Some(rest) = arg.strip_prefix(flag) else {
                    continue;
                };
                let value = if rest.is_empty() {
                    match it.next() {
                        Some(v) => v.as_str(),
                        None => break,
                    }
                } else {
                    rest
                };
                match list {
                    0 => self.define(value),
                    1 => {
                        if !self.undefines.iter().any(|u| u == value) {
                            self.undefines.push(value.to_owned());
                        }
                    }
                    _ => {
                        if !self.include_dirs.iter().any(|d| d == value) {
                            self.include_dirs.push(value.to_owned());
                        }
                    }
                }
                break;
            }
        }
    }

    /// Adds `NAME[=VALUE]` unless `NAME` is defined already (the first value wins).
    fn define(&mut self, define: &str) {
        let name = macro_name(define);
        if name.is_empty() || self.defines.iter().any(|d| macro_name(d) == name) {
            return;
        }
        self.defines.push(define.to_owned());
    }

    /// Reads the top-level `defines:` and `include_dirs:` lists of a `batho.yaml` (flow
    /// `[A, B=1]` or block `- A` items); none when it has neither.
    pub fn from_batho_yaml(text: &str) -> Option<Configuration> {
        let defines = crate::yaml_lists::yaml_list(text, &["defines"]);
        let include_dirs = crate::yaml_lists::yaml_list(text, &["include_dirs"]);
        if defines.is_none() && include_dirs.is_none() {
            return None;
        }
        let mut config = Configuration::default();
        for define in defines.unwrap_or_default() {
            config.define(&define);
        }
        config.include_dirs = include_dirs.unwrap_or_default();
        Some(config)
    }

    /// The record written in the artifact folder (see the module's documentation).
    fn to_record(&self) -> String {
        let mut out = String::new();
        for d in &self.defines {
            out.push_str(&format!("D {d}\n"));
        }
        for u in &self.undefines {
            out.push_str(&format!("U {u}\n"));
        }
        for i in &self.include_dirs {
            out.push_str(&format!("I {i}\n"));
        }
        out
    }

    fn from_record(text: &str) -> Configuration {
        let mut config = Configuration::default();
        for line in text.lines() {
            match line.split_at_checked(2) {
                Some(("D ", d)) => config.defines.push(d.to_owned()),
                Some(("U ", u)) => config.undefines.push(u.to_owned()),
                Some(("I ", i)) => config.include_dirs.push(i.to_owned()),
                _ => {}
            }
        }
        config
    }

    /// Records `config` (or its absence) in the artifact folder `dir`.
    pub fn record(dir: &Path, config: Option<&Configuration>) -> std::io::Result<()> {
        let path = dir.join(RECORD);
        match config {
            Some(c) => {
                let tmp = dir.join(format!("{RECORD}.tmp"));
                std::fs::write(&tmp, c.to_record())?;
                std::fs::rename(&tmp, &path)
            }
            None => match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
        }
    }

    /// The configuration the last build of the artifact folder `dir` recorded.
    pub fn recorded(dir: &Path) -> Option<Configuration> {
        std::fs::read_to_string(dir.join(RECORD))
            .ok()
            .map(|t| Configuration::from_record(&t))
    }
}

/// The name of a `-D` argument: up to `=` or `(`.
fn macro_name(define: &str) -> &str {
    let end = define.find(['=', '(']).unwrap_or(define.len());
    define[..end].trim()
}

/// Splits a shell command line at unquoted whitespace (quotes and backslashes removed).
fn split_command(command: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut current = String::new();
    let mut has = false;
    let mut quote: Option<char> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => current.extend(chars.next()),
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                has = true;
            }
            (None, '\\') => {
                current.extend(chars.next());
                has = true;
            }
            (None, c) if c.is_whitespace() => {
                if has || !current.is_empty() {
                    args.push(std::mem::take(&mut current));
                }
                has = false;
            }
            (None, c) => current.push(c),
        }
    }
    if has || !current.is_empty() {
        args.push(current);
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compile_commands_union_first_value_wins() {
        let db = r#"[
          {"directory": "/r", "file": "a.c", "arguments": ["cc", "-DA=1", "-D", "B", "-I", "inc", "a.c"]},
          {"directory": "/r", "file": "b.c", "command": "cc -DA=2 -UC -Iinc -I\"other dir\" -DS=\"x y\" b.c"}
        ]"#;
        let c = Configuration::from_compile_commands(db).unwrap();
        assert_eq!(c.defines, ["A=1", "B", "S=x y"]);
        assert_eq!(c.undefines, ["C"]);
        assert_eq!(c.include_dirs, ["inc", "other dir"]);
    }

    #[test]
    fn malformed_compile_commands_are_errors_without_contents() {
        for bad in [
            "{",
            "{}",
            "[1]",
            "[{\"file\": \"a.c\"}]",
            "[{\"arguments\": [1]}]",
        ] {
            let e = Configuration::from_compile_commands(bad).unwrap_err();
            assert!(!e.contains("a.c"), "{e}");
        }
    }

    #[test]
    fn batho_yaml_lists() {
        let c = Configuration::from_batho_yaml(
            "mcp:\n  tools: [x]\ndefines: [A, 'B=2']\ninclude_dirs:\n  - inc\n  - \"lib\"\n",
        )
        .unwrap();
        assert_eq!(c.defines, ["A", "B=2"]);
        assert_eq!(c.include_dirs, ["inc", "lib"]);
        assert_eq!(Configuration::from_batho_yaml("mcp:\n  tools: [x]\n"), None);
    }

    #[test]
    fn record_round_trip() {
        let c = Configuration {
            defines: vec!["A=1 + 2".into(), "F(x)=x".into()],
            undefines: vec!["U".into()],
            include_dirs: vec!["inc".into()],
        };
        assert_eq!(Configuration::from_record(&c.to_record()), c);
    }
}
