//! Parallel cables dealt by per-port counters: on every switch, the destinations that leave
//! through one bundle (the cables to one neighbour) take its cables in turn, so that each
//! cable of a bundle carries the same load within one destination, up and down alike.
//!
//! The idea is OpenSM ftree's (a counter per port, the least-loaded port of the group taken);
//! the engines choose the neighbour, this pass only the cable toward it. Swapping one cable
//! of a bundle for another changes no route's switches, so completeness is kept; the channel
//! dependencies move between cables of the same bundles, and the engine's check runs after.

use super::graph::Graph;
use rayon::prelude::*;

/// Deals every switch's entries over its bundles' cables: `rows[switch][lid]` walked in
/// `order`, group by group (the engine's routing order, cut where the kind of destination
/// changes: hosts, then service nodes, then switches, so that each kind is balanced), each
/// entry through a cable of a bundle of two or more moved to that bundle's cable with the least
/// load so far (ties: lowest port), which then carries `weight(lid)` more. In each group the
/// entries that carry traffic from hosts are dealt first, then those `secondary(switch, lid)`
/// says carry none (switch-to-switch routes only): each set on its own is within one per
/// cable, and so is the group. Entries through a single cable, toward an end node, or unset are left as they are.
pub(super) fn deal(
    g: &Graph,
    rows: &mut [Vec<u8>],
    order: &[&[u16]],
    weight: impl Fn(usize) -> u64 + Sync,
    secondary: impl Fn(usize, usize) -> bool + Sync,
) {
    rows.par_iter_mut().enumerate().for_each(|(s, row)| {
        let Some(sw) = g.switches.get(s) else {
            return;
        };
        // The bundle (group index) of each port of two or more parallel cables.
        let mut bundle = [u32::MAX; 256];
        for (k, grp) in sw.groups.iter().enumerate() {
            if grp.ports.len() > 1 {
                for &(mine, _) in &grp.ports {
                    bundle[usize::from(mine)] = k as u32;
                }
            }
        }
        if bundle.iter().all(|&b| b == u32::MAX) {
            return;
        }
        let mut load = [0u64; 256];
        for (group, pass) in order
            .iter()
            .flat_map(|group| [(group, false), (group, true)])
        {
            for &lid in group.iter() {
                let lid = usize::from(lid);
                if secondary(s, lid) != pass {
                    continue;
                }
                let Some(entry) = row.get_mut(lid) else {
                    continue;
                };
                let k = bundle[usize::from(*entry)];
                let Some(grp) = sw.groups.get(k as usize) else {
                    continue;
                };
                let Some(port) = grp
                    .ports
                    .iter()
                    .map(|&(mine, _)| mine)
                    .min_by_key(|&p| (load[usize::from(p)], p))
                else {
                    continue;
                };
                *entry = port;
                load[usize::from(port)] += weight(lid);
            }
        }
    });
}
