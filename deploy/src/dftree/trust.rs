//! The counter-trust rules: which of a sweep's readings dFtree's controller may judge. Not a
//! port whose node does not count PortXmitWait (its congestion would read 0), nor one with a
//! saturated 32-bit counter (its XmitWait or 32-bit XmitData stopped at `0xFFFFFFFF` and would
//! read as no change: no congestion, a false release; no data, a false contributor).

use crate::pma::{PortAt, PortCounters};
use std::collections::BTreeSet;
use std::fmt;
use weft_fabric::Guid;
use weft_traffic::dftree;

/// What of a sweep's readings the controller is told.
#[derive(Debug, Default, PartialEq)]
pub struct Judged {
    /// The ports it judges.
    pub counters: Vec<dftree::PortCounters>,
    /// Ports read with a saturated 32-bit counter: not judged (told nothing, as if unread).
    pub saturated: Vec<(Guid, u8)>,
    /// Nodes whose PMA does not count PortXmitWait: their ports are not judged.
    pub no_xmit_wait: BTreeSet<Guid>,
}

/// Splits a sweep's readings into what the controller judges and what it must not.
pub fn judged(read: &[PortCounters]) -> Judged {
    let mut j = Judged::default();
    for c in read {
        if !c.xmit_wait_supported {
            j.no_xmit_wait.insert(c.at.guid);
        } else if c.saturated() {
            j.saturated.push((c.at.guid, c.at.port));
        } else {
            j.counters.push(dftree::PortCounters {
                guid: c.at.guid.0,
                port: c.at.port,
                xmit_wait: c.xmit_wait,
                xmit_data_words: c.xmit_data_words,
            });
        }
    }
    j
}

/// A port or node newly found not judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unjudged {
    /// A node whose PMA does not count PortXmitWait (reached at this port).
    NoXmitWait(PortAt),
    /// A port with a saturated counter.
    Saturated {
        /// The port.
        at: PortAt,
        /// Whether PortXmitWait is saturated.
        xmit_wait: bool,
        /// Whether the 32-bit PortXmitData is.
        xmit_data: bool,
    },
}

impl fmt::Display for Unjudged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unjudged::NoXmitWait(at) => write!(
                f,
                "node {:#018x} (LID {}) does not count PortXmitWait (its PMA's ClassPortInfo \
                 CapabilityMask lacks bit 12): its ports' congestion is not judged",
                at.guid.0, at.lid
            ),
            Unjudged::Saturated {
                at,
                xmit_wait,
                xmit_data,
            } => {
                let which = match (xmit_wait, xmit_data) {
                    (true, true) => "PortXmitWait and the 32-bit PortXmitData are",
                    (true, false) => "PortXmitWait is",
                    _ => "the 32-bit PortXmitData is",
                };
                write!(
                    f,
                    "node {:#018x} port {} (LID {}): {which} saturated at 0xFFFFFFFF (weft does \
                     not reset counters): the port is not judged until they are reset",
                    at.guid.0, at.port, at.lid
                )
            }
        }
    }
}

/// The ports and nodes already named as not judged, so each is named once.
#[derive(Debug, Default)]
pub struct Named {
    saturated: BTreeSet<(Guid, u8)>,
    no_xmit_wait: BTreeSet<Guid>,
}

impl Named {
    /// The ports and nodes of `read` not judged and not named before.
    pub fn news(&mut self, read: &[PortCounters]) -> Vec<Unjudged> {
        let mut out = Vec::new();
        for c in read {
            if !c.xmit_wait_supported {
                if self.no_xmit_wait.insert(c.at.guid) {
                    out.push(Unjudged::NoXmitWait(c.at));
                }
            } else if c.saturated() && self.saturated.insert((c.at.guid, c.at.port)) {
                out.push(Unjudged::Saturated {
                    at: c.at,
                    xmit_wait: c.xmit_wait_saturated(),
                    xmit_data: c.xmit_data_saturated(),
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Saturated ports and nodes without PortXmitWait are not judged (the controller is told
    /// nothing of them), and each is named once.
    #[test]
    fn saturated_ports_and_nodes_without_xmit_wait_are_not_judged() {
        let c = |guid: u64, port: u8, wait: u64, data: u64, extended: bool, counted: bool| {
            PortCounters {
                at: PortAt {
                    guid: Guid(guid),
                    port,
                    lid: 9,
                    switch: false,
                },
                xmit_wait: wait,
                xmit_data_words: data,
                extended,
                xmit_wait_supported: counted,
            }
        };
        let max = u64::from(u32::MAX);
        let read = [
            c(1, 1, 5, 6, true, true),
            c(2, 1, max, 6, true, true),
            c(3, 1, 5, max, false, true),
            // 64-bit XmitData at 2^32 - 1 words is not saturated.
            c(4, 1, 5, max, true, true),
            c(5, 1, 0, 6, true, false),
            c(5, 2, max, max, false, false),
        ];
        let j = judged(&read);
        assert_eq!(
            j.counters,
            [(1, 5, 6), (4, 5, max)]
                .iter()
                .map(|&(guid, xmit_wait, xmit_data_words)| dftree::PortCounters {
                    guid,
                    port: 1,
                    xmit_wait,
                    xmit_data_words,
                })
                .collect::<Vec<_>>()
        );
        assert_eq!(j.saturated, [(Guid(2), 1), (Guid(3), 1)]);
        assert_eq!(j.no_xmit_wait, BTreeSet::from([Guid(5)]));
        let mut named = Named::default();
        let lines: Vec<String> = named.news(&read).iter().map(ToString::to_string).collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(
            lines[0].starts_with(
                "node 0x0000000000000002 port 1 (LID 9): PortXmitWait is saturated at 0xFFFFFFFF"
            ),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with(
                "node 0x0000000000000003 port 1 (LID 9): the 32-bit PortXmitData is saturated"
            ),
            "{lines:?}"
        );
        assert!(
            lines[2].starts_with("node 0x0000000000000005 (LID 9) does not count PortXmitWait"),
            "{lines:?}"
        );
        // Once each.
        assert!(named.news(&read).is_empty());
    }
}
