//! weft's outputs used by the real tools: the 648-node example exported by weft, loaded by
//! ibsim, discovered by `ibnetdiscover` and imported back; weft's `lfts.dump` loaded by the
//! real OpenSM (`-R file -U`) onto ibsim and read back with `dump_fts`, entry for entry; the
//! `layered` torus's tables, loaded the same way, checked by `ibdmchk` with weft's path SLs and
//! SL→VL tables; weft's `opensm.conf` QoS settings loaded by OpenSM (`-Q -F`) and read back
//! from the switches and hosts with `smpquery sl2vl` and `smpquery vlarb`; weft's
//! `partitions.conf` loaded by OpenSM (`-P`) running on a host, its own port a full member of
//! the default partition (`smpquery pkeys`). These run in CI; locally they skip loudly when a
//! tool is missing. (A fat-tree with SHARP aggregation nodes, loaded the same way and then
//! proven by `weft audit`, is `cli/tests/it/opensm_aggregation.rs`: it runs the `weft` binary.)

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use std::time::Duration;
use weft_compiler::NoFiles;
use weft_fabric::{Fabric, FabricState, Lid};
use weft_formats::ibnetdiscover::{self, ParseOptions};
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

/// Where [`opensm_loads`] has OpenSM write its dump files, inside the simulator's directory.
const DUMPS: &str = "dumps";

/// Starts ibsim on `state`'s fabric and runs the real OpenSM once over it, taking weft's LIDs
/// from its guid2lid cache and weft's tables from the file engine (`-R file -U`), its dump
/// files (`opensm-subnet.lst`, `opensm.fdbs`, …) written to [`DUMPS`]. Returns the running
/// simulator and OpenSM's log.
fn opensm_loads(tools: &ibsim::Tools, state: &FabricState) -> (Ibsim, String) {
    opensm_loads_with(tools, state, |_| Vec::new())
}

/// [`opensm_loads`] with more OpenSM arguments, made from the simulator's directory (where
/// files they name can be written first).
fn opensm_loads_with(
    tools: &ibsim::Tools,
    state: &FabricState,
    extra: impl FnOnce(&std::path::Path) -> Vec<String>,
) -> (Ibsim, String) {
    opensm_loads_on(tools, state, None, extra)
}

/// [`opensm_loads_with`], OpenSM attached to the end node whose ibsim node id is `host`
/// (`SIM_HOST`; by default the first node of the net file).
fn opensm_loads_on(
    tools: &ibsim::Tools,
    state: &FabricState,
    host: Option<&str>,
    extra: impl FnOnce(&std::path::Path) -> Vec<String>,
) -> (Ibsim, String) {
    let (sim, mut args, cache, log) = opensm_setup(tools, state);
    args.insert(0, "-o".into());
    args.extend(extra(sim.dir()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut env = vec![("OSM_CACHE_DIR", cache.to_str().unwrap())];
    env.extend(host.map(|h| ("SIM_HOST", h)));
    let osm = sim.run_env("opensm", &args, &env, Duration::from_secs(180));
    let osm_log = std::fs::read_to_string(&log).unwrap_or_default();
    osm.unwrap_or_else(|e| panic!("{e}\nopensm log:\n{osm_log}"));
    (sim, osm_log)
}

/// Starts ibsim on `state`'s fabric with weft's LIDs in an OpenSM cache directory and weft's
/// `lfts.dump` beside it: the simulator, the OpenSM arguments that load them (dumps to
/// [`DUMPS`], log to the returned path), and the cache directory.
fn opensm_setup(
    tools: &ibsim::Tools,
    state: &FabricState,
) -> (Ibsim, Vec<String>, std::path::PathBuf, std::path::PathBuf) {
    let net = weft_formats::ibnetdiscover::write(&state.fabric, Some(&state.lids)).unwrap();
    let sim = Ibsim::start(tools, &net, Some(Limits::for_fabric(&state.fabric)))
        .unwrap_or_else(|e| panic!("{e}"));
    let cache = sim.dir().join("osm-cache");
    let dumps = sim.dir().join(DUMPS);
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::create_dir_all(&dumps).unwrap();
    std::fs::write(
        cache.join("guid2lid"),
        weft_formats::opensm::write_guid2lid(state),
    )
    .unwrap();
    let lfts = sim.dir().join("lfts.dump");
    std::fs::write(&lfts, weft_formats::opensm::write_lfts(state)).unwrap();
    let log = sim.dir().join("osm.log");
    let args = [
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
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    (sim, args, cache, log)
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
    let read_back = weft_tests::parse_fts(&fts.stdout);
    let ours = weft_tests::lft_entries(&state);
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

/// What ibdmchk says about a `layered` build of `src` loaded into the real OpenSM: its layers,
/// the LID count, and ibdmchk's report on OpenSM's dumps with weft's path SLs and SL→VL
/// tables (`-c`, `-d`) and without them.
fn ibdmchk_layered(tools: &ibsim::Tools, name: &str, src: &str) -> (u8, usize, String, String) {
    let c = weft_compiler::check(name, src, &NoFiles);
    assert!(!c.has_errors(), "{name}: {:?}", c.diagnostics);
    let built = weft_compiler::build::build(&c.elaborated.unwrap())
        .unwrap_or_else(|d| panic!("{name}: {d:?}"));
    let layers = built.lanes.layers;
    let state = built.state.into_inner();
    // LIDs of live nodes (ibdmchk's paths run between them).
    let lids = state
        .lids
        .owners(&state.fabric)
        .iter()
        .flatten()
        .filter(|(n, _)| !state.fabric.node(*n).down)
        .count();
    let (sim, log) = opensm_loads(tools, &state);
    assert!(
        !log.contains(" ERR "),
        "{name}: OpenSM reported errors:\n{log}"
    );
    let dumps = sim.dir().join(DUMPS);
    std::fs::write(
        dumps.join("weft.psl"),
        weft_formats::opensm::write_path_sl(&state, weft_formats::opensm::PslSls::Lowest),
    )
    .unwrap();
    std::fs::write(
        dumps.join("weft-sl2vl.dump"),
        weft_formats::opensm::write_sl2vl(&state),
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
    let without = ibdmchk(&[]);
    drop(sim);
    (layers, lids, with, without)
}

/// `layered` builds checked by ibdmchk on OpenSM's dumps after OpenSM loaded weft's tables:
/// the 4×4 and 5×5 tori, a ring of six, the degraded 3×2 mesh, a fat-tree whose faults break
/// up*/down*, and 20 random irregular fabrics. With weft's path SLs and SL→VL tables ibdmchk
/// finds no credit loop on every path; without them (one VL) the fabrics needing two layers
/// loop, and the 4×4 torus, on one layer, does not.
#[test]
fn ibdmchk_finds_layered_tables_deadlock_free_with_weft_path_sls() {
    let Some(tools) = ibsim::require(
        "ibdmchk_finds_layered_tables_deadlock_free_with_weft_path_sls",
        &["opensm", "ibdmchk"],
    ) else {
        return;
    };
    let bench = |f: &str| {
        let p = format!("{}/../bench/fabrics/{f}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    };
    let mut cases: Vec<(String, String)> = [
        "torus-4x4-layered.weft",
        "torus-5x5-layered.weft",
        "ring-6-layered.weft",
        "mesh-3x2-degraded.weft",
        "fat-tree-broken-layered.weft",
    ]
    .iter()
    .map(|f| (f.to_string(), bench(f)))
    .collect();
    let mut rng = weft_tests::Rng(0x1a7e_2ed0);
    for case in 0..20 {
        let n = 5 + rng.below(12);
        let name = format!("f{case}");
        cases.push((
            name.clone(),
            weft_tests::irregular_source(&mut rng, n, &name),
        ));
    }
    let mut layered = 0;
    for (name, src) in &cases {
        let (layers, lids, with, without) = ibdmchk_layered(&tools, name, src);
        assert!(
            with.contains(&format!("Scanned:{} paths", lids * (lids - 1))),
            "{name}: {with}"
        );
        assert!(with.contains("no credit loops found"), "{name}: {with}");
        if layers >= 2 {
            layered += 1;
            assert!(
                with.contains(&format!("Defined {layers} SLs in use")),
                "{name}: {with}"
            );
        }
        if name.starts_with("torus-4x4") {
            assert_eq!(layers, 1, "{name}");
            assert!(
                without.contains("no credit loops found"),
                "{name}: {without}"
            );
        } else if name.starts_with("torus") || name.starts_with("ring") || name.starts_with("mesh")
        {
            assert_eq!(layers, 2, "{name}");
            assert!(
                without.contains("credit loops in routing"),
                "{name}: {without}"
            );
        }
    }
    assert!(layered >= 6, "{layered} of the fabrics need layers");
}

/// weft's QoS tables through the real OpenSM: `weft build`'s `lfts.dump` (`-R file -U`) and
/// `opensm.conf` (`-Q -F`) for the 648-node tree with three classes; OpenSM brings the subnet
/// up without errors, and sampled switches and ports answer `smpquery sl2vl` and
/// `smpquery vlarb` with weft's tables, row for row.
#[test]
fn opensm_loads_weft_qos_settings() {
    let Some(tools) = ibsim::require("opensm_loads_weft_qos_settings", &["opensm", "smpquery"])
    else {
        return;
    };
    let built = built_example("qos-648.weft", "");
    let conf = weft_compiler::qos::opensm_conf(&built.lanes, "qos648");
    let state = built.state.into_inner();
    let (sim, osm_log) = opensm_loads_with(&tools, &state, |dir| {
        let p = dir.join("opensm.conf");
        std::fs::write(&p, &conf).unwrap();
        vec!["-Q".into(), "-F".into(), p.to_str().unwrap().into()]
    });
    assert!(
        !osm_log.contains(" ERR "),
        "OpenSM reported errors:\n{osm_log}"
    );
    assert!(osm_log.contains("SUBNET UP"), "{osm_log}");
    // The simulator's SM port is on the first switch (a leaf); directed routes from it.
    let f = &state.fabric;
    let local = f
        .find_guid(weft_fabric::Guid(0x0002_c900_0000_0100))
        .unwrap();
    let hop = |p: u8| f.peer(weft_fabric::PortRef::new(local, p)).unwrap().0;
    let spine = hop(19);
    let host = hop(1);
    assert!(f.node(spine.node).is_switch() && !f.node(host.node).is_switch());
    let mut compared = 0;
    for (path, node, outs) in [
        ("0", local, &[1u8, 19, 36][..]),
        ("0,19", spine.node, &[1, 2, 36]),
    ] {
        let sw = &state.switches[&node];
        for &o in outs {
            let out = sim
                .run_retrying(
                    "smpquery",
                    &["-D", "sl2vl", path, &o.to_string()],
                    Duration::from_secs(60),
                    Duration::from_secs(120),
                )
                .unwrap_or_else(|e| panic!("{e}"));
            let got = weft_tests::parse_sl2vl(&out.stdout);
            // Every input port (0 included) toward `o`, as weft's table says.
            for i in (0..=f.node(node).spec.port_count).filter(|&i| i != o) {
                let want: Vec<u8> = (0..16u8)
                    .map(|sl| {
                        sw.vl(
                            weft_fabric::PortNum(i),
                            weft_fabric::PortNum(o),
                            weft_fabric::Sl(sl),
                        )
                        .unwrap()
                        .0
                    })
                    .collect();
                assert_eq!(
                    got.get(&(i, o)),
                    Some(&want),
                    "{path}: in {i} out {o}\n{}",
                    out.stdout
                );
                compared += 1;
            }
        }
        for p in [1u8, 19] {
            let out = sim
                .run(
                    "smpquery",
                    &["-D", "vlarb", path, &p.to_string()],
                    Duration::from_secs(60),
                )
                .unwrap_or_else(|e| panic!("{e}"));
            let want = state.ports[&weft_fabric::PortRef::new(node, p)]
                .vlarb
                .clone()
                .unwrap();
            let pairs = |t: &[weft_fabric::VlWeight]| -> Vec<(u8, u8)> {
                t.iter().map(|w| (w.vl, w.weight)).collect()
            };
            assert_eq!(
                weft_tests::parse_vlarb(&out.stdout),
                (pairs(&want.low), pairs(&want.high)),
                "{path} port {p}\n{}",
                out.stdout
            );
        }
    }
    assert!(compared > 100, "{compared} rows compared");
    // The host's injection table.
    let out = sim
        .run("smpquery", &["-D", "sl2vl", "0,1"], Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}"));
    let want = state.ports[&host].sl2vl.unwrap();
    assert_eq!(
        weft_tests::parse_sl2vl(&out.stdout)
            .get(&(0, 0))
            .map(Vec::as_slice),
        Some(&want[..]),
        "{}",
        out.stdout
    );
}

/// OpenSM running on ibsim with `state`'s tables and weft's QoS files (`-Q -F -Y`, and `-P`
/// with `partitions`), once the subnet is up without ERR: the simulator and the OpenSM
/// process (stopped with it).
fn opensm_serving(
    tools: &ibsim::Tools,
    state: &FabricState,
    conf: &str,
    policy: &str,
    partitions: Option<&str>,
) -> (Ibsim, ibsim::Background) {
    let (sim, mut args, cache, log) = opensm_setup(tools, state);
    let (conf_path, policy_path) = (
        sim.dir().join("opensm.conf"),
        sim.dir().join("qos-policy.conf"),
    );
    // weft's settings, and the log flushed as it is written (read while OpenSM runs).
    std::fs::write(&conf_path, format!("{conf}force_log_flush TRUE\n")).unwrap();
    std::fs::write(&policy_path, policy).unwrap();
    args.extend(
        [
            "-Q",
            "-F",
            conf_path.to_str().unwrap(),
            "-Y",
            policy_path.to_str().unwrap(),
        ]
        .into_iter()
        .map(str::to_owned),
    );
    if let Some(text) = partitions {
        let p = sim.dir().join("partitions.conf");
        std::fs::write(&p, text).unwrap();
        args.extend(["-P".to_owned(), p.to_str().unwrap().to_owned()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut osm = sim
        .spawn_env(
            "opensm",
            &args,
            &[("OSM_CACHE_DIR", cache.to_str().unwrap())],
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let start = std::time::Instant::now();
    let osm_log = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("SUBNET UP") || text.contains(" ERR ") {
            break text;
        }
        assert!(
            osm.running() && start.elapsed() < Duration::from_secs(240),
            "OpenSM did not bring the subnet up:\n{text}\n{}",
            std::fs::read_to_string(&osm.out).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        !osm_log.contains(" ERR "),
        "OpenSM reported errors:\n{osm_log}"
    );
    (sim, osm)
}

/// The SL OpenSM's SA answers for a path record from `slid` to `dlid` (asked for `pkey`,
/// when given, as an application on that partition would).
fn sa_sl(sim: &Ibsim, slid: u16, dlid: u16, pkey: Option<u16>) -> u8 {
    let pair = format!("{slid}:{dlid}");
    let key = pkey.map(|k| format!("{k:#06x}"));
    let mut args = vec!["-p", "--src-to-dst", pair.as_str()];
    if let Some(k) = &key {
        args.extend(["--pkey", k.as_str()]);
    }
    let out = sim
        .run_retrying(
            "saquery",
            &args,
            Duration::from_secs(60),
            Duration::from_secs(120),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    out.stdout
        .lines()
        .find_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix("sl.")?.trim_start_matches('.').trim();
            u8::from_str_radix(rest.strip_prefix("0x")?, 16).ok()
        })
        .unwrap_or_else(|| panic!("no SL in:\n{}", out.stdout))
}

/// weft's path SLs through OpenSM's SA: OpenSM runs on ibsim with weft's `lfts.dump`,
/// `opensm.conf` and `qos-policy.conf` (`-Q -F -Y`) for the 648-node tree with three classes,
/// and `saquery -p --src-to-dst` answers sampled host pairs (and a leaf switch's own traffic)
/// with the vFtree SL weft verified for the default class.
#[test]
fn opensm_sa_answers_weft_path_sls() {
    let Some(tools) = ibsim::require("opensm_sa_answers_weft_path_sls", &["opensm", "saquery"])
    else {
        return;
    };
    let built = built_example("qos-648.weft", "");
    let conf = weft_compiler::qos::opensm_conf(&built.lanes, "qos648");
    let policy =
        weft_compiler::qos::qos_policy(built.state.state(), &built.lanes, built.layers.as_ref())
            .unwrap();
    let state = built.state.into_inner();
    let (sim, _osm) = opensm_serving(&tools, &state, &conf, &policy, None);
    // One host per leaf, and the SL `compute` (SLs 1..=4, the class without `match`) uses.
    let f = &state.fabric;
    let hosts: Vec<(weft_fabric::PortRef, Lid)> = f
        .node_ids()
        .filter(|&x| f.node(x).is_switch())
        .filter_map(|x| {
            let h = (1..=f.node(x).spec.port_count).find_map(|p| {
                let (peer, _) = f.peer(weft_fabric::PortRef::new(x, p))?;
                (!f.node(peer.node).is_switch()).then_some(peer)
            })?;
            Some((h, state.lids.get(h.node, h.port)?))
        })
        .collect();
    assert_eq!(hosts.len(), 36);
    let compute = |src: weft_fabric::PortRef, dlid: Lid| -> u8 {
        let sls = state.path_sls(src, dlid);
        let c: Vec<u8> = sls
            .iter()
            .map(|s| s.0)
            .filter(|s| (1..=4).contains(s))
            .collect();
        assert_eq!(c.len(), 1, "{sls:?}");
        c[0]
    };
    let sa_sl = |slid: u16, dlid: u16| sa_sl(&sim, slid, dlid, None);
    let mut seen = std::collections::BTreeSet::new();
    for &a in &[0usize, 1, 5, 17, 35] {
        for &b in &[0usize, 1, 2, 3, 8, 20, 35] {
            let (src, slid) = hosts[a];
            let (_, dlid) = hosts[b];
            if slid == dlid {
                continue;
            }
            let want = compute(src, dlid);
            assert_eq!(sa_sl(slid.0, dlid.0), want, "leaf {a} → leaf {b}");
            seen.insert(want);
        }
    }
    assert_eq!(seen.len(), 4, "every lane sampled: {seen:?}");
    // A leaf switch's own traffic (port 0) toward a host on another leaf.
    let leaf = state.source_switch(hosts[5].0).unwrap();
    let leaf_lid = state.lids.get(leaf, weft_fabric::PortNum(0)).unwrap();
    let want = compute(weft_fabric::PortRef::new(leaf, 0), hosts[20].1);
    assert_eq!(
        sa_sl(leaf_lid.0, hosts[20].1 .0),
        want,
        "leaf switch → leaf 20"
    );
}

/// The 648-node example with `sections` added to its fabric block, built.
fn built_648_with(sections: &str) -> weft_compiler::build::Built {
    built_example("cluster-648.weft", sections)
}

/// `examples/NAME` with `sections` added to its fabric block, built.
fn built_example(name: &str, sections: &str) -> weft_compiler::build::Built {
    let text = example(name);
    let end = text.rfind('}').unwrap();
    let src = format!("{}{sections}}}\n", &text[..end]);
    let c = weft_compiler::check(name, &src, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    weft_compiler::build::build(&c.elaborated.unwrap()).unwrap_or_else(|d| panic!("{d:?}"))
}

/// Tenants end to end: the 648-node example with two tenants (the first two hosts of the SM's
/// leaf) compiled, its `partitions.conf` loaded by the real OpenSM (`-P`) on ibsim: SUBNET UP
/// without ERR or PARSE ERROR, and `smpquery pkeys` on each host shows its tenant's P_Key
/// (full) and the default one (limited), never the other tenant's. The file names each
/// partition as declared with its full key (`alice=0x8001`); the second tenant's name is
/// then replaced, in the state, by one OpenSM's parser cannot take whole (`:`, `#`, `,`, `=`,
/// `;`, spaces, over 31 bytes), which the file carries mangled, and OpenSM loads that too.
#[test]
fn opensm_loads_weft_partitions() {
    let Some(tools) = ibsim::require("opensm_loads_weft_partitions", &["opensm", "smpquery"])
    else {
        return;
    };
    let state = built_648_with(
        "    tenant alice { pkey = 0x8001, hosts = cn001 }\n    tenant bob { pkey = 0x8002, hosts = cn002 }\n",
    )
    .state
    .into_inner();
    let f = state.fabric.clone();
    // The simulator's SM port is on the first switch (a leaf); its hosts on ports 1 and 2.
    let local = f
        .find_guid(weft_fabric::Guid(0x0002_c900_0000_0100))
        .unwrap();
    let host = |p: u8| f.peer(weft_fabric::PortRef::new(local, p)).unwrap().0;
    assert_eq!(f.node(host(1).node).name(), "cn001");
    assert_eq!(f.node(host(2).node).name(), "cn002");
    let tenants = [(1u8, 0x8001u16, 0x8002u16), (2, 0x8002, 0x8001)];
    let conf = weft_formats::opensm::write_partitions(&state).unwrap();
    assert!(conf.contains("\nalice=0x8001 :\n"), "{conf}");
    assert!(conf.contains("\nbob=0x8002 :\n"), "{conf}");
    let mut hostile = state.clone();
    hostile.partitions[1].name = "bob's team: a#b, c=d; and a name past 31 bytes".into();
    let mangled = weft_formats::opensm::write_partitions(&hostile).unwrap();
    assert!(
        mangled.contains("\nbob's_team__a_b__c_d__and_a_nam=0x8002 :\n"),
        "{mangled}"
    );
    for conf in [conf, mangled] {
        opensm_applies_tenants(&tools, &state, &conf, &tenants);
    }
}

/// OpenSM (`-P conf`) on ibsim gives host `(port, mine, theirs)` on the SM's leaf its
/// tenant's key and the limited default one, never the other tenant's.
fn opensm_applies_tenants(
    tools: &ibsim::Tools,
    state: &FabricState,
    conf: &str,
    tenants: &[(u8, u16, u16)],
) {
    let (sim, osm_log) = opensm_loads_with(tools, state, |dir| {
        let p = dir.join("partitions.conf");
        std::fs::write(&p, conf).unwrap();
        vec!["-P".into(), p.to_str().unwrap().into()]
    });
    assert!(
        !osm_log.contains(" ERR ") && !osm_log.contains("PARSE ERROR"),
        "OpenSM reported errors:\n{osm_log}\n{conf}"
    );
    assert!(osm_log.contains("SUBNET UP"), "{osm_log}");
    for &(p, mine, theirs) in tenants {
        // `smpquery pkeys` prints the table, eight entries a row: `   0: 0x7fff 0x8001 …`.
        let out = sim
            .run_retrying(
                "smpquery",
                &["-D", "pkeys", &format!("0,{p}"), "1"],
                Duration::from_secs(60),
                Duration::from_secs(120),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let text = out.stdout.to_lowercase();
        assert!(
            text.contains(&format!("{mine:#06x}")),
            "host on port {p}:\n{text}"
        );
        assert!(text.contains("0x7fff"), "host on port {p}:\n{text}");
        assert!(
            !text.contains(&format!("{theirs:#06x}")),
            "host on port {p}:\n{text}"
        );
    }
}

/// A small tree shared by two tenants (cn001 and cn002 in `alice`, cn003 and cn004 in `bob`),
/// with `more` added to its fabric block, built.
fn tenants_tree(more: &str) -> FabricState {
    let src = format!(
        "use std::hardware::{{sb7800, connectx5}}\nuse std::topology::fat_tree\nfabric t {{\n    topology = fat_tree(levels: 2, radix: 4, switch: sb7800, hca: connectx5)\n    tenant alice {{ pkey = 0x8001, hosts = [cn001, cn002] }}\n    tenant bob {{ pkey = 0x8002, hosts = [cn003, cn004] }}\n{more}}}\n"
    );
    let c = weft_compiler::check("t.weft", &src, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    weft_compiler::build::build(&c.elaborated.unwrap())
        .unwrap_or_else(|d| panic!("{d:?}"))
        .state
        .into_inner()
}

/// The P_Keys `smpquery pkeys` shows on `name`'s port 1, read from the node itself
/// (`SIM_HOST`, the directed route `0`), sorted, without the empty entries.
fn pkeys_on(sim: &Ibsim, state: &FabricState, name: &str) -> Vec<u16> {
    let id = ibsim_id(state, name);
    let out = sim
        .run_env(
            "smpquery",
            &["-D", "pkeys", "0"],
            &[("SIM_HOST", id.as_str())],
            Duration::from_secs(60),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    // `   0: 0x7fff 0x8001 0x0000 …`, eight entries a row.
    let mut keys: Vec<u16> = out
        .stdout
        .lines()
        .filter_map(|l| l.split_once(':').map(|(_, r)| r))
        .flat_map(str::split_whitespace)
        .filter_map(|w| u16::from_str_radix(w.strip_prefix("0x")?, 16).ok())
        .filter(|&k| k & 0x7fff != 0)
        .collect();
    keys.sort_unstable();
    keys
}

/// ibsim's node id of end node `name` (what `SIM_HOST` takes): `H-` and its node GUID.
fn ibsim_id(state: &FabricState, name: &str) -> String {
    let n = state.fabric.find(name).unwrap();
    format!("H-{:016x}", state.fabric.node(n).guid().0)
}

/// Finding: the SM ends up a limited member. OpenSM runs on a host (`SIM_HOST=cn005`, in no
/// tenant) with weft's `partitions.conf` (`-P`). The state does not say where the SM runs, so
/// cn005's table is the limited default key like every host's; the file lists it so, and then
/// `SELF=full` last: `smpquery pkeys` on the SM's own port shows the full default key
/// `0xffff` (with the old file, `SELF=full` first and cn005's `=limited` after it, OpenSM made
/// it `0x7fff`: no host, all limited, could reach the SA), and a tenant's host its tenant's
/// key and the limited default one. Declared (`sm on cn005`), the state says `0xffff` for
/// cn005 itself, and every host's table on the fabric is exactly the state's; `isolated` is
/// proven.
#[test]
fn opensm_makes_its_own_port_a_full_default_member() {
    let Some(tools) = ibsim::require(
        "opensm_makes_its_own_port_a_full_default_member",
        &["opensm", "smpquery"],
    ) else {
        return;
    };
    for declared in [false, true] {
        let state = tenants_tree(if declared { "    sm on cn005\n" } else { "" });
        let conf = weft_formats::opensm::write_partitions(&state).unwrap();
        let sm_host = ibsim_id(&state, "cn005");
        let (sim, osm_log) = opensm_loads_on(&tools, &state, Some(&sm_host), |dir| {
            let p = dir.join("partitions.conf");
            std::fs::write(&p, &conf).unwrap();
            vec!["-P".into(), p.to_str().unwrap().into()]
        });
        assert!(
            !osm_log.contains(" ERR "),
            "OpenSM reported errors:\n{osm_log}"
        );
        assert!(osm_log.contains("SUBNET UP"), "{osm_log}");
        assert_eq!(
            pkeys_on(&sim, &state, "cn005"),
            [0xffff],
            "the SM's port (declared: {declared})\n{conf}"
        );
        assert_eq!(pkeys_on(&sim, &state, "cn001"), [0x7fff, 0x8001]);
        assert_eq!(pkeys_on(&sim, &state, "cn003"), [0x7fff, 0x8002]);
        if declared {
            // Every host's table on the fabric is the state's.
            let f = &state.fabric;
            for id in f.node_ids().filter(|&n| !f.node(n).is_switch()) {
                let name = f.node(id).name();
                let mut want: Vec<u16> = state.ports[&weft_fabric::PortRef::new(id, 1)]
                    .pkeys
                    .as_ref()
                    .unwrap()
                    .iter()
                    .map(|k| k.0)
                    .collect();
                want.sort_unstable();
                assert_eq!(pkeys_on(&sim, &state, name), want, "{name}");
            }
            let v = weft_fabric::ValidState::new(state.clone()).unwrap();
            let r = weft_verifier::verify(
                &v,
                &weft_verifier::Options {
                    properties: weft_verifier::Property::defaults(&v),
                    ..weft_verifier::Options::default()
                },
            );
            assert!(r.is_proven(), "{:?}", r.verdict);
        }
    }
}

/// A tenant's class through OpenSM: the 648-node tree with classes `compute` (the default,
/// SL 0) and `bulk` (SL 1), tenant `alice` (cn001, cn003) of class `bulk` and `bob` (cn002,
/// cn004) without one. OpenSM runs with weft's `opensm.conf`, `qos-policy.conf` (its P_Key
/// match rule) and `partitions.conf`: asked for a path record on alice's P_Key, the SA answers
/// `bulk`'s SL — the SL weft's path SLs give her pairs and the verifier checked — and on bob's,
/// the default class's.
#[test]
fn opensm_sa_answers_a_tenants_class() {
    let Some(tools) = ibsim::require("opensm_sa_answers_a_tenants_class", &["opensm", "saquery"])
    else {
        return;
    };
    let built = built_648_with(
        "    qos {\n        class compute { weight = 8 }\n        class bulk { weight = 2, match { service_id = 0x100 } }\n    }\n    tenant alice { pkey = 0x8001, hosts = [cn001, cn003], class = bulk }\n    tenant bob { pkey = 0x8002, hosts = [cn002, cn004] }\n",
    );
    let conf = weft_compiler::qos::opensm_conf(&built.lanes, "t");
    let policy =
        weft_compiler::qos::qos_policy(built.state.state(), &built.lanes, built.layers.as_ref())
            .unwrap();
    assert!(policy.contains("pkey: 0x0001"), "{policy}");
    let partitions = weft_formats::opensm::write_partitions(built.state.state()).unwrap();
    let state = built.state.into_inner();
    let f = state.fabric.clone();
    let port = |name: &str| weft_fabric::PortRef::new(f.find(name).unwrap(), 1);
    let lid = |name: &str| {
        state
            .lids
            .get(f.find(name).unwrap(), weft_fabric::PortNum(1))
            .unwrap()
    };
    assert_eq!(state.path_sls(port("cn001"), lid("cn003")).0, 0b10);
    // bob has no class: its pairs carry every class (the SA answers the default one).
    assert_eq!(state.path_sls(port("cn002"), lid("cn004")).0, 0b11);
    let (sim, _osm) = opensm_serving(&tools, &state, &conf, &policy, Some(&partitions));
    // Asked on alice's partition (as her applications do): bulk's SL.
    let sl = |a: &str, b: &str, k| sa_sl(&sim, lid(a).0, lid(b).0, Some(k));
    assert_eq!(sl("cn001", "cn003", 0x8001), 1, "alice: bulk");
    assert_eq!(sl("cn003", "cn001", 0x8001), 1, "alice: bulk");
    assert_eq!(sl("cn002", "cn004", 0x8002), 0, "bob: the default class");
}

/// dFtree's moves through OpenSM's SA: a small tree with one dFtree class (SLs 0 fast, 1
/// slow), its `qos-policy.conf` with two sources moved to the slow lane toward a third host
/// (`weft_compiler::qos::with_slow_flows`, what `weft dftree` writes) written over the
/// build's policy under the real OpenSM (`-Q -F -Y`) on ibsim, then SIGHUP: OpenSM reads it
/// again (no ERR in its log), and `saquery` answers the slow SL for the moved pairs only
/// (another source toward the same host, and a moved source toward another host, keep the
/// fast SL).
#[test]
fn opensm_sa_answers_dftree_moves() {
    let Some(tools) = ibsim::require("opensm_sa_answers_dftree_moves", &["opensm", "saquery"])
    else {
        return;
    };
    let src = "use std::hardware::{sb7800, connectx5}\n\
        fabric tiny {\n\
            topology {\n\
                switch spine : sb7800 { level = 2 }\n\
                switch leaf[1..=2] : sb7800 { level = 1 }\n\
                hca host[1..=4] : connectx5 { name = \"h{}\" }\n\
                for l in 1..=2 { link leaf[l].p[36] <-> spine.p[l] }\n\
                for n in 1..=4 { link host[n].p[1] <-> leaf[(n - 1) / 2 + 1].p[(n - 1) % 2 + 1] }\n\
            }\n\
            vls { budget = 4 }\n\
            routing { engine = fat_tree }\n\
            qos { class bulk { lanes = dftree } }\n\
        }\n";
    let c = weft_compiler::check("tiny.weft", src, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    let built =
        weft_compiler::build::build(&c.elaborated.unwrap()).unwrap_or_else(|d| panic!("{d:?}"));
    let conf = weft_compiler::qos::opensm_conf(&built.lanes, "tiny");
    let state = built.state.state().clone();
    let base = weft_compiler::qos::qos_policy(&state, &built.lanes, built.layers.as_ref()).unwrap();
    let f = &state.fabric;
    let host = |name: &str| -> (u64, u16) {
        let n = f.find(name).unwrap();
        let lid = state.lids.get(n, weft_fabric::PortNum(1)).unwrap().0;
        (weft_compiler::qos::lid_port_guid(&state, lid).unwrap(), lid)
    };
    let ((g1, l1), (g2, l2), (_, l3), (_, l4)) = (host("h1"), host("h2"), host("h3"), host("h4"));
    // Every pair's path SLs: fast 0, slow 1.
    let src1 = weft_fabric::PortRef::new(f.find("h1").unwrap(), 1);
    assert_eq!(
        state
            .path_sls(src1, Lid(l4))
            .iter()
            .map(|s| s.0)
            .collect::<Vec<_>>(),
        [0, 1]
    );
    let moved = |g| weft_compiler::qos::SlowFlow {
        src_port_guid: g,
        dst_lid: l4,
        fast_sl: 0,
        slow_sl: 1,
    };
    let policy =
        weft_compiler::qos::with_slow_flows(&base, &state, &[moved(g1), moved(g2)]).unwrap();
    assert!(policy.contains("weft-dftree-src-"), "{policy}");
    // OpenSM starts on the build's policy: every pair on its fast lane.
    let (sim, osm) = opensm_serving(&tools, &state, &conf, &base, None);
    assert_eq!(sa_sl(&sim, l1, l4, None), 0, "h1 → h4 before the move");
    // The moves written over the policy file, and SIGHUP: OpenSM reads it again on the heavy
    // sweep the signal starts.
    std::fs::write(sim.dir().join("qos-policy.conf"), &policy).unwrap();
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &osm.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let start = std::time::Instant::now();
    while sa_sl(&sim, l1, l4, None) != 1 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "OpenSM did not answer the slow lane after SIGHUP:\n{}",
            std::fs::read_to_string(sim.dir().join("osm.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let log = std::fs::read_to_string(sim.dir().join("osm.log")).unwrap_or_default();
    assert!(!log.contains(" ERR "), "OpenSM reported errors:\n{log}");
    assert_eq!(sa_sl(&sim, l1, l4, None), 1, "h1 → h4 moved");
    assert_eq!(sa_sl(&sim, l2, l4, None), 1, "h2 → h4 moved");
    assert_eq!(sa_sl(&sim, l3, l4, None), 0, "h3 → h4 not moved");
    assert_eq!(sa_sl(&sim, l1, l3, None), 0, "h1 → h3 not moved");
}
