//! `transition`: one step of a plan is safe while it lands.
//!
//! A step's LFT writes go out together, so any subset of them may have landed at any moment:
//! each switch forwards a destination by its entry *before* the step or *after* it. The union
//! of the two (per destination, each switch with one or two next hops) is what must be safe:
//!
//! * **loop-free**: the union forwarding graph toward each destination, from every source, has
//!   no cycle. A simple cycle in the union uses one entry per switch, so this is exactly "no
//!   mix of landed writes has a forwarding loop";
//! * **deadlock-free**: the union channel dependency graph — every dependency any route of any
//!   mix creates, over every destination, and the dependencies of the start's multicast trees
//!   (LFT writes leave them as they are) — is acyclic (sound for every mix, since each mix's
//!   graph is a subgraph);
//! * **connected**: every route that arrives before the step arrives in every mix (a route a
//!   fault already broke need not arrive until the write that mends it lands; the final state
//!   is proven connected on its own).
//!
//! The two states must agree on everything but their LFTs (fabric, LIDs, SL→VL, path SLs,
//! multicast groups and MFTs); the fabric the step is checked on is theirs. VLs follow the verifier's semantics (`net.rs`).
//!
//! [`Transition`] checks a sequence of steps from one state, each against the state the steps
//! before it left: it keeps the current tables, a dependency set that contains every dependency
//! of the current state (the start's and every checked step's union; more than the current
//! state's, never fewer) with a topological rank per channel, and the routes failing per
//! destination. A step is then worked out for the destinations it changes only: its new
//! dependencies are checked against the ranks, and only when one goes against them is the
//! whole graph searched for a cycle — and when that finds one, the step is checked exactly (every
//! destination, the current state's own dependencies instead of the kept ones) before it is
//! called unsafe. [`check_step`] checks one step between two states.

use crate::channels::{self, DepSet, Graph};
use crate::net::{Attach, Dest, Net, Source, Step};
use crate::report::{Channel, Endpoint, FailureReason, NodeRef, Outcome};
use crate::Scope;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use weft_fabric::forward::{self, Mark, Next};
use weft_fabric::{Lid, NodeId, ValidState, LFT_UNSET};

/// Which of a switch's two entries a hop used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Entry {
    /// The entry before the step.
    Before,
    /// The entry the step writes.
    After,
    /// Both are the same.
    Unchanged,
}

/// One hop of a transient forwarding loop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopHop {
    /// The switch.
    pub node: NodeRef,
    /// The port it sends the destination out of.
    pub out_port: u8,
    /// Which of its entries does so.
    pub entry: Entry,
}

/// A forwarding loop some mix of the step's writes makes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForwardingLoop {
    /// The destination LID.
    pub dlid: Lid,
    /// The port owning it.
    pub dst: Endpoint,
    /// The switches of the loop, in order; the last sends back to the first.
    pub hops: Vec<LoopHop>,
}

/// A route that arrives before the step and fails in some mix of its writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokenRoute {
    /// The switch the route enters (or starts at).
    pub from: NodeRef,
    /// The destination LID.
    pub dlid: Lid,
    /// The port owning it.
    pub dst: Endpoint,
    /// Where it fails.
    pub at: NodeRef,
    /// With which entry.
    pub entry: Entry,
    /// Why.
    pub reason: FailureReason,
}

/// What checking one step found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepCheck {
    /// No mix has a forwarding loop.
    pub loop_free: Outcome,
    /// The union channel dependency graph is acyclic.
    pub deadlock_free: Outcome,
    /// Every route that arrives before the step arrives in every mix.
    pub connected: Outcome,
    /// No mix of its P_Key writes lets two end ports talk that nothing allows, and after the
    /// last step the tables are isolated ([`crate::partition_mix`]); proven for a step that
    /// writes no P_Key.
    #[serde(default = "proven")]
    pub isolated: Outcome,
    /// A pair of end ports that breaks `isolated`, when one does: in a mix of the step's
    /// writes, or (`breach_after_plan`) in the tables the last step leaves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breach: Option<crate::isolation::Breach>,
    /// Whether `breach` is of the tables after the plan.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub breach_after_plan: bool,
    /// A transient forwarding loop, when there is one.
    pub forwarding_loop: Option<ForwardingLoop>,
    /// A cycle of channels in the union dependency graph, when there is one.
    pub credit_loop: Vec<Channel>,
    /// A route the step breaks, when there is one.
    pub broken: Option<BrokenRoute>,
    /// LFT entries the step changes.
    pub changed_entries: u64,
    /// Routes (source, destination) that fail before the step (a fault's doing), and after it.
    pub failing_before: u64,
    /// Routes that fail after the step.
    pub failing_after: u64,
    /// Routes toward destinations out of service (break-before-make: see
    /// [`Transition::drop_destinations`]) that fail before or after the step beyond those
    /// that failed at the start: the step's outage. For a step that only takes entries away,
    /// or only puts them back, every mix fails no more routes than one of its two ends.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outage_routes: u64,
    /// Destinations out of service after the step.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub out_of_service: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl StepCheck {
    /// Whether every part is proven.
    pub fn is_proven(&self) -> bool {
        [
            &self.loop_free,
            &self.deadlock_free,
            &self.connected,
            &self.isolated,
        ]
        .iter()
        .all(|o| **o == Outcome::Proven)
    }
}

fn proven() -> Outcome {
    Outcome::Proven
}

/// Why two states cannot be the two ends of a step.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum TransitionError {
    /// They differ in more than their LFTs.
    #[error("the two states differ in {0}, not only in their forwarding tables")]
    #[diagnostic(code(weft::transition::differ))]
    Differ(&'static str),
}

/// The states must differ in LFTs only.
fn comparable(a: &ValidState, b: &ValidState) -> Result<(), TransitionError> {
    if a.fabric != b.fabric {
        return Err(TransitionError::Differ("their fabric"));
    }
    if a.lids != b.lids {
        return Err(TransitionError::Differ("their LIDs"));
    }
    if a.path_sl != b.path_sl {
        return Err(TransitionError::Differ("their path SLs"));
    }
    if a.ports != b.ports {
        return Err(TransitionError::Differ("their port tables"));
    }
    if !a.same_sl2vl(b) || a.switches.keys().ne(b.switches.keys()) {
        return Err(TransitionError::Differ("their SL→VL tables"));
    }
    if a.multicast != b.multicast {
        return Err(TransitionError::Differ("their multicast groups or tables"));
    }
    Ok(())
}

/// One LFT entry a step writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Change {
    /// The switch.
    pub switch: NodeId,
    /// The LID.
    pub lid: Lid,
    /// The port it forwards the LID to (255: no entry).
    pub port: u8,
}

/// An entry of the per-destination overlay meaning "the step does not change it".
const SAME: u16 = u16::MAX;

/// Per-destination scratch.
struct Scratch {
    mark: Vec<u8>,
    /// Per switch index, whether its route arrives with the entries before (`ok[0]`) and
    /// after (`ok[1]`).
    ok: [Vec<Mark<bool>>; 2],
    path: Vec<u32>,
    stack: Vec<(u32, u8)>,
    /// Per (port slot, SL): the VLs a route state was seen on (dense, reset through
    /// `touched`).
    seen: Vec<u16>,
    touched: Vec<u32>,
    states: Vec<(u32, u8, u8, u8)>,
    /// Per output port slot: the SLs whose first-hop dependencies from the switch's sources
    /// are recorded, and the (SL, VL) pairs they leave on (valid across destinations of one
    /// pass: they go to one dependency set).
    group: Vec<(u16, Vec<(u8, u8)>)>,
    /// Per switch index, the entry the step writes for the current destination ([`SAME`]:
    /// none).
    over: Vec<u16>,
    /// Per switch index, whether every route of every mix from it arrives
    /// ([`Union::all_arrive`]; `WHITE`: not known yet).
    sure: Vec<u8>,
}

impl Scratch {
    fn new(net: &Net<'_>) -> Scratch {
        let n = net.switches.len();
        Scratch {
            mark: vec![0; n],
            ok: [vec![Mark::Unknown; n], vec![Mark::Unknown; n]],
            path: Vec::new(),
            stack: Vec::new(),
            seen: vec![0; (net.ports as usize + 1) * 16],
            touched: Vec::new(),
            states: Vec::new(),
            group: vec![(0, Vec::new()); net.ports as usize],
            over: vec![SAME; n],
            sure: vec![WHITE; n],
        }
    }
}

/// What one destination contributes.
#[derive(Default)]
struct DestOut {
    changed: u64,
    forwarding_loop: Option<ForwardingLoop>,
    broken: Option<BrokenRoute>,
    failing_before: u64,
    failing_after: u64,
}

/// Steps checked one after another from a start state (see the module docs).
pub struct Transition<'a> {
    net: Net<'a>,
    sources: Vec<Source>,
    dests: Vec<Dest>,
    /// Per LID, its index in `dests` (`u32::MAX`: not a destination in scope).
    dest_of: Vec<u32>,
    attach: Attach,
    starts: Vec<usize>,
    /// The current LFTs.
    cur: Lfts,
    /// Every dependency of the current state, and maybe more.
    deps: DepSet,
    /// The start's multicast dependencies (its groups' trees), when it has any: LFT writes
    /// leave them as they are, so every mix has them, and every exact set starts from them.
    multicast: Option<DepSet>,
    /// A topological rank per channel of `deps`' graph.
    ranks: Vec<u32>,
    /// Per destination index: routes toward it failing in the current state.
    failing: Vec<u64>,
    /// Per destination index: routes toward it failing at the start.
    failing_at_start: Vec<u64>,
    /// Per destination index: whether it is out of service (its routes may fail until they
    /// arrive again).
    outage: Vec<bool>,
    /// A cycle of the start's own dependencies, when it has one (every step's union then has
    /// it too).
    start_cycle: Vec<Channel>,
    scope: Scope,
    /// What to undo back to the last [`Transition::checkpoint`], when one is set.
    journal: Option<Journal>,
    /// The credit loops the last refused step's exact check found ([`Transition::last_cycles`]).
    last_cycles: Vec<Vec<Channel>>,
    /// The dependencies inside the cyclic components of the last refused step's exact check
    /// ([`Transition::last_cyclic_dependencies`]).
    last_cyclic: usize,
}

/// A dependency at a switch: `(switch index, in port, in VL, out port, out VL)`.
type Dep = (u32, u8, u8, u8, u8);

/// Credit loops [`Transition::last_cycles`] keeps at most.
pub const MAX_CYCLES: usize = 256;

/// Changes since a checkpoint, oldest first.
#[derive(Default)]
struct Journal {
    undo: Vec<Undo>,
    /// The kept dependencies were replaced by an exact set (which may lack dependencies of
    /// the checkpoint's state): a rollback works them out again.
    deps_replaced: bool,
}

/// One change to undo.
enum Undo {
    /// A table entry: (switch index, LID, the port before).
    Entry(usize, usize, u8),
    /// A destination's failing routes before.
    Failing(usize, u64),
    /// A destination's owner before.
    Owner(usize, (u32, u8)),
    /// Whether a destination was out of service before.
    Outage(usize, bool),
}

impl<'a> Transition<'a> {
    /// Starts from `start`: its tables, dependencies and failing routes (one pass over every
    /// destination).
    pub fn new(start: &'a ValidState, scope: Scope) -> Transition<'a> {
        let net = Net::new(start);
        let (sources, dests) = net.endpoints(scope);
        let attach = net.attach(&sources);
        let n = net.switches.len();
        let starts: Vec<usize> = (0..n)
            .filter(|&k| attach.by_switch.get(k).is_some_and(|v| !v.is_empty()))
            .collect();
        let mut cur = Lfts::new(n);
        for (k, &x) in net.switches.iter().enumerate() {
            if let Some(t) = start.switches.get(&NodeId(x)) {
                for (lid, &port) in t.lft.ports.iter().enumerate() {
                    cur.set(k, lid, port);
                }
            }
        }
        let mut dest_of = vec![u32::MAX; usize::from(weft_fabric::MAX_UNICAST_LID) + 1];
        for (i, d) in dests.iter().enumerate() {
            if let Some(slot) = dest_of.get_mut(usize::from(d.lid.0)) {
                *slot = i as u32;
            }
        }
        let deps = DepSet::new(&net);
        let multicast = (!start.multicast.is_empty()).then(|| {
            let mc = DepSet::new(&net);
            crate::multicast::dependencies(&net, start, &mc);
            deps.absorb(&mc);
            mc
        });
        let mut t = Transition {
            sources,
            dest_of,
            attach,
            starts,
            cur,
            deps,
            multicast,
            ranks: Vec::new(),
            failing: Vec::new(),
            failing_at_start: Vec::new(),
            outage: Vec::new(),
            start_cycle: Vec::new(),
            scope,
            dests,
            net,
            journal: None,
            last_cycles: Vec::new(),
            last_cyclic: 0,
        };
        let outs = t.run(&t.deps, &[], true);
        t.failing = outs.iter().map(|o| o.failing_before).collect();
        t.failing_at_start = t.failing.clone();
        t.outage = vec![false; t.dests.len()];
        let graph = t.graph(&t.deps, &[]);
        match graph.topo_ranks() {
            Some(r) => t.ranks = r,
            None => t.start_cycle = t.cycle(&graph),
        }
        t
    }

    /// Moves `lid` to `owner` (a VM's LID now owned by the port of the hypervisor it
    /// migrated to) without changing a table: routes toward it are worked out again from the
    /// current tables — those that now fail are failing routes a later step must mend. The
    /// kept dependencies stay (a superset is sound). `false` when `lid` is not a destination
    /// here or `owner` is not a live end port.
    pub fn relocate(&mut self, lid: Lid, owner: weft_fabric::PortRef) -> bool {
        let Some(i) = self
            .dest_of
            .get(usize::from(lid.0))
            .copied()
            .filter(|&i| i != u32::MAX)
        else {
            return false;
        };
        let (n, p) = (owner.node.0, owner.port.0);
        if self.net.is_switch(n) || !self.net.alive(n) {
            return false;
        }
        if let Some(d) = self.dests.get_mut(i as usize) {
            if let Some(j) = &mut self.journal {
                j.undo.push(Undo::Owner(i as usize, d.owner));
            }
            d.owner = (n, p);
        }
        let sink = DepSet::new(&self.net);
        // The failing routes known are the old owner's: walked again.
        let failing = std::mem::take(&mut self.failing);
        let outs = self.run(&sink, &[(i, Vec::new())], false);
        self.failing = failing;
        if let Some(o) = outs.first() {
            self.set_failing(i as usize, o.failing_before);
        }
        true
    }

    /// Adds the multicast dependencies of `st` — the start's fabric with other MFTs (trees
    /// written between LFT steps) — to those every later step's mixes have. The kept
    /// dependencies only grow (what was there stays: a superset is sound); when they close a
    /// cycle, every later step is refused with it.
    pub fn add_multicast(&mut self, st: &ValidState) {
        let mc = DepSet::new(&self.net);
        crate::multicast::dependencies(&self.net, st, &mc);
        self.deps.absorb(&mc);
        match &self.multicast {
            Some(m) => m.absorb(&mc),
            None => self.multicast = Some(mc),
        }
        let graph = self.graph(&self.deps, &[]);
        match graph.topo_ranks() {
            Some(r) => self.ranks = r,
            None => {
                if self.start_cycle.is_empty() {
                    self.start_cycle = self.cycle(&graph);
                }
            }
        }
    }

    /// The state as it is now, to [`Transition::restore`] later: another search from the
    /// same start without walking it again (a copy of the tables and dependencies, where a
    /// [`Transition::checkpoint`] journals every change).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            dests: self.dests.clone(),
            cur: self.cur.clone(),
            deps: copied(&self.net, &self.deps),
            multicast: self.multicast.as_ref().map(|m| copied(&self.net, m)),
            ranks: self.ranks.clone(),
            failing: self.failing.clone(),
            outage: self.outage.clone(),
            start_cycle: self.start_cycle.clone(),
        }
    }

    /// Returns to `snap` (taken of this transition): tables, owners, dependencies (multicast
    /// ones included), failing routes and destinations out of service as they were; no
    /// checkpoint is kept.
    pub fn restore(&mut self, snap: &Snapshot) {
        self.dests.clone_from(&snap.dests);
        self.cur.clone_from(&snap.cur);
        self.deps = copied(&self.net, &snap.deps);
        self.multicast = snap.multicast.as_ref().map(|m| copied(&self.net, m));
        self.ranks.clone_from(&snap.ranks);
        self.failing.clone_from(&snap.failing);
        self.outage.clone_from(&snap.outage);
        self.start_cycle.clone_from(&snap.start_cycle);
        self.journal = None;
        self.last_cycles.clear();
        self.last_cyclic = 0;
    }

    /// Starts recording what the following steps and relocations change, so that
    /// [`Transition::rollback`] can return here (a plan worked out but not applied).
    pub fn checkpoint(&mut self) {
        self.journal = Some(Journal::default());
    }

    /// Returns to the last checkpoint: tables, owners and failing routes as they were there.
    /// Dependencies added since stay (a superset of the state's is what the checks need), unless
    /// they were replaced, in which case they are worked out again over every destination.
    /// Without a checkpoint, nothing happens.
    pub fn rollback(&mut self) {
        let Some(j) = self.journal.take() else {
            return;
        };
        for u in j.undo.into_iter().rev() {
            match u {
                Undo::Entry(k, lid, port) => self.cur.set(k, lid, port),
                Undo::Failing(i, v) => {
                    if let Some(f) = self.failing.get_mut(i) {
                        *f = v;
                    }
                }
                Undo::Owner(i, o) => {
                    if let Some(d) = self.dests.get_mut(i) {
                        d.owner = o;
                    }
                }
                Undo::Outage(i, v) => {
                    if let Some(o) = self.outage.get_mut(i) {
                        *o = v;
                    }
                }
            }
        }
        if j.deps_replaced {
            let deps = self.fresh_with_multicast();
            self.run_others(&deps, &[]);
            let graph = self.graph(&deps, &[]);
            self.deps = deps;
            match graph.topo_ranks() {
                Some(r) => self.ranks = r,
                None => self.start_cycle = self.cycle(&graph),
            }
        }
    }

    /// Sets destination `i`'s failing routes, journalled.
    fn set_failing(&mut self, i: usize, v: u64) {
        if let Some(f) = self.failing.get_mut(i) {
            if let Some(j) = &mut self.journal {
                j.undo.push(Undo::Failing(i, *f));
            }
            *f = v;
        }
    }

    /// Sets an entry of the current tables, journalled.
    fn set_current(&mut self, k: usize, lid: usize, port: u8) {
        if let Some(j) = &mut self.journal {
            j.undo.push(Undo::Entry(k, lid, self.cur.get(k, lid)));
        }
        self.cur.set(k, lid, port);
    }

    /// Destinations in scope (a check that fails may walk every one).
    pub fn destinations(&self) -> usize {
        self.dests.len()
    }

    /// Routes failing in the current state.
    pub fn failing(&self) -> u64 {
        self.failing.iter().sum()
    }

    /// Takes destinations out of service (break-before-make): from now on, routes toward
    /// them may fail in a step's mixes (`connected` asks nothing of them) until a step after
    /// which they fail no more than at the start, which puts them back in service. LIDs
    /// that are no destination in scope are ignored. Loops and dependencies are checked for
    /// them as for any destination.
    pub fn drop_destinations(&mut self, lids: &[Lid]) {
        for lid in lids {
            let Some(i) = self.dest_index(*lid) else {
                continue;
            };
            self.set_outage(i, true);
        }
    }

    /// Whether `lid` is out of service ([`Transition::drop_destinations`]).
    pub fn out_of_service(&self, lid: Lid) -> bool {
        self.dest_index(lid)
            .is_some_and(|i| self.outage.get(i).copied().unwrap_or(false))
    }

    /// Destinations out of service.
    pub fn outage_count(&self) -> u64 {
        self.outage.iter().filter(|&&o| o).count() as u64
    }

    /// Routes toward destinations out of service that fail now beyond those failing at the
    /// start.
    pub fn outage_routes(&self) -> u64 {
        (0..self.dests.len())
            .filter(|&i| self.outage.get(i).copied().unwrap_or(false))
            .map(|i| self.beyond_start(i, self.failing.get(i).copied().unwrap_or(0)))
            .sum()
    }

    /// The end nodes (by node) whose route toward some destination out of service fails now
    /// — those an outage reaches at this point — with how many destinations out of service
    /// each cannot reach. Sorted by node.
    pub fn outage_sources(&self) -> Vec<(NodeId, u64)> {
        let u = self.union(&self.deps);
        let out: Vec<usize> = (0..self.dests.len())
            .filter(|&i| self.outage.get(i).copied().unwrap_or(false))
            .collect();
        let n = self.sources.len();
        let counts: Vec<u64> = out
            .par_iter()
            .fold(
                || {
                    let ok = vec![Mark::Unknown; self.net.switches.len()];
                    (ok, Vec::new(), vec![0u64; n])
                },
                |(mut ok, mut path, mut per), &i| {
                    let Some(&d) = self.dests.get(i) else {
                        return (ok, path, per);
                    };
                    ok.fill(Mark::Unknown);
                    for &s in &self.starts {
                        if u.arrives(s, d, false, &[], &mut ok, &mut path) {
                            continue;
                        }
                        for &(_, j) in self.attach.by_switch.get(s).map_or(&[][..], |v| v) {
                            let own = self
                                .sources
                                .get(j as usize)
                                .is_some_and(|src| (src.node, src.port) == d.owner);
                            if let Some(c) = per.get_mut(j as usize).filter(|_| !own) {
                                *c += 1;
                            }
                        }
                    }
                    (ok, path, per)
                },
            )
            .map(|(_, _, per)| per)
            .reduce(
                || vec![0u64; n],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x += y;
                    }
                    a
                },
            );
        let mut by_node: std::collections::BTreeMap<NodeId, u64> =
            std::collections::BTreeMap::new();
        for (j, &c) in counts.iter().enumerate() {
            let Some(src) = self.sources.get(j).filter(|_| c > 0) else {
                continue;
            };
            if !self.net.is_switch(src.node) {
                let e = by_node.entry(NodeId(src.node)).or_default();
                *e = (*e).max(c);
            }
        }
        by_node.into_iter().collect()
    }

    /// Per cycle of `cycles` (credit loops a step's check found) and per dependency of it
    /// (from each channel to the next, the last to the first), the destination LIDs whose
    /// routes create it in some mix of the step writing `changes` on the current state. Where a credit loop is to be broken
    /// by taking destinations out of service, a dependency few destinations create is the
    /// cheapest to remove.
    pub fn creators<I>(&self, changes: I, cycles: &[Vec<Channel>]) -> Vec<Vec<Vec<Lid>>>
    where
        I: Iterator<Item = Change> + Clone,
    {
        // Each cycle's dependencies, in its order: at the switch the next channel leaves,
        // from the port the channel arrives on.
        let per_cycle: Vec<Vec<Option<Dep>>> = cycles
            .iter()
            .map(|cycle| {
                let n = cycle.len();
                (0..n)
                    .map(|j| {
                        let (a, b) = (cycle.get(j)?, cycle.get((j + 1) % n)?);
                        let k = self.net.switch_of(b.node.id.0);
                        (k != u32::MAX && a.to.id == b.node.id)
                            .then_some((k, a.to_port, a.vl, b.port, b.vl))
                    })
                    .collect()
            })
            .collect();
        let mut wanted: Vec<(u32, u8, u8, u8, u8)> =
            per_cycle.iter().flatten().flatten().copied().collect();
        wanted.sort_unstable();
        wanted.dedup();
        let (work, _) = self.per_destination(changes);
        let by_dest: std::collections::BTreeMap<u32, &Writes> =
            work.iter().map(|(i, w)| (*i, w)).collect();
        let none: Writes = Vec::new();
        // Per destination, the wanted dependencies its walk creates (their indices).
        let found: Vec<(Lid, Vec<u32>)> = (0..self.dests.len() as u32)
            .into_par_iter()
            .map_init(
                || Scratch::new(&self.net),
                |scr, i| {
                    let probe = Probe {
                        wanted: &wanted,
                        hit: wanted
                            .iter()
                            .map(|_| std::sync::atomic::AtomicBool::new(false))
                            .collect(),
                    };
                    let u = self.union(&probe);
                    let Some(&d) = self.dests.get(i as usize) else {
                        return (Lid(0), Vec::new());
                    };
                    let w = by_dest.get(&i).copied().unwrap_or(&none);
                    // Dependencies only: a check fails on credit loops only when every
                    // route of the step is loop-free and arrives as it must.
                    u.dependencies_over(d, w, scr);
                    let hits = probe
                        .hit
                        .iter()
                        .enumerate()
                        .filter(|(_, h)| h.load(std::sync::atomic::Ordering::Relaxed))
                        .map(|(j, _)| j as u32)
                        .collect();
                    (d.lid, hits)
                },
            )
            .collect();
        // Inverted: per wanted dependency, its creators in destination order.
        let mut by_dep: Vec<Vec<Lid>> = vec![Vec::new(); wanted.len()];
        for (lid, hits) in &found {
            for &j in hits {
                if let Some(v) = by_dep.get_mut(j as usize) {
                    v.push(*lid);
                }
            }
        }
        per_cycle
            .iter()
            .map(|deps| {
                deps.iter()
                    .map(|dep| {
                        dep.and_then(|d| wanted.binary_search(&d).ok())
                            .and_then(|at| by_dep.get(at).cloned())
                            .unwrap_or_default()
                    })
                    .collect()
            })
            .collect()
    }

    /// `failing` routes toward destination `i` beyond those failing at the start.
    fn beyond_start(&self, i: usize, failing: u64) -> u64 {
        failing.saturating_sub(self.failing_at_start.get(i).copied().unwrap_or(0))
    }

    fn dest_index(&self, lid: Lid) -> Option<usize> {
        self.dest_of
            .get(usize::from(lid.0))
            .copied()
            .filter(|&i| i != u32::MAX)
            .map(|i| i as usize)
    }

    /// Sets destination `i`'s outage flag, journalled.
    fn set_outage(&mut self, i: usize, v: bool) {
        if let Some(o) = self.outage.get_mut(i) {
            if let Some(j) = &mut self.journal {
                j.undo.push(Undo::Outage(i, *o));
            }
            *o = v;
        }
    }

    /// `changes` per destination (by index, ascending), each as (switch index, port) in
    /// the order given; and the changes of LIDs no destination owns, as (switch index, LID,
    /// port). Counted first so that each list is allocated once at its size (a step of an
    /// 11 664-node engine change writes sixteen million entries).
    fn per_destination<I>(&self, changes: I) -> (Vec<(u32, Writes)>, Vec<Unowned>)
    where
        I: Iterator<Item = Change> + Clone,
    {
        let mut count = vec![0u32; self.dests.len()];
        let mut other: Vec<(usize, Lid, u8)> = Vec::new();
        let place = |c: &Change| -> Option<(u32, Option<u32>)> {
            let k = self.net.switch_of(c.switch.0);
            ((k as usize) < self.cur.switches).then(|| {
                let i = self.dest_of.get(usize::from(c.lid.0)).copied();
                (k, i.filter(|&i| i != u32::MAX))
            })
        };
        for c in changes.clone() {
            match place(&c) {
                Some((_, Some(i))) => {
                    if let Some(n) = count.get_mut(i as usize) {
                        *n += 1;
                    }
                }
                Some((k, None)) => other.push((k as usize, c.lid, c.port)),
                None => {}
            }
        }
        let mut lists: Vec<Writes> = count
            .iter()
            .map(|&n| Vec::with_capacity(n as usize))
            .collect();
        for c in changes {
            if let Some((k, Some(i))) = place(&c) {
                if let Some(l) = lists.get_mut(i as usize) {
                    l.push(packed(k, c.port));
                }
            }
        }
        let work = lists
            .into_iter()
            .enumerate()
            .filter(|(_, l)| !l.is_empty())
            .map(|(i, l)| (i as u32, l))
            .collect();
        (work, other)
    }

    /// Checks the step that writes `changes` on the current state; when it is proven, the
    /// step lands (the current state becomes the one after it).
    pub fn step(&mut self, changes: &[Change]) -> StepCheck {
        self.step_iter(changes.iter().copied())
    }

    /// [`Transition::step`] of changes made as they are read (read twice), so that a step
    /// of millions of entries need not be held as a list.
    pub fn step_iter<I>(&mut self, changes: I) -> StepCheck
    where
        I: Iterator<Item = Change> + Clone,
    {
        self.last_cycles.clear();
        self.last_cyclic = 0;
        let (work, other) = self.per_destination(changes);
        let fresh = DepSet::new(&self.net);
        let outs = self.run(&fresh, &work, false);
        let mut check = self.summarise(&outs, &work);
        if !self.start_cycle.is_empty() {
            check.deadlock_free = Outcome::Violated;
            check.credit_loop = self.start_cycle.clone();
            return check;
        }
        if check.loop_free == Outcome::Proven && check.connected == Outcome::Proven {
            // The new dependencies: against the ranks first, the whole graph only if needed.
            let added: Vec<(u32, u32)> = self.new_edges(&fresh);
            let ranked = added.iter().all(|&(a, b)| {
                matches!((self.ranks.get(a as usize), self.ranks.get(b as usize)), (Some(x), Some(y)) if x < y)
            });
            if !ranked {
                let graph = self.graph(&self.deps, &added);
                match graph.topo_ranks() {
                    Some(r) => self.ranks = r,
                    None => {
                        // Maybe only the kept dependencies the current state no longer has:
                        // check exactly.
                        // The step's destinations' dependencies are `fresh`'s already;
                        // the others' as they are now.
                        let exact = self.fresh_with_multicast();
                        exact.absorb(&fresh);
                        self.run_others(&exact, &work);
                        let g = self.graph(&exact, &[]);
                        match g.topo_ranks() {
                            Some(r) => {
                                self.deps = exact;
                                self.ranks = r;
                                if let Some(j) = &mut self.journal {
                                    j.deps_replaced = true;
                                }
                            }
                            None => {
                                check.deadlock_free = Outcome::Violated;
                                let sccs = g.cyclic_sccs();
                                self.last_cycles = self.cycles(&g, &sccs, MAX_CYCLES);
                                self.last_cyclic = cyclic_edges(&g, &sccs);
                                check.credit_loop =
                                    self.last_cycles.first().cloned().unwrap_or_default();
                                return check;
                            }
                        }
                    }
                }
            }
            self.deps.absorb(&fresh);
        } else {
            check.deadlock_free = Outcome::Unknown(
                "not checked: the step already fails (a loop or a broken route)".to_owned(),
            );
            return check;
        }
        // The step lands; a destination out of service whose routes fail no more than at the
        // start is back in service.
        for (i, o) in work.iter().zip(&outs) {
            self.set_failing(i.0 as usize, o.failing_after);
        }
        if self.outage.contains(&true) {
            for i in 0..self.outage.len() {
                let failing = self.failing.get(i).copied().unwrap_or(0);
                if self.outage.get(i).copied().unwrap_or(false)
                    && self.beyond_start(i, failing) == 0
                {
                    self.set_outage(i, false);
                }
            }
        }
        check.out_of_service = self.outage_count();
        for (i, writes) in &work {
            let lid = self
                .dests
                .get(*i as usize)
                .map_or(0, |d| usize::from(d.lid.0));
            for (k, port) in writes.iter().map(|&w| write_of(w)) {
                self.set_current(k as usize, lid, port);
            }
        }
        for &(k, lid, port) in &other {
            self.set_current(k, usize::from(lid.0), port);
        }
        check
    }
    /// Works out destinations: every one (`every`) or those of `work`, each with its writes
    /// from `work`; dependencies go to `sink`. The results are in destination order, or in
    /// `work`'s.
    fn run(&self, sink: &DepSet, work: &[(u32, Writes)], every: bool) -> Vec<DestOut> {
        let u = self.union(sink);
        let none: Writes = Vec::new();
        if every {
            let writes: std::collections::BTreeMap<u32, &Writes> =
                work.iter().map(|(i, w)| (*i, w)).collect();
            (0..self.dests.len() as u32)
                .into_par_iter()
                .map_init(
                    || Scratch::new(&self.net),
                    |scr, i| {
                        let d = self.dests.get(i as usize).copied();
                        let w = writes.get(&i).copied().unwrap_or(&none);
                        d.map(|d| u.destination(i as usize, d, w, scr))
                            .unwrap_or_default()
                    },
                )
                .collect()
        } else {
            work.par_iter()
                .map_init(
                    || Scratch::new(&self.net),
                    |scr, (i, w)| {
                        self.dests
                            .get(*i as usize)
                            .map(|&d| u.destination(*i as usize, d, w, scr))
                            .unwrap_or_default()
                    },
                )
                .collect()
        }
    }

    /// Works out the dependencies of every destination `work` does not name (sorted by
    /// destination index), as the current tables route it, into `sink`.
    fn run_others(&self, sink: &DepSet, work: &[(u32, Writes)]) {
        let u = self.union(sink);
        let mut named = vec![false; self.dests.len()];
        for (i, _) in work {
            if let Some(n) = named.get_mut(*i as usize) {
                *n = true;
            }
        }
        let others: Vec<u32> = (0..self.dests.len() as u32)
            .filter(|&i| !named.get(i as usize).copied().unwrap_or(false))
            .collect();
        others.par_iter().for_each_init(
            || Scratch::new(&self.net),
            |scr, &i| {
                if let Some(&d) = self.dests.get(i as usize) {
                    u.dependencies_over(d, &[], scr);
                }
            },
        );
    }

    /// The check of a step from the destinations it changes (`outs`, in `work`'s order).
    fn summarise(&self, outs: &[DestOut], work: &[(u32, Writes)]) -> StepCheck {
        let forwarding_loop = outs.iter().find_map(|o| o.forwarding_loop.clone());
        let broken = outs.iter().find_map(|o| o.broken.clone());
        let before = self.failing();
        let replaced: u64 = work
            .iter()
            .map(|(i, _)| self.failing.get(*i as usize).copied().unwrap_or(0))
            .sum();
        let after = before - replaced + outs.iter().map(|o| o.failing_after).sum::<u64>();
        let verdict = |bad: bool| {
            if bad {
                Outcome::Violated
            } else {
                Outcome::Proven
            }
        };
        let connected = if forwarding_loop.is_some() && broken.is_none() {
            Outcome::Unknown("not checked to the end: a route loops".to_owned())
        } else {
            verdict(broken.is_some())
        };
        // The outage: every destination out of service as it is now, those the step works
        // out at the worse of the step's two ends.
        let mut outage_routes = 0;
        if self.outage.contains(&true) {
            outage_routes = self.outage_routes();
            for (w, o) in work.iter().zip(outs) {
                let i = w.0 as usize;
                if self.outage.get(i).copied().unwrap_or(false) {
                    let now = self.beyond_start(i, self.failing.get(i).copied().unwrap_or(0));
                    let worst = self.beyond_start(i, o.failing_before.max(o.failing_after));
                    outage_routes = outage_routes - now + worst;
                }
            }
        }
        StepCheck {
            loop_free: verdict(forwarding_loop.is_some()),
            deadlock_free: Outcome::Proven,
            connected,
            isolated: Outcome::Proven,
            breach: None,
            breach_after_plan: false,
            forwarding_loop,
            credit_loop: Vec::new(),
            broken,
            changed_entries: outs.iter().map(|o| o.changed).sum(),
            failing_before: before,
            failing_after: after,
            outage_routes,
            out_of_service: self.outage_count(),
        }
    }

    /// A dependency set holding the multicast dependencies only (empty without multicast).
    fn fresh_with_multicast(&self) -> DepSet {
        let d = DepSet::new(&self.net);
        if let Some(mc) = &self.multicast {
            d.absorb(mc);
        }
        d
    }

    /// The channel edges of `fresh`'s dependencies that the kept set does not have.
    fn new_edges(&self, fresh: &DepSet) -> Vec<(u32, u32)> {
        channels::edges(&self.net, &fresh.each_not_in(&self.net, &self.deps))
    }

    /// The channel graph of `deps` plus `extra` edges.
    fn graph(&self, deps: &DepSet, extra: &[(u32, u32)]) -> Graph {
        let mut edges = channels::edges(&self.net, &deps.each(&self.net));
        edges.extend_from_slice(extra);
        edges.sort_unstable();
        edges.dedup();
        Graph::new(self.net.ports as usize * usize::from(self.net.vls), &edges)
    }

    /// One cycle in each of the first `most` of `g`'s cyclic components `sccs`, as channels.
    fn cycles(&self, g: &Graph, sccs: &[Vec<u32>], most: usize) -> Vec<Vec<Channel>> {
        sccs.iter()
            .take(most)
            .map(|scc| {
                g.cycle_in(scc)
                    .into_iter()
                    .filter_map(|c| crate::explicit::channel(&self.net, c))
                    .collect()
            })
            .collect()
    }

    /// The credit loops the last step refused on its exact check found: one per cyclic
    /// component of its dependency graph, at most [`MAX_CYCLES`] (empty when the last step
    /// was proven, or refused for another reason).
    pub fn last_cycles(&self) -> &[Vec<Channel>] {
        &self.last_cycles
    }

    /// How many channel dependencies lie inside the cyclic components of the last refused
    /// step's exact check (0 when the last step was proven, or refused for another reason):
    /// every credit loop of that step is made of them, so a search that removes a few at a
    /// time can tell how far it is from breaking them all.
    pub fn last_cyclic_dependencies(&self) -> usize {
        self.last_cyclic
    }

    /// One cycle of `g`'s first cyclic component, as channels.
    fn cycle(&self, g: &Graph) -> Vec<Channel> {
        g.cyclic_sccs()
            .first()
            .map(|scc| {
                g.cycle_in(scc)
                    .into_iter()
                    .filter_map(|c| crate::explicit::channel(&self.net, c))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The walker over the current tables, its dependencies going to `deps`.
    fn union<'s, S: Sink>(&'s self, deps: &'s S) -> Union<'s, S> {
        Union {
            net: &self.net,
            outage: &self.outage,
            cur: &self.cur,
            failing: &self.failing,
            sources: &self.sources,
            attach: &self.attach,
            deps,
            starts: &self.starts,
        }
    }

    /// The scope steps are checked for.
    pub fn scope(&self) -> Scope {
        self.scope
    }
}

/// The edges of `g` whose two ends lie in one of its cyclic components `sccs`.
fn cyclic_edges(g: &Graph, sccs: &[Vec<u32>]) -> usize {
    let mut comp = vec![u32::MAX; g.len()];
    for (i, scc) in sccs.iter().enumerate() {
        for &v in scc {
            if let Some(c) = comp.get_mut(v as usize) {
                *c = i as u32;
            }
        }
    }
    (0..g.len() as u32)
        .map(|v| {
            let c = comp.get(v as usize).copied().unwrap_or(u32::MAX);
            if c == u32::MAX {
                return 0;
            }
            g.succ(v)
                .iter()
                .filter(|&&w| comp.get(w as usize) == Some(&c))
                .count()
        })
        .sum()
}

/// A copy of `deps` (a set of atomics is not `Clone`).
fn copied(net: &Net<'_>, deps: &DepSet) -> DepSet {
    let c = DepSet::new(net);
    c.absorb(deps);
    c
}

/// A transition's state at one moment ([`Transition::snapshot`]), to return to without
/// working the start out again ([`Transition::restore`]).
pub struct Snapshot {
    dests: Vec<Dest>,
    cur: Lfts,
    deps: DepSet,
    multicast: Option<DepSet>,
    ranks: Vec<u32>,
    failing: Vec<u64>,
    outage: Vec<bool>,
    start_cycle: Vec<Channel>,
}

/// LFTs held LID-major: one destination's entries on every switch side by side, since a walk
/// toward one destination reads them together (switch-major tables cost a cache miss per hop
/// at 11 664 nodes). A LID no switch has an entry for holds no row.
#[derive(Clone)]
struct Lfts {
    /// Switches (the length of every row).
    switches: usize,
    /// Per LID, the entry of each switch index (`LFT_UNSET`: none), or empty.
    rows: Vec<Vec<u8>>,
}

impl Lfts {
    fn new(switches: usize) -> Lfts {
        Lfts {
            switches,
            rows: Vec::new(),
        }
    }

    /// Switch index `k`'s entry for `lid` (`LFT_UNSET`: none).
    fn get(&self, k: usize, lid: usize) -> u8 {
        self.rows
            .get(lid)
            .and_then(|r| r.get(k))
            .copied()
            .unwrap_or(LFT_UNSET)
    }

    /// Sets switch index `k`'s entry for `lid` (a row made on its first entry).
    fn set(&mut self, k: usize, lid: usize, port: u8) {
        if k >= self.switches {
            return;
        }
        if self.rows.len() <= lid {
            if port == LFT_UNSET {
                return;
            }
            self.rows.resize_with(lid + 1, Vec::new);
        }
        let Some(row) = self.rows.get_mut(lid) else {
            return;
        };
        if row.is_empty() {
            if port == LFT_UNSET {
                return;
            }
            *row = vec![LFT_UNSET; self.switches];
        }
        if let Some(e) = row.get_mut(k) {
            *e = port;
        }
    }
}

/// Checks the step from `before` to `after` (see the module docs) for the pairs of `scope`.
pub fn check_step(
    before: &ValidState,
    after: &ValidState,
    scope: Scope,
) -> Result<StepCheck, TransitionError> {
    comparable(before, after)?;
    let mut t = Transition::new(before, scope);
    Ok(t.step(&changes(before, after)))
}

/// The LFT entries that differ from `before` to `after`.
pub fn changes(before: &ValidState, after: &ValidState) -> Vec<Change> {
    let mut out = Vec::new();
    for (&id, a) in &before.switches {
        let b = after
            .switches
            .get(&id)
            .map_or(&[][..], |t| t.lft.ports.as_slice());
        let a = a.lft.ports.as_slice();
        for lid in 0..a.len().max(b.len()) {
            let (x, y) = (
                a.get(lid).copied().unwrap_or(LFT_UNSET),
                b.get(lid).copied().unwrap_or(LFT_UNSET),
            );
            if x != y {
                out.push(Change {
                    switch: id,
                    lid: Lid(lid as u16),
                    port: y,
                });
            }
        }
    }
    out
}

/// One pass's view: the current tables, the step's writes per destination (in the scratch),
/// where dependencies go.
struct Union<'a, S: Sink = DepSet> {
    net: &'a Net<'a>,
    /// Per destination index, whether it is out of service (its routes may fail).
    outage: &'a [bool],
    cur: &'a Lfts,
    /// Per destination index, its failing routes as `cur` routes it; empty when not known
    /// (a destination with none needs no walk of the routes before the step).
    failing: &'a [u64],
    sources: &'a [Source],
    attach: &'a Attach,
    deps: &'a S,
    starts: &'a [usize],
}

/// Where a walk's dependencies go: a dependency set, or a probe for some of them.
trait Sink: Sync {
    /// Records the dependency `(in port, in VL) → (out port, out VL)` at switch index `k`.
    fn insert(&self, k: u32, i: u8, vin: u8, o: u8, vout: u8);
}

impl Sink for DepSet {
    fn insert(&self, k: u32, i: u8, vin: u8, o: u8, vout: u8) {
        DepSet::insert(self, k, i, vin, o, vout);
    }
}

/// Looks for given dependencies: which of them a walk creates.
struct Probe<'w> {
    /// The dependencies looked for, sorted, each as `(switch index, in port, in VL, out
    /// port, out VL)`.
    wanted: &'w [(u32, u8, u8, u8, u8)],
    /// Per wanted dependency, whether the walk created it.
    hit: Vec<std::sync::atomic::AtomicBool>,
}

impl Sink for Probe<'_> {
    fn insert(&self, k: u32, i: u8, vin: u8, o: u8, vout: u8) {
        if let Ok(at) = self.wanted.binary_search(&(k, i, vin, o, vout)) {
            if let Some(h) = self.hit.get(at) {
                h.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// A destination's writes in one step: per write, the switch index and the port packed in
/// four bytes ([`write_of`]; a step of an 11 664-node engine change holds sixteen million).
type Writes = Vec<u32>;

/// A write packed for [`Writes`]: switch index `k` (below 2²⁴: switches are far fewer) and
/// `port`.
fn packed(k: u32, port: u8) -> u32 {
    k << 8 | u32::from(port)
}

/// The (switch index, port) of a packed write.
fn write_of(w: u32) -> (u32, u8) {
    (w >> 8, (w & 0xFF) as u8)
}

/// Lays a destination's `writes` over the current entries (per switch index, [`SAME`] where
/// the step leaves the entry).
fn set_over(over: &mut [u16], writes: &[u32]) {
    for (k, port) in writes.iter().map(|&w| write_of(w)) {
        if let Some(o) = over.get_mut(k as usize) {
            *o = u16::from(port);
        }
    }
}

/// Takes `writes` off the overlay again ([`set_over`]), for the next destination.
fn clear_over(over: &mut [u16], writes: &[u32]) {
    for (k, _) in writes.iter().map(|&w| write_of(w)) {
        if let Some(o) = over.get_mut(k as usize) {
            *o = SAME;
        }
    }
}

/// A write of a LID no destination owns: (switch index, LID, port).
type Unowned = (usize, Lid, u8);

/// DFS colours.
const WHITE: u8 = 0;
const GREY: u8 = 1;
const BLACK: u8 = 2;

impl<S: Sink> Union<'_, S> {
    /// The entries of switch index `k` for `lid`: before and after the step (`None`: unset).
    fn entries(&self, k: usize, lid: Lid, over: &[u16]) -> (Option<u8>, Option<u8>) {
        let before = Some(self.cur.get(k, usize::from(lid.0))).filter(|&p| p != LFT_UNSET);
        let after = match over.get(k).copied() {
            Some(v) if v != SAME => (v as u8 != LFT_UNSET).then_some(v as u8),
            _ => before,
        };
        (before, after)
    }

    /// The one or two (entry, step) options of switch index `k` toward `d`.
    fn options(&self, k: usize, d: Dest, over: &[u16]) -> ([(Entry, Step); 2], usize) {
        let x = self.net.switches.get(k).copied().unwrap_or(u32::MAX);
        let (b, a) = self.entries(k, d.lid, over);
        let sb = self.net.entry_step(x, b, d);
        if b == a {
            return ([(Entry::Unchanged, sb), (Entry::Unchanged, sb)], 1);
        }
        let sa = self.net.entry_step(x, a, d);
        ([(Entry::Before, sb), (Entry::After, sa)], 2)
    }

    /// Whether switch index `k`'s route toward `d` arrives with the entries before the step
    /// (`after` false) or after it, memoised in `ok` ([`forward::memo_walk`]: a loop, or a
    /// next hop that is no switch, fails).
    fn arrives(
        &self,
        k: usize,
        d: Dest,
        after: bool,
        over: &[u16],
        ok: &mut [Mark<bool>],
        path: &mut Vec<u32>,
    ) -> bool {
        forward::memo_walk(
            ok,
            path,
            k,
            false,
            |a| a,
            |at| {
                let x = self.net.switches.get(at).copied().unwrap_or(u32::MAX);
                let (b, a) = self.entries(at, d.lid, over);
                match self.net.entry_step(x, if after { a } else { b }, d) {
                    Step::Arrive | Step::Out { last: true, .. } => Next::End(true),
                    Step::Out { to, .. } => Next::To(self.net.switch_of(to) as usize),
                    Step::Fail(_) => Next::End(false),
                }
            },
        )
    }

    /// Everything about destination `d` (index `i`) with the step's writes `writes` (switch
    /// index, port): its loops, broken routes (none asked of a destination out of service),
    /// failing routes and dependencies.
    fn destination(&self, i: usize, d: Dest, writes: &[u32], scr: &mut Scratch) -> DestOut {
        let may_fail = self.outage.get(i).copied().unwrap_or(false);
        let mut out = DestOut::default();
        let mut over = std::mem::take(&mut scr.over);
        set_over(&mut over, writes);
        for (k, _) in writes.iter().map(|&w| write_of(w)) {
            let (b, a) = self.entries(k as usize, d.lid, &over);
            if b != a {
                out.changed += 1;
            }
        }
        let changed = out.changed > 0;
        for ok in &mut scr.ok {
            ok.fill(Mark::Unknown);
        }
        // Loops: a DFS over the union from every start (a destination the step leaves
        // alone forwards as before).
        if changed {
            scr.mark.iter_mut().for_each(|m| *m = WHITE);
            for &s in self.starts {
                out.forwarding_loop = self.find_loop(s, d, &over, scr);
                if out.forwarding_loop.is_some() {
                    break;
                }
            }
        }
        // Routes that arrive before must arrive in every mix: everything the union reaches
        // from their start switch must arrive or go on.
        scr.sure.fill(WHITE);
        // No route toward `d` fails now: every start's arrives before the step, unwalked.
        let all_before = self.failing.get(i) == Some(&0);
        for &s in self.starts {
            let count = self.attach.by_switch.get(s).map_or(0, |v| v.len() as u64);
            let [ok_before, ok_after] = &mut scr.ok;
            let works = all_before || self.arrives(s, d, false, &over, ok_before, &mut scr.path);
            // Every mix's route arriving, the route after the step (one of them) does.
            let every_mix = changed
                && out.forwarding_loop.is_none()
                && self.all_arrive(s, d, &over, &mut scr.sure, &mut scr.stack);
            let works_after = if !changed {
                works
            } else {
                every_mix || self.arrives(s, d, true, &over, ok_after, &mut scr.path)
            };
            if !works {
                out.failing_before += count;
            }
            if !works_after {
                out.failing_after += count;
            }
            if works
                && changed
                && !may_fail
                && out.broken.is_none()
                && out.forwarding_loop.is_none()
                && !every_mix
            {
                out.broken = self.find_break(s, d, &over);
            }
        }
        if out.forwarding_loop.is_none() {
            self.dependencies(d, &over, scr);
        }
        clear_over(&mut over, writes);
        scr.over = over;
        out
    }

    /// A cycle in the union reachable from switch index `s`, as hops.
    fn find_loop(
        &self,
        s: usize,
        d: Dest,
        over: &[u16],
        scr: &mut Scratch,
    ) -> Option<ForwardingLoop> {
        if scr.mark.get(s).copied() != Some(WHITE) {
            return None;
        }
        // Stack of (switch index, next option to try).
        scr.stack.clear();
        scr.stack.push((s as u32, 0));
        if let Some(m) = scr.mark.get_mut(s) {
            *m = GREY;
        }
        while let Some(&(k, i)) = scr.stack.last() {
            let (opts, count) = self.options(k as usize, d, over);
            if usize::from(i) >= count {
                scr.stack.pop();
                if let Some(m) = scr.mark.get_mut(k as usize) {
                    *m = BLACK;
                }
                continue;
            }
            if let Some(top) = scr.stack.last_mut() {
                top.1 += 1;
            }
            let Some(&(
                _,
                Step::Out {
                    to, last: false, ..
                },
            )) = opts.get(usize::from(i))
            else {
                continue;
            };
            let next = self.net.switch_of(to) as usize;
            match scr.mark.get(next).copied() {
                Some(WHITE) => {
                    if let Some(m) = scr.mark.get_mut(next) {
                        *m = GREY;
                    }
                    scr.stack.push((next as u32, 0));
                }
                Some(GREY) => return Some(self.loop_witness(next, d, over, &scr.stack)),
                _ => {}
            }
        }
        None
    }

    /// The loop closed back to `first` on the DFS `stack` (each entry's option already
    /// advanced past the one taken).
    fn loop_witness(
        &self,
        first: usize,
        d: Dest,
        over: &[u16],
        stack: &[(u32, u8)],
    ) -> ForwardingLoop {
        let from = stack
            .iter()
            .position(|&(k, _)| k as usize == first)
            .unwrap_or(0);
        let hops = stack
            .get(from..)
            .unwrap_or(&[])
            .iter()
            .map(|&(k, i)| {
                let (opts, _) = self.options(k as usize, d, over);
                let (entry, step) = opts
                    .get(usize::from(i.saturating_sub(1)))
                    .copied()
                    .unwrap_or((Entry::Unchanged, Step::Arrive));
                let x = self.net.switches.get(k as usize).copied().unwrap_or(0);
                LoopHop {
                    node: self.net.node_ref(x),
                    out_port: match step {
                        Step::Out { out, .. } => out,
                        _ => 0,
                    },
                    entry,
                }
            })
            .collect();
        ForwardingLoop {
            dlid: d.lid,
            dst: self.net.endpoint(d.owner.0, d.owner.1),
            hops,
        }
    }

    /// Whether every route of every mix from switch index `s` toward `d` arrives (the union
    /// from `s` is loop-free here), memoised in `sure` across starts: `BLACK` arrives, `GREY`
    /// reaches a failure, `WHITE` not known yet; `stack` is scratch. Only where this fails is
    /// the witness looked for ([`Union::find_break`]).
    fn all_arrive(
        &self,
        s: usize,
        d: Dest,
        over: &[u16],
        sure: &mut [u8],
        stack: &mut Vec<(u32, u8)>,
    ) -> bool {
        // `IN_WORK`: on the stack.
        const IN_WORK: u8 = 3;
        match sure.get(s).copied() {
            Some(BLACK) => return true,
            Some(WHITE) => {}
            _ => return false,
        }
        let fail = |stack: &[(u32, u8)], sure: &mut [u8]| {
            for &(k, _) in stack {
                if let Some(m) = sure.get_mut(k as usize) {
                    *m = GREY;
                }
            }
        };
        stack.clear();
        stack.push((s as u32, 0));
        if let Some(m) = sure.get_mut(s) {
            *m = IN_WORK;
        }
        while let Some(&(k, i)) = stack.last() {
            let (opts, count) = self.options(k as usize, d, over);
            if usize::from(i) >= count {
                stack.pop();
                if let Some(m) = sure.get_mut(k as usize) {
                    *m = BLACK;
                }
                continue;
            }
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            match opts.get(usize::from(i)).map(|o| o.1) {
                Some(Step::Arrive | Step::Out { last: true, .. }) => {}
                Some(Step::Out { to, .. }) => {
                    let next = self.net.switch_of(to) as usize;
                    match sure.get(next).copied() {
                        Some(WHITE) => {
                            if let Some(m) = sure.get_mut(next) {
                                *m = IN_WORK;
                            }
                            stack.push((next as u32, 0));
                        }
                        Some(BLACK) => {}
                        // A failure below, or a loop (not here: the union is loop-free).
                        _ => {
                            fail(stack, sure);
                            return false;
                        }
                    }
                }
                Some(Step::Fail(_)) | None => {
                    fail(stack, sure);
                    return false;
                }
            }
        }
        true
    }

    /// A failure the union reaches from switch index `s` (whose route arrives before).
    fn find_break(&self, s: usize, d: Dest, over: &[u16]) -> Option<BrokenRoute> {
        let mut seen = vec![s];
        let mut todo = vec![s];
        while let Some(k) = todo.pop() {
            let (opts, count) = self.options(k, d, over);
            for &(entry, step) in opts.iter().take(count) {
                match step {
                    Step::Arrive | Step::Out { last: true, .. } => {}
                    Step::Out { to, .. } => {
                        let next = self.net.switch_of(to) as usize;
                        if !seen.contains(&next) {
                            seen.push(next);
                            todo.push(next);
                        }
                    }
                    Step::Fail(reason) => {
                        let node = |k: usize| {
                            self.net
                                .node_ref(self.net.switches.get(k).copied().unwrap_or(0))
                        };
                        return Some(BrokenRoute {
                            from: node(s),
                            dlid: d.lid,
                            dst: self.net.endpoint(d.owner.0, d.owner.1),
                            at: node(k),
                            entry,
                            reason,
                        });
                    }
                }
            }
        }
        None
    }

    /// [`Union::dependencies`] toward `d` with the step's writes `writes` (switch index,
    /// port) over the current entries.
    fn dependencies_over(&self, d: Dest, writes: &[u32], scr: &mut Scratch) {
        let mut over = std::mem::take(&mut scr.over);
        set_over(&mut over, writes);
        self.dependencies(d, &over, scr);
        clear_over(&mut over, writes);
        scr.over = over;
    }

    /// Records every dependency any route toward `d` creates in any mix (the union is
    /// loop-free here).
    fn dependencies(&self, d: Dest, over: &[u16], scr: &mut Scratch) {
        let net = self.net;
        for &t in &scr.touched {
            if let Some(v) = scr.seen.get_mut(t as usize) {
                *v = 0;
            }
        }
        scr.touched.clear();
        scr.states.clear();
        let uniform = self
            .attach
            .uniform
            .then(|| net.st.path_sl.for_destination(d.lid).0);
        // The first hop of the sources at each start switch: their dependencies, then the
        // states they leave in. Where the sources of a switch share their SLs, what they do
        // through one output port does not depend on the destination: worked out once per
        // (port, SLs) and kept (`scr.group`).
        let mut leave: Vec<(u8, u8)> = Vec::new();
        for &k in self.starts {
            let Some(list) = self.attach.by_switch.get(k) else {
                continue;
            };
            let x = net.switches.get(k).copied().unwrap_or(u32::MAX);
            let shared =
                uniform.or_else(|| self.attach.grouped.then(|| net.group_sls(k as u32, d.lid)));
            let (opts, count) = self.options(k, d, over);
            for (out, to, to_port, last) in leaving(&opts, count) {
                leave.clear();
                let memo = shared.and_then(|sls| {
                    let slot = net.dirport(x, out)? as usize;
                    let (done, kept) = scr.group.get_mut(slot)?;
                    if *done & sls != sls {
                        let mut fresh = Vec::new();
                        for &(in_port, j) in list {
                            self.first_hop(x, k, in_port, j, sls & !*done, out, &mut fresh);
                        }
                        kept.extend(fresh);
                        kept.sort_unstable();
                        kept.dedup();
                        *done |= sls;
                    }
                    Some((slot, sls))
                });
                match memo {
                    Some((slot, sls)) => {
                        if let Some((_, kept)) = scr.group.get(slot) {
                            leave.extend(kept.iter().filter(|&&(sl, _)| sls & (1 << sl) != 0));
                        }
                    }
                    None => {
                        for &(in_port, j) in list {
                            let sls = match (shared, self.sources.get(j as usize)) {
                                (Some(s), _) => s,
                                (None, Some(src)) => net.path_sls(src.node, src.port, d.lid).0,
                                (None, None) => continue,
                            };
                            self.first_hop(x, k, in_port, j, sls, out, &mut leave);
                        }
                        leave.sort_unstable();
                        leave.dedup();
                    }
                }
                if last {
                    continue;
                }
                let next = net.switch_of(to);
                for &(sl, vout) in &leave {
                    if first_visit(net, scr, next, to_port, sl, vout) {
                        scr.states.push((next, to_port, sl, vout));
                    }
                }
            }
        }
        while let Some((k, i, sl, vin)) = scr.states.pop() {
            let x = net.switches.get(k as usize).copied().unwrap_or(u32::MAX);
            let (opts, count) = self.options(k as usize, d, over);
            for (out, to, to_port, last) in leaving(&opts, count) {
                let Ok(vout) = net.switch_vl(x, i, out, sl) else {
                    continue;
                };
                if i != 0 {
                    self.deps.insert(k, i, vin, out, vout);
                }
                if !last {
                    let next = net.switch_of(to);
                    if first_visit(net, scr, next, to_port, sl, vout) {
                        scr.states.push((next, to_port, sl, vout));
                    }
                }
            }
        }
    }

    /// Source `j`, entering switch `x` (index `k`) on `in_port` (0: the switch's own
    /// traffic), sends SLs `sls` out of `out`: its dependencies recorded, the (SL, VL) it
    /// leaves on pushed to `leave`.
    #[allow(clippy::too_many_arguments)]
    fn first_hop(
        &self,
        x: u32,
        k: usize,
        in_port: u8,
        j: u32,
        sls: u16,
        out: u8,
        leave: &mut Vec<(u8, u8)>,
    ) {
        let net = self.net;
        let Some(src) = self.sources.get(j as usize) else {
            return;
        };
        for sl in 0..16u8 {
            if sls & (1 << sl) == 0 {
                continue;
            }
            let vin = if in_port == 0 {
                0
            } else {
                let vl = self
                    .attach
                    .inj
                    .get(j as usize)
                    .and_then(|t| t.get(usize::from(sl)))
                    .copied()
                    .unwrap_or(0);
                if net.vl_ok(src.node, src.port, vl).is_err() {
                    continue;
                }
                vl
            };
            let Ok(vout) = net.switch_vl(x, in_port, out, sl) else {
                continue;
            };
            if in_port != 0 {
                self.deps.insert(k as u32, in_port, vin, out, vout);
            }
            leave.push((sl, vout));
        }
    }
}

/// The options that leave the switch: (out port, next node, its port, whether it is the last
/// hop).
fn leaving(
    opts: &[(Entry, Step); 2],
    count: usize,
) -> impl Iterator<Item = (u8, u32, u8, bool)> + '_ {
    opts.iter().take(count).filter_map(|&(_, step)| match step {
        Step::Out {
            out,
            to,
            to_port,
            last,
        } => Some((out, to, to_port, last)),
        _ => None,
    })
}

/// Marks the route state (switch index `k`, input port, SL, VL) seen; whether it is new.
fn first_visit(net: &Net<'_>, scr: &mut Scratch, k: u32, port: u8, sl: u8, vl: u8) -> bool {
    let x = net.switches.get(k as usize).copied().unwrap_or(u32::MAX);
    // Port 0 (a switch's own traffic) never re-enters; ports from 1 have their slot.
    let Some(slot) = net.dirport(x, port) else {
        return true;
    };
    let i = slot as usize * 16 + usize::from(sl & 15);
    let Some(v) = scr.seen.get_mut(i) else {
        return true;
    };
    let bit = 1u16 << (vl & 15);
    if *v & bit != 0 {
        return false;
    }
    if *v == 0 {
        scr.touched.push(i as u32);
    }
    *v |= bit;
    true
}
