//! Any text → `Plan::from_json`: never a panic. A plan that loads writes back to the same
//! plan, with its digest; and `weft apply` of it on Fig. 2 simulated (discovery, the wire
//! check, the re-proof on the tables read, the snapshot, the steps) ends with a report or a
//! typed error, never a panic: refused, nothing written; applied, the new state or (rolled
//! back) the old one, never neither (no other writer, no fault).
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use weft_deploy::apply::{apply, ApplyError, ApplyOptions, Final};
use weft_deploy::sim::SimFabric;
use weft_formats::plan::Plan;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(plan) = Plan::from_json(text) else {
        return;
    };
    let again = Plan::from_json(&plan.to_json()).expect("a written plan reads back");
    assert!(again.digest_matches(), "a written plan's digest is its own");
    assert_eq!(again.steps, plan.steps);
    assert_eq!(again.partitions, plan.partitions);
    assert_eq!(again.digest(), plan.digest());
    let (st, sm) = common::fig2();
    let mut sim = SimFabric::new(st.state(), *sm).expect("fig2 simulates");
    let before = sim.tables();
    let dir = common::scratch();
    let opts = ApplyOptions {
        vfs: true,
        ..ApplyOptions::new(dir.join("plan.journal"), dir.clone())
    };
    match apply(&mut sim, &plan, &opts, &mut |_| {}) {
        Ok(r) => match r.state {
            Final::New => {}
            Final::Old => assert_eq!(sim.tables(), before, "rolled back, yet changed: {r:?}"),
            _ => panic!("one writer, no fault, and the fabric in neither state: {r:?}"),
        },
        Err(ApplyError::Crashed(_)) => panic!("no crash was injected"),
        Err(e) => assert_eq!(sim.tables(), before, "refused ({e}), yet written"),
    }
});
