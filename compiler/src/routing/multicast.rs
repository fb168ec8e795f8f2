//! Multicast trees along the unicast routing's own structure: one MFT entry per switch a
//! group's tree passes, so that the union of the tree with the unicast routes on the group's
//! VL closes no credit loop.
//!
//! A multicast packet entering switch `x` on port `i` leaves on every other port of the
//! mask, so a tree adds, at each switch it passes, a dependency between every two of its
//! switch links, in both directions. The builder keeps the unicast routes' channel
//! dependencies (between switch-to-switch channels: a channel to or from an end port takes
//! part in no loop) in an acyclic graph (`acyclic.rs`) per VL and adds a tree's dependencies edge by
//! edge, growing the tree breadth first from a root and attaching a switch only through a
//! link whose dependencies keep the graph acyclic. Groups on one VL are added one after
//! another, so their trees are also free of loops among themselves.
//!
//! Where the engine has an orientation, the tree follows it: `fat_tree` grows each tree from
//! one top switch down the levels (a switch's single parent link toward the root, so a
//! packet never turns from down to up), `updn` down its own Up*/Down* order; the roots are
//! spread over the top switches by MLID. When no root gives such a tree (a degraded tree),
//! and for `layered` and `minhop`, any link whose dependencies the graph admits is taken;
//! when none reaches a member, the group is refused with the loop its last link would close.
//! Without a dependency graph that is acyclic to begin with (`minhop`, which claims no
//! deadlock freedom) trees are breadth-first trees, not checked.

use super::acyclic::Acyclic;
use super::graph::{Channels, Graph};
use super::{Engine, Layers};
use std::collections::{BTreeMap, VecDeque};
use weft_fabric::{
    FabricState, JoinState, Lid, Mlid, NodeId, PortMask, PortNum, PortRef, LFT_UNSET,
};

/// Most roots one group's tree is tried from, per pass.
const MAX_ROOTS: usize = 16;

/// One group's tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    /// The mask of every switch the tree passes.
    pub masks: Vec<(NodeId, PortMask)>,
    /// Its root (the switch of its members, when all are on one; `None` when no member is
    /// on a switch).
    pub root: Option<NodeId>,
    /// Whether its dependencies were checked against the unicast routes' (not when those
    /// already close a credit loop on its VL).
    pub checked: bool,
}

/// Why a group has no tree.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    /// Every way to a member's switch closes a credit loop with the routes (and trees) on the
    /// group's VL.
    #[error("no tree reaches `{switch}` without closing a credit loop on VL {vl}: {cycle}")]
    Loop {
        /// A switch with members the tree could not reach.
        switch: String,
        /// The group's VL.
        vl: u8,
        /// The loop the last link tried would close, channel by channel.
        cycle: String,
    },
    /// A member's switch is cut off from the others.
    #[error("`{switch}` cannot be reached from the other members' switches")]
    Unreachable {
        /// The switch.
        switch: String,
    },
}

/// Builds trees for the groups of one routed state.
pub struct Trees<'a> {
    state: &'a FabricState,
    g: Graph,
    ch: Channels,
    /// The neighbour's port at the other end of each switch port (`0` where none).
    back: Vec<Vec<u8>>,
    /// The LFTs as rows by dense switch index.
    rows: Vec<Vec<u8>>,
    /// Orientation: a link `x → y` goes down when `key[y] > key[x]` (by the first field
    /// only for `fat_tree`'s levels). `None`: no orientation.
    key: Option<Vec<(u32, u64)>>,
    /// Whether only the first field of the key orders (levels).
    by_level: bool,
    /// Candidate roots, preferred first.
    roots: Vec<usize>,
    /// How many leading [`Trees::roots`] are the preferred ones the MLID spreads over.
    top: usize,
    /// Whether the routes have layers (a dependency graph per VL), else one graph for all.
    layered: Option<&'a Layers>,
    /// SL → VL of every hop (`None`: every SL on VL 0).
    sl2vl: Option<[u8; 16]>,
    /// The dependency graph per VL (all VLs under key 0 when the routes have no layers),
    /// `None` when the unicast routes alone are cyclic there.
    deps: BTreeMap<u8, Option<Acyclic>>,
}

impl<'a> Trees<'a> {
    /// A builder for `state`, routed by `engine` (the engine used) with `routing`'s settings;
    /// `layers` when the routes have them, `sl2vl` the map every hop shares.
    pub fn new(
        state: &'a FabricState,
        engine: Engine,
        routing: &crate::RoutingConfig,
        layers: Option<&'a Layers>,
        sl2vl: Option<[u8; 16]>,
    ) -> Trees<'a> {
        let fabric = &state.fabric;
        let g = Graph::new(fabric, &state.lids);
        let ch = g.channels();
        let mut back: Vec<Vec<u8>> = g
            .switches
            .iter()
            .map(|s| vec![0u8; usize::from(s.ports) + 1])
            .collect();
        for (i, s) in g.switches.iter().enumerate() {
            for grp in &s.groups {
                for &(mine, theirs) in &grp.ports {
                    if let Some(b) = back[i].get_mut(usize::from(mine)) {
                        *b = theirs;
                    }
                }
            }
        }
        let rows: Vec<Vec<u8>> = g
            .switches
            .iter()
            .map(|s| {
                state
                    .switches
                    .get(&s.id)
                    .map_or_else(Vec::new, |t| t.lft.ports.clone())
            })
            .collect();
        let guid = |i: usize| fabric.node(g.switches[i].id).guid().0;
        let n = g.switches.len();
        let (key, by_level) = match engine {
            Engine::FatTree => match super::shape::levels(fabric) {
                Ok(l) => {
                    let key: Vec<(u32, u64)> = (0..n)
                        .map(|i| {
                            let level = l.level.get(g.switches[i].id.index()).copied().flatten();
                            (u32::from(u8::MAX - level.unwrap_or(0)), guid(i))
                        })
                        .collect();
                    (Some(key), true)
                }
                Err(_) => (None, false),
            },
            Engine::Updn => {
                let input = super::RoutingInput {
                    fabric,
                    lids: &state.lids,
                    config: routing,
                    vl_budget: 1,
                };
                let mut rank = vec![u32::MAX; n];
                g.hops_into(&super::updn::roots(&g, &input), &mut rank);
                (Some((0..n).map(|i| (rank[i], guid(i))).collect()), false)
            }
            Engine::Minhop | Engine::Layered => (None, false),
        };
        let (roots, top) = match &key {
            Some(k) => {
                let best = k.iter().map(|k| k.0).min().unwrap_or(0);
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by_key(|&i| (k[i].0, k[i].1));
                let top = order.iter().take_while(|&&i| k[i].0 == best).count();
                (order, top)
            }
            None => {
                // The most central switches first.
                let ecc = by_centrality(&g, state);
                let best = ecc.first().map_or(0, |e| e.0);
                let top = ecc.iter().take_while(|e| e.0 == best).count();
                (ecc.into_iter().map(|e| e.2).collect(), top)
            }
        };
        Trees {
            state,
            g,
            ch,
            back,
            rows,
            key,
            by_level,
            roots,
            top,
            layered: layers,
            sl2vl,
            deps: BTreeMap::new(),
        }
    }

    /// The VL SL `sl` travels on.
    pub fn vl_of(&self, sl: u8) -> u8 {
        self.sl2vl
            .and_then(|t| t.get(usize::from(sl)).copied())
            .unwrap_or(0)
    }

    /// The unicast dependency graph of `vl` (all VLs at once when the routes have no layers).
    fn deps_for(&mut self, vl: u8) -> u8 {
        let slot = if self.layered.is_some() { vl } else { 0 };
        if !self.deps.contains_key(&slot) {
            let succ = match self.layered {
                None => self.g.dependencies(&self.ch, &self.rows),
                Some(_) => self.dependencies_on(vl),
            };
            let edges = edges(&self.ch, &succ);
            self.deps.insert(slot, Acyclic::new(self.ch.count(), edges));
        }
        slot
    }

    /// The dependencies of the routes on `vl` when the routes have layers: every route
    /// walked from its source switch, kept when one of its SLs maps to `vl` (every route
    /// when some source port has SLs of its own).
    fn dependencies_on(&self, vl: u8) -> Vec<Vec<[u64; 4]>> {
        let mut out: Vec<Vec<[u64; 4]>> = self
            .ch
            .peers
            .iter()
            .map(|p| vec![[0u64; 4]; p.len()])
            .collect();
        let path_sl = &self.state.path_sl;
        let every = !path_sl.by_source.is_empty();
        let n = self.g.switches.len();
        for s in 0..n {
            let id = self.g.switches[s].id;
            for (lid, exit) in self.g.exits.iter().enumerate() {
                if exit.is_none() {
                    continue;
                }
                let l = Lid(lid as u16);
                let sls = path_sl
                    .for_switch(id, l)
                    .unwrap_or_else(|| path_sl.for_destination(l));
                if !every && !sls.iter().any(|sl| self.vl_of(sl.0) == vl) {
                    continue;
                }
                let mut cur = s;
                let mut prev: Option<(usize, u8)> = None;
                for _ in 0..n {
                    let p = self.rows[cur].get(lid).copied().unwrap_or(LFT_UNSET);
                    let next = self.ch.peer(cur, p);
                    if next == u32::MAX {
                        break;
                    }
                    if let Some((x, q)) = prev {
                        out[x][usize::from(q)][usize::from(p / 64)] |= 1 << (p % 64);
                    }
                    prev = Some((cur, p));
                    cur = next as usize;
                }
            }
        }
        out
    }

    /// The tree of group `mlid` on SL `sl` over `members` (end ports, live).
    pub fn tree(
        &mut self,
        mlid: Mlid,
        sl: u8,
        members: &BTreeMap<PortRef, JoinState>,
    ) -> Result<Tree, TreeError> {
        let fabric = &self.state.fabric;
        let vl = self.vl_of(sl);
        let slot = self.deps_for(vl);
        let at = self.member_switches(members);
        let needed: Vec<usize> = at.keys().copied().collect();
        if let Some(t) = self.at_most_one(&at) {
            return Ok(t);
        }
        let Some(&first) = needed.first() else {
            return Ok(self.finish(Vec::new(), None, true));
        };
        let mut deps = self.deps.remove(&slot).flatten();
        let checked = deps.is_some();
        let spread = mlid.index() % self.top.max(1);
        let mut order: Vec<usize> = self.roots[..self.top].to_vec();
        order.rotate_left(spread);
        let mut failure: Option<(usize, Vec<u32>)> = None;
        let mut result = None;
        'passes: for oriented in [true, false] {
            if oriented && self.key.is_none() {
                continue;
            }
            let tries: Vec<usize> = if oriented {
                order.iter().copied().take(MAX_ROOTS).collect()
            } else {
                order
                    .iter()
                    .copied()
                    .chain(self.roots[self.top..].iter().copied())
                    .take(MAX_ROOTS)
                    .collect()
            };
            for root in tries {
                match self.grow(root, &needed, &at, oriented, deps.as_mut()) {
                    Ok(masks) => {
                        result = Some((masks, root));
                        break 'passes;
                    }
                    Err(f) => {
                        if failure.is_none() || !f.1.is_empty() {
                            failure = Some(f);
                        }
                    }
                }
            }
        }
        self.deps.insert(slot, deps);
        if let Some((masks, root)) = result {
            return Ok(self.finish(masks, Some(root), checked));
        }
        let (unreached, cycle) = failure.unwrap_or((first, Vec::new()));
        let switch = fabric.node(self.g.switches[unreached].id).name().to_owned();
        if cycle.is_empty() {
            return Err(TreeError::Unreachable { switch });
        }
        Err(TreeError::Loop {
            switch,
            vl,
            cycle: self.loop_text(&cycle),
        })
    }

    /// Each member's switch (dense index) and the ports toward its receiving members there.
    fn member_switches(&self, members: &BTreeMap<PortRef, JoinState>) -> BTreeMap<usize, PortMask> {
        let mut at: BTreeMap<usize, PortMask> = BTreeMap::new();
        for (&p, js) in members {
            let Some(peer) = self.state.fabric.live_peer(p) else {
                continue;
            };
            let Some(&x) = self.g.index.get(peer.node.index()) else {
                continue;
            };
            if x == u32::MAX {
                continue;
            }
            let mask = at.entry(x as usize).or_default();
            if js.receives() {
                mask.insert(peer.port);
            }
        }
        at
    }

    /// The tree of a group whose members are on one switch (its mask there) or on none
    /// (empty); `None` when they are on several.
    fn at_most_one(&self, at: &BTreeMap<usize, PortMask>) -> Option<Tree> {
        match at.iter().collect::<Vec<_>>()[..] {
            [] => Some(self.finish(Vec::new(), None, true)),
            [(&only, &m)] => Some(self.finish(vec![(only, m)], Some(only), true)),
            _ => None,
        }
    }

    /// A tree of the masks by dense switch index (empty ones left out).
    fn finish(&self, masks: Vec<(usize, PortMask)>, root: Option<usize>, checked: bool) -> Tree {
        Tree {
            masks: masks
                .into_iter()
                .filter(|(_, m)| !m.is_empty())
                .map(|(x, m)| (self.g.switches[x].id, m))
                .collect(),
            root: root.map(|r| self.g.switches[r].id),
            checked,
        }
    }

    /// The spanning tree the groups on a VL of their own share: breadth first from the most
    /// central switch (the smallest eccentricity, then GUID), one cable per pair of
    /// neighbours. A tree alone on a VL closes no credit loop — a packet never turns back
    /// on the cable it came by, and a tree has no cycle to go round — and the dependencies of
    /// its subtrees are among its own, so every group on the VL may be one of its
    /// subtrees ([`Trees::subtree`]).
    pub fn spanning(&self) -> Spanning {
        let n = self.g.switches.len();
        let root = match self.key {
            // Without an orientation the roots are already by centrality.
            None => self.roots.first().copied().unwrap_or(0),
            Some(_) => by_centrality(&self.g, self.state)
                .first()
                .map_or(0, |c| c.2),
        };
        let mut parent: Vec<Option<(usize, u8, u8)>> = vec![None; n];
        let mut inside = vec![false; n];
        if let Some(r) = inside.get_mut(root) {
            *r = true;
        }
        let mut queue: VecDeque<usize> = (root < n).then_some(root).into_iter().collect();
        while let Some(x) = queue.pop_front() {
            for grp in &self.g.switches[x].groups {
                let y = grp.peer as usize;
                if inside[y] {
                    continue;
                }
                let Some(&(px, py)) = grp.ports.get(self.spread_link(grp.ports.len(), root)) else {
                    continue;
                };
                inside[y] = true;
                parent[y] = Some((x, px, py));
                queue.push_back(y);
            }
        }
        Spanning {
            root,
            parent,
            inside,
        }
    }

    /// Group `members`' tree as the smallest subtree of `span` that holds every member's
    /// switch: their ways up to its root, without the part above the highest switch where
    /// they meet.
    pub fn subtree(
        &self,
        span: &Spanning,
        members: &BTreeMap<PortRef, JoinState>,
    ) -> Result<Tree, TreeError> {
        let at = self.member_switches(members);
        if let Some(t) = self.at_most_one(&at) {
            return Ok(t);
        }
        let needed: Vec<usize> = at.keys().copied().collect();
        if let Some(&x) = needed.iter().find(|&&x| !span.inside[x]) {
            return Err(TreeError::Unreachable {
                switch: self
                    .state
                    .fabric
                    .node(self.g.switches[x].id)
                    .name()
                    .to_owned(),
            });
        }
        let mut keep = ways_to_root(&span.parent, &needed, span.root);
        // Down from the root while it is no member's switch and has a single branch kept.
        let n = keep.len();
        let mut children = vec![0u32; n];
        let mut child = vec![usize::MAX; n];
        for y in (0..n).filter(|&y| keep[y]) {
            if let Some((x, ..)) = span.parent[y] {
                children[x] += 1;
                child[x] = y;
            }
        }
        let mut top = span.root;
        while !at.contains_key(&top) && children[top] == 1 {
            keep[top] = false;
            top = child[top];
        }
        let masks = tree_masks(&span.parent, &keep, &at);
        Ok(self.finish(masks, Some(top), true))
    }

    /// Grows the tree from `root` breadth first (down the orientation when `oriented`) until
    /// every switch of `needed` is in it, prunes it to them and their ways to the root, and
    /// returns each switch's mask. Its dependencies stay in `deps`. On failure, nothing of it
    /// stays, and the error names an unreached switch and the loop of the last link refused
    /// (empty when none was).
    fn grow(
        &self,
        root: usize,
        needed: &[usize],
        at: &BTreeMap<usize, PortMask>,
        oriented: bool,
        mut deps: Option<&mut Acyclic>,
    ) -> Result<Vec<(usize, PortMask)>, Unreached> {
        let n = self.g.switches.len();
        // parent[y] = (x, x's port, y's port).
        let mut parent: Vec<Option<(usize, u8, u8)>> = vec![None; n];
        let mut inside = vec![false; n];
        let mut ports: Vec<Vec<u8>> = vec![Vec::new(); n];
        // Dependencies this tree added: (u, v, switch, port a, port b).
        let mut added: Vec<(u32, u32, usize, u8, u8)> = Vec::new();
        let mut refused: Vec<u32> = Vec::new();
        let mut missing = needed.iter().filter(|&&x| x != root).count();
        let mut wanted = vec![false; n];
        for &x in needed {
            wanted[x] = true;
        }
        inside[root] = true;
        let mut queue = VecDeque::from([root]);
        while let (Some(x), true) = (queue.pop_front(), missing > 0) {
            for grp in &self.g.switches[x].groups {
                let y = grp.peer as usize;
                if inside[y] || (oriented && !self.down(x, y)) {
                    continue;
                }
                let Some(&(px, py)) = grp.ports.get(self.spread_link(grp.ports.len(), root)) else {
                    continue;
                };
                if let Some(d) = deps.as_deref_mut() {
                    let mark = added.len();
                    let mut ok = true;
                    for &f in &ports[x] {
                        let into_f = self.channel_into(x, f);
                        let into_y = self.ch.id(y, py);
                        let (Some(a), Some(b), Some(c), Some(e)) =
                            (into_f, self.ch.id(x, px), into_y, self.ch.id(x, f))
                        else {
                            continue;
                        };
                        for (u, v, pa, pb) in [(a, b, f, px), (c, e, px, f)] {
                            let (u, v) = (u as u32, v as u32);
                            if d.contains(u, v) {
                                continue;
                            }
                            if d.insert(u, v) {
                                added.push((u, v, x, pa, pb));
                            } else {
                                refused = d.path(v, u).unwrap_or_default();
                                ok = false;
                                break;
                            }
                        }
                        if !ok {
                            break;
                        }
                    }
                    if !ok {
                        for &(u, v, ..) in &added[mark..] {
                            d.remove(u, v);
                        }
                        added.truncate(mark);
                        continue;
                    }
                }
                inside[y] = true;
                parent[y] = Some((x, px, py));
                ports[x].push(px);
                ports[y].push(py);
                if wanted[y] {
                    missing -= 1;
                }
                queue.push_back(y);
            }
        }
        let undo = |deps: Option<&mut Acyclic>, added: &[(u32, u32, usize, u8, u8)]| {
            if let Some(d) = deps {
                for &(u, v, ..) in added {
                    d.remove(u, v);
                }
            }
        };
        if let Some(&x) = needed.iter().find(|&&x| !inside[x]) {
            undo(deps, &added);
            return Err((x, refused));
        }
        // Keep the members' switches and their ways to the root.
        let keep = ways_to_root(&parent, needed, root);
        let masks = tree_masks(&parent, &keep, at);
        let mask_of = |x: usize| {
            masks
                .binary_search_by_key(&x, |m| m.0)
                .ok()
                .and_then(|i| masks.get(i))
                .map_or_else(PortMask::default, |m| m.1)
        };
        // Dependencies between two links of which one was pruned go again.
        let pruned: Vec<(u32, u32, usize, u8, u8)> = added
            .iter()
            .copied()
            .filter(|&(_, _, x, a, b)| {
                let m = mask_of(x);
                !(m.contains(PortNum(a)) && m.contains(PortNum(b)))
            })
            .collect();
        undo(deps, &pruned);
        Ok(masks)
    }

    /// Which of `links` parallel cables a tree from `root` takes: spread by root, so trees
    /// from different roots share fewer cables.
    fn spread_link(&self, links: usize, root: usize) -> usize {
        root % links.max(1)
    }

    /// Whether `x → y` goes down the orientation.
    fn down(&self, x: usize, y: usize) -> bool {
        let Some(k) = &self.key else { return true };
        if self.by_level {
            k[y].0 > k[x].0
        } else {
            k[y] > k[x]
        }
    }

    /// The channel entering `x` through its port `port` (the neighbour's channel).
    fn channel_into(&self, x: usize, port: u8) -> Option<usize> {
        let y = self.ch.peer(x, port);
        if y == u32::MAX {
            return None;
        }
        let theirs = self.back[x].get(usize::from(port)).copied()?;
        self.ch.id(y as usize, theirs)
    }

    /// A loop named channel by channel: `` `s0` port 3 → `s1` port 2 → … → `s0` port 3``.
    fn loop_text(&self, cycle: &[u32]) -> String {
        let name = |c: u32| {
            let (s, p) = self.ch.owner(c as usize);
            format!(
                "`{}` port {p}",
                self.state.fabric.node(self.g.switches[s].id).name()
            )
        };
        let mut parts: Vec<String> = cycle.iter().take(12).map(|&c| name(c)).collect();
        if cycle.len() > 12 {
            parts.push(format!("… ({} channels in all)", cycle.len()));
        }
        if let Some(&c) = cycle.first() {
            parts.push(name(c));
        }
        parts.join(" → ")
    }
}

/// The spanning tree of [`Trees::spanning`].
pub struct Spanning {
    /// Its root (dense switch index).
    root: usize,
    /// Per switch: its parent, the parent's port and its own (`None` at the root and off the
    /// tree).
    parent: Vec<Option<(usize, u8, u8)>>,
    /// Per switch: whether the tree reaches it.
    inside: Vec<bool>,
}

impl Spanning {
    /// Its root switch (`None` in a fabric without switches).
    pub fn root_switch(&self, trees: &Trees<'_>) -> Option<NodeId> {
        trees.g.switches.get(self.root).map(|s| s.id)
    }
}

/// The switches on the ways from each of `needed` up `parent` to `root`, and `root`.
fn ways_to_root(parent: &[Option<(usize, u8, u8)>], needed: &[usize], root: usize) -> Vec<bool> {
    let mut keep = vec![false; parent.len()];
    if let Some(k) = keep.get_mut(root) {
        *k = true;
    }
    for &x in needed {
        let mut y = x;
        while keep.get(y) == Some(&false) {
            keep[y] = true;
            match parent[y] {
                Some((p, ..)) => y = p,
                None => break,
            }
        }
    }
    keep
}

/// Each kept switch's mask, by dense index: its members' ports (`at`) and its links to its
/// kept parent and children.
fn tree_masks(
    parent: &[Option<(usize, u8, u8)>],
    keep: &[bool],
    at: &BTreeMap<usize, PortMask>,
) -> Vec<(usize, PortMask)> {
    let mut masks: BTreeMap<usize, PortMask> = BTreeMap::new();
    for (y, _) in keep.iter().enumerate().filter(|(_, &k)| k) {
        let m = masks.entry(y).or_default();
        if let Some(local) = at.get(&y) {
            for p in local.iter() {
                m.insert(p);
            }
        }
        if let Some((x, px, py)) = parent[y].filter(|&(x, ..)| keep[x]) {
            m.insert(PortNum(py));
            masks.entry(x).or_default().insert(PortNum(px));
        }
    }
    masks.into_iter().collect()
}

/// Every switch as (eccentricity in hops, GUID, dense index), the most central first.
fn by_centrality(g: &Graph, state: &FabricState) -> Vec<(u32, u64, usize)> {
    let n = g.switches.len();
    let mut dist = vec![u32::MAX; n];
    let mut ecc: Vec<(u32, u64, usize)> = (0..n)
        .map(|i| {
            g.hops_into(&[i], &mut dist);
            let e = dist.iter().copied().filter(|&d| d != u32::MAX).max();
            (
                e.unwrap_or(0),
                state.fabric.node(g.switches[i].id).guid().0,
                i,
            )
        })
        .collect();
    ecc.sort_unstable();
    ecc
}

/// Why a tree from one root failed: a member's switch it did not reach, and the loop (as
/// channels) the last link refused would have closed (empty when none was refused).
type Unreached = (usize, Vec<u32>);

/// The edges of per-channel successor sets (`succ[x][port]`: the next switch's ports).
fn edges(ch: &Channels, succ: &[Vec<[u64; 4]>]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for (x, ports) in succ.iter().enumerate() {
        for (p, bits) in ports.iter().enumerate() {
            if *bits == [0; 4] {
                continue;
            }
            let y = ch.peer(x, p as u8);
            let (Some(u), true) = (ch.id(x, p as u8), y != u32::MAX) else {
                continue;
            };
            for q in 0..=255u8 {
                if bits[usize::from(q / 64)] >> (q % 64) & 1 == 1 {
                    if let Some(v) = ch.id(y as usize, q) {
                        out.push((u as u32, v as u32));
                    }
                }
            }
        }
    }
    out
}
