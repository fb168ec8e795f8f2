//! A fat-tree with SHARP Aggregation Nodes, as `weft build` writes it, run by the real tools:
//! the stdlib's `superpod(aggregation: true)` of HDR QM8700s (each switch reports 41 ports, its
//! AN a one-port CA on port 41, as real Quantum switches do) routed by the default engine
//! (`fat_tree`, the ANs set aside from leaf detection and routed like every end port), loaded
//! into ibsim from `topology.net` (the ANs are CAs there), its LIDs and LFTs loaded by the real
//! OpenSM (`guid2lid`, `-R file -U lfts.dump`): SUBNET UP without ERR, `dump_fts` reads back
//! exactly weft's entries, and `weft audit --target mad` reads the live fabric and proves it.
//! Runs in CI; locally it skips loudly when ibsim or OpenSM is missing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Output;
use std::time::Duration;
use weft_fabric::ValidState;
use weft_tests::ibsim::{self, Ibsim, IbsimError, Limits};
use weft_tests::lft_entries;

const SU: &str = "use std::hardware::{qm8700, connectx6}\nuse std::topology::superpod\nfabric su {\n    topology = superpod(units: 1, nodes_per_unit: 20, nodes: 4, switch: qm8700, hca: connectx6, aggregation: true)\n}\n";

fn weft(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `weft audit --target mad` with `extra` arguments on the simulator: its output whatever its
/// exit status.
fn audit(sim: &Ibsim, extra: &[&str]) -> weft_tests::ibsim::ClientOutput {
    let args: Vec<&str> = ["audit", "--target", "mad"]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    match sim.run(env!("CARGO_BIN_EXE_weft"), &args, Duration::from_secs(180)) {
        Ok(o) | Err(IbsimError::Failed { output: o, .. }) => o,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn opensm_loads_and_weft_audit_proves_fat_tree_tables_with_aggregation_nodes() {
    let Some(tools) = ibsim::require(
        "opensm_loads_and_weft_audit_proves_fat_tree_tables_with_aggregation_nodes",
        &["opensm", "dump_fts"],
    ) else {
        return;
    };
    let d = std::env::temp_dir().join(format!("weft-an-interop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let src = d.join("su.weft");
    std::fs::write(&src, SU).unwrap();
    let build = d.join("build");
    let o = weft(&[
        "build",
        src.to_str().unwrap(),
        "-o",
        build.to_str().unwrap(),
    ]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    // The default engine took the tree: `fat_tree`, the ANs set aside from its levels.
    let engine = out
        .lines()
        .find(|l| l.trim_start().starts_with("engine"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        engine.contains("fat_tree: the default for a 2-level fat-tree (8 leaves, 4 at level 2")
            && engine.ends_with("set aside: 12 service nodes (12 aggregation)"),
        "{engine}"
    );
    let state =
        ValidState::from_json(&std::fs::read_to_string(build.join("state.json")).unwrap()).unwrap();
    let net = std::fs::read_to_string(build.join("topology.net")).unwrap();
    // The ANs are CAs of ibsim's net file, on the switches' port 41.
    let an_records = net
        .lines()
        .filter(|l| {
            l.starts_with("Ca\t1 ") && l.contains("# \"Mellanox Technologies Aggregation Node (")
        })
        .count();
    assert_eq!(an_records, 12, "{net}");
    assert!(
        net.contains("# \"Mellanox Technologies Aggregation Node (leaf-su1-r0)\""),
        "{net}"
    );

    let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(&state.fabric))).unwrap();
    assert!(sim.warnings().is_empty(), "{:?}", sim.warnings());
    let osm = sim.dir().join("osm");
    std::fs::create_dir_all(&osm).unwrap();
    std::fs::copy(build.join("guid2lid"), osm.join("guid2lid")).unwrap();
    let log = osm.join("osm.log");
    let lfts = build.join("lfts.dump");
    let run = sim.run_env(
        "opensm",
        &[
            "-o",
            "-R",
            "file",
            "-U",
            lfts.to_str().unwrap(),
            "-D",
            "0x43",
            "-f",
            log.to_str().unwrap(),
        ],
        &[("OSM_CACHE_DIR", osm.to_str().unwrap())],
        Duration::from_secs(180),
    );
    let osm_log = std::fs::read_to_string(&log).unwrap_or_default();
    run.unwrap_or_else(|e| panic!("{e}\nopensm log:\n{osm_log}"));
    assert!(
        !osm_log.contains(" ERR "),
        "OpenSM reported errors:\n{osm_log}"
    );
    assert!(osm_log.contains("SUBNET UP"), "{osm_log}");
    // 8 leaves and 4 spines (20 machines per SU on 40-port switches: 20 uplinks per leaf, 5
    // to each spine); 32 HCAs, 12 ANs and 12 switches: 56 LIDs on each of 12 switches, entry
    // for entry.
    let ours = lft_entries(&state);
    assert_eq!(ours.len(), 12 * 56);
    assert_eq!(sim.lfts().unwrap(), ours, "dump_fts shows weft's LFTs");

    // `weft audit` reads the live fabric (ANs included) and proves it.
    let human = audit(&sim, &[]);
    assert_eq!(
        human.status.code(),
        Some(0),
        "{}\n{}",
        human.stdout,
        human.stderr
    );
    let proven = human
        .stdout
        .lines()
        .find(|l| l.starts_with('✓'))
        .unwrap_or_else(|| panic!("{}", human.stdout));
    assert!(
        proven.starts_with("✓ deadlock freedom and connectivity, all 56 LIDs (")
            && !human.stdout.lines().any(|l| l.starts_with('×')),
        "{}",
        human.stdout
    );
    let json = audit(&sim, &["--format", "json"]);
    let cert = build.join("certificate.json");
    let rechecked = audit(&sim, &["--certificate", cert.to_str().unwrap()]);
    drop(sim);
    assert_eq!(json.status.code(), Some(0), "{}", json.stderr);
    let doc: serde_json::Value =
        serde_json::from_str(&json.stdout).unwrap_or_else(|e| panic!("{e}: {}", json.stdout));
    assert_eq!(doc["ok"], true, "{doc}");
    assert_eq!(doc["findings"].as_array().map(Vec::len), Some(0), "{doc}");
    for p in ["deadlock_free", "connected"] {
        assert_eq!(doc["verdict"][p]["result"], "proven", "{p}: {doc}");
    }
    assert_eq!(doc["report"]["stats"]["destinations"], 56, "{doc}");
    // What it proved is the fabric and the LIDs weft built...
    let built: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(build.join("state.json")).unwrap()).unwrap();
    assert_eq!(doc["proved"]["fingerprint"], built["fingerprint"], "{doc}");
    // ...running weft's tables: the build's certificate holds on the live fabric.
    assert_eq!(
        rechecked.status.code(),
        Some(0),
        "{}\n{}",
        rechecked.stdout,
        rechecked.stderr
    );
    assert!(
        rechecked
            .stdout
            .starts_with("✓ certificate accepted: deadlock freedom and connectivity, all 56 LIDs"),
        "{}",
        rechecked.stdout
    );
    let _ = std::fs::remove_dir_all(&d);
}
