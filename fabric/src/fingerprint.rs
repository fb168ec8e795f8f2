//! Fingerprints: a short, stable digest of what a fabric *is* as seen from the wire.
//!
//! Two digests (SHA-256, lowercase hex), so a mismatch can say which part differs:
//!
//! * **topology**: every live node (kind, node GUID, port count, port GUIDs) and every live
//!   link (both ends as node GUID and port), sorted by GUID. Nodes and links that are down are
//!   left out, as a discovery of the running fabric would not see them; names are left out
//!   (they are descriptions, and a node-name map changes them).
//! * **lids**: the LMC and the base LID of every live port that has one, by node GUID and port.
//!
//! Certificates, plans and `weft apply` record the fingerprint of the state they were made for
//! and refuse another one. The digest depends only on the content, never on declaration order.

use crate::model::{Fabric, NodeKind};
use crate::state::FabricState;
use crate::PortRef;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// The fingerprint of a [`FabricState`]: digests of its live topology and of its LIDs, with
/// the counts behind them (so a mismatch can be explained).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// SHA-256 of the live nodes and links, lowercase hex.
    pub topology: String,
    /// SHA-256 of the LMC and the LIDs of live ports, lowercase hex.
    pub lids: String,
    /// Live nodes counted in `topology`.
    pub nodes: u64,
    /// Live links counted in `topology`.
    pub links: u64,
    /// Ports with a LID counted in `lids`.
    pub lid_ports: u64,
}

/// What differs between two fingerprints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FingerprintMismatch {
    /// The live topology differs (nodes, GUIDs, ports or links).
    Topology {
        /// Live nodes and links expected.
        expected: (u64, u64),
        /// Live nodes and links found.
        found: (u64, u64),
    },
    /// The topology matches but the LIDs differ.
    Lids {
        /// Ports with LIDs expected.
        expected: u64,
        /// Ports with LIDs found.
        found: u64,
    },
}

impl fmt::Display for FingerprintMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FingerprintMismatch::Topology { expected, found } => write!(
                f,
                "the topology differs: expected {} live nodes and {} live links, found {} and {}{}",
                expected.0,
                expected.1,
                found.0,
                found.1,
                if expected == found {
                    " (the same counts, but other GUIDs, ports or cabling)"
                } else {
                    ""
                }
            ),
            FingerprintMismatch::Lids { expected, found } => write!(
                f,
                "the LIDs differ: expected {expected} ports with LIDs, found {found}{}",
                if expected == found {
                    " (the same count, but other values or LMC)"
                } else {
                    ""
                }
            ),
        }
    }
}

impl Fingerprint {
    /// The fingerprint of `state`.
    pub fn of(state: &FabricState) -> Fingerprint {
        let f = &state.fabric;
        let (topology, nodes, links) = topology_digest(f);
        let mut lids: Vec<(u64, u8, u16)> = Vec::new();
        for (&n, ports) in &state.lids.base {
            let Some(node) = f.nodes().get(n.index()) else {
                continue;
            };
            if node.down {
                continue;
            }
            for (&p, &lid) in ports {
                let live = node.is_switch() || f.live_peer(PortRef { node: n, port: p }).is_some();
                if live {
                    lids.push((node.guid().0, p.0, lid.0));
                }
            }
        }
        lids.sort_unstable();
        let mut h = Sha256::new();
        h.update(b"weft-lids-v1");
        h.update([state.lids.lmc]);
        for (g, p, l) in &lids {
            h.update(g.to_be_bytes());
            h.update([*p]);
            h.update(l.to_be_bytes());
        }
        // VF LIDs behind live ports (hashed only when there are, so fingerprints of states
        // without VFs stay as they were).
        let mut vfs: Vec<(u64, u16)> = state
            .lids
            .vports
            .iter()
            .filter(|v| f.live_peer(v.host).is_some())
            .filter_map(|v| Some((v.guid.0, v.lid?.0)))
            .collect();
        vfs.sort_unstable();
        if !vfs.is_empty() {
            h.update(b"weft-vf-lids-v1");
            for (g, l) in &vfs {
                h.update(g.to_be_bytes());
                h.update(l.to_be_bytes());
            }
        }
        Fingerprint {
            topology,
            lids: hex(&h.finalize()),
            nodes,
            links,
            lid_ports: (lids.len() + vfs.len()) as u64,
        }
    }

    /// Compares with the fingerprint found on another state: `Ok` when they are the same.
    pub fn compare(&self, found: &Fingerprint) -> Result<(), FingerprintMismatch> {
        if self.topology != found.topology {
            return Err(FingerprintMismatch::Topology {
                expected: (self.nodes, self.links),
                found: (found.nodes, found.links),
            });
        }
        if self.lids != found.lids {
            return Err(FingerprintMismatch::Lids {
                expected: self.lid_ports,
                found: found.lid_ports,
            });
        }
        Ok(())
    }
}

fn topology_digest(f: &Fabric) -> (String, u64, u64) {
    let mut nodes: Vec<(u64, u8, u8, Vec<u64>)> = f
        .nodes()
        .iter()
        .filter(|n| !n.down)
        .map(|n| {
            let kind = match n.kind() {
                NodeKind::Switch => 1,
                NodeKind::Hca => 2,
                NodeKind::Router => 3,
            };
            (
                n.guid().0,
                kind,
                n.spec.port_count,
                n.ports.iter().map(|p| p.guid.0).collect(),
            )
        })
        .collect();
    nodes.sort_unstable();
    let mut links: Vec<((u64, u8), (u64, u8))> = f
        .links()
        .iter()
        .filter(|l| f.live_peer(l.a).is_some())
        .filter_map(|l| {
            let a = (f.nodes().get(l.a.node.index())?.guid().0, l.a.port.0);
            let b = (f.nodes().get(l.b.node.index())?.guid().0, l.b.port.0);
            Some(if a <= b { (a, b) } else { (b, a) })
        })
        .collect();
    links.sort_unstable();
    let mut h = Sha256::new();
    h.update(b"weft-topology-v1");
    h.update((nodes.len() as u64).to_be_bytes());
    for (g, kind, ports, guids) in &nodes {
        h.update(g.to_be_bytes());
        h.update([*kind, *ports]);
        for pg in guids {
            h.update(pg.to_be_bytes());
        }
    }
    h.update((links.len() as u64).to_be_bytes());
    for ((ga, pa), (gb, pb)) in &links {
        h.update(ga.to_be_bytes());
        h.update([*pa]);
        h.update(gb.to_be_bytes());
        h.update([*pb]);
    }
    (hex(&h.finalize()), nodes.len() as u64, links.len() as u64)
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        for nibble in [b >> 4, b & 15] {
            s.push(char::from(
                DIGITS.get(usize::from(nibble)).copied().unwrap_or(b'0'),
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FabricBuilder, Guid, Lid, NodeId, NodeSpec, PortNum};

    fn two_switches(order_swapped: bool) -> FabricState {
        let mut b = FabricBuilder::new("t");
        let specs = [
            NodeSpec::new("a", NodeKind::Switch, Guid(0x10), 4),
            NodeSpec::new("b", NodeKind::Switch, Guid(0x20), 4),
            NodeSpec::new("h", NodeKind::Hca, Guid(0x30), 1),
        ];
        let order: Vec<usize> = if order_swapped {
            vec![2, 1, 0]
        } else {
            vec![0, 1, 2]
        };
        let mut ids = [NodeId(0); 3];
        for i in order {
            ids[i] = b.add_node(specs[i].clone()).unwrap();
        }
        b.add_link(PortRef::new(ids[0], 1), PortRef::new(ids[1], 1))
            .unwrap();
        b.add_link(PortRef::new(ids[2], 1), PortRef::new(ids[0], 2))
            .unwrap();
        let mut st = FabricState::new(b.finish());
        for (i, lid) in [(0, 1u16), (1, 2), (2, 3)] {
            let port = if i == 2 { 1 } else { 0 };
            st.lids
                .base
                .entry(ids[i])
                .or_default()
                .insert(PortNum(port), Lid(lid));
        }
        st
    }

    #[test]
    fn independent_of_declaration_order_and_names() {
        let a = Fingerprint::of(&two_switches(false));
        let b = Fingerprint::of(&two_switches(true));
        assert_eq!(a, b);
        assert_eq!((a.nodes, a.links, a.lid_ports), (3, 2, 3));
    }

    #[test]
    fn a_down_link_or_a_changed_lid_is_a_different_fabric() {
        let base = two_switches(false);
        let fp = Fingerprint::of(&base);
        let mut b = FabricBuilder::from(base.fabric.clone());
        b.set_link_down(crate::LinkId(0));
        let mut down = base.clone();
        down.fabric = b.finish();
        let e = fp.compare(&Fingerprint::of(&down)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the topology differs: expected 3 live nodes and 2 live links, found 3 and 1"
        );
        let mut relid = base.clone();
        relid
            .lids
            .base
            .get_mut(&NodeId(2))
            .unwrap()
            .insert(PortNum(1), Lid(9));
        let e = fp.compare(&Fingerprint::of(&relid)).unwrap_err();
        assert!(matches!(e, FingerprintMismatch::Lids { .. }), "{e}");
        assert!(fp.compare(&Fingerprint::of(&base)).is_ok());
    }
}
