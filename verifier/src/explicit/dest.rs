//! One destination's pass of the explicit engine: every switch's next hop toward it and its
//! distance label, the number of routes, then the fast path that fits the fabric (or the
//! report that some route fails, for the slow path in `failures`), and the per-worker
//! scratch space the pass reuses across destinations.

use super::fast::{fast_path, one_map_path, one_vl_path};
use super::BLOCK;
/// No label: the switch does not reach the destination (the certificate's own marker, as the
/// labels become the certificate's).
pub(super) use crate::certificate::NO_LABEL;
use crate::channels::DepSet;
use crate::net::{Attach, Dest, Net, Source, Step, NO_INDEX};
use crate::report::FailureReason;
use weft_fabric::{SlSet, LFT_UNSET};

pub(super) struct DestResult {
    pub(super) routes: u64,
    pub(super) labels: Option<Vec<u16>>,
    /// Every route arrives, every hop on an operational, scheduled VL (the fast path went through).
    pub(super) clean: bool,
}

/// What the traffic of a switch's group (its own and its end nodes') does when the switch
/// sends a destination out on one port with one SL set: the states it leaves in.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Memo {
    pub(super) sls: u16,
    /// 0: not worked out, 1: ok, 2: a VL is not operational or not scheduled.
    pub(super) status: u8,
    pub(super) n: u8,
    pub(super) leave: [(u8, u16); MEMO_LEAVE],
}

/// The most states a memo entry holds (one per VL the group's traffic leaves on).
pub(super) const MEMO_LEAVE: usize = 8;

/// Memo entries per output port (a power of two).
pub(super) const MEMO_WAYS: usize = 8;

/// The memo entry of a port an SL set goes to.
pub(super) fn memo_way(sls: u16) -> usize {
    (usize::from(sls.wrapping_mul(0x9e37)) >> 8) & (MEMO_WAYS - 1)
}

/// Per-worker scratch space, reused across destinations.
pub(super) struct Scratch {
    /// For the current block: `columns[j * switches + k]` is switch index `k`'s LFT entry for
    /// the block's `j`th destination ([`LFT_UNSET`] when unset or the switch has no table).
    pub(super) columns: Vec<u8>,
    pub(super) step: Vec<Step>,
    pub(super) label: Vec<u16>,
    pub(super) mark: Vec<u8>,
    pub(super) chase: Vec<u32>,
    pub(super) states: Vec<Vec<(u8, u8, u16)>>,
    pub(super) touched: Vec<u32>,
    /// Switches whose attached end nodes send toward the current destination.
    pub(super) hca: Vec<bool>,
    pub(super) queued: Vec<bool>,
    pub(super) buckets: Vec<Vec<u32>>,
    /// Per output port (by port index) and [`memo_way`] of an SL set: the group's traffic
    /// there. Valid across destinations. Empty until the general fast path first runs.
    pub(super) memo: Vec<Memo>,
    /// Per output port (by port index), on one VL: the group's dependencies through it are
    /// recorded. Valid across destinations.
    pub(super) group_done: Vec<bool>,
    /// Per switch index: the SLs its group sends toward the current destination (set where
    /// [`Scratch::hca`] is).
    pub(super) group_sls: Vec<u16>,
    /// Per switch index: where its last per-switch path SL lookup ended.
    pub(super) sls_at: Vec<u32>,
    /// Per switch index: the VLs it sends the current destination on ([`one_map_path`]).
    pub(super) vl_mask: Vec<u16>,
    /// Per output port (by port index): the VLs its group's dependencies through it are
    /// recorded on ([`one_map_path`]). Valid across destinations.
    pub(super) group_vls: Vec<u16>,
    /// Per (input port or switch, VL): the index of that state in its switch's list. Empty
    /// until the general fast path first runs.
    pub(super) slot: Vec<u32>,
    pub(super) slot_keys: Vec<u32>,
}

impl Scratch {
    pub(super) fn new(net: &Net<'_>) -> Scratch {
        let s = net.switches.len();
        Scratch {
            columns: vec![LFT_UNSET; s * BLOCK],
            step: vec![Step::Fail(FailureReason::Unset); s],
            label: vec![NO_LABEL; s],
            mark: vec![0; s],
            chase: Vec::new(),
            states: vec![Vec::new(); s],
            touched: Vec::new(),
            hca: vec![false; s],
            group_sls: vec![0; s],
            sls_at: vec![0; s],
            queued: vec![false; s],
            buckets: Vec::new(),
            memo: Vec::new(),
            group_done: vec![false; net.ports as usize],
            vl_mask: vec![0; s],
            group_vls: vec![0; net.ports as usize],
            slot: Vec::new(),
            slot_keys: Vec::new(),
        }
    }

    /// Allocates what only the general fast path uses (its memo is tens of megabytes on the
    /// largest fabrics; the one-VL and one-map paths never touch it), once per worker.
    fn for_general_path(&mut self, net: &Net<'_>) {
        if self.memo.is_empty() {
            self.memo = vec![Memo::default(); net.ports as usize * MEMO_WAYS];
        }
        if self.slot.is_empty() {
            let s = net.switches.len();
            self.slot = vec![u32::MAX; (net.ports as usize + s) * usize::from(net.vls)];
        }
    }
}

/// The switch index where the destination's own port enters its switch (the switch itself
/// for a switch's LID): its group must not count the destination as a sender.
pub(super) fn owner_switch(net: &Net<'_>, d: Dest) -> usize {
    if net.is_switch(d.owner.0) {
        return net.switch_of(d.owner.0) as usize;
    }
    match net.port_link(d.owner.0, d.owner.1) {
        Some(crate::net::PortLink::Up { node, .. }) => net.switch_of(node) as usize,
        _ => usize::MAX,
    }
}

/// The SLs of a mask, lowest first (without testing all 16 bits).
pub(super) fn bits(mut m: u16) -> impl Iterator<Item = u8> {
    std::iter::from_fn(move || {
        if m == 0 {
            return None;
        }
        let b = m.trailing_zeros() as u8;
        m &= m - 1;
        Some(b)
    })
}

pub(super) fn sls_of(net: &Net<'_>, s: Source, d: Dest) -> SlSet {
    net.path_sls(s.node, s.port, d.lid)
}

pub(super) fn add_state(net: &Net<'_>, scr: &mut Scratch, k: u32, i: u8, vin: u8, sls: u16) {
    let Some(list) = scr.states.get_mut(k as usize) else {
        return;
    };
    if list.is_empty() {
        scr.touched.push(k);
    }
    let x = net.switches.get(k as usize).copied().unwrap_or(0);
    let base = if i == 0 {
        Some(net.ports + k)
    } else {
        net.dirport(x, i)
    };
    let key = base.map(|b| b * u32::from(net.vls) + u32::from(vin));
    match key.and_then(|key| scr.slot.get(key as usize).copied().map(|v| (key, v))) {
        Some((_, idx)) if idx != u32::MAX => {
            if let Some(e) = list.get_mut(idx as usize) {
                e.2 |= sls;
            }
        }
        Some((key, _)) => {
            if let Some(v) = scr.slot.get_mut(key as usize) {
                *v = list.len() as u32;
            }
            scr.slot_keys.push(key);
            list.push((i, vin, sls));
        }
        None => match list.iter_mut().find(|(a, b, _)| *a == i && *b == vin) {
            Some(e) => e.2 |= sls,
            None => list.push((i, vin, sls)),
        },
    }
}

/// Works out destination `d`, the `j`th of the current block.
#[expect(
    clippy::too_many_arguments,
    reason = "each argument is a separate borrow of the caller's state; a struct built for this one call would not read better"
)]
pub(super) fn dest_pass(
    net: &Net<'_>,
    sources: &[Source],
    attach: &Attach,
    d: Dest,
    j: usize,
    scr: &mut Scratch,
    deps: &DepSet,
    want_labels: bool,
) -> DestResult {
    let routes: u64 = if attach.uniform {
        attach.routes_by_destination(d, net.st.path_sl.for_destination(d.lid).0)
    } else if attach.grouped {
        // Each group's SLs toward this destination, once.
        for (k, list) in attach.by_switch.iter().enumerate() {
            if list.is_empty() {
                continue;
            }
            if let (Some(g), Some(at)) = (scr.group_sls.get_mut(k), scr.sls_at.get_mut(k)) {
                *g = net.group_sls_at(k as u32, d.lid, at);
            }
        }
        let owner_k = owner_switch(net, d);
        let grouped: u64 = attach
            .by_switch
            .iter()
            .enumerate()
            .filter(|(_, list)| !list.is_empty())
            .map(|(k, list)| {
                let senders = list
                    .iter()
                    .filter(|&&(_, j)| {
                        k != owner_k
                            || sources
                                .get(j as usize)
                                .is_none_or(|s| (s.node, s.port) != d.owner)
                    })
                    .count() as u64;
                senders * u64::from(scr.group_sls.get(k).copied().unwrap_or(0).count_ones())
            })
            .sum();
        let loose: u64 = attach
            .loose
            .iter()
            .filter_map(|&j| sources.get(j as usize))
            .filter(|s| (s.node, s.port) != d.owner)
            .map(|&s| u64::from(sls_of(net, s, d).0.count_ones()))
            .sum();
        grouped + loose
    } else {
        sources
            .iter()
            .filter(|s| (s.node, s.port) != d.owner)
            .map(|&s| u64::from(sls_of(net, s, d).0.count_ones()))
            .sum()
    };
    // 1. next hops and labels.
    let s = net.switches.len();
    for (k, &x) in net.switches.iter().enumerate() {
        let st = if net.alive(x) {
            let entry = scr.columns.get(j * s + k).copied().unwrap_or(LFT_UNSET);
            net.entry_step(x, (entry != LFT_UNSET).then_some(entry), d)
        } else {
            Step::Fail(FailureReason::PortDown { port: 0 })
        };
        if let Some(s) = scr.step.get_mut(k) {
            *s = st;
        }
        if let Some(m) = scr.mark.get_mut(k) {
            *m = 0;
        }
    }
    for k in 0..net.switches.len() as u32 {
        resolve_label(net, scr, k);
    }
    // 2. fast path: propagate states in decreasing label order, or on one VL just follow
    // the next hops.
    let uniform_sls = net.st.path_sl.for_destination(d.lid).0;
    let clean = if attach.one_vl && uniform_sls & !attach.vl0_sls == 0 {
        one_vl_path(net, attach, d, uniform_sls, scr, deps)
    } else if let Some(map) = attach.one_map {
        one_map_path(net, attach, d, &map, uniform_sls, scr, deps)
    } else {
        scr.for_general_path(net);
        fast_path(net, sources, attach, d, scr, deps)
    };
    for &k in &scr.touched {
        if let Some(l) = scr.states.get_mut(k as usize) {
            l.clear();
        }
        if let Some(h) = scr.hca.get_mut(k as usize) {
            *h = false;
        }
        if let Some(q) = scr.queued.get_mut(k as usize) {
            *q = false;
        }
        if let Some(m) = scr.vl_mask.get_mut(k as usize) {
            *m = 0;
        }
    }
    for &key in &scr.slot_keys {
        if let Some(v) = scr.slot.get_mut(key as usize) {
            *v = u32::MAX;
        }
    }
    scr.slot_keys.clear();
    scr.touched.clear();
    DestResult {
        routes,
        labels: (clean && want_labels).then(|| scr.label.clone()),
        clean,
    }
}

/// Gives switch `k` (and every switch on its chain) a label: hops to arrival, or none.
fn resolve_label(net: &Net<'_>, scr: &mut Scratch, k: u32) {
    if scr.mark.get(k as usize).copied().unwrap_or(2) != 0 {
        return;
    }
    scr.chase.clear();
    let mut cur = k;
    // Follow next hops until a resolved switch, an end, or the chase itself (a loop).
    let mut tail = loop {
        match scr.mark.get(cur as usize).copied().unwrap_or(2) {
            2 => break scr.label.get(cur as usize).copied().unwrap_or(NO_LABEL),
            1 => break NO_LABEL,
            _ => {}
        }
        if let Some(m) = scr.mark.get_mut(cur as usize) {
            *m = 1;
        }
        scr.chase.push(cur);
        match scr.step.get(cur as usize).copied() {
            Some(Step::Arrive) => {
                if let Some(l) = scr.label.get_mut(cur as usize) {
                    *l = 0;
                }
                scr.chase.pop();
                if let Some(m) = scr.mark.get_mut(cur as usize) {
                    *m = 2;
                }
                break 0;
            }
            Some(Step::Out { last: true, .. }) => {
                if let Some(l) = scr.label.get_mut(cur as usize) {
                    *l = 1;
                }
                scr.chase.pop();
                if let Some(m) = scr.mark.get_mut(cur as usize) {
                    *m = 2;
                }
                break 1;
            }
            Some(Step::Out { to, .. }) => {
                cur = net.switch_of(to);
                if cur == NO_INDEX {
                    break NO_LABEL;
                }
            }
            _ => break NO_LABEL,
        }
    };
    while let Some(c) = scr.chase.pop() {
        tail = if tail >= NO_LABEL - 1 {
            NO_LABEL
        } else {
            tail + 1
        };
        if let Some(l) = scr.label.get_mut(c as usize) {
            *l = tail;
        }
        if let Some(m) = scr.mark.get_mut(c as usize) {
            *m = 2;
        }
    }
}
