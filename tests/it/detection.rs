//! Fat-tree detection on fabrics that carry no levels, as an operator meets them: a tree
//! written out by `weft export` in ibnetdiscover format (what ibsim loads and ibnetdiscover
//! prints), read back, and compiled without a `routing` section.
//!
//! - The levels found from the cabling are the levels the stdlib template recorded, for random
//!   XGFTs of 2 to 4 levels, with and without faults (faults do not reshape the tree), but for
//!   the upper levels whose switches have one child each: they join no leaves and are set
//!   aside.
//! - `weft import` writes those levels and the default engine is `fat_tree`; the 5 832-node
//!   tree imported unedited has the template's eBB within 1 % (`WEFT_BIG_EXAMPLES=1`; the
//!   648-node tree always).
//! - Fabrics that are not fat-trees (torus, ring, mesh, leaves cabled together, hosts on an
//!   upper switch) are routed with `updn` by default, and the reason names the cable.
//! - A director chassis seen as its ASICs is a fat-tree whose internal cables (parallel ones)
//!   form an inner level.
//! - A switch without hosts cabled as a leaf is (to two or more of one leaf's parents, at least
//!   half of them) is a leaf, counted as one without hosts; a spare switch on one spine, or on
//!   a leaf, stays set aside.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use std::collections::BTreeMap;
use weft_compiler::diagnostic::SourceId;
use weft_compiler::routing::shape::{self, Shape};
use weft_compiler::{check, NoFiles};
use weft_fabric::Fabric;
use weft_formats::ibnetdiscover::{self, ParseOptions};
use weft_tests::{xgft_source, Rng};

fn fabric_of(src: &str) -> Fabric {
    let c = check("t.weft", src, &NoFiles);
    assert!(!c.has_errors(), "{:?}\n{src}", c.diagnostics);
    c.elaborated.unwrap().fabric
}

/// `fabric` as ibnetdiscover prints it, read back: no levels, down links gone.
fn through_ibnetdiscover(fabric: &Fabric) -> Fabric {
    let text = weft_compiler::export_ibnetdiscover(fabric).unwrap();
    let opts = ParseOptions {
        fabric_name: "t".into(),
        source_name: "t.ibnd".into(),
        ..Default::default()
    };
    ibnetdiscover::parse(&text, &opts).unwrap().fabric
}

fn recorded_levels(f: &Fabric) -> BTreeMap<String, u8> {
    f.nodes()
        .iter()
        .filter_map(|n| Some((n.name().to_owned(), n.spec.level?)))
        .collect()
}

fn found_levels(f: &Fabric) -> BTreeMap<String, u8> {
    let Shape::FatTree(t) = shape::detect(f) else {
        panic!("not detected as a fat-tree: {:?}", shape::detect(f));
    };
    assert!(!t.recorded);
    f.node_ids()
        .filter_map(|id| Some((f.node(id).name().to_owned(), t.levels[id.index()]?)))
        .collect()
}

fn xgft(h: usize, m: &[u32], w: &[u32], faults: &str) -> String {
    xgft_source(h, m, w, faults, "")
}

#[test]
fn random_trees_are_found_with_the_template_levels() {
    let mut rng = Rng(0x5eed_1e7e);
    for case in 0..60 {
        let h = 2 + rng.below(3);
        let m: Vec<u32> = (0..h).map(|_| 1 + rng.below(4) as u32).collect();
        let mut w: Vec<u32> = (0..h).map(|_| 1 + rng.below(3) as u32).collect();
        w[0] = 1;
        let template = fabric_of(&xgft(h, &m, &w, ""));
        // Level-ℓ switches of an XGFT have m[ℓ − 1] children: with one, they join no leaves;
        // the levels above the highest that joins (with two leaves or more) are set aside.
        let leaves: u32 = m[1..].iter().product();
        let top = (2..=h)
            .filter(|&l| m[l - 1] >= 2)
            .max()
            .filter(|_| leaves >= 2)
            .unwrap_or(h) as u8;
        let mut expected = recorded_levels(&template);
        expected.retain(|_, l| *l <= top);
        // Through ibnetdiscover (the template's dump): the same levels.
        assert_eq!(
            found_levels(&through_ibnetdiscover(&template)),
            expected,
            "case {case}: XGFT({h}; {m:?}; {w:?}) through ibnetdiscover"
        );
        // Faults (down links, switches down) leave the cabling as it was: same levels.
        let mut faults = String::new();
        let switch_links: Vec<_> = template
            .links()
            .iter()
            .filter(|l| template.node(l.a.node).is_switch() && template.node(l.b.node).is_switch())
            .collect();
        for _ in 0..rng.below(4) {
            if let Some(l) = switch_links.get(rng.below(switch_links.len())) {
                faults += &format!(
                    "        link {}.p[{}] down\n",
                    template.node(l.a.node).name(),
                    l.a.port.0
                );
            }
        }
        // (Faults that cut the fabric in two are refused before any of this; skip those.)
        let c = check("t.weft", &xgft(h, &m, &w, &faults), &NoFiles);
        if c.has_errors() {
            assert!(c.diagnostics.iter().all(|d| d.code == "weft::fabric_split"));
            continue;
        }
        let faulty = c.elaborated.unwrap().fabric;
        let found: BTreeMap<String, u8> = {
            let l = shape::levels_from_hosts(&faulty).unwrap();
            faulty
                .node_ids()
                .filter_map(|id| Some((faulty.node(id).name().to_owned(), l[id.index()]?)))
                .collect()
        };
        assert_eq!(
            found, expected,
            "case {case}: XGFT({h}; {m:?}; {w:?}) with\n{faults}"
        );
    }
}

/// `weft import` of the template's dump, compiled as is: the default engine and its reason,
/// and the eBB of the routed result.
fn imported(template_src: &str) -> (String, String, f64) {
    let template = fabric_of(template_src);
    let text = weft_compiler::export_ibnetdiscover(&template).unwrap();
    let (program, warnings) =
        weft_compiler::import_ibnetdiscover(&text, "t.ibnd", SourceId(0), None, "imported")
            .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(
        program.contains("level = 1") && !program.contains("routing"),
        "{}",
        &program[..program.len().min(2000)]
    );
    let c = check("imported.weft", &program, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    let built = weft_compiler::build::build(c.elaborated.as_ref().unwrap()).unwrap();
    let r = weft_verifier::verify(&built.state, &weft_verifier::Options::default());
    assert!(r.is_proven(), "{:?}", r.verdict);
    let q = weft_metrics::of_build(&built.state);
    (
        built.engine.name().to_owned(),
        built.why,
        q.bisections.ebb.expect("an eBB"),
    )
}

fn template_ebb(src: &str) -> f64 {
    let c = check("t.weft", src, &NoFiles);
    let built = weft_compiler::build::build(c.elaborated.as_ref().unwrap()).unwrap();
    weft_metrics::of_build(&built.state)
        .bisections
        .ebb
        .expect("an eBB")
}

fn example(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn assert_imported_like_template(name: &str) {
    let src = example(name);
    let (engine, why, ebb) = imported(&src);
    assert_eq!(engine, "fat_tree", "{why}");
    assert!(
        why.starts_with("the default for a ") && why.contains("-level fat-tree"),
        "{why}"
    );
    let want = template_ebb(&src);
    assert!(
        (ebb - want).abs() <= 0.01 * want,
        "{name}: imported eBB {ebb:.4}, template {want:.4}"
    );
}

#[test]
fn imported_648_node_tree_routes_like_the_template() {
    assert_imported_like_template("cluster-648.weft");
}

#[test]
fn imported_5832_node_tree_routes_like_the_template() {
    if !weft_tests::big_examples() {
        return; // 5 832 nodes: release mode, in `.ci/run`
    }
    assert_imported_like_template("cluster-5832.weft");
}

#[test]
fn other_fabrics_default_to_updn_with_the_reason() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "use std::hardware::{sb7800, connectx5}\nuse std::topology::torus\nfabric t { topology = torus(dims: [3, 3], hosts_per_switch: 1, switch: sb7800, hca: connectx5) }\n",
            "updn",
            "are both at level 1 and cabled to each other",
        ),
        (
            "use std::hardware::{sb7800, connectx5}\nfabric t { topology {\n switch a { ports = 36 }\n switch b { ports = 36 }\n switch c { ports = 36 }\n hca h1 { ports = 1 }\n hca h2 { ports = 1 }\n link a.p[1] <-> b.p[1]\n link b.p[2] <-> c.p[1]\n link c.p[2] <-> a.p[2]\n link h1.p[1] <-> a.p[3]\n link h2.p[1] <-> b.p[3]\n } }\n",
            "updn",
            "are both at level",
        ),
        (
            "fabric t { topology {\n switch a { ports = 8, level = 1 }\n switch b { ports = 8, level = 2 }\n switch c { ports = 8, level = 1 }\n hca h1 { ports = 1 }\n hca h2 { ports = 1 }\n hca h3 { ports = 1 }\n link a.p[1] <-> b.p[1]\n link b.p[2] <-> c.p[1]\n link h1.p[1] <-> a.p[3]\n link h2.p[1] <-> c.p[3]\n link h3.p[1] <-> b.p[3]\n } }\n",
            "updn",
            "which is at level 2, not a leaf",
        ),
        (
            "fabric t { topology {\n switch a { ports = 8 }\n switch b { ports = 8 }\n switch s { ports = 8 }\n hca h1 { ports = 1 }\n hca h2 { ports = 1 }\n link a.p[1] <-> s.p[1]\n link b.p[1] <-> s.p[2]\n link h1.p[1] <-> a.p[3]\n link h2.p[1] <-> b.p[3]\n } }\n",
            "fat_tree",
            "a 2-level fat-tree (2 leaves, 1 at level 2; levels found from the hosts)",
        ),
    ];
    for (src, engine, why) in cases {
        let c = check("t.weft", src, &NoFiles);
        assert!(!c.has_errors(), "{:?}", c.diagnostics);
        let choice = weft_compiler::build::choose_engine(c.elaborated.as_ref().unwrap());
        assert_eq!(choice.engine.name(), *engine, "{src}: {}", choice.why);
        assert!(choice.why.contains(why), "{src}: {}", choice.why);
    }
}

#[test]
fn uneven_levels_are_counted_not_refused() {
    // A two-level tree where one leaf lacks a cable to the second spine: OpenSM's ftree refuses
    // it (leaves with different up-port counts); here it is a fat-tree with two uneven
    // switches (the short leaf and the short spine), routed by default and proven.
    let src = "fabric t { topology {\n switch l1 { ports = 8 }\n switch l2 { ports = 8 }\n switch l3 { ports = 8 }\n switch s1 { ports = 8 }\n switch s2 { ports = 8 }\n hca h1 { ports = 1 }\n hca h2 { ports = 1 }\n hca h3 { ports = 1 }\n link l1.p[1] <-> s1.p[1]\n link l1.p[2] <-> s2.p[1]\n link l2.p[1] <-> s1.p[2]\n link l2.p[2] <-> s2.p[2]\n link l3.p[1] <-> s1.p[3]\n link h1.p[1] <-> l1.p[8]\n link h2.p[1] <-> l2.p[8]\n link h3.p[1] <-> l3.p[8]\n } }\n";
    let f = fabric_of(src);
    let Shape::FatTree(t) = shape::detect(&f) else {
        panic!("{:?}", shape::detect(&f));
    };
    assert_eq!(
        (t.height, t.leaves, t.uneven),
        (2, 3, 2),
        "{}",
        t.describe(&f)
    );
    assert_eq!(
        t.describe(&f),
        "a 2-level fat-tree (3 leaves, 2 at level 2; levels found from the hosts; 2 switches have fewer or more cables than their level-mates)"
    );
    let c = check("t.weft", src, &NoFiles);
    let built = weft_compiler::build::build(c.elaborated.as_ref().unwrap()).unwrap();
    assert_eq!(built.engine, weft_compiler::routing::Engine::FatTree);
    assert!(weft_verifier::verify(&built.state, &weft_verifier::Options::default()).is_proven());
}

#[test]
fn host_less_leaves_are_leaves_and_spare_switches_set_aside() {
    // Three spines; leaves l1, l2 with a host each on all three; e1 (no hosts) on s1 and s2,
    // a leaf slot with one uplink missing; e2 on s1 only and e3 on l1 only: spares.
    let src = "fabric t { topology {\n switch s[1..=3] { ports = 8 }\n switch l[1..=2] { ports = 8 }\n switch e[1..=3] { ports = 8 }\n hca h[1..=2] { ports = 1 }\n for i in 1..=2, j in 1..=3 {\n link l[i].p[j] <-> s[j].p[i]\n }\n link e[1].p[1] <-> s[1].p[3]\n link e[1].p[2] <-> s[2].p[3]\n link e[2].p[1] <-> s[1].p[4]\n link e[3].p[1] <-> l[1].p[4]\n link h[1].p[1] <-> l[1].p[8]\n link h[2].p[1] <-> l[2].p[8]\n } }\n";
    let f = fabric_of(src);
    let Shape::FatTree(t) = shape::detect(&f) else {
        panic!("{:?}", shape::detect(&f));
    };
    let level = |n: &str| t.levels[f.find(n).unwrap().index()];
    assert_eq!(
        [
            level("e1"),
            level("e2"),
            level("e3"),
            level("l1"),
            level("s1")
        ],
        [Some(1), None, None, Some(1), Some(2)]
    );
    assert_eq!(
        t.describe(&f),
        "a 2-level fat-tree (3 leaves, 1 of them without hosts, 3 at level 2; levels found from the hosts; 2 switches have fewer or more cables than their level-mates); set aside: 2 switches outside the levels (`e2`, `e3`)"
    );
    let c = check("t.weft", src, &NoFiles);
    let built = weft_compiler::build::build(c.elaborated.as_ref().unwrap()).unwrap();
    assert_eq!(built.engine_used, weft_compiler::routing::Engine::FatTree);
    assert!(weft_verifier::verify(&built.state, &weft_verifier::Options::default()).is_proven());
}

#[test]
fn a_director_chassis_forms_inner_levels() {
    // A director seen as its ASICs: four line ASICs (front-panel ports 1–4 to the edge
    // leaves, internal ports 31–36 three parallel cables to each of two fabric ASICs), and
    // four edge leaves with hosts, each cabled twice to two line ASICs. The internal cables
    // form the tree's third level.
    let mut src = String::from("fabric t { topology {\n");
    for i in 1..=4 {
        src += &format!(" switch edge{i} {{ ports = 36 }}\n switch line{i} {{ ports = 36 }}\n");
        src += &format!(" hca h{i}a {{ ports = 1 }}\n hca h{i}b {{ ports = 1 }}\n");
    }
    for i in 1..=4 {
        src += &format!(" link h{i}a.p[1] <-> edge{i}.p[1]\n link h{i}b.p[1] <-> edge{i}.p[2]\n");
        let next = i % 4 + 1;
        src += &format!(
            " link edge{i}.p[33] <-> line{i}.p[1]\n link edge{i}.p[34] <-> line{i}.p[2]\n"
        );
        src += &format!(
            " link edge{i}.p[35] <-> line{next}.p[3]\n link edge{i}.p[36] <-> line{next}.p[4]\n"
        );
    }
    src += " switch fabric1 { ports = 36 }\n switch fabric2 { ports = 36 }\n";
    for i in 1..=4 {
        for (f, base) in [(1, 30), (2, 33)] {
            for k in 1..=3 {
                src += &format!(
                    " link line{i}.p[{}] <-> fabric{f}.p[{}]\n",
                    base + k,
                    3 * (i - 1) + k
                );
            }
        }
    }
    src += "} }\n";
    let f = fabric_of(&src);
    let Shape::FatTree(t) = shape::detect(&f) else {
        panic!("{:?}", shape::detect(&f));
    };
    assert_eq!(
        t.describe(&f),
        "a 3-level fat-tree (4 leaves, 4 at level 2, 2 at level 3; levels found from the hosts)"
    );
    let c = check("t.weft", &src, &NoFiles);
    let built = weft_compiler::build::build(c.elaborated.as_ref().unwrap()).unwrap();
    assert_eq!(built.engine, weft_compiler::routing::Engine::FatTree);
    assert!(weft_verifier::verify(&built.state, &weft_verifier::Options::default()).is_proven());
}

#[test]
fn a_chain_too_deep_for_a_tree_is_not_one() {
    // 300 switches in a line, hosts at one end: levels would run past 255 (they saturate);
    // detection stops at the level bound and says so, and `updn` routes it by default.
    let mut src = String::from("fabric t { topology {\n");
    for i in 0..300 {
        src += &format!(" switch s{i} {{ ports = 4 }}\n");
    }
    src += " hca h { ports = 1 }\n link h.p[1] <-> s0.p[3]\n";
    for i in 0..299 {
        src += &format!(" link s{i}.p[1] <-> s{}.p[2]\n", i + 1);
    }
    src += "} }\n";
    let f = fabric_of(&src);
    let Shape::Other { reason, .. } = shape::detect(&f) else {
        panic!("a 300-switch chain detected as a fat-tree");
    };
    assert!(reason.contains("more than 8 levels"), "{reason}");
    let c = check("t.weft", &src, &NoFiles);
    let choice = weft_compiler::build::choose_engine(c.elaborated.as_ref().unwrap());
    assert_eq!(choice.engine.name(), "updn", "{}", choice.why);
}
