//! `fat_tree` on degraded fat-trees of 2 to 4 levels: with links and switches down at every
//! level, the tables weft compiles are complete for all pairs and deadlock-free on one VL —
//! checked by the verifier (which shares no code with the router) — or the fabric is split and
//! refused naming the cut-off nodes. Never a loop, never an unset entry written. Where the
//! tables are fat-tree tables, every host pair that an up*/down* path joins is routed over a
//! shortest one (hop excess 0).
//!
//! The fixed cases are the ones that once broke: XGFT(3;2,2,2;1,2,2) with one core link down
//! (a spine climbed to a core whose only live link led straight back), XGFT(3;4,4,4;1,4,4)
//! with two upper links down. Random trees and faults come from a seeded generator.

#![expect(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "test helpers fail by panicking and say on the terminal what they skipped or measured"
)]

use weft_compiler::routing::Engine;
use weft_compiler::{check, NoFiles};
use weft_fabric::{LinkState, NodeKind};
use weft_tests::{pgft_source, xgft_source, Rng};
use weft_verifier::{verify, Options};

fn program(h: usize, m: &[u32], w: &[u32], faults: &str) -> String {
    xgft_source(h, m, w, faults, "    routing { engine = fat_tree }\n")
}

/// The fault lines for `links` random switch-to-switch links and `switches` random switches
/// (of any level: a leaf's hosts go down with it) of the tree `healthy` (a program without
/// faults).
fn random_faults(healthy: &str, links: usize, switches: usize, rng: &mut Rng) -> String {
    let c = check("t.weft", healthy, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    let f = c.elaborated.unwrap().fabric;
    let inter: Vec<(String, u8)> = f
        .links()
        .iter()
        .filter(|l| {
            f.node(l.a.node).spec.kind == NodeKind::Switch
                && f.node(l.b.node).spec.kind == NodeKind::Switch
        })
        .map(|l| (f.node(l.a.node).name().to_owned(), l.a.port.0))
        .collect();
    let switch: Vec<String> = f
        .nodes()
        .iter()
        .filter(|n| n.spec.kind == NodeKind::Switch)
        .map(|n| n.name().to_owned())
        .collect();
    let mut out = String::new();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..links {
        let (n, p) = &inter[rng.below(inter.len())];
        if seen.insert((n.clone(), *p)) {
            out += &format!("        link {n}.p[{p}] down\n");
        }
    }
    let mut down = std::collections::BTreeSet::new();
    for _ in 0..switches {
        if !switch.is_empty() {
            down.insert(switch[rng.below(switch.len())].clone());
        }
    }
    for s in down {
        out += &format!("        switch {s} down\n");
    }
    out
}

/// What a proven build had to say: routes proven and the codes of the engine's notes.
struct Proven {
    routes: u64,
    notes: Vec<&'static str>,
}

/// Compiles and verifies; `Ok` when proven, `Err(why)` when the engine refused.
fn route_and_prove(src: &str) -> Result<Proven, String> {
    let c = check("t.weft", src, &NoFiles);
    if c.has_errors() {
        // A split fabric is refused before routing, naming the cut-off nodes.
        let codes: Vec<&str> = c
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.code.as_str())
            .collect();
        assert_eq!(codes, ["weft::fabric_split"], "{:?}", c.diagnostics);
        return Err(c.diagnostics[0].message.clone());
    }
    let e = c.elaborated.unwrap();
    let built = match weft_compiler::build::build(&e) {
        Ok(b) => b,
        Err(d) => {
            let codes: Vec<&str> = d.iter().map(|d| d.code.as_str()).collect();
            assert_eq!(codes, ["weft::unroutable"], "{d:?}\n{src}");
            return Err(d[0].message.clone());
        }
    };
    let r = verify(&built.state, &Options::default());
    assert!(
        r.is_proven(),
        "fat_tree wrote tables that are not proven:\n{src}\nverdict {:?}, {} failed routes, {} credit loops, first failures {:?}",
        r.verdict,
        r.failed_routes,
        r.credit_loops_total,
        r.failures.first().map(|p| (p.reason, p.witnesses.first().map(|w| w.route.clone())))
    );
    assert_eq!(r.stats.vls, 1);
    let notes: Vec<&'static str> = built.notes.iter().map(|n| n.code.as_str()).collect();
    // Fat-tree tables (not the Up*/Down* last resort) route every pair that an up*/down* path
    // joins over a shortest one.
    if !notes.contains(&"weft::fat_tree_updn") {
        let e = hop_excess(&built.state);
        assert_eq!(
            (e.over_updown, e.max_over_updown),
            (0, 0),
            "fat_tree routes longer than the shortest up*/down* path:\n{src}\nworst {:?}",
            e.worst
        );
    }
    Ok(Proven {
        routes: r.stats.routes,
        notes,
    })
}

/// The hop excess of a state's routes (one bisection, one shift: only the hops are wanted).
fn hop_excess(state: &weft_fabric::FabricState) -> weft_metrics::HopExcess {
    let opts = weft_metrics::QualityOptions {
        bisections: Some(1),
        all_shifts_up_to: 0,
        shift_samples: 1,
        machines: false,
        ..weft_metrics::QualityOptions::default()
    };
    weft_metrics::quality(state, &opts).hop_excess
}

#[test]
fn one_dead_core_link_on_the_smallest_three_level_tree() {
    let src = program(3, &[2, 2, 2], &[1, 2, 2], "        link core1.p[1] down\n");
    assert!(route_and_prove(&src).is_ok());
}

#[test]
fn two_dead_upper_links_on_xgft_3_4_4_4() {
    // Every pair of level-2↔3 links among the first cores' ports.
    let c = check("t.weft", &program(3, &[4, 4, 4], &[1, 4, 4], ""), &NoFiles);
    let f = c.elaborated.unwrap().fabric;
    let cores: Vec<String> = f
        .nodes()
        .iter()
        .filter(|n| n.spec.level == Some(3))
        .map(|n| n.name().to_owned())
        .take(3)
        .collect();
    let mut cases = 0;
    for a in &cores {
        for b in &cores {
            for (pa, pb) in [(1, 2), (1, 3), (2, 4)] {
                let faults =
                    format!("        link {a}.p[{pa}] down\n        link {b}.p[{pb}] down\n");
                if a == b && pa == pb {
                    continue;
                }
                route_and_prove(&program(3, &[4, 4, 4], &[1, 4, 4], &faults)).unwrap();
                cases += 1;
            }
        }
    }
    assert!(cases >= 9);
}

/// How many random trees a property test draws: `WEFT_TREE_CASES`, 60 by default.
fn tree_cases() -> usize {
    std::env::var("WEFT_TREE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60)
}

/// Random XGFTs and PGFTs of 2, 3 and 4 levels with 1 to 2h+1 switch-to-switch cables down
/// (any level) and up to two switches of any level down: every build that is not split is
/// proven — fat-tree tables (sFtree's or turn by turn), or rarely fat_tree's Up*/Down* last
/// resort, said in a note — and a split one is refused naming the cut-off nodes. Never a
/// credit loop, never an unroutable pair.
#[test]
fn random_degraded_trees_are_proven_unless_split() {
    // (m, w, p): XGFTs where every p is 1, PGFTs (parallel cables) otherwise.
    let shapes: [(&[u32], &[u32], &[u32]); 13] = [
        (&[4, 4], &[1, 2], &[1, 1]),
        (&[3, 6], &[1, 3], &[1, 1]),
        (&[2, 2, 2], &[1, 2, 2], &[1, 1, 1]),
        (&[3, 3, 3], &[1, 3, 3], &[1, 1, 1]),
        (&[2, 4, 2], &[1, 2, 3], &[1, 1, 1]),
        (&[4, 4, 4], &[1, 4, 4], &[1, 1, 1]),
        (&[2, 3, 4], &[1, 2, 2], &[1, 1, 1]),
        (&[2, 2, 2, 2], &[1, 2, 2, 2], &[1, 1, 1, 1]),
        (&[2, 2, 2, 2], &[1, 1, 2, 2], &[1, 1, 1, 1]),
        (&[3, 2, 2, 2], &[1, 2, 3, 2], &[1, 1, 1, 1]),
        (&[4, 4], &[1, 2], &[1, 2]),
        (&[2, 2, 2], &[1, 2, 2], &[1, 2, 2]),
        (&[3, 3, 2, 2], &[1, 2, 2, 2], &[1, 2, 1, 2]),
    ];
    let cases = tree_cases();
    let mut rng = Rng(0x7eef_2026);
    let (mut proven, mut split, mut parallel) = (0, 0, 0);
    let mut notes = std::collections::BTreeMap::<&str, usize>::new();
    for k in 0..cases {
        let (m, w, p) = shapes[k % shapes.len()];
        let tree =
            |faults: &str| pgft_source(m, w, p, faults, "    routing { engine = fat_tree }\n");
        let links = 1 + rng.below(2 * m.len() + 1);
        let switches = rng.below(3);
        let faults = random_faults(&tree(""), links, switches, &mut rng);
        let src = tree(&faults);
        match route_and_prove(&src) {
            Ok(r) => {
                proven += 1;
                parallel += usize::from(p.iter().any(|&x| x > 1));
                for n in r.notes {
                    *notes.entry(n).or_default() += 1;
                }
            }
            Err(why) => {
                assert!(
                    why.starts_with("the fabric is split"),
                    "refused:\n{why}\n{src}"
                );
                split += 1;
            }
        }
    }
    eprintln!(
        "{cases} random degraded trees: {proven} proven ({parallel} with parallel cables), {split} split; notes {notes:?}"
    );
    assert!(proven * 3 >= cases, "{proven} proven, {split} split");
    assert!(parallel > 0, "the proven trees must include PGFTs");
    assert!(
        split > 0,
        "the faults must be heavy enough to split some trees"
    );
}

/// Without an engine named, a degraded fat-tree is routed by fat_tree (the default for a
/// fat-tree, faults or not) and proven, unless split.
#[test]
fn random_degraded_trees_by_default_are_all_proven() {
    let shapes: [(usize, &[u32], &[u32]); 3] = [
        (3, &[3, 3, 3], &[1, 3, 3]),
        (3, &[2, 4, 2], &[1, 2, 3]),
        (4, &[2, 2, 2, 2], &[1, 2, 2, 2]),
    ];
    let cases = tree_cases();
    let mut rng = Rng(0x0def_a017);
    let (mut proven, mut split) = (0, 0);
    for k in 0..cases {
        let (h, m, w) = shapes[k % shapes.len()];
        let healthy = xgft_source(h, m, w, "", "");
        let faults = random_faults(&healthy, 1 + rng.below(4), rng.below(2), &mut rng);
        let src = xgft_source(h, m, w, &faults, "");
        let c = check("t.weft", &src, &NoFiles);
        if c.has_errors() {
            split += 1;
            continue;
        }
        let e = c.elaborated.unwrap();
        let built = weft_compiler::build::build(&e)
            .unwrap_or_else(|d| panic!("refused by default:\n{src}\n{d:?}"));
        let r = verify(&built.state, &Options::default());
        assert!(r.is_proven(), "not proven ({}):\n{src}", built.why);
        assert_eq!(built.engine, Engine::FatTree, "{}", built.why);
        proven += 1;
    }
    eprintln!("{cases} degraded trees by default: {proven} fat_tree, {split} split");
    assert!(proven > split, "{proven} proven, {split} split");
}

/// A level-3 switch whose up links are both down: no sFtree root completes the tables without
/// a credit loop (the cut-off core needs down→up turns below it, and the root's are
/// elsewhere), so fat_tree completes them turn by turn, and says so.
#[test]
fn a_core_without_up_links_is_completed_turn_by_turn() {
    let faults = "        link core2.p[3] down\n        link core2.p[4] down\n";
    let p = route_and_prove(&program(4, &[2, 2, 2, 2], &[1, 2, 2, 2], faults)).unwrap();
    assert_eq!(p.notes, ["weft::sftree_acyclic"]);
    assert_eq!(p.routes, 2256);
}

/// Faults found by the property test for which even the turn-by-turn completion gets stuck:
/// the tables are Up*/Down* from one top switch, proven, and the note says why.
#[test]
fn a_tree_beyond_fat_tree_routing_gets_up_down_tables_and_a_note() {
    let faults = "        link spine2.p[6] down\n        link leaf8.p[5] down\n        link spine8.p[6] down\n        link leaf5.p[4] down\n        link spine4.p[5] down\n        link spine1.p[4] down\n        link spine9.p[4] down\n        switch core8 down\n";
    let p = route_and_prove(&program(3, &[3, 3, 3], &[1, 3, 3], faults)).unwrap();
    assert_eq!(p.notes, ["weft::fat_tree_updn"]);
}

/// The 5 832-node tree with 20 random failed links (release builds only: `WEFT_BIG_EXAMPLES=1`).
#[test]
fn cluster_5832_with_random_failed_links() {
    if !weft_tests::big_examples() {
        eprintln!("cluster_5832_with_random_failed_links: runs with WEFT_BIG_EXAMPLES=1");
        return;
    }
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cluster-5832.weft"),
    )
    .unwrap();
    let c = check("c.weft", &text, &NoFiles);
    let f = c.elaborated.unwrap().fabric;
    let inter: Vec<(String, u8)> = f
        .links()
        .iter()
        .filter(|l| {
            l.state == LinkState::Up
                && f.node(l.a.node).spec.kind == NodeKind::Switch
                && f.node(l.b.node).spec.kind == NodeKind::Switch
        })
        .map(|l| (f.node(l.a.node).name().to_owned(), l.a.port.0))
        .collect();
    for (seed, n) in [(1u64, 20usize), (2, 20), (3, 80)] {
        // `n` distinct links, drawn until there are that many.
        let mut rng = Rng(seed);
        let mut picked = std::collections::BTreeSet::new();
        let mut faults = String::new();
        while picked.len() < n {
            let k = rng.below(inter.len());
            if picked.insert(k) {
                let (name, p) = &inter[k];
                faults += &format!("        link {name}.p[{p}] down\n");
            }
        }
        let src = match text.find("faults {") {
            Some(i) => format!("{}faults {{\n{faults}{}", &text[..i], &text[i + 8..]),
            None => {
                let close = text.rfind('}').unwrap();
                format!("{}    faults {{\n{faults}    }}\n}}\n", &text[..close])
            }
        };
        let down = check("c.weft", &src, &NoFiles)
            .elaborated
            .unwrap()
            .fabric
            .links()
            .iter()
            .filter(|l| l.state != LinkState::Up)
            .count();
        assert_eq!(down, n, "seed {seed}: {down} links down");
        route_and_prove(&src).unwrap_or_else(|e| panic!("seed {seed}: refused: {e}"));
        eprintln!("5 832-node tree, seed {seed}: {down} links down, proven");
    }
}
