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
    /// The P_Key tables match the declared partitions (when asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolated: Option<Outcome>,
    /// Every pair's alternate path is disjoint from its primary (when asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apm_disjoint: Option<Outcome>,
    /// Every multicast group's tree delivers exactly once (when asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multicast_connected: Option<Outcome>,
}

/// The outcome of a property that was not asked for.
static NOT_ASKED: Outcome = Outcome::Unknown(String::new());

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
    /// The VL is operational on the link but at or above the VLs the state's SM operates
    /// ([`FabricState::max_vls`](weft_fabric::FabricState)).
    VlAboveMaxVls {
        /// Output port.
        port: u8,
        /// The VL.
        vl: u8,
        /// The data VLs the SM operates (VLs `0..max_vls`).
        max_vls: u8,
    },
    /// The port's VL arbitration never sends the VL.
    VlNotScheduled {
        /// Output port.
        port: u8,
        /// The VL.
        vl: u8,
        /// Why.
        why: Unscheduled,
    },
}

/// Why a port's VL arbitration never sends a VL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unscheduled {
    /// The state records no VL arbitration for the port, which then sends VL 0 only.
    NoTable,
    /// Neither arbitration table names the VL.
    NotListed,
    /// Every entry naming the VL has weight 0.
    ZeroWeight,
}

impl FailureReason {
    /// A short lowercase description, a verb phrase about the node where the route fails
    /// ("`leaf3` has no forwarding entry (255)").
    pub fn describe(&self) -> String {
        match self {
            FailureReason::Unset => "has no forwarding entry (255)".to_owned(),
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
            FailureReason::Loop => "sends it round a forwarding loop".to_owned(),
            FailureReason::Sl2VlUnassigned { in_port, out_port } => {
                format!("has no SL2VL row for ports {in_port} → {out_port}")
            }
            FailureReason::VlNotOperational { port, vl, vl_cap } => format!(
                "sends it on VL {vl} out of port {port}, which is not operational (VLCap {vl_cap}{})",
                if *vl == 15 { ", VL 15 drops data" } else { "" }
            ),
            FailureReason::VlAboveMaxVls { port, vl, max_vls } => format!(
                "sends it on VL {vl} out of port {port}, but the SM operates VLs 0..={} only (max_vls {max_vls})",
                max_vls.saturating_sub(1)
            ),
            FailureReason::VlNotScheduled { port, vl, why } => match why {
                Unscheduled::NoTable => format!(
                    "sends it on VL {vl} out of port {port}, which has no VL arbitration table and so sends VL 0 only"
                ),
                Unscheduled::NotListed => format!(
                    "sends it on VL {vl} out of port {port}, whose VL arbitration tables do not name VL {vl}: it is never sent"
                ),
                Unscheduled::ZeroWeight => format!(
                    "sends it on VL {vl} out of port {port}, whose VL arbitration gives VL {vl} weight 0 in every entry: it is never sent"
                ),
            },
        }
    }
}

/// A [`FailureReason`] without its numbers: what a pattern of failures has in common.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum FailureKind {
    /// No forwarding entry (255).
    Unset,
    /// An entry pointing at a port the switch does not have.
    PortMissing,
    /// An entry (or the source) pointing at a port with no cable.
    PortUnwired,
    /// An entry pointing at a port whose link or far node is down.
    PortDown,
    /// Delivered to a port that does not own the destination.
    Misdelivered,
    /// A forwarding loop.
    Loop,
    /// No SL2VL row for an (input, output) pair.
    Sl2VlUnassigned,
    /// A hop on VL 15 or on a VL not below the VLCap.
    VlNotOperational,
    /// A hop on a VL at or above the VLs the SM operates.
    VlAboveMaxVls,
    /// A hop on a VL the port's arbitration never sends.
    VlNotScheduled,
}

impl FailureReason {
    /// The kind, without port and VL numbers.
    pub fn kind(&self) -> FailureKind {
        match self {
            FailureReason::Unset => FailureKind::Unset,
            FailureReason::PortMissing { .. } => FailureKind::PortMissing,
            FailureReason::PortUnwired { .. } => FailureKind::PortUnwired,
            FailureReason::PortDown { .. } => FailureKind::PortDown,
            FailureReason::Misdelivered { .. } => FailureKind::Misdelivered,
            FailureReason::Loop => FailureKind::Loop,
            FailureReason::Sl2VlUnassigned { .. } => FailureKind::Sl2VlUnassigned,
            FailureReason::VlNotOperational { .. } => FailureKind::VlNotOperational,
            FailureReason::VlAboveMaxVls { .. } => FailureKind::VlAboveMaxVls,
            FailureReason::VlNotScheduled { .. } => FailureKind::VlNotScheduled,
        }
    }
}

impl FailureKind {
    /// A short lowercase description.
    pub fn describe(self) -> &'static str {
        match self {
            FailureKind::Unset => "no forwarding entry (255)",
            FailureKind::PortMissing => "an entry for a port the switch does not have",
            FailureKind::PortUnwired => "an entry for a port with no cable",
            FailureKind::PortDown => "an entry for a port whose link is down",
            FailureKind::Misdelivered => "delivered to a port that does not own the destination",
            FailureKind::Loop => "a forwarding loop",
            FailureKind::Sl2VlUnassigned => "no SL2VL row for the ports",
            FailureKind::VlNotOperational => "a hop on a VL that is not operational",
            FailureKind::VlAboveMaxVls => "a hop on a VL above the VLs the SM operates",
            FailureKind::VlNotScheduled => "a hop on a VL the port's arbitration never sends",
        }
    }
}

/// What kind of node, for patterns: its kind and tree level (leaf switches are level 1; end
/// nodes have none; a switch's level comes from the model, else from its distance to the
/// nearest switch with end nodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NodeClass {
    /// Switch, HCA or router.
    pub kind: weft_fabric::NodeKind,
    /// Tree level of a switch, when known.
    pub level: Option<u8>,
}

impl NodeClass {
    /// `HCA`, `router`, `level-3 switch`, `switch`.
    pub fn describe(self) -> String {
        match (self.kind, self.level) {
            (weft_fabric::NodeKind::Switch, Some(l)) => format!("level-{l} switch"),
            (weft_fabric::NodeKind::Switch, None) => "switch".to_owned(),
            (weft_fabric::NodeKind::Hca, _) => "HCA".to_owned(),
            (weft_fabric::NodeKind::Router, _) => "router".to_owned(),
        }
    }

    /// The plural of [`NodeClass::describe`]: `HCAs`, `level-1 switches`.
    pub fn describe_plural(self) -> String {
        let one = self.describe();
        if one.ends_with("switch") {
            one + "es"
        } else {
            one + "s"
        }
    }
}

/// One failed route: where and why it fails.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FailedRoute {
    /// Destination LID.
    pub dlid: Lid,
    /// Source port.
    pub src: Endpoint,
    /// Service level.
    pub sl: u8,
    /// The port owning `dlid`.
    pub dst: Endpoint,
    /// Where the route fails.
    pub at: NodeRef,
    /// Why.
    pub reason: FailureReason,
}

/// A failed route walked hop by hop until it fails (replayable on the tables).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Witness {
    /// Where the route fails.
    pub at: NodeRef,
    /// Why.
    pub reason: FailureReason,
    /// The route.
    pub route: Route,
}

/// Failed routes with the same reason, from the same kind of source to the same kind of
/// destination, failing at the same kind of place: counted exactly, a few listed and walked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailurePattern {
    /// Why they fail.
    pub reason: FailureKind,
    /// The kind of source.
    pub source: NodeClass,
    /// The kind of destination.
    pub destination: NodeClass,
    /// They fail at their source (its own entry, cable or injection VL).
    pub at_source: bool,
    /// The kind of node they fail at.
    pub at: NodeClass,
    /// Failed routes (source, destination LID, SL).
    pub routes: u64,
    /// Distinct source ports.
    pub sources: u64,
    /// Distinct destination LIDs.
    pub destinations: u64,
    /// Distinct nodes they fail at.
    pub at_nodes: u64,
    /// Some of them (the first by destination LID, source, SL), at most
    /// `Options::max_listed` over the report.
    pub listed: Vec<FailedRoute>,
    /// The first few walked hop by hop.
    pub witnesses: Vec<Witness>,
}

/// Sizes of what was checked.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Source ports (end-node ports and switches).
    pub sources: u64,
    /// Destination LIDs.
    pub destinations: u64,
    /// Of which switch LIDs.
    pub switch_destinations: u64,
    /// Routes (source, destination LID, SL) checked.
    pub routes: u64,
    /// Channels in the dependency graph.
    pub channels: u64,
    /// Dependencies.
    pub dependencies: u64,
    /// VLs in use (highest VL + 1).
    pub vls: u8,
}

/// Everything the explicit engine found. Its size is bounded by the fabric and
/// `Options::max_listed`, never by the number of failures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// Fabric name.
    pub fabric: String,
    /// Which pairs were required.
    pub scope: crate::Scope,
    /// The properties asked for.
    pub properties: Vec<crate::Property>,
    /// The verdict.
    pub verdict: Verdict,
    /// Sizes.
    pub stats: Stats,
    /// Credit loops listed (one per strongly connected component, at most
    /// `Options::max_listed`).
    pub credit_loops: Vec<CreditLoop>,
    /// Credit loops (strongly connected components) in all.
    pub credit_loops_total: u64,
    /// Every pattern of failed routes.
    pub failures: Vec<FailurePattern>,
    /// Failed routes in all.
    pub failed_routes: u64,
    /// What `isolated` found, when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<crate::Isolation>,
    /// What `apm_disjoint` found, when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apm: Option<crate::apm::Apm>,
    /// The traffic the verdict covers: unicast, and the multicast groups whose trees are in
    /// the dependency graph.
    pub traffic: crate::Traffic,
    /// What the multicast check found, when the state has multicast.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multicast: Option<crate::McReport>,
    /// The certificate, when proven and asked for.
    #[serde(skip)]
    pub certificate: Option<Certificate>,
}

/// Why a proof over static tables does not cover a fabric whose switches route adaptively.
pub const ADAPTIVE_ROUTING: &str = "not proven: adaptive routing — the switches choose among output ports at run time, and a proof over the static forwarding tables does not cover those paths";

impl Verdict {
    /// The verdict for a fabric that routes adaptively: what the static tables proved about
    /// routes (`deadlock_free`, `connected`, `multicast_connected`) becomes unknown; a
    /// violation stays one (the static paths are still taken).
    pub fn under_adaptive_routing(&mut self) {
        let unknown = |o: &mut Outcome| {
            if *o == Outcome::Proven {
                *o = Outcome::Unknown(ADAPTIVE_ROUTING.to_owned());
            }
        };
        unknown(&mut self.deadlock_free);
        unknown(&mut self.connected);
        if let Some(o) = self.multicast_connected.as_mut() {
            unknown(o);
        }
    }

    /// The outcome of one property (unknown when it was not asked).
    pub fn outcome(&self, p: crate::Property) -> &Outcome {
        match p {
            crate::Property::DeadlockFree => &self.deadlock_free,
            crate::Property::Connected => &self.connected,
            crate::Property::Isolated => self.isolated.as_ref().unwrap_or(&NOT_ASKED),
            crate::Property::ApmDisjoint => self.apm_disjoint.as_ref().unwrap_or(&NOT_ASKED),
            crate::Property::MulticastConnected => {
                self.multicast_connected.as_ref().unwrap_or(&NOT_ASKED)
            }
        }
    }
}

impl Report {
    /// [`Verdict::under_adaptive_routing`], and no certificate (it would prove the static
    /// tables only).
    pub fn under_adaptive_routing(&mut self) {
        self.verdict.under_adaptive_routing();
        self.certificate = None;
    }

    /// The outcome of one property.
    pub fn outcome(&self, p: crate::Property) -> &Outcome {
        self.verdict.outcome(p)
    }

    /// Whether every property asked for is proven.
    pub fn is_proven(&self) -> bool {
        !self.properties.is_empty()
            && self
                .properties
                .iter()
                .all(|&p| *self.outcome(p) == Outcome::Proven)
    }

    /// Whether a property asked for could not be decided.
    pub fn is_unknown(&self) -> bool {
        self.properties
            .iter()
            .any(|&p| matches!(self.outcome(p), Outcome::Unknown(_)))
    }

    /// Every listed failed route, sorted.
    pub fn listed_failures(&self) -> Vec<&FailedRoute> {
        let mut v: Vec<&FailedRoute> = self.failures.iter().flat_map(|p| &p.listed).collect();
        v.sort();
        v
    }

    /// Every listed failed (source, destination LID) pair, sorted and deduplicated.
    pub fn unreachable_pairs(&self) -> Vec<(Endpoint, Lid)> {
        let mut v: Vec<(Endpoint, Lid)> = self
            .listed_failures()
            .into_iter()
            .map(|f| (f.src.clone(), f.dlid))
            .collect();
        v.sort();
        v.dedup();
        v
    }
}
