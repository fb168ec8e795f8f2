//! The simulator's speed on the largest example: the 11 664-host three-level tree
//! (`examples/cluster-11664.weft`), uniform traffic at full load, for a given simulated time.
//!
//! ```text
//! cargo run --release -p weft-bench --bin sim_speed -- [--duration T] [--seed N] [--traffic SPEC] [--parts N]
//!   --duration T   simulated time (default 20us; a fifth of it is warm-up)
//!   --seed N       traffic seed (default 0)
//!   --traffic S    traffic pattern (default uniform)
//!   --parts N      the fabric in N parts (`simulate_in_parts`; 1: the whole fabric in one);
//!                  default: as `simulate` chooses (2 here). `RAYON_NUM_THREADS` sets the threads
//! ```
//!
//! Prints the simulation's wall time (compiling the example is timed apart), the process's
//! user CPU time and peak resident memory (Linux: `/proc/self/stat`, `/proc/self/status`),
//! packets injected per wall second, events per wall second, and the figures the run
//! produced (events, packets, mean throughput per node), so the numbers can be quoted.

#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark binary: it prints its figures and stops at the first failure"
)]

use std::time::Instant;
use weft_traffic::{parse_duration, simulate, simulate_in_parts, Params, Traffic};

fn usage() -> ! {
    eprintln!("usage: sim_speed [--duration T] [--seed N] [--traffic SPEC] [--parts N]");
    std::process::exit(2)
}

/// This process's user CPU time in seconds (field 14 of `/proc/self/stat`, in clock ticks
/// of 1/100 s), if readable.
fn user_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; the fields after its `)` are plain.
    let rest = stat.rsplit_once(')')?.1;
    let utime: f64 = rest.split_whitespace().nth(11)?.parse().ok()?;
    Some(utime / 100.0)
}

/// This process's peak resident memory in MiB (`VmHWM` of `/proc/self/status`), if readable.
fn max_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

fn main() {
    let mut p = Params {
        duration_ns: 20_000,
        ..Params::default()
    };
    let mut seed = 0u64;
    let mut spec = "uniform".to_owned();
    let mut parts: Option<usize> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--duration" => p.duration_ns = parse_duration(&v).unwrap_or_else(|_| usage()),
            "--seed" => seed = v.parse().unwrap_or_else(|_| usage()),
            "--traffic" => spec = v,
            "--parts" => parts = Some(v.parse().unwrap_or_else(|_| usage())),
            _ => usage(),
        }
    }
    let traffic = Traffic::parse(&spec).unwrap_or_else(|_| usage());
    let t0 = Instant::now();
    let st = weft_bench::compiled_as(
        "cluster-11664.weft",
        &weft_bench::example("cluster-11664.weft"),
    );
    let compile_s = t0.elapsed().as_secs_f64();
    let cpu0 = user_cpu_s();
    let run = match parts {
        Some(n) => simulate_in_parts(&st, &traffic, &p, seed, n),
        None => simulate(&st, &traffic, &p, seed),
    };
    let r = match run {
        Ok(r) => r,
        Err(e) => {
            eprintln!("simulate: {e}");
            std::process::exit(1)
        }
    };
    let cpu = user_cpu_s().zip(cpu0).map(|(a, b)| a - b);
    let wall = r.wall.as_secs_f64().max(1e-9);
    let show =
        |x: Option<f64>, unit: &str| x.map_or_else(|| "n/a".into(), |x| format!("{x:.2} {unit}"));
    println!(
        "cluster-11664, {} hosts, {spec}, {} us simulated, seed {seed}, {}",
        r.hosts,
        p.duration_ns as f64 / 1000.0,
        parts.map_or_else(
            || "parts as simulate chooses".to_owned(),
            |n| format!("{n} part(s)")
        )
    );
    println!("  compile      {compile_s:.2} s (not in the figures below)");
    println!("  wall         {wall:.2} s");
    println!("  user cpu     {}", show(cpu, "s"));
    println!(
        "  max rss      {} (the whole process, compiled state included)",
        show(max_rss_mib(), "MiB")
    );
    println!(
        "  packets      {} injected, {} delivered: {:.0} packets/s",
        r.packets.injected,
        r.packets.delivered,
        r.packets.injected as f64 / wall
    );
    println!(
        "  events       {}: {:.0} events/s",
        r.events,
        r.events as f64 / wall
    );
    println!(
        "  throughput   {:.3} Gb/s per node (mean)",
        r.throughput_per_node_gbps.mean
    );
}
