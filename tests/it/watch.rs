//! `weft watch`'s sweeps on the in-process fabric (issue 47): a sweep with nothing changed
//! costs one SwitchInfo per switch and the local PortInfo, counted; a pulled cable, a
//! rebooted switch and a block written by another writer are each found and named; the
//! repair planned against the desired state, applied, leaves the fabric proven.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use weft_deploy::sim::SimFabric;
use weft_deploy::watch::{self, Change, Watcher};
use weft_deploy::{smp, DrPath, Target, Transport as _};
use weft_fabric::{FabricState, Guid, ValidState};
use weft_tests::sim::sm_port;

const TREE: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, radix: 8, switch: sb7800, hca: connectx5)\n    routing { engine = fat_tree }\n}\n";

fn setup() -> (ValidState, SimFabric) {
    let st = weft_tests::compiled(TREE);
    let sim = SimFabric::new(&st, sm_port(&st)).unwrap();
    (st, sim)
}

fn switches(st: &FabricState) -> Vec<Guid> {
    st.fabric
        .nodes()
        .iter()
        .filter(|n| n.is_switch())
        .map(|n| n.guid())
        .collect()
}

/// Both routing properties of `st`, proven.
fn proven(st: &FabricState) -> bool {
    let v = ValidState::new(st.clone()).unwrap();
    let r = weft_verifier::verify(&v, &weft_verifier::Options::default());
    r.verdict.deadlock_free == weft_verifier::Outcome::Proven
        && r.verdict.connected == weft_verifier::Outcome::Proven
}

#[test]
fn a_sweep_with_nothing_changed_costs_one_smp_per_switch() {
    let (st, mut sim) = setup();
    let (mut w, _) = Watcher::start(&mut sim, "f").unwrap();
    let n = switches(&st).len();
    assert_eq!(w.switch_count(), n);
    for _ in 0..3 {
        let before = sim.counts().gets;
        let s = w.sweep(&mut sim, false);
        assert!(s.changes.is_empty(), "{:?}", s.changes);
        assert!(s.heavy.is_none());
        assert_eq!((s.light.switch_smps, s.light.local_smps), (n, 1));
        assert_eq!(
            sim.counts().gets - before,
            n + 1,
            "SMPs the fabric answered"
        );
    }
    assert!(proven(w.state().unwrap()));
    assert!(watch::difference(w.state().unwrap(), &st).is_empty());
}

/// The first switch-to-switch cable of `st`: (switch GUID, port).
fn inter_switch(st: &FabricState) -> (Guid, u8) {
    let f = &st.fabric;
    let l = f
        .links()
        .iter()
        .find(|l| f.node(l.a.node).is_switch() && f.node(l.b.node).is_switch())
        .unwrap();
    (f.node(l.a.node).guid(), l.a.port.0)
}

#[test]
fn a_pulled_cable_is_found_and_a_proven_repair_restores_every_route() {
    let (st, mut sim) = setup();
    let (mut w, _) = Watcher::start(&mut sim, "f").unwrap();
    let (g, p) = inter_switch(&st);
    assert!(sim.unlink(g.0, p));
    let s = w.sweep(&mut sim, false);
    assert!(
        s.changes.contains(&Change::PortStateChange { switch: g }),
        "{:?}",
        s.changes
    );
    let heavy = s.heavy.unwrap();
    assert!(heavy.full && heavy.error.is_none(), "{heavy:?}");
    let live = w.state().unwrap().clone();
    let diff = watch::difference(&live, &st);
    assert_eq!(diff.cables_down.len(), 1, "{diff:?}");
    assert!(diff.cables_down[0].a.0 == g || diff.cables_down[0].b.0 == g);
    assert!(diff.nodes_gone.is_empty() && diff.blocks.is_empty());
    assert!(!proven(&live), "routes over the pulled cable fail");
    // The repair: planned, applied, read back proven.
    let (old, new) = watch::repair_states(&live, &st).unwrap();
    let planned = weft_plan::plan(&old, &new, &weft_plan::Options::default()).unwrap();
    assert!(!planned.plan.steps.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let opts = weft_deploy::ApplyOptions::new(dir.path().join("j"), dir.path().to_owned());
    weft_deploy::apply(&mut sim, &planned.plan, &opts, &mut |_| {}).unwrap();
    let s = w.sweep(&mut sim, true);
    assert!(s.heavy.unwrap().error.is_none());
    let after = w.state().unwrap();
    assert!(proven(after), "the repaired fabric is proven");
    assert_eq!(watch::difference(after, &st).cables_down.len(), 1);
}

#[test]
fn a_block_written_by_another_writer_is_named_by_switch_and_block() {
    let (st, mut sim) = setup();
    let (mut w, _) = Watcher::start(&mut sim, "f").unwrap();
    let d = w.discovery().clone();
    let g = switches(&st)[0];
    let path = d.nodes[&g].path.clone();
    let t = Target {
        path,
        attr: smp::Attr::Lft,
        modifier: 0,
    };
    let mut block = sim.get(&t).unwrap();
    // LID 1's port (and LID 2's) moved: a block of another writer.
    block[1] ^= 0x01;
    sim.set(&t, &block).unwrap();
    // SwitchInfo shows nothing: the light sweep does not see it.
    assert!(w.sweep(&mut sim, false).changes.is_empty());
    let s = w.sweep(&mut sim, true);
    assert!(
        s.changes.contains(&Change::Blocks {
            switch: g,
            blocks: vec![0]
        }),
        "{:?}",
        s.changes
    );
    let diff = watch::difference(w.state().unwrap(), &st);
    assert_eq!(
        diff.blocks
            .iter()
            .map(|b| (b.switch, b.block))
            .collect::<Vec<_>>(),
        [(g, 0)]
    );
    assert_eq!(
        diff.blocks[0].name,
        st.fabric.node(st.fabric.find_guid(g).unwrap()).name()
    );
    // Restored by the plan toward the desired state.
    let (old, new) = watch::repair_states(w.state().unwrap(), &st).unwrap();
    let planned = weft_plan::plan(&old, &new, &weft_plan::Options::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let opts = weft_deploy::ApplyOptions::new(dir.path().join("j"), dir.path().to_owned());
    weft_deploy::apply(&mut sim, &planned.plan, &opts, &mut |_| {}).unwrap();
    w.sweep(&mut sim, true);
    assert!(watch::difference(w.state().unwrap(), &st).is_empty());
}

#[test]
fn a_rebooted_switch_is_found_with_its_empty_table() {
    let (st, mut sim) = setup();
    let (mut w, _) = Watcher::start(&mut sim, "f").unwrap();
    let g = switches(&st)[1];
    assert!(sim.reboot_switch(g.0));
    let before = sim.counts().gets;
    let s = w.sweep(&mut sim, false);
    assert!(
        s.changes
            .iter()
            .any(|c| matches!(c, Change::Top { switch, now: 0, .. } if *switch == g)),
        "{:?}",
        s.changes
    );
    let heavy = s.heavy.unwrap();
    assert!(!heavy.full, "only the switch that changed is read");
    assert_eq!(heavy.switches, [g]);
    let ports = usize::from(
        st.fabric
            .node(st.fabric.find_guid(g).unwrap())
            .spec
            .port_count,
    );
    // Its ports and its one LFT block (top 0), beside the light sweep.
    assert_eq!(heavy.smps, ports + 1);
    assert_eq!(sim.counts().gets - before, s.light.smps() + ports + 1);
    let diff = watch::difference(w.state().unwrap(), &st);
    assert!(!diff.blocks.is_empty());
    assert!(diff.blocks.iter().all(|b| b.switch == g));
    assert!(!proven(w.state().unwrap()));
}

#[test]
fn a_partial_read_is_never_proven() {
    let (_, mut sim) = setup();
    let (mut w, _) = Watcher::start(&mut sim, "f").unwrap();
    sim.inject(weft_deploy::Fault {
        at_set: 0,
        kind: weft_deploy::FaultKind::Crash,
    });
    // Every SMP from the first Set on fails: a Set makes the crash strike.
    let _ = sim.set(
        &Target {
            path: DrPath::local(),
            attr: smp::Attr::NodeInfo,
            modifier: 0,
        },
        &[0; smp::PAYLOAD],
    );
    let s = w.sweep(&mut sim, false);
    assert!(s
        .changes
        .iter()
        .any(|c| matches!(c, Change::Unanswered { .. })));
    assert!(s.heavy.unwrap().error.is_some());
    assert!(w.state().is_none(), "unknown, not proven");
}
