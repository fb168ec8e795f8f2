//! OpenSM's own multicast routing after the hand-off, on ibsim: OpenSM runs (file engine, with
//! weft's LFTs: the joins below are routed by LID);
//! simulated hosts join the IPoIB broadcast group and a second group through the SA (one
//! SubnAdmSet(MCMemberRecord) each, `tests/fixtures/mcjoin/mcjoin.c` built with libibmad and
//! run under libumad2sim with `SIM_HOST` naming the host), and OpenSM programs their trees;
//! `weft apply --target opensm` then hands weft's build over, waits for the sweep and reports
//! the MLIDs OpenSM's multicast routing forwards — the same tables `ibroute -M` prints,
//! OpenSM dumps (`opensm.mcfdbs`) and `weft audit --target mad` reads.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use crate::support::weft;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};
use weft_fabric::{Mft, ValidState};
use weft_formats::state_json::FromJson;
use weft_tests::ibsim::{self, Ibsim, Limits};

/// Every switch's MFT as `ibroute -M` prints it (non-empty ones), by switch GUID.
fn ibroute(sim: &Ibsim, st: &ValidState) -> BTreeMap<u64, Mft> {
    sim.mfts(&st.fabric, &st.lids).unwrap()
}

#[test]
fn the_hand_off_reports_what_opensm_multicast_routing_programmed() {
    let Some(tools) = ibsim::require(
        "the_hand_off_reports_opensm_multicast",
        &["opensm", "ibroute", "gcc"],
    ) else {
        return;
    };
    let d = crate::support::scratch("osm-mcast");
    std::fs::write(
        d.join("t.weft"),
        weft_tests::xgft_source(2, &[18, 2], &[1, 2], "", ""),
    )
    .unwrap();
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
    let net = std::fs::read_to_string(build.join("topology.net")).unwrap();
    let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(&state.fabric))).unwrap();
    // The join tool, built against libibmad.
    let mcjoin = sim.build_mcjoin().unwrap();

    let (osm, conf, log, bg) = start_opensm(&sim, &build);
    join_groups(&sim, &state, &mcjoin, &log);
    let weft_bin = crate::support::WEFT;
    let pid = bg.pid().to_string();
    let o = sim
        .run_env(
            weft_bin,
            &[
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
            ],
            &[],
            Duration::from_secs(180),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        o.stdout.contains("OpenSM swept again: SUBNET UP\n"),
        "{}",
        o.stdout
    );
    // What the report says is what ibroute prints after the sweep.
    let tables = ibroute(&sim, &state);
    let mut per_mlid: BTreeMap<u16, usize> = BTreeMap::new();
    for t in tables.values() {
        for (m, _) in t.entries() {
            *per_mlid.entry(m.get()).or_default() += 1;
        }
    }
    assert_eq!(
        per_mlid.keys().copied().collect::<Vec<_>>(),
        [0xc000, 0xc001]
    );
    let line = format!(
        "OpenSM's multicast routing: 2 MLID(s) forwarded (0xc000 on {}, 0xc001 on {}), {} MFT \
         entries on {} switch(es) (",
        per_mlid[&0xc000],
        per_mlid[&0xc001],
        per_mlid.values().sum::<usize>(),
        tables.len()
    );
    assert!(o.stdout.contains(&line), "{line}\n{}", o.stdout);
    check_dumps(&sim, &state, &osm, &tables);
    drop(bg);
    let _ = std::fs::remove_dir_all(&d);
}

/// OpenSM on `sim` with the file engine and weft's LFTs (the joins are GMPs to the SA, routed
/// by LID), once it says SUBNET UP: its directory, configuration file, log and the running
/// OpenSM.
fn start_opensm(
    sim: &Ibsim,
    build: &Path,
) -> (
    std::path::PathBuf,
    std::path::PathBuf,
    std::path::PathBuf,
    ibsim::Background,
) {
    let osm = sim.dir().join("osm");
    std::fs::create_dir_all(&osm).unwrap();
    std::fs::copy(build.join("guid2lid"), osm.join("guid2lid")).unwrap();
    let (conf, lfts, parts, log) = (
        osm.join("opensm.conf"),
        osm.join("lfts.dump"),
        osm.join("partitions.conf"),
        osm.join("osm.log"),
    );
    // Routes from the start: the joins are GMPs to the SA, routed by LID (with no LFT entry
    // the SA never sees them).
    std::fs::copy(build.join("lfts.dump"), &lfts).unwrap();
    std::fs::write(&parts, "Default=0x7fff, ipoib : ALL=full ;\n").unwrap();
    std::fs::write(
        &conf,
        format!(
            "routing_engine file\nlfts_file {}\npartition_config_file {}\nqos FALSE\nforce_log_flush TRUE\nlog_flags 0x43\ndump_files_dir {}\n",
            lfts.display(),
            parts.display(),
            osm.display(),
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
    let start = Instant::now();
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
    (osm, conf, log, bg)
}

/// Hosts join through the SA: three the IPoIB broadcast group, two a group of their own;
/// returns once OpenSM has programmed both trees.
fn join_groups(sim: &Ibsim, state: &ValidState, mcjoin: &Path, log: &Path) {
    // Hosts join: three the IPoIB broadcast group, two a group of their own.
    let f = &state.fabric;
    let host = |name: &str| format!("H-{:016x}", f.node(f.find(name).unwrap()).guid().0);
    for (who, group, mlid) in [
        ("cn001", "ipoib", "0xc000"),
        ("cn017", "ipoib", "0xc000"),
        ("cn036", "ipoib", "0xc000"),
        ("cn002", "1234", "0xc001"),
        ("cn020", "1234", "0xc001"),
    ] {
        let sim_host = host(who);
        let o = sim
            .run_env(
                mcjoin.to_str().unwrap(),
                &[group],
                &[("SIM_HOST", &sim_host)],
                Duration::from_secs(60),
            )
            .unwrap_or_else(|e| {
                let log = std::fs::read_to_string(log).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(40).collect();
                panic!(
                    "{who} joining {group}: {e}\nOpenSM's log:\n{}",
                    tail.join("\n")
                )
            });
        assert_eq!(
            o.stdout.trim(),
            format!("mlid {mlid}"),
            "{who}: {}",
            o.stderr
        );
    }
    // OpenSM programs the trees once the joins are processed.
    let start = Instant::now();
    while ibroute(sim, state)
        .values()
        .flat_map(|t| t.entries().map(|(m, _)| m.get()))
        .collect::<std::collections::BTreeSet<u16>>()
        .len()
        < 2
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "OpenSM did not program both groups"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// OpenSM's own dump of its multicast tables and `weft audit` both say `tables` (what
/// `ibroute -M` prints).
fn check_dumps(sim: &Ibsim, state: &ValidState, osm: &Path, tables: &BTreeMap<u64, Mft>) {
    // OpenSM's own dump of its multicast tables (`opensm.mcfdbs`, written with its routing
    // log flag and `dump_files_dir`) says the same.
    let dump = std::fs::read_to_string(osm.join("opensm.mcfdbs")).unwrap();
    let (dumped, problems) = weft_formats::opensm::parse_mfts(&dump, &state.fabric).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let dumped: BTreeMap<u64, Mft> = dumped
        .tables
        .into_iter()
        .filter(|(_, t)| !t.is_empty())
        .map(|(id, t)| (state.fabric.node(id).guid().0, t))
        .collect();
    assert_eq!(&dumped, tables, "opensm.mcfdbs:\n{dump}");
    // `weft audit` reads the same tables off the fabric.
    let (a, _) = sim.audit_state(
        crate::support::WEFT,
        &sim.dir().join("audited.json"),
        Duration::from_secs(120),
    );
    let audited: BTreeMap<u64, Mft> = a
        .multicast
        .mfts
        .iter()
        .map(|(id, t)| (a.fabric.node(*id).guid().0, t.clone()))
        .collect();
    assert_eq!(&audited, tables);
}
