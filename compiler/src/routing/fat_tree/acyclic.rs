//! Step 5 of `fat_tree`: completion turn by turn, each down→up turn admitted only when it
//! closes no channel-dependency cycle.

use super::columns::port_toward;
use super::sftree::ROOT_CANDIDATES;
use super::{Tree, ASIDE};
use crate::routing::graph::Graph;
use weft_fabric::LFT_UNSET;

/// Completes `rows` when no subtree root keeps sFtree's turns harmless (a degraded tree whose
/// cut-off switches need down→up turns in more than one place).
///
/// The channel dependency graph is grown from every turn an up*/down* route may take — up→up,
/// up→down, down→down, never back over the same link — not only the turns the base entries
/// take, so that any turn admitted later is safe against every up*/down* route. The down→up
/// turns at a subtree root are admitted first (each unless it closes a cycle: with the unique
/// up paths of a fat-tree none does). Then, for each destination in `order`, the switches
/// without an entry join its routes breadth first through the nearest neighbour whose turn is
/// admitted, admitting a new turn only when no neighbour's is and only when it closes no
/// cycle. Returns the completed rows, how many entries were set and the root whose turns
/// went first, or `None` when with every root some switch cannot join.
pub(super) fn complete_acyclic(
    g: &Graph,
    t: &Tree,
    base: &[Vec<u8>],
    order: &[u16],
    roots: &[usize],
) -> Option<(Vec<Vec<u8>>, usize, usize)> {
    let ch = g.channels();
    // Turns: (in channel, out channel) at each switch; down→up ones kept aside.
    let mut turns: Vec<(u32, u32)> = Vec::new();
    let mut down_up: Vec<Vec<(u32, u32)>> = vec![Vec::new(); g.switches.len()];
    for (s, sw) in g.switches.iter().enumerate() {
        let kind = |k: usize| {
            let peer = sw.groups[k].peer as usize;
            t.level[peer].cmp(&t.level[s])
        };
        for (ki, gin) in sw.groups.iter().enumerate() {
            for &(_, theirs) in &gin.ports {
                let Some(into) = ch.id(gin.peer as usize, theirs) else {
                    continue;
                };
                for (ko, gout) in sw.groups.iter().enumerate() {
                    if gout.peer == gin.peer {
                        continue;
                    }
                    for &(mine, _) in &gout.ports {
                        let Some(out) = ch.id(s, mine) else {
                            continue;
                        };
                        let turn = (into as u32, out as u32);
                        use std::cmp::Ordering::{Greater, Less};
                        match (kind(ki), kind(ko)) {
                            (Less, _) | (Greater, Less) => turns.push(turn),
                            (Greater, Greater) => down_up[s].push(turn),
                            _ => {} // sideways: admitted on demand
                        }
                    }
                }
            }
        }
    }
    let deps = g.dependencies(&ch, base);
    let updown = crate::routing::acyclic::Acyclic::new(
        ch.count(),
        turns.into_iter().chain(ch.edges(&deps)),
    )?;
    drop(deps);
    // Roots with turns to admit: the sFtree candidates (leaves), then every other switch,
    // lowest level first (where leaves have one parent, the turns must be higher).
    let mut by_level: Vec<usize> = (0..g.switches.len())
        .filter(|&s| t.level[s] != ASIDE)
        .collect();
    by_level.sort_by_key(|&s| (t.level[s], s));
    let mut tried: Vec<usize> = roots.to_vec();
    tried.extend(by_level.into_iter().filter(|s| !roots.contains(s)));
    tried.retain(|&s| !down_up[s].is_empty());
    tried.truncate(ROOT_CANDIDATES);
    tried.iter().find_map(|&root| {
        let mut cdg = updown.clone();
        for &(a, b) in &down_up[root] {
            cdg.insert(a, b);
        }
        let mut rows = base.to_vec();
        let chosen = join_acyclic(g, t, &ch, &mut cdg, &mut rows, order)?;
        Some((rows, chosen, root))
    })
}

/// A switch joining a destination's routes through a turn not admitted yet; ordered by the
/// turn's level (lowest first), then hops to the destination, switch and group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Join {
    level: u8,
    hops: u32,
    switch: usize,
    group: usize,
    port: u8,
    /// (the joining channel, the neighbour's next channel).
    turn: (u32, u32),
}

/// For each destination in `order`, the switches of `rows` without an entry join its routes
/// breadth first (see [`complete_acyclic`]); returns the entries set.
fn join_acyclic(
    g: &Graph,
    t: &Tree,
    ch: &crate::routing::graph::Channels,
    cdg: &mut crate::routing::acyclic::Acyclic,
    rows: &mut [Vec<u8>],
    order: &[u16],
) -> Option<usize> {
    let n = g.switches.len();
    let mut chosen = 0usize;
    let mut dist = vec![NO_ENTRY; n];
    let mut joined: Vec<(usize, u32)> = Vec::new();
    for &lid in order {
        let lid = usize::from(lid);
        // The switches set aside, and the destinations on them, are the islands' (filled
        // after).
        if g.exits[lid].is_some_and(|e| t.level[e.sw as usize] == ASIDE) {
            continue;
        }
        let mut missing: Vec<usize> = (0..n)
            .filter(|&s| t.level[s] != ASIDE && entry(rows, s, lid) == LFT_UNSET)
            .collect();
        if missing.is_empty() {
            continue;
        }
        // Hops to the destination's exit switch along the entries there are.
        for (s, d) in dist.iter_mut().enumerate() {
            *d = if entry(rows, s, lid) == LFT_UNSET {
                NO_ENTRY
            } else {
                UNCOUNTED
            };
        }
        for s in 0..n {
            hops(ch, rows, &mut dist, s, lid);
        }
        // Rounds through admitted turns only, breadth first; when none can join, the one new
        // turn that is lowest in the tree, then nearest, and back to admitted turns, so that
        // routes share the few down→up turns there are rather than each adding its own.
        let mut admit = false;
        while !missing.is_empty() {
            joined.clear();
            let mut fresh: Vec<Join> = Vec::new();
            for &x in &missing {
                let mut best: Option<(u32, usize, u8)> = None;
                for (k, grp) in g.switches[x].groups.iter().enumerate() {
                    let (y, d) = (grp.peer as usize, dist[grp.peer as usize]);
                    if d >= NO_ENTRY {
                        continue;
                    }
                    let port = port_toward(g, x, k, lid as u16);
                    let Some(from) = ch.id(x, port) else {
                        continue;
                    };
                    match ch.id(y, entry(rows, y, lid)) {
                        Some(to) if !cdg.contains(from as u32, to as u32) => fresh.push(Join {
                            level: t.level[y],
                            hops: d,
                            switch: x,
                            group: k,
                            port,
                            turn: (from as u32, to as u32),
                        }),
                        _ => {
                            if best.is_none_or(|b| (d, k) < (b.0, b.1)) {
                                best = Some((d, k, port));
                            }
                        }
                    }
                }
                if let (false, Some((d, _, port))) = (admit, best) {
                    rows[x][lid] = port;
                    joined.push((x, d + 1));
                }
            }
            if admit {
                fresh.sort_unstable();
                if let Some(j) = fresh.iter().find(|j| cdg.insert(j.turn.0, j.turn.1)) {
                    rows[j.switch][lid] = j.port;
                    joined.push((j.switch, j.hops + 1));
                }
            }
            if joined.is_empty() {
                if admit {
                    return None;
                }
                admit = true;
                continue;
            }
            admit = false;
            chosen += joined.len();
            for &(x, d) in &joined {
                dist[x] = d;
            }
            missing.retain(|&x| entry(rows, x, lid) == LFT_UNSET);
        }
    }
    Some(chosen)
}

/// `dist` of a switch with an entry whose hops are not counted yet.
const UNCOUNTED: u32 = u32::MAX;
/// `dist` of a switch without an entry.
pub(super) const NO_ENTRY: u32 = u32::MAX - 1;

/// Fills `dist[s]` — hops from `s` to the exit switch of `lid` along the entries of `rows` —
/// and on the way every switch after it, memoised.
fn hops(
    ch: &crate::routing::graph::Channels,
    rows: &[Vec<u8>],
    dist: &mut [u32],
    s: usize,
    lid: usize,
) {
    let mut path = Vec::new();
    let mut x = s;
    let mut d = loop {
        if dist[x] != UNCOUNTED {
            break dist[x];
        }
        let next = ch.peer(x, entry(rows, x, lid));
        if next == u32::MAX {
            dist[x] = 0; // the exit switch
            break 0;
        }
        if path.len() > dist.len() {
            return; // a forwarding loop: the final check names it
        }
        path.push(x);
        x = next as usize;
    };
    if d == NO_ENTRY {
        return;
    }
    for &p in path.iter().rev() {
        d += 1;
        dist[p] = d;
    }
}

/// Fills `dist` with every switch's hops to the exit switch of `lid` along the entries of
/// `rows` ([`NO_ENTRY`] where the route has a hole or loops).
pub(super) fn route_hops(
    ch: &crate::routing::graph::Channels,
    rows: &[Vec<u8>],
    dist: &mut [u32],
    lid: usize,
) {
    for (s, d) in dist.iter_mut().enumerate() {
        *d = if entry(rows, s, lid) == LFT_UNSET {
            NO_ENTRY
        } else {
            UNCOUNTED
        };
    }
    for s in 0..dist.len() {
        hops(ch, rows, dist, s, lid);
    }
    for d in dist.iter_mut() {
        if *d == UNCOUNTED {
            *d = NO_ENTRY;
        }
    }
}

/// One entry of per-switch rows, `LFT_UNSET` when out of range.
pub(super) fn entry(rows: &[Vec<u8>], s: usize, lid: usize) -> u8 {
    rows.get(s)
        .and_then(|r| r.get(lid))
        .copied()
        .unwrap_or(LFT_UNSET)
}
