//! Progress bars on standard error for long work (scrubbing a large file, a
//! gate over many summaries, `inline batch` over many files): drawn only
//! when standard error is a terminal, and never with `--quiet` or `--json`,
//! so pipes, logs and machine-readable output never see them.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Files at least this large get a bar when scrubbed.
pub const LARGE_FILE: u64 = 1024 * 1024;
/// Batches of at least this many inputs get a bar.
pub const MANY_INPUTS: usize = 5;

/// True when progress may be drawn: standard error is a terminal and the
/// user asked for neither `--quiet` nor machine-readable output.
pub fn wanted(quiet: bool, machine: bool) -> bool {
    !quiet && !machine && std::io::stderr().is_terminal()
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

fn start(bar: ProgressBar) -> ProgressBar {
    bar.set_draw_target(ProgressDrawTarget::stderr());
    bar.tick();
    bar
}

/// A bar over `len` bytes, or a hidden one when progress is not wanted.
pub fn bytes(show: bool, len: u64, message: String) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden())
        .with_style(style(
            "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        ))
        .with_message(message);
    start(bar)
}

/// A bar over `n` items, or a hidden one when progress is not wanted.
pub fn items(show: bool, n: usize, message: String) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(n as u64), ProgressDrawTarget::hidden())
        .with_style(style("{msg} [{bar:30}] {pos}/{len}"))
        .with_message(message);
    start(bar)
}

/// A spinner for work of unknown length, ticking on its own.
pub fn spinner(show: bool, message: String) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
        .with_style(style("{spinner} {msg} {elapsed}"))
        .with_message(message);
    let bar = start(bar);
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}
