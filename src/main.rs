use std::process::ExitCode;

/// mimalloc: faster than the system allocator for the many small
/// allocations of request handling and imports, and free of its contention
/// when one thread frees what another allocated.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    proxydeck::cli::main()
}
