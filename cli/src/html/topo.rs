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

use super::{heat, n, rail_class, Shown};
use maud::{html, Markup};
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
    fn switch_svg(&self, s: NodeId, (x, y): (f64, f64), label: bool) -> Markup {
        let node = self.f.node(s);
        let hosts = self.hosts.get(&s).copied().unwrap_or(0);
        let mut class = String::from("sw");
        if self.lv(s) == Some(1) {
            class.push_str(" leaf");
        }
        if node.down {
            class.push_str(" down");
        }
        // A leaf whose hosts are all on one rail wears its colour.
        if let Some(r) = self.rails.get(&s).filter(|r| r.len() == 1) {
            for &r in r {
                class.push(' ');
                class.push_str(&rail_class(r));
            }
        }
        let lvl = self
            .lv(s)
            .map_or_else(|| "outside the levels".to_owned(), |l| format!("level {l}"));
        // Names wider than a box's room are written slanted, from the box's corner.
        let name: String = node.name().chars().take(16).collect();
        let (lx, ly) = (x - BW / 2.0 + 2.0, y - BH / 2.0 - 3.0);
        html! {
            rect class=(class) data-id=(s.index()) x=(n(x - BW / 2.0)) y=(n(y - BH / 2.0))
                width=(BW) height=(BH) rx="2" {
                title {
                    (Shown(node.name())) " (" (lvl) ", " (hosts) " host port(s)"
                    @if node.down { ", down" } ")"
                }
            }
            @if hosts > 0 {
                text class="hosts" x=(n(x)) y=(n(y + BH + 6.0)) { (hosts) }
            }
            @if label && name.chars().count() as f64 * 5.0 > DX {
                text class="lbl slant" x=(n(lx)) y=(n(ly))
                    transform={ "rotate(-35 " (n(lx)) " " (n(ly)) ")" } { (Shown(&name)) }
            } @else if label {
                text class="lbl" x=(n(x)) y=(n(ly)) { (Shown(&name)) }
            }
        }
    }

    fn service_svg(&self, s: NodeId, (x, y): (f64, f64)) -> Markup {
        let node = self.f.node(s);
        html! {
            path class="svc" data-id=(s.index()) d={ "M" (n(x)) " " (n(y - 5.0)) "l5 5l-5 5l-5-5z" } {
                title { (Shown(node.name())) " (" (node.role().keyword()) ")" }
            }
        }
    }

    /// Cables between switches drawn one by one (and to service nodes), grey; down ones
    /// dashed red.
    fn cables_svg(&self, pos: &BTreeMap<NodeId, (f64, f64)>) -> Markup {
        let mut seen: BTreeSet<(NodeId, NodeId, bool)> = BTreeSet::new();
        let mut lines = Vec::new();
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
            if let (Some(pa), Some(pb)) = (pos.get(&a), pos.get(&b)) {
                lines.push((down, *pa, *pb));
            }
        }
        html! {
            @for (down, pa, pb) in lines {
                line class={ "cable" @if down { " down" } } x1=(n(pa.0)) y1=(n(pa.1)) x2=(n(pb.0)) y2=(n(pb.1)) {}
            }
        }
    }

    /// Bundles between groups: cables between two groups, the hottest direction's load.
    fn heat_bundles(&self, loads: &LinkLoads, get: fn(&LinkLoad) -> u64) -> Markup {
        let max = loads.links.iter().map(get).max().unwrap_or(0);
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
        html! {
            @for ((ga, gb), (count, hot)) in &bundles {
                @if let (Some(a), Some(b)) = (self.groups.get(*ga), self.groups.get(*gb)) {
                    @let width = 1.0 + (*count as f64).log2().max(0.0);
                    line class="bundle" x1=(n(a.at.0)) y1=(n(a.at.1)) x2=(n(b.at.0)) y2=(n(b.at.1))
                        stroke=(heat(*hot, max)) stroke-width=(n(width.min(8.0))) {
                        title {
                            (Shown(&a.name)) " ↔ " (Shown(&b.name)) ": " (count)
                            " directed link(s), hottest " (hot)
                        }
                    }
                }
            }
        }
    }

    /// Each cable as two halves, each the colour of the direction leaving its end.
    fn heat_halves(&self, loads: &LinkLoads, get: fn(&LinkLoad) -> u64) -> Markup {
        let max = loads.links.iter().map(get).max().unwrap_or(0);
        let mut halves: BTreeMap<(NodeId, NodeId), u64> = BTreeMap::new();
        for l in &loads.links {
            let e = halves.entry((l.from.node, l.to.node)).or_default();
            *e = (*e).max(get(l));
        }
        html! {
            @for ((a, b), load) in &halves {
                @if let (Some(pa), Some(pb)) = (self.pos.get(a), self.pos.get(b)) {
                    @let mid = ((pa.0 + pb.0) / 2.0, (pa.1 + pb.1) / 2.0);
                    line x1=(n(pa.0)) y1=(n(pa.1)) x2=(n(mid.0)) y2=(n(mid.1)) stroke=(heat(*load, max)) {
                        title {
                            (Shown(self.f.node(*a).name())) " → " (Shown(self.f.node(*b).name()))
                            ": " (load)
                        }
                    }
                }
            }
        }
    }

    /// The heat maps of the main drawing, one `<g>` per pattern (the first shown).
    fn heat_svg(&self, loads: &LinkLoads) -> Markup {
        html! {
            @for (i, (key, name, get)) in PATTERNS.iter().enumerate() {
                g class={ "heat" @if i == 0 { " first" } @else { " off" } } data-heat=(key) {
                    title { (name) }
                    @if self.grouped_view() {
                        (self.heat_bundles(loads, *get))
                    } @else {
                        (self.heat_halves(loads, *get))
                    }
                }
            }
        }
    }

    /// The findings' marks: cycles, routes, named nodes.
    fn marks_svg(&self, marks: &[Mark], at: &dyn Fn(NodeId) -> Option<(f64, f64)>) -> Markup {
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
        html! {
            @for m in marks {
                // Findings through the same nodes (a ring's two loops, one each way) drawn a
                // few pixels apart, so that each stays visible.
                @let shift = (m.finding % 4) as f64 * 6.0;
                @let cycle = path(&m.cycle);
                @let route = path(&m.route);
                g class="ov" data-f=(m.finding) transform={ "translate(" (n(shift)) " " (n(shift)) ")" } {
                    @if cycle.len() >= 2 {
                        path class="loop" d=(d(&cycle, true)) {}
                        // The way the packets wait round it: an arrowhead halfway along each hop.
                        @for (a, b) in cycle.iter().zip(cycle.iter().cycle().skip(1))
                            .take(if cycle.len() == 2 { 1 } else { cycle.len() }) {
                            @let deg = (b.1 - a.1).atan2(b.0 - a.0).to_degrees();
                            path class="arrow" d="M-7 -5L5 0L-7 5z"
                                transform={ "translate(" (n((a.0 + b.0) / 2.0)) " " (n((a.1 + b.1) / 2.0)) ") rotate(" (n(deg)) ")" } {}
                        }
                    }
                    @if route.len() >= 2 {
                        path class="route" d=(d(&route, false)) {}
                    }
                    (Self::mark_boxes(m, at))
                    @if let Some(p) = m.route.last().and_then(|&id| at(id)) {
                        path class="x" d={ "M" (n(p.0 - 6.0)) " " (n(p.1 - 6.0)) "l12 12M" (n(p.0 + 6.0)) " " (n(p.1 - 6.0)) "l-12 12" } {}
                    }
                }
            }
        }
    }

    /// A box round each node a mark names or cycles through (once per place).
    fn mark_boxes(m: &Mark, at: &dyn Fn(NodeId) -> Option<(f64, f64)>) -> Markup {
        let mut done = BTreeSet::new();
        let mut places = Vec::new();
        for &id in m.nodes.iter().chain(&m.cycle) {
            let Some(p) = at(id) else { continue };
            if done.insert((n(p.0), n(p.1))) {
                places.push(p);
            }
        }
        html! {
            @for p in places {
                rect class="mark" x=(n(p.0 - BW / 2.0 - 4.0)) y=(n(p.1 - BH / 2.0 - 4.0))
                    width=(n(BW + 8.0)) height=(n(BH + 8.0)) rx="4" {}
            }
        }
    }

    /// The main drawing: cables, heat maps (when `loads`), switches or groups, marks.
    pub(crate) fn svg(&self, loads: Option<&LinkLoads>, marks: &[Mark]) -> Markup {
        self.svg_with(loads, marks, html! {}, (self.w, self.h))
    }

    /// The level names, one per row of a tree drawn by level.
    fn level_names(&self) -> Markup {
        let mut rows: BTreeMap<i64, u8> = BTreeMap::new();
        if self.kind == Kind::Tree {
            for (&s, p) in &self.pos {
                if self.f.node(s).is_switch() {
                    rows.insert(p.1.round() as i64, self.lv(s).unwrap_or(0));
                }
            }
        }
        html! {
            @for (y, l) in rows {
                text class="lvl" x="4" y=(y + 4) { (self.level_name(l)) }
            }
        }
    }

    /// The switches and service nodes of a drawing not grouped.
    fn nodes_svg(&self) -> Markup {
        let per_row: BTreeMap<i64, usize> =
            self.pos.iter().fold(BTreeMap::new(), |mut m, (_, p)| {
                *m.entry(p.1.round() as i64).or_default() += 1;
                m
            });
        html! {
            @for (&s, &p) in &self.pos {
                @if self.f.node(s).is_switch() {
                    @let label = self.kind != Kind::Tree
                        || per_row.get(&(p.1.round() as i64)).copied().unwrap_or(0) <= 40;
                    (self.switch_svg(s, p, label && self.pos.len() <= 400))
                } @else {
                    (self.service_svg(s, p))
                }
            }
        }
    }

    /// [`Topo::svg`], with `overlay` (SVG) drawn last, the drawing `(w, h)` large (at least
    /// its own size).
    pub(crate) fn svg_with(
        &self,
        loads: Option<&LinkLoads>,
        marks: &[Mark],
        overlay: Markup,
        (w, h): (f64, f64),
    ) -> Markup {
        let (w, h) = (w.max(self.w), h.max(self.h));
        html! {
            svg id="topology" class="topo" viewBox={ "0 0 " (n(w)) " " (n(h)) }
                width=(n(w.clamp(560.0, 1400.0))) role="img" aria-label="topology" {
                @if self.grouped_view() {
                    @if loads.is_none() { (self.bundles_plain()) }
                    @if let Some(l) = loads { (self.heat_svg(l)) }
                    @for (i, g) in self.groups.iter().enumerate() {
                        (self.group_box(i, g))
                    }
                } @else {
                    (self.cables_svg(&self.pos))
                    @if let Some(l) = loads { (self.heat_svg(l)) }
                    (self.level_names())
                    (self.nodes_svg())
                }
                (self.marks_svg(marks, &|id| self.at(id)))
                (overlay)
            }
        }
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
    fn bundles_plain(&self) -> Markup {
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
        html! {
            @for ((ga, gb), (count, down)) in &bundles {
                @if let (Some(a), Some(b)) = (self.groups.get(*ga), self.groups.get(*gb)) {
                    line class={ "cable bundle" @if *down { " down" } }
                        x1=(n(a.at.0)) y1=(n(a.at.1)) x2=(n(b.at.0)) y2=(n(b.at.1))
                        stroke-width=(n((1.0 + (*count as f64).log2().max(0.0)).min(8.0))) {
                        title {
                            (Shown(&a.name)) " ↔ " (Shown(&b.name)) ": " (count) " cable(s)"
                            @if *down { ", some down" }
                        }
                    }
                }
            }
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

    fn group_box(&self, i: usize, g: &Group) -> Markup {
        let (x, y) = g.at;
        html! {
            a href={ "#g-" (i) } {
                rect class="agg" data-gid=(i) x=(n(x - 40.0)) y=(n(y - 23.0)) width="80" height="46" rx="4" {
                    title {
                        (Shown(&g.name)) ": " (g.members.len()) " switches ("
                        (self.counts(&g.members)) "), " (g.hosts) " host port(s), "
                        (g.services) " service node(s)"
                    }
                }
                text class="agg-t" x=(n(x)) y=(n(y - 8.0)) { (Shown(&g.name)) }
                text class="agg-t" x=(n(x)) y=(n(y + 5.0)) { (g.members.len()) " sw" }
                @if g.hosts > 0 || g.services > 0 {
                    text class="agg-t" x=(n(x)) y=(n(y + 18.0)) {
                        (g.hosts) "h" @if g.services > 0 { " ◆" (g.services) }
                    }
                }
            }
        }
    }

    /// The groups, each a `<details>` holding its switches drawn by level (grouped views
    /// only).
    pub(crate) fn groups_html(&self, marks: &[Mark]) -> Markup {
        if !self.grouped_view() {
            return html! {};
        }
        let adj = switch_neighbours(self.f);
        html! {
            div class="groups" {
                @for (i, g) in self.groups.iter().enumerate() {
                    (self.group_details(i, g, &adj, marks))
                }
            }
        }
    }

    /// Group `i`, a `<details>` holding its switches drawn by level, with `marks` on those
    /// it holds.
    fn group_details(
        &self,
        i: usize,
        g: &Group,
        adj: &BTreeMap<NodeId, BTreeSet<NodeId>>,
        marks: &[Mark],
    ) -> Markup {
        let (mut pos, w, mut h) = self.rows(&g.members, adj, 0.0);
        for m in &g.members {
            let Some(&(x, y)) = pos.get(m) else { continue };
            for (k, &s) in self.services.get(m).into_iter().flatten().enumerate() {
                pos.insert(s, (x, y + 34.0 + 12.0 * k as f64));
                h = h.max(y + 60.0 + 12.0 * k as f64);
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
        html! {
            details class="group" id={ "g-" (i) } {
                summary {
                    (Shown(&g.name)) ": " (g.members.len()) " switches (" (self.counts(&g.members))
                    "), " (g.hosts) " host port(s)"
                    @if g.services > 0 { ", " (g.services) " service node(s)" }
                }
                svg class="topo sub" viewBox={ "0 0 " (n(w)) " " (n(h)) } width=(n(w.clamp(480.0, 1400.0))) {
                    (self.cables_svg(&pos))
                    @for (&s, &p) in &pos {
                        @if self.f.node(s).is_switch() {
                            (self.switch_svg(s, p, g.members.len() <= 40))
                        } @else {
                            (self.service_svg(s, p))
                        }
                    }
                    (self.marks_svg(&mine, &|id| pos.get(&id).copied()))
                }
            }
        }
    }

    /// The groups (as `data-g` ids) holding any of `nodes`.
    pub(crate) fn groups_of(&self, nodes: &BTreeSet<NodeId>) -> BTreeSet<usize> {
        nodes
            .iter()
            .filter_map(|s| self.group_of.get(s).copied())
            .collect()
    }

    /// The rails seen, for the legend.
    pub(crate) fn rails_legend(&self) -> Markup {
        let rails: BTreeSet<u8> = self.rails.values().flatten().copied().collect();
        let count: usize = self.services.values().map(Vec::len).sum();
        html! {
            @if !rails.is_empty() || !self.services.is_empty() {
                div class="legend" {
                    @if !rails.is_empty() {
                        span { "leaf outline: the rail of its hosts" }
                        @for r in rails {
                            span class={ "sw-c " (rail_class(r)) } {} "rail " (r)
                        }
                    }
                    @if !self.services.is_empty() {
                        " " span class="sw-c svc-c" {}
                        "service node (" (count) ": SHARP aggregation, storage, management)"
                    }
                }
            }
        }
    }
}
