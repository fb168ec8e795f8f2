//! `tenant NAME { pkey = …, hosts = … }` and `shared NAME { pkey = …, hosts = …, members =
//! limited|full }`: partitions of end nodes; `sm on NODES`: where the subnet manager runs.

use super::*;
use crate::{Membership, Tenant, VfLids, Vm, VmPool};

/// What a `tenant` takes.
const TENANT_ATTRS: &[&str] = &["pkey", "hosts", "class"];
/// What a `vms on HOSTS { … }` pool takes.
const POOL_ATTRS: &[&str] = &["vfs_per_host", "lids"];
/// What a `shared` partition takes.
const SHARED_ATTRS: &[&str] = &["pkey", "hosts", "members"];
/// What an `sm on NODES { … }` section takes.
const SM_ATTRS: &[&str] = &["port"];

impl Elab<'_> {
    /// A `tenant` or `shared` section, checked against those before it: distinct names and
    /// P_Keys, every host an end node in one partition only.
    pub(super) fn tenant(&mut self, s: &Section, config: &mut FabricConfig) {
        let kind = s.kind.name.as_str();
        let Some(name) = &s.name else {
            self.err_help(
                Code::Syntax,
                format!("a `{kind}` needs a name"),
                s.kind.span,
                "unnamed",
                format!("write `{kind} NAME {{ pkey = 0x8001, hosts = … }}`"),
            );
            return;
        };
        if let Some(first) = config.tenants.iter().find(|t| t.name == name.name) {
            let first = first.span;
            self.second(
                &format!("`{}` is declared twice", name.name),
                name.span,
                first,
                "give each tenant and shared partition its own name",
            );
            return;
        }
        let mut body = self.tenant_body(s);
        let (pkey, pkey_span) = body.pkey.unwrap_or((0, name.span));
        if pkey == 0 && body.ok {
            self.err_help(
                Code::MissingAttribute,
                format!("`{}` has no `pkey`", name.name),
                name.span,
                "no partition key",
                format!("give it one: `{kind} {} {{ pkey = 0x8001, … }}`", name.name),
            );
        }
        if body.hosts.is_empty() && body.pools.is_empty() && body.ok {
            self.err_help(
                Code::MissingAttribute,
                format!("`{}` has no hosts", name.name),
                name.span,
                "an empty partition",
                format!(
                    "list its members: `{kind} {} {{ hosts = cn001..=cn016, … }}` (or, for a tenant, its VMs' hypervisors: `vms on cn001..=cn016 {{ vfs_per_host = 4 }}`), or remove it",
                    name.name
                ),
            );
        }
        if let Some(first) = config.tenants.iter().find(|t| pkey != 0 && t.pkey == pkey) {
            let (first_name, first_span) = (first.name.clone(), first.span);
            self.second(
                &format!(
                    "`{}` and `{first_name}` use partition {pkey:#06x}",
                    name.name
                ),
                pkey_span,
                first_span,
                "each tenant and shared partition needs its own P_Key",
            );
        }
        let mut seen = std::collections::BTreeSet::new();
        body.hosts.retain(|&(h, _)| seen.insert(h));
        self.tenant_overlaps(&name.name, &body, config);
        self.check_vms(
            &name.name,
            &body.pools,
            &body.vms,
            body.class.as_ref(),
            config,
        );
        // Recorded even when something is wrong, so later sections are checked against it
        // (the errors stop the build).
        config.tenants.push(Tenant {
            name: name.name.clone(),
            span: name.span,
            pkey,
            hosts: body.hosts.into_iter().map(|(h, _)| h).collect(),
            others: (kind == "shared").then_some(body.others),
            class: body.class,
            pools: body.pools,
            vms: body.vms,
        });
    }

    /// What a `tenant` or `shared` section's body says: its settings, VM pools and VMs.
    fn tenant_body(&mut self, s: &Section) -> TenantBody {
        let kind = s.kind.name.as_str();
        let shared = kind == "shared";
        let known = if shared { SHARED_ATTRS } else { TENANT_ATTRS };
        let mut b = TenantBody {
            pkey: None,
            hosts: Vec::new(),
            others: Membership::Limited,
            class: None,
            pools: Vec::new(),
            vms: Vec::new(),
            ok: true,
        };
        for item in s.body.iter().flatten() {
            let a = match item {
                SectionItem::Attr(a) => a,
                SectionItem::Section(inner) if !shared && inner.kind.name == "vms" => {
                    let (pool, fine) = self.vm_pool(inner);
                    b.pools.extend(pool);
                    b.ok &= fine;
                    continue;
                }
                SectionItem::Section(inner) if !shared && inner.kind.name == "vm" => {
                    match self.vm(inner) {
                        Some(v) => b.vms.push(v),
                        None => b.ok = false,
                    }
                    continue;
                }
                other => {
                    self.unknown_in_section(other, kind, known);
                    b.ok = false;
                    continue;
                }
            };
            match a.name.name.as_str() {
                "pkey" => match self.tenant_pkey(a, kind) {
                    Some(p) => b.pkey = Some((p, a.value.span)),
                    None => b.ok = false,
                },
                "hosts" => {
                    let (found, all) = self.end_nodes(&a.value, "hosts");
                    b.hosts.extend(found.into_iter().map(|n| (n, a.value.span)));
                    b.ok &= all;
                }
                "members" if shared => {
                    match self.word_in(&a.value, &["limited", "full"], "membership") {
                        Some(w) if w == "full" => b.others = Membership::Full,
                        Some(_) => b.others = Membership::Limited,
                        None => b.ok = false,
                    }
                }
                "class" if !shared => match &a.value.kind {
                    ExprKind::Ident(id) => b.class = Some((id.clone(), a.value.span)),
                    _ => {
                        self.err_help(
                            Code::TypeMismatch,
                            "a tenant's `class` is the name of a QoS class",
                            a.value.span,
                            "not a class name",
                            "write `class = compute`, naming a class of the `qos` section",
                        );
                        b.ok = false;
                    }
                },
                _ => {
                    self.unknown_in_section(&SectionItem::Attr(a.clone()), kind, known);
                    b.ok = false;
                }
            }
        }
        b
    }

    /// A partition's `pkey`: its partition number (the full-member bit dropped); `None` when it
    /// is not a P_Key or names partition 0 or the default one (said).
    fn tenant_pkey(&mut self, a: &Attr, kind: &str) -> Option<u16> {
        let n = self.int_in(&a.value, 1, 0xffff, "a P_Key (0x0001..=0xffff)")?;
        let base = (n & 0x7fff) as u16;
        if base == 0 || base == 0x7fff {
            self.err_help(
                Code::OutOfRange,
                format!("P_Key {n:#06x} names partition {base:#06x}, which a {kind} cannot use"),
                a.value.span,
                if base == 0 {
                    "partition 0 does not exist"
                } else {
                    "the default partition"
                },
                "use a partition of 0x0001..=0x7ffe (the full-member bit 0x8000 may be set or not)",
            );
            return None;
        }
        Some(base)
    }

    /// Hosts of partition `name` that are also its hypervisors, in two of its pools, or in a
    /// partition before it: each said.
    fn tenant_overlaps(&mut self, name: &str, body: &TenantBody, config: &FabricConfig) {
        // Each host's partition so far (indices into `config.tenants`).
        let owners: std::collections::BTreeMap<NodeId, usize> = config
            .tenants
            .iter()
            .enumerate()
            .flat_map(|(i, t)| t.members().map(move |h| (h, i)))
            .collect();
        let mut pooled: Vec<(NodeId, Span)> = Vec::new();
        for p in &body.pools {
            for &h in &p.hosts {
                if let Some(&(_, first)) = body.hosts.iter().find(|&&(x, _)| x == h) {
                    let host = self.builder.fabric().node(h).name().to_owned();
                    self.second(
                        &format!("`{host}` is both a host and a VM hypervisor of `{name}`"),
                        p.span,
                        first,
                        "a hypervisor's own port stays out of its VMs' partition; list it in `vms on` only",
                    );
                } else if let Some(&(_, first)) = pooled.iter().find(|&&(x, _)| x == h) {
                    let host = self.builder.fabric().node(h).name().to_owned();
                    self.second(
                        &format!("`{host}` is in two `vms on` pools of `{name}`"),
                        p.span,
                        first,
                        "each hypervisor has one VF count and one LID scheme",
                    );
                } else {
                    pooled.push((h, p.span));
                }
            }
        }
        for &(h, span) in body.hosts.iter().chain(&pooled) {
            if let Some(first) = owners.get(&h).and_then(|&i| config.tenants.get(i)) {
                let (first_name, first_span) = (first.name.clone(), first.span);
                let host = self.builder.fabric().node(h).name().to_owned();
                self.second(
                    &format!("`{host}` is in both `{first_name}` and `{name}`"),
                    span,
                    first_span,
                    "a host belongs to one tenant or shared partition; share it through a `shared` partition instead",
                );
            }
        }
    }

    /// End nodes named by `e` (a node, a range, a list) in `what` (`hosts`, …), and whether
    /// every item was one (what is not is reported).
    fn end_nodes(&mut self, e: &Expr, what: &str) -> (Vec<NodeId>, bool) {
        self.nodes_in(e, what, false)
    }

    /// `sm on NODES { port = N }`: where the subnet manager runs (the master and any
    /// standby) — port `N` (default 1) of each end node, port 0 of each switch. The SM's ports
    /// become full members of the default partition, and the verifier checks every end port
    /// can reach them (`isolated`).
    pub(super) fn sm(&mut self, s: &Section, config: &mut FabricConfig) {
        if let Some(n) = &s.name {
            self.err_help(
                Code::Syntax,
                "`sm` takes no name",
                n.span,
                "a name here would be ignored",
                "write `sm on cn001` (with a standby: `sm on [cn001, cn002]`)",
            );
            return;
        }
        let Some(on) = &s.on else {
            self.err_help(
                Code::Syntax,
                "`sm` needs the node it runs on",
                s.kind.span,
                "on which node?",
                "write `sm on cn001` (with a standby: `sm on [cn001, cn002]`; on a switch, its port 0)",
            );
            return;
        };
        self.attrs_once(s);
        let mut port: Option<(u8, Span)> = None;
        let mut ok = true;
        for item in s.body.iter().flatten() {
            match item {
                SectionItem::Attr(a) if a.name.name == "port" => {
                    match self.int_in(&a.value, 1, 254, "a port number (1..=254)") {
                        Some(n) => port = Some((n as u8, a.value.span)),
                        None => ok = false,
                    }
                }
                other => {
                    self.unknown_in_section(other, "sm", SM_ATTRS);
                    ok = false;
                }
            }
        }
        let (nodes, all) = self.nodes_in(on, "sm on", true);
        if !(ok && all) {
            return;
        }
        let mut ports: Vec<weft_fabric::PortRef> = Vec::new();
        for n in nodes {
            let node = self.builder.fabric().node(n);
            let name = node.name().to_owned();
            let count = node.spec.port_count;
            let r = if node.is_switch() {
                if let Some((_, at)) = port {
                    self.err_help(
                        Code::TypeMismatch,
                        format!("`{name}` is a switch: an SM on it runs on its port 0"),
                        at,
                        "`port` is for end nodes",
                        "remove `port`, or name the switches and the end nodes in two `sm` lists",
                    );
                    return;
                }
                weft_fabric::PortRef::new(n, 0)
            } else {
                let p = port.map_or(1, |(p, _)| p);
                if p > count {
                    self.err_help(
                        Code::OutOfRange,
                        format!("`{name}` has {count} port(s), not port {p}"),
                        port.map_or(on.span, |(_, at)| at),
                        "no such port",
                        format!("name a port of 1..={count}"),
                    );
                    return;
                }
                weft_fabric::PortRef::new(n, p)
            };
            if ports.contains(&r) {
                self.err_help(
                    Code::Syntax,
                    format!("`{name}` is named twice"),
                    on.span,
                    "named twice",
                    "name each node the SM runs on once",
                );
                return;
            }
            ports.push(r);
        }
        config.sm = ports;
    }

    /// The nodes `e` names (end nodes; switches too when `switches`), and whether all were.
    pub(super) fn nodes_in(&mut self, e: &Expr, what: &str, switches: bool) -> (Vec<NodeId>, bool) {
        let Ok(v) = self.eval(e) else {
            return (Vec::new(), false);
        };
        // Lists in the list are read in place: `[cn[001-128], st01]`.
        let mut items: Vec<Value> = Vec::new();
        let mut stack = vec![v];
        while let Some(v) = stack.pop() {
            match v {
                Value::List(l) => stack.extend(l.iter().rev().cloned()),
                Value::Array(arr) => items.extend(arr.ids.iter().map(|&i| Value::Node(i))),
                other => items.push(other),
            }
        }
        if self.charge_walk(items.len(), e.span).is_err() {
            return (Vec::new(), false);
        }
        let mut ok = true;
        let mut out = Vec::new();
        // A host's name (`host = "dgx001"` on its HCAs) stands for every end node of it.
        let mut resolved: Vec<Value> = Vec::with_capacity(items.len());
        for it in items {
            let named = match &it {
                Value::Symbol(w) | Value::Str(w) if self.builder.fabric().find(w).is_none() => {
                    self.machines.declared(w)
                }
                _ => None,
            };
            match named {
                Some(m) => resolved.extend(m.members.iter().map(|x| Value::Node(x.node))),
                None => resolved.push(it),
            }
        }
        for it in resolved {
            let unknown = match &it {
                Value::Symbol(w) => Some(w),
                Value::Str(w) if self.builder.fabric().find(w).is_none() => Some(w),
                _ => None,
            };
            if let Some(w) = unknown {
                // A host whose grouping was refused (`weft::host_rail`, said at its nodes) is
                // not unknown: no second error for it, and nothing built.
                let refused_host = self.machines.machines.is_empty()
                    && self
                        .builder
                        .fabric()
                        .nodes()
                        .iter()
                        .any(|n| n.spec.host.as_deref() == Some(&w[..]));
                if refused_host {
                    ok = false;
                    continue;
                }
                self.err_help(
                    Code::UnknownName,
                    format!("no node or host named `{w}`"),
                    e.span,
                    format!("in these {what}"),
                    "name end nodes of the topology or hosts: `cn001`, `cn001..=cn128`, `cn[001-128,200]`, `[cn1, cn2]`, `\"dgx001\"`",
                );
                ok = false;
                continue;
            }
            match self.as_node(it, e.span) {
                Ok(n) if !switches && self.builder.fabric().node(n).is_switch() => {
                    let sw = self.builder.fabric().node(n).name().to_owned();
                    self.err_help(
                        Code::TypeMismatch,
                        format!("`{sw}` is a switch, not a host"),
                        e.span,
                        format!("a switch in `{what}`"),
                        if matches!(what, "members" | "send_only") {
                            "a group's members are end nodes' ports; the tree passes through switches without naming them"
                        } else {
                            "a partition's members are end nodes (HCAs); switches stay in the default partition"
                        },
                    );
                    ok = false;
                }
                Ok(n) if !switches && !self.may_be_named_in(n, what) => {
                    let node = self.builder.fabric().node(n);
                    let (name, role) = (node.name().to_owned(), node.role());
                    let help = if role == weft_fabric::Role::Aggregation {
                        "a SHARP aggregation node stays in the default partition, where every \
                         host reaches it; the aggregation manager gives it the jobs' P_Keys"
                    } else {
                        "a VM hypervisor is a host; name hosts here"
                    };
                    self.err_help(
                        Code::TypeMismatch,
                        format!("`{name}` is {} node, not a host", article_role(role)),
                        e.span,
                        format!("in `{what}`"),
                        help,
                    );
                    ok = false;
                }
                Ok(n) => out.push(n),
                Err(_) => ok = false,
            }
        }
        (out, ok)
    }

    /// Whether end node `n` may be named in `what`: an aggregation node in none of `hosts`,
    /// `vms on` and `vm … on`; a storage or management node in `hosts` (a partition's
    /// members, as a shared storage partition has) but not as a VM hypervisor; any end node
    /// in a multicast group's `members` and `send_only`.
    fn may_be_named_in(&self, n: NodeId, what: &str) -> bool {
        // A multicast group's members are any end ports: service nodes join groups too.
        if matches!(what, "members" | "send_only") {
            return true;
        }
        match self.builder.fabric().node(n).role() {
            weft_fabric::Role::Host => true,
            weft_fabric::Role::Aggregation => false,
            weft_fabric::Role::Storage | weft_fabric::Role::Management => what == "hosts",
        }
    }

    /// `vms on HOSTS { vfs_per_host = N, lids = dynamic|prepopulated }`, and whether it is
    /// right. A pool with mistakes is still returned when it names hypervisors (with as many
    /// VFs as could be), so its VMs are not reported again as placed nowhere.
    fn vm_pool(&mut self, s: &Section) -> (Option<VmPool>, bool) {
        let Some(on) = &s.on else {
            self.err_help(
                Code::Syntax,
                "`vms` needs its hypervisors",
                s.kind.span,
                "on which hosts?",
                "write `vms on cn129..=cn256 { vfs_per_host = 4, lids = dynamic }`",
            );
            return (None, false);
        };
        if let Some(n) = &s.name {
            self.err_help(
                Code::Syntax,
                "`vms` takes no name",
                n.span,
                "a name here would be ignored",
                "name each VM with `vm NAME on HOST`",
            );
            return (None, false);
        }
        self.attrs_once(s);
        let (hosts, mut ok) = self.end_nodes(on, "vms on");
        let mut vfs: Option<u8> = None;
        // Whether `vfs_per_host` was written (a wrong value is reported as such, not missing).
        let mut vfs_given = false;
        let mut lids = VfLids::Dynamic;
        for item in s.body.iter().flatten() {
            match item {
                SectionItem::Attr(a) if a.name.name == "vfs_per_host" => {
                    vfs_given = true;
                    match self.int_in(&a.value, 1, 127, "a VF count (1..=127)") {
                        Some(n) => vfs = Some(n as u8),
                        None => ok = false,
                    }
                }
                SectionItem::Attr(a) if a.name.name == "lids" => {
                    match self.word_in(&a.value, &["dynamic", "prepopulated"], "LID scheme") {
                        Some(w) if w == "prepopulated" => lids = VfLids::Prepopulated,
                        Some(_) => lids = VfLids::Dynamic,
                        None => ok = false,
                    }
                }
                // The vSwitch model is the only one built: saying so is allowed.
                SectionItem::Section(f)
                    if f.kind.name == "vswitch"
                        && f.body.is_none()
                        && f.on.is_none()
                        && f.name.is_none() => {}
                other => {
                    self.unknown_in_section(other, "vms", POOL_ATTRS);
                    ok = false;
                }
            }
        }
        if vfs.is_none() {
            ok = false;
        }
        if !vfs_given {
            self.err_help(
                Code::MissingAttribute,
                "`vms` needs `vfs_per_host`",
                s.kind.span,
                "how many VFs per hypervisor?",
                "write `vms on … { vfs_per_host = 4 }`",
            );
        }
        let pool = VmPool {
            hosts,
            vfs: vfs.unwrap_or(127),
            lids,
            span: s.kind.span,
        };
        (Some(pool), ok)
    }

    /// `vm NAME on HOST`.
    fn vm(&mut self, s: &Section) -> Option<Vm> {
        let (Some(name), Some(on)) = (&s.name, &s.on) else {
            self.err_help(
                Code::Syntax,
                "a `vm` needs a name and a hypervisor",
                s.kind.span,
                "incomplete",
                "write `vm db1 on cn140`",
            );
            return None;
        };
        if let Some(b) = s.body.iter().flatten().next() {
            self.unknown_in_section(b, "vm", &[]);
            return None;
        }
        let (hosts, ok) = self.end_nodes(on, "vm … on");
        if !ok {
            return None;
        }
        let [host] = hosts[..] else {
            self.err_help(
                Code::TypeMismatch,
                format!("VM `{}` runs on one hypervisor", name.name),
                on.span,
                format!("{} hosts", hosts.len()),
                "write `vm db1 on cn140`",
            );
            return None;
        };
        Some(Vm {
            name: name.name.clone(),
            host,
            span: name.span,
        })
    }

    /// A tenant's VMs against its pools and every VM before: names unique, each on a
    /// hypervisor of this tenant's pools, no more VMs on a hypervisor than it has VFs; a
    /// tenant with VMs takes no class yet.
    fn check_vms(
        &mut self,
        tenant: &str,
        pools: &[VmPool],
        vms: &[Vm],
        class: Option<&(String, Span)>,
        config: &FabricConfig,
    ) {
        if let (Some((_, span)), false) = (class, pools.is_empty()) {
            self.not_built(
                Code::NotBuiltVmClass,
                *span,
                &format!("tenant `{tenant}` has VMs and a class; a class for VM traffic is not built yet"),
                "a VM's traffic leaves on its hypervisor's cable with the SLs that port uses; remove `class`, or keep the classed hosts in a tenant without VMs",
            );
        }
        let mut count: std::collections::BTreeMap<NodeId, u32> = std::collections::BTreeMap::new();
        for (i, vm) in vms.iter().enumerate() {
            let earlier = config
                .tenants
                .iter()
                .flat_map(|t| &t.vms)
                .chain(vms.iter().take(i))
                .find(|v| v.name == vm.name);
            if let Some(first) = earlier {
                let first = first.span;
                self.second(
                    &format!("VM `{}` is placed twice", vm.name),
                    vm.span,
                    first,
                    "a VM runs on one hypervisor; move it by editing its `on`",
                );
                continue;
            }
            let host = self.builder.fabric().node(vm.host).name().to_owned();
            let Some(pool) = pools.iter().find(|p| p.hosts.contains(&vm.host)) else {
                self.err_help(
                    Code::UnknownName,
                    format!("`{host}` is not one of `{tenant}`'s hypervisors"),
                    vm.span,
                    format!("VM `{}` placed here", vm.name),
                    format!("add it to a pool: `vms on {host} {{ vfs_per_host = 4 }}`"),
                );
                continue;
            };
            let n = count.entry(vm.host).or_insert(0);
            *n += 1;
            if *n > u32::from(pool.vfs) {
                self.err_help(
                    Code::OutOfRange,
                    format!(
                        "`{host}` has {} VF(s) and VM `{}` would be VM number {n} on it",
                        pool.vfs, vm.name
                    ),
                    vm.span,
                    "no VF left",
                    "place it on another hypervisor, or raise `vfs_per_host`",
                );
            }
        }
    }
}

/// "an aggregation", "a storage", "a management" (for "… node, not a host").
fn article_role(r: weft_fabric::Role) -> String {
    match r {
        weft_fabric::Role::Aggregation => "an aggregation".to_owned(),
        other => format!("a {other}"),
    }
}

/// What a `tenant` or `shared` section's body says.
struct TenantBody {
    /// The partition number, and where it is written.
    pkey: Option<(u16, Span)>,
    /// Its hosts, each with where it is named.
    hosts: Vec<(NodeId, Span)>,
    /// A shared partition's membership of the hosts (limited unless `members = full`).
    others: Membership,
    /// A tenant's QoS class, and where it is named.
    class: Option<(String, Span)>,
    /// A tenant's VM pools.
    pools: Vec<VmPool>,
    /// A tenant's VMs.
    vms: Vec<Vm>,
    /// Whether every setting was understood (a missing P_Key is reported only then).
    ok: bool,
}
