//! What switches run: LIDs and per-switch tables, next to the [`Fabric`] they belong to.
//!
//! Serialised as deterministic JSON (`weft_formats::state_json`, schema v1, v2 with multicast), the input of `weft verify --state`,
//! `weft plan --from` and `weft report`.
//!
//! A state holds the LIDs; per switch its LFT and SL→VL table (rows per (input, output) port
//! pair, and one map for every pair without a row); per port the injection SL→VL, VL
//! arbitration and P_Keys; path SLs as SL sets per destination range, per source switch and
//! per source port; the data VLs the SM operates (`max_vls`) and the ports it runs on (`sm`);
//! the declared partitions, the VFs' ports, and multicast (`multicast.rs`: groups and MFTs).
//!
//! Nothing proves or writes a state until [`ValidState::new`] accepted it: `state.json`,
//! OpenSM's dumps (`weft_formats::opensm::assemble`) and the compiler all end there. The tolerant
//! consumers take raw states on purpose, because they must rate or replay garbage: the
//! metrics, the verifier's `apm::survivors`, deploy's `sim` and the reference walks.
//!
//! Semantics the verifier checks: a packet for destination LID `d` with service level `s`
//! entering switch `x` on port `i` leaves on `o = LFT_x[d]` and VL `SL2VL_x[i][o][s]`. A packet
//! injected by an end-node port leaves it on VL `ports[port].sl2vl[s]`. The SLs a source port
//! uses toward a destination are given by [`PathSl`].

use crate::ids::{Lid, NodeId, PortNum, Sl, Vl};
use crate::model::{Fabric, NodeKind, PortRef};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod multicast;
mod partitions;
mod path_sl;
mod ports;
mod valid;
mod vports;

pub use multicast::{
    JoinState, McGroup, Mft, Mlid, Multicast, PortMask, MLIDS_PER_BLOCK, PORTS_PER_POSITION,
};
pub use partitions::{Membership, Partition, TrafficClass};
pub use path_sl::{DlidSls, LidRange, PathSl, SlSet, SourceSls, SwitchSls};
pub use ports::{PKey, PortState, VlArb, VlWeight};
pub use valid::{StateError, StateErrors, ValidState};
pub use vports::VirtualPort;

/// The LFT value meaning "no route" (and the port value OpenSM omits from dumps).
pub const LFT_UNSET: u8 = 255;

/// Base LIDs of every port that has one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LidAssignment {
    /// LID mask control: each end-node port owns `base..base + 2^lmc`.
    pub lmc: u8,
    /// Base LID per (node, port); a switch has one entry for port 0.
    pub base: BTreeMap<NodeId, BTreeMap<PortNum, Lid>>,
    /// The VFs of vSwitch hypervisor ports, sorted by [`VirtualPort::key`]; those with a LID
    /// own it behind their hypervisor's port.
    #[serde(skip)]
    pub vports: Vec<VirtualPort>,
}

impl LidAssignment {
    /// The base LID of `(node, port)` (port 0 for a switch).
    pub fn get(&self, node: NodeId, port: PortNum) -> Option<Lid> {
        self.base.get(&node)?.get(&port).copied()
    }

    /// How many LIDs a port owns: 1 for a switch's port 0, `2^lmc` for an end-node port.
    pub fn span(&self, is_switch: bool) -> u16 {
        if is_switch {
            1
        } else {
            1 << self.lmc.min(7)
        }
    }

    /// The highest LID assigned (0 when none), VF LIDs included.
    pub fn max_lid(&self, fabric: &Fabric) -> u16 {
        let physical = self.base.iter().flat_map(|(&n, ports)| {
            let span = self.span(fabric.nodes().get(n.index()).is_some_and(|x| x.is_switch()));
            ports.values().map(move |l| l.0.saturating_add(span - 1))
        });
        physical
            .chain(self.vports.iter().filter_map(|v| v.lid.map(|l| l.0)))
            .max()
            .unwrap_or(0)
    }

    /// The VF that owns `lid`, if a VF does.
    pub fn vport(&self, lid: Lid) -> Option<&VirtualPort> {
        self.vports.iter().find(|v| v.lid == Some(lid))
    }

    /// Who owns each LID: `owners[lid] = (node, port)`, covering every LMC LID; a VF's LID is
    /// owned by its hypervisor's port.
    pub fn owners(&self, fabric: &Fabric) -> Vec<Option<(NodeId, PortNum)>> {
        let mut owners = vec![None; usize::from(self.max_lid(fabric)) + 1];
        for (&n, ports) in &self.base {
            let span = self.span(fabric.nodes().get(n.index()).is_some_and(|x| x.is_switch()));
            for (&p, &base) in ports {
                for k in 0..span {
                    if let Some(slot) = owners.get_mut(usize::from(base.0) + usize::from(k)) {
                        *slot = Some((n, p));
                    }
                }
            }
        }
        for v in &self.vports {
            if let Some(slot) = v.lid.and_then(|l| owners.get_mut(usize::from(l.0))) {
                *slot = Some((v.host.node, v.host.port));
            }
        }
        owners
    }
}

/// A linear forwarding table: `ports[lid]` is the output port for destination `lid`.
///
/// In JSON the table is one hex string, two digits per LID (`ff` = unset): a 13 000-LID
/// table is 26 kB instead of 13 000 array lines.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Lft {
    /// Output port per LID, [`LFT_UNSET`] where there is no route.
    #[serde(with = "hex_bytes")]
    pub ports: Vec<u8>,
}

/// `Vec<u8>` as a lowercase hex string.
mod hex_bytes {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut text = String::with_capacity(bytes.len() * 2);
        for &b in bytes {
            for nibble in [b >> 4, b & 15] {
                text.push(char::from(
                    DIGITS.get(usize::from(nibble)).copied().unwrap_or(b'0'),
                ));
            }
        }
        s.serialize_str(&text)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        decode(text.as_bytes()).map_err(D::Error::custom)
    }

    /// Decodes hex pairs (either case).
    pub(crate) fn decode(text: &[u8]) -> Result<Vec<u8>, &'static str> {
        if !text.len().is_multiple_of(2) {
            return Err("an LFT hex string has an odd length");
        }
        let digit = |c: u8| -> Option<u8> {
            match c {
                b'0'..=b'9' => Some(c - b'0'),
                b'a'..=b'f' => Some(c - b'a' + 10),
                b'A'..=b'F' => Some(c - b'A' + 10),
                _ => None,
            }
        };
        text.chunks_exact(2)
            .map(|pair| match pair {
                [hi, lo] => digit(*hi)
                    .zip(digit(*lo))
                    .map(|(h, l)| h << 4 | l)
                    .ok_or("an LFT hex string has a non-hex digit"),
                _ => Err("an LFT hex string has an odd length"),
            })
            .collect()
    }
}

impl Lft {
    /// The output port for `lid`, or `None` when unset.
    pub fn get(&self, lid: Lid) -> Option<PortNum> {
        match self.ports.get(usize::from(lid.0)) {
            Some(&p) if p != LFT_UNSET => Some(PortNum(p)),
            _ => None,
        }
    }

    /// Sets the output port for `lid`, growing the table as needed.
    pub fn set(&mut self, lid: Lid, port: PortNum) {
        let i = usize::from(lid.0);
        if self.ports.len() <= i {
            self.ports.resize(i + 1, LFT_UNSET);
        }
        if let Some(e) = self.ports.get_mut(i) {
            *e = port.0;
        }
    }

    /// LinearFDBTop: the highest LID with an entry slot.
    pub fn top(&self) -> Lid {
        Lid(self.ports.len().saturating_sub(1) as u16)
    }
}

/// One SL→VL row of a switch: the VL each SL takes from `in_port` to `out_port`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sl2VlRow {
    /// Input port.
    pub in_port: u8,
    /// Output port.
    pub out_port: u8,
    /// VL per SL (15 drops the packet).
    pub vl: [u8; 16],
}

/// Per-switch tables.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchState {
    /// Linear forwarding table.
    pub lft: Lft,
    /// SL→VL rows sorted by (input port, output port). Empty, without
    /// [`SwitchState::sl2vl_all`], means the switch maps every SL to VL 0 (a fabric without
    /// QoS); otherwise a pair with neither a row nor `sl2vl_all` is an unassigned entry.
    pub sl2vl: Vec<Sl2VlRow>,
    /// The VL per SL of every (input, output) port pair without its own row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sl2vl_all: Option<[u8; 16]>,
}

impl SwitchState {
    /// The VL a packet with SL `sl` takes from `in_port` to `out_port`, or `None` when the
    /// table has rows but none for this pair.
    pub fn vl(&self, in_port: PortNum, out_port: PortNum, sl: Sl) -> Option<Vl> {
        let key = (in_port.0, out_port.0);
        let row = self
            .sl2vl
            .binary_search_by(|r| (r.in_port, r.out_port).cmp(&key))
            .ok()
            .and_then(|i| self.sl2vl.get(i))
            .map(|r| &r.vl);
        match (row, &self.sl2vl_all) {
            (Some(t), _) | (None, Some(t)) => t.get(usize::from(sl.0)).map(|&v| Vl(v)),
            (None, None) if self.sl2vl.is_empty() => Some(Vl(0)),
            (None, None) => None,
        }
    }

    /// Whether the switch has SL→VL tables (rows or a map for all pairs).
    pub fn has_sl2vl(&self) -> bool {
        !self.sl2vl.is_empty() || self.sl2vl_all.is_some()
    }

    /// Sorts the SL2VL rows (required by [`SwitchState::vl`]).
    pub fn sort_sl2vl(&mut self) {
        self.sl2vl.sort_by_key(|r| (r.in_port, r.out_port));
    }
}

/// A fabric and the state compiled for it.
///
/// Build one freely; before anything trusts it (the verifier, the writers of plans), it goes
/// through [`ValidState::new`](crate::ValidState::new), which checks every invariant and names
/// every violation. `state.json` (schema v1, see `weft_formats::state_json`) is read straight into a
/// [`ValidState`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FabricState {
    /// The topology.
    pub fabric: Fabric,
    /// LIDs.
    pub lids: LidAssignment,
    /// Tables per switch.
    pub switches: BTreeMap<NodeId, SwitchState>,
    /// Tables per port: end-node SL→VL (the VL a packet is injected on), VL arbitration and
    /// P_Keys. A port without an entry injects every SL on VL 0 and has no VLArb or P_Key table.
    pub ports: BTreeMap<PortRef, PortState>,
    /// Path SLs.
    pub path_sl: PathSl,
    /// Declared partitions, sorted by name (empty: none declared, and the `isolated`
    /// property does not apply).
    pub partitions: Vec<Partition>,
    /// The data VLs the subnet manager operates on every port: VLs `0..max_vls` (what
    /// `weft build` hands OpenSM as `qos_max_vls` and `max_op_vls`). `None`: no limit beyond
    /// each link's VLCap. A hop on a VL at or above it is not operational.
    pub max_vls: Option<u8>,
    /// The ports the subnet manager runs on (the master and any standby), sorted: an end-node
    /// port, or a switch's port 0. Empty: the state does not say where the SM runs, and the
    /// `isolated` property cannot check that every end port reaches it.
    pub sm: Vec<PortRef>,
    /// Multicast groups and MFTs (empty: the state says nothing about multicast, and what
    /// is proven covers unicast only).
    pub multicast: Multicast,
    /// dFtree's lane pairs, `(fast, slow)`, sorted: a flow whose path-SL set holds both SLs
    /// of a pair starts on the fast one, and dFtree's run-time loop may move it to the slow
    /// one. Empty: no dFtree lanes (a pair's several SLs are then its QoS classes' or layers').
    pub dftree_lanes: Vec<(Sl, Sl)>,
}

impl FabricState {
    /// A state with no LIDs and empty tables.
    pub fn new(fabric: Fabric) -> FabricState {
        FabricState {
            lids: LidAssignment {
                lmc: fabric.lmc,
                base: BTreeMap::new(),
                vports: Vec::new(),
            },
            fabric,
            switches: BTreeMap::new(),
            ports: BTreeMap::new(),
            path_sl: PathSl::default(),
            partitions: Vec::new(),
            max_vls: None,
            sm: Vec::new(),
            multicast: Multicast::default(),
            dftree_lanes: Vec::new(),
        }
    }

    /// Sets the injection SL→VL table of every physical port of end node `node`.
    pub fn set_node_injection(&mut self, node: NodeId, vl: [u8; 16]) {
        let ports = self
            .fabric
            .nodes()
            .get(node.index())
            .map_or(0, |n| n.spec.port_count);
        for p in 1..=ports {
            self.ports.entry(PortRef::new(node, p)).or_default().sl2vl = Some(vl);
        }
    }

    /// The switch a source port belongs to for [`PathSl::by_switch`]: a switch itself, else
    /// the switch its cable leads to (down or not), else none.
    pub fn source_switch(&self, src: PortRef) -> Option<NodeId> {
        let node = self.fabric.nodes().get(src.node.index())?;
        if node.spec.kind == NodeKind::Switch {
            return Some(src.node);
        }
        let (peer, _) = self.fabric.peer(src)?;
        (self.fabric.nodes().get(peer.node.index())?.spec.kind == NodeKind::Switch)
            .then_some(peer.node)
    }

    /// The SLs `src` uses toward `dlid` ([`PathSl::get`] with the switch found from the
    /// cabling).
    pub fn path_sls(&self, src: PortRef, dlid: Lid) -> SlSet {
        self.path_sl.get(src, self.source_switch(src), dlid)
    }

    /// Whether `other`'s switches have the same SL→VL tables as this state's.
    pub fn same_sl2vl(&self, other: &FabricState) -> bool {
        self.switches.len() == other.switches.len()
            && self
                .switches
                .iter()
                .zip(&other.switches)
                .all(|((a, x), (b, y))| a == b && x.sl2vl == y.sl2vl && x.sl2vl_all == y.sl2vl_all)
    }

    /// The VL end-node port `port` injects SL `sl` on.
    pub fn injection_vl(&self, port: PortRef, sl: Sl) -> Vl {
        self.ports
            .get(&port)
            .and_then(|p| p.sl2vl.as_ref())
            .and_then(|t| t.get(usize::from(sl.0)))
            .map_or(Vl(0), |&v| Vl(v))
    }
}
