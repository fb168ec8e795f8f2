//! `updn`: Up*/Down* routing for any topology, deadlock-free on one VL.
//!
//! Switches are ranked by hop distance from the roots (the `roots` of the routing section; else
//! the top level of a tree that records levels; else the most central switch, ties by lowest
//! GUID). A link points *up* toward the lower (rank, GUID). A legal path never goes up after
//! going down, which leaves no cycle in the channel dependency graph. Each switch takes the
//! shortest legal path, balancing equal choices by port load; a switch that can reach the
//! destination going only down always does, so packets in their down phase never turn up.
//!
//! Destinations are routed hosts first, in fabric order (the shift pattern's, so consecutive
//! hosts take consecutive ports), then service nodes, then switches. A destination's switch
//! deals its LIDs over its cables; the switch at the far end is the destination's anchor, and
//! when every switch two hops away or more can go through every neighbour of the destination's
//! switch (a leaf of a leaf–spine fabric) they all go through it, so its traffic comes down one
//! spine; a switch with a narrower bundle to the anchor keeps to it only within its
//! proportional share. Without an anchor, where the next hops' onward cables differ (a spine
//! with 3 cables to a leaf beside one with 4), a destination switch's traffic is dealt over
//! them in proportion to those cables, not half and half. `docs/routing.md` says why.

use super::graph::{Graph, Load, Table};
use super::{Claims, RouteError, Routes, RoutingEngine, RoutingInput};
use std::collections::VecDeque;
use weft_fabric::LidAssignment;

/// The Up*/Down* engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct UpDown;

/// The engine's name in `routing { engine = … }`.
pub(super) const NAME: &str = "updn";

fn bfs(g: &Graph, sources: &[usize]) -> Vec<u32> {
    let mut dist = vec![u32::MAX; g.switches.len()];
    g.hops_into(sources, &mut dist);
    dist
}

/// The switches Up*/Down* ranks from: `roots` given, else the top level of a tree that
/// records levels, else the most central switch (ties by lowest GUID).
pub(super) fn roots(g: &Graph, input: &RoutingInput<'_>) -> Vec<usize> {
    let f = input.fabric;
    let explicit: Vec<usize> = input
        .config
        .roots
        .iter()
        .filter_map(|id| g.index.get(id.index()).copied().filter(|&i| i != u32::MAX))
        .map(|i| i as usize)
        .collect();
    if !explicit.is_empty() {
        return explicit;
    }
    let levels: Vec<Option<u8>> = g.switches.iter().map(|s| f.node(s.id).spec.level).collect();
    if levels.iter().all(Option::is_some) {
        let top = levels.iter().flatten().copied().max().unwrap_or(0);
        return (0..g.switches.len())
            .filter(|&i| levels[i] == Some(top))
            .collect();
    }
    // The most central switch: least eccentricity, then lowest GUID.
    (0..g.switches.len())
        .min_by_key(|&i| {
            let ecc = bfs(g, &[i])
                .into_iter()
                .filter(|&d| d != u32::MAX)
                .max()
                .unwrap_or(0);
            (ecc, f.node(g.switches[i].id).guid())
        })
        .into_iter()
        .collect()
}

impl RoutingEngine for UpDown {
    fn name(&self) -> &'static str {
        NAME
    }

    fn claims(&self, _: &LidAssignment) -> Claims {
        Claims::DEADLOCK_FREE
    }

    fn route(&self, input: &RoutingInput<'_>) -> Result<Routes, RouteError> {
        let f = input.fabric;
        let g = Graph::new(f, input.lids);
        let n = g.switches.len();
        if n == 0 {
            return Err(RouteError::Unsupported {
                engine: NAME,
                reason: "the fabric has no switches".into(),
                node: None,
            });
        }
        let rank = bfs(&g, &roots(&g, input));
        let order: Vec<(u32, u64)> = (0..n)
            .map(|i| (rank[i], f.node(g.switches[i].id).guid().0))
            .collect();
        // is_up(x, y): the link x→y goes toward the roots.
        let is_up = |x: usize, y: usize| order[y] < order[x];
        let mut load = Load::new(&g);
        let nlids = usize::from(g.max_lid) + 1;
        let mut columns = vec![g.empty_column(); nlids];
        let mut down = vec![u32::MAX; n];
        let mut dist = vec![u32::MAX; n];
        let mut queue = VecDeque::new();
        let mut buckets: Vec<Vec<usize>> = Vec::new();
        // count: destinations per port; deal: a destination switch's LIDs dealt over its
        // cables to other switches (the anchor of each).
        let mut count = Load::new(&g);
        let mut deal = Load::new(&g);
        let mut width = vec![0usize; n];
        let mut every = vec![false; n];
        let mut shares = Shares::new();
        // hosts[x]: the host LIDs behind x, the sources it sends from.
        let mut hosts = vec![0u64; n];
        for (exit, owner) in g.exits.iter().zip(&g.owners) {
            if let (Some(e), Some(o)) = (exit, owner) {
                if f.node(*o).is_host() {
                    hosts[e.sw as usize] += 1;
                }
            }
        }
        let mut through = vec![0u64; n];
        let mut far = Vec::with_capacity(n);
        let mut counts = Vec::new();
        // The candidate groups of the switch being routed (one buffer for every switch).
        let mut groups: Vec<(usize, &super::graph::Group)> = Vec::new();
        // The switch the last LID was behind, and whether it was anchored.
        let mut last: Option<(usize, bool)> = None;
        // beside[y]: y is a neighbour of the destination's switch (for `widths`).
        let mut beside = vec![false; n];
        for lid in destinations(&g, f) {
            let Some(Some(exit)) = g.exits.get(lid).copied() else {
                continue;
            };
            let t = exit.sw as usize;
            // Everything up to the anchor depends on t alone: LIDs behind the same switch
            // (a leaf's hosts come one after another) share it.
            let same = last.is_some_and(|(s, _)| s == t);
            if !same {
                legal_distances(
                    &g,
                    t,
                    &is_up,
                    (&mut down, &mut dist),
                    (&mut queue, &mut buckets),
                );
            }
            // The candidate groups of x: its neighbours on a shortest legal path.
            let candidate = |x: usize, grp: &super::graph::Group| {
                let y = grp.peer as usize;
                if down[x] != u32::MAX {
                    !is_up(x, y) && down[y] != u32::MAX && down[y] + 1 == down[x]
                } else {
                    is_up(x, y) && dist[y] != u32::MAX && dist[y] + 1 == dist[x]
                }
            };
            // The anchor: the switch at the far end of the cable of t this LID is dealt to.
            let anchor = g.switches[t]
                .groups
                .iter()
                .flat_map(|grp| grp.ports.iter().map(move |p| (p.0, grp.peer as usize)))
                .min_by_key(|&(p, _)| (deal.get(t, p), p))
                .map(|(p, peer)| {
                    deal.add(t, p);
                    peer
                });
            let anchored = match last {
                Some((s, anchored)) if s == t => anchored,
                _ => {
                    let anchored = widths(
                        &g,
                        (t, &dist),
                        &candidate,
                        (&mut width, &mut every),
                        &mut beside,
                    );
                    // Farthest first, so that each switch knows how many hosts send through it.
                    farthest_first(&dist, &mut far, &mut counts);
                    last = Some((t, anchored));
                    anchored
                }
            };
            let col = &mut columns[lid];
            col[t] = exit.port;
            through.copy_from_slice(&hosts);
            for &x in &far {
                if x == t {
                    continue;
                }
                groups.clear();
                groups.extend(
                    g.switches[x]
                        .groups
                        .iter()
                        .enumerate()
                        .filter(|(_, grp)| candidate(x, grp)),
                );
                let weight = through[x].max(1);
                let Some(port) = choose(
                    (&mut load, &mut count, &mut shares),
                    (&width, x, t, weight),
                    (anchor.filter(|_| anchored && every[x]), anchored),
                    &groups,
                ) else {
                    continue;
                };
                col[x] = port;
                let next = groups
                    .iter()
                    .find(|(_, grp)| grp.ports.iter().any(|p| p.0 == port))
                    .map(|(_, grp)| grp.peer as usize);
                if let Some(y) = next {
                    through[y] += through[x];
                }
            }
        }
        g.check_complete(f, NAME, Table::Columns(&columns))?;
        Ok(Routes {
            lfts: g.lfts(&columns),
            ..Routes::default()
        })
    }
}

/// The port `x` takes toward the destination, among the ports of `groups` (its neighbours on
/// a shortest legal path); `weight` is the hosts' traffic `x` forwards toward it (its own
/// hosts and those of the switches farther away that chose it), added to `load`, while
/// `count` counts destinations.
///
/// The neighbour is the destination's `anchor` when that is a candidate, so that every switch
/// sends a destination through the same switch next to it and its traffic enters by as few
/// cables as possible. When `x`'s bundles to its candidates differ in width (3 cables beside
/// 4), `x` keeps to the anchor while the traffic it has sent over the anchor's bundle, this
/// destination's included, exceeds that bundle's share of all it sent over the candidates'
/// bundles (in proportion to their cables) by at most this destination's weight; otherwise
/// it takes the bundle whose traffic per cable would be least (ties: the anchor, then the
/// lowest port). Without an anchor, [`by_width`] chooses, as before anchors. The port is,
/// for an `anchored` destination (one with anchors at all), the least loaded of the
/// neighbour's (ties: fewest destinations, then lowest port), else the one with fewest
/// destinations (ties: lowest port).
fn choose(
    (load, count, shares): (&mut Load, &mut Load, &mut Shares),
    (width, x, t, weight): (&[usize], usize, usize, u64),
    (anchor, anchored): (Option<usize>, bool),
    groups: &[(usize, &super::graph::Group)],
) -> Option<u8> {
    let share = |grp: &super::graph::Group| -> u128 {
        grp.ports.iter().map(|p| u128::from(load.get(x, p.0))).sum()
    };
    let cables = |grp: &super::graph::Group| grp.ports.len() as u128;
    let lowest = |grp: &super::graph::Group| grp.ports.first().map_or(u8::MAX, |p| p.0);
    let w = u128::from(weight);
    let chosen = anchor
        .and_then(|a| groups.iter().find(|(_, grp)| grp.peer as usize == a))
        .map(|&(_, home)| {
            if groups
                .iter()
                .all(|(_, grp)| grp.ports.len() == home.ports.len())
            {
                return home;
            }
            let total: u128 = groups.iter().map(|(_, grp)| share(grp)).sum::<u128>() + w;
            let all: u128 = groups.iter().map(|(_, grp)| cables(grp)).sum();
            if (share(home) + w) * all <= total * cables(home) + w * all {
                return home;
            }
            groups
                .iter()
                .map(|&(_, grp)| grp)
                .min_by(|a, b| {
                    // (share(a) + w) / cables(a) against (share(b) + w) / cables(b).
                    ((share(a) + w) * cables(b))
                        .cmp(&((share(b) + w) * cables(a)))
                        .then_with(|| (a.peer != home.peer).cmp(&(b.peer != home.peer)))
                        .then_with(|| lowest(a).cmp(&lowest(b)))
                })
                .unwrap_or(home)
        });
    let chosen = match chosen {
        Some(grp) => Some(grp),
        None => by_width(
            if anchored { load } else { count },
            shares,
            width,
            (x, t, weight),
            groups,
        ),
    };
    let key = |&p: &u8| {
        if anchored {
            (load.get(x, p), count.get(x, p), p)
        } else {
            (count.get(x, p), 0, p)
        }
    };
    let best = match chosen {
        Some(grp) => grp.ports.iter().map(|p| p.0).min_by_key(key),
        None => groups
            .iter()
            .flat_map(|(_, grp)| grp.ports.iter().map(|p| p.0))
            .min_by_key(key),
    }?;
    load.add_weight(x, best, weight);
    count.add(x, best);
    Some(best)
}

/// The hosts' traffic toward each destination switch sent through each switch so far by its
/// neighbours dealing over unequal widths: `(switch, destination switch)`.
type Shares = std::collections::BTreeMap<(usize, usize), u64>;

/// `down[x]`: hops from `x` to `t` going only down; `dist[x]`: the shortest legal path from
/// `x` to `t`, going up first (Dial's buckets by distance). `u32::MAX`: none.
fn legal_distances(
    g: &Graph,
    t: usize,
    is_up: &impl Fn(usize, usize) -> bool,
    (down, dist): (&mut [u32], &mut [u32]),
    (queue, buckets): (&mut VecDeque<usize>, &mut Vec<Vec<usize>>),
) {
    // down[x]: hops from x to t going only down.
    down.fill(u32::MAX);
    down[t] = 0;
    queue.push_back(t);
    while let Some(y) = queue.pop_front() {
        for grp in &g.switches[y].groups {
            let x = grp.peer as usize;
            if down[x] == u32::MAX && !is_up(x, y) {
                down[x] = down[y] + 1;
                queue.push_back(x);
            }
        }
    }
    // dist[x]: shortest legal path, going up first (Dial's buckets by distance).
    dist.copy_from_slice(down);
    buckets.clear();
    for (x, &dx) in dist.iter().enumerate() {
        if dx != u32::MAX {
            let d = dx as usize;
            if buckets.len() <= d {
                buckets.resize(d + 1, Vec::new());
            }
            buckets[d].push(x);
        }
    }
    let mut d = 0;
    while d < buckets.len() {
        let layer = std::mem::take(&mut buckets[d]);
        for y in layer {
            if dist[y] as usize != d {
                continue;
            }
            for grp in &g.switches[y].groups {
                let x = grp.peer as usize;
                if is_up(x, y) && dist[x] > dist[y] + 1 {
                    dist[x] = dist[y] + 1;
                    if buckets.len() <= d + 1 {
                        buckets.resize(d + 2, Vec::new());
                    }
                    buckets[d + 1].push(x);
                }
            }
        }
        d += 1;
    }
}

/// Without an anchor among `groups`: none (every port open) when the neighbours' widths
/// (`min(cables to it, its own cables toward t)`) are equal; else the neighbour whose
/// traffic toward `t` so far (`shares`, from every switch), plus `weight`, over its width is
/// least (ties: its least-loaded port, then lowest port), counted in `shares`.
fn by_width<'g>(
    load: &Load,
    shares: &mut Shares,
    width: &[usize],
    (x, t, weight): (usize, usize, u64),
    groups: &[(usize, &'g super::graph::Group)],
) -> Option<&'g super::graph::Group> {
    let through = |grp: &super::graph::Group| {
        let beyond = width.get(grp.peer as usize).copied().unwrap_or(0);
        grp.ports.len().min(beyond).max(1) as u64
    };
    let first = groups.first().map(|(_, grp)| through(grp));
    if groups.iter().all(|(_, grp)| Some(through(grp)) == first) {
        return None;
    }
    let least = |grp: &super::graph::Group| {
        grp.ports
            .iter()
            .map(|p| (load.get(x, p.0), p.0))
            .min()
            .unwrap_or((u64::MAX, u8::MAX))
    };
    let share = |grp: &super::graph::Group| {
        shares.get(&(grp.peer as usize, t)).copied().unwrap_or(0) + weight
    };
    let &(_, grp) = groups.iter().min_by(|(_, ga), (_, gb)| {
        (u128::from(share(ga)) * u128::from(through(gb)))
            .cmp(&(u128::from(share(gb)) * u128::from(through(ga))))
            .then_with(|| least(ga).cmp(&least(gb)))
    })?;
    *shares.entry((grp.peer as usize, t)).or_insert(0) += weight;
    Some(grp)
}

/// `width[x]`: the cables `x` can send toward `t` on (`t`: unbounded); `every[x]`: `x` can
/// go through every switch next to `t` (a leaf beside a spine's). Whether the destination
/// is anchored: `t` sits below a layer that every switch two hops away or more goes through
/// whole (a leaf of a two-level fabric), and one such switch at least.
fn widths(
    g: &Graph,
    (t, dist): (usize, &[u32]),
    candidate: &impl Fn(usize, &super::graph::Group) -> bool,
    (width, every): (&mut [usize], &mut [bool]),
    beside: &mut [bool],
) -> bool {
    let around = &g.switches[t].groups;
    for grp in around {
        if let Some(b) = beside.get_mut(grp.peer as usize) {
            *b = true;
        }
    }
    for (x, sw) in g.switches.iter().enumerate() {
        let reached = dist.get(x).is_some_and(|&d| d != u32::MAX);
        if x == t || !reached {
            width[x] = if x == t { usize::MAX } else { 0 };
            every[x] = false;
            continue;
        }
        let (mut cables, mut count, mut all_beside) = (0, 0, true);
        for grp in sw.groups.iter().filter(|grp| candidate(x, grp)) {
            cables += grp.ports.len();
            count += 1;
            all_beside &= beside.get(grp.peer as usize).copied().unwrap_or(false);
        }
        width[x] = cables;
        // Groups are one per neighbour, so as many candidates as t has neighbours, each one
        // of them, are all of them.
        every[x] = count == around.len() && all_beside;
    }
    for grp in around {
        if let Some(b) = beside.get_mut(grp.peer as usize) {
            *b = false;
        }
    }
    let far_off = |x: &usize| *x != t && dist.get(*x).is_some_and(|&d| d != u32::MAX && d >= 2);
    let mut far = (0..g.switches.len()).filter(far_off).peekable();
    far.peek().is_some() && far.all(|x| every[x])
}

/// The switches that reach the destination (`dist` finite) into `far`, farthest first (ties:
/// lowest index), by a counting sort over the distances (`counts` is scratch).
fn farthest_first(dist: &[u32], far: &mut Vec<usize>, counts: &mut Vec<usize>) {
    let top = dist
        .iter()
        .copied()
        .filter(|&d| d != u32::MAX)
        .max()
        .map_or(0, |d| d as usize + 1);
    counts.clear();
    counts.resize(top + 1, 0);
    for &d in dist.iter().filter(|&&d| d != u32::MAX) {
        // Slot of distance d: after every farther switch.
        counts[top - d as usize] += 1;
    }
    let mut start = 0;
    for c in counts.iter_mut() {
        let here = *c;
        *c = start;
        start += here;
    }
    far.clear();
    far.resize(start, 0);
    for (x, &d) in dist.iter().enumerate() {
        if d != u32::MAX {
            let slot = &mut counts[top - d as usize];
            far[*slot] = x;
            *slot += 1;
        }
    }
}

/// The LIDs in routing order: hosts' in fabric order (the order of the shift pattern, so
/// that consecutive hosts take consecutive ports), then service nodes', then switches', each
/// in fabric order (ties by LID).
fn destinations(g: &Graph, f: &weft_fabric::Fabric) -> Vec<usize> {
    let mut order: Vec<(u8, usize, usize)> = g
        .owners
        .iter()
        .enumerate()
        .filter_map(|(lid, owner)| {
            let node = (*owner)?;
            let n = f.node(node);
            let class = if n.is_host() {
                0
            } else if n.is_switch() {
                2
            } else {
                1
            };
            Some((class, node.index(), lid))
        })
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(_, _, lid)| lid).collect()
}
