//! One finding type across `check`, `build` and `verify`: the same violation or diagnostic is
//! the same SARIF result and the same JSON finding whichever command reports it, placed in the
//! `.weft` source (a diagnostic's span; a violation at the declaration of the node it names).

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use crate::support::weft;
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn temp_dir(name: &str) -> crate::support::Scratch {
    crate::support::scratch(&format!("findings-{name}"))
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_owned()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// A ring of four switches under min-hop: two credit loops. The topology line is line 4,
/// columns 16 to 58, where every node is declared (by the template call).
const RING: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::ring\nfabric r {\n    topology = ring(n: 4, switch: sb7800, hca: connectx5)\n    routing { engine = minhop }\n}\n";

/// An MTU that does not exist, at line 3, columns 40 to 44.
const BAD_MTU: &str =
    "use std::hardware::{sb7800}\nfabric f {\n  topology { switch s : sb7800 { mtu = 4000 } }\n}\n";

fn region(r: &Value) -> (u64, u64, u64, u64) {
    let g = &r["locations"][0]["physicalLocation"]["region"];
    let n = |k: &str| g[k].as_u64().unwrap_or(0);
    (
        n("startLine"),
        n("startColumn"),
        n("endLine"),
        n("endColumn"),
    )
}

/// Runs each of `commands` (`check`, `verify`, `build`) on `file` with `--format sarif`
/// (`build` writing to `out_dir`), expects exit 1 from each, and returns the SARIF documents.
fn sarif_of(commands: &[&str], file: &str, out_dir: &Path) -> Vec<(String, Value)> {
    commands
        .iter()
        .map(|&cmd| {
            let mut args = vec![cmd, file, "--format", "sarif"];
            if cmd == "build" {
                args.extend(["-o", out_dir.to_str().unwrap()]);
            }
            let out = weft(&args);
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            (cmd.to_owned(), json(&out))
        })
        .collect()
}

#[test]
fn a_diagnostic_is_one_sarif_result_at_its_span_in_check_and_build() {
    let dir = temp_dir("diag");
    let file = write(&dir, "bad.weft", BAD_MTU);
    let out_dir = dir.join("out");
    for (args, v) in sarif_of(&["check", "build"], &file, &out_dir) {
        assert_eq!(v["version"], "2.1.0");
        let run = &v["runs"][0];
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), 1, "{args:?}: {results:?}");
        let r = &results[0];
        assert_eq!(r["ruleId"], "weft::bad_mtu");
        assert_eq!(r["level"], "error");
        assert_eq!(
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            file.as_str()
        );
        assert_eq!(region(r), (3, 40, 3, 44), "{args:?}");
        // The rule carries the code's meaning from the registry.
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0]["id"], "weft::bad_mtu");
        assert!(rules[0]["shortDescription"]["text"]
            .as_str()
            .unwrap()
            .contains("MTU"));
    }
    assert!(!out_dir.exists(), "a failed build writes nothing");
}

#[test]
fn a_credit_loop_is_the_same_finding_in_check_build_and_verify() {
    let dir = temp_dir("loop");
    let file = write(&dir, "ring.weft", RING);
    let out_dir = dir.join("out");
    let mut seen = Vec::new();
    for (args, v) in sarif_of(&["check", "verify", "build"], &file, &out_dir) {
        let results = v["runs"][0]["results"].as_array().unwrap().clone();
        assert_eq!(results.len(), 2, "{args:?}");
        for r in &results {
            assert_eq!(r["ruleId"], "weft::credit_loop");
            // Placed where the switches are declared: the template call.
            assert_eq!(region(r), (4, 16, 4, 58), "{args:?}");
            let flow = r["codeFlows"][0]["threadFlows"][0]["locations"]
                .as_array()
                .unwrap();
            assert_eq!(flow.len(), 4, "a four-switch ring");
            assert!(
                r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"]
                    .as_str()
                    .unwrap()
                    .starts_with("sw")
            );
        }
        seen.push(results);
    }
    assert!(
        seen.windows(2).all(|w| w[0] == w[1]),
        "check, verify and build report the same results"
    );
    assert!(!out_dir.exists(), "an unproven build writes nothing");
}

#[test]
fn json_findings_match_sarif_and_build_json_says_what_it_wrote() {
    let dir = temp_dir("json");
    let file = write(&dir, "ring.weft", RING);
    let v = json(&weft(&["check", &file, "--format", "json"]));
    let found: Vec<&serde_json::Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["level"] != "note")
        .collect();
    assert_eq!(found.len(), 2, "{v}");
    assert_eq!(found[0]["code"], "weft::credit_loop");
    assert_eq!(found[0]["place"]["line"], 4);
    assert_eq!(found[0]["place"]["column"], 16);
    assert_eq!(found[0]["flow"].as_array().unwrap().len(), 4);

    // A proven build: no findings, every file listed.
    let out_dir = dir.join("lab");
    let out = weft(&[
        "build",
        "examples/lab-16.weft",
        "-o",
        out_dir.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    assert_eq!(v["ok"], true);
    // No errors or warnings: the routing's notes only (sFtree's root and entries).
    let levels: Vec<&serde_json::Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["level"])
        .collect();
    assert_eq!(levels, ["note", "note"], "{v}");
    assert_eq!(v["format"], "weft-build", "{v}");
    assert_eq!(v["engine_used"], "fat_tree", "{v}");
    assert_eq!(v["verdict"]["deadlock_free"]["result"], "proven");
    let written: Vec<&str> = v["written"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(written.len(), 5);
    for p in written {
        assert!(Path::new(p).is_file(), "{p}");
    }
}
