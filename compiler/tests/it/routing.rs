//! Routing results checked by walking the LFTs, independently of the engines: every switch
//! reaches every LID (so every HCA and switch reaches every HCA and switch), without loops.

#![expect(clippy::panic, reason = "test helpers fail by panicking")]

use weft_compiler::build::build;
use weft_compiler::{check, NoFiles};
use weft_fabric::forward::{Dest, Fate, Routes};
use weft_fabric::{FabricState, Lid, NodeId};

fn compile(src: &str) -> FabricState {
    let c = check("t.weft", src, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    let e = c.elaborated.unwrap_or_else(|| panic!("no fabric"));
    match build(&e) {
        Ok(b) => b.state.into_inner(),
        Err(d) => panic!("build failed: {d:?}"),
    }
}

fn example(name: &str) -> FabricState {
    let path = format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    compile(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
}

/// The (switch, LID, why) pairs whose route does not arrive: from every live switch toward
/// every destination whose owner is live (a live switch, or an end-node port on a live
/// cable), on the model's forwarding ([`Routes`]: memoised per destination). The engines'
/// own walks are not used.
fn walk(st: &FabricState) -> Vec<(String, u16, String)> {
    let f = &st.fabric;
    let switches: Vec<NodeId> = st
        .switches
        .keys()
        .copied()
        .filter(|&s| !f.node(s).down)
        .collect();
    let mut routes = Routes::new(st);
    let mut failures = Vec::new();
    for d in Dest::all(st) {
        let owner = f.node(d.owner.node);
        if owner.down || (!owner.is_switch() && f.live_peer(d.owner).is_none()) {
            continue;
        }
        for &start in &switches {
            let why = match routes.fate(start, d) {
                Fate::Arrives { .. } => continue,
                Fate::Stops { at, why } => format!("{why:?} at {}", f.node(at).name()),
                Fate::Loops => "forwarding loop".to_owned(),
            };
            failures.push((f.node(start).name().to_owned(), d.lid.0, why));
        }
    }
    failures
}

fn assert_all_connected(st: &FabricState) {
    let failures = walk(st);
    assert!(
        failures.is_empty(),
        "{} unreachable (switch, LID) pairs, first: {:?}",
        failures.len(),
        failures.iter().take(5).collect::<Vec<_>>()
    );
}

#[test]
fn fat_tree_examples_are_fully_connected() {
    for name in [
        "cluster-648.weft",
        "cluster-864-oversubscribed.weft",
        "lab-16.weft",
        "cluster-5832.weft",
    ] {
        let st = example(name);
        assert_all_connected(&st);
    }
}

#[test]
fn fat_tree_648_spreads_one_leaf_over_all_spines() {
    let st = example("cluster-648.weft");
    let f = &st.fabric;
    let leaf = f.find("leaf1").unwrap_or_else(|| panic!());
    let lft = &st.switches[&leaf].lft;
    // Every spine is the root of exactly one of leaf1's 18 hosts: spine j's LFT sends host j
    // down to leaf1 and it is the only spine leaf2 uses for that host.
    let leaf2 = f.find("leaf2").unwrap_or_else(|| panic!());
    let mut up_ports = std::collections::BTreeSet::new();
    for h in 1..=18 {
        let host = f.find(&format!("cn{h:03}")).unwrap_or_else(|| panic!());
        let lid = st
            .lids
            .get(host, weft_fabric::PortNum(1))
            .unwrap_or_else(|| panic!());
        assert_eq!(
            lft.get(lid).map(|p| p.0),
            Some(h as u8),
            "leaf1 delivers cn{h:03} on its port"
        );
        up_ports.insert(st.switches[&leaf2].lft.get(lid).map(|p| p.0));
    }
    assert_eq!(
        up_ports.len(),
        18,
        "leaf2 reaches leaf1's hosts through 18 different spines"
    );
}

#[test]
fn degraded_fat_tree_stays_connected() {
    let src = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, switch: sb7800, hca: connectx5)\n    faults {\n        link leaf3.p[20] down\n        link leaf7.p[19] down\n        link leaf11.p[36] down\n        link leaf20.p[25] down\n        link leaf36.p[30] down\n    }\n}\n";
    assert_all_connected(&compile(src));
    let spine = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 3, switch: sb7800, hca: connectx5, pods: 6)\n    faults { switch core7 down\n link leaf4.p[20] down }\n}\n";
    assert_all_connected(&compile(spine));
}

#[test]
fn updn_and_minhop_route_the_torus() {
    let base = "use std::hardware::{sb7800, connectx5}\nuse std::topology::torus\nfabric t {\n    topology = torus(dims: [4, 4], switch: sb7800, hca: connectx5, hosts_per_switch: 2)\n    routing { engine = ENGINE }\n}\n";
    for engine in ["updn", "minhop"] {
        assert_all_connected(&compile(&base.replace("ENGINE", engine)));
    }
}

#[test]
fn fat_tree_refuses_the_torus() {
    let src = "use std::hardware::{sb7800, connectx5}\nuse std::topology::torus\nfabric t {\n    topology = torus(dims: [4, 4], switch: sb7800, hca: connectx5)\n    routing { engine = fat_tree }\n}\n";
    let c = check("t.weft", src, &NoFiles);
    let e = c.elaborated.unwrap_or_else(|| panic!());
    let err = build(&e).err().unwrap_or_default();
    let msg = format!("{err:?}");
    assert!(
        msg.contains("weft::engine_refused") && msg.contains("both have hosts"),
        "{msg}"
    );
}

#[test]
fn lmc_gives_disjoint_roots() {
    let src = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, switch: sb7800, hca: connectx5)\n    routing { engine = fat_tree, lmc = 2 }\n}\n";
    let st = compile(src);
    assert_all_connected(&st);
    let f = &st.fabric;
    let host = f.find("cn001").unwrap_or_else(|| panic!());
    let base = st
        .lids
        .get(host, weft_fabric::PortNum(1))
        .unwrap_or_else(|| panic!());
    assert_eq!(base.0 % 4, 0, "LMC LIDs are aligned");
    // From leaf2, the four LIDs of cn001 leave on four different up ports (four roots).
    let leaf2 = f.find("leaf2").unwrap_or_else(|| panic!());
    let ports: std::collections::BTreeSet<_> = (0..4)
        .map(|k| st.switches[&leaf2].lft.get(Lid(base.0 + k)).map(|p| p.0))
        .collect();
    assert_eq!(ports.len(), 4, "{ports:?}");
}

#[test]
fn lids_are_stable_across_faults() {
    let a = compile("use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, switch: sb7800, hca: connectx5)\n}\n");
    let b = compile("use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, switch: sb7800, hca: connectx5)\n    faults { link leaf1.p[1] down\n switch spine3 down }\n}\n");
    assert_eq!(a.lids, b.lids);
}

#[test]
fn fat_tree_648_with_a_spine_down() {
    let st = compile("use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, switch: sb7800, hca: connectx5)\n    faults { switch spine9 down }\n}\n");
    assert_all_connected(&st);
}

#[test]
fn pinned_lids_are_kept() {
    let st = compile("use std::hardware::{sb7800, connectx5}\nfabric f {\n    topology {\n        switch s : sb7800 { lid = 100 }\n        hca a : connectx5 { lid = 7 }\n        hca b : connectx5\n        link a.p[1] <-> s.p[1]\n        link b.p[1] <-> s.p[2]\n    }\n}\n");
    let f = &st.fabric;
    let lid = |n: &str, p: u8| {
        st.lids
            .get(
                f.find(n).unwrap_or_else(|| panic!()),
                weft_fabric::PortNum(p),
            )
            .map(|l| l.0)
    };
    assert_eq!(
        (lid("s", 0), lid("a", 1), lid("b", 1)),
        (Some(100), Some(7), Some(1))
    );
    assert_all_connected(&st);
}

mod random_faults {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

        /// Five random switch-to-switch links down in the 648-node tree: `fat_tree` still
        /// routes every switch to every LID.
        #[test]
        fn five_random_link_faults(picks in proptest::collection::btree_set((1u32..=36, 19u32..=36), 5)) {
            let faults: String = picks.iter().map(|(l, p)| format!("link leaf{l}.p[{p}] down\n")).collect();
            let src = format!("use std::hardware::{{sb7800, connectx5}}\nuse std::topology::fat_tree\nfabric f {{\n    topology = fat_tree(levels: 2, switch: sb7800, hca: connectx5)\n    faults {{\n{faults}}}\n}}\n");
            let st = compile(&src);
            let failures = walk(&st);
            prop_assert!(failures.is_empty(), "{} failures, first {:?}", failures.len(), failures.first());
        }
    }
}

/// `roots` steers only Up*/Down*; with another engine it would be ignored, so it is refused.
#[test]
fn roots_with_a_tree_engine_are_refused() {
    let src = |engine: &str| {
        format!(
            "use std::hardware::{{sb7800, connectx5}}\nuse std::topology::fat_tree\nfabric f {{\n    topology = fat_tree(levels: 2, radix: 8, switch: sb7800, hca: connectx5)\n    routing {{ engine = {engine}, roots = [spine1] }}\n}}\n"
        )
    };
    for engine in ["fat_tree", "minhop"] {
        let c = check("t.weft", &src(engine), &NoFiles);
        assert!(!c.has_errors(), "{:?}", c.diagnostics);
        let e = c.elaborated.unwrap();
        let errs = build(&e)
            .err()
            .unwrap_or_else(|| panic!("{engine} with roots built"));
        assert_eq!(errs[0].code, "weft::no_effect");
        assert_eq!(
            errs[0].message,
            format!("`roots` has no effect with the `{engine}` engine")
        );
    }
    let c = check("t.weft", &src("updn"), &NoFiles);
    assert!(build(&c.elaborated.unwrap()).is_ok());
}

/// Two spines between leaves `a` (the root of `updn`) and `b`: `a` has two cables to each
/// spine, but `s8` has one cable down to `b` where `s7` has two. `a` sends `b`'s hosts
/// through the spines in proportion to what each carries on toward `b` (2 : 1), not half
/// and half (issue 42, the loginoff dump).
#[test]
fn updn_deals_over_unequal_bundles_in_proportion() {
    let mut src = String::from("fabric f {\n    topology {\n");
    for (i, s) in ["a", "b", "s7", "s8"].iter().enumerate() {
        src += &format!(
            "        switch \"{s}\" {{ ports = 36, guid = 0x{:x} }}\n",
            0x100 + i
        );
    }
    for h in 0..13 {
        src += &format!(
            "        hca \"h{h}\" {{ ports = 1, guid = 0x{:x} }}\n",
            0x200 + h
        );
    }
    let mut link = |a: &str, pa: u32, b: &str, pb: u32| {
        src += &format!("        link node(\"{a}\").p[{pa}] <-> node(\"{b}\").p[{pb}]\n");
    };
    link("a", 1, "s7", 1);
    link("a", 2, "s7", 2);
    link("a", 3, "s8", 1);
    link("a", 4, "s8", 2);
    link("s7", 3, "b", 1);
    link("s7", 4, "b", 2);
    link("s8", 3, "b", 3);
    link("a", 10, "h12", 1);
    for h in 0..12 {
        link("b", 10 + h, &format!("h{h}"), 1);
    }
    src += "    }\n    routing { engine = updn, roots = [a] }\n}\n";
    let st = compile(&src);
    assert_all_connected(&st);
    let f = &st.fabric;
    let a = f.find("a").unwrap_or_else(|| panic!());
    let mut via_s8 = 0;
    for h in 0..12 {
        let host = f.find(&format!("h{h}")).unwrap_or_else(|| panic!());
        let lid = st
            .lids
            .get(host, weft_fabric::PortNum(1))
            .unwrap_or_else(|| panic!());
        let port = st.switches[&a].lft.get(lid).map(|p| p.0);
        assert!(matches!(port, Some(1..=4)), "a sends h{h} up: {port:?}");
        via_s8 += usize::from(matches!(port, Some(3 | 4)));
    }
    assert_eq!(
        via_s8, 4,
        "a sends 4 of b's 12 hosts through s8 (1 cable to b of 3)"
    );
}

/// `updn` routes hosts in fabric order, whatever their LIDs: `b`'s hosts, whose LIDs are
/// shuffled, take `a`'s four cables up in turn, so four consecutive hosts (a shift pattern's
/// neighbours) never share a cable (issue 42, the loginoff dump).
#[test]
fn updn_deals_hosts_in_fabric_order() {
    let lids = [2, 6, 3, 7, 4, 8, 5, 9];
    let mut src = String::from("fabric f {\n    topology {\n");
    for (i, s) in ["a", "b", "s"].iter().enumerate() {
        src += &format!(
            "        switch \"{s}\" {{ ports = 36, guid = 0x{:x}, lid = {} }}\n",
            0x100 + i,
            20 + i
        );
    }
    for (h, lid) in lids.iter().enumerate() {
        src += &format!(
            "        hca \"h{h}\" {{ ports = 1, guid = 0x{:x}, lid = {lid} }}\n",
            0x200 + h
        );
    }
    for p in 1..=4 {
        src += &format!("        link node(\"a\").p[{p}] <-> node(\"s\").p[{p}]\n");
    }
    src += "        link node(\"s\").p[5] <-> node(\"b\").p[1]\n";
    for h in 0..lids.len() {
        src += &format!(
            "        link node(\"b\").p[{}] <-> node(\"h{h}\").p[1]\n",
            10 + h
        );
    }
    src += "    }\n    routing { engine = updn, roots = [s] }\n}\n";
    let st = compile(&src);
    assert_all_connected(&st);
    let f = &st.fabric;
    let a = f.find("a").unwrap_or_else(|| panic!());
    let ports: Vec<Option<u8>> = (0..lids.len())
        .map(|h| {
            let host = f.find(&format!("h{h}")).unwrap_or_else(|| panic!());
            let lid = st
                .lids
                .get(host, weft_fabric::PortNum(1))
                .unwrap_or_else(|| panic!());
            st.switches[&a].lft.get(lid).map(|p| p.0)
        })
        .collect();
    let up = [1, 2, 3, 4, 1, 2, 3, 4].map(Some);
    assert_eq!(ports, up, "a's ports toward h0..h7");
}

/// A fabric of switches and one-port HCAs (`guid`s in order) with `links` (`a`, port, `b`,
/// port), routed by `updn` from `roots`.
fn updn_fabric(
    switches: &[&str],
    hcas: usize,
    links: &[(&str, u32, &str, u32)],
    roots: &str,
) -> String {
    let mut src = String::from("fabric f {\n    topology {\n");
    for (i, s) in switches.iter().enumerate() {
        src += &format!(
            "        switch \"{s}\" {{ ports = 36, guid = 0x{:x} }}\n",
            0x100 + i
        );
    }
    for h in 0..hcas {
        src += &format!(
            "        hca \"h{h}\" {{ ports = 1, guid = 0x{:x} }}\n",
            0x200 + h
        );
    }
    for (a, pa, b, pb) in links {
        src += &format!("        link node(\"{a}\").p[{pa}] <-> node(\"{b}\").p[{pb}]\n");
    }
    src + &format!("    }}\n    routing {{ engine = updn, roots = [{roots}] }}\n}}\n")
}

/// The port of switch `sw` toward host `h{h}`.
fn port_toward(st: &FabricState, sw: &str, h: usize) -> Option<u8> {
    let f = &st.fabric;
    let sw = f.find(sw).unwrap_or_else(|| panic!("no {sw}"));
    let host = f
        .find(&format!("h{h}"))
        .unwrap_or_else(|| panic!("no h{h}"));
    let lid = st
        .lids
        .get(host, weft_fabric::PortNum(1))
        .unwrap_or_else(|| panic!("h{h} has no LID"));
    st.switches[&sw].lft.get(lid).map(|p| p.0)
}

/// Leaves `a` and `c` send each of `b`'s hosts through the same spine, the one at the far end
/// of the cable `b` dealt it to, although `a`'s host `h0` comes first in fabric order and so
/// loads `c`'s ports, not `a`'s (issue 42): a destination entering `b` by one spine's cables
/// whoever sends to it is what random bisections reward.
#[test]
fn updn_sends_a_destination_through_one_spine_from_every_leaf() {
    let mut links = vec![
        ("a", 1, "s7", 1),
        ("a", 2, "s8", 1),
        ("c", 1, "s7", 2),
        ("c", 2, "s8", 2),
        ("b", 1, "s7", 3),
        ("b", 2, "s8", 3),
        ("a", 10, "h0", 1),
    ];
    for h in 1..=8 {
        links.push((
            "b",
            9 + h,
            ["h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"][h as usize - 1],
            1,
        ));
    }
    let src = updn_fabric(&["s7", "s8", "a", "b", "c"], 9, &links, "b");
    let st = compile(&src);
    assert_all_connected(&st);
    let mut via = Vec::new();
    for h in 1..=8 {
        let (pa, pc) = (port_toward(&st, "a", h), port_toward(&st, "c", h));
        via.push((pa, pc));
    }
    assert!(
        via.iter().all(|(pa, pc)| pa == pc),
        "a and c go up by the same spine (port 1: s7, 2: s8) toward h1..h8: {via:?}"
    );
    let s7 = via.iter().filter(|(pa, _)| *pa == Some(1)).count();
    assert_eq!(
        s7, 4,
        "b's hosts are dealt half and half over its two cables: {via:?}"
    );
}

/// Leaf `a` has two cables to `s7` but one to `s8`, while `b` has two to each, so `b` deals
/// its hosts half and half over the spines; `a` keeps to that while it stays within one host
/// of sending a third of its traffic through `s8`'s one cable, and otherwise deals over its
/// bundles in proportion (issue 42, the loginoff dump's leaf with 3 cables beside 4).
#[test]
fn updn_narrow_bundle_takes_its_share_not_half() {
    let mut links = vec![
        ("a", 1, "s7", 1),
        ("a", 2, "s7", 2),
        ("a", 3, "s8", 1),
        ("b", 1, "s7", 3),
        ("b", 2, "s7", 4),
        ("b", 3, "s8", 3),
        ("b", 4, "s8", 4),
        ("a", 10, "h12", 1),
    ];
    let names: Vec<String> = (0..12).map(|h| format!("h{h}")).collect();
    for (h, name) in names.iter().enumerate() {
        links.push(("b", 10 + h as u32, name.as_str(), 1));
    }
    let src = updn_fabric(&["a", "b", "s7", "s8"], 13, &links, "a");
    let st = compile(&src);
    assert_all_connected(&st);
    let ports: Vec<Option<u8>> = (0..12).map(|h| port_toward(&st, "a", h)).collect();
    assert!(
        ports.iter().all(|p| matches!(p, Some(1..=3))),
        "a sends b's hosts up: {ports:?}"
    );
    let via_s8 = ports.iter().filter(|p| **p == Some(3)).count();
    assert_eq!(
        via_s8, 5,
        "a's one cable to s8 carries 4 of 12 (a third) plus one: {ports:?}"
    );
}
