//! Any text → `journal::parse`: never a panic. A journal that parses, recovered back and
//! forward on Fig. 2 simulated: a report or a typed error, never a panic; a recovery that
//! refuses (the fabric holds no state the journal's steps pass through, a block it cannot
//! address) writes nothing.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use weft_deploy::apply::{recover, Direction};
use weft_deploy::sim::SimFabric;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(j) = weft_deploy::journal::parse(text) else {
        return;
    };
    // What parses is consistent: every event's step has blocks, the blocks in step order.
    assert!(j.blocks.windows(2).all(|w| w[0].step <= w[1].step));
    let (st, sm) = common::fig2();
    let dir = common::scratch();
    let path = dir.join("fuzz.journal");
    for direction in [Direction::Back, Direction::Forward] {
        std::fs::write(&path, text).expect("scratch journal");
        let mut sim = SimFabric::new(st.state(), *sm).expect("fig2 simulates");
        let before = sim.tables();
        match recover(&mut sim, &path, direction, &dir, &mut |_| {}) {
            Ok(_) => {}
            Err(e) => assert_eq!(sim.tables(), before, "refused ({e}), yet written"),
        }
    }
});
