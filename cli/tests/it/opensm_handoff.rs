//! `weft apply --target opensm` with the real OpenSM on ibsim: OpenSM runs with the file
//! engine and no QoS; weft writes its LFTs, partitions, QoS policy and `qos*` lines into
//! OpenSM's files and signals it; after OpenSM's sweep the fabric runs weft's LFTs (`dump_fts`,
//! entry for entry), weft's SL→VL tables (`smpquery sl2vl`) and the tenants' P_Keys
//! (`smpquery pkeys`).

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use crate::support::weft;
use std::path::Path;
use std::time::Duration;
use weft_fabric::ValidState;
use weft_formats::state_json::FromJson;
use weft_tests::ibsim::{self, Ibsim, Limits};
use weft_tests::{lft_entries, parse_fts};

#[test]
fn opensm_distributes_weft_tables_after_the_hand_off() {
    let Some(tools) = ibsim::require(
        "opensm_distributes_weft_tables_after_the_hand_off",
        &["opensm", "dump_fts", "smpquery"],
    ) else {
        return;
    };
    let d = crate::support::scratch("handoff");
    let (build, state) = build_with_tenants(&d);
    let net = std::fs::read_to_string(build.join("topology.net")).unwrap();
    let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(&state.fabric))).unwrap();
    let (conf, log, bg) = start_opensm(&sim, &build);
    let pid = bg.pid().to_string();
    let o = weft(&[
        "apply",
        build.to_str().unwrap(),
        "--target",
        "opensm",
        "--opensm-conf",
        conf.to_str().unwrap(),
        "--opensm-pid",
        &pid,
        "--opensm-log",
        log.to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("OpenSM swept again: SUBNET UP\n"), "{out}");
    let want = check_tables(&sim, &state);
    check_audit(&sim, &state, &want);
}

/// The QoS example with two tenants, built in `d`: the build directory and its state.
fn build_with_tenants(d: &Path) -> (std::path::PathBuf, ValidState) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // The QoS example with two tenants.
    let qos = std::fs::read_to_string(root.join("examples/qos-648.weft")).unwrap();
    let i = qos.rfind('}').unwrap();
    let src = format!(
        "{}    tenant alice {{ pkey = 0x8001, hosts = cn001..=cn288 }}\n    tenant bob {{ pkey = 0x8002, hosts = cn289..=cn576 }}\n}}\n",
        &qos[..i]
    );
    std::fs::write(d.join("t.weft"), src).unwrap();
    let build = d.join("build");
    let o = weft(&[
        "build",
        d.join("t.weft").to_str().unwrap(),
        "-o",
        build.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let state =
        ValidState::from_json(&std::fs::read_to_string(build.join("state.json")).unwrap()).unwrap();

    (build, state)
}

/// OpenSM on `sim` with the file engine, no routes, the default partition and no QoS, once it
/// says SUBNET UP: its configuration file, its log and the running OpenSM.
fn start_opensm(
    sim: &Ibsim,
    build: &Path,
) -> (std::path::PathBuf, std::path::PathBuf, ibsim::Background) {
    let osm = sim.dir().join("osm");
    std::fs::create_dir_all(&osm).unwrap();
    std::fs::copy(build.join("guid2lid"), osm.join("guid2lid")).unwrap();
    // OpenSM's own files before the hand-off: no routes, the default partition, no QoS.
    let (conf, lfts, parts, policy, log) = (
        osm.join("opensm.conf"),
        osm.join("lfts.dump"),
        osm.join("partitions.conf"),
        osm.join("qos-policy.conf"),
        osm.join("osm.log"),
    );
    std::fs::write(&lfts, "").unwrap();
    std::fs::write(&parts, "Default=0x7fff : ALL=full ;\n").unwrap();
    std::fs::write(
        &conf,
        format!(
            "routing_engine file\nlfts_file {}\npartition_config_file {}\nqos_policy_file {}\nqos FALSE\nforce_log_flush TRUE\n",
            lfts.display(),
            parts.display(),
            policy.display()
        ),
    )
    .unwrap();
    let mut bg = sim
        .spawn_env(
            "opensm",
            &["-F", conf.to_str().unwrap(), "-f", log.to_str().unwrap()],
            &[("OSM_CACHE_DIR", osm.to_str().unwrap())],
        )
        .unwrap();
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("SUBNET UP")
    {
        assert!(
            bg.running() && start.elapsed() < Duration::from_secs(120),
            "OpenSM did not come up:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (conf, log, bg)
}

/// The fabric runs weft's LFTs (`dump_fts`), a leaf's SL→VL table from port 1 to 19
/// (`smpquery sl2vl`) and the tenants' P_Keys: that leaf table is returned.
fn check_tables(sim: &Ibsim, state: &ValidState) -> Vec<u8> {
    // The LFTs, entry for entry.
    let fts = sim
        .run_retrying(
            "dump_fts",
            &[],
            Duration::from_secs(60),
            Duration::from_secs(120),
        )
        .unwrap();
    assert_eq!(
        parse_fts(&fts.stdout),
        lft_entries(state),
        "dump_fts shows weft's LFTs"
    );
    // The SL→VL table of a leaf (from a host port to an uplink) and of a host.
    let f = &state.fabric;
    let leaf = f.node_ids().find(|&n| f.node(n).name() == "leaf1").unwrap();
    let leaf_lid = state
        .lids
        .get(leaf, weft_fabric::PortNum(0))
        .unwrap()
        .0
        .to_string();
    let sl2vl = sim
        .run(
            "smpquery",
            &["sl2vl", &leaf_lid, "19"],
            Duration::from_secs(60),
        )
        .unwrap();
    let want = leaf_vls(&state.switches[&leaf]);
    let got = weft_tests::parse_sl2vl(&sl2vl.stdout)
        .remove(&(1, 19))
        .unwrap_or_default();
    assert_eq!(got, want, "smpquery sl2vl:\n{}", sl2vl.stdout);
    // A host of alice holds alice's P_Key, one of bob bob's.
    for (host, key) in [("cn001", "0x8001"), ("cn300", "0x8002")] {
        let h = f.node_ids().find(|&n| f.node(n).name() == host).unwrap();
        let lid = state
            .lids
            .get(h, weft_fabric::PortNum(1))
            .unwrap()
            .0
            .to_string();
        let pk = sim
            .run("smpquery", &["pkeys", &lid, "1"], Duration::from_secs(60))
            .unwrap();
        assert!(pk.stdout.contains(key), "{host}: {}", pk.stdout);
    }
    want
}

/// `weft audit` reads the same SL→VL (`want`, leaf1 from port 1 to 19) and P_Key tables off
/// the fabric.
fn check_audit(sim: &Ibsim, state: &ValidState, want: &[u8]) {
    let f = &state.fabric;
    let leaf = f.node_ids().find(|&n| f.node(n).name() == "leaf1").unwrap();
    let (a, out) = sim.audit_state(
        crate::support::WEFT,
        &sim.dir().join("audited.json"),
        Duration::from_secs(120),
    );
    assert!(
        out.stdout.contains("path SLs are the SA's"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    let id = |g: weft_fabric::Guid| a.fabric.find_guid(g).unwrap();
    let aleaf = id(f.node(leaf).guid());
    assert_eq!(
        leaf_vls(&a.switches[&aleaf]),
        want,
        "the audit's SL→VL table of leaf1 (1 → 19)"
    );
    for (host, key) in [("cn001", 0x8001), ("cn300", 0x8002)] {
        let h = f.node_ids().find(|&n| f.node(n).name() == host).unwrap();
        let keys = a.ports[&weft_fabric::PortRef::new(id(f.node(h).guid()), 1)]
            .pkeys
            .clone()
            .unwrap_or_default();
        assert!(
            keys.iter().any(|k| k.0 & 0x7fff == key & 0x7fff),
            "{host}: {keys:?}"
        );
    }
}

/// The VL of each SL from port 1 to port 19 of a leaf.
fn leaf_vls(sw: &weft_fabric::SwitchState) -> Vec<u8> {
    (0..16)
        .map(|sl| {
            sw.vl(
                weft_fabric::PortNum(1),
                weft_fabric::PortNum(19),
                weft_fabric::Sl(sl),
            )
            .unwrap()
            .0
        })
        .collect()
}
