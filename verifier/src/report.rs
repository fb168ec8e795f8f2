//! What the verifier returns: verdicts, statistics and witnesses, as data (names, not
//! numbers). The CLI renders them; nothing here prints.

use crate::certificate::Certificate;
use serde::{Deserialize, Serialize};
use weft_fabric::{Guid, Lid, NodeId};

/// The result of one check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "result", content = "reason")]
pub enum Outcome {
    /// The property holds.
    Proven,
    /// The property is violated (witnesses in the report).
    Violated,
    /// The engine could not decide (timeout, solver `unknown`); never "proven".
    Unknown(String),
}

/// The verdict of an engine on both properties.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// The channel dependency graph is acyclic.
    pub deadlock_free: Outcome,
    /// Every required route arrives.
    pub connected: Outcome,
}

/// A node, by id, name and GUID.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NodeRef {
    /// Index in the fabric.
    pub id: NodeId,
    /// Name (node description).
    pub name: String,
    /// Node GUID.
    pub guid: Guid,
}

/// A port that sends or receives: an end-node port, or a switch's port 0.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Endpoint {
    /// The node.
    pub node: NodeRef,
    /// The port (0 for a switch).
    pub port: u8,
}

/// A channel: the directed link leaving `node` on `port`, on virtual lane `vl`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Channel {
    /// The node the link leaves.
    pub node: NodeRef,
    /// Its port.
    pub port: u8,
    /// The node at the other end.
    pub to: NodeRef,
    /// The port there.
    pub to_port: u8,
    /// Virtual lane.
    pub vl: u8,
}

/// One hop of a route: the packet is at `node`, came in on `in_port` (0 for the source) and
/// leaves on `out_port` on `vl` (`None` where the hop failed before a VL was known).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hop {
    /// Where the packet is.
    pub node: NodeRef,
    /// The port it came in on (0 at the source).
    pub in_port: u8,
    /// The port it leaves on, when there is one.
    pub out_port: Option<u8>,
    /// The VL it leaves on, when known.
    pub vl: Option<u8>,
}

/// A concrete route: source port, destination LID, SL and the hops taken (up to the failure
/// for a failed route).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    /// Source port.
    pub src: Endpoint,
    /// Destination LID.
    pub dlid: Lid,
    /// The port owning `dlid`.
    pub dst: Endpoint,
    /// Service level.
    pub sl: u8,
    /// Hops, from the source.
    pub hops: Vec<Hop>,
}

/// A dependency between two channels and one route that creates it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    /// The channel a packet holds.
    pub from: Channel,
    /// The channel it waits for.
    pub to: Channel,
    /// A route that takes `from` then `to`.
    pub route: Route,
}

/// A credit loop: a strongly connected set of channels and one cycle through it, each
/// dependency with a route that creates it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreditLoop {
    /// Every channel of the strongly connected component (sorted).
    pub channels: Vec<Channel>,
    /// One cycle in it: `cycle[k].to == cycle[k + 1].from`, the last back to the first.
    pub cycle: Vec<Dependency>,
}

/// Why a route does not arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
#[non_exhaustive]
pub enum FailureReason {
    /// The LFT has no entry (255) for the destination.
    Unset,
    /// The LFT points at a port the switch does not have.
    PortMissing {
        /// The port.
        port: u8,
    },
    /// The LFT (or the source) points at a port with no cable.
    PortUnwired {
        /// The port.
        port: u8,
    },
    /// The link on that port, or the node at its far end, is down.
    PortDown {
        /// The port.
        port: u8,
    },
    /// The packet reaches a port that does not own the destination LID.
    Misdelivered {
        /// The port it leaves on (0: delivered to the switch itself).
        port: u8,
    },
    /// The packet comes back to a switch it already passed.
    Loop,
    /// The switch has SL2VL rows, but none for this (in, out) pair.
    Sl2VlUnassigned {
        /// Input port.
        in_port: u8,
        /// Output port.
        out_port: u8,
    },
    /// The VL is 15 or not below the VLCap of one end of the link.
    VlNotOperational {
        /// Output port.
        port: u8,
        /// The VL.
        vl: u8,
        /// The smaller VLCap of the two ends.
        vl_cap: u8,
    },
}

impl FailureReason {
    /// A short lowercase description.
    pub fn describe(&self) -> String {
        match self {
            FailureReason::Unset => "no forwarding entry (255)".to_owned(),
            FailureReason::PortMissing { port } => {
                format!("forwards to port {port}, which does not exist")
            }
            FailureReason::PortUnwired { port } => {
                format!("forwards to port {port}, which has no cable")
            }
            FailureReason::PortDown { port } => {
                format!("forwards to port {port}, whose link is down")
            }
            FailureReason::Misdelivered { port: 0 } => {
                "delivers to itself, but does not own the destination".to_owned()
            }
            FailureReason::Misdelivered { port } => {
                format!("forwards to port {port}, whose end node does not own the destination")
            }
            FailureReason::Loop => "forwarding loop".to_owned(),
            FailureReason::Sl2VlUnassigned { in_port, out_port } => {
                format!("no SL2VL row for ports {in_port} → {out_port}")
            }
            FailureReason::VlNotOperational { port, vl, vl_cap } => format!(
                "VL {vl} on port {port} is not operational (VLCap {vl_cap}{})",
                if *vl == 15 { ", VL 15 drops data" } else { "" }
            ),
        }
    }
}

/// Failed routes that fail at the same place for the same reason toward one destination.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnreachableGroup {
    /// Destination LID.
    pub dlid: Lid,
    /// The port owning it.
    pub dst: Endpoint,
    /// Where the routes fail.
    pub at: NodeRef,
    /// Why.
    pub reason: FailureReason,
    /// Failed routes (source, SL), sorted; at most `Options::max_listed_routes` over the report.
    pub routes: Vec<(Endpoint, u8)>,
    /// How many routes fail here (listed or not).
    pub total: u64,
    /// One of them, walked until it fails.
    pub witness: Route,
}

/// Sizes of what was checked.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Source ports (end-node ports and switches).
    pub sources: u64,
    /// Destination LIDs.
    pub destinations: u64,
    /// Routes (source, destination LID, SL) checked.
    pub routes: u64,
    /// Channels in the dependency graph.
    pub channels: u64,
    /// Dependencies.
    pub dependencies: u64,
    /// VLs in use (highest VL + 1).
    pub vls: u8,
}

/// Everything the explicit engine found.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// Fabric name.
    pub fabric: String,
    /// Which pairs were required.
    pub scope: crate::Scope,
    /// The verdict.
    pub verdict: Verdict,
    /// Sizes.
    pub stats: Stats,
    /// Every credit loop (one per strongly connected component).
    pub credit_loops: Vec<CreditLoop>,
    /// Every failed route, grouped.
    pub unreachable: Vec<UnreachableGroup>,
    /// Failed routes in all.
    pub failed_routes: u64,
    /// The certificate, when proven and asked for.
    #[serde(skip)]
    pub certificate: Option<Certificate>,
}

impl Report {
    /// Whether both properties are proven.
    pub fn is_proven(&self) -> bool {
        self.verdict.deadlock_free == Outcome::Proven && self.verdict.connected == Outcome::Proven
    }

    /// Every listed failed (source, destination LID) pair, sorted and deduplicated.
    pub fn unreachable_pairs(&self) -> Vec<(Endpoint, Lid)> {
        let mut v: Vec<(Endpoint, Lid)> = self
            .unreachable
            .iter()
            .flat_map(|g| g.routes.iter().map(move |(src, _)| (src.clone(), g.dlid)))
            .collect();
        v.sort();
        v.dedup();
        v
    }
}
