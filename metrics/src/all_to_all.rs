//! All-to-all loads and the hop histogram, one in-tree per destination: every switch's route
//! toward the destination resolved once ([`Net::resolve`]), then the flows of each switch's
//! subtree summed down the tree in decreasing distance, `O(switches + hosts)` per
//! destination.

use crate::excess::{Distances, HopExcess};
use crate::net::{mean, Net, Reach, NONE};
use crate::scratch::{Acc, Scratch};
use crate::types::{AllToAll, Hops};
use rayon::prelude::*;
use std::collections::BTreeMap;
use weft_fabric::forward::Mark;

impl Net<'_> {
    /// All-to-all loads, the hop histogram and the hop excess.
    pub(crate) fn per_destination(&self) -> (AllToAll, Hops, HopExcess) {
        let n = self.ends.len();
        let distances = self.distances();
        let mut acc = self.destinations(Some(&distances));
        let excess = self.hop_excess(std::mem::take(&mut acc.excess));
        let flows = (n as u64) * (n as u64).saturating_sub(1);
        let (max_load, sum) = self.fabric_max_sum(&acc.load);
        let all = AllToAll {
            flows,
            unroutable: acc.unroutable.total(),
            max_load,
            mean_load: mean(sum as f64, self.fabric_links),
        };
        let mut histogram = BTreeMap::new();
        let (mut routed, mut weighted, mut max) = (0u64, 0u64, 0u32);
        for (h, &c) in acc.hops.iter().enumerate() {
            if c > 0 {
                histogram.insert(h as u32, c);
                routed += c;
                weighted += c * h as u64;
                max = h as u32;
            }
        }
        let hops = Hops {
            pairs: flows,
            unroutable: acc.unroutable,
            histogram,
            mean: mean(weighted as f64, routed as usize),
            max,
        };
        (all, hops, excess)
    }

    /// Every destination's in-tree summed: loads per directed link, hops, unroutable pairs,
    /// and with `distances` the hop excess.
    pub(crate) fn destinations(&self, distances: Option<&Distances>) -> Acc {
        let n = self.ends.len();
        // Destinations in LID order: neighbouring LFT entries share cache lines.
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&i| self.ends.get(i as usize).map_or(0, |e| e.lid));
        let s = self.sw.len();
        order
            .par_chunks(64)
            .fold(
                || (Acc::new(self.dlinks, s), Scratch::new(s)),
                |(mut acc, mut sc), chunk| {
                    for &d in chunk {
                        self.one_destination(d, &mut acc, &mut sc);
                        if let Some(dist) = distances {
                            self.excess_of(dist, d, &sc, &mut acc.excess);
                        }
                    }
                    (acc, sc)
                },
            )
            .map(|(acc, _)| acc)
            .reduce(|| Acc::new(self.dlinks, s), Acc::merge)
    }

    fn one_destination(&self, d: u32, acc: &mut Acc, sc: &mut Scratch) {
        let Some(dst) = self.ends.get(d as usize) else {
            return;
        };
        sc.dist.fill(Mark::Unknown);
        for &l in &self.leaves {
            self.resolve(dst.lid, d, l, sc);
        }
        // Sources per switch, minus the destination itself.
        let src = |s: u32| -> u64 {
            let c = u64::from(self.hosts_on.get(s as usize).copied().unwrap_or(0));
            c - u64::from(s == dst.leaf && c > 0)
        };
        let dist = |x: u32| sc.dist.get(x as usize).copied().unwrap_or(Mark::Unknown);
        // Hops and unroutable pairs.
        let mut maxd = 0usize;
        for &l in &self.leaves {
            let c = src(l);
            match Reach::hops(dist(l)) {
                Some(v) => {
                    let h = v as usize + 1;
                    maxd = maxd.max(v as usize);
                    if let Some(x) = acc.hops.get_mut(h) {
                        *x += c;
                    }
                }
                None => acc.unroutable.add(Reach::of(dist(l)), c),
            }
        }
        // Subtree counts in decreasing distance: every resolved switch is on a path from a leaf.
        sc.bucket.clear();
        sc.bucket.resize(maxd + 2, 0);
        let resolved = |sc: &Scratch, x: u32| {
            Reach::hops(sc.dist.get(x as usize).copied().unwrap_or(Mark::Unknown))
                .map(|v| v as usize)
        };
        for x in 0..self.sw.len() as u32 {
            if let Some(v) = resolved(sc, x) {
                if let Some(b) = sc.bucket.get_mut(v) {
                    *b += 1;
                }
            }
        }
        // Prefix sums, largest distance first.
        let mut at = 0u32;
        for b in sc.bucket.iter_mut().rev() {
            let c = *b;
            *b = at;
            at += c;
        }
        sc.order.clear();
        sc.order.resize(at as usize, 0);
        for x in 0..self.sw.len() as u32 {
            if let Some(v) = resolved(sc, x) {
                if let Some(b) = sc.bucket.get_mut(v) {
                    if let Some(o) = sc.order.get_mut(*b as usize) {
                        *o = x;
                    }
                    *b += 1;
                }
            }
        }
        for x in 0..self.sw.len() {
            if let Some(sub) = sc.sub.get_mut(x) {
                *sub = if self.hosts_on.get(x).is_some_and(|&c| c > 0) {
                    src(x as u32)
                } else {
                    0
                };
            }
        }
        for &x in &sc.order {
            let sub = sc.sub.get(x as usize).copied().unwrap_or(0);
            if sub == 0 {
                continue;
            }
            let out = sc.out.get(x as usize).copied().unwrap_or(NONE);
            if let Some(l) = acc.load.get_mut(out as usize) {
                *l += sub;
            }
            let next = sc.next.get(x as usize).copied().unwrap_or(NONE);
            if let Some(t) = sc.sub.get_mut(next as usize) {
                *t += sub;
            }
        }
    }
}
