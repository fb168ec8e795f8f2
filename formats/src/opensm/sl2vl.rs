//! OpenSM's SL→VL dump (`opensm-sl2vl.dump`, written by `dump_sl2vl_tbl()` in `osm_dump.c`
//! when QoS is on or the routing engine sets SL2VL):
//!
//! ```text
//! Switch 0x0000000000200000, base LID 1, "R0"
//! #in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15
//! #--------------------------------------------------------
//! 0   1   : 0  1  2  3  4  5  6  7  0  1  2  3  4  5  6  7
//! #--------------------------------------------------------
//!
//! Channel Adapter 0x0000000000100001, base LID 7, "H0"
//! #in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15
//! #--------------------------------------------------------
//! 0   0   : 0  1  2  3  4  5  6  7  0  1  2  3  4  5  6  7
//! #--------------------------------------------------------
//! ```
//!
//! A switch block has a row per (input port, output port) for every output port with a peer
//! (OpenSM skips unwired ones); an end-node block has one row, its port's table (the VL it
//! injects each SL on). Switches are found by node GUID, end nodes by port GUID.

use super::error::{number, Collector, DumpError, DumpErrors};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use weft_fabric::{Fabric, FabricState, Guid, NodeId, NodeKind, PortRef, Sl2VlRow};

const HEADER: &str = "#in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15";
const SEPARATOR: &str = "#--------------------------------------------------------";

/// What an SL2VL dump gives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sl2VlTables {
    /// Rows per switch, sorted by (in, out).
    pub switches: BTreeMap<NodeId, Vec<Sl2VlRow>>,
    /// Per end-node port: the VL it injects each SL on.
    pub end_ports: BTreeMap<PortRef, [u8; 16]>,
}

/// Finds the port owning a port GUID: a switch's ports carry its node GUID (port 0); an
/// end node's node GUID alone names no port (port GUIDs are a name space of their own, so a
/// port GUID equal to another node's node GUID is that port's).
pub(crate) fn node_of_port_guid(fabric: &Fabric, g: Guid) -> Option<(NodeId, u8)> {
    fabric.find_port_guid(g).map(|(id, port)| (id, port.0))
}

/// Reads an SL2VL dump against `fabric`.
pub fn parse_sl2vl(
    text: &str,
    fabric: &Fabric,
) -> Result<(Sl2VlTables, Vec<DumpError>), DumpErrors> {
    let mut c = Collector::new("sl2vl");
    let mut t = Sl2VlTables::default();
    // The node and port of the current block, and whether it is a switch.
    let mut current: Option<Option<(NodeId, u8, bool)>> = None;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let header = ["Switch ", "Channel Adapter ", "Router "]
            .iter()
            .find_map(|k| line.strip_prefix(k));
        if let Some(rest) = header {
            let g = rest.split(',').next().map(str::trim).and_then(number);
            current = Some(match g.and_then(|g| node_of_port_guid(fabric, Guid(g))) {
                Some((id, port)) => Some((id, port, fabric.node(id).is_switch())),
                None => {
                    c.warn(
                        line_no,
                        format!(
                            "no port with GUID `{}` in the topology; its table is skipped",
                            rest.split(',').next().unwrap_or("").trim()
                        ),
                    );
                    None
                }
            });
            continue;
        }
        let Some((left, right)) = line.split_once(':') else {
            c.error(line_no, format!("not an SL2VL line: `{line}`"));
            continue;
        };
        let ports: Vec<Option<u8>> = left.split_whitespace().map(|w| w.parse().ok()).collect();
        let vls: Vec<Option<u8>> = right.split_whitespace().map(|w| w.parse().ok()).collect();
        let (Some(&Some(inp)), Some(&Some(outp)), 2, 16) =
            (ports.first(), ports.get(1), ports.len(), vls.len())
        else {
            c.error(
                line_no,
                format!("a row is `<in> <out> : <16 VLs>`: `{line}`"),
            );
            continue;
        };
        let mut vl = [0u8; 16];
        let mut ok = true;
        for (slot, v) in vl.iter_mut().zip(&vls) {
            match v {
                Some(v) if *v <= 15 => *slot = *v,
                _ => ok = false,
            }
        }
        if !ok {
            c.error(line_no, "a VL is a number 0..=15");
            continue;
        }
        match current {
            None => c.error(line_no, "a row before any node header"),
            Some(None) => {}
            Some(Some((id, _, true))) => {
                let n = fabric.node(id).spec.port_count;
                if inp > n || outp > n {
                    c.error(
                        line_no,
                        format!("`{}` has no port {}", fabric.node(id).name(), inp.max(outp)),
                    );
                    continue;
                }
                t.switches.entry(id).or_default().push(Sl2VlRow {
                    in_port: inp,
                    out_port: outp,
                    vl,
                });
            }
            Some(Some((id, port, false))) => {
                if t.end_ports.insert(PortRef::new(id, port), vl).is_some() {
                    c.error(
                        line_no,
                        format!(
                            "a second table for port {port} of `{}`",
                            fabric.node(id).name()
                        ),
                    );
                }
            }
        }
    }
    for (&id, rows) in &mut t.switches {
        rows.sort_by_key(|r| (r.in_port, r.out_port));
        let before = rows.len();
        rows.dedup_by_key(|r| (r.in_port, r.out_port));
        if rows.len() != before {
            c.error(
                0,
                format!(
                    "`{}` has {} duplicate rows (the same input and output port twice)",
                    fabric.node(id).name(),
                    before - rows.len()
                ),
            );
        }
    }
    c.finish(t)
}

fn row(out: &mut String, i: u8, o: u8, vl: &[u8; 16]) {
    let _ = write!(out, "{i:<3} {o:<3} :");
    for v in vl {
        let _ = write!(out, " {v:<2}");
    }
    out.push('\n');
}

/// Writes the SL2VL tables of `state` as OpenSM dumps them: switches (rows for every wired
/// output port) then end nodes, in fabric order; nodes that are down are left out.
pub fn write_sl2vl(state: &FabricState) -> String {
    let f = &state.fabric;
    let mut out = String::new();
    for id in f.node_ids() {
        let n = f.node(id);
        if n.down {
            continue;
        }
        let kind = match n.kind() {
            NodeKind::Switch => "Switch",
            NodeKind::Hca => "Channel Adapter",
            NodeKind::Router => "Router",
        };
        if n.is_switch() {
            let lid = state
                .lids
                .get(id, weft_fabric::PortNum(0))
                .map_or(0, |l| l.0);
            let _ = writeln!(
                out,
                "{kind} {:#018x}, base LID {lid}, \"{}\"\n{HEADER}\n{SEPARATOR}",
                n.guid().0,
                n.name()
            );
            let sw = state.switches.get(&id);
            for o in 1..=n.spec.port_count {
                if n.port(weft_fabric::PortNum(o))
                    .and_then(|p| p.link)
                    .is_none()
                {
                    continue;
                }
                for i in 0..=n.spec.port_count {
                    let mut vl = [0u8; 16];
                    for (s, slot) in vl.iter_mut().enumerate() {
                        *slot = sw
                            .and_then(|x| {
                                x.vl(
                                    weft_fabric::PortNum(i),
                                    weft_fabric::PortNum(o),
                                    weft_fabric::Sl(s as u8),
                                )
                            })
                            .map_or(15, |v| v.0);
                    }
                    row(&mut out, i, o, &vl);
                }
            }
            let _ = writeln!(out, "{SEPARATOR}\n");
        } else {
            for p in &n.ports {
                if p.link.is_none() {
                    continue;
                }
                let lid = state.lids.get(id, p.num).map_or(0, |l| l.0);
                let _ = writeln!(
                    out,
                    "{kind} {}, base LID {lid}, \"{}\"\n{HEADER}\n{SEPARATOR}",
                    p.guid,
                    n.name()
                );
                let vl = state
                    .ports
                    .get(&PortRef {
                        node: id,
                        port: p.num,
                    })
                    .and_then(|t| t.sl2vl)
                    .unwrap_or([0; 16]);
                row(&mut out, 0, 0, &vl);
                let _ = writeln!(out, "{SEPARATOR}\n");
            }
        }
    }
    out
}
