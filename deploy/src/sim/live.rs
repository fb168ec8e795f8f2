//! What happens to a running simulated fabric without an SMP: a cable pulled (both ports go
//! down, each switch end sets its PortStateChange) or a switch rebooted (its LFT empty,
//! LinearFDBTop 0, PortStateChange set) — what `weft watch`'s tests do to the fabric it
//! watches.

use super::{SimFabric, PHYS_POLLING};
use crate::smp::{self, NodeType, PortInfo, SwitchInfo};

impl SimFabric {
    /// The node with GUID `guid`, by index.
    fn index_of(&self, guid: u64) -> Option<usize> {
        self.nodes.iter().position(|n| n.info.node_guid == guid)
    }

    /// Pulls the cable at port `port` of node `guid`: both ends go Down (physical state
    /// Polling) and each switch end sets PortStateChange. `false`: no such node, or no cable
    /// there.
    pub fn unlink(&mut self, guid: u64, port: u8) -> bool {
        let Some(a) = self.index_of(guid) else {
            return false;
        };
        let Some(Some((b, q))) = self
            .nodes
            .get(a)
            .and_then(|n| n.peers.get(usize::from(port)))
            .copied()
        else {
            return false;
        };
        for (n, p) in [(a, port), (b, q)] {
            let Some(node) = self.nodes.get_mut(n) else {
                continue;
            };
            if let Some(slot) = node.peers.get_mut(usize::from(p)) {
                *slot = None;
            }
            if let Some(pi) = node.port_info.get_mut(usize::from(p)) {
                PortInfo {
                    link_state: smp::LinkState::Down,
                    phys_state: PHYS_POLLING,
                    ..PortInfo::decode(pi)
                }
                .encode_held_into(pi);
            }
            if node.info.node_type == NodeType::Switch {
                smp::put_port_state_change(&mut node.switch_info, true);
            }
        }
        true
    }

    /// Swaps the cables at ports `p` and `q` of switch `guid` (a cabling mistake fixed, or
    /// made): every port stays up, each switch end sets PortStateChange. `false`: no such
    /// switch, or a port without a cable.
    pub fn swap_cables(&mut self, guid: u64, p: u8, q: u8) -> bool {
        let Some(a) = self.index_of(guid) else {
            return false;
        };
        let peer = |s: &Self, port: u8| {
            s.nodes
                .get(a)
                .and_then(|n| n.peers.get(usize::from(port)))
                .copied()
                .flatten()
        };
        let (Some((b, bp)), Some((c, cp))) = (peer(self, p), peer(self, q)) else {
            return false;
        };
        for (n, port, to) in [
            (a, p, (c, cp)),
            (a, q, (b, bp)),
            (b, bp, (a, q)),
            (c, cp, (a, p)),
        ] {
            if let Some(slot) = self
                .nodes
                .get_mut(n)
                .and_then(|node| node.peers.get_mut(usize::from(port)))
            {
                *slot = Some(to);
            }
        }
        for n in [a, b, c] {
            if let Some(node) = self
                .nodes
                .get_mut(n)
                .filter(|n| n.info.node_type == NodeType::Switch)
            {
                smp::put_port_state_change(&mut node.switch_info, true);
            }
        }
        true
    }

    /// Reboots switch `guid`: its LFT empty and LinearFDBTop 0, PortStateChange set (its
    /// ports went down and up). `false`: no such switch.
    pub fn reboot_switch(&mut self, guid: u64) -> bool {
        let Some(node) = self
            .index_of(guid)
            .and_then(|i| self.nodes.get_mut(i))
            .filter(|n| n.info.node_type == NodeType::Switch)
        else {
            return false;
        };
        node.lft.clear();
        SwitchInfo {
            linear_fdb_top: 0,
            ..SwitchInfo::decode(&node.switch_info)
        }
        .encode_into(&mut node.switch_info);
        smp::put_port_state_change(&mut node.switch_info, true);
        true
    }
}
