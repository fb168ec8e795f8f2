//! `layered` on topologies one VL cannot route minimally: every build is proven by the
//! verifier per VL with its path SLs (the verifier shares no code with the router), within the
//! VL budget; a budget too small is refused naming a route and the loop it closes.
//!
//! Fabrics: the 4×4 torus (budget 4; one layer, where OpenSM's `lash` takes two) and the 5×5
//! one (two layers), a ring of 6 switches (budget 2), the 3×2 mesh of the
//! thesis's Paper I degraded to a ring by losing its middle link, a fat-tree whose faults break
//! up*/down*, and random irregular fabrics from a seeded generator.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use weft_compiler::{check, NoFiles};
use weft_tests::{irregular_source, pgft_source, Rng};
use weft_verifier::{verify, Options};

/// Builds and verifies `src`; the layers used and the routes proven.
fn layered(src: &str) -> (u8, u64) {
    let c = check("t.weft", src, &NoFiles);
    assert!(!c.has_errors(), "{:?}\n{src}", c.diagnostics);
    let e = c.elaborated.unwrap();
    let built = weft_compiler::build::build(&e).unwrap_or_else(|d| panic!("{d:?}\n{src}"));
    let r = verify(&built.state, &Options::default());
    assert!(
        r.is_proven(),
        "not proven: {:?}, {} credit loops, {} failed routes\n{src}",
        r.verdict,
        r.credit_loops_total,
        r.failed_routes
    );
    let note = built
        .notes
        .iter()
        .find(|n| n.code.as_str() == "weft::layers")
        .expect("a note with the layers");
    let layers: u8 = note
        .message
        .split_whitespace()
        .nth(2)
        .and_then(|w| w.parse().ok())
        .expect("the layer count in the note");
    assert_eq!(layers, r.stats.vls, "{}", note.message);
    (layers, r.stats.routes)
}

fn program(topology: &str, budget: u8, faults: &str) -> String {
    format!(
        "use std::hardware::{{sb7800, connectx5}}\nuse std::topology::{{torus, mesh, ring}}\nfabric t {{\n    topology = {topology}\n    faults {{\n{faults}    }}\n    vls {{ budget = {budget} }}\n    routing {{ engine = layered }}\n}}\n"
    )
}

/// One layer: each next hop is chosen among the shortest paths so that no loop closes, where
/// OpenSM's `lash` needs two on the same torus on ibsim (its log: "Lanes in layer 0: 192",
/// "Lanes in layer 1: 48"). The 5×5 torus's rings of five need two (see the refusal below).
#[test]
fn tori_on_one_and_two_layers() {
    let (layers, routes) = layered(&program(
        "torus(dims: [4, 4], switch: sb7800, hca: connectx5, hosts_per_switch: 2)",
        4,
        "",
    ));
    assert_eq!(layers, 1);
    assert_eq!(routes, 48 * 47);
    let (layers, _) = layered(&program(
        "torus(dims: [5, 5], switch: sb7800, hca: connectx5)",
        4,
        "",
    ));
    assert_eq!(layers, 2);
}

#[test]
fn a_ring_of_six_within_two_layers() {
    let (layers, _) = layered(&program(
        "ring(n: 6, switch: sb7800, hca: connectx5)",
        2,
        "",
    ));
    assert_eq!(layers, 2);
}

/// Paper I's scenario: a 3×2 mesh, deadlock-free on one VL, loses the link between its middle
/// switches and becomes a ring of six, which no shortest-path routing serves on one VL; two
/// layers do.
#[test]
fn the_3x2_mesh_degraded_to_a_ring() {
    let mesh = "mesh(dims: [3, 2], switch: sb7800, hca: connectx5)";
    let (healthy, _) = layered(&program(mesh, 2, ""));
    let (degraded, _) = layered(&program(mesh, 2, "        link sw2.p[4] down\n"));
    assert_eq!((healthy, degraded), (1, 2));
}

/// A three-level tree whose faults defeat fat-tree routing on one VL (fat_tree falls back to
/// Up*/Down* there): layered keeps shortest paths on more VLs.
#[test]
fn a_fat_tree_with_broken_up_down_structure() {
    let src = pgft_source(
        &[3, 3, 3],
        &[1, 3, 3],
        &[1, 1, 1],
        BROKEN_TREE_FAULTS,
        "    routing { engine = layered }\n",
    );
    let (layers, _) = layered(&src);
    assert!(layers <= 8, "{layers} layers");
}

/// Faults that break a 3-level PGFT's up*/down* structure (fat_tree's last resort).
const BROKEN_TREE_FAULTS: &str = "        link spine2.p[6] down\n        link leaf8.p[5] down\n        link spine8.p[6] down\n        link leaf5.p[4] down\n        link spine4.p[5] down\n        link spine1.p[4] down\n        link spine9.p[4] down\n        switch core8 down\n";

/// Random connected irregular fabrics: a random spanning tree plus random extra cables, one
/// to three hosts per switch.
#[test]
fn random_irregular_fabrics_are_proven() {
    let mut rng = Rng(0x1a7e_2ed0);
    let mut most = 0;
    for case in 0..20 {
        let n = 5 + rng.below(12);
        let src = irregular_source(&mut rng, n, &format!("f{case}"));
        let (layers, _) = layered(&src);
        most = most.max(layers);
    }
    assert!(most >= 2, "the cases must include fabrics that need layers");
}

/// One layer for the 5×5 torus is refused, naming a route, the budget and the loop the route
/// closes: five channels round one of the torus's rings, back to the first.
#[test]
fn a_budget_too_small_is_refused() {
    let src = program(
        "torus(dims: [5, 5], switch: sb7800, hca: connectx5, hosts_per_switch: 2)",
        1,
        "",
    );
    let c = check("t.weft", &src, &NoFiles);
    let e = c.elaborated.unwrap();
    let Err(d) = weft_compiler::build::build(&e) else {
        panic!("a budget of 1 was accepted for the torus");
    };
    assert_eq!(d[0].code.as_str(), "weft::layers_exceeded");
    let m = &d[0].message;
    assert!(m.contains("more than 1 layer"), "{m}");
    let (_, cycle) = m
        .split_once("on VL 0 the loop is ")
        .expect("the loop named");
    let hops: Vec<&str> = cycle.split(" → ").collect();
    assert_eq!(hops.len(), 6, "{cycle}");
    assert_eq!(hops.first(), hops.last(), "{cycle}");
}

/// z3 proves `layered`'s layer counts minimal for its paths: on the 4×4 and 5×5 tori, the
/// ring, the degraded mesh, the broken fat-tree and the 20 random irregular fabrics, the
/// fewest layers the same routes fit in (z3 places them, and proves every smaller count
/// impossible) equal the layers weft used.
#[test]
fn z3_proves_the_layer_counts_minimal() {
    let z3 = weft_verifier::z3::Z3 { timeout_ms: 60_000 };
    let mut cases: Vec<String> = vec![
        program("torus(dims: [4, 4], switch: sb7800, hca: connectx5)", 4, ""),
        program("torus(dims: [5, 5], switch: sb7800, hca: connectx5)", 4, ""),
        program("ring(n: 6, switch: sb7800, hca: connectx5)", 2, ""),
        program(
            "mesh(dims: [3, 2], switch: sb7800, hca: connectx5)",
            2,
            "        link sw2.p[4] down\n",
        ),
    ];
    cases.push(pgft_source(
        &[3, 3, 3],
        &[1, 3, 3],
        &[1, 1, 1],
        BROKEN_TREE_FAULTS,
        "    routing { engine = layered }\n",
    ));
    let mut rng = Rng(0x1a7e_2ed0);
    for case in 0..20 {
        let n = 5 + rng.below(12);
        cases.push(irregular_source(&mut rng, n, &format!("f{case}")));
    }
    let mut counts = Vec::new();
    for src in &cases {
        let c = check("t.weft", src, &NoFiles);
        assert!(!c.has_errors(), "{:?}", c.diagnostics);
        let built = weft_compiler::build::build(&c.elaborated.unwrap()).unwrap();
        let layers = built.lanes.layers;
        let bound = z3.min_layers(&built.state, layers);
        assert_eq!(
            bound,
            weft_verifier::z3::LayerBound::Minimum(layers),
            "weft used {layers} layer(s)\n{src}"
        );
        counts.push(layers);
    }
    assert!(
        counts.iter().filter(|&&l| l >= 2).count() >= 5,
        "{counts:?}"
    );
}

/// z3 finds the fewest layers and a build can take its placement: the 5×5 torus's routes
/// spread over three layers (every other layer-1 route moved to a third layer: each layer
/// holds a subset of an acyclic one) are placed back in two by z3, and all three builds are
/// proven with their VL counts.
#[test]
fn z3_places_routes_in_fewer_layers() {
    use weft_verifier::z3::{LayerBound, Z3};
    let src = program("torus(dims: [5, 5], switch: sb7800, hca: connectx5)", 4, "");
    let c = check("t.weft", &src, &NoFiles);
    let e = c.elaborated.unwrap();
    let built = weft_compiler::build::build(&e).unwrap();
    assert_eq!(built.lanes.layers, 2);
    let proven_on = |b: &weft_compiler::build::Built| {
        let r = verify(&b.state, &Options::default());
        assert!(r.is_proven(), "{:?}", r.verdict);
        r.stats.vls
    };
    assert_eq!(proven_on(&built), 2);
    let mut spread = std::collections::BTreeMap::new();
    let mut flip = false;
    for (&sw, row) in &built.layers.as_ref().unwrap().by_source {
        for (lid, &l) in row.iter().enumerate() {
            let l = match l {
                1 => {
                    flip = !flip;
                    if flip {
                        2
                    } else {
                        1
                    }
                }
                l => l,
            };
            if l > 0 {
                spread.insert((sw, weft_fabric::Lid(lid as u16)), l);
            }
        }
    }
    let three = weft_compiler::build::relayer(&e, &built, &spread, 3).unwrap();
    assert_eq!(three.lanes.layers, 3);
    assert_eq!(proven_on(&three), 3);
    let z3 = Z3 { timeout_ms: 60_000 };
    let (bound, placement) = z3.place_layers(&three.state, 3);
    assert_eq!(bound, LayerBound::Minimum(2));
    let two = weft_compiler::build::relayer(&e, &three, &placement.unwrap(), 2).unwrap();
    assert_eq!(two.lanes.layers, 2);
    assert_eq!(proven_on(&two), 2);
}
