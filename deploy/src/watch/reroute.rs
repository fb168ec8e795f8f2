//! Directed routes around cables gone down, from the topology a discovery already knows: a
//! breadth-first walk from the local port over the links discovery found, minus those with
//! an end down, switches forwarding (as discovery walks, ports in ascending order, so a
//! route is a shortest one). No SMP: the heavy sweep tries the routes.

use crate::discover::Discovery;
use crate::smp::{DrPath, NodeType};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use weft_fabric::{Guid, PortNum, WireEnd};

/// Routes over the links left.
#[derive(Debug, Default)]
pub(super) struct Routes {
    /// Per node reached: the route to it (the first found: a shortest one).
    pub(super) node: BTreeMap<Guid, DrPath>,
    /// Per port reached: the route entering by it.
    pub(super) end: BTreeMap<WireEnd, DrPath>,
}

/// Every link end discovery found, to the end across the link.
pub(super) fn peers(d: &Discovery) -> BTreeMap<WireEnd, WireEnd> {
    d.view
        .links
        .iter()
        .flat_map(|&(a, b)| [(a, b), (b, a)])
        .collect()
}

/// The local node: the one whose route is empty.
pub(super) fn local(d: &Discovery) -> Option<Guid> {
    d.nodes
        .iter()
        .find(|(_, f)| f.path.0.is_empty())
        .map(|(g, _)| *g)
}

/// Whether `path` from `from` leaves by an end in `down`, or by one no link of `peers`
/// leaves (then it leads nowhere known).
pub(super) fn crosses(
    peers: &BTreeMap<WireEnd, WireEnd>,
    from: Guid,
    path: &DrPath,
    down: &BTreeSet<WireEnd>,
) -> bool {
    let mut at = from;
    for &hop in &path.0 {
        let end = (at, PortNum(hop));
        if down.contains(&end) {
            return true;
        }
        match peers.get(&end) {
            Some(far) => at = far.0,
            None => return true,
        }
    }
    false
}

/// Routes from the local node over `d`'s links without those with an end in `down`.
pub(super) fn routes(d: &Discovery, down: &BTreeSet<WireEnd>) -> Routes {
    let mut out = Routes::default();
    let Some(start) = local(d) else {
        return out;
    };
    let peers: BTreeMap<WireEnd, WireEnd> = peers(d)
        .into_iter()
        .filter(|(a, b)| !down.contains(a) && !down.contains(b))
        .collect();
    let is_switch = |g: &Guid| {
        d.nodes
            .get(g)
            .is_some_and(|f| f.info.node_type == NodeType::Switch)
    };
    out.node.insert(start, DrPath::local());
    let mut queue = VecDeque::from([(start, DrPath::local())]);
    while let Some((g, path)) = queue.pop_front() {
        // A switch forwards by every port; the local end node only out of its own port.
        let leave: Vec<(WireEnd, WireEnd)> = if is_switch(&g) {
            peers
                .range((g, PortNum(0))..=(g, PortNum(u8::MAX)))
                .map(|(a, b)| (*a, *b))
                .collect()
        } else if path.0.is_empty() {
            let own = d.nodes.get(&g).map_or(0, |f| f.info.local_port);
            peers
                .get(&(g, PortNum(own)))
                .map(|b| ((g, PortNum(own)), *b))
                .into_iter()
                .collect()
        } else {
            Vec::new()
        };
        for (a, far) in leave {
            let Some(next) = path.then(a.1 .0) else {
                continue;
            };
            out.end.entry(far).or_insert_with(|| next.clone());
            if let std::collections::btree_map::Entry::Vacant(e) = out.node.entry(far.0) {
                e.insert(next.clone());
                if is_switch(&far.0) {
                    queue.push_back((far.0, next));
                }
            }
        }
    }
    out
}
