//! Any text → `ValidState::from_json`: never a panic; what loads writes back to the same
//! state, and the verifier runs on it without panicking.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use weft_fabric::ValidState;
use weft_formats::state_json::{FromJson, ToJson};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(st) = ValidState::from_json(text) {
        let again = ValidState::from_json(&st.to_json()).expect("written state reads back");
        assert_eq!(*again, *st, "state.json round trip changed the state");
        common::verify(&st);
    }
});
