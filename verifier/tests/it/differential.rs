//! The explicit and z3 engines agree on every generated case: random small topologies,
//! min-hop or up/down routing, random SL2VL tables, path-SL sets, VL arbitration (some ports
//! not sending a VL, `max_vls`) and table corruptions. Every witness either engine gives is
//! replayed on the concrete tables.

use weft_fabric::{FabricState, Lid, NodeId, PortRef, Sl2VlRow, SlSet, ValidState};
use weft_formats::state_json::ToJson;
use weft_verifier::reference::{replay_credit_loop, replay_pattern};
use weft_verifier::testkit::{self, Rng};
use weft_verifier::z3::Z3;
use weft_verifier::{verify, FailureKind, Options, Outcome, Property, Scope};

fn random_vls(rng: &mut Rng, st: &mut FabricState) {
    let vls = 1 + rng.below(3) as u8;
    for (&x, s) in st.switches.iter_mut() {
        let ports = st.fabric.node(x).spec.port_count;
        // Sometimes one map for all pairs, with rows for some of them.
        let all = rng.below(2) == 0;
        if all {
            let mut vl = [0u8; 16];
            for v in vl.iter_mut() {
                *v = rng.below(u64::from(vls)) as u8;
            }
            s.sl2vl_all = Some(vl);
        }
        for i in 0..=ports {
            for o in 1..=ports {
                if all && rng.below(4) != 0 {
                    continue;
                }
                let mut vl = [0u8; 16];
                for v in vl.iter_mut() {
                    *v = rng.below(u64::from(vls)) as u8;
                }
                s.sl2vl.push(Sl2VlRow {
                    in_port: i,
                    out_port: o,
                    vl,
                });
            }
        }
        s.sort_sl2vl();
    }
    for (i, n) in st.fabric.clone().nodes().iter().enumerate() {
        if !n.is_switch() {
            let mut t = [0u8; 16];
            for v in t.iter_mut() {
                *v = rng.below(u64::from(vls)) as u8;
            }
            st.set_node_injection(NodeId(i as u32), t);
        }
    }
    st.path_sl.default = SlSet(1 + rng.below(3) as u16);
    random_path_sls(rng, st);
}

/// Path SLs by source switch in half the cases (the sources at a switch send alike), and by
/// source port in a quarter: random non-empty subsets of SLs 0–2 toward random LIDs.
fn random_path_sls(rng: &mut Rng, st: &mut FabricState) {
    let max_lid = st.lids.max_lid(&st.fabric);
    if rng.below(2) == 0 {
        let switches: Vec<NodeId> = st.switches.keys().copied().collect();
        let mut triples = Vec::new();
        for &x in &switches {
            for lid in 1..=max_lid {
                if rng.below(2) == 0 {
                    triples.push((x, Lid(lid), SlSet(1 + rng.below(7) as u16)));
                }
            }
        }
        st.path_sl.set_by_switch(triples);
    }
    if rng.below(4) == 0 {
        let ports: Vec<PortRef> = st
            .lids
            .base
            .iter()
            .flat_map(|(&n, ps)| ps.keys().map(move |&p| PortRef { node: n, port: p }))
            .collect();
        let mut triples = Vec::new();
        for &p in &ports {
            if rng.below(2) == 0 {
                let lid = 1 + rng.below(u64::from(max_lid.max(1))) as u16;
                triples.push((p, Lid(lid), SlSet(1 + rng.below(7) as u16)));
            }
        }
        st.path_sl.set_by_source(triples);
    }
}

fn case(rng: &mut Rng) -> ValidState {
    let switches = 2 + rng.below(5) as usize;
    let extra = rng.below(4) as usize;
    let hosts = rng.below(6) as usize;
    let f = if rng.below(4) == 0 {
        testkit::ring(4 + rng.below(4) as usize, rng.below(3) as usize)
    } else {
        testkit::random_fabric(rng, switches, extra, hosts, 5)
    };
    let lids = testkit::sequential_lids(&f);
    let mut st = if rng.below(2) == 0 {
        testkit::route_minhop(&f, lids)
    } else {
        testkit::route_updown(&f, lids)
    };
    if rng.below(3) == 0 {
        random_vls(rng, &mut st);
        // VL arbitration that sends every VL, or that stops some port sending one.
        testkit::arbitrate(rng, &mut st);
    } else if rng.below(4) == 0 {
        testkit::arbitrate(rng, &mut st);
    }
    for _ in 0..rng.below(3) {
        testkit::corrupt(rng, &mut st);
    }
    testkit::valid(st)
}

#[test]
fn explicit_and_z3_agree_on_generated_cases() {
    let z3 = Z3 { timeout_ms: 10_000 };
    let mut rng = Rng(0x5eed);
    let mut counts = [0usize; 4];
    let mut unscheduled = 0usize;
    let cases = 1000;
    for n in 0..cases {
        let st = case(&mut rng);
        let scope = if n % 5 == 0 {
            Scope::HcaToHca
        } else {
            Scope::All
        };
        let opts = Options {
            scope,
            ..Options::default()
        };
        let ours = verify(&st, &opts);
        let theirs = z3.run(&st, &opts);
        // The route properties are the engines' own; `isolated` and `apm_disjoint` have one
        // engine-independent checker each (tests/isolation.rs, tests/apm.rs) and are not asked.
        assert_eq!(opts.properties, Property::ROUTES);
        assert_eq!(
            (&ours.verdict.deadlock_free, &ours.verdict.connected),
            (&theirs.verdict.deadlock_free, &theirs.verdict.connected),
            "case {n}: engines disagree\nstate: {}",
            st.to_json()
        );
        for l in &ours.credit_loops {
            replay_credit_loop(&st, l).unwrap_or_else(|e| panic!("case {n}: {e}"));
        }
        for p in &ours.failures {
            replay_pattern(&st, p).unwrap_or_else(|e| panic!("case {n}: {e}"));
        }
        // Pattern totals count exactly the routes the reference semantics sees fail.
        assert_eq!(
            ours.failed_routes, theirs.failed_routes as u64,
            "case {n}: failed routes"
        );
        assert_eq!(
            ours.failures.iter().map(|p| p.routes).sum::<u64>(),
            ours.failed_routes
        );
        assert_eq!(ours.stats.routes, theirs.routes as u64, "case {n}: routes");
        if theirs.verdict.deadlock_free == Outcome::Violated {
            let l = theirs
                .credit_loop
                .as_ref()
                .expect("z3 gives a cycle from its unsat core");
            replay_credit_loop(&st, l).unwrap_or_else(|e| panic!("case {n}: z3 cycle: {e}"));
        }
        let k = usize::from(ours.verdict.deadlock_free == Outcome::Violated) * 2
            + usize::from(ours.verdict.connected == Outcome::Violated);
        counts[k] += 1;
        unscheduled += usize::from(ours.failures.iter().any(|p| {
            matches!(
                p.reason,
                FailureKind::VlNotScheduled | FailureKind::VlAboveMaxVls
            )
        }));
    }
    // The generator must exercise every combination, and arbitration that stops a VL.
    assert!(counts.iter().all(|&c| c >= 40), "verdict mix {counts:?}");
    assert!(
        unscheduled >= 40,
        "{unscheduled} cases with unscheduled VLs"
    );
}

/// A z3 timeout is its own result: with a 1 ms budget the answer is either `unknown` or the
/// explicit engine's, never a wrong "proven" — and on a tree of 1 892 routes it is `unknown`
/// (no solver decides one in 1 ms), so the timeout path runs.
#[test]
fn z3_timeout_is_unknown_never_proven() {
    let f = testkit::fat_tree2(4, 8, 4);
    let mut st = testkit::route_minhop(&f, testkit::sequential_lids(&f));
    // A credit loop the explicit engine sees: spines routed in a circle for one leaf's LID.
    let mut rng = Rng(3);
    for _ in 0..5 {
        testkit::corrupt(&mut rng, &mut st);
    }
    let st = testkit::valid(st);
    let ours = verify(&st, &Options::default());
    let z = Z3 { timeout_ms: 1 }.run(&st, &Options::default()).verdict;
    let pairs = [
        (&ours.verdict.deadlock_free, &z.deadlock_free),
        (&ours.verdict.connected, &z.connected),
    ];
    for (a, b) in pairs {
        assert!(
            matches!(b, Outcome::Unknown(_)) || a == b,
            "explicit {a:?}, z3 with 1 ms {b:?}"
        );
    }
    assert!(ours.stats.routes >= 1_500, "{} routes", ours.stats.routes);
    assert!(
        pairs.iter().any(|(_, b)| matches!(b, Outcome::Unknown(_))),
        "z3 decided {} routes in 1 ms: {pairs:?}",
        ours.stats.routes
    );
}
