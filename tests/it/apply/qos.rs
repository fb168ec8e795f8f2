//! `weft apply` writing SL→VL and VL arbitration tables: every fault at every QoS write
//! ending old or new, another writer's change refused, random QoS tables landing or refused.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use super::*;

/// The tree without QoS, and the same with QoS tables on `leaf1` (three port pairs of its own,
/// one of them from port 0; the others left unassigned), on the first host's port (its
/// injection table, and a high-priority arbitration table) and on `leaf1`'s port 1 (a
/// low-priority table of 40 entries: two blocks).
fn qos_states() -> (FabricState, FabricState) {
    let old = tree("").state().clone();
    let mut new = old.clone();
    let f = new.fabric.clone();
    let leaf = f.node_ids().find(|&n| f.node(n).name() == "leaf1").unwrap();
    let host = PortRef::new(
        f.node_ids()
            .find(|&n| f.node(n).kind() == NodeKind::Hca)
            .unwrap(),
        1,
    );
    let live: Vec<u8> = (1..=f.node(leaf).spec.port_count)
        .filter(|&p| f.live_peer(PortRef::new(leaf, p)).is_some())
        .collect();
    let map = |k: u8| -> [u8; 16] { std::array::from_fn(|s| ((s as u8) + k) % 4) };
    let sw = new.switches.get_mut(&leaf).unwrap();
    for (i, o, k) in [
        (0, live[0], 1),
        (live[0], live[1], 2),
        (live[1], live[0], 3),
    ] {
        sw.sl2vl.push(weft_fabric::Sl2VlRow {
            in_port: i,
            out_port: o,
            vl: map(k),
        });
    }
    sw.sort_sl2vl();
    let w = |vl, weight| weft_fabric::VlWeight { vl, weight };
    let p = new.ports.entry(host).or_default();
    p.sl2vl = Some(map(1));
    p.vlarb = Some(weft_fabric::VlArb {
        high_limit: 0,
        high: vec![w(0, 8), w(1, 4)],
        low: Vec::new(),
    });
    new.ports
        .entry(PortRef::new(leaf, live[0]))
        .or_default()
        .vlarb = Some(weft_fabric::VlArb {
        high_limit: 0,
        high: Vec::new(),
        low: (0..40).map(|k| w(k % 4, 1 + k)).collect(),
    });
    (old, new)
}

/// A plan of SL→VL and VL arbitration writes alone (`weft_plan::qos::writes`) lands on the sim
/// with exactly its SMPs, and every fault kind at every SMP of it ends in exactly the old tables
/// or the new ones; a crash recovers back or forward exactly.
#[test]
fn every_fault_at_every_qos_write_ends_old_or_new() {
    let (old, new) = qos_states();
    let writes = weft_plan::qos::writes(&old, &new);
    let kinds =
        |f: fn(&weft_formats::plan::SmpWrite) -> bool| writes.iter().filter(|w| f(w)).count();
    // Three switch pairs and the host's table; the host's high block, the leaf port's two low.
    assert_eq!(
        (
            kinds(|w| matches!(w, weft_formats::plan::SmpWrite::Sl2vl { .. })),
            kinds(|w| matches!(w, weft_formats::plan::SmpWrite::VlArb { .. }))
        ),
        (4, 3)
    );
    let plan = trusted(weft_tests::one_step_plan(&old, &new, writes));
    // Clean: exactly its SMPs, each changing what its table held.
    let sm = sm_port(&old);
    let mut sim = SimFabric::new(&old, sm).unwrap();
    let dir = tmp("qos-clean");
    let r = apply(&mut sim, &plan, &options_for(&plan, &dir), &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    same_at(
        &sim.tables(),
        &SimFabric::new(&new, sm).unwrap().tables(),
        "",
    );
    assert_eq!(sim.counts().sets, plan.smps());
    assert_eq!(sim.counts().changes, plan.smps());
    let (sets, seen) = fault_matrix("matrix-qos", &old, &new, &plan);
    assert_eq!(sets, 7);
    assert_eq!(seen.values().sum::<usize>(), 7 * sets, "{seen:?}");
    for (kind, outcome) in [
        ("Drop { times: 1 }", "New"),
        ("Drop { times: 3 }", "Old"),
        ("Delay { times: 1 }", "New"),
        ("Delay { times: 3 }", "Old"),
        ("Reject { status: 28 }", "Old"),
        ("CorruptReadback", "Old"),
        ("Crash", "crashed, recovered"),
    ] {
        assert_eq!(
            seen.get(&format!("{kind} → {outcome}")),
            Some(&sets),
            "{seen:?}"
        );
    }
}

/// Another writer changed a table the plan writes (a switch's port pair, then a host port's
/// injection table, then a VL arbitration block) before it ran: the plan is refused as moved
/// on, naming the node and the port(s), and nothing is written.
#[test]
fn a_qos_table_another_writer_changed_is_refused_naming_it() {
    let (old, new) = qos_states();
    let plan = trusted(weft_tests::one_step_plan(
        &old,
        &new,
        weft_plan::qos::writes(&old, &new),
    ));
    let f = &old.fabric;
    let leaf = f.node_ids().find(|&n| f.node(n).name() == "leaf1").unwrap();
    let host = f
        .node_ids()
        .find(|&n| f.node(n).kind() == NodeKind::Hca)
        .unwrap();
    let sm = sm_port(&old);
    let [weft_formats::plan::SmpWrite::Sl2vl {
        in_port, out_port, ..
    }, ..] = plan.steps[0].writes.as_slice()
    else {
        panic!("{:?}", plan.steps[0].writes)
    };
    let (leaf_guid, host_guid) = (f.node(leaf).guid(), f.node(host).guid());
    let vlarb_port = new
        .ports
        .iter()
        .find(|(r, p)| r.node == leaf && p.vlarb.is_some())
        .map(|(r, _)| r.port.0)
        .unwrap();
    let cases: Vec<(FabricState, String)> = {
        let mut pair = old.clone();
        pair.switches.get_mut(&leaf).unwrap().sl2vl = vec![weft_fabric::Sl2VlRow {
            in_port: *in_port,
            out_port: *out_port,
            vl: [1; 16],
        }];
        pair.switches.get_mut(&leaf).unwrap().sl2vl_all = Some([0; 16]);
        let mut inj = old.clone();
        inj.ports.entry(PortRef::new(host, 1)).or_default().sl2vl = Some([2; 16]);
        let mut arb = old.clone();
        arb.ports
            .entry(PortRef::new(leaf, vlarb_port))
            .or_default()
            .vlarb = Some(weft_fabric::VlArb {
            high_limit: 0,
            high: Vec::new(),
            low: vec![weft_fabric::VlWeight { vl: 3, weight: 9 }],
        });
        vec![
            (
                pair,
                format!("switch {leaf_guid} SL→VL input {in_port} output {out_port}"),
            ),
            (inj, format!("{host_guid} port 1 SL→VL")),
            (
                arb,
                format!("switch {leaf_guid} port {vlarb_port} VL arbitration block 1 (low 0–31)"),
            ),
        ]
    };
    for (moved, named) in cases {
        let mut sim = SimFabric::new(&moved, sm).unwrap();
        let before = sim.tables();
        let dir = tmp("qos-moved");
        let err = apply(&mut sim, &plan, &options_for(&plan, &dir), &mut |_| {}).unwrap_err();
        assert!(matches!(err, ApplyError::Moved(_)), "{err}");
        assert!(
            err.to_string()
                .starts_with(&format!("{named} does not hold the plan's old value")),
            "{err}"
        );
        assert_eq!(sim.counts().sets, 0);
        same_at(&sim.tables(), &before, "nothing written");
    }
}

/// Small trees for [`qos_writes_take_any_tables_to_any_tables`], compiled once.
fn small_trees() -> &'static [FabricState] {
    static TREES: std::sync::OnceLock<Vec<FabricState>> = std::sync::OnceLock::new();
    TREES.get_or_init(|| {
        [(&[2u32, 2][..], &[1u32, 2][..]), (&[3, 2], &[1, 3])]
            .iter()
            .map(|(m, w)| compiled(&xgft_source(2, m, w, "", "")).state().clone())
            .collect()
    })
}

/// QoS tables drawn by `pick` onto `st`: per switch none, one map for every pair, or rows for
/// some live pairs (over a map or not); per host port an injection table or none; per port
/// (a switch's port 0 included) arbitration or none, up to 40 entries a table.
fn random_qos(st: &FabricState, pick: &[u8]) -> FabricState {
    let mut st = st.clone();
    let f = st.fabric.clone();
    let mut k = 0usize;
    let mut next = || {
        k += 1;
        pick.get(k % pick.len().max(1))
            .copied()
            .unwrap_or(0)
            .wrapping_add(k as u8)
    };
    for id in f.node_ids() {
        let n = f.node(id);
        let live: Vec<u8> = (1..=n.spec.port_count)
            .filter(|&p| f.live_peer(PortRef::new(id, p)).is_some())
            .collect();
        if n.is_switch() {
            let sw = st.switches.entry(id).or_default();
            let map =
                |x: u8| -> [u8; 16] { std::array::from_fn(|s| (x.wrapping_add(s as u8)) % 16) };
            match next() % 4 {
                0 => {}
                1 => sw.sl2vl_all = Some(map(next())),
                c => {
                    if c == 3 {
                        sw.sl2vl_all = Some(map(next()));
                    }
                    for i in std::iter::once(0).chain(live.iter().copied()) {
                        for &o in &live {
                            if next() % 3 == 0 {
                                sw.sl2vl.push(weft_fabric::Sl2VlRow {
                                    in_port: i,
                                    out_port: o,
                                    vl: map(next()),
                                });
                            }
                        }
                    }
                    sw.sort_sl2vl();
                }
            }
        }
        let ports: Vec<u8> = if n.is_switch() {
            std::iter::once(0).chain(live.iter().copied()).collect()
        } else {
            live.clone()
        };
        for p in ports {
            let at = PortRef::new(id, p);
            if !n.is_switch() && next() % 2 == 0 {
                st.ports.entry(at).or_default().sl2vl =
                    Some(std::array::from_fn(|s| (next().wrapping_add(s as u8)) % 15));
            }
            if next() % 3 == 0 {
                let table = |len: u8, next: &mut dyn FnMut() -> u8| -> Vec<weft_fabric::VlWeight> {
                    (0..len)
                        .map(|_| weft_fabric::VlWeight {
                            vl: next() % 15,
                            weight: next(),
                        })
                        .collect()
                };
                let lo = next() % 41;
                let low = table(lo, &mut next);
                let hi = next() % 41;
                let high = table(hi, &mut next);
                let arb = weft_fabric::VlArb {
                    high_limit: 0,
                    low,
                    high,
                };
                st.ports.entry(at).or_default().vlarb = Some(arb);
            }
        }
    }
    st
}

/// What the sim holds of `want`'s QoS tables ([`weft_plan::qos::tables`]: every pair the
/// writes cover, every live end port, every arbitration block), read over SMPs.
fn held_qos(sim: &mut SimFabric, like: &weft_plan::qos::QosTables) -> weft_plan::qos::QosTables {
    use weft_deploy::smp::{self, Attr};
    use weft_deploy::transport::{Target, Transport};
    let d = weft_deploy::discover::discover(sim).unwrap();
    let mut out = weft_plan::qos::QosTables::default();
    for &(g, i, o) in like.sl2vl.keys() {
        let switch = d.nodes[&g].info.node_type == smp::NodeType::Switch;
        let target = Target {
            path: d.path(g, (!switch).then_some(o)).unwrap().clone(),
            attr: Attr::SlToVl,
            modifier: if switch { smp::sl2vl_modifier(i, o) } else { 0 },
        };
        out.sl2vl.insert(
            (g, i, o),
            Some(smp::decode_sl2vl(&sim.get(&target).unwrap())),
        );
    }
    for &(g, p, b) in like.vlarb.keys() {
        let switch = d.nodes[&g].info.node_type == smp::NodeType::Switch;
        let target = Target {
            path: d.path(g, (!switch).then_some(p)).unwrap().clone(),
            attr: Attr::VlArb,
            modifier: smp::vlarb_modifier(b, if switch { p } else { 0 }),
        };
        let mut e = smp::decode_vlarb(&sim.get(&target).unwrap()).to_vec();
        while e.last() == Some(&(0, 0)) {
            e.pop();
        }
        out.vlarb.insert((g, p, b), e);
    }
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(16))]

    /// Random QoS tables on a small tree: applying `qos::writes(old, new)` on the sim loaded
    /// with `old` lands, and the fabric then holds `new`'s tables (every pair and block `new`
    /// sets; a pair `new` leaves unassigned is not compared), and writing them again from there
    /// is nothing.
    #[test]
    fn qos_writes_take_any_tables_to_any_tables(
        which in 0usize..2,
        a in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..64),
        b in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..64),
    ) {
        let base = &small_trees()[which];
        let (old, new) = (random_qos(base, &a), random_qos(base, &b));
        let writes = weft_plan::qos::writes(&old, &new);
        let plan = trusted(weft_tests::one_step_plan(&old, &new, writes.clone()));
        let sm = sm_port(&old);
        let mut sim = SimFabric::new(&old, sm).unwrap();
        let dir = tmp("qos-prop");
        let r = apply(&mut sim, &plan, &options_for(&plan, &dir), &mut |_| {}).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let want = if writes.is_empty() { Final::Nothing } else { Final::New };
        proptest::prop_assert_eq!(&r.state, &want, "{:?}", r);
        let mut expected = weft_plan::qos::tables(&new);
        expected.sl2vl.retain(|_, v| v.is_some());
        // Blocks `new` leaves at (0, 0) that `old` set: written back to nothing.
        for (k, _) in weft_plan::qos::tables(&old).vlarb {
            expected.vlarb.entry(k).or_default();
        }
        proptest::prop_assert_eq!(held_qos(&mut sim, &expected), expected);
        let mut landed = old.clone();
        for w in &writes {
            weft_plan::qos::apply(&mut landed, w).unwrap();
        }
        proptest::prop_assert!(weft_plan::qos::writes(&landed, &new).is_empty());
    }
}

/// A plan file whose SL→VL write sends every SL to VL 15 (drops every packet) is refused by the
/// proof on the fabric, naming the step, the table and the SL; nothing is written. Written on
/// the proof it carries (`--no-reprove`), it lands, and the report says what is not proven.
#[test]
fn a_qos_plan_that_drops_a_lane_is_refused_by_the_proof_on_the_fabric() {
    let (old, new) = qos_states();
    let mut writes = weft_plan::qos::writes(&old, &new);
    let Some(weft_formats::plan::SmpWrite::Sl2vl {
        node,
        in_port,
        out_port,
        new: to,
        ..
    }) = writes
        .iter_mut()
        .find(|w| matches!(w, weft_formats::plan::SmpWrite::Sl2vl { .. }))
    else {
        panic!("no SL→VL write")
    };
    *to = [15; 16];
    let named = format!("{node} SL→VL input {in_port} output {out_port}: SL 0 goes from VL 0 to VL 15, which drops it");
    let plan = weft_tests::one_step_plan(&old, &new, writes);
    let sm = sm_port(&old);
    let mut sim = SimFabric::new(&old, sm).unwrap();
    let before = sim.tables();
    let dir = tmp("qos-drop");
    let err = apply(&mut sim, &plan, &options_for(&plan, &dir), &mut |_| {}).unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "step 1 of the plan is not safe on the fabric as it runs: {named}"
        )),
        "{err}"
    );
    same_at(&sim.tables(), &before, "");
    assert_eq!(sim.counts().sets, 0);
    let plan = trusted(plan);
    let r = apply(&mut sim, &plan, &options_for(&plan, &dir), &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    assert!(
        r.notes.iter().any(|n| n
            .contains("SL→VL and VL arbitration write(s) are not part of any proof it carries")),
        "{:?}",
        r.notes
    );
    let _ = std::fs::remove_dir_all(&dir);
}
