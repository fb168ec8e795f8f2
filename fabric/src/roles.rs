//! Service nodes recognised without help: which end nodes of a [`Fabric`] are SHARP
//! Aggregation Nodes, from what any discovered or declared fabric carries.
//!
//! Every NVIDIA Quantum switch (HDR QM8700/QM8790, NDR QM9700/QM9790) holds a SHARP
//! Aggregation Node (AN): a one-port CA inside the switch, cabled to the switch's extra port,
//! with a LID of its own. `ibnetdiscover` shows it as
//! `[41] "H-…"[1](…) # "Mellanox Technologies Aggregation Node" lid 355 4xHDR` on a switch
//! that reports 41 ports (40 + the AN's), with `devid=0xcf09`. An end node is an aggregation
//! node when any one of these holds (each is [`Evidence`]):
//!
//! 1. **NodeDescription**: its name (the NodeDescription, unless a node-name map renamed it)
//!    contains `aggregation node`, case and punctuation aside — what NVIDIA's own tools
//!    match;
//! 2. **device ID** `0xcf09` ([`AN_DEVICE_ID`]), the AN's PCI-style device ID, with the
//!    vendor Mellanox/NVIDIA (`0x02c9`) or not recorded;
//! 3. **position**, only when neither description nor device ID says otherwise (device ID not
//!    recorded): a CA with exactly one port, cabled to the *last* port of a switch whose port
//!    count is a Quantum radix plus one ([`AN_RADICES`]: 41, 65, 129 ports) and whose vendor
//!    is Mellanox/NVIDIA or not recorded. No IB switch model has 41, 65 or 129 front-panel
//!    ports: that last port is the AN's, so no host can sit there. A CA on the last port of a
//!    36- or 40-port switch is never classified by position.
//!
//! The compiler runs it on every fabric it elaborates or imports. Nothing here sets a role the
//! fabric already carries: declared roles (`role = …`) and roles
//! given on import win, and an end node declared `role = host` is not looked at.

use crate::{Fabric, NodeId, PortNum, PortRef};

/// The AN's device ID as `ibnetdiscover` prints it (`devid=0xcf09`, 53001), the same on HDR
/// and NDR Quantum switches in the published dumps and NVIDIA's device tables.
pub const AN_DEVICE_ID: u32 = 0xCF09;

/// The Mellanox/NVIDIA vendor OUI (`vendid=0x2c9`).
pub const NVIDIA_OUI: u32 = 0x0002C9;

/// Front-panel radices of the switches that hold an AN on one more port: Quantum (40 ports, AN
/// on 41), Quantum-2 (64, AN on 65) and Quantum-2 with NDR200 split ports (128, AN on 129).
pub const AN_RADICES: [u8; 3] = [40, 64, 128];

/// Why an end node was recognised as an aggregation node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Evidence {
    /// Its NodeDescription names an aggregation node.
    Description,
    /// Its device ID is [`AN_DEVICE_ID`].
    DeviceId,
    /// It is a one-port CA alone on the extra port of a switch of [`AN_RADICES`]` + 1` ports.
    Position {
        /// The switch.
        switch: NodeId,
        /// Its port the CA is cabled to (its last).
        port: PortNum,
    },
}

impl Evidence {
    /// A few words for people: "its NodeDescription", "device ID 0xcf09", "port 41 of a
    /// 41-port switch".
    pub fn describe(&self) -> String {
        match self {
            Evidence::Description => "its NodeDescription".to_owned(),
            Evidence::DeviceId => format!("device ID {AN_DEVICE_ID:#06x}"),
            Evidence::Position { port, .. } => {
                format!("port {} of a {}-port switch", port.0, port.0)
            }
        }
    }
}

/// An end node recognised as an aggregation node, and the first evidence found (in the order
/// description, device ID, position).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recognised {
    /// The end node.
    pub node: NodeId,
    /// Why.
    pub evidence: Evidence,
}

/// Whether a NodeDescription names an aggregation node: it contains `aggregation node`,
/// compared without case, with any run of characters other than letters and digits read as
/// one space (`Mellanox Technologies Aggregation Node`, `aggregation-node`).
pub fn is_aggregation_description(description: &str) -> bool {
    let mut folded = String::with_capacity(description.len());
    for c in description.chars() {
        if c.is_alphanumeric() {
            folded.extend(c.to_lowercase());
        } else if !folded.ends_with(' ') {
            folded.push(' ');
        }
    }
    folded.contains("aggregation node")
}

/// Whether a vendor ID is NVIDIA's, or not recorded (0).
fn nvidia_or_unknown(vendor: u32) -> bool {
    vendor == 0 || vendor == NVIDIA_OUI
}

/// Every end node of `fabric` whose role is [`Role::Host`](crate::Role::Host) and which
/// looks like an aggregation node, in node order, with the evidence (see the module
/// documentation for the rules). `skip` names end nodes not to look at (those declared
/// `role = host`).
pub fn aggregation_nodes(fabric: &Fabric, skip: impl Fn(NodeId) -> bool) -> Vec<Recognised> {
    let mut out = Vec::new();
    for (id, n) in fabric.node_ids().zip(fabric.nodes()) {
        if !n.is_host() || skip(id) {
            continue;
        }
        let evidence = if is_aggregation_description(n.name()) {
            Some(Evidence::Description)
        } else if n.spec.device_id == AN_DEVICE_ID && nvidia_or_unknown(n.spec.vendor_id) {
            Some(Evidence::DeviceId)
        } else if n.spec.device_id == 0 && n.spec.port_count == 1 {
            extra_port(fabric, id)
        } else {
            None
        };
        if let Some(evidence) = evidence {
            out.push(Recognised { node: id, evidence });
        }
    }
    out
}

/// The position rule: `id`'s only port is cabled to the last port of an NVIDIA (or unknown
/// vendor) switch of `r + 1` ports, `r` in [`AN_RADICES`].
fn extra_port(fabric: &Fabric, id: NodeId) -> Option<Evidence> {
    let (far, _) = fabric.peer(PortRef::new(id, 1))?;
    let sw = fabric.nodes().get(far.node.index())?;
    let count = sw.spec.port_count;
    (sw.is_switch()
        && nvidia_or_unknown(sw.spec.vendor_id)
        && far.port.0 == count
        && AN_RADICES
            .iter()
            .any(|&r| u16::from(r) + 1 == u16::from(count)))
    .then_some(Evidence::Position {
        switch: far.node,
        port: far.port,
    })
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::{FabricBuilder, Guid, NodeKind, NodeSpec, Role};

    #[test]
    fn descriptions_match_without_case_or_punctuation() {
        for yes in [
            "Mellanox Technologies Aggregation Node",
            "mellanox technologies aggregation node (0x0002c90000020cf9)",
            "NVIDIA Aggregation-Node",
            "  AGGREGATION   NODE ",
        ] {
            assert!(is_aggregation_description(yes), "{yes}");
        }
        for no in [
            "cn001 HCA-1",
            "luna-0001 mlx5_3",
            "aggregation",
            "node aggregation",
            "MT4129 ConnectX7   Mellanox Technologies",
        ] {
            assert!(!is_aggregation_description(no), "{no}");
        }
    }

    /// A switch of `ports` ports (vendor `vendor`) with a one-port CA named `name` (device
    /// `device`) on port `at`; returns the fabric and the CA.
    fn one(ports: u8, vendor: u32, name: &str, device: u32, at: u8) -> (Fabric, NodeId) {
        let mut b = FabricBuilder::new("t");
        let mut s = NodeSpec::new("sw", NodeKind::Switch, Guid(0x10), ports);
        s.vendor_id = vendor;
        let sw = b.add_node(s).unwrap();
        let mut c = NodeSpec::new(name, NodeKind::Hca, Guid(0x20), 1);
        c.device_id = device;
        let ca = b.add_node(c).unwrap();
        b.add_link(PortRef::new(sw, at), PortRef::new(ca, 1))
            .unwrap();
        (b.finish(), ca)
    }

    fn found(f: &Fabric) -> Vec<(NodeId, Evidence)> {
        aggregation_nodes(f, |_| false)
            .into_iter()
            .map(|r| (r.node, r.evidence))
            .collect()
    }

    #[test]
    fn each_kind_of_evidence_is_found() {
        let (f, ca) = one(36, 0, "Mellanox Technologies Aggregation Node", 0, 3);
        assert_eq!(found(&f), [(ca, Evidence::Description)]);
        let (f, ca) = one(36, 0, "H-0002c90000020cf9", AN_DEVICE_ID, 3);
        assert_eq!(found(&f), [(ca, Evidence::DeviceId)]);
        for ports in [41u8, 65, 129] {
            let (f, ca) = one(ports, NVIDIA_OUI, "H-0002c90000020cf9", 0, ports);
            let switch = f.find("sw").unwrap();
            assert_eq!(
                found(&f),
                [(
                    ca,
                    Evidence::Position {
                        switch,
                        port: PortNum(ports)
                    }
                )],
                "{ports} ports"
            );
        }
    }

    /// Position alone never makes a host a service node unless the switch's port count shows
    /// the extra port, the CA is on that port, and nothing says the CA is something else.
    #[test]
    fn position_needs_the_extra_port_and_nothing_against_it() {
        // The last port of a 36- or 40-port switch is a front-panel port.
        assert!(found(&one(36, 0, "cn001", 0, 36).0).is_empty());
        assert!(found(&one(40, 0, "cn001", 0, 40).0).is_empty());
        // A 41-port switch, but not its last port.
        assert!(found(&one(41, 0, "cn001", 0, 40).0).is_empty());
        // A known device ID that is not an AN's (a ConnectX-6).
        assert!(found(&one(41, 0, "cn001", 0x101b, 41).0).is_empty());
        // Another vendor's switch.
        assert!(found(&one(41, 0x001175, "cn001", 0, 41).0).is_empty());
        // The device ID of an AN from another vendor is not evidence either.
        let (mut f, ca) = one(36, 0, "x", AN_DEVICE_ID, 3);
        let mut b = FabricBuilder::from(f);
        let mut spec = b.fabric().node(ca).spec.clone();
        spec.vendor_id = 0x001175;
        spec.name = "y".into();
        spec.guid = Guid(0x30);
        let other = b.add_node(spec).unwrap();
        f = b.finish();
        assert_eq!(found(&f), [(ca, Evidence::DeviceId)]);
        assert!(!found(&f).iter().any(|&(n, _)| n == other));
    }

    #[test]
    fn roles_already_given_and_skipped_nodes_are_kept() {
        let (f, ca) = one(41, 0, "Mellanox Technologies Aggregation Node", 0, 41);
        assert!(aggregation_nodes(&f, |n| n == ca).is_empty());
        let mut b = FabricBuilder::from(f);
        assert!(b.set_role(ca, Role::Storage));
        let f = b.finish();
        assert!(found(&f).is_empty());
        assert_eq!(f.node(ca).role(), Role::Storage);
    }

    #[test]
    fn switches_have_no_role() {
        let mut b = FabricBuilder::new("t");
        let mut s = NodeSpec::new("sw", NodeKind::Switch, Guid(0x10), 4);
        s.role = Role::Aggregation;
        assert!(matches!(
            b.add_node(s.clone()),
            Err(crate::LinkError::SwitchRole { .. })
        ));
        s.role = Role::Host;
        let sw = b.add_node(s).unwrap();
        assert!(!b.set_role(sw, Role::Storage));
        assert_eq!(b.fabric().node(sw).role(), Role::Host);
    }
}
