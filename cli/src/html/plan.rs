//! `weft plan --format html`: the steps as a timeline, the switches each step writes
//! highlighted on the fabric (the state the plan leads to), each step's SMPs and proof, and
//! the break-before-make outage when there is one.

use super::topo::Topo;
use super::{page, Shown};
use maud::{html, Markup};
use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::{Fabric, NodeId};
use weft_formats::plan::SmpWrite;
use weft_plan::Planned;

/// The node a write goes to, and what kind of write it is.
fn target(f: &Fabric, w: &SmpWrite) -> (Option<NodeId>, &'static str) {
    match w {
        SmpWrite::Lft { switch, .. } => (f.find_guid(*switch), "LFT block"),
        SmpWrite::Mft { switch, .. } => (f.find_guid(*switch), "MFT block"),
        SmpWrite::Pkeys { node, .. } => (f.find_guid(*node), "P_Key block"),
        SmpWrite::Vport { node, .. } => (f.find_guid(*node), "VF (2 SMPs)"),
        SmpWrite::Sl2vl { node, .. } => (f.find_guid(*node), "SL→VL table"),
        SmpWrite::VlArb { node, .. } => (f.find_guid(*node), "VL arbitration block"),
    }
}

/// What each step writes, per node and kind.
type Touched = BTreeMap<NodeId, BTreeMap<&'static str, usize>>;

/// The steps as a timeline of boxes (those in the outage marked); what each writes.
fn timeline(p: &Planned, topo: &Topo<'_>) -> (Markup, Vec<Touched>) {
    let f = &p.end.fabric;
    // The steps in the outage, from 1.
    let out: BTreeSet<usize> = match &p.outage {
        Some(o) => {
            let first = crate::plan::first_drop(p);
            (first..first + o.steps).collect()
        }
        None => BTreeSet::new(),
    };
    let mut touched: Vec<Touched> = Vec::new();
    let mut boxes = Vec::new();
    for (i, step) in p.plan.steps.iter().enumerate() {
        let mut per: Touched = BTreeMap::new();
        for w in &step.writes {
            if let (Some(id), kind) = target(f, w) {
                *per.entry(id).or_default().entry(kind).or_default() += 1;
            }
        }
        let ids: BTreeSet<NodeId> = per.keys().copied().collect();
        let sw = ids
            .iter()
            .map(|s| s.index().to_string())
            .collect::<Vec<_>>()
            .join(" ");
        let groups = topo
            .groups_of(&ids)
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(" ");
        let smps: usize = step
            .writes
            .iter()
            .map(|w| {
                if matches!(w, SmpWrite::Vport { .. }) {
                    2
                } else {
                    1
                }
            })
            .sum();
        boxes.push((i + 1, sw, groups, smps, ids.len(), out.contains(&(i + 1))));
        touched.push(per);
    }
    let markup = html! {
        div class="timeline" {
            @for (step, sw, groups, smps, nodes, outage) in boxes {
                div class={ "step" @if outage { " outage" } } data-step=(step) data-sw=(sw) data-g=(groups) {
                    b { "step " (step) } br; (smps) " SMP(s)" br; (nodes) " node(s)"
                    @if outage { br; "outage" }
                }
            }
        }
    };
    (markup, touched)
}

/// The page: `text` is the plan as `weft plan` prints it.
pub(crate) fn render(p: &Planned, rate: u64, text: &str) -> String {
    let f = &p.end.fabric;
    let topo = Topo::of(f);
    let target_line = crate::plan::target_line(&p.target);
    let (timeline, touched) = timeline(p, &topo);
    let body = html! {
        h1 { "weft plan: fabric " code { (Shown(&p.plan.fabric_name)) } }
        p {
            (p.plan.steps.len()) " step(s), " (p.plan.smps()) " SMP(s) (" (p.plan.lft_smps())
            " LFT); a full reconfiguration would send " (p.full_reconfiguration) "."
        }
        p {
            @for (k, line) in target_line.split('\n').enumerate() {
                @if k > 0 { br; }
                (Shown(line))
            }
        }
        p class=(if p.outage.is_some() { "bad" } else { "ok" }) id="outage" {
            (Shown(&crate::plan::outage_line(p, rate)))
        }
        h2 { "Steps" }
        p class="noprint" {
            "Click a step to highlight the switches it writes on the drawing below and open its details."
        }
        (timeline)
        // The fabric.
        h2 { "Fabric (the state the plan leads to)" }
        p { (topo.describe()) "." }
        (topo.rails_legend())
        (topo.svg(None, &[]))
        (topo.groups_html(&[]))
        // Each step.
        h2 { "Each step" }
        @for (i, s) in p.stats.iter().enumerate() {
            details class="stepd" id={ "step-" (i + 1) } {
                summary { "step " (i + 1) ": " (Shown(&crate::plan::step_line(p, i, s))) }
                table {
                    tr { th { "node" } th { "writes" } }
                    @for (id, kinds) in touched.get(i).into_iter().flatten() {
                        tr {
                            td { (Shown(f.node(*id).name())) }
                            td {
                                @for (k, (kind, c)) in kinds.iter().enumerate() {
                                    @if k > 0 { ", " }
                                    (c) " " (kind) "(s)"
                                }
                            }
                        }
                    }
                }
            }
        }
        h2 { "The plan as text" }
        details { summary { "weft plan" } pre { (Shown(text)) } }
    };
    page(&format!("weft plan: {}", p.plan.fabric_name), body)
}
