//! `fat_tree`: destination-based up/down routing with OpenSM ftree's semantics, completed by
//! sFtree so that every switch reaches every switch, deadlock-free on one VL.
//!
//! **Accepts** fat-trees: every switch has a tree level (recorded by the stdlib templates, or
//! found from the cabling by [`super::shape`]: switches with hosts are leaves, level 1,
//! and each further level is one cable further from the leaves, down links included, with the
//! switches outside the levels set aside); hosts hang off leaves only; every switch-to-switch
//! cable between switches of the levels joins adjacent levels (cables inside a level are
//! tolerated and used only as sFtree sibling links). Service nodes (SHARP aggregation nodes,
//! storage, management) may hang off any switch. Degraded (links or switches
//! down) and oversubscribed trees are fine. Anything else is refused with the reason. The one
//! other method is step 6 below, on a fat-tree too degraded for steps 1–5: its tables are
//! Up*/Down*'s, and the routes record `updn` as the engine used ([`Routes::engine_used`]).
//!
//! **Routes**, for each destination LID in leaf order then port order (switch LIDs last):
//! 1. the *main path*: from the destination's leaf, climb through the least-loaded up port
//!    (ties: lowest port) to a top switch, the destination's single root; each switch on it
//!    points down toward the destination, and the down ports' load counters grow, so
//!    destinations on one leaf spread over different up ports and the downward path of a
//!    destination is dedicated in a non-blocking tree;
//! 2. *up entries*: every switch below a main-path switch routes up to it (lowest first, so
//!    traffic turns at the lowest common ancestor): a child of the main-path switch directly,
//!    a switch further down through one of its parents on the way there — the one in a k-ary
//!    n-tree, where a core reaches one spine per pod; where a core reaches several spines of a
//!    pod (Selene's storage fabric, in two planes), round-robin over them per switch, counted
//!    apart per set of parents, so that every uplink of a leaf carries its share
//!    (`DESCEND`);
//! 3. *secondary paths*: every other ancestor of the destination points down toward it, and
//!    the switches below those route up to them, so every switch that can reach the destination
//!    by an up/down path has an entry;
//!    then every entry is made a step of a shortest up*/down* path wherever one exists
//!    (`shortest`: a leaf missing its cable to the main path's spine turns at a spine it
//!    shares with the destination's leaf, not over a core);
//! 4. *sFtree* (Bogdanski et al., TACO 2012, Algorithms 1–2): the subtree root is the first
//!    leaf whose table reaches every switch LID; any switch still without an entry for a
//!    destination forwards it as it forwards the subtree root's LID. All down→up turns then
//!    happen inside the one subtree converging on that leaf, so the whole fabric stays
//!    deadlock-free on one VL (the paper's Theorem 5.2) — in a k-ary n-tree. Routes between
//!    hosts that no up*/down* path joins then turn nearer than the root wherever that closes
//!    no channel dependency cycle with the tables (`Ladders::shorten_turns`). Where a core
//!    reaches several of the root's parents, routes coming down into the root through one of
//!    them and turning up through another close a credit loop over that core, so the root's
//!    parents are grouped into classes that share switches above, and routes into the root
//!    that turn there come down, and leave it, through one *gateway* per class (`Gateways`;
//!    with every parent its own class, as in a k-ary n-tree, nothing changes). If the root
//!    cannot reach a destination, a same-level sibling linked to it is tried (the paper's
//!    multi-core case). The result is checked (complete, channel dependencies acyclic with
//!    every switch a source); on a degraded tree the next candidate root is tried;
//! 5. *turn by turn*, when no root works (faults that cut switches off from the top need
//!    down→up turns in more than one place): the dependency graph of every up*/down* turn is
//!    kept acyclic while the missing entries join each destination's routes breadth first,
//!    a new down→up turn admitted only when it closes no cycle (see `complete_acyclic`);
//! 6. and should that fail too, *Up*/Down* from one top switch* (complete and deadlock-free on
//!    any connected fabric), with a note and the reason in the engine line: never silently.
//!
//! **VF LIDs** (VMs on vSwitch hypervisors, vSwitchFatTree of Paper A): a VF's LID leaves
//! the tree where its hypervisor's does, and its main path is chosen first — VF LIDs by leaf,
//! hypervisors with fewer VF LIDs first, then the physical LIDs — adding `1/n` of a
//! destination's load (`n` the VF LIDs behind that hypervisor port), so each hypervisor's VMs
//! weigh one cable together and spread over the up ports. With one VM per hypervisor this is
//! exactly `fat_tree`'s routing of the hypervisors, for the VMs and the hypervisors alike.
//!
//! **Service nodes and set-aside switches**: a service node's LID is routed like a switch's
//! own LID is (its main path climbs from its switch, then steps 2–4), after every host's, so
//! it takes nothing from the hosts' balance; a switch set aside by [`super::shape`] (a
//! management sub-tree, a spare switch) has no up or down ports: steps 4–5 leave it and the
//! destinations on it out, and it is routed through the switch of the levels it hangs off
//! (`Islands`): every switch reaches it as it reaches that switch's own LID, and it reaches
//! everything up through that switch. No route enters a set-aside part and leaves it, so it
//! adds no channel dependency the routes of the levels lack: it is proven with them, wherever
//! it hangs. The subtree root is chosen among the leaves reaching every switch of the levels.
//!
//! **LMC > 0** (which OpenSM's ftree refuses): the `2^lmc` LIDs of a port take main paths
//! through different up ports at every level where the tree allows (different roots,
//! link-disjoint up paths from every source), giving APM a disjoint alternate path.
//!
//! Parallel cables between two switches share load by destination LID.

use super::graph::{Exit, Graph, Load, Table};
use super::{Claims, Engine, RouteError, RouteNote, Routes, RoutingEngine, RoutingInput};
use crate::code::Code;
use rayon::prelude::*;
use weft_fabric::LidAssignment;
use weft_fabric::LFT_UNSET;

mod shortest;

/// The fat-tree engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct FatTree;

/// The engine's name in `routing { engine = … }`.
pub(super) const NAME: &str = "fat_tree";

/// Column marker for "climb to some parent that has an entry": resolved per switch once all
/// columns are known, so that each switch spreads these entries round-robin over its up ports.
const CLIMB: u8 = 254;

/// Column marker for "climb toward the main path": a switch two or more levels below a
/// main-path switch goes up to one of its parents on the way there (a parent the main-path
/// switch's descent reached). Resolved per switch like [`CLIMB`], round-robin over those
/// parents, so that sources spread over every parent leading to the main path — one per pod
/// under each core in a k-ary n-tree, several where a core has several spines in a pod.
const DESCEND: u8 = 253;

/// Column marker for "climb to a parent one link nearer on a shortest up*/down* path", set
/// by [`shortest`] where a switch has several such parents: resolved per switch like
/// [`CLIMB`], round-robin over them.
const NEAR: u8 = 252;

/// Levels and up/down port groups of a fat-tree.
struct Tree {
    /// Level per switch (leaves are 1).
    level: Vec<u8>,
    /// Per switch: indices into `graph.switches[s].groups` going up, down, sideways.
    up: Vec<Vec<usize>>,
    down: Vec<Vec<usize>>,
    side: Vec<Vec<usize>>,
    /// Switches from the top level down (ties in fabric order).
    top_down: Vec<usize>,
}

/// The level of a switch set aside by [`super::shape`] (outside the tree's levels).
const ASIDE: u8 = 0;

/// Level per switch of the graph: recorded when every switch records one (1 or more), else
/// found from the hosts with the switches outside the levels at [`ASIDE`].
fn levels(g: &Graph, input: &RoutingInput<'_>) -> Result<Vec<u8>, RouteError> {
    let f = input.fabric;
    let recorded: Vec<Option<u8>> = g.switches.iter().map(|s| f.node(s.id).spec.level).collect();
    if recorded.iter().all(|l| l.is_some_and(|l| l >= 1)) && !recorded.is_empty() {
        return Ok(recorded.into_iter().map(|l| l.unwrap_or(ASIDE)).collect());
    }
    // Found from the cabling (down links included, so faults do not reshape the tree).
    let found =
        super::shape::levels_from_hosts(f).map_err(|(reason, node)| RouteError::Unsupported {
            engine: NAME,
            reason,
            node,
        })?;
    Ok(g.switches
        .iter()
        .map(|s| found[s.id.index()].unwrap_or(ASIDE))
        .collect())
}

fn tree(g: &Graph, input: &RoutingInput<'_>) -> Result<Tree, RouteError> {
    let f = input.fabric;
    let level = levels(g, input)?;
    let name = |i: usize| f.node(g.switches[i].id).name().to_owned();
    let computed = !g.switches.iter().all(|s| f.node(s.id).spec.level.is_some());
    let n = g.switches.len();
    let (mut up, mut down, mut side) = (
        vec![Vec::new(); n],
        vec![Vec::new(); n],
        vec![Vec::new(); n],
    );
    for (i, s) in g.switches.iter().enumerate() {
        if s.has_hosts && level[i] != 1 {
            return Err(RouteError::Unsupported {
                engine: NAME,
                reason: format!(
                    "hosts hang off `{}`, which is at level {}, not a leaf",
                    name(i),
                    level[i]
                ),
                node: Some(s.id),
            });
        }
        for (k, grp) in s.groups.iter().enumerate() {
            let (a, b) = (level[i], level[grp.peer as usize]);
            if a == ASIDE || b == ASIDE {
                // A cable of a switch outside the levels: used only to complete the tables.
                continue;
            }
            if b == a + 1 {
                up[i].push(k);
            } else if a == b + 1 {
                down[i].push(k);
            } else if a == b && !(computed && a == 1) {
                side[i].push(k);
            } else {
                let why = if a == b {
                    format!(
                        "`{}` and `{}` both have hosts (so both are leaves) and are cabled to each other; a fat-tree links leaves only through switches above them",
                        name(i),
                        name(grp.peer as usize)
                    )
                } else {
                    format!(
                        "`{}` (level {a}) is cabled to `{}` (level {b}); fat-tree cables join adjacent levels",
                        name(i),
                        name(grp.peer as usize)
                    )
                };
                return Err(RouteError::Unsupported {
                    engine: NAME,
                    reason: why,
                    node: Some(s.id),
                });
            }
        }
    }
    let mut top_down: Vec<usize> = (0..n).collect();
    top_down.sort_by_key(|&i| (std::cmp::Reverse(level[i]), i));
    Ok(Tree {
        top_down,
        level,
        up,
        down,
        side,
    })
}

/// The main path of one destination LID: `(switch, down port)` from the leaf upward.
type Chain = Vec<(u32, u8)>;

impl RoutingEngine for FatTree {
    fn name(&self) -> &'static str {
        NAME
    }

    fn claims(&self, lids: &LidAssignment) -> Claims {
        Claims {
            deadlock_free: true,
            apm_disjoint: lids.lmc > 0,
        }
    }

    fn route(&self, input: &RoutingInput<'_>) -> Result<Routes, RouteError> {
        let g = Graph::new(input.fabric, input.lids);
        if g.switches.is_empty() {
            return Err(RouteError::Unsupported {
                engine: NAME,
                reason: "the fabric has no switches".into(),
                node: None,
            });
        }
        if let Some(big) = g.switches.iter().find(|s| s.ports >= NEAR) {
            return Err(RouteError::Unsupported {
                engine: NAME,
                reason: format!(
                    "`{}` has {} ports; LFT port numbers stop at 251 here",
                    input.fabric.node(big.id).name(),
                    big.ports
                ),
                node: Some(big.id),
            });
        }
        let t = tree(&g, input)?;
        let nlids = usize::from(g.max_lid) + 1;

        // VF LIDs (vSwitchFatTree): each weighs 1/n of its hypervisor's cable, n the VF LIDs
        // behind that port; physical LIDs weigh 1.
        let vf_count = vf_counts(input);
        // Destination order: VF LIDs by leaf (fabric order), their hypervisors by VF count
        // (fewest first: the heaviest VMs are balanced first), leaf port; then host LIDs by
        // leaf then leaf port; then service nodes' LIDs (aggregation, storage, management:
        // after every host, so they take nothing from the hosts' balance) by the level of
        // their switch, switch, port; then switch LIDs by level (lowest first) then fabric
        // order.
        let service = service_lids(&g, input.fabric);
        let mut order: Vec<(u8, u8, u32, u32, u8, u16)> = g
            .exits
            .iter()
            .enumerate()
            .filter_map(|(lid, e)| {
                let Exit { sw, port } = (*e)?;
                let vfs = vf_count.get(lid).copied().unwrap_or(0);
                let (class, level) = match (port, vfs) {
                    (0, _) => (3, t.level[sw as usize]),
                    _ if service.get(lid).copied().unwrap_or(false) => (2, t.level[sw as usize]),
                    (_, 0) => (1, 0),
                    _ => (0, 0),
                };
                Some((class, level, sw, vfs, port, lid as u16))
            })
            .collect();
        order.sort_unstable();

        // Phase 1 (sequential): main paths, balancing down-port load.
        let mut load = Load::new(&g);
        let lmc = input.lids.lmc.min(7);
        let mut chains: Vec<Chain> = vec![Vec::new(); nlids];
        // Per LID and switch of its main path, its rank among the destinations whose main
        // paths pass that switch (in routing order): which of parallel cables a switch takes
        // toward that one for it, so that those destinations (one leaf's after another's)
        // take the cables in turn.
        let mut spread: Vec<Vec<u32>> = vec![Vec::new(); nlids];
        let mut through: Vec<u32> = vec![0; g.switches.len()];
        for &(_, _, _, vfs, _, lid) in &order {
            let Some(exit) = g.exits[usize::from(lid)] else {
                continue;
            };
            // LIDs of the same port, earlier in its LMC block, whose choices to avoid.
            let offset = if exit.port == 0 {
                0
            } else {
                lid & ((1 << lmc) - 1)
            };
            let siblings: Vec<&Chain> = (1..=offset)
                .filter_map(|k| chains.get(usize::from(lid - k)))
                .collect();
            let weight = WEIGHT_SCALE / u64::from(vfs.max(1));
            let chain = main_path(&g, &t, exit, &mut load, &siblings, weight);
            spread[usize::from(lid)] = chain
                .iter()
                .map(|&(sw, _)| {
                    let next = &mut through[sw as usize];
                    *next += 1;
                    *next - 1
                })
                .collect();
            chains[usize::from(lid)] = chain;
        }

        // Phase 2 (parallel per destination): up entries and secondary paths, then every
        // entry a step of a shortest up*/down* path where one exists.
        let ladders = shortest::Ladders::of(&g, &t);
        // Per destination, the switches whose entries carry no host traffic (secondary
        // paths, climbs): a bit set, dealt over parallel cables after the others.
        let (columns, secondary): (Vec<Vec<u8>>, Vec<Vec<u64>>) = (0..nlids)
            .into_par_iter()
            .map(|lid| match g.exits[lid] {
                Some(exit) => {
                    let (mut col, secondary) = column(&g, &t, exit, &chains[lid], &spread[lid]);
                    ladders.straighten(&g, &t, exit.sw as usize, lid, &mut col);
                    (col, secondary)
                }
                None => (g.empty_column(), Vec::new()),
            })
            .unzip();

        // Phase 3: climbs resolved to parents with up/down entries of their own — before
        // sFtree, whose completed entries lead toward the subtree root and may come straight
        // back down to the climbing switch.
        let mut rows = resolve_climbs(&g, &t, &ladders, g.rows(&columns));
        drop(columns);

        // Phase 4: each bundle of parallel cables dealt by per-port counters, in routing order.
        let weight: Vec<u64> = {
            let mut w = vec![WEIGHT_SCALE; nlids];
            for &(_, _, _, vfs, _, lid) in &order {
                if let Some(x) = w.get_mut(usize::from(lid)) {
                    *x = WEIGHT_SCALE / u64::from(vfs.max(1));
                }
            }
            w
        };
        // Hosts (VF LIDs with them), service nodes, switches: each kind dealt on its own.
        let kinds: Vec<Vec<u16>> = [0..=1, 2..=2, 3..=3]
            .into_iter()
            .map(|k| {
                order
                    .iter()
                    .filter(|o| k.contains(&o.0))
                    .map(|o| o.5)
                    .collect()
            })
            .collect();
        let kinds: Vec<&[u16]> = kinds.iter().map(Vec::as_slice).collect();
        let order: Vec<u16> = order.iter().map(|o| o.5).collect();
        let bit = |set: &[Vec<u64>], i: usize, j: usize| {
            set.get(i)
                .and_then(|b| b.get(j / 64))
                .is_some_and(|w| w >> (j % 64) & 1 == 1)
        };
        let weigh = |lid: usize| weight.get(lid).copied().unwrap_or(WEIGHT_SCALE);
        super::cables::deal(&g, &mut rows, &kinds, weigh, |s, lid| {
            bit(&secondary, lid, s)
        });
        // Per switch, the destinations it has no entry for yet: sFtree completes them (toward
        // its subtree root), and they are dealt again with the secondary ones.
        let unset: Vec<Vec<u64>> = rows
            .par_iter()
            .map(|row| {
                let mut b = vec![0u64; row.len().div_ceil(64)];
                for (lid, &e) in row.iter().enumerate() {
                    if e == LFT_UNSET {
                        b[lid / 64] |= 1 << (lid % 64);
                    }
                }
                b
            })
            .collect();

        // Phase 5: sFtree completion through the subtree root, checked.
        match sftree(&g, &t, &ladders, rows, input, &order) {
            Ok((mut rows, notes)) => {
                // The same deal for the entries there were (every cable keeps its
                // destinations), the completed ones dealt with the secondary ones: a cable
                // changed for one of the same bundle, so the routes' switches are the same.
                super::cables::deal(&g, &mut rows, &kinds, weigh, |s, lid| {
                    bit(&secondary, lid, s) || bit(&unset, s, lid)
                });
                Ok(Routes {
                    lfts: g.lfts_from_rows(rows),
                    notes,
                    layers: None,
                    engine_used: None,
                })
            }
            Err(err @ RouteError::CreditLoop { .. }) => last_resort(&g, &t, input, &err),
            Err(err) => Err(err),
        }
    }
}

/// When neither a subtree root nor the dependency-aware search completes a degraded tree
/// without a credit loop: Up*/Down* from one top switch, which is complete and deadlock-free on
/// one VL on any connected fabric, said in a note (fat-tree balance is lost, so the operator
/// must know). `err` is the refusal the note reports.
fn last_resort(
    g: &Graph,
    t: &Tree,
    input: &RoutingInput<'_>,
    err: &RouteError,
) -> Result<Routes, RouteError> {
    let Some(&top) = t.top_down.first() else {
        return Err(err.clone());
    };
    let root = g.switches[top].id;
    let config = crate::RoutingConfig {
        roots: vec![root],
        ..input.config.clone()
    };
    let mut routes = super::updn::UpDown.route(&RoutingInput {
        config: &config,
        ..*input
    })?;
    let tried = match err {
        RouteError::CreditLoop { tried, .. } => *tried,
        _ => 0,
    };
    routes.engine_used = Some(Engine::Updn);
    routes.notes.push(RouteNote {
        code: Code::FatTreeUpdn,
        message: format!(
            "no fat-tree routing of this degraded tree was free of credit loops on one VL (sFtree from {tried} subtree roots, then turn by turn), so the tables are Up*/Down* from `{}`: complete and deadlock-free, without the fat-tree balance",
            input.fabric.node(root).name()
        ),
    });
    Ok(routes)
}

/// The load one physical destination adds to each port of its main path; a VF LID adds
/// `WEIGHT_SCALE / n`, `n` the VF LIDs behind its hypervisor's port (divisible for every `n`
/// up to 16, so those weights sum to exactly one physical destination's).
const WEIGHT_SCALE: u64 = 720_720;

/// Per LID, how many VF LIDs its hypervisor port holds (0: not a VF's LID).
fn vf_counts(input: &RoutingInput<'_>) -> Vec<u32> {
    let vports = &input.lids.vports;
    let mut per_port: std::collections::BTreeMap<weft_fabric::PortRef, u32> =
        std::collections::BTreeMap::new();
    for v in vports.iter().filter(|v| v.lid.is_some()) {
        *per_port.entry(v.host).or_insert(0) += 1;
    }
    let mut out = vec![0; usize::from(input.lids.max_lid(input.fabric)) + 1];
    for v in vports {
        if let Some(slot) = v.lid.and_then(|l| out.get_mut(usize::from(l.0))) {
            *slot = per_port.get(&v.host).copied().unwrap_or(1);
        }
    }
    out
}

/// Per LID, whether its owner is a service node (an end node whose role is not `host`).
fn service_lids(g: &Graph, f: &weft_fabric::Fabric) -> Vec<bool> {
    g.owners
        .iter()
        .map(|o| o.is_some_and(|n| !f.node(n).is_switch() && !f.node(n).is_host()))
        .collect()
}

/// Climbs from the destination's exit switch to a top switch through least-loaded up ports,
/// adding `weight` to each down port it takes.
fn main_path(
    g: &Graph,
    t: &Tree,
    exit: Exit,
    load: &mut Load,
    avoid: &[&Chain],
    weight: u64,
) -> Chain {
    let mut chain = vec![(exit.sw, exit.port)];
    let mut cur = exit.sw as usize;
    loop {
        let s = &g.switches[cur];
        // Candidate (parent, parent's down port), scored by (used by a sibling LID, load, port).
        let mut best: Option<((u8, u64, u8), u32, u8)> = None;
        for &k in &t.up[cur] {
            let grp = &s.groups[k];
            for &(mine, theirs) in &grp.ports {
                let parent = grp.peer;
                let reused = avoid.iter().any(|c| c.iter().any(|&(sw, _)| sw == parent)) as u8;
                let l = load.get(parent as usize, theirs);
                let score = (reused, l, mine);
                if best.is_none_or(|(b, _, _)| score < b) {
                    best = Some((score, parent, theirs));
                }
            }
        }
        let Some((_, parent, theirs)) = best else {
            break;
        };
        load.add_weight(parent as usize, theirs, weight);
        chain.push((parent, theirs));
        cur = parent as usize;
    }
    chain
}

/// The port of `child` in cable group `group` (toward one neighbour), spreading parallel
/// cables by `key`: the destination LID, or (host routes) its rank among its root's
/// destinations.
fn port_toward(g: &Graph, child: usize, group: usize, key: impl Into<u32>) -> u8 {
    let Some(ports) = g.switches.get(child).and_then(|s| s.groups.get(group)) else {
        return LFT_UNSET;
    };
    match ports.ports.as_slice() {
        [(p, _)] => *p,
        many => many
            .get(key.into() as usize % many.len().max(1))
            .map_or(LFT_UNSET, |p| p.0),
    }
}

/// One destination's entries on every switch: main path, up entries, secondary paths. The
/// switches below main-path switch `chain[i]` take parallel cables toward it by `spread[i]`,
/// the destination's rank among those whose main paths pass it; the ancestors pointing down
/// toward the main path by its rank at the top.
fn column(g: &Graph, t: &Tree, exit: Exit, chain: &Chain, spread: &[u32]) -> (Vec<u8>, Vec<u64>) {
    let mut col = g.empty_column();
    let mut secondary = vec![0u64; col.len().div_ceil(64)];
    let mut mark = |s: usize| {
        if let Some(w) = secondary.get_mut(s / 64) {
            *w |= 1 << (s % 64);
        }
    };
    col[exit.sw as usize] = exit.port;
    for &(sw, port) in chain.iter().skip(1) {
        col[sw as usize] = port;
    }
    let mut stack = Vec::new();
    // Per switch marked DESCEND: its group toward the one parent on the way that reached it
    // (and the spread key of the main-path switch the descent started from), or SEVERAL once
    // a second one does.
    const SEVERAL: u32 = u32::MAX;
    let mut way: Vec<(usize, u32, u32)> = Vec::new();
    let mut at = vec![u32::MAX; 0];
    let key = |i: usize| spread.get(i).copied().unwrap_or(0);
    for (i, &(from, _)) in chain.iter().enumerate() {
        let from = from as usize;
        let spread = key(i);
        stack.push(from);
        while let Some(x) = stack.pop() {
            for &k in &t.down[x] {
                let grp = &g.switches[x].groups[k];
                let c = grp.peer as usize;
                if col[c] == DESCEND && x != from {
                    // Another parent on the way (x was reached going down from the main path).
                    if let Some(w) = at.get(c).and_then(|&i| way.get_mut(i as usize)) {
                        w.1 = SEVERAL;
                    }
                    continue;
                }
                if col[c] != LFT_UNSET {
                    continue;
                }
                // A child of the main-path switch goes up to it (through the child's group
                // toward x, an up group of the child); a switch further down to one of its
                // parents on the way: the one when only one is, else chosen per switch once
                // all columns are known.
                if x == from {
                    col[c] = port_toward(g, c, grp.back as usize, spread);
                } else {
                    col[c] = DESCEND;
                    if at.is_empty() {
                        at = vec![u32::MAX; col.len()];
                    }
                    at[c] = way.len() as u32;
                    way.push((c, grp.back, spread));
                }
                stack.push(c);
            }
        }
    }
    for (c, back, spread) in way {
        if back != SEVERAL {
            col[c] = port_toward(g, c, back as usize, spread);
        }
    }
    // Secondary: every ancestor points down toward a switch that has an entry.
    let top = key(chain.len().saturating_sub(1));
    let mut queue: std::collections::VecDeque<(usize, u32)> =
        chain.iter().map(|&(s, _)| (s as usize, top)).collect();
    while let Some((x, k0)) = queue.pop_front() {
        for &k in &t.up[x] {
            let grp = &g.switches[x].groups[k];
            let p = grp.peer as usize;
            if col[p] != LFT_UNSET {
                continue;
            }
            col[p] = port_toward(g, p, grp.back as usize, k0);
            mark(p);
            queue.push_back((p, k0));
        }
    }
    // Everybody else climbs to a parent that has an entry, top level first. These entries
    // carry only switch-originated traffic (hosts follow the main path); which parent is chosen
    // per switch later, round-robin over the destinations ([`resolve_climbs`]).
    for &s in &t.top_down {
        if col[s] == LFT_UNSET
            && t.up[s]
                .iter()
                .any(|&k| col[g.switches[s].groups[k].peer as usize] != LFT_UNSET)
        {
            col[s] = CLIMB;
            mark(s);
        }
    }
    (col, secondary)
}

/// How many subtree roots sFtree tries on a degraded tree before it refuses.
const ROOT_CANDIDATES: usize = 16;

/// sFtree: picks the subtree root and completes every switch's row through it. The result is
/// checked here — complete, and one-VL acyclic with every switch a source; on a degraded tree
/// where a root's completion would close a credit loop, the next candidate root is tried, and
/// when none works the engine refuses, naming a switch and destination of the loop.
fn sftree(
    g: &Graph,
    t: &Tree,
    ladders: &shortest::Ladders,
    base: Vec<Vec<u8>>,
    input: &RoutingInput<'_>,
    order: &[u16],
) -> Result<(Vec<Vec<u8>>, Vec<RouteNote>), RouteError> {
    let f = input.fabric;
    let own_lid = g.switch_lids();
    let lid_of = |s: usize| own_lid.get(s).copied().flatten();
    let islands = Islands::of(g, t, &own_lid);
    // The LIDs of the switches in the levels (the ones set aside are reached through the
    // switch they hang off, whichever the root).
    let switch_lids: Vec<usize> = g
        .exits
        .iter()
        .enumerate()
        .filter_map(|(lid, e)| {
            e.filter(|e| e.port == 0 && t.level[e.sw as usize] != ASIDE)
                .map(|_| lid)
        })
        .collect();
    let leaves: Vec<usize> = (0..g.switches.len()).filter(|&i| t.level[i] == 1).collect();
    let rows = &base;
    // Algorithm 1: the first leaf reaching every switch LID. On a degraded tree the root
    // should also be reachable from every switch and reach as many destinations as possible:
    // when the first leaf falls short, leaves are tried best first on (switches reaching it,
    // switch LIDs it reaches, destinations it reaches), ties by fabric order.
    let destinations = g.exits.iter().flatten().count();
    let score = |s: usize| {
        let reaching = lid_of(s).map_or(0, |lid| {
            (0..rows.len())
                .filter(|&x| x == s || entry(rows, x, lid) != LFT_UNSET)
                .count()
        });
        let switches = switch_lids
            .iter()
            .filter(|&&lid| entry(rows, s, lid) != LFT_UNSET)
            .count();
        let all = rows.get(s).map_or(0, |r| {
            r.iter()
                .enumerate()
                .filter(|&(lid, &e)| e != LFT_UNSET && g.exits[lid].is_some())
                .count()
        });
        (reaching, switches, all)
    };
    let perfect = (rows.len(), switch_lids.len(), destinations);
    let first = leaves.iter().copied().find(|&s| {
        switch_lids
            .iter()
            .all(|&lid| entry(rows, s, lid) != LFT_UNSET)
    });
    let mut candidates: Vec<usize> = Vec::new();
    if let Some(s) = first {
        candidates.push(s);
    }
    if first.is_none_or(|s| score(s) != perfect) {
        let mut scored: Vec<((usize, usize, usize), usize)> =
            leaves.iter().map(|&s| (score(s), s)).collect();
        scored.sort_by_key(|&(sc, s)| (std::cmp::Reverse(sc), s));
        candidates.extend(
            scored
                .into_iter()
                .map(|(_, s)| s)
                .filter(|&s| Some(s) != first),
        );
    }
    candidates.truncate(ROOT_CANDIDATES);
    let mut refusal = None;
    let tries = candidates.len();
    for &root in &candidates {
        let Some(root_lid) = lid_of(root) else {
            continue;
        };
        let mut rows = base.clone();
        let (completed, relayed, gateways) = complete(g, t, &mut rows, root, root_lid);
        let aside = islands.fill(g, &mut rows);
        let verdict = match g.check_complete(f, NAME, Table::Rows(&rows)) {
            Err(e) => Err(e),
            Ok(()) => match g.first_cycle(&rows) {
                None => Ok(()),
                Some(c) => Err(RouteError::CreditLoop {
                    engine: NAME,
                    tried: tries,
                    switch: f.node(g.switches[c.switch].id).name().to_owned(),
                    to: g.lid_name(f, c.lid),
                }),
            },
        };
        if let Err(e) = verdict {
            refusal.get_or_insert(e);
            continue;
        }
        // Routes that need a down→up turn (no up*/down* path joins their ends) turn at the
        // nearest switch that keeps the tables free of cycles, not always at the root.
        let service = service_lids(g, f);
        ladders.shorten_turns(g, t, &mut rows, |lid| {
            !service.get(lid).copied().unwrap_or(true)
        });
        let name = |s: usize| format!("`{}`", f.node(g.switches[s].id).name());
        let through = match gateways.as_slice() {
            [] => String::new(),
            gates => format!(
                ", entered from above through {} (one parent per group of its parents sharing switches above)",
                gates.iter().map(|&s| name(s)).collect::<Vec<_>>().join(", ")
            ),
        };
        let mut notes = vec![RouteNote {
            code: Code::SftreeRoot,
            message: format!("sFtree subtree root is {}{through}", name(root)),
        }];
        if completed > 0 {
            notes.push(RouteNote {
                code: Code::SftreeEntries,
                message: format!("{completed} LFT entries route through the sFtree subtree"),
            });
        }
        notes.extend(islands.note(f, g, aside));
        if relayed > 0 {
            notes.push(RouteNote {
                code: Code::SftreeRelayed,
                message: format!(
                    "{relayed} LFT entries lead to a destination the subtree root cannot reach through the nearest switch that can"
                ),
            });
        }
        return Ok((rows, notes));
    }
    match refusal {
        Some(e @ RouteError::CreditLoop { .. }) => {
            // No root keeps every down→up turn harmless: choose the missing entries one by
            // one instead, each only where it closes no channel dependency cycle.
            let Some((mut rows, chosen, root)) = complete_acyclic(g, t, &base, order, &candidates)
            else {
                return Err(e);
            };
            let aside = islands.fill(g, &mut rows);
            if g.check_complete(f, NAME, Table::Rows(&rows)).is_err()
                || g.first_cycle(&rows).is_some()
            {
                return Err(e);
            }
            let mut notes = vec![RouteNote {
                code: Code::SftreeAcyclic,
                message: format!(
                    "no sFtree subtree root completes this degraded tree without a credit loop ({tries} tried); {chosen} LFT entries were chosen turn by turn so that no channel dependency cycle forms (down→up turns first at `{}`)",
                    f.node(g.switches[root].id).name()
                ),
            }];
            notes.extend(islands.note(f, g, aside));
            Ok((rows, notes))
        }
        Some(e) => Err(e),
        // No leaf with a LID: nothing to complete; whatever is unset is unreachable.
        None => {
            let mut base = base;
            let aside = islands.fill(g, &mut base);
            g.check_complete(f, NAME, Table::Rows(&base))?;
            Ok((base, islands.note(f, g, aside).into_iter().collect()))
        }
    }
}

/// Completes `rows` when no subtree root keeps sFtree's turns harmless (a degraded tree whose
/// cut-off switches need down→up turns in more than one place).
///
/// The channel dependency graph is grown from every turn an up*/down* route may take — up→up,
/// up→down, down→down, never back over the same link — not only the turns the base entries
/// take, so that any turn admitted later is safe against every up*/down* route. The down→up
/// turns at a subtree root are admitted first (each unless it closes a cycle: with the unique
/// up paths of a fat-tree none does). Then, for each destination in `order`, the switches
/// without an entry join its routes breadth first through the nearest neighbour whose turn is
/// admitted, admitting a new turn only when no neighbour's is and only when it closes no
/// cycle. Returns the completed rows, how many entries were set and the root whose turns
/// went first, or `None` when with every root some switch cannot join.
fn complete_acyclic(
    g: &Graph,
    t: &Tree,
    base: &[Vec<u8>],
    order: &[u16],
    roots: &[usize],
) -> Option<(Vec<Vec<u8>>, usize, usize)> {
    let ch = g.channels();
    // Turns: (in channel, out channel) at each switch; down→up ones kept aside.
    let mut turns: Vec<(u32, u32)> = Vec::new();
    let mut down_up: Vec<Vec<(u32, u32)>> = vec![Vec::new(); g.switches.len()];
    for (s, sw) in g.switches.iter().enumerate() {
        let kind = |k: usize| {
            let peer = sw.groups[k].peer as usize;
            t.level[peer].cmp(&t.level[s])
        };
        for (ki, gin) in sw.groups.iter().enumerate() {
            for &(_, theirs) in &gin.ports {
                let Some(into) = ch.id(gin.peer as usize, theirs) else {
                    continue;
                };
                for (ko, gout) in sw.groups.iter().enumerate() {
                    if gout.peer == gin.peer {
                        continue;
                    }
                    for &(mine, _) in &gout.ports {
                        let Some(out) = ch.id(s, mine) else {
                            continue;
                        };
                        let turn = (into as u32, out as u32);
                        use std::cmp::Ordering::{Greater, Less};
                        match (kind(ki), kind(ko)) {
                            (Less, _) | (Greater, Less) => turns.push(turn),
                            (Greater, Greater) => down_up[s].push(turn),
                            _ => {} // sideways: admitted on demand
                        }
                    }
                }
            }
        }
    }
    let deps = g.dependencies(&ch, base);
    let updown =
        super::acyclic::Acyclic::new(ch.count(), turns.into_iter().chain(ch.edges(&deps)))?;
    drop(deps);
    // Roots with turns to admit: the sFtree candidates (leaves), then every other switch,
    // lowest level first (where leaves have one parent, the turns must be higher).
    let mut by_level: Vec<usize> = (0..g.switches.len())
        .filter(|&s| t.level[s] != ASIDE)
        .collect();
    by_level.sort_by_key(|&s| (t.level[s], s));
    let mut tried: Vec<usize> = roots.to_vec();
    tried.extend(by_level.into_iter().filter(|s| !roots.contains(s)));
    tried.retain(|&s| !down_up[s].is_empty());
    tried.truncate(ROOT_CANDIDATES);
    tried.iter().find_map(|&root| {
        let mut cdg = updown.clone();
        for &(a, b) in &down_up[root] {
            cdg.insert(a, b);
        }
        let mut rows = base.to_vec();
        let chosen = join_acyclic(g, t, &ch, &mut cdg, &mut rows, order)?;
        Some((rows, chosen, root))
    })
}

/// A switch joining a destination's routes through a turn not admitted yet; ordered by the
/// turn's level (lowest first), then hops to the destination, switch and group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Join {
    level: u8,
    hops: u32,
    switch: usize,
    group: usize,
    port: u8,
    /// (the joining channel, the neighbour's next channel).
    turn: (u32, u32),
}

/// For each destination in `order`, the switches of `rows` without an entry join its routes
/// breadth first (see [`complete_acyclic`]); returns the entries set.
fn join_acyclic(
    g: &Graph,
    t: &Tree,
    ch: &super::graph::Channels,
    cdg: &mut super::acyclic::Acyclic,
    rows: &mut [Vec<u8>],
    order: &[u16],
) -> Option<usize> {
    let n = g.switches.len();
    let mut chosen = 0usize;
    let mut dist = vec![NO_ENTRY; n];
    let mut joined: Vec<(usize, u32)> = Vec::new();
    for &lid in order {
        let lid = usize::from(lid);
        // The switches set aside, and the destinations on them, are the islands' (filled
        // after).
        if g.exits[lid].is_some_and(|e| t.level[e.sw as usize] == ASIDE) {
            continue;
        }
        let mut missing: Vec<usize> = (0..n)
            .filter(|&s| t.level[s] != ASIDE && entry(rows, s, lid) == LFT_UNSET)
            .collect();
        if missing.is_empty() {
            continue;
        }
        // Hops to the destination's exit switch along the entries there are.
        for (s, d) in dist.iter_mut().enumerate() {
            *d = if entry(rows, s, lid) == LFT_UNSET {
                NO_ENTRY
            } else {
                UNCOUNTED
            };
        }
        for s in 0..n {
            hops(ch, rows, &mut dist, s, lid);
        }
        // Rounds through admitted turns only, breadth first; when none can join, the one new
        // turn that is lowest in the tree, then nearest, and back to admitted turns, so that
        // routes share the few down→up turns there are rather than each adding its own.
        let mut admit = false;
        while !missing.is_empty() {
            joined.clear();
            let mut fresh: Vec<Join> = Vec::new();
            for &x in &missing {
                let mut best: Option<(u32, usize, u8)> = None;
                for (k, grp) in g.switches[x].groups.iter().enumerate() {
                    let (y, d) = (grp.peer as usize, dist[grp.peer as usize]);
                    if d >= NO_ENTRY {
                        continue;
                    }
                    let port = port_toward(g, x, k, lid as u16);
                    let Some(from) = ch.id(x, port) else {
                        continue;
                    };
                    match ch.id(y, entry(rows, y, lid)) {
                        Some(to) if !cdg.contains(from as u32, to as u32) => fresh.push(Join {
                            level: t.level[y],
                            hops: d,
                            switch: x,
                            group: k,
                            port,
                            turn: (from as u32, to as u32),
                        }),
                        _ => {
                            if best.is_none_or(|b| (d, k) < (b.0, b.1)) {
                                best = Some((d, k, port));
                            }
                        }
                    }
                }
                if let (false, Some((d, _, port))) = (admit, best) {
                    rows[x][lid] = port;
                    joined.push((x, d + 1));
                }
            }
            if admit {
                fresh.sort_unstable();
                if let Some(j) = fresh.iter().find(|j| cdg.insert(j.turn.0, j.turn.1)) {
                    rows[j.switch][lid] = j.port;
                    joined.push((j.switch, j.hops + 1));
                }
            }
            if joined.is_empty() {
                if admit {
                    return None;
                }
                admit = true;
                continue;
            }
            admit = false;
            chosen += joined.len();
            for &(x, d) in &joined {
                dist[x] = d;
            }
            missing.retain(|&x| entry(rows, x, lid) == LFT_UNSET);
        }
    }
    Some(chosen)
}

/// `dist` of a switch with an entry whose hops are not counted yet.
const UNCOUNTED: u32 = u32::MAX;
/// `dist` of a switch without an entry.
const NO_ENTRY: u32 = u32::MAX - 1;

/// Fills `dist[s]` — hops from `s` to the exit switch of `lid` along the entries of `rows` —
/// and on the way every switch after it, memoised.
fn hops(ch: &super::graph::Channels, rows: &[Vec<u8>], dist: &mut [u32], s: usize, lid: usize) {
    let mut path = Vec::new();
    let mut x = s;
    let mut d = loop {
        if dist[x] != UNCOUNTED {
            break dist[x];
        }
        let next = ch.peer(x, entry(rows, x, lid));
        if next == u32::MAX {
            dist[x] = 0; // the exit switch
            break 0;
        }
        if path.len() > dist.len() {
            return; // a forwarding loop: the final check names it
        }
        path.push(x);
        x = next as usize;
    };
    if d == NO_ENTRY {
        return;
    }
    for &p in path.iter().rev() {
        d += 1;
        dist[p] = d;
    }
}

/// Fills `dist` with every switch's hops to the exit switch of `lid` along the entries of
/// `rows` ([`NO_ENTRY`] where the route has a hole or loops).
fn route_hops(ch: &super::graph::Channels, rows: &[Vec<u8>], dist: &mut [u32], lid: usize) {
    for (s, d) in dist.iter_mut().enumerate() {
        *d = if entry(rows, s, lid) == LFT_UNSET {
            NO_ENTRY
        } else {
            UNCOUNTED
        };
    }
    for s in 0..dist.len() {
        hops(ch, rows, dist, s, lid);
    }
    for d in dist.iter_mut() {
        if *d == UNCOUNTED {
            *d = NO_ENTRY;
        }
    }
}

/// One entry of per-switch rows, `LFT_UNSET` when out of range.
fn entry(rows: &[Vec<u8>], s: usize, lid: usize) -> u8 {
    rows.get(s)
        .and_then(|r| r.get(lid))
        .copied()
        .unwrap_or(LFT_UNSET)
}

/// Completes `rows` through `root` for the switches and destinations of the levels (the
/// switches set aside are [`Islands::fill`]ed afterwards): the root's LID through its
/// gateways ([`Gateways`]), Algorithm 2, and the relays a degraded tree needs. Returns
/// (entries completed through the root, entries relayed, the gateways when some stand for
/// several parents of the root).
fn complete(
    g: &Graph,
    t: &Tree,
    rows: &mut [Vec<u8>],
    root: usize,
    root_lid: usize,
) -> (usize, usize, Vec<usize>) {
    // Algorithm 2, sibling part: where the root has no entry, a same-level neighbour of the
    // root that has one (of its own, before any completion).
    let siblings: Vec<(usize, u8)> = t.side[root]
        .iter()
        .map(|&k| {
            let grp = &g.switches[root].groups[k];
            (
                grp.peer as usize,
                grp.ports.first().map_or(LFT_UNSET, |p| p.0),
            )
        })
        .collect();
    let nlids = rows.get(root).map_or(0, Vec::len);
    for lid in 0..nlids {
        if g.exits[lid].is_none() || entry(rows, root, lid) != LFT_UNSET {
            continue;
        }
        if let Some(&(_, port)) = siblings
            .iter()
            .find(|&&(sib, _)| entry(rows, sib, lid) != LFT_UNSET)
        {
            rows[root][lid] = port;
        }
    }
    let gateways = Gateways::of(g, t, root);
    gateways.route_root(g, t, rows, root, root_lid);
    // On a degraded tree some switches have no up*/down* route to the root (a spine whose up
    // links are all down reaches the rest only through its children): they forward the root's
    // LID toward the nearest switch that has a route to it.
    let mut bfs = Bfs::new(t);
    let mut relayed = bfs.complete(g, rows, root_lid);
    gateways.turn(g, rows, root, root_lid);
    // Algorithm 2: a switch without an entry for a destination the root reaches forwards it
    // as it forwards the root's own LID.
    let root_row = rows[root].clone();
    let completed: usize = rows
        .par_iter_mut()
        .enumerate()
        .map(|(s, row)| {
            if s == root || t.level[s] == ASIDE {
                return 0;
            }
            let toward_root = row.get(root_lid).copied().unwrap_or(LFT_UNSET);
            if toward_root == LFT_UNSET {
                return 0;
            }
            let mut n = 0;
            for (lid, e) in row.iter_mut().enumerate() {
                if *e == LFT_UNSET
                    && lid != root_lid
                    && g.exits[lid].is_some()
                    && root_row.get(lid).is_some_and(|&r| r != LFT_UNSET)
                {
                    *e = toward_root;
                    n += 1;
                }
            }
            n
        })
        .sum();
    // Destinations the root itself cannot reach (a switch LID reachable only from below):
    // every switch without an entry forwards toward the nearest switch that has one.
    let mut missing = vec![false; nlids];
    for (_, row) in rows
        .iter()
        .enumerate()
        .filter(|&(s, _)| t.level[s] != ASIDE)
    {
        for (m, &e) in missing.iter_mut().zip(row) {
            *m |= e == LFT_UNSET;
        }
    }
    for (lid, _) in missing.iter().enumerate().filter(|&(_, &m)| m) {
        if g.exits
            .get(lid)
            .copied()
            .flatten()
            .is_some_and(|e| t.level[e.sw as usize] != ASIDE)
        {
            relayed += bfs.complete(g, rows, lid);
        }
    }
    let shared = gateways.group.len() < t.up[root].len();
    let gates = if shared {
        gateways.switches(g, root)
    } else {
        Vec::new()
    };
    (completed, relayed, gates)
}

/// The subtree root's way in and out for sFtree's down→up turns.
///
/// Two parents of the root are of one *class* when they share a switch above (in a tree whose
/// cores each reach several spines of a pod, as Selene's do, all the spines of one plane are
/// one class; in a k-ary n-tree every parent is its own). Each class has one *gateway*, the
/// parent with the most up links (ties: the first). Routes that come down into the root and
/// turn up there come down through a gateway only ([`Gateways::route_root`]), and leave the
/// root up through a gateway ([`Gateways::turn`]); where they turn on the way, coming down
/// from a core into a gateway that routes them up again, that is the gateway too. On a 3-level
/// tree whose cores are each cabled to their class's gateway, a chain of channel dependencies
/// that leaves the root or a gateway up through gateway `G` can come back down to a turn only
/// over `G`'s own cable to the core it climbed to — a U-turn at that core, which no route takes
/// — so the turns close no credit loop. Elsewhere (more levels, cables missing at a gateway)
/// the check after the completion says whether they do.
///
/// Without gateways, a route up through spine `S` to core `C` (the root's own) and one down
/// from `C` through another spine `S'` of the class (a core's route to the root) join through
/// `S`'s route to `S'` over `C` into a loop `root → S → C → S' → root`, and with two planes
/// each half of the loop turns at the root into the other.
struct Gateways {
    /// Per group of the root: the class of an up group, `usize::MAX` for the others.
    class: Vec<usize>,
    /// Per class: the root's group toward its gateway.
    group: Vec<usize>,
}

impl Gateways {
    /// The classes and gateways of `root`'s parents: switches above each parent, joined where
    /// two meet.
    fn of(g: &Graph, t: &Tree, root: usize) -> Gateways {
        let ups = &t.up[root];
        let mut joined: Vec<usize> = (0..ups.len()).collect();
        let find = |joined: &mut [usize], mut x: usize| {
            while joined[x] != x {
                joined[x] = joined[joined[x]];
                x = joined[x];
            }
            x
        };
        // Which parent's search reached each switch first.
        let mut reached = vec![usize::MAX; g.switches.len()];
        let mut stack = Vec::new();
        for (i, &k) in ups.iter().enumerate() {
            stack.push(g.switches[root].groups[k].peer as usize);
            while let Some(x) = stack.pop() {
                if reached[x] != usize::MAX {
                    let (a, b) = (find(&mut joined, reached[x]), find(&mut joined, i));
                    joined[a.max(b)] = a.min(b);
                    continue;
                }
                reached[x] = i;
                stack.extend(
                    t.up[x]
                        .iter()
                        .map(|&u| g.switches[x].groups[u].peer as usize),
                );
            }
        }
        let ups_of = |k: usize| t.up[g.switches[root].groups[k].peer as usize].len();
        let mut class = vec![usize::MAX; g.switches[root].groups.len()];
        let mut group: Vec<usize> = Vec::new();
        let mut id = vec![usize::MAX; ups.len()];
        for (i, &k) in ups.iter().enumerate() {
            let r = find(&mut joined, i);
            if id[r] == usize::MAX {
                id[r] = group.len();
                group.push(k);
            }
            class[k] = id[r];
            if ups_of(k) > ups_of(group[id[r]]) {
                group[id[r]] = k;
            }
        }
        Gateways { class, group }
    }

    /// The gateways, by dense switch index.
    fn switches(&self, g: &Graph, root: usize) -> Vec<usize> {
        self.group
            .iter()
            .map(|&k| g.switches[root].groups[k].peer as usize)
            .collect()
    }

    /// Routes the root's own LID so that routes reach the root from above through a gateway
    /// only: each gateway goes down to the root, every switch above a gateway down toward one
    /// (the nearest, breadth first), and every other switch of the levels climbs — keeping its
    /// own climb when it leads to a switch with an entry — top level first. The switches left
    /// without an entry (set aside, or cut off from every gateway's ancestors) are relayed by
    /// the caller.
    fn route_root(&self, g: &Graph, t: &Tree, rows: &mut [Vec<u8>], root: usize, lid: usize) {
        let n = g.switches.len();
        let mut col = vec![LFT_UNSET; n];
        col[root] = entry(rows, root, lid);
        // Switch `s`'s entry through its group `k`: its own when that is one of the group's
        // cables (the main path's choice among parallel ones), else spread by LID.
        let through = |rows: &[Vec<u8>], s: usize, k: usize| {
            let own = entry(rows, s, lid);
            if g.switches[s].groups[k]
                .ports
                .iter()
                .any(|&(mine, _)| mine == own)
            {
                own
            } else {
                port_toward(g, s, k, lid as u16)
            }
        };
        let mut queue = std::collections::VecDeque::new();
        for &k in &self.group {
            let grp = &g.switches[root].groups[k];
            let p = grp.peer as usize;
            col[p] = through(rows, p, grp.back as usize);
            queue.push_back(p);
        }
        while let Some(x) = queue.pop_front() {
            for &k in &t.up[x] {
                let grp = &g.switches[x].groups[k];
                let p = grp.peer as usize;
                if col[p] == LFT_UNSET {
                    col[p] = through(rows, p, grp.back as usize);
                    queue.push_back(p);
                }
            }
        }
        for &s in &t.top_down {
            if col[s] != LFT_UNSET || s == root {
                continue;
            }
            let groups = &g.switches[s].groups;
            let set = |k: usize| col[groups[k].peer as usize] != LFT_UNSET;
            let own = entry(rows, s, lid);
            if let Some(&k) = t.up[s]
                .iter()
                .find(|&&k| set(k) && groups[k].ports.iter().any(|&(mine, _)| mine == own))
                .or_else(|| t.up[s].iter().find(|&&k| set(k)))
            {
                col[s] = through(rows, s, k);
            }
        }
        for (row, c) in rows.iter_mut().zip(col) {
            if let Some(e) = row.get_mut(lid) {
                *e = c;
            }
        }
    }

    /// Where a neighbour that routes the root's LID straight down to the root lacks an entry
    /// for a destination (so that routes toward it may come down into the root and turn up
    /// there), the root's entry for it leaves through a gateway that has one, not back toward
    /// the root: the gateway of the class of the parent the root's entry led to when that one
    /// has an entry, else the first that does.
    fn turn(&self, g: &Graph, rows: &mut [Vec<u8>], root: usize, root_lid: usize) {
        let groups = &g.switches[root].groups;
        let leads_to = |s: usize, port: u8, to: usize| {
            g.switches[s]
                .groups
                .iter()
                .any(|grp| grp.peer as usize == to && grp.ports.iter().any(|&(m, _)| m == port))
        };
        let into: Vec<usize> = groups
            .iter()
            .map(|grp| grp.peer as usize)
            .filter(|&p| leads_to(p, entry(rows, p, root_lid), root))
            .collect();
        // The root's group of each of its ports.
        let mut group_of = [usize::MAX; 256];
        for (k, grp) in groups.iter().enumerate() {
            for &(mine, _) in &grp.ports {
                group_of[usize::from(mine)] = k;
            }
        }
        let nlids = rows.get(root).map_or(0, Vec::len);
        for lid in 0..nlids {
            if lid == root_lid
                || g.exits[lid].is_none()
                || !into.iter().any(|&p| entry(rows, p, lid) == LFT_UNSET)
            {
                continue;
            }
            let k = group_of[usize::from(entry(rows, root, lid))];
            let Some(&class) = self.class.get(k) else {
                continue;
            };
            if class == usize::MAX || self.group[class] == k {
                continue;
            }
            let reaches = |c: usize| {
                let p = groups[self.group[c]].peer as usize;
                let e = entry(rows, p, lid);
                e != LFT_UNSET && !leads_to(p, e, root)
            };
            let class = if reaches(class) {
                Some(class)
            } else {
                (0..self.group.len()).find(|&c| reaches(c))
            };
            if let Some(c) = class {
                rows[root][lid] = port_toward(g, root, self.group[c], lid as u16);
            }
        }
    }
}

/// The switches set aside by [`super::shape`] (a management sub-tree, a spare switch), in
/// *islands* of switches cabled to each other, each routed through the one switch of the levels
/// it hangs off, its *anchor* (the highest-level one it is cabled to, then the first): every
/// switch reaches an island's switches as it reaches the anchor's own LID, and the anchor then
/// down the island; the island's switches reach everything up through the anchor, which
/// forwards as for its own traffic; inside an island, up and down a breadth-first tree from
/// the switch cabled to the anchor. No route enters an island and leaves it, and the routes
/// through the levels are the anchor's own, so the islands add no channel dependency that the
/// routes of the levels lack: they are deadlock-free and complete when those are.
struct Islands {
    /// Per switch: its island's index, `usize::MAX` for switches of the levels.
    of: Vec<usize>,
    /// Per island switch: its group toward its parent in the island's tree (for the switch
    /// cabled to the anchor: toward the anchor).
    up: Vec<usize>,
    list: Vec<Island>,
}

/// One island of [`Islands`].
struct Island {
    /// The switch of the levels it hangs off, and that switch's LID.
    anchor: usize,
    anchor_lid: usize,
    /// The anchor's group toward the island.
    down: usize,
    /// Its switches, breadth first from the one cabled to the anchor.
    members: Vec<usize>,
}

impl Islands {
    /// The islands of `t`'s set-aside switches; an island cabled to no switch of the levels
    /// with a LID is left out (its switches stay without entries, which the check refuses).
    fn of(g: &Graph, t: &Tree, own_lid: &[Option<usize>]) -> Islands {
        let n = g.switches.len();
        let aside = |s: usize| t.level.get(s) == Some(&ASIDE);
        let mut of = vec![usize::MAX; n];
        let mut up = vec![usize::MAX; n];
        let mut list = Vec::new();
        let mut seen = vec![false; n];
        let mut queue = std::collections::VecDeque::new();
        for first in (0..n).filter(|&s| aside(s)) {
            if seen[first] {
                continue;
            }
            // The island, and its anchor: (level, switch, member, member's group) best.
            let mut island = vec![first];
            seen[first] = true;
            let mut best: Option<(std::cmp::Reverse<u8>, usize, usize, usize)> = None;
            let mut i = 0;
            while let Some(&x) = island.get(i) {
                i += 1;
                for (k, grp) in g.switches[x].groups.iter().enumerate() {
                    let y = grp.peer as usize;
                    if aside(y) {
                        if !seen[y] {
                            seen[y] = true;
                            island.push(y);
                        }
                    } else if own_lid.get(y).is_some_and(Option::is_some) {
                        let c = (std::cmp::Reverse(t.level[y]), y, x, k);
                        if best.is_none_or(|b| c < b) {
                            best = Some(c);
                        }
                    }
                }
            }
            let Some((_, anchor, entry, k)) = best else {
                continue;
            };
            // The island's tree, breadth first from the switch cabled to the anchor.
            let index = list.len();
            let mut members = Vec::with_capacity(island.len());
            of[entry] = index;
            up[entry] = k;
            queue.push_back(entry);
            while let Some(x) = queue.pop_front() {
                members.push(x);
                for grp in &g.switches[x].groups {
                    let y = grp.peer as usize;
                    if aside(y) && of[y] == usize::MAX {
                        of[y] = index;
                        up[y] = grp.back as usize;
                        queue.push_back(y);
                    }
                }
            }
            list.push(Island {
                anchor,
                anchor_lid: own_lid[anchor].unwrap_or(0),
                down: g.switches[entry].groups[k].back as usize,
                members,
            });
        }
        Islands { of, up, list }
    }

    /// Sets every entry of the islands' switches and of the destinations on them (see
    /// [`Islands`]), over whatever `rows` held there; returns how many.
    fn fill(&self, g: &Graph, rows: &mut [Vec<u8>]) -> usize {
        let nlids = rows.first().map_or(0, Vec::len);
        let mut set = 0;
        // Per island switch, its group toward the next switch on the way to a destination.
        let mut toward = vec![usize::MAX; g.switches.len()];
        for (i, island) in self.list.iter().enumerate() {
            let here = |lid: usize| {
                g.exits
                    .get(lid)
                    .copied()
                    .flatten()
                    .map(|e| self.of.get(e.sw as usize) == Some(&i))
            };
            for lid in 0..nlids {
                match here(lid) {
                    None => {}
                    // Elsewhere: up toward the anchor.
                    Some(false) => {
                        for &b in &island.members {
                            rows[b][lid] = port_toward(g, b, self.up[b], lid as u16);
                            set += 1;
                        }
                    }
                    // Here: as to the anchor, then down the island's tree.
                    Some(true) => {
                        let Some(exit) = g.exits[lid] else {
                            continue;
                        };
                        for (s, row) in rows.iter_mut().enumerate() {
                            if self.of[s] == usize::MAX && s != island.anchor {
                                row[lid] = row[island.anchor_lid];
                                set += 1;
                            }
                        }
                        rows[island.anchor][lid] =
                            port_toward(g, island.anchor, island.down, lid as u16);
                        let mut x = exit.sw as usize;
                        while self.up[x] != usize::MAX && x != island.members[0] {
                            let grp = &g.switches[x].groups[self.up[x]];
                            toward[grp.peer as usize] = grp.back as usize;
                            x = grp.peer as usize;
                        }
                        for &b in &island.members {
                            if b == exit.sw as usize {
                                continue;
                            }
                            let k = match toward[b] {
                                usize::MAX => self.up[b],
                                k => k,
                            };
                            rows[b][lid] = port_toward(g, b, k, lid as u16);
                            toward[b] = usize::MAX;
                            set += 1;
                        }
                    }
                }
            }
        }
        set
    }

    /// The note saying how `set` entries reach the islands, if any.
    fn note(&self, f: &weft_fabric::Fabric, g: &Graph, set: usize) -> Option<RouteNote> {
        if set == 0 {
            return None;
        }
        let switches: usize = self.list.iter().map(|i| i.members.len()).sum();
        let mut anchors: Vec<usize> = self.list.iter().map(|i| i.anchor).collect();
        anchors.sort_unstable();
        anchors.dedup();
        let names: Vec<String> = anchors
            .iter()
            .take(3)
            .map(|&s| format!("`{}`", f.node(g.switches[s].id).name()))
            .collect();
        let more = match anchors.len().saturating_sub(3) {
            0 => String::new(),
            m => format!(" and {m} more"),
        };
        let message = if switches == 1 {
            format!(
                "{set} LFT entries route the switch set aside through the switch it hangs off ({}): every switch reaches it as it reaches that switch, and it reaches everything through that switch",
                names.join(", ")
            )
        } else {
            format!(
                "{set} LFT entries route the {switches} switches set aside through the switch{} they hang off ({}{more}): every switch reaches them as it reaches the switch they hang off, and they reach everything through it",
                if anchors.len() == 1 { "" } else { "es" },
                names.join(", ")
            )
        };
        Some(RouteNote {
            code: Code::SftreeSetAside,
            message,
        })
    }
}

/// Breadth-first completion of one destination's entries toward the switches that have one,
/// over the switches of the levels (the ones set aside are the islands').
struct Bfs {
    queue: std::collections::VecDeque<usize>,
    seen: Vec<bool>,
    aside: Vec<bool>,
}

impl Bfs {
    fn new(t: &Tree) -> Bfs {
        Bfs {
            queue: std::collections::VecDeque::new(),
            seen: vec![false; t.level.len()],
            aside: t.level.iter().map(|&l| l == ASIDE).collect(),
        }
    }

    /// Every switch of the levels without an entry for `lid` that is linked to the switches
    /// having one gets the port toward a neighbour one hop nearer to them (lowest switch index
    /// first, so the result is deterministic). Returns how many entries were set.
    fn complete(&mut self, g: &Graph, rows: &mut [Vec<u8>], lid: usize) -> usize {
        self.queue.clear();
        for (s, seen) in self.seen.iter_mut().enumerate() {
            *seen = self.aside[s] || entry(rows, s, lid) != LFT_UNSET;
            if *seen && !self.aside[s] {
                self.queue.push_back(s);
            }
        }
        let mut set = 0;
        while let Some(x) = self.queue.pop_front() {
            let Some(sw) = g.switches.get(x) else {
                continue;
            };
            for grp in &sw.groups {
                let y = grp.peer as usize;
                if self.seen.get(y).copied().unwrap_or(true) {
                    continue;
                }
                self.seen[y] = true;
                // y's group toward x.
                rows[y][lid] = port_toward(g, y, grp.back as usize, lid as u16);
                set += 1;
                self.queue.push_back(y);
            }
        }
        set
    }
}

/// Replaces every [`CLIMB`] and [`DESCEND`] marker: each switch walks its LIDs in order and
/// gives the next climbing destination to the next of its up ports whose parent has an entry
/// for it (for [`DESCEND`]: whose parent is on the way to the main path, going up there itself).
fn resolve_climbs(
    g: &Graph,
    t: &Tree,
    ladders: &shortest::Ladders,
    rows: Vec<Vec<u8>>,
) -> Vec<Vec<u8>> {
    // Per switch, its up ports: a bit set over port numbers.
    let up_ports: Vec<[u64; 4]> = (0..g.switches.len())
        .map(|s| {
            let mut bits = [0u64; 4];
            for &k in &t.up[s] {
                for &(mine, _) in &g.switches[s].groups[k].ports {
                    bits[usize::from(mine / 64)] |= 1 << (mine % 64);
                }
            }
            bits
        })
        .collect();
    (0..rows.len())
        .into_par_iter()
        .map(|s| {
            // The up groups, their parents' rows and up ports.
            let ups: Vec<(usize, &[u8], &[u64; 4])> = t.up[s]
                .iter()
                .filter_map(|&k| {
                    let p = g.switches[s].groups[k].peer as usize;
                    Some((k, rows.get(p)?.as_slice(), up_ports.get(p)?))
                })
                .collect();
            let mut row = rows[s].clone();
            let mut turn = 0usize;
            let mut descents = vec![0usize; g.switches[s].groups.len()];
            let mut live: Vec<usize> = Vec::with_capacity(ups.len());
            for (lid, entry) in row.iter_mut().enumerate() {
                if *entry != CLIMB && *entry != DESCEND && *entry != NEAR {
                    continue;
                }
                live.clear();
                if *entry == NEAR {
                    let exit = g.exits.get(lid).copied().flatten().map(|e| e.sw as usize);
                    live.extend(t.up[s].iter().copied().filter(|&k| {
                        let p = g.switches[s].groups[k].peer as usize;
                        exit.is_some_and(|e| ladders.nearer_up(e, s, p))
                    }));
                    // Counted with the descents (per set of parents, named by its first group),
                    // so that the descents of other destinations keep their turns.
                    let first = live.first().copied().unwrap_or(0);
                    let n = descents.get(first).copied().unwrap_or(0);
                    if let Some(c) = descents.get_mut(first) {
                        *c += 1;
                    }
                    *entry = match live.get(n % live.len().max(1)) {
                        Some(&k) => port_toward(g, s, k, lid as u16),
                        None => LFT_UNSET,
                    };
                    continue;
                }
                let descend = *entry == DESCEND;
                if descend {
                    for &(k, parent, up) in &ups {
                        // On the way to the main path: the parent goes up there too (a port
                        // of its up groups, or a marker of its own resolved that way).
                        if parent.get(lid).is_some_and(|&e| {
                            e == DESCEND
                                || (e < DESCEND && up[usize::from(e / 64)] >> (e % 64) & 1 == 1)
                        }) {
                            live.push(k);
                        }
                    }
                } else {
                    for &(k, parent, _) in &ups {
                        if parent.get(lid).is_some_and(|&e| e != LFT_UNSET) {
                            live.push(k);
                        }
                    }
                }
                // A climb takes the next parent in turn; a descent the next of its own
                // parents, counted apart per set of them (named by its first group), so that
                // destinations whose main paths alternate between planes each spread over all
                // of their plane's parents.
                let next = if descend {
                    let first = live.first().copied().unwrap_or(0);
                    let n = descents.get(first).copied().unwrap_or(0);
                    if let Some(c) = descents.get_mut(first) {
                        *c += 1;
                    }
                    n
                } else {
                    turn += 1;
                    turn - 1
                };
                *entry = match live.get(next % live.len().max(1)) {
                    Some(&k) => port_toward(g, s, k, lid as u16),
                    None => LFT_UNSET,
                };
            }
            row
        })
        .collect()
}
