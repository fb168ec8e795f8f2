//! The fabric drawn as inline SVG, where `weft_metrics::layout` places it.
//!
//! - **Trees** (weft's fat-tree detection finds two or more levels, and few cables join
//!   switches of one level): one row per level, the top level at the top; leaves ordered by
//!   pod (the switches below the top level that cables join, found as connected groups), then
//!   by name; every upper switch placed at the mean position of its children (its neighbours
//!   one level down), then by name. Leaves carry their host count and, when all their hosts
//!   are on one rail, the rail's colour; service nodes (SHARP aggregation, storage,
//!   management) are purple diamonds under their switch.
//! - **Large trees** (more than [`GROUP_ABOVE`](weft_metrics::layout::GROUP_ABOVE) switches) are drawn grouped: one box per pod,
//!   the top level's switches in groups, cables as bundles between boxes; each group opens
//!   (below the drawing) to its own switches.
//! - **Other fabrics** (tori, meshes, rings, irregular): a force layout from a fixed start
//!   (no randomness) for up to [`FORCE_UP_TO`](weft_metrics::layout::FORCE_UP_TO) switches, a grid in name order beyond.

use super::{esc, heat, n, rail_colour};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use weft_fabric::{Fabric, LinkState, NodeId};
use weft_metrics::layout::{switch_neighbours, Group, Kind, Layout, DX};
use weft_metrics::{LinkLoad, LinkLoads};

/// A switch box's size.
const BW: f64 = 22.0;
const BH: f64 = 12.0;
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

/// The laid-out fabric, drawn.
pub(crate) struct Topo<'a>(Layout<'a>);

impl<'a> std::ops::Deref for Topo<'a> {
    type Target = Layout<'a>;
    fn deref(&self) -> &Layout<'a> {
        &self.0
    }
}

impl<'a> Topo<'a> {
    /// Lays out `f` (its levels from weft's fat-tree detection).
    pub(crate) fn of(f: &'a Fabric) -> Topo<'a> {
        let level = weft_compiler::routing::shape::levels(f)
            .map(|l| l.level)
            .unwrap_or_else(|_| vec![None; f.nodes().len()]);
        Topo(Layout::of(f, level))
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
