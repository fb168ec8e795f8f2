//! `weft diff A B`: a small two-level fabric described with explicit links compared with
//! itself, with two cables swapped, one removed (a down link), one more, and one at 1x width
//! (imported dumps, which record widths; a description expects its ports' widths); in every format; the exit codes (0 same, 1 differ,
//! 2 unreadable or not compiling).

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use crate::support::weft_in as weft;
use std::path::Path;

const DESIGN: &str = r#"use std::hardware::{sb7800, connectx5}

fabric small {
    topology {
        switch spine : sb7800 { level = 2 }
        switch leaf[1..=2] : sb7800 { level = 1 }
        hca host[1..=4] : connectx5
        link leaf[1].p[33] <-> spine.p[1]
        link leaf[2].p[33] <-> spine.p[2]
        link host[1].p[1] <-> leaf[1].p[1]
        link host[2].p[1] <-> leaf[1].p[2]
        link host[3].p[1] <-> leaf[2].p[1]
        link host[4].p[1] <-> leaf[2].p[2]
    }
}
"#;

/// A fresh directory for one test, with `design.weft` in it.
fn scratch(test: &str) -> crate::support::Scratch {
    let d = crate::support::scratch(&format!("cabling-{test}"));
    std::fs::write(d.join("design.weft"), DESIGN).unwrap();
    d
}

/// `design.weft` with `edits` (from, to) made, written as `name`.
fn variant(dir: &Path, name: &str, edits: &[(&str, &str)]) {
    let mut t = DESIGN.to_owned();
    for (from, to) in edits {
        assert!(t.contains(from), "{from}");
        t = t.replacen(from, to, 1);
    }
    std::fs::write(dir.join(name), t).unwrap();
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

/// The two host cables of leaf 1 and leaf 2's first ports swapped.
const SWAP: [(&str, &str); 2] = [
    (
        "link host[1].p[1] <-> leaf[1].p[1]",
        "link host[1].p[1] <-> leaf[2].p[1]",
    ),
    (
        "link host[3].p[1] <-> leaf[2].p[1]",
        "link host[3].p[1] <-> leaf[1].p[1]",
    ),
];

#[test]
fn the_same_fabric_differs_in_nothing_exit_0() {
    let d = scratch("same");
    let o = weft(&d, &["diff", "design.weft", "design.weft"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    insta::assert_snapshot!(text(&o.stdout), @"design.weft is cabled as design.weft says: no difference");
    let o = weft(
        &d,
        &["diff", "design.weft", "design.weft", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["findings"], serde_json::json!([]));
}

#[test]
fn two_cables_swapped_are_two_miswired_cables_exit_1() {
    let d = scratch("swap");
    variant(&d, "swapped.weft", &SWAP);
    let o = weft(&d, &["diff", "design.weft", "swapped.weft"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    insta::assert_snapshot!("swap_human", text(&o.stdout));
    let o = weft(
        &d,
        &["diff", "design.weft", "swapped.weft", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(1));
    insta::assert_snapshot!("swap_json", text(&o.stdout));
    let o = weft(
        &d,
        &["diff", "design.weft", "swapped.weft", "--format", "sarif"],
    );
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let results = v["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert!(results
        .iter()
        .all(|r| r["ruleId"] == "weft::cable_miswired"));
}

#[test]
fn a_cable_down_is_missing_and_a_cable_more_is_extra() {
    let d = scratch("missing");
    variant(
        &d,
        "changed.weft",
        &[(
            "        link host[4].p[1] <-> leaf[2].p[2]\n    }\n",
            "        link host[4].p[1] <-> leaf[2].p[2]\n        link leaf[1].p[34] <-> spine.p[3]\n    }\n    faults {\n        link host[2].p[1] down\n    }\n",
        )],
    );
    let o = weft(&d, &["diff", "design.weft", "changed.weft"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    insta::assert_snapshot!(text(&o.stdout), @r"
    × changed.weft: cable host2/1 – leaf1/2 is missing [weft::cable_missing]
    × changed.weft: cable leaf1/34 – spine/3 is not in the design [weft::cable_extra]
    2 error(s), 0 warning(s)
    ");
}

/// `name.weft` importing `dump` (written beside it as `name.ibnetdiscover`).
fn imported(dir: &Path, name: &str, dump: &str) {
    std::fs::write(dir.join(format!("{name}.ibnetdiscover")), dump).unwrap();
    std::fs::write(
        dir.join(format!("{name}.weft")),
        format!("fabric {name} {{\n    topology = import(\"{name}.ibnetdiscover\")\n}}\n"),
    )
    .unwrap();
}

#[test]
fn a_cable_at_1x_is_a_width_difference_where_both_record_widths() {
    let d = scratch("width");
    let o = weft(&d, &["export", "design.weft"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let dump = text(&o.stdout);
    imported(&d, "recorded", &dump);
    let narrow = dump.replacen("\"host2\" lid 0 4xEDR", "\"host2\" lid 0 1xEDR", 1);
    assert_ne!(narrow, dump);
    imported(&d, "narrow", &narrow);
    let o = weft(&d, &["diff", "recorded.weft", "narrow.weft"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    insta::assert_snapshot!(text(&o.stdout), @r"
    × narrow.weft: cable host2/1 – leaf1/2 is 1x wide, the design says 4x [weft::cable_width]
    1 error(s), 0 warning(s)
    ");
    // The description records no width: its ports' (4x) are expected.
    let o = weft(&d, &["diff", "design.weft", "narrow.weft"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert_eq!(text(&o.stdout).matches("weft::cable_width").count(), 1);
    // The other way round, the description records no rate: nothing to compare.
    let o = weft(&d, &["diff", "narrow.weft", "design.weft"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
    // An imported dump of the design is cabled as it says.
    let o = weft(&d, &["diff", "design.weft", "recorded.weft"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
}

#[test]
fn a_build_directory_and_a_state_are_read_too() {
    let d = scratch("build");
    variant(&d, "swapped.weft", &SWAP);
    let o = weft(&d, &["build", "design.weft", "-o", "out"]);
    if !o.status.success() {
        // A fabric the router refuses has no build directory; the diff of descriptions is
        // tested above.
        panic!("build: {}", text(&o.stderr));
    }
    let o = weft(&d, &["diff", "out", "swapped.weft"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).matches("weft::cable_miswired").count(), 2);
    let o = weft(&d, &["diff", "out/state.json", "design.weft"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
}

#[test]
fn an_unreadable_input_is_exit_2() {
    let d = scratch("bad");
    let o = weft(&d, &["diff", "design.weft", "absent.weft"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("absent.weft"),
        "{}",
        text(&o.stderr)
    );
    std::fs::write(
        d.join("broken.weft"),
        "fabric broken { topology { link } }\n",
    )
    .unwrap();
    let o = weft(&d, &["diff", "broken.weft", "design.weft"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    std::fs::write(d.join("state.json"), "{}").unwrap();
    let o = weft(&d, &["diff", "design.weft", "state.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

#[test]
fn link_rates_written_in_both_descriptions_are_compared() {
    let d = scratch("rates");
    let cable = "link host[2].p[1] <-> leaf[1].p[2]";
    variant(
        &d,
        "rated.weft",
        &[(
            cable,
            "link host[2].p[1] <-> leaf[1].p[2] { width = 4x, speed = EDR }",
        )],
    );
    variant(
        &d,
        "degraded.weft",
        &[(
            cable,
            "link host[2].p[1] <-> leaf[1].p[2] { width = 1x, speed = HDR }",
        )],
    );
    let o = weft(&d, &["diff", "rated.weft", "degraded.weft"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    insta::assert_snapshot!(text(&o.stdout), @r"
    × degraded.weft: cable host2/1 – leaf1/2 runs at HDR, the design says EDR [weft::cable_speed]
    × degraded.weft: cable host2/1 – leaf1/2 is 1x wide, the design says 4x [weft::cable_width]
    2 error(s), 0 warning(s)
    ");
}

/// [`DESIGN`] as a cabling spreadsheet.
const DESIGN_CSV: &str = "\
StartDevice,StartPort,EndDevice,EndPort,Label
leaf1,33,spine,1,U1
leaf2,33,spine,2,U2
host1,1,leaf1,1,H1
host2,1,leaf1,2,H2
host3,1,leaf2,1,H3
host4,1,leaf2,2,H4
";

/// [`DESIGN`] with every node renamed (the same cables; GUIDs follow declaration order, so
/// they stay the same).
fn renamed(dir: &Path) {
    let t = DESIGN
        .replace("spine", "core")
        .replace("leaf", "edge")
        .replace("host", "node");
    std::fs::write(dir.join("renamed.weft"), t).unwrap();
}

#[test]
fn a_spreadsheet_design_is_compared_like_a_description() {
    let d = scratch("csv");
    std::fs::write(d.join("design.csv"), DESIGN_CSV).unwrap();
    let o = weft(&d, &["diff", "design.csv", "design.weft"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    insta::assert_snapshot!(text(&o.stdout), @"design.weft is cabled as design.csv says: no difference");
    variant(&d, "swapped.weft", &SWAP);
    let o = weft(&d, &["diff", "design.csv", "swapped.weft"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    insta::assert_snapshot!(text(&o.stdout), @r"
    × swapped.weft: cable host1/1 – leaf1/1 is miswired: host1/1 is joined to leaf2/1, leaf1/1 to host3/1 [weft::cable_miswired]
    × swapped.weft: cable host3/1 – leaf2/1 is miswired: host3/1 is joined to leaf1/1, leaf2/1 to host1/1 [weft::cable_miswired]
    2 error(s), 0 warning(s)
    ");
    // The spreadsheet has no GUIDs: its devices are named with their found nodes'.
    let o = weft(
        &d,
        &["diff", "design.csv", "swapped.weft", "--format", "json"],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = &v["findings"][0]["properties"];
    assert_eq!(p["a"]["node"], "host1");
    assert_ne!(p["a"]["guid"], "0x0000000000000000", "{p}");
    let o = weft(
        &d,
        &["diff", "design.csv", "swapped.weft", "--format", "sarif"],
    );
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["runs"][0]["results"].as_array().unwrap().len(), 2);
    // A spreadsheet is a design only.
    let o = weft(&d, &["diff", "design.weft", "design.csv"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("a cabling spreadsheet is a design"),
        "{}",
        text(&o.stderr)
    );
    // A spreadsheet has no GUIDs: matching it by GUIDs only is refused, not an empty match.
    let o = weft(
        &d,
        &["diff", "design.csv", "design.weft", "--match", "guids"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("weft::cabling::no_guids"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_bad_spreadsheet_is_exit_2_naming_its_line_and_column() {
    let d = scratch("badcsv");
    let cases = [
        (
            "noport.csv",
            "StartDevice,StartPort,EndDevice\nleaf1,1,host1\n",
        ),
        (
            "port.csv",
            "StartDevice,StartPort,EndDevice,EndPort\nleaf1,1,host1,1\nleaf1,x2,host2,1\n",
        ),
        (
            "twice.csv",
            "StartDevice,StartPort,EndDevice,EndPort\nleaf1,1,host1,1\nleaf1,1,host2,1\n",
        ),
        (
            "self.csv",
            "StartDevice,StartPort,EndDevice,EndPort\nleaf1,1,leaf1,2\n",
        ),
        (
            "short.csv",
            "StartDevice,StartPort,EndDevice,EndPort\nleaf1,1,host1,1\nleaf1,2,host2\n",
        ),
    ];
    let mut all = String::new();
    for (name, body) in cases {
        std::fs::write(d.join(name), body).unwrap();
        let o = weft(&d, &["diff", name, "design.weft"]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o.stdout));
        all += &text(&o.stderr);
    }
    insta::assert_snapshot!(all);
}

#[test]
fn a_renamed_fabric_is_matched_by_position() {
    let d = scratch("position");
    renamed(&d);
    let o = weft(
        &d,
        &["diff", "design.weft", "renamed.weft", "--match", "position"],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    insta::assert_snapshot!("position_human", text(&o.stdout));
    // By names, nothing matches: every node missing and extra.
    let o = weft(
        &d,
        &["diff", "design.weft", "renamed.weft", "--match", "names"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stdout).matches("weft::node_missing").count(), 7);
    // By GUIDs (declaration order, unchanged), everything matches.
    let o = weft(
        &d,
        &["diff", "design.weft", "renamed.weft", "--match", "guids"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
    // A spreadsheet has no GUIDs and other names: `auto` falls to position, as notes in JSON.
    std::fs::write(d.join("design.csv"), DESIGN_CSV).unwrap();
    let o = weft(
        &d,
        &["diff", "design.csv", "renamed.weft", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true);
    let notes: Vec<String> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert_eq!(f["code"], "weft::node_matched_by_position");
            assert_eq!(f["level"], "note");
            format!(
                "{} = {}",
                f["properties"]["design"], f["properties"]["found"]["node"]
            )
        })
        .collect();
    assert_eq!(
        notes,
        [
            "\"host1\" = \"node1\"",
            "\"host2\" = \"node2\"",
            "\"host3\" = \"node3\"",
            "\"host4\" = \"node4\"",
            "\"leaf1\" = \"edge1\"",
            "\"leaf2\" = \"edge2\"",
            "\"spine\" = \"core\""
        ]
    );
    // A renamed fabric that also differs: from nothing, no node's place is unique (exit 2).
    let t = std::fs::read_to_string(d.join("renamed.weft"))
        .unwrap()
        .replace("        link node[4].p[1] <-> edge[2].p[2]\n", "");
    std::fs::write(d.join("changed.weft"), t).unwrap();
    let o = weft(
        &d,
        &["diff", "design.weft", "changed.weft", "--match", "position"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("weft::cabling::no_position"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_cable_at_another_speed_is_found_between_dumps_and_against_a_spreadsheet() {
    let d = scratch("speed");
    let o = weft(&d, &["export", "design.weft"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let dump = text(&o.stdout);
    std::fs::write(d.join("design.ibnetdiscover"), &dump).unwrap();
    let slow = dump.replacen("\"host2\" lid 0 4xEDR", "\"host2\" lid 0 4xQDR", 1);
    assert_ne!(slow, dump);
    std::fs::write(d.join("slow.ibnetdiscover"), &slow).unwrap();
    // Dumps are read directly.
    let o = weft(&d, &["diff", "design.ibnetdiscover", "slow.ibnetdiscover"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    insta::assert_snapshot!(text(&o.stdout), @r"
    × slow.ibnetdiscover: cable host2/1 – leaf1/2 runs at QDR, the design says EDR [weft::cable_speed]
    1 error(s), 0 warning(s)
    ");
    let o = weft(
        &d,
        &["diff", "design.ibnetdiscover", "design.ibnetdiscover"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
    // A spreadsheet with Speed and Width columns expects them; empty cells expect nothing.
    let sheet = "StartDevice,StartPort,EndDevice,EndPort,Speed,Width\n\
                 leaf1,33,spine,1,EDR,4x\nleaf2,33,spine,2,,\nhost1,1,leaf1,1,,\n\
                 host2,1,leaf1,2,EDR,4x\nhost3,1,leaf2,1,,\nhost4,1,leaf2,2,,\n";
    std::fs::write(d.join("rated.csv"), sheet).unwrap();
    let o = weft(&d, &["diff", "rated.csv", "slow.ibnetdiscover"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    insta::assert_snapshot!(text(&o.stdout), @r"
    × slow.ibnetdiscover: cable host2/1 – leaf1/2 runs at QDR, the design says EDR [weft::cable_speed]
    1 error(s), 0 warning(s)
    ");
    let o = weft(&d, &["diff", "rated.csv", "design.ibnetdiscover"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
    // Without rate columns, a spreadsheet expects no rate.
    std::fs::write(d.join("design.csv"), DESIGN_CSV).unwrap();
    let o = weft(&d, &["diff", "design.csv", "slow.ibnetdiscover"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
}

#[test]
fn the_page_places_extra_cables_nodes_and_speeds_and_notes_by_position() {
    let d = scratch("html");
    // A cable more, a host more, a host gone, a cable at another speed (matched by names:
    // the host more has the GUID of the host gone).
    variant(
        &d,
        "changed.weft",
        &[
            (
                "hca host[1..=4] : connectx5",
                "hca host[1..=3] : connectx5\n        hca extra : connectx5",
            ),
            (
                "link host[4].p[1] <-> leaf[2].p[2]",
                "link extra.p[1] <-> leaf[2].p[2]\n        link leaf[1].p[34] <-> spine.p[3]",
            ),
            (
                "link host[2].p[1] <-> leaf[1].p[2]",
                "link host[2].p[1] <-> leaf[1].p[2] { speed = HDR }",
            ),
        ],
    );
    let o = weft(
        &d,
        &[
            "diff",
            "design.weft",
            "changed.weft",
            "--match",
            "names",
            "--format",
            "json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap().len();
    let o = weft(
        &d,
        &[
            "diff",
            "design.weft",
            "changed.weft",
            "--match",
            "names",
            "--format",
            "html",
            "-o",
            "changed.html",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let html = std::fs::read_to_string(d.join("changed.html")).unwrap();
    // Every finding a row, linked to its marks.
    assert_eq!(html.matches("<tr id=\"finding-").count(), findings);
    assert_eq!(html.matches("data-finding=\"").count(), findings);
    assert_eq!(html.matches("<g class=\"ov\"").count(), findings);
    for (mark, what) in [
        ("<line class=\"extra\"", "the extra cable"),
        ("<line class=\"rate\"", "the cable at HDR"),
        ("<rect class=\"node-missing\"", "host4, missing"),
        ("<rect class=\"node-extra\"", "the extra host"),
        ("<rect class=\"ghost\"", "host4, not on the fabric"),
    ] {
        assert_eq!(html.matches(mark).count(), 1, "{what}");
    }
    assert!(html.contains("HDR (design EDR)"));
    assert!(html.contains("host4: missing"));
    // Renamed: every node a note; the switches outlined with their design names, the hosts
    // (not drawn) listed only.
    renamed(&d);
    let o = weft(
        &d,
        &[
            "diff",
            "design.weft",
            "renamed.weft",
            "--match",
            "position",
            "--format",
            "html",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let html = text(&o.stdout);
    assert!(html.contains("No difference:"));
    assert_eq!(html.matches("<rect class=\"note\"").count(), 3);
    assert!(html.contains(">= spine</text>"));
    assert_eq!(html.matches("(not placed on the drawing)").count(), 4);
}
