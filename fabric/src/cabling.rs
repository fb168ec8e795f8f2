//! Cabling against the design: which cables of a fabric differ from the ones a design says.
//!
//! [`compare`] matches the found fabric's nodes to the design's — by node GUID first, else by
//! name (the node description), else not at all — and compares the cables as unordered pairs
//! of (node, port). A design's cable is every link of the design (a `faults` block's down
//! links included: the cable is still designed); a found cable is a link that carries traffic
//! ([`Fabric::live_peer`]), as a live read sees it.
//!
//! Every difference is one [`Difference`], sorted: a design cable whose ends are not joined
//! on the found fabric is *miswired* when one of its ends is joined to something else (a swap
//! of two cables is two miswired cables), else *missing*; a found cable whose ends are both
//! free in the design is *extra* (a found cable touching a designed port is the miswired
//! cable's other half, not reported twice); a joined cable whose found speed or width is
//! recorded and differs from the design's is a speed or width difference (the design's: what
//! its link records, else the slower speed and narrower width of its two ports'
//! capabilities; a found link that records none is not compared); a design node no found
//! node matches is a missing node, a found node no design node matches an extra node.

use crate::model::{Fabric, LinkState};
use crate::{Guid, NodeId, PortNum, PortRef, Speed, Width};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// One end of a cable: the node's name and GUID (the design's, when the node is matched),
/// and the port.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct End {
    /// The node's name.
    pub node: String,
    /// The node's GUID.
    #[serde(with = "crate::guid_hex")]
    pub guid: Guid,
    /// The port.
    pub port: PortNum,
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.node, self.port)
    }
}

/// A node as a difference names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct NodeName {
    /// Its name.
    pub node: String,
    /// Its GUID.
    #[serde(with = "crate::guid_hex")]
    pub guid: Guid,
}

/// One difference between a design's cabling and a found fabric's.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Difference {
    /// A design node no found node matches.
    MissingNode(NodeName),
    /// A found node no design node matches.
    ExtraNode(NodeName),
    /// A design cable whose ends are not joined, one or both of them joined to something
    /// else: what each end is joined to instead (`None`: to nothing).
    Miswired {
        /// One end as designed.
        a: End,
        /// The other end as designed.
        b: End,
        /// What `a` is joined to on the found fabric.
        a_joined: Option<End>,
        /// What `b` is joined to on the found fabric.
        b_joined: Option<End>,
    },
    /// A design cable absent from the found fabric, both its ends free there.
    Missing {
        /// One end.
        a: End,
        /// The other end.
        b: End,
    },
    /// A found cable whose ends are both free in the design.
    Extra {
        /// One end.
        a: End,
        /// The other end.
        b: End,
    },
    /// A cable at another lane speed than the design's.
    Speed {
        /// One end.
        a: End,
        /// The other end.
        b: End,
        /// The design's speed.
        expected: Speed,
        /// The found speed.
        found: Speed,
    },
    /// A cable at another width than the design's.
    Width {
        /// One end.
        a: End,
        /// The other end.
        b: End,
        /// The design's width.
        expected: Width,
        /// The found width.
        found: Width,
    },
}

impl Difference {
    /// A short name of the kind: `miswired`, `missing`, `extra`, `speed`, `width`,
    /// `missing_node`, `extra_node`.
    pub fn kind(&self) -> &'static str {
        match self {
            Difference::MissingNode(_) => "missing_node",
            Difference::ExtraNode(_) => "extra_node",
            Difference::Miswired { .. } => "miswired",
            Difference::Missing { .. } => "missing",
            Difference::Extra { .. } => "extra",
            Difference::Speed { .. } => "speed",
            Difference::Width { .. } => "width",
        }
    }
}

fn joined(e: &Option<End>) -> String {
    e.as_ref()
        .map_or_else(|| "nothing".to_owned(), ToString::to_string)
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Difference::MissingNode(n) => write!(f, "node {} ({}) is missing", n.node, n.guid),
            Difference::ExtraNode(n) => {
                write!(f, "node {} ({}) is not in the design", n.node, n.guid)
            }
            Difference::Miswired {
                a,
                b,
                a_joined,
                b_joined,
            } => write!(
                f,
                "cable {a} – {b} is miswired: {a} is joined to {}, {b} to {}",
                joined(a_joined),
                joined(b_joined)
            ),
            Difference::Missing { a, b } => write!(f, "cable {a} – {b} is missing"),
            Difference::Extra { a, b } => write!(f, "cable {a} – {b} is not in the design"),
            Difference::Speed {
                a,
                b,
                expected,
                found,
            } => write!(
                f,
                "cable {a} – {b} runs at {}, the design says {}",
                found.as_str(),
                expected.as_str()
            ),
            Difference::Width {
                a,
                b,
                expected,
                found,
            } => write!(
                f,
                "cable {a} – {b} is {} wide, the design says {}",
                found.lanes_text(),
                expected.lanes_text()
            ),
        }
    }
}

impl Width {
    /// `1x`, `4x`, …: how a width is written.
    fn lanes_text(self) -> String {
        format!("{}x", self.lanes())
    }
}

/// A port in the design's terms: a design node's (matched or not), or an unmatched found
/// node's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Design(NodeId, PortNum),
    Found(NodeId, PortNum),
}

/// How the found fabric's nodes match the design's.
struct Matching {
    /// Per found node: the design node it matches.
    to_design: Vec<Option<NodeId>>,
    /// Per design node: whether a found node matches it.
    matched: Vec<bool>,
}

fn matching(design: &Fabric, found: &Fabric) -> Matching {
    let mut to_design = vec![None; found.nodes().len()];
    let mut matched = vec![false; design.nodes().len()];
    // By GUID first.
    for (d, node) in design.node_ids().zip(design.nodes()) {
        if let Some(f) = found.find_guid(node.guid()) {
            if let Some(slot @ None) = to_design.get_mut(f.index()) {
                *slot = Some(d);
                if let Some(m) = matched.get_mut(d.index()) {
                    *m = true;
                }
            }
        }
    }
    // Else by name, among the found nodes still free (the first of a name).
    let mut free: BTreeMap<&str, NodeId> = BTreeMap::new();
    for (f, node) in found.node_ids().zip(found.nodes()) {
        if to_design.get(f.index()).is_some_and(Option::is_none) {
            free.entry(node.name()).or_insert(f);
        }
    }
    for (d, node) in design.node_ids().zip(design.nodes()) {
        if matched.get(d.index()).copied().unwrap_or(true) {
            continue;
        }
        if let Some(f) = free.remove(node.name()) {
            if let Some(slot) = to_design.get_mut(f.index()) {
                *slot = Some(d);
            }
            if let Some(m) = matched.get_mut(d.index()) {
                *m = true;
            }
        }
    }
    Matching { to_design, matched }
}

/// Compares `found`'s cabling with `design`'s: every difference, sorted.
pub fn compare(design: &Fabric, found: &Fabric) -> Vec<Difference> {
    let m = matching(design, found);
    let key_of_found = |r: PortRef| match m.to_design.get(r.node.index()).copied().flatten() {
        Some(d) => Key::Design(d, r.port),
        None => Key::Found(r.node, r.port),
    };
    let end_of = |k: Key| -> Option<End> {
        let (node, port) = match k {
            Key::Design(n, p) => (design.nodes().get(n.index())?, p),
            Key::Found(n, p) => (found.nodes().get(n.index())?, p),
        };
        Some(End {
            node: node.name().to_owned(),
            guid: node.guid(),
            port,
        })
    };

    // Designed cables, both ways round: every link of the design, at the rate it records,
    // else the slower speed and narrower width of its two ports' capabilities.
    let caps = |n: NodeId| design.nodes().get(n.index()).map(|x| x.spec.caps);
    let mut designed: BTreeMap<Key, (Key, Option<Speed>, Option<Width>)> = BTreeMap::new();
    for l in design.links() {
        let (a, b) = (
            Key::Design(l.a.node, l.a.port),
            Key::Design(l.b.node, l.b.port),
        );
        let (ca, cb) = (caps(l.a.node), caps(l.b.node));
        let speed = l.speed.or_else(|| {
            let (x, y) = (ca?.speed, cb?.speed);
            Some(if x.lane_mbps() <= y.lane_mbps() { x } else { y })
        });
        let width = l.width.or_else(|| {
            let (x, y) = (ca?.width, cb?.width);
            Some(if x.lanes() <= y.lanes() { x } else { y })
        });
        designed.insert(a, (b, speed, width));
        designed.insert(b, (a, speed, width));
    }
    // Found cables, both ways round: the links that carry traffic.
    let up = |n: NodeId| found.nodes().get(n.index()).is_some_and(|x| !x.down);
    let mut cabled: BTreeMap<Key, (Key, Option<Speed>, Option<Width>)> = BTreeMap::new();
    for l in found.links() {
        if l.state != LinkState::Up || !up(l.a.node) || !up(l.b.node) {
            continue;
        }
        let (a, b) = (key_of_found(l.a), key_of_found(l.b));
        cabled.insert(a, (b, l.speed, l.width));
        cabled.insert(b, (a, l.speed, l.width));
    }

    let mut out = Vec::new();
    let pair = |a: Key, b: Key| -> Option<(End, End)> {
        let (a, b) = (end_of(a)?, end_of(b)?);
        Some(if a <= b { (a, b) } else { (b, a) })
    };
    for (&a, &(b, speed, width)) in &designed {
        if a > b {
            continue; // each cable once
        }
        match cabled.get(&a) {
            Some(&(far, found_speed, found_width)) if far == b => {
                let Some((ea, eb)) = pair(a, b) else { continue };
                if let (Some(e), Some(f)) = (speed, found_speed) {
                    if e != f {
                        out.push(Difference::Speed {
                            a: ea.clone(),
                            b: eb.clone(),
                            expected: e,
                            found: f,
                        });
                    }
                }
                if let (Some(e), Some(f)) = (width, found_width) {
                    if e != f {
                        out.push(Difference::Width {
                            a: ea,
                            b: eb,
                            expected: e,
                            found: f,
                        });
                    }
                }
            }
            _ => {
                let a_far = cabled.get(&a).map(|&(k, _, _)| k);
                let b_far = cabled.get(&b).map(|&(k, _, _)| k);
                let Some((ea, eb)) = pair(a, b) else { continue };
                if a_far.is_none() && b_far.is_none() {
                    out.push(Difference::Missing { a: ea, b: eb });
                    continue;
                }
                // The ends as the pair ordered them, each with what it is joined to.
                let (a_far, b_far) = if end_of(a).as_ref() == Some(&ea) {
                    (a_far, b_far)
                } else {
                    (b_far, a_far)
                };
                out.push(Difference::Miswired {
                    a: ea,
                    b: eb,
                    a_joined: a_far.and_then(end_of),
                    b_joined: b_far.and_then(end_of),
                });
            }
        }
    }
    for (&a, &(b, _, _)) in &cabled {
        if a > b || designed.contains_key(&a) || designed.contains_key(&b) {
            continue;
        }
        if let Some((ea, eb)) = pair(a, b) {
            out.push(Difference::Extra { a: ea, b: eb });
        }
    }
    for (d, node) in design.node_ids().zip(design.nodes()) {
        if !m.matched.get(d.index()).copied().unwrap_or(false) {
            out.push(Difference::MissingNode(NodeName {
                node: node.name().to_owned(),
                guid: node.guid(),
            }));
        }
    }
    for (f, node) in found.node_ids().zip(found.nodes()) {
        if m.to_design.get(f.index()).copied().flatten().is_none() {
            out.push(Difference::ExtraNode(NodeName {
                node: node.name().to_owned(),
                guid: node.guid(),
            }));
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::model::{FabricBuilder, NodeKind, NodeSpec};
    use proptest::prelude::*;

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
        assert_eq!(compare(&design(), &design()), vec![]);
    }

    #[test]
    fn two_cables_swapped_are_two_miswired_cables_naming_both_ends() {
        let mut cables = design_cables();
        cables[0].0 = (0, 2);
        cables[1].0 = (0, 1);
        let found = build(&NODES, &[0, 1, 2, 3, 4], &cables);
        let d = compare(&design(), &found);
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
            compare(&design(), &found),
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
        let d = compare(&design(), &found);
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
        assert_eq!(compare(&unrecorded, &narrow).len(), 1);
        // Unrecorded where found: not compared.
        cables[3].2 = None;
        let found = build(&NODES, &[0, 1, 2, 3, 4], &cables);
        assert_eq!(compare(&design(), &found), vec![]);
    }

    #[test]
    fn a_cable_moved_to_a_free_port_is_miswired_and_an_extra_cable_is_extra() {
        let mut cables = design_cables();
        cables[0].0 = (0, 5); // h0 moved from sw/1 to sw/5
        cables.push(((0, 6), (0, 7), None)); // a loop between two free ports
        let found = build(&NODES, &[0, 1, 2, 3, 4], &cables);
        assert_eq!(
            compare(&design(), &found),
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
    fn nodes_match_by_guid_else_by_name_else_not() {
        let mut nodes = NODES;
        nodes[1].0 = "renamed"; // same GUID: matched
        nodes[2].1 = 0x99; // same name: matched
        nodes[3] = ("other", 0x98, NodeKind::Hca, 1); // neither: missing h2, extra other
        let found = build(&nodes, &[4, 3, 2, 1, 0], &design_cables());
        assert_eq!(
            compare(&design(), &found),
            vec![
                Difference::MissingNode(NodeName {
                    node: "h2".to_owned(),
                    guid: Guid(0x22)
                }),
                Difference::ExtraNode(NodeName {
                    node: "other".to_owned(),
                    guid: Guid(0x98)
                }),
                Difference::Miswired {
                    a: end("h2", 0x22, 1),
                    b: end("sw", 0x10, 3),
                    a_joined: None,
                    b_joined: Some(end("other", 0x98, 1)),
                },
            ]
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
        assert_eq!(compare(&design, &found).len(), 1);
        assert_eq!(compare(&design, &found)[0].kind(), "missing");
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
            prop_assert_eq!(compare(&design, &found), vec![]);
        }
    }
}
