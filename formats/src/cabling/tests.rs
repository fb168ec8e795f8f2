//! Tests of cabling against a design: missing, extra, miswired and narrow cables; nodes matched
//! by GUID, name or position; and, on random fabrics, k swapped cables found as exactly those.

use super::*;
use proptest::prelude::*;
use weft_fabric::{FabricBuilder, NodeKind, NodeSpec};

/// The differences, matching nodes as `weft diff` does by default.
fn diffs(design: &Fabric, found: &Fabric) -> Vec<Difference> {
    compare(design, found, &Options::fabric(MatchMode::Auto))
        .unwrap()
        .differences
}

/// A cable: (node, port) at each end, and a recorded width.
type Cable = ((usize, u8), (usize, u8), Option<Width>);

/// A fabric of the nodes `(name, guid, kind, ports)` added in `order`, and `cables`.
fn build(nodes: &[(&str, u64, NodeKind, u8)], order: &[usize], cables: &[Cable]) -> Fabric {
    let mut b = FabricBuilder::new("t");
    let mut ids = vec![NodeId(0); nodes.len()];
    for &i in order {
        let (name, guid, kind, ports) = nodes[i];
        ids[i] = b
            .add_node(NodeSpec::new(name, kind, Guid(guid), ports))
            .unwrap();
    }
    for &((na, pa), (nb, pb), width) in cables {
        let l = b
            .add_link(PortRef::new(ids[na], pa), PortRef::new(ids[nb], pb))
            .unwrap();
        b.set_link_rate(l, None, width);
    }
    b.finish()
}

const NODES: [(&str, u64, NodeKind, u8); 5] = [
    ("sw", 0x10, NodeKind::Switch, 8),
    ("h0", 0x20, NodeKind::Hca, 1),
    ("h1", 0x21, NodeKind::Hca, 1),
    ("h2", 0x22, NodeKind::Hca, 1),
    ("h3", 0x23, NodeKind::Hca, 1),
];
const X4: Option<Width> = Some(Width::X4);

fn design_cables() -> Vec<Cable> {
    (1..=4).map(|h| ((0, h as u8), (h, 1), X4)).collect()
}

fn design() -> Fabric {
    build(&NODES, &[0, 1, 2, 3, 4], &design_cables())
}

fn end(node: &str, guid: u64, port: u8) -> End {
    End {
        node: node.to_owned(),
        guid: Guid(guid),
        port: PortNum(port),
    }
}

#[test]
fn identical_fabrics_differ_in_nothing() {
    assert_eq!(diffs(&design(), &design()), vec![]);
}

#[test]
fn two_cables_swapped_are_two_miswired_cables_naming_both_ends() {
    let mut cables = design_cables();
    cables[0].0 = (0, 2);
    cables[1].0 = (0, 1);
    let found = build(&NODES, &[0, 1, 2, 3, 4], &cables);
    let d = diffs(&design(), &found);
    assert_eq!(
        d,
        vec![
            Difference::Miswired {
                a: end("h0", 0x20, 1),
                b: end("sw", 0x10, 1),
                a_joined: Some(end("sw", 0x10, 2)),
                b_joined: Some(end("h1", 0x21, 1)),
            },
            Difference::Miswired {
                a: end("h1", 0x21, 1),
                b: end("sw", 0x10, 2),
                a_joined: Some(end("sw", 0x10, 1)),
                b_joined: Some(end("h0", 0x20, 1)),
            },
        ]
    );
    assert_eq!(
        d[0].to_string(),
        "cable h0/1 – sw/1 is miswired: h0/1 is joined to sw/2, sw/1 to h1/1"
    );
}

#[test]
fn a_cable_removed_is_one_missing_cable() {
    let mut cables = design_cables();
    cables.remove(2);
    let found = build(&NODES, &[0, 1, 2, 3, 4], &cables);
    assert_eq!(
        diffs(&design(), &found),
        vec![Difference::Missing {
            a: end("h2", 0x22, 1),
            b: end("sw", 0x10, 3),
        }]
    );
}

#[test]
fn a_cable_at_1x_is_one_width_difference() {
    let mut cables = design_cables();
    cables[3].2 = Some(Width::X1);
    let found = build(&NODES, &[0, 1, 2, 3, 4], &cables);
    let d = diffs(&design(), &found);
    assert_eq!(
        d,
        vec![Difference::Width {
            a: end("h3", 0x23, 1),
            b: end("sw", 0x10, 4),
            expected: Width::X4,
            found: Width::X1,
        }]
    );
    assert_eq!(
        d[0].to_string(),
        "cable h3/1 – sw/4 is 1x wide, the design says 4x"
    );
    // Unrecorded in the design: its ports' widths (4x by default) are expected.
    let unrecorded = build(&NODES, &[0, 1, 2, 3, 4], &[((0, 4), (4, 1), None)]);
    let narrow = build(
        &NODES,
        &[0, 1, 2, 3, 4],
        &[((0, 4), (4, 1), Some(Width::X1))],
    );
    assert_eq!(diffs(&unrecorded, &narrow).len(), 1);
    // Unrecorded where found: not compared.
    cables[3].2 = None;
    let found = build(&NODES, &[0, 1, 2, 3, 4], &cables);
    assert_eq!(diffs(&design(), &found), vec![]);
}

#[test]
fn a_cable_moved_to_a_free_port_is_miswired_and_an_extra_cable_is_extra() {
    let mut cables = design_cables();
    cables[0].0 = (0, 5); // h0 moved from sw/1 to sw/5
    cables.push(((0, 6), (0, 7), None)); // a loop between two free ports
    let found = build(&NODES, &[0, 1, 2, 3, 4], &cables);
    assert_eq!(
        diffs(&design(), &found),
        vec![
            Difference::Miswired {
                a: end("h0", 0x20, 1),
                b: end("sw", 0x10, 1),
                a_joined: Some(end("sw", 0x10, 5)),
                b_joined: None,
            },
            Difference::Extra {
                a: end("sw", 0x10, 6),
                b: end("sw", 0x10, 7),
            },
        ]
    );
}

#[test]
fn nodes_match_by_guid_else_by_name_else_by_position() {
    let mut nodes = NODES;
    nodes[1].0 = "renamed"; // same GUID: matched
    nodes[2].1 = 0x99; // same name: matched
    nodes[3] = ("other", 0x98, NodeKind::Hca, 1); // neither: at h2's place
    let found = build(&nodes, &[4, 3, 2, 1, 0], &design_cables());
    let c = compare(&design(), &found, &Options::fabric(MatchMode::Auto)).unwrap();
    assert_eq!(c.differences, vec![]);
    assert_eq!(
        c.by_position,
        vec![Placed {
            design: "h2".to_owned(),
            found: NodeName {
                node: "other".to_owned(),
                guid: Guid(0x98)
            }
        }]
    );
    // By names only: the renamed node and `other` are not matched.
    let c = compare(&design(), &found, &Options::fabric(MatchMode::Names)).unwrap();
    assert_eq!(
        c.differences
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [
            "node h0 (0x0000000000000020) is missing",
            "node h2 (0x0000000000000022) is missing",
            "node other (0x0000000000000098) is not in the design",
            "node renamed (0x0000000000000020) is not in the design",
            "cable h0/1 – sw/1 is miswired: h0/1 is joined to nothing, sw/1 to renamed/1",
            "cable h2/1 – sw/3 is miswired: h2/1 is joined to nothing, sw/3 to other/1",
        ]
    );
    assert_eq!(c.by_position, vec![]);
    // By GUIDs only: h1's GUID changed.
    let c = compare(&design(), &found, &Options::fabric(MatchMode::Guids)).unwrap();
    assert_eq!(
        c.differences
            .iter()
            .filter(|d| d.kind() == "missing_node")
            .count(),
        2
    );
}

#[test]
fn a_name_matches_whole_else_its_first_word_and_two_matches_are_an_error() {
    let mut nodes = NODES;
    nodes[1].0 = "h0 HCA-1"; // first word
    nodes[2].0 = "h1"; // whole
    nodes[3].0 = "h2x HCA-1"; // neither: `h2x` is not `h2`
    let found = build(&nodes, &[0, 1, 2, 3, 4], &design_cables());
    let c = compare(&design(), &found, &Options::fabric(MatchMode::Names)).unwrap();
    let text: Vec<String> = c.differences.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "node h2 (0x0000000000000022) is missing",
            "node h2x HCA-1 (0x0000000000000022) is not in the design",
            "cable h2/1 – sw/3 is miswired: h2/1 is joined to nothing, sw/3 to h2x HCA-1/1",
        ]
    );
    // A whole name wins over a first word.
    let mut both = NODES.to_vec();
    both.push(("h0 HCA-2", 0x30, NodeKind::Hca, 1));
    let found = build(&both, &[0, 1, 2, 3, 4, 5], &design_cables());
    let c = compare(&design(), &found, &Options::fabric(MatchMode::Names)).unwrap();
    assert_eq!(c.differences.len(), 1, "{:?}", c.differences);
    // Two first words: an error naming both.
    let mut two = NODES.to_vec();
    two[1].0 = "h0 HCA-1";
    two.push(("h0 HCA-2", 0x30, NodeKind::Hca, 1));
    let found = build(&two, &[0, 1, 2, 3, 4, 5], &design_cables());
    let e = compare(&design(), &found, &Options::fabric(MatchMode::Names)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the design's `h0` matches two nodes by name, `h0 HCA-1` and `h0 HCA-2`"
    );
}

/// A two-level fabric: spine `s` (ports 1–4 to leaves' 33, 34), leaves `l0`, `l1`, each
/// with hosts on ports 1 and 2; nodes named with `prefix`, GUIDs from `base`.
fn two_level(prefix: &str, base: u64, skip: &[usize]) -> Fabric {
    let names: Vec<String> = ["s", "l0", "l1", "h0", "h1", "h2", "h3"]
        .iter()
        .map(|n| format!("{prefix}{n}"))
        .collect();
    let nodes: Vec<(&str, u64, NodeKind, u8)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let kind = if i < 3 {
                NodeKind::Switch
            } else {
                NodeKind::Hca
            };
            (
                n.as_str(),
                base + i as u64,
                kind,
                if i < 3 { 36 } else { 1 },
            )
        })
        .collect();
    let cables: Vec<Cable> = [
        ((0, 1), (1, 33)),
        ((0, 2), (2, 33)),
        ((0, 3), (1, 34)),
        ((0, 4), (2, 34)),
        ((1, 1), (3, 1)),
        ((1, 2), (4, 1)),
        ((2, 1), (5, 1)),
        ((2, 2), (6, 1)),
    ]
    .into_iter()
    .enumerate()
    .filter(|(i, _)| !skip.contains(i))
    .map(|(_, (a, b))| (a, b, X4))
    .collect();
    build(&nodes, &(0..7).collect::<Vec<_>>(), &cables)
}

#[test]
fn a_renamed_fabric_matches_by_position() {
    let design = two_level("", 0x100, &[]);
    let renamed = two_level("vendor-", 0x900, &[]);
    let c = compare(&design, &renamed, &Options::fabric(MatchMode::Position)).unwrap();
    assert_eq!(c.differences, vec![]);
    let pairs: Vec<(String, String)> = c
        .by_position
        .iter()
        .map(|p| (p.design.clone(), p.found.node.clone()))
        .collect();
    let want: Vec<(String, String)> = ["h0", "h1", "h2", "h3", "l0", "l1", "s"]
        .iter()
        .map(|n| ((*n).to_owned(), format!("vendor-{n}")))
        .collect();
    assert_eq!(pairs, want);
    // Every design node, with the found node it is.
    let names: Vec<(String, String)> = c.found_names.clone().into_iter().collect();
    assert_eq!(names, want);
    // By names alone nothing matches: every node and cable missing and extra.
    let c = compare(&design, &renamed, &Options::fabric(MatchMode::Names)).unwrap();
    assert_eq!(c.differences.len(), 7 + 7 + 8 + 8, "{:?}", c.differences);
    assert!(c.found_names.is_empty());
}

#[test]
fn position_extends_from_a_named_node_through_a_fabric_that_differs() {
    // The spine keeps its name; everything else renamed; l1's second uplink removed.
    let design = two_level("", 0x100, &[]);
    let mut found = two_level("vendor-", 0x900, &[3]);
    let mut b = FabricBuilder::new("t");
    let mut ids = Vec::new();
    for n in found.nodes() {
        let mut spec = n.spec.clone();
        if spec.name == "vendor-s" {
            spec.name = "s".to_owned();
        }
        ids.push(b.add_node(spec).unwrap());
    }
    for l in found.links() {
        let id = b
            .add_link(
                PortRef::new(ids[l.a.node.index()], l.a.port.0),
                PortRef::new(ids[l.b.node.index()], l.b.port.0),
            )
            .unwrap();
        b.set_link_rate(id, l.speed, l.width);
    }
    found = b.finish();
    let c = compare(&design, &found, &Options::fabric(MatchMode::Auto)).unwrap();
    assert_eq!(
        c.differences
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["cable l1/34 – s/4 is missing"]
    );
    assert_eq!(c.by_position.len(), 6);
    // From nothing, the structures differ: no node's place is unique.
    let found = two_level("vendor-", 0x900, &[3]);
    let e = compare(&design, &found, &Options::fabric(MatchMode::Position)).unwrap_err();
    assert_eq!(e, MatchError::NoPosition);
}

#[test]
fn a_node_at_two_places_is_an_error() {
    // The design cables sw/1 – t/1 and sw/2 – t/2; the found fabric sw/1 – x/1 and
    // sw/2 – y/2: `t` is at `x`'s place through one cable and at `y`'s through the other.
    let dn = [
        ("sw", 0x10, NodeKind::Switch, 8),
        ("t", 0x11, NodeKind::Switch, 8),
    ];
    let design = build(&dn, &[0, 1], &[((0, 1), (1, 1), X4), ((0, 2), (1, 2), X4)]);
    let fnodes = [
        ("sw", 0x10, NodeKind::Switch, 8),
        ("x", 0x21, NodeKind::Switch, 8),
        ("y", 0x22, NodeKind::Switch, 8),
    ];
    let found = build(
        &fnodes,
        &[0, 1, 2],
        &[((0, 1), (1, 1), X4), ((0, 2), (2, 2), X4)],
    );
    let e = compare(&design, &found, &Options::fabric(MatchMode::Auto)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the design's `t` is at the place of two found nodes, `x` (through sw/1) and `y` (through sw/2)"
    );
}

#[test]
fn a_down_link_found_is_a_missing_cable() {
    let mut b = FabricBuilder::new("t");
    let s = b
        .add_node(NodeSpec::new("sw", NodeKind::Switch, Guid(0x10), 8))
        .unwrap();
    let h = b
        .add_node(NodeSpec::new("h0", NodeKind::Hca, Guid(0x20), 1))
        .unwrap();
    let l = b.add_link(PortRef::new(s, 1), PortRef::new(h, 1)).unwrap();
    let design = b.fabric().clone();
    b.set_link_down(l);
    let found = b.finish();
    assert_eq!(diffs(&design, &found).len(), 1);
    assert_eq!(diffs(&design, &found)[0].kind(), "missing");
}

/// A random fabric: `n` switches of 8 ports, cables between free ports.
fn random_fabric() -> impl Strategy<Value = (usize, Vec<Cable>, Vec<usize>)> {
    (2usize..8).prop_flat_map(|n| {
        let cables = proptest::collection::vec(
            (
                (0..n, 1u8..=8),
                (0..n, 1u8..=8),
                proptest::option::of(0u64..3),
            ),
            0..24,
        );
        let order = Just((0..n).collect::<Vec<_>>()).prop_shuffle();
        (Just(n), cables, order).prop_map(|(n, raw, order)| {
            let mut used = std::collections::BTreeSet::new();
            let mut cables = Vec::new();
            for (a, b, w) in raw {
                if a == b || used.contains(&a) || used.contains(&b) {
                    continue;
                }
                used.insert(a);
                used.insert(b);
                let w = w.and_then(|w| Width::from_lanes(1 << w));
                cables.push((a, b, w));
            }
            (n, cables, order)
        })
    })
}

proptest! {
    #[test]
    fn a_fabric_compared_with_itself_in_another_order_differs_in_nothing(
        (n, cables, order) in random_fabric()
    ) {
        let names: Vec<String> = (0..n).map(|i| format!("s{i}")).collect();
        let nodes: Vec<(&str, u64, NodeKind, u8)> = names
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_str(), 0x100 + i as u64, NodeKind::Switch, 8))
            .collect();
        let design = build(&nodes, &(0..n).collect::<Vec<_>>(), &cables);
        let mut reversed = cables.clone();
        reversed.reverse();
        let found = build(&nodes, &order, &reversed);
        prop_assert_eq!(diffs(&design, &found), vec![]);
    }

    #[test]
    fn a_fabric_with_k_cables_swapped_differs_in_exactly_those_swaps(
        (n, cables, _) in random_fabric(),
        k in 0usize..6,
        seed in any::<u64>(),
    ) {
        let names: Vec<String> = (0..n).map(|i| format!("s{i}")).collect();
        let nodes: Vec<(&str, u64, NodeKind, u8)> = names
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_str(), 0x100 + i as u64, NodeKind::Switch, 8))
            .collect();
        let order: Vec<usize> = (0..n).collect();
        let design = build(&nodes, &order, &cables);
        // k disjoint pairs of cables (chosen by a seeded shuffle), each pair's far ends
        // exchanged.
        let mut idx: Vec<usize> = (0..cables.len()).collect();
        weft_fabric::rng::SplitMix64(seed).shuffle(&mut idx);
        let k = k.min(cables.len() / 2);
        let mut swapped = cables.clone();
        let end = |(node, port): (usize, u8)| End {
            node: names[node].clone(),
            guid: Guid(0x100 + node as u64),
            port: PortNum(port),
        };
        let mut expected = Vec::new();
        for p in 0..k {
            let (x, y) = (idx[2 * p], idx[2 * p + 1]);
            let ((a1, b1, _), (a2, b2, _)) = (cables[x], cables[y]);
            swapped[x].1 = b2;
            swapped[y].1 = b1;
            // Cable a1–b1: a1 now joined to b2, b1 to a2; cable a2–b2 the other way.
            for (a, b, a_to, b_to) in [(a1, b1, b2, a2), (a2, b2, b1, a1)] {
                let (ea, eb) = (end(a), end(b));
                let (ja, jb) = (Some(end(a_to)), Some(end(b_to)));
                expected.push(if ea <= eb {
                    Difference::Miswired { a: ea, b: eb, a_joined: ja, b_joined: jb }
                } else {
                    Difference::Miswired { a: eb, b: ea, a_joined: jb, b_joined: ja }
                });
            }
        }
        expected.sort();
        let found = build(&nodes, &order, &swapped);
        // Every node keeps its GUID and name: each mode that uses them finds the swaps.
        for mode in [MatchMode::Auto, MatchMode::Names, MatchMode::Guids] {
            let c = compare(&design, &found, &Options::fabric(mode)).unwrap();
            prop_assert_eq!(&c.differences, &expected, "{}", mode.as_str());
            prop_assert_eq!(&c.by_position, &vec![]);
        }
    }
}
