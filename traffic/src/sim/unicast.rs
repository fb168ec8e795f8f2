//! The unicast path: generation at the hosts, arrival, routing by the LFTs, credits and the
//! output ports' arbitration.

use super::*;

impl Sim<'_> {
    pub(super) fn generate(&mut self, now: u64, h: u32) {
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
    pub(super) fn source_buf(&self, h: u32, vl: u8) -> usize {
        let vl = if self.p.host == HostModel::Fifo {
            0
        } else {
            vl
        };
        (self.chans.len() + h as usize) * self.nvl + usize::from(vl)
    }

    /// Puts a generated packet in source queue `b`; the head asks for the host's link.
    pub(super) fn enqueue(&mut self, now: u64, b: usize, chan: u32, pkt: Pkt) {
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
    pub(super) fn request(&mut self, b: u32, chan: u32, vl: u8) {
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

    pub(super) fn arrive(&mut self, now: u64, c: u32, pkt: Pkt) {
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
    pub(super) fn route(&mut self, now: u64, b: u32) {
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

    /// Takes buffer `b`'s head out, its tail leaving at `gone`: the room goes back upstream
    /// and the next head comes up.
    pub(super) fn pop(&mut self, now: u64, b: u32, gone: u64) -> Option<Pkt> {
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
    pub(super) fn try_send(&mut self, now: u64, o: u32) {
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
    pub(super) fn blocked_by(&self, oi: usize, starved: Option<usize>) -> u32 {
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
    pub(super) fn stalled(&mut self, oi: usize, ps: u64) {
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
}
