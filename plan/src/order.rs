//! The order of LFT writes: a switch changes a destination's entry only after its new next
//! hop has changed its own (when it changes at all), so the part of a route already moved is
//! the new route to the end. Entries are written as 64-entry blocks; a block whose entries
//! need conflicting places in the order (one entry before another switch's block, another
//! after it) is split into writes per place.

use crate::Rerouted;
use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::plan::{SmpWrite, LFT_BLOCK};
use weft_fabric::{Guid, NodeId, PortNum, PortRef, ValidState, LFT_UNSET};

/// Stages of LFT writes, in order, and what they change.
pub(crate) struct Order {
    pub stages: Vec<Vec<SmpWrite>>,
    pub rerouted: Rerouted,
    pub changed: u64,
}

fn entry(t: &[u8], lid: usize) -> u8 {
    t.get(lid).copied().unwrap_or(LFT_UNSET)
}

/// The switch a switch's port leads to on `st`'s fabric (a live link), if any.
fn next_switch(st: &ValidState, x: NodeId, port: u8) -> Option<NodeId> {
    if port == 0 || port == LFT_UNSET {
        return None;
    }
    let (peer, link) = st.fabric.peer(PortRef {
        node: x,
        port: PortNum(port),
    })?;
    let l = st.fabric.link(link);
    let n = st.fabric.node(peer.node);
    (l.state == weft_fabric::LinkState::Up && n.is_switch() && !n.down).then_some(peer.node)
}

/// The stages from `start` to `new` (same fabric, LFTs differ).
pub(crate) fn stages(start: &ValidState, new: &ValidState) -> Order {
    // Every changed entry, sorted by (switch, LID). A switch that is down where the steps
    // run, or has no tables in the end state (down there), is not written.
    let mut changed: Vec<(NodeId, u16)> = Vec::new();
    let live = |x: NodeId| !start.fabric.node(x).down && new.switches.contains_key(&x);
    for &x in start.switches.keys().filter(|&&x| live(x)) {
        let (a, b) = (table(start, x), table(new, x));
        let top = a.len().max(b.len());
        for lid in 0..top {
            if entry(a, lid) != entry(b, lid) {
                changed.push((x, lid as u16));
            }
        }
    }
    let target = |x: NodeId, lid: u16| entry(table(new, x), usize::from(lid));
    let stages = staged(start, &changed, &target);
    let rerouted = rerouted(start, &changed);
    Order {
        stages,
        rerouted,
        changed: changed.len() as u64,
    }
}

/// A switch's LFT in `st` (empty without one).
fn table(st: &ValidState, x: NodeId) -> &[u8] {
    st.switches
        .get(&x)
        .map_or(&[][..], |t| t.lft.ports.as_slice())
}

/// The writes that change the entries `changed` (sorted by switch and LID) of `start`'s
/// tables to `target`'s, in stages: an entry after its new next switch's (when that changes
/// too), as 64-entry blocks — a block whose entries need conflicting places is split into
/// writes per place.
pub(crate) fn staged(
    start: &ValidState,
    changed: &[(NodeId, u16)],
    target: &dyn Fn(NodeId, u16) -> u8,
) -> Vec<Vec<SmpWrite>> {
    let index = |x: NodeId, lid: u16| changed.binary_search(&(x, lid)).ok();
    // Each changed entry's parent: the same LID's entry at its new next switch, when that
    // changes too.
    let parent: Vec<Option<usize>> = changed
        .iter()
        .map(|&(x, lid)| next_switch(start, x, target(x, lid)).and_then(|y| index(y, lid)))
        .collect();
    // Items: first one per (switch, block); the entries of items on a cycle each their own.
    let block_of = |&(x, lid): &(NodeId, u16)| (x, lid / LFT_BLOCK as u16, u32::MAX);
    let mut key: Vec<(NodeId, u16, u32)> = changed.iter().map(block_of).collect();
    let stage_of = loop {
        match longest_paths(&key, &parent) {
            Ok(stage) => break stage,
            Err(cyclic) => {
                for (e, k) in key.iter_mut().enumerate() {
                    if cyclic.contains(&(k.0, k.1, k.2)) {
                        k.2 = e as u32;
                    }
                }
            }
        }
    };
    // Writes: per stage, per (switch, block), the block as it is then and after.
    let mut by_stage: BTreeMap<u32, BTreeMap<(NodeId, u16), Vec<u16>>> = BTreeMap::new();
    for (e, &(x, lid)) in changed.iter().enumerate() {
        let s = stage_of.get(e).copied().unwrap_or(0);
        by_stage
            .entry(s)
            .or_default()
            .entry((x, lid / LFT_BLOCK as u16))
            .or_default()
            .push(lid);
    }
    let mut shadow: BTreeMap<(NodeId, u16), [u8; LFT_BLOCK]> = BTreeMap::new();
    let mut stages = Vec::new();
    for (_, blocks) in by_stage {
        let mut writes = Vec::new();
        for ((x, b), lids) in blocks {
            let now = shadow.entry((x, b)).or_insert_with(|| {
                let old = table(start, x);
                let mut blk = [LFT_UNSET; LFT_BLOCK];
                for (i, slot) in blk.iter_mut().enumerate() {
                    *slot = entry(old, usize::from(b) * LFT_BLOCK + i);
                }
                blk
            });
            let before = *now;
            for lid in lids {
                if let Some(slot) = now.get_mut(usize::from(lid) % LFT_BLOCK) {
                    *slot = target(x, lid);
                }
            }
            writes.push(SmpWrite::Lft {
                switch: start.fabric.node(x).guid(),
                block: b,
                old: before,
                new: *now,
            });
        }
        stages.push(writes);
    }
    stages
}

/// The longest chain of parents above each entry's item (its stage), or the items on a cycle.
fn longest_paths(
    key: &[(NodeId, u16, u32)],
    parent: &[Option<usize>],
) -> Result<Vec<u32>, BTreeSet<(NodeId, u16, u32)>> {
    let items: BTreeSet<(NodeId, u16, u32)> = key.iter().copied().collect();
    let id: BTreeMap<(NodeId, u16, u32), usize> =
        items.iter().enumerate().map(|(i, &k)| (k, i)).collect();
    let item = |e: usize| key.get(e).and_then(|k| id.get(k)).copied();
    let n = items.len();
    let mut edges: BTreeSet<(usize, usize)> = BTreeSet::new();
    for (e, p) in parent.iter().enumerate() {
        if let (Some(p), Some(b)) = (p.and_then(item), item(e)) {
            if p != b {
                edges.insert((p, b));
            }
        }
    }
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut indeg = vec![0usize; n];
    for &(a, b) in &edges {
        if let Some(s) = succ.get_mut(a) {
            s.push(b);
        }
        if let Some(d) = indeg.get_mut(b) {
            *d += 1;
        }
    }
    let mut stage = vec![0u32; n];
    let mut ready: Vec<usize> = (0..n)
        .filter(|&i| indeg.get(i).copied() == Some(0))
        .collect();
    let mut done = 0;
    while let Some(a) = ready.pop() {
        done += 1;
        let sa = stage.get(a).copied().unwrap_or(0);
        for &b in succ.get(a).map_or(&[][..], |v| v.as_slice()) {
            if let Some(sb) = stage.get_mut(b) {
                *sb = (*sb).max(sa + 1);
            }
            if let Some(d) = indeg.get_mut(b) {
                *d -= 1;
                if *d == 0 {
                    ready.push(b);
                }
            }
        }
    }
    if done < n {
        let cyclic = items
            .iter()
            .enumerate()
            .filter(|(i, _)| indeg.get(*i).copied().unwrap_or(0) > 0)
            .map(|(_, &k)| k)
            .collect();
        return Err(cyclic);
    }
    Ok((0..key.len())
        .map(|e| item(e).and_then(|i| stage.get(i).copied()).unwrap_or(0))
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
    let mut by_lid: BTreeMap<u16, Vec<usize>> = BTreeMap::new();
    for &(x, lid) in changed {
        by_lid.entry(lid).or_default().push(at(x));
    }
    let mut out = Rerouted::default();
    let mut hosts: BTreeSet<NodeId> = BTreeSet::new();
    let mut moved_switches: BTreeSet<usize> = BTreeSet::new();
    // Per switch index, whether its route meets a changed entry ([`memo_walk`]).
    let mut memo = vec![0u8; n];
    let mut path: Vec<usize> = Vec::new();
    for (lid, moved) in by_lid {
        memo.iter_mut().for_each(|m| *m = 0);
        for &k in &moved {
            if let Some(m) = memo.get_mut(k) {
                *m = 2;
            }
        }
        let owner = owners.get(usize::from(lid)).copied().flatten();
        for s in 0..n {
            let hit = memo_walk(&mut memo, &mut path, s, |k| {
                let o = lfts
                    .get(k)
                    .map_or(LFT_UNSET, |t| entry(t, usize::from(lid)));
                Hop::To(
                    next.get(k)
                        .and_then(|v| v.get(usize::from(o)))
                        .map_or(usize::MAX, |&y| y as usize),
                )
            });
            if !hit {
                continue;
            }
            for &h in attached.get(s).map_or(&[][..], |v| v.as_slice()) {
                if owner.is_some_and(|(o, _)| o == h) {
                    continue;
                }
                out.pairs += 1;
                hosts.insert(h);
            }
            if owner.is_none_or(|(o, _)| Some(&o) != switches.get(s)) {
                out.pairs += 1;
                moved_switches.insert(s);
            }
        }
    }
    out.hosts = hosts
        .into_iter()
        .map(|h| f.node(h).name().to_owned())
        .collect();
    out.hosts.sort();
    out.switches = moved_switches.len();
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
        SmpWrite::Pkeys { .. } | SmpWrite::Vport { .. } => None,
    }
}

/// Destination LIDs some switch's route to which does not arrive on `st`'s fabric with its
/// tables (a dead end, a down link, a loop, a wrong delivery).
pub(crate) fn broken_destinations(st: &ValidState) -> BTreeSet<u16> {
    let f = &st.fabric;
    let owners = st.lids.owners(f);
    let switches: Vec<NodeId> = st.switches.keys().copied().collect();
    let mut index = vec![usize::MAX; f.nodes().len()];
    for (k, x) in switches.iter().enumerate() {
        if let Some(slot) = index.get_mut(x.index()) {
            *slot = k;
        }
    }
    let mut out = BTreeSet::new();
    // Per switch index, whether its route arrives ([`memo_walk`]).
    let mut memo = vec![0u8; switches.len()];
    let mut path = Vec::new();
    for (lid, owner) in owners.iter().enumerate() {
        let Some((dn, dp)) = *owner else { continue };
        if lid == 0 || f.node(dn).down {
            continue;
        }
        memo.iter_mut().for_each(|m| *m = 0);
        let broken = (0..switches.len()).any(|s| {
            let ok = memo_walk(&mut memo, &mut path, s, |k| {
                let Some(&x) = switches.get(k) else {
                    return Hop::Done(false);
                };
                if f.node(x).down {
                    return Hop::Done(false);
                }
                let port = st
                    .switches
                    .get(&x)
                    .map_or(LFT_UNSET, |t| entry(&t.lft.ports, lid));
                if port == 0 {
                    return Hop::Done((x, PortNum(0)) == (dn, dp));
                }
                let Some((peer, link)) = (port != LFT_UNSET)
                    .then(|| {
                        f.peer(PortRef {
                            node: x,
                            port: PortNum(port),
                        })
                    })
                    .flatten()
                else {
                    return Hop::Done(false);
                };
                if f.link(link).state != weft_fabric::LinkState::Up || f.node(peer.node).down {
                    return Hop::Done(false);
                }
                if (peer.node, peer.port) == (dn, dp) {
                    return Hop::Done(true);
                }
                if !f.node(peer.node).is_switch() {
                    return Hop::Done(false);
                }
                Hop::To(index.get(peer.node.index()).copied().unwrap_or(usize::MAX))
            });
            // Only live switches' routes count.
            !ok && switches.get(s).is_some_and(|&x| !f.node(x).down)
        });
        if broken {
            out.insert(lid as u16);
        }
    }
    out
}

/// What a switch does on a memoised walk: go on to another switch index, or end it.
enum Hop {
    To(usize),
    Done(bool),
}

/// Walks from switch index `s` by `hop`, with `memo` per switch index (0 unknown, 1 on this
/// walk, 2 true, 3 false): the walk's answer, kept for every switch on it. A walk that comes
/// back onto itself, or leaves the indices, is false.
fn memo_walk(
    memo: &mut [u8],
    path: &mut Vec<usize>,
    s: usize,
    mut hop: impl FnMut(usize) -> Hop,
) -> bool {
    path.clear();
    let mut k = s;
    let answer = loop {
        match memo.get(k).copied() {
            Some(2) => break true,
            Some(0) => {}
            _ => break false,
        }
        if let Some(m) = memo.get_mut(k) {
            *m = 1;
        }
        path.push(k);
        match hop(k) {
            Hop::To(next) => k = next,
            Hop::Done(a) => break a,
        }
    };
    for &p in path.iter() {
        if let Some(m) = memo.get_mut(p) {
            *m = if answer { 2 } else { 3 };
        }
    }
    answer
}
