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

mod outage;
mod outcome;
mod union;

use crate::channels::{self, DepSet, Graph};
use crate::net::{Attach, Dest, Net, PortLink, Source};
use crate::report::{Channel, Outcome};
use crate::Scope;
pub use outcome::{
    BrokenRoute, Change, Entry, ForwardingLoop, LoopHop, StepCheck, TransitionError,
};
use rayon::prelude::*;
use union::{packed, write_of, DestOut, Probe, Scratch, Sink, Union, Unowned, Writes};
use weft_fabric::{Lid, NodeId, ValidState, LFT_UNSET};

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

/// An entry of the per-destination overlay meaning "the step does not change it".
const SAME: u16 = u16::MAX;
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
        Transition::new_with(start, scope, true)
    }

    /// [`Transition::new`], with the row pass allowed or not (the tests compare the two).
    fn new_with(start: &'a ValidState, scope: Scope, rows: bool) -> Transition<'a> {
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
        t.outage = vec![false; t.dests.len()];
        if let Some((deps, ranks, failing)) = rows.then(|| t.start_by_rows()).flatten() {
            t.deps = deps;
            t.ranks = ranks;
            t.failing = failing;
        } else {
            let outs = t.run(&t.deps, &[], true);
            t.failing = outs.iter().map(|o| o.failing_before).collect();
            let graph = t.graph(&t.deps, &[]);
            match graph.topo_ranks() {
                Some(r) => t.ranks = r,
                None => t.start_cycle = t.cycle(&graph),
            }
        }
        t.failing_at_start = t.failing.clone();
        t
    }

    /// The start's dependencies, their ranks and the failing routes per destination, by the
    /// explicit engine's row pass ([`crate::explicit::row_pass`]), the destinations it leaves
    /// walked one by one: `None` when it does not apply, or when the dependencies have a
    /// cycle (a route that loops, or a credit loop: the walk of every destination tells).
    fn start_by_rows(&self) -> Option<(DepSet, Vec<u32>, Vec<u64>)> {
        let deps = self.fresh_with_multicast();
        let dirty = crate::explicit::row_pass(&self.net, &self.dests, &self.attach, &deps)?;
        // The union walk sends from every source at a switch, the destination's owner too:
        // its first hop turns back out of the port it came in on. Kept as well, so that the
        // start's set is the walked one (a step's new dependencies are those it adds).
        for (d, _) in self.dests.iter().zip(&dirty).filter(|(_, &dirty)| !dirty) {
            if self.net.is_switch(d.owner.0) {
                continue;
            }
            if let Some(PortLink::Up { node, port }) = self.net.port_link(d.owner.0, d.owner.1) {
                if self.net.is_switch(node) {
                    deps.insert(self.net.switch_of(node), port, 0, port, 0);
                }
            }
        }
        let work: Vec<(u32, Writes)> = dirty
            .iter()
            .enumerate()
            .filter(|(_, &d)| d)
            .map(|(i, _)| (i as u32, Vec::new()))
            .collect();
        let outs = self.run(&deps, &work, false);
        let ranks = self.graph(&deps, &[]).topo_ranks()?;
        let mut failing = vec![0; self.dests.len()];
        for ((i, _), o) in work.iter().zip(&outs) {
            if let Some(f) = failing.get_mut(*i as usize) {
                *f = o.failing_before;
            }
        }
        Some((deps, ranks, failing))
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
        if extra.is_empty() {
            return deps.graph(&self.net);
        }
        let mut edges = deps.edges(&self.net);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Rng};

    /// The start worked out by the row pass (the destinations it leaves walked one by one)
    /// is the start walked destination by destination: the same failing routes per
    /// destination, the same start cycle, and a step on it checked alike; on random small
    /// fabrics broken in 0 to 3 places, in both scopes.
    #[test]
    fn start_by_rows_is_the_walked_start() {
        let mut rng = Rng(0x7a41);
        // [read by rows with every route arriving, with some failing]
        let mut mix = [0usize; 2];
        for n in 0..300 {
            let breaks = rng.below(4) as usize;
            let st = testkit::valid(testkit::broken_state(&mut rng, breaks));
            let scope = if n % 4 == 0 {
                Scope::HcaToHca
            } else {
                Scope::All
            };
            let mut rows = Transition::new_with(&st, scope, true);
            let mut walked = Transition::new_with(&st, scope, false);
            assert_eq!(rows.failing, walked.failing, "case {n}");
            assert_eq!(
                rows.deps.each(&rows.net),
                walked.deps.each(&walked.net),
                "case {n}"
            );
            assert_eq!(rows.start_cycle, walked.start_cycle, "case {n}");
            if rows.start_by_rows().is_some() {
                mix[usize::from(rows.failing() > 0)] += 1;
            }
            // A step that sets one entry of one switch to another of its ports.
            let switches: Vec<NodeId> = st.switches.keys().copied().collect();
            let Some(&x) = switches.get(rng.below(switches.len().max(1) as u64) as usize) else {
                continue;
            };
            let lid = rng.below(u64::from(st.lids.max_lid(&st.fabric)) + 1) as u16;
            let port = rng.below(5) as u8;
            let change = Change {
                switch: x,
                lid: Lid(lid),
                port,
            };
            let a = rows.step(&[change]);
            let b = walked.step(&[change]);
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "case {n}");
        }
        assert!(mix.iter().all(|&c| c >= 20), "[arriving, failing] {mix:?}");
    }
}
