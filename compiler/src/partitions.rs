//! Tenants and shared partitions onto P_Key tables.
//!
//! With no `tenant` or `shared` section no port gets a table (every port a full member of the
//! default partition, the IBA default). With them, every end port with a LID gets one:
//!
//! - the default partition `0x7fff` as a *limited* member, first (what OpenSM puts at index
//!   0): the port reaches the SM, switches' port 0 (full members) and nothing else through it;
//! - a tenant's host: its tenant's P_Key, full; and every `shared` partition's, as its
//!   `members` says (limited: it reaches the shared hosts, not other tenants through them);
//! - a shared partition's host: that partition's P_Key, full;
//! - a host in no partition: the default partition only.
//!
//! Switch ports keep no table (full members of the default partition).

use crate::{Membership, Tenant};
use weft_fabric::{FabricState, PKey, PortNum, PortRef};

/// The default partition, limited membership.
const DEFAULT_LIMITED: PKey = PKey(0x7fff);

/// Writes every end port's P_Key table for `tenants` (nothing when there are none).
pub fn apply(state: &mut FabricState, tenants: &[Tenant]) {
    if tenants.is_empty() {
        return;
    }
    let key =
        |t: &Tenant, m: Membership| PKey(t.pkey | if m == Membership::Full { 0x8000 } else { 0 });
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
            let mut table = vec![DEFAULT_LIMITED];
            if let Some(t) = owner.get(&id) {
                table.push(key(t, Membership::Full));
                if t.others.is_none() {
                    table.extend(tenants.iter().filter_map(|s| s.others.map(|m| key(s, m))));
                }
            }
            ports
                .keys()
                .map(move |&p: &PortNum| (PortRef { node: id, port: p }, table.clone()))
        })
        .collect();
    for (port, table) in ports {
        state.ports.entry(port).or_default().pkeys = Some(table);
    }
}

/// One line for the build's notes: each partition, its P_Key and hosts.
pub fn describe(tenants: &[Tenant]) -> String {
    let parts: Vec<String> = tenants
        .iter()
        .map(|t| match t.others {
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
