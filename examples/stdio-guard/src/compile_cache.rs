//! A cache of the component compiled to native code, so a guard starts in milliseconds
//! instead of compiling the policy again (about 0.6 s of CPU in a release build).
//!
//! Main design decision: the cache is an optimisation that can never change behaviour. The
//! entry's name is the SHA-256 of the exact component bytes plus wasmtime's compatibility hash
//! (compiler version and settings), so a stale entry is never looked up; an entry that fails
//! to load is compiled again and replaced; entries are written atomically; and the cache lives
//! in the user's own cache directory (`TOOLSEAL_CACHE_DIR`, else `$XDG_CACHE_HOME/toolseal`,
//! else `~/.cache/toolseal`), since loading native code trusts whoever can write there. Set
//! `TOOLSEAL_CACHE_DIR=off` to always compile.

use anyhow::{Result, anyhow};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The cache directory, or `None` when caching is off or no directory can be named.
pub fn cache_dir() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    match var("TOOLSEAL_CACHE_DIR") {
        Some(dir) if dir.as_os_str() == "off" => None,
        Some(dir) => Some(dir),
        None => var("XDG_CACHE_HOME")
            .map(|d| d.join("toolseal"))
            .or_else(|| var("HOME").map(|d| d.join(".cache").join("toolseal"))),
    }
}

/// The cache file name for `wasm` under `engine`.
pub fn entry_name(engine: &Engine, wasm: &[u8]) -> String {
    let digest: String = Sha256::digest(wasm)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!("guard-{digest}-{:016x}.cwasm", hasher.finish())
}

/// The component for `wasm`: from the cache in `dir` when it holds a loadable entry, else
/// compiled (and stored there for next time; a cache that cannot be written is skipped).
pub fn load(engine: &Engine, wasm: &[u8], dir: Option<&Path>) -> Result<Component> {
    let Some(dir) = dir else {
        return compile(engine, wasm);
    };
    let path = dir.join(entry_name(engine, wasm));
    if let Ok(bytes) = std::fs::read(&path) {
        // SAFETY: the entry was written by `store` below from `Component::serialize` of these
        // exact bytes (its name is their SHA-256 and the engine's compatibility hash), in the
        // user's own cache directory; wasmtime still checks its header and refuses an entry
        // built by another version or configuration. It is read into memory, not mapped, so
        // a file replaced or truncated later cannot touch the running guard.
        if let Ok(component) = unsafe { Component::deserialize(engine, &bytes) } {
            return Ok(component);
        }
    }
    let component = compile(engine, wasm)?;
    if let Ok(bytes) = component.serialize() {
        store(dir, &path, &bytes);
    }
    Ok(component)
}

fn compile(engine: &Engine, wasm: &[u8]) -> Result<Component> {
    Component::new(engine, wasm).map_err(|e| anyhow!("compiling the toolseal component: {e}"))
}

fn store(dir: &Path, path: &Path, bytes: &[u8]) {
    let temp = path.with_extension(format!("tmp-{}", std::process::id()));
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&temp, bytes))
        .and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
}
