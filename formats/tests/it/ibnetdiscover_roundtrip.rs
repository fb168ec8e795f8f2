//! Property tests of the ibnetdiscover writer and reader:
//!
//! * random small fabrics (switches, HCAs and routers, links respecting port limits, random
//!   rates, down links, explicit port GUIDs, LIDs) written and read back are the same fabric,
//!   up to what the format cannot hold (down links, port GUIDs of unwired ports, a system GUID
//!   equal to the node GUID, a missing link rate, which is written as the slower port's);
//! * the reader never panics on randomly damaged dumps.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use proptest::prelude::*;
use proptest::sample::Index;
use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::{
    Fabric, FabricBuilder, Guid, Lid, LidAssignment, LinkId, LinkState, NodeKind, NodeSpec,
    PortNum, PortRef, Speed, Width,
};
use weft_formats::ibnetdiscover::{self, ParseOptions};

#[derive(Clone, Debug)]
struct NodeGen {
    kind: NodeKind,
    ports: u8,
    name: String,
    guid: u64,
    system_guid: Option<u64>,
    vendor_id: u32,
    device_id: u32,
    port_guids: Option<Vec<u64>>,
}

#[derive(Clone, Debug)]
struct LinkGen {
    a: Index,
    b: Index,
    pa: u8,
    pb: u8,
    width: Option<Width>,
    speed: Option<Speed>,
    down: bool,
}

fn arb_node() -> impl Strategy<Value = NodeGen> {
    let kind = prop_oneof![
        3 => Just(NodeKind::Switch),
        5 => Just(NodeKind::Hca),
        1 => Just(NodeKind::Router),
    ];
    kind.prop_flat_map(|kind| {
        let max_ports: u8 = match kind {
            NodeKind::Switch => 36,
            NodeKind::Hca => 4,
            NodeKind::Router => 2,
        };
        (
            Just(kind),
            1..=max_ports,
            // Printable ASCII without `"`, `#` and `=`, which the writer refuses.
            "[ !$-<>-~]{1,24}",
            // GUIDs are never 0 (the builder refuses one; proptest draws 0 often).
            1..=u64::MAX,
            proptest::option::of(1..=u64::MAX),
            any::<u32>(),
            any::<u32>(),
            proptest::option::of(proptest::collection::vec(
                1..=u64::MAX,
                usize::from(max_ports),
            )),
        )
            .prop_map(
                |(kind, ports, name, guid, system_guid, vendor_id, device_id, port_guids)| {
                    NodeGen {
                        kind,
                        ports,
                        name,
                        guid,
                        system_guid,
                        vendor_id,
                        device_id,
                        port_guids: port_guids
                            .filter(|_| kind != NodeKind::Switch)
                            .map(|mut g| {
                                g.truncate(usize::from(ports));
                                g
                            }),
                    }
                },
            )
    })
}

fn arb_link() -> impl Strategy<Value = LinkGen> {
    let width = proptest::option::of(proptest::sample::select(vec![
        Width::X1,
        Width::X2,
        Width::X4,
        Width::X8,
        Width::X12,
    ]));
    let speed = proptest::option::of(proptest::sample::select(Speed::ALL.to_vec()));
    (
        any::<Index>(),
        any::<Index>(),
        1u8..=36,
        1u8..=36,
        width,
        speed,
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(a, b, pa, pb, width, speed, down)| LinkGen {
            a,
            b,
            pa,
            pb,
            width,
            speed,
            down,
        })
}

/// A random fabric and, sometimes, LIDs for it.
fn arb_fabric() -> impl Strategy<Value = (Fabric, Option<LidAssignment>)> {
    (
        proptest::collection::vec(arb_node(), 1..14),
        proptest::collection::vec(arb_link(), 0..40),
        0u8..=3,
        any::<bool>(),
        any::<u16>(),
    )
        .prop_map(|(nodes, links, lmc, with_lids, lid_seed)| {
            let mut b = FabricBuilder::new("rt");
            b.set_lmc(lmc);
            let mut names = BTreeSet::new();
            let mut guids = BTreeSet::new();
            let mut ports = Vec::new();
            for (i, n) in nodes.into_iter().enumerate() {
                let mut name = n.name;
                if !names.insert(name.clone()) {
                    name = format!("n{i}");
                    names.insert(name.clone());
                }
                let mut guid = n.guid;
                while !guids.insert(guid) {
                    guid = guid.wrapping_add(1).max(1);
                }
                let mut spec = NodeSpec::new(name, n.kind, Guid(guid), n.ports);
                spec.system_guid = n.system_guid.map(Guid);
                spec.vendor_id = n.vendor_id;
                spec.device_id = n.device_id;
                spec.port_guids = n.port_guids.map(|g| g.into_iter().map(Guid).collect());
                b.add_node(spec).unwrap();
                ports.push(n.ports);
            }
            let count = ports.len();
            let mut used = BTreeSet::new();
            for l in links {
                let (na, nb) = (l.a.index(count), l.b.index(count));
                let pa = (l.pa - 1) % ports[na] + 1;
                let pb = (l.pb - 1) % ports[nb] + 1;
                let (ea, eb) = (
                    PortRef::new(weft_fabric::NodeId(na as u32), pa),
                    PortRef::new(weft_fabric::NodeId(nb as u32), pb),
                );
                if ea == eb || used.contains(&ea) || used.contains(&eb) {
                    continue;
                }
                used.insert(ea);
                used.insert(eb);
                let id = b.add_link(ea, eb).unwrap();
                b.set_link_rate(id, l.speed, l.width);
                if l.down {
                    b.set_link_down(id);
                }
            }
            let fabric = b.finish();
            let lids = with_lids.then(|| {
                let mut lids = LidAssignment {
                    lmc,
                    base: BTreeMap::new(),
                    vports: Vec::new(),
                };
                let mut next = u32::from(lid_seed);
                // Ports own their LIDs (the reader refuses two ports on one): aligned blocks
                // of 2^lmc, a random stride apart.
                let block = 1u32 << lmc.min(7);
                let mut at = block;
                for id in fabric.node_ids() {
                    let node = fabric.node(id);
                    let ports: Vec<u8> = if node.is_switch() {
                        vec![0]
                    } else {
                        (1..=node.spec.port_count).collect()
                    };
                    for p in ports {
                        next = next.wrapping_mul(2_654_435_761).wrapping_add(1);
                        // Sometimes no LID; else the next free block.
                        if (next >> 8) % 0xC000 != 0 && at + block - 1 < 0xC000 {
                            lids.base
                                .entry(id)
                                .or_default()
                                .insert(PortNum(p), Lid(at as u16));
                            at += block * (1 + (next >> 12) % 3);
                        }
                    }
                }
                lids
            });
            (fabric, lids)
        })
}

/// What reading back the written `fabric` must give: the same nodes; the up links in the order
/// the writer lists them, each with a rate; port GUIDs of unwired end-node ports derived; LIDs
/// only where the format carries them.
fn expected(fabric: &Fabric, lids: Option<&LidAssignment>) -> (Fabric, LidAssignment) {
    let up = |end: PortRef| -> Option<(PortRef, LinkId)> {
        fabric
            .peer(end)
            .filter(|(_, l)| fabric.link(*l).state == LinkState::Up)
    };
    let mut b = FabricBuilder::new(fabric.name.clone());
    for id in fabric.node_ids() {
        let n = fabric.node(id);
        let mut spec = n.spec.clone();
        if spec.system_guid == Some(spec.guid) {
            spec.system_guid = None;
        }
        if !n.is_switch() {
            let derived = |p: PortNum| Guid(n.guid().0.wrapping_add(u64::from(p.0)));
            let guids: Vec<Guid> = n
                .ports
                .iter()
                .map(|p| {
                    if up(PortRef {
                        node: id,
                        port: p.num,
                    })
                    .is_some()
                    {
                        p.guid
                    } else {
                        derived(p.num)
                    }
                })
                .collect();
            let all_derived = guids
                .iter()
                .zip(&n.ports)
                .all(|(g, p)| *g == derived(p.num));
            spec.port_guids = (!all_derived).then_some(guids);
        }
        b.add_node(spec).unwrap();
    }
    let mut done = BTreeSet::new();
    let mut end_node_wired = false;
    let mut want_lids = LidAssignment::default();
    for id in fabric.node_ids() {
        let n = fabric.node(id);
        for p in &n.ports {
            let here = PortRef {
                node: id,
                port: p.num,
            };
            let Some((there, l)) = up(here) else { continue };
            if !n.is_switch() {
                end_node_wired = true;
                if let Some(lid) = lids.and_then(|x| x.base.get(&id)?.get(&p.num).copied()) {
                    want_lids.base.entry(id).or_default().insert(p.num, lid);
                }
            }
            if !done.insert(l) {
                continue;
            }
            let link = fabric.link(l);
            let ca = fabric.node(here.node).spec.caps;
            let cb = fabric.node(there.node).spec.caps;
            let new = b.add_link(here, there).unwrap();
            b.set_link_rate(
                new,
                Some(link.speed.unwrap_or(ca.speed.min(cb.speed))),
                Some(link.width.unwrap_or(ca.width.min(cb.width))),
            );
        }
        if n.is_switch() {
            if let Some(lid) = lids.and_then(|x| x.base.get(&id)?.get(&PortNum(0)).copied()) {
                want_lids
                    .base
                    .entry(id)
                    .or_default()
                    .insert(PortNum(0), lid);
            }
        }
    }
    let lmc = if end_node_wired {
        lids.map(|l| l.lmc).unwrap_or(fabric.lmc)
    } else {
        0
    };
    b.set_lmc(lmc);
    want_lids.lmc = lmc;
    (b.finish(), want_lids)
}

proptest! {
    #[test]
    fn write_then_parse_gives_the_same_fabric((fabric, lids) in arb_fabric()) {
        let text = ibnetdiscover::write(&fabric, lids.as_ref()).unwrap();
        let opts = ParseOptions { fabric_name: fabric.name.clone(), ..ParseOptions::default() };
        let read = match ibnetdiscover::parse(&text, &opts) {
            Ok(d) => d,
            Err(e) => panic!("{e}: {:?}\n{text}", e.diagnostics()),
        };
        // A loopback cable (two ports of one node) is a warning per cable, and nothing else.
        let loopbacks = (fabric.links().iter())
            .filter(|l| l.a.node == l.b.node && l.state == weft_fabric::LinkState::Up)
            .count();
        let (looped, other): (Vec<_>, Vec<_>) = read
            .warnings
            .iter()
            .partition(|w| w.code() == ibnetdiscover::Code::Loopback);
        prop_assert!(other.is_empty(), "{:?}\n{}", other, text);
        prop_assert_eq!(looped.len(), loopbacks.min(10) + usize::from(loopbacks > 10));
        let (want, want_lids) = expected(&fabric, lids.as_ref());
        prop_assert_eq!(&read.fabric, &want, "{}", text);
        prop_assert_eq!(&read.lids, &want_lids);
        // What the format drops does not show in the text: writing what was read gives the
        // same text.
        let again = ibnetdiscover::write(&read.fabric, Some(&read.lids)).unwrap();
        prop_assert_eq!(again, text);
    }

    #[test]
    fn never_panics_on_damaged_dumps(
        edits in proptest::collection::vec(
            (any::<Index>(), 0usize..6, proptest::sample::select(vec![
                "", "\"", "[", "]", "(", ")", "#", "=", "\n", "\r\n", "\t", " ", "0x", "99999999999999999999",
                "lid ", "lmc ", "4xEDR", "é", "Switch 8 \"", "Ca 1 \"x\"\n", "[0]", "[255]", "@",
            ])),
            0..12,
        )
    ) {
        let mut text = include_str!("../data/two-switch.ibnetdiscover").to_owned();
        for (at, cut, insert) in edits {
            let mut i = at.index(text.len() + 1);
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            let mut j = (i + cut).min(text.len());
            while !text.is_char_boundary(j) {
                j -= 1;
            }
            text.replace_range(i..j, insert);
        }
        let _ = ibnetdiscover::parse(&text, &ParseOptions::default());
        let _ = ibnetdiscover::parse_node_name_map(&text);
    }
}
