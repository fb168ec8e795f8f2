//! Working memory reused across destinations and patterns (one of each per rayon job), and
//! the per-destination accumulators summed over jobs.

use crate::excess::ExcessAcc;
use crate::net::{Reach, NONE};
use crate::types::Unroutable;
use weft_fabric::forward::Mark;

/// Per-destination scratch (one per rayon job).
pub(crate) struct Scratch {
    /// Per switch: how its route toward the current destination ends (the memo).
    pub dist: Vec<Mark<Reach>>,
    /// Per switch: the directed link it sends the destination on ([`NONE`]: unresolved).
    pub out: Vec<u32>,
    /// Per switch: the next switch ([`NONE`]: the destination host, or unresolved).
    pub next: Vec<u32>,
    /// Per switch: the flows its subtree sends through it.
    pub sub: Vec<u64>,
    pub stack: Vec<u32>,
    pub bucket: Vec<u32>,
    pub order: Vec<u32>,
}

impl Scratch {
    pub(crate) fn new(s: usize) -> Scratch {
        Scratch {
            dist: vec![Mark::Unknown; s],
            out: vec![NONE; s],
            next: vec![NONE; s],
            sub: vec![0; s],
            stack: Vec::new(),
            bucket: Vec::new(),
            order: Vec::new(),
        }
    }
}

/// Per-destination accumulators (summed over rayon jobs: integers only).
pub(crate) struct Acc {
    pub load: Vec<u64>,
    pub hops: Vec<u64>,
    pub unroutable: Unroutable,
    pub excess: ExcessAcc,
}

impl Acc {
    pub(crate) fn new(dlinks: usize, switches: usize) -> Acc {
        Acc {
            load: vec![0; dlinks],
            hops: vec![0; switches + 3],
            unroutable: Unroutable::default(),
            excess: ExcessAcc::default(),
        }
    }

    pub(crate) fn merge(mut self, o: Acc) -> Acc {
        for (a, b) in self.load.iter_mut().zip(&o.load) {
            *a += b;
        }
        for (a, b) in self.hops.iter_mut().zip(&o.hops) {
            *a += b;
        }
        self.unroutable = self.unroutable.merge(o.unroutable);
        self.excess = self.excess.merge(o.excess);
        self
    }
}

/// Per-pattern scratch (one per rayon job).
pub(crate) struct WalkScratch {
    pub load: Vec<u32>,
    pub path: Vec<u32>,
    pub starts: Vec<u32>,
    pub lanes: Vec<Lane>,
}

/// Flows walked in lockstep.
pub(crate) const LANES: usize = 8;

/// One flow being walked.
#[derive(Clone, Debug, Default)]
pub(crate) struct Lane {
    pub path: Vec<u32>,
    pub cur: u32,
    pub lid: u16,
    pub dst: u32,
    pub left: usize,
    /// `Some(Ok)` arrived, `Some(Err)` how it ended without arriving, `None` still going.
    pub done: Option<Result<(), Reach>>,
}

impl WalkScratch {
    pub(crate) fn new(dlinks: usize) -> WalkScratch {
        WalkScratch {
            load: vec![0; dlinks],
            path: Vec::new(),
            starts: Vec::new(),
            lanes: vec![Lane::default(); LANES],
        }
    }
}
