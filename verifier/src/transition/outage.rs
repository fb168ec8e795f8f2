//! Break-before-make bookkeeping of a [`Transition`]: destinations out of service, the routes
//! and sources an outage costs, and which destinations create a credit loop's dependencies.

use super::{
    union::{Scratch, Writes},
    Change, Dep, Probe, Transition,
};
use crate::report::Channel;
use rayon::prelude::*;
use weft_fabric::forward::Mark;
use weft_fabric::{Lid, NodeId};

impl Transition<'_> {
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
}
