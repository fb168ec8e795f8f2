//! The event-driven engine (see the crate's documentation for what it models).
//!
//! Time is in picoseconds. Every directed live link is a *channel*; its receiving end has one
//! input buffer per VL (at a switch; a host consumes at line rate), its sending end one
//! output with credits per VL, an arbiter, and the requests of the buffers whose head packet
//! wants to leave on it. Hosts have one source queue (a buffer) per VL.

use crate::arb::Arbiter;
use crate::pattern::{Active, Pattern, GROUP};
use crate::report::{
    ClassThroughput, Classes, JobReport, Latency, LinkLoad, McReport, Packets, Report, Throughput,
};
use crate::sim_dftree::Loop;
use crate::{DftreeMode, HostModel, Params, SimError, Traffic};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
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
    /// A packet's head arrives at the far end of a channel.
    Arrive { chan: u32, pkt: Pkt },
    /// A switch buffer's head packet may be routed.
    Ready { buf: u32 },
    /// A channel's output finished sending.
    Free { chan: u32 },
    /// Credits come back to a channel's output.
    Credit { chan: u32, vl: u8, blocks: u32 },
    /// A host generates.
    Gen { host: u32 },
    /// dFtree: a performance sweep.
    Sweep,
    /// dFtree: a sweep's moves reach the sources.
    Repath { idx: u32 },
}

struct Item {
    t: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Item {
    fn eq(&self, o: &Item) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Item) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    fn cmp(&self, o: &Item) -> std::cmp::Ordering {
        (self.t, self.seq).cmp(&(o.t, o.seq))
    }
}

struct Chan {
    from: PortRef,
    to: PortRef,
    /// The host at the receiving end, if a host.
    to_host: Option<u32>,
    /// Whether the receiving end is a switch (with input buffers).
    to_switch: bool,
    mbps: u64,
}

struct Host {
    port: PortRef,
    lid: Lid,
    chan: u32,
    rng: SplitMix64,
    interval: u64,
    /// A generated packet its queue had no room for, waiting (host models `block`, `fifo`).
    held: Option<Pkt>,
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
    hosts: Vec<Host>,
    /// Per node: the channel out of each port (index: port number).
    out_chan: Vec<Vec<u32>>,
    /// Per node: its switch tables.
    sw: Vec<Option<&'a SwitchState>>,
    /// Buffers: `chan·nvl + vl` input buffers, then `(chans + host)·nvl + vl` source queues.
    bufs: Vec<VecDeque<Pkt>>,
    /// Per buffer: the (channel, VL) its head packet has asked for.
    target: Vec<Option<(u32, u8)>>,
    /// Per channel: sending.
    busy: Vec<bool>,
    /// Per `chan·nvl + vl`: credits (blocks) and the buffers asking.
    credits: Vec<u32>,
    reqs: Vec<Vec<u32>>,
    /// Per `chan·nvl + vl`: the buffer served last.
    last: Vec<u32>,
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
    heap: BinaryHeap<Reverse<Item>>,
    seq: u64,
    events: u64,
    // Measurements.
    counts: Packets,
    by_src: Vec<u64>,
    to_hot: Vec<u64>,
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
}

/// Simulates `traffic` on `state` for `params.duration_ns` with `seed`.
pub fn simulate(
    state: &FabricState,
    traffic: &Traffic,
    params: &Params,
    seed: u64,
) -> Result<Report, SimError> {
    let started = Instant::now();
    let mut sim = Sim::new(state, traffic, params, seed)?;
    sim.run();
    let mut r = sim.report(traffic, seed);
    r.wall = started.elapsed();
    Ok(r)
}

/// A channel's serialisation time for `bytes`, in picoseconds.
pub(crate) fn ser(bytes: u32, mbps: u64) -> u64 {
    (u64::from(bytes) * 8 * 1_000_000).div_ceil(mbps.max(1))
}

impl<'a> Sim<'a> {
    fn new(
        st: &'a FabricState,
        traffic: &Traffic,
        p: &'a Params,
        seed: u64,
    ) -> Result<Sim<'a>, SimError> {
        if !(p.load > 0.0 && p.load <= 1.0) {
            return Err(SimError::Param(format!(
                "the offered load must be above 0 and at most 1, not {}",
                p.load
            )));
        }
        if !(p.receive_rate > 0.0 && p.receive_rate <= 1.0) {
            return Err(SimError::Param(format!(
                "the receive rate must be above 0 and at most 1, not {}",
                p.receive_rate
            )));
        }
        if p.duration_ns == 0 {
            return Err(SimError::Param("the duration must be above 0".into()));
        }
        let warm_ns = p.warmup_ns.unwrap_or(p.duration_ns / 5);
        if warm_ns >= p.duration_ns {
            return Err(SimError::Param(format!(
                "the warm-up ({warm_ns} ns) must be shorter than the duration ({} ns)",
                p.duration_ns
            )));
        }
        let f = &st.fabric;
        let mtu = f
            .nodes()
            .iter()
            .map(|n| n.spec.caps.mtu.bytes())
            .min()
            .unwrap_or(4096);
        let payload = p.payload_bytes.min(mtu);
        if payload == 0 {
            return Err(SimError::Param(
                "the payload must be at least 1 byte".into(),
            ));
        }
        let pkt_bytes = payload + p.header_bytes;
        let blocks = pkt_bytes.div_ceil(BLOCK);
        let buf_blocks = p.buffer_bytes / BLOCK;
        if buf_blocks < blocks {
            return Err(SimError::Param(format!(
                "an input buffer of {} bytes per VL cannot hold one packet of {} bytes",
                p.buffer_bytes,
                blocks * BLOCK
            )));
        }
        // Data VLs: the highest any table names, plus one.
        let mut top = 0u8;
        let mut see = |v: u8| {
            if v < 15 {
                top = top.max(v);
            }
        };
        for s in st.switches.values() {
            for r in &s.sl2vl {
                r.vl.iter().for_each(|&v| see(v));
            }
            if let Some(a) = &s.sl2vl_all {
                a.iter().for_each(|&v| see(v));
            }
        }
        for ps in st.ports.values() {
            if let Some(t) = &ps.sl2vl {
                t.iter().for_each(|&v| see(v));
            }
            if let Some(a) = &ps.vlarb {
                a.high.iter().chain(&a.low).for_each(|e| see(e.vl));
            }
        }
        let nvl = usize::from(top) + 1;

        // Channels: both directions of every live link.
        let mut chans = Vec::new();
        let mut out_chan: Vec<Vec<u32>> = f
            .nodes()
            .iter()
            .map(|n| vec![NONE; usize::from(n.spec.port_count) + 1])
            .collect();
        for link in f.links() {
            for (a, b) in [(link.a, link.b), (link.b, link.a)] {
                if f.live_peer(a) != Some(b) {
                    continue;
                }
                let Some(nb) = f.nodes().get(b.node.index()) else {
                    continue;
                };
                let Some(mbps) = f.link_mbps(link) else {
                    continue;
                };
                let id = chans.len() as u32;
                if let Some(slot) = out_chan
                    .get_mut(a.node.index())
                    .and_then(|v| v.get_mut(usize::from(a.port.0)))
                {
                    *slot = id;
                }
                chans.push(Chan {
                    from: a,
                    to: b,
                    to_host: None,
                    to_switch: nb.spec.kind == NodeKind::Switch,
                    mbps,
                });
            }
        }
        // Hosts: end ports of role host, up, with a LID, cabled to a switch.
        let mut hosts = Vec::new();
        let mut master = SplitMix64(seed);
        for (i, n) in f.nodes().iter().enumerate() {
            if n.is_switch() || n.down || !n.is_host() {
                continue;
            }
            for port in &n.ports {
                let pr = PortRef {
                    node: weft_fabric::NodeId(i as u32),
                    port: port.num,
                };
                let Some(lid) = st.lids.get(pr.node, pr.port) else {
                    continue;
                };
                let Some(&c) = out_chan.get(i).and_then(|v| v.get(usize::from(port.num.0))) else {
                    continue;
                };
                let Some(ch) = chans.get(c as usize) else {
                    continue;
                };
                if !ch.to_switch {
                    continue;
                }
                // Each host's stream starts at a point of the sequence the master generator
                // draws (seeding host k with `seed + k·γ` would make its stream host 0's
                // shifted by k draws: SplitMix64 steps its state by γ).
                let rng = SplitMix64(master.next_u64());
                let period = ser(pkt_bytes, ch.mbps);
                let interval = ((period as f64) / p.load).round().max(1.0) as u64;
                hosts.push(Host {
                    port: pr,
                    lid,
                    chan: c,
                    rng,
                    interval,
                    held: None,
                });
            }
        }
        let pattern = match traffic {
            Traffic::Jobs(jobs) => {
                let names: Vec<String> = hosts
                    .iter()
                    .map(|x: &Host| {
                        f.nodes()
                            .get(x.port.node.index())
                            .map_or_else(String::new, |n| n.name().to_owned())
                    })
                    .collect();
                Pattern::for_jobs(traffic, jobs, &names, seed)?
            }
            t => Pattern::new(t, hosts.len(), seed)?,
        };
        for (h, x) in hosts.iter_mut().enumerate() {
            let load = pattern.load_of(h as u32, p.load);
            if load != p.load {
                if let Some(ch) = chans.get(x.chan as usize) {
                    let period = ser(pkt_bytes, ch.mbps);
                    x.interval = ((period as f64) / load).round().max(1.0) as u64;
                }
            }
        }
        for (h, host) in hosts.iter().enumerate() {
            // Delivery into the host: find the channel whose far end is its port.
            if let Some(c) = f
                .live_peer(host.port)
                .and_then(|peer| {
                    out_chan
                        .get(peer.node.index())?
                        .get(usize::from(peer.port.0))
                })
                .and_then(|&c| chans.get_mut(c as usize))
            {
                c.to_host = Some(h as u32);
            }
        }
        let mc = match traffic {
            Traffic::Multicast { mlid, .. } => {
                Some(Self::group(st, traffic, *mlid, &hosts, chans.len() * nvl)?)
            }
            _ => None,
        };
        let sw = f
            .node_ids()
            .map(|n| st.switches.get(&n))
            .collect::<Vec<_>>();
        let arb = chans
            .iter()
            .map(|c| Arbiter::new(st.ports.get(&c.from).and_then(|s| s.vlarb.as_ref())))
            .collect();
        let dft = Loop::new(
            st,
            p,
            &chans.iter().map(|c| (c.from, c.mbps)).collect::<Vec<_>>(),
            &hosts.iter().map(|h| (h.port, h.lid.0)).collect::<Vec<_>>(),
        )?;
        let nch = chans.len();
        let nbuf = (nch + hosts.len()) * nvl;
        let end = p.duration_ns.saturating_mul(PS);
        let mut sim = Sim {
            st,
            p,
            nvl,
            pkt_bytes,
            payload,
            blocks,
            link_ps: p.link_latency_ns.saturating_mul(PS),
            sw_ps: p.switch_latency_ns.saturating_mul(PS),
            end,
            warm: warm_ns.saturating_mul(PS),
            out_chan,
            sw,
            bufs: vec![VecDeque::new(); nbuf],
            target: vec![None; nbuf],
            busy: vec![false; nch],
            credits: vec![buf_blocks; nch * nvl],
            reqs: vec![Vec::new(); nch * nvl],
            last: vec![NONE; nch * nvl],
            arb,
            stall_since: vec![None; nch],
            stall_ps: vec![0; nch],
            blocker: vec![NONE; nch],
            stall_to: vec![Vec::new(); nch],
            job_lat: vec![Vec::new(); pattern.job_count()],
            sent_bytes: vec![0; nch],
            pattern,
            heap: BinaryHeap::new(),
            seq: 0,
            events: 0,
            counts: Packets::default(),
            by_src: vec![0; hosts.len()],
            to_hot: vec![0; hosts.len()],
            latencies: Vec::new(),
            max_fill: 0,
            fill: vec![0; nbuf],
            sink_free: vec![0; hosts.len()],
            dft,
            mc,
            chans,
            hosts,
        };
        for h in 0..sim.hosts.len() {
            if sim
                .mc
                .as_ref()
                .is_some_and(|m| !m.sender.get(h).copied().unwrap_or(false))
            {
                continue;
            }
            let from = match sim.pattern.active(h as u32, 0) {
                Active::Now => 0,
                Active::From(t) => t,
                Active::Never => continue,
            };
            let first = sim.hosts.get_mut(h).map(|x| {
                let i = x.interval;
                x.rng.below(i)
            });
            sim.push(from + first.unwrap_or(0), Ev::Gen { host: h as u32 });
        }
        if sim.dft.as_ref().is_some_and(Loop::sweeping) {
            sim.push(0, Ev::Sweep);
        }
        Ok(sim)
    }

    /// Multicast traffic's group `mlid`: its members among the hosts; refused when the
    /// state has no such group, no MFTs, or no host member.
    fn group(
        st: &FabricState,
        traffic: &Traffic,
        mlid: u16,
        hosts: &[Host],
        nsw: usize,
    ) -> Result<Mc, SimError> {
        let bad = |why: String| SimError::Traffic {
            spec: traffic.spec(),
            why,
        };
        let g = st
            .multicast
            .groups
            .iter()
            .find(|g| g.mlid.get() == mlid)
            .ok_or_else(|| {
                bad(format!(
                    "the state has no multicast group with MLID {mlid:#06x} ({} group(s){})",
                    st.multicast.groups.len(),
                    if st.multicast.groups.is_empty() {
                        String::new()
                    } else {
                        format!(
                            ": {}",
                            st.multicast
                                .groups
                                .iter()
                                .map(|g| g.mlid.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }
                ))
            })?;
        if st.multicast.mfts.is_empty() {
            return Err(bad(format!(
                "the state has no multicast forwarding tables (MFTs): group {mlid:#06x} cannot be forwarded"
            )));
        }
        // A group with send-only members is a feed: they send, the others only receive.
        // Without any, every member sends.
        let feed = g.members.values().any(|j| !j.receives());
        let sender: Vec<bool> = hosts
            .iter()
            .map(|x| {
                g.members
                    .get(&x.port)
                    .is_some_and(|j| !feed || !j.receives())
            })
            .collect();
        let receiver: Vec<bool> = hosts
            .iter()
            .map(|x| g.members.get(&x.port).is_some_and(|j| j.receives()))
            .collect();
        if !sender.iter().any(|&x| x) {
            return Err(bad(format!(
                "no member of group {mlid:#06x} is a host able to send"
            )));
        }
        Ok(Mc {
            mlid: g.mlid,
            sl: g.sl,
            sender,
            receiver,
            bytes: vec![0; hosts.len()],
            delivered: 0,
            no_entry: 0,
            non_receiver: 0,
            left: vec![0; nsw],
            gone: vec![0; nsw],
        })
    }

    fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse(Item {
            t,
            seq: self.seq,
            ev,
        }));
    }

    fn run(&mut self) {
        while let Some(Reverse(item)) = self.heap.pop() {
            if item.t > self.end && !self.p.drain {
                self.heap.push(Reverse(item));
                break;
            }
            self.events += 1;
            let now = item.t;
            match item.ev {
                Ev::Gen { host } => self.generate(now, host),
                Ev::Arrive { chan, pkt } => self.arrive(now, chan, pkt),
                Ev::Ready { buf } => self.route(now, buf),
                Ev::Free { chan } => {
                    if let Some(b) = self.busy.get_mut(chan as usize) {
                        *b = false;
                    }
                    self.try_send(now, chan);
                }
                Ev::Credit { chan, vl, blocks } => {
                    if let Some(c) = self
                        .credits
                        .get_mut(chan as usize * self.nvl + usize::from(vl))
                    {
                        *c += blocks;
                    }
                    self.try_send(now, chan);
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

    fn generate(&mut self, now: u64, h: u32) {
        if now > self.end || self.pattern.active(h, now) != Active::Now {
            return;
        }
        let Some(host) = self.hosts.get_mut(h as usize) else {
            return;
        };
        let (port, chan, interval) = (host.port, host.chan, host.interval);
        let dst = self.pattern.draw(h, &mut host.rng, now);
        let model = self.p.host;
        // Refusing hosts generate on; the others only once this packet is queued.
        let refuse = model == HostModel::Refuse;
        let next = now + interval;
        if refuse {
            self.push(next, Ev::Gen { host: h });
        }
        let group = if dst == GROUP {
            self.mc.as_ref().map(|m| (Lid(m.mlid.get()), m.sl))
        } else {
            None
        };
        let (dlid, sl) = match group {
            Some(g) => g,
            None => {
                let Some(dlid) = self.hosts.get(dst as usize).map(|d| d.lid) else {
                    if !refuse {
                        self.push(next, Ev::Gen { host: h });
                    }
                    return;
                };
                let sls = self.st.path_sls(port, dlid);
                let sl = match &self.dft {
                    Some(d) => d.sl(h, dst, dlid.0, sls, &self.pattern),
                    None => sls.iter().next().unwrap_or(Sl(0)),
                };
                (dlid, sl)
            }
        };
        let vl = self.st.injection_vl(port, sl).0;
        if usize::from(vl) >= self.nvl {
            // SL→VL 15 (or beyond the data VLs): the port drops it.
            self.counts.generated += 1;
            self.counts.dropped += 1;
            if !refuse {
                self.push(next, Ev::Gen { host: h });
            }
            return;
        }
        let pkt = Pkt {
            src: h,
            dst,
            dlid: dlid.0,
            sl: sl.0,
            vl,
            born: now,
            head_at: now,
            tail_at: now,
        };
        let b = self.source_buf(h, vl);
        let cap = self.p.source_queue as usize;
        let Some(q) = self.bufs.get_mut(b) else {
            return;
        };
        if q.len() >= cap {
            match model {
                HostModel::Refuse => self.counts.refused_at_source += 1,
                // Held until its queue has room (`pop`); no generation meanwhile.
                HostModel::Block | HostModel::Fifo => {
                    if let Some(x) = self.hosts.get_mut(h as usize) {
                        x.held = Some(pkt);
                    }
                }
            }
            return;
        }
        if !refuse {
            self.push(next, Ev::Gen { host: h });
        }
        self.enqueue(now, b, chan, pkt);
    }

    /// The source queue host `h` puts a packet for `vl` in: its VL's, or with the `fifo`
    /// host model its one send queue (the slot of VL 0).
    fn source_buf(&self, h: u32, vl: u8) -> usize {
        let vl = if self.p.host == HostModel::Fifo {
            0
        } else {
            vl
        };
        (self.chans.len() + h as usize) * self.nvl + usize::from(vl)
    }

    /// Puts a generated packet in source queue `b`; the head asks for the host's link.
    fn enqueue(&mut self, now: u64, b: usize, chan: u32, pkt: Pkt) {
        let Some(q) = self.bufs.get_mut(b) else {
            return;
        };
        q.push_back(pkt);
        self.counts.generated += 1;
        if q.len() == 1 {
            self.request(b as u32, chan, pkt.vl);
            self.try_send(now, chan);
        }
    }

    /// Buffer `b`'s head asks for (channel, VL).
    fn request(&mut self, b: u32, chan: u32, vl: u8) {
        if let Some(t) = self.target.get_mut(b as usize) {
            *t = Some((chan, vl));
        }
        if let Some(r) = self
            .reqs
            .get_mut(chan as usize * self.nvl + usize::from(vl))
        {
            r.push(b);
        }
    }

    fn arrive(&mut self, now: u64, c: u32, pkt: Pkt) {
        let Some((to_switch, to_host)) = self
            .chans
            .get(c as usize)
            .map(|ch| (ch.to_switch, ch.to_host))
        else {
            return;
        };
        if !to_switch {
            // Into an end node: consumed at line rate, the credit back when the tail is in;
            // below line rate, drained one packet after the other at the receive rate, the
            // credit back when drained.
            let mut pkt = pkt;
            if self.p.receive_rate < 1.0 {
                let mbps = self.chans.get(c as usize).map_or(1, |ch| ch.mbps);
                let rate = ((mbps as f64) * self.p.receive_rate).max(1.0) as u64;
                if let Some(free) = to_host.and_then(|h| self.sink_free.get_mut(h as usize)) {
                    *free = pkt.tail_at.max(*free + ser(self.pkt_bytes, rate));
                    pkt.tail_at = *free;
                }
            }
            self.push(
                pkt.tail_at + self.link_ps,
                Ev::Credit {
                    chan: c,
                    vl: pkt.vl,
                    blocks: self.blocks,
                },
            );
            if pkt.dst == GROUP {
                self.delivered_copy(to_host, pkt);
                return;
            }
            if to_host != Some(pkt.dst) {
                self.counts.dropped += 1;
                return;
            }
            self.counts.delivered += 1;
            if self.in_window(pkt.tail_at) {
                self.counts.delivered_in_window += 1;
                if let Some(s) = self.by_src.get_mut(pkt.src as usize) {
                    *s += u64::from(self.payload);
                }
                if self.pattern.hotspot_of(pkt.src) == Some(pkt.dst) {
                    if let Some(s) = self.to_hot.get_mut(pkt.src as usize) {
                        *s += u64::from(self.payload);
                    }
                }
                self.latencies.push(pkt.tail_at - pkt.born);
                if let Some(l) = self
                    .pattern
                    .job(pkt.src)
                    .and_then(|j| self.job_lat.get_mut(j))
                {
                    l.push(pkt.tail_at - pkt.born);
                }
            }
            return;
        }
        let b = c as usize * self.nvl + usize::from(pkt.vl);
        let blocks = self.blocks;
        if let Some(f) = self.fill.get_mut(b) {
            *f += blocks;
            self.max_fill = self.max_fill.max(*f);
        }
        let Some(q) = self.bufs.get_mut(b) else {
            return;
        };
        q.push_back(Pkt {
            head_at: now,
            ..pkt
        });
        if q.len() == 1 {
            self.push(now + self.sw_ps, Ev::Ready { buf: b as u32 });
        }
    }

    /// Routes switch buffer `b`'s head packet: asks for its output, or drops it.
    fn route(&mut self, now: u64, b: u32) {
        let c = b as usize / self.nvl;
        let Some(ch) = self.chans.get(c) else {
            return;
        };
        let (node, in_port) = (ch.to.node, ch.to.port);
        let Some(&pkt) = self.bufs.get(b as usize).and_then(|q| q.front()) else {
            return;
        };
        if pkt.dst == GROUP {
            self.route_group(now, b, node, in_port, pkt);
            return;
        }
        let sw = self.sw.get(node.index()).copied().flatten();
        let out_port = sw
            .and_then(|s| s.lft.ports.get(usize::from(pkt.dlid)).copied())
            .filter(|&p| p != LFT_UNSET && p != 0);
        let out = out_port.and_then(|p| {
            let oc = *self.out_chan.get(node.index())?.get(usize::from(p))?;
            let vl = sw?.vl(in_port, PortNum(p), Sl(pkt.sl))?.0;
            (oc != NONE && usize::from(vl) < self.nvl).then_some((oc, vl))
        });
        match out {
            Some((oc, vl)) => {
                self.request(b, oc, vl);
                self.try_send(now, oc);
            }
            None => {
                self.counts.dropped += 1;
                self.pop(now, b, now);
            }
        }
    }

    /// A multicast copy reaching end node `to_host`: delivered if the host receives the
    /// group (and did not send it), else dropped.
    fn delivered_copy(&mut self, to_host: Option<u32>, pkt: Pkt) {
        let in_window = self.in_window(pkt.tail_at);
        let payload = u64::from(self.payload);
        let Some(m) = self.mc.as_mut() else {
            self.counts.dropped += 1;
            return;
        };
        let h = match to_host {
            Some(h) if h != pkt.src && m.receiver.get(h as usize).copied().unwrap_or(false) => h,
            _ => {
                m.non_receiver += 1;
                self.counts.dropped += 1;
                return;
            }
        };
        m.delivered += 1;
        self.counts.delivered += 1;
        if in_window {
            self.counts.delivered_in_window += 1;
            if let Some(x) = m.bytes.get_mut(h as usize) {
                *x += payload;
            }
            self.latencies.push(pkt.tail_at - pkt.born);
        }
    }

    /// Routes switch buffer `b`'s multicast head packet: it asks for every port of the
    /// switch's MFT entry for its MLID but the one it came in on (and port 0, the switch's
    /// own), each copy on the VL `SL2VL[in][out][SL]` gives; with none, it is dropped.
    fn route_group(
        &mut self,
        now: u64,
        b: u32,
        node: weft_fabric::NodeId,
        in_port: PortNum,
        pkt: Pkt,
    ) {
        let Some(mlid) = self.mc.as_ref().map(|m| m.mlid) else {
            self.counts.dropped += 1;
            self.pop(now, b, now);
            return;
        };
        let mask = self
            .st
            .multicast
            .mfts
            .get(&node)
            .map_or(PortMask::EMPTY, |t| t.get(mlid));
        let sw = self.sw.get(node.index()).copied().flatten();
        let mut outs: Vec<(u32, u8)> = Vec::new();
        let mut bad = 0u64;
        for p in mask.iter() {
            if p == in_port || p.0 == 0 {
                continue;
            }
            let out = self
                .out_chan
                .get(node.index())
                .and_then(|v| v.get(usize::from(p.0)))
                .copied()
                .filter(|&oc| oc != NONE)
                .and_then(|oc| {
                    let vl = sw?.vl(in_port, p, Sl(pkt.sl))?.0;
                    (usize::from(vl) < self.nvl).then_some((oc, vl))
                });
            match out {
                Some(o) => outs.push(o),
                None => bad += 1,
            }
        }
        if mask.is_empty() {
            if let Some(m) = self.mc.as_mut() {
                m.no_entry += 1;
            }
        }
        if outs.is_empty() {
            // The packet itself goes to one of the ports it cannot leave by (or nowhere).
            self.counts.copies += bad.saturating_sub(1);
            self.counts.dropped += bad.max(1);
            self.pop(now, b, now);
            return;
        }
        self.counts.copies += bad;
        self.counts.dropped += bad;
        if let Some(m) = self.mc.as_mut() {
            if let Some(l) = m.left.get_mut(b as usize) {
                *l = outs.len() as u32;
            }
            if let Some(g) = m.gone.get_mut(b as usize) {
                *g = 0;
            }
        }
        for &(oc, vl) in &outs {
            self.request(b, oc, vl);
        }
        for &(oc, _) in &outs {
            self.try_send(now, oc);
        }
    }

    /// One copy of buffer `b`'s multicast head leaves, its tail at `finish`: the head stays
    /// until the last copy has left, and its room goes back when that last tail has.
    fn copy_out(&mut self, now: u64, b: u32, finish: u64) -> Option<Pkt> {
        let bi = b as usize;
        let Some(m) = self
            .mc
            .as_mut()
            .filter(|_| bi < self.chans.len() * self.nvl)
        else {
            return self.pop(now, b, finish);
        };
        let (Some(left), Some(gone)) = (m.left.get_mut(bi), m.gone.get_mut(bi)) else {
            return self.pop(now, b, finish);
        };
        *gone = (*gone).max(finish);
        if *left > 1 {
            *left -= 1;
            self.counts.copies += 1;
            return self.bufs.get(bi).and_then(|q| q.front()).copied();
        }
        *left = 0;
        let last = *gone;
        self.pop(now, b, last)
    }

    /// Takes buffer `b`'s head out, its tail leaving at `gone`: the room goes back upstream
    /// and the next head comes up.
    fn pop(&mut self, now: u64, b: u32, gone: u64) -> Option<Pkt> {
        let bi = b as usize;
        let pkt = self.bufs.get_mut(bi)?.pop_front()?;
        if let Some(t) = self.target.get_mut(bi) {
            *t = None;
        }
        let nch = self.chans.len();
        let c = bi / self.nvl;
        if c < nch {
            if let Some(f) = self.fill.get_mut(bi) {
                *f = f.saturating_sub(self.blocks);
            }
            self.push(
                gone + self.link_ps,
                Ev::Credit {
                    chan: c as u32,
                    vl: pkt.vl,
                    blocks: self.blocks,
                },
            );
            if let Some(next) = self.bufs.get(bi).and_then(|q| q.front()) {
                let t = now.max(next.head_at + self.sw_ps);
                self.push(t, Ev::Ready { buf: b });
            }
        } else {
            let h = c - nch;
            // A packet held for want of room in this queue goes in now, and the host
            // generates again (host models `block`, `fifo`).
            let fifo = self.p.host == HostModel::Fifo;
            let nvl = self.nvl;
            let held = self.hosts.get_mut(h).and_then(|x| {
                let vl = x.held.map(|p| if fifo { 0 } else { usize::from(p.vl) });
                if vl.map(|v| c * nvl + v) == Some(bi) {
                    x.held.take()
                } else {
                    None
                }
            });
            if let (Some(p), Some(q)) = (held, self.bufs.get_mut(bi)) {
                q.push_back(Pkt {
                    head_at: now,
                    tail_at: now,
                    ..p
                });
                self.counts.generated += 1;
                self.push(now, Ev::Gen { host: h as u32 });
            }
            if let Some(&next) = self.bufs.get(bi).and_then(|q| q.front()) {
                if let Some(chan) = self.hosts.get(h).map(|x| x.chan) {
                    self.request(b, chan, next.vl);
                }
            }
        }
        Some(pkt)
    }

    /// Sends on channel `o` if it is idle and a packet with credits is waiting.
    fn try_send(&mut self, now: u64, o: u32) {
        let oi = o as usize;
        if self.busy.get(oi).copied().unwrap_or(true) {
            return;
        }
        let base = oi * self.nvl;
        let mut ready = 0u16;
        let mut waiting = false;
        let mut starved = None;
        for v in 0..self.nvl {
            let Some(r) = self.reqs.get(base + v) else {
                continue;
            };
            if r.is_empty() {
                continue;
            }
            waiting = true;
            if self.credits.get(base + v).copied().unwrap_or(0) >= self.blocks {
                ready |= 1 << v;
            } else if starved.is_none() {
                starved = Some(v);
            }
        }
        let pick = if ready == 0 {
            None
        } else {
            self.arb.get_mut(oi).and_then(|a| a.pick(ready))
        };
        let Some(vl) = pick else {
            if waiting && self.stall_since.get(oi).is_some_and(Option::is_none) {
                if let Some(s) = self.stall_since.get_mut(oi) {
                    *s = Some(now);
                }
                let by = self.blocked_by(oi, starved);
                if let Some(b) = self.blocker.get_mut(oi) {
                    *b = by;
                }
            }
            return;
        };
        let k = base + usize::from(vl);
        // Round robin over the buffers asking: the first after the one served last.
        let last = self.last.get(k).copied().unwrap_or(NONE);
        let Some(r) = self.reqs.get_mut(k) else {
            return;
        };
        let next_after = r
            .iter()
            .copied()
            .filter(|&x| last == NONE || x > last)
            .min();
        let Some(b) = next_after.or_else(|| r.iter().copied().min()) else {
            return;
        };
        r.retain(|&x| x != b);
        if let Some(l) = self.last.get_mut(k) {
            *l = b;
        }
        let Some(ch) = self.chans.get(oi) else {
            return;
        };
        let mbps = ch.mbps;
        let Some(&head) = self.bufs.get(b as usize).and_then(|q| q.front()) else {
            return;
        };
        let finish = (now + ser(self.pkt_bytes, mbps)).max(head.tail_at);
        let pkt = if head.dst == GROUP {
            self.copy_out(now, b, finish)
        } else {
            self.pop(now, b, finish)
        };
        let Some(pkt) = pkt else {
            return;
        };
        if let Some(c) = self.credits.get_mut(k) {
            *c -= self.blocks;
        }
        if let Some(a) = self.arb.get_mut(oi) {
            a.sent(u64::from(self.pkt_bytes), self.blocks);
        }
        if let Some(x) = self.busy.get_mut(oi) {
            *x = true;
        }
        if let Some(d) = self.dft.as_mut() {
            d.sent(oi, self.pkt_bytes);
        }
        if let Some(since) = self.stall_since.get_mut(oi).and_then(Option::take) {
            if let Some(d) = self.dft.as_mut() {
                d.waited(oi, now.saturating_sub(since));
            }
            let (lo, hi) = (since.max(self.warm), now.min(self.end));
            self.stalled(oi, hi.saturating_sub(lo));
        }
        // The bytes on the wire within the window (a packet straddling its edge counts in
        // part, so utilisation stays at most 1).
        let (lo, hi) = (now.max(self.warm), finish.min(self.end));
        if hi > lo {
            let part = u128::from(self.pkt_bytes) * u128::from(hi - lo)
                / u128::from((finish - now).max(1));
            if let Some(s) = self.sent_bytes.get_mut(oi) {
                *s += part as u64;
            }
        }
        if oi < self.chans.len() && b as usize >= self.chans.len() * self.nvl {
            self.counts.injected += 1;
        }
        self.push(finish, Ev::Free { chan: o });
        let arrive = now + self.link_ps;
        self.push(
            arrive,
            Ev::Arrive {
                chan: o,
                pkt: Pkt {
                    vl,
                    head_at: arrive,
                    tail_at: finish + self.link_ps,
                    ..pkt
                },
            },
        );
    }

    /// What channel `oi`'s stall starting now waits on: with VL `starved` out of credits,
    /// the output the next hop's head packet on that VL asked for (it holds the buffer
    /// full), or the end node the channel feeds.
    fn blocked_by(&self, oi: usize, starved: Option<usize>) -> u32 {
        let Some(v) = starved else {
            return NONE;
        };
        match self.chans.get(oi) {
            Some(c) if !c.to_switch => END_NODE,
            Some(_) => self
                .target
                .get(oi * self.nvl + v)
                .copied()
                .flatten()
                .map_or(NONE, |(t, _)| t),
            None => NONE,
        }
    }

    /// Adds `ps` of stall in the window to channel `oi`, and to what it waited on.
    fn stalled(&mut self, oi: usize, ps: u64) {
        if ps == 0 {
            return;
        }
        if let Some(s) = self.stall_ps.get_mut(oi) {
            *s += ps;
        }
        let by = self.blocker.get(oi).copied().unwrap_or(NONE);
        if by == NONE {
            return;
        }
        if let Some(v) = self.stall_to.get_mut(oi) {
            match v.iter_mut().find(|e| e.0 == by) {
                Some(e) => e.1 += ps,
                None => v.push((by, ps)),
            }
        }
    }

    fn name(&self, p: PortRef) -> String {
        let n = self
            .st
            .fabric
            .nodes()
            .get(p.node.index())
            .map_or("?", |n| n.name());
        format!("{n}:{}", p.port.0)
    }

    /// Notes on what the state asks for that is not simulated.
    fn notes(&self) -> Vec<String> {
        let ps = &self.st.path_sl;
        let several = ps.default.len() > 1
            || ps.by_dlid.iter().any(|e| e.sls.len() > 1)
            || ps.by_switch.iter().any(|e| e.sls.len() > 1)
            || ps.by_source.iter().any(|e| e.sls.len() > 1);
        let mut notes = Vec::new();
        if several {
            let lanes = "the state's dFtree lane pairs name each pair's fast and slow SL";
            notes.push(match self.p.dftree {
                DftreeMode::Off => "some pairs have several path SLs (QoS classes, dFtree lanes): the simulated traffic carries no service ID and dFtree's loop is off, so a dFtree pair's flow takes its fast lane and any other its pair's lowest SL".to_owned(),
                DftreeMode::Loop => format!("some pairs have several path SLs: the simulated traffic carries no service ID; dFtree's run-time loop moves flows between lanes ({lanes})"),
                DftreeMode::Oracle => format!("some pairs have several path SLs: the simulated traffic carries no service ID; dFtree's best case puts every packet toward a hot-spot on its slow lane from the start, every other on its fast lane ({lanes})"),
            });
            if self.p.dftree == DftreeMode::Loop && self.p.receive_rate >= 1.0 {
                notes.push("end nodes sink at line rate (receive rate 1): a switch port facing one never waits for credits, so dFtree's loop finds no end-node hot-spot; give a receive rate below 1".to_owned());
            }
        }
        notes
    }

    fn report(&mut self, traffic: &Traffic, seed: u64) -> Report {
        let end = self.end;
        // Close the stalls still open.
        for i in 0..self.stall_since.len() {
            if let Some(since) = self.stall_since.get_mut(i).and_then(Option::take) {
                self.stalled(i, end.saturating_sub(since.max(self.warm)));
            }
        }
        // Where every packet is.
        let nsw = self.chans.len() * self.nvl;
        let buffered: usize = self.bufs.iter().take(nsw).map(VecDeque::len).sum();
        let queued: usize = self.bufs.iter().skip(nsw).map(VecDeque::len).sum();
        let on_wire = self
            .heap
            .iter()
            .filter(|Reverse(i)| matches!(i.ev, Ev::Arrive { .. }))
            .count();
        self.counts.in_flight = (buffered + on_wire) as u64;
        self.counts.queued_at_source = queued as u64;

        let window = end - self.warm;
        let gbps = |bytes: u64| bytes as f64 * 8000.0 / window as f64;
        let stats = |v: &mut dyn Iterator<Item = f64>| {
            let (mut n, mut sum, mut min, mut max) = (0usize, 0.0, f64::INFINITY, 0.0f64);
            for x in v {
                n += 1;
                sum += x;
                min = min.min(x);
                max = max.max(x);
            }
            if n == 0 {
                Throughput::default()
            } else {
                Throughput {
                    mean: sum / n as f64,
                    min,
                    max,
                }
            }
        };
        let h = self.hosts.len();
        let throughput = stats(&mut self.by_src.iter().map(|&b| gbps(b)));
        let classes = matches!(traffic, Traffic::Hotspot { .. }).then(|| {
            let contrib: Vec<usize> = (0..h)
                .filter(|&i| self.pattern.hotspot_of(i as u32).is_some())
                .collect();
            Classes {
                hotspots: (0..h as u32)
                    .filter(|&i| self.pattern.is_hotspot(i))
                    .filter_map(|i| self.hosts.get(i as usize).map(|x| self.name(x.port)))
                    .collect(),
                contributors: ClassThroughput {
                    nodes: contrib.len(),
                    gbps: stats(
                        &mut contrib
                            .iter()
                            .map(|&i| gbps(self.to_hot.get(i).copied().unwrap_or(0))),
                    ),
                },
                victims: ClassThroughput {
                    nodes: h,
                    gbps: stats(
                        &mut self
                            .by_src
                            .iter()
                            .zip(&self.to_hot)
                            .map(|(a, b)| gbps(a - b)),
                    ),
                },
            }
        });
        let lat = &mut self.latencies;
        lat.sort_unstable();
        let pct = |q: f64| -> f64 {
            if lat.is_empty() {
                return 0.0;
            }
            let i = ((lat.len() as f64 * q).ceil() as usize).clamp(1, lat.len()) - 1;
            lat.get(i).map_or(0.0, |&x| x as f64 / PS as f64)
        };
        let latency = Latency {
            p50: pct(0.5),
            p99: pct(0.99),
            max: lat.last().map_or(0.0, |&x| x as f64 / PS as f64),
        };
        let loads: Vec<LinkLoad> = self
            .chans
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let bytes = self.sent_bytes.get(i).copied().unwrap_or(0);
                LinkLoad {
                    from: self.name(c.from),
                    to: self.name(c.to),
                    gbps: c.mbps as f64 / 1000.0,
                    utilisation: bytes as f64 * 8e6 / c.mbps.max(1) as f64 / window as f64,
                    xmit_wait_ns: self.stall_ps.get(i).copied().unwrap_or(0) as f64 / PS as f64,
                }
            })
            .collect();
        let congestion_trees = crate::trees::find(
            &self
                .chans
                .iter()
                .zip(&loads)
                .enumerate()
                .map(|(i, (c, l))| crate::trees::Port {
                    from: l.from.clone(),
                    to: l.to.clone(),
                    end_node: c.to_host.and_then(|h| {
                        let x = self.hosts.get(h as usize)?;
                        Some(
                            self.st
                                .fabric
                                .nodes()
                                .get(x.port.node.index())?
                                .name()
                                .to_owned(),
                        )
                    }),
                    utilisation: l.utilisation,
                    stall_ps: self.stall_ps.get(i).copied().unwrap_or(0),
                    stall_to: self.stall_to.get(i).cloned().unwrap_or_default(),
                })
                .collect::<Vec<_>>(),
            window,
        );
        let jobs = self.job_reports(traffic, &gbps);
        let stall_total_ns = self.stall_ps.iter().sum::<u64>() as f64 / PS as f64;
        let mut hottest = loads.clone();
        hottest.sort_by(|a, b| {
            b.utilisation
                .total_cmp(&a.utilisation)
                .then_with(|| a.from.cmp(&b.from))
        });
        hottest.truncate(self.p.top);
        let mut stalled: Vec<LinkLoad> =
            loads.into_iter().filter(|l| l.xmit_wait_ns > 0.0).collect();
        stalled.sort_by(|a, b| {
            b.xmit_wait_ns
                .total_cmp(&a.xmit_wait_ns)
                .then_with(|| a.from.cmp(&b.from))
        });
        stalled.truncate(self.p.top);
        Report {
            fabric: self.st.fabric.name.clone(),
            traffic: traffic.spec(),
            seed,
            params: self.p.clone(),
            window_ns: window / PS,
            hosts: h,
            vls: self.nvl as u8,
            payload_bytes: self.payload,
            throughput_per_node_gbps: throughput,
            classes,
            latency_ns: latency,
            packets: self.counts,
            hottest_links: hottest,
            stalled_ports: stalled,
            stall_total_ns,
            congestion_trees,
            jobs,
            notes: self.notes(),
            dftree: self.dft.take().map(|d| {
                d.finish(
                    |h| {
                        self.hosts
                            .get(h as usize)
                            .map_or_else(|| format!("host {h}"), |x| self.name(x.port))
                    },
                    |(g, p)| {
                        self.st.fabric.find_guid(weft_fabric::Guid(g)).map_or_else(
                            || format!("{:#018x}:{p}", g),
                            |n| self.name(PortRef::new(n, p)),
                        )
                    },
                )
            }),
            multicast: self.mc.as_ref().map(|m| McReport {
                mlid: m.mlid.to_string(),
                sl: m.sl.0,
                senders: m.sender.iter().filter(|&&x| x).count(),
                receivers: m.receiver.iter().filter(|&&x| x).count(),
                delivered: m.delivered,
                delivered_gbps_per_receiver: stats(
                    &mut m
                        .bytes
                        .iter()
                        .zip(&m.receiver)
                        .filter(|x| *x.1)
                        .map(|(&b, _)| gbps(b)),
                ),
                dropped_no_mft_entry: m.no_entry,
                dropped_at_non_receiver: m.non_receiver,
            }),
            events: self.events,
            wall: std::time::Duration::ZERO,
        }
    }
}

impl Sim<'_> {
    /// Per job of a job file: its throughput per node and latency.
    fn job_reports(&mut self, traffic: &Traffic, gbps: &dyn Fn(u64) -> f64) -> Vec<JobReport> {
        let Traffic::Jobs(jobs) = traffic else {
            return Vec::new();
        };
        jobs.jobs
            .iter()
            .enumerate()
            .map(|(j, job)| {
                let members: Vec<u32> = (0..self.hosts.len() as u32)
                    .filter(|&h| self.pattern.job(h) == Some(j))
                    .collect();
                let th: Vec<f64> = members
                    .iter()
                    .map(|&h| gbps(self.by_src.get(h as usize).copied().unwrap_or(0)))
                    .collect();
                let n = th.len().max(1) as f64;
                let lat = self
                    .job_lat
                    .get_mut(j)
                    .map(std::mem::take)
                    .unwrap_or_default();
                let mut lat = lat;
                lat.sort_unstable();
                let pct = |q: f64| -> f64 {
                    if lat.is_empty() {
                        return 0.0;
                    }
                    let i = ((lat.len() as f64 * q).ceil() as usize).clamp(1, lat.len()) - 1;
                    lat.get(i).map_or(0.0, |&x| x as f64 / PS as f64)
                };
                JobReport {
                    name: job.name.clone(),
                    pattern: job.traffic.spec(),
                    hosts: members.len(),
                    load: self
                        .pattern
                        .load_of(members.first().copied().unwrap_or(0), self.p.load),
                    from_ns: job.from_ns,
                    until_ns: job.until_ns,
                    throughput_per_node_gbps: Throughput {
                        mean: th.iter().sum::<f64>() / n,
                        min: th
                            .iter()
                            .copied()
                            .fold(f64::INFINITY, f64::min)
                            .min(f64::MAX),
                        max: th.iter().copied().fold(0.0, f64::max),
                    },
                    latency_ns: Latency {
                        p50: pct(0.5),
                        p99: pct(0.99),
                        max: lat.last().map_or(0.0, |&x| x as f64 / PS as f64),
                    },
                }
            })
            .collect()
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
