//! The port-by-port reports of a live (simulated) fabric: a fabric written by weft and loaded
//! by ibsim, discovered with the real `ibnetdiscover`, `ibnetdiscover -p` and `iblinkinfo`
//! before and after OpenSM assigned LIDs, imports to the same topology from each (nodes,
//! GUIDs, port counts, cables, rates, LIDs); the tools' standard error mixed into their output
//! (`2>&1`) is skipped with one warning per line.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;
use weft_fabric::{Fabric, FabricBuilder, Guid, NodeKind, NodeSpec, PortRef};
use weft_formats::ibnetdiscover::{self, Code, Discovered, InputFormat, ParseOptions};
use weft_tests::assert_isomorphic;
use weft_tests::ibsim::{self, Ibsim, Limits};

/// Two spines and four leaves of 36 ports, two cables from every leaf to every spine, five
/// one-port HCAs per leaf, and a two-port HCA cabled to leaves 1 and 2.
fn fabric() -> Fabric {
    let mut b = FabricBuilder::new("leaf-spine");
    let switch = |b: &mut FabricBuilder, name: String, guid: u64| {
        b.add_node(NodeSpec::new(name, NodeKind::Switch, Guid(guid), 36))
            .unwrap()
    };
    let spines: Vec<_> = (1..=2u64)
        .map(|s| switch(&mut b, format!("spine{s}"), 0x7cfe_9003_0000_0000 + s))
        .collect();
    let leaves: Vec<_> = (1..=4u64)
        .map(|l| switch(&mut b, format!("leaf{l}"), 0x7cfe_9003_0001_0000 + l))
        .collect();
    for (l, &leaf) in (1u8..).zip(&leaves) {
        for (s, &spine) in (0u8..).zip(&spines) {
            for k in 0..2u8 {
                b.add_link(
                    PortRef::new(leaf, 31 + 2 * s + k),
                    PortRef::new(spine, 2 * l - 1 + k),
                )
                .unwrap();
            }
        }
        for h in 1..=5u8 {
            let n = u64::from(l - 1) * 5 + u64::from(h);
            let host = b
                .add_node(NodeSpec::new(
                    format!("cn{n:03}"),
                    NodeKind::Hca,
                    Guid(0x0002_c903_0000_0000 + n * 0x10),
                    1,
                ))
                .unwrap();
            b.add_link(PortRef::new(host, 1), PortRef::new(leaf, h))
                .unwrap();
        }
    }
    let dual = b
        .add_node(NodeSpec::new(
            "storage1",
            NodeKind::Hca,
            Guid(0x0002_c903_0000_1000),
            2,
        ))
        .unwrap();
    b.add_link(PortRef::new(dual, 1), PortRef::new(leaves[0], 10))
        .unwrap();
    b.add_link(PortRef::new(dual, 2), PortRef::new(leaves[1], 10))
        .unwrap();
    b.finish()
}

fn read(text: &str, what: &str) -> Discovered {
    let opts = ParseOptions {
        source_name: what.to_owned(),
        ..ParseOptions::default()
    };
    ibnetdiscover::parse(text, &opts)
        .unwrap_or_else(|e| panic!("{what}: {e}: {:#?}", e.diagnostics()))
}

/// LIDs by node GUID and port.
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

/// A cable by the GUIDs and ports of its ends, with its rate.
type Cable = ((Guid, u8), (Guid, u8), String);

/// Every cable of `f`.
fn rates(f: &Fabric) -> BTreeSet<Cable> {
    f.links()
        .iter()
        .map(|l| {
            let end = |p: PortRef| (f.node(p.node).guid(), p.port.0);
            let (a, b) = (end(l.a), end(l.b));
            (a.min(b), a.max(b), format!("{:?} {:?}", l.width, l.speed))
        })
        .collect()
}

fn codes(d: &Discovered) -> Vec<Code> {
    d.warnings.iter().map(|w| w.code()).collect()
}

/// Discovers the simulated fabric three ways and compares.
fn discover_and_compare(sim: &Ibsim, fabric: &Fabric, with_lids: bool) {
    let run = |args: &[&str]| {
        let (program, args) = args.split_first().unwrap();
        sim.run_retrying(
            program,
            args,
            Duration::from_secs(60),
            Duration::from_secs(240),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let topology = run(&["ibnetdiscover"]);
    let want = read(&topology.stdout, "ibnetdiscover");
    assert_eq!(want.format, InputFormat::Topology);
    assert!(want.warnings.is_empty(), "{:?}", codes(&want));
    assert_isomorphic(fabric, &want.fabric);
    assert_eq!(lids(&want).is_empty(), !with_lids);
    for (args, format) in [
        (&["ibnetdiscover", "-p"][..], InputFormat::PortsReport),
        (&["iblinkinfo"][..], InputFormat::LinkInfo),
    ] {
        let out = run(args);
        let got = read(&out.stdout, args.join(" ").as_str());
        assert_eq!(got.format, format);
        assert_isomorphic(&want.fabric, &got.fabric);
        assert_eq!(lids(&got), lids(&want), "{format:?}");
        assert_eq!(rates(&got.fabric), rates(&want.fabric), "{format:?}");
        assert_eq!(
            codes(&got),
            vec![Code::PortCountGuessed, Code::NodeGuidGuessed],
            "{format:?}"
        );
        // `2>&1`: what the tool wrote to standard error (ibsim's client library says
        // `ibwarn: … sim_connect: attached as client …`) comes first.
        let stderr_lines = out.stderr.lines().filter(|l| !l.trim().is_empty()).count();
        assert!(stderr_lines > 0, "{format:?}: nothing on standard error");
        let merged = read(&format!("{}{}", out.stderr, out.stdout), "2>&1");
        assert_eq!(merged.fabric, got.fabric, "{format:?}");
        let stderr_warnings = codes(&merged)
            .iter()
            .filter(|&&c| c == Code::ToolStderr)
            .count();
        assert_eq!(
            stderr_warnings,
            stderr_lines,
            "{format:?}: {:?}",
            codes(&merged)
        );
    }
}

#[test]
fn the_reports_of_an_ibsim_fabric_read_as_its_topology() {
    let Some(tools) = ibsim::require(
        "the_reports_of_an_ibsim_fabric_read_as_its_topology",
        &["ibnetdiscover", "iblinkinfo", "opensm"],
    ) else {
        return;
    };
    let fabric = fabric();
    let net = ibnetdiscover::write(&fabric, None).unwrap();
    let pid = {
        let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(&fabric)))
            .unwrap_or_else(|e| panic!("{e}"));
        // Before a subnet manager: every LID 0, iblinkinfo's peers found by name.
        discover_and_compare(&sim, &fabric, false);
        // OpenSM sweeps once and assigns LIDs.
        let cache = sim.dir().join("osm-cache");
        std::fs::create_dir_all(&cache).unwrap();
        let log = sim.dir().join("osm.log");
        sim.run_env(
            "opensm",
            &["-o", "-f", log.to_str().unwrap()],
            &[("OSM_CACHE_DIR", cache.to_str().unwrap())],
            Duration::from_secs(120),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        discover_and_compare(&sim, &fabric, true);
        sim.pid()
    };
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "ibsim (pid {pid}) still runs after the test"
    );
}
