//! `weft report --format html`: the routing's quality, the fabric drawn with its link loads,
//! and the verifier's findings placed on the drawing.

use super::topo::{Mark, Topo, PATTERNS};
use super::{bar_chart, esc, heat, heat_legend, page};
use crate::findings::{Detail, Finding};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use weft_fabric::{Fabric, NodeId, ValidState};
use weft_metrics::{LinkLoad, LinkLoads, Quality};
use weft_verifier::{Outcome, Property, Report};

/// What the page shows.
pub(crate) struct Input<'a> {
    pub state: &'a ValidState,
    /// Where the tables come from (an engine, or a file).
    pub source: String,
    pub quality: &'a Quality,
    pub loads: &'a LinkLoads,
    pub report: &'a Report,
    pub properties: &'a [Property],
    pub findings: &'a [Finding],
    /// The human report, shown in full at the end.
    pub text: &'a str,
}

/// The node named `name`.
fn id(f: &Fabric, name: &str) -> Option<NodeId> {
    f.find(name)
}

/// What each finding puts on the drawing: the nodes it names, a credit loop's cycle, a
/// failed route's first witness up to where it fails.
pub(crate) fn marks(f: &Fabric, findings: &[Finding]) -> Vec<Mark> {
    findings
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let mut m = Mark {
                finding: i,
                nodes: x.objects.iter().filter_map(|o| id(f, &o.name)).collect(),
                cycle: x
                    .flow
                    .iter()
                    .filter_map(|s| id(f, &s.object.name))
                    .collect(),
                route: Vec::new(),
            };
            m.nodes.sort();
            m.nodes.dedup();
            if let Detail::Pattern(p) = &x.detail {
                if let Some(w) = p.witnesses.first() {
                    m.route = w.route.hops.iter().map(|h| h.node.id).collect();
                    if m.route.last() != Some(&w.at.id) {
                        m.route.push(w.at.id);
                    }
                }
            }
            m
        })
        .collect()
}

fn outcome(o: &Outcome) -> String {
    match o {
        Outcome::Proven => "<span class=\"ok\">proven</span>".to_owned(),
        Outcome::Violated => "<span class=\"bad\">violated</span>".to_owned(),
        Outcome::Unknown(why) => format!("unknown ({})", esc(why)),
    }
}

/// The findings, each focusing its marks on the drawing when clicked.
pub(crate) fn findings_html(t: &mut String, findings: &[Finding], marks: &[Mark]) {
    if findings.is_empty() {
        t.push_str("<p class=\"ok\">No findings: nothing to place on the drawing.</p>");
        return;
    }
    t.push_str("<p class=\"noprint\">Every finding is drawn on the topology (red: credit loop cycles and the nodes named; dashed amber: a failed route up to the ✗ where it fails). Click one to show it alone; click again for all.</p><ol class=\"findings\">");
    for (i, f) in findings.iter().enumerate() {
        let placed = marks
            .get(i)
            .is_some_and(|m| !m.nodes.is_empty() || !m.cycle.is_empty() || !m.route.is_empty());
        let _ = write!(
            t,
            "<li id=\"finding-{i}\"><code>{}</code> {}{}</li>",
            esc(&f.code),
            if placed {
                format!(
                    "<a href=\"#topology\" data-finding=\"{i}\">{}</a>",
                    esc(&f.message)
                )
            } else {
                esc(&f.message)
            },
            if placed {
                ""
            } else {
                " (not placed: it names no node)"
            }
        );
    }
    t.push_str("</ol>");
}

/// Loads bucketed: at most 12 bars, labelled by the range of loads.
fn load_histogram(loads: &[u64]) -> Vec<(String, u64)> {
    let max = loads.iter().copied().max().unwrap_or(0);
    let buckets = 12u64.min(max + 1).max(1);
    let width = (max + 1).div_ceil(buckets).max(1);
    let mut counts = vec![0u64; buckets as usize];
    for &l in loads {
        if let Some(c) = counts.get_mut((l / width) as usize) {
            *c += 1;
        }
    }
    counts
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let lo = i as u64 * width;
            let hi = lo + width - 1;
            (
                if lo == hi {
                    lo.to_string()
                } else {
                    format!("{lo}–{hi}")
                },
                c,
            )
        })
        .collect()
}

/// Per pattern: a histogram of the links' loads, and the loads between levels.
fn loads_html(
    t: &mut String,
    f: &Fabric,
    loads: &LinkLoads,
    topo_level: &dyn Fn(NodeId) -> Option<u8>,
) {
    for (key, name, get) in PATTERNS {
        let v: Vec<u64> = loads.links.iter().map(get).collect();
        let _ = write!(
            t,
            "{}",
            bar_chart(
                &format!("loads-{key}"),
                &format!("{name}: directed switch links by load"),
                "flows on the link",
                &load_histogram(&v)
            )
        );
    }
    // Between levels.
    let mut by: BTreeMap<(u8, u8), Vec<&LinkLoad>> = BTreeMap::new();
    for l in &loads.links {
        let a = topo_level(l.from.node).unwrap_or(0);
        let b = topo_level(l.to.node).unwrap_or(0);
        by.entry((a, b)).or_default().push(l);
    }
    t.push_str("<table><tr><th>from level → to level</th><th>directed links</th>");
    for (_, name, _) in PATTERNS {
        let _ = write!(t, "<th>{} mean / max</th>", esc(name));
    }
    t.push_str("</tr>");
    let lname = |l: u8| {
        if l == 0 {
            "other".to_owned()
        } else {
            format!("L{l}")
        }
    };
    for ((a, b), links) in &by {
        let _ = write!(
            t,
            "<tr><td>{} → {}</td><td class=\"num\">{}</td>",
            lname(*a),
            lname(*b),
            links.len()
        );
        for (_, _, get) in PATTERNS {
            let sum: u64 = links.iter().map(|l| get(l)).sum();
            let max = links.iter().map(|l| get(l)).max().unwrap_or(0);
            let _ = write!(
                t,
                "<td class=\"num\">{:.2} / {max}</td>",
                sum as f64 / links.len().max(1) as f64
            );
        }
        t.push_str("</tr>");
    }
    t.push_str("</table>");
    // The hottest links by all-to-all.
    let mut hot: Vec<&LinkLoad> = loads.links.iter().collect();
    hot.sort_by(|a, b| b.all_to_all.cmp(&a.all_to_all).then(a.from.cmp(&b.from)));
    t.push_str("<details><summary>The 20 hottest directed links (all-to-all)</summary><table><tr><th>from</th><th>to</th><th>all-to-all</th><th>shift (sum)</th><th>bisections (sum)</th></tr>");
    for l in hot.iter().take(20) {
        let _ = write!(
            t,
            "<tr><td>{} port {}</td><td>{} port {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(f.node(l.from.node).name()),
            l.from.port.0,
            esc(f.node(l.to.node).name()),
            l.to.port.0,
            l.all_to_all,
            l.shift,
            l.bisection
        );
    }
    t.push_str("</table></details>");
}

/// Per-port balance: the spreads as a chart, the most unbalanced switches port by port.
fn balance_html(t: &mut String, q: &Quality) {
    let b = &q.balance;
    let mut spreads: BTreeMap<u32, u64> = BTreeMap::new();
    for u in &b.per_switch {
        *spreads.entry(u.spread_by_direction).or_default() += 1;
    }
    let bars: Vec<(String, u64)> = spreads.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    t.push_str(&bar_chart(
        "balance",
        "switches by spread within a direction (busiest − idlest port, end-node LIDs)",
        "spread",
        &bars,
    ));
    let _ = write!(
        t,
        "<p>{} switches: {} unbalanced (max spread {}); within a direction {} unbalanced (max spread {}).</p>",
        b.switches, b.unbalanced, b.max_spread, b.unbalanced_by_direction, b.max_spread_by_direction
    );
    let mut worst: Vec<_> = b.per_switch.iter().collect();
    worst.sort_by(|a, b| {
        b.spread_by_direction
            .cmp(&a.spread_by_direction)
            .then((b.max - b.min).cmp(&(a.max - a.min)))
            .then(weft_formats::hostlist::natural_cmp(&a.switch, &b.switch))
    });
    let shown = worst.len().min(32);
    let _ = write!(
        t,
        "<details{}><summary>Ports of the {shown} least balanced switches (end-node LIDs routed out of each switch-facing port)</summary><table><tr><th>switch</th><th>level</th><th>spread in a direction</th><th>ports</th></tr>",
        if q.balance.unbalanced_by_direction > 0 { " open" } else { "" }
    );
    for u in worst.iter().take(shown) {
        let mut cells = String::new();
        for (p, c) in &u.ports {
            let _ = write!(
                cells,
                "<span class=\"sw-c\" style=\"background:{}\" title=\"port {p}: {c}\"></span>",
                heat(u64::from(*c), u64::from(u.max))
            );
        }
        let _ = write!(
            t,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{cells} {}–{}</td></tr>",
            esc(&u.switch),
            u.level
                .map_or_else(|| "set aside".to_owned(), |l| l.to_string()),
            u.spread_by_direction,
            u.min,
            u.max
        );
    }
    t.push_str("</table></details>");
}

/// The summary table: sizes, the metrics, the verdict per property and the findings' count.
fn summary_html(t: &mut String, i: &Input<'_>) {
    let q = i.quality;
    t.push_str("<h2>Summary</h2><table>");
    let row = |t: &mut String, k: &str, v: String| {
        let _ = write!(t, "<tr><th>{}</th><td>{v}</td></tr>", esc(k));
    };
    row(
        t,
        "hosts",
        format!(
            "{} machines; {} end ports ({} left out, {} service node ports)",
            q.hosts, q.end_ports, q.end_ports_excluded, q.service_ports
        ),
    );
    row(
        t,
        "switches",
        format!(
            "{} ({} directed switch links up)",
            q.switches, q.fabric_links
        ),
    );
    row(
        t,
        "eBB",
        format!(
            "{} (worst bisection {}, best {}; {} bisections, seed {})",
            crate::report::ebb(q.bisections.ebb),
            crate::report::ebb(q.bisections.ebb_min),
            crate::report::ebb(q.bisections.ebb_max),
            q.bisections.count,
            q.bisections.seed
        ),
    );
    row(
        t,
        "shift",
        format!(
            "max load {}, mean max {:.3} over {} shifts",
            q.shift.max_load, q.shift.mean_max_load, q.shift.shifts
        ),
    );
    row(
        t,
        "all-to-all",
        format!(
            "max load {}, mean load {:.1}",
            q.all_to_all.max_load, q.all_to_all.mean_load
        ),
    );
    row(
        t,
        "hops",
        format!(
            "mean {:.3}, max {}, {} unroutable",
            q.hops.mean,
            q.hops.max,
            q.hops.unroutable.total()
        ),
    );
    let e = &q.hop_excess;
    row(
        t,
        "hop excess",
        format!(
            "{} of {} pairs over the shortest up*/down* path (max {}), {} over the shortest path (max {}), {} without an up*/down* path",
            e.over_updown,
            e.updown_pairs,
            e.max_over_updown,
            e.over_shortest,
            e.max_over_shortest,
            e.without_updown
        ),
    );
    for p in i.properties {
        row(t, p.name(), outcome(i.report.verdict.outcome(*p)));
    }
    row(
        t,
        "findings",
        format!(
            "{} ({} credit loop(s), {} failed route(s))",
            i.findings.len(),
            i.report.credit_loops_total,
            i.report.failed_routes
        ),
    );
    t.push_str("</table>");
}

/// The hop histogram, and the routes longer than a shortest path.
fn hops_html(t: &mut String, q: &weft_metrics::Quality) {
    t.push_str("<h2>Hops</h2>");
    let bars: Vec<(String, u64)> = q
        .hops
        .histogram
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    t.push_str(&bar_chart(
        "hops",
        "host-to-host paths by links crossed",
        "links crossed",
        &bars,
    ));
    if !q.hop_excess.worst.is_empty() {
        t.push_str("<h3>Routes longer than a shortest path</h3><table><tr><th>source</th><th>destination</th><th>links</th><th>shortest</th><th>shortest up*/down*</th></tr>");
        for w in &q.hop_excess.worst {
            let _ = write!(
                t,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&w.source),
                esc(&w.destination),
                w.links,
                w.shortest,
                w.updown
                    .map_or_else(|| "none".to_owned(), |u| u.to_string())
            );
        }
        t.push_str("</table>");
    }
}

/// The page.
pub(crate) fn render(i: &Input<'_>) -> String {
    let f = &i.state.fabric;
    let q = i.quality;
    let topo = Topo::of(f);
    let marks = marks(f, i.findings);
    let mut t = String::new();
    let _ = write!(
        t,
        "<h1>weft report: fabric <code>{}</code></h1><p>{}</p>",
        esc(&f.name),
        esc(&i.source)
    );
    summary_html(&mut t, i);
    // Topology.
    let _ = write!(
        t,
        "<h2>Topology and link loads</h2><p>{}.</p>",
        esc(&topo.describe())
    );
    t.push_str("<div class=\"controls noprint\">Heat map: ");
    for (k, (key, name, _)) in PATTERNS.iter().enumerate() {
        let _ = write!(
            t,
            "<label><input type=\"radio\" name=\"heat\" value=\"{key}\"{}> {}</label>",
            if k == 0 { " checked" } else { "" },
            esc(name)
        );
    }
    t.push_str("</div>");
    for (k, (key, name, get)) in PATTERNS.iter().enumerate() {
        let max = i.loads.links.iter().map(get).max().unwrap_or(0);
        let _ = write!(
            t,
            "<div class=\"heat-legend{}\" data-legend=\"{key}\"{}>{}</div>",
            if k == 0 { " first" } else { "" },
            if k == 0 {
                ""
            } else {
                " style=\"display:none\""
            },
            heat_legend(max, &format!("{name}, flows per directed link"))
        );
    }
    t.push_str(&topo.rails_legend());
    t.push_str(&topo.svg(Some(i.loads), &marks));
    t.push_str(&topo.groups_html(&marks));
    // Findings.
    t.push_str("<h2>Findings</h2>");
    findings_html(&mut t, i.findings, &marks);
    // Loads.
    let _ = write!(
        t,
        "<h2>Link loads</h2><p>Flows per directed switch-to-switch link: all-to-all; the shift pattern summed over {} shifts; random bisections summed over {}.</p>",
        i.loads.shifts, i.loads.bisections
    );
    let level = weft_compiler::routing::shape::levels(f)
        .map(|l| l.level)
        .unwrap_or_default();
    loads_html(&mut t, f, i.loads, &|id| {
        level.get(id.index()).copied().flatten()
    });
    // Balance.
    t.push_str("<h2>Per-port balance</h2>");
    balance_html(&mut t, q);
    hops_html(&mut t, q);
    let _ = write!(
        t,
        "<h2>The report as text</h2><details><summary>weft report</summary><pre>{}</pre></details>",
        esc(i.text)
    );
    page(&format!("weft report: {}", f.name), &t)
}
