//! Compiled-module cache: compiling the plugin with Cranelift takes seconds in a debug
//! build, loading a precompiled artifact takes milliseconds.
//!
//! Main design decision: the key is the SHA-256 of the `.wasm` plus wasmtime's own
//! compatibility hash of the engine (its version and settings), so a rebuilt plugin or a
//! new wasmtime never loads a stale artifact; an artifact wasmtime still refuses is
//! recompiled and replaced. Files are written to a temporary name and renamed, so a
//! concurrent run sees a whole artifact or none. The directory is the user's own cache
//! (`$TOOLSEAL_CACHE_DIR`, else `$XDG_CACHE_HOME/toolseal`, else `~/.cache/toolseal`):
//! deserializing trusts its contents, as wasmtime requires.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::{Engine, Module};

/// How a module was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from a precompiled artifact.
    Hit,
    /// Compiled, and the artifact stored.
    Stored,
    /// Compiled without a cache (none configured or not writable).
    Uncached,
}

/// The cache directory from the environment, if any can be named.
pub fn default_cache_dir() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("TOOLSEAL_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("toolseal")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("toolseal")))
}

/// The artifact file name for `wasm` under `engine`.
pub fn cache_key(engine: &Engine, wasm: &[u8]) -> String {
    let digest = Sha256::digest(wasm);
    let wasm_hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!("{wasm_hex}-{:016x}.cwasm", hasher.finish())
}

/// Loads `wasm` as a module, through the cache in `cache_dir` when given.
pub fn load(
    engine: &Engine,
    wasm: &[u8],
    cache_dir: Option<&Path>,
) -> Result<(Module, CacheOutcome)> {
    let Some(dir) = cache_dir else {
        return Ok((compile(engine, wasm)?, CacheOutcome::Uncached));
    };
    let path = dir.join(cache_key(engine, wasm));
    if let Ok(bytes) = std::fs::read(&path) {
        // SAFETY: the artifact was written by `Engine::precompile_module` for this very
        // input and engine (the file name says so) into the user's own cache directory;
        // wasmtime still checks its header and engine compatibility and refuses a mismatch.
        if let Ok(module) = unsafe { Module::deserialize(engine, &bytes) } {
            return Ok((module, CacheOutcome::Hit));
        }
    }
    let artifact = engine
        .precompile_module(wasm)
        .map_err(anyhow::Error::from)
        .context("compiling the plugin .wasm (is it a valid wasm32 module?)")?;
    let stored = store(dir, &path, &artifact).is_ok();
    // SAFETY: `artifact` was produced just above by this engine.
    let module = unsafe { Module::deserialize(engine, &artifact) }
        .map_err(anyhow::Error::from)
        .context("loading the module just compiled")?;
    Ok((
        module,
        if stored {
            CacheOutcome::Stored
        } else {
            CacheOutcome::Uncached
        },
    ))
}

/// Compiles without caching.
fn compile(engine: &Engine, wasm: &[u8]) -> Result<Module> {
    Module::new(engine, wasm)
        .map_err(anyhow::Error::from)
        .context("compiling the plugin .wasm (is it a valid wasm32 module?)")
}

/// Writes `artifact` to `path` atomically (temporary file + rename).
fn store(dir: &Path, path: &Path, artifact: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    // Unique per process and thread: two replays may miss the cache at the same moment.
    let thread = format!("{:?}", std::thread::current().id());
    let thread: String = thread.chars().filter(char::is_ascii_digit).collect();
    let tmp = path.with_extension(format!("tmp{}-{thread}", std::process::id()));
    std::fs::write(&tmp, artifact)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}
