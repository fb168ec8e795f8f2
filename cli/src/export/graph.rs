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

/// Text written into a DOT file, only ever made by [`q`]: quoted so that Graphviz reads it
/// back as the same string.
struct Dot(String);

impl std::fmt::Display for Dot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A DOT quoted string, read back by Graphviz as `s`: `"` escaped, every other character
/// as it is (Graphviz keeps a backslash and a line break inside quotes). Refused: control
/// characters other than tab and line ends (Graphviz refuses NUL), and a backslash before a
/// quote, a line break or the end, which DOT cannot hold.
fn q(s: &str) -> Result<Dot, String> {
    let mut o = String::from("\"");
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' if matches!(chars.peek(), None | Some('"' | '\n' | '\r')) => {
                return Err(format!(
                    "{s:?} cannot be written in DOT: a backslash before a quote, a line break or the end"
                ))
            }
            '\t' | '\n' | '\r' => o.push(c),
            c if c.is_control() => {
                return Err(format!(
                    "{s:?} cannot be written in DOT: it holds the control character U+{:04X}",
                    u32::from(c)
                ))
            }
            c => o.push(c),
        }
    }
    o.push('"');
    Ok(Dot(o))
}

/// `s` in a one-line comment: control characters as spaces (a comment is not read back).
fn comment(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
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
/// and tail labels; down cables and nodes dashed. A name DOT cannot hold is refused.
pub(crate) fn dot(fabric: &Fabric) -> Result<String, String> {
    let lv = levels(fabric);
    let level = |i: usize| lv.get(i).copied().flatten();
    let names = fabric
        .nodes()
        .iter()
        .map(|n| q(n.name()))
        .collect::<Result<Vec<Dot>, String>>()?;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "// fabric `{}`, written by `weft export --format dot`: nodes carry kind, role, level and guid; edges the port at each end (taillabel, headlabel), speed, width and state.",
        comment(&fabric.name)
    );
    let _ = writeln!(t, "graph {} {{", q(&fabric.name)?);
    let _ = writeln!(t, "  node [fontsize=10];");
    let _ = writeln!(t, "  edge [fontsize=8, labelfontsize=8];");
    for (i, n) in fabric.nodes().iter().enumerate() {
        let mut a = Vec::new();
        for (k, v) in node_attrs(n, level(i)) {
            a.push(format!("{k}={}", q(&v)?));
        }
        a.push(format!(
            "shape={}",
            if n.is_switch() { "box" } else { "ellipse" }
        ));
        if n.down || (!n.is_switch() && !n.role().is_host()) {
            a.push("style=dashed".to_owned());
        }
        let _ = writeln!(t, "  {} [{}];", names[i], a.join(", "));
    }
    // One rank per level, highest first.
    let mut by_level: std::collections::BTreeMap<u8, Vec<&Dot>> = Default::default();
    for (i, name) in names.iter().enumerate() {
        if let Some(l) = level(i) {
            by_level.entry(l).or_default().push(name);
        }
    }
    for (l, names) in by_level.iter().rev() {
        let list: Vec<String> = names.iter().map(ToString::to_string).collect();
        let _ = writeln!(t, "  {{ rank=same; /* level {l} */ {}; }}", list.join("; "));
    }
    for l in fabric.links() {
        let (mut up, mut down) = (l.a, l.b);
        if level(up.node.index()) < level(down.node.index()) {
            std::mem::swap(&mut up, &mut down);
        }
        let (speed, width) = rate(fabric, l);
        let mut a = vec![
            format!("taillabel={}", q(&up.port.0.to_string())?),
            format!("headlabel={}", q(&down.port.0.to_string())?),
            format!("speed={}", q(&speed)?),
            format!("width={}", q(&width)?),
        ];
        if l.state == LinkState::Down {
            a.push("state=\"down\"".to_owned());
            a.push("style=dashed".to_owned());
        }
        let _ = writeln!(
            t,
            "  {} -- {} [{}];",
            names[up.node.index()],
            names[down.node.index()],
            a.join(", ")
        );
    }
    t.push_str("}\n");
    Ok(t)
}

/// Text written into a GraphML file, only ever made by [`x`]: escaped so that an XML parser
/// reads it back as the same string.
struct Xml(String);

impl std::fmt::Display for Xml {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// XML character data or attribute text read back as `s`: the five entities escaped, tab
/// and line ends as character references (a parser would otherwise turn `\r` into `\n`, and
/// either into a space in an attribute). Refused: characters XML 1.0 cannot hold (other C0
/// control characters, U+FFFE, U+FFFF).
fn x(s: &str) -> Result<Xml, String> {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\t' | '\n' | '\r' => {
                let _ = write!(o, "&#{};", u32::from(c));
            }
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => {
                return Err(format!(
                    "{s:?} cannot be written in GraphML: XML 1.0 cannot hold U+{:04X}",
                    u32::from(c)
                ))
            }
            c => o.push(c),
        }
    }
    Ok(Xml(o))
}

/// `s` inside an XML comment: control characters as spaces, no `--`, no `-` at the end.
fn xml_comment(s: &str) -> String {
    let mut o = comment(s);
    while o.contains("--") {
        o = o.replace("--", "- -");
    }
    if o.ends_with('-') {
        o.push(' ');
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
pub(crate) fn graphml(fabric: &Fabric) -> Result<String, String> {
    let lv = levels(fabric);
    let mut t = String::new();
    t.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        t,
        "<!-- fabric `{}`, written by weft export (GraphML) -->",
        xml_comment(&fabric.name)
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
        x(&fabric.name)?
    );
    for (i, n) in fabric.nodes().iter().enumerate() {
        let _ = writeln!(t, "    <node id=\"n{i}\">");
        let _ = writeln!(t, "      <data key=\"name\">{}</data>", x(n.name())?);
        for (k, v) in node_attrs(n, lv.get(i).copied().flatten()) {
            let _ = writeln!(t, "      <data key=\"{k}\">{}</data>", x(&v)?);
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
    Ok(t)
}
