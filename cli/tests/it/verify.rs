//! `weft verify` end to end: every input form, every output format, certificates written and
//! re-checked, exit codes.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use crate::support::weft;
use std::path::{Path, PathBuf};
use std::process::Output;
use weft_fabric::FabricState;
use weft_formats::state_json::{FromJson, ToJson};
use weft_verifier::testkit;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn temp_dir(name: &str) -> crate::support::Scratch {
    crate::support::scratch(&format!("verify-{name}"))
}

fn write_state(dir: &Path, name: &str, st: &FabricState) -> String {
    let p = dir.join(name);
    std::fs::write(&p, st.to_json()).unwrap();
    p.to_str().unwrap().to_owned()
}

/// `weft build` of `src` in `dir`: the state's path and text.
fn built_state(dir: &Path, src: &str) -> (PathBuf, String) {
    let file = dir.join("t.weft");
    std::fs::write(&file, src).unwrap();
    let out_dir = dir.join("out");
    let out = weft(&[
        "build",
        file.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let state = out_dir.join("state.json");
    let text = std::fs::read_to_string(&state).unwrap();
    (state, text)
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
        s.contains("✓ deadlock freedom and connectivity, all 12 LIDs (6 HCA, 6 switch), HCA and switch pairs"),
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
    let loops = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "weft::credit_loop")
        .count();
    assert_eq!(loops, 2, "{v}");
    assert!(
        v["report"].get("credit_loops").is_none(),
        "listed once: {v}"
    );
    let out = weft(&["verify", "--state", &state, "--format", "sarif"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], "2.1.0");
    let results = v["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert!(results
        .iter()
        .all(|r| r["ruleId"] == "weft::credit_loop" && r["level"] == "error"));
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
    assert!(text(&out.stdout).contains("z3: deadlock free violated"));
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
    assert!(
        s.contains(
            "× 1 HCA → HCA route(s) fail at `R2`: no forwarding entry (255) [weft::unreachable]"
        ),
        "{s}"
    );
    assert!(
        s.contains("help: set the entries for these LIDs on those switches"),
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
        weft_formats::ibnetdiscover::write(&st.fabric, Some(&st.lids)).unwrap(),
    )
    .unwrap();
    let lfts = dir.join("opensm-lfts.dump");
    std::fs::write(&lfts, weft_formats::opensm::write_lfts(&st)).unwrap();
    let dumps = |format: &str| {
        weft(&[
            "verify",
            "--topology",
            topo.to_str().unwrap(),
            "--lfts",
            lfts.to_str().unwrap(),
            "--format",
            format,
        ])
    };
    let out = dumps("json");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"]["connected"]["result"], "proven");
    assert_eq!(v["verdict"]["deadlock_free"]["result"], "violated");
    // A broken dump: exit 1 (a finding about the input) with the file and line.
    std::fs::write(
        &lfts,
        "Unicast lids [0-1] of switch Lid 1 guid 0x0000000000200000 ('R0'):\n0x0001 077\n",
    )
    .unwrap();
    let out = dumps("human");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!(
            "{}:2:1: `R0` has no port 77 (it has 3) [weft::opensm]",
            lfts.display()
        )),
        "{}",
        text(&out.stderr)
    );
    let out = dumps("json");
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], "weft-verify", "{v}");
    assert_eq!(v["findings"][0]["code"], "weft::opensm", "{v}");
    assert_eq!(v["findings"][0]["place"]["line"], 2, "{v}");
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

/// Issue finding: on lab-16, leaf1 sends SL 0 toward lab01 on VL 15 (every route to lab01
/// fails), and leaf1's label for lab01's LID is set from 1 to 0 in the healthy certificate.
/// Both input paths refuse it and name the label; the untouched certificate is refused at
/// the dead last hop.
#[test]
fn lab16_last_hop_label_zero_is_refused_on_every_input_path() {
    let dir = temp_dir("lab16-tamper");
    let out = weft(&[
        "build",
        "examples/lab-16.weft",
        "-o",
        dir.join("build").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let state_path = dir.join("build/state.json");
    let cert_path = dir.join("cert.json");
    let out = weft(&[
        "verify",
        "--state",
        state_path.to_str().unwrap(),
        "--write-certificate",
        cert_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // The broken state: leaf1's SL 0 toward lab01's port on VL 15.
    let st =
        weft_fabric::ValidState::from_json(&std::fs::read_to_string(&state_path).unwrap()).unwrap();
    let f = &st.fabric;
    let leaf1 = f.find("leaf1").unwrap();
    let lab01 = f.find("lab01").unwrap();
    let (peer, _) = f.peer(weft_fabric::PortRef::new(lab01, 1)).unwrap();
    assert_eq!(peer.node, leaf1);
    let lab01_lid = st.lids.get(lab01, weft_fabric::PortNum(1)).unwrap();
    let mut broken = st.clone().into_inner();
    let ports = f.node(leaf1).spec.port_count;
    let sw = broken.switches.get_mut(&leaf1).unwrap();
    for i in 0..=ports {
        for o in 1..=ports {
            let mut vl = [0u8; 16];
            if o == peer.port.0 {
                vl[0] = 15;
            }
            sw.sl2vl.push(weft_fabric::Sl2VlRow {
                in_port: i,
                out_port: o,
                vl,
            });
        }
    }
    let broken = weft_fabric::ValidState::new(broken).unwrap();
    let broken_path = write_state(&dir, "broken.json", &broken);
    let sl2vl_path = dir.join("broken.sl2vl");
    std::fs::write(&sl2vl_path, weft_formats::opensm::write_sl2vl(&broken)).unwrap();
    // The explicit engine: 21 routes toward lab01 fail.
    let out = weft(&["verify", "--state", &broken_path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("21 route(s) fail"),
        "{}",
        text(&out.stdout)
    );
    // The tampered certificate: leaf1's label for lab01's LID from 1 to 0.
    let mut cert =
        weft_verifier::Certificate::from_json(&std::fs::read_to_string(&cert_path).unwrap())
            .unwrap();
    let k = cert
        .connected
        .switches
        .iter()
        .position(|g| *g == format!("{:#018x}", f.node(leaf1).guid().0))
        .unwrap();
    let d = cert
        .connected
        .destinations
        .iter_mut()
        .find(|d| d.lid == lab01_lid.0)
        .unwrap();
    assert_eq!(d.labels[k], 1);
    d.labels[k] = 0;
    let tampered = dir.join("tampered.json");
    std::fs::write(&tampered, cert.to_json()).unwrap();
    let build = dir.join("build");
    let inputs: [Vec<String>; 2] = [
        vec!["--state".into(), broken_path.clone()],
        vec![
            "--topology".into(),
            build.join("topology.net").to_str().unwrap().into(),
            "--lfts".into(),
            build.join("lfts.dump").to_str().unwrap().into(),
            "--sl2vl".into(),
            sl2vl_path.to_str().unwrap().into(),
        ],
    ];
    for input in &inputs {
        let mut args: Vec<&str> = vec!["verify"];
        args.extend(input.iter().map(String::as_str));
        let mut with = args.clone();
        with.extend(["--certificate", tampered.to_str().unwrap()]);
        let out = weft(&with);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
        assert_eq!(
            text(&out.stdout),
            "× certificate rejected: toward LID 1, `leaf1` has label 0 but does not own the destination\n"
        );
        let mut sarif = with.clone();
        sarif.extend(["--format", "sarif"]);
        let out = weft(&sarif);
        assert_eq!(out.status.code(), Some(1));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["version"], "2.1.0");
        assert_eq!(
            v["runs"][0]["results"][0]["ruleId"],
            "weft::certificate::label"
        );
        // The honest certificate is refused too, at the dead last hop.
        let mut honest = args.clone();
        honest.extend(["--certificate", cert_path.to_str().unwrap()]);
        let out = weft(&honest);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
        assert!(text(&out.stdout).contains("VL 15"), "{}", text(&out.stdout));
    }
}

/// A certificate of `hca-to-hca` pairs does not prove `all` pairs; the output says which
/// pairs a certificate proved.
#[test]
fn certificate_scope_is_honoured_and_said() {
    let dir = temp_dir("scope");
    let state = write_state(&dir, "state.json", &ring_updown());
    let cert = dir.join("hca.json");
    let out = weft(&[
        "verify",
        "--state",
        &state,
        "--scope",
        "hca-to-hca",
        "--write-certificate",
        cert.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let out = weft(&[
        "verify",
        "--state",
        &state,
        "--certificate",
        cert.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(text(&out.stdout), @"× certificate rejected: the certificate covers `hca-to-hca` pairs, but `all` pairs were asked for");
    let out = weft(&[
        "verify",
        "--state",
        &state,
        "--scope",
        "hca-to-hca",
        "--certificate",
        cert.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!(text(&out.stdout), @r"
    ✓ certificate accepted: deadlock freedom and connectivity, 6 HCA LIDs, HCA pairs only (switch LIDs not covered) (30 routes, 60 route states checked)
      traffic: unicast only: no multicast tables were given
    ");
}

/// Every LFT entry of every switch at port 1: nearly every route fails. The report is patterns,
/// not routes; `--max-listed` bounds how many are shown (human and JSON alike), and the counts
/// still add up to every failed route.
#[test]
fn every_entry_at_port_1_is_reported_as_bounded_patterns() {
    let dir = temp_dir("port1");
    let out = weft(&[
        "build",
        "examples/lab-16.weft",
        "-o",
        dir.join("build").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let st = weft_fabric::ValidState::from_json(
        &std::fs::read_to_string(dir.join("build/state.json")).unwrap(),
    )
    .unwrap();
    let mut broken = st.into_inner();
    for sw in broken.switches.values_mut() {
        for lid in 1..=sw.lft.top().0 {
            sw.lft.set(weft_fabric::Lid(lid), weft_fabric::PortNum(1));
        }
    }
    let path = write_state(&dir, "port1.json", &broken);
    let out = weft(&["verify", "--state", &path, "--max-listed", "3"]);
    assert_eq!(out.status.code(), Some(1));
    let human = text(&out.stdout).replace(&path, "port1.json");
    insta::assert_snapshot!("verify_every_entry_port_1_max_listed_3", human);

    let out = weft(&[
        "verify",
        "--state",
        &path,
        "--max-listed",
        "3",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let report = &v["report"];
    let failures: Vec<&serde_json::Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "weft::unreachable")
        .map(|f| &f["properties"]["pattern"])
        .collect();
    assert!(!failures.is_empty(), "{v}");
    let total: u64 = failures.iter().map(|p| p["routes"].as_u64().unwrap()).sum();
    assert_eq!(total, report["failed_routes"].as_u64().unwrap());
    let listed: usize = failures
        .iter()
        .map(|p| p["listed"].as_array().map_or(0, Vec::len))
        .sum();
    assert!(listed <= 3, "{listed} routes listed with --max-listed 3");
    assert!(
        failures
            .iter()
            .all(|p| p["witnesses"].as_array().unwrap().len() <= 3),
        "at most 3 witnesses per pattern"
    );
}

/// Tenants: a built state is proven isolated; the same state with one P_Key table made to
/// leak (a `bob` host given `alice`'s key) or to cut (an `alice` host without its key) is
/// refused naming the pair of ports, with exit 1, in human and JSON output.
#[test]
fn leaking_and_cut_pkey_tables_are_refused_naming_the_pair() {
    let dir = temp_dir("isolation");
    let (state_path, state) = built_state(
        &dir,
        "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, radix: 4, switch: sb7800, hca: connectx5)\n    tenant alice { pkey = 0x8001, hosts = cn001..=cn003 }\n    tenant bob { pkey = 0x8002, hosts = [cn004, cn005] }\n    shared storage { pkey = 0x8010, hosts = cn007, members = limited }\n    sm on leaf1\n}\n",
    );
    let out = weft(&["verify", "--state", state_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).contains("connectivity and isolation"),
        "{}",
        text(&out.stdout)
    );
    // cn004 is 0x…0a00, cn001 0x…0700.
    let bob = r#"{"guid":"0x0002c90000000a00","port":1,"pkeys":["0x7fff","0x8002","0x0010"]}"#;
    let alice = r#"{"guid":"0x0002c90000000700","port":1,"pkeys":["0x7fff","0x8001","0x0010"]}"#;
    assert!(state.contains(bob) && state.contains(alice), "{state}");
    let leak = state.replace(bob, &bob.replace("\"0x0010\"", "\"0x0010\",\"0x0001\""));
    let cut = state.replace(alice, &alice.replace("\"0x8001\",", ""));
    let mut shown = String::new();
    for (name, edited) in [("leak", leak), ("cut", cut)] {
        let p = dir.join(format!("{name}.json"));
        std::fs::write(&p, edited).unwrap();
        let p = p.to_str().unwrap();
        let out = weft(&["verify", "--state", p]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        shown += &format!("## {name}\n{}\n", text(&out.stdout).replace(p, "STATE"));
        let out = weft(&["verify", "--state", p, "--format", "json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["verdict"]["isolated"]["result"], "violated", "{v}");
        assert_eq!(v["verdict"]["connected"]["result"], "proven", "{v}");
        let f = &v["findings"][0];
        assert_eq!(f["code"], "weft::partition_breach", "{v}");
        assert_eq!(
            f["properties"]["breach"]["a"]["node"]["name"], "cn001",
            "{v}"
        );
    }
    insta::assert_snapshot!("verify_isolation_leak_and_cut", shown);
    let _ = std::fs::remove_dir_all(dir);
}

/// A tenant's class: the built state proves alice's traffic stays on `bulk`'s SL and VL; a
/// path SL moved to another class's SL, or a switch putting `bulk`'s SL on another VL, is
/// refused naming the pair or the switch.
#[test]
fn a_tenants_traffic_leaving_its_class_is_refused() {
    let dir = temp_dir("tenant-class");
    let (_, state) = built_state(
        &dir,
        "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric tc {\n    topology = fat_tree(levels: 2, radix: 8, switch: sb7800, hca: connectx5)\n    vls { budget = 4 }\n    qos {\n        class compute { weight = 8 }\n        class bulk { weight = 2, match { service_id = 0x100 } }\n    }\n    tenant alice { pkey = 0x8001, hosts = cn001..=cn006, class = bulk }\n    tenant bob { pkey = 0x8002, hosts = cn007..=cn012 }\n    sm on leaf1\n}\n",
    );
    // cn001 is 0x…0d00 (LIDs 1..=6 are alice's hosts); leaf1 is 0x…0100.
    let path = r#"["0x0002c90000000d00",1,1,6,[1]]"#;
    let map = r#"{"guid":"0x0002c90000000100","lft":"#;
    assert!(state.contains(path) && state.contains(map), "{state}");
    let off_sl = state.replace(path, r#"["0x0002c90000000d00",1,1,6,[0]]"#);
    let leaf1 = state.lines().find(|l| l.contains(map)).unwrap().to_owned();
    let off_vl = state.replace(
        &leaf1,
        &leaf1.replace(r#""sl2vl_all":[0,1,"#, r#""sl2vl_all":[0,0,"#),
    );
    assert_ne!(off_vl, state);
    let mut shown = String::new();
    for (name, edited) in [("another SL", off_sl), ("another VL", off_vl)] {
        let p = dir.join("edited.json");
        std::fs::write(&p, edited).unwrap();
        let p = p.to_str().unwrap();
        let out = weft(&["verify", "--state", p]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out.stdout));
        shown += &format!("## {name}\n{}\n", text(&out.stdout).replace(p, "STATE"));
    }
    insta::assert_snapshot!("verify_tenant_class", shown);
    let _ = std::fs::remove_dir_all(dir);
}

/// The tenants of [`leaking_and_cut_pkey_tables_are_refused_naming_the_pair`], built.
const TENANTS: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, radix: 4, switch: sb7800, hca: connectx5)\n    tenant alice { pkey = 0x8001, hosts = cn001..=cn003 }\n    tenant bob { pkey = 0x8002, hosts = [cn004, cn005] }\n    sm on leaf1\n}\n";

/// Where the SM runs: a state that does not say leaves `isolated` unknown (exit 1, and the
/// reason); `--sm` says it — on a host holding only the limited default key, a violation naming
/// the SM's port (exit 1); on a switch's port 0, proven (exit 0); on no such node, an error.
#[test]
fn isolated_needs_to_know_where_the_sm_runs() {
    let dir = temp_dir("sm");
    let (_, state) = built_state(&dir, TENANTS);
    let mut v: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert_eq!(
        v["sm"],
        serde_json::json!([["0x0002c90000000100", 0]]),
        "leaf1's port 0"
    );
    v.as_object_mut().unwrap().remove("sm");
    let p = dir.join("no-sm.json");
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    let p = p.to_str().unwrap();
    let out = weft(&["verify", "--state", p]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("does not say where the SM runs"),
        "{}",
        text(&out.stdout)
    );
    let out = weft(&["verify", "--state", p, "--sm", "cn006"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let shown = text(&out.stdout).replace(p, "STATE");
    assert!(
        shown.contains("the SM runs on `cn006` port 1, which holds the default partition's key only as limited member (0x7fff)"),
        "{shown}"
    );
    let out = weft(&["verify", "--state", p, "--sm", "leaf1", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["verdict"]["isolated"]["result"], "proven", "{j}");
    assert_eq!(
        j["report"]["isolation"]["sm"][0]["node"]["name"], "leaf1",
        "{j}"
    );
    let out = weft(&["verify", "--state", p, "--sm", "nobody"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no node `nobody`"),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A VL the sending port's arbitration never sends: the tenant-class tree's `bulk` class runs
/// on VL 1; leaf1's ports given tables without VL 1 stop every route on SL 1 there. Exit 1;
/// the human report names the port and VL, JSON gives the reason's kind and why, SARIF the
/// channel (node, port, VL) as a logical location.
#[test]
fn an_unscheduled_vl_is_refused_in_every_format() {
    let dir = temp_dir("vlarb");
    let (_, state) = built_state(
        &dir,
        "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric tc {\n    topology = fat_tree(levels: 2, radix: 8, switch: sb7800, hca: connectx5)\n    vls { budget = 4 }\n    qos {\n        class compute { weight = 8 }\n        class bulk { weight = 2, match { service_id = 0x100 } }\n    }\n}\n",
    );
    let mut v: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert_eq!(v["max_vls"], 2, "two VLs used: the SM operates two");
    let mut edited = 0;
    for port in v["ports"].as_array_mut().unwrap() {
        if port["guid"] == "0x0002c90000000100" {
            for table in ["high", "low"] {
                port["vlarb"][table]
                    .as_array_mut()
                    .unwrap()
                    .retain(|e| e["vl"] != 1);
            }
            edited += 1;
        }
    }
    assert!(edited > 0);
    let p = dir.join("unscheduled.json");
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    let p = p.to_str().unwrap();
    let out = weft(&["verify", "--state", p]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let human = text(&out.stdout);
    assert!(
        human.contains("whose VL arbitration tables do not name VL 1: it is never sent")
            && human.contains("give the VL a weight above 0"),
        "{human}"
    );
    let out = weft(&["verify", "--state", p, "--format", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pattern = &j["findings"][0]["properties"]["pattern"];
    let w = &pattern["witnesses"][0];
    assert_eq!(pattern["reason"], "vl-not-scheduled", "{j}");
    assert_eq!(w["reason"]["kind"], "vl-not-scheduled", "{w}");
    assert_eq!(w["reason"]["vl"], 1, "{w}");
    assert_eq!(w["reason"]["why"], "not-listed", "{w}");
    assert_eq!(w["at"]["name"], "leaf1", "{w}");
    let out = weft(&["verify", "--state", p, "--format", "sarif"]);
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let locations = s["runs"][0]["results"][0]["locations"].to_string();
    assert!(
        locations.contains("leaf1/port") && locations.contains("/vl1"),
        "{locations}"
    );
}

/// Issue 25: an ibsim-style net file where each CA's port GUID (node GUID + 1, as ibsim counts
/// it) is the next CA's node GUID. ibsim, ibnetdiscover and OpenSM accept it (node GUIDs and
/// port GUIDs are separate name spaces); `weft import` and `weft verify --topology` called it
/// an internal error. OpenSM's guid2lid names H-1's port by 0x201, H-2's node GUID: it must
/// resolve to H-1 port 1 (else H-1 has no LID and the state is refused).
#[test]
fn a_port_guid_equal_to_another_nodes_node_guid_is_accepted() {
    let dir = temp_dir("guid-spaces");
    let net = dir.join("ibsim.net");
    std::fs::write(
        &net,
        "switchguid=0x100\nSwitch 4 \"S-1\"\n[1] \"H-1\"[1]\n[2] \"H-2\"[1]\n[3] \"H-3\"[1]\n\n\
         caguid=0x200\nCa 1 \"H-1\"\n[1] \"S-1\"[1]\n\n\
         caguid=0x201\nCa 1 \"H-2\"\n[1] \"S-1\"[2]\n\n\
         caguid=0x202\nCa 1 \"H-3\"\n[1] \"S-1\"[3]\n",
    )
    .unwrap();
    let guid2lid = dir.join("guid2lid");
    std::fs::write(
        &guid2lid,
        "0x0000000000000100 0x0001 0x0001\n\n0x0000000000000201 0x0002 0x0002\n\n\
         0x0000000000000202 0x0003 0x0003\n\n0x0000000000000203 0x0004 0x0004\n",
    )
    .unwrap();
    let lfts = dir.join("opensm-lfts.dump");
    std::fs::write(
        &lfts,
        "Unicast lids [0-4] of switch Lid 1 guid 0x0000000000000100 ('S-1'):\n\
         0x0001 000\n0x0002 001\n0x0003 002\n0x0004 003\n4 lids dumped\n",
    )
    .unwrap();
    let net = net.to_str().unwrap();

    let out = weft(&["import", net]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let src = text(&out.stdout);
    for h in [
        "hca \"H-1\" { ports = 1, guid = 0x0000000000000200 }",
        "hca \"H-2\" { ports = 1, guid = 0x0000000000000201 }",
    ] {
        assert!(src.contains(h), "{src}");
    }
    // What it imports compiles: the language's GUIDs follow the same rule.
    let weft_file = dir.join("ibsim.weft");
    std::fs::write(&weft_file, &src).unwrap();
    let out = weft(&["check", weft_file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let out = weft(&[
        "verify",
        "--topology",
        net,
        "--guid2lid",
        guid2lid.to_str().unwrap(),
        "--lfts",
        lfts.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"]["connected"]["result"], "proven", "{v}");
    assert_eq!(v["verdict"]["deadlock_free"]["result"], "proven", "{v}");
    let _ = std::fs::remove_dir_all(dir);
}

/// Issue 25: `--property isolated` on a state that declares no partitions is unknown (nothing
/// to check the P_Key tables against), not a breach: no `partition_breach` tag or finding in
/// any format, and exit 1 as docs/commands/weft-verify.md says ("violated or unknown"); it exited 2
/// tagged `[weft::partition_breach]`.
#[test]
fn isolated_without_partitions_is_unknown_not_a_breach() {
    let dir = temp_dir("isolated-no-partitions");
    let st = ring_updown();
    assert!(st.partitions.is_empty());
    let p = write_state(&dir, "state.json", &st);
    let out = weft(&["verify", "--state", &p, "--property", "isolated"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let human = text(&out.stdout).replace(&p, "STATE");
    assert!(!human.contains("partition_breach"), "{human}");
    insta::assert_snapshot!("verify_isolated_without_partitions", human);
    let out = weft(&[
        "verify",
        "--state",
        &p,
        "--property",
        "isolated",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"]["isolated"]["result"], "unknown", "{v}");
    assert_eq!(v["findings"], serde_json::json!([]), "{v}");
    let out = weft(&[
        "verify",
        "--state",
        &p,
        "--property",
        "isolated",
        "--format",
        "sarif",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        !text(&out.stdout).contains("partition_breach"),
        "{}",
        text(&out.stdout)
    );
    // Asked with the default properties, isolation is not asked at all: proven, exit 0.
    let out = weft(&["verify", "--state", &p]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let _ = std::fs::remove_dir_all(dir);
}

/// The multicast fixtures' fabric (two switches, three HCAs) with its unicast tables.
const MC: &str = "formats/tests/data/multicast/";

fn verify_mc(mfts: &str, more: &[&str]) -> Output {
    let topo = format!("{MC}sim.ibnetdiscover");
    let lfts = format!("{MC}written-lfts.dump");
    let mut args = vec![
        "verify",
        "--topology",
        &topo,
        "--lfts",
        &lfts,
        "--mfts",
        mfts,
    ];
    args.extend_from_slice(more);
    weft(&args)
}

/// OpenSM's MFT dump and `ibroute -M`'s print of the same tables give the same proof of
/// unicast and multicast together; the verdict says what traffic it covers and how the
/// members were known; `saquery` records naming no member of a group the tables forward are
/// refused (the records cannot be all its members).
#[test]
fn multicast_tables_from_opensm_and_ibroute_are_proven_with_unicast() {
    let opensm = verify_mc(&format!("{MC}written-opensm.mcfdbs"), &[]);
    assert_eq!(opensm.status.code(), Some(0), "{}", text(&opensm.stdout));
    insta::assert_snapshot!("verify_multicast_opensm", text(&opensm.stdout));
    let json = |mfts: &str| {
        let out = verify_mc(&format!("{MC}{mfts}"), &["--format", "json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            v["verdict"].clone(),
            v["traffic"].clone(),
            v["report"]["multicast"].clone(),
        )
    };
    let a = json("written-opensm.mcfdbs");
    assert_eq!(a, json("written-ibroute-M.txt"));
    assert_eq!(a.1["multicast_groups"], 2);
    assert_eq!(a.2["pairs"], 8);
    assert_eq!(a.0["multicast_connected"]["result"], "proven");
    // The broadcast group's record names no member (port GID `::`: what OpenSM answers for a
    // group without members, and for every group to a query without its SM_Key) while the
    // tables forward its MLID: the records cannot be all its members, and taking them so
    // would leave its tree out of the proof. Refused, saying how to ask.
    let sa = format!("{MC}saquery-MCMR.txt");
    let out = verify_mc(&format!("{MC}written-opensm.mcfdbs"), &["--mcmembers", &sa]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains(
            "group 0xc000 has a tree in the multicast tables but its records name no member"
        ) && text(&out.stderr).contains("--smkey"),
        "{}",
        text(&out.stderr)
    );
}

/// A switch whose entry lacks the port back toward the sender's side: copies from its HCA
/// reach no one. Refused in every format, the finding naming the group, the switch and the
/// port; `--adaptive-routing` makes what was proven unknown.
#[test]
fn a_broken_multicast_tree_is_refused_and_adaptive_routing_is_not_proven() {
    let dir = temp_dir("mc-broken");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let good = std::fs::read_to_string(root.join(MC).join("written-opensm.mcfdbs")).unwrap();
    // `S-0002c90000000400`'s entry (the last one), not the other switch's longer one.
    let bad = good.replace("0xC000 : 0x001  0x002 \n", "0xC000 : 0x002 \n");
    assert_eq!(bad.len() + 7, good.len());
    let p = dir.join("bad.mcfdbs");
    std::fs::write(&p, bad).unwrap();
    let out = verify_mc(p.to_str().unwrap(), &[]);
    assert_eq!(out.status.code(), Some(1));
    let human = text(&out.stdout).replace(p.to_str().unwrap(), "BAD");
    insta::assert_snapshot!("verify_multicast_broken", human);
    let sarif = verify_mc(p.to_str().unwrap(), &["--format", "sarif"]);
    let s = text(&sarif.stdout);
    assert!(
        s.contains("\"ruleId\": \"weft::multicast_delivery\""),
        "{s}"
    );

    let out = verify_mc(
        &format!("{MC}written-opensm.mcfdbs"),
        &["--adaptive-routing"],
    );
    assert_eq!(out.status.code(), Some(1));
    let t = text(&out.stdout);
    assert!(
        t.contains("? deadlock freedom: unknown (not proven: adaptive routing"),
        "{t}"
    );
}
