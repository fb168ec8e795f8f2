//! weft's outputs used by the real tools: the 648-node example exported by weft, loaded by
//! ibsim, discovered by `ibnetdiscover` and imported back; weft's `lfts.dump` loaded by the
//! real OpenSM (`-R file -U`) onto ibsim and read back with `dump_fts`, entry for entry; the
//! `layered` torus's tables, loaded the same way, checked by `ibdmchk` with weft's path SLs and
//! SL→VL tables. These run in CI; locally they skip loudly when a tool is missing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;
use weft_compiler::NoFiles;
use weft_fabric::ibnetdiscover::{self, ParseOptions};
use weft_fabric::{Fabric, FabricState, Lid};
use weft_tests::assert_isomorphic;
use weft_tests::ibsim::{self, Ibsim, Limits};

fn example(name: &str) -> String {
    let p = format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn compile(name: &str) -> (Fabric, FabricState) {
    let c = weft_compiler::check(name, &example(name), &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    let e = c.elaborated.unwrap();
    let built = weft_compiler::build::build(&e).unwrap_or_else(|d| panic!("{d:?}"));
    (e.fabric, built.state.into_inner())
}

#[test]
fn example_648_exported_discovered_and_imported_back() {
    let Some(tools) = ibsim::require(
        "example_648_exported_discovered_and_imported_back",
        &["ibnetdiscover"],
    ) else {
        return;
    };
    let (fabric, _) = compile("cluster-648.weft");
    // What `weft export --format ibnetdiscover` writes.
    let net = weft_compiler::export_ibnetdiscover(&fabric).unwrap();
    let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(&fabric)))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(sim.warnings().is_empty(), "{:?}", sim.warnings());
    let out = sim
        .run_retrying(
            "ibnetdiscover",
            &[],
            Duration::from_secs(120),
            Duration::from_secs(300),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    drop(sim);
    // Read back directly...
    let found = ibnetdiscover::parse(&out.stdout, &ParseOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_isomorphic(&fabric, &found.fabric);
    // ...and through `weft import`: the generated program compiles to the same fabric.
    let mut sources = weft_compiler::diagnostic::SourceMap::new();
    let id = sources.add("discovered", out.stdout.as_str());
    let (program, _warnings) =
        weft_compiler::import_ibnetdiscover(&out.stdout, "discovered", id, None, "cluster648")
            .unwrap_or_else(|d| panic!("{d:?}"));
    let c = weft_compiler::check("imported.weft", &program, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    assert_isomorphic(&fabric, &c.elaborated.unwrap().fabric);
}

/// `(switch GUID, LID) → port` from OpenSM's LFT dump or `dump_fts` output.
fn parse_fts(text: &str) -> BTreeMap<(u64, u16), u8> {
    let mut out = BTreeMap::new();
    let mut switch = None;
    for line in text.lines() {
        if line.starts_with("Unicast lids") {
            switch = line.split(" guid 0x").nth(1).and_then(|r| {
                u64::from_str_radix(r.split_whitespace().next().unwrap_or(""), 16).ok()
            });
            continue;
        }
        let mut it = line.split_whitespace();
        if let (Some(lid), Some(port), Some(sw)) = (it.next(), it.next(), switch) {
            if let (Some(lid), Ok(port)) = (lid.strip_prefix("0x"), port.parse::<u8>()) {
                if let Ok(lid) = u16::from_str_radix(lid, 16) {
                    out.insert((sw, lid), port);
                }
            }
        }
    }
    out
}

/// Where [`opensm_loads`] has OpenSM write its dump files, inside the simulator's directory.
const DUMPS: &str = "dumps";

/// Starts ibsim on `state`'s fabric and runs the real OpenSM once over it, taking weft's LIDs
/// from its guid2lid cache and weft's tables from the file engine (`-R file -U`), its dump
/// files (`opensm-subnet.lst`, `opensm.fdbs`, …) written to [`DUMPS`]. Returns the running
/// simulator and OpenSM's log.
fn opensm_loads(tools: &ibsim::Tools, state: &FabricState) -> (Ibsim, String) {
    let net = weft_fabric::ibnetdiscover::write(&state.fabric, Some(&state.lids)).unwrap();
    let sim = Ibsim::start(tools, &net, Some(Limits::for_fabric(&state.fabric)))
        .unwrap_or_else(|e| panic!("{e}"));
    let cache = sim.dir().join("osm-cache");
    let dumps = sim.dir().join(DUMPS);
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::create_dir_all(&dumps).unwrap();
    std::fs::write(
        cache.join("guid2lid"),
        weft_fabric::opensm::write_guid2lid(state),
    )
    .unwrap();
    let lfts = sim.dir().join("lfts.dump");
    std::fs::write(&lfts, weft_fabric::opensm::write_lfts(state)).unwrap();
    let log = sim.dir().join("osm.log");
    let osm = sim.run_env(
        "opensm",
        &[
            "-o",
            "-R",
            "file",
            "-U",
            lfts.to_str().unwrap(),
            "-D",
            "0x43",
            "--dump_files_dir",
            dumps.to_str().unwrap(),
            "-f",
            log.to_str().unwrap(),
        ],
        &[("OSM_CACHE_DIR", cache.to_str().unwrap())],
        Duration::from_secs(180),
    );
    let osm_log = std::fs::read_to_string(&log).unwrap_or_default();
    osm.unwrap_or_else(|e| panic!("{e}\nopensm log:\n{osm_log}"));
    (sim, osm_log)
}

#[test]
fn opensm_file_engine_loads_weft_lfts() {
    let Some(tools) = ibsim::require(
        "opensm_file_engine_loads_weft_lfts",
        &["opensm", "dump_fts"],
    ) else {
        return;
    };
    let (_, state) = compile("cluster-648.weft");
    let (sim, osm_log) = opensm_loads(&tools, &state);
    assert!(
        !osm_log.contains(" ERR "),
        "OpenSM reported errors:\n{osm_log}"
    );
    let fts = sim
        .run_retrying(
            "dump_fts",
            &[],
            Duration::from_secs(120),
            Duration::from_secs(240),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    drop(sim);
    let read_back = parse_fts(&fts.stdout);
    let mut ours = BTreeMap::new();
    for (&id, sw) in &state.switches {
        let guid = state.fabric.node(id).guid().0;
        for lid in 1..=sw.lft.top().0 {
            if let Some(p) = sw.lft.get(Lid(lid)) {
                ours.insert((guid, lid), p.0);
            }
        }
    }
    assert_eq!(
        ours.len(),
        54 * 702,
        "weft routes every LID on every switch, spine↔spine included"
    );
    let differing: Vec<_> = ours
        .iter()
        .filter(|(k, v)| read_back.get(k) != Some(v))
        .take(10)
        .collect();
    assert!(
        differing.is_empty(),
        "dump_fts differs from weft's tables, e.g. {differing:?}"
    );
    assert_eq!(
        read_back.len(),
        ours.len(),
        "dump_fts has entries weft did not write"
    );
}

/// `layered` tables checked by ibdmchk: the 4×4 torus routed by weft on layers, its LFTs loaded
/// by the real OpenSM onto ibsim; ibdmchk reads OpenSM's dumps of the fabric and LFTs plus
/// weft's path SLs (`-c`) and SL→VL tables (`-d`) and finds no credit loop, on the layers weft
/// reports. Without the SLs (every route on VL 0) the same tables have credit loops.
#[test]
fn ibdmchk_finds_layered_tables_deadlock_free_with_weft_path_sls() {
    let Some(tools) = ibsim::require(
        "ibdmchk_finds_layered_tables_deadlock_free_with_weft_path_sls",
        &["opensm", "ibdmchk"],
    ) else {
        return;
    };
    let src = example("torus-4x4.weft").replace("engine = updn", "engine = layered");
    let c = weft_compiler::check("torus.weft", &src, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    let built = weft_compiler::build::build(&c.elaborated.unwrap()).unwrap();
    let layers = built
        .state
        .switches
        .values()
        .flat_map(|s| s.sl2vl.iter())
        .flat_map(|r| r.vl)
        .filter(|&v| v != 15)
        .max()
        .unwrap()
        + 1;
    assert!(layers >= 2, "the torus needs layers");
    let state = built.state.into_inner();
    let (sim, _) = opensm_loads(&tools, &state);
    let dumps = sim.dir().join(DUMPS);
    std::fs::write(
        dumps.join("weft.psl"),
        weft_fabric::opensm::write_path_sl(&state),
    )
    .unwrap();
    std::fs::write(
        dumps.join("weft-sl2vl.dump"),
        weft_fabric::opensm::write_sl2vl(&state),
    )
    .unwrap();
    let ibdmchk = |extra: &[&str]| {
        let out = std::process::Command::new(&tools.programs[1].1)
            .current_dir(&dumps)
            .args([
                "-s",
                "opensm-subnet.lst",
                "-f",
                "opensm.fdbs",
                "-m",
                "opensm.mcfdbs",
                "-a",
            ])
            .args(extra)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let with = ibdmchk(&["-c", "weft.psl", "-d", "weft-sl2vl.dump"]);
    assert!(with.contains("Scanned:2256 paths"), "{with}");
    assert!(
        with.contains(&format!("Defined {layers} SLs in use")),
        "{with}"
    );
    assert!(with.contains("no credit loops found"), "{with}");
    let without = ibdmchk(&[]);
    assert!(without.contains("credit loops in routing"), "{without}");
    drop(sim);
}
