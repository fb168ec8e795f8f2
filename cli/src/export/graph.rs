//! The fabric for drawing tools: Graphviz DOT and GraphML. Switches and end nodes are nodes
//! (kind, role, level, GUID), cables are edges (the port at each end, speed, width, state).
//! Levels are weft's fat-tree detection's (`weft_compiler::routing::shape::levels`): leaves 1,
//! end nodes 0, none for a switch outside the tree's levels or a fabric with no host.

use std::fmt::Write as _;
use weft_fabric::{Fabric, Link, LinkState, Node};

/// Each node's level: a switch's from the fat-tree detection, 0 for an end node, `None` for
/// a switch outside the levels.
fn levels(fabric: &Fabric) -> Vec<Option<u8>> {
    let sw = super::switch_levels(fabric);
    fabric
        .nodes()
        .iter()
        .enumerate()
        .map(|(i, n)| {
            if n.is_switch() {
                sw.get(i).copied().flatten()
            } else {
                Some(0)
            }
        })
        .collect()
}

/// A cable's speed and width: negotiated when known, else the slower and narrower port's.
fn rate(fabric: &Fabric, l: &Link) -> (String, String) {
    let a = &fabric.node(l.a.node).spec.caps;
    let b = &fabric.node(l.b.node).spec.caps;
    let speed = l.speed.unwrap_or(a.speed.min(b.speed));
    let width = l.width.unwrap_or(a.width.min(b.width));
    (speed.to_string(), width.to_string())
}

/// A DOT quoted string.
fn q(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' | '\r' => o.push(' '),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// The attributes every node carries, as `(key, value)` pairs of text.
fn node_attrs(n: &Node, level: Option<u8>) -> Vec<(&'static str, String)> {
    let mut v = vec![("kind", n.kind().keyword().to_owned())];
    if !n.is_switch() {
        v.push(("role", n.role().keyword().to_owned()));
    }
    if let Some(l) = level {
        v.push(("level", l.to_string()));
    }
    v.push(("guid", n.guid().to_string()));
    if let Some(h) = &n.spec.host {
        v.push(("host", h.clone()));
    }
    if let Some(r) = n.spec.rail {
        v.push(("rail", r.to_string()));
    }
    if n.down {
        v.push(("state", "down".to_owned()));
    }
    v
}

/// Graphviz DOT: an undirected graph, switches as boxes, end nodes as ellipses (service
/// nodes dashed), one rank per level, each cable from its upper end with the ports as head
/// and tail labels; down cables and nodes dashed.
pub(crate) fn dot(fabric: &Fabric) -> String {
    let lv = levels(fabric);
    let level = |i: usize| lv.get(i).copied().flatten();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "// fabric `{}`, written by `weft export --format dot`: nodes carry kind, role, level and guid; edges the port at each end (taillabel, headlabel), speed, width and state.",
        fabric.name
    );
    let _ = writeln!(t, "graph {} {{", q(&fabric.name));
    let _ = writeln!(t, "  node [fontsize=10];");
    let _ = writeln!(t, "  edge [fontsize=8, labelfontsize=8];");
    for (i, n) in fabric.nodes().iter().enumerate() {
        let mut a: Vec<String> = node_attrs(n, level(i))
            .into_iter()
            .map(|(k, v)| format!("{k}={}", q(&v)))
            .collect();
        a.push(format!(
            "shape={}",
            if n.is_switch() { "box" } else { "ellipse" }
        ));
        if n.down || (!n.is_switch() && !n.role().is_host()) {
            a.push("style=dashed".to_owned());
        }
        let _ = writeln!(t, "  {} [{}];", q(n.name()), a.join(", "));
    }
    // One rank per level, highest first.
    let mut by_level: std::collections::BTreeMap<u8, Vec<&str>> = Default::default();
    for (i, n) in fabric.nodes().iter().enumerate() {
        if let Some(l) = level(i) {
            by_level.entry(l).or_default().push(n.name());
        }
    }
    for (l, names) in by_level.iter().rev() {
        let list: Vec<String> = names.iter().map(|n| q(n)).collect();
        let _ = writeln!(t, "  {{ rank=same; /* level {l} */ {}; }}", list.join("; "));
    }
    for l in fabric.links() {
        let (mut up, mut down) = (l.a, l.b);
        if level(up.node.index()) < level(down.node.index()) {
            std::mem::swap(&mut up, &mut down);
        }
        let (speed, width) = rate(fabric, l);
        let mut a = vec![
            format!("taillabel={}", q(&up.port.0.to_string())),
            format!("headlabel={}", q(&down.port.0.to_string())),
            format!("speed={}", q(&speed)),
            format!("width={}", q(&width)),
        ];
        if l.state == LinkState::Down {
            a.push("state=\"down\"".to_owned());
            a.push("style=dashed".to_owned());
        }
        let _ = writeln!(
            t,
            "  {} -- {} [{}];",
            q(fabric.node(up.node).name()),
            q(fabric.node(down.node).name()),
            a.join(", ")
        );
    }
    t.push_str("}\n");
    t
}

/// XML character data or attribute text: the five entities escaped, characters XML 1.0
/// cannot hold replaced by U+FFFD.
fn x(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\t' | '\n' | '\r' => o.push(c),
            c if c.is_control() => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// The GraphML keys: id, what they are on, name, type.
const KEYS: &[(&str, &str, &str, &str)] = &[
    ("name", "node", "name", "string"),
    ("kind", "node", "kind", "string"),
    ("role", "node", "role", "string"),
    ("level", "node", "level", "int"),
    ("guid", "node", "guid", "string"),
    ("host", "node", "host", "string"),
    ("rail", "node", "rail", "int"),
    ("state", "all", "state", "string"),
    ("source_port", "edge", "source_port", "int"),
    ("target_port", "edge", "target_port", "int"),
    ("speed", "edge", "speed", "string"),
    ("width", "edge", "width", "string"),
];

/// GraphML: keys declared for every attribute, nodes `n<index>` and edges `e<index>` in the
/// model's order, each cable from its `a` end to its `b` end with both ports.
pub(crate) fn graphml(fabric: &Fabric) -> String {
    let lv = levels(fabric);
    let mut t = String::new();
    t.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        t,
        "<!-- fabric `{}`, written by weft export (GraphML) -->",
        x(&fabric.name).replace("--", "- -")
    );
    t.push_str("<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:schemaLocation=\"http://graphml.graphdrawing.org/xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd\">\n");
    for (id, on, name, ty) in KEYS {
        let _ = writeln!(
            t,
            "  <key id=\"{id}\" for=\"{on}\" attr.name=\"{name}\" attr.type=\"{ty}\"/>"
        );
    }
    let _ = writeln!(
        t,
        "  <graph id=\"{}\" edgedefault=\"undirected\">",
        x(&fabric.name)
    );
    for (i, n) in fabric.nodes().iter().enumerate() {
        let _ = writeln!(t, "    <node id=\"n{i}\">");
        let _ = writeln!(t, "      <data key=\"name\">{}</data>", x(n.name()));
        for (k, v) in node_attrs(n, lv.get(i).copied().flatten()) {
            let _ = writeln!(t, "      <data key=\"{k}\">{}</data>", x(&v));
        }
        t.push_str("    </node>\n");
    }
    for (i, l) in fabric.links().iter().enumerate() {
        let (speed, width) = rate(fabric, l);
        let _ = writeln!(
            t,
            "    <edge id=\"e{i}\" source=\"n{}\" target=\"n{}\">",
            l.a.node.index(),
            l.b.node.index()
        );
        let _ = writeln!(t, "      <data key=\"source_port\">{}</data>", l.a.port.0);
        let _ = writeln!(t, "      <data key=\"target_port\">{}</data>", l.b.port.0);
        let _ = writeln!(t, "      <data key=\"speed\">{speed}</data>");
        let _ = writeln!(t, "      <data key=\"width\">{width}</data>");
        if l.state == LinkState::Down {
            t.push_str("      <data key=\"state\">down</data>\n");
        }
        t.push_str("    </edge>\n");
    }
    t.push_str("  </graph>\n</graphml>\n");
    t
}
