//! Phase 5 of `fat_tree`: sFtree completion through a subtree root, with its gateways.

use super::acyclic::{complete_acyclic, entry};
use super::columns::port_toward;
use super::islands::{Bfs, Islands};
use super::shortest;
use super::{service_lids, Tree, ASIDE, NAME};
use crate::code::Code;
use crate::routing::graph::{Graph, Table};
use crate::routing::{RouteError, RouteNote, RoutingInput};
use rayon::prelude::*;
use weft_fabric::LFT_UNSET;

/// How many subtree roots sFtree tries on a degraded tree before it refuses.
pub(super) const ROOT_CANDIDATES: usize = 16;

/// The tables sFtree completes, as phases 2 to 4 leave them, and how to work them out again.
pub(super) struct Before<'a> {
    pub(super) tables: Vec<Vec<u8>>,
    pub(super) again: &'a dyn Fn() -> Vec<Vec<u8>>,
}

/// The tables for the next root candidate: the kept ones (a copy of them, when small enough to
/// keep for the candidate after), else worked out again.
fn next_tables(
    kept: &mut Option<Vec<Vec<u8>>>,
    large: bool,
    again: &dyn Fn() -> Vec<Vec<u8>>,
) -> Vec<Vec<u8>> {
    match kept.take() {
        Some(b) if large => b,
        Some(b) => {
            let copy = b.clone();
            *kept = Some(b);
            copy
        }
        None => again(),
    }
}

/// Tables of this many entries or more are routed again for the next root candidate rather
/// than kept as a copy (64 M: the 45 056-node tree has 188 M). The unit tests always route
/// again, so that they take that path.
const KEEP_BASE_BELOW: usize = 1 << 26;

/// sFtree: picks the subtree root and completes every switch's row through it. The result is
/// checked here — complete, and one-VL acyclic with every switch a source; on a degraded tree
/// where a root's completion would close a credit loop, the next candidate root is tried, and
/// when none works the engine refuses, naming a switch and destination of the loop.
pub(super) fn sftree(
    g: &Graph,
    t: &Tree,
    ladders: &shortest::Ladders,
    Before {
        tables: base,
        again,
    }: Before<'_>,
    input: &RoutingInput<'_>,
    order: &[u16],
) -> Result<(Vec<Vec<u8>>, Vec<RouteNote>), RouteError> {
    let f = input.fabric;
    let own_lid = g.switch_lids();
    let lid_of = |s: usize| own_lid.get(s).copied().flatten();
    let islands = Islands::of(g, t, &own_lid);
    // The LIDs of the switches in the levels (the ones set aside are reached through the
    // switch they hang off, whichever the root).
    let switch_lids: Vec<usize> = g
        .exits
        .iter()
        .enumerate()
        .filter_map(|(lid, e)| {
            e.filter(|e| e.port == 0 && t.level[e.sw as usize] != ASIDE)
                .map(|_| lid)
        })
        .collect();
    let leaves: Vec<usize> = (0..g.switches.len()).filter(|&i| t.level[i] == 1).collect();
    let rows = &base;
    // Algorithm 1: the first leaf reaching every switch LID. On a degraded tree the root
    // should also be reachable from every switch and reach as many destinations as possible:
    // when the first leaf falls short, leaves are tried best first on (switches reaching it,
    // switch LIDs it reaches, destinations it reaches), ties by fabric order.
    let destinations = g.exits.iter().flatten().count();
    let score = |s: usize| {
        let reaching = lid_of(s).map_or(0, |lid| {
            (0..rows.len())
                .filter(|&x| x == s || entry(rows, x, lid) != LFT_UNSET)
                .count()
        });
        let switches = switch_lids
            .iter()
            .filter(|&&lid| entry(rows, s, lid) != LFT_UNSET)
            .count();
        let all = rows.get(s).map_or(0, |r| {
            r.iter()
                .enumerate()
                .filter(|&(lid, &e)| e != LFT_UNSET && g.exits[lid].is_some())
                .count()
        });
        (reaching, switches, all)
    };
    let perfect = (rows.len(), switch_lids.len(), destinations);
    let first = leaves.iter().copied().find(|&s| {
        switch_lids
            .iter()
            .all(|&lid| entry(rows, s, lid) != LFT_UNSET)
    });
    let mut candidates: Vec<usize> = Vec::new();
    if let Some(s) = first {
        candidates.push(s);
    }
    if first.is_none_or(|s| score(s) != perfect) {
        let mut scored: Vec<((usize, usize, usize), usize)> =
            leaves.iter().map(|&s| (score(s), s)).collect();
        scored.sort_by_key(|&(sc, s)| (std::cmp::Reverse(sc), s));
        candidates.extend(
            scored
                .into_iter()
                .map(|(_, s)| s)
                .filter(|&s| Some(s) != first),
        );
    }
    candidates.truncate(ROOT_CANDIDATES);
    let mut refusal = None;
    let tries = candidates.len();
    // The tables before completion, for the next root should this one fail: kept as a copy
    // when they are small, routed again (`again`, the same tables) when a copy would double
    // the largest thing routing holds.
    let large = cfg!(test) || base.iter().map(Vec::len).sum::<usize>() >= KEEP_BASE_BELOW;
    let mut kept = Some(base);
    for &root in &candidates {
        let Some(root_lid) = lid_of(root) else {
            continue;
        };
        let mut rows = next_tables(&mut kept, large, again);
        let (completed, relayed, gateways) = complete(g, t, &mut rows, root, root_lid);
        let aside = islands.fill(g, &mut rows);
        let verdict = match g.check_complete(f, NAME, Table::Rows(&rows)) {
            Err(e) => Err(e),
            Ok(()) => match g.first_cycle(&rows) {
                None => Ok(()),
                Some(c) => Err(RouteError::CreditLoop {
                    engine: NAME,
                    tried: tries,
                    switch: f.node(g.switches[c.switch].id).name().to_owned(),
                    to: g.lid_name(f, c.lid),
                }),
            },
        };
        if let Err(e) = verdict {
            refusal.get_or_insert(e);
            continue;
        }
        // Routes that need a down→up turn (no up*/down* path joins their ends) turn at the
        // nearest switch that keeps the tables free of cycles, not always at the root.
        let service = service_lids(g, f);
        ladders.shorten_turns(g, t, &mut rows, |lid| {
            !service.get(lid).copied().unwrap_or(true)
        });
        let name = |s: usize| format!("`{}`", f.node(g.switches[s].id).name());
        let through = match gateways.as_slice() {
            [] => String::new(),
            gates => format!(
                ", entered from above through {} (one parent per group of its parents sharing switches above)",
                gates.iter().map(|&s| name(s)).collect::<Vec<_>>().join(", ")
            ),
        };
        let mut notes = vec![RouteNote {
            code: Code::SftreeRoot,
            message: format!("sFtree subtree root is {}{through}", name(root)),
        }];
        if completed > 0 {
            notes.push(RouteNote {
                code: Code::SftreeEntries,
                message: format!("{completed} LFT entries route through the sFtree subtree"),
            });
        }
        notes.extend(islands.note(f, g, aside));
        if relayed > 0 {
            notes.push(RouteNote {
                code: Code::SftreeRelayed,
                message: format!(
                    "{relayed} LFT entries lead to a destination the subtree root cannot reach through the nearest switch that can"
                ),
            });
        }
        return Ok((rows, notes));
    }
    match refusal {
        Some(e @ RouteError::CreditLoop { .. }) => {
            // No root keeps every down→up turn harmless: choose the missing entries one by
            // one instead, each only where it closes no channel dependency cycle.
            let base = kept.unwrap_or_else(again);
            let Some((mut rows, chosen, root)) = complete_acyclic(g, t, &base, order, &candidates)
            else {
                return Err(e);
            };
            let aside = islands.fill(g, &mut rows);
            if g.check_complete(f, NAME, Table::Rows(&rows)).is_err()
                || g.first_cycle(&rows).is_some()
            {
                return Err(e);
            }
            let mut notes = vec![RouteNote {
                code: Code::SftreeAcyclic,
                message: format!(
                    "no sFtree subtree root completes this degraded tree without a credit loop ({tries} tried); {chosen} LFT entries were chosen turn by turn so that no channel dependency cycle forms (down→up turns first at `{}`)",
                    f.node(g.switches[root].id).name()
                ),
            }];
            notes.extend(islands.note(f, g, aside));
            Ok((rows, notes))
        }
        Some(e) => Err(e),
        // No leaf with a LID: nothing to complete; whatever is unset is unreachable.
        None => {
            let mut base = kept.unwrap_or_else(again);
            let aside = islands.fill(g, &mut base);
            g.check_complete(f, NAME, Table::Rows(&base))?;
            Ok((base, islands.note(f, g, aside).into_iter().collect()))
        }
    }
}

/// Completes `rows` through `root` for the switches and destinations of the levels (the
/// switches set aside are [`Islands::fill`]ed afterwards): the root's LID through its
/// gateways ([`Gateways`]), Algorithm 2, and the relays a degraded tree needs. Returns
/// (entries completed through the root, entries relayed, the gateways when some stand for
/// several parents of the root).
fn complete(
    g: &Graph,
    t: &Tree,
    rows: &mut [Vec<u8>],
    root: usize,
    root_lid: usize,
) -> (usize, usize, Vec<usize>) {
    // Algorithm 2, sibling part: where the root has no entry, a same-level neighbour of the
    // root that has one (of its own, before any completion).
    let siblings: Vec<(usize, u8)> = t.side[root]
        .iter()
        .map(|&k| {
            let grp = &g.switches[root].groups[k];
            (
                grp.peer as usize,
                grp.ports.first().map_or(LFT_UNSET, |p| p.0),
            )
        })
        .collect();
    let nlids = rows.get(root).map_or(0, Vec::len);
    for lid in 0..nlids {
        if g.exits[lid].is_none() || entry(rows, root, lid) != LFT_UNSET {
            continue;
        }
        if let Some(&(_, port)) = siblings
            .iter()
            .find(|&&(sib, _)| entry(rows, sib, lid) != LFT_UNSET)
        {
            rows[root][lid] = port;
        }
    }
    let gateways = Gateways::of(g, t, root);
    gateways.route_root(g, t, rows, root, root_lid);
    // On a degraded tree some switches have no up*/down* route to the root (a spine whose up
    // links are all down reaches the rest only through its children): they forward the root's
    // LID toward the nearest switch that has a route to it.
    let mut bfs = Bfs::new(t);
    let mut relayed = bfs.complete(g, rows, root_lid);
    gateways.turn(g, rows, root, root_lid);
    // Algorithm 2: a switch without an entry for a destination the root reaches forwards it
    // as it forwards the root's own LID.
    let root_row = rows[root].clone();
    let completed: usize = rows
        .par_iter_mut()
        .enumerate()
        .map(|(s, row)| {
            if s == root || t.level[s] == ASIDE {
                return 0;
            }
            let toward_root = row.get(root_lid).copied().unwrap_or(LFT_UNSET);
            if toward_root == LFT_UNSET {
                return 0;
            }
            let mut n = 0;
            for (lid, e) in row.iter_mut().enumerate() {
                if *e == LFT_UNSET
                    && lid != root_lid
                    && g.exits[lid].is_some()
                    && root_row.get(lid).is_some_and(|&r| r != LFT_UNSET)
                {
                    *e = toward_root;
                    n += 1;
                }
            }
            n
        })
        .sum();
    // Destinations the root itself cannot reach (a switch LID reachable only from below):
    // every switch without an entry forwards toward the nearest switch that has one.
    let mut missing = vec![false; nlids];
    for (_, row) in rows
        .iter()
        .enumerate()
        .filter(|&(s, _)| t.level[s] != ASIDE)
    {
        for (m, &e) in missing.iter_mut().zip(row) {
            *m |= e == LFT_UNSET;
        }
    }
    for (lid, _) in missing.iter().enumerate().filter(|&(_, &m)| m) {
        if g.exits
            .get(lid)
            .copied()
            .flatten()
            .is_some_and(|e| t.level[e.sw as usize] != ASIDE)
        {
            relayed += bfs.complete(g, rows, lid);
        }
    }
    let shared = gateways.group.len() < t.up[root].len();
    let gates = if shared {
        gateways.switches(g, root)
    } else {
        Vec::new()
    };
    (completed, relayed, gates)
}

/// The subtree root's way in and out for sFtree's down→up turns.
///
/// Two parents of the root are of one *class* when they share a switch above (in a tree whose
/// cores each reach several spines of a pod, as Selene's do, all the spines of one plane are
/// one class; in a k-ary n-tree every parent is its own). Each class has one *gateway*, the
/// parent with the most up links (ties: the first). Routes that come down into the root and
/// turn up there come down through a gateway only ([`Gateways::route_root`]), and leave the
/// root up through a gateway ([`Gateways::turn`]); where they turn on the way, coming down
/// from a core into a gateway that routes them up again, that is the gateway too. On a 3-level
/// tree whose cores are each cabled to their class's gateway, a chain of channel dependencies
/// that leaves the root or a gateway up through gateway `G` can come back down to a turn only
/// over `G`'s own cable to the core it climbed to — a U-turn at that core, which no route takes
/// — so the turns close no credit loop. Elsewhere (more levels, cables missing at a gateway)
/// the check after the completion says whether they do.
///
/// Without gateways, a route up through spine `S` to core `C` (the root's own) and one down
/// from `C` through another spine `S'` of the class (a core's route to the root) join through
/// `S`'s route to `S'` over `C` into a loop `root → S → C → S' → root`, and with two planes
/// each half of the loop turns at the root into the other.
struct Gateways {
    /// Per group of the root: the class of an up group, `usize::MAX` for the others.
    class: Vec<usize>,
    /// Per class: the root's group toward its gateway.
    group: Vec<usize>,
}

impl Gateways {
    /// The classes and gateways of `root`'s parents: switches above each parent, joined where
    /// two meet.
    fn of(g: &Graph, t: &Tree, root: usize) -> Gateways {
        let ups = &t.up[root];
        let mut joined: Vec<usize> = (0..ups.len()).collect();
        let find = |joined: &mut [usize], mut x: usize| {
            while joined[x] != x {
                joined[x] = joined[joined[x]];
                x = joined[x];
            }
            x
        };
        // Which parent's search reached each switch first.
        let mut reached = vec![usize::MAX; g.switches.len()];
        let mut stack = Vec::new();
        for (i, &k) in ups.iter().enumerate() {
            stack.push(g.switches[root].groups[k].peer as usize);
            while let Some(x) = stack.pop() {
                if reached[x] != usize::MAX {
                    let (a, b) = (find(&mut joined, reached[x]), find(&mut joined, i));
                    joined[a.max(b)] = a.min(b);
                    continue;
                }
                reached[x] = i;
                stack.extend(
                    t.up[x]
                        .iter()
                        .map(|&u| g.switches[x].groups[u].peer as usize),
                );
            }
        }
        let ups_of = |k: usize| t.up[g.switches[root].groups[k].peer as usize].len();
        let mut class = vec![usize::MAX; g.switches[root].groups.len()];
        let mut group: Vec<usize> = Vec::new();
        let mut id = vec![usize::MAX; ups.len()];
        for (i, &k) in ups.iter().enumerate() {
            let r = find(&mut joined, i);
            if id[r] == usize::MAX {
                id[r] = group.len();
                group.push(k);
            }
            class[k] = id[r];
            if ups_of(k) > ups_of(group[id[r]]) {
                group[id[r]] = k;
            }
        }
        Gateways { class, group }
    }

    /// The gateways, by dense switch index.
    fn switches(&self, g: &Graph, root: usize) -> Vec<usize> {
        self.group
            .iter()
            .map(|&k| g.switches[root].groups[k].peer as usize)
            .collect()
    }

    /// Routes the root's own LID so that routes reach the root from above through a gateway
    /// only: each gateway goes down to the root, every switch above a gateway down toward one
    /// (the nearest, breadth first), and every other switch of the levels climbs — keeping its
    /// own climb when it leads to a switch with an entry — top level first. The switches left
    /// without an entry (set aside, or cut off from every gateway's ancestors) are relayed by
    /// the caller.
    fn route_root(&self, g: &Graph, t: &Tree, rows: &mut [Vec<u8>], root: usize, lid: usize) {
        let n = g.switches.len();
        let mut col = vec![LFT_UNSET; n];
        col[root] = entry(rows, root, lid);
        // Switch `s`'s entry through its group `k`: its own when that is one of the group's
        // cables (the main path's choice among parallel ones), else spread by LID.
        let through = |rows: &[Vec<u8>], s: usize, k: usize| {
            let own = entry(rows, s, lid);
            if g.switches[s].groups[k]
                .ports
                .iter()
                .any(|&(mine, _)| mine == own)
            {
                own
            } else {
                port_toward(g, s, k, lid as u16)
            }
        };
        let mut queue = std::collections::VecDeque::new();
        for &k in &self.group {
            let grp = &g.switches[root].groups[k];
            let p = grp.peer as usize;
            col[p] = through(rows, p, grp.back as usize);
            queue.push_back(p);
        }
        while let Some(x) = queue.pop_front() {
            for &k in &t.up[x] {
                let grp = &g.switches[x].groups[k];
                let p = grp.peer as usize;
                if col[p] == LFT_UNSET {
                    col[p] = through(rows, p, grp.back as usize);
                    queue.push_back(p);
                }
            }
        }
        for &s in &t.top_down {
            if col[s] != LFT_UNSET || s == root {
                continue;
            }
            let groups = &g.switches[s].groups;
            let set = |k: usize| col[groups[k].peer as usize] != LFT_UNSET;
            let own = entry(rows, s, lid);
            if let Some(&k) = t.up[s]
                .iter()
                .find(|&&k| set(k) && groups[k].ports.iter().any(|&(mine, _)| mine == own))
                .or_else(|| t.up[s].iter().find(|&&k| set(k)))
            {
                col[s] = through(rows, s, k);
            }
        }
        for (row, c) in rows.iter_mut().zip(col) {
            if let Some(e) = row.get_mut(lid) {
                *e = c;
            }
        }
    }

    /// Where a neighbour that routes the root's LID straight down to the root lacks an entry
    /// for a destination (so that routes toward it may come down into the root and turn up
    /// there), the root's entry for it leaves through a gateway that has one, not back toward
    /// the root: the gateway of the class of the parent the root's entry led to when that one
    /// has an entry, else the first that does.
    fn turn(&self, g: &Graph, rows: &mut [Vec<u8>], root: usize, root_lid: usize) {
        let groups = &g.switches[root].groups;
        let leads_to = |s: usize, port: u8, to: usize| {
            g.switches[s]
                .groups
                .iter()
                .any(|grp| grp.peer as usize == to && grp.ports.iter().any(|&(m, _)| m == port))
        };
        let into: Vec<usize> = groups
            .iter()
            .map(|grp| grp.peer as usize)
            .filter(|&p| leads_to(p, entry(rows, p, root_lid), root))
            .collect();
        // The root's group of each of its ports.
        let mut group_of = [usize::MAX; 256];
        for (k, grp) in groups.iter().enumerate() {
            for &(mine, _) in &grp.ports {
                group_of[usize::from(mine)] = k;
            }
        }
        let nlids = rows.get(root).map_or(0, Vec::len);
        for lid in 0..nlids {
            if lid == root_lid
                || g.exits[lid].is_none()
                || !into.iter().any(|&p| entry(rows, p, lid) == LFT_UNSET)
            {
                continue;
            }
            let k = group_of[usize::from(entry(rows, root, lid))];
            let Some(&class) = self.class.get(k) else {
                continue;
            };
            if class == usize::MAX || self.group[class] == k {
                continue;
            }
            let reaches = |c: usize| {
                let p = groups[self.group[c]].peer as usize;
                let e = entry(rows, p, lid);
                e != LFT_UNSET && !leads_to(p, e, root)
            };
            let class = if reaches(class) {
                Some(class)
            } else {
                (0..self.group.len()).find(|&c| reaches(c))
            };
            if let Some(c) = class {
                rows[root][lid] = port_toward(g, root, self.group[c], lid as u16);
            }
        }
    }
}
