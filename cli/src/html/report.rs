//! `weft report --format html`: the routing's quality, the fabric drawn with its link loads,
//! and the verifier's findings placed on the drawing.

use super::topo::{Mark, Topo, PATTERNS};
use super::{bar_chart, heat_index, heat_legend, heat_swatch, page, Shown};
use crate::findings::{Detail, Finding};
use maud::{html, Markup};
use std::collections::BTreeMap;
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

fn outcome(o: &Outcome) -> Markup {
    html! {
        @match o {
            Outcome::Proven => span class="ok" { "proven" },
            Outcome::Violated => span class="bad" { "violated" },
            Outcome::Unknown(why) => { "unknown (" (Shown(why)) ")" }
        }
    }
}

/// The findings, each focusing its marks on the drawing when clicked.
pub(crate) fn findings_html(findings: &[Finding], marks: &[Mark]) -> Markup {
    html! {
        @if findings.is_empty() {
            p class="ok" { "No findings: nothing to place on the drawing." }
        } @else {
            p class="noprint" {
                "Every finding is drawn on the topology (red: credit loop cycles and the nodes named; dashed amber: a failed route up to the ✗ where it fails). Click one to show it alone; click again for all."
            }
            ol class="findings" {
                @for (i, f) in findings.iter().enumerate() {
                    @let placed = marks.get(i).is_some_and(|m| {
                        !m.nodes.is_empty() || !m.cycle.is_empty() || !m.route.is_empty()
                    });
                    li id={ "finding-" (i) } {
                        code { (Shown(&f.code)) } " "
                        @if placed {
                            a href="#topology" data-finding=(i) { (Shown(&f.message)) }
                        } @else {
                            (Shown(&f.message)) " (not placed: it names no node)"
                        }
                    }
                }
            }
        }
    }
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
fn loads_html(f: &Fabric, loads: &LinkLoads, topo_level: &dyn Fn(NodeId) -> Option<u8>) -> Markup {
    // Between levels.
    let mut by: BTreeMap<(u8, u8), Vec<&LinkLoad>> = BTreeMap::new();
    for l in &loads.links {
        let a = topo_level(l.from.node).unwrap_or(0);
        let b = topo_level(l.to.node).unwrap_or(0);
        by.entry((a, b)).or_default().push(l);
    }
    let lname = |l: u8| {
        if l == 0 {
            "other".to_owned()
        } else {
            format!("L{l}")
        }
    };
    // The hottest links by all-to-all.
    let mut hot: Vec<&LinkLoad> = loads.links.iter().collect();
    hot.sort_by(|a, b| b.all_to_all.cmp(&a.all_to_all).then(a.from.cmp(&b.from)));
    html! {
        @for (key, name, get) in PATTERNS {
            @let v: Vec<u64> = loads.links.iter().map(get).collect();
            (bar_chart(
                &format!("loads-{key}"),
                &format!("{name}: directed switch links by load"),
                "flows on the link",
                &load_histogram(&v)
            ))
        }
        table {
            tr {
                th { "from level → to level" } th { "directed links" }
                @for (_, name, _) in PATTERNS { th { (name) " mean / max" } }
            }
            @for ((a, b), links) in &by {
                tr {
                    td { (lname(*a)) " → " (lname(*b)) }
                    td class="num" { (links.len()) }
                    @for (_, _, get) in PATTERNS {
                        @let sum: u64 = links.iter().map(|l| get(l)).sum();
                        @let max = links.iter().map(|l| get(l)).max().unwrap_or(0);
                        td class="num" {
                            (format!("{:.2}", sum as f64 / links.len().max(1) as f64)) " / " (max)
                        }
                    }
                }
            }
        }
        details {
            summary { "The 20 hottest directed links (all-to-all)" }
            table {
                tr {
                    th { "from" } th { "to" } th { "all-to-all" } th { "shift (sum)" }
                    th { "bisections (sum)" }
                }
                @for l in hot.iter().take(20) {
                    tr {
                        td { (Shown(f.node(l.from.node).name())) " port " (l.from.port.0) }
                        td { (Shown(f.node(l.to.node).name())) " port " (l.to.port.0) }
                        td class="num" { (l.all_to_all) }
                        td class="num" { (l.shift) }
                        td class="num" { (l.bisection) }
                    }
                }
            }
        }
    }
}

/// Per-port balance: the spreads as a chart, the most unbalanced switches port by port.
fn balance_html(q: &Quality) -> Markup {
    let b = &q.balance;
    let mut spreads: BTreeMap<u32, u64> = BTreeMap::new();
    for u in &b.per_switch {
        *spreads.entry(u.spread_by_direction).or_default() += 1;
    }
    let bars: Vec<(String, u64)> = spreads.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let mut worst: Vec<_> = b.per_switch.iter().collect();
    worst.sort_by(|a, b| {
        b.spread_by_direction
            .cmp(&a.spread_by_direction)
            .then((b.max - b.min).cmp(&(a.max - a.min)))
            .then(weft_formats::hostlist::natural_cmp(&a.switch, &b.switch))
    });
    let shown = worst.len().min(32);
    html! {
        (bar_chart(
            "balance",
            "switches by spread within a direction (busiest − idlest port, end-node LIDs)",
            "spread",
            &bars,
        ))
        p {
            (b.switches) " switches: " (b.unbalanced) " unbalanced (max spread " (b.max_spread)
            "); within a direction " (b.unbalanced_by_direction) " unbalanced (max spread "
            (b.max_spread_by_direction) ")."
        }
        details open[q.balance.unbalanced_by_direction > 0] {
            summary {
                "Ports of the " (shown) " least balanced switches (end-node LIDs routed out of each switch-facing port)"
            }
            table {
                tr { th { "switch" } th { "level" } th { "spread in a direction" } th { "ports" } }
                @for u in worst.iter().take(shown) {
                    tr {
                        td { (Shown(&u.switch)) }
                        td class="num" {
                            @match u.level { Some(l) => (l), None => "set aside" }
                        }
                        td class="num" { (u.spread_by_direction) }
                        td {
                            @for (p, c) in &u.ports {
                                (heat_swatch(
                                    heat_index(u64::from(*c), u64::from(u.max)),
                                    Some(format!("port {p}: {c}").as_str())
                                ))
                            }
                            " " (u.min) "–" (u.max)
                        }
                    }
                }
            }
        }
    }
}

/// The summary table: sizes, the metrics, the verdict per property and the findings' count.
fn summary_html(i: &Input<'_>) -> Markup {
    let q = i.quality;
    let e = &q.hop_excess;
    let rows: [(&str, String); 7] = [
        (
            "hosts",
            format!(
                "{} machines; {} end ports ({} left out, {} service node ports)",
                q.hosts, q.end_ports, q.end_ports_excluded, q.service_ports
            ),
        ),
        (
            "switches",
            format!(
                "{} ({} directed switch links up)",
                q.switches, q.fabric_links
            ),
        ),
        (
            "eBB",
            format!(
                "{} (worst bisection {}, best {}; {} bisections, seed {})",
                crate::report::ebb(q.bisections.ebb),
                crate::report::ebb(q.bisections.ebb_min),
                crate::report::ebb(q.bisections.ebb_max),
                q.bisections.count,
                q.bisections.seed
            ),
        ),
        (
            "shift",
            format!(
                "max load {}, mean max {:.3} over {} shifts",
                q.shift.max_load, q.shift.mean_max_load, q.shift.shifts
            ),
        ),
        (
            "all-to-all",
            format!(
                "max load {}, mean load {:.1}",
                q.all_to_all.max_load, q.all_to_all.mean_load
            ),
        ),
        (
            "hops",
            format!(
                "mean {:.3}, max {}, {} unroutable",
                q.hops.mean,
                q.hops.max,
                q.hops.unroutable.total()
            ),
        ),
        (
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
        ),
    ];
    html! {
        h2 { "Summary" }
        table {
            @for (k, v) in rows { tr { th { (k) } td { (Shown(&v)) } } }
            @for p in i.properties {
                tr { th { (p.name()) } td { (outcome(i.report.verdict.outcome(*p))) } }
            }
            tr {
                th { "findings" }
                td {
                    (i.findings.len()) " (" (i.report.credit_loops_total) " credit loop(s), "
                    (i.report.failed_routes) " failed route(s))"
                }
            }
        }
    }
}

/// The hop histogram, and the routes longer than a shortest path.
fn hops_html(q: &weft_metrics::Quality) -> Markup {
    let bars: Vec<(String, u64)> = q
        .hops
        .histogram
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    html! {
        h2 { "Hops" }
        (bar_chart("hops", "host-to-host paths by links crossed", "links crossed", &bars))
        @if !q.hop_excess.worst.is_empty() {
            h3 { "Routes longer than a shortest path" }
            table {
                tr {
                    th { "source" } th { "destination" } th { "links" } th { "shortest" }
                    th { "shortest up*/down*" }
                }
                @for w in &q.hop_excess.worst {
                    tr {
                        td { (Shown(&w.source)) }
                        td { (Shown(&w.destination)) }
                        td { (w.links) }
                        td { (w.shortest) }
                        td { @match w.updown { Some(u) => (u), None => "none" } }
                    }
                }
            }
        }
    }
}

/// The topology with its heat maps (and the controls choosing one) and the findings' marks.
fn topology_html(i: &Input<'_>, topo: &Topo<'_>, marks: &[Mark]) -> Markup {
    html! {
        h2 { "Topology and link loads" }
        p { (topo.describe()) "." }
        div class="controls noprint" {
            "Heat map: "
            @for (k, (key, name, _)) in PATTERNS.iter().enumerate() {
                label { input type="radio" name="heat" value=(key) checked[k == 0]; " " (name) }
            }
        }
        @for (k, (key, name, get)) in PATTERNS.iter().enumerate() {
            @let max = i.loads.links.iter().map(get).max().unwrap_or(0);
            div class={ "heat-legend" @if k == 0 { " first" } @else { " off" } } data-legend=(key) {
                (heat_legend(max, &format!("{name}, flows per directed link")))
            }
        }
        (topo.rails_legend())
        (topo.svg(Some(i.loads), marks))
        (topo.groups_html(marks))
    }
}

/// The page.
pub(crate) fn render(i: &Input<'_>) -> String {
    let f = &i.state.fabric;
    let q = i.quality;
    let topo = Topo::of(f);
    let marks = marks(f, i.findings);
    let level = weft_compiler::routing::shape::levels(f)
        .map(|l| l.level)
        .unwrap_or_default();
    let body = html! {
        h1 { "weft report: fabric " code { (Shown(&f.name)) } }
        p { (Shown(&i.source)) }
        (summary_html(i))
        (topology_html(i, &topo, &marks))
        h2 { "Findings" }
        (findings_html(i.findings, &marks))
        h2 { "Link loads" }
        p {
            "Flows per directed switch-to-switch link: all-to-all; the shift pattern summed over "
            (i.loads.shifts) " shifts; random bisections summed over " (i.loads.bisections) "."
        }
        (loads_html(f, i.loads, &|id| level.get(id.index()).copied().flatten()))
        h2 { "Per-port balance" }
        (balance_html(q))
        (hops_html(q))
        h2 { "The report as text" }
        details { summary { "weft report" } pre { (Shown(i.text)) } }
    };
    page(&format!("weft report: {}", f.name), body)
}
