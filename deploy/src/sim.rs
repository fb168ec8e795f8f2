//! `sim`: an in-process fabric that answers SMPs from a [`FabricState`] — the default target of
//! `weft apply`, and the place to inject faults.
//!
//! It keeps, per node, what a real device keeps: NodeInfo, NodeDescription, PortInfo per port,
//! and on switches SwitchInfo, the LFT (0xff where nothing was written) and the MFT (a
//! switch that supports MulticastFDBTop, as its port 0's CapabilityMask says); P_Key tables,
//! SL→VL and VL arbitration tables per port. Directed routes are walked over the live links
//! of the fabric from the SM's port; a route through a port with no live link, or forwarded
//! by a node that is not a switch, leads nowhere.
//!
//! VFs of vSwitch hypervisors (which a real HCA addresses in its own way) are addressed here
//! through the hypervisor port with [`vf_modifier`]: PortInfo for the VF's LID, P_KeyTable
//! for its P_Keys.
//!
//! Faults ([`Fault`]) trigger on the n-th Set the fabric receives: a Set lost (the write does
//! not land, no response), delayed past the timeout (it lands, no response), rejected with a
//! MAD status, a read-back corrupted, or the writer crashing (every SMP from then on fails,
//! as if the process had died, until [`SimFabric::restart`]).

use crate::observe::{self, PkeyTable};
use crate::smp::{
    self, Attr, NodeInfo, NodeType, Payload, PortInfo, SwitchInfo, MCAST_TOP_NONE, PAYLOAD,
};
use crate::transport::{SmpError, Target, Transport};
use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::{Fabric, FabricState, LinkState, Mft, Mlid, NodeId, NodeKind, PKey, PortRef};

/// MAD status: invalid attribute or attribute modifier.
pub const STATUS_INVALID: u16 = 0x001c;
/// MAD status: method/attribute combination not supported (a Set of a read-only attribute).
pub const STATUS_UNSUPPORTED: u16 = 0x000c;

/// Entries an LFT holds in the simulator when the model gives no LinearFDBCap.
const DEFAULT_FDB_CAP: u16 = 0xc000;
/// MFT entries (MLIDs from 0xC000) a switch holds in the simulator when the model gives no
/// MulticastFDBCap: ibsim's (`MAXMCASTCAP`).
const DEFAULT_MCAST_CAP: u16 = 1024;
/// P_Key entries per port when the model gives no PartitionCap.
const DEFAULT_PARTITION_CAP: u16 = 64;
/// PortPhysicalState 2: Polling (no live link).
const PHYS_POLLING: u8 = 2;
/// PortPhysicalState 5: LinkUp.
const PHYS_LINK_UP: u8 = 5;

pub use crate::smp::vf_modifier;

mod faults;
mod live;
mod pma;
pub use faults::{Fault, FaultKind, FaultSyntax, Injected};
pub use pma::SimPma;

/// A P_Key table's slots as read back ([`PkeyTable`]: trailing empty slots dropped).
fn slots(keys: &[u16]) -> Vec<u16> {
    PkeyTable::from_slots(keys.iter().copied()).slots().to_vec()
}

#[derive(Clone, Debug)]
struct SimNode {
    info: NodeInfo,
    description: String,
    /// The live peer of each port (index = port, 0 unused).
    peers: Vec<Option<(usize, u8)>>,
    /// The GUID of each port (index = port; a switch: all the node GUID).
    port_guids: Vec<u64>,
    /// PortInfo per port (index = port; port 0 on switches).
    port_info: Vec<Payload>,
    switch_info: Payload,
    lft: Vec<u8>,
    fdb_cap: u16,
    /// The MFT, every entry the switch holds (those above MulticastFDBTop too).
    mft: Mft,
    mcast_cap: u16,
    partition_cap: u16,
    /// P_Key table per port (index = port; a CA's port 0 unused).
    pkeys: Vec<Vec<u16>>,
    /// SL→VL tables by modifier.
    sl2vl: BTreeMap<u32, [u8; 16]>,
    /// VL arbitration blocks by modifier.
    vlarb: BTreeMap<u32, Payload>,
    /// VFs by (port, VF): LID and P_Keys.
    vfs: VfTables,
}

/// Everything a simulated fabric holds that a deployment may change, by node GUID: what
/// [`SimFabric::tables`] returns, to compare two fabrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tables {
    /// Per node GUID: base LID and LMC per port.
    pub lids: BTreeMap<u64, Vec<(u16, u8)>>,
    /// Per switch GUID: the LFT as the switch forwards by it ([`observe::lft`]: up to
    /// LinearFDBTop, trailing unset entries dropped).
    pub lfts: BTreeMap<u64, Vec<u8>>,
    /// Per switch GUID: the MFT as the switch forwards by it (up to MulticastFDBTop); a
    /// switch with an empty one is not listed.
    pub mfts: BTreeMap<u64, Mft>,
    /// Per node GUID: the P_Key tables of its ports ([`PkeyTable`]'s slots: empty slots
    /// dropped from the end).
    pub pkeys: BTreeMap<u64, Vec<Vec<u16>>>,
    /// Per node GUID: SL→VL tables by modifier (an end node's: by port), those of every SL
    /// on VL 0 left out.
    pub sl2vl: BTreeMap<u64, BTreeMap<u32, [u8; 16]>>,
    /// Per node GUID: VL arbitration blocks by modifier (an end node's: block and port), those
    /// of nothing but (VL 0, weight 0) left out.
    pub vlarb: BTreeMap<u64, BTreeMap<u32, Vec<u8>>>,
    /// Per node GUID: VFs by (port, VF): LID and P_Keys.
    pub vfs: BTreeMap<u64, VfTables>,
}

/// A hypervisor's VFs by (port, VF): LID and P_Keys.
pub type VfTables = BTreeMap<(u8, u8), (u16, Vec<u16>)>;

/// SMPs the simulated fabric has answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Gets received.
    pub gets: usize,
    /// Sets received (lost ones included).
    pub sets: usize,
    /// Sets that changed what a node holds.
    pub changes: usize,
}

/// An in-process fabric answering SMPs.
#[derive(Clone, Debug)]
pub struct SimFabric {
    nodes: Vec<SimNode>,
    /// The SM's node and port.
    sm: (usize, u8),
    faults: Vec<Fault>,
    /// Lost sends still to come, by SMP: (sends left, whether the Set lands).
    pending: BTreeMap<Target, (u32, bool)>,
    /// Reads still to corrupt.
    corrupt: BTreeSet<Target>,
    crashed: bool,
    counts: Counts,
    /// Every port's PMA ([`SimPma`]): the counters a test sets.
    pub pma: SimPma,
}

/// Why a simulated fabric cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// The SM's port is not an end port on a live link.
    #[error("the SM port {0} is not a live port of the fabric")]
    SmPort(String),
}

impl weft_fabric::code::Coded for SimError {
    /// The error's registered code ([`crate::CODES`]).
    fn code(&self) -> &'static str {
        match self {
            SimError::SmPort(_) => "weft::deploy::sim_sm_port",
        }
    }
}

/// Why `NODE/PORT` names no SM port.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SmPortError {
    /// Not `NODE/PORT`.
    #[error("write NODE/PORT")]
    Syntax,
    /// No node of that name.
    #[error("no node `{0}` in the fabric")]
    NoNode(String),
}

impl weft_fabric::code::Coded for SmPortError {
    /// The error's registered code ([`crate::CODES`]).
    fn code(&self) -> &'static str {
        match self {
            SmPortError::Syntax => "weft::deploy::sm_port_syntax",
            SmPortError::NoNode(_) => "weft::deploy::sm_port_unknown_node",
        }
    }
}

/// The SM's port `text` names, `NODE/PORT` (the node by name). Whether it is a live end port
/// is [`SimFabric::new`]'s to check.
pub fn named_sm_port(f: &Fabric, text: &str) -> Result<PortRef, SmPortError> {
    let (name, port) = text
        .split_once('/')
        .and_then(|(n, p)| Some((n, p.parse::<u8>().ok()?)))
        .ok_or(SmPortError::Syntax)?;
    let node = f
        .find(name)
        .ok_or_else(|| SmPortError::NoNode(name.to_owned()))?;
    Ok(PortRef::new(node, port))
}

/// Where the SM sits when no port is named: the first port (in node, then port order) of a
/// channel adapter that is up, on a link that is up; none when the fabric has no such port.
pub fn default_sm_port(f: &Fabric) -> Option<PortRef> {
    f.nodes()
        .iter()
        .zip(0u32..)
        .filter(|(n, _)| n.kind() == NodeKind::Hca && !n.down)
        .flat_map(|(n, i)| (1..=n.spec.port_count).map(move |p| PortRef::new(NodeId(i), p)))
        .find(|&p| {
            f.peer(p)
                .is_some_and(|(_, l)| f.link(l).state == LinkState::Up)
        })
}

impl SimNode {
    /// Node `n` as it powers up: its ports down (a switch's port 0 up), its caps from the
    /// model, empty tables but the default P_Key on end ports.
    fn fresh(n: &weft_fabric::Node) -> SimNode {
        let ports = n.spec.port_count;
        let switch = n.is_switch();
        let port_info = (0..=ports)
            .map(|p| {
                // Down, physical state Polling until a live link says otherwise; a
                // switch's own port 0 Active, LinkUp.
                let up = switch && p == 0;
                let mut pi = [0u8; PAYLOAD];
                PortInfo {
                    local_port: p,
                    link_state: if up {
                        smp::LinkState::Active
                    } else {
                        smp::LinkState::Down
                    },
                    phys_state: if up { PHYS_LINK_UP } else { PHYS_POLLING },
                    // A switch bounds its MFT by MulticastFDBTop.
                    capability_mask: if up { smp::CAP_MCAST_FDB_TOP } else { 0 },
                    // VLCap VL0–7, high and low arbitration caps 8 and 8.
                    vl_cap: 4,
                    vlarb_high_cap: 8,
                    vlarb_low_cap: 8,
                    ..PortInfo::decode(&pi)
                }
                .encode_held_into(&mut pi);
                pi
            })
            .collect();
        let partition_cap = n.spec.partition_cap.unwrap_or(DEFAULT_PARTITION_CAP);
        let fdb_cap = u16::try_from(n.spec.linear_fdb_cap)
            .ok()
            .filter(|&c| c > 0)
            .unwrap_or(DEFAULT_FDB_CAP);
        let mcast_cap = n.spec.multicast_fdb_cap.unwrap_or(DEFAULT_MCAST_CAP);
        let mut switch_info = [0u8; PAYLOAD];
        if switch {
            SwitchInfo {
                linear_fdb_cap: fdb_cap,
                linear_fdb_top: 0,
                partition_enforcement_cap: partition_cap,
                multicast_fdb_cap: mcast_cap,
                multicast_fdb_top: MCAST_TOP_NONE,
            }
            .encode_held_into(&mut switch_info);
        }
        SimNode {
            info: NodeInfo {
                node_type: match n.kind() {
                    NodeKind::Switch => NodeType::Switch,
                    NodeKind::Hca => NodeType::Ca,
                    NodeKind::Router => NodeType::Router,
                },
                num_ports: ports,
                system_guid: n.spec.system_guid.unwrap_or(n.guid()).0,
                node_guid: n.guid().0,
                port_guid: n.guid().0,
                partition_cap,
                local_port: 0,
            },
            description: n.name().to_owned(),
            peers: vec![None; usize::from(ports) + 1],
            port_guids: std::iter::once(n.guid().0)
                .chain(
                    n.ports
                        .iter()
                        .map(|p| if switch { n.guid().0 } else { p.guid.0 }),
                )
                .collect(),
            port_info,
            switch_info,
            lft: Vec::new(),
            fdb_cap,
            mft: Mft::default(),
            mcast_cap,
            partition_cap,
            // A port the state gives no table holds the default key (a switch's
            // ports enforce nothing here).
            pkeys: (0..=ports)
                .map(|p| {
                    if switch || p == 0 {
                        Vec::new()
                    } else {
                        vec![PKey::DEFAULT.0]
                    }
                })
                .collect(),
            sl2vl: BTreeMap::new(),
            vlarb: BTreeMap::new(),
            vfs: BTreeMap::new(),
        }
    }
}

/// Cables the live links: peers, and their ports Active, LinkUp.
fn cable(nodes: &mut [SimNode], f: &Fabric) {
    for l in f.links() {
        let up = l.state == LinkState::Up
            && [l.a, l.b]
                .iter()
                .all(|e| f.nodes().get(e.node.index()).is_some_and(|n| !n.down));
        if !up {
            continue;
        }
        for (x, y) in [(l.a, l.b), (l.b, l.a)] {
            if let Some(n) = nodes.get_mut(x.node.index()) {
                if let Some(slot) = n.peers.get_mut(usize::from(x.port.0)) {
                    *slot = Some((y.node.index(), y.port.0));
                }
                if let Some(pi) = n.port_info.get_mut(usize::from(x.port.0)) {
                    PortInfo {
                        link_state: smp::LinkState::Active,
                        phys_state: PHYS_LINK_UP,
                        ..PortInfo::decode(pi)
                    }
                    .encode_held_into(pi);
                }
            }
        }
    }
}

/// The state's LIDs (and LMC) into the ports' PortInfo.
fn load_lids(nodes: &mut [SimNode], state: &FabricState) {
    let lmc = state.lids.lmc;
    for (&id, ports) in &state.lids.base {
        let Some(n) = nodes.get_mut(id.index()) else {
            continue;
        };
        for (&p, &lid) in ports {
            if let Some(pi) = n.port_info.get_mut(usize::from(p.0)) {
                let mut i = PortInfo::decode(pi);
                i.lid = lid.0;
                // A switch's port 0 has no LMC of its own.
                if n.info.node_type != NodeType::Switch {
                    i.lmc = lmc;
                }
                i.encode_held_into(pi);
            }
        }
    }
}

/// The state's switch tables: LFTs, SL→VL rows, MFTs.
fn load_switches(nodes: &mut [SimNode], state: &FabricState) {
    for (&id, sw) in &state.switches {
        let Some(n) = nodes.get_mut(id.index()) else {
            continue;
        };
        n.lft = sw.lft.ports.clone();
        SwitchInfo {
            linear_fdb_top: u16::try_from(n.lft.len().saturating_sub(1)).unwrap_or(u16::MAX),
            ..SwitchInfo::decode(&n.switch_info)
        }
        .encode_into(&mut n.switch_info);
        for r in &sw.sl2vl {
            n.sl2vl
                .insert(smp::sl2vl_modifier(r.in_port, r.out_port), r.vl);
        }
        if let Some(all) = sw.sl2vl_all {
            for i in 0..=n.info.num_ports {
                for o in 1..=n.info.num_ports {
                    n.sl2vl.entry(smp::sl2vl_modifier(i, o)).or_insert(all);
                }
            }
        }
    }
    for (&id, mft) in &state.multicast.mfts {
        let Some(n) = nodes.get_mut(id.index()) else {
            continue;
        };
        if n.info.node_type != NodeType::Switch {
            continue;
        }
        n.mft = mft.clone();
        SwitchInfo {
            multicast_fdb_top: mft.top().map_or(MCAST_TOP_NONE, Mlid::get),
            ..SwitchInfo::decode(&n.switch_info)
        }
        .encode_into(&mut n.switch_info);
    }
}

/// The state's port tables (P_Keys, SL→VL, VLArb) and VFs.
fn load_ports(nodes: &mut [SimNode], state: &FabricState) {
    for (pr, ps) in &state.ports {
        let Some(n) = nodes.get_mut(pr.node.index()) else {
            continue;
        };
        let p = pr.port.0;
        if let Some(keys) = &ps.pkeys {
            if let Some(t) = n.pkeys.get_mut(usize::from(p)) {
                *t = keys.iter().map(|k| k.0).collect();
            }
        }
        if let Some(vl) = ps.sl2vl {
            n.sl2vl.insert(u32::from(p), vl);
        }
        if let Some(arb) = &ps.vlarb {
            for (block, entries) in [(1u8, &arb.low), (3, &arb.high)] {
                for (k, chunk) in entries.chunks(smp::VLARB_BLOCK).enumerate() {
                    let mut e = [(0u8, 0u8); smp::VLARB_BLOCK];
                    for (slot, w) in e.iter_mut().zip(chunk) {
                        *slot = (w.vl, w.weight);
                    }
                    n.vlarb.insert(
                        smp::vlarb_modifier(block + k as u8, p),
                        smp::encode_vlarb(&e),
                    );
                }
            }
            if let Some(pi) = n.port_info.get_mut(usize::from(p)) {
                PortInfo {
                    vl_high_limit: arb.high_limit,
                    ..PortInfo::decode(pi)
                }
                .encode_held_into(pi);
            }
        }
    }
    for v in &state.lids.vports {
        if let Some(n) = nodes.get_mut(v.host.node.index()) {
            n.vfs.insert(
                (v.host.port.0, v.vf),
                (
                    v.lid.map_or(0, |l| l.0),
                    v.pkeys.as_ref().map_or_else(
                        || vec![PKey::DEFAULT.0],
                        |t| t.iter().map(|k| k.0).collect(),
                    ),
                ),
            );
        }
    }
}

impl SimFabric {
    /// A fabric holding what `state` says (LIDs, LFTs, P_Keys, SL→VL and VLArb tables, VFs),
    /// with the SM on `sm` (its node and port).
    pub fn new(state: &FabricState, sm: PortRef) -> Result<SimFabric, SimError> {
        let f = &state.fabric;
        let mut nodes: Vec<SimNode> = f.nodes().iter().map(SimNode::fresh).collect();
        cable(&mut nodes, f);
        load_lids(&mut nodes, state);
        load_switches(&mut nodes, state);
        load_ports(&mut nodes, state);
        let sm_ok = nodes
            .get(sm.node.index())
            .and_then(|n| n.peers.get(usize::from(sm.port.0)))
            .is_some_and(Option::is_some);
        if !sm_ok {
            let name = f
                .nodes()
                .get(sm.node.index())
                .map_or_else(|| "?".to_owned(), |n| n.name().to_owned());
            return Err(SimError::SmPort(format!("{name}/{}", sm.port.0)));
        }
        Ok(SimFabric {
            nodes,
            sm: (sm.node.index(), sm.port.0),
            faults: Vec::new(),
            pending: BTreeMap::new(),
            corrupt: BTreeSet::new(),
            crashed: false,
            counts: Counts::default(),
            pma: SimPma::default(),
        })
    }

    /// Injects `fault`.
    pub fn inject(&mut self, fault: Fault) {
        self.faults.push(fault);
    }

    /// A new writer takes over after a crash: SMPs are answered again; faults not yet struck
    /// are dropped.
    pub fn restart(&mut self) {
        self.crashed = false;
        self.faults.clear();
        self.pending.clear();
        self.corrupt.clear();
    }

    /// SMPs answered so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// What the fabric holds.
    pub fn tables(&self) -> Tables {
        let mut t = Tables {
            lids: BTreeMap::new(),
            lfts: BTreeMap::new(),
            mfts: BTreeMap::new(),
            pkeys: BTreeMap::new(),
            sl2vl: BTreeMap::new(),
            vlarb: BTreeMap::new(),
            vfs: BTreeMap::new(),
        };
        for n in &self.nodes {
            let g = n.info.node_guid;
            t.lids.insert(
                g,
                n.port_info
                    .iter()
                    .map(|p| {
                        let i = PortInfo::decode(p);
                        (i.lid, i.lmc)
                    })
                    .collect(),
            );
            if n.info.node_type == NodeType::Switch {
                let top = SwitchInfo::decode(&n.switch_info).linear_fdb_top;
                t.lfts.insert(g, observe::lft(n.lft.clone(), top).ports);
                let mtop = SwitchInfo::decode(&n.switch_info).multicast_fdb_top;
                let mft = observe::mft_up_to(&n.mft, Mlid::new(mtop));
                if !mft.is_empty() {
                    t.mfts.insert(g, mft);
                }
            }
            let keys: Vec<Vec<u16>> = n.pkeys.iter().map(|k| slots(k)).collect();
            t.pkeys.insert(g, keys);
            // A table of every SL on VL 0, a block of nothing but (VL 0, weight 0): what a
            // node nobody configured holds, the same as none.
            t.sl2vl.insert(
                g,
                n.sl2vl
                    .iter()
                    .filter(|(_, v)| **v != [0; 16])
                    .map(|(k, v)| (*k, *v))
                    .collect(),
            );
            t.vlarb.insert(
                g,
                n.vlarb
                    .iter()
                    .filter(|(_, v)| v.iter().any(|&b| b != 0))
                    .map(|(k, v)| (*k, v.to_vec()))
                    .collect(),
            );
            if !n.vfs.is_empty() {
                let mut vfs = n.vfs.clone();
                for (_, keys) in vfs.values_mut() {
                    *keys = slots(keys);
                }
                t.vfs.insert(g, vfs);
            }
        }
        t
    }

    /// The node a directed route leads to, and the port it enters by (the SM's port for the
    /// SM's own node).
    fn walk(&self, target: &Target) -> Result<(usize, u8), SmpError> {
        let nowhere = || SmpError::NoRoute {
            target: target.clone(),
        };
        let (mut at, mut entered) = self.sm;
        for (i, &out) in target.path.0.iter().enumerate() {
            let n = self.nodes.get(at).ok_or_else(nowhere)?;
            if i > 0 && n.info.node_type != NodeType::Switch {
                return Err(nowhere());
            }
            let (next, port) = n
                .peers
                .get(usize::from(out))
                .copied()
                .flatten()
                .ok_or_else(nowhere)?;
            at = next;
            entered = port;
        }
        Ok((at, entered))
    }

    /// Answers a Get or (with `data`) a Set: the payload the node holds afterwards.
    fn answer(&mut self, target: &Target, data: Option<&Payload>) -> Result<Payload, SmpError> {
        let (at, entered) = self.walk(target)?;
        let status = |s: u16| SmpError::Status {
            target: target.clone(),
            status: s,
        };
        let n = self
            .nodes
            .get_mut(at)
            .ok_or_else(|| status(STATUS_INVALID))?;
        let switch = n.info.node_type == NodeType::Switch;
        let m = target.modifier;
        let vf = (m & 0x8000_0000 != 0).then_some(((m >> 16) & 0x7fff) as u8);
        let r = Req {
            m,
            entered,
            vf,
            switch,
            data,
        };
        let got = match target.attr {
            Attr::NodeInfo | Attr::NodeDescription if data.is_some() => Err(STATUS_UNSUPPORTED),
            Attr::NodeInfo => Ok((
                NodeInfo {
                    port_guid: n
                        .port_guids
                        .get(usize::from(if switch { 0 } else { entered }))
                        .copied()
                        .unwrap_or(n.info.node_guid),
                    local_port: entered,
                    ..n.info
                }
                .encode(),
                false,
            )),
            Attr::NodeDescription => Ok((smp::encode_description(&n.description), false)),
            Attr::PortInfo if vf.is_some() => n.vf_port_info(r),
            Attr::PortInfo => n.port_info_attr(r),
            Attr::SwitchInfo if switch => n.switch_info_attr(r),
            Attr::Lft if switch => n.lft_block(r),
            Attr::Mft if switch => n.mft_block(r),
            Attr::PKeyTable => n.pkey_block(r),
            Attr::SlToVl => n.sl2vl_row(r),
            Attr::VlArb => n.vlarb_block(r),
            Attr::SwitchInfo | Attr::Lft | Attr::Mft => Err(STATUS_UNSUPPORTED),
        };
        let (out, changed) = got.map_err(status)?;
        if changed {
            self.counts.changes += 1;
        }
        Ok(out)
    }
}

/// What an SMP asks of a node, besides its attribute.
#[derive(Clone, Copy)]
struct Req<'d> {
    /// The attribute modifier.
    m: u32,
    /// The port the SMP entered the node on.
    entered: u8,
    /// The VF a hypervisor-port modifier names.
    vf: Option<u8>,
    /// Whether the node is a switch.
    switch: bool,
    /// A Set's payload; `None` for a Get.
    data: Option<&'d Payload>,
}

/// A node's answers, attribute by attribute: the payload it holds afterwards and whether a
/// Set changed it, or a MAD status.
impl SimNode {
    /// PortInfo through the hypervisor port: the VF's LID.
    fn vf_port_info(&mut self, r: Req<'_>) -> Result<(Payload, bool), u16> {
        let Req { m, vf, data, .. } = r;
        let mut changed = false;
        let key = ((m & 0xff) as u8, vf.unwrap_or(0));
        let Some(v) = self.vfs.get_mut(&key) else {
            return Err(STATUS_INVALID);
        };
        if let Some(d) = data {
            let lid = PortInfo::decode(d).lid;
            changed = v.0 != lid;
            v.0 = lid;
        }
        // The VF's LID, nothing else.
        Ok((smp::port_lid_write(&[0; PAYLOAD], v.0), changed))
    }

    /// PortInfo of a port (an end node's: the one entered); a Set keeps the physical state.
    fn port_info_attr(&mut self, r: Req<'_>) -> Result<(Payload, bool), u16> {
        let Req {
            m,
            entered,
            switch,
            data,
            ..
        } = r;
        let mut changed = false;
        let port = if !switch && m == 0 { entered } else { m as u8 };
        if m > u32::from(self.info.num_ports) || (!switch && port == 0) {
            return Err(STATUS_INVALID);
        }
        let Some(pi) = self.port_info.get_mut(usize::from(port)) else {
            return Err(STATUS_INVALID);
        };
        if let Some(d) = data {
            let before = *pi;
            let mut want = PortInfo::decode(d);
            let now = PortInfo::decode(pi);
            if want.link_state == smp::LinkState::NoChange {
                want.link_state = now.link_state;
            }
            want.encode_into(pi);
            // The physical state is the device's own.
            PortInfo {
                phys_state: now.phys_state,
                ..PortInfo::decode(pi)
            }
            .encode_held_into(pi);
            changed = *pi != before;
        }
        Ok((*pi, changed))
    }

    /// SwitchInfo; a Set within the LFT and MFT caps.
    fn switch_info_attr(&mut self, r: Req<'_>) -> Result<(Payload, bool), u16> {
        let Req { data, .. } = r;
        let mut changed = false;
        if let Some(d) = data {
            let want = SwitchInfo::decode(d);
            let mcast_top_ok = Mlid::new(want.multicast_fdb_top)
                .is_none_or(|m| m.index() < usize::from(self.mcast_cap));
            if want.linear_fdb_top >= self.fdb_cap || !mcast_top_ok {
                return Err(STATUS_INVALID);
            }
            let before = self.switch_info;
            want.encode_into(&mut self.switch_info);
            changed = self.switch_info != before;
        }
        Ok((self.switch_info, changed))
    }

    /// A block of the LFT, within LinearFDBCap.
    fn lft_block(&mut self, r: Req<'_>) -> Result<(Payload, bool), u16> {
        let Req { m, data, .. } = r;
        let mut changed = false;
        let first = (m as usize) * smp::LFT_BLOCK;
        if m > 0xffff || first + smp::LFT_BLOCK > usize::from(self.fdb_cap) {
            return Err(STATUS_INVALID);
        }
        if let Some(d) = data {
            if self.lft.len() < first + smp::LFT_BLOCK {
                self.lft.resize(first + smp::LFT_BLOCK, 0xff);
            }
            if let Some(slot) = self.lft.get_mut(first..first + smp::LFT_BLOCK) {
                changed = slot != d.as_slice();
                slot.copy_from_slice(d);
            }
        }
        let mut p = [0xffu8; PAYLOAD];
        for (k, e) in p.iter_mut().enumerate() {
            if let Some(&v) = self.lft.get(first + k) {
                *e = v;
            }
        }
        Ok((p, changed))
    }

    /// A block of the MFT at a port position, within the MFT cap.
    fn mft_block(&mut self, r: Req<'_>) -> Result<(Payload, bool), u16> {
        let Req { m, data, .. } = r;
        let mut changed = false;
        // Bits 27:9 of the modifier are reserved.
        let (block, position) = ((m & 0x1ff) as u16, (m >> 28) as u8);
        let first = usize::from(block) * smp::MFT_BLOCK;
        if m & 0x0fff_fe00 != 0
            || first + smp::MFT_BLOCK > usize::from(self.mcast_cap)
            || position >= smp::mft_positions(self.info.num_ports)
        {
            return Err(STATUS_INVALID);
        }
        if let Some(d) = data {
            let masks = smp::decode_mft(d);
            changed = self.mft.block(block, position) != masks;
            self.mft.set_block(block, position, &masks);
        }
        Ok((smp::encode_mft(&self.mft.block(block, position)), changed))
    }

    /// A block of a port's (or a VF's) P_Key table, within PartitionCap.
    fn pkey_block(&mut self, r: Req<'_>) -> Result<(Payload, bool), u16> {
        let Req {
            m,
            entered,
            vf,
            switch,
            data,
        } = r;
        let mut changed = false;
        let (port, block) = match vf {
            Some(_) => ((m & 0xff00) >> 8, m & 0xff),
            None if switch => (m >> 16, m & 0xffff),
            None => (u32::from(entered), m & 0xffff),
        };
        let first = block as usize * smp::PKEY_BLOCK;
        if first + smp::PKEY_BLOCK > usize::from(self.partition_cap).max(smp::PKEY_BLOCK) {
            return Err(STATUS_INVALID);
        }
        let table = match vf {
            Some(v) => self.vfs.get_mut(&(port as u8, v)).map(|e| &mut e.1),
            None => self.pkeys.get_mut(port as usize),
        };
        let Some(table) = table else {
            return Err(STATUS_INVALID);
        };
        if let Some(d) = data {
            if table.len() < first + smp::PKEY_BLOCK {
                table.resize(first + smp::PKEY_BLOCK, 0);
            }
            let keys = smp::decode_pkeys(d);
            if let Some(slot) = table.get_mut(first..first + smp::PKEY_BLOCK) {
                changed = slot != keys.as_slice();
                slot.copy_from_slice(&keys);
            }
        }
        let mut keys = [0u16; smp::PKEY_BLOCK];
        for (k, e) in keys.iter_mut().enumerate() {
            *e = table.get(first + k).copied().unwrap_or(0);
        }
        Ok((smp::encode_pkeys(&keys), changed))
    }

    /// An SL→VL row: a switch's (in port, out port), an end node's entered port.
    fn sl2vl_row(&mut self, r: Req<'_>) -> Result<(Payload, bool), u16> {
        let Req {
            m,
            entered,
            switch,
            data,
            ..
        } = r;
        let mut changed = false;
        let key = if switch {
            m & 0xffff
        } else {
            u32::from(entered)
        };
        if switch
            && ((m >> 8) & 0xff > u32::from(self.info.num_ports)
                || m & 0xff > u32::from(self.info.num_ports))
        {
            return Err(STATUS_INVALID);
        }
        if let Some(d) = data {
            let vls = smp::decode_sl2vl(d);
            changed = self.sl2vl.insert(key, vls) != Some(vls);
        }
        Ok((
            smp::encode_sl2vl(&self.sl2vl.get(&key).copied().unwrap_or([0; 16])),
            changed,
        ))
    }

    /// A VL arbitration block of a port.
    fn vlarb_block(&mut self, r: Req<'_>) -> Result<(Payload, bool), u16> {
        let Req {
            m,
            entered,
            switch,
            data,
            ..
        } = r;
        let mut changed = false;
        // A switch's port by the modifier; an end node's table is the port the SMP
        // entered (the modifier's port field is ignored, as ibsim does).
        let block = (m >> 16) & 0xffff;
        if !(1..=4).contains(&block) || (switch && m & 0xffff > u32::from(self.info.num_ports)) {
            return Err(STATUS_INVALID);
        }
        let m = if switch {
            m
        } else {
            (m & 0xffff_0000) | u32::from(entered)
        };
        if let Some(d) = data {
            let mut p = [0u8; PAYLOAD];
            if let (Some(dst), Some(src)) = (p.get_mut(..64), d.get(..64)) {
                dst.copy_from_slice(src);
            }
            changed = self.vlarb.insert(m, p) != Some(p);
        }
        Ok((self.vlarb.get(&m).copied().unwrap_or([0; PAYLOAD]), changed))
    }
}

impl Transport for SimFabric {
    fn get(&mut self, target: &Target) -> Result<Payload, SmpError> {
        if self.crashed {
            return Err(SmpError::Crashed {
                after: self.counts.sets,
            });
        }
        self.counts.gets += 1;
        let mut p = self.answer(target, None)?;
        if self.corrupt.remove(target) {
            // A bit of what was written: LinearFDBTop, a LID, else the first entry.
            match target.attr {
                Attr::SwitchInfo => {
                    let mut s = SwitchInfo::decode(&p);
                    s.linear_fdb_top ^= 1;
                    s.encode_into(&mut p);
                }
                Attr::PortInfo => {
                    let mut i = PortInfo::decode(&p);
                    i.lid ^= 1;
                    i.encode_held_into(&mut p);
                }
                _ => {
                    if let Some(b) = p.first_mut() {
                        *b ^= 0x01;
                    }
                }
            }
        }
        Ok(p)
    }

    fn set(&mut self, target: &Target, data: &Payload) -> Result<Payload, SmpError> {
        if self.crashed {
            return Err(SmpError::Crashed {
                after: self.counts.sets,
            });
        }
        let index = self.counts.sets;
        self.counts.sets += 1;
        let timeout = || SmpError::Timeout {
            target: target.clone(),
            tries: 1,
        };
        if let Some((left, lands)) = self.pending.get_mut(target) {
            let lands = *lands;
            *left -= 1;
            if *left == 0 {
                self.pending.remove(target);
            }
            if lands {
                self.answer(target, Some(data))?;
            }
            return Err(timeout());
        }
        let fault = self
            .faults
            .iter()
            .find(|f| f.at_set == index)
            .map(|f| f.kind);
        match fault {
            None => self.answer(target, Some(data)),
            Some(FaultKind::Crash) => {
                self.counts.sets -= 1;
                self.crashed = true;
                Err(SmpError::Crashed { after: index })
            }
            Some(FaultKind::Reject { status }) => Err(SmpError::Status {
                target: target.clone(),
                status,
            }),
            Some(FaultKind::Drop { times }) => {
                if times > 1 {
                    self.pending.insert(target.clone(), (times - 1, false));
                }
                Err(timeout())
            }
            Some(FaultKind::Delay { times }) => {
                self.answer(target, Some(data))?;
                if times > 1 {
                    self.pending.insert(target.clone(), (times - 1, true));
                }
                Err(timeout())
            }
            Some(FaultKind::CorruptReadback) => {
                let p = self.answer(target, Some(data))?;
                self.corrupt.insert(target.clone());
                Ok(p)
            }
        }
    }
}

#[cfg(test)]
mod tests;
