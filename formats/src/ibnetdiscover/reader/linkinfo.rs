//! Phase 1 for `iblinkinfo` output (its default layout, not `-l`).
//!
//! rdma-core's `infiniband-diags/iblinkinfo.c` prints a header per node, `Switch: 0x%016x
//! %s:` (the switch's port GUID, which is its node GUID, and its description) or `CA: %s:` /
//! `Router: %s:` (the description only), then one line per port: for an end node its port
//! GUID first, then `%6d %4d[%2s] ==(%3s %18s %6s/%8s)==>  ` — LID (a switch's port-0 LID),
//! port, external port, width, speed, state and physical state — and the peer, `%6d %4d[%2s]
//! "%s" (%s %s)` (its LID, port, external port, description and hints), `[  ] "" ( )` for a
//! port that is down, or `"Port not available"`.
//!
//! A peer is named by LID (its port's for an end node, port 0's for a switch) and
//! description, optionally by `0x` GUID first: the reader finds it by GUID, else by LID, else
//! — before an SM assigned LIDs, when every LID is 0 — by its description when one node has
//! it. As in the ports report there are no port counts and no end-node GUIDs
//! ([`report`](super::report) says how they are made up).

use super::report::{guid, number, word, Nodes, Shape};
use super::*;

const HELP: &str =
    "`iblinkinfo` prints `Switch: 0x7cfe900300bdd8f0 sw1:` or `CA: cn001 HCA-1:`, then \
                    one line per port such as `1 1[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>  \
                    5 1[  ] \"cn001 HCA-1\" ( )` (an end node's starting with its `0x` port GUID)";
const SHAPE: Shape = (InputFormat::LinkInfo, HELP);

/// Whether `t` (a trimmed line) is an `iblinkinfo` node header, or a line of its `-l`
/// layout (`0x… "name" …`, which is recognised to be refused).
pub(super) fn is_header(t: &str) -> bool {
    (t.ends_with(':')
        && (t.starts_with("Switch: 0x") || t.starts_with("CA: ") || t.starts_with("Router: ")))
        || is_line_mode(t)
}

/// A line of `iblinkinfo -l`: a `0x` GUID, then the node's description quoted.
fn is_line_mode(t: &str) -> bool {
    t.split_once(' ').is_some_and(|(g, rest)| {
        g.starts_with("0x") && parse_uint(g).is_some() && rest.trim_start().starts_with('"')
    })
}

/// A port line's peer as printed, found after every line is read.
struct Peer<'a> {
    guid: Option<(Guid, SourceSpan)>,
    lid: (u16, SourceSpan),
    port: (u32, SourceSpan),
    desc: (&'a str, SourceSpan),
}

/// The node header the port lines below belong to: its kind, its index once known (a
/// switch's at once, an end node's at its first port line, which gives its GUID) and its
/// description.
struct Header<'a> {
    kind: NodeKind,
    node: Option<usize>,
    desc: Option<(&'a str, SourceSpan)>,
}

/// A port line of node `node`, waiting for its peer to be found.
struct Line_<'a> {
    node: usize,
    rec: PortRec<'a>,
    peer: Peer<'a>,
}

/// Reads `iblinkinfo` output.
pub(super) fn read<'a>(cx: &mut Cx<'_>, text: &'a str) -> File<'a> {
    let mut nodes = Nodes::default();
    let mut first: Option<SourceSpan> = None;
    let mut current: Option<Header<'a>> = None;
    let mut waiting: Vec<Line_<'a>> = Vec::new();
    for line in lines(text) {
        let t = line.text.trim_matches([' ', '\t']);
        let data = is_header(t) || t.starts_with(|c: char| c.is_ascii_digit());
        if t.is_empty() || t.starts_with('#') || (!data && noise::skip(cx, &line)) {
            continue;
        }
        let lead = line.text.len() - line.text.trim_start_matches([' ', '\t']).len();
        let line_span = sp(line.start + lead, t.len());
        first.get_or_insert(line_span);
        if is_line_mode(t) {
            cx.error(
                Code::MalformedReportLine,
                line_span,
                "`iblinkinfo -l` output is not read",
                "a line of the one-line-per-port layout",
                "run `iblinkinfo` without `-l` (a header per node, then its ports), or import \
                 the default `ibnetdiscover` output",
            );
            break;
        }
        let mut sc = Scan::new(line.text, line.start);
        sc.skip_ws();
        if let Some(header) = read_header(cx, &mut sc, t, &mut nodes) {
            current = Some(header);
            continue;
        }
        let Some(Header { kind, node, desc }) = current.as_mut() else {
            cx.error(
                Code::MalformedReportLine,
                line_span,
                "`iblinkinfo` port line outside a node",
                "no `Switch:` or `CA:` header above this line",
                HELP,
            );
            continue;
        };
        if let Some(w) = read_port(cx, &mut sc, line_span, *kind, node, *desc, &mut nodes) {
            waiting.push(w);
        }
    }
    let found = Found::of(&nodes, &waiting);
    let peers: Vec<Option<(String, u32)>> = waiting
        .iter()
        .map(|w| found.peer(cx, &nodes, &w.peer))
        .collect();
    for (w, peer) in waiting.into_iter().zip(peers) {
        let Line_ { node, mut rec, .. } = w;
        if let Some((id, port)) = peer {
            nodes.named(&id, port, rec.remote_port_span);
            rec.remote_id = Cow::Owned(id);
            rec.remote_port = port;
        }
        if let Some(n) = nodes.nodes.get_mut(node) {
            n.ports.push(rec);
        }
    }
    nodes.finish(cx, InputFormat::LinkInfo, first)
}

/// A node header, `None` when `t` is none.
fn read_header<'a>(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'a>,
    t: &str,
    nodes: &mut Nodes<'a>,
) -> Option<Header<'a>> {
    if !t.ends_with(':') {
        return None;
    }
    let (w, _) = word(sc);
    let kind = match w {
        "Switch:" => NodeKind::Switch,
        "CA:" => NodeKind::Hca,
        "Router:" => NodeKind::Router,
        _ => return None,
    };
    let g = if kind == NodeKind::Switch {
        Some(guid(cx, sc, SHAPE)?)
    } else {
        None
    };
    sc.skip_ws();
    let rest = sc.rest().trim_end_matches([' ', '\t']);
    let name = rest.strip_suffix(':').unwrap_or(rest);
    let desc = Some((name, sp(sc.abs(), name.len())));
    let node = match g {
        Some((g, span)) => nodes.get_or_add(cx, (kind, g, span, g), desc, true),
        None => None,
    };
    Some(Header { kind, node, desc })
}

/// Reads a port line of the node `node` (made here for an end node's first port line).
fn read_port<'a>(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'a>,
    line_span: SourceSpan,
    kind: NodeKind,
    node: &mut Option<usize>,
    desc: Option<(&'a str, SourceSpan)>,
    nodes: &mut Nodes<'a>,
) -> Option<Line_<'a>> {
    let end_node = kind != NodeKind::Switch;
    let port_guid = if end_node {
        Some(guid(cx, sc, SHAPE)?)
    } else {
        None
    };
    let (lid, port) = lid_and_port(cx, sc)?;
    let i = match (*node, port_guid) {
        (Some(i), _) => i,
        (None, Some((g, span))) => {
            let Some(ng) = report::node_guid(kind, g, port.0) else {
                cx.error(
                    Code::BadGuid,
                    span,
                    format!(
                        "port GUID `{g}` of port {} is below its port number",
                        port.0
                    ),
                    "no node GUID can be made from this",
                    "an end node's GUID is taken as its port GUID minus the port number",
                );
                return None;
            };
            let i = nodes.get_or_add(cx, (kind, ng, span, g), desc, true)?;
            *node = Some(i);
            i
        }
        (None, None) => return None,
    };
    nodes.saw_port(i, port.0, port.1);
    if !end_node {
        if let Some(n) = nodes.nodes.get_mut(i) {
            if n.lid.is_none_or(|(l, _)| !is_assigned(l)) {
                n.lid = Some(lid);
            }
        }
    }
    let rate = read_link(cx, sc)?;
    let peer = read_peer(cx, sc)?;
    let rec = PortRec {
        line_span,
        port: port.0,
        port_span: port.1,
        local_guid: port_guid,
        remote_id: Cow::Borrowed(peer.desc.0),
        remote_span: peer.desc.1,
        remote_port: peer.port.0,
        remote_port_span: peer.port.1,
        remote_guid: None,
        local_lid: end_node.then_some(lid),
        local_lmc: None,
        remote_lid: Some(peer.lid),
        rate,
        opts: PortOpts::default(),
    };
    Some(Line_ { node: i, rec, peer })
}

/// `5    2[  ]`: a LID and a port (of a port line or its peer).
fn lid_and_port(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'_>,
) -> Option<((u16, SourceSpan), (u32, SourceSpan))> {
    let (lid, lid_span) = number(cx, sc, "a LID", u32::from(u16::MAX), SHAPE)?;
    let port = port_number(cx, sc)?;
    Some(((u16::try_from(lid).unwrap_or(u16::MAX), lid_span), port))
}

/// `2[  ]` or `2[ 5]`: a port number and its external number (ignored).
fn port_number(cx: &mut Cx<'_>, sc: &mut Scan<'_>) -> Option<(u32, SourceSpan)> {
    sc.skip_ws();
    let (digits, at) = sc.take(|b| b.is_ascii_digit());
    let port = digits.parse::<u32>().ok().filter(|&p| p <= 254);
    let closed = sc.rest().starts_with('[') && sc.rest().find(']').is_some();
    match (port, closed) {
        (Some(p), true) => {
            if let Some(close) = sc.rest().find(']') {
                sc.pos += close + 1;
            }
            Some((p, sp(at, digits.len())))
        }
        _ => {
            cx.error(
                Code::MalformedReportLine,
                sp(at, sc.rest().len().max(1)),
                "malformed `iblinkinfo` line",
                "expected a port number and `[..]`, like `12[  ]`",
                HELP,
            );
            None
        }
    }
}

/// `==( 4X 25.78125 Gbps Active/ LinkUp)==>`: the rate when the port is up (`None` for a
/// port that is down, or a rate libibmad did not know), or an error.
#[expect(
    clippy::option_option,
    reason = "outer: the line reads; inner: the port has a rate"
)]
fn read_link<'a>(cx: &mut Cx<'_>, sc: &mut Scan<'a>) -> Option<Option<(Rate, &'a str)>> {
    sc.skip_ws();
    let rest = sc.rest();
    let (Some(inner), Some(close)) = (rest.strip_prefix("==("), rest.find(")==>")) else {
        cx.error(
            Code::MalformedReportLine,
            sp(sc.abs(), rest.len().max(1)),
            "malformed `iblinkinfo` line",
            "expected the link, `==( 4X 25.78125 Gbps Active/  LinkUp)==>`",
            HELP,
        );
        return None;
    };
    let inside = inner.get(..close.saturating_sub(3)).unwrap_or("");
    let inside_at = sc.abs() + 3;
    sc.pos += close + 4;
    let mut words = inside.split_ascii_whitespace();
    let Some(first) = words.next() else {
        return Some(None);
    };
    let Some(width) = first
        .strip_suffix('X')
        .and_then(|d| d.parse::<u64>().ok())
        .map(Width::from_lanes)
    else {
        // `Down/ Polling`: no rate.
        return Some(None);
    };
    let number = words.next().unwrap_or("");
    let unit = words.next().unwrap_or("");
    let fdr10 = words.next() == Some("(FDR10)");
    let speed = match (number, unit, fdr10) {
        (_, "Gbps", true) => Some(Speed::FDR10),
        ("2.5", "Gbps", _) => Some(Speed::SDR),
        ("5.0", "Gbps", _) => Some(Speed::DDR),
        ("10.0", "Gbps", _) => Some(Speed::QDR),
        ("14.0625", "Gbps", _) => Some(Speed::FDR),
        ("25.78125", "Gbps", _) => Some(Speed::EDR),
        ("53.125", "Gbps", _) => Some(Speed::HDR),
        ("106.25", "Gbps", _) => Some(Speed::NDR),
        ("212.5", "Gbps", _) => Some(Speed::XDR),
        _ => None,
    };
    let lead = inside.len() - inside.trim_start().len();
    let text_end = inside
        .find(unit)
        .filter(|_| !unit.is_empty())
        .map_or(inside.len(), |u| u + unit.len());
    let text = inside.get(lead..text_end).unwrap_or("").trim_end();
    let span = sp(inside_at + lead, text.len().max(1));
    match (width, speed) {
        (Some(width), Some(speed)) => Some(Some((
            Rate {
                width: Some(width),
                speed: Some(speed),
                text_span: Some(span),
            },
            text,
        ))),
        _ => {
            cx.warn(
                Code::UnknownRate,
                span,
                format!("unknown link rate `{text}`"),
                "ignored",
                "widths are 1X, 2X, 4X, 8X and 12X; lane speeds are 2.5, 5.0, 10.0, 14.0625, \
                 25.78125, 53.125, 106.25 and 212.5 Gbps, and 10.0 Gbps (FDR10)",
            );
            Some(None)
        }
    }
}

/// The peer after `==>`: `None` (without an error) for a port without one is not possible
/// here, so a port line without a peer returns `None` too: the caller keeps only ports with
/// peers. Errors for a peer that does not parse.
fn read_peer<'a>(cx: &mut Cx<'_>, sc: &mut Scan<'a>) -> Option<Peer<'a>> {
    sc.skip_ws();
    let rest = sc.rest();
    if rest.starts_with('[') || rest.starts_with("\"Port not available\"") || rest.is_empty() {
        return None;
    }
    let g = if rest.starts_with("0x") {
        Some(guid(cx, sc, SHAPE)?)
    } else {
        None
    };
    let (lid, port) = lid_and_port(cx, sc)?;
    sc.skip_ws();
    let desc = match sc.quoted() {
        Ok((d, span)) => (d, span),
        Err(span) => {
            cx.error(
                Code::MalformedReportLine,
                span,
                "malformed `iblinkinfo` line",
                "expected the peer's description in double quotes",
                HELP,
            );
            return None;
        }
    };
    Some(Peer {
        guid: g,
        lid,
        port,
        desc,
    })
}

/// Where peers are found: by GUID, by LID, by description.
struct Found<'n> {
    switch_by_guid: BTreeMap<Guid, usize>,
    port_by_guid: BTreeMap<Guid, (usize, u32)>,
    switch_by_lid: BTreeMap<u16, usize>,
    port_by_lid: BTreeMap<u16, (usize, u32)>,
    by_desc: BTreeMap<&'n str, Vec<usize>>,
}

impl<'n> Found<'n> {
    fn of(nodes: &'n Nodes<'_>, lines: &[Line_<'_>]) -> Found<'n> {
        let mut f = Found {
            switch_by_guid: BTreeMap::new(),
            port_by_guid: BTreeMap::new(),
            switch_by_lid: BTreeMap::new(),
            port_by_lid: BTreeMap::new(),
            by_desc: BTreeMap::new(),
        };
        for (i, n) in nodes.nodes.iter().enumerate() {
            if let Some((d, _)) = n.desc {
                f.by_desc.entry(d).or_default().push(i);
            }
            if n.kind == NodeKind::Switch {
                f.switch_by_guid.insert(n.guid, i);
                if let Some((l, _)) = n.lid.filter(|&(l, _)| is_assigned(l)) {
                    f.switch_by_lid.insert(l, i);
                }
            }
        }
        // An end node's ports: by their GUIDs and LIDs (the first line of each wins).
        for l in lines {
            let end = (l.node, l.rec.port);
            if let Some((g, _)) = l.rec.local_guid {
                f.port_by_guid.entry(g).or_insert(end);
            }
            if let Some((lid, _)) = l.rec.local_lid.filter(|&(lid, _)| is_assigned(lid)) {
                f.port_by_lid.entry(lid).or_insert(end);
            }
        }
        f
    }

    /// The id and port of a peer, or `None` after an error (several candidates) or when no
    /// node matches (phase 2 reports the unknown node, under the peer's description).
    fn peer(&self, cx: &mut Cx<'_>, nodes: &Nodes<'_>, p: &Peer<'_>) -> Option<(String, u32)> {
        let id = |i: usize| nodes.nodes.get(i).map(|n| n.id.to_string());
        if let Some((g, _)) = p.guid {
            if let Some(&i) = self.switch_by_guid.get(&g) {
                return Some((id(i)?, p.port.0));
            }
            return self
                .port_by_guid
                .get(&g)
                .and_then(|&(i, port)| Some((id(i)?, port)));
        }
        let (lid, _) = p.lid;
        if is_assigned(lid) {
            if let Some(&i) = self.switch_by_lid.get(&lid) {
                return Some((id(i)?, p.port.0));
            }
            return self
                .port_by_lid
                .get(&lid)
                .and_then(|&(i, port)| Some((id(i)?, port)));
        }
        match self.by_desc.get(p.desc.0).map(Vec::as_slice) {
            Some([i]) => Some((id(*i)?, p.port.0)),
            Some(many) if many.len() > 1 => {
                cx.error(
                    Code::AmbiguousPeer,
                    p.desc.1,
                    format!(
                        "cannot tell which node `{}` this port is wired to",
                        p.desc.0
                    ),
                    format!("LID 0 and {} nodes with this name", many.len()),
                    "`iblinkinfo` names a peer by LID and description only; before a subnet \
                     manager assigned LIDs, give the nodes unique descriptions or import the \
                     default `ibnetdiscover` output",
                );
                None
            }
            _ => None,
        }
    }
}
