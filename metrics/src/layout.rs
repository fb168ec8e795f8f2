//! The geometry of a fabric's drawing (`weft report --html` and the other HTML pages draw
//! it; the CLI renders): where each switch and service node goes, computed from the fabric
//! and its switches' levels (weft's fat-tree detection, which the caller runs).
//!
//! - **Trees** (two or more levels, and few cables join switches of one level): one row per
//!   level, the top level at the top; leaves ordered by pod (the switches below the top level
//!   that cables join, found as connected groups), then by name; every upper switch placed at
//!   the mean position of its children (its neighbours one level down), then by name. Service
//!   nodes (SHARP aggregation, storage, management) under their switch.
//! - **Large trees** (more than [`GROUP_ABOVE`] switches) are laid out grouped: one box per
//!   pod, the top level's switches in groups.
//! - **Other fabrics** (tori, meshes, rings, irregular): a force layout from a fixed start
//!   (no randomness, only correctly rounded arithmetic) for up to [`FORCE_UP_TO`] switches, a
//!   grid in name order beyond.
//!
//! A pure, deterministic function of the fabric and the levels: the same page on every machine.

use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::{Fabric, NodeId};
use weft_formats::hostlist::natural_cmp;
/// Switches above which a tree is drawn grouped by pod.
pub const GROUP_ABOVE: usize = 200;
/// Switches up to which a fabric that is not a tree gets a force layout.
pub const FORCE_UP_TO: usize = 400;
/// At most this many groups in all, of pods or of top switches.
const MAX_GROUPS: usize = 64;
/// At most this many group boxes a row.
const PER_ROW: usize = 18;

/// Horizontal room per switch in a row.
pub const DX: f64 = 30.0;
/// Room between rows.
pub const DY: f64 = 110.0;

/// A group of switches drawn as one box.
#[derive(Clone, Debug)]
pub struct Group {
    /// Its name (`pod 3`, `top 1`).
    pub name: String,
    /// Its switches.
    pub members: Vec<NodeId>,
    /// Centre in the main drawing.
    pub at: (f64, f64),
    /// Hosts cabled to its switches.
    pub hosts: usize,
    /// Service nodes cabled to its switches.
    pub services: usize,
}

/// How the fabric is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Rows by level.
    Tree,
    /// A force layout.
    Force,
    /// A grid in name order.
    Grid,
}

/// The laid-out fabric.
#[derive(Clone, Debug)]
pub struct Layout<'a> {
    /// The fabric.
    pub f: &'a Fabric,
    /// Per node index: a switch's level.
    pub level: Vec<Option<u8>>,
    /// The top level.
    pub top: u8,
    /// How it is drawn.
    pub kind: Kind,
    /// Centres of the nodes drawn one by one in the main drawing (switches and service
    /// nodes).
    pub pos: BTreeMap<NodeId, (f64, f64)>,
    /// Groups, when grouped (else empty).
    pub groups: Vec<Group>,
    /// Each grouped switch's group (an index into `groups`).
    pub group_of: BTreeMap<NodeId, usize>,
    /// Hosts per switch.
    pub hosts: BTreeMap<NodeId, usize>,
    /// The rails of each switch's hosts' HCAs.
    pub rails: BTreeMap<NodeId, BTreeSet<u8>>,
    /// Service nodes per switch (each under its first switch).
    pub services: BTreeMap<NodeId, Vec<NodeId>>,
    /// The drawing's width.
    pub w: f64,
    /// The drawing's height.
    pub h: f64,
}

/// Switches by name (naturally: `s2` before `s10`), then by id.
fn cmp_name(f: &Fabric, a: NodeId, b: NodeId) -> std::cmp::Ordering {
    natural_cmp(f.node(a).name(), f.node(b).name()).then(a.cmp(&b))
}

/// The switches cabled to each switch (once each, in node order).
pub fn switch_neighbours(f: &Fabric) -> BTreeMap<NodeId, BTreeSet<NodeId>> {
    let mut adj: BTreeMap<NodeId, BTreeSet<NodeId>> = BTreeMap::new();
    for l in f.links() {
        let (a, b) = (l.a.node, l.b.node);
        if a != b && f.node(a).is_switch() && f.node(b).is_switch() {
            adj.entry(a).or_default().insert(b);
            adj.entry(b).or_default().insert(a);
        }
    }
    adj
}

impl<'a> Layout<'a> {
    /// Lays out `f`, whose switches have the levels `level` (per node index; `None` for a
    /// node outside the levels, or every entry when the fabric is no tree).
    pub fn of(f: &'a Fabric, level: Vec<Option<u8>>) -> Layout<'a> {
        let lv = |id: NodeId| level.get(id.index()).copied().flatten();
        let mut switches: Vec<NodeId> = f.node_ids().filter(|&id| f.node(id).is_switch()).collect();
        switches.sort_by(|&a, &b| cmp_name(f, a, b));
        let top = switches.iter().filter_map(|&s| lv(s)).max().unwrap_or(0);
        let adj = switch_neighbours(f);
        let (mut same, mut cables) = (0usize, 0usize);
        for l in f.links() {
            let (a, b) = (l.a.node, l.b.node);
            if f.node(a).is_switch() && f.node(b).is_switch() {
                cables += 1;
                if lv(a).is_some() && lv(a) == lv(b) {
                    same += 1;
                }
            }
        }
        let leveled = switches.iter().filter(|&&s| lv(s).is_some()).count();
        let kind = if top >= 2 && leveled * 10 >= switches.len() * 9 && same * 10 <= cables {
            Kind::Tree
        } else if switches.len() <= FORCE_UP_TO {
            Kind::Force
        } else {
            Kind::Grid
        };
        let mut hosts: BTreeMap<NodeId, usize> = BTreeMap::new();
        let mut rails: BTreeMap<NodeId, BTreeSet<u8>> = BTreeMap::new();
        let mut services: BTreeMap<NodeId, Vec<NodeId>> = BTreeMap::new();
        let mut placed: BTreeSet<NodeId> = BTreeSet::new();
        for l in f.links() {
            for (end, sw) in [(l.a.node, l.b.node), (l.b.node, l.a.node)] {
                let node = f.node(end);
                if node.is_switch() || !f.node(sw).is_switch() {
                    continue;
                }
                if node.is_host() {
                    *hosts.entry(sw).or_default() += 1;
                    if let Some(r) = node.spec.rail {
                        rails.entry(sw).or_default().insert(r);
                    }
                } else if placed.insert(end) {
                    services.entry(sw).or_default().push(end);
                }
            }
        }
        let mut t = Layout {
            f,
            level,
            top,
            kind,
            pos: BTreeMap::new(),
            groups: Vec::new(),
            group_of: BTreeMap::new(),
            hosts,
            rails,
            services,
            w: 400.0,
            h: 200.0,
        };
        match kind {
            Kind::Tree if switches.len() > GROUP_ABOVE => t.grouped(&switches, &adj),
            Kind::Tree => {
                let (pos, w, h) = t.rows(&switches, &adj, 0.0);
                t.pos = pos;
                t.w = w;
                t.h = h;
                t.place_services();
            }
            Kind::Force => t.force(&switches, &adj),
            Kind::Grid => t.grid(&switches),
        }
        t
    }

    /// A switch's level.
    pub fn lv(&self, id: NodeId) -> Option<u8> {
        self.level.get(id.index()).copied().flatten()
    }

    /// The pods: the switches below the top level that cables join, grouped (in the order
    /// of their first switch by name), each sorted by name.
    fn pods(
        &self,
        switches: &[NodeId],
        adj: &BTreeMap<NodeId, BTreeSet<NodeId>>,
    ) -> Vec<Vec<NodeId>> {
        let below: BTreeSet<NodeId> = switches
            .iter()
            .copied()
            .filter(|&s| self.lv(s).is_some_and(|l| l < self.top))
            .collect();
        let mut seen: BTreeSet<NodeId> = BTreeSet::new();
        let mut pods = Vec::new();
        for &s in switches {
            if !below.contains(&s) || !seen.insert(s) {
                continue;
            }
            let mut pod = vec![s];
            let mut stack = vec![s];
            while let Some(x) = stack.pop() {
                for &y in adj.get(&x).into_iter().flatten() {
                    if below.contains(&y) && seen.insert(y) {
                        pod.push(y);
                        stack.push(y);
                    }
                }
            }
            pod.sort_by(|&a, &b| cmp_name(self.f, a, b));
            pods.push(pod);
        }
        pods
    }

    /// `switches` in rows by level (the top at the top), leaves by pod then name, every
    /// upper switch at the mean position of its children; switches outside the levels in a
    /// last row. Centres, and the width and height used, from `y0`.
    pub fn rows(
        &self,
        switches: &[NodeId],
        adj: &BTreeMap<NodeId, BTreeSet<NodeId>>,
        y0: f64,
    ) -> (BTreeMap<NodeId, (f64, f64)>, f64, f64) {
        let mut by_level: BTreeMap<u8, Vec<NodeId>> = BTreeMap::new();
        let mut outside = Vec::new();
        for &s in switches {
            match self.lv(s) {
                Some(l) => by_level.entry(l).or_default().push(s),
                None => outside.push(s),
            }
        }
        // Leaves in pod order.
        let pod_of: BTreeMap<NodeId, usize> = self
            .pods(switches, adj)
            .iter()
            .enumerate()
            .flat_map(|(i, p)| p.iter().map(move |&s| (s, i)))
            .collect();
        let mut order: BTreeMap<NodeId, f64> = BTreeMap::new();
        let mut rows: Vec<(u8, Vec<NodeId>)> = Vec::new();
        for (&l, members) in &by_level {
            let mut m = members.clone();
            if rows.is_empty() {
                m.sort_by(|&a, &b| {
                    pod_of
                        .get(&a)
                        .cmp(&pod_of.get(&b))
                        .then(cmp_name(self.f, a, b))
                });
            } else {
                let bary = |s: NodeId| -> f64 {
                    let xs: Vec<f64> = adj
                        .get(&s)
                        .into_iter()
                        .flatten()
                        .filter(|&&c| self.lv(c).is_some_and(|cl| cl < l))
                        .filter_map(|c| order.get(c).copied())
                        .collect();
                    if xs.is_empty() {
                        f64::MAX
                    } else {
                        xs.iter().sum::<f64>() / xs.len() as f64
                    }
                };
                let mut keyed: Vec<(f64, NodeId)> = m.iter().map(|&s| (bary(s), s)).collect();
                keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(cmp_name(self.f, a.1, b.1)));
                m = keyed.into_iter().map(|(_, s)| s).collect();
            }
            let count = m.len().max(1) as f64;
            for (i, &s) in m.iter().enumerate() {
                order.insert(s, i as f64 / count);
            }
            rows.push((l, m));
        }
        if !outside.is_empty() {
            outside.sort_by(|&a, &b| cmp_name(self.f, a, b));
            rows.insert(0, (0, outside));
        }
        let widest = rows.iter().map(|r| r.1.len()).max().unwrap_or(1).max(1);
        let w = widest as f64 * DX + 130.0;
        let mut pos = BTreeMap::new();
        let levels = rows.len();
        for (r, (_, m)) in rows.iter().enumerate() {
            // Rows from the top: the last level first.
            let y = y0 + 64.0 + DY * (levels - 1 - r) as f64;
            let x0 = 110.0 + (w - 130.0 - m.len() as f64 * DX) / 2.0;
            for (i, &s) in m.iter().enumerate() {
                pos.insert(s, (x0 + DX * (i as f64 + 0.5), y));
            }
        }
        (
            pos,
            w,
            y0 + 64.0 + DY * levels.saturating_sub(1) as f64 + 70.0,
        )
    }

    /// Service nodes under their switch, stacked.
    fn place_services(&mut self) {
        for (sw, list) in &self.services {
            let Some(&(x, y)) = self.pos.get(sw) else {
                continue;
            };
            for (i, &s) in list.iter().enumerate() {
                self.pos.insert(s, (x, y + 34.0 + 12.0 * i as f64));
            }
        }
        let lowest = self.pos.values().map(|p| p.1).fold(0.0, f64::max);
        self.h = self.h.max(lowest + 30.0);
    }

    /// A deterministic force layout: switches start on a circle in name order, then
    /// Fruchterman–Reingold with a fixed cooling schedule. Only `+ − × ÷` and `sqrt` are
    /// used (correctly rounded everywhere), never the platform's `sin`/`cos`, so the page is
    /// the same on every machine.
    fn force(&mut self, switches: &[NodeId], adj: &BTreeMap<NodeId, BTreeSet<NodeId>>) {
        let count = switches.len();
        let side = (80.0 * (count as f64).sqrt()).max(300.0);
        let index: BTreeMap<NodeId, usize> =
            switches.iter().enumerate().map(|(i, &s)| (s, i)).collect();
        // The circle's rational parametrisation, ((1 − u²)/(1 + u²), 2u/(1 + u²)) for u in
        // [−1, 1): the first half of the switches on its right half, the rest mirrored.
        let half = count.div_ceil(2).max(1);
        let mut p: Vec<(f64, f64)> = (0..count)
            .map(|i| {
                let (k, side_sign) = if i < half { (i, 1.0) } else { (i - half, -1.0) };
                let u = 2.0 * k as f64 / half as f64 - 1.0;
                let (c, s) = ((1.0 - u * u) / (1.0 + u * u), 2.0 * u / (1.0 + u * u));
                (
                    side / 2.0 * (1.0 + 0.8 * side_sign * c),
                    side / 2.0 * (1.0 + 0.8 * side_sign * s),
                )
            })
            .collect();
        let edges: Vec<(usize, usize)> = switches
            .iter()
            .flat_map(|s| {
                let i = index.get(s).copied().unwrap_or(0);
                adj.get(s)
                    .into_iter()
                    .flatten()
                    .filter_map(|t| index.get(t).copied())
                    .filter(move |&j| j > i)
                    .map(move |j| (i, j))
            })
            .collect();
        let k = side / (count.max(1) as f64).sqrt();
        let rounds = 200;
        for round in 0..rounds {
            let temp = side / 10.0 * (1.0 - round as f64 / rounds as f64) + 0.5;
            let mut d = vec![(0.0f64, 0.0f64); count];
            for i in 0..count {
                for j in (i + 1)..count {
                    let (Some(a), Some(b)) = (p.get(i), p.get(j)) else {
                        continue;
                    };
                    let (dx, dy) = (a.0 - b.0, a.1 - b.1);
                    let dist = (dx * dx + dy * dy).sqrt().max(0.01);
                    let f = k * k / dist;
                    let (fx, fy) = (dx / dist * f, dy / dist * f);
                    if let Some(x) = d.get_mut(i) {
                        x.0 += fx;
                        x.1 += fy;
                    }
                    if let Some(x) = d.get_mut(j) {
                        x.0 -= fx;
                        x.1 -= fy;
                    }
                }
            }
            for &(i, j) in &edges {
                let (Some(a), Some(b)) = (p.get(i), p.get(j)) else {
                    continue;
                };
                let (dx, dy) = (a.0 - b.0, a.1 - b.1);
                let dist = (dx * dx + dy * dy).sqrt().max(0.01);
                let f = dist * dist / k;
                let (fx, fy) = (dx / dist * f, dy / dist * f);
                if let Some(x) = d.get_mut(i) {
                    x.0 -= fx;
                    x.1 -= fy;
                }
                if let Some(x) = d.get_mut(j) {
                    x.0 += fx;
                    x.1 += fy;
                }
            }
            for (q, dq) in p.iter_mut().zip(&d) {
                let len = (dq.0 * dq.0 + dq.1 * dq.1).sqrt().max(0.01);
                let step = len.min(temp);
                q.0 = (q.0 + dq.0 / len * step).clamp(0.0, side);
                q.1 = (q.1 + dq.1 / len * step).clamp(0.0, side);
            }
        }
        self.fit(switches, &p);
    }

    /// Switches on a grid in name order.
    fn grid(&mut self, switches: &[NodeId]) {
        let cols = (switches.len() as f64).sqrt().ceil().max(1.0) as usize;
        let p: Vec<(f64, f64)> = (0..switches.len())
            .map(|i| ((i % cols) as f64 * 40.0, (i / cols) as f64 * 40.0))
            .collect();
        self.fit(switches, &p);
    }

    /// Positions `p` of `switches` moved into the drawing's margins; service nodes beside
    /// their switch.
    fn fit(&mut self, switches: &[NodeId], p: &[(f64, f64)]) {
        let minx = p.iter().map(|q| q.0).fold(f64::MAX, f64::min);
        let miny = p.iter().map(|q| q.1).fold(f64::MAX, f64::min);
        let maxx = p.iter().map(|q| q.0).fold(f64::MIN, f64::max);
        let maxy = p.iter().map(|q| q.1).fold(f64::MIN, f64::max);
        for (&s, q) in switches.iter().zip(p) {
            self.pos.insert(s, (q.0 - minx + 60.0, q.1 - miny + 40.0));
        }
        self.w = (maxx - minx).max(0.0) + 120.0;
        self.h = (maxy - miny).max(0.0) + 80.0;
        for (sw, list) in &self.services {
            let Some(&(x, y)) = self.pos.get(sw) else {
                continue;
            };
            for (i, &s) in list.iter().enumerate() {
                self.pos.insert(s, (x + 18.0 + 10.0 * i as f64, y + 14.0));
            }
        }
        self.h += 20.0;
    }

    /// Large trees: pods (merged into at most [`MAX_GROUPS`]) along the bottom, the top
    /// level's switches in groups along the top, switches outside the levels in one group.
    fn grouped(&mut self, switches: &[NodeId], adj: &BTreeMap<NodeId, BTreeSet<NodeId>>) {
        let pods = chunks(self.pods(switches, adj), MAX_GROUPS);
        let mut tops: Vec<NodeId> = switches
            .iter()
            .copied()
            .filter(|&s| self.lv(s) == Some(self.top))
            .collect();
        tops.sort_by(|&a, &b| cmp_name(self.f, a, b));
        let size = ((tops.len() as f64).sqrt().ceil() as usize).max(1);
        let top_groups = chunks(
            tops.chunks(1).map(<[NodeId]>::to_vec).collect(),
            tops.len().div_ceil(size).clamp(1, MAX_GROUPS),
        );
        let outside: Vec<NodeId> = switches
            .iter()
            .copied()
            .filter(|&s| self.lv(s).is_none())
            .collect();
        // At most PER_ROW boxes a row: the pods in rows under the top groups' rows.
        let row_w = |k: usize| k.min(PER_ROW) as f64 * 90.0;
        let w = row_w(pods.len().max(top_groups.len()).max(1)) + 120.0;
        let add = |name: String, members: Vec<NodeId>, at: (f64, f64), t: &mut Layout| {
            let i = t.groups.len();
            for &m in &members {
                t.group_of.insert(m, i);
            }
            let hosts = members
                .iter()
                .map(|m| t.hosts.get(m).copied().unwrap_or(0))
                .sum();
            let services = members
                .iter()
                .map(|m| t.services.get(m).map_or(0, Vec::len))
                .sum();
            t.groups.push(Group {
                name,
                members,
                at,
                hosts,
                services,
            });
        };
        // Box `i` of `k` in rows from `y`: its centre.
        let at = |i: usize, k: usize, y: f64| {
            let row = i / PER_ROW;
            let in_row = (k - row * PER_ROW).min(PER_ROW);
            let x = 60.0 + (w - 120.0 - row_w(in_row)) / 2.0 + 90.0 * ((i % PER_ROW) as f64 + 0.5);
            (x, y + 70.0 * row as f64)
        };
        let tk = top_groups.len();
        for (i, g) in top_groups.into_iter().enumerate() {
            add(format!("top {}", i + 1), g, at(i, tk, 50.0), self);
        }
        let pods_y = 50.0 + 70.0 * tk.div_ceil(PER_ROW).saturating_sub(1) as f64 + 200.0;
        let pk = pods.len();
        for (i, g) in pods.into_iter().enumerate() {
            add(format!("pod {}", i + 1), g, at(i, pk, pods_y), self);
        }
        let mut bottom = pods_y + 70.0 * pk.div_ceil(PER_ROW).saturating_sub(1) as f64;
        if !outside.is_empty() {
            bottom += 110.0;
            add(
                "outside the levels".to_owned(),
                outside,
                (w / 2.0, bottom),
                self,
            );
        }
        self.w = w;
        self.h = bottom + 50.0;
    }

    /// Where node `id` is drawn in the main drawing: its own centre, or its group's.
    pub fn at(&self, id: NodeId) -> Option<(f64, f64)> {
        if let Some(p) = self.pos.get(&id) {
            return Some(*p);
        }
        let sw = if self.f.node(id).is_switch() {
            id
        } else {
            // An end node: at its switch's place.
            self.f
                .node(id)
                .ports
                .iter()
                .find_map(|p| self.f.peer(weft_fabric::PortRef::new(id, p.num.0)))
                .map(|(far, _)| far.node)?
        };
        if let Some(p) = self.pos.get(&sw) {
            return Some(*p);
        }
        self.group_of
            .get(&sw)
            .and_then(|&g| self.groups.get(g))
            .map(|g| g.at)
    }
}

/// `items` merged in order into at most `max` lists.
fn chunks(items: Vec<Vec<NodeId>>, max: usize) -> Vec<Vec<NodeId>> {
    let max = max.max(1);
    if items.len() <= max {
        return items;
    }
    let per = items.len().div_ceil(max);
    items
        .chunks(per)
        .map(|c| c.iter().flatten().copied().collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_verifier::testkit;

    /// Per node: spines (`S…`) on level 2, leaves (`L…`) on 1, end nodes none.
    fn levels(f: &Fabric) -> Vec<Option<u8>> {
        f.nodes()
            .iter()
            .map(|n| match n.name().chars().next() {
                Some('S') => Some(2),
                Some('L') => Some(1),
                _ => None,
            })
            .collect()
    }

    fn named(f: &Fabric, name: &str) -> NodeId {
        f.node_ids().find(|&id| f.node(id).name() == name).unwrap()
    }

    /// A tree in rows: spines above leaves, leaves in name order one `DX` apart, each spine at
    /// the mean of the leaves it is cabled to (all of them here), hosts counted per leaf.
    #[test]
    fn a_tree_is_drawn_in_rows_by_level() {
        let f = testkit::fat_tree2(2, 4, 3);
        let l = Layout::of(&f, levels(&f));
        assert_eq!((l.kind, l.top), (Kind::Tree, 2));
        let at = |n: &str| l.at(named(&f, n)).unwrap();
        let leaves: Vec<(f64, f64)> = ["L1", "L2", "L3", "L4"].iter().map(|n| at(n)).collect();
        for w in leaves.windows(2) {
            assert_eq!((w[1].0 - w[0].0, w[1].1), (DX, w[0].1), "{leaves:?}");
        }
        let (s1, s2) = (at("S1"), at("S2"));
        assert!(s1.1 < leaves[0].1 && s1.1 == s2.1, "{s1:?} {leaves:?}");
        assert!(s1.0 < s2.0);
        // An end node is drawn at its switch.
        assert_eq!(at("H1"), leaves[0]);
        assert_eq!(l.hosts.get(&named(&f, "L2")), Some(&3));
        assert!(l.groups.is_empty() && l.w > 4.0 * DX && l.h > 0.0);
        // Without levels it is not a tree.
        let flat = Layout::of(&f, vec![None; f.nodes().len()]);
        assert_eq!(flat.kind, Kind::Force);
    }

    /// The force layout is the same every time, inside the drawing, and no two switches share
    /// a place.
    #[test]
    fn the_force_layout_is_deterministic_and_inside() {
        let f = testkit::ring(8, 1);
        let a = Layout::of(&f, vec![None; f.nodes().len()]);
        let b = Layout::of(&f, vec![None; f.nodes().len()]);
        assert_eq!(a.kind, Kind::Force);
        assert_eq!(a.pos, b.pos);
        let switches: Vec<(f64, f64)> = f
            .node_ids()
            .filter(|&id| f.node(id).is_switch())
            .map(|id| a.pos[&id])
            .collect();
        assert_eq!(switches.len(), 8);
        for (i, p) in switches.iter().enumerate() {
            assert!(
                p.0 >= 0.0 && p.0 <= a.w && p.1 >= 0.0 && p.1 <= a.h,
                "{p:?}"
            );
            for q in &switches[i + 1..] {
                assert!((p.0 - q.0).abs() + (p.1 - q.1).abs() > 1.0, "{p:?} {q:?}");
            }
        }
    }
}
