//! Progress bars for long imports and exports: drawn on stderr when it is
//! a terminal, with rate and ETA; silent otherwise or with `--quiet`.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

fn visible(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// A bar over `total` bytes of input; a spinner when the size is unknown.
pub fn bytes(total: Option<u64>, quiet: bool) -> ProgressBar {
    if !visible(quiet) {
        return ProgressBar::hidden();
    }
    match total {
        Some(total) => ProgressBar::new(total).with_style(style(
            "{elapsed_precise} [{wide_bar}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
        )),
        None => ProgressBar::new_spinner()
            .with_style(style("{elapsed_precise} {spinner} {bytes} {bytes_per_sec}")),
    }
}

/// A bar over `total` lines of output.
pub fn lines(total: u64, quiet: bool) -> ProgressBar {
    if !visible(quiet) {
        return ProgressBar::hidden();
    }
    ProgressBar::new(total).with_style(style(
        "{elapsed_precise} [{wide_bar}] {human_pos}/{human_len} lines {per_sec} ETA {eta}",
    ))
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .expect("the progress templates are valid")
        .progress_chars("=> ")
}
