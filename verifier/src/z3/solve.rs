//! The z3 encodings behind [`Z3`] (built with the `z3` feature).

use super::{LayerBound, Placement, Z3Report, Z3};
use crate::reference::{self, RefHop};
use crate::report::{
    Channel, CreditLoop, Dependency, Endpoint, Hop, NodeRef, Outcome, Route, Verdict,
};
use crate::{Options, Scope};
use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::{FabricState, Lid, NodeId, PortNum, PortRef, ValidState};
use z3::ast::{Bool, Int};
use z3::{Params, SatResult, Solver};
type Chan = (NodeId, u8, u8);

/// What creates a dependency first.
#[derive(Clone, Copy)]
enum Origin {
    /// A unicast route (src, port, dlid, sl).
    Route(NodeId, u8, Lid, u8),
    /// A multicast copy: (MLID, sender, port, SL, the copy's index in the sender's flood).
    Copy(weft_fabric::Mlid, NodeId, u8, u8, usize),
}

/// Multicast facts, per (MLID, sender node, sender port).
#[derive(Default)]
struct McFacts {
    groups: u64,
    /// Steps between switches a sender's copies take (a loop closes a cycle of steps).
    steps: BTreeMap<(u16, NodeId, u8), BTreeSet<(NodeId, NodeId)>>,
    /// Senders some other receiver does not get exactly one copy from.
    failures: Vec<(u16, NodeId, u8)>,
    /// (Sender, receiver) pairs required.
    pairs: u64,
}

struct Facts {
    /// Dependencies, each with the first route or copy that creates it.
    deps: BTreeMap<(Chan, Chan), Origin>,
    mc: McFacts,
    /// Per destination LID: forwarding steps between switches.
    steps: BTreeMap<Lid, BTreeSet<(NodeId, NodeId)>>,
    /// Routes that end on an invalid step.
    failures: Vec<(NodeId, u8, Lid, u8)>,
    /// Routes caught in a forwarding loop (encoded as steps, not as failures).
    looped: usize,
    routes: usize,
}

fn is_switch(st: &FabricState, n: NodeId) -> bool {
    st.fabric
        .nodes()
        .get(n.index())
        .is_some_and(|x| x.is_switch())
}

/// Sources and destinations of `scope`, straight from the state.
fn endpoints(st: &FabricState, scope: Scope) -> (Vec<(NodeId, u8)>, Vec<Lid>) {
    let f = &st.fabric;
    let live = |n: NodeId, p: u8| -> bool {
        let Some(node) = f.nodes().get(n.index()) else {
            return false;
        };
        if node.down {
            return false;
        }
        if node.is_switch() {
            return p == 0;
        }
        p != 0
            && f.peer(PortRef {
                node: n,
                port: PortNum(p),
            })
            .is_some_and(|(o, l)| {
                f.link(l).state == weft_fabric::LinkState::Up && !f.node(o.node).down
            })
    };
    let wanted = |n: NodeId| scope == Scope::All || !is_switch(st, n);
    let mut sources = Vec::new();
    let mut dests = Vec::new();
    let span = 1u16 << st.lids.lmc.min(7);
    for (&n, ports) in &st.lids.base {
        for (&p, &base) in ports {
            if live(n, p.0) && wanted(n) {
                sources.push((n, p.0));
                let s = if is_switch(st, n) { 1 } else { span };
                for k in 0..s {
                    let lid = base.0.saturating_add(k);
                    if (1..=weft_fabric::MAX_UNICAST_LID).contains(&lid) {
                        dests.push(Lid(lid));
                    }
                }
            }
        }
    }
    // VF LIDs: destinations owned behind their hypervisor's port.
    for v in &st.lids.vports {
        if let Some(lid) = v.lid {
            if live(v.host.node, v.host.port.0) && wanted(v.host.node) {
                dests.push(lid);
            }
        }
    }
    dests.sort();
    dests.dedup();
    (sources, dests)
}

fn facts(st: &FabricState, scope: Scope) -> Facts {
    let (sources, dests) = endpoints(st, scope);
    let mut fx = Facts {
        deps: BTreeMap::new(),
        mc: McFacts::default(),
        steps: BTreeMap::new(),
        failures: Vec::new(),
        looped: 0,
        routes: 0,
    };
    for &d in &dests {
        let owner = reference::owner(st, d);
        for &(s, p) in &sources {
            if Some((s, p)) == owner {
                continue;
            }
            for sl in st.path_sls(weft_fabric::PortRef::new(s, p), d).iter() {
                fx.routes += 1;
                let w = reference::walk(st, s, p, d, sl.0);
                // Forwarding steps between switches, including the one closing a loop.
                let mut prev: Option<NodeId> = None;
                for h in &w.hops {
                    if is_switch(st, h.node) {
                        if let Some(a) = prev {
                            fx.steps.entry(d).or_default().insert((a, h.node));
                        }
                        prev = Some(h.node);
                    }
                }
                match w.failure {
                    Some((x, crate::report::FailureReason::Loop)) => {
                        fx.looped += 1;
                        if let Some(a) = prev {
                            fx.steps.entry(d).or_default().insert((a, x));
                        }
                    }
                    Some(_) => fx.failures.push((s, p, d, sl.0)),
                    None => {}
                }
                let hops: Vec<RefHop> = reference::follow(st, s, p, d, sl.0);
                for pair in hops.windows(2) {
                    if let [a, b] = pair {
                        // A dependency is taken inside a switch: `b` enters on `a`'s link.
                        if b.in_port != 0 {
                            fx.deps
                                .entry(((a.node, a.out, a.vl), (b.node, b.out, b.vl)))
                                .or_insert(Origin::Route(s, p, d, sl.0));
                        }
                    }
                }
            }
        }
    }
    multicast_facts(st, &mut fx);
    fx
}

/// The multicast groups' facts, sender by sender, from the reference flood.
fn multicast_facts(st: &FabricState, fx: &mut Facts) {
    let flows = crate::multicast::flows(st);
    fx.mc.groups = flows.len() as u64;
    for f in &flows {
        for &(s, p) in &f.senders {
            let (s, m) = (NodeId(s), f.mlid);
            let fl = reference::flood(st, m, f.sl, s, p);
            if fl.offline {
                continue;
            }
            let mut bad = fl.looped;
            for &(r, q) in &f.receivers {
                if (r, q) == (s.0, p) {
                    continue;
                }
                fx.mc.pairs += 1;
                bad |= fl.delivered.get(&(NodeId(r), q)).copied().unwrap_or(0) != 1;
            }
            if bad {
                fx.mc.failures.push((m.get(), s, p));
            }
            fx.mc
                .steps
                .entry((m.get(), s, p))
                .or_default()
                .extend(fl.steps.iter().copied());
            copy_deps(&mut fx.deps, &fl, (m, s, p, f.sl));
        }
        // Injectors' copies: their dependencies only (delivery is asked of senders).
        for &(s, p) in &f.injectors {
            let fl = reference::flood(st, f.mlid, f.sl, NodeId(s), p);
            if !fl.offline {
                copy_deps(&mut fx.deps, &fl, (f.mlid, NodeId(s), p, f.sl));
            }
        }
    }
}

/// The dependencies of a flood's copies (`from`: MLID, sending node and port, SL — where a
/// witness finds the copy again), each with its origin unless it has one.
fn copy_deps(
    deps: &mut BTreeMap<(Chan, Chan), Origin>,
    fl: &reference::RefFlood,
    from: (weft_fabric::Mlid, NodeId, u8, u8),
) {
    let (m, s, p, sl) = from;
    for (k, c) in fl.copies.iter().enumerate() {
        let Some(a) = c.from.and_then(|j| fl.copies.get(j)) else {
            continue;
        };
        if c.hop.in_port != 0 {
            deps.entry((
                (a.hop.node, a.hop.out, a.hop.vl),
                (c.hop.node, c.hop.out, c.hop.vl),
            ))
            .or_insert(Origin::Copy(m, s, p, sl, k));
        }
    }
}

/// A switch's output port: a channel, VLs aside.
type Port = (NodeId, u8);

impl Z3 {
    pub(super) fn solve_place_layers(
        &self,
        state: &ValidState,
        limit: u8,
    ) -> (LayerBound, Option<Placement>) {
        let st: &FabricState = state;
        let (sources, dests) = endpoints(st, Scope::All);
        // Dependencies (channel = node, output port) per route group (source switch, LID).
        let mut groups: BTreeMap<(NodeId, Lid), BTreeSet<(Port, Port)>> = BTreeMap::new();
        for &d in &dests {
            let owner = reference::owner(st, d);
            for &(s, p) in &sources {
                if Some((s, p)) == owner {
                    continue;
                }
                let Some(group) = st.source_switch(PortRef::new(s, p)) else {
                    continue;
                };
                let sl = st
                    .path_sls(PortRef::new(s, p), d)
                    .iter()
                    .next()
                    .map_or(0, |x| x.0);
                let hops = reference::follow(st, s, p, d, sl);
                let deps = groups.entry((group, d)).or_default();
                for pair in hops.windows(2) {
                    if let [a, b] = pair {
                        if b.in_port != 0 {
                            deps.insert(((a.node, a.out), (b.node, b.out)));
                        }
                    }
                }
            }
        }
        let chans: BTreeSet<Port> = groups
            .values()
            .flatten()
            .flat_map(|&(a, b)| [a, b])
            .collect();
        let mut params = Params::new();
        params.set_u32("timeout", self.timeout_ms);
        for k in 1..=limit {
            let solver = Solver::new();
            solver.set_params(&params);
            let rank: Vec<BTreeMap<Port, Int>> = (0..k)
                .map(|l| {
                    chans
                        .iter()
                        .map(|c| (*c, Int::new_const(format!("r{l}_{}_{}", c.0 .0, c.1))))
                        .collect()
                })
                .collect();
            let mut layer_of: Vec<((NodeId, Lid), Int)> = Vec::new();
            for (g, ((x, d), deps)) in groups.iter().enumerate() {
                if deps.is_empty() {
                    continue;
                }
                let layer = Int::new_const(format!("layer_{}_{}_{g}", x.0, d.0));
                solver.assert(layer.ge(Int::from_u64(0)));
                solver.assert(layer.lt(Int::from_u64(u64::from(k))));
                for (l, ranks) in rank.iter().enumerate() {
                    let on = layer.eq(Int::from_u64(l as u64));
                    for (a, b) in deps {
                        if let (Some(ra), Some(rb)) = (ranks.get(a), ranks.get(b)) {
                            solver.assert(on.implies(ra.lt(rb)));
                        }
                    }
                }
                layer_of.push(((*x, *d), layer));
            }
            match solver.check() {
                SatResult::Sat => {
                    let placement = solver.get_model().and_then(|m| {
                        layer_of
                            .iter()
                            .map(|(key, layer)| {
                                let l = m.eval(layer, true)?.as_u64()?;
                                Some((*key, u8::try_from(l).ok()?))
                            })
                            .collect::<Option<BTreeMap<_, _>>>()
                    });
                    return (LayerBound::Minimum(k), placement);
                }
                SatResult::Unsat => {}
                SatResult::Unknown => {
                    return (
                        LayerBound::Unknown {
                            at: k,
                            reason: solver
                                .get_reason_unknown()
                                .unwrap_or_else(|| "unknown".to_owned()),
                        },
                        None,
                    )
                }
            }
        }
        (LayerBound::MoreThan(limit), None)
    }
}

impl Z3 {
    pub(super) fn solve_run(&self, state: &ValidState, opts: &Options) -> Z3Report {
        let fx = facts(state, opts.scope);
        let mut params = Params::new();
        params.set_u32("timeout", self.timeout_ms);

        // Deadlock freedom.
        let chans: BTreeSet<Chan> = fx.deps.keys().flat_map(|&(a, b)| [a, b]).collect();
        let rank: BTreeMap<Chan, Int> = chans
            .iter()
            .map(|c| (*c, Int::new_const(format!("r_{}_{}_{}", c.0 .0, c.1, c.2))))
            .collect();
        let solver = Solver::new();
        solver.set_params(&params);
        let keys: Vec<(Chan, Chan)> = fx.deps.keys().copied().collect();
        for (k, (a, b)) in keys.iter().enumerate() {
            if let (Some(ra), Some(rb)) = (rank.get(a), rank.get(b)) {
                solver.assert_and_track(ra.lt(rb), &Bool::new_const(format!("d{k}")));
            }
        }
        let mut credit_loop = None;
        let deadlock_free = match solver.check() {
            SatResult::Sat => Outcome::Proven,
            SatResult::Unknown => Outcome::Unknown(
                solver
                    .get_reason_unknown()
                    .unwrap_or_else(|| "unknown".to_owned()),
            ),
            SatResult::Unsat => {
                let core: Vec<usize> = solver
                    .get_unsat_core()
                    .iter()
                    .filter_map(|b| b.to_string().strip_prefix('d')?.parse().ok())
                    .collect();
                let edges: Vec<(Chan, Chan)> =
                    core.iter().filter_map(|&k| keys.get(k).copied()).collect();
                credit_loop = cycle_of(&edges).map(|cyc| witness(state, &fx, &cyc));
                Outcome::Violated
            }
        };

        // Connectivity.
        let solver = Solver::new();
        solver.set_params(&params);
        let mut k = 0usize;
        for (d, steps) in &fx.steps {
            let nodes: BTreeSet<NodeId> = steps.iter().flat_map(|&(a, b)| [a, b]).collect();
            let dist: BTreeMap<NodeId, Int> = nodes
                .iter()
                .map(|n| (*n, Int::new_const(format!("h_{}_{}", d.0, n.0))))
                .collect();
            for (a, b) in steps {
                if let (Some(da), Some(db)) = (dist.get(a), dist.get(b)) {
                    solver.assert_and_track(da.gt(db), &Bool::new_const(format!("s{k}")));
                    k += 1;
                }
            }
        }
        for (j, _) in fx.failures.iter().enumerate() {
            solver.assert_and_track(Bool::from_bool(false), &Bool::new_const(format!("f{j}")));
        }
        let connected = match solver.check() {
            SatResult::Sat => Outcome::Proven,
            SatResult::Unsat => Outcome::Violated,
            SatResult::Unknown => Outcome::Unknown(
                solver
                    .get_reason_unknown()
                    .unwrap_or_else(|| "unknown".to_owned()),
            ),
        };
        // Multicast delivery: per sender, a depth per switch its copies reach, growing along
        // every step (a loop makes that impossible), and `false` for a sender some receiver
        // does not get exactly one copy from.
        let multicast_connected = opts
            .properties
            .contains(&crate::Property::MulticastConnected)
            .then(|| {
                let solver = Solver::new();
                solver.set_params(&params);
                let mut k = 0usize;
                for ((m, s, p), steps) in &fx.mc.steps {
                    let nodes: BTreeSet<NodeId> = steps.iter().flat_map(|&(a, b)| [a, b]).collect();
                    let depth: BTreeMap<NodeId, Int> = nodes
                        .iter()
                        .map(|n| (*n, Int::new_const(format!("m_{m}_{}_{p}_{}", s.0, n.0))))
                        .collect();
                    for (a, b) in steps {
                        if let (Some(da), Some(db)) = (depth.get(a), depth.get(b)) {
                            solver.assert_and_track(da.lt(db), &Bool::new_const(format!("m{k}")));
                            k += 1;
                        }
                    }
                }
                for (j, _) in fx.mc.failures.iter().enumerate() {
                    solver.assert_and_track(
                        Bool::from_bool(false),
                        &Bool::new_const(format!("mf{j}")),
                    );
                }
                match solver.check() {
                    SatResult::Sat => crate::multicast::outcome_of(fx.mc.groups, false),
                    SatResult::Unsat => crate::multicast::outcome_of(fx.mc.groups, true),
                    SatResult::Unknown => Outcome::Unknown(
                        solver
                            .get_reason_unknown()
                            .unwrap_or_else(|| "unknown".to_owned()),
                    ),
                }
            });
        // Nothing required: nothing is proven.
        let (deadlock_free, connected) = if fx.routes == 0 {
            let (s, d) = endpoints(state, opts.scope);
            let why = crate::no_routes(s.len(), d.len(), opts.scope);
            (Outcome::Unknown(why.clone()), Outcome::Unknown(why))
        } else {
            (deadlock_free, connected)
        };
        Z3Report {
            verdict: Verdict {
                deadlock_free,
                connected,
                // Properties of the P_Key tables and of path pairs, not of the dependency
                // graph: the one check both engines share.
                isolated: opts
                    .properties
                    .contains(&crate::Property::Isolated)
                    .then(|| crate::isolation::check(state, 0).verdict()),
                apm_disjoint: opts
                    .properties
                    .contains(&crate::Property::ApmDisjoint)
                    .then(|| crate::apm::check(state, 0).outcome),
                multicast_connected,
            },
            credit_loop,
            channels: chans.len(),
            dependencies: fx.deps.len(),
            routes: fx.routes,
            failed_routes: fx.failures.len() + fx.looped,
        }
    }
}

/// A cycle among `edges` (which an unsat core guarantees), as its channels in order.
fn cycle_of(edges: &[(Chan, Chan)]) -> Option<Vec<Chan>> {
    let mut succ: BTreeMap<Chan, Vec<Chan>> = BTreeMap::new();
    for &(a, b) in edges {
        succ.entry(a).or_default().push(b);
    }
    // Iterative DFS with colours; a back edge closes the cycle.
    let mut colour: BTreeMap<Chan, u8> = BTreeMap::new();
    for &start in succ.keys() {
        if colour.contains_key(&start) {
            continue;
        }
        let mut path: Vec<(Chan, usize)> = vec![(start, 0)];
        colour.insert(start, 1);
        while let Some(&mut (v, ref mut i)) = path.last_mut() {
            let next = succ.get(&v).and_then(|s| s.get(*i)).copied();
            *i += 1;
            match next {
                None => {
                    colour.insert(v, 2);
                    path.pop();
                }
                Some(w) => match colour.get(&w) {
                    Some(1) => {
                        let from = path.iter().position(|(c, _)| *c == w)?;
                        return Some(path.get(from..)?.iter().map(|(c, _)| *c).collect());
                    }
                    Some(_) => {}
                    None => {
                        colour.insert(w, 1);
                        path.push((w, 0));
                    }
                },
            }
        }
    }
    None
}

fn node_ref(st: &FabricState, n: NodeId) -> NodeRef {
    let node = st.fabric.nodes().get(n.index());
    NodeRef {
        id: n,
        name: node.map(|x| x.name().to_owned()).unwrap_or_default(),
        guid: node.map(|x| x.guid()).unwrap_or(weft_fabric::Guid(0)),
    }
}

fn channel(st: &FabricState, c: Chan) -> Channel {
    let peer = st.fabric.peer(PortRef {
        node: c.0,
        port: PortNum(c.1),
    });
    Channel {
        node: node_ref(st, c.0),
        port: c.1,
        to: node_ref(st, peer.map_or(c.0, |p| p.0.node)),
        to_port: peer.map_or(0, |p| p.0.port.0),
        vl: c.2,
    }
}

fn witness(st: &FabricState, fx: &Facts, cyc: &[Chan]) -> CreditLoop {
    let mut cycle = Vec::new();
    for (k, &a) in cyc.iter().enumerate() {
        let b = cyc.get((k + 1) % cyc.len()).copied().unwrap_or(a);
        let Some(&origin) = fx.deps.get(&(a, b)) else {
            continue;
        };
        let (s, p, d, sl, hops, owner) = match origin {
            Origin::Route(s, p, d, sl) => (
                s,
                p,
                d,
                sl,
                reference::follow(st, s, p, d, sl),
                reference::owner(st, d).unwrap_or((NodeId(0), 0)),
            ),
            Origin::Copy(m, s, p, sl, k) => {
                let hops = reference::flood(st, m, sl, s, p).path(k);
                // The copy's route ends where its last hop leads.
                let end = hops
                    .last()
                    .and_then(|h| st.fabric.peer(PortRef::new(h.node, h.out)))
                    .map_or((s, p), |(q, _)| (q.node, q.port.0));
                (s, p, Lid(m.get()), sl, hops, end)
            }
        };
        cycle.push(Dependency {
            from: channel(st, a),
            to: channel(st, b),
            route: Route {
                src: Endpoint {
                    node: node_ref(st, s),
                    port: p,
                },
                dlid: d,
                dst: Endpoint {
                    node: node_ref(st, owner.0),
                    port: owner.1,
                },
                sl,
                hops: hops
                    .iter()
                    .map(|h| Hop {
                        node: node_ref(st, h.node),
                        in_port: h.in_port,
                        out_port: Some(h.out),
                        vl: Some(h.vl),
                    })
                    .collect(),
            },
        });
    }
    let mut channels: Vec<Channel> = cyc.iter().map(|&c| channel(st, c)).collect();
    channels.sort();
    CreditLoop { channels, cycle }
}
