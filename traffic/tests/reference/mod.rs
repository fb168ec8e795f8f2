//! A second implementation of the model `weft simulate` runs, written apart from
//! `weft_traffic`'s engine so that the two can be held to agree.
//!
//! It shares no code with the crate's simulator: it reads the state through `weft-fabric`
//! (nodes, links and their rates, LIDs, LFTs, SL→VL tables, VL arbitration tables, path SLs,
//! multicast groups and MFTs) and the run's description from `weft_traffic`'s plain data
//! types ([`Params`], [`Traffic`]), and works out everything else itself: next hops from the
//! LFTs and MFTs, VLs hop by hop, credits, arbitration, queues and the measurements. It is
//! written for clarity, not speed: a heap of timed events, and at every instant something
//! happened, each touched node looks at all its inputs and outputs again.
//!
//! # The model (from `docs/simulate.md`, with item 1 of issue 44 as the counting rules)
//!
//! * Time in picoseconds. A packet is `payload + header` bytes on the wire, the payload
//!   capped at the smallest MTU of the fabric's nodes; credits are 64-byte blocks, a packet
//!   takes `⌈bytes / 64⌉` of them; every input buffer (at a switch: per input port and VL; at
//!   an end node: its receive buffer) holds `⌊buffer_bytes / 64⌋` blocks.
//! * A directed live link is a *wire*: it sends one packet at a time, taking
//!   `⌈bytes · 8 / rate⌉` to serialise at the link's rate (`Fabric::link_mbps`), and a
//!   packet's head reaches the far end one link latency after it started.
//! * A sender starts a packet on VL `v` only when the far end's buffer for `v` has room for
//!   all of it; the room comes back one link latency after the packet has wholly left that
//!   buffer (at a switch: the tail of its last copy went out; at an end node: it has drained).
//! * Switches: virtual cut-through. A packet at the head of its (input port, VL) buffer may
//!   leave a switch latency after its head arrived (or as soon as it becomes the head, if
//!   later), and its tail never leaves before it has arrived. Unicast leaves by the LFT entry
//!   of its DLID on VL `SL2VL[in][out][SL]`; a packet without an entry, toward port 0, a dead
//!   port or VL 15 is dropped. Multicast is copied to every port of the MFT entry but the
//!   ingress one and port 0, each copy on its output's VL with its own credits; the buffer
//!   slot is freed when the last copy has left. Only heads compete (head-of-line blocking).
//! * An output picks among the VLs that have a waiting head with credits by the port's VL
//!   arbitration: the high table while it has a ready VL, unless `high_limit × 4096` bytes of
//!   high priority went while a low-priority packet waited (at least one packet; 255:
//!   unlimited), then the low table; each table a weighted round robin whose entry keeps the
//!   turn while its weight (64-byte units) lasts and its VL is ready. No table: VL 0 only.
//!   Among the inputs waiting on the chosen VL, round robin by (input port, input VL).
//! * Hosts (end ports of role `host`, with a LID, cabled to a switch, in node then port
//!   order) generate a packet every serialisation time of their link divided by the load
//!   (to the nearest picosecond), the first at a random offset within that interval; SL the
//!   lowest of the pair's path SLs, VL the source port's SL→VL entry. `refuse`: one queue
//!   per VL, a packet that does not fit is not generated; `block`: one queue per VL, a
//!   packet that does not fit is held and the host generates nothing more until it fits,
//!   then again at the later of that moment and one interval after the held packet was
//!   drawn; `fifo`: the same with one queue, whose head alone may leave. The host's own
//!   output arbitrates between its queues' heads.
//! * A receiving end node takes a packet in as it arrives and drains it at `receive_rate ×`
//!   its link rate, one packet after the other; a packet is *delivered* when it has drained
//!   (its tail in, and its bytes through the drain), and only then do its credits go back.
//!
//! # Counting (issue 44 item 1: the spec, not necessarily today's engine)
//!
//! * The window is `(warm-up, duration]`, a warm-up of 0 included. Throughput counts payload
//!   bytes that *cross the window*: a packet's payload is spread evenly over the time it takes
//!   to drain at its receiver, and only the part inside the window counts; a node's figure is
//!   the unicast payload it sent that was drained in the window, per window time.
//! * `delivered` counts packets (multicast: copies) drained by the end of the run.
//! * A link's utilisation is the bytes it put on the wire inside the window (a packet
//!   spread over its send time) over what it could have carried.
//!
//! # The traffic
//!
//! To compare the two engines on the same packets, the reference draws them as the
//! documented per-host streams do: a master `SplitMix64(seed)` gives each host, in host
//! order, the seed of its own generator; a host draws its first generation offset
//! (`below(interval)`) and then, per packet, its destination: `uniform` any other host
//! (`below(hosts − 1)`, skipping itself), `hotspot:N:S` for a host that is not a hot-spot
//! first `below(10⁶) < S ppm` for its group's hot-spot (groups of consecutive hosts, host `i`
//! in group `⌊i·N/H⌋`, whose first host is the hot-spot), `multicast:M:S` likewise for the
//! group, `shift:K` and `all-to-all` no draw. Should the crate's streams change, the packets
//! differ: the cases without contention then fail on the links whose load the draws decide
//! (naming them), and the seed-averaged ones still agree in distribution (tried with the
//! reference's seeds moved by 1000: 14 of the 15 within their tolerance, one `delivered` 4.1 %
//! off).

mod arbiter;
mod build;

use arbiter::Arbiter;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use weft_fabric::rng::SplitMix64;
use weft_fabric::{FabricState, Lid, Mlid, PortNum, PortRef, Sl};
use weft_traffic::{HostModel, Params, Traffic};

const PS_PER_NS: u64 = 1000;
const CREDIT_BYTES: u32 = 64;
const HIGH_LIMIT_BYTES: u64 = 4096;
const VLS: usize = 16;
const PPM: u64 = 1_000_000;

/// What the reference measured.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outcome {
    /// Hosts, `node:port`, in host order.
    pub hosts: Vec<String>,
    /// The window, in nanoseconds.
    pub window_ns: u64,
    /// Per source host: its unicast payload drained in the window, Gb/s.
    pub sent_gbps: Vec<f64>,
    /// Per receiving host: the unicast payload it drained in the window, Gb/s.
    pub received_gbps: Vec<f64>,
    /// Per source host: the part of [`Outcome::sent_gbps`] that went to its hot-spot.
    pub to_hotspot_gbps: Vec<f64>,
    /// Hot-spot traffic: per host, the hot-spot it contributes to (`None` for a hot-spot).
    pub hotspot_of: Vec<Option<usize>>,
    /// Per host that receives the multicast group: the group payload it drained in the
    /// window, Gb/s (`None`: not a receiver).
    pub group_gbps: Vec<Option<f64>>,
    /// Packets generated (queued at their source).
    pub generated: u64,
    /// Packets a full source queue refused (`refuse`).
    pub refused: u64,
    /// Packets that left their source.
    pub injected: u64,
    /// Packets (multicast: copies) drained by a receiver by the end of the run.
    pub delivered: u64,
    /// Of those, drained inside the window.
    pub delivered_in_window: u64,
    /// Packets (copies) whose head reached their receiver by the end of the run, drained or
    /// not.
    pub arrived: u64,
    /// Multicast copies delivered by the end of the run.
    pub group_delivered: u64,
    /// Packets or copies dropped.
    pub dropped: u64,
    /// Per directed link `(from, to)` (`node:port`): utilisation in the window.
    pub utilisation: BTreeMap<(String, String), f64>,
    /// The most blocks any input buffer held, and what one may hold.
    pub max_fill: (u32, u32),
    /// Packets generated and copies made, less those delivered, dropped, in a buffer, on a
    /// wire, draining at a receiver or queued at a source at the end: 0 when every packet
    /// is somewhere.
    pub unaccounted: i64,
}

impl Outcome {
    /// Whether host `h` contributes to a hot-spot.
    pub(crate) fn is_contributor(&self, h: usize) -> bool {
        self.hotspot_of.get(h).copied().flatten().is_some()
    }
}

/// A packet where it is now.
#[derive(Clone, Copy, Debug)]
struct Packet {
    src: usize,
    /// Destination host; `None`: the multicast group.
    dst: Option<usize>,
    dlid: u16,
    sl: u8,
    /// The VL it is on (on the wire it is on, or will leave its source queue on).
    vl: u8,
    /// When its head arrives (arrived) where it is going.
    head_at: u64,
    /// When its tail arrives (arrived) there.
    tail_at: u64,
}

/// What a wire leads into.
#[derive(Clone, Copy, Debug, PartialEq)]
enum End {
    Switch(usize),
    Host(usize),
    /// An end port that is not a simulated host: whatever reaches it is dropped.
    Other,
}

/// One direction of a live link.
struct Wire {
    from: PortRef,
    to: PortRef,
    mbps: u64,
    into: End,
    /// The wire sends nothing until then.
    busy_until: u64,
    /// Per VL: free blocks in the far end's buffer, as the sender knows them.
    credits: [u32; VLS],
    arb: Arbiter,
    /// Per VL: the input (port, VL) served last.
    last_served: [Option<(u8, u8)>; VLS],
    /// Bytes put on the wire inside the window.
    bytes_in_window: f64,
}

/// A packet in a switch's input buffer.
struct Slot {
    pkt: Packet,
    /// When it may first leave (set when it becomes the buffer's head).
    eligible_at: Option<u64>,
    /// Where its copies go, once routed: (wire, VL, sent).
    copies: Option<Vec<(usize, u8, bool)>>,
    /// When the tail of its last copy sent so far leaves.
    gone_at: u64,
}

/// A generating host.
struct Source {
    port: PortRef,
    lid: u16,
    wire: usize,
    rng: SplitMix64,
    every: u64,
    sends: bool,
    /// Refuse and block: one queue per VL; fifo: queue 0 only.
    queues: Vec<VecDeque<Packet>>,
    /// Block and fifo: a packet that did not fit, and when it was generated.
    held: Option<(Packet, u64)>,
    /// The receive side: when what came in so far has drained.
    drained_until: u64,
}

/// How destinations are drawn.
enum Draw {
    Uniform,
    /// Per host: its hot-spot (itself for a hot-spot); share in ppm.
    Hotspot(Vec<usize>, u64),
    Fixed(Vec<usize>),
    AllToAll(Vec<usize>),
    /// Share in ppm of each sender's packets to the group.
    Group(u64),
}

/// The multicast group of the run.
struct Group {
    mlid: Mlid,
    sl: Sl,
    receiver: Vec<bool>,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    Generate(usize),
    /// A packet's head reaches the far end of a wire.
    Head(usize, Packet),
    /// Credits come back to a wire's sender.
    Credit(usize, u8, u32),
    /// A receiving host has drained a packet.
    Drained(usize, Packet),
    /// Look at a node's outputs again.
    Wake(Who),
}

/// An event at time `t` (picoseconds), the `seq`-th scheduled: the heap takes the
/// earliest, and of those the first scheduled.
struct Timed {
    t: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Timed {
    fn eq(&self, other: &Timed) -> bool {
        (self.t, self.seq) == (other.t, other.seq)
    }
}

impl Eq for Timed {}

impl PartialOrd for Timed {
    fn partial_cmp(&self, other: &Timed) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Timed {
    fn cmp(&self, other: &Timed) -> std::cmp::Ordering {
        (self.t, self.seq).cmp(&(other.t, other.seq))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Who {
    Host(usize),
    Switch(usize),
}

/// One more than the highest data VL any SL→VL or VL arbitration table of `st` names.
fn data_vls(st: &FabricState) -> usize {
    let switches = st.switches.values().flat_map(|s| {
        let rows = s.sl2vl.iter().flat_map(|r| r.vl);
        rows.chain(s.sl2vl_all.into_iter().flatten())
    });
    let ports = st.ports.values().flat_map(|p| {
        let arb = p
            .vlarb
            .iter()
            .flat_map(|a| a.high.iter().chain(&a.low).map(|e| e.vl));
        p.sl2vl.into_iter().flatten().chain(arb)
    });
    let top = switches.chain(ports).filter(|&v| v < 15).max().unwrap_or(0);
    usize::from(top) + 1
}

/// `bytes` at `mbps`, in picoseconds (rounded up).
fn serialise(bytes: u32, mbps: u64) -> u64 {
    (u64::from(bytes) * 8 * 1_000_000).div_ceil(mbps.max(1))
}

/// The reference simulation.
struct Reference<'a> {
    st: &'a FabricState,
    host_model: HostModel,
    source_queue: usize,
    receive_rate: f64,
    payload: u32,
    bytes: u32,
    blocks: u32,
    capacity: u32,
    switch_ps: u64,
    link_ps: u64,
    warm: u64,
    end: u64,
    wires: Vec<Wire>,
    /// Per node: the wire out of each port (index: port number).
    out_wire: Vec<Vec<Option<usize>>>,
    /// Per switch node: the wires into it, by input port.
    inputs: Vec<Vec<usize>>,
    /// Per wire into a switch, per VL: the buffer.
    buffers: Vec<Vec<VecDeque<Slot>>>,
    fill: Vec<[u32; VLS]>,
    /// VLs `0..data_vls` are the ones any table names (the others stay empty).
    data_vls: usize,
    sources: Vec<Source>,
    /// The host at each host port.
    host_at: BTreeMap<PortRef, usize>,
    draw: Draw,
    group: Option<Group>,
    events: BinaryHeap<Reverse<Timed>>,
    next_seq: u64,
    dirty: BTreeSet<Who>,
    out: Outcome,
    sent_bytes: Vec<f64>,
    received_bytes: Vec<f64>,
    hot_bytes: Vec<f64>,
    group_bytes: Vec<f64>,
    /// Multicast copies made (a packet leaving by `k` ports makes `k − 1`).
    copies: u64,
}

/// Runs the reference over `state` with `traffic`, `params` and `seed`. Job files, windowed
/// hot-spots, permutations, drain mode and states with dFtree lanes are not modelled here.
pub(crate) fn run(
    st: &FabricState,
    traffic: &Traffic,
    params: &Params,
    seed: u64,
) -> Result<Outcome, String> {
    let mut r = Reference::new(st, traffic, params, seed)?;
    r.run();
    Ok(r.finish())
}

impl<'a> Reference<'a> {
    fn at(&mut self, t: u64, ev: Ev) {
        self.next_seq += 1;
        self.events.push(Reverse(Timed {
            t,
            seq: self.next_seq,
            ev,
        }));
    }

    /// Every event up to the end; after all events of an instant, every node they touched
    /// sends what it can.
    fn run(&mut self) {
        while let Some(Reverse(Timed { t, .. })) = self.events.peek() {
            if *t > self.end {
                break;
            }
            let Some(Reverse(Timed { t, ev, .. })) = self.events.pop() else {
                break;
            };
            self.handle(t, ev);
            let more_now = self.events.peek().is_some_and(|e| e.0.t == t);
            if !more_now {
                while let Some(who) = self.dirty.pop_first() {
                    match who {
                        Who::Host(h) => self.serve_host(t, h),
                        Who::Switch(n) => self.serve_switch(t, n),
                    }
                }
            }
        }
    }

    fn handle(&mut self, now: u64, ev: Ev) {
        match ev {
            Ev::Generate(h) => self.generate(now, h),
            Ev::Head(w, pkt) => self.head(now, w, pkt),
            Ev::Credit(w, vl, blocks) => {
                self.wires[w].credits[usize::from(vl)] += blocks;
                let from = self.wires[w].from;
                self.dirty.insert(self.who(from));
            }
            Ev::Drained(h, pkt) => self.drained(now, h, pkt),
            Ev::Wake(who) => {
                self.dirty.insert(who);
            }
        }
    }

    /// The host or switch a port belongs to.
    fn who(&self, p: PortRef) -> Who {
        self.host_at
            .get(&p)
            .map_or(Who::Switch(p.node.index()), |&h| Who::Host(h))
    }

    fn pick_destination(&mut self, h: usize) -> Option<usize> {
        let n = self.sources.len();
        let rng = &mut self.sources[h].rng;
        let uniform = |rng: &mut SplitMix64| {
            let d = rng.below(n as u64 - 1) as usize;
            if d >= h {
                d + 1
            } else {
                d
            }
        };
        match &mut self.draw {
            Draw::Uniform => Some(uniform(rng)),
            Draw::Hotspot(hot, share) => {
                let spot = hot[h];
                if spot != h && rng.below(PPM) < *share {
                    Some(spot)
                } else {
                    Some(uniform(rng))
                }
            }
            Draw::Fixed(to) => Some(to[h]),
            Draw::AllToAll(next) => {
                let d = (h + next[h]) % n;
                next[h] = if next[h] + 1 >= n { 1 } else { next[h] + 1 };
                Some(d)
            }
            Draw::Group(share) => {
                if rng.below(PPM) < *share {
                    None
                } else {
                    Some(uniform(rng))
                }
            }
        }
    }

    fn generate(&mut self, now: u64, h: usize) {
        let dst = self.pick_destination(h);
        let src = &self.sources[h];
        let (dlid, sl) = match (dst, &self.group) {
            (Some(d), _) => {
                let dlid = self.sources[d].lid;
                let sl = self.st.path_sls(src.port, Lid(dlid)).iter().next();
                (dlid, sl.unwrap_or(Sl(0)))
            }
            (None, Some(g)) => (g.mlid.get(), g.sl),
            (None, None) => return,
        };
        let vl = self.st.injection_vl(src.port, sl).0;
        let every = src.every;
        let refuse = self.host_model == HostModel::Refuse;
        if refuse {
            self.at(now + every, Ev::Generate(h));
        }
        if vl >= 15 {
            self.out.generated += 1;
            self.out.dropped += 1;
            if !refuse {
                self.at(now + every, Ev::Generate(h));
            }
            return;
        }
        let pkt = Packet {
            src: h,
            dst,
            dlid,
            sl: sl.0,
            vl,
            head_at: now,
            tail_at: now,
        };
        let q = self.queue_of(vl);
        if self.sources[h].queues[q].len() >= self.source_queue {
            if refuse {
                self.out.refused += 1;
            } else {
                self.sources[h].held = Some((pkt, now));
            }
            return;
        }
        self.sources[h].queues[q].push_back(pkt);
        self.out.generated += 1;
        if !refuse {
            self.at(now + every, Ev::Generate(h));
        }
        self.dirty.insert(Who::Host(h));
    }

    /// The source queue of a packet on `vl`.
    fn queue_of(&self, vl: u8) -> usize {
        if self.host_model == HostModel::Fifo {
            0
        } else {
            usize::from(vl)
        }
    }

    /// A packet's head reaches the far end of wire `w`.
    fn head(&mut self, now: u64, w: usize, pkt: Packet) {
        match self.wires[w].into {
            End::Switch(node) => {
                let vl = usize::from(pkt.vl);
                self.fill[w][vl] += self.blocks;
                assert!(
                    self.fill[w][vl] <= self.capacity,
                    "reference: a buffer overflowed"
                );
                self.out.max_fill.0 = self.out.max_fill.0.max(self.fill[w][vl]);
                let buf = &mut self.buffers[w][vl];
                let first = buf.is_empty();
                buf.push_back(Slot {
                    pkt,
                    eligible_at: None,
                    copies: None,
                    gone_at: 0,
                });
                if first {
                    self.becomes_head(now, w, vl, node);
                }
            }
            End::Host(h) => {
                // The receive side drains one packet after the other at its rate.
                let rate = (self.wires[w].mbps as f64 * self.receive_rate).max(1.0) as u64;
                let takes = serialise(self.bytes, rate);
                let sink = &mut self.sources[h].drained_until;
                let start = (*sink).max(now);
                let done = pkt.tail_at.max(start + takes);
                *sink = done;
                self.at(done + self.link_ps, Ev::Credit(w, pkt.vl, self.blocks));
                self.at(done, Ev::Drained(h, pkt));
                self.count_bytes(h, &pkt, done - takes, done);
                self.out.arrived += u64::from(self.receives(h, &pkt));
            }
            End::Other => {
                self.out.dropped += 1;
                self.at(
                    pkt.tail_at + self.link_ps,
                    Ev::Credit(w, pkt.vl, self.blocks),
                );
            }
        }
    }

    /// The first packet of buffer (`w`, `vl`) at switch `node` is its head from `now`.
    fn becomes_head(&mut self, now: u64, w: usize, vl: usize, node: usize) {
        let switch_ps = self.switch_ps;
        let Some(slot) = self.buffers[w][vl].front_mut() else {
            return;
        };
        let at = now.max(slot.pkt.head_at + switch_ps);
        slot.eligible_at = Some(at);
        self.at(at, Ev::Wake(Who::Switch(node)));
    }

    /// The payload of `pkt`, drained at host `h` from `from` to `to`: the part inside the
    /// window counts, whether or not the packet has drained by the end.
    fn count_bytes(&mut self, h: usize, pkt: &Packet, from: u64, to: u64) {
        let (lo, hi) = (from.max(self.warm), to.min(self.end));
        if hi <= lo || !self.receives(h, pkt) {
            return;
        }
        let payload = f64::from(self.payload) * (hi - lo) as f64 / (to - from) as f64;
        match pkt.dst {
            None => self.group_bytes[h] += payload,
            Some(_) => {
                self.sent_bytes[pkt.src] += payload;
                self.received_bytes[h] += payload;
                if let Draw::Hotspot(hot, _) = &self.draw {
                    if hot[pkt.src] == h && h != pkt.src {
                        self.hot_bytes[pkt.src] += payload;
                    }
                }
            }
        }
    }

    /// Whether host `h` is where `pkt` is going: its destination, or a receiver of the
    /// group other than the sender.
    fn receives(&self, h: usize, pkt: &Packet) -> bool {
        match pkt.dst {
            Some(d) => d == h,
            None => h != pkt.src && self.group.as_ref().is_some_and(|g| g.receiver[h]),
        }
    }

    /// Host `h` has drained `pkt`: delivered.
    fn drained(&mut self, now: u64, h: usize, pkt: Packet) {
        if !self.receives(h, &pkt) {
            self.out.dropped += 1;
            return;
        }
        self.out.delivered += 1;
        self.out.delivered_in_window += u64::from(now > self.warm);
        if pkt.dst.is_none() {
            self.out.group_delivered += 1;
        }
    }

    /// Starts `pkt` on wire `w`, VL `vl`, its tail in by `tail_in`: returns when its tail
    /// has left.
    fn send(&mut self, now: u64, w: usize, vl: u8, pkt: Packet) -> u64 {
        let who = self.who(self.wires[w].from);
        let wire = &mut self.wires[w];
        let finish = (now + serialise(self.bytes, wire.mbps)).max(pkt.tail_at);
        wire.busy_until = finish;
        wire.credits[usize::from(vl)] -= self.blocks;
        let (lo, hi) = (now.max(self.warm), finish.min(self.end));
        if hi > lo {
            wire.bytes_in_window +=
                f64::from(self.bytes) * (hi - lo) as f64 / (finish - now) as f64;
        }
        let head_at = now + self.link_ps;
        let on_wire = Packet {
            vl,
            head_at,
            tail_at: finish + self.link_ps,
            ..pkt
        };
        self.at(head_at, Ev::Head(w, on_wire));
        self.at(finish, Ev::Wake(who));
        finish
    }

    fn serve_host(&mut self, now: u64, h: usize) {
        let w = self.sources[h].wire;
        if self.wires[w].busy_until > now {
            return;
        }
        let mut ready = [false; VLS];
        for q in &self.sources[h].queues {
            if let Some(p) = q.front() {
                if self.wires[w].credits[usize::from(p.vl)] >= self.blocks {
                    ready[usize::from(p.vl)] = true;
                }
            }
        }
        let (bytes, blocks) = (self.bytes, self.blocks);
        let Some(vl) = self.wires[w].arb.pick_and_send(&ready, bytes, blocks) else {
            return;
        };
        let q = self.queue_of(vl);
        let Some(pkt) = self.sources[h].queues[q].pop_front() else {
            return;
        };
        self.out.injected += 1;
        self.send(now, w, vl, pkt);
        // A held packet goes in once its queue has room; the host generates again then, or
        // at its rate if that is later.
        if let Some((held, born)) = self.sources[h].held {
            if self.queue_of(held.vl) == q {
                self.sources[h].held = None;
                self.sources[h].queues[q].push_back(held);
                self.out.generated += 1;
                let next = now.max(born + self.sources[h].every);
                self.at(next, Ev::Generate(h));
            }
        }
    }

    /// Routes the head of (`w`, `vl`) at switch `node`: its copies' (wire, VL), or `None`
    /// when it is dropped whole.
    fn route(&mut self, node: usize, w: usize, pkt: &Packet) -> Option<Vec<(usize, u8, bool)>> {
        let st = self.st;
        let sw = st.switches.get(&weft_fabric::NodeId(node as u32));
        let in_port = self.wires[w].to.port;
        let leave = |out: PortNum| -> Option<(usize, u8, bool)> {
            if out.0 == 0 {
                return None;
            }
            let ow = self.out_wire[node]
                .get(usize::from(out.0))
                .copied()
                .flatten()?;
            let vl = sw?.vl(in_port, out, Sl(pkt.sl))?.0;
            (vl < 15).then_some((ow, vl, false))
        };
        match pkt.dst {
            Some(_) => {
                let out = sw.and_then(|s| s.lft.get(Lid(pkt.dlid)));
                match out.and_then(leave) {
                    Some(c) => Some(vec![c]),
                    None => {
                        self.out.dropped += 1;
                        None
                    }
                }
            }
            None => {
                let mlid = Mlid::new(pkt.dlid)?;
                let mask = st
                    .multicast
                    .mfts
                    .get(&weft_fabric::NodeId(node as u32))
                    .map(|m| m.get(mlid));
                let ports: Vec<PortNum> = mask
                    .map(|m| m.iter().filter(|&p| p != in_port && p.0 != 0).collect())
                    .unwrap_or_default();
                let copies: Vec<_> = ports.iter().filter_map(|&p| leave(p)).collect();
                // Every port but one makes a copy, each a packet of its own from then on.
                self.copies += ports.len().saturating_sub(1) as u64;
                self.out.dropped += (ports.len() - copies.len()) as u64;
                if copies.is_empty() {
                    self.out.dropped += u64::from(ports.is_empty());
                    return None;
                }
                Some(copies)
            }
        }
    }

    fn serve_switch(&mut self, now: u64, node: usize) {
        loop {
            let mut progress = false;
            // Heads that may leave now are routed (or dropped), and every copy still to
            // send is listed under its output port: (input port, input VL, wire, VL out).
            let mut waiting: BTreeMap<u8, Vec<(u8, u8, usize, u8)>> = BTreeMap::new();
            for i in 0..self.inputs[node].len() {
                let w = self.inputs[node][i];
                for vl in 0..self.data_vls {
                    let Some(slot) = self.buffers[w][vl].front() else {
                        continue;
                    };
                    if slot.eligible_at.is_none_or(|t| t > now) {
                        continue;
                    }
                    if slot.copies.is_none() {
                        let pkt = slot.pkt;
                        let copies = self.route(node, w, &pkt);
                        if copies.is_none() {
                            self.leave_buffer(now, node, w, vl, now);
                            progress = true;
                            continue;
                        }
                        if let Some(s) = self.buffers[w][vl].front_mut() {
                            s.copies = copies;
                        }
                    }
                    let in_port = self.wires[w].to.port.0;
                    let copies = self.buffers[w][vl].front().and_then(|s| s.copies.as_ref());
                    for &(o, out_vl, sent) in copies.into_iter().flatten() {
                        if !sent {
                            let out_port = self.wires[o].from.port.0;
                            waiting
                                .entry(out_port)
                                .or_default()
                                .push((in_port, vl as u8, w, out_vl));
                        }
                    }
                }
            }
            // Each idle output sends one of them; a buffer whose head left in this pass is
            // looked at again in the next.
            let mut emptied: BTreeSet<(usize, u8)> = BTreeSet::new();
            for (out_port, wants) in waiting {
                let Some(o) = self.out_wire[node][usize::from(out_port)] else {
                    continue;
                };
                if self.wires[o].busy_until > now {
                    continue;
                }
                let wants: Vec<_> = wants
                    .into_iter()
                    .filter(|x| !emptied.contains(&(x.2, x.1)))
                    .collect();
                if let Some(left) = self.serve_output(now, node, o, &wants) {
                    progress = true;
                    if let Some(input) = left {
                        emptied.insert(input);
                    }
                }
            }
            if !progress {
                break;
            }
        }
    }

    /// Output wire `o` of switch `node` sends one of the copies waiting for it, `wants`
    /// (input port, input VL, wire, VL out), if one has credits and the arbitration allows:
    /// `None` if it sent nothing, else whether a buffer's head left, and which.
    fn serve_output(
        &mut self,
        now: u64,
        node: usize,
        o: usize,
        wants: &[(u8, u8, usize, u8)],
    ) -> Option<Option<(usize, u8)>> {
        let mut ready = [false; VLS];
        for &(_, _, _, v) in wants {
            if self.wires[o].credits[usize::from(v)] >= self.blocks {
                ready[usize::from(v)] = true;
            }
        }
        let (bytes, blocks) = (self.bytes, self.blocks);
        let vl = self.wires[o].arb.pick_and_send(&ready, bytes, blocks)?;
        // Round robin among the inputs on that VL: the first after the one served last.
        let mut on_vl: Vec<(u8, u8, usize)> = wants
            .iter()
            .filter(|x| x.3 == vl)
            .map(|x| (x.0, x.1, x.2))
            .collect();
        on_vl.sort();
        let last = self.wires[o].last_served[usize::from(vl)];
        let (port, in_vl, w) = on_vl
            .iter()
            .find(|x| last.is_none_or(|l| (x.0, x.1) > l))
            .or(on_vl.first())
            .copied()?;
        self.wires[o].last_served[usize::from(vl)] = Some((port, in_vl));
        let ivl = usize::from(in_vl);
        let pkt = self.buffers[w][ivl].front().map(|s| s.pkt)?;
        let finish = self.send(now, o, vl, pkt);
        let slot = self.buffers[w][ivl].front_mut()?;
        slot.gone_at = slot.gone_at.max(finish);
        let mut all_sent = true;
        for c in slot.copies.iter_mut().flatten() {
            if c.0 == o {
                c.2 = true;
            }
            all_sent &= c.2;
        }
        let gone = slot.gone_at;
        if !all_sent {
            return Some(None);
        }
        self.leave_buffer(now, node, w, ivl, gone);
        Some(Some((w, in_vl)))
    }

    /// The head of (`w`, `vl`) leaves the buffer, its last tail out at `gone`: the room goes
    /// back upstream, and the next packet becomes the head.
    fn leave_buffer(&mut self, now: u64, node: usize, w: usize, vl: usize, gone: u64) {
        self.buffers[w][vl].pop_front();
        self.fill[w][vl] -= self.blocks;
        self.at(gone + self.link_ps, Ev::Credit(w, vl as u8, self.blocks));
        if !self.buffers[w][vl].is_empty() {
            self.becomes_head(now, w, vl, node);
        }
    }

    fn finish(mut self) -> Outcome {
        let window_ps = (self.end - self.warm) as f64;
        let gbps = |b: f64| b * 8.0 * PS_PER_NS as f64 / window_ps;
        self.out.sent_gbps = self.sent_bytes.iter().map(|&b| gbps(b)).collect();
        self.out.received_gbps = self.received_bytes.iter().map(|&b| gbps(b)).collect();
        self.out.to_hotspot_gbps = self.hot_bytes.iter().map(|&b| gbps(b)).collect();
        self.out.hotspot_of = match &self.draw {
            Draw::Hotspot(hot, _) => (0..hot.len())
                .map(|h| Some(hot[h]).filter(|&x| x != h))
                .collect(),
            _ => vec![None; self.sources.len()],
        };
        self.out.group_gbps = match &self.group {
            Some(g) => self
                .group_bytes
                .iter()
                .zip(&g.receiver)
                .map(|(&b, &r)| r.then(|| gbps(b)))
                .collect(),
            None => vec![None; self.sources.len()],
        };
        let name = |p: PortRef| {
            format!(
                "{}:{}",
                self.st.fabric.nodes()[p.node.index()].name(),
                p.port.0
            )
        };
        for w in &self.wires {
            let capacity = w.mbps as f64 * 1e6 / 8.0 * window_ps / 1e12;
            self.out
                .utilisation
                .insert((name(w.from), name(w.to)), w.bytes_in_window / capacity);
        }
        self.out.max_fill.1 = self.capacity;
        self.out.unaccounted = self.unaccounted();
        self.out
    }

    /// Packets made less packets found (see [`Outcome::unaccounted`]). A multicast packet
    /// part-way copied counts once in its buffer, and each copy sent once where it went: its
    /// copies not sent yet, but one, are not anywhere yet.
    fn unaccounted(&self) -> i64 {
        let slots = self.buffers.iter().flatten().flat_map(|b| b.iter());
        let (mut in_buffers, mut unsent) = (0u64, 0u64);
        for slot in slots {
            in_buffers += 1;
            let left = slot.copies.iter().flatten().filter(|c| !c.2).count();
            unsent += left.saturating_sub(1) as u64;
        }
        let (mut on_wires, mut in_sinks) = (0u64, 0u64);
        for Reverse(e) in &self.events {
            match e.ev {
                Ev::Head(..) => on_wires += 1,
                Ev::Drained(..) => in_sinks += 1,
                _ => {}
            }
        }
        let queued: u64 = self
            .sources
            .iter()
            .flat_map(|s| &s.queues)
            .map(|q| q.len() as u64)
            .sum();
        let made = self.out.generated + self.copies - unsent;
        let found =
            self.out.delivered + self.out.dropped + in_buffers + on_wires + in_sinks + queued;
        made as i64 - found as i64
    }
}
