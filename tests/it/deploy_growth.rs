//! The first deployment at two sizes on the in-process fabric, counted (never timed): the SMPs
//! and the apply's own work (ops of the plan it visits) grow with the LFT blocks written, not
//! faster, and each block costs the guarantees' minimum: one Set, one read-back and the final
//! reading — and one Get before (the journal) only for a block the switch forwards by before
//! its LinearFDBTop is raised (block 0 here: a block wholly above the top is not read before
//! its Set, whatever it holds counting as its old).
//!
//! Checked failing: with the hidden blocks read before their Sets again (`o.hidden` forced to
//! false in `deploy/src/apply/tops.rs`), the large tree's transaction took 800 SMPs where
//! `3 × 160 + 6 × 32` = 672 are allowed (992 where 736 are, without a settling time).
//!
//! A lookup that scans every op of the plan for each block (switches × blocks × ops, what made
//! the 11 664-node apply CPU-bound) shows as visits growing with the square of the blocks: the
//! growth check below fails on it (checked by putting the scan back into
//! `deploy/src/apply/tops.rs`'s `FirstWrites::get`: "visits grew 121.78× while the blocks written
//! grew 13.33×", 216 → 26 304 visits for 12 → 160 blocks; with the index, 8 per block or less).

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use std::time::Duration;
use weft_deploy::apply::{apply_state, dry_run, ApplyOptions, Final, What};
use weft_deploy::sim::SimFabric;
use weft_fabric::ValidState;
use weft_formats::plan::SmpWrite;
use weft_tests::scratch;
use weft_tests::sim::{same_at, sm_port};
use weft_tests::{compiled, xgft_source};

/// What the first deployment of a two-level tree of `k` leaves of `k` hosts (and `k` spines)
/// took.
#[derive(Debug)]
struct Run {
    /// LFT blocks the plan writes.
    blocks: usize,
    /// Switches.
    switches: usize,
    /// Every SMP the fabric received (discovery, reading, the transaction).
    smps: usize,
    /// The transaction's alone (after discovery and planning).
    txn: usize,
    /// Sets.
    sets: usize,
    /// Ops of the plan the apply visited.
    visits: usize,
}

fn first_deployment(k: u32, settle: Duration) -> Run {
    let full = compiled(&xgft_source(2, &[k, k], &[1, k], "", ""));
    let mut empty = full.state().clone();
    for sw in empty.switches.values_mut() {
        sw.lft.ports.clear();
    }
    let empty = ValidState::new(empty).unwrap();
    let sm = sm_port(empty.state());
    let dir = scratch(&format!("growth-{k}-{}", settle.as_millis()));
    let opts = ApplyOptions {
        settle,
        ..ApplyOptions::new(dir.join("plan.journal"), dir.to_path_buf())
    };
    // Discovery and planning alone (a dry run reads what the apply reads before it writes).
    let mut dry = SimFabric::new(empty.state(), sm).unwrap();
    let (planned, _) = dry_run(&mut dry, What::State(&full), &opts).unwrap();
    let before = dry.counts().gets + dry.counts().sets;
    let mut sim = SimFabric::new(empty.state(), sm).unwrap();
    let (r, plan) = apply_state(&mut sim, &full, &opts, &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    assert_eq!(plan, planned, "the dry run planned what the apply wrote");
    same_at(
        &sim.tables(),
        &SimFabric::new(full.state(), sm).unwrap().tables(),
        &format!("k = {k}"),
    );
    // An initial deployment fills empty entries: one step, each block written once.
    assert_eq!(plan.steps.len(), 1, "k = {k}");
    let mut blocks = std::collections::BTreeSet::new();
    for w in plan.steps.iter().flat_map(|s| &s.writes) {
        let SmpWrite::Lft { switch, block, .. } = w else {
            panic!("{w:?}")
        };
        assert!(blocks.insert((*switch, *block)), "k = {k}: {w:?} twice");
    }
    let smps = sim.counts().gets + sim.counts().sets;
    assert_eq!(smps, r.gets + r.sets, "the report counts every SMP");
    let _ = std::fs::remove_dir_all(&dir);
    Run {
        blocks: blocks.len(),
        switches: full.state().switches.len(),
        smps,
        txn: smps - before,
        sets: sim.counts().sets,
        visits: r.visits,
    }
}

#[test]
fn a_first_deployment_grows_with_the_blocks_it_writes() {
    // A settling time the sim answers well within: every check rests on the snapshot.
    let settle = Duration::from_millis(400);
    let small = first_deployment(6, settle);
    let large = first_deployment(16, settle);
    let grew = |a: usize, b: usize| b as f64 / a as f64;
    let blocks = grew(small.blocks, large.blocks);
    assert!(blocks > 5.0, "{small:?} {large:?}");
    for (what, a, b) in [
        ("SMPs", small.smps, large.smps),
        ("transaction SMPs", small.txn, large.txn),
        ("visits", small.visits, large.visits),
    ] {
        assert!(
            grew(a, b) <= 1.2 * blocks,
            "{what} grew {:.2}× while the blocks written grew {blocks:.2}×: {small:?} {large:?}",
            grew(a, b)
        );
    }
    for r in [&small, &large] {
        // One Set per block, and per switch its LinearFDBTop raised once.
        assert_eq!(r.sets, r.blocks + r.switches, "{r:?}");
        // Per block: the Set, the read-back, the final reading; per switch: the Get before
        // of its block 0 (LID 1 up to 63 above the top, LID 0 not), its SwitchInfo read, then
        // the raise's four.
        assert_eq!(r.txn, 3 * r.blocks + 6 * r.switches, "{r:?}");
        assert!(r.visits <= 8 * (r.blocks + r.switches), "{r:?}");
    }
}

#[test]
fn without_a_settling_time_every_block_is_checked_again_before_its_set() {
    // No settling time: no reading is recent enough to stand for the check — but a block
    // wholly above the switch's top has nothing to check (its before is whatever it holds).
    // The small tree writes only block 0 of each switch (48 LIDs): the snapshot, the check,
    // the Set, the read-back and the final reading of each; 5 more per switch for its raise.
    let r = first_deployment(6, Duration::ZERO);
    assert_eq!(r.txn, 5 * r.blocks + 6 * r.switches, "{r:?}");
    // The large one's blocks 1 to 4 of each switch: the Set, the read-back and the final
    // reading.
    let r = first_deployment(16, Duration::ZERO);
    assert_eq!(r.txn, 3 * r.blocks + 8 * r.switches, "{r:?}");
}

/// The first deployment of the 5 832-node example (972 switches, 104 004 LFT blocks) on the
/// in-process fabric, every SMP of the whole process counted (discovery, reading what the
/// fabric runs, the transaction): at most 4 per LFT block written — 3 per block (the Set, the
/// read-back, the final reading) and per switch its discovery, its SwitchInfo, port 0 and
/// block 0 read for planning, and block 0's Get before and the raise's five in the
/// transaction. The in-process switches support MulticastFDBTop (none set: no MFT block is
/// read); ibsim's do not, and there every switch's MFT is read up to its MulticastFDBCap (96
/// more per switch, 0.9 per block). Big examples only (`WEFT_BIG_EXAMPLES=1`; 52 s in a debug
/// build). Measured: 382 970 SMPs, 3.682 per block (checked failing with the bound set to 3).
#[test]
fn the_5832_node_first_deployment_sends_at_most_4_smps_per_block_written() {
    if !weft_tests::big_examples() {
        return;
    }
    let full = compiled(&weft_tests::example("cluster-5832.weft"));
    let mut empty = full.state().clone();
    for sw in empty.switches.values_mut() {
        sw.lft.ports.clear();
    }
    let empty = ValidState::new(empty).unwrap();
    let sm = sm_port(empty.state());
    let dir = scratch("growth-5832");
    let opts = ApplyOptions::new(dir.join("plan.journal"), dir.to_path_buf());
    let mut sim = SimFabric::new(empty.state(), sm).unwrap();
    let (r, plan) = apply_state(&mut sim, &full, &opts, &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    let blocks = plan.steps.iter().map(|s| s.writes.len()).sum::<usize>();
    let switches = full.state().switches.len();
    assert_eq!((blocks, switches), (104_004, 972));
    let smps = sim.counts().gets + sim.counts().sets;
    assert_eq!(smps, r.gets + r.sets, "the report counts every SMP");
    assert!(
        smps <= 4 * blocks,
        "{smps} SMPs for {blocks} blocks: {:.3} per block",
        smps as f64 / blocks as f64
    );
    let _ = std::fs::remove_dir_all(&dir);
}
