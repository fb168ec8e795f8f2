//! Subnet management packets: the attributes weft reads and writes, their 64-byte payloads
//! laid out as the InfiniBand Architecture Specification (vol. 1, §14.2.5) gives them, and
//! directed-route paths.
//!
//! Every decoder takes any 64 bytes (a switch may answer anything) and never fails; every
//! encoder writes only the fields it owns into a payload read from the device first, so
//! reserved and unknown bits go back as they came.

use std::fmt;

/// The data payload of an SMP.
pub const PAYLOAD: usize = 64;

/// A 64-byte SMP payload.
pub type Payload = [u8; PAYLOAD];

/// Entries in one LinearForwardingTable block.
pub const LFT_BLOCK: usize = 64;
/// Entries in one P_KeyTable block.
pub const PKEY_BLOCK: usize = 32;
/// Entries in one VLArbitrationTable block.
pub const VLARB_BLOCK: usize = 32;
/// MLIDs in one MulticastForwardingTable block (each entry a 16-bit port mask of one
/// position).
pub const MFT_BLOCK: usize = 32;
/// PortInfo CapabilityMask bit 30, IsMulticastFDBTopSupported: a switch (on its port 0) that
/// sets it forwards no MLID above SwitchInfo's MulticastFDBTop; one that does not forwards by
/// every block up to its MulticastFDBCap and ignores the field.
pub const CAP_MCAST_FDB_TOP: u32 = 1 << 30;
/// MulticastFDBTop of a switch whose MFT holds nothing (IBA: any value below 0xC000; OpenSM
/// writes 0xBFFF).
pub const MCAST_TOP_NONE: u16 = 0xbfff;
/// The most hops a directed route holds (IBA: 63 after the first).
pub const MAX_HOPS: usize = 63;

/// An SMP attribute weft uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Attr {
    /// NodeDescription (0x0010).
    NodeDescription,
    /// NodeInfo (0x0011).
    NodeInfo,
    /// SwitchInfo (0x0012).
    SwitchInfo,
    /// PortInfo (0x0015); the modifier is the port.
    PortInfo,
    /// P_KeyTable (0x0016); the modifier is the block, and on a switch the port in bits 31:16.
    PKeyTable,
    /// SLtoVLMappingTable (0x0017); on a switch the modifier is input port << 8 | output port.
    SlToVl,
    /// VLArbitrationTable (0x0018); the modifier is block << 16 | port.
    VlArb,
    /// LinearForwardingTable (0x0019); the modifier is the block.
    Lft,
    /// MulticastForwardingTable (0x001B); the modifier is position << 28 | block
    /// ([`mft_modifier`]).
    Mft,
}

impl Attr {
    /// The attribute ID.
    pub fn id(self) -> u16 {
        match self {
            Attr::NodeDescription => 0x0010,
            Attr::NodeInfo => 0x0011,
            Attr::SwitchInfo => 0x0012,
            Attr::PortInfo => 0x0015,
            Attr::PKeyTable => 0x0016,
            Attr::SlToVl => 0x0017,
            Attr::VlArb => 0x0018,
            Attr::Lft => 0x0019,
            Attr::Mft => 0x001b,
        }
    }

    /// Every attribute weft uses.
    pub const ALL: [Attr; 9] = [
        Attr::NodeDescription,
        Attr::NodeInfo,
        Attr::SwitchInfo,
        Attr::PortInfo,
        Attr::PKeyTable,
        Attr::SlToVl,
        Attr::VlArb,
        Attr::Lft,
        Attr::Mft,
    ];

    /// The attribute with this ID.
    pub fn from_id(id: u16) -> Option<Attr> {
        Attr::ALL.into_iter().find(|a| a.id() == id)
    }
}

impl fmt::Display for Attr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Attr::NodeDescription => "NodeDescription",
            Attr::NodeInfo => "NodeInfo",
            Attr::SwitchInfo => "SwitchInfo",
            Attr::PortInfo => "PortInfo",
            Attr::PKeyTable => "P_KeyTable",
            Attr::SlToVl => "SLtoVLMappingTable",
            Attr::VlArb => "VLArbitrationTable",
            Attr::Lft => "LinearForwardingTable",
            Attr::Mft => "MulticastForwardingTable",
        })
    }
}

/// A directed route: the output port taken at each hop from the node the SM sits on. Empty:
/// that node itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DrPath(pub Vec<u8>);

impl DrPath {
    /// The SM's own node.
    pub fn local() -> DrPath {
        DrPath(Vec::new())
    }

    /// This path, one hop further out of `port`; `None` past [`MAX_HOPS`].
    pub fn then(&self, port: u8) -> Option<DrPath> {
        (self.0.len() < MAX_HOPS).then(|| {
            let mut p = self.0.clone();
            p.push(port);
            DrPath(p)
        })
    }

    /// Reads the `0,1,3` form (the leading 0 is the local node).
    pub fn parse(text: &str) -> Option<DrPath> {
        let mut parts = text.split(',').map(str::trim);
        if parts.next()? != "0" {
            return None;
        }
        let hops: Option<Vec<u8>> = parts.map(|p| p.parse().ok().filter(|&h| h > 0)).collect();
        hops.filter(|h| h.len() <= MAX_HOPS).map(DrPath)
    }
}

impl fmt::Display for DrPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("0")?;
        for h in &self.0 {
            write!(f, ",{h}")?;
        }
        Ok(())
    }
}

fn be16(p: &Payload, at: usize) -> u16 {
    u16::from_be_bytes([byte(p, at), byte(p, at + 1)])
}

fn be32(p: &Payload, at: usize) -> u32 {
    u32::from_be_bytes([
        byte(p, at),
        byte(p, at + 1),
        byte(p, at + 2),
        byte(p, at + 3),
    ])
}

fn be64(p: &Payload, at: usize) -> u64 {
    (u64::from(be32(p, at)) << 32) | u64::from(be32(p, at + 4))
}

fn byte(p: &Payload, at: usize) -> u8 {
    p.get(at).copied().unwrap_or(0)
}

fn put(p: &mut Payload, at: usize, bytes: &[u8]) {
    if let Some(slot) = p.get_mut(at..at + bytes.len()) {
        slot.copy_from_slice(bytes);
    }
}

/// NodeInfo's node type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeType {
    /// A channel adapter (1).
    Ca,
    /// A switch (2).
    Switch,
    /// A router (3).
    Router,
    /// Anything else.
    Other(u8),
}

/// NodeInfo (IBA table 146): what a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// Its type.
    pub node_type: NodeType,
    /// Its physical ports.
    pub num_ports: u8,
    /// The system image GUID.
    pub system_guid: u64,
    /// The node GUID.
    pub node_guid: u64,
    /// The GUID of the port the SMP came in on (a switch: port 0's).
    pub port_guid: u64,
    /// P_Key table entries per port.
    pub partition_cap: u16,
    /// The port the SMP came in on.
    pub local_port: u8,
}

impl NodeInfo {
    /// Decodes a NodeInfo payload.
    pub fn decode(p: &Payload) -> NodeInfo {
        NodeInfo {
            node_type: match byte(p, 2) {
                1 => NodeType::Ca,
                2 => NodeType::Switch,
                3 => NodeType::Router,
                t => NodeType::Other(t),
            },
            num_ports: byte(p, 3),
            system_guid: be64(p, 4),
            node_guid: be64(p, 12),
            port_guid: be64(p, 20),
            partition_cap: be16(p, 28),
            local_port: byte(p, 36),
        }
    }

    /// Encodes it (base and class version 1).
    pub fn encode(&self) -> Payload {
        let mut p = [0; PAYLOAD];
        p[0] = 1;
        p[1] = 1;
        p[2] = match self.node_type {
            NodeType::Ca => 1,
            NodeType::Switch => 2,
            NodeType::Router => 3,
            NodeType::Other(t) => t,
        };
        p[3] = self.num_ports;
        put(&mut p, 4, &self.system_guid.to_be_bytes());
        put(&mut p, 12, &self.node_guid.to_be_bytes());
        put(&mut p, 20, &self.port_guid.to_be_bytes());
        put(&mut p, 28, &self.partition_cap.to_be_bytes());
        p[36] = self.local_port;
        p
    }
}

/// PortInfo's logical link state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LinkState {
    /// 0: no state change.
    NoChange,
    /// 1: Down.
    Down,
    /// 2: Init.
    Init,
    /// 3: Armed.
    Armed,
    /// 4: Active.
    Active,
    /// Anything else.
    Other(u8),
}

impl LinkState {
    fn from_bits(v: u8) -> LinkState {
        match v {
            0 => LinkState::NoChange,
            1 => LinkState::Down,
            2 => LinkState::Init,
            3 => LinkState::Armed,
            4 => LinkState::Active,
            v => LinkState::Other(v),
        }
    }

    fn bits(self) -> u8 {
        match self {
            LinkState::NoChange => 0,
            LinkState::Down => 1,
            LinkState::Init => 2,
            LinkState::Armed => 3,
            LinkState::Active => 4,
            LinkState::Other(v) => v & 15,
        }
    }
}

/// The PortInfo fields weft reads or writes (IBA table 147); the rest of the payload is kept
/// as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortInfo {
    /// The port's base LID (a switch: port 0's).
    pub lid: u16,
    /// The LID of the master SM.
    pub master_sm_lid: u16,
    /// CapabilityMask (read-only here): on a switch's port 0, [`CAP_MCAST_FDB_TOP`] says
    /// whether MulticastFDBTop bounds its MFT.
    pub capability_mask: u32,
    /// The port number this PortInfo describes (as the device reports it).
    pub local_port: u8,
    /// LinkWidthActive as the device reports it (1: 1x, 2: 4x, 4: 8x, 8: 12x, 16: 2x; read
    /// only).
    pub link_width_active: u8,
    /// LinkSpeedActive (1: SDR, 2: DDR, 4: QDR; read only).
    pub link_speed_active: u8,
    /// LinkSpeedExtActive (0: none, the speed is LinkSpeedActive's; 1: FDR, 2: EDR, 4: HDR,
    /// 8: NDR; read only).
    pub link_speed_ext_active: u8,
    /// Logical link state.
    pub link_state: LinkState,
    /// Physical port state (5: LinkUp).
    pub phys_state: u8,
    /// LID mask control.
    pub lmc: u8,
    /// VLs the port supports (1: VL0, 2: VL0–1, 3: VL0–3, 4: VL0–7, 5: VL0–14).
    pub vl_cap: u8,
    /// VLs in use (same coding).
    pub operational_vls: u8,
    /// High-priority VL arbitration limit.
    pub vl_high_limit: u8,
    /// Entries of the high-priority VL arbitration table.
    pub vlarb_high_cap: u8,
    /// Entries of the low-priority VL arbitration table.
    pub vlarb_low_cap: u8,
}

impl PortInfo {
    /// The active link width, when LinkWidthActive holds one width.
    pub fn width(&self) -> Option<weft_fabric::Width> {
        use weft_fabric::Width;
        match self.link_width_active {
            1 => Some(Width::X1),
            2 => Some(Width::X4),
            4 => Some(Width::X8),
            8 => Some(Width::X12),
            16 => Some(Width::X2),
            _ => None,
        }
    }

    /// The active lane speed: LinkSpeedExtActive's where it holds one speed, else
    /// LinkSpeedActive's where that does. FDR10 is Mellanox's own (a vendor attribute says
    /// it): an FDR10 link reads as QDR here.
    pub fn speed(&self) -> Option<weft_fabric::Speed> {
        use weft_fabric::Speed;
        match self.link_speed_ext_active {
            0 => match self.link_speed_active {
                1 => Some(Speed::SDR),
                2 => Some(Speed::DDR),
                4 => Some(Speed::QDR),
                _ => None,
            },
            1 => Some(Speed::FDR),
            2 => Some(Speed::EDR),
            4 => Some(Speed::HDR),
            8 => Some(Speed::NDR),
            _ => None,
        }
    }

    /// Decodes a PortInfo payload.
    pub fn decode(p: &Payload) -> PortInfo {
        PortInfo {
            lid: be16(p, 16),
            master_sm_lid: be16(p, 18),
            capability_mask: be32(p, 20),
            local_port: byte(p, 28),
            link_width_active: byte(p, 31),
            link_speed_active: byte(p, 35) >> 4,
            link_speed_ext_active: byte(p, 62) >> 4,
            link_state: LinkState::from_bits(byte(p, 32) & 15),
            phys_state: byte(p, 33) >> 4,
            lmc: (byte(p, 34) >> 3) & 7,
            vl_cap: byte(p, 37) >> 4,
            vl_high_limit: byte(p, 38),
            vlarb_high_cap: byte(p, 39),
            vlarb_low_cap: byte(p, 40),
            operational_vls: byte(p, 43) >> 4,
        }
    }

    /// Writes the settable fields into `p` (a payload read from the port), leaving the rest.
    /// The link state is written as given (NoChange leaves it); physical state is written as
    /// 0 (no change).
    pub fn encode_into(&self, p: &mut Payload) {
        put(p, 16, &self.lid.to_be_bytes());
        put(p, 18, &self.master_sm_lid.to_be_bytes());
        p[32] = (p[32] & 0xf0) | self.link_state.bits();
        p[33] &= 0x0f;
        p[34] = (p[34] & !(7 << 3)) | ((self.lmc & 7) << 3);
        p[38] = self.vl_high_limit;
        p[43] = (p[43] & 0x0f) | ((self.operational_vls & 15) << 4);
    }

    /// Writes every field [`PortInfo::decode`] reads into `p`, as the device holds them
    /// (physical state, local port and capabilities included), leaving the other bits: how a
    /// device (the `sim` fabric) keeps the PortInfo it answers with.
    pub fn encode_held_into(&self, p: &mut Payload) {
        self.encode_into(p);
        put(p, 20, &self.capability_mask.to_be_bytes());
        put(p, 28, &[self.local_port]);
        put(p, 31, &[self.link_width_active]);
        let nibble_high = |p: &mut Payload, at: usize, v: u8| {
            put(p, at, &[(byte(p, at) & 0x0f) | ((v & 15) << 4)]);
        };
        nibble_high(p, 33, self.phys_state);
        nibble_high(p, 35, self.link_speed_active);
        nibble_high(p, 62, self.link_speed_ext_active);
        nibble_high(p, 37, self.vl_cap);
        put(p, 39, &[self.vlarb_high_cap, self.vlarb_low_cap]);
    }
}

/// The PortInfo Set that gives the port `read` describes the LID `lid` (0: none) and changes
/// nothing else: the payload as read, the LID replaced, the port and physical states written
/// as "no change" (writing a port's own state back is an error on some SMAs, ibsim's among
/// them).
pub fn port_lid_write(read: &Payload, lid: u16) -> Payload {
    let mut info = PortInfo::decode(read);
    info.lid = lid;
    info.link_state = LinkState::NoChange;
    let mut p = *read;
    info.encode_into(&mut p);
    p
}

/// The SwitchInfo fields weft uses (IBA table 148).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchInfo {
    /// LFT entries the switch holds.
    pub linear_fdb_cap: u16,
    /// The highest LID its LFT forwards.
    pub linear_fdb_top: u16,
    /// P_Key enforcement entries per port.
    pub partition_enforcement_cap: u16,
    /// MFT entries (MLIDs from 0xC000) the switch holds.
    pub multicast_fdb_cap: u16,
    /// The highest MLID its MFT forwards, where the switch supports it
    /// ([`CAP_MCAST_FDB_TOP`]); [`MCAST_TOP_NONE`] (or anything below 0xC000): none.
    pub multicast_fdb_top: u16,
}

/// SwitchInfo's PortStateChange bit (byte 11, bit 2: between LifeTimeValue and
/// OptimizedSLtoVLMappingProgramming): set by the switch when one of its ports changes state,
/// cleared by a Set with the bit 1.
const PORT_STATE_CHANGE: (usize, u8) = (11, 0x04);

/// Whether a SwitchInfo payload has PortStateChange set.
pub fn port_state_change(p: &Payload) -> bool {
    p.get(PORT_STATE_CHANGE.0)
        .is_some_and(|b| b & PORT_STATE_CHANGE.1 != 0)
}

/// Sets (`on`) or clears PortStateChange in a SwitchInfo payload, leaving the rest.
pub fn put_port_state_change(p: &mut Payload, on: bool) {
    if let Some(b) = p.get_mut(PORT_STATE_CHANGE.0) {
        if on {
            *b |= PORT_STATE_CHANGE.1;
        } else {
            *b &= !PORT_STATE_CHANGE.1;
        }
    }
}

impl SwitchInfo {
    /// Decodes a SwitchInfo payload.
    pub fn decode(p: &Payload) -> SwitchInfo {
        SwitchInfo {
            linear_fdb_cap: be16(p, 0),
            linear_fdb_top: be16(p, 6),
            partition_enforcement_cap: be16(p, 14),
            multicast_fdb_cap: be16(p, 4),
            multicast_fdb_top: be16(p, 18),
        }
    }

    /// Writes LinearFDBTop and MulticastFDBTop into `p` (read from the switch), leaving the
    /// rest.
    pub fn encode_into(&self, p: &mut Payload) {
        put(p, 6, &self.linear_fdb_top.to_be_bytes());
        put(p, 18, &self.multicast_fdb_top.to_be_bytes());
    }

    /// Writes every field [`SwitchInfo::decode`] reads into `p` (the capabilities too), leaving
    /// the rest: how a device (the `sim` fabric) keeps the SwitchInfo it answers with.
    pub fn encode_held_into(&self, p: &mut Payload) {
        put(p, 0, &self.linear_fdb_cap.to_be_bytes());
        put(p, 4, &self.multicast_fdb_cap.to_be_bytes());
        self.encode_into(p);
        put(p, 14, &self.partition_enforcement_cap.to_be_bytes());
    }
}

/// 32 big-endian 16-bit words: a P_KeyTable or a MulticastForwardingTable block.
fn decode_words(p: &Payload) -> [u16; 32] {
    std::array::from_fn(|i| be16(p, 2 * i))
}

/// Encodes 32 big-endian 16-bit words.
fn encode_words(words: &[u16; 32]) -> Payload {
    let mut p = [0; PAYLOAD];
    for (i, k) in words.iter().enumerate() {
        put(&mut p, 2 * i, &k.to_be_bytes());
    }
    p
}

/// A P_KeyTable block: 32 entries, big-endian, membership in bit 15.
pub fn decode_pkeys(p: &Payload) -> [u16; PKEY_BLOCK] {
    decode_words(p)
}

/// Encodes a P_KeyTable block.
pub fn encode_pkeys(keys: &[u16; PKEY_BLOCK]) -> Payload {
    encode_words(keys)
}

/// An SLtoVLMappingTable: the VL of each of the 16 SLs, two per byte, SL 0 in the high
/// nibble of byte 0.
pub fn decode_sl2vl(p: &Payload) -> [u8; 16] {
    std::array::from_fn(|sl| {
        let b = byte(p, sl / 2);
        if sl % 2 == 0 {
            b >> 4
        } else {
            b & 15
        }
    })
}

/// Encodes an SLtoVLMappingTable (VLs above 15 are cut to their low four bits).
pub fn encode_sl2vl(vls: &[u8; 16]) -> Payload {
    let mut p = [0; PAYLOAD];
    for (slot, pair) in p.iter_mut().zip(vls.chunks(2)) {
        let hi = pair.first().copied().unwrap_or(0) & 15;
        let lo = pair.get(1).copied().unwrap_or(0) & 15;
        *slot = (hi << 4) | lo;
    }
    p
}

/// A VLArbitrationTable block: 32 (VL, weight) entries, the VL in the low four bits of the
/// first byte.
pub fn decode_vlarb(p: &Payload) -> [(u8, u8); VLARB_BLOCK] {
    std::array::from_fn(|i| (byte(p, 2 * i) & 15, byte(p, 2 * i + 1)))
}

/// Encodes a VLArbitrationTable block.
pub fn encode_vlarb(entries: &[(u8, u8); VLARB_BLOCK]) -> Payload {
    let mut p = [0; PAYLOAD];
    for (i, &(vl, w)) in entries.iter().enumerate() {
        put(&mut p, 2 * i, &[vl & 15, w]);
    }
    p
}

/// NodeDescription: up to 64 bytes of text, NUL-padded.
pub fn decode_description(p: &Payload) -> String {
    let end = p.iter().position(|&b| b == 0).unwrap_or(PAYLOAD);
    String::from_utf8_lossy(p.get(..end).unwrap_or_default()).into_owned()
}

/// Encodes a NodeDescription (cut at 64 bytes).
pub fn encode_description(text: &str) -> Payload {
    let mut p = [0; PAYLOAD];
    for (d, s) in p.iter_mut().zip(text.bytes()) {
        *d = s;
    }
    p
}

/// The modifier of a VLArbitrationTable block of `port` (block 1–4: low 0–31, low 32–63, high
/// 0–31, high 32–63).
pub fn vlarb_modifier(block: u8, port: u8) -> u32 {
    (u32::from(block) << 16) | u32::from(port)
}

/// The modifier of a switch's SLtoVLMappingTable for (input, output).
pub fn sl2vl_modifier(in_port: u8, out_port: u8) -> u32 {
    (u32::from(in_port) << 8) | u32::from(out_port)
}

/// The modifier addressing VF `vf` through its hypervisor's port, the `sim` fabric's own
/// convention (no IBA attribute does this): bit 31 set, the VF in bits 30:16, and below it
/// what the attribute takes (the port for PortInfo, the block for P_KeyTable).
pub fn vf_modifier(vf: u8, low: u16) -> u32 {
    0x8000_0000 | (u32::from(vf) << 16) | u32::from(low)
}

/// The modifier of a MulticastForwardingTable block: `position` (ports `16·position ..=
/// 16·position + 15`) in bits 31:28, the block (MLIDs `0xC000 + 32·block ..`) in bits 8:0.
pub fn mft_modifier(block: u16, position: u8) -> u32 {
    (u32::from(position & 15) << 28) | u32::from(block & 0x1ff)
}

/// A MulticastForwardingTable block: 32 port masks, big-endian, entry `k` for MLID
/// `0xC000 + 32·block + k`, bit `j` for port `16·position + j`.
pub fn decode_mft(p: &Payload) -> [u16; MFT_BLOCK] {
    decode_words(p)
}

/// Encodes a MulticastForwardingTable block.
pub fn encode_mft(masks: &[u16; MFT_BLOCK]) -> Payload {
    encode_words(masks)
}

/// Positions (16 ports each) a switch with `num_ports` ports has in its MFT: ports 0 (its
/// own) to `num_ports`.
pub fn mft_positions(num_ports: u8) -> u8 {
    num_ports / 16 + 1
}

/// The modifier of a P_KeyTable block: the block, and on a switch the port in bits 31:16.
pub fn pkey_modifier(block: u16, switch_port: Option<u8>) -> u32 {
    u32::from(block) | switch_port.map_or(0, |p| u32::from(p) << 16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A NodeInfo captured from ibsim (`smpquery -D nodeinfo 0`, raw): a 36-port switch.
    #[test]
    fn node_info_at_the_iba_offsets() {
        let mut p = [0u8; PAYLOAD];
        p[..4].copy_from_slice(&[1, 1, 2, 36]);
        p[12..20].copy_from_slice(&0xf452_1403_0000_0100u64.to_be_bytes());
        p[20..28].copy_from_slice(&0xf452_1403_0000_0100u64.to_be_bytes());
        p[28..30].copy_from_slice(&[0, 8]);
        p[36] = 5;
        let n = NodeInfo::decode(&p);
        assert_eq!(n.node_type, NodeType::Switch);
        assert_eq!(n.num_ports, 36);
        assert_eq!(n.node_guid, 0xf452_1403_0000_0100);
        assert_eq!(n.partition_cap, 8);
        assert_eq!(n.local_port, 5);
        assert_eq!(NodeInfo::decode(&n.encode()), n);
    }

    #[test]
    fn port_info_fields_and_bits() {
        let mut p = [0u8; PAYLOAD];
        p[16..18].copy_from_slice(&0x0123u16.to_be_bytes());
        p[32] = 0x24; // speed supported 2, state Active
        p[33] = 0x52; // phys LinkUp, default state 2
        p[34] = 0b01_010_000; // protect bits 1, LMC 2
        p[37] = 0x45; // VLCap 4
        p[43] = 0x3c; // OperationalVLs 3, enforcement bits
        let mut i = PortInfo::decode(&p);
        assert_eq!(i.lid, 0x123);
        assert_eq!(i.link_state, LinkState::Active);
        assert_eq!(
            (i.phys_state, i.lmc, i.vl_cap, i.operational_vls),
            (5, 2, 4, 3)
        );
        i.lid = 7;
        i.lmc = 0;
        i.link_state = LinkState::NoChange;
        i.operational_vls = 4;
        let mut q = p;
        i.encode_into(&mut q);
        assert_eq!(&q[16..18], &[0, 7]);
        assert_eq!(q[32], 0x20, "speed bits kept, state no-change");
        assert_eq!(q[33], 0x02, "physical state written as no-change");
        assert_eq!(q[34], 0b01_000_000, "protect bits kept");
        assert_eq!(q[43], 0x4c, "enforcement bits kept");
        // As a device holds it: the physical state, local port and capabilities too.
        i.phys_state = 2;
        i.local_port = 9;
        i.vl_cap = 1;
        i.vlarb_high_cap = 8;
        i.vlarb_low_cap = 7;
        i.encode_held_into(&mut q);
        assert_eq!((q[28], q[33], q[37], q[39], q[40]), (9, 0x22, 0x15, 8, 7));
        assert_eq!(PortInfo::decode(&q), i);
        let s = SwitchInfo {
            linear_fdb_cap: 0xc000,
            linear_fdb_top: 0x0102,
            partition_enforcement_cap: 64,
            multicast_fdb_cap: 0x0400,
            multicast_fdb_top: 0xc01f,
        };
        let mut p = [0u8; PAYLOAD];
        s.encode_held_into(&mut p);
        assert_eq!(
            (&p[..2], &p[4..8], &p[14..16], &p[18..20]),
            (
                &[0xc0, 0][..],
                &[4, 0, 1, 2][..],
                &[0, 64][..],
                &[0xc0, 0x1f][..]
            )
        );
        assert_eq!(SwitchInfo::decode(&p), s);
        // CapabilityMask at bytes 20..24, IsMulticastFDBTopSupported bit 30.
        let mut q = [0u8; PAYLOAD];
        q[20] = 0x40;
        assert_eq!(PortInfo::decode(&q).capability_mask, CAP_MCAST_FDB_TOP);
    }

    #[test]
    fn sl2vl_nibbles_sl0_high() {
        let mut vls = [0u8; 16];
        for (sl, v) in vls.iter_mut().enumerate() {
            *v = (sl % 8) as u8;
        }
        let p = encode_sl2vl(&vls);
        assert_eq!(&p[..8], &[0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67]);
        assert_eq!(decode_sl2vl(&p), vls);
    }

    /// The MulticastForwardingTable as IBA (table 150) and ibsim's `do_multicastforwtbl` lay
    /// it out: the position in the modifier's top 4 bits, the block in its low 9; 32
    /// big-endian masks, bit `j` port `16·position + j`.
    #[test]
    fn mft_blocks_at_the_iba_offsets() {
        assert_eq!(mft_modifier(3, 0), 3);
        assert_eq!(mft_modifier(511, 2), 0x2000_01ff);
        assert_eq!(Attr::Mft.id(), 0x001b);
        assert_eq!(Attr::from_id(0x001b), Some(Attr::Mft));
        let mut m = [0u16; MFT_BLOCK];
        m[0] = 0x0006; // ports 1 and 2 (position 0)
        m[31] = 0x8001;
        let p = encode_mft(&m);
        assert_eq!(&p[..2], &[0, 6]);
        assert_eq!(&p[62..], &[0x80, 1]);
        assert_eq!(decode_mft(&p), m);
        // ibsim's numportmask: (ports + 16) / 16.
        for (ports, want) in [(8, 1), (15, 1), (16, 2), (36, 3), (255, 16)] {
            assert_eq!(mft_positions(ports), want, "{ports} ports");
        }
    }

    #[test]
    fn dr_paths_read_and_print() {
        assert_eq!(DrPath::parse("0,1,3"), Some(DrPath(vec![1, 3])));
        assert_eq!(DrPath::parse("0"), Some(DrPath::local()));
        assert_eq!(DrPath(vec![1, 3]).to_string(), "0,1,3");
        for bad in ["", "1,2", "0,0", "0,256", "0,x"] {
            assert_eq!(DrPath::parse(bad), None, "{bad}");
        }
        let mut p = DrPath::local();
        for _ in 0..MAX_HOPS {
            p = p.then(1).unwrap();
        }
        assert_eq!(p.then(1), None);
    }

    #[test]
    fn the_active_speed_is_the_extended_one_where_it_holds_one() {
        use weft_fabric::Speed;
        let mut p = [0u8; PAYLOAD];
        // LinkSpeedActive QDR (byte 35's high nibble), no extended speed: QDR.
        p[35] = 4 << 4;
        assert_eq!(PortInfo::decode(&p).speed(), Some(Speed::QDR));
        // LinkSpeedExtActive (byte 62's high nibble) wins: 1 FDR, 2 EDR, 4 HDR, 8 NDR.
        for (ext, speed) in [
            (1, Speed::FDR),
            (2, Speed::EDR),
            (4, Speed::HDR),
            (8, Speed::NDR),
        ] {
            p[62] = ext << 4;
            assert_eq!(PortInfo::decode(&p).speed(), Some(speed));
        }
        // Several bits (not one speed), or nothing: none.
        p[62] = 3 << 4;
        assert_eq!(PortInfo::decode(&p).speed(), None);
        p[62] = 0;
        p[35] = 0;
        assert_eq!(PortInfo::decode(&p).speed(), None);
    }

    proptest! {
        #[test]
        fn any_payload_decodes_and_round_trips(bytes in proptest::collection::vec(any::<u8>(), PAYLOAD)) {
            let mut p = [0u8; PAYLOAD];
            p.copy_from_slice(&bytes);
            let _ = NodeInfo::decode(&p);
            let _ = SwitchInfo::decode(&p);
            let _ = decode_description(&p);
            // Re-encoding what was decoded changes nothing but no-change fields.
            let i = PortInfo::decode(&p);
            let mut q = p;
            i.encode_into(&mut q);
            prop_assert_eq!(PortInfo { phys_state: 0, ..i }, PortInfo { phys_state: 0, ..PortInfo::decode(&q) });
            let s = SwitchInfo::decode(&p);
            let mut q = p;
            s.encode_into(&mut q);
            prop_assert_eq!(q, p);
            // As a device holds them: every field read back, every other bit kept.
            let mut q = p;
            i.encode_held_into(&mut q);
            prop_assert_eq!(q, p);
            let mut q = p;
            s.encode_held_into(&mut q);
            prop_assert_eq!(q, p);
            prop_assert_eq!(encode_pkeys(&decode_pkeys(&p)), p);
            prop_assert_eq!(encode_mft(&decode_mft(&p)), p);
            prop_assert_eq!(decode_sl2vl(&encode_sl2vl(&decode_sl2vl(&p))), decode_sl2vl(&p));
            prop_assert_eq!(decode_vlarb(&encode_vlarb(&decode_vlarb(&p))), decode_vlarb(&p));
        }
    }
}
