//! OpenSM as this bench runs it: its log followed sweep by sweep, signals, the daemon started on ibsim.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use weft_tests::ibsim::{Background, Ibsim};

/// What OpenSM's log says, read as it grows (at 11 664 nodes a sweep's DEBUG lines of
/// `osm_ucast_mgr.c` are gigabytes: never held in memory).
pub(crate) struct LogTail {
    pub(crate) path: PathBuf,
    /// Bytes read so far.
    pub(crate) pos: u64,
    /// The end of a line not yet complete.
    pub(crate) partial: Vec<u8>,
    /// What the lines since the last [`LogTail::take`] said.
    pub(crate) seen: Sweep,
}

/// One sweep's lines of OpenSM's log, as far as this bench needs them.
#[derive(Default)]
pub(crate) struct Sweep {
    /// `SUBNET UP` lines seen (one per sweep: a fault's two traps may make two).
    pub(crate) ups: usize,
    /// Lines since the last `SUBNET UP`.
    pub(crate) after_up: usize,
    /// Traps 128 (link state change) OpenSM logged receiving.
    pub(crate) traps: usize,
    /// When this bench read the first `SUBNET UP` (within 0.1 s of OpenSM writing it).
    pub(crate) first_up: Option<Instant>,
    /// `(switch GUID, block)` of every `Writing FT block B to switch 0xG` line, in order.
    pub(crate) writes: Vec<(u64, u16)>,
    /// The engine of the last `<engine> tables configured on all switches`.
    pub(crate) engine: Option<String>,
    /// The first few `ERR` lines (why an engine fell back).
    pub(crate) errors: Vec<String>,
}

impl LogTail {
    pub(crate) fn new(path: &Path) -> LogTail {
        LogTail {
            path: path.to_owned(),
            pos: 0,
            partial: Vec::new(),
            seen: Sweep::default(),
        }
    }

    /// Reads what was appended since the last call.
    pub(crate) fn poll(&mut self) {
        use std::io::{BufRead, BufReader, Seek, SeekFrom};
        let Ok(mut file) = std::fs::File::open(&self.path) else {
            return;
        };
        if file.seek(SeekFrom::Start(self.pos)).is_err() {
            return;
        }
        let mut r = BufReader::with_capacity(1 << 20, file);
        loop {
            let n = match r.read_until(b'\n', &mut self.partial) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            self.pos += n as u64;
            if self.partial.last() != Some(&b'\n') {
                break;
            }
            let line = String::from_utf8_lossy(&self.partial).into_owned();
            self.partial.clear();
            self.line(&line);
        }
    }

    pub(crate) fn line(&mut self, l: &str) {
        let s = &mut self.seen;
        s.after_up += 1;
        if let Some(rest) = l.split("Writing FT block ").nth(1) {
            if let Some((block, guid)) = rest.split_once(" to switch 0x") {
                if let (Ok(g), Ok(b)) = (u64::from_str_radix(guid.trim(), 16), block.trim().parse())
                {
                    s.writes.push((g, b));
                }
            }
        } else if l.contains("SUBNET UP") {
            s.ups += 1;
            s.after_up = 0;
            s.first_up.get_or_insert_with(Instant::now);
        } else if l.contains("Received Generic Notice") && l.contains("num:128") {
            s.traps += 1;
        } else if let Some(e) = l.split("osm_ucast_mgr_process: ").nth(1).and_then(|r| {
            r.trim_end()
                .strip_suffix(" tables configured on all switches")
        }) {
            s.engine = Some(e.to_owned());
        } else if l.contains(" ERR ") && s.errors.len() < 5 {
            s.errors
                .push(l.split_once(" -> ").map_or(l, |(_, m)| m).trim().to_owned());
        }
    }

    /// Waits until OpenSM has swept since the last [`LogTail::take`] and settled: a
    /// `SUBNET UP` its last line for 10 s (a second sweep, e.g. for a fault's second trap,
    /// is waited for too), or for 60 s whatever came after it (panics when OpenSM exits);
    /// false when `limit` passes first.
    pub(crate) fn wait_up(&mut self, osm: &mut Background, limit: Duration) -> bool {
        let start = Instant::now();
        let mut quiet = Instant::now();
        loop {
            let pos = self.pos;
            self.poll();
            if self.pos != pos {
                quiet = Instant::now();
            }
            let s = &self.seen;
            if s.ups > 0 {
                let q = quiet.elapsed();
                if (s.after_up == 0 && q >= Duration::from_secs(10)) || q >= Duration::from_secs(60)
                {
                    return true;
                }
            }
            assert!(
                osm.running(),
                "OpenSM exited:\n{}",
                std::fs::read_to_string(&osm.out).unwrap_or_default()
            );
            if start.elapsed() > limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits (up to `limit`) until OpenSM logs a trap 128.
    pub(crate) fn wait_trap(&mut self, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            self.poll();
            if self.seen.traps > 0 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// What the lines since the last call said; starts a new sweep. The log is emptied
    /// (OpenSM appends to it: `accum_log_file`), which is safe once it has said `SUBNET UP`
    /// and waits for the next trap: a sweep's DEBUG lines are gigabytes at 11 664 nodes.
    pub(crate) fn take(&mut self) -> Sweep {
        self.poll();
        if std::fs::OpenOptions::new()
            .write(true)
            .open(&self.path)
            .and_then(|f| f.set_len(0))
            .is_ok()
        {
            self.pos = 0;
            self.partial.clear();
        }
        std::mem::take(&mut self.seen)
    }
}

/// Sends `signal` to the process `pid` (one this binary started).
pub(crate) fn signal(pid: u32, signal: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -{signal} {pid}");
}

/// The OpenSM daemon on `sim`: `engine` and more arguments, its cache `cache`, logging to
/// `log` INFO and errors, and the DEBUG lines of `osm_ucast_mgr.c` (its per-module logging:
/// `Writing FT block …`), flushed per line; no periodic sweep.
pub(crate) fn start_opensm(
    sim: &Ibsim,
    engine: &str,
    more: &[&str],
    log: &Path,
    cache: &Path,
) -> Background {
    let conf = log.with_extension("conf");
    let per_module = log.with_extension("modules");
    std::fs::write(&per_module, "osm_ucast_mgr.c 0x0b\n").unwrap();
    std::fs::write(
        &conf,
        format!(
            "log_flags 0x83\nforce_log_flush TRUE\naccum_log_file TRUE\nper_module_logging_file {}\n",
            per_module.display()
        ),
    )
    .unwrap();
    let mut args = vec![
        "-F",
        conf.to_str().unwrap(),
        "-R",
        engine,
        "-s",
        "0",
        "-f",
        log.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    sim.spawn_env(
        "opensm",
        &args,
        &[("OSM_CACHE_DIR", cache.to_str().unwrap())],
    )
    .unwrap_or_else(|e| panic!("{e}"))
}
