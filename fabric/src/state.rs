//! What switches run: LIDs and per-switch tables, next to the [`Fabric`] they belong to.
//!
//! Serialised as deterministic JSON (ordered maps, no hash order), the input of `weft plan`.
//!
//! Semantics the verifier checks (DESIGN.md, "Semantics the verifier proves"): a packet for
//! destination LID `d` with service level `s` entering switch `x` on port `i` leaves on
//! `o = LFT_x[d]` and VL `SL2VL_x[i][o][s]`. A packet injected by an end node leaves its port on
//! VL `end_sl2vl[node][s]`. The SL a source uses toward a destination is given by [`PathSl`].

use crate::ids::{Lid, NodeId, PortNum, Sl, Vl};
use crate::model::Fabric;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The LFT value meaning "no route" (and the port value OpenSM omits from dumps).
pub const LFT_UNSET: u8 = 255;

/// Base LIDs of every port that has one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LidAssignment {
    /// LID mask control: each end-node port owns `base..base + 2^lmc`.
    pub lmc: u8,
    /// Base LID per (node, port); a switch has one entry for port 0.
    pub base: BTreeMap<NodeId, BTreeMap<PortNum, Lid>>,
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

    /// The highest LID assigned (0 when none).
    pub fn max_lid(&self, fabric: &Fabric) -> u16 {
        self.base
            .iter()
            .flat_map(|(&n, ports)| {
                let span = self.span(fabric.nodes().get(n.index()).is_some_and(|x| x.is_switch()));
                ports.values().map(move |l| l.0.saturating_add(span - 1))
            })
            .max()
            .unwrap_or(0)
    }

    /// Who owns each LID: `owners[lid] = (node, port)`, covering every LMC LID.
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
        owners
    }
}

/// A linear forwarding table: `ports[lid]` is the output port for destination `lid`.
///
/// In JSON the table is one hex string, two digits per LID (`ff` = unset): a 13 000-LID
/// table is 26 kB instead of 13 000 array lines.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lft {
    /// Output port per LID, [`LFT_UNSET`] where there is no route.
    #[serde(with = "hex_bytes")]
    pub ports: Vec<u8>,
}

/// `Vec<u8>` as a lowercase hex string.
mod hex_bytes {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut text = String::with_capacity(bytes.len() * 2);
        for &b in bytes {
            text.push(char::from(DIGITS[usize::from(b >> 4)]));
            text.push(char::from(DIGITS[usize::from(b & 15)]));
        }
        s.serialize_str(&text)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        if text.len() % 2 != 0 {
            return Err(D::Error::custom("an LFT hex string has an odd length"));
        }
        text.as_bytes()
            .chunks(2)
            .map(|pair| {
                std::str::from_utf8(pair)
                    .ok()
                    .and_then(|p| u8::from_str_radix(p, 16).ok())
                    .ok_or_else(|| D::Error::custom("an LFT hex string has a non-hex digit"))
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
        self.ports[i] = port.0;
    }

    /// LinearFDBTop: the highest LID with an entry slot.
    pub fn top(&self) -> Lid {
        Lid(self.ports.len().saturating_sub(1) as u16)
    }
}

/// One SL→VL row of a switch: the VL each SL takes from `in_port` to `out_port`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    /// SL→VL rows sorted by (input port, output port). Empty means the switch maps every SL to
    /// VL 0 (a fabric without QoS); otherwise a missing row is an unassigned entry.
    pub sl2vl: Vec<Sl2VlRow>,
}

impl SwitchState {
    /// The VL a packet with SL `sl` takes from `in_port` to `out_port`, or `None` when the
    /// table has rows but none for this pair.
    pub fn vl(&self, in_port: PortNum, out_port: PortNum, sl: Sl) -> Option<Vl> {
        if self.sl2vl.is_empty() {
            return Some(Vl(0));
        }
        let key = (in_port.0, out_port.0);
        let i = self
            .sl2vl
            .binary_search_by(|r| (r.in_port, r.out_port).cmp(&key))
            .ok()?;
        self.sl2vl
            .get(i)
            .and_then(|r| r.vl.get(usize::from(sl.0)))
            .map(|&v| Vl(v))
    }

    /// Sorts the SL2VL rows (required by [`SwitchState::vl`]).
    pub fn sort_sl2vl(&mut self) {
        self.sl2vl.sort_by_key(|r| (r.in_port, r.out_port));
    }
}

/// A set of service levels, as a 16-bit mask.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct SlSet(pub u16);

impl SlSet {
    /// The set holding only `sl`.
    pub fn one(sl: Sl) -> SlSet {
        SlSet(1 << (sl.0 & 15))
    }

    /// Adds `sl`.
    pub fn insert(&mut self, sl: Sl) {
        self.0 |= 1 << (sl.0 & 15);
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The members, lowest first.
    pub fn iter(self) -> impl Iterator<Item = Sl> {
        (0u8..16).filter(move |s| self.0 & (1 << s) != 0).map(Sl)
    }
}

/// One explicit path-SL entry: the SLs source `src` may use toward `dlid`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathSlEntry {
    /// Source node (an end node, or a switch for its management traffic).
    pub src: NodeId,
    /// Destination LID.
    pub dlid: Lid,
    /// Every SL the flow may use (a flow may move between them at run time).
    pub sls: SlSet,
}

/// The SL each (source, destination) pair uses: what the SA answers in PathRecords.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathSl {
    /// SLs of every pair without an entry.
    pub default: SlSet,
    /// Per-destination SLs (e.g. Nue), applied to pairs without an entry.
    pub by_dlid: BTreeMap<Lid, SlSet>,
    /// Per-pair entries, sorted by (src, dlid).
    pub entries: Vec<PathSlEntry>,
}

impl Default for PathSl {
    fn default() -> PathSl {
        PathSl {
            default: SlSet::one(Sl(0)),
            by_dlid: BTreeMap::new(),
            entries: Vec::new(),
        }
    }
}

impl PathSl {
    /// The SLs `src` uses toward `dlid`.
    pub fn get(&self, src: NodeId, dlid: Lid) -> SlSet {
        if let Ok(i) = self
            .entries
            .binary_search_by(|e| (e.src, e.dlid).cmp(&(src, dlid)))
        {
            if let Some(e) = self.entries.get(i) {
                return e.sls;
            }
        }
        self.by_dlid.get(&dlid).copied().unwrap_or(self.default)
    }

    /// Sorts the entries (required by [`PathSl::get`]).
    pub fn sort(&mut self) {
        self.entries.sort_by_key(|e| (e.src, e.dlid));
    }
}

/// A fabric and the state compiled for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FabricState {
    /// The topology.
    pub fabric: Fabric,
    /// LIDs.
    pub lids: LidAssignment,
    /// Tables per switch.
    pub switches: BTreeMap<NodeId, SwitchState>,
    /// SL→VL of end-node ports (the VL a packet is injected on), by node. A node without an
    /// entry injects every SL on VL 0.
    #[serde(default)]
    pub end_sl2vl: BTreeMap<NodeId, [u8; 16]>,
    /// Path SLs.
    #[serde(default)]
    pub path_sl: PathSl,
}

impl FabricState {
    /// A state with no LIDs and empty tables.
    pub fn new(fabric: Fabric) -> FabricState {
        FabricState {
            lids: LidAssignment {
                lmc: fabric.lmc,
                base: BTreeMap::new(),
            },
            fabric,
            switches: BTreeMap::new(),
            end_sl2vl: BTreeMap::new(),
            path_sl: PathSl::default(),
        }
    }

    /// The VL an end node injects SL `sl` on.
    pub fn injection_vl(&self, node: NodeId, sl: Sl) -> Vl {
        self.end_sl2vl
            .get(&node)
            .and_then(|t| t.get(usize::from(sl.0)))
            .map_or(Vl(0), |&v| Vl(v))
    }

    /// Deterministic, pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Reads what [`FabricState::to_json`] wrote.
    pub fn from_json(text: &str) -> Result<FabricState, serde_json::Error> {
        let mut state: FabricState = serde_json::from_str(text)?;
        state.fabric.reindex();
        for s in state.switches.values_mut() {
            s.sort_sl2vl();
        }
        state.path_sl.sort();
        Ok(state)
    }
}
