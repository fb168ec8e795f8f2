//! `isolated` against a reference written apart from it: every pair of end ports enumerated,
//! "the tables let them talk" and "a declared partition allows them" decided pair by pair
//! from the IBA rule. Random fabrics, random declared partitions (full and limited members),
//! tables derived from them and then damaged at random (a key added, dropped, its membership
//! bit flipped, a table removed). The checker must count exactly the reference's breaking
//! pairs, and every breach it lists must break as it says. A certificate claiming `isolated`
//! is accepted exactly when the reference finds no breach.
//!
//! `WEFT_ISOLATION_CASES=N` runs more cases than the default.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use weft_fabric::{FabricState, Membership, PKey, Partition, PortRef, ValidState};
use weft_verifier::testkit::{self, Rng};
use weft_verifier::{certificate, isolation, BreachKind, Options, Outcome, Property, Request};

/// Whether two tables let their ports talk (the IBA rule, spelled out: a key of the same
/// partition on both sides, partition 0 never matching, and one side a full member).
fn talk(a: &[PKey], b: &[PKey]) -> bool {
    a.iter().any(|x| {
        b.iter()
            .any(|y| x.base() == y.base() && x.base() != 0 && (x.is_full() || y.is_full()))
    })
}

/// Whether a declared partition allows the pair.
fn allowed(parts: &[Partition], a: PortRef, b: PortRef) -> bool {
    parts
        .iter()
        .any(|p| match (p.members.get(&a), p.members.get(&b)) {
            (Some(x), Some(y)) => *x == Membership::Full || *y == Membership::Full,
            _ => false,
        })
}

fn table(st: &FabricState, r: PortRef) -> Vec<PKey> {
    st.ports
        .get(&r)
        .and_then(|p| p.pkeys.clone())
        .unwrap_or(vec![PKey::DEFAULT])
}

/// End-node ports with a LID.
fn end_ports(st: &FabricState) -> Vec<PortRef> {
    st.lids
        .base
        .iter()
        .filter(|(&n, _)| !st.fabric.node(n).is_switch())
        .flat_map(|(&n, ps)| ps.keys().map(move |&p| PortRef { node: n, port: p }))
        .collect()
}

/// Every pair of end ports with a LID that breaks the declared partitions: (leaks, cuts).
fn reference(st: &FabricState) -> (u64, u64) {
    let ports = end_ports(st);
    let (mut leaks, mut cuts) = (0, 0);
    for (i, &a) in ports.iter().enumerate() {
        for &b in &ports[i + 1..] {
            match (
                talk(&table(st, a), &table(st, b)),
                allowed(&st.partitions, a, b),
            ) {
                (true, false) => leaks += 1,
                (false, true) => cuts += 1,
                _ => {}
            }
        }
    }
    (leaks, cuts)
}

/// A random routed fabric with random declared partitions and the tables they call for.
fn case(rng: &mut Rng) -> FabricState {
    let f = testkit::fat_tree2(
        1 + rng.below(2) as usize,
        2 + rng.below(3) as usize,
        1 + rng.below(4) as usize,
    );
    let lids = testkit::sequential_lids(&f);
    let mut st = testkit::route_updown(&f, lids);
    let hosts = end_ports(&st);
    let n = 1 + rng.below(4) as u16;
    let mut parts: Vec<Partition> = (0..n)
        .map(|i| Partition {
            name: format!("p{i}"),
            pkey: 1 + i * 3,
            members: BTreeMap::new(),
            vms: BTreeMap::new(),
            class: None,
        })
        .collect();
    for &h in &hosts {
        for p in &mut parts {
            match rng.below(4) {
                0 => {
                    p.members.insert(h, Membership::Full);
                }
                1 => {
                    p.members.insert(h, Membership::Limited);
                }
                _ => {}
            }
        }
    }
    for &h in &hosts {
        let mut keys = vec![PKey(0x7fff)];
        keys.extend(
            parts
                .iter()
                .filter_map(|p| p.members.get(&h).map(|m| m.pkey(p.pkey))),
        );
        st.ports.entry(h).or_default().pkeys = Some(keys);
    }
    st.partitions = parts;
    // Damage a few tables.
    for _ in 0..rng.below(4) {
        let h = hosts[rng.below(hosts.len() as u64) as usize];
        let t = st.ports.entry(h).or_default();
        let keys = t.pkeys.get_or_insert_with(Vec::new);
        match rng.below(5) {
            0 => {
                let base = 1 + rng.below(u64::from(n) * 3) as u16;
                let k = PKey(base | if rng.below(2) == 0 { 0x8000 } else { 0 });
                if !keys.iter().any(|x| x.base() == k.base()) {
                    keys.push(k);
                }
            }
            1 if !keys.is_empty() => {
                keys.remove(rng.below(keys.len() as u64) as usize);
            }
            2 if !keys.is_empty() => {
                let i = rng.below(keys.len() as u64) as usize;
                keys[i] = PKey(keys[i].0 ^ 0x8000);
            }
            3 => t.pkeys = None,
            _ => {
                keys.retain(|x| x.base() != 0x7fff);
                keys.push(PKey::DEFAULT);
            }
        }
        if let Some(k) = &mut t.pkeys {
            // One key per partition (the state forbids two).
            let mut seen = Vec::new();
            k.retain(|x| {
                let fresh = !seen.contains(&x.base());
                seen.push(x.base());
                fresh
            });
        }
    }
    st
}

#[test]
fn isolation_matches_the_pairwise_reference() {
    let cases: u64 = std::env::var("WEFT_ISOLATION_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut rng = Rng(0x150_1a7e);
    let (mut proven, mut violated) = (0, 0);
    for k in 0..cases {
        let st = case(&mut rng);
        let (leaks, cuts) = reference(&st);
        let v = ValidState::new(st).unwrap_or_else(|e| panic!("case {k}: {e}"));
        let iso = isolation::check(&v, usize::MAX);
        assert_eq!(iso.pairs, leaks + cuts, "case {k}: {iso:?}");
        let by_kind = |leak: bool| -> u64 {
            iso.breaches
                .iter()
                .filter(|b| matches!(b.kind, BreachKind::Leak { .. }) == leak)
                .map(|b| b.pairs)
                .sum()
        };
        assert_eq!((by_kind(true), by_kind(false)), (leaks, cuts), "case {k}");
        for b in &iso.breaches {
            let (a, c) = (
                PortRef::new(b.a.node.id, b.a.port),
                PortRef::new(b.b.node.id, b.b.port),
            );
            assert!(a < c, "case {k}: the lower port first");
            let t = talk(&table(&v, a), &table(&v, c));
            let ok = allowed(&v.partitions, a, c);
            match &b.kind {
                BreachKind::Leak { a_pkey, b_pkey } => {
                    assert!(t && !ok, "case {k}: {b:?}");
                    assert!(table(&v, a).contains(&PKey(*a_pkey)), "case {k}");
                    assert!(table(&v, c).contains(&PKey(*b_pkey)), "case {k}");
                }
                BreachKind::Cut { partition, .. } => {
                    assert!(!t && ok, "case {k}: {b:?}");
                    let p = v.partitions.iter().find(|p| &p.name == partition).unwrap();
                    assert!(p.members.contains_key(&a) && p.members.contains_key(&c));
                }
                BreachKind::OffClass { .. } => panic!("case {k}: no partition has a class here"),
            }
        }
        // The report and the certificate agree with the reference.
        let opts = Options {
            properties: Property::defaults(&v),
            ..Options::default()
        };
        let r = weft_verifier::verify(&v, &opts);
        let expected = if leaks + cuts == 0 {
            Outcome::Proven
        } else {
            Outcome::Violated
        };
        assert_eq!(r.verdict.isolated, Some(expected.clone()), "case {k}");
        if expected == Outcome::Proven {
            proven += 1;
            let c = r.certificate.expect("a proven state has a certificate");
            let req = Request {
                properties: opts.properties.clone(),
                ..Request::default()
            };
            certificate::check(&v, &c, &req).unwrap_or_else(|e| panic!("case {k}: {e}"));
        } else {
            violated += 1;
        }
    }
    assert!(
        proven > 10 && violated > 10,
        "{proven} proven, {violated} violated"
    );
}

/// A certificate of a proven state, replayed on the same state with one table made to leak,
/// is refused naming the pair.
#[test]
fn certificate_refused_when_a_table_leaks() {
    let mut rng = Rng(7);
    // Every host made a full member of the default partition: hosts of different
    // partitions talk.
    let leak = |st: &FabricState| {
        let mut leaky = st.clone();
        for t in leaky.ports.values_mut() {
            if let Some(k) = &mut t.pkeys {
                k.retain(|x| x.base() != 0x7fff);
                k.push(PKey::DEFAULT);
            }
        }
        leaky
    };
    let (leaky, cert) = loop {
        let st = case(&mut rng);
        if reference(&st) != (0, 0) || reference(&leak(&st)).0 == 0 {
            continue;
        }
        let v = ValidState::new(st.clone()).unwrap();
        let opts = Options {
            properties: Property::defaults(&v),
            ..Options::default()
        };
        if let Some(c) = weft_verifier::verify(&v, &opts).certificate {
            break (leak(&st), c);
        }
    };
    let v = ValidState::new(leaky).unwrap();
    let req = Request {
        properties: Property::defaults(&v),
        ..Request::default()
    };
    let e = certificate::check(&v, &cert, &req).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("0xffff"), "{text}");
    assert!(text.contains("share no declared partition"), "{text}");
}

/// Without declared partitions, `isolated` is unknown (never proven) when asked, and not
/// asked by default.
#[test]
fn nothing_declared_is_unknown() {
    let f = testkit::fat_tree2(1, 2, 2);
    let st = testkit::valid(testkit::route_updown(&f, testkit::sequential_lids(&f)));
    assert_eq!(Property::defaults(&st), Property::ROUTES.to_vec());
    let opts = Options {
        properties: Property::ALL.to_vec(),
        ..Options::default()
    };
    let r = weft_verifier::verify(&st, &opts);
    assert!(matches!(r.verdict.isolated, Some(Outcome::Unknown(_))));
    assert!(!r.is_proven());
    assert!(r.certificate.is_none());
}
