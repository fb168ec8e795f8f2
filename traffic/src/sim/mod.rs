//! The event-driven engine (see the crate's documentation for what it models).
//!
//! Time is in picoseconds. Every directed live link is a *channel*; its receiving end has one
//! input buffer per VL (at a switch; a host consumes at line rate), its sending end one
//! output with credits per VL, an arbiter, and the requests of the buffers whose head packet
//! wants to leave on it. Hosts have one source queue (a buffer) per VL.

mod build;
mod multicast;
mod parts;
mod queue;
mod report;
mod unicast;

use crate::arb::Arbiter;
use crate::pattern::{Active, Pattern, GROUP};
use crate::report::{
    ClassThroughput, Classes, JobReport, Latency, LinkLoad, McReport, Packets, Report, Throughput,
};
use crate::sim_dftree::Loop;
use crate::{DftreeMode, HostModel, Params, SimError, SwitchBuffers, Traffic};
use parts::Part;
use queue::{Item, Queue};
use std::collections::VecDeque;
use std::time::Instant;
use weft_fabric::rng::SplitMix64;
use weft_fabric::{
    FabricState, Lid, Mlid, NodeKind, PortMask, PortNum, PortRef, Sl, SwitchState, LFT_UNSET,
};

/// Credits are 64-byte blocks.
const BLOCK: u32 = 64;
/// Picoseconds per nanosecond.
const PS: u64 = 1000;
/// No channel.
const NONE: u32 = u32::MAX;
/// A stall's blocker: the end node the channel feeds (it drains slower than its link).
pub(crate) const END_NODE: u32 = u32::MAX - 1;

#[derive(Clone, Copy, Debug)]
struct Pkt {
    src: u32,
    dst: u32,
    dlid: u16,
    sl: u8,
    /// The VL it travels on (on the link it is on, or it will leave a source queue on).
    vl: u8,
    born: u64,
    /// When its head arrived where it is.
    head_at: u64,
    /// When its tail arrived (or will) where it is.
    tail_at: u64,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// A packet's head arrives at the far end of a channel (into a switch: a switch latency
    /// later, when it may be routed).
    Arrive { chan: u32, pkt: Pkt },
    /// A switch buffer's next head packet may be routed (it came up when the one before
    /// left).
    Ready { buf: u32 },
    /// A channel's output finished sending a packet out of input channel `from` (`NONE`: a
    /// host's source queue, or not counted: no limit of parallel sends).
    Free { chan: u32, from: u32 },
    /// Credits come back to a channel's output.
    Credit { chan: u32, vl: u8, blocks: u32 },
    /// A host generates.
    Gen { host: u32 },
    /// dFtree: a performance sweep.
    Sweep,
    /// dFtree: a sweep's moves reach the sources.
    Repath { idx: u32 },
}

struct Chan {
    from: PortRef,
    to: PortRef,
    /// The host at the receiving end, if a host.
    to_host: Option<u32>,
    /// Whether the receiving end is a switch (with input buffers).
    to_switch: bool,
    mbps: u64,
    /// Into an end node: the time it takes to drain one packet, in picoseconds (its
    /// serialisation time at the link's rate times the receive rate).
    drain_ps: u64,
}

/// What sending on a channel and arriving over it read, kept apart from [`Chan`] so that a
/// packet's hop touches 16 bytes of it.
#[derive(Clone, Copy)]
struct Wire {
    /// A packet's serialisation time on the channel, in picoseconds.
    ser_ps: u64,
    /// Whether the receiving end is a switch, and the host it is if a host ([`NONE`]: not a
    /// host).
    to_switch: bool,
    to_host: u32,
}

struct Host {
    port: PortRef,
    /// The switch its cable leads to ([`FabricState::source_switch`]).
    via: Option<weft_fabric::NodeId>,
    /// Per SL: the VL it injects on ([`FabricState::injection_vl`]).
    inj: [u8; 16],
    lid: Lid,
    chan: u32,
    rng: SplitMix64,
    interval: u64,
    /// A generated packet its queue had no room for, waiting (host models `block`, `fifo`).
    held: Option<Pkt>,
}

/// What routing a unicast packet out of a channel's receiving switch reads, gathered per
/// channel so that a route touches this, the LFT entry and the output row only.
#[derive(Clone, Copy)]
struct Hop<'a> {
    /// The switch's LFT (empty: not a switch, or no tables).
    lft: &'a [u8],
    /// Where the switch's ports' channels start in [`Sim::out_flat`], and how many there are.
    out_at: u32,
    out_len: u32,
    in_port: PortNum,
    vl: VlMap<'a>,
}

/// A switch's SL→VL map as routing reads it.
#[derive(Clone, Copy)]
enum VlMap<'a> {
    /// No tables: every SL takes VL 0.
    Zero,
    /// No rows: every (input, output) pair maps by this.
    All([u8; 16]),
    /// Rows: looked up per pair ([`SwitchState::vl`]).
    Rows(&'a SwitchState),
}

/// One VL of a channel's output, what a send reads together.
#[derive(Clone)]
#[repr(align(64))]
struct OutVl {
    /// Credits (blocks) at the far end.
    credits: u32,
    /// The buffer served last ([`NONE`]: none yet).
    last: u32,
    /// The buffers whose head packet asks for it.
    reqs: Reqs,
}

/// Buffers asking in [`Reqs`]' own 64 bytes, so that a route's request and an output's
/// choice read one cache line; more go beside.
const INLINE: usize = 6;

/// The buffers asking for an output VL, as a set (every use of it is independent of order).
#[derive(Clone, Default)]
struct Reqs {
    len: u32,
    inline: [u32; INLINE],
    more: Vec<u32>,
}

impl Reqs {
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn push(&mut self, b: u32) {
        match self.inline.get_mut(self.len as usize) {
            Some(x) => *x = b,
            None => self.more.push(b),
        }
        self.len += 1;
    }

    fn iter(&self) -> impl Iterator<Item = &u32> {
        let n = (self.len as usize).min(INLINE);
        self.inline.iter().take(n).chain(self.more.iter())
    }

    /// Takes `b` out, every time it is in.
    fn remove(&mut self, b: u32) {
        let n = (self.len as usize).min(INLINE);
        let once =
            self.more.is_empty() && self.inline.iter().take(n).filter(|&&x| x == b).count() <= 1;
        if once {
            if let Some(i) = self.inline.iter().take(n).position(|&x| x == b) {
                // Order does not matter: the last one takes its place.
                let last = self.inline.get(n - 1).copied().unwrap_or(b);
                if let Some(x) = self.inline.get_mut(i) {
                    *x = last;
                }
                self.len -= 1;
            }
            return;
        }
        let keep: Vec<u32> = self.iter().copied().filter(|&x| x != b).collect();
        self.len = 0;
        self.more.clear();
        for x in keep {
            self.push(x);
        }
    }
}

/// Multicast traffic: the group and what it delivered.
struct Mc {
    mlid: Mlid,
    sl: Sl,
    /// Per host: a member (it sends), a member the tree delivers to (it receives).
    sender: Vec<bool>,
    receiver: Vec<bool>,
    /// Per host: group payload delivered to it in the window, in bytes.
    bytes: Vec<u64>,
    delivered: u64,
    no_entry: u64,
    non_receiver: u64,
    /// Per switch input buffer: copies of its head packet still to send, and when the
    /// tail of the last one sent leaves.
    left: Vec<u32>,
    gone: Vec<u64>,
}

/// The simulation's whole state.
struct Sim<'a> {
    st: &'a FabricState,
    p: &'a Params,
    nvl: usize,
    pkt_bytes: u32,
    payload: u32,
    blocks: u32,
    link_ps: u64,
    sw_ps: u64,
    end: u64,
    warm: u64,
    chans: Vec<Chan>,
    /// Per channel: its [`Wire`].
    wires: Vec<Wire>,
    hosts: Vec<Host>,
    /// Per host: its LID.
    lids: Vec<Lid>,
    /// Per node: the channel out of each port (index: port number).
    out_chan: Vec<Vec<u32>>,
    /// `out_chan` flattened, node after node ([`Hop::out_at`]).
    out_flat: Vec<u32>,
    /// Per node: its switch tables.
    sw: Vec<Option<&'a SwitchState>>,
    /// Per channel into a switch: what routing a packet there reads ([`Hop`]).
    hops: Vec<Hop<'a>>,
    /// Buffers: `chan·nvl + vl` input buffers, then `(chans + host)·nvl + vl` source queues.
    bufs: Vec<VecDeque<Pkt>>,
    /// Per buffer: the (channel, VL) its head packet has asked for.
    target: Vec<Option<(u32, u8)>>,
    /// Per channel: when the packet it is sending has left (free from then).
    busy_until: Vec<u64>,
    /// Per channel: a `Free` event is pending (one is pushed only when something waits for
    /// the output, or with a limit of parallel sends).
    wake: Vec<bool>,
    /// Per input channel: packets it is sending (its parallel sends).
    sending: Vec<u32>,
    /// Parallel sends an input channel may have ([`Params::parallel_sends`]; `u32::MAX`: no
    /// limit).
    limit: u32,
    /// Virtual output queues ([`crate::SwitchBuffers::Voq`]) instead of FIFO input buffers.
    voq: bool,
    /// Virtual output queues, per switch input buffer: its packets not routed yet (the last
    /// ones to arrive).
    unrouted: Vec<u32>,
    /// Per `chan·nvl + vl`: its credits, the buffers asking and the one served last.
    outs: Vec<OutVl>,
    arb: Vec<Arbiter>,
    stall_since: Vec<Option<u64>>,
    stall_ps: Vec<u64>,
    /// Per channel: what its open stall waits on (the output its next hop's blocked head
    /// packet asked for, [`END_NODE`], or [`NONE`]: not known).
    blocker: Vec<u32>,
    /// Per channel: stall time in the window by blocker (congestion trees).
    stall_to: Vec<Vec<(u32, u64)>>,
    /// Per job (job files): latencies of its packets delivered in the window.
    job_lat: Vec<Vec<u64>>,
    sent_bytes: Vec<u64>,
    pattern: Pattern,
    heap: Queue<Ev>,
    seq: u64,
    events: u64,
    // Measurements.
    counts: Packets,
    /// Per host: unicast payload it drained in the window, in bytes (a packet draining
    /// across the window's edge counts its bytes inside).
    recv: Vec<u64>,
    /// Per source host: its unicast payload drained in the window, and the part of it
    /// toward its hot-spot.
    by_src: Vec<u64>,
    to_hot: Vec<u64>,
    /// Unicast packets still draining into their end node when the run stopped.
    receiving: u64,
    latencies: Vec<u64>,
    /// The most blocks any input buffer held (checked against its size in tests).
    max_fill: u32,
    fill: Vec<u32>,
    /// Per host: when its receive side has drained what arrived (below line rate only).
    sink_free: Vec<u64>,
    /// dFtree's loop or best case, on a state with dFtree lanes.
    dft: Option<Loop>,
    /// Multicast traffic's group.
    mc: Option<Mc>,
    /// The fabric simulated in parts ([`parts`]): this one's share, and what crosses to the
    /// others (nothing when it is whole).
    part: Part,
}

/// Simulates `traffic` on `state` for `params.duration_ns` with `seed`.
pub fn simulate(
    state: &FabricState,
    traffic: &Traffic,
    params: &Params,
    seed: u64,
) -> Result<Report, SimError> {
    let started = Instant::now();
    let mut sim = parts::run(state, traffic, params, seed, None)?;
    let mut r = sim.report(traffic, seed);
    r.wall = started.elapsed();
    Ok(r)
}

/// [`simulate`] with the fabric cut into `parts` parts (1 to 8) whatever its size, where the
/// simulation can be cut (no dFtree lanes, no multicast, FIFO switch buffers): what
/// [`simulate`] does on its own from 8 192 hosts, for tests and benchmarks on smaller
/// fabrics. The report does not depend on the threads that run the parts.
pub fn simulate_in_parts(
    state: &FabricState,
    traffic: &Traffic,
    params: &Params,
    seed: u64,
    parts: usize,
) -> Result<Report, SimError> {
    let started = Instant::now();
    let mut sim = parts::run(state, traffic, params, seed, Some(parts))?;
    let mut r = sim.report(traffic, seed);
    r.wall = started.elapsed();
    Ok(r)
}

/// A channel's serialisation time for `bytes`, in picoseconds.
pub(crate) fn ser(bytes: u32, mbps: u64) -> u64 {
    (u64::from(bytes) * 8 * 1_000_000).div_ceil(mbps.max(1))
}

impl Sim<'_> {
    fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        let item = Item {
            t,
            seq: self.seq * self.part.count + self.part.me,
            ev,
        };
        match self.part.owner_of(&ev) {
            Some(k) if k != self.part.me => self.part.send(k, item),
            _ => self.heap.push(item),
        }
    }

    fn run(&mut self) {
        self.run_until(None);
    }

    /// Runs the events before `limit` (picoseconds; `None`: every one), and none after the
    /// end unless draining.
    fn run_until(&mut self, limit: Option<u64>) {
        while let Some(item) = self.heap.pop() {
            if limit.is_some_and(|l| item.t >= l) || (item.t > self.end && !self.p.drain) {
                self.heap.push(item);
                break;
            }
            self.events += 1;
            let now = item.t;
            match item.ev {
                Ev::Gen { host } => self.generate(now, host),
                Ev::Arrive { chan, pkt } => self.arrive(now, chan, pkt),
                Ev::Ready { buf } => self.route(now, buf),
                Ev::Free { chan, from } => self.freed(now, chan, from),
                Ev::Credit { chan, vl, blocks } => {
                    // Credits on a VL nothing asks for change no decision of the output.
                    let k = chan as usize * self.nvl + usize::from(vl);
                    if let Some(o) = self.outs.get_mut(k) {
                        o.credits += blocks;
                        if !o.reqs.is_empty() {
                            self.try_send(now, chan);
                        }
                    }
                }
                Ev::Sweep => self.sweep(now),
                Ev::Repath { idx } => {
                    if let Some(d) = self.dft.as_mut() {
                        d.apply(now, idx);
                    }
                }
            }
        }
    }

    /// dFtree: a performance sweep, the next one scheduled, the moves after the delay.
    fn sweep(&mut self, now: u64) {
        let Some(d) = self.dft.as_mut() else {
            return;
        };
        if let Some(idx) = d.sweep(now, &self.stall_since) {
            let at = now + self.p.dftree_repath_ns.saturating_mul(PS);
            self.push(at, Ev::Repath { idx });
        }
        let next = now + self.p.dftree_sweep_ns.saturating_mul(PS);
        if next <= self.end {
            self.push(next, Ev::Sweep);
        }
    }

    fn in_window(&self, t: u64) -> bool {
        t > self.warm && t <= self.end
    }

    /// The share of `bytes` spread evenly over `(start, done]` that falls in the measured
    /// window `(warm, end]`.
    fn window_part(&self, bytes: u64, start: u64, done: u64) -> u64 {
        if done <= start {
            return if self.in_window(done) { bytes } else { 0 };
        }
        let (lo, hi) = (start.max(self.warm), done.min(self.end));
        if hi <= lo {
            return 0;
        }
        (u128::from(bytes) * u128::from(hi - lo) / u128::from(done - start)) as u64
    }

    /// End node `to_host` (fed by channel `c`) drains `pkt`, whose head arrives `now`: from
    /// then, or once the packet before it has drained, for the channel's drain time, and
    /// never before its tail has arrived. Returns when it starts and when it is done.
    fn sink(&mut self, now: u64, c: u32, to_host: Option<u32>, pkt: &Pkt) -> (u64, u64) {
        let drain = self.chans.get(c as usize).map_or(0, |ch| ch.drain_ps);
        let free = to_host.and_then(|h| self.sink_free.get_mut(h as usize));
        let start = free.as_ref().map_or(now, |f| now.max(**f));
        let done = start.saturating_add(drain).max(pkt.tail_at);
        if let Some(f) = free {
            *f = done;
        }
        (start, done)
    }
}

/// Test hooks: the engine's invariants.
#[cfg(test)]
pub(crate) fn run_checked(
    state: &FabricState,
    traffic: &Traffic,
    params: &Params,
    seed: u64,
) -> (Report, u32, u32) {
    let mut sim = Sim::new(state, traffic, params, seed).unwrap();
    sim.run();
    let (max_fill, cap) = (sim.max_fill, params.buffer_bytes / BLOCK);
    (sim.report(traffic, seed), max_fill, cap)
}

/// Test hook: a run's report, and per host the payload it drained in the window (unicast and
/// multicast) in Gb/s beside what its link allows: the link's payload rate times the
/// receive rate.
#[cfg(test)]
pub(crate) fn run_bounded(
    state: &FabricState,
    traffic: &Traffic,
    params: &Params,
    seed: u64,
) -> (Report, Vec<(f64, f64)>, u32, u32) {
    let mut sim = Sim::new(state, traffic, params, seed).unwrap();
    sim.run();
    let window = (sim.end - sim.warm) as f64;
    let per_host = (0..sim.hosts.len())
        .map(|h| {
            let mc = sim
                .mc
                .as_ref()
                .and_then(|m| m.bytes.get(h).copied())
                .unwrap_or(0);
            let got = (sim.recv[h] + mc) as f64 * 8000.0 / window;
            let mbps = sim
                .chans
                .iter()
                .find(|c| c.to_host == Some(h as u32))
                .map_or(0, |c| c.mbps);
            let bound = mbps as f64 / 1000.0 * f64::from(sim.payload) / f64::from(sim.pkt_bytes)
                * params.receive_rate;
            (got, bound)
        })
        .collect();
    let (max_fill, cap) = (sim.max_fill, params.buffer_bytes / BLOCK);
    (sim.report(traffic, seed), per_host, max_fill, cap)
}

#[cfg(test)]
mod tests {
    use super::Reqs;
    use weft_fabric::rng::SplitMix64;

    /// Pushes and removals, past the inline room and with repeats, hold the same set as a
    /// plain list.
    #[test]
    fn reqs_hold_what_a_list_holds() {
        let mut rng = SplitMix64(5);
        for _ in 0..200 {
            let (mut r, mut list) = (Reqs::default(), Vec::new());
            for _ in 0..60 {
                let b = rng.below(12) as u32;
                if rng.below(3) == 0 {
                    r.remove(b);
                    list.retain(|&x| x != b);
                } else {
                    r.push(b);
                    list.push(b);
                }
                let mut got: Vec<u32> = r.iter().copied().collect();
                got.sort_unstable();
                let mut want = list.clone();
                want.sort_unstable();
                assert_eq!(got, want);
                assert_eq!(r.is_empty(), list.is_empty());
            }
        }
    }
}
