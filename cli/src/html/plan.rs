//! `weft plan --format html`: the steps as a timeline, the switches each step writes
//! highlighted on the fabric (the state the plan leads to), each step's SMPs and proof, and
//! the break-before-make outage when there is one.

use super::topo::Topo;
use super::{esc, page};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
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

/// The page: `text` is the plan as `weft plan` prints it.
pub(crate) fn render(p: &Planned, rate: u64, text: &str) -> String {
    let f = &p.end.fabric;
    let topo = Topo::of(f);
    let mut t = String::new();
    let _ = write!(
        t,
        "<h1>weft plan: fabric <code>{}</code></h1><p>{} step(s), {} SMP(s) ({} LFT); a full reconfiguration would send {}.</p><p>{}</p>",
        esc(&p.plan.fabric_name),
        p.plan.steps.len(),
        p.plan.smps(),
        p.plan.lft_smps(),
        p.full_reconfiguration,
        esc(&crate::plan::target_line(&p.target)).replace('\n', "<br>")
    );
    let outage = crate::plan::outage_line(p, rate);
    let _ = write!(
        t,
        "<p class=\"{}\" id=\"outage\">{}</p>",
        if p.outage.is_some() { "bad" } else { "ok" },
        esc(&outage)
    );
    // The steps in the outage, from 1.
    let out: BTreeSet<usize> = match &p.outage {
        Some(o) => {
            let first = crate::plan::first_drop(p);
            (first..first + o.steps).collect()
        }
        None => BTreeSet::new(),
    };
    t.push_str("<h2>Steps</h2><p class=\"noprint\">Click a step to highlight the switches it writes on the drawing below and open its details.</p><div class=\"timeline\">");
    let mut touched: Vec<BTreeMap<NodeId, BTreeMap<&'static str, usize>>> = Vec::new();
    for (i, step) in p.plan.steps.iter().enumerate() {
        let mut per: BTreeMap<NodeId, BTreeMap<&'static str, usize>> = BTreeMap::new();
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
        let _ = write!(
            t,
            "<div class=\"step{}\" data-step=\"{}\" data-sw=\"{sw}\" data-g=\"{groups}\"><b>step {}</b><br>{smps} SMP(s)<br>{} node(s){}</div>",
            if out.contains(&(i + 1)) { " outage" } else { "" },
            i + 1,
            i + 1,
            ids.len(),
            if out.contains(&(i + 1)) { "<br>outage" } else { "" }
        );
        touched.push(per);
    }
    t.push_str("</div>");
    // The fabric.
    let _ = write!(
        t,
        "<h2>Fabric (the state the plan leads to)</h2><p>{}.</p>",
        esc(&topo.describe())
    );
    t.push_str(&topo.rails_legend());
    t.push_str(&topo.svg(None, &[]));
    t.push_str(&topo.groups_html(&[]));
    // Each step.
    t.push_str("<h2>Each step</h2>");
    for (i, s) in p.stats.iter().enumerate() {
        let _ = write!(
            t,
            "<details class=\"stepd\" id=\"step-{}\"><summary>step {}: {}</summary><table><tr><th>node</th><th>writes</th></tr>",
            i + 1,
            i + 1,
            esc(&crate::plan::step_line(p, i, s))
        );
        for (id, kinds) in touched.get(i).into_iter().flatten() {
            let what = kinds
                .iter()
                .map(|(k, c)| format!("{c} {k}(s)"))
                .collect::<Vec<_>>()
                .join(", ");
            let _ = write!(
                t,
                "<tr><td>{}</td><td>{}</td></tr>",
                esc(f.node(*id).name()),
                esc(&what)
            );
        }
        t.push_str("</table></details>");
    }
    let _ = write!(
        t,
        "<h2>The plan as text</h2><details><summary>weft plan</summary><pre>{}</pre></details>",
        esc(text)
    );
    page(&format!("weft plan: {}", p.plan.fabric_name), &t)
}
