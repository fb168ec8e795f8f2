//! The multicast groups of a build and their MFTs ([`apply`]): the implicit IPoIB broadcast
//! groups, as OpenSM creates them when IPoIB joins — the default partition's (MLID 0xC000,
//! P_Key 0xFFFF, every live end port a full member) and one per `tenant` or `shared`
//! partition (its full P_Key, its member ports, MLIDs from 0xC001 upward in declaration
//! order, skipping the declared groups') — unless `multicast { ipoib = false }`, and the
//! groups `multicast { group … }` declares. Each gets a tree along the routing's own
//! structure ([`crate::routing::multicast`]), checked against the unicast routes on its VL.
//!
//! A group's SL: its `sl`, else the SL of the traffic no class matches (SL 0 without QoS
//! classes); a tenant's group takes its tenant's class. An SL the lane map drops is an error.
//! Members are end ports whose cable is up: a port that is down cannot join.

use crate::code::Code;
use crate::diagnostic::Diagnostic;
use crate::elaborate::Elaborated;
use crate::qos::LaneMap;
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
    sl: u8,
    members: BTreeMap<PortRef, JoinState>,
}

/// Builds every group of `e` into `state.multicast` (groups and MFTs) on the routed,
/// laned and partitioned `state`; the note says what was built. `engine` is the engine whose
/// method wrote the tables.
pub fn apply(
    state: &mut FabricState,
    e: &Elaborated,
    map: &LaneMap,
    layers: Option<&Layers>,
    engine: Engine,
) -> Result<Option<RouteNote>, Vec<Diagnostic>> {
    let config = &e.config.multicast;
    let source = e.fabric_origin.source;
    let mut errors: Vec<Diagnostic> = Vec::new();
    let live = live_ports(state);
    let default_sl = default_sl(e, map);
    let mut planned: Vec<Planned> = Vec::new();
    if config.ipoib {
        planned.push(Planned {
            name: "ipoib".to_owned(),
            span: None,
            mlid: Mlid::MIN,
            pkey: 0xffff,
            sl: default_sl,
            members: live.iter().map(|&p| (p, JoinState::FULL)).collect(),
        });
        let declared: BTreeSet<Mlid> = config.groups.iter().map(|g| g.mlid).collect();
        let mut next = 0xC001u16;
        for t in &e.config.tenants {
            while Mlid::new(next).is_some_and(|m| declared.contains(&m)) {
                next = next.saturating_add(1);
            }
            let Some(mlid) = Mlid::new(next) else { break };
            next = next.saturating_add(1);
            let ports: BTreeSet<PortRef> = state
                .partitions
                .iter()
                .find(|p| p.name == t.name)
                .map(|p| p.members.keys().copied().collect())
                .unwrap_or_default();
            let sl = t
                .class
                .as_ref()
                .and_then(|(c, _)| map.classes.iter().find(|l| l.name == *c))
                .map_or(default_sl, |c| c.sl.0);
            planned.push(Planned {
                name: format!("ipoib.{}", t.name),
                span: None,
                mlid,
                pkey: 0x8000 | t.pkey,
                sl,
                members: ports
                    .into_iter()
                    .filter(|p| live.contains(p))
                    .map(|p| (p, JoinState::FULL))
                    .collect(),
            });
        }
    }
    for g in &config.groups {
        let of = |nodes: &[NodeId]| -> Vec<PortRef> {
            live.iter()
                .copied()
                .filter(|p| nodes.contains(&p.node))
                .collect()
        };
        let mut members: BTreeMap<PortRef, JoinState> = match &g.members {
            GroupMembers::All => live.iter().map(|&p| (p, JoinState::FULL)).collect(),
            GroupMembers::Nodes(nodes) => {
                of(nodes).into_iter().map(|p| (p, JoinState::FULL)).collect()
            }
        };
        for p in of(&g.send_only) {
            members.insert(p, JoinState::SEND_ONLY_NON_MEMBER);
        }
        let sl = g.sl.map_or(default_sl, |(s, _)| s);
        if !map.trivial() && map.sl2vl.get(usize::from(sl)) == Some(&LaneMap::DROP) {
            let used: Vec<String> = (0u8..16)
                .filter(|&s| map.sl2vl.get(usize::from(s)) != Some(&LaneMap::DROP))
                .map(|s| s.to_string())
                .collect();
            errors.push(
                Diagnostic::error(
                    Code::MulticastSl,
                    format!(
                        "group `{}` is on SL {sl}, which no class or routing layer maps to a VL",
                        g.name
                    ),
                )
                .label(source, g.sl.map_or(g.span, |(_, at)| at), "its packets would be dropped")
                .help(format!(
                    "the SLs in use are {}; put the group on one of them",
                    used.join(", ")
                )),
            );
            continue;
        }
        planned.push(Planned {
            name: g.name.clone(),
            span: Some(g.span),
            mlid: g.mlid,
            pkey: g.pkey.0,
            sl,
            members,
        });
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if planned.is_empty() {
        return Ok(None);
    }
    planned.sort_by_key(|p| p.mlid);
    let sl2vl = (!map.trivial()).then(|| map.sl2vl_table());
    let mut trees = Trees::new(state, engine, &e.config.routing, layers, sl2vl);
    let mut built: Vec<(Mlid, crate::routing::multicast::Tree)> = Vec::new();
    for p in &planned {
        match trees.tree(p.mlid, p.sl, &p.members) {
            Ok(t) => built.push((p.mlid, t)),
            Err(err) => {
                let help = match err {
                    TreeError::Loop { .. } => {
                        "put the group on an SL of its own VL (`sl = …`, with a QoS class \
                         there), or route with `engine = updn`, whose Up*/Down* order every \
                         tree can follow"
                    }
                    TreeError::Unreachable { .. } => {
                        "the faults cut the group's members apart; check the `faults` block"
                    }
                };
                let d = Diagnostic::error(
                    Code::MulticastLoop,
                    format!("multicast group `{}` ({}): {err}", p.name, p.mlid),
                )
                .help(help);
                errors.push(match p.span {
                    Some(at) => d.label(source, at, "this group"),
                    None => d.label(
                        source,
                        e.fabric_origin.span,
                        "its implicit IPoIB group (`multicast { ipoib = false }` turns them off)",
                    ),
                });
            }
        }
    }
    let checked = built.iter().all(|(_, t)| t.checked);
    drop(trees);
    for (mlid, t) in &built {
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
                        .label(source, e.fabric_origin.span, "in this fabric")
                        .help("give the group a lower MLID"),
                    );
                    continue;
                }
            }
            state.multicast.mfts.entry(sw).or_default().set(*mlid, mask);
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let roots: BTreeMap<Mlid, NodeId> = built
        .iter()
        .filter_map(|(m, t)| Some((*m, t.root?)))
        .collect();
    let mut listed: Vec<String> = Vec::new();
    for p in &planned {
        if listed.len() < NOTE_GROUPS {
            let root = roots
                .get(&p.mlid)
                .map(|&r| format!(", root `{}`", state.fabric.node(r).name()))
                .unwrap_or_default();
            listed.push(format!(
                "`{}` {} (P_Key {:#06x}, SL {}, {} port(s){root})",
                p.name,
                p.mlid,
                p.pkey,
                p.sl,
                p.members.len()
            ));
        }
        state.multicast.groups.push(McGroup {
            mlid: p.mlid,
            pkey: p.pkey,
            sl: Sl(p.sl),
            members: p.members.clone(),
        });
    }
    if planned.len() > NOTE_GROUPS {
        listed.push(format!("and {} more", planned.len() - NOTE_GROUPS));
    }
    state.multicast.normalize();
    let how = if checked {
        format!("trees along the `{engine}` routing, free of credit loops with its routes")
    } else {
        format!(
            "breadth-first trees, not checked against credit loops: the `{engine}` routes close \
             one on their own"
        )
    };
    Ok(Some(RouteNote {
        code: Code::Multicast,
        message: format!(
            "{} multicast group(s), {how}: {}",
            planned.len(),
            listed.join("; ")
        ),
    }))
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

/// The SL of the traffic no class matches: the class without a `match` that no tenant
/// names, else the first class; SL 0 without classes.
fn default_sl(e: &Elaborated, map: &LaneMap) -> u8 {
    if !map.declared {
        return 0;
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
        .map_or(0, |c| c.sl.0)
}
