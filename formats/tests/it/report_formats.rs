//! The port-by-port reports read as topologies: what ibsim's `ibnetdiscover -p` and
//! `iblinkinfo` printed for a leaf–spine fabric (`tests/data/ibsim-leaf-spine.net`: two
//! switches joined by two cables, four HCAs, one of them dual-homed), before and after OpenSM
//! assigned LIDs, imports to the same nodes, GUIDs, cables, rates and LIDs as the default
//! `ibnetdiscover` output of the same fabric, with the warnings these formats owe.

#![expect(clippy::panic, reason = "test helpers fail by panicking")]

use std::collections::BTreeSet;
use weft_fabric::{Fabric, Guid, NodeKind};
use weft_formats::ibnetdiscover::{self, Code, Discovered, InputFormat, ParseOptions};

const TOPOLOGY: &str = include_str!("../data/ibsim-leaf-spine.ibnetdiscover");
const PORTS: &str = include_str!("../data/ibsim-leaf-spine.ports");
const LINKINFO: &str = include_str!("../data/ibsim-leaf-spine.iblinkinfo");
const TOPOLOGY_NO_SM: &str = include_str!("../data/ibsim-leaf-spine-nosm.ibnetdiscover");
const PORTS_NO_SM: &str = include_str!("../data/ibsim-leaf-spine-nosm.ports");
const LINKINFO_NO_SM: &str = include_str!("../data/ibsim-leaf-spine-nosm.iblinkinfo");

fn read(text: &str) -> Discovered {
    ibnetdiscover::parse(text, &ParseOptions::default()).unwrap_or_else(|e| {
        panic!("{e}: {:#?}", e.diagnostics());
    })
}

/// A node: GUID, kind, name, port count, port GUIDs.
type NodeShape = (Guid, NodeKind, String, u8, Vec<Guid>);
/// A cable: both ends by node GUID and port, and the rate.
type CableShape = ((Guid, u8), (Guid, u8), String);

/// A fabric as sets, independent of the order nodes and links were read in.
#[derive(Debug, PartialEq, Eq)]
struct Shape {
    nodes: BTreeSet<NodeShape>,
    cables: BTreeSet<CableShape>,
}

fn shape(f: &Fabric) -> Shape {
    let nodes = f
        .nodes()
        .iter()
        .map(|n| {
            let guids = n.ports.iter().map(|p| p.guid).collect();
            (
                n.guid(),
                n.kind(),
                n.name().to_owned(),
                n.spec.port_count,
                guids,
            )
        })
        .collect();
    let cables = f
        .links()
        .iter()
        .map(|l| {
            let end = |p: weft_fabric::PortRef| (f.node(p.node).guid(), p.port.0);
            let (a, b) = (end(l.a), end(l.b));
            let rate = format!("{:?}{:?}", l.width, l.speed);
            (a.min(b), a.max(b), rate)
        })
        .collect();
    Shape { nodes, cables }
}

/// LIDs by (node GUID, port).
fn lids(d: &Discovered) -> BTreeSet<(Guid, u8, u16)> {
    d.lids
        .base
        .iter()
        .flat_map(|(id, ports)| {
            ports
                .iter()
                .map(|(p, l)| (d.fabric.node(*id).guid(), p.0, l.0))
        })
        .collect()
}

fn codes(d: &Discovered) -> Vec<Code> {
    d.warnings.iter().map(|w| w.code()).collect()
}

#[test]
fn the_reports_read_as_the_topology_does() {
    for (topology, ports, linkinfo, with_lids) in [
        (TOPOLOGY, PORTS, LINKINFO, true),
        (TOPOLOGY_NO_SM, PORTS_NO_SM, LINKINFO_NO_SM, false),
    ] {
        let want = read(topology);
        assert_eq!(want.format, InputFormat::Topology);
        assert!(want.warnings.is_empty(), "{:?}", codes(&want));
        assert_eq!(want.fabric.nodes().len(), 6);
        assert_eq!(want.fabric.links().len(), 7);
        for (text, format) in [
            (ports, InputFormat::PortsReport),
            (linkinfo, InputFormat::LinkInfo),
        ] {
            let got = read(text);
            assert_eq!(got.format, format);
            assert_eq!(shape(&got.fabric), shape(&want.fabric), "{format:?}");
            assert_eq!(lids(&got), lids(&want), "{format:?}");
            assert_eq!(lids(&got).is_empty(), !with_lids);
            assert_eq!(
                codes(&got),
                vec![Code::PortCountGuessed, Code::NodeGuidGuessed],
                "{format:?}"
            );
            assert!(got.unassigned.is_empty());
        }
    }
}
