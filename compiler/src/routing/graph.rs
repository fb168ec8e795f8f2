//! The switch graph engines route on: usable links only, dense switch indices, ports grouped
//! by neighbour, and where each LID leaves the switch fabric.

use super::RouteError;
use rayon::prelude::*;
use std::collections::BTreeMap;
use weft_fabric::{Fabric, Lft, LidAssignment, LinkState, NodeId, NodeKind, LFT_UNSET};

/// Links from one switch to one neighbouring switch (parallel cables form one group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Dense index of the neighbour.
    pub peer: u32,
    /// `(my port, the neighbour's port)`, ascending by my port.
    pub ports: Vec<(u8, u8)>,
    /// Index of the neighbour's group leading back here.
    pub back: u32,
}

/// A switch of the graph.
#[derive(Clone, Debug)]
pub struct Switch {
    /// Node id in the fabric.
    pub id: NodeId,
    /// Neighbour switches, ascending by first port.
    pub groups: Vec<Group>,
    /// Number of physical ports (LFT values must be ≤ this).
    pub ports: u8,
    /// Whether a host (an end node whose role is `host`, not a service node) is cabled to it
    /// through an up link.
    pub has_hosts: bool,
}

/// Where a LID leaves the switch graph: the switch and the port toward it (0 for the
/// switch's own LID).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exit {
    /// Dense switch index.
    pub sw: u32,
    /// Port on that switch.
    pub port: u8,
}

/// Forwarding entries by dense switch index, in one of the two layouts the engines build.
#[derive(Clone, Copy, Debug)]
pub enum Table<'a> {
    /// `columns[lid][switch]`: one column per destination (updn, minhop, layered).
    Columns(&'a [Vec<u8>]),
    /// `rows[switch][lid]`: one row per switch (fat_tree).
    Rows(&'a [Vec<u8>]),
}

/// Usable switches and links of a fabric, plus LID exits.
#[derive(Clone, Debug)]
pub struct Graph {
    /// Switches in fabric order (down switches excluded).
    pub switches: Vec<Switch>,
    /// Dense index per node id (`u32::MAX` for non-switches and down switches).
    pub index: Vec<u32>,
    /// Exit per LID (`None` for unassigned LIDs or unreachable ends).
    pub exits: Vec<Option<Exit>>,
    /// Owner node of each LID.
    pub owners: Vec<Option<NodeId>>,
    /// Highest LID.
    pub max_lid: u16,
}

impl Graph {
    /// Builds the graph of `fabric`'s usable parts.
    pub fn new(fabric: &Fabric, lids: &LidAssignment) -> Graph {
        let mut index = vec![u32::MAX; fabric.nodes().len()];
        let mut switches = Vec::new();
        for id in fabric.node_ids() {
            let n = fabric.node(id);
            if n.kind() == NodeKind::Switch && !n.down {
                index[id.index()] = switches.len() as u32;
                switches.push(Switch {
                    id,
                    groups: Vec::new(),
                    ports: n.spec.port_count,
                    has_hosts: false,
                });
            }
        }
        for l in fabric.links() {
            if l.state != LinkState::Up {
                continue;
            }
            let (ia, ib) = (index[l.a.node.index()], index[l.b.node.index()]);
            match (ia != u32::MAX, ib != u32::MAX) {
                (true, true) => {
                    add(&mut switches[ia as usize], ib, l.a.port.0, l.b.port.0);
                    add(&mut switches[ib as usize], ia, l.b.port.0, l.a.port.0);
                }
                (true, false) if fabric.node(l.b.node).is_host() => {
                    switches[ia as usize].has_hosts = true
                }
                (false, true) if fabric.node(l.a.node).is_host() => {
                    switches[ib as usize].has_hosts = true
                }
                _ => {}
            }
        }
        for s in &mut switches {
            s.groups.sort_by_key(|g| g.ports.first().map_or(0, |p| p.0));
        }
        let backs: Vec<Vec<u32>> = switches
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.groups
                    .iter()
                    .map(|g| {
                        switches[g.peer as usize]
                            .groups
                            .iter()
                            .position(|h| h.peer as usize == i)
                            .map_or(u32::MAX, |j| j as u32)
                    })
                    .collect()
            })
            .collect();
        for (s, b) in switches.iter_mut().zip(backs) {
            for (g, j) in s.groups.iter_mut().zip(b) {
                g.back = j;
            }
        }
        let owners_full = lids.owners(fabric);
        let max_lid = owners_full.len().saturating_sub(1) as u16;
        let mut exits = vec![None; owners_full.len()];
        let mut owners = vec![None; owners_full.len()];
        for (lid, o) in owners_full.iter().enumerate() {
            let Some((node, port)) = *o else { continue };
            owners[lid] = Some(node);
            let n = fabric.node(node);
            if n.down {
                continue;
            }
            if n.is_switch() {
                let sw = index[node.index()];
                if sw != u32::MAX {
                    exits[lid] = Some(Exit { sw, port: 0 });
                }
            } else if let Some((peer, link)) = fabric.peer(weft_fabric::PortRef { node, port }) {
                let sw = index[peer.node.index()];
                if sw != u32::MAX && fabric.link(link).state == LinkState::Up {
                    exits[lid] = Some(Exit {
                        sw,
                        port: peer.port.0,
                    });
                }
            }
        }
        Graph {
            switches,
            index,
            exits,
            owners,
            max_lid,
        }
    }

    /// An empty LFT column (one entry per switch).
    pub fn empty_column(&self) -> Vec<u8> {
        vec![LFT_UNSET; self.switches.len()]
    }

    /// Turns per-destination columns (`columns[lid][switch]`) into per-switch rows.
    pub fn rows(&self, columns: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let lids = columns.len();
        let mut rows = vec![vec![LFT_UNSET; lids]; self.switches.len()];
        // 64 LIDs at a time, so each row is written a cache line at a time.
        for (c, block) in columns.chunks(64).enumerate() {
            for (s, row) in rows.iter_mut().enumerate() {
                let Some(dst) = row.get_mut(c * 64..c * 64 + block.len()) else {
                    continue;
                };
                for (e, col) in dst.iter_mut().zip(block) {
                    *e = col.get(s).copied().unwrap_or(LFT_UNSET);
                }
            }
        }
        rows
    }

    /// Per-switch rows as LFTs.
    pub fn lfts_from_rows(&self, rows: Vec<Vec<u8>>) -> BTreeMap<NodeId, Lft> {
        self.switches
            .iter()
            .zip(rows)
            .map(|(s, ports)| (s.id, Lft { ports }))
            .collect()
    }

    /// Turns per-destination columns (`columns[lid][switch]`) into per-switch LFTs.
    pub fn lfts(&self, columns: &[Vec<u8>]) -> BTreeMap<NodeId, Lft> {
        self.lfts_from_rows(self.rows(columns))
    }

    /// An error naming the first switch without an entry for a LID that has an exit, and how
    /// many such entries there are.
    pub fn check_complete(
        &self,
        fabric: &Fabric,
        engine: &'static str,
        table: Table<'_>,
    ) -> Result<(), RouteError> {
        // `(i, j)` of every unset `lines[i][j]`.
        fn unset((i, line): (usize, &Vec<u8>)) -> impl Iterator<Item = (usize, usize)> + '_ {
            line.iter()
                .enumerate()
                .filter(|&(_, &p)| p == LFT_UNSET)
                .map(move |(j, _)| (i, j))
        }
        match table {
            Table::Columns(columns) => {
                self.disconnected(fabric, engine, columns.iter().enumerate().flat_map(unset))
            }
            Table::Rows(rows) => self.disconnected(
                fabric,
                engine,
                rows.iter()
                    .enumerate()
                    .flat_map(unset)
                    .map(|(s, lid)| (lid, s)),
            ),
        }
    }

    /// The error for unset `(lid, switch)` entries of LIDs that have an exit: how many, and
    /// the lowest LID's first switch.
    fn disconnected(
        &self,
        fabric: &Fabric,
        engine: &'static str,
        unset: impl Iterator<Item = (usize, usize)>,
    ) -> Result<(), RouteError> {
        let mut count = 0usize;
        let mut first: Option<(usize, usize)> = None;
        for (lid, s) in unset {
            if self.exits.get(lid).copied().flatten().is_none() {
                continue;
            }
            count += 1;
            if first.is_none_or(|f| (lid, s) < f) {
                first = Some((lid, s));
            }
        }
        match first {
            None => Ok(()),
            Some((lid, s)) => Err(RouteError::Disconnected {
                engine,
                count,
                from: fabric.node(self.switches[s].id).name().to_owned(),
                to: self.lid_name(fabric, lid),
            }),
        }
    }

    /// The name of the node owning `lid`, or `LID n` when none does.
    pub fn lid_name(&self, fabric: &Fabric, lid: usize) -> String {
        self.owners.get(lid).copied().flatten().map_or_else(
            || format!("LID {lid}"),
            |o| fabric.node(o).name().to_owned(),
        )
    }

    /// Each switch's own LID (the LID whose exit is its port 0), by dense index.
    pub fn switch_lids(&self) -> Vec<Option<usize>> {
        let mut own = vec![None; self.switches.len()];
        for (lid, e) in self.exits.iter().enumerate() {
            if let Some(Exit { sw, port: 0 }) = *e {
                if let Some(slot) = own.get_mut(sw as usize) {
                    slot.get_or_insert(lid);
                }
            }
        }
        own
    }
}

/// A channel dependency cycle found in an engine's own tables: a switch on the cycle and a
/// destination LID whose routes hold one of its channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cycle {
    /// Dense index of a switch whose output channel is on the cycle.
    pub switch: usize,
    /// A destination forwarded through that channel.
    pub lid: usize,
}

/// Switch-to-switch channels: one per `(switch, port)`, numbered switch by switch.
#[derive(Clone, Debug)]
pub struct Channels {
    /// The switch each `(switch, port)` leads to, `u32::MAX` where the port leads to an end
    /// node, nowhere, or is the switch itself.
    pub peers: Vec<Vec<u32>>,
    /// First channel id of each switch; one more entry holding the channel count.
    pub base: Vec<usize>,
}

impl Channels {
    /// Number of channel ids (ports that lead nowhere included).
    pub fn count(&self) -> usize {
        self.base.last().copied().unwrap_or(0)
    }

    /// The switch `(s, port)` leads to, `u32::MAX` when none.
    pub fn peer(&self, s: usize, port: u8) -> u32 {
        self.peers
            .get(s)
            .and_then(|p| p.get(usize::from(port)))
            .copied()
            .unwrap_or(u32::MAX)
    }

    /// The switch and port of channel `c`.
    pub fn owner(&self, c: usize) -> (usize, u8) {
        let s = self.base.partition_point(|&b| b <= c).saturating_sub(1);
        (
            s,
            c.saturating_sub(self.base.get(s).copied().unwrap_or(0)) as u8,
        )
    }

    /// The channel of `(s, port)` when it leads to another switch.
    pub fn id(&self, s: usize, port: u8) -> Option<usize> {
        (self.peer(s, port) != u32::MAX).then(|| self.base[s] + usize::from(port))
    }

    /// The dependencies [`Graph::dependencies`] found, as edges between channel ids: each
    /// channel to every channel of the next switch its traffic continues on.
    pub fn edges<'a>(&'a self, deps: &'a [Vec<[u64; 4]>]) -> impl Iterator<Item = (u32, u32)> + 'a {
        deps.iter().enumerate().flat_map(move |(x, ports)| {
            ports.iter().enumerate().flat_map(move |(p, bits)| {
                let y = self.peer(x, p as u8) as usize;
                (0..256usize)
                    .filter(move |&q| bits[q / 64] >> (q % 64) & 1 == 1)
                    .map(move |q| ((self.base[x] + p) as u32, (self.base[y] + q) as u32))
            })
        })
    }
}

impl Graph {
    /// Hops from the nearest of `sources` to every switch, into `dist` (`u32::MAX` where out
    /// of reach), breadth first.
    pub fn hops_into(&self, sources: &[usize], dist: &mut [u32]) {
        dist.fill(u32::MAX);
        let mut queue = std::collections::VecDeque::new();
        for &s in sources {
            if let Some(d) = dist.get_mut(s) {
                *d = 0;
                queue.push_back(s);
            }
        }
        while let Some(x) = queue.pop_front() {
            for grp in &self.switches[x].groups {
                let p = grp.peer as usize;
                if dist[p] == u32::MAX {
                    dist[p] = dist[x] + 1;
                    queue.push_back(p);
                }
            }
        }
    }

    /// The switch-to-switch channels of this graph.
    pub fn channels(&self) -> Channels {
        let peers: Vec<Vec<u32>> = self
            .switches
            .iter()
            .map(|s| {
                let mut peers = vec![u32::MAX; usize::from(s.ports) + 1];
                for g in &s.groups {
                    for &(mine, _) in &g.ports {
                        if let Some(slot) = peers.get_mut(usize::from(mine)) {
                            *slot = g.peer;
                        }
                    }
                }
                peers
            })
            .collect();
        let mut base = Vec::with_capacity(peers.len() + 1);
        let mut n = 0usize;
        for p in &peers {
            base.push(n);
            n += p.len();
        }
        base.push(n);
        Channels { peers, base }
    }

    /// The channel dependencies of per-switch rows (`rows[switch][lid]`), every switch a
    /// source, on one VL: per switch and port, the set of the next switch's ports that the
    /// channel's traffic continues on (a bit set over port numbers).
    pub fn dependencies(&self, ch: &Channels, rows: &[Vec<u8>]) -> Vec<Vec<[u64; 4]>> {
        let peers = &ch.peers;
        // A switch's LIDs are taken port by port, so the peer's row is read in LID order.
        (0..peers.len())
            .into_par_iter()
            .map(|x| {
                let mut out = vec![[0u64; 4]; peers[x].len()];
                let Some(row) = rows.get(x) else {
                    return out;
                };
                let mut by_port: Vec<Vec<u32>> = vec![Vec::new(); peers[x].len()];
                for (lid, &p) in row.iter().enumerate() {
                    if ch.peer(x, p) != u32::MAX {
                        by_port[usize::from(p)].push(lid as u32);
                    }
                }
                for (p, lids) in by_port.iter().enumerate() {
                    let y = ch.peer(x, p as u8);
                    let Some(next) = rows.get(y as usize) else {
                        continue;
                    };
                    for &lid in lids {
                        let q = next.get(lid as usize).copied().unwrap_or(LFT_UNSET);
                        if ch.peer(y as usize, q) != u32::MAX {
                            out[p][usize::from(q / 64)] |= 1 << (q % 64);
                        }
                    }
                }
                out
            })
            .collect()
    }

    /// The engine's own check of per-switch rows (`rows[switch][lid]`), every switch a source,
    /// on one VL: the switch-to-switch channel dependency graph is acyclic (which also rules
    /// out forwarding loops). `None` when it is; otherwise a channel of a cycle.
    pub fn first_cycle(&self, rows: &[Vec<u8>]) -> Option<Cycle> {
        let ch = self.channels();
        let deps = self.dependencies(&ch, rows);
        let (peers, base, n) = (&ch.peers, &ch.base, ch.count());
        let mut owner = vec![(0usize, 0usize); n];
        for x in 0..peers.len() {
            for p in 0..peers[x].len() {
                owner[base[x] + p] = (x, p);
            }
        }
        // Kahn's algorithm over the channels: a channel's successors are the next switch's
        // ports its traffic continues on.
        let succ = |c: u32| {
            let (x, p) = owner[c as usize];
            let (y, bits) = (peers[x][p] as usize, deps[x][p]);
            let top = if bits == [0; 4] { 0 } else { 256 };
            (0..top)
                .filter(move |&q| bits[q / 64] >> (q % 64) & 1 == 1)
                .map(move |q| (base[y] + q) as u32)
        };
        let kahn = weft_fabric::graph::kahn(n, succ, weft_fabric::graph::Ready::Lifo);
        if kahn.is_acyclic() {
            return None;
        }
        // A channel left with dependencies is on a cycle or downstream of one; take the
        // lowest one that still waits on another, and a destination it carries.
        let c = kahn.waiting.iter().position(|&w| w > 0)?;
        let (x, p) = owner[c];
        let lid = rows
            .get(x)
            .and_then(|r| r.iter().position(|&e| usize::from(e) == p))
            .unwrap_or(0);
        Some(Cycle { switch: x, lid })
    }
}

/// Per-port load counters: how many destinations each switch port already carries.
#[derive(Clone, Debug)]
pub(super) struct Load {
    width: usize,
    counts: Vec<u64>,
}

impl Load {
    /// Zero load on every port of `graph`.
    pub(super) fn new(graph: &Graph) -> Load {
        let width = usize::from(graph.switches.iter().map(|s| s.ports).max().unwrap_or(0)) + 1;
        Load {
            width,
            counts: vec![0; graph.switches.len() * width],
        }
    }

    /// The load of port `port` of switch `sw`.
    pub(super) fn get(&self, sw: usize, port: u8) -> u64 {
        self.counts
            .get(sw * self.width + usize::from(port))
            .copied()
            .unwrap_or(0)
    }

    /// One more destination on port `port` of switch `sw`.
    pub(super) fn add(&mut self, sw: usize, port: u8) {
        self.add_weight(sw, port, 1);
    }

    /// A destination of weight `w` on port `port` of switch `sw`.
    pub(super) fn add_weight(&mut self, sw: usize, port: u8, w: u64) {
        if let Some(c) = self.counts.get_mut(sw * self.width + usize::from(port)) {
            *c += w;
        }
    }

    /// The least-loaded of `ports` of switch `sw` (ties: lowest port), counted.
    pub(super) fn take_least(
        &mut self,
        sw: usize,
        ports: impl IntoIterator<Item = u8>,
    ) -> Option<u8> {
        let best = ports.into_iter().min_by_key(|&p| (self.get(sw, p), p))?;
        self.add(sw, best);
        Some(best)
    }
}

fn add(s: &mut Switch, peer: u32, mine: u8, theirs: u8) {
    match s.groups.iter_mut().find(|g| g.peer == peer) {
        Some(g) => {
            g.ports.push((mine, theirs));
            g.ports.sort_unstable();
        }
        None => s.groups.push(Group {
            peer,
            ports: vec![(mine, theirs)],
            back: u32::MAX,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three switches in a ring: port 1 clockwise, port 2 counter-clockwise; switch `i` owns
    /// LID `i + 1`.
    fn ring() -> Graph {
        let switches = (0..3u32)
            .map(|i| Switch {
                id: NodeId(i),
                groups: vec![
                    Group {
                        peer: (i + 1) % 3,
                        ports: vec![(1, 2)],
                        back: 1,
                    },
                    Group {
                        peer: (i + 2) % 3,
                        ports: vec![(2, 1)],
                        back: 0,
                    },
                ],
                ports: 2,
                has_hosts: false,
            })
            .collect();
        Graph {
            switches,
            index: vec![0, 1, 2],
            exits: vec![
                None,
                Some(Exit { sw: 0, port: 0 }),
                Some(Exit { sw: 1, port: 0 }),
                Some(Exit { sw: 2, port: 0 }),
            ],
            owners: vec![None, Some(NodeId(0)), Some(NodeId(1)), Some(NodeId(2))],
            max_lid: 3,
        }
    }

    #[test]
    fn clockwise_routes_round_a_ring_are_a_cycle() {
        let g = ring();
        // Every switch sends every other switch's LID clockwise.
        let rows: Vec<Vec<u8>> = (0..3usize)
            .map(|s| {
                (0..4usize)
                    .map(|lid| match lid {
                        0 => LFT_UNSET,
                        l if l == s + 1 => 0,
                        _ => 1,
                    })
                    .collect()
            })
            .collect();
        let c = g.first_cycle(&rows).expect("a credit loop");
        assert!(c.switch < 3);
        assert_ne!(rows[c.switch][c.lid], 0);
    }

    #[test]
    fn one_hop_routes_have_no_dependencies() {
        let g = ring();
        let rows: Vec<Vec<u8>> = (0..3usize)
            .map(|s| {
                (0..4usize)
                    .map(|lid| match lid {
                        0 => LFT_UNSET,
                        l if l == s + 1 => 0,
                        l if l == (s + 1) % 3 + 1 => 1,
                        _ => 2,
                    })
                    .collect()
            })
            .collect();
        assert_eq!(g.first_cycle(&rows), None);
    }

    #[test]
    fn a_forwarding_loop_is_a_cycle() {
        let g = ring();
        // Switch 0 sends LID 3 clockwise to switch 1, which sends it back.
        let rows = vec![
            vec![LFT_UNSET, 0, 1, 1],
            vec![LFT_UNSET, 2, 0, 2],
            vec![LFT_UNSET, 2, 1, 0],
        ];
        assert!(g.first_cycle(&rows).is_some());
    }
}
