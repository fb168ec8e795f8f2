//! `weft report --simulate[=T]`: the packet simulator's throughput for the standard patterns
//! beside the static metrics (JSON key `simulated`), and `weft report A B C …`: several
//! fabrics side by side.

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
                .map_err(|e| Fatal::Run(format!("--simulate: {e}")))
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
}

/// Runs the standard patterns on `state`: `uniform`, `shift:H/2` (every host to the one
/// half the host list away), `all-to-all`, `hotspot:1` (the vFtree papers' single
/// hot-spot).
pub(crate) fn simulate(state: &FabricState, o: SimOptions) -> Result<Simulated, Fatal> {
    let params = Params {
        duration_ns: o.duration_ns,
        ..Params::default()
    };
    let fail = |e: traffic::SimError| Fatal::Run(format!("--simulate: {e}"));
    crate::term::phase("simulating");
    // Uniform first: it tells how many hosts send, which the shift needs.
    let uniform = traffic::simulate(state, &Traffic::Uniform, &params, o.seed).map_err(fail)?;
    let hosts = uniform.hosts;
    let rest = [
        Traffic::Shift((hosts / 2).max(1)),
        Traffic::AllToAll,
        Traffic::Hotspot {
            count: 1,
            share_ppm: 50_000,
            window: None,
        },
    ];
    let others: Vec<Result<traffic::Report, traffic::SimError>> = std::thread::scope(|s| {
        let handles: Vec<_> = rest
            .iter()
            .map(|t| s.spawn(|| traffic::simulate(state, t, &params, o.seed)))
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
            "    {:<16}{:>8.3} Gb/s per node (min {:.3}, max {:.3}), p99 latency {:.0} ns",
            p.traffic, th.mean, th.min, th.max, p.latency_p99_ns
        );
    }
    let _ = writeln!(
        t,
        "                    · a packet simulation (`weft simulate`): payload delivered per host with every host sending 2 KiB packets at its link rate, credits, VLs and arbitration as the tables set them"
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
    let _ = write!(t, "\nside by side\n  {:<24}", "");
    for n in &names {
        let _ = write!(t, " {n:>w$}");
    }
    t.push('\n');
    let mut row = |label: &str, cells: Vec<String>| {
        let _ = write!(t, "  {label:<24}");
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
        "eBB",
        cols.iter()
            .map(|c| format!("{:.4}", c.quality.bisections.ebb))
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
    let runs = cols
        .iter()
        .filter_map(|c| c.simulated.as_ref())
        .map(|s| s.patterns.len())
        .max()
        .unwrap_or(0);
    for i in 0..runs {
        // Each fabric's own pattern of that rank (the shift is by half its own hosts).
        let label = cols
            .iter()
            .filter_map(|c| c.simulated.as_ref()?.patterns.get(i))
            .map(|p| p.traffic.clone())
            .next()
            .unwrap_or_default();
        row(
            &format!("{label} Gb/s/node"),
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
    t
}
