//! The vFtree paper's 648-port experiment in `weft simulate`: the two-level tree of
//! `examples/cluster-648.weft` on 1 VL and on vFtree's 2, 4 and 8 lanes, `hotspot:N` traffic
//! (each node sends 5 % of its packets to its hot-spot, the rest uniformly at random), and
//! the throughput per end node of each beside the gain over 1 VL the paper reports:
//!
//! ```text
//! cargo run --release -p weft-bench --bin simulate -- [DURATION] [SEED] [HOTSPOTS] [BUFFER_BYTES] [SOURCE_QUEUE]
//! ```
//!
//! DURATION defaults to `200us`, SEED to 0, HOTSPOTS to 1, the input buffer per (port, VL)
//! and the source queue per (host, VL) to the simulator's defaults (8448 bytes, 4 packets). Every run's wall-clock time and
//! simulated packets per second are printed too. The figures are what this simulator, with
//! its documented defaults (4x EDR links, 8448-byte buffers per VL, 100 ns switches, 5 ns
//! links), measures; the papers' simulator was tuned to 2010 DDR/QDR hardware.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use weft_traffic::{gain_percent, parse_duration, simulate, Params, Traffic};

/// The VL counts run, and the paper's gains over 1 VL (Fig. 10a): with one hot-spot for 2, 4
/// and 8 VLs, with nine for 8 VLs; none published for three.
const PAPER: [(u8, &str, &str); 4] = [
    (1, "-", "-"),
    (2, "+459 %", "-"),
    (4, "+676 %", "-"),
    (8, "+757 %", "+221 %"),
];

fn main() {
    let mut args = std::env::args().skip(1);
    let duration = args.next().unwrap_or_else(|| "200us".into());
    let seed = args.next().map_or(Some(0), |s| s.parse::<u64>().ok());
    let hotspots = args.next().map_or(Some(1), |s| s.parse::<usize>().ok());
    let defaults = Params::default();
    let buffer = args
        .next()
        .map_or(Some(defaults.buffer_bytes), |s| s.parse::<u32>().ok());
    let queue = args
        .next()
        .map_or(Some(defaults.source_queue), |s| s.parse::<u32>().ok());
    let (Ok(duration_ns), Some(seed), Some(hotspots), Some(buffer_bytes), Some(source_queue)) =
        (parse_duration(&duration), seed, hotspots, buffer, queue)
    else {
        eprintln!("usage: simulate [DURATION] [SEED] [HOTSPOTS] [BUFFER_BYTES] [SOURCE_QUEUE]");
        std::process::exit(2)
    };
    let traffic = match Traffic::parse(&format!("hotspot:{hotspots}")) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2)
        }
    };
    let params = Params {
        duration_ns,
        buffer_bytes,
        source_queue,
        ..defaults
    };
    let base_text = weft_bench::example("cluster-648.weft");
    println!(
        "648-port two-level fat-tree, {}, {duration} simulated ({} µs warm-up), seed {seed}, \
         {buffer_bytes} B input buffers per VL, source queues of {source_queue} packets per VL",
        traffic.spec(),
        duration_ns / 5 / 1000
    );
    println!(
        "{:>4}  {:>12}  {:>12}  {:>12}  {:>9}  {:>10}  {:>8}  {:>12}",
        "VLs", "Gb/s/node", "victims", "gain", "paper", "packets", "wall s", "packets/s"
    );
    let mut base = None;
    let mut one_vl = None;
    for (vls, one, nine) in PAPER {
        let paper = match hotspots {
            1 => one,
            9 => nine,
            _ => "-",
        };
        let sections = if vls == 1 {
            "    vls { budget = 1 }\n".to_owned()
        } else {
            format!(
                "    vls {{ budget = {vls} }}\n    qos {{ class compute {{ lanes = vftree(maxvl: {vls}) }} }}\n"
            )
        };
        let text = base_text.replace("    vls { budget = 4 }\n", &sections);
        let state = weft_bench::compiled_as(&format!("cluster-648-{vls}vl.weft"), &text);
        if vls == 1 {
            one_vl = Some(state.clone());
        }
        let r = match simulate(&state, &traffic, &params, seed) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1)
            }
        };
        let mean = r.throughput_per_node_gbps.mean;
        let b = *base.get_or_insert(mean);
        let gain = if vls == 1 {
            "-".to_owned()
        } else {
            format!("{:+.0} %", gain_percent(mean, b))
        };
        let victims = r.classes.as_ref().map_or(0.0, |c| c.victims.gbps.mean);
        let wall = r.wall.as_secs_f64();
        println!(
            "{:>4}  {:>12.3}  {:>12.3}  {:>12}  {:>9}  {:>10}  {:>8.2}  {:>12.0}",
            r.vls,
            mean,
            victims,
            gain,
            paper,
            r.packets.injected,
            wall,
            r.packets.injected as f64 / wall.max(1e-9)
        );
    }
    // The ceiling without a hot-spot: uniform traffic on 1 VL.
    if let Some(state) = one_vl {
        match simulate(&state, &Traffic::Uniform, &params, seed) {
            Ok(r) => println!(
                "uniform traffic on 1 VL (no hot-spot): {:.3} Gb/s per node, {} packets in {:.2} s ({:.0} packets/s)",
                r.throughput_per_node_gbps.mean,
                r.packets.injected,
                r.wall.as_secs_f64(),
                r.packets.injected as f64 / r.wall.as_secs_f64().max(1e-9)
            ),
            Err(e) => eprintln!("{e}"),
        }
    }
}
