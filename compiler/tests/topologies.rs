//! The topology templates build exactly the fabrics their documentation promises.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use weft_compiler::{check, NoFiles};
use weft_fabric::{Fabric, NodeKind};

fn build(src: &str) -> Fabric {
    let c = check("t.weft", src, &NoFiles);
    let msgs: Vec<_> = c.diagnostics.iter().map(|d| d.message.clone()).collect();
    assert!(!c.has_errors(), "unexpected errors: {msgs:?}");
    c.elaborated
        .map(|e| e.fabric)
        .unwrap_or_else(|| panic!("no fabric"))
}

/// Links as sorted `(name, port, name, port)` tuples, each link once.
fn links(f: &Fabric) -> BTreeSet<(String, u8, String, u8)> {
    f.links()
        .iter()
        .map(|l| {
            let a = (f.node(l.a.node).name().to_owned(), l.a.port.0);
            let b = (f.node(l.b.node).name().to_owned(), l.b.port.0);
            let (x, y) = if a <= b { (a, b) } else { (b, a) };
            (x.0, x.1, y.0, y.1)
        })
        .collect()
}

fn program(topology: &str) -> String {
    format!(
        "use std::hardware::{{sb7800, qm9700, connectx5, connectx7}}\nuse std::topology::{{fat_tree, pgft, xgft, kary_ntree, torus, mesh, ring}}\nfabric t {{\n    {topology}\n}}\n"
    )
}

#[test]
fn fat_tree_648_is_the_explicit_two_level_tree() {
    let templ = build(&program(
        "topology = fat_tree(levels: 2, switch: sb7800, hca: connectx5, host_name: \"cn{}\", names: [\"leaf\", \"spine\"])",
    ));
    // The explicit form of the same fabric.
    let explicit = build(&program(
        "topology {
        switch spine[1..=18] : sb7800 { level = 2 }
        switch leaf[1..=36] : sb7800 { level = 1 }
        hca cn[1..=648] : connectx5
        for l in 1..=36, s in 1..=18 { link leaf[l].p[18 + s] <-> spine[s].p[l] }
        for n in 1..=648 { link cn[n].p[1] <-> leaf[(n - 1) / 18 + 1].p[(n - 1) % 18 + 1] }
    }",
    ));
    assert_eq!(links(&templ), links(&explicit));
    assert_eq!(templ.switch_count(), 54);
    assert_eq!(templ.hca_count(), 648);
    assert_eq!(templ.lid_count(), 702);
    assert_eq!(templ.levels(), Some(2));
    let spines: Vec<_> = templ
        .nodes()
        .iter()
        .filter(|n| n.spec.level == Some(2))
        .map(|n| n.name().to_owned())
        .collect();
    assert_eq!(spines.len(), 18);
    assert!(spines.iter().all(|n| n.starts_with("spine")));
}

/// Every switch of a fat-tree uses exactly its down + up ports, hosts one port each.
fn port_use(f: &Fabric) -> BTreeSet<(Option<u8>, usize)> {
    f.nodes()
        .iter()
        .map(|n| {
            (
                n.spec.level,
                n.ports.iter().filter(|p| p.link.is_some()).count(),
            )
        })
        .collect()
}

#[test]
fn three_level_trees_have_the_published_sizes() {
    let f = build(&program(
        "topology = fat_tree(levels: 3, switch: sb7800, hca: connectx5)",
    ));
    assert_eq!(
        (f.hca_count(), f.switch_count(), f.lid_count()),
        (11_664, 1_620, 13_284)
    );
    assert_eq!(
        port_use(&f),
        BTreeSet::from([(None, 1), (Some(1), 36), (Some(2), 36), (Some(3), 36)])
    );
    let k = build(&program(
        "topology = fat_tree(levels: 3, switch: sb7800, hca: connectx5, pods: 18)",
    ));
    assert_eq!((k.hca_count(), k.switch_count()), (5_832, 972));
    // The k-ary 3-tree's core switches use half their ports.
    assert!(port_use(&k).contains(&(Some(3), 18)));
    let same = build(&program(
        "topology = kary_ntree(k: 18, n: 3, switch: sb7800, hca: connectx5)",
    ));
    assert_eq!(links(&k), links(&same));
}

#[test]
fn oversubscription_and_partial_population() {
    let o = build(&program(
        "topology = fat_tree(levels: 2, switch: sb7800, hca: connectx5, oversubscription: 2)",
    ));
    assert_eq!((o.hca_count(), o.switch_count()), (864, 48));
    assert_eq!(
        port_use(&o),
        BTreeSet::from([(None, 1), (Some(1), 36), (Some(2), 36)])
    );
    let p = build(&program(
        "topology = fat_tree(levels: 2, switch: sb7800, hca: connectx5, hosts: 100)",
    ));
    assert_eq!((p.hca_count(), p.switch_count()), (100, 54));
    let big = build(&program(
        "topology = fat_tree(levels: 3, switch: qm9700, hca: connectx7, pods: 44)",
    ));
    assert_eq!(
        (big.hca_count(), big.switch_count(), big.lid_count()),
        (45_056, 3_840, 48_896)
    );
}

#[test]
fn xgft_and_pgft_follow_the_paper_counts() {
    // XGFT(2; 8,4; 4,1) in the papers' inverted notation is m = [4, 8], w = [1, 4] here:
    // 32 hosts, 8 leaves, 4 roots.
    let x = build(&program(
        "topology = xgft(h: 2, m: [4, 8], w: [1, 4], switch: sb7800, hca: connectx5)",
    ));
    assert_eq!((x.hca_count(), x.switch_count()), (32, 12));
    // XGFT(3; 16,8,8; 8,8,1) → m = [8, 8, 16], w = [1, 8, 8]: 1024 hosts, 320 switches.
    let y = build(&program(
        "topology = xgft(m: [8, 8, 16], w: [1, 8, 8], switch: qm9700, hca: connectx5)",
    ));
    assert_eq!((y.hca_count(), y.switch_count()), (1024, 320));
    // Two parallel links between every leaf and spine.
    let p = build(&program(
        "topology = pgft(m: [4, 4], w: [1, 2], p: [1, 2], switch: sb7800, hca: connectx5)",
    ));
    assert_eq!(
        (p.hca_count(), p.switch_count(), p.links().len()),
        (16, 6, 16 + 4 * 2 * 2)
    );
}

#[test]
fn torus_mesh_and_ring() {
    let t = build(&program(
        "topology = torus(dims: [4, 4], switch: sb7800, hca: connectx5, hosts_per_switch: 2)",
    ));
    assert_eq!(
        (t.switch_count(), t.hca_count(), t.links().len()),
        (16, 32, 32 + 32)
    );
    // Every switch has four torus neighbours on ports 3..=6.
    for n in t.nodes().iter().filter(|n| n.kind() == NodeKind::Switch) {
        let wired: Vec<u8> = n
            .ports
            .iter()
            .filter(|p| p.link.is_some())
            .map(|p| p.num.0)
            .collect();
        assert_eq!(wired, vec![1, 2, 3, 4, 5, 6], "{}", n.name());
    }
    let m = build(&program(
        "topology = mesh(dims: [3, 3], switch: sb7800, hca: connectx5)",
    ));
    assert_eq!(m.links().len(), 9 + 12);
    let r = build(&program(
        "topology = ring(n: 6, switch: sb7800, hca: connectx5)",
    ));
    assert_eq!((r.switch_count(), r.links().len()), (6, 12));
}

#[test]
fn faults_mark_links_and_nodes_down_without_renumbering() {
    let base = build(&program(
        "topology = fat_tree(levels: 2, switch: sb7800, hca: connectx5)",
    ));
    let hurt = build(&program(
        "topology = fat_tree(levels: 2, switch: sb7800, hca: connectx5)\n    faults { link leaf3.p[20] down; switch spine7 down }",
    ));
    assert_eq!(links(&base), links(&hurt));
    let guids = |f: &Fabric| f.nodes().iter().map(|n| n.guid()).collect::<Vec<_>>();
    assert_eq!(guids(&base), guids(&hurt));
    let down = hurt
        .links()
        .iter()
        .filter(|l| l.state == weft_fabric::LinkState::Down)
        .count();
    assert_eq!(down, 1 + 36);
    assert!(
        hurt.node(hurt.find("spine7").unwrap_or_else(|| panic!()))
            .down
    );
}

#[test]
fn stdlib_and_examples_are_formatted() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    for dir in ["stdlib", "examples"] {
        let mut files: Vec<_> = std::fs::read_dir(format!("{root}/{dir}"))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "weft"))
            .collect();
        files.sort();
        assert!(!files.is_empty());
        for p in files {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let mut sources = weft_compiler::diagnostic::SourceMap::new();
            let id = sources.add(p.display().to_string(), text.as_str());
            let out = weft_compiler::fmt::format(&text, id)
                .unwrap_or_else(|d| panic!("{}: {d:?}", p.display()));
            assert_eq!(
                out,
                text,
                "{} is not formatted (run `weft fmt --write`)",
                p.display()
            );
            let again = weft_compiler::fmt::format(&out, id).unwrap_or_else(|d| panic!("{d:?}"));
            assert_eq!(again, out, "formatting {} is not idempotent", p.display());
        }
    }
}

#[test]
fn same_input_same_fabric() {
    let src = program("topology = fat_tree(levels: 2, switch: sb7800, hca: connectx5)");
    let a = build(&src).to_json();
    let b = build(&src).to_json();
    assert!(!a.is_empty());
    assert_eq!(a, b);
}

#[test]
fn design_sketch_compiles() {
    // The design's language sketch (design-sketch.weft), verbatim plus a faults block: every
    // construct parses and the fabric elaborates; what is not built yet (a class for a
    // tenant with VMs) is a `weft::not_built::vm_class` error at its span, never silently ignored.
    // Its classes have no
    // `match`: `compute` takes its tenants' traffic, `management` the unmatched traffic, and
    // `storage` would carry none (refused).
    let src = include_str!("design-sketch.weft");
    let c = check("design.weft", src, &NoFiles);
    let codes: Vec<&str> = c.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(
        codes,
        ["weft::not_built::vm_class", "weft::bad_arguments"],
        "{:?}",
        c.diagnostics
    );
    let e = c.elaborated.unwrap_or_else(|| panic!("no fabric"));
    assert_eq!(e.fabric.hca_count(), 648);
    assert_eq!(e.config.vls_budget.map(|v| v.0), Some(4));
    assert_eq!(
        e.config.routing.engine,
        Some(weft_compiler::routing::Engine::FatTree)
    );
}

/// Node GUIDs and port GUIDs are separate name spaces (issue 25): `h1`'s port GUID is `h2`'s
/// node GUID, as ibsim counts them, and is accepted; a generated GUID skips the ones whose
/// port GUIDs another node's port already carries (`c` would have been 0x1100, whose port
/// 0x1101 is `x`'s).
#[test]
fn a_port_guid_may_equal_another_nodes_node_guid() {
    let f = build(
        "use std::hardware::{sb7800, connectx5}\nfabric f {\n    guid_base = 0x1000\n    topology {\n        switch s : sb7800 { guid = 0x4000 }\n        hca h1 : connectx5 { guid = 0x5000 }\n        hca h2 : connectx5 { guid = 0x5001 }\n        hca x : connectx5 { guid = 0x6000, port_guids = [0x1101] }\n        hca c : connectx5\n        link s.p[1] <-> h1.p[1]\n        link s.p[2] <-> h2.p[1]\n        link s.p[3] <-> x.p[1]\n        link s.p[4] <-> c.p[1]\n    }\n}\n",
    );
    let node = |n: &str| f.node(f.find(n).unwrap());
    assert_eq!(node("h1").ports[0].guid, weft_fabric::Guid(0x5001));
    assert_eq!(node("h2").guid(), weft_fabric::Guid(0x5001));
    assert_eq!(node("c").guid(), weft_fabric::Guid(0x1200));
    // The port GUID is h1's port; the node GUID h2.
    let h1 = f.find("h1").unwrap();
    assert_eq!(
        f.find_port_guid(weft_fabric::Guid(0x5001)),
        Some((h1, weft_fabric::PortNum(1)))
    );
    assert_eq!(f.find_guid(weft_fabric::Guid(0x5001)), f.find("h2"));
}

/// Every stdlib model, one node each, as `(name, kind, ports, speed, width, device id)`: the
/// numbers `stdlib/hardware.weft` documents with their sources.
#[test]
fn hardware_models_carry_their_documented_numbers() {
    let models = [
        ("sb7800", "switch", 36, "EDR", 4, 0xcf08),
        ("qm8700", "switch", 40, "HDR", 4, 0xd2f0),
        ("qm8790", "switch", 40, "HDR", 4, 0xd2f0),
        ("qm8700_hdr100", "switch", 80, "HDR", 2, 0xd2f0),
        ("qm9700", "switch", 64, "NDR", 4, 0xd2f2),
        ("qm9790", "switch", 64, "NDR", 4, 0xd2f2),
        ("qm9700_ndr200", "switch", 128, "NDR", 2, 0xd2f2),
        ("q3400", "switch", 144, "XDR", 4, 0xd2f4),
        ("sharp_an", "hca", 1, "XDR", 4, 0xcf09),
        ("connectx5", "hca", 1, "EDR", 4, 0x1017),
        ("connectx6", "hca", 1, "HDR", 4, 0x101b),
        ("connectx7", "hca", 1, "NDR", 4, 0x1021),
        ("connectx8", "hca", 1, "XDR", 4, 0x1023),
        ("bluefield3", "hca", 2, "NDR", 2, 0xa2dc),
        ("connectx6_dual", "hca", 2, "HDR", 4, 0x101b),
    ];
    let names: Vec<&str> = models.iter().map(|m| m.0).collect();
    let decls: String = models
        .iter()
        .map(|(m, kind, ..)| format!("        {kind} n_{m} : {m}\n"))
        .collect();
    let src = format!(
        "use std::hardware::{{{}}}\nfabric t {{\n    topology {{\n{decls}    }}\n}}\n",
        names.join(", ")
    );
    let c = check("t.weft", &src, &NoFiles);
    let f = c.elaborated.expect("the models elaborate").fabric;
    for (m, kind, ports, speed, width, device) in models {
        let id = f.find(&format!("n_{m}")).unwrap();
        let n = f.node(id);
        let got = (
            n.kind() == NodeKind::Switch,
            n.spec.port_count,
            n.spec.caps.speed.as_str(),
            n.spec.caps.width.lanes(),
            n.spec.device_id,
            n.spec.vendor_id,
            n.spec.caps.vl_cap,
        );
        assert_eq!(
            got,
            (kind == "switch", ports, speed, width, device, 0x02c9, 8),
            "{m}"
        );
        if kind == "switch" {
            assert_eq!(n.spec.linear_fdb_cap, 49_152, "{m}");
        }
    }
}
