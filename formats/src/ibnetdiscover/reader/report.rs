//! Phase 1 for `ibnetdiscover -p` (the ports report), and what it shares with the
//! `iblinkinfo` reader: the node records made up from port lines, the rates as the reports
//! print them, and the warnings about what these formats do not say.
//!
//! A line is one port (rdma-core's `infiniband-diags/ibnetdiscover.c`, `dump_ports_report`):
//! `%2s %5d %2d 0x%016x %s %s` — node type (`SW`, `CA`, `RT`), LID (a switch's port-0 LID),
//! port, port GUID, width and speed — then either the peer, ` - %2s %5d %2d 0x%016x ( '%s' -
//! '%s' )` (type, LID, port, port GUID, the two node descriptions), or only `'%s'`, the
//! node's own description, for a port without a peer. Every link is listed from both ends.
//! The speed is `???` for a port whose speed libibnetdisc does not know (read as no rate).
//! Excerpts of the report are common: a node named only as a peer is made up from the lines
//! naming it (its type, LID, port, port GUID and description are all there) with one
//! warning, and a peerless port's description is also read without its quotes (seen in real
//! excerpts, though rdma-core quotes it).
//!
//! The report prints neither port counts nor the node GUID of an end node: each node gets
//! the highest port number seen (its own lines and its peers'), and an end node's GUID is its
//! port GUID minus the port number (the layout of ibsim and of ConnectX HCAs up to
//! ConnectX-3), which groups the ports of one adapter; a switch's port GUID is its node GUID.
//! Both guesses are said in a warning.

use super::*;

/// Whether `t` (a trimmed line) starts like a ports-report line: a node type, a LID, a port
/// number and a `0x` GUID.
pub(super) fn is_port_line(t: &str) -> bool {
    let mut words = t.split_ascii_whitespace();
    let kind = words.next();
    let numbers = [words.next(), words.next()];
    let guid = words.next();
    matches!(kind, Some("SW" | "CA" | "RT"))
        && numbers
            .iter()
            .all(|w| w.is_some_and(|w| w.bytes().all(|b| b.is_ascii_digit())))
        && guid.is_some_and(|g| g.starts_with("0x") && parse_uint(g).is_some())
}

/// The node kind of a report's type column.
fn kind_of(word: &str) -> Option<NodeKind> {
    match word {
        "SW" => Some(NodeKind::Switch),
        "CA" => Some(NodeKind::Hca),
        "RT" => Some(NodeKind::Router),
        _ => None,
    }
}

/// The node id the topology format would print for a node (`S-7cfe900300bdd8f0`), used as the
/// id of a node the reports describe.
pub(super) fn node_id(kind: NodeKind, guid: Guid) -> String {
    let prefix = match kind {
        NodeKind::Switch => 'S',
        NodeKind::Hca => 'H',
        NodeKind::Router => 'R',
    };
    format!("{prefix}-{:016x}", guid.0)
}

/// The node GUID behind a port GUID: a switch's ports carry its node GUID; an end node's
/// port `p` is taken to carry node GUID + `p`. `None` when that would be below 0.
pub(super) fn node_guid(kind: NodeKind, port_guid: Guid, port: u32) -> Option<Guid> {
    if kind == NodeKind::Switch {
        Some(port_guid)
    } else {
        port_guid.0.checked_sub(u64::from(port)).map(Guid)
    }
}

/// A node record made up from a report's lines: no port count yet, no vendor or device id.
/// An end node, whose node GUID is guessed from `port_guid`, is named in diagnostics by
/// its type and that port GUID, as the report prints them (`CA 0x…`).
fn made_up_node<'a>(
    kind: NodeKind,
    id: String,
    (guid, guid_span, port_guid): (Guid, SourceSpan, Guid),
    desc: Option<(&'a str, SourceSpan)>,
) -> NodeRec<'a> {
    let shown = match kind {
        NodeKind::Switch => None,
        NodeKind::Hca => Some(format!("CA {port_guid}")),
        NodeKind::Router => Some(format!("RT {port_guid}")),
    };
    NodeRec {
        kind,
        id: Cow::Owned(id),
        id_span: guid_span,
        shown,
        port_count: 0,
        count_span: guid_span,
        desc: desc.filter(|(d, _)| !d.is_empty()),
        guid,
        guid_origin: GuidOrigin::Explicit(guid_span),
        system_guid: None,
        vendor_id: 0,
        device_id: 0,
        lid: None,
        ports: Vec::new(),
    }
}

/// A node of an `ibnetdiscover -p` report as the lines naming it as a peer describe it, kept
/// in case it has no line of its own (an excerpt): its first sighting and, from every line
/// naming it, the port record the line implies from its side.
pub(super) struct PeerOnly<'a> {
    node: NodeRec<'a>,
    ports: Vec<PortRec<'a>>,
}

/// The nodes of a report as its lines make them up, by node id.
#[derive(Default)]
pub(super) struct Nodes<'a> {
    pub(super) nodes: Vec<NodeRec<'a>>,
    pub(super) by_id: BTreeMap<String, usize>,
    /// The nodes seen as peers, by node id (`ibnetdiscover -p`): those without a line of
    /// their own become nodes in [`Nodes::finish`].
    pub(super) peers: BTreeMap<String, PeerOnly<'a>>,
    /// The highest port of each node id that a peer names (and where), for port counts.
    pub(super) named_ports: BTreeMap<String, (u32, SourceSpan)>,
    /// The first line of an end node (where the node-GUID warning points), if any.
    pub(super) first_end_node: Option<SourceSpan>,
}

impl<'a> Nodes<'a> {
    /// The node of kind `kind` and GUID `guid`, made when first seen (with the GUID at
    /// `guid_span` and the description `desc`). A node seen before is the same node when its
    /// GUID is its own (a switch's) or, for an end node whose GUID is made up from a port GUID,
    /// when `fresh` is false (the line may be another port of it) and the descriptions agree;
    /// otherwise two nodes make up one GUID, an error.
    pub(super) fn get_or_add(
        &mut self,
        cx: &mut Cx<'_>,
        (kind, guid, guid_span, port_guid): (NodeKind, Guid, SourceSpan, Guid),
        desc: Option<(&'a str, SourceSpan)>,
        fresh: bool,
    ) -> Option<usize> {
        let id = node_id(kind, guid);
        if let Some(&i) = self.by_id.get(&id) {
            let n = self.nodes.get(i)?;
            let same_desc =
                n.desc.map(|(d, _)| d) == desc.map(|(d, _)| d).filter(|d| !d.is_empty());
            if kind == NodeKind::Switch || (!fresh && same_desc) {
                return Some(i);
            }
            let d = cx
                .diag(
                    Code::DuplicateGuid,
                    Severity::Error,
                    guid_span,
                    format!("port GUID `{port_guid}` would give this end node another node's GUID"),
                    "this port GUID minus its port number",
                )
                .with_secondary(n.id_span, "and this one's")
                .with_help(
                    "the report prints no node GUIDs of end nodes, and taking a port GUID minus \
                     its port number gives two nodes one GUID here; import the default \
                     `ibnetdiscover` output, which has the node GUIDs",
                );
            cx.push(d);
            return None;
        }
        if kind != NodeKind::Switch {
            self.first_end_node.get_or_insert(guid_span);
        }
        let i = self.nodes.len();
        self.nodes.push(made_up_node(
            kind,
            id.clone(),
            (guid, guid_span, port_guid),
            desc,
        ));
        self.by_id.insert(id, i);
        Some(i)
    }

    /// Port `port` of node `i` is seen (at `span`): the node has at least that many ports.
    pub(super) fn saw_port(&mut self, i: usize, port: u32, span: SourceSpan) {
        if let Some(n) = self.nodes.get_mut(i) {
            if port > n.port_count {
                n.port_count = port;
                n.count_span = span;
            }
        }
    }

    /// A peer names port `port` of node `id`.
    pub(super) fn named(&mut self, id: &str, port: u32, span: SourceSpan) {
        let e = self
            .named_ports
            .entry(id.to_owned())
            .or_insert((port, span));
        if port > e.0 {
            *e = (port, span);
        }
    }

    /// The records, with the port counts peers imply, and the warnings about what `format`
    /// does not say (at `first`, the first line read).
    pub(super) fn finish(
        mut self,
        cx: &mut Cx<'_>,
        format: InputFormat,
        first: Option<SourceSpan>,
    ) -> File<'a> {
        let mut peer_only: Option<(usize, SourceSpan)> = None;
        for (id, peer) in std::mem::take(&mut self.peers) {
            if self.by_id.contains_key(&id) {
                continue;
            }
            let mut node = peer.node;
            for rec in &peer.ports {
                if rec.port > node.port_count {
                    node.port_count = rec.port;
                    node.count_span = rec.port_span;
                }
            }
            node.ports = peer.ports;
            if node.kind != NodeKind::Switch {
                self.first_end_node.get_or_insert(node.id_span);
            }
            let at = node.id_span;
            let e = peer_only.get_or_insert((0, at));
            e.0 += 1;
            if at.offset() < e.1.offset() {
                e.1 = at;
            }
            self.by_id.insert(id, self.nodes.len());
            self.nodes.push(node);
        }
        if let Some((n, at)) = peer_only {
            cx.warn(
                Code::PeerOnlyNode,
                at,
                format!(
                    "{n} node{} only seen as the peer of other nodes' ports: made up from those \
                     lines",
                    if n == 1 { " is" } else { "s are" }
                ),
                "the first one",
                "the report is an excerpt: these nodes' other ports are missing from the \
                 imported fabric; import the whole `ibnetdiscover -p` output (or the default \
                 `ibnetdiscover` output) for them",
            );
        }
        for (id, (port, span)) in std::mem::take(&mut self.named_ports) {
            if let Some(&i) = self.by_id.get(&id) {
                self.saw_port(i, port, span);
            }
        }
        if let (Some(first), false) = (first, self.nodes.is_empty()) {
            cx.warn(
                Code::PortCountGuessed,
                first,
                format!(
                    "`{}` output has no port counts: each node is given the highest port \
                     number seen",
                    format.as_str()
                ),
                "read as a port-by-port report",
                "ports above the highest one listed are missing from the imported fabric; \
                 give the nodes their models (`model = …`) in the imported description, or \
                 import the default `ibnetdiscover` output, which has the counts",
            );
        }
        if let Some(at) = self.first_end_node {
            cx.warn(
                Code::NodeGuidGuessed,
                at,
                format!(
                    "`{}` output has no node GUIDs of end nodes: each is taken as its port \
                     GUID minus the port number",
                    format.as_str()
                ),
                "a port GUID",
                "the port GUIDs are as printed; the node GUIDs follow the layout of ibsim and \
                 of adapters up to ConnectX-3, and may be off for newer adapters (whose node \
                 GUID is often their port GUID); import the default `ibnetdiscover` output \
                 for the real ones",
            );
        }
        File {
            nodes: self.nodes,
            format,
        }
    }
}

/// The next word of `sc` (after spaces) and its span.
pub(super) fn word<'a>(sc: &mut Scan<'a>) -> (&'a str, SourceSpan) {
    sc.skip_ws();
    let (w, at) = sc.take(|b| b != b' ' && b != b'\t');
    (w, sp(at, w.len()))
}

/// How a report's line should look, for its errors: the format and a help line.
pub(super) type Shape = (InputFormat, &'static str);

/// A decimal number word up to `max`, or an error at it (`what` names it).
pub(super) fn number(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'_>,
    what: &str,
    max: u32,
    (format, help): Shape,
) -> Option<(u32, SourceSpan)> {
    let (w, span) = word(sc);
    let value = (!w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()))
        .then(|| w.parse::<u32>().ok())
        .flatten()
        .filter(|&v| v <= max);
    if value.is_none() {
        cx.error(
            Code::MalformedReportLine,
            sp(span.offset(), span.len().max(1)),
            format!("malformed `{}` line", format.as_str()),
            if w.is_empty() {
                format!("expected {what}")
            } else {
                format!("`{w}` is not {what} (0 to {max})")
            },
            help,
        );
    }
    value.map(|v| (v, span))
}

/// A `0x` GUID word, or an error at it.
pub(super) fn guid(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'_>,
    (format, help): Shape,
) -> Option<(Guid, SourceSpan)> {
    let (w, span) = word(sc);
    match w.strip_prefix("0x").and(parse_uint(w)) {
        Some(g) => Some((Guid(g), span)),
        None => {
            cx.error(
                Code::MalformedReportLine,
                sp(span.offset(), span.len().max(1)),
                format!("malformed `{}` line", format.as_str()),
                if w.is_empty() {
                    "expected a `0x` GUID".to_owned()
                } else {
                    format!("`{w}` is not a `0x` GUID")
                },
                help,
            );
            None
        }
    }
}

const HELP: &str =
    "an `ibnetdiscover -p` line looks like `CA  134  1 0x7cfe9003009ce5b1 4x EDR - SW \
                    1719 10 0x7cfe900300a1b5a0 ( 'o0001 HCA-1' - 'ib-i1l1s01' )`, or ends after \
                    the rate with the node's own description in quotes";
const SHAPE: Shape = (InputFormat::PortsReport, HELP);

/// Reads an `ibnetdiscover -p` report.
pub(super) fn read<'a>(cx: &mut Cx<'_>, text: &'a str) -> File<'a> {
    let mut nodes = Nodes::default();
    let mut first: Option<SourceSpan> = None;
    for line in lines(text) {
        let t = line.text.trim_matches([' ', '\t']);
        if t.is_empty() || t.starts_with('#') || (!is_port_line(t) && noise::skip(cx, &line)) {
            continue;
        }
        let mut sc = Scan::new(line.text, line.start);
        let line_span = {
            let lead = line.text.len() - line.text.trim_start_matches([' ', '\t']).len();
            sp(line.start + lead, t.len())
        };
        first.get_or_insert(line_span);
        read_line(cx, &mut sc, line_span, &mut nodes);
    }
    nodes.finish(cx, InputFormat::PortsReport, first)
}

/// One end of a report line: type, LID, port and port GUID.
struct End {
    kind: NodeKind,
    lid: (u16, SourceSpan),
    port: (u32, SourceSpan),
    guid: (Guid, SourceSpan),
}

fn read_end(cx: &mut Cx<'_>, sc: &mut Scan<'_>) -> Option<End> {
    let (w, span) = word(sc);
    let Some(kind) = kind_of(w) else {
        cx.error(
            Code::MalformedReportLine,
            sp(span.offset(), span.len().max(1)),
            "malformed `ibnetdiscover -p` line",
            format!("`{w}` is not a node type (`SW`, `CA` or `RT`)"),
            HELP,
        );
        return None;
    };
    let (lid, lid_span) = number(cx, sc, "a LID", u32::from(u16::MAX), SHAPE)?;
    let port = number(cx, sc, "a port number", 254, SHAPE)?;
    let guid = guid(cx, sc, SHAPE)?;
    let lid = u16::try_from(lid).unwrap_or(u16::MAX);
    if !is_assigned(lid) || lid <= MAX_UNICAST_LID {
        Some(End {
            kind,
            lid: (lid, lid_span),
            port,
            guid,
        })
    } else {
        cx.error(
            Code::BadLid,
            lid_span,
            format!("LID {lid} is not a unicast LID"),
            "out of range",
            "unicast LIDs are 1 to 0xbfff; 0 and 65535 mean no LID yet",
        );
        None
    }
}

/// The rate words of a report (`4x EDR`); `None` for the `?? ???` of a port libibnetdisc
/// knows no rate of, with a warning for words that are no rate.
fn read_rate<'a>(cx: &mut Cx<'_>, sc: &mut Scan<'a>) -> Option<(Rate, &'a str)> {
    let (w, wspan) = word(sc);
    let (s, sspan) = word(sc);
    let start = wspan.offset();
    let len = sspan.offset() + sspan.len() - start;
    let text = sc
        .line
        .get(start - sc.base..start - sc.base + len)
        .unwrap_or("");
    // `?? ???` or `4x ???`: libibnetdisc knows no rate of the port (it is down).
    if s.starts_with("??") {
        return None;
    }
    if s.is_empty() {
        cx.error(
            Code::MalformedReportLine,
            sp(start, w.len().max(1)),
            "malformed `ibnetdiscover -p` line",
            "expected the width and speed, like `4x EDR`",
            HELP,
        );
        return None;
    }
    let width = w
        .strip_suffix('x')
        .and_then(|d| d.parse::<u64>().ok())
        .and_then(Width::from_lanes);
    match (width, Speed::parse(s)) {
        (Some(width), Some(speed)) => Some((
            Rate {
                width: Some(width),
                speed: Some(speed),
                text_span: Some(sp(start, len)),
            },
            text,
        )),
        _ => {
            cx.warn(
                Code::UnknownRate,
                sp(start, len.max(1)),
                format!("unknown link rate `{text}`"),
                "ignored",
                "widths are 1x, 2x, 4x, 8x and 12x; speeds are SDR, DDR, QDR, FDR10, FDR, \
                 EDR, HDR, NDR and XDR",
            );
            None
        }
    }
}

/// A node description in a report, with its span (quotes included).
type Description<'a> = Option<(&'a str, SourceSpan)>;

/// The text in `'…'` quotes: the rest of the line after one end, either `'own'` or `( 'own' -
/// 'peer' )`. Returns the two descriptions.
fn descriptions<'a>(sc: &Scan<'a>) -> (Description<'a>, Description<'a>) {
    let rest = sc.rest();
    let at = |s: &str| sc.base + sc.pos + (s.as_ptr() as usize - rest.as_ptr() as usize);
    let trimmed = rest.trim_matches([' ', '\t']);
    let inner = trimmed
        .strip_prefix('(')
        .and_then(|x| x.strip_suffix(')'))
        .map(|x| x.trim_matches([' ', '\t']));
    let quoted = |s: &'a str| -> Description<'a> {
        let body = s.strip_prefix('\'')?.strip_suffix('\'')?;
        Some((body, sp(at(s), s.len())))
    };
    match inner {
        Some(pair) => match pair.find("' - '") {
            Some(mid) => {
                let (a, b) = (pair.get(..=mid), pair.get(mid + 4..));
                (a.and_then(quoted), b.and_then(quoted))
            }
            None => (None, None),
        },
        // Some reports leave a peerless port's description unquoted.
        None if !trimmed.is_empty() && !trimmed.starts_with(['\'', '(']) => (
            quoted(trimmed).or(Some((trimmed, sp(at(trimmed), trimmed.len())))),
            None,
        ),
        None => (quoted(trimmed), None),
    }
}

fn read_line<'a>(cx: &mut Cx<'_>, sc: &mut Scan<'a>, line_span: SourceSpan, nodes: &mut Nodes<'a>) {
    let Some(here) = read_end(cx, sc) else {
        return;
    };
    let rate = read_rate(cx, sc);
    sc.skip_ws();
    let peer = if sc.rest().starts_with("- ") {
        sc.pos += 1;
        let Some(peer) = read_end(cx, sc) else {
            return;
        };
        Some(peer)
    } else {
        None
    };
    let (own_desc, peer_desc) = descriptions(sc);
    let described = if peer.is_some() {
        peer_desc.is_some()
    } else {
        own_desc.is_some() || sc.rest().trim_matches([' ', '\t']).is_empty()
    };
    if !described {
        cx.error(
            Code::MalformedReportLine,
            sp(sc.abs(), sc.rest().len().max(1)),
            "malformed `ibnetdiscover -p` line",
            if peer.is_some() {
                "expected `( 'node' - 'peer' )`"
            } else {
                "expected the node's description in quotes, `'node'`"
            },
            HELP,
        );
        return;
    }
    let Some(guid) = node_guid(here.kind, here.guid.0, here.port.0) else {
        bad_guid(cx, &here);
        return;
    };
    let Some(i) = nodes.get_or_add(
        cx,
        (here.kind, guid, here.guid.1, here.guid.0),
        own_desc,
        false,
    ) else {
        return;
    };
    nodes.saw_port(i, here.port.0, here.port.1);
    let Some(node) = nodes.nodes.get_mut(i) else {
        return;
    };
    let end_node = here.kind != NodeKind::Switch;
    if !end_node && node.lid.is_none_or(|(l, _)| !is_assigned(l)) {
        node.lid = Some(here.lid);
    }
    let Some(peer) = peer else {
        return;
    };
    let Some(peer_guid) = node_guid(peer.kind, peer.guid.0, peer.port.0) else {
        bad_guid(cx, &peer);
        return;
    };
    let remote_id = node_id(peer.kind, peer_guid);
    let rec = PortRec {
        line_span,
        port: here.port.0,
        port_span: here.port.1,
        local_guid: end_node.then_some(here.guid),
        remote_id: Cow::Owned(remote_id.clone()),
        remote_span: peer.guid.1,
        remote_port: peer.port.0,
        remote_port_span: peer.port.1,
        remote_guid: (peer.kind != NodeKind::Switch).then_some(peer.guid),
        local_lid: end_node.then_some(here.lid),
        local_lmc: None,
        remote_lid: Some(peer.lid),
        rate,
        opts: PortOpts::default(),
    };
    node.ports.push(rec);
    nodes.named(&remote_id, peer.port.0, peer.port.1);
    // The line says as much about the peer's port: kept for a peer with no line of its own.
    let peer_end = peer.kind != NodeKind::Switch;
    let reverse = PortRec {
        line_span,
        port: peer.port.0,
        port_span: peer.port.1,
        local_guid: peer_end.then_some(peer.guid),
        remote_id: Cow::Owned(node_id(here.kind, guid)),
        remote_span: here.guid.1,
        remote_port: here.port.0,
        remote_port_span: here.port.1,
        remote_guid: end_node.then_some(here.guid),
        local_lid: peer_end.then_some(peer.lid),
        local_lmc: None,
        remote_lid: Some(here.lid),
        rate,
        opts: PortOpts::default(),
    };
    let seen = nodes.peers.entry(remote_id).or_insert_with_key(|id| {
        let mut node = made_up_node(
            peer.kind,
            id.clone(),
            (peer_guid, peer.guid.1, peer.guid.0),
            peer_desc,
        );
        if !peer_end {
            node.lid = Some(peer.lid);
        }
        PeerOnly {
            node,
            ports: Vec::new(),
        }
    });
    seen.ports.push(reverse);
}

fn bad_guid(cx: &mut Cx<'_>, end: &End) {
    cx.error(
        Code::BadGuid,
        end.guid.1,
        format!(
            "port GUID `{}` of port {} is below its port number",
            end.guid.0, end.port.0
        ),
        "no node GUID can be made from this",
        "an end node's GUID is taken as its port GUID minus the port number",
    );
}
