//! The properties the verifier proves. Each has a stable name (used on the command line and in
//! certificates), a stable code for its violations (diagnostics, JSON, SARIF rule ids), a
//! witness type in the [`Report`](crate::Report), and a section in the
//! [`Certificate`](crate::Certificate).
//!
//! | property | proven by | violated by (witness) |
//! |---|---|---|
//! | `deadlock_free` | a rank per channel, increasing along every dependency | a credit loop ([`CreditLoop`](crate::CreditLoop)) |
//! | `connected` (per [`Scope`](crate::Scope)) | a distance label per (destination, switch), decreasing along every next hop | failed routes, grouped ([`UnreachableGroup`](crate::UnreachableGroup)) |
//! | `isolated` (states that declare partitions) | the P_Key relation recomputed from the tables equals the declared one | a pair of end ports ([`Breach`](crate::Breach)) |
//! | `apm_disjoint` (LMC > 0; asked for) | every pair's primary and alternate routes walked | a shared cable ([`SharedCable`](crate::apm::SharedCable)) |
//! | `multicast_connected` (states with multicast) | every group's tree walked: each sender's copies reach every other receiver once, never back to a switch | a pattern of copies ([`McFailure`](crate::McFailure)) |
//!
//! Planned (not accepted yet): `within_budget`, `transition(old, new)`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A property of a fabric state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Property {
    /// The channel dependency graph over every required route is acyclic.
    DeadlockFree,
    /// Every required route arrives (see [`Scope`](crate::Scope)).
    Connected,
    /// The P_Key tables let exactly the pairs of end ports talk that the declared partitions
    /// allow (see [`isolation`](crate::isolation)).
    Isolated,
    /// With LMC > 0, every pair's alternate path shares no switch-to-switch cable with its
    /// primary (see [`apm`](crate::apm)).
    ApmDisjoint,
    /// Every multicast group's tree delivers each sender's packets to every other receiving
    /// member exactly once and never back to a switch (see [`multicast`](crate::multicast)).
    MulticastConnected,
}

impl Property {
    /// Every property the verifier can prove, in report order.
    pub const ALL: [Property; 5] = [
        Property::DeadlockFree,
        Property::Connected,
        Property::Isolated,
        Property::ApmDisjoint,
        Property::MulticastConnected,
    ];

    /// The properties of routes: every certificate proves both.
    pub const ROUTES: [Property; 2] = [Property::DeadlockFree, Property::Connected];

    /// What is checked when nothing is asked: the properties of routes, `isolated` when
    /// the state declares partitions, and `multicast_connected` when it has multicast groups
    /// or tables.
    pub fn defaults(state: &weft_fabric::FabricState) -> Vec<Property> {
        let mut v = Property::ROUTES.to_vec();
        if !state.partitions.is_empty() {
            v.push(Property::Isolated);
        }
        if !state.multicast.is_empty() {
            v.push(Property::MulticastConnected);
        }
        v
    }

    /// The stable name (`deadlock_free`, `connected`).
    pub fn name(self) -> &'static str {
        match self {
            Property::DeadlockFree => "deadlock_free",
            Property::Connected => "connected",
            Property::Isolated => "isolated",
            Property::ApmDisjoint => "apm_disjoint",
            Property::MulticastConnected => "multicast_connected",
        }
    }

    /// The stable code of a violation (also the SARIF rule id).
    pub fn code(self) -> &'static str {
        match self {
            Property::DeadlockFree => "weft::credit_loop",
            Property::Connected => "weft::unreachable",
            Property::Isolated => "weft::partition_breach",
            Property::ApmDisjoint => "weft::apm_shared_cable",
            Property::MulticastConnected => "weft::multicast_delivery",
        }
    }

    /// What it means, for sentences ("deadlock freedom", "connectivity").
    pub fn noun(self) -> &'static str {
        match self {
            Property::DeadlockFree => "deadlock freedom",
            Property::Connected => "connectivity",
            Property::Isolated => "isolation",
            Property::ApmDisjoint => "disjoint APM paths",
            Property::MulticastConnected => "multicast delivery",
        }
    }

    /// The property named `name`.
    pub fn parse(name: &str) -> Option<Property> {
        Property::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
