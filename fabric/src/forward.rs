//! One forwarding step, as every part of weft reads a switch's tables: a packet for LID `d`
//! at switch `x` leaves on `o = LFT_x[d]`, over the cable on `o`, to the port at its far
//! end. The step says where it goes or why it goes no further ([`Step`], [`Stop`]):
//!
//! * no entry for `d` (no table, `d` past its top, or [`LFT_UNSET`](crate::LFT_UNSET)):
//!   [`Stop::Unset`];
//! * entry 0: the switch delivers to itself — [`Step::Arrive`] when it owns `d`, else
//!   [`Stop::Misdelivered`] on port 0;
//! * an entry naming a port the switch does not have, a port without a cable, or a cable that
//!   is down (or a node at either end of it): [`Stop::PortMissing`], [`Stop::Unwired`],
//!   [`Stop::Down`] ([`leave`]; [`Fabric::live_peer`] is the same test without the reason);
//! * over a live cable to a switch: [`Step::Forward`]; into the port that owns `d`:
//!   [`Step::Deliver`]; into any other end-node port: [`Stop::Misdelivered`].
//!
//! [`step`] is that rule on a [`FabricState`], [`entry_step`] and [`out_step`] its two halves
//! (an entry already read; leaving a node on a port, which is also an end node's first hop).
//! [`walk`] follows one route; [`Routes`] the routes of every switch toward one destination,
//! memoised ([`memo_walk`], which the hot paths use on their own flat tables).
//!
//! Who uses it: the planner (which destinations break, whose routes change), `apm_disjoint`,
//! and the compiler's tests. The verifier's engine and the metrics walk flat, index-based
//! copies of the tables for speed; their steps are this one (each crate tests its copy
//! against [`step`] on random broken states), and they build their port tables with
//! [`leave`]. The verifier's reference semantics and its certificate checker are
//! deliberately independent of all of these (they check them).

use crate::{Fabric, FabricState, Lid, LinkId, NodeId, PortNum, PortRef};

/// Why a packet goes no further.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stop {
    /// The switch has no entry for the LID: no table, the LID past its top, or unset.
    Unset,
    /// The entry (or a source) names a port the node does not have (port 0 included, when
    /// leaving on a cable).
    PortMissing(PortNum),
    /// The port has no cable.
    Unwired(PortNum),
    /// The port's cable is down, or the node at either end of it is.
    Down(PortNum),
    /// Delivered to a port that does not own the LID: port 0 of a switch that is not the
    /// destination, or the end-node port at the far end of this port.
    Misdelivered(PortNum),
}

/// A live cable a packet leaves a node on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Hop {
    /// The port it leaves on.
    pub out: PortNum,
    /// The cable.
    pub link: LinkId,
    /// The port at the far end, where it enters the next node.
    pub to: PortRef,
}

/// What a switch does with a packet for one destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// The switch owns the destination and its entry is 0: the route arrives here.
    Arrive,
    /// Out over a live cable into the port that owns the destination: the last hop.
    Deliver(Hop),
    /// Out over a live cable to another switch.
    Forward(Hop),
    /// The route ends here without arriving.
    Stop(Stop),
}

/// A destination: a LID and the port that owns it (port 0 for a switch's LID), as
/// [`LidAssignment::owners`](crate::LidAssignment::owners) gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dest {
    /// The destination LID.
    pub lid: Lid,
    /// The port that owns it.
    pub owner: PortRef,
}

impl Dest {
    /// Every destination of `st`, in LID order: each LID with an owner.
    pub fn all(st: &FabricState) -> Vec<Dest> {
        st.lids
            .owners(&st.fabric)
            .iter()
            .enumerate()
            .filter_map(|(lid, o)| {
                let (node, port) = (*o)?;
                Some(Dest {
                    lid: Lid(u16::try_from(lid).ok()?),
                    owner: PortRef { node, port },
                })
            })
            .collect()
    }
}

/// Leaving `from` on its cable: the hop, or why there is none.
#[inline]
pub fn leave(f: &Fabric, from: PortRef) -> Result<Hop, Stop> {
    let port = f
        .nodes()
        .get(from.node.index())
        .and_then(|n| n.port(from.port))
        .ok_or(Stop::PortMissing(from.port))?;
    let link = port.link.ok_or(Stop::Unwired(from.port))?;
    let to = f.live_peer(from).ok_or(Stop::Down(from.port))?;
    Ok(Hop {
        out: from.port,
        link,
        to,
    })
}

/// What switch `switch` of `st` does with a packet for `dest` (see the module docs).
#[inline]
pub fn step(st: &FabricState, switch: NodeId, dest: Dest) -> Step {
    let entry = st.switches.get(&switch).and_then(|s| s.lft.get(dest.lid));
    entry_step(&st.fabric, switch, entry, dest)
}

/// What switch `switch` does with a packet for `dest` given its LFT entry for `dest.lid`
/// (`None`: unset). A switch that is down forwards nothing ([`Stop::Down`] on port 0).
#[inline]
pub fn entry_step(f: &Fabric, switch: NodeId, entry: Option<PortNum>, dest: Dest) -> Step {
    if f.nodes().get(switch.index()).is_none_or(|n| n.down) {
        return Step::Stop(Stop::Down(PortNum(0)));
    }
    match entry {
        None => Step::Stop(Stop::Unset),
        Some(PortNum(0)) if dest.owner == PortRef::new(switch, 0) => Step::Arrive,
        Some(PortNum(0)) => Step::Stop(Stop::Misdelivered(PortNum(0))),
        Some(port) => out_step(f, PortRef { node: switch, port }, dest),
    }
}

/// Leaving `from` (a switch's port, or an end node's: its first hop) toward `dest`.
#[inline]
pub fn out_step(f: &Fabric, from: PortRef, dest: Dest) -> Step {
    match leave(f, from) {
        Err(stop) => Step::Stop(stop),
        Ok(hop)
            if f.nodes()
                .get(hop.to.node.index())
                .is_some_and(|n| n.is_switch()) =>
        {
            Step::Forward(hop)
        }
        Ok(hop) if hop.to == dest.owner => Step::Deliver(hop),
        Ok(hop) => Step::Stop(Stop::Misdelivered(hop.out)),
    }
}

/// How a route from a switch ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fate {
    /// It arrives after `hops` cables (0: the switch is the destination).
    Arrives {
        /// Cables crossed.
        hops: u32,
    },
    /// It stops at switch `at`.
    Stops {
        /// Where.
        at: NodeId,
        /// Why.
        why: Stop,
    },
    /// It comes back to a switch it passed: a forwarding loop.
    Loops,
}

impl Fate {
    /// Whether the route arrives.
    pub fn arrives(self) -> bool {
        matches!(self, Fate::Arrives { .. })
    }

    /// The fate one cable further from the destination.
    fn back(self) -> Fate {
        match self {
            Fate::Arrives { hops } => Fate::Arrives { hops: hops + 1 },
            other => other,
        }
    }
}

/// Follows the route from switch `from` toward `dest` on `st`'s tables, calling `forward`
/// for every cable it crosses to another switch (not for the last one into an end node's
/// port). A route that visits more switches than have tables has come back to one: it loops.
pub fn walk(st: &FabricState, from: NodeId, dest: Dest, mut forward: impl FnMut(Hop)) -> Fate {
    let mut at = from;
    let mut hops = 0u32;
    for _ in 0..=st.switches.len() {
        match step(st, at, dest) {
            Step::Arrive => return Fate::Arrives { hops },
            Step::Deliver(_) => return Fate::Arrives { hops: hops + 1 },
            Step::Forward(h) => {
                forward(h);
                hops += 1;
                at = h.to.node;
            }
            Step::Stop(why) => return Fate::Stops { at, why },
        }
    }
    Fate::Loops
}

/// What a memoised walk knows of an index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mark<T> {
    /// Not walked yet.
    #[default]
    Unknown,
    /// On the walk being followed (meeting it again is a loop).
    OnWalk,
    /// Its answer.
    Known(T),
}

/// Where a memoised walk goes from an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next<T> {
    /// On to this index (one out of range ends the walk as stuck).
    To(usize),
    /// The walk ends here, with this answer for the index it ends at.
    End(T),
}

/// Walks from index `start` by `next`, with what is known per index in `memo` (`path` is
/// scratch), until an index whose answer is known, an end, or an index already on the walk
/// or out of range (the answer then is `stuck`: a loop, or a way out of the indices). Every
/// index on the walk gets its answer: the end's, carried back through `back` once per step
/// (identity for a yes/no answer, one more hop for a distance). Returns `start`'s answer.
///
/// The planner, the transition checker and the metrics resolve every switch's route toward
/// one destination this way, so each switch is walked once per destination.
#[inline]
pub fn memo_walk<T: Copy>(
    memo: &mut [Mark<T>],
    path: &mut Vec<u32>,
    start: usize,
    stuck: T,
    back: impl Fn(T) -> T,
    mut next: impl FnMut(usize) -> Next<T>,
) -> T {
    path.clear();
    let mut k = start;
    let mut answer = loop {
        match memo.get(k) {
            Some(Mark::Known(a)) => break *a,
            Some(Mark::Unknown) => {}
            Some(Mark::OnWalk) | None => break stuck,
        }
        if let Some(m) = memo.get_mut(k) {
            *m = Mark::OnWalk;
        }
        match next(k) {
            Next::To(n) => {
                path.push(k as u32);
                k = n;
            }
            Next::End(a) => {
                if let Some(m) = memo.get_mut(k) {
                    *m = Mark::Known(a);
                }
                break a;
            }
        }
    };
    while let Some(x) = path.pop() {
        answer = back(answer);
        if let Some(m) = memo.get_mut(x as usize) {
            *m = Mark::Known(answer);
        }
    }
    answer
}

/// The routes of every switch of a state toward one destination at a time, on the model's
/// step, memoised per destination (each switch walked once). For code off the hot paths: the
/// planner's broken destinations, tests.
pub struct Routes<'a> {
    st: &'a FabricState,
    /// Per node: its index among the switches (`u32::MAX` for an end node).
    index: Vec<u32>,
    switches: Vec<NodeId>,
    memo: Vec<Mark<Fate>>,
    path: Vec<u32>,
    dest: Option<Dest>,
}

impl<'a> Routes<'a> {
    /// Routes on `st`'s tables.
    pub fn new(st: &'a FabricState) -> Routes<'a> {
        let f = &st.fabric;
        let mut index = vec![u32::MAX; f.nodes().len()];
        let mut switches = Vec::new();
        for (id, n) in f.node_ids().zip(f.nodes()) {
            if n.is_switch() {
                if let Some(slot) = index.get_mut(id.index()) {
                    *slot = switches.len() as u32;
                }
                switches.push(id);
            }
        }
        Routes {
            st,
            index,
            memo: vec![Mark::Unknown; switches.len()],
            switches,
            path: Vec::new(),
            dest: None,
        }
    }

    /// How the route from switch `from` toward `dest` ends (an end node's id: it stops there,
    /// [`Stop::Unset`]).
    pub fn fate(&mut self, from: NodeId, dest: Dest) -> Fate {
        if self.dest != Some(dest) {
            self.memo.fill(Mark::Unknown);
            self.dest = Some(dest);
        }
        let Some(&k) = self.index.get(from.index()).filter(|&&k| k != u32::MAX) else {
            return Fate::Stops {
                at: from,
                why: Stop::Unset,
            };
        };
        let (st, index, switches) = (self.st, &self.index, &self.switches);
        memo_walk(
            &mut self.memo,
            &mut self.path,
            k as usize,
            Fate::Loops,
            Fate::back,
            |k| {
                let x = switches.get(k).copied().unwrap_or(NodeId(u32::MAX));
                match step(st, x, dest) {
                    Step::Arrive => Next::End(Fate::Arrives { hops: 0 }),
                    Step::Deliver(_) => Next::End(Fate::Arrives { hops: 1 }),
                    Step::Forward(h) => Next::To(
                        index
                            .get(h.to.node.index())
                            .map_or(usize::MAX, |&i| i as usize),
                    ),
                    Step::Stop(why) => Next::End(Fate::Stops { at: x, why }),
                }
            },
        )
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::{FabricBuilder, Guid, Lft, NodeKind, NodeSpec, SwitchState};

    /// Switches `A` (ports 1–3) and `B` (ports 1–2), `A.1 – B.1`, host `H` on `B.2`, host `G`
    /// on `A.2`; LIDs: H 1, G 2, A 3, B 4. `a` and `b` are A's and B's entries for LIDs 1..=4.
    fn two(a: [u8; 4], b: [u8; 4], down: bool) -> FabricState {
        let mut fb = FabricBuilder::new("two");
        let sw = |fb: &mut FabricBuilder, n: &str, g: u64, p: u8| {
            fb.add_node(NodeSpec::new(n, NodeKind::Switch, Guid(g), p))
                .unwrap()
        };
        let a_id = sw(&mut fb, "A", 0x10, 3);
        let b_id = sw(&mut fb, "B", 0x20, 2);
        let h = fb
            .add_node(NodeSpec::new("H", NodeKind::Hca, Guid(0x100), 1))
            .unwrap();
        let g = fb
            .add_node(NodeSpec::new("G", NodeKind::Hca, Guid(0x200), 1))
            .unwrap();
        let ab = fb
            .add_link(PortRef::new(a_id, 1), PortRef::new(b_id, 1))
            .unwrap();
        fb.add_link(PortRef::new(h, 1), PortRef::new(b_id, 2))
            .unwrap();
        fb.add_link(PortRef::new(g, 1), PortRef::new(a_id, 2))
            .unwrap();
        if down {
            fb.set_link_down(ab);
        }
        let mut st = FabricState::new(fb.finish());
        for (n, p, l) in [(h, 1, 1), (g, 1, 2), (a_id, 0, 3), (b_id, 0, 4)] {
            st.lids
                .base
                .entry(n)
                .or_default()
                .insert(PortNum(p), Lid(l));
        }
        for (x, t) in [(a_id, a), (b_id, b)] {
            let mut lft = Lft::default();
            for (lid, &p) in (1u16..).zip(&t) {
                lft.set(Lid(lid), PortNum(p));
            }
            st.switches.insert(
                x,
                SwitchState {
                    lft,
                    sl2vl: Vec::new(),
                    sl2vl_all: None,
                },
            );
        }
        st
    }

    fn dest(st: &FabricState, lid: u16) -> Dest {
        Dest::all(st)
            .into_iter()
            .find(|d| d.lid == Lid(lid))
            .unwrap()
    }

    #[test]
    fn every_outcome_of_one_step() {
        let (a, b) = (NodeId(0), NodeId(1));
        // A: H via B, G on port 2, itself, B via port 1. B: H on 2, G unset, A via 1, itself.
        let st = two([1, 2, 0, 1], [2, 255, 1, 0], false);
        let hop = |out: u8, link: u32, to: PortRef| Hop {
            out: PortNum(out),
            link: LinkId(link),
            to,
        };
        assert_eq!(
            step(&st, a, dest(&st, 1)),
            Step::Forward(hop(1, 0, PortRef::new(b, 1)))
        );
        assert_eq!(
            step(&st, b, dest(&st, 1)),
            Step::Deliver(hop(2, 1, PortRef::new(NodeId(2), 1)))
        );
        assert_eq!(step(&st, a, dest(&st, 3)), Step::Arrive);
        assert_eq!(step(&st, b, dest(&st, 2)), Step::Stop(Stop::Unset));
        // Entry 0 at a switch that is not the destination; an entry at a host's port that is
        // not the destination's.
        assert_eq!(
            entry_step(&st.fabric, b, Some(PortNum(0)), dest(&st, 3)),
            Step::Stop(Stop::Misdelivered(PortNum(0)))
        );
        assert_eq!(
            entry_step(&st.fabric, b, Some(PortNum(2)), dest(&st, 2)),
            Step::Stop(Stop::Misdelivered(PortNum(2)))
        );
        assert_eq!(
            entry_step(&st.fabric, a, Some(PortNum(3)), dest(&st, 4)),
            Step::Stop(Stop::Unwired(PortNum(3)))
        );
        assert_eq!(
            entry_step(&st.fabric, a, Some(PortNum(9)), dest(&st, 4)),
            Step::Stop(Stop::PortMissing(PortNum(9)))
        );
        let down = two([1, 2, 0, 1], [2, 255, 1, 0], true);
        assert_eq!(
            step(&down, a, dest(&down, 1)),
            Step::Stop(Stop::Down(PortNum(1)))
        );
        assert_eq!(down.fabric.live_peer(PortRef::new(a, 1)), None);
        assert_eq!(
            st.fabric.live_peer(PortRef::new(a, 1)),
            Some(PortRef::new(b, 1))
        );
    }

    #[test]
    fn walks_and_memoised_routes_agree() {
        let (a, b) = (NodeId(0), NodeId(1));
        // A sends everything but its own LID to B; B delivers H, sends G's and A's LIDs back
        // to A: G's LID loops between them.
        let st = two([1, 1, 0, 1], [2, 1, 1, 0], false);
        let mut routes = Routes::new(&st);
        let mut crossed = Vec::new();
        let cases = [
            (a, 1, Fate::Arrives { hops: 2 }),
            (b, 1, Fate::Arrives { hops: 1 }),
            (b, 3, Fate::Arrives { hops: 1 }),
            (a, 3, Fate::Arrives { hops: 0 }),
            (a, 2, Fate::Loops),
            (b, 2, Fate::Loops),
        ];
        for (from, lid, fate) in cases {
            let d = dest(&st, lid);
            assert_eq!(routes.fate(from, d), fate, "{from:?} → {lid}");
            assert_eq!(walk(&st, from, d, |h| crossed.push(h.link)), fate);
        }
        assert_eq!(
            routes.fate(NodeId(2), dest(&st, 1)),
            Fate::Stops {
                at: NodeId(2),
                why: Stop::Unset
            }
        );
        let st = two([1, 2, 0, 1], [2, 255, 1, 0], false);
        let mut routes = Routes::new(&st);
        assert_eq!(routes.fate(a, dest(&st, 2)), Fate::Arrives { hops: 1 });
        assert_eq!(
            routes.fate(b, dest(&st, 2)),
            Fate::Stops {
                at: b,
                why: Stop::Unset
            }
        );
    }

    #[test]
    fn memo_walk_carries_answers_back() {
        // 0 → 1 → 2 (ends with 10); 3 → 1 (known by then); 4 → 5 → 4 (a loop); 6 → out.
        let mut memo = vec![Mark::Unknown; 7];
        let mut path = Vec::new();
        let next = |k: usize| match k {
            0 => Next::To(1),
            1 => Next::To(2),
            2 => Next::End(10u32),
            3 => Next::To(1),
            4 => Next::To(5),
            5 => Next::To(4),
            _ => Next::To(99),
        };
        let back = |v: u32| if v == u32::MAX { v } else { v + 1 };
        assert_eq!(memo_walk(&mut memo, &mut path, 0, u32::MAX, back, next), 12);
        assert_eq!(
            memo[..3],
            [Mark::Known(12), Mark::Known(11), Mark::Known(10)]
        );
        assert_eq!(memo_walk(&mut memo, &mut path, 3, u32::MAX, back, next), 12);
        assert_eq!(
            memo_walk(&mut memo, &mut path, 4, u32::MAX, back, next),
            u32::MAX
        );
        assert_eq!(memo[5], Mark::Known(u32::MAX));
        assert_eq!(
            memo_walk(&mut memo, &mut path, 6, u32::MAX, back, next),
            u32::MAX
        );
    }
}
