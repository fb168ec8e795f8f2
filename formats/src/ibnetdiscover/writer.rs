//! The writer: a [`Fabric`] as an ibnetdiscover topology that ibsim loads.
//!
//! Output is deterministic: nodes in fabric order, ports ascending, one blank line after each
//! node record. Each node gets the lines ibnetdiscover prints, because ibsim takes facts from
//! them (tabs shown as spaces here):
//!
//! ```text
//! vendid=0x2c9
//! devid=0xcf08
//! sysimgguid=0x7cfe900300bdd8f0
//! switchguid=0x7cfe900300bdd8f0(7cfe900300bdd8f0)
//! Switch    36 "S-7cfe900300bdd8f0"        # "sw1" enhanced port 0 lid 1 lmc 0
//! [1]    "H-0002c90300a1b2c0"[1](2c90300a1b2c1)         # "cn001" lid 5 4xEDR
//!
//! caguid=0x2c90300a1b2c0
//! Ca    1 "H-0002c90300a1b2c0"        # "cn001"
//! [1](2c90300a1b2c1)     "S-7cfe900300bdd8f0"[1]        # lid 5 lmc 0 "sw1" lid 1 4xEDR
//! ```
//!
//! What ibsim does with it, and what the writer therefore guarantees:
//!
//! * ibsim sets a node's GUID from the `switchguid=`/`caguid=`/`rtguid=` line before it and
//!   derives port GUIDs itself (a switch's ports carry the node GUID, an end node's port `p`
//!   carries node GUID + `p`). The writer always emits these lines. Explicit port GUIDs that
//!   differ from that rule are written in `(…)` and read back by [`parse`](super::parse), but
//!   ibsim ignores them.
//! * ibsim scans the rest of a port line for `=` (port options) and ends descriptions at `"`;
//!   ibnetdiscover prints non-printable characters as spaces and descriptions are at most 63
//!   bytes in ibsim. Node names that would not survive this are refused with
//!   [`WriteError::UnwritableName`] rather than changed.
//! * ibsim warns about a port line without a `lid N <width>x<speed>` annotation, so every line
//!   has one: the LID from `lids` (`0` when unknown) and the link's rate, or the slower port's
//!   capabilities when the link has none. ibsim 0.10 does not know `NDR` and `XDR` and warns
//!   about them (and runs the link at SDR); the writer still writes them, so that the rate reads
//!   back.
//! * ibsim does not read the annotations of router port lines and gives their ports 4x by
//!   default, aborting when the other end cannot run 4x; router port lines therefore carry the
//!   ibsim port options `w=`, `s=` and `e=` matching the annotation.
//! * Links that are down are left out (ibsim has no notion of a down cable in its net file);
//!   their nodes stay.
//!
//! [`Fabric`]: weft_fabric::Fabric

use super::error::WriteError;
use std::fmt::Write as _;
use weft_fabric::{
    Fabric, LidAssignment, Link, LinkState, Node, NodeKind, PortNum, PortRef, Speed, Width,
};

/// Longest node description ibsim keeps (it truncates to 63 bytes).
const MAX_DESC_BYTES: usize = 63;

/// Writes `fabric` as an ibnetdiscover topology, with LIDs from `lids` where given.
pub fn write(fabric: &Fabric, lids: Option<&LidAssignment>) -> Result<String, WriteError> {
    for node in fabric.nodes() {
        if let Some(reason) = name_problem(node.name()) {
            return Err(WriteError::UnwritableName {
                name: node.name().to_owned(),
                reason,
            });
        }
        if node.spec.port_count == 0 {
            return Err(WriteError::NoPorts {
                name: node.name().to_owned(),
            });
        }
    }
    let lmc = lids.map(|l| l.lmc).unwrap_or(fabric.lmc);
    let lid_of = |end: PortRef| -> u16 {
        let Some(lids) = lids else { return 0 };
        let node = fabric.node(end.node);
        let port = if node.is_switch() {
            PortNum(0)
        } else {
            end.port
        };
        lids.base
            .get(&end.node)
            .and_then(|ports| ports.get(&port))
            .map(|l| l.0)
            .unwrap_or(0)
    };
    let mut out = String::new();
    out.push_str("#\n# Topology file: written by weft\n#\n\n");
    for id in fabric.node_ids() {
        let node = fabric.node(id);
        let g = node.guid().0;
        let sys = node.spec.system_guid.unwrap_or(node.guid()).0;
        let _ = writeln!(out, "vendid={:#x}", node.spec.vendor_id);
        // An aggregation node whose device ID was never recorded is written with the AN's, so
        // that a reader (weft's, or any tool keyed on it) sees the role the dump cannot carry.
        let devid = match (node.role(), node.spec.device_id) {
            (weft_fabric::Role::Aggregation, 0) => weft_fabric::roles::AN_DEVICE_ID,
            (_, d) => d,
        };
        let _ = writeln!(out, "devid={devid:#x}");
        let _ = writeln!(out, "sysimgguid={sys:#x}");
        match node.kind() {
            NodeKind::Switch => {
                let _ = writeln!(out, "switchguid={g:#x}({g:x})");
                let _ = writeln!(
                    out,
                    "Switch\t{} \"{}\"\t\t# \"{}\" enhanced port 0 lid {} lmc 0",
                    node.spec.port_count,
                    node_id(node),
                    node.name(),
                    lid_of(PortRef::new(id, 0)),
                );
            }
            NodeKind::Hca | NodeKind::Router => {
                let (key, keyword) = if node.kind() == NodeKind::Hca {
                    ("caguid", "Ca")
                } else {
                    ("rtguid", "Rt")
                };
                let _ = writeln!(out, "{key}={g:#x}");
                let _ = writeln!(
                    out,
                    "{keyword}\t{} \"{}\"\t\t# \"{}\"",
                    node.spec.port_count,
                    node_id(node),
                    node.name(),
                );
            }
        }
        for port in &node.ports {
            let here = PortRef {
                node: id,
                port: port.num,
            };
            let Some((there, link_id)) = fabric.peer(here) else {
                continue;
            };
            let link = fabric.link(link_id);
            if link.state == LinkState::Down {
                continue;
            }
            let peer = fabric.node(there.node);
            let (width, speed) = rate(fabric, link);
            let peer_guid = if peer.is_switch() {
                String::new()
            } else {
                let pg = peer.port(there.port).map(|p| p.guid.0).unwrap_or(0);
                format!("({pg:x}) ")
            };
            let remote = format!("\"{}\"[{}]{peer_guid}", node_id(peer), there.port.0);
            let tail = format!(
                "\"{}\" lid {} {width}{}",
                peer.name(),
                lid_of(there),
                speed.as_str()
            );
            if node.is_switch() {
                let _ = writeln!(out, "[{}]\t{remote}\t\t# {tail}", port.num.0);
            } else {
                let opts = if node.kind() == NodeKind::Router {
                    router_opts(width, speed)
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "[{}]({:x}) \t{remote}{opts}\t\t# lid {} lmc {lmc} {tail}",
                    port.num.0,
                    port.guid.0,
                    lid_of(here),
                );
            }
        }
        out.push('\n');
    }
    Ok(out)
}

/// The node id ibnetdiscover prints: kind letter and the 16-digit GUID.
fn node_id(node: &Node) -> String {
    let letter = match node.kind() {
        NodeKind::Switch => 'S',
        NodeKind::Hca => 'H',
        NodeKind::Router => 'R',
    };
    format!("{letter}-{:016x}", node.guid().0)
}

/// The link's rate, or the slower port's capabilities when the link has none recorded.
fn rate(fabric: &Fabric, link: &Link) -> (Width, Speed) {
    let a = fabric.node(link.a.node).spec.caps;
    let b = fabric.node(link.b.node).spec.caps;
    (
        link.width.unwrap_or(a.width.min(b.width)),
        link.speed.unwrap_or(a.speed.min(b.speed)),
    )
}

/// ibsim port options for a router port: the enabled width, speed and extended speed masks
/// ibsim itself would derive from a `4xEDR` annotation on a CA or switch port.
fn router_opts(width: Width, speed: Speed) -> String {
    let w = match width {
        Width::X1 => 1,
        Width::X4 => 2,
        Width::X8 => 4,
        Width::X12 => 8,
        Width::X2 => 16,
    };
    let s = match speed {
        Speed::SDR => 1,
        Speed::DDR => 3,
        _ => 7,
    };
    let e = match speed {
        Speed::FDR => 1,
        Speed::EDR => 3,
        Speed::HDR => 7,
        Speed::NDR | Speed::XDR => 15,
        _ => 0,
    };
    format!(" w={w} s={s} e={e}")
}

/// Why `name` cannot be written as a node description (ibnetdiscover, ibsim, OpenSM's
/// node-name map), or `None` when it can.
pub fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".to_owned());
    }
    if name.len() > MAX_DESC_BYTES {
        return Some(format!(
            "it is {} bytes long and ibsim keeps {MAX_DESC_BYTES}",
            name.len()
        ));
    }
    for c in name.chars() {
        match c {
            '"' | '#' | '=' => return Some(format!("it contains `{c}`")),
            ' '..='~' => {}
            _ => {
                return Some(format!(
                    "it contains U+{:04X}, which is not printable ASCII",
                    u32::from(c)
                ))
            }
        }
    }
    None
}
