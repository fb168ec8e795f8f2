//! Performance management: the port counters dFtree's loop reads off every live port, through
//! each node's Performance Management Agent (PMA, management class 0x04), LID-routed to QP1.
//!
//! What is read, per port (a switch's ports 1..N by its port 0's LID, a channel adapter's
//! port by its own LID; the port chosen by the data's PortSelect):
//!
//! * once per LID, `ClassPortInfo` (attribute 0x0001): its CapabilityMask says whether the
//!   node answers `PortCountersExtended` (bit 9, IsExtendedWidthSupported, or bit 10,
//!   IsExtendedWidthSupportedNoIETF) and whether it counts PortXmitWait at all (bit 12,
//!   PortCountersXmitWaitSupported, IBA 1.3 on: a PMA without it leaves the field 0);
//! * every sweep, `PortCounters` (0x0012): **PortXmitWait** (32 bits: ticks a port had data
//!   to send and no credit to send it, the congestion dFtree measures), and PortXmitData
//!   (32 bits, in 4-byte words) where the node has no extended counters;
//! * every sweep where the node has them, `PortCountersExtended` (0x001D): **PortXmitData**
//!   in 64 bits (4-byte words).
//!
//! XmitWait is taken from `PortCounters` on every node: `PortCountersExtended` carries a
//! 64-bit XmitWait only where ClassPortInfo's CapabilityMask2 announces the additional
//! extended counters, which few devices (and not ibsim) do. The 32-bit counters saturate at
//! `0xFFFF_FFFF` (the IBA says they stop, not wrap); weft never resets them (other tools read
//! them too), so a saturated counter reads as no change from then on
//! ([`PortCounters::saturated`] says so, and a reader must not judge the port on it).
//!
//! ibsim's PMA answers all three attributes (CapabilityMask `0x1300`: extended counters and
//! XmitWait supported); it counts the MADs it carries in PortXmitData and PortXmitPkts and
//! leaves PortXmitWait at 0 (it simulates no congestion).

use crate::discover::Discovery;
use std::collections::BTreeMap;
use std::fmt;
use weft_fabric::{Guid, NodeKind, PortNum};

/// The data part of a PMA MAD (after the 24-byte MAD header and 40 reserved bytes).
pub const PMA_DATA: usize = 192;

/// A PMA MAD's data.
pub type PmaData = [u8; PMA_DATA];

/// A performance management attribute weft reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PmaAttr {
    /// `ClassPortInfo` (0x0001).
    ClassPortInfo,
    /// `PortCounters` (0x0012).
    PortCounters,
    /// `PortCountersExtended` (0x001D).
    PortCountersExtended,
}

impl PmaAttr {
    /// The attribute ID.
    pub fn id(self) -> u16 {
        match self {
            PmaAttr::ClassPortInfo => 0x0001,
            PmaAttr::PortCounters => 0x0012,
            PmaAttr::PortCountersExtended => 0x001D,
        }
    }
}

impl fmt::Display for PmaAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PmaAttr::ClassPortInfo => "ClassPortInfo",
            PmaAttr::PortCounters => "PortCounters",
            PmaAttr::PortCountersExtended => "PortCountersExtended",
        })
    }
}

/// Why one PMA Get failed, as the transport saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PmaFailure {
    /// No response after every try.
    Timeout {
        /// How many sends.
        tries: u32,
    },
    /// The PMA answered with a non-zero MAD status.
    Status(u16),
    /// The transport failed (the device, the library, an unregistered class).
    Transport(String),
}

/// Something that carries PMA Gets: LID-routed GMPs to QP1.
pub trait Pma {
    /// Sends a Get of `attr` to the PMA at `lid`, with `port_select` in the data's
    /// PortSelect (byte 1; ignored for `ClassPortInfo`), and waits for the answer's data.
    fn pma_get(&mut self, lid: u16, attr: PmaAttr, port_select: u8) -> Result<PmaData, PmaFailure>;
}

/// A port whose counters are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortAt {
    /// Its node.
    pub guid: Guid,
    /// Its number.
    pub port: u8,
    /// The LID its PMA answers at (a switch: port 0's).
    pub lid: u16,
    /// Whether its node is a switch.
    pub switch: bool,
}

/// Why the counters were not read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PmaError {
    /// A live port whose node has no LID on the fabric (the SM has not configured it).
    #[error("node {guid} port {port} has no LID (is the subnet configured?): its counters cannot be read")]
    NoLid {
        /// The node.
        guid: Guid,
        /// The port.
        port: u8,
    },
    /// No answer after every try.
    #[error("node {guid} port {port} (LID {lid}): {attr} Get got no response after {tries} tries")]
    Timeout {
        /// The node.
        guid: Guid,
        /// The port.
        port: u8,
        /// The LID asked.
        lid: u16,
        /// What was asked.
        attr: PmaAttr,
        /// How many sends.
        tries: u32,
    },
    /// The PMA refused.
    #[error(
        "node {guid} port {port} (LID {lid}): {attr} Get rejected with MAD status {status:#06x}"
    )]
    Status {
        /// The node.
        guid: Guid,
        /// The port.
        port: u8,
        /// The LID asked.
        lid: u16,
        /// What was asked.
        attr: PmaAttr,
        /// The MAD status.
        status: u16,
    },
    /// The transport failed.
    #[error("node {guid} port {port} (LID {lid}): {attr} Get failed: {reason}")]
    Transport {
        /// The node.
        guid: Guid,
        /// The port.
        port: u8,
        /// The LID asked.
        lid: u16,
        /// What was asked.
        attr: PmaAttr,
        /// What the transport said.
        reason: String,
    },
}

impl weft_fabric::code::Coded for PmaError {
    /// The error's registered code ([`crate::CODES`]).
    fn code(&self) -> &'static str {
        match self {
            PmaError::NoLid { .. } => "weft::deploy::pma_no_lid",
            PmaError::Timeout { .. } => "weft::deploy::pma_timeout",
            PmaError::Status { .. } => "weft::deploy::pma_status",
            PmaError::Transport { .. } => "weft::deploy::pma_transport",
        }
    }
}

/// One port's counters as read (cumulative since the port's last reset).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortCounters {
    /// Where.
    pub at: PortAt,
    /// PortXmitWait (`PortCounters`, 32 bits).
    pub xmit_wait: u64,
    /// PortXmitData in 4-byte words (`PortCountersExtended`'s 64 bits where the node has
    /// them, else `PortCounters`' 32).
    pub xmit_data_words: u64,
    /// Whether [`PortCounters::xmit_data_words`] came from `PortCountersExtended`.
    pub extended: bool,
    /// Whether the node's PMA counts PortXmitWait (ClassPortInfo's CapabilityMask bit 12,
    /// [`CAP_XMIT_WAIT`]); without it [`PortCounters::xmit_wait`] means nothing.
    pub xmit_wait_supported: bool,
}

impl PortCounters {
    /// Whether a 32-bit counter read here has saturated (stopped at `0xFFFF_FFFF`): its
    /// PortXmitWait (where the node counts it), or its PortXmitData where it came from
    /// `PortCounters`.
    pub fn saturated(&self) -> bool {
        self.xmit_wait_saturated() || self.xmit_data_saturated()
    }

    /// Whether PortXmitWait has saturated (and the node counts it).
    pub fn xmit_wait_saturated(&self) -> bool {
        self.xmit_wait_supported && self.xmit_wait == u64::from(u32::MAX)
    }

    /// Whether PortXmitData, read from `PortCounters`' 32 bits, has saturated.
    pub fn xmit_data_saturated(&self) -> bool {
        !self.extended && self.xmit_data_words == u64::from(u32::MAX)
    }
}

/// Every live port of a discovered fabric, in GUID and port order: both ends of every live
/// link (a switch's ports 1..N, a channel adapter's ports), each with the LID its PMA answers
/// at (a switch: port 0's).
pub fn live_ports(d: &Discovery) -> Result<Vec<PortAt>, PmaError> {
    let mut out = std::collections::BTreeSet::new();
    for (a, b) in &d.view.links {
        for &(guid, port) in [a, b] {
            let switch = d
                .view
                .nodes
                .get(&guid)
                .is_some_and(|n| n.kind == NodeKind::Switch);
            let lid_port = if switch { PortNum(0) } else { port };
            let lid = d
                .view
                .lids
                .get(&(guid, lid_port))
                .map(|l| l.0)
                .filter(|&l| l != 0)
                .ok_or(PmaError::NoLid { guid, port: port.0 })?;
            out.insert(PortAt {
                guid,
                port: port.0,
                lid,
                switch,
            });
        }
    }
    Ok(out.into_iter().collect())
}

/// ClassPortInfo's CapabilityMask bits that say `PortCountersExtended` is answered:
/// IsExtendedWidthSupported (bit 9) and IsExtendedWidthSupportedNoIETF (bit 10).
pub const CAP_EXTENDED: u16 = (1 << 9) | (1 << 10);

/// ClassPortInfo's CapabilityMask bit that says PortXmitWait is counted:
/// PortCountersXmitWaitSupported (bit 12, IBA 1.3 on).
pub const CAP_XMIT_WAIT: u16 = 1 << 12;

/// Reads counters off PMAs, remembering per LID its ClassPortInfo's CapabilityMask.
#[derive(Clone, Debug, Default)]
pub struct CounterReader {
    /// Per LID: its PMA's CapabilityMask.
    caps: BTreeMap<u16, u16>,
    /// PMA Gets sent so far.
    pub gets: usize,
}

fn be32(d: &PmaData, at: usize) -> u64 {
    d.get(at..at + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, |b| u64::from(u32::from_be_bytes(b)))
}

fn be64(d: &PmaData, at: usize) -> u64 {
    d.get(at..at + 8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, u64::from_be_bytes)
}

/// ClassPortInfo's CapabilityMask (data bytes 2–3).
pub fn capability_mask(d: &PmaData) -> u16 {
    d.get(2..4)
        .and_then(|b| <[u8; 2]>::try_from(b).ok())
        .map_or(0, u16::from_be_bytes)
}

/// `PortCounters`' PortXmitData (bytes 24–27) and PortXmitWait (bytes 40–43).
pub fn port_counters(d: &PmaData) -> (u64, u64) {
    (be32(d, 24), be32(d, 40))
}

/// `PortCountersExtended`' PortXmitData (bytes 8–15).
pub fn port_counters_extended(d: &PmaData) -> u64 {
    be64(d, 8)
}

impl CounterReader {
    /// A reader that knows no node yet.
    pub fn new() -> CounterReader {
        CounterReader::default()
    }

    fn get(&mut self, t: &mut impl Pma, at: &PortAt, attr: PmaAttr) -> Result<PmaData, PmaError> {
        self.gets += 1;
        t.pma_get(at.lid, attr, at.port).map_err(|f| match f {
            PmaFailure::Timeout { tries } => PmaError::Timeout {
                guid: at.guid,
                port: at.port,
                lid: at.lid,
                attr,
                tries,
            },
            PmaFailure::Status(status) => PmaError::Status {
                guid: at.guid,
                port: at.port,
                lid: at.lid,
                attr,
                status,
            },
            PmaFailure::Transport(reason) => PmaError::Transport {
                guid: at.guid,
                port: at.port,
                lid: at.lid,
                attr,
                reason,
            },
        })
    }

    /// Reads one port's counters.
    pub fn read_port(&mut self, t: &mut impl Pma, at: &PortAt) -> Result<PortCounters, PmaError> {
        let caps = match self.caps.get(&at.lid) {
            Some(&c) => c,
            None => {
                let info = self.get(t, at, PmaAttr::ClassPortInfo)?;
                let c = capability_mask(&info);
                self.caps.insert(at.lid, c);
                c
            }
        };
        let extended = caps & CAP_EXTENDED != 0;
        let pc = self.get(t, at, PmaAttr::PortCounters)?;
        let (data32, xmit_wait) = port_counters(&pc);
        let xmit_data_words = if extended {
            port_counters_extended(&self.get(t, at, PmaAttr::PortCountersExtended)?)
        } else {
            data32
        };
        Ok(PortCounters {
            at: *at,
            xmit_wait,
            xmit_data_words,
            extended,
            xmit_wait_supported: caps & CAP_XMIT_WAIT != 0,
        })
    }

    /// Reads every port's counters, in `ports`' order: those read, and why each other port
    /// was not (a port that does not answer does not stop the others; its node's
    /// ClassPortInfo is asked again next time).
    pub fn read(
        &mut self,
        t: &mut impl Pma,
        ports: &[PortAt],
    ) -> (Vec<PortCounters>, Vec<PmaError>) {
        let mut read = Vec::with_capacity(ports.len());
        let mut failed = Vec::new();
        for at in ports {
            match self.read_port(t, at) {
                Ok(c) => read.push(c),
                Err(e) => failed.push(e),
            }
        }
        (read, failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_fabric::code::Coded as _;

    #[test]
    fn decodes_the_counters_where_the_iba_puts_them() {
        let mut d = [0u8; PMA_DATA];
        d[2..4].copy_from_slice(&0x1300u16.to_be_bytes());
        assert_eq!(capability_mask(&d), 0x1300);
        assert_ne!(capability_mask(&d) & CAP_EXTENDED, 0);
        d[24..28].copy_from_slice(&864u32.to_be_bytes());
        d[40..44].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(port_counters(&d), (864, u64::from(u32::MAX)));
        d[8..16].copy_from_slice(&(1u64 << 40).to_be_bytes());
        assert_eq!(port_counters_extended(&d), 1 << 40);
        let at = PortAt {
            guid: Guid(1),
            port: 1,
            lid: 2,
            switch: false,
        };
        let c = PortCounters {
            at,
            xmit_wait: u64::from(u32::MAX),
            xmit_data_words: 5,
            extended: true,
            xmit_wait_supported: true,
        };
        assert!(c.saturated() && c.xmit_wait_saturated() && !c.xmit_data_saturated());
        assert!(!PortCounters { xmit_wait: 1, ..c }.saturated());
        // Without XmitWait counted, its value says nothing; 32-bit XmitData saturates too.
        assert!(!PortCounters {
            xmit_wait_supported: false,
            ..c
        }
        .saturated());
        let d32 = PortCounters {
            xmit_wait: 1,
            xmit_data_words: u64::from(u32::MAX),
            extended: false,
            ..c
        };
        assert!(d32.saturated() && d32.xmit_data_saturated());
    }

    /// A PMA answering every Get with the same data: ClassPortInfo's CapabilityMask `caps`,
    /// every counter 7. (ibsim's PMA always sets bit 12; a PMA without it is only had so.)
    struct Fixed {
        caps: u16,
        asked: Vec<PmaAttr>,
    }

    impl Pma for Fixed {
        fn pma_get(&mut self, _: u16, attr: PmaAttr, _: u8) -> Result<PmaData, PmaFailure> {
            self.asked.push(attr);
            let mut d = [0u8; PMA_DATA];
            if attr == PmaAttr::ClassPortInfo {
                d[2..4].copy_from_slice(&self.caps.to_be_bytes());
            } else {
                d[8..16].copy_from_slice(&7u64.to_be_bytes());
                d[24..28].copy_from_slice(&7u32.to_be_bytes());
                d[40..44].copy_from_slice(&7u32.to_be_bytes());
            }
            Ok(d)
        }
    }

    #[test]
    fn the_capability_mask_says_what_is_counted() {
        let at = PortAt {
            guid: Guid(1),
            port: 1,
            lid: 2,
            switch: false,
        };
        for (caps, extended, wait) in [
            (0x1300, true, true),
            (0x0200, true, false),
            (0x1000, false, true),
            (0x0000, false, false),
        ] {
            let mut pma = Fixed {
                caps,
                asked: Vec::new(),
            };
            let mut r = CounterReader::new();
            let c = r.read_port(&mut pma, &at).unwrap();
            assert_eq!(
                (c.extended, c.xmit_wait_supported),
                (extended, wait),
                "{caps:#x}"
            );
            // ClassPortInfo once per LID.
            r.read_port(&mut pma, &at).unwrap();
            assert_eq!(
                pma.asked
                    .iter()
                    .filter(|a| **a == PmaAttr::ClassPortInfo)
                    .count(),
                1
            );
        }
    }

    #[test]
    fn errors_name_the_node_and_port() {
        let e = PmaError::Timeout {
            guid: Guid(0x0002_c900_0000_0100),
            port: 3,
            lid: 7,
            attr: PmaAttr::PortCounters,
            tries: 3,
        };
        assert_eq!(
            e.to_string(),
            "node 0x0002c90000000100 port 3 (LID 7): PortCounters Get got no response after 3 tries"
        );
        assert_eq!(e.code(), "weft::deploy::pma_timeout");
    }
}
