//! The certificate checker trusts nothing but the state: generated (fabric, state, tamper)
//! cases where an honest certificate of a proven state, the state, or both are changed in one
//! place. The checker may accept only when the explicit engine proves the (possibly changed)
//! state for the same scope; an untouched certificate of a proven state is always accepted.
//!
//! `WEFT_TAMPER_CASES=N` runs more cases than the default.

#![expect(
    clippy::print_stderr,
    reason = "test helpers say on the terminal what they skipped or measured"
)]
use weft_formats::state_json::ToJson;

use weft_fabric::{FabricState, Lid, NodeId, PortRef, ValidState};
use weft_verifier::certificate::{self, NO_LABEL};
use weft_verifier::testkit::{self, Rng};
use weft_verifier::{verify, Certificate, Options, Property, Request, Scope};

/// A random proven state: a small fabric (random graph, ring or two-level tree) routed
/// up/down, sometimes with two VLs and SL sets that keep it proven.
fn proven_case(rng: &mut Rng) -> (ValidState, Scope) {
    loop {
        let f = testkit::small_fabric(rng);
        let mut st = testkit::route_updown(&f, testkit::sequential_lids(&f));
        if rng.below(3) == 0 {
            // Every SL on its own VL mod 2, path SLs {0, 1}: still up/down on each VL.
            let mut t = [0u8; 16];
            for (s, v) in t.iter_mut().enumerate() {
                *v = (s % 2) as u8;
            }
            for s in st.switches.values_mut() {
                let ports = 8;
                for i in 0..=ports {
                    for o in 1..=ports {
                        s.sl2vl.push(weft_fabric::Sl2VlRow {
                            in_port: i,
                            out_port: o,
                            vl: t,
                        });
                    }
                }
            }
            for (i, n) in st.fabric.clone().nodes().iter().enumerate() {
                if !n.is_switch() {
                    st.set_node_injection(NodeId(i as u32), t);
                }
            }
            st.path_sl.default = weft_fabric::SlSet(0b11);
            testkit::schedule_all(&mut st);
            if rng.below(2) == 0 {
                // By source switch: any non-empty subset of {0, 1} keeps it proven.
                let max_lid = st.lids.max_lid(&st.fabric);
                let switches: Vec<NodeId> = st.switches.keys().copied().collect();
                let mut triples = Vec::new();
                for &x in &switches {
                    for lid in 1..=max_lid {
                        if rng.below(2) == 0 {
                            let sls = weft_fabric::SlSet(1 + rng.below(3) as u16);
                            triples.push((x, Lid(lid), sls));
                        }
                    }
                }
                st.path_sl.set_by_switch(triples);
            }
        }
        let Ok(st) = ValidState::new(st) else {
            continue;
        };
        let scope = if rng.below(4) == 0 {
            Scope::HcaToHca
        } else {
            Scope::All
        };
        let r = verify(
            &st,
            &Options {
                scope,
                ..Options::default()
            },
        );
        if r.is_proven() {
            return (st, scope);
        }
    }
}

/// One change to the state; `false` when none applies.
fn tamper_state(rng: &mut Rng, st: &mut FabricState) -> bool {
    if rng.below(5) == 0 {
        // An end port's injection VL.
        let ports: Vec<PortRef> = st
            .lids
            .base
            .iter()
            .filter(|(n, _)| !st.fabric.node(**n).is_switch())
            .flat_map(|(&n, ps)| ps.keys().map(move |&p| PortRef { node: n, port: p }))
            .collect();
        let Some(&p) = ports.get(rng.below(ports.len() as u64) as usize) else {
            return false;
        };
        let mut t = st.ports.get(&p).and_then(|x| x.sl2vl).unwrap_or([0; 16]);
        let sl = rng.below(16) as usize;
        t[sl] = [15, 8, 1, 2][rng.below(4) as usize];
        st.ports.entry(p).or_default().sl2vl = Some(t);
        return true;
    }
    if rng.below(6) == 0 {
        // VL arbitration: new tables, some port perhaps no longer sending a VL.
        testkit::arbitrate(rng, st);
        return true;
    }
    testkit::corrupt(rng, st).is_some()
}

/// One change to the certificate; a short name of what was changed.
fn tamper_cert(rng: &mut Rng, c: &mut Certificate) -> &'static str {
    match rng.below(12) {
        0..=3 => {
            // A label: to 0, to none, one up, one down, or anything.
            let n = c.connected.destinations.len() as u64;
            let Some(d) = c.connected.destinations.get_mut(rng.below(n) as usize) else {
                return "nothing";
            };
            let k = rng.below(d.labels.len() as u64) as usize;
            if let Some(l) = d.labels.get_mut(k) {
                *l = match rng.below(5) {
                    0 => 0,
                    1 => NO_LABEL,
                    2 => l.wrapping_add(1),
                    3 => l.wrapping_sub(1),
                    _ => rng.below(8) as u16,
                };
            }
            "label"
        }
        4 | 5 => {
            let n = c.deadlock_free.channels.len() as u64;
            if let Some(ch) = c.deadlock_free.channels.get_mut(rng.below(n) as usize) {
                ch.3 = match rng.below(3) {
                    0 => 0,
                    1 => ch.3.wrapping_add(1),
                    _ => rng.below(64) as u32,
                };
            }
            "rank"
        }
        6 => {
            let n = c.deadlock_free.channels.len() as u64;
            if n > 0 {
                c.deadlock_free.channels.remove(rng.below(n) as usize);
            }
            "channel removed"
        }
        7 => {
            let n = c.connected.switches.len();
            if n >= 2 {
                let a = rng.below(n as u64) as usize;
                let b = (a + 1) % n;
                c.connected.switches.swap(a, b);
            }
            "switch order"
        }
        8 => {
            let n = c.connected.destinations.len() as u64;
            if let Some(d) = c.connected.destinations.get_mut(rng.below(n) as usize) {
                d.lid = d.lid.wrapping_add(1 + rng.below(3) as u16);
            }
            "destination LID"
        }
        9 => {
            c.scope = match c.scope {
                Scope::All => Scope::HcaToHca,
                _ => Scope::All,
            };
            "scope"
        }
        10 => {
            c.properties.retain(|&p| p != Property::Connected);
            "properties"
        }
        _ => {
            c.fingerprint.lids = "0".repeat(64);
            "fingerprint"
        }
    }
}

#[test]
fn tampered_certificates_and_states_are_accepted_only_when_proven() {
    let cases: u64 = std::env::var("WEFT_TAMPER_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_400);
    let mut rng = Rng(0x7a3e);
    let (mut accepted, mut rejected, mut honest) = (0u64, 0u64, 0u64);
    let mut broken_state_rejected = 0u64;
    for n in 0..cases {
        let (st, scope) = proven_case(&mut rng);
        let opts = Options {
            scope,
            ..Options::default()
        };
        let req = Request {
            scope,
            ..Request::default()
        };
        let honest_cert = verify(&st, &opts).certificate.expect("proven");
        // Completeness: the honest certificate is accepted.
        certificate::check(&st, &honest_cert, &req)
            .unwrap_or_else(|e| panic!("case {n}: honest certificate refused: {e}"));
        honest += 1;
        // One change: to the state, to the certificate, or to both.
        let mode = rng.below(3);
        let mut state = st.clone().into_inner();
        let mut cert = honest_cert.clone();
        let mut what = "state";
        if mode != 1 && !tamper_state(&mut rng, &mut state) {
            continue;
        }
        if mode != 0 {
            what = tamper_cert(&mut rng, &mut cert);
        }
        let Ok(state) = ValidState::new(state) else {
            continue;
        };
        // The certificate also goes through JSON, as it would from a file.
        let cert = match Certificate::from_json(&cert.to_json()) {
            Ok(c) => c,
            Err(_) => {
                rejected += 1;
                continue;
            }
        };
        let verdict = certificate::check(&state, &cert, &req);
        let truth = verify(&state, &opts);
        match verdict {
            Ok(_) => {
                accepted += 1;
                assert!(
                    truth.is_proven(),
                    "case {n} ({what}, mode {mode}): the checker accepted a certificate for a \
                     state the explicit engine does not prove: {:?}\nstate: {}",
                    truth.verdict,
                    state.to_json()
                );
            }
            Err(_) => {
                rejected += 1;
                if !truth.is_proven() {
                    broken_state_rejected += 1;
                }
            }
        }
    }
    eprintln!(
        "{cases} cases: {honest} honest certificates accepted; tampered: {accepted} accepted \
         (all on proven states), {rejected} rejected ({broken_state_rejected} of them on states \
         the explicit engine does not prove)"
    );
    assert!(
        accepted + rejected >= 2_000 || cases < 2_400,
        "too few tampered cases ran"
    );
    assert!(
        rejected > cases / 4,
        "the tampers must bite: {rejected} rejected"
    );
    assert!(
        broken_state_rejected > cases / 10,
        "{broken_state_rejected}"
    );
    assert!(
        accepted > 0,
        "some tampers keep a valid proof (e.g. a rank raised)"
    );
}

/// The finding of the issue, in miniature: the last switch before a host sends the host's
/// SL on VL 15 (every route to it fails), and the switch's label for that LID is set to 0.
/// Label 0 is only for the switch owning the destination, so the certificate is refused.
#[test]
fn a_last_hop_label_of_zero_does_not_hide_a_dead_last_hop() {
    let f = testkit::fat_tree2(2, 2, 2);
    let st = testkit::valid(testkit::route_updown(&f, testkit::sequential_lids(&f)));
    let cert = verify(&st, &Options::default()).certificate.unwrap();
    let h1 = f.find("H1").unwrap();
    let lid = st.lids.get(h1, weft_fabric::PortNum(1)).unwrap();
    let (leaf, port) = {
        let (peer, _) = f.peer(PortRef::new(h1, 1)).unwrap();
        (peer.node, peer.port.0)
    };
    let mut broken = st.clone().into_inner();
    let s = broken.switches.get_mut(&leaf).unwrap();
    for i in 0..=f.node(leaf).spec.port_count {
        let mut vl = [0u8; 16];
        if i != port {
            vl[0] = 15;
        }
        s.sl2vl.push(weft_fabric::Sl2VlRow {
            in_port: i,
            out_port: port,
            vl,
        });
        for o in 1..=f.node(leaf).spec.port_count {
            if o != port {
                s.sl2vl.push(weft_fabric::Sl2VlRow {
                    in_port: i,
                    out_port: o,
                    vl: [0; 16],
                });
            }
        }
    }
    let broken = testkit::valid(broken);
    assert!(!verify(&broken, &Options::default()).is_proven());
    // The honest certificate is refused at the last hop.
    let e = certificate::check(&broken, &cert, &Request::default()).unwrap_err();
    assert!(e.to_string().contains("VL 15"), "{e}");
    // And so is the tampered one, with label 0 at the leaf.
    let mut tampered = cert.clone();
    let k = tampered
        .connected
        .switches
        .iter()
        .position(|g| *g == format!("{:#018x}", f.node(leaf).guid().0))
        .unwrap();
    for d in &mut tampered.connected.destinations {
        if d.lid == lid.0 {
            d.labels[k] = 0;
        }
    }
    let e = certificate::check(&broken, &tampered, &Request::default()).unwrap_err();
    insta::assert_snapshot!(e.to_string(), @"toward LID 5, `L1` has label 0 but does not own the destination");
    // Every leaf's last-hop labels at 0: refused too.
    let mut all_zero = cert.clone();
    for d in &mut all_zero.connected.destinations {
        for l in &mut d.labels {
            if *l == 1 {
                *l = 0;
            }
        }
    }
    assert!(certificate::check(&st, &all_zero, &Request::default()).is_err());
    let _ = Lid(0);
}

#[test]
fn scope_and_fabric_mismatches_are_refused_with_the_reason() {
    let f = testkit::fat_tree2(2, 2, 2);
    let st = testkit::valid(testkit::route_updown(&f, testkit::sequential_lids(&f)));
    let hca = Options {
        scope: Scope::HcaToHca,
        ..Options::default()
    };
    let cert = verify(&st, &hca).certificate.unwrap();
    let e = certificate::check(&st, &cert, &Request::default()).unwrap_err();
    insta::assert_snapshot!(e.to_string(), @"the certificate covers `hca-to-hca` pairs, but `all` pairs were asked for");
    // An `all` certificate covers `hca-to-hca`.
    let all = verify(&st, &Options::default()).certificate.unwrap();
    let s = certificate::check(
        &st,
        &all,
        &Request {
            scope: Scope::HcaToHca,
            ..Request::default()
        },
    )
    .unwrap();
    assert_eq!(s.scope, Scope::All);
    // Another fabric with the same GUIDs: one more link.
    let g = testkit::fat_tree2(3, 2, 2);
    let other = testkit::valid(testkit::route_updown(&g, testkit::sequential_lids(&g)));
    let e = certificate::check(&other, &all, &Request::default()).unwrap_err();
    insta::assert_snapshot!(e.to_string(), @"the certificate is for another fabric: the topology differs: expected 8 live nodes and 8 live links, found 9 and 10");
    // The same topology with other LIDs.
    let mut relid = st.clone().into_inner();
    let h = f.find("H2").unwrap();
    let port = weft_fabric::PortNum(1);
    let old = relid.lids.get(h, port).unwrap();
    relid
        .lids
        .base
        .get_mut(&h)
        .unwrap()
        .insert(port, Lid(old.0 + 100));
    let relid = testkit::valid(relid);
    let e = certificate::check(&relid, &all, &Request::default()).unwrap_err();
    assert!(e.to_string().contains("the LIDs differ"), "{e}");
    // A version 1 certificate is refused with what to do.
    let e = Certificate::from_json(r#"{"format":"weft-certificate","version":1}"#).unwrap_err();
    insta::assert_snapshot!(e.to_string(), @"a version 1 certificate; this weft reads version 2");
}
