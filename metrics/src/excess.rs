//! Hop excess: the links each host-to-host route crosses beyond the shortest up*/down* path
//! between its hosts and beyond the shortest path in the graph ([`HopExcess`]).
//!
//! Both shortest lengths are the switch distances between the two hosts' switches plus their
//! two cables. An *up*/down* path* climbs, then descends, by the levels the balance counts
//! (1 for a switch with a host, one more per switch hop away from the nearest): each of its
//! links joins a switch to one a level above or below, none two switches of one level. Per
//! destination leaf, one breadth-first search gives the shortest paths, and one pass from the
//! top level down the shortest up*/down* ones ([`Net::distances`]); each destination's routed
//! lengths come from its in-tree ([`Net::excess_of`], called by the all-to-all pass).

use crate::net::{Net, To, NONE};
use crate::scratch::Scratch;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The worst pairs [`HopExcess`] names.
pub const WORST_PAIRS: usize = 8;

/// No path (or one longer than a `u8` holds).
const FAR: u8 = u8::MAX;

/// Hop excess of every host-to-host route.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HopExcess {
    /// Routed ordered host pairs that an up*/down* path joins.
    pub updown_pairs: u64,
    /// Of those, the ones routed over more links than their shortest up*/down* path.
    pub over_updown: u64,
    /// The most links beyond the shortest up*/down* path.
    pub max_over_updown: u32,
    /// Routed ordered host pairs that no up*/down* path joins.
    pub without_updown: u64,
    /// Routed ordered host pairs routed over more links than the shortest path.
    pub over_shortest: u64,
    /// The most links beyond the shortest path.
    pub max_over_shortest: u32,
    /// The worst pairs: most links beyond the shortest path first, then beyond the shortest
    /// up*/down* path, then in host order; at most [`WORST_PAIRS`].
    pub worst: Vec<ExcessPair>,
}

/// One host pair routed over more links than a shortest path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExcessPair {
    /// The source host port (`node` or `node` port `p` for a port other than 1).
    pub source: String,
    /// The destination host port.
    pub destination: String,
    /// Links the route crosses.
    pub links: u32,
    /// Links of the shortest up*/down* path; `None` when no up*/down* path joins them.
    pub updown: Option<u32>,
    /// Links of the shortest path.
    pub shortest: u32,
}

/// Switch distances between leaves: per destination leaf and source leaf, the shortest path
/// and the shortest up*/down* path.
pub(crate) struct Distances {
    /// Per switch: its index among the leaves, [`NONE`] when it has no host.
    leaf_index: Vec<u32>,
    leaves: usize,
    /// `[destination leaf × leaves + source leaf]`: (shortest, shortest up*/down*), [`FAR`]
    /// when there is none.
    table: Vec<(u8, u8)>,
    /// Per leaf: its first hosts (enough to name the worst pairs).
    hosts: Vec<Vec<u32>>,
}

/// A worst-pair candidate: (links beyond shortest, beyond up*/down*, source, destination,
/// links, up*/down* links or [`FAR`], shortest links), ordered worst first.
type Candidate = (std::cmp::Reverse<(u32, u32)>, u32, u32, u32, u8, u8);

/// Hop excess summed over destinations (integers only, and the worst pairs by a total order,
/// so the sum does not depend on how destinations are split).
#[derive(Clone, Debug, Default)]
pub(crate) struct ExcessAcc {
    updown_pairs: u64,
    over_updown: u64,
    max_over_updown: u32,
    without_updown: u64,
    over_shortest: u64,
    max_over_shortest: u32,
    worst: Vec<Candidate>,
}

impl ExcessAcc {
    pub(crate) fn merge(mut self, o: ExcessAcc) -> ExcessAcc {
        self.updown_pairs += o.updown_pairs;
        self.over_updown += o.over_updown;
        self.max_over_updown = self.max_over_updown.max(o.max_over_updown);
        self.without_updown += o.without_updown;
        self.over_shortest += o.over_shortest;
        self.max_over_shortest = self.max_over_shortest.max(o.max_over_shortest);
        self.worst.extend(o.worst);
        self.trim();
        self
    }

    fn trim(&mut self) {
        self.worst.sort_unstable();
        self.worst.dedup();
        self.worst.truncate(WORST_PAIRS);
    }
}

impl Net<'_> {
    /// Shortest and shortest up*/down* switch distances between every two leaves.
    pub(crate) fn distances(&self) -> Distances {
        let n = self.sw.len();
        let mut leaf_index = vec![NONE; n];
        for (i, &l) in self.leaves.iter().enumerate() {
            if let Some(slot) = leaf_index.get_mut(l as usize) {
                *slot = i as u32;
            }
        }
        let mut hosts = vec![Vec::new(); self.leaves.len()];
        for (h, e) in self.ends.iter().enumerate() {
            if let Some(list) = leaf_index
                .get(e.leaf as usize)
                .and_then(|&i| hosts.get_mut(i as usize))
            {
                if list.len() <= WORST_PAIRS {
                    list.push(h as u32);
                }
            }
        }
        let neighbours: Vec<Vec<u32>> = self
            .sw
            .iter()
            .map(|s| {
                let mut v: Vec<u32> = s
                    .ports
                    .iter()
                    .filter_map(|p| match p.to {
                        To::Switch(t) => Some(t),
                        _ => None,
                    })
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect();
        let level = |x: u32| self.sw.get(x as usize).map_or(0, |s| s.level);
        // Switches from the top level down.
        let mut top_down: Vec<u32> = (0..n as u32).collect();
        top_down.sort_by_key(|&x| (std::cmp::Reverse(level(x)), x));
        let table: Vec<(u8, u8)> = self
            .leaves
            .par_iter()
            .flat_map_iter(|&dst| {
                let mut g = vec![FAR; n];
                let mut down = vec![FAR; n];
                let mut queue = VecDeque::new();
                // Shortest paths, breadth first.
                set(&mut g, dst, 0);
                queue.push_back(dst);
                while let Some(x) = queue.pop_front() {
                    let d = at(&g, x).saturating_add(1);
                    for &y in neighbours.get(x as usize).into_iter().flatten() {
                        if at(&g, y) == FAR {
                            set(&mut g, y, d);
                            queue.push_back(y);
                        }
                    }
                }
                // Descents into `dst`: from each switch a level above one that descends.
                set(&mut down, dst, 0);
                queue.push_back(dst);
                while let Some(x) = queue.pop_front() {
                    let d = at(&down, x).saturating_add(1);
                    for &y in neighbours.get(x as usize).into_iter().flatten() {
                        if level(y) == level(x) + 1 && at(&down, y) == FAR {
                            set(&mut down, y, d);
                            queue.push_back(y);
                        }
                    }
                }
                // Climb, then descend: a switch's best is its descent or a parent's best + 1.
                let mut updown = down;
                for &x in &top_down {
                    let mut best = at(&updown, x);
                    for &p in neighbours.get(x as usize).into_iter().flatten() {
                        if level(p) == level(x) + 1 && level(x) > 0 {
                            best = best.min(at(&updown, p).saturating_add(1));
                        }
                    }
                    set(&mut updown, x, best);
                }
                self.leaves
                    .iter()
                    .map(|&src| (at(&g, src), at(&updown, src)))
                    .collect::<Vec<_>>()
            })
            .collect();
        Distances {
            leaf_index,
            leaves: self.leaves.len(),
            table,
            hosts,
        }
    }

    /// Adds destination host `d`'s pairs, their routed lengths resolved in `sc` (by
    /// [`Net::resolve`] from every leaf).
    pub(crate) fn excess_of(&self, dist: &Distances, d: u32, sc: &Scratch, acc: &mut ExcessAcc) {
        let Some(dst) = self.ends.get(d as usize) else {
            return;
        };
        let Some(&to) = dist
            .leaf_index
            .get(dst.leaf as usize)
            .filter(|&&i| i != NONE)
        else {
            return;
        };
        let row = (to as usize) * dist.leaves;
        for (i, &l) in self.leaves.iter().enumerate() {
            let c = u64::from(self.hosts_on.get(l as usize).copied().unwrap_or(0))
                - u64::from(l == dst.leaf);
            let routed = crate::net::Reach::hops(
                sc.dist
                    .get(l as usize)
                    .copied()
                    .unwrap_or(weft_fabric::forward::Mark::Unknown),
            );
            let (Some(v), Some(&(g, u))) = (routed, dist.table.get(row + i)) else {
                continue;
            };
            if c == 0 || g == FAR {
                continue;
            }
            // Links: the switch hops plus the two hosts' cables.
            let links = v + 1;
            let over_g = links.saturating_sub(u32::from(g) + 2);
            let over_u = if u == FAR {
                acc.without_updown += c;
                0
            } else {
                acc.updown_pairs += c;
                let o = links.saturating_sub(u32::from(u) + 2);
                if o > 0 {
                    acc.over_updown += c;
                    acc.max_over_updown = acc.max_over_updown.max(o);
                }
                o
            };
            if over_g > 0 {
                acc.over_shortest += c;
                acc.max_over_shortest = acc.max_over_shortest.max(over_g);
            }
            if over_g == 0 && over_u == 0 {
                continue;
            }
            let worse = std::cmp::Reverse((over_g, over_u));
            if acc.worst.len() >= WORST_PAIRS && acc.worst.last().is_some_and(|w| w.0 < worse) {
                continue;
            }
            for &s in dist.hosts.get(i).into_iter().flatten() {
                if s != d {
                    acc.worst.push((worse, s, d, links, u, g));
                }
            }
            acc.trim();
        }
    }

    /// The summed excess, the worst pairs named.
    pub(crate) fn hop_excess(&self, acc: ExcessAcc) -> HopExcess {
        let name = |h: u32| {
            self.end_ports
                .get(h as usize)
                .map_or_else(String::new, |p| {
                    let node = self.state.fabric.node(p.node).name();
                    if p.port.0 == 1 {
                        node.to_owned()
                    } else {
                        format!("{node} port {}", p.port.0)
                    }
                })
        };
        HopExcess {
            updown_pairs: acc.updown_pairs,
            over_updown: acc.over_updown,
            max_over_updown: acc.max_over_updown,
            without_updown: acc.without_updown,
            over_shortest: acc.over_shortest,
            max_over_shortest: acc.max_over_shortest,
            worst: acc
                .worst
                .iter()
                .map(|&(_, s, d, links, u, g)| ExcessPair {
                    source: name(s),
                    destination: name(d),
                    links,
                    updown: (u != FAR).then(|| u32::from(u) + 2),
                    shortest: u32::from(g) + 2,
                })
                .collect(),
        }
    }
}

fn at(v: &[u8], x: u32) -> u8 {
    v.get(x as usize).copied().unwrap_or(FAR)
}

fn set(v: &mut [u8], x: u32, d: u8) {
    if let Some(slot) = v.get_mut(x as usize) {
        *slot = d;
    }
}

#[cfg(test)]
mod tests {

    use crate::{quality, ExcessPair, QualityOptions};
    use weft_fabric::{
        FabricBuilder, FabricState, Guid, Lft, Lid, NodeKind, NodeSpec, PortNum, PortRef,
        SwitchState,
    };

    /// Leaves `L1`, `L2` (port 1 a host, 2 to `S1`, 3 to `S2`), spines `S1`, `S2` (1 to `L1`,
    /// 2 to `L2`, 3 to each other: one level, so not up*/down*). LIDs: `H1` 1, `H2` 2, the
    /// switches 3..=6 in the order L1, L2, S1, S2; `lfts` gives their ports for LIDs 1..=6.
    fn square(lfts: [[u8; 6]; 4]) -> FabricState {
        let mut b = FabricBuilder::new("square");
        let mut node = |name: &str, kind, g: u64, ports| {
            b.add_node(NodeSpec::new(name, kind, Guid(g), ports))
                .unwrap()
        };
        let [l1, l2, s1, s2] = [
            node("L1", NodeKind::Switch, 0x10, 3),
            node("L2", NodeKind::Switch, 0x20, 3),
            node("S1", NodeKind::Switch, 0x30, 3),
            node("S2", NodeKind::Switch, 0x40, 3),
        ];
        let h1 = node("H1", NodeKind::Hca, 0x100, 1);
        let h2 = node("H2", NodeKind::Hca, 0x200, 1);
        for (a, pa, z, pz) in [
            (h1, 1, l1, 1),
            (h2, 1, l2, 1),
            (l1, 2, s1, 1),
            (l1, 3, s2, 1),
            (l2, 2, s1, 2),
            (l2, 3, s2, 2),
            (s1, 3, s2, 3),
        ] {
            b.add_link(PortRef::new(a, pa), PortRef::new(z, pz))
                .unwrap();
        }
        let mut st = FabricState::new(b.finish());
        for (lid, (n, p)) in [(h1, 1), (h2, 1), (l1, 0), (l2, 0), (s1, 0), (s2, 0)]
            .into_iter()
            .enumerate()
        {
            st.lids
                .base
                .entry(n)
                .or_default()
                .insert(PortNum(p), Lid(lid as u16 + 1));
        }
        for (s, table) in [l1, l2, s1, s2].into_iter().zip(lfts) {
            let mut lft = Lft::default();
            for (lid, p) in (1u16..).zip(table) {
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

    #[test]
    fn a_detour_over_one_level_is_one_link_of_excess() {
        // Shortest: H1 → L1 → S1 → L2 → H2 and back.
        let direct = [
            [1, 2, 0, 2, 2, 3],
            [2, 1, 2, 0, 2, 3],
            [1, 2, 1, 2, 0, 3],
            [1, 2, 1, 2, 3, 0],
        ];
        let q = quality(&square(direct), &QualityOptions::default());
        let e = &q.hop_excess;
        assert_eq!((e.updown_pairs, e.without_updown), (2, 0));
        assert_eq!((e.over_updown, e.over_shortest), (0, 0));
        assert!(e.worst.is_empty());
        // S1 sends H2's LID over to S2, which takes it down: H1 → H2 crosses 5 links.
        let mut detour = direct;
        detour[2][1] = 3;
        let q = quality(&square(detour), &QualityOptions::default());
        let e = &q.hop_excess;
        assert_eq!(q.hops.histogram.get(&5), Some(&1));
        assert_eq!((e.updown_pairs, e.without_updown), (2, 0));
        assert_eq!((e.over_updown, e.max_over_updown), (1, 1));
        assert_eq!((e.over_shortest, e.max_over_shortest), (1, 1));
        assert_eq!(
            e.worst,
            vec![ExcessPair {
                source: "H1".into(),
                destination: "H2".into(),
                links: 5,
                updown: Some(4),
                shortest: 4,
            }]
        );
    }

    #[test]
    fn without_the_leaf_uplinks_only_the_spine_link_joins_the_leaves() {
        // L1 keeps only S1, L2 only S2 (the other cables go unused but stay: the shortest
        // up*/down* path is still L1 → S1 → L2). Routed over S1 → S2 it is one link long.
        let over = [
            [1, 2, 0, 2, 2, 2],
            [3, 1, 3, 0, 3, 3],
            [1, 3, 1, 3, 0, 3],
            [3, 2, 3, 2, 3, 0],
        ];
        let q = quality(&square(over), &QualityOptions::default());
        let e = &q.hop_excess;
        assert_eq!(q.hops.histogram.get(&5), Some(&2));
        assert_eq!((e.over_updown, e.over_shortest), (2, 2));
        assert_eq!(e.worst.len(), 2);
        assert_eq!(e.worst[0].source, "H1");
    }
}
