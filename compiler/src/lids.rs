//! LID assignment: deterministic, compact, stable across faults, LMC-aligned, pins honoured.
//!
//! Every end-node port that has a cable in the description (up or down) gets `2^lmc` LIDs
//! aligned to `2^lmc`; every switch gets one LID for its port 0. Pinned LIDs (`lid = N` on a
//! node: port 1 of an end node, port 0 of a switch) are reserved first; the rest are handed out
//! lowest first, end-node ports in declaration order, then switches in declaration order. The
//! state of links and nodes is ignored, so a recompile after a fault renumbers nothing.

use crate::code::Code;
use crate::diagnostic::Diagnostic;
use crate::elaborate::Elaborated;
use std::collections::BTreeMap;
use weft_fabric::{Lid, LidAssignment, NodeId, PortNum, MAX_UNICAST_LID};

/// Assigns LIDs; errors name the node whose pin is bad or that no longer fits.
pub fn assign(e: &Elaborated) -> Result<LidAssignment, Vec<Diagnostic>> {
    let f = &e.fabric;
    let lmc = f.lmc.min(7);
    let block = 1u32 << lmc;
    let limit = u32::from(MAX_UNICAST_LID);
    // used[lid] for 0..=limit; LID 0 is reserved.
    let mut used = vec![false; limit as usize + 1];
    // LID 0 and anything past the limit count as taken.
    let taken = |used: &[bool], l: u32| used.get(l as usize).copied().unwrap_or(true);
    if let Some(zero) = used.first_mut() {
        *zero = true;
    }
    let mut base: BTreeMap<NodeId, BTreeMap<PortNum, Lid>> = BTreeMap::new();
    let mut errors = Vec::new();

    let wants = |id: NodeId| -> Vec<(PortNum, u32)> {
        let n = f.node(id);
        if n.is_switch() {
            vec![(PortNum(0), 1)]
        } else {
            n.ports
                .iter()
                .filter(|p| p.link.is_some())
                .map(|p| (p.num, block))
                .collect()
        }
    };

    // Pins first.
    for id in f.node_ids() {
        let n = f.node(id);
        let Some(pin) = n.spec.lid else { continue };
        let origin = e.origin(id);
        let Some(&(port, size)) = wants(id).first() else {
            errors.push(
                Diagnostic::error(
                    Code::LidPinUnused,
                    format!("`{}` has a pinned LID but no cabled port", n.name()),
                )
                .label(origin.source, origin.span, "pinned here")
                .help("only a cabled port receives a LID"),
            );
            continue;
        };
        let start = u32::from(pin.0);
        if start % size != 0 {
            errors.push(
                Diagnostic::error(
                    Code::LidPinUnaligned,
                    format!(
                        "`{}` is pinned to LID {start}, which is not a multiple of 2^lmc = {size}",
                        n.name()
                    ),
                )
                .label(origin.source, origin.span, "pinned here")
                .help("with LMC, every port's LIDs start at a multiple of 2^lmc"),
            );
            continue;
        }
        let end = start + size - 1;
        if end > limit || (start..=end).any(|l| taken(&used, l)) {
            errors.push(
                Diagnostic::error(
                    Code::LidPinConflict,
                    format!(
                        "`{}` cannot have LID {start}: it is taken or out of range",
                        n.name()
                    ),
                )
                .label(origin.source, origin.span, "pinned here")
                .help("give each pinned node its own LIDs in 1..=49151"),
            );
            continue;
        }
        for l in start..=end {
            if let Some(u) = used.get_mut(l as usize) {
                *u = true;
            }
        }
        base.entry(id).or_default().insert(port, Lid(start as u16));
    }

    // Then everybody else: end-node ports (aligned blocks), then switches.
    let mut next_block = block.max(1);
    let mut next_single = 1u32;
    let ends = f.node_ids().filter(|&i| !f.node(i).is_switch());
    let switches = f.node_ids().filter(|&i| f.node(i).is_switch());
    for id in ends.chain(switches) {
        for (port, size) in wants(id) {
            if base.get(&id).is_some_and(|m| m.contains_key(&port)) {
                continue;
            }
            let cursor = if size == 1 {
                &mut next_single
            } else {
                &mut next_block
            };
            let mut start = (*cursor).max(if size == 1 { 1 } else { size });
            start = start.div_ceil(size) * size;
            while start + size - 1 <= limit && (start..start + size).any(|l| taken(&used, l)) {
                start += size;
            }
            if start + size - 1 > limit {
                let origin = e.origin(id);
                errors.push(
                    Diagnostic::error(
                        Code::LidBudgetExceeded,
                        format!("no unicast LIDs are left for `{}`", f.node(id).name()),
                    )
                    .label(origin.source, origin.span, "declared here")
                    .help("the unicast LID space is 1..=49151; lower `lmc` or split the fabric"),
                );
                return Err(errors);
            }
            for l in start..start + size {
                if let Some(u) = used.get_mut(l as usize) {
                    *u = true;
                }
            }
            *cursor = start + size;
            base.entry(id).or_default().insert(port, Lid(start as u16));
        }
    }
    if errors.is_empty() {
        Ok(LidAssignment { lmc, base })
    } else {
        Err(errors)
    }
}
