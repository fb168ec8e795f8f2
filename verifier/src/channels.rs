//! The channel dependency graph: a concurrent bitset of dependencies per switch, and its
//! edges between channel ids. The graph algorithms on it (strongly connected components, a
//! cycle in each, a topological rank per channel) are the shared ones of
//! [`weft_fabric::graph`], on a [`Graph`].

use crate::net::{Net, PortLink};

use std::sync::atomic::{AtomicU64, Ordering};
/// The channel dependency graph over channel ids (see [`Net::channel`]).
pub(crate) use weft_fabric::graph::Csr as Graph;

/// Dependencies `(in port, in VL) → (out port, out VL)` at each switch, as one bitset.
/// Inserting is lock-free and idempotent, so per-destination workers share it and the result
/// does not depend on the order they run in.
pub(crate) struct DepSet {
    bits: Vec<AtomicU64>,
    /// First bit of each switch (by switch index).
    base: Vec<u64>,
    /// `(port count + 1) * VLs` of each switch.
    stride: Vec<u64>,
    vls: u64,
}

impl DepSet {
    pub(crate) fn new(net: &Net<'_>) -> DepSet {
        let vls = u64::from(net.vls);
        let mut base = Vec::with_capacity(net.switches.len());
        let mut stride = Vec::with_capacity(net.switches.len());
        let mut total = 0u64;
        for &x in &net.switches {
            let p = u64::from(net.port_count.get(x as usize).copied().unwrap_or(0));
            let s = (p + 1) * vls;
            base.push(total);
            stride.push(s);
            total += s * s;
        }
        let words = total.div_ceil(64) as usize;
        let mut bits = Vec::with_capacity(words);
        bits.resize_with(words, || AtomicU64::new(0));
        DepSet {
            bits,
            base,
            stride,
            vls,
        }
    }

    /// Records the dependency at switch index `k`.
    pub(crate) fn insert(&self, k: u32, i: u8, vin: u8, o: u8, vout: u8) {
        let (Some(&base), Some(&stride)) = (self.base.get(k as usize), self.stride.get(k as usize))
        else {
            return;
        };
        let a = u64::from(i) * self.vls + u64::from(vin);
        let b = u64::from(o) * self.vls + u64::from(vout);
        if a >= stride || b >= stride {
            return;
        }
        let bit = base + a * stride + b;
        let mask = 1u64 << (bit % 64);
        if let Some(w) = self.bits.get((bit / 64) as usize) {
            if w.load(Ordering::Relaxed) & mask == 0 {
                w.fetch_or(mask, Ordering::Relaxed);
            }
        }
    }

    /// Adds every dependency of `other` (a set over the same net).
    pub(crate) fn absorb(&self, other: &DepSet) {
        for (w, o) in self.bits.iter().zip(&other.bits) {
            let v = o.load(Ordering::Relaxed);
            if v != 0 {
                w.fetch_or(v, Ordering::Relaxed);
            }
        }
    }

    /// Every dependency as `(switch, in port, in VL, out port, out VL)`, in switch and bit
    /// order.
    #[cfg(test)]
    pub(crate) fn each(&self, net: &Net<'_>) -> Vec<(u32, u8, u8, u8, u8)> {
        self.each_masked(net, None)
    }

    /// [`DepSet::each`] of the dependencies `other` (a set over the same net) does not have.
    pub(crate) fn each_not_in(&self, net: &Net<'_>, other: &DepSet) -> Vec<(u32, u8, u8, u8, u8)> {
        self.each_masked(net, Some(other))
    }

    fn each_masked(&self, net: &Net<'_>, without: Option<&DepSet>) -> Vec<(u32, u8, u8, u8, u8)> {
        let mut out = Vec::new();
        self.visit(net, without, |d| out.push(d));
        out
    }

    /// Every dependency as a channel-id edge `(held, wanted)`, sorted ([`edges`] of
    /// [`DepSet::each`], without the list of dependencies in between: on the largest fabrics
    /// it is tens of millions).
    pub(crate) fn edges(&self, net: &Net<'_>) -> Vec<(u32, u32)> {
        let count: u64 = self
            .bits
            .iter()
            .map(|w| u64::from(w.load(Ordering::Relaxed).count_ones()))
            .sum();
        let mut e = Vec::with_capacity(count as usize);
        self.visit(net, None, |d| e.extend(edge(net, d)));
        e.sort_unstable();
        e.dedup();
        e
    }

    /// The channel dependency graph ([`Graph::new`] of [`DepSet::edges`], built without the
    /// list of edges: on the largest fabrics it is tens of millions).
    pub(crate) fn graph(&self, net: &Net<'_>) -> Graph {
        let n = net.ports as usize * usize::from(net.vls);
        let visit = |f: &mut dyn FnMut(u32, u32)| {
            self.visit(net, None, |d| {
                if let Some((a, b)) = edge(net, d) {
                    f(a, b);
                }
            });
        };
        // Two dependencies are never one edge (a channel into a switch is one port's), so the
        // list is only a fallback.
        Graph::from_visits(n, visit).unwrap_or_else(|| Graph::new(n, &self.edges(net)))
    }

    /// Calls `f` on every dependency `other` (when given) does not have, in switch and bit
    /// order.
    fn visit(
        &self,
        net: &Net<'_>,
        without: Option<&DepSet>,
        mut f: impl FnMut((u32, u8, u8, u8, u8)),
    ) {
        for (k, &x) in net.switches.iter().enumerate() {
            let (Some(&base), Some(&stride)) = (self.base.get(k), self.stride.get(k)) else {
                continue;
            };
            let end = base + stride * stride;
            let mut bit = base;
            while bit < end {
                let word = (bit / 64) as usize;
                let w = self.bits.get(word).map_or(0, |w| w.load(Ordering::Relaxed))
                    & !without
                        .and_then(|o| o.bits.get(word))
                        .map_or(0, |w| w.load(Ordering::Relaxed));
                let off = bit % 64;
                let chunk = w >> off;
                if chunk == 0 {
                    bit += 64 - off;
                    continue;
                }
                let b = bit + u64::from(chunk.trailing_zeros());
                if b >= end {
                    break;
                }
                let local = b - base;
                let (a, o) = (local / stride, local % stride);
                f((
                    x,
                    (a / self.vls) as u8,
                    (a % self.vls) as u8,
                    (o / self.vls) as u8,
                    (o % self.vls) as u8,
                ));
                bit = b + 1;
            }
        }
    }
}

/// The channel-id edge of a dependency: from the channel into its switch to the channel out.
fn edge(net: &Net<'_>, (x, i, vin, o, vout): (u32, u8, u8, u8, u8)) -> Option<(u32, u32)> {
    let Some(PortLink::Up { node, port }) = net.port_link(x, i) else {
        return None;
    };
    Some((net.channel(node, port, vin)?, net.channel(x, o, vout)?))
}

/// The dependencies as channel-id edges `(held, wanted)`, sorted.
pub(crate) fn edges(net: &Net<'_>, deps: &[(u32, u8, u8, u8, u8)]) -> Vec<(u32, u32)> {
    let mut e: Vec<(u32, u32)> = deps.iter().filter_map(|&d| edge(net, d)).collect();
    e.sort_unstable();
    e.dedup();
    e
}
