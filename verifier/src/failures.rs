//! Failed routes at scale. For a destination where some route fails, every required route's
//! fate is worked out from route *states* — (switch, input port, input VL, SL) — each
//! evaluated once per destination and memoised, so the work is bounded by the fabric (states)
//! plus one lookup per route, and nothing is stored per failed route. Failures are counted
//! into [`FailurePattern`]s (reason × source class × destination class × where), with exact
//! totals, distinct counts, the first few routes listed and walked as witnesses.
//!
//! Semantics are those of [`Net::walk`](crate::net::Net::walk): a route fails at the first
//! hop whose entry, port or VL is wrong; a route caught in a forwarding loop fails where it
//! first comes back to a switch (the switch where it entered the cycle), and its hops go on
//! counting for dependencies until a state repeats. Every hop a route takes records its
//! dependency, failed or not.
//!
//! Memoisation is sound because a route's future from a state depends only on that state,
//! except for loop detection: a state on a switch that lies on a forwarding cycle is only
//! looked up where a route *enters* the cycle (its fate then depends on the entry state only),
//! never in the middle of going round.

use crate::channels::DepSet;
use crate::net::{Dest, Net, PortLink, Source, Step, NO_INDEX};
use crate::report::{FailedRoute, FailureKind, FailurePattern, FailureReason, NodeClass, Witness};
use std::collections::BTreeMap;
use weft_fabric::SlSet;

/// A set of small integers.
#[derive(Clone, Debug)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn set(&mut self, i: usize) {
        if let Some(w) = self.0.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    }
    fn count(&self) -> u64 {
        self.0.iter().map(|w| u64::from(w.count_ones())).sum()
    }
    fn or(&mut self, other: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }
}

/// What all destinations share: source entries and node classes.
pub(crate) struct Shared {
    /// Per source: what is at the far end of its port (end nodes), and its injection VLs.
    peer: Vec<Option<PortLink>>,
    inj: Vec<[u8; 16]>,
    /// Per source: the SLs injected on an operational VL.
    inj_ok: Vec<u16>,
    /// Per source: the error for each SL injected on a VL that is not operational.
    inj_err: Vec<Vec<(u8, FailureReason)>>,
    /// Dense class id per node, and the classes.
    class_id: Vec<u16>,
    classes: Vec<NodeClass>,
    /// Route states: (port or switch slot) × VL × SL.
    states: usize,
}

impl Shared {
    pub(crate) fn new(net: &Net<'_>, sources: &[Source]) -> Shared {
        let mut peer = Vec::with_capacity(sources.len());
        let mut inj = Vec::with_capacity(sources.len());
        let mut inj_ok = Vec::with_capacity(sources.len());
        let mut inj_err = Vec::with_capacity(sources.len());
        for s in sources {
            if net.is_switch(s.node) {
                peer.push(None);
                inj.push([0; 16]);
                inj_ok.push(u16::MAX);
                inj_err.push(Vec::new());
                continue;
            }
            peer.push(net.port_link(s.node, s.port));
            let mut t = [0u8; 16];
            let mut ok = 0u16;
            let mut errs = Vec::new();
            for sl in 0..16u8 {
                match net.injection_vl(s.node, s.port, sl) {
                    Ok(v) => {
                        if let Some(slot) = t.get_mut(usize::from(sl)) {
                            *slot = v;
                        }
                        ok |= 1 << sl;
                    }
                    Err(r) => errs.push((sl, r)),
                }
            }
            inj.push(t);
            inj_ok.push(ok);
            inj_err.push(errs);
        }
        let mut classes: Vec<NodeClass> = net.class.clone();
        classes.sort();
        classes.dedup();
        let class_id = net
            .class
            .iter()
            .map(|c| classes.binary_search(c).unwrap_or(0) as u16)
            .collect();
        Shared {
            peer,
            inj,
            inj_ok,
            inj_err,
            class_id,
            classes,
            states: (net.ports as usize + net.switches.len()) * usize::from(net.vls) * 16,
        }
    }
}

/// Per-worker scratch space, reused across destinations.
pub(crate) struct Scratch {
    step: Vec<Step>,
    on_cycle: Vec<bool>,
    mark: Vec<u8>,
    chase: Vec<u32>,
    memo: Vec<u32>,
    memo_epoch: Vec<u32>,
    epoch: u32,
    stack: Vec<usize>,
    seen: Vec<usize>,
    /// Failure fates of this destination (fate id f ≥ 1 is `fates[f - 1]`; 0 arrives).
    fates: Vec<(u32, FailureReason)>,
    fate_ids: BTreeMap<(u32, FailureReason), u32>,
    /// (fate, source class, at source) → pattern index, for this destination.
    cache: Vec<u32>,
}

impl Scratch {
    pub(crate) fn new(net: &Net<'_>, sh: &Shared) -> Scratch {
        let s = net.switches.len();
        Scratch {
            step: vec![Step::Fail(FailureReason::Unset); s],
            on_cycle: vec![false; s],
            mark: vec![0; s],
            chase: Vec::new(),
            memo: vec![0; sh.states],
            memo_epoch: vec![0; sh.states],
            epoch: 0,
            stack: Vec::new(),
            seen: Vec::new(),
            fates: Vec::new(),
            fate_ids: BTreeMap::new(),
            cache: Vec::new(),
        }
    }
}

/// What a pattern is, before it is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    reason: FailureKind,
    source: NodeClass,
    destination: NodeClass,
    at_source: bool,
    at: NodeClass,
}

/// One listed failure: (destination LID, source index, SL, node it fails at, why).
type Listed = (u16, u32, u8, u32, FailureReason);

#[derive(Clone, Debug)]
struct PatAcc {
    routes: u64,
    sources: Bits,
    dests: Bits,
    at: Bits,
    listed: Vec<Listed>,
}

/// Patterns counted so far (by one worker, or merged).
pub(crate) struct Acc {
    index: BTreeMap<Key, usize>,
    pats: Vec<(Key, PatAcc)>,
    pub failed: u64,
    keep: usize,
    sizes: (usize, usize, usize),
}

impl Acc {
    /// An empty accumulator that keeps the first `keep` routes of each pattern.
    pub(crate) fn new(net: &Net<'_>, sources: usize, keep: usize) -> Acc {
        Acc {
            index: BTreeMap::new(),
            pats: Vec::new(),
            failed: 0,
            keep,
            sizes: (
                sources,
                usize::from(weft_fabric::MAX_UNICAST_LID) + 1,
                net.st.fabric.nodes().len(),
            ),
        }
    }

    fn pattern(&mut self, key: Key) -> usize {
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.pats.len();
        self.pats.push((
            key,
            PatAcc {
                routes: 0,
                sources: Bits::new(self.sizes.0),
                dests: Bits::new(self.sizes.1),
                at: Bits::new(self.sizes.2),
                listed: Vec::new(),
            },
        ));
        self.index.insert(key, i);
        i
    }

    /// Merges another worker's counts.
    pub(crate) fn merge(mut self, other: Acc) -> Acc {
        self.failed += other.failed;
        for (key, p) in other.pats {
            let i = self.pattern(key);
            if let Some((_, mine)) = self.pats.get_mut(i) {
                mine.routes += p.routes;
                mine.sources.or(&p.sources);
                mine.dests.or(&p.dests);
                mine.at.or(&p.at);
                mine.listed.extend(p.listed);
                mine.listed.sort_unstable();
                mine.listed.truncate(self.keep);
            }
        }
        self
    }
}

fn fate_id(scr: &mut Scratch, at: u32, reason: FailureReason) -> u32 {
    if let Some(&f) = scr.fate_ids.get(&(at, reason)) {
        return f;
    }
    scr.fates.push((at, reason));
    let f = scr.fates.len() as u32;
    scr.fate_ids.insert((at, reason), f);
    f
}

fn state_index(net: &Net<'_>, k: u32, x: u32, i: u8, v: u8, sl: u8) -> Option<usize> {
    let base = if i == 0 {
        net.ports + k
    } else {
        net.dirport(x, i)?
    };
    Some((base as usize * usize::from(net.vls) + usize::from(v)) * 16 + usize::from(sl))
}

/// Marks the switches on forwarding cycles toward the current destination.
fn find_cycles(net: &Net<'_>, scr: &mut Scratch) {
    let s = net.switches.len();
    for k in 0..s {
        if let Some(m) = scr.mark.get_mut(k) {
            *m = 0;
        }
        if let Some(c) = scr.on_cycle.get_mut(k) {
            *c = false;
        }
    }
    for start in 0..s as u32 {
        if scr.mark.get(start as usize).copied() != Some(0) {
            continue;
        }
        scr.chase.clear();
        let mut cur = start;
        loop {
            match scr.mark.get(cur as usize).copied() {
                Some(0) => {}
                Some(1) => {
                    // On the current chase: everything from `cur` on is a cycle.
                    let from = scr.chase.iter().position(|&c| c == cur).unwrap_or(0);
                    for &c in scr.chase.get(from..).unwrap_or(&[]) {
                        if let Some(o) = scr.on_cycle.get_mut(c as usize) {
                            *o = true;
                        }
                    }
                    break;
                }
                _ => break,
            }
            if let Some(m) = scr.mark.get_mut(cur as usize) {
                *m = 1;
            }
            scr.chase.push(cur);
            match scr.step.get(cur as usize) {
                Some(Step::Out {
                    to, last: false, ..
                }) => {
                    let next = net.switch_of(*to);
                    if next == NO_INDEX {
                        break;
                    }
                    cur = next;
                }
                _ => break,
            }
        }
        for &c in &scr.chase {
            if let Some(m) = scr.mark.get_mut(c as usize) {
                *m = 2;
            }
        }
    }
}

fn memo_get(scr: &Scratch, idx: usize) -> Option<u32> {
    (scr.memo_epoch.get(idx).copied() == Some(scr.epoch))
        .then(|| scr.memo.get(idx).copied())
        .flatten()
}

fn memo_set(scr: &mut Scratch, idx: usize, f: u32) {
    if let (Some(e), Some(m)) = (scr.memo_epoch.get_mut(idx), scr.memo.get_mut(idx)) {
        *e = scr.epoch;
        *m = f;
    }
}

/// The fate of a route entering the switches at switch index `k` on port `i` with VL `v` and
/// SL `sl`: 0 when it arrives, else a fate id. Records every dependency on the way.
fn evaluate(
    net: &Net<'_>,
    scr: &mut Scratch,
    deps: &DepSet,
    mut k: u32,
    mut i: u8,
    mut v: u8,
    sl: u8,
) -> u32 {
    scr.stack.clear();
    let result = loop {
        let x = net.switches.get(k as usize).copied().unwrap_or(0);
        let Some(idx) = state_index(net, k, x, i, v, sl) else {
            break fate_id(scr, x, FailureReason::PortMissing { port: i });
        };
        if let Some(f) = memo_get(scr, idx) {
            break f;
        }
        if scr.on_cycle.get(k as usize).copied().unwrap_or(false) {
            let f = around(net, scr, deps, k, i, v, sl);
            memo_set(scr, idx, f);
            break f;
        }
        let step = scr
            .step
            .get(k as usize)
            .copied()
            .unwrap_or(Step::Fail(FailureReason::Unset));
        let f = match step {
            Step::Arrive => 0,
            Step::Fail(r) => fate_id(scr, x, r),
            Step::Out {
                out,
                to,
                to_port,
                last,
            } => match net.switch_vl(x, i, out, sl) {
                Err(r) => fate_id(scr, x, r),
                Ok(vout) => {
                    if i != 0 {
                        deps.insert(k, i, v, out, vout);
                    }
                    if last {
                        0
                    } else {
                        scr.stack.push(idx);
                        k = net.switch_of(to);
                        i = to_port;
                        v = vout;
                        continue;
                    }
                }
            },
        };
        memo_set(scr, idx, f);
        break f;
    };
    let stack = std::mem::take(&mut scr.stack);
    for &idx in &stack {
        memo_set(scr, idx, result);
    }
    scr.stack = stack;
    result
}

/// A route entering a forwarding cycle at switch index `k`: round the cycle until it comes
/// back to `k` (a loop there) or a hop fails first; then on, for dependencies only, until a
/// state repeats.
fn around(
    net: &Net<'_>,
    scr: &mut Scratch,
    deps: &DepSet,
    start: u32,
    mut i: u8,
    mut v: u8,
    sl: u8,
) -> u32 {
    let mut k = start;
    let mut fate: Option<u32> = None;
    let mut first = true;
    scr.seen.clear();
    loop {
        let x = net.switches.get(k as usize).copied().unwrap_or(0);
        let Some(idx) = state_index(net, k, x, i, v, sl) else {
            return fate.unwrap_or_else(|| fate_id(scr, x, FailureReason::PortMissing { port: i }));
        };
        if !first && fate.is_none() && k == start {
            fate = Some(fate_id(scr, x, FailureReason::Loop));
        }
        if fate.is_some() && scr.seen.contains(&idx) {
            break;
        }
        scr.seen.push(idx);
        first = false;
        match scr.step.get(k as usize).copied() {
            Some(Step::Out {
                out,
                to,
                to_port,
                last: false,
            }) => match net.switch_vl(x, i, out, sl) {
                Err(r) => {
                    if fate.is_none() {
                        fate = Some(fate_id(scr, x, r));
                    }
                    break;
                }
                Ok(vout) => {
                    if i != 0 {
                        deps.insert(k, i, v, out, vout);
                    }
                    k = net.switch_of(to);
                    i = to_port;
                    v = vout;
                }
            },
            // A switch on a cycle forwards to the next one; anything else ends the walk.
            Some(Step::Fail(r)) => {
                if fate.is_none() {
                    fate = Some(fate_id(scr, x, r));
                }
                break;
            }
            _ => break,
        }
    }
    fate.unwrap_or(0)
}

/// Counts every failed route toward `d` into `acc` (and records every route's
/// dependencies). Returns the number of failed routes.
pub(crate) fn destination(
    net: &Net<'_>,
    sh: &Shared,
    sources: &[Source],
    d: Dest,
    scr: &mut Scratch,
    deps: &DepSet,
    acc: &mut Acc,
) -> u64 {
    scr.epoch = scr.epoch.wrapping_add(1);
    if scr.epoch == 0 {
        scr.memo_epoch.iter_mut().for_each(|e| *e = 0);
        scr.epoch = 1;
    }
    scr.fates.clear();
    scr.fate_ids.clear();
    scr.cache.clear();
    for (k, &x) in net.switches.iter().enumerate() {
        let st = if net.alive(x) {
            net.switch_step(x, d)
        } else {
            Step::Fail(FailureReason::PortDown { port: 0 })
        };
        if let Some(s) = scr.step.get_mut(k) {
            *s = st;
        }
    }
    find_cycles(net, scr);
    let ncls = sh.classes.len().max(1);
    let dst_class = net
        .class
        .get(d.owner.0 as usize)
        .copied()
        .unwrap_or(NodeClass {
            kind: weft_fabric::NodeKind::Hca,
            level: None,
        });
    let uniform = net.st.path_sl.destination_only();
    let uniform_sls = net.st.path_sl.for_destination(d.lid);
    let mut failed = 0u64;
    for (j, &s) in sources.iter().enumerate() {
        if (s.node, s.port) == d.owner {
            continue;
        }
        let sls: SlSet = if uniform {
            uniform_sls
        } else {
            net.path_sls(s.node, s.port, d.lid)
        };
        let mut m = sls.0;
        while m != 0 {
            let sl = m.trailing_zeros() as u8;
            m &= m - 1;
            let f = if net.is_switch(s.node) {
                evaluate(net, scr, deps, net.switch_of(s.node), 0, 0, sl)
            } else {
                match sh.peer.get(j).copied().flatten() {
                    None => fate_id(scr, s.node, FailureReason::PortMissing { port: s.port }),
                    Some(PortLink::Unwired) => {
                        fate_id(scr, s.node, FailureReason::PortUnwired { port: s.port })
                    }
                    Some(PortLink::Down) => {
                        fate_id(scr, s.node, FailureReason::PortDown { port: s.port })
                    }
                    Some(PortLink::Up { node, port }) => {
                        if sh.inj_ok.get(j).copied().unwrap_or(0) & (1 << sl) == 0 {
                            let r = sh
                                .inj_err
                                .get(j)
                                .and_then(|e| e.iter().find(|(s2, _)| *s2 == sl))
                                .map(|(_, r)| *r)
                                .unwrap_or(FailureReason::PortDown { port: s.port });
                            fate_id(scr, s.node, r)
                        } else if net.is_switch(node) {
                            let v = sh
                                .inj
                                .get(j)
                                .and_then(|t| t.get(usize::from(sl)))
                                .copied()
                                .unwrap_or(0);
                            evaluate(net, scr, deps, net.switch_of(node), port, v, sl)
                        } else if (node, port) == d.owner {
                            0
                        } else {
                            fate_id(scr, s.node, FailureReason::Misdelivered { port: s.port })
                        }
                    }
                }
            };
            if f == 0 {
                continue;
            }
            failed += 1;
            let Some(&(at, reason)) = scr.fates.get(f as usize - 1) else {
                continue;
            };
            let at_source = at == s.node;
            let sc = sh.class_id.get(s.node as usize).copied().unwrap_or(0) as usize;
            let cell = (f as usize - 1) * ncls * 2 + sc * 2 + usize::from(at_source);
            if scr.cache.len() <= cell {
                scr.cache.resize(cell + 1, u32::MAX);
            }
            let pid = match scr.cache.get(cell).copied() {
                Some(p) if p != u32::MAX => p as usize,
                _ => {
                    let key = Key {
                        reason: reason.kind(),
                        source: sh.classes.get(sc).copied().unwrap_or(dst_class),
                        destination: dst_class,
                        at_source,
                        at: net.class.get(at as usize).copied().unwrap_or(dst_class),
                    };
                    let p = acc.pattern(key);
                    if let Some(c) = scr.cache.get_mut(cell) {
                        *c = p as u32;
                    }
                    p
                }
            };
            let keep = acc.keep;
            if let Some((_, p)) = acc.pats.get_mut(pid) {
                p.routes += 1;
                p.sources.set(j);
                p.dests.set(usize::from(d.lid.0));
                p.at.set(at as usize);
                let item: Listed = (d.lid.0, j as u32, sl, at, reason);
                if p.listed.len() < keep || p.listed.last().is_some_and(|l| item < *l) {
                    let pos = p.listed.partition_point(|l| *l < item);
                    p.listed.insert(pos, item);
                    p.listed.truncate(keep);
                }
            }
        }
    }
    acc.failed += failed;
    failed
}

/// The patterns, largest first, each with its listed routes (at most `max_listed` over all
/// patterns) and `witnesses` of them walked hop by hop.
pub(crate) fn finish(
    net: &Net<'_>,
    sources: &[Source],
    acc: Acc,
    max_listed: usize,
    witnesses: usize,
) -> Vec<FailurePattern> {
    let mut pats: Vec<(Key, PatAcc)> = acc.pats;
    pats.sort_by(|a, b| b.1.routes.cmp(&a.1.routes).then(a.0.cmp(&b.0)));
    let mut budget = max_listed;
    let dest_of = |lid: u16| -> Option<Dest> {
        let (n, p) = net.owners.get(usize::from(lid)).copied().flatten()?;
        Some(Dest {
            lid: weft_fabric::Lid(lid),
            owner: (n.0, p.0),
        })
    };
    let mut out = Vec::with_capacity(pats.len());
    for (key, p) in pats {
        let take = p.listed.len().min(budget);
        budget -= take;
        let route = |&(lid, j, sl, at, reason): &Listed| -> Option<FailedRoute> {
            let s = sources.get(j as usize)?;
            let d = dest_of(lid)?;
            Some(FailedRoute {
                dlid: d.lid,
                src: net.endpoint(s.node, s.port),
                sl,
                dst: net.endpoint(d.owner.0, d.owner.1),
                at: net.node_ref(at),
                reason,
            })
        };
        let listed: Vec<FailedRoute> = p.listed.iter().take(take).filter_map(route).collect();
        let witnesses: Vec<Witness> = p
            .listed
            .iter()
            .take(witnesses)
            .filter_map(|&(lid, j, sl, at, reason)| {
                let s = *sources.get(j as usize)?;
                let d = dest_of(lid)?;
                let w = net.walk(s, d, sl, |_, _, _, _, _| {});
                Some(Witness {
                    at: net.node_ref(at),
                    reason,
                    route: net.route(s, d, sl, &w.hops),
                })
            })
            .collect();
        out.push(FailurePattern {
            reason: key.reason,
            source: key.source,
            destination: key.destination,
            at_source: key.at_source,
            at: key.at,
            routes: p.routes,
            sources: p.sources.count(),
            destinations: p.dests.count(),
            at_nodes: p.at.count(),
            listed,
            witnesses,
        });
    }
    out
}
