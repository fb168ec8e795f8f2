//! Multicast: the groups the SA knows (MLID, P_Key, SL, member ports and how each joined)
//! and each switch's multicast forwarding table (MFT).
//!
//! Semantics: a packet for multicast LID `m` entering switch `x` on port `i` is copied to
//! every port of `MFT_x[m]` except `i` (port 0 is the switch's own management port). IBA's
//! MulticastForwardingTable attribute carries the table as blocks of 32 MLIDs, each entry a
//! 16-bit mask of one *position* (ports `16·p ..= 16·p + 15`); [`Mft::block`] and
//! [`Mft::set_block`] are that view. The table itself is sparse: its non-empty entries sorted
//! by MLID (the last is MulticastFDBTop), so memory follows what the table holds.
//!
//! Groups and tables are independent on purpose: OpenSM's MFT dump has no groups, `saquery`
//! output has no tables, and a group without receivers has no tree. [`ValidState::new`]
//! checks both (MLIDs in range by construction of [`Mlid`]; masks only over the switch's own
//! ports, within its MulticastFDBCap when known; members that are end ports or a switch's
//! port 0; one group per MLID).
//!
//! [`NodeSpec::multicast_fdb_cap`](crate::NodeSpec::multicast_fdb_cap) is MulticastFDBCap. The
//! compiler builds groups and MFTs, the verifier proves them with the unicast routes,
//! `weft-plan`'s `mft.rs` plans their block writes, and deploy writes and reads them.
//!
//! [`ValidState::new`]: crate::ValidState::new

use crate::ids::{PortNum, Sl};
use crate::model::PortRef;
use std::collections::BTreeMap;
use std::fmt;

/// A multicast LID: `0xC000..=0xFFFE` (0xFFFF is the permissive LID, never a group's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mlid(u16);

impl Mlid {
    /// The first multicast LID (IBA's `IB_LID_MCAST_START`).
    pub const MIN: Mlid = Mlid(0xC000);
    /// The last multicast LID a group may have.
    pub const MAX: Mlid = Mlid(0xFFFE);

    /// `lid` as a multicast LID, or `None` outside `0xC000..=0xFFFE`.
    pub const fn new(lid: u16) -> Option<Mlid> {
        if lid >= Self::MIN.0 && lid <= Self::MAX.0 {
            Some(Mlid(lid))
        } else {
            None
        }
    }

    /// The LID.
    pub const fn get(self) -> u16 {
        self.0
    }

    /// Its offset from 0xC000: the index into an MFT.
    pub const fn index(self) -> usize {
        (self.0 - Self::MIN.0) as usize
    }

    /// The MFT block holding it (32 MLIDs a block, block 0 starting at 0xC000).
    pub const fn block(self) -> u16 {
        (self.0 - Self::MIN.0) / MLIDS_PER_BLOCK
    }
}

impl fmt::Display for Mlid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#06x}", self.0)
    }
}

/// MLIDs per MulticastForwardingTable block.
pub const MLIDS_PER_BLOCK: u16 = 32;
/// Ports per MulticastForwardingTable position (one 16-bit mask).
pub const PORTS_PER_POSITION: u8 = 16;

/// A set of a switch's ports, 0 (management) to 255.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortMask([u64; 4]);

impl PortMask {
    /// No port.
    pub const EMPTY: PortMask = PortMask([0; 4]);

    /// The mask of `ports`.
    pub fn of(ports: impl IntoIterator<Item = PortNum>) -> PortMask {
        let mut m = PortMask::EMPTY;
        for p in ports {
            m.insert(p);
        }
        m
    }

    /// Whether `port` is in the set.
    pub fn contains(self, port: PortNum) -> bool {
        let (w, b) = (usize::from(port.0 / 64), port.0 % 64);
        self.0.get(w).is_some_and(|x| x >> b & 1 == 1)
    }

    /// Adds `port`.
    pub fn insert(&mut self, port: PortNum) {
        let (w, b) = (usize::from(port.0 / 64), port.0 % 64);
        if let Some(x) = self.0.get_mut(w) {
            *x |= 1 << b;
        }
    }

    /// Removes `port`.
    pub fn remove(&mut self, port: PortNum) {
        let (w, b) = (usize::from(port.0 / 64), port.0 % 64);
        if let Some(x) = self.0.get_mut(w) {
            *x &= !(1 << b);
        }
    }

    /// Whether no port is in the set.
    pub fn is_empty(self) -> bool {
        self.0 == [0; 4]
    }

    /// How many ports are in the set.
    pub fn len(self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }

    /// The ports, ascending (one step per port in the set, not per port number).
    pub fn iter(self) -> impl Iterator<Item = PortNum> {
        self.0.into_iter().enumerate().flat_map(|(w, mut bits)| {
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                Some(PortNum((w as u32 * 64 + b) as u8))
            })
        })
    }

    /// The highest port in the set.
    pub fn highest(self) -> Option<PortNum> {
        self.0
            .iter()
            .enumerate()
            .rev()
            .find(|(_, &w)| w != 0)
            .map(|(i, &w)| PortNum((i * 64 + 63 - w.leading_zeros() as usize) as u8))
    }

    /// The 16-bit mask of position `position`: bit `k` is port `16·position + k`.
    pub fn position(self, position: u8) -> u16 {
        let bit = usize::from(position) * 16;
        self.0
            .get(bit / 64)
            .map_or(0, |w| (w >> (bit % 64) & 0xffff) as u16)
    }

    /// Sets position `position` (ports `16·position ..= 16·position + 15`) to `bits`.
    pub fn set_position(&mut self, position: u8, bits: u16) {
        let bit = usize::from(position) * 16;
        if let Some(w) = self.0.get_mut(bit / 64) {
            *w = *w & !(0xffff << (bit % 64)) | u64::from(bits) << (bit % 64);
        }
    }
}

impl fmt::Display for PortMask {
    /// The ports, comma-separated (`0,1,5`), or `-` when empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("-");
        }
        for (i, p) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}", p.0)?;
        }
        Ok(())
    }
}

/// One switch's multicast forwarding table: a port mask per MLID.
///
/// Sparse: the non-empty entries only, sorted by MLID, so two tables with the same entries
/// are equal and a table costs what it holds (a dump or a switch with one entry at 0xFFFE
/// costs one entry, not 16 383).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mft {
    entries: Vec<(Mlid, PortMask)>,
}

impl Mft {
    /// The ports `mlid` is forwarded to (empty: no entry).
    pub fn get(&self, mlid: Mlid) -> PortMask {
        self.entries
            .binary_search_by_key(&mlid, |e| e.0)
            .ok()
            .and_then(|i| self.entries.get(i))
            .map_or(PortMask::EMPTY, |e| e.1)
    }

    /// Sets the entry of `mlid` (an empty mask removes it).
    pub fn set(&mut self, mlid: Mlid, mask: PortMask) {
        match self.entries.binary_search_by_key(&mlid, |e| e.0) {
            Ok(i) if mask.is_empty() => {
                self.entries.remove(i);
            }
            Ok(i) => {
                if let Some(e) = self.entries.get_mut(i) {
                    e.1 = mask;
                }
            }
            Err(_) if mask.is_empty() => {}
            Err(i) => self.entries.insert(i, (mlid, mask)),
        }
    }

    /// MulticastFDBTop: the highest MLID with an entry, `None` when the table is empty (the
    /// switch then reports 0xBFFF).
    pub fn top(&self) -> Option<Mlid> {
        self.entries.last().map(|e| e.0)
    }

    /// Whether no MLID has an entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries (every mask non-empty), by MLID.
    pub fn entries(&self) -> impl Iterator<Item = (Mlid, PortMask)> + '_ {
        self.entries.iter().copied()
    }

    /// The union of every entry's ports (for checking them against the switch's ports).
    pub fn ports_used(&self) -> PortMask {
        let mut all = [0u64; 4];
        for (_, m) in &self.entries {
            for (a, w) in all.iter_mut().zip(m.0) {
                *a |= w;
            }
        }
        PortMask(all)
    }

    /// MulticastForwardingTable block `block` at position `position`, as a switch holds it:
    /// entry `k` is the 16-bit mask of MLID `0xC000 + 32·block + k` over ports
    /// `16·position ..= 16·position + 15`. The attribute modifier is `position << 28 | block`.
    pub fn block(&self, block: u16, position: u8) -> [u16; MLIDS_PER_BLOCK as usize] {
        let mut out = [0u16; MLIDS_PER_BLOCK as usize];
        let first = u32::from(Mlid::MIN.0) + u32::from(block) * u32::from(MLIDS_PER_BLOCK);
        let from = self.entries.partition_point(|e| u32::from(e.0 .0) < first);
        for &(m, mask) in self.entries.get(from..).unwrap_or_default() {
            let Some(e) = u32::from(m.0)
                .checked_sub(first)
                .and_then(|k| out.get_mut(k as usize))
            else {
                break;
            };
            *e = mask.position(position);
        }
        out
    }

    /// Writes block `block` at position `position` (see [`Mft::block`]); entries past 0xFFFE
    /// are ignored.
    pub fn set_block(
        &mut self,
        block: u16,
        position: u8,
        entries: &[u16; MLIDS_PER_BLOCK as usize],
    ) {
        let first = u32::from(block) * u32::from(MLIDS_PER_BLOCK);
        for (k, &bits) in entries.iter().enumerate() {
            let Some(mlid) = u16::try_from(u32::from(Mlid::MIN.0) + first + k as u32)
                .ok()
                .and_then(Mlid::new)
            else {
                continue;
            };
            let mut m = self.get(mlid);
            m.set_position(position, bits);
            self.set(mlid, m);
        }
    }
}

/// How a port joined a group: MCMemberRecord's JoinState bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JoinState(u8);

impl JoinState {
    /// Sends and receives; counts toward the group's existence.
    pub const FULL: JoinState = JoinState(1);
    /// Receives (and sends) without counting toward the group's existence.
    pub const NON_MEMBER: JoinState = JoinState(2);
    /// Sends only; the tree does not deliver to it.
    pub const SEND_ONLY_NON_MEMBER: JoinState = JoinState(4);
    /// Sends only, as a full member (IBA 1.3).
    pub const SEND_ONLY_FULL: JoinState = JoinState(8);

    const NAMES: [(JoinState, &'static str); 4] = [
        (JoinState::FULL, "full"),
        (JoinState::NON_MEMBER, "non_member"),
        (JoinState::SEND_ONLY_NON_MEMBER, "send_only"),
        (JoinState::SEND_ONLY_FULL, "send_only_full"),
    ];

    /// The JoinState field's bits (`1..=15`), or `None` for 0 or more than 4 bits.
    pub const fn from_bits(bits: u8) -> Option<JoinState> {
        if bits >= 1 && bits <= 15 {
            Some(JoinState(bits))
        } else {
            None
        }
    }

    /// The JoinState field's bits.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// Whether the tree delivers to the port: it joined as a full or non-member (OpenSM adds
    /// a port to the MFT for exactly these).
    pub const fn receives(self) -> bool {
        self.0 & (Self::FULL.0 | Self::NON_MEMBER.0) != 0
    }

    /// The union of two join states (a port that joined twice).
    pub const fn union(self, other: JoinState) -> JoinState {
        JoinState(self.0 | other.0)
    }
}

impl fmt::Display for JoinState {
    /// `full`, `non_member`, `send_only`, `send_only_full`, joined by `+` when several.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (s, name) in Self::NAMES {
            if self.0 & s.0 != 0 {
                if !first {
                    f.write_str("+")?;
                }
                first = false;
                f.write_str(name)?;
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for JoinState {
    type Err = String;

    /// Reads what [`JoinState`]'s `Display` writes.
    fn from_str(s: &str) -> Result<JoinState, String> {
        let mut bits = 0u8;
        for word in s.split('+') {
            let (state, _) = Self::NAMES
                .iter()
                .find(|(_, n)| *n == word)
                .ok_or_else(|| {
                    format!(
                        "`{word}` is not a join state (full, non_member, send_only, send_only_full)"
                    )
                })?;
            bits |= state.0;
        }
        JoinState::from_bits(bits).ok_or_else(|| "an empty join state".to_owned())
    }
}

/// A multicast group as the SA records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McGroup {
    /// Its multicast LID.
    pub mlid: Mlid,
    /// Its P_Key, membership bit included (`0xffff`: the default partition's IPoIB group).
    pub pkey: u16,
    /// The SL its packets carry, the one SL→VL maps it by.
    pub sl: Sl,
    /// Member ports (end-node ports, or a switch's port 0) and how each joined.
    pub members: BTreeMap<PortRef, JoinState>,
}

/// The multicast part of a state: groups, sorted by MLID, and each switch's MFT.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Multicast {
    /// Groups, sorted by MLID ([`ValidState::new`](crate::ValidState::new) sorts them).
    pub groups: Vec<McGroup>,
    /// MFTs per switch; a switch without an entry forwards no multicast.
    pub mfts: BTreeMap<crate::NodeId, Mft>,
}

impl Multicast {
    /// Whether the state says nothing about multicast: no group and no MFT entry.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty() && self.mfts.values().all(Mft::is_empty)
    }

    /// The group of `mlid`, if the state has one.
    pub fn group(&self, mlid: Mlid) -> Option<&McGroup> {
        self.groups
            .binary_search_by_key(&mlid, |g| g.mlid)
            .ok()
            .and_then(|i| self.groups.get(i))
    }

    /// Sorts the groups by MLID (required by [`Multicast::group`]) and drops empty tables
    /// (a switch with an empty MFT is one without), so equal content compares equal.
    pub fn normalize(&mut self) {
        self.groups.sort_by_key(|g| g.mlid);
        self.mfts.retain(|_, t| !t.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn mlids_are_the_multicast_range() {
        assert_eq!(Mlid::new(0xBFFF), None);
        assert_eq!(Mlid::new(0xC000), Some(Mlid::MIN));
        assert_eq!(Mlid::new(0xFFFE), Some(Mlid::MAX));
        assert_eq!(Mlid::new(0xFFFF), None);
        assert_eq!(Mlid::MAX.block(), 511);
        assert_eq!(Mlid::MIN.to_string(), "0xc000");
    }

    #[test]
    fn an_mft_is_trimmed_to_its_top() {
        let mut t = Mft::default();
        assert_eq!(t.top(), None);
        let m = |l| Mlid::new(l).unwrap();
        t.set(m(0xC003), PortMask::of([PortNum(0), PortNum(200)]));
        t.set(m(0xC001), PortMask::of([PortNum(1)]));
        assert_eq!(t.top(), Some(m(0xC003)));
        t.set(m(0xC003), PortMask::EMPTY);
        assert_eq!(t.top(), Some(m(0xC001)));
        let mut u = Mft::default();
        u.set(m(0xC001), PortMask::of([PortNum(1)]));
        assert_eq!(t, u);
        u.set(m(0xC001), PortMask::EMPTY);
        assert!(u.is_empty());
        assert_eq!(u, Mft::default());
    }

    #[test]
    fn an_entry_at_the_last_mlid_costs_one_entry() {
        let mut t = Mft::default();
        t.set(Mlid::MAX, PortMask::of([PortNum(17)]));
        assert_eq!(t.entries.len(), 1);
        assert_eq!(t.top(), Some(Mlid::MAX));
        // 0xFFFE is entry 30 of block 511; port 17 is bit 1 of position 1.
        let b = t.block(511, 1);
        assert_eq!(b[30], 0b10);
        assert_eq!(b.iter().filter(|&&e| e != 0).count(), 1);
        assert_eq!(t.block(511, 0), [0; 32]);
        assert_eq!(t.block(510, 1), [0; 32]);
        let mut u = Mft::default();
        u.set_block(511, 1, &b);
        assert_eq!(t, u);
    }

    proptest! {
        /// The ports a mask iterates are the ones it contains, ascending.
        #[test]
        fn a_mask_iterates_its_ports(ports in proptest::collection::btree_set(0u8..=255, 0..40)) {
            let m = PortMask::of(ports.iter().copied().map(PortNum));
            let back: Vec<u8> = m.iter().map(|p| p.0).collect();
            prop_assert_eq!(back, ports.iter().copied().collect::<Vec<_>>());
            prop_assert_eq!(m.len() as usize, ports.len());
        }
    }

    #[test]
    fn join_states_read_what_they_write() {
        let both = JoinState::FULL.union(JoinState::SEND_ONLY_NON_MEMBER);
        assert_eq!(both.to_string(), "full+send_only");
        assert_eq!("full+send_only".parse::<JoinState>(), Ok(both));
        assert!("fullish".parse::<JoinState>().is_err());
        assert!(!JoinState::SEND_ONLY_FULL.receives());
        assert!(JoinState::NON_MEMBER.receives());
        assert_eq!(JoinState::from_bits(0), None);
        assert_eq!(JoinState::from_bits(16), None);
    }

    proptest! {
        /// The block view and the entry view hold the same table.
        #[test]
        fn blocks_read_back_what_was_set(
            entries in proptest::collection::btree_map(0xC000u16..0xC100, proptest::collection::btree_set(0u8..=255, 1..6), 0..20)
        ) {
            let mut t = Mft::default();
            for (&l, ports) in &entries {
                t.set(Mlid::new(l).unwrap(), PortMask::of(ports.iter().copied().map(PortNum)));
            }
            let mut u = Mft::default();
            for block in 0..8u16 {
                for pos in 0..16u8 {
                    u.set_block(block, pos, &t.block(block, pos));
                }
            }
            prop_assert_eq!(&t, &u);
            let back: Vec<(u16, Vec<u8>)> = t.entries().map(|(m, p)| (m.get(), p.iter().map(|p| p.0).collect())).collect();
            let want: Vec<(u16, Vec<u8>)> = entries.iter().map(|(&l, s)| (l, s.iter().copied().collect())).collect();
            prop_assert_eq!(back, want);
            for (m, p) in t.entries() {
                prop_assert_eq!(p.highest(), p.iter().last());
                prop_assert_eq!(p.len() as usize, entries[&m.get()].len());
            }
        }
    }
}
