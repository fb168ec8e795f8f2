//! Phase 2: node ids and GUIDs unique, ports on their nodes, remote nodes declared, each
//! port wired once, the two sightings of a link agreeing.

use super::*;

// Phase 2: checks.

/// A (node index, port) end.
type End = (usize, u32);

/// One link to build: its ends, in the order of the first sighting, and the sightings.
pub(super) struct LinkPlan {
    pub(super) a: End,
    pub(super) b: End,
    /// (node index, port-line index) of each end's sighting, when that end lists the link.
    pub(super) seen: [Option<(usize, usize)>; 2],
}

pub(super) struct Checked {
    /// The links to build, in the order of their first sighting.
    pub(super) links: Vec<LinkPlan>,
    /// Resolved port GUIDs of end nodes, per node index, for ports with a sighting (and the
    /// span of the first sighting that gives it).
    pub(super) port_guids: BTreeMap<End, (Guid, SourceSpan)>,
}

pub(super) fn node_name(n: &NodeRec<'_>) -> String {
    format!("`{}`", n.shown.as_deref().unwrap_or(&n.id))
}

pub(super) fn check(cx: &mut Cx<'_>, file: &File<'_>, partial: bool) -> Checked {
    let nodes = &file.nodes;
    let (by_id, dup) = check_node_ids(cx, nodes);
    check_node_guids(cx, nodes, &dup);
    let (sight, order) = sightings(cx, file, &by_id, &dup, partial);
    let links = match_links(cx, file, &sight, &order);
    check_rates(cx, nodes, &links);
    loopbacks(cx, nodes, &links);
    let port_guids = check_port_guids(cx, nodes, &dup, &by_id);
    check_port_space(cx, nodes, &dup, &port_guids);
    Checked { links, port_guids }
}

/// The first sighting of each (node, port): (node index, port-line index, the end it names).
type Sightings = BTreeMap<End, (usize, usize, End)>;

/// Each first sighting in file order: (node index, port-line index, this end, the end it names).
type Order = Vec<(usize, usize, End, End)>;

/// Node ids unique: the index of each id's first node, and which nodes repeat an id (they are
/// left out of the later checks).
fn check_node_ids<'f>(
    cx: &mut Cx<'_>,
    nodes: &'f [NodeRec<'_>],
) -> (BTreeMap<&'f str, usize>, Vec<bool>) {
    let mut by_id: BTreeMap<&str, usize> = BTreeMap::new();
    let mut dup = vec![false; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        if let Some(&first) = by_id.get(n.id.as_ref()) {
            let first_span = nodes.get(first).map(|f| f.id_span).unwrap_or(n.id_span);
            let d = cx
                .diag(
                    Code::DuplicateNodeId,
                    Severity::Error,
                    n.id_span,
                    format!("node {} is declared twice", node_name(n)),
                    "declared again here",
                )
                .with_secondary(first_span, "first declared here")
                .with_help("node ids are unique; rename one of the nodes");
            cx.push(d);
            if let Some(f) = dup.get_mut(i) {
                *f = true;
            }
        } else {
            by_id.insert(n.id.as_ref(), i);
        }
    }
    (by_id, dup)
}

/// Node GUIDs unique (among nodes whose id is).
fn check_node_guids(cx: &mut Cx<'_>, nodes: &[NodeRec<'_>], dup: &[bool]) {
    let mut by_guid: BTreeMap<Guid, usize> = BTreeMap::new();
    for (i, n) in nodes.iter().enumerate() {
        if dup.get(i).copied().unwrap_or(true) {
            continue;
        }
        if let Some(&first) = by_guid.get(&n.guid) {
            let Some(f) = nodes.get(first) else { continue };
            let (span, label) = guid_site(n);
            let (fspan, flabel) = guid_site(f);
            let d = cx
                .diag(
                    Code::DuplicateGuid,
                    Severity::Error,
                    span,
                    format!(
                        "GUID `{}` belongs to two nodes, {} and {}",
                        n.guid,
                        node_name(f),
                        node_name(n)
                    ),
                    label,
                )
                .with_secondary(fspan, flabel)
                .with_help(
                    "node GUIDs are unique; without a `switchguid=`, `caguid=` or `rtguid=` line \
                     a node's GUID counts on from the previous node of its kind, as in ibsim",
                );
            cx.push(d);
        } else {
            by_guid.insert(n.guid, i);
        }
    }
}

/// The first listing of each (node, port) whose ports are in range and whose remote node is
/// declared; a second listing is a duplicate line or a port wired twice.
fn sightings(
    cx: &mut Cx<'_>,
    file: &File<'_>,
    by_id: &BTreeMap<&str, usize>,
    dup: &[bool],
    partial: bool,
) -> (Sightings, Order) {
    let nodes = &file.nodes;
    let mut sight = Sightings::new();
    let mut order = Order::new();
    for (i, n) in nodes.iter().enumerate() {
        if dup.get(i).copied().unwrap_or(true) {
            continue;
        }
        let named = |id: &str| {
            by_id
                .get(id)
                .and_then(|&r| nodes.get(r))
                .map_or_else(|| format!("`{id}`"), node_name)
        };
        for (j, p) in n.ports.iter().enumerate() {
            if !port_in_range(cx, n, p.port, p.port_span) {
                continue;
            }
            let Some(&r) = by_id.get(p.remote_id.as_ref()) else {
                unknown_node(cx, file.format, n, p, partial);
                continue;
            };
            let Some(rn) = nodes.get(r) else { continue };
            if !port_in_range(cx, rn, p.remote_port, p.remote_port_span) {
                continue;
            }
            let here: End = (i, p.port);
            let there: End = (r, p.remote_port);
            if let Some(&(fi, fj, ftarget)) = sight.get(&here) {
                let Some(first) = nodes.get(fi).and_then(|f| f.ports.get(fj)) else {
                    continue;
                };
                second_sighting(cx, &named, n, p, first, ftarget == there);
                continue;
            }
            sight.insert(here, (i, j, there));
            order.push((i, j, here, there));
        }
    }
    (sight, order)
}

/// A second listing of port `p` of `n` (`first` the first one): the same line twice when
/// `same_end`, else a port wired twice.
fn second_sighting(
    cx: &mut Cx<'_>,
    named: &dyn Fn(&str) -> String,
    n: &NodeRec<'_>,
    p: &PortRec<'_>,
    first: &PortRec<'_>,
    same_end: bool,
) {
    if same_end {
        let d = cx
            .diag(
                Code::DuplicatePortLine,
                Severity::Warning,
                p.line_span,
                format!("port {} of {} is listed twice", p.port, node_name(n)),
                "listed again here",
            )
            .with_secondary(first.line_span, "first listed here")
            .with_help("remove one of the two lines");
        cx.push(d);
    } else {
        let d = cx
            .diag(
                Code::PortWiredTwice,
                Severity::Error,
                p.port_span,
                format!("port {} of {} is wired twice", p.port, node_name(n)),
                format!(
                    "wired to {} port {} here",
                    named(p.remote_id.as_ref()),
                    p.remote_port
                ),
            )
            .with_secondary(
                first.port_span,
                format!(
                    "and to {} port {} here",
                    named(first.remote_id.as_ref()),
                    first.remote_port
                ),
            )
            .with_help("a port takes one cable; remove one of the two lines");
        cx.push(d);
    }
}

/// Links: each sighting matched with the other end's; a link to itself, ends that disagree,
/// a link listed by one end only.
fn match_links(
    cx: &mut Cx<'_>,
    file: &File<'_>,
    sight: &Sightings,
    order: &Order,
) -> Vec<LinkPlan> {
    let nodes = &file.nodes;
    let mut links: Vec<LinkPlan> = Vec::new();
    let mut claimed: BTreeMap<End, usize> = BTreeMap::new();
    for &(i, j, here, there) in order {
        let (Some(n), Some(p)) = (nodes.get(i), nodes.get(i).and_then(|n| n.ports.get(j))) else {
            continue;
        };
        if nodes.get(there.0).is_none() {
            continue;
        }
        if here == there {
            cx.error(
                Code::SelfLink,
                p.line_span,
                format!("port {} of {} is wired to itself", p.port, node_name(n)),
                "a cable from this port back to itself",
                "a cable connects two different ports",
            );
            continue;
        }
        if let Some(&l) = claimed.get(&here) {
            // The second sighting of a link made from the other end.
            if let Some(link) = links.get_mut(l) {
                let slot = if link.a == here { 0 } else { 1 };
                if let Some(s) = link.seen.get_mut(slot) {
                    *s = Some((i, j));
                }
            }
            continue;
        }
        match sight.get(&there) {
            Some(&(_, _, otarget)) if otarget == here => {
                let l = links.len();
                links.push(LinkPlan {
                    a: here,
                    b: there,
                    seen: [Some((i, j)), None],
                });
                claimed.insert(here, l);
                claimed.insert(there, l);
            }
            Some(&(oi, oj, otarget)) => {
                let Some(other) = nodes.get(oi).and_then(|o| o.ports.get(oj)) else {
                    continue;
                };
                ends_disagree(cx, nodes, (n, p), there, other, otarget);
            }
            None => unmatched_sighting(cx, file, &mut links, &mut claimed, (i, j), there),
        }
    }
    links
}

/// Port `p` of `n` names `there`, whose own line (`other`) names `otarget` instead.
fn ends_disagree(
    cx: &mut Cx<'_>,
    nodes: &[NodeRec<'_>],
    (n, p): (&NodeRec<'_>, &PortRec<'_>),
    there: End,
    other: &PortRec<'_>,
    otarget: End,
) {
    let Some(rn) = nodes.get(there.0) else {
        return;
    };
    let d = cx
        .diag(
            Code::LinkEndsDisagree,
            Severity::Error,
            p.line_span,
            format!(
                "the ends of the link from {} port {} disagree",
                node_name(n),
                p.port
            ),
            format!(
                "{} port {} says it is wired to {} port {}",
                node_name(n),
                p.port,
                node_name(rn),
                there.1
            ),
        )
        .with_secondary(
            other.line_span,
            format!(
                "but {} port {} says it is wired to {} port {}",
                node_name(rn),
                there.1,
                nodes.get(otarget.0).map_or("?".to_owned(), node_name),
                otarget.1
            ),
        )
        .with_help("fix one of the two lines so that both ends name each other");
    cx.push(d);
}

/// The sighting (`i`, `j`) naming `there`, which lists no link back: a port wired twice when
/// `there` already has a link, else a link listed by one end only (kept, and said).
fn unmatched_sighting(
    cx: &mut Cx<'_>,
    file: &File<'_>,
    links: &mut Vec<LinkPlan>,
    claimed: &mut BTreeMap<End, usize>,
    (i, j): (usize, usize),
    there: End,
) {
    let nodes = &file.nodes;
    let (Some(n), Some(p), Some(rn)) = (
        nodes.get(i),
        nodes.get(i).and_then(|n| n.ports.get(j)),
        nodes.get(there.0),
    ) else {
        return;
    };
    let here: End = (i, p.port);
    if let Some(&l) = claimed.get(&there) {
        let prev = links
            .get(l)
            .and_then(|link| link.seen.first().copied().flatten())
            .and_then(|(pi, pj)| Some((nodes.get(pi)?, nodes.get(pi)?.ports.get(pj)?)));
        let mut d = cx.diag(
            Code::PortWiredTwice,
            Severity::Error,
            p.line_span,
            format!("port {} of {} is wired twice", there.1, node_name(rn)),
            format!(
                "{} port {} says it is wired to {} port {}",
                node_name(n),
                p.port,
                node_name(rn),
                there.1
            ),
        );
        if let Some((pn, pp)) = prev {
            d = d.with_secondary(
                pp.line_span,
                format!("and {} port {} says so too", node_name(pn), pp.port),
            );
        }
        cx.push(d.with_help("a port takes one cable; remove one of the two lines"));
        return;
    }
    let l = links.len();
    links.push(LinkPlan {
        a: here,
        b: there,
        seen: [Some((i, j)), None],
    });
    claimed.insert(here, l);
    claimed.insert(there, l);
    cx.warn(
        Code::OneSidedLink,
        p.line_span,
        format!(
            "the link from {} port {} to {} port {} is listed by one end only",
            node_name(n),
            p.port,
            node_name(rn),
            there.1
        ),
        "listed here only",
        if file.format == InputFormat::Topology {
            format!(
                "ibnetdiscover lists every link from both ends, and ibsim refuses a \
                 link listed once; add `[{}] \"{}\"[{}]` to `{}`",
                there.1, n.id, p.port, rn.id
            )
        } else {
            format!(
                "`{}` lists every link from both ends; this file is an excerpt or \
                 was edited",
                file.format.as_str()
            )
        },
    );
}

/// The two ends of each link seen from both report the same rate, or a warning says which
/// rate the link is imported at.
fn check_rates(cx: &mut Cx<'_>, nodes: &[NodeRec<'_>], links: &[LinkPlan]) {
    for link in links {
        let [Some(sa), Some(sb)] = link.seen else {
            continue;
        };
        let (Some(pa), Some(pb)) = (port_at(nodes, sa), port_at(nodes, sb)) else {
            continue;
        };
        if let (Some((ra, ta)), Some((rb, tb))) = (pa.rate, pb.rate) {
            if ra.width != rb.width || ra.speed != rb.speed {
                let (Some(sa_span), Some(sb_span)) = (ra.text_span, rb.text_span) else {
                    continue;
                };
                let na = nodes.get(link.a.0).map_or("?".to_owned(), node_name);
                let nb = nodes.get(link.b.0).map_or("?".to_owned(), node_name);
                let (width, speed) = slower(ra, rb);
                let taken = match (width, speed) {
                    (Some(w), Some(s)) => format!("`{w}{s}`"),
                    _ => "the slower of the two".to_owned(),
                };
                let d = cx
                    .diag(
                        Code::RateMismatch,
                        Severity::Warning,
                        sb_span,
                        format!(
                            "the ends of the link between {na} port {} and {nb} port {} \
                             report different rates",
                            link.a.1, link.b.1
                        ),
                        format!("`{tb}` here"),
                    )
                    .with_secondary(sa_span, format!("`{ta}` here"))
                    .with_help(format!(
                        "the link is imported at {taken}, the narrower width and the slower \
                         lane speed of its two ends; both ends of a healthy link run at one rate, \
                         so check the cable and the ports' enabled rates"
                    ));
                cx.push(d);
            }
        }
    }
}

/// A warning for each loopback cable, from a port to another port of the same node: it
/// carries no traffic between nodes, and is usually a test plug or a cabling mistake.
fn loopbacks(cx: &mut Cx<'_>, nodes: &[NodeRec<'_>], links: &[LinkPlan]) {
    for link in links.iter().filter(|l| l.a.0 == l.b.0) {
        let Some(n) = nodes.get(link.a.0) else {
            continue;
        };
        let span = link
            .seen
            .iter()
            .flatten()
            .find_map(|&at| port_at(nodes, at))
            .map_or(n.id_span, |p| p.line_span);
        let named = match n.desc {
            Some((d, _)) if d != n.id => format!("{} (\"{d}\")", node_name(n)),
            _ => node_name(n),
        };
        cx.warn(
            Code::Loopback,
            span,
            format!(
                "loopback cable: port {} of {named} is cabled to its own port {}",
                link.a.1, link.b.1
            ),
            "a cable between two ports of one node",
            "a loopback carries no traffic between nodes (a test plug or a cabling mistake); \
             it is imported as a link between the two ports",
        );
    }
}

pub(super) fn port_at<'f, 'a>(
    nodes: &'f [NodeRec<'a>],
    at: (usize, usize),
) -> Option<&'f PortRec<'a>> {
    nodes.get(at.0).and_then(|n| n.ports.get(at.1))
}

/// The narrower width and the slower lane speed of two rates (either may be unknown).
pub(super) fn slower(a: Rate, b: Rate) -> (Option<Width>, Option<Speed>) {
    fn min<T: Ord>(x: Option<T>, y: Option<T>) -> Option<T> {
        match (x, y) {
            (Some(x), Some(y)) => Some(std::cmp::min(x, y)),
            (x, y) => x.or(y),
        }
    }
    (min(a.width, b.width), min(a.speed, b.speed))
}

/// A port line naming a node no record describes: an error, or with `partial` a warning that
/// drops the link (discovery was cut short: the node did not answer, or the dump ends early).
fn unknown_node(
    cx: &mut Cx<'_>,
    format: InputFormat,
    n: &NodeRec<'_>,
    p: &PortRec<'_>,
    partial: bool,
) {
    let id = p.remote_id.as_ref();
    if partial {
        cx.warn(
            Code::UnknownNode,
            p.remote_span,
            format!(
                "node `{id}` has no record: the link from {} port {} is dropped",
                node_name(n),
                p.port
            ),
            "no record describes this node",
            format!(
                "discovery was cut short (a node that did not answer, or a dump that ends \
                 early): `{id}` is left out of the fabric and its ports are unknown; discover \
                 the fabric again to import it whole"
            ),
        );
        return;
    }
    let record = match format {
        InputFormat::Topology => format!(
            "its own record, starting with a header line such as `{} \"{id}\"`",
            match id.get(..2) {
                Some("S-") => "Switch 36",
                Some("R-") => "Rt 1",
                Some("H-") => "Ca 1",
                _ => "Switch 36",
            }
        ),
        InputFormat::PortsReport => "lines of its own ports".to_owned(),
        InputFormat::LinkInfo => "a header line and lines of its own ports".to_owned(),
        InputFormat::SubnetLst => "lines of its own ports".to_owned(),
    };
    cx.error(
        Code::UnknownNode,
        p.remote_span,
        format!("node `{id}` is not declared"),
        "no record describes this node",
        format!(
            "every node a port line names needs {record}; if discovery was cut short, \
             `--partial` reads the rest, dropping the links to nodes without a record"
        ),
    );
}

/// Where a node's GUID comes from, for diagnostics.
pub(super) fn guid_site(n: &NodeRec<'_>) -> (SourceSpan, String) {
    match n.guid_origin {
        // A made-up end node's GUID is guessed from the port GUID here.
        GuidOrigin::Explicit(span) if n.shown.is_some() => (
            span,
            format!("{} gets its node GUID from this port GUID", node_name(n)),
        ),
        GuidOrigin::Explicit(span) => (
            span,
            format!("{} gets GUID `{}` here", node_name(n), n.guid),
        ),
        GuidOrigin::Counted => (
            n.id_span,
            format!("{} gets GUID `{}` by counting", node_name(n), n.guid),
        ),
    }
}

pub(super) fn port_in_range(cx: &mut Cx<'_>, n: &NodeRec<'_>, port: u32, span: SourceSpan) -> bool {
    if port >= 1 && port <= n.port_count {
        return true;
    }
    let help = if port == 0 {
        "port 0 is a switch's internal management port and takes no cable; cabled ports are \
         numbered from 1"
            .to_owned()
    } else {
        format!(
            "ports of {} are numbered 1 to {}",
            node_name(n),
            n.port_count
        )
    };
    let d = cx
        .diag(
            Code::PortOutOfRange,
            Severity::Error,
            span,
            format!("{} has no port {port}", node_name(n)),
            format!("port {port}"),
        )
        .with_secondary(
            n.count_span,
            format!(
                "{} is declared with {} ports here",
                node_name(n),
                n.port_count
            ),
        )
        .with_help(help);
    cx.push(d);
    false
}

/// Resolves end-node port GUIDs (own line first, then a peer's `(guid)`, else node GUID + port)
/// and checks that every sighting agrees; switch ports carry the node GUID.
pub(super) fn check_port_guids(
    cx: &mut Cx<'_>,
    nodes: &[NodeRec<'_>],
    dup: &[bool],
    by_id: &BTreeMap<&str, usize>,
) -> BTreeMap<End, (Guid, SourceSpan)> {
    // Every claim about a port's GUID: (end, guid, span), own lines first.
    let mut claims: Vec<(End, Guid, SourceSpan)> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        if dup.get(i).copied().unwrap_or(true) {
            continue;
        }
        for p in &n.ports {
            if let Some((g, span)) = p.local_guid {
                claims.push(((i, p.port), g, span));
            }
        }
    }
    for (i, n) in nodes.iter().enumerate() {
        if dup.get(i).copied().unwrap_or(true) {
            continue;
        }
        for p in &n.ports {
            if let (Some((g, span)), Some(&r)) = (p.remote_guid, by_id.get(p.remote_id.as_ref())) {
                claims.push(((r, p.remote_port), g, span));
            }
        }
    }
    let mut resolved: BTreeMap<End, (Guid, Option<SourceSpan>)> = BTreeMap::new();
    for &(end, g, span) in &claims {
        let Some(n) = nodes.get(end.0) else { continue };
        if end.1 == 0 || end.1 > n.port_count {
            continue; // already reported
        }
        let expected = if n.kind == NodeKind::Switch {
            Some((n.guid, None))
        } else {
            resolved.get(&end).copied()
        };
        match expected {
            None => {
                resolved.insert(end, (g, Some(span)));
            }
            Some((want, _)) if want == g => {}
            Some((want, first)) => {
                let mut d = cx.diag(
                    Code::PortGuidMismatch,
                    Severity::Error,
                    span,
                    format!("port {} of {} has two port GUIDs", end.1, node_name(n)),
                    format!("`{g}` here"),
                );
                d = match first {
                    Some(first) => d
                        .with_secondary(first, format!("`{want}` here"))
                        .with_help("a port has one port GUID; fix one of the two"),
                    None => d.with_help(format!(
                        "the ports of switch {} carry its node GUID `{want}`",
                        node_name(n)
                    )),
                };
                cx.push(d);
            }
        }
    }
    resolved
        .into_iter()
        .filter(|(end, _)| nodes.get(end.0).is_some_and(|n| n.kind != NodeKind::Switch))
        .filter_map(|(end, (g, span))| Some((end, (g, span?))))
        .collect()
}

/// A port in diagnostics: `switch `S-1`` for a switch (its ports carry its node GUID), else
/// `port 2 of `H-1``.
fn port_name(n: &NodeRec<'_>, port: u32) -> String {
    if n.kind == NodeKind::Switch {
        format!("switch {}", node_name(n))
    } else {
        format!("port {port} of {}", node_name(n))
    }
}

/// The port GUID name space, as OpenSM keeps it (apart from node GUIDs: a port GUID may
/// equal another node's node GUID, as ibsim's counting gives when a CA's port GUID, node
/// GUID + 1, is the next CA's node GUID): no GUID is 0, no end node's port GUIDs counted on
/// from its node GUID wrap past 2^64, and no two ports carry one port GUID (a switch's
/// ports carry its node GUID). Nodes whose node GUID is another's are reported there.
pub(super) fn check_port_space(
    cx: &mut Cx<'_>,
    nodes: &[NodeRec<'_>],
    dup: &[bool],
    port_guids: &BTreeMap<End, (Guid, SourceSpan)>,
) {
    // Who carries each port GUID: (node index, port, span, label).
    let mut carried: BTreeMap<Guid, (usize, u32, SourceSpan, String)> = BTreeMap::new();
    let mut node_guids: std::collections::BTreeSet<Guid> = std::collections::BTreeSet::new();
    for (i, n) in nodes.iter().enumerate() {
        if dup.get(i).copied().unwrap_or(true) || !node_guids.insert(n.guid) {
            continue;
        }
        let (site, site_label) = guid_site(n);
        if n.guid.0 == 0 {
            cx.error(
                Code::BadGuid,
                site,
                format!("{} has node GUID 0", node_name(n)),
                site_label,
                "GUID 0 is reserved; give the node a GUID with a `switchguid=`, `caguid=` or \
                 `rtguid=` line before its header",
            );
            continue;
        }
        let mut ports: Vec<(u32, Guid, SourceSpan, String)> = Vec::new();
        if n.kind == NodeKind::Switch {
            ports.push((0, n.guid, site, site_label));
        } else {
            for p in 1..=n.port_count {
                if let Some(&(g, span)) = port_guids.get(&(i, p)) {
                    ports.push((p, g, span, format!("`{g}` here")));
                    continue;
                }
                let Some(g) = n.guid.0.checked_add(u64::from(p)) else {
                    cx.error(
                        Code::BadGuid,
                        site,
                        format!(
                            "the port GUIDs of {} (node GUID + port number) wrap past \
                             0xffffffffffffffff",
                            node_name(n)
                        ),
                        format!("port {p} would have GUID {} + {p}", n.guid),
                        "an end node's ports carry its node GUID + the port number unless a \
                         port line gives `[p](guid)`; give the node a lower GUID",
                    );
                    break;
                };
                ports.push((
                    p,
                    Guid(g),
                    site,
                    format!(
                        "port {p} of {} gets `{}` (node GUID + {p})",
                        node_name(n),
                        Guid(g)
                    ),
                ));
            }
        }
        for (p, g, span, label) in ports {
            if g.0 == 0 {
                cx.error(
                    Code::BadGuid,
                    span,
                    format!("{} has port GUID 0", port_name(n, p)),
                    label,
                    "GUID 0 is reserved",
                );
                continue;
            }
            if let Some((fi, fp, fspan, flabel)) = carried.get(&g) {
                let Some(f) = nodes.get(*fi) else { continue };
                let d = cx
                    .diag(
                        Code::DuplicatePortGuid,
                        Severity::Error,
                        span,
                        format!(
                            "port GUID `{g}` belongs to two ports, {} and {}",
                            port_name(f, *fp),
                            port_name(n, p)
                        ),
                        label,
                    )
                    .with_secondary(*fspan, flabel.clone())
                    .with_help(
                        "a port GUID names one port (a switch's ports all carry its node GUID; \
                         an end node's carry its node GUID + the port number unless a port \
                         line gives `[p](guid)`); a port GUID may equal another node's node \
                         GUID, not another port's",
                    );
                cx.push(d);
                continue;
            }
            carried.insert(g, (i, p, span, label));
        }
    }
}
