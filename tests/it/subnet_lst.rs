//! OpenSM's own `opensm-subnet.lst` read as a topology: fabrics loaded by ibsim (the
//! leaf–spine net of the fabric crate's tests, the real `ufm-small-lab` dump with its
//! loopback cables and four rates, and the 648-node example), swept once by the real OpenSM
//! (3.3.23), whose `opensm-subnet.lst` imports to the same fabric as `ibnetdiscover`'s dump
//! of the same simulated fabric: the same nodes (GUIDs, kinds, names, port counts, port and
//! system image GUIDs, vendor and device ids), cables and rates, and LIDs; and each is read
//! with the same warnings (the loopback cables).

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use std::collections::BTreeSet;
use std::time::Duration;
use weft_fabric::{Fabric, Guid, NodeKind};
use weft_formats::ibnetdiscover::{self, Code, Discovered, InputFormat, ParseOptions};
use weft_tests::ibsim::{self, Ibsim, Limits};

fn read(text: &str, what: &str) -> Discovered {
    ibnetdiscover::parse(text, &ParseOptions::default())
        .unwrap_or_else(|e| panic!("{what}: {e}: {:#?}", e.diagnostics()))
}

/// A node as both formats must give it.
type NodeShape = (
    Guid,
    NodeKind,
    String,
    u8,
    Vec<Guid>,
    Option<Guid>,
    u32,
    u32,
);

fn nodes(f: &Fabric) -> BTreeSet<NodeShape> {
    f.nodes()
        .iter()
        .map(|n| {
            (
                n.guid(),
                n.kind(),
                n.name().to_owned(),
                n.spec.port_count,
                n.ports.iter().map(|p| p.guid).collect(),
                n.spec.system_guid,
                n.spec.vendor_id,
                n.spec.device_id,
            )
        })
        .collect()
}

/// A cable by both ends (node GUID, port), with the rate.
type Cable = ((Guid, u8), (Guid, u8), String);

fn cables(f: &Fabric) -> BTreeSet<Cable> {
    f.links()
        .iter()
        .map(|l| {
            let end = |p: weft_fabric::PortRef| (f.node(p.node).guid(), p.port.0);
            let (a, b) = (end(l.a), end(l.b));
            (a.min(b), a.max(b), format!("{:?}{:?}", l.width, l.speed))
        })
        .collect()
}

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

fn codes(d: &Discovered) -> BTreeSet<Code> {
    d.warnings.iter().map(|w| w.code()).collect()
}

/// Loads `net` into ibsim, runs OpenSM once over it, and compares its `opensm-subnet.lst`
/// with `ibnetdiscover`'s dump; returns how many nodes, cables and loopback warnings.
fn compare(tools: &ibsim::Tools, net: &str, fabric: &Fabric) -> (usize, usize, usize) {
    let sim = Ibsim::start(tools, net, Some(Limits::for_fabric(fabric)))
        .unwrap_or_else(|e| panic!("{e}"));
    let cache = sim.dir().join("osm-cache");
    let dumps = sim.dir().join("dumps");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::create_dir_all(&dumps).unwrap();
    let log = sim.dir().join("osm.log");
    sim.run_env(
        "opensm",
        &[
            "-o",
            "-D",
            "0x43",
            "--dump_files_dir",
            dumps.to_str().unwrap(),
            "-f",
            log.to_str().unwrap(),
        ],
        &[("OSM_CACHE_DIR", cache.to_str().unwrap())],
        Duration::from_secs(180),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let lst = std::fs::read_to_string(dumps.join("opensm-subnet.lst")).unwrap();
    let dump = sim
        .run_retrying(
            "ibnetdiscover",
            &[],
            Duration::from_secs(120),
            Duration::from_secs(300),
        )
        .unwrap_or_else(|e| panic!("{e}"))
        .stdout;
    drop(sim);
    let want = read(&dump, "ibnetdiscover");
    let got = read(&lst, "opensm-subnet.lst");
    assert_eq!(got.format, InputFormat::SubnetLst);
    assert_eq!(want.format, InputFormat::Topology);
    assert_eq!(nodes(&got.fabric), nodes(&want.fabric));
    assert_eq!(cables(&got.fabric), cables(&want.fabric));
    assert_eq!(lids(&got), lids(&want));
    assert!(!lids(&got).is_empty(), "OpenSM assigned LIDs");
    assert_eq!(codes(&got), codes(&want));
    let loops = |d: &Discovered| {
        d.warnings
            .iter()
            .filter(|w| w.code() == Code::Loopback)
            .count()
    };
    assert_eq!(loops(&got), loops(&want));
    (
        got.fabric.nodes().len(),
        got.fabric.links().len(),
        loops(&got),
    )
}

#[test]
fn opensm_subnet_lst_imports_to_the_fabric_ibnetdiscover_finds() {
    let Some(tools) = ibsim::require(
        "opensm_subnet_lst_imports_to_the_fabric_ibnetdiscover_finds",
        &["ibnetdiscover", "opensm"],
    ) else {
        return;
    };
    let root = env!("CARGO_MANIFEST_DIR");
    let file = |p: &str| std::fs::read_to_string(format!("{root}/{p}")).unwrap();
    // The leaf–spine net as ibsim's own file.
    let net = file("../formats/tests/data/ibsim-leaf-spine.net");
    let fabric = read(&net, "ibsim-leaf-spine.net").fabric;
    assert_eq!(compare(&tools, &net, &fabric), (6, 7, 0));
    // A real lab dump (loopback cables on its SX6036, FDR10 to HDR), written back for ibsim.
    let lab = read(
        &file("fixtures/real/ufm-small-lab.ibnetdiscover"),
        "ufm-small-lab",
    );
    let net = ibnetdiscover::write(&lab.fabric, Some(&lab.lids)).unwrap();
    let (n, l, loops) = compare(&tools, &net, &lab.fabric);
    assert_eq!((n, l), (lab.fabric.nodes().len(), lab.fabric.links().len()));
    assert!(loops > 0, "the lab's loopback cables are warned about");
    // The 648-node example.
    let c = weft_compiler::check(
        "cluster-648.weft",
        &weft_tests::example("cluster-648.weft"),
        &weft_compiler::NoFiles,
    );
    let fabric = c.elaborated.unwrap().fabric;
    let net = weft_compiler::export_ibnetdiscover(&fabric).unwrap();
    let (n, _, _) = compare(&tools, &net, &fabric);
    assert_eq!(n, fabric.nodes().len());
}
