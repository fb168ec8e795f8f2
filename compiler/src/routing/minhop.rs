//! `minhop`: shortest paths by hop count, balancing equal choices by how many destinations
//! each port already carries (OpenSM's default engine).
//!
//! **Accepts** any connected topology. **Not deadlock-free**: minimal routing on a ring of five
//! or more switches, or on any fat-tree with switch-to-switch traffic, has credit loops. It is
//! here as a baseline; the verifier shows the loops.

use super::graph::Graph;
use super::{RouteError, Routes, RoutingEngine, RoutingInput};
use std::collections::VecDeque;
use weft_fabric::{Lft, LFT_UNSET};

/// The min-hop engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct MinHop;

impl RoutingEngine for MinHop {
    fn name(&self) -> &'static str {
        "minhop"
    }

    fn deadlock_free(&self) -> bool {
        false
    }

    fn route(&self, input: &RoutingInput<'_>) -> Result<Routes, RouteError> {
        let g = Graph::new(input.fabric, input.lids);
        let n = g.switches.len();
        let width = usize::from(g.switches.iter().map(|s| s.ports).max().unwrap_or(0)) + 1;
        let mut load = vec![0u32; n * width];
        let nlids = usize::from(g.max_lid) + 1;
        let mut columns = vec![g.empty_column(); nlids];
        let mut dist = vec![u32::MAX; n];
        let mut queue = VecDeque::new();
        for (lid, exit) in g.exits.iter().enumerate() {
            let Some(exit) = *exit else { continue };
            dist.fill(u32::MAX);
            dist[exit.sw as usize] = 0;
            queue.push_back(exit.sw as usize);
            while let Some(x) = queue.pop_front() {
                for grp in &g.switches[x].groups {
                    let p = grp.peer as usize;
                    if dist[p] == u32::MAX {
                        dist[p] = dist[x] + 1;
                        queue.push_back(p);
                    }
                }
            }
            let col = &mut columns[lid];
            col[exit.sw as usize] = exit.port;
            for s in 0..n {
                if s == exit.sw as usize || dist[s] == u32::MAX {
                    continue;
                }
                let mut best: Option<((u32, u8), u8)> = None;
                for grp in &g.switches[s].groups {
                    if dist[grp.peer as usize] + 1 != dist[s] {
                        continue;
                    }
                    for &(mine, _) in &grp.ports {
                        let key = (load[s * width + usize::from(mine)], mine);
                        if best.is_none_or(|(b, _)| key < b) {
                            best = Some((key, mine));
                        }
                    }
                }
                if let Some((_, port)) = best {
                    load[s * width + usize::from(port)] += 1;
                    col[s] = port;
                }
            }
        }
        if let Some((lid, s)) = columns
            .iter()
            .enumerate()
            .filter(|(lid, _)| g.exits[*lid].is_some())
            .find_map(|(lid, c)| c.iter().position(|&p| p == LFT_UNSET).map(|s| (lid, s)))
        {
            let f = input.fabric;
            return Err(RouteError::Disconnected {
                engine: "minhop",
                count: 1,
                from: f.node(g.switches[s].id).name().to_owned(),
                to: g.owners[lid]
                    .map_or_else(|| format!("LID {lid}"), |o| f.node(o).name().to_owned()),
            });
        }
        let rows = g.rows(&columns);
        let lfts = g
            .switches
            .iter()
            .zip(rows)
            .map(|(s, ports)| (s.id, Lft { ports }))
            .collect();
        Ok(Routes {
            lfts,
            notes: Vec::new(),
        })
    }
}
