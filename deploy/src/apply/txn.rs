//! The transaction: snapshot, journal, ordered parts with compare-and-swap, read-back, the final check and rollback.

use super::{
    fdb_tops, journal_lock, measured, mft_tops, parts, resolve, same, AtomicBool, BTreeMap, Count,
    Duration, Instant, Op, Ordering, Path, Tops,
};
use crate::journal::{Block, Event, Header, Writer};
use crate::smp::{PortInfo, SwitchInfo, PAYLOAD};
use crate::{
    journal, smp, ApplyError, ApplyOptions, Attr, Discovery, Final, Payload, Progress, Report,
    SmpError, Target, Transport,
};
use weft_formats::plan::Plan;

/// One block of one step, on the wire: what the journal says it holds before the step and
/// what the step writes.
#[derive(Clone, Debug)]
pub(super) struct Cell {
    pub(super) target: Target,
    pub(super) before: Payload,
    pub(super) after: Payload,
    pub(super) what: String,
    /// Whatever the block holds counts as `before` ([`Block::hidden`]).
    pub(super) hidden: bool,
}

impl Cell {
    /// Whether `got` is what the block holds before its step.
    pub(super) fn holds_before(&self, got: &Payload) -> bool {
        self.hidden || same(&self.target, got, &self.before)
    }
}

/// The steps of a journal, addressed through `d`: a block whose node is no longer reachable
/// has no target (it is reported as such).
pub(super) fn cells(d: &Discovery, blocks: &[Block]) -> Vec<Vec<Result<Cell, String>>> {
    let steps = blocks.iter().map(|b| b.step + 1).max().unwrap_or(0);
    let mut out: Vec<Vec<Result<Cell, String>>> = vec![Vec::new(); steps];
    for b in blocks {
        let what = block_name(b);
        let cell = match target_of(d, b) {
            Some(target) => Ok(Cell {
                target,
                before: b.before,
                after: b.after,
                what,
                hidden: b.hidden,
            }),
            None => Err(format!("{what} cannot be reached")),
        };
        if let Some(s) = out.get_mut(b.step) {
            s.push(cell);
        }
    }
    out
}

pub(super) fn block_name(b: &Block) -> String {
    let node = format!(
        "{}{}",
        b.node,
        b.port.map(|p| format!(" port {p}")).unwrap_or_default()
    );
    match b.attr {
        Attr::Lft => format!("switch {node} LFT block {}", b.modifier),
        Attr::SwitchInfo => {
            let (x, y) = (SwitchInfo::decode(&b.before), SwitchInfo::decode(&b.after));
            if x.linear_fdb_top == y.linear_fdb_top && x.multicast_fdb_top != y.multicast_fdb_top {
                format!("switch {node} MulticastFDBTop")
            } else {
                format!("switch {node} LinearFDBTop")
            }
        }
        Attr::Mft => format!(
            "switch {node} MFT block {} position {}",
            b.modifier & 0x1ff,
            b.modifier >> 28
        ),
        Attr::PKeyTable => format!("{node} P_Key table (modifier {:#x})", b.modifier),
        Attr::PortInfo => format!("{node} LID (PortInfo modifier {:#x})", b.modifier),
        // An end node's table is its port's (named with the node); a switch's by modifier.
        Attr::SlToVl if b.port.is_some() => format!("{node} SL→VL"),
        Attr::SlToVl => format!(
            "switch {node} SL→VL input {} output {}",
            (b.modifier >> 8) & 0xff,
            b.modifier & 0xff
        ),
        Attr::VlArb if b.port.is_some() => format!(
            "{node} VL arbitration block {} ({})",
            b.modifier >> 16,
            weft_plan::qos::block_range((b.modifier >> 16) as u8)
        ),
        Attr::VlArb => format!(
            "switch {node} port {} VL arbitration block {} ({})",
            b.modifier & 0xffff,
            b.modifier >> 16,
            weft_plan::qos::block_range((b.modifier >> 16) as u8)
        ),
        a => format!("{node} {a} (modifier {:#x})", b.modifier),
    }
}

pub(super) fn target_of(d: &Discovery, b: &Block) -> Option<Target> {
    Some(Target {
        path: d.path(b.node, b.port)?.clone(),
        attr: b.attr,
        modifier: b.modifier,
    })
}

/// Why a transaction stopped going forward.
pub(super) enum Stop {
    /// An SMP failed (lost, rejected, read back wrong).
    Smp(String),
    /// Another writer changed blocks this apply was about to write (each named).
    Foreign(Vec<String>),
    /// Another writer changed blocks this apply had written (each named), found after its
    /// last step.
    Changed(Vec<String>),
    /// The journal could not be written.
    Journal(String),
    /// Asked to stop.
    Asked,
    /// The writer crashed (fault injection).
    Crashed(SmpError),
}

impl Stop {
    pub(super) fn describe(&self, step: usize) -> String {
        match self {
            Stop::Smp(e) => format!("step {}: {e}", step + 1),
            Stop::Foreign(blocks) => format!(
                "another writer changed the fabric (found before step {}): {}; this apply \
                 stopped",
                step + 1,
                blocks.join("; ")
            ),
            Stop::Changed(blocks) => format!(
                "another writer changed the fabric after this apply wrote it: {}",
                blocks.join("; ")
            ),
            Stop::Journal(e) => format!(
                "the journal could not be written (at step {}): {e}; rolled back without \
                 waiting for it",
                step + 1
            ),
            Stop::Asked => format!("stopped before step {} (asked to stop)", step + 1),
            Stop::Crashed(e) => e.to_string(),
        }
    }
}

/// A transaction under way: the fabric, the journal, the counters.
pub(super) struct Txn<'a, T: Transport> {
    pub(super) t: &'a mut T,
    pub(super) j: Option<Writer>,
    pub(super) count: Count,
    pub(super) settle: Duration,
    /// Whether the journal failed (it then records less than happened).
    pub(super) journal_failed: Option<String>,
    /// Whether the journal records an end (committed or rolled back).
    pub(super) ended: bool,
    /// Per step, when its Sets began and its read-back ended (`None`: not sent by this run).
    pub(super) times: Vec<Option<(Instant, Instant)>>,
    /// What each block held when this apply last read it (snapshot, check, read-back), and
    /// when that read began.
    pub(super) seen: BTreeMap<Target, (Payload, Instant)>,
}

/// Blocks checked, then written, then read back together within a step (by default).
pub(super) const PART: usize = ApplyOptions::PART;

impl<T: Transport> Txn<'_, T> {
    /// Journals `e`; on failure, remembers it (the caller decides what it means).
    pub(super) fn event(&mut self, e: Event) -> Result<(), String> {
        let Some(w) = self.j.as_mut() else {
            return Err("no journal".to_owned());
        };
        match w.event(e) {
            Ok(()) => {
                if matches!(e, Event::Committed | Event::RolledBack) {
                    self.ended = true;
                }
                Ok(())
            }
            Err(err) => {
                let text = err.to_string();
                self.journal_failed.get_or_insert_with(|| text.clone());
                Err(text)
            }
        }
    }

    /// Reads `cells`' blocks: each result in order.
    pub(super) fn read(&mut self, cells: &[&Cell]) -> Vec<Result<Payload, SmpError>> {
        let targets: Vec<Target> = cells.iter().map(|c| c.target.clone()).collect();
        self.count.gets += targets.len();
        self.t.get_all(&targets)
    }

    /// Goes forward through steps `from..`: each step's blocks checked (they hold what the
    /// journal says they hold before it, or already what it writes), its start journaled,
    /// its SMPs sent and read back, its end journaled. The steps that landed whole, or why
    /// it stopped (and at which step).
    pub(super) fn forward(
        &mut self,
        steps: &[Vec<Result<Cell, String>>],
        from: usize,
        stop: Option<&AtomicBool>,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<usize, (usize, Stop)> {
        let mut done = 0;
        for (step, cells) in steps.iter().enumerate().skip(from) {
            if stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
                return Err((step, Stop::Asked));
            }
            let cells: Vec<&Cell> = cells
                .iter()
                .map(|c| c.as_ref().map_err(|e| (step, Stop::Smp(e.clone()))))
                .collect::<Result<_, _>>()?;
            progress(Progress::Step {
                step,
                of: steps.len(),
                smps: cells.len(),
            });
            self.event(Event::Begin { step })
                .map_err(|e| (step, Stop::Journal(e)))?;
            // The step goes out in parts (its writes land in any order, so any part first):
            // each part's blocks checked, then its Sets, then its read-back.
            let mut began = None;
            self.send(&cells, PART, &mut began).map_err(|s| (step, s))?;
            self.landed(step, began);
            done += 1;
            // The step landed: a failure to journal that rolls it back too.
            self.event(Event::Done { step })
                .map_err(|e| (step, Stop::Journal(e)))?;
        }
        Ok(done)
    }

    /// Sends `cells` (blocks of one step) in parts of `width`: each part's blocks checked,
    /// then its Sets, then its read-back; `began` is set when the first Sets go out.
    pub(super) fn send(
        &mut self,
        cells: &[&Cell],
        width: usize,
        began: &mut Option<Instant>,
    ) -> Result<(), Stop> {
        let mut rest = cells;
        let mut width = width.max(1);
        while !rest.is_empty() {
            let (n, batch) = self.check(rest, &mut width)?;
            let sent = Instant::now();
            began.get_or_insert(sent);
            match run_step(self.t, &batch, &mut self.count) {
                Ok(()) => {
                    for (target, after) in batch {
                        self.seen.insert(target, (after, sent));
                    }
                }
                Err(e @ SmpError::Crashed { .. }) => return Err(Stop::Crashed(e)),
                Err(e) => return Err(Stop::Smp(e.to_string())),
            }
            rest = rest.get(n..).unwrap_or_default();
        }
        Ok(())
    }

    /// Records that step `step` landed whole: its Sets began at `began`, its read-back ended
    /// now.
    pub(super) fn landed(&mut self, step: usize, began: Option<Instant>) {
        if self.times.len() <= step {
            self.times.resize(step + 1, None);
        }
        if let Some(t) = self.times.get_mut(step) {
            *t = Some((began.unwrap_or_else(Instant::now), Instant::now()));
        }
    }

    /// Compare, before swap: the first `width` of `cells` (fewer when reading them takes too
    /// long) checked to hold what the journal says they hold before the step (their Sets
    /// then go out) or already what it writes (nothing to send). The step's Sets follow the
    /// reads that checked its blocks by less than half the settling time (another writer's
    /// final reads wait a whole one): a block this apply read (snapshot, read-back) more
    /// recently than that is not read again; with no settling time, every block is. How many
    /// cells were checked, and the Sets to send.
    pub(super) fn check(
        &mut self,
        cells: &[&Cell],
        width: &mut usize,
    ) -> Result<(usize, Vec<(Target, Payload)>), Stop> {
        let bound = self.settle / 2;
        loop {
            let part = cells.get(..(*width).min(cells.len())).unwrap_or(cells);
            let checked = Instant::now();
            // The oldest reading the part's checks rest on.
            let mut oldest = checked;
            let mut held: Vec<Option<Payload>> = Vec::with_capacity(part.len());
            let mut stale = Vec::new();
            for c in part {
                match self.seen.get(&c.target) {
                    // Whatever it holds counts as what it held before: nothing to check.
                    _ if c.hidden => held.push(Some(c.before)),
                    Some((p, at)) if !bound.is_zero() && at.elapsed() < bound => {
                        oldest = oldest.min(*at);
                        held.push(Some(*p));
                    }
                    _ => {
                        stale.push(*c);
                        held.push(None);
                    }
                }
            }
            let mut got = self.read(&stale).into_iter();
            let mut batch = Vec::with_capacity(part.len());
            let mut foreign = Vec::new();
            for (c, h) in part.iter().zip(held) {
                let g = match h {
                    Some(p) => p,
                    None => match got.next() {
                        Some(Ok(g)) => {
                            self.seen.insert(c.target.clone(), (g, checked));
                            g
                        }
                        Some(Err(e @ SmpError::Crashed { .. })) => return Err(Stop::Crashed(e)),
                        Some(Err(e)) => return Err(Stop::Smp(e.to_string())),
                        None => return Err(Stop::Smp("a batch came back short".to_owned())),
                    },
                };
                if c.holds_before(&g) {
                    batch.push((c.target.clone(), c.after));
                } else if !same(&c.target, &g, &c.after) {
                    // Neither: another writer's. (Already what the step writes: an apply of
                    // this same plan got here first, or a recovery finds it landed.)
                    foreign.push(format!(
                        "{} holds neither what it held before this step nor what the step writes",
                        c.what
                    ));
                }
            }
            if !foreign.is_empty() {
                return Err(Stop::Foreign(foreign));
            }
            if bound.is_zero() || oldest.elapsed() < bound {
                return Ok((part.len(), batch));
            }
            // Too slow: a smaller part, read again.
            *width = (*width / 2).max(1);
        }
    }

    /// After the settling time, reads every block once more: the ones that do not hold
    /// what the steps left (another writer changed them since).
    pub(super) fn verify(
        &mut self,
        steps: &[Vec<Result<Cell, String>>],
    ) -> Result<Vec<String>, SmpError> {
        if !self.settle.is_zero() {
            std::thread::sleep(self.settle);
        }
        // Per block, what the last step writing it leaves.
        let mut last: BTreeMap<&Target, &Cell> = BTreeMap::new();
        for c in steps.iter().flatten().flatten() {
            last.insert(&c.target, c);
        }
        let cells: Vec<&Cell> = last.into_values().collect();
        let got = self.read(&cells);
        let mut changed = Vec::new();
        for (c, g) in cells.iter().zip(got) {
            match g {
                Ok(g) if same(&c.target, &g, &c.after) => {}
                Ok(_) => changed.push(format!("{} no longer holds what this apply wrote", c.what)),
                Err(e @ SmpError::Crashed { .. }) => return Err(e),
                Err(e) => changed.push(format!("{} could not be read again: {e}", c.what)),
            }
        }
        Ok(changed)
    }

    /// Undoes steps `last` down to 0: each block that holds what its step wrote gets what the
    /// journal says it held before the step, and is read back; a block that holds what it
    /// held before is left; one that holds anything else (another writer's) is left as it is
    /// and named. What could not be put back, or was left as another writer's.
    pub(super) fn undo(
        &mut self,
        steps: &[Vec<Result<Cell, String>>],
        last: usize,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Vec<String>, SmpError> {
        let mut left = Vec::new();
        for step in (0..=last.min(steps.len().saturating_sub(1))).rev() {
            progress(Progress::Undo { step });
            let cells: Vec<&Cell> = steps
                .get(step)
                .into_iter()
                .flatten()
                .filter_map(|c| c.as_ref().ok())
                .collect();
            // Undo goes on past a failed block: every other block still goes back.
            let mut tries = 0;
            loop {
                tries += 1;
                let got = self.read(&cells);
                let mut batch = Vec::new();
                let mut foreign = Vec::new();
                let mut unread = Vec::new();
                for (c, g) in cells.iter().zip(got) {
                    match g {
                        Ok(g) if same(&c.target, &g, &c.after) => {
                            batch.push((c.target.clone(), c.before));
                        }
                        Ok(g) if c.holds_before(&g) => {}
                        Ok(_) => foreign.push(format!(
                            "{} holds another writer's value: left as it is",
                            c.what
                        )),
                        Err(e @ SmpError::Crashed { .. }) => return Err(e),
                        Err(e) => unread.push(format!("{}: {e}", c.what)),
                    }
                }
                let r = run_step(self.t, &batch, &mut self.count);
                match r {
                    Err(e @ SmpError::Crashed { .. }) => return Err(e),
                    Ok(()) if unread.is_empty() => {
                        left.extend(foreign);
                        break;
                    }
                    Ok(()) | Err(_) if tries < 3 => continue,
                    Ok(()) => {
                        left.extend(foreign);
                        left.extend(
                            unread
                                .into_iter()
                                .map(|u| format!("could not put back {u}")),
                        );
                        break;
                    }
                    Err(e) => {
                        left.extend(foreign);
                        left.push(format!("could not put back step {}: {e}", step + 1));
                        break;
                    }
                }
            }
        }
        Ok(left)
    }

    /// Reads every journaled block and says which state the fabric is in: each block's value
    /// before the first step that writes it (old) and after the last (new).
    pub(super) fn classify(&mut self, steps: &[Vec<Result<Cell, String>>]) -> Final {
        // Per block: its first write (what it held before the plan) and what the last leaves.
        let mut ends: BTreeMap<&Target, (&Cell, Payload)> = BTreeMap::new();
        let mut unreachable = Vec::new();
        for c in steps.iter().flatten() {
            match c {
                Ok(c) => {
                    ends.entry(&c.target)
                        .and_modify(|e| e.1 = c.after)
                        .or_insert((c, c.after));
                }
                Err(e) => unreachable.push(e.clone()),
            }
        }
        if ends.is_empty() && unreachable.is_empty() {
            return Final::Nothing;
        }
        let targets: Vec<Target> = ends.keys().map(|t| (*t).clone()).collect();
        self.count.gets += targets.len();
        let got = self.t.get_all(&targets);
        let (mut old, mut new) = (unreachable.is_empty(), unreachable.is_empty());
        let mut odd = unreachable;
        let mut newer = Vec::new();
        let mut older = Vec::new();
        for ((target, (first, after)), g) in ends.iter().zip(got) {
            let what = first.what.as_str();
            match g {
                Ok(g) => {
                    let (o, n) = (first.holds_before(&g), same(target, &g, after));
                    old &= o;
                    new &= n;
                    if !o && !n {
                        odd.push(format!(
                            "{what} holds neither the plan's old value nor its new one (another \
                             writer's)"
                        ));
                    } else if n && !o {
                        newer.push(format!("{what} holds the plan's new value"));
                    } else if o && !n {
                        older.push(format!("{what} holds the plan's old value"));
                    }
                }
                Err(e) => {
                    old = false;
                    new = false;
                    odd.push(format!("{what} could not be read: {e}"));
                }
            }
        }
        if new {
            Final::New
        } else if old {
            Final::Old
        } else {
            // Neither state: every block that is not as it was, and (when some hold the old
            // values) how many do.
            odd.extend(newer);
            if !older.is_empty() {
                odd.push(format!(
                    "{} other block(s) hold the plan's old value",
                    older.len()
                ));
            }
            Final::Mixed(odd)
        }
    }
}

/// Writes `plan`, proven, to the fabric `d` discovered (see the module's doc): snapshot,
/// journal, the steps with their checks, the final reading, rollback on any failure.
pub(super) fn transact(
    t: &mut impl Transport,
    plan: &Plan,
    opts: &ApplyOptions,
    d: &Discovery,
    gets: usize,
    notes: Vec<String>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    let mut count = Count {
        sets: 0,
        gets,
        visits: 0,
    };
    let mut ops = resolve(plan, d, opts.vfs)?;
    progress(Progress::Snapshot);
    // LinearFDBTop and MulticastFDBTop: raise each after the first step writing above it.
    let mut tops = fdb_tops(t, d, &mut ops, &mut count)?;
    mft_tops(t, d, &mut ops, &mut count, &mut tops)?;
    if distinct_blocks(&ops) > opts.part.max(1) {
        // Too many blocks to read in one part: snapshot, journal and write part by part.
        return parts::transact(t, plan, opts, d, (count, tops, ops), notes, progress);
    }
    // Snapshot: every block as it is; each must hold the plan's old. A block the plan writes
    // in several steps holds, before each later write, what the write before it left.
    let (mut reads, seen) = snapshot(t, &ops, &mut count);
    let mut blocks = Vec::with_capacity(ops.len());
    let mut left: BTreeMap<Target, Payload> = BTreeMap::new();
    for (i, o) in ops.iter_mut().enumerate() {
        count.visits += 1;
        let read = reads.get_mut(i).and_then(Option::take);
        blocks.push(block_of(o, &mut left, read, &tops)?);
    }
    let header = header_of(plan, d);
    let _journal = journal_lock(&opts.lock_dir, &opts.journal)?;
    let j = Writer::create(&opts.journal, &header, &blocks, opts.journal_fault)?;
    let steps = cells(d, &blocks);
    let mut x = Txn {
        t,
        j: Some(j),
        count,
        settle: opts.settle,
        journal_failed: None,
        ended: false,
        times: Vec::new(),
        seen,
    };
    let stop = opts.stop.as_deref();
    let went = x.forward(&steps, 0, stop, progress);
    conclude(x, &steps, went, plan, opts, notes, progress)
}

/// How many blocks `ops` write (each once, however many steps write it).
pub(super) fn distinct_blocks(ops: &[Op]) -> usize {
    ops.iter()
        .map(|o| &o.target)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// The journal's header for `plan` on the fabric `d` discovered.
pub(super) fn header_of(plan: &Plan, d: &Discovery) -> Header {
    Header {
        format: journal::JOURNAL_FORMAT.to_owned(),
        version: 1,
        fabric: plan.fabric_name.clone(),
        from: plan.from.clone(),
        to: plan.to.clone(),
        // As the plan sees the fabric: its VFs' LIDs are the journal's to change.
        wire: plan
            .wire
            .as_ref()
            .map_or_else(|| d.view.clone(), |w| d.view.fold_vswitches(w)),
    }
}

/// The journal's block for `o`: what the block holds before it — what an earlier op of the
/// plan leaves (`left`), else `read` off the fabric, which must hold the plan's old (or differ
/// from it only where the switch does not forward by) — and what `o` writes (a LID or a top
/// filled into what the block holds before). `left` then holds what `o` leaves.
pub(super) fn block_of(
    o: &mut Op,
    left: &mut BTreeMap<Target, Payload>,
    read: Option<Result<Payload, SmpError>>,
    tops: &Tops,
) -> Result<Block, ApplyError> {
    let first = !left.contains_key(&o.target);
    let before = match left.get(&o.target) {
        // Not read: whatever it holds counts as the plan's old (the switch forwards by none
        // of it), and that is what an undo writes back while the top still hides it.
        None if o.hidden => o.expect.unwrap_or([0xff; PAYLOAD]),
        Some(p) => {
            if o.expect.is_some_and(|want| !same(&o.target, p, &want)) {
                return Err(ApplyError::Invalid(format!(
                    "{} in step {} does not start from what the step before it writes",
                    o.what,
                    o.step + 1
                )));
            }
            *p
        }
        None => {
            let read = read
                .unwrap_or_else(|| Err(SmpError::Transport("a batch came back short".into())))
                .map_err(ApplyError::Smp)?;
            if let Some(want) = &o.expect {
                if !same(&o.target, &read, want) && !tops.beyond(o, &read, want) {
                    return Err(ApplyError::Moved(format!(
                        "{} does not hold the plan's old value",
                        o.what
                    )));
                }
            }
            match o.lid {
                // Written back on undo: as read, the states "no change".
                Some(_) => smp::port_lid_write(&read, PortInfo::decode(&read).lid),
                None => read,
            }
        }
    };
    if let Some(lid) = o.lid {
        o.after = smp::port_lid_write(&before, lid);
    }
    if let Some(top) = o.top {
        o.after = top.write(&before);
    }
    left.insert(o.target.clone(), o.after);
    Ok(Block {
        step: o.step,
        node: o.node,
        port: o.port,
        attr: o.target.attr,
        modifier: o.target.modifier,
        before,
        after: o.after,
        hidden: first && o.hidden,
    })
}

/// Ends a transaction whose steps went as `went` says (the steps that landed, or where and
/// why it stopped): the final reading after the settling time and the commit, or the
/// rollback.
pub(super) fn conclude<T: Transport>(
    mut x: Txn<'_, T>,
    steps: &[Vec<Result<Cell, String>>],
    went: Result<usize, (usize, Stop)>,
    plan: &Plan,
    opts: &ApplyOptions,
    notes: Vec<String>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    let (done, failure) = match went {
        Ok(done) => {
            progress(Progress::Verifying);
            match x.verify(steps) {
                Ok(changed) if changed.is_empty() => (done, None),
                Ok(changed) => (done, Some((steps.len(), Stop::Changed(changed)))),
                Err(e) => return Err(ApplyError::Crashed(e)),
            }
        }
        Err((at, stop)) => (at.min(steps.len()), Some((at, stop))),
    };
    let Some((at, why)) = failure else {
        // Every block read back as its last write left it, and again after the settling
        // time: the new state.
        let mut notes = notes;
        if x.event(Event::Committed).is_err() {
            notes.push(format!(
                "the journal could not record the commit ({}): it still says the apply did not \
                 end; `weft apply --recover {} --forward` finds the new state and closes it",
                x.journal_failed.clone().unwrap_or_default(),
                opts.journal.display()
            ));
        }
        return Ok(Report {
            state: Final::New,
            failure: None,
            steps_done: done,
            sets: x.count.sets,
            gets: x.count.gets,
            visits: x.count.visits,
            notes,
            journal_open: !x.ended,
            outages: measured(plan, &x.times),
        });
    };
    if let Stop::Crashed(e) = why {
        return Err(ApplyError::Crashed(e));
    }
    let failure = why.describe(at.min(steps.len().saturating_sub(1)));
    rollback(x, steps, at, failure, done, notes, &opts.journal, progress)
}

/// Per op of `ops`, what its block holds for the first op writing the block (`None` for the
/// others), read in parts of [`PART`] with every part in flight together, the last steps'
/// blocks first (the first step's are then the freshest when it is checked); and each
/// block's reading with when its part began.
#[expect(
    clippy::type_complexity,
    reason = "a tuple returned to one caller, which takes it apart at once"
)]
pub(super) fn snapshot(
    t: &mut impl Transport,
    ops: &[Op],
    count: &mut Count,
) -> (
    Vec<Option<Result<Payload, SmpError>>>,
    BTreeMap<Target, (Payload, Instant)>,
) {
    let mut firsts = Vec::new();
    let mut known = std::collections::BTreeSet::new();
    for (i, o) in ops.iter().enumerate() {
        count.visits += 1;
        // A hidden block's first write is not read ([`Op::hidden`]).
        if known.insert(&o.target) && !o.hidden {
            firsts.push(i);
        }
    }
    let mut reads: Vec<Option<Result<Payload, SmpError>>> =
        std::iter::repeat_with(|| None).take(ops.len()).collect();
    let mut seen = BTreeMap::new();
    for part in firsts.rchunks(PART) {
        let targets: Vec<Target> = part
            .iter()
            .filter_map(|&i| ops.get(i).map(|o| o.target.clone()))
            .collect();
        let at = Instant::now();
        count.gets += targets.len();
        let got = t.get_all(&targets);
        for ((&i, target), r) in part.iter().zip(targets).zip(got) {
            if let Ok(p) = &r {
                seen.insert(target, (*p, at));
            }
            if let Some(slot) = reads.get_mut(i) {
                *slot = Some(r);
            }
        }
    }
    (reads, seen)
}

/// Rolls back steps `at` down to 0 after `failure`, and reports.
#[expect(
    clippy::too_many_arguments,
    reason = "each argument is a separate borrow of the caller's state; a struct built for this one call would not read better"
)]
pub(super) fn rollback<T: Transport>(
    mut x: Txn<'_, T>,
    steps: &[Vec<Result<Cell, String>>],
    at: usize,
    failure: String,
    done: usize,
    mut notes: Vec<String>,
    journal: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    // A rollback the journal cannot record goes on: every state it passes through is one
    // recovery accepts (each step's blocks old, new, or the one step being undone).
    let _ = x.event(Event::RollbackBegin);
    let last = at.min(steps.len().saturating_sub(1));
    let left = x.undo(steps, last, progress).map_err(ApplyError::Crashed)?;
    let state = x.classify(steps);
    if state == Final::Old {
        let _ = x.event(Event::RolledBack);
    }
    notes.extend(left);
    if let Some(e) = &x.journal_failed {
        if !x.ended {
            notes.push(format!(
                "the journal could not be written ({e}): it still says the apply did not end; \
                 `weft apply --recover {}` checks the fabric and closes it",
                journal.display()
            ));
        }
    }
    Ok(Report {
        state,
        failure: Some(failure),
        steps_done: done,
        sets: x.count.sets,
        gets: x.count.gets,
        visits: x.count.visits,
        notes,
        journal_open: !x.ended,
        outages: Vec::new(),
    })
}

/// Sends a step and reads every block back.
pub(super) fn run_step(
    t: &mut impl Transport,
    batch: &[(Target, Payload)],
    count: &mut Count,
) -> Result<(), SmpError> {
    if batch.is_empty() {
        return Ok(());
    }
    count.sets += batch.len();
    let results = t.set_all(batch);
    for ((target, want), r) in batch.iter().zip(results) {
        let got = r?;
        if !same(target, &got, want) {
            return Err(SmpError::Transport(format!(
                "{target}: the response holds other data than was written"
            )));
        }
    }
    let targets: Vec<Target> = batch.iter().map(|(t, _)| t.clone()).collect();
    count.gets += targets.len();
    for ((target, want), got) in batch.iter().zip(t.get_all(&targets)) {
        if !same(target, &got?, want) {
            return Err(SmpError::Transport(format!(
                "{target}: reads back other data than was written"
            )));
        }
    }
    Ok(())
}
