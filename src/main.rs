use std::process::ExitCode;

fn main() -> ExitCode {
    proxydeck::cli::main()
}
