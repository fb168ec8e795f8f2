//! Minimal repairs after a fault: the current tables on the fabric the fault left, with only
//! the entries the fault forces changed, and a lower bound on the LFT SMPs any repair sends.
//!
//! Every route that a change of the fabric breaks is the current route cut short at a switch
//! whose entry leads over a dead cable or to a dead node (the current tables were loop-free
//! where they arrived, and no entry changed). Such a *dead entry* at a switch whose route
//! is required must change, so every (switch, 64-entry block) holding one is written at least
//! once: that is [`LowerBound::dead_blocks`]. When every live neighbour of that switch routes
//! the destination back through it (so no new port alone mends it), some neighbour's route
//! must change too: one more block for each such case whose candidate blocks are disjoint
//! from the others' and from the dead blocks ([`LowerBound::detours`]).
//!
//! `repair` mends each broken destination from its dead entries outward, in one of two
//! ways ([`How`]): a *detour* moves each dead entry to the cheapest way to a switch whose
//! route still arrives (a path through switches whose blocks are written anyway costs
//! nothing, each other block one), preferring the desired state's port where it ties; a
//! *structured* repair gives every switch whose route fails the desired state's entry (on
//! a fat tree: the affected up entries to another live up port, and the sources' way to the
//! destination through another spine that still reaches it), keeping up/down structure.
//! Every other entry is kept; the caller chooses per destination (detours first, the
//! destinations on the credit loops detours close the structured way) and proves the result
//! ([`crate::plan`]).

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use weft_fabric::forward::{self, Dest, Mark, Next};
use weft_fabric::{FabricState, NodeId, PortRef, ValidState, LFT_UNSET};
use weft_formats::plan::LFT_BLOCK;
use weft_verifier::Scope;

/// How a repair mends a broken destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum How {
    /// Each dead entry to the cheapest way to a switch whose route arrives.
    Detour,
    /// Every switch whose route fails takes the desired state's entry.
    Structured,
}

impl How {
    /// Its name in reports: `detour` or `structured`.
    pub fn name(self) -> &'static str {
        match self {
            How::Detour => "detour",
            How::Structured => "structured",
        }
    }
}

/// A lower bound on the LFT SMPs of any repair of a fault (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LowerBound {
    /// LFT block writes any repair sends at least: `dead_blocks + detours`.
    pub smps: u64,
    /// (switch, block) pairs holding an entry whose next hop is dead, at a switch whose route
    /// to that destination is required.
    pub dead_blocks: u64,
    /// Further blocks: dead entries no new port alone mends (every live neighbour routes the
    /// destination back through the switch), counted once per disjoint set of candidates.
    pub detours: u64,
}

/// Where a port leads (over a live cable).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum To {
    Nothing,
    Switch(u32),
    End(PortRef),
}

/// How a switch's route to the destination at hand ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Arrives,
    /// It stops at this switch index (a dead entry there).
    Stops(u32),
    Loops,
}

/// The live switches of the fabric a fault left, their live cables, and tables being mended.
struct Net {
    switches: Vec<NodeId>,
    /// Per node: its switch index (`u32::MAX`: none, or not live).
    index: Vec<u32>,
    /// Per switch index, per port number: where it leads.
    ports: Vec<Vec<To>>,
    /// Per switch index: whether a live end node hangs on it (a source in every scope).
    hosts: Vec<bool>,
    /// Per switch index: its LFT, being mended.
    lft: Vec<Vec<u8>>,
}

impl Net {
    /// `probe`: the current tables on the fabric the fault left; `end`: the switches that have
    /// tables where the plan ends (a switch down there has none).
    fn new(probe: &ValidState, end: &ValidState) -> Net {
        let f = &probe.fabric;
        let switches: Vec<NodeId> = probe
            .switches
            .keys()
            .copied()
            .filter(|&x| !f.node(x).down && end.switches.contains_key(&x))
            .collect();
        let mut index = vec![u32::MAX; f.nodes().len()];
        for (k, x) in switches.iter().enumerate() {
            if let Some(slot) = index.get_mut(x.index()) {
                *slot = k as u32;
            }
        }
        let mut hosts = vec![false; switches.len()];
        let ports = switches
            .iter()
            .enumerate()
            .map(|(k, &x)| {
                (0..=f.node(x).spec.port_count)
                    .map(|p| match forward::leave(f, PortRef::new(x, p)) {
                        Err(_) => To::Nothing,
                        Ok(h) if f.node(h.to.node).is_switch() => {
                            let j = index.get(h.to.node.index()).copied().unwrap_or(u32::MAX);
                            if j == u32::MAX {
                                To::Nothing
                            } else {
                                To::Switch(j)
                            }
                        }
                        Ok(h) => {
                            if let Some(slot) = hosts.get_mut(k) {
                                *slot = true;
                            }
                            To::End(h.to)
                        }
                    })
                    .collect()
            })
            .collect();
        let lft = switches
            .iter()
            .map(|x| {
                probe
                    .switches
                    .get(x)
                    .map(|t| t.lft.ports.clone())
                    .unwrap_or_default()
            })
            .collect();
        Net {
            switches,
            index,
            ports,
            hosts,
            lft,
        }
    }

    fn entry(&self, k: u32, lid: u16) -> u8 {
        self.lft
            .get(k as usize)
            .and_then(|t| t.get(usize::from(lid)))
            .copied()
            .unwrap_or(LFT_UNSET)
    }

    fn set(&mut self, k: u32, lid: u16, port: u8) {
        if let Some(t) = self.lft.get_mut(k as usize) {
            let i = usize::from(lid);
            if t.len() <= i {
                t.resize(i + 1, LFT_UNSET);
            }
            if let Some(slot) = t.get_mut(i) {
                *slot = port;
            }
        }
    }

    fn to(&self, k: u32, port: u8) -> To {
        self.ports
            .get(k as usize)
            .and_then(|p| p.get(usize::from(port)))
            .copied()
            .unwrap_or(To::Nothing)
    }

    /// Whether leaving switch `k` on `port` delivers to `d` or is `d` itself (port 0).
    fn delivers(&self, k: u32, port: u8, d: Dest) -> bool {
        if port == 0 {
            return self.switches.get(k as usize).map(|&x| PortRef::new(x, 0)) == Some(d.owner);
        }
        self.to(k, port) == To::End(d.owner)
    }

    /// Every switch's fate toward `d` on the tables as they are.
    fn fates(&self, d: Dest) -> Vec<Fate> {
        let n = self.switches.len();
        let mut memo = vec![Mark::Unknown; n];
        let mut path = Vec::new();
        let lid = d.lid.0;
        (0..n)
            .map(|s| {
                forward::memo_walk(
                    &mut memo,
                    &mut path,
                    s,
                    Fate::Loops,
                    |a| a,
                    |k| {
                        let k = k as u32;
                        let e = self.entry(k, lid);
                        if self.delivers(k, e, d) {
                            return Next::End(Fate::Arrives);
                        }
                        match self.to(k, e) {
                            To::Switch(j) if e != 0 => Next::To(j as usize),
                            _ => Next::End(Fate::Stops(k)),
                        }
                    },
                )
            })
            .collect()
    }

    /// The switches whose dead entry for `d` a required route ends at (the scope's sources:
    /// every live switch with `Scope::All`, those with a live end node otherwise).
    fn dead(&self, fates: &[Fate], scope: Scope) -> BTreeSet<u32> {
        fates
            .iter()
            .enumerate()
            .filter(|&(s, _)| scope == Scope::All || self.hosts.get(s).copied().unwrap_or(false))
            .filter_map(|(_, f)| match f {
                Fate::Stops(x) => Some(*x),
                Fate::Arrives | Fate::Loops => None,
            })
            .collect()
    }

    /// The live switch neighbours of `k`: (port, index).
    fn neighbours(&self, k: u32) -> impl Iterator<Item = (u8, u32)> + '_ {
        self.ports
            .get(k as usize)
            .into_iter()
            .flatten()
            .enumerate()
            .filter_map(|(p, t)| match t {
                To::Switch(j) => Some((p as u8, *j)),
                To::Nothing | To::End(_) => None,
            })
    }
}

fn block(lid: u16) -> u16 {
    lid / LFT_BLOCK as u16
}

/// The destinations (by LID, from `broken`) of `probe` a repair mends.
fn dests(probe: &ValidState, broken: &BTreeSet<u16>) -> Vec<Dest> {
    Dest::all(probe)
        .into_iter()
        .filter(|d| broken.contains(&d.lid.0))
        .collect()
}

/// The lower bound on any repair's LFT SMPs (see the module docs), for the current tables on
/// the fabric a fault left (`probe`), the destinations whose routes it breaks and the switches
/// with tables where the plan ends (`end`).
pub(crate) fn lower_bound(
    probe: &ValidState,
    end: &ValidState,
    broken: &BTreeSet<u16>,
    scope: Scope,
) -> LowerBound {
    let net = Net::new(probe, end);
    let (needed, detours) = needed(&net, &dests(probe, broken), scope);
    LowerBound {
        smps: needed.len() as u64 + detours,
        dead_blocks: needed.len() as u64,
        detours,
    }
}

/// The (switch, block) pairs holding a dead entry at a switch whose own route is required (every
/// live switch's with `Scope::All`; with `HcaToHca` a switch with a live end node, toward an
/// end node's LID), and how many further blocks are needed (disjoint candidate sets of stuck
/// dead entries).
fn needed(net: &Net, dests: &[Dest], scope: Scope) -> (BTreeSet<(u32, u16)>, u64) {
    let mut needed = BTreeSet::new();
    let mut stuck: Vec<BTreeSet<(u32, u16)>> = Vec::new();
    for &d in dests {
        let fates = net.fates(d);
        // A dead entry must change where its switch is itself a source of a required route
        // to `d` (elsewhere a change upstream may mend the routes that meet it).
        // (A switch's LID is its port 0's; an end node's ports count from 1.)
        let end_node = d.owner.port.0 != 0;
        let source = |x: u32| {
            scope == Scope::All || (end_node && net.hosts.get(x as usize).copied().unwrap_or(false))
        };
        for x in net.dead(&fates, scope).into_iter().filter(|&x| source(x)) {
            needed.insert((x, block(d.lid.0)));
            if let Some(c) = candidates(net, &fates, x, d) {
                stuck.push(c);
            }
        }
    }
    let mut taken: BTreeSet<(u32, u16)> = BTreeSet::new();
    let mut detours = 0;
    for c in stuck {
        if c.iter().any(|w| needed.contains(w) || taken.contains(w)) {
            continue;
        }
        detours += 1;
        taken.extend(c);
    }
    (needed, detours)
}

/// For a dead entry at `x` toward `d` that no new port alone mends (no port delivers, and
/// every live neighbour's route stops at `x`): the blocks one of which must be written too
/// (those of the switches on the neighbours' routes before `x`). `None` when a port alone
/// may mend it.
fn candidates(net: &Net, fates: &[Fate], x: u32, d: Dest) -> Option<BTreeSet<(u32, u16)>> {
    let lid = d.lid.0;
    let ports = net.ports.get(x as usize)?;
    if (0..ports.len()).any(|p| net.delivers(x, p as u8, d)) {
        return None;
    }
    let mut out = BTreeSet::new();
    for (_, y) in net.neighbours(x) {
        if fates.get(y as usize) != Some(&Fate::Stops(x)) {
            return None;
        }
        let mut at = y;
        for _ in 0..=net.switches.len() {
            if at == x {
                break;
            }
            out.insert((at, block(lid)));
            match net.to(at, net.entry(at, lid)) {
                To::Switch(j) => at = j,
                To::Nothing | To::End(_) => break,
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// What a repair did.
pub(crate) struct Repaired {
    /// The end state's tables (not yet proven).
    pub state: FabricState,
    /// Destinations some entry of which changed.
    pub destinations: usize,
    /// Destinations mended by a detour through another switch whose entry changed too (on a
    /// fat tree, a spine's way down through a sibling leaf: a turn from down to up).
    pub through: BTreeSet<u16>,
}

/// The current tables (`probe`: on the fabric the fault left) with the broken destinations
/// mended, those `structured` says by the structured way and the others by detours, every
/// other entry kept; `desired` gives the preferred (detour) or the taken
/// (structured) entries, and the switches that have tables where the plan ends.
pub(crate) fn repair(
    probe: &ValidState,
    desired: &ValidState,
    broken: &BTreeSet<u16>,
    scope: Scope,
    structured: &dyn Fn(u16) -> bool,
) -> Repaired {
    let mut net = Net::new(probe, desired);
    let dests = dests(probe, broken);
    // Blocks written anyway: those holding dead entries.
    let (mut written, _) = needed(&net, &dests, scope);
    let want = |net: &Net, k: u32, lid: u16| -> u8 {
        net.switches
            .get(k as usize)
            .and_then(|x| desired.switches.get(x))
            .and_then(|t| t.lft.get(weft_fabric::Lid(lid)))
            .map_or(LFT_UNSET, |p| p.0)
    };
    let mut destinations = 0;
    let mut through = BTreeSet::new();
    for &d in &dests {
        let lid = d.lid.0;
        let mut fates = net.fates(d);
        let mut changed = false;
        let how = if structured(lid) {
            How::Structured
        } else {
            How::Detour
        };
        match how {
            How::Structured => {
                for k in 0..net.switches.len() as u32 {
                    if fates.get(k as usize) == Some(&Fate::Arrives) {
                        continue;
                    }
                    let p = want(&net, k, lid);
                    if p != net.entry(k, lid) {
                        net.set(k, lid, p);
                        written.insert((k, block(lid)));
                        changed = true;
                    }
                }
            }
            How::Detour => {
                for x in net.dead(&fates, scope) {
                    if fates.get(x as usize) == Some(&Fate::Arrives) {
                        continue;
                    }
                    let Some(path) = detour(&net, &fates, &written, x, d, &want) else {
                        continue;
                    };
                    if path.len() > 1 {
                        through.insert(lid);
                    }
                    for (k, p) in path {
                        net.set(k, lid, p);
                        written.insert((k, block(lid)));
                    }
                    changed = true;
                    fates = net.fates(d);
                }
            }
        }
        destinations += usize::from(changed);
    }
    let mut state = desired.state().clone();
    for (k, x) in net.switches.iter().enumerate() {
        if let (Some(t), Some(lft)) = (state.switches.get_mut(x), net.lft.get(k)) {
            t.lft.ports = lft.clone();
            while t.lft.ports.last() == Some(&LFT_UNSET) {
                t.lft.ports.pop();
            }
        }
    }
    // Switches live where the plan ends but not in `net` (none today) keep the current tables.
    for (x, t) in &mut state.switches {
        if net.index.get(x.index()).is_none_or(|&k| k == u32::MAX) {
            if let Some(old) = probe.switches.get(x) {
                t.lft.ports = old.lft.ports.clone();
            }
        }
    }
    Repaired {
        state,
        destinations,
        through,
    }
}

/// The cheapest way from the dead entry at `x` to a switch whose route to `d` arrives (or to
/// `d` itself): each switch on it other than `x` whose block is not `written` yet costs one,
/// then fewer hops, then the desired state's ports first. The entries to set, (switch, port).
fn detour(
    net: &Net,
    fates: &[Fate],
    written: &BTreeSet<(u32, u16)>,
    x: u32,
    d: Dest,
    want: &dyn Fn(&Net, u32, u16) -> u8,
) -> Option<Vec<(u32, u8)>> {
    let lid = d.lid.0;
    let n = net.switches.len();
    let mut best: Vec<Option<(u32, u32)>> = vec![None; n];
    let mut prev: Vec<Option<(u32, u8)>> = vec![None; n];
    let mut heap = BinaryHeap::new();
    let mut seq = 0u32;
    if let Some(b) = best.get_mut(x as usize) {
        *b = Some((0, 0));
    }
    heap.push(Reverse((0u32, 0u32, seq, x)));
    while let Some(Reverse((cost, hops, _, u))) = heap.pop() {
        if best.get(u as usize).copied().flatten() != Some((cost, hops)) {
            continue;
        }
        // The desired port first, then port order.
        let pref = want(net, u, lid);
        let ports = net.ports.get(u as usize).map_or(0, Vec::len);
        let order = std::iter::once(pref).chain((0..ports as u8).filter(|&p| p != pref));
        let mut end = None;
        let mut next = Vec::new();
        for p in order {
            if usize::from(p) >= ports {
                continue;
            }
            if net.delivers(u, p, d) {
                end = Some(p);
                break;
            }
            if let To::Switch(v) = net.to(u, p) {
                if v == x || fates.get(v as usize) == Some(&Fate::Arrives) {
                    if v != x && end.is_none() {
                        end = Some(p);
                        break;
                    }
                    continue;
                }
                next.push((p, v));
            }
        }
        if let Some(p) = end {
            let mut path = vec![(u, p)];
            let mut at = u;
            while let Some((from, port)) = prev.get(at as usize).copied().flatten() {
                path.push((from, port));
                at = from;
            }
            return Some(path);
        }
        for (p, v) in next {
            let c = cost + u32::from(!written.contains(&(v, block(lid))));
            let key = (c, hops + 1);
            let slot = best.get_mut(v as usize)?;
            if slot.is_none_or(|b| key < b) {
                *slot = Some(key);
                if let Some(pv) = prev.get_mut(v as usize) {
                    *pv = Some((u, p));
                }
                seq += 1;
                heap.push(Reverse((c, hops + 1, seq, v)));
            }
        }
    }
    None
}
