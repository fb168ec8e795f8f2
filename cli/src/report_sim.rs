//! `weft report --simulate[=T]`: the packet simulator's throughput for the standard patterns
//! beside the static metrics (JSON key `simulated`), and `weft report A B C …`: several
//! fabrics side by side. On a state with dFtree lanes every pattern runs dFtree's run-time
//! loop, and each says whether the loop saw a hot-spot; the last pattern is the single
//! hot-spot where end nodes sink slower than their links deliver, which is what the loop
//! can see.

use crate::Fatal;
use std::fmt::Write as _;
use std::path::PathBuf;
use weft_fabric::FabricState;
use weft_metrics::Quality;
use weft_traffic::{self as traffic, Params, Traffic};

/// Simulated time when `--simulate` is given without one: short enough that the 648-host
/// tree's four patterns take about a second, long enough for hundreds of 2 KiB packets per
/// EDR host.
pub(crate) const DEFAULT_DURATION: &str = "50us";

/// The last pattern's offered load and receive rate: end nodes that sink 90 % of their link,
/// so that the switch port facing the hot-spot waits for credits and dFtree's loop can see
/// it, and hosts offering 70 % of theirs, so that random traffic alone makes few receivers
/// hot-spots (the dFtree bench's setting).
pub(crate) const HOT_LOAD: f64 = 0.7;
/// See [`HOT_LOAD`].
pub(crate) const HOT_RECEIVE_RATE: f64 = 0.9;

/// What `--simulate` asked for.
#[derive(Clone, Copy)]
pub(crate) struct SimOptions {
    duration_ns: u64,
    seed: u64,
}

/// Parses `--simulate[=T]` (`None`: not asked) before anything is compiled.
pub(crate) fn options(duration: Option<&str>, seed: u64) -> Result<Option<SimOptions>, Fatal> {
    duration
        .map(|d| {
            traffic::parse_duration(d)
                .map(|duration_ns| SimOptions { duration_ns, seed })
                .map_err(crate::simulate::fail)
        })
        .transpose()
}

/// The simulated throughput of the standard patterns on one state (JSON key `simulated`).
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct Simulated {
    /// Simulated time per pattern, and the warm-up not measured, in nanoseconds.
    duration_ns: u64,
    warmup_ns: u64,
    /// The seed of every pattern.
    seed: u64,
    /// The simulator's host model (`weft simulate --host-model`).
    host_model: &'static str,
    /// Hosts sending.
    hosts: usize,
    /// One entry per pattern, in the order run.
    patterns: Vec<PatternRun>,
}

/// One pattern's simulated result.
#[derive(Clone, Debug, serde::Serialize)]
struct PatternRun {
    /// The pattern's canonical spec (`weft simulate --traffic`).
    traffic: String,
    /// Payload delivered per end node in the window, Gb/s: mean, min, max.
    throughput_per_node_gbps: traffic::Throughput,
    /// Generation to arrival, nanoseconds, 99th percentile.
    latency_p99_ns: f64,
    /// Sum of every output port's stall time in the window, nanoseconds.
    stall_total_ns: f64,
    /// Offered load per host, a fraction of its link rate.
    load: f64,
    /// An end node's receive rate, a fraction of its link rate.
    receive_rate: f64,
    /// On a state with dFtree lanes, what dFtree's run-time loop did (`null` otherwise).
    dftree: Option<DftreeRun>,
}

/// What dFtree's run-time loop did during one pattern.
#[derive(Clone, Copy, Debug, serde::Serialize)]
struct DftreeRun {
    /// Hot-spots it marked (re-marks included); 0: it saw no hot-spot.
    hotspots: usize,
    /// Flows it moved, to the slow lane and back.
    moves: usize,
}

impl PatternRun {
    /// The pattern's name in the tables: its spec, and its load and receive rate where they
    /// are not 1.
    fn label(&self) -> String {
        if self.load == 1.0 && self.receive_rate == 1.0 {
            self.traffic.clone()
        } else {
            format!(
                "{} (load {}, receive {})",
                self.traffic, self.load, self.receive_rate
            )
        }
    }
}

/// Runs `f` with rayon held to one thread: the patterns run side by side, one thread each
/// (a large fabric's parts in turn), not each on every core at once.
fn one_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    match rayon::ThreadPoolBuilder::new().num_threads(1).build() {
        Ok(pool) => pool.install(f),
        Err(_) => f(),
    }
}

/// Runs the standard patterns on `state`: `uniform`, `shift:H/2` (every host to the one
/// half the host list away), `all-to-all`, `hotspot:1` (the vFtree papers' single
/// hot-spot), and `hotspot:1` again at [`HOT_LOAD`] and [`HOT_RECEIVE_RATE`] (a hot-spot
/// dFtree's loop can see).
pub(crate) fn simulate(state: &FabricState, o: SimOptions) -> Result<Simulated, Fatal> {
    let params = Params {
        duration_ns: o.duration_ns,
        ..Params::default()
    };
    let fail = crate::simulate::fail;
    crate::term::phase("simulating");
    // Uniform first: it tells how many hosts send, which the shift needs.
    let uniform = traffic::simulate(state, &Traffic::Uniform, &params, o.seed).map_err(fail)?;
    let hosts = uniform.hosts;
    let hot = Traffic::Hotspot {
        count: 1,
        share_ppm: 50_000,
        window: None,
    };
    let slow_sinks = Params {
        load: HOT_LOAD,
        receive_rate: HOT_RECEIVE_RATE,
        ..params.clone()
    };
    let rest = [
        (Traffic::Shift((hosts / 2).max(1)), &params),
        (Traffic::AllToAll, &params),
        (hot.clone(), &params),
        (hot, &slow_sinks),
    ];
    let others: Vec<Result<traffic::Report, traffic::SimError>> = std::thread::scope(|s| {
        let handles: Vec<_> = rest
            .iter()
            .map(|(t, p)| s.spawn(|| one_thread(|| traffic::simulate(state, t, p, o.seed))))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(traffic::SimError::Param("a simulation stopped".into()))
                })
            })
            .collect()
    });
    let mut patterns = vec![run_of(&uniform)];
    for r in others {
        patterns.push(run_of(&r.map_err(fail)?));
    }
    Ok(Simulated {
        duration_ns: o.duration_ns,
        warmup_ns: uniform.params.duration_ns - uniform.window_ns,
        seed: o.seed,
        host_model: params.host.name(),
        hosts,
        patterns,
    })
}

fn run_of(r: &traffic::Report) -> PatternRun {
    PatternRun {
        traffic: r.traffic.clone(),
        throughput_per_node_gbps: r.throughput_per_node_gbps,
        latency_p99_ns: r.latency_ns.p99,
        stall_total_ns: r.stall_total_ns,
        load: r.params.load,
        receive_rate: r.params.receive_rate,
        dftree: r.dftree.as_ref().map(|d| DftreeRun {
            hotspots: d.hotspots.len(),
            moves: d.moves.len(),
        }),
    }
}

/// The simulated lines of the human report, after the static metrics.
pub(crate) fn human(s: &Simulated) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "  simulated         {} ns per pattern ({} ns warm-up), seed {}, {} hosts at full load, host model {}",
        s.duration_ns, s.warmup_ns, s.seed, s.hosts, s.host_model
    );
    for p in &s.patterns {
        let th = &p.throughput_per_node_gbps;
        let _ = writeln!(
            t,
            "    {:<16}{:>8.3} Gb/s per node (min {:.3}, max {:.3}), p99 latency {:.0} ns{}",
            p.traffic,
            th.mean,
            th.min,
            th.max,
            p.latency_p99_ns,
            if p.load == 1.0 && p.receive_rate == 1.0 {
                String::new()
            } else {
                format!(
                    ", at load {} with end nodes sinking {} of their link",
                    p.load, p.receive_rate
                )
            }
        );
    }
    if let Some(words) = dftree_summary(s) {
        let _ = writeln!(t, "                    · {words}");
    }
    let _ = writeln!(
        t,
        "                    · a packet simulation (`weft simulate`): payload each end node drained, with every host sending 2 KiB packets at its link rate, credits, VLs and arbitration as the tables set them"
    );
    t
}

/// One fabric of a comparison.
pub(crate) struct Column {
    /// The file, as given.
    pub(crate) file: PathBuf,
    pub(crate) quality: Quality,
    pub(crate) simulated: Option<Simulated>,
}

/// The side-by-side table of several fabrics (human output).
pub(crate) fn side_by_side(cols: &[Column]) -> String {
    let mut t = String::new();
    let names: Vec<String> = cols
        .iter()
        .map(|c| {
            c.file.file_stem().map_or_else(
                || c.file.display().to_string(),
                |s| s.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let w = names.iter().map(String::len).max().unwrap_or(0).max(10);
    let runs = cols
        .iter()
        .filter_map(|c| c.simulated.as_ref())
        .map(|s| s.patterns.len())
        .max()
        .unwrap_or(0);
    // Each fabric's own pattern of that rank (the shift is by half its own hosts).
    let labels: Vec<String> = (0..runs)
        .map(|i| {
            cols.iter()
                .filter_map(|c| c.simulated.as_ref()?.patterns.get(i))
                .map(PatternRun::label)
                .next()
                .unwrap_or_default()
                + " Gb/s/node"
        })
        .collect();
    let lw = labels.iter().map(String::len).max().unwrap_or(0).max(24);
    let _ = write!(t, "\nside by side\n  {:<lw$}", "");
    for n in &names {
        let _ = write!(t, " {n:>w$}");
    }
    t.push('\n');
    let mut row = |label: &str, cells: Vec<String>| {
        let _ = write!(t, "  {label:<lw$}");
        for c in cells {
            let _ = write!(t, " {c:>w$}");
        }
        t.push('\n');
    };
    row(
        "hosts",
        cols.iter().map(|c| c.quality.hosts.to_string()).collect(),
    );
    row(
        "end ports",
        cols.iter()
            .map(|c| c.quality.end_ports.to_string())
            .collect(),
    );
    row(
        "eBB",
        cols.iter()
            .map(|c| crate::report::ebb(c.quality.bisections.ebb))
            .collect(),
    );
    row(
        "shift max load",
        cols.iter()
            .map(|c| c.quality.shift.max_load.to_string())
            .collect(),
    );
    row(
        "all-to-all max load",
        cols.iter()
            .map(|c| c.quality.all_to_all.max_load.to_string())
            .collect(),
    );
    row(
        "hops mean",
        cols.iter()
            .map(|c| format!("{:.3}", c.quality.hops.mean))
            .collect(),
    );
    for (i, label) in labels.iter().enumerate() {
        row(
            label,
            cols.iter()
                .map(|c| {
                    c.simulated
                        .as_ref()
                        .and_then(|s| s.patterns.get(i))
                        .map_or("-".into(), |p| {
                            format!("{:.3}", p.throughput_per_node_gbps.mean)
                        })
                })
                .collect(),
        );
    }
    // What dFtree's loop did in each fabric with dFtree lanes.
    for (c, name) in cols.iter().zip(&names) {
        if let Some(words) = c.simulated.as_ref().and_then(dftree_summary) {
            let _ = writeln!(t, "  {name}: {words}");
        }
    }
    t
}

/// What dFtree's loop did over the patterns of a state with dFtree lanes, in one sentence:
/// where it saw no hot-spot, and what it did where it saw one.
fn dftree_summary(s: &Simulated) -> Option<String> {
    let runs: Vec<(&PatternRun, DftreeRun)> = s
        .patterns
        .iter()
        .filter_map(|p| Some((p, p.dftree?)))
        .collect();
    if runs.is_empty() {
        return None;
    }
    let quiet: Vec<String> = runs
        .iter()
        .filter(|(_, d)| d.hotspots == 0)
        .map(|(p, _)| p.label())
        .collect();
    let mut parts = Vec::new();
    if !quiet.is_empty() {
        parts.push(format!(
            "dFtree's loop saw no hot-spot on {}",
            quiet.join(", ")
        ));
    }
    for (p, d) in runs.iter().filter(|(_, d)| d.hotspots > 0) {
        parts.push(format!(
            "on {} it marked {} hot-spot(s) and moved {} flow(s)",
            p.label(),
            d.hotspots,
            d.moves
        ));
    }
    Some(parts.join("; "))
}
