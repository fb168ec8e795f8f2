//! The planner on random fabrics: routings of one fabric (up/down from two roots and min-hop,
//! on the same LIDs), planned both ways, and toward the fabric with a random cable down routed
//! up/down from a third root, with break-before-make allowed and without. `plan` never panics;
//! a plan always exists between two proven states, with an outage only where no order keeps
//! every route (then the plan without outage is refused with a witness); replaying its steps
//! with the transition checker proves every one, each write's `old` block is what the switch
//! holds when it lands, every state between steps passes an independent check (the reference
//! walk, the verifier's dependency graph), and the end is exactly the desired tables.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use std::collections::BTreeMap;
use weft_fabric::{NodeId, ValidState};
use weft_plan::{check_steps, plan, start, Mode, Options, PlanError};
use weft_verifier::testkit::{self, Rng};
use weft_verifier::Scope;

fn lfts(st: &ValidState) -> BTreeMap<NodeId, Vec<u8>> {
    st.switches
        .iter()
        .map(|(&id, t)| (id, t.lft.ports.clone()))
        .collect()
}

#[test]
fn plans_replay_to_the_desired_tables() {
    let mut rng = Rng(0x91a7);
    let (mut planned, mut outages, mut refused) = (0, 0, 0);
    for k in 0..120 {
        let f = testkit::small_fabric(&mut rng);
        let lids = testkit::sequential_lids(&f);
        // Up/down from two roots (both proven), and min-hop (proven on some fabrics).
        let a = testkit::valid(testkit::route_updown(&f, lids.clone()));
        let root = 1 + rng.below(8) as usize;
        let c = testkit::valid(testkit::route_updown_from(&f, lids.clone(), root));
        let b = testkit::valid(testkit::route_minhop(&f, lids.clone()));
        // A fault: a random cable down, the fabric routed up/down from another root.
        let mut faulted = weft_fabric::FabricBuilder::from(f.clone());
        let cable = rng.below(f.links().len().max(1) as u64) as u32;
        faulted.set_link_down(weft_fabric::LinkId(cable));
        let g = faulted.finish();
        let e = testkit::valid(testkit::route_updown_from(&g, lids, root + 1));
        for (old, new) in [(&a, &b), (&b, &a), (&a, &c), (&c, &a), (&a, &e), (&c, &e)] {
            for mode in [Mode::Fault, Mode::Drain] {
                let full = rng.below(2) == 0;
                let opts = Options {
                    mode,
                    scope: Scope::All,
                    full,
                    max_outage_pairs: None,
                    fill_at_once: false,
                };
                let zero = Options {
                    max_outage_pairs: Some(0),
                    ..opts.clone()
                };
                let without = plan(old, new, &zero);
                // From a state with a credit loop (min-hop on a ring) every step's mixes have
                // it: no plan, with or without outage.
                let from_loop = start(old, new, mode).is_ok_and(|s| {
                    !weft_verifier::verify(
                        &s,
                        &weft_verifier::Options {
                            properties: vec![weft_verifier::Property::DeadlockFree],
                            certificate: false,
                            ..Default::default()
                        },
                    )
                    .is_proven()
                });
                match plan(old, new, &opts) {
                    Ok(p) => {
                        planned += 1;
                        // Outage only where no order keeps every route.
                        match &without {
                            Ok(z) => {
                                assert!(p.outage.is_none(), "case {k}");
                                assert_eq!(z.plan, p.plan, "case {k}");
                            }
                            Err(PlanError::NoSafeOrder { check, .. }) => {
                                refused += 1;
                                assert!(!check.is_proven(), "case {k}");
                                assert!(
                                    check.forwarding_loop.is_some()
                                        || !check.credit_loop.is_empty()
                                        || check.broken.is_some(),
                                    "case {k}: a refusal has a witness: {check:?}"
                                );
                                assert!(p.outage.is_some(), "case {k}");
                                outages += 1;
                            }
                            Err(e) => panic!("case {k}: {e}"),
                        }
                        replayed(k, old, new, mode, full, &p);
                    }
                    Err(PlanError::Unproven(_)) => {
                        // The desired state unproven, or (draining) cutting a destination off
                        // while its cables are up: no order keeps its routes either.
                        assert!(
                            matches!(
                                without,
                                Err(PlanError::Unproven(_) | PlanError::NoSafeOrder { .. })
                            ),
                            "case {k}"
                        );
                    }
                    Err(PlanError::NoSafeOrder { .. }) if from_loop => {
                        assert!(without.is_err(), "case {k}");
                    }
                    Err(e) => panic!("case {k}: {e}"),
                }
            }
        }
    }
    assert!(
        planned > 60 && outages > 20 && refused == outages,
        "{planned} planned, {outages} with an outage, {refused} refused without"
    );
}

/// A plan's steps replayed: every one proven again by the transition checker (with the
/// plan's drops and restores), each write's `old` block what the switch holds when it lands,
/// the end exactly the plan's end state (the desired tables with `full`); and, independently
/// of the transition checker, the tables after every step: no forwarding loop toward any
/// destination (the reference walk), a channel dependency graph without a cycle (the
/// verifier), and every route toward a destination in service arriving where it arrived at
/// the start.
fn replayed(
    k: usize,
    old: &ValidState,
    new: &ValidState,
    mode: Mode,
    full: bool,
    p: &weft_plan::Planned,
) {
    let s = start(old, new, mode).unwrap();
    let steps = &p.plan.steps;
    let checks = check_steps(&s, steps, Scope::All, &Default::default());
    assert_eq!(checks.len(), steps.len(), "case {k}");
    assert!(checks.iter().all(|c| c.is_proven()), "case {k}");
    let by_guid = |st: &ValidState| -> BTreeMap<weft_fabric::Guid, Vec<u8>> {
        lfts(st)
            .into_iter()
            .map(|(id, t)| (st.fabric.node(id).guid(), t))
            .collect()
    };
    let dests = weft_fabric::forward::Dest::all(&s);
    let arrives = |st: &ValidState, x: NodeId, d: weft_fabric::forward::Dest| {
        weft_fabric::forward::walk(st, x, d, |_| {}).arrives()
    };
    let switches: Vec<NodeId> = s.switches.keys().copied().collect();
    let mut out: std::collections::BTreeSet<u16> = std::collections::BTreeSet::new();
    let mut t = by_guid(&s);
    for (i, step) in steps.iter().enumerate() {
        out.extend(&step.drops);
        let one = weft_formats::plan::Plan {
            steps: vec![step.clone()],
            ..p.plan.clone()
        };
        one.replay_lfts(&mut t)
            .unwrap_or_else(|e| panic!("case {k} step {i}: {e}"));
        let mut st = s.state().clone();
        for (id, tables) in st.switches.iter_mut() {
            if let Some(lft) = t.get(&s.fabric.node(*id).guid()) {
                tables.lft.ports = lft.clone();
            }
        }
        let st = ValidState::new(st).unwrap();
        let report = weft_verifier::verify(
            &st,
            &weft_verifier::Options {
                properties: vec![weft_verifier::Property::DeadlockFree],
                certificate: false,
                ..Default::default()
            },
        );
        assert!(
            report.is_proven(),
            "case {k} step {i}: {:?}",
            report.credit_loops
        );
        for &d in &dests {
            for &x in &switches {
                let fate = weft_fabric::forward::walk(&st, x, d, |_| {});
                assert!(
                    !matches!(fate, weft_fabric::forward::Fate::Loops),
                    "case {k} step {i}: a forwarding loop toward LID {}",
                    d.lid.0
                );
                if !out.contains(&d.lid.0) && arrives(&s, x, d) {
                    assert!(
                        fate.arrives(),
                        "case {k} step {i}: LID {} from {x:?}",
                        d.lid.0
                    );
                }
            }
        }
        for l in &step.restores {
            out.remove(l);
        }
    }
    assert_eq!(
        t,
        by_guid(&p.end),
        "case {k}: the end is the plan's end state"
    );
    if full {
        assert_eq!(
            lfts(&p.end),
            lfts(new),
            "case {k}: --full ends at the desired tables"
        );
    }
}

/// VL arbitration on random fabrics: a port taking a VL on (or new weights) is planned as
/// arbitration writes after every other step, proven to keep every scheduled VL scheduled
/// ([`weft_plan::qos::check`]); a VL moving from one block to another is two steps (the new
/// block first); a VL no block schedules any more is refused, naming the port and the VL.
#[test]
fn arbitration_changes_keep_every_scheduled_vl_scheduled() {
    use weft_fabric::{PortRef, VlArb, VlWeight};
    let mut rng = Rng(0x7a1b);
    let w = |vl, weight| VlWeight { vl, weight };
    for _ in 0..20 {
        let f = testkit::small_fabric(&mut rng);
        let lids = testkit::sequential_lids(&f);
        let base = testkit::route_updown(&f, lids);
        let sw = f.node_ids().find(|&n| f.node(n).is_switch()).unwrap();
        let port = PortRef::new(sw, 1);
        let with = |high: Vec<VlWeight>, low: Vec<VlWeight>| {
            let mut st = base.clone();
            st.ports.entry(port).or_default().vlarb = Some(VlArb {
                high_limit: 0,
                high,
                low,
            });
            testkit::valid(st)
        };
        let opts = Options::default();
        // VL 0 in the high table; then also in the low one with VL 1; then in the low one only.
        let a = with(vec![w(0, 4)], Vec::new());
        let b = with(vec![w(0, 4)], vec![w(0, 2), w(1, 8)]);
        let c = with(Vec::new(), vec![w(0, 2), w(1, 8)]);
        let p = plan(&a, &b, &opts).unwrap();
        assert_eq!(p.plan.steps.len(), 1);
        assert!(weft_plan::qos::check(&p.plan.steps).is_ok());
        // High to low: the low block takes VL 0 on in the first step, the high one lets it go
        // in the second.
        let p = plan(&a, &c, &opts).unwrap();
        assert_eq!(p.plan.steps.len(), 2, "{:?}", p.plan.steps);
        assert!(matches!(
            &p.plan.steps[0].writes[..],
            [weft_formats::plan::SmpWrite::VlArb { block: 1, .. }]
        ));
        assert!(weft_plan::qos::check(&p.plan.steps).is_ok());
        // VL 1 scheduled no more: refused.
        match plan(&b, &a, &opts) {
            Err(PlanError::Arbitration(why)) => {
                assert!(
                    why.contains("port 1: VL 1 is scheduled before the step"),
                    "{why}"
                )
            }
            other => panic!("{:?}", other.map(|p| p.plan.steps)),
        }
    }
}
