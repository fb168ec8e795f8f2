//! Is this fabric a fat-tree? The question OpenSM's ftree asks of a discovered fabric, asked of
//! the cabling: leaves are the switches with end nodes, each further level is one cable
//! further from the leaves, end nodes hang off leaves only, and every switch-to-switch cable
//! joins adjacent levels.
//!
//! Levels come from the cables as built, down links and down switches included, so a tree with
//! faults keeps the shape it was cabled as (a leaf whose hosts are all down is still a leaf).
//! A fabric whose switches all record a level (the stdlib's trees, or an import that wrote
//! them) keeps the recorded levels.
//!
//! Unlike OpenSM, uneven trees are fat-trees here: switches of one level that differ in their
//! numbers of up and down cables (OpenSM's `ERR AB09`–`AB0C` refusals, typical of a degraded or
//! partly populated tree) are counted and reported, not refused; `fat_tree` routes them.

use std::collections::{BTreeMap, VecDeque};
use weft_fabric::{Fabric, NodeId};

/// The most levels a detected fat-tree may have (OpenSM's ftree ranks stop at 8 too).
pub const MAX_LEVELS: u8 = 8;

/// What the cabling looks like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A fat-tree.
    FatTree(TreeShape),
    /// Anything else, and why.
    Other {
        /// Why it is not a fat-tree (lowercase, names in backticks).
        reason: String,
        /// A node to point at.
        node: Option<NodeId>,
    },
}

/// A fat-tree's levels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeShape {
    /// Level per node index (leaves are 1; `None` for end nodes).
    pub levels: Vec<Option<u8>>,
    /// The highest level.
    pub height: u8,
    /// Number of leaf switches.
    pub leaves: usize,
    /// Whether the levels were recorded by the description rather than found.
    pub recorded: bool,
    /// Switches whose numbers of up and down switch cables differ from the most common ones
    /// of their level (what OpenSM's ftree refuses).
    pub uneven: usize,
}

impl TreeShape {
    /// One line: "a 3-level fat-tree (36 leaves; levels found from the hosts)".
    pub fn describe(&self) -> String {
        let origin = if self.recorded {
            "levels recorded by the description"
        } else {
            "levels found from the hosts"
        };
        let uneven = match self.uneven {
            0 => String::new(),
            1 => "; 1 switch has fewer or more cables than its level-mates".to_owned(),
            n => format!("; {n} switches have fewer or more cables than their level-mates"),
        };
        let leaves = match self.leaves {
            1 => "1 leaf".to_owned(),
            n => format!("{n} leaves"),
        };
        format!(
            "a {}-level fat-tree ({leaves}; {origin}{uneven})",
            self.height
        )
    }
}

/// Level per node index found from the hosts, over every cable (up or down): `Err` with the
/// reason when no switch has end nodes or a switch is not connected to any leaf.
pub fn levels_from_hosts(fabric: &Fabric) -> Result<Vec<Option<u8>>, (String, Option<NodeId>)> {
    let n = fabric.nodes().len();
    let mut level: Vec<Option<u8>> = vec![None; n];
    let mut switch_peers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for l in fabric.links() {
        let (a, b) = (l.a.node, l.b.node);
        match (fabric.node(a).is_switch(), fabric.node(b).is_switch()) {
            (true, true) => {
                switch_peers[a.index()].push(b.index());
                switch_peers[b.index()].push(a.index());
            }
            (true, false) => level[a.index()] = Some(1),
            (false, true) => level[b.index()] = Some(1),
            (false, false) => {}
        }
    }
    let mut queue: VecDeque<usize> = (0..n).filter(|&i| level[i] == Some(1)).collect();
    if queue.is_empty() {
        return Err((
            "no switch has end nodes cabled to it, so there are no leaves".into(),
            None,
        ));
    }
    while let Some(i) = queue.pop_front() {
        let next = level[i].unwrap_or(1).saturating_add(1);
        for &p in &switch_peers[i] {
            if level[p].is_none() {
                level[p] = Some(next);
                queue.push_back(p);
            }
        }
    }
    if let Some(id) = fabric
        .node_ids()
        .find(|&id| fabric.node(id).is_switch() && level[id.index()].is_none())
    {
        return Err((
            format!("`{}` is not connected to any leaf", fabric.node(id).name()),
            Some(id),
        ));
    }
    Ok(level)
}

/// Whether `fabric` is a fat-tree, with its levels.
pub fn detect(fabric: &Fabric) -> Shape {
    let other = |reason: String, node: Option<NodeId>| Shape::Other { reason, node };
    if fabric.switch_count() == 0 {
        return other("the fabric has no switches".into(), None);
    }
    let recorded = fabric
        .nodes()
        .iter()
        .filter(|n| n.is_switch())
        .all(|n| n.spec.level.is_some());
    let levels = if recorded {
        fabric
            .nodes()
            .iter()
            .map(|n| if n.is_switch() { n.spec.level } else { None })
            .collect()
    } else {
        match levels_from_hosts(fabric) {
            Ok(l) => l,
            Err((reason, node)) => return other(reason, node),
        }
    };
    let height = levels.iter().flatten().copied().max().unwrap_or(0);
    if height > MAX_LEVELS {
        return other(
            format!("it has more than {MAX_LEVELS} levels, the most a fat-tree is detected with"),
            None,
        );
    }
    let name = |id: NodeId| fabric.node(id).name().to_owned();
    // (up, down) switch cables per switch.
    let mut updown: Vec<(u32, u32)> = vec![(0, 0); levels.len()];
    for l in fabric.links() {
        let (a, b) = (l.a.node, l.b.node);
        match (levels[a.index()], levels[b.index()]) {
            (Some(la), Some(lb)) if la + 1 == lb => {
                updown[a.index()].0 += 1;
                updown[b.index()].1 += 1;
            }
            (Some(la), Some(lb)) if lb + 1 == la => {
                updown[b.index()].0 += 1;
                updown[a.index()].1 += 1;
            }
            (Some(la), Some(lb)) => {
                let why = if la == lb {
                    format!(
                        "`{}` and `{}` are both at level {la} and cabled to each other",
                        name(a),
                        name(b)
                    )
                } else {
                    format!(
                        "`{}` (level {la}) is cabled to `{}` (level {lb}), skipping a level",
                        name(a),
                        name(b)
                    )
                };
                return other(why, Some(a));
            }
            (Some(la), None) | (None, Some(la)) if la != 1 => {
                let (sw, end) = if levels[a.index()].is_some() {
                    (a, b)
                } else {
                    (b, a)
                };
                return other(
                    format!(
                        "`{}` hangs off `{}`, which is at level {la}, not a leaf",
                        name(end),
                        name(sw)
                    ),
                    Some(sw),
                );
            }
            _ => {}
        }
    }
    // The most common (up, down) per level; switches that differ are uneven.
    let mut counts: BTreeMap<(u8, (u32, u32)), usize> = BTreeMap::new();
    for id in fabric.node_ids() {
        if let Some(l) = levels[id.index()] {
            *counts.entry((l, updown[id.index()])).or_default() += 1;
        }
    }
    let mut common: BTreeMap<u8, ((u32, u32), usize)> = BTreeMap::new();
    for (&(l, ud), &c) in &counts {
        let e = common.entry(l).or_insert((ud, 0));
        if c > e.1 {
            *e = (ud, c);
        }
    }
    let uneven = fabric
        .node_ids()
        .filter(|id| {
            levels[id.index()]
                .is_some_and(|l| common.get(&l).is_some_and(|c| c.0 != updown[id.index()]))
        })
        .count();
    let leaves = levels.iter().filter(|&&l| l == Some(1)).count();
    Shape::FatTree(TreeShape {
        levels,
        height,
        leaves,
        recorded,
        uneven,
    })
}
