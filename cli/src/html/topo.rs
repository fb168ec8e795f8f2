//! The fabric drawn as inline SVG.
//!
//! - **Trees** (weft's fat-tree detection finds two or more levels, and few cables join
//!   switches of one level): one row per level, the top level at the top; leaves ordered by
//!   pod (the switches below the top level that cables join, found as connected groups), then
//!   by name; every upper switch placed at the mean position of its children (its neighbours
//!   one level down), then by name. Leaves carry their host count and, when all their hosts
//!   are on one rail, the rail's colour; service nodes (SHARP aggregation, storage,
//!   management) are purple diamonds under their switch.
//! - **Large trees** (more than [`GROUP_ABOVE`] switches) are drawn grouped: one box per pod,
//!   the top level's switches in groups, cables as bundles between boxes; each group opens
//!   (below the drawing) to its own switches.
//! - **Other fabrics** (tori, meshes, rings, irregular): a force layout computed here from a
//!   fixed start (no randomness) for up to [`FORCE_UP_TO`] switches, a grid in name order
//!   beyond.

use super::{esc, heat, n, rail_colour};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use weft_fabric::{Fabric, LinkState, NodeId};
use weft_formats::hostlist::natural_cmp;
use weft_metrics::{LinkLoad, LinkLoads};

/// Switches above which a tree is drawn grouped by pod.
pub(crate) const GROUP_ABOVE: usize = 200;
/// Switches up to which a fabric that is not a tree gets a force layout.
pub(crate) const FORCE_UP_TO: usize = 400;
/// At most this many groups in all, of pods or of top switches.
const MAX_GROUPS: usize = 64;
/// At most this many group boxes a row.
const PER_ROW: usize = 18;

/// A switch box's size.
const BW: f64 = 22.0;
const BH: f64 = 12.0;
/// Horizontal room per switch in a row, and between rows.
const DX: f64 = 30.0;
const DY: f64 = 110.0;

/// A heat map: its key, name, and the load it takes from a link.
pub(crate) type Pattern = (&'static str, &'static str, fn(&LinkLoad) -> u64);

/// The heat maps drawn.
pub(crate) const PATTERNS: [Pattern; 3] = [
    ("a2a", "all-to-all", |l| l.all_to_all),
    ("shift", "shift (summed over shifts)", |l| l.shift),
    ("bisection", "bisections (summed)", |l| l.bisection),
];

/// What a finding puts on the drawing.
#[derive(Clone, Debug, Default)]
pub(crate) struct Mark {
    /// The finding's number in the page's list.
    pub finding: usize,
    /// Nodes it names.
    pub nodes: Vec<NodeId>,
    /// A credit loop's cycle, in order.
    pub cycle: Vec<NodeId>,
    /// A failed route's hops, in order, up to where it fails.
    pub route: Vec<NodeId>,
}

/// A group of switches drawn as one box.
struct Group {
    name: String,
    members: Vec<NodeId>,
    /// Centre in the main drawing.
    at: (f64, f64),
    hosts: usize,
    services: usize,
}

/// How the fabric is drawn.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tree,
    Force,
    Grid,
}

/// The laid-out fabric.
pub(crate) struct Topo<'a> {
    f: &'a Fabric,
    /// Per node index: a switch's level.
    level: Vec<Option<u8>>,
    top: u8,
    kind: Kind,
    /// Centres of the nodes drawn one by one in the main drawing (switches and service
    /// nodes).
    pos: BTreeMap<NodeId, (f64, f64)>,
    /// Groups, when grouped (else empty).
    groups: Vec<Group>,
    group_of: BTreeMap<NodeId, usize>,
    /// Hosts per switch, and the rails of their HCAs.
    hosts: BTreeMap<NodeId, usize>,
    rails: BTreeMap<NodeId, BTreeSet<u8>>,
    /// Service nodes per switch (each under its first switch).
    services: BTreeMap<NodeId, Vec<NodeId>>,
    w: f64,
    h: f64,
}

fn cmp_name(f: &Fabric, a: NodeId, b: NodeId) -> std::cmp::Ordering {
    natural_cmp(f.node(a).name(), f.node(b).name()).then(a.cmp(&b))
}

/// The switches cabled to each switch (once each, in node order).
fn switch_neighbours(f: &Fabric) -> BTreeMap<NodeId, BTreeSet<NodeId>> {
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

impl<'a> Topo<'a> {
    /// Lays out `f`.
    pub(crate) fn of(f: &'a Fabric) -> Topo<'a> {
        let level = weft_compiler::routing::shape::levels(f)
            .map(|l| l.level)
            .unwrap_or_else(|_| vec![None; f.nodes().len()]);
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
        let mut t = Topo {
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

    fn lv(&self, id: NodeId) -> Option<u8> {
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
    fn rows(
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
        let add = |name: String, members: Vec<NodeId>, at: (f64, f64), t: &mut Topo| {
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
    fn at(&self, id: NodeId) -> Option<(f64, f64)> {
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

    /// Whether the drawing is grouped.
    pub(crate) fn grouped_view(&self) -> bool {
        !self.groups.is_empty()
    }

    /// One sentence on how the fabric is drawn.
    pub(crate) fn describe(&self) -> String {
        let switches = self.f.switch_count();
        match self.kind {
            Kind::Tree if self.grouped_view() => format!(
                "{switches} switches in a tree of {} levels, drawn grouped: {} groups (pods below the top level, the top level's switches in groups); click a group, or open it below, for its switches",
                self.top,
                self.groups.len()
            ),
            Kind::Tree => format!(
                "{switches} switches in a tree of {} levels, drawn by level (leaves at the bottom)",
                self.top
            ),
            Kind::Force => format!(
                "{switches} switches, not a tree: drawn with a force layout (computed from a fixed start, the same each time)"
            ),
            Kind::Grid => format!("{switches} switches, not a tree: drawn on a grid in name order"),
        }
    }

    fn level_name(&self, l: u8) -> String {
        match l {
            0 => "outside the levels".to_owned(),
            1 => "level 1 (leaves)".to_owned(),
            l if l == self.top => format!("level {l} (top)"),
            l => format!("level {l}"),
        }
    }

    /// A switch's box.
    fn switch_svg(&self, t: &mut String, s: NodeId, (x, y): (f64, f64), label: bool) {
        let node = self.f.node(s);
        let hosts = self.hosts.get(&s).copied().unwrap_or(0);
        let mut class = String::from("sw");
        if self.lv(s) == Some(1) {
            class.push_str(" leaf");
        }
        if node.down {
            class.push_str(" down");
        }
        let style = match self.rails.get(&s) {
            Some(r) if r.len() == 1 => r
                .iter()
                .next()
                .map(|&r| format!(" style=\"stroke:{};stroke-width:2\"", rail_colour(r)))
                .unwrap_or_default(),
            _ => String::new(),
        };
        let lvl = self
            .lv(s)
            .map_or_else(|| "outside the levels".to_owned(), |l| format!("level {l}"));
        let _ = write!(
            t,
            "<rect class=\"{class}\" data-id=\"{}\" x=\"{}\" y=\"{}\" width=\"{BW}\" height=\"{BH}\" rx=\"2\"{style}><title>{} ({lvl}, {hosts} host port(s){})</title></rect>",
            s.index(),
            n(x - BW / 2.0),
            n(y - BH / 2.0),
            esc(node.name()),
            if node.down { ", down" } else { "" }
        );
        if hosts > 0 {
            let _ = write!(
                t,
                "<text class=\"hosts\" x=\"{}\" y=\"{}\">{hosts}</text>",
                n(x),
                n(y + BH + 6.0)
            );
        }
        if label {
            // Names wider than a box's room are written slanted, from the box's corner.
            let name: String = node.name().chars().take(16).collect();
            let (lx, ly) = (x - BW / 2.0 + 2.0, y - BH / 2.0 - 3.0);
            if name.chars().count() as f64 * 5.0 > DX {
                let _ = write!(
                    t,
                    "<text class=\"lbl slant\" x=\"{}\" y=\"{}\" transform=\"rotate(-35 {} {})\">{}</text>",
                    n(lx),
                    n(ly),
                    n(lx),
                    n(ly),
                    esc(&name)
                );
            } else {
                let _ = write!(
                    t,
                    "<text class=\"lbl\" x=\"{}\" y=\"{}\">{}</text>",
                    n(x),
                    n(ly),
                    esc(&name)
                );
            }
        }
    }

    fn service_svg(&self, t: &mut String, s: NodeId, (x, y): (f64, f64)) {
        let node = self.f.node(s);
        let _ = write!(
            t,
            "<path class=\"svc\" data-id=\"{}\" d=\"M{} {}l5 5l-5 5l-5-5z\"><title>{} ({})</title></path>",
            s.index(),
            n(x),
            n(y - 5.0),
            esc(node.name()),
            node.role().keyword()
        );
    }

    /// Cables between switches drawn one by one (and to service nodes), grey; down ones
    /// dashed red.
    fn cables_svg(&self, t: &mut String, pos: &BTreeMap<NodeId, (f64, f64)>) {
        let mut seen: BTreeSet<(NodeId, NodeId, bool)> = BTreeSet::new();
        for l in self.f.links() {
            let (a, b) = if l.a.node <= l.b.node {
                (l.a.node, l.b.node)
            } else {
                (l.b.node, l.a.node)
            };
            let down = l.state == LinkState::Down;
            if !seen.insert((a, b, down)) {
                continue;
            }
            let (Some(pa), Some(pb)) = (pos.get(&a), pos.get(&b)) else {
                continue;
            };
            let _ = write!(
                t,
                "<line class=\"cable{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                if down { " down" } else { "" },
                n(pa.0),
                n(pa.1),
                n(pb.0),
                n(pb.1)
            );
        }
    }

    /// The heat maps of the main drawing, one `<g>` per pattern (the first shown).
    fn heat_svg(&self, t: &mut String, loads: &LinkLoads) {
        for (i, (key, name, get)) in PATTERNS.iter().enumerate() {
            let max = loads.links.iter().map(get).max().unwrap_or(0);
            let _ = write!(
                t,
                "<g class=\"heat{}\" data-heat=\"{key}\" style=\"display:{}\"><title>{}</title>",
                if i == 0 { " first" } else { "" },
                if i == 0 { "inline" } else { "none" },
                esc(name)
            );
            if self.grouped_view() {
                // Bundles: cables between two groups, the hottest direction's colour.
                let mut bundles: BTreeMap<(usize, usize), (usize, u64)> = BTreeMap::new();
                for l in &loads.links {
                    let (Some(&ga), Some(&gb)) = (
                        self.group_of.get(&l.from.node),
                        self.group_of.get(&l.to.node),
                    ) else {
                        continue;
                    };
                    if ga == gb {
                        continue;
                    }
                    let e = bundles.entry((ga.min(gb), ga.max(gb))).or_default();
                    e.0 += 1;
                    e.1 = e.1.max(get(l));
                }
                for ((ga, gb), (count, hot)) in &bundles {
                    let (Some(a), Some(b)) = (self.groups.get(*ga), self.groups.get(*gb)) else {
                        continue;
                    };
                    let width = 1.0 + (*count as f64).log2().max(0.0);
                    let _ = write!(
                        t,
                        "<line class=\"bundle\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"><title>{} ↔ {}: {} directed link(s), hottest {hot}</title></line>",
                        n(a.at.0),
                        n(a.at.1),
                        n(b.at.0),
                        n(b.at.1),
                        heat(*hot, max),
                        n(width.min(8.0)),
                        esc(&a.name),
                        esc(&b.name),
                        count
                    );
                }
            } else {
                // Each cable as two halves, each the colour of the direction leaving its end.
                let mut halves: BTreeMap<(NodeId, NodeId), u64> = BTreeMap::new();
                for l in &loads.links {
                    let e = halves.entry((l.from.node, l.to.node)).or_default();
                    *e = (*e).max(get(l));
                }
                for ((a, b), load) in &halves {
                    let (Some(pa), Some(pb)) = (self.pos.get(a), self.pos.get(b)) else {
                        continue;
                    };
                    let mid = ((pa.0 + pb.0) / 2.0, (pa.1 + pb.1) / 2.0);
                    let _ = write!(
                        t,
                        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\"><title>{} → {}: {load}</title></line>",
                        n(pa.0),
                        n(pa.1),
                        n(mid.0),
                        n(mid.1),
                        heat(*load, max),
                        esc(self.f.node(*a).name()),
                        esc(self.f.node(*b).name())
                    );
                }
            }
            t.push_str("</g>");
        }
    }

    /// The findings' marks: cycles, routes, named nodes.
    fn marks_svg(&self, t: &mut String, marks: &[Mark], at: &dyn Fn(NodeId) -> Option<(f64, f64)>) {
        for m in marks {
            // Findings through the same nodes (a ring's two loops, one each way) drawn a few
            // pixels apart, so that each stays visible.
            let shift = (m.finding % 4) as f64 * 6.0;
            let _ = write!(
                t,
                "<g class=\"ov\" data-f=\"{}\" transform=\"translate({} {})\">",
                m.finding,
                n(shift),
                n(shift)
            );
            let path = |ids: &[NodeId]| -> Vec<(f64, f64)> {
                let mut v: Vec<(f64, f64)> = Vec::new();
                for &id in ids {
                    if let Some(p) = at(id) {
                        if v.last() != Some(&p) {
                            v.push(p);
                        }
                    }
                }
                v
            };
            let d = |pts: &[(f64, f64)], close: bool| -> String {
                let mut s = String::new();
                for (i, p) in pts.iter().enumerate() {
                    let _ = write!(
                        s,
                        "{}{} {} ",
                        if i == 0 { "M" } else { "L" },
                        n(p.0),
                        n(p.1)
                    );
                }
                if close {
                    s.push('Z');
                }
                s.trim_end().to_owned()
            };
            let cycle = path(&m.cycle);
            if cycle.len() >= 2 {
                let _ = write!(t, "<path class=\"loop\" d=\"{}\"/>", d(&cycle, true));
                // The way the packets wait round it: an arrowhead halfway along each hop.
                let hops = cycle.iter().zip(cycle.iter().cycle().skip(1));
                for (a, b) in hops.take(if cycle.len() == 2 { 1 } else { cycle.len() }) {
                    let deg = (b.1 - a.1).atan2(b.0 - a.0).to_degrees();
                    let _ = write!(
                        t,
                        "<path class=\"arrow\" d=\"M-7 -5L5 0L-7 5z\" transform=\"translate({} {}) rotate({})\"/>",
                        n((a.0 + b.0) / 2.0),
                        n((a.1 + b.1) / 2.0),
                        n(deg)
                    );
                }
            }
            let route = path(&m.route);
            if route.len() >= 2 {
                let _ = write!(t, "<path class=\"route\" d=\"{}\"/>", d(&route, false));
            }
            let mut done = BTreeSet::new();
            for &id in m.nodes.iter().chain(&m.cycle) {
                let Some(p) = at(id) else { continue };
                if !done.insert((n(p.0), n(p.1))) {
                    continue;
                }
                let _ = write!(
                    t,
                    "<rect class=\"mark\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"4\"/>",
                    n(p.0 - BW / 2.0 - 4.0),
                    n(p.1 - BH / 2.0 - 4.0),
                    n(BW + 8.0),
                    n(BH + 8.0)
                );
            }
            if let Some(p) = m.route.last().and_then(|&id| at(id)) {
                let _ = write!(
                    t,
                    "<path class=\"x\" d=\"M{} {}l12 12M{} {}l-12 12\"/>",
                    n(p.0 - 6.0),
                    n(p.1 - 6.0),
                    n(p.0 + 6.0),
                    n(p.1 - 6.0)
                );
            }
            t.push_str("</g>");
        }
    }

    /// The main drawing: cables, heat maps (when `loads`), switches or groups, marks.
    pub(crate) fn svg(&self, loads: Option<&LinkLoads>, marks: &[Mark]) -> String {
        self.svg_with(loads, marks, "", (self.w, self.h))
    }

    /// [`Topo::svg`], with `overlay` (SVG) drawn last, the drawing `(w, h)` large (at least
    /// its own size).
    pub(crate) fn svg_with(
        &self,
        loads: Option<&LinkLoads>,
        marks: &[Mark],
        overlay: &str,
        (w, h): (f64, f64),
    ) -> String {
        let (w, h) = (w.max(self.w), h.max(self.h));
        let mut t = String::new();
        let _ = write!(
            t,
            "<svg id=\"topology\" class=\"topo\" viewBox=\"0 0 {} {}\" width=\"{}\" role=\"img\" aria-label=\"topology\">",
            n(w),
            n(h),
            n(w.clamp(560.0, 1400.0))
        );
        if self.grouped_view() {
            if loads.is_none() {
                self.bundles_plain(&mut t);
            }
            if let Some(l) = loads {
                self.heat_svg(&mut t, l);
            }
            for (i, g) in self.groups.iter().enumerate() {
                self.group_box(&mut t, i, g);
            }
        } else {
            self.cables_svg(&mut t, &self.pos);
            if let Some(l) = loads {
                self.heat_svg(&mut t, l);
            }
            if self.kind == Kind::Tree {
                let mut rows: BTreeMap<i64, u8> = BTreeMap::new();
                for (&s, p) in &self.pos {
                    if self.f.node(s).is_switch() {
                        rows.insert(p.1.round() as i64, self.lv(s).unwrap_or(0));
                    }
                }
                for (y, l) in rows {
                    let _ = write!(
                        t,
                        "<text class=\"lvl\" x=\"4\" y=\"{}\">{}</text>",
                        y + 4,
                        esc(&self.level_name(l))
                    );
                }
            }
            let per_row: BTreeMap<i64, usize> =
                self.pos.iter().fold(BTreeMap::new(), |mut m, (_, p)| {
                    *m.entry(p.1.round() as i64).or_default() += 1;
                    m
                });
            for (&s, &p) in &self.pos {
                if self.f.node(s).is_switch() {
                    let label = self.kind != Kind::Tree
                        || per_row.get(&(p.1.round() as i64)).copied().unwrap_or(0) <= 40;
                    self.switch_svg(&mut t, s, p, label && self.pos.len() <= 400);
                } else {
                    self.service_svg(&mut t, s, p);
                }
            }
        }
        self.marks_svg(&mut t, marks, &|id| self.at(id));
        t.push_str(overlay);
        t.push_str("</svg>");
        t
    }

    /// Where node `id` is drawn in the main drawing (an end node: at its switch's place).
    pub(crate) fn place(&self, id: NodeId) -> Option<(f64, f64)> {
        self.at(id)
    }

    /// The main drawing's width and height.
    pub(crate) fn size(&self) -> (f64, f64) {
        (self.w, self.h)
    }

    /// Bundles between groups without loads: grey, as wide as their cable count.
    fn bundles_plain(&self, t: &mut String) {
        let mut bundles: BTreeMap<(usize, usize), (usize, bool)> = BTreeMap::new();
        for l in self.f.links() {
            let (Some(&ga), Some(&gb)) =
                (self.group_of.get(&l.a.node), self.group_of.get(&l.b.node))
            else {
                continue;
            };
            if ga != gb {
                let e = bundles.entry((ga.min(gb), ga.max(gb))).or_default();
                e.0 += 1;
                e.1 |= l.state == LinkState::Down;
            }
        }
        for ((ga, gb), (count, down)) in &bundles {
            let (Some(a), Some(b)) = (self.groups.get(*ga), self.groups.get(*gb)) else {
                continue;
            };
            let _ = write!(
                t,
                "<line class=\"cable bundle{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke-width=\"{}\"><title>{} ↔ {}: {count} cable(s){}</title></line>",
                if *down { " down" } else { "" },
                n(a.at.0),
                n(a.at.1),
                n(b.at.0),
                n(b.at.1),
                n((1.0 + (*count as f64).log2().max(0.0)).min(8.0)),
                esc(&a.name),
                esc(&b.name),
                if *down { ", some down" } else { "" }
            );
        }
    }

    /// Counts per level of a group's members, "18 × L1 · 18 × L2".
    fn counts(&self, members: &[NodeId]) -> String {
        let mut by: BTreeMap<u8, usize> = BTreeMap::new();
        for &m in members {
            *by.entry(self.lv(m).unwrap_or(0)).or_default() += 1;
        }
        by.iter()
            .map(|(l, c)| {
                if *l == 0 {
                    format!("{c} other")
                } else {
                    format!("{c} × L{l}")
                }
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }

    fn group_box(&self, t: &mut String, i: usize, g: &Group) {
        let (x, y) = g.at;
        let _ = write!(
            t,
            "<a href=\"#g-{i}\"><rect class=\"agg\" data-gid=\"{i}\" x=\"{}\" y=\"{}\" width=\"80\" height=\"46\" rx=\"4\"><title>{}: {} switches ({}), {} host port(s), {} service node(s)</title></rect><text class=\"agg-t\" x=\"{}\" y=\"{}\">{}</text><text class=\"agg-t\" x=\"{}\" y=\"{}\">{} sw</text>",
            n(x - 40.0),
            n(y - 23.0),
            esc(&g.name),
            g.members.len(),
            esc(&self.counts(&g.members)),
            g.hosts,
            g.services,
            n(x),
            n(y - 8.0),
            esc(&g.name),
            n(x),
            n(y + 5.0),
            g.members.len()
        );
        if g.hosts > 0 || g.services > 0 {
            let svc = if g.services > 0 {
                format!(" ◆{}", g.services)
            } else {
                String::new()
            };
            let _ = write!(
                t,
                "<text class=\"agg-t\" x=\"{}\" y=\"{}\">{}h{svc}</text>",
                n(x),
                n(y + 18.0),
                g.hosts
            );
        }
        t.push_str("</a>");
    }

    /// The groups, each a `<details>` holding its switches drawn by level (grouped views
    /// only).
    pub(crate) fn groups_html(&self, marks: &[Mark]) -> String {
        let mut t = String::new();
        if !self.grouped_view() {
            return t;
        }
        let adj = switch_neighbours(self.f);
        t.push_str("<div class=\"groups\">");
        for (i, g) in self.groups.iter().enumerate() {
            let (mut pos, w, mut h) = self.rows(&g.members, &adj, 0.0);
            for m in &g.members {
                let Some(&(x, y)) = pos.get(m) else { continue };
                for (k, &s) in self.services.get(m).into_iter().flatten().enumerate() {
                    pos.insert(s, (x, y + 34.0 + 12.0 * k as f64));
                    h = h.max(y + 60.0 + 12.0 * k as f64);
                }
            }
            let _ = write!(
                t,
                "<details class=\"group\" id=\"g-{i}\"><summary>{}: {} switches ({}), {} host port(s){}</summary><svg class=\"topo sub\" viewBox=\"0 0 {} {}\" width=\"{}\">",
                esc(&g.name),
                g.members.len(),
                esc(&self.counts(&g.members)),
                g.hosts,
                if g.services > 0 { format!(", {} service node(s)", g.services) } else { String::new() },
                n(w),
                n(h),
                n(w.clamp(480.0, 1400.0))
            );
            self.cables_svg(&mut t, &pos);
            for (&s, &p) in &pos {
                if self.f.node(s).is_switch() {
                    self.switch_svg(&mut t, s, p, g.members.len() <= 40);
                } else {
                    self.service_svg(&mut t, s, p);
                }
            }
            let mine: Vec<Mark> = marks
                .iter()
                .map(|m| Mark {
                    finding: m.finding,
                    nodes: m
                        .nodes
                        .iter()
                        .chain(&m.cycle)
                        .chain(&m.route)
                        .copied()
                        .filter(|x| pos.contains_key(x))
                        .collect(),
                    cycle: Vec::new(),
                    route: Vec::new(),
                })
                .filter(|m| !m.nodes.is_empty())
                .collect();
            self.marks_svg(&mut t, &mine, &|id| pos.get(&id).copied());
            t.push_str("</svg></details>");
        }
        t.push_str("</div>");
        t
    }

    /// The groups (as `data-g` ids) holding any of `nodes`.
    pub(crate) fn groups_of(&self, nodes: &BTreeSet<NodeId>) -> BTreeSet<usize> {
        nodes
            .iter()
            .filter_map(|s| self.group_of.get(s).copied())
            .collect()
    }

    /// The rails seen, for the legend.
    pub(crate) fn rails_legend(&self) -> String {
        let rails: BTreeSet<u8> = self.rails.values().flatten().copied().collect();
        let mut t = String::new();
        if rails.is_empty() && self.services.is_empty() {
            return t;
        }
        t.push_str("<div class=\"legend\">");
        if !rails.is_empty() {
            t.push_str("<span>leaf outline: the rail of its hosts</span>");
            for r in rails {
                let _ = write!(
                    t,
                    "<span class=\"sw-c\" style=\"background:{}\"></span>rail {r}",
                    rail_colour(r)
                );
            }
        }
        if !self.services.is_empty() {
            let count: usize = self.services.values().map(Vec::len).sum();
            let _ = write!(t, " <span class=\"sw-c\" style=\"background:#8250df\"></span>service node ({count}: SHARP aggregation, storage, management)");
        }
        t.push_str("</div>");
        t
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
