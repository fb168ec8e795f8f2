//! `layered`: shortest paths on any topology, made deadlock-free with virtual lanes (LASH,
//! Skeie, Lysne and Theiss, 2002).
//!
//! **Accepts** any connected topology. **Routes** every switch's LID along balanced shortest
//! paths (as `minhop` does) and every end-node LID the way its switch's LID goes (as LASH
//! does: fewer distinct paths, fewer layers); when that needs more than one layer, the
//! lowest-port shortest paths are tried too and the fewer layers win. Then every route — a
//! source switch toward a destination LID, covering the switch's own traffic and that of the
//! end nodes cabled to it — goes to the first *layer* whose channel dependency graph stays
//! acyclic with the route's dependencies added. Layer `i` is service level `i` on virtual lane `i` on every hop, so each layer is
//! deadlock-free on its own and the layers never wait on each other. Routes are taken by
//! destination LID, then source switch, both in fabric order; the result is deterministic.
//!
//! The layers may not exceed the VL budget (`vls { budget = N }`, else the smallest VLCap of
//! the fabric's nodes); when a route fits no layer the engine refuses, naming it.

use super::acyclic::Acyclic;
use super::graph::Graph;
use super::{Lanes, RouteError, Routes, RoutingEngine, RoutingInput};

/// The layered engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Layered;

const NAME: &str = "layered";

impl RoutingEngine for Layered {
    fn name(&self) -> &'static str {
        NAME
    }

    fn deadlock_free(&self) -> bool {
        true
    }

    fn route(&self, input: &RoutingInput<'_>) -> Result<Routes, RouteError> {
        let f = input.fabric;
        let g = Graph::new(f, input.lids);
        let budget = input.vl_budget.clamp(1, 15);
        // Balanced shortest paths first; when they need layers, also the lowest-port shortest
        // paths (what LASH takes), which often close fewer cycles: the fewer layers win, ties
        // to the balanced paths.
        let balanced = layering(&g, f, true, budget)?;
        let best = match balanced {
            Ok(b) if b.layers > 1 => match layering(&g, f, false, budget)? {
                Ok(plain) if plain.layers < b.layers => plain,
                _ => b,
            },
            Ok(b) => b,
            Err(e) => match layering(&g, f, false, budget)? {
                Ok(plain) => plain,
                Err(_) => return Err(e),
            },
        };
        Ok(Routes {
            lfts: g.lfts_from_rows(best.rows),
            notes: Vec::new(),
            lanes: Some(Lanes {
                layers: best.layers,
                by_source: g
                    .switches
                    .iter()
                    .zip(best.layer)
                    .map(|(s, row)| (s.id, row))
                    .collect(),
            }),
        })
    }
}

/// Routes on layers: per-switch rows and, per source switch and LID, the layer.
struct Layering {
    rows: Vec<Vec<u8>>,
    layers: u8,
    layer: Vec<Vec<u8>>,
}

/// Shortest paths (`balanced` over ports, else lowest port first), every LID behind a switch
/// routed as the switch's own LID (as LASH does: fewer distinct paths, fewer layers), then
/// each route on the first layer that stays acyclic. The outer error is a refusal of the
/// fabric; the inner one a route that fits no layer within `budget`.
fn layering(
    g: &Graph,
    f: &weft_fabric::Fabric,
    balanced: bool,
    budget: u8,
) -> Result<Result<Layering, RouteError>, RouteError> {
    let mut columns = super::minhop::shortest(g, balanced);
    let own = g.switch_lids();
    for lid in 0..columns.len() {
        let Some(exit) = g.exits[lid].filter(|e| e.port != 0) else {
            continue;
        };
        if let Some(&Some(sw_lid)) = own.get(exit.sw as usize) {
            let mut col = columns[sw_lid].clone();
            col[exit.sw as usize] = exit.port;
            columns[lid] = col;
        }
    }
    g.check_complete(f, NAME, &columns)?;
    let rows = g.rows(&columns);
    let ch = g.channels();
    let n = g.switches.len();
    let mut layers: Vec<Acyclic> = Vec::new();
    // Layer per source switch and destination LID (0 where the switch is the exit).
    let mut layer = vec![vec![0u8; columns.len()]; n];
    let mut path: Vec<u32> = Vec::new();
    // The LIDs behind a switch with a LID share its paths: the first of them (in LID order)
    // stands for all. A later one would land on the same layer anyway (its dependencies are
    // there, and a layer it did not fit before only grows), so this saves work, not layers.
    let mut first_behind: Vec<Option<usize>> = vec![None; n];
    for (lid, exit) in g.exits.iter().enumerate() {
        let Some(exit) = *exit else { continue };
        let sw = exit.sw as usize;
        if own.get(sw).copied().flatten().is_some() {
            match first_behind[sw] {
                Some(rep) => {
                    for row in layer.iter_mut() {
                        row[lid] = row[rep];
                    }
                    continue;
                }
                None => first_behind[sw] = Some(lid),
            }
        }
        for (src, layer_row) in layer.iter_mut().enumerate() {
            // The route's channels from `src` to the exit switch.
            path.clear();
            let mut x = src;
            while x != exit.sw as usize && path.len() <= n {
                let port = rows[x][lid];
                let Some(c) = ch.id(x, port) else { break };
                path.push(c as u32);
                x = ch.peer(x, port) as usize;
            }
            if path.len() < 2 {
                continue; // no dependency: any layer, the first
            }
            let fits = (0..layers.len()).find(|&k| insert_all(&mut layers[k], &path));
            let k = match fits {
                Some(k) => k,
                None if layers.len() < usize::from(budget) => {
                    let mut fresh =
                        Acyclic::new(ch.count(), []).ok_or_else(|| internal(g, f, src, lid))?;
                    if !insert_all(&mut fresh, &path) {
                        return Err(internal(g, f, src, lid));
                    }
                    layers.push(fresh);
                    layers.len() - 1
                }
                None => {
                    return Ok(Err(RouteError::Layers {
                        engine: NAME,
                        budget,
                        from: f.node(g.switches[src].id).name().to_owned(),
                        to: g.lid_name(f, lid),
                    }))
                }
            };
            layer_row[lid] = k as u8;
        }
    }
    Ok(Ok(Layering {
        rows,
        layers: layers.len().max(1) as u8,
        layer,
    }))
}

/// Adds the dependencies of the route through `path` (consecutive channels) to `layer`, all or
/// none: false, with `layer` unchanged, when one would close a cycle.
fn insert_all(layer: &mut Acyclic, path: &[u32]) -> bool {
    let mut added: Vec<(u32, u32)> = Vec::new();
    for w in path.windows(2) {
        let (a, b) = (w[0], w[1]);
        if layer.contains(a, b) {
            continue;
        }
        if !layer.insert(a, b) {
            for &(a, b) in &added {
                layer.remove(a, b);
            }
            return false;
        }
        added.push((a, b));
    }
    true
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
