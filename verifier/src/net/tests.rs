//! The flat view against the model: one step, and indexed path SLs.

use super::{Dest, Net, Step};
use crate::report::FailureReason;
use crate::testkit::{self, random_fabric, route_minhop, sequential_lids, Rng};
use weft_fabric::forward::{self, Stop};
use weft_fabric::{Lid, PortNum, PortRef, SlSet};

/// [`Net::switch_step`] is [`forward::step`] on flat arrays: on random fabrics, routed and
/// then broken (entries unset, at port 0, past the last port, anywhere; cables and nodes
/// down), every live switch's step toward every destination is the model's.
#[test]
fn the_flat_step_is_the_models() {
    let mut rng = Rng(0x5eed_0f0d);
    let mut seen = [0usize; 4];
    for case in 0..300 {
        let f = testkit::small_fabric(&mut rng);
        let mut st = route_minhop(&f, sequential_lids(&f));
        for _ in 0..1 + rng.below(4) {
            testkit::break_forwarding(&mut rng, &mut st);
        }
        let net = Net::new(&st);
        for d in forward::Dest::all(&st) {
            let ours = Dest {
                lid: d.lid,
                owner: (d.owner.node.0, d.owner.port.0),
            };
            for &x in &net.switches {
                if !net.alive(x) {
                    continue;
                }
                let model = forward::step(&st, weft_fabric::NodeId(x), d);
                let expected = match model {
                    forward::Step::Arrive => Step::Arrive,
                    forward::Step::Forward(h) | forward::Step::Deliver(h) => Step::Out {
                        out: h.out.0,
                        to: h.to.node.0,
                        to_port: h.to.port.0,
                        last: matches!(model, forward::Step::Deliver(_)),
                    },
                    forward::Step::Stop(stop) => Step::Fail(match stop {
                        Stop::Unset => FailureReason::Unset,
                        Stop::PortMissing(PortNum(port)) => FailureReason::PortMissing { port },
                        Stop::Unwired(PortNum(port)) => FailureReason::PortUnwired { port },
                        Stop::Down(PortNum(port)) => FailureReason::PortDown { port },
                        Stop::Misdelivered(PortNum(port)) => FailureReason::Misdelivered { port },
                    }),
                };
                let got = net.switch_step(x, ours);
                assert_eq!(got, expected, "case {case}: {d:?} at switch {x}");
                seen[match got {
                    Step::Arrive => 0,
                    Step::Out { last: false, .. } => 1,
                    Step::Out { last: true, .. } => 2,
                    Step::Fail(_) => 3,
                }] += 1;
            }
        }
    }
    assert!(seen.iter().all(|&c| c > 50), "{seen:?}");
}

/// The per-source index answers exactly what `PathSl::get` answers, for every source port
/// (ports without entries, out-of-range ports and switch port 0 included) and LID.
#[test]
fn indexed_path_sls_agree_with_the_state() {
    let mut rng = Rng(0x5eed_0051);
    for _ in 0..30 {
        let f = random_fabric(&mut rng, 6, 3, 5, 8);
        let mut st = route_minhop(&f, sequential_lids(&f));
        let max = st.lids.max_lid(&st.fabric);
        let nodes = st.fabric.nodes().len();
        let mut triples = Vec::new();
        for _ in 0..rng.below(60) {
            let node = weft_fabric::NodeId(rng.below(nodes as u64) as u32);
            let port = rng.below(4) as u8;
            let lid = Lid(1 + rng.below(u64::from(max)) as u16);
            triples.push((
                PortRef::new(node, port),
                lid,
                SlSet(1 + rng.below(7) as u16),
            ));
        }
        st.path_sl.set_by_source(triples);
        st.path_sl.set_by_dlid([(Lid(1), SlSet(0b100))]);
        // And per source switch, for some switches and LIDs.
        let switches: Vec<weft_fabric::NodeId> = st.switches.keys().copied().collect();
        let mut triples = Vec::new();
        for _ in 0..rng.below(40) {
            let x = switches[rng.below(switches.len() as u64) as usize];
            let lid = Lid(1 + rng.below(u64::from(max)) as u16);
            triples.push((x, lid, SlSet(1 + rng.below(7) as u16)));
        }
        st.path_sl.set_by_switch(triples);
        let net = Net::new(&st);
        for n in 0..nodes as u32 {
            for p in 0..=40u8 {
                for l in 0..=max + 1 {
                    let src = PortRef::new(weft_fabric::NodeId(n), p);
                    assert_eq!(
                        net.path_sls(n, p, Lid(l)),
                        st.path_sl.get(src, st.source_switch(src), Lid(l)),
                        "node {n} port {p} lid {l}"
                    );
                }
            }
        }
    }
}

/// [`Net::sends`] (the per-port mask the fast paths test) accepts exactly what the link,
/// VLCap, `max_vls` and arbitration allow: on random fabrics with links and nodes down and
/// random arbitration (unlisted VLs, zero weights, ports without a table, `max_vls`), every
/// node, port (0 and one past the last included) and VL.
#[test]
fn the_send_mask_is_the_ports_rules() {
    let mut rng = Rng(0x5e4d_3a5c);
    // [sent, refused]
    let mut seen = [0usize; 2];
    for case in 0..200 {
        let f = testkit::small_fabric(&mut rng);
        let mut st = route_minhop(&f, sequential_lids(&f));
        for _ in 0..rng.below(3) {
            testkit::break_forwarding(&mut rng, &mut st);
        }
        if rng.below(4) != 0 {
            testkit::arbitrate(&mut rng, &mut st);
        }
        let net = Net::new(&st);
        for n in 0..st.fabric.nodes().len() as u32 {
            let last = net.port_count.get(n as usize).copied().unwrap_or(0);
            for p in 0..=last.saturating_add(1) {
                for vl in 0..17u8 {
                    let rules = net.why_not_sent(n, p, vl).is_ok();
                    assert_eq!(
                        net.sends(n, p, vl),
                        rules,
                        "case {case}: node {n} port {p} VL {vl}"
                    );
                    seen[usize::from(!rules)] += 1;
                }
            }
        }
    }
    assert!(seen.iter().all(|&c| c > 1000), "{seen:?}");
}
