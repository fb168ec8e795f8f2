//! The parts on threads of their own: each thread runs its parts' window, posts what they
//! sent into the mailboxes of the parts it is for, and waits at a barrier; then every thread
//! works out the same next window from what each part posted.
//!
//! A part takes in only what was posted in windows before its current one (a faster thread
//! may already have posted the next window's), in the order of (window, sender): the same
//! events and the same target changes whichever thread ran which part, so the report is the
//! same on any number of threads (one thread runs every part in turn, with no barrier to wait
//! at).

use super::TargetChange;
use crate::sim::queue::Item;
use crate::sim::{Ev, Sim};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// What one part sent another in one window.
struct Batch {
    window: u64,
    from: u64,
    items: Vec<Item<Ev>>,
    changes: Vec<TargetChange>,
}

/// No event: a part with nothing pending.
const NOTHING: u64 = u64::MAX;

/// What the threads share.
struct Shared {
    /// Per part: what the others posted for it.
    mail: Vec<Mutex<Vec<Batch>>>,
    /// Per part and window parity: the time of its next event after the window (or of the
    /// first it sent), [`NOTHING`] when none. Two slots, so that a thread already past the
    /// barrier cannot overwrite what a slower one has still to read.
    next: Vec<[AtomicU64; 2]>,
    barrier: Barrier,
    /// A thread stopped by a panic: the others leave the barrier instead of waiting for it
    /// (the scope then passes the panic on).
    abort: AtomicBool,
}

/// Raises [`Shared::abort`] when its thread unwinds.
struct Abort<'a>(&'a AtomicBool);

impl Drop for Abort<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Release);
        }
    }
}

/// Runs `sims` on `threads` threads from the window starting at `t`.
pub(super) fn drive(
    sims: &mut [Sim<'_>],
    threads: usize,
    t: u64,
    window: u64,
    end: u64,
    drain: bool,
) {
    let shared = Shared {
        mail: sims.iter().map(|_| Mutex::new(Vec::new())).collect(),
        next: sims
            .iter()
            .map(|_| [AtomicU64::new(NOTHING), AtomicU64::new(NOTHING)])
            .collect(),
        barrier: Barrier::new(threads),
        abort: AtomicBool::new(false),
    };
    let mut groups: Vec<Vec<&mut Sim<'_>>> = (0..threads).map(|_| Vec::new()).collect();
    for (k, s) in sims.iter_mut().enumerate() {
        if let Some(g) = groups.get_mut(k % threads) {
            g.push(s);
        }
    }
    let shared = &shared;
    if threads == 1 {
        for group in groups {
            work(group, shared, t, window, end, drain);
        }
        return;
    }
    std::thread::scope(|scope| {
        for group in groups {
            scope.spawn(move || work(group, shared, t, window, end, drain));
        }
    });
}

/// One thread's loop over the windows, for its parts.
fn work(
    mut group: Vec<&mut Sim<'_>>,
    shared: &Shared,
    mut t: u64,
    window: u64,
    end: u64,
    drain: bool,
) {
    let _abort = Abort(&shared.abort);
    let mut w = 0u64;
    loop {
        if t > end && !drain {
            break;
        }
        let slot = (w % 2) as usize;
        for s in &mut group {
            take_mail(s, shared, w);
            let next = s.window(t, window);
            post_mail(s, shared, w);
            if let Some(x) = shared
                .next
                .get(s.part.me as usize)
                .and_then(|n| n.get(slot))
            {
                x.store(next.unwrap_or(NOTHING), Ordering::Relaxed);
            }
        }
        if !shared.barrier.wait(&shared.abort) {
            return;
        }
        let next = shared
            .next
            .iter()
            .filter_map(|n| n.get(slot))
            .map(|x| x.load(Ordering::Relaxed))
            .min()
            .unwrap_or(NOTHING);
        if next == NOTHING {
            break;
        }
        t = next;
        w += 1;
    }
    // Every thread stopped after the same barrier, so everything has been posted.
    for s in &mut group {
        take_mail(s, shared, u64::MAX);
        s.take_inbox();
    }
}

/// Moves what part `s` sent this window (`w`) into the mailboxes of the parts it is for.
fn post_mail(s: &mut Sim<'_>, shared: &Shared, w: u64) {
    let me = s.part.me;
    for (j, (items, changes)) in s
        .part
        .outbox
        .iter_mut()
        .zip(s.part.targets.iter_mut())
        .enumerate()
    {
        if items.is_empty() && changes.is_empty() {
            continue;
        }
        let batch = Batch {
            window: w,
            from: me,
            items: std::mem::take(items),
            changes: std::mem::take(changes),
        };
        if let Some(m) = shared.mail.get(j) {
            m.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(batch);
        }
    }
}

/// Puts what was posted for part `s` in windows before `w` into its inbox, in the order of
/// (window, sender).
fn take_mail(s: &mut Sim<'_>, shared: &Shared, w: u64) {
    let Some(m) = shared.mail.get(s.part.me as usize) else {
        return;
    };
    let mut taken = {
        let mut v = m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (now, later): (Vec<Batch>, Vec<Batch>) = std::mem::take(&mut *v)
            .into_iter()
            .partition(|b| b.window < w);
        *v = later;
        now
    };
    taken.sort_by_key(|b| (b.window, b.from));
    for b in taken {
        if !b.items.is_empty() {
            s.part.inbox.push(b.items);
        }
        if !b.changes.is_empty() {
            s.part.target_in.push(b.changes);
        }
    }
}

/// A barrier the threads spin at (then yield): a window is a fraction of a millisecond of
/// work, shorter than a sleeping thread takes to wake.
struct Barrier {
    threads: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

impl Barrier {
    fn new(threads: usize) -> Barrier {
        Barrier {
            threads,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }
    }

    /// Waits until every thread has come; `false` when `abort` was raised meanwhile.
    fn wait(&self, abort: &AtomicBool) -> bool {
        let g = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return true;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == g {
            if abort.load(Ordering::Acquire) {
                return false;
            }
            if spins < 1 << 12 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::{Abort, Barrier};
    use std::sync::atomic::AtomicBool;

    /// A thread that panics lets the others out of the barrier; the panic is passed on.
    #[test]
    fn a_panicking_thread_does_not_leave_the_others_waiting() {
        let (barrier, abort) = (Barrier::new(2), AtomicBool::new(false));
        let left = std::thread::scope(|s| {
            let waiter = s.spawn(|| barrier.wait(&abort));
            let failing = s.spawn(|| {
                let _abort = Abort(&abort);
                panic!("a part failed");
            });
            assert!(failing.join().is_err());
            waiter.join().ok()
        });
        assert_eq!(left, Some(false));
    }

    /// Without a panic, every thread passes, window after window.
    #[test]
    fn threads_pass_together() {
        let (barrier, abort) = (Barrier::new(3), AtomicBool::new(false));
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        assert!(barrier.wait(&abort));
                    }
                });
            }
        });
    }
}
