//! The state file: every key of the policy's store, persisted between runs and shared by the
//! guard and the admin subcommands.
//!
//! Main design decision: the file is the truth and is never silently reset. It is read
//! strictly (a file that is not exactly what this module writes is refused with the reason,
//! and the guard does not start), written atomically after every change (temporary file,
//! fsync, rename, fsync of the directory), and used under an exclusive lock on `FILE.lock`
//! for the duration of one message or one admin action, re-read whenever another process
//! replaced it. So `toolseal-stdio approve` takes effect in a running guard on its next
//! message, and two guards on one file cannot lose each other's writes.
//!
//! Format: `{"toolseal_stdio_state": 1, "entries": {KEY: VALUE, ...}}` where VALUE is the
//! stored bytes as a string when they are UTF-8 (the engine writes JSON text), else
//! `{"hex": "..."}`. Store versions are not persisted: they are compare-and-swap tokens of
//! one process.

use serde_json::{Map, Value, json};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use toolseal_core::state::store::{Expect, MemoryStore, StateStore};

/// The format number this module reads and writes.
pub const FORMAT: u64 = 1;
/// The largest state file read (a file past this is refused, not truncated).
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Why the state file cannot be used.
#[derive(Debug)]
pub enum StateFileError {
    /// The file (or its lock file) cannot be read, written or locked.
    Io {
        /// The path involved.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The system's error.
        error: std::io::Error,
    },
    /// The file exists but is not a toolseal-stdio state file.
    Corrupt {
        /// The path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl fmt::Display for StateFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateFileError::Io {
                path,
                action,
                error,
            } => {
                write!(
                    f,
                    "cannot {action} the state file {}: {error}",
                    path.display()
                )
            }
            StateFileError::Corrupt { path, reason } => write!(
                f,
                "the state file {} is unreadable ({reason}); it holds the approved baselines, so it is \
                 not reset: restore it from a backup, or move it away to start over with no baseline",
                path.display()
            ),
        }
    }
}

impl std::error::Error for StateFileError {}

/// What identifies one version of the file on disk (a rename gives a new inode).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

fn stamp(meta: &std::fs::Metadata) -> Stamp {
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    let inode = 0;
    Stamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        inode,
    }
}

/// An open state file.
pub struct StateFile {
    path: PathBuf,
    lock: File,
    seen: Option<Stamp>,
}

/// Holds the exclusive lock until dropped.
pub struct Locked<'a> {
    file: &'a mut StateFile,
}

impl StateFile {
    /// Opens (or prepares to create) the state file at `path` and reads it into a store. A
    /// missing file is an empty state (first use); an unreadable one is an error.
    pub fn open(path: &Path) -> Result<(StateFile, MemoryStore), StateFileError> {
        let lock_path = lock_path(path);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|error| StateFileError::Io {
                path: lock_path,
                action: "create the lock file of",
                error,
            })?;
        let mut file = StateFile {
            path: path.to_path_buf(),
            lock,
            seen: None,
        };
        let mut store = MemoryStore::new();
        file.lock()?.refresh(&mut store)?;
        Ok((file, store))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Takes the exclusive lock (waits for another process holding it).
    pub fn lock(&mut self) -> Result<Locked<'_>, StateFileError> {
        self.lock.lock().map_err(|error| StateFileError::Io {
            path: lock_path(&self.path),
            action: "lock",
            error,
        })?;
        Ok(Locked { file: self })
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let _ = self.file.lock.unlock();
    }
}

impl Locked<'_> {
    /// Re-reads the file into `store` if another process replaced it since this one last read
    /// or wrote it. A file that vanished keeps the state in memory (it is written again on the
    /// next change).
    pub fn refresh(&mut self, store: &mut MemoryStore) -> Result<(), StateFileError> {
        let path = &self.file.path;
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(error) => {
                return Err(StateFileError::Io {
                    path: path.clone(),
                    action: "inspect",
                    error,
                });
            }
        };
        let now = stamp(&meta);
        if self.file.seen.as_ref() == Some(&now) {
            return Ok(());
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(corrupt(
                path,
                format!("{} bytes, over the {MAX_FILE_BYTES}-byte limit", meta.len()),
            ));
        }
        let bytes = std::fs::read(path).map_err(|error| StateFileError::Io {
            path: path.clone(),
            action: "read",
            error,
        })?;
        *store = decode(&bytes).map_err(|reason| corrupt(path, reason))?;
        self.file.seen = Some(now);
        Ok(())
    }

    /// Writes every key of `store` atomically.
    pub fn save(&mut self, store: &MemoryStore) -> Result<(), StateFileError> {
        let path = self.file.path.clone();
        let io = |action: &'static str, error: std::io::Error| StateFileError::Io {
            path: path.clone(),
            action,
            error,
        };
        let text = encode(store);
        let temp = temp_path(&path);
        let mut file = File::create(&temp).map_err(|e| io("create a temporary file beside", e))?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| io("write", e))?;
        drop(file);
        std::fs::rename(&temp, &path).map_err(|e| io("replace", e))?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // The rename is durable only once the directory entry is.
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| io("sync the directory of", e))?;
        }
        let meta = std::fs::metadata(&path).map_err(|e| io("inspect", e))?;
        self.file.seen = Some(stamp(&meta));
        Ok(())
    }
}

fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".lock");
    PathBuf::from(name)
}

fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    PathBuf::from(name)
}

fn corrupt(path: &Path, reason: String) -> StateFileError {
    StateFileError::Corrupt {
        path: path.to_path_buf(),
        reason,
    }
}

/// The file text for `store`.
pub fn encode(store: &MemoryStore) -> String {
    let mut entries = Map::new();
    for (key, value) in store.entries() {
        let value = match std::str::from_utf8(value) {
            Ok(text) => Value::String(text.to_string()),
            Err(_) => json!({"hex": hex(value)}),
        };
        entries.insert(key.to_string(), value);
    }
    let mut text = json!({"toolseal_stdio_state": FORMAT, "entries": entries}).to_string();
    text.push('\n');
    text
}

/// The store a file text holds, or why it is not a state file.
pub fn decode(bytes: &[u8]) -> Result<MemoryStore, String> {
    let value =
        toolseal_core::wire::json::parse_strict(bytes, 8).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(top) = value else {
        return Err("not a JSON object".into());
    };
    match top.get("toolseal_stdio_state").and_then(Value::as_u64) {
        Some(FORMAT) => {}
        Some(other) => return Err(format!("format {other}, this build reads format {FORMAT}")),
        None => return Err("no \"toolseal_stdio_state\" format number".into()),
    }
    if let Some(unknown) = top
        .keys()
        .find(|k| *k != "toolseal_stdio_state" && *k != "entries")
    {
        return Err(format!("unknown field {unknown:?}"));
    }
    let Some(Value::Object(entries)) = top.get("entries") else {
        return Err("no \"entries\" object".into());
    };
    let mut store = MemoryStore::new();
    for (key, value) in entries {
        let bytes = match value {
            Value::String(text) => text.clone().into_bytes(),
            Value::Object(o) if o.len() == 1 => {
                match o.get("hex").and_then(Value::as_str).and_then(unhex) {
                    Some(bytes) => bytes,
                    None => {
                        return Err(format!(
                            "entry {key:?}: \"hex\" must be an even-length hex string"
                        ));
                    }
                }
            }
            _ => {
                return Err(format!(
                    "entry {key:?}: a value is a string or {{\"hex\": \"...\"}}"
                ));
            }
        };
        store
            .set(key, &bytes, Expect::Any)
            .map_err(|e| format!("entry {key:?}: {e}"))?;
    }
    Ok(store)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        })
        .collect()
}
