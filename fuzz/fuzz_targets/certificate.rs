//! Any text → `Certificate::from_json` and the checker against lab-16's state (proven) and a
//! broken copy (one LFT entry dropped): never a panic, and the broken state is never accepted.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use weft_fabric::{PortNum, ValidState};
use weft_verifier::certificate::{check, Request};
use weft_verifier::Certificate;

fn broken() -> &'static ValidState {
    static B: OnceLock<ValidState> = OnceLock::new();
    B.get_or_init(|| {
        let mut st = common::lab16().clone().into_inner();
        let leaf = st.fabric.find("leaf1").expect("leaf1");
        let lab = st.fabric.find("lab01").expect("lab01");
        let lid = st.lids.get(lab, PortNum(1)).expect("LID");
        if let Some(sw) = st.switches.get_mut(&leaf) {
            sw.lft.set(lid, PortNum(255));
        }
        ValidState::new(st).expect("still valid")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(cert) = Certificate::from_json(text) else {
        return;
    };
    let req = Request::default();
    let _ = check(common::lab16(), &cert, &req);
    assert!(
        check(broken(), &cert, &req).is_err(),
        "a certificate was accepted for a state with an unreachable route"
    );
});
