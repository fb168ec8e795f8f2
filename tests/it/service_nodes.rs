//! Service nodes and real trees (issue 27): fabrics as NVIDIA-era dumps show them, with a
//! SHARP Aggregation Node (AN) on every switch, imported with no edits.
//!
//! - The 648-host tree with an AN on an extra port of every switch: recognised, the default
//!   engine is `fat_tree`, proven, and its eBB within 2 % of the same tree without the ANs;
//!   the same with the ANs declared in a template-built program.
//! - The 666-switch SuperPOD-class rail-optimised tree ([`weft_tests::dump::SuperPod`]):
//!   200 leaves, 320 spines, 140 cores, a host-less management sub-tree of 6 switches set
//!   aside, 13 missing uplinks, 4 341 CAs of which 666 ANs: routed by `fat_tree` with eBB
//!   ≥ 0.5, proven; `updn`'s eBB on it printed beside.
//! - Random trees (XGFTs) with ANs on random switches, random missing uplinks and a
//!   management island: detected as fat-trees with the island set aside, and proven.
//! - The real Selene storage fabric and trees cabled like it ([`weft_tests::dump::Planes`]:
//!   each core reaches several spines of every pod, in planes; host-less leaves, missing
//!   cables, a management island on a spine): routed by sFtree from a subtree root (neither
//!   turn by turn nor `updn`), proven, every leaf's uplinks evenly used.
//! - Service nodes stay out of host counts and traffic patterns, but are routed and reach
//!   every end port.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr,
    reason = "test helpers fail by panicking and say on the terminal what they skipped or measured"
)]

use proptest::prelude::*;
use weft_compiler::build::Built;
use weft_compiler::code::Code;
use weft_compiler::diagnostic::SourceId;
use weft_compiler::routing::shape::{self, Shape};
use weft_compiler::routing::Engine;
use weft_fabric::{FabricState, Role};
use weft_metrics::QualityOptions;
use weft_tests::dump::{planes_dump, superpod, superpod_dump, Dump, End, Planes, SuperPod};
use weft_tests::{built, example, Rng};

/// `weft import` of a dump, with no edits: the program. Neither errors nor warnings: the
/// aggregation nodes' shared NodeDescription is not a duplicate name worth one. (An HCA with
/// the adapter's default NodeDescription is, `weft::default_named_hcas`: Selene storage has
/// one, counted as a machine of its own as the warning says.)
fn import(text: &str) -> String {
    match weft_compiler::import_ibnetdiscover(text, "t.ibnd", SourceId(0), None, "imported") {
        Ok((program, warnings)) => {
            let other: Vec<_> = warnings
                .iter()
                .filter(|w| w.code.as_str() != "weft::default_named_hcas")
                .collect();
            assert!(other.is_empty(), "{other:?}");
            program
        }
        Err(e) => panic!("the dump is refused: {e:?}"),
    }
}

/// The program compiled and routed through the driver.
fn build(program: &str) -> Built {
    built(weft_driver::compile_text(
        "t.weft",
        program,
        &weft_compiler::NoFiles,
        &weft_driver::quietly,
    ))
}

/// The program with a `routing { engine = … }` section.
fn with_engine(program: &str, engine: &str) -> String {
    let end = program.rfind('}').unwrap();
    format!(
        "{}    routing {{ engine = {engine} }}\n}}\n",
        &program[..end]
    )
}

/// Every route property proven, over every end port and switch (scope `all`).
fn assert_proven(st: &weft_fabric::ValidState) {
    let r = weft_verifier::verify(st, &weft_verifier::Options::default());
    assert!(
        r.is_proven(),
        "not proven: {:?}",
        r.listed_failures().first()
    );
}

fn ebb(st: &FabricState, bisections: usize) -> f64 {
    weft_metrics::quality(
        st,
        &QualityOptions {
            bisections: Some(bisections),
            ..QualityOptions::default()
        },
    )
    .bisections
    .ebb
    .expect("an eBB")
}

fn count_roles(st: &FabricState, role: Role) -> usize {
    st.fabric
        .nodes()
        .iter()
        .filter(|n| n.role() == role)
        .count()
}

/// The 648-host tree's dump, and the same with an AN on an extra port (37) of every switch.
fn tree_648() -> (String, String) {
    let template = weft_driver::compile_text(
        "cluster-648.weft",
        &example("cluster-648.weft"),
        &weft_compiler::NoFiles,
        &weft_driver::quietly,
    );
    let f = &built(template).state.fabric;
    let plain = Dump::of(f);
    let mut with = plain.clone();
    for s in 0..with.switches.len() {
        with.add_an(s);
    }
    (plain.text(), with.text())
}

#[test]
fn an_aggregation_node_on_every_switch_of_the_648_tree() {
    let (plain, with) = tree_648();
    let program = import(&with);
    assert_eq!(
        program.matches(", role = aggregation").count(),
        54,
        "{program:.2000}"
    );
    assert!(
        program.starts_with("// 54 SHARP aggregation node(s) recognised (54 by NodeDescription"),
        "{program:.300}"
    );
    let (b0, b1) = (build(&import(&plain)), build(&program));
    for b in [&b0, &b1] {
        assert_eq!(b.engine, Engine::FatTree, "{}", b.why);
        assert_eq!(b.engine_used, Engine::FatTree, "{}", b.why);
        assert_proven(&b.state);
    }
    assert!(
        b1.why
            .contains("a 2-level fat-tree (36 leaves, 18 at level 2;")
            && b1
                .why
                .ends_with("; set aside: 54 service nodes (54 aggregation)"),
        "{}",
        b1.why
    );
    assert_eq!(count_roles(&b1.state, Role::Aggregation), 54);
    let q = weft_metrics::of_build(&b1.state);
    assert_eq!((q.end_ports, q.service_ports), (648, 54));
    let (e0, e1) = (ebb(&b0.state, 200), ebb(&b1.state, 200));
    eprintln!("648-host tree: eBB {e0:.4} without ANs, {e1:.4} with an AN on every switch");
    assert!((e1 - e0).abs() <= 0.02 * e0, "eBB {e1} against {e0}");
}

/// The same tree built by the template, its switches given an AN port: recorded levels, ANs
/// declared (`role = aggregation`) on the spines and leaves.
#[test]
fn template_built_tree_with_declared_aggregation_nodes() {
    let src = "use std::hardware::connectx5\nuse std::topology::fat_tree\nmodel q37 : switch {\n    ports = 37\n    speed = EDR\n    vlcap = 8\n    linear_fdb_cap = 49152\n}\nmodel an : hca {\n    ports = 1\n    role = aggregation\n}\nfabric f {\n    topology {\n        fat_tree(levels: 2, radix: 36, switch: q37, hca: connectx5, host_name: \"cn{:03}\")\n        hca leaf_an[1..=36] : an\n        hca spine_an[1..=18] : an\n        for i in 1..=36 { link node(format(\"leaf{}\", i)).p[37] <-> leaf_an[i].p[1] }\n        for i in 1..=18 { link node(format(\"spine{}\", i)).p[37] <-> spine_an[i].p[1] }\n    }\n}\n";
    let b = build(src);
    assert_eq!(b.engine, Engine::FatTree, "{}", b.why);
    assert!(
        b.why.contains("levels recorded by the description")
            && b.why.contains("54 service nodes (54 aggregation)"),
        "{}",
        b.why
    );
    assert_eq!(count_roles(&b.state, Role::Aggregation), 54);
    assert_proven(&b.state);
    let plain = build(&example("cluster-648.weft"));
    let (e0, e1) = (ebb(&plain.state, 200), ebb(&b.state, 200));
    assert!((e1 - e0).abs() <= 0.02 * e0, "eBB {e1} against {e0}");
}

/// The issue's 666-switch tree imports with no edits and gets fat-tree routing.
#[test]
fn superpod_class_tree_is_routed_by_fat_tree() {
    let p = SuperPod::ISSUE_27;
    let text = superpod(&p);
    let program = import(&text);
    assert_eq!(program.matches(", role = aggregation").count(), 666);
    let b = build(&program);
    assert_eq!(b.engine, Engine::FatTree, "{}", b.why);
    assert_eq!(b.engine_used, Engine::FatTree, "{}", b.why);
    assert!(
        b.why.contains("a 3-level fat-tree (200 leaves, 320 at level 2, 140 at level 3;")
            && b.why.contains(
                "set aside: 6 switches outside the levels (`MF0;mgmt-1:MQM8700/U1`, `MF0;mgmt-2:MQM8700/U1`, `MF0;mgmt-3:MQM8700/U1` and 3 more), 666 service nodes (666 aggregation)"
            ),
        "{}",
        b.why
    );
    // sFtree completes it (the management sub-tree is routed through the core it hangs off),
    // not the turn-by-turn fallback.
    let codes: Vec<_> = b.notes.iter().map(|n| n.code).collect();
    assert!(
        codes.contains(&Code::SftreeRoot)
            && codes.contains(&Code::SftreeSetAside)
            && !codes.contains(&Code::SftreeAcyclic),
        "{:?}",
        b.notes
    );
    let st = &b.state;
    assert_eq!(
        (st.fabric.switch_count(), st.fabric.hca_count()),
        (666, 4341)
    );
    assert_proven(st);
    let q = weft_metrics::quality(st, &weft_metrics::QualityOptions::default());
    assert_eq!((q.end_ports, q.service_ports), (4341 - 666, 666));
    let fat = q.bisections.ebb.expect("an eBB");
    let updn = ebb(&build(&with_engine(&program, "updn")).state, 64);
    eprintln!(
        "666-switch tree: fat_tree eBB {fat:.4} ({} bisections), updn eBB {updn:.4} (64)",
        q.bisections.count
    );
    assert!(fat >= 0.5, "fat_tree eBB {fat}");
    // Each DGX (`dgx-0001 mlx5_0` … `mlx5_7`) is one host with its HCAs on their rails.
    let m = q.machines.as_ref().expect("machines");
    assert_eq!(m.hosts, p.dgx + p.others);
    assert_eq!(m.ports_per_host.get(&p.rails), Some(&p.dgx));
    assert_eq!(m.rails.len(), p.rails);
    // The other machines have one HCA each: on no rail.
    assert!(m.rails.iter().all(|r| r.hosts == p.dgx));
    eprintln!(
        "666-switch tree: rail-aligned eBB {:.4}, cross-rail {:.4}, rail 0 {:.4}",
        m.rail_aligned
            .as_ref()
            .and_then(|b| b.ebb)
            .expect("rail-optimised"),
        m.cross_rail
            .as_ref()
            .and_then(|b| b.ebb)
            .expect("rail-optimised"),
        m.rails[0].bisections.ebb.expect("an eBB")
    );
}

/// The real Selene compute fabric (`tests/fixtures/real/ufm-selene-compute.ibnetdiscover`, a
/// DGX SuperPOD dump: 666 QM8700 switches with an AN on port 41 of each, 458 DGX with 8
/// rails, a management sub-tree) imports with no edits and no warnings, is routed by
/// `fat_tree` (it was `updn` before ANs were recognised), proven, with eBB ≥ 0.5 over its
/// 3 675 hosts.
#[test]
fn the_real_selene_dump_is_routed_by_fat_tree() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/real/ufm-selene-compute.ibnetdiscover"
    ))
    .unwrap();
    let program = import(&text);
    assert_eq!(program.matches(", role = aggregation").count(), 666);
    let b = build(&program);
    assert_eq!(b.engine, Engine::FatTree, "{}", b.why);
    assert_eq!(b.engine_used, Engine::FatTree, "{}", b.why);
    assert!(
        b.why
            .contains("a 3-level fat-tree (203 leaves, 321 at level 2, 140 at level 3;")
            && b.why.contains("666 service nodes (666 aggregation)"),
        "{}",
        b.why
    );
    let st = &b.state;
    assert_eq!(
        (st.fabric.switch_count(), st.fabric.hca_count()),
        (666, 4341)
    );
    assert_proven(st);
    management_pairs_turn_at_the_root(st);
    let q = weft_metrics::quality(st, &weft_metrics::QualityOptions::default());
    // One meaning per number: hosts are machines, end ports are ports.
    assert_eq!((q.hosts, q.end_ports, q.service_ports), (469, 3675, 666));
    // A set-aside switch (no recorded level) has no level in the balance, and every other
    // switch is at most at the tree's top level.
    let aside: Vec<&str> = st
        .fabric
        .nodes()
        .iter()
        .filter(|n| n.is_switch() && n.spec.level.is_none())
        .map(|n| n.name())
        .collect();
    assert!(!aside.is_empty());
    for u in &q.balance.per_switch {
        assert_eq!(
            u.level.is_none(),
            aside.contains(&u.switch.as_str()),
            "{u:?}"
        );
        assert!(u.level.is_none_or(|l| l <= 3), "{u:?}");
    }
    let fat = q.bisections.ebb.expect("an eBB");
    eprintln!(
        "Selene: fat_tree eBB {fat:.4} ({} bisections)",
        q.bisections.count
    );
    assert!(fat >= 0.5, "fat_tree eBB {fat}");
    // Shortest routes: every pair an up*/down* path joins is routed over a shortest one; the
    // 36 that none joins (the management leaves `MLG01-01`/`02` to `selene-cache-03`/`04`
    // under `MLG01-04`) take one down→up turn and 2 links more than the shortest path.
    let e = &q.hop_excess;
    assert_eq!(
        (e.updown_pairs, e.over_updown, e.max_over_updown),
        (13_501_914, 0, 0),
        "{e:?}"
    );
    assert_eq!(
        (e.without_updown, e.over_shortest, e.max_over_shortest),
        (36, 36, 2),
        "{e:?}"
    );
    // Hosts as machines: the 8 HCAs of each DGX (`luna-0001 mlx5_0` …) are one host, each on
    // the rail its device number ranks, and that is how the fabric is cabled: every leaf's
    // hosts are on one rail.
    assert_eq!(program.matches("host = \"luna-").count(), 3664);
    let m = q.machines.as_ref().expect("machines");
    assert_eq!(m.hosts, 469);
    assert_eq!(
        m.ports_per_host
            .iter()
            .map(|(&k, &v)| (k, v))
            .collect::<Vec<_>>(),
        [(1, 11), (8, 458)]
    );
    assert_eq!(m.rails.len(), 8);
    assert!(m
        .rails
        .iter()
        .all(|r| r.hosts == 458 && r.bisections.unroutable == 0));
    let machines = weft_fabric::machines::Machines::of(&st.fabric).unwrap();
    let mut rail_of_leaf: std::collections::BTreeMap<weft_fabric::NodeId, u8> =
        std::collections::BTreeMap::new();
    for machine in machines.machines.iter().filter(|m| m.members.len() == 8) {
        for x in &machine.members {
            let leaf =
                weft_fabric::forward::leave(&st.fabric, weft_fabric::PortRef::new(x.node, 1))
                    .unwrap()
                    .to
                    .node;
            let rail = x.rail.unwrap();
            assert_eq!(
                *rail_of_leaf.entry(leaf).or_insert(rail),
                rail,
                "{}",
                machine.name
            );
        }
    }
    assert_eq!(rail_of_leaf.len(), 200);
    for r in &m.rails {
        eprintln!("Selene: rail {} eBB {:?}", r.rail, r.bisections.ebb);
    }
}

/// A switch of Selene compute by the name part of its NodeDescription (`MF0;NAME:MQM8700/U1`).
fn selene_switch(st: &FabricState, name: &str) -> weft_fabric::NodeId {
    let full = format!("MF0;{name}:MQM8700/U1");
    st.fabric
        .find(&full)
        .unwrap_or_else(|| panic!("no switch {full}"))
}

/// The host ports cabled to a switch, with their LIDs.
fn hosts_on(
    st: &FabricState,
    sw: weft_fabric::NodeId,
) -> Vec<(weft_fabric::PortRef, weft_fabric::Lid)> {
    let node = st.fabric.node(sw);
    node.ports
        .iter()
        .filter_map(|p| st.fabric.live_peer(weft_fabric::PortRef::new(sw, p.num.0)))
        .filter(|peer| st.fabric.node(peer.node).is_host())
        .map(|peer| (peer, st.lids.get(peer.node, peer.port).unwrap()))
        .collect()
}

/// Per ordered pair of a host on `MLG01-01`/`02` and one on `MLG01-04` (`selene-cache-03`/`04`),
/// both ways: the links of its route (the host's cable, the switches', the last cable) and
/// whether it passes `through`.
fn management_routes(st: &FabricState, through: weft_fabric::NodeId) -> Vec<(u32, bool)> {
    let mgmt: Vec<_> = ["MLG01-01", "MLG01-02"]
        .iter()
        .flat_map(|n| hosts_on(st, selene_switch(st, n)))
        .collect();
    let cache = hosts_on(st, selene_switch(st, "MLG01-04"));
    assert_eq!((mgmt.len(), cache.len()), (9, 2));
    let route = |from: weft_fabric::PortRef,
                 (to, lid): (weft_fabric::PortRef, weft_fabric::Lid)| {
        let first = weft_fabric::forward::leave(&st.fabric, from).unwrap();
        let dest = weft_fabric::forward::Dest { lid, owner: to };
        let mut passes = first.to.node == through;
        let fate = weft_fabric::forward::walk(st, first.to.node, dest, |h| {
            passes |= h.to.node == through;
        });
        match fate {
            weft_fabric::forward::Fate::Arrives { hops } => (hops + 1, passes),
            other => panic!("{from:?} to LID {lid:?}: {other:?}"),
        }
    };
    let mut routes = Vec::new();
    for &m in &mgmt {
        for &c in &cache {
            routes.push(route(m.0, c));
            routes.push(route(c.0, m));
        }
    }
    routes
}

/// Selene compute's 36 management pairs (issue 42): no up*/down* path joins `MLG01-01`/`02`
/// (each hung off one spine of another plane than `MLG01-04`'s) to `MLG01-04`, so each route
/// turns once, at the sFtree subtree root `LG28-07`, and takes 10 links. An 8-link route turns
/// at `LG01-08` (`MLG01-02 → CSPINE1-80 → LG01-08 → CSPINE1-71 → CCORE1-001 → MSPINE3-01 →
/// MLG01-04`), but that turn closes a credit loop with the root's turns (the tables are
/// destination-based and every switch a source, so up*/down* routes join any channel up from
/// one turn to any channel down into the other): set on the tables, the verifier refuses them.
fn management_pairs_turn_at_the_root(st: &weft_fabric::ValidState) {
    let root = selene_switch(st, "LG28-07");
    let routes = management_routes(st, root);
    assert_eq!(routes, vec![(10, true); 36]);
    // The 8-link route for `MLG01-02`'s hosts to the cache nodes: `CSPINE1-80` down to
    // `LG01-08` (whose own route to `MLG01-04` climbs through `CSPINE1-71`).
    let spine = selene_switch(st, "CSPINE1-80");
    let leaf = selene_switch(st, "LG01-08");
    let port = st
        .fabric
        .node(spine)
        .ports
        .iter()
        .map(|p| p.num)
        .find(|&p| {
            st.fabric
                .live_peer(weft_fabric::PortRef::new(spine, p.0))
                .is_some_and(|peer| peer.node == leaf)
        })
        .unwrap();
    let mut turned = st.state().clone();
    for (_, lid) in hosts_on(st, selene_switch(st, "MLG01-04")) {
        let lft = &mut turned.switches.get_mut(&spine).unwrap().lft;
        lft.ports[usize::from(lid.0)] = port.0;
    }
    let turned = weft_fabric::ValidState::new(turned).unwrap();
    let routes = management_routes(&turned, leaf);
    let eight = routes.iter().filter(|&&r| r == (8, true)).count();
    assert_eq!(eight, 8, "{routes:?}");
    let r = weft_verifier::verify(&turned, &weft_verifier::Options::default());
    assert!(!r.is_proven(), "the turn at LG01-08 is proven");
}

/// The engine's note codes of a build.
fn note_codes(b: &Built) -> Vec<Code> {
    b.notes.iter().map(|n| n.code).collect()
}

/// Routed by `fat_tree` with sFtree from a subtree root: not turn by turn, not `updn`.
fn assert_sftree(b: &Built) {
    assert_eq!(b.engine, Engine::FatTree, "{}", b.why);
    assert_eq!(b.engine_used, Engine::FatTree, "{}", b.why);
    let codes = note_codes(b);
    assert!(
        codes.contains(&Code::SftreeRoot)
            && !codes.contains(&Code::SftreeAcyclic)
            && !codes.contains(&Code::FatTreeUpdn),
        "{:?}",
        b.notes
    );
}

/// The real Selene storage fabric (`tests/fixtures/real/ufm-selene-storage.ibnetdiscover`: 160
/// QM8700s in 4 pods, each core cabled to 8 spines of every pod in two planes, 4 host-less
/// leaves `SLG03-09`…`12`, missing cables, no ANs) imports with no edits and no warnings and
/// is routed by `fat_tree`'s sFtree (it fell back to `updn`: the completion closed credit
/// loops through the subtree root), its host-less leaves as leaves, proven over every switch
/// and end port, with eBB ≥ 0.4 over its 1 247 hosts (an intact tree of its shape with 24
/// hosts on every leaf has 0.40; `updn` from the top switch the fallback took, 0.10).
#[test]
fn the_real_selene_storage_dump_is_routed_by_fat_tree() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/real/ufm-selene-storage.ibnetdiscover"
    ))
    .unwrap();
    let program = import(&text);
    let b = build(&program);
    assert_sftree(&b);
    assert!(
        b.why.contains(
            "a 3-level fat-tree (64 leaves, 4 of them without hosts, 64 at level 2, 32 at level 3;"
        ) && !b.why.contains("set aside"),
        "{}",
        b.why
    );
    let st = &b.state;
    assert_eq!(
        (st.fabric.switch_count(), st.fabric.hca_count()),
        (160, 1247)
    );
    assert_proven(st);
    let q = weft_metrics::of_build(st);
    assert_eq!((q.end_ports, q.service_ports), (1247, 0));
    let fat = q.bisections.ebb.expect("an eBB");
    eprintln!(
        "Selene storage: fat_tree eBB {fat:.4} ({} bisections)",
        q.bisections.count
    );
    assert!(fat >= 0.4, "fat_tree eBB {fat}");
    // Leaves missing cables to some spines of their pod (`SLG01-09`, `SLG01-10`, `SLG01-13`,
    // `SLG02-07`) reach the leaves of their pod through a spine both are cabled to, not over a
    // core (2 426 ordered host pairs took 2 links more).
    let e = &q.hop_excess;
    assert_eq!(
        (
            e.updown_pairs,
            e.over_updown,
            e.without_updown,
            e.over_shortest
        ),
        (1_553_762, 0, 0, 0),
        "{e:?}"
    );
}

/// The program `weft import` writes for a [`Planes`] tree.
fn planes_program(p: &Planes) -> String {
    import(&planes_dump(p).text())
}

/// The smallest tree that broke sFtree: two pods of three leaves, four spines each in two
/// planes, three cores per plane each cabled to both spines of its plane in every pod. A core
/// reaching two spines of the root's pod joined a spine's route to the other over that core
/// with the routes coming down into the root and turning up there, into a credit loop through
/// each plane; the completion now enters the root through one gateway per plane.
#[test]
fn a_tree_whose_cores_reach_several_spines_of_a_pod_is_routed_by_sftree() {
    let p = Planes {
        pods: 2,
        leaves: 3,
        hosts: 1,
        hostless: 0,
        spines: 4,
        planes: 2,
        cores: 3,
        missing: 0,
        management: false,
        seed: 0,
    };
    let b = build(&planes_program(&p));
    assert_sftree(&b);
    let root = b.notes.iter().find(|n| n.code == Code::SftreeRoot).unwrap();
    assert_eq!(
        root.message,
        "sFtree subtree root is `MF0;L1-01:MQM8700/U1`, entered from above through `MF0;S1-01:MQM8700/U1`, `MF0;S1-02:MQM8700/U1` (one parent per group of its parents sharing switches above)"
    );
    assert_proven(&b.state);
}

/// Sources in other pods spread over every spine of the plane a destination's main path
/// takes, not one per plane: on an intact tree of 4 pods × 4 leaves of 8 hosts, 8 spines in
/// 2 planes, every leaf's 8 uplinks carry the same number of host destinations.
#[test]
fn every_uplink_of_a_leaf_carries_its_share() {
    let p = Planes {
        pods: 4,
        leaves: 4,
        hosts: 8,
        hostless: 0,
        spines: 8,
        planes: 2,
        cores: 4,
        missing: 0,
        management: false,
        seed: 0,
    };
    let b = build(&planes_program(&p));
    assert_sftree(&b);
    let q = weft_metrics::of_build(&b.state);
    let leaves: Vec<_> = q
        .balance
        .per_switch
        .iter()
        .filter(|u| u.level == Some(1))
        .collect();
    assert_eq!(leaves.len(), 16);
    for u in leaves {
        // 15 of the 120 host destinations outside the leaf on each of its 8 uplinks.
        assert!(
            u.ports.len() == 8 && u.ports.values().all(|&n| n == 15),
            "{}: {:?}",
            u.switch,
            u.ports
        );
    }
    assert!(
        q.bisections.ebb.is_some_and(|e| e >= 0.6),
        "eBB {:?}",
        q.bisections.ebb
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    /// Trees cabled like Selene's storage fabric, random in size, planes, host-less leaves,
    /// missing cables and a management island on a random spine: sFtree from a subtree
    /// root (with cables missing, sFtree turn by turn is allowed), proven; the host-less leaves are leaves (with no cable missing) and the island
    /// is set aside and reached through the spine it hangs off; every host pair that an
    /// up*/down* path joins is routed over a shortest one.
    #[test]
    fn trees_in_planes_are_routed_by_sftree_and_proven(
        pods in 2usize..=3,
        leaves in 2usize..=3,
        hosts in 1usize..=3,
        hostless in 0usize..=1,
        spines in 2usize..=6,
        planes in 1usize..=2,
        cores in 1usize..=3,
        missing in 0usize..=3,
        management in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let p = Planes { pods, leaves, hosts, hostless, spines, planes, cores, missing, management, seed };
        let b = build(&planes_program(&p));
        if missing == 0 {
            assert_sftree(&b);
        } else {
            // With cables missing, the subtree root's completion may close a loop: sFtree then
            // goes turn by turn (`weft::sftree_acyclic`, proven all the same), never to updn.
            // (The saved case of 3 pods, one plane of 2 spines, 3 cores, 2 cables missing.)
            prop_assert_eq!(b.engine_used, Engine::FatTree, "{}", b.why);
            let codes = note_codes(&b);
            prop_assert!(
                (codes.contains(&Code::SftreeRoot) || codes.contains(&Code::SftreeAcyclic))
                    && !codes.contains(&Code::FatTreeUpdn),
                "{:?}", b.notes
            );
        }
        let f = &b.state.fabric;
        let Shape::FatTree(t) = shape::detect(f) else {
            panic!("not a fat-tree: {:?}", shape::detect(f));
        };
        let aside: Vec<&str> = t.set_aside.iter().map(|s| f.node(s.switch).name()).collect();
        let mgmt = ["MF0;mgmt-1:MQM8700/U1", "MF0;mgmt-2:MQM8700/U1"];
        // A missing cable may leave a core or spine joining no two leaves: set aside too.
        if missing == 0 {
            prop_assert!(
                aside.iter().all(|n| mgmt.contains(n) || n.starts_with(&format!("MF0;L{pods}-"))),
                "{:?}", aside
            );
        }
        prop_assert_eq!(mgmt.iter().all(|m| aside.contains(m)), management);
        if missing == 0 {
            prop_assert_eq!(t.hostless, hostless);
        }
        if management {
            prop_assert!(note_codes(&b).contains(&Code::SftreeSetAside), "{:?}", b.notes);
        }
        assert_proven(&b.state);
        // Every host pair an up*/down* path joins is routed over a shortest one, cables
        // missing or not.
        let e = weft_metrics::of_build(&b.state).hop_excess;
        prop_assert_eq!((e.over_updown, e.max_over_updown), (0, 0), "{:?}\n{:?}", p, e.worst);
    }
}

/// Service nodes are routed: every switch and end port reaches each AN, and each AN reaches
/// every end port (the proof's scope `all`); and the switch LIDs of the management sub-tree
/// are reached from the hosts.
#[test]
fn service_nodes_and_set_aside_switches_are_reached() {
    let p = SuperPod {
        units: 4,
        group: 2,
        spines_per_group: 2,
        cores: 4,
        core_links: 2,
        dgx: 10,
        others: 2,
        management: 3,
        missing_uplinks: 2,
        ..SuperPod::ISSUE_27
    };
    let b = build(&import(&superpod(&p)));
    assert_eq!(b.engine, Engine::FatTree, "{}", b.why);
    assert!(b.why.contains("3 switches outside the levels"), "{}", b.why);
    let r = weft_verifier::verify(&b.state, &weft_verifier::Options::default());
    assert!(r.is_proven(), "{:?}", r.listed_failures().first());
    let hca = weft_verifier::verify(
        &b.state,
        &weft_verifier::Options {
            scope: weft_verifier::Scope::HcaToHca,
            ..Default::default()
        },
    );
    assert!(hca.is_proven());
}

/// Detection holds on real trees: ANs on random switches, leaves with varying host counts,
/// missing uplinks, parallel cables, and a management island cabled anywhere above the
/// leaves; the island is set aside, and `fat_tree` routes it all, proven.
fn random_tree(seed: u64) -> (String, usize) {
    let mut rng = Rng(seed);
    let h = 2 + rng.below(2);
    let m: Vec<u32> = (0..h)
        .map(|i| if i == 0 { 2 } else { 2 + rng.below(2) as u32 })
        .collect();
    let w: Vec<u32> = (0..h)
        .map(|i| if i == 0 { 1 } else { 1 + rng.below(3) as u32 })
        .collect();
    let src = weft_tests::xgft_source(h, &m, &w, "", "");
    let f = build(&src).state.fabric.clone();
    let mut d = Dump::of(&f);
    // Missing uplinks: cables from a switch to a parent dropped, each switch keeping a parent
    // and each parent two children, the cabling in one piece.
    let level = |d: &Dump, s: usize| {
        f.node(f.find(&d.switches[s].desc).unwrap())
            .spec
            .level
            .unwrap_or(0)
    };
    let neighbours = |d: &Dump, s: usize, l: u8| {
        let mut v: Vec<usize> = d
            .cables
            .iter()
            .filter_map(|&c| match c {
                (End::Switch(x, _), End::Switch(y, _)) if x == s => Some(y),
                (End::Switch(y, _), End::Switch(x, _)) if x == s => Some(y),
                _ => None,
            })
            .filter(|&y| level(d, y) == l)
            .collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    };
    for _ in 0..rng.below(4) {
        let k = rng.below(d.cables.len());
        let (End::Switch(a, _), End::Switch(b, _)) = d.cables[k] else {
            continue;
        };
        let (low, high) = if level(&d, a) < level(&d, b) {
            (a, b)
        } else {
            (b, a)
        };
        let (l, h) = (level(&d, low), level(&d, high));
        if neighbours(&d, low, l + 1) < 2 || neighbours(&d, high, h - 1) < 3 {
            continue;
        }
        let cable = d.cables.remove(k);
        if !d.connected() {
            d.cables.insert(k, cable);
        }
    }
    // Some hosts gone: leaves with varying host counts (never all of a leaf's).
    for c in (0..d.cas.len()).rev().step_by(3) {
        let leaf = d.cables.iter().find_map(|&(a, b)| match (a, b) {
            (End::Switch(s, _), End::Ca(x)) | (End::Ca(x), End::Switch(s, _)) if x == c => Some(s),
            _ => None,
        });
        if leaf.is_some_and(|s| d.cas_on(s) > 1) {
            d.remove_ca(c);
        }
    }
    // A management island: two switches, one on a random upper switch's free port, the
    // other on the first; each with an AN.
    let upper: Vec<usize> = (0..d.switches.len())
        .filter(|&s| {
            f.node(f.find(&d.switches[s].desc).unwrap())
                .spec
                .level
                .unwrap_or(0)
                >= 2
        })
        .collect();
    let anchor = upper[rng.below(upper.len())];
    let n = d.switches.len();
    for (i, name) in ["mgmt-a", "mgmt-b"].into_iter().enumerate() {
        d.switches.push(weft_tests::dump::Switch {
            guid: 0x7700_0000_0000_0000 + (i as u64) * 16,
            desc: name.to_owned(),
            ports: 8,
            devid: 0xd2f0,
        });
    }
    let free = d.switches[anchor].ports;
    d.switches[anchor].ports += 1;
    d.cables
        .push((End::Switch(anchor, free + 1), End::Switch(n, 1)));
    d.cables.push((End::Switch(n, 2), End::Switch(n + 1, 1)));
    let mut ans = 0;
    for s in 0..d.switches.len() {
        if s >= n || rng.below(2) == 0 {
            d.add_an(s);
            ans += 1;
        }
    }
    (d.text(), ans)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    #[test]
    fn random_real_trees_are_fat_trees_and_proven(seed in any::<u64>()) {
        let (text, ans) = random_tree(seed);
        let program = import(&text);
        let b = build(&program);
        let f = &b.state.fabric;
        let Shape::FatTree(t) = shape::detect(f) else {
            panic!("not a fat-tree: {:?}", shape::detect(f));
        };
        let aside: Vec<&str> = t.set_aside.iter().map(|s| f.node(s.switch).name()).collect();
        prop_assert_eq!(aside, vec!["mgmt-a", "mgmt-b"]);
        prop_assert_eq!(t.service.get(&Role::Aggregation).copied(), Some(ans));
        prop_assert_eq!(b.engine, Engine::FatTree);
        prop_assert_eq!(b.engine_used, Engine::FatTree);
        assert_proven(&b.state);
    }
}

/// The dump [`superpod`] writes is the dump [`superpod_dump`] describes: the issue's counts.
#[test]
fn the_superpod_generator_builds_the_issue_tree() {
    let p = SuperPod::ISSUE_27;
    let d = superpod_dump(&p);
    assert_eq!(p.switches(), 666);
    assert_eq!((p.leaves(), p.spines()), (200, 320));
    assert_eq!((d.switches.len(), d.cas.len()), (666, 4341));
    let ans = d.cas.iter().filter(|c| c.devid == 0xcf09).count();
    assert_eq!(ans, 666);
    // Every switch reports 41 ports, its AN on port 41.
    assert!(d.switches.iter().all(|s| s.ports == 41));
}

/// Recognition in a declared fabric: a node that looks like an AN but says `role = host` stays
/// a host (even where `host` also names an array of nodes), one with the AN's device ID is an
/// aggregation node, and a CA on the extra port of a 41-port switch too.
#[test]
fn declared_roles_win_over_recognition() {
    let src = "fabric f { topology {\n switch s { ports = 41 }\n switch t { ports = 41 }\n hca host[1..=2] { ports = 1 }\n hca \"Mellanox Technologies Aggregation Node\" { ports = 1, role = host }\n hca an2 { ports = 1, device = 0xcf09 }\n hca an3 { ports = 1 }\n link host[1].p[1] <-> s.p[1]\n link host[2].p[1] <-> t.p[1]\n link s.p[2] <-> t.p[2]\n link node(\"Mellanox Technologies Aggregation Node\").p[1] <-> s.p[3]\n link an2.p[1] <-> s.p[41]\n link an3.p[1] <-> t.p[41]\n} }\n";
    let c = weft_compiler::check("t.weft", src, &weft_compiler::NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    let e = c.elaborated.unwrap();
    let f = &e.fabric;
    let role = |n: &str| f.node(f.find(n).unwrap()).role();
    assert_eq!(
        [
            role("host1"),
            role("Mellanox Technologies Aggregation Node"),
            role("an2"),
            role("an3"),
        ],
        [Role::Host, Role::Host, Role::Aggregation, Role::Aggregation]
    );
    let evidence: Vec<String> = e.recognised.iter().map(|r| r.evidence.describe()).collect();
    assert_eq!(
        evidence,
        ["device ID 0xcf09", "port 41 of a 41-port switch"]
    );
}
