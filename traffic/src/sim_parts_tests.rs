//! The simulation in parts ([`crate::simulate_in_parts`]): the same report on any number of
//! threads, every packet accounted for, and the whole fabric's figures.

use crate::{simulate, simulate_in_parts, HostModel, Params, Report, Traffic};
use proptest::prelude::*;
use weft_compiler::build::build;
use weft_compiler::{check, NoFiles};
use weft_fabric::FabricState;

const PRELUDE: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\n";

fn tree(levels: u32, radix: u32, vls: u8) -> FabricState {
    let qos = if vls > 1 {
        format!("    vls {{ budget = {vls} }}\n    qos {{ class compute {{ lanes = vftree(maxvl: {vls}) }} }}\n")
    } else {
        String::new()
    };
    let c = check(
        "t.weft",
        &format!(
            "{PRELUDE}fabric small {{\n    topology = fat_tree(levels: {levels}, radix: {radix}, switch: sb7800, hca: connectx5)\n{qos}}}\n"
        ),
        &NoFiles,
    );
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    build(&c.elaborated.unwrap()).unwrap().state.into_inner()
}

fn params(duration_ns: u64, host: HostModel) -> Params {
    Params {
        duration_ns,
        host,
        ..Params::default()
    }
}

/// Every packet is somewhere, and no link carries more than it can.
fn accounted(r: &Report) {
    let k = &r.packets;
    assert_eq!(
        k.generated + k.copies,
        k.delivered + k.dropped + k.in_flight + k.queued_at_source,
        "{k:?}"
    );
    assert!(k.injected <= k.generated, "{k:?}");
    assert!(r.hottest_links.iter().all(|l| l.utilisation <= 1.0));
}

/// The report of `parts` parts run on a pool of `threads` threads, as JSON.
fn json_on(threads: usize, st: &FabricState, t: &Traffic, p: &Params, parts: usize) -> String {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let r = pool.install(|| simulate_in_parts(st, t, p, 3, parts).unwrap());
    accounted(&r);
    serde_json::to_string(&r).unwrap()
}

#[test]
fn the_report_does_not_depend_on_the_threads() {
    let st = tree(3, 8, 2);
    for (traffic, parts) in [("uniform", 2), ("hotspot:3", 3), ("shift:5", 4)] {
        let t = Traffic::parse(traffic).unwrap();
        let p = params(20_000, HostModel::Refuse);
        let one = json_on(1, &st, &t, &p, parts);
        assert_eq!(one, json_on(2, &st, &t, &p, parts), "{traffic} in {parts}");
        assert_eq!(one, json_on(3, &st, &t, &p, parts), "{traffic} in {parts}");
    }
}

/// Ties of one picosecond between parts go another way than in the whole fabric, so one
/// seed's figures differ a little; over seeds the means agree.
#[test]
fn parts_give_the_whole_fabrics_figures() {
    let st = tree(3, 8, 1);
    for traffic in ["uniform", "hotspot:1"] {
        let t = Traffic::parse(traffic).unwrap();
        let p = params(30_000, HostModel::Refuse);
        let (mut whole, mut parts, mut delivered) = (0.0, 0.0, (0u64, 0u64));
        for seed in 0..4 {
            let a = simulate(&st, &t, &p, seed).unwrap();
            let b = simulate_in_parts(&st, &t, &p, seed, 2).unwrap();
            accounted(&b);
            whole += a.throughput_per_node_gbps.mean;
            parts += b.throughput_per_node_gbps.mean;
            delivered.0 += a.packets.delivered;
            delivered.1 += b.packets.delivered;
        }
        let off = (whole - parts).abs() / whole;
        assert!(off < 0.02, "{traffic}: {whole} against {parts}");
        let off = delivered.0.abs_diff(delivered.1) as f64 / delivered.0 as f64;
        assert!(off < 0.02, "{traffic}: {delivered:?}");
    }
}

/// What cannot be cut runs whole: the same report as [`simulate`].
#[test]
fn what_cannot_be_cut_runs_whole() {
    let st = tree(2, 8, 1);
    let t = Traffic::parse("uniform").unwrap();
    let voq = Params {
        switch_buffers: crate::SwitchBuffers::Voq,
        ..params(10_000, HostModel::Refuse)
    };
    let no_latency = Params {
        link_latency_ns: 0,
        ..params(10_000, HostModel::Refuse)
    };
    for p in [voq, no_latency] {
        let a = serde_json::to_string(&simulate(&st, &t, &p, 1).unwrap()).unwrap();
        let b = serde_json::to_string(&simulate_in_parts(&st, &t, &p, 1, 3).unwrap()).unwrap();
        assert_eq!(a, b);
    }
}

/// Time that runs out: end nodes sinking at 1e-13 of their link push their drains and
/// credits to the end of time; draining, the run still ends, the same on one thread and two,
/// and the whole fabric's run ends too.
#[test]
fn a_drain_at_the_end_of_time_ends() {
    let st = tree(2, 4, 1);
    let t = Traffic::parse("hotspot:1:100%").unwrap();
    let p = Params {
        drain: true,
        receive_rate: 1e-13,
        ..params(10_000, HostModel::Refuse)
    };
    let one = json_on(1, &st, &t, &p, 2);
    assert_eq!(one, json_on(2, &st, &t, &p, 2));
    let whole = simulate(&st, &t, &p, 3).unwrap();
    accounted(&whole);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random trees, patterns, host models, loads, windows and part counts: every packet
    /// accounted for, no link above its rate, and the same report on one thread and two.
    #[test]
    fn random_runs_in_parts_account_for_every_packet(
        radix in prop::sample::select(vec![4u32, 6, 8]),
        vls in 1u8..=4,
        traffic in prop::sample::select(vec!["uniform", "hotspot:2", "shift:3", "permutation", "all-to-all"]),
        host in prop::sample::select(vec![HostModel::Refuse, HostModel::Block, HostModel::Fifo, HostModel::Unbounded]),
        load in prop::sample::select(vec![0.3, 0.8, 1.0]),
        parts in 2usize..=5,
        drain in any::<bool>(),
        receive in prop::sample::select(vec![0.5, 1.0]),
        seed in 0u64..1000,
    ) {
        let st = tree(2, radix, vls);
        let t = Traffic::parse(traffic).unwrap();
        let p = Params {
            load,
            drain,
            receive_rate: receive,
            ..params(8_000, host)
        };
        let pool = |n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap();
        let a = pool(1).install(|| simulate_in_parts(&st, &t, &p, seed, parts).unwrap());
        let b = pool(2).install(|| simulate_in_parts(&st, &t, &p, seed, parts).unwrap());
        accounted(&a);
        prop_assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
        if drain {
            prop_assert_eq!(a.packets.in_flight, 0);
        }
    }
}
