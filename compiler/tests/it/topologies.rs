//! The topology templates build exactly the fabrics their documentation promises.

#![expect(clippy::panic, reason = "test helpers fail by panicking")]

use std::collections::BTreeSet;
use weft_compiler::{check, NoFiles};
use weft_fabric::{Fabric, NodeKind};
use weft_formats::state_json::ToJson;

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
    // Its name ranges `cn001..cn128` and `cn129..cn256` leave out cn128 and cn256 (`..`
    // excludes its end): a `weft::exclusive_node_range` warning each.
    // Its classes have no
    // `match`: `compute` takes its tenants' traffic, `management` the unmatched traffic, and
    // `storage` would carry none (refused).
    let src = include_str!("design-sketch.weft");
    let c = check("design.weft", src, &NoFiles);
    let codes: Vec<&str> = c.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(
        codes,
        [
            "weft::exclusive_node_range",
            "weft::exclusive_node_range",
            "weft::not_built::vm_class",
            "weft::bad_arguments"
        ],
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

/// Switches per tree level (leaves first), end nodes, and cables between consecutive levels
/// (end nodes to leaves first), of a fabric whose switches record their levels.
fn tree_counts(f: &Fabric) -> (Vec<usize>, usize, Vec<usize>) {
    let level = |id: weft_fabric::NodeId| f.node(id).spec.level.map_or(0, usize::from);
    let top = f.node_ids().map(level).max().unwrap_or(0);
    let mut switches = vec![0; top];
    for id in f.node_ids() {
        if let Some(l) = level(id).checked_sub(1) {
            switches[l] += 1;
        }
    }
    let mut cables = vec![0; top];
    for l in f.links() {
        let (a, b) = (level(l.a.node), level(l.b.node));
        cables[a.min(b)] += 1;
    }
    (switches, f.hca_count(), cables)
}

/// The DGX SuperPOD reference architectures' compute fabrics, as `superpod` builds them:
/// `(switch, machines per SU, SUs, machines, [leaves, spines, cores], [machine-leaf,
/// leaf-spine, spine-core cables])`. The published tables:
/// - DGX H100 (QM9700), "Compute fabric component count"
///   (https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/network-fabrics.html):
///   1 SU 31 nodes 8 leaves 4 spines 256 spine-leaf cables, 2 SU 63 16 8 512, 3 SU 95 24 16
///   768, 4 SU 127 32 16 1 024 (its compute cables, 252 … 1 020, count the UFM's 4 too);
/// - DGX B200 (NDR), the SU table of "DGX SuperPOD Architecture"
///   (https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-b200/latest/dgx-superpod-architecture.html):
///   2 SU 64 nodes 16/8/–, 4 SU 128 32/16/–, 8 SU 256 64/32/–, 16 SU 512 128/128/64,
///   32 SU 1 024 256/256/128, 64 SU 2 048 512/512/256, every cable tier 8 × nodes;
/// - DGX B300 (Quantum-X800 Q3400, 72 nodes per SU)
///   (https://docs.nvidia.com/dgx-superpod/reference-architecture/scalable-infrastructure-b300-xdr/latest/dgx-superpod-architecture.html):
///   1 SU 8 leaves 4 spines 576 node-leaf cables, 18 SU 1 296 nodes 144/72, 10 368 node-leaf
///   and 10 368 leaf-spine cables.
#[test]
fn superpod_has_the_reference_architectures_counts() {
    type Case = (&'static str, u32, u32, u32, Vec<usize>, Vec<usize>);
    let cases: Vec<Case> = vec![
        ("qm9700", 32, 1, 31, vec![8, 4], vec![248, 256]),
        ("qm9700", 32, 2, 63, vec![16, 8], vec![504, 512]),
        ("qm9700", 32, 3, 95, vec![24, 16], vec![760, 768]),
        ("qm9700", 32, 4, 127, vec![32, 16], vec![1016, 1024]),
        ("qm9700", 32, 2, 64, vec![16, 8], vec![512, 512]),
        ("qm9700", 32, 4, 128, vec![32, 16], vec![1024, 1024]),
        ("qm9700", 32, 8, 256, vec![64, 32], vec![2048, 2048]),
        (
            "qm9700",
            32,
            16,
            512,
            vec![128, 128, 64],
            vec![4096, 4096, 4096],
        ),
        (
            "qm9700",
            32,
            32,
            1024,
            vec![256, 256, 128],
            vec![8192, 8192, 8192],
        ),
        (
            "qm9700",
            32,
            64,
            2048,
            vec![512, 512, 256],
            vec![16384, 16384, 16384],
        ),
        ("q3400", 72, 1, 72, vec![8, 4], vec![576, 576]),
        ("q3400", 72, 18, 1296, vec![144, 72], vec![10368, 10368]),
    ];
    for (switch, per_su, units, nodes, switches, cables) in cases {
        let f = build(&format!(
            "use std::hardware::{{{switch}, connectx7}}\nuse std::topology::superpod\n\
             fabric t {{\n    topology = superpod(units: {units}, nodes_per_unit: {per_su}, \
             nodes: {nodes}, switch: {switch}, hca: connectx7)\n}}\n"
        ));
        let what = format!("{units} SU of {switch}");
        assert_eq!(
            tree_counts(&f),
            (switches, nodes as usize * 8, cables),
            "{what}"
        );
        // Every switch port a tree of this radix uses is cabled: the SUs are built whole.
        let radix = 2 * per_su as usize;
        for n in f.nodes().iter().filter(|n| n.spec.level == Some(1)) {
            let up = n.ports[per_su as usize..radix]
                .iter()
                .filter(|p| p.link.is_some());
            assert_eq!(up.count(), per_su as usize, "{what}: {}", n.name());
        }
    }
}

#[test]
fn superpod_cables_every_hca_to_its_rail() {
    let f = build(
        "use std::hardware::{qm9700, connectx7}\nuse std::topology::superpod\n\
         fabric t {\n    topology = superpod(units: 2, nodes: 40, switch: qm9700, hca: connectx7)\n}\n",
    );
    for n in 1..=40 {
        let host = format!("dgx{n:03}");
        let first = f.find(&format!("{host} mlx5_0")).unwrap();
        for rail in 0..8 {
            let id = f.find(&format!("{host} mlx5_{rail}")).unwrap();
            let hca = f.node(id);
            // One host: every HCA carries the first one's GUID as its system image GUID.
            let system = hca.spec.system_guid.unwrap_or(hca.guid());
            assert_eq!(system, f.node(first).guid(), "{host} rail {rail}");
            let link = hca.ports[0].link.unwrap();
            let l = &f.links()[link.index()];
            let leaf = if l.a.node == id { l.b } else { l.a };
            let su = (n - 1) / 32 + 1;
            assert_eq!(
                (f.node(leaf.node).name(), leaf.port.0),
                (
                    format!("leaf-su{su}-r{rail}").as_str(),
                    ((n - 1) % 32 + 1) as u8
                ),
                "{host} rail {rail}"
            );
        }
    }
    // Each leaf carries one rail: its end nodes are all `mlx5_<its rail>`.
    for leaf in f.nodes().iter().filter(|n| n.spec.level == Some(1)) {
        let rail = leaf.name().rsplit('r').next().unwrap();
        for p in leaf.ports.iter().filter_map(|p| p.link) {
            let l = &f.links()[p.index()];
            let other = f.node(if f.node(l.a.node).name() == leaf.name() {
                l.b.node
            } else {
                l.a.node
            });
            if !other.is_switch() {
                assert!(
                    other.name().ends_with(&format!("mlx5_{rail}")),
                    "{} on {}",
                    other.name(),
                    leaf.name()
                );
            }
        }
    }
}

/// With `aggregation: true` every switch has one port more than its model and a SHARP
/// Aggregation Node on it, recognisable as the hardware shows one: a one-port CA, device id
/// 0xcf09, named "Mellanox Technologies Aggregation Node (SWITCH)".
#[test]
fn aggregation_nodes_sit_on_every_switchs_extra_port() {
    for (topology, model_ports) in [
        (
            "superpod(units: 2, switch: qm9700, hca: connectx7, aggregation: true)",
            64,
        ),
        (
            "superpod(units: 16, nodes: 40, switch: qm9700, hca: connectx7, aggregation: true)",
            64,
        ),
        (
            "fat_tree(levels: 3, radix: 8, switch: sb7800, hca: connectx5, aggregation: true)",
            36,
        ),
        ("cs8500(aggregation: true)", 40),
    ] {
        let f = build(&format!(
            "use std::hardware::{{sb7800, qm9700, connectx5, connectx7}}\n\
             use std::topology::{{superpod, fat_tree, cs8500}}\nfabric t {{\n    topology = {topology}\n}}\n"
        ));
        let switches: Vec<_> = f.nodes().iter().filter(|n| n.is_switch()).collect();
        let ans = f
            .nodes()
            .iter()
            .filter(|n| {
                n.name()
                    .starts_with("Mellanox Technologies Aggregation Node")
            })
            .count();
        assert_eq!(ans, switches.len(), "{topology}");
        for sw in switches {
            assert_eq!(
                usize::from(sw.spec.port_count),
                model_ports + 1,
                "{topology}"
            );
            let link = sw.ports[model_ports]
                .link
                .expect("the extra port is cabled");
            let l = &f.links()[link.index()];
            let an = f.node(if f.node(l.a.node).name() == sw.name() {
                l.b.node
            } else {
                l.a.node
            });
            assert_eq!(
                (an.kind(), an.spec.port_count, an.spec.device_id, an.name()),
                (
                    NodeKind::Hca,
                    1,
                    0xcf09,
                    format!("Mellanox Technologies Aggregation Node ({})", sw.name()).as_str()
                ),
                "{topology}"
            );
        }
    }
}

#[test]
fn directors_are_their_asics() {
    let director = |call: &str| {
        build(&format!(
            "use std::topology::{{cs7500, cs8500}}\nfabric t {{\n    topology = {call}\n}}\n"
        ))
    };
    let edr = director("cs7500(name: \"edr\")");
    let hdr = director("cs8500(name: \"hdr\", level: 2)");
    let count = |f: &Fabric, prefix: &str, level: u8| {
        f.nodes()
            .iter()
            .filter(|n| n.name().starts_with(prefix) && n.spec.level == Some(level))
            .count()
    };
    let free = |f: &Fabric| -> usize {
        f.nodes()
            .iter()
            .map(|n| n.ports.iter().filter(|p| p.link.is_none()).count())
            .sum()
    };
    // CS7500: 36 leaf and 18 spine Switch-IB 2 ASICs, 648 front-panel ports; CS8500: 40 leaf
    // and 20 spine Quantum ASICs, 800 front-panel ports (here as a tree's levels 2 and 3).
    assert_eq!(
        (count(&edr, "edr/L", 1), count(&edr, "edr/S", 2), free(&edr)),
        (36, 18, 648)
    );
    assert_eq!(
        (count(&hdr, "hdr/L", 2), count(&hdr, "hdr/S", 3), free(&hdr)),
        (40, 20, 800)
    );
    assert_eq!((edr.switch_count(), hdr.switch_count()), (54, 60));
    // The one internal link a public CS8500 dump shows: S02/U1 port 15 to L15/U1 port 22.
    assert!(links(&hdr).contains(&("hdr/L15/U1".into(), 22, "hdr/S02/U1".into(), 15)));
}

/// The shape of each template instance: switches per level, end nodes, cables per tier.
#[test]
fn rail_optimized_shapes() {
    let shapes: Vec<String> = [
        "superpod(units: 1, switch: qm9700, hca: connectx7)",
        "superpod(units: 1, nodes: 20, switch: qm9700, hca: connectx7, aggregation: true)",
        "superpod(units: 2, rails: 4, nodes_per_unit: 8, switch: qm8700, hca: connectx6)",
        "superpod(units: 16, switch: qm9700, hca: connectx7)",
        "rail_optimized(nodes: 100, switch: qm8700, hca: connectx6)",
        "rail_optimized(nodes: 20, rails: 2, nodes_per_leaf: 4, switch: qm8700, hca: connectx6)",
        "cs8500(hosts: 100)",
    ]
    .iter()
    .map(|t| {
        let f = build(&format!(
            "use std::hardware::{{qm8700, qm9700, connectx6, connectx7}}\n\
             use std::topology::{{superpod, rail_optimized, cs8500}}\nfabric t {{\n    topology = {t}\n}}\n"
        ));
        let (switches, ends, cables) = tree_counts(&f);
        format!("{t}\n  switches per level {switches:?}, end nodes {ends}, cables per tier {cables:?}")
    })
    .collect();
    insta::assert_snapshot!(shapes.join("\n"));
}
