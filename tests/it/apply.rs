//! `weft apply` on the in-process `sim` fabric, against plans `weft plan` makes: a link
//! failure on a two-level tree planned into proven steps, then written with every fault kind
//! striking every SMP of the plan in turn. Whatever happens, the fabric ends in exactly the old
//! state or exactly the new one, and the report says which; a crash leaves a journal that
//! recovery rolls back (or forward) exactly.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use weft_deploy::apply::{apply, recover, ApplyError, ApplyOptions, Direction, Final};
use weft_deploy::sim::{Fault, FaultKind, SimFabric};
use weft_deploy::Retrying;
use weft_fabric::{FabricState, NodeKind, PortRef, ValidState};
use weft_plan::{plan, Mode, Options};
use weft_tests::scratch as tmp;
use weft_tests::sim::{same_at, sm_port};
use weft_tests::{compiled, xgft_source};

mod hostile;
mod multicast;
mod qos;
mod vports;

use vports::fig2_planned;

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
