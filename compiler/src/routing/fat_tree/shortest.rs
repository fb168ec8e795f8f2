//! Shortest up*/down* entries: after a destination's column is built (main path, up entries,
//! secondary paths, climbs), every switch that an up*/down* path joins to the destination
//! routes it over a shortest one.
//!
//! On a tree with every cable in place the column already is shortest: a switch below a
//! main-path switch climbs to it, and turns at the lowest common ancestor. Where cables are
//! missing it is not: a leaf that lacks its cable to the main path's spine climbs toward the
//! main path's core and comes back down (two links more), though a spine it shares with the
//! destination's leaf joins them in two; and a spine of the destination's pod that is a child
//! of the main path's core routes up to that core rather than down to the leaf below it.
//!
//! [`Ladders`] holds, per exit switch, each switch's down distance (the links of the shortest
//! path that only descends to it; the switch is then an *ancestor*) and up*/down* distance (the
//! shortest path that climbs, then descends). [`Ladders::straighten`] then walks the switches
//! from the top level down and keeps an entry when it leads one link nearer (an ancestor down to an
//! ancestor, another switch up to a parent one nearer; a climb marker only when every parent
//! it may resolve to is one nearer), else sets the port toward one such neighbour, chosen by
//! the destination's LID among them (several parents: [`NEAR`], resolved in turn per switch). Every entry it sets goes down from an ancestor or up from
//! a switch that is not one, so the column still has no down→up turn: the routes it changes
//! add no channel dependency an up*/down* route may not have. On a *regular* exit (every
//! parent of a switch joined to it but not an ancestor is one link nearer: every exit of an
//! intact tree) the same walk reads tables instead of groups and passes climbs by
//! ([`Ladders::straighten_regular`]); the unit tests check it against the general walk on
//! every column they build.

use super::{Tree, ASIDE, CLIMB, DESCEND, NEAR};
use crate::routing::graph::Graph;
use rayon::prelude::*;
use weft_fabric::LFT_UNSET;

/// No path (or one longer than a `u8` holds).
const FAR: u8 = u8::MAX;

/// Per exit switch, every switch's (down distance, up*/down* distance) to it.
pub(super) struct Ladders {
    n: usize,
    /// `[exit × n + switch]`.
    dist: Vec<(u8, u8)>,
    /// Per exit: whether every parent of every switch joined to it but not an ancestor is one
    /// link nearer (an intact tree): an entry up, or a climb marker, is then a shortest step.
    regular: Vec<bool>,
    /// Per switch and port: the index of the port's group, [`NO_GROUP`] for none.
    group: Vec<[u8; 256]>,
    /// Per switch, the parents (the peers of its up groups, in `Tree::up` order):
    /// `parents[parent_at[s]..parent_at[s + 1]]`.
    parents: Vec<u32>,
    parent_at: Vec<u32>,
    /// Per switch, its ports in up groups: a bit set over port numbers.
    up_ports: Vec<[u64; 4]>,
    /// Per switch and port in a down group, the child it leads to ([`NO_CHILD`] for a port in
    /// none); empty when the switches are too many to number in a `u16` (then every exit
    /// takes the general walk).
    child: Vec<[u16; 256]>,
}

/// [`Ladders::child`] of a port that is in no down group.
const NO_CHILD: u16 = u16::MAX;

/// [`Ladders::group`] of a port that is in none.
const NO_GROUP: u8 = u8::MAX;

impl Ladders {
    /// The distances to every switch of the levels (a switch set aside has none).
    pub(super) fn of(g: &Graph, t: &Tree) -> Ladders {
        let n = g.switches.len();
        let mut parent_at = Vec::with_capacity(n + 1);
        let mut parents = Vec::new();
        parent_at.push(0);
        for (x, up) in t.up.iter().enumerate() {
            parents.extend(up.iter().map(|&k| g.switches[x].groups[k].peer));
            parent_at.push(parents.len() as u32);
        }
        let parents_of = |x: usize| -> &[u32] {
            let (a, b) = (parent_at[x] as usize, parent_at[x + 1] as usize);
            parents.get(a..b).unwrap_or_default()
        };
        // Per exit, the distances and whether the exit is regular: computed together, the
        // column still in cache.
        let per_exit: Vec<(Vec<(u8, u8)>, bool)> = (0..n)
            .into_par_iter()
            .map(|e| {
                let mut d = vec![(FAR, FAR); n];
                if t.level[e] == ASIDE {
                    return (d, true);
                }
                // Ancestors, climbing from the exit one level per link.
                d[e].0 = 0;
                let mut queue = std::collections::VecDeque::from([e]);
                while let Some(x) = queue.pop_front() {
                    let next = d[x].0.saturating_add(1);
                    for &p in parents_of(x) {
                        let p = p as usize;
                        if d[p].0 == FAR {
                            d[p].0 = next;
                            queue.push_back(p);
                        }
                    }
                }
                // Climb, then descend: from the top level down. Regular: every parent of a
                // switch joined to the exit but not an ancestor is one link nearer (the
                // largest of the parents' distances is the least).
                let mut regular = true;
                for &x in &t.top_down {
                    let (mut least, mut most) = (FAR, 0u8);
                    for &p in parents_of(x) {
                        let u = d[p as usize].1.saturating_add(1);
                        least = least.min(u);
                        most = most.max(u);
                    }
                    let down = d[x].0;
                    let updown = down.min(least);
                    d[x].1 = updown;
                    if updown != FAR && down != updown && most != updown {
                        regular = false;
                    }
                }
                (d, regular)
            })
            .collect();
        let mut dist = Vec::with_capacity(n * n);
        let mut regular = Vec::with_capacity(n);
        for (d, r) in per_exit {
            dist.extend_from_slice(&d);
            regular.push(r);
        }
        let group = g
            .switches
            .iter()
            .map(|sw| {
                let mut of = [NO_GROUP; 256];
                for (k, grp) in sw.groups.iter().enumerate() {
                    for &(mine, _) in &grp.ports {
                        of[usize::from(mine)] = u8::try_from(k).unwrap_or(NO_GROUP);
                    }
                }
                of
            })
            .collect();
        let up_ports = (0..n)
            .map(|x| {
                let mut bits = [0u64; 4];
                for &k in &t.up[x] {
                    for &(mine, _) in &g.switches[x].groups[k].ports {
                        bits[usize::from(mine / 64)] |= 1 << (mine % 64);
                    }
                }
                bits
            })
            .collect();
        let child = if n < usize::from(NO_CHILD) {
            (0..n)
                .map(|x| {
                    let mut of = [NO_CHILD; 256];
                    for &k in &t.down[x] {
                        let grp = &g.switches[x].groups[k];
                        for &(mine, _) in &grp.ports {
                            of[usize::from(mine)] = grp.peer as u16;
                        }
                    }
                    of
                })
                .collect()
        } else {
            Vec::new()
        };
        Ladders {
            n,
            dist,
            regular,
            group,
            parents,
            parent_at,
            up_ports,
            child,
        }
    }

    /// The group of `s` that `port` belongs to.
    fn group_of(&self, s: usize, port: u8) -> Option<usize> {
        self.group
            .get(s)
            .map(|of| of[usize::from(port)])
            .filter(|&k| k != NO_GROUP)
            .map(usize::from)
    }

    /// Whether parent `p` of `s` is one link nearer to `exit` on a shortest up*/down* path.
    pub(super) fn nearer_up(&self, exit: usize, s: usize, p: usize) -> bool {
        let (down, updown) = self.at(exit, s);
        updown != FAR && down != updown && self.at(exit, p).1.saturating_add(1) == updown
    }

    fn at(&self, exit: usize, s: usize) -> (u8, u8) {
        self.dist
            .get(exit * self.n + s)
            .copied()
            .unwrap_or((FAR, FAR))
    }

    /// Makes every entry of `col` (the column of `lid`, leaving the switches at `exit`) a step
    /// of a shortest up*/down* path wherever one exists; returns the entries changed.
    pub(super) fn straighten(
        &self,
        g: &Graph,
        t: &Tree,
        exit: usize,
        lid: usize,
        col: &mut [u8],
    ) -> usize {
        if t.level.get(exit).is_none_or(|&l| l == ASIDE) {
            return 0;
        }
        if !self.regular.get(exit).copied().unwrap_or(false) || self.child.is_empty() {
            return self.straighten_anywhere(g, t, exit, lid, col);
        }
        #[cfg(test)]
        let expected = {
            let mut c = col.to_vec();
            let n = self.straighten_anywhere(g, t, exit, lid, &mut c);
            (n, c)
        };
        let changed = self.straighten_regular(g, t, exit, lid, col);
        #[cfg(test)]
        assert!(
            expected.0 == changed && expected.1 == col,
            "straighten_regular differs from the general walk for LID {lid} (exit {exit})"
        );
        changed
    }

    /// [`Ladders::straighten`] for a regular exit (every parent of a switch joined to it but
    /// not an ancestor is one link nearer), with the same result as the general walk, by
    /// tables instead of group look-ups: an ancestor keeps a port down to a child that is an
    /// ancestor one link nearer (its [`Ladders::child`]); any other switch joined to the exit
    /// keeps a port up (every parent is nearer), [`NEAR`], a [`CLIMB`] (`column` sets one only
    /// where a parent has an entry, and no entry is unset after, so the general walk keeps it:
    /// not looked at), or a [`DESCEND`] to a parent that goes up itself; the rest are set as
    /// the general walk sets them.
    fn straighten_regular(
        &self,
        g: &Graph,
        t: &Tree,
        exit: usize,
        lid: usize,
        col: &mut [u8],
    ) -> usize {
        let Some(d) = self.dist.get(exit * self.n..(exit + 1) * self.n) else {
            return 0;
        };
        let up_port = |x: usize, port: u8| {
            self.up_ports
                .get(x)
                .is_some_and(|b| b[usize::from(port / 64)] >> (port % 64) & 1 == 1)
        };
        let mut changed = 0;
        for &s in &t.top_down {
            let (down, updown) = d[s];
            if s == exit || updown == 0 || updown == FAR {
                continue;
            }
            let e = col[s];
            if down != updown && (e == CLIMB || e == NEAR) {
                // A climb: `column` sets one only where a parent has an entry, and no entry
                // is unset after (the general walk keeps it for that parent).
                continue;
            }
            if down == updown {
                // An ancestor: down to a child one link nearer.
                if e == NEAR {
                    continue;
                }
                if e < NEAR {
                    let c = self.child[s][usize::from(e)];
                    if c != NO_CHILD && d[usize::from(c)].0.saturating_add(1) == down {
                        continue;
                    }
                }
                let sw = &g.switches[s];
                let good = t.down[s]
                    .iter()
                    .copied()
                    .filter(|&k| d[sw.groups[k].peer as usize].0.saturating_add(1) == down);
                let count = good.clone().count();
                let Some(k) = good.clone().nth(lid % count.max(1)) else {
                    continue;
                };
                col[s] = super::columns::port_toward(g, s, k, lid as u32);
                changed += 1;
                continue;
            }
            let parents = self
                .parents
                .get(self.parent_at[s] as usize..self.parent_at[s + 1] as usize)
                .unwrap_or_default();
            let keep = match e {
                LFT_UNSET => false,
                CLIMB => parents.iter().any(|&p| col[p as usize] != LFT_UNSET),
                DESCEND => parents.iter().any(|&p| {
                    let pe = col[p as usize];
                    pe == DESCEND || (pe < NEAR && up_port(p as usize, pe))
                }),
                port => up_port(s, port),
            };
            if keep {
                continue;
            }
            col[s] = match t.up[s].as_slice() {
                [] => continue,
                [k] => super::columns::port_toward(g, s, *k, lid as u32),
                _ => NEAR,
            };
            changed += 1;
        }
        changed
    }

    /// [`Ladders::straighten`] on any exit: every switch's neighbours looked up by group.
    fn straighten_anywhere(
        &self,
        g: &Graph,
        t: &Tree,
        exit: usize,
        lid: usize,
        col: &mut [u8],
    ) -> usize {
        let mut changed = 0;
        // From the top level down: a switch's parents are settled before it (an ancestor's
        // entry depends on the distances only).
        for &s in &t.top_down {
            let (down, updown) = self.at(exit, s);
            if s == exit || updown == 0 || updown == FAR {
                continue;
            }
            let sw = &g.switches[s];
            let peer = |k: usize| sw.groups[k].peer as usize;
            // A neighbour one link nearer: an ancestor's child that is an ancestor, or (not
            // an ancestor) a parent one link nearer.
            let ancestor = down == updown;
            let nearer = |k: usize| {
                let (d, u) = self.at(exit, peer(k));
                if ancestor {
                    d.saturating_add(1) == down
                } else {
                    u.saturating_add(1) == updown
                }
            };
            let ways: &[usize] = if ancestor { &t.down[s] } else { &t.up[s] };
            let regular = self.regular.get(exit).copied().unwrap_or(false);
            // Whether group `k` of switch `x` goes up (`up`) or down, between levels.
            let between = |x: usize, k: usize, up: bool| {
                let p = g.switches[x].groups[k].peer as usize;
                let (a, b) = (t.level[x], t.level[p]);
                a != ASIDE && b != ASIDE && if up { b == a + 1 } else { a == b + 1 }
            };
            let e = col[s];
            // The parents `resolve_climbs` may choose for a climb marker.
            let candidate = |k: usize| {
                let p = peer(k);
                let pe = col[p];
                if e == CLIMB {
                    pe != LFT_UNSET
                } else {
                    pe == DESCEND
                        || (pe < NEAR && self.group_of(p, pe).is_some_and(|u| between(p, u, true)))
                }
            };
            let keep = match e {
                LFT_UNSET => false,
                NEAR => true,
                // On an intact tree every parent is one link nearer: any climb is, when there
                // is a parent to climb to.
                CLIMB | DESCEND if regular => !ancestor && t.up[s].iter().any(|&k| candidate(k)),
                // Otherwise all the parents it may climb to are one link nearer, and one at least.
                CLIMB | DESCEND => {
                    let mut any = false;
                    let mut all = true;
                    for &k in t.up[s].iter().filter(|&&k| candidate(k)) {
                        any = true;
                        all &= !ancestor && nearer(k);
                    }
                    any && all
                }
                port => self
                    .group_of(s, port)
                    .is_some_and(|k| between(s, k, !ancestor) && nearer(k)),
            };
            if keep {
                continue;
            }
            let good: Vec<usize> = ways.iter().copied().filter(|&k| nearer(k)).collect();
            col[s] = match good.as_slice() {
                [] => continue,
                // Several parents: chosen per switch, in turn ([`NEAR`]).
                [_, _, ..] if !ancestor => NEAR,
                many => {
                    let k = many.get(lid % many.len()).copied().unwrap_or(0);
                    super::columns::port_toward(g, s, k, lid as u32)
                }
            };
            changed += 1;
        }
        changed
    }
}

impl Ladders {
    /// Where no up*/down* path joins a leaf with hosts to a host, the route needs a down→up
    /// turn, and sFtree makes it at the subtree root (far from both ends, in another unit).
    /// Walking each such route from the leaf, a switch without an up*/down* path of its own is
    /// set toward the neighbour whose route is shortest, among those one link shorter than its
    /// own at least, whose turn closes no cycle in the channel dependency graph of the tables
    /// (every switch a source): the dependencies the new entry adds (from each channel that
    /// brings the destination into the switch, and onward from the neighbour) are added to
    /// that graph only when none closes a cycle. The route then turns at the nearest switch
    /// that keeps the tables deadlock-free, not always at the root. `hosts` says which LIDs
    /// are hosts' (service nodes are not: their routes are left as they are). Returns the
    /// entries changed.
    pub(super) fn shorten_turns(
        &self,
        g: &Graph,
        t: &Tree,
        rows: &mut [Vec<u8>],
        hosts: impl Fn(usize) -> bool,
    ) -> usize {
        let n = g.switches.len();
        let leaves: Vec<usize> = (0..n)
            .filter(|&s| g.switches[s].has_hosts && t.level[s] != ASIDE)
            .collect();
        // Per destination, the leaves with hosts no up*/down* path joins to it.
        let far = |exit: usize| -> Vec<usize> {
            leaves
                .iter()
                .copied()
                .filter(|&s| s != exit && self.at(exit, s).1 == FAR)
                .collect()
        };
        let wanted: Vec<(usize, usize, Vec<usize>)> = g
            .exits
            .iter()
            .enumerate()
            .filter_map(|(lid, e)| {
                let e = (*e)?;
                let exit = e.sw as usize;
                if e.port == 0 || t.level[exit] == ASIDE || !hosts(lid) {
                    return None;
                }
                let from = far(exit);
                (!from.is_empty()).then_some((lid, exit, from))
            })
            .collect();
        if wanted.is_empty() {
            return 0;
        }
        let ch = g.channels();
        let deps = g.dependencies(&ch, rows);
        let Some(mut cdg) = crate::routing::acyclic::Acyclic::new(ch.count(), ch.edges(&deps))
        else {
            return 0;
        };
        drop(deps);
        let mut changes: Vec<(usize, usize, u8)> = Vec::new();
        let mut dist = vec![0u32; n];
        let mut added: Vec<(u32, u32)> = Vec::new();
        for (lid, exit, from) in wanted {
            for leaf in from {
                super::acyclic::route_hops(&ch, rows, &mut dist, lid);
                let mut x = leaf;
                for _ in 0..n {
                    if x == exit || dist[x] >= super::acyclic::NO_ENTRY {
                        break;
                    }
                    if self.at(exit, x).1 == FAR {
                        // Neighbours with a shorter route, shortest first (then group order).
                        let mut toward: Vec<(u32, usize)> = g.switches[x]
                            .groups
                            .iter()
                            .enumerate()
                            .filter(|(_, grp)| {
                                let y = grp.peer as usize;
                                t.level[y] != ASIDE && dist[y].saturating_add(1) < dist[x]
                            })
                            .map(|(k, grp)| (dist[grp.peer as usize], k))
                            .collect();
                        toward.sort_unstable();
                        let turned = toward.into_iter().find_map(|(_, k)| {
                            let port = super::columns::port_toward(g, x, k, lid as u32);
                            let out = ch.id(x, port)? as u32;
                            let grp = &g.switches[x].groups[k];
                            let y = grp.peer as usize;
                            added.clear();
                            let mut new: Vec<(u32, u32)> = Vec::new();
                            if let Some(next) = ch.id(y, super::acyclic::entry(rows, y, lid)) {
                                new.push((out, next as u32));
                            }
                            for into in &g.switches[x].groups {
                                let w = into.peer as usize;
                                for &(_, theirs) in &into.ports {
                                    if super::acyclic::entry(rows, w, lid) == theirs {
                                        if let Some(c) = ch.id(w, theirs) {
                                            new.push((c as u32, out));
                                        }
                                    }
                                }
                            }
                            for &(a, b) in &new {
                                if cdg.contains(a, b) {
                                    continue;
                                }
                                if !cdg.insert(a, b) {
                                    for &(a, b) in &added {
                                        cdg.remove(a, b);
                                    }
                                    return None;
                                }
                                added.push((a, b));
                            }
                            Some(port)
                        });
                        if let Some(port) = turned {
                            changes.push((x, lid, rows[x][lid]));
                            rows[x][lid] = port;
                            break;
                        }
                    }
                    let next = ch.peer(x, super::acyclic::entry(rows, x, lid));
                    if next == u32::MAX {
                        break;
                    }
                    x = next as usize;
                }
            }
        }
        // The graph kept every dependency the old entries had, so it holds the new tables'
        // and more; checked once more on the tables themselves.
        if !changes.is_empty() && g.first_cycle(rows).is_some() {
            for &(s, lid, old) in changes.iter().rev() {
                rows[s][lid] = old;
            }
            return 0;
        }
        changes.len()
    }
}

#[cfg(test)]
mod tests {
    //! [`Ladders::straighten`] checks its regular walk against the general one on every
    //! column of a test build (an assertion compiled into tests only): these builds give it
    //! intact, degraded and oversubscribed trees.

    use crate::{check, NoFiles};

    fn build(src: &str) {
        let c = check("t.weft", src, &NoFiles);
        assert!(!c.has_errors(), "{:?}", c.diagnostics);
        let e = c.elaborated.unwrap();
        if let Err(d) = crate::build::build(&e) {
            panic!("build failed: {d:?}");
        }
    }

    fn xgft(m: &str, w: &str, faults: &str) -> String {
        format!(
            "use std::hardware::{{sb7800, connectx5}}\nuse std::topology::xgft\nfabric t {{\n    topology = xgft(h: 3, m: [{m}], w: [{w}], switch: sb7800, hca: connectx5)\n    faults {{\n{faults}    }}\n    routing {{ engine = fat_tree }}\n}}\n"
        )
    }

    fn example(name: &str) -> String {
        let path = format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn the_regular_walk_straightens_as_the_general_one_on_intact_trees() {
        build(&xgft("4, 4, 4", "1, 4, 4", ""));
        build(&xgft("2, 2, 2", "1, 2, 2", ""));
        build(&example("cluster-864-oversubscribed.weft"));
        build(&example("superpod-1su.weft"));
    }

    #[test]
    fn the_regular_walk_straightens_as_the_general_one_on_degraded_trees() {
        let healthy = xgft("4, 4, 4", "1, 4, 4", "");
        let c = check("t.weft", &healthy, &NoFiles);
        let f = c.elaborated.unwrap().fabric;
        let named = |level: u8| -> Vec<String> {
            f.nodes()
                .iter()
                .filter(|n| n.spec.level == Some(level))
                .map(|n| n.name().to_owned())
                .collect()
        };
        let (spines, cores) = (named(2), named(3));
        let mut faults = vec![
            format!("        link {}.p[1] down\n", cores[0]),
            format!(
                "        link {}.p[1] down\n        link {}.p[2] down\n",
                cores[0], cores[1]
            ),
            format!("        link {}.p[5] down\n", spines[0]),
            format!(
                "        link {}.p[5] down\n        link {}.p[3] down\n",
                spines[0], cores[2]
            ),
            format!("        switch {} down\n", cores[1]),
            format!("        switch {} down\n", spines[1]),
        ];
        faults.push(faults[2..4].concat());
        for fault in &faults {
            build(&xgft("4, 4, 4", "1, 4, 4", fault));
        }
    }

    /// The real dumps: Selene storage's cores reach several spines of a pod (ancestors the
    /// columns send up are set down), the NDT director's ASIC levels.
    #[test]
    fn the_regular_walk_straightens_as_the_general_one_on_real_dumps() {
        for name in ["ufm-selene-storage", "ufm-ndt-director-putty"] {
            let path = format!(
                "{}/../tests/fixtures/real/{name}.ibnetdiscover",
                env!("CARGO_MANIFEST_DIR")
            );
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let (program, _) = crate::import_ibnetdiscover(
                &text,
                "t.ibnd",
                crate::diagnostic::SourceId(0),
                None,
                "imported",
            )
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
            build(&program);
        }
    }
}
