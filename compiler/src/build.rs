//! The compile passes after elaboration: LIDs, then the engine's choice (with its reason),
//! routing, QoS lanes, partitions and multicast trees, into a [`FabricState`]. [`Built`] holds
//! the state, the engine asked for and the one used, and the notes; [`relayer`] places a
//! `layered` build's layers again (the driver's z3 bound).

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
    /// The engine asked for (or chosen by default).
    pub engine: Engine,
    /// The engine whose method wrote the tables: [`Built::engine`], unless it gave way
    /// (fat_tree's Up*/Down* last resort). What the build promises follows this one.
    pub engine_used: Engine,
    /// Why that engine.
    pub why: String,
    /// What the engine reported.
    pub notes: Vec<RouteNote>,
    /// The QoS classes on SLs and VLs.
    pub lanes: crate::qos::LaneMap,
    /// The routing's layer per source switch and LID, when it has layers.
    pub layers: Option<routing::Layers>,
}

impl Built {
    /// What the tables of the engine actually used promise (for the verifier to prove).
    pub fn claims(&self) -> routing::Claims {
        self.engine_used.router().claims(&self.state.lids)
    }
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
            why: format!("the default for {}", t.describe(&e.fabric)),
        },
        routing::shape::Shape::Other { reason, .. } => EngineChoice {
            engine: Engine::Updn,
            why: format!("the default for a fabric that is not a fat-tree: {reason}"),
        },
    }
}

/// The VL budget: the description's, else the smallest VLCap of the fabric's nodes; and where
/// it came from, for diagnostics.
fn budget(e: &Elaborated) -> (u8, (crate::Span, String)) {
    let vl_budget = e.config.vls_budget.map_or_else(
        || {
            e.fabric
                .nodes()
                .iter()
                .map(|n| n.spec.caps.vl_cap)
                .min()
                .unwrap_or(1)
        },
        |(b, _)| b,
    );
    let at = match e.config.vls_budget {
        Some((_, sp)) => (sp, format!("a budget of {vl_budget} VL(s)")),
        None => (
            e.fabric_origin.span,
            format!("no `vls {{ budget }}`: {vl_budget}, the fewest data VLs a node has"),
        ),
    };
    (vl_budget, at)
}

/// `d` labelled at the engine: the `routing { engine = … }` span, else the fabric's name with
/// the engine and why it was chosen.
fn at_engine(e: &Elaborated, choice: &EngineChoice, d: Diagnostic) -> Diagnostic {
    let name = choice.engine.name();
    match e.config.routing.engine_span {
        Some(sp) => d.label(e.fabric_origin.source, sp, format!("engine `{name}`")),
        None => d.label(
            e.fabric_origin.source,
            e.fabric_origin.span,
            format!("routed with `{name}`, {}", choice.why),
        ),
    }
}

/// Assigns LIDs and routes.
pub fn build(e: &Elaborated) -> Result<Built, Vec<Diagnostic>> {
    let mut lids = crate::lids::assign(e)?;
    crate::lids::assign_vfs(e, &mut lids)?;
    let choice = choose_engine(e);
    let name = choice.engine.name();
    let engine = choice.engine.router();
    if let (Some(sp), false) = (e.config.routing.roots_span, choice.engine == Engine::Updn) {
        return Err(vec![Diagnostic::error(
            Code::NoEffect,
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
    if let (Some((_, sp)), false) = (
        e.config.routing.switch_to_switch,
        choice.engine == Engine::FatTree,
    ) {
        return Err(vec![Diagnostic::error(
            Code::NoEffect,
            format!("`switch_to_switch = sftree` has no effect with the `{name}` engine"),
        )
        .label(
            e.fabric_origin.source,
            sp,
            "sFtree is how `fat_tree` routes between switches",
        )
        .help(format!(
            "`{name}` routes every switch pair its own way; remove the line, or route with \
             `engine = fat_tree`"
        ))]);
    }
    let (vl_budget, budget_at) = budget(e);
    // The classes must fit on one layer before routing is worth doing (SLs, VLs, pins); the
    // routing's layers then multiply every class's lanes.
    crate::qos::allocate(
        &e.config.qos,
        1,
        vl_budget,
        e.fabric_origin.source,
        budget_at.clone(),
    )
    .map_err(|d| vec![d])?;
    let lanes_total = crate::qos::total_lanes(&e.config.qos);
    let input = RoutingInput {
        fabric: &e.fabric,
        lids: &lids,
        config: &e.config.routing,
        vl_budget: vl_budget / lanes_total,
    };
    let routed = engine.route(&input);
    let at = |d: Diagnostic| at_engine(e, &choice, d);
    let routes = routed.map_err(|err| {
        let help = match &err {
            RouteError::Unsupported { .. } => "pick an engine for any topology, such as `engine = updn`; weft never falls back silently",
            RouteError::Disconnected { engine: "updn", .. } => "under Up*/Down*, roots joined only through lower switches cannot reach each other; name a single root in `routing { roots = [...] }`, or use `engine = fat_tree`, whose sFtree paths connect every switch pair",
            RouteError::Disconnected { .. } => "the faults cut these switches off; check the `faults` block and the cabling",
            RouteError::CreditLoop { .. } => "the faults break the fat-tree's up*/down* structure; Up*/Down* from a single root is deadlock-free on any connected fabric: `routing { engine = updn, roots = [<one top switch>] }`",
            RouteError::Layers { .. } if lanes_total > 1 => "each layer takes one VL per lane of every class; raise `vls { budget = … }` (up to the ports' VLCap), give classes fewer lanes, or route with `engine = updn`, deadlock-free on one VL at the cost of longer paths",
            RouteError::Layers { .. } => "raise `vls { budget = … }` (up to the ports' VLCap), or route with `engine = updn`, deadlock-free on one VL at the cost of longer paths",

        };
        let code = match &err {
            RouteError::Unsupported { .. } => Code::EngineRefused,
            RouteError::Disconnected { .. } | RouteError::CreditLoop { .. } => Code::Unroutable,
            RouteError::Layers { .. } => Code::LayersExceeded,
        };
        vec![at(Diagnostic::error(code, err.to_string())).help(help)]
    })?;
    assemble(e, choice, lids, routes)
}

/// A built fabric with its routes placed on other layers: `placement` gives the layer of each
/// route group (source switch, destination LID; absent: layer 0), `layers` their count. The
/// LFTs stay; the QoS classes are placed again over the new layers, and every table and path
/// SL follows. For z3's placement in fewer layers than the engine's heuristic found.
pub fn relayer(
    e: &Elaborated,
    built: &Built,
    placement: &std::collections::BTreeMap<(weft_fabric::NodeId, weft_fabric::Lid), u8>,
    layers: u8,
) -> Result<Built, Vec<Diagnostic>> {
    let Some(old) = &built.layers else {
        return Err(vec![Diagnostic::error(
            Code::Internal,
            "only a routing with layers can be placed on other layers (a bug in weft)",
        )]);
    };
    if let Some(l) = placement.values().find(|&&l| l >= layers) {
        return Err(vec![Diagnostic::error(
            Code::Internal,
            format!("a placement on {layers} layer(s) names layer {l} (a bug in weft)"),
        )]);
    }
    let by_source = old
        .by_source
        .iter()
        .map(|(&sw, row)| {
            let row = (0..row.len())
                .map(|lid| {
                    let key = (sw, weft_fabric::Lid(lid as u16));
                    placement.get(&key).copied().unwrap_or(0)
                })
                .collect();
            (sw, row)
        })
        .collect();
    let routes = routing::Routes {
        lfts: built
            .state
            .switches
            .iter()
            .map(|(&id, sw)| (id, sw.lft.clone()))
            .collect(),
        // What `assemble` writes again is left out.
        notes: built
            .notes
            .iter()
            .filter(|n| {
                !matches!(
                    n.code,
                    Code::Layers | Code::QosLanes | Code::Partitions | Code::Multicast
                )
            })
            .cloned()
            .collect(),
        layers: Some(routing::Layers { layers, by_source }),
        engine_used: (built.engine_used != built.engine).then_some(built.engine_used),
    };
    let choice = EngineChoice {
        engine: built.engine,
        why: built.why.clone(),
    };
    assemble(e, choice, built.state.lids.clone(), routes)
}

/// The state of routed tables: the QoS classes on SLs and VLs over the routing's layers, SL→VL
/// and VLArb tables, path SLs, the notes; validated.
fn assemble(
    e: &Elaborated,
    mut choice: EngineChoice,
    lids: weft_fabric::LidAssignment,
    routes: routing::Routes,
) -> Result<Built, Vec<Diagnostic>> {
    let (vl_budget, budget_at) = budget(e);
    let mut state = FabricState::new(e.fabric.clone());
    state.lids = lids;
    state.sm = e.config.sm.clone();
    state.switches = routes
        .lfts
        .into_iter()
        .map(|(id, lft)| {
            (
                id,
                SwitchState {
                    lft,
                    sl2vl: Vec::new(),
                    sl2vl_all: None,
                },
            )
        })
        .collect();
    let mut notes = routes.notes;
    let layers = routes.layers.as_ref().map_or(1, |l| l.layers);
    let mut map = crate::qos::allocate(
        &e.config.qos,
        layers,
        vl_budget,
        e.fabric_origin.source,
        budget_at,
    )
    .map_err(|d| vec![d])?;
    crate::qos::apply(&mut state, &map, routes.layers.as_ref());
    crate::partitions::apply(
        &mut state,
        &e.config.tenants,
        &e.config.sm,
        e.fabric_origin.source,
    )
    .map_err(|d| vec![d])?;
    crate::partitions::classes(&mut state, &e.config.tenants, &map, e.fabric_origin.source)
        .map_err(|d| vec![d])?;
    let engine_used = routes.engine_used.unwrap_or(choice.engine);
    let multicast =
        crate::multicast::apply(&mut state, e, &mut map, routes.layers.as_ref(), engine_used)?;
    if let Some(routed) = &routes.layers {
        let of = if e.config.vls_budget.is_some() {
            format!("the {vl_budget} VL(s) budgeted")
        } else {
            format!("{vl_budget}, the fewest data VLs a node has (no `vls {{ budget }}`)")
        };
        let how = if map.declared {
            format!(
                "each class's lane i, layer j on its SL first + i × {} + j",
                routed.layers
            )
        } else {
            "SL i on VL i on every hop".to_owned()
        };
        notes.push(RouteNote {
            code: Code::Layers,
            message: format!(
                "routes use {} layer(s) of {of}: {how}, path SLs per source",
                routed.layers
            ),
        });
    }
    if map.declared {
        notes.push(RouteNote {
            code: Code::QosLanes,
            message: describe(&map),
        });
    }
    if !e.config.tenants.is_empty() {
        notes.push(RouteNote {
            code: Code::Partitions,
            message: crate::partitions::describe(&e.config.tenants),
        });
    }
    notes.extend(multicast);
    // What the passes produce must be a valid state; if not, that is a bug in weft, reported
    // as such rather than written.
    let state = ValidState::new(state).map_err(|errs| {
        vec![at_engine(
            e,
            &choice,
            Diagnostic::error(
                Code::Internal,
                format!("the compiled state is invalid (a bug in weft): {errs}"),
            )
            .help("please report this with the `.weft` file"),
        )]
    })?;
    // An engine that had to give up its own method says so in the reason, not only in a note.
    if let Some(n) = notes.iter().find(|n| n.code == Code::FatTreeUpdn) {
        choice.why = format!("{}; {}", choice.why, n.message);
    }
    Ok(Built {
        state,
        engine: choice.engine,
        engine_used,
        why: choice.why,
        notes,
        lanes: map,
        layers: routes.layers,
    })
}

/// One line per class: its SLs, VLs and lanes.
fn describe(map: &crate::qos::LaneMap) -> String {
    let parts: Vec<String> = map
        .classes
        .iter()
        .map(|c| {
            let w = c.width(map.layers);
            let span = |first: u8| {
                if w == 1 {
                    format!("{first}")
                } else {
                    format!("{first}..={}", first + w - 1)
                }
            };
            let lanes = match c.scheme {
                crate::LaneScheme::Single => String::new(),
                crate::LaneScheme::Vftree { maxvl } => format!(", vFtree over {maxvl} lanes"),
                crate::LaneScheme::Dftree => ", dFtree fast and slow lanes".to_owned(),
            };
            format!(
                "`{}` on SL {} → VL {}{lanes}",
                c.name,
                span(c.sl.0),
                span(c.vl.0)
            )
        })
        .collect();
    format!(
        "QoS classes use {} of {} data VL(s): {}",
        map.vls_used(),
        map.budget,
        parts.join("; ")
    )
}
