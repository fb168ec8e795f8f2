//! What the multicast checks report: the traffic a verdict covers, and failures by pattern.

use super::flows;
use crate::report::{Endpoint, FailureReason, NodeRef};
use serde::{Deserialize, Serialize};

/// What traffic a verdict covers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Traffic {
    /// Multicast groups whose trees are in the proof (0: unicast only).
    pub multicast_groups: u64,
    /// Of those, groups no group record names: members inferred from the MFTs, SL 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub inferred_groups: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Traffic {
    /// The traffic of `state`'s multicast (its groups and the MLIDs its MFTs program).
    pub fn of(state: &weft_fabric::FabricState) -> Traffic {
        let flows = flows(state);
        Traffic {
            multicast_groups: flows.len() as u64,
            inferred_groups: flows.iter().filter(|f| f.inferred).count() as u64,
        }
    }

    /// "unicast and multicast (N groups)", or "unicast only: no multicast tables were given".
    pub fn describe(&self) -> String {
        match (self.multicast_groups, self.inferred_groups) {
            (0, _) => "unicast only: no multicast tables were given".to_owned(),
            (n, 0) => format!("unicast and multicast ({n} group{})", plural(n)),
            (n, k) => format!(
                "unicast and multicast ({n} group{}; members of {k} inferred from the MFTs, SL 0)",
                plural(n)
            ),
        }
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// What went wrong with a group's copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McProblem {
    /// A copy comes back to a switch it already passed: the tree has a loop.
    Loop,
    /// A receiver gets more than one copy of one packet.
    Duplicate,
    /// A receiver gets no copy.
    Undelivered,
}

impl McProblem {
    /// For sentences.
    pub fn describe(self) -> &'static str {
        match self {
            McProblem::Loop => "copies come back to a switch they passed (a loop in the tree)",
            McProblem::Duplicate => "receivers get more than one copy",
            McProblem::Undelivered => "receivers get no copy",
        }
    }
}

/// Why a copy did not reach a receiver, at the place it stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum McStop {
    /// The receiver's switch's mask for the MLID lacks the receiver's port.
    NotInMask {
        /// The receiver's switch.
        switch: NodeRef,
        /// The port it is on (0: the switch itself).
        port: u8,
    },
    /// No copy from this sender reaches the receiver's switch: the tree does not join them.
    NotJoined {
        /// The receiver's switch.
        switch: NodeRef,
    },
    /// A copy was dropped on its way: the port cannot send it.
    Dropped {
        /// Where.
        switch: NodeRef,
        /// Why.
        reason: FailureReason,
    },
    /// The sender cannot inject the group's SL.
    NotInjected {
        /// Why.
        reason: FailureReason,
    },
}

/// One pattern of failed copies: a group and a problem, counted over (sender, receiver)
/// pairs, with one example.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct McFailure {
    /// The group's MLID.
    pub mlid: u16,
    /// What goes wrong.
    pub problem: McProblem,
    /// (Sender, receiver) pairs it affects; for a loop, senders whose copies loop.
    pub pairs: u64,
    /// The example's sender.
    pub sender: Endpoint,
    /// The example's receiver (none for a loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver: Option<Endpoint>,
    /// For a loop: the switch a copy comes back to and the ports it entered on, first and
    /// again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_at: Option<(NodeRef, u8, u8)>,
    /// For a missing copy: where it stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<McStop>,
}

impl McFailure {
    /// One sentence: the group, what goes wrong, how many pairs, and the example with the
    /// switch and ports where it happens.
    pub fn describe(&self) -> String {
        let port = |e: &Endpoint| {
            if e.port == 0 {
                format!("`{}`", e.node.name)
            } else {
                format!("`{}` port {}", e.node.name, e.port)
            }
        };
        let head = format!("multicast group {:#06x}:", self.mlid);
        match self.problem {
            McProblem::Loop => {
                let at = self
                    .loop_at
                    .as_ref()
                    .map(|(x, a, b)| {
                        format!(
                            " to switch `{}` (in on port {a}, then again on port {b})",
                            x.name
                        )
                    })
                    .unwrap_or_default();
                format!(
                    "{head} copies from {} sender(s) come back{at}, a loop in the tree; e.g. sent by {}",
                    self.pairs,
                    port(&self.sender)
                )
            }
            McProblem::Duplicate | McProblem::Undelivered => {
                let what = if self.problem == McProblem::Duplicate {
                    "get more than one copy of a packet"
                } else {
                    "get no copy"
                };
                let to = self
                    .receiver
                    .as_ref()
                    .map(|r| format!(" → {}", port(r)))
                    .unwrap_or_default();
                let why = match &self.stop {
                    None => String::new(),
                    Some(McStop::NotInMask { switch, port }) => format!(
                        ": switch `{}`'s MFT entry lacks {}",
                        switch.name,
                        if *port == 0 {
                            "port 0 (the switch itself)".to_owned()
                        } else {
                            format!("port {port}")
                        }
                    ),
                    Some(McStop::NotJoined { switch }) => format!(
                        ": no copy reaches switch `{}` (the tree does not join them)",
                        switch.name
                    ),
                    Some(McStop::Dropped { switch, reason }) => {
                        format!(
                            ": a copy is dropped at `{}`: {}",
                            switch.name,
                            reason.describe()
                        )
                    }
                    Some(McStop::NotInjected { reason }) => {
                        format!(
                            ": the sender cannot send the group's SL: {}",
                            reason.describe()
                        )
                    }
                };
                format!(
                    "{head} {} (sender, receiver) pair(s) {what}; e.g. {}{to}{why}",
                    self.pairs,
                    port(&self.sender)
                )
            }
        }
    }
}

/// What the multicast check found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McReport {
    /// The traffic covered.
    pub traffic: Traffic,
    /// (Sender, receiver) pairs required.
    pub pairs: u64,
    /// Route states (switch, input port, input VL) the groups' copies pass through.
    pub states: u64,
    /// Failed pairs (and looping senders) in all.
    pub failed: u64,
    /// Of those, senders whose copies come back to a switch, and pairs with duplicate copies:
    /// failures that are not just a copy missing (a tree being built or taken down has only
    /// those).
    #[serde(default)]
    pub looped_or_duplicated: u64,
    /// Patterns of failures, by MLID and problem (at most `max_listed`).
    pub failures: Vec<McFailure>,
}
