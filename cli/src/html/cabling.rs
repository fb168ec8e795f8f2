//! `weft diff --format html`: the found fabric drawn (as `weft report` draws a fabric), with
//! every cabling difference placed on it, and a table of the findings, each focusing its
//! own marks when clicked (or given as `#finding-N`).
//!
//! The end nodes a difference names (hosts, mostly: the drawing shows only switches) are
//! drawn as small circles under the switch they are cabled to; design nodes missing from
//! the fabric, and nodes cabled to nothing, in a row under the drawing.

use super::topo::{Mark, Topo};
use super::{esc, n, page_styled};
use crate::findings::{Finding, Level};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
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

/// The page's own style: one colour per kind of difference.
const STYLE: &str = r#"
.ov .miswired{stroke:#cf222e;stroke-width:3.5}.ov .expect{stroke:#1a7f37;stroke-width:2.5;stroke-dasharray:7 4}
.ov .missing{stroke:#8250df;stroke-width:3;stroke-dasharray:3 3}.ov .extra{stroke:#bf8700;stroke-width:3.5}
.ov .rate{stroke:#0969da;stroke-width:5;opacity:.8}.ov .note{fill:none;stroke:#0969da;stroke-width:2;stroke-dasharray:2 2}
.ov .node-extra{fill:none;stroke:#bf8700;stroke-width:3}.ov .node-missing{fill:none;stroke:#8250df;stroke-width:3}
.ov .dl{font-size:8px;fill:#1b1f24;paint-order:stroke;stroke:#fff;stroke-width:3px}.unlabelled .ov .dl{display:none}.unlabelled svg.focus .ov.on .dl{display:inline}
.end{fill:#fff;stroke:#57606a;stroke-width:1.2}.end-t{font-size:8px;fill:#57606a;text-anchor:middle}
.ghost{fill:#f6f8fa;stroke:#8250df;stroke-width:1.2;stroke-dasharray:3 2}.ghost-t{font-size:9px;fill:#8250df;text-anchor:middle}
.findings a.sel{font-weight:600;background:#fff8c5}
.k{display:inline-block;width:22px;height:0;margin:0 4px 3px 10px;border-top:3px solid}
"#;

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
    fn nodes_svg(&self, t: &mut String) {
        for (text, y) in &self.rows {
            let _ = write!(
                t,
                "<text class=\"lvl\" x=\"4\" y=\"{}\">{}</text>",
                n(*y),
                esc(text)
            );
        }
        for (&id, &(x, y)) in &self.ends {
            let name = self.f.node(id).name();
            let short: String = name.chars().take(12).collect();
            let _ = write!(
                t,
                "<circle class=\"end\" cx=\"{}\" cy=\"{}\" r=\"5\"><title>{}</title></circle><text class=\"end-t\" x=\"{}\" y=\"{}\">{}</text>",
                n(x),
                n(y),
                esc(name),
                n(x),
                n(y + 15.0),
                esc(&short)
            );
        }
        for (name, &(x, y)) in &self.ghosts {
            let short: String = name.chars().take(12).collect();
            let _ = write!(
                t,
                "<rect class=\"ghost\" x=\"{}\" y=\"{}\" width=\"22\" height=\"12\" rx=\"2\"><title>{}: in the design, not on the fabric</title></rect><text class=\"ghost-t\" x=\"{}\" y=\"{}\">{}</text>",
                n(x - 11.0),
                n(y - 6.0),
                esc(name),
                n(x),
                n(y + 17.0),
                esc(&short)
            );
        }
    }
}

/// A line of `class` from `a` to `b` (the nodes those ends name), titled.
fn line(t: &mut String, p: &Places<'_>, class: &str, a: &End, b: &End, title: &str) -> bool {
    let (Some(pa), Some(pb)) = (p.at(&a.node, a.guid), p.at(&b.node, b.guid)) else {
        return false;
    };
    let _ = write!(
        t,
        "<line class=\"{class}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"><title>{}</title></line>",
        n(pa.0),
        n(pa.1),
        n(pb.0),
        n(pb.1),
        esc(title)
    );
    true
}

/// A label beside node `name`, `dy` lower.
fn label(t: &mut String, p: &Places<'_>, (name, guid): (&str, Guid), dy: f64, text: &str) {
    if let Some((x, y)) = p.at(name, guid) {
        let _ = write!(
            t,
            "<text class=\"dl\" x=\"{}\" y=\"{}\">{}</text>",
            n(x + 14.0),
            n(y - 8.0 + dy),
            esc(text)
        );
    }
}

/// A label at the middle of the cable `a`–`b`, `dy` lower.
fn mid_label(t: &mut String, p: &Places<'_>, a: &End, b: &End, dy: f64, text: &str) {
    if let (Some(pa), Some(pb)) = (p.at(&a.node, a.guid), p.at(&b.node, b.guid)) {
        let _ = write!(
            t,
            "<text class=\"dl\" x=\"{}\" y=\"{}\">{}</text>",
            n((pa.0 + pb.0) / 2.0 + 6.0),
            n((pa.1 + pb.1) / 2.0 - 4.0 + dy),
            esc(text)
        );
    }
}

/// A box round node `name`.
fn ring(t: &mut String, p: &Places<'_>, class: &str, (name, guid): (&str, Guid)) -> bool {
    let Some((x, y)) = p.at(name, guid) else {
        return false;
    };
    let _ = write!(
        t,
        "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"32\" height=\"22\" rx=\"4\"/>",
        n(x - 16.0),
        n(y - 11.0)
    );
    true
}

/// Difference `d`'s marks (the `k`th: its labels a few lines lower than the one before's,
/// so that labels at one node stay apart); whether anything was placed.
fn difference_svg(t: &mut String, p: &Places<'_>, d: &Difference, k: usize) -> bool {
    let msg = d.to_string();
    let dy = 10.0 * (k % 5) as f64;
    match d {
        Difference::Miswired {
            a,
            b,
            a_joined,
            b_joined,
        } => {
            let mut placed = line(t, p, "expect", a, b, &format!("designed: {a} – {b}"));
            for (end, far, should) in [(a, a_joined, b), (b, b_joined, a)] {
                if let Some(far) = far {
                    placed |= line(t, p, "miswired", end, far, &msg);
                }
                let now = far
                    .as_ref()
                    .map_or_else(|| "nothing".to_owned(), ToString::to_string);
                label(
                    t,
                    p,
                    (&end.node, end.guid),
                    dy,
                    &format!("{end} ↔ {now}, should join {should}"),
                );
            }
            placed
        }
        Difference::Missing { a, b } => {
            let placed = line(t, p, "missing", a, b, &msg);
            mid_label(t, p, a, b, dy, &format!("missing: {a} – {b}"));
            placed
        }
        Difference::Extra { a, b } => {
            let placed = line(t, p, "extra", a, b, &msg);
            mid_label(t, p, a, b, dy, &format!("extra: {a} – {b}"));
            placed
        }
        Difference::Speed {
            a,
            b,
            expected,
            found,
        } => {
            let placed = line(t, p, "rate", a, b, &msg);
            mid_label(
                t,
                p,
                a,
                b,
                dy,
                &format!("{} (design {})", found.as_str(), expected.as_str()),
            );
            placed
        }
        Difference::Width {
            a,
            b,
            expected,
            found,
        } => {
            let placed = line(t, p, "rate", a, b, &msg);
            mid_label(t, p, a, b, dy, &format!("{found} (design {expected})"));
            placed
        }
        Difference::MissingNode(m) => {
            let placed = ring(t, p, "node-missing", (&m.node, m.guid));
            label(t, p, (&m.node, m.guid), dy, &format!("{}: missing", m.node));
            placed
        }
        Difference::ExtraNode(m) => {
            let placed = ring(t, p, "node-extra", (&m.node, m.guid));
            label(
                t,
                p,
                (&m.node, m.guid),
                dy,
                &format!("{}: not in the design", m.node),
            );
            placed
        }
    }
}

/// The legend of the marks.
fn legend(t: &mut String) {
    t.push_str("<div class=\"legend\">");
    for (colour, dash, what) in [
        ("#cf222e", "solid", "miswired: the cable as found"),
        ("#1a7f37", "dashed", "miswired: the cable as designed"),
        ("#8250df", "dotted", "missing cable"),
        ("#bf8700", "solid", "extra cable (or node)"),
        ("#0969da", "solid", "another speed or width"),
        ("#0969da", "dotted", "a switch matched by position (a note)"),
    ] {
        let _ = write!(
            t,
            "<span class=\"k\" style=\"border-top-color:{colour};border-top-style:{dash}\"></span>{}",
            esc(what)
        );
    }
    t.push_str("</div>");
}

/// The page.
pub(crate) fn render(i: &Input<'_>) -> String {
    let f = i.found;
    let c = i.comparison;
    let topo = Topo::of(f);
    let places = Places::of(f, &topo, c);
    // Every finding's marks: the differences', then the position notes'.
    let mut overlay = String::new();
    places.nodes_svg(&mut overlay);
    let mut placed = Vec::new();
    let mut group_marks: Vec<Mark> = Vec::new();
    for (k, d) in c.differences.iter().enumerate() {
        let _ = write!(overlay, "<g class=\"ov\" data-f=\"{k}\">");
        placed.push(difference_svg(&mut overlay, &places, d, k));
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
        overlay.push_str("</g>");
    }
    for (j, p) in c.by_position.iter().enumerate() {
        let k = c.differences.len() + j;
        let _ = write!(overlay, "<g class=\"ov\" data-f=\"{k}\">");
        let found = places.f.find(&p.found.node);
        let at = found.and_then(|id| {
            if f.node(id).is_switch() {
                topo.place(id)
            } else {
                None
            }
        });
        if let Some((x, y)) = at {
            let _ = write!(
                overlay,
                "<rect class=\"note\" x=\"{}\" y=\"{}\" width=\"32\" height=\"22\" rx=\"4\"/><text class=\"dl\" x=\"{}\" y=\"{}\">= {}</text>",
                n(x - 16.0),
                n(y - 11.0),
                n(x + 14.0),
                n(y + 16.0),
                esc(&p.design)
            );
        }
        placed.push(at.is_some());
        overlay.push_str("</g>");
    }
    let errors = i
        .findings
        .iter()
        .filter(|x| x.level == Level::Error)
        .count();
    let mut t = String::new();
    let _ = write!(
        t,
        "<h1>weft diff: <code>{}</code> against the design <code>{}</code></h1>",
        esc(&i.found_name),
        esc(&i.design_name)
    );
    if errors == 0 {
        let _ = write!(
            t,
            "<p class=\"ok\" id=\"verdict\">No difference: {} is cabled as {} says.</p>",
            esc(&i.found_name),
            esc(&i.design_name)
        );
    } else {
        let _ = write!(
            t,
            "<p class=\"bad\" id=\"verdict\">{errors} difference(s) from the design.</p>"
        );
    }
    // Summary: differences by kind.
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &c.differences {
        *kinds.entry(crate::diff::code(d)).or_default() += 1;
    }
    if !c.by_position.is_empty() {
        kinds.insert("weft::node_matched_by_position", c.by_position.len());
    }
    if !kinds.is_empty() {
        t.push_str("<table><tr><th>kind</th><th>count</th></tr>");
        for (k, v) in &kinds {
            let _ = write!(
                t,
                "<tr><td><code>{}</code></td><td class=\"num\">{v}</td></tr>",
                esc(k)
            );
        }
        t.push_str("</table>");
    }
    let _ = write!(
        t,
        "<h2>The fabric found, with the differences</h2><p>{}.</p>",
        esc(&topo.describe())
    );
    legend(&mut t);
    t.push_str(&topo.rails_legend());
    let _ = write!(
        t,
        "<div class=\"{}\">{}</div>",
        if c.differences.len() <= LABELLED {
            "labelled"
        } else {
            "unlabelled"
        },
        topo.svg_with(None, &[], &overlay, places.size)
    );
    t.push_str(&topo.groups_html(&group_marks));
    // The findings.
    t.push_str("<h2>Findings</h2>");
    if i.findings.is_empty() {
        t.push_str("<p class=\"ok\">No findings: nothing to place on the drawing.</p>");
    } else {
        t.push_str("<p class=\"noprint\">Click a finding to show it alone on the drawing; click again for all.</p><table class=\"findings\"><tr><th>#</th><th>code</th><th>finding</th></tr>");
        for (k, x) in i.findings.iter().enumerate() {
            let shown = if placed.get(k).copied().unwrap_or(false) {
                format!(
                    "<a href=\"#topology\" data-finding=\"{k}\">{}</a>",
                    esc(&x.message)
                )
            } else {
                format!("{} (not placed on the drawing)", esc(&x.message))
            };
            let _ = write!(
                t,
                "<tr id=\"finding-{k}\"><td class=\"num\">{}</td><td><code>{}</code></td><td>{shown}</td></tr>",
                k + 1,
                esc(&x.code)
            );
        }
        t.push_str("</table>");
    }
    let _ = write!(
        t,
        "<h2>The comparison as text</h2><details><summary>weft diff</summary><pre>{}</pre></details>",
        esc(i.text)
    );
    page_styled(
        &format!("weft diff: {} against {}", i.found_name, i.design_name),
        STYLE,
        &t,
    )
}
