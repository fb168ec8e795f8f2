//! Fat-trees with SHARP Aggregation Nodes, as `weft build` writes them, run by the real tools:
//! routed by the default engine (`fat_tree`, the ANs set aside from leaf detection and routed
//! like every end port), loaded into ibsim from `topology.net` (the ANs are CAs there), their
//! LIDs and LFTs loaded by the real OpenSM (`guid2lid`, `-R file -U lfts.dump`): SUBNET UP
//! without ERR, `dump_fts` reads back exactly weft's entries, and `weft audit --target mad`
//! reads the live fabric and proves it — the fabric and LIDs weft built (the fingerprint) and
//! weft's tables (the build's certificate re-checked on the live fabric). Two fabrics: the
//! stdlib's `superpod(aggregation: true)` of HDR QM8700s (each switch reports 41 ports, its AN
//! a one-port CA on port 41, as real Quantum switches do), and the real NDR DGX dump
//! `tests/fixtures/real/topograph-ndr-dgx.ibnetdiscover` through `weft import`, its 40 ANs
//! recognised. Runs in CI; locally it skips loudly when ibsim or OpenSM is missing.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use crate::support::{root, weft};
use std::path::Path;
use std::time::Duration;
use weft_fabric::ValidState;
use weft_formats::state_json::FromJson;
use weft_tests::ibsim::{self, ClientOutput, Ibsim, IbsimError, Limits};
use weft_tests::lft_entries;

const SU: &str = "use std::hardware::{qm8700, connectx6}\nuse std::topology::superpod\nfabric su {\n    topology = superpod(units: 1, nodes_per_unit: 20, nodes: 4, switch: qm8700, hca: connectx6, aggregation: true)\n}\n";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn temp_dir(name: &str) -> crate::support::Scratch {
    crate::support::scratch(&format!("an-{name}"))
}

/// `weft audit --target mad` with `extra` arguments on the simulator: its output whatever its
/// exit status.
fn audit(sim: &Ibsim, extra: &[&str]) -> ClientOutput {
    let args: Vec<&str> = ["audit", "--target", "mad"]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    match sim.run(crate::support::WEFT, &args, Duration::from_secs(300)) {
        Ok(o) | Err(IbsimError::Failed { output: o, .. }) => o,
        Err(e) => panic!("{e}"),
    }
}

/// What [`built_loaded_audited`] saw.
struct Run {
    /// The engine line of `weft build`.
    engine: String,
    /// The aggregation nodes' records in `topology.net` (`Ca 1 "H-…" # "Mellanox Technologies
    /// Aggregation Node…"`).
    an_records: usize,
    /// LIDs of the built state.
    lids: usize,
    /// `weft audit`'s human output.
    human: ClientOutput,
}

/// `weft build` of `program`, the build loaded into ibsim and by the real OpenSM (no ERR,
/// SUBNET UP, `dump_fts` exactly weft's LFTs), then `weft audit` of the live fabric: proven
/// (exit 0, no violation), in JSON every property `proven` and the fingerprint of the build's
/// state, and the build's certificate accepted on the live fabric.
fn built_loaded_audited(tools: &ibsim::Tools, dir: &Path, program: &Path) -> Run {
    let build = dir.join("build");
    let o = weft(&[
        "build",
        program.to_str().unwrap(),
        "-o",
        build.to_str().unwrap(),
    ]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    let engine = out
        .lines()
        .find(|l| l.trim_start().starts_with("engine"))
        .unwrap_or_else(|| panic!("{out}"))
        .to_owned();
    let state =
        ValidState::from_json(&std::fs::read_to_string(build.join("state.json")).unwrap()).unwrap();
    let net = std::fs::read_to_string(build.join("topology.net")).unwrap();
    let an_records = net
        .lines()
        .filter(|l| {
            l.starts_with("Ca\t1 ") && l.contains("# \"Mellanox Technologies Aggregation Node")
        })
        .count();

    let sim = Ibsim::start(tools, &net, Some(Limits::for_fabric(&state.fabric))).unwrap();
    // ibsim 0.10 does not know NDR: it warns about each `4xNDR` link and runs it at SDR (the
    // writer keeps the rate so that it reads back); nothing else.
    let warnings: Vec<String> = sim
        .warnings()
        .into_iter()
        .filter(|w| {
            !(w.ends_with("parse_port_link_width_and_speed: cannot parse speed / invalid speed")
                && net.contains("xNDR"))
        })
        .collect();
    assert!(warnings.is_empty(), "{warnings:?}");
    // OpenSM takes the build's LIDs (its `guid2lid`, as the state writes it) and LFTs.
    assert_eq!(
        std::fs::read_to_string(build.join("guid2lid")).unwrap(),
        weft_formats::opensm::write_guid2lid(&state)
    );
    let loaded = sim.load_with_opensm(&build.join("lfts.dump"), &state);
    let osm_log = std::fs::read_to_string(sim.dir().join("osm.log")).unwrap_or_default();
    loaded.unwrap_or_else(|e| panic!("{e}\nopensm log:\n{osm_log}"));
    assert!(
        !osm_log.contains(" ERR "),
        "OpenSM reported errors:\n{osm_log}"
    );
    assert!(osm_log.contains("SUBNET UP"), "{osm_log}");
    assert_eq!(
        sim.lfts().unwrap(),
        lft_entries(&state),
        "dump_fts shows weft's LFTs"
    );

    // `weft audit` reads the live fabric (ANs included) and proves it.
    let human = audit(&sim, &[]);
    let json = audit(&sim, &["--format", "json"]);
    let cert = build.join("certificate.json");
    let rechecked = audit(&sim, &["--certificate", cert.to_str().unwrap()]);
    drop(sim);
    assert_eq!(
        human.status.code(),
        Some(0),
        "{}\n{}",
        human.stdout,
        human.stderr
    );
    assert!(
        human
            .stdout
            .lines()
            .any(|l| l.starts_with("✓ deadlock freedom and connectivity, all "))
            && !human.stdout.lines().any(|l| l.starts_with('×')),
        "{}",
        human.stdout
    );
    assert_eq!(json.status.code(), Some(0), "{}", json.stderr);
    let doc: serde_json::Value =
        serde_json::from_str(&json.stdout).unwrap_or_else(|e| panic!("{e}: {}", json.stdout));
    assert_eq!(doc["ok"], true, "{doc}");
    assert_eq!(doc["findings"].as_array().map(Vec::len), Some(0), "{doc}");
    for p in ["deadlock_free", "connected"] {
        assert_eq!(doc["verdict"][p]["result"], "proven", "{p}: {doc}");
    }
    let lids = state.lids.owners(&state.fabric).iter().flatten().count();
    assert_eq!(doc["report"]["stats"]["destinations"], lids, "{doc}");
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
        rechecked.stdout.starts_with(&format!(
            "✓ certificate accepted: deadlock freedom and connectivity, all {lids} LIDs"
        )),
        "{}",
        rechecked.stdout
    );
    Run {
        engine,
        an_records,
        lids,
        human,
    }
}

#[test]
fn a_template_tree_with_aggregation_nodes_under_opensm_is_proven_by_weft_audit() {
    let Some(tools) = ibsim::require(
        "a_template_tree_with_aggregation_nodes_under_opensm_is_proven_by_weft_audit",
        &["opensm", "dump_fts"],
    ) else {
        return;
    };
    let d = temp_dir("template");
    let src = d.join("su.weft");
    std::fs::write(&src, SU).unwrap();
    let run = built_loaded_audited(&tools, &d, &src);
    // The default engine took the tree: `fat_tree`, the ANs set aside from its levels.
    assert!(
        run.engine
            .contains("fat_tree: the default for a 2-level fat-tree (8 leaves, 4 at level 2")
            && run
                .engine
                .ends_with("set aside: 12 service nodes (12 aggregation)"),
        "{}",
        run.engine
    );
    // One AN per switch; 8 leaves and 4 spines (20 machines per SU on 40-port switches: 20
    // uplinks per leaf, 5 to each spine): 32 HCAs, 12 ANs and 12 switches.
    assert_eq!(run.an_records, 12);
    assert_eq!(run.lids, 56);
    assert!(
        run.human
            .stdout
            .contains("✓ deadlock freedom and connectivity, all 56 LIDs ("),
        "{}",
        run.human.stdout
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_real_dump_with_aggregation_nodes_imported_under_opensm_is_proven_by_weft_audit() {
    let Some(tools) = ibsim::require(
        "a_real_dump_with_aggregation_nodes_imported_under_opensm_is_proven_by_weft_audit",
        &["opensm", "dump_fts"],
    ) else {
        return;
    };
    let d = temp_dir("real");
    let program = d.join("dgx.weft");
    let dump = root().join("tests/fixtures/real/topograph-ndr-dgx.ibnetdiscover");
    let o = weft(&[
        "import",
        dump.to_str().unwrap(),
        "-o",
        program.to_str().unwrap(),
        "--name",
        "dgx",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // ibsim gives an end node's port p the GUID node GUID + p, always; this dump's ports carry
    // their node's GUID (as ConnectX and AN firmware do), which ibsim cannot show. Loaded as
    // imported, the ports would come up under other GUIDs than `guid2lid` names, OpenSM would
    // give them other LIDs than weft's, and the audit would rightly refute weft's tables for
    // that fabric. So the program drops the recorded port GUIDs and takes ibsim's rule; the
    // rest — cabling, names, node GUIDs, LIDs, the recognised aggregation nodes — is the
    // dump's.
    let imported = std::fs::read_to_string(&program).unwrap();
    let mut ibsim_guids = String::new();
    for line in imported.lines() {
        let line = match line.split_once(", port_guids = [") {
            Some((head, rest)) => format!("{head}{}", &rest[rest.find(']').unwrap() + 1..]),
            None => line.to_owned(),
        };
        ibsim_guids.push_str(&line);
        ibsim_guids.push('\n');
    }
    assert_eq!(
        imported.matches("port_guids = [").count(),
        582,
        "every end node's port GUID is recorded"
    );
    std::fs::write(&program, ibsim_guids).unwrap();
    let run = built_loaded_audited(&tools, &d, &program);
    assert!(
        run.engine
            .contains("fat_tree: the default for a 2-level fat-tree (31 leaves, 9 at level 2")
            && run
                .engine
                .ends_with("set aside: 40 service nodes (40 aggregation)"),
        "{}",
        run.engine
    );
    assert_eq!(run.an_records, 40);
    let _ = std::fs::remove_dir_all(&d);
}
