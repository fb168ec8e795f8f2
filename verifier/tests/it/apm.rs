//! `apm_disjoint` against a reference: random two-level trees with LMC 1, up/down routes whose
//! alternate LIDs leave each leaf through a random up port; every pair of hosts walked with the
//! reference walk to its primary and alternate LID, the switch-to-switch cables compared. The
//! checker must count exactly the reference's pairs and sharing pairs, and each cable it names
//! must be on both of that pair's paths.

use std::collections::BTreeSet;
use weft_fabric::{Lid, NodeId, PortNum};
use weft_verifier::testkit::{self, Rng};
use weft_verifier::{apm, reference, Outcome};

/// Switch-to-switch hops `(switch, out port)` of a walk, or `None` when it does not arrive.
fn cables(st: &weft_fabric::FabricState, h: NodeId, lid: Lid) -> Option<BTreeSet<(NodeId, u8)>> {
    let w = reference::walk(st, h, 1, lid, 0);
    if w.failure.is_some() {
        return None;
    }
    Some(
        w.hops
            .windows(2)
            .filter(|p| {
                st.fabric.node(p[0].node).is_switch() && st.fabric.node(p[1].node).is_switch()
            })
            .map(|p| (p[0].node, p[0].out))
            .collect(),
    )
}

#[test]
fn apm_matches_the_pairwise_reference() {
    let mut rng = Rng(0xa9a);
    let (mut proven, mut violated) = (0, 0);
    for k in 0..60 {
        let spines = 1 + rng.below(3) as usize;
        let mut f =
            testkit::fat_tree2(spines, 2 + rng.below(3) as usize, 1 + rng.below(3) as usize);
        f.lmc = 1;
        let lids = testkit::sequential_lids(&f);
        let mut st = testkit::route_updown(&f, lids);
        let hosts: Vec<NodeId> = f.node_ids().filter(|&n| !f.node(n).is_switch()).collect();
        // Alternates leave each leaf through another up port than the primary (in some cases
        // all of them, in others most of them).
        let careful = rng.below(2) == 0;
        let leaves: Vec<NodeId> = f
            .node_ids()
            .filter(|&n| f.node(n).name().starts_with('L'))
            .collect();
        let per_leaf = f.node(leaves[0]).spec.port_count as usize - spines;
        for &l in &leaves {
            for &h in &hosts {
                let base = st.lids.get(h, PortNum(1)).unwrap();
                let t = &mut st.switches.get_mut(&l).unwrap().lft;
                let primary = t.get(base).map_or(0, |p| p.0 as usize);
                if primary <= per_leaf {
                    continue;
                }
                let shift = if careful || rng.below(8) != 0 {
                    1 + rng.below((spines as u64).saturating_sub(1).max(1)) as usize
                } else {
                    0
                };
                let up = per_leaf + 1 + (primary - per_leaf - 1 + shift) % spines;
                t.set(Lid(base.0 + 1), PortNum(up as u8));
            }
        }
        let v = testkit::valid(st.clone());
        let got = apm::check(&v, usize::MAX);
        let (mut pairs, mut shared) = (0u64, 0u64);
        for &s in &hosts {
            for &t in &hosts {
                if s == t {
                    continue;
                }
                pairs += 1;
                let base = st.lids.get(t, PortNum(1)).unwrap();
                let (p, a) = (
                    cables(&st, s, base).unwrap(),
                    cables(&st, s, Lid(base.0 + 1)).unwrap(),
                );
                if !p.is_disjoint(&a) {
                    shared += 1;
                }
            }
        }
        assert_eq!(
            (got.pairs, got.shared_pairs, got.undelivered),
            (pairs, shared, 0),
            "case {k}"
        );
        for c in &got.shared {
            // The named cable is on the primary and the alternate path from that switch.
            let h = hosts
                .iter()
                .find(|&&h| f.peer(weft_fabric::PortRef::new(h, 1)).unwrap().0.node == c.from.id)
                .copied()
                .unwrap();
            let p = cables(&st, h, c.lids.0).unwrap();
            let a = cables(&st, h, c.lids.1).unwrap();
            let on = |x: &BTreeSet<(NodeId, u8)>| {
                x.contains(&(c.a.node.id, c.a.port)) || x.contains(&(c.b.node.id, c.b.port))
            };
            assert!(on(&p) && on(&a), "case {k}: {c:?}");
        }
        match got.outcome {
            Outcome::Proven => proven += 1,
            Outcome::Violated => violated += 1,
            Outcome::Unknown(ref r) => panic!("case {k}: {r}"),
        }
    }
    assert!(
        proven > 3 && violated > 3,
        "{proven} proven, {violated} violated"
    );
}
