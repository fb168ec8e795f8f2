//! The simulated fabric's Performance Management Agents: [`crate::pma::Pma`] answered from
//! counters a test sets, at the LIDs the fabric's PortInfo holds (a switch at its port 0's,
//! a channel adapter at each port's, LMC included), as ibsim's PMA answers: ClassPortInfo's
//! CapabilityMask `0x1300` unless set otherwise, PortCounters' 32-bit XmitData and XmitWait
//! stopping at `0xFFFF_FFFF`, PortCountersExtended's 64-bit XmitData. A LID no port holds gets
//! no answer (a timeout after one try).

use super::{SimFabric, SimNode};
use crate::pma::{Pma, PmaAttr, PmaData, PmaFailure, PMA_DATA};
use crate::smp::{NodeType, PortInfo};
use std::collections::BTreeMap;

/// ibsim's CapabilityMask (bits 8, 9 and 12): extended counters, XmitWait counted.
const IBSIM_CAPS: u16 = 0x1300;

/// What every simulated PMA counts.
#[derive(Clone, Debug, Default)]
pub struct SimPma {
    /// Per (node GUID, port): cumulative XmitWait ticks and XmitData words.
    counters: BTreeMap<(u64, u8), (u64, u64)>,
    /// Per node GUID: a CapabilityMask other than ibsim's.
    caps: BTreeMap<u64, u16>,
}

impl SimPma {
    /// Adds `wait` XmitWait ticks and `words` XmitData words to a port's counters.
    pub fn add(&mut self, guid: u64, port: u8, wait: u64, words: u64) {
        let c = self.counters.entry((guid, port)).or_default();
        c.0 = c.0.saturating_add(wait);
        c.1 = c.1.saturating_add(words);
    }

    /// Gives a node's PMA this CapabilityMask.
    pub fn set_caps(&mut self, guid: u64, caps: u16) {
        self.caps.insert(guid, caps);
    }
}

/// Whether `lid` is one of the `2^lmc` LIDs from `base`.
fn holds(base: u16, lmc: u8, lid: u16) -> bool {
    base != 0 && lid >= base && u32::from(lid) < u32::from(base) + (1u32 << lmc.min(7))
}

fn put32(d: &mut PmaData, at: usize, v: u64) {
    let v = u32::try_from(v).unwrap_or(u32::MAX);
    if let Some(b) = d.get_mut(at..at + 4) {
        b.copy_from_slice(&v.to_be_bytes());
    }
}

impl SimFabric {
    /// The node whose PMA answers at `lid`, and the port `port_select` names there (a channel
    /// adapter: the port holding the LID).
    fn pma_at(&self, lid: u16, port_select: u8) -> Option<(&SimNode, u8)> {
        self.nodes.iter().find_map(|n| {
            let at = |p: usize| n.port_info.get(p).map(PortInfo::decode);
            if n.info.node_type == NodeType::Switch {
                let i = at(0)?;
                holds(i.lid, i.lmc, lid).then_some((n, port_select))
            } else {
                (1..n.port_info.len()).find_map(|p| {
                    let i = at(p)?;
                    let p = u8::try_from(p).ok()?;
                    holds(i.lid, i.lmc, lid).then_some((n, p))
                })
            }
        })
    }
}

impl Pma for SimFabric {
    fn pma_get(&mut self, lid: u16, attr: PmaAttr, port_select: u8) -> Result<PmaData, PmaFailure> {
        let (node, port) = self
            .pma_at(lid, port_select)
            .ok_or(PmaFailure::Timeout { tries: 1 })?;
        let guid = node.info.node_guid;
        let mut d = [0u8; PMA_DATA];
        let (wait, words) = self
            .pma
            .counters
            .get(&(guid, port))
            .copied()
            .unwrap_or_default();
        match attr {
            PmaAttr::ClassPortInfo => {
                let caps = self.pma.caps.get(&guid).copied().unwrap_or(IBSIM_CAPS);
                if let Some(b) = d.get_mut(2..4) {
                    b.copy_from_slice(&caps.to_be_bytes());
                }
            }
            PmaAttr::PortCounters => {
                put32(&mut d, 24, words);
                put32(&mut d, 40, wait);
            }
            PmaAttr::PortCountersExtended => {
                if let Some(b) = d.get_mut(8..16) {
                    b.copy_from_slice(&words.to_be_bytes());
                }
            }
        }
        Ok(d)
    }
}
