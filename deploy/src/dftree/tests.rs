//! The loop on the in-process simulated fabric: its PMAs answer counters the test sets
//! (compiled only `#[cfg(test)]`).

use super::*;
use crate::sim::{default_sm_port, SimFabric};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};
use weft_compiler::build::build;
use weft_compiler::{check, NoFiles};
use weft_traffic::dftree::Config;

/// A two-level tree of 4-port switches (8 hosts) with a dFtree class.
fn tree() -> FabricState {
    let text = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric small {\n    topology = fat_tree(levels: 2, radix: 4, switch: sb7800, hca: connectx5)\n    vls { budget = 2 }\n    qos { class bulk { lanes = dftree } }\n}\n";
    let c = check("t.weft", text, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    build(&c.elaborated.unwrap()).unwrap().state.into_inner()
}

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("weft-dftree-loop-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A policy that names the flows it is given, and remembers each call.
fn policy(calls: &Rc<RefCell<Vec<Vec<Flow>>>>) -> PolicyFn {
    let calls = Rc::clone(calls);
    Box::new(move |flows: &[Flow]| {
        calls.borrow_mut().push(flows.to_vec());
        Ok(flows.iter().fold("base\n".to_owned(), |t, f| {
            t + &format!("slow {:#x} {} -> {}\n", f.src_guid, f.src_port, f.dst_lid)
        }))
    })
}

fn read(d: &Path, name: &str) -> String {
    std::fs::read_to_string(d.join(name)).unwrap()
}

/// 100 ms between sweeps.
fn at(sweep: u64) -> u64 {
    sweep * 100_000_000
}

fn wall(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// A receiver whose switch port waits (a hot-spot) and a sender that waits at no utilisation
/// (its contributor): the sender's flow toward the receiver moves to the slow lane, the files
/// say so; a second congested sender on a node whose PMA counts no XmitWait is not judged;
/// when the hot-spot calms down for two sweeps the flow moves back; a clean stop with a flow
/// still slow moves it back too.
#[test]
fn the_loop_moves_a_contributor_to_the_slow_lane_and_back() {
    let st = tree();
    let controller = Controller::new(&st, Config::default()).unwrap();
    let ports = controller.ports();
    let (dst, src, mute) = (ports[6], ports[1], ports[3]);
    let mut sim = SimFabric::new(&st, default_sm_port(&st.fabric).unwrap()).unwrap();
    let found = crate::discover(&mut sim).unwrap();
    // `mute`'s node counts no XmitWait (CapabilityMask without bit 12).
    sim.pma.set_caps(mute.guid, 0x0200);
    let d = out_dir("moves");
    let calls = Rc::new(RefCell::new(Vec::new()));
    let mut l = Loop::new(&st, controller, &found, sim, &d, policy(&calls)).unwrap();
    // Every live port: 8 hosts, 16 host-facing and 8 up/down switch ports' ends.
    assert_eq!(l.ports().len(), 8 + 8 + 16);
    assert_eq!(
        (l.writes(), read(&d, "qos-policy.conf")),
        (1, "base\n".into())
    );
    assert!(read(&d, "repath.txt").starts_with("# weft dftree write 0, sweep 0: "));
    assert!(!d.join("repath.log").exists());

    let s = l.sweep(at(0), wall(0)).unwrap();
    assert!(s.moves.is_empty() && !s.wrote && s.unread.is_empty());
    assert_eq!(s.read.len(), l.ports().len());
    assert_eq!(
        s.news,
        [Unjudged::NoXmitWait(
            s.read.iter().find(|c| c.at.guid.0 == mute.guid).unwrap().at
        )]
    );

    // 1 000 000 ticks in 0.1 s: ten times the threshold.
    let congest = |l: &mut Loop<SimFabric>, senders: bool| {
        l.pma_mut()
            .pma
            .add(dst.switch_guid, dst.switch_port, 1_000_000, 0);
        if senders {
            l.pma_mut().pma.add(src.guid, src.port, 1_000_000, 0);
            l.pma_mut().pma.add(mute.guid, mute.port, 1_000_000, 0);
        }
    };
    congest(&mut l, true);
    let s = l.sweep(at(1), wall(1_795_796_401_123)).unwrap();
    assert_eq!(s.moves.hotspots_marked, [(dst.guid, dst.port)]);
    assert_eq!(s.moves.to_slow.len(), 1, "{:?}", s.moves);
    let flow = s.moves.to_slow[0];
    assert_eq!(
        (flow.src_guid, flow.src_port, flow.dst_lid),
        (src.guid, src.port, dst.lid)
    );
    assert!(s.judged.no_xmit_wait.contains(&Guid(mute.guid)));
    assert!(s.wrote && s.news.is_empty());
    assert_eq!(s.slow_flows, 1);
    assert_eq!(l.writes(), 2);
    assert_eq!(calls.borrow().last().unwrap(), &[flow]);
    assert_eq!(
        read(&d, "qos-policy.conf"),
        format!("base\nslow {:#x} {} -> {}\n", src.guid, src.port, dst.lid)
    );
    let line = format!(
        "{:#018x} {} {} {}",
        src.guid, src.port, dst.lid, flow.slow_sl
    );
    let txt = read(&d, "repath.txt");
    assert!(txt.starts_with("# weft dftree write 1, sweep 2: "), "{txt}");
    assert_eq!(txt.lines().skip(1).collect::<Vec<_>>(), [line.as_str()]);
    assert_eq!(
        read(&d, "repath.log"),
        format!("2026-11-27T16:20:01.123Z 2 {line}\n")
    );

    // Still hot: nothing new is written.
    congest(&mut l, true);
    let s = l.sweep(at(2), wall(2)).unwrap();
    assert!(!s.wrote && s.moves.to_slow.is_empty() && s.slow_flows == 1);
    // Calm for two sweeps: back to the fast lane.
    let s = l.sweep(at(3), wall(3)).unwrap();
    assert!(!s.wrote && s.moves.to_fast.is_empty());
    let s = l.sweep(at(4), wall(4)).unwrap();
    assert_eq!(s.moves.to_fast, [flow]);
    assert!(s.wrote && s.slow_flows == 0);
    assert_eq!(read(&d, "qos-policy.conf"), "base\n");
    let back = format!(
        "{:#018x} {} {} {}",
        src.guid, src.port, dst.lid, flow.fast_sl
    );
    assert_ne!(flow.fast_sl, flow.slow_sl);
    assert_eq!(read(&d, "repath.txt").lines().nth(1), Some(back.as_str()));
    assert_eq!(read(&d, "repath.log").lines().count(), 2);

    // Hot again, then a clean stop: the flow moves back and the base policy is written.
    congest(&mut l, true);
    assert!(l.sweep(at(5), wall(5)).unwrap().wrote);
    let stopped = l.stop(wall(1_795_796_402_000)).unwrap();
    assert_eq!(
        (stopped.moves.to_fast.as_slice(), stopped.writes),
        (&[flow][..], 5)
    );
    assert_eq!(read(&d, "qos-policy.conf"), "base\n");
    assert!(read(&d, "repath.txt").contains("sweep 6 (stop)"));
    assert!(read(&d, "repath.log").ends_with(&format!("2026-11-27T16:20:02.000Z 6 {back}\n")));
    std::fs::remove_dir_all(d).unwrap();
}

/// A saturated XmitWait reads as no change: the port is not judged, so a hot-spot it
/// contributes to does not release it through a reading that says nothing.
#[test]
fn a_saturated_port_is_named_once_and_not_judged() {
    let st = tree();
    let controller = Controller::new(&st, Config::default()).unwrap();
    let src = controller.ports()[2];
    let mut sim = SimFabric::new(&st, default_sm_port(&st.fabric).unwrap()).unwrap();
    let found = crate::discover(&mut sim).unwrap();
    sim.pma.add(src.guid, src.port, u64::from(u32::MAX), 0);
    let d = out_dir("saturated");
    let calls = Rc::new(RefCell::new(Vec::new()));
    let mut l = Loop::new(&st, controller, &found, sim, &d, policy(&calls)).unwrap();
    let s = l.sweep(at(0), wall(0)).unwrap();
    assert_eq!(s.judged.saturated, [(Guid(src.guid), src.port)]);
    assert_eq!(s.judged.counters.len(), s.read.len() - 1);
    assert!(matches!(
        s.news[..],
        [Unjudged::Saturated {
            xmit_wait: true,
            xmit_data: false,
            ..
        }]
    ));
    assert!(l.sweep(at(1), wall(1)).unwrap().news.is_empty());
    std::fs::remove_dir_all(d).unwrap();
}

/// A fabric that is not the state's is refused before anything is written; a fabric whose
/// PMAs do not answer stops the loop at the first sweep, naming the first port.
#[test]
fn a_wrong_fabric_is_refused_and_a_silent_one_stops_the_loop() {
    let st = tree();
    let mut sim = SimFabric::new(&st, default_sm_port(&st.fabric).unwrap()).unwrap();
    let found = crate::discover(&mut sim).unwrap();
    let d = out_dir("wrong");
    let calls = Rc::new(RefCell::new(Vec::new()));
    // The state says another LID for one host.
    let mut other = st.clone();
    let host = other
        .lids
        .base
        .iter_mut()
        .find(|(id, _)| !other.fabric.nodes()[id.index()].is_switch())
        .unwrap();
    let lid = host.1.values_mut().next().unwrap();
    lid.0 += 1000;
    let controller = Controller::new(&other, Config::default()).unwrap();
    let e = Loop::new(&other, controller, &found, sim.clone(), &d, policy(&calls))
        .err()
        .unwrap();
    assert!(
        matches!(&e, LoopError::WrongFabric(d) if !d.is_empty()),
        "{e}"
    );
    assert_eq!(e.code(), Some("weft::deploy::wrong_fabric"));
    assert!(calls.borrow().is_empty() && !d.join("qos-policy.conf").exists());

    // Every PMA silent: the LIDs the ports were listed at are no longer anyone's.
    let controller = Controller::new(&st, Config::default()).unwrap();
    let mut l = Loop::new(&st, controller, &found, sim, &d, policy(&calls)).unwrap();
    l.ports.iter_mut().for_each(|p| p.lid = 0xbfff);
    let e = l.sweep(at(0), wall(0)).unwrap_err();
    assert!(matches!(e, LoopError::NothingRead { sweep: 1, .. }), "{e}");
    assert_eq!(e.code(), Some("weft::deploy::pma_timeout"));
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn repath_lines() {
    let flow = |src: u64, dst: u16| Flow {
        src_guid: src,
        src_port: 1,
        src_lid: 9,
        dst_lid: dst,
        slow_sl: 1,
        fast_sl: 0,
    };
    let moves = Moves {
        hotspots_marked: vec![(0x700, 1)],
        hotspots_cleared: vec![(0x600, 1)],
        to_slow: vec![flow(0x400, 4)],
        to_fast: vec![flow(0x500, 3)],
    };
    let r = repath(3, 7, "", &moves);
    assert!(r.starts_with("# weft dftree write 3, sweep 7: "), "{r}");
    assert_eq!(
        r.lines().skip(1).collect::<Vec<_>>(),
        ["0x0000000000000400 1 4 1", "0x0000000000000500 1 3 0"]
    );
    assert_eq!(
        repath_log("2026-11-27T16:20:01.123Z", 7, &moves),
        "2026-11-27T16:20:01.123Z 7 0x0000000000000400 1 4 1\n\
         2026-11-27T16:20:01.123Z 7 0x0000000000000500 1 3 0\n"
    );
    assert_eq!(repath_log("t", 8, &Moves::default()), "");
}
