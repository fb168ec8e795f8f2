//! Phase 3, only when no error was found: names, the [`Fabric`](weft_fabric::Fabric) through
//! [`FabricBuilder`], and the LIDs seen.

use super::*;

// Phase 3: build.

/// What phase 3 makes.
pub(super) struct Built {
    pub(super) fabric: weft_fabric::Fabric,
    pub(super) lids: LidAssignment,
    /// [`Discovered::unassigned`].
    pub(super) unassigned: Vec<PortRef>,
}

pub(super) fn build(
    cx: &mut Cx<'_>,
    file: &File<'_>,
    checked: &Checked,
    opts: &ParseOptions,
) -> Option<Built> {
    let nodes = &file.nodes;
    let names = assign_names(cx, nodes, opts);
    let mut b = FabricBuilder::new(opts.fabric_name.clone());
    let mut ids: Vec<NodeId> = Vec::with_capacity(nodes.len());
    for (i, (n, name)) in nodes.iter().zip(names).enumerate() {
        let port_count = u8::try_from(n.port_count).unwrap_or(u8::MAX);
        let mut spec = NodeSpec::new(name, n.kind, n.guid, port_count);
        // A system image GUID of 0 is "none" (as NodeInfo reports it), the node's own.
        spec.system_guid = n.system_guid.filter(|&g| g != n.guid && g.0 != 0);
        spec.vendor_id = n.vendor_id;
        spec.device_id = n.device_id;
        if n.kind != NodeKind::Switch {
            // Phase 2 checked that none of these wraps past 2^64 or is 0.
            let guids: Vec<Guid> = (1..=u32::from(port_count))
                .map(|p| match checked.port_guids.get(&(i, p)) {
                    Some(&(g, _)) => g,
                    None => Guid(n.guid.0.wrapping_add(u64::from(p))),
                })
                .collect();
            let derived = guids
                .iter()
                .zip(1u64..)
                .all(|(g, p)| n.guid.0.checked_add(p) == Some(g.0));
            if !derived {
                spec.port_guids = Some(guids);
            }
        }
        match b.add_node(spec) {
            Ok(id) => ids.push(id),
            Err(e) => {
                internal(cx, n.id_span, &e.to_string());
                return None;
            }
        }
    }
    for link in &checked.links {
        let ends = (
            ids.get(link.a.0).copied(),
            u8::try_from(link.a.1).ok(),
            ids.get(link.b.0).copied(),
            u8::try_from(link.b.1).ok(),
        );
        let (Some(an), Some(ap), Some(bn), Some(bp)) = ends else {
            continue;
        };
        let id = match b.add_link(PortRef::new(an, ap), PortRef::new(bn, bp)) {
            Ok(id) => id,
            Err(e) => {
                let span = nodes.get(link.a.0).map(|n| n.id_span).unwrap_or(sp(0, 0));
                internal(cx, span, &e.to_string());
                return None;
            }
        };
        let (width, speed) = link_rate(nodes, link);
        if width.is_some() || speed.is_some() {
            b.set_link_rate(id, speed, width);
        }
    }
    let lids = collect_lids(cx, nodes, &ids);
    let unassigned = unassigned(cx, nodes, &ids, &lids, b.fabric());
    b.set_lmc(lids.lids.lmc);
    Some(Built {
        fabric: b.finish(),
        lids: lids.lids,
        unassigned,
    })
}

pub(super) fn internal(cx: &mut Cx<'_>, span: SourceSpan, what: &str) {
    cx.error(
        Code::Internal,
        span,
        format!("internal error while building the fabric: {what}"),
        "here",
        "this is a bug in weft; please report it with this file",
    );
}

/// The rate of a link: the `4xEDR` annotation of either end, else what the ibsim port options
/// (`w=`, `s=`, `e=`) of the ends have in common.
pub(super) fn link_rate(nodes: &[NodeRec<'_>], link: &LinkPlan) -> (Option<Width>, Option<Speed>) {
    let sightings: Vec<&PortRec<'_>> = link
        .seen
        .iter()
        .flatten()
        .filter_map(|&at| port_at(nodes, at))
        .collect();
    // The narrower and slower of the two ends (phase 2 warned when they differ).
    if let Some(rate) = sightings
        .iter()
        .filter_map(|p| p.rate.map(|(r, _)| r))
        .reduce(|a, b| {
            let (width, speed) = slower(a, b);
            Rate { width, speed, ..a }
        })
    {
        return (rate.width, rate.speed);
    }
    let common = |get: fn(&PortOpts) -> Option<u64>| -> Option<u64> {
        sightings
            .iter()
            .filter_map(|p| get(&p.opts))
            .reduce(|a, b| a & b)
    };
    // IBA masks: width 1=1x 2=4x 4=8x 8=12x 16=2x; speed 1=SDR 2=DDR 4=QDR (0 means QDR in
    // ibsim); extended speed 1=FDR 2=EDR 4=HDR 8=NDR.
    let width = common(|o| o.w).and_then(|m| {
        [
            (8, Width::X12),
            (4, Width::X8),
            (2, Width::X4),
            (16, Width::X2),
            (1, Width::X1),
        ]
        .into_iter()
        .find(|(bit, _)| m & bit != 0)
        .map(|(_, w)| w)
    });
    let ext = common(|o| o.e).and_then(|m| {
        [
            (8, Speed::NDR),
            (4, Speed::HDR),
            (2, Speed::EDR),
            (1, Speed::FDR),
        ]
        .into_iter()
        .find(|(bit, _)| m & bit != 0)
        .map(|(_, s)| s)
    });
    let base = common(|o| o.s.map(|s| if s == 0 { 4 } else { s })).and_then(|m| {
        [(4, Speed::QDR), (2, Speed::DDR), (1, Speed::SDR)]
            .into_iter()
            .find(|(bit, _)| m & bit != 0)
            .map(|(_, s)| s)
    });
    (width, ext.or(base))
}

/// Names: the name-map entry for the GUID, else the description, else the node id; a name
/// already taken gets ` (0x<guid>)` appended (and ` #2`, ` #3`, … if even that is taken),
/// with a warning — but for SHARP aggregation nodes, which all share one NodeDescription
/// ([`weft_fabric::roles::is_aggregation_description`]): theirs is renamed without one.
pub(super) fn assign_names(
    cx: &mut Cx<'_>,
    nodes: &[NodeRec<'_>],
    opts: &ParseOptions,
) -> Vec<String> {
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    let mut names = Vec::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        let (base, span) = match (opts.name_map.get(&n.guid), n.desc) {
            (Some(mapped), _) => (mapped.clone(), n.id_span),
            (None, Some((desc, span))) => (desc.to_owned(), span),
            (None, None) => (n.id.as_ref().to_owned(), n.id_span),
        };
        let mut name = base.clone();
        if let Some(&first) = taken.get(&name) {
            name = format!("{base} ({})", n.guid);
            let mut k = 2u32;
            while taken.contains_key(&name) {
                name = format!("{base} ({}) #{k}", n.guid);
                k = k.saturating_add(1);
            }
            if weft_fabric::roles::is_aggregation_description(&base) {
                taken.insert(name.clone(), i);
                names.push(name);
                continue;
            }
            let first_span = nodes
                .get(first)
                .map(|f| f.desc.map(|(_, s)| s).unwrap_or(f.id_span))
                .unwrap_or(span);
            let d = cx
                .diag(
                    Code::DuplicateName,
                    Severity::Warning,
                    span,
                    format!("two nodes are named `{base}`"),
                    format!("renamed to `{name}`"),
                )
                .with_secondary(first_span, "first used here")
                .with_help("give every node a unique description, or use a node name map");
            cx.push(d);
        }
        taken.insert(name.clone(), i);
        names.push(name);
    }
    names
}

/// The LIDs [`collect_lids`] found, and where the file said a port has none.
pub(super) struct Lids {
    pub(super) lids: LidAssignment,
    /// `(node index, port)` (port 0 for a switch) → the first `lid 0` or `lid 65535` in the
    /// file said of it, for ports that no annotation gives a LID.
    pub(super) none_at: BTreeMap<(usize, u8), SourceSpan>,
}

/// Whether an annotated LID is one: 0 and 0xffff (the permissive LID a port reports before an
/// SM assigned it one) mean none.
pub(super) fn is_assigned(lid: u16) -> bool {
    lid != 0 && lid != 0xffff
}

/// LIDs seen: a switch's from its header (or a peer's `lid` annotation), an end node's per port
/// from its port lines (or a peer's). The LMC is the first one an end-node port line gives.
pub(super) fn collect_lids(cx: &mut Cx<'_>, nodes: &[NodeRec<'_>], ids: &[NodeId]) -> Lids {
    let mut lids = LidAssignment::default();
    let mut none_at: BTreeMap<(usize, u8), SourceSpan> = BTreeMap::new();
    let mut lmc: Option<(u8, SourceSpan)> = None;
    // Where each LID taken was given.
    let mut given_at: BTreeMap<(usize, u8), SourceSpan> = BTreeMap::new();
    let mut set = |node: usize, port: u8, (lid, span): (u16, SourceSpan)| {
        if !is_assigned(lid) {
            let first = none_at.entry((node, port)).or_insert(span);
            if span.offset() < first.offset() {
                *first = span;
            }
            return;
        }
        if let Some(&id) = ids.get(node) {
            let ports = lids.base.entry(id).or_default();
            if let std::collections::btree_map::Entry::Vacant(e) = ports.entry(PortNum(port)) {
                e.insert(Lid(lid));
                given_at.insert((node, port), span);
            }
        }
    };
    // Own annotations first, so that they win over what peers say.
    for (i, n) in nodes.iter().enumerate() {
        if let Some(l) = n.lid {
            set(i, 0, l);
        }
        for p in &n.ports {
            if let (Some(l), Ok(port)) = (p.local_lid, u8::try_from(p.port)) {
                if n.kind != NodeKind::Switch {
                    set(i, port, l);
                }
            }
            if let Some((m, span)) = p.local_lmc {
                match lmc {
                    None => lmc = Some((m, span)),
                    Some((first, first_span)) if first != m => {
                        let d = cx
                            .diag(
                                Code::LmcMismatch,
                                Severity::Warning,
                                span,
                                "end-node ports use different LMCs",
                                format!("`lmc {m}` here"),
                            )
                            .with_secondary(first_span, format!("`lmc {first}` here"))
                            .with_help(format!(
                                "weft uses one LMC for the fabric, the first one seen (`{first}`)"
                            ));
                        cx.push(d);
                    }
                    Some(_) => {}
                }
            }
        }
    }
    let by_id: BTreeMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .rev()
        .map(|(i, n)| (n.id.as_ref(), i))
        .collect();
    for n in nodes {
        for p in &n.ports {
            let (Some(l), Some(&r)) = (p.remote_lid, by_id.get(p.remote_id.as_ref())) else {
                continue;
            };
            let Some(rn) = nodes.get(r) else { continue };
            let port = if rn.kind == NodeKind::Switch {
                Some(0)
            } else {
                u8::try_from(p.remote_port).ok()
            };
            if let Some(port) = port {
                set(r, port, l);
            }
        }
    }
    lids.lmc = lmc.map(|(m, _)| m).unwrap_or(0);
    lid_clashes(cx, nodes, ids, &lids, &given_at);
    let base = &lids.base;
    none_at.retain(|&(node, port), _| {
        ids.get(node)
            .and_then(|id| base.get(id))
            .is_none_or(|ports| !ports.contains_key(&PortNum(port)))
    });
    Lids { lids, none_at }
}

/// An error for each port whose LIDs overlap another's (an end-node port has `2^lmc`, a
/// switch one), at the annotation that gives it: `weft check` refuses two nodes pinned to one
/// LID, so an import does too.
fn lid_clashes(
    cx: &mut Cx<'_>,
    nodes: &[NodeRec<'_>],
    ids: &[NodeId],
    lids: &LidAssignment,
    given_at: &BTreeMap<(usize, u8), SourceSpan>,
) {
    let block = 1u32 << lids.lmc.min(7);
    let mut ranges: Vec<(u32, u32, usize, u8, SourceSpan)> = Vec::new();
    for (i, (n, id)) in nodes.iter().zip(ids).enumerate() {
        let Some(ports) = lids.base.get(id) else {
            continue;
        };
        let size = if n.kind == NodeKind::Switch { 1 } else { block };
        for (port, lid) in ports {
            if let Some(&span) = given_at.get(&(i, port.0)) {
                let start = u32::from(lid.0);
                ranges.push((start, start + size - 1, i, port.0, span));
            }
        }
    }
    ranges.sort_by_key(|r| (r.0, r.4.offset()));
    let mut owner: Option<(u32, usize, u8, SourceSpan)> = None;
    let name = |i: usize, port: u8| {
        let n = nodes.get(i);
        match n {
            Some(n) if n.kind == NodeKind::Switch => format!("switch {}", node_name(n)),
            Some(n) => format!("{} port {port}", node_name(n)),
            None => String::new(),
        }
    };
    for (start, end, i, port, span) in ranges {
        match owner {
            Some((last, oi, oport, ospan)) if start <= last => {
                let d = cx
                    .diag(
                        Code::DuplicateLid,
                        Severity::Error,
                        span,
                        format!(
                            "LID {start} is given to {} and to {}",
                            name(i, port),
                            name(oi, oport)
                        ),
                        format!("LID {start} here"),
                    )
                    .with_secondary(ospan, "and here")
                    .with_help(if block > 1 {
                        format!(
                            "each port has its own LIDs: an end-node port {block} from a \
                             multiple of {block} (LMC {}), a switch one",
                            lids.lmc
                        )
                    } else {
                        "each port has its own LID; the subnet manager gives every port another \
                         one"
                        .to_owned()
                    });
                cx.push(d);
                if end > last {
                    owner = Some((end, i, port, span));
                }
            }
            _ => owner = Some((end, i, port, span)),
        }
    }
}

/// Names at most this many ports in the [`Code::UnassignedLid`] warning.
const UNASSIGNED_LISTED: usize = 8;

/// The ports that need a LID and have none while the file gives LIDs to others (a switch's
/// port 0, a cabled end-node port), with one warning listing them; none when the file gives
/// no LIDs at all.
pub(super) fn unassigned(
    cx: &mut Cx<'_>,
    nodes: &[NodeRec<'_>],
    ids: &[NodeId],
    lids: &Lids,
    fabric: &weft_fabric::Fabric,
) -> Vec<PortRef> {
    if lids.lids.base.is_empty() {
        return Vec::new();
    }
    let mut missing: Vec<(PortRef, SourceSpan)> = Vec::new();
    for (i, (n, &id)) in nodes.iter().zip(ids).enumerate() {
        let has = |port: u8| lids.lids.get(id, PortNum(port)).is_some();
        let span = |port: u8| lids.none_at.get(&(i, port)).copied().unwrap_or(n.id_span);
        if n.kind == NodeKind::Switch {
            if !has(0) {
                missing.push((PortRef::new(id, 0), span(0)));
            }
            continue;
        }
        for port in &fabric.node(id).ports {
            if port.link.is_some() && !has(port.num.0) {
                missing.push((PortRef::new(id, port.num.0), span(port.num.0)));
            }
        }
    }
    let Some(&(_, first)) = missing.iter().min_by_key(|(_, span)| span.offset()) else {
        return Vec::new();
    };
    let name = |p: &PortRef| {
        let node = fabric.node(p.node);
        if node.is_switch() {
            format!("switch `{}`", node.name())
        } else {
            format!("`{}` port {}", node.name(), p.port.0)
        }
    };
    let mut listed: Vec<String> = missing
        .iter()
        .take(UNASSIGNED_LISTED)
        .map(|(p, _)| name(p))
        .collect();
    if missing.len() > UNASSIGNED_LISTED {
        listed.push(format!("{} more", missing.len() - UNASSIGNED_LISTED));
    }
    let n = missing.len();
    cx.warn(
        Code::UnassignedLid,
        first,
        format!(
            "{n} port{} no LID while others have one: {}",
            if n == 1 { " has" } else { "s have" },
            listed.join(", ")
        ),
        if lids.none_at.values().any(|&s| s == first) {
            "no LID yet"
        } else {
            "no LID given for this node"
        },
        "`lid 0` and `lid 65535` mean that no subnet manager has assigned the port a LID \
         yet; these ports are imported without one (weft assigns LIDs when it compiles the \
         fabric), and `weft verify --topology` lists them as ports it could not cover",
    );
    let mut ports: Vec<PortRef> = missing.into_iter().map(|(p, _)| p).collect();
    ports.sort();
    ports
}
