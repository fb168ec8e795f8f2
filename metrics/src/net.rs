//! The network as the metrics see it: live switches by dense index, hosts by index, directed
//! links by id (`2 × link + side`), and one flat table of where each switch port leads, built
//! with the model's [`forward::leave`]. [`Net::step`] is the model's forwarding step
//! ([`forward::step`]) on those flat tables, for speed (a test holds the two equal on random
//! broken states); [`Net::walk_lanes`] walks flows on it, [`Net::resolve`] a destination's
//! in-tree with [`forward::memo_walk`].

use crate::scratch::{Lane, Scratch};
use std::collections::BTreeMap;
use weft_fabric::forward::{self, Mark, Next};
use weft_fabric::{FabricState, LinkId, NodeId, PortNum, PortRef, LFT_UNSET};

/// No index (no switch, no host, no directed link).
pub(crate) const NONE: u32 = u32::MAX;

/// Where a switch port leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum To {
    /// Unwired, down, or a node that is down.
    Nothing,
    /// A switch (dense index).
    Switch(u32),
    /// An end-node port: its host index, or [`NONE`] when it is not a host.
    End(u32),
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Peer {
    /// Directed link id (`2 × link + side`), [`NONE`] with [`To::Nothing`].
    pub dlink: u32,
    pub to: To,
}

pub(crate) struct Sw<'a> {
    pub id: NodeId,
    pub lft: &'a [u8],
    /// Indexed by port number (0 included, always [`To::Nothing`]).
    pub ports: Vec<Peer>,
    pub level: u32,
    pub lid: Option<u16>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct End {
    pub lid: u16,
    /// The switch the host is cabled to.
    pub leaf: u32,
    /// Host → leaf directed link.
    pub inject: u32,
}

pub(crate) struct Net<'a> {
    pub state: &'a FabricState,
    pub sw: Vec<Sw<'a>>,
    /// The walk's view, flat: LFT per switch, (offset into `peers`, port count) per switch.
    lfts: Vec<&'a [u8]>,
    peer_at: Vec<(u32, u8)>,
    peers: Vec<Peer>,
    pub ends: Vec<End>,
    /// Per host (index into `ends`): its port.
    pub end_ports: Vec<PortRef>,
    pub excluded: usize,
    /// Wired ports of service nodes (not hosts): routed, outside the traffic patterns.
    pub service: usize,
    /// Directed links (2 × links).
    pub dlinks: usize,
    /// Per directed link: switch to switch, up.
    pub is_fabric: Vec<bool>,
    pub fabric_links: usize,
    /// Hosts per switch.
    pub hosts_on: Vec<u32>,
    /// Switches with hosts.
    pub leaves: Vec<u32>,
}

/// One LFT step: [`forward::step`] without the destination's owner (a flow's end is checked
/// against its destination host by the caller).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// No entry ([`forward::Stop::Unset`]).
    Unset,
    /// Port 0, a missing, unwired or down port ([`forward::Stop`]'s other reasons).
    Dead,
    /// Over directed link `.0` to switch `.1` ([`forward::Step::Forward`]).
    Switch(u32, u32),
    /// Over directed link `.0` to host `.1` ([`NONE`]: an end-node port that is not a host).
    End(u32, u32),
}

/// How a switch's route toward the current destination ends: the per-destination memo
/// ([`forward::memo_walk`]) of [`Net::resolve`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// It arrives after this many links.
    Hops(u32),
    /// An unset entry on the way.
    Unset,
    /// Port 0 of another switch, a missing, unwired or down port.
    DeadEnd,
    /// A forwarding loop.
    Loop,
    /// Delivered to the wrong end node (or to a switch when the destination is a switch).
    Misdelivered,
}

impl Reach {
    /// One link further from the destination.
    fn back(self) -> Reach {
        match self {
            Reach::Hops(h) => Reach::Hops(h + 1),
            other => other,
        }
    }

    /// The end of a route as the memo holds it (an unresolved switch: a dead end).
    pub(crate) fn of(m: Mark<Reach>) -> Reach {
        match m {
            Mark::Known(r) => r,
            Mark::Unknown | Mark::OnWalk => Reach::DeadEnd,
        }
    }

    /// The distance in links, when the route arrives.
    pub(crate) fn hops(m: Mark<Reach>) -> Option<u32> {
        match m {
            Mark::Known(Reach::Hops(h)) => Some(h),
            _ => None,
        }
    }
}

fn dlink(link: LinkId, side: usize) -> u32 {
    u32::try_from(link.index() * 2 + side).unwrap_or(NONE)
}

/// The live switches in fabric order, and each node's dense switch index (`NONE`: none).
fn live_switches(state: &FabricState) -> (Vec<u32>, Vec<Sw<'_>>) {
    let nodes = state.fabric.nodes();
    let mut index = vec![NONE; nodes.len()];
    let mut sw = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        if n.is_switch() && !n.down {
            if let Some(slot) = index.get_mut(i) {
                *slot = sw.len() as u32;
            }
            let id = NodeId(i as u32);
            sw.push(Sw {
                id,
                lft: state
                    .switches
                    .get(&id)
                    .map_or(&[][..], |s| s.lft.ports.as_slice()),
                ports: Vec::new(),
                level: 0,
                lid: state.lids.get(id, PortNum(0)).map(|l| l.0),
            });
        }
    }
    (index, sw)
}

/// The hosts a rating counts, and the end ports it does not.
struct Hosts {
    ends: Vec<End>,
    end_ports: Vec<PortRef>,
    /// Host ports left out (no LID, or not on a live cable to a live switch).
    excluded: usize,
    /// Service nodes' cabled ports.
    service: usize,
    /// Each host port's index in `ends`.
    host_of: BTreeMap<PortRef, u32>,
}

impl Hosts {
    /// Hosts, in fabric order: a live port with a LID on a live cable to a live switch, of
    /// an end node whose role is `host`. Service nodes' ports are counted apart.
    fn of(state: &FabricState, index: &[u32]) -> Hosts {
        let f = &state.fabric;
        let switch_at = |n: NodeId| index.get(n.index()).copied().unwrap_or(NONE);
        // The side of `from` on its link: 0 when it is the link's `a` end (`a → b`).
        let side = |link: LinkId, from: PortRef| usize::from(f.link(link).a != from);
        let nodes = f.nodes();
        let mut ends = Vec::new();
        let mut end_ports = Vec::new();
        let mut excluded = 0usize;
        let mut service = 0usize;
        let mut host_of: BTreeMap<PortRef, u32> = BTreeMap::new();
        for (id, n) in f.node_ids().zip(nodes) {
            if n.is_switch() {
                continue;
            }
            if !n.is_host() {
                service += n.ports.iter().filter(|p| p.link.is_some()).count();
                continue;
            }
            for p in &n.ports {
                let me = PortRef {
                    node: id,
                    port: p.num,
                };
                let Some(lid) = state.lids.get(id, p.num) else {
                    if p.link.is_some() {
                        excluded += 1;
                    }
                    continue;
                };
                let leaf = forward::leave(f, me)
                    .ok()
                    .map(|h| (h, switch_at(h.to.node)))
                    .filter(|&(_, leaf)| leaf != NONE);
                match leaf {
                    Some((h, leaf)) => {
                        host_of.insert(me, ends.len() as u32);
                        end_ports.push(me);
                        ends.push(End {
                            lid: lid.0,
                            leaf,
                            inject: dlink(h.link, side(h.link, me)),
                        });
                    }
                    None => excluded += 1,
                }
            }
        }
        Hosts {
            ends,
            end_ports,
            excluded,
            service,
            host_of,
        }
    }
}

/// Switch ports, and the directed switch-to-switch links they carry: returns which directed
/// links are switch-to-switch, and how many.
fn switch_ports(
    state: &FabricState,
    sw: &mut [Sw<'_>],
    index: &[u32],
    host_of: &BTreeMap<PortRef, u32>,
) -> (Vec<bool>, usize) {
    let f = &state.fabric;
    let switch_at = |n: NodeId| index.get(n.index()).copied().unwrap_or(NONE);
    // The side of `from` on its link: 0 when it is the link's `a` end (`a → b`).
    let side = |link: LinkId, from: PortRef| usize::from(f.link(link).a != from);
    let mut is_fabric = vec![false; f.links().len() * 2];
    let mut fabric_links = 0;
    for s in sw.iter_mut() {
        let count = f.nodes().get(s.id.index()).map_or(0, |n| n.spec.port_count);
        s.ports = (0..=count)
            .map(|p| {
                let me = PortRef::new(s.id, p);
                let Ok(h) = forward::leave(f, me) else {
                    return Peer {
                        dlink: NONE,
                        to: To::Nothing,
                    };
                };
                let d = dlink(h.link, side(h.link, me));
                let to = match switch_at(h.to.node) {
                    NONE => To::End(host_of.get(&h.to).copied().unwrap_or(NONE)),
                    t => {
                        if let Some(x) = is_fabric.get_mut(d as usize) {
                            *x = true;
                            fabric_links += 1;
                        }
                        To::Switch(t)
                    }
                };
                Peer { dlink: d, to }
            })
            .collect();
    }
    (is_fabric, fabric_links)
}

/// Levels: 1 for switches with a host, +1 per switch hop (BFS).
fn levels(state: &FabricState, sw: &mut [Sw<'_>]) {
    let f = &state.fabric;
    let is_host = |r: PortRef| f.nodes().get(r.node.index()).is_some_and(|n| n.is_host());
    let mut queue = std::collections::VecDeque::new();
    for (i, s) in sw.iter_mut().enumerate() {
        let has_host = (0..s.ports.len()).any(|p| {
            u8::try_from(p).is_ok_and(|p| {
                forward::leave(f, PortRef::new(s.id, p)).is_ok_and(|h| is_host(h.to))
            })
        });
        if has_host {
            s.level = 1;
            queue.push_back(i);
        }
    }
    while let Some(i) = queue.pop_front() {
        let (lvl, next): (u32, Vec<u32>) = match sw.get(i) {
            Some(s) => (
                s.level,
                s.ports
                    .iter()
                    .filter_map(|p| match p.to {
                        To::Switch(n) => Some(n),
                        _ => None,
                    })
                    .collect(),
            ),
            None => continue,
        };
        for n in next {
            if let Some(t) = sw.get_mut(n as usize) {
                if t.level == 0 {
                    t.level = lvl + 1;
                    queue.push_back(n as usize);
                }
            }
        }
    }
}

impl<'a> Net<'a> {
    pub(crate) fn new(state: &'a FabricState) -> Net<'a> {
        let f = &state.fabric;
        let (index, mut sw) = live_switches(state);
        let Hosts {
            ends,
            end_ports,
            excluded,
            service,
            host_of,
        } = Hosts::of(state, &index);
        let (is_fabric, fabric_links) = switch_ports(state, &mut sw, &index, &host_of);
        levels(state, &mut sw);
        let mut hosts_on = vec![0u32; sw.len()];
        for e in &ends {
            if let Some(c) = hosts_on.get_mut(e.leaf as usize) {
                *c += 1;
            }
        }
        let leaves = (0..sw.len() as u32)
            .filter(|&s| hosts_on.get(s as usize).is_some_and(|&c| c > 0))
            .collect();
        let lfts = sw.iter().map(|x| x.lft).collect();
        let mut peers = Vec::new();
        let mut peer_at = Vec::with_capacity(sw.len());
        for x in &sw {
            peer_at.push((
                peers.len() as u32,
                u8::try_from(x.ports.len().saturating_sub(1)).unwrap_or(u8::MAX),
            ));
            peers.extend_from_slice(&x.ports);
        }
        Net {
            state,
            sw,
            lfts,
            peer_at,
            peers,
            ends,
            end_ports,
            excluded,
            service,
            dlinks: f.links().len() * 2,
            is_fabric,
            fabric_links,
            hosts_on,
            leaves,
        }
    }

    /// Where switch `s` (dense index) sends `lid`.
    #[inline]
    pub(crate) fn step(&self, s: u32, lid: u16) -> Step {
        let (Some(lft), Some(&(base, n))) =
            (self.lfts.get(s as usize), self.peer_at.get(s as usize))
        else {
            return Step::Dead;
        };
        match lft.get(usize::from(lid)) {
            None => Step::Unset,
            Some(&p) if p == LFT_UNSET => Step::Unset,
            Some(&p) if p > n => Step::Dead,
            Some(&p) => match self.peers.get(base as usize + usize::from(p)) {
                Some(Peer {
                    dlink,
                    to: To::Switch(n),
                }) => Step::Switch(*dlink, *n),
                Some(Peer {
                    dlink,
                    to: To::End(e),
                }) => Step::End(*dlink, *e),
                _ => Step::Dead,
            },
        }
    }

    /// Walks `flows` (at most [`LANES`](crate::scratch::LANES)) from source host to
    /// destination host in lockstep, one LFT step per flow per round, so that their table
    /// lookups (cache misses, mostly) overlap. Each lane ends with its directed links and its
    /// outcome.
    pub(crate) fn walk_lanes(&self, flows: &[(u32, u32)], lanes: &mut [Lane]) {
        let n = flows.len().min(lanes.len());
        for (lane, &(a, b)) in lanes.iter_mut().zip(flows) {
            lane.path.clear();
            lane.done = None;
            match (self.ends.get(a as usize), self.ends.get(b as usize)) {
                (Some(s), Some(d)) => {
                    lane.path.push(s.inject);
                    lane.cur = s.leaf;
                    lane.lid = d.lid;
                    lane.dst = b;
                    // More steps than switches: a loop.
                    lane.left = self.sw.len() + 1;
                }
                _ => lane.done = Some(Err(Reach::DeadEnd)),
            }
        }
        loop {
            let mut active = false;
            for lane in lanes.iter_mut().take(n) {
                if lane.done.is_some() {
                    continue;
                }
                if lane.left == 0 {
                    lane.done = Some(Err(Reach::Loop));
                    continue;
                }
                lane.left -= 1;
                active = true;
                match self.step(lane.cur, lane.lid) {
                    Step::Unset => lane.done = Some(Err(Reach::Unset)),
                    Step::Dead => lane.done = Some(Err(Reach::DeadEnd)),
                    Step::Switch(l, next) => {
                        lane.path.push(l);
                        lane.cur = next;
                    }
                    Step::End(l, e) => {
                        lane.path.push(l);
                        lane.done = Some(if e == lane.dst {
                            Ok(())
                        } else {
                            Err(Reach::Misdelivered)
                        });
                    }
                }
            }
            if !active {
                break;
            }
        }
    }

    /// Resolves switch `s`'s route to the destination `lid`, and every switch on its way, into
    /// `sc.dist` (with each switch's directed link out and next switch in `sc.out`,
    /// `sc.next`); `target` is the destination host, or [`NONE`] for a switch target (whose
    /// own `dist` was preset to `Hops(0)`).
    pub(crate) fn resolve(&self, lid: u16, target: u32, s: u32, sc: &mut Scratch) {
        let Scratch {
            dist,
            out,
            next,
            stack,
            ..
        } = sc;
        forward::memo_walk(dist, stack, s as usize, Reach::Loop, Reach::back, |k| {
            let k = k as u32;
            match self.step(k, lid) {
                Step::Unset => Next::End(Reach::Unset),
                Step::Dead => Next::End(Reach::DeadEnd),
                Step::Switch(l, n) => {
                    set(out, k, l);
                    set(next, k, n);
                    Next::To(n as usize)
                }
                Step::End(l, e) if e == target && target != NONE => {
                    set(out, k, l);
                    set(next, k, NONE);
                    Next::End(Reach::Hops(1))
                }
                Step::End(..) => Next::End(Reach::Misdelivered),
            }
        });
    }

    /// The worst load and the sum of loads over the fabric links.
    pub(crate) fn fabric_max_sum<T: Copy + Into<u64>>(&self, load: &[T]) -> (u64, u64) {
        load.iter()
            .zip(&self.is_fabric)
            .filter(|(_, &f)| f)
            .fold((0, 0), |(m, s), (&l, _)| {
                let l: u64 = l.into();
                (m.max(l), s + l)
            })
    }
}

pub(crate) fn set<T>(v: &mut [T], i: u32, x: T) {
    if let Some(slot) = v.get_mut(i as usize) {
        *slot = x;
    }
}

pub(crate) fn mean(sum: f64, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use weft_fabric::forward::{Dest, Stop};
    use weft_verifier::testkit::{self, Rng};

    /// [`Net::step`] is [`forward::step`] on flat tables: on random fabrics, routed and then
    /// broken (entries unset, at port 0, past the last port, anywhere; cables and nodes
    /// down), every live switch's step toward every destination is the model's.
    #[test]
    fn the_flat_step_is_the_models() {
        let mut rng = Rng(0x3e75);
        let mut seen = [0usize; 4];
        for case in 0..300 {
            let f = testkit::small_fabric(&mut rng);
            let mut st = testkit::route_updown(&f, testkit::sequential_lids(&f));
            for _ in 0..1 + rng.below(4) {
                testkit::break_forwarding(&mut rng, &mut st);
            }
            let net = Net::new(&st);
            for d in Dest::all(&st) {
                for (k, s) in net.sw.iter().enumerate() {
                    let ours = net.step(k as u32, d.lid.0);
                    let model = forward::step(&st, s.id, d);
                    let host = |to: PortRef| {
                        net.ends
                            .iter()
                            .position(|e| {
                                st.lids.get(to.node, to.port) == Some(weft_fabric::Lid(e.lid))
                            })
                            .map_or(NONE, |i| i as u32)
                    };
                    // The directed link of a hop out of `s`: side 0 when it leaves at the
                    // cable's `a` end.
                    let dl = |h: forward::Hop| {
                        let from = PortRef {
                            node: s.id,
                            port: h.out,
                        };
                        dlink(h.link, usize::from(st.fabric.link(h.link).a != from))
                    };
                    let expected = match model {
                        forward::Step::Stop(Stop::Unset) => Step::Unset,
                        // Into an end-node port that is not the destination's: the flat step
                        // names the host (the caller compares it with the flow's).
                        forward::Step::Stop(Stop::Misdelivered(p)) if p.0 != 0 => {
                            let h = forward::leave(
                                &st.fabric,
                                PortRef {
                                    node: s.id,
                                    port: p,
                                },
                            )
                            .unwrap();
                            Step::End(dl(h), host(h.to))
                        }
                        // Entry 0 leads nowhere in the flat table (a switch target is preset
                        // as arrived, never stepped from).
                        forward::Step::Arrive | forward::Step::Stop(_) => Step::Dead,
                        forward::Step::Forward(h) => Step::Switch(
                            dl(h),
                            net.sw.iter().position(|x| x.id == h.to.node).unwrap() as u32,
                        ),
                        forward::Step::Deliver(h) => Step::End(dl(h), host(h.to)),
                    };
                    assert_eq!(ours, expected, "case {case}: {d:?} at {:?}", s.id);
                    seen[match ours {
                        Step::Unset => 0,
                        Step::Dead => 1,
                        Step::Switch(..) => 2,
                        Step::End(..) => 3,
                    }] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&c| c > 50), "{seen:?}");
    }
}
