//! The compile passes after elaboration: LIDs, then routing, into a [`FabricState`].

use crate::code::Code;
use crate::diagnostic::Diagnostic;
use crate::elaborate::Elaborated;
use crate::routing::Engine;
use crate::routing::{self, RouteError, RouteNote, RoutingInput};
use weft_fabric::{FabricState, SwitchState, ValidState};

/// A compiled fabric.
#[derive(Debug)]
pub struct Built {
    /// LIDs and tables, validated.
    pub state: ValidState,
    /// The engine that routed it.
    pub engine: Engine,
    /// Why that engine.
    pub why: String,
    /// What the engine reported.
    pub notes: Vec<RouteNote>,
}

/// The engine that routes a fabric, and why that one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineChoice {
    /// The engine.
    pub engine: Engine,
    /// Why: "asked for by `routing { engine = … }`", or what the default found.
    pub why: String,
}

/// The engine a fabric asks for; without a `routing { engine = … }`, `fat_tree` when the
/// cabling is a fat-tree ([`routing::shape::detect`]) and `updn` otherwise.
pub fn choose_engine(e: &Elaborated) -> EngineChoice {
    if let Some(engine) = e.config.routing.engine {
        return EngineChoice {
            engine,
            why: format!("asked for by `routing {{ engine = {engine} }}`"),
        };
    }
    match routing::shape::detect(&e.fabric) {
        routing::shape::Shape::FatTree(t) => EngineChoice {
            engine: Engine::FatTree,
            why: format!("the default for {}", t.describe()),
        },
        routing::shape::Shape::Other { reason, .. } => EngineChoice {
            engine: Engine::Updn,
            why: format!("the default for a fabric that is not a fat-tree: {reason}"),
        },
    }
}

/// Assigns LIDs and routes.
pub fn build(e: &Elaborated) -> Result<Built, Vec<Diagnostic>> {
    let lids = crate::lids::assign(e)?;
    let mut choice = choose_engine(e);
    let name = choice.engine.name();
    let engine = choice.engine.router();
    if let (Some(sp), false) = (e.config.routing.roots_span, choice.engine == Engine::Updn) {
        return Err(vec![Diagnostic::error(
            Code::Unsupported,
            format!("`roots` has no effect with the `{name}` engine"),
        )
        .label(e.fabric_origin.source, sp, "used only by `engine = updn`")
        .help(if choice.engine == Engine::FatTree {
            "fat_tree takes its roots from the tree levels; remove `roots`, or route with \
             `engine = updn`"
        } else {
            "remove `roots`, or route with `engine = updn`"
        })]);
    }
    let input = RoutingInput {
        fabric: &e.fabric,
        lids: &lids,
        config: &e.config.routing,
    };
    let routed = engine.route(&input);
    let name = choice.engine.name();
    let at = |d: Diagnostic| match e.config.routing.engine_span {
        Some(sp) => d.label(e.fabric_origin.source, sp, format!("engine `{name}`")),
        None => d.label(
            e.fabric_origin.source,
            e.fabric_origin.span,
            format!("routed with `{name}`, {}", choice.why),
        ),
    };
    let routes = routed.map_err(|err| {
        let help = match &err {
            RouteError::Unsupported { .. } => "pick an engine for any topology, such as `engine = updn`; weft never falls back silently",
            RouteError::Disconnected { engine: "updn", .. } => "under Up*/Down*, roots joined only through lower switches cannot reach each other; name a single root in `routing { roots = [...] }`, or use `engine = fat_tree`, whose sFtree paths connect every switch pair",
            RouteError::Disconnected { .. } => "the faults cut these switches off; check the `faults` block and the cabling",
            RouteError::CreditLoop { .. } => "the faults break the fat-tree's up*/down* structure; Up*/Down* from a single root is deadlock-free on any connected fabric: `routing { engine = updn, roots = [<one top switch>] }`",

        };
        let code = match &err {
            RouteError::Unsupported { .. } => Code::EngineRefused,
            RouteError::Disconnected { .. } | RouteError::CreditLoop { .. } => Code::Unroutable,
        };
        vec![at(Diagnostic::error(code, err.to_string())).help(help)]
    })?;
    let mut state = FabricState::new(e.fabric.clone());
    state.lids = lids;
    state.switches = routes
        .lfts
        .into_iter()
        .map(|(id, lft)| {
            (
                id,
                SwitchState {
                    lft,
                    sl2vl: Vec::new(),
                },
            )
        })
        .collect();
    // What the passes produce must be a valid state; if not, that is a bug in weft, reported
    // as such rather than written.
    let state = ValidState::new(state).map_err(|errs| {
        vec![at(Diagnostic::error(
            Code::Internal,
            format!("the compiled state is invalid (a bug in weft): {errs}"),
        )
        .help("please report this with the `.weft` file"))]
    })?;
    // An engine that had to give up its own method says so in the reason, not only in a note.
    if let Some(n) = routes.notes.iter().find(|n| n.code == Code::FatTreeUpdn) {
        choice.why = format!("{}; {}", choice.why, n.message);
    }
    Ok(Built {
        state,
        engine: choice.engine,
        why: choice.why,
        notes: routes.notes,
    })
}
