//! The `weft` binary end to end: every example checks clean, output formats and exit codes.

#![expect(clippy::panic, reason = "test helpers fail by panicking")]

use crate::support::{root, weft};
use std::path::{Path, PathBuf};
use std::process::Command;

mod build;
mod docs;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn examples() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join("examples"))
        .unwrap_or_else(|e| panic!("examples/: {e}"))
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".weft"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_example_checks_clean() {
    let names = examples();
    assert!(
        names.len() >= 8,
        "expected the examples of the foundation issue, found {names:?}"
    );
    let mut summaries = String::new();
    for name in names {
        let path = format!("examples/{name}");
        // The 45 056-host fabric is routed and verified in release mode instead
        // (`WEFT_BIG_EXAMPLES=1 cargo test --release -p weft-tests --test it examples_verify::`,
        // run by .ci/run); here, in a debug build, it is only described and validated.
        let out = if name == "cluster-45056.weft" {
            weft(&["check", "--no-verify", &path])
        } else {
            weft(&["check", &path])
        };
        assert_eq!(
            out.status.code(),
            Some(0),
            "{path}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        assert_eq!(text(&out.stderr), "", "{path} has warnings");
        summaries += &format!("$ weft check {path}\n{}\n", text(&out.stdout));
    }
    insta::assert_snapshot!("example_summaries", summaries);
}

#[test]
fn check_json() {
    let out = weft(&["check", "--format", "json", "examples/lab-16.weft"]);
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!("check_json_lab16", text(&out.stdout));
}

/// A rail-optimised SU with a SHARP aggregation node on every switch, two storage targets and
/// a management node: the summary counts the 32 host HCAs and the 15 service nodes apart, by
/// role, in `weft check` (human and JSON) and `weft build`.
#[test]
fn the_summary_counts_service_nodes_apart() {
    let dir = temp_dir("service");
    let p = dir.join("roles.weft");
    std::fs::write(
        &p,
        "use std::hardware::{qm8700, connectx6}\nuse std::topology::superpod\nmodel storage_target : hca {\n    ports = 1\n    role = storage\n}\nmodel ufm : hca {\n    ports = 1\n    role = management\n}\nfabric su {\n    topology {\n        superpod(units: 1, nodes_per_unit: 20, nodes: 4, switch: qm8700, hca: connectx6, aggregation: true)\n        hca store[1..=2] : storage_target\n        hca ufm1 : ufm\n        link store[1].p[1] <-> node(\"leaf-su1-r0\").p[5]\n        link store[2].p[1] <-> node(\"leaf-su1-r1\").p[5]\n        link ufm1.p[1] <-> node(\"leaf-su1-r2\").p[5]\n    }\n}\n",
    )
    .unwrap();
    let path = p.to_str().unwrap();
    let out = weft(&["check", path]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The summary (the engine line after it is the routing's).
    let summary: String = text(&out.stdout)
        .lines()
        .take_while(|l| !l.starts_with("  engine"))
        .map(|l| format!("{l}\n"))
        .collect();
    insta::assert_snapshot!("check_service_nodes", summary);
    let line = "  hcas      32 + 15 service nodes (12 aggregation, 2 storage, 1 management)\n";
    assert!(text(&out.stdout).contains(line), "{}", text(&out.stdout));
    let out = weft(&["check", path, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["hcas"], 32, "{v}");
    assert_eq!(
        v["summary"]["service"],
        serde_json::json!({"aggregation": 12, "storage": 2, "management": 1}),
        "{v}"
    );
    let out = weft(&["build", path, "-o", dir.join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(line), "{}", text(&out.stdout));
    let _ = std::fs::remove_dir_all(&dir);
}

fn bad_file(dir: &Path) -> PathBuf {
    let p = dir.join("bad.weft");
    std::fs::write(
        &p,
        "use std::hardware::{sb7800, connectx5}\nfabric bad {\n    topology {\n        switch s : sb7800\n        hca h[1..=2] : connectx5\n        link s.p[1] <-> h[1].p[1]\n        link s.p[1] <-> h[2].p[1]\n        link s.p[40] <-> h[2].p[1]\n    }\n}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    p
}

fn temp_dir(name: &str) -> crate::support::Scratch {
    crate::support::scratch(&format!("cli-{name}"))
}

#[test]
fn findings_exit_1_with_every_error() {
    let dir = temp_dir("bad");
    let p = bad_file(&dir);
    let out = weft(&["check", p.to_str().unwrap_or_default()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    let err = text(&out.stderr).replace(&dir.display().to_string(), "<tmp>");
    assert!(err.contains("weft::port_wired_twice") && err.contains("weft::port_out_of_range"));
    insta::assert_snapshot!("check_bad_human", err);

    let json = weft(&["check", "--format", "json", p.to_str().unwrap_or_default()]);
    assert_eq!(json.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap_or_default();
    assert_eq!(v["ok"], false);
    assert_eq!(v["format"], "weft-check");
    assert_eq!(v["version"], 1);
    assert_eq!(v["findings"].as_array().map(Vec::len), Some(2), "{v}");
    assert_eq!(v["findings"][0]["place"]["line"], 7, "{v}");
    assert!(v.get("diagnostics").is_none(), "each diagnostic once: {v}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unreadable_input_exits_2() {
    let out = weft(&["check", "examples/does-not-exist.weft"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("error: cannot read `examples/does-not-exist.weft`"));
}

#[test]
fn fmt_check_and_write() {
    for name in examples() {
        let out = weft(&["fmt", "--check", &format!("examples/{name}")]);
        assert_eq!(out.status.code(), Some(0), "{name} is not formatted");
    }
    let dir = temp_dir("fmt");
    let p = dir.join("messy.weft");
    std::fs::write(
        &p,
        "use std::hardware::{sb7800}\nfabric  f{topology{switch s:sb7800}}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let path = p.to_str().unwrap_or_default();
    assert_eq!(weft(&["fmt", "--check", path]).status.code(), Some(1));
    assert_eq!(weft(&["fmt", "--write", path]).status.code(), Some(0));
    let formatted = std::fs::read_to_string(&p).unwrap_or_default();
    assert_eq!(
        formatted,
        "use std::hardware::{sb7800}\nfabric f { topology { switch s : sb7800 } }\n"
    );
    assert_eq!(weft(&["fmt", "--check", path]).status.code(), Some(0));
    // A file with syntax errors is refused and left alone.
    std::fs::write(&p, "fabric f { topology { switch s : } }\n").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(weft(&["fmt", "--write", path]).status.code(), Some(1));
    assert_eq!(
        std::fs::read_to_string(&p).unwrap_or_default(),
        "fabric f { topology { switch s : } }\n"
    );
    // Through a symlink: the file it points at is rewritten with its permissions kept, the
    // link stays a link, and nothing is left beside them.
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(
        &p,
        "use std::hardware::{sb7800}\nfabric  f{topology{switch s:sb7800}}\n",
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = dir.join("link.weft");
    std::os::unix::fs::symlink("messy.weft", &link).unwrap();
    let out = weft(&["fmt", "--write", link.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "use std::hardware::{sb7800}\nfabric f { topology { switch s : sb7800 } }\n"
    );
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o640
    );
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["link.weft", "messy.weft"]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn export_import_round_trip() {
    let dir = temp_dir("roundtrip");
    let net = dir.join("lab16.net");
    let prog = dir.join("lab16.weft");
    let out = weft(&[
        "export",
        "examples/lab-16.weft",
        "-o",
        net.to_str().unwrap_or_default(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = weft(&[
        "import",
        net.to_str().unwrap_or_default(),
        "-o",
        prog.to_str().unwrap_or_default(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The imported program checks, and describes the same nodes, GUIDs and up links.
    let check = weft(&["check", prog.to_str().unwrap_or_default()]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));
    // It is found to be a fat-tree (the dump has no levels): the program records the levels,
    // says so in its header, and `check` routes it with `fat_tree`, saying why.
    let program = std::fs::read_to_string(&prog).unwrap_or_default();
    let header: Vec<&str> = program.lines().skip(1).take(1).collect();
    let engine = text(&check.stdout)
        .lines()
        .filter(|l| l.contains("engine") || l.contains("levels"))
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!(
        "import_finds_the_fat_tree",
        format!("{}\n{engine}", header.join("\n"))
    );
    let json = |p: &str| -> serde_json::Value {
        let o = weft(&["export", "--format", "json", p]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap_or_default()
    };
    let a = json("examples/lab-16.weft");
    let b = json(prog.to_str().unwrap_or_default());
    let nodes = |v: &serde_json::Value| -> Vec<(String, String, String)> {
        v["fabric"]["nodes"]
            .as_array()
            .map(|ns| {
                ns.iter()
                    .map(|n| {
                        (
                            n["name"].to_string(),
                            n["kind"].to_string(),
                            n["guid"].to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(nodes(&a).len(), 22, "the export lists every node");
    assert_eq!(nodes(&a), nodes(&b));
    let up_links = |v: &serde_json::Value| -> Vec<String> {
        let mut l: Vec<String> = v["fabric"]["links"]
            .as_array()
            .map(|ls| {
                ls.iter()
                    .filter(|l| l.get("state").is_none())
                    .map(|l| format!("{}:{}-{}:{}", l["a"][0], l["a"][1], l["b"][0], l["b"][1]))
                    .collect()
            })
            .unwrap_or_default();
        l.sort();
        l
    };
    // lab-16 has one link down; the export leaves it out, so the import has it missing.
    assert_eq!(up_links(&a).len(), 31);
    let normalise = |v: Vec<String>| -> Vec<String> {
        let mut v: Vec<String> = v
            .into_iter()
            .map(|s| {
                let (x, y) = s.split_once('-').unwrap_or((&s, ""));
                if x <= y {
                    format!("{x}-{y}")
                } else {
                    format!("{y}-{x}")
                }
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(normalise(up_links(&a)), normalise(up_links(&b)));
    // A broken dump is refused with exit 1 and nothing written.
    let bad = dir.join("bad.net");
    std::fs::write(&bad, "Switch\t2 \"S-1\"\n[3]\t\"H-1\"[1]\n").unwrap_or_else(|e| panic!("{e}"));
    let none = dir.join("none.weft");
    let out = weft(&[
        "import",
        bad.to_str().unwrap_or_default(),
        "-o",
        none.to_str().unwrap_or_default(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!none.exists());
    assert!(
        text(&out.stderr).contains("port 3"),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `weft import` with roles given three ways (`--role` by node GUID, `--roles` by port GUID,
/// `--io-guids` without `0x`): the program writes them, and the report counts the three as
/// service nodes, not hosts. A GUID that names nothing is refused (exit 1), a malformed
/// `--role` too (exit 2, clap's usage error).
#[test]
fn import_with_roles() {
    let dir = temp_dir("roles");
    let roles = dir.join("roles.txt");
    let io = dir.join("io_guids");
    let prog = dir.join("lab16.weft");
    std::fs::write(
        &roles,
        "# lab14, by its port GUID\n0x2c90000001401 management\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&io, "2c90000001500\n").unwrap_or_else(|e| panic!("{e}"));
    let out = weft(&[
        "import",
        "examples/lab16.ibnetdiscover",
        "--role",
        "0x2c90000001300=storage",
        "--roles",
        roles.to_str().unwrap_or_default(),
        "--io-guids",
        io.to_str().unwrap_or_default(),
        "-o",
        prog.to_str().unwrap_or_default(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let program = std::fs::read_to_string(&prog).unwrap_or_default();
    let role_of = |name: &str| -> String {
        program
            .lines()
            .find(|l| l.contains(&format!("hca {name} ")))
            .and_then(|l| l.split("role = ").nth(1))
            .map(|r| r.split([',', ' ']).next().unwrap_or("").to_owned())
            .unwrap_or_default()
    };
    assert_eq!(
        (
            role_of("lab13"),
            role_of("lab14"),
            role_of("lab15"),
            role_of("lab16")
        ),
        (
            "storage".into(),
            "management".into(),
            "storage".into(),
            String::new()
        ),
        "{program}"
    );
    let report = weft(&[
        "report",
        prog.to_str().unwrap_or_default(),
        "--format",
        "json",
    ]);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report.stderr));
    let q: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap_or_default();
    let quality = if q.get("quality").is_some() {
        &q["quality"]
    } else {
        &q
    };
    assert_eq!(
        (quality["hosts"].as_u64(), quality["service_ports"].as_u64()),
        (Some(13), Some(3)),
        "{q}"
    );
    let out = weft(&[
        "import",
        "examples/lab16.ibnetdiscover",
        "--role",
        "0xdead=storage",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("weft::role_guid"),
        "{}",
        text(&out.stderr)
    );
    let out = weft(&[
        "import",
        "examples/lab16.ibnetdiscover",
        "--role",
        "0x2c9=storge",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("is not a role"),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `weft build FILE -o OUT` on `threads` threads, which must succeed; its standard output.
fn build_on_threads(file: &str, threads: &str, out: &Path) -> String {
    let o = Command::new(crate::support::WEFT)
        .args(["build", file, "-o", out.to_str().unwrap_or_default()])
        .current_dir(root())
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    text(&o.stdout)
}

#[test]
fn build_is_byte_identical_across_runs_and_thread_counts() {
    let dir = temp_dir("determinism");
    let run = |threads: &str, out: &Path| {
        build_on_threads("examples/cluster-5832.weft", threads, out);
    };
    let (a, b, c) = (dir.join("a"), dir.join("b"), dir.join("c"));
    run("1", &a);
    run("2", &b);
    run("2", &c);
    for name in ["lfts.dump", "guid2lid", "topology.net", "state.json"] {
        let x = std::fs::read(a.join(name)).unwrap_or_default();
        assert!(!x.is_empty(), "{name} is empty");
        assert!(
            x == std::fs::read(b.join(name)).unwrap_or_default(),
            "{name} differs between 1 and 2 threads"
        );
        assert!(
            x == std::fs::read(c.join(name)).unwrap_or_default(),
            "{name} differs between two runs"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A fabric with QoS classes: `weft build` writes the SL→VL dump, OpenSM's QoS settings and
/// policy and the path SLs beside the tables, byte-identical across runs and thread counts;
/// `weft verify` of the state it wrote proves it again (the per-switch path SLs read back).
#[test]
fn qos_build_writes_opensm_files_and_its_state_verifies() {
    let dir = temp_dir("qos");
    let run = |threads: &str, out: &Path| build_on_threads("examples/qos-648.weft", threads, out);
    let (a, b) = (dir.join("a"), dir.join("b"));
    let shown = run("1", &a);
    run("2", &b);
    for name in [
        "state.json",
        "sl2vl.dump",
        "opensm.conf",
        "qos-policy.conf",
        "path-sl.psl",
        "certificate.json",
    ] {
        assert!(
            shown.contains(&format!("{name}\n")),
            "{name} not listed:\n{shown}"
        );
        let x = std::fs::read(a.join(name)).unwrap_or_default();
        assert!(!x.is_empty(), "{name} is empty");
        assert!(
            x == std::fs::read(b.join(name)).unwrap_or_default(),
            "{name} differs between 1 and 2 threads"
        );
    }
    let conf = std::fs::read_to_string(a.join("opensm.conf")).unwrap_or_default();
    assert!(conf.contains("qos_sl2vl 0,1,2,3,4,5,6,15,"), "{conf}");
    // ibdmchk's path SLs: one line per (source node, LID), though pairs have several SLs.
    let psl = std::fs::read_to_string(a.join("path-sl.psl")).unwrap_or_default();
    let pairs: std::collections::BTreeSet<&str> = psl
        .lines()
        .filter_map(|l| l.rsplit_once(' ').map(|(pair, _)| pair))
        .collect();
    assert_eq!(pairs.len(), psl.lines().count(), "one line per pair");
    let state = std::fs::read_to_string(a.join("state.json")).unwrap_or_default();
    assert!(
        state.contains("\"by_switch\": ["),
        "per-switch path SLs in the state"
    );
    let out = weft(&[
        "verify",
        "--state",
        a.join("state.json").to_str().unwrap_or_default(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("7 VL(s)"),
        "{}",
        text(&out.stdout)
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `layered` on a small fabric: z3's word on the layer count is a note of `check`.
#[test]
fn check_reports_that_z3_proves_the_layer_count_minimal() {
    let out = weft(&["check", "bench/fabrics/torus-5x5-layered.weft"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(
            "note      z3: 2 layer(s) is the fewest these routes fit in (every smaller count is impossible)"
        ),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn fat_tree_refuses_the_torus_with_the_reason() {
    let dir = temp_dir("torus");
    let p = dir.join("torus.weft");
    std::fs::write(
        &p,
        "use std::hardware::{sb7800, connectx5}\nuse std::topology::torus\n\nfabric t {\n    topology = torus(dims: [4, 4], switch: sb7800, hca: connectx5)\n    routing { engine = fat_tree }\n}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let out = weft(&[
        "build",
        p.to_str().unwrap_or_default(),
        "-o",
        dir.join("out").to_str().unwrap_or_default(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        !dir.join("out").exists(),
        "nothing is written when routing fails"
    );
    insta::assert_snapshot!(
        "build_torus_fat_tree",
        text(&out.stderr).replace(&dir.display().to_string(), "<tmp>")
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn check_proves_or_shows_the_credit_loop() {
    let dir = temp_dir("minhop");
    let p = dir.join("ring.weft");
    std::fs::write(
        &p,
        "use std::hardware::{sb7800, connectx5}\nuse std::topology::ring\n\nfabric r {\n    topology = ring(n: 6, switch: sb7800, hca: connectx5)\n    routing { engine = minhop }\n}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let path = p.to_str().unwrap_or_default();
    let out = weft(&["check", path]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "minhop on a 6-ring must fail the proof"
    );
    assert!(
        text(&out.stdout).contains("credit loop"),
        "{}",
        text(&out.stdout)
    );
    // The same ring under Up*/Down* is proven.
    std::fs::write(
        &p,
        std::fs::read_to_string(&p)
            .unwrap_or_default()
            .replace("minhop", "updn"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let out = weft(&["check", path]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("verified  deadlock-free and connected"));
    let _ = std::fs::remove_dir_all(dir);
}

/// A diagnostic past column 65 535 (where miette's snippet padding panics) is shown at its
/// line and column, without a snippet; and `weft import` of a file broken the same way on
/// every switch prints a screen, not an error per line.
#[test]
fn huge_columns_and_repeated_errors_stay_readable() {
    let dir = crate::support::scratch("cli-long");
    let long = dir.join("long.net");
    std::fs::write(
        &long,
        format!(
            "Switch 36 \"S-1\" {}x\n[1] \"H-2\"[1]\n",
            " ".repeat(70_000)
        ),
    )
    .unwrap();
    let out = weft(&[
        "import",
        long.to_str().unwrap(),
        "-o",
        dir.join("a.weft").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("long.net:1:70017 (line too long to show)"),
        "{err}"
    );

    let mut broken = String::new();
    for i in 0..200 {
        broken.push_str(&format!(
            "Switch\tx36 \"S-00000000000{i:05x}\" # \"sw{i}\"\n[1] \"H-1\"[1]\n[2] \"H-2\"[1]\n\n"
        ));
    }
    let many = dir.join("many.net");
    std::fs::write(&many, broken).unwrap();
    let out = weft(&[
        "import",
        many.to_str().unwrap(),
        "-o",
        dir.join("b.weft").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("… and 190 more like this (weft::ibnet::bad_number)"),
        "{err}"
    );
    assert!(
        err.lines().count() < 200,
        "{} lines:\n{err}",
        err.lines().count()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A class for a tenant with VMs is parsed but not built yet: `weft check` refuses it (exit 1,
/// `weft::not_built::vm_class`) instead of printing "verified" over a setting it ignored.
#[test]
fn check_refuses_what_is_not_built_yet() {
    let dir = crate::support::scratch("cli-unsupported");
    let f = dir.join("qos.weft");
    std::fs::write(
        &f,
        "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, radix: 8, switch: sb7800, hca: connectx5)\n    qos { class compute { sl = 1 } }\n    tenant t { pkey = 0x8001, class = compute, vms on cn001 { vfs_per_host = 4 } }\n}\n",
    )
    .unwrap();
    let out = weft(&["check", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert_eq!(err.matches("weft::not_built::vm_class").count(), 1, "{err}");
    assert!(err.contains("has VMs and a class"), "{err}");
    assert!(
        !text(&out.stdout).contains("verified"),
        "{}",
        text(&out.stdout)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A multicast group of one member (what every group is after its first join) has nothing to
/// deliver: `check` proves it and says so, `build` writes it; an empty `members` list is a
/// warning at its span.
#[test]
fn a_one_member_group_has_nothing_to_deliver() {
    let dir = temp_dir("one-member");
    let lab = std::fs::read_to_string(root().join("examples/lab-16.weft")).unwrap();
    let body = lab.trim_end().strip_suffix('}').unwrap();
    let one = format!(
        "{body}\n    multicast {{\n        group solo {{ mlid = 0xc001, members = [lab01] }}\n    }}\n}}\n"
    );
    let p = dir.join("one.weft");
    std::fs::write(&p, &one).unwrap();
    let out = weft(&["check", p.to_str().unwrap()]);
    let so = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{so}{}", text(&out.stderr));
    assert!(
        so.contains("verified  multicast: nothing to deliver: 1 group(s), none with a live sender and another receiver"),
        "{so}"
    );
    assert!(!so.lines().any(|l| l.starts_with('×')), "{so}");
    let built = dir.join("built");
    let out = weft(&[
        "build",
        p.to_str().unwrap(),
        "--output",
        built.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(built.join("state.json").is_file());

    let empty = dir.join("empty.weft");
    std::fs::write(&empty, one.replace("members = [lab01]", "members = []")).unwrap();
    let out = weft(&["check", empty.to_str().unwrap()]);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(all.contains("weft::empty_group"), "{all}");
    assert!(all.contains("group `solo` has no members"), "{all}");
    assert!(all.contains("empty.weft:"), "{all}");
    let _ = std::fs::remove_dir_all(&dir);
}
