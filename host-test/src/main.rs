//! `toolseal`: replay recorded MCP traffic through the built proxy-wasm plugin on wasmtime;
//! fingerprint, diff and pin tool sets natively. See `toolseal help`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(toolseal::cli::run(&args));
}
