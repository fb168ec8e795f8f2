//! The explicit engine on small fabrics: proofs with certificates the checker accepts,
//! credit loops and failed routes with witnesses replayed on the concrete tables.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use weft_fabric::{FabricState, Lid, NodeId, PortNum, Sl2VlRow, SlSet};
use weft_verifier::reference::{replay_credit_loop, replay_pattern};
use weft_verifier::testkit::{self, Rng};
use weft_verifier::{Certificate, CertificateError, CheckSummary, Options, Outcome, Report, Scope};

/// The verifier on a fixture (validated first: these fixtures are always valid states).
fn verify(st: &FabricState, opts: &Options) -> Report {
    weft_verifier::verify(&testkit::valid(st.clone()), opts)
}

mod certificate {
    use super::*;
    /// The certificate checker on a fixture (validated first).
    pub(super) fn check(
        st: &FabricState,
        c: &Certificate,
    ) -> Result<CheckSummary, CertificateError> {
        weft_verifier::certificate::check(&testkit::valid(st.clone()), c, &Default::default())
    }
}

/// Replays every witness of `r` on the tables of `st`.
fn replay_all(st: &FabricState, r: &Report) {
    for l in &r.credit_loops {
        replay_credit_loop(st, l).unwrap_or_else(|e| panic!("credit loop witness: {e}\n{l:#?}"));
        assert!(l.channels.len() >= 2);
    }
    for p in &r.failures {
        replay_pattern(st, p).unwrap_or_else(|e| panic!("failure pattern: {e}\n{p:#?}"));
    }
    // Every failed route is counted in exactly one pattern.
    assert_eq!(
        r.failures.iter().map(|p| p.routes).sum::<u64>(),
        r.failed_routes
    );
}

fn proven_with_certificate(st: &FabricState, opts: &Options) -> Certificate {
    let r = verify(st, opts);
    assert!(r.is_proven(), "{:#?}", r.verdict);
    let cert = r
        .certificate
        .clone()
        .expect("a proven report has a certificate");
    let json = cert.to_json();
    let back = Certificate::from_json(&json).unwrap();
    assert_eq!(back, cert);
    let req = weft_verifier::Request {
        scope: opts.scope,
        ..weft_verifier::Request::default()
    };
    let sum = weft_verifier::certificate::check(&testkit::valid(st.clone()), &back, &req)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sum.routes, r.stats.routes);
    cert
}

#[test]
fn ring_minhop_has_a_credit_loop_with_witness_routes() {
    let f = testkit::ring(6, 1);
    let lids = testkit::sequential_lids(&f);
    let st = testkit::route_minhop(&f, lids);
    let r = verify(&st, &Options::default());
    assert_eq!(r.verdict.connected, Outcome::Proven);
    assert_eq!(r.verdict.deadlock_free, Outcome::Violated);
    assert!(!r.credit_loops.is_empty());
    assert!(r.certificate.is_none());
    replay_all(&st, &r);
    // A 6-ring routed min-hop loops both ways round.
    assert_eq!(r.credit_loops.len(), 2, "{:#?}", r.credit_loops);
    for l in &r.credit_loops {
        assert_eq!(l.cycle.len(), 6);
    }
}

#[test]
fn ring_updown_is_proven_and_certified() {
    let f = testkit::ring(6, 2);
    let st = testkit::route_updown(&f, testkit::sequential_lids(&f));
    let cert = proven_with_certificate(&st, &Options::default());
    assert_eq!(cert.connected.switches.len(), 6);
    assert_eq!(cert.connected.destinations.len(), 6 + 12);
}

#[test]
fn fat_tree_updown_is_proven_and_certified() {
    let f = testkit::fat_tree2(4, 6, 4);
    let st = testkit::route_updown(&f, testkit::sequential_lids(&f));
    proven_with_certificate(&st, &Options::default());
    proven_with_certificate(
        &st,
        &Options {
            scope: Scope::HcaToHca,
            ..Options::default()
        },
    );
}

#[test]
fn certificate_json_is_deterministic() {
    let f = testkit::fat_tree2(2, 3, 2);
    let st = testkit::route_updown(&f, testkit::sequential_lids(&f));
    let a = verify(&st, &Options::default())
        .certificate
        .unwrap()
        .to_json();
    let b = verify(&st, &Options::default())
        .certificate
        .unwrap()
        .to_json();
    assert_eq!(a, b);
}

#[test]
fn tampered_certificates_are_rejected() {
    let f = testkit::ring(5, 1);
    let st = testkit::route_updown(&f, testkit::sequential_lids(&f));
    let cert = proven_with_certificate(&st, &Options::default());
    // Equal ranks everywhere: some dependency no longer increases.
    let mut c = cert.clone();
    for ch in &mut c.deadlock_free.channels {
        ch.3 = 0;
    }
    assert!(matches!(
        certificate::check(&st, &c),
        Err(CertificateError::Rank { .. })
    ));
    // A label that does not decrease.
    let mut c = cert.clone();
    for d in &mut c.connected.destinations {
        for l in &mut d.labels {
            if *l != u16::MAX {
                *l = 7;
            }
        }
    }
    assert!(certificate::check(&st, &c).is_err());
    // A missing destination.
    let mut c = cert.clone();
    c.connected.destinations.pop();
    assert!(certificate::check(&st, &c).is_err());
    // The same certificate against a state with a broken entry.
    let mut broken = st.clone();
    let x = *broken.switches.keys().next().unwrap();
    broken
        .switches
        .get_mut(&x)
        .unwrap()
        .lft
        .set(Lid(3), PortNum(255));
    assert!(certificate::check(&broken, &cert).is_err());
}

/// Min-hop on a 4-ring, which loops; routes that cross a "dateline" (the R0–R1 link) use
/// SL 1, SL 1 runs on VL 1 everywhere, every cabled port's arbitration sends every VL:
/// acyclic, as in torus-2QoS.
fn dateline_ring() -> FabricState {
    let f = testkit::ring(4, 1);
    let mut st = testkit::route_minhop(&f, testkit::sequential_lids(&f));
    let mut ident = [0u8; 16];
    for (s, v) in ident.iter_mut().enumerate() {
        *v = (s % 8) as u8;
    }
    for s in st.switches.values_mut() {
        for i in 0..=3u8 {
            for o in 1..=3u8 {
                s.sl2vl.push(Sl2VlRow {
                    in_port: i,
                    out_port: o,
                    vl: ident,
                });
            }
        }
        s.sort_sl2vl();
    }
    for (i, n) in st.fabric.clone().nodes().iter().enumerate() {
        if !n.is_switch() {
            st.set_node_injection(NodeId(i as u32), ident);
        }
    }
    testkit::schedule_all(&mut st);
    let (r0, r1) = (f.find("R0").unwrap(), f.find("R1").unwrap());
    let ports: Vec<(NodeId, u8)> = st
        .lids
        .base
        .iter()
        .flat_map(|(&n, ps)| ps.keys().map(move |p| (n, p.0)))
        .collect();
    let mut entries = Vec::new();
    for &(s, p) in &ports {
        for &(dn, dp) in &ports {
            let d = st.lids.get(dn, PortNum(dp)).unwrap();
            let w = weft_verifier::reference::walk(&st, s, p, d, 0);
            if w.hops
                .iter()
                .any(|h| (h.node, h.out) == (r0, 1) || (h.node, h.out) == (r1, 2))
            {
                entries.push((weft_fabric::PortRef::new(s, p), d, SlSet(0b10)));
            }
        }
    }
    assert!(!entries.is_empty());
    st.path_sl.set_by_source(entries);
    st
}

#[test]
fn vls_come_from_sl2vl_and_path_sl() {
    let f = testkit::ring(4, 1);
    let st = testkit::route_minhop(&f, testkit::sequential_lids(&f));
    assert_eq!(
        verify(&st, &Options::default()).verdict.deadlock_free,
        Outcome::Violated
    );
    let st = dateline_ring();
    proven_with_certificate(&st, &Options::default());
    // Both SLs possible for every pair: the loop is back, on VL 0.
    let mut both = st.clone();
    both.path_sl.by_source.clear();
    both.path_sl.default = SlSet(0b11);
    let r = verify(&both, &Options::default());
    assert_eq!(r.verdict.deadlock_free, Outcome::Violated);
    replay_all(&both, &r);
    assert!(r
        .credit_loops
        .iter()
        .any(|l| l.channels.iter().all(|c| c.vl == 0)));
    assert!(r
        .credit_loops
        .iter()
        .any(|l| l.channels.iter().all(|c| c.vl == 1)));
}

/// The dateline ring with every cabled port's arbitration replaced by `arb`.
fn dateline_with(arb: weft_fabric::VlArb) -> FabricState {
    let mut st = dateline_ring();
    for p in st.ports.values_mut() {
        if p.vlarb.is_some() {
            p.vlarb = Some(arb.clone());
        }
    }
    st
}

fn weights(entries: &[(u8, u8)]) -> Vec<weft_fabric::VlWeight> {
    entries
        .iter()
        .map(|&(vl, weight)| weft_fabric::VlWeight { vl, weight })
        .collect()
}

/// What the engines say of a state whose arbitration stops a VL: not connected (deadlock
/// freedom still proven: the hops a route takes before it stops are real), the same verdict
/// from z3, every witness replayed on the tables, every failed route's reason
/// `VlNotScheduled` or `VlAboveMaxVls` naming a port and `vl`, and the certificate of the
/// dateline ring (same topology and LIDs) refused for this state.
fn stopped_on(st: &FabricState, vl: u8) -> Report {
    let r = verify(st, &Options::default());
    assert_eq!(r.verdict.connected, Outcome::Violated, "{:#?}", r.verdict);
    assert_eq!(r.verdict.deadlock_free, Outcome::Proven);
    assert!(r.certificate.is_none());
    replay_all(st, &r);
    let z = weft_verifier::z3::Z3 { timeout_ms: 60_000 }
        .run(&testkit::valid(st.clone()), &Options::default());
    assert_eq!(z.verdict, r.verdict, "z3 agrees");
    assert_eq!(z.failed_routes as u64, r.failed_routes);
    let listed = r.listed_failures();
    assert!(!listed.is_empty());
    for f in listed {
        match f.reason {
            weft_verifier::FailureReason::VlNotScheduled { vl: v, .. }
            | weft_verifier::FailureReason::VlAboveMaxVls { vl: v, .. } => {
                assert_eq!(v, vl, "{f:?}")
            }
            other => panic!("unexpected reason {other:?}"),
        }
    }
    let cert = proven_with_certificate(&dateline_ring(), &Options::default());
    let refused = certificate::check(st, &cert).unwrap_err();
    let text = refused.to_string();
    assert!(
        text.contains(&format!("VL {vl}")) || text.contains("not scheduled"),
        "{text}"
    );
    r
}

/// Finding: the arbitration tables never schedule a class's only VL. The dateline's SL 1 runs
/// on VL 1, which no port's table names: every route on SL 1 stops at its first hop, and the
/// witness names the port and VL 1.
#[test]
fn a_vl_no_arbitration_table_names_is_not_connected() {
    let st = dateline_with(weft_fabric::VlArb {
        high_limit: 0,
        high: weights(&[(0, 8)]),
        low: weights(&[(2, 4), (3, 4)]),
    });
    let r = stopped_on(&st, 1);
    let w = &r.failures[0].witnesses[0];
    assert!(
        matches!(
            w.reason,
            weft_verifier::FailureReason::VlNotScheduled {
                vl: 1,
                why: weft_verifier::Unscheduled::NotListed,
                ..
            }
        ),
        "{w:?}"
    );
    assert!(
        w.reason.describe().contains("do not name VL 1"),
        "{}",
        w.reason.describe()
    );
}

/// Finding: every weight 0. VL 0 and VL 1 are named, every entry of weight 0: nothing leaves
/// any port, every route stops at its first hop on VL 0 (SL 0) or VL 1 (SL 1).
#[test]
fn every_weight_zero_is_not_connected() {
    let st = dateline_with(weft_fabric::VlArb {
        high_limit: 255,
        high: weights(&[(0, 0), (1, 0)]),
        low: weights(&[(0, 0), (1, 0)]),
    });
    let r = verify(&st, &Options::default());
    assert_eq!(r.verdict.connected, Outcome::Violated);
    replay_all(&st, &r);
    // Every route fails, and where it starts.
    assert_eq!(r.failed_routes, r.stats.routes);
    assert!(r.failures.iter().all(|p| p.at_source));
    assert!(r.listed_failures().iter().all(|f| matches!(
        f.reason,
        weft_verifier::FailureReason::VlNotScheduled {
            why: weft_verifier::Unscheduled::ZeroWeight,
            ..
        }
    )));
    let z = weft_verifier::z3::Z3::default().run(&testkit::valid(st.clone()), &Options::default());
    assert_eq!(z.verdict, r.verdict);
}

/// Finding: an SL mapped to a VL in no arbitration table and above the VLs the SM operates.
/// SL 1 runs on VL 1; the tables name VL 0 only and `max_vls` is 1: not connected, the
/// witness names the port and VL 1 (above max_vls, checked first). With VL 1 in every table
/// but `max_vls` still 1, the same; with `max_vls` 2, proven again.
#[test]
fn a_vl_above_max_vls_is_not_connected() {
    let mut st = dateline_with(weft_fabric::VlArb {
        high_limit: 0,
        high: Vec::new(),
        low: weights(&[(0, 1)]),
    });
    st.max_vls = Some(1);
    let r = stopped_on(&st, 1);
    assert!(
        r.listed_failures().iter().all(|f| matches!(
            f.reason,
            weft_verifier::FailureReason::VlAboveMaxVls {
                vl: 1,
                max_vls: 1,
                ..
            }
        )),
        "{:#?}",
        r.listed_failures()
    );
    let mut st = dateline_ring();
    st.max_vls = Some(1);
    stopped_on(&st, 1);
    st.max_vls = Some(2);
    proven_with_certificate(&st, &Options::default());
}

/// A port without a VL arbitration table sends VL 0 only: the dateline ring with the tables
/// of one switch's ports removed stops SL 1 there (why: no table), and SL 0 still goes.
#[test]
fn a_port_without_a_table_sends_vl0_only() {
    let mut st = dateline_ring();
    let r1 = st.fabric.find("R1").unwrap();
    for (r, p) in st.ports.iter_mut() {
        if r.node == r1 {
            p.vlarb = None;
        }
    }
    let r = stopped_on(&st, 1);
    assert!(r.listed_failures().iter().all(|f| f.at.name == "R1"
        && matches!(
            f.reason,
            weft_verifier::FailureReason::VlNotScheduled {
                vl: 1,
                why: weft_verifier::Unscheduled::NoTable,
                ..
            }
        )));
    // Without SL 1 (every route on SL 0, VL 0): no table anywhere is fine for connectivity.
    let mut plain = st.clone();
    plain.path_sl.by_source.clear();
    for p in plain.ports.values_mut() {
        p.vlarb = None;
    }
    let r = verify(&plain, &Options::default());
    assert_eq!(r.verdict.connected, Outcome::Proven);
}

#[test]
fn vl_above_cap_and_vl15_are_failures() {
    let f = testkit::fat_tree2(2, 2, 1);
    let mut st = testkit::route_updown(&f, testkit::sequential_lids(&f));
    let h = f.find("H1").unwrap();
    let mut t = [0u8; 16];
    t[0] = 15;
    st.set_node_injection(h, t);
    let r = verify(&st, &Options::default());
    assert_eq!(r.verdict.connected, Outcome::Violated);
    assert!(r.listed_failures().iter().all(|f| f.at.name == "H1"));
    assert!(r.failures.iter().all(|p| p.at_source));
    replay_all(&st, &r);
    t[0] = 8; // VLCap is 8: VLs 0..=7
    st.set_node_injection(h, t);
    let r = verify(&st, &Options::default());
    assert!(matches!(
        r.listed_failures().first().map(|f| f.reason),
        Some(weft_verifier::FailureReason::VlNotOperational {
            vl: 8,
            vl_cap: 8,
            ..
        })
    ));
    replay_all(&st, &r);
}

#[test]
fn down_links_and_scopes() {
    let f = testkit::fat_tree2(2, 2, 2);
    let st = testkit::route_updown(&f, testkit::sequential_lids(&f));
    // Take a leaf-spine link down without rerouting: routes through it fail there.
    let mut b = weft_fabric::FabricBuilder::from(st.fabric.clone());
    let l = st
        .fabric
        .links()
        .iter()
        .position(|l| st.fabric.node(l.a.node).is_switch() && st.fabric.node(l.b.node).is_switch())
        .unwrap();
    b.set_link_down(weft_fabric::LinkId(l as u32));
    let mut broken = st.clone();
    broken.fabric = b.finish();
    let r = verify(&broken, &Options::default());
    assert_eq!(r.verdict.connected, Outcome::Violated);
    assert!(r
        .failures
        .iter()
        .any(|p| p.reason == weft_verifier::FailureKind::PortDown));
    replay_all(&broken, &r);
}

/// Corrupting any single LFT entry in a way that breaks a route is caught, with a witness.
#[test]
fn every_breaking_single_lft_corruption_is_caught() {
    let fabrics = [testkit::fat_tree2(2, 3, 2), testkit::ring(4, 1)];
    let mut caught = 0;
    for f in fabrics {
        let st = testkit::route_updown(&f, testkit::sequential_lids(&f));
        assert!(verify(&st, &Options::default()).is_proven());
        let max = st.lids.max_lid(&st.fabric);
        let switches: Vec<NodeId> = st.switches.keys().copied().collect();
        for &x in &switches {
            let ports = st.fabric.node(x).spec.port_count;
            for lid in 1..=max {
                for port in (0..=ports + 1).chain([255]) {
                    let mut c = st.clone();
                    if c.switches[&x].lft.get(Lid(lid)) == Some(PortNum(port))
                        || (port == 255 && c.switches[&x].lft.get(Lid(lid)).is_none())
                    {
                        continue;
                    }
                    c.switches
                        .get_mut(&x)
                        .unwrap()
                        .lft
                        .set(Lid(lid), PortNum(port));
                    let r = verify(&c, &Options::default());
                    // Does the corruption break a route? Ask the reference semantics.
                    let breaks = reference_breaks(&c);
                    assert_eq!(
                        r.verdict.connected == Outcome::Violated,
                        breaks,
                        "switch {x:?} lid {lid} port {port}"
                    );
                    if breaks {
                        caught += 1;
                        assert!(!r.failures.is_empty());
                    }
                    replay_all(&c, &r);
                }
            }
        }
    }
    assert!(caught > 100, "only {caught} breaking corruptions");
}

fn reference_breaks(st: &FabricState) -> bool {
    let mut srcs = Vec::new();
    for (&n, ports) in &st.lids.base {
        for &p in ports.keys() {
            srcs.push((n, p.0));
        }
    }
    for &(s, p) in &srcs {
        for &(dn, dp) in &srcs {
            if (s, p) == (dn, dp) {
                continue;
            }
            let d = st.lids.get(dn, PortNum(dp)).unwrap();
            for sl in st.path_sls(weft_fabric::PortRef::new(s, p), d).iter() {
                if weft_verifier::reference::walk(st, s, p, d, sl.0)
                    .failure
                    .is_some()
                {
                    return true;
                }
            }
        }
    }
    false
}

#[test]
fn random_corruptions_replay() {
    let mut rng = Rng(7);
    for _ in 0..200 {
        let f = testkit::random_fabric(&mut rng, 5, 3, 5, 6);
        let mut st = testkit::route_updown(&f, testkit::sequential_lids(&f));
        assert!(verify(&st, &Options::default()).is_proven());
        testkit::corrupt(&mut rng, &mut st);
        let r = verify(&st, &Options::default());
        replay_all(&st, &r);
        if r.is_proven() {
            let cert = r.certificate.unwrap();
            certificate::check(&st, &cert).unwrap();
        }
    }
}

/// Reports and certificates are byte-identical at any thread count.
#[test]
fn output_does_not_depend_on_threads() {
    let run = |threads: usize, st: &FabricState| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let r = verify(st, &Options::default());
            (
                serde_json::to_string(&r).unwrap(),
                r.certificate.map(|c| c.to_json()),
            )
        })
    };
    let f = testkit::fat_tree2(3, 6, 3);
    let st = testkit::route_updown(&f, testkit::sequential_lids(&f));
    assert_eq!(run(1, &st), run(3, &st));
    let mut rng = Rng(11);
    for _ in 0..20 {
        let f = testkit::random_fabric(&mut rng, 6, 4, 6, 6);
        let mut st = testkit::route_minhop(&f, testkit::sequential_lids(&f));
        testkit::corrupt(&mut rng, &mut st);
        assert_eq!(run(1, &st), run(4, &st));
    }
}

/// With LMC 2 every end-node port owns four LIDs; each is a destination of its own.
#[test]
fn every_lmc_lid_is_a_destination() {
    let mut b = weft_fabric::FabricBuilder::from(testkit::fat_tree2(2, 3, 2));
    b.set_lmc(2);
    let f = b.finish();
    let st = testkit::route_updown(&f, testkit::sequential_lids(&f));
    let r = verify(&st, &Options::default());
    assert!(r.is_proven());
    assert_eq!(r.stats.destinations, 5 + 6 * 4);
    // Break one of the extra LIDs of H1 only.
    let h1 = f.find("H1").unwrap();
    let base = st.lids.get(h1, PortNum(1)).unwrap();
    let mut broken = st.clone();
    let l1 = f.find("L1").unwrap();
    broken
        .switches
        .get_mut(&l1)
        .unwrap()
        .lft
        .set(Lid(base.0 + 3), PortNum(255));
    let r = verify(&broken, &Options::default());
    assert_eq!(r.verdict.connected, Outcome::Violated);
    assert!(r
        .listed_failures()
        .iter()
        .all(|f| f.dlid == Lid(base.0 + 3)));
    replay_all(&broken, &r);
}
