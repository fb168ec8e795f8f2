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
        Ok(LidAssignment {
            lmc,
            base,
            vports: Vec::new(),
        })
    } else {
        Err(errors)
    }
}

/// A VF's GUID: its hypervisor's node GUID with the top byte xored by `vf + 1`.
fn vf_guid(node: weft_fabric::Guid, vf: u8) -> weft_fabric::Guid {
    weft_fabric::Guid(node.0 ^ ((u64::from(vf) + 1) << 56))
}

/// The VFs of every tenant's `vms on` pools, with their GUIDs, VMs and LIDs, added to `lids`.
///
/// A hypervisor's VFs sit behind its first port that has a LID; VMs take its VFs in
/// declaration order. GUIDs are the hypervisor's node GUID with the top byte xored by
/// `vf + 1`. VF LIDs come after every physical LID (an LFT SMP writes one 64-entry block):
///
/// * prepopulated pools first, from a 64-LID block boundary: every VF of every hypervisor,
///   hypervisors in the order of their leaf switch and leaf port, so hypervisors on one leaf
///   hold neighbouring LIDs; a hypervisor's VFs never straddle a block boundary (when they fit
///   in one block), so a LID swap between two VFs of one hypervisor touches one block per
///   switch;
/// * then dynamic pools: one LID per VM right after, in declaration order, so a VM keeps its
///   LID wherever it is placed and a migration (a LID copy, one entry) touches one block per
///   switch wherever the LID lies.
///
/// The unicast range counts every VF: too many is an error at the pool that overflows.
pub fn assign_vfs(e: &Elaborated, lids: &mut LidAssignment) -> Result<(), Vec<Diagnostic>> {
    use crate::VfLids;
    use weft_fabric::{PortRef, VirtualPort};
    let f = &e.fabric;
    let tenants = &e.config.tenants;
    if tenants.iter().all(|t| t.pools.is_empty()) {
        return Ok(());
    }
    let source = e.fabric_origin.source;
    if let (true, Some(pool)) = (lids.lmc > 0, tenants.iter().flat_map(|t| &t.pools).next()) {
        return Err(vec![Diagnostic::error(
            Code::NotBuiltVmLmc,
            format!(
                "VMs with `lmc = {}` are not built yet: a VF owns one LID",
                lids.lmc
            ),
        )
        .label(source, pool.span, "VFs here")
        .help("route with `lmc = 0`, or keep the VMs out of this fabric")]);
    }
    let first_free = usize::from(lids.max_lid(f)) + 1;
    let mut next = first_free.div_ceil(64) * 64;
    let limit = usize::from(MAX_UNICAST_LID);
    let budget = |pool: &crate::VmPool, need: usize, next: usize| -> Diagnostic {
        Diagnostic::error(
            Code::LidBudgetExceeded,
            format!(
                "the VFs need LIDs past the unicast range: {need} more from LID {next}, and the last is {limit}"
            ),
        )
        .label(source, pool.span, "VFs of this pool overflow the LID space")
        .help("fewer `vfs_per_host`, `lids = dynamic` (one LID per running VM), or split the fabric")
    };
    // (hypervisor, its port, pool) in the order LIDs are handed out within each scheme.
    let mut hypervisors: Vec<(NodeId, PortNum, &crate::VmPool)> = Vec::new();
    for pool in tenants.iter().flat_map(|t| &t.pools) {
        for &h in &pool.hosts {
            let Some((&port, _)) = lids.base.get(&h).and_then(|m| m.iter().next()) else {
                let origin = e.origin(h);
                return Err(vec![Diagnostic::error(
                    Code::UnconnectedNode,
                    format!(
                        "hypervisor `{}` has no cabled port for its VFs",
                        f.node(h).name()
                    ),
                )
                .label(origin.source, origin.span, "declared here")
                .label(source, pool.span, "a hypervisor of this pool")
                .help("cable the hypervisor, or remove it from `vms on`")]);
            };
            hypervisors.push((h, port, pool));
        }
    }
    let leaf_of = |h: NodeId, p: PortNum| {
        f.peer(PortRef { node: h, port: p })
            .map(|(q, _)| (q.node, q.port))
    };
    let mut vports: Vec<VirtualPort> = Vec::new();
    let mut prepop: Vec<&(NodeId, PortNum, &crate::VmPool)> = hypervisors
        .iter()
        .filter(|(_, _, p)| p.lids == VfLids::Prepopulated)
        .collect();
    prepop.sort_by_key(|&&(h, p, _)| (leaf_of(h, p), h));
    for &&(h, port, pool) in &prepop {
        let n = usize::from(pool.vfs);
        if n <= 64 && next % 64 + n > 64 {
            next = next.div_ceil(64) * 64;
        }
        if next + n - 1 > limit {
            return Err(vec![budget(pool, n, next)]);
        }
        for vf in 0..pool.vfs {
            vports.push(VirtualPort {
                host: PortRef { node: h, port },
                vf,
                guid: vf_guid(f.node(h).guid(), vf),
                lid: Some(Lid((next + usize::from(vf)) as u16)),
                vm: None,
                pkeys: None,
            });
        }
        next += n;
    }
    for &(h, port, pool) in hypervisors
        .iter()
        .filter(|(_, _, p)| p.lids == VfLids::Dynamic)
    {
        for vf in 0..pool.vfs {
            vports.push(VirtualPort {
                host: PortRef { node: h, port },
                vf,
                guid: vf_guid(f.node(h).guid(), vf),
                lid: None,
                vm: None,
                pkeys: None,
            });
        }
    }
    vports.sort_by_key(|v| v.key());
    // VMs onto VFs, in declaration order; those on dynamic VFs get the next LIDs.
    if prepop.is_empty() {
        next = first_free;
    }
    for t in tenants {
        for vm in &t.vms {
            let Some(v) = vports
                .iter_mut()
                .find(|v| v.host.node == vm.host && v.vm.is_none())
            else {
                continue; // more VMs than VFs: reported by the elaboration
            };
            v.vm = Some(vm.name.clone());
            if v.lid.is_none() {
                if next > limit {
                    return Err(vec![
                        match t.pools.iter().find(|p| p.hosts.contains(&vm.host)) {
                            Some(pool) => budget(pool, 1, next),
                            None => Diagnostic::error(
                                Code::LidBudgetExceeded,
                                format!("no unicast LIDs are left for VM `{}`", vm.name),
                            ),
                        },
                    ]);
                }
                v.lid = Some(Lid(next as u16));
                next += 1;
            }
        }
    }
    let mut guids: std::collections::BTreeSet<u64> = f
        .nodes()
        .iter()
        .flat_map(|n| std::iter::once(n.guid().0).chain(n.ports.iter().map(|p| p.guid.0)))
        .collect();
    if let Some(v) = vports.iter().find(|v| !guids.insert(v.guid.0)) {
        let origin = e.origin(v.host.node);
        return Err(vec![Diagnostic::error(
            Code::DuplicateGuid,
            format!(
                "VF {} of `{}` would have GUID {}, which another node, port or VF has",
                v.vf,
                f.node(v.host.node).name(),
                v.guid
            ),
        )
        .label(origin.source, origin.span, "this hypervisor")
        .help("VF GUIDs are the node GUID with the top byte xored by VF + 1; give the nodes GUIDs that leave those free")]);
    }
    lids.vports = vports;
    Ok(())
}
