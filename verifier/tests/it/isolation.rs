//! `isolated` against a reference written apart from it: every pair of end ports enumerated,
//! "the tables let them talk" and "a declared partition allows them" decided pair by pair
//! from the IBA rule. Random fabrics, random declared partitions (full and limited members),
//! tables derived from them and then damaged at random (a key added, dropped, its membership
//! bit flipped, a table removed). The checker must count exactly the reference's breaking
//! pairs, and every breach it lists must break as it says. A certificate claiming `isolated`
//! is accepted exactly when the reference finds no breach.
//!
//! The SM: in two cases of three the state says where it runs (one or two hosts, or a
//! switch's port 0), its hosts' tables holding the full default key (sometimes only the
//! limited one). The reference skips pairs with an SM port, counts end ports without a key of
//! the default partition and SM ports without the full default key; without an SM declared
//! the verdict is unknown where the tables are otherwise right.
//!
//! `WEFT_ISOLATION_CASES=N` runs more cases than the default.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

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

/// Every pair of end ports with a LID (neither of them an SM port) that breaks the declared
/// partitions: (leaks, cuts).
fn reference(st: &FabricState) -> (u64, u64) {
    let ports: Vec<PortRef> = end_ports(st)
        .into_iter()
        .filter(|r| !st.sm.contains(r))
        .collect();
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

/// The SM's breaches by the rule: (end ports with a LID, not the SM's, holding no key of the
/// default partition; SM ports not holding the full default key).
fn sm_reference(st: &FabricState) -> (u64, u64) {
    let unreachable = end_ports(st)
        .into_iter()
        .filter(|r| !st.sm.contains(r))
        .filter(|&r| !table(st, r).iter().any(|k| k.base() == 0x7fff))
        .count() as u64;
    let not_full = st
        .sm
        .iter()
        .filter(|&&r| !table(st, r).contains(&PKey::DEFAULT))
        .count() as u64;
    (unreachable, not_full)
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
    // Where the SM runs: not said, one or two hosts (full default members, or now and then
    // only limited ones), or a switch's port 0 (no table: the default key, full).
    match rng.below(6) {
        0 | 1 => {}
        2 => {
            let x = *st.switches.keys().next().unwrap();
            st.sm = vec![PortRef::new(x, 0)];
        }
        _ => {
            for _ in 0..1 + rng.below(2) {
                let h = hosts[rng.below(hosts.len() as u64) as usize];
                if !st.sm.contains(&h) {
                    st.sm.push(h);
                }
                if rng.below(5) != 0 {
                    let keys = st
                        .ports
                        .entry(h)
                        .or_default()
                        .pkeys
                        .get_or_insert_with(Vec::new);
                    keys.retain(|k| k.base() != 0x7fff);
                    keys.insert(0, PKey::DEFAULT);
                }
            }
        }
    }
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
    let (mut proven, mut violated, mut unknown) = (0, 0, 0);
    for k in 0..cases {
        let st = case(&mut rng);
        let (leaks, cuts) = reference(&st);
        let (unreachable, not_full) = sm_reference(&st);
        let v = ValidState::new(st).unwrap_or_else(|e| panic!("case {k}: {e}"));
        let iso = isolation::check(&v, usize::MAX);
        assert_eq!(iso.pairs, leaks + cuts, "case {k}: {iso:?}");
        assert_eq!(iso.sm_breaches, unreachable + not_full, "case {k}: {iso:?}");
        let by_kind = |kind: fn(&BreachKind) -> bool| -> u64 {
            iso.breaches
                .iter()
                .filter(|b| kind(&b.kind))
                .map(|b| b.pairs)
                .sum()
        };
        assert_eq!(
            (
                by_kind(|b| matches!(b, BreachKind::Leak { .. })),
                by_kind(|b| matches!(b, BreachKind::Cut { .. })),
                by_kind(|b| matches!(b, BreachKind::SmUnreachable)),
                by_kind(|b| matches!(b, BreachKind::SmNotFull { .. })),
            ),
            (leaks, cuts, unreachable, not_full),
            "case {k}"
        );
        for b in &iso.breaches {
            let (a, c) = (
                PortRef::new(b.a.node.id, b.a.port),
                PortRef::new(b.b.node.id, b.b.port),
            );
            let default_key = |r| table(&v, r).iter().any(|k| k.base() == 0x7fff);
            match &b.kind {
                BreachKind::SmUnreachable => {
                    assert!(!v.sm.contains(&a) && !default_key(a), "case {k}: {b:?}");
                    assert_eq!(Some(&c), v.sm.first().or(Some(&a)), "case {k}");
                    continue;
                }
                BreachKind::SmNotFull { pkey } => {
                    assert!(v.sm.contains(&a) && a == c, "case {k}: {b:?}");
                    assert!(!table(&v, a).contains(&PKey::DEFAULT), "case {k}");
                    assert_eq!(pkey.is_some(), default_key(a), "case {k}");
                    continue;
                }
                _ => {}
            }
            assert!(a < c, "case {k}: the lower port first");
            assert!(!v.sm.contains(&a) && !v.sm.contains(&c), "case {k}: {b:?}");
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
                other => panic!("case {k}: unexpected {other:?}"),
            }
        }
        // The report and the certificate agree with the reference.
        let opts = Options {
            properties: Property::defaults(&v),
            ..Options::default()
        };
        let r = weft_verifier::verify(&v, &opts);
        let clean = leaks + cuts + unreachable + not_full == 0;
        let expected = match (clean, v.sm.is_empty()) {
            (false, _) => Outcome::Violated,
            (true, false) => Outcome::Proven,
            (true, true) => {
                unknown += 1;
                assert_eq!(iso.outcome, Outcome::Proven, "case {k}");
                assert!(
                    matches!(&r.verdict.isolated, Some(Outcome::Unknown(why)) if why.contains("where the SM runs")),
                    "case {k}: {:?}",
                    r.verdict.isolated
                );
                assert!(r.certificate.is_none());
                continue;
            }
        };
        assert_eq!(iso.outcome, expected, "case {k}");
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
        proven > 10 && violated > 10 && unknown > 10,
        "{proven} proven, {violated} violated, {unknown} unknown"
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

/// Two tenants on a small tree as the compiler writes them: every host the limited default
/// key first, `a` (the first two hosts) on 0x8001 and `b` (the next two) on 0x8002, full; the
/// last host in no tenant. The SM is not declared.
fn tenants() -> (FabricState, Vec<PortRef>) {
    let f = testkit::fat_tree2(1, 2, 3);
    let mut st = testkit::route_updown(&f, testkit::sequential_lids(&f));
    let hosts = end_ports(&st);
    let mut parts = Vec::new();
    for (i, (name, pkey)) in [("a", 1u16), ("b", 2)].into_iter().enumerate() {
        let members: BTreeMap<PortRef, Membership> = hosts[2 * i..2 * i + 2]
            .iter()
            .map(|&h| (h, Membership::Full))
            .collect();
        for &h in members.keys() {
            st.ports.entry(h).or_default().pkeys = Some(vec![PKey(0x7fff), PKey(0x8000 | pkey)]);
        }
        parts.push(Partition {
            name: name.to_owned(),
            pkey,
            members,
            vms: BTreeMap::new(),
            class: None,
        });
    }
    for &h in &hosts[4..] {
        st.ports.entry(h).or_default().pkeys = Some(vec![PKey(0x7fff)]);
    }
    st.partitions = parts;
    (st, hosts)
}

fn isolated(st: &FabricState) -> (Option<Outcome>, isolation::Isolation) {
    let v = ValidState::new(st.clone()).unwrap();
    let opts = Options {
        properties: Property::defaults(&v),
        ..Options::default()
    };
    (
        weft_verifier::verify(&v, &opts).verdict.isolated,
        isolation::check(&v, 100),
    )
}

/// Finding: the SM ends up a limited member. The SM declared on the last host, whose table
/// holds the limited default key only (what OpenSM made of weft's old `partitions.conf`): no
/// end port can reach it, a breach naming the SM's port and its key. With the full key the
/// state is proven, and its many pairs with limited members are not leaks.
#[test]
fn an_sm_port_that_is_a_limited_member_is_a_finding() {
    let (mut st, hosts) = tenants();
    let sm = *hosts.last().unwrap();
    st.sm = vec![sm];
    let (verdict, iso) = isolated(&st);
    assert_eq!(verdict, Some(Outcome::Violated));
    assert_eq!(iso.sm_breaches, 1);
    let b = &iso.breaches[0];
    assert_eq!(b.kind, BreachKind::SmNotFull { pkey: Some(0x7fff) });
    assert_eq!((b.a.node.id, b.a.port), (sm.node, sm.port.0));
    assert!(
        b.describe().contains("only as limited member (0x7fff)"),
        "{}",
        b.describe()
    );
    // The SM's port a full member: proven, with a certificate; not one leak among its pairs.
    st.ports.get_mut(&sm).unwrap().pkeys = Some(vec![PKey::DEFAULT]);
    let (verdict, iso) = isolated(&st);
    assert_eq!(verdict, Some(Outcome::Proven), "{:?}", iso.breaches);
    assert_eq!((iso.pairs, iso.sm_breaches), (0, 0));
    assert_eq!(iso.sm.len(), 1);
    // The same full key on a port the SM does not run on is a leak to every limited member.
    let mut elsewhere = st.clone();
    elsewhere.sm = vec![hosts[0]];
    elsewhere.ports.get_mut(&hosts[0]).unwrap().pkeys = Some(vec![PKey::DEFAULT, PKey(0x8001)]);
    let (verdict, iso) = isolated(&elsewhere);
    assert_eq!(verdict, Some(Outcome::Violated));
    assert!(iso.breaches.iter().all(|b| matches!(
        b.kind,
        BreachKind::Leak { a_pkey: 0xffff, .. } | BreachKind::Leak { b_pkey: 0xffff, .. }
    )));
}

/// Finding: a host without a default-partition key cannot reach the SA. Declared SM or not,
/// it is a breach naming the host (and the SM's port when declared).
#[test]
fn a_host_without_a_default_key_is_a_finding() {
    let (mut st, hosts) = tenants();
    st.ports.get_mut(&hosts[0]).unwrap().pkeys = Some(vec![PKey(0x8001)]);
    let (verdict, iso) = isolated(&st);
    assert_eq!(verdict, Some(Outcome::Violated));
    let b = iso
        .breaches
        .iter()
        .find(|b| b.kind == BreachKind::SmUnreachable)
        .unwrap();
    assert_eq!((b.a.node.id, b.a.port), (hosts[0].node, hosts[0].port.0));
    assert!(
        b.describe().contains("wherever it runs"),
        "{}",
        b.describe()
    );
    let x = *st.switches.keys().next().unwrap();
    st.sm = vec![PortRef::new(x, 0)];
    let (verdict, iso) = isolated(&st);
    assert_eq!(verdict, Some(Outcome::Violated));
    assert_eq!(iso.sm_breaches, 1);
    let b = iso
        .breaches
        .iter()
        .find(|b| b.kind == BreachKind::SmUnreachable)
        .unwrap();
    assert_eq!((b.b.node.id, b.b.port), (x, 0), "the SM's port named");
    assert!(
        b.describe().contains("cannot reach the SM on"),
        "{}",
        b.describe()
    );
}

/// The state does not say where the SM runs: the tables are right for every port it knows,
/// but the SM's own port is unknown, so `isolated` is unknown (never proven), without a
/// certificate; `Isolation::outcome` says what holds wherever the SM runs.
#[test]
fn an_undeclared_sm_leaves_isolated_unknown() {
    let (st, _) = tenants();
    let (verdict, iso) = isolated(&st);
    assert_eq!(iso.outcome, Outcome::Proven);
    assert!(iso.sm.is_empty());
    match verdict {
        Some(Outcome::Unknown(why)) => {
            assert!(why.contains("does not say where the SM runs"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    let v = ValidState::new(st).unwrap();
    let r = weft_verifier::verify(
        &v,
        &Options {
            properties: Property::defaults(&v),
            ..Options::default()
        },
    );
    assert!(!r.is_proven() && r.certificate.is_none());
}
