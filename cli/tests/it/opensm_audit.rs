//! `weft verify` on OpenSM's own output for a real-sized fabric: the 5 832-node three-level
//! tree (`examples/cluster-5832.weft`) loaded in ibsim and routed by the real OpenSM `ftree`,
//! which leaves switch-to-switch entries unset (402 084 switch pairs unreachable).
//!
//! The report must scale: a human report of at most 60 lines naming the patterns and the
//! 402 084 count, exit 1, JSON under 1 MB. OpenSM takes ~20 s on this fabric, so the test runs
//! with the largest examples (`WEFT_BIG_EXAMPLES=1`, release mode in `.ci/run`).

#![expect(
    clippy::print_stderr,
    reason = "test helpers say on the terminal what they skipped or measured"
)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;
use weft_compiler::NoFiles;
use weft_tests::ibsim::{self, Ibsim, Limits};

#[test]
fn opensm_ftree_on_the_5832_node_tree_reports_patterns_not_routes() {
    if !crate::support::big_examples() {
        eprintln!(
            "opensm_ftree_on_the_5832_node_tree: runs with WEFT_BIG_EXAMPLES=1 (.ci/run does)"
        );
        return;
    }
    let Some(tools) = ibsim::require("opensm_ftree_on_the_5832_node_tree", &["ibsim", "opensm"])
    else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join("examples/cluster-5832.weft")).unwrap();
    let c = weft_compiler::check("cluster-5832.weft", &text, &NoFiles);
    let fabric = c.elaborated.unwrap().fabric;
    let net = weft_formats::ibnetdiscover::write(&fabric, None).unwrap();
    let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(&fabric))).unwrap();
    let dir = sim.dir().join("osm");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("topology.net"), &net).unwrap();
    let cache = format!("OSM_CACHE_DIR={}", dir.display());
    let log = dir.join("osm.log").display().to_string();
    let dump = dir.display().to_string();
    sim.run(
        "env",
        &[
            cache.as_str(),
            "opensm",
            "-o",
            "-R",
            "ftree",
            "-D",
            "0x43",
            "-f",
            &log,
            "--dump_files_dir",
            &dump,
        ],
        Duration::from_secs(600),
    )
    .unwrap_or_else(|e| panic!("opensm: {e}"));
    // The dump files live in the simulator's directory: keep it until weft has read them.
    let weft = |format: &str| {
        Command::new(crate::support::WEFT)
            .args([
                "verify",
                "--topology",
                "topology.net",
                "--lfts",
                "opensm-lfts.dump",
                "--guid2lid",
                "guid2lid",
                "--format",
                format,
            ])
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    let human = weft("human");
    assert_eq!(human.status.code(), Some(1));
    let out = String::from_utf8_lossy(&human.stdout);
    assert!(
        out.lines().count() <= 60,
        "{} lines:\n{out}",
        out.lines().count()
    );
    assert!(
        out.contains("× connectivity: 402 084 route(s) fail"),
        "{out}"
    );
    assert!(
        out.contains("level-3 switch → level-3 switch route(s) fail at the source: no forwarding entry (255)"),
        "{out}"
    );
    assert!(out.contains("HCA→HCA routes: none fail"), "{out}");
    assert!(out.contains("✓ deadlock freedom: proven"), "{out}");
    let json = weft("json");
    assert_eq!(json.status.code(), Some(1));
    assert!(
        json.stdout.len() < 1 << 20,
        "JSON is {} bytes",
        json.stdout.len()
    );
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["report"]["failed_routes"], 402_084);
    let sarif = weft("sarif");
    let v: serde_json::Value = serde_json::from_slice(&sarif.stdout).unwrap();
    let results = v["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 4, "one SARIF result per pattern");
    assert!(results.iter().all(|r| r["ruleId"] == "weft::unreachable"));
    drop(sim);
}
