//! `weft audit --target mad` on ibsim after the real OpenSM's ftree routed a two-level tree:
//! the same verdict as `weft verify` on what `ibnetdiscover` and `dump_fts` read from the same
//! fabric (OpenSM leaves spine pairs unreachable), and the audited state written for later;
//! an audit that cannot open the HCA port, shown as a finding under its deploy code in every
//! format (no ibsim needed); and a fabric without LIDs, whose audit is the state's findings.

use std::time::Duration;
use weft_fabric::ValidState;
use weft_formats::state_json::FromJson;
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
    let net = weft_formats::ibnetdiscover::write(&fabric, None).unwrap();
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
    let weft = crate::support::WEFT;
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

/// An HCA port that cannot be opened (no such CA; on a host without libibmad, the library
/// that cannot be loaded) stops the audit (exit 2) with one finding under the deploy error's
/// code: one versioned document for `--format json`, a SARIF rule with the code's meaning,
/// the finding on stderr for people.
#[test]
fn an_audit_that_cannot_open_the_port_is_a_finding_in_every_format() {
    let weft = crate::support::WEFT;
    let audit = |format: &str| {
        std::process::Command::new(weft)
            .args([
                "audit",
                "--target",
                "mad",
                "--ca",
                "weft-no-such-ca",
                "--format",
                format,
            ])
            .output()
            .unwrap()
    };
    let codes = ["weft::deploy::mad_open", "weft::deploy::mad_load"];
    let o = audit("json");
    assert_eq!(o.status.code(), Some(2));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    assert_eq!(doc["format"], "weft-audit", "{doc}");
    assert_eq!(doc["version"], 1, "{doc}");
    assert_eq!(doc["ok"], false, "{doc}");
    let found = doc["findings"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{doc}");
    let code = found[0]["code"].as_str().unwrap();
    assert!(codes.contains(&code), "{doc}");
    assert_eq!(found[0]["level"], "error", "{doc}");
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap()
            .contains("weft-no-such-ca"),
        "{doc}"
    );

    let o = audit("sarif");
    assert_eq!(o.status.code(), Some(2));
    let sarif: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let run = &sarif["runs"][0];
    assert_eq!(run["results"][0]["ruleId"], code, "{sarif}");
    let meaning = run["tool"]["driver"]["rules"][0]["shortDescription"]["text"]
        .as_str()
        .unwrap();
    assert!(meaning.contains("libibmad"), "{meaning}");

    let o = audit("human");
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let err = String::from_utf8_lossy(&o.stderr);
    // libibmad's own warnings come first; weft's finding is the end.
    assert!(
        err.ends_with(&format!(" [{code}]\n1 error(s), 0 warning(s)\n")),
        "{err}"
    );
    assert!(!err.contains("error: "), "{err}");
}

/// A fabric no SM has brought up (ibsim loaded without LIDs): what the audit reads is not a
/// state weft can verify, so it stops (exit 2, as an audit that cannot run) with the state's
/// findings under their `weft::state::…` codes, here as one versioned JSON document.
#[test]
fn an_audit_of_a_fabric_without_lids_is_the_states_findings() {
    let Some(tools) = ibsim::require("audit_without_lids", &[]) else {
        return;
    };
    let c = weft_compiler::check("t.weft", TREE, &weft_compiler::NoFiles);
    let fabric = c.elaborated.unwrap().fabric;
    let net = weft_formats::ibnetdiscover::write(&fabric, None).unwrap();
    let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(&fabric))).unwrap();
    let out = match sim.run(
        crate::support::WEFT,
        &["audit", "--target", "mad", "--format", "json"],
        Duration::from_secs(120),
    ) {
        Err(ibsim::IbsimError::Failed { output, .. }) => output,
        other => panic!("a fabric without LIDs is no state: {other:?}"),
    };
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    let doc: serde_json::Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    assert_eq!(doc["format"], "weft-audit", "{doc}");
    assert_eq!(doc["version"], 1, "{doc}");
    assert_eq!(doc["ok"], false, "{doc}");
    let found = doc["findings"].as_array().unwrap();
    assert!(!found.is_empty(), "{doc}");
    // For people: the same findings, rendered as a state file's are, on stderr.
    let out = match sim.run(
        crate::support::WEFT,
        &["audit", "--target", "mad"],
        Duration::from_secs(120),
    ) {
        Err(ibsim::IbsimError::Failed { output, .. }) => output,
        other => panic!("a fabric without LIDs is no state: {other:?}"),
    };
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(
        out.stderr.contains("weft::state::lid_missing") && !out.stderr.contains("error: "),
        "{}",
        out.stderr
    );
    for f in found {
        assert!(
            f["code"].as_str().unwrap().starts_with("weft::state::"),
            "{doc}"
        );
    }
}
