//! Path SLs: the SLs a source port uses toward a destination LID (what the SA answers in
//! PathRecords), stored compactly — per destination LID range, per (source switch,
//! destination LID range), and per (source port, destination LID range) — never one entry per
//! pair.
//!
//! Lookup order for a pair: the source port's ranges ([`PathSl::by_source`]), then those of its
//! switch ([`PathSl::by_switch`]: a switch's own port 0 and every end-node port cabled to it),
//! then the destination ranges ([`PathSl::by_dlid`]), then [`PathSl::default`]. Every set is non-empty (checked by
//! [`ValidState`](crate::ValidState)): a flow may use any member, so every member must be safe.

use crate::ids::{Lid, NodeId, Sl};
use crate::model::PortRef;
use serde::{Deserialize, Serialize};

/// A set of service levels, as a 16-bit mask.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct SlSet(pub u16);

impl SlSet {
    /// The set holding only `sl`.
    pub fn one(sl: Sl) -> SlSet {
        SlSet(1 << (sl.0 & 15))
    }

    /// Adds `sl`.
    pub fn insert(&mut self, sl: Sl) {
        self.0 |= 1 << (sl.0 & 15);
    }

    /// Whether `sl` is a member.
    pub fn contains(self, sl: Sl) -> bool {
        sl.0 < 16 && self.0 & (1 << sl.0) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Number of members.
    pub fn len(self) -> u32 {
        self.0.count_ones()
    }

    /// The members, lowest first.
    pub fn iter(self) -> impl Iterator<Item = Sl> {
        (0u8..16).filter(move |s| self.0 & (1 << s) != 0).map(Sl)
    }
}

/// An inclusive range of LIDs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LidRange {
    /// First LID.
    pub lo: Lid,
    /// Last LID (inclusive).
    pub hi: Lid,
}

impl LidRange {
    /// The range holding only `lid`.
    pub fn one(lid: Lid) -> LidRange {
        LidRange { lo: lid, hi: lid }
    }

    /// Whether `lid` is in the range.
    pub fn contains(self, lid: Lid) -> bool {
        self.lo <= lid && lid <= self.hi
    }
}

/// SLs toward a range of destination LIDs, from every source without its own entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DlidSls {
    /// Destination LIDs.
    pub lids: LidRange,
    /// SLs.
    pub sls: SlSet,
}

/// SLs from one source port toward a range of destination LIDs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SourceSls {
    /// The source port (a switch's port 0 for its own traffic).
    pub src: PortRef,
    /// Destination LIDs.
    pub lids: LidRange,
    /// SLs.
    pub sls: SlSet,
}

/// SLs from the sources at one switch (its port 0 and the end-node ports cabled to it)
/// toward a range of destination LIDs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SwitchSls {
    /// The switch.
    pub switch: NodeId,
    /// Destination LIDs.
    pub lids: LidRange,
    /// SLs.
    pub sls: SlSet,
}

/// The SLs each (source port, destination LID) pair uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathSl {
    /// SLs of every pair no range covers.
    pub default: SlSet,
    /// Per destination range, sorted by first LID, not overlapping.
    pub by_dlid: Vec<DlidSls>,
    /// Per source switch and destination range, sorted by (switch, first LID), not
    /// overlapping for one switch.
    pub by_switch: Vec<SwitchSls>,
    /// Per source port and destination range, sorted by (source, first LID), not overlapping
    /// for one source.
    pub by_source: Vec<SourceSls>,
}

impl Default for PathSl {
    fn default() -> PathSl {
        PathSl {
            default: SlSet::one(Sl(0)),
            by_dlid: Vec::new(),
            by_switch: Vec::new(),
            by_source: Vec::new(),
        }
    }
}

impl PathSl {
    /// The SLs `src` uses toward `dlid`, where `via` is the switch `src` belongs to (itself
    /// for a switch's port 0, else the switch its cable leads to; `None` when it has none).
    /// [`FabricState::path_sls`](crate::FabricState::path_sls) finds `via` from the cabling.
    pub fn get(&self, src: PortRef, via: Option<NodeId>, dlid: Lid) -> SlSet {
        if !self.by_source.is_empty() {
            let i = self
                .by_source
                .partition_point(|e| (e.src, e.lids.lo) <= (src, dlid));
            if let Some(e) = i.checked_sub(1).and_then(|i| self.by_source.get(i)) {
                if e.src == src && e.lids.contains(dlid) {
                    return e.sls;
                }
            }
        }
        if let (Some(sw), false) = (via, self.by_switch.is_empty()) {
            if let Some(s) = self.for_switch(sw, dlid) {
                return s;
            }
        }
        self.for_destination(dlid)
    }

    /// The SLs the sources at `switch` use toward `dlid`, when its ranges cover it.
    pub fn for_switch(&self, switch: NodeId, dlid: Lid) -> Option<SlSet> {
        let i = self
            .by_switch
            .partition_point(|e| (e.switch, e.lids.lo) <= (switch, dlid));
        i.checked_sub(1)
            .and_then(|i| self.by_switch.get(i))
            .filter(|e| e.switch == switch && e.lids.contains(dlid))
            .map(|e| e.sls)
    }

    /// The SLs toward `dlid` of a source without its own entries.
    pub fn for_destination(&self, dlid: Lid) -> SlSet {
        let i = self.by_dlid.partition_point(|e| e.lids.lo <= dlid);
        match i.checked_sub(1).and_then(|i| self.by_dlid.get(i)) {
            Some(e) if e.lids.contains(dlid) => e.sls,
            _ => self.default,
        }
    }

    /// Whether the SLs depend on the destination only (no per-source or per-switch entries):
    /// then every source sends the same SLs toward a destination.
    pub fn destination_only(&self) -> bool {
        self.by_source.is_empty() && self.by_switch.is_empty()
    }

    /// Sorts the lists (required by [`PathSl::get`]).
    pub fn sort(&mut self) {
        self.by_dlid.sort();
        self.by_switch.sort();
        self.by_source.sort();
    }

    /// Per-destination SLs from `(dlid, sls)` pairs (any order): consecutive LIDs with equal
    /// sets become one range. A later pair for the same LID adds to its set.
    pub fn set_by_dlid(&mut self, pairs: impl IntoIterator<Item = (Lid, SlSet)>) {
        let mut v: Vec<(Lid, SlSet)> = pairs.into_iter().collect();
        v.sort_by_key(|&(l, _)| l);
        self.by_dlid = compress(v.into_iter().map(|(l, s)| ((), l, s)))
            .into_iter()
            .map(|((), lids, sls)| DlidSls { lids, sls })
            .collect();
    }

    /// Per-switch SLs from `(switch, dlid, sls)` triples (any order): consecutive LIDs of one
    /// switch with equal sets become one range. Pairs for the same (switch, LID) are merged.
    pub fn set_by_switch(&mut self, triples: impl IntoIterator<Item = (NodeId, Lid, SlSet)>) {
        let mut v: Vec<(NodeId, Lid, SlSet)> = triples.into_iter().collect();
        v.sort_by_key(|&(s, l, _)| (s, l));
        self.by_switch = compress(v.into_iter())
            .into_iter()
            .map(|(switch, lids, sls)| SwitchSls { switch, lids, sls })
            .collect();
    }

    /// Per-source SLs from `(src, dlid, sls)` triples (any order): consecutive LIDs of one
    /// source with equal sets become one range. Pairs for the same (source, LID) are merged.
    pub fn set_by_source(&mut self, triples: impl IntoIterator<Item = (PortRef, Lid, SlSet)>) {
        let mut v: Vec<(PortRef, Lid, SlSet)> = triples.into_iter().collect();
        v.sort_by_key(|&(s, l, _)| (s, l));
        self.by_source = compress(v.into_iter())
            .into_iter()
            .map(|(src, lids, sls)| SourceSls { src, lids, sls })
            .collect();
    }
}

/// Merges sorted `(key, lid, sls)` into ranges: same key, consecutive LIDs, same set. Entries
/// for one (key, LID) are united first.
fn compress<K: Copy + PartialEq>(
    sorted: impl Iterator<Item = (K, Lid, SlSet)>,
) -> Vec<(K, LidRange, SlSet)> {
    let mut merged: Vec<(K, Lid, SlSet)> = Vec::new();
    for (k, l, s) in sorted {
        match merged.last_mut() {
            Some(last) if last.0 == k && last.1 == l => last.2 .0 |= s.0,
            _ => merged.push((k, l, s)),
        }
    }
    let mut out: Vec<(K, LidRange, SlSet)> = Vec::new();
    for (k, l, s) in merged {
        match out.last_mut() {
            Some(last)
                if last.0 == k && last.2 == s && u32::from(last.1.hi.0) + 1 == u32::from(l.0) =>
            {
                last.1.hi = l;
            }
            _ => out.push((k, LidRange::one(l), s)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_compress_and_look_up() {
        let a = PortRef::new(NodeId(1), 1);
        let b = PortRef::new(NodeId(2), 0);
        let mut p = PathSl::default();
        p.set_by_source([
            (a, Lid(3), SlSet(0b10)),
            (a, Lid(1), SlSet(0b10)),
            (a, Lid(2), SlSet(0b10)),
            (a, Lid(5), SlSet(0b10)),
            (b, Lid(2), SlSet(0b1)),
            (b, Lid(2), SlSet(0b100)),
        ]);
        assert_eq!(p.by_source.len(), 3, "{:?}", p.by_source);
        p.set_by_dlid([(Lid(7), SlSet(0b1000)), (Lid(8), SlSet(0b1000))]);
        assert_eq!(p.by_dlid.len(), 1);
        assert_eq!(p.get(a, None, Lid(2)), SlSet(0b10));
        assert_eq!(
            p.get(a, None, Lid(4)),
            SlSet(0b1),
            "gap falls back to the default"
        );
        assert_eq!(
            p.get(a, None, Lid(8)),
            SlSet(0b1000),
            "then to the destination ranges"
        );
        assert_eq!(p.get(b, None, Lid(2)), SlSet(0b101));
        assert_eq!(p.get(b, None, Lid(3)), SlSet(0b1));
        assert!(!p.destination_only());
        // A switch's ranges come between the port's own and the destination's.
        let sw = NodeId(9);
        p.set_by_switch([(sw, Lid(4), SlSet(0b100000)), (sw, Lid(8), SlSet(0b1))]);
        assert_eq!(p.by_switch.len(), 2);
        assert_eq!(p.get(a, Some(sw), Lid(4)), SlSet(0b100000));
        assert_eq!(
            p.get(a, Some(sw), Lid(2)),
            SlSet(0b10),
            "the port's own first"
        );
        assert_eq!(p.get(a, Some(sw), Lid(8)), SlSet(0b1));
        assert_eq!(
            p.get(a, Some(sw), Lid(7)),
            SlSet(0b1000),
            "then the destination's"
        );
        assert_eq!(
            p.get(a, Some(NodeId(8)), Lid(4)),
            SlSet(0b1),
            "another switch's do not apply"
        );
        assert_eq!(p.for_switch(sw, Lid(5)), None);
    }
}
