//! Rail-optimised AI fabrics and director chassis from the stdlib, compiled and routed as
//! `weft build` does (the driver) and proven by the verifier:
//!
//! - a DGX SuperPOD scalable unit (`superpod(units: 1)`, 8 rails, QM9700) routed by `fat_tree`;
//! - the same SU with a SHARP Aggregation Node on every switch, proven under Up*/Down* from
//!   one spine (recognising the aggregation nodes, so that `fat_tree` routes it, is not this
//!   test's business);
//! - a three-level tree whose inner two levels are a CS8500 director's ASICs, routed by
//!   `fat_tree`.

use weft_compiler::routing::Engine;
use weft_verifier::{verify, Options};

/// The driver's build of `src`, proven with the properties the build promises; returns the
/// engine that wrote the tables.
fn proven(src: &str) -> Engine {
    let built = weft_tests::built(weft_driver::compile_text(
        "t.weft",
        src,
        &weft_compiler::NoFiles,
        &weft_driver::quietly,
    ));
    let properties = weft_driver::properties(&built);
    let r = verify(
        &built.state,
        &Options {
            properties,
            ..Options::default()
        },
    );
    assert!(r.is_proven(), "{:?}\n{src}", r.verdict);
    built.engine_used
}

#[test]
fn a_superpod_su_is_a_fat_tree_and_proven() {
    let src = "use std::hardware::{qm9700, connectx7}\nuse std::topology::superpod\n\
               fabric su {\n    topology = superpod(units: 1, switch: qm9700, hca: connectx7)\n}\n";
    // No routing section: the default engine is fat_tree for the template's tree.
    assert_eq!(proven(src), Engine::FatTree);
    let asked = src.replace("\n}\n", "\n    routing { engine = fat_tree }\n}\n");
    assert_eq!(proven(&asked), Engine::FatTree);
}

#[test]
fn a_superpod_su_with_aggregation_nodes_is_proven() {
    let src = "use std::hardware::{qm9700, connectx7}\nuse std::topology::superpod\n\
               fabric su {\n    topology = superpod(units: 1, nodes: 8, switch: qm9700, \
               hca: connectx7, aggregation: true)\n    routing { engine = updn, roots = [spine1] }\n}\n";
    assert_eq!(proven(src), Engine::Updn);
}

#[test]
fn a_director_as_the_inner_levels_of_a_three_level_tree() {
    // 40 edge switches of 20 hosts; each half of them (a pod) cabled to 20 of the director's
    // 40 leaf ASICs, every edge switch once to each ASIC of its pod.
    let src = "use std::hardware::{qm8700, connectx6}\nuse std::topology::cs8500\n\
        fabric d {\n    topology {\n        cs8500(level: 2)\n\
        for e in 0..40 {\n            switch (format(\"edge{}\", e + 1)) : qm8700 { level = 1 }\n\
        for h in 0..20 {\n                hca (format(\"cn{:03}\", e * 20 + h + 1)) : connectx6\n\
        link node(format(\"cn{:03}\", e * 20 + h + 1)).p[1] <-> node(format(\"edge{}\", e + 1)).p[h + 1]\n            }\n\
        for t in 0..20 {\n                let a = e / 20 * 20 + t\n\
        link node(format(\"edge{}\", e + 1)).p[21 + t] <-> node(format(\"cs8500/L{:02}/U{}\", a / 2 + 1, a % 2 + 1)).p[e % 20 + 1]\n            }\n        }\n    }\n\
        routing { engine = fat_tree }\n}\n";
    assert_eq!(proven(src), Engine::FatTree);
}
