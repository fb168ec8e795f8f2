//! A plan too large to read in one part, applied part by part on the in-process fabric
//! (`ApplyOptions::part` made small, as 5 832 nodes make the default): each part read,
//! journaled, written and read back before the next is read.
//!
//! - Counted: on a transport slow enough that reading the whole plan takes longer than half
//!   the settling time, a first deployment still costs each block one Set, one read-back and
//!   the final reading, and a block the switch forwards by before its top is raised (block 0)
//!   one Get before (the journal, which is then recent enough to be the check); read whole
//!   first, each such block is read again before its Set.
//! - Every SMP fault at every Set and every journal failure ends in exactly the old or the new
//!   state; a crash is recovered back, and forward only from a journal that holds every part.
//! - Another writer's change to a block at any SMP is caught (the apply never ends "new" with
//!   the fabric holding anything else) and never rolled over.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use std::collections::BTreeMap;
use std::time::Duration;
use weft_deploy::apply::{
    apply, apply_state, dry_run, recover, ApplyOptions, Direction, Final, What,
};
use weft_deploy::apply::{ApplyError, ProofMode};
use weft_deploy::journal::JournalFault;
use weft_deploy::sim::Tables;
use weft_deploy::{Attr, Fault, Payload, Retrying, SimFabric, SmpError, Target, Transport};
use weft_fabric::ValidState;
use weft_formats::plan::Plan;
use weft_tests::scratch;
use weft_tests::sim::{same_at, sm_port, FAULT_KINDS};
use weft_tests::{compiled, xgft_source};

/// A two-level tree of `k` leaves of `k` hosts (and `k` spines), built, and the same with
/// every switch forwarding nothing.
fn tree(k: u32) -> (ValidState, ValidState) {
    let full = compiled(&xgft_source(2, &[k, k], &[1, k], "", ""));
    let mut empty = full.state().clone();
    for sw in empty.switches.values_mut() {
        sw.lft.ports.clear();
    }
    (full, ValidState::new(empty).unwrap())
}

/// The sim, with every LFT block Get taking `delay` (a fabric far away, or a large one).
struct Slow<'a> {
    sim: &'a mut SimFabric,
    delay: Duration,
}

impl Transport for Slow<'_> {
    fn get(&mut self, target: &Target) -> Result<Payload, SmpError> {
        if target.attr == Attr::Lft {
            std::thread::sleep(self.delay);
        }
        self.sim.get(target)
    }
    fn set(&mut self, target: &Target, data: &Payload) -> Result<Payload, SmpError> {
        self.sim.set(target, data)
    }
}

/// The first deployment of `tree(16)` through [`Slow`] in parts of `part` blocks: the
/// transaction's SMPs (after discovery and planning), the LFT blocks and the switches.
fn slow_first_deployment(part: usize) -> (usize, usize, usize) {
    let (full, empty) = tree(16);
    let sm = sm_port(empty.state());
    let dir = scratch(&format!("parts-slow-{part}"));
    let opts = ApplyOptions {
        // Half of it (the longest a reading may stand for the check) is less than reading
        // every block of the plan takes here (160 blocks, 2 ms each).
        settle: Duration::from_millis(600),
        part,
        ..ApplyOptions::new(dir.join("plan.journal"), dir.to_path_buf())
    };
    let mut dry = SimFabric::new(empty.state(), sm).unwrap();
    let (plan, _) = dry_run(&mut dry, What::State(&full), &opts).unwrap();
    let before = dry.counts().gets + dry.counts().sets;
    let mut sim = SimFabric::new(empty.state(), sm).unwrap();
    let mut slow = Slow {
        sim: &mut sim,
        delay: Duration::from_millis(2),
    };
    let (r, _) = apply_state(&mut slow, &full, &opts, &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    same_at(
        &sim.tables(),
        &SimFabric::new(full.state(), sm).unwrap().tables(),
        "slow",
    );
    let blocks = plan.steps.iter().map(|s| s.writes.len()).sum();
    let _ = std::fs::remove_dir_all(&dir);
    let smps = sim.counts().gets + sim.counts().sets;
    (smps - before, blocks, full.state().switches.len())
}

#[test]
fn in_parts_each_block_is_read_once_before_its_set_however_long_the_plan_takes_to_read() {
    let (txn, blocks, switches) = slow_first_deployment(16);
    assert!(blocks > 100, "{blocks}");
    // Per block: the Set, the read-back, the final reading (a block wholly above the top is
    // not read before: whatever it holds counts as its old); per switch: the Get before of
    // its block 0 (journal and check), its SwitchInfo read, then the raise's four.
    assert_eq!(
        txn,
        3 * blocks + 6 * switches,
        "{blocks} blocks, {switches} switches"
    );
    // Read whole first (one part), the plan's reading is too old to stand for the check by
    // the time its Sets go out: every LFT block read is read again (block 0 of each switch;
    // the snapshot reads the raise's SwitchInfo last, recent enough).
    let (whole, blocks, switches) = slow_first_deployment(usize::MAX);
    assert_eq!(
        whole,
        txn + switches,
        "{blocks} blocks, {switches} switches"
    );
}

/// The first deployment of `tree(6)` as a plan file's steps, on the sim.
fn first_plan() -> (Plan, ValidState, ValidState) {
    let (full, empty) = tree(6);
    let sm = sm_port(empty.state());
    let dir = scratch("parts-plan");
    let opts = ApplyOptions::new(dir.join("plan.journal"), dir.to_path_buf());
    let mut sim = SimFabric::new(empty.state(), sm).unwrap();
    let (plan, _) = dry_run(&mut sim, What::State(&full), &opts).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (plan, full, empty)
}

/// Options for a plan in parts of 5 blocks, on its proof (the matrix tests the transaction).
fn in_parts(dir: &std::path::Path) -> ApplyOptions {
    ApplyOptions {
        part: 5,
        proof: ProofMode::TrustDigest,
        ..ApplyOptions::new(dir.join("plan.journal"), dir.to_owned())
    }
}

/// After a crash mid-apply, a restarted copy of `fabric` recovers from the journal in `dir`
/// back to `old` and forward to `new` (forward only from a journal holding every part, as
/// `weft::deploy::journal_partial` says); whether the journal was partial.
fn recovers_both_ways(
    fabric: &SimFabric,
    dir: &std::path::Path,
    (old, new): (&Tables, &Tables),
    at: &str,
) -> bool {
    let j = weft_deploy::journal::read(&dir.join("plan.journal")).unwrap();
    for (d, want) in [(Direction::Back, old), (Direction::Forward, new)] {
        let mut copy = fabric.clone();
        copy.restart();
        let path = dir.join(format!("{d:?}.journal"));
        std::fs::copy(dir.join("plan.journal"), &path).unwrap();
        match recover(&mut copy, &path, d, dir, &mut |_| {}) {
            Ok(r) => same_at(&copy.tables(), want, &format!("{at}: {d:?}: {r:?}")),
            Err(ApplyError::PartialJournal(_)) if d == Direction::Forward && j.partial() => {}
            Err(e) => panic!("{at}: recover {d:?}: {e}"),
        }
    }
    j.partial()
}

#[test]
fn in_parts_every_fault_and_every_journal_failure_ends_old_or_new() {
    let (mut plan, full, empty) = first_plan();
    plan.recorded_digest = Some(plan.digest());
    let sm = sm_port(empty.state());
    let fresh = || SimFabric::new(empty.state(), sm).unwrap();
    let (old_t, new_t) = (
        fresh().tables(),
        SimFabric::new(full.state(), sm).unwrap().tables(),
    );
    let blocks: usize = plan.steps.iter().map(|s| s.writes.len()).sum();
    assert!(blocks > 10, "{blocks}: several parts");
    let sets = {
        let dir = scratch("parts-matrix-alone");
        let mut sim = fresh();
        let r = apply(&mut sim, &plan, &in_parts(&dir), &mut |_| {}).unwrap();
        assert_eq!(r.state, Final::New, "{r:?}");
        let _ = std::fs::remove_dir_all(&dir);
        r.sets
    };
    let smps = std::iter::once(None).chain(
        FAULT_KINDS
            .iter()
            .flat_map(|&kind| (0..sets).map(move |at| Some(Fault { at_set: at, kind }))),
    );
    let smps: Vec<Option<Fault>> = smps.collect();
    // More journal writes than the apply makes: creation, parts, begins, ends, complete,
    // commit.
    let journals: Vec<Option<JournalFault>> = std::iter::once(None)
        .chain(
            (0..30).flat_map(|at| [false, true].map(|lasting| Some(JournalFault { at, lasting }))),
        )
        .collect();
    let dir = scratch("parts-matrix");
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    // Every SMP fault with the journal whole, every journal failure with no SMP fault.
    let runs = smps
        .iter()
        .map(|s| (s, &None))
        .chain(journals.iter().map(|j| (&None, j)));
    for (smp, journal) in runs {
        {
            let at = format!("{smp:?} with journal {journal:?}");
            let _ = std::fs::remove_file(dir.join("plan.journal"));
            let mut fabric = fresh();
            if let Some(f) = smp {
                fabric.inject(*f);
            }
            let opts = ApplyOptions {
                journal_fault: *journal,
                ..in_parts(&dir)
            };
            let r = apply(
                &mut Retrying {
                    inner: &mut fabric,
                    tries: 3,
                },
                &plan,
                &opts,
                &mut |_| {},
            );
            let outcome = match r {
                Ok(r) => {
                    let want = match &r.state {
                        Final::New => &new_t,
                        Final::Old => &old_t,
                        s => panic!("{at}: {s:?} {r:?}"),
                    };
                    same_at(&fabric.tables(), want, &at);
                    assert_eq!(r.failure.is_some(), r.state == Final::Old, "{at}: {r:?}");
                    if r.journal_open {
                        let d = if r.state == Final::New {
                            Direction::Forward
                        } else {
                            Direction::Back
                        };
                        let rr =
                            recover(&mut fabric, &dir.join("plan.journal"), d, &dir, &mut |_| {})
                                .unwrap_or_else(|e| panic!("{at}: recover: {e}"));
                        assert_eq!(rr.state, r.state, "{at}: {rr:?}");
                        same_at(&fabric.tables(), want, &format!("{at}: recovered"));
                    }
                    format!(
                        "{:?}{}",
                        r.state,
                        if r.journal_open { ", journal open" } else { "" }
                    )
                }
                Err(ApplyError::Crashed(_)) => {
                    if recovers_both_ways(&fabric, &dir, (&old_t, &new_t), &at) {
                        "crashed, partial journal, recovered back".to_owned()
                    } else {
                        "crashed, recovered".to_owned()
                    }
                }
                Err(ApplyError::Journal(e)) => {
                    same_at(&fabric.tables(), &old_t, &at);
                    assert_eq!(fabric.counts().sets, 0, "{at}: {e}");
                    "journal not created, nothing written".to_owned()
                }
                Err(e) => panic!("{at}: {e}"),
            };
            *seen.entry(outcome).or_insert(0) += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    for want in [
        "New",
        "Old",
        "Old, journal open",
        "crashed, partial journal, recovered back",
        "crashed, recovered",
        "journal not created, nothing written",
    ] {
        assert!(seen.contains_key(want), "{want}: {seen:?}");
    }
}

/// `tree(9)` forwarding nothing, with every switch's LFT block 1 (LIDs 64 to 127, wholly above
/// its LinearFDBTop) holding stale entries from an earlier life (port 3 everywhere): the
/// switches forward by none of them.
fn stale_above_the_top() -> (ValidState, ValidState, SimFabric) {
    let (full, empty) = tree(9);
    let mut sim = SimFabric::new(empty.state(), sm_port(empty.state())).unwrap();
    let d = weft_deploy::discover(&mut sim).unwrap();
    for (g, node) in &d.nodes {
        if node.info.node_type == weft_deploy::smp::NodeType::Switch {
            let block = Target {
                path: d.path(*g, None).unwrap().clone(),
                attr: Attr::Lft,
                modifier: 1,
            };
            sim.set(&block, &[3; 64]).unwrap();
        }
    }
    (full, empty, sim)
}

/// A first deployment whose blocks lie wholly above their switches' tops (not read before their
/// Sets: whatever they hold counts as their old) over stale entries, in parts, with every SMP
/// fault at every Set: it ends in exactly the old state (a block the fault left stale is not
/// another writer's: the switch does not forward by it) or the new one, and a crash is
/// recovered back (and forward from a whole journal). Checked failing: with
/// `Cell::holds_before` comparing the journaled `before` alone, a rollback named the stale
/// blocks another writer's and ended in neither state.
#[test]
fn in_parts_a_first_deployment_over_stale_blocks_above_the_top_ends_old_or_new_at_every_fault() {
    let (full, empty, stale) = stale_above_the_top();
    let sm = sm_port(empty.state());
    let dir = scratch("parts-hidden");
    let (mut plan, _) = dry_run(&mut stale.clone(), What::State(&full), &in_parts(&dir)).unwrap();
    plan.recorded_digest = Some(plan.digest());
    let (old_t, new_t) = (
        stale.tables(),
        SimFabric::new(full.state(), sm).unwrap().tables(),
    );
    let sets = {
        let mut sim = stale.clone();
        let r = apply(&mut sim, &plan, &in_parts(&dir), &mut |_| {}).unwrap();
        assert_eq!(r.state, Final::New, "{r:?}");
        same_at(&sim.tables(), &new_t, "no fault");
        // Block 1 of every switch journaled hidden, as the plan counts it before (unset).
        let j = weft_deploy::journal::read(&dir.join("plan.journal")).unwrap();
        let hidden: Vec<_> = j.blocks.iter().filter(|b| b.hidden).collect();
        assert_eq!(hidden.len(), full.state().switches.len(), "{:?}", j.blocks);
        assert!(
            hidden
                .iter()
                .all(|b| b.modifier == 1 && b.before == [0xff; 64]),
            "{hidden:?}"
        );
        let _ = std::fs::remove_file(dir.join("plan.journal"));
        r.sets
    };
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for kind in FAULT_KINDS {
        for at_set in 0..sets {
            let at = format!("{kind:?} at Set {at_set}");
            let _ = std::fs::remove_file(dir.join("plan.journal"));
            let mut fabric = stale.clone();
            fabric.inject(Fault { at_set, kind });
            let mut t = Retrying {
                inner: &mut fabric,
                tries: 3,
            };
            let outcome = match apply(&mut t, &plan, &in_parts(&dir), &mut |_| {}) {
                Ok(r) => {
                    let want = match &r.state {
                        Final::New => &new_t,
                        Final::Old => &old_t,
                        s => panic!("{at}: {s:?} {r:?}"),
                    };
                    same_at(&fabric.tables(), want, &at);
                    format!("{:?}", r.state)
                }
                Err(ApplyError::Crashed(_)) => {
                    recovers_both_ways(&fabric, &dir, (&old_t, &new_t), &at);
                    "crashed, recovered".to_owned()
                }
                Err(e) => panic!("{at}: {e}"),
            };
            *seen.entry(outcome).or_insert(0) += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    for want in ["New", "Old", "crashed, recovered"] {
        assert!(seen.contains_key(want), "{want}: {seen:?}");
    }
}

/// The sim with another writer's Set of one LFT block of the plan before the `at`-th SMP;
/// and the SMPs (by number) that read and write that block.
struct Meddled<'a> {
    sim: &'a mut SimFabric,
    at: usize,
    sent: usize,
    block: Target,
    value: Payload,
    reads: Vec<usize>,
    writes: Vec<usize>,
}

impl Meddled<'_> {
    fn tick(&mut self, target: &Target, set: bool) {
        if self.sent == self.at {
            self.sim.set(&self.block, &self.value).unwrap();
        }
        if *target == self.block {
            if set {
                &mut self.writes
            } else {
                &mut self.reads
            }
            .push(self.sent);
        }
        self.sent += 1;
    }
}

impl Transport for Meddled<'_> {
    fn get(&mut self, target: &Target) -> Result<Payload, SmpError> {
        self.tick(target, false);
        self.sim.get(target)
    }
    fn set(&mut self, target: &Target, data: &Payload) -> Result<Payload, SmpError> {
        self.tick(target, true);
        self.sim.set(target, data)
    }
}

#[test]
fn in_parts_a_second_writer_at_any_smp_is_caught_and_never_rolled_over() {
    let (mut plan, full, empty) = first_plan();
    plan.recorded_digest = Some(plan.digest());
    let sm = sm_port(empty.state());
    let fresh = || SimFabric::new(empty.state(), sm).unwrap();
    let dir = scratch("parts-writer");
    let new_t = SimFabric::new(full.state(), sm).unwrap().tables();
    // The last LFT block the plan writes (its last part): another writer points its first
    // entry at port 1.
    let (target, old) = {
        let d = weft_deploy::discover::discover(&mut fresh()).unwrap();
        let smps = weft_deploy::apply::smps_of(&plan, &d, false).unwrap();
        let (_, target, _) = smps
            .iter()
            .rfind(|(_, t, _)| t.attr == Attr::Lft)
            .unwrap()
            .clone();
        let old = fresh().get(&target).unwrap();
        (target, old)
    };
    let mut value = old;
    value[0] = if old[0] == 1 { 2 } else { 1 };
    // Alone (the other writer never comes): the SMPs, and the window in which another
    // writer's Set is overwritten unseen — after the last reading of the block before its Set
    // (the compare), up to that Set (the swap).
    let mut sim = fresh();
    let mut alone = Meddled {
        sim: &mut sim,
        at: usize::MAX,
        sent: 0,
        block: target.clone(),
        value,
        reads: Vec::new(),
        writes: Vec::new(),
    };
    apply(&mut alone, &plan, &in_parts(&dir), &mut |_| {}).unwrap();
    let n = alone.sent;
    let set = alone.writes[0];
    let compare = *alone.reads.iter().rfind(|&&r| r < set).unwrap();
    let unseen = compare + 1..=set;
    // Up to the final reading (a Set after a block's final reading is after the apply).
    let blocks: usize = plan.steps.iter().map(|s| s.writes.len()).sum();
    let switches = full.state().switches.len();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for at in 0..n - (blocks + switches) {
        let _ = std::fs::remove_file(dir.join("plan.journal"));
        let mut fabric = fresh();
        let r = apply(
            &mut Meddled {
                sim: &mut fabric,
                at,
                sent: 0,
                block: target.clone(),
                value,
                reads: Vec::new(),
                writes: Vec::new(),
            },
            &plan,
            &in_parts(&dir),
            &mut |_| {},
        );
        let holds = fabric.get(&target).unwrap();
        let key = match r {
            Ok(r) if r.state == Final::New => {
                // Only when the other writer's Set came between the compare and the swap.
                assert!(unseen.contains(&at), "at {at}: not in {unseen:?}: {r:?}");
                same_at(&fabric.tables(), &new_t, &format!("at {at}: {r:?}"));
                "new"
            }
            Ok(r) => {
                assert!(r.failure.is_some(), "at {at}: {r:?}");
                // Never rolled over: the other writer's value is still there.
                assert_eq!(holds, value, "at {at}: {r:?}");
                assert!(
                    matches!(r.state, Final::Old | Final::Mixed(_)),
                    "at {at}: {r:?}"
                );
                "caught, rolled back"
            }
            Err(ApplyError::Moved(_)) => {
                assert_eq!(
                    fabric.counts().sets,
                    1,
                    "at {at}: only the other writer's Set"
                );
                "refused"
            }
            Err(e) => panic!("at {at}: {e}"),
        };
        *seen.entry(key).or_insert(0) += 1;
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(seen.contains_key("caught, rolled back"), "{seen:?}");
    assert!(
        seen.contains_key("refused") || seen.contains_key("new"),
        "{seen:?}"
    );
}
