//! The switch graph engines route on: usable links only, dense switch indices, ports grouped
//! by neighbour, and where each LID leaves the switch fabric.

use super::RouteError;
use std::collections::BTreeMap;
use weft_fabric::{Fabric, Lft, LidAssignment, LinkState, NodeId, NodeKind, LFT_UNSET};

/// Links from one switch to one neighbouring switch (parallel cables form one group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Dense index of the neighbour.
    pub peer: u32,
    /// `(my port, the neighbour's port)`, ascending by my port.
    pub ports: Vec<(u8, u8)>,
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
    /// Whether an end node is cabled to it through an up link.
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
                (true, false) if !fabric.node(l.b.node).is_switch() => {
                    switches[ia as usize].has_hosts = true
                }
                (false, true) if !fabric.node(l.a.node).is_switch() => {
                    switches[ib as usize].has_hosts = true
                }
                _ => {}
            }
        }
        for s in &mut switches {
            s.groups.sort_by_key(|g| g.ports.first().map_or(0, |p| p.0));
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
        for (lid, col) in columns.iter().enumerate() {
            for (s, &p) in col.iter().enumerate() {
                if let Some(row) = rows.get_mut(s) {
                    row[lid] = p;
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
        columns: &[Vec<u8>],
    ) -> Result<(), RouteError> {
        let mut count = 0usize;
        let mut first = None;
        for (lid, col) in columns.iter().enumerate() {
            if self.exits.get(lid).copied().flatten().is_none() {
                continue;
            }
            for (s, &p) in col.iter().enumerate() {
                if p == LFT_UNSET {
                    count += 1;
                    first.get_or_insert((s, lid));
                }
            }
        }
        match first {
            None => Ok(()),
            Some((s, lid)) => Err(RouteError::Disconnected {
                engine,
                count,
                from: fabric.node(self.switches[s].id).name().to_owned(),
                to: self.owners.get(lid).copied().flatten().map_or_else(
                    || format!("LID {lid}"),
                    |o| fabric.node(o).name().to_owned(),
                ),
            }),
        }
    }
}

/// Per-port load counters: how many destinations each switch port already carries.
#[derive(Clone, Debug)]
pub struct Load {
    width: usize,
    counts: Vec<u32>,
}

impl Load {
    /// Zero load on every port of `graph`.
    pub fn new(graph: &Graph) -> Load {
        let width = usize::from(graph.switches.iter().map(|s| s.ports).max().unwrap_or(0)) + 1;
        Load {
            width,
            counts: vec![0; graph.switches.len() * width],
        }
    }

    /// The load of port `port` of switch `sw`.
    pub fn get(&self, sw: usize, port: u8) -> u32 {
        self.counts
            .get(sw * self.width + usize::from(port))
            .copied()
            .unwrap_or(0)
    }

    /// One more destination on port `port` of switch `sw`.
    pub fn add(&mut self, sw: usize, port: u8) {
        if let Some(c) = self.counts.get_mut(sw * self.width + usize::from(port)) {
            *c += 1;
        }
    }

    /// The least-loaded of `ports` of switch `sw` (ties: lowest port), counted.
    pub fn take_least(&mut self, sw: usize, ports: impl IntoIterator<Item = u8>) -> Option<u8> {
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
        }),
    }
}
