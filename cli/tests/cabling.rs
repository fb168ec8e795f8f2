//! `weft diff A B`: a small two-level fabric described with explicit links compared with
//! itself, with two cables swapped, one removed (a down link), one more, and one at 1x width
//! (imported dumps, which record widths; a description expects its ports' widths); in every format; the exit codes (0 same, 1 differ,
//! 2 unreadable or not compiling).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("weft-cabling-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
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

/// `weft ARGS` run in `dir`.
fn weft(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
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
