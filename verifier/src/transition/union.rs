//! The union of a step's old and new entries, walked per destination: loops, routes that stop
//! arriving, and the channel dependencies any mix of landed writes creates.

use super::{BrokenRoute, Entry, ForwardingLoop, Lfts, LoopHop, SAME};
use crate::channels::DepSet;
use crate::net::{Attach, Dest, Net, Source, Step};
use weft_fabric::forward::{self, Mark, Next};
use weft_fabric::{Lid, LFT_UNSET};

/// Per-destination scratch.
pub(super) struct Scratch {
    pub(super) mark: Vec<u8>,
    /// Per switch index, whether its route arrives with the entries before (`ok[0]`) and
    /// after (`ok[1]`).
    pub(super) ok: [Vec<Mark<bool>>; 2],
    pub(super) path: Vec<u32>,
    pub(super) stack: Vec<(u32, u8)>,
    /// Per (port slot, SL): the VLs a route state was seen on (dense, reset through
    /// `touched`).
    pub(super) seen: Vec<u16>,
    pub(super) touched: Vec<u32>,
    pub(super) states: Vec<(u32, u8, u8, u8)>,
    /// Per output port slot: the SLs whose first-hop dependencies from the switch's sources
    /// are recorded, and the (SL, VL) pairs they leave on (valid across destinations of one
    /// pass: they go to one dependency set).
    pub(super) group: Vec<(u16, Vec<(u8, u8)>)>,
    /// Per switch index, the entry the step writes for the current destination ([`SAME`]:
    /// none).
    pub(super) over: Vec<u16>,
    /// Per switch index, whether every route of every mix from it arrives
    /// ([`Union::all_arrive`]; `WHITE`: not known yet).
    pub(super) sure: Vec<u8>,
}

impl Scratch {
    pub(super) fn new(net: &Net<'_>) -> Scratch {
        let n = net.switches.len();
        Scratch {
            mark: vec![0; n],
            ok: [vec![Mark::Unknown; n], vec![Mark::Unknown; n]],
            path: Vec::new(),
            stack: Vec::new(),
            seen: vec![0; (net.ports as usize + 1) * 16],
            touched: Vec::new(),
            states: Vec::new(),
            group: vec![(0, Vec::new()); net.ports as usize],
            over: vec![SAME; n],
            sure: vec![WHITE; n],
        }
    }
}

/// What one destination contributes.
#[derive(Default)]
pub(super) struct DestOut {
    pub(super) changed: u64,
    pub(super) forwarding_loop: Option<ForwardingLoop>,
    pub(super) broken: Option<BrokenRoute>,
    pub(super) failing_before: u64,
    pub(super) failing_after: u64,
}

/// One pass's view: the current tables, the step's writes per destination (in the scratch),
/// where dependencies go.
pub(super) struct Union<'a, S: Sink = DepSet> {
    pub(super) net: &'a Net<'a>,
    /// Per destination index, whether it is out of service (its routes may fail).
    pub(super) outage: &'a [bool],
    pub(super) cur: &'a Lfts,
    /// Per destination index, its failing routes as `cur` routes it; empty when not known
    /// (a destination with none needs no walk of the routes before the step).
    pub(super) failing: &'a [u64],
    pub(super) sources: &'a [Source],
    pub(super) attach: &'a Attach,
    pub(super) deps: &'a S,
    pub(super) starts: &'a [usize],
}

/// Where a walk's dependencies go: a dependency set, or a probe for some of them.
pub(super) trait Sink: Sync {
    /// Records the dependency `(in port, in VL) → (out port, out VL)` at switch index `k`.
    fn insert(&self, k: u32, i: u8, vin: u8, o: u8, vout: u8);
}

impl Sink for DepSet {
    fn insert(&self, k: u32, i: u8, vin: u8, o: u8, vout: u8) {
        DepSet::insert(self, k, i, vin, o, vout);
    }
}

/// Looks for given dependencies: which of them a walk creates.
pub(super) struct Probe<'w> {
    /// The dependencies looked for, sorted, each as `(switch index, in port, in VL, out
    /// port, out VL)`.
    pub(super) wanted: &'w [(u32, u8, u8, u8, u8)],
    /// Per wanted dependency, whether the walk created it.
    pub(super) hit: Vec<std::sync::atomic::AtomicBool>,
}

impl Sink for Probe<'_> {
    fn insert(&self, k: u32, i: u8, vin: u8, o: u8, vout: u8) {
        if let Ok(at) = self.wanted.binary_search(&(k, i, vin, o, vout)) {
            if let Some(h) = self.hit.get(at) {
                h.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// A destination's writes in one step: per write, the switch index and the port packed in
/// four bytes ([`write_of`]; a step of an 11 664-node engine change holds sixteen million).
pub(super) type Writes = Vec<u32>;

/// A write packed for [`Writes`]: switch index `k` (below 2²⁴: switches are far fewer) and
/// `port`.
pub(super) fn packed(k: u32, port: u8) -> u32 {
    k << 8 | u32::from(port)
}

/// The (switch index, port) of a packed write.
pub(super) fn write_of(w: u32) -> (u32, u8) {
    (w >> 8, (w & 0xFF) as u8)
}

/// Lays a destination's `writes` over the current entries (per switch index, [`SAME`] where
/// the step leaves the entry).
pub(super) fn set_over(over: &mut [u16], writes: &[u32]) {
    for (k, port) in writes.iter().map(|&w| write_of(w)) {
        if let Some(o) = over.get_mut(k as usize) {
            *o = u16::from(port);
        }
    }
}

/// Takes `writes` off the overlay again ([`set_over`]), for the next destination.
pub(super) fn clear_over(over: &mut [u16], writes: &[u32]) {
    for (k, _) in writes.iter().map(|&w| write_of(w)) {
        if let Some(o) = over.get_mut(k as usize) {
            *o = SAME;
        }
    }
}

/// A write of a LID no destination owns: (switch index, LID, port).
pub(super) type Unowned = (usize, Lid, u8);

/// DFS colours.
pub(super) const WHITE: u8 = 0;
pub(super) const GREY: u8 = 1;
pub(super) const BLACK: u8 = 2;

impl<S: Sink> Union<'_, S> {
    /// The entries of switch index `k` for `lid`: before and after the step (`None`: unset).
    pub(super) fn entries(&self, k: usize, lid: Lid, over: &[u16]) -> (Option<u8>, Option<u8>) {
        let before = Some(self.cur.get(k, usize::from(lid.0))).filter(|&p| p != LFT_UNSET);
        let after = match over.get(k).copied() {
            Some(v) if v != SAME => (v as u8 != LFT_UNSET).then_some(v as u8),
            _ => before,
        };
        (before, after)
    }

    /// The one or two (entry, step) options of switch index `k` toward `d`.
    pub(super) fn options(&self, k: usize, d: Dest, over: &[u16]) -> ([(Entry, Step); 2], usize) {
        let x = self.net.switches.get(k).copied().unwrap_or(u32::MAX);
        let (b, a) = self.entries(k, d.lid, over);
        let sb = self.net.entry_step(x, b, d);
        if b == a {
            return ([(Entry::Unchanged, sb), (Entry::Unchanged, sb)], 1);
        }
        let sa = self.net.entry_step(x, a, d);
        ([(Entry::Before, sb), (Entry::After, sa)], 2)
    }

    /// Whether switch index `k`'s route toward `d` arrives with the entries before the step
    /// (`after` false) or after it, memoised in `ok` ([`forward::memo_walk`]: a loop, or a
    /// next hop that is no switch, fails).
    pub(super) fn arrives(
        &self,
        k: usize,
        d: Dest,
        after: bool,
        over: &[u16],
        ok: &mut [Mark<bool>],
        path: &mut Vec<u32>,
    ) -> bool {
        forward::memo_walk(
            ok,
            path,
            k,
            false,
            |a| a,
            |at| {
                let x = self.net.switches.get(at).copied().unwrap_or(u32::MAX);
                let (b, a) = self.entries(at, d.lid, over);
                match self.net.entry_step(x, if after { a } else { b }, d) {
                    Step::Arrive | Step::Out { last: true, .. } => Next::End(true),
                    Step::Out { to, .. } => Next::To(self.net.switch_of(to) as usize),
                    Step::Fail(_) => Next::End(false),
                }
            },
        )
    }

    /// Everything about destination `d` (index `i`) with the step's writes `writes` (switch
    /// index, port): its loops, broken routes (none asked of a destination out of service),
    /// failing routes and dependencies.
    pub(super) fn destination(
        &self,
        i: usize,
        d: Dest,
        writes: &[u32],
        scr: &mut Scratch,
    ) -> DestOut {
        let may_fail = self.outage.get(i).copied().unwrap_or(false);
        let mut out = DestOut::default();
        let mut over = std::mem::take(&mut scr.over);
        set_over(&mut over, writes);
        for (k, _) in writes.iter().map(|&w| write_of(w)) {
            let (b, a) = self.entries(k as usize, d.lid, &over);
            if b != a {
                out.changed += 1;
            }
        }
        let changed = out.changed > 0;
        for ok in &mut scr.ok {
            ok.fill(Mark::Unknown);
        }
        // Loops: a DFS over the union from every start (a destination the step leaves
        // alone forwards as before).
        if changed {
            scr.mark.iter_mut().for_each(|m| *m = WHITE);
            for &s in self.starts {
                out.forwarding_loop = self.find_loop(s, d, &over, scr);
                if out.forwarding_loop.is_some() {
                    break;
                }
            }
        }
        // Routes that arrive before must arrive in every mix: everything the union reaches
        // from their start switch must arrive or go on.
        scr.sure.fill(WHITE);
        // No route toward `d` fails now: every start's arrives before the step, unwalked.
        let all_before = self.failing.get(i) == Some(&0);
        for &s in self.starts {
            let count = self.attach.by_switch.get(s).map_or(0, |v| v.len() as u64);
            let [ok_before, ok_after] = &mut scr.ok;
            let works = all_before || self.arrives(s, d, false, &over, ok_before, &mut scr.path);
            // Every mix's route arriving, the route after the step (one of them) does.
            let every_mix = changed
                && out.forwarding_loop.is_none()
                && self.all_arrive(s, d, &over, &mut scr.sure, &mut scr.stack);
            let works_after = if !changed {
                works
            } else {
                every_mix || self.arrives(s, d, true, &over, ok_after, &mut scr.path)
            };
            if !works {
                out.failing_before += count;
            }
            if !works_after {
                out.failing_after += count;
            }
            if works
                && changed
                && !may_fail
                && out.broken.is_none()
                && out.forwarding_loop.is_none()
                && !every_mix
            {
                out.broken = self.find_break(s, d, &over);
            }
        }
        if out.forwarding_loop.is_none() {
            self.dependencies(d, &over, scr);
        }
        clear_over(&mut over, writes);
        scr.over = over;
        out
    }

    /// A cycle in the union reachable from switch index `s`, as hops.
    pub(super) fn find_loop(
        &self,
        s: usize,
        d: Dest,
        over: &[u16],
        scr: &mut Scratch,
    ) -> Option<ForwardingLoop> {
        if scr.mark.get(s).copied() != Some(WHITE) {
            return None;
        }
        // Stack of (switch index, next option to try).
        scr.stack.clear();
        scr.stack.push((s as u32, 0));
        if let Some(m) = scr.mark.get_mut(s) {
            *m = GREY;
        }
        while let Some(&(k, i)) = scr.stack.last() {
            let (opts, count) = self.options(k as usize, d, over);
            if usize::from(i) >= count {
                scr.stack.pop();
                if let Some(m) = scr.mark.get_mut(k as usize) {
                    *m = BLACK;
                }
                continue;
            }
            if let Some(top) = scr.stack.last_mut() {
                top.1 += 1;
            }
            let Some(&(
                _,
                Step::Out {
                    to, last: false, ..
                },
            )) = opts.get(usize::from(i))
            else {
                continue;
            };
            let next = self.net.switch_of(to) as usize;
            match scr.mark.get(next).copied() {
                Some(WHITE) => {
                    if let Some(m) = scr.mark.get_mut(next) {
                        *m = GREY;
                    }
                    scr.stack.push((next as u32, 0));
                }
                Some(GREY) => return Some(self.loop_witness(next, d, over, &scr.stack)),
                _ => {}
            }
        }
        None
    }

    /// The loop closed back to `first` on the DFS `stack` (each entry's option already
    /// advanced past the one taken).
    pub(super) fn loop_witness(
        &self,
        first: usize,
        d: Dest,
        over: &[u16],
        stack: &[(u32, u8)],
    ) -> ForwardingLoop {
        let from = stack
            .iter()
            .position(|&(k, _)| k as usize == first)
            .unwrap_or(0);
        let hops = stack
            .get(from..)
            .unwrap_or(&[])
            .iter()
            .map(|&(k, i)| {
                let (opts, _) = self.options(k as usize, d, over);
                let (entry, step) = opts
                    .get(usize::from(i.saturating_sub(1)))
                    .copied()
                    .unwrap_or((Entry::Unchanged, Step::Arrive));
                let x = self.net.switches.get(k as usize).copied().unwrap_or(0);
                LoopHop {
                    node: self.net.node_ref(x),
                    out_port: match step {
                        Step::Out { out, .. } => out,
                        _ => 0,
                    },
                    entry,
                }
            })
            .collect();
        ForwardingLoop {
            dlid: d.lid,
            dst: self.net.endpoint(d.owner.0, d.owner.1),
            hops,
        }
    }

    /// Whether every route of every mix from switch index `s` toward `d` arrives (the union
    /// from `s` is loop-free here), memoised in `sure` across starts: `BLACK` arrives, `GREY`
    /// reaches a failure, `WHITE` not known yet; `stack` is scratch. Only where this fails is
    /// the witness looked for ([`Union::find_break`]).
    pub(super) fn all_arrive(
        &self,
        s: usize,
        d: Dest,
        over: &[u16],
        sure: &mut [u8],
        stack: &mut Vec<(u32, u8)>,
    ) -> bool {
        // `IN_WORK`: on the stack.
        const IN_WORK: u8 = 3;
        match sure.get(s).copied() {
            Some(BLACK) => return true,
            Some(WHITE) => {}
            _ => return false,
        }
        let fail = |stack: &[(u32, u8)], sure: &mut [u8]| {
            for &(k, _) in stack {
                if let Some(m) = sure.get_mut(k as usize) {
                    *m = GREY;
                }
            }
        };
        stack.clear();
        stack.push((s as u32, 0));
        if let Some(m) = sure.get_mut(s) {
            *m = IN_WORK;
        }
        while let Some(&(k, i)) = stack.last() {
            let (opts, count) = self.options(k as usize, d, over);
            if usize::from(i) >= count {
                stack.pop();
                if let Some(m) = sure.get_mut(k as usize) {
                    *m = BLACK;
                }
                continue;
            }
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            match opts.get(usize::from(i)).map(|o| o.1) {
                Some(Step::Arrive | Step::Out { last: true, .. }) => {}
                Some(Step::Out { to, .. }) => {
                    let next = self.net.switch_of(to) as usize;
                    match sure.get(next).copied() {
                        Some(WHITE) => {
                            if let Some(m) = sure.get_mut(next) {
                                *m = IN_WORK;
                            }
                            stack.push((next as u32, 0));
                        }
                        Some(BLACK) => {}
                        // A failure below, or a loop (not here: the union is loop-free).
                        _ => {
                            fail(stack, sure);
                            return false;
                        }
                    }
                }
                Some(Step::Fail(_)) | None => {
                    fail(stack, sure);
                    return false;
                }
            }
        }
        true
    }

    /// A failure the union reaches from switch index `s` (whose route arrives before).
    pub(super) fn find_break(&self, s: usize, d: Dest, over: &[u16]) -> Option<BrokenRoute> {
        let mut seen = vec![s];
        let mut todo = vec![s];
        while let Some(k) = todo.pop() {
            let (opts, count) = self.options(k, d, over);
            for &(entry, step) in opts.iter().take(count) {
                match step {
                    Step::Arrive | Step::Out { last: true, .. } => {}
                    Step::Out { to, .. } => {
                        let next = self.net.switch_of(to) as usize;
                        if !seen.contains(&next) {
                            seen.push(next);
                            todo.push(next);
                        }
                    }
                    Step::Fail(reason) => {
                        let node = |k: usize| {
                            self.net
                                .node_ref(self.net.switches.get(k).copied().unwrap_or(0))
                        };
                        return Some(BrokenRoute {
                            from: node(s),
                            dlid: d.lid,
                            dst: self.net.endpoint(d.owner.0, d.owner.1),
                            at: node(k),
                            entry,
                            reason,
                        });
                    }
                }
            }
        }
        None
    }

    /// [`Union::dependencies`] toward `d` with the step's writes `writes` (switch index,
    /// port) over the current entries.
    pub(super) fn dependencies_over(&self, d: Dest, writes: &[u32], scr: &mut Scratch) {
        let mut over = std::mem::take(&mut scr.over);
        set_over(&mut over, writes);
        self.dependencies(d, &over, scr);
        clear_over(&mut over, writes);
        scr.over = over;
    }

    /// Records every dependency any route toward `d` creates in any mix (the union is
    /// loop-free here).
    pub(super) fn dependencies(&self, d: Dest, over: &[u16], scr: &mut Scratch) {
        let net = self.net;
        for &t in &scr.touched {
            if let Some(v) = scr.seen.get_mut(t as usize) {
                *v = 0;
            }
        }
        scr.touched.clear();
        scr.states.clear();
        let uniform = self
            .attach
            .uniform
            .then(|| net.st.path_sl.for_destination(d.lid).0);
        // The first hop of the sources at each start switch: their dependencies, then the
        // states they leave in. Where the sources of a switch share their SLs, what they do
        // through one output port does not depend on the destination: worked out once per
        // (port, SLs) and kept (`scr.group`).
        let mut leave: Vec<(u8, u8)> = Vec::new();
        for &k in self.starts {
            let Some(list) = self.attach.by_switch.get(k) else {
                continue;
            };
            let x = net.switches.get(k).copied().unwrap_or(u32::MAX);
            let shared =
                uniform.or_else(|| self.attach.grouped.then(|| net.group_sls(k as u32, d.lid)));
            let (opts, count) = self.options(k, d, over);
            for (out, to, to_port, last) in leaving(&opts, count) {
                leave.clear();
                let memo = shared.and_then(|sls| {
                    let slot = net.dirport(x, out)? as usize;
                    let (done, kept) = scr.group.get_mut(slot)?;
                    if *done & sls != sls {
                        let mut fresh = Vec::new();
                        for &(in_port, j) in list {
                            self.first_hop(x, k, in_port, j, sls & !*done, out, &mut fresh);
                        }
                        kept.extend(fresh);
                        kept.sort_unstable();
                        kept.dedup();
                        *done |= sls;
                    }
                    Some((slot, sls))
                });
                match memo {
                    Some((slot, sls)) => {
                        if let Some((_, kept)) = scr.group.get(slot) {
                            leave.extend(kept.iter().filter(|&&(sl, _)| sls & (1 << sl) != 0));
                        }
                    }
                    None => {
                        for &(in_port, j) in list {
                            let sls = match (shared, self.sources.get(j as usize)) {
                                (Some(s), _) => s,
                                (None, Some(src)) => net.path_sls(src.node, src.port, d.lid).0,
                                (None, None) => continue,
                            };
                            self.first_hop(x, k, in_port, j, sls, out, &mut leave);
                        }
                        leave.sort_unstable();
                        leave.dedup();
                    }
                }
                if last {
                    continue;
                }
                let next = net.switch_of(to);
                for &(sl, vout) in &leave {
                    if first_visit(net, scr, next, to_port, sl, vout) {
                        scr.states.push((next, to_port, sl, vout));
                    }
                }
            }
        }
        while let Some((k, i, sl, vin)) = scr.states.pop() {
            let x = net.switches.get(k as usize).copied().unwrap_or(u32::MAX);
            let (opts, count) = self.options(k as usize, d, over);
            for (out, to, to_port, last) in leaving(&opts, count) {
                let Ok(vout) = net.switch_vl(x, i, out, sl) else {
                    continue;
                };
                if i != 0 {
                    self.deps.insert(k, i, vin, out, vout);
                }
                if !last {
                    let next = net.switch_of(to);
                    if first_visit(net, scr, next, to_port, sl, vout) {
                        scr.states.push((next, to_port, sl, vout));
                    }
                }
            }
        }
    }

    /// Source `j`, entering switch `x` (index `k`) on `in_port` (0: the switch's own
    /// traffic), sends SLs `sls` out of `out`: its dependencies recorded, the (SL, VL) it
    /// leaves on pushed to `leave`.
    #[expect(
        clippy::too_many_arguments,
        reason = "each argument is a separate borrow of the caller's state; a struct built for this one call would not read better"
    )]
    pub(super) fn first_hop(
        &self,
        x: u32,
        k: usize,
        in_port: u8,
        j: u32,
        sls: u16,
        out: u8,
        leave: &mut Vec<(u8, u8)>,
    ) {
        let net = self.net;
        let Some(src) = self.sources.get(j as usize) else {
            return;
        };
        for sl in 0..16u8 {
            if sls & (1 << sl) == 0 {
                continue;
            }
            let vin = if in_port == 0 {
                0
            } else {
                let vl = self
                    .attach
                    .inj
                    .get(j as usize)
                    .and_then(|t| t.get(usize::from(sl)))
                    .copied()
                    .unwrap_or(0);
                if net.vl_ok(src.node, src.port, vl).is_err() {
                    continue;
                }
                vl
            };
            let Ok(vout) = net.switch_vl(x, in_port, out, sl) else {
                continue;
            };
            if in_port != 0 {
                self.deps.insert(k as u32, in_port, vin, out, vout);
            }
            leave.push((sl, vout));
        }
    }
}

/// The options that leave the switch: (out port, next node, its port, whether it is the last
/// hop).
pub(super) fn leaving(
    opts: &[(Entry, Step); 2],
    count: usize,
) -> impl Iterator<Item = (u8, u32, u8, bool)> + '_ {
    opts.iter().take(count).filter_map(|&(_, step)| match step {
        Step::Out {
            out,
            to,
            to_port,
            last,
        } => Some((out, to, to_port, last)),
        _ => None,
    })
}

/// Marks the route state (switch index `k`, input port, SL, VL) seen; whether it is new.
pub(super) fn first_visit(
    net: &Net<'_>,
    scr: &mut Scratch,
    k: u32,
    port: u8,
    sl: u8,
    vl: u8,
) -> bool {
    let x = net.switches.get(k as usize).copied().unwrap_or(u32::MAX);
    // Port 0 (a switch's own traffic) never re-enters; ports from 1 have their slot.
    let Some(slot) = net.dirport(x, port) else {
        return true;
    };
    let i = slot as usize * 16 + usize::from(sl & 15);
    let Some(v) = scr.seen.get_mut(i) else {
        return true;
    };
    let bit = 1u16 << (vl & 15);
    if *v & bit != 0 {
        return false;
    }
    if *v == 0 {
        scr.touched.push(i as u32);
    }
    *v |= bit;
    true
}
