//! A live fabric as observed over SMPs: what [`read`](crate::read) returns, in named types
//! with the model's newtypes, and the one normalisation from "as the fabric holds it" to "as
//! a state says it". `weft apply` (planning from and proving on the fabric, [`crate::prove`]),
//! `weft audit` ([`crate::audit`]) and the simulator's snapshot ([`crate::sim::Tables`]) all
//! take it from here:
//!
//! - an LFT is the entries up to the switch's LinearFDBTop (the rest is not forwarded by),
//!   trailing unset entries (0xff) dropped ([`lft`]);
//! - an MFT is the masks up to the switch's MulticastFDBTop where it supports that field,
//!   else every block up to its MulticastFDBCap, empty masks dropped ([`mft_up_to`]);
//! - a P_Key table is its slots in order, trailing empty slots (0) dropped ([`PkeyTable`]); as
//!   a state holds it, one holding the default key (0xffff) alone is no table, which a state
//!   reads as that key ([`PkeyTable::to_state`]);
//! - an SL→VL table mapping every SL to VL 0 is none: a fabric without QoS ([`port_sl2vl`]);
//!   a switch whose pairs of ports all map alike has that one map ([`SwitchVls::of`]).
//!
//! Positions in a P_Key table matter to `weft apply`, which writes it block by block, and not
//! to `weft audit`, which proves who may talk to whom: audit folds a table into the
//! partitions it holds ([`PkeyTable::memberships`]), which a state can hold whatever empty
//! slots and repeats the fabric's table has.

use weft_fabric::{Guid, Lft, Lid, Mft, Mlid, PKey, PortNum, Sl2VlRow, WireEnd, LFT_UNSET};

/// The forwarding table a switch forwards by: `entries` (its LFT as read, from LID 0) up to
/// LinearFDBTop `top`, trailing unset entries dropped.
pub fn lft(mut entries: Vec<u8>, top: u16) -> Lft {
    entries.truncate(usize::from(top) + 1);
    while entries.last() == Some(&LFT_UNSET) {
        entries.pop();
    }
    Lft { ports: entries }
}

/// The multicast table a switch forwards by: the entries of `mft` (its blocks as read) up to
/// `top` (its MulticastFDBTop; `None`, a top below 0xC000: none).
pub fn mft_up_to(mft: &Mft, top: Option<Mlid>) -> Mft {
    let mut out = Mft::default();
    if let Some(top) = top {
        for (m, mask) in mft.entries().take_while(|(m, _)| *m <= top) {
            out.set(m, mask);
        }
    }
    out
}

/// A P_Key table as read: its slots in order (a key with membership in bit 15; 0 an empty
/// slot), trailing empty slots dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct PkeyTable(Vec<u16>);

impl PkeyTable {
    /// The table holding `slots`, in order (trailing empty ones dropped).
    pub fn from_slots(slots: impl IntoIterator<Item = u16>) -> PkeyTable {
        let mut keys: Vec<u16> = slots.into_iter().collect();
        while keys.last() == Some(&0) {
            keys.pop();
        }
        PkeyTable(keys)
    }

    /// Its slots, in order, up to the last one not empty.
    pub fn slots(&self) -> &[u16] {
        &self.0
    }

    /// The table as a state holds it: slot by slot; none for one holding the default key
    /// alone.
    pub fn to_state(&self) -> Option<Vec<PKey>> {
        state_form(self.0.clone())
    }

    /// The partitions the table holds, each once, in the order they first appear (a full
    /// membership over a limited one): empty slots, and where a key stands, do not change who
    /// may talk to whom. As a state holds it: none for the default key alone.
    pub fn memberships(&self) -> Option<Vec<PKey>> {
        let mut member: Vec<u16> = Vec::new();
        for k in self.0.iter().copied().filter(|k| k & 0x7fff != 0) {
            match member.iter_mut().find(|m| **m & 0x7fff == k & 0x7fff) {
                Some(m) => *m |= k & 0x8000,
                None => member.push(k),
            }
        }
        state_form(member)
    }
}

/// `keys` as a state's table: none for the default key alone (a state's port or VF without a
/// table holds it).
fn state_form(keys: Vec<u16>) -> Option<Vec<PKey>> {
    (keys != [PKey::DEFAULT.0]).then(|| keys.into_iter().map(PKey).collect())
}

/// An SL→VL table as a state holds it: none when it maps every SL to VL 0.
pub fn port_sl2vl(vl: [u8; 16]) -> Option<[u8; 16]> {
    (vl != [0; 16]).then_some(vl)
}

/// A switch's SL→VL tables as a state holds them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwitchVls {
    /// A table per (input, output) pair, where the pairs differ.
    pub rows: Vec<Sl2VlRow>,
    /// The one table of every pair, where they all agree (and do not map every SL to VL 0).
    pub all: Option<[u8; 16]>,
}

impl SwitchVls {
    /// The tables `rows` (one per pair of ports read) as a state holds them: pairs that all
    /// map every SL to VL 0, neither rows nor a map; pairs that all agree, that one map.
    pub fn of(rows: Vec<Sl2VlRow>) -> SwitchVls {
        match rows.first().map(|r| r.vl) {
            Some(vl) if rows.iter().all(|r| r.vl == vl) => SwitchVls {
                rows: Vec::new(),
                all: port_sl2vl(vl),
            },
            _ => SwitchVls { rows, all: None },
        }
    }
}

/// A VF to read: its hypervisor's port, its index there and its port GUID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct VfId {
    /// The hypervisor's node GUID.
    pub host: Guid,
    /// The hypervisor's port the VF sits behind.
    pub port: PortNum,
    /// The VF's index on that port.
    pub vf: u8,
    /// The VF's port GUID (where the fabric shows the VF as a node, the port holding it).
    pub guid: Guid,
}

/// A VF as read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VfRead {
    /// Its LID (none: the PortInfo holds 0).
    pub lid: Option<Lid>,
    /// Its P_Key table (block 0).
    pub pkeys: PkeyTable,
}

/// An end port's tables as read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndPortRead {
    /// The VL each SL is sent on.
    pub sl2vl: [u8; 16],
    /// Its P_Key table (as many 32-entry blocks as NodeInfo's PartitionCap holds).
    pub pkeys: PkeyTable,
}

/// A VF the fabric shows as a channel adapter behind a vSwitch, folded into its hypervisor's
/// port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ShownVf {
    /// The hypervisor's port (the PF).
    pub host: WireEnd,
    /// The port GUID of the adapter's port.
    pub guid: Guid,
    /// That port's LID.
    pub lid: Option<Lid>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_as_a_state_holds_it() {
        let t = PkeyTable::from_slots([0xffff, 0, 0x8001, 0, 0]);
        assert_eq!(t.slots(), [0xffff, 0, 0x8001]);
        assert_eq!(
            t.to_state(),
            Some(vec![PKey(0xffff), PKey(0), PKey(0x8001)]),
            "positions kept"
        );
        assert_eq!(PkeyTable::from_slots([0xffff, 0]).to_state(), None);
        assert_eq!(PkeyTable::from_slots([0, 0]).to_state(), Some(vec![]));
        // Memberships: each partition once, full over limited, empty slots gone.
        let t = PkeyTable::from_slots([0x0001, 0, 0x8000, 0x7fff, 0x8001, 0xffff]);
        assert_eq!(t.memberships(), Some(vec![PKey(0x8001), PKey(0xffff)]));
        assert_eq!(
            PkeyTable::from_slots([0, 0x7fff, 0xffff]).memberships(),
            None
        );
    }

    #[test]
    fn an_lft_ends_at_its_top_and_its_last_route() {
        assert_eq!(lft(vec![0xff, 1, 2, 0xff, 3], 3).ports, [0xff, 1, 2]);
        assert_eq!(lft(vec![0xff; 64], 63).ports, Vec::<u8>::new());
    }

    #[test]
    fn an_mft_ends_at_its_top() {
        let m = |l| Mlid::new(l).unwrap();
        let mut t = Mft::default();
        t.set(m(0xC000), weft_fabric::PortMask::of([PortNum(1)]));
        t.set(m(0xC020), weft_fabric::PortMask::of([PortNum(2)]));
        assert_eq!(mft_up_to(&t, Some(m(0xC01F))).top(), Some(m(0xC000)));
        assert_eq!(mft_up_to(&t, Some(m(0xC020))), t);
        assert!(mft_up_to(&t, None).is_empty());
    }

    #[test]
    fn sl2vl_maps_as_a_state_holds_them() {
        let row = |i, o, v: u8| Sl2VlRow {
            in_port: i,
            out_port: o,
            vl: [v; 16],
        };
        assert_eq!(
            SwitchVls::of(vec![row(1, 2, 0), row(2, 1, 0)]),
            SwitchVls::default()
        );
        assert_eq!(
            SwitchVls::of(vec![row(1, 2, 1), row(2, 1, 1)]).all,
            Some([1; 16])
        );
        let mixed = vec![row(1, 2, 1), row(2, 1, 0)];
        assert_eq!(
            SwitchVls::of(mixed.clone()),
            SwitchVls {
                rows: mixed,
                all: None
            }
        );
        assert_eq!(port_sl2vl([0; 16]), None);
    }
}
