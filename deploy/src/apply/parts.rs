//! A plan with more blocks than one part ([`ApplyOptions::part`]) goes out part by part, each
//! part read, journaled, checked, written and read back before the next is read: the reading
//! that journals a block's `before` is, being that recent, the check before its Set (one Get
//! per block, where a snapshot of the whole plan first would be too old to stand for the
//! check and every block would be read twice).
//!
//! The journal is created with the first part's blocks and [`Event::Partial`]; each later
//! part's blocks are appended (synced) before any of its SMPs goes out, and
//! [`Event::Complete`] follows the last. A block never journaled was never written: a rollback
//! (or a recovery, which goes back only) undoes the parts journaled. A block of the first part
//! that does not hold the plan's old refuses the plan before anything is written, as a
//! snapshot does; one of a later part stops the apply, which rolls back what it wrote.

use super::{
    block_name, block_of, conclude, header_of, ApplyError, ApplyOptions, Cell, Count, Op, Progress,
    Report, Stop, Tops, Txn,
};
use crate::journal::{Event, Header, Writer};
use crate::transport::{SmpError, Target, Transport};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Instant;
use weft_formats::plan::Plan;

/// Writes `plan`'s `ops` (resolved, their tops worked out, in step order) part by part (see
/// the module's doc), then ends as every apply does ([`conclude`]).
pub(super) fn transact(
    t: &mut impl Transport,
    plan: &Plan,
    opts: &ApplyOptions,
    d: &crate::discover::Discovery,
    (count, tops, mut ops): (Count, Tops, Vec<Op>),
    notes: Vec<String>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    let _journal = super::journal_lock(&opts.lock_dir, &opts.journal)?;
    let mut x = Txn {
        t,
        j: None,
        count,
        settle: opts.settle,
        journal_failed: None,
        ended: false,
        times: Vec::new(),
        seen: BTreeMap::new(),
    };
    let of = ops.last().map_or(0, |o| o.step + 1);
    let mut steps: Vec<Vec<Result<Cell, String>>> = Vec::with_capacity(of);
    let mut parts = Parts {
        header: header_of(plan, d),
        left: BTreeMap::new(),
        tops: &tops,
        width: opts.part.max(1),
    };
    let mut went = Ok(0);
    let mut rest: &mut [Op] = &mut ops;
    for step in 0..of {
        let n = rest.iter().take_while(|o| o.step == step).count();
        let (these, later) = rest.split_at_mut(n);
        rest = later;
        if opts
            .stop
            .as_deref()
            .is_some_and(|s| s.load(Ordering::SeqCst))
        {
            went = Err((step, Stop::Asked));
            break;
        }
        progress(Progress::Step {
            step,
            of,
            smps: these.len(),
        });
        steps.push(Vec::new());
        let last = rest.is_empty();
        match parts.step(&mut x, &mut steps, (step, last), these, opts)? {
            Ok(()) => {
                if let Ok(done) = &mut went {
                    *done += 1;
                }
            }
            Err(stop) => {
                went = Err((step, stop));
                break;
            }
        }
    }
    conclude(x, &steps, went, plan, opts, notes, progress)
}

/// What going part by part keeps between parts.
struct Parts<'a> {
    /// The journal's header.
    header: Header,
    /// Per block written so far, what its last op leaves.
    left: BTreeMap<Target, Payload>,
    tops: &'a Tops,
    /// Blocks per part.
    width: usize,
}

type Payload = crate::smp::Payload;

impl Parts<'_> {
    /// Step `step` (its ops `these`; `last`: the plan's last), part by part, its cells added
    /// to `steps[step]` as they are journaled; after the plan's last part is journaled,
    /// [`Event::Complete`] (a recovery may then go forward too). `Err` outside: nothing was
    /// written and the apply is refused; `Err` inside: why the apply stopped (what was
    /// journaled is rolled back).
    fn step<T: Transport>(
        &mut self,
        x: &mut Txn<'_, T>,
        steps: &mut [Vec<Result<Cell, String>>],
        (step, last): (usize, bool),
        these: &mut [Op],
        opts: &ApplyOptions,
    ) -> Result<Result<(), Stop>, ApplyError> {
        let mut began = None;
        let mut begun = false;
        let parts = these.len().div_ceil(self.width);
        for (k, part) in these.chunks_mut(self.width).enumerate() {
            // The blocks no earlier op writes, read now: this reading is the journal's
            // `before` and, this recent, the check before the part's Sets.
            let fresh: Vec<Target> = part
                .iter()
                .filter(|o| !o.hidden && !self.left.contains_key(&o.target))
                .map(|o| o.target.clone())
                .collect();
            let at = Instant::now();
            x.count.gets += fresh.len();
            let got = x.t.get_all(&fresh);
            let mut read: BTreeMap<Target, Result<Payload, SmpError>> = BTreeMap::new();
            for (target, r) in fresh.into_iter().zip(got) {
                if let Ok(p) = &r {
                    x.seen.insert(target.clone(), (*p, at));
                }
                read.insert(target, r);
            }
            let mut blocks = Vec::with_capacity(part.len());
            for o in part.iter_mut() {
                x.count.visits += 1;
                let r = read.remove(&o.target);
                match block_of(o, &mut self.left, r, self.tops) {
                    Ok(b) => blocks.push(b),
                    // Nothing journaled, nothing written: refused as a snapshot refuses.
                    Err(e) if x.j.is_none() => return Err(e),
                    Err(ApplyError::Smp(e @ SmpError::Crashed { .. })) => {
                        return Ok(Err(Stop::Crashed(e)))
                    }
                    Err(ApplyError::Moved(m)) => {
                        return Ok(Err(Stop::Foreign(vec![format!(
                            "{m} (read as its part was about to go out)"
                        )])))
                    }
                    Err(e) => return Ok(Err(Stop::Smp(e.to_string()))),
                }
            }
            // Journaled before any of the part's SMPs goes out.
            match x.j.as_mut() {
                // Created with the first part (a failure: nothing was written).
                None => {
                    x.j = Some(Writer::create_partial(
                        &opts.journal,
                        &self.header,
                        &blocks,
                        opts.journal_fault,
                    )?);
                }
                Some(w) => {
                    if let Err(e) = w.blocks(&blocks) {
                        let text = e.to_string();
                        x.journal_failed.get_or_insert_with(|| text.clone());
                        return Ok(Err(Stop::Journal(text)));
                    }
                }
            }
            if last && k + 1 == parts {
                if let Err(e) = x.event(Event::Complete) {
                    return Ok(Err(Stop::Journal(e)));
                }
            }
            let cells: Vec<Cell> = part
                .iter()
                .zip(&blocks)
                .map(|(o, b)| Cell {
                    target: o.target.clone(),
                    before: b.before,
                    after: b.after,
                    what: block_name(b),
                    hidden: b.hidden,
                })
                .collect();
            if !begun {
                begun = true;
                if let Err(e) = x.event(Event::Begin { step }) {
                    push(steps, step, cells);
                    return Ok(Err(Stop::Journal(e)));
                }
            }
            let refs: Vec<&Cell> = cells.iter().collect();
            let sent = x.send(&refs, self.width, &mut began);
            push(steps, step, cells);
            if let Err(stop) = sent {
                return Ok(Err(stop));
            }
        }
        x.landed(step, began);
        // The step landed: a failure to journal that rolls it back too.
        Ok(x.event(Event::Done { step }).map_err(Stop::Journal))
    }
}

/// `cells` added to step `step` of `steps`.
fn push(steps: &mut [Vec<Result<Cell, String>>], step: usize, cells: Vec<Cell>) {
    if let Some(s) = steps.get_mut(step) {
        s.extend(cells.into_iter().map(Ok));
    }
}
