//! A tiny reference semantics, written straight from the verifier's semantics (the crate
//! documentation, `docs/verify.md`) and independent of the explicit engine's flat view: walk
//! one route on the concrete tables of a [`FabricState`].
//!
//! The z3 engine takes its facts from here, and tests replay every witness with it, so a bug
//! in the explicit engine's one-hop code shows up as a disagreement.

use crate::report::{
    Channel, CreditLoop, FailedRoute, FailurePattern, FailureReason, Route, Unscheduled, Witness,
};
use weft_fabric::{FabricState, Lid, LinkState, NodeId, PortNum, PortRef, Sl};

/// One hop: at `node`, in on `in_port` (0 at the source), out on `out`, on `vl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RefHop {
    /// Node.
    pub node: NodeId,
    /// Input port (0 at the source).
    pub in_port: u8,
    /// Output port.
    pub out: u8,
    /// VL on the output link.
    pub vl: u8,
}

/// A walked route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefWalk {
    /// Hops that left a node on a valid VL, in order.
    pub hops: Vec<RefHop>,
    /// `None` when the route arrives; else where it failed and why.
    pub failure: Option<(NodeId, FailureReason)>,
}

fn live_peer(st: &FabricState, n: NodeId, p: u8) -> Result<PortRef, FailureReason> {
    let f = &st.fabric;
    let node = f
        .nodes()
        .get(n.index())
        .ok_or(FailureReason::PortMissing { port: p })?;
    let port = node
        .port(PortNum(p))
        .ok_or(FailureReason::PortMissing { port: p })?;
    let link = port.link.ok_or(FailureReason::PortUnwired { port: p })?;
    let l = f
        .links()
        .get(link.index())
        .ok_or(FailureReason::PortUnwired { port: p })?;
    let other = l
        .other(PortRef {
            node: n,
            port: PortNum(p),
        })
        .ok_or(FailureReason::PortUnwired { port: p })?;
    let far_down = f.nodes().get(other.node.index()).is_none_or(|x| x.down);
    if l.state != LinkState::Up || far_down || node.down {
        return Err(FailureReason::PortDown { port: p });
    }
    Ok(other)
}

fn check_vl(st: &FabricState, n: NodeId, p: u8, vl: u8) -> Result<(), FailureReason> {
    let other = live_peer(st, n, p)?;
    let cap = |m: NodeId| {
        st.fabric
            .nodes()
            .get(m.index())
            .map_or(0, |x| x.spec.caps.vl_cap)
    };
    let c = cap(n).min(cap(other.node)).min(15);
    if vl == 15 || vl >= c {
        return Err(FailureReason::VlNotOperational {
            port: p,
            vl,
            vl_cap: c,
        });
    }
    if let Some(m) = st.max_vls.filter(|&m| vl >= m) {
        return Err(FailureReason::VlAboveMaxVls {
            port: p,
            vl,
            max_vls: m,
        });
    }
    // The sending port's VL arbitration: an entry of weight above 0 for the VL; without a
    // table, VL 0 only.
    let why = match st
        .ports
        .get(&PortRef::new(n, p))
        .and_then(|x| x.vlarb.as_ref())
    {
        None if vl == 0 => return Ok(()),
        None => Unscheduled::NoTable,
        Some(t) if t.schedules(vl) => return Ok(()),
        Some(t) if t.lists(vl) => Unscheduled::ZeroWeight,
        Some(_) => Unscheduled::NotListed,
    };
    Err(FailureReason::VlNotScheduled { port: p, vl, why })
}

/// The port owning `dlid`.
pub fn owner(st: &FabricState, dlid: Lid) -> Option<(NodeId, u8)> {
    if let Some(v) = st.lids.vport(dlid) {
        return Some((v.host.node, v.host.port.0));
    }
    let span = 1u16 << st.lids.lmc.min(7);
    for (&n, ports) in &st.lids.base {
        let sw = st
            .fabric
            .nodes()
            .get(n.index())
            .is_some_and(|x| x.is_switch());
        for (&p, &base) in ports {
            let s = if sw { 1 } else { span };
            if dlid.0 >= base.0 && u32::from(dlid.0) < u32::from(base.0) + u32::from(s) {
                return Some((n, p.0));
            }
        }
    }
    None
}

/// Walks the route (source `src` port `port`, `dlid`, `sl`); a switch source uses port 0.
/// A route that comes back to a switch fails there with a loop.
pub fn walk(st: &FabricState, src: NodeId, port: u8, dlid: Lid, sl: u8) -> RefWalk {
    let mut hops = Vec::new();
    let dst = owner(st, dlid);
    let is_switch = |n: NodeId| {
        st.fabric
            .nodes()
            .get(n.index())
            .is_some_and(|x| x.is_switch())
    };
    let fail = |hops: Vec<RefHop>, n: NodeId, r: FailureReason| RefWalk {
        hops,
        failure: Some((n, r)),
    };
    let (mut x, mut i) = if is_switch(src) {
        (src, 0u8)
    } else {
        let peer = match live_peer(st, src, port) {
            Ok(p) => p,
            Err(r) => return fail(hops, src, r),
        };
        let vl = st.injection_vl(PortRef::new(src, port), Sl(sl)).0;
        if let Err(r) = check_vl(st, src, port, vl) {
            return fail(hops, src, r);
        }
        if !is_switch(peer.node) && Some((peer.node, peer.port.0)) != dst {
            return fail(hops, src, FailureReason::Misdelivered { port });
        }
        hops.push(RefHop {
            node: src,
            in_port: 0,
            out: port,
            vl,
        });
        if !is_switch(peer.node) {
            return RefWalk {
                hops,
                failure: None,
            };
        }
        (peer.node, peer.port.0)
    };
    let mut visited = std::collections::BTreeSet::new();
    loop {
        if !visited.insert(x) {
            return fail(hops, x, FailureReason::Loop);
        }
        let Some(sw) = st.switches.get(&x) else {
            return fail(hops, x, FailureReason::Unset);
        };
        let Some(PortNum(o)) = sw.lft.get(dlid) else {
            return fail(hops, x, FailureReason::Unset);
        };
        if o == 0 {
            return if dst == Some((x, 0)) {
                RefWalk {
                    hops,
                    failure: None,
                }
            } else {
                fail(hops, x, FailureReason::Misdelivered { port: 0 })
            };
        }
        let peer = match live_peer(st, x, o) {
            Ok(p) => p,
            Err(r) => return fail(hops, x, r),
        };
        if !is_switch(peer.node) && Some((peer.node, peer.port.0)) != dst {
            return fail(hops, x, FailureReason::Misdelivered { port: o });
        }
        let Some(vl) = sw.vl(PortNum(i), PortNum(o), Sl(sl)) else {
            return fail(
                hops,
                x,
                FailureReason::Sl2VlUnassigned {
                    in_port: i,
                    out_port: o,
                },
            );
        };
        if let Err(r) = check_vl(st, x, o, vl.0) {
            return fail(hops, x, r);
        }
        hops.push(RefHop {
            node: x,
            in_port: i,
            out: o,
            vl: vl.0,
        });
        if !is_switch(peer.node) {
            return RefWalk {
                hops,
                failure: None,
            };
        }
        x = peer.node;
        i = peer.port.0;
    }
}

/// Checks that `route` is what the tables do: same hops, and (for a failed route) the same
/// failure at `at`. Returns what differs.
pub fn replay_route(
    st: &FabricState,
    route: &Route,
    expect_failure: Option<(NodeId, FailureReason)>,
) -> Result<(), String> {
    let w = walk(st, route.src.node.id, route.src.port, route.dlid, route.sl);
    let ours: Vec<(NodeId, u8, Option<u8>, Option<u8>)> = w
        .hops
        .iter()
        .map(|h| (h.node, h.in_port, Some(h.out), Some(h.vl)))
        .collect();
    let theirs: Vec<(NodeId, u8, Option<u8>, Option<u8>)> = route
        .hops
        .iter()
        .filter(|h| h.vl.is_some())
        .map(|h| (h.node.id, h.in_port, h.out_port, h.vl))
        .collect();
    // A witness of a loop may go round more than once; compare the prefix the walk took.
    let n = ours.len().min(theirs.len());
    if ours.get(..n) != theirs.get(..n)
        || (expect_failure.map(|f| f.1) != Some(FailureReason::Loop) && ours.len() != theirs.len())
    {
        return Err(format!(
            "hops differ: tables give {ours:?}, witness says {theirs:?}"
        ));
    }
    if w.failure != expect_failure {
        return Err(format!(
            "outcome differs: tables give {:?}, witness says {:?}",
            w.failure, expect_failure
        ));
    }
    Ok(())
}

/// Checks a witness of a failed route on the tables: same hops, same failure.
pub fn replay_witness(st: &FabricState, w: &Witness) -> Result<(), String> {
    replay_route(st, &w.route, Some((w.at.id, w.reason)))
}

/// Checks a listed failed route on the tables: it fails where and why the report says.
pub fn replay_failed(st: &FabricState, f: &FailedRoute) -> Result<(), String> {
    let w = walk(st, f.src.node.id, f.src.port, f.dlid, f.sl);
    if w.failure != Some((f.at.id, f.reason)) {
        return Err(format!(
            "route from `{}` port {} to LID {} SL {}: tables give {:?}, the report says {:?} at `{}`",
            f.src.node.name, f.src.port, f.dlid.0, f.sl, w.failure, f.reason, f.at.name
        ));
    }
    Ok(())
}

/// Checks a failure pattern on the tables: every witness and every listed route replays, and
/// each is of the pattern's kind (reason, and whether it fails at its source).
pub fn replay_pattern(st: &FabricState, p: &FailurePattern) -> Result<(), String> {
    for w in &p.witnesses {
        replay_witness(st, w)?;
        if w.reason.kind() != p.reason {
            return Err(format!(
                "witness reason {:?} in a {:?} pattern",
                w.reason, p.reason
            ));
        }
    }
    for f in &p.listed {
        replay_failed(st, f)?;
        if f.reason.kind() != p.reason || (f.at.id == f.src.node.id) != p.at_source {
            return Err(format!(
                "listed route {f:?} is not of its pattern {:?}",
                p.reason
            ));
        }
    }
    if (p.listed.len() as u64) > p.routes || p.routes == 0 {
        return Err(format!("{} listed of {} routes", p.listed.len(), p.routes));
    }
    Ok(())
}

fn same_channel(h: &RefHop, c: &Channel) -> bool {
    h.node == c.node.id && h.out == c.port && h.vl == c.vl
}

/// Checks a credit loop on the tables: the cycle closes, and each dependency's route takes
/// its two channels one after the other (following a forwarding loop as far as it goes; for
/// a multicast route, its `dlid` an MLID, some copy of the sender's packet does).
pub fn replay_credit_loop(st: &FabricState, l: &CreditLoop) -> Result<(), String> {
    if l.cycle.len() < 2 {
        return Err("a cycle needs at least two dependencies".to_owned());
    }
    for (k, d) in l.cycle.iter().enumerate() {
        let next = l.cycle.get((k + 1) % l.cycle.len()).ok_or("empty cycle")?;
        if d.to != next.from {
            return Err(format!("dependency {k} does not chain to the next"));
        }
        let r = &d.route;
        let hit = if let Some(mlid) = weft_fabric::Mlid::new(r.dlid.0) {
            // A multicast copy: some copy of the sender's packet takes `from`, and one made
            // from it takes `to`.
            let fl = flood(st, mlid, r.sl, r.src.node.id, r.src.port);
            fl.copies.iter().any(|c| {
                same_channel(&c.hop, &d.to)
                    && c.from
                        .and_then(|j| fl.copies.get(j))
                        .is_some_and(|a| same_channel(&a.hop, &d.from))
            })
        } else {
            // Follow the route on the tables, going round forwarding loops up to a bound.
            let hops = follow(st, r.src.node.id, r.src.port, r.dlid, r.sl);
            hops.windows(2)
                .any(|w| matches!(w, [a, b] if same_channel(a, &d.from) && same_channel(b, &d.to)))
        };
        if !hit {
            return Err(format!(
                "the route from `{}` to LID {} does not take the dependency {k}",
                r.src.node.name, r.dlid.0
            ));
        }
    }
    Ok(())
}

/// The hops of a route, continuing through forwarding loops until a (node, in port, VL)
/// state repeats.
pub fn follow(st: &FabricState, src: NodeId, port: u8, dlid: Lid, sl: u8) -> Vec<RefHop> {
    let w = walk(st, src, port, dlid, sl);
    let mut hops = w.hops;
    if w.failure.map(|f| f.1) != Some(FailureReason::Loop) {
        return hops;
    }
    // Continue from the last hop by hand.
    let mut seen: std::collections::BTreeSet<(NodeId, u8, u8)> = Default::default();
    for _ in 0..100_000 {
        let Some(&last) = hops.last() else { break };
        let Ok(peer) = live_peer(st, last.node, last.out) else {
            break;
        };
        let x = peer.node;
        let i = peer.port.0;
        if !seen.insert((x, i, last.vl)) {
            break;
        }
        let Some(sw) = st.switches.get(&x) else { break };
        let Some(PortNum(o)) = sw.lft.get(dlid) else {
            break;
        };
        if o == 0 {
            break;
        }
        let Some(vl) = sw.vl(PortNum(i), PortNum(o), Sl(sl)) else {
            break;
        };
        if check_vl(st, x, o, vl.0).is_err() {
            break;
        }
        hops.push(RefHop {
            node: x,
            in_port: i,
            out: o,
            vl: vl.0,
        });
    }
    hops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Rng};
    use proptest::prelude::*;
    use weft_fabric::forward::{self, Fate, Routes, Stop};

    /// The reference's reason for a stop of the model's step.
    fn reason(stop: Stop) -> FailureReason {
        match stop {
            Stop::Unset => FailureReason::Unset,
            Stop::PortMissing(PortNum(port)) => FailureReason::PortMissing { port },
            Stop::Unwired(PortNum(port)) => FailureReason::PortUnwired { port },
            Stop::Down(PortNum(port)) => FailureReason::PortDown { port },
            Stop::Misdelivered(PortNum(port)) => FailureReason::Misdelivered { port },
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The model's forwarding ([`forward::walk`], and [`Routes`], its memoised form) is
        /// this hop-by-hop reference walk, written apart from it: on random small fabrics,
        /// routed min-hop or up/down and then broken in 1 to 4 places (entries unset, at port
        /// 0, past the last port, anywhere; cables and nodes down), from every live switch
        /// toward every destination, the route arrives after as many cables, or stops at the
        /// same switch for the same reason, or loops, in both.
        #[test]
        fn forward_walks_are_the_reference_walk(seed in any::<u64>(), breaks in 1usize..5) {
            let mut rng = Rng(seed);
            let st = testkit::broken_state(&mut rng, breaks);
            let mut routes = Routes::new(&st);
            let live: Vec<NodeId> = st
                .fabric
                .node_ids()
                .filter(|&x| st.fabric.node(x).is_switch() && !st.fabric.node(x).down)
                .collect();
            for d in forward::Dest::all(&st) {
                for &x in &live {
                    let mut crossed = 0u32;
                    let fate = forward::walk(&st, x, d, |_| crossed += 1);
                    prop_assert_eq!(routes.fate(x, d), fate, "memoised, {:?} from {:?}", d, x);
                    let r = walk(&st, x, 0, d.lid, 0);
                    match fate {
                        Fate::Arrives { hops } => {
                            prop_assert_eq!(&r.failure, &None, "{:?} from {:?}", d, x);
                            prop_assert_eq!(r.hops.len(), hops as usize);
                            // `walk` reports every cable but the last one into an end node.
                            let last = u32::from(!st.fabric.node(d.owner.node).is_switch() && hops > 0);
                            prop_assert_eq!(crossed + last, hops);
                        }
                        Fate::Stops { at, why } => {
                            prop_assert_eq!(r.failure, Some((at, reason(why))), "{:?} from {:?}", d, x);
                        }
                        Fate::Loops => {
                            prop_assert!(
                                matches!(r.failure, Some((_, FailureReason::Loop))),
                                "{:?} from {:?}: {:?}", d, x, r.failure
                            );
                        }
                    }
                }
            }
        }
    }
}

/// One copy of a multicast packet leaving a node: the hop, and the copy it was made from
/// (an index into [`RefFlood::copies`]; `None` for the sender's own first hop).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefCopy {
    /// The hop.
    pub hop: RefHop,
    /// The copy this one came from.
    pub from: Option<usize>,
}

/// What one sender's packet to a multicast group does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RefFlood {
    /// Every copy that left a node on a valid VL, breadth first. A copy that comes back to a
    /// switch is followed once more per (switch, input port, VL) it arrives with, so the
    /// copies' dependencies are all there.
    pub copies: Vec<RefCopy>,
    /// Copies delivered per member port (port 0: a switch itself).
    pub delivered: std::collections::BTreeMap<(NodeId, u8), u32>,
    /// Steps between switches, `(from, to)`, the one that closes a loop included.
    pub steps: Vec<(NodeId, NodeId)>,
    /// Whether a copy came back to a switch it had passed.
    pub looped: bool,
    /// The sender sends nothing: it is down, or its link is not up to a switch.
    pub offline: bool,
    /// Whether a copy was dropped on a VL its port cannot send (or an unassigned SL2VL entry).
    pub dropped: bool,
}

/// Follows every copy of a packet of MLID `mlid` on SL `sl` sent by `src` port `port` (a
/// switch sends on port 0), by the MFTs: a switch copies it to every port of its mask but the
/// one it came in on.
pub fn flood(st: &FabricState, mlid: weft_fabric::Mlid, sl: u8, src: NodeId, port: u8) -> RefFlood {
    let mut out = RefFlood::default();
    let is_switch = |n: NodeId| {
        st.fabric
            .nodes()
            .get(n.index())
            .is_some_and(|x| x.is_switch())
    };
    if st.fabric.nodes().get(src.index()).is_none_or(|x| x.down) {
        out.offline = true;
        return out;
    }
    // (switch, in port, in VL, copy it came from)
    let mut queue: std::collections::VecDeque<(NodeId, u8, u8, Option<usize>)> =
        std::collections::VecDeque::new();
    if is_switch(src) {
        queue.push_back((src, 0, 0, None));
    } else {
        let peer = match live_peer(st, src, port) {
            Ok(p) if is_switch(p.node) => p,
            _ => {
                out.offline = true;
                return out;
            }
        };
        let vl = st.injection_vl(PortRef::new(src, port), Sl(sl)).0;
        if check_vl(st, src, port, vl).is_err() {
            out.dropped = true;
            return out;
        }
        out.copies.push(RefCopy {
            hop: RefHop {
                node: src,
                in_port: 0,
                out: port,
                vl,
            },
            from: None,
        });
        queue.push_back((peer.node, peer.port.0, vl, Some(0)));
    }
    let mut passed = std::collections::BTreeSet::new();
    let mut states = std::collections::BTreeSet::new();
    while let Some((x, i, vin, from)) = queue.pop_front() {
        if let Some(c) = from.and_then(|k| out.copies.get(k)) {
            if is_switch(c.hop.node) {
                out.steps.push((c.hop.node, x));
            }
        }
        if !passed.insert(x) {
            out.looped = true;
        }
        if !states.insert((x, i, vin)) {
            continue;
        }
        let Some(sw) = st.switches.get(&x) else {
            continue;
        };
        let mask = st
            .multicast
            .mfts
            .get(&x)
            .map_or(weft_fabric::PortMask::EMPTY, |m| m.get(mlid));
        for PortNum(o) in mask.iter() {
            if o == i && i != 0 {
                continue;
            }
            if o == 0 {
                *out.delivered.entry((x, 0)).or_default() += 1;
                continue;
            }
            let Ok(peer) = live_peer(st, x, o) else {
                continue;
            };
            let Some(vl) = sw.vl(PortNum(i), PortNum(o), Sl(sl)) else {
                out.dropped = true;
                continue;
            };
            if check_vl(st, x, o, vl.0).is_err() {
                out.dropped = true;
                continue;
            }
            out.copies.push(RefCopy {
                hop: RefHop {
                    node: x,
                    in_port: i,
                    out: o,
                    vl: vl.0,
                },
                from,
            });
            let k = out.copies.len() - 1;
            if is_switch(peer.node) {
                queue.push_back((peer.node, peer.port.0, vl.0, Some(k)));
            } else {
                *out.delivered.entry((peer.node, peer.port.0)).or_default() += 1;
            }
        }
    }
    out
}

impl RefFlood {
    /// The hops from the sender to copy `k`, in order.
    pub fn path(&self, k: usize) -> Vec<RefHop> {
        let mut v = Vec::new();
        let mut at = Some(k);
        while let Some(c) = at.and_then(|j| self.copies.get(j)) {
            v.push(c.hop);
            at = c.from;
            if v.len() > self.copies.len() {
                break;
            }
        }
        v.reverse();
        v
    }
}
