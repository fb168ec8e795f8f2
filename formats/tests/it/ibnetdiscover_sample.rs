//! A realistic ibnetdiscover dump: two MSB7800 switches joined by two cables, eighteen hosts
//! (one dual-homed, a QLogic HCA whose port GUID is its node GUID, a ConnectX-3 at FDR), LIDs on
//! every port. Checked in at `tests/data/two-switch.ibnetdiscover`.

#![expect(clippy::panic, reason = "test helpers fail by panicking")]

use weft_fabric::{Guid, Lid, NodeKind, PortNum, PortRef, Speed, Width};
use weft_formats::ibnetdiscover::{self, Discovered, ParseOptions};

const DUMP: &str = include_str!("../data/two-switch.ibnetdiscover");
const NAME_MAP: &str = include_str!("../data/two-switch.node-name-map");

fn read(opts: &ParseOptions) -> Discovered {
    match ibnetdiscover::parse(DUMP, opts) {
        Ok(d) => d,
        Err(e) => panic!("{e}: {:?}", e.diagnostics()),
    }
}

fn lid(d: &Discovered, name: &str, port: u8) -> Option<Lid> {
    let id = d.fabric.find(name)?;
    d.lids.base.get(&id)?.get(&PortNum(port)).copied()
}

fn peer<'d>(
    d: &'d Discovered,
    name: &str,
    port: u8,
) -> Option<(&'d str, u8, Option<Width>, Option<Speed>)> {
    let f = &d.fabric;
    let (there, link) = f.peer(PortRef::new(f.find(name)?, port))?;
    let l = f.link(link);
    Some((f.node(there.node).name(), there.port.0, l.width, l.speed))
}

#[test]
fn reads_the_two_switch_dump() {
    let d = read(&ParseOptions::default());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    let f = &d.fabric;
    assert_eq!(f.nodes().len(), 20);
    assert_eq!(f.switch_count(), 2);
    assert_eq!(f.hca_count(), 18);
    assert_eq!(f.links().len(), 21);

    let sw1 = f.node(f.find("MF0;sw1:MSB7800/U1").unwrap());
    assert_eq!(sw1.kind(), NodeKind::Switch);
    assert_eq!(sw1.spec.port_count, 36);
    assert_eq!((sw1.spec.vendor_id, sw1.spec.device_id), (0x2c9, 0xcf08));
    assert!(sw1.ports.iter().all(|p| p.guid == sw1.guid()));

    // The inter-switch cables, both ends.
    for p in [35, 36] {
        assert_eq!(
            peer(&d, "MF0;sw1:MSB7800/U1", p),
            Some(("MF0;sw2:MSB7800/U1", p, Some(Width::X4), Some(Speed::EDR)))
        );
    }
    // A dual-homed host.
    assert_eq!(
        peer(&d, "cn009 HCA-1", 1).map(|p| (p.0, p.1)),
        Some(("MF0;sw1:MSB7800/U1", 9))
    );
    assert_eq!(
        peer(&d, "cn009 HCA-1", 2).map(|p| (p.0, p.1)),
        Some(("MF0;sw2:MSB7800/U1", 10))
    );
    // Hosts on one port of two keep their port count; the second port is simply unwired.
    let cn001 = f.node(f.find("cn001 HCA-1").unwrap());
    assert_eq!(cn001.spec.port_count, 2);
    assert!(cn001.ports[1].link.is_none());
    assert_eq!(cn001.ports[0].guid, Guid(0x0002_c903_00a1_b2c1));
    assert_eq!(cn001.spec.port_guids, None, "node GUID + port");

    // The QLogic host: port GUID equal to the node GUID, QDR.
    let qib = f.node(f.find("cn017 qib0").unwrap());
    assert_eq!(qib.guid(), Guid(0x0011_7500_00ff_8a10));
    assert_eq!(qib.spec.port_guids, Some(vec![qib.guid()]));
    assert_eq!((qib.spec.vendor_id, qib.spec.device_id), (0x1175, 0x7322));
    assert_eq!(
        peer(&d, "cn017 qib0", 1),
        Some(("MF0;sw2:MSB7800/U1", 8, Some(Width::X4), Some(Speed::QDR)))
    );
    // The ConnectX-3 at FDR.
    assert_eq!(
        peer(&d, "cn018 HCA-1", 1).map(|p| p.3),
        Some(Some(Speed::FDR))
    );

    // LIDs.
    assert_eq!(d.lids.lmc, 0);
    assert_eq!(lid(&d, "MF0;sw1:MSB7800/U1", 0), Some(Lid(1)));
    assert_eq!(lid(&d, "MF0;sw2:MSB7800/U1", 0), Some(Lid(2)));
    assert_eq!(lid(&d, "cn001 HCA-1", 1), Some(Lid(3)));
    assert_eq!(lid(&d, "cn009 HCA-1", 2), Some(Lid(21)));
    assert_eq!(lid(&d, "cn018 HCA-1", 1), Some(Lid(20)));
    assert_eq!(lid(&d, "cn001 HCA-1", 2), None);
    let lids: usize = d.lids.base.values().map(|ports| ports.len()).sum();
    assert_eq!(lids, 2 + 18 + 1);
}

#[test]
fn names_from_a_node_name_map() {
    let name_map = ibnetdiscover::parse_node_name_map(NAME_MAP).unwrap();
    let d = read(&ParseOptions {
        name_map,
        fabric_name: "lab".to_owned(),
        ..ParseOptions::default()
    });
    assert_eq!(d.fabric.name, "lab");
    assert_eq!(
        peer(&d, "leaf1", 35).map(|p| (p.0, p.1)),
        Some(("leaf2", 35))
    );
    assert!(d.fabric.find("cn017").is_some());
    assert!(
        d.fabric.find("cn001 HCA-1").is_some(),
        "unmapped nodes keep their description"
    );
}

#[test]
fn written_back_it_reads_the_same() {
    let d = read(&ParseOptions::default());
    let text = ibnetdiscover::write(&d.fabric, Some(&d.lids)).unwrap();
    let again = ibnetdiscover::parse(&text, &ParseOptions::default()).unwrap();
    assert!(again.warnings.is_empty());
    assert_eq!(again.lids, d.lids);
    // Same nodes in the same order; links are listed in writer order, so compare by peer.
    assert_eq!(
        again
            .fabric
            .nodes()
            .iter()
            .map(|n| &n.spec)
            .collect::<Vec<_>>(),
        d.fabric.nodes().iter().map(|n| &n.spec).collect::<Vec<_>>()
    );
    for id in d.fabric.node_ids() {
        for port in &d.fabric.node(id).ports {
            let end = PortRef {
                node: id,
                port: port.num,
            };
            let a = d
                .fabric
                .peer(end)
                .map(|(p, l)| (p, d.fabric.link(l).width, d.fabric.link(l).speed));
            let b = again
                .fabric
                .peer(end)
                .map(|(p, l)| (p, again.fabric.link(l).width, again.fabric.link(l).speed));
            assert_eq!(a, b);
        }
    }
}
