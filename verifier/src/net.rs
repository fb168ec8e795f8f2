//! A flat, index-based view of a [`FabricState`] and the one-hop semantics every part of the
//! explicit engine (and the certificate checker) shares: which port a switch forwards a
//! destination to, which VL a hop takes, and whether that VL is operational and scheduled.
//!
//! The forwarding step ([`Net::switch_step`], [`Net::entry_step`], [`Net::out_step`]) is the
//! model's [`weft_fabric::forward`] step on flat arrays (the hot path of every engine pass);
//! the port table is built with [`forward::leave`], and a test holds the step equal to
//! [`forward::step`] on random broken states.

use crate::report::{Endpoint, FailureReason, Hop, NodeClass, NodeRef, Route, Unscheduled};
use crate::Scope;
use weft_fabric::{forward, FabricState, Lid, NodeId, PortNum, Sl, SwitchState};

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
    pub fn port_ref(&self, node: u32, port: u8) -> weft_fabric::PortRef {
        weft_fabric::PortRef::new(NodeId(node), port)
    }

    /// The dense switch index of `node`, or [`NO_INDEX`] for an end node or an unknown id.
    pub fn switch_of(&self, node: u32) -> u32 {
        self.switch_index
            .get(node as usize)
            .copied()
            .unwrap_or(NO_INDEX)
    }

    pub fn new(st: &'a FabricState) -> Net<'a> {
        let f = &st.fabric;
        let nodes = f.nodes();
        let alive: Vec<bool> = nodes.iter().map(|n| !n.down).collect();
        let is_switch: Vec<bool> = nodes.iter().map(|n| n.is_switch()).collect();
        let port_count: Vec<u8> = nodes.iter().map(|n| n.spec.port_count).collect();
        let mut port_base = Vec::with_capacity(nodes.len());
        let mut ports = 0u32;
        for n in nodes {
            port_base.push(ports);
            ports += u32::from(n.spec.port_count);
        }
        // Where each port leads: the model's rule ([`forward::leave`]), flat.
        let mut link = vec![PortLink::Unwired; ports as usize];
        for (id, node) in f.node_ids().zip(nodes) {
            for port in &node.ports {
                let me = weft_fabric::PortRef {
                    node: id,
                    port: port.num,
                };
                let value = match forward::leave(f, me) {
                    Ok(h) => PortLink::Up {
                        node: h.to.node.0,
                        port: h.to.port.0,
                    },
                    Err(forward::Stop::Down(_)) => PortLink::Down,
                    Err(_) => continue,
                };
                let i = port_base.get(id.index()).copied().unwrap_or(0) as usize
                    + usize::from(port.num.0)
                    - 1;
                if let Some(slot) = link.get_mut(i) {
                    *slot = value;
                }
            }
        }
        let owners = st.lids.owners(f);
        let mut sw = vec![None; nodes.len()];
        for (id, s) in &st.switches {
            if let Some(slot) = sw.get_mut(id.index()) {
                if is_switch.get(id.index()).copied().unwrap_or(false) {
                    *slot = Some(s);
                }
            }
        }
        let mut switches = Vec::new();
        let mut switch_index = vec![NO_INDEX; nodes.len()];
        for (n, &s) in is_switch.iter().enumerate() {
            if s {
                if let Some(slot) = switch_index.get_mut(n) {
                    *slot = switches.len() as u32;
                }
                switches.push(n as u32);
            }
        }
        // The VLs a valid hop can use: below every VLCap and never 15.
        let max_cap = nodes
            .iter()
            .map(|n| n.spec.caps.vl_cap.min(15))
            .max()
            .unwrap_or(1);
        let mut top = 0u8;
        for s in st.switches.values() {
            for t in s.sl2vl.iter().map(|r| &r.vl).chain(&s.sl2vl_all) {
                for &v in t {
                    if v < max_cap && v < 15 {
                        top = top.max(v);
                    }
                }
            }
        }
        for t in st.ports.values().filter_map(|p| p.sl2vl.as_ref()) {
            for &v in t {
                if v < max_cap && v < 15 {
                    top = top.max(v);
                }
            }
        }
        let cap: Vec<u8> = link
            .iter()
            .enumerate()
            .map(|(i, l)| match l {
                PortLink::Up { node, .. } => {
                    let near = port_base
                        .partition_point(|&b| b as usize <= i)
                        .saturating_sub(1);
                    let c = |n: usize| nodes.get(n).map_or(0, |x| x.spec.caps.vl_cap.min(15));
                    c(near).min(c(*node as usize))
                }
                _ => 0,
            })
            .collect();
        let mut arb = vec![Arb::NONE; ports as usize];
        for (r, p) in &st.ports {
            let Some(&b) = port_base.get(r.node.index()) else {
                continue;
            };
            let count = port_count.get(r.node.index()).copied().unwrap_or(0);
            if r.port.0 == 0 || r.port.0 > count {
                continue;
            }
            if let Some(slot) = arb.get_mut(b as usize + usize::from(r.port.0) - 1) {
                *slot = Arb::of(p.vlarb.as_ref());
            }
        }
        let max_vls = st.max_vls.map_or(16, |m| m.min(16));
        let plain = (0..nodes.len())
            .map(|n| sw.get(n).copied().flatten().is_none_or(|s| !s.has_sl2vl()))
            .collect();
        let class = node_classes(st, &link, &port_base, &is_switch, &alive);
        let (sl_base, sl_ranges) = source_index(st, &port_count);
        // SL→VL rows: one grid per switch with rows, maps shared.
        let mut sl2vl_base = vec![u32::MAX; nodes.len()];
        let mut sl2vl_slots: Vec<u16> = Vec::new();
        let mut sl2vl_maps: Vec<[u8; 16]> = Vec::new();
        let mut map_ids: std::collections::HashMap<[u8; 16], u16> = Default::default();
        for (id, s) in &st.switches {
            let Some(&p) = port_count.get(id.index()) else {
                continue;
            };
            if !s.has_sl2vl() || !is_switch.get(id.index()).copied().unwrap_or(false) {
                continue;
            }
            // Distinct maps are few (one per QoS layout); ids fit in u16 below NO_ROW.
            let mut id_of = |t: &[u8; 16]| {
                let next = sl2vl_maps.len() as u16;
                let m = *map_ids.entry(*t).or_insert(next);
                if m == next {
                    sl2vl_maps.push(*t);
                }
                m
            };
            let w = usize::from(p) + 1;
            let base = sl2vl_slots.len();
            let all = s.sl2vl_all.as_ref().map_or(NO_ROW, &mut id_of);
            sl2vl_slots.resize(base + w * w, all);
            if let Some(b) = sl2vl_base.get_mut(id.index()) {
                *b = base as u32;
            }
            for r in &s.sl2vl {
                if usize::from(r.in_port) >= w || usize::from(r.out_port) >= w {
                    continue;
                }
                let m = id_of(&r.vl);
                if let Some(slot) =
                    sl2vl_slots.get_mut(base + usize::from(r.in_port) * w + usize::from(r.out_port))
                {
                    *slot = m;
                }
            }
        }
        let switch_sl_ranges = ranges_by_key(
            switches.len(),
            st.path_sl
                .by_switch
                .iter()
                .map(|e| switch_index.get(e.switch.index()).map(|&k| k as usize)),
        );
        // Injection maps per port slot, so a lookup costs no search (per-source path SLs look
        // one up per source and destination).
        let mut inj_slot = vec![NO_ROW; ports as usize];
        let mut inj_maps: Vec<[u8; 16]> = Vec::new();
        for (r, ps) in &st.ports {
            let Some(map) = ps.sl2vl else { continue };
            let Some(n) = nodes.get(r.node.index()) else {
                continue;
            };
            if r.port.0 == 0 || r.port.0 > n.spec.port_count {
                continue;
            }
            let slot =
                port_base.get(r.node.index()).copied().unwrap_or(0) + u32::from(r.port.0) - 1;
            let k = match inj_maps.iter().position(|m| *m == map) {
                Some(k) => k,
                None => {
                    inj_maps.push(map);
                    inj_maps.len() - 1
                }
            };
            if let Some(s) = inj_slot.get_mut(slot as usize) {
                *s = k as u16;
            }
        }
        Net {
            st,
            inj_slot,
            inj_maps,
            class,
            sl_base,
            sl_ranges,
            switch_sl_ranges,
            sl2vl_base,
            sl2vl_slots,
            sl2vl_maps,
            cap,
            arb,
            max_vls,
            plain,
            alive,
            is_switch,
            port_count,
            port_base,
            ports,
            link,
            owners,
            sw,
            switches,
            switch_index,
            vls: top + 1,
        }
    }

    /// The SLs source port `(node, port)` uses toward `dlid` — what
    /// [`PathSl::get`](weft_fabric::PathSl::get) answers, found through a per-source index.
    pub fn path_sls(&self, node: u32, port: u8, dlid: weft_fabric::Lid) -> weft_fabric::SlSet {
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
    pub fn group_sls_at(&self, k: u32, dlid: weft_fabric::Lid, at: &mut u32) -> u16 {
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
    pub fn group_sls(&self, k: u32, dlid: weft_fabric::Lid) -> u16 {
        let slice = self.switch_ranges(k);
        let i = slice.partition_point(|e| e.lids.lo <= dlid);
        self.covered(i.checked_sub(1).and_then(|i| slice.get(i)), dlid)
    }

    pub fn is_switch(&self, n: u32) -> bool {
        self.is_switch.get(n as usize).copied().unwrap_or(false)
    }

    pub fn alive(&self, n: u32) -> bool {
        self.alive.get(n as usize).copied().unwrap_or(false)
    }

    /// Index of `(node, port)` in the per-port arrays (`port >= 1`).
    pub fn dirport(&self, n: u32, p: u8) -> Option<u32> {
        if p == 0 || p > self.port_count.get(n as usize).copied().unwrap_or(0) {
            return None;
        }
        Some(self.port_base.get(n as usize).copied()? + u32::from(p) - 1)
    }

    pub fn port_link(&self, n: u32, p: u8) -> Option<PortLink> {
        self.dirport(n, p)
            .and_then(|i| self.link.get(i as usize).copied())
    }

    /// The channel id of `(node, port, vl)`.
    pub fn channel(&self, n: u32, p: u8, vl: u8) -> Option<u32> {
        Some(self.dirport(n, p)? * u32::from(self.vls) + u32::from(vl))
    }

    /// `(node, port, vl)` of a channel id.
    pub fn channel_parts(&self, c: u32) -> Option<(u32, u8, u8)> {
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
    pub fn vl_ok(&self, n: u32, p: u8, vl: u8) -> Result<(), FailureReason> {
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

    /// Where switch `x` sends a packet for `d`.
    pub fn switch_step(&self, x: u32, d: Dest) -> Step {
        let entry = self
            .sw
            .get(x as usize)
            .copied()
            .flatten()
            .and_then(|s| s.lft.get(d.lid));
        self.entry_step(x, entry.map(|p| p.0), d)
    }

    /// What switch `x` does with `d` given its LFT entry for `d.lid` (`None`: unset).
    pub fn entry_step(&self, x: u32, entry: Option<u8>, d: Dest) -> Step {
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
    pub fn out_step(&self, x: u32, o: u8, d: Dest) -> Step {
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
    pub fn switch_vl(&self, x: u32, i: u8, o: u8, sl: u8) -> Result<u8, FailureReason> {
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
    pub fn injection_vl(&self, h: u32, p: u8, sl: u8) -> Result<u8, FailureReason> {
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
    pub fn endpoints(&self, scope: Scope) -> (Vec<Source>, Vec<Dest>) {
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
    pub fn walk(
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

    pub fn node_ref(&self, n: u32) -> NodeRef {
        let node = self.st.fabric.nodes().get(n as usize);
        NodeRef {
            id: NodeId(n),
            name: node.map(|x| x.name().to_owned()).unwrap_or_default(),
            guid: node.map(|x| x.guid()).unwrap_or(weft_fabric::Guid(0)),
        }
    }

    pub fn endpoint(&self, n: u32, p: u8) -> Endpoint {
        Endpoint {
            node: self.node_ref(n),
            port: p,
        }
    }

    pub fn route(&self, src: Source, d: Dest, sl: u8, hops: &[RawHop]) -> Route {
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

/// Sources grouped for per-destination work that does not grow with the number of end nodes:
/// end-node ports by the switch port they enter through, with their injection VLs.
pub(crate) struct Attach {
    /// Path SLs depend on the destination only (no per-pair entries).
    pub uniform: bool,
    /// Path SLs depend on the destination and the source's switch only (no per-port
    /// entries): the sources at a switch send alike.
    pub grouped: bool,
    /// Per switch index: `(input port, source index)` of every end-node source cabled to it,
    /// and `(0, index)` for the switch's own traffic.
    pub by_switch: Vec<Vec<(u8, u32)>>,
    /// Per switch index: the SLs every attached source injects on an operational VL.
    pub valid_and: Vec<u16>,
    /// Per source index: the VL each SL is injected on (end nodes only).
    pub inj: Vec<[u8; 16]>,
    /// Switch sources (indices into the source list).
    pub switch_sources: Vec<u32>,
    /// End-node sources not cabled to a switch (handled one by one).
    pub loose: Vec<u32>,
    /// Every hop of every route is on VL 0 when its SLs are in [`Attach::vl0_sls`]: path SLs
    /// by destination only, no loose sources, no switch with SL2VL rows.
    pub one_vl: bool,
    /// The SLs every end-node source injects on VL 0.
    pub vl0_sls: u16,
    /// The one SL→VL map every hop uses, when there is one: every switch has no rows and the
    /// same map for all port pairs, every end-node source injects by it, no source is loose,
    /// and path SLs are by switch or destination. Then a route keeps one VL end to end.
    pub one_map: Option<[u8; 16]>,
}

impl Net<'_> {
    pub fn attach(&self, sources: &[Source]) -> Attach {
        let s = self.switches.len();
        let mut a = Attach {
            uniform: self.st.path_sl.destination_only(),
            grouped: self.st.path_sl.by_source.is_empty(),
            by_switch: vec![Vec::new(); s],
            valid_and: vec![u16::MAX; s],
            inj: vec![[0; 16]; sources.len()],
            switch_sources: Vec::new(),
            loose: Vec::new(),
            one_vl: false,
            vl0_sls: u16::MAX,
            one_map: None,
        };
        for (j, src) in sources.iter().enumerate() {
            if self.is_switch(src.node) {
                a.switch_sources.push(j as u32);
                let k = self.switch_of(src.node);
                if let Some(list) = a.by_switch.get_mut(k as usize) {
                    list.push((0, j as u32));
                }
                continue;
            }
            let mut valid = 0u16;
            for sl in 0..16u8 {
                let vl = self
                    .st
                    .injection_vl(self.port_ref(src.node, src.port), Sl(sl))
                    .0;
                if let Some(slot) = a.inj.get_mut(j).and_then(|t| t.get_mut(usize::from(sl))) {
                    *slot = vl;
                }
                if self.vl_ok(src.node, src.port, vl).is_ok() {
                    valid |= 1 << sl;
                }
                if vl != 0 {
                    a.vl0_sls &= !(1 << sl);
                }
            }
            match self.port_link(src.node, src.port) {
                Some(PortLink::Up { node, port }) if self.is_switch(node) => {
                    let k = self.switch_of(node);
                    if let (Some(list), Some(v)) = (
                        a.by_switch.get_mut(k as usize),
                        a.valid_and.get_mut(k as usize),
                    ) {
                        list.push((port, j as u32));
                        *v &= valid;
                    } else {
                        a.loose.push(j as u32);
                    }
                }
                _ => a.loose.push(j as u32),
            }
        }
        // One map for every hop?
        let first = self
            .switches
            .first()
            .and_then(|&x| self.sw.get(x as usize).copied().flatten())
            .and_then(|s| s.sl2vl_all);
        let same_switches = first.is_some()
            && self
                .switches
                .iter()
                .map(|&x| self.sw.get(x as usize).copied().flatten())
                .all(|s| s.is_some_and(|s| s.sl2vl.is_empty() && s.sl2vl_all == first));
        if let (Some(m), true) = (first, same_switches) {
            let injected_alike = sources
                .iter()
                .enumerate()
                .filter(|(_, s)| !self.is_switch(s.node))
                .all(|(j, _)| a.inj.get(j) == Some(&m));
            if injected_alike && a.loose.is_empty() && a.grouped {
                a.one_map = Some(m);
            }
        }
        a.one_vl = a.uniform
            && a.loose.is_empty()
            && self
                .switches
                .iter()
                .all(|&x| self.plain.get(x as usize).copied().unwrap_or(false));
        a
    }
}

/// The class of every node: switches get the level the model gives them, else their
/// distance (over live links) to the nearest switch with a live end node, plus one; end nodes
/// get none.
fn node_classes(
    st: &FabricState,
    link: &[PortLink],
    port_base: &[u32],
    is_switch: &[bool],
    alive: &[bool],
) -> Vec<NodeClass> {
    let nodes = st.fabric.nodes();
    let n = nodes.len();
    let peers = |x: usize| -> Vec<u32> {
        let base = port_base.get(x).copied().unwrap_or(0) as usize;
        let count = nodes.get(x).map_or(0, |nd| usize::from(nd.spec.port_count));
        link.get(base..base + count)
            .unwrap_or(&[])
            .iter()
            .filter_map(|l| match l {
                PortLink::Up { node, .. } => Some(*node),
                _ => None,
            })
            .collect()
    };
    let mut level: Vec<Option<u8>> = vec![None; n];
    let mut queue = std::collections::VecDeque::new();
    for x in 0..n {
        let sw = is_switch.get(x).copied().unwrap_or(false);
        if sw
            && alive.get(x).copied().unwrap_or(false)
            && peers(x)
                .iter()
                .any(|&p| !is_switch.get(p as usize).copied().unwrap_or(true))
        {
            if let Some(l) = level.get_mut(x) {
                *l = Some(1);
            }
            queue.push_back(x);
        }
    }
    while let Some(x) = queue.pop_front() {
        let next = level
            .get(x)
            .copied()
            .flatten()
            .unwrap_or(1)
            .saturating_add(1);
        for p in peers(x) {
            let p = p as usize;
            if is_switch.get(p).copied().unwrap_or(false) {
                if let Some(slot @ None) = level.get_mut(p) {
                    *slot = Some(next);
                    queue.push_back(p);
                }
            }
        }
    }
    nodes
        .iter()
        .zip(level)
        .map(|(nd, computed)| NodeClass {
            kind: nd.kind(),
            level: if nd.is_switch() {
                nd.spec.level.or(computed)
            } else {
                None
            },
        })
        .collect()
}

/// Per node, the first slot of its ports (0 to its port count) and, per slot, the range of the
/// state's per-source path SLs belonging to that source port (empty when it has none).
fn source_index(st: &FabricState, port_count: &[u8]) -> (Vec<u32>, Vec<(u32, u32)>) {
    let mut base = Vec::with_capacity(port_count.len());
    let mut n = 0u32;
    for &c in port_count {
        base.push(n);
        n += u32::from(c) + 1;
    }
    let ranges = ranges_by_key(
        n as usize,
        st.path_sl.by_source.iter().map(|e| {
            let b = base.get(e.src.node.index())?;
            (e.src.port.0 <= port_count.get(e.src.node.index()).copied().unwrap_or(0))
                .then(|| *b as usize + usize::from(e.src.port.0))
        }),
    );
    (base, ranges)
}

/// Per key `0..n`, the range of positions in a list sorted by key that hold it (`(0, 0)` when
/// none), from each item's key (`None`: no key).
fn ranges_by_key(n: usize, keys: impl Iterator<Item = Option<usize>>) -> Vec<(u32, u32)> {
    let mut ranges = vec![(0u32, 0u32); n];
    for (i, k) in keys.enumerate() {
        if let Some(r) = k.and_then(|k| ranges.get_mut(k)) {
            if r.1 != i as u32 {
                r.0 = i as u32;
            }
            r.1 = i as u32 + 1;
        }
    }
    ranges
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::{Dest, Net, Step};
    use crate::report::FailureReason;
    use crate::testkit::{self, random_fabric, route_minhop, sequential_lids, Rng};
    use weft_fabric::forward::{self, Stop};
    use weft_fabric::{Lid, PortNum, PortRef, SlSet};

    /// [`Net::switch_step`] is [`forward::step`] on flat arrays: on random fabrics, routed and
    /// then broken (entries unset, at port 0, past the last port, anywhere; cables and nodes
    /// down), every live switch's step toward every destination is the model's.
    #[test]
    fn the_flat_step_is_the_models() {
        let mut rng = Rng(0x5eed_0f0d);
        let mut seen = [0usize; 4];
        for case in 0..300 {
            let f = testkit::small_fabric(&mut rng);
            let mut st = route_minhop(&f, sequential_lids(&f));
            for _ in 0..1 + rng.below(4) {
                testkit::break_forwarding(&mut rng, &mut st);
            }
            let net = Net::new(&st);
            for d in forward::Dest::all(&st) {
                let ours = Dest {
                    lid: d.lid,
                    owner: (d.owner.node.0, d.owner.port.0),
                };
                for &x in &net.switches {
                    if !net.alive(x) {
                        continue;
                    }
                    let model = forward::step(&st, weft_fabric::NodeId(x), d);
                    let expected = match model {
                        forward::Step::Arrive => Step::Arrive,
                        forward::Step::Forward(h) | forward::Step::Deliver(h) => Step::Out {
                            out: h.out.0,
                            to: h.to.node.0,
                            to_port: h.to.port.0,
                            last: matches!(model, forward::Step::Deliver(_)),
                        },
                        forward::Step::Stop(stop) => Step::Fail(match stop {
                            Stop::Unset => FailureReason::Unset,
                            Stop::PortMissing(PortNum(port)) => FailureReason::PortMissing { port },
                            Stop::Unwired(PortNum(port)) => FailureReason::PortUnwired { port },
                            Stop::Down(PortNum(port)) => FailureReason::PortDown { port },
                            Stop::Misdelivered(PortNum(port)) => {
                                FailureReason::Misdelivered { port }
                            }
                        }),
                    };
                    let got = net.switch_step(x, ours);
                    assert_eq!(got, expected, "case {case}: {d:?} at switch {x}");
                    seen[match got {
                        Step::Arrive => 0,
                        Step::Out { last: false, .. } => 1,
                        Step::Out { last: true, .. } => 2,
                        Step::Fail(_) => 3,
                    }] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&c| c > 50), "{seen:?}");
    }

    /// The per-source index answers exactly what `PathSl::get` answers, for every source port
    /// (ports without entries, out-of-range ports and switch port 0 included) and LID.
    #[test]
    fn indexed_path_sls_agree_with_the_state() {
        let mut rng = Rng(0x5eed_0051);
        for _ in 0..30 {
            let f = random_fabric(&mut rng, 6, 3, 5, 8);
            let mut st = route_minhop(&f, sequential_lids(&f));
            let max = st.lids.max_lid(&st.fabric);
            let nodes = st.fabric.nodes().len();
            let mut triples = Vec::new();
            for _ in 0..rng.below(60) {
                let node = weft_fabric::NodeId(rng.below(nodes as u64) as u32);
                let port = rng.below(4) as u8;
                let lid = Lid(1 + rng.below(u64::from(max)) as u16);
                triples.push((
                    PortRef::new(node, port),
                    lid,
                    SlSet(1 + rng.below(7) as u16),
                ));
            }
            st.path_sl.set_by_source(triples);
            st.path_sl.set_by_dlid([(Lid(1), SlSet(0b100))]);
            // And per source switch, for some switches and LIDs.
            let switches: Vec<weft_fabric::NodeId> = st.switches.keys().copied().collect();
            let mut triples = Vec::new();
            for _ in 0..rng.below(40) {
                let x = switches[rng.below(switches.len() as u64) as usize];
                let lid = Lid(1 + rng.below(u64::from(max)) as u16);
                triples.push((x, lid, SlSet(1 + rng.below(7) as u16)));
            }
            st.path_sl.set_by_switch(triples);
            let net = Net::new(&st);
            for n in 0..nodes as u32 {
                for p in 0..=40u8 {
                    for l in 0..=max + 1 {
                        let src = PortRef::new(weft_fabric::NodeId(n), p);
                        assert_eq!(
                            net.path_sls(n, p, Lid(l)),
                            st.path_sl.get(src, st.source_switch(src), Lid(l)),
                            "node {n} port {p} lid {l}"
                        );
                    }
                }
            }
        }
    }
}
