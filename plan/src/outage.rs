//! Break-before-make: the LFT steps between two proven states when some destinations' writes
//! have no safe order, at the price of an outage that is stated.
//!
//! The LFT writes are first ordered and proven as the planner always has (each switch
//! after its new next hop, a stage that fails split down to single entries). When a single
//! entry is unsafe even on its own (a transient credit or forwarding loop that any state
//! holding both the old and the new entries has), or the search spends its budget
//! ([`ZERO_OUTAGE_BUDGET`]), a second search starts from the beginning, in which
//! some destinations go through break-before-make:
//!
//! 1. where a check fails on transient credit loops, the destinations that create each loop's
//!    rarest dependency (the one fewest destinations create, all of them still changing) are
//!    dropped: one step sets their entries not yet moved to "no entry" (0xFF), so their routes
//!    are the routes of the moment cut short, and every mix's routes and channel dependencies
//!    a part of the state's — that dependency is gone from every later mix. A single entry
//!    unsafe on its own with no such dependency drops its own destination;
//! 2. the other destinations go on moving directly, in the proven order;
//! 3. one last step writes the dropped destinations' new entries: their routes are then the
//!    new routes cut short or whole, a part of the end state's.
//!
//! The same search seeded with every changing switch LID, and dropping every changing
//! destination at once, are worked out too; the plan whose outage costs fewest route-SMPs is
//! kept.
//!
//! Each step is proven with the transition property, `connected` asking nothing of the
//! dropped destinations between their drop and the last step (the verifier's
//! [`Transition::drop_destinations`]); after it they must arrive again. Dropping every
//! changing destination always works (steps 1 and 3 alone), which the second search does when
//! it spends its budget ([`SEARCH_BUDGET`]), so a plan always exists between two proven
//! states of the same fabric. The destinations are chosen greedily, loop by loop (a feedback
//! set over destinations, not the least one).

use crate::order::{self, Shadow};
use crate::{describe, lft_change_iter, lft_changes, sorted, why, PlanError};
use serde::Serialize;
use std::collections::BTreeSet;
use weft_fabric::{Lid, NodeId, ValidState, LFT_UNSET};
use weft_formats::plan::{PlanStep, SmpWrite};
use weft_verifier::transition::{Change, StepCheck, Transition};
use weft_verifier::Scope;

/// Destination walks the search without outage may spend on failed checks before the second
/// search starts: each failed check (a split of a step that is not proven) counts every
/// destination in scope, which it may walk again — about 70 failed checks on a 648-node tree,
/// 4 at 11 664 nodes. With `--zero-outage` the search is not bounded.
pub const ZERO_OUTAGE_BUDGET: usize = 50_000;

/// Destination walks the second searches (every seed's, together) may spend on failed checks
/// before every destination still changing is dropped (about 200 failed checks at 648 nodes,
/// 12 at 11 664).
pub const SEARCH_BUDGET: usize = 150_000;

/// The LFT steps proven, with their outage.
#[derive(Default)]
pub(crate) struct Proved {
    pub steps: Vec<PlanStep>,
    pub checks: Vec<StepCheck>,
    pub splits: usize,
    pub outage: Option<Outage>,
}

/// What break-before-make costs: the destinations out of service and for how long.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Outage {
    /// Destination LIDs taken out of service, sorted.
    pub destinations: Vec<u16>,
    /// Routes (source port or switch, destination) that do not arrive at the worst step,
    /// beyond those that failed before the plan.
    pub routes: u64,
    /// End nodes whose route to some destination out of service fails after a step that
    /// drops destinations, by name, sorted.
    pub hosts: Vec<String>,
    /// Steps from the first that drops destinations to the one that restores them, both
    /// included.
    pub steps: usize,
    /// SMPs those steps send: the outage lasts as long as they take to land.
    pub smps: u64,
    /// Why: what the search found unsafe to write directly.
    pub why: String,
}

/// Why a search stopped.
enum Stop {
    /// A single entry is unsafe on its own: what the write changes, and the error.
    Unsafe(Vec<Change>, PlanError),
    /// The search spent its budget.
    Budget,
    /// A check failed on a transient credit loop these destinations (each still changing)
    /// create the rarest dependency of: drop them.
    Drop(Vec<u16>),
    /// The outage so far costs as much as a plan already found ([`Eager::beat`]).
    Beaten,
}

/// What the second search needs to find the destinations to drop where a check fails.
struct Eager<'a> {
    /// The entries the search moves (some may have landed since).
    pending: &'a [(NodeId, u16)],
    target: &'a dyn Fn(NodeId, u16) -> u8,
    /// The cost of the best plan found so far: a search whose outage costs as much already
    /// stops.
    beat: Option<u64>,
}

/// The LFT steps from `start` to the proven state `end` (`changed`: the entries that differ,
/// sorted): without outage when the search finds an order, else (with `allow_outage`)
/// break-before-make for the destinations the second search finds on transient credit
/// loops, each dropped where it is met, the others going on in order. With `fill_at_once`
/// and every changed entry unset in `start` (an initial deployment), the first search tries
/// them all as one step (its check splits it, as any stage's, should it fail).
pub(crate) fn prove(
    start: &ValidState,
    end: &ValidState,
    changed: &[(NodeId, u16)],
    scope: Scope,
    (allow_outage, fill_at_once): (bool, bool),
) -> Result<Proved, PlanError> {
    let tables = order::Tables::of(end);
    let target = |x: NodeId, lid: u16| tables.entry(x, lid);
    // First without outage. Without outage allowed the search is not bounded (it ends: every
    // split halves).
    let mut budget = if allow_outage {
        ZERO_OUTAGE_BUDGET
    } else {
        usize::MAX
    };
    let mut t = Transition::new(start, scope);
    // Every search starts from here: the start worked out once (kept only where a second
    // search may run).
    let base = allow_outage.then(|| t.snapshot());
    let mut out = Proved::default();
    let mut live = Shadow::new();
    let stages = if fill_at_once && order::fills_only(start, changed) {
        let one = live
            .clone()
            .write_all(start, changed.iter().copied(), &target);
        if one.is_empty() {
            Vec::new()
        } else {
            vec![one]
        }
    } else {
        order::staged(start, changed, &target, &mut live.clone())
    };
    let why = match prove_stages(
        &mut t,
        start,
        stages,
        &mut budget,
        &mut out,
        &mut live,
        None,
    ) {
        Ok(()) => return Ok(out),
        Err(Stop::Unsafe(_, e)) if !allow_outage => return Err(e),
        Err(Stop::Unsafe(_, e)) => e.to_string(),
        Err(Stop::Budget | Stop::Drop(_) | Stop::Beaten) => {
            format!(
                "the search for an order that keeps every route spent its budget ({} failed \
                 checks on {} destinations)",
                ZERO_OUTAGE_BUDGET.div_ceil(t.destinations().max(1)),
                t.destinations()
            )
        }
    };
    // Dropping every changing destination at once (two steps, cheap: it bounds the rest);
    // the search with every changing switch LID dropped first (the switch-to-switch routes,
    // which turn down then up where host routes do not); the greedy search. They share one
    // budget of failed checks, in that order. Kept: the one whose outage costs fewest
    // route-SMPs (routes out at the worst step × SMPs while any is out), the earlier on a tie.
    let mut best: Option<Proved> = None;
    let mut budget = SEARCH_BUDGET;
    for seed in [Seed::All, Seed::Switches, Seed::Greedy] {
        match &base {
            Some(b) => t.restore(b),
            None => t = Transition::new(start, scope),
        }
        let Some(p) = break_before_make(
            &mut t,
            start,
            changed,
            &target,
            why.clone(),
            seed,
            &mut budget,
            best.as_ref().map(cost),
        )?
        else {
            continue;
        };
        if best.as_ref().is_none_or(|b| cost(&p) < cost(b)) {
            best = Some(p);
        }
    }
    best.ok_or_else(|| PlanError::Unproven("no plan (a bug in weft)".to_owned()))
}

/// Every LID with a changing entry, sorted.
fn every_lid(changed: &[(NodeId, u16)]) -> Vec<u16> {
    flagged(&flags(changed.iter().map(|&(_, lid)| lid)))
}

/// Per LID, whether `lids` holds it (sixteen million entries at 11 664 nodes name about as
/// many LIDs as a set would hold: flags, not a tree).
fn flags(lids: impl Iterator<Item = u16>) -> Vec<bool> {
    let mut f = vec![false; usize::from(u16::MAX) + 1];
    for l in lids {
        if let Some(x) = f.get_mut(usize::from(l)) {
            *x = true;
        }
    }
    f
}

/// The LIDs `flags` holds, sorted.
fn flagged(flags: &[bool]) -> Vec<u16> {
    (0..=u16::MAX).filter(|&l| flag(flags, l)).collect()
}

/// What a break-before-make plan's outage costs: routes out at its worst step × SMPs sent
/// while any destination is out.
fn cost(p: &Proved) -> u64 {
    p.outage
        .as_ref()
        .map_or(0, |o| o.routes.saturating_mul(o.smps))
}

/// What a break-before-make search's outage costs at least already, its steps so far: routes
/// out at the worst step so far × SMPs sent from the first step that drops destinations.
fn cost_so_far(p: &Proved) -> u64 {
    let routes = p.checks.iter().map(|c| c.outage_routes).max().unwrap_or(0);
    let first = p.steps.iter().position(|s| !s.drops.is_empty());
    let smps: u64 = p
        .steps
        .get(first.unwrap_or(p.steps.len())..)
        .unwrap_or(&[])
        .iter()
        .map(|s| s.writes.len() as u64)
        .sum();
    routes.saturating_mul(smps)
}

/// What the second search drops before it starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Seed {
    /// Nothing: only what failed checks name.
    Greedy,
    /// Every changing destination that is a switch's LID.
    Switches,
    /// Every changing destination.
    All,
}

/// The second search: from `start` again, with `seed`'s destinations dropped first, every
/// failed check's transient credit loops broken by dropping the destinations that create their
/// rarest dependencies ([`culprits`]). `None` when `seed` names no destination, or when the
/// outage so far already costs `beat` or more (the plan could not be kept: both factors of
/// [`cost`] only grow as the search goes on).
#[expect(
    clippy::too_many_arguments,
    reason = "each argument is a separate borrow of the caller's state; a struct built for this one call would not read better"
)]
fn break_before_make(
    t: &mut Transition<'_>,
    start: &ValidState,
    changed: &[(NodeId, u16)],
    target: &dyn Fn(NodeId, u16) -> u8,
    why: String,
    seed: Seed,
    shared: &mut usize,
    beat: Option<u64>,
) -> Result<Option<Proved>, PlanError> {
    let Some(first) = seed_lids(start, changed, seed) else {
        return Ok(None);
    };
    let mut first = Some(first).filter(|f| !f.is_empty());
    // This search's failed checks come out of the budget the seeds share; once it is spent,
    // every destination still changing is dropped and the search ends unbounded.
    let mut spent = false;
    let mut unbounded = usize::MAX;
    // The dependencies on the credit loops of the last failed check that named destinations
    // to drop.
    let mut before: Option<usize> = None;
    let mut s = Dropping {
        t,
        start,
        changed,
        target,
        out: Proved::default(),
        live: Shadow::new(),
        dropped: vec![false; usize::from(u16::MAX) + 1],
        hosts: BTreeSet::new(),
    };
    let mut pending: Vec<(NodeId, u16)> = changed.to_vec();
    loop {
        let eager = Eager {
            pending: &pending,
            target,
            beat,
        };
        // The seed's drop goes first; only then are the stages worked out.
        let run = if let Some(lids) = first.take() {
            Err(Stop::Drop(lids))
        } else {
            let stages = order::staged(start, &pending, target, &mut s.live.clone());
            prove_stages(
                s.t,
                start,
                stages,
                if spent { &mut unbounded } else { &mut *shared },
                &mut s.out,
                &mut s.live,
                Some(&eager),
            )
        };
        let lids: Vec<u16> = match run {
            Ok(()) => break,
            Err(Stop::Drop(lids)) => {
                // The failed check's credit loops are made of `now` dependencies; the last
                // drop removed `before - now` of them. At that rate, when breaking the rest
                // would take more failed checks than the budget has left, the search would
                // end by spending it: every destination still changing is dropped now.
                let now = s.t.last_cyclic_dependencies();
                let left = *shared / s.t.destinations().max(1);
                let hopeless = match before {
                    Some(b) if now > 0 && b > now => now / (b - now) > left,
                    _ => false,
                };
                if now > 0 {
                    before = Some(now);
                }
                if hopeless && !spent {
                    spent = true;
                    pending.iter().map(|&(_, lid)| lid).collect()
                } else {
                    lids
                }
            }
            Err(Stop::Unsafe(changes, _)) => changes.iter().map(|c| c.lid.0).collect(),
            Err(Stop::Budget) => {
                spent = true;
                pending.iter().map(|&(_, lid)| lid).collect()
            }
            Err(Stop::Beaten) => return Ok(None),
        };
        s.drop_lids(lids)?;
        if beat.is_some_and(|b| cost_so_far(&s.out) >= b) {
            return Ok(None);
        }
        // Every other entry not at its target yet goes on in order.
        pending.retain(|&(x, lid)| {
            !flag(&s.dropped, lid) && s.live.entry(start, x, lid) != target(x, lid)
        });
    }
    s.restore(why).map(Some)
}

/// The destinations `seed` drops first; `None` when it names none it should.
fn seed_lids(start: &ValidState, changed: &[(NodeId, u16)], seed: Seed) -> Option<Vec<u16>> {
    match seed {
        Seed::Greedy => Some(Vec::new()),
        Seed::All => Some(every_lid(changed)),
        Seed::Switches => {
            let owners = start.lids.owners(&start.fabric);
            let lids: Vec<u16> = every_lid(changed)
                .into_iter()
                .filter(|&l| {
                    owners
                        .get(usize::from(l))
                        .copied()
                        .flatten()
                        .is_some_and(|(n, _)| start.fabric.node(n).is_switch())
                })
                .collect();
            Some(lids).filter(|l| !l.is_empty())
        }
    }
}

/// A break-before-make search's steps so far, and what they dropped.
struct Dropping<'s, 't> {
    t: &'s mut Transition<'t>,
    start: &'s ValidState,
    changed: &'s [(NodeId, u16)],
    target: &'s dyn Fn(NodeId, u16) -> u8,
    out: Proved,
    /// The blocks as the steps so far leave them.
    live: Shadow,
    /// Per LID, whether it was dropped (the filters run over every changed entry).
    dropped: Vec<bool>,
    /// The hosts some dropping step cut off.
    hosts: BTreeSet<String>,
}

impl Dropping<'_, '_> {
    /// Drops the destinations `lids`: their entries not moved yet, to no entry (a destination
    /// with none left is not dropped), in one proven step.
    fn drop_lids(&mut self, lids: Vec<u16>) -> Result<(), PlanError> {
        let (start, target) = (self.start, self.target);
        let mut asked = vec![false; usize::from(u16::MAX) + 1];
        for l in lids {
            if let Some(a) = asked.get_mut(usize::from(l)) {
                *a = !flag(&self.dropped, l);
            }
        }
        let gone: Vec<(NodeId, u16)> = self
            .changed
            .iter()
            .copied()
            .filter(|&(x, lid)| {
                flag(&asked, lid) && self.live.entry(start, x, lid) != target(x, lid)
            })
            .collect();
        let fresh = flagged(&flags(gone.iter().map(|&(_, lid)| lid)));
        let writes = self
            .live
            .write_all(start, gone.iter().copied(), &|_, _| LFT_UNSET);
        let as_lids: Vec<Lid> = fresh.iter().map(|&l| Lid(l)).collect();
        self.t.drop_destinations(&as_lids);
        let check = self.t.step_iter(lft_change_iter(start, &writes));
        if !check.is_proven() {
            return Err(refused(start, &writes, check, "dropping"));
        }
        self.hosts.extend(
            self.t
                .outage_sources()
                .into_iter()
                .map(|(n, _)| start.fabric.node(n).name().to_owned()),
        );
        self.out.checks.push(check);
        self.out.steps.push(PlanStep {
            writes: sorted(writes),
            drops: fresh.clone(),
            restores: Vec::new(),
        });
        for &l in &fresh {
            if let Some(d) = self.dropped.get_mut(usize::from(l)) {
                *d = true;
            }
        }
        Ok(())
    }

    /// Restores the dropped destinations' new entries in one proven step, and says what the
    /// outage cost.
    fn restore(mut self, why: String) -> Result<Proved, PlanError> {
        let (t, start, target) = (self.t, self.start, self.target);
        let mut out = self.out;
        let lids = flagged(&self.dropped);
        if lids.is_empty() {
            return Ok(out);
        }
        let gone: Vec<(NodeId, u16)> = self
            .changed
            .iter()
            .copied()
            .filter(|&(x, lid)| {
                flag(&self.dropped, lid) && self.live.entry(start, x, lid) != target(x, lid)
            })
            .collect();
        let writes = self.live.write_all(start, gone, target);
        let check = t.step_iter(lft_change_iter(start, &writes));
        if !check.is_proven() {
            return Err(refused(start, &writes, check, "restoring"));
        }
        if let Some(&l) = lids.iter().find(|&&l| t.out_of_service(Lid(l))) {
            return Err(out_of_service(t, start, l));
        }
        let first = out.steps.iter().position(|s| !s.drops.is_empty());
        out.checks.push(check);
        out.steps.push(PlanStep {
            writes: sorted(writes),
            drops: Vec::new(),
            restores: lids.clone(),
        });
        let span = out.steps.get(first.unwrap_or(0)..).unwrap_or(&[]);
        out.outage = Some(Outage {
            destinations: lids,
            routes: out
                .checks
                .iter()
                .map(|c| c.outage_routes)
                .max()
                .unwrap_or(0),
            hosts: self.hosts.into_iter().collect(),
            steps: span.len(),
            smps: span.iter().map(|s| s.writes.len() as u64).sum(),
            why,
        });
        Ok(out)
    }
}

/// Every changing entry holds the end state's, and the routes toward `l` still fail on this
/// fabric (with `--drain`, the end state cuts it off while its cables are still up).
fn out_of_service(t: &Transition<'_>, start: &ValidState, l: u16) -> PlanError {
    let owner = start
        .lids
        .owners(&start.fabric)
        .get(usize::from(l))
        .copied()
        .flatten()
        .map_or_else(String::new, |(n, _)| {
            format!(" (`{}`)", start.fabric.node(n).name())
        });
    PlanError::Unproven(format!(
        "{} route(s) toward LID {l}{owner} do not arrive with its tables on the fabric the \
         steps run on, so no plan keeps or restores them (with `--drain`, a destination \
         the desired state cuts off while its cables are still up)",
        t.outage_routes()
    ))
}

/// The destinations to take out of service where the step writing `changes` failed on
/// transient credit loops ([`Transition::last_cycles`]): per loop, those that create its
/// dependency fewest destinations create, when each of them still has an entry to change
/// (dropping them removes that dependency from every mix from now on). `None` when no loop has
/// a dependency created by changing destinations alone.
fn culprits<I: Iterator<Item = Change> + Clone>(
    t: &Transition<'_>,
    changes: I,
    start: &ValidState,
    eager: &Eager<'_>,
    live: &Shadow,
) -> Option<Vec<u16>> {
    let cycles = t.last_cycles();
    if cycles.is_empty() {
        return None;
    }
    let changing = flags(
        eager
            .pending
            .iter()
            .filter(|&&(x, lid)| live.entry(start, x, lid) != (eager.target)(x, lid))
            .map(|&(_, lid)| lid),
    );
    let mut out: BTreeSet<u16> = BTreeSet::new();
    for per_dep in t.creators(changes, cycles) {
        if let Some(c) = per_dep
            .into_iter()
            .filter(|c| !c.is_empty() && c.iter().all(|l| flag(&changing, l.0)))
            .min_by_key(Vec::len)
        {
            out.extend(c.into_iter().map(|l| l.0));
        }
    }
    (!out.is_empty()).then(|| out.into_iter().collect())
}

/// Whether `flags` (per LID) holds `lid`.
fn flag(flags: &[bool], lid: u16) -> bool {
    flags.get(usize::from(lid)).copied().unwrap_or(false)
}

/// The refusal of a drop or restore step that is not proven (a bug, or a state that is not
/// what the planner takes it for): both are parts of a proven state.
fn refused(start: &ValidState, writes: &[SmpWrite], check: StepCheck, what: &str) -> PlanError {
    PlanError::NoSafeOrder {
        write: format!("{what} {}", describe(start, writes.first())),
        why: why(&check),
        check: Box::new(check),
    }
}

/// [`prove_stages`] without a budget: the steps, their checks and the splits, or the
/// refusal of the first unsafe entry.
pub(crate) fn prove_unbounded(
    t: &mut Transition<'_>,
    start: &ValidState,
    stages: Vec<Vec<SmpWrite>>,
) -> Result<(Vec<PlanStep>, Vec<StepCheck>, usize), PlanError> {
    let mut out = Proved::default();
    let mut unbounded = usize::MAX;
    match prove_stages(
        t,
        start,
        stages,
        &mut unbounded,
        &mut out,
        &mut Shadow::new(),
        None,
    ) {
        Ok(()) => Ok((out.steps, out.checks, out.splits)),
        Err(Stop::Unsafe(_, e)) => Err(e),
        // An unbounded search does not stop for its budget, nor drops without `eager`.
        Err(Stop::Budget | Stop::Drop(_) | Stop::Beaten) => Err(PlanError::Unproven(
            "the search for a safe order stopped early (a bug in weft)".to_owned(),
        )),
    }
}

/// Proves `stages` of LFT writes one after another on `t` (from `start`) into `out`: a stage
/// whose check fails is split in halves, then a single block into its entries; a single entry
/// that fails stops with its LID. Each failed check spends one of `budget`; `live` follows
/// the steps that land.
fn prove_stages(
    t: &mut Transition<'_>,
    start: &ValidState,
    stages: Vec<Vec<SmpWrite>>,
    budget: &mut usize,
    out: &mut Proved,
    live: &mut Shadow,
    eager: Option<&Eager<'_>>,
) -> Result<(), Stop> {
    for stage in stages {
        let mut todo = vec![stage];
        while let Some(writes) = todo.pop() {
            let check = t.step_iter(lft_change_iter(start, &writes));
            if check.is_proven() {
                live.land(start, &writes);
                out.checks.push(check);
                out.steps.push(PlanStep::of(sorted(writes)));
                if eager
                    .and_then(|e| e.beat)
                    .is_some_and(|b| cost_so_far(out) >= b)
                {
                    return Err(Stop::Beaten);
                }
                continue;
            }
            if *budget == 0 {
                return Err(Stop::Budget);
            }
            if *budget != usize::MAX {
                *budget = budget.saturating_sub(t.destinations().max(1));
            }
            // The step's changes are streamed out of its blocks (millions at 11 664 nodes);
            // a list is made only of a single unsafe block's.
            if let Some(lids) =
                eager.and_then(|e| culprits(t, lft_change_iter(start, &writes), start, e, live))
            {
                return Err(Stop::Drop(lids));
            }
            if writes.len() == 1 {
                // One block: its entries one by one, each its own SMP.
                let entries = writes.first().map(order::per_entry).unwrap_or_default();
                if entries.len() > 1 {
                    todo.extend(entries.into_iter().rev().map(|w| vec![w]));
                    out.splits += 1;
                    continue;
                }
                return Err(Stop::Unsafe(
                    lft_changes(start, &writes),
                    PlanError::NoSafeOrder {
                        write: describe(start, writes.first()),
                        why: why(&check),
                        check: Box::new(check),
                    },
                ));
            }
            // Split: the first half, then the rest.
            let mut first = writes;
            let rest = first.split_off(first.len() / 2);
            todo.push(rest);
            todo.push(first);
            out.splits += 1;
        }
    }
    Ok(())
}
