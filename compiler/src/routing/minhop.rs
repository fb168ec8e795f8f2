//! `minhop`: shortest paths by hop count, balancing equal choices by how many destinations
//! each port already carries (OpenSM's default engine).
//!
//! **Accepts** any connected topology. **Not deadlock-free**: minimal routing on a ring of five
//! or more switches, or on any fat-tree with switch-to-switch traffic, has credit loops. It is
//! here as a baseline; the verifier shows the loops.

use super::graph::{Graph, Load};
use super::{Claims, RouteError, Routes, RoutingEngine, RoutingInput};
use weft_fabric::LidAssignment;

/// The min-hop engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct MinHop;

impl RoutingEngine for MinHop {
    fn name(&self) -> &'static str {
        "minhop"
    }

    fn claims(&self, _: &LidAssignment) -> Claims {
        // Shortest paths close credit loops on most fabrics with cycles.
        Claims::default()
    }

    fn route(&self, input: &RoutingInput<'_>) -> Result<Routes, RouteError> {
        let g = Graph::new(input.fabric, input.lids);
        let columns = shortest(&g, true);
        g.check_complete(input.fabric, "minhop", &columns)?;
        Ok(Routes {
            lfts: g.lfts(&columns),
            ..Routes::default()
        })
    }
}

/// Per destination LID, each switch's port on a shortest path (hops), equal choices balanced
/// by how many destinations each port already carries (`balanced`) or the lowest port; unset
/// where the destination is out of reach.
pub(super) fn shortest(g: &Graph, balanced: bool) -> Vec<Vec<u8>> {
    let n = g.switches.len();
    let mut load = Load::new(g);
    let nlids = usize::from(g.max_lid) + 1;
    let mut columns = vec![g.empty_column(); nlids];
    let mut dist = vec![u32::MAX; n];
    for (lid, exit) in g.exits.iter().enumerate() {
        let Some(exit) = *exit else { continue };
        g.hops_into(&[exit.sw as usize], &mut dist);
        let col = &mut columns[lid];
        col[exit.sw as usize] = exit.port;
        for s in 0..n {
            if s == exit.sw as usize || dist[s] == u32::MAX {
                continue;
            }
            let candidates = g.switches[s]
                .groups
                .iter()
                .filter(|grp| dist[grp.peer as usize] + 1 == dist[s])
                .flat_map(|grp| grp.ports.iter().map(|p| p.0));
            let port = if balanced {
                load.take_least(s, candidates)
            } else {
                candidates.min()
            };
            if let Some(port) = port {
                col[s] = port;
            }
        }
    }
    columns
}
