//! Deployment you can trust, on the in-process `sim` fabric: every write of a plan proven on
//! the tables read off the fabric (P_Keys and VFs included), `--no-reprove` only for a plan
//! whose digest matches, a second writer caught before and after each step and never rolled
//! over, journal failures rolled back, and recovery only from a fabric the journal explains.
//!
//! The fabric: a two-level tree of 16 hosts (4 leaves, 4 spines) shared by tenants `a`
//! (cn001..=cn004) and `b` (cn005..=cn008).

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use std::collections::BTreeMap;
use weft_deploy::apply::{
    apply, recover, ApplyError, ApplyOptions, Direction, Final, ProofMode, Report,
};
use weft_deploy::journal::JournalFault;
use weft_deploy::prove::ProofError;
use weft_deploy::sim::{Fault, FaultKind, SimFabric, Tables, STATUS_INVALID};
use weft_deploy::{Payload, Retrying, Target, Transport};
use weft_fabric::{FabricState, ValidState};
use weft_formats::plan::{Plan, SmpWrite};
use weft_plan::{plan, Mode, Options};
use weft_tests::scratch;
use weft_tests::sim::{same_at, sm_port};
use weft_tests::{compiled, xgft_source};

mod second_writer;

/// The tree with `faults` lines, tenant `a` on `a_hosts` and `b` on `b_hosts`.
fn tree(faults: &str, a_hosts: &str, b_hosts: &str) -> ValidState {
    compiled(&xgft_source(
        2,
        &[4, 4],
        &[1, 4],
        faults,
        &format!(
            "    tenant a {{ pkey = 0x8001, hosts = {a_hosts} }}\n    tenant b {{ pkey = 0x8002, hosts = {b_hosts} }}\n    sm on cn016\n"
        ),
    ))
}

fn old() -> ValidState {
    tree("", "cn001..=cn004", "cn005..=cn008")
}

/// A plan from `old` to `new` (drain: the steps run on the fabric as it is), read back from
/// its file as `weft apply` reads it (its digest known).
fn planned(old: &ValidState, new: &ValidState) -> (Plan, FabricState) {
    let p = plan(
        old,
        new,
        &Options {
            mode: Mode::Drain,
            ..Options::default()
        },
    )
    .unwrap();
    (
        Plan::from_json(&p.plan.to_json()).unwrap(),
        p.end.into_inner(),
    )
}

/// cn005 moves from tenant `b` to `a`: P_Key blocks only.
fn tenant_change() -> (Plan, FabricState) {
    planned(&old(), &tree("", "cn001..=cn005", "cn006..=cn008"))
}

/// A drain around `link`: LFT blocks only.
fn drain(link: &str) -> (Plan, FabricState) {
    planned(
        &old(),
        &tree(
            &format!("        link {link} down\n"),
            "cn001..=cn004",
            "cn005..=cn008",
        ),
    )
}

/// A drain around `leaf3.p[6]` and cn005 moving to tenant `a`: LFT steps, then P_Key steps.
fn drain_and_tenant_change() -> (Plan, FabricState) {
    planned(
        &old(),
        &tree(
            "        link leaf3.p[6] down\n",
            "cn001..=cn005",
            "cn006..=cn008",
        ),
    )
}

fn options(dir: &std::path::Path, name: &str) -> ApplyOptions {
    ApplyOptions {
        vfs: true,
        ..ApplyOptions::new(dir.join(format!("{name}.journal")), dir.to_owned())
    }
}

fn sim(st: &FabricState) -> SimFabric {
    SimFabric::new(st, sm_port(st)).unwrap()
}

fn tables(st: &FabricState) -> Tables {
    sim(st).tables()
}

/// Edits the plan's last P_Key write to `host` so that it adds `key` in the table's first
/// empty slot.
fn add_key(p: &mut Plan, st: &FabricState, host: &str, key: u16) {
    let t = last_pkeys(p, st, host);
    match t.iter_mut().find(|k| **k == 0) {
        Some(slot) => *slot = key,
        None => t.push(key),
    }
}

/// The P_Key write of the plan to `host` port 1 in its last step (the tables becoming the
/// desired ones).
fn last_pkeys<'a>(p: &'a mut Plan, st: &FabricState, host: &str) -> &'a mut Vec<u16> {
    let g = st.fabric.node(st.fabric.find(host).unwrap()).guid();
    p.steps
        .iter_mut()
        .rev()
        .flat_map(|s| s.writes.iter_mut())
        .find_map(|w| match w {
            SmpWrite::Pkeys { node, new, .. } if *node == g => Some(new),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no P_Key write to {host}"))
}

/// A plan file edited so that cn005 ends as a full member of both tenants: written as it
/// stood before (apply re-proved LFT writes only); refused now by the re-proof, naming a pair
/// that would talk outside the declared partitions, with nothing written.
#[test]
fn a_plan_edited_to_join_two_tenants_is_refused() {
    let st = old();
    let (mut p, _) = tenant_change();
    // cn005's table after the plan: both tenants' keys, full.
    add_key(&mut p, st.state(), "cn005", 0x8002);
    let mut sim = sim(st.state());
    let before = sim.tables();
    let dir = scratch("trust-two-tenants");
    let e = apply(&mut sim, &p, &options(&dir, "edited"), &mut |_| {}).unwrap_err();
    let ApplyError::Unproven(ProofError::Unsafe { why, .. }) = &e else {
        panic!("{e:?}")
    };
    assert!(
        why.contains("not isolated after the last step") && why.contains("0x8002"),
        "{why}"
    );
    assert_eq!(sim.counts().sets, 0);
    same_at(&sim.tables(), &before, "nothing written");
    assert!(!dir.join("edited.journal").exists());
    // The plan as made lands.
    let (p, end) = tenant_change();
    let r = apply(&mut sim, &p, &options(&dir, "made"), &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    same_at(&sim.tables(), &tables(&end), "the plan as made");
}

/// `--no-reprove` writes a plan on the proof it carries only when its digest matches its
/// content: an edited plan is refused with nothing written, the plan as made lands (and the
/// report says it was not proven again).
#[test]
fn no_reprove_writes_only_a_plan_whose_digest_matches() {
    let st = old();
    let dir = scratch("trust-digest");
    let trust = |name: &str| ApplyOptions {
        proof: ProofMode::TrustDigest,
        ..options(&dir, name)
    };
    let (p, end) = tenant_change();
    let mut edited = p.clone();
    add_key(&mut edited, st.state(), "cn005", 0x8002);
    // Edited in memory as a hand edit would leave the file: its digest the old one.
    let mut sim = sim(st.state());
    let e = apply(&mut sim, &edited, &trust("edited"), &mut |_| {}).unwrap_err();
    assert!(matches!(e, ApplyError::Edited), "{e:?}");
    assert_eq!(sim.counts().sets, 0);
    // A plan never written to a file has no digest to match either.
    let mut fresh = p.clone();
    fresh.recorded_digest = None;
    let e = apply(&mut sim, &fresh, &trust("fresh"), &mut |_| {}).unwrap_err();
    assert!(matches!(e, ApplyError::Edited), "{e:?}");
    let r = apply(&mut sim, &p, &trust("made"), &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    assert!(
        r.notes.iter().any(|n| n.contains("not proven again")),
        "{r:?}"
    );
    same_at(&sim.tables(), &tables(&end), "");
}

/// Applies `p` on a fresh fabric holding `st` with `journal` failing and `smp` striking: the
/// report (or error) and the fabric.
fn faulted(
    st: &FabricState,
    p: &Plan,
    dir: &std::path::Path,
    smp: Option<Fault>,
    journal: Option<JournalFault>,
) -> (Result<Report, ApplyError>, SimFabric) {
    let mut fabric = sim(st);
    if let Some(f) = smp {
        fabric.inject(f);
    }
    let opts = ApplyOptions {
        journal_fault: journal,
        // The matrix tests the transaction, not the proof (proven by the tests above).
        proof: ProofMode::TrustDigest,
        ..options(dir, "plan")
    };
    let r = apply(
        &mut Retrying {
            inner: &mut fabric,
            tries: 3,
        },
        p,
        &opts,
        &mut |_| {},
    );
    (r, fabric)
}

/// A journal that cannot be written after a step landed (disk full, at every later write
/// too): the apply rolls back without it, says so, exit 1's state (the old one), and the
/// journal stays open; recovery, with the disk writable again, finds the old state and
/// closes it.
#[test]
fn a_journal_that_fails_after_a_step_landed_rolls_back() {
    let st = old();
    let (p, _) = drain("leaf3.p[6]");
    let dir = scratch("trust-journal-full");
    // Write 0 is the creation, 1 the first step's start, 2 its end: the step has landed.
    let (r, mut fabric) = faulted(
        st.state(),
        &p,
        &dir,
        None,
        Some(JournalFault {
            at: 2,
            lasting: true,
        }),
    );
    let r = r.unwrap();
    assert_eq!(r.state, Final::Old, "{r:?}");
    assert!(
        r.failure
            .as_deref()
            .is_some_and(|f| f.contains("the journal could not be written")),
        "{r:?}"
    );
    assert!(r.journal_open, "{r:?}");
    assert!(r.notes.iter().any(|n| n.contains("--recover")), "{r:?}");
    same_at(&fabric.tables(), &tables(st.state()), "rolled back");
    // The next apply is refused until the journal is recovered.
    let e = apply(&mut fabric, &p, &options(&dir, "plan"), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("did not end"), "{e}");
    let r = recover(
        &mut fabric,
        &dir.join("plan.journal"),
        Direction::Back,
        &dir,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(r.state, Final::Old, "{r:?}");
    assert!(!r.journal_open, "{r:?}");
    assert_eq!(
        weft_deploy::journal::read(&dir.join("plan.journal"))
            .unwrap()
            .ended(),
        Some(weft_deploy::journal::Event::RolledBack)
    );
}

/// A journal that cannot be created: nothing is written. One that cannot record the commit:
/// the fabric holds the new state (said, exit 0's), the journal stays open, and recovery
/// forward finds the new state, writes nothing and closes it.
#[test]
fn a_journal_that_fails_at_its_creation_or_its_commit() {
    let st = old();
    let (p, end) = drain("leaf3.p[6]");
    let dir = scratch("trust-journal-ends");
    let (r, fabric) = faulted(
        st.state(),
        &p,
        &dir,
        None,
        Some(JournalFault {
            at: 0,
            lasting: false,
        }),
    );
    let e = r.unwrap_err();
    assert!(
        matches!(e, ApplyError::Journal(_)) && e.could_not_run(),
        "{e:?}"
    );
    assert_eq!(fabric.counts().sets, 0);
    // 1 + 2 per step: the commit.
    let commit = 1 + 2 * p.steps.len();
    let (r, mut fabric) = faulted(
        st.state(),
        &p,
        &dir,
        None,
        Some(JournalFault {
            at: commit,
            lasting: false,
        }),
    );
    let r = r.unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    assert!(r.journal_open, "{r:?}");
    same_at(&fabric.tables(), &tables(&end), "new");
    let sets = fabric.counts().sets;
    let r = recover(
        &mut fabric,
        &dir.join("plan.journal"),
        Direction::Forward,
        &dir,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    assert_eq!(
        fabric.counts().sets,
        sets,
        "nothing written: every block holds it"
    );
}

/// `--recover --forward` on a fabric put back to the old state by hand after a crash
/// mid-plan: it no longer writes the step in flight alone (which closed a credit loop) but
/// every step from the first, in order; and a fabric holding a block the journal cannot
/// explain is refused with nothing written.
#[test]
fn recovery_starts_from_where_the_fabric_is_and_refuses_what_the_journal_does_not_explain() {
    let st = old();
    let (p, end) = drain("leaf3.p[6]");
    assert!(p.steps.len() >= 2);
    let dir = scratch("trust-recover");
    let step1 = p.steps[0].writes.len();
    // Crash at the first Set of step 2: step 1 landed, the journal says step 2 began.
    let (r, mut fabric) = faulted(
        st.state(),
        &p,
        &dir,
        Some(Fault {
            at_set: step1,
            kind: FaultKind::Crash,
        }),
        None,
    );
    assert!(matches!(r, Err(ApplyError::Crashed(_))), "{r:?}");
    fabric.restart();
    let journal = dir.join("plan.journal");
    // Someone put the old tables back (another tool, or a reboot of the switches).
    let mut back = sim(st.state());
    let copy = dir.join("forward.journal");
    std::fs::copy(&journal, &copy).unwrap();
    let r = recover(&mut back, &copy, Direction::Forward, &dir, &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    same_at(&back.tables(), &tables(&end), "forward from the old state");
    // A block holding a third value: refused, nothing written.
    let SmpWrite::Lft { switch, block, .. } = &p.steps[0].writes[0] else {
        panic!()
    };
    let d = weft_deploy::discover(&mut fabric).unwrap();
    let target = Target {
        path: d.path(*switch, None).unwrap().clone(),
        attr: weft_deploy::Attr::Lft,
        modifier: u32::from(*block),
    };
    fabric.set(&target, &[9; 64]).unwrap();
    let sets = fabric.counts().sets;
    for direction in [Direction::Back, Direction::Forward] {
        let copy = dir.join(format!("{direction:?}.journal"));
        std::fs::copy(&journal, &copy).unwrap();
        let e = recover(&mut fabric, &copy, direction, &dir, &mut |_| {}).unwrap_err();
        let ApplyError::NotJournaled(why) = &e else {
            panic!("{e:?}")
        };
        assert!(
            why.iter()
                .any(|w| w.contains(&format!("LFT block {block}")) && w.contains("another writer")),
            "{why:?}"
        );
        assert!(e.could_not_run());
        assert_eq!(fabric.counts().sets, sets, "nothing written");
    }
}

/// A journal with a header and no blocks (an apply that wrote nothing, or a file cut short):
/// recovery says there is nothing to recover; it does not claim "the new state".
#[test]
fn recovery_of_a_journal_without_blocks_says_nothing_was_written() {
    let st = old();
    let (p, _) = drain("leaf3.p[6]");
    let dir = scratch("trust-empty-journal");
    let mut fabric = sim(st.state());
    apply(&mut fabric, &p, &options(&dir, "plan"), &mut |_| {}).unwrap();
    let text = std::fs::read_to_string(dir.join("plan.journal")).unwrap();
    let header = text.lines().next().unwrap();
    std::fs::write(dir.join("empty.journal"), format!("{header}\n")).unwrap();
    let r = recover(
        &mut fabric,
        &dir.join("empty.journal"),
        Direction::Back,
        &dir,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(r.state, Final::Nothing, "{r:?}");
    assert!(
        r.failure
            .as_deref()
            .is_some_and(|f| f.contains("nothing to recover")),
        "{r:?}"
    );
}

/// The fault matrix: a plan that writes LFT blocks and then P_Key blocks (a drain and a
/// tenant change, three steps or more), with every fault kind striking every SMP, and — with
/// each of those and with none — the journal failing at every write (once, or from there on).
/// Every run ends in exactly the old or exactly the new state, and the report says which; a
/// crash leaves a journal that recovery rolls back, or forward, exactly, whatever the journal
/// failed to record.
#[test]
fn every_fault_and_every_journal_failure_ends_old_or_new() {
    let st = old();
    let (p, end) = drain_and_tenant_change();
    assert!(p.steps.len() >= 3, "{} steps", p.steps.len());
    assert!(p
        .steps
        .iter()
        .any(|s| s.writes.iter().any(|w| matches!(w, SmpWrite::Pkeys { .. }))));
    assert!(p
        .steps
        .iter()
        .any(|s| s.writes.iter().any(|w| matches!(w, SmpWrite::Lft { .. }))));
    let (old_t, new_t) = (tables(st.state()), tables(&end));
    let sets = p.smps();
    let journal_writes = 2 + 2 * p.steps.len() + 2;
    let kinds = weft_tests::sim::FAULT_KINDS;
    let smps: Vec<Option<Fault>> = std::iter::once(None)
        .chain(
            kinds
                .iter()
                .flat_map(|&kind| (0..sets).map(move |at| Some(Fault { at_set: at, kind }))),
        )
        .collect();
    let journals: Vec<Option<JournalFault>> = std::iter::once(None)
        .chain(
            (0..journal_writes)
                .flat_map(|at| [false, true].map(|lasting| Some(JournalFault { at, lasting }))),
        )
        .collect();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let dir = scratch("trust-matrix");
    for smp in &smps {
        for journal in &journals {
            let at = format!("{smp:?} with journal {journal:?}");
            let _ = std::fs::remove_file(dir.join("plan.journal"));
            let (r, mut fabric) = faulted(st.state(), &p, &dir, *smp, *journal);
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
                        // Recovery closes it, from the fabric as it is.
                        let dir_ = if r.state == Final::New {
                            Direction::Forward
                        } else {
                            Direction::Back
                        };
                        let rr = recover(
                            &mut fabric,
                            &dir.join("plan.journal"),
                            dir_,
                            &dir,
                            &mut |_| {},
                        )
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
                    for (d, want) in [(Direction::Back, &old_t), (Direction::Forward, &new_t)] {
                        let mut copy = fabric.clone();
                        copy.restart();
                        let j = dir.join(format!("{d:?}.journal"));
                        std::fs::copy(dir.join("plan.journal"), &j).unwrap();
                        let r = recover(&mut copy, &j, d, &dir, &mut |_| {})
                            .unwrap_or_else(|e| panic!("{at}: recover {d:?}: {e}"));
                        same_at(&copy.tables(), want, &format!("{at}: {d:?}: {r:?}"));
                    }
                    "crashed, recovered".to_owned()
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
    insta::assert_debug_snapshot!((sets, journal_writes, smps.len() * journals.len(), seen));
}

/// A VM migration (Paper A's Fig. 2: vm1 from vsw1 to vsw3) whose arriving VF is given, by
/// an edit of the plan file, the default key as a full member (it would talk to every port),
/// an unrelated key, or an empty table (its tenant's peers cut off): each is refused by the
/// re-proof with nothing written; the migration as planned lands.
#[test]
fn a_migration_whose_arriving_vf_gets_another_table_is_refused() {
    let src = weft_tests::example("vswitch-fig2.weft");
    let old = compiled(&src);
    let new = compiled(&src.replace("vm vm1 on vsw1", "vm vm1 on vsw3"));
    let p = plan(&old, &new, &Options::default()).unwrap();
    let (p, end) = (
        Plan::from_json(&p.plan.to_json()).unwrap(),
        p.end.into_inner(),
    );
    // The arriving VF: the one whose LID appears.
    fn arriving(p: &mut Plan) -> &mut Vec<u16> {
        p.steps
            .iter_mut()
            .flat_map(|s| s.writes.iter_mut())
            .find_map(|w| match w {
                SmpWrite::Vport {
                    old_lid: None,
                    new_lid: Some(_),
                    new_pkeys,
                    ..
                } => Some(new_pkeys),
                _ => None,
            })
            .expect("a VF taking a LID")
    }
    let dir = scratch("trust-vf-tables");
    for (name, keys, why) in [
        ("full-default", vec![0xffff], "not isolated"),
        (
            "unrelated",
            vec![0x7fff, 0x8005],
            "not isolated after the last step",
        ),
        // It cannot even reach the SM: caught in the mix already.
        ("empty", vec![], "cannot reach the SM"),
    ] {
        let mut edited = p.clone();
        *arriving(&mut edited) = keys;
        let mut fabric = sim(old.state());
        let before = fabric.tables();
        let e = apply(&mut fabric, &edited, &options(&dir, name), &mut |_| {}).unwrap_err();
        let ApplyError::Unproven(ProofError::Unsafe { why: w, .. }) = &e else {
            panic!("{name}: {e:?}")
        };
        assert!(w.contains(why) && w.contains("vsw3 VF"), "{name}: {w}");
        assert_eq!(fabric.counts().sets, 0, "{name}");
        same_at(&fabric.tables(), &before, name);
    }
    let mut fabric = sim(old.state());
    let r = apply(&mut fabric, &p, &options(&dir, "made"), &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    same_at(&fabric.tables(), &tables(&end), "the migration as planned");
}

/// A switch whose LFT holds stale entries above its LinearFDBTop (entries it does not
/// forward by, left from an earlier life) in a block a later step writes: raising the top after
/// the first step that writes above it would show them, in a state no step proved. They are
/// cleared (to what the plan counts them as: unset) in that first step, while the switch
/// still ignores them, and only then is the top raised.
#[test]
fn entries_above_linear_fdb_top_are_cleared_before_it_is_raised() {
    let full = old();
    let f = &full.state().fabric;
    let leaf1 = f.find("leaf1").unwrap();
    let g = f.node(leaf1).guid();
    // leaf1 forwards LIDs 0..=9 only (its top is 9).
    let mut start = full.state().clone();
    start
        .switches
        .get_mut(&leaf1)
        .unwrap()
        .lft
        .ports
        .truncate(10);
    let mut fabric = sim(&start);
    let d = weft_deploy::discover(&mut fabric).unwrap();
    let block = |b: u16| Target {
        path: d.path(g, None).unwrap().clone(),
        attr: weft_deploy::Attr::Lft,
        modifier: u32::from(b),
    };
    // Stale entries in block 1, above the top.
    fabric.set(&block(1), &[3; 64]).unwrap();
    let old0 = fabric.get(&block(0)).unwrap();
    let mut new0 = old0;
    new0[20] = 1;
    let mut new1 = [0xff; 64];
    new1[6] = 1;
    // Step 1 sets LID 20 (above the top), step 2 LID 70: the top goes to 70 after step 1.
    let plan = Plan {
        format: weft_formats::plan::PLAN_FORMAT.to_owned(),
        version: weft_formats::plan::PLAN_VERSION,
        fabric_name: "t".to_owned(),
        from: weft_fabric::Fingerprint::of(full.state()),
        to: weft_fabric::Fingerprint::of(full.state()),
        wire: Some(weft_fabric::WireView::of(&start)),
        partitions: Vec::new(),
        sm: Vec::new(),
        proof: weft_formats::plan::Proof::default(),
        steps: vec![
            weft_formats::plan::PlanStep {
                drops: Vec::new(),
                restores: Vec::new(),
                writes: vec![SmpWrite::Lft {
                    switch: g,
                    block: 0,
                    old: old0,
                    new: new0,
                }],
            },
            weft_formats::plan::PlanStep {
                drops: Vec::new(),
                restores: Vec::new(),
                writes: vec![SmpWrite::Lft {
                    switch: g,
                    block: 1,
                    old: [0xff; 64],
                    new: new1,
                }],
            },
        ],
        recorded_digest: None,
    };
    let plan = Plan::from_json(&plan.to_json()).unwrap();
    let dir = scratch("trust-fdb-top");
    let opts = ApplyOptions {
        proof: ProofMode::TrustDigest,
        ..options(&dir, "plan")
    };
    let r = apply(&mut fabric, &plan, &opts, &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    let j = weft_deploy::journal::read(&dir.join("plan.journal")).unwrap();
    let writes: Vec<(usize, &weft_deploy::journal::Block)> = j
        .blocks
        .iter()
        .filter(|b| b.attr == weft_deploy::Attr::Lft && b.modifier == 1)
        .map(|b| (b.step, b))
        .collect();
    // Block 1 written twice: cleared in the first step (every entry unset, as the plan counts
    // them), then as the plan writes it.
    assert_eq!(writes.len(), 2, "{writes:?}");
    let (s0, clear) = writes[0];
    assert_eq!(s0, 0);
    assert!(clear.before.iter().all(|&e| e == 3));
    assert!(clear.after.iter().all(|&e| e == 0xff), "{:?}", clear.after);
    // The top is raised after the first step, before the second.
    let raise = j
        .blocks
        .iter()
        .find(|b| b.attr == weft_deploy::Attr::SwitchInfo)
        .unwrap();
    assert!(
        s0 < raise.step && raise.step < writes[1].0,
        "{:?}",
        j.blocks
    );
    let lft = fabric.tables().lfts.get(&g.0).cloned().unwrap();
    assert_eq!(lft.len(), 71);
    assert_eq!((lft[20], lft[70]), (1, 1));
    assert!(lft[64..70].iter().all(|&e| e == 0xff), "{lft:?}");
}
