//! Building a simulation: the channels, hosts, buffers and dFtree's loop a state and its
//! traffic need.

use super::*;

impl<'a> Sim<'a> {
    pub(super) fn new(
        st: &'a FabricState,
        traffic: &Traffic,
        p: &'a Params,
        seed: u64,
    ) -> Result<Sim<'a>, SimError> {
        let warm_ns = Self::check_params(traffic, p)?;
        let f = &st.fabric;
        let Sizes {
            payload,
            pkt_bytes,
            blocks,
            buf_blocks,
        } = Sizes::of(st, p)?;
        let nvl = Self::data_vls(st);

        let (mut chans, out_chan) = Self::channels(st, p, pkt_bytes);
        let mut hosts = Self::hosts(st, p, seed, pkt_bytes, &chans, &out_chan);
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
        let (hops, out_flat) = hops(&chans, &out_chan, &sw);
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
            out_flat,
            sw,
            hops,
            bufs: vec![VecDeque::new(); nbuf],
            target: vec![None; nbuf],
            busy_until: vec![0; nch],
            wake: vec![false; nch],
            sending: vec![0; nch],
            limit: p.parallel_sends.unwrap_or(u32::MAX),
            voq: p.switch_buffers == SwitchBuffers::Voq,
            unrouted: if p.switch_buffers == SwitchBuffers::Voq {
                vec![0; nch * nvl]
            } else {
                Vec::new()
            },
            outs: vec![
                OutVl {
                    credits: buf_blocks,
                    last: NONE,
                    reqs: Reqs::default(),
                };
                nch * nvl
            ],
            arb,
            stall_since: vec![None; nch],
            stall_ps: vec![0; nch],
            blocker: vec![NONE; nch],
            stall_to: vec![Vec::new(); nch],
            job_lat: vec![Vec::new(); pattern.job_count()],
            sent_bytes: vec![0; nch],
            pattern,
            heap: Queue::new(),
            seq: 0,
            events: 0,
            counts: Packets::default(),
            recv: vec![0; hosts.len()],
            by_src: vec![0; hosts.len()],
            to_hot: vec![0; hosts.len()],
            receiving: 0,
            latencies: Vec::new(),
            max_fill: 0,
            fill: vec![0; nbuf],
            sink_free: vec![0; hosts.len()],
            dft,
            mc,
            wires: chans
                .iter()
                .map(|c| Wire {
                    ser_ps: ser(pkt_bytes, c.mbps),
                    to_switch: c.to_switch,
                    to_host: c.to_host.unwrap_or(NONE),
                })
                .collect(),
            lids: hosts.iter().map(|h| h.lid).collect(),
            chans,
            hosts,
            part: Part::whole(),
        };
        sim.schedule_first();
        if sim.dft.as_ref().is_some_and(Loop::sweeping) {
            sim.push(0, Ev::Sweep);
        }
        Ok(sim)
    }

    /// Refuses parameters the simulation cannot run; returns the warm-up in ns.
    fn check_params(traffic: &Traffic, p: &Params) -> Result<u64, SimError> {
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
        if p.parallel_sends == Some(0) {
            return Err(SimError::Param(
                "the parallel sends of a switch input port must be at least 1".into(),
            ));
        }
        if p.switch_buffers == SwitchBuffers::Voq && matches!(traffic, Traffic::Multicast { .. }) {
            return Err(SimError::Param(
                "multicast traffic with virtual output queues (switch buffers `voq`) is not \
                 built yet: run it with switch buffers `fifo`"
                    .into(),
            ));
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
        Ok(warm_ns)
    }

    /// Data VLs: the highest any table names, plus one.
    fn data_vls(st: &FabricState) -> usize {
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
        usize::from(top) + 1
    }

    /// Channels: both directions of every live link; and each node's port's channel out
    /// (`NONE`: none).
    fn channels(st: &FabricState, p: &Params, pkt_bytes: u32) -> (Vec<Chan>, Vec<Vec<u32>>) {
        let f = &st.fabric;
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
                    drain_ps: drain_time(pkt_bytes, mbps, p.receive_rate),
                });
            }
        }
        (chans, out_chan)
    }

    /// Hosts: end ports of role host, up, with a LID, cabled to a switch; each with its own
    /// random stream drawn from `seed`.
    fn hosts(
        st: &FabricState,
        p: &Params,
        seed: u64,
        pkt_bytes: u32,
        chans: &[Chan],
        out_chan: &[Vec<u32>],
    ) -> Vec<Host> {
        let f = &st.fabric;
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
                    via: st.source_switch(pr),
                    inj: std::array::from_fn(|sl| st.injection_vl(pr, Sl(sl as u8)).0),
                    lid,
                    chan: c,
                    rng,
                    interval,
                    held: None,
                });
            }
        }
        hosts
    }

    /// Every sending host's first packet, at a random point of its first interval (from its
    /// job's start).
    fn schedule_first(&mut self) {
        for h in 0..self.hosts.len() {
            if self
                .mc
                .as_ref()
                .is_some_and(|m| !m.sender.get(h).copied().unwrap_or(false))
            {
                continue;
            }
            let from = match self.pattern.active(h as u32, 0) {
                Active::Now => 0,
                Active::From(t) => t,
                Active::Never => continue,
            };
            let first = self.hosts.get_mut(h).map(|x| {
                let i = x.interval;
                x.rng.below(i)
            });
            self.push(from + first.unwrap_or(0), Ev::Gen { host: h as u32 });
        }
    }

    /// Multicast traffic's group `mlid`: its members among the hosts; refused when the
    /// state has no such group, no MFTs, or no host member.
    pub(super) fn group(
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
}

/// Per channel, what routing at its receiving switch reads; and every node's output channels
/// in one row (node after node).
fn hops<'a>(
    chans: &[Chan],
    out_chan: &[Vec<u32>],
    sw: &[Option<&'a SwitchState>],
) -> (Vec<Hop<'a>>, Vec<u32>) {
    let mut at = Vec::with_capacity(out_chan.len());
    let mut out_flat = Vec::new();
    for row in out_chan {
        at.push(out_flat.len() as u32);
        out_flat.extend_from_slice(row);
    }
    let hops = chans
        .iter()
        .map(|ch| {
            let n = ch.to.node.index();
            let s = sw.get(n).copied().flatten();
            let vl = match s {
                Some(s) if s.sl2vl.is_empty() => s.sl2vl_all.map_or(VlMap::Zero, VlMap::All),
                Some(s) => VlMap::Rows(s),
                None => VlMap::Zero,
            };
            Hop {
                lft: s.map_or(&[][..], |s| &s.lft.ports[..]),
                out_at: at.get(n).copied().unwrap_or(0),
                out_len: out_chan.get(n).map_or(0, |r| r.len() as u32),
                in_port: ch.to.port,
                vl,
            }
        })
        .collect();
    (hops, out_flat)
}

/// A packet's sizes, from the parameters and the fabric's smallest MTU.
struct Sizes {
    /// Payload bytes per packet.
    payload: u32,
    /// Bytes per packet, headers included.
    pkt_bytes: u32,
    /// Credit blocks per packet.
    blocks: u32,
    /// Credit blocks per input buffer and VL.
    buf_blocks: u32,
}

impl Sizes {
    /// The sizes `p` asks for on `st`'s fabric; refused when a buffer cannot hold a packet.
    fn of(st: &FabricState, p: &Params) -> Result<Sizes, SimError> {
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
        Ok(Sizes {
            payload,
            pkt_bytes,
            blocks,
            buf_blocks,
        })
    }
}

/// The time an end node takes to drain a packet of `bytes` from a link of `mbps` at
/// `receive_rate` of it, in picoseconds: the serialisation time at line rate, longer below
/// it (at most 10^18 ps, about 11 days, for a rate too small to drain anything).
fn drain_time(bytes: u32, mbps: u64, receive_rate: f64) -> u64 {
    if receive_rate >= 1.0 {
        return ser(bytes, mbps);
    }
    let ps = (f64::from(bytes) * 8e6 / (mbps.max(1) as f64 * receive_rate)).ceil();
    if ps.is_finite() && ps < 1e18 {
        (ps as u64).max(ser(bytes, mbps))
    } else {
        1_000_000_000_000_000_000
    }
}
