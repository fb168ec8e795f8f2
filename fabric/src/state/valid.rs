//! [`ValidState`]: a [`FabricState`] whose every invariant was checked once, on load.
//!
//! Nothing downstream (the verifier, plans, deploy) has to wonder whether a LID is unique, a
//! port exists or a table fits: a `ValidState` exists only if [`ValidState::new`] found no
//! problem. Every problem found is reported ([`StateErrors`]), each naming the node (name and
//! GUID), port, LID or table entry, with a stable code.
//!
//! The fabric itself is valid by construction ([`FabricBuilder`](crate::FabricBuilder): unique
//! names and GUIDs, real ports, one cable per port); this checks what sits on top of it:
//!
//! * LIDs: LMC ≤ 7 and equal to the fabric's; one entry per switch (port 0) and per end-node
//!   port (1..=port count); no LID 0; every LID of a port's range (2^LMC for end-node ports)
//!   unicast (≤ 0xBFFF); end-node bases aligned to 2^LMC; no two ports sharing a LID; every
//!   live switch and every live end-node port (node up, cable up, far node up) has one.
//! * Switch tables: only on switches; LFT no longer than LinearFDBCap and the unicast range;
//!   SL→VL rows on existing ports, VLs ≤ 15, one row per (input, output) pair.
//! * Port tables: on existing ports (port 0 only on switches); injection SL→VL only on end
//!   nodes, VLs ≤ 15; VLArb tables ≤ 64 entries on data VLs (≤ 14); P_Keys non-zero, distinct.
//! * Path SLs: non-empty sets; ranges inside 1..=0xBFFF, ordered, not overlapping; sources
//!   that exist and own a LID.
//! * Max VLs: 1..=15 when set. SM ports: each an end-node port or a switch's port 0, listed
//!   once.
//! * Multicast: MFTs only on switches, their masks over ports 0..=port count, no MLID past
//!   MulticastFDBCap when the switch's is known; one group per MLID, P_Keys with a partition
//!   number, SLs ≤ 15, members that are end-node ports or a switch's port 0 (MLIDs are in
//!   0xC000..=0xFFFE by construction of [`Mlid`](super::Mlid)).
//!
//! LFT *entries* may hold any port number: a wrong entry is a routing fault that the verifier
//! reports as a violation with a witness, not a malformed state.

use super::{FabricState, LidRange};
use crate::ids::{Lid, NodeId, PortNum, Sl};
use crate::model::{Fabric, PortRef, MAX_UNICAST_LID};
use std::collections::BTreeMap;
use std::ops::Deref;

mod error;
use error::PortName;
pub use error::{StateError, StateErrors};

/// A [`FabricState`] that passed every check of [`ValidState::new`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidState(FabricState);

impl ValidState {
    /// Checks every invariant of `state` (sorting its tables first); every violation is
    /// reported.
    pub fn new(mut state: FabricState) -> Result<ValidState, StateErrors> {
        for s in state.switches.values_mut() {
            s.sort_sl2vl();
        }
        state.path_sl.sort();
        state.partitions.sort_by(|a, b| a.name.cmp(&b.name));
        state.sm.sort();
        state.multicast.normalize();
        let errors = check(&state);
        if errors.is_empty() {
            Ok(ValidState(state))
        } else {
            Err(StateErrors(errors))
        }
    }

    /// The state.
    pub fn state(&self) -> &FabricState {
        &self.0
    }

    /// The state, to change it (it must be validated again to be trusted).
    pub fn into_inner(self) -> FabricState {
        self.0
    }
}

impl Deref for ValidState {
    type Target = FabricState;
    fn deref(&self) -> &FabricState {
        &self.0
    }
}

fn port_name(f: &Fabric, node: NodeId, port: u8) -> PortName {
    match f.nodes().get(node.index()) {
        Some(n) => PortName {
            node: n.name().to_owned(),
            guid: n.guid().to_string(),
            port,
        },
        None => PortName {
            node: format!("#{}", node.0),
            guid: String::new(),
            port,
        },
    }
}

fn check(st: &FabricState) -> Vec<StateError> {
    let mut errors = Vec::new();
    check_lids(st, &mut errors);
    check_switches(st, &mut errors);
    check_ports(st, &mut errors);
    check_path_sl(st, &mut errors);
    check_partitions(st, &mut errors);
    check_vports(st, &mut errors);
    check_sm(st, &mut errors);
    check_multicast(st, &mut errors);
    errors
}

/// MFTs: on switches, masks over ports the switch has (0 to its port count), within its
/// MulticastFDBCap when known. Groups (sorted): one per MLID, a P_Key with a partition
/// number, SL ≤ 15, members that are end-node ports or a switch's port 0.
fn check_multicast(st: &FabricState, errors: &mut Vec<StateError>) {
    let f = &st.fabric;
    for (&n, mft) in &st.multicast.mfts {
        let Some(node) = f.nodes().get(n.index()) else {
            errors.push(StateError::UnknownNode {
                at: "mfts",
                id: n.0,
            });
            continue;
        };
        let bad = |mlid: Option<u16>, what: String| StateError::Mft {
            node: node.name().to_owned(),
            guid: node.guid().to_string(),
            mlid,
            what,
        };
        if !node.is_switch() {
            errors.push(bad(
                None,
                "the node is not a switch but has an MFT".to_owned(),
            ));
            continue;
        }
        let ports = node.spec.port_count;
        if mft.ports_used().highest().is_some_and(|p| p.0 > ports) {
            for (mlid, mask) in mft.entries() {
                let beyond: Vec<String> = mask
                    .iter()
                    .filter(|p| p.0 > ports)
                    .map(|p| p.0.to_string())
                    .collect();
                if !beyond.is_empty() {
                    errors.push(bad(
                        Some(mlid.get()),
                        format!(
                            "forwards to port{} {} but the switch has ports 0..={ports}",
                            if beyond.len() > 1 { "s" } else { "" },
                            beyond.join(", ")
                        ),
                    ));
                }
            }
        }
        if let (Some(cap), Some(top)) = (node.spec.multicast_fdb_cap, mft.top()) {
            if top.index() >= usize::from(cap) {
                errors.push(bad(
                    Some(top.get()),
                    format!(
                        "is past the switch's MulticastFDBCap {cap} (MLIDs 0xc000..={:#06x})",
                        (0xC000 + u32::from(cap)).saturating_sub(1)
                    ),
                ));
            }
        }
    }
    let mut last: Option<super::Mlid> = None;
    for g in &st.multicast.groups {
        let bad = |what: String| StateError::McGroup {
            mlid: g.mlid.get(),
            what,
        };
        if last == Some(g.mlid) {
            errors.push(bad("is declared twice (one group per MLID)".to_owned()));
        }
        last = Some(g.mlid);
        if g.pkey & 0x7fff == 0 {
            errors.push(bad(format!(
                "P_Key {:#06x} has no partition number",
                g.pkey
            )));
        }
        if g.sl.0 > 15 {
            errors.push(bad(format!("SL {} is out of range (0..=15)", g.sl.0)));
        }
        for &r in g.members.keys() {
            if end_port_or_port_0(f, r, "multicast members", errors) == Some(false) {
                errors.push(bad(format!(
                    "member {} is not an end-node port or a switch's port 0",
                    port_name(f, r.node, r.port.0)
                )));
            }
        }
    }
}

/// Whether `r` is an end-node port or a switch's port 0 (where an SM runs, what joins a
/// multicast group); `None`, with the error pushed, when its node does not exist.
fn end_port_or_port_0(
    f: &Fabric,
    r: PortRef,
    at: &'static str,
    errors: &mut Vec<StateError>,
) -> Option<bool> {
    let Some(node) = f.nodes().get(r.node.index()) else {
        errors.push(StateError::UnknownNode { at, id: r.node.0 });
        return None;
    };
    Some(if node.is_switch() {
        r.port.0 == 0
    } else {
        (1..=node.spec.port_count).contains(&r.port.0)
    })
}

/// The VL budget and where the SM runs.
fn check_sm(st: &FabricState, errors: &mut Vec<StateError>) {
    let f = &st.fabric;
    if let Some(n) = st.max_vls {
        if !(1..=15).contains(&n) {
            errors.push(StateError::MaxVls { max_vls: n });
        }
    }
    let mut last: Option<(Sl, Sl)> = None;
    for &(fast, slow) in &st.dftree_lanes {
        let what = if fast.0 > 15 || slow.0 > 15 {
            Some("names an SL above 15")
        } else if fast == slow {
            Some("uses one SL twice")
        } else if last.is_some_and(|l| l >= (fast, slow)) {
            Some("is out of order or repeated (pairs are sorted)")
        } else {
            None
        };
        if let Some(what) = what {
            errors.push(StateError::DftreeLanes {
                fast: fast.0,
                slow: slow.0,
                what,
            });
        }
        last = Some((fast, slow));
    }
    let mut last: Option<PortRef> = None;
    for &r in &st.sm {
        let Some(ok) = end_port_or_port_0(f, r, "sm", errors) else {
            continue;
        };
        if !ok {
            errors.push(StateError::SmPort {
                port: port_name(f, r.node, r.port.0),
                what: "is not an end-node port or a switch's port 0",
            });
        } else if last == Some(r) {
            errors.push(StateError::SmPort {
                port: port_name(f, r.node, r.port.0),
                what: "is listed twice",
            });
        }
        last = Some(r);
    }
}

/// The name of a VF in messages: its hypervisor port's, the node shown as `cn140 vf2` and the
/// GUID the VF's own.
fn vport_name(f: &Fabric, v: &super::VirtualPort) -> PortName {
    let host = port_name(f, v.host.node, v.host.port.0);
    PortName {
        node: format!("{} vf{}", host.node, v.vf),
        guid: v.guid.to_string(),
        port: v.host.port.0,
    }
}

/// VFs: on live-able end-node ports that have a LID, one per (port, index), GUIDs unique
/// (among VFs, nodes and ports), LIDs unicast and owned once (clashes with physical LIDs are found
/// in [`check_lids`]), VM names unique and only with LMC 0.
fn check_vports(st: &FabricState, errors: &mut Vec<StateError>) {
    let f = &st.fabric;
    let mut keys = std::collections::BTreeSet::new();
    let mut guids = std::collections::BTreeSet::new();
    let mut vms: BTreeMap<&str, PortName> = BTreeMap::new();
    // Node and port GUIDs: a VF the fabric shows as a node of its own is found by its port
    // GUID, which no physical port may hold.
    let node_guids: std::collections::BTreeSet<u64> = f
        .nodes()
        .iter()
        .flat_map(|n| std::iter::once(n.guid().0).chain(n.ports.iter().map(|p| p.guid.0)))
        .collect();
    for v in &st.lids.vports {
        let bad = |what: String| StateError::PortTable {
            port: vport_name(f, v),
            what,
        };
        let Some(node) = f.nodes().get(v.host.node.index()) else {
            errors.push(StateError::UnknownNode {
                at: "vports",
                id: v.host.node.0,
            });
            continue;
        };
        if node.is_switch() || v.host.port.0 == 0 || v.host.port.0 > node.spec.port_count {
            errors.push(bad(
                "a VF sits behind an end-node port; this is not one".to_owned()
            ));
            continue;
        }
        if st.lids.get(v.host.node, v.host.port).is_none() {
            errors.push(bad("its hypervisor port has no LID".to_owned()));
        }
        if st.lids.lmc != 0 && v.lid.is_some() {
            errors.push(bad(format!(
                "VF LIDs with LMC {} are not supported (a VF owns one LID)",
                st.lids.lmc
            )));
        }
        if !keys.insert(v.key()) {
            errors.push(bad("the VF is listed twice".to_owned()));
        }
        if v.guid.0 == 0 || node_guids.contains(&v.guid.0) || !guids.insert(v.guid) {
            errors.push(bad(format!(
                "GUID {} is zero or another VF's, node's or port's",
                v.guid
            )));
        }
        if let Some(vm) = &v.vm {
            if vm.is_empty() {
                errors.push(bad("the VM's name is empty".to_owned()));
            } else if let Some(first) = vms.insert(vm, vport_name(f, v)) {
                errors.push(bad(format!("VM `{vm}` also runs on {first}")));
            }
        }
        if let Some(keys) = &v.pkeys {
            pkey_table(keys, node.spec.partition_cap, &mut |what| {
                errors.push(bad(what))
            });
        }
    }
}

fn check_partitions(st: &FabricState, errors: &mut Vec<StateError>) {
    let f = &st.fabric;
    let mut names: BTreeMap<&str, ()> = BTreeMap::new();
    let mut keys: BTreeMap<u16, &str> = BTreeMap::new();
    for p in &st.partitions {
        let bad = |what: String| StateError::Partition {
            name: p.name.clone(),
            what,
        };
        if p.name.is_empty() {
            errors.push(bad("the name is empty".to_owned()));
        }
        if names.insert(&p.name, ()).is_some() {
            errors.push(bad("declared twice".to_owned()));
        }
        if !(1..=0x7ffe).contains(&p.pkey) {
            errors.push(bad(format!(
                "partition number {:#06x} is not in 0x0001..=0x7ffe (0x7fff is the default partition; bit 15 is membership, not part of the number)",
                p.pkey
            )));
        } else if let Some(other) = keys.insert(p.pkey, &p.name) {
            errors.push(bad(format!(
                "partition number {:#06x} is also partition `{other}`'s",
                p.pkey
            )));
        }
        if p.class.is_some() && !p.vms.is_empty() {
            errors.push(bad(
                "has a class and VM members; a class for VM traffic is not supported".to_owned(),
            ));
        }
        for vm in p.vms.keys() {
            if !st.lids.vports.iter().any(|v| v.vm.as_ref() == Some(vm)) {
                errors.push(bad(format!("member VM `{vm}` runs on no VF")));
            }
        }
        for r in p.members.keys() {
            let Some(node) = f.nodes().get(r.node.index()) else {
                errors.push(StateError::UnknownNode {
                    at: "partition members",
                    id: r.node.0,
                });
                continue;
            };
            if node.is_switch() || r.port.0 == 0 || r.port.0 > node.spec.port_count {
                errors.push(bad(format!(
                    "member {} is not an end-node port",
                    port_name(f, r.node, r.port.0)
                )));
            }
        }
    }
}

fn check_lids(st: &FabricState, errors: &mut Vec<StateError>) {
    let f = &st.fabric;
    let lmc = st.lids.lmc;
    if lmc > 7 {
        errors.push(StateError::Lmc { lmc });
        // Every range would be wrong: one root error, not a cascade.
        return;
    }
    if f.lmc > 7 && f.lmc != lmc {
        errors.push(StateError::Lmc { lmc: f.lmc });
    }
    if f.lmc != lmc {
        errors.push(StateError::LmcMismatch {
            fabric: f.lmc,
            lids: lmc,
        });
    }
    let span_end = 1u32 << lmc.min(7);
    // (first LID, last LID, owner's name) of every range, for the clash check.
    let mut ranges: Vec<(u32, u32, PortName)> = Vec::new();
    for (&n, ports) in &st.lids.base {
        let Some(node) = f.nodes().get(n.index()) else {
            errors.push(StateError::UnknownNode {
                at: "lids",
                id: n.0,
            });
            continue;
        };
        for (&PortNum(p), &Lid(lid)) in ports {
            let name = || port_name(f, n, p);
            if node.is_switch() && p != 0 {
                errors.push(StateError::LidPort {
                    port: name(),
                    why: "a switch's LID is on port 0",
                });
                continue;
            }
            if !node.is_switch() && (p == 0 || p > node.spec.port_count) {
                errors.push(StateError::LidPort {
                    port: name(),
                    why: if p == 0 {
                        "an end node has no port 0"
                    } else {
                        "the node has no such port"
                    },
                });
                continue;
            }
            if lid == 0 {
                errors.push(StateError::LidZero { port: name() });
                continue;
            }
            let span = if node.is_switch() { 1 } else { span_end };
            let hi = u32::from(lid) + span - 1;
            if hi > u32::from(MAX_UNICAST_LID) {
                errors.push(StateError::LidRange {
                    port: name(),
                    lo: u32::from(lid),
                    hi,
                });
                continue;
            }
            if u32::from(lid) % span != 0 {
                errors.push(StateError::LidUnaligned {
                    port: name(),
                    lid,
                    span: span as u16,
                    lmc,
                });
            }
            ranges.push((u32::from(lid), hi, name()));
        }
    }
    // VF LIDs: one each; clashes are named by the hypervisor port (`first`/`second`).
    for v in &st.lids.vports {
        let Some(Lid(lid)) = v.lid else { continue };
        if lid == 0 || lid > MAX_UNICAST_LID {
            errors.push(StateError::LidRange {
                port: vport_name(f, v),
                lo: u32::from(lid),
                hi: u32::from(lid),
            });
            continue;
        }
        ranges.push((u32::from(lid), u32::from(lid), vport_name(f, v)));
    }
    ranges.sort_by_key(|r| (r.0, r.1));
    let mut reach: Option<(u32, &PortName)> = None;
    for (lo, hi, name) in &ranges {
        if let Some((end, first)) = reach {
            if *lo <= end {
                errors.push(StateError::LidClash {
                    lid: *lo as u16,
                    first: first.clone(),
                    second: name.clone(),
                });
            }
        }
        if reach.is_none_or(|(end, _)| *hi > end) {
            reach = Some((*hi, name));
        }
    }
    // Every live switch and live end-node port has a LID.
    for (id, node) in f.node_ids().zip(f.nodes()) {
        if node.down {
            continue;
        }
        if node.is_switch() {
            if st.lids.get(id, PortNum(0)).is_none() {
                errors.push(StateError::LidMissing {
                    port: port_name(f, id, 0),
                });
            }
            continue;
        }
        for port in &node.ports {
            if f.live_peer(PortRef {
                node: id,
                port: port.num,
            })
            .is_some()
                && st.lids.get(id, port.num).is_none()
            {
                errors.push(StateError::LidMissing {
                    port: port_name(f, id, port.num.0),
                });
            }
        }
    }
}

fn check_switches(st: &FabricState, errors: &mut Vec<StateError>) {
    let f = &st.fabric;
    for (&n, s) in &st.switches {
        let Some(node) = f.nodes().get(n.index()) else {
            errors.push(StateError::UnknownNode {
                at: "switches",
                id: n.0,
            });
            continue;
        };
        let (name, guid) = (node.name().to_owned(), node.guid().to_string());
        if !node.is_switch() {
            errors.push(StateError::NotASwitch { node: name, guid });
            continue;
        }
        let cap = node.spec.linear_fdb_cap.min(u32::from(MAX_UNICAST_LID) + 1);
        if s.lft.ports.len() > cap as usize {
            errors.push(StateError::LftTooLong {
                node: name.clone(),
                guid: guid.clone(),
                len: s.lft.ports.len(),
                cap,
            });
        }
        let ports = node.spec.port_count;
        if let Some((sl, vl)) = s
            .sl2vl_all
            .iter()
            .flat_map(|t| t.iter().enumerate())
            .find(|(_, &v)| v > 15)
        {
            errors.push(StateError::Sl2Vl {
                node: name.clone(),
                guid: guid.clone(),
                what: format!(
                    "the map for all port pairs sends SL {sl} to VL {vl} (VLs are 0..=15)"
                ),
            });
        }
        let mut last: Option<(u8, u8)> = None;
        for r in &s.sl2vl {
            let sl2vl = |what: String| StateError::Sl2Vl {
                node: name.clone(),
                guid: guid.clone(),
                what,
            };
            if r.in_port > ports || r.out_port > ports {
                errors.push(sl2vl(format!(
                    "row {} → {} names a port the switch does not have (ports 0..={ports})",
                    r.in_port, r.out_port
                )));
            }
            if last == Some((r.in_port, r.out_port)) {
                errors.push(sl2vl(format!(
                    "has two rows for {} → {}",
                    r.in_port, r.out_port
                )));
            }
            last = Some((r.in_port, r.out_port));
            if let Some((sl, vl)) = r.vl.iter().enumerate().find(|(_, &v)| v > 15) {
                errors.push(sl2vl(format!(
                    "row {} → {} maps SL {sl} to VL {vl} (VLs are 0..=15)",
                    r.in_port, r.out_port
                )));
            }
        }
    }
}

fn check_ports(st: &FabricState, errors: &mut Vec<StateError>) {
    let f = &st.fabric;
    for (
        &PortRef {
            node: n,
            port: PortNum(p),
        },
        ps,
    ) in &st.ports
    {
        let Some(node) = f.nodes().get(n.index()) else {
            errors.push(StateError::UnknownNode {
                at: "ports",
                id: n.0,
            });
            continue;
        };
        let table = |what: String| StateError::PortTable {
            port: port_name(f, n, p),
            what,
        };
        if p > node.spec.port_count || (p == 0 && !node.is_switch()) {
            errors.push(table("the node has no such port".to_owned()));
            continue;
        }
        if let Some(t) = &ps.sl2vl {
            if node.is_switch() {
                errors.push(table(
                    "a switch port has no injection SL→VL table (switch SL→VL is per input and output port)"
                        .to_owned(),
                ));
            } else if let Some((sl, vl)) = t.iter().enumerate().find(|(_, &v)| v > 15) {
                errors.push(table(format!(
                    "injection SL→VL maps SL {sl} to VL {vl} (VLs are 0..=15)"
                )));
            }
        }
        if let Some(a) = &ps.vlarb {
            for (which, t) in [("high", &a.high), ("low", &a.low)] {
                if t.len() > super::ports::VLARB_MAX_ENTRIES {
                    errors.push(table(format!(
                        "the {which}-priority VL arbitration table has {} entries (at most {})",
                        t.len(),
                        super::ports::VLARB_MAX_ENTRIES
                    )));
                }
                if let Some(e) = t.iter().find(|e| e.vl > 14) {
                    errors.push(table(format!(
                        "the {which}-priority VL arbitration table names VL {} (data VLs are 0..=14)",
                        e.vl
                    )));
                }
            }
        }
        if let Some(keys) = &ps.pkeys {
            pkey_table(keys, node.spec.partition_cap, &mut |what| {
                errors.push(table(what))
            });
        }
    }
}

/// A P_Key table's problems: longer than the port's PartitionCap, partition 0, a partition
/// twice.
fn pkey_table(keys: &[super::PKey], cap: Option<u16>, report: &mut dyn FnMut(String)) {
    if let Some(cap) = cap {
        if keys.len() > usize::from(cap) {
            report(format!(
                "the P_Key table has {} entries but the port holds {cap} (PartitionCap)",
                keys.len()
            ));
        }
    }
    let mut seen: Vec<u16> = Vec::with_capacity(keys.len());
    for k in keys {
        if k.base() == 0 {
            report(format!("P_Key {k} is invalid (partition 0 does not exist)"));
        } else if seen.contains(&k.base()) {
            report(format!(
                "partition {:#06x} is in the P_Key table twice",
                k.base()
            ));
        } else {
            seen.push(k.base());
        }
    }
}

fn check_range(r: LidRange, what: &dyn Fn() -> String, errors: &mut Vec<StateError>) -> bool {
    if r.lo.0 == 0 || r.hi.0 > MAX_UNICAST_LID || r.lo > r.hi {
        errors.push(StateError::PathSl {
            what: format!(
                "{}: LIDs {:#06x}..={:#06x} are not an ordered range of unicast LIDs",
                what(),
                r.lo.0,
                r.hi.0
            ),
        });
        return false;
    }
    true
}

fn check_path_sl(st: &FabricState, errors: &mut Vec<StateError>) {
    let f = &st.fabric;
    let p = &st.path_sl;
    if p.default.is_empty() {
        errors.push(StateError::PathSl {
            what: "the default SL set is empty".to_owned(),
        });
    }
    let mut prev: Option<LidRange> = None;
    for e in &p.by_dlid {
        let what = || format!("toward LIDs {:#06x}..={:#06x}", e.lids.lo.0, e.lids.hi.0);
        if !check_range(e.lids, &what, errors) {
            continue;
        }
        if e.sls.is_empty() {
            errors.push(StateError::PathSl {
                what: format!("{}: the SL set is empty", what()),
            });
        }
        if prev.is_some_and(|q| q.hi >= e.lids.lo) {
            errors.push(StateError::PathSl {
                what: format!("{}: the range overlaps the one before it", what()),
            });
        }
        prev = Some(e.lids);
    }
    let mut prev: Option<(NodeId, LidRange)> = None;
    for e in &p.by_switch {
        let what = || {
            let at = port_name(f, e.switch, 0);
            format!(
                "from the sources at `{}` ({}) toward LIDs {:#06x}..={:#06x}",
                at.node, at.guid, e.lids.lo.0, e.lids.hi.0
            )
        };
        match f.nodes().get(e.switch.index()) {
            None => {
                errors.push(StateError::UnknownNode {
                    at: "path SLs",
                    id: e.switch.0,
                });
                continue;
            }
            Some(n) if !n.is_switch() => {
                errors.push(StateError::PathSl {
                    what: format!("{}: not a switch", what()),
                });
                continue;
            }
            Some(_) => {}
        }
        if !check_range(e.lids, &what, errors) {
            continue;
        }
        if e.sls.is_empty() {
            errors.push(StateError::PathSl {
                what: format!("{}: the SL set is empty", what()),
            });
        }
        if prev.is_some_and(|(s, q)| s == e.switch && q.hi >= e.lids.lo) {
            errors.push(StateError::PathSl {
                what: format!("{}: the range overlaps the one before it", what()),
            });
        }
        prev = Some((e.switch, e.lids));
    }
    let mut prev: Option<(PortRef, LidRange)> = None;
    for e in &p.by_source {
        let what = || {
            let src = port_name(f, e.src.node, e.src.port.0);
            format!(
                "from {src} toward LIDs {:#06x}..={:#06x}",
                e.lids.lo.0, e.lids.hi.0
            )
        };
        let Some(node) = f.nodes().get(e.src.node.index()) else {
            errors.push(StateError::UnknownNode {
                at: "path SLs",
                id: e.src.node.0,
            });
            continue;
        };
        let port_ok = if node.is_switch() {
            e.src.port.0 == 0
        } else {
            (1..=node.spec.port_count).contains(&e.src.port.0)
        };
        if !port_ok || st.lids.get(e.src.node, e.src.port).is_none() {
            errors.push(StateError::PathSl {
                what: format!("{}: the source is not a port with a LID", what()),
            });
            continue;
        }
        if !check_range(e.lids, &what, errors) {
            continue;
        }
        if e.sls.is_empty() {
            errors.push(StateError::PathSl {
                what: format!("{}: the SL set is empty", what()),
            });
        }
        if prev.is_some_and(|(s, q)| s == e.src && q.hi >= e.lids.lo) {
            errors.push(StateError::PathSl {
                what: format!("{}: the range overlaps the one before it", what()),
            });
        }
        prev = Some((e.src, e.lids));
    }
}
