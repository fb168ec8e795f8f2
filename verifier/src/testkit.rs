//! Test fixtures (not product code, and only built with the `testkit` feature or for this
//! crate's own tests): small fabrics, sequential LIDs, two simple routers (min-hop, up/down)
//! and table corruptions, for this crate's tests, the differential tests in `tests/`, the
//! planner's, the metrics' and the workspace's tests and benchmarks. Deterministic:
//! randomness comes from a seed.

// Generators over fabrics they build themselves, never fed input.
#![expect(
    clippy::indexing_slicing,
    reason = "generators over fabrics they build themselves, never fed input"
)]

use weft_fabric::{
    Fabric, FabricBuilder, FabricState, Guid, Lid, LidAssignment, NodeId, NodeKind, NodeSpec,
    PortNum, PortRef, SwitchState,
};

/// The seeded generator: weft's one RNG ([`SplitMix64`](weft_fabric::rng::SplitMix64)).
pub use weft_fabric::rng::SplitMix64 as Rng;

fn switch(b: &mut FabricBuilder, name: String, guid: u64, ports: u8) -> Option<NodeId> {
    b.add_node(NodeSpec::new(name, NodeKind::Switch, Guid(guid), ports))
        .ok()
}

fn hca(b: &mut FabricBuilder, name: String, guid: u64) -> Option<NodeId> {
    b.add_node(NodeSpec::new(name, NodeKind::Hca, Guid(guid), 1))
        .ok()
}

/// `n` switches in a ring (port 1 to the next, port 2 to the previous), `hosts` HCAs on each
/// (ports 3…).
pub fn ring(n: usize, hosts: usize) -> Fabric {
    let mut b = FabricBuilder::new("ring");
    let ports = (2 + hosts).max(3) as u8;
    let sw: Vec<NodeId> = (0..n)
        .filter_map(|i| switch(&mut b, format!("R{i}"), 0x20_0000 + i as u64 * 0x10, ports))
        .collect();
    for i in 0..n {
        if let (Some(&a), Some(&c)) = (sw.get(i), sw.get((i + 1) % n)) {
            if n > 2 || i == 0 {
                let _ = b.add_link(PortRef::new(a, 1), PortRef::new(c, 2));
            }
        }
        for h in 0..hosts {
            if let (Some(&a), Some(x)) = (
                sw.get(i),
                hca(
                    &mut b,
                    format!("H{i}_{h}"),
                    0x10_0000 + (i * 16 + h) as u64 * 0x10,
                ),
            ) {
                let _ = b.add_link(PortRef::new(x, 1), PortRef::new(a, 3 + h as u8));
            }
        }
    }
    b.finish()
}

/// A two-level fat-tree: `spines` spines, `leaves` leaves, `hosts` HCAs per leaf; leaf port
/// `hosts + s + 1` goes to spine `s`, spine port `l + 1` to leaf `l`.
pub fn fat_tree2(spines: usize, leaves: usize, hosts: usize) -> Fabric {
    let mut b = FabricBuilder::new("ft2");
    let sp: Vec<NodeId> = (0..spines)
        .filter_map(|s| {
            switch(
                &mut b,
                format!("S{}", s + 1),
                0x30_0000 + s as u64 * 0x10,
                leaves.max(1) as u8,
            )
        })
        .collect();
    let lf: Vec<NodeId> = (0..leaves)
        .filter_map(|l| {
            switch(
                &mut b,
                format!("L{}", l + 1),
                0x20_0000 + l as u64 * 0x10,
                (hosts + spines) as u8,
            )
        })
        .collect();
    for (l, &leaf) in lf.iter().enumerate() {
        for (s, &spine) in sp.iter().enumerate() {
            let _ = b.add_link(
                PortRef::new(leaf, (hosts + s + 1) as u8),
                PortRef::new(spine, (l + 1) as u8),
            );
        }
        for h in 0..hosts {
            if let Some(x) = hca(
                &mut b,
                format!("H{}", l * hosts + h + 1),
                0x10_0000 + (l * hosts + h) as u64 * 0x10,
            ) {
                let _ = b.add_link(PortRef::new(x, 1), PortRef::new(leaf, (h + 1) as u8));
            }
        }
    }
    b.finish()
}

/// A random connected fabric: `switches` switches (a random spanning tree plus `extra` random
/// links) and up to `hosts` HCAs on random switches; switch ports: `ports`.
pub fn random_fabric(
    rng: &mut Rng,
    switches: usize,
    extra: usize,
    hosts: usize,
    ports: u8,
) -> Fabric {
    let mut b = FabricBuilder::new("random");
    let sw: Vec<NodeId> = (0..switches)
        .filter_map(|i| switch(&mut b, format!("X{i}"), 0x40_0000 + i as u64 * 0x10, ports))
        .collect();
    let mut free: Vec<Vec<u8>> = vec![(1..=ports).collect(); sw.len()];
    let take = |free: &mut Vec<Vec<u8>>, rng: &mut Rng, i: usize| -> Option<u8> {
        let f = free.get_mut(i)?;
        if f.is_empty() {
            return None;
        }
        let k = rng.below(f.len() as u64) as usize;
        Some(f.swap_remove(k))
    };
    for i in 1..sw.len() {
        let j = rng.below(i as u64) as usize;
        if let (Some(pi), Some(pj)) = (take(&mut free, rng, i), take(&mut free, rng, j)) {
            if let (Some(&a), Some(&c)) = (sw.get(i), sw.get(j)) {
                let _ = b.add_link(PortRef::new(a, pi), PortRef::new(c, pj));
            }
        }
    }
    for _ in 0..extra {
        let i = rng.below(sw.len() as u64) as usize;
        let j = rng.below(sw.len() as u64) as usize;
        if i == j {
            continue;
        }
        if let (Some(pi), Some(pj)) = (take(&mut free, rng, i), take(&mut free, rng, j)) {
            if let (Some(&a), Some(&c)) = (sw.get(i), sw.get(j)) {
                let _ = b.add_link(PortRef::new(a, pi), PortRef::new(c, pj));
            }
        }
    }
    for h in 0..hosts {
        let i = rng.below(sw.len() as u64) as usize;
        if let Some(p) = take(&mut free, rng, i) {
            if let (Some(&a), Some(x)) = (
                sw.get(i),
                hca(&mut b, format!("H{h}"), 0x10_0000 + h as u64 * 0x10),
            ) {
                let _ = b.add_link(PortRef::new(x, 1), PortRef::new(a, p));
            }
        }
    }
    b.finish()
}

/// A random small fabric: a ring of 3 to 6 switches with 1 or 2 hosts each (a quarter of the
/// time), a two-level tree of 1–3 spines, 2–4 leaves and 1–3 hosts per leaf (a quarter), or
/// a [`random_fabric`] of 2–6 switches with up to 3 extra cables and 1–6 hosts on 5-port
/// switches.
pub fn small_fabric(rng: &mut Rng) -> Fabric {
    match rng.below(4) {
        0 => ring(3 + rng.below(4) as usize, 1 + rng.below(2) as usize),
        1 => fat_tree2(
            1 + rng.below(3) as usize,
            2 + rng.below(3) as usize,
            1 + rng.below(3) as usize,
        ),
        _ => {
            let switches = 2 + rng.below(5) as usize;
            let extra = rng.below(4) as usize;
            let hosts = 1 + rng.below(6) as usize;
            random_fabric(rng, switches, extra, hosts, 5)
        }
    }
}

/// `st` validated; panics (test fixtures only) when it is not valid.
#[expect(clippy::panic, reason = "test fixtures stop on an invalid fixture")]
pub fn valid(st: FabricState) -> weft_fabric::ValidState {
    match weft_fabric::ValidState::new(st) {
        Ok(v) => v,
        Err(e) => panic!("a test fixture is not a valid state:\n{e}"),
    }
}

/// LIDs 1, 2, … : switches first (port 0), then every wired end-node port, in node order
/// (end-node bases aligned to 2^LMC).
pub fn sequential_lids(f: &Fabric) -> LidAssignment {
    let mut lids = LidAssignment {
        lmc: f.lmc,
        base: Default::default(),
        vports: Vec::new(),
    };
    let span = 1u16 << f.lmc.min(7);
    let mut next = 1u16;
    for (i, n) in f.nodes().iter().enumerate() {
        if n.is_switch() {
            lids.base
                .entry(NodeId(i as u32))
                .or_default()
                .insert(PortNum(0), Lid(next));
            next += 1;
        }
    }
    // End-node bases are aligned to 2^LMC.
    next = next.div_ceil(span) * span;
    for (i, n) in f.nodes().iter().enumerate() {
        if !n.is_switch() {
            for p in &n.ports {
                if p.link.is_some() {
                    lids.base
                        .entry(NodeId(i as u32))
                        .or_default()
                        .insert(p.num, Lid(next));
                    next += span;
                }
            }
        }
    }
    lids
}

/// Hop distances between switches over live switch-to-switch links, and the neighbours.
fn switch_graph(f: &Fabric) -> Vec<Vec<(u8, usize)>> {
    let mut adj = vec![Vec::new(); f.nodes().len()];
    for (i, n) in f.nodes().iter().enumerate() {
        if !n.is_switch() || n.down {
            continue;
        }
        for p in &n.ports {
            if let Some((peer, link)) = f.peer(PortRef {
                node: NodeId(i as u32),
                port: p.num,
            }) {
                let pn = f.node(peer.node);
                if pn.is_switch() && !pn.down && f.link(link).state == weft_fabric::LinkState::Up {
                    if let Some(a) = adj.get_mut(i) {
                        a.push((p.num.0, peer.node.index()));
                    }
                }
            }
        }
    }
    adj
}

/// The switch an end-node port hangs off, and the switch's port.
fn attach(f: &Fabric, n: NodeId, p: PortNum) -> Option<(usize, u8)> {
    let (peer, link) = f.peer(PortRef { node: n, port: p })?;
    (f.node(peer.node).is_switch() && f.link(link).state == weft_fabric::LinkState::Up)
        .then_some((peer.node.index(), peer.port.0))
}

/// Routes every LID with `next(dest switch) -> next-port per switch` and fills the LFTs.
fn fill(
    f: &Fabric,
    lids: LidAssignment,
    mut next: impl FnMut(usize) -> Vec<Option<u8>>,
) -> FabricState {
    let mut st = FabricState::new(f.clone());
    let owners = lids.owners(f);
    st.lids = lids;
    for (i, n) in f.nodes().iter().enumerate() {
        if n.is_switch() {
            st.switches.insert(NodeId(i as u32), SwitchState::default());
        }
    }
    let mut cache: std::collections::BTreeMap<usize, Vec<Option<u8>>> = Default::default();
    for (lid, o) in owners.iter().enumerate() {
        let Some((n, p)) = *o else { continue };
        let (t, last) = if f.node(n).is_switch() {
            (n.index(), 0u8)
        } else {
            match attach(f, n, p) {
                Some(x) => x,
                None => continue,
            }
        };
        let hops = cache.entry(t).or_insert_with(|| next(t)).clone();
        for (x, h) in hops.iter().enumerate() {
            let port = if x == t { Some(last) } else { *h };
            if let (Some(port), Some(s)) = (port, st.switches.get_mut(&NodeId(x as u32))) {
                s.lft.set(Lid(lid as u16), PortNum(port));
            }
        }
    }
    st
}

/// Min-hop routing (lowest port among shortest next hops). Not deadlock-free in general.
pub fn route_minhop(f: &Fabric, lids: LidAssignment) -> FabricState {
    let adj = switch_graph(f);
    fill(f, lids, |t| {
        let mut dist = vec![u32::MAX; adj.len()];
        let mut q = std::collections::VecDeque::from([t]);
        if let Some(d) = dist.get_mut(t) {
            *d = 0;
        }
        while let Some(v) = q.pop_front() {
            let dv = dist.get(v).copied().unwrap_or(0);
            for &(_, w) in adj.get(v).map(Vec::as_slice).unwrap_or(&[]) {
                if dist.get(w) == Some(&u32::MAX) {
                    if let Some(d) = dist.get_mut(w) {
                        *d = dv + 1;
                    }
                    q.push_back(w);
                }
            }
        }
        (0..adj.len())
            .map(|x| {
                let dx = dist.get(x).copied().unwrap_or(u32::MAX);
                if dx == u32::MAX || dx == 0 {
                    return None;
                }
                adj.get(x)?
                    .iter()
                    .filter(|&&(_, w)| dist.get(w).copied() == Some(dx - 1))
                    .map(|&(p, _)| p)
                    .min()
            })
            .collect()
    })
}

/// Up/down routing from a root (the first switch): a switch that can reach the destination
/// going only down does so; any other goes up. Deadlock-free on any connected topology.
pub fn route_updown(f: &Fabric, lids: LidAssignment) -> FabricState {
    route_updown_from(f, lids, 0)
}

/// [`route_updown`] from the `k`-th live switch (counted modulo their number) as the root.
pub fn route_updown_from(f: &Fabric, lids: LidAssignment, k: usize) -> FabricState {
    let adj = switch_graph(f);
    let n = adj.len();
    let live: Vec<usize> = f
        .nodes()
        .iter()
        .enumerate()
        .filter(|(_, x)| x.is_switch() && !x.down)
        .map(|(i, _)| i)
        .collect();
    let root = live.get(k % live.len().max(1)).copied().unwrap_or(0);
    let mut rank = vec![u32::MAX; n];
    let mut q = std::collections::VecDeque::from([root]);
    if let Some(r) = rank.get_mut(root) {
        *r = 0;
    }
    let mut order = Vec::new();
    while let Some(v) = q.pop_front() {
        order.push(v);
        let rv = rank.get(v).copied().unwrap_or(0);
        for &(_, w) in adj.get(v).map(Vec::as_slice).unwrap_or(&[]) {
            if rank.get(w) == Some(&u32::MAX) {
                if let Some(r) = rank.get_mut(w) {
                    *r = rv + 1;
                }
                q.push_back(w);
            }
        }
    }
    // `a → b` goes up when b is closer to the root (ties: lower index).
    let up = |a: usize, b: usize| (rank.get(b), b) < (rank.get(a), a);
    fill(f, lids, |t| {
        // Down distance to t: over reversed down links, i.e. from t going up.
        let mut down = vec![u32::MAX; n];
        let mut q = std::collections::VecDeque::from([t]);
        if let Some(d) = down.get_mut(t) {
            *d = 0;
        }
        while let Some(v) = q.pop_front() {
            let dv = down.get(v).copied().unwrap_or(0);
            for &(_, w) in adj.get(v).map(Vec::as_slice).unwrap_or(&[]) {
                // w reaches v going down when v is below w (w → v is down).
                if !up(w, v) && down.get(w) == Some(&u32::MAX) {
                    if let Some(d) = down.get_mut(w) {
                        *d = dv + 1;
                    }
                    q.push_back(w);
                }
            }
        }
        // Everyone else: up to the best neighbour above, processed from the root down.
        let mut h = down.clone();
        let mut next = vec![None; n];
        for x in 0..n {
            if down.get(x).copied().unwrap_or(u32::MAX) != u32::MAX && x != t {
                next[x] = adj[x]
                    .iter()
                    .filter(|&&(_, w)| !up(x, w) && down.get(w).copied() == Some(down[x] - 1))
                    .map(|&(p, _)| p)
                    .min();
            }
        }
        for &x in &order {
            if h.get(x).copied().unwrap_or(0) != u32::MAX {
                continue;
            }
            let best = adj[x]
                .iter()
                .filter(|&&(_, w)| up(x, w) && h.get(w).copied().unwrap_or(u32::MAX) != u32::MAX)
                .min_by_key(|&&(p, w)| (h[w], p));
            if let Some(&(p, w)) = best {
                h[x] = h[w] + 1;
                next[x] = Some(p);
            }
        }
        next
    })
}

/// Which corruption [`corrupt`] applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Corruption {
    /// An LFT entry changed: (switch, LID, new port).
    Lft(NodeId, Lid, u8),
    /// An SL2VL entry changed: (switch, in, out, SL, VL).
    Sl2Vl(NodeId, u8, u8, u8, u8),
    /// A path SL changed for every pair toward a LID.
    PathSl(Lid, u16),
    /// A path SL changed for the sources at a switch toward a LID.
    SwitchPathSl(NodeId, Lid, u16),
    /// A link taken down.
    LinkDown(u32),
}

/// Applies one random corruption to `st`.
pub fn corrupt(rng: &mut Rng, st: &mut FabricState) -> Option<Corruption> {
    let switches: Vec<NodeId> = st.switches.keys().copied().collect();
    let x = *switches.get(rng.below(switches.len() as u64) as usize)?;
    let ports = st.fabric.node(x).spec.port_count;
    let max_lid = st.lids.max_lid(&st.fabric);
    match rng.below(10) {
        0..=5 => {
            let lid = Lid(1 + rng.below(u64::from(max_lid.max(1))) as u16);
            let port = match rng.below(8) {
                0 => 255,
                1 => 0,
                _ => rng.below(u64::from(ports) + 2) as u8,
            };
            st.switches.get_mut(&x)?.lft.set(lid, PortNum(port));
            Some(Corruption::Lft(x, lid, port))
        }
        6 | 7 => {
            let s = st.switches.get_mut(&x)?;
            if let Some(all) = s.sl2vl_all.filter(|_| s.sl2vl.is_empty()) {
                // Rows from the map for all pairs, so that one can change.
                for i in 0..=ports {
                    for o in 1..=ports {
                        s.sl2vl.push(weft_fabric::Sl2VlRow {
                            in_port: i,
                            out_port: o,
                            vl: all,
                        });
                    }
                }
            }
            if s.sl2vl.is_empty() {
                for i in 0..=ports {
                    for o in 1..=ports {
                        s.sl2vl.push(weft_fabric::Sl2VlRow {
                            in_port: i,
                            out_port: o,
                            vl: [0; 16],
                        });
                    }
                }
            }
            let i = rng.below(u64::from(ports) + 1) as u8;
            let o = 1 + rng.below(u64::from(ports.max(1))) as u8;
            let sl = rng.below(2) as u8;
            let vl = match rng.below(4) {
                0 => 15,
                _ => rng.below(3) as u8,
            };
            if let Some(r) = s
                .sl2vl
                .iter_mut()
                .find(|r| r.in_port == i && r.out_port == o)
            {
                if let Some(v) = r.vl.get_mut(usize::from(sl)) {
                    *v = vl;
                }
            }
            s.sort_sl2vl();
            Some(Corruption::Sl2Vl(x, i, o, sl, vl))
        }
        8 if !st.path_sl.by_switch.is_empty() && rng.below(2) == 0 => {
            // One source switch's SLs toward one LID.
            let lid = Lid(1 + rng.below(u64::from(max_lid.max(1))) as u16);
            let sls = 1 + rng.below(3) as u16;
            let mut triples: Vec<(NodeId, Lid, weft_fabric::SlSet)> = st
                .path_sl
                .by_switch
                .iter()
                .flat_map(|e| (e.lids.lo.0..=e.lids.hi.0).map(move |l| (e.switch, Lid(l), e.sls)))
                .filter(|&(s, l, _)| (s, l) != (x, lid))
                .collect();
            triples.push((x, lid, weft_fabric::SlSet(sls)));
            st.path_sl.set_by_switch(triples);
            Some(Corruption::SwitchPathSl(x, lid, sls))
        }
        8 => {
            let lid = Lid(1 + rng.below(u64::from(max_lid.max(1))) as u16);
            let sls = 1 + rng.below(3) as u16;
            let mut pairs: Vec<(Lid, weft_fabric::SlSet)> = st
                .path_sl
                .by_dlid
                .iter()
                .flat_map(|e| (e.lids.lo.0..=e.lids.hi.0).map(move |l| (Lid(l), e.sls)))
                .filter(|&(l, _)| l != lid)
                .collect();
            pairs.push((lid, weft_fabric::SlSet(sls)));
            st.path_sl.set_by_dlid(pairs);
            Some(Corruption::PathSl(lid, sls))
        }
        _ => {
            let links = st.fabric.links().len();
            let l = rng.below(links as u64) as u32;
            let mut b = FabricBuilder::from(st.fabric.clone());
            b.set_link_down(weft_fabric::LinkId(l));
            st.fabric = b.finish();
            Some(Corruption::LinkDown(l))
        }
    }
}

/// Which break [`break_forwarding`] applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Break {
    /// An LFT entry changed: (switch, LID, new port; 255 unsets it).
    Lft(NodeId, Lid, u8),
    /// A cable taken down.
    LinkDown(weft_fabric::LinkId),
    /// A node (switch or end node) taken down, with its cables.
    NodeDown(NodeId),
}

/// Breaks `st`'s forwarding in one random place and nothing else (no VL, SL or arbitration
/// change): an LFT entry (seven times in ten) unset, set to port 0, to a port past the
/// switch's last or to any port; a cable down; or a node down (switch or end node).
pub fn break_forwarding(rng: &mut Rng, st: &mut FabricState) -> Option<Break> {
    let max_lid = st.lids.max_lid(&st.fabric);
    match rng.below(10) {
        0..=6 => {
            let switches: Vec<NodeId> = st.switches.keys().copied().collect();
            let x = *switches.get(rng.below(switches.len() as u64) as usize)?;
            let ports = st.fabric.node(x).spec.port_count;
            let lid = Lid(1 + rng.below(u64::from(max_lid.max(1))) as u16);
            let port = match rng.below(6) {
                0 => 255,
                1 => 0,
                2 => ports + 1,
                _ => 1 + rng.below(u64::from(ports.max(1))) as u8,
            };
            st.switches.get_mut(&x)?.lft.set(lid, PortNum(port));
            Some(Break::Lft(x, lid, port))
        }
        7 | 8 => {
            let l = weft_fabric::LinkId(rng.below(st.fabric.links().len() as u64) as u32);
            let mut b = FabricBuilder::from(st.fabric.clone());
            b.set_link_down(l);
            st.fabric = b.finish();
            Some(Break::LinkDown(l))
        }
        _ => {
            let n = NodeId(rng.below(st.fabric.nodes().len() as u64) as u32);
            let mut b = FabricBuilder::from(st.fabric.clone());
            b.set_node_down(n);
            st.fabric = b.finish();
            Some(Break::NodeDown(n))
        }
    }
}

/// Every cabled port's VL arbitration sends every data VL (VLs 0–14 in the low table, weight
/// 1): the arbitration leaves every route as its SL→VL tables make it.
pub fn schedule_all(st: &mut FabricState) {
    let arb = weft_fabric::VlArb {
        high_limit: 0,
        high: Vec::new(),
        low: (0..15)
            .map(|vl| weft_fabric::VlWeight { vl, weight: 1 })
            .collect(),
    };
    for r in cabled_ports(&st.fabric) {
        st.ports.entry(r).or_default().vlarb = Some(arb.clone());
    }
}

/// Every cabled port of `f`.
fn cabled_ports(f: &Fabric) -> Vec<PortRef> {
    f.node_ids()
        .flat_map(|id| {
            f.node(id)
                .ports
                .iter()
                .filter(|p| p.link.is_some())
                .map(move |p| PortRef::new(id, p.num.0))
        })
        .collect()
}

/// What [`arbitrate`] did to one port (or to the state's `max_vls`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArbEdit {
    /// The port's tables no longer name the VL.
    Unlisted(PortRef, u8),
    /// Every entry of the VL has weight 0.
    ZeroWeight(PortRef, u8),
    /// The port's table removed (it sends VL 0 only).
    NoTable(PortRef),
    /// The state's `max_vls` set.
    MaxVls(u8),
}

/// Random VL arbitration over `st`: every cabled port sends every data VL (high or low table,
/// weights 1–4), then in half the cases a few edits that make a port stop sending a low VL
/// (unlisted, weight 0, no table) or set `max_vls` to 1–3.
pub fn arbitrate(rng: &mut Rng, st: &mut FabricState) -> Vec<ArbEdit> {
    let ports = cabled_ports(&st.fabric);
    for &r in &ports {
        let mut arb = weft_fabric::VlArb::default();
        for vl in 0..15u8 {
            let e = weft_fabric::VlWeight {
                vl,
                weight: 1 + rng.below(4) as u8,
            };
            if rng.below(4) == 0 {
                arb.high.push(e);
            } else {
                arb.low.push(e);
            }
        }
        if !arb.high.is_empty() {
            arb.high_limit = rng.below(256) as u8;
        }
        st.ports.entry(r).or_default().vlarb = Some(arb);
    }
    let mut edits = Vec::new();
    if ports.is_empty() || rng.below(2) == 0 {
        return edits;
    }
    for _ in 0..1 + rng.below(3) {
        let r = ports[rng.below(ports.len() as u64) as usize];
        let vl = rng.below(3) as u8;
        let Some(arb) = st.ports.entry(r).or_default().vlarb.as_mut() else {
            continue;
        };
        match rng.below(4) {
            0 => {
                arb.high.retain(|e| e.vl != vl);
                arb.low.retain(|e| e.vl != vl);
                edits.push(ArbEdit::Unlisted(r, vl));
            }
            1 => {
                for e in arb.high.iter_mut().chain(arb.low.iter_mut()) {
                    if e.vl == vl {
                        e.weight = 0;
                    }
                }
                edits.push(ArbEdit::ZeroWeight(r, vl));
            }
            2 => {
                st.ports.entry(r).or_default().vlarb = None;
                edits.push(ArbEdit::NoTable(r));
            }
            _ => {
                let m = 1 + rng.below(3) as u8;
                st.max_vls = Some(m);
                edits.push(ArbEdit::MaxVls(m));
            }
        }
    }
    edits
}

/// A random small fabric ([`small_fabric`]) routed up/down or min-hop (one of the two at
/// random), then broken in `breaks` places ([`break_forwarding`]): the states on which the
/// paths that must agree (the model's walk, the metrics, the planner, the verifier) are held
/// to each other.
pub fn broken_state(rng: &mut Rng, breaks: usize) -> FabricState {
    let f = small_fabric(rng);
    let lids = sequential_lids(&f);
    let mut st = if rng.below(2) == 0 {
        route_updown(&f, lids)
    } else {
        route_minhop(&f, lids)
    };
    for _ in 0..breaks {
        break_forwarding(rng, &mut st);
    }
    st
}
