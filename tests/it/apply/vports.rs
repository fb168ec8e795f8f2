//! `weft apply` with vSwitch VFs (Paper A's Fig. 2): vport writes that name the wrong port or
//! a GUID held twice, folded nodes, the reproof covering the VM LIDs, an SM behind a vSwitch.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use super::hostile::{node_info, Answer, Hostile};
use super::*;

/// Paper A's Fig. 2 (four vSwitch hypervisors, vsw1 and vsw2 on leaf1) with vm1 moved from
/// vsw1 to vsw3: the old state and the plan.
fn fig2_migration() -> (ValidState, weft_formats::plan::Plan) {
    let (old, p) = fig2_planned();
    (old, p.plan)
}

/// [`fig2_migration`], planned whole (its end state too).
pub(super) fn fig2_planned() -> (ValidState, weft_plan::Planned) {
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
