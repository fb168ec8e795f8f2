//! `weft report` end to end: the table, the JSON, and exit codes.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use crate::support::weft;
use std::path::{Path, PathBuf};

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
        "hop excess        over the shortest up*/down* path: 0 of 419256 pairs (max 0); over the shortest path: 0 pairs (max 0)",
        "switch-to-switch  2862 pairs, 0 unroutable",
    ] {
        assert!(t.contains(needle), "`{needle}` not in:\n{t}");
    }
    // Every metric is explained in the line under it.
    let lines: Vec<&str> = t.lines().skip(1).collect();
    assert_eq!(lines.len(), 18, "{t}");
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
        t.contains("  hosts             32 machines (32 × 8), 256 end ports (0 left out)"),
        "{t}"
    );
    assert!(
        t.contains("  rails             rail-optimised: 32 of 32 machines"),
        "{t}"
    );
    assert!(t.contains("  rail-aligned eBB 1.0000 "), "{t}");
    assert_eq!(t.matches("\n  rail ").count(), 8, "{t}");
    insta::assert_snapshot!("report_superpod_1su", t);
    let json = weft(&["report", "examples/superpod-1su.weft", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["quality"]["machines"]["hosts"], 32);
    // One meaning per number: hosts are machines, end ports are ports.
    assert_eq!(
        (&v["quality"]["hosts"], &v["quality"]["end_ports"]),
        (&serde_json::json!(32), &serde_json::json!(256))
    );
    assert_eq!(v["quality"]["machines"]["cabling"]["rail_optimised"], true);
    assert_eq!(v["findings"], serde_json::json!([]));
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
    let dir = crate::support::scratch("report");
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

/// A small tree of 4-port switches (8 hosts), on 1 VL, on vFtree's 2 lanes or on a dFtree
/// pair: the three fabrics `weft report A B C --simulate` puts side by side.
fn small_trees(dir: &Path) -> [PathBuf; 3] {
    std::fs::create_dir_all(dir).unwrap();
    let qos = [
        ("fat-tree", "    vls { budget = 1 }\n"),
        (
            "vftree",
            "    vls { budget = 2 }\n    qos { class compute { lanes = vftree(maxvl: 2) } }\n",
        ),
        (
            "dftree",
            "    vls { budget = 2 }\n    qos { class compute { lanes = dftree } }\n",
        ),
    ];
    qos.map(|(name, q)| {
        let f = dir.join(format!("{name}.weft"));
        std::fs::write(
            &f,
            format!(
                "use std::hardware::{{sb7800, connectx5}}\nuse std::topology::fat_tree\nfabric small {{\n    topology = fat_tree(levels: 2, radix: 4, switch: sb7800, hca: connectx5)\n{q}    routing {{ engine = fat_tree }}\n}}\n"
            ),
        )
        .unwrap();
        f
    })
}

#[test]
fn report_simulates_the_standard_patterns() {
    let args = ["report", "examples/lab-16.weft", "--simulate=20us"];
    let out = weft(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    for needle in [
        "  simulated         20000 ns per pattern (4000 ns warm-up), seed 0, 16 hosts at full load, host model refuse",
        "    uniform ",
        "    shift:8 ",
        "    all-to-all ",
        "    hotspot:1:5% ",
        ", at load 0.7 with end nodes sinking 0.9 of their link",
    ] {
        assert!(t.contains(needle), "`{needle}` not in:\n{t}");
    }
    insta::assert_snapshot!("report_lab16_simulated", t);
    // Without --simulate, nothing simulated.
    let plain = text(&weft(&["report", "examples/lab-16.weft"]).stdout);
    assert!(!plain.contains("simulated"), "{plain}");
    // The JSON key, and the same bytes on a re-run.
    let json = [&args[..], &["--format", "json"]].concat();
    let a = weft(&json);
    assert!(a.status.success(), "{}", text(&a.stderr));
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    let s = &v["simulated"];
    assert_eq!(s["duration_ns"], 20_000);
    assert_eq!(s["hosts"], 16);
    let traffic: Vec<&str> = s["patterns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["traffic"].as_str().unwrap())
        .collect();
    assert_eq!(
        traffic,
        [
            "uniform",
            "shift:8",
            "all-to-all",
            "hotspot:1:5%",
            "hotspot:1:5%"
        ]
    );
    for p in s["patterns"].as_array().unwrap() {
        let g = p["throughput_per_node_gbps"]["mean"].as_f64().unwrap();
        assert!(g > 1.0 && g < 100.0, "{p}");
        // No dFtree lanes on this fabric: nothing for the loop to do.
        assert!(p["dftree"].is_null(), "{p}");
    }
    // The last pattern: end nodes sink 90 % of their link, hosts offer 70 % of theirs.
    assert_eq!(s["patterns"][4]["load"], 0.7);
    assert_eq!(s["patterns"][4]["receive_rate"], 0.9);
    assert_eq!(s["patterns"][3]["receive_rate"], 1.0);
    assert_eq!(weft(&json).stdout, a.stdout, "same input, same bytes");
    let other = weft(&[&json[..], &["--seed", "3"]].concat());
    assert_ne!(other.stdout, a.stdout, "the seed moves the traffic");
    // A duration that does not parse is refused before anything is compiled.
    let bad = weft(&["report", "examples/lab-16.weft", "--simulate=soon"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(text(&bad.stderr).contains("weft::traffic::duration"));
    assert!(text(&bad.stderr).contains("duration `soon`"));
}

#[test]
fn report_puts_fat_tree_vftree_and_dftree_side_by_side() {
    let dir = crate::support::scratch("report-cmp");
    let files = small_trees(&dir);
    let paths: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
    let out = weft(&[&["report"], &paths[..], &["--simulate=20us"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert_eq!(t.matches("fabric `small`").count(), 3, "{t}");
    let side = &t[t.find("\nside by side\n").expect("a side-by-side table")..];
    insta::assert_snapshot!("report_side_by_side", side);
    // The vFtree lanes carry the hot-spot's victims past it: more than on 1 VL.
    let row = |label: &str| -> Vec<f64> {
        let line = side
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap();
        line.split_whitespace()
            .rev()
            .take(3)
            .map(|x| x.parse().unwrap())
            .collect::<Vec<f64>>()
            .into_iter()
            .rev()
            .collect()
    };
    let hot = row("hotspot:1:5% Gb/s/node");
    assert!(hot[1] > hot[0], "{hot:?}");
    // JSON: one report per file, under `reports`.
    let json = weft(
        &[
            &["report"],
            &paths[..],
            &["--simulate=20us", "--format", "json"],
        ]
        .concat(),
    );
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let reports = v["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 3);
    assert!(reports[1]["file"]
        .as_str()
        .unwrap()
        .ends_with("vftree.weft"));
    assert_eq!(
        reports[2]["simulated"]["patterns"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    // Only the dFtree fabric runs the loop; on 8 hosts a 5 % hot-spot is not one it sees.
    assert!(reports[0]["simulated"]["patterns"][4]["dftree"].is_null());
    assert_eq!(
        reports[2]["simulated"]["patterns"][4]["dftree"]["hotspots"],
        0
    );
    assert!(
        side.contains("  dftree: dFtree's loop saw no hot-spot on uniform, shift:4, all-to-all, hotspot:1:5%, hotspot:1:5% (load 0.7, receive 0.9)\n"),
        "{side}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_runs_dftrees_loop_where_it_can_see_a_hot_spot() {
    // 32 hosts on a two-level tree of 8-port switches, on 1 VL and on a dFtree pair: with
    // end nodes sinking at line rate the loop sees no hot-spot (the dFtree column is the
    // 1-VL tree's, and says why); at a receive rate of 0.9 it marks the hot-spot and moves
    // its contributors' flows to the slow lane.
    let dir = crate::support::scratch("report-dftree");
    let files = [
        ("fat-tree", "    vls { budget = 1 }\n"),
        (
            "dftree",
            "    vls { budget = 2 }\n    qos { class compute { lanes = dftree } }\n",
        ),
    ]
    .map(|(name, q)| {
        let f = dir.join(format!("{name}.weft"));
        std::fs::write(
            &f,
            format!(
                "use std::hardware::{{sb7800, connectx5}}\nuse std::topology::fat_tree\nfabric small {{\n    topology = fat_tree(levels: 2, radix: 8, switch: sb7800, hca: connectx5)\n{q}    routing {{ engine = fat_tree }}\n}}\n"
            ),
        )
        .unwrap();
        f
    });
    let paths: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
    let out = weft(&[&["report"], &paths[..], &["--simulate"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    let line = t
        .lines()
        .find(|l| l.starts_with("  dftree: "))
        .unwrap_or_else(|| panic!("no dFtree line in:\n{t}"));
    assert!(
        line.starts_with("  dftree: dFtree's loop saw no hot-spot on uniform, shift:16, all-to-all, hotspot:1:5%; on hotspot:1:5% (load 0.7, receive 0.9) it marked "),
        "{line}"
    );
    let json = weft(&[&["report"], &paths[..], &["--simulate", "--format", "json"]].concat());
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let dft = &v["reports"][1]["simulated"]["patterns"];
    assert_eq!(dft[3]["dftree"]["hotspots"], 0, "{dft}");
    assert!(dft[4]["dftree"]["hotspots"].as_u64().unwrap() >= 1, "{dft}");
    assert!(dft[4]["dftree"]["moves"].as_u64().unwrap() > 0, "{dft}");
    // The flows moved off the hot-spot's lane: the victims get more than on 1 VL.
    let gbps = |r: usize| {
        v["reports"][r]["simulated"]["patterns"][4]["throughput_per_node_gbps"]["mean"]
            .as_f64()
            .unwrap()
    };
    assert!(
        gbps(1) > gbps(0),
        "dFtree {} against 1 VL {}",
        gbps(1),
        gbps(0)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scratch directory of this test process.
fn scratch(name: &str) -> crate::support::Scratch {
    crate::support::scratch(&format!("report-{name}"))
}

/// The topograph NDR DGX dump: hosts are machines and end ports are ports in text and JSON,
/// the fabric is rail-optimised, the crossed host is a finding, the default-named HCAs are
/// counted; `weft diff` names the crossed host too.
#[test]
fn report_and_diff_find_the_crossed_host_of_a_real_dump() {
    let d = scratch("topograph");
    let program = d.join("ndr.weft");
    let dump = "tests/fixtures/real/topograph-ndr-dgx.ibnetdiscover";
    let out = weft(&["import", dump, "-o", program.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let p = program.to_str().unwrap();
    let out = weft(&["report", p, "--bisections", "32"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    let lines: Vec<&str> = t
        .lines()
        .filter(|l| {
            l.starts_with("  hosts ") || l.starts_with("  rails ") || l.contains("crossed cables")
        })
        .collect();
    insta::assert_snapshot!("report_topograph_hosts_and_rails", lines.join("\n"));
    let json = weft(&["report", p, "--bisections", "32", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let q = &v["quality"];
    assert_eq!(
        (&q["hosts"], &q["end_ports"]),
        (&serde_json::json!(191), &serde_json::json!(542))
    );
    assert_eq!(q["machines"]["default_named"], 69);
    assert_eq!(q["machines"]["cabling"]["rail_optimised"], true);
    let codes: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["weft::crossed_rails"]);
    assert!(v["findings"][0]["message"]
        .as_str()
        .unwrap()
        .contains("host `b08-p1-dgx-08-c01`"));
    // The dump against itself: no difference, and the crossed host a warning.
    let diff = weft(&["diff", dump, dump, "--format", "json"]);
    assert!(diff.status.success(), "{}", text(&diff.stderr));
    let v: serde_json::Value = serde_json::from_slice(&diff.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["findings"][0]["code"], "weft::crossed_rails");
    assert_eq!(v["findings"][0]["level"], "warning");
    assert!(v["findings"][0]["message"]
        .as_str()
        .unwrap()
        .contains("`b08-p1-dgx-08-c01 HCA-5` is cabled to `MF0;B09-P1-IBLEAF-04-08:MQM9701/U1`"));
    std::fs::remove_dir_all(&d).unwrap();
}

/// A director fabric whose machines put all their HCAs on one leaf: not rail-optimised, said,
/// and no rail metrics; its routes are shortest up*/down* paths.
#[test]
fn report_says_a_director_fabric_is_not_rail_optimised() {
    let d = scratch("director");
    let program = d.join("dir.weft");
    let dump = "tests/fixtures/real/ufm-ndt-director-putty.ibnetdiscover";
    let out = weft(&["import", dump, "-o", program.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json = weft(&[
        "report",
        program.to_str().unwrap(),
        "--bisections",
        "32",
        "--format",
        "json",
    ]);
    assert!(json.status.success(), "{}", text(&json.stderr));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let m = &v["quality"]["machines"];
    assert_eq!(
        m["cabling"],
        serde_json::json!({
            "rail_optimised": false, "machines": 280, "spread": 2, "one_leaf": 278, "crossed": []
        })
    );
    assert_eq!(
        (&m["rail_aligned"], &m["cross_rail"]),
        (&serde_json::Value::Null, &serde_json::Value::Null)
    );
    assert_eq!(m["rails"], serde_json::json!([]));
    // Leaf ASICs missing a cable to a spine ASIC reach the other leaves through a spine
    // both are cabled to, not over a core (1 440 ordered host pairs took 2 links more).
    let e = &v["quality"]["hop_excess"];
    assert_eq!(
        (&e["over_updown"], &e["over_shortest"], &e["without_updown"]),
        (
            &serde_json::json!(0),
            &serde_json::json!(0),
            &serde_json::json!(0)
        ),
        "{e}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// One host: no bisection has a flow, so the eBB is `n/a` (JSON `null`), not 0.
#[test]
fn report_of_one_host_has_no_ebb() {
    let d = scratch("one");
    let program = d.join("one.weft");
    std::fs::write(
        &program,
        "use std::hardware::{sb7800, connectx5}\nfabric one {\n    topology {\n        switch s : sb7800\n        hca h : connectx5\n        link s.p[1] <-> h.p[1]\n    }\n}\n",
    )
    .unwrap();
    let p = program.to_str().unwrap();
    let out = weft(&["report", p]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("  eBB               n/a (worst bisection n/a, best n/a)"),
        "{}",
        text(&out.stdout)
    );
    let json = weft(&["report", p, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["quality"]["bisections"]["ebb"], serde_json::Value::Null);
    assert_eq!(
        (&v["quality"]["hosts"], &v["quality"]["end_ports"]),
        (&serde_json::json!(1), &serde_json::json!(1))
    );
    std::fs::remove_dir_all(&d).unwrap();
}
