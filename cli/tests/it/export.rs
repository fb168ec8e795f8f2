//! `weft export --format slurm-tree|slurm-yaml|dot|graphml`: snapshots of the small lab fabric
//! in every format; the scheduler tree's properties on the 648-node tree, on imported fabrics
//! with SHARP aggregation nodes and on two disconnected fabrics; byte-identical re-runs; a
//! build directory and a `state.json` exported as their description; bad input; GraphML
//! well-formed. Then the files checked by the tools that read them: Slurm's own parser
//! (`slurmctld` loads `topology.conf`, `scontrol show topology` says what it understood),
//! PyYAML for `topology.yaml` and Graphviz's `dot`; each fails when `CI` is set and the tool
//! is missing, and skips loudly otherwise.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use crate::support::{root, weft};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};

fn example(name: &str) -> PathBuf {
    root().join("examples").join(name)
}

/// `weft export FILE --format FORMAT` that must succeed: its stdout.
fn export(file: &Path, format: &str) -> String {
    let out = weft(&["export", file.to_str().unwrap(), "--format", format]);
    assert!(
        out.status.success(),
        "export {format} of {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A fresh directory for one test.
fn scratch(test: &str) -> crate::support::Scratch {
    crate::support::scratch(&format!("export-{test}"))
}

/// A `.weft` file in `dir` whose topology is the dump `dump` (copied beside it).
fn imported(dir: &Path, name: &str, dump: &str) -> PathBuf {
    std::fs::write(dir.join(format!("{name}.ibnetdiscover")), dump).unwrap();
    let f = dir.join(format!("{name}.weft"));
    std::fs::write(
        &f,
        format!("fabric {name} {{\n    topology = import(\"{name}.ibnetdiscover\")\n}}\n"),
    )
    .unwrap();
    f
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(root().join("tests/fixtures/real").join(name)).unwrap()
}

/// Two fabrics with no cable between them: two leaves under a spine, and one leaf alone.
const SPLIT: &str = "use std::hardware::{sb7800, connectx5}\nfabric split {\n    topology {\n        switch spine : sb7800\n        switch leaf[1..=3] : sb7800\n        hca h[1..=6] : connectx5 { name = \"cn{:02}\" }\n        link leaf[1].p[36] <-> spine.p[1]\n        link leaf[2].p[36] <-> spine.p[2]\n        for n in 1..=6 {\n            link h[n].p[1] <-> leaf[(n - 1) / 2 + 1].p[(n - 1) % 2 + 1]\n        }\n    }\n}\n";

/// Recorded levels with a login host cabled straight to the level-2 switch.
const LOGIN: &str = "use std::hardware::{sb7800, connectx5}\nfabric login {\n    topology {\n        switch spine : sb7800 { level = 2 }\n        switch leaf[1..=2] : sb7800 { level = 1 }\n        hca h[1..=4] : connectx5 { name = \"cn{:02}\" }\n        hca login : connectx5\n        link leaf[1].p[36] <-> spine.p[1]\n        link leaf[2].p[36] <-> spine.p[2]\n        link login.p[1] <-> spine.p[3]\n        for n in 1..=4 {\n            link h[n].p[1] <-> leaf[(n - 1) / 2 + 1].p[(n - 1) % 2 + 1]\n        }\n    }\n}\n";

/// Two HCAs cabled to each other, no switch.
const NO_SWITCH: &str = "use std::hardware::connectx5\nfabric pair {\n    topology {\n        hca a : connectx5\n        hca b : connectx5\n        link a.p[1] <-> b.p[1]\n    }\n}\n";

/// A `topology.conf` read back: per switch, its hosts (expanded) and its child switches.
#[derive(Debug, Default)]
struct Conf {
    nodes: BTreeMap<String, Vec<String>>,
    switches: BTreeMap<String, Vec<String>>,
}

fn parse_conf(text: &str) -> Conf {
    let mut c = Conf::default();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let mut name = None;
        for word in line.split_whitespace() {
            let (k, v) = word.split_once('=').expect(line);
            match k {
                "SwitchName" => {
                    name = Some(v.to_owned());
                    c.nodes.entry(v.to_owned()).or_default();
                }
                "Nodes" => {
                    let old = c
                        .nodes
                        .insert(name.clone().expect(line), crate::support::expand(v));
                    assert!(
                        old.is_none_or(|x| x.is_empty()),
                        "two Nodes= for one switch: {line}"
                    );
                }
                "Switches" => {
                    c.switches
                        .insert(name.clone().expect(line), crate::support::expand(v));
                }
                _ => panic!("unknown key in {line}"),
            }
        }
    }
    c
}

/// Checks the tree properties of `conf` against `hosts` (the host names the fabric has):
/// every host in exactly one leaf's `Nodes=`, nothing else listed, every switch named once
/// and reachable from a top switch, every child a switch of the file. Returns the tops.
fn check_tree(conf: &Conf, hosts: &BTreeSet<String>) -> Vec<String> {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (sw, nodes) in &conf.nodes {
        for n in nodes {
            if let Some(other) = seen.insert(n, sw) {
                panic!("host {n} under both {other} and {sw}");
            }
        }
        assert!(
            nodes.is_empty() || !conf.switches.contains_key(sw),
            "{sw} has both hosts and switches"
        );
    }
    let listed: BTreeSet<String> = seen.keys().map(|s| (*s).to_owned()).collect();
    assert_eq!(
        &listed, hosts,
        "the hosts listed are not the fabric's hosts"
    );
    let children: BTreeSet<&String> = conf.switches.values().flatten().collect();
    for c in &children {
        assert!(conf.nodes.contains_key(*c), "child {c} has no line");
    }
    let tops: Vec<String> = conf
        .nodes
        .keys()
        .filter(|s| !children.contains(s))
        .cloned()
        .collect();
    assert!(!tops.is_empty());
    let mut reached = BTreeSet::new();
    let mut stack: Vec<&String> = tops.iter().collect();
    while let Some(s) = stack.pop() {
        if reached.insert(s.clone()) {
            stack.extend(conf.switches.get(s).into_iter().flatten());
        }
    }
    assert_eq!(
        reached.len(),
        conf.nodes.len(),
        "switches not reachable from the top"
    );
    tops
}

/// The host names of a compiled fabric, from `weft export --format json`: end nodes of role
/// `host` that are HCAs, by name (cluster-648's names are host names already).
fn json_hosts(file: &Path) -> BTreeSet<String> {
    let v: serde_json::Value = serde_json::from_str(&export(file, "json")).unwrap();
    v["fabric"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "hca" && n.get("role").is_none_or(|r| r == "host"))
        .map(|n| n["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn snapshots_of_the_lab_fabric() {
    let f = example("lab-16.weft");
    for format in ["slurm-tree", "slurm-yaml", "dot", "graphml"] {
        insta::assert_snapshot!(format!("lab16_{format}"), export(&f, format));
    }
}

#[test]
fn the_648_node_tree_every_host_under_one_leaf_every_switch_under_the_top() {
    let f = example("cluster-648.weft");
    let text = export(&f, "slurm-tree");
    let conf = parse_conf(&text);
    let hosts = json_hosts(&f);
    assert_eq!(hosts.len(), 648);
    let tops = check_tree(&conf, &hosts);
    assert_eq!(tops.len(), 18, "the 18 spines are the tops");
    assert_eq!(conf.nodes.len(), 54);
    assert!(
        text.contains("SwitchName=leaf1 Nodes=cn[001-018]\n"),
        "{text}"
    );
    // Re-runs are byte-identical, and so is the YAML's content.
    assert_eq!(text, export(&f, "slurm-tree"));
    let yaml = export(&f, "slurm-yaml");
    assert_eq!(yaml, export(&f, "slurm-yaml"));
    assert_eq!(yaml_as_conf(&yaml), conf_lines(&text));
}

/// The `SwitchName=` lines of a `topology.conf`.
fn conf_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("SwitchName="))
        .map(str::to_owned)
        .collect()
}

/// A `topology.yaml` written by weft read back as `topology.conf` lines, checking its shape
/// on the way: one topology, `cluster_default: true`, a tree of `switch` entries each with
/// `nodes` or `children` (Slurm's schema).
fn yaml_as_conf(yaml: &str) -> Vec<String> {
    let body: Vec<&str> = yaml
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    assert!(body[0].starts_with("- topology: "), "{yaml}");
    assert_eq!(
        &body[1..4],
        ["  cluster_default: true", "  tree:", "    switches:"]
    );
    let mut out = Vec::new();
    for pair in body[4..].chunks(2) {
        let sw = pair[0].strip_prefix("      - switch: ").expect(pair[0]);
        let line = if let Some(n) = pair[1].strip_prefix("        nodes: ") {
            format!("SwitchName={sw} Nodes={n}")
        } else {
            let c = pair[1].strip_prefix("        children: ").expect(pair[1]);
            format!("SwitchName={sw} Switches={c}")
        };
        out.push(line);
    }
    out
}

#[test]
fn imported_fabrics_leave_aggregation_nodes_and_their_switches_out() {
    let d = scratch("aggregation");
    // A real NDR dump: DGX HCAs on rail leaves, an AN in every switch.
    let f = imported(&d, "ndr", &fixture("topograph-ndr-dgx.ibnetdiscover"));
    let text = export(&f, "slurm-tree");
    assert!(
        text.contains("and routers, which run no jobs: 40 SHARP aggregation.\n"),
        "{text}"
    );
    assert!(!text.contains("Aggregation"), "{text}");
    let conf = parse_conf(&text);
    let hosts: BTreeSet<String> = conf.nodes.values().flatten().cloned().collect();
    check_tree(&conf, &hosts);
    // A DGX's eight HCAs are one host, under its lowest port GUID's rail leaf.
    assert!(hosts.contains("a05-p1-dgx-01-c01"), "{hosts:?}");
    assert!(text.contains("listed under the leaf of its lowest port GUID only: 121 hosts.\n"));

    // A generated SuperPOD-class tree: ANs everywhere, a host-less management sub-tree.
    let p = weft_tests::dump::SuperPod {
        rails: 2,
        units: 2,
        group: 2,
        spines_per_group: 2,
        cores: 2,
        core_links: 1,
        dgx: 4,
        others: 2,
        management: 2,
        missing_uplinks: 0,
        seed: 1,
    };
    let f = imported(&d, "pod", &weft_tests::dump::superpod(&p));
    let text = export(&f, "slurm-tree");
    let conf = parse_conf(&text);
    let hosts: BTreeSet<String> = conf.nodes.values().flatten().cloned().collect();
    let tops = check_tree(&conf, &hosts);
    assert_eq!(
        tops,
        ["MF0;core-001:MQM8700/U1", "MF0;core-002:MQM8700/U1"],
        "{text}"
    );
    assert!(text.contains(": 12 SHARP aggregation.\n"), "{text}");
    // The rail-2 leaf of unit 2 has only DGX listed under rail 1; the management sub-tree
    // hangs off the cores.
    assert!(
        text.contains(
            "hanging off it): MF0;leaf-r2-su02:MQM8700/U1,MF0;mgmt-1:MQM8700/U1,MF0;mgmt-2:MQM8700/U1.\n"
        ),
        "{text}"
    );
    assert!(text.contains("# 6 hosts, 9 switches, 3 levels\n"), "{text}");
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn two_disconnected_fabrics_are_two_trees() {
    let d = scratch("split");
    let f = d.join("split.weft");
    std::fs::write(&f, SPLIT).unwrap();
    let text = export(&f, "slurm-tree");
    let conf = parse_conf(&text);
    let tops = check_tree(&conf, &json_hosts(&f));
    assert_eq!(tops, ["leaf3", "spine"]);
    assert!(
        text.contains("# 2 fabrics with no cable between them, one tree each"),
        "{text}"
    );
    assert!(text.contains("# fabric 1 of 2: 4 hosts, 3 switches, 2 levels\nSwitchName=spine Switches=leaf[1-2]\nSwitchName=leaf1 Nodes=cn[01-02]\nSwitchName=leaf2 Nodes=cn[03-04]\n# fabric 2 of 2: 2 hosts, 1 switch, 1 level\nSwitchName=leaf3 Nodes=cn[05-06]\n"), "{text}");
    for format in ["slurm-tree", "slurm-yaml", "dot", "graphml"] {
        assert_eq!(export(&f, format), export(&f, format), "{format}");
    }
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn a_host_removed_changes_its_leaf_line_and_the_counts_only() {
    let d = scratch("diff");
    let before = d.join("before.weft");
    let after = d.join("after.weft");
    std::fs::write(&before, SPLIT).unwrap();
    std::fs::write(
        &after,
        SPLIT
            .replace("h[1..=6]", "h[1..=5]")
            .replace("for n in 1..=6", "for n in 1..=5"),
    )
    .unwrap();
    for format in ["slurm-tree", "slurm-yaml"] {
        let a = export(&before, format);
        let b = export(&after, format);
        assert_eq!(a.lines().count(), b.lines().count(), "{format}");
        let changed: Vec<(&str, &str)> = a.lines().zip(b.lines()).filter(|(x, y)| x != y).collect();
        assert_eq!(changed.len(), 3, "{format}: {changed:#?}");
        assert!(changed[0].1.starts_with("# 5 hosts under 3 leaf switches."));
        assert!(changed[1]
            .1
            .ends_with("# fabric 2 of 2: 1 host, 1 switch, 1 level"));
        assert!(changed[2].1.ends_with("cn05"), "{format}: {changed:#?}");
    }
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn a_build_directory_and_its_state_export_as_the_description_does() {
    let d = scratch("build");
    let lab = example("lab-16.weft");
    let out = d.join("out");
    let b = weft(&[
        "-q",
        "build",
        lab.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    for format in ["slurm-tree", "slurm-yaml", "dot", "graphml"] {
        let want = export(&lab, format);
        assert_eq!(
            export(&out, format),
            want,
            "{format} of the build directory"
        );
        assert_eq!(
            export(&out.join("state.json"), format),
            want,
            "{format} of state.json"
        );
    }
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn bad_input_is_refused() {
    let d = scratch("bad");
    let lab = example("lab-16.weft");
    let lab = lab.to_str().unwrap();
    // A name map that cannot be read: could not run.
    let missing = d.join("missing.map");
    let out = weft(&[
        "export",
        lab,
        "--format",
        "slurm-tree",
        "--name-map",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.map"));
    assert!(out.stdout.is_empty());
    // A name map line that is not `KEY HOSTNAME`: refused input, with its line.
    let bad = d.join("bad.map");
    std::fs::write(&bad, "# hosts\nlab01 node01\nlab02\n").unwrap();
    let out = weft(&[
        "export",
        lab,
        "--format",
        "slurm-tree",
        "--name-map",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("name map line 3"), "{err}");
    // A good one renames.
    let good = d.join("good.map");
    std::fs::write(&good, "lab01 node01\n0x0002c90000000800 node02\n").unwrap();
    let out = weft(&[
        "export",
        lab,
        "--format",
        "slurm-tree",
        "--name-map",
        good.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("SwitchName=leaf1 Nodes=lab[03-04],node[01-02]\n"),
        "{text}"
    );
    // A name map with a format it does not go with.
    let out = weft(&[
        "export",
        lab,
        "--format",
        "dot",
        "--name-map",
        good.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    // A fabric with no switch has no scheduler tree.
    let f = d.join("pair.weft");
    std::fs::write(&f, NO_SWITCH).unwrap();
    for format in ["slurm-tree", "slurm-yaml"] {
        let out = weft(&["export", f.to_str().unwrap(), "--format", format]);
        assert_eq!(out.status.code(), Some(1), "{format}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("has no switch"), "{err}");
    }
    // It still draws.
    assert!(export(&f, "dot").contains("\"a\" -- \"b\""));
    // An unknown format is clap's.
    let out = weft(&["export", lab, "--format", "slurm"]);
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(d);
}

/// A small check that `xml` is well-formed the way GraphML needs: one root, every element
/// closed in order, attributes quoted, only the five entities; returns the elements' names
/// with their attributes, in order.
fn xml_elements(xml: &str) -> Vec<(String, BTreeMap<String, String>)> {
    let mut out = Vec::new();
    let mut stack: Vec<String> = Vec::new();
    let mut rest = xml;
    let mut roots = 0;
    let check_text = |t: &str| {
        let mut s = t;
        while let Some(i) = s.find('&') {
            let e = &s[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                    .iter()
                    .any(|x| e.starts_with(x)),
                "bad entity in {t}"
            );
            s = &s[i + 1..];
        }
        assert!(!t.contains('<') && !t.contains('>'), "{t}");
    };
    while let Some(open) = rest.find('<') {
        let text = &rest[..open];
        check_text(text);
        if !stack.is_empty() || text.trim().is_empty() {
        } else {
            panic!("text outside the root: {text:?}");
        }
        rest = &rest[open..];
        if rest.starts_with("<?") {
            rest = &rest[rest.find("?>").unwrap() + 2..];
            continue;
        }
        if rest.starts_with("<!--") {
            let end = rest.find("-->").unwrap();
            assert!(!rest[4..end].contains("--"));
            rest = &rest[end + 3..];
            continue;
        }
        let close = rest.find('>').unwrap();
        let tag = &rest[1..close];
        rest = &rest[close + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "closing {name}");
            continue;
        }
        let selfclose = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let (name, mut attrs) = tag.split_once(' ').unwrap_or((tag, ""));
        let mut map = BTreeMap::new();
        while !attrs.trim().is_empty() {
            let (k, v) = attrs.trim_start().split_once("=\"").expect(tag);
            let end = v.find('"').expect(tag);
            check_text(&v[..end]);
            assert!(map.insert(k.to_owned(), v[..end].to_owned()).is_none());
            attrs = &v[end + 1..];
        }
        if stack.is_empty() {
            roots += 1;
        }
        out.push((name.to_owned(), map));
        if !selfclose {
            stack.push(name.to_owned());
        }
    }
    check_text(rest);
    assert!(rest.trim().is_empty() && stack.is_empty() && roots == 1);
    out
}

#[test]
fn graphml_is_well_formed_and_every_data_key_is_declared() {
    let text = export(&example("cluster-648.weft"), "graphml");
    let els = xml_elements(&text);
    let keys: BTreeSet<&String> = els
        .iter()
        .filter(|(n, _)| n == "key")
        .map(|(_, a)| &a["id"])
        .collect();
    for k in [
        "kind",
        "level",
        "guid",
        "source_port",
        "target_port",
        "speed",
        "width",
    ] {
        assert!(keys.contains(&k.to_owned()), "{k}");
    }
    let nodes: BTreeSet<&String> = els
        .iter()
        .filter(|(n, _)| n == "node")
        .map(|(_, a)| &a["id"])
        .collect();
    assert_eq!(nodes.len(), 648 + 54);
    let mut edges = 0;
    for (n, a) in &els {
        match n.as_str() {
            "data" => assert!(keys.contains(&a["key"]), "undeclared key {}", a["key"]),
            "edge" => {
                edges += 1;
                assert!(nodes.contains(&a["source"]) && nodes.contains(&a["target"]));
            }
            _ => {}
        }
    }
    assert_eq!(edges, 648 + 36 * 18);
    // Names XML must escape are escaped.
    let d = scratch("graphml");
    let dump = std::fs::read_to_string(example("lab16.ibnetdiscover"))
        .unwrap()
        .replace("\"lab01\"", "\"lab&<01>'\"");
    let f = imported(&d, "amp", &dump);
    let text = export(&f, "graphml");
    xml_elements(&text);
    assert!(text.contains("lab&amp;&lt;01&gt;&apos;"), "{text}");
    let _ = std::fs::remove_dir_all(d);
}

/// Where `program` is, on `PATH` or in the system's sbin directories.
fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin"].map(PathBuf::from))
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The programs, or `None` after a loud SKIP — only when `CI` is unset: CI must run these.
fn require(test: &str, programs: &[&str], packages: &str) -> Option<Vec<PathBuf>> {
    let found: Vec<Option<PathBuf>> = programs.iter().map(|p| find_program(p)).collect();
    if found.iter().all(Option::is_some) {
        return Some(found.into_iter().flatten().collect());
    }
    let missing: Vec<&str> = programs
        .iter()
        .zip(&found)
        .filter(|(_, f)| f.is_none())
        .map(|(p, _)| *p)
        .collect();
    skip(test, &missing.join(", "), packages);
    None
}

/// Says loudly that `test` is skipped for want of `missing` — and fails instead when `CI` is
/// set: CI must run it.
#[expect(clippy::print_stderr, reason = "a skipped test says so loudly")]
fn skip(test: &str, missing: &str, packages: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: missing {missing}; CI must run it (.ci/run installs {packages})"
    );
    eprintln!();
    eprintln!("==================================================================");
    eprintln!("SKIP {test}: missing {missing}");
    eprintln!("     (install {packages} to run it)");
    eprintln!("==================================================================");
    eprintln!();
}

#[test]
fn graphviz_lays_the_dot_files_out() {
    let Some(tools) = require("graphviz_lays_the_dot_files_out", &["dot"], "graphviz") else {
        return;
    };
    let d = scratch("dot");
    let split = d.join("split.weft");
    std::fs::write(&split, SPLIT).unwrap();
    for f in [example("lab-16.weft"), split] {
        let text = export(&f, "dot");
        let input = d.join("in.dot");
        std::fs::write(&input, &text).unwrap();
        let out = Command::new(&tools[0])
            .args(["-Tsvg", input.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && err.trim().is_empty(), "dot: {err}");
        let svg = String::from_utf8_lossy(&out.stdout);
        // Every node drawn.
        assert_eq!(
            svg.matches("class=\"node\"").count(),
            text.lines().filter(|l| l.contains(" [kind=")).count()
        );
    }
    let _ = std::fs::remove_dir_all(d);
}

/// Reads `yaml` with a real YAML parser (Python's PyYAML, `safe_load`) and returns its tree
/// topology's switches as `topology.conf` lines.
fn pyyaml_as_conf(python: &Path, dir: &Path, yaml: &str) -> Vec<String> {
    let f = dir.join("topology.yaml");
    std::fs::write(&f, yaml).unwrap();
    let script = "import sys, yaml\nd = yaml.safe_load(open(sys.argv[1]))\nassert isinstance(d, list) and len(d) == 1, d\nt = d[0]\nassert list(t)[0] == 'topology' and isinstance(t['topology'], str)\nassert t['cluster_default'] is True\nfor s in t['tree']['switches']:\n    assert isinstance(s['switch'], str)\n    if 'nodes' in s:\n        assert isinstance(s['nodes'], str) and 'children' not in s\n        print('SwitchName=%s Nodes=%s' % (s['switch'], s['nodes']))\n    else:\n        assert isinstance(s['children'], str)\n        print('SwitchName=%s Switches=%s' % (s['switch'], s['children']))\n";
    let out = Command::new(python)
        .args(["-c", script, f.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "PyYAML: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_yaml_parser_reads_the_topology_yaml_as_the_conf() {
    let test = "a_yaml_parser_reads_the_topology_yaml_as_the_conf";
    let Some(tools) = require(test, &["python3"], "python3 and python3-yaml") else {
        return;
    };
    let has_yaml = Command::new(&tools[0])
        .args(["-c", "import yaml"])
        .status()
        .unwrap()
        .success();
    if !has_yaml {
        skip(test, "Python's yaml module", "python3-yaml");
        return;
    }
    let d = scratch("yaml");
    let split = d.join("split.weft");
    std::fs::write(&split, SPLIT).unwrap();
    let ndr = imported(&d, "ndr", &fixture("topograph-ndr-dgx.ibnetdiscover"));
    for f in [
        example("lab-16.weft"),
        example("cluster-648.weft"),
        ndr,
        split,
    ] {
        let yaml = export(&f, "slurm-yaml");
        let conf = export(&f, "slurm-tree");
        assert_eq!(
            pyyaml_as_conf(&tools[0], &d, &yaml),
            conf_lines(&conf),
            "{}",
            f.display()
        );
    }
    let _ = std::fs::remove_dir_all(d);
}

/// Ports for the test controllers, one per run.
static PORT: AtomicU16 = AtomicU16::new(0);

/// What Slurm made of a `topology.conf`.
struct SlurmView {
    /// `scontrol show topology`'s lines: switch name → (level, hosts, child switches).
    switches: BTreeMap<String, (u32, BTreeSet<String>, Vec<String>)>,
    /// The controller's log lines that say something is wrong with the topology.
    problems: Vec<String>,
}

/// Loads `topology` into a real `slurmctld` (a private configuration in `dir`, every host on
/// 127.0.0.1, no state, auth/none), asks `scontrol show topology` what it read, stops it.
/// The hosts are `scontrol show hostnames`'s expansion of the `Nodes=` lists: Slurm's own.
fn slurm_reads(dir: &Path, tools: &[PathBuf], topology: &str) -> SlurmView {
    let (slurmctld, scontrol) = (&tools[0], &tools[1]);
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("state")).unwrap();
    let conf_path = dir.join("slurm.conf");
    // scontrol reads a configuration even to expand a host list.
    std::fs::write(
        &conf_path,
        "ClusterName=weftcheck\nSlurmctldHost=localhost(127.0.0.1)\n",
    )
    .unwrap();
    let hostnames = |list: &str| -> Vec<String> {
        let out = Command::new(scontrol)
            .args(["show", "hostnames", list])
            .env("SLURM_CONF", &conf_path)
            .output()
            .unwrap();
        assert!(out.status.success(), "scontrol show hostnames {list}");
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    // Every `Nodes=` list in one call (a call takes a while), expanded by Slurm: the same
    // names as the test's own reading of them.
    let lists: Vec<&str> = topology
        .lines()
        .filter(|l| l.starts_with("SwitchName="))
        .filter_map(|l| l.split_once(" Nodes=").map(|(_, list)| list))
        .collect();
    let hosts: BTreeSet<String> = hostnames(&lists.join(",")).into_iter().collect();
    let ours: BTreeSet<String> = lists
        .iter()
        .flat_map(|l| crate::support::expand(l))
        .collect();
    assert_eq!(hosts, ours, "Slurm expands the host lists otherwise");
    let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap();
    let base = 20_000 + (std::process::id() % 2000) as u16 * 10;
    let port = base + PORT.fetch_add(2, Ordering::SeqCst);
    let d = dir.display();
    let mut conf = format!(
        "ClusterName=weftcheck\nSlurmctldHost=localhost(127.0.0.1)\nSlurmUser={}\nAuthType=auth/none\nCredType=cred/none\nStateSaveLocation={d}/state\nSlurmctldPidFile={d}/slurmctld.pid\nSlurmctldPort={port}\nSlurmdPort={}\nMailProg=/bin/true\nTopologyPlugin=topology/tree\nSelectType=select/cons_tres\nProctrackType=proctrack/linuxproc\nMpiDefault=none\n",
        user.trim(),
        port + 1
    );
    for h in &hosts {
        conf += &format!("NodeName={h} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN\n");
    }
    conf += "PartitionName=all Nodes=ALL Default=YES\n";
    std::fs::write(&conf_path, conf).unwrap();
    std::fs::write(dir.join("topology.conf"), topology).unwrap();
    let log = std::fs::File::create(dir.join("slurmctld.log")).unwrap();
    let mut ctld = Command::new(slurmctld)
        .args(["-D", "-c", "-i", "-v", "-f", conf_path.to_str().unwrap()])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut shown = None;
    for _ in 0..300 {
        let out = Command::new(scontrol)
            .args(["show", "topology"])
            .env("SLURM_CONF", &conf_path)
            .output()
            .unwrap();
        if out.status.success() && !out.stdout.is_empty() {
            shown = Some(String::from_utf8(out.stdout).unwrap());
            break;
        }
        if ctld.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = ctld.kill();
    let _ = ctld.wait();
    let log = std::fs::read_to_string(dir.join("slurmctld.log")).unwrap();
    let shown = shown.unwrap_or_else(|| panic!("slurmctld did not answer; its log:\n{log}"));
    let problems = log
        .lines()
        .filter(|l| {
            l.contains("topology")
                || l.contains("fatal")
                || l.contains("switch")
                || l.contains("WARNING")
                || l.contains("node name")
        })
        .filter(|l| {
            !l.contains("init: topology tree plugin loaded")
                && !l.contains("switch/none")
                && !l.contains("switch Cray")
        })
        .map(str::to_owned)
        .collect();
    let mut switches = BTreeMap::new();
    for line in shown.lines() {
        let mut name = String::new();
        let mut entry = (0, BTreeSet::new(), Vec::new());
        for w in line.split_whitespace() {
            let (k, v) = w.split_once('=').unwrap();
            match k {
                "SwitchName" => name = v.to_owned(),
                "Level" => entry.0 = v.parse().unwrap(),
                "Nodes" => entry.1 = crate::support::expand(v).into_iter().collect(),
                "Switches" => entry.2 = crate::support::expand(v),
                _ => {}
            }
        }
        switches.insert(name, entry);
    }
    SlurmView { switches, problems }
}

#[test]
fn slurm_reads_the_topology_as_weft_wrote_it() {
    let Some(tools) = require(
        "slurm_reads_the_topology_as_weft_wrote_it",
        &["slurmctld", "scontrol"],
        "slurmctld",
    ) else {
        return;
    };
    let d = scratch("slurm");
    let split = d.join("split.weft");
    std::fs::write(&split, SPLIT).unwrap();
    let login = d.join("login.weft");
    std::fs::write(&login, LOGIN).unwrap();
    let text = export(&login, "slurm-tree");
    assert!(
        text.contains("SwitchName=spine Switches=leaf[1-2],spine-hosts\n")
            && text.contains("SwitchName=spine-hosts Nodes=login\n"),
        "{text}"
    );
    let ndr = imported(&d, "ndr", &fixture("topograph-ndr-dgx.ibnetdiscover"));
    let fdr = imported(&d, "fdr", &fixture("loginoff-fdr-sx6036.ibnetdiscover"));
    let mut cases = vec![
        (example("lab-16.weft"), 1),
        (example("cluster-648.weft"), 1),
        (ndr, 1),
        (fdr, 1),
        (split, 2),
        (login, 1),
    ];
    if crate::support::big_examples() {
        cases.push((example("cluster-11664.weft"), 1));
    }
    for (i, (f, fabrics)) in cases.iter().enumerate() {
        let text = export(f, "slurm-tree");
        let conf = parse_conf(&text);
        let hosts: BTreeSet<String> = conf.nodes.values().flatten().cloned().collect();
        // Slurm first, so that what it says of a broken file shows.
        let view = slurm_reads(&d.join(format!("ctld{i}")), &tools, &text);
        let name = f.display();
        // It complained about nothing, except that no switch joins two fabrics.
        let expected: Vec<&String> = view
            .problems
            .iter()
            .filter(|p| p.contains("no switch can reach all nodes"))
            .collect();
        assert_eq!(
            expected.len(),
            usize::from(*fabrics > 1),
            "{name}: {:?}",
            view.problems
        );
        assert_eq!(
            view.problems.len(),
            expected.len(),
            "{name}: Slurm's complaints: {:#?}",
            view.problems
        );
        // Slurm read every switch, with the hosts and children weft wrote, and its levels
        // (from 0) are weft's less one.
        let levels: BTreeMap<String, u32> = text
            .lines()
            .filter(|l| l.starts_with("SwitchName="))
            .map(|l| {
                let s = l["SwitchName=".len()..]
                    .split(' ')
                    .next()
                    .unwrap()
                    .to_owned();
                let level = level_of(&conf, &s);
                (s, level)
            })
            .collect();
        assert_eq!(view.switches.len(), conf.nodes.len(), "{name}");
        for (s, (level, nodes, children)) in &view.switches {
            assert_eq!(Some(level + 1), levels.get(s).copied(), "{name}: {s}");
            if let Some(c) = conf.switches.get(s) {
                assert_eq!(children, c, "{name}: {s}");
            } else {
                let want: BTreeSet<String> = conf.nodes[s].iter().cloned().collect();
                assert_eq!(nodes, &want, "{name}: {s}");
            }
        }
        // The tops reach every host of their fabric; with one fabric, all of them.
        let children: BTreeSet<&String> = view.switches.values().flat_map(|v| &v.2).collect();
        let reach: BTreeSet<&String> = view
            .switches
            .iter()
            .filter(|(s, _)| !children.contains(s))
            .flat_map(|(_, v)| &v.1)
            .collect();
        assert_eq!(reach.len(), hosts.len(), "{name}");
        check_tree(&conf, &hosts);
    }
    let _ = std::fs::remove_dir_all(d);
}

/// A switch's level in `conf`: 1 for a leaf, one more than its highest child.
fn level_of(conf: &Conf, s: &str) -> u32 {
    match conf.switches.get(s) {
        Some(c) => 1 + c.iter().map(|x| level_of(conf, x)).max().unwrap_or(0),
        None => 1,
    }
}
