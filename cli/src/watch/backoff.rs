//! When `weft watch` repairs: once per distinct difference from the desired state; after a
//! repair it applied, a difference that shows within `--backoff` sweeps is another writer's,
//! and the watch waits until that difference has held still for `--backoff` sweeps, then
//! repairs it (once). A difference that goes away and comes back is a new one, repaired
//! again once; the same difference back a third time after two applied repairs is another
//! writer restoring it, and is left alone (said, never fought in a loop).

use weft_deploy::watch::Difference;

/// What to do with the difference of this sweep.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Plan (and apply) a repair.
    Repair,
    /// A repair was tried for this very difference, and it has not changed since.
    Tried,
    /// Changed soon after the repair applied at sweep `applied`, and steady for `steady`
    /// sweeps only: wait.
    BackOff { applied: u64, steady: u64 },
    /// The same difference came back after `times` applied repairs of it: another writer
    /// restores it; not repaired again.
    Fought { times: u32 },
}

/// Applied repairs of one difference before its return counts as another writer's.
const MAX_REPAIRS: u32 = 2;

/// The repairs tried, and how long the difference has held still.
#[derive(Debug, Default)]
pub struct Repairs {
    /// The difference last seen, and the sweep it was first seen at (unchanged since).
    seen: Option<(Difference, u64)>,
    /// A repair was tried for `seen`.
    tried: bool,
    /// The sweep a repair was last applied at.
    applied: Option<u64>,
    /// Backing off: the difference changed soon after a repair, and has not held still
    /// since.
    backing_off: bool,
    /// The differences a repair was applied for, with how many times.
    repaired: Vec<(Difference, u32)>,
}

impl Repairs {
    /// Keeps the difference read at `sweep`.
    pub fn observe(&mut self, sweep: u64, d: &Difference) {
        if self.seen.as_ref().is_none_or(|(s, _)| s != d) {
            self.seen = Some((d.clone(), sweep));
            self.tried = false;
        }
        if d.is_empty() {
            self.backing_off = false;
        }
    }

    /// How many repairs were applied for `d`.
    fn times(&self, d: &Difference) -> u32 {
        self.repaired
            .iter()
            .find(|(r, _)| r == d)
            .map_or(0, |(_, n)| *n)
    }

    /// Whether to repair the difference last observed, at `sweep`, backing off `backoff`
    /// sweeps: once backing off, until the difference has held still that long.
    pub fn decide(&mut self, sweep: u64, backoff: u64) -> Decision {
        if self.tried {
            return Decision::Tried;
        }
        let times = self.seen.as_ref().map_or(0, |(d, _)| self.times(d));
        if times >= MAX_REPAIRS {
            return Decision::Fought { times };
        }
        let since = self.seen.as_ref().map_or(sweep, |(_, at)| *at);
        let steady = sweep.saturating_sub(since);
        let soon = self
            .applied
            .is_some_and(|a| since.saturating_sub(a) < backoff);
        match self.applied {
            Some(applied) if (soon || self.backing_off) && steady < backoff => {
                self.backing_off = true;
                Decision::BackOff { applied, steady }
            }
            _ => {
                self.backing_off = false;
                Decision::Repair
            }
        }
    }

    /// A repair was planned for the difference last observed (applied at `sweep`, if so).
    pub fn tried(&mut self, applied: Option<u64>) {
        self.tried = true;
        if applied.is_some() {
            self.applied = applied;
            if let Some((d, _)) = &self.seen {
                match self.repaired.iter_mut().find(|(r, _)| r == d) {
                    Some((_, n)) => *n += 1,
                    None => self.repaired.push((d.clone(), 1)),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_deploy::watch::Block;
    use weft_fabric::Guid;

    fn blocks(k: &[u16]) -> Difference {
        Difference {
            blocks: k
                .iter()
                .map(|&block| Block {
                    switch: Guid(7),
                    name: "leaf1".into(),
                    block,
                })
                .collect(),
            ..Difference::default()
        }
    }

    /// Repaired at sweep 1; another writer at 2 and again at 3; steady from 3: the watch
    /// backs off for sweeps 2 to 5 and repairs at 6 (three sweeps steady), once. The watch
    /// once marked the difference tried while backing off and never repaired it after the
    /// fabric settled.
    #[test]
    fn backs_off_while_it_changes_and_repairs_once_it_settles() {
        let mut r = Repairs::default();
        r.observe(1, &blocks(&[0]));
        assert_eq!(r.decide(1, 3), Decision::Repair);
        r.tried(Some(1));
        r.observe(2, &blocks(&[1]));
        assert_eq!(
            r.decide(2, 3),
            Decision::BackOff {
                applied: 1,
                steady: 0
            }
        );
        r.observe(3, &blocks(&[1, 2]));
        assert!(matches!(r.decide(3, 3), Decision::BackOff { .. }));
        for s in 4..=5 {
            r.observe(s, &blocks(&[1, 2]));
            assert!(matches!(r.decide(s, 3), Decision::BackOff { .. }), "{s}");
        }
        r.observe(6, &blocks(&[1, 2]));
        assert_eq!(r.decide(6, 3), Decision::Repair);
        r.tried(Some(6));
        // The repair did not take: the same difference, not tried again.
        r.observe(7, &blocks(&[1, 2]));
        assert_eq!(r.decide(7, 3), Decision::Tried);
        r.observe(12, &blocks(&[1, 2]));
        assert_eq!(r.decide(12, 3), Decision::Tried);
    }

    /// A writer that changes the tables every sweep after a repair: the watch backs off as
    /// long as it does, not only for `--backoff` sweeps after the repair, and repairs once
    /// the difference has held still that long.
    #[test]
    fn a_writer_that_keeps_writing_is_not_fought() {
        let mut r = Repairs::default();
        r.observe(1, &blocks(&[0]));
        assert_eq!(r.decide(1, 3), Decision::Repair);
        r.tried(Some(1));
        for s in 2..=10 {
            r.observe(s, &blocks(&[u16::try_from(s).unwrap()]));
            assert!(matches!(r.decide(s, 3), Decision::BackOff { .. }), "{s}");
        }
        for s in 11..=12 {
            r.observe(s, &blocks(&[10]));
            assert!(matches!(r.decide(s, 3), Decision::BackOff { .. }), "{s}");
        }
        r.observe(13, &blocks(&[10]));
        assert_eq!(r.decide(13, 3), Decision::Repair);
    }

    /// A difference that went away and came back long after the last repair is repaired
    /// again at once; one planned but not applied (`--repair plan`) starts no back-off.
    #[test]
    fn a_difference_that_comes_back_is_a_new_change() {
        let mut r = Repairs::default();
        r.observe(1, &blocks(&[0]));
        r.tried(Some(1));
        r.observe(2, &Difference::default());
        r.observe(9, &blocks(&[0]));
        assert_eq!(r.decide(9, 3), Decision::Repair);
        // Repaired twice and back again: another writer restores it; left alone.
        r.tried(Some(9));
        r.observe(10, &Difference::default());
        r.observe(30, &blocks(&[0]));
        assert_eq!(r.decide(30, 3), Decision::Fought { times: 2 });
        // Another difference is still repaired.
        r.observe(31, &blocks(&[5]));
        assert_eq!(r.decide(31, 3), Decision::Repair);
        let mut p = Repairs::default();
        p.observe(1, &blocks(&[0]));
        p.tried(None);
        p.observe(2, &blocks(&[3]));
        assert_eq!(p.decide(2, 3), Decision::Repair);
    }
}
