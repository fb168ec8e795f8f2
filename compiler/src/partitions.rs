//! Tenants and shared partitions onto P_Key tables.
//!
//! With no `tenant` or `shared` section no port gets a table (every port a full member of the
//! default partition, the IBA default). With them, every end port with a LID gets one:
//!
//! - the default partition `0x7fff` as a *limited* member, first (what OpenSM puts at index
//!   0): the port reaches the SM, switches' port 0 (full members) and nothing else through it;
//!   a port the SM runs on (`sm on …`) holds it as a *full* member (`0xffff`) instead, so that
//!   every end port reaches the SA;
//! - a tenant's host: its tenant's P_Key, full; and every `shared` partition's, as its
//!   `members` says (limited: it reaches the shared hosts, not other tenants through them);
//! - a shared partition's host: that partition's P_Key, full;
//! - a host in no partition: the default partition only.
//!
//! Switch ports keep no table (full members of the default partition).
//!
//! The partitions are also recorded as declared ([`FabricState::partitions`]), so the
//! verifier can check the tables against them (`isolated`). The sections are elaborated in
//! `elaborate/tenants.rs` (with `sm on NODES`); every table is checked against the HCA
//! model's `partition_cap`; [`weft_formats::opensm::write_partitions`] turns the tables into
//! OpenSM's `partitions.conf`, each partition under its declared name (mangled only where
//! OpenSM's parser cannot take it) and full key, `alice=0x8001`.

use crate::code::Code;
use crate::diagnostic::{Diagnostic, SourceId};
use crate::{Membership, Tenant};
use std::collections::BTreeMap;
use weft_fabric::{
    FabricState, LidRange, PKey, Partition, PortNum, PortRef, SlSet, SourceSls, TrafficClass,
};

/// The default partition, limited membership.
const DEFAULT_LIMITED: PKey = PKey(0x7fff);

/// Writes every end port's P_Key table for `tenants` (nothing when there are none) and records
/// the partitions as declared. A table longer than its port's PartitionCap is an error at the
/// partition that made it so.
pub(crate) fn apply(
    state: &mut FabricState,
    tenants: &[Tenant],
    sm: &[PortRef],
    source: SourceId,
) -> Result<(), Diagnostic> {
    if tenants.is_empty() {
        return Ok(());
    }
    // A member of tenant `t`: the default partition (limited), `t`'s key, and for a tenant
    // (not a shared partition's host) every shared partition's as it says.
    let member = |t: &Tenant| -> Vec<PKey> {
        let mut table = vec![DEFAULT_LIMITED, Membership::Full.pkey(t.pkey)];
        if t.others.is_none() {
            table.extend(
                tenants
                    .iter()
                    .filter_map(|s| s.others.map(|m| m.pkey(s.pkey))),
            );
        }
        table
    };
    let owner: std::collections::BTreeMap<weft_fabric::NodeId, &Tenant> = tenants
        .iter()
        .flat_map(|t| t.hosts.iter().map(move |&h| (h, t)))
        .collect();
    let ports: Vec<(PortRef, Vec<PKey>)> = state
        .lids
        .base
        .iter()
        .filter(|(&id, _)| !state.fabric.node(id).is_switch())
        .flat_map(|(&id, ports)| {
            let table = owner
                .get(&id)
                .map_or_else(|| vec![DEFAULT_LIMITED], |t| member(t));
            ports.keys().map(move |&p: &PortNum| {
                let port = PortRef { node: id, port: p };
                let mut table = table.clone();
                if sm.contains(&port) {
                    // The SM's port: a full member of the default partition.
                    if let Some(k) = table.first_mut() {
                        *k = PKey::DEFAULT;
                    }
                }
                (port, table)
            })
        })
        .collect();
    let mut declared: Vec<Partition> = tenants
        .iter()
        .map(|t| Partition {
            name: t.name.clone(),
            pkey: t.pkey,
            members: BTreeMap::new(),
            vms: BTreeMap::new(),
            class: None,
        })
        .collect();
    for (port, table) in &ports {
        for k in table.iter().skip(1) {
            if let Some(p) = declared.iter_mut().find(|p| p.pkey == k.base()) {
                p.members.insert(*port, k.membership());
            }
        }
    }
    // VFs: a VM's VF holds what a host of its tenant would; a VF without a VM holds only the
    // default partition (as limited member: it talks to no one).
    let vm_tenant: BTreeMap<&str, &Tenant> = tenants
        .iter()
        .flat_map(|t| t.vms.iter().map(move |v| (v.name.as_str(), t)))
        .collect();
    let mut vf_tables: Vec<Vec<PKey>> = Vec::with_capacity(state.lids.vports.len());
    for v in &state.lids.vports {
        let vm = v.vm.as_deref();
        let table = match vm.and_then(|vm| vm_tenant.get(vm).map(|t| (vm, member(t)))) {
            Some((vm, table)) => {
                for k in table.iter().skip(1) {
                    if let Some(p) = declared.iter_mut().find(|p| p.pkey == k.base()) {
                        p.vms.insert(vm.to_owned(), k.membership());
                    }
                }
                table
            }
            None => vec![DEFAULT_LIMITED],
        };
        vf_tables.push(table);
    }
    let mut vf_ports = state.lids.vports.iter().map(|v| v.host).zip(&vf_tables);
    if let Some((port, table)) = vf_ports.find(|(r, t)| {
        let cap = state.fabric.node(r.node).spec.partition_cap;
        cap.is_some_and(|c| t.len() > usize::from(c))
    }) {
        return Err(over_capacity(state, tenants, source, port, table));
    }
    for (v, table) in state.lids.vports.iter_mut().zip(vf_tables) {
        v.pkeys = Some(table);
    }
    if let Some((port, table)) = ports.iter().find(|(r, t)| {
        let cap = state.fabric.node(r.node).spec.partition_cap;
        cap.is_some_and(|c| t.len() > usize::from(c))
    }) {
        return Err(over_capacity(state, tenants, source, *port, table));
    }
    for (port, table) in ports {
        state.ports.entry(port).or_default().pkeys = Some(table);
    }
    declared.sort_by(|a, b| a.name.cmp(&b.name));
    state.partitions = declared;
    Ok(())
}

/// Tenants with a `class`: every path between two of a tenant's hosts on that class's SL (its
/// traffic on its P_Key is the class's: `qos-policy.conf` matches the P_Key), recorded in the
/// declared partition for the verifier. Classes with several lanes (vFtree, dFtree) or routes
/// on several layers are refused as not built yet.
pub(crate) fn classes(
    state: &mut FabricState,
    tenants: &[Tenant],
    map: &crate::qos::LaneMap,
    source: SourceId,
) -> Result<(), Diagnostic> {
    // Per-source path SLs from the routing itself (none is built with them today).
    let routed_per_source = !state.path_sl.by_source.is_empty();
    for t in tenants {
        let Some((name, span)) = &t.class else {
            continue;
        };
        let Some(c) = map.classes.iter().find(|c| &c.name == name && map.declared) else {
            let known: Vec<String> = map
                .classes
                .iter()
                .filter(|_| map.declared)
                .map(|c| format!("`{}`", c.name))
                .collect();
            return Err(Diagnostic::error(
                Code::UnknownName,
                format!(
                    "tenant `{}` names class `{name}`, which the `qos` section does not declare",
                    t.name
                ),
            )
            .label(source, *span, "no such class")
            .help(if known.is_empty() {
                "declare it: `qos { class compute { … } }`".to_owned()
            } else {
                format!("classes: {}", known.join(", "))
            }));
        };
        if c.scheme.lanes() > 1 || map.layers > 1 || routed_per_source {
            return Err(Diagnostic::error(
                Code::NotBuiltTenantClassLanes,
                format!(
                    "tenant `{}`'s class `{name}` has several lanes or the routes several layers; a tenant's class on one lane and one layer is built, more is not yet",
                    t.name
                ),
            )
            .label(source, *span, "a class of several SLs")
            .help("give the tenant a class with one lane (no `lanes = vftree(…)` or `dftree`)"));
        }
        let sl = c.sl_of(0, 0, map.layers).0;
        let vl = map
            .sl2vl
            .get(usize::from(sl))
            .copied()
            .unwrap_or(crate::qos::LaneMap::DROP)
            .0;
        // The tenant's hosts' LIDs, as ranges.
        let mut lids: Vec<u16> = Vec::new();
        let span_of = state.lids.span(false);
        let ports: Vec<PortRef> = t
            .hosts
            .iter()
            .flat_map(|&h| {
                state
                    .lids
                    .base
                    .get(&h)
                    .into_iter()
                    .flat_map(move |m| m.keys().map(move |&p| PortRef { node: h, port: p }))
            })
            .collect();
        for r in &ports {
            if let Some(base) = state.lids.get(r.node, r.port) {
                lids.extend((0..span_of).map(|k| base.0 + k));
            }
        }
        lids.sort_unstable();
        let mut ranges: Vec<LidRange> = Vec::new();
        for l in lids {
            match ranges.last_mut() {
                Some(r) if r.hi.0 + 1 == l => r.hi = weft_fabric::Lid(l),
                _ => ranges.push(LidRange::one(weft_fabric::Lid(l))),
            }
        }
        for &src in &ports {
            for &lids in &ranges {
                state.path_sl.by_source.push(SourceSls {
                    src,
                    lids,
                    sls: SlSet(1 << sl),
                });
            }
        }
        if let Some(p) = state.partitions.iter_mut().find(|p| p.pkey == t.pkey) {
            p.class = Some(TrafficClass {
                name: name.clone(),
                sls: SlSet(1 << sl),
                vls: 1 << vl.min(15),
            });
        }
    }
    state.path_sl.sort();
    Ok(())
}

/// `port`'s table does not fit its PartitionCap: an error at the last partition in it.
fn over_capacity(
    state: &FabricState,
    tenants: &[Tenant],
    source: SourceId,
    port: PortRef,
    table: &[PKey],
) -> Diagnostic {
    let node = state.fabric.node(port.node);
    let cap = node.spec.partition_cap.unwrap_or(0);
    let last = table
        .last()
        .and_then(|k| tenants.iter().find(|t| t.pkey == k.base()));
    let model = node
        .spec
        .model
        .as_deref()
        .map_or(String::new(), |m| format!(" (model `{m}`)"));
    let mut d = Diagnostic::error(
        Code::Partitions,
        format!(
            "`{}` port {} would hold {} P_Keys (the default partition, its own and every shared one) but holds {cap}{model}",
            node.name(),
            port.port.0,
            table.len()
        ),
    )
    .help("fewer `shared` partitions, or a model with a larger `partition_cap`");
    if let Some(t) = last {
        d = d.label(source, t.span, "one partition too many for this port");
    }
    d
}

/// One line for the build's notes: each partition, its P_Key and hosts.
pub(crate) fn describe(tenants: &[Tenant]) -> String {
    let parts: Vec<String> = tenants
        .iter()
        .map(|t| match t.others {
            None if !t.pools.is_empty() => {
                let vfs: usize = t.pools.iter().map(|p| p.hosts.len() * usize::from(p.vfs)).sum();
                let hypervisors: usize = t.pools.iter().map(|p| p.hosts.len()).sum();
                let lids: usize = t
                    .pools
                    .iter()
                    .map(|p| match p.lids {
                        crate::VfLids::Prepopulated => p.hosts.len() * usize::from(p.vfs),
                        crate::VfLids::Dynamic => {
                            t.vms.iter().filter(|v| p.hosts.contains(&v.host)).count()
                        }
                    })
                    .sum();
                format!(
                    "`{}` {:#06x} ({} host(s), {} VM(s) on {hypervisors} vSwitch hypervisor(s) with {vfs} VF(s), {lids} VF LID(s) beside the fabric's)",
                    t.name,
                    t.pkey,
                    t.hosts.len(),
                    t.vms.len()
                )
            }
            None => format!("`{}` {:#06x} ({} host(s))", t.name, t.pkey, t.hosts.len()),
            Some(m) => format!(
                "`{}` {:#06x} shared ({} host(s); every tenant's hosts {} members)",
                t.name,
                t.pkey,
                t.hosts.len(),
                if m == Membership::Full {
                    "full"
                } else {
                    "limited"
                }
            ),
        })
        .collect();
    format!(
        "partitions: {}; every end port is a limited member of the default partition 0x7fff (the SM and switches are full members), so hosts outside a partition reach no other host",
        parts.join(", ")
    )
}
