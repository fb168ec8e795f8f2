//! `weft audit --target mad` on ibsim after the real OpenSM's ftree routed a two-level tree:
//! the same verdict as `weft verify` on what `ibnetdiscover` and `dump_fts` read from the same
//! fabric (OpenSM leaves spine pairs unreachable), and the audited state written for later.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;
use weft_fabric::ValidState;
use weft_tests::ibsim::{self, Ibsim, Limits};

const TREE: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric small {\n    topology = fat_tree(levels: 2, radix: 8, switch: sb7800, hca: connectx5)\n    routing { engine = fat_tree, switch_to_switch = sftree }\n}\n";

/// The verdict lines of a human report (`✓ …` / `× …` at the start of a line).
fn verdicts(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with('✓') || l.starts_with('×'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn audit_of_opensm_ftree_matches_verify_on_its_dumps() {
    let Some(tools) = ibsim::require(
        "audit_of_opensm_ftree",
        &["opensm", "ibnetdiscover", "dump_fts"],
    ) else {
        return;
    };
    let c = weft_compiler::check("t.weft", TREE, &weft_compiler::NoFiles);
    let fabric = c.elaborated.unwrap().fabric;
    let net = weft_fabric::ibnetdiscover::write(&fabric, None).unwrap();
    let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(&fabric))).unwrap();
    let dir = sim.dir().to_owned();
    let cache = dir.join("osm");
    std::fs::create_dir_all(&cache).unwrap();
    let log = cache.join("osm.log");
    sim.run_env(
        "opensm",
        &["-o", "-R", "ftree", "-f", log.to_str().unwrap()],
        &[("OSM_CACHE_DIR", cache.to_str().unwrap())],
        Duration::from_secs(120),
    )
    .unwrap();
    let weft = env!("CARGO_BIN_EXE_weft");
    let state = dir.join("audited.json");
    let audit = match sim.run_env(
        weft,
        &[
            "audit",
            "--target",
            "mad",
            "--write-state",
            state.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(120),
    ) {
        Err(ibsim::IbsimError::Failed { output, .. }) => output,
        other => panic!("the audit must find OpenSM's unreachable spine pairs: {other:?}"),
    };
    assert_eq!(audit.status.code(), Some(1), "{}", audit.stderr);
    let disc = sim
        .run("ibnetdiscover", &[], Duration::from_secs(60))
        .unwrap();
    let fts = sim.run("dump_fts", &[], Duration::from_secs(60)).unwrap();
    std::fs::write(dir.join("t.net"), &disc.stdout).unwrap();
    std::fs::write(dir.join("fts.txt"), &fts.stdout).unwrap();
    let verify = std::process::Command::new(weft)
        .args(["verify", "--topology"])
        .arg(dir.join("t.net"))
        .arg("--lfts")
        .arg(dir.join("fts.txt"))
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(1));
    let (a, v) = (
        verdicts(&audit.stdout),
        verdicts(&String::from_utf8_lossy(&verify.stdout)),
    );
    assert_eq!(
        a,
        v,
        "audit:\n{}\nverify:\n{}",
        audit.stdout,
        String::from_utf8_lossy(&verify.stdout)
    );
    assert_eq!(
        a,
        [
            "× 12 level-2 switch → level-2 switch route(s) fail at the source: no forwarding entry (255) [weft::unreachable]",
            "✓ deadlock freedom: proven",
            "× connectivity: 12 route(s) fail, in 1 pattern(s) [weft::unreachable]"
        ]
    );
    assert!(
        audit
            .stdout
            .contains("level-2 switch → level-2 switch route(s) fail"),
        "{}",
        audit.stdout
    );
    // The audited state reads back and verifies the same way.
    let st = ValidState::from_json(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(st.fabric.nodes().len(), fabric.nodes().len());
    assert_eq!(st.fabric.links().len(), fabric.links().len());
    // Where the SM runs, from the master SM LID: the port OpenSM ran on, ibsim's first node
    // (a switch: its port 0).
    let first = net
        .lines()
        .find_map(|l| l.strip_prefix("Switch").or_else(|| l.strip_prefix("Ca")))
        .and_then(|l| l.split('"').nth(1))
        .and_then(|id| u64::from_str_radix(&id[2..], 16).ok())
        .unwrap();
    assert_eq!(st.sm.len(), 1, "{:?}", st.sm);
    let sm = st.sm[0];
    assert_eq!(st.fabric.node(sm.node).guid().0, first, "{sm:?}");
    assert_eq!(sm.port.0, 0);
}
