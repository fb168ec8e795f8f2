//! Routing engines: a fabric and its LIDs in, one linear forwarding table per switch out.
//!
//! One engine per module, one registry ([`Engine::ALL`]; [`crate::ENGINES`] is its names) that
//! `routing { engine = … }` is checked against. Engines return their tables; they never
//! write into a shared state, and say why when a topology is not theirs. One engine gives way to another's method, and says so:
//! `fat_tree` on a degraded tree it cannot route free of credit loops writes Up*/Down* tables
//! from one top switch ([`Routes::engine_used`], a `weft::fat_tree_updn` note), recorded as
//! the build's `engine_used`, so what the build promises follows the engine that wrote the
//! tables.
//!
//! The engines: `fat_tree.rs` (with sFtree completion and LMC), `updn.rs`, `minhop.rs`,
//! `layered.rs` (LASH-like layers of shortest paths; its `Layers` are placed on VLs by
//! [`crate::qos`]). Each states what it claims ([`Claims`]: deadlock-free, APM-disjoint); the
//! verifier checks the claim anyway. They share `graph.rs` (the switch graph: usable links
//! only, port groups, where each LID leaves the switches, load counters), `acyclic.rs` (a
//! dependency graph kept acyclic as it grows: `fat_tree`'s turn-by-turn completion of degraded
//! trees, `layered`'s layers) and one completeness check that reads either LFT layout
//! (`fat_tree` builds rows, the others columns). [`shape`] answers "is this cabling a
//! fat-tree, with which levels?" for the default engine, `fat_tree`, `weft import` and the
//! summary; `multicast.rs` grows the multicast trees.

mod acyclic;
mod cables;
pub mod fat_tree;
mod graph;
pub mod layered;
pub mod minhop;
pub mod multicast;
pub mod shape;
pub mod updn;

pub use graph::Graph;

use crate::code::Code;
use std::collections::BTreeMap;
use weft_fabric::{Fabric, Lft, LidAssignment, NodeId};

/// What an engine routes.
#[derive(Clone, Copy, Debug)]
pub struct RoutingInput<'a> {
    /// The topology (down links and nodes are unusable).
    pub fabric: &'a Fabric,
    /// LIDs to route.
    pub lids: &'a LidAssignment,
    /// The `routing { … }` section.
    pub config: &'a crate::RoutingConfig,
    /// Data VLs the routes may use (`vls { budget }`, else the smallest VLCap of the fabric).
    pub vl_budget: u8,
}

/// Something an engine wants the user to know about its result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteNote {
    /// Stable code.
    pub code: Code,
    /// Message (lowercase, names in backticks).
    pub message: String,
}

/// An engine's result.
#[derive(Clone, Debug, Default)]
pub struct Routes {
    /// One LFT per switch.
    pub lfts: BTreeMap<NodeId, Lft>,
    /// Observations (e.g. entries completed through the sFtree subtree).
    pub notes: Vec<RouteNote>,
    /// The layers routes travel on, for engines that use more than VL 0.
    pub layers: Option<Layers>,
    /// The engine whose method wrote these tables, when it is not the one asked (fat_tree's
    /// last resort on a degraded tree is Up*/Down*). OpenSM records the same thing as
    /// `routing_engine_used`.
    pub engine_used: Option<Engine>,
}

/// What an engine's tables promise. Nothing here is trusted: the pipeline turns each claim
/// into a property the verifier must prove, and tests hold every engine to its claims.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Claims {
    /// Deadlock-free on the VLs the build programs: VL 0 (or the classes' lanes), or one VL
    /// per layer for `layered`, with the path SLs it writes.
    pub deadlock_free: bool,
    /// With LMC > 0, each end port's LIDs are reached on paths sharing no cable between
    /// switches with the primary (the alternate paths APM migrates to).
    pub apm_disjoint: bool,
}

impl Claims {
    /// Deadlock-free, and nothing about APM: what `updn` and `layered` claim.
    pub const DEADLOCK_FREE: Claims = Claims {
        deadlock_free: true,
        apm_disjoint: false,
    };
}

/// Layers of a routing: SL `i` travels on VL `i` on every hop.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layers {
    /// Layers used (at least 1).
    pub layers: u8,
    /// Per source switch, the layer (SL) of its routes toward each LID, indexed by LID; the
    /// switch's own traffic and that of the end nodes cabled to it use it.
    pub by_source: BTreeMap<NodeId, Vec<u8>>,
}

/// Why an engine could not route.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    /// The topology is not one this engine routes.
    #[error("the `{engine}` engine cannot route this fabric: {reason}")]
    Unsupported {
        /// Engine name.
        engine: &'static str,
        /// Why, naming the nodes involved.
        reason: String,
        /// A node to point at.
        node: Option<NodeId>,
    },
    /// Some pairs cannot be connected (after faults).
    #[error("the `{engine}` engine leaves {count} destination entries unreachable, e.g. `{from}` cannot reach `{to}`")]
    Disconnected {
        /// Engine name.
        engine: &'static str,
        /// Switch-destination entries with no route.
        count: usize,
        /// One switch without a route.
        from: String,
        /// The destination it cannot reach.
        to: String,
    },
    /// The engine's own check found a credit loop it could not route around.
    #[error("the `{engine}` engine finds no deadlock-free routing on one VL for this fabric ({tried} subtree roots tried): routes from `{switch}` toward `{to}` close a credit loop")]
    CreditLoop {
        /// Engine name.
        engine: &'static str,
        /// How many alternatives were tried.
        tried: usize,
        /// A switch on the loop.
        switch: String,
        /// A destination whose routes hold a channel of the loop.
        to: String,
    },
    /// A route fits no layer within the VL budget.
    #[error("the `{engine}` engine needs more than {budget} layer(s): the route from `{from}` toward `{to}` closes a credit loop in every one; on VL 0 the loop is {cycle}")]
    Layers {
        /// Engine name.
        engine: &'static str,
        /// The VL budget.
        budget: u8,
        /// The source switch of the route.
        from: String,
        /// Its destination.
        to: String,
        /// The credit loop the route closes on the first layer, named channel by channel.
        cycle: String,
    },
}

/// A routing engine.
pub trait RoutingEngine: Sync {
    /// The name `routing { engine = … }` uses.
    fn name(&self) -> &'static str;
    /// What the engine's tables promise for a fabric with these LIDs.
    fn claims(&self, lids: &LidAssignment) -> Claims;
    /// Routes every LID of the fabric.
    fn route(&self, input: &RoutingInput<'_>) -> Result<Routes, RouteError>;
}

/// The engines a description can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Engine {
    /// `fat_tree`: OpenSM's ftree rules plus sFtree switch-to-switch routes.
    FatTree,
    /// `updn`: Up*/Down* from BFS roots.
    Updn,
    /// `minhop`: shortest paths, balanced (not deadlock-free in general).
    Minhop,
    /// `layered`: shortest paths, deadlock-free with one VL per layer.
    Layered,
}

impl Engine {
    /// Every engine.
    pub const ALL: [Engine; 4] = [
        Engine::FatTree,
        Engine::Updn,
        Engine::Minhop,
        Engine::Layered,
    ];

    /// The engine that routes.
    pub fn router(self) -> &'static dyn RoutingEngine {
        match self {
            Engine::FatTree => &fat_tree::FatTree,
            Engine::Updn => &updn::UpDown,
            Engine::Minhop => &minhop::MinHop,
            Engine::Layered => &layered::Layered,
        }
    }

    /// Every engine's name, in [`Engine::ALL`]'s order: the words `routing { engine = … }`
    /// accepts ([`crate::ENGINES`]).
    pub const NAMES: [&'static str; Engine::ALL.len()] = {
        let mut out = [""; Engine::ALL.len()];
        let mut i = 0;
        while i < out.len() {
            #[expect(
                clippy::indexing_slicing,
                reason = "evaluated at compile time: an index out of range fails the build"
            )]
            {
                out[i] = Engine::ALL[i].name();
            }
            i += 1;
        }
        out
    };

    /// The name `routing { engine = … }` uses (the engine's module says it; its
    /// [`RoutingEngine::name`] is the same).
    pub const fn name(self) -> &'static str {
        match self {
            Engine::FatTree => fat_tree::NAME,
            Engine::Updn => updn::NAME,
            Engine::Minhop => minhop::NAME,
            Engine::Layered => layered::NAME,
        }
    }

    /// The engine called `name`.
    pub fn from_name(name: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|e| e.name() == name)
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Engine;

    /// Each engine answers to its name, and its router says the same name.
    #[test]
    fn each_engine_answers_to_its_name() {
        for e in Engine::ALL {
            assert_eq!(Engine::from_name(e.name()), Some(e));
            assert_eq!(e.router().name(), e.name());
        }
        assert_eq!(crate::ENGINES, ["fat_tree", "updn", "minhop", "layered"]);
    }
}
