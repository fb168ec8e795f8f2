//! The engine's invariants on small fabrics compiled by weft.

use crate::sim::run_checked;
use crate::{simulate, HostModel, Params, Report, Traffic};
use proptest::prelude::*;
use weft_compiler::build::build;
use weft_compiler::{check, NoFiles};
use weft_fabric::FabricState;

const PRELUDE: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\n";

fn compile(text: &str) -> FabricState {
    let c = check("t.weft", text, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    let e = c.elaborated.unwrap();
    build(&e).unwrap().state.into_inner()
}

/// One switch, three hosts.
fn star() -> FabricState {
    compile(&format!(
        "{PRELUDE}fabric star {{\n    topology {{\n        switch sw : sb7800\n        hca cn[1..=3] : connectx5\n        for n in 1..=3 {{ link cn[n].p[1] <-> sw.p[n] }}\n    }}\n}}\n"
    ))
}

/// A two-level tree of 4-port switches (8 hosts), on `vftree` lanes when above 1.
fn tree(levels: u32, radix: u32, vftree: u8) -> FabricState {
    let qos = if vftree > 1 {
        format!("    vls {{ budget = {vftree} }}\n    qos {{ class compute {{ lanes = vftree(maxvl: {vftree}) }} }}\n")
    } else {
        String::new()
    };
    compile(&format!(
        "{PRELUDE}fabric small {{\n    topology = fat_tree(levels: {levels}, radix: {radix}, switch: sb7800, hca: connectx5)\n{qos}}}\n"
    ))
}

fn params(duration_ns: u64) -> Params {
    Params {
        duration_ns,
        ..Params::default()
    }
}

/// Every packet is somewhere: delivered, dropped, in flight or queued at its source.
fn conserved(r: &Report) {
    let k = &r.packets;
    assert_eq!(
        k.generated,
        k.delivered + k.dropped + k.in_flight + k.queued_at_source,
        "{k:?}"
    );
    assert!(k.injected <= k.generated);
}

#[test]
fn two_senders_into_one_port_share_it_and_stall_on_credits() {
    // Hosts 2 and 3 send everything to host 1: the switch's port to host 1 is asked for
    // twice its rate, its input buffers fill, and credits stop the senders.
    let st = star();
    let t = Traffic::parse("hotspot:1:100%").unwrap();
    let (r, max_fill, cap) = run_checked(&st, &t, &params(50_000), 1);
    conserved(&r);
    assert!(max_fill <= cap, "a buffer held {max_fill} blocks of {cap}");
    assert_eq!(max_fill, cap, "the buffers toward the hot-spot fill up");
    let c = r.classes.as_ref().unwrap();
    assert_eq!(c.contributors.nodes, 2);
    // 4x EDR carries 100 Gb/s, 2048 of every 2074 bytes payload: 98.7 Gb/s, half each.
    let half = 100.0 * 2048.0 / 2074.0 / 2.0;
    assert!(
        (c.contributors.gbps.min - half).abs() < 1.5
            && (c.contributors.gbps.max - half).abs() < 1.5,
        "{c:?}"
    );
    // The senders' ports waited for credits about half the time.
    let waits: Vec<&crate::LinkLoad> = r
        .stalled_ports
        .iter()
        .filter(|l| l.to.starts_with("sw:"))
        .collect();
    assert_eq!(waits.len(), 2, "{:?}", r.stalled_ports);
    for w in waits {
        let frac = w.xmit_wait_ns / r.window_ns as f64;
        assert!((0.3..0.7).contains(&frac), "{w:?}");
    }
}

#[test]
fn a_full_receiver_buffer_stops_the_sender() {
    // Room for one packet per VL and a slow switch: a host may send its next packet only
    // once the previous one has left the switch, whatever its own link could do.
    let st = star();
    let t = Traffic::parse("shift:1").unwrap();
    let slow = |buffer_bytes| Params {
        buffer_bytes,
        switch_latency_ns: 10_000,
        ..params(200_000)
    };
    let (one, fill, cap) = run_checked(&st, &t, &slow(2112), 0);
    conserved(&one);
    assert_eq!((fill, cap), (33, 33));
    // One 2048-byte payload per ≈ 10.2 µs: 1.6 Gb/s.
    let g = one.throughput_per_node_gbps;
    assert!(g.max < 1.7 && g.min > 1.5, "{g:?}");
    // Four packets of room: four times as much.
    let (four, _, _) = run_checked(&st, &t, &slow(4 * 2112), 0);
    let ratio = four.throughput_per_node_gbps.mean / g.mean;
    assert!((3.8..4.2).contains(&ratio), "{ratio}");
}

#[test]
fn nothing_is_lost_or_duplicated_mid_run() {
    let st = tree(2, 4, 1);
    for spec in [
        "uniform",
        "hotspot:2",
        "shift:3",
        "all-to-all",
        "permutation",
    ] {
        let t = Traffic::parse(spec).unwrap();
        let (r, fill, cap) = run_checked(&st, &t, &params(20_000), 3);
        conserved(&r);
        assert!(fill <= cap);
        assert_eq!(r.packets.dropped, 0, "{spec}");
        assert!(
            r.packets.in_flight > 0,
            "{spec}: something is on the way at the end"
        );
    }
}

#[test]
fn light_uniform_traffic_gets_through() {
    // The 648-host tree, every host offering 30 % of its link uniformly at random: the tree
    // carries all of it (the hosts' streams must be independent for that: correlated
    // destinations pile onto one host at a time).
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/cluster-648.weft"
    ))
    .unwrap();
    let st = compile(&text);
    let p = Params {
        load: 0.3,
        ..params(30_000)
    };
    // Seed 0, the default: with host k seeded `seed ^ k·γ`, host k's stream was host 0's
    // shifted by k draws.
    let r = simulate(&st, &Traffic::Uniform, &p, 0).unwrap();
    let offered = 0.3 * 100.0 * 2048.0 / 2074.0;
    let got = r.throughput_per_node_gbps.mean;
    assert!((got - offered).abs() < 0.05 * offered, "{got} of {offered}");
    assert!(r.hottest_links.iter().all(|l| l.utilisation <= 1.0));
}

#[test]
fn same_seed_same_json_other_seed_other_json() {
    let st = tree(2, 4, 2);
    let t = Traffic::parse("uniform").unwrap();
    let p = params(20_000);
    let json = |seed| serde_json::to_string(&simulate(&st, &t, &p, seed).unwrap()).unwrap();
    let a = json(7);
    assert_eq!(a, json(7));
    assert_ne!(a, json(8));
}

#[test]
fn a_flow_on_its_own_vl_passes_a_congested_one() {
    // 1 VL against vFtree on 2 VLs, same hot-spot traffic: the victims do better on 2.
    let t = Traffic::parse("hotspot:1:20%").unwrap();
    let p = params(100_000);
    let one = simulate(&tree(2, 4, 1), &t, &p, 1).unwrap();
    let two = simulate(&tree(2, 4, 2), &t, &p, 1).unwrap();
    assert_eq!((one.vls, two.vls), (1, 2));
    let v = |r: &Report| r.classes.as_ref().unwrap().victims.gbps.mean;
    assert!(v(&two) > v(&one), "1 VL {}, 2 VLs {}", v(&one), v(&two));
}

#[test]
fn in_order_hosts_are_held_to_their_hot_spot_share() {
    // 8 hosts on 2 VLs, 7 of them sending half their packets to host 0. A host that sends in
    // order (`block`, `fifo`) gets at most the hot-spot link's share per contributor over
    // its hot share, 98.7 / 7 / 0.5 ≈ 28.2 Gb/s, whatever the VLs; host 0 at most its link:
    // a mean of (7 × 28.2 + 98.7) / 8 ≈ 37.0. One that refuses what its congested VL cannot
    // take sends its other packets past them.
    let st = tree(2, 4, 2);
    let t = Traffic::parse("hotspot:1:50%").unwrap();
    let link = 100.0 * 2048.0 / 2074.0;
    let bound = (7.0 * link / 7.0 / 0.5 + link) / 8.0;
    let run = |host| {
        let p = Params {
            host,
            ..params(400_000)
        };
        let (r, fill, cap) = run_checked(&st, &t, &p, 2);
        conserved(&r);
        assert!(fill <= cap);
        r
    };
    let refuse = run(HostModel::Refuse);
    assert!(refuse.packets.refused_at_source > 0);
    for host in [HostModel::Block, HostModel::Fifo] {
        let r = run(host);
        assert_eq!(r.packets.refused_at_source, 0, "{host:?}");
        let got = r.throughput_per_node_gbps.mean;
        assert!(got < bound * 1.05, "{host:?}: {got} over {bound}");
        assert!(
            refuse.throughput_per_node_gbps.mean > 1.1 * got,
            "{host:?}: refuse {} against {got}",
            refuse.throughput_per_node_gbps.mean
        );
    }
    // Same seed, same bytes, whatever the model.
    let again = serde_json::to_string(&run(HostModel::Fifo)).unwrap();
    assert_eq!(again, serde_json::to_string(&run(HostModel::Fifo)).unwrap());
}

#[test]
fn bad_parameters_are_refused() {
    let st = star();
    let t = Traffic::Uniform;
    for p in [
        Params {
            load: 0.0,
            ..Params::default()
        },
        Params {
            load: 1.5,
            ..Params::default()
        },
        Params {
            buffer_bytes: 1000,
            ..Params::default()
        },
        Params {
            warmup_ns: Some(200_000),
            ..Params::default()
        },
    ] {
        assert!(matches!(
            simulate(&st, &t, &p, 0),
            Err(crate::SimError::Param(_))
        ));
    }
    let hot = Traffic::parse("hotspot:4").unwrap();
    assert!(matches!(
        simulate(&st, &hot, &Params::default(), 0),
        Err(crate::SimError::TooManyHotspots { count: 4, hosts: 3 })
    ));
}

#[test]
fn snapshot_of_a_tiny_fabric() {
    let st = tree(2, 4, 2);
    let t = Traffic::parse("hotspot:1").unwrap();
    let p = Params {
        top: 4,
        ..params(20_000)
    };
    let r = simulate(&st, &t, &p, 0).unwrap();
    insta::assert_snapshot!("tiny_human", r.human());
    insta::assert_snapshot!("tiny_json", serde_json::to_string_pretty(&r).unwrap());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// On any small tree weft compiles (deadlock-free), once traffic stops every packet
    /// arrives: nothing dropped, stuck or left at a source.
    #[test]
    fn every_packet_arrives_when_the_fabric_drains(
        levels in 2u32..=3,
        radix in prop::sample::select(vec![4u32, 6]),
        lanes in prop::sample::select(vec![1u8, 2, 4]),
        spec in prop::sample::select(vec!["uniform", "hotspot:1", "hotspot:2:30", "shift:1", "all-to-all", "permutation"]),
        buffer_packets in 1u32..=3,
        host in prop::sample::select(vec![HostModel::Refuse, HostModel::Block, HostModel::Fifo]),
        queue in 1u32..=4,
        seed in 0u64..1000,
    ) {
        prop_assume!(!(levels == 3 && radix == 6));
        let st = tree(levels, radix, lanes);
        let t = Traffic::parse(spec).unwrap();
        let p = Params {
            buffer_bytes: buffer_packets * 2112,
            host,
            source_queue: queue,
            drain: true,
            ..params(5_000)
        };
        let (r, fill, cap) = run_checked(&st, &t, &p, seed);
        let k = r.packets;
        prop_assert!(fill <= cap);
        prop_assert!(k.generated > 0);
        prop_assert_eq!(k.dropped, 0);
        prop_assert_eq!(k.in_flight, 0);
        prop_assert_eq!(k.queued_at_source, 0);
        prop_assert_eq!(k.delivered, k.generated);
        prop_assert_eq!(k.injected, k.generated);
    }
}

fn jobs(text: &str) -> Traffic {
    Traffic::Jobs(crate::Jobs::parse("jobs.txt", text).unwrap())
}

/// Job a's hosts, one on each leaf but the hot-spot's, share their leaves' uplinks with
/// job b's contributors flooding b's hot-spot.
const JOB_A: &str = "job a hosts cn004,cn007,cn010,cn013,cn016 pattern uniform load 0.8\n";
const JOB_B: &str =
    "job b hosts cn001,cn008,cn009,cn011,cn012,cn014,cn015,cn017,cn018 pattern hotspot:1:100%\n";

#[test]
fn a_jobs_hotspot_slows_another_job_on_one_vl_less_on_vftree_lanes() {
    let run = |st: &FabricState, text: &str| {
        let r = simulate(st, &jobs(text), &params(100_000), 0).unwrap();
        conserved(&r);
        r
    };
    let (one, two) = (tree(2, 6, 1), tree(2, 6, 2));
    let alone = run(&one, JOB_A);
    assert_eq!(alone.jobs.len(), 1);
    let a_alone = alone.jobs[0].throughput_per_node_gbps.mean;
    // Hosts in no job are idle: the least any host sent is 0.
    assert_eq!(alone.throughput_per_node_gbps.min, 0.0);
    assert!((a_alone - 0.8 * 98.7).abs() < 3.0, "{a_alone}");
    let both1 = run(&one, &format!("{JOB_A}{JOB_B}"));
    let both2 = run(&two, &format!("{JOB_A}{JOB_B}"));
    let (a1, a2) = (
        both1.jobs[0].throughput_per_node_gbps.mean,
        both2.jobs[0].throughput_per_node_gbps.mean,
    );
    assert_eq!(both1.jobs[1].name, "b");
    assert_eq!(both1.jobs[1].hosts, 9);
    assert!(
        a1 < 0.5 * a_alone,
        "1 VL: job a {a1} against {a_alone} alone"
    );
    assert!(a2 > 1.3 * a1, "vFtree: job a {a2} against {a1} on 1 VL");
    assert!(both1.jobs[0].latency_ns.p99 > alone.jobs[0].latency_ns.p99);
}

#[test]
fn a_job_sends_only_among_its_hosts_and_only_in_its_span() {
    let st = tree(2, 4, 1);
    // Job a: two hosts on leaves 1 and 3 sending to each other only; job b, on leaf 2, from
    // 20 us until 40 us.
    let t = jobs("job a hosts cn001,cn005 pattern shift:1\njob b hosts cn[003-004] pattern uniform from 20us until 40us\n");
    let r = simulate(&st, &t, &params(60_000), 3).unwrap();
    conserved(&r);
    // Job a's pair gets line rate: nothing else reaches cn001 or cn005.
    let a = &r.jobs[0];
    assert!((a.throughput_per_node_gbps.min - 98.7).abs() < 1.5, "{a:?}");
    // Job b ran for 20 of the 48 us measured: well under half its line rate.
    let b = &r.jobs[1];
    assert!(
        b.throughput_per_node_gbps.mean > 30.0 && b.throughput_per_node_gbps.mean < 45.0,
        "{b:?}"
    );
    assert_eq!((b.from_ns, b.until_ns), (20_000, Some(40_000)));
    // Idle hosts (cn002, cn006–cn008) drag the mean over all hosts down.
    let all = r.throughput_per_node_gbps;
    assert_eq!(all.min, 0.0);
    // Same seed, same report.
    let again = simulate(&st, &t, &params(60_000), 3).unwrap();
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        serde_json::to_string(&again).unwrap()
    );
}

#[test]
fn unknown_hosts_and_small_jobs_are_named() {
    let st = tree(2, 4, 1);
    let e = |text: &str| {
        simulate(&st, &jobs(text), &params(10_000), 0)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        e("job a hosts cn001,cn0008 pattern uniform\n"),
        "jobs.txt:1:13: job `a`: no host `cn0008` in the fabric (did you mean `cn008`?)"
    );
    assert_eq!(
        e("\njob a hosts cn001 pattern uniform\n"),
        "jobs.txt:2:13: job `a` has 1 host(s); traffic needs at least two"
    );
    assert_eq!(
        e("job a hosts cn[001-003] pattern hotspot:4\n"),
        "jobs.txt:1:1: job `a`: 4 hot-spots asked for, but the fabric has 3 hosts"
    );
}

#[test]
fn a_hotspot_grows_one_congestion_tree_from_its_switch_port() {
    // 8 hosts on a two-level tree of 4-port switches: cn001 is the hot-spot.
    let st = tree(2, 4, 1);
    let r = simulate(
        &st,
        &Traffic::parse("hotspot:1:100%").unwrap(),
        &params(40_000),
        0,
    )
    .unwrap();
    assert_eq!(r.congestion_trees.len(), 1, "{:#?}", r.congestion_trees);
    let t = &r.congestion_trees[0];
    assert_eq!((t.root.as_str(), t.to.as_str()), ("leaf1:1", "cn001:1"));
    assert_eq!(t.end_node.as_deref(), Some("cn001"));
    assert!(t.utilisation > 0.99, "{t:?}");
    let ports: Vec<Vec<&str>> = t
        .levels
        .iter()
        .map(|l| l.iter().map(|p| p.port.as_str()).collect())
        .collect();
    // Level 1: cn002 (on the hot-spot's leaf) and the spine port down to the leaf; level 2:
    // the other leaves' uplinks toward that spine; level 3: their hosts.
    assert_eq!(ports[0], ["cn002:1", "spine1:1"]);
    assert_eq!(ports[1], ["leaf2:3", "leaf3:3", "leaf4:3"]);
    assert_eq!(
        ports[2],
        ["cn003:1", "cn004:1", "cn005:1", "cn006:1", "cn007:1", "cn008:1"]
    );
    assert!(t.levels[1].iter().all(|p| p.toward == "spine1:1"));
    assert_eq!(t.ports, 11);
    let sum: f64 = t.levels.iter().flatten().map(|p| p.stall_ns).sum::<f64>() + t.root_stall_ns;
    assert!((t.stall_ns - sum).abs() < 1e-6);
    // Light uniform traffic: no tree.
    let light = simulate(
        &st,
        &Traffic::Uniform,
        &Params {
            load: 0.3,
            ..params(40_000)
        },
        0,
    )
    .unwrap();
    assert!(
        light.congestion_trees.is_empty(),
        "{:#?}",
        light.congestion_trees
    );
}
