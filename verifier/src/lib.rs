//! weft's verifier: deadlock freedom and connectivity of any [`FabricState`](weft_fabric::FabricState), with
//! certificates and counterexamples, checked by two engines that must agree.
//!
//! Semantics (also in `docs/verify.md`): a packet for destination LID `d`
//! with service level `s` entering switch `x` on port `i` leaves on `o = LFT_x[d]` and VL
//! `SL2VL_x[i][o][s]`; an end node injects SL `s` on [`FabricState::injection_vl`](weft_fabric::FabricState::injection_vl); a switch's
//! own (management) traffic enters its tables on port 0. A *route* is (source port,
//! destination LID, SL) for every required pair (see [`Scope`]) and every SL of the pair's
//! path-SL set.
//!
//! * **Deadlock freedom**: the channel dependency graph (channel = directed link and VL; a
//!   dependency = two consecutive channels of a route) is acyclic. Every hop a route takes
//!   counts, also the hops before a route fails and the hops of a route caught in a forwarding
//!   loop (such packets still hold buffers).
//! * **Connectivity**: every route arrives at the port owning its destination LID: no
//!   forwarding loop, no unset LFT entry, no entry pointing at a missing, unwired or down port,
//!   no unassigned SL2VL entry, no hop on VL 15 or on a VL at or above the VLCap of either end
//!   or the state's `max_vls`, and no hop on a VL the sending port's VL arbitration never
//!   sends (no entry of weight above 0 in either table; a port without a table sends VL 0
//!   only).
//!
//! Engines: [`explicit`] (per-destination in-trees, rayon, the whole LID space) and [`z3`]
//! (the same conditions as constraints, for cross-checking). Both implement [`Checker`];
//! [`engines`] runs one or both and holds them to one verdict.
//! A proven state comes with a [`Certificate`] that [`certificate::check`] re-checks in linear
//! time; a violation comes with witnesses ([`CreditLoop`], [`FailurePattern`]) that name
//! switches, ports and VLs and give concrete routes.
//!
//! Beyond these two: `isolated` ([`isolation`]), `apm_disjoint` ([`apm`]) and
//! `multicast_connected` ([`multicast`], whose dependencies join the unicast ones), each with
//! one checker both engines call; [`transition`] and [`partition_mix`], a plan's step while it
//! lands. The crate's [`CODES`] register every property's code with the certificate's and the
//! transition's. Tests require both engines to agree on the route properties, replay every
//! witness with the [`reference`](mod@reference) walk, and tamper with thousands of honest certificates (the
//! checker may accept only what the explicit engine proves). Proven only when every check ran:
//! no required route unknown, and a z3 timeout or `unknown` is unknown, never proven. (A
//! multicast group with no pair to deliver, one member as every group is after its first join,
//! is proven once its live senders' copies were walked loop-free: "nothing to deliver".)
//!
//! Architecture invariant: the verifier depends on `weft-fabric` only, never on the compiler,
//! so it checks any [`FabricState`](weft_fabric::FabricState), whoever produced it. It does no I/O and never prints.

// Nothing indexes with a value that might be out of range: `get` and a decision instead.
#![deny(clippy::indexing_slicing)]

pub mod apm;
pub mod certificate;
mod channels;
pub mod engines;
pub mod explicit;
mod failures;
pub mod isolation;
pub mod multicast;
mod net;
pub mod partition_mix;
mod property;
pub mod reference;
mod report;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod transition;
pub mod z3;

pub use certificate::{Certificate, CertificateError, CheckSummary, Request};
pub use isolation::{Breach, BreachKind, Isolation};
pub use multicast::{McFailure, McProblem, McReport, McStop, Traffic};
pub use property::Property;
pub use report::{
    Channel, CreditLoop, Dependency, Endpoint, FailedRoute, FailureKind, FailurePattern,
    FailureReason, Hop, NodeClass, NodeRef, Outcome, Report, Route, Stats, Unscheduled, Verdict,
    Witness, ADAPTIVE_ROUTING,
};

use weft_fabric::ValidState;

/// Which (source, destination) pairs must be connected and whose routes count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Scope {
    /// Every end-node port and every switch (port 0) to every LID of every other one.
    #[default]
    All,
    /// End-node ports to end-node LIDs only (what compute traffic uses).
    HcaToHca,
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Scope {
    /// Every scope.
    pub const ALL: [Scope; 2] = [Scope::All, Scope::HcaToHca];

    /// The name used in reports and certificates.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::All => "all",
            Scope::HcaToHca => "hca-to-hca",
        }
    }
}

/// How to verify.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Required pairs.
    pub scope: Scope,
    /// The properties asked for; the report is proven only when all of them are (default:
    /// the properties of routes; [`Property::defaults`] adds `isolated` for a state that
    /// declares partitions).
    pub properties: Vec<Property>,
    /// Build a [`Certificate`] when the state is proven.
    pub certificate: bool,
    /// At most this many failed routes are listed over the report, and at most this many
    /// credit loops (all are counted).
    pub max_listed: usize,
    /// Failed routes walked hop by hop per pattern.
    pub witnesses: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            scope: Scope::All,
            properties: Property::ROUTES.to_vec(),
            certificate: true,
            max_listed: 100,
            witnesses: 3,
        }
    }
}

/// Why nothing is proven when no route is required (every engine says the same).
pub(crate) fn no_routes(sources: usize, destinations: usize, scope: Scope) -> String {
    format!(
        "no required routes: {sources} source port(s) and {destinations} destination LID(s) in scope `{scope}`"
    )
}

/// Verifies `state` with the explicit engine: deadlock freedom and connectivity, with a
/// certificate (when asked for and proven) or witnesses.
pub fn verify(state: &ValidState, opts: &Options) -> Report {
    explicit::verify(state, opts)
}

/// A verification engine; engines must agree on every [`Verdict`].
pub trait Checker {
    /// The engine's name.
    fn name(&self) -> &'static str;
    /// The verdict on `state`.
    fn check(&self, state: &ValidState, opts: &Options) -> Verdict;
}

/// The codes the verifier reports: the properties' violations, certificate refusals and
/// transitions that are not one step.
pub const CODES: &[weft_fabric::code::CodeInfo] = &{
    use weft_fabric::code::CodeInfo as C;
    [
        C::stable("weft::apm_shared_cable", "A pair's alternate path shares a cable between switches with its primary: APM cannot route around that cable failing."),
        C::stable("weft::certificate::apm", "A certificate claiming `apm_disjoint`, which the state's routes break."),
        C::stable("weft::certificate::destinations", "A certificate covering other destinations than the state requires."),
        C::stable("weft::certificate::duplicate", "A certificate listing something twice."),
        C::stable("weft::certificate::fingerprint", "A certificate made for another fabric (its fingerprint differs)."),
        C::stable("weft::certificate::format", "A file that is not a weft certificate."),
        C::stable("weft::certificate::isolation", "A certificate claiming `isolated`, which the state's P_Key tables break."),
        C::stable("weft::certificate::label", "A certificate label or next hop that does not lead to its destination."),
        C::stable("weft::certificate::multicast", "A certificate that does not cover the state's multicast groups, or whose groups' trees break it."),
        C::stable("weft::certificate::node", "A certificate naming a node the state does not have, or not as what it claims."),
        C::stable("weft::certificate::property", "A certificate that does not prove a property asked for."),
        C::stable("weft::certificate::rank", "A certificate dependency whose channel ranks do not increase, or a channel without a rank."),
        C::stable("weft::certificate::scope", "A certificate covering fewer pairs than asked for."),
        C::stable("weft::certificate::version", "A certificate of another version."),
        C::stable("weft::credit_loop", "The channel dependency graph has a cycle: a possible deadlock."),
        C::stable("weft::multicast_delivery", "A multicast group's tree does not deliver each sender's packets to every other receiving member exactly once, or a copy comes back to a switch (a loop in the tree)."),
        C::stable("weft::partition_breach", "The P_Key tables do not enforce the declared partitions: two ports talk that must not, or cannot that must, or a port cannot reach the SM."),
        C::stable("weft::transition::differ", "Two states that differ in more than their forwarding tables, given as the two ends of one step."),
        C::stable("weft::unreachable", "A required route does not reach its destination."),
    ]
};
