//! Validation of an elaborated fabric: connectivity of the cabling, the LID budget, LFT
//! capacity and VL capabilities. Each check reports through diagnostics; a summary
//! describes what was checked ([`Summary`]: the host HCAs, and service nodes counted apart by
//! role).

use crate::code::Code;
use crate::diagnostic::Diagnostic;
use crate::elaborate::Elaborated;
use serde::Serialize;
use std::collections::BTreeMap;
use weft_fabric::{Fabric, LinkState, NodeId, NodeKind, MAX_UNICAST_LID};

/// What `weft check` reports about a fabric.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Fabric name.
    pub fabric: String,
    /// Switches.
    pub switches: usize,
    /// End nodes that are hosts (HCAs and routers whose role is `host`): service nodes are
    /// counted apart, in [`Summary::service`].
    pub hcas: usize,
    /// Service nodes (end nodes whose role is not `host`: SHARP aggregation nodes, storage,
    /// management) per role; empty, and left out of JSON, when there are none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub service: BTreeMap<weft_fabric::Role, usize>,
    /// Links declared.
    pub links: usize,
    /// Links down (faults, or a node down).
    pub links_down: usize,
    /// Nodes down.
    pub nodes_down: usize,
    /// Unicast LIDs needed.
    pub lids: u64,
    /// LMC.
    pub lmc: u8,
    /// Tree levels, when the topology is a fat-tree (recorded, or found from the cabling).
    pub levels: Option<u8>,
}

impl Summary {
    /// Summarises a fabric.
    pub fn of(f: &Fabric) -> Summary {
        Summary {
            fabric: f.name.clone(),
            switches: f.switch_count(),
            hcas: f.host_count(),
            service: f
                .nodes()
                .iter()
                .filter(|n| !n.is_switch() && !n.is_host())
                .fold(BTreeMap::new(), |mut by_role, n| {
                    *by_role.entry(n.role()).or_insert(0) += 1;
                    by_role
                }),
            links: f.links().len(),
            links_down: f
                .links()
                .iter()
                .filter(|l| l.state == LinkState::Down)
                .count(),
            nodes_down: f.nodes().iter().filter(|n| n.down).count(),
            lids: f.lid_count(),
            lmc: f.lmc,
            levels: match crate::routing::shape::detect(f) {
                crate::routing::shape::Shape::FatTree(t) => Some(t.height),
                crate::routing::shape::Shape::Other { .. } => f.levels(),
            },
        }
    }
}

/// Most names listed in one diagnostic.
const LIST_MAX: usize = 8;

fn list(names: &[&str]) -> String {
    let mut s = names
        .iter()
        .take(LIST_MAX)
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > LIST_MAX {
        s.push_str(&format!(" and {} more", names.len() - LIST_MAX));
    }
    s
}

/// Runs every check; returns the findings.
pub fn validate(e: &Elaborated) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let f = &e.fabric;
    let origin = e.fabric_origin;
    unconnected(e, &mut out);
    components(e, &mut out);
    names(e, &mut out);

    let lids = f.lid_count();
    if lids > u64::from(MAX_UNICAST_LID) {
        let mut d = Diagnostic::error(
            Code::LidBudgetExceeded,
            format!(
                "the fabric needs {lids} unicast LIDs but only {} exist",
                MAX_UNICAST_LID
            ),
        )
        .label(origin.source, origin.span, format!("{lids} LIDs"));
        if let Some(sp) = e.config.routing.lmc_span {
            d = d.label(
                origin.source,
                sp,
                format!("each HCA port takes {} LIDs", 1u32 << f.lmc),
            );
        }
        out.push(d.help(format!(
            "{} switches take one LID each and {} HCA ports take 2^lmc each; lower `lmc` or split the fabric",
            f.switch_count(),
            f.hca_count()
        )));
    }

    // LFT capacity per switch model.
    let mut short: BTreeMap<(String, u32), Vec<NodeId>> = BTreeMap::new();
    for (id, n) in f.node_ids().zip(f.nodes()) {
        if n.is_switch() && u64::from(n.spec.linear_fdb_cap) <= lids.min(u64::from(MAX_UNICAST_LID))
        {
            let model = n.spec.model.clone().unwrap_or_else(|| "(no model)".into());
            short
                .entry((model, n.spec.linear_fdb_cap))
                .or_default()
                .push(id);
        }
    }
    for ((model, cap), ids) in short {
        let names: Vec<&str> = ids.iter().map(|&i| f.node(i).name()).collect();
        let (Some(&id), Some(name)) = (ids.first(), names.first()) else {
            continue;
        };
        let first = e.origin(id);
        out.push(
            Diagnostic::error(
                Code::LftCapacityExceeded,
                format!(
                    "{} switch(es) of model `{model}` hold {cap} LFT entries but the fabric's LIDs run to {lids}",
                    ids.len()
                ),
            )
            .label(first.source, first.span, format!("{name} declared here"))
            .help(format!(
                "LinearFDBCap must exceed the highest LID; affected: {}",
                list(&names)
            )),
        );
    }

    // VL budget against port capabilities.
    if let Some((budget, span)) = e.config.vls_budget {
        let mut low: BTreeMap<u8, Vec<&str>> = BTreeMap::new();
        for n in f.nodes() {
            if n.spec.caps.vl_cap < budget {
                low.entry(n.spec.caps.vl_cap).or_default().push(n.name());
            }
        }
        for (cap, names) in low {
            out.push(
                Diagnostic::error(
                    Code::VlBudgetExceeded,
                    format!(
                        "the VL budget is {budget} but {} node(s) support only {cap} data VL(s)",
                        names.len()
                    ),
                )
                .label(origin.source, span, format!("{budget} VLs"))
                .help(format!(
                    "lower `budget` to {cap} or replace {}",
                    list(&names)
                )),
            );
        }
    }
    out
}

fn unconnected(e: &Elaborated, out: &mut Vec<Diagnostic>) {
    let f = &e.fabric;
    let lonely: Vec<NodeId> = f
        .node_ids()
        .filter(|&i| f.node(i).ports.iter().all(|p| p.link.is_none()))
        .collect();
    if lonely.is_empty() {
        return;
    }
    let names: Vec<&str> = lonely.iter().map(|&i| f.node(i).name()).collect();
    let (Some(&id), Some(name)) = (lonely.first(), names.first()) else {
        return;
    };
    let o = e.origin(id);
    out.push(
        Diagnostic::warning(
            Code::UnconnectedNode,
            format!("{} node(s) have no links: {}", names.len(), list(&names)),
        )
        .label(o.source, o.span, format!("`{name}` is declared here"))
        .help("cable them with `link`, or remove them"),
    );
}

/// Every name must be writable as a node description: `weft build` and `weft export` write
/// them into ibnetdiscover and OpenSM files, so a name they cannot carry fails here, at its
/// declaration, not later in `build`.
fn names(e: &Elaborated, out: &mut Vec<Diagnostic>) {
    let f = &e.fabric;
    for id in f.node_ids() {
        let name = f.node(id).name();
        let Some(reason) = weft_formats::ibnetdiscover::name_problem(name) else {
            continue;
        };
        let o = e.origin(id);
        out.push(
            Diagnostic::error(
                Code::UnwritableName,
                format!("node name `{}` cannot be written as a node description: {reason}", name.escape_debug()),
            )
            .label(o.source, o.span, "declared here")
            .help("node descriptions are 1 to 63 printable ASCII characters without `\"`, `#` or `=`; rename the node"),
        );
    }
}

/// The cabling (up links, nodes not down) must be one piece.
fn components(e: &Elaborated, out: &mut Vec<Diagnostic>) {
    let f = &e.fabric;
    let n = f.nodes().len();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    /// The root of `x`'s set, halving the path on the way (an id out of range is its own).
    fn find(p: &mut [u32], mut x: u32) -> u32 {
        while let Some(&up) = p.get(x as usize) {
            if up == x {
                break;
            }
            let grand = p.get(up as usize).copied().unwrap_or(up);
            if let Some(slot) = p.get_mut(x as usize) {
                *slot = grand;
            }
            x = grand;
        }
        x
    }
    for l in f.links() {
        if l.state == LinkState::Up {
            let (a, b) = (find(&mut parent, l.a.node.0), find(&mut parent, l.b.node.0));
            if let (true, Some(slot)) = (a != b, parent.get_mut(a.max(b) as usize)) {
                *slot = a.min(b);
            }
        }
    }
    let mut parts: BTreeMap<u32, Vec<NodeId>> = BTreeMap::new();
    for id in f.node_ids() {
        let node = f.node(id);
        // A switch is live unless marked down: one whose links are all down still owns a
        // LID every other switch must reach, so it is a part of its own. An end node without
        // a live link is simply absent.
        let live = !node.down
            && (node.kind() == NodeKind::Switch
                || node
                    .ports
                    .iter()
                    .any(|p| p.link.is_some_and(|l| f.link(l).state == LinkState::Up)));
        if live {
            parts.entry(find(&mut parent, id.0)).or_default().push(id);
        }
    }
    if parts.len() <= 1 {
        return;
    }
    let mut parts: Vec<Vec<NodeId>> = parts.into_values().collect();
    parts.sort_by_key(|p| std::cmp::Reverse(p.len()));
    let cut: Vec<NodeId> = parts.iter().skip(1).flatten().copied().collect();
    let names: Vec<&str> = cut.iter().map(|&i| f.node(i).name()).collect();
    let (Some(&id), Some(name)) = (cut.first(), names.first()) else {
        return;
    };
    let o = e.origin(id);
    out.push(
        Diagnostic::error(
            Code::FabricSplit,
            format!(
                "the fabric is split into {} parts; {} node(s) cannot reach the largest part: {}",
                parts.len(),
                names.len(),
                list(&names)
            ),
        )
        .label(o.source, o.span, format!("`{name}` is cut off"))
        .help("check the links and the faults: every node must be reachable through up links (a switch out of service is `switch NAME down`)"),
    );
}
