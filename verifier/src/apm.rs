//! `apm_disjoint`: with LMC > 0, every pair of end ports has an alternate path that shares no
//! switch-to-switch cable with its primary, so Automatic Path Migration survives any one cable
//! between switches failing.
//!
//! A destination port owns `2^lmc` LIDs; its *primary* path is the route to its base LID, its
//! *alternate* the route to the base LID + 1 (what an SM hands out as the alternate path
//! record). For every source end port (grouped by the switch it is cabled to: they share
//! routes) and every destination end port, both routes are walked; they must both arrive and
//! share no cable between two switches (the source's and the destination's own cables are
//! necessarily shared by single-port HCAs and do not count).
//!
//! [`survivors`] answers the fault question: which flows lose their primary path to cables
//! that are down, and of those, whose alternate path still arrives.

use crate::report::{Endpoint, NodeRef, Outcome};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use weft_fabric::{forward, FabricState, Lid, NodeId, PortRef, ValidState};

/// A pair whose primary and alternate paths share a cable between switches.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SharedCable {
    /// The switch the sources are cabled to.
    pub from: NodeRef,
    /// The destination port.
    pub dst: Endpoint,
    /// The primary LID and the alternate.
    pub lids: (Lid, Lid),
    /// The shared cable: one end.
    pub a: Endpoint,
    /// The other end.
    pub b: Endpoint,
    /// Source ports at `from` (pairs sharing this way).
    pub pairs: u64,
}

impl SharedCable {
    /// One sentence.
    pub fn describe(&self) -> String {
        format!(
            "from `{}` to `{}` port {}, the primary path (LID {}) and the alternate (LID {}) both cross the cable `{}` port {} – `{}` port {} ({} source port(s))",
            self.from.name,
            self.dst.node.name,
            self.dst.port,
            self.lids.0 .0,
            self.lids.1 .0,
            self.a.node.name,
            self.a.port,
            self.b.node.name,
            self.b.port,
            self.pairs
        )
    }
}

/// What checking `apm_disjoint` found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Apm {
    /// Proven, violated, or unknown (LMC 0, or routes that do not arrive).
    pub outcome: Outcome,
    /// (source port, destination port) pairs checked.
    pub pairs: u64,
    /// Pairs whose paths share a cable, in all.
    pub shared_pairs: u64,
    /// Some of them, one per (source switch, destination).
    pub shared: Vec<SharedCable>,
    /// Pairs where the primary or the alternate route does not arrive.
    pub undelivered: u64,
}

/// Flows that lose their primary path to down cables, and whether the alternate survives.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Survivors {
    /// (source port, destination port) pairs whose primary path no longer arrives.
    pub lost_primary: u64,
    /// Of those, the pairs whose alternate path still arrives (APM moves them at once).
    pub alternate_survives: u64,
}

/// The switch-to-switch cables (link indices) a route from switch `x` to `lid` crosses, and
/// whether it arrives at `dst` (the model's [`forward::walk`]).
fn walk(st: &FabricState, x: NodeId, lid: Lid, dst: PortRef, cables: &mut Vec<u32>) -> bool {
    cables.clear();
    let dest = forward::Dest { lid, owner: dst };
    forward::walk(st, x, dest, |h| cables.push(h.link.0)).arrives()
}

/// End ports cabled to each source switch.
type Sources = Vec<(NodeId, Vec<PortRef>)>;

/// Destination end ports (with their base LID) and source switches (with the end ports cabled
/// to them).
fn endpoints(st: &FabricState) -> (Vec<(PortRef, Lid)>, Sources) {
    let f = &st.fabric;
    let mut dsts = Vec::new();
    let mut at: std::collections::BTreeMap<NodeId, Vec<PortRef>> = Default::default();
    for (&n, ports) in &st.lids.base {
        if f.node(n).is_switch() || f.node(n).down {
            continue;
        }
        for (&p, &lid) in ports {
            let r = PortRef { node: n, port: p };
            if let Some(peer) = f.live_peer(r).filter(|p| f.node(p.node).is_switch()) {
                at.entry(peer.node).or_default().push(r);
                dsts.push((r, lid));
            }
        }
    }
    (dsts, at.into_iter().collect())
}

fn endpoint(st: &FabricState, r: PortRef) -> Endpoint {
    Endpoint {
        node: node_ref(st, r.node),
        port: r.port.0,
    }
}

fn node_ref(st: &FabricState, n: NodeId) -> NodeRef {
    let node = st.fabric.node(n);
    NodeRef {
        id: n,
        name: node.name().to_owned(),
        guid: node.guid(),
    }
}

/// Checks `apm_disjoint`, listing at most `max_listed` shared cables.
pub fn check(state: &ValidState, max_listed: usize) -> Apm {
    let st = state.state();
    if st.lids.lmc == 0 {
        return Apm {
            outcome: Outcome::Unknown(
                "LMC is 0: ports have one LID each, so there are no alternate paths".to_owned(),
            ),
            pairs: 0,
            shared_pairs: 0,
            shared: Vec::new(),
            undelivered: 0,
        };
    }
    let (dsts, sources) = endpoints(st);
    // Per destination: (pairs, shared pairs, listed, undelivered).
    let per: Vec<(u64, u64, Vec<SharedCable>, u64)> = dsts
        .par_iter()
        .map(|&(dst, base)| {
            let alt = Lid(base.0 + 1);
            let (mut pairs, mut shared, mut undelivered) = (0, 0, 0);
            let mut listed = Vec::new();
            let (mut p, mut a) = (Vec::new(), Vec::new());
            for (x, ports) in &sources {
                let n = ports.iter().filter(|&&r| r != dst).count() as u64;
                if n == 0 {
                    continue;
                }
                pairs += n;
                if !walk(st, *x, base, dst, &mut p) || !walk(st, *x, alt, dst, &mut a) {
                    undelivered += n;
                    continue;
                }
                if let Some(&c) = p.iter().find(|c| a.contains(c)) {
                    shared += n;
                    if listed.len() < max_listed {
                        let l = st.fabric.link(weft_fabric::LinkId(c));
                        listed.push(SharedCable {
                            from: node_ref(st, *x),
                            dst: endpoint(st, dst),
                            lids: (base, alt),
                            a: endpoint(st, l.a),
                            b: endpoint(st, l.b),
                            pairs: n,
                        });
                    }
                }
            }
            (pairs, shared, listed, undelivered)
        })
        .collect();
    let pairs = per.iter().map(|p| p.0).sum();
    let shared_pairs = per.iter().map(|p| p.1).sum();
    let undelivered = per.iter().map(|p| p.3).sum();
    let mut shared: Vec<SharedCable> = per.into_iter().flat_map(|p| p.2).collect();
    shared.sort();
    shared.truncate(max_listed);
    let outcome = if shared_pairs > 0 {
        Outcome::Violated
    } else if undelivered > 0 {
        Outcome::Unknown(format!(
            "{undelivered} (source, destination) pair(s) have a primary or alternate route that does not arrive (see `connected`)"
        ))
    } else if pairs == 0 {
        Outcome::Unknown("no pairs of end ports".to_owned())
    } else {
        Outcome::Proven
    };
    Apm {
        outcome,
        pairs,
        shared_pairs,
        shared,
        undelivered,
    }
}

/// On `state` (tables that were made for a fabric where some cables have since gone down):
/// the pairs whose primary path no longer arrives, and of those the ones whose alternate still
/// does. Nothing when LMC is 0.
pub fn survivors(state: &FabricState) -> Survivors {
    if state.lids.lmc == 0 {
        return Survivors::default();
    }
    let (dsts, sources) = endpoints(state);
    dsts.par_iter()
        .map(|&(dst, base)| {
            let mut s = Survivors::default();
            let mut scratch = Vec::new();
            for (x, ports) in &sources {
                let n = ports.iter().filter(|&&r| r != dst).count() as u64;
                if n == 0 || walk(state, *x, base, dst, &mut scratch) {
                    continue;
                }
                s.lost_primary += n;
                if walk(state, *x, Lid(base.0 + 1), dst, &mut scratch) {
                    s.alternate_survives += n;
                }
            }
            s
        })
        .reduce(Survivors::default, |a, b| Survivors {
            lost_primary: a.lost_primary + b.lost_primary,
            alternate_survives: a.alternate_survives + b.alternate_survives,
        })
}
