//! Recovery from a journal left by a crashed apply: which state the fabric holds, then back (or forward) from there.

use super::{cells, journal_lock, same, sm_lock, BTreeMap, Cell, Count, Duration, Path, Stop, Txn};
use crate::journal::{Event, Journal, Writer};
use crate::{
    discover, journal, ApplyError, Final, Payload, Progress, Report, SmpError, Target, Transport,
};

/// How to recover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Put every block back as it was (the default).
    Back,
    /// Finish the plan: every block as the plan writes it.
    Forward,
}

/// The step a fabric is in, by the journal: every block holds what the last step before it
/// that writes the block left (or what it held before the plan), except the blocks of that
/// step, which hold that or what the step writes (a step landing, or being undone). `None`
/// when no step up to the last that began fits: then each block that holds none of the
/// values the plan gives it is named.
pub(super) fn in_flight(
    steps: &[Vec<Result<Cell, String>>],
    held: &BTreeMap<Target, Payload>,
    last_begun: Option<usize>,
) -> Result<usize, Vec<String>> {
    // Per block: its writes in step order.
    let mut writes: BTreeMap<&Target, Vec<(usize, &Cell)>> = BTreeMap::new();
    let mut why = Vec::new();
    for (s, cells) in steps.iter().enumerate() {
        for c in cells {
            match c {
                Ok(c) => writes.entry(&c.target).or_default().push((s, c)),
                Err(e) => why.push(e.clone()),
            }
        }
    }
    if !why.is_empty() {
        return Err(why);
    }
    let fits = |j: usize| {
        writes.iter().all(|(target, w)| {
            let Some(g) = held.get(*target) else {
                return false;
            };
            let is = |p: &Payload| same(target, g, p);
            match w.iter().position(|(s, _)| *s >= j) {
                // Written in step j: before or after it.
                Some(i) if w.get(i).is_some_and(|(s, _)| *s == j) => w
                    .get(i)
                    .is_some_and(|(_, c)| c.holds_before(g) || is(&c.after)),
                // Next written after j: what it holds before that write.
                Some(i) => w.get(i).is_some_and(|(_, c)| c.holds_before(g)),
                // Not written from j on: what the last write left.
                None => w.last().is_some_and(|(_, c)| is(&c.after)),
            }
        })
    };
    // A step that never began holds its old values; a rollback may have undone any step up
    // to the last that began.
    let last = last_begun.unwrap_or(0).min(steps.len().saturating_sub(1));
    if let Some(j) = (0..=last).find(|&j| fits(j)) {
        return Ok(j);
    }
    for (target, w) in &writes {
        let Some((_, first)) = w.first() else {
            continue;
        };
        match held.get(*target) {
            None => why.push(format!("{} could not be read", first.what)),
            Some(g) => {
                let known = w
                    .iter()
                    .any(|(_, c)| c.holds_before(g) || same(target, g, &c.after));
                if !known {
                    why.push(format!(
                        "{} holds neither what it held before the plan nor anything the plan \
                         writes to it (another writer's)",
                        first.what
                    ));
                }
            }
        }
    }
    if why.is_empty() {
        why.push(format!(
            "the blocks hold old and new values in an order no step of the plan up to the last \
             that began (step {}) leaves",
            last + 1
        ));
    }
    Err(why)
}

/// Recovers from the journal at `path`: discovers the fabric (it must be the journal's),
/// reads every journaled block and checks that the fabric holds a state the journal's steps
/// pass through (refused, nothing written, otherwise), then from there writes every block
/// back (or, `Forward`, every block as the plan writes it), step by step with the same checks
/// as an apply.
pub fn recover(
    t: &mut impl Transport,
    path: &Path,
    direction: Direction,
    lock_dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    recover_with(t, path, direction, lock_dir, Duration::ZERO, progress)
}

/// [`recover`] with a settling time before the final reading of a recovery forward (see
/// [`ApplyOptions::settle`](super::ApplyOptions::settle)).
pub fn recover_with(
    t: &mut impl Transport,
    path: &Path,
    direction: Direction,
    lock_dir: &Path,
    settle: Duration,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    let _journal = journal_lock(lock_dir, path)?;
    let j: Journal = journal::read(path)?;
    let _lock = sm_lock(t, lock_dir)?;
    let d = discover(t)?;
    let diffs = j.header.wire.diff(&d.view.fold_vswitches(&j.header.wire));
    if !diffs.is_empty() {
        return Err(ApplyError::Stale(diffs));
    }
    let steps = cells(&d, &j.blocks);
    let mut x = Txn {
        t,
        j: None,
        count: Count {
            sets: 0,
            gets: d.smps + 1,
            visits: 0,
        },
        settle,
        journal_failed: None,
        ended: j.ended().is_some(),
        times: Vec::new(),
        seen: BTreeMap::new(),
    };
    let report = |x: &Txn<'_, _>, state: Final, failure: Option<String>, done: usize| Report {
        state,
        failure,
        steps_done: done,
        sets: x.count.sets,
        gets: x.count.gets,
        visits: x.count.visits,
        notes: Vec::new(),
        journal_open: !x.ended,
        outages: Vec::new(),
    };
    if j.blocks.is_empty() {
        return Ok(report(
            &x,
            Final::Nothing,
            Some("the journal records no writes: nothing to recover".to_owned()),
            0,
        ));
    }
    if let Some(end) = j.ended() {
        let state = x.classify(&steps);
        let had = if end == Event::Committed {
            "committed"
        } else {
            "rolled back"
        };
        return Ok(report(
            &x,
            state,
            Some(format!("nothing to recover: the apply had {had}")),
            0,
        ));
    }
    // Where the fabric is, by the journal.
    let all: Vec<&Cell> = steps
        .iter()
        .flatten()
        .filter_map(|c| c.as_ref().ok())
        .collect();
    let got = x.read(&all);
    let mut held = BTreeMap::new();
    for (c, g) in all.iter().zip(got) {
        match g {
            Ok(g) => {
                held.insert(c.target.clone(), g);
            }
            Err(e @ SmpError::Crashed { .. }) => return Err(ApplyError::Crashed(e)),
            Err(_) => {}
        }
    }
    let at = in_flight(&steps, &held, j.last_begun()).map_err(ApplyError::NotJournaled)?;
    if direction == Direction::Forward && j.partial() {
        return Err(ApplyError::PartialJournal(path.to_owned()));
    }
    x.j = Some(Writer::append(path)?);
    match direction {
        Direction::Back => {
            let _ = x.event(Event::RollbackBegin);
            let left = x.undo(&steps, at, progress).map_err(ApplyError::Crashed)?;
            let state = x.classify(&steps);
            if state == Final::Old {
                let _ = x.event(Event::RolledBack);
            }
            // A block that will not go back is reported with the others still in place.
            let failure = (!left.is_empty()).then(|| format!("rolling back: {}", left.join("; ")));
            let mut r = report(&x, state, failure, 0);
            if let Some(e) = x.journal_failed.clone() {
                r.notes
                    .push(format!("the journal could not be written: {e}"));
            }
            Ok(r)
        }
        Direction::Forward => {
            let (done, failure) = match x.forward(&steps, at, None, progress) {
                Ok(done) => match x.verify(&steps).map_err(ApplyError::Crashed)? {
                    c if c.is_empty() => (done, None),
                    c => (done, Some(c.join("; "))),
                },
                Err((s, Stop::Crashed(e))) => {
                    let _ = s;
                    return Err(ApplyError::Crashed(e));
                }
                // Stopped where it failed: the journal still holds every block.
                Err((s, why)) => (s.saturating_sub(at), Some(why.describe(s))),
            };
            let state = x.classify(&steps);
            if state == Final::New {
                let _ = x.event(Event::Committed);
            }
            let mut r = report(&x, state, failure, done);
            if let Some(e) = x.journal_failed.clone() {
                r.notes
                    .push(format!("the journal could not be written: {e}"));
            }
            Ok(r)
        }
    }
}
