//! The attributes of nodes and ports, plain values with no fabric around them: what a node is
//! ([`NodeKind`]) and does ([`Role`]), and a port's lane [`Speed`], link [`Width`], [`Mtu`] and
//! shared [`PortCaps`].

use serde::{Deserialize, Serialize};
use std::fmt;

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// A switch: forwards by LFT, has a management port 0 with the switch's LID.
    Switch,
    /// A host channel adapter (end node).
    Hca,
    /// A router (end node for unicast routing purposes).
    Router,
}

impl NodeKind {
    /// The keyword the weft language uses for this kind.
    pub fn keyword(self) -> &'static str {
        match self {
            NodeKind::Switch => "switch",
            NodeKind::Hca => "hca",
            NodeKind::Router => "router",
        }
    }

    /// The kind with this keyword.
    pub fn from_keyword(word: &str) -> Option<NodeKind> {
        [NodeKind::Switch, NodeKind::Hca, NodeKind::Router]
            .into_iter()
            .find(|k| k.keyword() == word)
    }
}

impl fmt::Display for NodeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// What an end node is for. Hosts run the applications; the other roles are *service nodes*
/// (a SHARP Aggregation Node inside a switch, a storage or IO target, a management node such as
/// the UFM or SM server): they get LIDs and are routed and proven like every end port, but take
/// no part in finding a fat-tree's leaves, in host counts, in traffic patterns or in tenants'
/// `hosts`. A switch's role is always [`Role::Host`] (it means nothing there).
///
/// Declared in the language (`role = aggregation`), given on import (`weft import --role`),
/// or recognised ([`crate::roles`]); `state.json` records it when it is not `host`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A compute host (the default).
    #[default]
    Host,
    /// A SHARP Aggregation Node: the in-network reduction engine of a Quantum switch, seen as
    /// a one-port CA on the switch's extra port.
    Aggregation,
    /// A storage or IO target (OpenSM's `io_guid_file`).
    Storage,
    /// A management node (UFM, the SM's server, monitoring).
    Management,
}

impl Role {
    /// Every role, the default first.
    pub const ALL: [Role; 4] = [
        Role::Host,
        Role::Aggregation,
        Role::Storage,
        Role::Management,
    ];

    /// The word the language and `weft import --role` use.
    pub fn keyword(self) -> &'static str {
        match self {
            Role::Host => "host",
            Role::Aggregation => "aggregation",
            Role::Storage => "storage",
            Role::Management => "management",
        }
    }

    /// The role with this word.
    pub fn from_keyword(word: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.keyword() == word)
    }

    /// Whether this is a host (not a service node).
    pub fn is_host(&self) -> bool {
        *self == Role::Host
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// Per-lane signalling rate of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Speed {
    /// 2.5 Gb/s per lane.
    SDR,
    /// 5 Gb/s per lane.
    DDR,
    /// 10 Gb/s per lane.
    QDR,
    /// 10.3125 Gb/s per lane (Mellanox FDR10).
    FDR10,
    /// 14.0625 Gb/s per lane.
    FDR,
    /// 25.78125 Gb/s per lane.
    EDR,
    /// 53.125 Gb/s per lane (PAM4).
    HDR,
    /// 106.25 Gb/s per lane.
    NDR,
    /// 212.5 Gb/s per lane.
    XDR,
}

impl Speed {
    /// Every speed, slowest first.
    pub const ALL: [Speed; 9] = [
        Speed::SDR,
        Speed::DDR,
        Speed::QDR,
        Speed::FDR10,
        Speed::FDR,
        Speed::EDR,
        Speed::HDR,
        Speed::NDR,
        Speed::XDR,
    ];

    /// The name as ibnetdiscover prints it (`SDR`, `EDR`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Speed::SDR => "SDR",
            Speed::DDR => "DDR",
            Speed::QDR => "QDR",
            Speed::FDR10 => "FDR10",
            Speed::FDR => "FDR",
            Speed::EDR => "EDR",
            Speed::HDR => "HDR",
            Speed::NDR => "NDR",
            Speed::XDR => "XDR",
        }
    }

    /// Parses a name as ibnetdiscover prints it, case-insensitively.
    pub fn parse(s: &str) -> Option<Speed> {
        Speed::ALL
            .into_iter()
            .find(|sp| sp.as_str().eq_ignore_ascii_case(s))
    }

    /// Effective data rate of one lane in Mb/s (after encoding).
    pub fn lane_mbps(self) -> u32 {
        match self {
            Speed::SDR => 2_000,
            Speed::DDR => 4_000,
            Speed::QDR => 8_000,
            Speed::FDR10 => 10_000,
            Speed::FDR => 13_640,
            Speed::EDR => 25_000,
            Speed::HDR => 50_000,
            Speed::NDR => 100_000,
            Speed::XDR => 200_000,
        }
    }
}

impl fmt::Display for Speed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Number of lanes of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Width {
    /// One lane.
    #[serde(rename = "1x")]
    X1,
    /// Two lanes.
    #[serde(rename = "2x")]
    X2,
    /// Four lanes.
    #[serde(rename = "4x")]
    X4,
    /// Eight lanes.
    #[serde(rename = "8x")]
    X8,
    /// Twelve lanes.
    #[serde(rename = "12x")]
    X12,
}

impl Width {
    /// Lanes in this width.
    pub fn lanes(self) -> u32 {
        match self {
            Width::X1 => 1,
            Width::X2 => 2,
            Width::X4 => 4,
            Width::X8 => 8,
            Width::X12 => 12,
        }
    }

    /// The width with this many lanes.
    pub fn from_lanes(lanes: u64) -> Option<Width> {
        Some(match lanes {
            1 => Width::X1,
            2 => Width::X2,
            4 => Width::X4,
            8 => Width::X8,
            12 => Width::X12,
            _ => return None,
        })
    }
}

impl fmt::Display for Width {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x", self.lanes())
    }
}

/// A path MTU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "u32", try_from = "u32")]
pub enum Mtu {
    /// 256 bytes.
    M256,
    /// 512 bytes.
    M512,
    /// 1024 bytes.
    M1024,
    /// 2048 bytes.
    M2048,
    /// 4096 bytes.
    M4096,
}

impl Mtu {
    /// The MTU in bytes.
    pub fn bytes(self) -> u32 {
        match self {
            Mtu::M256 => 256,
            Mtu::M512 => 512,
            Mtu::M1024 => 1024,
            Mtu::M2048 => 2048,
            Mtu::M4096 => 4096,
        }
    }

    /// The MTU of this many bytes, if it is one IBA defines.
    pub fn from_bytes(bytes: u64) -> Option<Mtu> {
        Some(match bytes {
            256 => Mtu::M256,
            512 => Mtu::M512,
            1024 => Mtu::M1024,
            2048 => Mtu::M2048,
            4096 => Mtu::M4096,
            _ => return None,
        })
    }

    /// The IBTA enumeration code (`1` = 256 … `5` = 4096).
    pub fn code(self) -> u8 {
        match self {
            Mtu::M256 => 1,
            Mtu::M512 => 2,
            Mtu::M1024 => 3,
            Mtu::M2048 => 4,
            Mtu::M4096 => 5,
        }
    }
}

impl From<Mtu> for u32 {
    fn from(m: Mtu) -> u32 {
        m.bytes()
    }
}

impl TryFrom<u32> for Mtu {
    type Error = String;
    fn try_from(v: u32) -> Result<Mtu, String> {
        Mtu::from_bytes(u64::from(v)).ok_or_else(|| format!("`{v}` is not an InfiniBand MTU"))
    }
}

/// Capabilities every port of a node shares (taken from its hardware model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortCaps {
    /// Fastest supported lane speed.
    pub speed: Speed,
    /// Widest supported link width.
    pub width: Width,
    /// Data VLs supported (VLCap as a count: 1, 2, 4, 8 or 15).
    pub vl_cap: u8,
    /// Largest supported MTU.
    pub mtu: Mtu,
}

impl Default for PortCaps {
    fn default() -> Self {
        PortCaps {
            speed: Speed::EDR,
            width: Width::X4,
            vl_cap: 8,
            mtu: Mtu::M4096,
        }
    }
}
