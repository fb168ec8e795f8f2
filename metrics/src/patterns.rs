//! Traffic patterns walked flow by flow: the shift pattern (`i → i + k`) and random
//! bisections (a seeded shuffle, the halves paired, each pair exchanging one flow each way).
//! Each pattern is one rayon job ([`Net::patterns`]); the totals both report are summed in
//! pattern order ([`Totals`]), so the result does not depend on the thread count.

use crate::net::{mean, Net};
use crate::scratch::{WalkScratch, LANES};
use crate::types::{Bisections, Shift};
use rayon::prelude::*;
use std::collections::BTreeMap;
use weft_fabric::rng::SplitMix64;

/// What one pattern's flows did.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PatternStats {
    pub flows: u64,
    pub unroutable: u64,
    pub max_load: u32,
    /// Fabric links traversed by routed flows (for the mean load).
    pub fabric_hops: u64,
    /// Sum over flows of 1 / max load on the path.
    pub share: f64,
}

/// The totals over a set of patterns that shifts and bisections both report.
struct Totals {
    flows: u64,
    unroutable: u64,
    max_load: u32,
    /// Mean over patterns of the pattern's worst link load.
    mean_max_load: f64,
    /// Mean link load over fabric links and patterns.
    mean_load: f64,
}

impl Net<'_> {
    /// Routes `flows`, returning their statistics; `sc.load` is left zeroed.
    pub(crate) fn pattern(&self, flows: &[(u32, u32)], sc: &mut WalkScratch) -> PatternStats {
        sc.path.clear();
        sc.starts.clear();
        let mut st = PatternStats::default();
        for chunk in flows.chunks(LANES) {
            self.walk_lanes(chunk, &mut sc.lanes);
            for lane in sc.lanes.iter().take(chunk.len()) {
                st.flows += 1;
                if lane.done != Some(Ok(())) {
                    st.unroutable += 1;
                    continue;
                }
                sc.starts.push(sc.path.len() as u32);
                sc.path.extend_from_slice(&lane.path);
                for &l in &lane.path {
                    if let Some(x) = sc.load.get_mut(l as usize) {
                        *x += 1;
                    }
                }
            }
        }
        sc.starts.push(sc.path.len() as u32);
        for w in sc.starts.windows(2) {
            let (a, b) = match w {
                [a, b] => (*a as usize, *b as usize),
                _ => continue,
            };
            let mut worst = 0u32;
            for &l in sc.path.get(a..b).unwrap_or(&[]) {
                let x = sc.load.get(l as usize).copied().unwrap_or(0);
                worst = worst.max(x);
                if self.is_fabric.get(l as usize).copied().unwrap_or(false) {
                    st.fabric_hops += 1;
                    st.max_load = st.max_load.max(x);
                }
            }
            if worst > 0 {
                st.share += 1.0 / f64::from(worst);
            }
        }
        for &l in &sc.path {
            if let Some(x) = sc.load.get_mut(l as usize) {
                *x = 0;
            }
        }
        st
    }

    /// The statistics of the pattern `flows(item)` for each item, in item order (one rayon job
    /// per pattern).
    fn patterns<T: Sync>(
        &self,
        items: &[T],
        flows: impl Fn(&T) -> Vec<(u32, u32)> + Sync + Send,
    ) -> Vec<PatternStats> {
        items
            .par_iter()
            .map_init(
                || WalkScratch::new(self.dlinks),
                |sc, item| self.pattern(&flows(item), sc),
            )
            .collect()
    }

    fn totals(&self, stats: &[PatternStats]) -> Totals {
        let (mut flows, mut unroutable, mut max_load) = (0u64, 0u64, 0u32);
        let (mut sum_max, mut hops) = (0u64, 0u64);
        for st in stats {
            flows += st.flows;
            unroutable += st.unroutable;
            max_load = max_load.max(st.max_load);
            sum_max += u64::from(st.max_load);
            hops += st.fabric_hops;
        }
        Totals {
            flows,
            unroutable,
            max_load,
            mean_max_load: mean(sum_max as f64, stats.len()),
            mean_load: mean(hops as f64, self.fabric_links * stats.len()),
        }
    }

    /// The shift pattern: every `k` in `1..N` when `N − 1 ≤ all_up_to`, else `samples` evenly
    /// spaced ones.
    pub(crate) fn shift(&self, all_up_to: usize, samples: usize) -> Shift {
        let n = self.ends.len();
        let (ks, all) = shifts(n, all_up_to, samples);
        let stats = self.patterns(&ks, |&k| shift_flows(n, k));
        let t = self.totals(&stats);
        let mut max_load_histogram = BTreeMap::new();
        for st in &stats {
            *max_load_histogram.entry(st.max_load).or_insert(0) += 1;
        }
        Shift {
            shifts: ks.len(),
            all,
            flows: t.flows,
            unroutable: t.unroutable,
            max_load: t.max_load,
            mean_max_load: t.mean_max_load,
            mean_load: t.mean_load,
            max_load_histogram,
        }
    }

    /// `count` random bisections drawn from `seed`, and the effective bisection bandwidth.
    pub(crate) fn bisections(&self, seed: u64, count: usize) -> Bisections {
        let n = self.ends.len();
        self.drawn(seed, count, |s| bisection_flows(n, s))
    }

    /// `count` patterns `flows(s)`, each from its own seed `s` drawn from `seed`, and the
    /// effective bisection bandwidth over them: what [`Net::bisections`] reports, for any
    /// way of pairing hosts.
    pub(crate) fn drawn(
        &self,
        seed: u64,
        count: usize,
        flows: impl Fn(u64) -> Vec<(u32, u32)> + Sync + Send,
    ) -> Bisections {
        let seeds = seeds(seed, count);
        let stats = self.patterns(&seeds, |&s| flows(s));
        let t = self.totals(&stats);
        // A bisection without a flow (one host, or a rail of one HCA) has no eBB: it is left
        // out of the mean, and with no flow at all the eBB is `None`.
        let (mut ebb_min, mut ebb_max, mut sum_ebb, mut with_flows) =
            (f64::INFINITY, 0.0f64, 0.0f64, 0usize);
        for st in stats.iter().filter(|st| st.flows > 0) {
            let e = st.share / st.flows as f64;
            sum_ebb += e;
            ebb_min = ebb_min.min(e);
            ebb_max = ebb_max.max(e);
            with_flows += 1;
        }
        let some = with_flows > 0;
        Bisections {
            count,
            seed,
            flows: t.flows,
            unroutable: t.unroutable,
            max_load: t.max_load,
            mean_max_load: t.mean_max_load,
            mean_load: t.mean_load,
            ebb: some.then(|| mean(sum_ebb, with_flows)),
            ebb_min: some.then_some(ebb_min),
            ebb_max: some.then_some(ebb_max),
        }
    }
}

/// The shifts `k` evaluated for `n` hosts, and whether they are all of them: every `k` in
/// `1..n` when `n − 1 ≤ all_up_to`, else `samples` evenly spaced ones.
pub(crate) fn shifts(n: usize, all_up_to: usize, samples: usize) -> (Vec<usize>, bool) {
    let all = n.saturating_sub(1) <= all_up_to;
    if all {
        return ((1..n).collect(), true);
    }
    let m = samples.clamp(1, n - 1);
    ((0..m).map(|j| 1 + j * (n - 1) / m).collect(), false)
}

/// The flows of shift `k` over `n` hosts: `i → (i + k) mod n`.
pub(crate) fn shift_flows(n: usize, k: usize) -> Vec<(u32, u32)> {
    (0..n).map(|i| (i as u32, ((i + k) % n) as u32)).collect()
}

/// The seeds of `count` patterns drawn from `seed`.
pub(crate) fn seeds(seed: u64, count: usize) -> Vec<u64> {
    let mut rng = SplitMix64(seed);
    (0..count).map(|_| rng.next_u64()).collect()
}

/// The flows of one random bisection of `n` hosts: a SplitMix64 Fisher–Yates shuffle, the
/// first half paired with the second, each pair exchanging one flow in each direction.
pub(crate) fn bisection_flows(n: usize, seed: u64) -> Vec<(u32, u32)> {
    let (a, b) = halves(n, seed);
    a.iter()
        .zip(&b)
        .flat_map(|(&x, &y)| [(x, y), (y, x)])
        .collect()
}

/// A random halving of `0..n`: a SplitMix64 Fisher–Yates shuffle of `0..n` from `seed`, its
/// first `n / 2` and the rest (one more when `n` is odd); item `i` of the first half is
/// paired with item `i` of the second.
pub(crate) fn halves(n: usize, seed: u64) -> (Vec<u32>, Vec<u32>) {
    let mut perm: Vec<u32> = (0..n as u32).collect();
    SplitMix64(seed).shuffle(&mut perm);
    let b = perm.split_off(n / 2);
    (perm, b)
}
