//! Switch-to-switch LID routing: every live switch toward every other switch's LID (OpenSM's
//! `ftree` leaves spine pairs unset), one memoised in-tree per target switch.

use crate::net::{set, Net, Reach, NONE};
use crate::scratch::Scratch;
use crate::types::{SwitchReach, Unroutable};
use rayon::prelude::*;
use weft_fabric::forward::Mark;

impl Net<'_> {
    /// Every switch toward every other switch's LID.
    pub(crate) fn switch_reach(&self) -> SwitchReach {
        let s = self.sw.len();
        let targets: Vec<(u32, u16)> = self
            .sw
            .iter()
            .enumerate()
            .filter_map(|(i, x)| x.lid.map(|l| (i as u32, l)))
            .collect();
        let unroutable = targets
            .par_iter()
            .fold(
                || (Unroutable::default(), Scratch::new(s)),
                |(mut u, mut sc), &(t, lid)| {
                    sc.dist.fill(Mark::Unknown);
                    set(&mut sc.dist, t, Mark::Known(Reach::Hops(0)));
                    for x in 0..s as u32 {
                        self.resolve(lid, NONE, x, &mut sc);
                        let v = sc.dist.get(x as usize).copied().unwrap_or(Mark::Unknown);
                        if Reach::hops(v).is_none() {
                            u.add(Reach::of(v), 1);
                        }
                    }
                    (u, sc)
                },
            )
            .map(|(u, _)| u)
            .reduce(Unroutable::default, Unroutable::merge);
        let t = targets.len() as u64;
        SwitchReach {
            pairs: t * t.saturating_sub(1) + (s as u64 - t) * t,
            unroutable,
        }
    }
}
