//! The channel dependency graph: a concurrent bitset of dependencies per switch, and the
//! graph algorithms on it (strongly connected components, a cycle in each, a topological
//! rank per channel).

use crate::net::{Net, PortLink};
use std::sync::atomic::{AtomicU64, Ordering};

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
    pub fn new(net: &Net<'_>) -> DepSet {
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
    pub fn insert(&self, k: u32, i: u8, vin: u8, o: u8, vout: u8) {
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
    pub fn absorb(&self, other: &DepSet) {
        for (w, o) in self.bits.iter().zip(&other.bits) {
            let v = o.load(Ordering::Relaxed);
            if v != 0 {
                w.fetch_or(v, Ordering::Relaxed);
            }
        }
    }

    /// Every dependency as `(switch, in port, in VL, out port, out VL)`, in switch and bit
    /// order.
    pub fn each(&self, net: &Net<'_>) -> Vec<(u32, u8, u8, u8, u8)> {
        self.each_masked(net, None)
    }

    /// [`DepSet::each`] of the dependencies `other` (a set over the same net) does not have.
    pub fn each_not_in(&self, net: &Net<'_>, other: &DepSet) -> Vec<(u32, u8, u8, u8, u8)> {
        self.each_masked(net, Some(other))
    }

    fn each_masked(&self, net: &Net<'_>, without: Option<&DepSet>) -> Vec<(u32, u8, u8, u8, u8)> {
        let mut out = Vec::new();
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
                out.push((
                    x,
                    (a / self.vls) as u8,
                    (a % self.vls) as u8,
                    (o / self.vls) as u8,
                    (o % self.vls) as u8,
                ));
                bit = b + 1;
            }
        }
        out
    }
}

/// The dependencies as channel-id edges `(held, wanted)`, sorted.
pub(crate) fn edges(net: &Net<'_>, deps: &[(u32, u8, u8, u8, u8)]) -> Vec<(u32, u32)> {
    let mut e: Vec<(u32, u32)> = deps
        .iter()
        .filter_map(|&(x, i, vin, o, vout)| {
            let Some(PortLink::Up { node, port }) = net.port_link(x, i) else {
                return None;
            };
            Some((net.channel(node, port, vin)?, net.channel(x, o, vout)?))
        })
        .collect();
    e.sort_unstable();
    e.dedup();
    e
}

/// A directed graph in compressed sparse row form.
pub(crate) struct Graph {
    offs: Vec<u32>,
    targets: Vec<u32>,
}

impl Graph {
    /// A graph on `n` nodes; `edges` sorted and deduplicated.
    pub fn new(n: usize, edges: &[(u32, u32)]) -> Graph {
        let mut offs = vec![0u32; n + 1];
        for &(a, _) in edges {
            if let Some(o) = offs.get_mut(a as usize + 1) {
                *o += 1;
            }
        }
        for i in 0..n {
            let prev = offs.get(i).copied().unwrap_or(0);
            if let Some(o) = offs.get_mut(i + 1) {
                *o += prev;
            }
        }
        let targets = edges.iter().map(|&(_, b)| b).collect();
        Graph { offs, targets }
    }

    pub fn len(&self) -> usize {
        self.offs.len().saturating_sub(1)
    }

    pub fn succ(&self, v: u32) -> &[u32] {
        let a = self.offs.get(v as usize).copied().unwrap_or(0) as usize;
        let b = self.offs.get(v as usize + 1).copied().unwrap_or(0) as usize;
        self.targets.get(a..b).unwrap_or(&[])
    }

    /// Strongly connected components with more than one node (the graph has no self loops),
    /// each sorted, ordered by their smallest node.
    pub fn cyclic_sccs(&self) -> Vec<Vec<u32>> {
        let n = self.len();
        const UNSEEN: u32 = u32::MAX;
        let mut index = vec![UNSEEN; n];
        let mut low = vec![0u32; n];
        let mut on_stack = vec![false; n];
        let mut stack: Vec<u32> = Vec::new();
        let mut out = Vec::new();
        let mut next = 0u32;
        // Call stack of (node, position in its successor list).
        let mut call: Vec<(u32, usize)> = Vec::new();
        for root in 0..n as u32 {
            if index.get(root as usize) != Some(&UNSEEN) || self.succ(root).is_empty() {
                continue;
            }
            call.push((root, 0));
            set(&mut index, root, next);
            set(&mut low, root, next);
            next += 1;
            stack.push(root);
            set(&mut on_stack, root, true);
            while let Some(&mut (v, ref mut pos)) = call.last_mut() {
                let succ = self.succ(v);
                if let Some(&w) = succ.get(*pos) {
                    *pos += 1;
                    if get(&index, w) == UNSEEN {
                        set(&mut index, w, next);
                        set(&mut low, w, next);
                        next += 1;
                        stack.push(w);
                        set(&mut on_stack, w, true);
                        call.push((w, 0));
                    } else if get(&on_stack, w) {
                        let lw = get(&index, w).min(get(&low, v));
                        set(&mut low, v, lw);
                    }
                    continue;
                }
                call.pop();
                if let Some(&(parent, _)) = call.last() {
                    let l = get(&low, parent).min(get(&low, v));
                    set(&mut low, parent, l);
                }
                if get(&low, v) == get(&index, v) {
                    let mut comp = Vec::new();
                    while let Some(w) = stack.pop() {
                        set(&mut on_stack, w, false);
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    if comp.len() > 1 {
                        comp.sort_unstable();
                        out.push(comp);
                    }
                }
            }
        }
        out.sort();
        out
    }

    /// A shortest cycle through the smallest node of `scc`, inside `scc`.
    pub fn cycle_in(&self, scc: &[u32]) -> Vec<u32> {
        let Some(&start) = scc.first() else {
            return Vec::new();
        };
        let inside = |v: u32| scc.binary_search(&v).is_ok();
        let mut parent: std::collections::BTreeMap<u32, u32> = std::collections::BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        while let Some(v) = queue.pop_front() {
            for &w in self.succ(v) {
                if w == start {
                    let mut cyc = vec![v];
                    let mut c = v;
                    while c != start {
                        match parent.get(&c) {
                            Some(&p) => {
                                cyc.push(p);
                                c = p;
                            }
                            None => break,
                        }
                    }
                    cyc.reverse();
                    return cyc;
                }
                if inside(w) && !parent.contains_key(&w) {
                    parent.insert(w, v);
                    queue.push_back(w);
                }
            }
        }
        Vec::new()
    }

    /// A rank per node that strictly increases along every edge (Kahn's order, smallest id
    /// first among ready nodes), or `None` when the graph has a cycle.
    pub fn topo_ranks(&self) -> Option<Vec<u32>> {
        let n = self.len();
        let mut indeg = vec![0u32; n];
        for &t in &self.targets {
            if let Some(d) = indeg.get_mut(t as usize) {
                *d += 1;
            }
        }
        let mut ready: std::collections::VecDeque<u32> =
            (0..n as u32).filter(|&v| get(&indeg, v) == 0).collect();
        let mut rank = vec![0u32; n];
        let mut next = 0u32;
        while let Some(v) = ready.pop_front() {
            set(&mut rank, v, next);
            next += 1;
            for &w in self.succ(v) {
                if let Some(d) = indeg.get_mut(w as usize) {
                    *d -= 1;
                    if *d == 0 {
                        ready.push_back(w);
                    }
                }
            }
        }
        (next as usize == n).then_some(rank)
    }
}

fn get<T: Copy + Default>(v: &[T], i: u32) -> T {
    v.get(i as usize).copied().unwrap_or_default()
}

fn set<T>(v: &mut [T], i: u32, x: T) {
    if let Some(s) = v.get_mut(i as usize) {
        *s = x;
    }
}
