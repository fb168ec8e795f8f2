//! What the metrics return and the knobs they take: [`QualityOptions`] (with the defaults and
//! the bisection budget), [`Quality`] and one type per metric, and [`Unroutable`], the
//! reasons a pair has no route.

use crate::net::Reach;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Knobs of [`quality`](crate::quality).
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
    /// Whether to measure the patterns over machines and rails ([`Quality::machines`]) when
    /// end nodes are grouped into hosts.
    pub machines: bool,
}

impl Default for QualityOptions {
    fn default() -> QualityOptions {
        QualityOptions {
            seed: 0,
            bisections: None,
            all_shifts_up_to: ALL_SHIFTS_UP_TO,
            shift_samples: SHIFT_SAMPLES,
            machines: true,
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
    /// Machines with an end port in the traffic patterns: the end nodes of one `host = "…"`
    /// count once, an end node without one is a machine of its own.
    pub hosts: usize,
    /// End-node ports in the traffic patterns (what the patterns send between).
    pub end_ports: usize,
    /// End-node ports left out (no LID, no up cable to a usable switch, node down).
    pub end_ports_excluded: usize,
    /// Cabled ports of service nodes (aggregation, storage, management end nodes): routed
    /// and proven like every end port, outside the traffic patterns and the balance.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub service_ports: usize,
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
    /// Links beyond the shortest (up*/down*) paths.
    #[serde(default)]
    pub hop_excess: crate::excess::HopExcess,
    /// Switch-to-switch LID routing.
    pub switch_to_switch: SwitchReach,
    /// Machines and rails, when the fabric groups end nodes into hosts (`host = "…"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machines: Option<Hosts>,
}

/// Patterns over machines (a host of several HCAs counts once) and per rail.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hosts {
    /// Machines with a port in the patterns.
    pub hosts: usize,
    /// How many machines have each number of ports in the patterns (`8 → 458`: 458 DGX).
    pub ports_per_host: BTreeMap<usize, usize>,
    /// Machines of one end node whose NodeDescription is an adapter's default
    /// (`MT4129 ConnectX7   Mellanox Technologies`): one machine per system image GUID.
    pub default_named: usize,
    /// What the cabling says of the rails.
    pub cabling: RailCabling,
    /// Random bisections of the machines, partners exchanging one flow each way per rail
    /// (port `r` with port `r`: what rail-aligned collectives send); `None` when the fabric
    /// is not rail-optimised.
    pub rail_aligned: Option<Bisections>,
    /// The same bisections, each port sending to the partner's port on the next rail (the
    /// last to the first): traffic that must leave its rail; `None` when not rail-optimised.
    pub cross_rail: Option<Bisections>,
    /// Per rail, random bisections of that rail's ports alone (none when not
    /// rail-optimised).
    pub rails: Vec<Rail>,
}

/// Whether the fabric is rail-optimised, and the machines whose rail cables cross
/// ([`weft_fabric::machines::rails`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RailCabling {
    /// More than half the machines of several HCAs reach a different leaf with each HCA.
    pub rail_optimised: bool,
    /// Machines of several HCAs.
    pub machines: usize,
    /// Of those, the ones reaching a different leaf with each HCA.
    pub spread: usize,
    /// Of those, the ones with all their HCAs on one leaf.
    pub one_leaf: usize,
    /// Machines whose HCAs reach their rails' leaves in another order (crossed cables).
    pub crossed: Vec<CrossedHost>,
}

/// A machine whose rail cables cross.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrossedHost {
    /// The host.
    pub host: String,
    /// Its HCAs on another rail's leaf: HCA, leaf, the rail of its peers, the leaf's rail.
    pub hcas: Vec<CrossedHca>,
}

/// One HCA of a [`CrossedHost`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrossedHca {
    /// The HCA.
    pub hca: String,
    /// The leaf its cable reaches.
    pub leaf: String,
    /// The rail its peers of its rank are on.
    pub expected_rail: u8,
    /// The leaf's rail.
    pub leaf_rail: u8,
}

/// One rail's own bisections.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rail {
    /// The rail.
    pub rail: u8,
    /// Its ports in the patterns.
    pub hosts: usize,
    /// Random bisections of them (the eBB of the rail).
    pub bisections: Bisections,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
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
    /// Level (1 = has hosts, counted up from there); `None` for a switch the fabric's
    /// recorded tree levels set aside (a host-less management sub-tree, a switch hanging off
    /// the tree): it is in no level.
    pub level: Option<u32>,
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
    /// Effective bisection bandwidth: mean over the bisections that have a flow of the mean
    /// flow share; `None` (JSON `null`) when no bisection has a flow (one host or none).
    pub ebb: Option<f64>,
    /// The worst bisection's mean flow share (`None` as for `ebb`).
    pub ebb_min: Option<f64>,
    /// The best bisection's mean flow share (`None` as for `ebb`).
    pub ebb_max: Option<f64>,
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

    /// Counts `n` pairs whose route ends as `reach` (a route that arrives is not counted).
    pub(crate) fn add(&mut self, reach: Reach, n: u64) {
        match reach {
            Reach::Hops(_) => {}
            Reach::Unset => self.unset += n,
            Reach::Loop => self.loops += n,
            Reach::Misdelivered => self.misdelivered += n,
            Reach::DeadEnd => self.dead_end += n,
        }
    }

    pub(crate) fn merge(mut self, o: Unroutable) -> Unroutable {
        self.unset += o.unset;
        self.dead_end += o.dead_end;
        self.loops += o.loops;
        self.misdelivered += o.misdelivered;
        self
    }
}
