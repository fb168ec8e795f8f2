//! Rails from the cabling: which leaves form a rail, each HCA's rail (its leaf's), whether the
//! fabric is rail-optimised at all, and the machines whose cables cross rails.
//!
//! A machine's HCAs have a *rank*: where their device sits among a complete machine's
//! (`HCA-6` is the fourth of `HCA-1, HCA-2, HCA-5, HCA-6` even on a machine whose `HCA-5` is
//! absent): the devices of the machines with the most HCAs, in natural order, vote for each
//! device name's rank; an HCA whose device name none of them has ranks by its position in
//! its own machine. A *rail* is the set of leaves (the switch an HCA's first cabled port
//! reaches) on which one rank is the most common among the machines' HCAs (ties to the
//! lower rank); the rail's number is that rank. An HCA's rail is its leaf's rail.
//!
//! The fabric is *rail-optimised* when more than half its machines of several HCAs reach a
//! different leaf with each HCA; otherwise (a director fabric whose machines put all their
//! HCAs on one top-of-rack switch) leaves have no rail and each HCA's rail is its rank.
//!
//! A machine is *crossed* when its HCAs reach the leaves of its own ranks' rails in another
//! order: an HCA is on the leaf of another rail than its rank's, where its peers' HCAs of
//! that rank are not (a swapped pair of rail cables). A machine cabled to other rails
//! altogether (a two-HCA server on rails 2 and 3) is not crossed: it has no peers to cross
//! with. Every HCA takes its leaf's rail, unless two of one machine would share one; then
//! they take their ranks.

use super::{natural, split};
use crate::{Fabric, NodeId, PortRef};
use std::collections::BTreeMap;

/// What the cabling says about a fabric's rails, for machines given as groups of HCAs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rails {
    /// Machines of several HCAs looked at.
    pub machines: usize,
    /// Of those, the ones whose HCAs each reach a different leaf.
    pub spread: usize,
    /// Of those, the ones whose HCAs all reach one leaf.
    pub one_leaf: usize,
    /// Whether more than half the machines spread their HCAs over leaves.
    pub optimised: bool,
    /// Per leaf, its rail (empty when the fabric is not rail-optimised).
    pub leaf_rail: BTreeMap<NodeId, u8>,
    /// Per group given, its members' rails in the order given.
    pub rails: Vec<Vec<u8>>,
    /// The machines whose HCAs reach other rails' leaves than their peers', by group index.
    pub crossed: Vec<Crossed>,
}

/// A machine whose HCAs land on other rails' leaves than its peers'.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Crossed {
    /// The group's index in the groups given.
    pub group: usize,
    /// Its HCAs on a leaf of another rail than their rank's.
    pub misplaced: Vec<Misplaced>,
}

/// One HCA on a leaf of another rail than its peers of its rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Misplaced {
    /// The HCA.
    pub node: NodeId,
    /// The leaf its cable reaches.
    pub leaf: NodeId,
    /// Its rank: the rail its peers' HCAs of that rank are on.
    pub expected: u8,
    /// The rail of the leaf it reaches.
    pub found: u8,
}

impl Rails {
    /// Whether rail metrics mean anything here: the fabric is rail-optimised.
    pub fn is_optimised(&self) -> bool {
        self.optimised
    }
}

/// The leaf of an end node: the switch its first cabled port reaches.
pub fn leaf_of(fabric: &Fabric, node: NodeId) -> Option<NodeId> {
    let n = fabric.node(node);
    n.ports.iter().find_map(|p| {
        let (far, _) = fabric.peer(PortRef { node, port: p.num })?;
        fabric.node(far.node).is_switch().then_some(far.node)
    })
}

/// The rails of `groups` (each a machine's HCAs, two or more; smaller groups are ignored and
/// get their positions) as the cabling shows them.
pub fn rails(fabric: &Fabric, groups: &[Vec<NodeId>]) -> Rails {
    let leaves: Vec<Vec<Option<NodeId>>> = groups
        .iter()
        .map(|g| g.iter().map(|&n| leaf_of(fabric, n)).collect())
        .collect();
    let mut out = Rails::default();
    for l in leaves.iter().filter(|l| l.len() >= 2) {
        out.machines += 1;
        let mut seen: Vec<NodeId> = l.iter().flatten().copied().collect();
        let cabled = seen.len();
        seen.sort_unstable();
        seen.dedup();
        if cabled == l.len() && seen.len() == l.len() {
            out.spread += 1;
        }
        if cabled == l.len() && seen.len() == 1 {
            out.one_leaf += 1;
        }
    }
    out.optimised = out.machines > 0 && out.spread * 2 > out.machines;
    let ranks = ranks(fabric, groups);
    if out.optimised {
        let mut votes: BTreeMap<NodeId, BTreeMap<u8, usize>> = BTreeMap::new();
        for (l, r) in leaves.iter().zip(&ranks).filter(|(l, _)| l.len() >= 2) {
            for (leaf, &rank) in l.iter().zip(r) {
                if let Some(leaf) = leaf {
                    *votes.entry(*leaf).or_default().entry(rank).or_default() += 1;
                }
            }
        }
        out.leaf_rail = votes
            .into_iter()
            .filter_map(|(leaf, v)| majority(&v).map(|r| (leaf, r)))
            .collect();
    }
    for (k, (l, r)) in leaves.iter().zip(&ranks).enumerate() {
        let by_leaf: Vec<u8> = l
            .iter()
            .zip(r)
            .map(|(leaf, &rank)| {
                leaf.and_then(|x| out.leaf_rail.get(&x).copied())
                    .unwrap_or(rank)
            })
            .collect();
        let misplaced: Vec<Misplaced> = l
            .iter()
            .zip(r)
            .zip(groups.get(k).into_iter().flatten())
            .filter_map(|((leaf, &rank), &node)| {
                let leaf = (*leaf)?;
                let found = *out.leaf_rail.get(&leaf)?;
                (found != rank).then_some(Misplaced {
                    node,
                    leaf,
                    expected: rank,
                    found,
                })
            })
            .collect();
        // Crossed: the leaves' rails are the machine's own ranks in another order (a
        // machine cabled to other rails altogether, a two-HCA server on rails 3 and 4, has no
        // peers to cross with).
        let mut a = by_leaf.clone();
        let mut b = r.clone();
        a.sort_unstable();
        b.sort_unstable();
        let permuted = a == b
            && l.iter()
                .all(|x| x.is_some_and(|x| out.leaf_rail.contains_key(&x)));
        if l.len() >= 2 && permuted && !misplaced.is_empty() {
            out.crossed.push(Crossed {
                group: k,
                misplaced,
            });
        }
        let pick = [by_leaf, r.clone()]
            .into_iter()
            .find(|v| distinct(v))
            .unwrap_or_else(|| (0..l.len()).map(clamp).collect());
        out.rails.push(pick);
    }
    out
}

/// Per group, each member's rank: its device name's among the largest machines, else its
/// position.
fn ranks(fabric: &Fabric, groups: &[Vec<NodeId>]) -> Vec<Vec<u8>> {
    let full = groups.iter().map(Vec::len).max().unwrap_or(0);
    let mut votes: BTreeMap<&str, BTreeMap<u8, usize>> = BTreeMap::new();
    for g in groups.iter().filter(|g| g.len() == full && full >= 2) {
        let mut devices: Vec<&str> = Vec::with_capacity(g.len());
        for &n in g {
            match split(fabric.node(n).name()) {
                Some((_, d)) => devices.push(d),
                None => break,
            }
        }
        if devices.len() != g.len() {
            continue;
        }
        devices.sort_by_key(|d| natural(d));
        for (pos, d) in devices.into_iter().enumerate() {
            *votes.entry(d).or_default().entry(clamp(pos)).or_default() += 1;
        }
    }
    let rank_of: BTreeMap<&str, u8> = votes
        .iter()
        .filter_map(|(d, v)| majority(v).map(|r| (*d, r)))
        .collect();
    groups
        .iter()
        .map(|g| {
            let by_name: Vec<u8> = g
                .iter()
                .enumerate()
                .map(|(pos, &n)| {
                    split(fabric.node(n).name())
                        .and_then(|(_, d)| rank_of.get(d).copied())
                        .unwrap_or_else(|| clamp(pos))
                })
                .collect();
            if distinct(&by_name) {
                by_name
            } else {
                (0..g.len()).map(clamp).collect()
            }
        })
        .collect()
}

/// The most common key (ties to the lowest).
fn majority(votes: &BTreeMap<u8, usize>) -> Option<u8> {
    let mut best: Option<(u8, usize)> = None;
    for (&k, &n) in votes {
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((k, n));
        }
    }
    best.map(|(k, _)| k)
}

fn distinct(v: &[u8]) -> bool {
    let mut s = v.to_vec();
    s.sort_unstable();
    s.windows(2).all(|w| w.first() != w.get(1))
}

fn clamp(pos: usize) -> u8 {
    u8::try_from(pos).unwrap_or(u8::MAX)
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::{FabricBuilder, Guid, NodeKind, NodeSpec};

    /// `machines` machines of `hcas` HCAs (`m{i} HCA-{d}` for the devices `devs`), HCA `r` of
    /// machine `i` on leaf `r` port `i + 1`, except where `swap` says (machine, a, b): those
    /// two HCAs' leaves swapped.
    fn fabric(
        machines: usize,
        devs: &[u8],
        swap: Option<(usize, usize, usize)>,
        one_leaf: bool,
    ) -> (Fabric, Vec<Vec<NodeId>>, Vec<NodeId>) {
        let mut b = FabricBuilder::new("t");
        let mut leaves = Vec::new();
        for r in 0..devs.len() {
            let s = NodeSpec::new(
                format!("leaf{r}"),
                NodeKind::Switch,
                Guid(0x10 + r as u64),
                36,
            );
            leaves.push(b.add_node(s).unwrap());
        }
        let mut groups = Vec::new();
        for i in 0..machines {
            let mut g = Vec::new();
            for (r, d) in devs.iter().enumerate() {
                let guid = Guid(0x1000 + 0x10 * (i * 16 + r) as u64);
                let s = NodeSpec::new(format!("m{i} HCA-{d}"), NodeKind::Hca, guid, 1);
                let n = b.add_node(s).unwrap();
                let mut leaf = r;
                if let Some((m, x, y)) = swap {
                    if m == i && (r == x || r == y) {
                        leaf = if r == x { y } else { x };
                    }
                }
                let (leaf, port) = if one_leaf {
                    (i % devs.len(), r + 1 + 8 * (i / devs.len()))
                } else {
                    (leaf, i + 1)
                };
                b.add_link(PortRef::new(n, 1), PortRef::new(leaves[leaf], port as u8))
                    .unwrap();
                g.push(n);
            }
            groups.push(g);
        }
        (b.finish(), groups, leaves)
    }

    #[test]
    fn rails_are_leaves_and_a_missing_hca_keeps_its_rank() {
        let (f, mut groups, leaves) = fabric(6, &[1, 2, 5, 6], None, false);
        // Machine 5 has no HCA-5: its HCA-6 is third by position, fourth by rank.
        let g5 = groups.pop().unwrap();
        groups.push(vec![g5[0], g5[1], g5[3]]);
        let r = rails(&f, &groups);
        assert!(r.optimised);
        assert_eq!((r.machines, r.spread, r.one_leaf), (6, 6, 0));
        assert_eq!(
            r.leaf_rail
                .iter()
                .map(|(&l, &x)| (l, x))
                .collect::<Vec<_>>(),
            leaves
                .iter()
                .enumerate()
                .map(|(i, &l)| (l, i as u8))
                .collect::<Vec<_>>()
        );
        assert_eq!(r.rails[5], [0, 1, 3]);
        assert!(r.crossed.is_empty());
    }

    #[test]
    fn a_swapped_pair_of_cables_is_crossed_and_takes_its_leaves_rails() {
        let (f, groups, leaves) = fabric(6, &[1, 2, 5, 6], Some((4, 2, 3)), false);
        let r = rails(&f, &groups);
        assert_eq!(r.rails[4], [0, 1, 3, 2]);
        assert_eq!(
            r.crossed,
            [Crossed {
                group: 4,
                misplaced: vec![
                    Misplaced {
                        node: groups[4][2],
                        leaf: leaves[3],
                        expected: 2,
                        found: 3
                    },
                    Misplaced {
                        node: groups[4][3],
                        leaf: leaves[2],
                        expected: 3,
                        found: 2
                    }
                ]
            }]
        );
    }

    #[test]
    fn a_smaller_machine_keeps_its_ranks_rails() {
        let (f, mut groups, _) = fabric(6, &[1, 2, 5, 6], None, false);
        // Machine 5 keeps only its HCA-5 and HCA-6: ranks 2, 3 on rails 2, 3.
        let g5 = groups.pop().unwrap();
        groups.push(vec![g5[2], g5[3]]);
        let r = rails(&f, &groups);
        assert_eq!(r.rails[5], [2, 3]);
        assert!(r.crossed.is_empty());
    }

    #[test]
    fn machines_on_one_leaf_are_not_rail_optimised() {
        let (f, groups, _) = fabric(8, &[0, 1, 2, 3], None, true);
        let r = rails(&f, &groups);
        assert!(!r.optimised);
        assert_eq!((r.machines, r.spread, r.one_leaf), (8, 0, 8));
        assert!(r.leaf_rail.is_empty() && r.crossed.is_empty());
        assert_eq!(r.rails[0], [0, 1, 2, 3]);
    }
}
