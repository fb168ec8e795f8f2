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
    // The VL budget: the description's, else the smallest VLCap of the fabric's nodes.
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
    let input = RoutingInput {
        fabric: &e.fabric,
        lids: &lids,
        config: &e.config.routing,
        vl_budget,
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
            RouteError::Layers { .. } => "raise `vls { budget = … }` (up to the ports' VLCap), or route with `engine = updn`, deadlock-free on one VL at the cost of longer paths",

        };
        let code = match &err {
            RouteError::Unsupported { .. } => Code::EngineRefused,
            RouteError::Disconnected { .. } | RouteError::CreditLoop { .. } => Code::Unroutable,
            RouteError::Layers { .. } => Code::LayersExceeded,
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
    let mut notes = routes.notes;
    if let Some(lanes) = &routes.lanes {
        apply_lanes(&mut state, lanes);
        let of = if e.config.vls_budget.is_some() {
            format!("the {vl_budget} VL(s) budgeted")
        } else {
            format!("{vl_budget}, the fewest data VLs a node has (no `vls {{ budget }}`)")
        };
        notes.push(RouteNote {
            code: Code::Layers,
            message: format!(
                "routes use {} layer(s) of {of}: SL i on VL i on every hop, path SLs per source",
                lanes.layers
            ),
        });
    }
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
    if let Some(n) = notes.iter().find(|n| n.code == Code::FatTreeUpdn) {
        choice.why = format!("{}; {}", choice.why, n.message);
    }
    Ok(Built {
        state,
        engine: choice.engine,
        why: choice.why,
        notes,
    })
}

/// Puts an engine's layers into the state: on every switch, SL `i` → VL `i` for each input
/// and output port pair (the switch's own port 0 included as an input), the same for every end
/// node's injection, unused SLs dropped (VL 15); and each route's SL as the path SL of its
/// source switch and of the end-node ports cabled to it.
fn apply_lanes(state: &mut FabricState, lanes: &routing::Lanes) {
    use weft_fabric::{Lid, NodeKind, PortRef, Sl, SlSet};
    let mut map = [15u8; 16];
    for (i, v) in map.iter_mut().enumerate().take(usize::from(lanes.layers)) {
        *v = i as u8;
    }
    let f = &state.fabric;
    // Cabled ports per node, and the end-node ports cabled to each switch.
    let mut cabled: std::collections::BTreeMap<weft_fabric::NodeId, Vec<u8>> = Default::default();
    let mut hosts: std::collections::BTreeMap<weft_fabric::NodeId, Vec<PortRef>> =
        Default::default();
    for l in f.links() {
        for (me, peer) in [(l.a, l.b), (l.b, l.a)] {
            cabled.entry(me.node).or_default().push(me.port.0);
            if f.node(me.node).spec.kind == NodeKind::Switch
                && f.node(peer.node).spec.kind != NodeKind::Switch
            {
                hosts.entry(me.node).or_default().push(peer);
            }
        }
    }
    for (id, sw) in state.switches.iter_mut() {
        let mut ports = cabled.get(id).cloned().unwrap_or_default();
        ports.sort_unstable();
        ports.dedup();
        sw.sl2vl = std::iter::once(0)
            .chain(ports.iter().copied())
            .flat_map(|i| {
                ports
                    .iter()
                    .filter(move |&&o| o != i)
                    .map(move |&o| weft_fabric::Sl2VlRow {
                        in_port: i,
                        out_port: o,
                        vl: map,
                    })
            })
            .collect();
        sw.sort_sl2vl();
    }
    let ends: Vec<weft_fabric::NodeId> = f
        .node_ids()
        .filter(|&id| f.node(id).spec.kind != NodeKind::Switch)
        .collect();
    for id in ends {
        state.set_node_injection(id, map);
    }
    let assigned: Vec<Lid> = state
        .lids
        .owners(&state.fabric)
        .iter()
        .enumerate()
        .filter(|(_, o)| o.is_some())
        .map(|(lid, _)| Lid(lid as u16))
        .collect();
    let mut triples = Vec::new();
    for (sw, row) in &lanes.by_source {
        let sources = std::iter::once(PortRef::new(*sw, 0))
            .chain(hosts.get(sw).into_iter().flatten().copied())
            .collect::<Vec<_>>();
        for &lid in &assigned {
            let layer = row.get(usize::from(lid.0)).copied().unwrap_or(0);
            for &src in &sources {
                triples.push((src, lid, SlSet::one(Sl(layer))));
            }
        }
    }
    state.path_sl.set_by_source(triples);
}
