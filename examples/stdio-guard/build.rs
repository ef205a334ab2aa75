//! Builds the toolseal component that `toolseal-stdio` embeds.
//!
//! Main design decision: one command, `cargo build -p toolseal-stdio`, yields a host with the
//! policy inside it. This script builds the `toolseal-component` crate for
//! `wasm32-unknown-unknown` with the `wasm` profile (a nested cargo, in the same target
//! directory, so `target/wasm32-unknown-unknown/wasm/toolseal_component.wasm` is the very
//! module a manual build gives), then encodes that core module into a component with
//! `wit-component` (the world comes from the `component-type` section wit-bindgen wrote, so
//! the component imports only `toolseal:policy/*`, no WASI). The component is written to
//! `OUT_DIR` (embedded with `include_bytes!`) and next to the core module as
//! `toolseal_guard.wasm` for other hosts.

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-unknown-unknown";
const PROFILE: &str = "wasm";

fn main() {
    if let Err(message) = run() {
        // A build script reports failure by exiting non-zero with its message on stderr.
        eprintln!("error: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR")?);
    let workspace = manifest_dir.join("../..");
    for watched in [
        "wit",
        "plugin/component",
        "plugin/core/src",
        "plugin/core/Cargo.toml",
        "Cargo.lock",
        "Cargo.toml",
    ] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join(watched).display()
        );
    }
    let out_dir = PathBuf::from(env("OUT_DIR")?);
    let mut target_dir = target_dir(&out_dir).unwrap_or_else(|| workspace.join("target"));
    if out_dir.starts_with(target_dir.join(PROFILE)) {
        // This build itself uses the `wasm` profile and holds that directory's lock: nest
        // the module's build in a directory of its own rather than wait on it forever.
        target_dir = target_dir.join("toolseal-component");
    }
    build_core_module(&workspace, &target_dir)?;
    let module_dir = target_dir.join(TARGET).join(PROFILE);
    let module = module_dir.join("toolseal_component.wasm");
    let bytes =
        std::fs::read(&module).map_err(|e| format!("cannot read {}: {e}", module.display()))?;
    let component = wit_component::ComponentEncoder::default()
        .validate(true)
        .module(&bytes)
        .and_then(|encoder| encoder.encode())
        .map_err(|e| format!("cannot encode {} as a component: {e:#}", module.display()))?;
    for path in [
        out_dir.join("toolseal_guard.wasm"),
        module_dir.join("toolseal_guard.wasm"),
    ] {
        std::fs::write(&path, &component)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("cargo did not set {name}"))
}

/// The target directory of this build: the nearest ancestor of `OUT_DIR` holding the
/// `CACHEDIR.TAG` cargo writes at a target directory's root, or, when there is none (cargo
/// writes the tag only into a directory it creates), the one `OUT_DIR`'s layout names:
/// `<target>[/<triple>]/<profile>/build/<package>/out`.
fn target_dir(out_dir: &Path) -> Option<PathBuf> {
    if let Some(tagged) = out_dir
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
    {
        return Some(tagged.to_path_buf());
    }
    let build = out_dir
        .ancestors()
        .find(|dir| dir.file_name().is_some_and(|name| name == "build"))?;
    let mut target = build.parent()?.parent()?;
    let triple = std::env::var("TARGET").ok();
    if triple.is_some_and(|triple| target.file_name().is_some_and(|name| *name == *triple)) {
        target = target.parent()?;
    }
    Some(target.to_path_buf())
}

fn build_core_module(workspace: &Path, target_dir: &Path) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace)
        .args([
            "build",
            "--quiet",
            "-p",
            "toolseal-component",
            "--target",
            TARGET,
            "--profile",
            PROFILE,
        ])
        .arg("--target-dir")
        .arg(target_dir);
    // The outer build's compiler settings are for the host, not for the wasm module
    // (clippy's wrapper, host rustflags).
    for name in [
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
    ] {
        command.env_remove(name);
    }
    let status = command
        .status()
        .map_err(|e| format!("cannot run cargo for the component: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building toolseal-component for {TARGET} failed ({status}); check that the target is \
             installed (scripts/setup-rust.sh runs `rustup target add {TARGET}`)"
        ));
    }
    Ok(())
}
