//! `weft watch`'s sweeps on the in-process fabric (issue 47): a sweep with nothing changed
//! costs one SwitchInfo per switch and nothing else, counted; a pulled cable, a
//! rebooted switch and a block written by another writer are each found and named; the
//! repair planned against the desired state, applied, leaves the fabric proven.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use std::collections::{BTreeMap, BTreeSet};
use weft_deploy::sim::SimFabric;
use weft_deploy::watch::{self, Change, Watcher};
use weft_deploy::{smp, Discovery, DrPath, SmpError, Target, Transport};
use weft_fabric::{FabricState, Guid, PortNum, ValidState, WireEnd};
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
        assert_eq!((s.light.switch_smps, s.light.smps()), (n, n));
        assert_eq!(sim.counts().gets - before, n, "SMPs the fabric answered");
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
    // What stopped answering is reached around the cable: no full read.
    assert!(!heavy.full && heavy.error.is_none(), "{heavy:?}");
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
    // Its ports, the NodeInfo across each of its cables (the same peers?), its one LFT
    // block (top 0) and the master SM's LID, beside the light sweep.
    let id = st.fabric.find_guid(g).unwrap();
    let cables = st
        .fabric
        .links()
        .iter()
        .filter(|l| l.a.node == id || l.b.node == id)
        .count();
    assert_eq!(heavy.smps, ports + cables + 2);
    assert_eq!(
        sim.counts().gets - before,
        s.light.smps() + ports + cables + 2
    );
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

/// A three-level tree of 320 switches and 1 024 hosts.
const TREE3: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 3, radix: 16, switch: sb7800, hca: connectx5)\n    routing { engine = fat_tree }\n}\n";

/// The cable between two switches that the most switches' directed routes cross: one of
/// its ends (switch GUID, port), and how many routes.
fn busiest_cable(d: &Discovery) -> ((Guid, u8), usize) {
    let peers: BTreeMap<WireEnd, WireEnd> = d
        .view
        .links
        .iter()
        .flat_map(|&(a, b)| [(a, b), (b, a)])
        .collect();
    let switch = |g: &Guid| d.nodes[g].info.node_type == smp::NodeType::Switch;
    let local = *d.nodes.iter().find(|(_, f)| f.path.0.is_empty()).unwrap().0;
    let mut crossing: BTreeMap<WireEnd, usize> = BTreeMap::new();
    for (g, f) in d.nodes.iter().filter(|(g, _)| switch(g)) {
        let mut at = local;
        for &hop in &f.path.0 {
            let end = (at, PortNum(hop));
            let far = peers[&end];
            if switch(&at) && switch(&far.0) {
                *crossing.entry(end.min(far)).or_default() += 1;
            }
            at = far.0;
        }
        assert_eq!(at, *g, "the route leads to its switch");
    }
    let (end, n) = crossing.into_iter().max_by_key(|(e, n)| (*n, *e)).unwrap();
    ((end.0, end.1 .0), n)
}

#[test]
fn a_pulled_cable_reroutes_what_stopped_answering_and_reads_only_what_changed() {
    let st = weft_tests::compiled(TREE3);
    let mut sim = SimFabric::new(&st, sm_port(&st)).unwrap();
    let (mut w, first) = Watcher::start(&mut sim, "f").unwrap();
    let n = switches(&st).len();
    assert!(n >= 300, "{n} switches");
    let ((g, p), crossing) = busiest_cable(w.discovery());
    assert!(crossing >= 10, "the cable carries {crossing} routes");
    assert!(sim.unlink(g.0, p));
    let before = sim.counts().gets;
    let s = w.sweep(&mut sim, false);
    let heavy = s.heavy.as_ref().unwrap();
    assert!(!heavy.full, "{:?}", heavy.because);
    assert!(heavy.error.is_none(), "{:?}", heavy.error);
    let unanswered: Vec<Guid> = s
        .changes
        .iter()
        .filter_map(|c| match c {
            Change::Unanswered {
                switch: Some(g), ..
            } => Some(*g),
            _ => None,
        })
        .collect();
    assert_eq!(unanswered.len(), crossing, "each switch behind the cable");
    assert_eq!(heavy.rerouted, unanswered);
    // Bounded by what changed: the ports of the switches flagged and the NodeInfo across
    // each of their cables (the same peer?), a NodeInfo and SwitchInfo per switch rerouted,
    // the master SM's LID; and, a cable being down (when an SM reroutes, in writes no
    // SwitchInfo shows), every switch's LFT blocks.
    let f = &st.fabric;
    let lft_blocks: usize = st
        .switches
        .values()
        .map(|s| s.lft.ports.len().div_ceil(64))
        .sum();
    let ends = [g, {
        let id = f.find_guid(g).unwrap();
        let l = f
            .links()
            .iter()
            .find(|l| (l.a.node == id && l.a.port.0 == p) || (l.b.node == id && l.b.port.0 == p))
            .unwrap();
        f.node(if l.a.node == id { l.b.node } else { l.a.node })
            .guid()
    }];
    let port_cost: usize = ends
        .iter()
        .map(|g| {
            let id = f.find_guid(*g).unwrap();
            let cables = f
                .links()
                .iter()
                .filter(|l| l.a.node == id || l.b.node == id)
                .count();
            usize::from(f.node(id).spec.port_count) + cables - 1
        })
        .sum();
    assert_eq!(heavy.switches.len(), n, "every LFT read again");
    assert_eq!(
        heavy.smps,
        lft_blocks + port_cost + 2 * crossing + 1,
        "{heavy:?}"
    );
    assert_eq!(sim.counts().gets - before, s.light.smps() + heavy.smps);
    assert!(
        heavy.smps * 3 < first,
        "{} SMPs against {first} for a full read",
        heavy.smps
    );
    // What it read is what a full read reads now, with the same verdict.
    let fresh = weft_deploy::audit::audit(&mut sim, "f").unwrap().state;
    let live = w.state().unwrap().clone();
    assert!(watch::difference(&live, &fresh).is_empty());
    assert_eq!(watch::difference(&live, &st).cables_down.len(), 1);
    assert!(!proven(&live), "routes over the pulled cable fail");
    assert!(!proven(&fresh));
    // The next light sweep reaches every switch on its new route: switches only, and the
    // two switches whose PortStateChange stays set (no SM clears it here) their ports and
    // the NodeInfo across their cables.
    let before = sim.counts().gets;
    let s = w.sweep(&mut sim, false);
    assert_eq!(s.light.smps(), n);
    assert!(s.changes.is_empty(), "{:?}", s.changes);
    let heavy = s.heavy.unwrap();
    assert!(!heavy.full && heavy.rerouted.is_empty());
    assert_eq!(
        heavy.switches.iter().copied().collect::<BTreeSet<_>>(),
        ends.iter().copied().collect::<BTreeSet<_>>()
    );
    assert_eq!(heavy.smps, port_cost + 1);
    assert_eq!(sim.counts().gets - before, n + port_cost + 1);
    assert_eq!(s.last_full, 0, "no full read since the first");
}

/// Fails the next `fail` SwitchInfo Gets to `path`, as a switch that drops them.
struct Flaky<'a> {
    sim: &'a mut SimFabric,
    path: DrPath,
    fail: usize,
    short_lft: bool,
}

impl Transport for Flaky<'_> {
    fn get(&mut self, t: &Target) -> Result<smp::Payload, SmpError> {
        if t.attr == smp::Attr::SwitchInfo && t.path == self.path && self.fail > 0 {
            self.fail -= 1;
            return Err(SmpError::Timeout {
                target: t.clone(),
                tries: 1,
            });
        }
        self.sim.get(t)
    }
    fn set(&mut self, t: &Target, d: &smp::Payload) -> Result<smp::Payload, SmpError> {
        self.sim.set(t, d)
    }
    /// With `short_lft`, a batch of LFT blocks comes back one short.
    fn get_all(&mut self, batch: &[Target]) -> Vec<Result<smp::Payload, SmpError>> {
        let mut out: Vec<_> = batch.iter().map(|t| self.get(t)).collect();
        if self.short_lft && batch.iter().all(|t| t.attr == smp::Attr::Lft) {
            out.pop();
        }
        out
    }
}

#[test]
fn a_switch_unanswered_at_the_first_read_is_unknown_then_read_again() {
    let (st, mut sim) = setup();
    let g = switches(&st)[2];
    let path = weft_deploy::discover(&mut sim).unwrap().nodes[&g]
        .path
        .clone();
    let mut t = Flaky {
        sim: &mut sim,
        path,
        fail: 1,
        short_lft: false,
    };
    let (mut w, first) = Watcher::begin(&mut t, "f").unwrap();
    assert!(
        first
            .changes
            .iter()
            .any(|c| matches!(c, Change::Unanswered { switch: Some(s), .. } if *s == g)),
        "{:?}",
        first.changes
    );
    assert!(first.heavy.unwrap().error.is_some());
    assert!(w.state().is_none(), "unknown until a read answers");
    // The sweep's SwitchInfo and the full read's own fail; its tables answer.
    t.fail = 2;
    let s = w.sweep(&mut t, false);
    let heavy = s.heavy.unwrap();
    assert_eq!(heavy.because, Some(watch::FullBecause::Partial));
    assert!(heavy.error.is_none());
    assert_eq!((s.number, s.last_full), (1, 1));
    assert!(w.state().is_some());
    // No top was read for it: the next sweep counts that as a change and reads its LFT.
    let s = w.sweep(&mut t, false);
    assert!(
        s.changes
            .iter()
            .any(|c| matches!(c, Change::Top { switch, .. } if *switch == g)),
        "{:?}",
        s.changes
    );
    let heavy = s.heavy.unwrap();
    assert!(!heavy.full && heavy.switches.contains(&g));
    assert_eq!((s.number, s.last_full), (2, 1));
}

#[test]
fn a_short_lft_batch_is_unknown_not_an_empty_table() {
    let (st, mut sim) = setup();
    let g = switches(&st)[1];
    let mut t = Flaky {
        sim: &mut sim,
        path: DrPath::local(),
        fail: 0,
        short_lft: true,
    };
    let (mut w, _) = Watcher::start(&mut t.sim, "f").unwrap();
    assert!(t.sim.reboot_switch(g.0));
    let s = w.sweep(&mut t, false);
    let heavy = s.heavy.unwrap();
    assert!(!heavy.full);
    assert!(heavy.error.is_some(), "{heavy:?}");
    assert!(w.state().is_none(), "unknown, not an empty LFT");
}

#[test]
fn a_host_cable_pulled_is_a_node_gone_without_a_full_read() {
    let (st, mut sim) = setup();
    let (mut w, _) = Watcher::start(&mut sim, "f").unwrap();
    let f = &st.fabric;
    // A host other than the SM's, by its cable's switch end.
    let sm = sm_port(&st);
    let l = f
        .links()
        .iter()
        .find(|l| {
            f.node(l.a.node).is_switch() != f.node(l.b.node).is_switch()
                && l.a.node != sm.node
                && l.b.node != sm.node
        })
        .unwrap();
    let (sw, host) = if f.node(l.a.node).is_switch() {
        (l.a, l.b)
    } else {
        (l.b, l.a)
    };
    assert!(sim.unlink(f.node(sw.node).guid().0, sw.port.0));
    let s = w.sweep(&mut sim, false);
    let heavy = s.heavy.unwrap();
    assert!(!heavy.full, "{:?}", heavy.because);
    // A cable down: every LFT is read again (an SM reroutes around it).
    assert_eq!(heavy.switches.len(), switches(&st).len());
    assert!(heavy.switches.contains(&f.node(sw.node).guid()));
    let live = w.state().unwrap();
    let fresh = weft_deploy::audit::audit(&mut sim, "f").unwrap().state;
    assert!(watch::difference(live, &fresh).is_empty());
    let diff = watch::difference(live, &st);
    assert_eq!(
        diff.nodes_gone.iter().map(|n| n.0).collect::<Vec<_>>(),
        [f.node(host.node).guid()]
    );
    assert!(!w.discovery().nodes.contains_key(&f.node(host.node).guid()));
    assert_eq!(proven(live), proven(&fresh));
}

#[test]
fn swapped_cables_keep_their_ports_up_and_are_read_whole() {
    let (st, mut sim) = setup();
    let (mut w, _) = Watcher::start(&mut sim, "f").unwrap();
    let f = &st.fabric;
    let g = switches(&st)[0];
    let id = f.find_guid(g).unwrap();
    let ports: Vec<u8> = f
        .links()
        .iter()
        .filter_map(|l| {
            if l.a.node == id {
                Some(l.a.port.0)
            } else if l.b.node == id {
                Some(l.b.port.0)
            } else {
                None
            }
        })
        .collect();
    assert!(sim.swap_cables(g.0, ports[0], ports[1]));
    let s = w.sweep(&mut sim, false);
    let heavy = s.heavy.unwrap();
    // Every port is still up: only the node across them tells.
    assert!(heavy.full, "{heavy:?}");
    assert!(
        matches!(heavy.because, Some(watch::FullBecause::Moved { .. })),
        "{:?}",
        heavy.because
    );
    let fresh = weft_deploy::audit::audit(&mut sim, "f").unwrap().state;
    assert!(watch::difference(w.state().unwrap(), &fresh).is_empty());
    assert!(!watch::difference(w.state().unwrap(), &st).is_empty());
}
