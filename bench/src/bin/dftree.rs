//! The dFtree paper's 648-port experiment in `weft simulate`: the two-level tree of
//! `examples/cluster-648.weft` on 1 VL and on dFtree's fast and slow lane (2 VLs), with 1, 3
//! and 9 hot-spots (`hotspot:N`: each node sends 5 % of its packets to its hot-spot, the rest
//! uniformly at random). dFtree runs twice: with its own run-time loop (sweeps, hot-spots and
//! contributors found from the port counters, moves after the re-path delay) and in the
//! paper's best case (every hot-spot-bound packet on the slow lane from the start, what the
//! paper simulated). Printed: throughput per end node and of the victims' flows, the gain
//! over 1 VL beside the paper's, and each run's wall-clock time and simulated packets per
//! second.
//!
//! ```text
//! cargo run --release -p weft-bench --bin dftree -- [DURATION] [SEED] [RECEIVE_RATE] [LOAD] [RELEASE]
//! ```
//!
//! DURATION defaults to `1ms`, SEED to 0, RECEIVE_RATE (an end node's receive rate, a
//! fraction of its link's) to 0.9 and LOAD (offered load per host) to 0.7: the loop sees an
//! end-node hot-spot only when an end node sinks slower than its link delivers (the paper's
//! hosts reached 12.9 of their links' 16 Gb/s), and hosts offered below what they sink keep
//! random traffic from making every receiver a hot-spot. The other parameters are the
//! simulator's defaults (10 µs sweeps, 1 µs re-path delay, threshold 10^7 ticks/s), and
//! RELEASE (sweeps below the threshold before a hot-spot's flows move back) its default, 2.

#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark binary: it prints its figures and stops at the first failure"
)]

use weft_traffic::{gain_percent, parse_duration, simulate, DftreeMode, Params, Report, Traffic};

/// The paper's gains of dFtree over 1 VL with 1, 3 and 9 hot-spots (Paper IV, Fig. 13).
const PAPER: [(usize, &str); 3] = [(1, "+480.25 %"), (3, "+345.32 %"), (9, "+169.17 %")];

fn run(state: &weft_fabric::FabricState, t: &Traffic, p: &Params, seed: u64) -> Report {
    match simulate(state, t, p, seed) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let duration = args.next().unwrap_or_else(|| "1ms".into());
    let seed = args.next().map_or(Some(0), |s| s.parse::<u64>().ok());
    let rate = args.next().map_or(Some(0.9), |s| s.parse::<f64>().ok());
    let load = args.next().map_or(Some(0.7), |s| s.parse::<f64>().ok());
    let release = args
        .next()
        .map_or(Some(Params::default().dftree_release_sweeps), |s| {
            s.parse::<u32>().ok()
        });
    let (Ok(duration_ns), Some(seed), Some(receive_rate), Some(load), Some(release)) =
        (parse_duration(&duration), seed, rate, load, release)
    else {
        eprintln!("usage: dftree [DURATION] [SEED] [RECEIVE_RATE] [LOAD] [RELEASE]");
        std::process::exit(2)
    };
    let params = Params {
        duration_ns,
        receive_rate,
        load,
        dftree_release_sweeps: release,
        ..Params::default()
    };
    let base_text = weft_bench::example("cluster-648.weft");
    let compile = |sections: &str, name: &str| {
        let text = base_text.replace("    vls { budget = 4 }\n", sections);
        weft_bench::compiled_as(name, &text)
    };
    let one = compile("    vls { budget = 1 }\n", "cluster-648-1vl.weft");
    let lanes = compile(
        "    vls { budget = 2 }\n    qos { class bulk { lanes = dftree } }\n",
        "cluster-648-dftree.weft",
    );
    println!(
        "648-port two-level fat-tree, {duration} simulated ({} µs warm-up), seed {seed}, load \
         {load}, receive rate {receive_rate}, dFtree sweeps every {} ns, moves {} ns after, \
         released after {release} sweeps below the threshold",
        duration_ns / 5 / 1000,
        params.dftree_sweep_ns,
        params.dftree_repath_ns
    );
    println!(
        "{:>3}  {:<16}  {:>10}  {:>8}  {:>10}  {:>10}  {:>5}  {:>6}  {:>9}  {:>7}  {:>10}",
        "hot",
        "run",
        "Gb/s/node",
        "victims",
        "gain",
        "paper",
        "spots",
        "moved",
        "packets",
        "wall s",
        "packets/s"
    );
    for (hotspots, paper) in PAPER {
        let t = match Traffic::parse(&format!("hotspot:{hotspots}")) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2)
            }
        };
        let mut base = None;
        for (name, state, mode) in [
            ("1 VL", &one, DftreeMode::Off),
            ("dFtree, its loop", &lanes, DftreeMode::Loop),
            ("dFtree, best case", &lanes, DftreeMode::Oracle),
        ] {
            let p = Params {
                dftree: mode,
                ..params.clone()
            };
            let r = run(state, &t, &p, seed);
            let mean = r.throughput_per_node_gbps.mean;
            let b = *base.get_or_insert(mean);
            let (gain, paper) = if mode == DftreeMode::Off {
                ("-".to_owned(), "-")
            } else {
                (format!("{:+.2} %", gain_percent(mean, b)), paper)
            };
            let victims = r.classes.as_ref().map_or(0.0, |c| c.victims.gbps.mean);
            let (spots, moved) = r.dftree.as_ref().map_or(("-".into(), "-".into()), |d| {
                if d.mode == DftreeMode::Loop {
                    (d.hotspots.len().to_string(), d.moves.len().to_string())
                } else {
                    ("-".into(), "-".into())
                }
            });
            let wall = r.wall.as_secs_f64();
            println!(
                "{hotspots:>3}  {name:<16}  {mean:>10.3}  {victims:>8.3}  {gain:>10}  {paper:>10}  {spots:>5}  {moved:>6}  {:>9}  {wall:>7.2}  {:>10.0}",
                r.packets.injected,
                r.packets.injected as f64 / wall.max(1e-9)
            );
        }
    }
}
