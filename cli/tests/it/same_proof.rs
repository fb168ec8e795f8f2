//! `weft check`, `weft verify` and `weft build` of one `.weft` file prove the same state (its
//! fingerprint and digest) and the same properties, and record the engine that wrote the
//! tables; `weft verify --state` of what `build` wrote reads back the same state.
//!
//! Every example but the largest runs here; with `WEFT_BIG_EXAMPLES=1` (`.ci/run`, in
//! release mode) the 5 832- and 11 664-node trees too. The 45 056-node tree is proven in
//! release by `weft-tests`' `examples_verify`.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use crate::support::root;
use std::path::Path;
use std::process::Command;

/// Runs weft with `args`; its JSON document, after checking its format and exit code 0.
fn doc(command: &str, args: &[&str]) -> serde_json::Value {
    let out = Command::new(crate::support::WEFT)
        .arg(command)
        .args(args)
        .args(["--format", "json"])
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "weft {command} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], format!("weft-{command}"), "{v}");
    assert_eq!(v["version"], 1, "{v}");
    v
}

#[test]
fn check_verify_and_build_prove_the_same_state_and_properties() {
    let big = crate::support::big_examples();
    let mut names: Vec<String> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".weft") && n != "cluster-45056.weft")
        .filter(|n| big || !matches!(n.as_str(), "cluster-5832.weft" | "cluster-11664.weft"))
        .collect();
    names.sort();
    assert!(names.len() >= 8, "{names:?}");
    let dir = crate::support::scratch("same-proof");
    // With LMC 1, fat_tree promises APM-disjoint paths: every command proves that too.
    let lab = std::fs::read_to_string(root().join("examples/lab-16.weft")).unwrap();
    let apm = dir.join("lab-16-lmc1.weft");
    std::fs::write(
        &apm,
        lab.replace(
            "switch_to_switch = sftree",
            "switch_to_switch = sftree\n        lmc = 1",
        ),
    )
    .unwrap();
    let mut paths: Vec<String> = names.iter().map(|n| format!("examples/{n}")).collect();
    paths.push(apm.display().to_string());
    for path in &paths {
        let name = Path::new(path).file_name().unwrap().to_string_lossy();
        let check = doc("check", &[path]);
        let verify = doc("verify", &[path]);
        let out = dir.join(name.trim_end_matches(".weft"));
        let build = doc("build", &[path, "-o", out.to_str().unwrap()]);
        let proved = &check["proved"];
        assert!(proved["digest"].is_string(), "{path}: {check}");
        assert!(
            !proved["properties"].as_array().unwrap().is_empty(),
            "{path}: {check}"
        );
        assert_eq!(&verify["proved"], proved, "{path}: verify and check");
        assert_eq!(&build["proved"], proved, "{path}: build and check");
        // The engine recorded is the one whose tables these are.
        assert_eq!(build["engine_used"], check["engine_used"], "{path}");
        let state = out.join("state.json");
        let written: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
        assert_eq!(
            written["routing"]["engine_used"], check["engine_used"],
            "{path}"
        );
        assert_eq!(written["routing"]["engine"], check["engine"], "{path}");
        // What build wrote reads back as the state it proved.
        let again = doc("verify", &["--state", state.to_str().unwrap()]);
        assert_eq!(again["proved"]["digest"], proved["digest"], "{path}");
        assert_eq!(
            again["proved"]["fingerprint"], proved["fingerprint"],
            "{path}"
        );
        if path.ends_with("lmc1.weft") {
            assert!(
                proved["properties"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|p| p == "apm_disjoint"),
                "{path}: {check}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
