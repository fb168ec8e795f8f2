//! The fabric simulated in parts, one per core at most, that agree on time in windows of one
//! link latency (conservative parallel simulation).
//!
//! Every node belongs to one part: hosts in order, cut into equal runs, then each switch to
//! the part most of its neighbours are in (leaves, then the spines of their pod; switches
//! between parts, such as the cores, to the part with the fewest so far). A part runs the
//! events of its own nodes: a packet's arrival belongs to the channel's receiving end, a
//! credit's return to its sending end, and everything else happens where it was caused. Only
//! arrivals and credits cross from part to part, and both come at least a link latency after
//! what caused them, so every part can run the window `[t, t + link latency)` on its own and
//! hand over, at the window's end, what it sent.
//!
//! The result depends on the parts, never on the threads that run them: the parts are fixed
//! by the fabric, events of the same picosecond in one part pop in the order of their
//! sequence numbers, which count per part (and say which part pushed them), and what one part
//! reads of another's state (the output a stalled channel's next hop asked for, which
//! congestion trees record) is that state as the last window left it.

use super::queue::{Item, Queue};
use super::{Ev, Sim};
use crate::report::Packets;
use crate::{Params, SimError, SwitchBuffers, Traffic};
use weft_fabric::FabricState;

mod threads;

/// Hosts per part when the part count is chosen from the fabric.
const HOSTS_PER_PART: usize = 4096;
/// The most parts.
const MAX_PARTS: usize = 8;

/// A change of a buffer's target that another part reads: (buffer, target).
type TargetChange = (u32, Option<(u32, u8)>);

/// One part's share of the fabric and its exchanges with the others.
pub(super) struct Part {
    /// How many parts, and which this is (1 and 0: the whole fabric).
    pub(super) count: u64,
    pub(super) me: u64,
    nvl: usize,
    /// Per channel: the part of its receiving end and of its sending end.
    to: Vec<u8>,
    from: Vec<u8>,
    /// Per part: the events sent to it this window, and the changes of targets it reads.
    outbox: Vec<Vec<Item<Ev>>>,
    targets: Vec<Vec<TargetChange>>,
    /// The earliest event sent this window.
    sent_min: Option<u64>,
    /// Where this part's time stands: the end of the last window it ran.
    clock: u64,
    /// Handed over at the last window's end, to take in before the next.
    inbox: Vec<Vec<Item<Ev>>>,
    target_in: Vec<Vec<TargetChange>>,
}

impl Part {
    /// The whole fabric in one part.
    pub(super) fn whole() -> Part {
        Part {
            count: 1,
            me: 0,
            nvl: 1,
            to: Vec::new(),
            from: Vec::new(),
            outbox: Vec::new(),
            targets: Vec::new(),
            sent_min: None,
            clock: 0,
            inbox: Vec::new(),
            target_in: Vec::new(),
        }
    }

    /// The part whose events `ev` is, when the fabric is in parts (`None`: this one's, or
    /// whole).
    pub(super) fn owner_of(&self, ev: &Ev) -> Option<u64> {
        if self.count == 1 {
            return None;
        }
        let k = match *ev {
            Ev::Arrive { chan, .. } => self.to.get(chan as usize)?,
            Ev::Credit { chan, .. } => self.from.get(chan as usize)?,
            _ => return None,
        };
        Some(u64::from(*k))
    }

    /// Hands `item` to part `k` at the window's end.
    pub(super) fn send(&mut self, k: u64, item: Item<Ev>) {
        self.sent_min = Some(self.sent_min.map_or(item.t, |m| m.min(item.t)));
        if let Some(v) = self.outbox.get_mut(k as usize) {
            v.push(item);
        }
    }

    /// Switch buffer `b`'s head asks for `target` now: the part sending into it reads that
    /// (when a stall starts there), so it learns it at the window's end.
    pub(super) fn target_set(&mut self, b: u32, target: Option<(u32, u8)>) {
        if self.count == 1 {
            return;
        }
        let c = b as usize / self.nvl;
        if let Some(&k) = self.from.get(c) {
            if u64::from(k) != self.me {
                if let Some(v) = self.targets.get_mut(usize::from(k)) {
                    v.push((b, target));
                }
            }
        }
    }
}

/// Builds the simulation and runs it, in parts when the fabric is large enough and the
/// simulation can be cut ([`Sim::splittable`]); `parts` forces a part count (tests). Returns
/// the simulation with every part's books in it, ready for its report.
pub(super) fn run<'a>(
    state: &'a FabricState,
    traffic: &Traffic,
    params: &'a Params,
    seed: u64,
    parts: Option<usize>,
) -> Result<Sim<'a>, SimError> {
    let mut sim = Sim::new(state, traffic, params, seed)?;
    let count = parts
        .unwrap_or(sim.hosts.len() / HOSTS_PER_PART)
        .clamp(1, MAX_PARTS);
    if count == 1 || !sim.splittable() {
        sim.run();
        return Ok(sim);
    }
    let owner = sim.split(count);
    let mut sims = vec![sim];
    for _ in 1..count {
        sims.push(Sim::new(state, traffic, params, seed)?);
    }
    for (k, s) in sims.iter_mut().enumerate() {
        s.take_part(k, count, &owner);
    }
    drive(&mut sims);
    let mut all = sims.into_iter();
    let Some(mut first) = all.next() else {
        return Err(SimError::Param("no part to simulate".into()));
    };
    for s in all {
        first.absorb(s);
    }
    Ok(first)
}

/// Runs the parts window after window until every part is past the end (or, draining, has
/// nothing left), spread over as many threads as rayon has (one: every part in turn).
fn drive(sims: &mut [Sim<'_>]) {
    let Some(first) = sims.first() else {
        return;
    };
    let (window, end, drain) = (first.link_ps.max(1), first.end, first.p.drain);
    let threads = rayon::current_num_threads().clamp(1, sims.len());
    if let Some(t) = sims.iter_mut().filter_map(Sim::next_time).min() {
        threads::drive(sims, threads, t, window, end, drain);
    }
}

impl<'a> Sim<'a> {
    /// Whether the simulation can be cut into parts: no dFtree lanes (the loop's sweeps see the
    /// whole fabric, and its books, in every mode, are one part's), no multicast (a copy's books span switches), FIFO switch buffers (a virtual
    /// output queue's stall reads the next hop's queue), and a link latency to run windows
    /// of.
    fn splittable(&self) -> bool {
        self.dft.is_none()
            && self.mc.is_none()
            && self.p.switch_buffers == SwitchBuffers::Fifo
            && self.link_ps > 0
    }

    /// Each node's part: hosts cut in order into `count` runs of equal size, then, round
    /// after round, every node next to a placed one to the part most of its placed
    /// neighbours are in (ties: the part with the fewest nodes so far, then the lowest).
    fn split(&self, count: usize) -> Vec<u8> {
        const FREE: u8 = u8::MAX;
        let nodes = self.out_chan.len();
        let mut owner = vec![FREE; nodes];
        let mut size = vec![0usize; count];
        let hosts = self.hosts.len().max(1);
        for (h, x) in self.hosts.iter().enumerate() {
            let k = h * count / hosts;
            if let Some(o) = owner.get_mut(x.port.node.index()).filter(|o| **o == FREE) {
                *o = k as u8;
                if let Some(s) = size.get_mut(k) {
                    *s += 1;
                }
            }
        }
        let mut adj = vec![Vec::new(); nodes];
        for c in &self.chans {
            if let Some(a) = adj.get_mut(c.to.node.index()) {
                a.push(c.from.node.index());
            }
        }
        loop {
            let mut placed = Vec::new();
            for (n, near) in adj.iter().enumerate() {
                if owner.get(n) != Some(&FREE) {
                    continue;
                }
                let mut votes = vec![0usize; count];
                for &m in near {
                    if let Some(v) = owner.get(m).and_then(|&k| votes.get_mut(usize::from(k))) {
                        *v += 1;
                    }
                }
                let best = (0..count)
                    .filter(|&k| votes.get(k).is_some_and(|&v| v > 0))
                    .max_by_key(|&k| {
                        (
                            votes.get(k).copied(),
                            std::cmp::Reverse(size.get(k).copied()),
                            std::cmp::Reverse(k),
                        )
                    });
                if let Some(k) = best {
                    placed.push((n, k));
                    if let Some(s) = size.get_mut(k) {
                        *s += 1;
                    }
                }
            }
            if placed.is_empty() {
                break;
            }
            for (n, k) in placed {
                if let Some(o) = owner.get_mut(n) {
                    *o = k as u8;
                }
            }
        }
        // Nodes no host reaches (no event ever happens there): the first part.
        for o in &mut owner {
            if *o == FREE {
                *o = 0;
            }
        }
        owner
    }

    /// Makes this simulation part `k` of `count` with nodes placed by `owner`: it keeps the
    /// first events of its own hosts only.
    fn take_part(&mut self, k: usize, count: usize, owner: &[u8]) {
        let of = |n: weft_fabric::NodeId| owner.get(n.index()).copied().unwrap_or(0);
        self.part = Part {
            count: count as u64,
            me: k as u64,
            nvl: self.nvl,
            to: self.chans.iter().map(|c| of(c.to.node)).collect(),
            from: self.chans.iter().map(|c| of(c.from.node)).collect(),
            outbox: vec![Vec::new(); count],
            targets: vec![Vec::new(); count],
            sent_min: None,
            clock: 0,
            inbox: Vec::new(),
            target_in: Vec::new(),
        };
        let first: Vec<Item<Ev>> = self.heap.iter().copied().collect();
        self.heap = Queue::new();
        for item in first {
            let mine = match item.ev {
                Ev::Gen { host } => self
                    .hosts
                    .get(host as usize)
                    .is_some_and(|h| usize::from(of(h.port.node)) == k),
                _ => k == 0,
            };
            if mine {
                self.heap.push(item);
            }
        }
    }

    /// Runs the window of `window` picoseconds from `t`, after taking in what the other parts
    /// handed over (a window reaching the end of time has no end); returns the time of this
    /// part's next event, or of the first it sent, below `u64::MAX` (which means none to the
    /// threads: a window may start before the event it is for).
    fn window(&mut self, t: u64, window: u64) -> Option<u64> {
        let limit = t.checked_add(window).filter(|&l| l < u64::MAX);
        self.take_inbox();
        self.run_until(limit);
        self.part.clock = limit.unwrap_or(u64::MAX);
        let sent = self.part.sent_min.take();
        [self.next_time(), sent]
            .into_iter()
            .flatten()
            .min()
            .map(|x| x.min(u64::MAX - 1))
    }

    /// Takes in what the other parts handed over: their events for this part, and the
    /// targets of this part's channels' next hops.
    fn take_inbox(&mut self) {
        for v in std::mem::take(&mut self.part.inbox) {
            for item in v {
                // Sent at least a link latency ahead, so never into this part's past.
                debug_assert!(
                    item.t >= self.part.clock,
                    "an event from another part came late"
                );
                self.heap.push(item);
            }
        }
        for v in std::mem::take(&mut self.part.target_in) {
            for (b, t) in v {
                if let Some(x) = self.target.get_mut(b as usize) {
                    *x = t;
                }
            }
        }
    }

    /// The time of the next event, if any.
    fn next_time(&mut self) -> Option<u64> {
        let item = self.heap.pop()?;
        let t = item.t;
        self.heap.push(item);
        Some(t)
    }

    /// Adds another part's books to this one's: its counts and measurements, and the
    /// buffers, stalls and events pending of its own channels and hosts.
    fn absorb(&mut self, o: Sim<'_>) {
        let k = o.part.me;
        self.events += o.events;
        add_counts(&mut self.counts, &o.counts);
        for (a, b) in [
            (&mut self.recv, &o.recv),
            (&mut self.by_src, &o.by_src),
            (&mut self.to_hot, &o.to_hot),
            (&mut self.stall_ps, &o.stall_ps),
            (&mut self.sent_bytes, &o.sent_bytes),
        ] {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        self.receiving += o.receiving;
        self.latencies.extend_from_slice(&o.latencies);
        for (a, b) in self.job_lat.iter_mut().zip(o.job_lat) {
            a.extend(b);
        }
        self.max_fill = self.max_fill.max(o.max_fill);
        for (c, &from) in o.part.from.iter().enumerate() {
            if u64::from(from) != k {
                continue;
            }
            if let (Some(a), Some(b)) = (self.stall_to.get_mut(c), o.stall_to.get(c)) {
                a.clone_from(b);
            }
            if let (Some(a), Some(b)) = (self.stall_since.get_mut(c), o.stall_since.get(c)) {
                *a = *b;
            }
            if let (Some(a), Some(b)) = (self.blocker.get_mut(c), o.blocker.get(c)) {
                *a = *b;
            }
        }
        for (a, b) in self.bufs.iter_mut().zip(o.bufs) {
            if !b.is_empty() {
                *a = b;
            }
        }
        for item in o.heap.iter() {
            self.heap.push(*item);
        }
    }
}

/// Adds `b`'s packet counts to `a`'s.
fn add_counts(a: &mut Packets, b: &Packets) {
    a.generated += b.generated;
    a.refused_at_source += b.refused_at_source;
    a.injected += b.injected;
    a.delivered += b.delivered;
    a.delivered_in_window += b.delivered_in_window;
    a.dropped += b.dropped;
    a.in_flight += b.in_flight;
    a.queued_at_source += b.queued_at_source;
    a.copies += b.copies;
}
