//! `weft verify` end to end: every input form, every output format, certificates written and
//! re-checked, exit codes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use weft_fabric::FabricState;
use weft_verifier::testkit;

fn weft(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("weft-verify-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_state(dir: &Path, name: &str, st: &FabricState) -> String {
    let p = dir.join(name);
    std::fs::write(&p, st.to_json()).unwrap();
    p.to_str().unwrap().to_owned()
}

fn ring_minhop() -> FabricState {
    let f = testkit::ring(6, 1);
    testkit::route_minhop(&f, testkit::sequential_lids(&f))
}

fn ring_updown() -> FabricState {
    let f = testkit::ring(6, 1);
    testkit::route_updown(&f, testkit::sequential_lids(&f))
}

#[test]
fn proven_state_writes_a_certificate_that_rechecks() {
    let dir = temp_dir("proven");
    let state = write_state(&dir, "state.json", &ring_updown());
    let cert = dir.join("certificate.json");
    let out = weft(&[
        "verify",
        "--state",
        &state,
        "--write-certificate",
        cert.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(
        s.contains("✓ deadlock free") && s.contains("✓ connected"),
        "{s}"
    );
    let out = weft(&[
        "verify",
        "--state",
        &state,
        "--certificate",
        cert.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("✓ certificate accepted"));
    // The same certificate against a broken state is rejected (exit 1).
    let mut broken = ring_updown();
    let x = *broken.switches.keys().next().unwrap();
    broken
        .switches
        .get_mut(&x)
        .unwrap()
        .lft
        .set(weft_fabric::Lid(9), weft_fabric::PortNum(255));
    let bad = write_state(&dir, "broken.json", &broken);
    let out = weft(&[
        "verify",
        "--state",
        &bad,
        "--certificate",
        cert.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["accepted"], false);
}

#[test]
fn credit_loop_in_every_format() {
    let dir = temp_dir("loop");
    let state = write_state(&dir, "state.json", &ring_minhop());
    let out = weft(&["verify", "--state", &state]);
    assert_eq!(out.status.code(), Some(1));
    let human = text(&out.stdout).replace(&state, "STATE");
    insta::assert_snapshot!("verify_ring_minhop_human", human);
    let out = weft(&["verify", "--state", &state, "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"]["deadlock_free"]["result"], "violated");
    assert_eq!(v["report"]["credit_loops"].as_array().unwrap().len(), 2);
    let out = weft(&["verify", "--state", &state, "--format", "sarif"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], "2.1.0");
    let results = v["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert!(results
        .iter()
        .all(|r| r["ruleId"] == "credit-loop" && r["level"] == "error"));
    assert_eq!(
        results[0]["codeFlows"][0]["threadFlows"][0]["locations"]
            .as_array()
            .unwrap()
            .len(),
        6
    );
    // Both engines agree.
    let out = weft(&["verify", "--state", &state, "--engine", "both"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("z3: deadlock free Violated"));
}

#[test]
fn unreachable_routes_are_walked() {
    let dir = temp_dir("unreachable");
    let mut st = ring_updown();
    let r2 = st.fabric.find("R2").unwrap();
    // R2 drops everything for H4's LID.
    let h4 = st.fabric.find("H4_0").unwrap();
    let lid = st.lids.get(h4, weft_fabric::PortNum(1)).unwrap();
    st.switches
        .get_mut(&r2)
        .unwrap()
        .lft
        .set(lid, weft_fabric::PortNum(255));
    let state = write_state(&dir, "state.json", &st);
    let out = weft(&["verify", "--state", &state, "--scope", "hca-to-hca"]);
    assert_eq!(out.status.code(), Some(1));
    let s = text(&out.stdout);
    assert!(s.contains("fail at `R2`: no forwarding entry (255)"), "{s}");
    assert!(
        s.contains("help: set this LID's entry on the switch"),
        "{s}"
    );
}

#[test]
fn opensm_dumps_are_read() {
    let dir = temp_dir("dumps");
    let st = ring_minhop();
    let topo = dir.join("fabric.ibnetdiscover");
    std::fs::write(
        &topo,
        weft_fabric::ibnetdiscover::write(&st.fabric, Some(&st.lids)).unwrap(),
    )
    .unwrap();
    let lfts = dir.join("opensm-lfts.dump");
    std::fs::write(&lfts, weft_fabric::opensm::write_lfts(&st)).unwrap();
    let out = weft(&[
        "verify",
        "--topology",
        topo.to_str().unwrap(),
        "--lfts",
        lfts.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"]["connected"]["result"], "proven");
    assert_eq!(v["verdict"]["deadlock_free"]["result"], "violated");
    // A broken dump: exit 2 with the line.
    std::fs::write(
        &lfts,
        "Unicast lids [0-1] of switch Lid 1 guid 0x0000000000200000 ('R0'):\n0x0001 077\n",
    )
    .unwrap();
    let out = weft(&[
        "verify",
        "--topology",
        topo.to_str().unwrap(),
        "--lfts",
        lfts.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("lfts:2: `R0` has no port 77"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn weft_files_compile_and_verify() {
    let out = weft(&["verify", "examples/lab-16.weft"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn nothing_to_verify_is_exit_2() {
    let out = weft(&["verify"]);
    assert_eq!(out.status.code(), Some(2));
    let out = weft(&["verify", "--state", "/nonexistent/state.json"]);
    assert_eq!(out.status.code(), Some(2));
}
