//! `tenant NAME { pkey = …, hosts = … }` and `shared NAME { pkey = …, hosts = …, members =
//! limited|full }`: partitions of end nodes.

use super::*;
use crate::{Membership, Tenant};

/// What a `tenant` takes.
const TENANT_ATTRS: &[&str] = &["pkey", "hosts", "class"];
/// What a `shared` partition takes.
const SHARED_ATTRS: &[&str] = &["pkey", "hosts", "members"];

impl Elab<'_> {
    /// A `tenant` or `shared` section, checked against those before it: distinct names and
    /// P_Keys, every host an end node in one partition only.
    pub(super) fn tenant(&mut self, s: &Section, config: &mut FabricConfig) {
        let kind = s.kind.name.as_str();
        let shared = kind == "shared";
        let known = if shared { SHARED_ATTRS } else { TENANT_ATTRS };
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
        let mut pkey: Option<(u16, Span)> = None;
        let mut hosts: Vec<(NodeId, Span)> = Vec::new();
        let mut others = Membership::Limited;
        let mut class: Option<(String, Span)> = None;
        // Whether every setting was understood (a missing P_Key is reported only then).
        let mut ok = true;
        for item in s.body.iter().flatten() {
            let a = match item {
                SectionItem::Attr(a) => a,
                SectionItem::Section(inner)
                    if !shared && matches!(inner.kind.name.as_str(), "vms" | "vm" | "vswitch") =>
                {
                    self.unsupported(
                        inner.kind.span,
                        &format!("`{}` (VMs on vSwitch SR-IOV hypervisors) is not implemented yet", inner.kind.name),
                        "VM placement comes in a later version; list the hypervisors in `hosts` for now, or remove the section",
                    );
                    ok = false;
                    continue;
                }
                other => {
                    self.unknown_in_section(other, kind, known);
                    ok = false;
                    continue;
                }
            };
            match a.name.name.as_str() {
                "pkey" => match self.int_in(&a.value, 1, 0xffff, "a P_Key (0x0001..=0xffff)") {
                    Some(n) => {
                        let base = (n & 0x7fff) as u16;
                        if base == 0 || base == 0x7fff {
                            self.err_help(
                                Code::OutOfRange,
                                format!("P_Key {n:#06x} names partition {base:#06x}, which a {kind} cannot use"),
                                a.value.span,
                                if base == 0 { "partition 0 does not exist" } else { "the default partition" },
                                "use a partition of 0x0001..=0x7ffe (the full-member bit 0x8000 may be set or not)",
                            );
                            ok = false;
                        } else {
                            pkey = Some((base, a.value.span));
                        }
                    }
                    None => ok = false,
                },
                "hosts" => match self.eval(&a.value) {
                    Ok(v) => {
                        let items = match v {
                            Value::List(l) => l.iter().cloned().collect(),
                            Value::Array(arr) => arr.ids.iter().map(|&i| Value::Node(i)).collect(),
                            other => vec![other],
                        };
                        for it in items {
                            if let Value::Symbol(w) = &it {
                                self.err_help(
                                    Code::UnknownName,
                                    format!("no node named `{w}`"),
                                    a.value.span,
                                    "in these hosts",
                                    "name end nodes of the topology: `cn001`, `cn001..=cn128`, `[cn1, cn2]`",
                                );
                                ok = false;
                                continue;
                            }
                            match self.as_node(it, a.value.span) {
                                Ok(n) if self.builder.fabric().node(n).is_switch() => {
                                    let sw = self.builder.fabric().node(n).name().to_owned();
                                    self.err_help(
                                        Code::TypeMismatch,
                                        format!("`{sw}` is a switch, not a host"),
                                        a.value.span,
                                        "a switch in `hosts`",
                                        "a partition's members are end nodes (HCAs); switches stay in the default partition",
                                    );
                                    ok = false;
                                }
                                Ok(n) => hosts.push((n, a.value.span)),
                                Err(_) => ok = false,
                            }
                        }
                    }
                    Err(_) => ok = false,
                },
                "members" if shared => {
                    match self.word_in(&a.value, &["limited", "full"], "membership") {
                        Some(w) if w == "full" => others = Membership::Full,
                        Some(_) => others = Membership::Limited,
                        None => ok = false,
                    }
                }
                "class" if !shared => match &a.value.kind {
                    ExprKind::Ident(id) => class = Some((id.clone(), a.value.span)),
                    _ => {
                        self.err_help(
                            Code::TypeMismatch,
                            "a tenant's `class` is the name of a QoS class",
                            a.value.span,
                            "not a class name",
                            "write `class = compute`, naming a class of the `qos` section",
                        );
                        ok = false;
                    }
                },
                _ => {
                    self.unknown_in_section(&SectionItem::Attr(a.clone()), kind, known);
                    ok = false;
                }
            }
        }
        let (pkey, pkey_span) = pkey.unwrap_or((0, name.span));
        if pkey == 0 && ok {
            self.err_help(
                Code::MissingAttribute,
                format!("`{}` has no `pkey`", name.name),
                name.span,
                "no partition key",
                format!("give it one: `{kind} {} {{ pkey = 0x8001, … }}`", name.name),
            );
        }
        if hosts.is_empty() && ok {
            self.err_help(
                Code::MissingAttribute,
                format!("`{}` has no hosts", name.name),
                name.span,
                "an empty partition",
                format!(
                    "list its members: `{kind} {} {{ hosts = cn001..=cn016, … }}`, or remove it",
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
        // Each host's partition so far (indices into `config.tenants`).
        let owners: std::collections::BTreeMap<NodeId, usize> = config
            .tenants
            .iter()
            .enumerate()
            .flat_map(|(i, t)| t.hosts.iter().map(move |&h| (h, i)))
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        hosts.retain(|&(h, _)| seen.insert(h));
        for &(h, span) in &hosts {
            if let Some(first) = owners.get(&h).and_then(|&i| config.tenants.get(i)) {
                let (first_name, first_span) = (first.name.clone(), first.span);
                let host = self.builder.fabric().node(h).name().to_owned();
                self.second(
                    &format!("`{host}` is in both `{first_name}` and `{}`", name.name),
                    span,
                    first_span,
                    "a host belongs to one tenant or shared partition; share it through a `shared` partition instead",
                );
            }
        }
        // Recorded even when something is wrong, so later sections are checked against it
        // (the errors stop the build).
        {
            config.tenants.push(Tenant {
                name: name.name.clone(),
                span: name.span,
                pkey,
                hosts: hosts.into_iter().map(|(h, _)| h).collect(),
                others: shared.then_some(others),
                class,
            });
        }
    }
}
