//! Service nodes through the dump: an aggregation node ([`weft_fabric::roles`]) is written with
//! the AN's device ID, so that reading the dump back recognises it again.

use weft_fabric::roles::{aggregation_nodes, Evidence};
use weft_fabric::{Fabric, FabricBuilder, Guid, NodeId, NodeKind, NodeSpec, PortRef, Role};

/// A 36-port switch with a one-port CA named `name` (no device ID) on port 3; returns the
/// fabric and the CA.
fn one(name: &str) -> (Fabric, NodeId) {
    let mut b = FabricBuilder::new("t");
    let sw = b
        .add_node(NodeSpec::new("sw", NodeKind::Switch, Guid(0x10), 36))
        .unwrap();
    let ca = b
        .add_node(NodeSpec::new(name, NodeKind::Hca, Guid(0x20), 1))
        .unwrap();
    b.add_link(PortRef::new(sw, 3), PortRef::new(ca, 1))
        .unwrap();
    (b.finish(), ca)
}

fn found(f: &Fabric) -> Vec<(NodeId, Evidence)> {
    aggregation_nodes(f, |_| false)
        .into_iter()
        .map(|r| (r.node, r.evidence))
        .collect()
}

/// An aggregation node without a recorded device ID is written with the AN's, so the
/// dump read back (by weft, or by tools keyed on the device ID) still says what it is.
#[test]
fn a_written_aggregation_node_carries_the_device_id() {
    let (f, ca) = one("an1");
    let mut b = FabricBuilder::from(f);
    b.set_role(ca, Role::Aggregation);
    let text = super::write(&b.finish(), None).unwrap();
    assert!(text.contains("devid=0xcf09"), "{text}");
    let back = super::parse(&text, &Default::default()).unwrap().fabric;
    let an = back.find("an1").unwrap();
    assert_eq!(
        found(&back),
        [(an, Evidence::DeviceId)],
        "recognised again from the dump"
    );
    // A host keeps its device ID (0 here): nothing is made up for it.
    let (f, _) = one("cn001");
    let text = super::write(&f, None).unwrap();
    assert!(!text.contains("devid=0xcf09"), "{text}");
}
