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

/// Every packet is somewhere: delivered, dropped, in flight or queued at its source (a
/// multicast copy a switch made counts as one more packet).
fn conserved(r: &Report) {
    let k = &r.packets;
    assert_eq!(
        k.generated + k.copies,
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
        host in prop::sample::select(vec![HostModel::Refuse, HostModel::Block, HostModel::Fifo, HostModel::Unbounded]),
        queue in 1u32..=4,
        voq in any::<bool>(),
        parallel_sends in prop::option::of(1u32..=2),
        seed in 0u64..1000,
    ) {
        prop_assume!(!(levels == 3 && radix == 6));
        let st = tree(levels, radix, lanes);
        let t = Traffic::parse(spec).unwrap();
        let p = Params {
            buffer_bytes: buffer_packets * 2112,
            host,
            switch_buffers: if voq { crate::SwitchBuffers::Voq } else { crate::SwitchBuffers::Fifo },
            parallel_sends,
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

/// A two-level tree: leaves `l1` (cn1, cn2) and `l2` (cn3, cn4) under spine `s`; group
/// 0xc001 has cn1 sending only and cn2, cn3, cn4 receiving.
fn mc_tree() -> FabricState {
    compile(&format!(
        "{PRELUDE}fabric mc {{\n    topology {{\n        switch s : sb7800\n        switch l[1..=2] : sb7800\n        hca cn[1..=4] : connectx5\n        for n in 1..=2 {{ link cn[n].p[1] <-> l[1].p[n] }}\n        for n in 3..=4 {{ link cn[n].p[1] <-> l[2].p[n] }}\n        link l[1].p[10] <-> s.p[1]\n        link l[2].p[10] <-> s.p[2]\n    }}\n    multicast {{\n        group g {{ mlid = 0xc001, members = [cn2, cn3, cn4], send_only = [cn1] }}\n    }}\n}}\n"
    ))
}

fn link<'r>(r: &'r Report, from: &str, to: &str) -> &'r crate::LinkLoad {
    r.hottest_links
        .iter()
        .find(|l| l.from == from && l.to == to)
        .unwrap_or_else(|| panic!("{from} -> {to}: {:?}", r.hottest_links))
}

#[test]
fn a_multicast_sender_reaches_every_receiver_and_never_its_ingress_port() {
    let mut st = mc_tree();
    let mlid = weft_fabric::Mlid::new(0xc001).unwrap();
    // As if cn1 had joined to receive too: l1's entry names its port, which a packet from
    // cn1 comes in on and must never go back out of.
    let l1 = st.multicast.mfts.get_mut(&weft_fabric::NodeId(1)).unwrap();
    let mut m = l1.get(mlid);
    assert!(!m.contains(weft_fabric::PortNum(1)));
    m.insert(weft_fabric::PortNum(1));
    l1.set(mlid, m);
    let t = Traffic::parse("multicast:0xc001").unwrap();
    let p = Params {
        top: 100,
        ..params(20_000)
    };
    let (r, fill, cap) = run_checked(&st, &t, &p, 2);
    conserved(&r);
    assert!(fill <= cap);
    let k = r.packets;
    assert_eq!(k.dropped, 0, "{k:?}");
    let m = r.multicast.as_ref().unwrap();
    assert_eq!((m.mlid.as_str(), m.senders, m.receivers), ("0xc001", 1, 3));
    assert_eq!((m.dropped_no_mft_entry, m.dropped_at_non_receiver), (0, 0));
    // Every receiver gets the sender's whole stream: 4x EDR's 98.7 Gb/s of payload.
    let full = 100.0 * 2048.0 / 2074.0;
    let g = m.delivered_gbps_per_receiver;
    assert!(g.min > full - 2.0 && g.max < full + 1.0, "{g:?}");
    // Three copies of every packet delivered: one made at l1, one at l2, none at the spine
    // (its other port is the ingress).
    assert!(
        m.delivered + 3 * (k.in_flight + k.queued_at_source) >= 3 * k.generated
            && m.delivered <= 3 * k.generated,
        "{m:?} {k:?}"
    );
    assert_eq!(k.delivered, m.delivered);
    assert!(k.copies * 3 >= 2 * m.delivered - 6, "{k:?} {m:?}");
    for (from, to) in [
        ("cn1:1", "l1:1"),
        ("l1:2", "cn2:1"),
        ("l1:10", "s:1"),
        ("s:2", "l2:10"),
        ("l2:3", "cn3:1"),
        ("l2:4", "cn4:1"),
    ] {
        let u = link(&r, from, to).utilisation;
        assert!(u > 0.95, "{from} -> {to}: {u}");
    }
    // Never back out the ingress port: not to the sender, not back down to l1.
    for (from, to) in [("l1:1", "cn1:1"), ("s:1", "l1:10"), ("cn2:1", "l1:2")] {
        assert_eq!(link(&r, from, to).utilisation, 0.0, "{from} -> {to}");
    }
    assert!(r
        .human()
        .contains("multicast   group 0xc001 (SL 0): 1 sender(s), 3 receiver(s)"));
}

#[test]
fn multicast_runs_are_deterministic_and_mix_unicast_at_a_share() {
    let st = mc_tree();
    let t = Traffic::parse("multicast:0xc001:50%").unwrap();
    let p = params(20_000);
    let a = simulate(&st, &t, &p, 9).unwrap();
    let b = simulate(&st, &t, &p, 9).unwrap();
    let json = |r: &Report| serde_json::to_string(r).unwrap();
    assert_eq!(json(&a), json(&b));
    conserved(&a);
    let (r, _, _) = run_checked(&st, &t, &p, 9);
    conserved(&r);
    let m = r.multicast.unwrap();
    // Half of cn1's stream to the group, the rest unicast to the others.
    let half = 100.0 * 2048.0 / 2074.0 / 2.0;
    assert!(
        (m.delivered_gbps_per_receiver.mean - half).abs() < 8.0,
        "{m:?}"
    );
    assert!(r.packets.delivered > m.delivered);
    assert!(json(&a).contains("\"multicast\":{\"mlid\":\"0xc001\""));
    // Unicast reports carry neither key.
    let u = simulate(&st, &Traffic::Uniform, &p, 9).unwrap();
    assert!(!json(&u).contains("multicast") && !json(&u).contains("copies"));
}

#[test]
fn a_missing_group_or_missing_mfts_is_refused_naming_the_mlid() {
    let st = mc_tree();
    let p = params(1_000);
    let e = simulate(&st, &Traffic::parse("multicast:0xc002").unwrap(), &p, 0)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "traffic `multicast:0xc002:100%`: the state has no multicast group with MLID 0xc002 (1 group(s): 0xc001)"
    );
    let mut bare = st.clone();
    bare.multicast.mfts.clear();
    let e = simulate(&bare, &Traffic::parse("multicast:0xc001").unwrap(), &p, 0)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "traffic `multicast:0xc001:100%`: the state has no multicast forwarding tables (MFTs): group 0xc001 cannot be forwarded"
    );
    let e = simulate(&star(), &Traffic::parse("multicast:0xc001").unwrap(), &p, 0)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no multicast group with MLID 0xc001 (0 group(s))"),
        "{e}"
    );
}

#[test]
fn a_switch_without_an_mft_entry_drops_and_counts() {
    let mut st = mc_tree();
    let mlid = weft_fabric::Mlid::new(0xc001).unwrap();
    st.multicast
        .mfts
        .get_mut(&weft_fabric::NodeId(0))
        .unwrap()
        .set(mlid, weft_fabric::PortMask::EMPTY);
    let t = Traffic::parse("multicast:0xc001").unwrap();
    let (r, _, _) = run_checked(&st, &t, &params(20_000), 1);
    conserved(&r);
    let m = r.multicast.unwrap();
    assert!(m.dropped_no_mft_entry > 0);
    assert_eq!(r.packets.dropped, m.dropped_no_mft_entry);
    // cn2, on the sender's leaf, still gets everything; cn3 and cn4 nothing.
    assert!(m.delivered_gbps_per_receiver.max > 90.0, "{m:?}");
    assert_eq!(m.delivered_gbps_per_receiver.min, 0.0, "{m:?}");
}
