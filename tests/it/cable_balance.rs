//! Parallel cables balanced (issue 42): on generated director-style trees — leaves with
//! different host counts under the leaf ASICs of a director, 2 to 8 parallel cables from each
//! leaf ASIC to each spine ASIC it reaches, one or two from each leaf to a leaf ASIC, random
//! cables of bundles missing — `fat_tree`'s tables are proven, and on every switch, every
//! bundle of two or more live cables carries the host destination LIDs the switch sends into
//! it exactly as a per-port-counter reference written here deals them: each to the cable with
//! the fewest so far. So every bundle's counts are within one of each other, up and down.
//!
//! Half the cases are compiled from the template (levels recorded), half imported from their
//! ibnetdiscover dump (levels found from the cabling, the missing cables absent).

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use proptest::prelude::*;
use std::collections::BTreeMap;
use weft_compiler::diagnostic::SourceId;
use weft_compiler::routing::Engine;
use weft_fabric::{Lid, NodeId, PortNum, PortRef, ValidState};
use weft_tests::{built, pgft_source, Rng};

/// One generated tree: the pgft's shape, how many hosts it holds, and which cables are down.
#[derive(Clone, Debug)]
struct Shape {
    /// Hosts per leaf, leaves per leaf ASIC, leaf ASICs per spine ASIC.
    m: [u32; 3],
    /// Leaf ASICs per leaf, spine ASICs per leaf ASIC.
    w: [u32; 2],
    /// Cables per leaf–leaf ASIC pair, per leaf ASIC–spine ASIC pair.
    p: [u32; 2],
    /// Hosts populated (the last leaf holds fewer).
    hosts: u32,
    /// Seed of the missing cables and hosts.
    seed: u64,
    /// Whether the tree is imported from its dump rather than compiled from the template.
    imported: bool,
}

fn shapes() -> impl Strategy<Value = Shape> {
    (2u32..=8, 1u32..=2, 1u32..=2)
        .prop_flat_map(|(p3, p2, w2)| {
            // Port budgets of the SB7800's 36: leaf m1 + w2·p2, leaf ASIC m2·p2 + w3·p3,
            // spine ASIC m3·p3.
            let w3 = 1u32..=(18 / p3).clamp(1, 3);
            let m2 = 2u32..=(18 / p2).min(3);
            let m3 = 2u32..=(36 / p3).min(4);
            (
                Just((p3, p2, w2)),
                1u32..=6,
                m2,
                m3,
                w3,
                any::<u64>(),
                any::<bool>(),
            )
        })
        .prop_flat_map(|((p3, p2, w2), m1, m2, m3, w3, seed, imported)| {
            // Every leaf keeps a host; the last holds fewer.
            let room = m1 * m2 * m3;
            ((room - m1 + 1)..=room).prop_map(move |hosts| Shape {
                m: [m1, m2, m3],
                w: [w2, w3],
                p: [p2, p3],
                hosts,
                seed,
                imported,
            })
        })
}

/// The tree's program: the pgft with some cables of leaf ASIC–spine ASIC bundles down (never a
/// whole bundle) and some host cables down (never a leaf's last).
fn program(s: &Shape) -> String {
    let healthy = pgft_source(&s.m, &[1, s.w[0], s.w[1]], &[1, s.p[0], s.p[1]], "", "")
        .replace("connectx5)", &format!("connectx5, hosts: {})", s.hosts));
    let f = weft_tests::compiled(&healthy).fabric.clone();
    let mut rng = Rng(s.seed);
    // Bundles between levels 2 and 3, by (spine ASIC, leaf ASIC): their cables' ports at the
    // leaf ASIC.
    let mut bundles: BTreeMap<(NodeId, NodeId), Vec<(String, u8)>> = BTreeMap::new();
    let mut host_cables: BTreeMap<NodeId, Vec<PortRef>> = BTreeMap::new();
    for l in f.links() {
        let (a, b) = (f.node(l.a.node), f.node(l.b.node));
        match (a.spec.level, b.spec.level) {
            (Some(2), Some(3)) => bundles
                .entry((l.b.node, l.a.node))
                .or_default()
                .push((a.name().to_owned(), l.a.port.0)),
            (Some(3), Some(2)) => bundles
                .entry((l.a.node, l.b.node))
                .or_default()
                .push((b.name().to_owned(), l.b.port.0)),
            (None, Some(1)) => host_cables.entry(l.b.node).or_default().push(l.a),
            (Some(1), None) => host_cables.entry(l.a.node).or_default().push(l.b),
            _ => {}
        }
    }
    let mut faults = String::new();
    for cables in bundles.values() {
        // Each bundle loses up to all but one of its cables, most lose none.
        if rng.below(3) == 0 {
            let lose = rng.below(cables.len());
            for (name, port) in cables.iter().take(lose) {
                faults += &format!("        link {name}.p[{port}] down\n");
            }
        }
    }
    for hosts in host_cables.values().filter(|h| h.len() > 1) {
        if rng.below(3) == 0 {
            let end = hosts[rng.below(hosts.len())];
            let name = f.node(end.node).name();
            faults += &format!("        link {name}.p[{}] down\n", end.port.0);
        }
    }
    let faulty = healthy.replace("    faults {\n", &format!("    faults {{\n{faults}"));
    if !s.imported {
        return faulty;
    }
    let fabric = weft_tests::compiled(&faulty).fabric.clone();
    let dump = weft_compiler::export_ibnetdiscover(&fabric).unwrap();
    weft_compiler::import_ibnetdiscover(&dump, "t.ibnd", SourceId(0), None, "imported")
        .unwrap()
        .0
}

/// Per switch, per bundle (the live cables to one neighbouring switch) of two or more cables:
/// the host destination LIDs each cable carries, in weft's tables and as the reference deals
/// the bundle's LIDs (ascending) by per-port counters, each to the cable with the fewest so
/// far, ties to the lowest port.
type Deal = BTreeMap<PortNum, u32>;

fn bundles(st: &ValidState) -> Vec<(String, String, Deal, Deal)> {
    let f = &st.fabric;
    let hosts: Vec<u16> = st
        .lids
        .owners(f)
        .iter()
        .enumerate()
        .filter_map(|(lid, o)| f.node(o.as_ref()?.0).is_host().then_some(lid as u16))
        .collect();
    let mut out = Vec::new();
    for (&sw, table) in &st.switches {
        // The switch's live cables grouped by the switch at their far end.
        let mut to: BTreeMap<NodeId, Vec<PortNum>> = BTreeMap::new();
        for p in &f.node(sw).ports {
            if let Some(far) = f.live_peer(PortRef::new(sw, p.num.0)) {
                if f.node(far.node).is_switch() {
                    to.entry(far.node).or_default().push(p.num);
                }
            }
        }
        for (peer, cables) in to.into_iter().filter(|(_, c)| c.len() > 1) {
            let mut weft: Deal = cables.iter().map(|&p| (p, 0)).collect();
            let mut reference = weft.clone();
            for &lid in &hosts {
                let Some(port) = table.lft.get(Lid(lid)) else {
                    continue;
                };
                let Some(n) = weft.get_mut(&port) else {
                    continue;
                };
                *n += 1;
                let least = reference
                    .iter()
                    .min_by_key(|&(&p, &n)| (n, p))
                    .map(|(&p, _)| p)
                    .unwrap();
                *reference.get_mut(&least).unwrap() += 1;
            }
            out.push((
                f.node(sw).name().to_owned(),
                f.node(peer).name().to_owned(),
                weft,
                reference,
            ));
        }
    }
    out
}

fn sorted(d: &Deal) -> Vec<u32> {
    let mut v: Vec<u32> = d.values().copied().collect();
    v.sort_unstable();
    v
}

fn cases() -> u32 {
    std::env::var("WEFT_BALANCE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn every_bundle_is_dealt_like_per_port_counters(s in shapes()) {
        let src = program(&s);
        let b = built(weft_driver::compile_text(
            "t.weft",
            &src,
            &weft_compiler::NoFiles,
            &weft_driver::quietly,
        ));
        prop_assert_eq!(b.engine_used, Engine::FatTree, "{}", b.why);
        let r = weft_verifier::verify(&b.state, &weft_verifier::Options::default());
        prop_assert!(r.is_proven(), "{:?}", r.listed_failures().first());
        let found = bundles(&b.state);
        // The shape has bundles of two or more cables at least between the ASICs.
        prop_assert!(!found.is_empty());
        for (sw, peer, weft, reference) in &found {
            prop_assert_eq!(
                sorted(weft),
                sorted(reference),
                "`{}` to `{}`: weft {:?}, per-port counters {:?}",
                sw,
                peer,
                weft,
                reference
            );
        }
    }
}

/// The reference itself: a bundle dealt by counters whatever the order, and a table that
/// piles a bundle's LIDs on one cable is told apart from it.
#[test]
fn the_reference_tells_a_piled_bundle_apart() {
    let s = Shape {
        m: [4, 2, 2],
        w: [1, 2],
        p: [1, 4],
        hosts: 16,
        seed: 1,
        imported: false,
    };
    let src = pgft_source(&s.m, &[1, 1, 2], &[1, 1, 4], "", "");
    let b = built(weft_driver::compile_text(
        "t.weft",
        &src,
        &weft_compiler::NoFiles,
        &weft_driver::quietly,
    ));
    let mut st = b.state.clone().into_inner();
    let found = bundles(&ValidState::new(st.clone()).unwrap());
    assert!(found.iter().all(|(_, _, w, r)| sorted(w) == sorted(r)));
    // Every LID a switch sends into a bundle moved to the bundle's first cable.
    let f = st.fabric.clone();
    for (&sw, table) in st.switches.iter_mut() {
        let mut first: BTreeMap<NodeId, u8> = BTreeMap::new();
        let mut first_of: BTreeMap<u8, u8> = BTreeMap::new();
        for p in &f.node(sw).ports {
            if let Some(far) = f.live_peer(PortRef::new(sw, p.num.0)) {
                if f.node(far.node).is_switch() {
                    let k = *first.entry(far.node).or_insert(p.num.0);
                    first_of.insert(p.num.0, k);
                }
            }
        }
        for e in table.lft.ports.iter_mut() {
            if let Some(&k) = first_of.get(&*e) {
                *e = k;
            }
        }
    }
    let piled = bundles(&ValidState::new(st).unwrap());
    assert!(piled.iter().any(|(_, _, w, r)| sorted(w) != sorted(r)));
}
