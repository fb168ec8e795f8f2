//! A port's VL arbitration in the reference: IBA's high and low tables, each a weighted round
//! robin, and the limit of high-priority bytes.

use super::{HIGH_LIMIT_BYTES, VLS};
use weft_fabric::VlArb;

/// One port's VL arbitration (IBA's high and low tables).
#[derive(Clone, Debug)]
pub(super) struct Arbiter {
    tables: Option<Tables>,
}

#[derive(Clone, Debug)]
pub(super) struct Tables {
    high: RoundRobin,
    low: RoundRobin,
    /// `None`: unlimited.
    limit: Option<u64>,
    /// High-priority bytes sent while a low-priority packet waited, since the last low one.
    high_over_low: u64,
}

/// A weighted round robin over (VL, weight) entries.
#[derive(Clone, Debug)]
pub(super) struct RoundRobin {
    entries: Vec<(u8, u32)>,
    turn: usize,
    /// Weight left in the current turn (0: the turn has not started).
    left: u32,
}

impl RoundRobin {
    pub(super) fn new(table: &[weft_fabric::VlWeight]) -> RoundRobin {
        RoundRobin {
            entries: table
                .iter()
                .filter(|e| e.weight > 0)
                .map(|e| (e.vl, u32::from(e.weight)))
                .collect(),
            turn: 0,
            left: 0,
        }
    }

    pub(super) fn any_ready(&self, ready: &[bool; VLS]) -> bool {
        self.entries.iter().any(|&(vl, _)| ready[usize::from(vl)])
    }

    /// The entry whose turn it is keeps it while its VL is ready and weight is left; else
    /// the next entry with a ready VL starts a turn.
    pub(super) fn choose(&mut self, ready: &[bool; VLS]) -> Option<u8> {
        let n = self.entries.len();
        let (vl, _) = self.entries.get(self.turn).copied()?;
        if self.left > 0 && ready[usize::from(vl)] {
            return Some(vl);
        }
        let start = if self.left > 0 {
            self.turn + 1
        } else {
            self.turn
        };
        for k in 0..n {
            let i = (start + k) % n;
            let (vl, weight) = self.entries[i];
            if ready[usize::from(vl)] {
                self.turn = i;
                self.left = weight;
                return Some(vl);
            }
        }
        None
    }

    pub(super) fn used(&mut self, blocks: u32) {
        self.left = self.left.saturating_sub(blocks);
        if self.left == 0 && !self.entries.is_empty() {
            self.turn = (self.turn + 1) % self.entries.len();
        }
    }
}

impl Arbiter {
    pub(super) fn new(arb: Option<&VlArb>) -> Arbiter {
        Arbiter {
            tables: arb.map(|a| Tables {
                high: RoundRobin::new(&a.high),
                low: RoundRobin::new(&a.low),
                limit: (a.high_limit != 255)
                    .then(|| (u64::from(a.high_limit) * HIGH_LIMIT_BYTES).max(1)),
                high_over_low: 0,
            }),
        }
    }

    /// Picks a VL among `ready`, and records the packet (`bytes`, `blocks`) as sent on it.
    pub(super) fn pick_and_send(
        &mut self,
        ready: &[bool; VLS],
        bytes: u32,
        blocks: u32,
    ) -> Option<u8> {
        let Some(t) = self.tables.as_mut() else {
            return ready[0].then_some(0);
        };
        let low_waits = t.low.any_ready(ready);
        let high_may = t.high.any_ready(ready)
            && !(low_waits && t.limit.is_some_and(|l| t.high_over_low >= l));
        if high_may {
            let vl = t.high.choose(ready)?;
            t.high.used(blocks);
            if low_waits {
                t.high_over_low += u64::from(bytes);
            }
            return Some(vl);
        }
        let vl = t.low.choose(ready)?;
        t.low.used(blocks);
        t.high_over_low = 0;
        Some(vl)
    }
}
