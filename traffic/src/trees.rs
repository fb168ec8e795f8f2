//! Congestion trees, from the run's stall counters.
//!
//! While an output port stalls for credits, the simulator notes what it waits on: the
//! output its next hop's head packet on the starved VL asked for (that packet holds the
//! next hop's input buffer full), or the end node the port feeds. Per port it keeps the
//! stall time in the measured window by what it waited on.
//!
//! A port is *congested* when it stalled at least [`STALL_SHARE`] of the window. Its
//! *parent* is what it waited on longest, if that was at least [`STALL_SHARE`] of the
//! window too. Following parents from a congested port leads to a *root*: the first port
//! that is not congested (it sends on, saturated, and the ports behind it wait), or a
//! congested port that waited on the end node it feeds. A root must be saturated, busy at
//! least [`ROOT_UTILISATION`] of the window, or wait on its end node; chains to anything
//! else are not trees. A tree is its root and every congested port whose chain reaches it,
//! by level (level 1 waits on the root).

use serde::Serialize;
use std::collections::BTreeMap;

/// A port is congested when it stalled at least this share of the measured window.
pub const STALL_SHARE: f64 = 0.05;
/// A root that does not wait on an end node is busy at least this share of the window.
pub const ROOT_UTILISATION: f64 = 0.9;

/// One directed channel's counters, as the simulator hands them over.
pub(crate) struct Port {
    pub from: String,
    pub to: String,
    /// The end node it feeds, if it feeds one.
    pub end_node: Option<String>,
    pub utilisation: f64,
    pub stall_ps: u64,
    /// Stall time by what it waited on (a port index, or [`crate::sim::END_NODE`]).
    pub stall_to: Vec<(u32, u64)>,
}

/// One congestion tree.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CongestionTree {
    /// The root, `node:port` (the sending end).
    pub root: String,
    /// Where the root's link goes, `node:port`.
    pub to: String,
    /// The end node the root feeds, if it feeds one.
    pub end_node: Option<String>,
    /// The root's utilisation in the window.
    pub utilisation: f64,
    /// The root's own stall in the window, in nanoseconds (waiting on its end node).
    pub root_stall_ns: f64,
    /// The ports in the tree by level: level 1 (first) waits on the root, level 2 on level
    /// 1, …; each sorted by port.
    pub levels: Vec<Vec<TreePort>>,
    /// Ports in the tree, the root left out.
    pub ports: usize,
    /// Stall of the tree's ports and its root, in nanoseconds.
    pub stall_ns: f64,
}

/// One port of a congestion tree.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TreePort {
    /// `node:port`, the sending end.
    pub port: String,
    /// Where its link goes.
    pub to: String,
    /// The port it waits on, one level down (the root at level 1).
    pub toward: String,
    /// Its stall in the window, in nanoseconds.
    pub stall_ns: f64,
}

/// The trees among `ports`, over a window of `window_ps`.
pub(crate) fn find(ports: &[Port], window_ps: u64) -> Vec<CongestionTree> {
    let floor = (window_ps as f64 * STALL_SHARE).ceil() as u64;
    let congested = |i: usize| ports.get(i).is_some_and(|p| p.stall_ps >= floor.max(1));
    // Parent: what the port waited on longest (ties: the lowest), if long enough.
    let parent = |i: usize| -> Option<u32> {
        let p = ports.get(i)?;
        let best = p
            .stall_to
            .iter()
            .copied()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))?;
        (best.1 >= floor.max(1)).then_some(best.0)
    };
    let is_end = |x: u32| x == crate::sim::END_NODE;
    // Per root: members (port, level).
    let mut trees: BTreeMap<usize, Vec<(usize, usize)>> = BTreeMap::new();
    for i in (0..ports.len()).filter(|&i| congested(i)) {
        if parent(i).is_some_and(is_end) {
            trees.entry(i).or_default();
            continue;
        }
        let (mut at, mut level) = (i, 0usize);
        let root = loop {
            let Some(next) = parent(at) else {
                break None;
            };
            if is_end(next) {
                break Some(at);
            }
            level += 1;
            at = next as usize;
            if level > ports.len() {
                break None;
            }
            if !congested(at) {
                let saturated = ports
                    .get(at)
                    .is_some_and(|p| p.utilisation >= ROOT_UTILISATION);
                break saturated.then_some(at);
            }
        };
        // A congested port with no parent ends a chain without a root.
        let Some(root) = root else {
            continue;
        };
        if root == i {
            trees.entry(i).or_default();
            continue;
        }
        trees.entry(root).or_default().push((i, level));
    }
    let ns = |ps: u64| ps as f64 / 1000.0;
    let mut out: Vec<CongestionTree> = trees
        .into_iter()
        .filter(|(_, m)| !m.is_empty())
        .filter_map(|(r, members)| {
            let root = ports.get(r)?;
            let depth = members.iter().map(|m| m.1).max().unwrap_or(0);
            let mut levels: Vec<Vec<TreePort>> = vec![Vec::new(); depth];
            let mut stall = root.stall_ps;
            for &(i, level) in &members {
                let p = ports.get(i)?;
                let toward = parent(i)
                    .and_then(|t| ports.get(t as usize))
                    .map_or_else(String::new, |t| t.from.clone());
                stall += p.stall_ps;
                levels.get_mut(level.checked_sub(1)?)?.push(TreePort {
                    port: p.from.clone(),
                    to: p.to.clone(),
                    toward,
                    stall_ns: ns(p.stall_ps),
                });
            }
            for l in &mut levels {
                l.sort_by(|a, b| weft_formats::hostlist::natural_cmp(&a.port, &b.port));
            }
            Some(CongestionTree {
                root: root.from.clone(),
                to: root.to.clone(),
                end_node: root.end_node.clone(),
                utilisation: root.utilisation,
                root_stall_ns: ns(root.stall_ps),
                ports: members.len(),
                levels,
                stall_ns: ns(stall),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.stall_ns
            .total_cmp(&a.stall_ns)
            .then_with(|| weft_formats::hostlist::natural_cmp(&a.root, &b.root))
    });
    out
}
