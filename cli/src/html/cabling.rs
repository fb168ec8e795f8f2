//! `weft diff --format html`: the found fabric drawn (as `weft report` draws a fabric), with
//! every cabling difference placed on it, and a table of the findings, each focusing its
//! own marks when clicked (or given as `#finding-N`).
//!
//! The end nodes a difference names (hosts, mostly: the drawing shows only switches) are
//! drawn as small circles under the switch they are cabled to; design nodes missing from
//! the fabric, and nodes cabled to nothing, in a row under the drawing.

use super::topo::{Mark, Topo};
use super::{n, page_styled, Shown, Style};
use crate::findings::{Finding, Level};
use maud::{html, Markup};
use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::{Fabric, Guid, NodeId};
use weft_formats::cabling::{Comparison, Difference, End};
use weft_formats::hostlist::natural_cmp;

/// What the page shows.
pub(crate) struct Input<'a> {
    /// The found fabric.
    pub found: &'a Fabric,
    /// The design, as given.
    pub design_name: String,
    /// The found fabric, as given.
    pub found_name: String,
    pub comparison: &'a Comparison,
    /// The comparison's findings: its differences in order, then its position notes.
    pub findings: &'a [Finding],
    /// The human output, shown in full at the end.
    pub text: &'a str,
}

/// Differences up to which every one is labelled on the drawing (beyond: the one focused).
const LABELLED: usize = 12;

/// The places of every node the differences name.
struct Places<'a> {
    f: &'a Fabric,
    topo: &'a Topo<'a>,
    /// Design node name → found node name.
    found_names: &'a BTreeMap<String, String>,
    /// Design nodes no found node matches.
    missing: BTreeSet<&'a str>,
    /// The found nodes design nodes match.
    matched: BTreeSet<&'a str>,
    /// End nodes drawn (in a row under the drawing), with their centres.
    ends: BTreeMap<NodeId, (f64, f64)>,
    /// Design nodes not on the fabric (in a row under the end nodes), with their centres.
    ghosts: BTreeMap<String, (f64, f64)>,
    /// The rows' titles: text and height.
    rows: Vec<(&'static str, f64)>,
    /// The drawing's size with the rows.
    size: (f64, f64),
}

/// Room per node in the rows under the drawing, and nodes a row at most.
const ROW_DX: f64 = 64.0;
const ROW_MAX: usize = 20;

impl<'a> Places<'a> {
    /// The found node a difference's node `name` (with `guid`) is: a design name when
    /// matched or missing, else a found node's (an unmatched found node of that name and
    /// GUID first: a design node may have its name).
    fn node(&self, name: &str, guid: Guid) -> Option<NodeId> {
        if let Some(id) = self.f.find(name) {
            if !self.matched.contains(name) && self.f.node(id).guid() == guid {
                return Some(id);
            }
        }
        if let Some(found) = self.found_names.get(name) {
            return self.f.find(found);
        }
        if self.missing.contains(name) {
            return None;
        }
        self.f.find(name)
    }

    fn at(&self, name: &str, guid: Guid) -> Option<(f64, f64)> {
        match self.node(name, guid) {
            Some(id) if self.f.node(id).is_switch() => self.topo.place(id),
            Some(id) => self.ends.get(&id).copied(),
            None => self.ghosts.get(name).copied(),
        }
    }

    /// Places every node `diffs` name: switches where the drawing has them; end nodes in a
    /// row under it, in the order of their switch's place, then by name; design nodes not
    /// on the fabric in a row under those.
    fn of(f: &'a Fabric, topo: &'a Topo<'a>, c: &'a Comparison) -> Places<'a> {
        let diffs = &c.differences;
        let missing: BTreeSet<&str> = diffs
            .iter()
            .filter_map(|d| match d {
                Difference::MissingNode(m) => Some(m.node.as_str()),
                _ => None,
            })
            .collect();
        let (w, h) = topo.size();
        let mut p = Places {
            f,
            topo,
            found_names: &c.found_names,
            missing,
            matched: c.found_names.values().map(String::as_str).collect(),
            ends: BTreeMap::new(),
            ghosts: BTreeMap::new(),
            rows: Vec::new(),
            size: (w, h),
        };
        let mut names: Vec<(&str, Guid)> = Vec::new();
        for d in diffs {
            match d {
                Difference::MissingNode(m) | Difference::ExtraNode(m) => {
                    names.push((&m.node, m.guid));
                }
                _ => names.extend(d.ends().iter().map(|e| (e.node.as_str(), e.guid))),
            }
        }
        names.sort_by(|a, b| natural_cmp(a.0, b.0).then(a.1.cmp(&b.1)));
        names.dedup();
        let mut end_nodes: Vec<(f64, NodeId)> = Vec::new();
        let mut ghosts: Vec<&str> = Vec::new();
        for (name, guid) in names {
            match p.node(name, guid) {
                Some(id) if f.node(id).is_switch() => {}
                Some(id) => {
                    // Cabled to nothing: after the rest.
                    let x = topo.place(id).map_or(f64::MAX, |q| q.0);
                    end_nodes.push((x, id));
                }
                None if !ghosts.contains(&name) => ghosts.push(name),
                None => {}
            }
        }
        end_nodes.sort_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then(natural_cmp(f.node(a.1).name(), f.node(b.1).name()))
        });
        end_nodes.dedup_by_key(|e| e.1);
        let mut y = h;
        let mut width = w;
        let mut row = |count: usize, y: &mut f64| -> Vec<(f64, f64)> {
            let per = count.clamp(1, ROW_MAX);
            let need = per as f64 * ROW_DX + 120.0;
            width = width.max(need);
            let x0 = (width - per as f64 * ROW_DX) / 2.0;
            let top = *y + 24.0;
            let out = (0..count)
                .map(|i| {
                    (
                        x0 + ROW_DX * ((i % per) as f64 + 0.5),
                        top + 20.0 + 44.0 * (i / per) as f64,
                    )
                })
                .collect();
            *y = top + 44.0 * count.div_ceil(per) as f64 + 10.0;
            out
        };
        if !end_nodes.is_empty() {
            p.rows.push(("end nodes the differences name", y + 20.0));
            let at = row(end_nodes.len(), &mut y);
            p.ends = end_nodes.iter().map(|e| e.1).zip(at).collect();
        }
        if !ghosts.is_empty() {
            p.rows.push(("in the design, not on the fabric", y + 20.0));
            let at = row(ghosts.len(), &mut y);
            p.ghosts = ghosts.into_iter().map(str::to_owned).zip(at).collect();
        }
        // Room on the right for the labels of the nodes there.
        p.size = (width + 180.0, y);
        p
    }

    /// The end nodes and the design's missing nodes, always shown.
    fn nodes_svg(&self) -> Markup {
        html! {
            @for (text, y) in &self.rows {
                text class="lvl" x="4" y=(n(*y)) { (text) }
            }
            @for (&id, &(x, y)) in &self.ends {
                @let name = self.f.node(id).name();
                @let short: String = name.chars().take(12).collect();
                circle class="end" cx=(n(x)) cy=(n(y)) r="5" { title { (Shown(name)) } }
                text class="end-t" x=(n(x)) y=(n(y + 15.0)) { (Shown(&short)) }
            }
            @for (name, &(x, y)) in &self.ghosts {
                @let short: String = name.chars().take(12).collect();
                rect class="ghost" x=(n(x - 11.0)) y=(n(y - 6.0)) width="22" height="12" rx="2" {
                    title { (Shown(name)) ": in the design, not on the fabric" }
                }
                text class="ghost-t" x=(n(x)) y=(n(y + 17.0)) { (Shown(&short)) }
            }
        }
    }
}

/// A difference's marks, appended to as it is drawn; whether any was placed.
#[derive(Default)]
struct Marks {
    svg: Vec<Markup>,
    placed: bool,
}

impl Marks {
    /// A line of `class` from `a` to `b` (the nodes those ends name), titled.
    fn line(&mut self, p: &Places<'_>, class: &str, a: &End, b: &End, title: &str) {
        let (Some(pa), Some(pb)) = (p.at(&a.node, a.guid), p.at(&b.node, b.guid)) else {
            return;
        };
        self.svg.push(html! {
            line class=(class) x1=(n(pa.0)) y1=(n(pa.1)) x2=(n(pb.0)) y2=(n(pb.1)) {
                title { (Shown(title)) }
            }
        });
        self.placed = true;
    }

    /// A label beside node `name`, `dy` lower.
    fn label(&mut self, p: &Places<'_>, (name, guid): (&str, Guid), dy: f64, text: &str) {
        if let Some((x, y)) = p.at(name, guid) {
            self.svg.push(html! {
                text class="dl" x=(n(x + 14.0)) y=(n(y - 8.0 + dy)) { (Shown(text)) }
            });
        }
    }

    /// A label at the middle of the cable `a`–`b`, `dy` lower.
    fn mid_label(&mut self, p: &Places<'_>, a: &End, b: &End, dy: f64, text: &str) {
        if let (Some(pa), Some(pb)) = (p.at(&a.node, a.guid), p.at(&b.node, b.guid)) {
            self.svg.push(html! {
                text class="dl" x=(n((pa.0 + pb.0) / 2.0 + 6.0)) y=(n((pa.1 + pb.1) / 2.0 - 4.0 + dy)) {
                    (Shown(text))
                }
            });
        }
    }

    /// A box round node `name`.
    fn ring(&mut self, p: &Places<'_>, class: &str, (name, guid): (&str, Guid)) {
        if let Some((x, y)) = p.at(name, guid) {
            self.svg.push(html! {
                rect class=(class) x=(n(x - 16.0)) y=(n(y - 11.0)) width="32" height="22" rx="4" {}
            });
            self.placed = true;
        }
    }
}

/// Difference `d`'s marks (the `k`th: its labels a few lines lower than the one before's,
/// so that labels at one node stay apart).
fn difference_svg(p: &Places<'_>, d: &Difference, k: usize) -> Marks {
    let msg = d.to_string();
    let dy = 10.0 * (k % 5) as f64;
    let mut m = Marks::default();
    match d {
        Difference::Miswired {
            a,
            b,
            a_joined,
            b_joined,
        } => {
            m.line(p, "expect", a, b, &format!("designed: {a} – {b}"));
            for (end, far, should) in [(a, a_joined, b), (b, b_joined, a)] {
                if let Some(far) = far {
                    m.line(p, "miswired", end, far, &msg);
                }
                let now = far
                    .as_ref()
                    .map_or_else(|| "nothing".to_owned(), ToString::to_string);
                m.label(
                    p,
                    (&end.node, end.guid),
                    dy,
                    &format!("{end} ↔ {now}, should join {should}"),
                );
            }
        }
        Difference::Missing { a, b } => {
            m.line(p, "missing", a, b, &msg);
            m.mid_label(p, a, b, dy, &format!("missing: {a} – {b}"));
        }
        Difference::Extra { a, b } => {
            m.line(p, "extra", a, b, &msg);
            m.mid_label(p, a, b, dy, &format!("extra: {a} – {b}"));
        }
        Difference::Speed {
            a,
            b,
            expected,
            found,
        } => {
            m.line(p, "rate", a, b, &msg);
            let text = format!("{} (design {})", found.as_str(), expected.as_str());
            m.mid_label(p, a, b, dy, &text);
        }
        Difference::Width {
            a,
            b,
            expected,
            found,
        } => {
            m.line(p, "rate", a, b, &msg);
            m.mid_label(p, a, b, dy, &format!("{found} (design {expected})"));
        }
        Difference::MissingNode(x) => {
            m.ring(p, "node-missing", (&x.node, x.guid));
            m.label(p, (&x.node, x.guid), dy, &format!("{}: missing", x.node));
        }
        Difference::ExtraNode(x) => {
            m.ring(p, "node-extra", (&x.node, x.guid));
            let text = format!("{}: not in the design", x.node);
            m.label(p, (&x.node, x.guid), dy, &text);
        }
    }
    m
}

/// The legend of the marks (`cabling.css` draws key `kI`).
fn legend() -> Markup {
    html! {
        div class="legend" {
            @for (k, what) in [
                "miswired: the cable as found",
                "miswired: the cable as designed",
                "missing cable",
                "extra cable (or node)",
                "another speed or width",
                "a switch matched by position (a note)",
            ].iter().enumerate() {
                span class={ "k k" (k) } {} (what)
            }
        }
    }
}

/// Every finding's marks on the drawing (the differences', then the position notes'), the
/// marks for the opened groups, and whether each finding was placed.
fn overlay(
    f: &Fabric,
    topo: &Topo<'_>,
    places: &Places<'_>,
    c: &Comparison,
) -> (Markup, Vec<Mark>, Vec<bool>) {
    let mut placed = Vec::new();
    let mut group_marks: Vec<Mark> = Vec::new();
    let mut diffs = Vec::new();
    for (k, d) in c.differences.iter().enumerate() {
        let m = difference_svg(places, d, k);
        placed.push(m.placed);
        diffs.push(m.svg);
        // In a grouped drawing, the switches it names are outlined in the opened groups.
        if topo.grouped_view() {
            let named: Vec<(&str, Guid)> = match d {
                Difference::MissingNode(m) | Difference::ExtraNode(m) => vec![(&m.node, m.guid)],
                _ => d.ends().iter().map(|e| (e.node.as_str(), e.guid)).collect(),
            };
            let mut nodes: Vec<NodeId> = named
                .into_iter()
                .filter_map(|(name, guid)| places.node(name, guid))
                .filter(|&id| f.node(id).is_switch())
                .collect();
            nodes.sort();
            nodes.dedup();
            group_marks.push(Mark {
                finding: k,
                nodes,
                ..Mark::default()
            });
        }
    }
    let notes: Vec<(Option<(f64, f64)>, &str)> = c
        .by_position
        .iter()
        .map(|p| {
            let at = places
                .f
                .find(&p.found.node)
                .filter(|&id| f.node(id).is_switch())
                .and_then(|id| topo.place(id));
            (at, p.design.as_str())
        })
        .collect();
    placed.extend(notes.iter().map(|(at, _)| at.is_some()));
    let svg = html! {
        (places.nodes_svg())
        @for (k, marks) in diffs.iter().enumerate() {
            g class="ov" data-f=(k) { @for m in marks { (m) } }
        }
        @for (j, (at, design)) in notes.iter().enumerate() {
            g class="ov" data-f=(c.differences.len() + j) {
                @if let Some((x, y)) = at {
                    rect class="note" x=(n(x - 16.0)) y=(n(y - 11.0)) width="32" height="22" rx="4" {}
                    text class="dl" x=(n(x + 14.0)) y=(n(y + 16.0)) { "= " (Shown(design)) }
                }
            }
        }
    };
    (svg, group_marks, placed)
}

/// The findings, each focusing its marks when clicked (when it was `placed`).
fn findings_html(findings: &[Finding], placed: &[bool]) -> Markup {
    html! {
        @if findings.is_empty() {
            p class="ok" { "No findings: nothing to place on the drawing." }
        } @else {
            p class="noprint" { "Click a finding to show it alone on the drawing; click again for all." }
            table class="findings" {
                tr { th { "#" } th { "code" } th { "finding" } }
                @for (k, x) in findings.iter().enumerate() {
                    tr id={ "finding-" (k) } {
                        td class="num" { (k + 1) }
                        td { code { (Shown(&x.code)) } }
                        td {
                            @if placed.get(k).copied().unwrap_or(false) {
                                a href="#topology" data-finding=(k) { (Shown(&x.message)) }
                            } @else {
                                (Shown(&x.message)) " (not placed on the drawing)"
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The page.
pub(crate) fn render(i: &Input<'_>) -> String {
    let f = i.found;
    let c = i.comparison;
    let topo = Topo::of(f);
    let places = Places::of(f, &topo, c);
    let (overlay, group_marks, placed) = overlay(f, &topo, &places, c);
    let errors = i
        .findings
        .iter()
        .filter(|x| x.level == Level::Error)
        .count();
    // Summary: differences by kind.
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &c.differences {
        *kinds.entry(crate::diff::code(d)).or_default() += 1;
    }
    if !c.by_position.is_empty() {
        kinds.insert("weft::node_matched_by_position", c.by_position.len());
    }
    let body = html! {
        h1 {
            "weft diff: " code { (Shown(&i.found_name)) } " against the design "
            code { (Shown(&i.design_name)) }
        }
        @if errors == 0 {
            p class="ok" id="verdict" {
                "No difference: " (Shown(&i.found_name)) " is cabled as " (Shown(&i.design_name))
                " says."
            }
        } @else {
            p class="bad" id="verdict" { (errors) " difference(s) from the design." }
        }
        @if !kinds.is_empty() {
            table {
                tr { th { "kind" } th { "count" } }
                @for (k, v) in &kinds {
                    tr { td { code { (k) } } td class="num" { (v) } }
                }
            }
        }
        h2 { "The fabric found, with the differences" }
        p { (topo.describe()) "." }
        (legend())
        (topo.rails_legend())
        div class=(if c.differences.len() <= LABELLED { "labelled" } else { "unlabelled" }) {
            (topo.svg_with(None, &[], overlay, places.size))
        }
        (topo.groups_html(&group_marks))
        h2 { "Findings" }
        (findings_html(i.findings, &placed))
        h2 { "The comparison as text" }
        details { summary { "weft diff" } pre { (Shown(i.text)) } }
    };
    page_styled(
        &format!("weft diff: {} against {}", i.found_name, i.design_name),
        Style::Cabling,
        body,
    )
}
