//! Loads per directed switch-to-switch link, for drawing them (`weft report --format html`'s
//! heat maps): the all-to-all pattern's, and the shift and bisection patterns' summed over
//! the patterns [`crate::quality`] evaluates with the same options (the same shifts, the
//! same seeded bisections).

use crate::net::Net;
use crate::patterns::{bisection_flows, seeds, shift_flows, shifts};
use crate::scratch::{Lane, LANES};
use crate::types::{auto_bisections, QualityOptions};
use rayon::prelude::*;
use weft_fabric::{FabricState, PortRef};

/// The loads of one directed switch-to-switch link that is up.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LinkLoad {
    /// The port the link leaves.
    pub from: PortRef,
    /// The port it arrives at.
    pub to: PortRef,
    /// Flows of the all-to-all pattern on it.
    pub all_to_all: u64,
    /// Flows on it summed over the shift patterns.
    pub shift: u64,
    /// Flows on it summed over the bisections.
    pub bisection: u64,
}

/// Loads per directed switch-to-switch link: the all-to-all pattern's, and the shift and
/// bisection patterns' summed over the patterns [`crate::quality`] evaluates.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LinkLoads {
    /// Every directed switch-to-switch link that is up, in link order (each link's `a → b`
    /// side first).
    pub links: Vec<LinkLoad>,
    /// Shift patterns summed.
    pub shifts: usize,
    /// Bisections summed.
    pub bisections: usize,
}

/// The loads per directed switch-to-switch link of `state`'s routing under the patterns
/// `opts` describes (the same shifts and seeded bisections as [`crate::quality`]'s).
pub fn link_loads(state: &FabricState, opts: &QualityOptions) -> LinkLoads {
    let net = Net::new(state);
    let n = net.ends.len();
    let all = net.destinations(None).load;
    let (ks, _) = shifts(n, opts.all_shifts_up_to, opts.shift_samples);
    let shift = net.summed(&ks, |&k| shift_flows(n, k));
    let count = opts.bisections.unwrap_or_else(|| auto_bisections(n));
    let bisection = net.summed(&seeds(opts.seed, count), |&s| bisection_flows(n, s));
    let f = &state.fabric;
    let mut links = Vec::new();
    for (d, fabric) in net.is_fabric.iter().enumerate() {
        if !fabric {
            continue;
        }
        let Some(link) = f.links().get(d / 2) else {
            continue;
        };
        let (from, to) = if d % 2 == 0 {
            (link.a, link.b)
        } else {
            (link.b, link.a)
        };
        let at = |v: &[u64]| v.get(d).copied().unwrap_or(0);
        links.push(LinkLoad {
            from,
            to,
            all_to_all: at(&all),
            shift: at(&shift),
            bisection: at(&bisection),
        });
    }
    LinkLoads {
        links,
        shifts: ks.len(),
        bisections: count,
    }
}

impl Net<'_> {
    /// Flows per directed link, summed over the patterns `flows(item)` (integer sums: the
    /// same whatever the thread count).
    fn summed<T: Sync>(
        &self,
        items: &[T],
        flows: impl Fn(&T) -> Vec<(u32, u32)> + Sync + Send,
    ) -> Vec<u64> {
        items
            .par_iter()
            .fold(
                || (vec![0u64; self.dlinks], vec![Lane::default(); LANES]),
                |(mut sum, mut lanes), item| {
                    for chunk in flows(item).chunks(LANES) {
                        self.walk_lanes(chunk, &mut lanes);
                        for lane in lanes.iter().take(chunk.len()) {
                            if lane.done != Some(Ok(())) {
                                continue;
                            }
                            for &l in &lane.path {
                                if let Some(x) = sum.get_mut(l as usize) {
                                    *x += 1;
                                }
                            }
                        }
                    }
                    (sum, lanes)
                },
            )
            .map(|(sum, _)| sum)
            .reduce(
                || vec![0u64; self.dlinks],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x += y;
                    }
                    a
                },
            )
    }
}
