//! `weft-metrics`: static routing quality, computed from the tables alone.
//!
//! Everything here is a pure function of a [`FabricState`]: it does not know which engine
//! produced the tables, so it rates weft's routing and one imported from OpenSM alike.
//!
//! **Traffic model.** The *hosts* are the end-node ports that can send: a port of a node that
//! is not a switch and not down, with a LID, cabled by an up link to a switch that is not down
//! ([`Quality::end_ports_excluded`] counts the others), of an end node whose role is `host`: the
//! ports of service nodes (SHARP aggregation nodes, storage, management;
//! [`Quality::service_ports`]) are routed but carry no pattern and count in no balance. Hosts are numbered in fabric order (node
//! order, then port order). A flow from host `a` to host `b` leaves `a` on its cable, then
//! follows each switch's LFT entry for `b`'s base LID (with LMC > 0, the base LID is the
//! primary path) until it arrives at `b`'s port. A flow is *unroutable* when it meets an unset
//! entry, a dead end (port 0 of a switch that is not the destination, an unwired port, a down
//! link or node, a port beyond the switch), a loop, or arrives at the wrong end node; it is
//! counted as such and loads no link. Nothing panics on broken tables.
//!
//! **Loads** are per directed link. The maxima and means reported are over the directed
//! switch-to-switch links that are up ([`Quality::fabric_links`]): a host's own cable carries
//! exactly what the pattern sends and receives, whatever the routing.
//!
//! **Metrics.**
//! * [`Balance`]: per switch port, the number of host destination LIDs (every LMC LID)
//!   whose LFT entry is that port, as `check_lft_balance` counts them. Ports to end nodes and
//!   ports that are down or unwired are not compared; a switch is unbalanced when, over its
//!   switch-facing ports, `max > min + 1`. In a tree of three or more levels that rule flags
//!   every middle switch under any routing (its up ports carry every destination outside its
//!   subtree, its down ports only its subtree's), so the rule is also applied within each
//!   direction (up ports, down ports, same-level ports; levels counted from the switches that
//!   have hosts).
//! * [`Shift`]: flows `i → (i + k) mod N` for every `k` in `1..N` when `N − 1 ≤
//!   all_shifts_up_to` (1 024), otherwise `m = shift_samples` (256) evenly spaced `k`
//!   (`k_j = 1 + ⌊j (N − 1) / m⌋`, `j < m`).
//! * [`AllToAll`]: every host to every other host, aggregated per destination over the
//!   destination's in-tree (subtree counts), `O(switches + hosts)` per destination.
//! * [`Bisections`]: random bisections (a seeded SplitMix64 shuffle of the hosts; the first
//!   half paired with the second, each pair exchanging one flow in each direction). The
//!   *effective bisection bandwidth* (eBB, as ORCS defines it) is the mean over bisections of
//!   the mean over flows of `1 / (max load on the flow's path)` (the hosts' own cables
//!   included, where a bisection puts exactly one flow), an unroutable flow counting 0. By
//!   default as many bisections as fit in 2 M flows, between 32 and 1 000
//!   ([`auto_bisections`]: 1 000 for 648 hosts, 171 for 11 664).
//! * [`Hops`]: the histogram of links traversed by every host-to-host path (2 for two hosts
//!   on one leaf), computed per destination from its in-tree.
//! * [`HopExcess`]: per host pair, the links its route crosses beyond the shortest up*/down*
//!   path (climbing, then descending, by the levels above) and beyond the shortest path in
//!   the graph; how many pairs have any, the most, and the worst pairs by name.
//! * [`SwitchReach`]: switch-to-switch LID routing (OpenSM's `ftree` leaves spine pairs
//!   unset).
//!
//! Deterministic: integer sums in any order, floating-point sums in a fixed order, the random
//! bisections drawn from the seed; the result does not depend on the thread count.

//! **Code map.** `types.rs` (what is returned, and the options), `net.rs` (the network
//! as flat tables and the forwarding step on them: the model's
//! [`weft_fabric::forward::step`], tested equal), `all_to_all.rs` (in-trees per
//! destination: all-to-all and hops), `patterns.rs` (shift and bisections, flow by flow),
//! `balance.rs`, `excess.rs` (hop excess), `reach.rs` (switch to switch), `loads.rs` (the patterns' loads per directed
//! link, for drawing them: [`link_loads`]), [`layout`] (where a drawing puts each switch), `hosts.rs` (bisections of machines, rail-aligned
//! and cross-rail, and per rail, when end nodes are grouped into hosts), `scratch.rs` (working
//! memory per job). The bisections draw from weft's one RNG,
//! [`weft_fabric::rng::SplitMix64`].
//!
//! Who reads it: `weft report`, `state.json`'s `quality` (written by `weft build`), and the
//! OpenSM comparison in `bench/`. A property test holds its unroutable pairs equal to the
//! verifier's failed routes on random broken states. Architecture invariant: depends on
//! `weft-fabric` only; no I/O, no printing.

// Nothing indexes with a value that might be out of range: `get` and a decision instead.
#![deny(clippy::indexing_slicing)]

mod all_to_all;
mod balance;
mod excess;
mod hosts;
pub mod layout;
mod loads;
mod net;
mod patterns;
mod reach;
mod scratch;
mod types;

pub use types::{
    auto_bisections, AllToAll, Balance, Bisections, CrossedHca, CrossedHost, Hops, Hosts, Quality,
    QualityOptions, Rail, RailCabling, Shift, SwitchReach, SwitchUsage, Unroutable,
    ALL_SHIFTS_UP_TO, BISECTION_FLOW_BUDGET, MAX_BISECTIONS, MIN_BISECTIONS, SHIFT_SAMPLES,
};

pub use excess::{ExcessPair, HopExcess, WORST_PAIRS};
pub use loads::{link_loads, LinkLoad, LinkLoads};
use net::Net;
use weft_fabric::FabricState;

/// Every metric of `state`'s routing.
pub fn quality(state: &FabricState, opts: &QualityOptions) -> Quality {
    let net = Net::new(state);
    let balance = net.balance();
    let (all_to_all, hops, hop_excess) = net.per_destination();
    let shift = net.shift(opts.all_shifts_up_to, opts.shift_samples);
    let count = opts
        .bisections
        .unwrap_or_else(|| auto_bisections(net.ends.len()));
    let bisections = net.bisections(opts.seed, count);
    let switch_to_switch = net.switch_reach();
    let machines = if opts.machines {
        net.hosts(opts.seed, opts.bisections)
    } else {
        None
    };
    Quality {
        hosts: net.machine_count(),
        end_ports: net.ends.len(),
        end_ports_excluded: net.excluded,
        service_ports: net.service,
        switches: net.sw.len(),
        fabric_links: net.fabric_links,
        balance,
        shift,
        all_to_all,
        bisections,
        hops,
        hop_excess,
        switch_to_switch,
        machines,
    }
}

/// [`quality`] with the default options (seed 0) but no patterns over machines (`weft
/// report` measures those): what `weft build` records in `state.json`.
pub fn of_build(state: &FabricState) -> Quality {
    quality(
        state,
        &QualityOptions {
            machines: false,
            ..QualityOptions::default()
        },
    )
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::net::Net;
    use crate::patterns::bisection_flows;
    use crate::scratch::WalkScratch;
    use std::collections::BTreeMap;
    use weft_fabric::{
        FabricBuilder, Guid, Lft, Lid, NodeKind, NodeSpec, PortNum, PortRef, SwitchState, LFT_UNSET,
    };

    /// Two leaves `L1`, `L2` (ports 1–2 to hosts, 3 to `S1`, 4 to `S2`) and two spines `S1`,
    /// `S2` (port 1 to `L1`, 2 to `L2`); hosts `H1`, `H2` on `L1`, `H3`, `H4` on `L2`. LIDs:
    /// H1..H4 = 1..4, L1 = 5, L2 = 6, S1 = 7, S2 = 8. `lfts` gives, per switch in the order
    /// L1, L2, S1, S2, the port for LIDs 1..=8.
    fn tiny(lfts: [[u8; 8]; 4]) -> FabricState {
        let mut b = FabricBuilder::new("tiny");
        let sw = |b: &mut FabricBuilder, name: &str, g: u64, ports: u8| {
            b.add_node(NodeSpec::new(name, NodeKind::Switch, Guid(g), ports))
                .unwrap()
        };
        let l1 = sw(&mut b, "L1", 0x10, 4);
        let l2 = sw(&mut b, "L2", 0x20, 4);
        let s1 = sw(&mut b, "S1", 0x30, 2);
        let s2 = sw(&mut b, "S2", 0x40, 2);
        let mut hosts = Vec::new();
        for (i, leaf) in [(1u64, l1), (2, l1), (3, l2), (4, l2)] {
            let h = b
                .add_node(NodeSpec::new(
                    format!("H{i}"),
                    NodeKind::Hca,
                    Guid(0x100 * i),
                    1,
                ))
                .unwrap();
            b.add_link(
                PortRef::new(h, 1),
                PortRef::new(leaf, ((i - 1) % 2 + 1) as u8),
            )
            .unwrap();
            hosts.push(h);
        }
        for (leaf, lp) in [(l1, 1u8), (l2, 2)] {
            b.add_link(PortRef::new(leaf, 3), PortRef::new(s1, lp))
                .unwrap();
            b.add_link(PortRef::new(leaf, 4), PortRef::new(s2, lp))
                .unwrap();
        }
        let mut st = FabricState::new(b.finish());
        for (i, &h) in hosts.iter().enumerate() {
            st.lids
                .base
                .entry(h)
                .or_default()
                .insert(PortNum(1), Lid(i as u16 + 1));
        }
        for (i, (&s, table)) in [l1, l2, s1, s2].iter().zip(&lfts).enumerate() {
            st.lids
                .base
                .entry(s)
                .or_default()
                .insert(PortNum(0), Lid(i as u16 + 5));
            let mut lft = Lft::default();
            for (lid, &p) in (1u16..).zip(table) {
                lft.set(Lid(lid), PortNum(p));
            }
            st.switches.insert(
                s,
                SwitchState {
                    lft,
                    sl2vl: Vec::new(),
                    sl2vl_all: None,
                },
            );
        }
        st
    }

    /// Each leaf's two remote hosts go through different spines.
    const GOOD: [[u8; 8]; 4] = [
        [1, 2, 3, 4, 0, 3, 3, 4],
        [3, 4, 1, 2, 3, 0, 3, 4],
        [1, 1, 2, 2, 1, 2, 0, 1],
        [1, 1, 2, 2, 1, 2, 1, 0],
    ];

    /// Every remote host through `S1`.
    const BAD: [[u8; 8]; 4] = [
        [1, 2, 3, 3, 0, 3, 3, 4],
        [3, 3, 1, 2, 3, 0, 3, 4],
        [1, 1, 2, 2, 1, 2, 0, 1],
        [1, 1, 2, 2, 1, 2, 1, 0],
    ];

    fn opts() -> QualityOptions {
        QualityOptions {
            seed: 7,
            bisections: Some(1000),
            ..QualityOptions::default()
        }
    }

    fn pair_ebb(st: &FabricState, pairs: &[(u32, u32)]) -> f64 {
        let net = Net::new(st);
        let flows: Vec<(u32, u32)> = pairs.iter().flat_map(|&(a, b)| [(a, b), (b, a)]).collect();
        let s = net.pattern(&flows, &mut WalkScratch::new(net.dlinks));
        s.share / s.flows as f64
    }

    #[test]
    fn good_tree_by_hand() {
        let q = quality(&tiny(GOOD), &opts());
        assert_eq!((q.end_ports, q.end_ports_excluded, q.switches), (4, 0, 4));
        assert_eq!(q.hosts, 4);
        assert_eq!(q.fabric_links, 8);
        // Balance: every leaf sends one remote host up each spine; every spine sends two
        // hosts down each leaf.
        assert_eq!(q.balance.switches, 4);
        assert_eq!(q.balance.unbalanced, 0);
        assert_eq!(q.balance.max_spread, 0);
        let l1 = &q.balance.per_switch[0];
        assert_eq!(l1.switch, "L1");
        assert_eq!(l1.level, Some(1));
        assert_eq!(l1.ports, BTreeMap::from([(3, 1), (4, 1)]));
        assert_eq!(
            q.balance.per_switch[2].ports,
            BTreeMap::from([(1, 2), (2, 2)])
        );
        assert_eq!(q.balance.per_switch[2].level, Some(2));
        // Shifts 1, 2, 3: never two flows on one link.
        assert!(q.shift.all);
        assert_eq!(q.shift.shifts, 3);
        assert_eq!(q.shift.flows, 12);
        assert_eq!(q.shift.max_load, 1);
        assert_eq!(q.shift.max_load_histogram, BTreeMap::from([(1, 3)]));
        // k = 1 and k = 3 cross with 2 flows each (2 fabric links per flow), k = 2 with 4.
        assert!((q.shift.mean_load - (4.0 + 8.0 + 4.0) / (8.0 * 3.0)).abs() < 1e-12);
        // All-to-all: each leaf→spine link carries the two flows to one remote host, each
        // spine→leaf link the two flows to one of its hosts.
        assert_eq!(q.all_to_all.flows, 12);
        assert_eq!(q.all_to_all.unroutable, 0);
        assert_eq!(q.all_to_all.max_load, 2);
        assert!((q.all_to_all.mean_load - 2.0).abs() < 1e-12);
        // Hops: 4 same-leaf pairs of 2 links, 8 cross pairs of 4.
        assert_eq!(q.hops.histogram, BTreeMap::from([(2, 4), (4, 8)]));
        assert_eq!(q.hops.max, 4);
        assert!((q.hops.mean - 40.0 / 12.0).abs() < 1e-12);
        assert_eq!(q.hops.unroutable.total(), 0);
        // Every bisection is served at full rate.
        assert_eq!(q.bisections.count, 1000);
        assert_eq!(q.bisections.flows, 4000);
        assert_eq!(q.bisections.max_load, 1);
        assert_eq!(q.bisections.ebb, Some(1.0));
        assert_eq!(q.bisections.ebb_min, Some(1.0));
        assert_eq!(q.switch_to_switch.pairs, 12);
        assert_eq!(q.switch_to_switch.unroutable.total(), 0);
    }

    #[test]
    fn link_loads_add_up_to_the_quality() {
        for lfts in [GOOD, BAD] {
            let st = tiny(lfts);
            let q = quality(&st, &opts());
            let l = link_loads(&st, &opts());
            assert_eq!(l.links.len(), q.fabric_links);
            assert_eq!(
                (l.shifts, l.bisections),
                (q.shift.shifts, q.bisections.count)
            );
            let max = l.links.iter().map(|x| x.all_to_all).max().unwrap();
            assert_eq!(max, q.all_to_all.max_load);
            let sum = |f: fn(&LinkLoad) -> u64| l.links.iter().map(f).sum::<u64>() as f64;
            let links = q.fabric_links as f64;
            assert!((sum(|x| x.all_to_all) / links - q.all_to_all.mean_load).abs() < 1e-9);
            let shifts = links * q.shift.shifts as f64;
            assert!((sum(|x| x.shift) / shifts - q.shift.mean_load).abs() < 1e-9);
            let bis = links * q.bisections.count as f64;
            assert!((sum(|x| x.bisection) / bis - q.bisections.mean_load).abs() < 1e-9);
        }
        // BAD: L1 → S1 carries the four flows from H1, H2 to H3, H4; L1 → S2 none.
        let l = link_loads(&tiny(BAD), &opts());
        let name = |r: PortRef| tiny(BAD).fabric.node(r.node).name().to_owned();
        let load = |a: &str, b: &str| {
            l.links
                .iter()
                .find(|x| name(x.from) == a && name(x.to) == b)
                .unwrap()
                .all_to_all
        };
        assert_eq!((load("L1", "S1"), load("L1", "S2")), (4, 0));
    }

    #[test]
    fn bad_tree_by_hand() {
        let st = tiny(BAD);
        let q = quality(&st, &opts());
        // Both leaves put their two remote hosts on port 3 and none on port 4.
        assert_eq!(q.balance.unbalanced, 2);
        assert_eq!(q.balance.unbalanced_by_direction, 2);
        assert_eq!(q.balance.max_spread, 2);
        assert_eq!(
            q.balance.per_switch[0].ports,
            BTreeMap::from([(3, 2), (4, 0)])
        );
        assert!(q.balance.per_switch[0].unbalanced);
        assert!(!q.balance.per_switch[2].unbalanced);
        // Shift 2 puts H1→H3 and H2→H4 on L1→S1.
        assert_eq!(q.shift.max_load, 2);
        assert_eq!(q.shift.max_load_histogram, BTreeMap::from([(1, 2), (2, 1)]));
        // All-to-all: L1→S1 carries the four flows from H1, H2 to H3, H4.
        assert_eq!(q.all_to_all.max_load, 4);
        assert!((q.all_to_all.mean_load - 16.0 / 8.0).abs() < 1e-12);
        // A crossing pairing halves every flow; a local one does not.
        assert_eq!(pair_ebb(&st, &[(0, 2), (1, 3)]), 0.5);
        assert_eq!(pair_ebb(&st, &[(0, 3), (1, 2)]), 0.5);
        assert_eq!(pair_ebb(&st, &[(0, 1), (2, 3)]), 1.0);
        assert_eq!(pair_ebb(&tiny(GOOD), &[(0, 2), (1, 3)]), 1.0);
        // Two of three pairings cross: eBB ≈ 1 − 0.5 × 2/3.
        assert!(
            (q.bisections.ebb.unwrap() - 2.0 / 3.0).abs() < 0.03,
            "{:?}",
            q.bisections.ebb
        );
        assert_eq!(
            (q.bisections.ebb_min, q.bisections.ebb_max),
            (Some(0.5), Some(1.0))
        );
        assert_eq!(q.bisections.max_load, 2);
        // Same tables, same seed: the same numbers.
        assert_eq!(q, quality(&st, &opts()));
        let other = quality(&st, &QualityOptions { seed: 8, ..opts() });
        assert_ne!(q.bisections.ebb, other.bisections.ebb);
    }

    #[test]
    fn broken_tables_count_as_unroutable() {
        let mut t = GOOD;
        t[1][0] = LFT_UNSET; // L2 has no entry for H1
        t[1][1] = 4; // L2 sends H2 to S2 ...
        t[3][1] = 2; // ... and S2 sends it back to L2: a loop
        t[2][2] = 0; // S1 sends H3 to its port 0: a dead end
        let q = quality(&tiny(t), &opts());
        // H3, H4 → H1 unset; H3, H4 → H2 loop; H1, H2 → H3 (via S1) dead end.
        assert_eq!(
            q.hops.unroutable,
            Unroutable {
                unset: 2,
                dead_end: 2,
                loops: 2,
                misdelivered: 0
            }
        );
        assert_eq!(q.all_to_all.unroutable, 6);
        assert_eq!(q.hops.histogram.values().sum::<u64>(), 6);
        assert!(q.shift.unroutable > 0);
        assert!(q.bisections.unroutable > 0);
        assert!(q.bisections.ebb.unwrap() < 1.0);

        // Misdelivery: L1 sends H2 to H1's port.
        let mut t = GOOD;
        t[0][1] = 1;
        let q = quality(&tiny(t), &opts());
        assert_eq!(q.hops.unroutable.misdelivered, 3);

        // Spine to spine unset, as OpenSM's ftree leaves it.
        let mut t = GOOD;
        t[2][7] = LFT_UNSET;
        t[3][6] = LFT_UNSET;
        let q = quality(&tiny(t), &opts());
        assert_eq!(q.switch_to_switch.unroutable.unset, 2);
        assert_eq!(q.hops.unroutable.total(), 0);
    }

    #[test]
    fn empty_and_tableless_states_do_not_panic() {
        let st = FabricState::new(FabricBuilder::new("empty").finish());
        let q = quality(&st, &opts());
        assert_eq!((q.hosts, q.end_ports), (0, 0));
        // No flow, no eBB: `None`, not 0.
        assert_eq!(q.bisections.ebb, None);
        let mut st = tiny(GOOD);
        st.switches.clear();
        let q = quality(&st, &opts());
        assert_eq!(q.hops.unroutable.unset, 12);
        assert_eq!(q.switch_to_switch.unroutable.unset, 12);
        // An LFT pointing past the switch's ports.
        let mut t = GOOD;
        t[0][2] = 200;
        let q = quality(&tiny(t), &opts());
        assert_eq!(q.hops.unroutable.dead_end, 2);
    }

    #[test]
    fn shift_subset_is_evenly_spaced() {
        let q = quality(
            &tiny(GOOD),
            &QualityOptions {
                all_shifts_up_to: 2,
                shift_samples: 2,
                ..opts()
            },
        );
        assert!(!q.shift.all);
        assert_eq!(q.shift.shifts, 2);
        assert_eq!(q.shift.flows, 8);
    }

    #[test]
    fn a_bisection_pairs_the_halves() {
        // Five hosts: two pairs, each exchanging one flow each way; the fifth host idle.
        let flows = bisection_flows(5, 1);
        assert_eq!(flows.len(), 4);
        assert_eq!((flows[0].0, flows[0].1), (flows[1].1, flows[1].0));
    }

    /// The metrics' unroutable host pairs are the verifier's failed routes between end nodes:
    /// on random small fabrics, routed min-hop or up/down and then broken in 1 to 4 places,
    /// every state whose end-node ports all stay hosts (a port the metrics leave out is a
    /// source the verifier sees failing at its own cable) has as many unroutable all-to-all
    /// pairs as the verifier (scope `hca-to-hca`) has failed routes, loops and unset entries
    /// counted alike.
    mod against_the_verifier {
        use super::*;
        use proptest::prelude::*;
        use weft_fabric::ValidState;
        use weft_verifier::testkit::{self, Rng};
        use weft_verifier::{FailureKind, Options, Property, Scope};

        proptest! {
            // About half the broken states leave some end-node port out.
            #![proptest_config(ProptestConfig {
                cases: 150,
                max_global_rejects: 100_000,
                ..ProptestConfig::default()
            })]

            #[test]
            fn unroutable_pairs_are_the_verifiers_failed_routes(
                seed in any::<u64>(),
                breaks in 1usize..5,
            ) {
                let mut rng = Rng(seed);
                let st = testkit::broken_state(&mut rng, breaks);
                let q = quality(&st, &QualityOptions::default());
                let ends = st
                    .fabric
                    .nodes()
                    .iter()
                    .filter(|n| !n.is_switch())
                    .map(|n| n.ports.len())
                    .sum::<usize>();
                prop_assume!(q.end_ports == ends && q.end_ports_excluded == 0);
                let Ok(v) = ValidState::new(st) else {
                    return Err(TestCaseError::reject("not a valid state"));
                };
                prop_assert_eq!(v.path_sl.default.0, 1, "one path SL (SL 0)");
                let report = weft_verifier::verify(
                    &v,
                    &Options {
                        scope: Scope::HcaToHca,
                        properties: vec![Property::Connected],
                        certificate: false,
                        ..Options::default()
                    },
                );
                let kind = |k: FailureKind| {
                    report
                        .failures
                        .iter()
                        .filter(|p| p.reason == k)
                        .map(|p| p.routes)
                        .sum::<u64>()
                };
                let u = q.hops.unroutable;
                prop_assert_eq!(q.all_to_all.unroutable, report.failed_routes, "{:?}", report.failures);
                prop_assert_eq!(u.total(), report.failed_routes);
                prop_assert_eq!(u.loops, kind(FailureKind::Loop));
                prop_assert_eq!(u.unset, kind(FailureKind::Unset));
                prop_assert_eq!(q.all_to_all.flows, report.stats.routes);
                prop_assert_eq!(q.hops.pairs, report.stats.routes);
            }
        }
    }

    /// `tiny` with two machines of two HCAs, one on each leaf: `a` = H1 (rail 0) + H3 (rail
    /// 1), `b` = H2 (rail 0) + H4 (rail 1).
    fn two_machines(lfts: [[u8; 8]; 4]) -> FabricState {
        let mut st = tiny(lfts);
        let mut b = FabricBuilder::from(st.fabric.clone());
        for (h, host, rail) in [
            ("H1", "a", 0),
            ("H3", "a", 1),
            ("H2", "b", 0),
            ("H4", "b", 1),
        ] {
            let id = b.fabric().find(h).unwrap();
            assert!(b.set_host(id, host, Some(rail)));
        }
        st.fabric = b.finish();
        st
    }

    #[test]
    fn machines_count_once_and_rails_pair_their_hcas() {
        assert_eq!(quality(&tiny(GOOD), &opts()).machines, None);
        let q = quality(&two_machines(GOOD), &opts());
        // The end-port patterns are unchanged; the machines are two hosts of two ports.
        assert_eq!((q.hosts, q.end_ports), (2, 4));
        assert_eq!(quality(&tiny(GOOD), &opts()).hosts, 4);
        assert_eq!(q.bisections, quality(&tiny(GOOD), &opts()).bisections);
        let m = q.machines.unwrap();
        assert_eq!(m.hosts, 2);
        assert_eq!(m.ports_per_host, BTreeMap::from([(2, 2)]));
        assert!(m.cabling.rail_optimised && m.cabling.crossed.is_empty());
        assert_eq!((m.cabling.machines, m.cabling.spread), (2, 2));
        // Every bisection pairs `a` with `b`: rail 0 is H1 ↔ H2 inside L1, rail 1 H3 ↔ H4
        // inside L2, so no fabric link is loaded.
        let aligned = m.rail_aligned.unwrap();
        assert_eq!(aligned.flows, 4 * 1000);
        assert_eq!((aligned.max_load, aligned.ebb), (0, Some(1.0)));
        // Cross-rail: H1 → H4, H3 → H2, H2 → H3, H4 → H1 all cross; GOOD spreads them over
        // both spines, one flow per directed link.
        let cross = m.cross_rail.unwrap();
        assert_eq!(cross.flows, 4 * 1000);
        assert_eq!((cross.max_load, cross.ebb), (1, Some(1.0)));
        let rails: Vec<(u8, usize, Option<f64>)> = m
            .rails
            .iter()
            .map(|r| (r.rail, r.hosts, r.bisections.ebb))
            .collect();
        assert_eq!(rails, [(0, 2, Some(1.0)), (1, 2, Some(1.0))]);
        // BAD sends every remote host of L1 through S1: two cross-rail flows share L1 → S1.
        let bad = quality(&two_machines(BAD), &opts()).machines.unwrap();
        let cross = bad.cross_rail.unwrap();
        assert_eq!(cross.max_load, 2);
        assert!(cross.ebb.unwrap() < 1.0, "{:?}", cross.ebb);
        assert_eq!(bad.rail_aligned.unwrap().ebb, Some(1.0));
    }

    /// Two machines of two HCAs each on one leaf: not rail-optimised, no rail metrics.
    #[test]
    fn machines_on_one_leaf_get_no_rail_metrics() {
        let mut st = tiny(GOOD);
        let mut b = FabricBuilder::from(st.fabric.clone());
        for (h, host) in [("H1", "a"), ("H2", "a"), ("H3", "b"), ("H4", "b")] {
            let id = b.fabric().find(h).unwrap();
            assert!(b.set_host(id, host, None));
        }
        st.fabric = b.finish();
        let q = quality(&st, &opts());
        assert_eq!((q.hosts, q.end_ports), (2, 4));
        let m = q.machines.unwrap();
        assert!(!m.cabling.rail_optimised);
        assert_eq!((m.cabling.machines, m.cabling.one_leaf), (2, 2));
        assert_eq!((m.rail_aligned, m.cross_rail), (None, None));
        assert!(m.rails.is_empty());
    }

    /// A rail of one HCA has no bisection flow: its eBB is `None`, not 0.
    #[test]
    fn a_rail_of_one_hca_has_no_ebb() {
        let mut st = tiny(GOOD);
        let mut b = FabricBuilder::from(st.fabric.clone());
        // `a` spreads H1, H3 over rails 0, 1; `b` has H2 alone on rail 2... of its own.
        for (h, host, rail) in [
            ("H1", "a", 0),
            ("H3", "a", 1),
            ("H2", "b", 0),
            ("H4", "b", 2),
        ] {
            let id = b.fabric().find(h).unwrap();
            assert!(b.set_host(id, host, Some(rail)));
        }
        st.fabric = b.finish();
        let m = quality(&st, &opts()).machines.unwrap();
        let rails: Vec<(u8, usize, Option<f64>)> = m
            .rails
            .iter()
            .map(|r| (r.rail, r.hosts, r.bisections.ebb))
            .collect();
        assert_eq!(rails, [(0, 2, Some(1.0)), (1, 1, None), (2, 1, None)]);
    }
}
