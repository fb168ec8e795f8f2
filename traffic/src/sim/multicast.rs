//! Multicast: replication by the MFTs, one copy per output port, the input slot freed when the
//! last copy has left.

use super::*;

impl Sim<'_> {
    /// A multicast copy reaching end node `to_host`, draining from `start` until `done`:
    /// delivered if the host receives the group (and did not send it) and has drained it
    /// before the run stops, else dropped (or, still draining, in flight).
    pub(super) fn delivered_copy(&mut self, to_host: Option<u32>, pkt: Pkt, start: u64, done: u64) {
        let in_window = self.in_window(done);
        let part = self.window_part(u64::from(self.payload), start, done);
        let unfinished = done > self.end && !self.p.drain;
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
        if unfinished {
            self.receiving += 1;
            return;
        }
        m.delivered += 1;
        self.counts.delivered += 1;
        if let Some(x) = m.bytes.get_mut(h as usize) {
            *x += part;
        }
        if in_window {
            self.counts.delivered_in_window += 1;
            self.latencies.push(done - pkt.born);
        }
    }

    /// Routes switch buffer `b`'s multicast head packet: it asks for every port of the
    /// switch's MFT entry for its MLID but the one it came in on (and port 0, the switch's
    /// own), each copy on the VL `SL2VL[in][out][SL]` gives; with none, it is dropped.
    pub(super) fn route_group(
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
    pub(super) fn copy_out(&mut self, now: u64, b: u32, finish: u64) -> Option<Pkt> {
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
}
