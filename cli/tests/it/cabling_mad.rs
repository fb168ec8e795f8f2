//! `weft audit --target mad --expect DESIGN.weft` on ibsim after OpenSM assigned LIDs: the
//! fabric ibsim simulates is the design with two host cables swapped and one leaf uplink
//! removed, one uplink narrowed to 1x and one slowed to FDR with `ibportstate` (`width 1`,
//! `espeed 1`: ibsim changes LinkWidthActive and LinkSpeedExtActive as told); the audit reports
//! exactly those five differences (two miswired cables, one missing, one width, one speed),
//! each naming both ends (exit 1); the unchanged fabric gives exit 0. The same with the design
//! given as a cabling spreadsheet (`design.csv`, with Speed and Width columns), in JSON and
//! SARIF; and a spreadsheet whose names are a template's, none the fabric's, matched by
//! position.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use std::time::Duration;
use weft_tests::ibsim::{self, Ibsim, IbsimError, Limits};

const DESIGN: &str = r#"use std::hardware::{sb7800, connectx5}

fabric small {
    topology {
        switch spine : sb7800 { level = 2 }
        switch leaf[1..=2] : sb7800 { level = 1 }
        hca host[1..=4] : connectx5
        link leaf[1].p[33] <-> spine.p[1]
        link leaf[1].p[34] <-> spine.p[3]
        link leaf[2].p[33] <-> spine.p[2]
        link leaf[2].p[34] <-> spine.p[4]
        link host[1].p[1] <-> leaf[1].p[1]
        link host[2].p[1] <-> leaf[1].p[2]
        link host[3].p[1] <-> leaf[2].p[1]
        link host[4].p[1] <-> leaf[2].p[2]
    }
}
"#;

/// The design as a cabling spreadsheet: the same cables, with a cable type and length weft
/// ignores, and the speed and width it compares.
const DESIGN_CSV: &str = "\
Start Device,Start Port,End Device,End Port,Cable Type,Length,Speed,Width
leaf1,33,spine,1,AOC,5m,EDR,4x
leaf1,34,spine,3,AOC,5m,EDR,4x
leaf2,33,spine,2,AOC,5m,EDR,4x
leaf2,34,spine,4,AOC,5m,EDR,4x
host1,1,leaf1,1,DAC,1m,EDR,4x
host2,1,leaf1,2,DAC,1m,EDR,4x
host3,1,leaf2,1,DAC,1m,EDR,4x
host4,1,leaf2,2,DAC,1m,EDR,4x
";

/// [`DESIGN_CSV`] as a template would write it: every device under another name (no name
/// matches the fabric's node descriptions; a spreadsheet has no GUIDs).
fn template_csv() -> String {
    DESIGN_CSV
        .replace("spine", "core-a")
        .replace("leaf", "edge-")
        .replace("host", "node-")
}

/// The design with `edits` (from, to) made.
fn variant(edits: &[(&str, &str)]) -> String {
    let mut t = DESIGN.to_owned();
    for (from, to) in edits {
        assert!(t.contains(from), "{from}");
        t = t.replacen(from, to, 1);
    }
    t
}

/// `weft audit --target mad --expect DESIGN ARGS` (`design.weft` or `design.csv`, the first
/// of `args`) on ibsim simulating `simulated`
/// after OpenSM routed it and `ibportstate` ran with each of `narrowed` (its DR path
/// arguments and `width 1` or `espeed 1`): exit code, stdout and stderr.
fn audit(
    tools: &ibsim::Tools,
    simulated: &str,
    narrowed: &[&[&str]],
    args: &[&str],
) -> (Option<i32>, String, String) {
    let c = weft_compiler::check("t.weft", simulated, &weft_compiler::NoFiles);
    let fabric = c.elaborated.unwrap().fabric;
    let net = weft_formats::ibnetdiscover::write(&fabric, None).unwrap();
    let sim = Ibsim::start(tools, &net, Some(Limits::for_fabric(&fabric))).unwrap();
    let dir = sim.dir().to_owned();
    std::fs::write(dir.join("design.weft"), DESIGN).unwrap();
    std::fs::write(dir.join("design.csv"), DESIGN_CSV).unwrap();
    std::fs::write(dir.join("template.csv"), template_csv()).unwrap();
    let cache = dir.join("osm");
    std::fs::create_dir_all(&cache).unwrap();
    let log = cache.join("osm.log");
    sim.run_env(
        "opensm",
        &["-o", "-f", log.to_str().unwrap()],
        &[("OSM_CACHE_DIR", cache.to_str().unwrap())],
        Duration::from_secs(120),
    )
    .unwrap();
    for n in narrowed {
        sim.run("ibportstate", n, Duration::from_secs(30)).unwrap();
    }
    let design = dir.join(args[0]);
    let mut all = vec![
        "audit",
        "--target",
        "mad",
        "--expect",
        design.to_str().unwrap(),
    ];
    all.extend_from_slice(&args[1..]);
    let out = match sim.run_env(crate::support::WEFT, &all, &[], Duration::from_secs(120)) {
        Ok(o) => o,
        Err(IbsimError::Failed { output, .. }) => output,
        Err(e) => panic!("{e}"),
    };
    (out.status.code(), out.stdout, out.stderr)
}

#[test]
fn swapped_and_removed_cables_are_found_against_the_design() {
    let Some(tools) = ibsim::require("cabling_against_the_design", &["opensm", "ibportstate"])
    else {
        return;
    };
    // Unchanged: exit 0, no cabling finding.
    let (code, out, err) = audit(&tools, DESIGN, &[], &["design.weft"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!out.contains("weft::cable"), "{out}");
    // Two cables swapped, one removed, one at 1x: exactly those four differences.
    let (code, out, err) = audit(
        &tools,
        &changed(),
        &NARROWED[..1],
        &["design.weft", "--format", "json"],
    );
    assert_eq!(code, Some(1), "{out}{err}");
    let four: Vec<(String, String)> = expected()
        .into_iter()
        .filter(|(code, _)| code != "weft::cable_speed")
        .collect();
    assert_eq!(four.len(), 4);
    assert_eq!(cabling_findings(&out), four, "{out}");
    // And one more cable slowed to FDR: the fifth.
    let (code, out, err) = audit(
        &tools,
        &changed(),
        NARROWED,
        &["design.weft", "--format", "json"],
    );
    assert_eq!(code, Some(1), "{out}{err}");
    assert_eq!(cabling_findings(&out), expected(), "{out}");
}

#[test]
fn a_spreadsheet_design_finds_the_same_differences() {
    let Some(tools) = ibsim::require("cabling_against_a_spreadsheet", &["opensm", "ibportstate"])
    else {
        return;
    };
    let (code, out, err) = audit(&tools, DESIGN, &[], &["design.csv"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!out.contains("weft::cable"), "{out}");
    let (code, out, err) = audit(
        &tools,
        &changed(),
        NARROWED,
        &["design.csv", "--format", "json"],
    );
    assert_eq!(code, Some(1), "{out}{err}");
    assert_eq!(cabling_findings(&out), expected(), "{out}");
    // A template's names: every node matched by position (notes, exit 0).
    let (code, out, err) = audit(&tools, DESIGN, &[], &["template.csv", "--format", "json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["ok"], true);
    let placed: Vec<String> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "weft::node_matched_by_position")
        .map(|f| {
            format!(
                "{} = {}",
                f["properties"]["design"].as_str().unwrap(),
                f["properties"]["found"]["node"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        placed,
        [
            "core-a = spine",
            "edge-1 = leaf1",
            "edge-2 = leaf2",
            "node-1 = host1",
            "node-2 = host2",
            "node-3 = host3",
            "node-4 = host4"
        ],
        "{out}"
    );
    // SARIF: the same five, by rule, in the same order.
    let (code, out, err) = audit(
        &tools,
        &changed(),
        NARROWED,
        &["design.csv", "--format", "sarif"],
    );
    assert_eq!(code, Some(1), "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let rules: Vec<String> = v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ruleId"].as_str().unwrap().to_owned())
        .filter(|r| r.starts_with("weft::cable") || r.starts_with("weft::node"))
        .collect();
    assert_eq!(
        rules,
        [
            "weft::cable_miswired",
            "weft::cable_miswired",
            "weft::cable_missing",
            "weft::cable_speed",
            "weft::cable_width"
        ],
        "{out}"
    );
}

/// The spine's port 3 (leaf1's second uplink) at 1x: `-D 0 3` is the local node's (ibsim's
/// first, the spine) port 3; its port 1 (leaf1's first uplink) at FDR (extended speed 1).
/// The width change comes first (the first test sends it alone).
const NARROWED: &[&[&str]] = &[
    &["-D", "0", "3", "width", "1"],
    &["-D", "0", "1", "espeed", "1"],
];

/// The design with two host cables swapped and one leaf uplink removed.
fn changed() -> String {
    variant(&[
        (
            "link host[1].p[1] <-> leaf[1].p[1]",
            "link host[1].p[1] <-> leaf[2].p[1]",
        ),
        (
            "link host[3].p[1] <-> leaf[2].p[1]",
            "link host[3].p[1] <-> leaf[1].p[1]",
        ),
        ("        link leaf[2].p[34] <-> spine.p[4]\n", ""),
    ])
}

/// The cabling findings of a JSON report: (code, message).
fn cabling_findings(out: &str) -> Vec<(String, String)> {
    let v: serde_json::Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["ok"], false);
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            let c = f["code"].as_str().unwrap();
            c.starts_with("weft::cable") || c.starts_with("weft::node")
        })
        .map(|f| {
            (
                f["code"].as_str().unwrap().to_owned(),
                f["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The five differences of [`changed`] and [`NARROWED`], each naming both ends.
fn expected() -> Vec<(String, String)> {
    [
        (
            "weft::cable_miswired",
            "cable host1/1 – leaf1/1 is miswired: host1/1 is joined to leaf2/1, leaf1/1 to host3/1",
        ),
        (
            "weft::cable_miswired",
            "cable host3/1 – leaf2/1 is miswired: host3/1 is joined to leaf1/1, leaf2/1 to host1/1",
        ),
        ("weft::cable_missing", "cable leaf2/34 – spine/4 is missing"),
        (
            "weft::cable_speed",
            "cable leaf1/33 – spine/1 runs at FDR, the design says EDR",
        ),
        (
            "weft::cable_width",
            "cable leaf1/34 – spine/3 is 1x wide, the design says 4x",
        ),
    ]
    .iter()
    .map(|(c, m)| ((*c).to_owned(), (*m).to_owned()))
    .collect()
}
