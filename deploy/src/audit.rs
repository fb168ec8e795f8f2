//! `weft audit`: a live fabric read over SMPs into a [`FabricState`] — its nodes (named by
//! NodeDescription), links, LIDs, LFTs and MFTs — for the verifier to prove or refute, as
//! `weft verify` does for a compiled state or OpenSM's dumps.
//!
//! Multicast: every switch's MFT is read (up to its MulticastFDBTop where the switch supports
//! that field, else every block up to its MulticastFDBCap) into the state's
//! `multicast.mfts`. Group membership is not: no SMP carries it (the SA holds it, and answers
//! MCMemberRecord queries, `saquery -m`, over GMPs), so the audited state has trees and no
//! groups.
//!
//! SL→VL tables are not read: every path counts on VL 0, which can only add channel
//! dependencies (a credit loop found may be one the fabric's VLs break; "deadlock-free" stays
//! true).

use crate::discover::{discover, DiscoverError, Discovery};
use crate::observe::{port_sl2vl, ShownVf, SwitchVls, VfId};
use crate::read::{read_end_ports, read_lfts, read_mfts, read_switch_sl2vl, read_vfs, read_vlarbs};
use crate::smp::{self, Attr, NodeType};
use crate::transport::{Counted, SmpError, Target, TransportExt};
use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::{
    FabricBuilder, FabricState, Guid, LinkError, NodeKind, NodeSpec, PortNum, PortRef, SwitchState,
    VirtualPort, WireEnd, WireView,
};
use weft_formats::plan::{Member, Plan, SmpWrite};

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

impl weft_fabric::code::Coded for AuditError {
    /// The error's registered code ([`crate::CODES`]): discovery's or an SMP's own, or the
    /// model's refusal.
    fn code(&self) -> &'static str {
        match self {
            AuditError::Discover(e) => e.code(),
            AuditError::Smp(e) => e.code(),
            AuditError::Model(_) => "weft::deploy::fabric_model",
        }
    }
}

/// A fabric read over SMPs.
#[derive(Debug)]
pub struct Audited {
    /// What it runs, as a state says it ([`crate::observe`]).
    pub state: FabricState,
    /// The SMPs discovery and the reading took.
    pub smps: usize,
}

/// Reads the fabric through `t` (named `name`): what [`state_of`] reads, and the SL→VL tables
/// of every switch (each pair of live ports) and end port, the VL arbitration of every live
/// port ([`read_vlarbs`]: the entries its caps hold, and its VL high limit), and every end
/// port's P_Key table,
/// each as a state holds it ([`crate::observe`]). A P_Key table is kept as the partitions it
/// holds ([`PkeyTable::memberships`](crate::observe::PkeyTable::memberships)): what is proven
/// is who may talk to whom, whatever empty slots and repeats the table has.
pub fn audit(t: &mut impl TransportExt, name: &str) -> Result<Audited, AuditError> {
    let d = discover(t)?;
    let read = audit_discovered(t, &d, name)?;
    Ok(Audited {
        state: read.state,
        smps: d.smps + read.smps,
    })
}

/// What [`audit`] reads of the fabric `d` discovered (the SMPs: the reading's, not
/// discovery's): `weft watch`'s full read, after a discovery of its own.
pub fn audit_discovered(
    t: &mut impl TransportExt,
    d: &Discovery,
    name: &str,
) -> Result<Audited, AuditError> {
    let mut t = Counted::new(t);
    let mut state = state_of(&mut t, d, name, None)?;
    for (g, rows) in read_switch_sl2vl(&mut t, d)? {
        let Some(id) = state.fabric.find_guid(g) else {
            continue;
        };
        let vls = SwitchVls::of(rows);
        let sw = state.switches.entry(id).or_default();
        sw.sl2vl = vls.rows;
        sw.sl2vl_all = vls.all;
    }
    for ((g, p), arb) in read_vlarbs(&mut t, d)? {
        let Some(id) = state.fabric.find_guid(g) else {
            continue;
        };
        state.ports.entry(PortRef::new(id, p.0)).or_default().vlarb = Some(arb);
    }
    for ((g, p), read) in read_end_ports(&mut t, d)? {
        let Some(id) = state.fabric.find_guid(g) else {
            continue;
        };
        let port = state.ports.entry(PortRef::new(id, p.0)).or_default();
        port.sl2vl = port_sl2vl(read.sl2vl);
        port.pkeys = read.pkeys.memberships();
    }
    state.ports.retain(|_, p| !p.is_empty());
    Ok(Audited {
        state,
        smps: t.gets(),
    })
}

/// Every switch's MFT (non-empty ones, by switch GUID) as the fabric discovered through `t`
/// holds it ([`read_mfts`]), and the SMPs discovery and the reading took: what the OpenSM
/// hand-off reports of OpenSM's own multicast routing after its sweep.
pub fn read_multicast(
    t: &mut impl TransportExt,
) -> Result<(BTreeMap<Guid, weft_fabric::Mft>, usize), AuditError> {
    let d = discover(t)?;
    let mut t = Counted::new(t);
    let mfts = read_mfts(&mut t, &d)?
        .into_iter()
        .filter(|(_, r)| !r.mft.is_empty())
        .map(|(g, r)| (g, r.mft))
        .collect();
    Ok((mfts, d.smps + t.gets()))
}

/// What the fabric `d` discovered runs, read through `t`: its nodes (named by
/// NodeDescription), links, LIDs, LFTs and MFTs ([`read_mfts`]). With `expected` (the wire view of the state a plan
/// starts from), every vSwitch the fabric shows as a switch with one adapter per VF is folded
/// into its hypervisor, as that state models it (see [`WireView::fold_vswitches`]); the VFs'
/// adapters become VFs of their hypervisor's port (with their port GUIDs and LIDs), so a proof
/// on the state covers their LIDs.
pub fn state_of(
    t: &mut impl TransportExt,
    d: &Discovery,
    name: &str,
    expected: Option<&WireView>,
) -> Result<FabricState, AuditError> {
    let view = match expected {
        Some(e) => d.view.fold_vswitches(e),
        None => d.view.clone(),
    };
    let shown_vfs = expected.map(|e| shown_vfs(d, e)).unwrap_or_default();
    let shown = |g: &Guid| view.nodes.contains_key(g);
    // Names: the node description, made unique with the GUID where it is not.
    let mut descriptions = BTreeMap::new();
    for (g, f) in d.nodes.iter().filter(|(g, _)| shown(g)) {
        let p = t.get(&Target {
            path: f.path.clone(),
            attr: Attr::NodeDescription,
            modifier: 0,
        })?;
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
                    .map(|p| Guid(port_guid(d, *g, p)))
                    .collect(),
            );
        }
        ids.insert(*g, b.add_node(spec)?);
    }
    for ((ga, pa), (gb, pb)) in &view.links {
        if let (Some(&a), Some(&bb)) = (ids.get(ga), ids.get(gb)) {
            let l = b.add_link(PortRef::new(a, pa.0), PortRef::new(bb, pb.0))?;
            // The width and speed the switch ends report: the narrower and slower where both
            // do.
            let width = [d.widths.get(&(*ga, *pa)), d.widths.get(&(*gb, *pb))]
                .into_iter()
                .flatten()
                .min_by_key(|w| w.lanes())
                .copied();
            let speed = [d.speeds.get(&(*ga, *pa)), d.speeds.get(&(*gb, *pb))]
                .into_iter()
                .flatten()
                .min_by_key(|s| s.lane_mbps())
                .copied();
            if width.is_some() || speed.is_some() {
                b.set_link_rate(l, speed, width);
            }
        }
    }
    let mut state = FabricState::new(b.finish());
    for ((g, p), lid) in &view.lids {
        if let Some(&id) = ids.get(g) {
            state.lids.base.entry(id).or_default().insert(*p, *lid);
        }
    }
    let mut index: BTreeMap<WireEnd, u8> = BTreeMap::new();
    for v in shown_vfs {
        let Some(&id) = ids.get(&v.host.0) else {
            continue;
        };
        let k = index.entry(v.host).or_default();
        state.lids.vports.push(VirtualPort {
            host: PortRef::new(id, v.host.1 .0),
            vf: *k,
            guid: v.guid,
            lid: v.lid,
            vm: None,
            pkeys: None,
        });
        *k = k.saturating_add(1);
    }
    for (g, lft) in read_lfts(t, d)? {
        if let Some(&id) = ids.get(&g) {
            state.switches.insert(
                id,
                SwitchState {
                    lft,
                    ..SwitchState::default()
                },
            );
        }
    }
    for (g, read) in read_mfts(t, d)? {
        if let Some(&id) = ids.get(&g) {
            if !read.mft.is_empty() {
                state.multicast.mfts.insert(id, read.mft);
            }
        }
    }
    Ok(state)
}

/// The GUID of port `port` of node `guid` as discovery found it (a port it did not enter:
/// the node GUID plus the port number, as ibsim numbers them).
fn port_guid(d: &Discovery, guid: Guid, port: u8) -> u64 {
    d.port_guid(guid, port)
        .unwrap_or_else(|| guid.0.wrapping_add(u64::from(port)))
}

/// The VFs the fabric shows as adapters behind each vSwitch that folding into `expected`
/// folds: their port GUIDs and LIDs, owned by their hypervisor's port, in port GUID order
/// within it (the wire does not say which VF of its hypervisor an adapter is).
fn shown_vfs(d: &Discovery, expected: &WireView) -> Vec<ShownVf> {
    let folded = d.view.vswitches(expected);
    // Each VF adapter's one linked port.
    let mut linked: BTreeMap<Guid, PortNum> = BTreeMap::new();
    if !folded.is_empty() {
        for &(x, y) in &d.view.links {
            linked.insert(x.0, x.1);
            linked.insert(y.0, y.1);
        }
    }
    let mut out = Vec::new();
    for v in folded {
        let mut here: Vec<ShownVf> = Vec::new();
        for a in &v.vfs {
            let Some(&p) = linked.get(a) else {
                continue;
            };
            here.push(ShownVf {
                host: v.pf.1,
                guid: Guid(port_guid(d, *a, p.0)),
                lid: d.view.lids.get(&(*a, p)).copied(),
            });
        }
        here.sort_unstable();
        out.extend(here);
    }
    out
}

/// The VFs of a fabric that addresses them through their hypervisor's port (the `sim`
/// target: they are not on the wire), added to `st` as the fabric holds them, so a proof on
/// `st` covers their LIDs: VFs 0 to N - 1 of each vSwitch hypervisor port of the plan's wire
/// view (N its VF count; a VF the fabric does not have is skipped), each with the port GUID a
/// `vport` write or a declared partition of the plan names for it, else one of its own (no
/// message names a VF by it).
pub fn vfs_through_hosts(
    t: &mut impl TransportExt,
    d: &Discovery,
    plan: &Plan,
    st: &mut FabricState,
) -> Result<(), SmpError> {
    let Some(wire) = &plan.wire else {
        return Ok(());
    };
    let named: BTreeMap<(Guid, u8, u8), Guid> = plan
        .steps
        .iter()
        .flat_map(|s| &s.writes)
        .filter_map(|w| match w {
            SmpWrite::Vport {
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
                    Member::Vf {
                        host,
                        port,
                        vf,
                        guid,
                        ..
                    } => Some(((*host, *port, *vf), *guid)),
                    Member::Port { .. } => None,
                }),
        )
        .collect();
    let ports = d.vf_ports(wire);
    let mut own = u64::MAX;
    // Shown on the wire: read with the fabric.
    let shown: BTreeSet<PortRef> = st.lids.vports.iter().map(|v| v.host).collect();
    let mut wanted: Vec<(PortRef, VfId)> = Vec::new();
    for (&(host, port), &n) in &wire.vf_hosts {
        let Some(id) = st.fabric.find_guid(host) else {
            continue;
        };
        let at = PortRef::new(id, port.0);
        if shown.contains(&at) {
            continue;
        }
        for vf in (0..n).filter_map(|k| u8::try_from(k).ok()) {
            let guid = named.get(&(host, port.0, vf)).copied().unwrap_or_else(|| {
                own -= 1;
                Guid(own)
            });
            wanted.push((
                at,
                VfId {
                    host,
                    port,
                    vf,
                    guid,
                },
            ));
        }
    }
    let ids: Vec<VfId> = wanted.iter().map(|(_, id)| *id).collect();
    let read = read_vfs(t, d, &ports, &ids, true);
    for ((at, id), r) in wanted.into_iter().zip(read) {
        match r {
            Ok(Ok(v)) => st.lids.vports.push(VirtualPort {
                host: at,
                vf: id.vf,
                guid: id.guid,
                lid: v.lid,
                vm: None,
                pkeys: None,
            }),
            // Not a VF there (or not one that can be read through the port): the proof then
            // finds any write to it unproven.
            Ok(Err(_)) | Err(SmpError::Status { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
