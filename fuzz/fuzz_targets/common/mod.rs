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

/// Paper A's Fig. 2 (four vSwitch hypervisors, a tenant of eight VMs) as weft builds it, and
/// the port the SM sits on: the fabric the deploy targets (plan files, journals) are applied
/// to on the `sim` target, made once per process.
pub fn fig2() -> &'static (ValidState, weft_fabric::PortRef) {
    static STATE: OnceLock<(ValidState, weft_fabric::PortRef)> = OnceLock::new();
    STATE.get_or_init(|| {
        let src = include_str!("../../../examples/vswitch-fig2.weft");
        let c = weft_compiler::check("vswitch-fig2.weft", src, &weft_compiler::NoFiles);
        let e = c.elaborated.expect("fig2 elaborates");
        let st = weft_compiler::build::build(&e).expect("fig2 routes").state;
        let f = &st.fabric;
        let sm = weft_fabric::PortRef::new(f.find("vsw1").expect("vsw1"), 1);
        (st, sm)
    })
}

/// A private scratch directory of this process (locks, journals), emptied of journals.
pub fn scratch() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("weft-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    if let Ok(entries) = std::fs::read_dir(&d) {
        for e in entries.flatten() {
            if e.path().extension().is_some_and(|x| x == "journal") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    d
}
