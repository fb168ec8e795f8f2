//! Hosts as machines, and rails.
//!
//! An end node's `host` ([`NodeSpec::host`](crate::NodeSpec::host)) names the machine it is
//! in: a DGX's eight HCAs are one host. An end node without one is a host of its own, named
//! after the node. Within a machine of several end nodes each is on a *rail*: its `rail` when
//! given, else its position among the machine's end nodes in declaration order. Rail-optimised
//! AI fabrics cable HCA `r` of every machine to the leaves of rail `r`, and collectives send
//! rail to rail; [`Machines`] is what tenants (a host name means all its HCAs) and the
//! metrics (patterns over machines, per rail) read.
//!
//! A machine's end nodes each take a different rail, and a host's name may be a node's name
//! only when that node is the host's one end node (`host = "cn01"` on the HCA `cn01`);
//! otherwise naming it would be ambiguous ([`MachineError`]).

use crate::{Fabric, NodeId};
use std::collections::BTreeMap;

pub mod rails;
pub use rails::{leaf_of, Crossed, Misplaced, Rails};

/// One machine: a host name and its end nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// The host name (`host = "…"`), or the node's name for an end node without one.
    pub name: String,
    /// Whether the name was declared (`host = "…"`) rather than taken from the node.
    pub declared: bool,
    /// The end nodes, ordered by rail (those without a rail after, in declaration order).
    pub members: Vec<Member>,
}

/// One end node of a [`Machine`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// The end node.
    pub node: NodeId,
    /// Its rail: given, or its position among several; `None` for a machine's only end node
    /// without a `rail`.
    pub rail: Option<u8>,
}

/// The fabric's end nodes grouped into machines, in order of each machine's first end node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Machines {
    /// The machines.
    pub machines: Vec<Machine>,
    /// Per node index: the machine of an end node (`None` for a switch).
    machine_of: Vec<Option<u32>>,
}

/// Why end nodes cannot be grouped into machines.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MachineError {
    /// Two end nodes of one host on one rail.
    #[error("`{second}` and `{first}` are both on rail {rail} of host `{host}`")]
    RailTaken {
        /// The host.
        host: String,
        /// The rail.
        rail: u8,
        /// The end node that took it first.
        first: String,
        /// The end node that takes it again.
        second: String,
        /// That node.
        node: NodeId,
    },
    /// A host name that is also the name of a node outside it.
    #[error("host `{host}` has the name of node `{host}`, which is not its only end node")]
    NameIsNode {
        /// The host (and the node).
        host: String,
        /// An end node of the host.
        node: NodeId,
    },
    /// An empty host name.
    #[error("`{name}` has an empty host name")]
    EmptyName {
        /// The end node.
        name: String,
        /// That node.
        node: NodeId,
    },
}

impl MachineError {
    /// The end node the error is best shown at.
    pub fn node(&self) -> NodeId {
        match self {
            MachineError::RailTaken { node, .. }
            | MachineError::NameIsNode { node, .. }
            | MachineError::EmptyName { node, .. } => *node,
        }
    }
}

impl Machines {
    /// Groups `fabric`'s end nodes (every role) into machines.
    pub fn of(fabric: &Fabric) -> Result<Machines, MachineError> {
        let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
        let mut groups: Vec<(String, bool, Vec<NodeId>)> = Vec::new();
        let mut machine_of = vec![None; fabric.nodes().len()];
        for (id, n) in fabric.node_ids().zip(fabric.nodes()) {
            if n.is_switch() {
                continue;
            }
            let (name, declared) = match &n.spec.host {
                Some(h) if h.is_empty() => {
                    return Err(MachineError::EmptyName {
                        name: n.name().to_owned(),
                        node: id,
                    })
                }
                Some(h) => (h.as_str(), true),
                None => (n.name(), false),
            };
            let k = match by_name.get(name) {
                // A node without `host` is a machine of its own even when a host has its name.
                Some(&k) if declared && groups.get(k).is_some_and(|g| g.1) => k,
                _ => {
                    by_name.insert(name, groups.len());
                    groups.push((name.to_owned(), declared, Vec::new()));
                    groups.len() - 1
                }
            };
            if let Some(g) = groups.get_mut(k) {
                g.2.push(id);
            }
            if let Some(slot) = machine_of.get_mut(id.index()) {
                *slot = Some(k as u32);
            }
        }
        let mut machines = Vec::with_capacity(groups.len());
        for (name, declared, nodes) in groups {
            if declared {
                if let Some(same) = fabric.find(&name) {
                    if nodes != [same] {
                        return Err(MachineError::NameIsNode {
                            host: name,
                            node: nodes.first().copied().unwrap_or(same),
                        });
                    }
                }
            }
            let several = nodes.len() > 1;
            let mut members: Vec<Member> = nodes
                .iter()
                .enumerate()
                .map(|(pos, &node)| Member {
                    node,
                    rail: fabric
                        .node(node)
                        .spec
                        .rail
                        .or_else(|| several.then(|| u8::try_from(pos).unwrap_or(u8::MAX))),
                })
                .collect();
            // Stable: members without a rail keep declaration order, after the others.
            members.sort_by_key(|m| (m.rail.is_none(), m.rail));
            for w in members.windows(2) {
                if let [a, b] = w {
                    if a.rail.is_some() && a.rail == b.rail {
                        return Err(MachineError::RailTaken {
                            host: name,
                            rail: a.rail.unwrap_or(0),
                            first: fabric.node(a.node).name().to_owned(),
                            second: fabric.node(b.node).name().to_owned(),
                            node: b.node,
                        });
                    }
                }
            }
            machines.push(Machine {
                name,
                declared,
                members,
            });
        }
        Ok(Machines {
            machines,
            machine_of,
        })
    }

    /// The machine end node `n` is in (`None` for a switch or a node of another fabric).
    pub fn machine_of(&self, n: NodeId) -> Option<&Machine> {
        let k = self.machine_of.get(n.index()).copied().flatten()?;
        self.machines.get(k as usize)
    }

    /// The index in [`Machines::machines`] of end node `n`'s machine.
    pub fn index_of(&self, n: NodeId) -> Option<usize> {
        self.machine_of
            .get(n.index())
            .copied()
            .flatten()
            .map(|k| k as usize)
    }

    /// The machine declared with this host name.
    pub fn declared(&self, name: &str) -> Option<&Machine> {
        self.machines.iter().find(|m| m.declared && m.name == name)
    }

    /// Whether some machine has several end nodes or an end node has a rail: whether hosts
    /// and rails say more than the end nodes do.
    pub fn any_grouped(&self) -> bool {
        self.machines
            .iter()
            .any(|m| m.members.len() > 1 || m.members.iter().any(|x| x.rail.is_some()))
    }
}

/// How [`infer`] grouped a host's end nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Grouped {
    /// They share a system image GUID.
    SystemGuid,
    /// Their NodeDescriptions share a host name (`luna-0001 mlx5_3`).
    Description,
}

/// A host [`infer`] found: its name, how, and its end nodes in their devices' natural order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inferred {
    /// The host name.
    pub name: String,
    /// The evidence.
    pub by: Grouped,
    /// The end nodes, in their devices' natural order (`mlx5_2` before `mlx5_10`).
    pub members: Vec<NodeId>,
    /// Each member's rail, from the cabling ([`rails`]): its leaf's rail on a rail-optimised
    /// fabric, else its device's rank.
    pub rails: Vec<u8>,
}

/// What [`infer`] found in a discovered fabric.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inference {
    /// The hosts of several HCAs.
    pub hosts: Vec<Inferred>,
    /// Their rails as the cabling shows them (groups in the order of `hosts`).
    pub rails: Rails,
    /// Host HCAs left machines of their own whose NodeDescription is the adapter's default
    /// (`MT4129 ConnectX7   Mellanox Technologies`, [`is_default_description`]): no host
    /// name says which machine they are in, and no system image GUID is shared, so each is
    /// one machine (one machine per system image GUID).
    pub default_named: Vec<NodeId>,
}

/// Whether a NodeDescription is an adapter's default rather than a host's: it starts with
/// the chip's part number (`MT4129 ConnectX7   Mellanox Technologies`, `MT25408 ConnectX
/// Mellanox Technologies`) or is the vendor's name alone, possibly with the
/// ` (0x…)` weft adds to tell duplicates apart.
pub fn is_default_description(desc: &str) -> bool {
    let first = desc.split_whitespace().next().unwrap_or("");
    let part = first
        .strip_prefix("MT")
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
    let d = desc.trim();
    part || d == "Mellanox Technologies" || d.starts_with("Mellanox Technologies (0x")
}

/// Groups a discovered fabric's host end nodes (role `host`, no `host` yet) into machines:
/// those that share a system image GUID, then those whose NodeDescriptions are a host name and
/// a device (`luna-0001 mlx5_3`, `cn01 HCA-2`, `node7 ibp11s0f0`) sharing the host name. Only
/// groups of two or more are returned; within one, rails follow the devices' natural order
/// (`mlx5_2` before `mlx5_10`). A group whose name is another node's is left out (naming it
/// would be ambiguous). In order of each host's first end node. Rails come from the cabling
/// ([`rails`]); host HCAs with an adapter's default description that no system image GUID
/// groups stay one machine each, and are listed.
pub fn infer(fabric: &Fabric) -> Inference {
    let candidates: Vec<NodeId> = fabric
        .node_ids()
        .zip(fabric.nodes())
        .filter(|(_, n)| !n.is_switch() && n.is_host() && n.spec.host.is_none())
        .map(|(id, _)| id)
        .collect();
    let mut by_guid: BTreeMap<crate::Guid, Vec<NodeId>> = BTreeMap::new();
    for &id in &candidates {
        if let Some(g) = fabric.node(id).spec.system_guid {
            by_guid.entry(g).or_default().push(id);
        }
    }
    let mut taken = vec![false; fabric.nodes().len()];
    let mut found: Vec<Inferred> = Vec::new();
    for (g, nodes) in by_guid {
        if nodes.len() < 2 {
            continue;
        }
        let names: Vec<Option<(&str, &str)>> = nodes
            .iter()
            .map(|&n| split(fabric.node(n).name()))
            .collect();
        let common = match names.first().copied().flatten() {
            Some((h, _)) if names.iter().all(|x| x.is_some_and(|(o, _)| o == h)) => h.to_owned(),
            _ => format!("{:#018x}", g.0),
        };
        found.push(Inferred {
            name: common,
            by: Grouped::SystemGuid,
            members: nodes,
            rails: Vec::new(),
        });
    }
    for f in &found {
        for &n in &f.members {
            if let Some(t) = taken.get_mut(n.index()) {
                *t = true;
            }
        }
    }
    let mut by_name: BTreeMap<&str, Vec<NodeId>> = BTreeMap::new();
    for &id in &candidates {
        if taken.get(id.index()).copied().unwrap_or(true) {
            continue;
        }
        if let Some((h, _)) = split(fabric.node(id).name()) {
            by_name.entry(h).or_default().push(id);
        }
    }
    for (h, nodes) in by_name {
        if nodes.len() >= 2 {
            found.push(Inferred {
                name: h.to_owned(),
                by: Grouped::Description,
                members: nodes,
                rails: Vec::new(),
            });
        }
    }
    found.retain(|f| fabric.find(&f.name).is_none());
    for f in &mut found {
        f.members.sort_by(|&a, &b| {
            let key = |n: NodeId| {
                let name = fabric.node(n).name();
                natural(split(name).map_or(name, |(_, d)| d))
            };
            key(a).cmp(&key(b)).then(a.cmp(&b))
        });
    }
    found.sort_by_key(|f| f.members.iter().min().copied());
    let groups: Vec<Vec<NodeId>> = found.iter().map(|f| f.members.clone()).collect();
    let rails = rails::rails(fabric, &groups);
    for (f, r) in found.iter_mut().zip(&rails.rails) {
        f.rails.clone_from(r);
    }
    let mut grouped = vec![false; fabric.nodes().len()];
    for f in &found {
        for &n in &f.members {
            if let Some(t) = grouped.get_mut(n.index()) {
                *t = true;
            }
        }
    }
    let default_named = candidates
        .iter()
        .copied()
        .filter(|&n| {
            !grouped.get(n.index()).copied().unwrap_or(true)
                && is_default_description(fabric.node(n).name())
        })
        .collect();
    Inference {
        hosts: found,
        rails,
        default_named,
    }
}

/// A NodeDescription's host name and device (`luna-0001 mlx5_3` → `luna-0001`, `mlx5_3`),
/// when its last word is an RDMA device name.
pub fn split(desc: &str) -> Option<(&str, &str)> {
    let (host, dev) = desc.trim().rsplit_once(char::is_whitespace)?;
    let host = host.trim_end();
    (!host.is_empty() && is_device(dev)).then_some((host, dev))
}

/// Whether `w` names an RDMA device as hosts set NodeDescription: `mlx5_3`, `mlx4_0`,
/// `HCA-1`, `ibp11s0f0`, `ib0`, `hfi1_0`, `qib0`, `irdma1`, `bnxt_re0`.
fn is_device(w: &str) -> bool {
    // The rest is digit runs joined by single underscores (`5_0`, `3`): never empty, never
    // ending or starting with `_` (`mlx5_`, `ib_` are not devices).
    let digits_after = |p: &str| {
        w.strip_prefix(p).is_some_and(|r| {
            r.split('_')
                .all(|run| !run.is_empty() && run.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    (w.starts_with("mlx") && w.contains('_') && digits_after("mlx"))
        || digits_after("HCA-")
        || digits_after("hfi")
        || digits_after("qib")
        || digits_after("irdma")
        || digits_after("bnxt_re")
        || digits_after("ib")
        || (w.starts_with("ibp") && w.len() > 3 && w.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// A sort key that orders digit runs by value (`mlx5_2` < `mlx5_10`).
fn natural(s: &str) -> Vec<(u8, u64, String)> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            let (d, r) = rest.split_at(digits);
            out.push((1, d.parse().unwrap_or(u64::MAX), d.to_owned()));
            rest = r;
        } else {
            let other = rest.bytes().take_while(|b| !b.is_ascii_digit()).count();
            let (t, r) = rest.split_at(other);
            out.push((0, 0, t.to_owned()));
            rest = r;
        }
    }
    out
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::{FabricBuilder, Guid, NodeKind, NodeSpec};

    fn hca(b: &mut FabricBuilder, name: &str, host: Option<&str>, rail: Option<u8>) -> NodeId {
        let g = 0x1000 + 0x10 * b.fabric().nodes().len() as u64;
        let mut s = NodeSpec::new(name, NodeKind::Hca, Guid(g), 1);
        s.host = host.map(str::to_owned);
        s.rail = rail;
        b.add_node(s).unwrap()
    }

    #[test]
    fn hcas_of_one_host_are_one_machine_on_rails_by_position() {
        let mut b = FabricBuilder::new("t");
        b.add_node(NodeSpec::new("sw", NodeKind::Switch, Guid(0x10), 8))
            .unwrap();
        let a1 = hca(&mut b, "dgx1 mlx5_1", Some("dgx1"), None);
        let lone = hca(&mut b, "login", None, None);
        let a0 = hca(&mut b, "dgx1 mlx5_0", Some("dgx1"), None);
        let m = Machines::of(b.fabric()).unwrap();
        assert_eq!(m.machines.len(), 2);
        let dgx = m.declared("dgx1").unwrap();
        assert_eq!(
            dgx.members,
            [
                Member {
                    node: a1,
                    rail: Some(0)
                },
                Member {
                    node: a0,
                    rail: Some(1)
                }
            ]
        );
        assert_eq!(m.machine_of(lone).unwrap().name, "login");
        assert_eq!(m.machine_of(lone).unwrap().members[0].rail, None);
        assert!(m.declared("login").is_none());
        assert!(m.any_grouped());
    }

    #[test]
    fn given_rails_order_the_members_and_may_not_collide() {
        let mut b = FabricBuilder::new("t");
        let a1 = hca(&mut b, "h mlx5_1", Some("h"), Some(1));
        let a0 = hca(&mut b, "h mlx5_0", Some("h"), Some(0));
        let m = Machines::of(b.fabric()).unwrap();
        let nodes: Vec<NodeId> = m.machines[0].members.iter().map(|x| x.node).collect();
        assert_eq!(nodes, [a0, a1]);
        hca(&mut b, "h mlx5_2", Some("h"), Some(0));
        let e = Machines::of(b.fabric()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`h mlx5_2` and `h mlx5_0` are both on rail 0 of host `h`"
        );
    }

    #[test]
    fn hosts_are_inferred_from_system_guids_and_descriptions() {
        let mut b = FabricBuilder::new("t");
        let d10 = hca(&mut b, "luna-0001 mlx5_10", None, None);
        let d2 = hca(&mut b, "luna-0001 mlx5_2", None, None);
        hca(&mut b, "login HCA-1", None, None);
        let an = hca(&mut b, "Mellanox Technologies Aggregation Node", None, None);
        b.set_role(an, crate::Role::Aggregation);
        let mut s1 = NodeSpec::new("a", NodeKind::Hca, Guid(0x9000), 1);
        s1.system_guid = Some(Guid(0x77));
        let g1 = b.add_node(s1).unwrap();
        let mut s2 = NodeSpec::new("b", NodeKind::Hca, Guid(0x9100), 1);
        s2.system_guid = Some(Guid(0x77));
        let g2 = b.add_node(s2).unwrap();
        // Two nodes, one description host name, but that name is a node's: left out.
        hca(&mut b, "x ib0", None, None);
        hca(&mut b, "x ib1", None, None);
        hca(&mut b, "x", None, None);
        let found = infer(b.fabric());
        assert_eq!(
            found.hosts,
            [
                Inferred {
                    name: "luna-0001".into(),
                    by: Grouped::Description,
                    members: vec![d2, d10],
                    rails: vec![0, 1],
                },
                Inferred {
                    name: "0x0000000000000077".into(),
                    by: Grouped::SystemGuid,
                    members: vec![g1, g2],
                    rails: vec![0, 1],
                },
            ]
        );
        assert!(found.default_named.is_empty());
    }

    #[test]
    fn default_descriptions() {
        for d in [
            "MT4129 ConnectX7   Mellanox Technologies",
            "MT25408 ConnectX Mellanox Technologies",
            "MT4129 ConnectX7   Mellanox Technologies (0xe09d730300858238)",
            "Mellanox Technologies",
        ] {
            assert!(is_default_description(d), "{d}");
        }
        for d in [
            "cn01 HCA-1",
            "MTX01",
            "MT",
            "login",
            "Mellanox Technologies Aggregation Node",
        ] {
            assert!(!is_default_description(d), "{d}");
        }
    }

    #[test]
    fn device_names() {
        for d in [
            "mlx5_0",
            "mlx4_1",
            "HCA-2",
            "ibp11s0f0",
            "ib0",
            "hfi1_0",
            "qib0",
        ] {
            assert!(is_device(d), "{d}");
        }
        for d in [
            "Node", "mlx5", "mlx5_", "ib_", "hfi1__0", "HCA-", "ib", "cn01", "ibp11-s0",
        ] {
            assert!(!is_device(d), "{d}");
        }
        assert_eq!(split("luna-0001 mlx5_3"), Some(("luna-0001", "mlx5_3")));
        assert_eq!(split("Mellanox Technologies Aggregation Node"), None);
    }

    #[test]
    fn a_host_named_like_another_node_is_refused() {
        let mut b = FabricBuilder::new("t");
        hca(&mut b, "cn01", None, None);
        hca(&mut b, "cn01 mlx5_0", Some("cn01"), None);
        assert!(matches!(
            Machines::of(b.fabric()),
            Err(MachineError::NameIsNode { .. })
        ));
        let mut b = FabricBuilder::new("t");
        hca(&mut b, "cn01", Some("cn01"), None);
        assert!(Machines::of(b.fabric()).is_ok());
        assert!(!Machines::of(b.fabric()).unwrap().any_grouped());
    }
}
