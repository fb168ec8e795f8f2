//! What checking a step finds: its verdicts, witnesses (a forwarding loop, a broken route)
//! and the LFT entries it writes.

use crate::report::{Channel, Endpoint, FailureReason, NodeRef, Outcome};
use serde::{Deserialize, Serialize};
use weft_fabric::{Lid, NodeId};

/// Which of a switch's two entries a hop used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Entry {
    /// The entry before the step.
    Before,
    /// The entry the step writes.
    After,
    /// Both are the same.
    Unchanged,
}

/// One hop of a transient forwarding loop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopHop {
    /// The switch.
    pub node: NodeRef,
    /// The port it sends the destination out of.
    pub out_port: u8,
    /// Which of its entries does so.
    pub entry: Entry,
}

/// A forwarding loop some mix of the step's writes makes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForwardingLoop {
    /// The destination LID.
    pub dlid: Lid,
    /// The port owning it.
    pub dst: Endpoint,
    /// The switches of the loop, in order; the last sends back to the first.
    pub hops: Vec<LoopHop>,
}

/// A route that arrives before the step and fails in some mix of its writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokenRoute {
    /// The switch the route enters (or starts at).
    pub from: NodeRef,
    /// The destination LID.
    pub dlid: Lid,
    /// The port owning it.
    pub dst: Endpoint,
    /// Where it fails.
    pub at: NodeRef,
    /// With which entry.
    pub entry: Entry,
    /// Why.
    pub reason: FailureReason,
}

/// What checking one step found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepCheck {
    /// No mix has a forwarding loop.
    pub loop_free: Outcome,
    /// The union channel dependency graph is acyclic.
    pub deadlock_free: Outcome,
    /// Every route that arrives before the step arrives in every mix.
    pub connected: Outcome,
    /// No mix of its P_Key writes lets two end ports talk that nothing allows, and after the
    /// last step the tables are isolated ([`crate::partition_mix`]); proven for a step that
    /// writes no P_Key.
    #[serde(default = "proven")]
    pub isolated: Outcome,
    /// A pair of end ports that breaks `isolated`, when one does: in a mix of the step's
    /// writes, or (`breach_after_plan`) in the tables the last step leaves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breach: Option<crate::isolation::Breach>,
    /// Whether `breach` is of the tables after the plan.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub breach_after_plan: bool,
    /// A transient forwarding loop, when there is one.
    pub forwarding_loop: Option<ForwardingLoop>,
    /// A cycle of channels in the union dependency graph, when there is one.
    pub credit_loop: Vec<Channel>,
    /// A route the step breaks, when there is one.
    pub broken: Option<BrokenRoute>,
    /// LFT entries the step changes.
    pub changed_entries: u64,
    /// Routes (source, destination) that fail before the step (a fault's doing), and after it.
    pub failing_before: u64,
    /// Routes that fail after the step.
    pub failing_after: u64,
    /// Routes toward destinations out of service (break-before-make: see
    /// [`Transition::drop_destinations`](super::Transition::drop_destinations)) that fail
    /// before or after the step beyond those that failed at the start: the step's outage. For a
    /// step that only takes entries away, or only puts them back, every mix fails no more routes
    /// than one of its two ends.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outage_routes: u64,
    /// Destinations out of service after the step.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub out_of_service: u64,
}

pub(super) fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl StepCheck {
    /// Whether every part is proven.
    pub fn is_proven(&self) -> bool {
        [
            &self.loop_free,
            &self.deadlock_free,
            &self.connected,
            &self.isolated,
        ]
        .iter()
        .all(|o| **o == Outcome::Proven)
    }
}

pub(super) fn proven() -> Outcome {
    Outcome::Proven
}
/// Why two states cannot be the two ends of a step.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum TransitionError {
    /// They differ in more than their LFTs.
    #[error("the two states differ in {0}, not only in their forwarding tables")]
    #[diagnostic(code(weft::transition::differ))]
    Differ(&'static str),
}
/// One LFT entry a step writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Change {
    /// The switch.
    pub switch: NodeId,
    /// The LID.
    pub lid: Lid,
    /// The port it forwards the LID to (255: no entry).
    pub port: u8,
}
