//! `layered`: shortest paths on any topology, made deadlock-free with virtual lanes (after
//! LASH, Skeie, Lysne and Theiss, 2002).
//!
//! **Accepts** any connected topology. **Routes** one destination switch at a time, every LID
//! behind a switch the way the switch's own LID goes (as LASH does: fewer distinct paths,
//! fewer layers). Toward a destination the routes form a tree of shortest paths, grown from
//! the nearest sources out: a source's route is one channel followed by the route of its next
//! switch, placed already. Each route — a source switch toward a destination, covering the
//! switch's own traffic and that of the end nodes cabled to it — goes to a *layer* whose
//! channel dependency graph stays acyclic with the route's dependencies added, and the next
//! switch is chosen among the source's shortest-path neighbours so that the route lands on the
//! lowest layer it can: first each neighbour on its own route's layer (one new dependency),
//! then every layer in order. Ties go to the least-loaded port; a second pass takes the lowest
//! port instead, and the fewer layers win (ties to the balanced pass). Layer `i` is service
//! level `i` on virtual lane `i` on every hop, so each layer is deadlock-free on its own and
//! the layers never wait on each other. Routes are placed shortest first, every destination's
//! tree growing by one hop per round (destinations in LID order, sources in fabric order), so
//! no destination's long routes crowd the layers before another's short ones; the result is
//! deterministic.
//!
//! The layers may not exceed the VL budget (`vls { budget = N }`, else the smallest VLCap of
//! the fabric's nodes); when a route fits no layer the engine refuses, naming the route and
//! the credit loop it closes on the first VL.

use super::acyclic::Acyclic;
use super::graph::{Channels, Graph, Load, Table};
use super::{Claims, Layers, RouteError, Routes, RoutingEngine, RoutingInput};
use weft_fabric::LidAssignment;
use weft_fabric::LFT_UNSET;

/// The layered engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Layered;

/// The engine's name in `routing { engine = … }`.
pub(super) const NAME: &str = "layered";

impl RoutingEngine for Layered {
    fn name(&self) -> &'static str {
        NAME
    }

    fn claims(&self, _: &LidAssignment) -> Claims {
        // Deadlock-free over its layers (SL i on VL i), not on one VL.
        Claims::DEADLOCK_FREE
    }

    fn route(&self, input: &RoutingInput<'_>) -> Result<Routes, RouteError> {
        let f = input.fabric;
        let g = Graph::new(f, input.lids);
        let budget = input.vl_budget.clamp(1, 15);
        // Balanced next hops and lowest-port ones (what LASH takes), side by side: the fewer
        // layers win, ties to the balanced paths.
        let (balanced, plain) = rayon::join(
            || layering(&g, f, true, budget),
            || layering(&g, f, false, budget),
        );
        let best = match (balanced?, plain?) {
            (Ok(b), Ok(p)) if p.layers < b.layers => p,
            (Ok(b), _) => b,
            (Err(_), Ok(p)) => p,
            (Err(e), Err(_)) => return Err(e),
        };
        Ok(Routes {
            lfts: g.lfts_from_rows(best.rows),
            notes: Vec::new(),
            layers: Some(Layers {
                layers: best.layers,
                by_source: g
                    .switches
                    .iter()
                    .zip(best.layer)
                    .map(|(s, row)| (s.id, row))
                    .collect(),
            }),
            engine_used: None,
        })
    }
}

/// Routes on layers: per-switch rows and, per source switch and LID, the layer.
struct Layering {
    rows: Vec<Vec<u8>>,
    layers: u8,
    layer: Vec<Vec<u8>>,
}

/// The routes toward every destination and their layers (see the module's comment): next hops
/// by least load (`balanced`) or lowest port among equals. The outer error is a refusal of
/// the fabric; the inner one a route that fits no layer within `budget`.
fn layering(
    g: &Graph,
    f: &weft_fabric::Fabric,
    balanced: bool,
    budget: u8,
) -> Result<Result<Layering, RouteError>, RouteError> {
    let n = g.switches.len();
    let nlids = g.exits.len();
    let mut p = Placer {
        g,
        f,
        ch: g.channels(),
        balanced,
        budget,
        layers: Vec::new(),
        load: Load::new(g),
        columns: vec![g.empty_column(); nlids],
        layer: vec![vec![0u8; nlids]; n],
        cands: Vec::new(),
        by_suffix: Vec::new(),
        path: Vec::new(),
        ports: Vec::new(),
    };
    // One tree per exit switch, for its first LID; the other LIDs behind it copy it.
    let mut first_behind: Vec<Option<usize>> = vec![None; n];
    let mut trees: Vec<Tree> = Vec::new();
    for (lid, exit) in g.exits.iter().enumerate() {
        let Some(exit) = *exit else { continue };
        let e = exit.sw as usize;
        if first_behind[e].is_some() {
            continue;
        }
        first_behind[e] = Some(lid);
        p.columns[lid][e] = exit.port;
        let mut dist = vec![u32::MAX; n];
        g.hops_into(&[e], &mut dist);
        let mut order: Vec<u32> = (0..n as u32)
            .filter(|&s| s as usize != e && dist[s as usize] != u32::MAX)
            .collect();
        order.sort_unstable_by_key(|&s| (dist[s as usize], s));
        trees.push(Tree {
            lid,
            exit: e,
            dist,
            order,
        });
    }
    // Every tree grows one distance at a time, all trees per distance: the shortest routes of
    // every destination are placed before any longer one.
    let mut next = vec![0usize; trees.len()];
    let far = trees
        .iter()
        .filter_map(|t| t.order.last().map(|&s| t.dist[s as usize]))
        .max()
        .unwrap_or(0);
    for d in 1..=far {
        for (tree, next) in trees.iter().zip(next.iter_mut()) {
            while let Some(&s) = tree.order.get(*next) {
                if tree.dist[s as usize] != d {
                    break;
                }
                *next += 1;
                if let Err(refusal) = p.place(tree, s as usize)? {
                    return Ok(Err(refusal));
                }
            }
        }
    }
    // The other LIDs behind each exit switch follow its tree.
    let Placer {
        mut columns,
        mut layer,
        layers,
        ..
    } = p;
    for (lid, exit) in g.exits.iter().enumerate() {
        let Some(exit) = *exit else { continue };
        let e = exit.sw as usize;
        let Some(rep) = first_behind[e].filter(|&r| r != lid) else {
            continue;
        };
        let mut col = columns[rep].clone();
        col[e] = exit.port;
        columns[lid] = col;
        for row in layer.iter_mut() {
            row[lid] = row[rep];
        }
    }
    g.check_complete(f, NAME, Table::Columns(&columns))?;
    Ok(Ok(Layering {
        rows: g.rows(&columns),
        layers: layers.len().max(1) as u8,
        layer,
    }))
}

/// The tree of routes toward one exit switch: its first LID, the hops from every switch, and
/// the sources by distance.
struct Tree {
    lid: usize,
    exit: usize,
    dist: Vec<u32>,
    order: Vec<u32>,
}

/// What routes are placed so far: the layers, per-port loads, next hops (`columns[lid]`) and
/// each route's layer (`layer[source][lid]`), and scratch space.
struct Placer<'a> {
    g: &'a Graph,
    f: &'a weft_fabric::Fabric,
    ch: Channels,
    balanced: bool,
    budget: u8,
    layers: Vec<Layer>,
    load: Load,
    columns: Vec<Vec<u8>>,
    layer: Vec<Vec<u8>>,
    cands: Vec<u8>,
    by_suffix: Vec<(usize, usize, u8)>,
    path: Vec<u32>,
    ports: Vec<u8>,
}

impl Placer<'_> {
    /// Places the route of `s` toward `tree`'s destination, whose nearer sources are placed:
    /// its next hop among the shortest-path neighbours and its layer, the lowest one it fits
    /// (each neighbour on its own route's layer first, where one dependency is new; then
    /// every layer in order; then a new layer within the budget). The inner error: no layer
    /// and no room for one.
    fn place(&mut self, tree: &Tree, s: usize) -> Result<Result<(), RouteError>, RouteError> {
        let (g, ch, dist, lid) = (self.g, &self.ch, &tree.dist, tree.lid);
        self.cands.clear();
        for grp in &g.switches[s].groups {
            if dist[grp.peer as usize].saturating_add(1) == dist[s] {
                self.cands.extend(grp.ports.iter().map(|p| p.0));
            }
        }
        if self.balanced {
            let load = &self.load;
            self.cands.sort_unstable_by_key(|&p| (load.get(s, p), p));
        } else {
            self.cands.sort_unstable();
        }
        let Some(&least) = self.cands.first() else {
            return Err(internal(g, self.f, s, lid));
        };
        let chosen = if dist[s] == 1 {
            Some((least, 0)) // one channel, no dependency: any layer, the first
        } else {
            // A next switch's route is on its layer; one without dependencies counts as 0.
            let layer = &self.layer;
            let suffix = |port: u8| {
                let t = ch.peer(s, port) as usize;
                if dist[t] > 1 {
                    usize::from(layer[t][lid])
                } else {
                    0
                }
            };
            self.by_suffix.clear();
            let by_suffix = &mut self.by_suffix;
            by_suffix.extend(
                self.cands
                    .iter()
                    .enumerate()
                    .map(|(i, &p)| (suffix(p), i, p)),
            );
            by_suffix.sort_unstable();
            let col = &self.columns[lid];
            let (path, ports) = (&mut self.path, &mut self.ports);
            let mut chosen = None;
            for &(k, _, p) in by_suffix.iter() {
                if let Some(on) = self.layers.get_mut(k) {
                    walk(ch, col, s, p, tree.exit, path, ports);
                    if on.insert_route(path, ports) {
                        chosen = Some((p, k));
                        break;
                    }
                }
            }
            if chosen.is_none() {
                'layers: for (k, on) in self.layers.iter_mut().enumerate() {
                    for &p in &self.cands {
                        if suffix(p) == k {
                            continue; // tried above
                        }
                        walk(ch, col, s, p, tree.exit, path, ports);
                        if on.insert_route(path, ports) {
                            chosen = Some((p, k));
                            break 'layers;
                        }
                    }
                }
            }
            chosen
        };
        let (port, k) = match chosen {
            Some(c) => c,
            None => {
                let col = &self.columns[lid];
                walk(
                    ch,
                    col,
                    s,
                    least,
                    tree.exit,
                    &mut self.path,
                    &mut self.ports,
                );
                if self.layers.len() >= usize::from(self.budget) {
                    let cycle = self
                        .layers
                        .first()
                        .and_then(|l0| l0.cycle_closed_by(&self.path))
                        .unwrap_or_default();
                    return Ok(Err(RouteError::Layers {
                        engine: NAME,
                        budget: self.budget,
                        from: self.f.node(g.switches[s].id).name().to_owned(),
                        to: g.lid_name(self.f, lid),
                        cycle: loop_text(g, self.f, ch, &cycle),
                    }));
                }
                let mut fresh = Layer::new(ch).ok_or_else(|| internal(g, self.f, s, lid))?;
                if !fresh.insert_route(&self.path, &self.ports) {
                    return Err(internal(g, self.f, s, lid));
                }
                self.layers.push(fresh);
                (least, self.layers.len() - 1)
            }
        };
        self.load.add(s, port);
        self.columns[lid][s] = port;
        self.layer[s][lid] = k as u8;
        Ok(Ok(()))
    }
}

/// The route from `s` through `port` toward `exit`, following `col` (next hops) after the
/// first: its channels into `path`, the port each leaves by into `ports`.
fn walk(
    ch: &Channels,
    col: &[u8],
    s: usize,
    port: u8,
    exit: usize,
    path: &mut Vec<u32>,
    ports: &mut Vec<u8>,
) {
    path.clear();
    ports.clear();
    let (mut x, mut p) = (s, port);
    while x != exit && path.len() <= col.len() {
        let Some(c) = ch.id(x, p) else { break };
        path.push(c as u32);
        ports.push(p);
        x = ch.peer(x, p) as usize;
        p = col.get(x).copied().unwrap_or(LFT_UNSET);
    }
}

/// One layer: its channel dependency graph, kept acyclic, and the dependencies known to
/// close a cycle in it on their own (by channel and the next channel's port).
struct Layer {
    deps: Acyclic,
    refused: Vec<u64>,
}

impl Layer {
    /// The credit loop the route through `path` closes in this layer: its channels, starting
    /// with the route's channel whose dependency closes it (empty when it closes none).
    fn cycle_closed_by(&self, path: &[u32]) -> Option<Vec<u32>> {
        let mut deps = self.deps.clone();
        for w in path.windows(2) {
            let (a, b) = (w[0], w[1]);
            if !deps.insert(a, b) {
                let mut cycle = vec![a];
                cycle.extend(deps.path(b, a)?.into_iter().filter(|&c| c != a));
                return Some(cycle);
            }
        }
        None
    }

    fn new(ch: &Channels) -> Option<Layer> {
        Some(Layer {
            deps: Acyclic::new(ch.count(), [])?,
            refused: vec![0; (ch.count() * 256).div_ceil(64)],
        })
    }

    fn refused_at(&self, c: u32, port: u8) -> (usize, u64) {
        let bit = c as usize * 256 + usize::from(port);
        (bit / 64, 1 << (bit % 64))
    }

    /// Adds the dependencies of the route through `path` (consecutive channels; `ports[i]`
    /// the port channel `i` leaves by), all or none: false, with the layer unchanged, when
    /// one would close a cycle.
    fn insert_route(&mut self, path: &[u32], ports: &[u8]) -> bool {
        for (i, w) in path.windows(2).enumerate() {
            let (word, bit) = self.refused_at(w[0], ports[i + 1]);
            if self.refused[word] & bit != 0 {
                return false;
            }
        }
        let mut added: Vec<(u32, u32)> = Vec::new();
        for (i, w) in path.windows(2).enumerate() {
            let (a, b) = (w[0], w[1]);
            if self.deps.contains(a, b) {
                continue;
            }
            if !self.deps.insert(a, b) {
                // Refused by the layer as it was, not by this route's own additions: for good.
                if added.is_empty() {
                    let (word, bit) = self.refused_at(a, ports[i + 1]);
                    self.refused[word] |= bit;
                }
                for &(a, b) in &added {
                    self.deps.remove(a, b);
                }
                return false;
            }
            added.push((a, b));
        }
        true
    }
}

/// The channels of a credit loop, named: `` `s0` port 3 → `s1` port 2 → … → `s0` port 3``
/// (each channel by the switch and port it leaves by), at most 12 of them shown.
fn loop_text(g: &Graph, f: &weft_fabric::Fabric, ch: &Channels, cycle: &[u32]) -> String {
    const SHOWN: usize = 12;
    let name = |c: u32| {
        let (s, port) = ch.owner(c as usize);
        format!("`{}` port {port}", f.node(g.switches[s].id).name())
    };
    let mut parts: Vec<String> = cycle.iter().take(SHOWN).map(|&c| name(c)).collect();
    if cycle.len() > SHOWN {
        parts.push(format!("… ({} channels in all)", cycle.len()));
    }
    if let Some(&first) = cycle.first() {
        parts.push(name(first));
    }
    parts.join(" → ")
}

/// A route that closes a cycle in an empty layer is a forwarding loop: the shortest paths
/// would be wrong, a bug reported as a refusal rather than written.
fn internal(g: &Graph, f: &weft_fabric::Fabric, src: usize, lid: usize) -> RouteError {
    RouteError::Unsupported {
        engine: NAME,
        reason: format!(
            "the route from `{}` toward `{}` loops (a bug in weft)",
            f.node(g.switches[src].id).name(),
            g.lid_name(f, lid)
        ),
        node: Some(g.switches[src].id),
    }
}
