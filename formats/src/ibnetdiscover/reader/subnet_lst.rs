//! Phase 1 for ibdm's `subnet.lst`: what OpenSM writes as `opensm-subnet.lst` and
//! `ibdmchk -s` reads (ibdiagnet 1.x wrote the same lines as `ibdiagnet.lst`).
//!
//! A line is one cabled port seen from one end, so every link is listed twice:
//! `{ <end> } { <end> } PHY=<width> LOG=<state> SPD=<Gb/s per lane>`, where an end is
//! `<TYPE>[-SM] Ports:<hex> SystemGUID:<hex> NodeGUID:<hex> PortGUID:<hex> VenID:<hex>
//! DevID:<hex> Rev:<hex> {<description>} LID:<hex> PN:<hex>` (`SW`, `CA` or `RT`; `-SM` marks
//! the subnet manager's node; a switch's LID is its port 0's). Unlike the port-by-port
//! reports this format says everything the topology format does but the LMC: port counts,
//! node, port and system image GUIDs, vendor and device ids, descriptions, LIDs and rates.
//! Nodes get the ids ibnetdiscover prints (`S-…`, `H-…`, `R-…` and the node GUID), so the
//! two formats of one fabric read to the same fabric. A node described two ways (another
//! type, port count or description under one node GUID) is an error.

use super::*;

/// Whether `t` (a trimmed line) starts like a `subnet.lst` line.
pub(super) fn is_line(t: &str) -> bool {
    t.starts_with('{') && t.contains("NodeGUID:") && t.contains("PN:")
}

const HELP: &str = "a `subnet.lst` line (OpenSM's `opensm-subnet.lst`) is two ends and the \
                    rate, `{ SW Ports:08 SystemGUID:… NodeGUID:… PortGUID:… VenID:… DevID:… \
                    Rev:… {leaf1} LID:0001 PN:05 } { CA Ports:01 … {cn001 HCA-1} LID:0002 PN:01 \
                    } PHY=4x LOG=ACT SPD=2.5`, the numbers in hex";

/// One end of a line.
struct End<'a> {
    kind: NodeKind,
    ports: (u32, SourceSpan),
    node_guid: (Guid, SourceSpan),
    port_guid: (Guid, SourceSpan),
    system_guid: Option<Guid>,
    vendor_id: u32,
    device_id: u32,
    desc: (&'a str, SourceSpan),
    lid: (u16, SourceSpan),
    port: (u32, SourceSpan),
}

/// Reads a `subnet.lst`.
pub(super) fn read<'a>(cx: &mut Cx<'_>, text: &'a str) -> File<'a> {
    let mut nodes: Vec<NodeRec<'a>> = Vec::new();
    let mut by_guid: BTreeMap<Guid, usize> = BTreeMap::new();
    // Whether a node's vendor and device ids come from a line of its own port (those of
    // a peer end are not to be trusted: OpenSM 3.3.23 prints the peer's device id shifted
    // left by 16 bits).
    let mut own: Vec<bool> = Vec::new();
    for line in lines(text) {
        let t = line.text.trim_matches([' ', '\t']);
        if t.is_empty() || t.starts_with('#') || (!t.starts_with('{') && noise::skip(cx, &line)) {
            continue;
        }
        let mut sc = Scan::new(line.text, line.start);
        sc.skip_ws();
        let line_span = sp(sc.abs(), t.len());
        let Some(here) = read_end(cx, &mut sc) else {
            continue;
        };
        sc.skip_ws();
        let Some(peer) = read_end(cx, &mut sc) else {
            continue;
        };
        let rate = read_rate(cx, &mut sc);
        let (Some(i), Some(_)) = (
            node(cx, (&mut nodes, &mut by_guid, &mut own), &here, true),
            node(cx, (&mut nodes, &mut by_guid, &mut own), &peer, false),
        ) else {
            continue;
        };
        let end_node = here.kind != NodeKind::Switch;
        let peer_end = peer.kind != NodeKind::Switch;
        let rec = PortRec {
            line_span,
            port: here.port.0,
            port_span: here.port.1,
            local_guid: end_node.then_some(here.port_guid),
            remote_id: Cow::Owned(report::node_id(peer.kind, peer.node_guid.0)),
            remote_span: peer.node_guid.1,
            remote_port: peer.port.0,
            remote_port_span: peer.port.1,
            remote_guid: peer_end.then_some(peer.port_guid),
            local_lid: end_node.then_some(here.lid),
            local_lmc: None,
            remote_lid: Some(peer.lid),
            rate,
            opts: PortOpts::default(),
        };
        if let Some(n) = nodes.get_mut(i) {
            n.ports.push(rec);
        }
    }
    File {
        nodes,
        format: InputFormat::SubnetLst,
    }
}

/// The nodes read so far, by node GUID, and whether each was seen as the near end of a line.
type Seen<'s, 'a> = (
    &'s mut Vec<NodeRec<'a>>,
    &'s mut BTreeMap<Guid, usize>,
    &'s mut Vec<bool>,
);

/// The record of `end`'s node (the near end of its line when `near`): made when first seen,
/// else checked against what was seen.
fn node<'a>(
    cx: &mut Cx<'_>,
    (nodes, by_guid, own): Seen<'_, 'a>,
    end: &End<'a>,
    near: bool,
) -> Option<usize> {
    let guid = end.node_guid.0;
    if let Some(&i) = by_guid.get(&guid) {
        let n = nodes.get_mut(i)?;
        if near && own.get(i) == Some(&false) {
            n.vendor_id = end.vendor_id;
            n.device_id = end.device_id;
            if let Some(o) = own.get_mut(i) {
                *o = true;
            }
        }
        let other = if n.kind != end.kind {
            Some("type")
        } else if n.port_count != end.ports.0 {
            Some("port count")
        } else if n.desc.map(|(d, _)| d) != Some(end.desc.0).filter(|d| !d.is_empty()) {
            Some("description")
        } else {
            None
        };
        if let Some(what) = other {
            let d = cx
                .diag(
                    Code::DuplicateGuid,
                    Severity::Error,
                    end.node_guid.1,
                    format!("node GUID `{guid}` is given another {what} here"),
                    format!("another {what}"),
                )
                .with_secondary(n.id_span, "first described here")
                .with_help("one node GUID is one node: its lines must agree");
            cx.push(d);
            return None;
        }
        if n.kind == NodeKind::Switch && n.lid.is_none_or(|(l, _)| !is_assigned(l)) {
            n.lid = Some(end.lid);
        }
        return Some(i);
    }
    let i = nodes.len();
    nodes.push(NodeRec {
        kind: end.kind,
        id: Cow::Owned(report::node_id(end.kind, guid)),
        id_span: end.node_guid.1,
        shown: None,
        port_count: end.ports.0,
        count_span: end.ports.1,
        desc: Some(end.desc).filter(|(d, _)| !d.is_empty()),
        guid,
        guid_origin: GuidOrigin::Explicit(end.node_guid.1),
        system_guid: end.system_guid,
        vendor_id: end.vendor_id,
        device_id: end.device_id,
        lid: (end.kind == NodeKind::Switch).then_some(end.lid),
        ports: Vec::new(),
    });
    by_guid.insert(guid, i);
    own.push(near);
    Some(i)
}

fn malformed(cx: &mut Cx<'_>, span: SourceSpan, label: impl Into<String>) {
    cx.error(
        Code::MalformedReportLine,
        sp(span.offset(), span.len().max(1)),
        "malformed `subnet.lst` line",
        label,
        HELP,
    );
}

/// A `Key:hex` field (`Ports:08`): its value and span, or an error naming `key`.
fn field(cx: &mut Cx<'_>, sc: &mut Scan<'_>, key: &str, max: u64) -> Option<(u64, SourceSpan)> {
    sc.skip_ws();
    let (w, at) = sc.take(|b| b != b' ' && b != b'\t' && b != b'}');
    let span = sp(at, w.len());
    let value = w
        .strip_prefix(key)
        .and_then(|v| v.strip_prefix(':'))
        .and_then(parse_hex)
        .filter(|&v| v <= max);
    if value.is_none() {
        malformed(
            cx,
            span,
            if w.is_empty() {
                format!("expected `{key}:`")
            } else if max == u64::MAX {
                format!("expected `{key}:` and a 64-bit hex number")
            } else {
                format!("expected `{key}:` and a hex number up to {max:#x}")
            },
        );
    }
    value.map(|v| (v, span))
}

/// A GUID field: non-zero.
fn guid_field(cx: &mut Cx<'_>, sc: &mut Scan<'_>, key: &str) -> Option<(Guid, SourceSpan)> {
    let (g, span) = field(cx, sc, key, u64::MAX)?;
    if g == 0 {
        cx.error(
            Code::BadGuid,
            span,
            format!("`{key}` 0"),
            "GUID 0 is reserved",
            "node and port GUIDs are non-zero",
        );
        return None;
    }
    Some((Guid(g), span))
}

/// One `{ … }` end of a line.
fn read_end<'a>(cx: &mut Cx<'_>, sc: &mut Scan<'a>) -> Option<End<'a>> {
    if !sc.eat(b'{') {
        malformed(cx, sp(sc.abs(), sc.rest().len()), "expected `{`");
        return None;
    }
    sc.skip_ws();
    let (word, at) = sc.take(|b| b.is_ascii_alphanumeric() || b == b'-');
    let kind = match word.strip_suffix("-SM").unwrap_or(word) {
        "SW" => NodeKind::Switch,
        "CA" => NodeKind::Hca,
        "RT" | "Rt" => NodeKind::Router,
        _ => {
            malformed(
                cx,
                sp(at, word.len()),
                format!("`{word}` is not a node type (`SW`, `CA` or `RT`)"),
            );
            return None;
        }
    };
    let ports = field(cx, sc, "Ports", 0xff)?;
    let ports = (ports.0 as u32, ports.1);
    if !(1..=254).contains(&ports.0) {
        cx.error(
            Code::BadNumber,
            ports.1,
            format!("port count {} is out of range", ports.0),
            "not 1 to 254",
            "a node has 1 to 254 ports (255 is reserved), not counting a switch's port 0",
        );
        return None;
    }
    let system = field(cx, sc, "SystemGUID", u64::MAX)?;
    let node_guid = guid_field(cx, sc, "NodeGUID")?;
    let port_guid = guid_field(cx, sc, "PortGUID")?;
    let vendor = field(cx, sc, "VenID", u64::from(u32::MAX))?;
    let device = field(cx, sc, "DevID", u64::from(u32::MAX))?;
    field(cx, sc, "Rev", u64::MAX)?;
    sc.skip_ws();
    let open = sc.abs();
    let rest = sc.rest();
    // The description runs from `{` to the `}` before `LID:` (it may hold braces).
    let close = rest.find("} LID:").filter(|_| rest.starts_with('{'));
    let Some(close) = close else {
        malformed(
            cx,
            sp(open, rest.len()),
            "expected the description in braces, `{…}`, then `LID:`",
        );
        return None;
    };
    let desc = (rest.get(1..close).unwrap_or(""), sp(open, close + 1));
    sc.pos += close + 1;
    let lid = field(cx, sc, "LID", u64::from(u16::MAX))?;
    let lid = (lid.0 as u16, lid.1);
    if is_assigned(lid.0) && lid.0 > MAX_UNICAST_LID {
        cx.error(
            Code::BadLid,
            lid.1,
            format!("LID {:#06x} is not a unicast LID", lid.0),
            "out of range",
            "unicast LIDs are 1 to 0xbfff; 0 means no LID yet",
        );
        return None;
    }
    let port = field(cx, sc, "PN", 0xff)?;
    let port = (port.0 as u32, port.1);
    sc.skip_ws();
    if !sc.eat(b'}') {
        malformed(cx, sp(sc.abs(), sc.rest().len()), "expected `}`");
        return None;
    }
    Some(End {
        kind,
        ports,
        node_guid,
        port_guid,
        system_guid: Some(Guid(system.0)).filter(|g| g.0 != 0),
        vendor_id: vendor.0 as u32,
        device_id: device.0 as u32,
        desc,
        lid,
        port,
    })
}

/// The rate after the two ends: `PHY=4x … SPD=25`, the speed in Gb/s per lane (`FDR10` by
/// name). `None` with a warning when a word is missing or unknown.
fn read_rate<'a>(cx: &mut Cx<'_>, sc: &mut Scan<'a>) -> Option<(Rate, &'a str)> {
    sc.skip_ws();
    let start = sc.abs();
    let text = sc.rest().trim_end_matches([' ', '\t']);
    let span = sp(start, text.len().max(1));
    let value = |key: &str| {
        text.split_ascii_whitespace()
            .find_map(|w| w.strip_prefix(key))
    };
    let width = value("PHY=")
        .and_then(|w| w.strip_suffix('x').or_else(|| w.strip_suffix('X')))
        .and_then(|d| d.parse::<u64>().ok())
        .and_then(Width::from_lanes);
    let speed = value("SPD=").and_then(|s| match s {
        "2.5" => Some(Speed::SDR),
        "5" => Some(Speed::DDR),
        "10" => Some(Speed::QDR),
        "14" => Some(Speed::FDR),
        "25" => Some(Speed::EDR),
        "50" => Some(Speed::HDR),
        "100" => Some(Speed::NDR),
        "200" => Some(Speed::XDR),
        other => Speed::parse(other),
    });
    match (width, speed) {
        (Some(width), Some(speed)) => Some((
            Rate {
                width: Some(width),
                speed: Some(speed),
                text_span: Some(span),
            },
            text,
        )),
        _ => {
            cx.warn(
                Code::UnknownRate,
                span,
                format!("unknown link rate `{text}`"),
                "ignored",
                "`PHY=` is 1x, 2x, 4x, 8x or 12x; `SPD=` is 2.5, 5, 10, 14, 25, 50, 100, 200 \
                 (Gb/s per lane) or FDR10",
            );
            None
        }
    }
}
