//! `weft-metrics`: static routing quality, computed from the tables alone.
//!
//! Everything here is a pure function of a [`FabricState`]: it does not know which engine
//! produced the tables, so it rates weft's routing and one imported from OpenSM alike.
//!
//! **Traffic model.** The *hosts* are the end-node ports that can send: a port of a node that
//! is not a switch and not down, with a LID, cabled by an up link to a switch that is not down
//! ([`Quality::hosts_excluded`] counts the others). Hosts are numbered in fabric order (node
//! order, then port order). A flow from host `a` to host `b` leaves `a` on its cable, then
//! follows each switch's LFT entry for `b`'s base LID (with LMC > 0, the base LID is the
//! primary path) until it arrives at `b`'s port. A flow is *unroutable* when it meets an unset
//! entry, a dead end (port 0 of a switch that is not the destination, an unwired port, a down
//! link or node, a port beyond the switch), a loop, or arrives at the wrong end node; it is
//! counted as such and loads no link. Nothing panics on broken tables.
//!
//! **Loads** are per directed link. The maxima and means reported are over the directed
//! switch-to-switch links that are up ([`Quality::fabric_links`]): a host's own cable carries
//! exactly what the pattern sends and receives, whatever the routing.
//!
//! **Metrics.**
//! * [`Balance`]: per switch port, the number of end-node destination LIDs (every LMC LID)
//!   whose LFT entry is that port, as `check_lft_balance` counts them. Ports to end nodes and
//!   ports that are down or unwired are not compared; a switch is unbalanced when, over its
//!   switch-facing ports, `max > min + 1`. In a tree of three or more levels that rule flags
//!   every middle switch under any routing (its up ports carry every destination outside its
//!   subtree, its down ports only its subtree's), so the rule is also applied within each
//!   direction (up ports, down ports, same-level ports; levels counted from the switches that
//!   have hosts).
//! * [`Shift`]: flows `i → (i + k) mod N` for every `k` in `1..N` when `N − 1 ≤
//!   all_shifts_up_to` (1 024), otherwise `m = shift_samples` (256) evenly spaced `k`
//!   (`k_j = 1 + ⌊j (N − 1) / m⌋`, `j < m`).
//! * [`AllToAll`]: every host to every other host, aggregated per destination over the
//!   destination's in-tree (subtree counts), `O(switches + hosts)` per destination.
//! * [`Bisections`]: random bisections (a seeded splitmix64 shuffle of the hosts; the first
//!   half paired with the second, each pair exchanging one flow in each direction). The
//!   *effective bisection bandwidth* (eBB, as ORCS defines it) is the mean over bisections of
//!   the mean over flows of `1 / (max load on the flow's path)` (the hosts' own cables
//!   included, where a bisection puts exactly one flow), an unroutable flow counting 0. By
//!   default as many bisections as fit in 2 M flows, between 32 and 1 000
//!   ([`auto_bisections`]: 1 000 for 648 hosts, 171 for 11 664).
//! * [`Hops`]: the histogram of links traversed by every host-to-host path (2 for two hosts
//!   on one leaf), computed per destination from its in-tree.
//! * [`SwitchReach`]: switch-to-switch LID routing (OpenSM's `ftree` leaves spine pairs
//!   unset).
//!
//! Deterministic: integer sums in any order, floating-point sums in a fixed order, the random
//! bisections drawn from the seed; the result does not depend on the thread count.

// Nothing indexes with a value that might be out of range: `get` and a decision instead.
#![deny(clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::indexing_slicing))]

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use weft_fabric::{FabricState, LinkState, NodeId, PortNum, LFT_UNSET};

/// Knobs of [`quality`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QualityOptions {
    /// Seed of the random bisections.
    pub seed: u64,
    /// Random bisections to draw; `None` picks [`auto_bisections`].
    pub bisections: Option<usize>,
    /// Every shift `k` is evaluated when the hosts are at most this many plus one.
    pub all_shifts_up_to: usize,
    /// Otherwise, this many evenly spaced shifts.
    pub shift_samples: usize,
}

impl Default for QualityOptions {
    fn default() -> QualityOptions {
        QualityOptions {
            seed: 0,
            bisections: None,
            all_shifts_up_to: ALL_SHIFTS_UP_TO,
            shift_samples: SHIFT_SAMPLES,
        }
    }
}

/// Default [`QualityOptions::all_shifts_up_to`]: every shift up to 1 025 hosts.
pub const ALL_SHIFTS_UP_TO: usize = 1024;

/// Default [`QualityOptions::shift_samples`].
pub const SHIFT_SAMPLES: usize = 256;

/// Most random bisections drawn by default.
pub const MAX_BISECTIONS: usize = 1000;

/// Fewest random bisections drawn by default.
pub const MIN_BISECTIONS: usize = 32;

/// Flows the default number of bisections aims at.
pub const BISECTION_FLOW_BUDGET: usize = 2_000_000;

/// The default number of random bisections for `hosts` hosts: as many as fit in
/// [`BISECTION_FLOW_BUDGET`] flows, between [`MIN_BISECTIONS`] and [`MAX_BISECTIONS`]
/// (1 000 for 648 hosts, 171 for 11 664).
pub fn auto_bisections(hosts: usize) -> usize {
    (BISECTION_FLOW_BUDGET / hosts.max(1)).clamp(MIN_BISECTIONS, MAX_BISECTIONS)
}

/// The quality of a fabric's routing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quality {
    /// Hosts in the traffic patterns.
    pub hosts: usize,
    /// End-node ports left out (no LID, no up cable to a usable switch, node down).
    pub hosts_excluded: usize,
    /// Switches that are not down.
    pub switches: usize,
    /// Directed switch-to-switch links that are up: what loads are measured on.
    pub fabric_links: usize,
    /// Per-port destination counts.
    pub balance: Balance,
    /// The shift pattern.
    pub shift: Shift,
    /// All-to-all.
    pub all_to_all: AllToAll,
    /// Random bisections and the effective bisection bandwidth.
    pub bisections: Bisections,
    /// Hop counts of every host-to-host path.
    pub hops: Hops,
    /// Switch-to-switch LID routing.
    pub switch_to_switch: SwitchReach,
}

/// Per-port destination counts, as `check_lft_balance`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Balance {
    /// Switches with at least one switch-facing port.
    pub switches: usize,
    /// Switches where `max > min + 1` over all switch-facing ports (`check_lft_balance`).
    pub unbalanced: usize,
    /// Largest `max − min` over all switch-facing ports of a switch.
    pub max_spread: u32,
    /// Switches where `max > min + 1` within the up, the down or the same-level ports.
    pub unbalanced_by_direction: usize,
    /// Largest `max − min` within one direction of one switch.
    pub max_spread_by_direction: u32,
    /// Per switch, in fabric order.
    pub per_switch: Vec<SwitchUsage>,
}

/// One switch's port usage.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchUsage {
    /// Switch name.
    pub switch: String,
    /// Level (1 = has hosts; 0 = no host below).
    pub level: u32,
    /// End-node destination LIDs per switch-facing port.
    pub ports: BTreeMap<u8, u32>,
    /// Fewest LIDs on a switch-facing port.
    pub min: u32,
    /// Most LIDs on a switch-facing port.
    pub max: u32,
    /// `max > min + 1`.
    pub unbalanced: bool,
    /// Largest `max − min` within the up, down or same-level ports.
    pub spread_by_direction: u32,
    /// `max > min + 1` within the up, down or same-level ports.
    pub unbalanced_by_direction: bool,
}

/// Loads of the shift pattern.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Shift {
    /// Shifts `k` evaluated.
    pub shifts: usize,
    /// Whether every `k` in `1..N` was evaluated.
    pub all: bool,
    /// Flows over all shifts.
    pub flows: u64,
    /// Unroutable flows over all shifts.
    pub unroutable: u64,
    /// Worst link load of any shift.
    pub max_load: u32,
    /// Mean over shifts of the shift's worst link load.
    pub mean_max_load: f64,
    /// Mean link load (over fabric links and shifts).
    pub mean_load: f64,
    /// How many shifts have each worst link load.
    pub max_load_histogram: BTreeMap<u32, usize>,
}

/// Loads of the all-to-all pattern.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AllToAll {
    /// Flows (`N (N − 1)`).
    pub flows: u64,
    /// Unroutable flows.
    pub unroutable: u64,
    /// Worst link load.
    pub max_load: u64,
    /// Mean link load over fabric links.
    pub mean_load: f64,
}

/// Random bisections.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bisections {
    /// Bisections drawn.
    pub count: usize,
    /// The seed they were drawn from.
    pub seed: u64,
    /// Flows over all bisections.
    pub flows: u64,
    /// Unroutable flows over all bisections.
    pub unroutable: u64,
    /// Worst link load of any bisection.
    pub max_load: u32,
    /// Mean over bisections of the bisection's worst link load.
    pub mean_max_load: f64,
    /// Mean link load (over fabric links and bisections).
    pub mean_load: f64,
    /// Effective bisection bandwidth: mean over bisections of the mean flow share.
    pub ebb: f64,
    /// The worst bisection's mean flow share.
    pub ebb_min: f64,
    /// The best bisection's mean flow share.
    pub ebb_max: f64,
}

/// Hop counts of every host-to-host path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hops {
    /// Ordered host pairs (`N (N − 1)`).
    pub pairs: u64,
    /// Pairs without a route, by reason.
    pub unroutable: Unroutable,
    /// Links traversed → pairs.
    pub histogram: BTreeMap<u32, u64>,
    /// Mean over routed pairs.
    pub mean: f64,
    /// Longest routed path.
    pub max: u32,
}

/// Switch-to-switch LID routing: every switch toward every other switch's LID.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchReach {
    /// Ordered pairs of switches (that have a LID, and are not down).
    pub pairs: u64,
    /// Pairs without a route, by reason.
    pub unroutable: Unroutable,
}

/// Why pairs have no route.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unroutable {
    /// An unset LFT entry on the way.
    pub unset: u64,
    /// Port 0 of another switch, an unwired port, a down link or node.
    pub dead_end: u64,
    /// A forwarding loop.
    pub loops: u64,
    /// Delivered to the wrong end node.
    pub misdelivered: u64,
}

impl Unroutable {
    /// All unroutable pairs.
    pub fn total(&self) -> u64 {
        self.unset + self.dead_end + self.loops + self.misdelivered
    }

    fn add(&mut self, reason: u32, n: u64) {
        match reason {
            UNSET => self.unset += n,
            LOOP => self.loops += n,
            WRONG => self.misdelivered += n,
            _ => self.dead_end += n,
        }
    }

    fn merge(mut self, o: Unroutable) -> Unroutable {
        self.unset += o.unset;
        self.dead_end += o.dead_end;
        self.loops += o.loops;
        self.misdelivered += o.misdelivered;
        self
    }
}

/// Every metric of `state`'s routing.
pub fn quality(state: &FabricState, opts: &QualityOptions) -> Quality {
    let net = Net::new(state);
    let balance = net.balance();
    let (all_to_all, hops) = net.per_destination();
    let shift = net.shift(opts.all_shifts_up_to, opts.shift_samples);
    let count = opts
        .bisections
        .unwrap_or_else(|| auto_bisections(net.ends.len()));
    let bisections = net.bisections(opts.seed, count);
    let switch_to_switch = net.switch_reach();
    Quality {
        hosts: net.ends.len(),
        hosts_excluded: net.excluded,
        switches: net.sw.len(),
        fabric_links: net.fabric_links,
        balance,
        shift,
        all_to_all,
        bisections,
        hops,
        switch_to_switch,
    }
}

/// [`quality`] with the default options (seed 0): what `weft build` records in `state.json`.
pub fn of_build(state: &FabricState) -> Quality {
    quality(state, &QualityOptions::default())
}

// ---------------------------------------------------------------------------------------------
// The network as the metrics see it.

const NONE: u32 = u32::MAX;

/// Where a switch port leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum To {
    /// Unwired, down, or a node that is down.
    Nothing,
    /// A switch (dense index).
    Switch(u32),
    /// An end-node port: its host index, or [`NONE`] when it is not a host.
    End(u32),
}

#[derive(Clone, Copy, Debug)]
struct Peer {
    /// Directed link id (`2 × link + side`), [`NONE`] with [`To::Nothing`].
    dlink: u32,
    to: To,
}

struct Sw<'a> {
    id: NodeId,
    lft: &'a [u8],
    /// Indexed by port number (0 included, always [`To::Nothing`]).
    ports: Vec<Peer>,
    level: u32,
    lid: Option<u16>,
}

#[derive(Clone, Copy, Debug)]
struct End {
    lid: u16,
    /// The switch the host is cabled to.
    leaf: u32,
    /// Host → leaf directed link.
    inject: u32,
}

struct Net<'a> {
    state: &'a FabricState,
    sw: Vec<Sw<'a>>,
    /// The walk's view, flat: LFT per switch, (offset into `peers`, port count) per switch.
    lfts: Vec<&'a [u8]>,
    peer_at: Vec<(u32, u8)>,
    peers: Vec<Peer>,
    ends: Vec<End>,
    excluded: usize,
    /// Directed links (2 × links).
    dlinks: usize,
    /// Per directed link: switch to switch, up.
    is_fabric: Vec<bool>,
    fabric_links: usize,
    /// Hosts per switch.
    hosts_on: Vec<u32>,
    /// Switches with hosts.
    leaves: Vec<u32>,
}

/// One LFT step.
enum Step {
    Unset,
    Dead,
    Switch(u32, u32),
    End(u32, u32),
}

// Resolution marks of the per-destination in-tree (distances are below these).
const UNKNOWN: u32 = u32::MAX;
const VISITING: u32 = u32::MAX - 1;
const UNSET: u32 = u32::MAX - 2;
const DEAD: u32 = u32::MAX - 3;
const LOOP: u32 = u32::MAX - 4;
const WRONG: u32 = u32::MAX - 5;
const FAILED: u32 = WRONG;

fn is_dist(v: u32) -> bool {
    v < FAILED
}

fn dlink(link: usize, side: usize) -> u32 {
    u32::try_from(link * 2 + side).unwrap_or(NONE)
}

impl<'a> Net<'a> {
    fn new(state: &'a FabricState) -> Net<'a> {
        let f = &state.fabric;
        let nodes = f.nodes();
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
                    ports: vec![
                        Peer {
                            dlink: NONE,
                            to: To::Nothing
                        };
                        usize::from(n.spec.port_count) + 1
                    ],
                    level: 0,
                    lid: state.lids.get(id, PortNum(0)).map(|l| l.0),
                });
            }
        }
        // Hosts, in fabric order.
        let mut ends = Vec::new();
        let mut excluded = 0usize;
        let mut host_of: BTreeMap<(u32, u8), u32> = BTreeMap::new();
        for (i, n) in nodes.iter().enumerate() {
            if n.is_switch() {
                continue;
            }
            let id = NodeId(i as u32);
            for p in &n.ports {
                let Some(lid) = state.lids.get(id, p.num) else {
                    if p.link.is_some() {
                        excluded += 1;
                    }
                    continue;
                };
                let usable = || -> Option<End> {
                    if n.down {
                        return None;
                    }
                    let li = p.link?;
                    let l = f.links().get(li.index())?;
                    if l.state != LinkState::Up {
                        return None;
                    }
                    let (other, side) = if l.a.node == id && l.a.port == p.num {
                        (l.b, 0)
                    } else {
                        (l.a, 1)
                    };
                    let leaf = *index.get(other.node.index())?;
                    if leaf == NONE {
                        return None;
                    }
                    Some(End {
                        lid: lid.0,
                        leaf,
                        inject: dlink(li.index(), side),
                    })
                };
                match usable() {
                    Some(e) => {
                        host_of.insert((i as u32, p.num.0), ends.len() as u32);
                        ends.push(e);
                    }
                    None => excluded += 1,
                }
            }
        }
        // Switch ports.
        let links = f.links();
        let mut is_fabric = vec![false; links.len() * 2];
        let mut fabric_links = 0;
        for (li, l) in links.iter().enumerate() {
            if l.state != LinkState::Up {
                continue;
            }
            let down = |n: NodeId| nodes.get(n.index()).is_none_or(|x| x.down);
            if down(l.a.node) || down(l.b.node) {
                continue;
            }
            let ia = index.get(l.a.node.index()).copied().unwrap_or(NONE);
            let ib = index.get(l.b.node.index()).copied().unwrap_or(NONE);
            let to = |i: u32, end: weft_fabric::PortRef| {
                if i != NONE {
                    To::Switch(i)
                } else {
                    To::End(
                        host_of
                            .get(&(end.node.0, end.port.0))
                            .copied()
                            .unwrap_or(NONE),
                    )
                }
            };
            let (to_b, to_a) = (to(ib, l.b), to(ia, l.a));
            if let Some(s) = sw.get_mut(ia as usize) {
                if let Some(p) = s.ports.get_mut(usize::from(l.a.port.0)) {
                    *p = Peer {
                        dlink: dlink(li, 0),
                        to: to_b,
                    };
                }
            }
            if let Some(s) = sw.get_mut(ib as usize) {
                if let Some(p) = s.ports.get_mut(usize::from(l.b.port.0)) {
                    *p = Peer {
                        dlink: dlink(li, 1),
                        to: to_a,
                    };
                }
            }
            if ia != NONE && ib != NONE {
                if let Some(x) = is_fabric.get_mut(li * 2) {
                    *x = true;
                }
                if let Some(x) = is_fabric.get_mut(li * 2 + 1) {
                    *x = true;
                }
                fabric_links += 2;
            }
        }
        // Levels: 1 for switches with an end node, +1 per switch hop (BFS).
        let mut queue = std::collections::VecDeque::new();
        for (i, s) in sw.iter_mut().enumerate() {
            if s.ports.iter().any(|p| matches!(p.to, To::End(_))) {
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
            excluded,
            dlinks: links.len() * 2,
            is_fabric,
            fabric_links,
            hosts_on,
            leaves,
        }
    }

    #[inline]
    fn step(&self, s: u32, lid: u16) -> Step {
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

    /// Walks `flows` (at most [`LANES`]) from source host to destination host in lockstep, one
    /// LFT step per flow per round, so that their table lookups (cache misses, mostly) overlap.
    /// Each lane ends with its directed links and its outcome.
    fn walk_lanes(&self, flows: &[(u32, u32)], lanes: &mut [Lane]) {
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
                _ => lane.done = Some(Err(DEAD)),
            }
        }
        loop {
            let mut active = false;
            for lane in lanes.iter_mut().take(n) {
                if lane.done.is_some() {
                    continue;
                }
                if lane.left == 0 {
                    lane.done = Some(Err(LOOP));
                    continue;
                }
                lane.left -= 1;
                active = true;
                match self.step(lane.cur, lane.lid) {
                    Step::Unset => lane.done = Some(Err(UNSET)),
                    Step::Dead => lane.done = Some(Err(DEAD)),
                    Step::Switch(l, next) => {
                        lane.path.push(l);
                        lane.cur = next;
                    }
                    Step::End(l, e) => {
                        lane.path.push(l);
                        lane.done = Some(if e == lane.dst { Ok(()) } else { Err(WRONG) });
                    }
                }
            }
            if !active {
                break;
            }
        }
    }

    /// Resolves switch `s`'s distance (links) to the destination, and every switch on its
    /// way, into `sc`; `target` is the destination host, or [`NONE`] for a switch target
    /// (whose own `dist` was preset to 0).
    fn resolve(&self, lid: u16, target: u32, s: u32, sc: &mut Scratch) {
        let mut cur = s;
        let mut carry;
        loop {
            match sc.dist.get(cur as usize).copied().unwrap_or(DEAD) {
                UNKNOWN => {}
                VISITING => {
                    carry = LOOP;
                    break;
                }
                v => {
                    carry = v;
                    break;
                }
            }
            if let Some(x) = sc.dist.get_mut(cur as usize) {
                *x = VISITING;
            }
            sc.stack.push(cur);
            match self.step(cur, lid) {
                Step::Unset => {
                    carry = UNSET;
                    break;
                }
                Step::Dead => {
                    carry = DEAD;
                    break;
                }
                Step::Switch(l, n) => {
                    set(&mut sc.out, cur, l);
                    set(&mut sc.next, cur, n);
                    cur = n;
                }
                Step::End(l, e) => {
                    if e == target && target != NONE {
                        set(&mut sc.out, cur, l);
                        set(&mut sc.next, cur, NONE);
                        carry = 0;
                    } else {
                        carry = WRONG;
                    }
                    break;
                }
            }
        }
        while let Some(x) = sc.stack.pop() {
            let v = if is_dist(carry) { carry + 1 } else { carry };
            set(&mut sc.dist, x, v);
            carry = v;
        }
    }

    /// All-to-all loads and the hop histogram, one in-tree per destination.
    fn per_destination(&self) -> (AllToAll, Hops) {
        let n = self.ends.len();
        // Destinations in LID order: neighbouring LFT entries share cache lines.
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&i| self.ends.get(i as usize).map_or(0, |e| e.lid));
        let s = self.sw.len();
        let acc = order
            .par_chunks(64)
            .fold(
                || (Acc::new(self.dlinks, s), Scratch::new(s)),
                |(mut acc, mut sc), chunk| {
                    for &d in chunk {
                        self.one_destination(d, &mut acc, &mut sc);
                    }
                    (acc, sc)
                },
            )
            .map(|(acc, _)| acc)
            .reduce(|| Acc::new(self.dlinks, s), Acc::merge);
        let flows = (n as u64) * (n as u64).saturating_sub(1);
        let (max_load, sum) = self.fabric_max_sum(&acc.load);
        let all = AllToAll {
            flows,
            unroutable: acc.unroutable.total(),
            max_load,
            mean_load: mean(sum as f64, self.fabric_links),
        };
        let mut histogram = BTreeMap::new();
        let (mut routed, mut weighted, mut max) = (0u64, 0u64, 0u32);
        for (h, &c) in acc.hops.iter().enumerate() {
            if c > 0 {
                histogram.insert(h as u32, c);
                routed += c;
                weighted += c * h as u64;
                max = h as u32;
            }
        }
        let hops = Hops {
            pairs: flows,
            unroutable: acc.unroutable,
            histogram,
            mean: mean(weighted as f64, routed as usize),
            max,
        };
        (all, hops)
    }

    fn one_destination(&self, d: u32, acc: &mut Acc, sc: &mut Scratch) {
        let Some(dst) = self.ends.get(d as usize) else {
            return;
        };
        sc.dist.fill(UNKNOWN);
        for &l in &self.leaves {
            self.resolve(dst.lid, d, l, sc);
        }
        // Sources per switch, minus the destination itself.
        let src = |s: u32| -> u64 {
            let c = u64::from(self.hosts_on.get(s as usize).copied().unwrap_or(0));
            c - u64::from(s == dst.leaf && c > 0)
        };
        // Hops and unroutable pairs.
        let mut maxd = 0usize;
        for &l in &self.leaves {
            let c = src(l);
            let v = sc.dist.get(l as usize).copied().unwrap_or(DEAD);
            if is_dist(v) {
                let h = v as usize + 1;
                maxd = maxd.max(v as usize);
                if let Some(x) = acc.hops.get_mut(h) {
                    *x += c;
                }
            } else {
                acc.unroutable.add(v, c);
            }
        }
        // Subtree counts in decreasing distance: every resolved switch is on a path from a leaf.
        sc.bucket.clear();
        sc.bucket.resize(maxd + 2, 0);
        let resolved = |x: u32| {
            let v = sc.dist.get(x as usize).copied().unwrap_or(DEAD);
            is_dist(v).then_some(v as usize)
        };
        for x in 0..self.sw.len() as u32 {
            if let Some(v) = resolved(x) {
                if let Some(b) = sc.bucket.get_mut(v) {
                    *b += 1;
                }
            }
        }
        // Prefix sums, largest distance first.
        let mut at = 0u32;
        for b in sc.bucket.iter_mut().rev() {
            let c = *b;
            *b = at;
            at += c;
        }
        sc.order.clear();
        sc.order.resize(at as usize, 0);
        for x in 0..self.sw.len() as u32 {
            if let Some(v) = resolved(x) {
                if let Some(b) = sc.bucket.get_mut(v) {
                    if let Some(o) = sc.order.get_mut(*b as usize) {
                        *o = x;
                    }
                    *b += 1;
                }
            }
        }
        for x in 0..self.sw.len() {
            if let Some(sub) = sc.sub.get_mut(x) {
                *sub = if self.hosts_on.get(x).is_some_and(|&c| c > 0) {
                    src(x as u32)
                } else {
                    0
                };
            }
        }
        for &x in &sc.order {
            let sub = sc.sub.get(x as usize).copied().unwrap_or(0);
            if sub == 0 {
                continue;
            }
            let out = sc.out.get(x as usize).copied().unwrap_or(NONE);
            if let Some(l) = acc.load.get_mut(out as usize) {
                *l += sub;
            }
            let next = sc.next.get(x as usize).copied().unwrap_or(NONE);
            if let Some(t) = sc.sub.get_mut(next as usize) {
                *t += sub;
            }
        }
    }

    fn fabric_max_sum<T: Copy + Into<u64>>(&self, load: &[T]) -> (u64, u64) {
        load.iter()
            .zip(&self.is_fabric)
            .filter(|(_, &f)| f)
            .fold((0, 0), |(m, s), (&l, _)| {
                let l: u64 = l.into();
                (m.max(l), s + l)
            })
    }

    /// Routes `flows`, returning their statistics; `sc.load` is left zeroed.
    fn pattern(&self, flows: &[(u32, u32)], sc: &mut WalkScratch) -> PatternStats {
        sc.path.clear();
        sc.starts.clear();
        let mut st = PatternStats::default();
        for chunk in flows.chunks(LANES) {
            self.walk_lanes(chunk, &mut sc.lanes);
            for lane in sc.lanes.iter().take(chunk.len()) {
                st.flows += 1;
                if lane.done != Some(Ok(())) {
                    st.unroutable += 1;
                    continue;
                }
                sc.starts.push(sc.path.len() as u32);
                sc.path.extend_from_slice(&lane.path);
                for &l in &lane.path {
                    if let Some(x) = sc.load.get_mut(l as usize) {
                        *x += 1;
                    }
                }
            }
        }
        sc.starts.push(sc.path.len() as u32);
        for w in sc.starts.windows(2) {
            let (a, b) = match w {
                [a, b] => (*a as usize, *b as usize),
                _ => continue,
            };
            let mut worst = 0u32;
            for &l in sc.path.get(a..b).unwrap_or(&[]) {
                let x = sc.load.get(l as usize).copied().unwrap_or(0);
                worst = worst.max(x);
                if self.is_fabric.get(l as usize).copied().unwrap_or(false) {
                    st.fabric_hops += 1;
                    st.max_load = st.max_load.max(x);
                }
            }
            if worst > 0 {
                st.share += 1.0 / f64::from(worst);
            }
        }
        for &l in &sc.path {
            if let Some(x) = sc.load.get_mut(l as usize) {
                *x = 0;
            }
        }
        st
    }

    fn shift(&self, all_up_to: usize, samples: usize) -> Shift {
        let n = self.ends.len();
        let all = n.saturating_sub(1) <= all_up_to;
        let ks: Vec<usize> = if all {
            (1..n).collect()
        } else {
            let m = samples.clamp(1, n - 1);
            (0..m).map(|j| 1 + j * (n - 1) / m).collect()
        };
        let stats: Vec<PatternStats> = ks
            .par_iter()
            .map_init(
                || WalkScratch::new(self.dlinks),
                |sc, &k| {
                    let flows: Vec<(u32, u32)> =
                        (0..n).map(|i| (i as u32, ((i + k) % n) as u32)).collect();
                    self.pattern(&flows, sc)
                },
            )
            .collect();
        let mut out = Shift {
            shifts: ks.len(),
            all,
            flows: 0,
            unroutable: 0,
            max_load: 0,
            mean_max_load: 0.0,
            mean_load: 0.0,
            max_load_histogram: BTreeMap::new(),
        };
        let mut sum_max = 0u64;
        let mut hops = 0u64;
        for st in &stats {
            out.flows += st.flows;
            out.unroutable += st.unroutable;
            out.max_load = out.max_load.max(st.max_load);
            sum_max += u64::from(st.max_load);
            hops += st.fabric_hops;
            *out.max_load_histogram.entry(st.max_load).or_insert(0) += 1;
        }
        out.mean_max_load = mean(sum_max as f64, stats.len());
        out.mean_load = mean(hops as f64, self.fabric_links * stats.len());
        out
    }

    fn bisections(&self, seed: u64, count: usize) -> Bisections {
        let n = self.ends.len();
        let mut rng = SplitMix64(seed);
        let seeds: Vec<u64> = (0..count).map(|_| rng.next_u64()).collect();
        let stats: Vec<PatternStats> = seeds
            .par_iter()
            .map_init(
                || WalkScratch::new(self.dlinks),
                |sc, &s| {
                    let flows = bisection_flows(n, s);
                    self.pattern(&flows, sc)
                },
            )
            .collect();
        let mut out = Bisections {
            count,
            seed,
            flows: 0,
            unroutable: 0,
            max_load: 0,
            mean_max_load: 0.0,
            mean_load: 0.0,
            ebb: 0.0,
            ebb_min: if stats.is_empty() { 0.0 } else { f64::INFINITY },
            ebb_max: 0.0,
        };
        let (mut sum_max, mut hops, mut sum_ebb) = (0u64, 0u64, 0.0f64);
        for st in &stats {
            out.flows += st.flows;
            out.unroutable += st.unroutable;
            out.max_load = out.max_load.max(st.max_load);
            sum_max += u64::from(st.max_load);
            hops += st.fabric_hops;
            let e = if st.flows == 0 {
                0.0
            } else {
                st.share / st.flows as f64
            };
            sum_ebb += e;
            out.ebb_min = out.ebb_min.min(e);
            out.ebb_max = out.ebb_max.max(e);
        }
        out.mean_max_load = mean(sum_max as f64, stats.len());
        out.mean_load = mean(hops as f64, self.fabric_links * stats.len());
        out.ebb = mean(sum_ebb, stats.len());
        out
    }

    /// Every switch toward every other switch's LID.
    fn switch_reach(&self) -> SwitchReach {
        let s = self.sw.len();
        let targets: Vec<(u32, u16)> = self
            .sw
            .iter()
            .enumerate()
            .filter_map(|(i, x)| x.lid.map(|l| (i as u32, l)))
            .collect();
        let unroutable = targets
            .par_iter()
            .fold(
                || (Unroutable::default(), Scratch::new(s)),
                |(mut u, mut sc), &(t, lid)| {
                    sc.dist.fill(UNKNOWN);
                    set(&mut sc.dist, t, 0);
                    for x in 0..s as u32 {
                        self.resolve(lid, NONE, x, &mut sc);
                        let v = sc.dist.get(x as usize).copied().unwrap_or(DEAD);
                        if !is_dist(v) {
                            u.add(v, 1);
                        }
                    }
                    (u, sc)
                },
            )
            .map(|(u, _)| u)
            .reduce(Unroutable::default, Unroutable::merge);
        let t = targets.len() as u64;
        SwitchReach {
            pairs: t * t.saturating_sub(1) + (s as u64 - t) * t,
            unroutable,
        }
    }

    fn balance(&self) -> Balance {
        let f = &self.state.fabric;
        // Every LID of an end node, as check_lft_balance counts `Channel Adapter` lines.
        let lids: Vec<u16> = self
            .state
            .lids
            .owners(f)
            .iter()
            .enumerate()
            .filter_map(|(lid, o)| {
                let (node, _) = (*o)?;
                let n = f.nodes().get(node.index())?;
                (!n.is_switch()).then_some(lid as u16)
            })
            .collect();
        let per_switch: Vec<Option<SwitchUsage>> = self
            .sw
            .par_iter()
            .map(|sw| {
                let mut count = vec![0u32; sw.ports.len()];
                for &lid in &lids {
                    if let Some(&p) = sw.lft.get(usize::from(lid)) {
                        if let Some(c) = count.get_mut(usize::from(p)) {
                            *c += 1;
                        }
                    }
                }
                let mut ports = BTreeMap::new();
                // min, max per direction: up, down, side.
                let mut dir = [(u32::MAX, 0u32); 3];
                for (p, peer) in sw.ports.iter().enumerate() {
                    let To::Switch(n) = peer.to else { continue };
                    let c = count.get(p).copied().unwrap_or(0);
                    ports.insert(p as u8, c);
                    let theirs = self.sw.get(n as usize).map_or(0, |x| x.level);
                    let k = match theirs.cmp(&sw.level) {
                        std::cmp::Ordering::Greater => 0,
                        std::cmp::Ordering::Less => 1,
                        std::cmp::Ordering::Equal => 2,
                    };
                    if let Some(d) = dir.get_mut(k) {
                        d.0 = d.0.min(c);
                        d.1 = d.1.max(c);
                    }
                }
                let min = ports.values().copied().min()?;
                let max = ports.values().copied().max().unwrap_or(0);
                let spread_dir = dir
                    .iter()
                    .filter(|d| d.0 != u32::MAX)
                    .map(|d| d.1 - d.0)
                    .max()
                    .unwrap_or(0);
                Some(SwitchUsage {
                    switch: f
                        .nodes()
                        .get(sw.id.index())
                        .map_or_else(String::new, |n| n.name().to_owned()),
                    level: sw.level,
                    ports,
                    min,
                    max,
                    unbalanced: max > min + 1,
                    spread_by_direction: spread_dir,
                    unbalanced_by_direction: spread_dir > 1,
                })
            })
            .collect();
        let per_switch: Vec<SwitchUsage> = per_switch.into_iter().flatten().collect();
        Balance {
            switches: per_switch.len(),
            unbalanced: per_switch.iter().filter(|u| u.unbalanced).count(),
            max_spread: per_switch.iter().map(|u| u.max - u.min).max().unwrap_or(0),
            unbalanced_by_direction: per_switch
                .iter()
                .filter(|u| u.unbalanced_by_direction)
                .count(),
            max_spread_by_direction: per_switch
                .iter()
                .map(|u| u.spread_by_direction)
                .max()
                .unwrap_or(0),
            per_switch,
        }
    }
}

fn set(v: &mut [u32], i: u32, x: u32) {
    if let Some(slot) = v.get_mut(i as usize) {
        *slot = x;
    }
}

fn mean(sum: f64, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

/// Per-destination scratch (one per rayon job).
struct Scratch {
    dist: Vec<u32>,
    out: Vec<u32>,
    next: Vec<u32>,
    sub: Vec<u64>,
    stack: Vec<u32>,
    bucket: Vec<u32>,
    order: Vec<u32>,
}

impl Scratch {
    fn new(s: usize) -> Scratch {
        Scratch {
            dist: vec![UNKNOWN; s],
            out: vec![NONE; s],
            next: vec![NONE; s],
            sub: vec![0; s],
            stack: Vec::new(),
            bucket: Vec::new(),
            order: Vec::new(),
        }
    }
}

/// Per-destination accumulators (summed over rayon jobs: integers only).
struct Acc {
    load: Vec<u64>,
    hops: Vec<u64>,
    unroutable: Unroutable,
}

impl Acc {
    fn new(dlinks: usize, switches: usize) -> Acc {
        Acc {
            load: vec![0; dlinks],
            hops: vec![0; switches + 3],
            unroutable: Unroutable::default(),
        }
    }

    fn merge(mut self, o: Acc) -> Acc {
        for (a, b) in self.load.iter_mut().zip(&o.load) {
            *a += b;
        }
        for (a, b) in self.hops.iter_mut().zip(&o.hops) {
            *a += b;
        }
        self.unroutable = self.unroutable.merge(o.unroutable);
        self
    }
}

struct WalkScratch {
    load: Vec<u32>,
    path: Vec<u32>,
    starts: Vec<u32>,
    lanes: Vec<Lane>,
}

/// Flows walked in lockstep.
const LANES: usize = 8;

/// One flow being walked.
#[derive(Clone, Debug, Default)]
struct Lane {
    path: Vec<u32>,
    cur: u32,
    lid: u16,
    dst: u32,
    left: usize,
    done: Option<Result<(), u32>>,
}

impl WalkScratch {
    fn new(dlinks: usize) -> WalkScratch {
        WalkScratch {
            load: vec![0; dlinks],
            path: Vec::new(),
            starts: Vec::new(),
            lanes: vec![Lane::default(); LANES],
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct PatternStats {
    flows: u64,
    unroutable: u64,
    max_load: u32,
    /// Fabric links traversed by routed flows (for the mean load).
    fabric_hops: u64,
    /// Sum over flows of 1 / max load on the path.
    share: f64,
}

/// The flows of one random bisection of `n` hosts: a splitmix64 Fisher–Yates shuffle, the
/// first half paired with the second, each pair exchanging one flow in each direction.
fn bisection_flows(n: usize, seed: u64) -> Vec<(u32, u32)> {
    let mut perm: Vec<u32> = (0..n as u32).collect();
    let mut rng = SplitMix64(seed);
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        perm.swap(i, j);
    }
    let half = n / 2;
    let (a, b) = perm.split_at(half);
    a.iter()
        .zip(b)
        .flat_map(|(&x, &y)| [(x, y), (y, x)])
        .collect()
}

/// splitmix64 (Steele, Lea, Flood 2014): small, fast, and the same on every platform.
#[derive(Clone, Copy, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (Lemire's multiply-shift; `0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use weft_fabric::{FabricBuilder, Guid, Lft, Lid, NodeKind, NodeSpec, PortRef, SwitchState};

    /// Two leaves `L1`, `L2` (ports 1–2 to hosts, 3 to `S1`, 4 to `S2`) and two spines `S1`,
    /// `S2` (port 1 to `L1`, 2 to `L2`); hosts `H1`, `H2` on `L1`, `H3`, `H4` on `L2`. LIDs:
    /// H1..H4 = 1..4, L1 = 5, L2 = 6, S1 = 7, S2 = 8. `lfts` gives, per switch in the order
    /// L1, L2, S1, S2, the port for LIDs 1..=8.
    fn tiny(lfts: [[u8; 8]; 4]) -> FabricState {
        let mut b = FabricBuilder::new("tiny");
        let sw = |b: &mut FabricBuilder, name: &str, g: u64, ports: u8| {
            b.add_node(NodeSpec::new(name, NodeKind::Switch, Guid(g), ports))
                .unwrap()
        };
        let l1 = sw(&mut b, "L1", 0x10, 4);
        let l2 = sw(&mut b, "L2", 0x20, 4);
        let s1 = sw(&mut b, "S1", 0x30, 2);
        let s2 = sw(&mut b, "S2", 0x40, 2);
        let mut hosts = Vec::new();
        for (i, leaf) in [(1u64, l1), (2, l1), (3, l2), (4, l2)] {
            let h = b
                .add_node(NodeSpec::new(
                    format!("H{i}"),
                    NodeKind::Hca,
                    Guid(0x100 * i),
                    1,
                ))
                .unwrap();
            b.add_link(
                PortRef::new(h, 1),
                PortRef::new(leaf, ((i - 1) % 2 + 1) as u8),
            )
            .unwrap();
            hosts.push(h);
        }
        for (leaf, lp) in [(l1, 1u8), (l2, 2)] {
            b.add_link(PortRef::new(leaf, 3), PortRef::new(s1, lp))
                .unwrap();
            b.add_link(PortRef::new(leaf, 4), PortRef::new(s2, lp))
                .unwrap();
        }
        let mut st = FabricState::new(b.finish());
        for (i, &h) in hosts.iter().enumerate() {
            st.lids
                .base
                .entry(h)
                .or_default()
                .insert(PortNum(1), Lid(i as u16 + 1));
        }
        for (i, (&s, table)) in [l1, l2, s1, s2].iter().zip(&lfts).enumerate() {
            st.lids
                .base
                .entry(s)
                .or_default()
                .insert(PortNum(0), Lid(i as u16 + 5));
            let mut lft = Lft::default();
            for (lid, &p) in (1u16..).zip(table) {
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

    /// Each leaf's two remote hosts go through different spines.
    const GOOD: [[u8; 8]; 4] = [
        [1, 2, 3, 4, 0, 3, 3, 4],
        [3, 4, 1, 2, 3, 0, 3, 4],
        [1, 1, 2, 2, 1, 2, 0, 1],
        [1, 1, 2, 2, 1, 2, 1, 0],
    ];

    /// Every remote host through `S1`.
    const BAD: [[u8; 8]; 4] = [
        [1, 2, 3, 3, 0, 3, 3, 4],
        [3, 3, 1, 2, 3, 0, 3, 4],
        [1, 1, 2, 2, 1, 2, 0, 1],
        [1, 1, 2, 2, 1, 2, 1, 0],
    ];

    fn opts() -> QualityOptions {
        QualityOptions {
            seed: 7,
            bisections: Some(1000),
            ..QualityOptions::default()
        }
    }

    fn pair_ebb(st: &FabricState, pairs: &[(u32, u32)]) -> f64 {
        let net = Net::new(st);
        let flows: Vec<(u32, u32)> = pairs.iter().flat_map(|&(a, b)| [(a, b), (b, a)]).collect();
        let s = net.pattern(&flows, &mut WalkScratch::new(net.dlinks));
        s.share / s.flows as f64
    }

    #[test]
    fn good_tree_by_hand() {
        let q = quality(&tiny(GOOD), &opts());
        assert_eq!((q.hosts, q.hosts_excluded, q.switches), (4, 0, 4));
        assert_eq!(q.fabric_links, 8);
        // Balance: every leaf sends one remote host up each spine; every spine sends two
        // hosts down each leaf.
        assert_eq!(q.balance.switches, 4);
        assert_eq!(q.balance.unbalanced, 0);
        assert_eq!(q.balance.max_spread, 0);
        let l1 = &q.balance.per_switch[0];
        assert_eq!(l1.switch, "L1");
        assert_eq!(l1.level, 1);
        assert_eq!(l1.ports, BTreeMap::from([(3, 1), (4, 1)]));
        assert_eq!(
            q.balance.per_switch[2].ports,
            BTreeMap::from([(1, 2), (2, 2)])
        );
        assert_eq!(q.balance.per_switch[2].level, 2);
        // Shifts 1, 2, 3: never two flows on one link.
        assert!(q.shift.all);
        assert_eq!(q.shift.shifts, 3);
        assert_eq!(q.shift.flows, 12);
        assert_eq!(q.shift.max_load, 1);
        assert_eq!(q.shift.max_load_histogram, BTreeMap::from([(1, 3)]));
        // k = 1 and k = 3 cross with 2 flows each (2 fabric links per flow), k = 2 with 4.
        assert!((q.shift.mean_load - (4.0 + 8.0 + 4.0) / (8.0 * 3.0)).abs() < 1e-12);
        // All-to-all: each leaf→spine link carries the two flows to one remote host, each
        // spine→leaf link the two flows to one of its hosts.
        assert_eq!(q.all_to_all.flows, 12);
        assert_eq!(q.all_to_all.unroutable, 0);
        assert_eq!(q.all_to_all.max_load, 2);
        assert!((q.all_to_all.mean_load - 2.0).abs() < 1e-12);
        // Hops: 4 same-leaf pairs of 2 links, 8 cross pairs of 4.
        assert_eq!(q.hops.histogram, BTreeMap::from([(2, 4), (4, 8)]));
        assert_eq!(q.hops.max, 4);
        assert!((q.hops.mean - 40.0 / 12.0).abs() < 1e-12);
        assert_eq!(q.hops.unroutable.total(), 0);
        // Every bisection is served at full rate.
        assert_eq!(q.bisections.count, 1000);
        assert_eq!(q.bisections.flows, 4000);
        assert_eq!(q.bisections.max_load, 1);
        assert_eq!(q.bisections.ebb, 1.0);
        assert_eq!(q.bisections.ebb_min, 1.0);
        assert_eq!(q.switch_to_switch.pairs, 12);
        assert_eq!(q.switch_to_switch.unroutable.total(), 0);
    }

    #[test]
    fn bad_tree_by_hand() {
        let st = tiny(BAD);
        let q = quality(&st, &opts());
        // Both leaves put their two remote hosts on port 3 and none on port 4.
        assert_eq!(q.balance.unbalanced, 2);
        assert_eq!(q.balance.unbalanced_by_direction, 2);
        assert_eq!(q.balance.max_spread, 2);
        assert_eq!(
            q.balance.per_switch[0].ports,
            BTreeMap::from([(3, 2), (4, 0)])
        );
        assert!(q.balance.per_switch[0].unbalanced);
        assert!(!q.balance.per_switch[2].unbalanced);
        // Shift 2 puts H1→H3 and H2→H4 on L1→S1.
        assert_eq!(q.shift.max_load, 2);
        assert_eq!(q.shift.max_load_histogram, BTreeMap::from([(1, 2), (2, 1)]));
        // All-to-all: L1→S1 carries the four flows from H1, H2 to H3, H4.
        assert_eq!(q.all_to_all.max_load, 4);
        assert!((q.all_to_all.mean_load - 16.0 / 8.0).abs() < 1e-12);
        // A crossing pairing halves every flow; a local one does not.
        assert_eq!(pair_ebb(&st, &[(0, 2), (1, 3)]), 0.5);
        assert_eq!(pair_ebb(&st, &[(0, 3), (1, 2)]), 0.5);
        assert_eq!(pair_ebb(&st, &[(0, 1), (2, 3)]), 1.0);
        assert_eq!(pair_ebb(&tiny(GOOD), &[(0, 2), (1, 3)]), 1.0);
        // Two of three pairings cross: eBB ≈ 1 − 0.5 × 2/3.
        assert!(
            (q.bisections.ebb - 2.0 / 3.0).abs() < 0.03,
            "{}",
            q.bisections.ebb
        );
        assert_eq!((q.bisections.ebb_min, q.bisections.ebb_max), (0.5, 1.0));
        assert_eq!(q.bisections.max_load, 2);
        // Same tables, same seed: the same numbers.
        assert_eq!(q, quality(&st, &opts()));
        let other = quality(&st, &QualityOptions { seed: 8, ..opts() });
        assert_ne!(q.bisections.ebb, other.bisections.ebb);
    }

    #[test]
    fn broken_tables_count_as_unroutable() {
        let mut t = GOOD;
        t[1][0] = LFT_UNSET; // L2 has no entry for H1
        t[1][1] = 4; // L2 sends H2 to S2 ...
        t[3][1] = 2; // ... and S2 sends it back to L2: a loop
        t[2][2] = 0; // S1 sends H3 to its port 0: a dead end
        let q = quality(&tiny(t), &opts());
        // H3, H4 → H1 unset; H3, H4 → H2 loop; H1, H2 → H3 (via S1) dead end.
        assert_eq!(
            q.hops.unroutable,
            Unroutable {
                unset: 2,
                dead_end: 2,
                loops: 2,
                misdelivered: 0
            }
        );
        assert_eq!(q.all_to_all.unroutable, 6);
        assert_eq!(q.hops.histogram.values().sum::<u64>(), 6);
        assert!(q.shift.unroutable > 0);
        assert!(q.bisections.unroutable > 0);
        assert!(q.bisections.ebb < 1.0);

        // Misdelivery: L1 sends H2 to H1's port.
        let mut t = GOOD;
        t[0][1] = 1;
        let q = quality(&tiny(t), &opts());
        assert_eq!(q.hops.unroutable.misdelivered, 3);

        // Spine to spine unset, as OpenSM's ftree leaves it.
        let mut t = GOOD;
        t[2][7] = LFT_UNSET;
        t[3][6] = LFT_UNSET;
        let q = quality(&tiny(t), &opts());
        assert_eq!(q.switch_to_switch.unroutable.unset, 2);
        assert_eq!(q.hops.unroutable.total(), 0);
    }

    #[test]
    fn empty_and_tableless_states_do_not_panic() {
        let st = FabricState::new(FabricBuilder::new("empty").finish());
        let q = quality(&st, &opts());
        assert_eq!(q.hosts, 0);
        assert_eq!(q.bisections.ebb, 0.0);
        let mut st = tiny(GOOD);
        st.switches.clear();
        let q = quality(&st, &opts());
        assert_eq!(q.hops.unroutable.unset, 12);
        assert_eq!(q.switch_to_switch.unroutable.unset, 12);
        // An LFT pointing past the switch's ports.
        let mut t = GOOD;
        t[0][2] = 200;
        let q = quality(&tiny(t), &opts());
        assert_eq!(q.hops.unroutable.dead_end, 2);
    }

    #[test]
    fn shift_subset_is_evenly_spaced() {
        let q = quality(
            &tiny(GOOD),
            &QualityOptions {
                all_shifts_up_to: 2,
                shift_samples: 2,
                ..opts()
            },
        );
        assert!(!q.shift.all);
        assert_eq!(q.shift.shifts, 2);
        assert_eq!(q.shift.flows, 8);
    }

    #[test]
    fn splitmix64_reference_values() {
        // First outputs for seed 0 (the reference implementation's published sequence).
        let mut r = SplitMix64(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert!(bisection_flows(5, 1).len() == 4);
    }
}
