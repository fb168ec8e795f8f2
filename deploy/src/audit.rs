//! `weft audit`: a live fabric read over SMPs into a [`FabricState`] — its nodes (named by
//! NodeDescription), links, LIDs and LFTs — for the verifier to prove or refute, as `weft
//! verify` does for a compiled state or OpenSM's dumps.
//!
//! SL→VL tables are not read: every path counts on VL 0, which can only add channel
//! dependencies (a credit loop found may be one the fabric's VLs break; "deadlock-free" stays
//! true).

use crate::discover::{discover, DiscoverError, Discovery};
use crate::read::read_lfts;
use crate::smp::{self, Attr, NodeType};
use crate::transport::{SmpError, Target, TransportExt};
use std::collections::BTreeMap;
use weft_fabric::{
    FabricBuilder, FabricState, Guid, Lft, Lid, LinkError, NodeKind, NodeSpec, PortNum, PortRef,
    SwitchState, VirtualPort, WireView,
};

/// Why a fabric could not be read.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// Discovery failed.
    #[error(transparent)]
    Discover(#[from] DiscoverError),
    /// An SMP failed.
    #[error("reading the fabric: {0}")]
    Smp(#[from] SmpError),
    /// What the fabric reported cannot be a fabric (a GUID twice, a port out of range).
    #[error("the fabric as discovered is not a fabric weft can model: {0}")]
    Model(#[from] LinkError),
}

/// A fabric read over SMPs.
#[derive(Debug)]
pub struct Audited {
    /// What it runs.
    pub state: FabricState,
    /// SMPs it took.
    pub smps: usize,
}

/// Reads the fabric through `t` (named `name`): what [`state_of`] reads, and the SL→VL tables
/// of every switch (each pair of live ports) and end port, and every end port's P_Key table.
/// A table that maps every SL to VL 0 is kept as the state's "no QoS" form; a P_Key table is
/// kept as the partitions it holds, each once (empty slots dropped, a full membership over a
/// limited one), and one holding only the default key (0xffff) as no table.
pub fn audit(t: &mut impl TransportExt, name: &str) -> Result<Audited, AuditError> {
    let d = discover(t)?;
    let mut a = state_of(t, &d, name, None)?;
    a.smps += d.smps;
    let vls = crate::read::read_switch_sl2vl(t, &d, &mut a.smps)?;
    for (g, (rows, all)) in vls {
        let Some(id) = a.state.fabric.find_guid(g) else {
            continue;
        };
        let sw = a.state.switches.entry(id).or_default();
        sw.sl2vl = rows;
        sw.sl2vl_all = all;
    }
    let ends = crate::read::read_end_ports(t, &d, &mut a.smps)?;
    for ((g, p), (vl, keys)) in ends {
        let Some(id) = a.state.fabric.find_guid(g) else {
            continue;
        };
        let port = a.state.ports.entry(PortRef::new(id, p)).or_default();
        if vl != [0; 16] {
            port.sl2vl = Some(vl);
        }
        // The partitions the port is in, each once (a full membership over a limited one):
        // empty slots and their positions do not change who may talk to whom.
        let mut member: Vec<u16> = Vec::new();
        for k in keys.into_iter().filter(|k| k & 0x7fff != 0) {
            match member.iter_mut().find(|m| **m & 0x7fff == k & 0x7fff) {
                Some(m) => *m |= k & 0x8000,
                None => member.push(k),
            }
        }
        if member != [weft_fabric::PKey::DEFAULT.0] {
            port.pkeys = Some(member.into_iter().map(weft_fabric::PKey).collect());
        }
    }
    a.state.ports.retain(|_, p| !p.is_empty());
    Ok(a)
}

/// What the fabric `d` discovered runs, read through `t` (its SMPs counted, discovery's
/// not). With `expected` (the wire view of the state a plan starts from), every vSwitch the
/// fabric shows as a switch with one adapter per VF is folded into its hypervisor, as that
/// state models it (see [`WireView::fold_vswitches`]); the VFs' adapters become VFs of their
/// hypervisor's port (with their port GUIDs and LIDs), so a proof on the state covers their
/// LIDs.
pub fn state_of(
    t: &mut impl TransportExt,
    d: &Discovery,
    name: &str,
    expected: Option<&WireView>,
) -> Result<Audited, AuditError> {
    let view = match expected {
        Some(e) => d.view.fold_vswitches(e),
        None => d.view.clone(),
    };
    // The VFs the fabric shows as adapters behind each folded vSwitch: their port GUIDs and
    // LIDs, owned by their hypervisor's port (indexed in port GUID order: the wire does not
    // say which VF of its hypervisor an adapter is).
    let mut vfs: Vec<((Guid, u8), u64, Option<u16>)> = Vec::new();
    let folded = expected.map(|e| d.view.vswitches(e)).unwrap_or_default();
    // Each VF adapter's one linked port.
    let mut linked: BTreeMap<Guid, u8> = BTreeMap::new();
    if !folded.is_empty() {
        for &(x, y) in &d.view.links {
            linked.insert(x.0, x.1);
            linked.insert(y.0, y.1);
        }
    }
    for v in folded {
        let mut here: Vec<(u64, Option<u16>)> = Vec::new();
        for a in &v.vfs {
            let Some(&p) = linked.get(a) else {
                continue;
            };
            let guid = d
                .nodes
                .get(a)
                .and_then(|f| f.port_guids.get(&p).copied())
                .unwrap_or_else(|| a.0.wrapping_add(u64::from(p)));
            here.push((guid, d.view.lids.get(&(*a, p)).copied()));
        }
        here.sort_unstable();
        vfs.extend(here.into_iter().map(|(g, l)| (v.pf.1, g, l)));
    }
    let shown = |g: &Guid| view.nodes.contains_key(g);
    let mut smps = 0;
    // Names: the node description, made unique with the GUID where it is not.
    let mut descriptions = BTreeMap::new();
    for (g, f) in d.nodes.iter().filter(|(g, _)| shown(g)) {
        let p = t.get(&Target {
            path: f.path.clone(),
            attr: Attr::NodeDescription,
            modifier: 0,
        })?;
        smps += 1;
        descriptions.insert(*g, smp::decode_description(&p).trim().to_owned());
    }
    let mut uses: BTreeMap<&str, usize> = BTreeMap::new();
    for s in descriptions.values() {
        *uses.entry(s.as_str()).or_default() += 1;
    }
    let mut b = FabricBuilder::new(name);
    b.set_lmc(view.lmc);
    let mut ids = BTreeMap::new();
    for (g, f) in d.nodes.iter().filter(|(g, _)| shown(g)) {
        let desc = descriptions.get(g).map_or("", String::as_str);
        let kind = match f.info.node_type {
            NodeType::Switch => NodeKind::Switch,
            NodeType::Router => NodeKind::Router,
            _ => NodeKind::Hca,
        };
        let name = if desc.is_empty() || uses.get(desc).copied().unwrap_or(0) > 1 {
            let prefix = if desc.is_empty() {
                if kind == NodeKind::Switch {
                    "S"
                } else {
                    "H"
                }
            } else {
                desc
            };
            format!("{prefix}-{:016x}", g.0)
        } else {
            desc.to_owned()
        };
        let mut spec = NodeSpec::new(name, kind, *g, f.info.num_ports);
        spec.system_guid = Some(Guid(f.info.system_guid)).filter(|s| s.0 != 0);
        if kind != NodeKind::Switch {
            spec.port_guids = Some(
                (1..=f.info.num_ports)
                    .map(|p| {
                        Guid(
                            f.port_guids
                                .get(&p)
                                .copied()
                                .unwrap_or_else(|| g.0.wrapping_add(u64::from(p))),
                        )
                    })
                    .collect(),
            );
        }
        ids.insert(*g, b.add_node(spec)?);
    }
    for ((ga, pa), (gb, pb)) in &view.links {
        if let (Some(&a), Some(&bb)) = (ids.get(ga), ids.get(gb)) {
            b.add_link(PortRef::new(a, *pa), PortRef::new(bb, *pb))?;
        }
    }
    let mut state = FabricState::new(b.finish());
    for ((g, p), lid) in &view.lids {
        if let Some(&id) = ids.get(g) {
            state
                .lids
                .base
                .entry(id)
                .or_default()
                .insert(PortNum(*p), Lid(*lid));
        }
    }
    let mut index: BTreeMap<(Guid, u8), u8> = BTreeMap::new();
    for ((host, port), guid, lid) in vfs {
        let Some(&id) = ids.get(&host) else {
            continue;
        };
        let k = index.entry((host, port)).or_default();
        state.lids.vports.push(VirtualPort {
            host: PortRef::new(id, port),
            vf: *k,
            guid: Guid(guid),
            lid: lid.map(Lid),
            vm: None,
            pkeys: None,
        });
        *k = k.saturating_add(1);
    }
    let lfts = read_lfts(t, d, &mut smps)?;
    for (g, lft) in lfts {
        if let Some(&id) = ids.get(&g) {
            state.switches.insert(
                id,
                SwitchState {
                    lft: Lft { ports: lft },
                    ..SwitchState::default()
                },
            );
        }
    }
    Ok(Audited { state, smps })
}

/// The VFs of a fabric that addresses them through their hypervisor's port (the `sim`
/// target: they are not on the wire), added to `st` as the fabric holds them, so a proof on
/// `st` covers their LIDs: VFs 0 to N - 1 of each vSwitch hypervisor port of the plan's wire
/// view (N its VF count; a VF the fabric does not have is skipped), each with the port GUID a
/// `vport` write or a declared partition of the plan names for it, else one of its own (no
/// message names a VF by it). The SMPs it took.
pub fn vfs_through_hosts(
    t: &mut impl TransportExt,
    d: &Discovery,
    plan: &weft_fabric::plan::Plan,
    st: &mut weft_fabric::FabricState,
) -> Result<usize, SmpError> {
    let Some(wire) = &plan.wire else {
        return Ok(0);
    };
    let named: std::collections::BTreeMap<(weft_fabric::Guid, u8, u8), weft_fabric::Guid> = plan
        .steps
        .iter()
        .flat_map(|s| &s.writes)
        .filter_map(|w| match w {
            weft_fabric::plan::Write::Vport {
                node,
                port,
                vf,
                guid,
                ..
            } => Some(((*node, *port, *vf), *guid)),
            _ => None,
        })
        .chain(
            plan.partitions
                .iter()
                .flat_map(|p| &p.members)
                .filter_map(|m| match m {
                    weft_fabric::plan::Member::Vf {
                        host,
                        port,
                        vf,
                        guid,
                        ..
                    } => Some(((*host, *port, *vf), *guid)),
                    weft_fabric::plan::Member::Port { .. } => None,
                }),
        )
        .collect();
    let ports = d.vf_ports(wire);
    let mut smps = 0;
    let mut own = u64::MAX;
    // Shown on the wire: read with the fabric.
    let shown: std::collections::BTreeSet<PortRef> =
        st.lids.vports.iter().map(|v| v.host).collect();
    let mut wanted: Vec<(PortRef, crate::read::VfId)> = Vec::new();
    for (&(host, port), &n) in &wire.vf_hosts {
        let Some(id) = st.fabric.find_guid(host) else {
            continue;
        };
        let at = PortRef::new(id, port);
        if shown.contains(&at) {
            continue;
        }
        for vf in (0..n).filter_map(|k| u8::try_from(k).ok()) {
            let guid = named.get(&(host, port, vf)).copied().unwrap_or_else(|| {
                own -= 1;
                weft_fabric::Guid(own)
            });
            wanted.push((at, ((host, port), (vf, guid))));
        }
    }
    let ids: Vec<crate::read::VfId> = wanted.iter().map(|(_, id)| *id).collect();
    let read = crate::read::read_vfs(t, d, &ports, &ids, true, &mut smps);
    for ((at, (_, (vf, guid))), r) in wanted.into_iter().zip(read) {
        match r {
            Ok(Ok((lid, _))) => st.lids.vports.push(weft_fabric::VirtualPort {
                host: at,
                vf,
                guid,
                lid: lid.map(weft_fabric::Lid),
                vm: None,
                pkeys: None,
            }),
            // Not a VF there (or not one that can be read through the port): the proof then
            // finds any write to it unproven.
            Ok(Err(_)) | Err(SmpError::Status { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(smps)
}
