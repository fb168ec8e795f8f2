//! `weft report` end to end: the table, the JSON, and exit codes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn weft(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run weft: {e}"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn report_prints_a_table() {
    let out = weft(&["report", "examples/cluster-648.weft"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    for needle in [
        "fabric `cluster648`, engine fat_tree",
        "54 switches, 0 unbalanced",
        "647 shifts (all): max load 1,",
        "all-to-all        max load 630,",
        "eBB ",
        "[2: 11016, 4: 408240], 0 unroutable",
        "switch-to-switch  2862 pairs, 0 unroutable",
    ] {
        assert!(t.contains(needle), "`{needle}` not in:\n{t}");
    }
    // Every metric is explained in the line under it.
    let lines: Vec<&str> = t.lines().skip(1).collect();
    assert_eq!(lines.len(), 16, "{t}");
    for pair in lines.chunks(2) {
        assert!(
            pair[0].starts_with("  ") && pair[1].starts_with("                    · "),
            "{pair:?}"
        );
    }
    let lab = weft(&["report", "examples/lab-16.weft"]);
    insta::assert_snapshot!("report_lab16", text(&lab.stdout));
}

/// A DGX SuperPOD SU: 32 machines of 8 HCAs count as 32 hosts, and the machine and per-rail
/// patterns are printed (each rail's HCAs share a leaf, so rail-aligned traffic loads no
/// fabric link).
#[test]
fn report_counts_a_host_once_and_prints_rails() {
    let out = weft(&["report", "examples/superpod-1su.weft"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(
        t.contains("  hosts             32 (256 ports: 32 × 8;"),
        "{t}"
    );
    assert!(t.contains("  rail-aligned eBB 1.0000 "), "{t}");
    assert_eq!(t.matches("\n  rail ").count(), 8, "{t}");
    insta::assert_snapshot!("report_superpod_1su", t);
    let json = weft(&["report", "examples/superpod-1su.weft", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["quality"]["machines"]["hosts"], 32);
    assert_eq!(
        v["quality"]["machines"]["rails"].as_array().unwrap().len(),
        8
    );
}

#[test]
fn report_json_is_deterministic() {
    let args = [
        "report",
        "examples/lab-16.weft",
        "--format",
        "json",
        "--bisections",
        "50",
    ];
    let a = weft(&args);
    assert!(a.status.success(), "{}", text(&a.stderr));
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(v["engine"], "fat_tree");
    assert_eq!(v["quality"]["hosts"], 16);
    assert_eq!(v["quality"]["bisections"]["count"], 50);
    assert_eq!(v["quality"]["hops"]["pairs"], 240);
    // lab-16 has a broken uplink on leaf3: the balance shows it.
    let per = v["quality"]["balance"]["per_switch"].as_array().unwrap();
    let leaf3 = per.iter().find(|u| u["switch"] == "leaf3").unwrap();
    assert_eq!(leaf3["unbalanced"], true);
    assert_eq!(weft(&args).stdout, a.stdout, "same input, same bytes");
    let seeded = weft(&[&args[..], &["--seed", "9"]].concat());
    assert_ne!(seeded.stdout, a.stdout);
}

#[test]
fn report_of_a_broken_fabric_exits_1() {
    let dir = std::env::temp_dir().join(format!("weft-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("t.weft");
    std::fs::write(
        &f,
        "use std::hardware::{sb7800, connectx5}\nuse std::topology::torus\nfabric t {\n    topology = torus(dims: [4, 4], switch: sb7800, hca: connectx5)\n    routing { engine = fat_tree }\n}\n",
    )
    .unwrap();
    let out = weft(&["report", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("weft::engine_refused"));
    assert!(out.stdout.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
