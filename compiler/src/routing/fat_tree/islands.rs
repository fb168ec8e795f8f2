//! The switches set aside by the shape ([`Islands`]) and the breadth-first completion
//! of one destination ([`Bfs`]).

use super::acyclic::entry;
use super::columns::port_toward;
use super::{Tree, ASIDE};
use crate::code::Code;
use crate::routing::graph::Graph;
use crate::routing::RouteNote;
use weft_fabric::LFT_UNSET;

/// The switches set aside by [`crate::routing::shape`] (a management sub-tree, a spare switch), in
/// *islands* of switches cabled to each other, each routed through the one switch of the levels
/// it hangs off, its *anchor* (the highest-level one it is cabled to, then the first): every
/// switch reaches an island's switches as it reaches the anchor's own LID, and the anchor then
/// down the island; the island's switches reach everything up through the anchor, which
/// forwards as for its own traffic; inside an island, up and down a breadth-first tree from
/// the switch cabled to the anchor. No route enters an island and leaves it, and the routes
/// through the levels are the anchor's own, so the islands add no channel dependency that the
/// routes of the levels lack: they are deadlock-free and complete when those are.
pub(super) struct Islands {
    /// Per switch: its island's index, `usize::MAX` for switches of the levels.
    of: Vec<usize>,
    /// Per island switch: its group toward its parent in the island's tree (for the switch
    /// cabled to the anchor: toward the anchor).
    up: Vec<usize>,
    list: Vec<Island>,
}

/// One island of [`Islands`].
struct Island {
    /// The switch of the levels it hangs off, and that switch's LID.
    anchor: usize,
    anchor_lid: usize,
    /// The anchor's group toward the island.
    down: usize,
    /// Its switches, breadth first from the one cabled to the anchor.
    members: Vec<usize>,
}

impl Islands {
    /// The islands of `t`'s set-aside switches; an island cabled to no switch of the levels
    /// with a LID is left out (its switches stay without entries, which the check refuses).
    pub(super) fn of(g: &Graph, t: &Tree, own_lid: &[Option<usize>]) -> Islands {
        let n = g.switches.len();
        let aside = |s: usize| t.level.get(s) == Some(&ASIDE);
        let mut of = vec![usize::MAX; n];
        let mut up = vec![usize::MAX; n];
        let mut list = Vec::new();
        let mut seen = vec![false; n];
        let mut queue = std::collections::VecDeque::new();
        for first in (0..n).filter(|&s| aside(s)) {
            if seen[first] {
                continue;
            }
            // The island, and its anchor: (level, switch, member, member's group) best.
            let mut island = vec![first];
            seen[first] = true;
            let mut best: Option<(std::cmp::Reverse<u8>, usize, usize, usize)> = None;
            let mut i = 0;
            while let Some(&x) = island.get(i) {
                i += 1;
                for (k, grp) in g.switches[x].groups.iter().enumerate() {
                    let y = grp.peer as usize;
                    if aside(y) {
                        if !seen[y] {
                            seen[y] = true;
                            island.push(y);
                        }
                    } else if own_lid.get(y).is_some_and(Option::is_some) {
                        let c = (std::cmp::Reverse(t.level[y]), y, x, k);
                        if best.is_none_or(|b| c < b) {
                            best = Some(c);
                        }
                    }
                }
            }
            let Some((_, anchor, entry, k)) = best else {
                continue;
            };
            // The island's tree, breadth first from the switch cabled to the anchor.
            let index = list.len();
            let mut members = Vec::with_capacity(island.len());
            of[entry] = index;
            up[entry] = k;
            queue.push_back(entry);
            while let Some(x) = queue.pop_front() {
                members.push(x);
                for grp in &g.switches[x].groups {
                    let y = grp.peer as usize;
                    if aside(y) && of[y] == usize::MAX {
                        of[y] = index;
                        up[y] = grp.back as usize;
                        queue.push_back(y);
                    }
                }
            }
            list.push(Island {
                anchor,
                anchor_lid: own_lid[anchor].unwrap_or(0),
                down: g.switches[entry].groups[k].back as usize,
                members,
            });
        }
        Islands { of, up, list }
    }

    /// Sets every entry of the islands' switches and of the destinations on them (see
    /// [`Islands`]), over whatever `rows` held there; returns how many.
    pub(super) fn fill(&self, g: &Graph, rows: &mut [Vec<u8>]) -> usize {
        let nlids = rows.first().map_or(0, Vec::len);
        let mut set = 0;
        // Per island switch, its group toward the next switch on the way to a destination.
        let mut toward = vec![usize::MAX; g.switches.len()];
        for (i, island) in self.list.iter().enumerate() {
            let here = |lid: usize| {
                g.exits
                    .get(lid)
                    .copied()
                    .flatten()
                    .map(|e| self.of.get(e.sw as usize) == Some(&i))
            };
            for lid in 0..nlids {
                match here(lid) {
                    None => {}
                    // Elsewhere: up toward the anchor.
                    Some(false) => {
                        for &b in &island.members {
                            rows[b][lid] = port_toward(g, b, self.up[b], lid as u16);
                            set += 1;
                        }
                    }
                    // Here: as to the anchor, then down the island's tree.
                    Some(true) => {
                        let Some(exit) = g.exits[lid] else {
                            continue;
                        };
                        for (s, row) in rows.iter_mut().enumerate() {
                            if self.of[s] == usize::MAX && s != island.anchor {
                                row[lid] = row[island.anchor_lid];
                                set += 1;
                            }
                        }
                        rows[island.anchor][lid] =
                            port_toward(g, island.anchor, island.down, lid as u16);
                        let mut x = exit.sw as usize;
                        while self.up[x] != usize::MAX && x != island.members[0] {
                            let grp = &g.switches[x].groups[self.up[x]];
                            toward[grp.peer as usize] = grp.back as usize;
                            x = grp.peer as usize;
                        }
                        for &b in &island.members {
                            if b == exit.sw as usize {
                                continue;
                            }
                            let k = match toward[b] {
                                usize::MAX => self.up[b],
                                k => k,
                            };
                            rows[b][lid] = port_toward(g, b, k, lid as u16);
                            toward[b] = usize::MAX;
                            set += 1;
                        }
                    }
                }
            }
        }
        set
    }

    /// The note saying how `set` entries reach the islands, if any.
    pub(super) fn note(&self, f: &weft_fabric::Fabric, g: &Graph, set: usize) -> Option<RouteNote> {
        if set == 0 {
            return None;
        }
        let switches: usize = self.list.iter().map(|i| i.members.len()).sum();
        let mut anchors: Vec<usize> = self.list.iter().map(|i| i.anchor).collect();
        anchors.sort_unstable();
        anchors.dedup();
        let names: Vec<String> = anchors
            .iter()
            .take(3)
            .map(|&s| format!("`{}`", f.node(g.switches[s].id).name()))
            .collect();
        let more = match anchors.len().saturating_sub(3) {
            0 => String::new(),
            m => format!(" and {m} more"),
        };
        let message = if switches == 1 {
            format!(
                "{set} LFT entries route the switch set aside through the switch it hangs off ({}): every switch reaches it as it reaches that switch, and it reaches everything through that switch",
                names.join(", ")
            )
        } else {
            format!(
                "{set} LFT entries route the {switches} switches set aside through the switch{} they hang off ({}{more}): every switch reaches them as it reaches the switch they hang off, and they reach everything through it",
                if anchors.len() == 1 { "" } else { "es" },
                names.join(", ")
            )
        };
        Some(RouteNote {
            code: Code::SftreeSetAside,
            message,
        })
    }
}

/// Breadth-first completion of one destination's entries toward the switches that have one,
/// over the switches of the levels (the ones set aside are the islands').
pub(super) struct Bfs {
    queue: std::collections::VecDeque<usize>,
    seen: Vec<bool>,
    aside: Vec<bool>,
}

impl Bfs {
    pub(super) fn new(t: &Tree) -> Bfs {
        Bfs {
            queue: std::collections::VecDeque::new(),
            seen: vec![false; t.level.len()],
            aside: t.level.iter().map(|&l| l == ASIDE).collect(),
        }
    }

    /// Every switch of the levels without an entry for `lid` that is linked to the switches
    /// having one gets the port toward a neighbour one hop nearer to them (lowest switch index
    /// first, so the result is deterministic). Returns how many entries were set.
    pub(super) fn complete(&mut self, g: &Graph, rows: &mut [Vec<u8>], lid: usize) -> usize {
        self.queue.clear();
        for (s, seen) in self.seen.iter_mut().enumerate() {
            *seen = self.aside[s] || entry(rows, s, lid) != LFT_UNSET;
            if *seen && !self.aside[s] {
                self.queue.push_back(s);
            }
        }
        let mut set = 0;
        while let Some(x) = self.queue.pop_front() {
            let Some(sw) = g.switches.get(x) else {
                continue;
            };
            for grp in &sw.groups {
                let y = grp.peer as usize;
                if self.seen.get(y).copied().unwrap_or(true) {
                    continue;
                }
                self.seen[y] = true;
                // y's group toward x.
                rows[y][lid] = port_toward(g, y, grp.back as usize, lid as u16);
                set += 1;
                self.queue.push_back(y);
            }
        }
        set
    }
}
