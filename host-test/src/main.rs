//! `toolseal`: replay recorded MCP traffic through the built proxy-wasm plugin on wasmtime;
//! fingerprint, diff and pin tool sets natively. See `toolseal help`.

fn main() {
    // Arguments as the OS gives them: a path that is not UTF-8 is still a path.
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    std::process::exit(toolseal::cli::run(&args));
}
