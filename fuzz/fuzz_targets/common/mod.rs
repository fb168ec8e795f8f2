//! The fixture every state fuzz target reads against: lab-16 (6 switches, 16 hosts, one link
//! down) as weft builds it, made once per process.

#![allow(dead_code)]

use std::sync::OnceLock;
use weft_fabric::ValidState;

/// lab-16's routed, validated state.
pub fn lab16() -> &'static ValidState {
    static STATE: OnceLock<ValidState> = OnceLock::new();
    STATE.get_or_init(|| {
        let src = include_str!("../../../examples/lab-16.weft");
        let c = weft_compiler::check("lab-16.weft", src, &weft_compiler::NoFiles);
        let e = c.elaborated.expect("lab-16 elaborates");
        weft_compiler::build::build(&e).expect("lab-16 routes").state
    })
}

/// Verifies `state` with the explicit engine (never a panic); with `certificate`, an honest
/// certificate of a proven state must be accepted by the checker.
pub fn verify(state: &ValidState) {
    let opts = weft_verifier::Options {
        max_listed: 5,
        ..weft_verifier::Options::default()
    };
    let r = weft_verifier::verify(state, &opts);
    if let Some(cert) = &r.certificate {
        let req = weft_verifier::certificate::Request::default();
        assert!(
            weft_verifier::certificate::check(state, cert, &req).is_ok(),
            "the checker refuses the certificate of a proven state"
        );
    }
}
