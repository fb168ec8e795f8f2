//! `weft apply` on the in-process `sim` fabric, against plans `weft plan` makes: a link
//! failure on a two-level tree planned into proven steps, then written with every fault kind
//! striking every SMP of the plan in turn. Whatever happens, the fabric ends in exactly the old
//! state or exactly the new one, and the report says which; a crash leaves a journal that
//! recovery rolls back (or forward) exactly.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use weft_deploy::apply::{apply, recover, ApplyError, ApplyOptions, Direction, Final};
use weft_deploy::sim::{Fault, FaultKind, SimFabric};
use weft_deploy::Retrying;
use weft_fabric::{FabricState, NodeKind, PortRef, ValidState};
use weft_plan::{plan, Mode, Options};
use weft_tests::scratch as tmp;
use weft_tests::sim::{same_at, sm_port};
use weft_tests::{compiled, xgft_source};

/// A two-level tree (4 leaves of 4 hosts, 4 spines), and the same with a leaf–spine link down.
fn tree(faults: &str) -> ValidState {
    compiled(&xgft_source(2, &[4, 4], &[1, 4], faults, ""))
}

/// The start (the fabric with the link down, old tables), the end, and the plan.
fn link_failure() -> (FabricState, FabricState, weft_formats::plan::Plan) {
    let old = tree("");
    let new = tree("        link leaf3.p[6] down\n");
    let p = plan(
        &old,
        &new,
        &Options {
            mode: Mode::Fault,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(p.plan.steps.len() >= 2, "{} steps", p.plan.steps.len());
    let start = weft_plan::start(&old, &new, Mode::Fault).unwrap();
    (start.state().clone(), p.end.state().clone(), p.plan)
}

fn options(dir: &std::path::Path) -> ApplyOptions {
    ApplyOptions {
        vfs: true,
        ..ApplyOptions::new(dir.join("plan.journal"), dir.to_owned())
    }
}

/// [`options`] for `plan`: written on the proof it carries when it records its digest
/// ([`trusted`]; `--no-reprove`), else proven again on the sim.
fn options_for(plan: &weft_formats::plan::Plan, dir: &std::path::Path) -> ApplyOptions {
    ApplyOptions {
        proof: if plan.digest_matches() {
            weft_deploy::apply::ProofMode::TrustDigest
        } else {
            weft_deploy::apply::ProofMode::OnFabric
        },
        ..options(dir)
    }
}

/// `plan` with its digest recorded, as a plan file read back has it: applied on the proof it
/// carries (the QoS plans below move lanes in one step, which the proof on the fabric refuses:
/// they test the writing, not the order).
fn trusted(mut plan: weft_formats::plan::Plan) -> weft_formats::plan::Plan {
    plan.recorded_digest = Some(plan.digest());
    plan
}

#[test]
fn a_clean_apply_lands_the_new_state_with_exactly_the_planned_smps() {
    let (start, end, plan) = link_failure();
    let sm = sm_port(&start);
    let mut sim = SimFabric::new(&start, sm).unwrap();
    let want = SimFabric::new(&end, sm).unwrap().tables();
    let dir = tmp("clean");
    let r = apply(
        &mut Retrying {
            inner: &mut sim,
            tries: 3,
        },
        &plan,
        &options(&dir),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    assert_eq!(r.failure, None);
    same_at(&sim.tables(), &want, "");
    // Exactly the plan's SMPs were sent (no LinearFDBTop change: the LIDs stay), and each
    // changed what its block held.
    assert_eq!(sim.counts().sets, plan.smps());
    assert_eq!(sim.counts().changes, plan.smps());
    // The journal records a committed apply: recovery has nothing to do.
    let again = recover(
        &mut sim,
        &dir.join("plan.journal"),
        Direction::Back,
        &dir,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(again.state, Final::New);
    same_at(&sim.tables(), &want, "");
}

#[test]
fn every_fault_at_every_smp_ends_old_or_new() {
    let (start, end, plan) = link_failure();
    let (sets, seen) = fault_matrix("matrix", &start, &end, &plan);
    // Every kind was exercised with the outcome it must have: a lost or late SMP retried once
    // lands; one lost or late on every try, a reject and a bad read-back roll back.
    insta::assert_debug_snapshot!((sets, seen));
}

/// A break-before-make plan: the desired tables after sFtree's subtree root loses an uplink
/// (`--full`), whose switch-to-switch routes no order keeps, so their destinations are
/// dropped and restored. A clean apply (the plan proven again on the sim, drops included)
/// lands it and measures each drop's outage; every fault at every SMP ends in the old state or
/// the new one.
#[test]
fn a_break_before_make_plan_lands_and_every_fault_at_every_smp_ends_old_or_new() {
    let old = tree("");
    let new = tree("        link leaf1.p[5] down\n");
    let full = Options {
        full: true,
        ..Options::default()
    };
    let p = plan(&old, &new, &full).unwrap();
    let outage = p.outage.clone().unwrap();
    let drops = p.plan.steps.iter().filter(|s| !s.drops.is_empty()).count();
    assert!(drops > 0 && !outage.destinations.is_empty(), "{outage:?}");
    let start = weft_plan::start(&old, &new, Mode::Fault).unwrap();
    let sm = sm_port(start.state());
    let mut sim = SimFabric::new(start.state(), sm).unwrap();
    let want = SimFabric::new(p.end.state(), sm).unwrap().tables();
    let dir = tmp("bbm-clean");
    let r = apply(
        &mut Retrying {
            inner: &mut sim,
            tries: 3,
        },
        &p.plan,
        &options(&dir),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    same_at(&sim.tables(), &want, "");
    assert_eq!(r.outages.len(), drops, "{r:?}");
    let last = p.plan.steps.len() - 1;
    for o in &r.outages {
        assert_eq!(o.restored, last, "{o:?}");
        assert_eq!(o.destinations, p.plan.steps[o.step].drops.len());
        assert!(o.micros > 0, "{o:?}");
    }
    let (sets, seen) = fault_matrix("matrix-bbm", start.state(), p.end.state(), &p.plan);
    assert_eq!(sets, p.plan.smps());
    assert_eq!(
        seen.values().sum::<usize>(),
        weft_tests::sim::FAULT_KINDS.len() * sets,
        "{seen:?}"
    );
}

/// The same for a VM migration on a fabric that shows its vSwitches as switches (the VFs
/// written by directed route to their adapters): every fault at every SMP ends in the old
/// state or the new one, and a crash at any SMP recovers back or forward exactly.
#[test]
fn every_fault_at_every_smp_of_a_migration_through_vswitches_ends_old_or_new() {
    let (old, p) = fig2_planned();
    let start = weft_tests::ibsim::vswitched(old.state());
    let end = weft_tests::ibsim::vswitched(p.end.state());
    let (sets, seen) = fault_matrix("matrix-vswitch", &start, &end, &p.plan);
    assert_eq!(sets, p.plan.smps());
    assert_eq!(seen.values().sum::<usize>(), 7 * sets, "{seen:?}");
    assert_eq!(
        seen.get("Crash → crashed, recovered"),
        Some(&sets),
        "{seen:?}"
    );
}

/// Writes `plan` from `start` (ending in `end`) with each fault kind striking each of its
/// SMPs in turn (work directories named after `name`): the number of SMPs, and how many times each (kind → outcome) was seen.
fn fault_matrix(
    name: &str,
    start: &FabricState,
    end: &FabricState,
    plan: &weft_formats::plan::Plan,
) -> (usize, std::collections::BTreeMap<String, usize>) {
    let (start, end) = (start.clone(), end.clone());
    let sm = sm_port(&start);
    let old_tables = SimFabric::new(&start, sm).unwrap().tables();
    let new_tables = SimFabric::new(&end, sm).unwrap().tables();
    let sets = plan.smps();
    let kinds = weft_tests::sim::FAULT_KINDS;
    let mut seen = std::collections::BTreeMap::new();
    for kind in kinds {
        for at in 0..sets {
            let dir = tmp(&format!("{name}-{kind:?}-{at}"));
            let mut sim = SimFabric::new(&start, sm).unwrap();
            sim.inject(Fault { at_set: at, kind });
            let mut t = Retrying {
                inner: &mut sim,
                tries: 3,
            };
            let outcome = match apply(&mut t, plan, &options_for(plan, &dir), &mut |_| {}) {
                Ok(r) => {
                    let want = match &r.state {
                        Final::New => &new_tables,
                        Final::Old => &old_tables,
                        Final::Mixed(why) => panic!("{kind:?} at SMP {at}: mixed: {why:?}"),
                        Final::Nothing => panic!("{kind:?} at SMP {at}: nothing"),
                    };
                    same_at(&sim.tables(), want, &format!("{kind:?} at SMP {at}: {r:?}"));
                    assert_eq!(
                        r.failure.is_some(),
                        r.state == Final::Old,
                        "{kind:?} at {at}: {r:?}"
                    );
                    format!("{:?}", r.state)
                }
                Err(ApplyError::Crashed(_)) => {
                    // A new writer recovers: back by default, forward when asked.
                    for (dir_, want) in [
                        (Direction::Back, &old_tables),
                        (Direction::Forward, &new_tables),
                    ] {
                        let mut copy = sim.clone();
                        copy.restart();
                        // Each recovery from the journal as the crash left it.
                        let journal = dir.join(format!("{dir_:?}.journal"));
                        std::fs::copy(dir.join("plan.journal"), &journal).unwrap();
                        let r = recover(&mut copy, &journal, dir_, &dir, &mut |_| {})
                            .unwrap_or_else(|e| panic!("{kind:?} at {at}: recover {dir_:?}: {e}"));
                        same_at(
                            &copy.tables(),
                            want,
                            &format!("{kind:?} at {at}: {dir_:?}: {r:?}"),
                        );
                    }
                    "crashed, recovered".to_owned()
                }
                Err(e) => panic!("{kind:?} at SMP {at}: {e}"),
            };
            *seen.entry(format!("{kind:?} → {outcome}")).or_insert(0) += 1;
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    (sets, seen)
}

#[test]
fn a_stale_fabric_is_refused_naming_the_difference_and_nothing_is_written() {
    let (start, _, plan) = link_failure();
    // The fabric as it was before the failure: the planned-for link is up again.
    let old = tree("");
    let sm = sm_port(&start);
    let mut sim = SimFabric::new(old.state(), sm).unwrap();
    let before = sim.tables();
    let dir = tmp("stale");
    let e = apply(&mut sim, &plan, &options(&dir), &mut |_| {}).unwrap_err();
    assert!(matches!(e, ApplyError::Stale(_)), "{e}");
    insta::assert_snapshot!(e.to_string());
    assert_eq!(sim.counts().sets, 0);
    same_at(&sim.tables(), &before, "");
    assert!(!dir.join("plan.journal").exists());
}

#[test]
fn a_block_that_moved_on_is_refused_before_any_write() {
    let (start, _, plan) = link_failure();
    let mut moved = start.clone();
    // Someone rewrote one entry the plan changes.
    let weft_formats::plan::SmpWrite::Lft { switch, block, .. } = &plan.steps[0].writes[0] else {
        panic!()
    };
    let id = moved
        .fabric
        .nodes()
        .iter()
        .position(|n| n.guid() == *switch)
        .unwrap();
    let lft = &mut moved
        .switches
        .get_mut(&weft_fabric::NodeId(id as u32))
        .unwrap()
        .lft
        .ports;
    let e = usize::from(*block) * 64 + 1;
    lft[e] = if lft[e] == 1 { 2 } else { 1 };
    let sm = sm_port(&start);
    let mut sim = SimFabric::new(&moved, sm).unwrap();
    let dir = tmp("moved");
    let err = apply(&mut sim, &plan, &options(&dir), &mut |_| {}).unwrap_err();
    assert!(matches!(err, ApplyError::Moved(_)), "{err}");
    assert!(
        err.to_string().contains(&format!("LFT block {block}")),
        "{err}"
    );
    assert_eq!(sim.counts().sets, 0);
}

#[test]
fn a_second_apply_waits_for_the_lock() {
    let (start, _, plan) = link_failure();
    let sm = sm_port(&start);
    let mut sim = SimFabric::new(&start, sm).unwrap();
    let dir = tmp("lock");
    let local =
        weft_deploy::TransportExt::node_info(&mut sim, &weft_deploy::DrPath::local()).unwrap();
    let _held = weft_deploy::apply::lock(&dir, local.node_guid, local.local_port).unwrap();
    let e = apply(&mut sim, &plan, &options(&dir), &mut |_| {}).unwrap_err();
    assert!(matches!(e, ApplyError::Locked(_)), "{e}");
    assert_eq!(sim.counts().sets, 0);
}

/// An initial deployment: the fabric forwards nothing, the plan fills every table. Blocks are
/// written in several steps (destinations side first); every fault at every tenth SMP still
/// ends old or new.
#[test]
fn an_initial_deployment_writes_blocks_across_steps_and_survives_faults() {
    let full = tree("");
    let mut empty = full.state().clone();
    for sw in empty.switches.values_mut() {
        sw.lft.ports.clear();
    }
    let empty = ValidState::new(empty).unwrap();
    let p = plan(
        &empty,
        &full,
        &Options {
            full: true,
            ..Options::default()
        },
    )
    .unwrap();
    let blocks: std::collections::BTreeSet<_> = p
        .plan
        .steps
        .iter()
        .flat_map(|s| &s.writes)
        .map(|w| match w {
            weft_formats::plan::SmpWrite::Lft { switch, block, .. } => (*switch, *block),
            _ => panic!("{w:?}"),
        })
        .collect();
    assert!(
        blocks.len() < p.plan.smps(),
        "some block is written in more than one step"
    );
    let sm = sm_port(empty.state());
    let old_tables = SimFabric::new(empty.state(), sm).unwrap().tables();
    let new_tables = SimFabric::new(full.state(), sm).unwrap().tables();
    let mut sim = SimFabric::new(empty.state(), sm).unwrap();
    let dir = tmp("initial");
    let r = apply(&mut sim, &p.plan, &options(&dir), &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    same_at(&sim.tables(), &new_tables, "");
    let sets = sim.counts().sets;
    for kind in [
        FaultKind::Drop { times: 3 },
        FaultKind::CorruptReadback,
        FaultKind::Crash,
    ] {
        for at in (0..sets).step_by(10) {
            let dir = tmp(&format!("initial-{at}"));
            let mut sim = SimFabric::new(empty.state(), sm).unwrap();
            sim.inject(Fault { at_set: at, kind });
            match apply(
                &mut Retrying {
                    inner: &mut sim,
                    tries: 3,
                },
                &p.plan,
                &options(&dir),
                &mut |_| {},
            ) {
                Ok(r) => {
                    assert_eq!(r.state, Final::Old, "{kind:?} at {at}: {r:?}");
                    same_at(&sim.tables(), &old_tables, &format!("{kind:?} at {at}"));
                }
                Err(ApplyError::Crashed(_)) => {
                    sim.restart();
                    let r = recover(
                        &mut sim,
                        &dir.join("plan.journal"),
                        Direction::Back,
                        &dir,
                        &mut |_| {},
                    )
                    .unwrap();
                    assert_eq!(r.state, Final::Old, "{kind:?} at {at}: {r:?}");
                    same_at(&sim.tables(), &old_tables, &format!("{kind:?} at {at}"));
                }
                Err(e) => panic!("{kind:?} at {at}: {e}"),
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// A VM migration on the 648-node tree (web: cn001 → cn020, across leaves) written to the sim
/// fabric: exactly the plan's SMPs go out (LFT blocks on the marked switches, then each VF's
/// LID and P_Keys), every one of them changes what its block held, and the fabric ends in the
/// migrated state — VFs included. A crash after the first VF write recovers to the old VFs.
#[test]
fn a_vm_migration_sends_exactly_its_planned_smps() {
    let (old, new) = (with_vms("cn001"), with_vms("cn020"));
    let p = plan(&old, &new, &Options::default()).unwrap();
    assert!(matches!(p.target, weft_plan::Target::Migration { .. }));
    let vf_writes = p
        .plan
        .steps
        .iter()
        .flat_map(|s| &s.writes)
        .filter(|w| matches!(w, weft_formats::plan::SmpWrite::Vport { .. }))
        .count();
    assert!(vf_writes >= 2, "the VF web leaves and the one it takes");
    let tables = migrate_and_crash(old.state(), p.end.state(), &p.plan, "migration");
    assert_ne!(tables.0.vfs, tables.1.vfs);
}

/// Writes `plan` from `start` on the sim: the new state (`end`) with exactly the plan's SMPs,
/// each changing its block; then again with the writer dying right after the first VF write,
/// and recovery puts every VF back. The tables before and after.
fn migrate_and_crash(
    start: &FabricState,
    end: &FabricState,
    plan: &weft_formats::plan::Plan,
    name: &str,
) -> (weft_deploy::sim::Tables, weft_deploy::sim::Tables) {
    let sm = sm_port(start);
    let mut sim = SimFabric::new(start, sm).unwrap();
    let want = SimFabric::new(end, sm).unwrap().tables();
    let old_tables = sim.tables();
    let dir = tmp(name);
    let r = apply(&mut sim, plan, &options(&dir), &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    assert_eq!(sim.counts().sets, plan.smps(), "exactly the planned SMPs");
    assert_eq!(
        sim.counts().changes,
        plan.smps(),
        "each one changed its block"
    );
    same(&sim.tables(), &want);
    let new_tables = sim.tables();
    let first_vf = plan
        .steps
        .iter()
        .flat_map(|s| &s.writes)
        .take_while(|w| !matches!(w, weft_formats::plan::SmpWrite::Vport { .. }))
        .count();
    let mut sim = SimFabric::new(start, sm).unwrap();
    sim.inject(Fault {
        at_set: first_vf + 1,
        kind: FaultKind::Crash,
    });
    let dir = tmp(&format!("{name}-crash"));
    let e = apply(&mut sim, plan, &options(&dir), &mut |_| {}).unwrap_err();
    assert!(matches!(e, ApplyError::Crashed(_)), "{e}");
    assert_ne!(sim.tables(), old_tables, "the first VF write landed");
    sim.restart();
    recover(
        &mut sim,
        &dir.join("plan.journal"),
        Direction::Back,
        &dir,
        &mut |_| {},
    )
    .unwrap();
    same_at(&sim.tables(), &old_tables, "recovered");
    (old_tables, new_tables)
}

/// The 648-node tree with tenant VMs on cn001..=cn036 (four VFs each), `web` on `web`.
fn with_vms(web: &str) -> ValidState {
    let src = weft_tests::example("cluster-648.weft");
    let i = src.rfind('}').unwrap();
    compiled(&format!(
        "{}    tenant cloud {{\n        pkey = 0x8001\n        vms on cn001..=cn036 {{ vfs_per_host = 4, lids = dynamic }}\n        vm web on {web}\n        vm db on cn002\n    }}\n}}\n",
        &src[..i]
    ))
}

/// The same migration on a fabric that shows each vSwitch as Paper A says the SM sees it (a
/// switch with the PF and one adapter per VF behind it; the SM itself on cn001, behind one):
/// the wire check folds the vSwitches, exactly the plan's SMPs go out, the VF writes by
/// directed route to the VFs' adapters, and the fabric ends as the migrated state modelled
/// the same way. A crash after the first VF write recovers to the old VFs.
#[test]
fn a_vm_migration_through_vswitches_shown_as_switches() {
    let (old, new) = (with_vms("cn001"), with_vms("cn020"));
    let p = plan(&old, &new, &Options::default()).unwrap();
    let start = weft_tests::ibsim::vswitched(old.state());
    assert_eq!(start.fabric.node(sm_port(&start).node).name(), "cn001");
    let end = weft_tests::ibsim::vswitched(p.end.state());
    let tables = migrate_and_crash(&start, &end, &p.plan, "migration-vswitch");
    assert_ne!(tables.0.lids, tables.1.lids, "the VFs' LIDs moved");
}

/// A VF's port GUID held by an adapter behind another hypervisor's vSwitch (here cn020's VF 0
/// and cn002's VF 3 trade GUIDs): the write is refused before anything is written, naming
/// the VF.
#[test]
fn a_vf_guid_behind_another_hypervisor_is_refused_before_any_write() {
    let (old, new) = (with_vms("cn001"), with_vms("cn020"));
    let p = plan(&old, &new, &Options::default()).unwrap();
    let mut st = old.state().clone();
    let at = |st: &FabricState, host: &str, vf: u8| {
        st.lids
            .vports
            .iter()
            .position(|v| st.fabric.node(v.host.node).name() == host && v.vf == vf)
            .unwrap()
    };
    let (a, b) = (at(&st, "cn020", 0), at(&st, "cn002", 3));
    let (ga, gb) = (st.lids.vports[a].guid, st.lids.vports[b].guid);
    st.lids.vports[a].guid = gb;
    st.lids.vports[b].guid = ga;
    let start = weft_tests::ibsim::vswitched(&st);
    let sm = sm_port(&start);
    let mut sim = SimFabric::new(&start, sm).unwrap();
    let before = sim.tables();
    let dir = tmp("vf-elsewhere");
    let e = apply(&mut sim, &p.plan, &options(&dir), &mut |_| {}).unwrap_err();
    assert!(
        matches!(&e, ApplyError::Unaddressable(m) if m.contains("is not behind that port's vSwitch")),
        "{e}"
    );
    assert_eq!(sim.counts().sets, 0);
    same_at(&sim.tables(), &before, "");
}

/// Asserts two fabrics hold the same tables, naming the first difference (not printing
/// them whole).
fn same(a: &weft_deploy::sim::Tables, b: &weft_deploy::sim::Tables) {
    same_at(a, b, "");
}

/// A hand-edited plan that writes one block twice in one step (the second write starting from
/// what the first leaves): within a step the writes land in any order, so the step cannot be
/// read back, nor undone. Refused before anything is written.
#[test]
fn a_block_written_twice_in_one_step_is_refused_before_any_write() {
    let (start, _, mut plan) = link_failure();
    let weft_formats::plan::SmpWrite::Lft {
        switch, block, new, ..
    } = plan.steps[0].writes[0].clone()
    else {
        panic!()
    };
    let mut again = new;
    // One more entry changed: the same block, onward from what the first write leaves.
    again[1] = if again[1] == 1 { 2 } else { 1 };
    plan.steps[0]
        .writes
        .push(weft_formats::plan::SmpWrite::Lft {
            switch,
            block,
            old: new,
            new: again,
        });
    let sm = sm_port(&start);
    let mut sim = SimFabric::new(&start, sm).unwrap();
    let before = sim.tables();
    let dir = tmp("twice");
    let r = apply(&mut sim, &plan, &options(&dir), &mut |_| {});
    assert!(
        matches!(&r, Err(ApplyError::Invalid(e)) if e.contains("twice")),
        "{:?}",
        r.map(|r| r.state)
    );
    assert_eq!(sim.counts().sets, 0);
    same_at(&sim.tables(), &before, "");
}

/// A VF write whose `old_lid` is not the LID the VF has (the fabric moved on, or the plan was
/// edited) is refused before anything is written, as an LFT or P_Key block is.
#[test]
fn a_vf_whose_lid_moved_on_is_refused_before_any_write() {
    let src = weft_tests::example("cluster-648.weft");
    let i = src.rfind('}').unwrap();
    let with = |web: &str| {
        compiled(&format!(
            "{}    tenant cloud {{\n        pkey = 0x8001\n        vms on cn001..=cn036 {{ vfs_per_host = 4, lids = dynamic }}\n        vm web on {web}\n        vm db on cn002\n    }}\n}}\n",
            &src[..i]
        ))
    };
    let (old, new) = (with("cn001"), with("cn020"));
    let mut p = plan(&old, &new, &Options::default()).unwrap().plan;
    let w = p
        .steps
        .iter_mut()
        .flat_map(|s| &mut s.writes)
        .find_map(|w| match w {
            weft_formats::plan::SmpWrite::Vport { old_lid, .. } => Some(old_lid),
            _ => None,
        })
        .unwrap();
    *w = Some(w.map_or(700, |l| l + 1));
    let sm = sm_port(old.state());
    let mut sim = SimFabric::new(old.state(), sm).unwrap();
    let dir = tmp("vf-moved");
    let r = apply(&mut sim, &p, &options(&dir), &mut |_| {});
    assert!(
        matches!(&r, Err(ApplyError::Moved(e)) if e.contains("VF")),
        "{:?}",
        r.map(|r| r.state)
    );
    assert_eq!(sim.counts().sets, 0);
}

/// A fabric that answers SMPs its own way: `lie` sees every Get (target and what the sim
/// fabric answered) and says what goes back instead.
struct Hostile<F> {
    sim: SimFabric,
    lie: F,
}

type Answer = Result<weft_deploy::Payload, weft_deploy::SmpError>;

impl<F: FnMut(&weft_deploy::transport::Target, Answer) -> Answer> weft_deploy::Transport
    for Hostile<F>
{
    fn get(&mut self, target: &weft_deploy::transport::Target) -> Answer {
        let a = self.sim.get(target);
        (self.lie)(target, a)
    }
    fn set(
        &mut self,
        target: &weft_deploy::transport::Target,
        data: &weft_deploy::Payload,
    ) -> Answer {
        self.sim.set(target, data)
    }
}

/// What discovery, audit (with the state it reads made valid and verified) and apply make of
/// a hostile fabric: each ends, with a typed error or an answer.
fn against<F: FnMut(&weft_deploy::transport::Target, Answer) -> Answer + Clone>(
    name: &str,
    lie: F,
) {
    let (start, _, plan) = link_failure();
    let sm = sm_port(&start);
    let hostile = || Hostile {
        sim: SimFabric::new(&start, sm).unwrap(),
        lie: lie.clone(),
    };
    let _ = weft_deploy::discover(&mut hostile());
    if let Ok(a) = weft_deploy::audit::audit(&mut hostile(), name) {
        if let Ok(v) = ValidState::new(a.state) {
            let _ = weft_verifier::verify(&v, &weft_verifier::Options::default());
        }
    }
    let dir = tmp(name);
    let mut t = hostile();
    match apply(&mut t, &plan, &options(&dir), &mut |_| {}) {
        Ok(r) => assert_eq!(r.state, Final::New, "{name}: {r:?}"),
        Err(e) => assert_eq!(t.sim.counts().sets, 0, "{name}: {e}"),
    }
}

fn node_info(
    target: &weft_deploy::transport::Target,
    a: Answer,
    edit: impl FnOnce(&mut weft_deploy::smp::NodeInfo),
) -> Answer {
    if target.attr != weft_deploy::Attr::NodeInfo {
        return a;
    }
    let mut i = weft_deploy::smp::NodeInfo::decode(&a?);
    edit(&mut i);
    Ok(i.encode())
}

/// Odd answers from the fabric: discovery, audit and apply end with a typed error or a
/// report, never a panic, never a write to a fabric that is not the plan's.
#[test]
fn a_hostile_fabric_is_read_or_refused() {
    use weft_deploy::smp::{NodeType, PortInfo, SwitchInfo};
    use weft_deploy::Attr;
    let deep = |t: &weft_deploy::transport::Target| t.path.0.len() == 2;
    against("ports-0", move |t, a| {
        node_info(t, a, |i| {
            if i.node_type == NodeType::Switch {
                i.num_ports = 0;
            }
        })
    });
    against("ports-255", move |t, a| {
        node_info(t, a, |i| {
            if i.node_type == NodeType::Switch {
                i.num_ports = 255;
            }
        })
    });
    against("guid-0", move |t, a| node_info(t, a, |i| i.node_guid = 0));
    against("same-guid", move |t, a| {
        node_info(t, a, |i| {
            if i.node_type == NodeType::Switch {
                i.node_guid = 0x77;
            }
        })
    });
    against("switch-then-ca", move |t, a| {
        node_info(t, a, |i| {
            if deep(t) {
                i.node_type = NodeType::Ca;
            }
        })
    });
    against("ca-a-switch", move |t, a| {
        node_info(t, a, |i| {
            if i.node_type == NodeType::Ca && !t.path.0.is_empty() {
                i.node_type = NodeType::Switch;
            }
        })
    });
    against("local-port-200", move |t, a| {
        node_info(t, a, |i| i.local_port = 200)
    });
    against("local-port-0", move |t, a| {
        node_info(t, a, |i| i.local_port = 0)
    });
    against("node-type-9", move |t, a| {
        node_info(t, a, |i| {
            if deep(t) {
                i.node_type = NodeType::Other(9);
            }
        })
    });
    against("top-ffff", move |t, a| {
        let mut p = a?;
        if t.attr == Attr::SwitchInfo {
            SwitchInfo {
                linear_fdb_top: 0xffff,
                ..SwitchInfo::decode(&p)
            }
            .encode_into(&mut p);
        }
        if t.attr == Attr::Lft && t.modifier >= 768 {
            p = [3; 64];
        }
        Ok(p)
    });
    against("lft-beyond-cap", move |t, a| match (t.attr, a) {
        (Attr::Lft, Err(_)) => Ok([1; 64]),
        (Attr::SwitchInfo, Ok(mut p)) => {
            p[6..8].copy_from_slice(&0xffffu16.to_be_bytes());
            Ok(p)
        }
        (_, a) => a,
    });
    against("lid-ffff", move |t, a| {
        let mut p = a?;
        if t.attr == Attr::PortInfo {
            p[16..18].copy_from_slice(&0xffffu16.to_be_bytes());
        }
        Ok(p)
    });
    against("lmc-7", move |t, a| {
        let mut p = a?;
        if t.attr == Attr::PortInfo {
            p[34] |= 7 << 3;
        }
        Ok(p)
    });
    against("port-info-port-99", move |t, a| {
        let mut p = a?;
        if t.attr == Attr::PortInfo {
            p[28] = 99;
            let _ = PortInfo::decode(&p);
        }
        Ok(p)
    });
    against("all-down", move |t, a| {
        let mut p = a?;
        if t.attr == Attr::PortInfo {
            p[32] = 1;
            p[33] = 2 << 4;
        }
        Ok(p)
    });
    against("descriptions", move |t, a| {
        let mut p = a?;
        if t.attr == Attr::NodeDescription {
            p = [0xff; 64];
        }
        Ok(p)
    });
}

/// A fabric that never ends: every switch port leads to another switch, new each time (its
/// GUID made from the route). Discovery gives up with a typed error instead of walking
/// forever.
#[test]
fn an_endless_fabric_is_refused() {
    use weft_deploy::smp::{NodeInfo, NodeType};
    use weft_deploy::Attr;
    let (start, _, _) = link_failure();
    let sm = sm_port(&start);
    let mut t = Hostile {
        sim: SimFabric::new(&start, sm).unwrap(),
        lie: |t: &weft_deploy::transport::Target, a: Answer| {
            if t.path.0.is_empty() {
                return a;
            }
            let mut p = [0u8; 64];
            match t.attr {
                Attr::NodeInfo => {
                    let guid = t.path.0.iter().fold(0x1000u64, |g, &h| {
                        g.wrapping_mul(31).wrapping_add(u64::from(h))
                    });
                    p = NodeInfo {
                        node_type: NodeType::Switch,
                        num_ports: 4,
                        system_guid: guid,
                        node_guid: guid,
                        port_guid: guid,
                        partition_cap: 8,
                        local_port: 1,
                    }
                    .encode();
                }
                Attr::PortInfo => {
                    p[32] = 4;
                    p[33] = 5 << 4;
                }
                _ => {}
            }
            Ok(p)
        },
    };
    let e = weft_deploy::discover(&mut t).unwrap_err();
    assert!(matches!(e, weft_deploy::DiscoverError::TooMany(_)), "{e}");
}

/// A recovery that cannot put one block back (the switch stops answering for it) says the
/// fabric is in neither state, names the block, keeps the journal open; the next recovery,
/// with the switch answering again, ends in the old state.
#[test]
fn a_recovery_that_fails_part_way_is_reported_and_can_run_again() {
    let (start, _, plan) = link_failure();
    let sm = sm_port(&start);
    let mut sim = SimFabric::new(&start, sm).unwrap();
    let old_tables = sim.tables();
    sim.inject(Fault {
        at_set: 2,
        kind: FaultKind::Crash,
    });
    let dir = tmp("recover-twice");
    let journal = dir.join("plan.journal");
    assert!(matches!(
        apply(&mut sim, &plan, &options(&dir), &mut |_| {}),
        Err(ApplyError::Crashed(_))
    ));
    sim.restart();
    // The first block recovery writes is lost on every try.
    let next = sim.counts().sets;
    sim.inject(Fault {
        at_set: next,
        kind: FaultKind::Drop { times: u32::MAX },
    });
    let r = recover(&mut sim, &journal, Direction::Back, &dir, &mut |_| {}).unwrap();
    assert!(
        r.failure
            .as_deref()
            .is_some_and(|f| f.starts_with("rolling back:")),
        "{r:?}"
    );
    let Final::Mixed(odd) = &r.state else {
        panic!("{r:?}")
    };
    assert!(
        odd.iter().any(|o| o.contains("holds the plan's new value")),
        "{odd:?}"
    );
    sim.restart();
    let r = recover(&mut sim, &journal, Direction::Back, &dir, &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::Old, "{r:?}");
    same(&sim.tables(), &old_tables);
}

/// Paper A's Fig. 2 (four vSwitch hypervisors, vsw1 and vsw2 on leaf1) with vm1 moved from
/// vsw1 to vsw3: the old state and the plan.
fn fig2_migration() -> (ValidState, weft_formats::plan::Plan) {
    let (old, p) = fig2_planned();
    (old, p.plan)
}

/// [`fig2_migration`], planned whole (its end state too).
fn fig2_planned() -> (ValidState, weft_plan::Planned) {
    let src = weft_tests::example("vswitch-fig2.weft");
    let old = compiled(&src);
    let new = compiled(&src.replace("vm vm1 on vsw1", "vm vm1 on vsw3"));
    let p = plan(&old, &new, &Options::default()).unwrap();
    assert!(matches!(p.target, weft_plan::Target::Migration { .. }));
    (old, p)
}

/// `plan` with its steps replaced by one `vport` write for VF 0 of vsw1 port 1 that names
/// the port GUID of `victim`'s port 1, its `old` what that port holds in `start` (so the
/// snapshot finds it as the plan says) and a new LID of 999.
fn vport_at(
    start: &FabricState,
    mut plan: weft_formats::plan::Plan,
    victim: &str,
) -> weft_formats::plan::Plan {
    let f = &start.fabric;
    let host = f.node(f.find("vsw1").unwrap()).guid();
    let v = f.find(victim).unwrap();
    let guid = f.node(v).port(weft_fabric::PortNum(1)).unwrap().guid;
    let lid = start.lids.get(v, weft_fabric::PortNum(1)).map(|l| l.0);
    let keys = SimFabric::new(start, sm_port(start))
        .unwrap()
        .tables()
        .pkeys[&f.node(v).guid().0][1]
        .clone();
    plan.steps = vec![weft_formats::plan::PlanStep {
        drops: Vec::new(),
        restores: Vec::new(),
        writes: vec![weft_formats::plan::SmpWrite::Vport {
            node: host,
            port: 1,
            vf: 0,
            guid,
            old_lid: lid,
            new_lid: Some(999),
            old_pkeys: keys.clone(),
            new_pkeys: keys,
        }],
    }];
    plan
}

/// A `vport` write (a hand-edited plan, or a state whose VF GUID is a physical port's) whose
/// port GUID is a physical port's — the hypervisor's own PF on a fabric showing vSwitches, or
/// another host cabled to the same leaf — is refused before anything is written: only an
/// adapter the wire check folded into that hypervisor is one of its VFs.
#[test]
fn a_vport_write_naming_a_physical_port_is_refused_before_any_write() {
    let (old, p) = fig2_migration();
    for (name, start, victim) in [
        (
            "pf-itself",
            weft_tests::ibsim::vswitched(old.state()),
            "vsw1",
        ),
        ("neighbour", old.state().clone(), "vsw2"),
    ] {
        let hostile = vport_at(&start, p.clone(), victim);
        let mut sim = SimFabric::new(&start, sm_port(&start)).unwrap();
        let before = sim.tables();
        let dir = tmp(&format!("vport-{name}"));
        let r = apply(&mut sim, &hostile, &options(&dir), &mut |_| {});
        assert!(
            matches!(&r, Err(ApplyError::Unaddressable(e)) if e.contains("physical")),
            "{name}: {:?}",
            r.map(|r| r.state)
        );
        assert_eq!(sim.counts().sets, 0, "{name}");
        same_at(&sim.tables(), &before, name);
    }
}

/// A fabric where a second port claims the port GUID of a VF the plan writes (another host's
/// NodeInfo lies): which port is the VF cannot be told, and the plan is refused before
/// anything is written, naming both.
#[test]
fn a_vf_guid_held_twice_is_refused_before_any_write() {
    let (old, p) = fig2_migration();
    let start = weft_tests::ibsim::vswitched(old.state());
    let guid = p
        .steps
        .iter()
        .flat_map(|s| &s.writes)
        .find_map(|w| match w {
            weft_formats::plan::SmpWrite::Vport { guid, .. } => Some(guid.0),
            _ => None,
        })
        .unwrap();
    let liar = start
        .fabric
        .node(start.fabric.find("vsw4").unwrap())
        .guid()
        .0;
    let mut t = Hostile {
        sim: SimFabric::new(&start, sm_port(&start)).unwrap(),
        lie: move |target: &weft_deploy::transport::Target, a: Answer| {
            node_info(target, a, |i| {
                if i.node_guid == liar {
                    i.port_guid = guid;
                }
            })
        },
    };
    let before = t.sim.tables();
    let dir = tmp("vf-guid-twice");
    let r = apply(&mut t, &p, &options(&dir), &mut |_| {});
    assert!(
        matches!(&r, Err(ApplyError::Unaddressable(e)) if e.contains("held by 2 ports") && e.contains(&format!("{liar:#018x} port 1"))),
        "{:?}",
        r.map(|r| r.state)
    );
    assert_eq!(t.sim.counts().sets, 0);
    same_at(&t.sim.tables(), &before, "");
}

/// A hand-edited plan that writes a node the wire check folded away — the LFT of the switch a
/// vSwitch is shown as, or a VF adapter's P_Key table by a `pkeys` write — is refused before
/// anything is written: the plan's wire view has no such node, so no proof covers it (the
/// re-proof reads the fabric folded), and a VF is written only by its `vport` write.
#[test]
fn a_write_to_a_folded_node_is_refused_before_any_write() {
    let (old, p) = fig2_migration();
    let start = weft_tests::ibsim::vswitched(old.state());
    let f = &start.fabric;
    let vswitch = f.node(f.find("vsw1-vswitch").unwrap()).guid();
    let vf = f.node(f.find("vsw1-vf0").unwrap()).guid();
    let unset = [0xff; 64];
    for (name, w) in [
        (
            "vswitch-lft",
            weft_formats::plan::SmpWrite::Lft {
                switch: vswitch,
                block: 0,
                old: unset,
                new: {
                    let mut b = unset;
                    b[0] = 2;
                    b
                },
            },
        ),
        (
            "vf-pkeys",
            weft_formats::plan::SmpWrite::Pkeys {
                node: vf,
                port: 1,
                block: 0,
                old: SimFabric::new(&start, sm_port(&start))
                    .unwrap()
                    .tables()
                    .pkeys[&vf.0][1]
                    .clone(),
                new: vec![0xffff],
            },
        ),
    ] {
        let mut hostile = p.clone();
        hostile.steps = vec![weft_formats::plan::PlanStep::of(vec![w])];
        let mut sim = SimFabric::new(&start, sm_port(&start)).unwrap();
        let before = sim.tables();
        let dir = tmp(name);
        let r = apply(&mut sim, &hostile, &options(&dir), &mut |_| {});
        assert!(
            matches!(&r, Err(ApplyError::Unaddressable(e)) if e.contains("not in the plan's wire view")),
            "{name}: {:?}",
            r.map(|r| r.state)
        );
        assert_eq!(sim.counts().sets, 0, "{name}");
        same_at(&sim.tables(), &before, name);
    }
}

/// What `weft apply` proves again of a plan file before writing it: its steps' checks on the
/// fabric `start` as discovery reads it (folded into the plan's wire view).
fn reproof(
    start: &FabricState,
    plan: &weft_formats::plan::Plan,
) -> Vec<weft_verifier::transition::StepCheck> {
    let mut sim = SimFabric::new(start, sm_port(start)).unwrap();
    let d = weft_deploy::discover(&mut sim).unwrap();
    weft_deploy::apply::check_wire(plan, &d).unwrap();
    weft_deploy::prove::checks(&mut sim, &d, plan, false)
        .unwrap()
        .0
}

/// The re-proof of a migration on a fabric that shows its vSwitches as switches covers the
/// VMs' LIDs: the plan as made is proven; with its LFT steps in reverse (the source side
/// first) a transient loop toward the moved VM's LID is found; without its last step the
/// VM's routes are not all mended; a VF given a physical port's LID, or another VF's, is
/// not proven either.
#[test]
fn the_reproof_of_a_migration_through_vswitches_covers_the_vm_lids() {
    use weft_formats::plan::SmpWrite;
    let (old, p) = fig2_migration();
    let start = weft_tests::ibsim::vswitched(old.state());
    let checks = reproof(&start, &p);
    assert_eq!(checks.len(), p.steps.len());
    assert!(checks.iter().all(|c| c.is_proven()), "{checks:?}");
    let unproven = |plan: &weft_formats::plan::Plan| {
        let checks = reproof(&start, plan);
        let bad = checks
            .iter()
            .find(|c| !c.is_proven())
            .unwrap_or_else(|| panic!("re-proven: {checks:?}"));
        weft_plan::why(bad)
    };
    let mut reversed = p.clone();
    reversed.steps[1..].reverse();
    let why = unproven(&reversed);
    assert!(why.contains("transient forwarding loop"), "{why}");
    let mut short = p.clone();
    short.steps.pop();
    let why = unproven(&short);
    assert!(why.contains("fail after the plan's last step"), "{why}");
    // The VM's new VF given vsw2's own LID, then another VF's.
    let lid = |name: &str| {
        let f = &old.state().fabric;
        old.state()
            .lids
            .get(f.find(name).unwrap(), weft_fabric::PortNum(1))
            .unwrap()
            .0
    };
    let other_vf = old
        .state()
        .lids
        .vports
        .iter()
        .find(|v| v.vm.as_deref() == Some("vm8"))
        .and_then(|v| v.lid)
        .unwrap()
        .0;
    for (taken, says) in [
        (lid("vsw2"), "a physical port's"),
        (other_vf, "would both hold"),
    ] {
        let mut stolen = p.clone();
        for w in &mut stolen.steps[0].writes {
            if let SmpWrite::Vport {
                new_lid: Some(l), ..
            } = w
            {
                *l = taken;
            }
        }
        let why = unproven(&stolen);
        // The VF named by its hypervisor's port and index, never by a port GUID the fabric
        // may not show.
        assert!(
            why.contains(says)
                && why.contains("VF ")
                && why.contains(" of `vsw")
                && !why.contains("0x"),
            "{why}"
        );
    }
    // A VF the fabric does not show.
    let mut ghost = p.clone();
    if let Some(SmpWrite::Vport { vf, guid, .. }) = ghost.steps[0].writes.first_mut() {
        (*vf, *guid) = (9, weft_fabric::Guid(0x0ddf_0000_0000_0001));
    }
    let why = unproven(&ghost);
    assert!(why.contains("is not a VF of the fabric as read"), "{why}");
}

/// The journal of a migration through vSwitches shown as switches: each VF PortInfo block,
/// before and after, is the port as read with only its LID changed and the port and physical
/// states written as "no change" — undo and recovery write the LID back and nothing else.
#[test]
fn a_vf_portinfo_is_journaled_with_its_states_unchanged() {
    let (old, p) = fig2_migration();
    let start = weft_tests::ibsim::vswitched(old.state());
    let mut sim = SimFabric::new(&start, sm_port(&start)).unwrap();
    sim.inject(Fault {
        at_set: p.smps() - 1,
        kind: FaultKind::Crash,
    });
    let dir = tmp("vf-journal");
    let e = apply(&mut sim, &p, &options(&dir), &mut |_| {}).unwrap_err();
    assert!(matches!(e, ApplyError::Crashed(_)), "{e}");
    let j = weft_deploy::journal::read(&dir.join("plan.journal")).unwrap();
    let infos: Vec<_> = j
        .blocks
        .iter()
        .filter(|b| b.attr == weft_deploy::Attr::PortInfo)
        .collect();
    assert_eq!(infos.len(), 2, "the VF web leaves and the one it takes");
    for b in infos {
        for x in [&b.before, &b.after] {
            assert_eq!(x[32] & 0x0f, 0, "port state: no change");
            assert_eq!(x[33] >> 4, 0, "physical state: no change");
        }
        let differ: Vec<usize> = (0..b.before.len())
            .filter(|&i| b.before[i] != b.after[i])
            .collect();
        assert!(differ.iter().all(|i| (16..18).contains(i)), "{differ:?}");
        assert!(!differ.is_empty());
    }
}

/// The SM on a VF's adapter (the one the moving VM leaves, whose LID the plan takes away, or
/// another): the migration lands all the same. (The sim puts no SM on a switch.)
#[test]
fn a_migration_lands_with_the_sm_behind_a_vswitch() {
    let (old, p) = fig2_planned();
    let start = weft_tests::ibsim::vswitched(old.state());
    let end = weft_tests::ibsim::vswitched(p.end.state());
    let web = old
        .state()
        .lids
        .vports
        .iter()
        .find(|v| v.vm.as_deref() == Some("vm1"))
        .unwrap()
        .vf;
    for (node, port) in [(format!("vsw1-vf{web}"), 1), ("vsw3-vf3".to_owned(), 1)] {
        let sm = PortRef::new(start.fabric.find(&node).unwrap(), port);
        let mut sim = SimFabric::new(&start, sm).unwrap();
        let want = SimFabric::new(&end, sm).unwrap().tables();
        let dir = tmp(&format!("sm-{node}"));
        let r = apply(&mut sim, &p.plan, &options(&dir), &mut |_| {})
            .unwrap_or_else(|e| panic!("SM on {node}: {e}"));
        assert_eq!(r.state, Final::New, "SM on {node}: {r:?}");
        same_at(&sim.tables(), &want, &node);
    }
}

/// With prepopulated LIDs (the VM's and the destination VF's LIDs swap), the re-proof of a
/// migration through vSwitches shown as switches holds too, and the swap lands.
#[test]
fn a_prepopulated_swap_through_vswitches_is_reproven_and_lands() {
    let src = weft_tests::example("vswitch-fig2.weft").replace("dynamic", "prepopulated");
    let old = compiled(&src);
    let new = compiled(&src.replace("vm vm1 on vsw1", "vm vm1 on vsw3"));
    let p = plan(&old, &new, &Options::default()).unwrap();
    let weft_plan::Target::Migration { moves, .. } = &p.target else {
        panic!("{:?}", p.target)
    };
    assert!(matches!(
        moves[0].how,
        weft_plan::migrate::LidMove::Swap { .. }
    ));
    let start = weft_tests::ibsim::vswitched(old.state());
    let checks = reproof(&start, &p.plan);
    assert!(
        checks.len() == p.plan.steps.len() && checks.iter().all(|c| c.is_proven()),
        "{checks:?}"
    );
    let end = weft_tests::ibsim::vswitched(p.end.state());
    let tables = migrate_and_crash(&start, &end, &p.plan, "swap-vswitch");
    assert_ne!(tables.0.lids, tables.1.lids);
}

/// A VF adapter that does not answer discovery (every NodeInfo toward vsw1's VF adapters
/// lost) looks like a VF the vSwitch does not show: the wire check still folds the vSwitch,
/// and the plan writing vm1's VF there is refused before anything is written, naming the VF
/// (not addressed through the hypervisor's port instead, as a fabric that shows no vSwitch
/// there would be).
#[test]
fn a_vf_adapter_that_does_not_answer_is_refused_before_any_write() {
    let (old, p) = fig2_migration();
    let start = weft_tests::ibsim::vswitched(old.state());
    let f = &start.fabric;
    let mute: Vec<u64> = (0..4)
        .filter_map(|k| f.find(&format!("vsw1-vf{k}")))
        .map(|id| f.node(id).guid().0)
        .collect();
    assert_eq!(mute.len(), 4);
    let mut t = Hostile {
        sim: SimFabric::new(&start, sm_port(&start)).unwrap(),
        lie: move |target: &weft_deploy::transport::Target, a: Answer| {
            if target.attr == weft_deploy::Attr::NodeInfo {
                if let Ok(p) = &a {
                    if mute.contains(&weft_deploy::smp::NodeInfo::decode(p).node_guid) {
                        return Err(weft_deploy::SmpError::Timeout {
                            target: target.clone(),
                            tries: 1,
                        });
                    }
                }
            }
            a
        },
    };
    let before = t.sim.tables();
    let dir = tmp("vf-mute");
    let r = apply(&mut t, &p, &options(&dir), &mut |_| {});
    let e = r.map(|r| r.state).unwrap_err().to_string();
    assert!(
        e.contains("VF 0") && e.contains("did not answer discovery"),
        "{e}"
    );
    assert_eq!(t.sim.counts().sets, 0);
    same_at(&t.sim.tables(), &before, "");
}

/// `weft audit`'s reading (`weft_deploy::audit::audit`) on the sim: a switch whose every port
/// pair maps SL s to VL s % 2 reads back as that map; a host's SL→VL table as it is; a P_Key
/// table with an empty slot, a limited and a full membership of one partition reads as the
/// partitions it holds, each once (full over limited); default tables as none.
#[test]
fn the_audit_reads_sl2vl_and_p_key_tables() {
    let mut st = tree("").state().clone();
    let f = st.fabric.clone();
    let leaf = f.node_ids().find(|&n| f.node(n).name() == "leaf1").unwrap();
    let host = f
        .node_ids()
        .find(|&n| f.node(n).kind() == NodeKind::Hca)
        .unwrap();
    let map: [u8; 16] = std::array::from_fn(|s| (s % 2) as u8);
    st.switches.get_mut(&leaf).unwrap().sl2vl_all = Some(map);
    let port = st.ports.entry(PortRef::new(host, 1)).or_default();
    port.sl2vl = Some(map);
    port.pkeys = Some(
        [0xffff, 0x0000, 0x0001, 0x8001]
            .map(weft_fabric::PKey)
            .to_vec(),
    );
    let mut sim = SimFabric::new(&st, sm_port(&st)).unwrap();
    let a = weft_deploy::audit::audit(&mut sim, "t").unwrap();
    let id = |n: weft_fabric::NodeId| a.state.fabric.find_guid(f.node(n).guid()).unwrap();
    assert_eq!(a.state.switches[&id(leaf)].sl2vl_all, Some(map));
    assert!(a.state.switches[&id(leaf)].sl2vl.is_empty());
    let other = f
        .node_ids()
        .find(|&n| n != leaf && f.node(n).is_switch())
        .unwrap();
    assert!(!a.state.switches[&id(other)].has_sl2vl(), "no QoS: VL 0");
    let p = &a.state.ports[&PortRef::new(id(host), 1)];
    assert_eq!(p.sl2vl, Some(map));
    assert_eq!(
        p.pkeys,
        Some([0xffff, 0x8001].map(weft_fabric::PKey).to_vec())
    );
    ValidState::new(a.state).unwrap();
}

/// The P_Key table a state holds for a port whose table is `keys` (slot by slot), as who may
/// talk to whom: each partition once (a full membership over a limited one), empty slots
/// gone, none for the default key alone. Written here apart from `weft_deploy::observe`.
fn partitions_of(keys: &[u16]) -> Option<Vec<u16>> {
    let mut out: Vec<u16> = Vec::new();
    for &k in keys.iter().filter(|k| *k & 0x7fff != 0) {
        match out.iter().position(|m| m & 0x7fff == k & 0x7fff) {
            Some(i) => out[i] |= k & 0x8000,
            None => out.push(k),
        }
    }
    (out != [0xffff]).then_some(out)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// A state simulated and read back over SMPs (discovery, then audit's reading) is the
    /// state as a state holds what the fabric runs: the same LIDs; each switch's LFT up to its
    /// last route (trailing unset entries are not forwarded by); each host port's partitions
    /// and SL→VL map (all VL 0: none), whatever slots its table has.
    #[test]
    fn a_simulated_state_reads_back_as_a_state_holds_it(
        tables in proptest::collection::vec(
            (0usize..64, proptest::collection::vec(proptest::prelude::any::<u16>(), 0..32)),
            0..6,
        ),
        cuts in proptest::collection::vec((0usize..64, 0usize..40), 0..4),
        vl in proptest::array::uniform16(0u8..16),
    ) {
        let mut st = tree("").state().clone();
        let f = st.fabric.clone();
        let hosts: Vec<PortRef> = f
            .node_ids()
            .filter(|&n| f.node(n).kind() == NodeKind::Hca)
            .map(|n| PortRef::new(n, 1))
            .collect();
        let switches: Vec<weft_fabric::NodeId> = st.switches.keys().copied().collect();
        for (i, keys) in &tables {
            let p = st.ports.entry(hosts[i % hosts.len()]).or_default();
            p.pkeys = Some(keys.iter().map(|&k| weft_fabric::PKey(k)).collect());
        }
        for (i, len) in &cuts {
            let sw = st.switches.get_mut(&switches[i % switches.len()]).unwrap();
            sw.lft.ports.truncate(*len);
            // A trailing unset entry the switch's top still covers.
            sw.lft.ports.push(weft_fabric::LFT_UNSET);
        }
        st.ports.entry(hosts[0]).or_default().sl2vl = Some(vl);
        let mut sim = SimFabric::new(&st, sm_port(&st)).unwrap();
        let a = weft_deploy::audit::audit(&mut sim, "t").unwrap();
        let read = &a.state;
        let id = |n: weft_fabric::NodeId| read.fabric.find_guid(f.node(n).guid()).unwrap();
        for (&n, ports) in &st.lids.base {
            proptest::prop_assert_eq!(&read.lids.base[&id(n)], ports, "{}", f.node(n).name());
        }
        for (&n, sw) in &st.switches {
            let mut want = sw.lft.ports.clone();
            while want.last() == Some(&weft_fabric::LFT_UNSET) {
                want.pop();
            }
            proptest::prop_assert_eq!(&read.switches[&id(n)].lft.ports, &want);
        }
        for &h in &hosts {
            let p = st.ports.get(&h);
            let keys: Option<Vec<u16>> =
                p.and_then(|p| p.pkeys.as_ref()).map(|k| k.iter().map(|k| k.0).collect());
            let want_keys = partitions_of(&keys.unwrap_or_else(|| vec![0xffff]));
            let want_vl = p.and_then(|p| p.sl2vl).filter(|v| *v != [0; 16]);
            let got = read.ports.get(&PortRef::new(id(h.node), 1));
            proptest::prop_assert_eq!(
                got.and_then(|p| p.pkeys.as_ref())
                    .map(|k| k.iter().map(|k| k.0).collect::<Vec<u16>>()),
                want_keys
            );
            proptest::prop_assert_eq!(got.and_then(|p| p.sl2vl), want_vl);
        }
    }
}

// --- Multicast forwarding tables -----------------------------------------------------------

/// A two-level tree of 36-port switches (three MFT positions), two leaves of 18 hosts and two
/// spines,
/// with `groups` multicast groups `(MLID, root switch, members)` built by hand
/// ([`weft_tests::multicast_tree`]).
fn multicast(groups: &[(u16, &str, &[&str])]) -> ValidState {
    let base = compiled(&xgft_source(2, &[18, 2], &[1, 2], "", ""));
    let mut st = base.state().clone();
    for (mlid, root, members) in groups {
        let m = weft_tests::multicast_tree(&st, *mlid, root, members);
        st.multicast.groups.extend(m.groups);
        for (sw, t) in m.mfts {
            let mft = st.multicast.mfts.entry(sw).or_default();
            for (l, mask) in t.entries() {
                mft.set(l, mask);
            }
        }
    }
    st.multicast.normalize();
    ValidState::new(st).unwrap()
}

/// The groups the multicast tests use: the IPoIB broadcast group over hosts of both leaves
/// (ports 16 and above of a switch are in its MFT's second position), and a second group in
/// block 1.
const GROUPS: &[(u16, &str, &[&str])] = &[
    (
        0xc000,
        "spine1",
        &["cn001", "cn017", "cn018", "cn019", "cn036"],
    ),
    (0xc021, "spine2", &["cn002", "cn020"]),
];

/// Every MFT of `st` by switch GUID: how two fabrics whose node ids differ are compared.
fn mfts_by_guid(st: &FabricState) -> std::collections::BTreeMap<u64, weft_fabric::Mft> {
    st.multicast
        .mfts
        .iter()
        .map(|(id, t)| (st.fabric.node(*id).guid().0, t.clone()))
        .collect()
}

/// The simulated fabric holds a state's MFTs, and `weft audit` reads them back over SMPs
/// (MulticastFDBTop, then each block at each position): the same tables, and no group (no SMP
/// carries membership).
#[test]
fn the_sim_holds_mfts_and_the_audit_reads_them_back() {
    let st = multicast(GROUPS);
    assert!(st.fabric.nodes().iter().any(|n| n.spec.port_count > 16));
    let sm = sm_port(&st);
    let mut sim = SimFabric::new(&st, sm).unwrap();
    let want = mfts_by_guid(&st);
    assert_eq!(want.len(), 4, "both spines and both leaves forward");
    assert_eq!(sim.tables().mfts, want);
    let read = weft_deploy::audit::audit(&mut sim, "t").unwrap();
    assert_eq!(mfts_by_guid(&read.state), want);
    assert!(read.state.multicast.groups.is_empty());
    // The audited state validates (masks over each switch's own ports).
    ValidState::new(read.state).unwrap();
}

/// A plan to a state with multicast: each MFT write its own step (one block at one position),
/// after the LFT steps; on the sim every block lands, MulticastFDBTop is raised on each switch
/// (one SwitchInfo Set each), and the fabric then holds exactly the desired MFTs.
#[test]
fn a_plan_writes_mft_blocks_one_per_step_and_they_land() {
    let old = multicast(&[]);
    let new = multicast(GROUPS);
    let p = plan(&old, &new, &Options::default()).unwrap();
    let mfts: Vec<&weft_formats::plan::PlanStep> = p
        .plan
        .steps
        .iter()
        .filter(|s| {
            s.writes
                .iter()
                .any(|w| matches!(w, weft_formats::plan::SmpWrite::Mft { .. }))
        })
        .collect();
    // Both groups sit in blocks 0 and 1 (0xc021); leaves write two positions where a member
    // is above port 15.
    assert!(mfts.iter().all(|s| s.writes.len() == 1));
    assert_eq!(mfts.len(), p.plan.smps());
    assert_eq!(
        p.stats.iter().map(|s| s.mft_blocks).sum::<usize>(),
        mfts.len()
    );
    let sm = sm_port(old.state());
    let mut sim = SimFabric::new(old.state(), sm).unwrap();
    let dir = tmp("mft-clean");
    let r = apply(&mut sim, &p.plan, &options(&dir), &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    same_at(
        &sim.tables(),
        &SimFabric::new(new.state(), sm).unwrap().tables(),
        "",
    );
    assert_eq!(sim.tables().mfts, mfts_by_guid(new.state()));
    // The plan's Sets and one MulticastFDBTop raise per switch with a tree.
    assert_eq!(sim.counts().sets, p.plan.smps() + 4);
}

/// A tree moved to another root: the ports the new tree does not use are taken away first
/// (before any LFT step), the new ones added last; every fault at every SMP ends in exactly
/// the old MFTs or the new ones, and a crash recovers back or forward exactly.
#[test]
fn every_fault_at_every_mft_write_ends_old_or_new() {
    let members: &[&str] = &["cn001", "cn019", "cn020"];
    let old = multicast(&[(0xc000, "spine1", members)]);
    let new = multicast(&[(0xc000, "spine2", members)]);
    let p = plan(&old, &new, &Options::default()).unwrap();
    let kinds: Vec<(u8, usize)> = p
        .plan
        .steps
        .iter()
        .flat_map(|s| &s.writes)
        .map(|w| match w {
            weft_formats::plan::SmpWrite::Mft { old, new, .. } => {
                let (o, n) = (
                    weft_plan::mft::block_masks(old),
                    weft_plan::mft::block_masks(new),
                );
                // 1: only takes ports away; 2: only adds.
                let removes = o.iter().zip(&n).all(|(a, b)| b & !a == 0);
                (if removes { 1 } else { 2 }, 1)
            }
            _ => (0, 1),
        })
        .collect();
    let phases: Vec<u8> = kinds.iter().map(|k| k.0).collect();
    let mut sorted = phases.clone();
    sorted.sort_unstable();
    assert_eq!(phases, sorted, "removals first, then additions: {phases:?}");
    assert!(phases.contains(&1) && phases.contains(&2), "{phases:?}");
    let (sets, seen) = fault_matrix("matrix-mft", old.state(), new.state(), &p.plan);
    assert_eq!(sets, p.plan.smps());
    assert_eq!(seen.values().sum::<usize>(), 7 * sets, "{seen:?}");
    assert_eq!(
        seen.get("Crash → crashed, recovered"),
        Some(&sets),
        "{seen:?}"
    );
    assert_eq!(
        seen.get("Reject { status: 28 } → Old"),
        Some(&sets),
        "{seen:?}"
    );
}

/// A block the plan writes that holds a mask the plan does not expect (another writer's) is
/// refused before anything is written.
#[test]
fn an_mft_block_that_moved_on_is_refused_before_any_write() {
    let old = multicast(&[]);
    let new = multicast(GROUPS);
    let p = plan(&old, &new, &Options::default()).unwrap();
    // The fabric runs a stray entry in block 0 of a switch the plan writes.
    let mut stray = old.state().clone();
    let leaf = stray.fabric.find("leaf1").unwrap();
    stray.multicast.mfts.entry(leaf).or_default().set(
        weft_fabric::Mlid::new(0xc001).unwrap(),
        weft_fabric::PortMask::of([weft_fabric::PortNum(3)]),
    );
    let sm = sm_port(&stray);
    let mut sim = SimFabric::new(&stray, sm).unwrap();
    let before = sim.tables();
    let dir = tmp("mft-moved");
    let e = apply(&mut sim, &p.plan, &options(&dir), &mut |_| {}).unwrap_err();
    assert_eq!(sim.counts().sets, 0, "{e}");
    same_at(&sim.tables(), &before, "");
}

/// A link failure that moves both the unicast routes and a multicast tree: the ports the old
/// tree loses go first, then the LFT steps, then the ports the new tree gains; every fault at
/// every SMP ends in exactly the old state or the new one.
#[test]
fn a_link_failure_moving_routes_and_a_tree_lands_old_or_new() {
    let members: &[&str] = &["cn001", "cn019", "cn020"];
    let src = |faults: &str| xgft_source(2, &[18, 2], &[1, 2], faults, "");
    let with_tree = |st: ValidState, root: &str| {
        let mut s = st.state().clone();
        s.multicast = weft_tests::multicast_tree(&s, 0xc000, root, members);
        ValidState::new(s).unwrap()
    };
    let old = with_tree(compiled(&src("")), "spine1");
    let down = compiled(&src("        link leaf1.p[19] down\n"));
    // The failed cable is leaf1's to spine1: the new tree hangs from spine2.
    let new = with_tree(down, "spine2");
    let p = plan(&old, &new, &Options::default()).unwrap();
    let kind = |s: &weft_formats::plan::PlanStep| match s.writes.first() {
        Some(weft_formats::plan::SmpWrite::Mft { old, new, .. }) => {
            let (o, n) = (
                weft_plan::mft::block_masks(old),
                weft_plan::mft::block_masks(new),
            );
            if o.iter().zip(&n).all(|(a, b)| b & !a == 0) {
                'r'
            } else {
                'a'
            }
        }
        _ => 'l',
    };
    let order: String = p.plan.steps.iter().map(kind).collect();
    let trimmed: String = {
        let mut o: Vec<char> = order.chars().collect();
        o.dedup();
        o.into_iter().collect()
    };
    assert_eq!(trimmed, "rla", "{order}");
    let start = weft_plan::start(&old, &new, Mode::Fault).unwrap();
    let (sets, seen) = fault_matrix("matrix-mft-lft", start.state(), p.end.state(), &p.plan);
    assert_eq!(seen.values().sum::<usize>(), 7 * sets, "{seen:?}");
    assert_eq!(p.end.multicast.mfts, new.multicast.mfts);
}

// --- SL→VL and VL arbitration tables -------------------------------------------------------

/// The tree without QoS, and the same with QoS tables on `leaf1` (three port pairs of its own,
/// one of them from port 0; the others left unassigned), on the first host's port (its
/// injection table, and a high-priority arbitration table) and on `leaf1`'s port 1 (a
/// low-priority table of 40 entries: two blocks).
fn qos_states() -> (FabricState, FabricState) {
    let old = tree("").state().clone();
    let mut new = old.clone();
    let f = new.fabric.clone();
    let leaf = f.node_ids().find(|&n| f.node(n).name() == "leaf1").unwrap();
    let host = PortRef::new(
        f.node_ids()
            .find(|&n| f.node(n).kind() == NodeKind::Hca)
            .unwrap(),
        1,
    );
    let live: Vec<u8> = (1..=f.node(leaf).spec.port_count)
        .filter(|&p| f.live_peer(PortRef::new(leaf, p)).is_some())
        .collect();
    let map = |k: u8| -> [u8; 16] { std::array::from_fn(|s| ((s as u8) + k) % 4) };
    let sw = new.switches.get_mut(&leaf).unwrap();
    for (i, o, k) in [
        (0, live[0], 1),
        (live[0], live[1], 2),
        (live[1], live[0], 3),
    ] {
        sw.sl2vl.push(weft_fabric::Sl2VlRow {
            in_port: i,
            out_port: o,
            vl: map(k),
        });
    }
    sw.sort_sl2vl();
    let w = |vl, weight| weft_fabric::VlWeight { vl, weight };
    let p = new.ports.entry(host).or_default();
    p.sl2vl = Some(map(1));
    p.vlarb = Some(weft_fabric::VlArb {
        high_limit: 0,
        high: vec![w(0, 8), w(1, 4)],
        low: Vec::new(),
    });
    new.ports
        .entry(PortRef::new(leaf, live[0]))
        .or_default()
        .vlarb = Some(weft_fabric::VlArb {
        high_limit: 0,
        high: Vec::new(),
        low: (0..40).map(|k| w(k % 4, 1 + k)).collect(),
    });
    (old, new)
}

/// A plan of SL→VL and VL arbitration writes alone (`weft_plan::qos::writes`) lands on the sim
/// with exactly its SMPs, and every fault kind at every SMP of it ends in exactly the old tables
/// or the new ones; a crash recovers back or forward exactly.
#[test]
fn every_fault_at_every_qos_write_ends_old_or_new() {
    let (old, new) = qos_states();
    let writes = weft_plan::qos::writes(&old, &new);
    let kinds =
        |f: fn(&weft_formats::plan::SmpWrite) -> bool| writes.iter().filter(|w| f(w)).count();
    // Three switch pairs and the host's table; the host's high block, the leaf port's two low.
    assert_eq!(
        (
            kinds(|w| matches!(w, weft_formats::plan::SmpWrite::Sl2vl { .. })),
            kinds(|w| matches!(w, weft_formats::plan::SmpWrite::VlArb { .. }))
        ),
        (4, 3)
    );
    let plan = trusted(weft_tests::one_step_plan(&old, &new, writes));
    // Clean: exactly its SMPs, each changing what its table held.
    let sm = sm_port(&old);
    let mut sim = SimFabric::new(&old, sm).unwrap();
    let dir = tmp("qos-clean");
    let r = apply(&mut sim, &plan, &options_for(&plan, &dir), &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    same_at(
        &sim.tables(),
        &SimFabric::new(&new, sm).unwrap().tables(),
        "",
    );
    assert_eq!(sim.counts().sets, plan.smps());
    assert_eq!(sim.counts().changes, plan.smps());
    let (sets, seen) = fault_matrix("matrix-qos", &old, &new, &plan);
    assert_eq!(sets, 7);
    assert_eq!(seen.values().sum::<usize>(), 7 * sets, "{seen:?}");
    for (kind, outcome) in [
        ("Drop { times: 1 }", "New"),
        ("Drop { times: 3 }", "Old"),
        ("Delay { times: 1 }", "New"),
        ("Delay { times: 3 }", "Old"),
        ("Reject { status: 28 }", "Old"),
        ("CorruptReadback", "Old"),
        ("Crash", "crashed, recovered"),
    ] {
        assert_eq!(
            seen.get(&format!("{kind} → {outcome}")),
            Some(&sets),
            "{seen:?}"
        );
    }
}

/// Another writer changed a table the plan writes (a switch's port pair, then a host port's
/// injection table, then a VL arbitration block) before it ran: the plan is refused as moved
/// on, naming the node and the port(s), and nothing is written.
#[test]
fn a_qos_table_another_writer_changed_is_refused_naming_it() {
    let (old, new) = qos_states();
    let plan = trusted(weft_tests::one_step_plan(
        &old,
        &new,
        weft_plan::qos::writes(&old, &new),
    ));
    let f = &old.fabric;
    let leaf = f.node_ids().find(|&n| f.node(n).name() == "leaf1").unwrap();
    let host = f
        .node_ids()
        .find(|&n| f.node(n).kind() == NodeKind::Hca)
        .unwrap();
    let sm = sm_port(&old);
    let [weft_formats::plan::SmpWrite::Sl2vl {
        in_port, out_port, ..
    }, ..] = plan.steps[0].writes.as_slice()
    else {
        panic!("{:?}", plan.steps[0].writes)
    };
    let (leaf_guid, host_guid) = (f.node(leaf).guid(), f.node(host).guid());
    let vlarb_port = new
        .ports
        .iter()
        .find(|(r, p)| r.node == leaf && p.vlarb.is_some())
        .map(|(r, _)| r.port.0)
        .unwrap();
    let cases: Vec<(FabricState, String)> = {
        let mut pair = old.clone();
        pair.switches.get_mut(&leaf).unwrap().sl2vl = vec![weft_fabric::Sl2VlRow {
            in_port: *in_port,
            out_port: *out_port,
            vl: [1; 16],
        }];
        pair.switches.get_mut(&leaf).unwrap().sl2vl_all = Some([0; 16]);
        let mut inj = old.clone();
        inj.ports.entry(PortRef::new(host, 1)).or_default().sl2vl = Some([2; 16]);
        let mut arb = old.clone();
        arb.ports
            .entry(PortRef::new(leaf, vlarb_port))
            .or_default()
            .vlarb = Some(weft_fabric::VlArb {
            high_limit: 0,
            high: Vec::new(),
            low: vec![weft_fabric::VlWeight { vl: 3, weight: 9 }],
        });
        vec![
            (
                pair,
                format!("switch {leaf_guid} SL→VL input {in_port} output {out_port}"),
            ),
            (inj, format!("{host_guid} port 1 SL→VL")),
            (
                arb,
                format!("switch {leaf_guid} port {vlarb_port} VL arbitration block 1 (low 0–31)"),
            ),
        ]
    };
    for (moved, named) in cases {
        let mut sim = SimFabric::new(&moved, sm).unwrap();
        let before = sim.tables();
        let dir = tmp("qos-moved");
        let err = apply(&mut sim, &plan, &options_for(&plan, &dir), &mut |_| {}).unwrap_err();
        assert!(matches!(err, ApplyError::Moved(_)), "{err}");
        assert!(
            err.to_string()
                .starts_with(&format!("{named} does not hold the plan's old value")),
            "{err}"
        );
        assert_eq!(sim.counts().sets, 0);
        same_at(&sim.tables(), &before, "nothing written");
    }
}

/// Small trees for [`qos_writes_take_any_tables_to_any_tables`], compiled once.
fn small_trees() -> &'static [FabricState] {
    static TREES: std::sync::OnceLock<Vec<FabricState>> = std::sync::OnceLock::new();
    TREES.get_or_init(|| {
        [(&[2u32, 2][..], &[1u32, 2][..]), (&[3, 2], &[1, 3])]
            .iter()
            .map(|(m, w)| compiled(&xgft_source(2, m, w, "", "")).state().clone())
            .collect()
    })
}

/// QoS tables drawn by `pick` onto `st`: per switch none, one map for every pair, or rows for
/// some live pairs (over a map or not); per host port an injection table or none; per port
/// (a switch's port 0 included) arbitration or none, up to 40 entries a table.
fn random_qos(st: &FabricState, pick: &[u8]) -> FabricState {
    let mut st = st.clone();
    let f = st.fabric.clone();
    let mut k = 0usize;
    let mut next = || {
        k += 1;
        pick.get(k % pick.len().max(1))
            .copied()
            .unwrap_or(0)
            .wrapping_add(k as u8)
    };
    for id in f.node_ids() {
        let n = f.node(id);
        let live: Vec<u8> = (1..=n.spec.port_count)
            .filter(|&p| f.live_peer(PortRef::new(id, p)).is_some())
            .collect();
        if n.is_switch() {
            let sw = st.switches.entry(id).or_default();
            let map =
                |x: u8| -> [u8; 16] { std::array::from_fn(|s| (x.wrapping_add(s as u8)) % 16) };
            match next() % 4 {
                0 => {}
                1 => sw.sl2vl_all = Some(map(next())),
                c => {
                    if c == 3 {
                        sw.sl2vl_all = Some(map(next()));
                    }
                    for i in std::iter::once(0).chain(live.iter().copied()) {
                        for &o in &live {
                            if next() % 3 == 0 {
                                sw.sl2vl.push(weft_fabric::Sl2VlRow {
                                    in_port: i,
                                    out_port: o,
                                    vl: map(next()),
                                });
                            }
                        }
                    }
                    sw.sort_sl2vl();
                }
            }
        }
        let ports: Vec<u8> = if n.is_switch() {
            std::iter::once(0).chain(live.iter().copied()).collect()
        } else {
            live.clone()
        };
        for p in ports {
            let at = PortRef::new(id, p);
            if !n.is_switch() && next() % 2 == 0 {
                st.ports.entry(at).or_default().sl2vl =
                    Some(std::array::from_fn(|s| (next().wrapping_add(s as u8)) % 15));
            }
            if next() % 3 == 0 {
                let table = |len: u8, next: &mut dyn FnMut() -> u8| -> Vec<weft_fabric::VlWeight> {
                    (0..len)
                        .map(|_| weft_fabric::VlWeight {
                            vl: next() % 15,
                            weight: next(),
                        })
                        .collect()
                };
                let lo = next() % 41;
                let low = table(lo, &mut next);
                let hi = next() % 41;
                let high = table(hi, &mut next);
                let arb = weft_fabric::VlArb {
                    high_limit: 0,
                    low,
                    high,
                };
                st.ports.entry(at).or_default().vlarb = Some(arb);
            }
        }
    }
    st
}

/// What the sim holds of `want`'s QoS tables ([`weft_plan::qos::tables`]: every pair the
/// writes cover, every live end port, every arbitration block), read over SMPs.
fn held_qos(sim: &mut SimFabric, like: &weft_plan::qos::QosTables) -> weft_plan::qos::QosTables {
    use weft_deploy::smp::{self, Attr};
    use weft_deploy::transport::{Target, Transport};
    let d = weft_deploy::discover::discover(sim).unwrap();
    let mut out = weft_plan::qos::QosTables::default();
    for &(g, i, o) in like.sl2vl.keys() {
        let switch = d.nodes[&g].info.node_type == smp::NodeType::Switch;
        let target = Target {
            path: d.path(g, (!switch).then_some(o)).unwrap().clone(),
            attr: Attr::SlToVl,
            modifier: if switch { smp::sl2vl_modifier(i, o) } else { 0 },
        };
        out.sl2vl.insert(
            (g, i, o),
            Some(smp::decode_sl2vl(&sim.get(&target).unwrap())),
        );
    }
    for &(g, p, b) in like.vlarb.keys() {
        let switch = d.nodes[&g].info.node_type == smp::NodeType::Switch;
        let target = Target {
            path: d.path(g, (!switch).then_some(p)).unwrap().clone(),
            attr: Attr::VlArb,
            modifier: smp::vlarb_modifier(b, if switch { p } else { 0 }),
        };
        let mut e = smp::decode_vlarb(&sim.get(&target).unwrap()).to_vec();
        while e.last() == Some(&(0, 0)) {
            e.pop();
        }
        out.vlarb.insert((g, p, b), e);
    }
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(16))]

    /// Random QoS tables on a small tree: applying `qos::writes(old, new)` on the sim loaded
    /// with `old` lands, and the fabric then holds `new`'s tables (every pair and block `new`
    /// sets; a pair `new` leaves unassigned is not compared), and writing them again from there
    /// is nothing.
    #[test]
    fn qos_writes_take_any_tables_to_any_tables(
        which in 0usize..2,
        a in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..64),
        b in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..64),
    ) {
        let base = &small_trees()[which];
        let (old, new) = (random_qos(base, &a), random_qos(base, &b));
        let writes = weft_plan::qos::writes(&old, &new);
        let plan = trusted(weft_tests::one_step_plan(&old, &new, writes.clone()));
        let sm = sm_port(&old);
        let mut sim = SimFabric::new(&old, sm).unwrap();
        let dir = tmp("qos-prop");
        let r = apply(&mut sim, &plan, &options_for(&plan, &dir), &mut |_| {}).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let want = if writes.is_empty() { Final::Nothing } else { Final::New };
        proptest::prop_assert_eq!(&r.state, &want, "{:?}", r);
        let mut expected = weft_plan::qos::tables(&new);
        expected.sl2vl.retain(|_, v| v.is_some());
        // Blocks `new` leaves at (0, 0) that `old` set: written back to nothing.
        for (k, _) in weft_plan::qos::tables(&old).vlarb {
            expected.vlarb.entry(k).or_default();
        }
        proptest::prop_assert_eq!(held_qos(&mut sim, &expected), expected);
        let mut landed = old.clone();
        for w in &writes {
            weft_plan::qos::apply(&mut landed, w).unwrap();
        }
        proptest::prop_assert!(weft_plan::qos::writes(&landed, &new).is_empty());
    }
}

/// A plan file whose SL→VL write sends every SL to VL 15 (drops every packet) is refused by the
/// proof on the fabric, naming the step, the table and the SL; nothing is written. Written on
/// the proof it carries (`--no-reprove`), it lands, and the report says what is not proven.
#[test]
fn a_qos_plan_that_drops_a_lane_is_refused_by_the_proof_on_the_fabric() {
    let (old, new) = qos_states();
    let mut writes = weft_plan::qos::writes(&old, &new);
    let Some(weft_formats::plan::SmpWrite::Sl2vl {
        node,
        in_port,
        out_port,
        new: to,
        ..
    }) = writes
        .iter_mut()
        .find(|w| matches!(w, weft_formats::plan::SmpWrite::Sl2vl { .. }))
    else {
        panic!("no SL→VL write")
    };
    *to = [15; 16];
    let named = format!("{node} SL→VL input {in_port} output {out_port}: SL 0 goes from VL 0 to VL 15, which drops it");
    let plan = weft_tests::one_step_plan(&old, &new, writes);
    let sm = sm_port(&old);
    let mut sim = SimFabric::new(&old, sm).unwrap();
    let before = sim.tables();
    let dir = tmp("qos-drop");
    let err = apply(&mut sim, &plan, &options_for(&plan, &dir), &mut |_| {}).unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "step 1 of the plan is not safe on the fabric as it runs: {named}"
        )),
        "{err}"
    );
    same_at(&sim.tables(), &before, "");
    assert_eq!(sim.counts().sets, 0);
    let plan = trusted(plan);
    let r = apply(&mut sim, &plan, &options_for(&plan, &dir), &mut |_| {}).unwrap();
    assert_eq!(r.state, Final::New, "{r:?}");
    assert!(
        r.notes.iter().any(|n| n
            .contains("SL→VL and VL arbitration write(s) are not part of any proof it carries")),
        "{:?}",
        r.notes
    );
    let _ = std::fs::remove_dir_all(&dir);
}
