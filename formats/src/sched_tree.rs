//! The fabric as a scheduler sees it: a tree of switches per connected fabric, each host under
//! one leaf switch — what Slurm's `topology/tree` plugin reads (`topology.conf`,
//! `topology.yaml`).
//!
//! - **Cabling, not faults.** Every cable counts, up or down, and so does every node: the tree
//!   is the machine room's, and a link that fails does not move a host to another switch.
//! - **Hosts.** A host is a machine ([`weft_fabric::machines`]) of one or more HCAs whose role is
//!   `host`; its name is the machine's name (its first word when it is a NodeDescription such
//!   as `cn01 HCA-1`), or what a [`NameMap`] gives for one of its HCAs (node GUID, port GUID or
//!   node name) or for the machine. HCAs that end up with one host name are one host. An HCA
//!   with no name Slurm could use (`MT4129 ConnectX7 Mellanox Technologies`, `localhost`) and
//!   none in the map is left out, by GUID.
//! - **Leaves and levels.** The levels are the caller's: weft's fat-tree detection, which
//!   finds them from the cabling (leaves have hosts, each further level is one cable further
//!   from them; a host-less management sub-tree or spare switch hanging off the tree is set
//!   aside) unless the description records them. A switch's children are its neighbours one
//!   level down; a switch without a level is left out.
//! - **One leaf per host.** A host cabled to several leaves (several rails, or an HCA with
//!   ports on two switches) is listed under the leaf of its lowest port GUID.
//! - **Left out.** Service nodes (SHARP aggregation, storage, management), routers, switches
//!   with no host below them (those that lead only to service nodes, or to nothing), and hosts
//!   cabled to no switch.
//! - **Several fabrics.** Switches with no cable path between them are separate fabrics, one
//!   tree each: Slurm places a job within one. When no switch of a fabric reaches all its
//!   leaves (a torus, a mesh), a top switch that is not a real one is added above its topmost
//!   switches, so that jobs may still span it.
//!
//! Deterministic: switches and hosts in natural order (`leaf2` before `leaf10`), fabrics in the
//! order of their first switch.

use crate::hostlist::natural_cmp;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use weft_fabric::machines::{MachineError, Machines};
use weft_fabric::{Fabric, Guid, NodeId, NodeKind, Role};

/// Host names by node GUID, port GUID or name: `GUID-or-name hostname` lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameMap {
    by_guid: BTreeMap<Guid, String>,
    by_name: BTreeMap<String, String>,
}

/// A line of a name map that is not `KEY HOSTNAME`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("name map line {line}: {why}")]
pub struct NameMapError {
    /// The line (from 1).
    pub line: usize,
    /// What is wrong with it.
    pub why: String,
}

impl NameMap {
    /// Reads `GUID-or-name hostname` lines; blank lines and `#` comments are skipped. A key
    /// that reads as a GUID (`0x…`) is one; anything else is a node or host name.
    pub fn parse(text: &str) -> Result<NameMap, NameMapError> {
        let mut map = NameMap::default();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let err = |why: String| NameMapError { line: i + 1, why };
            let [key, host] = words.as_slice() else {
                return Err(err(format!(
                    "expected `GUID-or-name hostname`, found {} word(s)",
                    words.len()
                )));
            };
            if let Some(bad) = bad_char(host) {
                return Err(err(format!(
                    "host name `{host}` has `{bad}`, which Slurm's host lists cannot hold"
                )));
            }
            let dup = match key.parse::<Guid>() {
                Ok(g) => map.by_guid.insert(g, (*host).to_owned()).is_some(),
                Err(_) => map
                    .by_name
                    .insert((*key).to_owned(), (*host).to_owned())
                    .is_some(),
            };
            if dup {
                return Err(err(format!("`{key}` is mapped twice")));
            }
        }
        Ok(map)
    }

    /// How many entries the map has.
    pub fn len(&self) -> usize {
        self.by_guid.len() + self.by_name.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A character a Slurm host or switch name may not hold (the host list and config syntax).
fn bad_char(name: &str) -> Option<char> {
    name.chars()
        .find(|c| c.is_whitespace() || c.is_control() || "[],=#\"'".contains(*c))
}

/// One switch of the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeSwitch {
    /// Its name for the scheduler (the node's name, made safe for Slurm).
    pub name: String,
    /// The switch, or `None` for one that is not real: a top added above a fabric whose
    /// switches no one switch joins, or a leaf holding the hosts of a switch that also has
    /// switches below it (Slurm takes one or the other).
    pub node: Option<NodeId>,
    /// Its level: 1 for a leaf, one above its children otherwise.
    pub level: u8,
    /// A leaf's hosts, in natural order.
    pub hosts: Vec<String>,
    /// The switches one level down, in natural order.
    pub children: Vec<String>,
}

/// One connected fabric: its switches, top level first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeFabric {
    /// The switches, by level from the top, then by name.
    pub switches: Vec<TreeSwitch>,
    /// Hosts listed under its leaves.
    pub hosts: usize,
    /// Its number of levels.
    pub levels: u8,
    /// Whether a top switch was added (no switch reached all its leaves).
    pub added_top: bool,
}

/// What the tree leaves out, counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// Service nodes by role.
    pub service: BTreeMap<Role, usize>,
    /// Routers.
    pub routers: usize,
    /// Switches with no host below them, by name.
    pub switches: Vec<String>,
    /// Hosts cabled to no switch, by name.
    pub unattached: Vec<String>,
    /// Hosts cabled to more than one leaf (each listed under one).
    pub multi_leaf: usize,
    /// HCAs with no host name Slurm could use and none in the name map (a NodeDescription
    /// such as `MT4129 ConnectX7 Mellanox Technologies`, or `localhost`), by node GUID.
    pub unnamed: Vec<Guid>,
}

/// The scheduler's view of a fabric.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedTree {
    /// One tree per connected fabric that has hosts.
    pub fabrics: Vec<TreeFabric>,
    /// What is not in them.
    pub left_out: LeftOut,
}

/// Why a fabric has no scheduler tree.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    /// No switch at all.
    #[error("fabric `{0}` has no switch: a scheduler's topology is a tree of switches")]
    NoSwitch(String),
    /// No host cabled to a switch.
    #[error(
        "fabric `{0}` has no host cabled to a switch (or none with a host name weft could read)"
    )]
    NoHost(String),
    /// The end nodes cannot be grouped into machines.
    #[error(transparent)]
    Machines(#[from] MachineError),
}

/// The host name of a machine named `name`: the name itself when Slurm can read it, the host
/// of a NodeDescription that names a host and a device (`cn01 HCA-1` → `cn01`); `None` for
/// anything else (`MT4129 ConnectX7 Mellanox Technologies`, what an HCA says before its host
/// sets a description) and for `localhost`, which names no one machine.
fn host_name(name: &str) -> Option<&str> {
    let h = match bad_char(name) {
        None => name,
        Some(_) => weft_fabric::machines::split(name)?.0,
    };
    (!h.is_empty() && bad_char(h).is_none() && h != "localhost").then_some(h)
}

/// Whether `n` is an HCA whose role is `host`.
fn is_host_hca(fabric: &Fabric, n: NodeId) -> bool {
    let node = fabric.node(n);
    node.kind() == NodeKind::Hca && node.role().is_host()
}

/// The nodes cabled to `id` (each once per cable).
fn neighbours(fabric: &Fabric, id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
    fabric
        .node(id)
        .ports
        .iter()
        .filter_map(move |p| {
            fabric.peer(weft_fabric::PortRef {
                node: id,
                port: p.num,
            })
        })
        .map(|(far, _)| far.node)
}

/// Per node, the switches cabled to it (sorted, once each), for switches.
fn switch_adjacency(fabric: &Fabric) -> Vec<Vec<NodeId>> {
    fabric
        .node_ids()
        .zip(fabric.nodes())
        .map(|(id, n)| {
            if !n.is_switch() {
                return Vec::new();
            }
            let set: BTreeSet<NodeId> = neighbours(fabric, id)
                .filter(|&m| m != id && fabric.node(m).is_switch())
                .collect();
            set.into_iter().collect()
        })
        .collect()
}

/// Switch names safe for Slurm, by node: the node's name with every character Slurm cannot
/// read replaced by `_`; names that would then clash get the switch's GUID after them.
fn switch_names(fabric: &Fabric) -> BTreeMap<NodeId, String> {
    let safe = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if bad_char(&c.to_string()).is_some() {
                    '_'
                } else {
                    c
                }
            })
            .collect()
    };
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for n in fabric.nodes().iter().filter(|n| n.is_switch()) {
        *count.entry(safe(n.name())).or_default() += 1;
    }
    fabric
        .node_ids()
        .zip(fabric.nodes())
        .filter(|(_, n)| n.is_switch())
        .map(|(id, n)| {
            let s = safe(n.name());
            let name = if count.get(&s).copied().unwrap_or(0) > 1 || s.is_empty() {
                format!("{s}_{:016x}", n.guid().0)
            } else {
                s
            };
            (id, name)
        })
        .collect()
}

/// The scheduler's tree of `fabric` ([module docs](self)), with the switches' `levels` (per
/// node index: leaves 1, `None` for end nodes and for switches outside the tree — weft's
/// fat-tree detection, `weft_compiler::routing::shape::levels`), host names through `names`.
pub fn sched_tree(
    fabric: &Fabric,
    levels: &[Option<u8>],
    names: &NameMap,
) -> Result<SchedTree, TreeError> {
    if fabric.switch_count() == 0 {
        return Err(TreeError::NoSwitch(fabric.name.clone()));
    }
    let machines = Machines::of(fabric)?;
    let level = |id: NodeId| levels.get(id.index()).copied().flatten();
    let sw_name = switch_names(fabric);
    let mut left = LeftOut::default();
    for n in fabric.nodes().iter().filter(|n| !n.is_switch()) {
        if n.kind() == NodeKind::Router {
            left.routers += 1;
        } else if !n.role().is_host() {
            *left.service.entry(n.role()).or_default() += 1;
        }
    }

    let hosts = host_leaves_of(fabric, &machines, names, &mut left);
    if hosts.is_empty() {
        return Err(TreeError::NoHost(fabric.name.clone()));
    }

    // Each leaf's hosts; then the switches kept: those with a host below them.
    let mut on_leaf: BTreeMap<NodeId, Vec<String>> = BTreeMap::new();
    for (h, (_, leaf)) in hosts {
        on_leaf.entry(leaf).or_default().push(h);
    }
    let adj = switch_adjacency(fabric);
    let (kept, children) = kept_switches(fabric, levels, &adj, &on_leaf);
    left.switches = fabric
        .node_ids()
        .zip(fabric.nodes())
        .filter(|(id, n)| n.is_switch() && !kept.contains(id))
        .filter_map(|(id, _)| sw_name.get(&id).cloned())
        .collect();
    left.switches.sort_by(|a, b| natural_cmp(a, b));

    let comps = components(&kept, &adj);
    let name_of = |id: NodeId| sw_name.get(&id).cloned().unwrap_or_default();
    let mut taken: BTreeSet<String> = sw_name.values().cloned().collect();
    let many = comps.len() > 1;
    let mut fabrics: Vec<TreeFabric> = Vec::new();
    for members in &comps {
        let switches: Vec<TreeSwitch> = members
            .iter()
            .map(|&id| {
                let mut hosts = on_leaf.get(&id).cloned().unwrap_or_default();
                hosts.sort_by(|a, b| natural_cmp(a, b));
                let mut ch: Vec<String> = children
                    .get(&id)
                    .into_iter()
                    .flatten()
                    .map(|&c| name_of(c))
                    .collect();
                ch.sort_by(|a, b| natural_cmp(a, b));
                TreeSwitch {
                    name: name_of(id),
                    node: Some(id),
                    level: level(id).unwrap_or(1),
                    hosts,
                    children: ch,
                }
            })
            .collect();
        fabrics.push(tree_fabric(
            fabric,
            switches,
            (fabrics.len(), many),
            &mut taken,
        ));
    }
    fabrics.sort_by(|a, b| first_name(a).cmp_natural(first_name(b)));
    Ok(SchedTree {
        fabrics,
        left_out: left,
    })
}

/// Hosts: name → (lowest port GUID cabled to a switch, that switch). Hosts without a name, or
/// cabled to no switch, and hosts on several leaves are counted in `left`.
fn host_leaves_of(
    fabric: &Fabric,
    machines: &Machines,
    names: &NameMap,
    left: &mut LeftOut,
) -> BTreeMap<String, (Guid, NodeId)> {
    let mut hosts: BTreeMap<String, (Guid, NodeId)> = BTreeMap::new();
    let mut leaves_of: BTreeMap<String, BTreeSet<NodeId>> = BTreeMap::new();
    let mut unattached: BTreeSet<String> = BTreeSet::new();
    for m in &machines.machines {
        let members: Vec<NodeId> = m
            .members
            .iter()
            .map(|x| x.node)
            .filter(|&n| is_host_hca(fabric, n))
            .collect();
        let Some(&first) = members.first() else {
            continue;
        };
        let mapped = members
            .iter()
            .find_map(|&n| {
                let node = fabric.node(n);
                names
                    .by_guid
                    .get(&node.guid())
                    .or_else(|| node.ports.iter().find_map(|p| names.by_guid.get(&p.guid)))
                    .or_else(|| names.by_name.get(node.name()))
            })
            .or_else(|| names.by_name.get(&m.name))
            .or_else(|| host_name(&m.name).and_then(|h| names.by_name.get(h)));
        let name = match mapped {
            Some(h) => h.clone(),
            None => match host_name(&m.name) {
                Some(h) => h.to_owned(),
                None => {
                    left.unnamed.push(fabric.node(first).guid());
                    continue;
                }
            },
        };
        for &n in &members {
            let node = fabric.node(n);
            for p in &node.ports {
                let Some((far, _)) = fabric.peer(weft_fabric::PortRef {
                    node: n,
                    port: p.num,
                }) else {
                    continue;
                };
                if !fabric.node(far.node).is_switch() {
                    continue;
                }
                leaves_of.entry(name.clone()).or_default().insert(far.node);
                let e = hosts.entry(name.clone()).or_insert((p.guid, far.node));
                if (p.guid, far.node) < *e {
                    *e = (p.guid, far.node);
                }
            }
        }
        if !hosts.contains_key(&name) {
            unattached.insert(name);
        }
    }
    unattached.retain(|h| !hosts.contains_key(h));
    left.unattached = unattached.into_iter().collect();
    left.unattached.sort_by(|a, b| natural_cmp(a, b));
    left.multi_leaf = leaves_of.values().filter(|s| s.len() > 1).count();
    left.unnamed.sort();
    hosts
}

/// The switches kept (those with a host below them, level by level up from the leaves of
/// `on_leaf`) and each kept switch's kept children.
fn kept_switches(
    fabric: &Fabric,
    levels: &[Option<u8>],
    adj: &[Vec<NodeId>],
    on_leaf: &BTreeMap<NodeId, Vec<String>>,
) -> (BTreeSet<NodeId>, BTreeMap<NodeId, Vec<NodeId>>) {
    let level = |id: NodeId| levels.get(id.index()).copied().flatten();
    let max_level = levels.iter().flatten().copied().max().unwrap_or(1);
    let mut kept: BTreeSet<NodeId> = on_leaf.keys().copied().collect();
    let mut children: BTreeMap<NodeId, Vec<NodeId>> = BTreeMap::new();
    for l in 2..=max_level {
        for (id, _) in fabric
            .node_ids()
            .zip(fabric.nodes())
            .filter(|(id, n)| n.is_switch() && level(*id) == Some(l))
        {
            let below: Vec<NodeId> = adj
                .get(id.index())
                .into_iter()
                .flatten()
                .copied()
                .filter(|&c| level(c) == Some(l - 1) && kept.contains(&c))
                .collect();
            if !below.is_empty() {
                kept.insert(id);
                children.insert(id, below);
            }
        }
    }
    (kept, children)
}

/// Fabrics: the kept switches' connected components over every switch cable.
fn components(kept: &BTreeSet<NodeId>, adj: &[Vec<NodeId>]) -> Vec<Vec<NodeId>> {
    let mut comp: BTreeMap<NodeId, usize> = BTreeMap::new();
    let mut comps: Vec<Vec<NodeId>> = Vec::new();
    for &start in kept {
        if comp.contains_key(&start) {
            continue;
        }
        let k = comps.len();
        let mut members = Vec::new();
        let mut queue = VecDeque::from([start]);
        comp.insert(start, k);
        while let Some(s) = queue.pop_front() {
            if kept.contains(&s) {
                members.push(s);
            }
            for &t in adj.get(s.index()).into_iter().flatten() {
                if let std::collections::btree_map::Entry::Vacant(e) = comp.entry(t) {
                    e.insert(k);
                    queue.push_back(t);
                }
            }
        }
        comps.push(members);
    }

    comps
}

/// One fabric of the tree from its kept `switches` (fabric `index`, of `many` or one): host
/// leaves split off, a top added when no switch reaches every leaf, sorted by level then name.
fn tree_fabric(
    fabric: &Fabric,
    mut switches: Vec<TreeSwitch>,
    (index, many): (usize, bool),
    taken: &mut BTreeSet<String>,
) -> TreeFabric {
    host_leaves(&mut switches, taken);
    // Tops: kept switches no kept switch lists as a child. Does one reach every leaf?
    let listed: BTreeSet<&str> = switches
        .iter()
        .flat_map(|s| s.children.iter().map(String::as_str))
        .collect();
    let tops: Vec<String> = switches
        .iter()
        .filter(|s| !listed.contains(s.name.as_str()))
        .map(|s| s.name.clone())
        .collect();
    let leaves = switches.iter().filter(|s| !s.hosts.is_empty()).count();
    let reaches_all = tops.iter().any(|t| leaves_below(&switches, t) == leaves);
    let added_top = !reaches_all;
    if added_top {
        let base = if many {
            format!("{}-top{}", fabric.name, index + 1)
        } else {
            format!("{}-top", fabric.name)
        };
        add_top(&mut switches, tops, &base, taken);
    }
    switches.sort_by(|a, b| b.level.cmp(&a.level).then(natural_cmp(&a.name, &b.name)));
    TreeFabric {
        hosts: switches.iter().map(|s| s.hosts.len()).sum(),
        levels: switches.iter().map(|s| s.level).max().unwrap_or(1),
        switches,
        added_top,
    }
}

/// Slurm refuses a switch with both hosts and child switches (a host cabled to a switch the
/// description records above level 1): its hosts go under a leaf of their own, which is not a
/// real switch.
fn host_leaves(switches: &mut Vec<TreeSwitch>, taken: &mut BTreeSet<String>) {
    let mut extra = Vec::new();
    for sw in switches.iter_mut() {
        if sw.hosts.is_empty() || sw.children.is_empty() {
            continue;
        }
        let mut name = format!("{}-hosts", sw.name);
        while taken.contains(&name) {
            name.push('_');
        }
        taken.insert(name.clone());
        sw.children.push(name.clone());
        sw.children.sort_by(|a, b| natural_cmp(a, b));
        extra.push(TreeSwitch {
            name,
            node: None,
            level: 1,
            hosts: std::mem::take(&mut sw.hosts),
            children: Vec::new(),
        });
    }
    switches.extend(extra);
}

/// A switch named after `base` (made safe for Slurm, and unique) above the `tops`, at a level
/// above them all.
fn add_top(
    switches: &mut Vec<TreeSwitch>,
    tops: Vec<String>,
    base: &str,
    taken: &mut BTreeSet<String>,
) {
    let top_level = switches.iter().map(|s| s.level).max().unwrap_or(1);
    let base: String = base
        .chars()
        .map(|c| {
            if bad_char(&c.to_string()).is_some() {
                '_'
            } else {
                c
            }
        })
        .collect();
    let mut name = base.clone();
    while taken.contains(&name) {
        name.push('_');
    }
    taken.insert(name.clone());
    let mut ch = tops;
    ch.sort_by(|a, b| natural_cmp(a, b));
    // The tops may sit at different levels; the added switch is above them all.
    switches.push(TreeSwitch {
        name,
        node: None,
        level: top_level.saturating_add(1),
        hosts: Vec::new(),
        children: ch,
    });
}

/// The first switch of a fabric in natural order, for ordering the fabrics.
fn first_name(f: &TreeFabric) -> Natural<'_> {
    Natural(
        f.switches
            .iter()
            .filter(|s| s.node.is_some())
            .map(|s| s.name.as_str())
            .min_by(|a, b| natural_cmp(a, b))
            .unwrap_or_default(),
    )
}

/// A name compared in natural order.
struct Natural<'a>(&'a str);

impl Natural<'_> {
    fn cmp_natural(&self, other: Natural<'_>) -> std::cmp::Ordering {
        natural_cmp(self.0, other.0)
    }
}

/// How many leaves (switches with hosts) are below `top`, `top` included.
fn leaves_below(switches: &[TreeSwitch], top: &str) -> usize {
    let by_name: BTreeMap<&str, &TreeSwitch> =
        switches.iter().map(|s| (s.name.as_str(), s)).collect();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut stack = vec![top];
    let mut leaves = 0;
    while let Some(s) = stack.pop() {
        if !seen.insert(s) {
            continue;
        }
        let Some(sw) = by_name.get(s) else { continue };
        if !sw.hosts.is_empty() {
            leaves += 1;
        }
        stack.extend(sw.children.iter().map(String::as_str));
    }
    leaves
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_fabric::{FabricBuilder, NodeSpec, PortRef};

    /// A fabric builder with helpers: switches and HCAs by name, cables by name and port.
    struct B(FabricBuilder, u64);

    impl B {
        fn new() -> B {
            B(FabricBuilder::new("f"), 0x100)
        }
        fn node(&mut self, name: &str, kind: NodeKind, ports: u8) -> NodeId {
            self.1 += 0x100;
            self.0
                .add_node(NodeSpec::new(name, kind, Guid(self.1), ports))
                .unwrap()
        }
        fn sw(&mut self, name: &str) -> NodeId {
            self.node(name, NodeKind::Switch, 36)
        }
        fn hca(&mut self, name: &str) -> NodeId {
            self.node(name, NodeKind::Hca, 2)
        }
        fn link(&mut self, a: NodeId, pa: u8, b: NodeId, pb: u8) {
            self.0
                .add_link(PortRef::new(a, pa), PortRef::new(b, pb))
                .unwrap();
        }
        /// `n` hosts `prefix1..` on `leaf`'s ports from `first`.
        fn hosts(&mut self, leaf: NodeId, prefix: &str, n: u8, first: u8) {
            for i in 1..=n {
                let h = self.hca(&format!("{prefix}{i:02}"));
                self.link(h, 1, leaf, first + i - 1);
            }
        }
        fn tree(self, names: &NameMap) -> SchedTree {
            let f = self.0.finish();
            sched_tree(&f, &bfs_levels(&f), names).unwrap()
        }
    }

    /// Levels for these fixtures (the real ones are the compiler's fat-tree detection): 1 for
    /// a switch with an end node other than an aggregation node, one more than the nearest
    /// such switch for the others.
    fn bfs_levels(f: &Fabric) -> Vec<Option<u8>> {
        let mut level = vec![None; f.nodes().len()];
        let mut queue = VecDeque::new();
        for (id, n) in f.node_ids().zip(f.nodes()) {
            let seed = neighbours(f, id).any(|m| {
                let m = f.node(m);
                !m.is_switch() && m.role() != Role::Aggregation
            });
            if n.is_switch() && seed {
                level[id.index()] = Some(1u8);
                queue.push_back(id);
            }
        }
        let adj = switch_adjacency(f);
        while let Some(s) = queue.pop_front() {
            for &t in &adj[s.index()] {
                if level[t.index()].is_none() {
                    level[t.index()] = Some(level[s.index()].unwrap() + 1);
                    queue.push_back(t);
                }
            }
        }
        level
    }

    /// Each switch line as `name level: hosts | children`.
    fn lines(t: &SchedTree) -> Vec<Vec<String>> {
        t.fabrics
            .iter()
            .map(|f| {
                f.switches
                    .iter()
                    .map(|s| {
                        format!(
                            "{} {}: {} | {}",
                            s.name,
                            s.level,
                            s.hosts.join(","),
                            s.children.join(",")
                        )
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_three_level_tree_gets_three_levels() {
        let mut b = B::new();
        let core = b.sw("core1");
        let spines = [b.sw("spine1"), b.sw("spine2")];
        let leaves = [b.sw("leaf1"), b.sw("leaf2")];
        for (i, &s) in spines.iter().enumerate() {
            b.link(core, i as u8 + 1, s, 36);
            b.link(s, 1, leaves[i], 36);
        }
        b.hosts(leaves[0], "cn", 2, 1);
        b.hosts(leaves[1], "gpu", 2, 1);
        let t = b.tree(&NameMap::default());
        assert_eq!(
            lines(&t),
            [[
                "core1 3:  | spine1,spine2",
                "spine1 2:  | leaf1",
                "spine2 2:  | leaf2",
                "leaf1 1: cn01,cn02 | ",
                "leaf2 1: gpu01,gpu02 | "
            ]]
        );
        assert_eq!(t.fabrics[0].levels, 3);
        assert!(!t.fabrics[0].added_top);
    }

    #[test]
    fn service_nodes_and_the_switches_that_lead_only_to_them_are_left_out() {
        let mut b = B::new();
        let spine = b.sw("spine1");
        let leaf = b.sw("leaf1");
        let storage = b.sw("storage-leaf");
        b.link(spine, 1, leaf, 36);
        b.link(spine, 2, storage, 36);
        b.hosts(leaf, "cn", 2, 1);
        // A SHARP aggregation node inside every switch, on its port 35.
        for (i, sw) in [spine, leaf, storage].into_iter().enumerate() {
            let an = b.hca(&format!("an{i}"));
            b.link(an, 1, sw, 35);
            b.0.set_role(an, Role::Aggregation);
        }
        let st = b.hca("store1");
        b.link(st, 1, storage, 1);
        b.0.set_role(st, Role::Storage);
        let m = b.hca("ufm1");
        b.link(m, 1, leaf, 10);
        b.0.set_role(m, Role::Management);
        let t = b.tree(&NameMap::default());
        assert_eq!(lines(&t), [["spine1 2:  | leaf1", "leaf1 1: cn01,cn02 | "]]);
        assert_eq!(t.left_out.switches, ["storage-leaf"]);
        assert_eq!(t.left_out.service.get(&Role::Aggregation), Some(&3));
        assert_eq!(t.left_out.service.get(&Role::Storage), Some(&1));
        assert_eq!(t.left_out.service.get(&Role::Management), Some(&1));
    }

    #[test]
    fn disconnected_fabrics_are_one_tree_each() {
        let mut b = B::new();
        let a = b.sw("b-leaf");
        let c = b.sw("a-leaf");
        b.hosts(a, "x", 1, 1);
        b.hosts(c, "y", 1, 1);
        let t = b.tree(&NameMap::default());
        // In order of their switches' names.
        assert_eq!(lines(&t), [["a-leaf 1: y01 | "], ["b-leaf 1: x01 | "]]);
    }

    #[test]
    fn a_host_on_two_leaves_is_under_its_lowest_port_guid_leaf() {
        let mut b = B::new();
        let l1 = b.sw("leaf1");
        let l2 = b.sw("leaf2");
        let s = b.sw("spine");
        b.link(s, 1, l1, 36);
        b.link(s, 2, l2, 36);
        // Two HCAs of one machine: the later one (higher GUID) on leaf1.
        let r0 = b.hca("dgx1 mlx5_0");
        let r1 = b.hca("dgx1 mlx5_1");
        b.link(r0, 1, l2, 1);
        b.link(r1, 1, l1, 1);
        let t = b.tree(&NameMap::default());
        assert_eq!(lines(&t), [["spine 2:  | leaf2", "leaf2 1: dgx1 | "]]);
        assert_eq!(t.left_out.multi_leaf, 1);
        assert_eq!(t.left_out.switches, ["leaf1"]);
    }

    #[test]
    fn leaves_no_switch_joins_get_a_top() {
        let mut b = B::new();
        let l1 = b.sw("sw1");
        let l2 = b.sw("sw2");
        b.link(l1, 36, l2, 36);
        b.hosts(l1, "a", 1, 1);
        b.hosts(l2, "b", 1, 1);
        let t = b.tree(&NameMap::default());
        assert_eq!(
            lines(&t),
            [["f-top 2:  | sw1,sw2", "sw1 1: a01 | ", "sw2 1: b01 | "]]
        );
        assert!(t.fabrics[0].added_top);
    }

    #[test]
    fn names_come_from_the_map_and_unnamed_hcas_are_left_out() {
        let mut b = B::new();
        let l = b.sw("leaf");
        let h = b.hca("MT4129 ConnectX7 Mellanox Technologies");
        b.link(h, 1, l, 1);
        let g = b.hca("cn7 HCA-1");
        b.link(g, 1, l, 2);
        let lh = b.hca("localhost mlx5_0");
        b.link(lh, 1, l, 3);
        let hg = b.0.fabric().node(h).guid();
        let lg = b.0.fabric().node(lh).guid();
        let t = sched_tree(b.0.fabric(), &bfs_levels(b.0.fabric()), &NameMap::default()).unwrap();
        assert_eq!(lines(&t), [["leaf 1: cn7 | "]]);
        assert_eq!(t.left_out.unnamed, [hg, lg]);
        let map =
            NameMap::parse(&format!("# comment\n{hg} node-a\n\ncn7 node-b # by name\n")).unwrap();
        let t = b.tree(&map);
        assert_eq!(lines(&t), [["leaf 1: node-a,node-b | "]]);
    }

    #[test]
    fn hosts_on_a_switch_with_children_get_a_leaf_of_their_own() {
        let mut b = B::new();
        let spine = b.sw("spine");
        let leaf = b.sw("leaf");
        b.link(spine, 1, leaf, 36);
        b.hosts(leaf, "cn", 1, 1);
        b.hosts(spine, "login", 1, 2);
        let f = b.0.finish();
        // Levels as a description records them: the spine at 2 although a host hangs off it.
        let mut levels = vec![None; f.nodes().len()];
        levels[spine.index()] = Some(2);
        levels[leaf.index()] = Some(1);
        let t = sched_tree(&f, &levels, &NameMap::default()).unwrap();
        assert_eq!(
            lines(&t),
            [[
                "spine 2:  | leaf,spine-hosts",
                "leaf 1: cn01 | ",
                "spine-hosts 1: login01 | "
            ]]
        );
        assert!(!t.fabrics[0].added_top);
    }

    #[test]
    fn a_bad_name_map_is_refused_with_its_line() {
        assert_eq!(NameMap::parse("a b\nc\n").unwrap_err().line, 2);
        assert_eq!(NameMap::parse("a b[1]\n").unwrap_err().line, 1);
        assert_eq!(NameMap::parse("a b\na c\n").unwrap_err().line, 2);
    }

    #[test]
    fn no_switch_is_an_error() {
        let mut b = B::new();
        let x = b.hca("x");
        let y = b.hca("y");
        b.link(x, 1, y, 1);
        let f = b.0.finish();
        assert_eq!(
            sched_tree(&f, &bfs_levels(&f), &NameMap::default()),
            Err(TreeError::NoSwitch("f".into()))
        );
    }
}
