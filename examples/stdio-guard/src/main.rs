//! The `toolseal-stdio` command (see [`toolseal_stdio::cli`] for its usage).

fn main() {
    std::process::exit(toolseal_stdio::cli::main());
}
