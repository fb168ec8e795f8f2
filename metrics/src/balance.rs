//! Per-port balance, as `check_lft_balance` counts it: per switch, the host destination LIDs
//! (every LMC LID; service nodes' are not counted) each switch-facing port carries, compared over all of them and within
//! each direction (up, down, same level).

use crate::net::{Net, To};
use crate::types::{Balance, SwitchUsage};
use rayon::prelude::*;
use std::collections::BTreeMap;

impl Net<'_> {
    /// Per switch port, the end-node destination LIDs its LFT sends there (see [`Balance`]).
    pub(crate) fn balance(&self) -> Balance {
        let f = &self.state.fabric;
        // Every LID of a host, as check_lft_balance counts `Channel Adapter` lines (service
        // nodes aside).
        let lids: Vec<u16> = self
            .state
            .lids
            .owners(f)
            .iter()
            .enumerate()
            .filter_map(|(lid, o)| {
                let (node, _) = (*o)?;
                let n = f.nodes().get(node.index())?;
                n.is_host().then_some(lid as u16)
            })
            .collect();
        // A fabric that records tree levels sets aside the switches it gives none.
        let recorded = f.levels().is_some();
        let set_aside = |id: weft_fabric::NodeId| {
            recorded
                && f.nodes()
                    .get(id.index())
                    .is_some_and(|n| n.spec.level.is_none())
        };
        let per_switch: Vec<Option<SwitchUsage>> = self
            .sw
            .par_iter()
            .map(|sw| {
                let mut count = vec![0u32; sw.ports.len()];
                for &lid in &lids {
                    if let Some(&p) = sw.lft.get(usize::from(lid)) {
                        if let Some(c) = count.get_mut(usize::from(p)) {
                            *c += 1;
                        }
                    }
                }
                let mut ports = BTreeMap::new();
                // min, max per direction: up, down, side.
                let mut dir = [(u32::MAX, 0u32); 3];
                for (p, peer) in sw.ports.iter().enumerate() {
                    let To::Switch(n) = peer.to else { continue };
                    let c = count.get(p).copied().unwrap_or(0);
                    ports.insert(p as u8, c);
                    let theirs = self.sw.get(n as usize).map_or(0, |x| x.level);
                    let k = match theirs.cmp(&sw.level) {
                        std::cmp::Ordering::Greater => 0,
                        std::cmp::Ordering::Less => 1,
                        std::cmp::Ordering::Equal => 2,
                    };
                    if let Some(d) = dir.get_mut(k) {
                        d.0 = d.0.min(c);
                        d.1 = d.1.max(c);
                    }
                }
                let min = ports.values().copied().min()?;
                let max = ports.values().copied().max().unwrap_or(0);
                let spread_dir = dir
                    .iter()
                    .filter(|d| d.0 != u32::MAX)
                    .map(|d| d.1 - d.0)
                    .max()
                    .unwrap_or(0);
                Some(SwitchUsage {
                    switch: f
                        .nodes()
                        .get(sw.id.index())
                        .map_or_else(String::new, |n| n.name().to_owned()),
                    level: (!set_aside(sw.id)).then_some(sw.level),
                    ports,
                    min,
                    max,
                    unbalanced: max > min + 1,
                    spread_by_direction: spread_dir,
                    unbalanced_by_direction: spread_dir > 1,
                })
            })
            .collect();
        let per_switch: Vec<SwitchUsage> = per_switch.into_iter().flatten().collect();
        Balance {
            switches: per_switch.len(),
            unbalanced: per_switch.iter().filter(|u| u.unbalanced).count(),
            max_spread: per_switch.iter().map(|u| u.max - u.min).max().unwrap_or(0),
            unbalanced_by_direction: per_switch
                .iter()
                .filter(|u| u.unbalanced_by_direction)
                .count(),
            max_spread_by_direction: per_switch
                .iter()
                .map(|u| u.spread_by_direction)
                .max()
                .unwrap_or(0),
            per_switch,
        }
    }
}
