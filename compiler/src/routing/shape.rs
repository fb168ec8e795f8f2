//! Is this fabric a fat-tree? The question OpenSM's ftree asks of a discovered fabric, asked of
//! the cabling as real trees are cabled: leaves are the switches with *hosts*, each further
//! level is one cable further from the leaves, hosts hang off leaves only, and every
//! switch-to-switch cable between two switches of the tree joins adjacent levels.
//!
//! **Host-less leaves**: a switch without hosts that is cabled as a leaf is — every one of its
//! switch cables goes to level 2, to two or more switches that are all parents of one leaf and
//! at least half of that leaf's parents (a leaf slot whose hosts are not installed yet, as in
//! Selene's storage fabric) — is a leaf too, routed as one; [`TreeShape::describe`] counts
//! them. Without this, the search from the hosts puts it at level 3, where it joins nothing.
//!
//! **Service nodes** (end nodes whose role is not `host`: SHARP aggregation nodes, storage,
//! management; see [`weft_fabric::Role`]) take no part: a spine with its aggregation node is
//! still a spine, and service nodes may hang off any switch.
//!
//! **Set aside**, when the levels are found from the hosts: switches that have no host and no
//! place in the levels. A switch's *cone* is the leaves below it, reached by stepping one
//! level down at a time. A switch of level `ℓ ≥ 2` *joins* two leaves of its cone when no
//! switch of a lower level has both in its cone: it is the turning point of the shortest
//! up/down paths between them, as every spine and core of a tree is for some pair. The tree
//! is the leaves, every switch that joins some pair, and every switch below one (the
//! pass-through switches of a tree whose upper levels have one child). Every other switch is
//! set aside: a host-less management sub-tree hanging off the tree (wherever it is cabled,
//! the tree below already joins every pair its cone holds), a spare switch cabled to one
//! switch, a switch above switches that already join all it could join, and a switch no cable
//! path joins to a leaf. With a single leaf there is nothing to join and nothing is set aside
//! that way. Cables to set-aside switches
//! do not count in the levels; `fat_tree` still routes set-aside switches and service nodes,
//! and the verifier proves them like every switch and end port.
//!
//! Levels come from the cables as built, down links and down switches included, so a tree with
//! faults keeps the shape it was cabled as (a leaf whose hosts are all down is still a leaf).
//! A fabric whose switches all record a level of 1 or more (the stdlib's trees, or an import
//! that wrote them) keeps the recorded levels and sets nothing aside.
//!
//! Unlike OpenSM, uneven trees are fat-trees here: switches of one level that differ in their
//! numbers of up and down cables (OpenSM's `ERR AB09`–`AB0C` refusals, typical of a degraded or
//! partly populated tree, of missing uplinks and of leaves with varying host counts) are
//! counted and reported, not refused; parallel cables count once per neighbour; a director
//! chassis shows as its ASICs, whose internal cables form inner levels like any other; and
//! `fat_tree` routes them all.

use std::collections::{BTreeMap, VecDeque};
use weft_fabric::{Fabric, NodeId, Role};

/// The most levels a detected fat-tree may have (OpenSM's ftree ranks stop at 8 too).
pub const MAX_LEVELS: u8 = 8;

/// What the cabling looks like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A fat-tree.
    FatTree(TreeShape),
    /// Anything else, and why.
    Other {
        /// Why it is not a fat-tree (lowercase, names in backticks).
        reason: String,
        /// A node to point at.
        node: Option<NodeId>,
    },
}

/// Why a switch is outside a fat-tree's levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Aside {
    /// It has no host and joins no two leaves that a switch below it does not already join: a
    /// management or spare switch hanging off the tree, or above switches that join it all.
    JoinsNothing,
    /// No cable path joins it to a leaf.
    Unreachable,
}

/// A switch outside the levels, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetAside {
    /// The switch.
    pub switch: NodeId,
    /// Why.
    pub why: Aside,
}

/// The levels of a fabric's switches: recorded by the description, or found from the hosts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Levels {
    /// Level per node index (leaves are 1); `None` for end nodes and set-aside switches.
    pub level: Vec<Option<u8>>,
    /// Whether the levels were recorded by the description rather than found.
    pub recorded: bool,
    /// Switches outside the levels, in node order (none when recorded).
    pub set_aside: Vec<SetAside>,
}

/// A fat-tree's levels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeShape {
    /// Level per node index (leaves are 1; `None` for end nodes and set-aside switches).
    pub levels: Vec<Option<u8>>,
    /// The highest level.
    pub height: u8,
    /// Number of leaf switches.
    pub leaves: usize,
    /// Leaves with no host cabled to them (host-less leaves found from the cabling, or
    /// recorded level-1 switches without hosts).
    pub hostless: usize,
    /// Switches per level: `per_level[0]` are the leaves, `per_level[height − 1]` the top.
    pub per_level: Vec<usize>,
    /// Whether the levels were recorded by the description rather than found.
    pub recorded: bool,
    /// Switches whose numbers of up and down switch cables differ from the most common ones
    /// of their level (what OpenSM's ftree refuses).
    pub uneven: usize,
    /// Switches outside the levels, in node order, with why.
    pub set_aside: Vec<SetAside>,
    /// Service nodes (end nodes whose role is not `host`), per role, in [`Role::ALL`] order.
    pub service: BTreeMap<Role, usize>,
}

/// Most switch names an engine line lists.
const NAMES_SHOWN: usize = 3;

impl TreeShape {
    /// One line: "a 3-level fat-tree (36 leaves, 18 at level 2, 9 at level 3; levels found
    /// from the hosts)", then what is set aside.
    pub fn describe(&self, fabric: &Fabric) -> String {
        let origin = if self.recorded {
            "levels recorded by the description"
        } else {
            "levels found from the hosts"
        };
        let uneven = match self.uneven {
            0 => String::new(),
            1 => "; 1 switch has fewer or more cables than its level-mates".to_owned(),
            n => format!("; {n} switches have fewer or more cables than their level-mates"),
        };
        let mut levels = vec![match self.leaves {
            1 => "1 leaf".to_owned(),
            n => format!("{n} leaves"),
        }];
        match (self.leaves, self.hostless) {
            (_, 0) => {}
            (1, _) => levels.push("without hosts".to_owned()),
            (_, h) => levels.push(format!("{h} of them without hosts")),
        }
        for (i, n) in self.per_level.iter().enumerate().skip(1) {
            levels.push(format!("{n} at level {}", i + 1));
        }
        let mut aside: Vec<String> = Vec::new();
        if !self.set_aside.is_empty() {
            let names: Vec<String> = self
                .set_aside
                .iter()
                .take(NAMES_SHOWN)
                .map(|s| format!("`{}`", fabric.node(s.switch).name()))
                .collect();
            let more = self.set_aside.len().saturating_sub(NAMES_SHOWN);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            let n = self.set_aside.len();
            aside.push(format!(
                "{n} switch{} outside the levels ({}{more})",
                if n == 1 { "" } else { "es" },
                names.join(", ")
            ));
        }
        let service: usize = self.service.values().sum();
        if service > 0 {
            let kinds: Vec<String> = self
                .service
                .iter()
                .map(|(r, n)| format!("{n} {r}"))
                .collect();
            aside.push(format!(
                "{service} service node{} ({})",
                if service == 1 { "" } else { "s" },
                kinds.join(", ")
            ));
        }
        let aside = if aside.is_empty() {
            String::new()
        } else {
            format!("; set aside: {}", aside.join(", "))
        };
        format!(
            "a {}-level fat-tree ({}; {origin}{uneven}){aside}",
            self.height,
            levels.join(", ")
        )
    }
}

/// Level per node index found from the hosts, over every cable (up or down), with the
/// switches set aside (see the module documentation) at `None`: `Err` with the reason when no
/// switch has hosts.
pub fn levels_from_hosts(fabric: &Fabric) -> Result<Vec<Option<u8>>, (String, Option<NodeId>)> {
    found(fabric).map(|l| l.level)
}

/// The levels: recorded when every switch records a level of 1 or more, else found from the
/// hosts ([`levels_from_hosts`]).
pub fn levels(fabric: &Fabric) -> Result<Levels, (String, Option<NodeId>)> {
    let recorded = fabric
        .nodes()
        .iter()
        .filter(|n| n.is_switch())
        .all(|n| n.spec.level.is_some_and(|l| l >= 1));
    if recorded {
        return Ok(Levels {
            level: fabric
                .nodes()
                .iter()
                .map(|n| if n.is_switch() { n.spec.level } else { None })
                .collect(),
            recorded: true,
            set_aside: Vec::new(),
        });
    }
    found(fabric)
}

/// Levels found from the hosts, and the switches set aside.
fn found(fabric: &Fabric) -> Result<Levels, (String, Option<NodeId>)> {
    let n = fabric.nodes().len();
    let mut level: Vec<Option<u8>> = vec![None; n];
    let mut switch_peers: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut ends = 0usize;
    for l in fabric.links() {
        let (a, b) = (l.a.node, l.b.node);
        let (na, nb) = (fabric.node(a), fabric.node(b));
        match (na.is_switch(), nb.is_switch()) {
            (true, true) => {
                switch_peers[a.index()].push(b.index());
                switch_peers[b.index()].push(a.index());
            }
            (true, false) => {
                ends += 1;
                if nb.is_host() {
                    level[a.index()] = Some(1);
                }
            }
            (false, true) => {
                ends += 1;
                if na.is_host() {
                    level[b.index()] = Some(1);
                }
            }
            (false, false) => {}
        }
    }
    let with_hosts = (0..n).filter(|&i| level[i] == Some(1)).count();
    if with_hosts == 0 {
        let reason = if ends == 0 {
            "no switch has end nodes cabled to it, so there are no leaves".to_owned()
        } else {
            "no switch has hosts cabled to it (its end nodes are all service nodes), so there \
             are no leaves"
                .to_owned()
        };
        return Err((reason, None));
    }
    let mut queue: VecDeque<usize> = (0..n).filter(|&i| level[i] == Some(1)).collect();
    while let Some(i) = queue.pop_front() {
        let next = level[i].unwrap_or(1).saturating_add(1);
        for &p in &switch_peers[i] {
            if level[p].is_none() {
                level[p] = Some(next);
                queue.push_back(p);
            }
        }
    }
    for i in hostless_leaves(&level, &switch_peers) {
        level[i] = Some(1);
    }
    let leaves: Vec<usize> = (0..n).filter(|&i| level[i] == Some(1)).collect();
    let mut set_aside: Vec<SetAside> = Vec::new();
    for id in fabric.node_ids() {
        if fabric.node(id).is_switch() && level[id.index()].is_none() {
            set_aside.push(SetAside {
                switch: id,
                why: Aside::Unreachable,
            });
        }
    }
    if leaves.len() >= 2 {
        for i in outside_joins(&level, &switch_peers, &leaves) {
            level[i] = None;
            set_aside.push(SetAside {
                switch: NodeId(i as u32),
                why: Aside::JoinsNothing,
            });
        }
        set_aside.sort_by_key(|s| s.switch);
    }
    Ok(Levels {
        level,
        recorded: false,
        set_aside,
    })
}

/// The switches the search from the hosts put at level 3 that are cabled as leaves (see the
/// module documentation), in index order. Parallel cables count once.
fn hostless_leaves(level: &[Option<u8>], peers: &[Vec<usize>]) -> Vec<usize> {
    // Distinct level-2 neighbours of switch `i`, ascending.
    let parents = |i: usize| {
        let mut p: Vec<usize> = peers[i]
            .iter()
            .copied()
            .filter(|&p| level[p] == Some(2))
            .collect();
        p.sort_unstable();
        p.dedup();
        p
    };
    let leaves: Vec<Vec<usize>> = (0..level.len())
        .filter(|&i| level[i] == Some(1))
        .map(parents)
        .collect();
    (0..level.len())
        .filter(|&i| level[i] == Some(3) && peers[i].iter().all(|&p| level[p] == Some(2)))
        .filter(|&i| {
            let mine = parents(i);
            mine.len() >= 2
                && leaves.iter().any(|theirs| {
                    2 * mine.len() >= theirs.len()
                        && mine.iter().all(|p| theirs.binary_search(p).is_ok())
                })
        })
        .collect()
}

/// The switches with a level that are neither leaves, nor join leaves, nor are below a
/// switch that does (see the module documentation), in index order.
///
/// Bit sets over the leaves: each switch's cone (the leaves below it), and per leaf `a` the
/// leaves `b` joined to it at a lower level so far (`joined[a]`, the pair relation, `a`
/// joined to itself). Level by level from 2 up, a switch joins when some pair of its cone is
/// not joined yet; then the cones of the switches that join are added to the relation.
/// Time `O(Σ |cone| · leaves / 64)`, memory `leaves² / 8` bytes.
fn outside_joins(level: &[Option<u8>], peers: &[Vec<usize>], leaves: &[usize]) -> Vec<usize> {
    let n = level.len();
    let words = leaves.len().div_ceil(64);
    let bit = |k: usize| (k / 64, 1u64 << (k % 64));
    // Switches by level, lowest first (ties by index).
    let mut order: Vec<usize> = (0..n).filter(|&i| level[i].is_some()).collect();
    order.sort_by_key(|&i| (level[i], i));
    let mut cone = vec![0u64; n * words];
    let mut joined = vec![0u64; leaves.len() * words];
    for (k, &leaf) in leaves.iter().enumerate() {
        let (w, b) = bit(k);
        cone[leaf * words + w] |= b;
        joined[k * words + w] |= b;
    }
    let children = |x: usize| {
        let l = level[x];
        peers[x]
            .iter()
            .copied()
            .filter(move |&p| l.is_some_and(|l| level[p] == Some(l - 1)))
    };
    // The leaves (by their index in `leaves`) of a cone.
    let members = |c: &[u64]| -> Vec<usize> {
        let mut out = Vec::new();
        for (w, &word) in c.iter().enumerate() {
            let mut rest = word;
            while rest != 0 {
                out.push(w * 64 + rest.trailing_zeros() as usize);
                rest &= rest - 1;
            }
        }
        out
    };
    let mut joins = vec![false; n];
    let mut acc = vec![0u64; words];
    let mut i = 0;
    while i < order.len() {
        let this = level[order[i]];
        let end = i + order[i..].iter().take_while(|&&x| level[x] == this).count();
        let at_level = &order[i..end];
        i = end;
        if this == Some(1) {
            continue;
        }
        for &x in at_level {
            acc.fill(0);
            for c in children(x) {
                for (a, &w) in acc.iter_mut().zip(&cone[c * words..(c + 1) * words]) {
                    *a |= w;
                }
            }
            cone[x * words..(x + 1) * words].copy_from_slice(&acc);
            joins[x] = members(&acc).into_iter().any(|a| {
                joined[a * words..(a + 1) * words]
                    .iter()
                    .zip(&acc)
                    .any(|(&j, &c)| c & !j != 0)
            });
        }
        for &x in at_level.iter().filter(|&&x| joins[x]) {
            let c = cone[x * words..(x + 1) * words].to_vec();
            for a in members(&c) {
                for (j, &w) in joined[a * words..(a + 1) * words].iter_mut().zip(&c) {
                    *j |= w;
                }
            }
        }
    }
    // Kept: leaves, switches that join, and every switch below a kept one, top down.
    let mut kept = vec![false; n];
    for &x in order.iter().rev() {
        if level[x] == Some(1) || joins[x] {
            kept[x] = true;
        }
        if kept[x] {
            for c in children(x) {
                kept[c] = true;
            }
        }
    }
    (0..n).filter(|&i| level[i].is_some() && !kept[i]).collect()
}

/// Whether `fabric` is a fat-tree, with its levels.
pub fn detect(fabric: &Fabric) -> Shape {
    let other = |reason: String, node: Option<NodeId>| Shape::Other { reason, node };
    if fabric.switch_count() == 0 {
        return other("the fabric has no switches".into(), None);
    }
    let Levels {
        level: levels,
        recorded,
        set_aside,
    } = match levels(fabric) {
        Ok(l) => l,
        Err((reason, node)) => return other(reason, node),
    };
    let height = levels.iter().flatten().copied().max().unwrap_or(0);
    if height > MAX_LEVELS {
        return other(
            format!("it has more than {MAX_LEVELS} levels, the most a fat-tree is detected with"),
            None,
        );
    }
    let aside: Vec<bool> = {
        let mut v = vec![false; levels.len()];
        for s in &set_aside {
            v[s.switch.index()] = true;
        }
        v
    };
    let name = |id: NodeId| fabric.node(id).name().to_owned();
    // (up, down) switch cables per switch.
    let mut updown: Vec<(u32, u32)> = vec![(0, 0); levels.len()];
    for l in fabric.links() {
        let (a, b) = (l.a.node, l.b.node);
        if aside[a.index()] || aside[b.index()] {
            continue;
        }
        match (levels[a.index()], levels[b.index()]) {
            (Some(la), Some(lb)) if la + 1 == lb => {
                updown[a.index()].0 += 1;
                updown[b.index()].1 += 1;
            }
            (Some(la), Some(lb)) if lb + 1 == la => {
                updown[b.index()].0 += 1;
                updown[a.index()].1 += 1;
            }
            (Some(la), Some(lb)) => {
                let why = if la == lb {
                    format!(
                        "`{}` and `{}` are both at level {la} and cabled to each other",
                        name(a),
                        name(b)
                    )
                } else {
                    format!(
                        "`{}` (level {la}) is cabled to `{}` (level {lb}), skipping a level",
                        name(a),
                        name(b)
                    )
                };
                return other(why, Some(a));
            }
            (Some(la), None) | (None, Some(la)) if la != 1 => {
                let (sw, end) = if levels[a.index()].is_some() {
                    (a, b)
                } else {
                    (b, a)
                };
                if fabric.node(end).is_host() {
                    return other(
                        format!(
                            "`{}` hangs off `{}`, which is at level {la}, not a leaf",
                            name(end),
                            name(sw)
                        ),
                        Some(sw),
                    );
                }
            }
            _ => {}
        }
    }
    // The most common (up, down) per level; switches that differ are uneven.
    let mut counts: BTreeMap<(u8, (u32, u32)), usize> = BTreeMap::new();
    for id in fabric.node_ids() {
        if let Some(l) = levels[id.index()] {
            *counts.entry((l, updown[id.index()])).or_default() += 1;
        }
    }
    let mut common: BTreeMap<u8, ((u32, u32), usize)> = BTreeMap::new();
    for (&(l, ud), &c) in &counts {
        let e = common.entry(l).or_insert((ud, 0));
        if c > e.1 {
            *e = (ud, c);
        }
    }
    let uneven = fabric
        .node_ids()
        .filter(|id| {
            levels[id.index()]
                .is_some_and(|l| common.get(&l).is_some_and(|c| c.0 != updown[id.index()]))
        })
        .count();
    let mut per_level = vec![0usize; usize::from(height)];
    for l in levels.iter().flatten() {
        if let Some(c) = usize::from(*l)
            .checked_sub(1)
            .and_then(|i| per_level.get_mut(i))
        {
            *c += 1;
        }
    }
    let mut service: BTreeMap<Role, usize> = BTreeMap::new();
    for n in fabric.nodes() {
        if !n.is_switch() && !n.is_host() && n.ports.iter().any(|p| p.link.is_some()) {
            *service.entry(n.role()).or_default() += 1;
        }
    }
    let leaves = levels.iter().filter(|&&l| l == Some(1)).count();
    let mut has_hosts = vec![false; levels.len()];
    for l in fabric.links() {
        for (sw, end) in [(l.a.node, l.b.node), (l.b.node, l.a.node)] {
            if fabric.node(end).is_host() {
                has_hosts[sw.index()] = true;
            }
        }
    }
    let hostless = (0..levels.len())
        .filter(|&i| levels[i] == Some(1) && !has_hosts[i])
        .count();
    Shape::FatTree(TreeShape {
        levels,
        height,
        leaves,
        hostless,
        per_level,
        recorded,
        uneven,
        set_aside,
        service,
    })
}
