//! Per-port tables: the SL→VL map of an end-node port (the VL each SL is injected on), VL
//! arbitration and P_Keys. Switch ports (port 0 included) may carry VLArb and P_Key tables too;
//! a switch's SL→VL map is per (input, output) pair and lives in
//! [`SwitchState`](crate::SwitchState).

use serde::{Deserialize, Serialize};

/// What a port runs besides forwarding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortState {
    /// End-node ports only: the VL each SL is injected on (`None`: every SL on VL 0).
    pub sl2vl: Option<[u8; 16]>,
    /// VL arbitration of the port's output: a VL leaves the port only when an entry of
    /// either table names it with a weight above 0. `None`: the state records no arbitration
    /// for the port, which then sends VL 0 only — what a port with a single data VL does (it
    /// has no arbitration tables), and what a fabric whose SM configures no QoS runs on
    /// (OpenSM with `qos FALSE`, its default, writes no VLArb table); a hop on VL 1 or above
    /// out of such a port is not scheduled. (OpenSM with QoS on programs `qos_vlarb_high` and
    /// `qos_vlarb_low`, by default VL 0 in the high table and VLs 1–14 in the low one, each
    /// of weight 4; a state imported from OpenSM records those tables, or its VL ≥ 1 hops are
    /// reported unscheduled.)
    pub vlarb: Option<VlArb>,
    /// The P_Key table.
    pub pkeys: Option<Vec<PKey>>,
}

impl VlArb {
    /// Whether an entry of either table names `vl` with a weight above 0.
    pub fn schedules(&self, vl: u8) -> bool {
        self.high
            .iter()
            .chain(&self.low)
            .any(|e| e.vl == vl && e.weight > 0)
    }

    /// Whether some entry names `vl` (whatever its weight).
    pub fn lists(&self, vl: u8) -> bool {
        self.high.iter().chain(&self.low).any(|e| e.vl == vl)
    }
}

impl PortState {
    /// Whether the port has no table at all.
    pub fn is_empty(&self) -> bool {
        self.sl2vl.is_none() && self.vlarb.is_none() && self.pkeys.is_none()
    }
}

/// The most entries a VL arbitration table holds (IBA: VLArbitrationHighCap/LowCap ≤ 64).
pub(crate) const VLARB_MAX_ENTRIES: usize = 64;

/// A VL arbitration configuration: a high- and a low-priority weighted round robin, and how
/// many high-priority bytes (in 4 KB units) may go before a low-priority packet.
///
/// The verifier asks one thing of it: whether a VL is *scheduled* — named by an entry of
/// either table with a weight above 0. The high limit, and how long a low-priority VL may
/// wait under high-priority load, are not modelled.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VlArb {
    /// High-priority limit (0..=255; 255: unlimited).
    pub high_limit: u8,
    /// High-priority table.
    pub high: Vec<VlWeight>,
    /// Low-priority table.
    pub low: Vec<VlWeight>,
}

/// One VL arbitration entry: a data VL and its weight (in 64-byte units; 0 skips the entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct VlWeight {
    /// Data VL (0..=14).
    pub vl: u8,
    /// Weight.
    pub weight: u8,
}

/// A partition key: the low 15 bits name the partition, bit 15 is full membership.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PKey(pub u16);

impl PKey {
    /// The default partition, full membership.
    pub const DEFAULT: PKey = PKey(0xffff);

    /// The partition number (low 15 bits).
    pub fn base(self) -> u16 {
        self.0 & 0x7fff
    }

    /// Whether this is a full membership.
    pub fn is_full(self) -> bool {
        self.0 & 0x8000 != 0
    }

    /// The membership bit 15 gives.
    pub fn membership(self) -> super::Membership {
        if self.is_full() {
            super::Membership::Full
        } else {
            super::Membership::Limited
        }
    }
}

impl std::fmt::Display for PKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#06x}", self.0)
    }
}
