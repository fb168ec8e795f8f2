//! The z3 engine: the same two properties as constraints, for cross-checking the explicit
//! engine on small and medium fabrics.
//!
//! Facts come from the reference semantics ([`crate::reference`]), route by route, not from
//! the explicit engine:
//!
//! * **Deadlock freedom**: an integer rank per channel and, per dependency `a → b` that some
//!   route creates, the tracked constraint `rank(a) < rank(b)`. Satisfiable ⇔ the dependency
//!   graph is acyclic. Unsatisfiable: the unsat core is a set of dependencies that contains a
//!   cycle (a set of strict inequalities is only contradictory around a cycle); the cycle
//!   found in it is the witness, each dependency with the route that created it.
//! * **Connectivity**: per destination, an integer distance per switch; per forwarding step
//!   `x → y` a route takes, `dist(x) > dist(y)`; a route that ends on an invalid step (unset
//!   entry, missing or down port, misdelivery, unassigned, non-operational or unscheduled
//!   VL — a VL the sending port's arbitration never sends, or one at or above the state's
//!   `max_vls`) contributes a tracked `false`. Satisfiable ⇔ every route arrives.
//!
//! A timeout or an `unknown` answer is [`Outcome::Unknown`](crate::report::Outcome::Unknown), never proven. Limits: routes are
//! enumerated one by one (pairs × hops), so this engine is for fabrics of up to a few hundred
//! nodes; the explicit engine is the one that scales.
//!
//! The engine is an optional feature (`z3`, on by default), so weft builds without
//! `libz3-dev`. Built without it, [`BUILT_IN`] is false and every question put to [`Z3`] is
//! answered "unknown: not built in", never proven.

#[cfg(feature = "z3")]
mod solve;

#[cfg(not(feature = "z3"))]
use crate::report::Outcome;
use crate::report::{CreditLoop, Verdict};
use crate::{Checker, Options};
use std::collections::BTreeMap;
use weft_fabric::{Lid, NodeId, ValidState};

/// Whether this build has the z3 engine (the `z3` feature).
pub const BUILT_IN: bool = cfg!(feature = "z3");

/// Why z3 answered nothing in a build without it.
pub const NOT_BUILT_IN: &str =
    "the z3 engine is not built into this weft (built without the `z3` feature)";

/// The z3 engine.
#[derive(Clone, Copy, Debug)]
pub struct Z3 {
    /// Solver timeout per property, in milliseconds.
    pub timeout_ms: u32,
}

impl Default for Z3 {
    fn default() -> Z3 {
        Z3 { timeout_ms: 60_000 }
    }
}

/// What the z3 engine found.
#[derive(Clone, Debug)]
pub struct Z3Report {
    /// The verdict.
    pub verdict: Verdict,
    /// A credit loop from the unsat core, when deadlock freedom is violated.
    pub credit_loop: Option<CreditLoop>,
    /// Channels, dependencies and routes encoded.
    pub channels: usize,
    /// Dependencies encoded.
    pub dependencies: usize,
    /// Routes enumerated.
    pub routes: usize,
    /// Routes that fail (walked one by one by the reference semantics).
    pub failed_routes: usize,
}

impl Checker for Z3 {
    fn name(&self) -> &'static str {
        "z3"
    }

    fn check(&self, state: &ValidState, opts: &Options) -> Verdict {
        self.run(state, opts).verdict
    }
}

/// A layer per route group (source switch, destination LID).
pub type Placement = BTreeMap<(NodeId, Lid), u8>;

/// What [`Z3::min_layers`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayerBound {
    /// The fewest layers the state's routes fit in: z3 placed them in this many, and proved
    /// every smaller count impossible.
    Minimum(u8),
    /// No placement within the limit.
    MoreThan(u8),
    /// z3 did not decide a count (timeout or unknown), with everything below it impossible.
    Unknown {
        /// The count z3 did not decide.
        at: u8,
        /// Why.
        reason: String,
    },
}

impl Z3 {
    /// The fewest layers (each its own VL) the state's routes can be placed in so that every
    /// layer's channel dependency graph is acyclic, the routes of one source switch toward one
    /// destination LID (the switch's own and its end nodes') sharing a layer, as `layered`
    /// places them. Forwarding comes from the LFTs only: VLs and path SLs are ignored. Tries
    /// 1, 2, … up to `limit` layers: per count, one integer layer per route group, one rank
    /// per (layer, channel), and per dependency of a group `layer = l → rank_l(a) < rank_l(b)`.
    pub fn min_layers(&self, state: &ValidState, limit: u8) -> LayerBound {
        self.place_layers(state, limit).0
    }

    /// [`Z3::min_layers`], with z3's placement when it found one: the layer of each route
    /// group, by source switch and destination LID (groups without dependencies, on layer 0,
    /// are left out).
    pub fn place_layers(&self, state: &ValidState, limit: u8) -> (LayerBound, Option<Placement>) {
        #[cfg(feature = "z3")]
        return self.solve_place_layers(state, limit);
        #[cfg(not(feature = "z3"))]
        {
            let _ = (state, limit);
            (
                LayerBound::Unknown {
                    at: 1,
                    reason: NOT_BUILT_IN.to_owned(),
                },
                None,
            )
        }
    }

    /// Runs both encodings.
    pub fn run(&self, state: &ValidState, opts: &Options) -> Z3Report {
        #[cfg(feature = "z3")]
        return self.solve_run(state, opts);
        #[cfg(not(feature = "z3"))]
        {
            let _ = state;
            let unknown = || Outcome::Unknown(NOT_BUILT_IN.to_owned());
            let asked = |p| opts.properties.contains(&p).then(unknown);
            Z3Report {
                verdict: Verdict {
                    deadlock_free: unknown(),
                    connected: unknown(),
                    isolated: asked(crate::Property::Isolated),
                    apm_disjoint: asked(crate::Property::ApmDisjoint),
                    multicast_connected: asked(crate::Property::MulticastConnected),
                },
                credit_loop: None,
                channels: 0,
                dependencies: 0,
                routes: 0,
                failed_routes: 0,
            }
        }
    }
}
