//! The repo registry: named repository roots, persisted as `registry.json` under
//! `$BATHO_HOME` (default `~/.batho/`). Writes are atomic: a temp file is written and
//! fsynced, renamed over the old file, and the directory is fsynced, so a crash leaves
//! either the old or the new registry, never a torn one.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One registered repository.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepoEntry {
    /// Unique name.
    pub name: String,
    /// Absolute repository root.
    pub path: PathBuf,
    /// Re-index the repo after its sources change (see the `watch` module).
    #[serde(default)]
    pub watch: bool,
    /// Debounce for file watch events, in milliseconds.
    #[serde(default = "default_debounce")]
    pub debounce_ms: u64,
    /// Largest file to index, in KB (`None`: the build default).
    #[serde(default)]
    pub max_file_size_kb: Option<u64>,
}

fn default_debounce() -> u64 {
    2000
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct RegistryFile {
    repos: Vec<RepoEntry>,
}

/// Why the registry could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Reading or writing failed.
    #[error("cannot access the registry at {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid registry JSON.
    #[error("the registry at {path} is not valid: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
}

/// `$BATHO_HOME`, or `~/.batho` (or `./.batho-home` when there is no home directory).
pub fn batho_home() -> PathBuf {
    if let Some(h) = std::env::var_os("BATHO_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h);
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(h) => PathBuf::from(h).join(".batho"),
        None => PathBuf::from(".batho-home"),
    }
}

/// The registry file and its entries, in registration order (the first is the default).
#[derive(Debug)]
pub struct Registry {
    file: PathBuf,
    repos: Vec<RepoEntry>,
}

impl Registry {
    /// Loads `home/registry.json`; a missing file is an empty registry.
    pub fn load(home: &Path) -> Result<Registry, RegistryError> {
        let file = home.join("registry.json");
        let repos = match fs::read(&file) {
            Ok(bytes) => {
                serde_json::from_slice::<RegistryFile>(&bytes)
                    .map_err(|source| RegistryError::Parse {
                        path: file.clone(),
                        source,
                    })?
                    .repos
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => return Err(RegistryError::Io { path: file, source }),
        };
        Ok(Registry { file, repos })
    }

    /// Entries in registration order.
    pub fn repos(&self) -> &[RepoEntry] {
        &self.repos
    }

    /// The entry called `name`.
    pub fn get(&self, name: &str) -> Option<&RepoEntry> {
        self.repos.iter().find(|r| r.name == name)
    }

    /// Adds or replaces `entry` (a re-registration keeps its position) and saves.
    pub fn upsert(&mut self, entry: RepoEntry) -> Result<(), RegistryError> {
        match self.repos.iter_mut().find(|r| r.name == entry.name) {
            Some(slot) => *slot = entry,
            None => self.repos.push(entry),
        }
        self.save()
    }

    /// Removes `name` and saves; `false` when it was not registered.
    pub fn remove(&mut self, name: &str) -> Result<bool, RegistryError> {
        let before = self.repos.len();
        self.repos.retain(|r| r.name != name);
        if self.repos.len() == before {
            return Ok(false);
        }
        self.save()?;
        Ok(true)
    }

    fn save(&self) -> Result<(), RegistryError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| RegistryError::Io { path, source }
        };
        let dir = self.file.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(io(dir))?;
        let body = serde_json::to_vec_pretty(&RegistryFile {
            repos: self.repos.clone(),
        })
        .map_err(|source| RegistryError::Parse {
            path: self.file.clone(),
            source,
        })?;
        let tmp = dir.join(format!("registry.json.tmp-{}", std::process::id()));
        {
            let mut f = fs::File::create(&tmp).map_err(io(&tmp))?;
            f.write_all(&body).map_err(io(&tmp))?;
            f.sync_all().map_err(io(&tmp))?;
        }
        fs::rename(&tmp, &self.file).map_err(io(&self.file))?;
        // The rename is only durable once the directory entry is; not every platform lets
        // a directory be opened for that, so failure here is not an error.
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_order_and_replaces_in_place() {
        let home = tempfile::tempdir().unwrap();
        let mut r = Registry::load(home.path()).unwrap();
        assert!(r.repos().is_empty());
        let e = |n: &str, p: &str| RepoEntry {
            name: n.into(),
            path: p.into(),
            watch: false,
            debounce_ms: 2000,
            max_file_size_kb: None,
        };
        r.upsert(e("a", "/a")).unwrap();
        r.upsert(e("b", "/b")).unwrap();
        r.upsert(e("a", "/a2")).unwrap();
        let again = Registry::load(home.path()).unwrap();
        let names: Vec<_> = again.repos().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(again.get("a").unwrap().path, PathBuf::from("/a2"));
        assert!(r.remove("a").unwrap());
        assert!(!r.remove("a").unwrap());
        assert_eq!(Registry::load(home.path()).unwrap().repos().len(), 1);
        let leftovers = fs::read_dir(home.path()).unwrap().count();
        assert_eq!(leftovers, 1, "no temp files left behind");
    }

    #[test]
    fn corrupt_registry_is_an_error() {
        let home = tempfile::tempdir().unwrap();
        fs::write(home.path().join("registry.json"), b"{nope").unwrap();
        assert!(matches!(
            Registry::load(home.path()),
            Err(RegistryError::Parse { .. })
        ));
    }
}
