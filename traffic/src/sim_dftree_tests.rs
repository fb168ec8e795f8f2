//! dFtree inside the simulation: the loop, its switch and its best case, on small trees.

use crate::{simulate, DftreeMode, Params, Report, Traffic};
use weft_compiler::build::build;
use weft_compiler::{check, NoFiles};
use weft_fabric::FabricState;

/// A two-level tree of `radix`-port switches, on dFtree lanes (2 VLs) or on 1 VL.
fn tree(radix: u32, dftree: bool) -> FabricState {
    let qos = if dftree {
        "    vls { budget = 2 }\n    qos { class bulk { lanes = dftree } }\n"
    } else {
        ""
    };
    let text = format!(
        "use std::hardware::{{sb7800, connectx5}}\nuse std::topology::fat_tree\nfabric small {{\n    topology = fat_tree(levels: 2, radix: {radix}, switch: sb7800, hca: connectx5)\n{qos}}}\n"
    );
    let c = check("t.weft", &text, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    build(&c.elaborated.unwrap()).unwrap().state.into_inner()
}

/// Hosts offered 0.4 of their links, sinking 0.9; two packets per buffer and source queue
/// (a small backlog toward the hot-spot, drained within a few sweeps).
fn params(duration_ns: u64, mode: DftreeMode) -> Params {
    Params {
        duration_ns,
        receive_rate: 0.9,
        load: 0.4,
        buffer_bytes: 4224,
        source_queue: 2,
        dftree: mode,
        ..Params::default()
    }
}

/// Node 1 the hot-spot of the other 17, 40 % of their packets, from 10 µs to 50 µs.
const SPOT: &str = "hotspot:1:40%@10us-50us";

fn run(st: &FabricState, spec: &str, p: &Params) -> Report {
    simulate(st, &Traffic::parse(spec).unwrap(), p, 1).unwrap()
}

#[test]
fn the_loop_moves_the_contributors_to_the_slow_lane_and_back() {
    let st = tree(6, true);
    let r = run(&st, SPOT, &params(150_000, DftreeMode::Loop));
    let d = r.dftree.as_ref().unwrap();
    assert_eq!(d.mode, DftreeMode::Loop);
    // A sweep at 0 and every 10 µs to 150 µs.
    assert_eq!(d.sweeps, 16);
    assert_eq!(d.hotspots.len(), 1, "{:?}", d.hotspots);
    let h = &d.hotspots[0];
    assert_eq!(h.port, "cn001:1");
    // Detected within two sweeps of the hot-spot's start (10 µs).
    assert!(h.marked_ns <= 30_000, "{h:?}");
    let to_slow: Vec<_> = d.moves.iter().filter(|m| m.lane == "slow").collect();
    let to_fast: Vec<_> = d.moves.iter().filter(|m| m.lane == "fast").collect();
    assert!(to_slow.len() >= 10, "{to_slow:?}");
    assert!(to_slow
        .iter()
        .all(|m| m.dst == "cn001:1" && m.sl == 1 && m.src != m.dst));
    let first = to_slow[0];
    assert_eq!(first.swept_ns, h.marked_ns);
    assert_eq!(first.applied_ns, h.marked_ns + 1_000);
    // The hot-spot traffic stops at 50 µs; the backlog toward node 1 drains within 30 µs
    // (its switch port waits 0 from 80 µs on), and the mark goes within two sweeps plus the
    // two release sweeps after that; every contributor's flow comes back.
    let cleared = h.cleared_ns.unwrap();
    assert!((60_000..=80_000 + 40_000).contains(&cleared), "{h:?}");
    assert_eq!(to_fast.len(), to_slow.len());
    assert!(to_fast.iter().all(|m| m.swept_ns == cleared && m.sl == 0));
    let mut back: Vec<&str> = to_fast.iter().map(|m| m.src.as_str()).collect();
    let mut went: Vec<&str> = to_slow.iter().map(|m| m.src.as_str()).collect();
    back.sort_unstable();
    went.sort_unstable();
    assert_eq!(back, went);
    assert!(d.slow_flows_at_end.is_empty());
    // The note on the lanes, not the one saying the loop is not simulated.
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("run-time loop moves flows")),
        "{:?}",
        r.notes
    );
}

#[test]
fn without_the_loop_nothing_moves_and_the_lanes_carry_what_1_vl_does() {
    let p = params(60_000, DftreeMode::Off);
    let off = run(&tree(6, true), SPOT, &p);
    let d = off.dftree.as_ref().unwrap();
    assert_eq!((d.mode, d.sweeps), (DftreeMode::Off, 0));
    assert!(d.hotspots.is_empty() && d.moves.is_empty() && d.slow_flows_at_end.is_empty());
    assert!(
        off.notes.iter().any(|n| n.contains("loop is off")),
        "{:?}",
        off.notes
    );
    // Every flow on its fast lane: the same packets as on one VL.
    let one = run(&tree(6, false), SPOT, &p);
    assert!(one.dftree.is_none());
    assert_eq!(off.packets, one.packets);
    assert_eq!(off.throughput_per_node_gbps, one.throughput_per_node_gbps);
}

#[test]
fn the_victims_gain_with_the_loop_and_most_in_the_best_case() {
    let st = tree(6, true);
    let spec = "hotspot:1:40%@10us-";
    let victims = |mode| {
        let r = run(&st, spec, &params(100_000, mode));
        r.classes.unwrap().victims.gbps.mean
    };
    let (off, lp, best) = (
        victims(DftreeMode::Off),
        victims(DftreeMode::Loop),
        victims(DftreeMode::Oracle),
    );
    assert!(lp > off * 1.2, "loop {lp} against off {off}");
    assert!(best >= lp, "best case {best} against loop {lp}");
}

#[test]
fn the_same_seed_gives_the_same_json() {
    let st = tree(4, true);
    let p = params(60_000, DftreeMode::Loop);
    let a = serde_json::to_string(&run(&st, SPOT, &p)).unwrap();
    let b = serde_json::to_string(&run(&st, SPOT, &p)).unwrap();
    assert_eq!(a, b);
    assert!(a.contains("\"dftree\":{\"mode\":\"loop\""), "{a}");
}

#[test]
fn a_bad_sweep_interval_is_refused() {
    let p = Params {
        dftree_sweep_ns: 0,
        ..params(10_000, DftreeMode::Loop)
    };
    let e = simulate(&tree(4, true), &Traffic::Uniform, &p, 0).unwrap_err();
    assert!(e.to_string().contains("sweep interval"), "{e}");
    let p = Params {
        receive_rate: 0.0,
        ..params(10_000, DftreeMode::Loop)
    };
    let e = simulate(&tree(4, true), &Traffic::Uniform, &p, 0).unwrap_err();
    assert!(e.to_string().contains("receive rate"), "{e}");
}
