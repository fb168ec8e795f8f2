//! Which SLs a (source switch, destination LID) pair takes in each class: vFtree's lane
//! matrix over the leaves (Paper III's Algorithm 1, [`vftree_matrix`], and its closed form
//! [`vftree_lane`]), dFtree's fast and slow lanes, each on the routing's layer for the pair.

use super::LaneMap;
use crate::routing::Layers;
use crate::LaneScheme;
use weft_fabric::{FabricState, NodeId, PortRef, Sl};

/// The lane Algorithm 1 ([`vftree_matrix`]) gives the pair of leaves `a`, `b` over `maxvl`
/// lanes, without the matrix: each pair `s < d` is set once, while source `s` is processed, to
/// `s`'s start plus the number of leaves between them, and the other half mirrors it.
pub fn vftree_lane(a: usize, b: usize, maxvl: u8) -> u8 {
    let m = usize::from(maxvl.max(1));
    if a == b {
        return 0;
    }
    let (s, d) = (a.min(b), a.max(b));
    let start = if ((s * 2) / m) % 2 == 1 {
        (s * 2) % m + 1
    } else {
        (s * 2) % m
    };
    ((start + d - s - 1) % m) as u8
}

/// Paper III's Algorithm 1: the lane of every (source leaf, destination leaf) pair of `n`
/// leaves over `maxvl` lanes. Symmetric; a leaf's own traffic is on lane 0.
pub fn vftree_matrix(n: usize, maxvl: u8) -> Vec<Vec<u8>> {
    let m = usize::from(maxvl.max(1));
    // Row-major, `None` until set.
    let mut vl: Vec<Option<u8>> = vec![None; n * n];
    let mut set = |a: usize, b: usize, v: usize| {
        if let Some(slot) = vl.get_mut(a * n + b).filter(|s| s.is_none()) {
            *slot = Some(v as u8);
        }
    };
    for s in 0..n {
        // A starting lane per source so the sequences of consecutive sources overlap less.
        let mut v = if ((s * 2) / m) % 2 == 1 {
            (s * 2) % m + 1
        } else {
            (s * 2) % m
        };
        for d in s + 1..n {
            set(s, d, v);
            set(d, s, v);
            v = (v + 1) % m;
        }
        // Intra-leaf traffic on the first lane.
        set(s, s, 0);
    }
    vl.chunks(n.max(1))
        .take(n)
        .map(|row| row.iter().map(|v| v.unwrap_or(0)).collect())
        .collect()
}

/// The leaf switches of a fabric in declaration order: switches with an end node cabled to
/// them (down or not), with their index among the leaves.
pub fn leaves(state: &FabricState) -> Vec<Option<u32>> {
    let f = &state.fabric;
    let mut leaf = vec![false; f.nodes().len()];
    for l in f.links() {
        for (me, peer) in [(l.a, l.b), (l.b, l.a)] {
            if f.node(me.node).is_switch() && !f.node(peer.node).is_switch() {
                if let Some(l) = leaf.get_mut(me.node.index()) {
                    *l = true;
                }
            }
        }
    }
    let mut next = 0u32;
    leaf.into_iter()
        .map(|is| {
            is.then(|| {
                next += 1;
                next - 1
            })
        })
        .collect()
}

/// What decides the SLs of a (source switch, destination LID) pair: the routing's layer for
/// it, and for vFtree classes the leaves at both ends.
pub(super) struct Pairs<'a> {
    map: &'a LaneMap,
    /// The routing's layer per source switch and LID, when it has layers.
    pub(super) layers: Option<&'a Layers>,
    /// Per node: its index among the leaves.
    leaf_of_node: Vec<Option<u32>>,
    /// Leaves.
    pub(super) n_leaves: usize,
    /// Per class: its vFtree lanes (`maxvl`).
    vftree: Vec<Option<u8>>,
    /// Per LID: its owner.
    pub(super) owners: Vec<Option<(NodeId, weft_fabric::PortNum)>>,
    /// Per LID: the leaf its owner sits on.
    pub(super) dst_leaf: Vec<Option<u32>>,
}

impl<'a> Pairs<'a> {
    pub(super) fn new(
        state: &FabricState,
        map: &'a LaneMap,
        layers: Option<&'a Layers>,
    ) -> Pairs<'a> {
        let leaf_of_node = leaves(state);
        let n_leaves = leaf_of_node.iter().flatten().count();
        let vftree = map
            .classes
            .iter()
            .map(|c| match c.scheme {
                LaneScheme::Vftree { maxvl } => Some(maxvl),
                _ => None,
            })
            .collect();
        let owners = state.lids.owners(&state.fabric);
        let dst_leaf = owners
            .iter()
            .map(|o| {
                let (n, p) = (*o)?;
                let sw = state.source_switch(PortRef::new(n, p.0))?;
                leaf_of_node.get(sw.index()).copied().flatten()
            })
            .collect();
        Pairs {
            map,
            layers,
            leaf_of_node,
            n_leaves,
            vftree,
            owners,
            dst_leaf,
        }
    }

    /// Whether SLs differ between pairs toward one destination.
    pub(super) fn per_pair(&self) -> bool {
        self.layers.is_some() || self.vftree.iter().any(Option::is_some)
    }

    /// Whether switch `x`'s sources may send unlike the default.
    pub(super) fn varies_from(&self, x: NodeId) -> bool {
        self.leaf_of_node
            .get(x.index())
            .copied()
            .flatten()
            .is_some()
            || self.layers.is_some_and(|l| l.by_source.contains_key(&x))
    }

    /// The SLs class `c` uses from the sources at switch `x` toward `lid` (`None` for `x`: a
    /// source at no switch): the first is what the SA answers (dFtree: the fast lane), then
    /// the slow lane for dFtree.
    pub(super) fn class_sls(&self, c: usize, x: Option<NodeId>, lid: usize) -> (Sl, Option<Sl>) {
        let layers = self.map.layers;
        let Some(class) = self.map.classes.get(c) else {
            return (Sl(0), None);
        };
        let layer = x
            .and_then(|x| self.layers.and_then(|l| l.by_source.get(&x)))
            .and_then(|r| r.get(lid).copied())
            .unwrap_or(0);
        match class.scheme {
            LaneScheme::Single => (class.sl_of(0, layer, layers), None),
            LaneScheme::Dftree => (
                class.sl_of(0, layer, layers),
                Some(class.sl_of(1, layer, layers)),
            ),
            LaneScheme::Vftree { .. } => {
                let src_leaf = x.and_then(|x| self.leaf_of_node.get(x.index()).copied().flatten());
                let dst_leaf = self.dst_leaf.get(lid).copied().flatten();
                let lane = match (src_leaf, dst_leaf, self.vftree.get(c)) {
                    (Some(a), Some(b), Some(&Some(m))) => vftree_lane(a as usize, b as usize, m),
                    _ => 0,
                };
                (class.sl_of(lane, layer, layers), None)
            }
        }
    }

    /// Every SL any class uses from switch `x`'s sources toward `lid`.
    pub(super) fn set(&self, x: Option<NodeId>, lid: usize) -> u16 {
        (0..self.map.classes.len())
            .map(|c| self.class_sls(c, x, lid))
            .fold(0u16, |s, (a, b)| s | 1 << a.0 | b.map_or(0, |b| 1 << b.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Paper III's properties: symmetric, intra-leaf on lane 0, lanes below `maxvl`, and with
    /// 4 lanes the first lane of consecutive sources cycles 0, 2, 1, 3.
    #[test]
    fn vftree_matrix_properties() {
        for maxvl in 2..=15u8 {
            for n in [1usize, 2, 5, 36] {
                let m = vftree_matrix(n, maxvl);
                for (a, row) in m.iter().enumerate() {
                    assert_eq!(row[a], 0);
                    for (b, &v) in row.iter().enumerate() {
                        assert_eq!(v, m[b][a], "symmetric");
                        assert!(v < maxvl);
                    }
                }
            }
        }
        // The closed form the compiler uses is the matrix.
        for maxvl in 1..=15u8 {
            for n in [1usize, 3, 17, 40] {
                let m = vftree_matrix(n, maxvl);
                for (a, row) in m.iter().enumerate() {
                    for (b, &v) in row.iter().enumerate() {
                        assert_eq!(vftree_lane(a, b, maxvl), v, "{a} {b} over {maxvl}");
                    }
                }
            }
        }
        let m = vftree_matrix(36, 4);
        let starts: Vec<u8> = (0..8).map(|s| m[s][s + 1]).collect();
        assert_eq!(starts, [0, 2, 1, 3, 0, 2, 1, 3]);
    }
}
