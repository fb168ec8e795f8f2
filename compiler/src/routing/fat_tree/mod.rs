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

use super::graph::{Exit, Graph, Load};
use super::{Claims, Engine, RouteError, RouteNote, Routes, RoutingEngine, RoutingInput};
use crate::code::Code;
use rayon::prelude::*;
use weft_fabric::LidAssignment;
use weft_fabric::LFT_UNSET;

mod acyclic;
mod columns;
mod islands;
mod sftree;
mod shortest;

use columns::{column, main_path, resolve_climbs, Links, Scratch};

/// LIDs whose columns are worked out together before they go into the rows.
const COLUMN_CHUNK: usize = 1024;
use sftree::sftree;

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

        let ladders = shortest::Ladders::of(&g, &t);
        let links = Links::of(&g, &t);
        // Phase 4's weights: each bundle of parallel cables is dealt by per-port counters, in
        // routing order.
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
        // Phases 2 to 4, once, and again should a failed sFtree root need the tables as they
        // were (see `sftree`): the same tables each time.
        let before = || {
            // Phase 2 (parallel per destination): up entries and secondary paths, then every
            // entry a step of a shortest up*/down* path where one exists. Per destination, the
            // switches whose entries carry no host traffic (secondary paths, climbs): a bit set,
            // dealt over parallel cables after the others.
            let (rows, secondary) = phase2(&g, &t, (&ladders, &links), (&chains, &spread));
            // Phase 3: climbs resolved to parents with up/down entries of their own — before
            // sFtree, whose completed entries lead toward the subtree root and may come straight
            // back down to the climbing switch.
            let mut rows = resolve_climbs(&g, &t, &ladders, rows);
            // Phase 4: each bundle of parallel cables dealt by per-port counters, in routing
            // order.
            super::cables::deal(&g, &mut rows, &kinds, weigh, |s, lid| {
                bit(&secondary, lid, s)
            });
            (rows, secondary)
        };
        let (rows, secondary) = before();
        let again = || before().0;
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
        let before = sftree::Before {
            tables: rows,
            again: &again,
        };
        match sftree(&g, &t, &ladders, before, input, &order) {
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

/// Phase 2 of [`FatTree`]'s routing: every destination's column (its up entries and
/// secondary paths, then every entry a step of a shortest up*/down* path where one exists),
/// worked out a chunk of LIDs at a time in parallel, each chunk written into the rows before
/// the next (only the rows are ever whole). The rows, and per LID its secondary switches.
fn phase2(
    g: &Graph,
    t: &Tree,
    (ladders, links): (&shortest::Ladders, &Links),
    (chains, spread): (&[Chain], &[Vec<u32>]),
) -> (Vec<Vec<u8>>, Vec<Vec<u64>>) {
    let nlids = usize::from(g.max_lid) + 1;
    let mut rows = vec![vec![LFT_UNSET; nlids]; g.switches.len()];
    let mut secondary: Vec<Vec<u64>> = Vec::with_capacity(nlids);
    for first in (0..nlids).step_by(COLUMN_CHUNK) {
        let lids = first..(first + COLUMN_CHUNK).min(nlids);
        let (columns, more): (Vec<Vec<u8>>, Vec<Vec<u64>>) = lids
            .into_par_iter()
            .map_init(Scratch::default, |scratch, lid| {
                match (
                    g.exits.get(lid).copied().flatten(),
                    chains.get(lid),
                    spread.get(lid),
                ) {
                    (Some(exit), Some(chain), Some(spread)) => {
                        let (mut col, secondary) =
                            column(g, links, scratch, t, exit, chain, spread);
                        ladders.straighten(g, t, exit.sw as usize, lid, &mut col);
                        (col, secondary)
                    }
                    _ => (g.empty_column(), Vec::new()),
                }
            })
            .unzip();
        secondary.extend(more);
        rows.par_iter_mut().enumerate().for_each(|(s, row)| {
            if let Some(dst) = row.get_mut(first..first + columns.len()) {
                for (e, col) in dst.iter_mut().zip(&columns) {
                    *e = col.get(s).copied().unwrap_or(LFT_UNSET);
                }
            }
        });
    }
    (rows, secondary)
}
