//! The multicast groups of a build and their MFTs ([`apply`]): the implicit IPoIB broadcast
//! groups, as OpenSM creates them when IPoIB joins — the default partition's (MLID 0xC000,
//! P_Key 0xFFFF, every live end port a full member) and one per `tenant` or `shared`
//! partition with a live member (its full P_Key, its member ports and its VMs'
//! hypervisors', MLIDs from 0xC001 upward in declaration order, skipping the declared
//! groups') — unless `multicast { ipoib = false }`, and the
//! groups `multicast { group … }` declares. Each gets a tree along the routing's own
//! structure ([`crate::routing::multicast`]), checked against the unicast routes on its VL.
//!
//! A group's SL: its `sl`, else an SL of the traffic no class matches (SL 0 without QoS
//! classes and layers): the first of that class's first lane whose layer's VL admits a tree —
//! on a `layered` ring, layer 0's routes may leave no tree free of credit loops where layer
//! 1's do. A tenant's group takes its tenant's class. An SL the lane map drops is an error.
//! Members are end ports whose cable is up: a port that is down cannot join.
//!
//! A group without a declared `sl` that no layer's VL admits a tree on takes a VL of its own
//! when the budget has one no SL uses ([`LaneMap::spare`]): a spare SL mapped to it
//! ([`LaneMap::give_multicast`], the tables written again by [`crate::qos::tables`]). Every
//! group there is a subtree of one spanning tree ([`Trees::spanning`]): alone on a VL a tree
//! closes no loop, and the subtrees of one tree have only its dependencies. Without a spare
//! VL the group is refused with the loop and the budget a VL of its own would need.

use crate::code::Code;
use crate::diagnostic::Diagnostic;
use crate::elaborate::Elaborated;
use crate::qos::{LaneMap, Spare};
use crate::routing::multicast::{TreeError, Trees};
use crate::routing::{Engine, Layers, RouteNote};
use crate::{GroupMembers, Span};
use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::{FabricState, JoinState, McGroup, Mlid, NodeId, PortRef, Sl};

/// Groups listed by name in the note; the rest are counted.
const NOTE_GROUPS: usize = 4;

/// A group about to be built.
struct Planned {
    name: String,
    /// Where it is declared (`None`: implicit).
    span: Option<Span>,
    mlid: Mlid,
    pkey: u16,
    /// The SLs it may take, preferred first: its `sl`, else its class's SLs of lane 0, one
    /// per routing layer (the first whose VL admits a tree is taken).
    sls: Vec<u8>,
    /// Whether `sls` is its declared `sl` (it cannot move to a VL of its own).
    pinned: bool,
    members: BTreeMap<PortRef, JoinState>,
}

/// Builds every group of `e` into `state.multicast` (groups and MFTs) on the routed,
/// laned and partitioned `state`; the note says what was built. `engine` is the engine whose
/// method wrote the tables.
pub(crate) fn apply(
    state: &mut FabricState,
    e: &Elaborated,
    map: &mut LaneMap,
    layers: Option<&Layers>,
    engine: Engine,
) -> Result<Option<RouteNote>, Vec<Diagnostic>> {
    let mut planned = planned_groups(state, e, map)?;
    if planned.is_empty() {
        return Ok(None);
    }
    planned.sort_by_key(|p| p.mlid);
    let sl2vl = (!map.trivial()).then(|| map.sl2vl_table());
    let mut trees = Trees::new(state, engine, &e.config.routing, layers, sl2vl);
    let (built, own, mut errors) = build_trees(&mut trees, e, map, &planned);
    let checked = built.iter().all(|(_, _, t)| t.checked);
    drop(trees);
    if own.is_some() {
        crate::qos::tables(state, map);
    }
    errors.extend(write_mfts(state, e, &planned, &built));
    if !errors.is_empty() {
        return Err(errors);
    }
    let listed = record_groups(state, &planned, &built);
    state.multicast.normalize();
    Ok(Some(note(state, engine, &planned, &listed, checked, own)))
}

/// A group built: its MLID, the SL its tree is on, and the tree.
type Built = (Mlid, u8, crate::routing::multicast::Tree);

/// The groups to build, unsorted: IPoIB's (the all-ports group and one per tenant) when
/// configured, then the declared ones; a declared group on an SL no VL carries is refused.
fn planned_groups(
    state: &FabricState,
    e: &Elaborated,
    map: &LaneMap,
) -> Result<Vec<Planned>, Vec<Diagnostic>> {
    let live = live_ports(state);
    let default_sls = class_sls(map, default_class(e, map));
    let mut planned: Vec<Planned> = Vec::new();
    if e.config.multicast.ipoib {
        ipoib_groups(state, e, map, &live, &default_sls, &mut planned);
    }
    let mut errors: Vec<Diagnostic> = Vec::new();
    for g in &e.config.multicast.groups {
        match declared_group(e, map, g, &live, &default_sls) {
            Ok(p) => planned.push(p),
            Err(d) => errors.push(d),
        }
    }
    if errors.is_empty() {
        Ok(planned)
    } else {
        Err(errors)
    }
}

/// IPoIB's groups: every live port in the all-ports group (MLID 0xc000), and per tenant with a
/// live port one group from 0xc001 on (skipping declared MLIDs), on the tenant's class's SLs.
fn ipoib_groups(
    state: &FabricState,
    e: &Elaborated,
    map: &LaneMap,
    live: &[PortRef],
    default_sls: &[u8],
    planned: &mut Vec<Planned>,
) {
    planned.push(Planned {
        name: "ipoib".to_owned(),
        span: None,
        mlid: Mlid::MIN,
        pkey: 0xffff,
        sls: default_sls.to_vec(),
        pinned: false,
        members: live.iter().map(|&p| (p, JoinState::FULL)).collect(),
    });
    let declared: BTreeSet<Mlid> = e.config.multicast.groups.iter().map(|g| g.mlid).collect();
    let mut next = 0xC001u16;
    for t in &e.config.tenants {
        while Mlid::new(next).is_some_and(|m| declared.contains(&m)) {
            next = next.saturating_add(1);
        }
        // The partition's member ports, and its VMs' hypervisors' ports (a VM's IPoIB
        // joins through its VF, behind that port).
        let mut ports: BTreeSet<PortRef> = state
            .partitions
            .iter()
            .find(|p| p.name == t.name)
            .map(|p| p.members.keys().copied().collect())
            .unwrap_or_default();
        let hosts: BTreeSet<NodeId> = t.members().collect();
        ports.extend(live.iter().filter(|p| hosts.contains(&p.node)));
        if ports.is_empty() {
            continue;
        }
        let Some(mlid) = Mlid::new(next) else { break };
        next = next.saturating_add(1);
        let sls = t
            .class
            .as_ref()
            .and_then(|(c, _)| map.classes.iter().find(|l| l.name == *c))
            .map_or_else(|| default_sls.to_vec(), |c| class_sls(map, Some(c)));
        planned.push(Planned {
            name: format!("ipoib.{}", t.name),
            span: None,
            mlid,
            pkey: 0x8000 | t.pkey,
            sls,
            pinned: false,
            members: ports
                .into_iter()
                .filter(|p| live.contains(p))
                .map(|p| (p, JoinState::FULL))
                .collect(),
        });
    }
}

/// A declared group with its live member ports, or why its SL cannot carry it.
fn declared_group(
    e: &Elaborated,
    map: &LaneMap,
    g: &crate::GroupDecl,
    live: &[PortRef],
    default_sls: &[u8],
) -> Result<Planned, Diagnostic> {
    let of = |nodes: &[NodeId]| -> Vec<PortRef> {
        live.iter()
            .copied()
            .filter(|p| nodes.contains(&p.node))
            .collect()
    };
    let mut members: BTreeMap<PortRef, JoinState> = match &g.members {
        GroupMembers::All => live.iter().map(|&p| (p, JoinState::FULL)).collect(),
        GroupMembers::Nodes(nodes) => of(nodes)
            .into_iter()
            .map(|p| (p, JoinState::FULL))
            .collect(),
    };
    for p in of(&g.send_only) {
        members.insert(p, JoinState::SEND_ONLY_NON_MEMBER);
    }
    let sls = g.sl.map_or_else(|| default_sls.to_vec(), |(s, _)| vec![s]);
    let dropped = g.sl.filter(|&(sl, _)| {
        !map.trivial() && map.sl2vl.get(usize::from(sl)) == Some(&LaneMap::DROP)
    });
    if let Some((sl, _)) = dropped {
        let used: Vec<String> = (0u8..16)
            .filter(|&s| map.sl2vl.get(usize::from(s)) != Some(&LaneMap::DROP))
            .map(|s| s.to_string())
            .collect();
        return Err(Diagnostic::error(
            Code::MulticastSl,
            format!(
                "group `{}` is on SL {sl}, which no class or routing layer maps to a VL",
                g.name
            ),
        )
        .label(
            e.fabric_origin.source,
            g.sl.map_or(g.span, |(_, at)| at),
            "its packets would be dropped",
        )
        .help(format!(
            "the SLs in use are {}; put the group on one of them",
            used.join(", ")
        )));
    }
    Ok(Planned {
        name: g.name.clone(),
        span: Some(g.span),
        mlid: g.mlid,
        pkey: g.pkey.0,
        sls,
        pinned: g.sl.is_some(),
        members,
    })
}

/// Every planned group's tree: on the first of its SLs whose VL admits one, else (an unpinned
/// group whose trees all close a loop) a subtree of one spanning tree on a VL of their own.
fn build_trees(
    trees: &mut Trees<'_>,
    e: &Elaborated,
    map: &mut LaneMap,
    planned: &[Planned],
) -> (Vec<Built>, Option<OwnVl>, Vec<Diagnostic>) {
    let mut errors = Vec::new();
    let mut built: Vec<Built> = Vec::new();
    // The groups no layer's VL admits a tree on, with why, for a VL of their own.
    let mut homeless: Vec<(&Planned, TreeError)> = Vec::new();
    for p in planned {
        let mut last = None;
        for &sl in &p.sls {
            match trees.tree(p.mlid, sl, &p.members) {
                Ok(t) => {
                    built.push((p.mlid, sl, t));
                    last = None;
                    break;
                }
                Err(err) => last = Some(err),
            }
        }
        match last {
            None => {}
            Some(err @ TreeError::Loop { .. }) if !p.pinned => homeless.push((p, err)),
            Some(err) => errors.push(refusal(e, p, &err, None)),
        }
    }
    if homeless.is_empty() {
        return (built, None, errors);
    }
    // A VL of their own: one spanning tree there, each group one of its subtrees.
    let pinned: Vec<u8> = planned
        .iter()
        .filter(|p| p.pinned)
        .flat_map(|p| p.sls.iter().copied())
        .collect();
    let own = match map.spare(&pinned) {
        Ok((sl, vl)) => {
            map.give_multicast(sl, vl, &pinned);
            let span = trees.spanning();
            let mut groups = Vec::new();
            for (p, _) in &homeless {
                match trees.subtree(&span, &p.members) {
                    Ok(t) => {
                        built.push((p.mlid, sl.0, t));
                        groups.push(p.name.clone());
                    }
                    Err(err) => errors.push(refusal(e, p, &err, None)),
                }
            }
            Some(OwnVl {
                sl: sl.0,
                vl: vl.0,
                root: span.root_switch(trees),
                groups,
            })
        }
        Err(spare) => {
            for (p, err) in &homeless {
                errors.push(refusal(e, p, err, Some((spare, map.budget))));
            }
            None
        }
    };
    (built, own, errors)
}

/// Writes the trees' masks into the MFTs; a tree through a switch whose MFT does not reach
/// its MLID is refused.
fn write_mfts(
    state: &mut FabricState,
    e: &Elaborated,
    planned: &[Planned],
    built: &[Built],
) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    for (mlid, _, t) in built {
        for &(sw, mask) in &t.masks {
            let node = state.fabric.node(sw);
            if let Some(cap) = node.spec.multicast_fdb_cap {
                if mlid.index() >= usize::from(cap) {
                    let name = planned
                        .iter()
                        .find(|p| p.mlid == *mlid)
                        .map_or_else(String::new, |p| p.name.clone());
                    errors.push(
                        Diagnostic::error(
                            Code::MftCapacityExceeded,
                            format!(
                                "group `{name}`'s tree passes `{}`, whose MFT holds {cap} MLID(s) from 0xc000, not {mlid}",
                                node.name()
                            ),
                        )
                        .label(e.fabric_origin.source, e.fabric_origin.span, "in this fabric")
                        .help("give the group a lower MLID"),
                    );
                    break;
                }
            }
            state.multicast.mfts.entry(sw).or_default().set(*mlid, mask);
        }
    }
    errors
}

/// Records every planned group in `state.multicast.groups` (with its tree's SL); the first
/// [`NOTE_GROUPS`] of them, for the note.
fn record_groups(state: &mut FabricState, planned: &[Planned], built: &[Built]) -> Vec<String> {
    let roots: BTreeMap<Mlid, (u8, Option<NodeId>)> =
        built.iter().map(|(m, sl, t)| (*m, (*sl, t.root))).collect();
    let mut listed: Vec<String> = Vec::new();
    for p in planned {
        let (sl, root) = roots.get(&p.mlid).copied().unwrap_or((0, None));
        if listed.len() < NOTE_GROUPS {
            let root = root
                .map(|r| format!(", root `{}`", state.fabric.node(r).name()))
                .unwrap_or_default();
            listed.push(format!(
                "`{}` {} (P_Key {:#06x}, SL {sl}, {} port(s){root})",
                p.name,
                p.mlid,
                p.pkey,
                p.members.len()
            ));
        }
        state.multicast.groups.push(McGroup {
            mlid: p.mlid,
            pkey: p.pkey,
            sl: Sl(sl),
            members: p.members.clone(),
        });
    }
    if planned.len() > NOTE_GROUPS {
        listed.push(format!("and {} more", planned.len() - NOTE_GROUPS));
    }
    listed
}

/// The routing note: how many groups, how their trees were made, the listed ones, and the VL
/// of their own when some groups needed it.
fn note(
    state: &FabricState,
    engine: Engine,
    planned: &[Planned],
    listed: &[String],
    checked: bool,
    own: Option<OwnVl>,
) -> RouteNote {
    let how = if checked {
        format!("trees along the `{engine}` routing, free of credit loops with its routes")
    } else {
        format!(
            "breadth-first trees, not checked against credit loops: the `{engine}` routes close \
             one on their own"
        )
    };
    let own = own.map_or_else(String::new, |o| {
        let mut names: Vec<String> = o
            .groups
            .iter()
            .take(NOTE_GROUPS)
            .map(|g| format!("`{g}`"))
            .collect();
        if o.groups.len() > NOTE_GROUPS {
            names.push(format!("and {} more", o.groups.len() - NOTE_GROUPS));
        }
        let (they, own, each) = if o.groups.len() == 1 {
            ("it is", "its", "as")
        } else {
            ("they are", "their", "each")
        };
        format!(
            "; no routing layer's VL admits a tree for {}: {they} on SL {} → VL {}, a VL of \
             {own} own that no unicast route takes, {each} a subtree of one breadth-first \
             spanning tree from `{}`",
            names.join(", "),
            o.sl,
            o.vl,
            o.root.map_or("?", |r| state.fabric.node(r).name()),
        )
    });
    RouteNote {
        code: Code::Multicast,
        message: format!(
            "{} multicast group(s), {how}: {}{own}",
            planned.len(),
            listed.join("; ")
        ),
    }
}

/// The SL and VL of their own the groups no layer's VL admitted got, and which.
struct OwnVl {
    sl: u8,
    vl: u8,
    /// The spanning tree's root.
    root: Option<NodeId>,
    /// The groups on it, by name, in MLID order.
    groups: Vec<String>,
}

/// The error for group `p`, which has no tree: `err`; for a loop, with `spare` what kept
/// it off a VL of its own (and the budget), when that was tried.
fn refusal(e: &Elaborated, p: &Planned, err: &TreeError, spare: Option<(Spare, u8)>) -> Diagnostic {
    let source = e.fabric_origin.source;
    let (why, help) = match (err, spare) {
        (TreeError::Unreachable { .. }, _) => (
            String::new(),
            "the faults cut the group's members apart; check the `faults` block".to_owned(),
        ),
        (TreeError::Loop { .. }, None) => (
            String::new(),
            "put the group on an SL of its own VL (`sl = …`, with a QoS class there), leave \
             out its `sl` (weft then gives it a VL of its own when the budget has one spare), \
             or route with `engine = updn`, whose Up*/Down* order every tree can follow"
                .to_owned(),
        ),
        (TreeError::Loop { .. }, Some((Spare::Vls { needed: Some(n) }, budget))) => (
            format!(
                "; every VL of the budget of {budget} carries unicast routes, and a VL of its \
                 own would need a budget of {n}"
            ),
            format!(
                "raise `vls {{ budget = {n} }}` (the ports' VLCap allowing), or route with \
                 `engine = updn`, whose Up*/Down* order every tree can follow"
            ),
        ),
        (TreeError::Loop { .. }, Some((Spare::Vls { needed: None }, _))) => (
            "; all 15 data VLs carry unicast routes, none is left for a VL of its own".to_owned(),
            "route with `engine = updn`, whose Up*/Down* order every tree can follow, or \
             with fewer QoS lanes"
                .to_owned(),
        ),
        (TreeError::Loop { .. }, Some((Spare::Sls, _))) => (
            "; all 16 SLs are in use, none is left for a VL of its own".to_owned(),
            "give the QoS classes fewer SLs, or route with `engine = updn`, whose Up*/Down* \
             order every tree can follow"
                .to_owned(),
        ),
    };
    let d = Diagnostic::error(
        Code::MulticastLoop,
        format!("multicast group `{}` ({}): {err}{why}", p.name, p.mlid),
    )
    .help(help);
    match p.span {
        Some(at) => d.label(source, at, "this group"),
        None => d.label(
            source,
            e.fabric_origin.span,
            "its implicit IPoIB group (`multicast { ipoib = false }` turns them off)",
        ),
    }
}

/// Every end port whose cable is up (the ports that can join a group), in order.
fn live_ports(state: &FabricState) -> Vec<PortRef> {
    let f = &state.fabric;
    f.node_ids()
        .filter(|&id| !f.node(id).is_switch())
        .flat_map(|id| {
            f.node(id)
                .ports
                .iter()
                .map(move |p| PortRef::new(id, p.num.0))
        })
        .filter(|&p| f.live_peer(p).is_some())
        .collect()
}

/// The class of the traffic no class matches: the class without a `match` that no tenant
/// names, else the first class; `None` without classes.
fn default_class<'m>(e: &Elaborated, map: &'m LaneMap) -> Option<&'m crate::qos::ClassLanes> {
    if !map.declared {
        return None;
    }
    let named = |c: &str| {
        e.config
            .tenants
            .iter()
            .any(|t| t.class.as_ref().is_some_and(|(n, _)| n == c))
    };
    map.classes
        .iter()
        .find(|c| c.matches.is_empty() && !named(&c.name))
        .or_else(|| map.classes.first())
}

/// The SLs of `class`'s first lane, one per routing layer (without classes, SL `i` is layer
/// `i`'s).
fn class_sls(map: &LaneMap, class: Option<&crate::qos::ClassLanes>) -> Vec<u8> {
    (0..map.layers.max(1))
        .map(|layer| class.map_or(layer, |c| c.sl_of(0, layer, map.layers).0))
        .collect()
}
