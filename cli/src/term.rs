//! The terminal around a run.
//!
//! - **Progress**: work that runs longer than [`DELAY`] shows one line on stderr — the phase and
//!   the time so far — redrawn in place and erased before anything else is printed. Only when
//!   stderr is a terminal, never with `--quiet`; pipes and CI logs get nothing.
//! - **Interruption**: Ctrl-C (and SIGTERM, SIGHUP) removes whatever the run was writing and
//!   has not yet put in place, says so, and exits [`INTERRUPTED_EXIT`]. A commit (the rename
//!   that puts a finished output in place) runs to its end first, so the output is either
//!   the old one or the new one, never a mix.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long work runs before the progress line appears.
pub const DELAY: Duration = Duration::from_secs(1);
/// How often the line is redrawn.
const TICK: Duration = Duration::from_millis(100);
/// The exit status of an interrupted run (128 + SIGINT, as shells report it).
pub const INTERRUPTED_EXIT: i32 = 130;

struct Shared {
    /// Whether the progress line may be drawn.
    progress: bool,
    /// What the run is doing ("" between phases: nothing drawn).
    phase: &'static str,
    /// How far it is within the phase ("step 3 of 10"; empty: nothing to add).
    detail: String,
    /// When the run started.
    since: Instant,
    /// Whether the line is on the screen now.
    shown: bool,
    /// Outputs being written and not yet in place (removed on interruption).
    unfinished: Vec<PathBuf>,
    /// Set by the first interruption instead of stopping the run (a `weft apply` between
    /// two steps), while [`stop_on_interrupt`]'s guard lives.
    stop: Option<(std::sync::Arc<std::sync::atomic::AtomicBool>, &'static str)>,
}

static SHARED: Mutex<Option<Shared>> = Mutex::new(None);

fn lock() -> MutexGuard<'static, Option<Shared>> {
    SHARED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Starts the run: installs the interruption handler and, on a terminal without `quiet`, the
/// progress line.
pub fn start(quiet: bool) {
    let progress = !quiet && std::io::stderr().is_terminal();
    *lock() = Some(Shared {
        progress,
        phase: "",
        detail: String::new(),
        since: Instant::now(),
        shown: false,
        unfinished: Vec::new(),
        stop: None,
    });
    // Without a handler (another one is installed) the default action still stops the run;
    // only the cleanup is lost, which the temporary names make harmless.
    let _ = ctrlc::set_handler(interrupted);
    if progress {
        let _ = std::thread::Builder::new()
            .name("progress".into())
            .spawn(ticker);
    }
}

/// Says what the run is doing now.
pub fn phase(what: &'static str) {
    if let Some(s) = lock().as_mut() {
        s.phase = what;
        s.detail.clear();
    }
}

/// Says what the run is doing now and how far it is (`step 3 of 10`).
pub fn progress(what: &'static str, detail: String) {
    if let Some(s) = lock().as_mut() {
        s.phase = what;
        s.detail = detail;
    }
}

/// Erases the progress line (if shown) and stops drawing until the next [`phase`]: call before
/// printing.
pub fn clear() {
    if let Some(s) = lock().as_mut() {
        s.phase = "";
        erase(s);
    }
}

fn erase(s: &mut Shared) {
    if s.shown {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
        s.shown = false;
    }
}

fn ticker() {
    loop {
        std::thread::sleep(TICK);
        let mut g = lock();
        let Some(s) = g.as_mut().filter(|s| s.progress) else {
            return;
        };
        let elapsed = s.since.elapsed();
        if s.phase.is_empty() || elapsed < DELAY {
            continue;
        }
        let mut err = std::io::stderr().lock();
        let detail = if s.detail.is_empty() {
            String::new()
        } else {
            format!(" {}", s.detail)
        };
        let _ = write!(
            err,
            "\r\x1b[2Kweft: {}{detail}… {:.1} s",
            s.phase,
            elapsed.as_secs_f64()
        );
        let _ = err.flush();
        s.shown = true;
    }
}

/// Marks `path` as an output being written: removed if the run is interrupted before
/// [`commit`] puts it in place. Unmarked when the returned guard drops.
pub fn unfinished(path: &Path) -> Unfinished {
    if let Some(s) = lock().as_mut() {
        s.unfinished.push(path.to_path_buf());
    }
    Unfinished(path.to_path_buf())
}

/// See [`unfinished`].
pub struct Unfinished(PathBuf);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(s) = lock().as_mut() {
            s.unfinished.retain(|p| *p != self.0);
        }
    }
}

/// Runs `f` (the renames that put finished outputs in place) with interruption held off, so
/// an interruption sees the state before or after it, never in between.
pub fn commit<T>(f: impl FnOnce() -> T) -> T {
    let mut g = lock();
    let result = f();
    if let Some(s) = g.as_mut() {
        s.unfinished.clear();
    }
    result
}

/// While the returned guard lives, the first interruption sets `flag` (the run stops at its
/// next safe point: an apply rolls back) instead of ending the run; a second one ends it as
/// usual.
pub fn stop_on_interrupt(flag: std::sync::Arc<std::sync::atomic::AtomicBool>) -> StopGuard {
    stop_on_interrupt_saying(
        flag,
        "weft: interrupted: stopping before the next step and rolling back (interrupt \
         again to stop at once; the journal is kept for `weft apply --recover`)",
    )
}

/// [`stop_on_interrupt`], saying `message` on standard error when the first interruption
/// comes.
pub fn stop_on_interrupt_saying(
    flag: std::sync::Arc<std::sync::atomic::AtomicBool>,
    message: &'static str,
) -> StopGuard {
    if let Some(s) = lock().as_mut() {
        s.stop = Some((flag, message));
    }
    StopGuard
}

/// See [`stop_on_interrupt`].
pub struct StopGuard;

impl Drop for StopGuard {
    fn drop(&mut self) {
        if let Some(s) = lock().as_mut() {
            s.stop = None;
        }
    }
}

fn interrupted() {
    let mut g = lock();
    let mut err = std::io::stderr().lock();
    if let Some((flag, message)) = g.as_mut().and_then(|s| s.stop.take()) {
        if let Some(s) = g.as_mut() {
            erase(s);
        }
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = writeln!(err, "{message}");
        let _ = err.flush();
        return;
    }
    let mut removed = Vec::new();
    if let Some(s) = g.as_mut() {
        erase(s);
        for p in s.unfinished.drain(..) {
            // Another thread may still be creating files in an unfinished directory: removing
            // it can then fail on an entry that appeared meanwhile, so it is tried again.
            let gone = (0..100).any(|attempt| {
                if attempt > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                match std::fs::symlink_metadata(&p) {
                    Ok(m) if m.is_dir() => std::fs::remove_dir_all(&p).is_ok(),
                    Ok(_) => std::fs::remove_file(&p).is_ok(),
                    Err(_) => true,
                }
            });
            if gone {
                removed.push(p);
            } else {
                let _ = writeln!(err, "weft: could not remove `{}`", p.display());
            }
        }
    }
    let _ = if removed.is_empty() {
        writeln!(err, "weft: interrupted")
    } else {
        writeln!(
            err,
            "weft: interrupted; the unfinished output was removed and nothing was replaced"
        )
    };
    let _ = err.flush();
    std::process::exit(INTERRUPTED_EXIT);
}
