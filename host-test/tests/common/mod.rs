//! Shared by the host-test tests: the plugin `.wasm` (built if needed), the replay options
//! every VM of a test starts with, the admin token and config, the fingerprint of a tool set,
//! the transcripts, and running the `toolseal` command.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    dead_code
)]

pub mod workers;

use serde_json::{Value, json};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use toolseal::abi::types::LogLevel;
use toolseal::replay::ReplayOptions;
use toolseal_core::policy::fingerprint::{FingerprintFields, digest_tools, sha256_hex};

/// The admin token of the tests' configs.
pub const TOKEN: &str = "s3cret";

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A transcript shipped in `examples/transcripts/`.
pub fn transcript(name: &str) -> PathBuf {
    workspace()
        .join("examples/transcripts")
        .join(format!("{name}.json"))
}

/// The four recorded sessions.
pub const TRANSCRIPTS: [&str; 4] = [
    "everything-2025.11.25",
    "everything-2026.1.26",
    "fastmcp-4.2.3-json",
    "fastmcp-4.2.3-paginated",
];

/// The plugin `.wasm` Envoy loads: `$TOOLSEAL_WASM`, else built once per test run in the
/// workspace's default target directory (so these tests and the Envoy tests load the same
/// file; a no-op when it is up to date).
pub fn plugin_wasm() -> PathBuf {
    static WASM: OnceLock<PathBuf> = OnceLock::new();
    WASM.get_or_init(|| {
        if let Some(path) = std::env::var_os("TOOLSEAL_WASM").filter(|p| !p.is_empty()) {
            return PathBuf::from(path);
        }
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let output = std::process::Command::new(cargo)
            .args([
                "build",
                "-p",
                "toolseal-plugin",
                "--target",
                "wasm32-wasip1",
                "--profile",
                "wasm",
            ])
            .current_dir(workspace())
            .env_remove("CARGO_TARGET_DIR")
            .output()
            .expect("running cargo to build the plugin");
        assert!(
            output.status.success(),
            "building the plugin failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        workspace().join("target/wasm32-wasip1/wasm/toolseal_plugin.wasm")
    })
    .clone()
}

/// The module cache the tests share, in the workspace's target.
pub fn module_cache() -> PathBuf {
    workspace().join("target/toolseal-cache")
}

/// Replay options for a plugin VM: the plugin `.wasm`, `config` (none when empty), `server`
/// as every exchange's server id (`None`: each transcript's name), bodies handed over in
/// `chunk`-byte callbacks (0: whole), decision records on, the tests' module cache.
pub fn replay_options(server: Option<&str>, config: &[u8], chunk: usize) -> ReplayOptions {
    let mut options = ReplayOptions::new(plugin_wasm());
    options.plugin_configuration = config.to_vec();
    options.server = server.map(str::to_owned);
    options.chunk = chunk;
    options.log_level = LogLevel::Debug;
    options.cache_dir = Some(module_cache());
    options
}

/// The admin API on [`TOKEN`], and `extra`'s top-level keys over it.
pub fn admin_config(extra: &Value) -> Value {
    let mut config = json!({"admin": {"token_sha256": sha256_hex(TOKEN.as_bytes())}});
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    config
}

/// The fingerprint of `tools` under the default fields.
pub fn fp(tools: &[Value]) -> String {
    digest_tools(&Value::Array(tools.to_vec()), &FingerprintFields::default())
        .unwrap()
        .fingerprint()
}

/// Runs the `toolseal` binary under test with `args` (its cache in the workspace's target).
pub fn toolseal<S: AsRef<OsStr>>(args: &[S]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_toolseal"))
        .args(args)
        .env_remove("BLESS")
        .env("TOOLSEAL_CACHE_DIR", module_cache())
        .output()
        .unwrap()
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A path as a command-line argument.
pub fn path_str(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

/// `name` in this test process's scratch directory (created if needed).
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolseal-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}
