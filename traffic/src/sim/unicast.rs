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
        let (port, via, inj, chan, interval) =
            (host.port, host.via, host.inj, host.chan, host.interval);
        let dst = self.pattern.draw(h, &mut host.rng, now);
        let model = self.p.host;
        // Refusing hosts and hosts with unbounded queues generate on; the others only once
        // this packet is queued.
        let refuse = matches!(model, HostModel::Refuse | HostModel::Unbounded);
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
                let Some(&dlid) = self.lids.get(dst as usize) else {
                    if !refuse {
                        self.push(next, Ev::Gen { host: h });
                    }
                    return;
                };
                let sls = self.st.path_sl.get(port, via, dlid);
                let sl = match &self.dft {
                    Some(d) => d.sl(h, dst, dlid.0, sls, &self.pattern),
                    None => sls.iter().next().unwrap_or(Sl(0)),
                };
                (dlid, sl)
            }
        };
        let vl = inj.get(usize::from(sl.0)).copied().unwrap_or(0);
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
        if q.len() >= cap && model != HostModel::Unbounded {
            match model {
                HostModel::Refuse | HostModel::Unbounded => self.counts.refused_at_source += 1,
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
        self.part.target_set(b, Some((chan, vl)));
        if let Some(o) = self
            .outs
            .get_mut(chan as usize * self.nvl + usize::from(vl))
        {
            o.reqs.push(b);
        }
    }

    /// Packet `pkt` arrives over channel `c`: into an end node when its head arrives, into a
    /// switch's input buffer a switch latency after that.
    pub(super) fn arrive(&mut self, now: u64, c: u32, pkt: Pkt) {
        let Some((to_switch, to_host)) = self
            .wires
            .get(c as usize)
            .map(|w| (w.to_switch, (w.to_host != NONE).then_some(w.to_host)))
        else {
            return;
        };
        if !to_switch {
            // Into an end node: it drains what arrives one packet after the other, at its
            // link's rate times the receive rate, from the head's arrival (or when the one
            // before has drained) until the later of that and the tail's arrival; the credit
            // goes back when drained, and the packet is delivered then.
            let (start, done) = self.sink(now, c, to_host, &pkt);
            self.push(
                done.saturating_add(self.link_ps),
                Ev::Credit {
                    chan: c,
                    vl: pkt.vl,
                    blocks: self.blocks,
                },
            );
            if pkt.dst == GROUP {
                self.delivered_copy(to_host, pkt, start, done);
                return;
            }
            if to_host != Some(pkt.dst) {
                self.counts.dropped += 1;
                return;
            }
            if done > self.end && !self.p.drain {
                // Still draining when the run stops: in flight, not delivered.
                self.receiving += 1;
                return;
            }
            self.counts.delivered += 1;
            let part = self.window_part(u64::from(self.payload), start, done);
            if part > 0 {
                if let Some(s) = self.recv.get_mut(pkt.dst as usize) {
                    *s += part;
                }
                if let Some(s) = self.by_src.get_mut(pkt.src as usize) {
                    *s += part;
                }
                if self.pattern.hotspot_of(pkt.src) == Some(pkt.dst) {
                    if let Some(s) = self.to_hot.get_mut(pkt.src as usize) {
                        *s += part;
                    }
                }
            }
            if self.in_window(done) {
                self.counts.delivered_in_window += 1;
                self.latencies.push(done - pkt.born);
                if let Some(l) = self
                    .pattern
                    .job(pkt.src)
                    .and_then(|j| self.job_lat.get_mut(j))
                {
                    l.push(done - pkt.born);
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
        // The event comes a switch latency after the head arrived (`pkt.head_at`): the packet
        // goes into its buffer then, and is routed at once if it is the head (with virtual
        // output queues, every packet is).
        q.push_back(pkt);
        if self.voq {
            if let Some(u) = self.unrouted.get_mut(b) {
                *u += 1;
            }
            self.route(now, b as u32);
        } else if q.len() == 1 {
            self.route(now, b as u32);
        }
    }

    /// Where a unicast packet `pkt` in the buffer of channel `c` leaves its switch: the
    /// output channel its LFT entry names and the VL `SL2VL[in][out][SL]` gives, or `None`
    /// (no entry, port 0, no live link, a VL beyond the data VLs): dropped.
    pub(super) fn unicast_out(&self, c: usize, pkt: &Pkt) -> Option<(u32, u8)> {
        let hop = self.hops.get(c)?;
        let p = hop
            .lft
            .get(usize::from(pkt.dlid))
            .copied()
            .filter(|&p| p != LFT_UNSET && p != 0)?;
        if u32::from(p) >= hop.out_len {
            return None;
        }
        let oc = *self.out_flat.get((hop.out_at + u32::from(p)) as usize)?;
        let vl = match hop.vl {
            VlMap::Zero => 0,
            VlMap::All(t) => *t.get(usize::from(pkt.sl))?,
            VlMap::Rows(sw) => sw.vl(hop.in_port, PortNum(p), Sl(pkt.sl))?.0,
        };
        (oc != NONE && usize::from(vl) < self.nvl).then_some((oc, vl))
    }

    /// Routes switch buffer `b`'s head packet (with virtual output queues, the packet that
    /// arrived first of those not routed yet): asks for its output, or drops it.
    pub(super) fn route(&mut self, now: u64, b: u32) {
        if self.voq {
            self.route_voq(now, b);
            return;
        }
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
        match self.unicast_out(c, &pkt) {
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
        self.part.target_set(b, None);
        let nch = self.chans.len();
        let c = bi / self.nvl;
        if c < nch {
            if let Some(f) = self.fill.get_mut(bi) {
                *f = f.saturating_sub(self.blocks);
            }
            self.push(
                gone.saturating_add(self.link_ps),
                Ev::Credit {
                    chan: c as u32,
                    vl: pkt.vl,
                    blocks: self.blocks,
                },
            );
            if let Some(next) = self.bufs.get(bi).and_then(|q| q.front()) {
                let t = now.max(next.head_at.saturating_add(self.sw_ps));
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

    /// Virtual output queues: routes the first packet of buffer `b` not routed yet. It asks
    /// for its output unless an older packet of the buffer already waits for the same
    /// (output, VL), whose queue it joins; a packet that cannot be forwarded is dropped and
    /// its room goes back.
    fn route_voq(&mut self, now: u64, b: u32) {
        let (bi, c) = (b as usize, b as usize / self.nvl);
        let Some(un) = self.unrouted.get_mut(bi) else {
            return;
        };
        let len = self.bufs.get(bi).map_or(0, VecDeque::len);
        let i = len.saturating_sub(*un as usize);
        *un = un.saturating_sub(1);
        let Some(&pkt) = self.bufs.get(bi).and_then(|q| q.get(i)) else {
            return;
        };
        match self.unicast_out(c, &pkt) {
            Some(out) => {
                let older = self
                    .bufs
                    .get(bi)
                    .into_iter()
                    .flat_map(|q| q.iter().take(i))
                    .any(|x| self.unicast_out(c, x) == Some(out));
                if !older {
                    self.request(b, out.0, out.1);
                    self.try_send(now, out.0);
                }
            }
            None => {
                self.counts.dropped += 1;
                self.take_voq(b, i, now);
            }
        }
    }

    /// Virtual output queues: takes packet `i` out of switch buffer `b`, its tail leaving at
    /// `gone`; its room goes back upstream.
    fn take_voq(&mut self, b: u32, i: usize, gone: u64) -> Option<Pkt> {
        let bi = b as usize;
        let pkt = self.bufs.get_mut(bi)?.remove(i)?;
        if let Some(f) = self.fill.get_mut(bi) {
            *f = f.saturating_sub(self.blocks);
        }
        self.push(
            gone.saturating_add(self.link_ps),
            Ev::Credit {
                chan: (bi / self.nvl) as u32,
                vl: pkt.vl,
                blocks: self.blocks,
            },
        );
        Some(pkt)
    }

    /// Virtual output queues: where in switch buffer `b` the packet that leaves on (channel
    /// `o`, VL `vl`) is: the oldest routed one for that output.
    fn find_voq(&self, b: u32, o: u32, vl: u8) -> Option<usize> {
        let (bi, c) = (b as usize, b as usize / self.nvl);
        let q = self.bufs.get(bi)?;
        let routed = q.len() - (self.unrouted.get(bi).copied().unwrap_or(0) as usize).min(q.len());
        q.iter()
            .take(routed)
            .position(|x| self.unicast_out(c, x) == Some((o, vl)))
    }

    /// Virtual output queues: packet `i` of switch buffer `b` left on (channel `o`, VL
    /// `vl`), its tail at `gone`; the next packet for that output, if any, asks for it.
    fn leave_voq(&mut self, b: u32, i: usize, o: u32, vl: u8, gone: u64) -> Option<Pkt> {
        let pkt = self.take_voq(b, i, gone)?;
        let (bi, c) = (b as usize, b as usize / self.nvl);
        let more = self.bufs.get(bi).is_some_and(|q| {
            let routed =
                q.len() - (self.unrouted.get(bi).copied().unwrap_or(0) as usize).min(q.len());
            q.iter()
                .take(routed)
                .skip(i)
                .any(|x| self.unicast_out(c, x) == Some((o, vl)))
        });
        if more {
            self.request(b, o, vl);
        }
        Some(pkt)
    }

    /// The output channels switch buffer `b`'s packets ask for (its head's; with virtual
    /// output queues, every routed packet's), each once.
    fn asked_for(&self, b: u32) -> Vec<u32> {
        let bi = b as usize;
        if !self.voq {
            return self
                .target
                .get(bi)
                .copied()
                .flatten()
                .map(|(o, _)| o)
                .into_iter()
                .collect();
        }
        let c = bi / self.nvl;
        let Some(q) = self.bufs.get(bi) else {
            return Vec::new();
        };
        let routed = q.len() - (self.unrouted.get(bi).copied().unwrap_or(0) as usize).min(q.len());
        let mut outs: Vec<u32> = q
            .iter()
            .take(routed)
            .filter_map(|x| self.unicast_out(c, x).map(|o| o.0))
            .collect();
        outs.sort_unstable();
        outs.dedup();
        outs
    }

    /// Channel `o` finished sending a packet that came out of input channel `from` (`NONE`:
    /// a host's source queue): the output is free again, and an input that was at its
    /// limit of parallel sends may feed the outputs its packets ask for.
    pub(super) fn freed(&mut self, now: u64, o: u32, from: u32) {
        if let Some(w) = self.wake.get_mut(o as usize) {
            *w = false;
        }
        let mut wake = false;
        if let Some(n) = self.sending.get_mut(from as usize) {
            wake = *n == self.limit;
            *n = n.saturating_sub(1);
        }
        self.try_send(now, o);
        if wake {
            for v in 0..self.nvl {
                let b = (from as usize * self.nvl + v) as u32;
                for out in self.asked_for(b) {
                    self.try_send(now, out);
                }
            }
        }
    }

    /// Whether buffer `b` may start a send: a switch input under its limit of parallel
    /// sends, or a host's source queue.
    fn may_send(&self, b: u32) -> bool {
        self.limit == u32::MAX
            || self
                .sending
                .get(b as usize / self.nvl)
                .is_none_or(|&n| n < self.limit)
    }

    /// Sends on channel `o` if it is idle and a packet with credits is waiting. A busy
    /// channel asked makes sure a `Free` event comes when it is done.
    pub(super) fn try_send(&mut self, now: u64, o: u32) {
        let oi = o as usize;
        let Some(&until) = self.busy_until.get(oi) else {
            return;
        };
        if now < until {
            if let Some(w) = self.wake.get_mut(oi).filter(|w| !**w) {
                *w = true;
                self.push(
                    until,
                    Ev::Free {
                        chan: o,
                        from: NONE,
                    },
                );
            }
            return;
        }
        let base = oi * self.nvl;
        let Some(vl) = self.choose_vl(now, oi) else {
            return;
        };
        let k = base + usize::from(vl);
        let Some(b) = self.pick_buffer(k) else {
            return;
        };
        if let Some(o) = self.outs.get_mut(k) {
            o.reqs.remove(b);
            o.last = b;
        }
        let Some(&Wire {
            ser_ps, to_switch, ..
        }) = self.wires.get(oi)
        else {
            return;
        };
        let switch_in = (b as usize) < self.chans.len() * self.nvl;
        let at = if self.voq && switch_in {
            self.find_voq(b, o, vl)
        } else {
            Some(0)
        };
        let Some((at, head)) = at.and_then(|i| Some((i, *self.bufs.get(b as usize)?.get(i)?)))
        else {
            return;
        };
        let finish = now.saturating_add(ser_ps).max(head.tail_at);
        let pkt = if head.dst == GROUP {
            self.copy_out(now, b, finish)
        } else if self.voq && switch_in {
            self.leave_voq(b, at, o, vl, finish)
        } else {
            self.pop(now, b, finish)
        };
        let Some(pkt) = pkt else {
            return;
        };
        let from = self.account_send(now, oi, b, k, finish);
        // The output is free at `finish`; an event then only if an input waits for it
        // already (a later request or credit asks for one, above) or a send is counted.
        let waiting =
            (0..self.nvl).any(|v| self.outs.get(base + v).is_some_and(|o| !o.reqs.is_empty()));
        let wake = waiting || from != NONE;
        if let Some(w) = self.wake.get_mut(oi) {
            *w = wake;
        }
        if wake {
            self.push(finish, Ev::Free { chan: o, from });
        }
        let arrive = now.saturating_add(self.link_ps);
        // Into a switch, one event a switch latency after the head arrived: the packet is
        // buffered and may be routed then (nothing looks at it before).
        self.push(
            if to_switch {
                arrive.saturating_add(self.sw_ps)
            } else {
                arrive
            },
            Ev::Arrive {
                chan: o,
                pkt: Pkt {
                    vl,
                    head_at: arrive,
                    tail_at: finish.saturating_add(self.link_ps),
                    ..pkt
                },
            },
        );
    }

    /// The VL channel `oi` sends on next: one with a request that may start and credits,
    /// by arbitration. With none, a stall starts now if a request waits.
    fn choose_vl(&mut self, now: u64, oi: usize) -> Option<u8> {
        let base = oi * self.nvl;
        let mut ready = 0u16;
        let mut waiting = false;
        let mut starved = None;
        for v in 0..self.nvl {
            let Some(o) = self.outs.get(base + v) else {
                continue;
            };
            let r = &o.reqs;
            if r.is_empty() {
                continue;
            }
            waiting = true;
            if o.credits >= self.blocks {
                // An input at its limit of parallel sends cannot start another.
                if r.iter().any(|&b| self.may_send(b)) {
                    ready |= 1 << v;
                }
            } else if starved.is_none() {
                starved = Some(v);
            }
        }
        let pick = if ready == 0 {
            None
        } else {
            self.arb.get_mut(oi).and_then(|a| a.pick(ready))
        };
        if pick.is_none() && waiting && self.stall_since.get(oi).is_some_and(Option::is_none) {
            if let Some(s) = self.stall_since.get_mut(oi) {
                *s = Some(now);
            }
            let by = self.blocked_by(oi, starved);
            if let Some(b) = self.blocker.get_mut(oi) {
                *b = by;
            }
        }
        pick
    }

    /// The buffer output VL slot `k` serves next: round robin over the buffers asking (that
    /// may start a send), the first after the one served last.
    fn pick_buffer(&self, k: usize) -> Option<u32> {
        let (last, r) = self.outs.get(k).map(|o| (o.last, &o.reqs))?;
        if self.limit == u32::MAX {
            // Every buffer may send: one pass for the first after `last` and the first of all.
            let (mut after, mut first) = (NONE, NONE);
            for &x in r.iter() {
                first = first.min(x);
                if (last == NONE || x > last) && x < after {
                    after = x;
                }
            }
            Some(if after != NONE { after } else { first }).filter(|&x| x != NONE)
        } else {
            r.iter()
                .copied()
                .filter(|&x| (last == NONE || x > last) && self.may_send(x))
                .min()
                .or_else(|| r.iter().copied().filter(|&x| self.may_send(x)).min())
        }
    }

    /// The books of a send from buffer `b` on output VL slot `k` of channel `oi`, from `now`
    /// to `finish`: parallel sends, credits, arbitration, busy time, stalls ended, bytes in
    /// the window, injections. Returns the input whose parallel send is counted (`NONE`).
    fn account_send(&mut self, now: u64, oi: usize, b: u32, k: usize, finish: u64) -> u32 {
        let switch_in = (b as usize) < self.chans.len() * self.nvl;
        // Parallel sends are counted only under a limit.
        let from = if switch_in && self.limit != u32::MAX {
            let c = b / self.nvl as u32;
            if let Some(n) = self.sending.get_mut(c as usize) {
                *n += 1;
            }
            c
        } else {
            NONE
        };
        if let Some(o) = self.outs.get_mut(k) {
            o.credits -= self.blocks;
        }
        if let Some(a) = self.arb.get_mut(oi) {
            a.sent(u64::from(self.pkt_bytes), self.blocks);
        }
        if let Some(x) = self.busy_until.get_mut(oi) {
            *x = finish;
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
        from
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
            Some(_) if self.voq => {
                // The oldest packet in the next hop's buffer, if routed: its output.
                let b = oi * self.nvl + v;
                let routed = self
                    .unrouted
                    .get(b)
                    .is_some_and(|&u| self.bufs.get(b).is_some_and(|q| q.len() > u as usize));
                self.bufs
                    .get(b)
                    .and_then(|q| q.front())
                    .filter(|_| routed)
                    .and_then(|x| self.unicast_out(oi, x))
                    .map_or(NONE, |(t, _)| t)
            }
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
