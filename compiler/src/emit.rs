//! A [`Fabric`] → readable weft source, so a discovered fabric becomes a program that can be
//! edited and compiled (`weft import`).

use crate::syntax::is_plain_ident;
use std::fmt::Write as _;
use weft_fabric::{Fabric, Guid, LidAssignment, LinkState, NodeKind, PortNum};

/// Writes `fabric` as a weft program with an explicit `topology { … }` block.
///
/// Names that are plain identifiers are written bare, others as strings; GUIDs, port GUIDs
/// (where they differ from the derived ones), end nodes' roles (when not `host`, or `host`
/// where the node looks like an aggregation node), vendor/device ids, LIDs seen in the dump
/// and negotiated link rates are kept. Links that are down become a `faults` block.
pub fn fabric_to_weft(fabric: &Fabric, lids: Option<&LidAssignment>, origin: &str) -> String {
    let mut out = String::new();
    let levels = header(&mut out, fabric, origin);
    // End nodes kept as hosts although they look like aggregation nodes: written
    // `role = host`, so that recognition leaves them be when the program is compiled.
    let looks_like_an: std::collections::BTreeSet<weft_fabric::NodeId> =
        weft_fabric::roles::aggregation_nodes(fabric, |_| false)
            .into_iter()
            .map(|r| r.node)
            .collect();
    let fname = if is_plain_ident(&fabric.name) {
        fabric.name.clone()
    } else {
        "imported".to_owned()
    };
    let _ = writeln!(out, "fabric {fname} {{");
    let _ = writeln!(out, "    topology {{");
    for (id, n) in fabric.node_ids().zip(fabric.nodes()) {
        let attrs = node_attrs(
            n,
            lids.and_then(|l| l.base.get(&id)),
            levels.get(id.index()).copied().flatten(),
            looks_like_an.contains(&id),
        );
        let _ = writeln!(
            out,
            "        {} {} {{ {} }}",
            n.kind().keyword(),
            name(n.name()),
            attrs.join(", ")
        );
    }
    if !fabric.links().is_empty() {
        out.push('\n');
    }
    for l in fabric.links() {
        let _ = writeln!(out, "{}", link_line(fabric, l));
    }
    let _ = writeln!(out, "    }}");
    faults(&mut out, fabric);
    let _ = writeln!(out, "}}");
    out
}

/// The comment lines that open an imported program (what was imported, what shape it has);
/// the levels of the fat-tree it was found to be (empty when it is none).
fn header(out: &mut String, fabric: &Fabric, origin: &str) -> Vec<Option<u8>> {
    let links_up = fabric
        .links()
        .iter()
        .filter(|l| l.state == LinkState::Up)
        .count();
    // Service nodes apart, as `weft check` counts them.
    let service = fabric
        .nodes()
        .iter()
        .filter(|n| !n.is_switch() && !n.is_host())
        .count();
    let ends = match service {
        0 => format!("{} HCAs", fabric.hca_count()),
        n => format!(
            "{} HCAs + {n} service node{}",
            fabric.hca_count().saturating_sub(n),
            if n == 1 { "" } else { "s" }
        ),
    };
    let _ = writeln!(
        out,
        "// Imported from {origin} by `weft import`: {} switches, {ends}, {links_up} links.",
        fabric.switch_count(),
    );
    // The levels a fat-tree was found to have are written out, so the program says what it is
    // and routes with `fat_tree` by default.
    match crate::routing::shape::detect(fabric) {
        crate::routing::shape::Shape::FatTree(t) => {
            let _ = writeln!(
                out,
                "// The cabling is {}: `fat_tree` routes it by default.",
                t.describe(fabric)
            );
            t.levels
        }
        crate::routing::shape::Shape::Other { reason, .. } => {
            let _ = writeln!(
                out,
                "// Not a fat-tree ({reason}): `updn` routes it by default."
            );
            Vec::new()
        }
    }
}

/// A node declaration's attributes: ports, GUIDs, role, host, rail, level, ids and LID.
/// `lids` are the node's ports' LIDs as seen; `level` its fat-tree level; `keep_host` when it
/// looks like an aggregation node but is a host.
fn node_attrs(
    n: &weft_fabric::Node,
    lids: Option<&std::collections::BTreeMap<PortNum, weft_fabric::Lid>>,
    level: Option<u8>,
    keep_host: bool,
) -> Vec<String> {
    let mut attrs = vec![
        format!("ports = {}", n.spec.port_count),
        format!("guid = {:#018x}", n.guid().0),
    ];
    if let Some(sg) = n.spec.system_guid.filter(|&g| g != n.guid()) {
        attrs.push(format!("system_guid = {:#018x}", sg.0));
    }
    let derived = |p: u8| match n.kind() {
        NodeKind::Switch => n.guid(),
        _ => Guid(n.guid().0.wrapping_add(u64::from(p))),
    };
    if n.ports.iter().any(|p| p.guid != derived(p.num.0)) {
        let list: Vec<String> = n
            .ports
            .iter()
            .map(|p| format!("{:#018x}", p.guid.0))
            .collect();
        attrs.push(format!("port_guids = [{}]", list.join(", ")));
    }
    if !n.role().is_host() || keep_host {
        attrs.push(format!("role = {}", n.role()));
    }
    if let Some(h) = &n.spec.host {
        attrs.push(format!("host = {}", quote(h)));
    }
    if let Some(r) = n.spec.rail {
        attrs.push(format!("rail = {r}"));
    }
    if let Some(level) = level {
        attrs.push(format!("level = {level}"));
    }
    if n.spec.vendor_id != 0 {
        attrs.push(format!("vendor = {:#06x}", n.spec.vendor_id));
    }
    if n.spec.device_id != 0 {
        attrs.push(format!("device = {:#06x}", n.spec.device_id));
    }
    let key = if n.is_switch() {
        PortNum(0)
    } else {
        PortNum(1)
    };
    if let Some(lid) = lids.and_then(|p| p.get(&key)).filter(|l| l.0 != 0) {
        attrs.push(format!("lid = {}", lid.0));
    }
    attrs
}

/// A `link` line of the topology block, with its negotiated speed and width.
fn link_line(fabric: &Fabric, l: &weft_fabric::Link) -> String {
    let a = fabric.node(l.a.node).name();
    let b = fabric.node(l.b.node).name();
    let mut attrs = Vec::new();
    if let Some(s) = l.speed {
        attrs.push(format!("speed = {s}"));
    }
    if let Some(w) = l.width {
        attrs.push(format!("width = {w}"));
    }
    let tail = if attrs.is_empty() {
        String::new()
    } else {
        format!(" {{ {} }}", attrs.join(", "))
    };
    format!(
        "        link {}.p[{}] <-> {}.p[{}]{tail}",
        reference(a),
        l.a.port,
        reference(b),
        l.b.port
    )
}

/// The `faults` block: nodes down, and links down between nodes that are up.
fn faults(out: &mut String, fabric: &Fabric) {
    let down_nodes: Vec<_> = fabric.nodes().iter().filter(|n| n.down).collect();
    let down_links: Vec<_> = fabric
        .links()
        .iter()
        .filter(|l| {
            l.state == LinkState::Down && !fabric.node(l.a.node).down && !fabric.node(l.b.node).down
        })
        .collect();
    if down_nodes.is_empty() && down_links.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n    faults {{");
    for n in down_nodes {
        let _ = writeln!(
            out,
            "        {} {} down",
            n.kind().keyword(),
            reference(n.name())
        );
    }
    for l in down_links {
        let _ = writeln!(
            out,
            "        link {}.p[{}] down",
            reference(fabric.node(l.a.node).name()),
            l.a.port
        );
    }
    let _ = writeln!(out, "    }}");
}

/// A node name as source text: bare when it is an identifier, else quoted.
pub(crate) fn name_in_source(n: &str) -> String {
    name(n)
}

/// A node name in a declaration.
fn name(n: &str) -> String {
    if is_plain_ident(n) {
        n.to_owned()
    } else {
        quote(n)
    }
}

/// A node name in an expression.
fn reference(n: &str) -> String {
    if is_plain_ident(n) && !crate::BUILTINS.contains(&n) {
        n.to_owned()
    } else {
        format!("node({})", quote(n))
    }
}

fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}
