//! SL→VL and VL arbitration writes over MADs on ibsim: the 5×5 torus built with `updn` (no
//! QoS: every SL on VL 0) and with `layered` (two layers: SLs 0 and 1 on VLs 0 and 1, every
//! other SL dropped, and VL arbitration on every port). OpenSM loads the `updn` build (without
//! QoS). A plan of `weft_plan::qos::writes(updn, layered)` and nothing else, assembled here,
//! is refused: ibsim's ports hold tables of their own, not the build's "every SL on VL 0" (a
//! conflict, named). The plan of `writes(what weft audit read, layered)` lands with `weft
//! apply --target mad`, and `weft audit --target mad` reads back exactly the layered build's
//! SL→VL and VL arbitration tables. The same plan again is refused: its tables moved on.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use crate::support::weft;
use std::path::Path;
use std::time::Duration;
use weft_fabric::ValidState;
use weft_formats::plan::SmpWrite;
use weft_formats::state_json::FromJson;
use weft_tests::ibsim::{self, Ibsim, Limits};

/// The torus example on a 5×5 grid, routed by `engine`.
fn torus(engine: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let src = std::fs::read_to_string(root.join("examples/torus-4x4.weft")).unwrap();
    let src = src
        .replace("dims: [4, 4]", "dims: [5, 5]")
        .replace("engine = updn", &format!("engine = {engine}"));
    assert!(src.contains("dims: [5, 5]") && src.contains(engine));
    src
}

fn build(d: &Path, engine: &str) -> ValidState {
    let src = d.join(format!("{engine}.weft"));
    std::fs::write(&src, torus(engine)).unwrap();
    let out = d.join(engine);
    let o = weft(&[
        "build",
        src.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    ValidState::from_json(&std::fs::read_to_string(out.join("state.json")).unwrap()).unwrap()
}

/// A port's QoS tables: its node's GUID, its number, its SL→VL table and arbitration.
type PortQos = (u64, u8, Option<[u8; 16]>, Option<weft_fabric::VlArb>);

#[test]
fn qos_writes_land_over_mads_and_audit_reads_the_layered_tables() {
    let Some(tools) = ibsim::require("qos_writes_land_over_mads", &["opensm"]) else {
        return;
    };
    let d = crate::support::scratch("qos-mad");
    let p = |f: &str| d.join(f).to_string_lossy().into_owned();
    let (updn, layered) = (build(&d, "updn"), build(&d, "layered"));
    // The layered build sets QoS tables, the updn build none.
    assert!(updn.switches.values().all(|s| !s.has_sl2vl()) && updn.ports.is_empty());
    assert!(layered.switches.values().all(|s| s.sl2vl_all.is_some()));
    let writes = weft_plan::qos::writes(&updn, &layered);
    let count = |w: &[SmpWrite], f: fn(&SmpWrite) -> bool| w.iter().filter(|x| f(x)).count();
    let kinds = |w: &[SmpWrite]| {
        (
            count(w, |x| matches!(x, SmpWrite::Sl2vl { .. })),
            count(w, |x| matches!(x, SmpWrite::VlArb { .. })),
        )
    };
    // 25 switches: 6 live ports each (4 torus links, 2 hosts), inputs those and port 0;
    // 50 hosts; arbitration on every live port, one low-priority block each.
    assert_eq!(kinds(&writes), (25 * 7 * 6 + 50, 25 * 6 + 50));
    assert!(weft_plan::qos::high_limit_changes(&updn, &layered).is_empty());
    let plan = weft_tests::one_step_plan(&updn, &layered, writes);
    std::fs::write(d.join("updn-plan.json"), plan.to_json()).unwrap();

    let net = weft_formats::ibnetdiscover::write(&updn.fabric, Some(&updn.lids)).unwrap();
    let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(&updn.fabric))).unwrap();
    sim.load_with_opensm(&d.join("updn/lfts.dump"), &updn)
        .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    let weft_bin = crate::support::WEFT;
    // `reprove`: proven again on the fabric (the default), else on the proof the plan
    // carries (`--no-reprove`).
    let apply_with = |plan: &str, journal: &str, reprove: bool| {
        let (plan, lock, journal) = (p(plan), p(""), p(journal));
        let mut args = vec![
            "apply",
            "--target",
            "mad",
            &plan,
            "--lock-dir",
            &lock,
            "--journal",
            &journal,
        ];
        if !reprove {
            args.push("--no-reprove");
        }
        sim.run_any(weft_bin, &args, &[], Duration::from_secs(300))
    };
    let apply = |plan: &str, journal: &str| apply_with(plan, journal, false);
    let audit = |file: &str| {
        sim.audit_state(weft_bin, &d.join(file), Duration::from_secs(300))
            .0
    };
    // ibsim's ports do not hold what the updn build says (every SL on VL 0, no arbitration):
    // they start with SL n on VL n (SL 15 on VL 7) and arbitration tables of their own, which
    // OpenSM without QoS leaves. The plan from the build's tables is refused, naming the
    // first table that differs; nothing is written.
    let o = apply("updn-plan.json", "a.journal");
    assert_eq!(o.status.code(), Some(1), "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stderr.contains(
            "switch 0x0002c90000000100 SL→VL input 0 output 1 does not hold the plan's old \
             value; the fabric moved on since the plan was made; nothing was written"
        ),
        "{}",
        o.stderr
    );
    let before = audit("before.json");
    assert!(before
        .switches
        .values()
        .all(|s| s.sl2vl.is_empty() && s.sl2vl_all.is_some_and(|t| t[15] == 7)));

    // From what the fabric holds to the layered build's tables.
    let writes = weft_plan::qos::writes(&before, &layered);
    // The high-priority tables ibsim starts with (VL 0, weight 4) are cleared too.
    assert_eq!(kinds(&writes), (25 * 7 * 6 + 50, 2 * (25 * 6 + 50)));
    let plan = weft_tests::one_step_plan(&before, &layered, writes);
    std::fs::write(d.join("plan.json"), plan.to_json()).unwrap();
    // Proven again on the fabric it is refused: in one step, the high-priority block that
    // schedules VL 0 is cleared while the low-priority block that takes VL 0 on may not have
    // landed (and its tables send SLs 2–14 to VL 15: any SL a table sends to a data VL may be
    // in use, the SLs hosts use are not read).
    let o = apply_with("plan.json", "r.journal", true);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stderr.contains(
            "step 1 of the plan is not safe on the fabric as it runs: 0x0002c90000000100 port \
             1: VL 0 is scheduled before the step and not in some mix of its VL arbitration \
             writes (a packet on it would stall); nothing was written"
        ),
        "{}",
        o.stderr
    );
    // Written on the proof the plan carries, saying what that proof does not cover.
    let o = apply("plan.json", "b.journal");
    assert!(
        o.stdout.contains(&format!(
            "the fabric holds the new state: 1 steps landed, {} Set",
            plan.smps()
        )) && o.stdout.contains(
            "the plan's 1500 SL→VL and VL arbitration write(s) are not part of any proof it \
             carries (`weft plan` does not plan them): which VL a packet takes while they land, \
             and whether it is dropped or scheduled, is not proven"
        ),
        "{}\n{}",
        o.stdout,
        o.stderr
    );

    // `weft audit` reads the layered build's SL→VL and VL arbitration tables, switch by
    // switch and port by port.
    let st = audit("after.json");
    let f = &layered.fabric;
    for (id, want) in &layered.switches {
        let got = &st.switches[&st.fabric.find_guid(f.node(*id).guid()).unwrap()];
        assert_eq!(
            (&got.sl2vl, got.sl2vl_all),
            (&want.sl2vl, want.sl2vl_all),
            "{}",
            f.node(*id).name()
        );
    }
    let qos = |s: &ValidState| -> Vec<PortQos> {
        s.ports
            .iter()
            .filter(|(_, p)| p.sl2vl.is_some() || p.vlarb.is_some())
            .map(|(r, p)| {
                (
                    s.fabric.node(r.node).guid().0,
                    r.port.0,
                    p.sl2vl,
                    p.vlarb.clone(),
                )
            })
            .collect()
    };
    assert_eq!(qos(&st), qos(&layered));
    assert_eq!(qos(&layered).len(), 25 * 6 + 50);
    assert!(weft_plan::qos::writes(&st, &layered).is_empty());

    // The same plan again: its tables no longer hold its old content; nothing is written.
    let o = apply("plan.json", "c.journal");
    assert_eq!(o.status.code(), Some(1), "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stderr
            .contains("the fabric moved on since the plan was made; nothing was written"),
        "{}",
        o.stderr
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `weft apply PLAN --target opensm` with SL→VL and VL arbitration writes in the plan: refused
/// under `weft::deploy::not_built_qos`, saying how many and what to do; nothing else runs.
#[test]
fn the_opensm_hand_off_refuses_a_plan_with_qos_writes() {
    let d = crate::support::scratch("qos-osm");
    let (updn, layered) = (build(&d, "updn"), build(&d, "layered"));
    let writes = weft_plan::qos::writes(&updn, &layered);
    let n = writes.len();
    let plan = d.join("plan.json");
    std::fs::write(
        &plan,
        weft_tests::one_step_plan(&updn, &layered, writes).to_json(),
    )
    .unwrap();
    let o = weft(&["apply", plan.to_str().unwrap(), "--target", "opensm"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("[weft::deploy::not_built_qos]"), "{err}");
    assert!(
        err.contains(&format!(
            "not built yet: handing a plan's SL→VL and VL arbitration writes ({n} in this plan) \
             to OpenSM"
        )),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
