use std::process::ExitCode;

/// mimalloc: faster than the system allocator for the many small
/// allocations of request handling and imports, and free of its contention
/// when one thread frees what another allocated.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (mimalloc.h's `mi_option_e`, the
/// same in mimalloc 2 and 3; the Rust binding names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long memory freed stays with the process before it goes back to the
/// OS, in milliseconds. mimalloc 3 keeps it a second: under load, every
/// page answered in that second (up to 175 KB each) still counts in the
/// resident set, which then stood 30-60% above what is in use
/// (bench/RESULTS.md). `MIMALLOC_PURGE_DELAY` in the environment wins.
const PURGE_DELAY_MS: std::ffi::c_long = 10;

fn main() -> ExitCode {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one of mimalloc's options, which it reads with
        // atomics; called before any other thread exists.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
    proxydeck::cli::main()
}
