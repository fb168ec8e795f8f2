//! A flat, index-based view of a [`FabricState`] and the one-hop semantics every part of the
//! explicit engine (and the certificate checker) shares: which port a switch forwards a
//! destination to, which VL a hop takes, and whether that VL is operational and scheduled.
//!
//! The forwarding step ([`Net::switch_step`], [`Net::entry_step`], [`Net::out_step`]) is the
//! model's [`weft_fabric::forward`] step on flat arrays (the hot path of every engine pass);
//! the port table is built with [`forward::leave`], and a test holds the step equal to
//! [`forward::step`] on random broken states.

mod attach;
mod build;

use crate::report::{Endpoint, FailureReason, Hop, NodeClass, NodeRef, Route, Unscheduled};
use crate::Scope;
pub(crate) use attach::Attach;
use weft_fabric::{FabricState, Lid, NodeId, PortNum, Sl, SwitchState};

/// What is at the far end of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PortLink {
    /// No cable.
    Unwired,
    /// A cable whose link, or far node, is down.
    Down,
    /// A live link to `(node, port)`.
    Up { node: u32, port: u8 },
}

/// What a switch does with a packet for one destination (before VLs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The switch owns the destination and its LFT delivers to port 0.
    Arrive,
    /// Out on `out` to `(to, to_port)`; `last` when that port owns the destination.
    Out {
        out: u8,
        to: u32,
        to_port: u8,
        last: bool,
    },
    /// The route fails here.
    Fail(FailureReason),
}

/// A destination: a LID and the port owning it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dest {
    pub lid: Lid,
    pub owner: (u32, u8),
}

/// A source port (port 0 for a switch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Source {
    pub node: u32,
    pub port: u8,
}

/// A route as indices: hops and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawHop {
    pub node: u32,
    pub in_port: u8,
    pub out_port: Option<u8>,
    pub vl: Option<u8>,
}

/// The outcome of walking one route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Walk {
    pub hops: Vec<RawHop>,
    /// `None` when the route arrives; otherwise the node where it fails and why.
    pub failure: Option<(u32, FailureReason)>,
}

pub(crate) struct Net<'a> {
    pub st: &'a FabricState,
    pub alive: Vec<bool>,
    pub is_switch: Vec<bool>,
    pub port_count: Vec<u8>,
    /// Index of `(node, port 1)` in the per-port arrays; port `p` is at `base + p - 1`.
    pub port_base: Vec<u32>,
    pub ports: u32,
    pub link: Vec<PortLink>,
    pub owners: Vec<Option<(NodeId, PortNum)>>,
    pub sw: Vec<Option<&'a SwitchState>>,
    /// Switch node ids, in node order, and each node's index among them.
    pub switches: Vec<u32>,
    pub switch_index: Vec<u32>,
    /// VLs that can appear on a valid hop (highest valid VL + 1, at least 1).
    pub vls: u8,
    /// Per port: the smaller VLCap of the two ends of a live link (0 otherwise).
    pub cap: Vec<u8>,
    /// Per port: what its VL arbitration sends.
    arb: Vec<Arb>,
    /// Per port: the VLs a packet leaves it on ([`Net::sends`], [`Net::vl_ok`]).
    sends: Vec<u16>,
    /// The data VLs the SM operates (the state's `max_vls`; 16 when it sets none).
    max_vls: u8,
    /// Per node: a switch without SL2VL rows (every SL on VL 0).
    pub plain: Vec<bool>,
    /// Per node: its class for failure patterns (kind and tree level).
    pub class: Vec<NodeClass>,
    /// Per node, the first slot of its ports (port 0 included) in `sl_ranges`.
    sl_base: Vec<u32>,
    /// Per source port slot: the range of the state's per-source path SLs that are its own.
    sl_ranges: Vec<(u32, u32)>,
    /// Per switch index: the range of the state's per-switch path SLs that are its own.
    switch_sl_ranges: Vec<(u32, u32)>,
    /// SL→VL rows as a dense table: per node with rows, the first slot of its
    /// `(in, out)` grid (`in * (ports + 1) + out`); per slot, the row's map in
    /// [`Net::sl2vl_maps`] or [`NO_ROW`].
    sl2vl_base: Vec<u32>,
    sl2vl_slots: Vec<u16>,
    /// The distinct SL→VL maps of every row.
    sl2vl_maps: Vec<[u8; 16]>,
    /// Per port slot: the index in `sl2vl_maps`' injection twin [`Net::inj_maps`] of the
    /// port's injection SL→VL map ([`NO_ROW`]: every SL on VL 0).
    inj_slot: Vec<u16>,
    /// The distinct injection SL→VL maps.
    inj_maps: Vec<[u8; 16]>,
}

/// No SL→VL row for an `(in, out)` pair.
const NO_ROW: u16 = u16::MAX;

/// A port's VL arbitration, as masks of VLs (bit `v` for VL `v`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Arb {
    /// VLs some entry names with a weight above 0 (a port without a table: VL 0).
    sends: u16,
    /// VLs some entry names.
    listed: u16,
    /// Whether the state records a table.
    table: bool,
}

impl Arb {
    /// A port without a table: VL 0 only.
    const NONE: Arb = Arb {
        sends: 1,
        listed: 0,
        table: false,
    };

    fn of(t: Option<&weft_fabric::VlArb>) -> Arb {
        let Some(t) = t else { return Arb::NONE };
        let mut a = Arb {
            sends: 0,
            listed: 0,
            table: true,
        };
        for e in t.high.iter().chain(&t.low).filter(|e| e.vl < 16) {
            a.listed |= 1 << e.vl;
            if e.weight > 0 {
                a.sends |= 1 << e.vl;
            }
        }
        a
    }
}

pub(crate) const NO_INDEX: u32 = u32::MAX;

impl<'a> Net<'a> {
    /// `(node, port)` as a [`PortRef`](weft_fabric::PortRef).
    pub(crate) fn port_ref(&self, node: u32, port: u8) -> weft_fabric::PortRef {
        weft_fabric::PortRef::new(NodeId(node), port)
    }

    /// The dense switch index of `node`, or [`NO_INDEX`] for an end node or an unknown id.
    pub(crate) fn switch_of(&self, node: u32) -> u32 {
        self.switch_index
            .get(node as usize)
            .copied()
            .unwrap_or(NO_INDEX)
    }

    /// The SLs source port `(node, port)` uses toward `dlid` — what
    /// [`PathSl::get`](weft_fabric::PathSl::get) answers, found through a per-source index.
    pub(crate) fn path_sls(
        &self,
        node: u32,
        port: u8,
        dlid: weft_fabric::Lid,
    ) -> weft_fabric::SlSet {
        if port > self.port_count.get(node as usize).copied().unwrap_or(0) {
            return self.st.path_sls(self.port_ref(node, port), dlid);
        }
        let own = self
            .sl_base
            .get(node as usize)
            .and_then(|&b| self.sl_ranges.get(b as usize + usize::from(port)))
            .and_then(|&(lo, hi)| self.st.path_sl.by_source.get(lo as usize..hi as usize))
            .and_then(|slice| {
                let i = slice.partition_point(|e| e.lids.lo <= dlid);
                i.checked_sub(1).and_then(|i| slice.get(i))
            })
            .filter(|e| e.lids.contains(dlid));
        match own {
            Some(e) => e.sls,
            None if self.st.path_sl.by_switch.is_empty() => self.st.path_sl.for_destination(dlid),
            None => match self.st.source_switch(self.port_ref(node, port)) {
                Some(sw) => weft_fabric::SlSet(self.group_sls(self.switch_of(sw.0), dlid)),
                None => self.st.path_sl.for_destination(dlid),
            },
        }
    }

    /// [`Net::group_sls`] for destinations met mostly in increasing LID order: `at` is the
    /// position in switch `k`'s ranges the previous lookup ended at (moved forward when the
    /// LID is at or past it, searched for otherwise).
    pub(crate) fn group_sls_at(&self, k: u32, dlid: weft_fabric::Lid, at: &mut u32) -> u16 {
        let slice = self.switch_ranges(k);
        let mut i = *at as usize;
        if slice.get(i).is_none_or(|e| e.lids.lo > dlid) {
            i = slice
                .partition_point(|e| e.lids.lo <= dlid)
                .saturating_sub(1);
        } else {
            while slice.get(i + 1).is_some_and(|e| e.lids.lo <= dlid) {
                i += 1;
            }
        }
        *at = i as u32;
        self.covered(slice.get(i), dlid)
    }

    /// Switch index `k`'s per-switch path-SL ranges.
    fn switch_ranges(&self, k: u32) -> &[weft_fabric::SwitchSls] {
        self.switch_sl_ranges
            .get(k as usize)
            .and_then(|&(lo, hi)| self.st.path_sl.by_switch.get(lo as usize..hi as usize))
            .unwrap_or(&[])
    }

    /// The SLs of range `e` when it holds `dlid`, else the destination's.
    fn covered(&self, e: Option<&weft_fabric::SwitchSls>, dlid: weft_fabric::Lid) -> u16 {
        match e {
            Some(e) if e.lids.contains(dlid) => e.sls.0,
            _ => self.st.path_sl.for_destination(dlid).0,
        }
    }

    /// The SLs the sources at switch index `k` (its port 0 and the end-node ports cabled to
    /// it, unless they have their own) use toward `dlid`, as a mask.
    pub(crate) fn group_sls(&self, k: u32, dlid: weft_fabric::Lid) -> u16 {
        let slice = self.switch_ranges(k);
        let i = slice.partition_point(|e| e.lids.lo <= dlid);
        self.covered(i.checked_sub(1).and_then(|i| slice.get(i)), dlid)
    }

    pub(crate) fn is_switch(&self, n: u32) -> bool {
        self.is_switch.get(n as usize).copied().unwrap_or(false)
    }

    pub(crate) fn alive(&self, n: u32) -> bool {
        self.alive.get(n as usize).copied().unwrap_or(false)
    }

    /// Index of `(node, port)` in the per-port arrays (`port >= 1`).
    pub(crate) fn dirport(&self, n: u32, p: u8) -> Option<u32> {
        if p == 0 || p > self.port_count.get(n as usize).copied().unwrap_or(0) {
            return None;
        }
        Some(self.port_base.get(n as usize).copied()? + u32::from(p) - 1)
    }

    pub(crate) fn port_link(&self, n: u32, p: u8) -> Option<PortLink> {
        self.dirport(n, p)
            .and_then(|i| self.link.get(i as usize).copied())
    }

    /// The channel id of `(node, port, vl)`.
    pub(crate) fn channel(&self, n: u32, p: u8, vl: u8) -> Option<u32> {
        Some(self.dirport(n, p)? * u32::from(self.vls) + u32::from(vl))
    }

    /// `(node, port, vl)` of a channel id.
    pub(crate) fn channel_parts(&self, c: u32) -> Option<(u32, u8, u8)> {
        let v = u32::from(self.vls);
        let dp = c / v;
        let vl = (c % v) as u8;
        // The node whose port range holds `dp`.
        let n = self
            .port_base
            .partition_point(|&b| b <= dp)
            .checked_sub(1)?;
        let base = *self.port_base.get(n)?;
        Some((n as u32, (dp - base + 1) as u8, vl))
    }

    /// Whether a packet on `vl` leaves `(n, p)`: the link is up, the VL operational (below
    /// 15, both ends' VLCap and the state's `max_vls`) and scheduled by the port's VL
    /// arbitration (an entry of weight above 0; without a table, VL 0 only).
    pub(crate) fn vl_ok(&self, n: u32, p: u8, vl: u8) -> Result<(), FailureReason> {
        if self.sends(n, p, vl) {
            return Ok(());
        }
        self.why_not_sent(n, p, vl)
    }

    /// [`Net::vl_ok`] worked out from the port's link, VLCap, `max_vls` and arbitration (what
    /// [`Net::sends`] caches, and the reason when it refuses).
    fn why_not_sent(&self, n: u32, p: u8, vl: u8) -> Result<(), FailureReason> {
        let Some(i) = self.dirport(n, p) else {
            return Err(FailureReason::PortDown { port: p });
        };
        if !matches!(self.link.get(i as usize), Some(PortLink::Up { .. })) {
            return Err(FailureReason::PortDown { port: p });
        }
        let cap = self.cap.get(i as usize).copied().unwrap_or(0);
        if vl >= 15 || vl >= cap {
            return Err(FailureReason::VlNotOperational {
                port: p,
                vl,
                vl_cap: cap,
            });
        }
        if vl >= self.max_vls {
            return Err(FailureReason::VlAboveMaxVls {
                port: p,
                vl,
                max_vls: self.max_vls,
            });
        }
        let arb = self.arb.get(i as usize).copied().unwrap_or(Arb::NONE);
        if arb.sends & (1 << vl) == 0 {
            let why = if !arb.table {
                Unscheduled::NoTable
            } else if arb.listed & (1 << vl) != 0 {
                Unscheduled::ZeroWeight
            } else {
                Unscheduled::NotListed
            };
            return Err(FailureReason::VlNotScheduled { port: p, vl, why });
        }
        Ok(())
    }

    /// Whether [`Net::vl_ok`] accepts `vl` at `(n, p)`, as one bit test (the fast paths ask
    /// this per hop; the slow path asks `vl_ok` for the reason).
    #[inline]
    pub(crate) fn sends(&self, n: u32, p: u8, vl: u8) -> bool {
        vl < 16
            && self
                .dirport(n, p)
                .and_then(|i| self.sends.get(i as usize))
                .is_some_and(|m| m & (1 << vl) != 0)
    }

    /// Where switch `x` sends a packet for `d`.
    pub(crate) fn switch_step(&self, x: u32, d: Dest) -> Step {
        let entry = self
            .sw
            .get(x as usize)
            .copied()
            .flatten()
            .and_then(|s| s.lft.get(d.lid));
        self.entry_step(x, entry.map(|p| p.0), d)
    }

    /// What switch `x` does with `d` given its LFT entry for `d.lid` (`None`: unset).
    pub(crate) fn entry_step(&self, x: u32, entry: Option<u8>, d: Dest) -> Step {
        let Some(o) = entry else {
            return Step::Fail(FailureReason::Unset);
        };
        if o == 0 {
            return if d.owner == (x, 0) {
                Step::Arrive
            } else {
                Step::Fail(FailureReason::Misdelivered { port: 0 })
            };
        }
        self.out_step(x, o, d)
    }

    /// Leaving node `x` on port `o` toward `d`.
    pub(crate) fn out_step(&self, x: u32, o: u8, d: Dest) -> Step {
        match self.port_link(x, o) {
            None => Step::Fail(FailureReason::PortMissing { port: o }),
            Some(PortLink::Unwired) => Step::Fail(FailureReason::PortUnwired { port: o }),
            Some(PortLink::Down) => Step::Fail(FailureReason::PortDown { port: o }),
            Some(PortLink::Up { node, port }) => {
                if self.is_switch(node) {
                    Step::Out {
                        out: o,
                        to: node,
                        to_port: port,
                        last: false,
                    }
                } else if (node, port) == d.owner {
                    Step::Out {
                        out: o,
                        to: node,
                        to_port: port,
                        last: true,
                    }
                } else {
                    Step::Fail(FailureReason::Misdelivered { port: o })
                }
            }
        }
    }

    /// The VL switch `x` puts SL `sl` on from `i` to `o`, checked to be operational.
    pub(crate) fn switch_vl(&self, x: u32, i: u8, o: u8, sl: u8) -> Result<u8, FailureReason> {
        if self.plain.get(x as usize).copied().unwrap_or(false) {
            self.vl_ok(x, o, 0)?;
            return Ok(0);
        }
        let vl = match self.sl2vl_base.get(x as usize).copied() {
            Some(base) if base != u32::MAX => {
                let w = u32::from(self.port_count.get(x as usize).copied().unwrap_or(0)) + 1;
                let unassigned = FailureReason::Sl2VlUnassigned {
                    in_port: i,
                    out_port: o,
                };
                if u32::from(i) >= w || u32::from(o) >= w {
                    return Err(unassigned);
                }
                let slot = self
                    .sl2vl_slots
                    .get((base + u32::from(i) * w + u32::from(o)) as usize)
                    .copied()
                    .unwrap_or(NO_ROW);
                self.sl2vl_maps
                    .get(usize::from(slot))
                    .and_then(|m| m.get(usize::from(sl)))
                    .copied()
                    .ok_or(unassigned)?
            }
            // No rows and no map for all pairs (or no table): every SL on VL 0.
            _ => 0,
        };
        self.vl_ok(x, o, vl)?;
        Ok(vl)
    }

    /// The VL end node `h` injects SL `sl` on through port `p`, checked.
    pub(crate) fn injection_vl(&self, h: u32, p: u8, sl: u8) -> Result<u8, FailureReason> {
        let vl = match self.dirport(h, p) {
            Some(slot) => self
                .inj_slot
                .get(slot as usize)
                .and_then(|&k| self.inj_maps.get(usize::from(k)))
                .and_then(|m| m.get(usize::from(sl)))
                .copied()
                .unwrap_or(0),
            None => self.st.injection_vl(self.port_ref(h, p), Sl(sl)).0,
        };
        self.vl_ok(h, p, vl)?;
        Ok(vl)
    }

    /// Sources and destinations of `scope`, in node and LID order.
    pub(crate) fn endpoints(&self, scope: Scope) -> (Vec<Source>, Vec<Dest>) {
        let live = |n: u32, p: u8| -> bool {
            self.alive(n)
                && (self.is_switch(n) || matches!(self.port_link(n, p), Some(PortLink::Up { .. })))
        };
        let wanted = |n: u32| match scope {
            Scope::All => true,
            Scope::HcaToHca => !self.is_switch(n),
        };
        let mut sources = Vec::new();
        for (&n, ports) in &self.st.lids.base {
            for &p in ports.keys() {
                let (n, p) = (n.0, p.0);
                if (self.is_switch(n) && p != 0) || (!self.is_switch(n) && p == 0) {
                    continue;
                }
                if live(n, p) && wanted(n) {
                    sources.push(Source { node: n, port: p });
                }
            }
        }
        let mut dests = Vec::new();
        for (lid, o) in self.owners.iter().enumerate() {
            let Some((n, p)) = o else { continue };
            let (n, p) = (n.0, p.0);
            if lid == 0 || lid > usize::from(weft_fabric::MAX_UNICAST_LID) {
                continue;
            }
            if (self.is_switch(n) && p != 0) || (!self.is_switch(n) && p == 0) {
                continue;
            }
            if live(n, p) && wanted(n) {
                dests.push(Dest {
                    lid: Lid(lid as u16),
                    owner: (n, p),
                });
            }
        }
        (sources, dests)
    }

    /// Walks one route hop by hop, calling `dep(x, in_port, in_vl, out_port, out_vl)` for every
    /// dependency it creates at a switch. A route caught in a forwarding loop is reported as a
    /// loop where it first comes back to a switch, and walked on (for its dependencies) until
    /// it repeats a (switch, input port, VL) state.
    pub(crate) fn walk(
        &self,
        src: Source,
        d: Dest,
        sl: u8,
        mut dep: impl FnMut(u32, u8, u8, u8, u8),
    ) -> Walk {
        let mut hops = Vec::new();
        let mut failure: Option<(u32, FailureReason)> = None;
        // (switch, input port, input VL): input VL 0 with port 0 for a switch's own traffic.
        let (mut x, mut i, mut vin) = if self.is_switch(src.node) {
            (src.node, 0u8, 0u8)
        } else {
            match self.out_step(src.node, src.port, d) {
                Step::Fail(r) => {
                    hops.push(RawHop {
                        node: src.node,
                        in_port: 0,
                        out_port: Some(src.port),
                        vl: None,
                    });
                    return Walk {
                        hops,
                        failure: Some((src.node, r)),
                    };
                }
                Step::Arrive => {
                    // `out_step` never arrives; treat it as a misdelivery to stay total.
                    return Walk {
                        hops,
                        failure: Some((src.node, FailureReason::Misdelivered { port: src.port })),
                    };
                }
                Step::Out {
                    to, to_port, last, ..
                } => {
                    let vl = self.injection_vl(src.node, src.port, sl);
                    hops.push(RawHop {
                        node: src.node,
                        in_port: 0,
                        out_port: Some(src.port),
                        vl: vl.as_ref().ok().copied(),
                    });
                    match vl {
                        Err(r) => {
                            return Walk {
                                hops,
                                failure: Some((src.node, r)),
                            }
                        }
                        Ok(v) if last => {
                            let _ = v;
                            return Walk {
                                hops,
                                failure: None,
                            };
                        }
                        Ok(v) => (to, to_port, v),
                    }
                }
            }
        };
        let mut seen_switches: Vec<u32> = Vec::new();
        let mut seen_states: Vec<(u32, u8, u8)> = Vec::new();
        loop {
            if failure.is_some() {
                // Following a loop for its dependencies only.
                if seen_states.contains(&(x, i, vin)) {
                    return Walk { hops, failure };
                }
                seen_states.push((x, i, vin));
            } else if seen_switches.contains(&x) {
                failure = Some((x, FailureReason::Loop));
                seen_states.push((x, i, vin));
            } else {
                seen_switches.push(x);
                seen_states.push((x, i, vin));
            }
            match self.switch_step(x, d) {
                Step::Arrive => {
                    hops.push(RawHop {
                        node: x,
                        in_port: i,
                        out_port: None,
                        vl: None,
                    });
                    return Walk { hops, failure };
                }
                Step::Fail(r) => {
                    let out_port = match r {
                        FailureReason::PortMissing { port }
                        | FailureReason::PortUnwired { port }
                        | FailureReason::PortDown { port }
                        | FailureReason::Misdelivered { port } => Some(port),
                        _ => None,
                    };
                    hops.push(RawHop {
                        node: x,
                        in_port: i,
                        out_port,
                        vl: None,
                    });
                    if failure.is_none() {
                        failure = Some((x, r));
                    }
                    return Walk { hops, failure };
                }
                Step::Out {
                    out,
                    to,
                    to_port,
                    last,
                } => {
                    let vl = self.switch_vl(x, i, out, sl);
                    hops.push(RawHop {
                        node: x,
                        in_port: i,
                        out_port: Some(out),
                        vl: vl.as_ref().ok().copied(),
                    });
                    let vout = match vl {
                        Err(r) => {
                            if failure.is_none() {
                                failure = Some((x, r));
                            }
                            return Walk { hops, failure };
                        }
                        Ok(v) => v,
                    };
                    if i != 0 {
                        dep(x, i, vin, out, vout);
                    }
                    if last {
                        return Walk { hops, failure };
                    }
                    x = to;
                    i = to_port;
                    vin = vout;
                }
            }
        }
    }

    pub(crate) fn node_ref(&self, n: u32) -> NodeRef {
        let node = self.st.fabric.nodes().get(n as usize);
        NodeRef {
            id: NodeId(n),
            name: node.map(|x| x.name().to_owned()).unwrap_or_default(),
            guid: node.map(|x| x.guid()).unwrap_or(weft_fabric::Guid(0)),
        }
    }

    pub(crate) fn endpoint(&self, n: u32, p: u8) -> Endpoint {
        Endpoint {
            node: self.node_ref(n),
            port: p,
        }
    }

    pub(crate) fn route(&self, src: Source, d: Dest, sl: u8, hops: &[RawHop]) -> Route {
        Route {
            src: self.endpoint(src.node, src.port),
            dlid: d.lid,
            dst: self.endpoint(d.owner.0, d.owner.1),
            sl,
            hops: hops
                .iter()
                .map(|h| Hop {
                    node: self.node_ref(h.node),
                    in_port: h.in_port,
                    out_port: h.out_port,
                    vl: h.vl,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests;
