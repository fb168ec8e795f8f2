//! The order of LFT writes: a switch changes a destination's entry only after its new next
//! hop has changed its own (when it changes at all), so the part of a route already moved is
//! the new route to the end. Entries are written as 64-entry blocks; a block whose entries
//! need conflicting places in the order (one entry before another switch's block, another
//! after it) is split into writes per place.

use crate::Rerouted;
use rayon::prelude::*;
use std::collections::BTreeSet;
use weft_fabric::forward::{self, Dest, Mark, Next, Routes};
use weft_fabric::graph::{self, Ready};
use weft_fabric::{Guid, NodeId, PortNum, PortRef, ValidState, LFT_UNSET};
use weft_formats::plan::{SmpWrite, LFT_BLOCK};

fn entry(t: &[u8], lid: usize) -> u8 {
    t.get(lid).copied().unwrap_or(LFT_UNSET)
}

/// The switch that switch `x`'s LFT entry `port` leads to on `st`'s fabric over a live
/// cable (the model's [`forward::leave`]), if any: none for an unset entry, port 0, or a
/// port that is missing, unwired, down or cabled to an end node.
fn next_switch(st: &ValidState, x: NodeId, port: u8) -> Option<NodeId> {
    if port == LFT_UNSET {
        return None;
    }
    let hop = forward::leave(
        &st.fabric,
        PortRef {
            node: x,
            port: PortNum(port),
        },
    )
    .ok()?;
    st.fabric
        .node(hop.to.node)
        .is_switch()
        .then_some(hop.to.node)
}

/// Every entry that differs from `start` to `new`, sorted by (switch, LID). A switch that is
/// down where the steps run, or has no tables in the end state (down there), is not written.
pub(crate) fn changed(start: &ValidState, new: &ValidState) -> Vec<(NodeId, u16)> {
    let live = |x: NodeId| !start.fabric.node(x).down && new.switches.contains_key(&x);
    let differ = |x: NodeId| {
        let (a, b) = (table(start, x), table(new, x));
        (0..a.len().max(b.len())).filter(move |&lid| entry(a, lid) != entry(b, lid))
    };
    // Counted first: at 11 664 nodes an engine change is sixteen million entries.
    let n: usize = start
        .switches
        .keys()
        .filter(|&&x| live(x))
        .map(|&x| differ(x).count())
        .sum();
    let mut changed: Vec<(NodeId, u16)> = Vec::with_capacity(n);
    for &x in start.switches.keys().filter(|&&x| live(x)) {
        changed.extend(differ(x).map(|lid| (x, lid as u16)));
    }
    changed
}

/// `new`'s tables by node index (empty for a node without one), for [`Tables::entry`].
pub(crate) struct Tables<'a>(Vec<&'a [u8]>);

impl<'a> Tables<'a> {
    pub(crate) fn of(new: &'a ValidState) -> Tables<'a> {
        Tables(
            (0..new.fabric.nodes().len() as u32)
                .map(|i| table(new, NodeId(i)))
                .collect(),
        )
    }

    /// Switch `x`'s entry for `lid`.
    pub(crate) fn entry(&self, x: NodeId, lid: u16) -> u8 {
        self.0
            .get(x.index())
            .map_or(LFT_UNSET, |t| entry(t, usize::from(lid)))
    }
}

/// A (switch, block) and the LIDs of it a write sets.
type BlockLids = ((NodeId, u16), Vec<u16>);

/// Adds `lid` of switch `x` to `blocks`, whose last entry is its block when the LIDs come
/// sorted by switch and LID.
fn push_lid(blocks: &mut Vec<BlockLids>, x: NodeId, lid: u16) {
    let key = (x, lid / LFT_BLOCK as u16);
    match blocks.last_mut() {
        Some((k, lids)) if *k == key => lids.push(lid),
        _ => blocks.push((key, vec![lid])),
    }
}

/// Whether every entry of `changed` is unset in `start` (the writes only fill empty entries).
pub(crate) fn fills_only(start: &ValidState, changed: &[(NodeId, u16)]) -> bool {
    changed
        .iter()
        .all(|&(x, lid)| entry(table(start, x), usize::from(lid)) == LFT_UNSET)
}

/// The tables as the writes so far leave them, per switch (by node index); a switch not
/// written yet is as the start state holds it.
#[derive(Clone, Default)]
pub(crate) struct Shadow(Vec<Option<Vec<u8>>>);

impl Shadow {
    pub(crate) fn new() -> Shadow {
        Shadow::default()
    }

    /// Block `b` of switch `x` as the writes so far leave it.
    fn block(&self, start: &ValidState, x: NodeId, b: u16) -> [u8; LFT_BLOCK] {
        let t = match self.0.get(x.index()) {
            Some(Some(t)) => t.as_slice(),
            _ => table(start, x),
        };
        let mut blk = [LFT_UNSET; LFT_BLOCK];
        for (i, slot) in blk.iter_mut().enumerate() {
            *slot = entry(t, usize::from(b) * LFT_BLOCK + i);
        }
        blk
    }

    /// Sets block `b` of switch `x`.
    fn set_block(&mut self, start: &ValidState, x: NodeId, b: u16, blk: &[u8; LFT_BLOCK]) {
        let i = x.index();
        if self.0.len() <= i {
            self.0.resize(i + 1, None);
        }
        let Some(slot) = self.0.get_mut(i) else {
            return;
        };
        let t = slot.get_or_insert_with(|| table(start, x).to_vec());
        let at = usize::from(b) * LFT_BLOCK;
        if t.len() < at + LFT_BLOCK {
            t.resize(at + LFT_BLOCK, LFT_UNSET);
        }
        if let Some(dst) = t.get_mut(at..at + LFT_BLOCK) {
            dst.copy_from_slice(blk);
        }
    }

    /// Switch `x`'s entry for `lid` as the writes so far leave it.
    pub(crate) fn entry(&self, start: &ValidState, x: NodeId, lid: u16) -> u8 {
        match self.0.get(x.index()) {
            Some(Some(t)) => entry(t, usize::from(lid)),
            _ => entry(table(start, x), usize::from(lid)),
        }
    }

    /// Takes LFT `writes` (of `start`'s switches) as landed.
    pub(crate) fn land(&mut self, start: &ValidState, writes: &[SmpWrite]) {
        for (g, b, _, new) in writes.iter().filter_map(lft_block) {
            if let Some(x) = start.fabric.find_guid(g) {
                self.set_block(start, x, b, &new);
            }
        }
    }

    /// One write per block that sets `entries` (sorted by switch and LID) to `target`'s,
    /// the blocks as the writes so far leave them (blocks that would not change are not
    /// written).
    pub(crate) fn write_all(
        &mut self,
        start: &ValidState,
        entries: impl IntoIterator<Item = (NodeId, u16)>,
        target: &dyn Fn(NodeId, u16) -> u8,
    ) -> Vec<SmpWrite> {
        // `entries` is sorted: each block's LIDs are consecutive.
        let mut by_block: Vec<BlockLids> = Vec::new();
        for (x, lid) in entries {
            push_lid(&mut by_block, x, lid);
        }
        self.write_blocks(start, by_block, target)
    }

    fn write_blocks(
        &mut self,
        start: &ValidState,
        by_block: Vec<BlockLids>,
        target: &dyn Fn(NodeId, u16) -> u8,
    ) -> Vec<SmpWrite> {
        let mut writes = Vec::with_capacity(by_block.len());
        for ((x, b), lids) in by_block {
            let before = self.block(start, x, b);
            let mut now = before;
            for lid in lids {
                if let Some(slot) = now.get_mut(usize::from(lid) % LFT_BLOCK) {
                    *slot = target(x, lid);
                }
            }
            if now != before {
                self.set_block(start, x, b, &now);
                writes.push(SmpWrite::Lft {
                    switch: start.fabric.node(x).guid(),
                    block: b,
                    old: before,
                    new: now,
                });
            }
        }
        writes
    }
}

/// A switch's LFT in `st` (empty without one).
fn table(st: &ValidState, x: NodeId) -> &[u8] {
    st.switches
        .get(&x)
        .map_or(&[][..], |t| t.lft.ports.as_slice())
}

/// The writes that change the entries `changed` (sorted by switch and LID) of `start`'s
/// tables (as `shadow` leaves their blocks) to `target`'s, in stages: an entry after its new
/// next switch's (when that changes too), as 64-entry blocks — a block whose entries need
/// conflicting places is split into writes per place. `shadow` is left as the writes leave
/// the blocks.
pub(crate) fn staged(
    start: &ValidState,
    changed: &[(NodeId, u16)],
    target: &dyn Fn(NodeId, u16) -> u8,
    shadow: &mut Shadow,
) -> Vec<Vec<SmpWrite>> {
    // Per switch (by node index), its entries' range in `changed` (sorted by switch, LID),
    // and each port's next switch (worked out once per switch).
    let nodes = start.fabric.nodes().len();
    let mut range: Vec<(usize, usize)> = vec![(0, 0); nodes];
    let mut hops: Vec<Vec<Option<NodeId>>> = vec![Vec::new(); nodes];
    let mut at = 0;
    for run in changed.chunk_by(|a, b| a.0 == b.0) {
        if let Some(&(x, _)) = run.first() {
            if let Some(r) = range.get_mut(x.index()) {
                *r = (at, at + run.len());
            }
        }
        at += run.len();
    }
    let mut next_of = |x: NodeId, port: u8| -> Option<NodeId> {
        let list = hops.get_mut(x.index())?;
        if list.is_empty() {
            let ports = start.fabric.node(x).spec.port_count;
            *list = (0..=ports).map(|p| next_switch(start, x, p)).collect();
        }
        list.get(usize::from(port)).copied().flatten()
    };
    let index = |y: NodeId, lid: u16| {
        let &(a, b) = range.get(y.index())?;
        let run = changed.get(a..b)?;
        run.binary_search_by_key(&lid, |e| e.1).ok().map(|i| a + i)
    };
    // Each changed entry's parent: the same LID's entry at its new next switch, when that
    // changes too (`u32::MAX`: none; four bytes, for sixteen million entries).
    let parent: Vec<u32> = changed
        .iter()
        .map(|&(x, lid)| {
            next_of(x, target(x, lid))
                .and_then(|y| index(y, lid))
                .map_or(u32::MAX, |i| i as u32)
        })
        .collect();
    // Items: first one per (switch, block); the entries of items on a cycle each their own.
    let mut split = vec![false; changed.len()];
    let stage_of = loop {
        match longest_paths(changed, &split, &parent) {
            Ok(stage) => break stage,
            Err(cyclic) => {
                for e in cyclic {
                    if let Some(s) = split.get_mut(e) {
                        *s = true;
                    }
                }
            }
        }
    };
    // Writes: per stage, per (switch, block) in order, the LIDs it sets.
    let mut by_stage: Vec<Vec<BlockLids>> = Vec::new();
    for (e, &(x, lid)) in changed.iter().enumerate() {
        let s = stage_of.get(e).copied().unwrap_or(0) as usize;
        if by_stage.len() <= s {
            by_stage.resize_with(s + 1, Vec::new);
        }
        if let Some(blocks) = by_stage.get_mut(s) {
            push_lid(blocks, x, lid);
        }
    }
    by_stage
        .into_iter()
        .map(|blocks| shadow.write_blocks(start, blocks, target))
        .filter(|w| !w.is_empty())
        .collect()
}

/// The longest chain of parents above each entry's item (its stage), or the entries whose
/// items are on a cycle. An item is a (switch, block) of `changed` (sorted by switch and
/// LID), or one entry alone where `split`.
fn longest_paths(
    changed: &[(NodeId, u16)],
    split: &[bool],
    parent: &[u32],
) -> Result<Vec<u32>, Vec<usize>> {
    // Item ids in entry order: an entry not split shares its (switch, block)'s.
    let mut item: Vec<u32> = Vec::with_capacity(changed.len());
    let mut n = 0u32;
    let mut last: Option<((NodeId, u16), u32)> = None;
    for (e, &(x, lid)) in changed.iter().enumerate() {
        let key = (x, lid / LFT_BLOCK as u16);
        let id = if split.get(e).copied().unwrap_or(false) {
            n += 1;
            n - 1
        } else {
            match last {
                Some((k, id)) if k == key => id,
                _ => {
                    n += 1;
                    last = Some((key, n - 1));
                    n - 1
                }
            }
        };
        item.push(id);
    }
    let n = n as usize;
    // Consecutive entries of a block mostly share their parent's item: those repeats are
    // left out before sorting.
    let mut edges: Vec<(u32, u32)> = Vec::new();
    for (&p, &b) in parent.iter().zip(&item) {
        let Some(p) = item.get(p as usize).copied() else {
            continue;
        };
        if p != b && edges.last() != Some(&(p, b)) {
            edges.push((p, b));
        }
    }
    edges.sort_unstable();
    edges.dedup();
    let g = graph::Csr::new(n, &edges);
    let next = |v: u32| g.succ(v).iter().copied();
    let kahn = graph::kahn(n, next, Ready::Lifo);
    if !kahn.is_acyclic() {
        return Err(item
            .iter()
            .enumerate()
            .filter(|&(_, &i)| kahn.waiting.get(i as usize).copied().unwrap_or(0) > 0)
            .map(|(e, _)| e)
            .collect());
    }
    // Each item's stage: one past its latest parent's, in topological order.
    let mut stage = vec![0u32; n];
    for &a in &kahn.order {
        let sa = stage.get(a as usize).copied().unwrap_or(0);
        for b in next(a) {
            if let Some(sb) = stage.get_mut(b as usize) {
                *sb = (*sb).max(sa + 1);
            }
        }
    }
    Ok(item
        .iter()
        .map(|&i| stage.get(i as usize).copied().unwrap_or(0))
        .collect())
}

/// The sources whose route to some changed destination changes: their old route meets a
/// switch whose entry for it changes.
pub(crate) fn rerouted(start: &ValidState, changed: &[(NodeId, u16)]) -> Rerouted {
    let f = &start.fabric;
    let switches: Vec<NodeId> = start.switches.keys().copied().collect();
    let n = switches.len();
    let mut index = vec![u32::MAX; f.nodes().len()];
    for (k, x) in switches.iter().enumerate() {
        if let Some(slot) = index.get_mut(x.index()) {
            *slot = k as u32;
        }
    }
    let at = |x: NodeId| index.get(x.index()).copied().unwrap_or(u32::MAX) as usize;
    // Per switch index: its LFT, the end nodes cabled to it, and each port's next switch.
    let lfts: Vec<&[u8]> = switches.iter().map(|&x| table(start, x)).collect();
    let mut attached: Vec<Vec<NodeId>> = vec![Vec::new(); n];
    for l in f.links() {
        for (a, b) in [(l.a, l.b), (l.b, l.a)] {
            if f.node(a.node).is_switch() && !f.node(b.node).is_switch() {
                if let Some(v) = attached.get_mut(at(a.node)) {
                    v.push(b.node);
                }
            }
        }
    }
    let next: Vec<Vec<u32>> = switches
        .iter()
        .map(|&x| {
            (0..=f.node(x).spec.port_count)
                .map(|p| next_switch(start, x, p).map_or(u32::MAX, |y| at(y) as u32))
                .collect()
        })
        .collect();
    let owners = start.lids.owners(f);
    // The changed switches per LID, bucketed by counting (`first[lid]..first[lid + 1]` of
    // `moved`, as switch indices).
    let mut first = vec![0usize; usize::from(u16::MAX) + 2];
    for &(_, lid) in changed {
        if let Some(c) = first.get_mut(usize::from(lid) + 1) {
            *c += 1;
        }
    }
    for i in 1..first.len() {
        let prev = first.get(i - 1).copied().unwrap_or(0);
        if let Some(c) = first.get_mut(i) {
            *c += prev;
        }
    }
    let mut fill = first.clone();
    let mut moved = vec![0u32; changed.len()];
    for &(x, lid) in changed {
        if let Some(f) = fill.get_mut(usize::from(lid)) {
            if let Some(m) = moved.get_mut(*f) {
                *m = at(x) as u32;
            }
            *f += 1;
        }
    }
    let groups: Vec<(u16, &[u32])> = (0..=u16::MAX)
        .filter_map(|lid| {
            let a = first.get(usize::from(lid)).copied()?;
            let b = first.get(usize::from(lid) + 1).copied()?;
            let run = moved.get(a..b)?;
            (!run.is_empty()).then_some((lid, run))
        })
        .collect();
    // Per LID, in parallel: the pairs, and the sources (end nodes, switches) whose route meets
    // a changed entry (per switch index, [`forward::memo_walk`]: a loop, or a hop to no
    // switch, does not), gathered per worker as flags.
    struct Acc {
        pairs: u64,
        hosts: Vec<bool>,
        switches: Vec<bool>,
        memo: Vec<Mark<bool>>,
        path: Vec<u32>,
    }
    let fresh = || Acc {
        pairs: 0,
        hosts: vec![false; f.nodes().len()],
        switches: vec![false; n],
        memo: vec![Mark::Unknown; n],
        path: Vec::new(),
    };
    let acc = groups
        .par_iter()
        .fold(fresh, |mut acc, &(lid, moved)| {
            acc.memo.fill(Mark::Unknown);
            for &k in moved {
                if let Some(m) = acc.memo.get_mut(k as usize) {
                    *m = Mark::Known(true);
                }
            }
            let owner = owners.get(usize::from(lid)).copied().flatten();
            for s in 0..n {
                let hit = forward::memo_walk(
                    &mut acc.memo,
                    &mut acc.path,
                    s,
                    false,
                    |a| a,
                    |k| {
                        let o = lfts
                            .get(k)
                            .map_or(LFT_UNSET, |t| entry(t, usize::from(lid)));
                        Next::To(
                            next.get(k)
                                .and_then(|v| v.get(usize::from(o)))
                                .map_or(usize::MAX, |&y| y as usize),
                        )
                    },
                );
                if !hit {
                    continue;
                }
                for &h in attached.get(s).map_or(&[][..], |v| v.as_slice()) {
                    if owner.is_some_and(|(o, _)| o == h) {
                        continue;
                    }
                    acc.pairs += 1;
                    if let Some(v) = acc.hosts.get_mut(h.index()) {
                        *v = true;
                    }
                }
                if owner.is_none_or(|(o, _)| Some(&o) != switches.get(s)) {
                    acc.pairs += 1;
                    if let Some(v) = acc.switches.get_mut(s) {
                        *v = true;
                    }
                }
            }
            acc
        })
        .reduce(fresh, |mut a, b| {
            a.pairs += b.pairs;
            for (x, y) in a.hosts.iter_mut().zip(&b.hosts) {
                *x |= *y;
            }
            for (x, y) in a.switches.iter_mut().zip(&b.switches) {
                *x |= *y;
            }
            a
        });
    let mut out = Rerouted {
        pairs: acc.pairs,
        ..Rerouted::default()
    };
    let hosts: Vec<NodeId> = (0..f.nodes().len() as u32)
        .map(NodeId)
        .filter(|h| acc.hosts.get(h.index()).copied().unwrap_or(false))
        .collect();
    out.switches = acc.switches.iter().filter(|&&b| b).count();
    out.hosts = hosts
        .into_iter()
        .map(|h| f.node(h).name().to_owned())
        .collect();
    out.hosts.sort();
    out
}

/// An LFT block write as one write per changed entry, in entry order, each block as it is
/// then (other writes unchanged).
pub(crate) fn per_entry(w: &SmpWrite) -> Vec<SmpWrite> {
    let Some((switch, block, a, b)) = lft_block(w) else {
        return vec![w.clone()];
    };
    let mut now = a;
    let mut out = Vec::new();
    for i in 0..LFT_BLOCK {
        let (Some(&x), Some(&y)) = (a.get(i), b.get(i)) else {
            continue;
        };
        if x == y {
            continue;
        }
        let before = now;
        if let Some(slot) = now.get_mut(i) {
            *slot = y;
        }
        out.push(SmpWrite::Lft {
            switch,
            block,
            old: before,
            new: now,
        });
    }
    out
}

/// An LFT write's switch, block and entries before and after (`None` for another write).
pub(crate) fn lft_block(w: &SmpWrite) -> Option<(Guid, u16, [u8; LFT_BLOCK], [u8; LFT_BLOCK])> {
    match w {
        SmpWrite::Lft {
            switch,
            block,
            old,
            new,
        } => Some((*switch, *block, *old, *new)),
        SmpWrite::Pkeys { .. }
        | SmpWrite::Mft { .. }
        | SmpWrite::Vport { .. }
        | SmpWrite::Sl2vl { .. }
        | SmpWrite::VlArb { .. } => None,
    }
}

/// Destination LIDs some switch's route to which does not arrive on `st`'s fabric with its
/// tables (a dead end, a down link, a loop, a wrong delivery): the model's routes
/// ([`forward::Routes`]) from every live switch with tables, toward every live destination
/// (a live switch's LID, or an end-node port's on a live cable: the destinations the
/// verifier requires; no table reaches the others).
pub(crate) fn broken_destinations(st: &ValidState) -> BTreeSet<u16> {
    let f = &st.fabric;
    let live: Vec<NodeId> = st
        .switches
        .keys()
        .copied()
        .filter(|&x| !f.node(x).down)
        .collect();
    let wanted: Vec<Dest> = Dest::all(st)
        .into_iter()
        .filter(|d| {
            let owner = f.node(d.owner.node);
            d.lid.0 != 0 && !owner.down && (owner.is_switch() || f.live_peer(d.owner).is_some())
        })
        .collect();
    // Destinations in parallel, each walked with its own memo.
    let broken: Vec<Option<u16>> = wanted
        .par_iter()
        .map_init(
            || Routes::new(st),
            |routes, &d| {
                live.iter()
                    .any(|&x| !routes.fate(x, d).arrives())
                    .then_some(d.lid.0)
            },
        )
        .collect();
    broken.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use weft_verifier::testkit::{self, Rng};
    use weft_verifier::{Options, Property, Scope};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]

        /// The destinations the planner finds broken (some live switch's route fails) are
        /// those the verifier reports some route failing to (an end node's goes through its
        /// switch's; a switch's own LID is no destination of its own): on random small fabrics, routed min-hop or up/down and then
        /// broken in 1 to 4 places (entries, cables, nodes), every valid state with two live
        /// sources or more.
        #[test]
        fn broken_destinations_are_the_verifiers(seed in any::<u64>(), breaks in 1usize..5) {
            let mut rng = Rng(seed);
            let st = testkit::broken_state(&mut rng, breaks);
            let Ok(v) = ValidState::new(st) else {
                return Err(TestCaseError::reject("not a valid state"));
            };
            let report = weft_verifier::verify(
                &v,
                &Options {
                    scope: Scope::All,
                    properties: vec![Property::Connected],
                    certificate: false,
                    max_listed: usize::MAX,
                    ..Options::default()
                },
            );
            // A lone live source (a switch, no live end node) has no required route: a switch's
            // route to its own LID is none of the verifier's, but the planner walks it.
            prop_assume!(report.stats.sources > 1);
            let listed: Vec<_> = report.failures.iter().flat_map(|p| &p.listed).collect();
            prop_assert_eq!(listed.len() as u64, report.failed_routes);
            let theirs: BTreeSet<u16> = listed.iter().map(|r| r.dlid.0).collect();
            prop_assert_eq!(broken_destinations(&v), theirs);
        }
    }
}
