//! The multicast checks on small hand-made fabrics and on random ones (engines and delivery paths agree).

use super::*;
use crate::testkit;
use crate::{Options, Outcome, Property};
use weft_fabric::{FabricState, JoinState, McGroup, NodeId, PortRef, Sl};
use weft_formats::state_json::ToJson;

const GROUP: u16 = 0xc001;

fn mlid() -> Mlid {
    Mlid::new(GROUP).unwrap()
}

/// Every end port of `st` a full member of one group on SL 0.
fn everyone(st: &mut FabricState) {
    let members = st
        .fabric
        .node_ids()
        .filter(|&n| !st.fabric.node(n).is_switch())
        .map(|n| (PortRef::new(n, 1), JoinState::FULL))
        .collect();
    st.multicast.groups.push(McGroup {
        mlid: mlid(),
        pkey: 0xffff,
        sl: Sl(0),
        members,
    });
}

fn set_mask(st: &mut FabricState, x: u32, ports: &[u8]) {
    st.multicast
        .mfts
        .entry(NodeId(x))
        .or_default()
        .set(mlid(), PortMask::of(ports.iter().map(|&p| PortNum(p))));
}

fn opts() -> Options {
    Options {
        properties: vec![
            Property::DeadlockFree,
            Property::Connected,
            Property::MulticastConnected,
        ],
        ..Options::default()
    }
}

/// A ring of four switches (`R0` port 1 → `R1` port 2, …, `R3` port 1 → `R0` port 2),
/// one host on port 3 of each, routed up*/down* from `R0`, and `R0`'s route to `R2`'s
/// host through `R3` (still up*/down*).
fn ring() -> FabricState {
    let f = testkit::ring(4, 1);
    let lids = testkit::sequential_lids(&f);
    let mut st = testkit::route_updown(&f, lids);
    let h2 = st.fabric.find("H2_0").unwrap();
    let lid = st.lids.base[&h2][&PortNum(1)];
    st.switches
        .get_mut(&NodeId(0))
        .unwrap()
        .lft
        .set(lid, PortNum(2));
    st
}

/// The tree `R0 – R1 – R2 – R3` (not the cable `R3 – R0`), every host in it.
fn path_tree(st: &mut FabricState) {
    everyone(st);
    set_mask(st, 0, &[1, 3]);
    set_mask(st, 1, &[1, 2, 3]);
    set_mask(st, 2, &[1, 2, 3]);
    set_mask(st, 3, &[2, 3]);
}

/// A multicast tree whose turn at `R2` (down, then up) closes a credit loop with unicast
/// routes that are acyclic on their own: refused by both engines, the loop's witness
/// naming the MLID; the same state without the MFT is proven.
#[test]
fn a_tree_through_the_ring_closes_a_credit_loop_with_unicast() {
    let alone = ring();
    let r = crate::verify(&testkit::valid(alone.clone()), &Options::default());
    assert!(r.is_proven(), "{:?}", r.verdict);
    assert_eq!(r.traffic.multicast_groups, 0);
    assert_eq!(
        r.traffic.describe(),
        "unicast only: no multicast tables were given"
    );

    let mut st = ring();
    path_tree(&mut st);
    let st = testkit::valid(st);
    let r = crate::verify(&st, &opts());
    assert_eq!(r.verdict.deadlock_free, Outcome::Violated);
    // The tree itself delivers: the loop is the union's.
    assert_eq!(r.verdict.multicast_connected, Some(Outcome::Proven));
    assert_eq!(r.traffic.describe(), "unicast and multicast (1 group)");
    let l = r.credit_loops.first().expect("a credit loop");
    assert!(
        l.cycle.iter().any(|d| d.route.dlid.0 == GROUP),
        "no dependency of the loop is the group's: {l:?}"
    );
    // Each route of the loop is what the tables do (multicast copies by the reference
    // flood): replayed dependency by dependency.
    crate::reference::replay_credit_loop(&st, l).unwrap();
    #[cfg(feature = "z3")]
    {
        let z = crate::z3::Z3::default().run(&st, &opts());
        assert_eq!(z.verdict.deadlock_free, Outcome::Violated);
        assert_eq!(z.verdict.multicast_connected, Some(Outcome::Proven));
        let zl = z.credit_loop.expect("z3's loop");
        assert!(zl.cycle.iter().any(|d| d.route.dlid.0 == GROUP), "{zl:?}");
        crate::reference::replay_credit_loop(&st, &zl).unwrap();
        let za = crate::z3::Z3::default().run(&testkit::valid(alone), &opts());
        assert_eq!(za.verdict.deadlock_free, Outcome::Proven);
    }
}

/// Any end port may send to a multicast LID: a group whose record names one member still
/// carries what the other hosts on its tree's switches send. With the tree through the
/// ring and `H2_0` its only member, `H2_0`'s own copies close no credit loop (proven when
/// only members' copies counted), the other hosts' copies do: both engines refuse it, and
/// the loop's witness replays.
#[test]
fn hosts_that_are_not_members_still_inject_into_the_tree() {
    let mut st = ring();
    path_tree(&mut st);
    let h2 = st.fabric.find("H2_0").unwrap();
    let g = st.multicast.groups.first_mut().unwrap();
    g.members.retain(|p, _| p.node == h2);
    assert_eq!(g.members.len(), 1);
    let st = testkit::valid(st);
    let f = flows(&st);
    assert_eq!(f[0].senders.len(), 1);
    assert_eq!(f[0].injectors.len(), 3, "{:?}", f[0].injectors);
    let r = crate::verify(&st, &opts());
    assert_eq!(
        r.verdict.deadlock_free,
        Outcome::Violated,
        "{:?}",
        r.verdict
    );
    let l = r.credit_loops.first().expect("a credit loop");
    assert!(l.cycle.iter().any(|d| d.route.dlid.0 == GROUP), "{l:?}");
    crate::reference::replay_credit_loop(&st, l).unwrap();
    #[cfg(feature = "z3")]
    {
        let z = crate::z3::Z3::default().run(&st, &opts());
        assert_eq!(z.verdict.deadlock_free, Outcome::Violated);
        crate::reference::replay_credit_loop(&st, &z.credit_loop.expect("z3's loop")).unwrap();
    }
}

/// The ring's tree cut at cable `cut` (`R{cut}` port 1 – `R{cut+1}` port 2), every host in
/// it.
fn cut_tree(st: &mut FabricState, n: u32, cut: u32) {
    everyone(st);
    for x in 0..n {
        let mut p = vec![3];
        if x != cut {
            p.push(1);
        }
        if x != (cut + 1) % n {
            p.push(2);
        }
        p.sort_unstable();
        set_mask(st, x, &p);
    }
}

/// A step of a plan is checked with the multicast trees in place (LFT writes leave them
/// as they are): rerouting `R0`'s route to `R2`'s host through `R3` (up*/down* either way)
/// is proven on unicast alone and with a tree cut at `R1 – R2`; with the tree cut at
/// `R3 – R0`, whose turn at `R2` closes a credit loop with the unicast routes, the same
/// step is refused with a cycle of channels.
#[test]
fn a_step_is_checked_with_the_trees_in_place() {
    let f = testkit::ring(4, 1);
    let lids = testkit::sequential_lids(&f);
    let before = testkit::route_updown(&f, lids);
    let after = ring();
    for cut in [None, Some(1), Some(3)] {
        let (mut b, mut a) = (before.clone(), after.clone());
        if let Some(c) = cut {
            cut_tree(&mut b, 4, c);
            cut_tree(&mut a, 4, c);
        }
        let (b, a) = (testkit::valid(b), testkit::valid(a));
        let o = if cut.is_some() {
            opts()
        } else {
            Options::default()
        };
        let proven = crate::verify(&b, &o).is_proven();
        assert_eq!(proven, cut != Some(3), "before, cut {cut:?}");
        let c = crate::transition::check_step(&b, &a, crate::Scope::All).unwrap();
        assert_eq!(c.loop_free, Outcome::Proven);
        assert_eq!(c.changed_entries, 1);
        if proven {
            assert_eq!(c.deadlock_free, Outcome::Proven, "cut {cut:?}: {c:?}");
        } else {
            assert_eq!(c.deadlock_free, Outcome::Violated, "cut {cut:?}: {c:?}");
            assert!(!c.credit_loop.is_empty());
        }
    }
    // Trees written between LFT steps: the checker started without them is told, and the
    // next step's mixes have their dependencies.
    let mut looped = before.clone();
    cut_tree(&mut looped, 4, 3);
    let (b, looped) = (testkit::valid(before.clone()), testkit::valid(looped));
    let changes = crate::transition::changes(&b, &testkit::valid(after.clone()));
    let mut t = crate::transition::Transition::new(&b, crate::Scope::All);
    t.checkpoint();
    assert_eq!(t.step(&changes).deadlock_free, Outcome::Proven);
    t.rollback();
    t.add_multicast(&looped);
    assert_eq!(t.step(&changes).deadlock_free, Outcome::Violated);
    // States whose trees differ are not two ends of a step of LFT writes.
    let mut a = after.clone();
    cut_tree(&mut a, 4, 1);
    let e = crate::transition::check_step(
        &testkit::valid(before),
        &testkit::valid(a),
        crate::Scope::All,
    );
    assert!(e.is_err());
}

/// Masks over the whole ring: copies come back to the switch they started from; both
/// engines say so, and the pattern names the switch and the two ports.
#[test]
fn a_mask_around_the_ring_is_a_loop() {
    let mut st = ring();
    everyone(&mut st);
    for x in 0..4 {
        set_mask(&mut st, x, &[1, 2, 3]);
    }
    let st = testkit::valid(st);
    let r = crate::verify(&st, &opts());
    assert_eq!(r.verdict.multicast_connected, Some(Outcome::Violated));
    let m = r.multicast.as_ref().unwrap();
    let lp = m
        .failures
        .iter()
        .find(|f| f.problem == McProblem::Loop)
        .expect("a loop pattern");
    assert_eq!(lp.mlid, GROUP);
    assert_eq!(lp.pairs, 4, "every sender's copies loop");
    let (at, a, b) = lp.loop_at.clone().unwrap();
    assert_ne!(a, b);
    assert!(
        lp.describe().contains(&format!("switch `{}`", at.name)),
        "{}",
        lp.describe()
    );
    assert!(m.failures.iter().any(|f| f.problem == McProblem::Duplicate));
    #[cfg(feature = "z3")]
    {
        let z = crate::z3::Z3::default().run(&st, &opts());
        assert_eq!(z.verdict.multicast_connected, Some(Outcome::Violated));
    }
}

/// A receiver whose port its switch's mask lacks gets nothing from anyone: counted per
/// pair, with the switch and port named.
#[test]
fn a_port_missing_from_the_mask_is_undelivered() {
    let mut st = ring();
    path_tree(&mut st);
    set_mask(&mut st, 3, &[2]);
    let r = crate::verify(&testkit::valid(st), &opts());
    assert_eq!(r.verdict.multicast_connected, Some(Outcome::Violated));
    let m = r.multicast.as_ref().unwrap();
    assert_eq!(m.pairs, 12);
    assert_eq!(m.failed, 3, "three senders miss `H3_0`");
    let f = &m.failures[0];
    assert_eq!(f.problem, McProblem::Undelivered);
    assert!(
        matches!(&f.stop, Some(McStop::NotInMask { switch, port: 3 }) if switch.name == "R3"),
        "{:?}",
        f.stop
    );
    assert!(
        f.describe()
            .contains("switch `R3`'s MFT entry lacks port 3"),
        "{}",
        f.describe()
    );
}

/// Members inferred from the tables when no group record names the MLID; a state with
/// MFTs but no groups still has multicast traffic, and says how it knows.
#[test]
fn members_are_inferred_from_the_masks_without_group_records() {
    let mut st = ring();
    path_tree(&mut st);
    st.multicast.groups.clear();
    let r = crate::verify(&testkit::valid(st), &opts());
    assert_eq!(r.verdict.multicast_connected, Some(Outcome::Proven));
    assert_eq!(r.multicast.as_ref().unwrap().pairs, 12);
    assert_eq!(
        r.traffic.describe(),
        "unicast and multicast (1 group; members of 1 inferred from the MFTs, SL 0)"
    );
}

/// A certificate covers the groups: accepted for the state it proves, refused for the
/// same fabric without the group (it claims multicast the state does not have) and a
/// unicast-only certificate is refused for the state with the group.
#[test]
fn certificates_cover_multicast() {
    // The breadth-first tree from `R0` (cables `R0 – R1`, `R0 – R3`, `R1 – R2`): no copy
    // turns from down to up, so the union stays up*/down*.
    let mut st = ring();
    everyone(&mut st);
    set_mask(&mut st, 0, &[1, 2, 3]);
    set_mask(&mut st, 1, &[1, 2, 3]);
    set_mask(&mut st, 2, &[2, 3]);
    set_mask(&mut st, 3, &[1, 3]);
    let with = testkit::valid(st.clone());
    let r = crate::verify(&with, &opts());
    assert!(r.is_proven(), "{:?} {:?}", r.verdict, r.credit_loops);
    let cert = r.certificate.expect("a certificate");
    assert_eq!(
        cert.multicast.as_ref().map(|m| m.groups.clone()),
        Some(vec![GROUP])
    );
    let req = crate::Request {
        properties: opts().properties,
        ..crate::Request::default()
    };
    let ok = crate::certificate::check(&with, &cert, &req).expect("accepted");
    assert_eq!(ok.traffic.multicast_groups, 1);

    let mut without = st.clone();
    without.multicast = weft_fabric::Multicast::default();
    let without = testkit::valid(without);
    let e = crate::certificate::check(&without, &cert, &crate::Request::default());
    assert!(
        matches!(e, Err(crate::CertificateError::Multicast(_))),
        "{e:?}"
    );

    // A certificate of deadlock freedom and connectivity only (no `multicast_connected`)
    // still ranks the copies, and is accepted for the state with the group.
    let routes_only = crate::verify(&with, &Options::default())
        .certificate
        .unwrap();
    assert!(!routes_only
        .properties
        .contains(&Property::MulticastConnected));
    crate::certificate::check(&with, &routes_only, &crate::Request::default()).expect("accepted");

    let unicast = crate::verify(&without, &Options::default())
        .certificate
        .unwrap();
    let e = crate::certificate::check(&with, &unicast, &crate::Request::default());
    assert!(
        matches!(e, Err(crate::CertificateError::Multicast(_))),
        "{e:?}"
    );
}

/// Random fabrics, routings and multicast tables (random masks: trees, loops, holes,
/// VL trouble from corrupted tables): the explicit engine's verdicts equal z3's, and
/// delivery decided by structure equals the sender-by-sender walk.
#[test]
fn engines_and_both_delivery_paths_agree_on_random_multicast() {
    let mut rng = testkit::Rng(0x3c01);
    let mut seen = [0usize; 3];
    for n in 0..300 {
        let f = if rng.below(3) == 0 {
            testkit::ring(3 + rng.below(4) as usize, 1 + rng.below(2) as usize)
        } else {
            let (sw, extra, hosts) = (
                2 + rng.below(5) as usize,
                rng.below(4) as usize,
                1 + rng.below(4) as usize,
            );
            testkit::random_fabric(&mut rng, sw, extra, hosts, 5)
        };
        let lids = testkit::sequential_lids(&f);
        let mut st = if rng.below(2) == 0 {
            testkit::route_updown(&f, lids)
        } else {
            testkit::route_minhop(&f, lids)
        };
        random_multicast(&mut rng, &mut st);
        if rng.below(4) == 0 {
            testkit::corrupt(&mut rng, &mut st);
        }
        let st = testkit::valid(st);
        let r = crate::verify(&st, &opts());
        let net = Net::new(&st);
        let flows = flows(&st);
        let mfts = mft_index(&st);
        let mut slow = Acc::default();
        for f in &flows {
            sender_by_sender(&net, &mfts, f, &mut slow);
        }
        let m = r.multicast.as_ref().unwrap();
        assert_eq!(m.failed, slow.failed, "case {n}: {}", st.to_json());
        match r.verdict.multicast_connected {
            Some(Outcome::Proven) => seen[0] += 1,
            Some(Outcome::Violated) => seen[1] += 1,
            _ => seen[2] += 1,
        }
        #[cfg(feature = "z3")]
        {
            let z = crate::z3::Z3::default().run(&st, &opts());
            assert_eq!(z.verdict, r.verdict, "case {n}: {}", st.to_json());
        }
    }
    assert!(seen[0] >= 30 && seen[1] >= 30, "verdicts {seen:?}");
}

/// One to three groups: members random end ports (some send-only), masks a BFS tree of
/// the switches from a random root with each member's port (sometimes a cable more, or a
/// member's port less).
fn random_multicast(rng: &mut testkit::Rng, st: &mut FabricState) {
    let ends: Vec<NodeId> = st
        .fabric
        .node_ids()
        .filter(|&n| !st.fabric.node(n).is_switch())
        .collect();
    let switches: Vec<NodeId> = st
        .fabric
        .node_ids()
        .filter(|&n| st.fabric.node(n).is_switch())
        .collect();
    for g in 0..1 + rng.below(3) {
        let m = Mlid::new(0xc000 + g as u16).unwrap();
        let mut members = BTreeMap::new();
        for &h in &ends {
            match rng.below(4) {
                0 => {}
                1 => {
                    members.insert(PortRef::new(h, 1), JoinState::SEND_ONLY_NON_MEMBER);
                }
                _ => {
                    members.insert(PortRef::new(h, 1), JoinState::FULL);
                }
            }
        }
        // BFS tree over live switch links from a random root.
        let Some(&root) = switches.get(rng.below(switches.len().max(1) as u64) as usize) else {
            continue;
        };
        let mut masks: BTreeMap<NodeId, PortMask> = BTreeMap::new();
        let mut seen = vec![root];
        let mut queue = std::collections::VecDeque::from([root]);
        while let Some(x) = queue.pop_front() {
            for p in &st.fabric.node(x).ports {
                let Some(far) = st.fabric.live_peer(PortRef::new(x, p.num.0)) else {
                    continue;
                };
                let extra = rng.below(12) == 0;
                if !st.fabric.node(far.node).is_switch() {
                    continue;
                }
                if !seen.contains(&far.node) || extra {
                    if !seen.contains(&far.node) {
                        seen.push(far.node);
                        queue.push_back(far.node);
                    }
                    masks.entry(x).or_default().insert(p.num);
                    masks.entry(far.node).or_default().insert(far.port);
                }
            }
        }
        for (&r, js) in &members {
            if js.receives() && rng.below(10) != 0 {
                if let Some(far) = st.fabric.live_peer(r) {
                    masks.entry(far.node).or_default().insert(far.port);
                }
            }
        }
        for (x, mask) in masks {
            st.multicast.mfts.entry(x).or_default().set(m, mask);
        }
        st.multicast.groups.push(McGroup {
            mlid: m,
            pkey: 0xffff,
            sl: Sl(rng.below(2) as u8),
            members,
        });
    }
}
