//! Phases 1–3 of `fat_tree`: main paths, one destination's column of up entries and
//! secondary paths, and the climbs resolved per switch.

use super::shortest;
use super::{Chain, Tree, CLIMB, DESCEND, NEAR};
use crate::routing::graph::{Exit, Graph, Load};
use rayon::prelude::*;
use weft_fabric::LFT_UNSET;

/// Climbs from the destination's exit switch to a top switch through least-loaded up ports,
/// adding `weight` to each down port it takes.
pub(super) fn main_path(
    g: &Graph,
    t: &Tree,
    exit: Exit,
    load: &mut Load,
    avoid: &[&Chain],
    weight: u64,
) -> Chain {
    let mut chain = vec![(exit.sw, exit.port)];
    let mut cur = exit.sw as usize;
    loop {
        let s = &g.switches[cur];
        // Candidate (parent, parent's down port), scored by (used by a sibling LID, load, port).
        let mut best: Option<((u8, u64, u8), u32, u8)> = None;
        for &k in &t.up[cur] {
            let grp = &s.groups[k];
            for &(mine, theirs) in &grp.ports {
                let parent = grp.peer;
                let reused = avoid.iter().any(|c| c.iter().any(|&(sw, _)| sw == parent)) as u8;
                let l = load.get(parent as usize, theirs);
                let score = (reused, l, mine);
                if best.is_none_or(|(b, _, _)| score < b) {
                    best = Some((score, parent, theirs));
                }
            }
        }
        let Some((_, parent, theirs)) = best else {
            break;
        };
        load.add_weight(parent as usize, theirs, weight);
        chain.push((parent, theirs));
        cur = parent as usize;
    }
    chain
}

/// The port of `child` in cable group `group` (toward one neighbour), spreading parallel
/// cables by `key`: the destination LID, or (host routes) its rank among its root's
/// destinations.
pub(super) fn port_toward(g: &Graph, child: usize, group: usize, key: impl Into<u32>) -> u8 {
    let Some(ports) = g.switches.get(child).and_then(|s| s.groups.get(group)) else {
        return LFT_UNSET;
    };
    match ports.ports.as_slice() {
        [(p, _)] => *p,
        many => many
            .get(key.into() as usize % many.len().max(1))
            .map_or(LFT_UNSET, |p| p.0),
    }
}

/// The tree's links as flat lists for [`column()`]'s walks: per switch its children and its
/// parents, each with the neighbour's group leading back and that group's port when it is a
/// single cable ([`MANY`] otherwise).
pub(super) struct Links {
    /// `down[down_at[x]..down_at[x + 1]]`: `(child, child's group toward x, its port)`.
    down: Vec<(u32, u32, u8)>,
    down_at: Vec<u32>,
    /// `up[up_at[x]..up_at[x + 1]]`: `(parent, parent's group toward x, its port)`, in
    /// `Tree::up` order.
    up: Vec<(u32, u32, u8)>,
    up_at: Vec<u32>,
}

/// [`Links`]' port of a group of parallel cables (chosen per destination by [`port_toward`]).
const MANY: u8 = LFT_UNSET;

impl Links {
    pub(super) fn of(g: &Graph, t: &Tree) -> Links {
        let flat = |groups: &[Vec<usize>]| {
            let mut at = Vec::with_capacity(groups.len() + 1);
            let mut list = Vec::new();
            at.push(0);
            for (x, ks) in groups.iter().enumerate() {
                for &k in ks {
                    let grp = &g.switches[x].groups[k];
                    let port = g
                        .switches
                        .get(grp.peer as usize)
                        .and_then(|p| p.groups.get(grp.back as usize))
                        .and_then(|b| match b.ports.as_slice() {
                            [(p, _)] => Some(*p),
                            _ => None,
                        })
                        .unwrap_or(MANY);
                    list.push((grp.peer, grp.back, port));
                }
                at.push(list.len() as u32);
            }
            (list, at)
        };
        let (down, down_at) = flat(&t.down);
        let (up, up_at) = flat(&t.up);
        Links {
            down,
            down_at,
            up,
            up_at,
        }
    }

    fn down(&self, x: usize) -> &[(u32, u32, u8)] {
        let (a, b) = (self.down_at[x] as usize, self.down_at[x + 1] as usize);
        self.down.get(a..b).unwrap_or_default()
    }

    fn up(&self, x: usize) -> &[(u32, u32, u8)] {
        let (a, b) = (self.up_at[x] as usize, self.up_at[x + 1] as usize);
        self.up.get(a..b).unwrap_or_default()
    }
}

/// The port of `s` in its group `group` whose [`Links`] port is `port`, spread by `key`.
fn port_of(g: &Graph, s: usize, group: u32, port: u8, key: u32) -> u8 {
    if port != MANY {
        port
    } else {
        port_toward(g, s, group as usize, key)
    }
}

/// Buffers [`column()`] reuses from one destination to the next.
#[derive(Default)]
pub(super) struct Scratch {
    /// Per switch marked [`DESCEND`], its index in `way` (read only where the column holds
    /// that marker, so never cleared).
    at: Vec<u32>,
    /// Per switch marked [`DESCEND`]: (switch, its group toward the parent that reached it or
    /// `SEVERAL`, the spread key, the group's [`Links`] port).
    way: Vec<(usize, u32, u32, u8)>,
    stack: Vec<usize>,
    queue: Vec<(usize, u32)>,
}

/// One destination's entries on every switch: main path, up entries, secondary paths. The
/// switches below main-path switch `chain[i]` take parallel cables toward it by `spread[i]`,
/// the destination's rank among those whose main paths pass it; the ancestors pointing down
/// toward the main path by its rank at the top.
///
/// The walks read [`Links`] and reuse `scratch`; test builds check each column against
/// the walk by group look-ups (`column_walk`).
pub(super) fn column(
    g: &Graph,
    links: &Links,
    scratch: &mut Scratch,
    t: &Tree,
    exit: Exit,
    chain: &Chain,
    spread: &[u32],
) -> (Vec<u8>, Vec<u64>) {
    let mut col = g.empty_column();
    let mut secondary = vec![0u64; col.len().div_ceil(64)];
    let mut mark = |s: usize| {
        if let Some(w) = secondary.get_mut(s / 64) {
            *w |= 1 << (s % 64);
        }
    };
    col[exit.sw as usize] = exit.port;
    for &(sw, port) in chain.iter().skip(1) {
        col[sw as usize] = port;
    }
    const SEVERAL: u32 = u32::MAX;
    let Scratch {
        at,
        way,
        stack,
        queue,
    } = scratch;
    way.clear();
    stack.clear();
    queue.clear();
    if at.len() < col.len() {
        at.resize(col.len(), u32::MAX);
    }
    let key = |i: usize| spread.get(i).copied().unwrap_or(0);
    for (i, &(from, _)) in chain.iter().enumerate() {
        let from = from as usize;
        let spread = key(i);
        stack.push(from);
        while let Some(x) = stack.pop() {
            for &(c, back, port) in links.down(x) {
                let c = c as usize;
                if col[c] == DESCEND && x != from {
                    // Another parent on the way (x was reached going down from the main path).
                    if let Some(w) = way.get_mut(at[c] as usize) {
                        w.1 = SEVERAL;
                    }
                    continue;
                }
                if col[c] != LFT_UNSET {
                    continue;
                }
                if x == from {
                    col[c] = port_of(g, c, back, port, spread);
                } else {
                    col[c] = DESCEND;
                    at[c] = way.len() as u32;
                    way.push((c, back, spread, port));
                }
                stack.push(c);
            }
        }
    }
    for &(c, back, spread, port) in way.iter() {
        if back != SEVERAL {
            col[c] = port_of(g, c, back, port, spread);
        }
    }
    // Secondary: every ancestor points down toward a switch that has an entry.
    let top = key(chain.len().saturating_sub(1));
    queue.extend(chain.iter().map(|&(s, _)| (s as usize, top)));
    let mut head = 0;
    while let Some(&(x, k0)) = queue.get(head) {
        head += 1;
        for &(p, back, port) in links.up(x) {
            let p = p as usize;
            if col[p] != LFT_UNSET {
                continue;
            }
            col[p] = port_of(g, p, back, port, k0);
            mark(p);
            queue.push((p, k0));
        }
    }
    // Everybody else climbs to a parent that has an entry, top level first.
    for &s in &t.top_down {
        if col[s] == LFT_UNSET
            && links
                .up(s)
                .iter()
                .any(|&(p, _, _)| col[p as usize] != LFT_UNSET)
        {
            col[s] = CLIMB;
            mark(s);
        }
    }
    #[cfg(test)]
    {
        let (walked, marked) = column_walk(g, t, exit, chain, spread);
        assert!(
            walked == col && marked == secondary,
            "column by flat links differs from the walk by groups (exit switch {})",
            exit.sw
        );
    }
    (col, secondary)
}

/// [`column()`] as first written, by group look-ups: test builds check every column against it.
#[cfg(test)]
fn column_walk(
    g: &Graph,
    t: &Tree,
    exit: Exit,
    chain: &Chain,
    spread: &[u32],
) -> (Vec<u8>, Vec<u64>) {
    let mut col = g.empty_column();
    let mut secondary = vec![0u64; col.len().div_ceil(64)];
    let mut mark = |s: usize| {
        if let Some(w) = secondary.get_mut(s / 64) {
            *w |= 1 << (s % 64);
        }
    };
    col[exit.sw as usize] = exit.port;
    for &(sw, port) in chain.iter().skip(1) {
        col[sw as usize] = port;
    }
    let mut stack = Vec::new();
    // Per switch marked DESCEND: its group toward the one parent on the way that reached it
    // (and the spread key of the main-path switch the descent started from), or SEVERAL once
    // a second one does.
    const SEVERAL: u32 = u32::MAX;
    let mut way: Vec<(usize, u32, u32)> = Vec::new();
    let mut at = vec![u32::MAX; 0];
    let key = |i: usize| spread.get(i).copied().unwrap_or(0);
    for (i, &(from, _)) in chain.iter().enumerate() {
        let from = from as usize;
        let spread = key(i);
        stack.push(from);
        while let Some(x) = stack.pop() {
            for &k in &t.down[x] {
                let grp = &g.switches[x].groups[k];
                let c = grp.peer as usize;
                if col[c] == DESCEND && x != from {
                    // Another parent on the way (x was reached going down from the main path).
                    if let Some(w) = at.get(c).and_then(|&i| way.get_mut(i as usize)) {
                        w.1 = SEVERAL;
                    }
                    continue;
                }
                if col[c] != LFT_UNSET {
                    continue;
                }
                // A child of the main-path switch goes up to it (through the child's group
                // toward x, an up group of the child); a switch further down to one of its
                // parents on the way: the one when only one is, else chosen per switch once
                // all columns are known.
                if x == from {
                    col[c] = port_toward(g, c, grp.back as usize, spread);
                } else {
                    col[c] = DESCEND;
                    if at.is_empty() {
                        at = vec![u32::MAX; col.len()];
                    }
                    at[c] = way.len() as u32;
                    way.push((c, grp.back, spread));
                }
                stack.push(c);
            }
        }
    }
    for (c, back, spread) in way {
        if back != SEVERAL {
            col[c] = port_toward(g, c, back as usize, spread);
        }
    }
    // Secondary: every ancestor points down toward a switch that has an entry.
    let top = key(chain.len().saturating_sub(1));
    let mut queue: std::collections::VecDeque<(usize, u32)> =
        chain.iter().map(|&(s, _)| (s as usize, top)).collect();
    while let Some((x, k0)) = queue.pop_front() {
        for &k in &t.up[x] {
            let grp = &g.switches[x].groups[k];
            let p = grp.peer as usize;
            if col[p] != LFT_UNSET {
                continue;
            }
            col[p] = port_toward(g, p, grp.back as usize, k0);
            mark(p);
            queue.push_back((p, k0));
        }
    }
    // Everybody else climbs to a parent that has an entry, top level first. These entries
    // carry only switch-originated traffic (hosts follow the main path); which parent is chosen
    // per switch later, round-robin over the destinations ([`resolve_climbs`]).
    for &s in &t.top_down {
        if col[s] == LFT_UNSET
            && t.up[s]
                .iter()
                .any(|&k| col[g.switches[s].groups[k].peer as usize] != LFT_UNSET)
        {
            col[s] = CLIMB;
            mark(s);
        }
    }
    (col, secondary)
}

/// Replaces every [`CLIMB`] and [`DESCEND`] marker: each switch walks its LIDs in order and
/// gives the next climbing destination to the next of its up ports whose parent has an entry
/// for it (for [`DESCEND`]: whose parent is on the way to the main path, going up there itself).
///
/// A climb on a switch whose parents all have an entry for the LID (every climb on an intact
/// tree) takes the next of all its up groups: which LIDs those are is found a row at a time,
/// one pass over each parent's row, rather than by looking at every parent for every climb.
/// Test builds check the result against the look-up per climb.
pub(super) fn resolve_climbs(
    g: &Graph,
    t: &Tree,
    ladders: &shortest::Ladders,
    mut rows: Vec<Vec<u8>>,
) -> Vec<Vec<u8>> {
    let patches = resolve(g, t, ladders, &rows, true);
    #[cfg(test)]
    assert!(
        patches == resolve(g, t, ladders, &rows, false),
        "resolving climbs a row at a time differs from the look-up per climb"
    );
    // Every entry resolved from the rows as they were, then written (the rows are the
    // largest thing routing holds: no second copy).
    for (row, patch) in rows.iter_mut().zip(patches) {
        let marked = row
            .iter_mut()
            .filter(|e| **e == CLIMB || **e == DESCEND || **e == NEAR);
        for (e, port) in marked.zip(patch) {
            *e = port;
        }
    }
    rows
}

/// [`resolve_climbs`]'s new entries, per switch the port of each entry marked `CLIMB`,
/// `DESCEND` or `NEAR`, in LID order (a byte each: most entries of a tree are marked);
/// `by_row`: the climbs whose parents all have an entry found a row at a time.
fn resolve(
    g: &Graph,
    t: &Tree,
    ladders: &shortest::Ladders,
    rows: &[Vec<u8>],
    by_row: bool,
) -> Vec<Vec<u8>> {
    // Per switch, its up ports: a bit set over port numbers.
    let up_ports: Vec<[u64; 4]> = (0..g.switches.len())
        .map(|s| {
            let mut bits = [0u64; 4];
            for &k in &t.up[s] {
                for &(mine, _) in &g.switches[s].groups[k].ports {
                    bits[usize::from(mine / 64)] |= 1 << (mine % 64);
                }
            }
            bits
        })
        .collect();
    (0..rows.len())
        .into_par_iter()
        .map(|s| {
            // The up groups, their parents' rows and up ports.
            let ups: Vec<(usize, &[u8], &[u64; 4])> = t.up[s]
                .iter()
                .filter_map(|&k| {
                    let p = g.switches[s].groups[k].peer as usize;
                    Some((k, rows.get(p)?.as_slice(), up_ports.get(p)?))
                })
                .collect();
            let row = &rows[s];
            let mut patch = Vec::with_capacity(
                row.iter()
                    .filter(|&&e| e == CLIMB || e == DESCEND || e == NEAR)
                    .count(),
            );
            // Per LID, whether every parent has an entry (empty when not looked at).
            let mut all = Vec::new();
            if by_row && ups.len() == t.up[s].len() && row.contains(&CLIMB) {
                all = vec![true; row.len()];
                for &(_, parent, _) in &ups {
                    for (a, &e) in all.iter_mut().zip(parent) {
                        *a &= e != LFT_UNSET;
                    }
                    if let Some(beyond) = all.get_mut(parent.len()..) {
                        beyond.fill(false);
                    }
                }
            }
            let groups: Vec<usize> = ups.iter().map(|u| u.0).collect();
            let mut turn = 0usize;
            let mut descents = vec![0usize; g.switches[s].groups.len()];
            let mut live: Vec<usize> = Vec::with_capacity(ups.len());
            for (lid, &was) in row.iter().enumerate() {
                if was != CLIMB && was != DESCEND && was != NEAR {
                    continue;
                }
                let mut value = was;
                'one: {
                    let entry = &mut value;
                    if *entry == CLIMB && all.get(lid).copied().unwrap_or(false) {
                        // Every parent has an entry: the next of them all.
                        *entry = match groups.get(turn % groups.len().max(1)) {
                            Some(&k) => port_toward(g, s, k, lid as u16),
                            None => LFT_UNSET,
                        };
                        turn += 1;
                        break 'one;
                    }
                    live.clear();
                    if *entry == NEAR {
                        let exit = g.exits.get(lid).copied().flatten().map(|e| e.sw as usize);
                        live.extend(t.up[s].iter().copied().filter(|&k| {
                            let p = g.switches[s].groups[k].peer as usize;
                            exit.is_some_and(|e| ladders.nearer_up(e, s, p))
                        }));
                        // Counted with the descents (per set of parents, named by its first group),
                        // so that the descents of other destinations keep their turns.
                        let first = live.first().copied().unwrap_or(0);
                        let n = descents.get(first).copied().unwrap_or(0);
                        if let Some(c) = descents.get_mut(first) {
                            *c += 1;
                        }
                        *entry = match live.get(n % live.len().max(1)) {
                            Some(&k) => port_toward(g, s, k, lid as u16),
                            None => LFT_UNSET,
                        };
                        break 'one;
                    }
                    let descend = *entry == DESCEND;
                    if descend {
                        for &(k, parent, up) in &ups {
                            // On the way to the main path: the parent goes up there too (a port
                            // of its up groups, or a marker of its own resolved that way).
                            if parent.get(lid).is_some_and(|&e| {
                                e == DESCEND
                                    || (e < DESCEND && up[usize::from(e / 64)] >> (e % 64) & 1 == 1)
                            }) {
                                live.push(k);
                            }
                        }
                    } else {
                        for &(k, parent, _) in &ups {
                            if parent.get(lid).is_some_and(|&e| e != LFT_UNSET) {
                                live.push(k);
                            }
                        }
                    }
                    // A climb takes the next parent in turn; a descent the next of its own
                    // parents, counted apart per set of them (named by its first group), so that
                    // destinations whose main paths alternate between planes each spread over all
                    // of their plane's parents.
                    let next = if descend {
                        let first = live.first().copied().unwrap_or(0);
                        let n = descents.get(first).copied().unwrap_or(0);
                        if let Some(c) = descents.get_mut(first) {
                            *c += 1;
                        }
                        n
                    } else {
                        turn += 1;
                        turn - 1
                    };
                    *entry = match live.get(next % live.len().max(1)) {
                        Some(&k) => port_toward(g, s, k, lid as u16),
                        None => LFT_UNSET,
                    };
                }
                patch.push(value);
            }
            patch
        })
        .collect()
}
