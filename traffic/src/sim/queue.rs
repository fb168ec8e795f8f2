//! The event queue: a calendar of time buckets that pops events in (time, sequence) order,
//! exactly the order a binary heap over every pending event would give, with pushes that
//! append to a bucket and pops from the current bucket, sorted once.
//!
//! Time is cut into buckets of `2^SHIFT` picoseconds; a wheel of `SLOTS` buckets holds the
//! events of the next `SLOTS · 2^SHIFT` picoseconds, a heap the ones beyond. When a bucket
//! becomes the current one it is sorted, latest first, and popped from its end; an event
//! pushed into the current bucket (a zero or short delay) goes to a small heap beside it,
//! and a pop takes the earlier of the two.
//!
//! A bucket is sorted by keys of twelve bytes, not by moving its events: the time within the
//! bucket and the sequence number in one `u64` (sequence numbers stay below 2^55), and the
//! event's place in the bucket.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A bucket is 2^9 ps (0.51 ns) wide: an 11 664-host fabric at full load handles about a
/// thousand events a nanosecond, so a bucket holds a few hundred; most delays (a packet's
/// serialisation time, the switch latency) reach a few hundred buckets ahead.
const SHIFT: u32 = 9;
/// The wheel's buckets (a power of two): 2^17 buckets reach 67 µs ahead.
const SLOTS: usize = 1 << 17;
/// Emptied bucket vectors kept for reuse (their room stays bounded: a few buckets' worth).
const SPARE: usize = 16;

/// One pending event: its time, its sequence number (ties in time pop in push order) and
/// what it is.
#[derive(Clone, Copy)]
pub(super) struct Item<T> {
    pub(super) t: u64,
    pub(super) seq: u64,
    pub(super) ev: T,
}

impl<T> Item<T> {
    fn key(&self) -> (u64, u64) {
        (self.t, self.seq)
    }
}

impl<T> PartialEq for Item<T> {
    fn eq(&self, o: &Item<T>) -> bool {
        self.key() == o.key()
    }
}
impl<T> Eq for Item<T> {}
impl<T> PartialOrd for Item<T> {
    fn partial_cmp(&self, o: &Item<T>) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Item<T> {
    fn cmp(&self, o: &Item<T>) -> std::cmp::Ordering {
        self.key().cmp(&o.key())
    }
}

/// The calendar queue.
pub(super) struct Queue<T> {
    /// The current bucket's events, sorted latest first (the next one is the last).
    now: Vec<Item<T>>,
    /// Events pushed into the current bucket after it was sorted.
    late: BinaryHeap<Reverse<Item<T>>>,
    /// The current bucket's number (time >> SHIFT).
    cur: u64,
    /// Buckets `cur + 1 .. cur + SLOTS`, at `bucket % SLOTS`.
    wheel: Vec<Vec<Item<T>>>,
    /// Events on the wheel.
    on_wheel: usize,
    /// Events beyond the wheel.
    far: BinaryHeap<Reverse<Item<T>>>,
    /// Emptied vectors with room, for buckets that have none.
    spare: Vec<Vec<Item<T>>>,
    /// A bucket's sort keys ([`sort_bucket`]).
    keys: Vec<(u64, u32)>,
}

impl<T: Copy> Queue<T> {
    pub(super) fn new() -> Queue<T> {
        Queue {
            now: Vec::new(),
            late: BinaryHeap::new(),
            cur: 0,
            wheel: (0..SLOTS).map(|_| Vec::new()).collect(),
            on_wheel: 0,
            far: BinaryHeap::new(),
            spare: Vec::new(),
            keys: Vec::new(),
        }
    }

    /// Events pending.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.now.len() + self.late.len() + self.on_wheel + self.far.len()
    }

    /// Every pending event, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Item<T>> {
        self.now
            .iter()
            .chain(self.late.iter().map(|Reverse(x)| x))
            .chain(self.wheel.iter().flatten())
            .chain(self.far.iter().map(|Reverse(x)| x))
    }

    pub(super) fn push(&mut self, item: Item<T>) {
        let b = item.t >> SHIFT;
        if b <= self.cur {
            self.late.push(Reverse(item));
        } else if b - self.cur < SLOTS as u64 {
            self.on_wheel += 1;
            if let Some(v) = self.wheel.get_mut((b as usize) & (SLOTS - 1)) {
                if v.capacity() == 0 {
                    if let Some(s) = self.spare.pop() {
                        *v = s;
                    }
                }
                v.push(item);
            }
        } else {
            self.far.push(Reverse(item));
        }
    }

    /// The earliest event (by time, then sequence), taken out.
    pub(super) fn pop(&mut self) -> Option<Item<T>> {
        loop {
            let sorted = self.now.last().map(Item::key);
            let late = self.late.peek().map(|Reverse(x)| x.key());
            match (sorted, late) {
                (Some(a), Some(b)) if b < a => return self.late.pop().map(|Reverse(x)| x),
                (Some(_), _) => return self.now.pop(),
                (None, Some(_)) => return self.late.pop().map(|Reverse(x)| x),
                (None, None) => {}
            }
            if self.on_wheel == 0 {
                // Nothing within reach: jump to the first far event's bucket.
                let Reverse(first) = self.far.peek()?;
                self.cur = (first.t >> SHIFT).max(self.cur + 1);
            } else {
                self.cur += 1;
            }
            let slot = (self.cur as usize) & (SLOTS - 1);
            if let Some(v) = self.wheel.get_mut(slot) {
                // The bucket's vector becomes the current one and the emptied one is kept
                // for reuse (a few at most), so no bucket keeps the room it once needed:
                // memory follows the events pending.
                let v = std::mem::take(v);
                self.on_wheel -= v.len();
                let mut done = std::mem::take(&mut self.now);
                done.clear();
                sort_bucket(&v, &mut self.keys, &mut done);
                self.now = done;
                if v.capacity() > 0 && self.spare.len() < SPARE {
                    let mut v = v;
                    v.clear();
                    self.spare.push(v);
                }
            }
            // Far events now within the wheel's reach move onto it (or into the current
            // bucket).
            while let Some(Reverse(x)) = self.far.peek() {
                if (x.t >> SHIFT) - self.cur >= SLOTS as u64 {
                    break;
                }
                if let Some(Reverse(x)) = self.far.pop() {
                    self.push(x);
                }
            }
        }
    }
}

/// Puts bucket `v`'s events into `out` latest first (the next one last), in (time, sequence)
/// order.
fn sort_bucket<T: Copy>(v: &[Item<T>], keys: &mut Vec<(u64, u32)>, out: &mut Vec<Item<T>>) {
    const WITHIN: u64 = (1 << SHIFT) - 1;
    const SEQ: u64 = (1 << (64 - SHIFT)) - 1;
    keys.clear();
    keys.extend(
        v.iter()
            .enumerate()
            .map(|(i, x)| (((x.t & WITHIN) << (64 - SHIFT)) | (x.seq & SEQ), i as u32)),
    );
    keys.sort_unstable_by_key(|k| k.0);
    out.reserve(v.len());
    out.extend(
        keys.iter()
            .rev()
            .filter_map(|&(_, i)| v.get(i as usize).copied()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_fabric::rng::SplitMix64;

    /// Pops in exactly a binary heap's order, whatever the times pushed (same time, within
    /// the bucket, beyond the wheel) and however pushes and pops interleave.
    #[test]
    fn pops_in_heap_order() {
        for seed in 0..20u64 {
            let mut rng = SplitMix64(seed);
            let mut q = Queue::new();
            let mut heap = BinaryHeap::new();
            let mut seq = 0u64;
            let mut now = 0u64;
            for step in 0..20_000u32 {
                let pushes = rng.below(3);
                for _ in 0..pushes {
                    let d = match rng.below(5) {
                        0 => 0,
                        1 => rng.below(1 << SHIFT),
                        2 => rng.below(200_000),
                        3 => rng.below(1 << 27),
                        _ => rng.below(1 << 40),
                    };
                    seq += 1;
                    q.push(Item {
                        t: now + d,
                        seq,
                        ev: step,
                    });
                    heap.push(Reverse((now + d, seq, step)));
                }
                if rng.below(2) == 0 {
                    let a = q.pop().map(|x| (x.t, x.seq, x.ev));
                    let b = heap.pop().map(|Reverse(x)| x);
                    assert_eq!(a, b, "seed {seed}, step {step}");
                    if let Some((t, ..)) = a {
                        now = t;
                    }
                }
                assert_eq!(q.len(), heap.len());
            }
            while let Some(Reverse(b)) = heap.pop() {
                assert_eq!(q.pop().map(|x| (x.t, x.seq, x.ev)), Some(b));
            }
            assert!(q.pop().is_none());
        }
    }
}
